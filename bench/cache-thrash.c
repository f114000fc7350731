/*
 * cache-thrash - active false sharing, in the spirit of Hoard's
 * cache-thrash: every thread repeatedly allocates a small object, writes
 * it many times and frees it.  An allocator that hands objects sharing a
 * cache line to different threads makes those writes bounce the line
 * between cores; one that keeps each thread's objects apart does not.
 *
 * Result: ops_per_sec counts object lifetimes (malloc, writes, free) per
 * second; elapsed_s is the wall time, Hoard's original figure.
 */
#include "bench.h"

struct worker {
	long iterations;
	long repetitions;
	long size;
} BENCH_ALIGNED;

static void *
worker(void *p)
{
	struct worker *w = p;
	long it, r, k;

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

	bench_parse(argc, argv, "Active false sharing: threads write their "
	    "own small objects; neighbours in one cache line thrash.", args,
	    sizeof(args) / sizeof(args[0]));
	bench_require(threads >= 1, argv[0], "threads must be at least 1");
	bench_require(size >= 1, argv[0], "size must be at least 1");

	w = check_alloc(aligned_alloc(BENCH_CACHELINE,
	    (size_t)threads * sizeof(*w)), 1);
	for (i = 0; i < threads; i++) {
		w[i].iterations = iterations;
		w[i].repetitions = repetitions;
		w[i].size = size;
	}
	ns = run_threads(threads, worker, w, sizeof(*w));
	printf("bench=cache-thrash threads=%ld iterations=%ld "
	    "repetitions=%ld size=%ld elapsed_s=%.4f ops_per_sec=%.0f\n",
	    threads, iterations, repetitions, size, (double)ns / 1e9,
	    (double)iterations * (double)threads * 1e9 / (double)ns);
	free(w);
	return 0;
}
