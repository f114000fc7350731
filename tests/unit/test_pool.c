/*
 * test_pool.c - pool.c: pool creation between guard pages, canaries, the
 * pool array and its read-only page, thread -> pool, the fork hooks.
 * Registered with several MALLOC_OPTIONS pool counts.
 */
#define _GNU_SOURCE
#include "unit.h"

#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/membarrier.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "omalloc.h"

#include <malloc.h>

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

/* The first pool of the array nobody has opened; npools if none. */
static unsigned int
first_closed_pool(void)
{
	unsigned int i;

	for (i = 0; i < mopts.npools && om_pool_used(i); i++)
		;
	return i;
}

/* Start threads running fn(arg), one at a time, until one sets *hit
 * (its tid mapped to the pool fn looks for). */
static void
threads_until(void *(*fn)(void *), void *arg, const int *hit)
{
	pthread_t t;
	unsigned int i;

	for (i = 0; i < 100000 && !*hit; i++) {
		ck_assert_int_eq(pthread_create(&t, NULL, fn, arg), 0);
		ck_assert_int_eq(pthread_join(t, NULL), 0);
	}
	ck_assert(*hit);
}

/* A thread that opens pool `want` when its tid maps there. */
struct opener {
	unsigned int want;
	int hit;		/* this thread's tid mapped there */
	int was_open;		/* before its first malloc */
	int is_open;		/* after it */
};

static void *
open_if_mine(void *arg)
{
	struct opener *o = arg;
	unsigned int tid = (unsigned int)syscall(SYS_gettid);

	if ((tid & mopts.pool_mask) != o->want)
		return NULL;
	o->hit = 1;
	o->was_open = om_pool_used(o->want);
	free(malloc(64));
	o->is_open = om_pool_used(o->want);
	return NULL;
}

/* A fork child's pool is the one of its own tid, opened if need be. */
static void
do_alloc_own(void *arg)
{
	unsigned int j = (unsigned int)syscall(SYS_gettid) & mopts.pool_mask;
	void *p = malloc(100);

	(void)arg;
	if (p == NULL || !om_pool_used(j) || !om_pool_ok(mopts.pools[j]))
		abort();
	free(p);
}

/* A pool is reserved at initialisation but opened (made accessible and
 * filled in) only by the first thread whose tid maps to it; the conceal
 * pool by the first malloc_conceal. */
