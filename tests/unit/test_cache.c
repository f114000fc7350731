/*
 * test_cache.c - cache.c: the free-page cache (no system call in a steady
 * loop, eviction, trim, splitting, batching) and junk fill and validation.
 */
#include "unit.h"

#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

/*
 * Ranges evicted under a pool's lock are unmapped when the lock is
 * released; these tests work on a private pool without locking it, so
 * they take and release the lock to let that happen.
 */
static void
settle(struct dir_info *d)
{
	om_lock(d);
	om_unlock(d);
	ck_assert_uint_eq(d->npending, 0);
}

/* The cached run that holds p, or NULL. */
static const struct om_cache_entry *
cached_run(const struct dir_info *d, const void *p)
{
	unsigned int k, i;

	for (k = 0; k < OM_CACHE_CLASSES; k++)
		for (i = 0; i < d->cache_n[k]; i++) {
			const struct om_cache_entry *e =
			    &d->cache[d->cache_base[k] + i];

			if ((uintptr_t)p >= e->p && (uintptr_t)p < e->p +
			    ((uintptr_t)e->npages << OM_PAGE_SHIFT))
				return e;
		}
	return NULL;
}

static int
cached(const struct dir_info *d, const void *p)
{
	return cached_run(d, p) != NULL;
}

/* The runs a full class gives up (cache.c's quarter)... */
static unsigned int
quarter_of(const struct dir_info *d, unsigned int k)
{
	return d->cache_cap[k] >= 4 ? d->cache_cap[k] / 4u : 1u;
}

/* ... at once: at most a batch (cache.c's EVICT_BATCH, 16 runs), which
 * is less than a quarter from a scale of 128 (>) on. */
static unsigned int
evicted_of(const struct dir_info *d, unsigned int k)
{
	return quarter_of(d, k) < 16 ? quarter_of(d, k) : 16;
}

/* npages of the pool's own, between two pages that are not: runs mapped
 * one after the other never touch (runs over 8 pages that touch join as
 * they come into the cache), nor do they touch a run the pool mapped
 * itself next to them (an eviction takes a run's cached neighbours with
 * it, whatever their class). */
static void *
own_pages(struct dir_info *d, size_t npages)
{
	char *p = om_os_map((npages + 2) * OM_PAGE_SIZE, 0);

	ck_assert_ptr_nonnull(p);
	d->mapped += npages * OM_PAGE_SIZE;
	return p + OM_PAGE_SIZE;
}

/*
 * Put a run as a pool in use does, one that also takes runs: a pool that
 * only puts empties its cache into the depot (idle_pool_gives_back).
 */
static void
put_busy(struct dir_info *d, void *p, size_t npages)
{
	d->cache_idle = 0;
	om_cache_put(d, p, npages, 0);
}

static void
loop(size_t sz, unsigned int n)
{
	unsigned int i;

	for (i = 0; i < n; i++) {
		void *volatile p = malloc(sz);
		if (p == NULL)
			abort();
		free(p);
	}
}

START_TEST(steady_loop_no_syscalls)
{
	static const size_t sizes[] = { 64, 3000, 3 * 4096, 10 * 4096 };
	struct om_os_counts a, b;
	unsigned int k;

	for (k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
		size_t pages = (OM_PAGEROUND(sizes[k]) + mopts.guard) /
		    OM_PAGE_SIZE;

		/* Only a block whose class has room can stay in it. */
		if (sizes[k] > OM_MAXCHUNK && (pages > OM_CACHE_SMALL ||
		    unit_pool()->cache_cap[pages] == 0))
			continue;
		loop(sizes[k], 200);
		om_os_counts(&a);
		loop(sizes[k], 2000);
		om_os_counts(&b);
		ck_assert_msg(a.mmap == b.mmap && a.munmap == b.munmap,
		    "size %zu: %lu mmap, %lu munmap in a steady loop",
		    sizes[k], b.mmap - a.mmap, b.munmap - a.munmap);
		if (!mopts.opt.freeunmap)
			ck_assert_msg(a.mprotect == b.mprotect &&
			    a.madvise == b.madvise,
			    "size %zu: %lu mprotect, %lu madvise", sizes[k],
			    b.mprotect - a.mprotect, b.madvise - a.madvise);
	}
}
END_TEST

/*
 * The classes are sized from the cache scale C as OpenBSD sizes them: C
 * runs of 1 to 8 pages, C/2 of 9 to 16, C/4, C/8, and C longer runs.
 */
START_TEST(class_sizes)
{
	struct dir_info *d = unit_pool();
	unsigned int k, c = d->cache_max;

	size_t shares = 0;

	ck_assert_uint_eq(c, (unsigned int)mopts.opt.cache_pages);
	for (k = 1; k <= OM_CACHE_SMALL; k++) {
		ck_assert_uint_eq(d->cache_cap[k], c >> ((k - 1) / 8));
		/* Single pages keep to their share; longer runs may borrow. */
		ck_assert_uint_eq(d->cache_room[k],
		    (k == 1 ? 1 : 2) * d->cache_cap[k]);
		shares += (size_t)d->cache_cap[k] * k;
	}
	ck_assert_uint_eq(d->cache_small_max, shares);
	ck_assert_uint_eq(d->cache_cap[0], c);
	ck_assert_uint_eq(d->cache_room[0], c);
	ck_assert_uint_eq(d->cache_big_max, (size_t)c * OM_CACHE_SMALL);
	if (c == 64) {
		ck_assert_uint_eq(d->cache_cap[8], 64);
		ck_assert_uint_eq(d->cache_cap[9], 32);
		ck_assert_uint_eq(d->cache_cap[32], 8);
	}
}
END_TEST

/*
 * A class out of slots makes room by evicting random runs of its own
 * length, a quarter of its share: the evicted runs are offered to the
 * depot once the lock is dropped or unmapped, and nothing else moves.
 */
START_TEST(eviction_unmaps)
{
	struct dir_info *d = unit_pool();
	struct om_os_counts a, b;
	unsigned int i, incache = 0, cap = d->cache_room[10], n = cap + 4;
	void **blk;
	size_t depot_pages;

	if (cap == 0)
		return;
	blk = calloc(n, sizeof(*blk));
	ck_assert_ptr_nonnull(blk);
	/* Map all first: a new mapping could reuse an evicted address. */
	for (i = 0; i < n; i++)
		blk[i] = own_pages(d, 10);
	/* The depot empty: a small cache (<<<<<) in the process's own
	 * pools gives runs to it too. */
	om_cache_depot_trim();
	om_os_counts(&a);
	for (i = 0; i < n; i++) {
		put_busy(d, blk[i], 10);
		ck_assert_uint_le(d->cache_n[10], cap);
	}
	/* A full class gives up a quarter of its share at once. */
	ck_assert_uint_le(d->cache_n[10], cap);
	ck_assert_uint_ge(d->cache_n[10], cap - d->cache_cap[10] / 4);
	ck_assert_uint_lt(d->cache_n[10], n);
	ck_assert_uint_eq(d->cache_pages, (size_t)d->cache_n[10] * 10);
	/* Evicted runs are offered to the depot (for any pool) once the
	 * lock is dropped, or unmapped; trimming the depot unmaps them all. */
	settle(d);
	depot_pages = om_cache_depot_trim();
	om_os_counts(&b);
	for (i = 0; i < n; i++) {
		if (cached(d, blk[i]))
			incache++;
		else
			ck_assert_msg(unit_unmapped(blk[i], 10),
			    "evicted block %u still mapped", i);
	}
	ck_assert_uint_eq(incache, d->cache_n[10]);
	ck_assert_uint_le(depot_pages, (size_t)(n - incache) * 10);
	ck_assert_uint_gt(b.munmap, a.munmap);
	free(blk);
}
END_TEST

/*
 * Classes 2..32 share their pages: with nothing else cached, one of them
 * fills all its slots, twice its share; when the classes together would
 * go over the sum of their shares, the class furthest over its share
 * gives up runs, not the one within its share that is being added to.
 */
START_TEST(classes_share_room)
{
	struct dir_info *d = unit_pool();
	unsigned int i, room = d->cache_room[10], cap = d->cache_cap[10];
	void **blk;
	char *apart;

	if (cap < 4 || d->cache_cap[4] < 3)
		return;
	blk = calloc(room, sizeof(*blk));
	ck_assert_ptr_nonnull(blk);
	for (i = 0; i < room; i++)
		blk[i] = own_pages(d, 10);
	for (i = 0; i < room; i++)
		put_busy(d, blk[i], 10);
	ck_assert_uint_eq(d->cache_n[10], room);
	ck_assert_uint_eq(d->cache_pages, (size_t)room * 10);
	settle(d);

	/* Room for two more runs of 4 pages, not three.  They lie apart,
	 * between unused pages, since runs that touch an evicted one leave
	 * with it whatever their length. */
	d->cache_small_max = d->cache_pages + 2 * 4;
	apart = own_pages(d, 3 * 5 + 1);
	for (i = 0; i < 3; i++)
		put_busy(d, apart + (1 + 5 * i) * OM_PAGE_SIZE, 4);
	ck_assert_uint_eq(d->cache_n[4], 3);
	ck_assert_uint_lt(d->cache_n[10], room);
	ck_assert_uint_ge(d->cache_n[10], room - cap / 4);
	ck_assert_uint_le(d->cache_pages, d->cache_small_max);
	settle(d);
	free(blk);
}
END_TEST

/*
 * A run is evicted with the runs of its class that touch it, and a
 * stretch of them longer than the depot keeps goes back to the kernel
 * whole, in one call, none of it offered to the depot: a heap freed in
 * order is unmapped in a few calls, not one per run.  Runs of 8 pages,
 * which do not join as they come in.
 */
START_TEST(neighbours_leave_together)
{
	struct dir_info *d = unit_pool();
	struct om_os_counts a, b;
	size_t run = 8, n, i, evicted, depot_before, taken;
	char *base;

	if (d->cache_cap[8] < 40)
		return;
	om_cache_depot_trim();
	n = d->cache_room[8] + 1u;
	base = own_pages(d, n * run);
	for (i = 0; i + 1 < n; i++)
		put_busy(d, base + i * run * OM_PAGE_SIZE, run);
	ck_assert_uint_eq(d->cache_n[8], n - 1);
	settle(d);
	depot_before = om_cache_depot_pages();
	om_os_counts(&a);
	/* One run more than the class has slots for. */
	put_busy(d, base + (n - 1) * run * OM_PAGE_SIZE, run);
	evicted = n - d->cache_n[8];
	ck_assert_uint_ge(evicted, 9);
	settle(d);
	om_os_counts(&b);
	taken = (om_cache_depot_pages() - depot_before) / run;
	ck_assert_uint_eq(taken, 0);
	ck_assert_msg(b.munmap - a.munmap == 1, "%zu runs evicted, %lu munmap",
	    evicted, b.munmap - a.munmap);
	for (i = 0; i < n; i++)
		if (!cached(d, base + i * run * OM_PAGE_SIZE))
			ck_assert(unit_unmapped(base + i * run * OM_PAGE_SIZE,
			    run));
	om_cache_depot_trim();
}
END_TEST

/*
 * Runs of other lengths that touch an evicted run leave with it, in the
 * same call, without counting against the evicting class's quarter:
 * blocks of growing sizes freed side by side go back together.  Each
 * 10-page run here sits between a 3-page and a 5-page run, groups apart,
 * and comes in first: a run of more than 8 pages joins the runs that
 * touch it as it comes in, and shorter ones do not.
 */
START_TEST(neighbours_of_other_lengths)
{
	struct dir_info *d = unit_pool();
	struct om_os_counts a, b;
	unsigned int i, room = d->cache_room[10], n3, n5, evicted;
	size_t group = 3 + 10 + 5 + 1;
	char *base;

	if (room < 4 || d->cache_room[3] < room + 1 ||
	    d->cache_room[5] < room + 1)
		return;
	om_cache_depot_trim();
	base = own_pages(d, (room + 1) * group);
	for (i = 0; i < room; i++) {
		char *g = base + i * group * OM_PAGE_SIZE;

		put_busy(d, g + 3 * OM_PAGE_SIZE, 10);
		put_busy(d, g, 3);
		put_busy(d, g + 13 * OM_PAGE_SIZE, 5);
	}
	ck_assert_uint_eq(d->cache_n[10], room);
	n3 = d->cache_n[3];
	n5 = d->cache_n[5];
	settle(d);
	om_os_counts(&a);
	/* Class 10 is full: one more run evicts a quarter of its share. */
	put_busy(d, base + (room * group + 3) * OM_PAGE_SIZE, 10);
	evicted = room + 1 - d->cache_n[10];
	ck_assert_uint_ge(evicted, 1);
	ck_assert_uint_le(evicted, quarter_of(d, 10));
	/* Each evicted run's neighbours went too, but for the last one's
	 * where the batch filled up. */
	ck_assert_uint_ge(n3 - d->cache_n[3], 1);
	ck_assert_uint_ge(n5 - d->cache_n[5], 1);
	ck_assert_uint_le(n3 - d->cache_n[3], evicted);
	ck_assert_uint_ge(n3 - d->cache_n[3], evicted - 1);
	ck_assert_uint_le(n5 - d->cache_n[5], evicted);
	ck_assert_uint_ge(n5 - d->cache_n[5], evicted - 1);
	settle(d);
	om_os_counts(&b);
	/* One call per group at most, not one per run. */
	ck_assert_uint_le(b.munmap - a.munmap, evicted);
	om_cache_depot_trim();
}
END_TEST

/*
 * A get takes one of the runs the program used before, at random, while
 * there are at least four of them: a malloc/free loop of one page keeps
 * four pages resident, not the sixteen its first miss mapped ahead (each
 * a page of resident memory once handed out).  Each of the four still
 * comes back about a quarter of the time, so reuse stays unpredictable.
 */
START_TEST(used_runs_first)
{
	struct dir_info *d = unit_pool();
	unsigned char vec[16];
	unsigned int i, j, resident = 0, seen[4] = { 0 }, nseen = 0;
	char *base, *used[4], *q;
	int z;

	if (d->cache_cap[1] < 16)
		return;
	om_cache_depot_trim();
	base = om_cache_get(d, 1, 0, &z);
	ck_assert_ptr_nonnull(base);
	ck_assert_uint_eq(d->cache_n[1], 15);
	ck_assert_uint_eq(d->cache_warm[1], 0);
	/* Pages of their own: a huge page would make all of them resident
	 * at the first touch (where THP is "always"). */
	madvise(base, 16 * OM_PAGE_SIZE, MADV_NOHUGEPAGE);
	memset(base, 1, OM_PAGE_SIZE);
	om_cache_put(d, base, 1, 0);
	ck_assert_uint_eq(d->cache_warm[1], 1);
	for (i = 0; i < 2000; i++) {
		q = om_cache_get(d, 1, 0, &z);
		if (q == NULL || q < base || q >= base + 16 * OM_PAGE_SIZE)
			break;
		memset(q, 2, 64);
		for (j = 0; j < nseen && used[j] != q; j++)
			;
		if (j == nseen) {
			if (nseen == 4)
				break;
			used[nseen++] = q;
		}
		seen[j]++;
		om_cache_put(d, q, 1, 0);
	}
	ck_assert_msg(i == 2000, "get %u: %p, %u runs used before, of the 16 "
	    "pages at %p", i, (void *)q, nseen, (void *)base);
	ck_assert_uint_eq(nseen, 4);
	ck_assert_uint_eq(d->cache_warm[1], 4);
	for (j = 0; j < 4; j++)
		ck_assert_uint_gt(seen[j], 300);
	ck_assert_int_eq(mincore(base, 16 * OM_PAGE_SIZE, vec), 0);
	for (i = 0; i < 16; i++)
		resident += vec[i] & 1;
	ck_assert_uint_eq(resident, 4);
}
END_TEST

