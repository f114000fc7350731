/*
 * trim - how many system calls a thread's page-sized allocations cost.
 *
 * mode=simple: malloc and free one block of `pages` pages (48 by default),
 * touching every page, `loops` times (1024).  An allocator with a page cache
 * big enough for the block makes no system call after the first loop; one
 * that returns pages on every free makes several per loop.
 *
 * mode=mixed: loop i allocates (i % mod) pages (mod 58), touches them, and
 * keeps every second block until the end, so the cache sees blocks of all
 * sizes and a growing heap.
 *
 * Under omalloc the program reads omalloc's own process-wide counters: it
 * finds malloc_gdump with dlsym, dumps into a memfd before and after the
 * loop, and takes the difference of the line
 *     Syscalls mmap <n> munmap <n> mprotect <n> madvise <n>
 * A third dump measures what dumping itself costs, which is subtracted.
 * Under any other allocator the counts are "na" (counters=none); bench/run
 * then counts with strace instead: the loop is bracketed by two getppid()
 * calls, markers that let a trace be cut to exactly the loop.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <sys/mman.h>
#include <sys/syscall.h>

#include "bench.h"

enum { SC_MMAP, SC_MUNMAP, SC_MPROTECT, SC_MADVISE, SC_N };
static const char *const sc_names[SC_N] = {
	"mmap", "munmap", "mprotect", "madvise"
};

static void (*gdump)(int);
static int dump_fd = -1;

/*
 * Dump into the memfd and parse the Syscalls line.  The buffer is static
 * so that reading the counters does not itself allocate.
 */
static int
read_counters(long out[SC_N])
{
	static char buf[1 << 16];
	char *line, *p;
	ssize_t n;
	size_t got = 0;
	int i, found = 0;

	if (ftruncate(dump_fd, 0) == -1 || lseek(dump_fd, 0, SEEK_SET) == -1)
		return -1;
	gdump(dump_fd);
	if (lseek(dump_fd, 0, SEEK_SET) == -1)
		return -1;
	while (got < sizeof(buf) - 1 &&
	    (n = read(dump_fd, buf + got, sizeof(buf) - 1 - got)) > 0)
		got += (size_t)n;
	buf[got] = '\0';

	line = strstr(buf, "Syscalls ");
	if (line == NULL)
		return -1;
	p = strchr(line, '\n');
	if (p != NULL)
		*p = '\0';
	for (i = 0; i < SC_N; i++) {
		char key[32];
		char *k;

		snprintf(key, sizeof(key), " %s ", sc_names[i]);
		k = strstr(line, key);
		out[i] = -1;
		if (k != NULL) {
			out[i] = strtol(k + strlen(key), NULL, 10);
			found++;
		}
	}
	return found == SC_N ? 0 : -1;
}

static void
touch(char *p, size_t len, size_t page)
{
	size_t off;

	for (off = 0; off < len; off += page)
		p[off] = 1;
}

int
main(int argc, char **argv)
{
	const char *mode = "simple";
	long loops = 1024, pages = 48, mod = 58, page = 4096;
	struct bench_arg args[] = {
		{ "mode", ARG_STRING, &mode, "simple or mixed" },
		{ "loops", ARG_LONG, &loops, "malloc/free loops" },
		{ "pages", ARG_LONG, &pages, "pages per block (simple)" },
		{ "mod", ARG_LONG, &mod, "block of i % mod pages (mixed)" },
		{ "page", ARG_SIZE, &page, "page size in bytes" },
	};
	long c0[SC_N], c1[SC_N], c2[SC_N], d[SC_N], total = 0;
	int mixed, counted = 0;
	char **keep;
	uint64_t t0, ns;
	long i;

	bench_parse(argc, argv, "Trim loop: system calls of a thread that "
	    "mallocs and frees page-sized blocks.", args,
	    sizeof(args) / sizeof(args[0]));
	bench_require(strcmp(mode, "simple") == 0 || strcmp(mode, "mixed") == 0,
	    argv[0], "mode must be simple or mixed");
	bench_require(page >= 1 && mod >= 1, argv[0],
	    "page and mod must be at least 1");
	mixed = strcmp(mode, "mixed") == 0;

	keep = check_alloc(calloc((size_t)loops + 1, sizeof(*keep)), 1);
	*(void **)&gdump = dlsym(RTLD_DEFAULT, "malloc_gdump");
	if (gdump != NULL)
		dump_fd = memfd_create("trim-dump", 0);
	if (dump_fd != -1 && read_counters(c0) == 0 &&
	    read_counters(c1) == 0)
		counted = 1;

	syscall(SYS_getppid);
	t0 = now_ns();
	for (i = 0; i < loops; i++) {
		size_t len = (size_t)(mixed ? i % mod : pages) * (size_t)page;
		char *p = check_alloc(malloc(len), len);

		touch(p, len, (size_t)page);
		if (mixed && (i & 1))
			keep[i] = p;
		else
			free(p);
	}
	for (i = 0; i < loops; i++)
		free(keep[i]);
	ns = now_ns() - t0;
	syscall(SYS_getppid);

	if (counted && read_counters(c2) == 0) {
		for (i = 0; i < SC_N; i++) {
			/* c1 - c0 is what one dump costs by itself. */
			d[i] = (c2[i] - c1[i]) - (c1[i] - c0[i]);
			if (d[i] < 0)
				d[i] = 0;
			total += d[i];
		}
	} else
		counted = 0;

	printf("bench=trim mode=%s loops=%ld pages=%ld mod=%ld page=%ld "
	    "elapsed_s=%.4f ns_per_loop=%.0f counters=%s", mode, loops, pages,
	    mod, page, (double)ns / 1e9,
	    loops > 0 ? (double)ns / (double)loops : 0.0,
	    counted ? "omalloc" : "none");
	for (i = 0; i < SC_N; i++) {
		if (counted)
			printf(" %s=%ld", sc_names[i], d[i]);
		else
			printf(" %s=na", sc_names[i]);
	}
	if (counted)
		printf(" syscalls=%ld\n", total);
	else
		printf(" syscalls=na\n");
	free(keep);
	if (dump_fd != -1)
		close(dump_fd);
	return 0;
}
