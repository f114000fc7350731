/*
 * phong - random sizes and random lifetimes, in the spirit of the "phong"
 * program of Hoard's suite: each thread keeps a window of live objects
 * whose sizes are spread log-uniformly between min and max (so most are
 * small and a few are many pages), and keeps replacing a random one: free
 * it and allocate a new size, or, realloc_pct percent of the time, realloc
 * it to the new size.  The sizes cross every class boundary an allocator
 * has, including the step from chunks to page regions.
 *
 * Result: ops_per_sec counts replacements per second.
 */
#include "bench.h"

struct worker {
	long iterations;
	long live;
	long min, max;
	long realloc_pct;
	uint64_t rng;
} BENCH_ALIGNED;

/* Log-uniform in [min, max]: pick a power-of-two band, then a size in it. */
static size_t
pick_size(struct worker *w)
{
	uint64_t r = rnd_next(&w->rng);
	int lo = 63 - __builtin_clzl((unsigned long)w->min);
	int hi = 63 - __builtin_clzl((unsigned long)w->max);
	int band = lo + (int)((r & 0xff) % (unsigned)(hi - lo + 1));
	uint64_t from = 1ULL << band, to = (from << 1) - 1;

	/* The end bands are cut to [min, max], not clamped onto them. */
	if (from < (uint64_t)w->min)
		from = (uint64_t)w->min;
	if (to > (uint64_t)w->max)
		to = (uint64_t)w->max;
	return (size_t)(from + (r >> 8) % (to - from + 1));
}

static void *
worker(void *p)
{
	struct worker *w = p;
	char **obj;
	long it, i;

	obj = check_alloc(malloc((size_t)w->live * sizeof(*obj)), 1);
	for (i = 0; i < w->live; i++) {
		size_t size = pick_size(w);

		obj[i] = check_alloc(malloc(size), size);
		obj[i][0] = 1;
	}
	for (it = 0; it < w->iterations; it++) {
		uint64_t r = rnd_next(&w->rng);
		long k = (long)(r % (uint64_t)w->live);
		size_t size = pick_size(w);

		if ((long)((r >> 40) % 100) < w->realloc_pct) {
			obj[k] = check_alloc(realloc(obj[k], size), size);
		} else {
			free(obj[k]);
			obj[k] = check_alloc(malloc(size), size);
		}
		obj[k][0] = (char)it;
		obj[k][size - 1] = (char)it;
	}
	for (i = 0; i < w->live; i++)
		free(obj[i]);
	free(obj);
	return NULL;
}

int
main(int argc, char **argv)
{
	long threads = 2, iterations = 2000000, live = 2000, min = 8;
	long max = 32768, realloc_pct = 10, seed = 1;
	struct bench_arg args[] = {
		{ "threads", ARG_LONG, &threads, "worker threads" },
		{ "iterations", ARG_LONG, &iterations,
		    "replacements per thread" },
		{ "live", ARG_LONG, &live, "live objects per thread" },
		{ "min", ARG_SIZE, &min, "smallest size" },
		{ "max", ARG_SIZE, &max, "largest size" },
		{ "realloc_pct", ARG_LONG, &realloc_pct,
		    "percent of replacements done by realloc" },
		{ "seed", ARG_LONG, &seed, "random seed" },
	};
	struct worker *w;
	uint64_t ns;
	long i;

	bench_parse(argc, argv, "Random sizes (log-uniform) with random "
	    "lifetimes, some replacements by realloc.", args,
	    sizeof(args) / sizeof(args[0]));
	bench_require(threads >= 1 && live >= 1, argv[0],
	    "threads and live must be at least 1");
	bench_require(min >= 1 && max >= min, argv[0],
	    "need 1 <= min <= max");
	bench_require(realloc_pct <= 100, argv[0],
	    "realloc_pct must be at most 100");

	w = check_alloc(aligned_alloc(BENCH_CACHELINE,
	    (size_t)threads * sizeof(*w)), 1);
	for (i = 0; i < threads; i++) {
		w[i].iterations = iterations;
		w[i].live = live;
		w[i].min = min;
		w[i].max = max;
		w[i].realloc_pct = realloc_pct;
		w[i].rng = rnd_seed((uint64_t)seed, (uint64_t)i);
	}
	ns = run_threads(threads, worker, w, sizeof(*w));
	printf("bench=phong threads=%ld iterations=%ld live=%ld min=%ld "
	    "max=%ld realloc_pct=%ld elapsed_s=%.4f ops_per_sec=%.0f\n",
	    threads, iterations, live, min, max, realloc_pct,
	    (double)ns / 1e9,
	    (double)iterations * (double)threads * 1e9 / (double)ns);
	free(w);
	return 0;
}