START_TEST(pools_open_on_use)
{
	struct opener o = { 0 };
	struct child c;
	unsigned int own, want;
	char *body;
	void *p;

	free(malloc(1));	/* not unit_init, which opens every pool */
	own = (unsigned int)syscall(SYS_gettid) & mopts.pool_mask;
	ck_assert(om_pool_used(own));
	ck_assert(om_pool_ok(mopts.pools[own]));
	ck_assert(!om_pool_used(mopts.npools));
	p = malloc_conceal(10);
	ck_assert_ptr_nonnull(p);
	ck_assert(om_pool_used(mopts.npools));
	ck_assert(om_pool_ok(mopts.conceal));
	free(p);
	unit_run(do_alloc_own, NULL, &c);
	ck_assert_exited_ok(&c);

	want = first_closed_pool();
	/* Only the test runner's pool and this child's can be open. */
	if (mopts.npools <= 2 && want == mopts.npools)
		return;
	ck_assert_uint_lt(want, mopts.npools);
	body = (char *)((uintptr_t)mopts.pools[want] &
	    ~(uintptr_t)OM_PAGE_MASK);
	unit_run(do_touch, body, &c);
	ck_assert_msg(unit_signalled(&c, SIGSEGV), "closed pool: 0x%x",
	    c.status);
	o.want = want;
	threads_until(open_if_mine, &o, &o.hit);
	ck_assert_int_eq(o.was_open, 0);
	ck_assert_int_eq(o.is_open, 1);
	ck_assert(om_pool_ok(mopts.pools[want]));
	ck_assert_uint_eq(mopts.pools[want]->index, want);
	unit_run(do_touch, body, &c);
	ck_assert_msg(WIFEXITED(c.status), "opened pool: 0x%x", c.status);
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

/*
 * Pools whose threads have all exited.  A thread whose tid maps to pool
 * `want`, one nobody had opened, frees a batch of 48-byte blocks and a
 * region, so that its pool keeps an empty chunk page and cached pages;
 * fills the delayed ring with 64-byte blocks; and leaves blocks of two
 * other sizes alive, for another thread to free: 100 bytes first, so
 * that their pages empty while the pool still holds blocks.
 */
#define LEAVE_N 200

struct leaver {
	unsigned int want;
	int hit;
	int threads;		/* the pool's count while it ran */
	void *kept[LEAVE_N];
};

static void *
leave_blocks(void *arg)
{
	struct leaver *l = arg;
	unsigned int tid = (unsigned int)syscall(SYS_gettid), i;
	void *batch[LEAVE_N], *region;

	if ((tid & mopts.pool_mask) != l->want)
		return NULL;
	l->hit = 1;
	for (i = 0; i < LEAVE_N; i++)
		batch[i] = malloc(48);
	region = malloc(3 * OM_PAGE_SIZE);
	for (i = 0; i < LEAVE_N; i++) {
		l->kept[i] = malloc(i < LEAVE_N / 2 ? 100 : 1000);
		free(malloc(64));
	}
	for (i = 0; i < LEAVE_N; i++)
		free(batch[i]);
	free(region);
	l->threads = mopts.pools[l->want]->threads;
	return NULL;
}

/* d keeps no empty chunk page. */
static void
assert_no_empty_page(struct dir_info *d)
{
	unsigned int b, l;

	for (b = 0; b < OM_NBUCKETS; b++)
		for (l = 0; l < OM_CHUNK_LISTS; l++) {
			struct chunk_info *info;

			for (info = d->chunk_dir[b][l]; info != NULL;
			    info = info->next)
				ck_assert_uint_lt(info->free, info->total);
		}
}

/* d keeps nothing for reuse: no delayed chunk, no empty chunk page, no
 * cached page. */
static void
assert_kept_nothing(struct dir_info *d)
{
	unsigned int i;

	for (i = 0; i < OM_DELAYED; i++)
		ck_assert_ptr_null(d->delayed[i].p);
	assert_no_empty_page(d);
	ck_assert_uint_eq(d->cache_pages, 0);
}

/* A fork child counts only itself, in its own pool. */
static void
do_count_child(void *arg)
{
	unsigned int j = (unsigned int)syscall(SYS_gettid) & mopts.pool_mask;
	unsigned int i;

	(void)arg;
	free(malloc(10));
	for (i = 0; i < mopts.npools; i++)
		if (om_pool_used(i) &&
		    mopts.pools[i]->threads != (i == j ? 1 : 0))
			abort();
}

START_TEST(ownerless_pool_gives_back)
{
	struct leaver l = { 0 };
	struct child c;
	struct dir_info *d;
	unsigned int own, b, i;

	free(malloc(1));
	own = (unsigned int)syscall(SYS_gettid) & mopts.pool_mask;
	ck_assert(mopts.exit_key_ok);
	ck_assert_int_eq(mopts.pools[own]->threads, 1);
	/* A pool that holds nothing yet: not the test's, nor the runner's
	 * whose blocks this forked test inherits. */
	if ((l.want = first_closed_pool()) == mopts.npools)
		return;
	threads_until(leave_blocks, &l, &l.hit);
	ck_assert_int_eq(l.threads, 1);
	d = mopts.pools[l.want];

	/* Its thread gone, the pool gave back what it kept... */
	ck_assert_int_eq(d->threads, 0);
	assert_kept_nothing(d);
	ck_assert_uint_gt(d->inuse, 0);
	/* ...and gives back the pages of the blocks it held as other
	 * threads free them, the last one taking the ring with it. */
	for (i = 0; i < LEAVE_N - 1; i++) {
		free(l.kept[i]);
		om_rq_flush();
		assert_no_empty_page(d);
	}
	ck_assert_uint_gt(d->inuse, 0);
	free(l.kept[i]);
	om_rq_flush();
	ck_assert_uint_eq(d->inuse, 0);
	assert_kept_nothing(d);
	for (b = 0; b < OM_NBUCKETS; b++)
		ck_assert_uint_eq(d->chunk_pages_avail[b], 0);
	ck_assert_uint_eq(d->regions_free, d->regions_total);

	/* A thread that comes later counts itself in and allocates. */
	l.hit = 0;
	threads_until(leave_blocks, &l, &l.hit);
	ck_assert_int_eq(l.threads, 1);
	ck_assert_int_eq(d->threads, 0);
	for (i = 0; i < LEAVE_N; i++)
		free(l.kept[i]);
	om_rq_flush();
	assert_kept_nothing(d);

	unit_run(do_count_child, NULL, &c);
	ck_assert_exited_ok(&c);
}
END_TEST

/*
 * Frees into another pool are queued and made in one hold of its lock
 * (api.c, queue): a thread in another pool allocates blocks and exits,
 * and this one frees them.
 */
#define REMOTE_N (OM_RQ_LEN + 8)

struct remote {
	unsigned int avoid;	/* this thread's pool */
	int hit;
	struct dir_info *d;
	void *blk[REMOTE_N];
	void *last;		/* keeps the pool from retiring */
};

static void *
alloc_elsewhere(void *arg)
{
	struct remote *r = arg;
	unsigned int tid = (unsigned int)syscall(SYS_gettid), i;

	if ((tid & mopts.pool_mask) == r->avoid)
		return NULL;
	for (i = 0; i < REMOTE_N; i++)
		r->blk[i] = malloc(64);
	r->last = malloc(64);
	r->d = mopts.pools[tid & mopts.pool_mask];
	r->hit = 1;
	return NULL;
}

static unsigned long
locks_taken(const struct dir_info *d)
{
	return d->lock_plain + d->lock_biased;
}

START_TEST(remote_frees_batched)
{
	struct remote r = { 0 };
	struct dir_info *d;
	size_t inuse;
	unsigned long locks, searches, left;
	unsigned int own, i;
	void *keep = malloc(10);

	own = (unsigned int)syscall(SYS_gettid) & mopts.pool_mask;
	ck_assert_int_eq(mopts.batch_frees, mopts.npools > 1 &&
	    !mopts.opt.freecheck);
	if (mopts.npools == 1) {
		free(keep);
		return;
	}
	r.avoid = own;
	threads_until(alloc_elsewhere, &r, &r.hit);
	d = r.d;
	ck_assert_ptr_ne(d, mopts.pools[own]);
	inuse = d->inuse;
	locks = locks_taken(d);
	searches = d->searches_from[own];
	left = d->left_from[own];

	if (!mopts.batch_frees) {
		/* F: each free is made at once. */
		free(r.blk[0]);
		ck_assert_uint_eq(om_rq.n, 0);
		ck_assert_uint_eq(d->inuse, inuse - 64);
		ck_assert_uint_eq(locks_taken(d), locks + 1);
		for (i = 1; i < REMOTE_N; i++)
			free(r.blk[i]);
		free(r.last);
		free(keep);
		return;
	}
	for (i = 0; i < OM_RQ_LEN - 1; i++) {
		free(r.blk[i]);
		ck_assert_uint_eq(om_rq.n, i + 1);
	}
	/* Nothing done in the owner yet. */
	ck_assert_uint_eq(d->inuse, inuse);
	ck_assert_uint_eq(locks_taken(d), locks);
	ck_assert_uint_eq(d->searches_from[own], searches);
	/* The queue full, all of it is freed under one lock, and every
	 * free counted as a search that left this thread's pool. */
	free(r.blk[i++]);
	ck_assert_uint_eq(om_rq.n, 0);
	ck_assert_uint_eq(d->inuse, inuse - OM_RQ_LEN * 64);
	ck_assert_uint_eq(locks_taken(d), locks + 1);
	ck_assert_uint_eq(d->searches_from[own], searches + OM_RQ_LEN);
	ck_assert_uint_eq(d->left_from[own], left + OM_RQ_LEN);
	/* A few more wait until this thread looks up a pointer. */
	for (; i < REMOTE_N; i++)
		free(r.blk[i]);
	ck_assert_uint_eq(om_rq.n, REMOTE_N - OM_RQ_LEN);
	ck_assert_uint_eq(d->inuse, inuse - OM_RQ_LEN * 64);
	ck_assert_uint_ge(malloc_usable_size(keep), 10);
	ck_assert_uint_eq(om_rq.n, 0);
	ck_assert_uint_eq(d->inuse, inuse - REMOTE_N * 64);
	ck_assert_uint_eq(locks_taken(d), locks + 2);
	free(r.last);
	free(keep);
}
END_TEST

/*
 * Sized frees of another pool's chunks join the same queue when the owner
 * hint's size class shows the size fits the slot, and the alignment
 * holds; not under C, whose check needs the exact request from the
 * owner's record.
 */
START_TEST(remote_sized_frees_queued)
{
	struct remote r = { 0 };
	struct dir_info *d;
	size_t inuse;
	unsigned int own, i, n;
	int queues = mopts.batch_frees && !mopts.opt.chunk_canaries;

	own = (unsigned int)syscall(SYS_gettid) & mopts.pool_mask;
	if (mopts.npools == 1)
		return;
	r.avoid = own;
	threads_until(alloc_elsewhere, &r, &r.hit);
	d = r.d;
	inuse = d->inuse;
	free_sized(r.blk[0], 64);
	free_sized(r.blk[1], 0);
	free_aligned_sized(r.blk[2], 16, 1);
	free(r.blk[3]);
	/* Under C free's is queued still; under F nothing is. */
	n = queues ? 4 : mopts.batch_frees ? 1 : 0;
	ck_assert_uint_eq(om_rq.n, n);
	ck_assert_uint_eq(d->inuse, inuse - (4 - n) * 64);
	/* One lock for all of them, and the rest. */
	om_rq_flush();
	ck_assert_uint_eq(om_rq.n, 0);
	ck_assert_uint_eq(d->inuse, inuse - 4 * 64);
	for (i = 4; i < REMOTE_N; i++)
		free_sized(r.blk[i], 64);
	om_rq_flush();
	ck_assert_uint_eq(d->inuse, inuse - REMOTE_N * 64);
	free(r.last);
}
END_TEST

/* A free into a pool other than the queued ones' empties the queue
 * first: a queue holds one pool's chunks. */
START_TEST(remote_queue_one_pool)
{
	struct remote a = { 0 }, b = { 0 };
	size_t inuse, inuse_b;
	unsigned int own;

	own = (unsigned int)syscall(SYS_gettid) & mopts.pool_mask;
	if (!mopts.batch_frees || mopts.npools < 4)
		return;
	a.avoid = own;
	threads_until(alloc_elsewhere, &a, &a.hit);
	b.avoid = own;
	while (b.d == NULL || b.d == a.d) {
		b.hit = 0;
		threads_until(alloc_elsewhere, &b, &b.hit);
	}
	inuse = a.d->inuse;
	inuse_b = b.d->inuse;
	free(a.blk[0]);
	free(a.blk[1]);
	ck_assert_uint_eq(om_rq.n, 2);
	ck_assert_uint_eq(a.d->inuse, inuse);
	free(b.blk[0]);
	ck_assert_uint_eq(om_rq.n, 1);
	ck_assert_uint_eq(a.d->inuse, inuse - 2 * 64);
	om_rq_flush();
	ck_assert_uint_eq(om_rq.n, 0);
	ck_assert_uint_eq(b.d->inuse, inuse_b - 64);
}
END_TEST

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

/*
 * A waiter on a lock taken on its own CPU yields to the holder, which
 * cannot be running, rather than sleeping; one on another CPU sleeps.
 * The holder looks at the lock's sleepers just before it lets go.
 */
struct yielding {
	struct om_mutex m;
	int cpu[2];		/* holder's, waiter's (-1: not pinned) */
	pid_t tid;		/* the waiter's */
	int trying;		/* the waiter is about to wait */
	int sleepers;		/* seen by the holder before release */
	int got;		/* the waiter took the lock */
};

static void
pin(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	ck_assert_int_eq(sched_setaffinity(0, sizeof(set), &set), 0);
}

static void *
wait_for_lock(void *arg)
{
	struct yielding *y = arg;

	if (y->cpu[1] >= 0)
		pin(y->cpu[1]);
	__atomic_store_n(&y->tid, (pid_t)syscall(SYS_gettid), __ATOMIC_RELEASE);
	__atomic_store_n(&y->trying, 1, __ATOMIC_RELEASE);
	om_mutex_lock(&y->m, 2);
	__atomic_store_n(&y->got, 1, __ATOMIC_RELEASE);
	om_mutex_unlock(&y->m);
	return NULL;
}

static void
hold_while_waited(struct yielding *y)
{
	pthread_t t;
	int i;

	om_mutex_init(&y->m);
	pin(y->cpu[0]);
	om_mutex_lock(&y->m, 1);
	ck_assert_int_eq(pthread_create(&t, NULL, wait_for_lock, y), 0);
	while (!__atomic_load_n(&y->trying, __ATOMIC_ACQUIRE))
		sched_yield();
	/* Time for the waiter to spin and yield (each yield here runs it
	 * up to its next), or to go to sleep: on a busy machine it may
	 * wait its turn on its CPU for a while before it gets that far,
	 * so give it up to ten seconds. */
	if (y->cpu[0] == y->cpu[1])
		for (i = 0; i < OM_MUTEX_YIELDS / 2; i++)
			sched_yield();
	else
		for (i = 0; i < 10000 &&
		    __atomic_load_n(&y->m.sleepers, __ATOMIC_ACQUIRE) == 0; i++)
			usleep(1000);
	y->sleepers = __atomic_load_n(&y->m.sleepers, __ATOMIC_ACQUIRE);
	om_mutex_unlock(&y->m);
	ck_assert_int_eq(pthread_join(t, NULL), 0);
	ck_assert(y->got);
	/* Nobody waits any more, and no wake-up is on its way. */
	ck_assert_int_eq(y->m.sleepers, 0);
	ck_assert_int_eq(y->m.waking, 0);
}

START_TEST(waiter_yields_on_holders_cpu)
{
	struct yielding same = { 0 }, other = { 0 };
	cpu_set_t set;
	int cpu = om_cpu(), i;

	if (cpu < 0)
		return;		/* no rseq area: waiters never yield */
	ck_assert_int_eq(sched_getaffinity(0, sizeof(set), &set), 0);
	same.cpu[0] = same.cpu[1] = cpu;
	hold_while_waited(&same);
	ck_assert_int_eq(same.sleepers, 0);
	for (i = 0; i < CPU_SETSIZE; i++)
		if (i != cpu && CPU_ISSET(i, &set))
			break;
	if (i == CPU_SETSIZE)
		return;		/* one CPU only */
	other.cpu[0] = cpu;
	other.cpu[1] = i;
	hold_while_waited(&other);
	ck_assert_int_eq(other.sleepers, 1);
}
END_TEST

/* A thread's state letter and its voluntary context switches. */
static void
task_sleeps(pid_t tid, char *state, long *switches)
{
	char path[64], line[128];
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/task/%d/status", (int)tid);
	ck_assert_ptr_nonnull(f = fopen(path, "r"));
	*state = '?';
	*switches = -1;
	while (fgets(line, sizeof(line), f) != NULL) {
		if (strncmp(line, "State:", 6) == 0)
			sscanf(line + 6, " %c", state);
		sscanf(line, "voluntary_ctxt_switches: %ld", switches);
	}
	fclose(f);
	ck_assert_int_ge(*switches, 0);
}

/*
 * `waking` says a woken sleeper has not run yet, and holds back the wakes
 * of the releases meanwhile.  A wake that finds nobody asleep (a waiter
 * counted an instant before its futex call) must not leave it set, or
 * the sleepers that come later would be left to their timeouts; and only
 * the woken sleeper clears it, not one whose sleep timed out.
 */
START_TEST(wake_that_finds_nobody)
{
	struct yielding n = { .cpu = { -1, -1 } };
	pthread_t t;
	long before, now;
	char state;

	om_mutex_init(&n.m);
	om_mutex_lock(&n.m, 1);
	n.m.sleepers = 1;	/* counted, not asleep yet */
	om_mutex_unlock(&n.m);
	ck_assert_int_eq(n.m.waking, 0);

	/* A real sleeper, with a wake-up taken to be on its way to
	 * another: its timeouts leave the flag alone. */
	om_mutex_init(&n.m);
	om_mutex_lock(&n.m, 1);
	n.m.waking = 1;
	ck_assert_int_eq(pthread_create(&t, NULL, wait_for_lock, &n), 0);
	while (__atomic_load_n(&n.tid, __ATOMIC_ACQUIRE) == 0 ||
	    __atomic_load_n(&n.m.sleepers, __ATOMIC_ACQUIRE) == 0)
		usleep(1000);
	do {
		usleep(1000);
		task_sleeps(n.tid, &state, &before);
	} while (state != 'S');
	/* Asleep; once it has woken on its timeout and slept again, its
	 * count of voluntary switches has moved on. */
	do {
		usleep(5000);
		task_sleeps(n.tid, &state, &now);
	} while (now == before || state != 'S');
	ck_assert_int_eq(n.m.waking, 1);
	ck_assert_int_eq(n.got, 0);
	/* Nothing on its way after all: the release wakes it. */
	n.m.waking = 0;
	om_mutex_unlock(&n.m);
	ck_assert_int_eq(pthread_join(t, NULL), 0);
	ck_assert(n.got);
	ck_assert_int_eq(n.m.sleepers, 0);
	ck_assert_int_eq(n.m.waking, 0);
}
END_TEST

/*
 * Many more threads than CPUs on one lock, some holders sleeping inside
 * it so that the others spin, yield and sleep on the futex: the lock
 * still excludes (a plain counter, incremented under it, comes out
 * exact), every waiter gets it, and the bookkeeping of sleepers and
 * wake-ups comes back to rest.
 */
#define CROWD_THREADS 32
#define CROWD_ROUNDS 2000

struct crowd {
	struct om_mutex m;
	unsigned long count;	/* under m only */
	int inside;		/* threads inside m at once: never over 1 */
	int most;
};

static void *
crowd_member(void *arg)
{
	struct crowd *c = arg;
	int owner = (int)syscall(SYS_gettid), i, in;

	for (i = 0; i < CROWD_ROUNDS; i++) {
		om_mutex_lock(&c->m, owner);
		in = __atomic_add_fetch(&c->inside, 1, __ATOMIC_RELAXED);
		if (in > c->most)
			c->most = in;
		c->count++;
		if (i % 64 == 0)
			usleep(100);
		__atomic_sub_fetch(&c->inside, 1, __ATOMIC_RELAXED);
		om_mutex_unlock(&c->m);
	}
	return NULL;
}

START_TEST(crowded_lock)
{
	static struct crowd c;
	pthread_t t[CROWD_THREADS];
	int i;

	memset(&c, 0, sizeof(c));
	om_mutex_init(&c.m);
	for (i = 0; i < CROWD_THREADS; i++)
		ck_assert_int_eq(pthread_create(&t[i], NULL, crowd_member,
		    &c), 0);
	for (i = 0; i < CROWD_THREADS; i++)
		ck_assert_int_eq(pthread_join(t[i], NULL), 0);
	ck_assert_uint_eq(c.count, (unsigned long)CROWD_THREADS *
	    CROWD_ROUNDS);
	ck_assert_int_eq(c.most, 1);
	ck_assert_int_eq(c.m.w, 0);
	ck_assert_int_eq(c.m.sleepers, 0);
	ck_assert_int_eq(c.m.waking, 0);
}
END_TEST

/* The lock word of pool i, whatever the lock's type. */
static void
lock_bytes(unsigned int i, unsigned char *out)
{
	struct dir_info *d = i < mopts.npools ? mopts.pools[i] : mopts.conceal;
	struct om_mutex m = d->mtx;

	m.cpu = 0;	/* where it was last taken: a hint, not its state */
	memcpy(out, &m, sizeof(m));
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

/* What a fork child draws, on its stderr: the first word of every open
 * pool's key, then where its first 32 blocks of 64 bytes go. */
static void
draw(void *arg)
{
	unsigned int i;

	(void)arg;
	for (i = 0; i <= mopts.npools; i++)
		fprintf(stderr, "%08x\n", om_pool_at(i)->rng.key[0]);
	for (i = 0; i < 32; i++)
		fprintf(stderr, "%p\n", malloc(64));
}

/* Why two children that ran draw are not apart from this process and
 * from each other, or NULL if they are. */
static const char *
drawn_alike(const struct child *a, const struct child *b)
{
	static char why[160];
	char key[16];
	const char *lines = a->out;
	unsigned int i;

	if (!WIFEXITED(a->status) || WEXITSTATUS(a->status) != 0 ||
	    !WIFEXITED(b->status) || WEXITSTATUS(b->status) != 0)
		return "a child did not exit 0";
	/* Every pool's key: not the parent's, and not the same in both. */
	for (i = 0; i <= mopts.npools; i++) {
		snprintf(key, sizeof(key), "%08x\n", om_pool_at(i)->rng.key[0]);
		if (strstr(a->out, key) != NULL ||
		    strstr(b->out, key) != NULL) {
			snprintf(why, sizeof(why),
			    "pool %u keyed as the parent", i);
			return why;
		}
	}
	for (i = 0; i <= mopts.npools; i++, lines += 9)
		if (strncmp(lines, b->out + (lines - a->out), 9) == 0) {
			snprintf(why, sizeof(why),
			    "pool %u keyed alike in both children", i);
			return why;
		}
	/* And the blocks: the two do not place their first 32 alike. */
	if (strcmp(lines, b->out + (lines - a->out)) == 0)
		return "both children placed their blocks alike";
	return NULL;
}

/* Children forked from one parent draw apart from it and from each other:
 * their generators are keyed anew, and so their blocks go elsewhere. */
START_TEST(fork_children_draw_apart)
{
	static struct child a, b;
	const char *why;

	unit_init();
	unit_run(draw, NULL, &a);
	unit_run(draw, NULL, &b);
	why = drawn_alike(&a, &b);
	ck_assert_msg(why == NULL, "%s; stderr: %s", why, a.out);
}
END_TEST

/* The same under a seccomp filter that refuses getrandom(2), as a sandbox
 * may: the children still draw apart (from their parent's stream, their
 * thread ids and the time).  In a child, which reports on stderr. */
static void
draw_apart_refused(void *arg)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
		    offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_getrandom, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { sizeof(f) / sizeof(f[0]), f };
	static struct child a, b;
	const char *why;
	char buf[8];

	(void)arg;
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
	    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0) {
		fprintf(stderr, "no seccomp filter\n");
		abort();
	}
	if (syscall(SYS_getrandom, buf, sizeof(buf), 0) != -1 ||
	    errno != EPERM) {
		fprintf(stderr, "getrandom not refused\n");
		abort();
	}
	unit_run(draw, NULL, &a);
	unit_run(draw, NULL, &b);
	if ((why = drawn_alike(&a, &b)) != NULL) {
		fprintf(stderr, "%s\n", why);
		abort();
	}
}

