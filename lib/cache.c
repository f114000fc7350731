/*
 * cache.c - the free-page cache of a pool, the shared depot, junk filling
 * and validation.
 *
 * Freed page regions (and empty chunk pages) wait in the pool's cache,
 * in classes by run length (om_cache_init has the sizes), so that a
 * malloc/free loop of a block that fits makes no system call.  A run is
 * taken by exact length, at random from its class, so reuse order is not
 * predictable; a run of more than 3 pages may also be cut from the front
 * of one of more than 8, and one of more than 8 freed next to cached
 * runs is joined to them, so that blocks of many lengths reuse each
 * other's pages.  A class out of room evicts a quarter of its share,
 * random runs with the runs that touch them, joined; class 0 gives back
 * its longest runs.  A miss takes fresh pages
 * from a reserve mapped ahead (a run of up to 8 pages: a batch of them),
 * which keeps chunk pages and a growing heap from costing one mmap each.
 * Evicted runs go to the depot, shared by all pools, or back to the
 * kernel: munmap, not MADV_DONTNEED, so the commit charge drops too; both
 * after the pool lock is released.  A pool that other threads only give
 * runs back to, its own threads gone, empties its cache into the depot.
 *
 * Junk: level 1 writes a few words spread over the first page (OpenBSD's
 * sparse junk), level 2 fills everything; both are checked when the pages
 * are reused or evicted.  With U (and F) cached pages are PROT_NONE.
 * All functions here: pool locked, except om_cache_depot_offer, trim and
 * the fork hooks.
 */
#include "internal.h"

#define BATCH_PAGES 16		/* pages mapped at once for short runs */
#define DEPOT_SLOTS 32768	/* enough for DEPOT_MAX single pages */
#define DEPOT_RUN 64		/* longer runs are not worth keeping */
#define DEPOT_MIN 256		/* pages the depot may hold from the start */
#define DEPOT_MAX 32768		/* and at most (128 MiB), however it grows */
#define DEPOT_NONE 0xffffu
#define DEPOT_DECAY 4096	/* takes between halvings of the demand */
#define DEPOT_ROUND 4096	/* pages taken in the shortest round */
#define EVICT_BATCH 16		/* runs evicted from a full class at once */
#define IDLE_PUTS 16u		/* puts without a get: the pool gives back */
#define IDLE_SHIFT_MAX 8	/* and a live pool up to 256 times as many */
#define WARM_MIN 4		/* used runs a get chooses among, at least */
#define RESERVE_MIN 64		/* pages of a pool's first reserve */
#define RESERVE_MAX 256		/* and of any later one (1 MiB) */
#define TAKE_AT_RUNS 256	/* cached runs searched to grow in place */
#define CHAIN_RUNS 8		/* and grown across, at most */
#define MERGE_MIN 8		/* longer runs freed join their neighbours */
#define EDGES_PER_SLOT 8	/* bits of the edges filter per cache slot */
#define EDGES_REBUILD 256	/* runs noted before it is rebuilt, at least */
#define CUT_MIN 3		/* longer requests take the front of those */
#define MERGE_MAX (1u << 30)	/* pages of a joined run, at most */
#define PAGE_QUARTER (OM_PAGE_SIZE / 8 / 4)	/* words of a page's quarter */

/*
 * The depot: pages evicted from a pool's full cache wait here for a pool
 * whose cache is empty.  Threads come and go, so one pool frees what
 * another allocates; without the depot those pages would make a round
 * trip through the kernel (munmap, then mmap and page faults in the other
 * pool).  Under a pool lock it is only ever tried, never waited for (a
 * busy depot is simply skipped), so no thread holding a pool lock waits
 * for it: a fork from a signal handler that interrupted a thread holding
 * the depot cannot deadlock behind such a thread.  The fork hooks take it
 * last; malloc_trim, holding no pool lock, waits.
 *
 * Size: it starts at 1 MiB and grows by what the program proves it
 * needs, up to 128 MiB.  It keeps, per run length, the recent demand
 * (takes and misses, halved every DEPOT_DECAY takes) and the runs it
 * turned away for lack of room.  A miss that has to map new pages, where
 * a run long enough had been turned away, raises the limit (by what the
 * miss maps, at least a quarter, never more than was turned away).  A
 * full depot offered a run makes room for it by unmapping a run of the
 * length in least demand, if that is in less demand than the offered
 * one, so that leftovers nobody asks for do not keep what is asked for
 * out; that run counts as turned away too (a depot that counted only
 * the runs it refused grew too little: 500 threads that came and went
 * had it give up 39,000 pages to make room, which they then mapped and
 * faulted in again).  A program whose heap only grows, or that frees
 * once and stops, never raises the limit; one that frees a batch and
 * allocates it again (where an allocator that unmaps pays a page fault
 * per page, every time, and a munmap call per run, every time) keeps its
 * batch.
 *
 * The limit comes down again as the need goes.  A round lasts until four
 * times as many pages as the limit (DEPOT_ROUND at least) have been
 * taken: several trips out and back of a batch the depot was grown for.
 * In a round where no take found the depot short, the pages that stayed
 * in it the whole round were not needed, and the limit drops by half of
 * them.  What the depot then holds over its
 * limit is unmapped a run at a time as runs are offered (never under a
 * pool lock).  A program that stops taking pages from the depot keeps
 * what it holds until malloc_trim, which empties the depot and resets it.
 *
 * Runs wait in bins by length, each a stack of slots, so that a take is
 * a few steps whatever the depot holds.  They come in with the junk of
 * their first page unchecked (evict): the pool that takes one checks it
 * (reuse), and one that leaves for the kernel, turned away, given up to
 * make room or trimmed, is checked on its way (om_cache_check_leaving).
 */
static struct {
	struct om_mutex mtx;
	unsigned int used;		/* slots in the bins */
	size_t pages;			/* pages held */
	size_t cap;			/* pages it may hold, DEPOT_MIN.. */
	size_t dropped;			/* pages turned away since growing */
	unsigned int takes;		/* since the demand was last halved */
	uint32_t demand[DEPOT_RUN + 1];	/* recent takes and misses */
	uint32_t lost[DEPOT_RUN + 1];	/* runs turned away since growing */
	uint16_t bin[DEPOT_RUN + 1];	/* first slot of a length, or NONE */
	size_t round_taken;		/* pages taken this round */
	size_t low;			/* fewest pages held this round */
	int missed;			/* a take found nothing this round */
	uint16_t free;			/* first slot given back, or NONE */
	unsigned int fresh;		/* slots from here on never used */
	/* The arrays last: an empty depot touches one page of them. */
	uint16_t next[DEPOT_SLOTS];	/* next slot in its bin / free list */
	struct om_cache_entry e[DEPOT_SLOTS];
} depot;

static void
depot_lock(void)
{
	om_mutex_lock(&depot.mtx, om_owner());
}

static int
depot_trylock(void)
{
	return om_mutex_trylock(&depot.mtx, om_owner());
}

/*
 * Under a pool lock the depot is never waited for, but it is tried for a
 * little while: it is held only for a few steps at a time, and a miss
 * here maps new pages while the depot may hold thousands.  The bound
 * keeps a thread from waiting on one that a signal handler interrupted.
 */
static int
depot_trylock_a_while(void)
{
	for (int i = 0; i < 64; i++) {
		if (__atomic_load_n(&depot.mtx.w, __ATOMIC_RELAXED) == 0 &&
		    depot_trylock())
			return 1;
		OM_CPU_RELAX();
	}
	return 0;
}

static void
depot_unlock(void)
{
	om_mutex_unlock(&depot.mtx);
}

/* The bins start empty and every slot free; done on first use and after a
 * trim (depot locked).  Slots are handed out in order from `fresh`, so a
 * depot that holds little touches few of their pages. */
static void
depot_reset(void)
{
	unsigned int i;

	for (i = 0; i <= DEPOT_RUN; i++)
		depot.bin[i] = DEPOT_NONE;
	depot.free = DEPOT_NONE;
	depot.fresh = 0;
	depot.used = 0;
	depot.pages = 0;
	depot.cap = DEPOT_MIN;
	depot.dropped = 0;
	depot.takes = 0;
	depot.round_taken = 0;
	depot.low = 0;
	depot.missed = 0;
	memset(depot.demand, 0, sizeof(depot.demand));
	memset(depot.lost, 0, sizeof(depot.lost));
}

/* Put a run into its bin (depot locked, a free slot left). */
static void
depot_push(const struct om_cache_entry *e)
{
	unsigned int i = depot.free;

	if (i != DEPOT_NONE)
		depot.free = depot.next[i];
	else
		i = depot.fresh++;
	depot.e[i] = *e;
	depot.next[i] = depot.bin[e->npages];
	depot.bin[e->npages] = (uint16_t)i;
	depot.used++;
	depot.pages += e->npages;
}

/* Take the first run of bin n out (depot locked, bin not empty). */
static struct om_cache_entry
depot_pop(unsigned int n)
{
	unsigned int i = depot.bin[n];

	depot.bin[n] = depot.next[i];
	depot.next[i] = depot.free;
	depot.free = (uint16_t)i;
	depot.used--;
	depot.pages -= n;
	if (depot.pages < depot.low)
		depot.low = depot.pages;
	return depot.e[i];
}

/* The non-empty bin in least demand, or 0 if all are empty. */
static unsigned int
depot_victim(void)
{
	unsigned int n, v = 0;

	for (n = 1; n <= DEPOT_RUN; n++)
		if (depot.bin[n] != DEPOT_NONE &&
		    (v == 0 || depot.demand[n] < depot.demand[v]))
			v = n;
	return v;
}

/* A run of n pages leaves for the kernel for want of room (depot locked):
 * a miss of its length may then raise the limit (depot_get). */
static void
turned_away(unsigned int n)
{
	depot.dropped += n;
	depot.lost[n]++;
}

/*
 * Offer an evicted entry, with no pool lock held (see unlock_and_unmap);
 * 1 if the depot took it.  *out is a run it gave up to make room (npages
 * 0 if none), for the caller to unmap, whether it took the entry or not:
 * over its limit, it gives one up and may still turn the entry away.
 */
int
om_cache_depot_offer(const struct om_cache_entry *e,
    struct om_cache_entry *out)
{
	unsigned int n = e->npages, v;
	int taken = 0, over;

	out->npages = 0;
	if (e->guarded || n > DEPOT_RUN)
		return 0;
	depot_lock();
	if (depot.cap == 0)
		depot_reset();
	/* Over the limit, which came down: a run goes whatever its demand. */
	over = depot.pages > depot.cap;
	while (depot.pages + n > depot.cap || depot.used == DEPOT_SLOTS) {
		v = depot_victim();
		if (v == 0 || out->npages != 0 ||
		    (!over && depot.demand[v] >= depot.demand[n]))
			break;
		*out = depot_pop(v);
	}
	if (depot.used < DEPOT_SLOTS && depot.pages + n <= depot.cap) {
		depot_push(e);
		taken = 1;
	} else {
		turned_away(n);
		if (out->npages != 0 && !over) {
			/* Not enough room made after all: keep the victim. */
			depot_push(out);
			out->npages = 0;
		}
	}
	/* A victim is turned away as much as a run refused. */
	if (out->npages != 0)
		turned_away(out->npages);
	depot_unlock();
	return taken;
}

/*
 * Take npages off the front of run e (longer than that).  Level-1 junk was
 * written in the run's first page only, so the rest is no longer checked;
 * full junk (J2, F) holds everywhere.
 */
static void
split_front(struct om_cache_entry *e, size_t npages)
{
	e->p += npages << OM_PAGE_SHIFT;
	e->npages -= (uint32_t)npages;
	if (!mopts.junk_validate_full)
		e->junked = 0;
}

/*
 * npages were taken: the end of a round lowers the limit by half of what
 * stayed in the depot all round (depot locked).
 */
static void
depot_round(size_t npages)
{
	size_t cut;

	depot.round_taken += npages;
	if (depot.round_taken < 4 * (depot.cap > DEPOT_ROUND ? depot.cap :
	    DEPOT_ROUND))
		return;
	cut = depot.missed ? 0 : depot.low / 2;
	depot.cap = depot.cap > DEPOT_MIN + cut ? depot.cap - cut : DEPOT_MIN;
	depot.round_taken = 0;
	depot.low = depot.pages;
	depot.missed = 0;
}

/*
 * Take npages from the depot into *out; 1 if found: a run of that length,
 * else the front of the shortest longer one.  A miss is where the depot
 * learns it was too small (see above).
 */
