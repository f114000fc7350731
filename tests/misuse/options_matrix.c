/*
 * options_matrix - a correct program's workload, run under many
 * MALLOC_OPTIONS (meson registers it once per option set): options may
 * make the allocator stricter or slower, never wrong.  Every block is
 * filled with a pattern derived from its address and size and checked
 * before it is freed, so an option that hands out overlapping or
 * short blocks, loses realloc contents or breaks alignment fails here.
 */
#define _GNU_SOURCE
#include <check.h>
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <omalloc.h>

#include "../check_bytes.h"

static uint64_t rng = 0x9e3779b97f4a7c15ULL;

/* Hide a size from the compiler, which rightly warns about huge ones. */
static size_t
opaque(size_t n)
{
	__asm__ volatile("" : "+r"(n));
	return n;
}

static uint64_t
next_rand(uint64_t *s)
{
	uint64_t x = *s;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	*s = x;
	return x;
}

static unsigned char
pattern(const void *p, size_t i)
{
	return (unsigned char)(((uintptr_t)p >> 4) * 31 + i * 7 + 1);
}

/* A pattern that survives a move: keyed by the owner, not the address. */
static void
fill_key(unsigned char *p, size_t n, unsigned key)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (unsigned char)(key * 131 + i * 7 + 1);
}

static int
intact_key(const unsigned char *p, size_t n, unsigned key)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != (unsigned char)(key * 131 + i * 7 + 1))
			return 0;
	return 1;
}

static void
fill(unsigned char *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		p[i] = pattern(p, i);
}

static int
intact(const unsigned char *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != pattern(p, i))
			return 0;
	return 1;
}

/* A size spread over chunks, medium blocks and regions. */
static size_t
any_size(uint64_t *s)
{
	uint64_t r = next_rand(s);

	switch (r % 8) {
	case 0:
		return r >> 60;			/* 0..15, malloc(0) included */
	case 1:
	case 2:
	case 3:
		return (r >> 32) % 2049;	/* chunks */
	case 4:
	case 5:
		return 2049 + (r >> 32) % 2048;	/* half a page to a page */
	case 6:
		return 4096 + (r >> 32) % 60000;
	default:
		return (r >> 32) % 600000;
	}
}

/* Bytes written by realloc_chains: i * 13. */
static int
counted(const unsigned char *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != (unsigned char)(i * 13))
			return 0;
	return 1;
}

#define LIVE 1024

/* What is wrong with p, just allocated for n bytes, or NULL: it must be
 * there, aligned to 16, with n bytes at least. */
static const char *
block_wrong(void *p, size_t n)
{
	if (p == NULL)
		return "no block";
	if (((uintptr_t)p & 15) != 0)
		return "not aligned to 16";
	if (malloc_usable_size(p) < n)
		return "too short";
	return NULL;
}

/* Free the blocks still in blk[] whose turn comes: a random one, or each
 * in order; all of them kept their contents.  Returns the first that did
 * not, or LIVE. */
static int
free_intact(unsigned char **blk, const size_t *len, uint64_t *s)
{
	int i, j;

	for (i = 0; i < LIVE; i++) {
		j = s != NULL ? (int)(next_rand(s) % LIVE) : i;
		if (blk[j] == NULL)
			continue;
		if (!intact(blk[j], len[j]))
			return j;
		free(blk[j]);
		blk[j] = NULL;
	}
	return LIVE;
}

START_TEST(many_sizes)
{
	static unsigned char *blk[LIVE];
	static size_t len[LIVE];
	uint64_t s = rng;
	const char *why = NULL;
	size_t n = 0;
	int i;

	for (int round = 0; round < 6; round++) {
		for (i = 0; i < LIVE; i++) {
			n = any_size(&s);
			blk[i] = malloc(n);
			if ((why = block_wrong(blk[i], n)) != NULL)
				break;
			len[i] = n;
			fill(blk[i], n);
		}
		ck_assert_msg(why == NULL, "round %d: malloc(%zu) = %p: %s",
		    round, n, (void *)blk[i], why);
		/* Free a random half, then check the rest and free it too. */
		i = free_intact(blk, len, &s);
		ck_assert_msg(i == LIVE, "round %d: block %d of %zu bytes "
		    "changed", round, i, len[i]);
		i = free_intact(blk, len, NULL);
		ck_assert_msg(i == LIVE, "round %d: block %d of %zu bytes "
		    "changed", round, i, len[i]);
	}
}
END_TEST