START_TEST(fork_children_draw_apart_without_getrandom)
{
	struct child c;

	unit_init();
	unit_run(draw_apart_refused, NULL, &c);
	ck_assert_exited_ok(&c);
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

/* The calling thread's pool, and its thread id in *tid. */
static struct dir_info *
own_pool(long *tid)
{
	*tid = syscall(SYS_gettid);
	return mopts.pools[(unsigned long)*tid & mopts.pool_mask];
}

/* Whether this kernel offers what biased pool locks need. */
static int
membarrier_works(void)
{
	long cmds = syscall(SYS_membarrier, MEMBARRIER_CMD_QUERY, 0, 0);

	return cmds > 0 && (cmds & MEMBARRIER_CMD_PRIVATE_EXPEDITED) != 0;
}

struct bias_run {
	struct dir_info *d;
	long tid;
	int biased;		/* d's bias named this thread at the end */
	unsigned long biased_locks;
	void *keep;		/* one block for another thread to free */
	int ready, go;		/* earned; may exit */
};

/* Take the own pool many times in a row, then leave one block behind. */
static void *
earn_bias(void *arg)
{
	struct bias_run *b = arg;
	unsigned long before;
	unsigned int i;

	b->d = own_pool(&b->tid);
	before = b->d->lock_biased;
	for (i = 0; i < 4 * OM_BIAS_FIRST; i++) {
		void *volatile p = malloc(32 + i % 200);

		free(p);
	}
	b->biased = OM_BIAS_TID(__atomic_load_n(&b->d->bias,
	    __ATOMIC_RELAXED)) == (int)b->tid;
	b->biased_locks = b->d->lock_biased - before;
	b->keep = malloc(48);
	/* Stay alive, out of the allocator, until the test is done: a
	 * thread's exit may itself allocate. */
	__atomic_store_n(&b->ready, 1, __ATOMIC_RELEASE);
	while (!__atomic_load_n(&b->go, __ATOMIC_ACQUIRE))
		usleep(1000);
	return NULL;
}

/* A thread that keeps taking its pool gets the bias; a free of its block
 * by another thread takes it back, and the next bias costs twice the run. */
START_TEST(bias_grant_revoke)
{
	struct bias_run b = { 0 };
	pthread_t t;
	unsigned long revoked;
	unsigned int after;
	uint64_t bias0, bias1;
	int bias_in, rc;

	unit_init();
	if (!membarrier_works()) {
		ck_assert_int_eq(mopts.bias_locks, 0);
		return;
	}
	ck_assert_int_eq(mopts.bias_locks, 1);
	/* No ck_assert until the reads below: Check allocates, and this
	 * thread's allocations could take the bias back too early. */
	rc = pthread_create(&t, NULL, earn_bias, &b);
	while (rc == 0 && !__atomic_load_n(&b.ready, __ATOMIC_ACQUIRE))
		usleep(1000);
	bias0 = b.d->bias;
	revoked = b.d->lock_revoked;
	after = b.d->bias_after;
	free(b.keep);
	om_rq_flush();
	bias1 = b.d->bias;
	bias_in = bias0 != 0 ? *OM_BIAS_FLAG(b.d, bias0) : -1;
	ck_assert_int_eq(rc, 0);
	ck_assert(b.biased);
	ck_assert_uint_gt(b.biased_locks, 2 * OM_BIAS_FIRST);
	ck_assert_int_eq(OM_BIAS_TID(bias0), (int)b.tid);
	ck_assert_uint_eq(bias1, 0);
	ck_assert_int_eq(bias_in, 0);
	ck_assert_uint_eq(b.d->lock_revoked, revoked + 1);
	ck_assert_uint_eq(b.d->bias_after, after * 2);
	__atomic_store_n(&b.go, 1, __ATOMIC_RELEASE);
	ck_assert_int_eq(pthread_join(t, NULL), 0);
}
END_TEST

/* The bias of a thread that has exited goes back at the next lock by
 * another thread, and the next bias costs the first run again: the pool
 * was that thread's alone, not shared. */
START_TEST(bias_of_exited_thread)
{
	struct bias_run b = { 0 };
	pthread_t t;
	unsigned long revoked;
	uint64_t bias;
	int rc, i;

	unit_init();
	if (!membarrier_works())
		return;
	rc = pthread_create(&t, NULL, earn_bias, &b);
	/* No check until the bias is earned: a passing ck_assert reports
	 * its line to the runner, which allocates, and with one pool that
	 * takes the bias back if the thread has it by then. */
	while (rc == 0 && !__atomic_load_n(&b.ready, __ATOMIC_ACQUIRE))
		usleep(1000);
	ck_assert_int_eq(rc, 0);
	ck_assert(b.biased);
	__atomic_store_n(&b.go, 1, __ATOMIC_RELEASE);
	ck_assert_int_eq(pthread_join(t, NULL), 0);
	/* With one pool, this thread's own allocations (in the join, say)
	 * take the bias back first. */
	if (mopts.pools[syscall(SYS_gettid) & mopts.pool_mask] == b.d)
		return;
	/* Gone from the kernel too, not only joined. */
	for (i = 0; i < 1000 && om_os_thread_alive((int)b.tid); i++)
		usleep(1000);
	ck_assert(!om_os_thread_alive((int)b.tid));
	bias = b.d->bias;
	ck_assert_int_eq(OM_BIAS_TID(bias), (int)b.tid);
	revoked = b.d->lock_revoked;
	free(b.keep);
	om_rq_flush();
	ck_assert_uint_eq(b.d->bias, 0);
	ck_assert_int_eq(b.d->bias_in[OM_BIAS_SLOT(bias)], 0);
	ck_assert_int_eq(b.d->bias_who[OM_BIAS_SLOT(bias)], 0);
	ck_assert_uint_eq(b.d->lock_revoked, revoked + 1);
	ck_assert_uint_eq(b.d->bias_after, OM_BIAS_FIRST);
}
END_TEST

/* Earn the bias, wait; earn it again, wait. */
struct bias_phases {
	struct dir_info *d;
	long tid;
	int ready, go;
	int biased[2];
};

static void *
earn_twice(void *arg)
{
	struct bias_phases *b = arg;
	unsigned int phase, i;

	b->d = own_pool(&b->tid);
	for (phase = 0; phase < 2; phase++) {
		for (i = 0; i < 4 * OM_BIAS_FIRST; i++) {
			void *volatile p = malloc(40);

			free(p);
		}
		b->biased[phase] = OM_BIAS_TID(__atomic_load_n(&b->d->bias,
		    __ATOMIC_RELAXED)) == (int)b->tid;
		__atomic_store_n(&b->ready, (int)phase + 1, __ATOMIC_RELEASE);
		while (__atomic_load_n(&b->go, __ATOMIC_ACQUIRE) <= (int)phase)
			usleep(1000);
	}
	return NULL;
}

/* A dump visits every pool and takes each bias back, but that says
 * nothing of sharing: the run that earns the bias again stays as long. */
START_TEST(bias_after_dumps)
{
	struct bias_phases b = { 0 };
	pthread_t t;
	int fd, rc;
	uint64_t bias_dumped;
	unsigned int after0, after1, i;
	unsigned long revoked0, revoked1;

	unit_init();
	if (!mopts.bias_locks)
		return;
	fd = open("/dev/null", O_WRONLY);
	/* No ck_assert until the end: Check allocates. */
	rc = pthread_create(&t, NULL, earn_twice, &b);
	while (rc == 0 && __atomic_load_n(&b.ready, __ATOMIC_ACQUIRE) < 1)
		usleep(1000);
	after0 = b.d->bias_after;
	revoked0 = b.d->lock_revoked;
	for (i = 0; i < 3; i++)
		malloc_gdump(fd);
	bias_dumped = b.d->bias;
	after1 = b.d->bias_after;
	revoked1 = b.d->lock_revoked;
	__atomic_store_n(&b.go, 1, __ATOMIC_RELEASE);
	while (rc == 0 && __atomic_load_n(&b.ready, __ATOMIC_ACQUIRE) < 2)
		usleep(1000);
	__atomic_store_n(&b.go, 2, __ATOMIC_RELEASE);
	ck_assert_int_eq(rc, 0);
	ck_assert_int_eq(pthread_join(t, NULL), 0);
	close(fd);
	ck_assert(b.biased[0]);
	ck_assert_uint_eq(bias_dumped, 0);
	ck_assert_uint_eq(revoked1, revoked0 + 1);
	ck_assert_uint_eq(after1, after0);
	ck_assert(b.biased[1]);
}
END_TEST

/* A thread of a pool that another takes turns with: it runs on turns me
 * and me + 2 (of *turn), a long run of pairs each time. */
struct turns {
	int *turn;
	int me, quit, started;
	long tid;
	struct dir_info *d;
	uint64_t bias[2];	/* d's bias word after each run */
	unsigned int after[2];	/* and the run that earns it */
};

static void *
take_turns(void *arg)
{
	struct turns *t = arg;
	unsigned int run, i;

	t->d = own_pool(&t->tid);
	__atomic_store_n(&t->started, 1, __ATOMIC_RELEASE);
	for (run = 0; run < 2; run++) {
		while (__atomic_load_n(t->turn, __ATOMIC_ACQUIRE) !=
		    t->me + 2 * (int)run)
			if (__atomic_load_n(&t->quit, __ATOMIC_ACQUIRE))
				return NULL;
			else
				usleep(1000);
		for (i = 0; i < OM_BIAS_PAYS; i++) {
			void *volatile p = malloc(40);

			free(p);
		}
		t->bias[run] = __atomic_load_n(&t->d->bias, __ATOMIC_RELAXED);
		t->after[run] = t->d->bias_after;
		__atomic_add_fetch(t->turn, 1, __ATOMIC_RELEASE);
	}
	return NULL;
}

/* Two threads that share a pool but take turns at it, as more threads
 * than CPUs do, each earn the bias in turn, through a slot of its own:
 * a bias that served that long is taken back without doubling the run. */
START_TEST(bias_taking_turns)
{
	struct turns a = { 0 }, b = { 0 };
	pthread_t ta, tb;
	int turn = 0, i;

	unit_init();
	if (!mopts.bias_locks)
		return;
	a.turn = b.turn = &turn;
	a.me = 1;
	b.me = 2;
	ck_assert_int_eq(pthread_create(&ta, NULL, take_turns, &a), 0);
	while (!__atomic_load_n(&a.started, __ATOMIC_ACQUIRE))
		usleep(1000);
	/* Threads until one has a's pool.  Tids rise, but other processes
	 * take some in between: with 32 pools, 64 tries can miss. */
	for (i = 0; i < 100000; i++) {
		memset(&b, 0, sizeof(b));
		b.turn = &turn;
		b.me = 2;
		ck_assert_int_eq(pthread_create(&tb, NULL, take_turns, &b),
		    0);
		while (!__atomic_load_n(&b.started, __ATOMIC_ACQUIRE))
			usleep(1000);
		if (b.d == a.d)
			break;
		__atomic_store_n(&b.quit, 1, __ATOMIC_RELEASE);
		ck_assert_int_eq(pthread_join(tb, NULL), 0);
	}
	ck_assert_ptr_eq(b.d, a.d);
	/* No ck_assert until both are done: Check allocates, and this
	 * thread may share their pool. */
	__atomic_store_n(&turn, 1, __ATOMIC_RELEASE);
	while (__atomic_load_n(&turn, __ATOMIC_ACQUIRE) < 5)
		usleep(1000);
	ck_assert_int_eq(pthread_join(ta, NULL), 0);
	ck_assert_int_eq(pthread_join(tb, NULL), 0);
	for (i = 0; i < 2; i++) {
		ck_assert_int_eq(OM_BIAS_TID(a.bias[i]), (int)a.tid);
		ck_assert_int_eq(OM_BIAS_TID(b.bias[i]), (int)b.tid);
		ck_assert_uint_eq(a.after[i], OM_BIAS_FIRST);
		ck_assert_uint_eq(b.after[i], OM_BIAS_FIRST);
	}
	ck_assert_uint_eq(OM_BIAS_SLOT(a.bias[0]), OM_BIAS_SLOT(a.bias[1]));
	ck_assert_uint_eq(OM_BIAS_SLOT(b.bias[0]), OM_BIAS_SLOT(b.bias[1]));
	ck_assert_uint_ne(OM_BIAS_SLOT(a.bias[0]), OM_BIAS_SLOT(b.bias[0]));
}
END_TEST

/*
 * Threads that alternate long private runs (earning biases) with frees of
 * each other's blocks (revoking them) while every block's contents are
 * checked: a lapse of mutual exclusion shows as a corrupt block, a
 * corrupt bitmap (a false double free) or bytes in use that do not add up.
 */
#define CHURN_THREADS 4
#define CHURN_KEEP 64

static pthread_mutex_t swap_mtx = PTHREAD_MUTEX_INITIALIZER;
static unsigned char *swap[CHURN_THREADS][CHURN_KEEP];

static int
check_fill(const unsigned char *p, size_t n, unsigned char v)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (p[i] != v)
			return 0;
	return 1;
}