static int
depot_get(size_t npages, struct om_cache_entry *out)
{
	unsigned int n;
	int found = 0;

	if (npages > DEPOT_RUN || !depot_trylock_a_while())
		return 0;
	if (depot.cap == 0)
		depot_reset();
	depot.demand[npages]++;
	if (++depot.takes == DEPOT_DECAY) {
		for (n = 0; n <= DEPOT_RUN; n++)
			depot.demand[n] /= 2;
		depot.takes = 0;
	}
	for (n = (unsigned int)npages; n <= DEPOT_RUN; n++) {
		if (depot.bin[n] == DEPOT_NONE)
			continue;
		*out = depot_pop(n);
		depot_round(npages);
		if (n > npages) {
			struct om_cache_entry rest = *out;

			split_front(&rest, npages);
			depot_push(&rest);
			out->npages = (uint32_t)npages;
		}
		found = 1;
		break;
	}
	if (!found)
		depot.missed = 1;
	for (n = (unsigned int)npages; !found && n <= DEPOT_RUN; n++) {
		/* A miss a turned-away run could have served. */
		size_t want = npages <= BATCH_PAGES / 2 ? BATCH_PAGES : npages;
		size_t grow;

		if (depot.lost[n] == 0)
			continue;
		depot.lost[n]--;
		if (want < depot.cap / 4)
			want = depot.cap / 4;
		grow = want < depot.dropped ? want : depot.dropped;
		depot.dropped -= grow;
		depot.cap = depot.cap + grow < DEPOT_MAX ? depot.cap + grow :
		    DEPOT_MAX;
		break;
	}
	depot_unlock();
	return found;
}

/*
 * Fork: the depot lock is taken after every pool lock, unless this thread
 * already holds it (a fork from a signal handler that interrupted it).
 * The forking thread's own hooks run in order, so one flag suffices.
 */
static int fork_depot_mine;

void
om_cache_fork_prepare(void)
{
	int me = om_owner();

	fork_depot_mine = __atomic_load_n(&depot.mtx.w, __ATOMIC_RELAXED) == me;
	if (!fork_depot_mine)
		om_mutex_lock(&depot.mtx, me);
}

void
om_cache_fork_parent(void)
{
	if (!fork_depot_mine)
		om_mutex_unlock(&depot.mtx);
}

void
om_cache_fork_child(void)
{
	if (!fork_depot_mine)
		om_mutex_init(&depot.mtx);
}

size_t
om_cache_depot_pages(void)
{
	return __atomic_load_n(&depot.pages, __ATOMIC_RELAXED);
}

/* The pages the depot may hold now (see its growth above). */
size_t
om_cache_depot_limit(void)
{
	size_t cap = __atomic_load_n(&depot.cap, __ATOMIC_RELAXED);

	return cap != 0 ? cap : DEPOT_MIN;
}

/* malloc_trim: give the depot back to the kernel. */
size_t
om_cache_depot_trim(void)
{
	struct om_span s[OM_UNMAP_SPANS];
	unsigned int m = 0;
	size_t pages;

	depot_lock();
	pages = depot.pages;
	for (unsigned int n = 1; n <= DEPOT_RUN && depot.cap != 0; n++)
		while (depot.bin[n] != DEPOT_NONE) {
			struct om_cache_entry e = depot_pop(n);

			if (m == OM_UNMAP_SPANS) {
				om_os_unmap_spans(s, m);
				m = 0;
			}
			om_cache_check_leaving("malloc_trim", &e);
			s[m].p = e.p;
			s[m++].len = (size_t)n << OM_PAGE_SHIFT;
		}
	om_os_unmap_spans(s, m);
	depot_reset();
	depot_unlock();
	return pages;
}

/* Level 1 on a run of pages, the common case: four words of the first
 * page, those of mopts.page_junk (see page_junk_ok). */
OM_INLINE void
page_junk(void *p)
{
	uint64_t *lp = p, *q = lp + mopts.page_junk[1];

	lp[0] = OM_JUNK_FREE64;
	q[0] = OM_JUNK_FREE64;
	q[PAGE_QUARTER] = OM_JUNK_FREE64;
	q[2 * PAGE_QUARTER] = OM_JUNK_FREE64;
}

void
om_junk_free(int level, void *p, size_t sz)
{
	uint64_t *lp = p;
	size_t words, i, step;

	if (level == 0 || sz == 0)
		return;
	if (level >= 2) {
		memset(p, OM_JUNK_FREE, sz);
		return;
	}
	if (sz >= OM_PAGE_SIZE) {
		page_junk(p);
		return;
	}
	words = sz / sizeof(uint64_t);
	step = om_junk_step(words);
	for (i = 0; i < words; i += step)
		lp[i] = OM_JUNK_FREE64;
}

static OM_COLD void
write_after_free(struct dir_info *d, const void *p)
{
	om_fatal(d, "write after free", p);
}

/* Level 1 on a run of pages: the four words of its first page intact.
 * They are mopts.page_junk's: word 0, and the same word of each later
 * quarter, the three quarters being of one length; one load finds them. */
OM_INLINE int
page_junk_ok(const void *p)
{
	const uint64_t *lp = p, *q = lp + mopts.page_junk[1];

	return ((lp[0] ^ OM_JUNK_FREE64) | (q[0] ^ OM_JUNK_FREE64) |
	    (q[PAGE_QUARTER] ^ OM_JUNK_FREE64) |
	    (q[2 * PAGE_QUARTER] ^ OM_JUNK_FREE64)) == 0;
}

/* Whether the junk of a freed block is intact: every byte (full) or the
 * sparse words. */
OM_INLINE int
junk_intact(int full, const void *p, size_t sz)
{
	/* Every word, without a branch each: up to a whole run. */
	if (full)
		return om_bytes_are(p, OM_JUNK_FREE,
		    sz / sizeof(uint64_t) * sizeof(uint64_t));
	if (sz >= OM_PAGE_SIZE)
		return page_junk_ok(p);
	return om_junk_sparse_ok(p, sz);
}

/* Check the junk of a freed block: every byte (full) or the sparse words. */
void
om_junk_validate(struct dir_info *d, int full, const void *p, size_t sz)
{
	if (OM_UNLIKELY(!junk_intact(full, p, sz)))
		write_after_free(d, p);
}

/* Level 1's check of a run with a page of data: all a pool without
 * extras makes. */
OM_INLINE void
check_page_junk(struct dir_info *d, const void *p)
{
	if (OM_UNLIKELY(!page_junk_ok(p)))
		write_after_free(d, p);
}

/* om_junk_validate, with its common case, level 1 on a run of pages,
 * inlined into the reuse of cached runs. */
OM_INLINE void
junk_validate(struct dir_info *d, const void *p, size_t sz)
{
	if (OM_UNLIKELY(mopts.junk_validate_full) || sz < OM_PAGE_SIZE)
		om_junk_validate(d, mopts.junk_validate_full, p, sz);
	else
		check_page_junk(d, p);
}

static size_t
data_len(const struct om_cache_entry *e)
{
	return ((size_t)e->npages - e->guarded) << OM_PAGE_SHIFT;
}

/* Make an entry's pages usable again and check they were not written. */
OM_INLINE void *
reuse(struct dir_info *d, struct om_cache_entry *e, int *zeroed)
{
	void *p = (void *)e->p;

	if (e->noaccess && om_os_protect(p, data_len(e), 1) != 0)
		return NULL;
	if (e->junked) {
		/* Without extras the junk is level 1's, written in the
		 * first page of a run with a page of data or more (see
		 * om_cache_put).  npages > guarded says so in fewer
		 * instructions than data_len() >= OM_PAGE_SIZE: 2-4 a
		 * page-run pair, callgrind. */
		if (!d->extras && e->npages > e->guarded)
			check_page_junk(d, p);
		else if (d->junk)
			junk_validate(d, p, data_len(e));
	}
	*zeroed = !e->junked && e->fresh;
	return p;
}

/*
 * The class of a run of npages: its length up to OM_CACHE_SMALL, 0 for
 * longer runs up to the pool's cache_long, -1 for runs not cached.
 */
OM_INLINE int
class_of(const struct dir_info *d, size_t npages)
{
	if (npages <= OM_CACHE_SMALL)
		return (int)npages;
	return npages <= d->cache_long ? 0 : -1;
}

OM_INLINE struct om_cache_entry *
slot(struct dir_info *d, unsigned int k, unsigned int i)
{
	return &d->cache[d->cache_base[k] + i];
}

/*
 * The class of a run already cached, split from one or joined from
 * several (see merge_neighbours): its length up to OM_CACHE_SMALL, else
 * class 0, however long.
 */
OM_INLINE unsigned int
run_class(size_t npages)
{
	return npages <= OM_CACHE_SMALL ? (unsigned int)npages : 0;
}

/*
 * The bounds index: the used runs in the cache by the page addresses
 * where they start and end, so that a run coming in finds the cached
 * runs that touch it with two probes (merge_neighbours) instead of a
 * search of every run.  Open addressing with linear probing.  It is made
 * when the first run longer than MERGE_MIN comes in (a program of short
 * runs never pays for it), and then written when a run comes in or is
 * cut for a request, and only then: an entry outlives its run, and a run
 * moves between slots of its class as others leave, so a run an entry
 * names is checked against the cache, and looked for in its class when
 * it is no longer in the slot the entry gives.  A get of a run of the
 * length asked for, the common case, costs the index nothing, and so
 * does such a run freed straight back (a malloc/free loop): its entries
 * are kept for it.  When half full it is rebuilt from the cache, twice as
 * big if the runs need it.  Fresh runs are not in it: they are never
 * merged.  Without memory to make or grow it, runs that come in do not
 * join until there is.
 */
#define BOUNDS_MIN 128		/* slots of the first index */

OM_INLINE uintptr_t
run_end(const struct om_cache_entry *e)
{
	return e->p + ((uintptr_t)e->npages << OM_PAGE_SHIFT);
}

/* The slot of cache_taken that holds run p, or -1. */
OM_INLINE int
taken_slot(const struct dir_info *d, uintptr_t p)
{
	unsigned int i;

	for (i = 0; i < OM_CACHE_TAKEN; i++)
		if (d->cache_taken[i] == p)
			return (int)i;
	return -1;
}

/* Forget that a get took run p whole: 1 if one had. */
OM_INLINE int
untake(struct dir_info *d, uintptr_t p)
{
	int t = taken_slot(d, p);

	if (t < 0)
		return 0;
	d->cache_taken[t] = 0;
	return 1;
}

OM_INLINE unsigned int
bound_hash(const struct dir_info *d, uintptr_t at)
{
	return (unsigned int)((at * 0x9e3779b97f4a7c15ull) >> 40) &
	    d->cache_bounds_mask;
}

/* The entry of address at, made if there is none (the index has room). */
OM_INLINE struct om_cache_bound *
bound_at(struct dir_info *d, uintptr_t at)
{
	struct om_cache_bound *b;
	unsigned int h = bound_hash(d, at);

	while ((b = &d->cache_bounds[h])->at != at) {
		if (b->at == 0) {
			memset(b, 0, sizeof(*b));
			b->at = at;
			d->cache_bounds_n++;
			break;
		}
		h = (h + 1) & d->cache_bounds_mask;
	}
	return b;
}

/* Run e, in slot `slot`, into the index. */
OM_INLINE void
bound_note(struct dir_info *d, const struct om_cache_entry *e,
    uint32_t slot)
{
	struct om_cache_bound *b = bound_at(d, e->p);

	b->npages[1] = e->npages;
	b->slot[1] = slot;
	b = bound_at(d, run_end(e));
	b->npages[0] = e->npages;
	b->slot[0] = slot;
}

/*
 * Room for two addresses more: the index rebuilt from the cache's used
 * runs when half full, in a map twice as big when they would fill a
 * quarter.  0, or -1 if it has no room and could not grow.
 */
static int
bounds_room(struct dir_info *d)
{
	struct om_cache_bound *old = d->cache_bounds;
	size_t n = old == NULL ? 0 : (size_t)d->cache_bounds_mask + 1;
	size_t ends = 2 * ((size_t)d->cache_used + 1), newn = n, len;
	unsigned int k, i;

	if (2 * (d->cache_bounds_n + 2) <= n)
		return 0;
	if (newn < BOUNDS_MIN)
		newn = BOUNDS_MIN;
	while (4 * ends > newn)
		newn *= 2;
	if (newn == n) {
		memset(old, 0, n * sizeof(*old));
	} else {
		len = OM_PAGEROUND(newn * sizeof(*old));
		d->cache_bounds = om_os_map(len, d->conceal);
		if (d->cache_bounds == NULL) {
			d->cache_bounds = old;
			return -1;
		}
		d->mapped += len;
		d->cache_bounds_mask = (unsigned int)newn - 1;
		if (old != NULL) {
			len = OM_PAGEROUND(n * sizeof(*old));
			om_os_unmap(old, len);
			d->mapped -= len;
		}
	}
	d->cache_bounds_n = 0;
	for (k = 0; k < OM_CACHE_CLASSES; k++)
		for (i = 0; i < d->cache_warm[k]; i++)
			bound_note(d, slot(d, k, i), d->cache_base[k] + i);
	for (i = 0; i < OM_CACHE_TAKEN; i++) {
		struct om_cache_entry e = { .p = d->cache_taken[i],
			.npages = d->cache_taken_npages[i] };

		/* In no slot: found by a search of its class once back. */
		if (e.p != 0)
			bound_note(d, &e, UINT32_MAX);
	}
	return 0;
}

