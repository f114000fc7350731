/*
 * test_api.c - every API function with its edge cases, black box: this
 * program links libomalloc.so like any user.  Registered several times in
 * tests/meson.build under different MALLOC_OPTIONS: options never change
 * what a correct program sees.
 */
#include <check.h>
#include <errno.h>
#include <malloc.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check_bytes.h"
#include "omalloc.h"

#define PAGE 4096

static const size_t sizes[] = {
	0, 1, 7, 15, 16, 17, 31, 32, 33, 48, 63, 64, 100, 128, 200, 256, 500,
	512, 1000, 1024, 1360, 1500, 2047, 2048, 2049, 3000, 4000, 4095, 4096,
	4097, 8191, 8192, 10000, 65536, 100000, 262144, 1 << 20, 3 << 20,
};
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))

/* p, through a register the compiler cannot see into: a write past the
 * size asked for, up to malloc_usable_size, is then not held to that
 * size by _FORTIFY_SOURCE=3, which knows it from malloc's alloc_size. */
static void *
untraced(void *p)
{
	__asm__ volatile("" : "+r"(p));
	return p;
}

static void
fill(unsigned char *p, size_t n, unsigned int seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (unsigned char)(seed + i * 31);
}

static int
check_fill(const unsigned char *p, size_t n, unsigned int seed)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != (unsigned char)(seed + i * 31))
			return 0;
	return 1;
}

/* Whether two of the blocks p[i], of sizes[i] bytes, overlap; if so the
 * first such pair in *a and *b. */
static int
overlap(void *const *p, size_t *a, size_t *b)
{
	for (size_t i = 0; i < NSIZES; i++)
		for (size_t j = 0; j < NSIZES; j++) {
			uintptr_t x = (uintptr_t)p[i], y = (uintptr_t)p[j];

			if (i == j || sizes[i] == 0 || sizes[j] == 0)
				continue;
			if (!(x + sizes[i] <= y || y + sizes[j] <= x)) {
				*a = i;
				*b = j;
				return 1;
			}
		}
	return 0;
}

/* Run fn in a child; return the signal that ended it (0 if none). */
static int
child_signal(void (*fn)(void *), void *arg)
{
	int st;
	pid_t pid = fork();

	if (pid == 0) {
		fn(arg);
		_exit(0);
	}
	waitpid(pid, &st, 0);
	return WIFSIGNALED(st) ? WTERMSIG(st) : 0;
}

START_TEST(malloc_every_size)
{
	void *p[NSIZES];
	size_t i, j;

	for (i = 0; i < NSIZES; i++) {
		p[i] = malloc(sizes[i]);
		ck_assert_ptr_nonnull(p[i]);
		ck_assert_uint_eq((uintptr_t)p[i] % 16, 0);
		fill(p[i], sizes[i], (unsigned int)i);
		ck_assert_uint_ge(malloc_usable_size(p[i]), sizes[i]);
	}
	for (i = 0; i < NSIZES; i++)
		ck_assert(check_fill(p[i], sizes[i], (unsigned int)i));
	/* Live blocks never overlap. */
	ck_assert_msg(!overlap(p, &i, &j), "%zu bytes at %p overlap %zu at %p",
	    sizes[i], p[i], sizes[j], p[j]);
	for (i = 0; i < NSIZES; i++)
		free(p[i]);
}
END_TEST

static void
touch(void *arg)
{
	*(volatile char *)arg = 1;
}

static void
peek(void *arg)
{
	(void)*(volatile char *)arg;
}

START_TEST(malloc_zero)
{
	void *a = malloc(0), *b = malloc(0);

	ck_assert_ptr_nonnull(a);
	ck_assert_ptr_nonnull(b);
	ck_assert_ptr_ne(a, b);
	ck_assert_uint_eq(malloc_usable_size(a), 0);
	/* A zero-size object is in a no-access page. */
	ck_assert_int_eq(child_signal(touch, a), SIGSEGV);
	ck_assert_int_eq(child_signal(peek, b), SIGSEGV);
	free(a);
	free(b);
}
END_TEST

