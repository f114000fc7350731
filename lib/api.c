/*
 * api.c - the entry points: pick the pool, lock, call the core, unlock,
 * set errno, honour X.  The only file that takes pool locks.
 *
 * Fast path of malloc: read the cached thread id (om_self), index the pool
 * array, trylock, om_chunk_alloc or om_region_alloc, unlock.  Fast path of
 * free: the same pool, one hash probe; a chunk of another pool is queued,
 * to be freed with others in one hold of its lock (queue, flush), and a
 * page region of another pool is found through the owner hint, or by
 * trying the others in turn (findpool), one lock at a time.
 *
 * om_self also records which pool the thread is inside, so that a call made
 * from a signal handler that interrupted the allocator is caught
 * ("recursive call") instead of deadlocking on the pool lock.
 */
#include "internal.h"
#include "omalloc.h"

#include <malloc.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/single_threaded.h>
#include <time.h>
#include <unistd.h>

#define CALLER() __builtin_return_address(0)

/* ------------------------------------------------------------------ */
/* Locking */

static OM_COLD OM_NOINLINE void
lock_slow(struct dir_info *d)
{
	struct timespec a, b;
	int timed = mopts.opt.dump;

	if (timed)
		clock_gettime(CLOCK_MONOTONIC, &a);
	om_mutex_wait(&d->mtx, om_owner());
	d->lock_contended++;
	if (timed) {
		clock_gettime(CLOCK_MONOTONIC, &b);
		d->lock_wait_ns += (unsigned long long)(b.tv_sec - a.tv_sec) *
		    1000000000ULL + (unsigned long long)b.tv_nsec -
		    (unsigned long long)a.tv_nsec;
	}
}

/*
 * The contended acquire: spin a little (the holder is usually about to
 * release); yield while the lock is one taken on this CPU (see struct
 * om_mutex); then sleep until woken, a sleeper for each sleep.  Sleeping
 * at once there, larson at 32 threads on two CPUs made twice the context
 * switches and ran 0.79 times as fast: the holder, once it runs again,
 * releases into a futex_wake, and the woken waiter waits for a CPU in
 * turn.  A lock taken on another CPU is left to its holder: yields there
 * are system calls spent spinning, and cut a producer and consumer of
 * page-sized blocks on two CPUs (xmalloc) to a quarter of its speed.
 */
void
om_mutex_wait(struct om_mutex *m, int owner)
{
	long nap = OM_MUTEX_NAP_NS;
	int i, v, cpu, woken;

	for (i = 0; i < 200; i++) {
		OM_CPU_RELAX();
		if (__atomic_load_n(&m->w, __ATOMIC_RELAXED) == 0 &&
		    om_mutex_trylock(m, owner))
			return;
	}
	for (i = 0; i < OM_MUTEX_YIELDS; i++) {
		cpu = om_cpu();
		if (cpu < 0 || __atomic_load_n(&m->w, __ATOMIC_RELAXED) == 0 ||
		    __atomic_load_n(&m->cpu, __ATOMIC_RELAXED) != cpu)
			break;
		sched_yield();
		if (__atomic_load_n(&m->w, __ATOMIC_RELAXED) == 0 &&
		    om_mutex_trylock(m, owner))
			return;
	}
	while (!om_mutex_trylock(m, owner)) {
		/* Counted before w is read again, so that either the
		 * release that follows sees the count or the futex sees
		 * w changed. */
		__atomic_fetch_add(&m->sleepers, 1, __ATOMIC_SEQ_CST);
		woken = 0;
		if ((v = __atomic_load_n(&m->w, __ATOMIC_RELAXED)) != 0) {
			woken = om_os_futex_wait(&m->w, v, nap);
			if (nap < OM_MUTEX_NAP_MAX_NS)
				nap *= 2;
		}
		__atomic_fetch_sub(&m->sleepers, 1, __ATOMIC_RELAXED);
		/* The woken sleeper is running: the next release may wake
		 * another.  (One that woke on its timeout leaves the flag
		 * to the sleeper a release did wake.) */
		if (woken)
			__atomic_store_n(&m->waking, 0, __ATOMIC_RELAXED);
	}
}

/* Wake a sleeper for om_mutex_unlock, kept out of line so that the
 * release inlined into every entry point stays a store and two loads. */
OM_COLD OM_NOINLINE void
om_mutex_wake(struct om_mutex *m)
{
	__atomic_store_n(&m->waking, 1, __ATOMIC_RELAXED);
	if (!om_os_futex_wake(&m->w))
		__atomic_store_n(&m->waking, 0, __ATOMIC_RELAXED);
}

/* A thread that does not hold d's bias took w: count the run that earns
 * it, or take back the bias another thread holds (which makes the next
 * bias cost a longer run, unless admin: statistics and trims visit every
 * pool, which says nothing of who shares it). */
static OM_COLD OM_NOINLINE void
lock_unbiased(struct dir_info *d, int owner, int admin)
{
	if (d->bias != 0) {
		if (OM_BIAS_TID(d->bias) != owner)
			om_pool_bias_revoke(d, 0, !admin);
	} else if (d->bias_cand != owner) {
		d->bias_cand = owner;
		d->bias_run = 0;
	} else if (++d->bias_run >= d->bias_after)
		om_pool_bias_grant(d, owner);
}

/*
 * Take d's lock.  Like OpenBSD, a process that has never had a second
 * thread (glibc's __libc_single_threaded) takes it without an atomic
 * instruction: nobody can contend, and the flag only changes in
 * pthread_create, never while this thread is inside the allocator.  A
 * thread that holds d's bias (see internal.h) needs no atomic either: it
 * announces itself in bias_in and checks, after that store, that w is
 * free and the bias still its own.  Everyone else takes w.  The thread
 * marks itself busy in d first, so that a signal handler entering the
 * allocator on this thread is caught.
 */
