/*
 * test_oom.c - out of memory under a small address-space limit.
 *
 * Each case runs in Check's forked child, which lowers RLIMIT_AS to its
 * current size plus a budget before it fills the heap.  Every failing call
 * must return NULL (posix_memalign: ENOMEM) with errno ENOMEM, a failed
 * realloc must leave the old block intact, every block must keep its
 * contents, and once the blocks are freed the heap must work again.  With
 * MALLOC_OPTIONS=X, running out must abort with "out of memory".
 *
 * While the heap is full nothing may allocate behind the test's back, and
 * Check's failure path allocates: failures are noted in a static buffer and
 * reported once memory is back.
 */
#include <check.h>
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <omalloc.h>

#include "util.h"

#define MIB ((size_t)1 << 20)

static char failure[512];
static unsigned long failing_calls;

#define NOTE(cond, ...)                                                        \
	do {                                                                   \
		if (!(cond) && failure[0] == '\0')                             \
			snprintf(failure, sizeof(failure), __VA_ARGS__);       \
	} while (0)

static void
report(void)
{
	ck_assert_msg(failure[0] == '\0', "%s", failure);
}

static void
limit_as(size_t budget)
{
	struct rlimit rl;

	/* the soft limit only, so that unlimit_as can lift it again */
	ck_assert_int_eq(getrlimit(RLIMIT_AS, &rl), 0);
	rl.rlim_cur = st_vmsize() + budget;
	ck_assert_int_eq(setrlimit(RLIMIT_AS, &rl), 0);
}

static void
unlimit_as(void)
{
	struct rlimit rl;

	getrlimit(RLIMIT_AS, &rl);
	rl.rlim_cur = rl.rlim_max;
	setrlimit(RLIMIT_AS, &rl);
}

/* A call that should fail: NULL and ENOMEM. */
static void
expect_null(void *p, const char *what)
{
	failing_calls++;
	NOTE(p == NULL, "%s succeeded while memory is exhausted", what);
	NOTE(p != NULL || errno == ENOMEM, "%s: errno %d, not ENOMEM", what,
	    errno);
	free(p);
}

/*
 * Blocks kept while the heap is full: a list threaded through them (so
 * sizes are at least sizeof(struct held)), the rest of each block filled
 * with a byte derived from its id.
 */
struct held {
	struct held *next;
	size_t size;
	uint32_t id;
};

static unsigned char
fillbyte(uint32_t id)
{
	return (unsigned char)(id * 131 + 7);
}

static struct held *
hold(struct held *list, void *p, size_t size, uint32_t id)
{
	struct held *h = p;

	h->next = list;
	h->size = size;
	h->id = id;
	memset(h + 1, fillbyte(id), size - sizeof(*h));
	return h;
}

/* Check every block and free it; returns the count. */
static size_t
release_all(struct held *list)
{
	size_t n = 0;

	while (list != NULL) {
		struct held *next = list->next;
		const unsigned char *b = (const unsigned char *)(list + 1);
		unsigned char c = fillbyte(list->id);

		for (size_t i = 0; i < list->size - sizeof(*list); i++)
			if (b[i] != c) {
				NOTE(0, "block %p size %zu corrupt at byte %zu",
				    (void *)list, list->size,
				    i + sizeof(*list));
				break;
			}
		free(list);
		list = next;
		n++;
	}
	return n;
}

/* Fill the heap with blocks of size until malloc fails; returns the list. */
static struct held *
exhaust(struct held *list, size_t size, size_t max, size_t *count)
{
	uint32_t id = 1000;

	for (size_t i = 0; i < max; i++) {
		void *p;

		errno = 0;
		p = malloc(size);
		if (p == NULL) {
			failing_calls++;
			NOTE(errno == ENOMEM,
			    "malloc(%zu) failed with errno %d", size, errno);
			return list;
		}
		NOTE(errno == 0, "malloc(%zu) succeeded but set errno %d",
		    size, errno);
		list = hold(list, p, size, id++);
		(*count)++;
	}
	NOTE(0, "malloc(%zu) never failed in %zu calls", size, max);
	return list;
}

/* The heap must work normally once memory is back. */
static void
works_again(void)
{
	void *big = malloc(100 * MIB), *small[1000];

	ck_assert_msg(big != NULL, "malloc(100 MiB) fails after memory came "
				   "back: errno %d",
	    errno);
	memset(big, 1, 100 * MIB);
	free(big);
	for (int i = 0; i < 1000; i++) {
		small[i] = malloc((size_t)i * 3 + 1);
		ck_assert_ptr_nonnull(small[i]);
		memset(small[i], 2, (size_t)i * 3 + 1);
	}
	for (int i = 0; i < 1000; i++)
		free(small[i]);
}