/* A used run comes into slot `slot`: into the index, if there is one. */
static void
bounds_add(struct dir_info *d, const struct om_cache_entry *e,
    uint32_t slot)
{
	if (d->cache_bounds == NULL)
		return;
	if (bounds_room(d) != 0)
		return;
	bound_note(d, e, slot);
}

/*
 * The used cached run that ends at b's address (side 0) or starts there
 * (side 1): its slot, and its class in *kp; -1 if there is none (the
 * entry's run, gone, is then forgotten).
 */
static int
bound_run(struct dir_info *d, struct om_cache_bound *b, int side,
    unsigned int *kp)
{
	uint32_t npages = b->npages[side];
	uintptr_t start;
	unsigned int k, i;

	if (npages == 0)
		return -1;
	start = side ? b->at : b->at - ((uintptr_t)npages << OM_PAGE_SHIFT);
	k = run_class(npages);
	i = b->slot[side] - d->cache_base[k];
	if (b->slot[side] < d->cache_base[k] || i >= d->cache_warm[k] ||
	    slot(d, k, i)->p != start || slot(d, k, i)->npages != npages) {
		/* Moved within its class, or gone. */
		for (i = 0; i < d->cache_warm[k]; i++)
			if (slot(d, k, i)->p == start &&
			    slot(d, k, i)->npages == npages)
				break;
		if (i == d->cache_warm[k]) {
			/* Gone.  A run a get took whole lately may come back
			 * as it was, without a word to the index (see
			 * om_cache_put): its entries stay. */
			if (taken_slot(d, start) < 0)
				b->npages[side] = 0;
			return -1;
		}
		b->slot[side] = d->cache_base[k] + i;
	}
	*kp = k;
	return (int)i;
}

/* The used cached run that starts at p, found through the index: its
 * slot, and its class in *kp; -1 if there is none, or no index. */
static int
indexed_at(struct dir_info *d, uintptr_t p, unsigned int *kp)
{
	unsigned int h;

	if (d->cache_bounds == NULL)
		return -1;
	/* bound_at's probe, without making an entry: one probe loop shared
	 * by both, bound_at testing for an empty slot after it, cost the
	 * realloc loops 1-3% of their instructions. */
	for (h = bound_hash(d, p); d->cache_bounds[h].at != p;
	    h = (h + 1) & d->cache_bounds_mask)
		if (d->cache_bounds[h].at == 0)
			return -1;
	return bound_run(d, &d->cache_bounds[h], 1, kp);
}

/* The pages class 0 may hold at first: 32 C. */
static size_t
big_share(const struct dir_info *d)
{
	return (size_t)d->cache_max * OM_CACHE_SMALL;
}

/* Whether class 0 has grown to take long buffers (see long_again). */
OM_INLINE int
long_mode(const struct dir_info *d)
{
	return d->cache_long > OM_CACHE_BIG;
}

/*
 * The pages class 0 may hold: its share, and what classes 1..32 leave
 * unused of theirs, so that the cache as a whole still holds no more
 * than the classes' shares add up to.  Runs freed next to each other
 * join into long runs (merge_neighbours), which class 0 holds whatever
 * the lengths they were freed at, and a heap freed in scattered order
 * waits there until its pieces have joined, to go back in a few long
 * stretches: trim's mixed loop makes 6 munmap calls so, 18 to 23 with
 * class 0's own share.  A class 0 grown for long buffers (see
 * long_again) borrows nothing: it holds two such buffers, and more would
 * keep up to 40 MiB more of a program that uses no shorter runs.
 */
static size_t
big_max(const struct dir_info *d)
{
	size_t small = d->cache_pages - d->cache_big_pages;

	if (long_mode(d))
		return d->cache_big_max;
	return d->cache_big_max + (small < d->cache_small_max ?
	    d->cache_small_max - small : 0);
}

/*
 * Runs longer than OM_CACHE_BIG (2 MiB) are unmapped as they are freed,
 * and their lengths remembered.  A miss for a run no longer than one of
 * those shows a program that frees big buffers and asks for big ones
 * again (a loop over files, images, requests), where each round would
 * pay an mmap, a munmap and a page fault for every page it touches.
 * Class 0 then takes runs up to the longest such length, and may hold
 * two of them, so that a buffer of one length can be cut from the pages
 * of one freed at another (om_cache_get), up to OM_CACHE_LONG_SCALE
 * times its pages (32 MiB at the default scale, as far as glibc raises
 * its mmap threshold for blocks freed and asked for again).  Holding
 * that much whatever the length cost bigbuf at 2-8 MiB a peak of 1.22
 * times glibc's for 1.2 times the speed.  A buffer freed once is still
 * unmapped at once, and a trim starts over.
 */
static size_t
long_limit(const struct dir_info *d)
{
	return big_share(d) * OM_CACHE_LONG_SCALE;
}

static void
long_reset(struct dir_info *d)
{
	d->cache_big_max = big_share(d);
	d->cache_long = OM_CACHE_BIG;
	memset(d->cache_gone, 0, sizeof(d->cache_gone));
	d->cache_gone_next = 0;
}

static void
long_gone(struct dir_info *d, size_t npages)
{
	if (npages <= d->cache_long || npages > long_limit(d))
		return;
	d->cache_gone[d->cache_gone_next] = (uint32_t)npages;
	d->cache_gone_next = (d->cache_gone_next + 1) % OM_CACHE_GONE;
}

static void
long_again(struct dir_info *d, size_t npages)
{
	unsigned int i, most = OM_CACHE_GONE;

	for (i = 0; i < OM_CACHE_GONE; i++)
		if (d->cache_gone[i] >= npages && (most == OM_CACHE_GONE ||
		    d->cache_gone[i] > d->cache_gone[most]))
			most = i;
	if (most == OM_CACHE_GONE)
		return;
	npages = d->cache_gone[most];
	d->cache_gone[most] = 0;
	if (d->cache_long < npages)
		d->cache_long = npages;
	if (d->cache_big_max < 2 * npages)
		d->cache_big_max = 2 * npages < long_limit(d) ? 2 * npages :
		    long_limit(d);
}

/*
 * Size the classes from the pool's cache scale C (64, halved and doubled
 * by < and >), as OpenBSD does: C runs of each length up to 8 pages, C/2
 * of 9 to 16, C/4 of 17 to 24, C/8 of 25 to 32, and C longer runs of at
 * most 32 C pages together.  Those are the classes' shares.  A class of
 * 2 to 32 pages has slots for twice its share and may use them while the
 * classes together hold no more pages than their shares add up to: a
 * program's demand for one length rises while another's falls, and a
 * class that had to evict at its share would unmap what the next malloc
 * of that length maps again.  Single pages keep to their share: empty
 * chunk pages come and go by the dozen in programs that free in other
 * threads (larson), and a pool would keep twice as many of them idle.
 * The slots are mapped here, outside the pool.
 */
int
om_cache_init(struct dir_info *d)
{
	unsigned int k, total = 0;
	size_t len, bits;

	d->cache_small_max = 0;
	for (k = 1; k <= OM_CACHE_SMALL; k++) {
		d->cache_base[k] = (uint16_t)total;
		d->cache_cap[k] = (uint16_t)(d->cache_max >> ((k - 1) / 8));
		d->cache_room[k] = (uint16_t)(k > 1 ? 2 * d->cache_cap[k] :
		    d->cache_cap[k]);
		d->cache_small_max += (size_t)d->cache_cap[k] * k;
		total += d->cache_room[k];
	}
	d->cache_base[0] = (uint16_t)total;
	d->cache_cap[0] = d->cache_room[0] = (uint16_t)d->cache_max;
	total += d->cache_room[0];
	long_reset(d);
	if (total == 0)
		return 0;
	/* The edges filter: at least a word, EDGES_PER_SLOT bits a slot. */
	for (bits = 64; bits < (size_t)total * EDGES_PER_SLOT; bits *= 2)
		;
	/* The filter goes first: with the single pages' slots after it,
	 * a pool of small blocks touches one page of the map, not two. */
	len = OM_PAGEROUND(bits / 8 + total * sizeof(struct om_cache_entry));
	d->cache_edges = om_os_map(len, d->conceal);
	if (d->cache_edges == NULL)
		return -1;
	d->cache = (struct om_cache_entry *)(void *)(d->cache_edges +
	    bits / 64);
	d->cache_edges_shift = 64 - (unsigned int)__builtin_ctzll(bits);
	d->mapped += len;
	return 0;
}

/*
 * A class's runs that were used (freed by the program) come first, then
 * the fresh ones, never touched, mapped ahead in a batch (see map_fresh).
 * Take slot i of class k out: the last of its part moves in, and the last
 * fresh run into the place that leaves.
 */
OM_INLINE void
remove_entry(struct dir_info *d, unsigned int k, unsigned int i)
{
	struct om_cache_entry *e = slot(d, k, i);
	unsigned int n = --d->cache_n[k];

	d->cache_pages -= e->npages;
	if (k == 0)
		d->cache_big_pages -= e->npages;
	if (i < d->cache_warm[k]) {
		unsigned int w = --d->cache_warm[k];

		if (w < d->cache_low[k])
			d->cache_low[k] = (uint16_t)w;
		*e = *slot(d, k, w);
		e = slot(d, k, w);
	}
	*e = *slot(d, k, n);
	d->cache_used--;
	if (n == 0)
		d->cache_classes &= ~((uint64_t)1 << k);
}

/* Leave a range for unlock() to give back (offer: to the depot first). */
static void
pend(struct dir_info *d, uintptr_t p, size_t len,
    const struct om_cache_entry *offer)
{
	struct om_span *q = &d->pending[d->npending++];

	q->p = p;
	q->len = len;
	q->offer.npages = 0;
	if (offer != NULL)
		q->offer = *offer;
}

/* Unmap the spans, merging neighbours into one call; they are left for
 * unlock() to unmap once the pool lock is released, and those there is
 * no room for go now, together. */
static void
unmap_spans(struct dir_info *d, struct om_span *s, unsigned int n)
{
	unsigned int i, now = 0;

	n = om_join_spans(s, n);
	for (i = 0; i < n; i++) {
		d->mapped -= s[i].len;
		if (d->npending < OM_PENDING)
			pend(d, s[i].p, s[i].len, NULL);
		else
			s[now++] = s[i];
	}
	om_os_unmap_spans(s, now);
}

/* Check the junk of a run that leaves the cache. */
OM_INLINE void
check_out(struct dir_info *d, const struct om_cache_entry *e)
{
	if (e->junked && !e->noaccess && d->junk)
		junk_validate(d, (void *)e->p, data_len(e));
}

/* Take slot i of class k out of the cache, checking its junk first. */
static struct om_cache_entry
take_out(struct dir_info *d, unsigned int k, unsigned int i)
{
	struct om_cache_entry e = *slot(d, k, i);

	check_out(d, &e);
	remove_entry(d, k, i);
	return e;
}

/*
 * A run offered to the depot by evict, turned away or given up to make
 * room, on its way to the kernel from a call of func: its junk was left
 * for the depot to check, as a pool takes the run or as it leaves.
 */
void
om_cache_check_leaving(const char *func, const struct om_cache_entry *e)
{
	const void *p = (const void *)e->p;

	if (e->junked && !e->noaccess &&
	    OM_UNLIKELY(!junk_intact(mopts.junk_validate_full, p,
	    data_len(e))))
		om_fatal_in(func != NULL ? func : "malloc",
		    "write after free", p);
}

/*
 * The edges filter: a bit, by hash, for each address where a cached run
 * starts or ends, so that the search for the runs that touch a range
 * (neighbour: evict's, and run_at's in a small cache) is made only where
 * one may.  It went through every cached run, and evict searches once for
 * each run it takes and once more for each stretch of touching runs: a
 * pool whose thread left, giving back a cache of hundreds of runs, made
 * O(n * n) comparisons (a thread started for 2,000 blocks of 16 B-32 KiB
 * and then joined spent a fifth of its time there).  A bit is set as a
 * run comes into a slot and cleared only when the filter is rebuilt from
 * the cache, once as many runs came in since as the cache holds, and at
 * least EDGES_REBUILD: a stale bit costs a search, as before, and a run
 * in no bit would only stay cached when it could have gone with its
 * neighbour (the filter decides nothing but whether to search).
 */

/* The bit of a run's start (side 1) or end (side 0) at a: apart, or the
 * run evict just took, whose ends are the addresses it asks about, would
 * always answer. */
OM_INLINE size_t
edge_bit(const struct dir_info *d, uintptr_t a, int side)
{
	return (size_t)((((a >> OM_PAGE_SHIFT) << 1 | (unsigned int)side) *
	    0x9e3779b97f4a7c15ull) >> d->cache_edges_shift);
}

OM_INLINE void
edge_set(struct dir_info *d, uintptr_t a, int side)
{
	size_t b = edge_bit(d, a, side);

	d->cache_edges[b / 64] |= (uint64_t)1 << (b % 64);
}