/*
 * A pool that gets runs back only from threads of other pools (its own
 * threads left, others free its blocks) keeps 16 of them; each further
 * put gives a quarter of the class to the depot, where the pools in use
 * take from, until the cache is empty.  One get makes it a pool in use
 * again, which keeps what it is given.  The unit pool is outside the
 * array, so every put here counts as another pool's thread's.  The runs
 * lie apart, so none leaves with a neighbour.
 */
START_TEST(idle_pool_gives_back)
{
	struct dir_info *d = unit_pool();
	unsigned int i, n = 48;
	size_t before;
	char *base;
	void *q;
	int z;

	if (d->cache_cap[2] < 32)
		return;
	om_cache_depot_trim();
	before = om_cache_depot_pages();
	base = own_pages(d, 3 * n);
	for (i = 0; i < 16; i++)
		om_cache_put(d, base + 3 * i * OM_PAGE_SIZE, 2, 0);
	ck_assert_uint_eq(d->cache_n[2], 16);
	ck_assert_uint_eq(d->npending, 0);
	/* The next puts drain the class. */
	om_cache_put(d, base + 3 * 16 * OM_PAGE_SIZE, 2, 0);
	/* (An eviction takes at most 16 runs at once.) */
	ck_assert_uint_eq(d->cache_n[2], 17 - evicted_of(d, 2));
	for (i = 17; i < 32; i++)
		om_cache_put(d, base + 3 * i * OM_PAGE_SIZE, 2, 0);
	ck_assert_uint_eq(d->cache_n[2], 0);
	settle(d);
	ck_assert_uint_eq(om_cache_depot_pages() - before, 32 * 2);
	/* Taken by a get, from the depot since the cache is empty. */
	q = om_cache_get(d, 2, 0, &z);
	ck_assert_ptr_nonnull(q);
	ck_assert_uint_eq(om_cache_depot_pages() - before, 31 * 2);
	om_cache_put(d, q, 2, 0);
	for (i = 33; i < n; i++)
		om_cache_put(d, base + 3 * i * OM_PAGE_SIZE, 2, 0);
	ck_assert_uint_eq(d->cache_n[2], 16);
	settle(d);
	om_cache_depot_trim();
}
END_TEST

/* A get of npages that misses the cache (nothing of that length is
 * cached), put back as the pool's own thread puts it. */
static void
miss(struct dir_info *d, size_t npages)
{
	void *q;
	int z;

	ck_assert_uint_eq(d->cache_n[npages], 0);
	q = om_cache_get(d, npages, 0, &z);
	ck_assert_ptr_nonnull(q);
	om_cache_put(d, q, npages, 0);
	d->cache_idle = 0;
}

/* A miss in another thread: runs of 3 pages or fewer are not cut from
 * longer ones, and none of 3 is cached. */
static void *
miss_thread(void *arg)
{
	struct dir_info *d = arg;
	void *q;
	int z;

	free(malloc(1));
	q = om_cache_get(d, 3, 0, &z);
	if (q != NULL)
		om_cache_put(d, q, 3, 0);
	return q;
}

/*
 * A pool whose thread misses after the pool gave its runs away to other
 * threads' puts (a producer whose consumer frees a queue of its buffers
 * at a time) waits twice as long before it next gives runs away, each
 * time the same thread misses so; the runs other threads put then stay
 * apart instead of joining their neighbours, and a run whose class has
 * no slot left goes to the depot.  A miss by another thread starts over.
 * The unit pool is outside the array: every put counts as another
 * pool's thread's.
 */
START_TEST(producer_keeps_what_consumer_frees)
{
	struct dir_info *d = unit_pool();
	unsigned int i, room32;
	size_t before;
	pthread_t t;
	char *base, *run;
	void *q;

	if (d->cache_cap[2] < 32 || d->cache_room[32] == 0)
		return;
	om_cache_depot_trim();
	base = own_pages(d, 3 * 64);
	miss(d, 5);
	om_cache_trim(d);
	settle(d);
	for (i = 0; i < 17; i++)
		om_cache_put(d, base + 3 * i * OM_PAGE_SIZE, 2, 0);
	ck_assert_uint_eq(d->cache_n[2], 17 - evicted_of(d, 2));
	ck_assert_uint_eq(d->cache_idle_shift, 0);
	settle(d);
	/* The same thread misses: it needed what went. */
	miss(d, 6);
	ck_assert_uint_eq(d->cache_idle_shift, 1);
	/* 32 puts in a row now, and the 33rd gives runs away. */
	for (i = 17; i < 49; i++)
		om_cache_put(d, base + 3 * i * OM_PAGE_SIZE, 2, 0);
	ck_assert_uint_eq(d->cache_n[2], 17 - evicted_of(d, 2) + 32);
	om_cache_put(d, base + 3 * 49 * OM_PAGE_SIZE, 2, 0);
	ck_assert_uint_eq(d->cache_n[2],
	    17 - evicted_of(d, 2) + 33 - evicted_of(d, 2));
	settle(d);
	/* Two runs of 12 pages that touch stay apart. */
	d->cache_idle = 0;
	run = own_pages(d, 24);
	om_cache_put(d, run, 12, 0);
	om_cache_put(d, run + 12 * OM_PAGE_SIZE, 12, 0);
	ck_assert_uint_eq(d->cache_n[12], 2);
	ck_assert_uint_eq(d->cache_n[0], 0);
	/* A full class sends the next run to the depot, the class and its
	 * neighbours as they were. */
	room32 = d->cache_room[32];
	for (i = 0; i < room32; i++) {
		d->cache_idle = 0;
		om_cache_put(d, own_pages(d, 32), 32, 0);
	}
	ck_assert_uint_eq(d->cache_n[32], room32);
	settle(d);
	before = om_cache_depot_pages();
	om_cache_put(d, own_pages(d, 32), 32, 0);
	ck_assert_uint_eq(d->cache_n[32], room32);
	ck_assert_uint_eq(d->npending, 1);
	settle(d);
	ck_assert_uint_eq(om_cache_depot_pages(), before + 32);
	/* Another thread's miss starts the count over. */
	ck_assert_uint_eq(d->cache_n[3], 0);
	ck_assert_int_eq(pthread_create(&t, NULL, miss_thread, d), 0);
	ck_assert_int_eq(pthread_join(t, &q), 0);
	ck_assert_ptr_nonnull(q);
	ck_assert_uint_eq(d->cache_idle_shift, 0);
	om_cache_depot_trim();
}
END_TEST

/* Cycle a page through the cache until the round of decay in progress
 * has ended: a loop that uses one page at a time. */
static void
finish_round(struct dir_info *d)
{
	unsigned int left = OM_CACHE_DECAY_PUTS - d->cache_puts;
	void *q;
	int z;

	for (; left > 0; left--) {
		q = om_cache_get(d, 1, 0, &z);
		if (q == NULL)
			break;
		put_busy(d, q, 1);
	}
	ck_assert_msg(left == 0, "a get failed, %u left in the round", left);
	ck_assert_uint_eq(d->cache_puts, 0);
	settle(d);
}

/*
 * Decay: used runs a class kept through a whole round go, half of them
 * beyond the four a get chooses among each round, straight back to the
 * kernel (not to the depot); a loop that keeps taking its runs loses
 * none and makes no system call in a round, once the leftovers are gone.
 * The 12 runs of 3 pages lie apart, so none leaves with a neighbour.
 */
START_TEST(idle_runs_decay)
{
	struct dir_info *d = unit_pool();
	struct om_os_counts a, b;
	unsigned int i, gone = 0, n = 12;
	char *base;

	if (d->cache_cap[3] < n)
		return;
	om_cache_depot_trim();
	base = own_pages(d, 4 * n);
	for (i = 0; i < n; i++)
		put_busy(d, base + 4 * i * OM_PAGE_SIZE, 3);
	ck_assert_uint_eq(d->cache_warm[3], n);
	/* The round they were put in: they were not there all of it. */
	finish_round(d);
	ck_assert_uint_eq(d->cache_n[3], n);
	/* A round without a get of 3 pages: (12 - 4 + 1) / 2 = 4 go. */
	finish_round(d);
	ck_assert_uint_eq(d->cache_n[3], n - 4);
	ck_assert_uint_eq(om_cache_depot_pages(), 0);
	for (i = 0; i < n; i++) {
		char *p = base + 4 * i * OM_PAGE_SIZE;

		if (cached(d, p))
			continue;
		ck_assert_msg(unit_unmapped(p, 3), "run %u gone, still mapped",
		    i);
		gone++;
	}
	ck_assert_uint_eq(gone, 4);
	/* 8 -> 6 -> 5 -> 4, and no further. */
	for (i = 0; i < 4; i++)
		finish_round(d);
	ck_assert_uint_eq(d->cache_n[3], 4);
	/* The loop's own class kept the runs it cycles through, and a
	 * round of the loop now costs no system call. */
	ck_assert_uint_ge(d->cache_warm[1], 1);
	om_os_counts(&a);
	finish_round(d);
	om_os_counts(&b);
	ck_assert_uint_eq(b.munmap, a.munmap);
	ck_assert_uint_eq(b.mmap, a.mmap);
	ck_assert_uint_eq(d->cache_n[3], 4);
}
END_TEST

/*
 * The depot holds what its limit allows and turns the rest away, the
 * limit starts at 256 pages, and a trim gives everything back and resets
 * it.  Offered runs are real pages, so what is turned away is unmapped
 * here, as unlock() would.
 */
START_TEST(depot_limit)
{
	struct om_cache_entry e, out;
	unsigned int i, taken = 0, n = 300;
	size_t limit;

	unit_init();
	om_cache_depot_trim();
	limit = om_cache_depot_limit();
	ck_assert_uint_eq(limit, 256);
	for (i = 0; i < n; i++) {
		memset(&e, 0, sizeof(e));
		e.p = (uintptr_t)om_os_map(2 * OM_PAGE_SIZE, 0);
		ck_assert_uint_ne(e.p, 0);
		e.npages = 2;
		if (om_cache_depot_offer(&e, &out))
			taken++;
		else
			om_os_unmap((void *)e.p, 2 * OM_PAGE_SIZE);
		/* Nothing was ever taken, so nothing is in less demand. */
		ck_assert_uint_eq(out.npages, 0);
	}
	ck_assert_uint_eq(taken, limit / 2);
	ck_assert_uint_eq(om_cache_depot_pages(), limit);
	/* A guarded run or one longer than 64 pages is never taken. */
	e.guarded = 1;
	ck_assert_int_eq(om_cache_depot_offer(&e, &out), 0);
	ck_assert_uint_eq(om_cache_depot_trim(), limit);
	ck_assert_uint_eq(om_cache_depot_pages(), 0);
	ck_assert_uint_eq(om_cache_depot_limit(), 256);
}
END_TEST

/* Offer a run of npages of our own to the depot as unlock() would: unmap
 * it if turned away, and unmap the run given up to make room (its length
 * in *gave, 0 if none, where gave is not NULL).  A run mapped for it if p
 * is NULL.  Returns 1 if taken, 0 if not, -1 if no run could be mapped. */
static int
offer_pages(void *p, size_t npages, unsigned int *gave)
{
	struct om_cache_entry e, out;
	int taken;

	memset(&e, 0, sizeof(e));
	e.p = (uintptr_t)(p != NULL ? p : om_os_map(npages * OM_PAGE_SIZE,
	    0));
	if (e.p == 0)
		return -1;
	e.npages = (uint32_t)npages;
	taken = om_cache_depot_offer(&e, &out);
	if (!taken)
		om_os_unmap((void *)e.p, npages * OM_PAGE_SIZE);
	if (out.npages != 0)
		om_os_unmap((void *)out.p, (size_t)out.npages * OM_PAGE_SIZE);
	if (gave != NULL)
		*gave = out.npages;
	return taken;
}

/* One page (see offer_pages). */
static int
offer_page(void *p)
{
	return offer_pages(p, 1, NULL);
}

/* A run of npages mapped for it (see offer_pages): 1 if taken. */
static int
offer_run(size_t npages, unsigned int *gave)
{
	int taken = offer_pages(NULL, npages, gave);

	ck_assert_int_ge(taken, 0);
	return taken;
}

/*
 * The depot's limit follows the need.  A take that finds it empty, where
 * runs had been turned away, raises the limit; a batch freed and taken
 * again each time grows it until the batch fits, past 8 MiB here.
 * Rounds in which no take found it short and some pages never left lower
 * it by half of those, and what it then holds over the limit is unmapped
 * as runs are offered.
 */
START_TEST(depot_follows_need)
{
	struct dir_info *d = unit_pool();
	size_t batch = 3000, limit, gets, i, k;
	void **taken = calloc(batch, sizeof(*taken));
	int zeroed;

	ck_assert_ptr_nonnull(taken);
	/* Pools without a cache (S) neither take from the depot nor give. */
	if (d->cache_max == 0) {
		free(taken);
		return;
	}
	unit_init();
	om_cache_depot_trim();
	for (k = 0; k < 16; k++) {
		/* The batch comes back: what fits stays, the rest goes. */
		for (i = 0; i < batch; i++)
			if (offer_page(k == 0 ? NULL : taken[i]) < 0)
				break;
		ck_assert_msg(i == batch, "no page to offer, %zu", i);
		ck_assert_uint_le(om_cache_depot_pages(),
		    om_cache_depot_limit());
		/* And is taken again: a fresh pool's cache is empty, so each
		 * page comes from the depot while it has one. */
		d = unit_pool();
		limit = om_cache_depot_limit();
		for (i = 0; i < batch; i++)
			if ((taken[i] = om_cache_get(d, 1, 0, &zeroed)) == NULL)
				break;
		ck_assert_msg(i == batch, "get %zu of the batch failed", i);
		if (limit >= batch)
			break;
		/* The miss raised the limit by a quarter at least. */
		ck_assert_uint_ge(om_cache_depot_limit(), limit + limit / 4);
	}
	ck_assert_uint_ge(om_cache_depot_limit(), batch);
	for (i = 0; i < batch; i++)
		if (offer_page(taken[i]) != 1)
			break;
	ck_assert_msg(i == batch, "page %zu of %zu turned away", i, batch);
	ck_assert_uint_eq(om_cache_depot_pages(), batch);

	/* Now only one page goes out and back at a time: every other page
	 * stays whole rounds (4096 pages taken at least, four times the
	 * limit), and each such round lowers the limit by half of them. */
	limit = om_cache_depot_limit();
	d = unit_pool();
	gets = 8 * (limit > 4096 ? limit : 4096);
	for (i = 0; i < gets; i++) {
		void *p = om_cache_get(d, 1, 0, &zeroed);

		if (p == NULL)
			break;
		offer_page(p);
	}
	ck_assert_msg(i == gets, "get %zu of %zu failed", i, gets);
	ck_assert_uint_le(om_cache_depot_limit(), limit - (batch - 1) / 2);
	ck_assert_uint_ge(om_cache_depot_limit(), 256);
	/* What it held over the lowered limit left as runs were offered. */
	ck_assert_uint_le(om_cache_depot_pages(), om_cache_depot_limit());
	om_cache_depot_trim();
	ck_assert_uint_eq(om_cache_depot_limit(), 256);
	free(taken);
}
END_TEST

/*
 * A run the full depot gives up to make room for one in more demand is
 * turned away as much as a run it refuses: once the depot has none of
 * its length left, a miss of that length raises the limit.
 */