START_TEST(rlimit_large_then_small)
{
	struct held *list = NULL, *victim;
	size_t nbig = 0, nsmall = 0, npage = 0;
	void *p;
	int rc;

	limit_as(200 * MIB);
	list = exhaust(list, MIB, 1000, &nbig);
	list = exhaust(list, 5000, 100000, &npage);
	list = exhaust(list, 48, 10000000, &nsmall);
	NOTE(nbig > 100, "only %zu 1 MiB blocks fit in 200 MiB", nbig);

	/* the heap is full: every kind of call fails cleanly */
	errno = 0;
	expect_null(malloc(16 * MIB), "malloc(16 MiB)");
	errno = 0;
	expect_null(calloc(1024, 16384), "calloc(1024, 16384)");
	errno = 0;
	expect_null(aligned_alloc(4096, 16 * MIB), "aligned_alloc");
	errno = 0;
	expect_null(memalign(MIB, 16 * MIB), "memalign");
	p = NULL;
	rc = posix_memalign(&p, 65536, 16 * MIB);
	failing_calls++;
	NOTE(rc == ENOMEM && p == NULL, "posix_memalign: %d", rc);

	/* a failed resize leaves the block as it was (checked at release) */
	victim = list;
	for (int k = 0; k < 4; k++) {
		errno = 0;
		if (k == 0)
			p = realloc(victim, 64 * MIB);
		else if (k == 1)
			p = reallocarray(victim, 64, MIB);
		else if (k == 2)
			p = recallocarray(victim, victim->size, 64 * MIB, 1);
		else
			p = calloc(64, MIB);
		expect_null(p, "resize of a full heap");
	}
	NOTE(list == victim, "list head moved");

	ck_assert_int_gt(release_all(list), 0);
	report();
	works_again();
	fprintf(stderr, "rlimit_large_then_small: %zu x 1 MiB, %zu x 5000, "
			"%zu x 48 bytes before ENOMEM; %lu failing calls\n",
	    nbig, npage, nsmall, failing_calls);
}
END_TEST

START_TEST(rlimit_small_only)
{
	struct held *list = NULL;
	size_t n = 0;

	limit_as(48 * MIB);
	list = exhaust(list, sizeof(struct held), 10000000, &n);
	release_all(list);
	report();
	unlimit_as();
	works_again();
	fprintf(stderr, "rlimit_small_only: %zu x %zu bytes before ENOMEM\n",
	    n, sizeof(struct held));
}
END_TEST

/* Several threads run out of memory at once. */
static pthread_barrier_t barrier;

static void *
oom_thread(void *arg)
{
	struct held *list = NULL;
	size_t n = 0;
	size_t size = (uintptr_t)arg % 2 ? 3000 : 200000;

	pthread_barrier_wait(&barrier);
	list = exhaust(list, size, 100000, &n);
	pthread_barrier_wait(&barrier);
	release_all(list);
	return (void *)n;
}

START_TEST(rlimit_threads)
{
	pthread_t t[4];
	size_t total = 0;

	pthread_barrier_init(&barrier, NULL, 5);
	for (int i = 0; i < 4; i++)
		ck_assert_int_eq(pthread_create(&t[i], NULL, oom_thread,
				     (void *)(uintptr_t)i),
		    0);
	limit_as(120 * MIB);
	pthread_barrier_wait(&barrier);
	pthread_barrier_wait(&barrier);
	for (int i = 0; i < 4; i++) {
		void *r;

		pthread_join(t[i], &r);
		total += (size_t)r;
	}
	report();
	works_again();
	fprintf(stderr, "rlimit_threads: 4 threads, %zu blocks before ENOMEM\n",
	    total);
}
END_TEST

/* Map and touch 5 MiB of 20-page blocks, then free them: most of it
 * stays with the pools and the depot for reuse. */
static void
fill_and_free(void)
{
	enum { N = 64, RUN = 20 * 4096 };
	void *p[N];

	for (int i = 0; i < N; i++) {
		p[i] = malloc(RUN);
		ck_assert_ptr_nonnull(p[i]);
		memset(p[i], 1, RUN);
	}
	for (int i = 0; i < N; i++)
		free(p[i]);
}

/*
 * Pages freed into the caches and the depot stay mapped for reuse; when
 * the kernel refuses a new mapping they are given back and the
 * allocation tried again, so memory the program freed is there for it:
 * for malloc, and for a realloc that must move.
 */
