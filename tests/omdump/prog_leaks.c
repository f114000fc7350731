/*
 * Leaks a known pattern for the leak report: 13 blocks of 1000 bytes from
 * leak_small() and 7 blocks of 3000 bytes from leak_large().  Each
 * function calls malloc from a single call site, so each must show as one
 * leak line with the exact totals 13000/13 and 21000/7.  The calls are in
 * functions of their own, not in the loops that make them: -fprofile-use
 * (Meson's b_pgo=use) turns on -funroll-loops, for files without a profile
 * too, and an unrolled loop makes one call site of the source several in
 * the program.  The blocks are kept in a global array so that the compiler
 * cannot drop the calls.
 */
#include <stdlib.h>
#include <string.h>

void *volatile kept[20];

/* The memset after the call keeps malloc's caller here, not a tail call's
 * caller. */
__attribute__((noinline)) static void *
leak_small(void)
{
	void *p = malloc(1000);

	if (p == NULL)
		abort();
	memset(p, 'a', 1000);
	return p;
}

__attribute__((noinline)) static void *
leak_large(void)
{
	void *p = malloc(3000);

	if (p == NULL)
		abort();
	memset(p, 'b', 3000);
	return p;
}

int
main(void)
{
	/* Some traffic that is freed again, so only the leaks remain. */
	for (int i = 0; i < 100; i++) {
		void *p = malloc((size_t)(i + 1) * 37);
		if (p == NULL)
			return 1;
		free(p);
	}
	for (int i = 0; i < 13; i++)
		kept[i] = leak_small();
	for (int i = 0; i < 7; i++)
		kept[13 + i] = leak_large();
	return 0;
}