OM_INLINE void
lock_as(struct dir_info *d, int admin)
{
	int owner = om_owner();
	uint64_t busy = (uint32_t)om_self | (uint64_t)(d->index + 1) << 32;
	uint64_t bias;

	if (__libc_single_threaded && d->mtx.w == 0) {
		om_self = busy;
		d->mtx.w = owner;
		goto plain;
	}
	bias = __atomic_load_n(&d->bias, __ATOMIC_RELAXED);
	if (OM_BIAS_TID(bias) == owner) {
		int *in = OM_BIAS_FLAG(d, bias);

		/* Busy, and marked as holding through the bias, before the
		 * announcement: a signal handler must not enter d now. */
		om_self = busy | bias;
		__atomic_signal_fence(__ATOMIC_SEQ_CST);
		__atomic_store_n(in, 1, __ATOMIC_RELAXED);
		__atomic_signal_fence(__ATOMIC_SEQ_CST);
		if (OM_LIKELY(__atomic_load_n(&d->mtx.w,
		    __ATOMIC_RELAXED) == 0 && __atomic_load_n(&d->bias,
		    __ATOMIC_RELAXED) == bias)) {
			__atomic_signal_fence(__ATOMIC_SEQ_CST);
			d->lock_biased++;
			om_pool_check(d);
			return;
		}
		__atomic_store_n(in, 0, __ATOMIC_RELEASE);
	}
	om_self = busy;
	if (OM_UNLIKELY(!om_mutex_trylock(&d->mtx, owner)))
		lock_slow(d);
	if (OM_UNLIKELY(d->bias_cand != owner ||
	    ++d->bias_run >= d->bias_after || d->bias != 0))
		lock_unbiased(d, owner, admin);
plain:
	d->lock_plain++;
	om_pool_check(d);
}

OM_INLINE void
lock(struct dir_info *d)
{
	lock_as(d, 0);
}

/* The lock taken by a visit of every pool: a dump, a trim, statistics. */
OM_INLINE void
lock_admin(struct dir_info *d)
{
	lock_as(d, 1);
}

OM_INLINE void
release_lock(struct dir_info *d)
{
	if (om_self >> OM_BIAS_SHIFT)
		__atomic_store_n(OM_BIAS_FLAG(d, om_self), 0,
		    __ATOMIC_RELEASE);
	else if (__libc_single_threaded)
		d->mtx.w = 0;
	else
		om_mutex_unlock(&d->mtx);
	om_self = (uint32_t)om_self;
}

/* Drop the lock, then give back the ranges evicted while it was held: to
 * the depot where it takes them, else to the kernel, in one batch. */
static OM_NOINLINE void
unlock_and_unmap(struct dir_info *d)
{
	struct om_span s[2 * OM_PENDING], gone[OM_PENDING];
	unsigned int i, n = d->npending, nu = 0, ng = 0;
	const char *func = d->func;

	memcpy(s, d->pending, n * sizeof(s[0]));
	d->npending = 0;
	release_lock(d);
	/* Still inside the allocator, now perhaps holding the depot lock: a
	 * signal handler that calls it here is caught as a recursive call
	 * rather than left waiting for a lock its own thread holds. */
	om_self |= (uint64_t)(d->index + 1) << 32;
	for (i = 0; i < n; i++) {
		struct om_cache_entry out;

		if (s[i].offer.npages == 0) {
			/* Never offered. */
			s[nu++] = s[i];
			continue;
		}
		if (!om_cache_depot_offer(&s[i].offer, &out)) {
			/* Turned away. */
			om_cache_check_leaving(func, &s[i].offer);
			s[nu++] = s[i];
		}
		if (out.npages != 0) {
			/* Given up to make room, taken or not: over its
			 * limit, the depot may give up a run and still turn
			 * the offered one away. */
			om_cache_check_leaving(func, &out);
			gone[ng++] = (struct om_span){ .p = out.p,
			    .len = (size_t)out.npages << OM_PAGE_SHIFT };
		}
	}
	for (i = 0; i < ng; i++)
		s[nu++] = gone[i];
	om_os_unmap_spans(s, nu);
	om_self = (uint32_t)om_self;
}

OM_INLINE void
unlock(struct dir_info *d)
{
	if (OM_UNLIKELY(d->npending != 0))
		unlock_and_unmap(d);
	else
		release_lock(d);
}

void
om_lock(struct dir_info *d)
{
	lock_admin(d);
}

void
om_unlock(struct dir_info *d)
{
	unlock(d);
}

/* ------------------------------------------------------------------ */
/* Entry */

static OM_COLD OM_NOINLINE void
recursion(const char *func)
{
	om_fatal_in(func, "recursive call", NULL);
}

/* The caller's pool, initialising on first use; NULL without memory. */
OM_INLINE struct dir_info *
enter(const char *func)
{
	uint64_t self = om_self;

	if (OM_UNLIKELY(OM_SELF_BUSY(self) != 0))
		recursion(func);
	if (OM_UNLIKELY(OM_SELF_TID(self) == 0)) {
		if (om_thread_init() != 0)
			return NULL;
		self = om_self;
	}
	return mopts.pools[OM_SELF_TID(self) & mopts.pool_mask];
}

static OM_COLD OM_NOINLINE void *
nomem(const char *func)
{
	/* A failure before the first allocation still honours X. */
	if (!__atomic_load_n(&om_ready, __ATOMIC_ACQUIRE) &&
	    OM_SELF_BUSY(om_self) == 0)
		om_thread_init();
	/* The options are read even when initialisation then fails for
	 * lack of memory; before that they are all zero. */
	if (mopts.opt.xmalloc)
		om_fatal_in(func, "out of memory", NULL);
	errno = ENOMEM;
	return NULL;
}

/*
 * Find the pool that owns p and return it locked, with p's region entry.
 * DESIGN.md's search: the caller's own pool first, then own+1, own+2, ...
 * and the conceal pool last, one lock at a time.  The owner hint lets the
 * common case skip straight to the pool where that search would end; the
 * full search runs only when the hint is stale or missing.  The owning
 * pool counts the lookup for the caller's pool (searches_from) and, when
 * it is not the caller's, the departure (left_from).
 */
OM_INLINE struct dir_info *
found(unsigned int own, struct dir_info *d)
{
	d->searches_from[own]++;
	if (d->index != own)
		d->left_from[own]++;
	return d;
}

/* The search, for the caller's pool own (its index: the pool may not be
 * open, see find_unopened). */
static OM_NOINLINE struct dir_info *
findpool_slow(unsigned int own, const void *p, const char *func,
    struct region_info **rp)
{
	unsigned int i;
	struct dir_info *d;

	for (i = 0; i <= mopts.npools; i++) {
		d = om_pool_if_open(i < mopts.npools ?
		    (own + i) & mopts.pool_mask : mopts.npools);
		if (d == NULL)
			continue;
		lock(d);
		d->func = func;
		if ((*rp = om_region_find(d, p)) != NULL)
			return found(own, d);
		unlock(d);
	}
	om_fatal_in(func, "bogus pointer (double free?)", p);
}

/* A chunk another pool's thread allocated, most likely written last on
 * another CPU: ask for its other junk lines too (free() asked for the
 * first) before the lock, or while it waits in the queue. */