/* Whether a cached run may end (side 0) or start (side 1) at a. */
OM_INLINE int
edge_maybe(const struct dir_info *d, uintptr_t a, int side)
{
	size_t b = edge_bit(d, a, side);

	return (d->cache_edges[b / 64] >> (b % 64)) & 1;
}

/* Where run e starts and where it ends, both into the filter. */
OM_INLINE void
edges_set(struct dir_info *d, const struct om_cache_entry *e)
{
	edge_set(d, e->p, 1);
	edge_set(d, run_end(e), 0);
}

static OM_NOINLINE void
edges_rebuild(struct dir_info *d)
{
	unsigned int k, i;
	uint64_t m;

	memset(d->cache_edges, 0, ((size_t)1 << (64 -
	    d->cache_edges_shift)) / 8);
	d->cache_edges_set = 0;
	for (m = d->cache_classes; m != 0; m &= m - 1) {
		k = (unsigned int)__builtin_ctzll(m);
		for (i = 0; i < d->cache_n[k]; i++)
			edges_set(d, slot(d, k, i));
	}
}

/* Run e, in a slot now, into the filter. */
OM_INLINE void
edge_note(struct dir_info *d, const struct om_cache_entry *e)
{
	if (OM_UNLIKELY(++d->cache_edges_set > EDGES_REBUILD +
	    d->cache_used)) {
		edges_rebuild(d);
		return;
	}
	edges_set(d, e);
}

/* Whether the filter has the ends of every cached run (a check for the
 * tests: neighbour would never find a run it lacks). */
int
om_cache_edges_hold(const struct dir_info *d)
{
	unsigned int k, i;

	for (k = 0; k < OM_CACHE_CLASSES; k++)
		for (i = 0; i < d->cache_n[k]; i++) {
			const struct om_cache_entry *e =
			    &d->cache[d->cache_base[k] + i];

			if (!edge_maybe(d, e->p, 1) ||
			    !edge_maybe(d, run_end(e), 0))
				return 0;
		}
	return 1;
}

/* Add a run to its class (which has room): a used one at the end of the
 * used runs, the first fresh one moving to the end.  The slot it took. */
OM_INLINE uint32_t
add_entry(struct dir_info *d, unsigned int k, struct om_cache_entry e)
{
	unsigned int n = d->cache_n[k]++;

	if (!e.fresh) {
		unsigned int w = d->cache_warm[k]++;

		*slot(d, k, n) = *slot(d, k, w);
		n = w;
	}
	*slot(d, k, n) = e;
	d->cache_classes |= (uint64_t)1 << k;
	d->cache_used++;
	d->cache_pages += e.npages;
	if (k == 0)
		d->cache_big_pages += e.npages;
	edge_note(d, &e);
	return d->cache_base[k] + n;
}

/* The front's run as its class holds it: used, junked, unguarded. */
OM_INLINE struct om_cache_entry
front_entry(const struct dir_info *d)
{
	return (struct om_cache_entry){ .p = d->cache_front,
		.npages = d->cache_front_npages, .junked = 1 };
}

/*
 * The front run (see om_cache_put) into its class, where the put that
 * left it would have added it: nothing else used the cache since, so the
 * class still has room.  Every use of the cache but a loop's get and put
 * does this first.
 */
static OM_NOINLINE void
settle_front(struct dir_info *d)
{
	struct om_cache_entry e = front_entry(d);

	d->cache_front = 0;
	add_entry(d, run_class(e.npages), e);
}

OM_INLINE void
settle(struct dir_info *d)
{
	if (OM_UNLIKELY(d->cache_front != 0))
		settle_front(d);
}

/*
 * How many runs of npages class k (their class) takes without evicting:
 * its free slots, and what the pages its classes may hold leave room for
 * (classes 1..32 share their shares' sum, class 0 has its own and what
 * they leave: big_max).
 */
static size_t
room_for(const struct dir_info *d, unsigned int k, size_t npages)
{
	size_t held = k == 0 ? d->cache_big_pages :
	    d->cache_pages - d->cache_big_pages;
	size_t max = k == 0 ? big_max(d) : d->cache_small_max;
	size_t runs = (size_t)d->cache_room[k] - d->cache_n[k];

	if (held >= max)
		return 0;
	return runs < (max - held) / npages ? runs : (max - held) / npages;
}

/* Cache a run left over (a reserve's rest, a split run's tail) where its
 * class has room, else unmap it.  Its slot is remembered (cache_rest):
 * a block cut from the front of its run grows into it next. */
static void
keep_or_unmap(struct dir_info *d, const struct om_cache_entry *e)
{
	unsigned int k = run_class(e->npages);
	struct om_span s = { .p = e->p,
		.len = (size_t)e->npages << OM_PAGE_SHIFT };

	if (room_for(d, k, e->npages) > 0) {
		uint32_t at = add_entry(d, k, *e);

		d->cache_rest = at;
		if (!e->fresh)
			bounds_add(d, e, at);
	} else
		unmap_spans(d, &s, 1);
}

/* The run kept last (cache_rest) if it is still cached and starts at p:
 * its slot in its class, and the class in *kp; -1 otherwise.  Slots
 * move as runs leave their class, so the slot is checked. */
static int
rest_at(const struct dir_info *d, uintptr_t p, unsigned int *kp)
{
	uint32_t at = d->cache_rest;
	const struct om_cache_entry *e;
	unsigned int k;

	if (at >= (uint32_t)d->cache_base[0] + d->cache_room[0])
		return -1;
	e = &d->cache[at];
	k = run_class(e->npages);
	if (e->p != p || at < d->cache_base[k] ||
	    at - d->cache_base[k] >= d->cache_n[k])
		return -1;
	*kp = k;
	return (int)(at - d->cache_base[k]);
}

/*
 * The rest of the reserve, too short for the miss at hand: cached as a
 * fresh run where its class has room, else unmapped.
 */
static void
retire_reserve(struct dir_info *d)
{
	struct om_cache_entry e = { .p = d->reserve,
		.npages = (uint32_t)d->reserve_pages, .fresh = 1 };

	d->reserve = 0;
	d->reserve_pages = 0;
	if (e.npages != 0)
		keep_or_unmap(d, &e);
}

/*
 * A pool with a cache maps ahead: a reserve of 64 pages at first,
 * doubling with each reserve used up to 256 (1 MiB), from which misses
 * are carved from the top down, so that a growing heap makes a system
 * call per reserve rather than one per block.  The kernel places a new
 * mapping below the last one, so the next reserve usually ends where the
 * rest of this one starts, and the two become one; blocks carved in
 * order then lie in order, and freed in order they go back in a few
 * calls.  The reserve is never touched, so it costs address space (and
 * commit charge under strict overcommit), not resident memory.  Make
 * sure it holds npages: 0 when it does, -1 when the kernel has no memory.
 */
static int
reserve_ensure(struct dir_info *d, size_t npages)
{
	size_t want = d->reserve_next;
	char *p;

	if (d->reserve_pages >= npages)
		return 0;
	if (want < RESERVE_MIN)
		want = RESERVE_MIN;
	if (want < npages)
		want = npages;
	if ((p = om_os_map(want << OM_PAGE_SHIFT, d->conceal)) == NULL) {
		want = npages;
		if ((p = om_os_map(want << OM_PAGE_SHIFT, d->conceal)) == NULL)
			return -1;
	}
	d->mapped += want << OM_PAGE_SHIFT;
	d->reserve_next = want < RESERVE_MAX ? 2 * want : RESERVE_MAX;
	if (d->reserve_pages > 0 &&
	    (uintptr_t)p + (want << OM_PAGE_SHIFT) == d->reserve) {
		d->reserve = (uintptr_t)p;
		d->reserve_pages += want;
		return 0;
	}
	retire_reserve(d);
	d->reserve = (uintptr_t)p;
	d->reserve_pages = want;
	return 0;
}

/*
 * A miss: the pool's thread had to look beyond its cache.  If the same
 * thread missed before and the pool gave runs away since (put_by_other),
 * it gave away what its thread needed: it waits twice as long before it
 * next gives runs away.  Another thread starts the count over.
 */
static void
idle_missed(struct dir_info *d)
{
	uint32_t tid = OM_SELF_TID(om_self);

	if (tid != d->cache_miss_tid) {
		d->cache_miss_tid = tid;
		d->cache_idle_shift = 0;
	} else if (d->cache_idle_gave &&
	    d->cache_idle_shift < IDLE_SHIFT_MAX)
		d->cache_idle_shift++;
	d->cache_idle_gave = 0;
}

/* New pages: the depot's, the reserve's, or (long runs, and pools
 * without a cache: S, conceal) a mapping of their own. */
static void *
map_fresh(struct dir_info *d, size_t npages, int guarded, int *zeroed)
{
	size_t runs = 1, i;
	struct om_cache_entry e;
	char *p;

	idle_missed(d);
	if (!guarded && d->cache_max > 0 && depot_get(npages, &e)) {
		p = reuse(d, &e, zeroed);
		if (p != NULL) {
			d->mapped += npages << OM_PAGE_SHIFT;
			return p;
		}
	}
	/* om_os_map takes a run the kernel would not unmap, if there is
	 * one; the reserve is carved from a batch it maps, so such a run
	 * is taken here first, before a mapping the kernel may refuse. */
	if (d->cache_max == 0 || npages > RESERVE_MAX / 2)
		p = om_os_map(npages << OM_PAGE_SHIFT, d->conceal);
	else if (d->conceal ||
	    (p = om_os_map_kept(npages << OM_PAGE_SHIFT)) == NULL)
		goto reserve;
	if (p == NULL)
		return NULL;
	d->mapped += npages << OM_PAGE_SHIFT;
	*zeroed = 1;
	return p;

reserve:
	if (reserve_ensure(d, npages) != 0)
		return NULL;

	/*
	 * Runs of up to half a batch are taken several at a time, as many
	 * as fill BATCH_PAGES, the class has room for and the reserve
	 * holds; the rest waits in the cache, untouched.
	 */
	if (!guarded && npages <= BATCH_PAGES / 2) {
		size_t room = room_for(d, (unsigned int)npages, npages);

		runs = BATCH_PAGES / npages - 1;
		if (runs > room)
			runs = room;
		runs++;
		if (runs * npages > d->reserve_pages)
			runs = d->reserve_pages / npages;
	}
	d->reserve_pages -= runs * npages;
	p = (char *)d->reserve + (d->reserve_pages << OM_PAGE_SHIFT);
	for (i = 1; i < runs; i++) {
		struct om_cache_entry rest = {
			.p = (uintptr_t)p + (i * npages << OM_PAGE_SHIFT),
			.npages = (uint32_t)npages, .fresh = 1 };

		add_entry(d, (unsigned int)npages, rest);
	}
	*zeroed = 1;
	return p;
}

/* The live threads whose pool d is, as a count of runs to remember. */
OM_INLINE unsigned int
sharers(const struct dir_info *d)
{
	int n = __atomic_load_n(&d->threads, __ATOMIC_RELAXED);

	return n <= 1 ? 1 : n < OM_CACHE_TAKEN ? (unsigned int)n :
	    OM_CACHE_TAKEN;
}

/* A get took run p whole: if the program frees it back as it was (a
 * malloc/free loop), the put leaves it as it is (see om_cache_put).  As
 * many such runs are remembered as threads share the pool, up to
 * OM_CACHE_TAKEN: the last one taken for each of their loops. */
OM_INLINE void
taken(struct dir_info *d, void *p, size_t npages)
{
	unsigned int t = d->cache_taken_next;

	if (t >= sharers(d))
		t = 0;
	d->cache_taken[t] = (uintptr_t)p;
	d->cache_taken_npages[t] = (uint32_t)npages;
	d->cache_taken_next = t + 1;
}

/*
 * The block at p, a run a get may have taken whole, was cut by realloc
 * in place: freed, it is not a loop's run come back as it was, and
 * joins the rest cut off it.  A run of 32 pages cut to 16 so went back
 * into the front, and its two halves never joined again: a loop of
 * such blocks kept mapping 32 pages anew and evicting halves, 46 times
 * glibc's time at 64 KiB.  It joins whatever its length (cache_shrunk),
 * where other runs freed join their neighbours only from MERGE_MIN
 * pages on: a block of 16 pages cut to 8 or fewer, freed, stayed apart
 * from its rest, and such a loop ran at a 24th of glibc's speed (64 KiB
 * cut to 32 KiB: 905 munmap calls in 20,000 rounds).  A block grown
 * in place keeps its record: it holds the pages it grew into, and freed
 * whole it may go into the front as a loop's run (a buffer doubled from
 * 64 bytes to 64 KiB, again and again, took 1.10x the time without).
 */
void
om_cache_forget(struct dir_info *d, uintptr_t p)
{
	untake(d, p);
	d->cache_shrunk = p;
}

/* Take the run in slot i of class k whole, made usable (see reuse); NULL
 * if it could not be. */
OM_INLINE void *
take_slot(struct dir_info *d, unsigned int k, unsigned int i, int *zeroed)
{
	struct om_cache_entry *e = slot(d, k, i);
	size_t npages = e->npages;
	void *p;

	if ((p = reuse(d, e, zeroed)) != NULL) {
		remove_entry(d, k, i);
		taken(d, p, npages);
	}
	return p;
}