START_TEST(depot_counts_its_victims)
{
	struct dir_info *d = unit_pool();
	unsigned int i, gave, n;
	size_t limit;
	int zeroed;
	void *p;

	if (d->cache_max == 0)
		return;
	unit_init();
	om_cache_depot_trim();
	limit = om_cache_depot_limit();
	/* Full of runs of 2 pages, none asked for yet. */
	for (i = 0; i < limit / 2; i++) {
		ck_assert_int_eq(offer_run(2, &gave), 1);
		ck_assert_uint_eq(gave, 0);
	}
	/* A page asked for, cut from one of them: pages are now in demand,
	 * runs of 2 are not, and a page offered to the full depot takes the
	 * place of a run of 2. */
	p = om_cache_get(d, 1, 0, &zeroed);
	ck_assert_ptr_nonnull(p);
	ck_assert_int_eq(offer_run(1, &gave), 1);
	ck_assert_uint_eq(gave, 0);
	ck_assert_uint_eq(om_cache_depot_pages(), limit);
	ck_assert_int_eq(offer_run(1, &gave), 1);
	ck_assert_uint_eq(gave, 2);
	ck_assert_uint_eq(om_cache_depot_limit(), limit);
	/* Every run of 2 taken, and one more asked for: the depot was too
	 * small by the run it gave up. */
	n = (unsigned int)(limit / 2 - 2);
	for (i = 0; i < n; i++)
		ck_assert_ptr_nonnull(om_cache_get(d, 2, 0, &zeroed));
	ck_assert_uint_eq(om_cache_depot_limit(), limit);
	ck_assert_ptr_nonnull(om_cache_get(d, 2, 0, &zeroed));
	ck_assert_uint_eq(om_cache_depot_limit(), limit + 2);
	om_cache_depot_trim();
}
END_TEST

/* Empty d's cache into the depot, as a pool whose threads left does. */
static void
give_back(struct dir_info *d)
{
	while (om_cache_give_back(d))
		settle(d);
	settle(d);
}

/*
 * A run a pool gives back to the depot keeps its junk unchecked there,
 * and is checked once, as it leaves: when a pool takes it (0), when a
 * trim gives it back to the kernel (1), when the full depot turns it
 * away (2) or gives it up to make room (3).  4: given back, and not
 * checked yet.  5: joined to the run before it as both leave the cache,
 * its first page inside the run the depot gets, and checked then.  A
 * byte was written into it after it was freed.
 */
static void
do_depot_write_after_free(void *arg)
{
	/* Every pool and page made first: making a pool allocates, and an
	 * allocation may take a page from the depot. */
	struct dir_info *d = unit_pool(), *taker = unit_pool(),
	    *d2 = unit_pool();
	char *p = own_pages(d, 4), *q = own_pages(d2, 1);
	int how = *(int *)arg, z;
	unsigned int gave, i;
	size_t limit;

	om_cache_depot_trim();
	limit = om_cache_depot_limit();
	if (how == 2)
		for (i = 0; i < limit; i++)
			offer_run(1, &gave);
	put_busy(d, p, 2);
	if (how == 5) {
		put_busy(d, p + 2 * OM_PAGE_SIZE, 2);
		p += 2 * OM_PAGE_SIZE;
	}
	p[0] = 'x';
	give_back(d);
	if (how == 0)
		(void)om_cache_get(taker, 2, 0, &z);
	else if (how == 1)
		om_cache_depot_trim();
	else if (how == 3) {
		/* Pages in demand (one taken), runs of 2 pages not: the last
		 * page offered, by a pool as the written run was, takes that
		 * run's place. */
		for (i = 0; i < limit - 2; i++)
			offer_run(1, &gave);
		ck_assert_ptr_nonnull(om_cache_get(taker, 1, 0, &z));
		offer_run(1, &gave);
		put_busy(d2, q, 1);
		give_back(d2);
	}
}

START_TEST(depot_checks_as_runs_leave)
{
	static const char *func[] = { "malloc", "malloc_trim", "malloc",
	    "malloc", NULL, "malloc" };
	struct dir_info *d = unit_pool();
	struct child c;
	int how;

	/* Runs are junked, readable in the cache, and go to the depot. */
	if (d->cache_max == 0 || d->junk == 0 || mopts.opt.freeunmap ||
	    mopts.guard)
		return;
	for (how = 0; how < 6; how++) {
		unit_run(do_depot_write_after_free, &how, &c);
		if (func[how] != NULL)
			ck_assert_fatal(&c, func[how], "write after free");
		else
			ck_assert_exited_ok(&c);
	}
}
END_TEST

/* More than the limit depot_over_its_limit grows the depot to. */
#define GROWN_LIMIT_MAX 4096

/* How many of the n pages at v are still mapped. */
static size_t
mapped_of(void **v, size_t n)
{
	size_t i, m = 0;

	for (i = 0; i < n; i++)
		m += !unit_unmapped(v[i], 1);
	return m;
}

/*
 * A depot over its limit, which came down, gives up a run to make room
 * for each run offered, and refuses the offered run all the same while
 * it is still over: both go to the kernel, the one given up too.
 */
START_TEST(depot_over_its_limit)
{
	struct dir_info *d = unit_pool(), *d2;
	size_t limit, n, i, cycles;
	unsigned int gave;
	void **v, *p;
	char *q;
	int z;

	if (d->cache_max == 0)
		return;
	/* Made first: nothing mapped later may land where a page of ours
	 * was unmapped, and read as ours, and no allocation takes a page
	 * from the depot (or misses there) while the test counts. */
	d2 = unit_pool();
	q = own_pages(d2, 2);
	v = calloc(GROWN_LIMIT_MAX, sizeof(*v));
	ck_assert_ptr_nonnull(v);
	om_cache_depot_trim();
	limit = om_cache_depot_limit();
	/* Pages turned away, then missed: the limit grows. */
	for (i = 0; i < 2 * limit; i++)
		offer_run(1, &gave);
	for (i = 0; i < limit; i++) {
		p = om_cache_get(d, 1, 0, &z);
		ck_assert_ptr_nonnull(p);
		om_os_unmap(p, OM_PAGE_SIZE);
	}
	ck_assert_uint_eq(om_cache_depot_pages(), 0);
	for (i = 0; i < 8; i++)
		ck_assert_ptr_nonnull(om_cache_get(unit_pool(), 1, 0, &z));
	ck_assert_uint_gt(om_cache_depot_limit(), limit);
	/* Filled to its limit with pages of ours, then one of them taken
	 * and offered again and again: the pages that stay whole rounds
	 * bring the limit down, below what the depot holds. */
	limit = om_cache_depot_limit();
	ck_assert_uint_le(limit, GROWN_LIMIT_MAX);
	for (n = 0; n < limit; n++) {
		v[n] = om_os_map(OM_PAGE_SIZE, 0);
		ck_assert_ptr_nonnull(v[n]);
		ck_assert_int_eq(offer_page(v[n]), 1);
	}
	for (cycles = 0; om_cache_depot_limit() == limit &&
	    cycles < 100000; cycles++) {
		p = om_cache_get(d, 1, 0, &z);
		ck_assert_ptr_nonnull(p);
		offer_page(p);
	}
	ck_assert_uint_lt(om_cache_depot_limit(), om_cache_depot_pages());
	ck_assert_uint_eq(mapped_of(v, n), om_cache_depot_pages());
	/* A pool gives back a run of 2: the depot gives up one of our
	 * pages and has no room for the run. */
	put_busy(d2, q, 2);
	i = om_cache_depot_pages();
	give_back(d2);
	ck_assert_uint_eq(om_cache_depot_pages(), i - 1);
	ck_assert(unit_unmapped(q, 2));
	ck_assert_uint_eq(mapped_of(v, n), om_cache_depot_pages());
	om_cache_depot_trim();
	free(v);
}
END_TEST

START_TEST(too_big_unmapped_at_once)
{
	struct dir_info *d = unit_pool();
	size_t n = OM_CACHE_BIG + 1;
	void *p = own_pages(d, n);
	size_t before = d->cache_pages;

	om_cache_put(d, p, n, 0);
	/* Given back once the lock is released, not before. */
	ck_assert(!unit_unmapped(p, n));
	settle(d);
	ck_assert(unit_unmapped(p, n));
	ck_assert_uint_eq(d->cache_pages, before);
	ck_assert(!cached(d, p));
}
END_TEST

/* The longest run class 0 ever takes: 4 x 32 C pages. */
static size_t
longest_kept(const struct dir_info *d)
{
	return (size_t)d->cache_max * OM_CACHE_SMALL * OM_CACHE_LONG_SCALE;
}

/* Put a run, let the pool release what it evicts, and check that the
 * run went back to the kernel. */
static void
put_gone(struct dir_info *d, void *p, size_t npages)
{
	put_busy(d, p, npages);
	settle(d);
	ck_assert(unit_unmapped(p, npages));
}

/*
 * A run longer than class 0 takes at first is unmapped as it is freed,
 * but a request of its length that follows makes class 0 take such runs:
 * from then on that block comes and goes without a system call.  Only
 * the lengths seen go in; a trim starts over.
 */
START_TEST(long_runs_taken_once_asked_again)
{
	struct dir_info *d = unit_pool();
	size_t n = 2 * OM_CACHE_BIG, i;
	struct om_os_counts a, b;
	char *p, *q;
	int z = -1;

	if (d->cache_max == 0 || n > longest_kept(d))
		return;
	/* Freed once: gone at once, as before. */
	put_gone(d, own_pages(d, n), n);
	/* Another length asked for: mapped, and unmapped as it is freed. */
	q = om_cache_get(d, n + 1, 0, &z);
	ck_assert_ptr_nonnull(q);
	put_gone(d, q, n + 1);
	/* The length freed before, asked for again: kept from now on. */
	q = om_cache_get(d, n, 0, &z);
	ck_assert_ptr_nonnull(q);
	ck_assert_int_eq(z, 1);
	memset(q, 1, n * OM_PAGE_SIZE);
	put_busy(d, q, n);
	settle(d);
	ck_assert(cached(d, q));
	om_os_counts(&a);
	for (i = 0; i < 8; i++) {
		p = om_cache_get(d, n, 0, &z);
		ck_assert_ptr_eq(p, q);
		ck_assert_int_eq(z, 0);
		p[0] = 1;
		put_busy(d, p, n);
		settle(d);
	}
	om_os_counts(&b);
	ck_assert_uint_eq(b.mmap - a.mmap, 0);
	ck_assert_uint_eq(b.munmap - a.munmap, 0);
	/* Longer runs are still not kept. */
	put_gone(d, own_pages(d, 2 * n), 2 * n);
	/* A trim gives it back and forgets the length. */
	om_cache_trim(d);
	settle(d);
	ck_assert(unit_unmapped(q, n));
	put_gone(d, own_pages(d, n), n);
}
END_TEST

/*
 * Nor need the length be the same: a request no longer than a long run
 * freed before shows the program asking for long runs again, and class 0
 * then takes runs up to the longest such length.
 */
START_TEST(long_runs_kept_once_shorter_asked)
{
	struct dir_info *d = unit_pool();
	size_t n = 2 * OM_CACHE_BIG;
	char *q;
	int z = -1;

	if (d->cache_max == 0 || n > longest_kept(d))
		return;
	put_gone(d, own_pages(d, n), n);
	q = om_cache_get(d, n - 100, 0, &z);
	ck_assert_ptr_nonnull(q);
	ck_assert_int_eq(z, 1);
	put_busy(d, q, n - 100);
	settle(d);
	ck_assert(cached(d, q));
	q = own_pages(d, n);
	put_busy(d, q, n);
	settle(d);
	ck_assert(cached(d, q));
	put_gone(d, own_pages(d, n + 1), n + 1);
}
END_TEST

/* Nor is a run longer than the longest class 0 ever takes, however
 * often it comes back: it is unmapped each time. */
START_TEST(longest_runs_never_kept)
{
	struct dir_info *d = unit_pool();
	size_t n = longest_kept(d) + 1;
	char *p;
	int z = -1, i;

	if (d->cache_max == 0)
		return;
	for (i = 0; i < 3; i++) {
		p = om_cache_get(d, n, 0, &z);
		ck_assert_ptr_nonnull(p);
		put_gone(d, p, n);
	}
}
END_TEST

START_TEST(trim_returns_pages)
{
	struct dir_info *d = unit_pool();
	struct om_os_counts a, b;
	char *p;
	unsigned int i;

	if (d->cache_max < 8)
		return;
	p = own_pages(d, 8);
	/* Put in a scrambled order: trim must still merge them. */
	for (i = 0; i < 8; i++)
		om_cache_put(d, p + ((i * 5) % 8) * OM_PAGE_SIZE, 1, 0);
	ck_assert_uint_eq(d->cache_pages, 8);
	ck_assert_uint_eq(d->cache_used, 8);
	om_os_counts(&a);
	ck_assert_uint_eq(om_cache_trim(d), 8);
	settle(d);
	om_os_counts(&b);
	ck_assert_uint_eq(d->cache_pages, 0);
	ck_assert_uint_eq(d->cache_used, 0);
	ck_assert(unit_unmapped(p, 8));
	/* Eight adjacent pages go back in one call, whatever their order. */
	ck_assert_uint_eq(b.munmap - a.munmap, 1);
	ck_assert_uint_eq(om_cache_trim(d), 0);
}
END_TEST

/* Runs of up to 8 pages are taken by exact length, never cut: a shorter
 * request maps new pages and leaves the run for a request of its length
 * (cut_takes_front has the longer ones). */
START_TEST(exact_length_only)
{
	struct dir_info *d = unit_pool();
	char *p, *q, *r;
	int z = -1;

	if (d->cache_cap[8] == 0)
		return;
	p = own_pages(d, 8);
	om_cache_put(d, p, 8, 0);
	q = om_cache_get(d, 2, 0, &z);
	ck_assert_ptr_nonnull(q);
	ck_assert(q < p || q >= p + 8 * OM_PAGE_SIZE);
	ck_assert_uint_eq(d->cache_n[8], 1);
	ck_assert(cached(d, p));
	memset(q, 1, 2 * OM_PAGE_SIZE);
	/* Nor by a request of more than 3 pages. */
	q = om_cache_get(d, 5, 0, &z);
	ck_assert_ptr_nonnull(q);
	ck_assert(q < p || q >= p + 8 * OM_PAGE_SIZE);
	ck_assert(cached(d, p));
	memset(q, 1, 5 * OM_PAGE_SIZE);
	r = om_cache_get(d, 8, 0, &z);
	ck_assert_ptr_eq(r, p);
	ck_assert_int_eq(z, 0);
	memset(r, 1, 8 * OM_PAGE_SIZE);
	ck_assert_uint_eq(d->cache_n[8], 0);
}
END_TEST

/*
 * A miss for a run of more than 3 pages takes the front of a longer used
 * run of more than 8, the rest left cached behind it, with no system
 * call: blocks of many lengths find the pages of those freed before.  A
 * miss of up to 3 pages does not, nor is a run of up to 8 pages cut
 * (exact_length_only).
 */
START_TEST(cut_takes_front)
{
	struct dir_info *d = unit_pool();
	struct om_os_counts a, b;
	char *p, *q;
	int z = -1;

	if (d->cache_cap[0] == 0 || d->cache_big_max < 150)
		return;
	p = own_pages(d, 150);
	memset(p, 1, 150 * OM_PAGE_SIZE);
	put_busy(d, p, 150);
	settle(d);
	om_os_counts(&a);
	q = om_cache_get(d, 80, 0, &z);
	om_os_counts(&b);
	ck_assert_ptr_eq(q, p);
	ck_assert_int_eq(z, 0);
	ck_assert_uint_eq(b.mmap, a.mmap);
	ck_assert(!cached(d, p + 79 * OM_PAGE_SIZE));
	ck_assert(cached(d, p + 80 * OM_PAGE_SIZE));
	ck_assert_uint_eq(d->cache_n[0], 1);
	ck_assert_uint_eq(d->cache_pages, 70);
	/* Nor is a run of 3 pages cut from it (a batch of fresh ones is
	 * mapped instead). */
	q = om_cache_get(d, 3, 0, &z);
	ck_assert(q < p || q >= p + 150 * OM_PAGE_SIZE);
	ck_assert_uint_eq(d->cache_big_pages, 70);
	/* One of 4 is, and the rest, 66 pages, stays in class 0. */
	q = om_cache_get(d, 4, 0, &z);
	ck_assert_ptr_eq(q, p + 80 * OM_PAGE_SIZE);
	ck_assert_uint_eq(d->cache_big_pages, 66);
	ck_assert_uint_eq(d->cache_n[0], 1);
	/* Of 30 pages: the rest, 36, is now in class 0 still, and the next
	 * cut of 20 leaves 16, in class 16. */
	q = om_cache_get(d, 30, 0, &z);
	ck_assert_ptr_eq(q, p + 84 * OM_PAGE_SIZE);
	q = om_cache_get(d, 20, 0, &z);
	ck_assert_ptr_eq(q, p + 114 * OM_PAGE_SIZE);
	ck_assert_uint_eq(d->cache_n[0], 0);
	ck_assert_uint_eq(d->cache_n[16], 1);
	ck_assert(cached(d, p + 134 * OM_PAGE_SIZE));
}
END_TEST

