/*
 * test_os.c - os.c: mappings, protection, guard pages, the read-only seal,
 * counters, and errno left untouched by every call.
 */
#include "unit.h"

#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#define SENTINEL 4242

static int
mapped(const void *p)
{
	unsigned char v;

	return mincore((void *)p, OM_PAGE_SIZE, &v) == 0;
}

START_TEST(map_unmap)
{
	struct om_os_counts a, b;
	unsigned char *p;
	size_t len = 5 * OM_PAGE_SIZE;

	om_os_counts(&a);
	p = om_os_map(len, 0);
	om_os_counts(&b);
	ck_assert_ptr_nonnull(p);
	ck_assert_uint_eq((uintptr_t)p & OM_PAGE_MASK, 0);
	ck_assert_uint_eq(b.mmap, a.mmap + 1);
	ck_assert_bytes(p, 0, len);
	memset(p, 0xaa, len);
	om_os_unmap(p, len);
	om_os_counts(&a);
	ck_assert_uint_eq(a.munmap, b.munmap + 1);
	ck_assert(!mapped(p));
	ck_assert(!mapped(p + len - OM_PAGE_SIZE));
}
END_TEST

/* A mapping grows in place when the pages behind it are free, else it
 * moves with its contents, the old range unmapped; the new pages are zero
 * and the call counts as an mmap. */