OM_INLINE void
prefetch_junk(const void *p, unsigned int hint)
{
	unsigned int b = hint >> OM_HINT_BUCKET_SHIFT;

	if (b != 0 && b <= OM_NBUCKETS && mopts.opt.junk != 0) {
		const uint16_t *o = mopts.junk_off[b - 1];

		__builtin_prefetch((const char *)p + o[1], 1, 3);
		__builtin_prefetch((const char *)p + o[2], 1, 3);
		__builtin_prefetch((const char *)p + o[3], 1, 3);
	}
}

/* d, locked, if p is d's, else the search's answer, for the caller's
 * pool own. */
OM_INLINE struct dir_info *
lookup_in(struct dir_info *d, unsigned int own, const void *p,
    const char *func, struct region_info **rp)
{
	lock(d);
	d->func = func;
	if (OM_LIKELY((*rp = om_region_lookup(d, p)) != NULL))
		return found(own, d);
	unlock(d);
	return findpool_slow(own, p, func, rp);
}

OM_INLINE struct dir_info *
findpool(struct dir_info *own, unsigned int hint, const void *p,
    const char *func, struct region_info **rp)
{
	unsigned int h = hint & OM_HINT_POOL;
	struct dir_info *d = own;

	if (OM_UNLIKELY(h != 0 && h - 1 != own->index) &&
	    (h - 1 < mopts.npools || h - 1 == OM_MAX_POOLS)) {
		unsigned int j = h - 1 < mopts.npools ? h - 1 : mopts.npools;

		prefetch_junk(p, hint);

		/* Only an open pool can have set the hint. */
		if (om_pool_used(j))
			d = om_pool_at(j);
	}
	return lookup_in(d, own->index, p, func, rp);
}

/*
 * The caller's pool could not be opened for lack of memory.  Before the
 * heap is initialised nothing can be ours; after, the pointer is looked
 * for in the pools that are open, its own pool (closed, so owning
 * nothing) counted as where the search started: a free must not fail.
 */
static OM_COLD OM_NOINLINE struct dir_info *
find_unopened(const char *func, const void *p, struct region_info **rp)
{
	if (!__atomic_load_n(&om_ready, __ATOMIC_ACQUIRE))
		om_fatal_in(func, "bogus pointer (double free?)", p);
	return findpool_slow((unsigned int)om_os_gettid() & mopts.pool_mask,
	    p, func, rp);
}

static void flush(unsigned int own);

/* The pool that owns a pointer we are asked to resize or free, locked,
 * with the pointer's region entry in *rp, for a thread of pool own that
 * read p's owner hint.  The thread's queued frees are made first: p may
 * be one of them. */
OM_INLINE struct dir_info *
find_hinted(struct dir_info *own, unsigned int hint, const char *func,
    const void *p, struct region_info **rp)
{
	if (OM_UNLIKELY(om_rq.n != 0))
		flush(own->index);
	return findpool(own, hint, p, func, rp);
}

OM_INLINE struct dir_info *
find_ptr(const char *func, const void *p, struct region_info **rp)
{
	struct dir_info *own = enter(func);

	if (OM_UNLIKELY(own == NULL))
		return find_unopened(func, p, rp);
	return find_hinted(own, om_region_owner_hint(p), func, p, rp);
}

/* ------------------------------------------------------------------ */
/* Core operations, pool locked */

/* sz bytes; flags as om_region_alloc's (zero is OM_ALLOC_ZERO). */
static void *
alloc(struct dir_info *d, size_t sz, int flags, void *f)
{
	void *p;

	if (OM_LIKELY(sz <= OM_MAXCHUNK)) {
		p = om_chunk_alloc(d, sz, sz == 0 ? 0 : om_bucket_of(sz), f);
		if ((flags & OM_ALLOC_ZERO) && p != NULL && sz != 0)
			memset(p, 0, sz);
		return p;
	}
	if (OM_UNLIKELY(sz > PTRDIFF_MAX))
		return NULL;
	return om_region_alloc(d, sz, 0, flags, f);
}

static void
release(struct dir_info *d, struct region_info *r, void *p, int clear,
    size_t clearsz)
{
	if (OM_REGION_IS_CHUNK(r))
		om_chunk_free(d, r, p, clear, clearsz);
	else
		om_region_free(d, r, p, clear, clearsz);
}

/* The size the program may rely on: exact under C, else the block's. */
static size_t
recorded_size(struct dir_info *d, struct region_info *r, void *p)
{
	if (OM_REGION_IS_CHUNK(r))
		return om_chunk_usable(d, r, p);
	om_region_check(d, r, p);
	return mopts.opt.chunk_canaries ? r->size : om_region_usable(r);
}

/* Whether a free may claim sz bytes of p (freezero, the sized frees): a
 * chunk already free passes, for release to report the double free. */
static int
size_claim_ok(struct dir_info *d, struct region_info *r, void *p, size_t sz)
{
	if (OM_REGION_IS_CHUNK(r))
		return om_chunk_size_ok(d, r, p, sz);
	return sz <= recorded_size(d, r, p);
}

/*
 * Move p to a new block of newsz bytes in d.  NULL (p intact) on failure.
 * A copy into page runs is made with the lock released: it can take
 * longer than everything else realloc does (each page written for the
 * first time faults, 11-16 us here), and the pool's other threads would
 * wait all that time.  Both blocks are ours meanwhile, so nothing else
 * changes them; a free of p by another thread in that time is the
 * program's race, and finds p still allocated: realloc then reports p
 * as it would a pointer freed twice.
 */
static void *
move(struct dir_info *d, void *p, size_t oldsz, size_t newsz, int zero,
    void *f, size_t clearsz)
{
	struct region_info *r;
	const char *func = d->func;
	size_t len = oldsz < newsz ? oldsz : newsz;
	int flags = zero, unlocked = newsz > OM_MAXCHUNK;
	uintptr_t from = 0;
	void *q;

	if (newsz > oldsz)
		flags |= om_cache_grow_flags(d, (uintptr_t)p, oldsz, newsz);
	if ((q = alloc(d, newsz, flags, f)) == NULL)
		return NULL;
	if (unlocked)
		unlock(d);
	memcpy(q, p, len);
	if (unlocked) {
		lock(d);
		d->func = func;
	}
	/* alloc may have grown the table: look p up again. */
	if (OM_UNLIKELY((r = om_region_find(d, p)) == NULL))
		om_fatal(d, "bogus pointer (double free?)", p);
	if (!OM_REGION_IS_CHUNK(r) && ((uintptr_t)p & OM_PAGE_MASK) == 0)
		from = (uintptr_t)p;
	release(d, r, p, clearsz > 0, clearsz);
	/* A block grown into pages of its own, from a chunk or from pages
	 * (see om_cache_get_grown). */
	if (newsz > oldsz && newsz >= OM_PAGE_SIZE &&
	    ((uintptr_t)q & OM_PAGE_MASK) == 0)
		om_cache_grew(d, from, OM_PAGEROUND(oldsz) >> OM_PAGE_SHIFT,
		    (uintptr_t)q, OM_PAGEROUND(newsz) >> OM_PAGE_SHIFT);
	return q;
}