/*
 * A request longer than every cached run and than class 0 takes
 * (cache_long) grows the longest used run of class 0 shorter than it
 * (mremap): its pages come along, resident, and only the pages added are
 * new.  A request class 0 takes, out of long mode, maps its own and
 * leaves the runs for shorter ones to cut.  Guarded requests and runs
 * grow nothing.
 */
START_TEST(shorter_run_grows)
{
	struct dir_info *d = unit_pool();
	struct om_os_counts a, b;
	unsigned char vec[600];
	size_t mapped, i, resident = 0, stretches = 0;
	char *p, *s, *q;
	int z = -1;

	if (d->cache_cap[0] == 0 || d->cache_big_max < 500 ||
	    d->cache_long != OM_CACHE_BIG || mopts.opt.freeunmap)
		return;
	p = own_pages(d, 300);
	s = own_pages(d, 200);
	memset(p, 1, 300 * OM_PAGE_SIZE);
	memset(s, 1, 200 * OM_PAGE_SIZE);
	put_busy(d, p, 300);
	put_busy(d, s, 200);
	settle(d);
	q = om_cache_get(d, 400, 0, &z);
	ck_assert_ptr_nonnull(q);
	ck_assert_int_eq(z, 1);
	q = om_cache_get(d, 601, 1, &z);
	ck_assert_ptr_nonnull(q);
	ck_assert(cached(d, p) && cached(d, s));
	mapped = d->mapped;
	om_os_counts(&a);
	q = om_cache_get(d, 600, 0, &z);
	om_os_counts(&b);
	ck_assert_ptr_nonnull(q);
	ck_assert_int_eq(z, 0);
	/* Pages mapped below it, or failing that an mremap. */
	ck_assert_uint_ge(b.mmap - a.mmap, 1);
	ck_assert_uint_le(b.mmap - a.mmap, 2);
	ck_assert_uint_eq(b.munmap, a.munmap);
	/* The 300-page run went, the 200-page one stayed. */
	ck_assert(cached(d, s));
	ck_assert_uint_eq(d->cache_n[0], 1);
	ck_assert_uint_eq(d->cache_big_pages, 200);
	ck_assert_uint_eq(d->mapped, mapped + 300 * OM_PAGE_SIZE);
	/* Its pages, resident and holding what they held (junk on the
	 * first), in one stretch, and 300 new ones, zero and not yet
	 * faulted in. */
	ck_assert_int_eq(mincore(q, 600 * OM_PAGE_SIZE, vec), 0);
	for (i = 0; i < 600; i++) {
		int old = (vec[i] & 1) != 0;

		resident += (size_t)old;
		if (i > 0 && old != ((vec[i - 1] & 1) != 0))
			stretches++;
		ck_assert_int_eq(q[i * OM_PAGE_SIZE + 100] != 0, old);
	}
	ck_assert_uint_eq(resident, 300);
	ck_assert_uint_eq(stretches, 1);
	ck_assert_int_eq(munmap(q, 600 * OM_PAGE_SIZE), 0);
}
END_TEST

/*
 * With nothing mapped below the run it grows, the pages added go there:
 * no page moves (mremap would move them, with nothing free behind it
 * either).
 */
START_TEST(shorter_run_grows_down)
{
	struct dir_info *d = unit_pool();
	struct om_os_counts a, b;
	unsigned char vec[600];
	char *x, *p, *q;
	size_t i;
	int z = -1;

	if (d->cache_cap[0] == 0 || d->cache_big_max < 300 ||
	    d->cache_long != OM_CACHE_BIG || mopts.opt.freeunmap)
		return;
	/* 300 pages with 300 free below them and one not ours behind, the
	 * 300 below freed last: the put may map (the bounds index, made
	 * for the first run of more than 8 pages), and the kernel would
	 * put that in the hole. */
	x = om_os_map(601 * OM_PAGE_SIZE, 0);
	ck_assert_ptr_nonnull(x);
	p = x + 300 * OM_PAGE_SIZE;
	d->mapped += 300 * OM_PAGE_SIZE;
	memset(p, 1, 300 * OM_PAGE_SIZE);
	put_busy(d, p, 300);
	settle(d);
	ck_assert_int_eq(munmap(x, 300 * OM_PAGE_SIZE), 0);
	om_os_counts(&a);
	q = om_cache_get(d, 600, 0, &z);
	om_os_counts(&b);
	ck_assert_ptr_eq(q, x);
	ck_assert_int_eq(z, 0);
	ck_assert_uint_eq(b.mmap - a.mmap, 1);
	ck_assert(!cached(d, p));
	ck_assert_int_eq(mincore(q, 600 * OM_PAGE_SIZE, vec), 0);
	for (i = 0; i < 600; i++)
		ck_assert_int_eq(vec[i] & 1, i >= 300);
	ck_assert_int_ne(p[OM_PAGE_SIZE], 0);
	ck_assert_int_eq(munmap(q, 600 * OM_PAGE_SIZE), 0);
}
END_TEST

/*
 * A request longer than class 0 takes at first (cache_long, 512 pages)
 * is cut from a run that joined to be longer than it, as shorter ones
 * are, instead of mapping pages of its own.
 */
START_TEST(long_request_cut_from_joined_run)
{
	struct dir_info *d = unit_pool();
	struct om_os_counts a, b;
	char *p, *q;
	int z = -1;

	if (d->cache_cap[0] == 0 || d->cache_big_max < 600 ||
	    d->cache_long >= 550 || mopts.opt.freeunmap)
		return;
	p = own_pages(d, 600);
	memset(p, 1, 600 * OM_PAGE_SIZE);
	put_busy(d, p, 300);
	put_busy(d, p + 300 * OM_PAGE_SIZE, 300);
	settle(d);
	ck_assert_uint_eq(d->cache_n[0], 1);
	ck_assert_uint_eq(d->cache_big_pages, 600);
	om_os_counts(&a);
	q = om_cache_get(d, 550, 0, &z);
	om_os_counts(&b);
	ck_assert_ptr_eq(q, p);
	ck_assert_int_eq(z, 0);
	ck_assert_uint_eq(b.mmap, a.mmap);
	ck_assert(cached(d, p + 550 * OM_PAGE_SIZE));
	ck_assert_uint_eq(d->cache_big_pages, 50);
}
END_TEST

/*
 * A run of more than 8 pages that comes into the cache takes in the used
 * runs that touch it, on either side, of any length: the front of a cut
 * run, freed, makes the run whole again, and blocks of many lengths
 * freed side by side become one run.  Runs of up to 8 pages come in as
 * they are, and a guarded run is never joined.
 */
START_TEST(runs_join)
{
	struct dir_info *d = unit_pool();
	char *p, *q;
	int z = -1;

	if (d->cache_cap[0] < 4 || d->cache_big_max < 210 ||
	    d->cache_room[5] == 0)
		return;
	p = own_pages(d, 210);
	put_busy(d, p + 70 * OM_PAGE_SIZE, 70);
	put_busy(d, p, 70);
	put_busy(d, p + 140 * OM_PAGE_SIZE, 70);
	ck_assert_uint_eq(d->cache_used, 1);
	ck_assert_uint_eq(d->cache[d->cache_base[0]].p, (uintptr_t)p);
	ck_assert_uint_eq(d->cache[d->cache_base[0]].npages, 210);
	/* Cut, and whole again when the front comes back. */
	q = om_cache_get(d, 100, 0, &z);
	ck_assert_ptr_eq(q, p);
	ck_assert_uint_eq(d->cache_used, 1);
	put_busy(d, q, 100);
	ck_assert_uint_eq(d->cache_used, 1);
	ck_assert_uint_eq(d->cache[d->cache_base[0]].npages, 210);
	settle(d);
	om_cache_trim(d);
	settle(d);

	/* [10][5][9]: the 5-page run stays apart from the 10 it touches,
	 * and the 9 takes in both. */
	q = own_pages(d, 24);
	put_busy(d, q, 10);
	put_busy(d, q + 10 * OM_PAGE_SIZE, 5);
	ck_assert_uint_eq(d->cache_used, 2);
	ck_assert_uint_eq(d->cache_n[5], 1);
	put_busy(d, q + 15 * OM_PAGE_SIZE, 9);
	ck_assert_uint_eq(d->cache_used, 1);
	ck_assert_uint_eq(d->cache_n[24], 1);
	ck_assert_uint_eq(d->cache[d->cache_base[24]].p, (uintptr_t)q);
	om_cache_trim(d);
	settle(d);

	/* A guarded run neither joins nor is joined, and the run on the
	 * other side still is. */
	q = own_pages(d, 30);
	om_cache_put(d, q, 10, 1);
	put_busy(d, q + 20 * OM_PAGE_SIZE, 10);
	put_busy(d, q + 10 * OM_PAGE_SIZE, 10);
	ck_assert_uint_eq(d->cache_n[10], 1);
	ck_assert(d->cache[d->cache_base[10]].guarded);
	ck_assert_uint_eq(d->cache_n[20], 1);
	ck_assert_uint_eq(d->cache[d->cache_base[20]].p,
	    (uintptr_t)q + 10 * OM_PAGE_SIZE);
	settle(d);
}
END_TEST

/*
 * The index that finds a run's neighbours follows runs as they move
 * between slots and as it grows: 60 runs of 9 pages, apart, then the
 * 10-page runs between them, in scattered order, become one run.
 */
START_TEST(runs_join_through_index)
{
	struct dir_info *d = unit_pool();
	size_t n = 60, g = 19, i, j;
	char *p;

	if (d->cache_room[9] < n || d->cache_room[0] == 0 ||
	    d->cache_big_max < n * g)
		return;
	p = own_pages(d, n * g);
	for (i = 0; i < n; i++)
		put_busy(d, p + i * g * OM_PAGE_SIZE, 9);
	ck_assert_uint_eq(d->cache_n[9], n);
	/* j * 37 mod 60 visits every i once. */
	for (j = 0; j < n; j++) {
		i = j * 37 % n;
		put_busy(d, p + (i * g + 9) * OM_PAGE_SIZE, 10);
	}
	ck_assert_uint_eq(d->cache_used, 1);
	ck_assert_uint_eq(d->cache[d->cache_base[0]].p, (uintptr_t)p);
	ck_assert_uint_eq(d->cache[d->cache_base[0]].npages, n * g);
	ck_assert_uint_eq(d->cache_pages, n * g);
	om_cache_trim(d);
	settle(d);
}
END_TEST

/*
 * Over its pages, class 0 gives back its longest runs first, each in one
 * call; a run longer than any it holds is given back itself.  With
 * nothing in classes 1..32 it may hold their shares too.  Runs apart, of
 * lengths spread over the 40 below the longest it takes.
 */
static size_t
class0_limit(const struct dir_info *d)
{
	return d->cache_big_max + d->cache_small_max;
}

static size_t
spread_len(const struct dir_info *d, unsigned int i)
{
	return d->cache_long - 40 + (i * 7) % 40;
}

START_TEST(class0_drops_longest)
{
	struct dir_info *d = unit_pool();
	struct om_os_counts a, b;
	size_t held = 0, len, longest = 0, most, limit = class0_limit(d);
	unsigned int i, n = 0;
	char *p[64];

	if (d->cache_room[0] < 64 || d->cache_big_max < 1024 ||
	    limit > 55 * (d->cache_long - 40))
		return;
	most = d->cache_long - 1;
	for (i = 0; held + most <= limit; i++) {
		ck_assert_uint_lt(n, 60);
		len = spread_len(d, i);
		p[n] = own_pages(d, len);
		put_busy(d, p[n++], len);
		held += len;
		if (len > longest)
			longest = len;
	}
	ck_assert_uint_eq(d->cache_big_pages, held);
	settle(d);
	om_os_counts(&a);
	/* Less than the longest is left: one page more makes it go. */
	len = limit - held + 1;
	if (len < 33)
		len = 33;
	ck_assert_uint_le(len, most);
	p[n] = own_pages(d, len);
	put_busy(d, p[n], len);
	ck_assert(cached(d, p[n]));
	settle(d);
	om_os_counts(&b);
	for (i = 0; i < n; i++)
		if (!cached(d, p[i])) {
			ck_assert_uint_eq(spread_len(d, i), longest);
			ck_assert(unit_unmapped(p[i], longest));
		}
	ck_assert_uint_ge(b.munmap - a.munmap, 1);
	ck_assert_uint_le(b.munmap - a.munmap, 2);
	/* Longer than any cached run, and more than there is room for:
	 * unmapped at once, the cache as it was. */
	held = d->cache_big_pages;
	len = d->cache_long;
	ck_assert_uint_gt(len, longest);
	ck_assert_uint_gt(held + len, limit);
	p[n] = own_pages(d, len);
	put_busy(d, p[n], len);
	settle(d);
	ck_assert(!cached(d, p[n]));
	ck_assert(unit_unmapped(p[n], len));
	ck_assert_uint_eq(d->cache_big_pages, held);
}
END_TEST

/*
 * A class 0 grown for long buffers keeps the buffer freed last, to be cut
 * for the next, and evicts others, even shorter ones: giving back the
 * newest, longest run there made buffers of 2 to 8 MiB fault in a third
 * more pages.
 */
START_TEST(long_mode_keeps_newest)
{
	struct dir_info *d = unit_pool();
	size_t n = 2 * OM_CACHE_BIG;
	char *a, *b, *c;
	int z = -1;

	if (d->cache_max == 0 || n > longest_kept(d))
		return;
	put_gone(d, own_pages(d, n), n);
	ck_assert_ptr_nonnull(om_cache_get(d, n, 0, &z));
	ck_assert_uint_eq(d->cache_long, n);
	a = own_pages(d, n - 10);
	b = own_pages(d, n - 10);
	c = own_pages(d, n);
	put_busy(d, a, n - 10);
	put_busy(d, b, n - 10);
	put_busy(d, c, n);
	settle(d);
	ck_assert(cached(d, c));
	ck_assert_uint_le(d->cache_big_pages, d->cache_big_max);
}
END_TEST

/*
 * In long mode a buffer longer than every cached run grows the run
 * freed last rather than mapping and faulting in pages of its own.
 */