static void *
bias_churn(void *arg)
{
	unsigned int me = (unsigned int)(uintptr_t)arg, round, i;
	unsigned int next = (me + 1) % CHURN_THREADS;
	uint32_t x = 2463534242u * (me + 1);

	for (round = 0; round < 20; round++) {
		unsigned char *mine[CHURN_KEEP];

		for (i = 0; i < 3 * OM_BIAS_FIRST; i++) {
			size_t n;
			unsigned char *p;

			x ^= x << 13, x ^= x >> 17, x ^= x << 5;
			n = 1 + x % 3000;
			if ((p = malloc(n)) == NULL)
				return (void *)1;
			memset(p, (int)(n & 0xff), n);
			if (!check_fill(p, n, (unsigned char)(n & 0xff)))
				return (void *)2;
			free(p);
		}
		for (i = 0; i < CHURN_KEEP; i++) {
			if ((mine[i] = malloc(64 + i)) == NULL)
				return (void *)1;
			memset(mine[i], (int)(me + 1), 64 + i);
		}
		/* Hand ours over; free what the neighbour handed us. */
		pthread_mutex_lock(&swap_mtx);
		for (i = 0; i < CHURN_KEEP; i++) {
			unsigned char *q = swap[next][i];

			swap[next][i] = NULL;
			if (q != NULL && !check_fill(q, 64 + i,
			    (unsigned char)(next + 1))) {
				pthread_mutex_unlock(&swap_mtx);
				return (void *)3;
			}
			free(q);
			if (swap[me][i] == NULL) {
				swap[me][i] = mine[i];
				mine[i] = NULL;
			}
		}
		pthread_mutex_unlock(&swap_mtx);
		for (i = 0; i < CHURN_KEEP; i++)
			free(mine[i]);
	}
	return NULL;
}