/*
 * Give back every page the pools and the depot keep for reuse (cached
 * runs, reserves, the delayed chunks' pages); returns the pages.  No pool
 * lock held: each is taken in turn.
 */
static size_t
trim_all(const char *func)
{
	unsigned int i;
	size_t pages = 0;

	om_rq_flush();
	for (i = 0; i <= mopts.npools; i++) {
		struct dir_info *d = om_pool_if_open(i);

		if (d == NULL)
			continue;
		lock_admin(d);
		d->func = func;
		om_chunk_flush_delayed(d);
		pages += om_cache_trim(d);
		unlock(d);
	}
	pages += om_cache_depot_trim();
	om_os_trim_kept();
	return pages;
}

/*
 * A pool none of whose threads is alive gives back what it keeps for them
 * to reuse: the delayed ring, the empty chunk page of each size class and
 * the page cache, to the depot where the pools in use take it.  Pool
 * locked; returns it unlocked.
 */
static OM_COLD OM_NOINLINE void
retire(struct dir_info *d)
{
	om_chunk_flush_delayed(d);
	om_chunk_release_empty(d);
	while (om_cache_give_back(d)) {
		unlock(d);
		lock_admin(d);
	}
	unlock(d);
}

/*
 * The destructor of mopts.exit_key, run as a thread ends.  The last
 * thread of a pool leaves it ownerless, as threads come and go: the
 * blocks it still holds are freed later by other threads, and what it
 * keeps for reuse would wait for a thread that may never come while the
 * pools in use map new pages.  So it retires now, and from then on its
 * chunk pages go as they empty (free_slot) and the pool retires again
 * once its last block is freed (unlock_freed).  A thread that comes
 * later counts itself in and finds an empty pool, ready.
 */
void
om_thread_exit(void *arg)
{
	uint64_t self = om_self;
	struct dir_info *d;

	(void)arg;
	if (OM_SELF_TID(self) == 0 || OM_SELF_BUSY(self) != 0)
		return;
	/* The queued frees are made now, and whatever a later destructor
	 * frees goes straight to its pool. */
	if (om_rq.state == OM_RQ_LISTED) {
		om_rq_flush();
		om_self |= (uint64_t)OM_SELF_INIT << 32;
		om_pool_rq_unlist(&om_rq);
		om_self = self;
	}
	om_rq.state = OM_RQ_CLOSED;
	d = mopts.pools[OM_SELF_TID(self) & mopts.pool_mask];
	if (__atomic_sub_fetch(&d->threads, 1, __ATOMIC_RELAXED) != 0)
		return;
	lock_admin(d);
	d->func = "pthread_exit";
	retire(d);
}

/* Unlock after a free, which may have been the last block of an
 * ownerless pool. */
OM_INLINE void
unlock_freed(struct dir_info *d)
{
	if (OM_UNLIKELY(om_pool_ownerless(d)) && d->inuse == 0)
		retire(d);
	else
		unlock(d);
}

/*
 * Frees into other pools, queued.  When a thread frees a chunk that the
 * owner hint places in another pool, free does not take that pool's lock
 * for it: the pointer joins the thread's queue (om_rq), and the queue is
 * freed in one hold of the lock once it holds OM_RQ_LEN pointers, or the
 * thread frees a chunk of yet another pool, or calls realloc, freezero,
 * recallocarray or malloc_usable_size, trims, dumps or exits.
 * A producer thread whose blocks a consumer frees then shares its pool's
 * lock, and the cache lines the pool's metadata sits in, once per batch
 * instead of once per block.
 *
 * Every check of free is made, under the owner's lock as before, only
 * later: a bogus pointer, a double free across threads, a bad canary is
 * reported when the queue is emptied, naming free (or the sized free
 * that queued it, see sized_free) and the pointer; junk
 * is written then too.  So is a second free of a pointer still queued:
 * the first of the two makes the second a double free.  Only chunks are
 * queued (the hint says which pages hold them): a page region is freed
 * at once.  F turns the queue off.
 */
static const char *const rq_func[] = {
	[OM_RQ_FREE] = "free",
	[OM_RQ_SIZED] = "free_sized",
	[OM_RQ_ALIGNED_SIZED] = "free_aligned_sized",
};

static OM_NOINLINE void
flush(unsigned int own)
{
	void *s[OM_RQ_LEN], *p;
	unsigned int i, n;
	struct dir_info *d, *e;
	struct region_info *r;
	const char *func;

	/* Busy from here on: a signal handler that frees is caught rather
	 * than let change the queue under us.  Emptied before the lock, so
	 * that a fork meanwhile leaves no pointer its child would free
	 * twice. */
	om_self |= (uint64_t)(own + 1) << 32;
	n = om_rq.n;
	d = mopts.pools[om_rq.pool];
	memcpy(s, om_rq.p, n * sizeof(s[0]));
	__atomic_store_n(&om_rq.n, 0, __ATOMIC_RELEASE);
	if (n == 0) {
		om_self = (uint32_t)om_self;
		return;
	}
	lock(d);
	for (i = 0; i < n; i++) {
		p = OM_RQ_PTR(s[i]);
		func = rq_func[(uintptr_t)s[i] & OM_RQ_TAGS];
		d->func = func;
		if (OM_UNLIKELY((r = om_region_lookup(d, p)) == NULL)) {
			/* The hint was stale: the search free makes. */
			unlock(d);
			e = findpool_slow(own, p, func, &r);
			release(e, r, p, 0, 0);
			unlock_freed(e);
			lock(d);
			continue;
		}
		found(own, d);
		release(d, r, p, 0, 0);
	}
	unlock_freed(d);
}

/* Queue p, a chunk of the pool its owner hint names (see queues), freed
 * by the function tag says (see flush).  Its junk lines are asked for
 * first, to arrive while it waits. */
