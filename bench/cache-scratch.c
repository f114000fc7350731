/*
 * cache-scratch - passive false sharing, in the spirit of Hoard's
 * cache-scratch: the main thread allocates one small object per thread,
 * back to back, so they likely share cache lines, and hands one to each
 * thread.  Each thread frees its object, then repeatedly allocates an
 * object of the same size, writes it many times and frees it.  An
 * allocator that gives the freed neighbour slot back to the thread that
 * freed it keeps the cache line shared between cores.
 *
 * Result: ops_per_sec counts object lifetimes per second; elapsed_s is the
 * wall time, Hoard's original figure.
 */
#include "bench.h"

struct worker {
	char *given;
	long iterations;
	long repetitions;
	long size;
} BENCH_ALIGNED;

static void *
worker(void *p)
{
	struct worker *w = p;
	long it, r, k;

	free(w->given);
	for (it = 0; it < w->iterations; it++) {
		volatile char *obj = check_alloc(malloc((size_t)w->size),
		    (size_t)w->size);

		for (r = 0; r < w->repetitions; r++)
			for (k = 0; k < w->size; k++)
				obj[k] = (char)(obj[k] + 1);
		free((void *)obj);
	}
	return NULL;
}

int
main(int argc, char **argv)
{
	long threads = 2, iterations = 1000, repetitions = 200000, size = 8;
	struct bench_arg args[] = {
		{ "threads", ARG_LONG, &threads, "worker threads" },
		{ "iterations", ARG_LONG, &iterations, "objects per thread" },
		{ "repetitions", ARG_LONG, &repetitions,
		    "write passes over each object" },
		{ "size", ARG_SIZE, &size, "object size in bytes" },
	};
	struct worker *w;
	uint64_t ns;
	long i;

	bench_parse(argc, argv, "Passive false sharing: threads start by "
	    "freeing neighbouring objects the main thread allocated.", args,
	    sizeof(args) / sizeof(args[0]));
	bench_require(threads >= 1, argv[0], "threads must be at least 1");
	bench_require(size >= 1, argv[0], "size must be at least 1");

	w = check_alloc(aligned_alloc(BENCH_CACHELINE,
	    (size_t)threads * sizeof(*w)), 1);
	for (i = 0; i < threads; i++) {
		w[i].given = check_alloc(malloc((size_t)size), (size_t)size);
		memset(w[i].given, 0, (size_t)size);
		w[i].iterations = iterations;
		w[i].repetitions = repetitions;
		w[i].size = size;
	}
	ns = run_threads(threads, worker, w, sizeof(*w));
	printf("bench=cache-scratch threads=%ld iterations=%ld "
	    "repetitions=%ld size=%ld elapsed_s=%.4f ops_per_sec=%.0f\n",
	    threads, iterations, repetitions, size, (double)ns / 1e9,
	    (double)iterations * (double)threads * 1e9 / (double)ns);
	free(w);
	return 0;
}
