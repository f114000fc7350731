/*
 * threadtest - in the spirit of Hoard's threadtest: the objects are split
 * evenly among the threads; in every iteration each thread allocates its
 * share, optionally does some work per object, then frees them all in
 * allocation order.  No object changes threads, so an allocator that keeps
 * threads apart (per-thread caches, one pool per thread) scales, and one
 * that serialises them does not.
 *
 * Result: ops_per_sec counts mallocs plus frees per second of wall time.
 */
#include "bench.h"

struct worker {
	long iterations;
	long objects;
	long size;
	long work;
} BENCH_ALIGNED;

static void
busy(long n)
{
	volatile long x = 0;
	long i;

	for (i = 0; i < n; i++)
		x = x + i;
}

static void *
worker(void *p)
{
	struct worker *w = p;
	char **obj;
	long it, i;

	obj = check_alloc(malloc((size_t)w->objects * sizeof(*obj)), 1);
	for (it = 0; it < w->iterations; it++) {
		for (i = 0; i < w->objects; i++) {
			obj[i] = check_alloc(malloc((size_t)w->size),
			    (size_t)w->size);
			obj[i][0] = (char)i;
			busy(w->work);
		}
		for (i = 0; i < w->objects; i++) {
			escape(obj[i]);
			free(obj[i]);
			busy(w->work);
		}
	}
	free(obj);
	return NULL;
}

int
main(int argc, char **argv)
{
	long threads = 2, iterations = 500, objects = 30000, size = 8;
	long work = 0;
	struct bench_arg args[] = {
		{ "threads", ARG_LONG, &threads, "worker threads" },
		{ "iterations", ARG_LONG, &iterations, "rounds per thread" },
		{ "objects", ARG_LONG, &objects,
		    "objects per round, split among the threads" },
		{ "size", ARG_SIZE, &size, "object size in bytes" },
		{ "work", ARG_LONG, &work, "busy-loop steps per operation" },
	};
	struct worker *w;
	uint64_t ns;
	double ops;
	long i;

	bench_parse(argc, argv, "Hoard-style threadtest: each thread "
	    "allocates and frees its share of the objects.", args,
	    sizeof(args) / sizeof(args[0]));
	bench_require(threads >= 1, argv[0], "threads must be at least 1");
	bench_require(size >= 1, argv[0], "size must be at least 1");
	bench_require(objects >= threads, argv[0],
	    "objects must be at least threads");

	w = check_alloc(aligned_alloc(BENCH_CACHELINE,
	    (size_t)threads * sizeof(*w)), 1);
	for (i = 0; i < threads; i++) {
		w[i].iterations = iterations;
		w[i].objects = objects / threads;
		w[i].size = size;
		w[i].work = work;
	}
	ns = run_threads(threads, worker, w, sizeof(*w));
	ops = 2.0 * (double)iterations * (double)(objects / threads) *
	    (double)threads;
	printf("bench=threadtest threads=%ld iterations=%ld objects=%ld "
	    "size=%ld work=%ld elapsed_s=%.4f ops_per_sec=%.0f\n", threads,
	    iterations, objects, size, work, (double)ns / 1e9,
	    ops * 1e9 / (double)ns);
	free(w);
	return 0;
}