START_TEST(long_mode_grows_shorter)
{
	struct dir_info *d = unit_pool();
	size_t n = 2 * OM_CACHE_BIG;
	struct om_os_counts x, y;
	char *a, *q;
	int z = -1;

	if (d->cache_max == 0 || n > longest_kept(d) || mopts.opt.freeunmap)
		return;
	put_gone(d, own_pages(d, n), n);
	ck_assert_ptr_nonnull(om_cache_get(d, n, 0, &z));
	ck_assert_uint_eq(d->cache_long, n);
	/* With 100 free pages below it, a grows there, in one call. */
	a = (char *)own_pages(d, n) + 100 * OM_PAGE_SIZE;
	ck_assert_int_eq(munmap(a - 101 * OM_PAGE_SIZE, 101 * OM_PAGE_SIZE),
	    0);
	d->mapped -= 100 * OM_PAGE_SIZE;
	put_busy(d, a, n - 100);
	settle(d);
	ck_assert(cached(d, a));
	om_os_counts(&x);
	q = om_cache_get(d, n, 0, &z);
	om_os_counts(&y);
	ck_assert_ptr_nonnull(q);
	ck_assert_int_eq(z, 0);
	ck_assert_uint_eq(y.mmap - x.mmap, 1);
	ck_assert(!cached(d, a));
	ck_assert_uint_eq(d->cache_big_pages, 0);
	ck_assert_int_eq(munmap(q, n * OM_PAGE_SIZE), 0);
}
END_TEST

/*
 * The run a get took whole, freed straight back (a malloc/free loop),
 * comes in as it is, without joining its neighbours; any other run joins
 * them.
 */
START_TEST(loop_run_stays_apart)
{
	struct dir_info *d = unit_pool();
	char *p, *q, *r;
	int z = -1;

	if (d->cache_room[20] == 0 || d->cache_room[0] == 0 ||
	    d->cache_big_max < 40)
		return;
	p = own_pages(d, 40);
	put_busy(d, p, 20);
	q = om_cache_get(d, 20, 0, &z);
	ck_assert_ptr_eq(q, p);
	put_busy(d, p + 20 * OM_PAGE_SIZE, 20);
	put_busy(d, p, 20);
	ck_assert_uint_eq(d->cache_n[20], 2);
	/* Both taken again, the last first back: apart, and the other one
	 * joins it. */
	q = om_cache_get(d, 20, 0, &z);
	ck_assert_ptr_nonnull(q);
	r = om_cache_get(d, 20, 0, &z);
	ck_assert_ptr_nonnull(r);
	put_busy(d, r, 20);
	ck_assert_uint_eq(d->cache_n[20], 1);
	put_busy(d, q, 20);
	ck_assert_uint_eq(d->cache_n[20], 0);
	ck_assert_uint_eq(d->cache_n[0], 1);
	ck_assert_uint_eq(d->cache_big_pages, 40);
	settle(d);
}
END_TEST

/*
 * Where threads share the pool, a run cut for a request counts as taken
 * whole: freed straight back, it stays apart from the rest of the run it
 * came from, which the next request of its length then takes whole, and
 * the two make malloc/free loops instead of being joined and cut again
 * for every request.  As many runs are remembered as threads share the
 * pool (up to four); one taken before those comes back and joins its
 * neighbours.
 */
START_TEST(shared_pool_keeps_runs_apart)
{
	struct dir_info *d = unit_pool();
	int threads = d->threads, z = -1;
	char *p, *q, *r, *s, *y;

	if (d->cache_room[12] == 0 || d->cache_room[16] < 2 ||
	    d->cache_room[32] == 0)
		return;
	d->threads = 2;
	p = own_pages(d, 32);
	y = own_pages(d, 12);
	put_busy(d, y, 12);
	put_busy(d, p, 32);
	q = om_cache_get(d, 16, 0, &z);
	ck_assert_ptr_eq(q, p);
	put_busy(d, q, 16);
	ck_assert_uint_eq(d->cache_n[16], 2);
	ck_assert_uint_eq(d->cache_n[32], 0);

	/* The two threads' loops: each run comes back as it went. */
	q = om_cache_get(d, 16, 0, &z);
	r = om_cache_get(d, 16, 0, &z);
	ck_assert(q == p || q == p + 16 * OM_PAGE_SIZE);
	ck_assert(r == p || r == p + 16 * OM_PAGE_SIZE);
	put_busy(d, q, 16);
	put_busy(d, r, 16);
	ck_assert_uint_eq(d->cache_n[16], 2);
	ck_assert_uint_eq(d->cache_n[32], 0);

	/* A third run taken since q: q comes back as any other run and
	 * takes in r, which it touches. */
	q = om_cache_get(d, 16, 0, &z);
	r = om_cache_get(d, 16, 0, &z);
	s = om_cache_get(d, 12, 0, &z);
	ck_assert_ptr_eq(s, y);
	put_busy(d, r, 16);
	ck_assert_uint_eq(d->cache_n[16], 1);
	put_busy(d, q, 16);
	ck_assert_uint_eq(d->cache_n[16], 0);
	ck_assert_uint_eq(d->cache_n[32], 1);
	ck_assert_uint_eq(d->cache[d->cache_base[32]].p, (uintptr_t)p);
	put_busy(d, s, 12);
	ck_assert_uint_eq(d->cache_n[12], 1);
	d->threads = threads;
	settle(d);
}
END_TEST

/*
 * A miss for a run of up to 8 pages takes 16 pages at once: the rest of
 * the batch waits in the class, untouched, for the next requests.  All
 * of it comes from the pool's reserve: one mmap for the lot.
 */
START_TEST(short_runs_batched)
{
	static const size_t lens[] = { 1, 2, 3, 4 };
	struct dir_info *d = unit_pool();
	struct om_os_counts a, b;
	unsigned int i, k;
	char *p[16];
	int z;

	if (d->cache_max < 16)
		return;
	om_os_counts(&a);
	for (k = 0; k < sizeof(lens) / sizeof(lens[0]); k++) {
		size_t n = lens[k], runs = 16 / n;

		for (i = 0; i < runs; i++) {
			p[i] = om_cache_get(d, n, 0, &z);
			ck_assert_ptr_nonnull(p[i]);
			ck_assert_int_eq(z, 1);
			ck_assert(!cached(d, p[i]));
			if (i == 0)
				ck_assert_uint_eq(d->cache_n[n], runs - 1);
			memset(p[i], 1, n * OM_PAGE_SIZE);
		}
		ck_assert_uint_eq(d->cache_n[n], 0);
		for (i = 0; i < runs; i++)
			om_cache_put(d, p[i], n, 0);
	}
	om_os_counts(&b);
	ck_assert_uint_eq(b.mmap - a.mmap, 1);
}
END_TEST

/*
 * Misses are carved from the top of a reserve mapped ahead; the next
 * reserve is twice as long and, when the kernel maps it right below,
 * one with the rest of the last, which is otherwise cached; malloc_trim
 * unmaps the reserve and starts over.  Runs of more than 128 pages are
 * mapped on their own.
 */
START_TEST(reserve_carves)
{
	struct dir_info *d = unit_pool();
	struct om_os_counts a, b;
	size_t first, left, n = 20;
	char *p, *q, *r;
	int z;

	if (d->cache_max < 16 || d->cache_cap[n] == 0)
		return;
	om_os_counts(&a);
	p = om_cache_get(d, n, 0, &z);
	ck_assert_ptr_nonnull(p);
	first = d->reserve_pages + n;
	ck_assert_uint_ge(first, 3 * n);
	q = om_cache_get(d, n, 0, &z);
	r = om_cache_get(d, n, 0, &z);
	ck_assert_ptr_eq(q, p - n * OM_PAGE_SIZE);
	ck_assert_ptr_eq(r, q - n * OM_PAGE_SIZE);
	ck_assert_int_eq(z, 1);
	memset(r, 1, n * OM_PAGE_SIZE);
	om_os_counts(&b);
	ck_assert_uint_eq(b.mmap - a.mmap, 1);

	/* Take until the reserve runs short: the next one joins its rest,
	 * or the rest is cached, fresh. */
	while (d->reserve_pages >= n)
		ck_assert_ptr_nonnull(om_cache_get(d, n, 0, &z));
	left = d->reserve_pages;
	q = (char *)d->reserve;
	ck_assert_ptr_nonnull(om_cache_get(d, n, 0, &z));
	om_os_counts(&b);
	ck_assert_uint_eq(b.mmap - a.mmap, 2);
	if ((char *)d->reserve + (2 * first << OM_PAGE_SHIFT) == q) {
		ck_assert_uint_eq(d->reserve_pages + n, 2 * first + left);
	} else {
		ck_assert_uint_eq(d->reserve_pages + n, 2 * first);
		if (left > 0 && d->cache_room[left] > 0)
			ck_assert_uint_eq(d->cache_n[left], 1);
	}

	/* malloc_trim's share: the reserve goes, the next starts small. */
	ck_assert_uint_ge(om_cache_trim(d), d->reserve_pages);
	ck_assert_uint_eq(d->reserve_pages, 0);
	settle(d);
	ck_assert_ptr_nonnull(om_cache_get(d, n, 0, &z));
	ck_assert_uint_eq(d->reserve_pages + n, first);

	/* A run longer than the reserve about to be mapped gets a reserve
	 * of its own length, all of it usable. */
	om_cache_trim(d);
	settle(d);
	p = om_cache_get(d, first + 36, 0, &z);
	ck_assert_ptr_nonnull(p);
	memset(p, 1, (first + 36) * OM_PAGE_SIZE);
	ck_assert_uint_eq(d->reserve_pages, 0);
	om_cache_trim(d);
	settle(d);
	ck_assert_ptr_nonnull(om_cache_get(d, n, 0, &z));
	ck_assert_uint_eq(d->reserve_pages + n, first);

	/* A long run is mapped alone, the reserve left as it is. */
	om_os_counts(&a);
	ck_assert_ptr_nonnull(om_cache_get(d, 200, 0, &z));
	om_os_counts(&b);
	ck_assert_uint_eq(b.mmap - a.mmap, 1);
	ck_assert_uint_eq(d->reserve_pages + n, first);
}
END_TEST

START_TEST(guarded_entries_apart)
{
	struct dir_info *d = unit_pool();
	char *p = own_pages(d, 3), *q;
	int z;

	if (d->cache_max < 3)
		return;
	om_os_guard(p + 2 * OM_PAGE_SIZE, OM_PAGE_SIZE);
	om_cache_put(d, p, 3, 1);
	q = om_cache_get(d, 3, 0, &z);
	ck_assert_ptr_ne(q, p);
	ck_assert_int_eq(z, 1);
	q = om_cache_get(d, 3, 1, &z);
	ck_assert_ptr_eq(q, p);
	memset(q, 1, 2 * OM_PAGE_SIZE);
}
END_TEST

START_TEST(junk_fill)
{
	struct dir_info *d = unit_pool();
	uint64_t *p = own_pages(d, 2);
	size_t i, words = 2 * OM_PAGE_SIZE / 8;
	int z;

	if (d->cache_cap[2] == 0)
		return;
	om_cache_put(d, p, 2, 0);
	if (!mopts.opt.freeunmap) {
		if (d->junk == 0) {
			ck_assert_words(p, 0, words);
		} else if (mopts.junk_validate_full) {
			ck_assert_words(p, OM_JUNK_FREE64, words);
		} else {
			/* Sparse: four words of the first page. */
			size_t n = 0;
			for (i = 0; i < words; i++)
				n += p[i] == OM_JUNK_FREE64;
			ck_assert_uint_eq(n, 4);
			ck_assert_uint_eq(p[0], OM_JUNK_FREE64);
			ck_assert_words(p + OM_PAGE_SIZE / 8, 0,
			    words - OM_PAGE_SIZE / 8);
		}
	} else {
		ck_assert(d->cache[d->cache_base[2] + d->cache_n[2] -
		    1].noaccess);
	}
	/* Reuse validates and hands the pages out, not known to be zero. */
	ck_assert_ptr_eq(om_cache_get(d, 2, 0, &z), p);
	ck_assert_int_eq(z, 0);
	p[0] = 1;
	p[words - 1] = 1;
}
END_TEST

/* Whether p's page can be written: in a child, which a fault kills. */
static void
do_poke(void *arg)
{
	*(volatile char *)arg = 1;
}

/*
 * A region grows in place into the cached run behind it: the run gives
 * its front, accessible and its junk checked, and the rest stays cached
 * (PROT_NONE under U).  No run there, or a run too short: nothing done.
 */
START_TEST(take_at_grows_in_place)
{
	struct dir_info *d = unit_pool();
	char *p = own_pages(d, 6);
	size_t pages;
	struct child c;

	if (d->cache_max < 4)
		return;
	put_busy(d, p + 2 * OM_PAGE_SIZE, 3);
	pages = d->cache_pages;
	ck_assert_int_eq(om_cache_take_at(d, (uintptr_t)p + OM_PAGE_SIZE, 1),
	    0);
	ck_assert_int_eq(om_cache_take_at(d, (uintptr_t)p + 2 * OM_PAGE_SIZE,
	    4), 0);
	ck_assert_uint_eq(d->cache_pages, pages);

	ck_assert_int_eq(om_cache_take_at(d, (uintptr_t)p + 2 * OM_PAGE_SIZE,
	    1), 1);
	ck_assert_uint_eq(d->cache_pages, pages - 1);
	ck_assert(!cached(d, p + 2 * OM_PAGE_SIZE));
	ck_assert(cached(d, p + 3 * OM_PAGE_SIZE));
	ck_assert(cached(d, p + 4 * OM_PAGE_SIZE));
	unit_run(do_poke, p + 2 * OM_PAGE_SIZE, &c);
	ck_assert_msg(WIFEXITED(c.status), "taken page: 0x%x", c.status);
	unit_run(do_poke, p + 3 * OM_PAGE_SIZE, &c);
	if (mopts.opt.freeunmap)
		ck_assert_msg(unit_signalled(&c, SIGSEGV), "rest: 0x%x",
		    c.status);
	else
		ck_assert_msg(WIFEXITED(c.status), "rest: 0x%x", c.status);

	/* The whole rest. */
	ck_assert_int_eq(om_cache_take_at(d, (uintptr_t)p + 3 * OM_PAGE_SIZE,
	    2), 1);
	ck_assert_uint_eq(d->cache_pages, pages - 3);
	ck_assert(!cached(d, p + 4 * OM_PAGE_SIZE));
}
END_TEST

/*
 * A block cut from the front of a run grows into the rest even where the
 * cache holds too many runs to search (TAKE_AT_RUNS): the rest is the
 * run kept last.
 */
START_TEST(take_at_finds_rest_in_full_cache)
{
	struct dir_info *d = unit_pool();
	char *big, *q;
	unsigned int k, i;
	int z = -1;

	for (k = 2; k <= 9; k++)
		if (d->cache_room[k] < 40)
			return;
	for (k = 2; k <= 9; k++)
		for (i = 0; i < 40; i++)
			put_busy(d, own_pages(d, k), k);
	ck_assert_uint_gt(d->cache_used, 256);
	big = own_pages(d, 16);
	put_busy(d, big, 16);
	/* A buffer that grows by little takes the longest run's front. */
	q = om_cache_get_to_grow(d, 2, 1, &z);
	ck_assert_ptr_eq(q, big);
	ck_assert(cached(d, big + 2 * OM_PAGE_SIZE));
	ck_assert_int_eq(om_cache_take_at(d, (uintptr_t)big + 2 * OM_PAGE_SIZE,
	    3), 1);
	ck_assert(!cached(d, big + 4 * OM_PAGE_SIZE));
	ck_assert(cached(d, big + 5 * OM_PAGE_SIZE));
	/* Again, from the rest of the rest. */
	ck_assert_int_eq(om_cache_take_at(d, (uintptr_t)big + 5 * OM_PAGE_SIZE,
	    11), 1);
	ck_assert(!cached(d, big + 15 * OM_PAGE_SIZE));
	/* Another used run is found through the index. */
	q = own_pages(d, 2);
	put_busy(d, q, 2);
	ck_assert_int_eq(om_cache_take_at(d, (uintptr_t)q, 1), 1);
	ck_assert(!cached(d, q));
	ck_assert(cached(d, q + OM_PAGE_SIZE));
}
END_TEST

/*
 * A block that moves to grow, with no used run of its length cached,
 * takes the front of a longer used run; the rest stays cached behind it.
 */