static void *
idle_thread(void *arg)
{
	return arg;
}

static void
pool_totals(size_t *inuse, unsigned long *revoked)
{
	unsigned int i;

	*inuse = 0;
	*revoked = 0;
	for (i = 0; i < mopts.npools; i++) {
		*inuse += mopts.pools[i]->inuse;
		*revoked += mopts.pools[i]->lock_revoked;
	}
}

START_TEST(bias_exclusion)
{
	pthread_t t[CHURN_THREADS];
	unsigned int i, j;
	size_t inuse0, inuse1;
	unsigned long revoked0, revoked1;
	void *rc;

	unit_init();
	/* The C library allocates for a thread's first start; let it. */
	for (i = 0; i < CHURN_THREADS; i++)
		ck_assert_int_eq(pthread_create(&t[i], NULL, idle_thread,
		    NULL), 0);
	for (i = 0; i < CHURN_THREADS; i++)
		ck_assert_int_eq(pthread_join(t[i], NULL), 0);
	/* This thread earns its pool's bias first: with one pool, the
	 * churning threads may take it by turns too finely for any of
	 * them to earn one, and the first of them then revokes this. */
	for (i = 0; i < 2 * OM_BIAS_FIRST; i++)
		free(malloc(32));
	pool_totals(&inuse0, &revoked0);
	for (i = 0; i < CHURN_THREADS; i++)
		ck_assert_int_eq(pthread_create(&t[i], NULL, bias_churn,
		    (void *)(uintptr_t)i), 0);
	for (i = 0; i < CHURN_THREADS; i++) {
		ck_assert_int_eq(pthread_join(t[i], &rc), 0);
		ck_assert_ptr_null(rc);
	}
	for (i = 0; i < CHURN_THREADS; i++)
		for (j = 0; j < CHURN_KEEP; j++) {
			free(swap[i][j]);
			swap[i][j] = NULL;
		}
	pool_totals(&inuse1, &revoked1);
	ck_assert_uint_eq(inuse1, inuse0);
	if (mopts.bias_locks)
		ck_assert_uint_gt(revoked1, revoked0);
}
END_TEST

