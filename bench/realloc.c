/*
 * realloc - a buffer grown by realloc, step by step, as a string builder
 * or a file read into a growing buffer grows it.  Each repetition starts
 * from realloc(NULL, step) and grows the block by step bytes up to max,
 * writing its last byte after every call, then frees it.  With
 * grow=double each call doubles the block instead, from step up to max,
 * as a growing array or a line buffer is grown: few calls, and most of
 * the bytes copied where the block moves.  With grow=half the buffer is
 * a string built by appends: pieces of 1 to step bytes (drawn from a
 * fixed seed, so every run makes the same calls) go on its end until it
 * holds max bytes, and a piece that does not fit grows it to half as
 * much again as it then needs, as many string builders and vectors
 * grow, so that it ends at a length that differs from one repetition to
 * the next; the time of the appends counts in its calls'.  With
 * grow=random, `live` blocks are resized instead, one at a time, each to
 * a random length of 1 to max bytes (from a fixed seed), its last byte
 * written, as a program resizes the buffers it keeps: `live` calls a
 * repetition, blocks grown and cut back at random, the others left where
 * they are.  With grow=fit `live` buffers are kept too, and each
 * repetition replaces one, at random: a new one, filled step bytes at a
 * time to a random length of 1 to max bytes (its first byte to its last,
 * as a file is read), doubled from step bytes whenever full, then cut to
 * the length it holds, as a program reads what it keeps: a call for
 * each doubling and one to cut, and the writes count in their time.
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

/* p resized to sz bytes, counted in *calls, and in *moves if it moved. */
static char *
resize(char *p, long sz, long *calls, long *moves)
{
	/* The old address as a number: p is freed if it moves. */
	uintptr_t old = (uintptr_t)p;
	char *q = check_alloc(realloc(p, (size_t)sz), (size_t)sz);

	*moves += old != 0 && (uintptr_t)q != old;
	(*calls)++;
	return q;
}

/* A round of grow=add or grow=double: the buffer, from step to max. */
static char *
grow_to(long step, long max, int dbl, long *calls, long *moves)
{
	char *p = NULL;
	long sz;

	for (sz = step; sz <= max; sz = dbl ? 2 * sz : sz + step) {
		p = resize(p, sz, calls, moves);
		p[sz - 1] = (char)sz;
	}
	return p;
}

/* The next draw of a fixed sequence. */
static uint64_t
draw(uint64_t *seed)
{
	*seed = *seed * 6364136223846793005ULL + 1442695040888963407ULL;
	return *seed >> 33;
}

/* A round of grow=random: live calls, each resizing one of the blocks. */
static void
shuffle(char **b, long live, long max, uint64_t *seed, long *calls,
    long *moves)
{
	long i, k, sz;

	for (i = 0; i < live; i++) {
		k = (long)(draw(seed) % (uint64_t)live);
		sz = 1 + (long)(draw(seed) % (uint64_t)max);
		b[k] = resize(b[k], sz, calls, moves);
		b[k][sz - 1] = (char)sz;
	}
}

/* A round of grow=half: the string, appended to until it holds max. */
static char *
build(long step, long max, uint64_t *seed, long *calls, long *moves)
{
	char *p = NULL;
	long len = 0, cap = 0, add;

	while (len < max) {
		add = 1 + (long)(draw(seed) % (uint64_t)step);
		if (add > max - len)
			add = max - len;
		if (len + add > cap) {
			cap = (len + add) + (len + add) / 2;
			p = resize(p, cap, calls, moves);
		}
		memset(p + len, 'a', (size_t)add);
		len += add;
	}
	return p;
}

/* A buffer of grow=fit: filled to a random length, doubled when full,
 * then cut to that length. */
static char *
fill(long step, long max, uint64_t *seed, long *calls, long *moves)
{
	long len = 0, cap = step, add;
	long want = 1 + (long)(draw(seed) % (uint64_t)max);
	char *p = resize(NULL, cap, calls, moves);

	while (len < want) {
		add = want - len < step ? want - len : step;
		if (len + add > cap) {
			cap *= 2;
			p = resize(p, cap, calls, moves);
		}
		memset(p + len, 'f', (size_t)add);
		len += add;
	}
	return resize(p, len, calls, moves);
}

int
main(int argc, char **argv)
{
	long step = 4096, max = 16L << 20, reps = 3, live = 1000;
	const char *grow = "add";
	struct bench_arg args[] = {
		{ "step", ARG_SIZE, &step, "bytes added by each call (the "
		    "first size, doubled)" },
		{ "max", ARG_SIZE, &max, "size the buffer grows to" },
		{ "reps", ARG_LONG, &reps, "times the buffer is grown" },
		{ "grow", ARG_STRING, &grow, "add (step by step), double, "
		    "half (appends, grown by half), random (live blocks "
		    "resized at random) or fit (live buffers filled, "
		    "doubled, cut to fit)" },
		{ "live", ARG_LONG, &live, "blocks kept with grow=random or "
		    "fit" },
	};
	long r, calls = 0, moves = 0;
	uint64_t t0, ns, seed = 1;
	char **blocks = NULL;
	int dbl, half, rnd, fit;

	bench_parse(argc, argv, "A buffer grown by realloc in steps: ns per "
	    "call.", args, sizeof(args) / sizeof(args[0]));
	dbl = strcmp(grow, "double") == 0;
	half = strcmp(grow, "half") == 0;
	rnd = strcmp(grow, "random") == 0;
	fit = strcmp(grow, "fit") == 0;
	bench_require(strcmp(grow, "add") == 0 || dbl || half || rnd || fit,
	    argv[0], "grow must be add, double, half, random or fit");
	bench_require(step >= 1 && max >= (rnd || fit ? 1 : step) &&
	    reps >= 1, argv[0], "step, max and reps must be at least 1, max "
	    "at least step but with grow=random or fit");
	bench_require(live >= 1, argv[0], "live must be at least 1");
	if (rnd || fit)
		blocks = check_alloc(calloc((size_t)live, sizeof(*blocks)),
		    (size_t)live * sizeof(*blocks));
	bench_require(!(dbl || half || fit) || max <= LONG_MAX / 2, argv[0],
	    "max must be at most half of LONG_MAX with grow=double, half or "
	    "fit");

	t0 = now_ns();
	for (r = 0; r < reps; r++) {
		char *p;

		if (rnd) {
			shuffle(blocks, live, max, &seed, &calls, &moves);
			continue;
		}
		if (fit) {
			long k = (long)(draw(&seed) % (uint64_t)live);

			free(blocks[k]);
			blocks[k] = fill(step, max, &seed, &calls, &moves);
			continue;
		}
		p = half ? build(step, max, &seed, &calls, &moves) :
		    grow_to(step, max, dbl, &calls, &moves);
		escape(p);
		free(p);
	}
	if (rnd || fit) {
		escape(blocks);
		for (r = 0; r < live; r++)
			free(blocks[r]);
		free(blocks);
	}
	ns = now_ns() - t0;
	printf("bench=realloc step=%ld max=%ld grow=%s reps=%ld calls=%ld "
	    "moves=%ld elapsed_s=%.4f ns_per_call=%.1f\n", step, max, grow,
	    reps, calls, moves, (double)ns / 1e9, (double)ns / (double)calls);
	return 0;
}
