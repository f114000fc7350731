/*
 * test_fault.c - out of memory through injected mmap failure.
 *
 * Needs a library built with meson -Dfault_injection=true, which exports
 * omalloc_fault_mmap(n): the next n mappings fail (n < 0: all of them until
 * omalloc_fault_mmap(0)).  Without it the program exits 77, meson's skip.
 *
 * While mappings fail every failing call must return NULL with ENOMEM, a
 * failed realloc must leave the block intact, blocks made before must keep
 * their contents, and the heap must work once mappings succeed again.
 * Failures are noted in a static buffer and reported once mappings work,
 * since Check's failure path allocates.
 */
#include <check.h>
#include <dlfcn.h>
#include <errno.h>
#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <omalloc.h>

#include "util.h"

#define MIB ((size_t)1 << 20)

static void (*fault_mmap)(long);
static unsigned char snapshot[2 * MIB + 1];
static char failure[512];
static unsigned long failing_calls, succeeded_calls;

#define NOTE(cond, ...)                                                        \
	do {                                                                   \
		if (!(cond) && failure[0] == '\0')                             \
			snprintf(failure, sizeof(failure), __VA_ARGS__);       \
	} while (0)

static void
report(void)
{
	fault_mmap(0);
	ck_assert_msg(failure[0] == '\0', "%s", failure);
}

static void
expect_null(void *p, const char *what)
{
	failing_calls++;
	NOTE(p == NULL, "%s succeeded while every mapping fails", what);
	NOTE(p != NULL || errno == ENOMEM, "%s: errno %d, not ENOMEM", what,
	    errno);
}

START_TEST(all_mappings_fail)
{
	unsigned char *keep[16];
	void *p, **list = NULL;
	size_t nsmall = 0;
	int rc;

	/* blocks made before, of every kind, checked at the end */
	for (int i = 0; i < 16; i++) {
		size_t size = (size_t)1 << i;

		keep[i] = malloc(size * 17);
		ck_assert_ptr_nonnull(keep[i]);
		st_fill(keep[i], size * 17, (uint32_t)i);
	}
	fault_mmap(-1);
	errno = 0;
	expect_null(malloc(MIB), "malloc(1 MiB)");
	errno = 0;
	expect_null(malloc(64 * 1024 + 1), "malloc(64 KiB)");
	errno = 0;
	expect_null(calloc(256, 4096), "calloc(256, 4096)");
	errno = 0;
	expect_null(aligned_alloc(MIB, MIB), "aligned_alloc(1 MiB, 1 MiB)");
	errno = 0;
	expect_null(malloc_conceal(10 * 4096), "malloc_conceal(40 KiB)");
	p = NULL;
	rc = posix_memalign(&p, 4096, 8 * MIB);
	failing_calls++;
	NOTE(rc == ENOMEM, "posix_memalign: %d", rc);
	for (int i = 8; i < 16; i++) {
		errno = 0;
		p = realloc(keep[i], 4 * MIB);
		expect_null(p, "realloc to 4 MiB");
		if (p != NULL)
			keep[i] = p;
	}
	/* small blocks run out once the chunk pages and the cache are used */
	for (size_t i = 0; i < 2000000; i++) {
		void **b = malloc(32);

		if (b == NULL) {
			failing_calls++;
			NOTE(errno == ENOMEM, "malloc(32): errno %d", errno);
			break;
		}
		*b = list;
		list = b;
		nsmall++;
	}
	NOTE(nsmall < 2000000, "small allocations never failed");
	fault_mmap(0);
	report();

	while (list != NULL) {
		void **next = *list;

		free(list);
		list = next;
	}
	for (int i = 0; i < 16; i++) {
		size_t size = ((size_t)1 << i) * 17;

		ck_assert_msg(st_check(keep[i], size, (uint32_t)i) ==
			(size_t)-1,
		    "block of %zu bytes changed by failed calls", size);
		free(keep[i]);
	}
	p = malloc(8 * MIB);
	ck_assert_msg(p != NULL, "malloc fails after mappings work again");
	memset(p, 3, 8 * MIB);
	free(p);
	fprintf(stderr, "all_mappings_fail: %zu small blocks, then %lu "
			"failing calls\n",
	    nsmall, failing_calls);
}
END_TEST

/*
 * The next n mappings fail, for n = 1..24, in the middle of random work:
 * each call either works (and its block is checked) or fails cleanly.
 */
START_TEST(some_mappings_fail)
{
	struct {
		unsigned char *p;
		size_t size;
	} b[64] = {{0}};
	uint64_t rng = 4242;

	for (long n = 1; n <= 24; n++) {
		fault_mmap(n);
		for (int k = 0; k < 200; k++) {
			int i = st_rand(&rng) % 64;
			size_t size = st_size(&rng, 2 * MIB);
			void *q;

			if (b[i].p != NULL &&
			    st_check(b[i].p, b[i].size, (uint32_t)i) !=
				(size_t)-1)
				NOTE(0, "block %d (%zu bytes) corrupt", i,
				    b[i].size);
			errno = 0;
			if (b[i].p != NULL && st_rand(&rng) % 2) {
				size_t keep = b[i].size < size + 1 ? b[i].size
								  : size + 1;

				memcpy(snapshot, b[i].p, keep);
				q = realloc(b[i].p, size + 1);
				if (q == NULL) {
					failing_calls++;
					NOTE(errno == ENOMEM,
					    "realloc errno %d", errno);
					/* the old block is checked later */
					continue;
				}
				succeeded_calls++;
				NOTE(memcmp(q, snapshot, keep) == 0,
				    "realloc %zu -> %zu lost the contents",
				    b[i].size, size + 1);
			} else {
				free(b[i].p);
				b[i].p = NULL;
				q = malloc(size + 1);
				if (q == NULL) {
					failing_calls++;
					NOTE(errno == ENOMEM, "malloc errno %d",
					    errno);
					continue;
				}
				succeeded_calls++;
			}
			b[i].p = q;
			b[i].size = size + 1;
			st_fill(q, size + 1, (uint32_t)i);
		}
		fault_mmap(0);
	}
	report();
	for (int i = 0; i < 64; i++) {
		if (b[i].p != NULL)
			ck_assert(st_check(b[i].p, b[i].size, (uint32_t)i) ==
			    (size_t)-1);
		free(b[i].p);
	}
	fprintf(stderr, "some_mappings_fail: %lu calls failed, %lu worked\n",
	    failing_calls, succeeded_calls);
	ck_assert_int_gt(failing_calls, 0);
}
END_TEST

