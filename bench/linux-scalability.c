/*
 * linux-scalability - in the spirit of Lever and Boreham's malloc
 * scalability test: every thread allocates a batch of blocks of one size,
 * writes each, then frees the batch in a shuffled order, over and over.
 * The shuffle keeps an allocator from getting away with a plain LIFO free
 * list; writing the whole block brings page-sized blocks into memory.
 *
 * Result: ops_per_sec counts mallocs plus frees per second; ns_per_pair is
 * the time of one malloc/free pair as one thread sees it.
 */
#include "bench.h"

struct worker {
	long iterations;
	long batch;
	long size;
	uint64_t rng;
} BENCH_ALIGNED;

static void *
worker(void *p)
{
	struct worker *w = p;
	char **obj;
	long *order;
	long it, i;

	obj = check_alloc(malloc((size_t)w->batch * sizeof(*obj)), 1);
	order = check_alloc(malloc((size_t)w->batch * sizeof(*order)), 1);
	for (i = 0; i < w->batch; i++)
		order[i] = i;
	for (i = w->batch - 1; i > 0; i--) {
		long j = (long)(rnd_next(&w->rng) % (uint64_t)(i + 1));
		long t = order[i];

		order[i] = order[j];
		order[j] = t;
	}
	for (it = 0; it < w->iterations; it++) {
		for (i = 0; i < w->batch; i++) {
			obj[i] = check_alloc(malloc((size_t)w->size),
			    (size_t)w->size);
			memset(obj[i], (int)i, (size_t)w->size);
		}
		for (i = 0; i < w->batch; i++)
			free(obj[order[i]]);
	}
	free(order);
	free(obj);
	return NULL;
}

int
main(int argc, char **argv)
{
	long threads = 2, iterations = 200, batch = 10000, size = 512;
	long seed = 1;
	struct bench_arg args[] = {
		{ "threads", ARG_LONG, &threads, "worker threads" },
		{ "iterations", ARG_LONG, &iterations, "batches per thread" },
		{ "batch", ARG_LONG, &batch, "blocks allocated per batch" },
		{ "size", ARG_SIZE, &size, "block size in bytes" },
		{ "seed", ARG_LONG, &seed, "random seed for the free order" },
	};
	struct worker *w;
	uint64_t ns;
	double pairs;
	long i;

	bench_parse(argc, argv, "Linux scalability: each thread allocates "
	    "and writes a batch of blocks, then frees it in random order.",
	    args, sizeof(args) / sizeof(args[0]));
	bench_require(threads >= 1 && batch >= 1, argv[0],
	    "threads and batch must be at least 1");
	bench_require(size >= 1, argv[0], "size must be at least 1");

	w = check_alloc(aligned_alloc(BENCH_CACHELINE,
	    (size_t)threads * sizeof(*w)), 1);
	for (i = 0; i < threads; i++) {
		w[i].iterations = iterations;
		w[i].batch = batch;
		w[i].size = size;
		w[i].rng = rnd_seed((uint64_t)seed, (uint64_t)i);
	}
	ns = run_threads(threads, worker, w, sizeof(*w));
	pairs = (double)iterations * (double)batch * (double)threads;
	printf("bench=linux-scalability threads=%ld iterations=%ld batch=%ld "
	    "size=%ld elapsed_s=%.4f ns_per_pair=%.1f ops_per_sec=%.0f\n",
	    threads, iterations, batch, size, (double)ns / 1e9,
	    (double)ns * (double)threads / pairs, 2 * pairs * 1e9 / (double)ns);
	free(w);
	return 0;
}