/*
 * Revocation against a thread inside its pool.  A takes its pool over and
 * over, staying inside a while each time; the test thread takes A's lock
 * over and over too, each time letting A earn the bias back after a few
 * takes, so that most of its takes revoke a bias A may be using at that
 * instant.  Each side flags itself inside and checks the other's flag.
 */
struct hammer {
	struct dir_info *d;
	int ready, stop;
	int a_in, main_in;
	unsigned long ops, overlaps;
};

static void
stay(void)
{
	volatile unsigned int k;

	for (k = 0; k < 300; k++)
		;
}

static void *
hammer_pool(void *arg)
{
	struct hammer *h = arg;

	h->d = mopts.pools[(unsigned long)syscall(SYS_gettid) &
	    mopts.pool_mask];
	__atomic_store_n(&h->ready, 1, __ATOMIC_RELEASE);
	while (!__atomic_load_n(&h->stop, __ATOMIC_ACQUIRE)) {
		void *volatile p;

		om_lock(h->d);
		__atomic_store_n(&h->a_in, 1, __ATOMIC_SEQ_CST);
		if (__atomic_load_n(&h->main_in, __ATOMIC_SEQ_CST))
			h->overlaps++;
		stay();
		if (__atomic_load_n(&h->main_in, __ATOMIC_SEQ_CST))
			h->overlaps++;
		__atomic_store_n(&h->a_in, 0, __ATOMIC_SEQ_CST);
		om_unlock(h->d);
		p = malloc(24);
		free(p);
		h->ops++;
	}
	return NULL;
}