/* Two blocks of n bytes: distinct, each with its contents, the second
 * also once the first is freed.  What went wrong, or NULL. */
static const char *
pair_wrong(size_t n)
{
	unsigned char *p = malloc(n);
	unsigned char *q = malloc(n);

	if (p == NULL || q == NULL)
		return "no block";
	if (p == q)
		return "the same block twice";
	fill(p, n);
	fill(q, n);
	if (!intact(p, n))
		return "the first changed";
	free(p);
	if (!intact(q, n))
		return "the second changed as the first was freed";
	free(q);
	return NULL;
}

START_TEST(every_small_size)
{
	const char *why = NULL;
	size_t n;

	for (n = 0; n <= 4200; n++)
		if ((why = pair_wrong(n)) != NULL)
			break;
	ck_assert_msg(why == NULL, "two of %zu bytes: %s", n, why);
}
END_TEST

START_TEST(realloc_chains)
{
	uint64_t s = rng ^ 1;

	for (int chain = 0; chain < 8; chain++) {
		unsigned char *p = NULL;
		size_t have = 0;

		/* Grow to about 1 MiB and shrink back, keeping the prefix. */
		for (size_t n = 1; n < (1 << 20); n = n * 3 / 2 + 1 +
		    next_rand(&s) % 64) {
			unsigned char *q = realloc(p, n);
			ck_assert_ptr_nonnull(q);
			ck_assert(counted(q, have < n ? have : n));
			for (size_t i = have; i < n; i++)
				q[i] = (unsigned char)(i * 13);
			p = q;
			have = n;
		}
		while (have > 4) {
			have = have / 2 + next_rand(&s) % 4;
			unsigned char *q = realloc(p, have);
			ck_assert_ptr_nonnull(q);
			ck_assert(counted(q, have));
			p = q;
		}
		free(p);
	}

	/* reallocarray and its overflow check. */
	int *a = reallocarray(NULL, 100, sizeof(int));
	ck_assert_ptr_nonnull(a);
	for (int i = 0; i < 100; i++)
		a[i] = i;
	a = reallocarray(a, 5000, sizeof(int));
	ck_assert_ptr_nonnull(a);
	for (int i = 0; i < 100; i++)
		ck_assert_int_eq(a[i], i);
	errno = 0;
	ck_assert_ptr_null(reallocarray(a, opaque(SIZE_MAX / 2), 4));
	ck_assert_int_eq(errno, ENOMEM);
	free(a);
}
END_TEST

START_TEST(recalloc_and_freezero)
{
	size_t n = 10;
	unsigned char *p = recallocarray(NULL, 0, n, 8);

	ck_assert_ptr_nonnull(p);
	ck_assert_bytes(p, 0, n * 8);
	memset(p, 0x77, n * 8);
	/* Grow across the chunk/region boundary and back. */
	static const size_t steps[] = {100, 700, 5000, 300, 20, 4};
	for (size_t k = 0; k < sizeof(steps) / sizeof(steps[0]); k++) {
		size_t m = steps[k];
		p = recallocarray(p, n, m, 8);
		ck_assert_ptr_nonnull(p);
		size_t kept = (m < n ? m : n) * 8;
		ck_assert_bytes(p, 0x77, kept);
		ck_assert_bytes(p + kept, 0, m * 8 - kept);
		memset(p, 0x77, m * 8);
		n = m;
	}
	freezero(p, n * 8);
	freezero(NULL, 10);

	unsigned char *q = malloc(20000);
	ck_assert_ptr_nonnull(q);
	freezero(q, 20000);
	q = malloc(13);
	ck_assert_ptr_nonnull(q);
	freezero(q, 13);
	/* C23's sized frees, with the sizes last asked for. */
	q = malloc(13);
	ck_assert_ptr_nonnull(q);
	q = realloc(q, 9);
	ck_assert_ptr_nonnull(q);
	free_sized(q, 9);
	q = calloc(7, 3000);
	ck_assert_ptr_nonnull(q);
	free_sized(q, 21000);
	free_sized(NULL, 5);
}
END_TEST

