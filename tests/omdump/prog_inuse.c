/*
 * "In use" must come back to its baseline once everything allocated is
 * freed.  The program runs one allocation pattern as a warm-up (so the
 * hash table, chunk metadata and page cache have reached their size), then
 * writes three dumps with malloc_gdump() to the file named by argv[1]:
 * the baseline, with the pattern allocated, and after freeing it.
 * Nothing else allocates between the dumps.
 */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <omalloc.h>

#define NBLOCKS 64

static void *blocks[NBLOCKS];

static size_t
size_of(int i)
{
	/* Small and large chunks, a page, and multi-page regions. */
	static const size_t sizes[] = {16, 100, 1000, 2048, 4096, 9000,
	    65536, 300000};

	return sizes[i % 8];
}

static void
allocate(void)
{
	for (int i = 0; i < NBLOCKS; i++) {
		if ((blocks[i] = malloc(size_of(i))) == NULL)
			abort();
		memset(blocks[i], 0x5a, size_of(i));
	}
}

static void
release(void)
{
	for (int i = 0; i < NBLOCKS; i++)
		free(blocks[i]);
}

int
main(int argc, char **argv)
{
	int fd;

	if (argc != 2)
		return 2;
	fd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0644);
	if (fd < 0)
		return 1;
	allocate();
	release();
	malloc_gdump(fd);
	allocate();
	malloc_gdump(fd);
	release();
	malloc_gdump(fd);
	close(fd);
	return 0;
}
