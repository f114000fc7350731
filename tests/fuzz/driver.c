/*
 * driver.c - run omfuzz inputs without libFuzzer.
 *
 *   omfuzz-driver FILE|DIR...        run each file (a directory: each file
 *                                    in it, in name order)
 *   omfuzz-driver                    run standard input (AFL++: afl-fuzz
 *                                    -i seeds -o out -- ./omfuzz-driver)
 *   omfuzz-driver --random N SEED    run N pseudo-random inputs
 *
 * Built with afl-clang-fast it uses AFL++'s persistent mode.  Any mismatch
 * aborts; a clean run prints the number of inputs and operations.
 */
#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "omfuzz.h"

#define INPUT_MAX (1 << 20)

static unsigned char buf[INPUT_MAX];
static unsigned long ninputs;

static void
run_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	size_t n;

	if (f == NULL) {
		fprintf(stderr, "omfuzz-driver: %s: %s\n", path,
		    strerror(errno));
		exit(2);
	}
	n = fread(buf, 1, sizeof(buf), f);
	fclose(f);
	omfuzz_run(buf, n);
	ninputs++;
}

static int
by_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void
run_dir(const char *path, DIR *d)
{
	struct dirent *e;
	char **names = NULL;
	size_t n = 0, cap = 0;

	while ((e = readdir(d)) != NULL) {
		if (e->d_name[0] == '.')
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 64;
			names = realloc(names, cap * sizeof(*names));
			if (names == NULL)
				abort();
		}
		if (asprintf(&names[n++], "%s/%s", path, e->d_name) < 0)
			abort();
	}
	closedir(d);
	if (n > 1)
		qsort(names, n, sizeof(*names), by_name);
	for (size_t i = 0; i < n; i++) {
		run_file(names[i]);
		free(names[i]);
	}
	free(names);
}

/* xorshift64*: inputs that are mostly small sizes, some large ones. */
static uint64_t rng;

static unsigned
next(void)
{
	rng ^= rng >> 12;
	rng ^= rng << 25;
	rng ^= rng >> 27;
	return (unsigned)((rng * 2685821657736338717ull) >> 32);
}

/*
 * Random inputs shaped like real ones: operations are drawn one by one, and
 * the largest size class is kept rare since it dominates the run time.
 */
static void
run_random(unsigned long count, unsigned long seed)
{
	rng = seed * 0x9e3779b97f4a7c15ull + 1;
	for (unsigned long k = 0; k < count; k++) {
		size_t len = 0, want = 64 + next() % 2048;

		while (len + 5 <= want) {
			unsigned r = next(), cls = r & 15;

			/* classes 0-2 alike, class 3 one time in 16 */
			cls = cls == 0 ? 3 : cls % 3;
			buf[len] = (unsigned char)((r >> 4 & 0xcf) | cls << 4);
			for (size_t i = 1; i < omfuzz_op_len(buf[len]); i++)
				buf[len + i] = (unsigned char)next();
			len += omfuzz_op_len(buf[len]);
		}
		omfuzz_run(buf, len);
		ninputs++;
	}
}

#ifdef __AFL_FUZZ_TESTCASE_LEN
__AFL_FUZZ_INIT();
#endif

int
main(int argc, char **argv)
{
	if (argc == 4 && strcmp(argv[1], "--random") == 0) {
		run_random(strtoul(argv[2], NULL, 0),
		    strtoul(argv[3], NULL, 0));
	} else if (argc > 1) {
		for (int i = 1; i < argc; i++) {
			DIR *d = opendir(argv[i]);

			if (d != NULL)
				run_dir(argv[i], d);
			else
				run_file(argv[i]);
		}
	} else {
#ifdef __AFL_FUZZ_TESTCASE_LEN
		unsigned char *in = __AFL_FUZZ_TESTCASE_BUF;

		while (__AFL_LOOP(10000)) {
			omfuzz_run(in, __AFL_FUZZ_TESTCASE_LEN);
			ninputs++;
		}
		return 0;
#else
		size_t n = fread(buf, 1, sizeof(buf), stdin);

		omfuzz_run(buf, n);
		ninputs++;
#endif
	}
	printf("omfuzz: %lu inputs, %llu operations, no mismatch\n", ninputs,
	    omfuzz_ops());
	return 0;
}