START_TEST(malloc_too_large)
{
	errno = 0;
	ck_assert_ptr_null(malloc(SIZE_MAX));
	ck_assert_int_eq(errno, ENOMEM);
	errno = 0;
	ck_assert_ptr_null(malloc((size_t)PTRDIFF_MAX + 1));
	ck_assert_int_eq(errno, ENOMEM);
	errno = 0;
	ck_assert_ptr_null(malloc(SIZE_MAX - 4096));
	ck_assert_int_eq(errno, ENOMEM);
	/* The heap keeps working. */
	void *p = malloc(100);
	ck_assert_ptr_nonnull(p);
	free(p);
}
END_TEST

START_TEST(errno_untouched_on_success)
{
	void *p[NSIZES];
	size_t i;

	for (i = 0; i < NSIZES; i++) {
		errno = 4242;
		p[i] = malloc(sizes[i]);
		ck_assert_int_eq(errno, 4242);
	}
	for (i = 0; i < NSIZES; i++) {
		errno = 4243;
		p[i] = realloc(p[i], sizes[NSIZES - 1 - i]);
		ck_assert_int_eq(errno, 4243);
		free(p[i]);
		ck_assert_int_eq(errno, 4243);
	}
}
END_TEST

START_TEST(calloc_zeroes)
{
	size_t i;

	for (i = 0; i < NSIZES; i++) {
		/* Dirty memory first, so zeroing is not free from mmap. */
		unsigned char *d = malloc(sizes[i]);
		memset(d, 0xa5, sizes[i]);
		free(d);
		unsigned char *p = calloc(1, sizes[i]);
		ck_assert_ptr_nonnull(p);
		ck_assert_bytes(p, 0, sizes[i]);
		free(p);
	}
	unsigned char *q = calloc(100, 41);
	ck_assert_ptr_nonnull(q);
	ck_assert_bytes(q, 0, 4100);
	free(q);
}
END_TEST

START_TEST(calloc_overflow)
{
	errno = 0;
	ck_assert_ptr_null(calloc(SIZE_MAX / 2, 3));
	ck_assert_int_eq(errno, ENOMEM);
	errno = 0;
	ck_assert_ptr_null(calloc((size_t)1 << 33, (size_t)1 << 33));
	ck_assert_int_eq(errno, ENOMEM);
	void *p = calloc(0, 10);
	ck_assert_ptr_nonnull(p);
	free(p);
}
END_TEST

START_TEST(realloc_keeps_contents)
{
	size_t i, j;

	for (i = 1; i < NSIZES; i++)
		for (j = 1; j < NSIZES; j += 3) {
			unsigned char *p = malloc(sizes[i]);
			size_t keep = sizes[i] < sizes[j] ? sizes[i] : sizes[j];

			fill(p, sizes[i], (unsigned int)(i * 7 + j));
			p = realloc(p, sizes[j]);
			ck_assert_ptr_nonnull(p);
			ck_assert_uint_eq((uintptr_t)p % 16, 0);
			ck_assert(check_fill(p, keep,
			    (unsigned int)(i * 7 + j)));
			ck_assert_uint_ge(malloc_usable_size(p), sizes[j]);
			free(p);
		}
}
END_TEST

START_TEST(realloc_null_and_zero)
{
	void *p = realloc(NULL, 100), *q;

	ck_assert_ptr_nonnull(p);
	/* realloc(p, 0) frees p and returns a unique zero-size object. */
	q = realloc(p, 0);
	ck_assert_ptr_nonnull(q);
	ck_assert_uint_eq(malloc_usable_size(q), 0);
	ck_assert_int_eq(child_signal(touch, q), SIGSEGV);
	q = realloc(q, 50);
	ck_assert_ptr_nonnull(q);
	memset(q, 1, 50);
	free(q);
	p = malloc(100000);
	q = realloc(p, 0);
	ck_assert_ptr_nonnull(q);
	free(q);
}
END_TEST

