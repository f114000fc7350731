/*
 * Leaks a known pattern for the leak report: 13 blocks of 1000 bytes from
 * leak_small() and 7 blocks of 3000 bytes from leak_large().  Each function
 * calls malloc from a single call site, so each must show as one leak line
 * with the exact totals 13000/13 and 21000/7.  The blocks are kept in a
 * global array so that the compiler cannot drop the calls.
 */
#include <stdlib.h>
#include <string.h>

void *volatile kept[20];

__attribute__((noinline)) static void
leak_small(void)
{
	for (int i = 0; i < 13; i++) {
		kept[i] = malloc(1000);
		if (kept[i] == NULL)
			abort();
		memset(kept[i], 'a', 1000);
	}
}

__attribute__((noinline)) static void
leak_large(void)
{
	for (int i = 0; i < 7; i++) {
		kept[13 + i] = malloc(3000);
		if (kept[13 + i] == NULL)
			abort();
		memset(kept[13 + i], 'b', 3000);
	}
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
	leak_small();
	leak_large();
	return 0;
}
