/*
 * bigbuf - big buffers of many sizes, as a program that reads files,
 * images or requests of any length into a buffer of their own: a window
 * of live buffers whose sizes are uniform between min and max, each in
 * turn at random freed and replaced by one of a new size, every page of
 * it written (the program fills it).
 *
 * An allocator that gives such a buffer's pages back to the kernel as it
 * is freed, and maps new ones for the next, pays a page fault for every
 * page of every buffer; one that keeps freed pages and reuses them for
 * buffers of other sizes pays none.  mimalloc-bench's malloc-large is
 * the same loop at 5-25 MiB.
 *
 * Result: ns_per_op is the time of one replacement, the writes included.
 */
#include "bench.h"

/* A buffer of a random size in [min, max], every page of it written. */
static char *
fill(uint64_t *rng, long min, long max)
{
	size_t size = (size_t)min + (size_t)(rnd_next(rng) %
	    (uint64_t)(max - min + 1));
	char *p = check_alloc(malloc(size), size);

	touch_pages(p, size, 0);
	p[size - 1] = 1;
	return p;
}

int
main(int argc, char **argv)
{
	long min = 128L << 10, max = 1L << 20, live = 20, ops = 2000;
	long seed = 1;
	struct bench_arg args[] = {
		{ "min", ARG_SIZE, &min, "smallest buffer" },
		{ "max", ARG_SIZE, &max, "largest buffer" },
		{ "live", ARG_LONG, &live, "buffers live at once" },
		{ "ops", ARG_LONG, &ops, "replacements" },
		{ "seed", ARG_LONG, &seed, "random seed" },
	};
	uint64_t rng, t0, ns;
	char **buf;
	long i;

	bench_parse(argc, argv, "Big buffers of random sizes replaced at "
	    "random, every page written: ns per replacement.", args,
	    sizeof(args) / sizeof(args[0]));
	bench_require(min >= 1 && max >= min && live >= 1 && ops >= 1,
	    argv[0], "min, live and ops must be at least 1, max at least min");

	rng = rnd_seed((uint64_t)seed, 0);
	buf = check_alloc(calloc((size_t)live, sizeof(*buf)), 1);
	/* The window filled first, untimed: the loop then only replaces. */
	for (i = 0; i < live; i++)
		buf[i] = fill(&rng, min, max);
	t0 = now_ns();
	for (i = 0; i < ops; i++) {
		long k = (long)(rnd_next(&rng) % (uint64_t)live);

		free(buf[k]);
		buf[k] = fill(&rng, min, max);
	}
	ns = now_ns() - t0;
	for (i = 0; i < live; i++) {
		escape(buf[i]);
		free(buf[i]);
	}
	free(buf);
	printf("bench=bigbuf min=%ld max=%ld live=%ld ops=%ld elapsed_s=%.4f "
	    "ns_per_op=%.0f\n", min, max, live, ops, (double)ns / 1e9,
	    (double)ns / (double)ops);
	return 0;
}