START_TEST(aligned)
{
	for (size_t align = 16; align <= (2u << 20); align <<= 1) {
		static const size_t sizes[] = {1, 16, 100, 4096, 5000, 70000};
		for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
			void *p = NULL;
			size_t n = sizes[k];

			ck_assert_int_eq(posix_memalign(&p, align, n), 0);
			ck_assert_uint_eq((uintptr_t)p & (align - 1), 0);
			fill(p, n);
			unsigned char *q = aligned_alloc(align, n);
			ck_assert_ptr_nonnull(q);
			ck_assert_uint_eq((uintptr_t)q & (align - 1), 0);
			fill(q, n);
			unsigned char *m = memalign(align, n);
			ck_assert_ptr_nonnull(m);
			ck_assert_uint_eq((uintptr_t)m & (align - 1), 0);
			fill(m, n);
			ck_assert(intact(p, n));
			ck_assert(intact(q, n));
			ck_assert(intact(m, n));
			free(p);
			free_aligned_sized(q, align, n);
			free(m);
		}
	}
	void *p = NULL;
	ck_assert_int_eq(posix_memalign(&p, 24, 10), EINVAL);
	unsigned char *v = valloc(100);
	ck_assert_ptr_nonnull(v);
	ck_assert_uint_eq((uintptr_t)v & 4095, 0);
	fill(v, 100);
	free(v);
	v = pvalloc(5000);
	ck_assert_ptr_nonnull(v);
	ck_assert_uint_eq((uintptr_t)v & 4095, 0);
	ck_assert_uint_ge(malloc_usable_size(v), 8192);
	fill(v, 8192);
	free(v);
}
END_TEST

START_TEST(calloc_zeroes)
{
	static const size_t sizes[] = {1, 8, 16, 24, 100, 1000, 2048, 3000,
	    4096, 5000, 65536, 300000};

	for (int round = 0; round < 4; round++) {
		for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
			size_t n = sizes[k];
			/* Dirty memory of this size first, so calloc reuses
			 * it. */
			for (int d = 0; d < 8; d++) {
				unsigned char *p = malloc(n);
				ck_assert_ptr_nonnull(p);
				memset(p, 0xff, n);
				free(p);
			}
			unsigned char *z = calloc(n, 1);
			ck_assert_ptr_nonnull(z);
			ck_assert_bytes(z, 0, n);
			free(z);
			z = calloc(1, n);
			ck_assert_ptr_nonnull(z);
			ck_assert_bytes(z, 0, n);
			free(z);
		}
	}
	errno = 0;
	ck_assert_ptr_null(calloc(opaque(SIZE_MAX / 2), 3));
	ck_assert_int_eq(errno, ENOMEM);
}
END_TEST

START_TEST(conceal_blocks)
{
	for (size_t n = 1; n < 100000; n = n * 2 + 3) {
		unsigned char *p = malloc_conceal(n);
		ck_assert_ptr_nonnull(p);
		fill(p, n);
		unsigned char *q = realloc(p, n + 100);
		ck_assert_ptr_nonnull(q);
		ck_assert_ptr_ne(q, p);
		int same = 1;
		for (size_t i = 0; i < n; i++)
			same &= q[i] == pattern(p, i);
		ck_assert(same);
		free(q);
		unsigned char *z = calloc_conceal(n, 1);
		ck_assert_ptr_nonnull(z);
		ck_assert_bytes(z, 0, n);
		free(z);
	}
}
END_TEST