START_TEST(realloc_failure_keeps_block)
{
	unsigned char *p = malloc(3000);

	fill(p, 3000, 9);
	errno = 0;
	ck_assert_ptr_null(realloc(p, SIZE_MAX / 2));
	ck_assert_int_eq(errno, ENOMEM);
	ck_assert(check_fill(p, 3000, 9));
	ck_assert_ptr_null(realloc(p, (size_t)PTRDIFF_MAX + 1));
	ck_assert(check_fill(p, 3000, 9));
	free(p);
}
END_TEST

START_TEST(realloc_growth_chain)
{
	unsigned char *p = NULL;
	size_t n;

	for (n = 1; n < (1 << 21); n = n * 3 / 2 + 1) {
		p = realloc(p, n);
		ck_assert_ptr_nonnull(p);
		p[n - 1] = (unsigned char)n;
		if (n > 1)
			ck_assert_uint_eq(p[0], 1);
		p[0] = 1;
	}
	for (; n > 1; n /= 2) {
		p = realloc(p, n);
		ck_assert_uint_eq(p[0], 1);
	}
	free(p);
}
END_TEST

START_TEST(reallocarray_checks)
{
	int *p = reallocarray(NULL, 10, sizeof(int));

	ck_assert_ptr_nonnull(p);
	for (int i = 0; i < 10; i++)
		p[i] = i;
	p = reallocarray(p, 1000, sizeof(int));
	ck_assert_ptr_nonnull(p);
	ck_assert_int_eq(p[9], 9);
	errno = 0;
	ck_assert_ptr_null(reallocarray(p, SIZE_MAX / 2, 4));
	ck_assert_int_eq(errno, ENOMEM);
	ck_assert_int_eq(p[9], 9);
	free(p);
}
END_TEST

START_TEST(recallocarray_zeroes_and_clears)
{
	unsigned char *p = recallocarray(NULL, 0, 10, 10), *q;

	ck_assert_ptr_nonnull(p);
	ck_assert_bytes(p, 0, 100);
	memset(p, 7, 100);
	q = recallocarray(p, 10, 500, 10);
	ck_assert_ptr_nonnull(q);
	ck_assert_bytes(q, 7, 100);
	ck_assert_bytes(q + 100, 0, 4900);
	q = recallocarray(q, 500, 400, 10);
	ck_assert_ptr_nonnull(q);
	ck_assert_uint_eq(q[0], 7);
	q = recallocarray(q, 400, 3, 10);
	ck_assert_ptr_nonnull(q);
	ck_assert_uint_eq(q[29], 7);
	errno = 0;
	ck_assert_ptr_null(recallocarray(q, 3, SIZE_MAX / 4, 10));
	ck_assert_int_eq(errno, ENOMEM);
	ck_assert_uint_eq(q[0], 7);
	free(q);
}
END_TEST

START_TEST(freezero_works)
{
	freezero(NULL, 10);
	for (size_t i = 1; i < NSIZES; i++) {
		void *p = malloc(sizes[i]);
		memset(p, 3, sizes[i]);
		freezero(p, sizes[i]);
	}
	void *p = malloc(100);
	freezero(p, 0);
}
END_TEST

/* Every block freed by size, as C23 allows: in use returns to where it
 * was, so each call freed its block. */
START_TEST(sized_frees_free)
{
	struct mallinfo2 before, after;
	size_t a, i, total = 0;

	errno = 5;
	free_sized(NULL, 10);
	free_aligned_sized(NULL, 64, 10);
	ck_assert_int_eq(errno, 5);
	malloc_trim(0);
	before = mallinfo2();
	for (i = 0; i < NSIZES; i++) {
		unsigned char *p = malloc(sizes[i]), *q;

		ck_assert_ptr_nonnull(p);
		fill(p, sizes[i], 1);
		free_sized(p, sizes[i]);
		p = calloc(3, sizes[i] / 3 + 1);
		ck_assert_ptr_nonnull(p);
		free_sized(p, 3 * (sizes[i] / 3 + 1));
		/* The size realloc was last given, moved or not. */
		p = malloc(sizes[i] + 1);
		ck_assert_ptr_nonnull(p);
		q = realloc(p, sizes[i] / 2 + 1);
		ck_assert_ptr_nonnull(q);
		free_sized(q, sizes[i] / 2 + 1);
		total += sizes[i];
	}
	for (a = 1; a <= (1 << 20); a *= 2)
		for (i = 0; i < NSIZES; i += 3) {
			void *p = aligned_alloc(a, sizes[i]);

			ck_assert_ptr_nonnull(p);
			free_aligned_sized(p, a, sizes[i]);
		}
	ck_assert_int_eq(errno, 5);
	malloc_trim(0);
	after = mallinfo2();
	ck_assert_msg(after.uordblks <= before.uordblks + 4096,
	    "in use %zu after freeing %zu bytes by size, %zu before",
	    after.uordblks, total, before.uordblks);
}
END_TEST