static OM_NOINLINE void
queue(struct dir_info *own, unsigned int hint, void *p, unsigned int tag)
{
	unsigned int j = (hint & OM_HINT_POOL) - 1, n;

	prefetch_junk(p, hint);
	if (OM_UNLIKELY(om_rq.state != OM_RQ_LISTED)) {
		/* After the thread's exit hook: nothing would empty it. */
		if (om_rq.state == OM_RQ_CLOSED) {
			struct region_info *r;
			struct dir_info *d = findpool(own, hint, p,
			    rq_func[tag], &r);

			release(d, r, p, 0, 0);
			unlock_freed(d);
			return;
		}
		om_self |= (uint64_t)(own->index + 1) << 32;
		om_pool_rq_list(&om_rq);
		om_self = (uint32_t)om_self;
	}
	/* Busy while the queue changes: a signal handler's free would
	 * otherwise change it under us.  Room is made first, for a queue
	 * of another pool's chunks, or one left full. */
	for (;;) {
		om_self |= (uint64_t)(own->index + 1) << 32;
		n = om_rq.n;
		if (n < OM_RQ_LEN && (n == 0 || om_rq.pool == j))
			break;
		om_self = (uint32_t)om_self;
		flush(own->index);
	}
	__atomic_store_n(&om_rq.p[n], (void *)((uintptr_t)p | tag),
	    __ATOMIC_RELAXED);
	om_rq.pool = j;
	__atomic_store_n(&om_rq.n, n + 1, __ATOMIC_RELEASE);
	om_self = (uint32_t)om_self;
	if (n + 1 == OM_RQ_LEN)
		flush(own->index);
}

/* Whether a free of p may join the queue: a chunk of another pool, as
 * the hint says, 16-byte aligned as every chunk is, with the queue on. */
OM_INLINE int
queues(const struct dir_info *own, unsigned int hint, const void *p)
{
	unsigned int h = (hint & OM_HINT_POOL) - 1;

	return OM_UNLIKELY(h != own->index) && h < mopts.npools &&
	    (hint >> OM_HINT_BUCKET_SHIFT) != 0 &&
	    ((uintptr_t)p & OM_RQ_TAGS) == 0 && mopts.batch_frees;
}

/* Empty the calling thread's queue, if it is not inside the allocator. */
void
om_rq_flush(void)
{
	uint64_t self = om_self;

	if (om_rq.n != 0 && OM_SELF_BUSY(self) == 0 &&
	    OM_SELF_TID(self) != 0)
		flush(OM_SELF_TID(self) & mopts.pool_mask);
}

/* ------------------------------------------------------------------ */
/* The standard functions */

static void *
alloc_in(struct dir_info *d, size_t sz, int zero, void *f, const char *func)
{
	void *p;

	lock(d);
	d->func = func;
	p = alloc(d, sz, zero, f);
	unlock(d);
	return p;
}

/*
 * The kernel refused memory.  What the pools keep for reuse may be what
 * stands in the way (an address-space or commit limit): give it all back
 * and try once more before failing.
 */
static OM_COLD OM_NOINLINE void *
alloc_again(struct dir_info *d, size_t sz, int zero, void *f,
    const char *func)
{
	void *p = NULL;

	if (sz <= PTRDIFF_MAX && trim_all(func) > 0)
		p = alloc_in(d, sz, zero, f, func);
	return p != NULL ? p : nomem(func);
}

static void *
omalloc(size_t sz, int zero, void *f, const char *func)
{
	struct dir_info *d = enter(func);
	void *p;

	if (OM_UNLIKELY(d == NULL))
		return nomem(func);
	p = alloc_in(d, sz, zero, f, func);
	if (OM_UNLIKELY(p == NULL))
		return alloc_again(d, sz, zero, f, func);
	return p;
}

OM_EXPORT void *
malloc(size_t sz)
{
	return omalloc(sz, 0, CALLER(), "malloc");
}

OM_EXPORT void *
calloc(size_t n, size_t sz)
{
	size_t total;

	if (om_mul(n, sz, &total))
		return nomem("calloc");
	return omalloc(total, 1, CALLER(), "calloc");
}

/* findpool for free, out of line: p's owner hint names another pool, or
 * none, and p may not be queued. */
static OM_NOINLINE struct dir_info *
find_other(struct dir_info *own, unsigned int hint, const void *p,
    struct region_info **rp)
{
	return findpool(own, hint, p, "free", rp);
}

OM_EXPORT void
free(void *p)
{
	struct dir_info *own, *d;
	struct region_info *r;
	unsigned int hint;

	if (p == NULL)
		return;
	/*
	 * The block's first line, asked for now: free writes junk there,
	 * and when another CPU wrote it last (a block freed by a thread
	 * other than its allocator's), fetching it takes longer than the
	 * lookup and the lock that come first.  Those junk stores wait in
	 * the store buffer until it arrives, and the next free's lock (an
	 * atomic instruction, which waits for every earlier store) waits for
	 * them.  A prefetch never faults, whatever p is, but it is not free
	 * where nothing is mapped: a block the program never wrote can sit
	 * in a page the kernel has not filled yet, and each prefetch there
	 * walks the page tables in vain (50-140 ns here).  Without junk
	 * nothing here writes the block, so nothing is asked for.
	 */
	if (OM_LIKELY(mopts.opt.junk != 0))
		__builtin_prefetch(p, 1, 3);
	own = enter("free");
	if (OM_UNLIKELY(own == NULL))
		d = find_unopened("free", p, &r);
	else {
		hint = om_region_owner_hint(p);
		if (OM_LIKELY((hint & OM_HINT_POOL) - 1 == own->index))
			d = lookup_in(own, own->index, p, "free", &r);
		else if (queues(own, hint, p)) {
			queue(own, hint, p, OM_RQ_FREE);
			return;
		} else
			d = find_other(own, hint, p, &r);
	}
	release(d, r, p, 0, 0);
	unlock_freed(d);
}

void cfree(void *p);

OM_EXPORT void
cfree(void *p)
{
	free(p);
}

static void *
orealloc(void *p, size_t sz, void *f, const char *func)
{
	struct dir_info *d;
	struct region_info *r;
	size_t oldsz;
	void *q;
	int tries = 0;

	if (p == NULL)
		return omalloc(sz, 0, f, func);
again:
	d = find_ptr(func, p, &r);
	if (OM_UNLIKELY(sz == 0)) {
		/* Free p and return a unique zero-size object: NULL always
		 * means failure. */
		release(d, r, p, 0, 0);
		q = alloc(d, 0, 0, f);
		unlock(d);
		return q != NULL ? q : nomem(func);
	}
	if (OM_UNLIKELY(sz > PTRDIFF_MAX)) {
		unlock(d);
		return nomem(func);
	}
	if (OM_REGION_IS_CHUNK(r)) {
		if (om_chunk_resize(d, r, p, sz)) {
			unlock(d);
			return p;
		}
	} else if ((q = om_region_realloc(d, r, p, sz)) != NULL) {
		unlock(d);
		return q;
	}
	oldsz = recorded_size(d, r, p);
	q = move(d, p, oldsz, sz, 0, f, d->conceal ? oldsz : 0);
	unlock(d);
	/* As alloc_again: give back what is kept, then try once more (p is
	 * untouched, and the pool that owns it is found anew). */
	if (OM_UNLIKELY(q == NULL) && tries++ == 0 && trim_all(func) > 0)
		goto again;
	return q != NULL ? q : nomem(func);
}

