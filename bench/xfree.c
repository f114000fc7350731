/*
 * xfree - what freeing another thread's pointer costs compared with
 * freeing one's own.  Thread A allocates a batch; thread B frees it (remote
 * free).  Then A allocates a batch and frees it itself (local free).  Only
 * the frees are timed; the rounds alternate so both see the same machine.
 *
 * Under omalloc a thread uses pool tid & (npools - 1): A and B are created
 * one after the other, so their kernel thread ids are consecutive and they
 * use different pools whenever there is more than one.  A remote free then
 * first searches B's own pool, then the next ones, until it finds A's.
 * The result line prints both thread ids so this can be checked.
 *
 * Left to the scheduler, A and B run on one CPU in some runs and on two
 * in others, and on two the remote free also pays for the cache lines it
 * takes over from A's CPU: the block, and the pool's records A wrote
 * last.  cpu=N binds both threads to CPU N: the ratio is then the
 * allocator's own cost of a free into another pool (finding it, its
 * lock) without that transfer.  cpu=N,M binds A to CPU N and B to CPU M:
 * the transfer, every run.
 *
 * Result: local_ns and remote_ns per free, ratio = remote_ns / local_ns.
 */
#define _GNU_SOURCE
#include <sys/syscall.h>

#include "bench.h"

struct shared {
	pthread_barrier_t handed, freed;
	char **batch;
	long n, size, rounds, cpu_a, cpu_b;
	uint64_t local_ns, remote_ns;
	long tid_a, tid_b;
};

static void
fill(struct shared *sh)
{
	long i;

	for (i = 0; i < sh->n; i++) {
		sh->batch[i] = check_alloc(malloc((size_t)sh->size),
		    (size_t)sh->size);
		sh->batch[i][0] = (char)i;
	}
}

static uint64_t
free_batch(struct shared *sh)
{
	uint64_t t0 = now_ns();
	long i;

	for (i = 0; i < sh->n; i++)
		free(sh->batch[i]);
	return now_ns() - t0;
}

/* Round 0 warms both threads up and is not counted. */
static void *
thread_a(void *p)
{
	struct shared *sh = p;
	long r;

	sh->tid_a = (long)syscall(SYS_gettid);
	bench_pin("xfree", sh->cpu_a);
	for (r = 0; r <= sh->rounds; r++) {
		uint64_t t;

		fill(sh);
		pthread_barrier_wait(&sh->handed);
		pthread_barrier_wait(&sh->freed);
		fill(sh);
		t = free_batch(sh);
		if (r > 0)
			sh->local_ns += t;
	}
	return NULL;
}

static void *
thread_b(void *p)
{
	struct shared *sh = p;
	long r;

	sh->tid_b = (long)syscall(SYS_gettid);
	bench_pin("xfree", sh->cpu_b);
	for (r = 0; r <= sh->rounds; r++) {
		uint64_t t;

		pthread_barrier_wait(&sh->handed);
		t = free_batch(sh);
		if (r > 0)
			sh->remote_ns += t;
		pthread_barrier_wait(&sh->freed);
	}
	return NULL;
}

int
main(int argc, char **argv)
{
	long batch = 1000, size = 64, rounds = 2000, cpu_a, cpu_b;
	const char *cpu_arg = "none";
	struct bench_arg args[] = {
		{ "size", ARG_SIZE, &size, "object size in bytes" },
		{ "batch", ARG_LONG, &batch, "objects per batch" },
		{ "rounds", ARG_LONG, &rounds, "batches of each kind" },
		{ "cpu", ARG_STRING, &cpu_arg, "N: bind both threads to CPU "
		    "N; N,M: the allocating thread to N, the other to M; "
		    "none: where the scheduler puts them" },
	};
	struct shared sh;
	pthread_t a, b;
	double frees, local, remote;

	bench_parse(argc, argv, "Cross-thread free: ns per free of another "
	    "thread's pointer against ns per free of one's own.", args,
	    sizeof(args) / sizeof(args[0]));
	bench_require(batch >= 1 && rounds >= 1, argv[0],
	    "batch and rounds must be at least 1");
	bench_parse_cpus(argv[0], cpu_arg, &cpu_a, &cpu_b);

	memset(&sh, 0, sizeof(sh));
	sh.n = batch;
	sh.size = size;
	sh.rounds = rounds;
	sh.cpu_a = cpu_a;
	sh.cpu_b = cpu_b;
	sh.batch = check_alloc(calloc((size_t)batch, sizeof(char *)), 1);
	pthread_barrier_init(&sh.handed, NULL, 2);
	pthread_barrier_init(&sh.freed, NULL, 2);
	if (pthread_create(&a, NULL, thread_a, &sh) != 0 ||
	    pthread_create(&b, NULL, thread_b, &sh) != 0) {
		fprintf(stderr, "pthread_create failed\n");
		return 1;
	}
	pthread_join(a, NULL);
	pthread_join(b, NULL);

	frees = (double)batch * (double)rounds;
	local = (double)sh.local_ns / frees;
	remote = (double)sh.remote_ns / frees;
	printf("bench=xfree size=%ld batch=%ld rounds=%ld cpu=%s tid_a=%ld "
	    "tid_b=%ld same_pool_of_8=%d local_ns=%.1f remote_ns=%.1f "
	    "ratio=%.2f\n", size, batch, rounds, cpu_arg, sh.tid_a, sh.tid_b,
	    ((sh.tid_a ^ sh.tid_b) & 7) == 0, local, remote,
	    local > 0 ? remote / local : 0.0);
	pthread_barrier_destroy(&sh.handed);
	pthread_barrier_destroy(&sh.freed);
	free(sh.batch);
	return 0;
}