/* Cross-thread frees: each thread frees what the previous one allocated. */
#define NTHREADS 4
#define PER_THREAD 2000

static unsigned char *handoff[NTHREADS][PER_THREAD];
static size_t handoff_len[NTHREADS][PER_THREAD];
static pthread_barrier_t barrier;

static void *
cross_worker(void *arg)
{
	int me = (int)(intptr_t)arg;
	int prev = (me + NTHREADS - 1) % NTHREADS;
	uint64_t s = rng + (uint64_t)me * 7919;

	for (int round = 0; round < 3; round++) {
		for (int i = 0; i < PER_THREAD; i++) {
			size_t n = any_size(&s) % 20000;
			unsigned char *p = malloc(n);
			if (p == NULL)
				return (void *)1;
			fill_key(p, n, (unsigned)(me * PER_THREAD + i));
			handoff[me][i] = p;
			handoff_len[me][i] = n;
		}
		pthread_barrier_wait(&barrier);
		for (int i = 0; i < PER_THREAD; i++) {
			unsigned char *p = handoff[prev][i];
			size_t n = handoff_len[prev][i];
			unsigned key = (unsigned)(prev * PER_THREAD + i);
			if (!intact_key(p, n, key))
				return (void *)2;
			/* Some are resized by the other thread first. */
			if (i % 5 == 0) {
				p = realloc(p, n + 50);
				if (p == NULL || !intact_key(p, n, key))
					return (void *)3;
			}
			free(p);
		}
		pthread_barrier_wait(&barrier);
	}
	return NULL;
}

START_TEST(cross_thread_frees)
{
	pthread_t t[NTHREADS];

	pthread_barrier_init(&barrier, NULL, NTHREADS);
	for (int i = 0; i < NTHREADS; i++)
		ck_assert_int_eq(pthread_create(&t[i], NULL, cross_worker,
		    (void *)(intptr_t)i), 0);
	for (int i = 0; i < NTHREADS; i++) {
		void *ret;
		ck_assert_int_eq(pthread_join(t[i], &ret), 0);
		ck_assert_ptr_null(ret);
	}
	pthread_barrier_destroy(&barrier);
}
END_TEST

static void *
spin_alloc(void *arg)
{
	volatile int *stop = arg;

	while (!*stop)
		free(malloc(100));
	return NULL;
}

/* fork while another thread allocates; the child can still allocate. */
START_TEST(fork_with_threads)
{
	volatile int stop = 0;
	pthread_t t;

	ck_assert_int_eq(pthread_create(&t, NULL, spin_alloc, (void *)&stop),
	    0);
	for (int i = 0; i < 5; i++) {
		pid_t pid = fork();
		ck_assert_int_ge(pid, 0);
		if (pid == 0) {
			for (int k = 0; k < 1000; k++) {
				unsigned char *p = malloc((size_t)k * 10);
				if (p == NULL)
					_exit(1);
				fill(p, (size_t)k * 10);
				if (!intact(p, (size_t)k * 10))
					_exit(2);
				free(p);
			}
			_exit(0);
		}
		int st;
		ck_assert_int_eq(waitpid(pid, &st, 0), pid);
		ck_assert(WIFEXITED(st));
		ck_assert_int_eq(WEXITSTATUS(st), 0);
	}
	stop = 1;
	pthread_join(t, NULL);
}
END_TEST

static Suite *
matrix_suite(void)
{
	Suite *s = suite_create("options_matrix");
	TCase *tc = tcase_create("workload");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, many_sizes);
	tcase_add_test(tc, every_small_size);
	tcase_add_test(tc, realloc_chains);
	tcase_add_test(tc, recalloc_and_freezero);
	tcase_add_test(tc, aligned);
	tcase_add_test(tc, calloc_zeroes);
	tcase_add_test(tc, conceal_blocks);
	tcase_add_test(tc, cross_thread_frees);
	tcase_add_test(tc, fork_with_threads);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(matrix_suite());

	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
