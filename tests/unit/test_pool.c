/*
 * test_pool.c - pool.c: pool creation between guard pages, canaries, the
 * pool array and its read-only page, thread -> pool, the fork hooks.
 * Registered with several MALLOC_OPTIONS pool counts.
 */
#include "unit.h"

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "omalloc.h"

/* The pool count MALLOC_OPTIONS asks for (only + and - matter). */
static unsigned int
expected_pools(void)
{
	const char *s = getenv("MALLOC_OPTIONS");
	unsigned int n = OM_DEFAULT_POOLS;

	for (; s != NULL && *s != '\0'; s++) {
		if (*s == '+')
			n = n * 2 > OM_MAX_POOLS ? OM_MAX_POOLS : n * 2;
		else if (*s == '-')
			n = n / 2 < 1 ? 1 : n / 2;
	}
	return n;
}

START_TEST(create)
{
	struct dir_info *d = unit_pool();

	ck_assert(om_pool_ok(d));
	ck_assert_uint_eq(d->canary1, mopts.canary ^ (uintptr_t)d);
	ck_assert_uint_eq(d->canary2, ~d->canary1);
	ck_assert_uint_eq((uintptr_t)d % 64, 0);
	ck_assert_uint_eq(d->index, OM_MAX_POOLS + 1);
	ck_assert_int_eq(d->conceal, 0);
	ck_assert_int_eq(d->junk, mopts.opt.junk);
	ck_assert_uint_eq(d->cache_max, (unsigned int)mopts.opt.cache_pages);
	ck_assert_uint_eq(d->regions_total, OM_HASH_INITIAL);
	ck_assert_uint_eq(d->regions_free, OM_HASH_INITIAL);
	ck_assert_uint_eq(d->inuse, 0);
	ck_assert_uint_eq(d->cache_used, 0);
	om_pool_check(d);
}
END_TEST

START_TEST(conceal_pool)
{
	struct dir_info *c = mopts.conceal;
	void *p;
	struct region_info *r;

	unit_init();
	ck_assert_ptr_nonnull(c);
	ck_assert(om_pool_ok(c));
	ck_assert_int_eq(c->conceal, 1);
	ck_assert_uint_eq(c->index, OM_MAX_POOLS);
	ck_assert_int_eq(c->junk, 0);
	ck_assert_uint_eq(c->cache_max, 0);
	p = malloc_conceal(100);
	ck_assert_ptr_nonnull(p);
	om_lock(c);
	r = om_region_find(c, p);
	om_unlock(c);
	ck_assert_ptr_nonnull(r);
	free(p);
}
END_TEST

START_TEST(random_offset)
{
	unsigned int seen[64] = { 0 }, distinct = 0, i;

	for (i = 0; i < 10; i++) {
		struct dir_info *d = unit_pool();
		unsigned int off = (unsigned int)(((uintptr_t)d &
		    OM_PAGE_MASK) / 64);

		if (seen[off]++ == 0)
			distinct++;
	}
	ck_assert_uint_ge(distinct, 2);
}
END_TEST

static void
do_touch(void *arg)
{
	(void)*(volatile char *)arg;
}

START_TEST(guard_pages)
{
	struct dir_info *d = unit_pool();
	uintptr_t page = (uintptr_t)d & ~(uintptr_t)OM_PAGE_MASK;
	uintptr_t after = page + OM_PAGEROUND(sizeof(*d)) + OM_PAGE_SIZE;
	struct child c;

	/* The whole body is usable... */
	unit_run(do_touch, (void *)page, &c);
	ck_assert(WIFEXITED(c.status));
	unit_run(do_touch, (void *)(after - 1), &c);
	ck_assert(WIFEXITED(c.status));
	/* ...and bounded by a guard page on either side. */
	unit_run(do_touch, (void *)(page - 1), &c);
	ck_assert_msg(unit_signalled(&c, SIGSEGV), "before: 0x%x", c.status);
	unit_run(do_touch, (void *)after, &c);
	ck_assert_msg(unit_signalled(&c, SIGSEGV), "after: 0x%x", c.status);
	ck_assert_uint_ge(after, (uintptr_t)(d + 1));
}
END_TEST

static void
do_corrupt(void *arg)
{
	struct dir_info *d = unit_pool();

	if (*(int *)arg == 1)
		d->canary1 ^= 0x100;
	else
		d->canary2 = 0;
	om_pool_check(d);
}

static void
do_corrupt_real(void *arg)
{
	struct dir_info *d = mopts.pools[mopts.npools - 1];

	(void)arg;
	d->canary2 ^= 1;
	om_lock(d);
}

START_TEST(corrupt_canary)
{
	struct child c;
	int which;

	unit_init();
	for (which = 1; which <= 2; which++) {
		unit_run(do_corrupt, &which, &c);
		ck_assert_fatal(&c, "malloc", "internal struct corrupt");
		ck_assert_ptr_nonnull(strstr(c.out, "corrupt 0x"));
	}
	unit_run(do_corrupt_real, NULL, &c);
	ck_assert_fatal(&c, "malloc", "internal struct corrupt");
}
END_TEST

START_TEST(pool_array)
{
	unsigned int i, j, n = expected_pools();

	unit_init();
	ck_assert_uint_eq(mopts.npools, n);
	ck_assert_uint_eq(mopts.pool_mask, n - 1);
	ck_assert_int_eq(mopts.opt.pools, (int)n);
	for (i = 0; i < OM_MAX_POOLS; i++) {
		if (i >= n) {
			ck_assert_ptr_null(mopts.pools[i]);
			continue;
		}
		ck_assert_ptr_nonnull(mopts.pools[i]);
		ck_assert(om_pool_ok(mopts.pools[i]));
		ck_assert_uint_eq(mopts.pools[i]->index, i);
		ck_assert_int_eq(mopts.pools[i]->conceal, 0);
		ck_assert_ptr_ne(mopts.pools[i], mopts.conceal);
		for (j = 0; j < i; j++)
			ck_assert_ptr_ne(mopts.pools[i], mopts.pools[j]);
	}
	ck_assert_uint_eq(mopts.guard, mopts.opt.guard ? OM_PAGE_SIZE : 0);
}
END_TEST