/*
 * Take a run of class k, among its first n slots, that has npages pages,
 * the guard asked for and a start with no bit of mask set: from a random
 * slot on, so that the order of reuse cannot be predicted.  Made usable
 * (see reuse); NULL if none fits or it could not be made usable.
 */
OM_INLINE void *
take_fitting(struct dir_info *d, unsigned int k, unsigned int n,
    size_t npages, int guarded, uintptr_t mask, int *zeroed)
{
	unsigned int i = 0, j;

	/* A single run leaves nothing to draw for. */
	if (n > 1)
		i = (unsigned int)((om_rbyte(&d->rng) * n) >> 8);

	for (j = 0; j < n; j++, i = i + 1 < n ? i + 1 : 0) {
		struct om_cache_entry *e = slot(d, k, i);

		if (e->npages != npages || e->guarded != guarded ||
		    (e->p & mask) != 0)
			continue;
		return take_slot(d, k, i, zeroed);
	}
	return NULL;
}

/* Whether run e ends at lo or starts at hi. */
OM_INLINE int
touches(const struct om_cache_entry *e, uintptr_t lo, uintptr_t hi)
{
	return e->p == hi || run_end(e) == lo;
}

/* A cached run of any length that touches [lo, hi): its slot, and its
 * class in *kp; -1 if there is none. */
static int
neighbour(struct dir_info *d, uintptr_t lo, uintptr_t hi, unsigned int *kp)
{
	unsigned int k, j;
	uint64_t m;

	if (d->cache_used == 0 || (!edge_maybe(d, lo, 0) &&
	    !edge_maybe(d, hi, 1)))
		return -1;
	/* The classes that hold runs: most are empty. */
	for (m = d->cache_classes; m != 0; m &= m - 1) {
		k = (unsigned int)__builtin_ctzll(m);
		for (j = 0; j < d->cache_n[k]; j++) {
			const struct om_cache_entry *e = slot(d, k, j);

			if (touches(e, lo, hi)) {
				*kp = k;
				return (int)j;
			}
		}
	}
	return -1;
}

/*
 * Take the first npages pages of the run in slot i of class k, at least
 * that long and not guarded: made usable and their junk checked.  The
 * rest stays cached, in the class of its length, or is unmapped when
 * that class is full.  The pages, or NULL if they could not be made
 * accessible (U).
 */
static void *
take_front(struct dir_info *d, unsigned int k, unsigned int i,
    size_t npages)
{
	struct om_cache_entry e = *slot(d, k, i), rest;
	size_t len = npages << OM_PAGE_SHIFT;

	if (e.noaccess && om_os_protect((void *)e.p, len, 1) != 0)
		return NULL;
	if (e.junked && d->junk)
		junk_validate(d, (void *)e.p, len);
	remove_entry(d, k, i);
	if (e.npages == npages)
		return (void *)e.p;
	rest = e;
	split_front(&rest, npages);
	keep_or_unmap(d, &rest);
	return (void *)e.p;
}

/*
 * A class with no used run of npages (k its class), for a block that
 * grows: the front of a used run of the next longer class that has one
 * (with longest: of the longest class that has one), at random among
 * them (find_longer finds it: its slot, and its class in *kp, or -1), as
 * OpenBSD splits a longer cached region.  The pages are already
 * resident, and the block then finds the rest of the run behind it as it
 * grows (om_cache_take_at): a buffer built up again and again reuses the
 * pages it had, instead of touching fresh ones and leaving a run of every
 * length it passed through.  Runs of class 0 are longer than any other
 * class's; among them one long enough is taken.  Other requests cut only
 * runs longer than MERGE_MIN (om_cache_get): in a program of blocks of
 * many shorter lengths (phong) cutting those would only break up the
 * runs the next requests ask for.
 */
static int
find_longer(struct dir_info *d, unsigned int k, size_t npages, int longest,
    unsigned int *kp)
{
	/* The longer classes, then class 0 (as bit 63). */
	uint64_t m = k == 0 ? 0 : d->cache_classes & ~(((uint64_t)2 << k) - 1);
	unsigned int b, j, i, n;

	if (d->cache_classes & 1)
		m |= (uint64_t)1 << 63;
	for (; m != 0; m &= ~((uint64_t)1 << b)) {
		b = longest ? 63 - (unsigned int)__builtin_clzll(m) :
		    (unsigned int)__builtin_ctzll(m);
		j = b == 63 ? 0 : b;
		n = d->cache_warm[j];
		if (n == 0)
			continue;
		i = (unsigned int)((om_rbyte(&d->rng) * n) >> 8);
		for (unsigned int t = 0; t < n;
		    t++, i = i + 1 < n ? i + 1 : 0) {
			const struct om_cache_entry *e = slot(d, j, i);

			if (e->npages <= npages || e->guarded)
				continue;
			*kp = j;
			return (int)i;
		}
	}
	return -1;
}

/* Run p of npages, cut from a longer one, counted as taken whole: in the
 * index, so that the rest of the run can join it later. */
static void
taken_cut(struct dir_info *d, void *p, size_t npages)
{
	struct om_cache_entry e = { .p = (uintptr_t)p,
		.npages = (uint32_t)npages };

	taken(d, p, npages);
	bounds_add(d, &e, UINT32_MAX);
}

/*
 * A run of npages at p was cut from the front of a longer one.  Threads
 * that share the pool: it counts as taken whole.  Joined again at once
 * to the rest of the run it came from, it would be cut again for the
 * next request of its length, the other threads' runs of that length
 * joining in too as they come back.  A pool of one thread lets it join
 * again, so that a buffer of one length cut and freed leaves the run
 * whole for the next, of another; but the second cut in a row of the
 * same run at the same length is a loop's, and counts as taken whole
 * from then on.  A loop of 64 KiB blocks next to a cached 1 MiB run took
 * 1,420 instructions a pair so (callgrind), 564 now.
 */
static void
note_cut(struct dir_info *d, void *p, size_t npages)
{
	if (sharers(d) == 1 && (d->cache_cut != (uintptr_t)p ||
	    d->cache_cut_npages != npages)) {
		d->cache_cut = (uintptr_t)p;
		d->cache_cut_npages = (uint32_t)npages;
		return;
	}
	taken_cut(d, p, npages);
}

static void *
take_longer(struct dir_info *d, unsigned int k, size_t npages, int longest,
    int *zeroed)
{
	unsigned int j;
	int i = find_longer(d, k, npages, longest, &j);
	void *p;

	if (i < 0)
		return NULL;
	*zeroed = 0;
	if ((p = take_front(d, j, (unsigned int)i, npages)) != NULL)
		note_cut(d, p, npages);
	return p;
}

/*
 * A request longer than every run that could be cut for it, where class
 * 0 keeps few runs (a request beyond cache_long, or class 0 grown for
 * long buffers: long_mode): the longest used run of class 0 (random
 * among equals), grown to npages: downwards, by new pages mapped right
 * before it where nothing is mapped, else by mremap, which grows it in
 * place where the pages behind it are free and otherwise moves its page
 * tables, not its bytes.  Its pages stay resident, and only the new ones
 * fault in: a buffer of a new, longer length touches fresh pages for
 * what it adds to the last one freed, where a mapping of its own would
 * fault in every page and the run would soon be evicted (bigbuf at 2-8
 * and 5-25 MiB; glibc's heap reuses freed blocks so too).  Moved pages
 * are not free (here the first touch of each cost half a fresh page's
 * fault), hence the pages mapped below first: they took bigbuf's moves
 * from 60% of its grows to a third.  Elsewhere class 0 keeps the run for
 * a shorter request to cut: growing runs of 128-512 pages made bigbuf at
 * 512 KiB-2 MiB 1.6 times slower.  The run stays cached if the kernel
 * refuses.  NULL if no run was grown.
 */
static void *
grow_shorter(struct dir_info *d, size_t npages, int *zeroed)
{
	unsigned int n = d->cache_warm[0], i, t;
	const struct om_cache_entry *e;
	size_t most = 0;
	int best = -1;
	void *q;

	if (n == 0)
		return NULL;
	i = (unsigned int)((om_rbyte(&d->rng) * n) >> 8);
	for (t = 0; t < n; t++, i = i + 1 < n ? i + 1 : 0) {
		e = slot(d, 0, i);
		if (e->npages >= npages || e->npages <= most ||
		    e->guarded || e->noaccess)
			continue;
		most = e->npages;
		best = (int)i;
	}
	if (best < 0)
		return NULL;
	e = slot(d, 0, (unsigned int)best);
	if (e->junked && d->junk)
		junk_validate(d, (void *)e->p, data_len(e));
	q = om_os_map_below((void *)e->p, (npages - e->npages) <<
	    OM_PAGE_SHIFT);
	if (q == NULL && (q = om_os_remap((void *)e->p,
	    (size_t)e->npages << OM_PAGE_SHIFT, npages << OM_PAGE_SHIFT,
	    NULL)) == NULL)
		return NULL;
	d->mapped += (npages - e->npages) << OM_PAGE_SHIFT;
	remove_entry(d, 0, (unsigned int)best);
	*zeroed = 0;
	return q;
}

/*
 * npages pages (the last one a guard page if guarded, already installed
 * for pages that come from the cache).  *zeroed tells whether they are
 * known to be zero.  NULL when the kernel has no memory.  A run of the
 * exact length is taken at random from its class, so that the order of
 * reuse cannot be predicted.  The runs the program used before go first,
 * as long as there are at least WARM_MIN of them to choose from: the
 * fresh runs a batch mapped ahead are then not touched one by one, each
 * becoming resident, for a loop that needs a few pages.  A run longer
 * than CUT_MIN with none of its length cached takes the front of a used
 * run longer than MERGE_MIN, of the shortest class that has one long
 * enough, at random within it (take_longer), the rest staying cached:
 * buffers of many lengths (bigbuf) then reuse the resident pages of
 * those freed before, where each would fault every page in, and the runs
 * freed join again (merge_neighbours).  OpenBSD split a longer cached
 * region too, before it kept its cache by size.  A request of more than
 * 32 pages, cache_long or not, cuts class 0's runs, and with none long
 * enough may grow a shorter one (grow_shorter).  Requests of up to 3
 * pages, chunk pages among them, take runs of their own length only:
 * they have the depot and batches mapped ahead.
 */
void *
om_cache_get_run(struct dir_info *d, size_t npages, int guarded, int *zeroed)
{
	int k = class_of(d, npages);
	unsigned int w;
	void *p;

	if (OM_UNLIKELY(npages == d->cache_grow_first) &&
	    (p = om_cache_get_grown(d, npages, zeroed)) != NULL)
		return p;
	d->cache_idle = 0;
	if (k < 0)
		long_again(d, npages);
	else if (d->cache_n[k] != 0) {
		/* Used runs, when there are enough to choose from at random;
		 * else, or if none of them fits (guarded or not), any run. */
		w = d->cache_warm[k];
		if (w >= WARM_MIN && (p = take_fitting(d, (unsigned int)k, w,
		    npages, guarded, 0, zeroed)) != NULL)
			return p;
		if ((p = take_fitting(d, (unsigned int)k, d->cache_n[k],
		    npages, guarded, 0, zeroed)) != NULL)
			return p;
	}
	if (guarded)
		return map_fresh(d, npages, 1, zeroed);
	if (k <= 0) {
		/* Longer than 32 pages: the front of a longer run of class
		 * 0, or a shorter one grown. */
		if ((p = take_longer(d, 0, npages, 0, zeroed)) != NULL)
			return p;
		if ((k < 0 || long_mode(d)) &&
		    (p = grow_shorter(d, npages, zeroed)) != NULL)
			return p;
	} else if (npages > CUT_MIN && (p = take_longer(d,
	    k > MERGE_MIN ? (unsigned int)k : MERGE_MIN, npages, 0,
	    zeroed)) != NULL)
		return p;
	return map_fresh(d, npages, 0, zeroed);
}

/*
 * A get's run from the front (see om_cache_get_front), drawn from class
 * k, whose used runs are w: the front's run (i == w) or the used run of
 * slot i < w, which leaves its slot to the front's.  NULL if that run
 * could not be made usable, the front untouched.
 */
OM_INLINE void *
front_take(struct dir_info *d, unsigned int k, unsigned int w,
    unsigned int i, size_t npages, int *zeroed)
{
	uintptr_t p = d->cache_front;

	if (i < w) {
		struct om_cache_entry *e = slot(d, k, i);
		void *q = reuse(d, e, zeroed);

		if (q == NULL)
			return NULL;
		*e = front_entry(d);
		edge_note(d, e);
		p = (uintptr_t)q;
	} else {
		check_page_junk(d, (void *)p);
		*zeroed = 0;
	}
	d->cache_front = 0;
	d->cache_idle = 0;
	if (w < d->cache_low[k])
		d->cache_low[k] = (uint16_t)w;
	taken(d, (void *)p, npages);
	return (void *)p;
}