OM_EXPORT void *
realloc(void *p, size_t sz)
{
	return orealloc(p, sz, CALLER(), "realloc");
}

OM_EXPORT void *
reallocarray(void *p, size_t n, size_t sz)
{
	size_t total;

	if (om_mul(n, sz, &total))
		return nomem("reallocarray");
	return orealloc(p, total, CALLER(), "reallocarray");
}

OM_EXPORT void *
recallocarray(void *p, size_t oldn, size_t newn, size_t sz)
{
	struct dir_info *d;
	struct region_info *r;
	size_t oldsz, newsz, rec;
	void *q;

	if (p == NULL) {
		if (om_mul(newn, sz, &newsz))
			return nomem("recallocarray");
		return omalloc(newsz, 1, CALLER(), "recallocarray");
	}
	if (om_mul(oldn, sz, &oldsz)) {
		errno = EINVAL;
		return NULL;
	}
	if (om_mul(newn, sz, &newsz) || newsz > PTRDIFF_MAX)
		return nomem("recallocarray");
	d = find_ptr("recallocarray", p, &r);
	rec = recorded_size(d, r, p);
	/* As OpenBSD: never more than recorded, exact under C, and for page
	 * regions (whose size is always exact) not under half of it. */
	if (oldsz > rec || (mopts.opt.chunk_canaries && oldsz != rec) ||
	    (!OM_REGION_IS_CHUNK(r) && oldsz < r->size / 2))
		om_fatal(d, "recorded size inconsistent with old size", p);
	if (newsz <= oldsz && newsz > oldsz / 2 && !d->conceal &&
	    !mopts.opt.realloc_move && newsz != 0) {
		/* Clear what is given up first: a shrinking region hands its
		 * tail pages to the cache.  If the block moves after all, only
		 * the first newsz bytes are copied. */
		om_fill((char *)p + newsz, 0, oldsz - newsz);
		if (OM_REGION_IS_CHUNK(r)) {
			if (om_chunk_resize(d, r, p, newsz)) {
				unlock(d);
				return p;
			}
		} else if ((q = om_region_realloc(d, r, p, newsz)) != NULL) {
			/* Moved up within its page (a shifted region): the
			 * bytes it left behind it are cleared too. */
			om_fill(p, 0, (size_t)((char *)q - (char *)p));
			unlock(d);
			return q;
		}
	}
	q = move(d, p, oldsz, newsz, 1, CALLER(), oldsz);
	unlock(d);
	return q != NULL ? q : nomem("recallocarray");
}

OM_EXPORT void
freezero(void *p, size_t sz)
{
	struct dir_info *d;
	struct region_info *r;

	if (p == NULL)
		return;
	d = find_ptr("freezero", p, &r);
	if (!size_claim_ok(d, r, p, sz))
		om_fatal(d, "recorded size < freezero size", p);
	release(d, r, p, 1, sz);
	unlock_freed(d);
}

/*
 * C23's sized frees: free(p), told the size p was allocated with and, for
 * free_aligned_sized, the alignment aligned_alloc was given (align 1 for
 * free_sized).  As freezero does, a size larger than the block's recorded
 * one (exact under C, else its slot or region) aborts, and so does a
 * pointer that is not aligned as claimed; a chunk already free is left to
 * release, which reports the double free (unless the alignment is wrong
 * too).
 *
 * Those checks are made under the owner's lock, with one exception: a
 * chunk of another pool joins the queue, as free's do, when the owner
 * hint's size class already shows that the size fits its slot and the
 * pointer has the alignment claimed.  The hint of a live chunk's page is
 * its own (set when the page was registered, before the malloc that
 * returned p), and a pointer that is not a live chunk is reported when
 * the queue is emptied, as free's are.  Under C the check is against the
 * exact request, which only the owner's record has.
 */
static void
sized_free(unsigned int tag, void *p, size_t align, size_t sz,
    const char *sizewhy)
{
	const char *func = rq_func[tag];
	struct dir_info *own, *d;
	struct region_info *r;
	unsigned int hint, b;
	int misaligned = ((align & (align - 1)) |
	    ((uintptr_t)p & (align - 1))) != 0;

	if (p == NULL)
		return;
	own = enter(func);
	if (OM_UNLIKELY(own == NULL))
		d = find_unopened(func, p, &r);
	else {
		hint = om_region_owner_hint(p);
		/* b - 1 is the bucket; malloc(0)'s, bucket 0, is not queued. */
		b = hint >> OM_HINT_BUCKET_SHIFT;
		if (queues(own, hint, p) && b >= 2 && b <= OM_NBUCKETS &&
		    sz <= om_bucket_size[b - 1] && !misaligned &&
		    !mopts.opt.chunk_canaries) {
			queue(own, hint, p, tag);
			return;
		}
		d = find_hinted(own, hint, func, p, &r);
	}
	if (!size_claim_ok(d, r, p, sz))
		om_fatal(d, sizewhy, p);
	if (misaligned)
		om_fatal(d, "alignment < free_aligned_sized alignment", p);
	release(d, r, p, 0, 0);
	unlock_freed(d);
}

OM_EXPORT void
free_sized(void *p, size_t sz)
{
	sized_free(OM_RQ_SIZED, p, 1, sz, "recorded size < free_sized size");
}

OM_EXPORT void
free_aligned_sized(void *p, size_t align, size_t sz)
{
	sized_free(OM_RQ_ALIGNED_SIZED, p, align, sz,
	    "recorded size < free_aligned_sized size");
}

static void *
memalign_in(struct dir_info *d, size_t align, size_t sz, void *f,
    const char *func)
{
	void *p;

	lock(d);
	d->func = func;
	if (sz <= OM_MAXCHUNK && align <= OM_MAXCHUNK) {
		/* Power-of-two slot sizes are aligned to themselves. */
		size_t s = sz > align ? sz : align;
		s = (size_t)1 << (64 - __builtin_clzll(s - 1));
		if (s <= OM_MAXCHUNK) {
			p = om_chunk_alloc(d, sz, om_bucket_of(s), f);
			goto done;
		}
	}
	p = om_region_alloc(d, sz, align, 0, f);
done:
	unlock(d);
	return p;
}