static void
do_write_options(void *arg)
{
	(void)arg;
	*(volatile unsigned int *)&mopts.npools = 1000;
}

START_TEST(options_readonly)
{
	struct child c;

	unit_init();
	unit_run(do_write_options, NULL, &c);
	ck_assert_msg(unit_signalled(&c, SIGSEGV), "status 0x%x: %s",
	    c.status, c.out);
	/* No way back to writable, where the kernel seals. */
	if (mprotect(&om_ro, sizeof(om_ro), PROT_READ | PROT_WRITE) == 0) {
		/* Not sealed: only acceptable without mseal(2). */
		void *t = mmap(NULL, OM_PAGE_SIZE, PROT_READ,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		ck_assert_msg(syscall(462, t, OM_PAGE_SIZE, 0UL) != 0,
		    "the option page is not sealed");
		mprotect(&om_ro, sizeof(om_ro), PROT_READ);
	}
}
END_TEST

/* The pool of the calling thread holds what it allocates. */
static void *
own_pool_check(void *arg)
{
	char *volatile p = malloc(200);
	char *volatile q = malloc(20000);
	struct dir_info *d;
	long tid = syscall(SYS_gettid);
	int ok;

	(void)arg;
	if (OM_SELF_TID(om_self) != (uint32_t)tid)
		return (void *)1;
	d = mopts.pools[(unsigned long)tid & mopts.pool_mask];
	om_lock(d);
	ok = om_region_find(d, p) != NULL && om_region_find(d, q) != NULL;
	om_unlock(d);
	free(p);
	free(q);
	return ok ? NULL : (void *)2;
}

START_TEST(thread_pool)
{
	pthread_t t[6];
	unsigned int i;
	void *rc;

	ck_assert_ptr_null(own_pool_check(NULL));
	for (i = 0; i < 6; i++)
		ck_assert_int_eq(pthread_create(&t[i], NULL, own_pool_check,
		    NULL), 0);
	for (i = 0; i < 6; i++) {
		ck_assert_int_eq(pthread_join(t[i], &rc), 0);
		ck_assert_ptr_null(rc);
	}
}
END_TEST

/* The lock word of pool i, whatever the lock's type. */
static void
lock_bytes(unsigned int i, unsigned char *out)
{
	struct dir_info *d = i < mopts.npools ? mopts.pools[i] : mopts.conceal;

	memcpy(out, &d->mtx, sizeof(d->mtx));
}

#define LOCK_SIZE sizeof(((struct dir_info *)0)->mtx)

START_TEST(fork_hooks_lock_all)
{
	static unsigned char free_[OM_MAX_POOLS + 1][LOCK_SIZE];
	static unsigned char held[OM_MAX_POOLS + 1][LOCK_SIZE];
	static unsigned char after[OM_MAX_POOLS + 1][LOCK_SIZE];
	unsigned int i, n;

	/* A lock's bytes differ between held and free, and are the same
	 * each time it is free again. */
	unit_init();
	n = mopts.npools;
	for (i = 0; i <= n; i++)
		lock_bytes(i, free_[i]);
	om_pool_fork_prepare();
	for (i = 0; i <= n; i++)
		lock_bytes(i, held[i]);
	om_pool_fork_parent();
	for (i = 0; i <= n; i++)
		lock_bytes(i, after[i]);
	for (i = 0; i <= n; i++) {
		ck_assert_msg(memcmp(free_[i], held[i], LOCK_SIZE) != 0,
		    "pool %u not locked for fork", i);
		ck_assert_msg(memcmp(free_[i], after[i], LOCK_SIZE) == 0,
		    "pool %u still locked after fork", i);
	}
}
END_TEST

static volatile int stop;

static void *
churn(void *arg)
{
	(void)arg;
	while (!stop) {
		void *volatile p = malloc(64);
		void *volatile q = malloc(5000);
		free(p);
		free(q);
	}
	return NULL;
}

START_TEST(fork_while_threads_allocate)
{
	pthread_t t[2];
	unsigned int i;

	stop = 0;
	for (i = 0; i < 2; i++)
		ck_assert_int_eq(pthread_create(&t[i], NULL, churn, NULL), 0);
	for (i = 0; i < 20; i++) {
		int status;
		pid_t pid = fork();

		ck_assert_int_ge(pid, 0);
		if (pid == 0) {
			unsigned int k;
			/* Touch every pool: all locks must be usable. */
			for (k = 0; k < 64; k++) {
				void *volatile p = malloc(100 + k);
				free(p);
			}
			free(malloc_conceal(10));
			_exit(0);
		}
		ck_assert_int_eq(waitpid(pid, &status, 0), pid);
		ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	}
	stop = 1;
	for (i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("pool");
	TCase *t = tcase_create("pool");

	tcase_add_test(t, create);
	tcase_add_test(t, conceal_pool);
	tcase_add_test(t, random_offset);
	tcase_add_test(t, guard_pages);
	tcase_add_test(t, corrupt_canary);
	tcase_add_test(t, pool_array);
	tcase_add_test(t, options_readonly);
	tcase_add_test(t, thread_pool);
	tcase_add_test(t, fork_hooks_lock_all);
	tcase_add_test(t, fork_while_threads_allocate);
	suite_add_tcase(s, t);
	return unit_main(s);
}