START_TEST(bias_revoke_excludes)
{
	struct hammer h = { 0 };
	pthread_t t;
	unsigned int i, revokes = 0;
	unsigned long revoked0, overlaps = 0;
	struct timespec t0, t1;

	unit_init();
	if (!mopts.bias_locks)
		return;
	ck_assert_int_eq(pthread_create(&t, NULL, hammer_pool, &h), 0);
	while (!__atomic_load_n(&h.ready, __ATOMIC_ACQUIRE))
		usleep(1000);
	revoked0 = h.d->lock_revoked;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	/* Until enough takes revoked a bias, for 3 s at most. */
	for (i = 0; revokes < 2000; i++) {
		struct dir_info *d = h.d;

		om_lock(d);
		__atomic_store_n(&h.main_in, 1, __ATOMIC_SEQ_CST);
		if (__atomic_load_n(&h.a_in, __ATOMIC_SEQ_CST))
			overlaps++;
		stay();
		if (__atomic_load_n(&h.a_in, __ATOMIC_SEQ_CST))
			overlaps++;
		__atomic_store_n(&h.main_in, 0, __ATOMIC_SEQ_CST);
		d->bias_after = 4;
		revokes = (unsigned int)(d->lock_revoked - revoked0);
		om_unlock(d);
		stay();
		if (i % 256 == 0) {
			clock_gettime(CLOCK_MONOTONIC, &t1);
			if (t1.tv_sec - t0.tv_sec >= 3)
				break;
		}
	}
	__atomic_store_n(&h.stop, 1, __ATOMIC_RELEASE);
	ck_assert_int_eq(pthread_join(t, NULL), 0);
	ck_assert_uint_eq(overlaps + h.overlaps, 0);
	/* The test did what it is for: many takes revoked a bias. */
	ck_assert_uint_ge(revokes, 50);
	ck_assert_uint_gt(h.ops, 1000);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("pool");
	TCase *t = tcase_create("pool");

	/* Under U and F the churning threads' frees are system calls:
	 * seconds, past Check's default of 4 when run by hand. */
	tcase_set_timeout(t, 60);
	tcase_add_test(t, create);
	tcase_add_test(t, conceal_pool);
	tcase_add_test(t, random_offset);
	tcase_add_test(t, guard_pages);
	tcase_add_test(t, corrupt_canary);
	tcase_add_test(t, pool_array);
	tcase_add_test(t, pools_open_on_use);
	tcase_add_test(t, options_readonly);
	tcase_add_test(t, thread_pool);
	tcase_add_test(t, ownerless_pool_gives_back);
	tcase_add_test(t, remote_frees_batched);
	tcase_add_test(t, remote_queue_one_pool);
	tcase_add_test(t, remote_sized_frees_queued);
	tcase_add_test(t, fork_hooks_lock_all);
	tcase_add_test(t, fork_children_draw_apart);
	tcase_add_test(t, fork_children_draw_apart_without_getrandom);
	tcase_add_test(t, waiter_yields_on_holders_cpu);
	tcase_add_test(t, wake_that_finds_nobody);
	tcase_add_test(t, crowded_lock);
	tcase_add_test(t, fork_while_threads_allocate);
	tcase_add_test(t, bias_grant_revoke);
	tcase_add_test(t, bias_of_exited_thread);
	tcase_add_test(t, bias_after_dumps);
	tcase_add_test(t, bias_taking_turns);
	tcase_add_test(t, bias_exclusion);
	tcase_add_test(t, bias_revoke_excludes);
	suite_add_tcase(s, t);
	return unit_main(s);
}