/* align: a power of two.  Returns NULL with errno set on failure. */
static void *
omemalign(size_t align, size_t sz, void *f, const char *func)
{
	struct dir_info *d;
	void *p;

	if (align <= OM_MINSIZE)
		return omalloc(sz, 0, f, func);
	if (sz > PTRDIFF_MAX)
		return nomem(func);
	d = enter(func);
	if (d == NULL)
		return nomem(func);
	p = memalign_in(d, align, sz, f, func);
	/* As alloc_again: give back what is kept, then try once more. */
	if (OM_UNLIKELY(p == NULL) && trim_all(func) > 0)
		p = memalign_in(d, align, sz, f, func);
	return p != NULL ? p : nomem(func);
}

OM_EXPORT int
posix_memalign(void **out, size_t align, size_t sz)
{
	int saved = errno;
	void *p;

	if (align < sizeof(void *) || (align & (align - 1)) != 0)
		return EINVAL;
	p = omemalign(align, sz, CALLER(), "posix_memalign");
	if (p == NULL) {
		int e = errno;
		errno = saved;
		return e;
	}
	*out = p;
	return 0;
}

OM_EXPORT void *
aligned_alloc(size_t align, size_t sz)
{
	if (align == 0 || (align & (align - 1)) != 0) {
		errno = EINVAL;
		return NULL;
	}
	return omemalign(align, sz, CALLER(), "aligned_alloc");
}

OM_EXPORT void *
memalign(size_t align, size_t sz)
{
	/* glibc: a non-power of two rounds up. */
	if (align > (size_t)1 << 62) {
		errno = EINVAL;
		return NULL;
	}
	if (align & (align - 1))
		align = (size_t)1 << (64 - __builtin_clzll(align));
	return omemalign(align, sz, CALLER(), "memalign");
}

OM_EXPORT void *
valloc(size_t sz)
{
	return omemalign(OM_PAGE_SIZE, sz, CALLER(), "valloc");
}

OM_EXPORT void *
pvalloc(size_t sz)
{
	size_t r;

	if (om_add(sz, OM_PAGE_MASK, &r))
		return nomem("pvalloc");
	r &= ~OM_PAGE_MASK;
	return omemalign(OM_PAGE_SIZE, r == 0 ? OM_PAGE_SIZE : r, CALLER(),
	    "pvalloc");
}

OM_EXPORT size_t
malloc_usable_size(void *p)
{
	struct dir_info *d;
	struct region_info *r;
	size_t n;

	if (p == NULL)
		return 0;
	d = find_ptr("malloc_usable_size", p, &r);
	n = recorded_size(d, r, p);
	unlock(d);
	return n;
}

/* ------------------------------------------------------------------ */
/* OpenBSD's extensions */

/* First use of the conceal pool; busy meanwhile, as in om_thread_init. */
static OM_COLD OM_NOINLINE int
conceal_open(void)
{
	uint64_t self = om_self;
	int rc;

	om_self = self | (uint64_t)OM_SELF_INIT << 32;
	rc = om_pool_open(mopts.npools);
	om_self = self;
	return rc;
}

static void *
conceal_alloc(size_t sz, int zero, void *f, const char *func)
{
	struct dir_info *d;
	void *p;

	if (enter(func) == NULL)
		return nomem(func);
	if (!om_pool_used(mopts.npools) && conceal_open() != 0)
		return nomem(func);
	d = mopts.conceal;
	lock(d);
	d->func = func;
	p = alloc(d, sz, zero, f);
	unlock(d);
	return p != NULL ? p : nomem(func);
}

OM_EXPORT void *
malloc_conceal(size_t sz)
{
	return conceal_alloc(sz, 0, CALLER(), "malloc_conceal");
}

OM_EXPORT void *
calloc_conceal(size_t n, size_t sz)
{
	size_t total;

	if (om_mul(n, sz, &total))
		return nomem("calloc_conceal");
	return conceal_alloc(total, 1, CALLER(), "calloc_conceal");
}

OM_EXPORT void
malloc_gdump(int fd)
{
	if (enter("malloc_gdump") == NULL)
		return;
	om_dump_fd(fd, 0);
}

OM_EXPORT const char *
omalloc_version(void)
{
	return OM_VERSION;
}

/* ------------------------------------------------------------------ */
/* glibc's extras */

struct totals {
	size_t mapped, inuse, cached, regions, cache_entries;
	unsigned long contended, locks;
	unsigned long searches[OM_MAX_POOLS + 1], other[OM_MAX_POOLS + 1];
};

static void
gather(struct totals *t)
{
	unsigned int i;

	memset(t, 0, sizeof(*t));
	if (!__atomic_load_n(&om_ready, __ATOMIC_ACQUIRE))
		return;
	for (i = 0; i <= mopts.npools; i++) {
		struct dir_info *d = om_pool_if_open(i);

		if (d == NULL)
			continue;
		lock_admin(d);
		t->mapped += d->mapped;
		t->inuse += d->inuse;
		t->cached += om_cache_held(d) << OM_PAGE_SHIFT;
		t->regions += d->regions_total - d->regions_free;
		t->cache_entries += om_cache_runs(d);
		t->contended += d->lock_contended;
		om_pool_add_searches(d, t->other, t->searches);
		t->locks += d->lock_plain + d->lock_biased;
		unlock(d);
	}
}

/*
 * mallinfo2 fields: arena = bytes mapped by all pools (data, metadata and
 * cache); ordblks = cached free-page runs; hblks = pages registered in the
 * region tables; uordblks = bytes in use (slot and page granular);
 * fordblks = bytes in the free-page caches; keepcost = what malloc_trim
 * would return.  The others are 0.
 */
OM_EXPORT struct mallinfo2
mallinfo2(void)
{
	struct mallinfo2 m;
	struct totals t;

	memset(&m, 0, sizeof(m));
	if (enter("mallinfo2") == NULL)
		return m;
	gather(&t);
	m.arena = t.mapped;
	m.ordblks = t.cache_entries;
	m.hblks = t.regions;
	m.uordblks = t.inuse;
	m.fordblks = t.cached;
	m.keepcost = t.cached;
	return m;
}

static int
clamp(size_t v)
{
	return v > (size_t)__INT_MAX__ ? __INT_MAX__ : (int)v;
}