START_TEST(get_to_grow_splits_used_run)
{
	struct dir_info *d = unit_pool();
	char *p, *q, *r;
	int z = -1;

	if (d->cache_cap[8] == 0 || d->cache_cap[2] == 0)
		return;
	p = own_pages(d, 8);
	put_busy(d, p, 8);
	q = om_cache_get_to_grow(d, 2, 0, &z);
	ck_assert_ptr_eq(q, p);
	ck_assert_int_eq(z, 0);
	ck_assert(!cached(d, p + OM_PAGE_SIZE));
	ck_assert(cached(d, p + 2 * OM_PAGE_SIZE));
	ck_assert(cached(d, p + 7 * OM_PAGE_SIZE));
	ck_assert_uint_eq(d->cache_n[6], 1);
	memset(q, 1, 2 * OM_PAGE_SIZE);
	/* A used run of its own length: taken as any request takes it. */
	r = own_pages(d, 2);
	put_busy(d, r, 2);
	ck_assert_ptr_null(om_cache_get_to_grow(d, 2, 0, &z));
	/* Nothing longer than asked for: nothing. */
	ck_assert_ptr_null(om_cache_get_to_grow(d, 7, 0, &z));
}
END_TEST

/*
 * A block that grows step by step (a buffer being built up) takes the
 * front of the longest used run, even with used runs of its own length
 * and of lengths in between: the last buffer freed, which it can then
 * grow through to the end.
 */
START_TEST(step_growth_takes_longest_run)
{
	struct dir_info *d = unit_pool();
	char *big, *mid, *own, *q;
	int z = -1;

	if (d->cache_cap[16] == 0 || d->cache_cap[4] == 0 ||
	    d->cache_cap[2] == 0)
		return;
	big = own_pages(d, 16);
	mid = own_pages(d, 4);
	own = own_pages(d, 2);
	put_busy(d, big, 16);
	put_busy(d, mid, 4);
	put_busy(d, own, 2);
	q = om_cache_get_to_grow(d, 2, 1, &z);
	ck_assert_ptr_eq(q, big);
	ck_assert_int_eq(z, 0);
	ck_assert(cached(d, big + 2 * OM_PAGE_SIZE));
	ck_assert_uint_eq(d->cache_n[14], 1);
	ck_assert(cached(d, mid));
	ck_assert(cached(d, own));
	/* Nothing longer than asked for: nothing. */
	ck_assert_ptr_null(om_cache_get_to_grow(d, 15, 1, &z));
}
END_TEST

/*
 * Only the block that grew last, growing by an eighth or less, is placed
 * as a buffer being built up (om_cache_grow_flags): another block that
 * grows by a small step, one of many resized at random, takes a run of
 * its own length like any other move.
 */
START_TEST(step_growth_of_the_last_grown_block)
{
	struct dir_info *d = unit_pool();
	uintptr_t a = 0x10000000, b = 0x20000000;

	/* Block a grew last, from a chunk to two pages. */
	om_cache_grew(d, 0, 0, a, 2);
	ck_assert_int_eq(om_cache_grow_flags(d, a, 8000, 9000),
	    OM_ALLOC_GROW | OM_ALLOC_STEP);
	ck_assert_int_eq(om_cache_grow_flags(d, a, 8000, 16000),
	    OM_ALLOC_GROW);
	ck_assert_int_eq(om_cache_grow_flags(d, b, 8000, 9000),
	    OM_ALLOC_GROW);
	/* Then b grew: it is the one building up now. */
	om_cache_grew(d, b, 2, b, 3);
	ck_assert_int_eq(om_cache_grow_flags(d, b, 12000, 13000),
	    OM_ALLOC_GROW | OM_ALLOC_STEP);
	ck_assert_int_eq(om_cache_grow_flags(d, a, 8000, 9000),
	    OM_ALLOC_GROW);
}
END_TEST

/* Run fn in a child that writes into cached pages: under U the write
 * faults, otherwise the junk check reports it. */
static void
assert_write_caught(void (*fn)(void *), void *arg)
{
	struct child c;

	unit_run(fn, arg, &c);
	if (mopts.opt.freeunmap)
		ck_assert_msg(unit_signalled(&c, SIGSEGV),
		    "write into a PROT_NONE cached page: 0x%x", c.status);
	else
		ck_assert_fatal(&c, "malloc", "write after free");
}

/* A write into the cached run a region grows into is caught. */
static void
do_write_then_take(void *arg)
{
	struct dir_info *d = unit_pool();
	char *p = own_pages(d, 3);

	(void)arg;
	put_busy(d, p + OM_PAGE_SIZE, 2);
	p[OM_PAGE_SIZE] = 'x';
	om_cache_take_at(d, (uintptr_t)p + OM_PAGE_SIZE, 1);
}

START_TEST(take_at_checks_junk)
{
	unit_init();
	if (mopts.opt.junk == 0 || mopts.opt.cache_pages < 2)
		return;
	assert_write_caught(do_write_then_take, NULL);
}
END_TEST

static void
do_write_cached(void *arg)
{
	struct dir_info *d = unit_pool();
	int z, trim = *(int *)arg;
	uint64_t *p = own_pages(d, 2);

	/* The only run of its length, so the get below takes it. */
	om_cache_put(d, p, 2, 0);
	p[0] = 0x4141414141414141ULL;
	if (trim)
		om_cache_trim(d);
	else
		om_cache_get(d, 2, 0, &z);
}

START_TEST(write_after_free_detected)
{
	int trim;

	unit_init();
	if (mopts.opt.junk == 0 || mopts.opt.cache_pages < 2)
		return;
	for (trim = 0; trim < 2; trim++)
		assert_write_caught(do_write_cached, &trim);
}
END_TEST

static void
do_api_write_cached(void *arg)
{
	char *volatile p = malloc(5 * OM_PAGE_SIZE);
	char *volatile q;

	(void)arg;
	free(p);
	((volatile char *)p)[0] = 'x';
	/* Other cached entries may be taken first; try until p is. */
	for (;;) {
		q = malloc(5 * OM_PAGE_SIZE);
		if (q == p)
			break;
	}
}

START_TEST(api_write_after_free)
{
	unit_init();
	if (mopts.opt.junk == 0 || mopts.opt.cache_pages < 5)
		return;
	assert_write_caught(do_api_write_cached, NULL);
}
END_TEST

static void
do_junk_validate(void *arg)
{
	uint64_t w[64];

	memset(w, OM_JUNK_FREE, sizeof(w));
	w[*(int *)arg] ^= 0x100;
	om_junk_validate(NULL, 1, w, sizeof(w));
}

/* Level 1 on page runs: the four words of the first page, each checked. */
static void
do_page_junk_validate(void *arg)
{
	static uint64_t pg[2 * OM_PAGE_SIZE / 8];

	om_junk_free(1, pg, sizeof(pg));
	pg[mopts.page_junk[*(int *)arg]] ^= 0x100;
	om_junk_validate(NULL, 0, pg, sizeof(pg));
}

/* Level 2 (J, F): every byte of the run filled and checked. */
static void
do_full_junk_validate(void *arg)
{
	static uint64_t pg[2 * OM_PAGE_SIZE / 8];

	om_junk_free(2, pg, sizeof(pg));
	((unsigned char *)pg)[*(size_t *)arg] ^= 1;
	om_junk_validate(NULL, 1, pg, sizeof(pg));
}

/*
 * The front: a malloc/free loop of a 64 KiB block leaves the run beside
 * its class, counted as cached, and takes it back from there; anything
 * else puts it into its class first.
 */
START_TEST(front_takes_loop_run)
{
	struct dir_info *d = unit_front_pool();
	struct mallinfo2 m;
	char *p, *q;
	size_t pages;

	if (d == NULL)
		return;
	ck_assert_uint_eq(d->cache_n[UNIT_FRONT_PAGES], 0);
	p = unit_front_loop(d);
	/* Not in its class, but counted as cached, by mallinfo2 too. */
	ck_assert_uint_eq(d->cache_n[UNIT_FRONT_PAGES], 0);
	ck_assert_uint_eq(om_cache_held(d), d->cache_pages + UNIT_FRONT_PAGES);
	m = mallinfo2();
	ck_assert_uint_ge(m.fordblks, (size_t)UNIT_FRONT_PAGES * OM_PAGE_SIZE);
	ck_assert_uint_ge(m.ordblks, 1);
	/* Taken back from the front, and put back there. */
	q = malloc(UNIT_FRONT_PAGES * OM_PAGE_SIZE);
	ck_assert_ptr_eq(q, p);
	ck_assert_uint_eq(d->cache_front, 0);
	free(q);
	ck_assert_ptr_eq((void *)d->cache_front, p);
	/* A get of another length puts it into its class first (two
	 * pages: short requests are never cut from longer runs). */
	pages = d->cache_pages;
	q = malloc(2 * OM_PAGE_SIZE);
	ck_assert_ptr_nonnull(q);
	ck_assert_uint_eq(d->cache_front, 0);
	ck_assert_uint_eq(d->cache_n[UNIT_FRONT_PAGES], 1);
	ck_assert_uint_ge(d->cache_pages, pages + UNIT_FRONT_PAGES);
	free(q);
}
END_TEST

/*
 * A class that holds used runs of the length keeps the draw: a get
 * chooses among them and the front's run, each as likely, and the one
 * it takes leaves its slot to the front's.
 */
#define DRAWS 400

START_TEST(front_draws_among_used_runs)
{
	struct dir_info *d = unit_front_pool();
	char *run[4], *apart[4], *p, *last = NULL;
	int seen[4] = { 0 }, again = 0, i, j;

	/* Four runs of the length kept (not under <<<<<). */
	if (d == NULL || d->cache_room[UNIT_FRONT_PAGES] < 4)
		return;
	/* A block kept between every two, or the runs would join. */
	for (i = 0; i < 4; i++) {
		run[i] = malloc(UNIT_FRONT_PAGES * OM_PAGE_SIZE);
		apart[i] = malloc(UNIT_FRONT_PAGES * OM_PAGE_SIZE);
		ck_assert_ptr_nonnull(run[i]);
		ck_assert_ptr_nonnull(apart[i]);
	}
	for (i = 0; i < 4; i++)
		free(run[i]);
	for (i = 0; i < DRAWS; i++) {
		p = malloc(UNIT_FRONT_PAGES * OM_PAGE_SIZE);
		for (j = 0; j < 4 && p != run[j]; j++)
			;
		ck_assert_int_lt(j, 4);
		seen[j]++;
		again += p == last;
		last = p;
		free(p);
		ck_assert_ptr_eq((void *)d->cache_front, p);
		ck_assert_uint_eq(d->cache_n[UNIT_FRONT_PAGES], 3);
		ck_assert_uint_eq(d->cache_warm[UNIT_FRONT_PAGES], 3);
	}
	/* Each a quarter of the draws, 100 give or take 9, and the run
	 * just freed too: drawn, not handed back every time. */
	for (j = 0; j < 4; j++) {
		ck_assert_int_gt(seen[j], DRAWS / 8);
		ck_assert_int_lt(seen[j], DRAWS * 3 / 8);
	}
	ck_assert_int_gt(again, DRAWS / 8);
	ck_assert_int_lt(again, DRAWS * 3 / 8);
	for (i = 0; i < 4; i++)
		free(apart[i]);
}
END_TEST

static int
cmp_uptr(const void *a, const void *b)
{
	uintptr_t x = *(const uintptr_t *)a, y = *(const uintptr_t *)b;

	return x < y ? -1 : x > y;
}

/*
 * What is wrong with the cache, or NULL: its counts agree with its slots
 * (used runs first, then fresh ones), and no run is held twice, in two
 * slots or in a slot and the front, nor is a block in use among them.
 * Checked without an assertion each, which Check would report one by
 * one to the parent.
 */
static const char *
cache_fault(const struct dir_info *d, char *const *live, size_t nlive)
{
	static uintptr_t runs[1 << 14];
	static char why[128];
	size_t pages = 0, big = 0, n = 0;
	unsigned int used = 0, k, i;
	uint64_t classes = 0;

	for (k = 0; k < OM_CACHE_CLASSES; k++) {
		if (d->cache_warm[k] > d->cache_n[k] ||
		    d->cache_n[k] > d->cache_room[k])
			return "a class's counts";
		for (i = 0; i < d->cache_n[k]; i++) {
			const struct om_cache_entry *e =
			    &d->cache[d->cache_base[k] + i];

			if (k != 0 && e->npages != k)
				return "a run in another length's class";
			if (e->fresh != (i >= d->cache_warm[k]))
				return "used and fresh runs mixed";
			if (n == sizeof(runs) / sizeof(runs[0]))
				return "more runs than the check holds";
			pages += e->npages;
			big += k == 0 ? e->npages : 0;
			runs[n++] = e->p;
		}
		used += d->cache_n[k];
		if (d->cache_n[k] != 0)
			classes |= (uint64_t)1 << k;
	}
	if (pages != d->cache_pages || big != d->cache_big_pages ||
	    used != d->cache_used || classes != d->cache_classes)
		return "the pool's totals";
	if (!om_cache_edges_hold(d))
		return "a run's ends not in the edges filter";
	if (d->cache_front != 0)
		runs[n++] = d->cache_front;
	qsort(runs, n, sizeof(runs[0]), cmp_uptr);
	for (i = 1; i < n; i++)
		if (runs[i] == runs[i - 1]) {
			snprintf(why, sizeof(why), "run %p held twice",
			    (void *)runs[i]);
			return why;
		}
	for (i = 0; i < nlive; i++) {
		uintptr_t p = (uintptr_t)live[i] & ~(uintptr_t)OM_PAGE_MASK;

		if (live[i] != NULL && bsearch(&p, runs, n, sizeof(runs[0]),
		    cmp_uptr) != NULL) {
			snprintf(why, sizeof(why), "block %p in use and "
			    "cached", (void *)live[i]);
			return why;
		}
	}
	return NULL;
}

/* Blocks of a page and more, taken, freed, grown and trimmed at random:
 * the cache stays whole through the front's gets and puts. */
START_TEST(front_keeps_cache_whole)
{
	struct dir_info *d = unit_front_pool();
	char *live[24] = { NULL };
	const char *fault;
	unsigned int seed = 12345, step;
	size_t i, len;

	if (d == NULL)
		return;
	for (step = 0; step < 20000; step++) {
		seed = seed * 1103515245u + 12345u;
		i = (seed >> 8) % 24;
		/* Short runs mostly, as a loop of a few lengths makes. */
		len = (seed >> 28) < 12 ? 4 : 40;
		len = (1 + (seed >> 16) % len) * OM_PAGE_SIZE;
		if ((seed >> 4) % 512 == 0)
			malloc_trim(0);
		else if (live[i] == NULL)
			live[i] = malloc(len);
		else if ((seed >> 12) % 8 == 0)
			live[i] = realloc(live[i], len);
		else {
			free(live[i]);
			live[i] = NULL;
		}
		if ((fault = cache_fault(d, live, 24)) != NULL)
			ck_abort_msg("step %u: %s", step, fault);
	}
	for (i = 0; i < 24; i++)
		free(live[i]);
	fault = cache_fault(d, NULL, 0);
	ck_assert_msg(fault == NULL, "at the end: %s", fault);
}
END_TEST

/*
 * In a pool of one thread a run cut from a longer one and freed joins
 * it again; cut from it again at the same length, it is a loop's: freed,
 * it waits in the front, and the next get of its length takes it from
 * there instead of cutting the longer run once more.
 */
