/*
 * realloc - a buffer grown by realloc, step by step, as a string builder
 * or a file read into a growing buffer grows it.  Each repetition starts
 * from realloc(NULL, step) and grows the block by step bytes up to max,
 * writing its last byte after every call, then frees it.  With
 * grow=double each call doubles the block instead, from step up to max,
 * as a growing array or a line buffer is grown: few calls, and most of
 * the bytes copied where the block moves.
 *
 * An allocator that copies the block whenever it outgrows its place makes
 * the loop quadratic in max; one that grows blocks in place, or moves
 * large ones by remapping their pages, keeps it near linear.  Small steps
 * to a few KiB show the chunk classes' moves; steps of pages to MiBs show
 * the page regions'.
 *
 * Result: ns_per_call is the time of one realloc call, averaged over all
 * calls; moves is how many calls returned a new address.
 */
#include "bench.h"

int
main(int argc, char **argv)
{
	long step = 4096, max = 16L << 20, reps = 3;
	const char *grow = "add";
	struct bench_arg args[] = {
		{ "step", ARG_SIZE, &step, "bytes added by each call (the "
		    "first size, doubled)" },
		{ "max", ARG_SIZE, &max, "size the buffer grows to" },
		{ "reps", ARG_LONG, &reps, "times the buffer is grown" },
		{ "grow", ARG_STRING, &grow, "add (step by step) or double" },
	};
	long r, calls = 0, moves = 0;
	uint64_t t0, ns;
	int dbl;

	bench_parse(argc, argv, "A buffer grown by realloc in steps: ns per "
	    "call.", args, sizeof(args) / sizeof(args[0]));
	bench_require(step >= 1 && max >= step && reps >= 1, argv[0],
	    "step and reps must be at least 1, max at least step");
	bench_require(strcmp(grow, "add") == 0 || strcmp(grow, "double") == 0,
	    argv[0], "grow must be add or double");
	dbl = strcmp(grow, "double") == 0;
	bench_require(!dbl || max <= LONG_MAX / 2, argv[0],
	    "max must be at most half of LONG_MAX with grow=double");

	t0 = now_ns();
	for (r = 0; r < reps; r++) {
		char *p = NULL, *q;
		long sz;

		for (sz = step; sz <= max; sz = dbl ? 2 * sz : sz + step) {
			/* The old address as a number: p is freed if it
			 * moves. */
			uintptr_t old = (uintptr_t)p;

			q = check_alloc(realloc(p, (size_t)sz), (size_t)sz);
			moves += old != 0 && (uintptr_t)q != old;
			q[sz - 1] = (char)sz;
			p = q;
			calls++;
		}
		escape(p);
		free(p);
	}
	ns = now_ns() - t0;
	printf("bench=realloc step=%ld max=%ld grow=%s reps=%ld calls=%ld "
	    "moves=%ld elapsed_s=%.4f ns_per_call=%.1f\n", step, max, grow,
	    reps, calls, moves, (double)ns / 1e9, (double)ns / (double)calls);
	return 0;
}