/*
 * om_cache_get_front's draw where it covers more than the used runs
 * (see below), or class k holds runs of many lengths (class 0): the draw
 * om_cache_get_run makes once settle has put the front's run in, as the
 * last used one (slot w), the fresh run there moving to the end
 * (add_entry).  That is take_fitting's random start over the used runs,
 * or over all of them where fewer than WARM_MIN are used, then the first
 * run of npages from there on.  The front's run, at w, always fits.  A
 * fresh run drawn is taken as the settled class holds it.
 */
OM_INLINE void *
front_drawn(struct dir_info *d, unsigned int k, size_t npages, int *zeroed)
{
	unsigned int n = d->cache_n[k], w = d->cache_warm[k];
	unsigned int all = w + 1 >= WARM_MIN ? w + 1 : n + 1, i = 0;
	const struct om_cache_entry *e;
	void *q;

	if (all > 1)
		i = (unsigned int)((om_rbyte(&d->rng) * all) >> 8);
	for (; i != w; i = i + 1 < all ? i + 1 : 0) {
		e = slot(d, k, i < n ? i : w);
		if (e->npages == npages && !e->guarded)
			break;
	}
	if (i <= w && (q = front_take(d, k, w, i, npages, zeroed)) != NULL)
		return q;
	settle(d);
	d->cache_idle = 0;
	if (i > w && (q = take_slot(d, k, i, zeroed)) != NULL)
		return q;
	return om_cache_get_run(d, npages, 0, zeroed);
}

/* front_drawn out of line: for class 0, built for it alone, and for a
 * class of runs of one length. */
static OM_NOINLINE void *
front_drawn_long(struct dir_info *d, size_t npages, int *zeroed)
{
	return front_drawn(d, 0, npages, zeroed);
}

static OM_NOINLINE void *
front_drawn_short(struct dir_info *d, size_t npages, int *zeroed)
{
	return front_drawn(d, (unsigned int)npages, npages, zeroed);
}

/*
 * A get with a run in the front (see om_cache_put).  One of its
 * length is what om_cache_get_run would give once settle put the front
 * run into its class, as the last of the used runs, slot w: the draw
 * over the w + 1 used runs, or with none the front run alone, and
 * front_take takes it.  Taken from slot i < w, the run is replaced by
 * the front run, which is where remove_entry would have moved it; taken
 * from the front, the class is as it was.  Either way the class's counts
 * are what they were, and its fewest used this round no more than w.
 * With used runs too few to draw among, the draw is over the fresh ones
 * too, and class 0 holds runs of many lengths: front_drawn.  A run
 * that reuse() cannot make usable, one without access under U, where
 * the front is not used, would send the get the long way.
 */
void *
om_cache_get_front(struct dir_info *d, size_t npages, int guarded,
    int *zeroed)
{
	unsigned int w, i;
	void *q;

	if (d->cache_front == 0 || d->cache_front_npages != npages ||
	    guarded)
		goto settled;
	if (npages > OM_CACHE_SMALL)
		return front_drawn_long(d, npages, zeroed);
	w = d->cache_warm[npages];
	if (d->cache_n[npages] == 0)
		i = 0;
	else if (w + 1 >= WARM_MIN)
		i = (unsigned int)((om_rbyte(&d->rng) * (w + 1)) >> 8);
	else
		return front_drawn_short(d, npages, zeroed);
	if ((q = front_take(d, (unsigned int)npages, w, i, npages,
	    zeroed)) != NULL)
		return q;
settled:
	settle(d);
	return om_cache_get_run(d, npages, guarded, zeroed);
}

/*
 * A block grew to npages in place (mremap): a program that grows a buffer
 * to the length of one it freed, as much as one that asks for it, asks
 * again for that length (see long_gone), so that the buffer it frees next
 * is kept and the next one grows into it instead of mapping its pages and
 * faulting them in again.
 */
void
om_cache_grown_to(struct dir_info *d, size_t npages)
{
	if (npages > d->cache_long && d->cache_room[0] != 0)
		long_again(d, npages);
}

/* A used run of newpages or more, in a class of runs longer than
 * newpages - 1, for a block that grows to newpages: its slot, its class
 * in *kp, or -1. */
static int
run_to_grow(struct dir_info *d, size_t newpages, unsigned int *kp)
{
	int k = class_of(d, newpages - 1);

	settle(d);
	if (k < 0)
		return -1;
	return find_longer(d, (unsigned int)k, newpages - 1, 0, kp);
}

/* Whether a used run is cached that a block growing to newpages could
 * move onto (om_cache_move_to_grow), or be copied into. */
int
om_cache_has_run_to_grow(struct dir_info *d, size_t newpages)
{
	unsigned int j;

	return run_to_grow(d, newpages, &j) >= 0;
}

/*
 * A block of npages pages at p, from 64 KiB, that has to grow to newpages
 * and has no cached run behind it: moved onto the front newpages of a used
 * run at least that long, by the kernel (page tables, not bytes), which
 * drops the run's own pages under it; the rest of the front are the
 * block's new pages, and the rest of the run stays cached behind it for
 * it to grow into (om_cache_take_at).  A buffer built up again then grows
 * through the pages the last one left, already resident, rather than
 * through new ones, faulted in one by one, while those wait in the cache.
 * Where it moved, or NULL (nothing done).
 */
void *
om_cache_move_to_grow(struct dir_info *d, void *p, size_t npages,
    size_t newpages)
{
	unsigned int j;
	int i;
	char *q;

	if ((i = run_to_grow(d, newpages, &j)) < 0)
		return NULL;
	d->cache_idle = 0;
	if ((q = take_front(d, j, (unsigned int)i, newpages)) == NULL)
		return NULL;
	if (om_os_remap(p, npages << OM_PAGE_SHIFT, npages << OM_PAGE_SHIFT,
	    q) == NULL) {
		om_cache_put(d, q, newpages, 0);
		return NULL;
	}
	d->mapped -= npages << OM_PAGE_SHIFT;
	return q;
}

/*
 * For a block that moves to grow: when its length has no used run, the
 * front of a longer used run (take_longer), which it can then grow into.
 * With step, a block that grows by little at a time (a buffer being built
 * up): the front of the longest used run, whatever else is cached.  Its
 * length and the lengths on its way usually have used runs too, the
 * pieces of runs such blocks split before; taking those, a buffer would
 * grow through fresh pages now and then, and each time leave one more run
 * of its final length cached that no later one takes (building a 64 KiB
 * buffer 100 times kept 12 to 21 of them, now one).  NULL otherwise:
 * om_cache_get then serves it as any other.
 */
void *
om_cache_get_to_grow(struct dir_info *d, size_t npages, int step,
    int *zeroed)
{
	int k = class_of(d, npages);
	void *p;

	if (npages == d->cache_grow_first &&
	    (p = om_cache_get_grown(d, npages, zeroed)) != NULL)
		return p;
	settle(d);
	if (k < 0 || (!step && d->cache_warm[k] != 0))
		return NULL;
	d->cache_idle = 0;
	return take_longer(d, (unsigned int)k, npages, step, zeroed);
}

/*
 * A region grew from frompages at from (0: it was a chunk) to topages at
 * to, in place or moved.  A block that grew from where the last one
 * ended goes on growing; else its growth begins here, at frompages (or
 * topages, from a chunk).  See om_cache_get_grown.
 */
void
om_cache_grew(struct dir_info *d, uintptr_t from, size_t frompages,
    uintptr_t to, size_t topages)
{
	if (from == 0)
		d->cache_grow_first = (uint32_t)topages;
	else if (from != d->cache_grown || frompages != d->cache_grown_npages)
		d->cache_grow_first = (uint32_t)frompages;
	d->cache_grown = to;
	d->cache_grown_npages = (uint32_t)topages;
}

/*
 * How the block at p, moved to grow from oldsz to newsz bytes, is placed
 * (see om_region_alloc): OM_ALLOC_GROW, and OM_ALLOC_STEP as well if it
 * grows by an eighth of its size or less and is the block that grew
 * last, a buffer being built up, which then takes the front of the
 * longest used run to grow through (om_cache_get_to_grow).  Any block
 * that grew by little took it before, and blocks resized up and down at
 * random (1,000 of up to 30 KiB, bench/realloc grow=random) cut the
 * longest runs into pieces at every small step: those classes ran dry
 * and missed, the classes of the pieces overflowed and were evicted, and
 * the loop took 2.6 times glibc's time with 3.5 times its peak.
 */
int
om_cache_grow_flags(const struct dir_info *d, uintptr_t p, size_t oldsz,
    size_t newsz)
{
	if (om_cache_building(d, p, oldsz, newsz))
		return OM_ALLOC_GROW | OM_ALLOC_STEP;
	return OM_ALLOC_GROW;
}

/* The front npages of the run in slot i of class k, for
 * om_cache_get_grown, counted as taken whole in any pool: the block,
 * grown and freed, then goes back as it is, where the next get finds
 * it, instead of joining a run before it (realloc grow=double from
 * 64 B to 64 KiB moved 139,000 blocks in 220,000 calls so, 121,000
 * now). */
static OM_NOINLINE void *
take_grown(struct dir_info *d, unsigned int k, unsigned int i, size_t npages,
    int *zeroed)
{
	void *p = take_front(d, k, i, npages);

	if (p != NULL) {
		d->cache_idle = 0;
		*zeroed = 0;
		taken_cut(d, p, npages);
	}
	return p;
}

/*
 * A get of npages, the length the block realloc grew last had as it
 * began to grow (cache_grow_first, which the caller tested): the front
 * of that block's run if it is cached and used, whole or joined to a
 * neighbour, the rest staying cached behind it.  A program that builds a
 * buffer again and again from one length by realloc (n then 2n, or
 * doubling on to 16n) then grows the new one in place into the rest
 * (om_cache_take_at).  A run of the first length, taken whole, had no
 * cached pages behind it: every step moved the block by copying and
 * left a run of every length it passed cached.  callgrind, n then 2n:
 * 4 KiB 2,231 instructions before, 1,297 now; 16 KiB 18,998 (most of it
 * the copy), 1,297 (both with rest_at).  Once a growth: a program that
 * asks for the length for another use leaves one run cut in two.  NULL
 * if the run is not there; the caller takes its pages as any get.
 */
void *
om_cache_get_grown(struct dir_info *d, size_t npages, int *zeroed)
{
	size_t m = d->cache_grown_npages;
	unsigned int k, i;
	const struct om_cache_entry *e;
	uint64_t c;

	d->cache_grow_first = 0;
	if (m <= npages)
		return NULL;
	settle(d);
	/* Its class, or a longer one's if it joined a neighbour. */
	c = d->cache_classes & (run_class(m) == 0 ? 1 :
	    ~(((uint64_t)1 << run_class(m)) - 1) | 1);
	for (; c != 0; c &= c - 1) {
		k = (unsigned int)__builtin_ctzll(c);
		for (i = 0; i < d->cache_warm[k]; i++) {
			e = slot(d, k, i);
			if (e->p == d->cache_grown && e->npages >= m &&
			    !e->guarded)
				return take_grown(d, k, i, npages, zeroed);
		}
	}
	return NULL;
}

/*
 * The cached run that starts at p: the rest of the run a block was cut
 * from, the run kept last (rest_at), found without a search; else a used
 * run, through the index; else any run, by a search of a cache of at
 * most TAKE_AT_RUNS runs (a longer search costs more than the copy it
 * saves; no cached run ends at p, where a region's pages lie).  Its
 * slot, and its class in *kp; -1 if there is none.
 */
OM_INLINE int
run_at(struct dir_info *d, uintptr_t p, unsigned int *kp)
{
	int j;

	if ((j = rest_at(d, p, kp)) >= 0 || (j = indexed_at(d, p, kp)) >= 0)
		return j;
	return d->cache_used > TAKE_AT_RUNS ? -1 : neighbour(d, p, p, kp);
}

/*
 * A block grows by npages at p, where the cached run that starts there,
 * in slot j of class k, is too short: across it and the used runs cached
 * one after another behind it, found through the index, if CHAIN_RUNS
 * of them or fewer are long enough; all of them but the last taken
 * whole, the front of the last.  1 if done; otherwise nothing is taken.
 */
static OM_NOINLINE int
take_across(struct dir_info *d, uintptr_t p, size_t npages, unsigned int k,
    int j)
{
	const struct om_cache_entry *e = slot(d, k, (unsigned int)j);
	uintptr_t at[CHAIN_RUNS];
	size_t have = 0;
	unsigned int i, n = 0;

	for (;;) {
		if (e->guarded || e->noaccess)
			return 0;
		if (have + e->npages >= npages)
			break;
		if (n + 1 == CHAIN_RUNS)
			return 0;
		at[n++] = p;
		have += e->npages;
		p = run_end(e);
		if ((j = indexed_at(d, p, &k)) < 0)
			return 0;
		e = slot(d, k, (unsigned int)j);
	}
	/* The front of the last, in the slot the walk found it in; then the
	 * others, each found again where the cache moved it: the first the
	 * way om_cache_take_at found it, the others through the index,
	 * which follows a run moved within its class. */
	if (take_front(d, k, (unsigned int)j, npages - have) == NULL)
		return 0;
	for (i = 0; i < n; i++) {
		j = i == 0 ? run_at(d, at[i], &k) : indexed_at(d, at[i], &k);
		(void)take_out(d, k, (unsigned int)j);
	}
	return 1;
}