START_TEST(remap)
{
	char *p = om_os_map(4 * OM_PAGE_SIZE, 0), *q, *r;
	struct om_os_counts a, b;

	ck_assert_ptr_nonnull(p);
	/* A hole behind the first two pages: they grow into it. */
	om_os_unmap(p + 2 * OM_PAGE_SIZE, 2 * OM_PAGE_SIZE);
	p[0] = 'a';
	om_os_counts(&a);
	q = om_os_remap(p, 2 * OM_PAGE_SIZE, 4 * OM_PAGE_SIZE, NULL);
	om_os_counts(&b);
	ck_assert_uint_eq(b.mmap, a.mmap + 1);
	ck_assert_ptr_eq(q, p);
	ck_assert_int_eq(q[0], 'a');
	ck_assert_int_eq(q[3 * OM_PAGE_SIZE], 0);
	/* Pages behind taken: it moves, and the old range is gone. */
	r = mmap(p + 4 * OM_PAGE_SIZE, OM_PAGE_SIZE, PROT_READ,
	    MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	if (r == MAP_FAILED) {
		/* Something else lives there already: taken all the same. */
		ck_assert_int_eq(errno, EEXIST);
		r = NULL;
	}
	ck_assert(r == NULL || r == p + 4 * OM_PAGE_SIZE);
	q[4 * OM_PAGE_SIZE - 1] = 'z';
	q = om_os_remap(p, 4 * OM_PAGE_SIZE, 8 * OM_PAGE_SIZE, NULL);
	ck_assert_ptr_nonnull(q);
	ck_assert_ptr_ne(q, p);
	ck_assert_int_eq(q[0], 'a');
	ck_assert_int_eq(q[4 * OM_PAGE_SIZE - 1], 'z');
	ck_assert_int_eq(q[7 * OM_PAGE_SIZE], 0);
	ck_assert(!mapped(p));
	om_os_unmap(q, 8 * OM_PAGE_SIZE);
	if (r != NULL)
		munmap(r, OM_PAGE_SIZE);
}
END_TEST

START_TEST(protect)
{
	char *p = om_os_map(2 * OM_PAGE_SIZE, 0);

	ck_assert_ptr_nonnull(p);
	ck_assert_int_eq(om_os_protect(p, OM_PAGE_SIZE, 0), 0);
	unit_expect_fault(p);
	unit_expect_ok(p + OM_PAGE_SIZE);
	ck_assert_int_eq(om_os_protect(p, OM_PAGE_SIZE, 1), 0);
	p[0] = 1;
	om_os_unmap(p, 2 * OM_PAGE_SIZE);
}
END_TEST

START_TEST(guard)
{
	char *p = om_os_map(3 * OM_PAGE_SIZE, 0);

	ck_assert_ptr_nonnull(p);
	memset(p, 7, 3 * OM_PAGE_SIZE);
	ck_assert_int_eq(om_os_guard(p + OM_PAGE_SIZE, OM_PAGE_SIZE), 0);
	unit_expect_fault(p + OM_PAGE_SIZE);
	unit_expect_ok(p);
	unit_expect_ok(p + 2 * OM_PAGE_SIZE);
	ck_assert_int_eq(om_os_unguard(p + OM_PAGE_SIZE, OM_PAGE_SIZE), 0);
	/* Usable again, and zero: the old contents are gone. */
	ck_assert_int_eq(p[OM_PAGE_SIZE], 0);
	p[OM_PAGE_SIZE] = 1;
	ck_assert_int_eq(p[0], 7);
	om_os_unmap(p, 3 * OM_PAGE_SIZE);
}
END_TEST

static int
mseal_works(void)
{
	void *p = mmap(NULL, OM_PAGE_SIZE, PROT_READ,
	    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	return p != MAP_FAILED && syscall(462, p, OM_PAGE_SIZE, 0UL) == 0;
}

START_TEST(readonly)
{
	char *p = om_os_map(OM_PAGE_SIZE, 0);

	ck_assert_ptr_nonnull(p);
	p[0] = 'r';
	om_os_readonly(p, OM_PAGE_SIZE);
	ck_assert_int_eq(p[0], 'r');
	{
		struct child c;

		unit_run(unit_write, p, &c);
		ck_assert(unit_signalled(&c, SIGSEGV));
	}
	/* Sealed where the kernel can: it cannot be made writable. */
	if (mseal_works()) {
		ck_assert_int_ne(mprotect(p, OM_PAGE_SIZE,
		    PROT_READ | PROT_WRITE), 0);
		ck_assert_int_eq(errno, EPERM);
	}
}
END_TEST

START_TEST(conceal_dontdump)
{
	char *p = om_os_map(2 * OM_PAGE_SIZE, 1), line[512];
	char *q = om_os_map(2 * OM_PAGE_SIZE, 0);
	FILE *f = fopen("/proc/self/smaps", "r");
	uintptr_t lo, hi, cur = 0;
	int dd_p = -1, dd_q = -1;

	ck_assert_ptr_nonnull(p);
	ck_assert_ptr_nonnull(q);
	if (f == NULL)
		return;
	while (fgets(line, sizeof(line), f) != NULL) {
		if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2 &&
		    strchr(line, '-') < strchr(line, ' ')) {
			cur = (uintptr_t)p >= lo && (uintptr_t)p < hi ? 1 :
			    (uintptr_t)q >= lo && (uintptr_t)q < hi ? 2 : 0;
			continue;
		}
		if (strncmp(line, "VmFlags:", 8) == 0 && cur != 0) {
			int dd = strstr(line, " dd") != NULL;
			if (cur == 1)
				dd_p = dd;
			else
				dd_q = dd;
		}
	}
	fclose(f);
	ck_assert_int_eq(dd_p, 1);
	ck_assert_int_eq(dd_q, 0);
}
END_TEST

START_TEST(errno_untouched)
{
	char *p, *q;
	struct om_os_counts c;

	errno = SENTINEL;
	p = om_os_map(2 * OM_PAGE_SIZE, 0);
	ck_assert_int_eq(errno, SENTINEL);
	/* Failing calls too. */
	ck_assert_ptr_null(om_os_map((size_t)1 << 62, 0));
	ck_assert_int_eq(errno, SENTINEL);
	ck_assert_ptr_null(om_os_remap(p, OM_PAGE_SIZE, (size_t)1 << 62,
	    NULL));
	ck_assert_int_eq(errno, SENTINEL);
	ck_assert_int_ne(om_os_protect((void *)1, OM_PAGE_SIZE, 0), 0);
	ck_assert_int_eq(errno, SENTINEL);
	ck_assert_int_ne(om_os_write(-1, "x", 1), 0);
	ck_assert_int_eq(errno, SENTINEL);
	ck_assert_int_eq(om_os_protect(p, OM_PAGE_SIZE, 0), 0);
	ck_assert_int_eq(errno, SENTINEL);
	ck_assert_int_eq(om_os_protect(p, OM_PAGE_SIZE, 1), 0);
	ck_assert_int_eq(errno, SENTINEL);
	ck_assert_int_eq(om_os_guard(p, OM_PAGE_SIZE), 0);
	ck_assert_int_eq(errno, SENTINEL);
	ck_assert_int_eq(om_os_unguard(p, OM_PAGE_SIZE), 0);
	ck_assert_int_eq(errno, SENTINEL);
	q = om_os_map(OM_PAGE_SIZE, 1);
	ck_assert_ptr_nonnull(q);
	ck_assert_int_eq(errno, SENTINEL);
	om_os_unmap(q, OM_PAGE_SIZE);
	ck_assert_int_eq(errno, SENTINEL);
	om_os_unmap(p, 2 * OM_PAGE_SIZE);
	ck_assert_int_eq(errno, SENTINEL);
	ck_assert_int_eq(om_os_write(STDERR_FILENO, "", 0), 0);
	om_os_counts(&c);
	ck_assert_int_gt(om_os_gettid(), 0);
	ck_assert_int_gt(om_os_getpid(), 0);
	ck_assert_int_eq(errno, SENTINEL);
	p = om_os_map(OM_PAGE_SIZE, 0);
	om_os_readonly(p, OM_PAGE_SIZE);
	ck_assert_int_eq(errno, SENTINEL);
}
END_TEST

/* 1 if one process_madvise(MADV_DONTNEED) takes pages of two ranges. */
static int
release_batch_works(void)
{
	char *p = mmap(NULL, 3 * OM_PAGE_SIZE, PROT_READ | PROT_WRITE,
	    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct iovec v[2];
	long rc;

	if (p == MAP_FAILED)
		abort();
	memset(p, 1, 3 * OM_PAGE_SIZE);
	v[0].iov_base = p;
	v[1].iov_base = p + 2 * OM_PAGE_SIZE;
	v[0].iov_len = v[1].iov_len = OM_PAGE_SIZE;
	rc = syscall(SYS_process_madvise, -10001, v, (size_t)2, MADV_DONTNEED,
	    0U);
	munmap(p, 3 * OM_PAGE_SIZE);
	return rc == 2 * OM_PAGE_SIZE;
}

/*
 * Ranges given back together: sorted, those that touch joined, their
 * pages released by one process_madvise per OM_UNMAP_SPANS ranges where
 * the kernel does that, and each unmapped; the pages between stay.  Where
 * the kernel refuses the call (here: the first range is locked), every
 * range is unmapped alike, and no more such calls are made.
 */
static void
spans_of(struct om_span *s, char *p, unsigned int n)
{
	unsigned int i;

	/* Pages 0, 2, 4, ..., backwards, and page 1 last: 0-2 touch. */
	for (i = 0; i < n; i++) {
		s[i].p = (uintptr_t)(p + 2 * (n - 1 - i) * OM_PAGE_SIZE);
		s[i].len = OM_PAGE_SIZE;
	}
	s[n].p = (uintptr_t)(p + OM_PAGE_SIZE);
	s[n].len = OM_PAGE_SIZE;
}

START_TEST(unmap_spans_together)
{
	enum { N = OM_UNMAP_SPANS + 9 };	/* N - 1 ranges once joined */
	struct om_span s[N + 1];
	struct om_os_counts a, b;
	int batch = release_batch_works();
	size_t len = 2 * N * OM_PAGE_SIZE;
	unsigned int i;
	char *p;

	for (int locked = 0; locked <= 1; locked++) {
		p = om_os_map(len, 0);
		ck_assert_ptr_nonnull(p);
		memset(p, 1, len);
		if (locked && mlock(p, OM_PAGE_SIZE) != 0)
			return;
		spans_of(s, p, N);
		errno = SENTINEL;
		om_os_counts(&a);
		om_os_unmap_spans(s, N + 1);
		om_os_counts(&b);
		ck_assert_int_eq(errno, SENTINEL);
		ck_assert_uint_eq(b.munmap - a.munmap, N - 1);
		if (locked || !batch)
			ck_assert_uint_le(b.madvise - a.madvise, 1);
		else
			ck_assert_uint_eq(b.madvise - a.madvise, 2);
		ck_assert(unit_unmapped(p, 3));
		for (i = 3; i < 2 * N; i++)
			ck_assert_msg(mapped(p + i * OM_PAGE_SIZE) ==
			    (int)(i % 2), "page %u", i);
		for (i = 3; i < 2 * N; i += 2)
			om_os_unmap(p + i * OM_PAGE_SIZE, OM_PAGE_SIZE);
	}
	/* Refused once: ranges go by munmap alone from then on. */
	p = om_os_map(len, 0);
	ck_assert_ptr_nonnull(p);
	spans_of(s, p, N);
	om_os_counts(&a);
	om_os_unmap_spans(s, N + 1);
	om_os_counts(&b);
	ck_assert_uint_eq(b.madvise, a.madvise);
	ck_assert_uint_eq(b.munmap - a.munmap, N - 1);
}
END_TEST

START_TEST(counters)
{
	struct om_os_counts a, b;
	char *p;

	om_os_counts(&a);
	p = om_os_map(2 * OM_PAGE_SIZE, 1);
	om_os_protect(p, OM_PAGE_SIZE, 0);
	om_os_protect(p, OM_PAGE_SIZE, 1);
	om_os_unmap(p, 2 * OM_PAGE_SIZE);
	om_os_counts(&b);
	ck_assert_uint_eq(b.mmap - a.mmap, 1);
	ck_assert_uint_eq(b.munmap - a.munmap, 1);
	ck_assert_uint_eq(b.mprotect - a.mprotect, 2);
	ck_assert_uint_ge(b.madvise - a.madvise, 1);
}
END_TEST

START_TEST(ids_and_write)
{
	int fds[2];
	char buf[64];
	ssize_t n;

	ck_assert_int_eq(om_os_getpid(), (long)getpid());
	ck_assert_int_eq(om_os_gettid(), syscall(SYS_gettid));
	ck_assert_int_eq(pipe(fds), 0);
	ck_assert_int_eq(om_os_write(fds[1], "all of it", 9), 0);
	n = read(fds[0], buf, sizeof(buf));
	ck_assert_int_eq(n, 9);
	ck_assert(memcmp(buf, "all of it", 9) == 0);
	close(fds[0]);
	close(fds[1]);
}
END_TEST

/* ------------------------------------------------------------------ */
/* munmap refused at vm.max_map_count */

#define LIMIT_BLOCKS	2000
#define LIMIT_MARGIN	64
#define LIMIT_ROOM	200	/* mappings given back before reallocating */
/* Past this vm.max_map_count, filling the mappings would take the kernel
 * hundreds of MiB and many seconds: the cases are skipped. */
#define LIMIT_MAX	262144

/* In the child of unit_run: a failed check says why and exits 1. */
#define need(cond, ...)							\
	do {								\
		if (!(cond)) {						\
			fprintf(stderr, __VA_ARGS__);			\
			fputc('\n', stderr);				\
			_exit(1);					\
		}							\
	} while (0)

static long
maps_count(void)
{
	FILE *f = fopen("/proc/self/maps", "r");
	long n = 0;
	int c;

	need(f != NULL, "no /proc/self/maps");
	while ((c = fgetc(f)) != EOF)
		n += c == '\n';
	fclose(f);
	return n;
}

/* vm.max_map_count; past LIMIT_MAX the case is skipped (exit 0). */
static long
map_limit(void)
{
	FILE *f = fopen("/proc/sys/vm/max_map_count", "r");
	long max = 0;

	need(f != NULL && fscanf(f, "%ld", &max) == 1, "no max_map_count");
	fclose(f);
	if (max > LIMIT_MAX) {
		fprintf(stderr, "vm.max_map_count %ld over %d: skipped\n", max,
		    LIMIT_MAX);
		_exit(0);
	}
	return max;
}

/*
 * Use up the process's mappings, but leave: pages of a PROT_NONE
 * reservation made readable one in two, each call splitting off two
 * more mappings.  No page is touched.  Returns the reservation.
 */
static void *
fill_maps(long leave, size_t *len)
{
	long max = map_limit(), calls, i;
	char *p;

	calls = (max - leave - maps_count()) / 2;
	need(calls > 0, "max_map_count %ld too low", max);
	*len = (size_t)(2 * calls + 2) * OM_PAGE_SIZE;
	p = mmap(NULL, *len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS |
	    MAP_NORESERVE, -1, 0);
	need(p != MAP_FAILED, "reservation of %zu bytes", *len);
	for (i = 0; i < calls; i++)
		need(mprotect(p + (2 * i + 1) * OM_PAGE_SIZE, OM_PAGE_SIZE,
		    PROT_READ) == 0, "mprotect %ld of %ld", i, calls);
	return p;
}

/* Pages of the blocks b[0], b[2], ... that are mapped; *resident: of
 * those, the resident ones. */
static size_t
freed_mapped(char **b, size_t *resident)
{
	unsigned char v[2];
	size_t i, j, n = 0;

	*resident = 0;
	for (i = 0; i < LIMIT_BLOCKS; i += 2) {
		char *page = (char *)((uintptr_t)b[i] & ~OM_PAGE_MASK);

		if (mincore(page, 2 * OM_PAGE_SIZE, v) != 0)
			continue;
		for (j = 0; j < 2; j++) {
			n++;
			*resident += v[j] & 1;
		}
	}
	return n;
}

/* The pages every pool's cache and the depot hold. */
static size_t
cached_pages(void)
{
	size_t n = om_cache_depot_pages();
	unsigned int i;

	for (i = 0; i < mopts.npools; i++)
		if (om_pool_if_open(i) != NULL)
			n += om_pool_at(i)->cache_pages;
	return n;
}

static void
at_map_limit(void *arg)
{
	static char *b[LIMIT_BLOCKS];
	struct om_os_kept k0, k1, k2, k3;
	size_t i, len, mapped, resident;
	void *fill;

	(void)arg;
	unit_init();
	for (i = 0; i < LIMIT_BLOCKS; i++) {
		need((b[i] = malloc(2 * OM_PAGE_SIZE)) != NULL, "malloc %zu",
		    i);
		memset(b[i], 1, 2 * OM_PAGE_SIZE);
	}
	om_os_kept(&k0);
	/* A count before the fill leaves credit for the whole case: the
	 * mappings are not counted again, and the refusals are the
	 * kernel's (see near_map_limit for the count that holds back). */
	need(!om_os_maps_recount(), "holding back before the fill");
	fill = fill_maps(LIMIT_MARGIN, &len);
	/* Every other block freed: each run the caches let go is a hole in
	 * a mapping, and from about the LIMIT_MARGIN / 2th the kernel
	 * refuses the split.  Refused, the run is released in place. */
	for (i = 0; i < LIMIT_BLOCKS; i += 2)
		free(b[i]);
	om_os_kept(&k1);
	need(k1.refused > k0.refused, "no munmap refused");
	need(k1.runs > 0 && k1.lost == 0, "kept %u runs, lost %lu", k1.runs,
	    k1.lost);
	mapped = freed_mapped(b, &resident);
	need(mapped >= k1.pages / 2, "freed pages mapped %zu, kept %zu",
	    mapped, k1.pages);
	/* Resident: what the caches hold, and the pages of refused runs
	 * that became the list of the others. */
	need(resident <= cached_pages() + k1.blocks, "freed pages resident "
	    "%zu, cached %zu, list %u", resident, cached_pages(), k1.blocks);
	/* The pages unmapped before the first refusal need new mappings,
	 * which the kernel may refuse too (the malloc then fails with
	 * ENOMEM): room for a few hundred first, at the reservation's
	 * start.  The kept runs are still taken before any new mapping. */
	need(munmap(fill, 2 * LIMIT_ROOM * OM_PAGE_SIZE) == 0, "room");
	for (i = 0; i < LIMIT_BLOCKS; i += 2) {
		need((b[i] = malloc(2 * OM_PAGE_SIZE)) != NULL, "again %zu", i);
		memset(b[i], 2, 2 * OM_PAGE_SIZE);
	}
	om_os_kept(&k2);
	need(k2.runs < k1.runs, "kept runs %u, before %u", k2.runs, k1.runs);
	for (i = 1; i < LIMIT_BLOCKS; i += 2)
		need(b[i][0] == 1 && b[i][2 * OM_PAGE_SIZE - 1] == 1,
		    "block %zu changed", i);
	/* Room again: malloc_trim unmaps what is kept.  Not the part given
	 * back before, where new mappings may lie now. */
	need(munmap((char *)fill + 2 * LIMIT_ROOM * OM_PAGE_SIZE, len - 2 *
	    LIMIT_ROOM * OM_PAGE_SIZE) == 0, "munmap of the reservation");
	for (i = 0; i < LIMIT_BLOCKS; i++)
		free(b[i]);
	malloc_trim(0);
	om_os_kept(&k3);
	need(k3.runs == 0 && k3.pages == 0, "after trim: kept %u runs %zu "
	    "pages", k3.runs, k3.pages);
}

/*
 * The list itself, at the limit: a refused run of 70 pages is released
 * (not resident, zero when reused), lands with the long runs, and is
 * handed out front first, its rest kept by its length.
 */
static void
kept_split(void *arg)
{
	size_t len, i, n = 0;
	struct om_os_kept k;
	unsigned char v[70];
	char *p, *q, *scratch;
	void *fill;

	(void)arg;
	unit_init();
	p = om_os_map(100 * OM_PAGE_SIZE, 0);
	need(p != NULL, "map");
	memset(p, 1, 100 * OM_PAGE_SIZE);
	scratch = om_os_map(4 * LIMIT_MARGIN * OM_PAGE_SIZE, 0);
	need(scratch != NULL, "scratch");
	need(!om_os_maps_recount(), "holding back before the fill");
	fill = fill_maps(LIMIT_MARGIN, &len);
	/* The margin used up, a page at a time, until the first refusal. */
	do {
		need(n < 2 * LIMIT_MARGIN, "no munmap refused");
		om_os_unmap(scratch + (2 * n++ + 1) * OM_PAGE_SIZE,
		    OM_PAGE_SIZE);
		om_os_kept(&k);
	} while (k.refused == 0);
	om_os_unmap(p + 10 * OM_PAGE_SIZE, 70 * OM_PAGE_SIZE);
	om_os_kept(&k);
	need(k.refused == 2 && k.runs == 2 && k.pages == 71, "refused %lu, "
	    "kept %u runs %zu pages", k.refused, k.runs, k.pages);
	need(mincore(p + 10 * OM_PAGE_SIZE, 70 * OM_PAGE_SIZE, v) == 0,
	    "kept run not mapped");
	for (i = 0; i < 70; i++)
		need((v[i] & 1) == 0, "kept page %zu resident", i);
	/* 30 pages: no bin of 30 or more but the long runs' one. */
	q = om_os_map(30 * OM_PAGE_SIZE, 0);
	need(q == p + 10 * OM_PAGE_SIZE, "got %p, not the kept run's front %p",
	    (void *)q, (void *)(p + 10 * OM_PAGE_SIZE));
	need(q[0] == 0 && q[30 * OM_PAGE_SIZE - 1] == 0, "not zero");
	q[0] = 2;
	/* The 40 pages left, by their own length. */
	q = om_os_map(40 * OM_PAGE_SIZE, 0);
	need(q == p + 40 * OM_PAGE_SIZE, "got %p, not the rest %p", (void *)q,
	    (void *)(p + 40 * OM_PAGE_SIZE));
	q[40 * OM_PAGE_SIZE - 1] = 2;
	/* The page refused first, by its own length. */
	q = om_os_map(OM_PAGE_SIZE, 0);
	need(q == scratch + (2 * n - 1) * OM_PAGE_SIZE, "got %p, not the "
	    "scratch page", (void *)q);
	om_os_kept(&k);
	need(k.runs == 0 && k.pages == 0, "kept %u runs %zu pages", k.runs,
	    k.pages);
	need(p[9 * OM_PAGE_SIZE] == 1 && p[80 * OM_PAGE_SIZE] == 1,
	    "neighbours changed");
	need(munmap(fill, len) == 0, "munmap of the reservation");
}

/*
 * Near the limit, omalloc holds back before the kernel refuses: from
 * three quarters of vm.max_map_count on, freed runs are released in
 * place and kept, and the program can still map.  The mappings are
 * filled in two steps around a count, so that the count that decides
 * to hold back is one the credit calls for, as in a program's run.
 */
#define HOLD_BLOCKS	6000

static void
near_map_limit(void *arg)
{
	static char *b[HOLD_BLOCKS];
	struct om_os_kept k0, k1, k2;
	size_t i, len1, len2;
	long max, before, after, mid;
	void *fill1, *fill2, *big;
	char *p;

	(void)arg;
	unit_init();
	for (i = 0; i < HOLD_BLOCKS; i++)
		need((b[i] = malloc(2 * OM_PAGE_SIZE)) != NULL, "malloc %zu",
		    i);
	max = map_limit();
	/* Just under the mark, and counted: the credit is the least. */
	fill1 = fill_maps(max / 4 + 500, &len1);
	need(!om_os_maps_recount(), "holding back under the mark");
	/* Then past it, behind omalloc's back, short of seven eighths,
	 * where malloc_trim stops unmapping (below). */
	fill2 = fill_maps(max * 3 / 16, &len2);
	om_os_kept(&k0);
	before = maps_count();
	for (i = 0; i < HOLD_BLOCKS; i += 2)
		free(b[i]);
	om_os_kept(&k1);
	after = maps_count();
	need(k1.holding, "not holding back at %ld mappings of %ld", after,
	    max);
	need(k1.refused == k0.refused, "the kernel refused %lu munmaps",
	    k1.refused - k0.refused);
	need(k1.held > k0.held && k1.runs > k0.runs, "held back %lu, kept "
	    "%u runs", k1.held - k0.held, k1.runs);
	need(k1.maps >= max - max / 4 && k1.maps_limit == max,
	    "counted %ld of %ld", k1.maps, k1.maps_limit);
	need(after < max - max / 16, "%ld mappings of %ld (%ld before the "
	    "frees)", after, max, before);
	/* The program can still map: a mapping split in three, and a
	 * block no kept run fits. */
	p = mmap(NULL, 3 * OM_PAGE_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE |
	    MAP_ANONYMOUS, -1, 0);
	need(p != MAP_FAILED, "mmap");
	need(mprotect(p + OM_PAGE_SIZE, OM_PAGE_SIZE, PROT_READ) == 0,
	    "mprotect");
	need((big = malloc((size_t)8 << 20)) != NULL, "8 MiB");
	memset(big, 3, (size_t)8 << 20);
	/* The kept runs come back before anything new is mapped.  (The
	 * steps above add one to three mappings each, by whether their
	 * mapping lands beside another it merges with.) */
	mid = maps_count();
	for (i = 0; i < HOLD_BLOCKS; i += 2) {
		need((b[i] = malloc(2 * OM_PAGE_SIZE)) != NULL, "again %zu", i);
		b[i][0] = 2;
	}
	om_os_kept(&k2);
	need(k2.runs < k1.runs, "kept runs %u, before %u", k2.runs, k1.runs);
	need(maps_count() <= mid + 2, "%ld mappings, %ld before",
	    maps_count(), mid);
	/* All freed, still near the limit: malloc_trim unmaps the kept
	 * runs in address order, whole mappings at a time.  Only the pages
	 * the list of kept runs lives in stay, each at worst a mapping
	 * between two holes. */
	free(big);
	for (i = 0; i < HOLD_BLOCKS; i++)
		free(b[i]);
	before = maps_count();
	malloc_trim(0);
	after = maps_count();
	om_os_kept(&k2);
	need(k2.runs == 0 && k2.pages == 0, "after trim: kept %u runs %zu "
	    "pages", k2.runs, k2.pages);
	need(after <= before + 2 * (long)k2.blocks, "after trim: %ld "
	    "mappings, %ld before, list %u pages", after, before, k2.blocks);
	/* Room again: the next count stops holding back. */
	need(munmap(fill2, len2) == 0 && munmap(fill1, len1) == 0 &&
	    munmap(p, 3 * OM_PAGE_SIZE) == 0, "munmap");
	need(!om_os_maps_recount(), "still holding back at %ld mappings",
	    maps_count());
}

/* fn, in a child of its own (its mappings go with it), passes. */
static void
child_passes(void (*fn)(void *))
{
	struct child c;

	unit_run(fn, NULL, &c);
	ck_assert_exited_ok(&c);
}

START_TEST(kept_runs_split_and_reused)
{
	child_passes(kept_split);
}
END_TEST

START_TEST(munmap_refused_at_map_limit)
{
	child_passes(at_map_limit);
}
END_TEST

START_TEST(held_back_near_map_limit)
{
	child_passes(near_map_limit);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("os");
	TCase *t = tcase_create("os");

	tcase_add_test(t, map_unmap);
	tcase_add_test(t, remap);
	tcase_add_test(t, protect);
	tcase_add_test(t, guard);
	tcase_add_test(t, readonly);
	tcase_add_test(t, conceal_dontdump);
	tcase_add_test(t, errno_untouched);
	tcase_add_test(t, counters);
	tcase_add_test(t, unmap_spans_together);
	tcase_add_test(t, ids_and_write);
	tcase_add_test(t, munmap_refused_at_map_limit);
	tcase_add_test(t, kept_runs_split_and_reused);
	tcase_add_test(t, held_back_near_map_limit);
	suite_add_tcase(s, t);
	return unit_main(s);
}