START_TEST(aligned_every_alignment)
{
	size_t a, i;

	for (a = 1; a <= (1 << 20); a *= 2)
		for (i = 0; i < NSIZES; i += 2) {
			void *p = aligned_alloc(a, sizes[i]);

			ck_assert_ptr_nonnull(p);
			ck_assert_uint_eq((uintptr_t)p % a, 0);
			ck_assert_uint_eq((uintptr_t)p % 16, 0);
			memset(p, 1, sizes[i]);
			ck_assert_uint_ge(malloc_usable_size(p), sizes[i]);
			free(p);
		}
	/* C17: any size, not only multiples of the alignment. */
	void *p = aligned_alloc(64, 100);
	ck_assert_ptr_nonnull(p);
	free(p);
	p = aligned_alloc(1 << 22, 10);
	ck_assert_ptr_nonnull(p);
	ck_assert_uint_eq((uintptr_t)p % (1 << 22), 0);
	free(p);
}
END_TEST

/* glibc declares aligned_alloc's alignment with alloc_align, and clang 14
 * crashes (isKnownNonZero) on a call that passes a constant 0 to it: the
 * zero goes through a volatile, which the compiler cannot see through. */
static volatile size_t zero_align;

START_TEST(aligned_errors)
{
	void *p = (void *)1;

	errno = 0;
	ck_assert_ptr_null(aligned_alloc(3, 10));
	ck_assert_int_eq(errno, EINVAL);
	errno = 0;
	ck_assert_ptr_null(aligned_alloc(zero_align, 10));
	ck_assert_int_eq(errno, EINVAL);
	errno = 77;
	ck_assert_int_eq(posix_memalign(&p, 3, 10), EINVAL);
	ck_assert_int_eq(posix_memalign(&p, 4, 10), EINVAL);
	ck_assert_int_eq(posix_memalign(&p, 0, 10), EINVAL);
	ck_assert_int_eq(posix_memalign(&p, 64, SIZE_MAX / 2), ENOMEM);
	ck_assert_int_eq(errno, 77);
	ck_assert_ptr_eq(p, (void *)1);
	ck_assert_int_eq(posix_memalign(&p, 8, 10), 0);
	ck_assert_ptr_ne(p, (void *)1);
	free(p);
	ck_assert_int_eq(posix_memalign(&p, 8192, 0), 0);
	ck_assert_uint_eq((uintptr_t)p % 8192, 0);
	free(p);
	errno = 0;
	ck_assert_ptr_null(aligned_alloc(4096, SIZE_MAX - 100));
	ck_assert_int_eq(errno, ENOMEM);
}
END_TEST

START_TEST(memalign_valloc_pvalloc)
{
	void *p = memalign(48, 100);	/* rounds up to 64 */

	ck_assert_ptr_nonnull(p);
	ck_assert_uint_eq((uintptr_t)p % 64, 0);
	free(p);
	p = memalign(1 << 16, 5);
	ck_assert_uint_eq((uintptr_t)p % (1 << 16), 0);
	free(p);
	p = valloc(10);
	ck_assert_uint_eq((uintptr_t)p % PAGE, 0);
	free(p);
	p = pvalloc(10);
	ck_assert_uint_eq((uintptr_t)p % PAGE, 0);
	ck_assert_uint_ge(malloc_usable_size(p), PAGE);
	memset(p, 1, PAGE);
	free(p);
	p = pvalloc(0);
	ck_assert_ptr_nonnull(p);
	ck_assert_uint_ge(malloc_usable_size(p), PAGE);
	free(p);
	errno = 0;
	ck_assert_ptr_null(pvalloc(SIZE_MAX - 10));
	ck_assert_int_eq(errno, ENOMEM);
}
END_TEST