/* The pool count, from malloc_info's <malloc ... pools="N">. */
static unsigned int
pool_count(void)
{
	char *buf = NULL, *at;
	size_t len = 0;
	unsigned int n = 0;
	FILE *f = open_memstream(&buf, &len);

	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(malloc_info(0, f), 0);
	fclose(f);
	at = strstr(buf, "pools=\"");
	ck_assert_ptr_nonnull(at);
	n = (unsigned int)strtoul(at + 7, NULL, 10);
	free(buf);
	return n;
}

struct newcomer {
	unsigned int mask, open[2];	/* pools known to be open */
	void *give;			/* a block of another pool, to free */
	int tried;			/* this thread's pool was not */
	void *during;			/* its malloc while mappings fail */
	int during_errno;
	int after_ok;			/* its malloc once they work */
};

static void *
newcomer(void *arg)
{
	struct newcomer *c = arg;
	unsigned int pool = (unsigned int)syscall(SYS_gettid) & c->mask;
	void *p;

	if (pool == c->open[0] || pool == c->open[1])
		return NULL;
	c->tried = 1;
	fault_mmap(-1);
	free(c->give);
	errno = 0;
	c->during = malloc(100);
	c->during_errno = errno;
	fault_mmap(0);
	p = malloc(100);
	c->after_ok = p != NULL;
	free(p);
	return NULL;
}

/* A thread whose pool nobody has opened yet, while mappings fail (the
 * pool cannot be made): its free of another pool's block works, its
 * malloc gets NULL and ENOMEM, and the next malloc once mappings work
 * again gets a block. */
START_TEST(new_pool_without_memory)
{
	struct newcomer c = {0};
	unsigned int n = pool_count();
	size_t before, after;
	pthread_t t;
	int i;

	if (n < 4)
		return;	/* no pool is sure to be closed */
	c.mask = n - 1;
	/* This process's thread and the test runner's have allocated. */
	c.open[0] = (unsigned int)getpid() & c.mask;
	c.open[1] = (unsigned int)getppid() & c.mask;
	c.give = malloc(MIB);
	ck_assert_ptr_nonnull(c.give);
	before = mallinfo2().uordblks;
	for (i = 0; i < 1000 && !c.tried; i++) {
		ck_assert_int_eq(pthread_create(&t, NULL, newcomer, &c), 0);
		ck_assert_int_eq(pthread_join(t, NULL), 0);
	}
	after = mallinfo2().uordblks;
	ck_assert(c.tried);
	/* Less what creating the threads allocated here. */
	ck_assert_uint_ge(before - after, MIB - 4096);
	ck_assert_ptr_null(c.during);
	ck_assert_int_eq(c.during_errno, ENOMEM);
	ck_assert(c.after_ok);
}
END_TEST

/* Child mode: X makes the failure abort. */
static int
child_mode(const char *mode)
{
	if (strcmp(mode, "x-fault") == 0) {
		fault_mmap(-1);
		return malloc(4 * MIB) == NULL ? 3 : 4;
	}
	return 2;
}

START_TEST(x_aborts_on_fault)
{
	char err[8192], opts[256];
	const char *cur = getenv("MALLOC_OPTIONS");
	const char *env[] = {opts, NULL};
	int status;

	snprintf(opts, sizeof(opts), "MALLOC_OPTIONS=%sX", cur ? cur : "");
	status = st_run_self("x-fault", env, err, sizeof(err));
	ck_assert_msg(status != -1, "child hung");
	ck_assert_msg(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT,
	    "X with failing mmap: status 0x%x, stderr: %s", status, err);
	ck_assert_msg(strstr(err, "out of memory") != NULL,
	    "no \"out of memory\" in: %s", err);
}
END_TEST

static Suite *
fault_suite(void)
{
	Suite *s = suite_create("fault");
	TCase *tc = tcase_create("fault");

	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, all_mappings_fail);
	tcase_add_test(tc, some_mappings_fail);
	tcase_add_test(tc, x_aborts_on_fault);
	tcase_add_test(tc, new_pool_without_memory);
	suite_add_tcase(s, tc);
	return s;
}

int
main(int argc, char **argv)
{
	fault_mmap = (void (*)(long))dlsym(RTLD_DEFAULT, "omalloc_fault_mmap");
	if (fault_mmap == NULL) {
		printf("omalloc_fault_mmap absent (build with "
		       "-Dfault_injection=true): skipped\n");
		return 77;
	}
	if (argc > 1)
		return child_mode(argv[1]);
	return st_main(fault_suite());
}