START_TEST(cut_twice_is_a_loop)
{
	struct dir_info *d = unit_front_pool();
	char *big, *p, *q;
	int i, bad = 0;

	/* Class 0 keeps runs of 256 pages (not under <<<<). */
	if (d == NULL || d->threads > 1 || d->cache_big_max < 256)
		return;
	big = malloc(256 * OM_PAGE_SIZE);
	ck_assert_ptr_nonnull(big);
	free(big);
	ck_assert_int_eq(cached(d, big), 1);
	/* Cut, freed, whole again. */
	p = malloc(UNIT_FRONT_PAGES * OM_PAGE_SIZE);
	ck_assert_ptr_eq(p, big);
	free(p);
	ck_assert_uint_eq(d->cache_front, 0);
	ck_assert_uint_eq(d->cache_n[0], 1);
	ck_assert_uint_eq(d->cache[d->cache_base[0]].npages, 256);
	/* Cut again alike: a loop's run from now on. */
	p = malloc(UNIT_FRONT_PAGES * OM_PAGE_SIZE);
	ck_assert_ptr_eq(p, big);
	free(p);
	ck_assert_ptr_eq((void *)d->cache_front, p);
	ck_assert_uint_eq(d->cache[d->cache_base[0]].npages,
	    256 - UNIT_FRONT_PAGES);
	for (i = 0; i < 100; i++) {
		q = malloc(UNIT_FRONT_PAGES * OM_PAGE_SIZE);
		bad += q != p || d->cache_front != 0;
		free(q);
		bad += d->cache_front != (uintptr_t)p;
	}
	ck_assert_int_eq(bad, 0);
}
END_TEST

/* The length of the cached run that starts at p, 0 if none does. */
static size_t
run_at(const struct dir_info *d, const void *p)
{
	const struct om_cache_entry *e = cached_run(d, p);

	return e != NULL && e->p == (uintptr_t)p ? e->npages : 0;
}

/*
 * A block grows across the used runs cached one after another behind it
 * where the first is too short: all but the last taken whole, the front
 * of the last, the rest of it cached.  Runs too short together, or more
 * of them than CHAIN_RUNS (8), stay as they were.
 */
START_TEST(take_at_across_runs)
{
	struct dir_info *d = unit_pool();
	char *x;
	unsigned int i;

	if (mopts.opt.freeunmap || d->cache_room[1] < 9 ||
	    d->cache_room[2] < 2 || d->cache_room[4] < 1)
		return;
	/* A run of more than 8 pages, not a loop's, makes the index. */
	put_busy(d, own_pages(d, 10), 10);
	ck_assert_ptr_nonnull(d->cache_bounds);
	x = own_pages(d, 8);
	put_busy(d, x, 2);
	put_busy(d, x + 2 * OM_PAGE_SIZE, 2);
	put_busy(d, x + 4 * OM_PAGE_SIZE, 4);
	ck_assert_int_eq(om_cache_take_at(d, (uintptr_t)x, 9), 0);
	ck_assert_uint_eq(run_at(d, x), 2);
	ck_assert_uint_eq(run_at(d, x + 2 * OM_PAGE_SIZE), 2);
	ck_assert_uint_eq(run_at(d, x + 4 * OM_PAGE_SIZE), 4);
	ck_assert_int_eq(om_cache_take_at(d, (uintptr_t)x, 6), 1);
	for (i = 0; i < 6; i++)
		ck_assert(!cached(d, x + i * OM_PAGE_SIZE));
	ck_assert_uint_eq(run_at(d, x + 6 * OM_PAGE_SIZE), 2);

	x = own_pages(d, 9);
	for (i = 0; i < 9; i++)
		put_busy(d, x + i * OM_PAGE_SIZE, 1);
	ck_assert_int_eq(om_cache_take_at(d, (uintptr_t)x, 9), 0);
	for (i = 0; i < 9; i++)
		ck_assert_uint_eq(run_at(d, x + i * OM_PAGE_SIZE), 1);
	ck_assert_int_eq(om_cache_take_at(d, (uintptr_t)x, 8), 1);
	for (i = 0; i < 8; i++)
		ck_assert(!cached(d, x + i * OM_PAGE_SIZE));
	ck_assert_uint_eq(run_at(d, x + 8 * OM_PAGE_SIZE), 1);
}
END_TEST

/* The thread's pool, freshly trimmed, where realloc may resize page
 * regions in place (no guard pages, no R, not concealed); NULL if not. */
static struct dir_info *
resizing_pool(void)
{
	struct dir_info *d = unit_own_pool();

	if (mopts.guard || mopts.opt.realloc_move || d->conceal ||
	    d->threads > 1)
		return NULL;
	return d;
}

/*
 * A run taken whole that realloc cut in place is no loop's run when its
 * block is freed: it joins the rest cut off it, and the cache holds the
 * run whole again, not two halves (which a loop of such blocks took for
 * two runs of the shorter length, mapping the longer anew every time).
 */
START_TEST(cut_block_joins_its_rest)
{
	struct dir_info *d = resizing_pool();
	char *p, *q;
	int i;

	/* Runs of 32 pages are cached (not under <<<<). */
	if (d == NULL || d->cache_room[32] == 0)
		return;
	for (i = 0; i < 3; i++) {
		p = malloc(32 * OM_PAGE_SIZE);
		ck_assert_ptr_nonnull(p);
		q = realloc(p, 16 * OM_PAGE_SIZE);
		ck_assert_ptr_eq(q, p);
		ck_assert_uint_eq(run_at(d, p + 16 * OM_PAGE_SIZE), 16);
		free(q);
		ck_assert_uint_eq(d->cache_front, 0);
		ck_assert_uint_eq(run_at(d, p), 32);
		ck_assert_uint_eq(run_at(d, p + 16 * OM_PAGE_SIZE), 0);
	}
}
END_TEST

/*
 * A buffer built again and again from one length by realloc grows in
 * place: the get of its first length cuts the run the last one left
 * (once a growth), and the block grows into the rest.  n pages doubled
 * once, and 1 page doubled up to 16.
 */
START_TEST(grown_block_regrows_in_place)
{
	static const size_t first[] = { 1, 4, 16 };
	struct dir_info *d = resizing_pool();
	char *p, *q, *last = NULL, *chunks[8];
	size_t f, n, len;
	int i, moved;

	if (d == NULL)
		return;
	for (f = 0; f < sizeof(first) / sizeof(first[0]); f++) {
		n = first[f];
		/* A cache too small to keep runs of 2n pages (<<<<) maps
		 * every block anew. */
		if (d->cache_room[2 * n] == 0)
			continue;
		for (i = 0; i < 4; i++) {
			p = malloc(n * OM_PAGE_SIZE);
			ck_assert_ptr_nonnull(p);
			p[0] = 1;
			if (i > 0)
				ck_assert_ptr_eq(p, last);
			q = realloc(p, 2 * n * OM_PAGE_SIZE);
			ck_assert_ptr_nonnull(q);
			if (i > 0)
				ck_assert_ptr_eq(q, p);
			ck_assert_int_eq(q[0], 1);
			ck_assert_uint_eq(d->cache_grow_first, n);
			free(q);
			last = q;
		}
	}
	/* Runs of 9-16 pages kept by four (not under <<<<<). */
	if (d->cache_room[16] < 4)
		return;
	for (i = 0; i < 4; i++) {
		p = malloc(OM_PAGE_SIZE);
		ck_assert_ptr_nonnull(p);
		moved = 0;
		for (len = 2; len <= 16; len *= 2) {
			q = realloc(p, len * OM_PAGE_SIZE);
			ck_assert_ptr_nonnull(q);
			moved += q != p;
			p = q;
		}
		if (i > 0)
			ck_assert_int_eq(moved, 0);
		free(p);
		last = p;
	}
	/* New chunk pages leave the run alone. */
	for (i = 0; i < 8; i++) {
		chunks[i] = malloc(OM_PAGE_SIZE / 2);
		ck_assert_ptr_nonnull(chunks[i]);
	}
	ck_assert_uint_eq(d->cache_grow_first, 1);
	/* Once a growth: a get of the first length without one after it
	 * leaves the next get of that length alone. */
	p = malloc(OM_PAGE_SIZE);
	ck_assert_ptr_eq(p, last);
	ck_assert_uint_eq(d->cache_grow_first, 0);
	free(p);
	for (i = 0; i < 8; i++)
		free(chunks[i]);
}
END_TEST

/* Take the page below p, so that no mapping can end where p starts: 1
 * if it is taken now, by this or something else. */
static int
block_below(uintptr_t p)
{
	return mmap((char *)p - OM_PAGE_SIZE, OM_PAGE_SIZE, PROT_NONE,
	    MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0) !=
	    MAP_FAILED || errno == EEXIST;
}

/*
 * Runs of more than 32 pages (class 0, of many lengths) use the front
 * too, also where class 0 holds a fresh run: the rest of a reserve that
 * the next one could not join, which a get's draw covers while class 0
 * has few used runs.  The loop's run is taken back from the front, and
 * class 0 is left as it was, its fresh run in its slot.
 */
#define LONG_PAGES 64

START_TEST(front_takes_long_run)
{
	struct dir_info *d = unit_front_pool();
	struct om_cache_entry fresh;
	char *one, *p, *q;
	int i, bad = 0;

	if (d == NULL)
		return;
	/* A page from a new reserve, and the page below that reserve taken,
	 * so that the next reserve cannot join it: the rest of this one
	 * goes into class 0, fresh. */
	one = malloc(OM_PAGE_SIZE);
	ck_assert_ptr_nonnull(one);
	ck_assert_uint_gt(d->reserve_pages, OM_CACHE_SMALL);
	ck_assert_int_eq(block_below(d->reserve), 1);
	p = malloc(LONG_PAGES * OM_PAGE_SIZE);
	ck_assert_ptr_nonnull(p);
	ck_assert_uint_eq(d->cache_n[0], 1);
	ck_assert_uint_eq(d->cache_warm[0], 0);
	fresh = d->cache[d->cache_base[0]];
	ck_assert_uint_ne(fresh.npages, LONG_PAGES);
	/* Freed, taken from class 0, freed again: a loop's run. */
	free(p);
	q = malloc(LONG_PAGES * OM_PAGE_SIZE);
	ck_assert_ptr_eq(q, p);
	free(q);
	ck_assert_ptr_eq((void *)d->cache_front, p);
	ck_assert_uint_eq(om_cache_held(d), d->cache_pages + LONG_PAGES);
	for (i = 0; i < 100; i++) {
		q = malloc(LONG_PAGES * OM_PAGE_SIZE);
		bad += q != p || d->cache_front != 0 || d->cache_n[0] != 1 ||
		    d->cache_warm[0] != 0 ||
		    d->cache[d->cache_base[0]].p != fresh.p;
		free(q);
		bad += d->cache_front != (uintptr_t)p;
	}
	ck_assert_int_eq(bad, 0);
	free(one);
}
END_TEST

/*
 * A loop's run of class 0 goes to the front only where class 0 would
 * take it without giving anything back.  Here class 0 fills while the
 * run is out: to within fewer pages than the run has of its limit
 * (big_max: its share and what the short classes leave), or to its last
 * slot.  The put gives back the longest run, or a quarter of the class,
 * for it, as it would without the front.
 */
#define LIMIT_RUN 100

/* The loop's run, taken whole from class 0, and count runs of len pages
 * put into class 0 while it is out. */
static void *
fill_while_out(struct dir_info *d, size_t count, size_t len)
{
	void *r, *q;
	size_t i;
	int z;

	om_lock(d);
	r = om_cache_get(d, LIMIT_RUN, 0, &z);
	om_cache_put(d, r, LIMIT_RUN, 0);
	q = om_cache_get(d, LIMIT_RUN, 0, &z);
	om_unlock(d);
	ck_assert_ptr_nonnull(r);
	ck_assert_ptr_eq(q, r);
	ck_assert_uint_eq(d->cache_front, 0);
	ck_assert_uint_eq(d->cache_big_pages, 0);
	ck_assert_uint_le(len, d->cache_long);
	for (i = 0; i < count; i++)
		put_busy(d, own_pages(d, len), len);
	ck_assert_uint_eq(d->cache_n[0], count);
	return r;
}

static void
put_back(struct dir_info *d, void *r)
{
	om_lock(d);
	om_cache_put(d, r, LIMIT_RUN, 0);
	om_unlock(d);
	ck_assert_uint_eq(d->cache_front, 0);
	ck_assert_int_eq(cached(d, r), 1);
}

START_TEST(front_keeps_class0_pages)
{
	struct dir_info *d = unit_front_pool();
	size_t small, limit, count, len;
	void *r;

	if (d == NULL || d->cache_room[0] < 2)
		return;
	small = d->cache_pages - d->cache_big_pages;
	limit = d->cache_big_max + (small < d->cache_small_max ?
	    d->cache_small_max - small : 0);
	/* At most LIMIT_RUN runs: count runs of len pages then hold more
	 * than limit - LIMIT_RUN pages, and no more than limit. */
	count = d->cache_room[0] - 1u < LIMIT_RUN ? d->cache_room[0] - 1u :
	    LIMIT_RUN;
	len = (limit - LIMIT_RUN) / count + 1;
	/* A small cache (<<<<) has too few slots for runs that class 0
	 * keeps (up to big_max pages each) to come so near its limit. */
	if (len > d->cache_big_max)
		return;
	r = fill_while_out(d, count, len);
	ck_assert_uint_le(d->cache_big_pages, limit);
	ck_assert_uint_gt(d->cache_big_pages + LIMIT_RUN, limit);
	put_back(d, r);
	ck_assert_uint_eq(d->cache_n[0], count);
	ck_assert_uint_le(d->cache_big_pages, limit);
	settle(d);
	malloc_trim(0);
}
END_TEST

START_TEST(front_keeps_class0_slots)
{
	struct dir_info *d = unit_front_pool();
	unsigned int room;
	void *r;

	if (d == NULL || d->cache_room[0] < 4)
		return;
	room = d->cache_room[0];
	r = fill_while_out(d, room, OM_CACHE_SMALL + 1);
	put_back(d, r);
	ck_assert_uint_eq(d->cache_n[0], room - evicted_of(d, 0) + 1);
	settle(d);
	malloc_trim(0);
}
END_TEST

/*
 * What om_cache_put and om_cache_get leave, the front's way, is what
 * the long way leaves (om_cache_put_run, om_cache_get_run: the run put
 * into its class, then a draw over it) for the same random bytes: the
 * same run, the same pool fields, the same runs slot for slot.  Runs of
 * many lengths come and go at the cache's level, in this thread's pool,
 * so that the front applies; each run just taken is put back and asked
 * for again both ways, from the same state.  Nothing here allocates
 * while the pool is locked.
 */
#define SAME_ROUNDS 3
#define SAME_STEPS 1000
#define SAME_SLOTS 8192

struct cache_state {
	struct dir_info d;
	struct om_cache_entry slot[SAME_SLOTS];
	uint64_t edges[SAME_SLOTS];	/* the edges filter, a word a slot */
	void *got;
	int zeroed;
};

static struct cache_state same_from, same_a, same_b;

static unsigned int
slots_of(const struct dir_info *d)
{
	return d->cache_base[0] + d->cache_room[0];
}

/* The edges filter's words. */
static size_t
edge_words(const struct dir_info *d)
{
	return ((size_t)1 << (64 - d->cache_edges_shift)) / 64;
}

/*
 * Not compared: the length of an empty front, what it last held, and the
 * edges filter, bits for where runs may be that a put and a get set on
 * their own paths (saved, for both ways to start from the same).
 */
static void
state_save(const struct dir_info *d, struct cache_state *s)
{
	s->d = *d;
	if (s->d.cache_front == 0)
		s->d.cache_front_npages = 0;
	s->d.cache_edges_set = 0;
	memcpy(s->slot, d->cache, slots_of(d) * sizeof(s->slot[0]));
	memcpy(s->edges, d->cache_edges, edge_words(d) * sizeof(uint64_t));
}

static void
state_load(struct dir_info *d, const struct cache_state *s)
{
	*d = s->d;
	memcpy(d->cache, s->slot, slots_of(d) * sizeof(s->slot[0]));
	memcpy(d->cache_edges, s->edges, edge_words(d) * sizeof(uint64_t));
}