START_TEST(usable_size)
{
	ck_assert_uint_eq(malloc_usable_size(NULL), 0);
	for (size_t i = 1; i < NSIZES; i++) {
		unsigned char *p = malloc(sizes[i]);
		size_t u = malloc_usable_size(p);

		ck_assert_uint_ge(u, sizes[i]);
		/* The whole usable size may be written. */
		memset(untraced(p), 0x5a, u);
		free(p);
	}
}
END_TEST

START_TEST(conceal)
{
	unsigned char *p = malloc_conceal(100), *q;

	ck_assert_ptr_nonnull(p);
	memset(p, 9, 100);
	q = realloc(p, 120);
	/* Conceal blocks always move on realloc. */
	ck_assert_ptr_ne(p, q);
	ck_assert_uint_eq(q[99], 9);
	free(q);
	q = calloc_conceal(10, 1000);
	ck_assert_ptr_nonnull(q);
	ck_assert_bytes(q, 0, 10000);
	free(q);
	errno = 0;
	ck_assert_ptr_null(calloc_conceal(SIZE_MAX, 2));
	ck_assert_int_eq(errno, ENOMEM);
}
END_TEST

START_TEST(glibc_extras)
{
	struct mallinfo2 a, b;
	void *p;

	ck_assert_int_eq(mallopt(M_ARENA_MAX, 1), 1);
	ck_assert_int_eq(mallopt(M_MMAP_THRESHOLD, 1 << 20), 1);
	ck_assert_int_eq(mallopt(12345, 1), 0);
	a = mallinfo2();
	p = malloc(1 << 20);
	b = mallinfo2();
	ck_assert_uint_ge(b.uordblks, a.uordblks + (1 << 20));
	ck_assert_uint_ge(b.arena, b.uordblks);
	free(p);
	p = malloc(20000);
	free(p);
	b = mallinfo2();
	if (getenv("MALLOC_OPTIONS") == NULL ||
	    strchr(getenv("MALLOC_OPTIONS"), 'S') == NULL) {
		/* With a page cache, the freed pages wait there. */
		ck_assert_uint_gt(b.fordblks, 0);
		ck_assert_int_eq(malloc_trim(0), 1);
	}
	malloc_trim(0);
	b = mallinfo2();
	ck_assert_uint_eq(b.fordblks, 0);
	struct mallinfo m = mallinfo();
	ck_assert_int_ge(m.arena, 0);
}
END_TEST

START_TEST(malloc_info_xml)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	ck_assert_int_eq(malloc_info(0, f), 0);
	fclose(f);
	ck_assert_ptr_nonnull(strstr(buf, "<malloc version=\"omalloc"));
	ck_assert_ptr_nonnull(strstr(buf, "</malloc>"));
	free(buf);
	errno = 0;
	ck_assert_int_eq(malloc_info(1, stdout), -1);
	ck_assert_int_eq(errno, EINVAL);
}
END_TEST

static char *
capture_fd(void (*fn)(int), int to_stderr)
{
	int fds[2];
	static char buf[1 << 16];
	ssize_t n, total = 0;
	int saved = -1;

	ck_assert_int_eq(pipe(fds), 0);
	if (to_stderr) {
		saved = dup(2);
		dup2(fds[1], 2);
		fn(2);
		dup2(saved, 2);
		close(saved);
	} else
		fn(fds[1]);
	close(fds[1]);
	while ((n = read(fds[0], buf + total, sizeof(buf) - 1 - total)) > 0)
		total += n;
	close(fds[0]);
	buf[total] = '\0';
	return buf;
}

static void
do_stats(int fd)
{
	(void)fd;
	malloc_stats();
}

START_TEST(malloc_stats_summary)
{
	char *out = capture_fd(do_stats, 1);

	ck_assert_ptr_nonnull(strstr(out, "in use bytes"));
	ck_assert_ptr_nonnull(strstr(out, "pools"));
}
END_TEST