/*
 * Grow a region in place: the cached run that starts at p, where the
 * region ends, gives its first npages pages (take_front).  1 if done.
 * Misses in a pool map runs of a few pages in batches, from the top of
 * the reserve down, so a block grown a page at a time usually finds a
 * run behind it: the block it moved out of, or a fresh run of its batch.
 * Without that, each page would cost a copy and leave a run of each
 * length it passed in the cache.  The rest of the run a block was cut
 * from is found without a search (rest_at): a search took 255
 * instructions of a loop of n then 2n pages at 64 KiB (callgrind), where
 * the loop took 1,733.
 *
 * Where the run is too short, the block grows across the used runs
 * cached one after another behind it (take_across).  A buffer rebuilt
 * from one length to lengths that vary (a string appended to until it
 * is 40 KiB, its capacity grown by half each time it is full) grows in
 * the run the last one left (om_cache_get_grown); one that outgrew it
 * moved by copying at every step after, each time onto a run of its
 * length taken at random, leaving the one it left cached, and for the
 * longest lengths it took fresh pages.  The pieces of those runs lay
 * one after the other, each too short, and filled the cache: 14 MiB of
 * runs no request fitted, five fresh pages faulted in a round.
 */
int
om_cache_take_at(struct dir_info *d, uintptr_t p, size_t npages)
{
	const struct om_cache_entry *e;
	unsigned int k;
	int j;

	settle(d);
	if ((j = run_at(d, p, &k)) < 0)
		return 0;
	e = slot(d, k, (unsigned int)j);
	if (e->guarded)
		return 0;
	if (e->npages < npages)
		return take_across(d, p, npages, k, j);
	return take_front(d, k, (unsigned int)j, npages) != NULL;
}

/*
 * A cached run of npages that starts on a multiple of align (a power of
 * two, more than a page), taken at random among those that do: an aligned
 * block freed and asked for again comes back without a system call.  NULL
 * if there is none; the caller maps one.
 */
void *
om_cache_get_aligned(struct dir_info *d, size_t npages, int guarded,
    size_t align, int *zeroed)
{
	int k = class_of(d, npages);

	settle(d);
	d->cache_idle = 0;
	if (k < 0 || d->cache_n[k] == 0)
		return NULL;
	return take_fitting(d, (unsigned int)k, d->cache_n[k], npages, guarded,
	    (uintptr_t)align - 1, zeroed);
}

/* Whether run b starts where run a ends and can become one run with it:
 * neither guarded, the same state, not longer than the depot keeps. */
static int
joins(const struct om_cache_entry *a, const struct om_cache_entry *b)
{
	return !a->guarded && !b->guarded && b->p == run_end(a) &&
	    b->junked == a->junked && b->noaccess == a->noaccess &&
	    b->fresh == a->fresh &&
	    a->npages + b->npages <= DEPOT_RUN;
}

/*
 * Evict count runs of class k, in one batch of at most EVICT_BATCH: a
 * random run of the class, then the cached runs that touch it on either
 * side (pages freed in order, a batch mapped at once), then another
 * random run of k, and so on.  Touching runs of other lengths go too
 * (blocks of growing sizes side by side), without counting against k's
 * count: they save a system call now at the cost of a cache entry.
 * Runs that touch are joined where their state is the same, and each
 * joined run is offered to the depot as one, or unmapped in one call,
 * once the lock is released; a stretch of touching runs longer than the
 * depot keeps goes back whole, none of it offered, as pieces the depot
 * took would cut it into several calls: a heap freed in order goes back
 * in a few calls, not one per run.  Each run's junk is checked as it
 * goes, but for the first page of a run offered to the depot, which the
 * depot checks as the run leaves it, for a pool or for the kernel: a
 * run given back to the depot and taken again, as threads come and go,
 * is read once in memory gone cold, not twice (bench/churn at two
 * threads: 1.03-1.10x the threads a second).  Which runs leave does not
 * make reuse predictable: a get still takes a random run of what stays.
 * With idle (decay, below), only used runs of k go, none of their
 * neighbours (which may be what a loop is using), and all of them back
 * to the kernel, none to the depot; those that touch still go in one
 * call.
 */
static void
evict(struct dir_info *d, unsigned int k, unsigned int count, int idle)
{
	struct om_span out[EVICT_BATCH], batch[EVICT_BATCH];
	unsigned int m = 0, i, g, nb = 0, taken = 0;
	uintptr_t lo = 0, hi = 0;
	unsigned int kk = k;
	int j = -1, whole = 0;

	while (m < EVICT_BATCH) {
		if (j < 0) {
			unsigned int n = idle ? d->cache_warm[k] :
			    d->cache_n[k];

			if (taken == count || n == 0)
				break;
			kk = k;
			i = (unsigned int)((om_rbyte(&d->rng) * n) >> 8);
		} else if (kk == k && taken == count)
			break;
		else
			i = (unsigned int)j;
		if (kk == k)
			taken++;
		/* Its junk is checked below, as it goes. */
		out[m].offer = *slot(d, kk, i);
		remove_entry(d, kk, i);
		out[m].p = out[m].offer.p;
		if (j < 0 || out[m].p < lo)
			lo = out[m].p;
		if (j < 0 || out[m].p + ((uintptr_t)out[m].offer.npages <<
		    OM_PAGE_SHIFT) > hi)
			hi = out[m].p + ((uintptr_t)out[m].offer.npages <<
			    OM_PAGE_SHIFT);
		m++;
		j = idle ? -1 : neighbour(d, lo, hi, &kk);
	}
	if (m == 0)
		return;
	om_sort_spans(out, m);
	for (i = 0, g = 0; i < m; i++) {
		struct om_cache_entry run = out[i].offer;
		unsigned int first = i, c;
		size_t len;
		int offer;

		if (i == g) {
			/* A new stretch of touching runs: longer than the
			 * depot keeps, it goes back whole, in one call. */
			size_t pages = run.npages;

			for (g = i + 1; g < m && out[g].p == out[g - 1].p +
			    ((uintptr_t)out[g - 1].offer.npages <<
			    OM_PAGE_SHIFT); g++)
				pages += out[g].offer.npages;
			whole = pages > DEPOT_RUN;
		}
		while (i + 1 < g && joins(&run, &out[i + 1].offer))
			run.npages += out[++i].offer.npages;
		len = (size_t)run.npages << OM_PAGE_SHIFT;
		offer = !whole && !idle && !run.guarded &&
		    run.npages <= DEPOT_RUN && d->npending < OM_PENDING;
		/* The junk of a run offered to the depot is checked once,
		 * as it leaves the depot (for a pool, or for the kernel):
		 * its first page's, where a joined run keeps it. */
		for (c = offer ? first + 1 : first; c <= i; c++)
			check_out(d, &out[c].offer);
		if (offer) {
			/* Offered to the depot by unlock(). */
			run.junked = run.junked && d->junk;
			d->mapped -= len;
			pend(d, run.p, len, &run);
		} else {
			batch[nb].p = run.p;
			batch[nb].len = len;
			nb++;
		}
	}
	if (nb > 0)
		unmap_spans(d, batch, nb);
}

/* A quarter of class k's share, at least one run. */
static unsigned int
quarter(const struct dir_info *d, unsigned int k)
{
	return d->cache_cap[k] >= 4 ? d->cache_cap[k] / 4u : 1u;
}

/*
 * Unmap the longest run of class 0 if it is at least npages long: 1 if
 * done.  Over its pages, class 0 gives back its longest runs first: a
 * heap freed in scattered order joins there into runs that grow as their
 * pieces come in, and those that have grown longest go back, in one call
 * each, where random ones would go back before they had joined.
 */
static int
drop_longest(struct dir_info *d, size_t npages)
{
	unsigned int j, longest = 0;
	struct om_cache_entry e;

	if (d->cache_n[0] == 0)
		return 0;
	for (j = 1; j < d->cache_n[0]; j++)
		if (slot(d, 0, j)->npages > slot(d, 0, longest)->npages)
			longest = j;
	if (slot(d, 0, longest)->npages < npages)
		return 0;
	e = take_out(d, 0, longest);
	struct om_span s = { .p = e.p,
		.len = (size_t)e.npages << OM_PAGE_SHIFT };

	unmap_spans(d, &s, 1);
	return 1;
}

/* Whether short class k takes a run of npages as the cache is, so that
 * make_room would do nothing: k has a free slot, the short classes stay
 * within their pages with it, and class 0 within its own.  Class 0
 * always goes through make_room. */
OM_INLINE int
has_room(const struct dir_info *d, unsigned int k, size_t npages)
{
	return k != 0 && d->cache_n[k] < d->cache_room[k] &&
	    d->cache_big_pages <= d->cache_big_max &&
	    d->cache_pages - d->cache_big_pages + npages <=
	    d->cache_small_max;
}

/*
 * Make room for a run of npages in class k: when the class is out of
 * slots, evict a random quarter of its share; class 0 over its pages
 * gives back its longest runs, as long as they are longer than the one
 * to come (which the caller otherwise unmaps); when classes 1..32 would
 * hold more pages than their shares add up to, evict from the class
 * furthest over its share, counting the run to come, and from class 0
 * what it took of their share.  A class within its share is never
 * evicted for another one.
 */
static void
make_room(struct dir_info *d, unsigned int k, size_t npages)
{
	if (d->cache_n[k] == d->cache_room[k])
		evict(d, k, quarter(d, k), 0);
	if (k == 0 && long_mode(d)) {
		/* Grown for long buffers: the one coming in stays, to be
		 * cut for the next, and random ones go. */
		while (d->cache_n[0] > 0 &&
		    d->cache_big_pages + npages > d->cache_big_max)
			evict(d, 0, quarter(d, 0), 0);
		return;
	}
	if (k == 0) {
		while (d->cache_big_pages + npages > big_max(d) &&
		    drop_longest(d, npages))
			;
		return;
	}
	while (d->cache_big_pages > d->cache_big_max &&
	    d->cache_pages + npages > d->cache_small_max +
	    d->cache_big_max && drop_longest(d, 0))
		;
	while (d->cache_pages - d->cache_big_pages + npages >
	    d->cache_small_max) {
		unsigned int v, victim = 0;
		long over, most = 0;

		for (v = 1; v <= OM_CACHE_SMALL; v++) {
			over = ((long)d->cache_n[v] + (v == k) -
			    (long)d->cache_cap[v]) * (long)v;
			if (over > most) {
				most = over;
				victim = v;
			}
		}
		if (victim == 0 || d->cache_n[victim] == 0)
			break;
		evict(d, victim, quarter(d, victim), 0);
	}
}

/*
 * Decay: runs the program freed and then did not ask for again during a
 * whole round (OM_CACHE_DECAY_PUTS puts) are not what a loop reuses but
 * what is left of a time when more blocks of their length were live than
 * are now.  Each class counts the fewest used runs it held during the
 * round; of those, beyond the WARM_MIN that a get chooses among, half go
 * back to the kernel at the end of the round (at most a batch a class),
 * unmapped, not offered to the depot, which would keep them resident for
 * the same pool.  Without that a class keeps as many runs as it ever had
 * spare at once, and a long run of blocks of many lengths (phong) keeps
 * the sum of every length's highest count: far more than the program
 * ever had spare at one time.  A loop takes its runs every round and
 * keeps them; what a burst left goes in a few rounds.
 */
static OM_NOINLINE void
decay(struct dir_info *d)
{
	unsigned int k, low;

	d->cache_puts = 0;
	for (k = 0; k < OM_CACHE_CLASSES; k++) {
		low = d->cache_low[k];
		if (low > d->cache_warm[k])
			low = d->cache_warm[k];
		if (low > WARM_MIN)
			evict(d, k, (low - WARM_MIN + 1) / 2, 1);
		d->cache_low[k] = d->cache_warm[k];
	}
}

/*
 * Whether cached run e may join run add: not guarded, the same access,
 * and together not too long.  A class 0 grown for long buffers (see
 * long_again) holds two of them; a run joined from more, too long for
 * it, would go back to the kernel whole, and the next buffers would
 * fault in every page: 10 MiB buffers were a third slower so.  Runs
 * join there only as long as class 0 takes them.
 */
static int
joinable(const struct dir_info *d, const struct om_cache_entry *e,
    const struct om_cache_entry *add)
{
	size_t most = long_mode(d) ? d->cache_long : MERGE_MAX;

	return !e->guarded && e->noaccess == add->noaccess &&
	    add->npages + e->npages <= most;
}

