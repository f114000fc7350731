/*
 * churn - threads that come and go, as in a server that starts a thread
 * for each connection or a program that starts workers for each job.
 * `waves` times, `threads` threads are started together and joined.
 * Each allocates `blocks` blocks of 16 bytes to `max` (sizes log-uniform:
 * as many of 16-31 bytes as of 16-32 KiB) and writes their first bytes,
 * then frees them all but one in `keep`, which it puts into a ring of
 * `live` slots shared by every thread, freeing the block it replaces:
 * what a finished task leaves behind outlives its thread and is freed by
 * another.  Whatever an allocator keeps for a thread (a pool, an arena,
 * a cache) is left with blocks and free pages in it when the thread
 * exits, and its next thread, or nobody, finds them.
 *
 * Result: threads_per_sec over the whole run, thread starts and exits
 * included; ns_per_block is the same time per block allocated.
 */
#include "bench.h"

static long nblocks = 2000, maxsize = 32768, keep = 10, live = 4096;

static pthread_mutex_t ring_lock = PTHREAD_MUTEX_INITIALIZER;
static char **ring;
static unsigned long ring_next;

/* 16 << k bytes and up to as many again, k uniform below nclasses. */
static unsigned int nclasses;

static size_t
block_size(uint64_t *rng)
{
	uint64_t r = rnd_next(rng);
	size_t base = (size_t)16 << (r % nclasses);

	return base + (size_t)((r >> 8) % base);
}

static void *
worker(void *arg)
{
	uint64_t rng = (uint64_t)(uintptr_t)arg;
	char **v = check_alloc(malloc((size_t)nblocks * sizeof(*v)), 1);
	long i;

	for (i = 0; i < nblocks; i++) {
		size_t sz = block_size(&rng);

		v[i] = check_alloc(malloc(sz), sz);
		memset(v[i], (int)i, sz < 64 ? sz : 64);
	}
	for (i = 0; i < nblocks; i++) {
		char *old;

		if (i % keep != 0) {
			free(v[i]);
			continue;
		}
		pthread_mutex_lock(&ring_lock);
		old = ring[ring_next % (unsigned long)live];
		ring[ring_next++ % (unsigned long)live] = v[i];
		pthread_mutex_unlock(&ring_lock);
		free(old);
	}
	free(v);
	return NULL;
}

int
main(int argc, char **argv)
{
	long threads = 2, waves = 500, w, t;
	struct bench_arg args[] = {
		{ "threads", ARG_LONG, &threads, "threads started together" },
		{ "waves", ARG_LONG, &waves, "times they are started" },
		{ "blocks", ARG_LONG, &nblocks, "blocks a thread allocates" },
		{ "max", ARG_SIZE, &maxsize, "largest block, about" },
		{ "keep", ARG_LONG, &keep, "one block in keep outlives its "
		    "thread" },
		{ "live", ARG_LONG, &live, "blocks kept, at most" },
	};
	pthread_t *tids;
	uint64_t t0, ns;
	double n;

	bench_parse(argc, argv, "Thread churn: threads started, allocating, "
	    "freeing, joined, per second.", args,
	    sizeof(args) / sizeof(args[0]));
	bench_require(threads >= 1 && waves >= 1 && nblocks >= 1 &&
	    keep >= 1 && live >= 1, argv[0],
	    "threads, waves, blocks, keep and live must be at least 1");
	bench_require(maxsize >= 32, argv[0], "max must be at least 32");
	for (nclasses = 1; (size_t)32 << nclasses <= (size_t)maxsize;
	    nclasses++)
		;

	ring = check_alloc(calloc((size_t)live, sizeof(*ring)), 1);
	tids = check_alloc(calloc((size_t)threads, sizeof(*tids)), 1);
	t0 = now_ns();
	for (w = 0; w < waves; w++) {
		for (t = 0; t < threads; t++)
			if (pthread_create(&tids[t], NULL, worker, (void *)
			    (uintptr_t)rnd_seed((uint64_t)w, (uint64_t)t)) !=
			    0) {
				fprintf(stderr, "pthread_create failed\n");
				return 1;
			}
		for (t = 0; t < threads; t++)
			pthread_join(tids[t], NULL);
	}
	ns = now_ns() - t0;
	n = (double)threads * (double)waves;
	printf("bench=churn threads=%ld waves=%ld blocks=%ld max=%ld "
	    "keep=%ld live=%ld threads_per_sec=%.1f ns_per_block=%.1f\n",
	    threads, waves, nblocks, maxsize, keep, live, n * 1e9 / (double)ns,
	    (double)ns / (n * (double)nblocks));
	for (t = 0; t < live; t++)
		free(ring[t]);
	free(ring);
	free(tids);
	return 0;
}