/* Where a and b differ, or NULL.  Slots past a class's runs are left
 * over from runs that moved, and may differ. */
static const char *
state_diff(const struct cache_state *a, const struct cache_state *b)
{
	unsigned int k, i;

	if (a->got != b->got || a->zeroed != b->zeroed)
		return "the run got";
	if (memcmp(&a->d, &b->d, sizeof(a->d)) != 0)
		return "the pool's fields";
	for (k = 0; k < OM_CACHE_CLASSES; k++)
		for (i = 0; i < a->d.cache_n[k]; i++)
			if (memcmp(&a->slot[a->d.cache_base[k] + i],
			    &b->slot[a->d.cache_base[k] + i],
			    sizeof(a->slot[0])) != 0)
				return "a class's runs";
	return NULL;
}

/* The slots past each class's runs, left over from runs that moved,
 * made to look like runs of npages: a get that read one as a run would
 * take it (and fault) or draw otherwise. */
static void
poison_spare_slots(struct dir_info *d, size_t npages)
{
	struct om_cache_entry bad = { .p = OM_PAGE_SIZE,
		.npages = (uint32_t)npages };
	unsigned int k, i;

	for (k = 0; k < OM_CACHE_CLASSES; k++)
		for (i = d->cache_n[k]; i < d->cache_room[k]; i++)
			d->cache[d->cache_base[k] + i] = bad;
}

/* Whether a get took run p whole, so that a put of it is a loop's: one
 * that leaves the bounds index alone, which the states do not hold. */
static int
taken_whole(const struct dir_info *d, const void *p)
{
	unsigned int t;

	for (t = 0; t < OM_CACHE_TAKEN; t++)
		if (d->cache_taken[t] == (uintptr_t)p)
			return 1;
	return 0;
}

/*
 * Fresh runs of FRESH_PAGES in class 0, as a pool gets them: the rest of
 * a reserve that the next reserve, mapped for a run longer than that
 * rest, cannot join, since the page below the rest is taken.  The runs
 * taken on the way go to live[] (their lengths to len[]), FRESH_KEPT at
 * most.  What went
 * wrong, or NULL: called with the pool locked, where Check's assertions
 * would allocate.
 */
#define FRESH_PAGES 36
#define FRESH_RUNS 16
#define FRESH_KEPT (6 * FRESH_RUNS)	/* runs taken on the way, at most */

/* A run of npages from the cache, in live[*n] (its length in len[*n]);
 * 0 if there was none. */
static int
take_run(struct dir_info *d, void **live, size_t *len, unsigned int *n,
    size_t npages)
{
	int z;

	len[*n] = npages;
	live[*n] = om_cache_get(d, npages, 0, &z);
	return live[(*n)++] != NULL;
}

static const char *
fresh_long_runs(struct dir_info *d, void **live, size_t *len)
{
	unsigned int i, n = 0;

	for (i = 0; i < FRESH_RUNS; i++) {
		if (n + 6 > FRESH_KEPT)
			return "too many runs taken";
		/* A reserve longer than FRESH_PAGES by more than 8 pages
		 * (shorter runs come in batches), then cut to FRESH_PAGES by
		 * runs of at most 128 (longer ones are mapped apart). */
		if (!take_run(d, live, len, &n, 1) ||
		    (d->reserve_pages < FRESH_PAGES + 9 &&
		    !take_run(d, live, len, &n, FRESH_PAGES + 9)))
			return "no run";
		while (d->reserve_pages > FRESH_PAGES + 128 &&
		    n + 4 < FRESH_KEPT)
			if (!take_run(d, live, len, &n, 100))
				return "no run";
		if (d->reserve_pages - FRESH_PAGES > 128 ||
		    !take_run(d, live, len, &n, d->reserve_pages -
		    FRESH_PAGES) || d->reserve_pages != FRESH_PAGES)
			return "the reserve not cut";
		if (!block_below(d->reserve))
			return "no page below the reserve";
		if (!take_run(d, live, len, &n, FRESH_PAGES + 1))
			return "no run";
	}
	for (i = d->cache_warm[0], n = 0; i < d->cache_n[0]; i++)
		n += d->cache[d->cache_base[0] + i].npages == FRESH_PAGES;
	return n < FRESH_RUNS ? "fresh runs missing" : NULL;
}

START_TEST(front_same_as_settled)
{
	static const size_t lengths[16] = { 1, 33, FRESH_PAGES, FRESH_PAGES,
	    40, FRESH_PAGES, 2, 4, 16, 64, 64, 64, 64, 100, 100,
	    FRESH_PAGES };
	static void *kept[SAME_ROUNDS][FRESH_KEPT];
	static size_t kept_len[SAME_ROUNDS][FRESH_KEPT];
	struct dir_info *d = unit_front_pool();
	void *live[48] = { NULL }, *p;
	size_t len[48], n;
	unsigned int seed = 4242, round, step, j, fronts = 0, longs = 0;
	unsigned int fresh = 0, other = 0;
	const char *fault = NULL;
	int z;

	/* Class 0 must hold the fresh runs (not under <<<<). */
	if (d == NULL || d->cache_room[0] < FRESH_RUNS)
		return;
	ck_assert_uint_le(slots_of(d), SAME_SLOTS);
	ck_assert_uint_le(edge_words(d), SAME_SLOTS);
	for (round = 0; round < SAME_ROUNDS && fault == NULL; round++) {
		/* Reserves cut as in a pool with nothing cached. */
		malloc_trim(0);
		om_lock(d);
		fault = fresh_long_runs(d, kept[round], kept_len[round]);
		om_unlock(d);
		ck_assert_msg(fault == NULL, "%s", fault);
		for (step = 0; step < SAME_STEPS && fault == NULL; step++) {
			seed = seed * 1103515245u + 12345u;
			j = (seed >> 8) % 48;
			/* At first the fresh runs' length and a few others,
			 * while class 0 has few used runs and its draw covers
			 * the fresh ones; then any. */
			n = lengths[(seed >> 16) % (step < 300 ? 6 : 16)];
			om_lock(d);
			if (live[j] != NULL) {
				om_cache_put(d, live[j], len[j], 0);
				live[j] = NULL;
				om_unlock(d);
				continue;
			}
			p = live[j] = om_cache_get(d, n, 0, &z);
			len[j] = n;
			if (p == NULL || !taken_whole(d, p)) {
				om_unlock(d);
				continue;
			}
			/* Back and again, the front's way ... */
			poison_spare_slots(d, n);
			state_save(d, &same_from);
			om_cache_put(d, p, n, 0);
			fronts += d->cache_front != 0;
			longs += d->cache_front != 0 && n > OM_CACHE_SMALL;
			same_a.got = om_cache_get(d, n, 0, &same_a.zeroed);
			state_save(d, &same_a);
			/* ... and the long way. */
			state_load(d, &same_from);
			om_cache_put_run(d, p, n, 0);
			same_b.got = om_cache_get_run(d, n, 0,
			    &same_b.zeroed);
			state_save(d, &same_b);
			fault = state_diff(&same_a, &same_b);
			live[j] = same_b.got;
			/* Another run of class 0 drawn, a fresh one too. */
			other += n > OM_CACHE_SMALL && same_b.got != p;
			fresh += n > OM_CACHE_SMALL && same_b.zeroed;
			om_unlock(d);
		}
	}
	ck_assert_msg(fault == NULL, "round %u, step %u: %s", round, step,
	    fault);
	/* Most runs put back went to the front, long ones among them, and
	 * draws took other runs of class 0, fresh ones too. */
	ck_assert_uint_gt(fronts, SAME_ROUNDS * SAME_STEPS / 5);
	ck_assert_uint_gt(longs, SAME_ROUNDS * SAME_STEPS / 8);
	ck_assert_uint_gt(other, SAME_ROUNDS * SAME_STEPS / 20);
	ck_assert_uint_gt(fresh, 0);
	om_lock(d);
	for (j = 0; j < 48; j++)
		if (live[j] != NULL)
			om_cache_put(d, live[j], len[j], 0);
	for (round = 0; round < SAME_ROUNDS; round++)
		for (j = 0; j < FRESH_KEPT && kept[round][j] != NULL; j++)
			om_cache_put(d, kept[round][j], kept_len[round][j],
			    0);
	om_unlock(d);
	malloc_trim(0);
}
END_TEST

/* malloc_trim gives the front's run back with the rest. */
START_TEST(front_trimmed)
{
	struct dir_info *d = unit_front_pool();

	if (d == NULL)
		return;
	unit_front_loop(d);
	ck_assert_int_eq(malloc_trim(0), 1);
	ck_assert_uint_eq(d->cache_front, 0);
	ck_assert_uint_eq(d->cache_pages, 0);
	ck_assert_uint_eq(om_cache_held(d), 0);
}
END_TEST

/* A write into the front's run is caught when it is taken back, or put
 * into its class and trimmed. */
static void
do_write_front(void *arg)
{
	struct dir_info *d = unit_front_pool();
	char *volatile p;

	if (d == NULL)
		abort();
	p = unit_front_loop(d);
	p[0] = 'x';
	if (*(int *)arg)
		malloc_trim(0);
	else
		(void)malloc(UNIT_FRONT_PAGES * OM_PAGE_SIZE);
}

START_TEST(front_write_after_free)
{
	struct child c;
	int trim;

	if (unit_front_pool() == NULL)
		return;
	for (trim = 0; trim < 2; trim++) {
		unit_run(do_write_front, &trim, &c);
		ck_assert_fatal(&c, trim ? "malloc_trim" : "malloc",
		    "write after free");
	}
}
END_TEST

START_TEST(full_junk_every_byte)
{
	static uint64_t pg[2 * OM_PAGE_SIZE / 8];
	size_t at[] = { 0, 7, OM_PAGE_SIZE + 1, 2 * OM_PAGE_SIZE - 1 }, i;
	struct child c;

	unit_init();
	om_junk_free(2, pg, sizeof(pg));
	ck_assert_words(pg, OM_JUNK_FREE64, sizeof(pg) / 8);
	om_junk_validate(NULL, 1, pg, sizeof(pg));
	for (i = 0; i < sizeof(at) / sizeof(at[0]); i++) {
		unit_run(do_full_junk_validate, &at[i], &c);
		ck_assert_fatal(&c, "malloc", "write after free");
	}
}
END_TEST

START_TEST(page_junk_words)
{
	static uint64_t pg[2 * OM_PAGE_SIZE / 8];
	struct child c;
	size_t i, n = 0;
	int k;

	unit_init();
	om_junk_free(1, pg, sizeof(pg));
	/* Word 0, and one word in each later quarter of the first page. */
	for (i = 0; i < sizeof(pg) / 8; i++)
		if (pg[i] == OM_JUNK_FREE64) {
			ck_assert_uint_eq(i, mopts.page_junk[n]);
			ck_assert_uint_eq(i / (OM_PAGE_SIZE / 32), n);
			n++;
		}
	ck_assert_uint_eq(n, 4);
	ck_assert_uint_eq(mopts.page_junk[0], 0);
	om_junk_validate(NULL, 0, pg, sizeof(pg));
	for (k = 0; k < 4; k++) {
		unit_run(do_page_junk_validate, &k, &c);
		ck_assert_fatal(&c, "malloc", "write after free");
	}
}
END_TEST

START_TEST(junk_helpers)
{
	uint64_t w[64];
	unsigned char *b = (unsigned char *)w;
	struct child c;
	int k;

	unit_init();
	memset(w, 0, sizeof(w));
	om_junk_free(0, w, sizeof(w));
	ck_assert_bytes(b, 0, sizeof(w));
	om_junk_free(2, w, sizeof(w) - 3);
	ck_assert_bytes(b, OM_JUNK_FREE, sizeof(w) - 3);
	ck_assert_bytes(b + sizeof(w) - 3, 0, 3);
	memset(w, 0, sizeof(w));
	om_junk_free(1, w, sizeof(w));
	om_junk_validate(NULL, 0, w, sizeof(w));
	memset(w, OM_JUNK_FREE, sizeof(w));
	om_junk_validate(NULL, 1, w, sizeof(w));
	/* A full check finds a change in any word. */
	for (k = 0; k < 64; k += 21) {
		unit_run(do_junk_validate, &k, &c);
		ck_assert_fatal(&c, "malloc", "write after free");
	}
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("cache");
	TCase *t = tcase_create("cache");

	/* Under U and F every put and get of a decay round is a system
	 * call: seconds, past Check's default of 4 when run by hand. */
	tcase_set_timeout(t, 60);
	tcase_add_test(t, steady_loop_no_syscalls);
	tcase_add_test(t, eviction_unmaps);
	tcase_add_test(t, too_big_unmapped_at_once);
	tcase_add_test(t, depot_follows_need);
	tcase_add_test(t, long_runs_taken_once_asked_again);
	tcase_add_test(t, long_runs_kept_once_shorter_asked);
	tcase_add_test(t, cut_takes_front);
	tcase_add_test(t, shorter_run_grows);
	tcase_add_test(t, shorter_run_grows_down);
	tcase_add_test(t, long_request_cut_from_joined_run);
	tcase_add_test(t, runs_join);
	tcase_add_test(t, runs_join_through_index);
	tcase_add_test(t, class0_drops_longest);
	tcase_add_test(t, loop_run_stays_apart);
	tcase_add_test(t, shared_pool_keeps_runs_apart);
	tcase_add_test(t, long_mode_keeps_newest);
	tcase_add_test(t, long_mode_grows_shorter);
	tcase_add_test(t, longest_runs_never_kept);
	tcase_add_test(t, trim_returns_pages);
	tcase_add_test(t, exact_length_only);
	tcase_add_test(t, class_sizes);
	tcase_add_test(t, classes_share_room);
	tcase_add_test(t, neighbours_leave_together);
	tcase_add_test(t, neighbours_of_other_lengths);
	tcase_add_test(t, short_runs_batched);
	tcase_add_test(t, reserve_carves);
	tcase_add_test(t, guarded_entries_apart);
	tcase_add_test(t, junk_fill);
	tcase_add_test(t, write_after_free_detected);
	tcase_add_test(t, take_at_grows_in_place);
	tcase_add_test(t, get_to_grow_splits_used_run);
	tcase_add_test(t, step_growth_takes_longest_run);
	tcase_add_test(t, step_growth_of_the_last_grown_block);
	tcase_add_test(t, take_at_checks_junk);
	tcase_add_test(t, api_write_after_free);
	tcase_add_test(t, junk_helpers);
	tcase_add_test(t, page_junk_words);
	tcase_add_test(t, full_junk_every_byte);
	tcase_add_test(t, front_takes_loop_run);
	tcase_add_test(t, front_draws_among_used_runs);
	tcase_add_test(t, front_trimmed);
	tcase_add_test(t, front_keeps_cache_whole);
	tcase_add_test(t, front_takes_long_run);
	tcase_add_test(t, cut_twice_is_a_loop);
	tcase_add_test(t, cut_block_joins_its_rest);
	tcase_add_test(t, take_at_finds_rest_in_full_cache);
	tcase_add_test(t, take_at_across_runs);
	tcase_add_test(t, grown_block_regrows_in_place);
	tcase_add_test(t, front_keeps_class0_pages);
	tcase_add_test(t, front_keeps_class0_slots);
	tcase_add_test(t, front_same_as_settled);
	tcase_add_test(t, front_write_after_free);
	tcase_add_test(t, depot_limit);
	tcase_add_test(t, depot_counts_its_victims);
	tcase_add_test(t, depot_checks_as_runs_leave);
	tcase_add_test(t, depot_over_its_limit);
	tcase_add_test(t, idle_pool_gives_back);
	tcase_add_test(t, producer_keeps_what_consumer_frees);
	tcase_add_test(t, used_runs_first);
	tcase_add_test(t, idle_runs_decay);
	suite_add_tcase(s, t);
	return unit_main(s);
}