OM_EXPORT struct mallinfo
mallinfo(void)
{
	struct mallinfo2 m2 = mallinfo2();
	struct mallinfo m;

	memset(&m, 0, sizeof(m));
	m.arena = clamp(m2.arena);
	m.ordblks = clamp(m2.ordblks);
	m.hblks = clamp(m2.hblks);
	m.uordblks = clamp(m2.uordblks);
	m.fordblks = clamp(m2.fordblks);
	m.keepcost = clamp(m2.keepcost);
	return m;
}

/* glibc's tunables are accepted and have no effect (1); others fail (0). */
OM_EXPORT int
mallopt(int param, int value)
{
	(void)value;
	switch (param) {
	case M_MXFAST:
	case M_TRIM_THRESHOLD:
	case M_TOP_PAD:
	case M_MMAP_THRESHOLD:
	case M_MMAP_MAX:
	case M_CHECK_ACTION:
	case M_PERTURB:
	case M_ARENA_TEST:
	case M_ARENA_MAX:
		return 1;
	default:
		return 0;
	}
}

/* Empty every delayed ring and page cache.  1 if memory was returned. */
OM_EXPORT int
malloc_trim(size_t pad)
{
	(void)pad;
	if (enter("malloc_trim") == NULL)
		return 0;
	return trim_all("malloc_trim") > 0;
}

OM_EXPORT void
malloc_stats(void)
{
	struct om_buf o = { .fd = STDERR_FILENO };
	struct totals t;

	if (enter("malloc_stats") == NULL)
		return;
	gather(&t);
	om_buf_printf(&o, "omalloc %s, %u pools\n", OM_VERSION, mopts.npools);
	om_buf_printf(&o, "system bytes     = %zu\n", t.mapped);
	om_buf_printf(&o, "in use bytes     = %zu\n", t.inuse);
	om_buf_printf(&o, "cached bytes     = %zu\n", t.cached);
	om_buf_printf(&o, "lock contended   = %lu/%lu\n", t.contended,
	    t.locks);
	om_buf_flush(&o);
}

OM_EXPORT int
malloc_info(int options, FILE *fp)
{
	struct dir_info snap;
	unsigned int i;
	struct totals t;

	if (options != 0 || fp == NULL) {
		errno = EINVAL;
		return -1;
	}
	if (enter("malloc_info") == NULL)
		return -1;
	gather(&t);
	fprintf(fp, "<malloc version=\"omalloc-%s\" pools=\"%u\">\n",
	    OM_VERSION, mopts.npools);
	for (i = 0; i <= mopts.npools; i++) {
		struct dir_info *d = om_pool_if_open(i);

		/* Copy the counters under the lock, print without it: stdio
		 * may allocate.  A pool nobody opened has none. */
		memset(&snap, 0, sizeof(snap));
		if (d != NULL) {
			lock_admin(d);
			memcpy(&snap, d, sizeof(snap));
			unlock(d);
		}
		if (i < mopts.npools)
			fprintf(fp, "<heap nr=\"%u\">\n", i);
		else
			fprintf(fp, "<heap nr=\"conceal\">\n");
		fprintf(fp, "<total type=\"mapped\" size=\"%zu\"/>\n",
		    snap.mapped);
		fprintf(fp, "<total type=\"inuse\" size=\"%zu\"/>\n",
		    snap.inuse);
		fprintf(fp, "<total type=\"cached\" count=\"%u\" size=\"%zu\"/>"
		    "\n", om_cache_runs(&snap),
		    om_cache_held(&snap) << OM_PAGE_SHIFT);
		fprintf(fp, "<regions free=\"%zu\" total=\"%zu\"/>\n",
		    snap.regions_free, snap.regions_total);
		fprintf(fp, "<locks contended=\"%lu\" total=\"%lu\" "
		    "wait_ns=\"%llu\"/>\n", snap.lock_contended,
		    snap.lock_plain + snap.lock_biased, snap.lock_wait_ns);
		fprintf(fp, "<searches other=\"%lu\" total=\"%lu\"/>\n",
		    t.other[i], t.searches[i]);
		fprintf(fp, "</heap>\n");
	}
	fprintf(fp, "<total type=\"mapped\" size=\"%zu\"/>\n", t.mapped);
	fprintf(fp, "<total type=\"inuse\" size=\"%zu\"/>\n", t.inuse);
	fprintf(fp, "<total type=\"cached\" size=\"%zu\"/>\n", t.cached);
	fprintf(fp, "</malloc>\n");
	return 0;
}

/* ------------------------------------------------------------------ */
/* glibc's internal names, so that a static link never pulls in glibc's
 * malloc.o: its fork and dynamic loader code refer to these. */

#if defined(__has_attribute) && __has_attribute(copy)
#define ALIAS(name, target)                                                  \
	extern __typeof(target) name __attribute__((alias(#target),          \
	    copy(target), visibility("default")))
#else
#define ALIAS(name, target)                                                  \
	extern __typeof(target) name                                         \
	    __attribute__((alias(#target), visibility("default")))
#endif

ALIAS(__libc_malloc, malloc);
ALIAS(__libc_calloc, calloc);
ALIAS(__libc_realloc, realloc);
ALIAS(__libc_free, free);
ALIAS(__libc_memalign, memalign);
ALIAS(__libc_valloc, valloc);
ALIAS(__libc_pvalloc, pvalloc);
ALIAS(__posix_memalign, posix_memalign);

/* glibc's fork calls these.  used: in a static link built with -flto
 * nothing the link reads before the LTO step refers to them, and
 * libc.a's fork.o, read after it, found them dropped. */
void __malloc_fork_lock_parent(void);
void __malloc_fork_unlock_parent(void);
void __malloc_fork_unlock_child(void);

__attribute__((used)) void
__malloc_fork_lock_parent(void)
{
	om_pool_fork_prepare();
}

__attribute__((used)) void
__malloc_fork_unlock_parent(void)
{
	om_pool_fork_parent();
}

__attribute__((used)) void
__malloc_fork_unlock_child(void)
{
	om_pool_fork_child();
}

/* At exit the exiting thread's queued frees are made, so that their
 * checks run, and with D the dump follows.  A destructor, not atexit:
 * nothing to register on the way in, and it runs after the program's own
 * exit handlers. */
__attribute__((destructor)) static void
exit_dump(void)
{
	if (!__atomic_load_n(&om_ready, __ATOMIC_ACQUIRE))
		return;
	om_rq_flush();
	if (mopts.opt.dump)
		om_dump_exit();
}