/*
 * A run longer than MERGE_MIN coming into the cache takes in the used
 * runs that touch it, on either side, of any length and class, unless
 * guarded or in another state of access: runs cut for blocks (see
 * om_cache_get), freed, make the run whole again, and a heap of blocks of
 * many lengths, freed, becomes a few long runs that any length can be
 * cut from.  The bounds index finds them (lo and hi: its entries for the
 * joined run's ends, NULL if it has no room).  A run taken in has its
 * junk checked as it leaves its slot.  Fresh runs are left alone: they
 * are known to be zero.
 */
static void
merge_neighbours(struct dir_info *d, struct om_cache_entry *add,
    struct om_cache_bound **lop, struct om_cache_bound **hip)
{
	struct om_cache_bound *lo, *hi;
	struct om_cache_entry n;
	unsigned int k;
	int i;

	for (;;) {
		/* Each round may make two addresses, and a rebuild moves
		 * the entries. */
		*lop = *hip = NULL;
		if (bounds_room(d) != 0)
			return;
		*lop = lo = bound_at(d, add->p);
		*hip = hi = bound_at(d, run_end(add));
		/* The run before it, else the run after it. */
		i = bound_run(d, lo, 0, &k);
		if (i < 0 || !joinable(d, slot(d, k, (unsigned int)i), add))
			i = bound_run(d, hi, 1, &k);
		if (i < 0 || !joinable(d, slot(d, k, (unsigned int)i), add))
			return;
		n = take_out(d, k, (unsigned int)i);
		if (n.p < add->p) {
			add->p = n.p;
			add->junked = n.junked;
		}
		add->npages += n.npages;
	}
}

/* Whether the thread putting a run is one of d's own (uses d), not one
 * of another pool's freeing d's block. */
OM_INLINE int
put_by_own(const struct dir_info *d)
{
	return (OM_SELF_TID(om_self) & mopts.pool_mask) == d->index;
}

/*
 * A run of class k put by a thread of another pool (see om_cache_put_run):
 * the put evicts a quarter of the class to the depot once IDLE_PUTS of
 * them came in a row, times 2 to the number of times the pool's thread
 * missed after its pool gave runs away so (idle_missed), as long as the
 * pool has a thread.  A producer of 64 KiB buffers queued 64 deep to a
 * consumer on its CPU gave its runs away at every batch and took them
 * back from the depot or the kernel: 0.67 M blocks a second, 2,790 mmap
 * and 3,861 munmap calls in 0.3 s (scudo 3.4 M blocks); 3.8 M now, 20
 * and 41-45 calls.  larson, whose driver threads sleep in pthread_join while
 * the generations they start land on their pools, keeps its peak: a miss
 * by a thread other than the last one to miss starts the count over.
 */
static void
put_by_other(struct dir_info *d, unsigned int k)
{
	unsigned int shift = om_pool_ownerless(d) ? 0 : d->cache_idle_shift;

	if (++d->cache_idle > (IDLE_PUTS << shift)) {
		evict(d, k, quarter(d, k), 0);
		d->cache_idle_gave = 1;
	}
}

/*
 * Take pages back: junk them, cache them, or unmap what does not fit.
 * A pool whose runs come back only from threads of other pools
 * (IDLE_PUTS of them, and since then no run taken and none given back by
 * a thread of its own) has no thread left: threads come and go, and the
 * blocks of one that left are freed into its pool by the others.  What
 * it caches would wait for a thread that may never come while the pools
 * in use map new pages; so each further such put evicts a quarter of the
 * class to the depot, from which those pools take.  A thread freeing a
 * batch of its own blocks keeps them in its cache as before.  But a
 * producer whose consumer frees a queue of its buffers at a time is only
 * quiet meanwhile, and takes them again: once its misses have shown that
 * (put_by_other, idle_missed), it waits longer before it gives runs away,
 * and the runs the consumer frees stay apart, as the producer took them,
 * instead of joining their cached neighbours (runs of more than
 * MERGE_MIN pages do) into longer runs that fill class 0 and leave their
 * own class empty; a run whose class has no slot left goes to the depot,
 * where the producer's next miss finds it, instead of evicting a quarter
 * of the class, and its neighbours, to the kernel.
 */
void
om_cache_put_run(struct dir_info *d, void *p, size_t npages, int guarded)
{
	int k = class_of(d, npages);
	size_t datalen = (npages - (guarded ? 1 : 0)) << OM_PAGE_SHIFT;
	uint8_t junked = 0, noaccess = 0;
	struct om_cache_bound *lo = NULL, *hi = NULL;
	uint32_t at;
	int loop, own = put_by_own(d), apart;

	if (k < 0 || d->cache_room[k] == 0 || (k == 0 && npages >
	    d->cache_big_max)) {
		struct om_span s = { .p = (uintptr_t)p,
			.len = npages << OM_PAGE_SHIFT };

		if (d->cache_room[0] != 0)
			long_gone(d, npages);
		unmap_spans(d, &s, 1);
		return;
	}
	if (!d->extras && datalen >= OM_PAGE_SIZE) {
		/* Without extras the junk is level 1's. */
		page_junk(p);
		junked = 1;
	} else if (d->junk && datalen > 0) {
		om_junk_free(mopts.junk_validate_full ? 2 : d->junk, p,
		    datalen);
		junked = 1;
	}
	if (mopts.opt.freeunmap && datalen > 0 &&
	    om_os_protect(p, datalen, 0) == 0)
		noaccess = 1;
	/*
	 * Built whole at the end, and its address never taken: the
	 * functions that need one get a copy.  Stored to the stack in
	 * parts and copied from there into its slot in one piece, the
	 * entry's load cannot be served from those stores: it waits for
	 * every store before it to reach the cache, the junk just written
	 * into the run among them, which takes long where the run was
	 * last written on another CPU.
	 */
	struct om_cache_entry add = { .p = (uintptr_t)p,
		.npages = (uint32_t)npages,
		.guarded = (uint8_t)(guarded != 0), .junked = junked,
		.noaccess = noaccess };

	/* A run a get took whole lately, back again, is a malloc/free
	 * loop: left as it is, saving the loop the index's probes. */
	loop = untake(d, (uintptr_t)p);
	apart = !own && d->cache_idle_shift != 0;
	if (!guarded && !loop && !apart && (npages > MERGE_MIN ||
	    (uintptr_t)p == d->cache_shrunk)) {
		struct om_cache_entry m = add;

		merge_neighbours(d, &m, &lo, &hi);
		add = m;
		k = (int)run_class(add.npages);
	}
	if (!has_room(d, (unsigned int)k, add.npages)) {
		if (apart && k != 0 && d->cache_n[k] == d->cache_room[k] &&
		    !guarded && d->npending < OM_PENDING) {
			/* Offered to the depot by unlock(). */
			d->mapped -= (size_t)add.npages << OM_PAGE_SHIFT;
			pend(d, add.p, (size_t)add.npages << OM_PAGE_SHIFT,
			    &add);
			return;
		}
		make_room(d, (unsigned int)k, add.npages);
		if (d->cache_n[k] == d->cache_room[k] || (k == 0 &&
		    d->cache_big_pages + add.npages > big_max(d))) {
			/* Class 0 has nothing longer to give back for it,
			 * or the class no slot at all (<). */
			struct om_span s = { .p = add.p,
				.len = (size_t)add.npages << OM_PAGE_SHIFT };

			unmap_spans(d, &s, 1);
			return;
		}
	}
	at = add_entry(d, (unsigned int)k, add);
	if (lo != NULL) {
		/* make_room evicted, but the index was not rebuilt. */
		lo->npages[1] = hi->npages[0] = add.npages;
		lo->slot[1] = hi->slot[0] = at;
	} else if (!guarded && !loop) {
		struct om_cache_entry b = add;

		bounds_add(d, &b, at);
	}
	if (OM_UNLIKELY(++d->cache_puts == OM_CACHE_DECAY_PUTS))
		decay(d);
	if (own)
		d->cache_idle = 0;
	else
		put_by_other(d, (unsigned int)k);
}

/*
 * The front.  A malloc/free loop takes a run whole and puts it back, and
 * most of what that costs is the class's bookkeeping: remove_entry,
 * add_entry, the slots' counts.  So a run a get took whole, freed by a
 * thread of the pool, in a pool without extras or guard pages, to a
 * class with room for it, waits beside its class instead (cache_front),
 * junked.  A get of its length draws among it and the class's used runs
 * as om_cache_get_run would have, and the run it takes, if not the
 * front's, leaves its slot to the front's (om_cache_get_front).
 * Anything else first puts it into its class (settle), and sees the
 * cache as the put would have left it.  callgrind, a pair loop: 64 KiB
 * (its class otherwise empty) 677 instructions before, 533 now; 4 KiB
 * (four used runs, a batch's fresh ones) 672, 560; 16 KiB 673, 562.
 * Runs of more than 32 pages too, since: their class 0 holds runs of
 * many lengths, and in a loop often a reserve's fresh rest as well, so
 * its draw is front_drawn's and its room put_long's.  256 KiB 735,
 * 591; 1 MiB 754, 597 (64 KiB then 538, 4 KiB 565, for the tests that
 * tell the classes apart).
 *
 * put_front: the run p of npages, to a class with room, into the front
 * if it is a loop's: a put of this round that is not its last (decay
 * comes then), of a run taken whole, by a thread of the pool.  1 if it
 * is there now.
 */
OM_INLINE int
put_front(struct dir_info *d, void *p, size_t npages)
{
	int t;

	if (d->cache_puts + 1 < OM_CACHE_DECAY_PUTS &&
	    (t = taken_slot(d, (uintptr_t)p)) >= 0 && put_by_own(d)) {
		d->cache_taken[t] = 0;
		page_junk(p);
		d->cache_front = (uintptr_t)p;
		d->cache_front_npages = (uint32_t)npages;
		d->cache_puts++;
		d->cache_idle = 0;
		return 1;
	}
	return 0;
}

/*
 * A put of more than 32 pages, with the front empty and allowed: room in
 * class 0 as the put would find it is a free slot and its pages within
 * big_max() with the run (up to cache_long pages), so that make_room,
 * which every put there calls, would evict nothing, nor would the put
 * unmap the run.  That is room_for(d, 0, npages) > 0, tested without its
 * division: calling it made a 256 KiB pair 11 instructions longer (602)
 * and 0.93x as fast.  Out of line: its tests would make every put save
 * registers.
 */
static OM_NOINLINE void
put_long(struct dir_info *d, void *p, size_t npages)
{
	if (npages <= d->cache_long && npages <= d->cache_big_max &&
	    d->cache_n[0] < d->cache_room[0] &&
	    d->cache_big_pages + npages <= big_max(d) &&
	    put_front(d, p, npages))
		return;
	om_cache_put_run(d, p, npages, 0);
}

void
om_cache_put(struct dir_info *d, void *p, size_t npages, int guarded)
{
	if (d->cache_front == 0 && !guarded && !d->extras &&
	    !mopts.opt.freeunmap && mopts.guard == 0) {
		if (npages > OM_CACHE_SMALL) {
			put_long(d, p, npages);
			return;
		}
		if (has_room(d, (unsigned int)npages, npages) &&
		    put_front(d, p, npages))
			return;
	}
	settle(d);
	om_cache_put_run(d, p, npages, guarded);
}

/*
 * A pool without threads gives its cached runs to the depot, where the
 * pools in use take them (those it turns away are unmapped), as many as
 * one unlock() hands on.  1 if runs are left for another round.
 */
int
om_cache_give_back(struct dir_info *d)
{
	unsigned int k;

	d->cache_idle_shift = 0;
	d->cache_idle_gave = 0;
	settle(d);
	for (k = 0; k < OM_CACHE_CLASSES; k++)
		while (d->cache_n[k] > 0) {
			if (d->npending + EVICT_BATCH > OM_PENDING)
				return 1;
			evict(d, k, d->cache_n[k], 0);
		}
	return 0;
}

/* Give every cached page back to the kernel; returns the pages freed. */
size_t
om_cache_trim(struct dir_info *d)
{
	struct om_span batch[64];
	struct om_cache_entry e;
	unsigned int n = 0, k;
	size_t pages;

	settle(d);
	pages = d->cache_pages;
	for (k = 0; k < OM_CACHE_CLASSES; k++)
		while (d->cache_n[k] > 0) {
			if (n == sizeof(batch) / sizeof(batch[0])) {
				unmap_spans(d, batch, n);
				n = 0;
			}
			e = take_out(d, k, d->cache_n[k] - 1u);
			batch[n].p = e.p;
			batch[n].len = (size_t)e.npages << OM_PAGE_SHIFT;
			n++;
		}
	if (n > 0)
		unmap_spans(d, batch, n);
	/* The reserve goes too, and the next one starts small again. */
	if (d->reserve_pages > 0) {
		struct om_span s = { .p = d->reserve,
			.len = d->reserve_pages << OM_PAGE_SHIFT };

		pages += d->reserve_pages;
		unmap_spans(d, &s, 1);
		d->reserve = 0;
		d->reserve_pages = 0;
	}
	d->reserve_next = RESERVE_MIN;
	long_reset(d);
	return pages;
}
