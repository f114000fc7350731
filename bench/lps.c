/*
 * lps - loops per second: every thread loops malloc(size); free() of one
 * size for a fixed time.  The shortest path through an allocator, and the
 * one where a lock per operation shows most, so it is swept over sizes
 * (chunks and page regions) and thread counts (1 to far more threads than
 * cores, where pools are shared).
 *
 * With align=N the loop calls posix_memalign(N) instead of malloc: large
 * alignments (64 KiB, 2 MiB) are what some programs ask for, and an
 * allocator that maps and trims for every one of them pays system calls
 * in the loop.
 *
 * With touch=1 each block has a byte written in every page, as a program
 * that fills its buffer does: the size of a big buffer read or decoded
 * again and again (a file, an image, a request).  An allocator that gives
 * such a block back to the kernel as it is freed then pays a page fault
 * for every page, every time.  The byte goes in the middle of each page
 * (see touch_pages).
 *
 * Result: loops_per_sec is the total of malloc/free pairs per second over
 * all threads; ns_per_loop is one pair as one thread sees it.
 */
#include <stdatomic.h>

#include "bench.h"

static atomic_int stop;

struct worker {
	long size;
	long align;
	long touch;
	long loops;
} BENCH_ALIGNED;

/* The loop that writes to every page of each block. */
static long
touch_loop(size_t size)
{
	long n = 0;

	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		char *q = check_alloc(malloc(size), size);

		touch_pages(q, size, (char)n);
		escape(q);
		free(q);
		n++;
	}
	return n;
}

/* The loop with posix_memalign, apart so that the malloc loop stays as
 * short as it can be. */
static long
aligned_loop(size_t size, size_t align)
{
	long n = 0;

	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		int i;

		for (i = 0; i < 64; i++) {
			void *q = NULL;

			if (posix_memalign(&q, align, size) != 0)
				q = NULL;
			escape(check_alloc(q, size));
			free(q);
		}
		n += 64;
	}
	return n;
}

static void *
worker(void *p)
{
	struct worker *w = p;
	size_t size = (size_t)w->size;
	long n = 0;

	if (w->align != 0) {
		w->loops = aligned_loop(size, (size_t)w->align);
		return NULL;
	}
	if (w->touch != 0) {
		w->loops = touch_loop(size);
		return NULL;
	}
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		int i;

		for (i = 0; i < 64; i++) {
			char *q = check_alloc(malloc(size), size);

			escape(q);
			free(q);
		}
		n += 64;
	}
	w->loops = n;
	return NULL;
}

int
main(int argc, char **argv)
{
	long threads = 2, size = 256, align = 0, touch = 0;
	double seconds = 1;
	struct bench_arg args[] = {
		{ "threads", ARG_LONG, &threads, "worker threads" },
		{ "size", ARG_SIZE, &size, "allocation size in bytes" },
		{ "seconds", ARG_DOUBLE, &seconds, "run time" },
		{ "align", ARG_SIZE, &align,
		    "posix_memalign to this alignment (0: malloc)" },
		{ "touch", ARG_LONG, &touch,
		    "1: write a byte to every page of each block" },
	};
	struct bench_threads bt;
	struct bench_thread_arg *ta;
	struct worker *w;
	pthread_t *tids;
	uint64_t ns;
	double loops = 0;
	long i;

	bench_parse(argc, argv, "Loops per second: each thread loops "
	    "malloc/free of one size for a fixed time.", args,
	    sizeof(args) / sizeof(args[0]));
	bench_require(threads >= 1, argv[0], "threads must be at least 1");
	bench_require(align == 0 || (align >= (long)sizeof(void *) &&
	    (align & (align - 1)) == 0), argv[0],
	    "align must be 0 or a power of two, at least a pointer's size");
	bench_require(align == 0 || touch == 0, argv[0],
	    "touch goes with malloc, not with align");

	/*
	 * Not run_threads(): the main thread must set the stop flag while the
	 * workers run.  The span is still taken from the workers' own clocks.
	 */
	w = check_alloc(aligned_alloc(BENCH_CACHELINE,
	    (size_t)threads * sizeof(*w)), 1);
	tids = check_alloc(calloc((size_t)threads, sizeof(*tids)), 1);
	for (i = 0; i < threads; i++) {
		w[i].size = size;
		w[i].align = align;
		w[i].touch = touch;
		w[i].loops = 0;
	}
	ta = start_threads(&bt, tids, threads, worker, w, sizeof(*w));
	pthread_barrier_wait(&bt.start);
	sleep_seconds(seconds);
	atomic_store(&stop, 1);
	ns = join_threads(&bt, tids, ta, threads);
	for (i = 0; i < threads; i++)
		loops += (double)w[i].loops;
	printf("bench=lps threads=%ld size=%ld ", threads, size);
	if (align != 0)
		printf("align=%ld ", align);
	if (touch != 0)
		printf("touch=%ld ", touch);
	printf("seconds=%g elapsed_s=%.4f ns_per_loop=%.1f "
	    "loops_per_sec=%.0f\n", seconds, (double)ns / 1e9, loops > 0 ?
	    (double)ns * (double)threads / loops : 0.0, loops * 1e9 /
	    (double)ns);
	free(tids);
	free(w);
	return 0;
}
