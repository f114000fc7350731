/*
 * xmalloc - producer and consumer threads, in the spirit of the
 * xmalloc-test of allocator benchmark suites: in each pair, one thread
 * allocates blocks and hands them through a ring to the other, which
 * frees them.  Every block is freed by a thread other than its
 * allocator, all the time and while that allocator is busy, the pattern
 * of a server that passes buffers from an I/O thread to workers.
 *
 * Left to the scheduler, a pair runs on one CPU in some runs, where the
 * two threads take turns (each fills or empties the ring, then yields),
 * and on two in others, where both work at once and every block's cache
 * lines cross between the CPUs; the two differ several-fold.  cpu=N puts
 * every thread on CPU N, cpu=N,M the producers on N and the consumers
 * on M, so that a run measures one of the two.
 *
 * Result: ops_per_sec counts the blocks that went through (allocated,
 * handed over and freed) per second over all pairs; ns_per_item is the
 * time of one block as a pair sees it.
 */
#define _GNU_SOURCE
#include <stdatomic.h>

#include "bench.h"

#define RING 4096		/* slots between a producer and its consumer */

static atomic_int stop;

struct pair {
	_Atomic(char *) ring[RING];
	long size, cpu_producer, cpu_consumer;
	long produced, consumed;
	uint64_t rng;
} BENCH_ALIGNED;

static size_t
item_size(struct pair *p)
{
	/* size > 0: that size; else 8 to 512 bytes at random. */
	if (p->size > 0)
		return (size_t)p->size;
	return 8 + (size_t)(rnd_next(&p->rng) % 505);
}

static void *
producer(void *arg)
{
	struct pair *p = arg;
	long n = 0;

	bench_pin("xmalloc", p->cpu_producer);
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		size_t sz = item_size(p);
		char *q = check_alloc(malloc(sz), sz);
		_Atomic(char *) *slot = &p->ring[n % RING];

		q[0] = (char)n;
		while (atomic_load_explicit(slot, memory_order_acquire) !=
		    NULL) {
			if (atomic_load_explicit(&stop, memory_order_relaxed)) {
				free(q);
				goto out;
			}
			/* Full: let the consumer run, on a machine with
			 * fewer CPUs than threads. */
			sched_yield();
		}
		atomic_store_explicit(slot, q, memory_order_release);
		n++;
	}
out:
	p->produced = n;
	return NULL;
}

static void *
consumer(void *arg)
{
	struct pair *p = arg;
	long n = 0;

	bench_pin("xmalloc", p->cpu_consumer);
	for (;;) {
		_Atomic(char *) *slot = &p->ring[n % RING];
		char *q;

		while ((q = atomic_load_explicit(slot, memory_order_acquire)) ==
		    NULL) {
			if (atomic_load_explicit(&stop, memory_order_relaxed) &&
			    atomic_load_explicit(slot, memory_order_acquire) ==
			    NULL)
				goto out;
			sched_yield();
		}
		atomic_store_explicit(slot, NULL, memory_order_relaxed);
		free(q);
		n++;
	}
out:
	p->consumed = n;
	return NULL;
}

int
main(int argc, char **argv)
{
	long pairs = 1, size = 64, cpu_p, cpu_c;
	double seconds = 1;
	const char *cpu_arg = "none";
	struct bench_arg args[] = {
		{ "pairs", ARG_LONG, &pairs, "producer/consumer pairs" },
		{ "size", ARG_SIZE, &size,
		    "block size in bytes (0: 8 to 512 at random)" },
		{ "seconds", ARG_DOUBLE, &seconds, "run time" },
		{ "cpu", ARG_STRING, &cpu_arg, "N: every thread on CPU N; "
		    "N,M: producers on N, consumers on M; none: where the "
		    "scheduler puts them" },
	};
	struct pair *p;
	pthread_t *t;
	uint64_t t0, ns;
	double items = 0;
	long i, k;

	bench_parse(argc, argv, "Producer/consumer pairs: blocks allocated "
	    "in one thread and freed in another.", args,
	    sizeof(args) / sizeof(args[0]));
	bench_require(pairs >= 1 && size >= 0, argv[0],
	    "pairs must be at least 1 and size not negative");
	bench_parse_cpus(argv[0], cpu_arg, &cpu_p, &cpu_c);

	p = check_alloc(aligned_alloc(BENCH_CACHELINE,
	    (size_t)pairs * sizeof(*p)), 1);
	t = check_alloc(calloc((size_t)pairs * 2, sizeof(*t)), 1);
	memset(p, 0, (size_t)pairs * sizeof(*p));
	for (i = 0; i < pairs; i++) {
		p[i].size = size;
		p[i].cpu_producer = cpu_p;
		p[i].cpu_consumer = cpu_c;
		p[i].rng = (uint64_t)i * 0x9e3779b97f4a7c15u + 1;
	}
	t0 = now_ns();
	for (i = 0; i < pairs; i++)
		if (pthread_create(&t[2 * i], NULL, producer, &p[i]) != 0 ||
		    pthread_create(&t[2 * i + 1], NULL, consumer, &p[i]) != 0) {
			fprintf(stderr, "pthread_create failed\n");
			return 1;
		}
	sleep_seconds(seconds);
	atomic_store(&stop, 1);
	for (i = 0; i < 2 * pairs; i++)
		pthread_join(t[i], NULL);
	ns = now_ns() - t0;
	for (i = 0; i < pairs; i++) {
		/* What the consumer did not take is still in the ring. */
		for (k = 0; k < RING; k++) {
			char *q = atomic_load(&p[i].ring[k]);

			if (q != NULL)
				free(q);
		}
		items += (double)p[i].consumed;
	}
	printf("bench=xmalloc pairs=%ld size=%ld seconds=%g cpu=%s "
	    "elapsed_s=%.4f ns_per_item=%.1f ops_per_sec=%.0f\n", pairs, size,
	    seconds, cpu_arg, (double)ns / 1e9,
	    items > 0 ? (double)ns * (double)pairs / items : 0.0,
	    items * 1e9 / (double)ns);
	free(t);
	free(p);
	return 0;
}