START_TEST(kept_pages_given_back)
{
	const char *opts = getenv("MALLOC_OPTIONS");
	char *big, *small;

	/* S keeps nothing: there would be nothing to give back. */
	if (opts != NULL && strchr(opts, 'S') != NULL)
		return;
	fill_and_free();
	/* 1 MiB of room: 3 MiB fit only if what is kept goes back. */
	limit_as(1 * MIB);
	errno = 0;
	big = malloc(3 * MIB);
	ck_assert_msg(big != NULL, "malloc(3 MiB) failed, errno %d, though "
	    "5 MiB had been freed", errno);
	memset(big, 2, 3 * MIB);
	free(big);
	unlimit_as();

	small = malloc(100);
	ck_assert_ptr_nonnull(small);
	memset(small, 3, 100);
	fill_and_free();
	limit_as(1 * MIB);
	errno = 0;
	big = realloc(small, 3 * MIB);
	ck_assert_msg(big != NULL, "realloc to 3 MiB failed, errno %d, "
	    "though 5 MiB had been freed", errno);
	ck_assert_int_eq(big[99], 3);
	memset(big, 2, 3 * MIB);
	free(big);
	unlimit_as();
}
END_TEST

/* Sizes no heap can give: ENOMEM without touching the limit. */
START_TEST(impossible_sizes)
{
	void *p = &p;
	size_t huge = (size_t)PTRDIFF_MAX + 1;
	volatile size_t vhuge = huge;

	errno = 0;
	expect_null(malloc(vhuge), "malloc(PTRDIFF_MAX + 1)");
	errno = 0;
	expect_null(calloc(vhuge / 2, 4), "calloc overflow");
	errno = 0;
	expect_null(aligned_alloc(64, vhuge), "aligned_alloc huge");
	errno = 0;
	expect_null(valloc(vhuge), "valloc huge");
	errno = 0;
	expect_null(pvalloc(vhuge), "pvalloc huge");
	errno = 0;
	expect_null(malloc_conceal(vhuge), "malloc_conceal huge");
	errno = 0;
	expect_null(calloc_conceal(vhuge, 2), "calloc_conceal overflow");
	ck_assert_int_eq(posix_memalign(&p, 64, vhuge), ENOMEM);
	report();
}
END_TEST

/*
 * Child modes for the X cases: run out of memory with MALLOC_OPTIONS
 * containing X.  Returning means X did not abort.
 */
static int
child_mode(const char *mode)
{
	volatile size_t huge = (size_t)PTRDIFF_MAX + 1;

	if (strcmp(mode, "x-rlimit") == 0) {
		struct rlimit rl;

		rl.rlim_cur = rl.rlim_max = st_vmsize() + 64 * MIB;
		setrlimit(RLIMIT_AS, &rl);
		for (int i = 0; i < 1000; i++)
			if (malloc(MIB) == NULL)
				return 3;
		return 4;
	}
	if (strcmp(mode, "x-huge") == 0)
		return malloc(huge) == NULL ? 3 : 4;
	return 2;
}

static void
expect_x_abort(const char *mode)
{
	char err[8192], opts[256];
	const char *cur = getenv("MALLOC_OPTIONS");
	const char *env[] = {opts, NULL};
	int status;

	snprintf(opts, sizeof(opts), "MALLOC_OPTIONS=%sX", cur ? cur : "");
	status = st_run_self(mode, env, err, sizeof(err));
	ck_assert_msg(status != -1, "%s: child hung", mode);
	ck_assert_msg(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT,
	    "%s with X: status 0x%x, stderr: %s", mode, status, err);
	ck_assert_msg(strstr(err, "out of memory") != NULL,
	    "%s with X: no \"out of memory\" in: %s", mode, err);
}

START_TEST(x_aborts_on_rlimit)
{
	expect_x_abort("x-rlimit");
}
END_TEST

START_TEST(x_aborts_on_huge)
{
	expect_x_abort("x-huge");
}
END_TEST

static Suite *
oom_suite(void)
{
	Suite *s = suite_create("oom");
	TCase *tc = tcase_create("oom");

	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, rlimit_large_then_small);
	tcase_add_test(tc, rlimit_small_only);
	tcase_add_test(tc, rlimit_threads);
	tcase_add_test(tc, kept_pages_given_back);
	tcase_add_test(tc, impossible_sizes);
	tcase_add_test(tc, x_aborts_on_rlimit);
	tcase_add_test(tc, x_aborts_on_huge);
	suite_add_tcase(s, tc);
	return s;
}

int
main(int argc, char **argv)
{
	if (argc > 1)
		return child_mode(argv[1]);
	return st_main(oom_suite());
}