static void
do_gdump(int fd)
{
	malloc_gdump(fd);
}

START_TEST(gdump_layout)
{
	void *p = malloc(5000);
	char *out = capture_fd(do_gdump, 0);
	const char *opts = getenv("MALLOC_OPTIONS");
	int pools = 8, n = 0;
	char *s;

	for (const char *c = opts ? opts : ""; *c; c++)
		pools = *c == '+' ? pools * 2 : *c == '-' ? pools / 2 : pools;
	if (pools < 1)
		pools = 1;
	if (pools > 32)
		pools = 32;
	ck_assert_ptr_nonnull(strstr(out, "******** Start dump"));
	ck_assert_ptr_nonnull(strstr(out, "******** End dump"));
	char want[32];
	snprintf(want, sizeof(want), " M=%d ", pools);
	ck_assert_msg(strstr(out, want) != NULL, "no %s in dump", want);
	for (s = out; (s = strstr(s, "Malloc dir of")) != NULL; s++)
		n++;
	ck_assert_int_eq(n, pools + 1);	/* and the conceal pool */
	ck_assert_ptr_nonnull(strstr(out, "Other pool searches"));
	ck_assert_ptr_nonnull(strstr(out, "Cheap reallocs"));
	free(p);
}
END_TEST

START_TEST(free_null)
{
	errno = 5;
	free(NULL);
	ck_assert_int_eq(errno, 5);
	freezero(NULL, 0);
	ck_assert_int_eq(errno, 5);
}
END_TEST

START_TEST(many_small_then_free)
{
	enum { N = 100000 };
	void **v = malloc(N * sizeof(*v));
	struct mallinfo2 before = mallinfo2(), after;
	int i;

	ck_assert_ptr_nonnull(v);
	for (i = 0; i < N; i++) {
		v[i] = malloc((size_t)(i % 300) + sizeof(int));
		if (v[i] == NULL)
			break;
		*(int *)v[i] = i;
	}
	ck_assert_msg(i == N, "malloc(%d) failed, block %d", i % 300 +
	    (int)sizeof(int), i);
	for (i = 0; i < N && (*(int *)v[i] & 0xff) == (i & 0xff); i++)
		free(v[i]);
	ck_assert_msg(i == N, "block %d holds 0x%x, not 0x%x", i,
	    *(int *)v[i] & 0xff, i & 0xff);
	free(v);
	malloc_trim(0);
	after = mallinfo2();
	/* Everything given back: in use returns to where it was. */
	ck_assert_uint_le(after.uordblks, before.uordblks + 4096);
}
END_TEST

static Suite *
api_suite(void)
{
	Suite *s = suite_create("api");
	TCase *tc = tcase_create("api");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, malloc_every_size);
	tcase_add_test(tc, malloc_zero);
	tcase_add_test(tc, malloc_too_large);
	tcase_add_test(tc, errno_untouched_on_success);
	tcase_add_test(tc, calloc_zeroes);
	tcase_add_test(tc, calloc_overflow);
	tcase_add_test(tc, realloc_keeps_contents);
	tcase_add_test(tc, realloc_null_and_zero);
	tcase_add_test(tc, realloc_failure_keeps_block);
	tcase_add_test(tc, realloc_growth_chain);
	tcase_add_test(tc, reallocarray_checks);
	tcase_add_test(tc, recallocarray_zeroes_and_clears);
	tcase_add_test(tc, freezero_works);
	tcase_add_test(tc, sized_frees_free);
	tcase_add_test(tc, aligned_every_alignment);
	tcase_add_test(tc, aligned_errors);
	tcase_add_test(tc, memalign_valloc_pvalloc);
	tcase_add_test(tc, usable_size);
	tcase_add_test(tc, conceal);
	tcase_add_test(tc, glibc_extras);
	tcase_add_test(tc, malloc_info_xml);
	tcase_add_test(tc, malloc_stats_summary);
	tcase_add_test(tc, gdump_layout);
	tcase_add_test(tc, free_null);
	tcase_add_test(tc, many_small_then_free);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(api_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
