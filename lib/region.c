/*
 * region.c - page regions and the hash table that finds every page we own.
 *
 * The table maps a page address to a region (its requested size) or to a
 * chunk page (its chunk_info).  Open addressing with linear probing and a
 * multiplicative hash; it doubles when it is half full, and
 * deletion shifts entries back (no tombstones), counting the moves.
 *
 * Regions larger than a page start on a page boundary; sizes between half
 * a page and a page are shifted towards the page end, so that running off
 * the end leaves the page.  The offset of the user pointer is kept in the
 * low bits of the key.  All functions here: pool locked.
 */
#include "internal.h"

#define REALLOC_INPLACE_MIN ((size_t)16 << OM_PAGE_SHIFT)
#define REALLOC_REMAP_MIN ((size_t)128 << OM_PAGE_SHIFT)

static void
table_set(struct dir_info *d, struct region_info *r, size_t total)
{
	d->r = r;
	d->regions_total = total;
	d->regions_free = total;
	d->regions_shift = 64 - (unsigned int)__builtin_ctzll(total);
}

static int
table_alloc(struct dir_info *d, size_t total)
{
	size_t len = OM_PAGEROUND(total * sizeof(struct region_info));
	struct region_info *r = om_os_map(len, d->conceal);

	if (r == NULL)
		return -1;
	table_set(d, r, total);
	d->mapped += len;
	return 0;
}

/* The first table: in the pool's pages, after its struct (zeroed). */
static struct region_info *
first_table(struct dir_info *d)
{
	return (struct region_info *)(void *)((char *)d +
	    OM_POOL_TABLE_OFFSET);
}

void
om_region_table_init(struct dir_info *d)
{
	table_set(d, first_table(d), OM_HASH_INITIAL);
}

uint16_t *om_hint_top[OM_HINT_TOP];

/* Record that d owns page, a chunk page of bucket1 - 1 if bucket1 is not
 * 0; a failure to map a leaf only loses the hint. */
static void
hint_set(struct dir_info *d, uintptr_t page, unsigned int bucket1)
{
	uintptr_t top = page >> 30;
	uint16_t *leaf, *expect = NULL;

	if (top >= OM_HINT_TOP)
		return;
	leaf = __atomic_load_n(&om_hint_top[top], __ATOMIC_ACQUIRE);
	if (leaf == NULL) {
		leaf = om_os_map(OM_HINT_LEAF * sizeof(uint16_t), 0);
		if (leaf == NULL)
			return;
		if (!__atomic_compare_exchange_n(&om_hint_top[top], &expect,
		    leaf, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
			om_os_unmap(leaf, OM_HINT_LEAF * sizeof(uint16_t));
			leaf = expect;
		}
	}
	__atomic_store_n(&leaf[(page >> OM_PAGE_SHIFT) & (OM_HINT_LEAF - 1)],
	    (uint16_t)((d->index + 1) | bucket1 << OM_HINT_BUCKET_SHIFT),
	    __ATOMIC_RELAXED);
}

static struct region_info *
place(struct dir_info *d, uintptr_t key, uintptr_t size, void *f)
{
	size_t mask = d->regions_total - 1;
	size_t i = om_region_hash(d, key & ~(uintptr_t)OM_PAGE_MASK);

	while (d->r[i].p != 0) {
		d->insert_collisions++;
		i = (i + 1) & mask;
	}
	d->r[i].p = key;
	d->r[i].size = size;
	d->r[i].f = f;
	d->regions_free--;
	return &d->r[i];
}

/*
 * Double the table; the first one, in the pool's pages, grows fourfold
 * at once: a pool that outgrows it owns many pages and goes on to more,
 * and a step less is a mapping and an unmapping less.
 */
static int
grow(struct dir_info *d)
{
	struct region_info *old = d->r;
	size_t oldtotal = d->regions_total, i, oldlen;

	/* On failure table_alloc leaves the table as it was. */
	if (table_alloc(d, oldtotal * (old == first_table(d) ? 4 : 2)) != 0)
		return -1;
	for (i = 0; i < oldtotal; i++)
		if (old[i].p != 0)
			place(d, old[i].p, old[i].size, old[i].f);
	/* The first table stays where it is, in the pool's pages. */
	if (old != first_table(d)) {
		oldlen = OM_PAGEROUND(oldtotal * sizeof(struct region_info));
		om_os_unmap(old, oldlen);
		d->mapped -= oldlen;
	}
	return 0;
}

/* Register a page; 0, or -1 when the table could not grow.  Inlined
 * into this file's allocation path; chunk.c calls the function. */
OM_INLINE int
table_insert(struct dir_info *d, uintptr_t key, uintptr_t size, void *f)
{
	/* At most half full: linear probing stays short (about 1.5 probes
	 * for a hit), and the table is small next to what it maps. */
	if (d->regions_free * 2 < d->regions_total && grow(d) != 0)
		return -1;
	d->inserts++;
	place(d, key, size, f);
	hint_set(d, key & ~(uintptr_t)OM_PAGE_MASK, (key & OM_REGION_CHUNK) ?
	    ((const struct chunk_info *)size)->bucket + 1u : 0);
	return 0;
}

int
om_region_insert(struct dir_info *d, uintptr_t key, uintptr_t size, void *f)
{
	return table_insert(d, key, size, f);
}

struct region_info *
om_region_find(struct dir_info *d, const void *p)
{
	return om_region_lookup(d, p);
}

/* Remove r, shifting later entries of its probe run back into the gap.
 * Inlined into this file's free path, as table_insert. */
OM_INLINE void
table_delete(struct dir_info *d, struct region_info *r)
{
	size_t mask = d->regions_total - 1;
	size_t i = (size_t)(r - d->r), j, k;

	d->deletes++;
	d->regions_free++;
	OM_ASSERT(d, d->regions_free <= d->regions_total);
	for (;;) {
		d->r[i].p = 0;
		d->r[i].size = 0;
		d->r[i].f = NULL;
		j = i;
		for (;;) {
			j = (j + 1) & mask;
			if (d->r[j].p == 0)
				return;
			k = om_region_hash(d, OM_REGION_PAGE(&d->r[j]));
			/* The entry may stay if its home lies in (i, j]. */
			if (i <= j ? (i < k && k <= j) : (i < k || k <= j))
				continue;
			d->r[i] = d->r[j];
			d->delete_moves++;
			i = j;
			break;
		}
	}
}

void
om_region_delete(struct dir_info *d, struct region_info *r)
{
	table_delete(d, r);
}

/* The pages a region of sz bytes at offset off spans: at least one, so that
 * an aligned zero-size request is a real page. */
static size_t
span(size_t off, size_t sz)
{
	size_t len = OM_PAGEROUND(off + sz);

	return len == 0 ? OM_PAGE_SIZE : len;
}

#define REGION_LEN(r) span(OM_REGION_OFFSET(r), (r)->size)

/* The offset of the user pointer in the first page of a region. */
static size_t
shift_of(size_t sz, size_t align)
{
	if (sz == 0 || sz >= OM_PAGE_SIZE || align > OM_PAGE_SIZE)
		return 0;
	if (align < OM_MINSIZE)
		align = OM_MINSIZE;
	return (OM_PAGE_SIZE - sz) & ~(align - 1);
}

static void
fill_canary(const struct region_info *r)
{
	char *user = (char *)OM_REGION_PAGE(r) + OM_REGION_OFFSET(r);
	size_t end = REGION_LEN(r);

	om_fill(user + r->size, mopts.canary_byte,
	    end - OM_REGION_OFFSET(r) - r->size);
}

static void
check_canary(struct dir_info *d, const struct region_info *r)
{
	const char *user = (char *)OM_REGION_PAGE(r) + OM_REGION_OFFSET(r);
	size_t end = REGION_LEN(r);

	if (!om_bytes_are(user + r->size, mopts.canary_byte,
	    end - OM_REGION_OFFSET(r) - r->size))
		om_fatal(d, "region canary corrupted", user);
}

/* Pages aligned to align (> a page): over-map, then trim both ends. */
static char *
map_aligned(struct dir_info *d, size_t len, size_t align)
{
	size_t total;
	char *p, *q;

	if (om_add(len, align, &total))
		return NULL;
	p = om_os_map(total, d->conceal);
	if (p == NULL)
		return NULL;
	q = (char *)(((uintptr_t)p + align - 1) & ~(uintptr_t)(align - 1));
	if (q != p)
		om_os_unmap(p, (size_t)(q - p));
	if ((size_t)(q - p) + len < total)
		om_os_unmap(q + len, total - (size_t)(q - p) - len);
	return q;
}

/*
 * om_region_alloc's short path: a block of a page or more, neither
 * aligned nor zeroed nor grown, without guard pages, in a pool without
 * extras (see pool_setup: junk at level 1, no canaries, not concealed).
 * It does what the long path does then, without testing each option.
 */
static void *
alloc_plain(struct dir_info *d, size_t sz, void *f)
{
	size_t len = OM_PAGEROUND(sz);	/* sz <= PTRDIFF_MAX: no overflow */
	int zeroed;
	char *p = om_cache_get(d, len >> OM_PAGE_SHIFT, 0, &zeroed);

	if (p == NULL)
		return NULL;
	if (table_insert(d, (uintptr_t)p, sz, f) != 0) {
		om_cache_put(d, p, len >> OM_PAGE_SHIFT, 0);
		return NULL;
	}
	d->inuse += len;
	return p;
}

/*
 * A page region of sz bytes (sz <= PTRDIFF_MAX, checked by the caller),
 * aligned to align.  flags: OM_ALLOC_ZERO, the caller wants zeroed
 * memory; OM_ALLOC_GROW, a block moves to grow (om_cache_get_to_grow,
 * for blocks that start on a page and so can grow in place later), and
 * OM_ALLOC_STEP, by a small step, as a buffer being built up
 * (om_cache_grow_flags).
 */
void *
om_region_alloc(struct dir_info *d, size_t sz, size_t align, int flags,
    void *f)
{
	size_t off, len, datalen;
	size_t guard = mopts.guard;
	int zeroed = 0;
	char *p;

	if (OM_LIKELY((align | (size_t)flags) == 0 && sz >= OM_PAGE_SIZE &&
	    !d->extras && guard == 0))
		return alloc_plain(d, sz, f);
	off = shift_of(sz, align);

	if (om_add(sz, off, &datalen) || om_add(datalen, OM_PAGE_MASK, &len))
		return NULL;
	datalen = span(off, sz);
	if (om_add(datalen, guard, &len))
		return NULL;
	if (align > OM_PAGE_SIZE) {
		p = om_cache_get_aligned(d, len >> OM_PAGE_SHIFT, guard != 0,
		    align, &zeroed);
		if (p == NULL && (p = map_aligned(d, len, align)) != NULL) {
			zeroed = 1;
			d->mapped += len;
		}
	} else if (!(flags & OM_ALLOC_GROW) || off != 0 || guard || (p =
	    om_cache_get_to_grow(d, len >> OM_PAGE_SHIFT,
	    flags & OM_ALLOC_STEP, &zeroed)) == NULL)
		p = om_cache_get(d, len >> OM_PAGE_SHIFT, guard != 0, &zeroed);
	if (p == NULL)
		return NULL;
	/* Fresh pages have no guard yet; cached ones kept theirs. */
	if (guard && zeroed && om_os_guard(p + datalen, guard) != 0) {
		om_os_unmap(p, len);
		d->mapped -= len;
		return NULL;
	}
	if (table_insert(d, (uintptr_t)p | off, sz, f) != 0) {
		om_cache_put(d, p, len >> OM_PAGE_SHIFT, guard != 0);
		return NULL;
	}
	/* Two statements, not one paired update: inuse was just stored by
	 * other calls, and a 16-byte load of the pair would wait for it. */
	d->inuse += datalen;
	if (guard)
		d->guarded += guard;
	if ((flags & OM_ALLOC_ZERO) && !zeroed)
		memset(p + off, 0, sz);
	else if (!(flags & OM_ALLOC_ZERO) && d->junk >= 2)
		memset(p + off, OM_JUNK_NEW, sz);
	if (mopts.opt.chunk_canaries) {
		/* The entry just inserted, without probing the table again. */
		struct region_info r = { .p = (uintptr_t)p | off, .size = sz };

		fill_canary(&r);
	}
	return p + off;
}

size_t
om_region_usable(struct region_info *r)
{
	if (mopts.opt.chunk_canaries)
		return r->size;
	return REGION_LEN(r) - OM_REGION_OFFSET(r);
}

void
om_region_free(struct dir_info *d, struct region_info *r, void *p, int clear,
    size_t clearsz)
{
	char *page = (char *)OM_REGION_PAGE(r);
	size_t datalen = REGION_LEN(r);
	size_t guard = mopts.guard;

	om_region_check(d, r, p);
	/* Canaries and concealing are among the pool's extras. */
	if (OM_UNLIKELY(d->extras | clear)) {
		if (mopts.opt.chunk_canaries)
			check_canary(d, r);
		if (clear && clearsz > 0)
			memset(p, 0, clearsz);
		if (d->conceal) {
			memset(p, 0, r->size);
			__asm__ __volatile__("" : : "r"(p) : "memory");
		}
	}
	table_delete(d, r);
	d->inuse -= datalen;
	if (guard)
		d->guarded -= guard;
	om_cache_put(d, page, (datalen + guard) >> OM_PAGE_SHIFT, guard != 0);
}

/* The entry of a region the kernel moved to page: taken out and put back
 * under its new key.  The slot it leaves keeps the table within its load
 * (see om_region_insert), so this never grows it. */
static struct region_info *
rekey(struct dir_info *d, struct region_info *r, uintptr_t page)
{
	uintptr_t key = page | (r->p & OM_PAGE_MASK), size = r->size;
	void *f = r->f;

	om_region_delete(d, r);
	d->inserts++;
	r = place(d, key, size, f);
	hint_set(d, page, 0);
	return r;
}

/*
 * A guarded region of oldlen bytes at page, from 64 KiB, shrunk to newlen
 * in place: a guard where its data now ends, and the pages behind that,
 * up to and with the old guard, cached as a guarded run (unmapped when
 * the old guard is all there is).  0, or -1 if the kernel refused the new
 * guard (nothing done).
 */
static int
shrink_guarded(struct dir_info *d, char *page, size_t oldlen, size_t newlen)
{
	size_t guard = mopts.guard, tail = oldlen - newlen;

	if (om_os_guard(page + newlen, guard) != 0)
		return -1;
	if (tail > guard)
		om_cache_put(d, page + newlen + guard, tail >> OM_PAGE_SHIFT,
		    1);
	else {
		om_os_unmap(page + newlen + guard, tail);
		d->mapped -= tail;
	}
	return 0;
}

/*
 * A guarded region of oldlen bytes at page, from 64 KiB, grown to newlen
 * by the kernel, as unguarded ones are: in place over free addresses
 * behind it, else moved (page tables, not bytes; the old range is then
 * unmapped, so a stale pointer to it faults).  The guard must be a marker
 * in the region's mapping (om_os_guard), which comes along; a guard page
 * mapped on its own makes the kernel refuse.  Then a guard goes where the
 * data now ends and the old one comes off.  Where it is, or NULL (nothing
 * done).  Once the block has moved its old address is gone, so a guard
 * the kernel refuses then is fatal, as a refused guard is in OpenBSD.
 */
static char *
grow_guarded(struct dir_info *d, char *page, size_t oldlen, size_t newlen)
{
	size_t guard = mopts.guard;
	char *q;

	q = om_os_remap(page, oldlen + guard, newlen + guard, NULL);
	if (q == NULL)
		return NULL;
	if (om_os_guard(q + newlen, guard) != 0 ||
	    om_os_unguard(q + oldlen, guard) != 0) {
		if (q != page)
			om_fatal(d, "guard page failed", q);
		om_os_unmap(page + oldlen + guard, newlen - oldlen);
		return NULL;
	}
	d->mapped += newlen - oldlen;
	return q;
}

/*
 * A region shifted towards the end of its page (more than half a page and
 * less than one) resized to newsz, still in that range, whose shift
 * changes: moved to newsz's shift in the same page, so that it still
 * ends where the page does, as OpenBSD's realloc does, rather than into
 * a page of its own.  The pointer changes, but no page is taken or given
 * back and the copy stays within one page: a buffer grown a few bytes at
 * a time through these sizes took a new page at every step.  The key
 * changes in its offset bits only, which the hash does not read.  What
 * moves is every byte the program may have written, malloc_usable_size's
 * (the block up to the page's end), not only the size it asked for.
 */
static void *
move_in_page(struct dir_info *d, struct region_info *r, size_t newsz)
{
	char *page = (char *)OM_REGION_PAGE(r);
	char *p = page + OM_REGION_OFFSET(r);
	char *q = page + shift_of(newsz, OM_MINSIZE);
	size_t old = om_region_usable(r);

	if (mopts.opt.chunk_canaries)
		check_canary(d, r);
	d->cheap_realloc_tries++;
	memmove(q, p, newsz < old ? newsz : old);
	if (d->junk >= 2 && newsz > old)
		memset(q + old, OM_JUNK_NEW, newsz - old);
	r->p = (uintptr_t)q;
	r->size = newsz;
	if (mopts.opt.chunk_canaries)
		fill_canary(r);
	d->cheap_reallocs++;
	return q;
}

/*
 * Whether a region of oldlen bytes at page, from 64 KiB, that cannot grow
 * into cached pages behind it grows to newlen by the kernel (onto the
 * front of a cached run, or by mremap), else by a copy, into cached pages,
 * its own going back to the cache.  From 512 KiB it does.  Below, a buffer
 * being built up does (om_cache_building), which a copy at every step
 * would cost the square of its length, and the block that grew last, by
 * more, if no cached run could take it; any other block is copied.  Moved
 * by the kernel, a block takes a cached run or fresh pages and gives back
 * none: 100 blocks resized at random up to 100 KiB (bench/realloc
 * grow=random max=100k live=100), moved so, drained the cache of long
 * runs, which were mapped again and faulted in (66,000 faults in 100,000
 * calls, 6.4 us a call against glibc's 1.1; a copy of such a block costs
 * less than the system call and the faults).  And a buffer doubled as it
 * was filled and cut to fit (grow=fit), moved onto a cached run's front,
 * dropped the run's pages under it and then lay across two mappings,
 * which mremap refuses to grow (EFAULT): its next doubling was copied
 * into fresh pages (267,000 faults for 20,000 buffers of up to 200 KB,
 * 6,400 when copied into cached runs).
 */
static int
by_kernel(struct dir_info *d, uintptr_t page, size_t oldlen, size_t newlen)
{
	if (oldlen >= REALLOC_REMAP_MIN || om_cache_building(d, page, oldlen,
	    newlen))
		return 1;
	return om_cache_grew_last(d, page) &&
	    !om_cache_has_run_to_grow(d, newlen >> OM_PAGE_SHIFT);
}

/*
 * Resize a region without copying it when possible: the same pages, fewer
 * pages (the tail goes to the cache), or more pages: the front of a
 * cached run that starts right behind it, or else, from 64 KiB, pages
 * mapped right behind it or, when those are taken, the block moved by the
 * kernel (mremap moves page tables, not bytes, and unmaps the old range,
 * so a stale pointer to it faults).  The cached run comes first at any
 * size: a buffer built up again and again then grows through the pages
 * it had last time, where mremap would move it away from them, leaving
 * them cached, with a system call for every page it grows by.  Below
 * 512 KiB most blocks move by copying instead (by_kernel).  Returns the
 * block, p or where it moved, when done, NULL when the caller must move
 * it by copying.  Below 64 KiB a region grows only into cached
 * pages and never shrinks: mapping would cost a system call and page
 * faults where cached pages cost a copy, and shrinking would leave a tail
 * of a length nobody asked for in the cache, where the freed block's own
 * length is asked for again (phong-like programs, which realloc blocks up
 * and down, otherwise see a class emptied and another overflowing).
 * With guard pages (G) a region from 64 KiB shrinks in place and grows
 * by the kernel (shrink_guarded, grow_guarded), never into cached pages,
 * since its guard lies between; a smaller one moves by copying, as
 * OpenBSD moves every guarded region that grows.  A region shifted
 * towards its page's end that needs another shift moves within its page
 * (move_in_page).
 */
static OM_NOINLINE void *
resize(struct dir_info *d, struct region_info *r, void *p, size_t newsz)
{
	char *page = (char *)OM_REGION_PAGE(r), *q;
	size_t off = OM_REGION_OFFSET(r);
	size_t oldlen = REGION_LEN(r), newlen;

	if (mopts.opt.realloc_move || d->conceal || newsz <= OM_MAXCHUNK)
		return NULL;
	if (off != 0 || newsz < OM_PAGE_SIZE) {
		/* A shifted region stays where it is if its shift does not
		 * change, else moves within its page. */
		if (newsz >= OM_PAGE_SIZE)
			return NULL;
		if (shift_of(newsz, OM_MINSIZE) != off)
			return off != 0 ? move_in_page(d, r, newsz) : NULL;
		newlen = oldlen;
	} else
		newlen = OM_PAGEROUND(newsz);
	if (mopts.opt.chunk_canaries)
		check_canary(d, r);

	if (newlen < oldlen) {
		if (oldlen < REALLOC_INPLACE_MIN)
			return NULL;
		d->cheap_realloc_tries++;
		om_cache_forget(d, (uintptr_t)page);
		if (!mopts.guard)
			om_cache_put(d, page + newlen,
			    (oldlen - newlen) >> OM_PAGE_SHIFT, 0);
		else if (shrink_guarded(d, page, oldlen, newlen) != 0)
			return NULL;
		d->inuse -= oldlen - newlen;
		d->cheap_reallocs++;
	} else if (newlen > oldlen) {
		/* Junk (J) goes after the bytes the block had to offer. */
		size_t old = om_region_usable(r);

		if (mopts.guard && oldlen < REALLOC_INPLACE_MIN)
			return NULL;
		d->cheap_realloc_tries++;
		/* Guarded, by the kernel; else into the cached pages behind
		 * it; from 64 KiB, as by_kernel decides, onto the front of a
		 * cached run, else by the kernel. */
		if (mopts.guard) {
			if ((q = grow_guarded(d, page, oldlen, newlen)) == NULL)
				return NULL;
		} else if (om_cache_take_at(d, (uintptr_t)page + oldlen,
		    (newlen - oldlen) >> OM_PAGE_SHIFT))
			q = page;
		else if (oldlen < REALLOC_INPLACE_MIN ||
		    !by_kernel(d, (uintptr_t)page, oldlen, newlen))
			return NULL;
		else if ((q = om_cache_move_to_grow(d, page, oldlen >>
		    OM_PAGE_SHIFT, newlen >> OM_PAGE_SHIFT)) == NULL) {
			q = om_os_remap(page, oldlen, newlen, NULL);
			if (q == NULL)
				return NULL;
			d->mapped += newlen - oldlen;
			om_cache_grown_to(d, newlen >> OM_PAGE_SHIFT);
		}
		om_cache_grew(d, (uintptr_t)page, oldlen >> OM_PAGE_SHIFT,
		    (uintptr_t)q, newlen >> OM_PAGE_SHIFT);
		if (q != page) {
			r = rekey(d, r, (uintptr_t)q);
			p = page = q;
		}
		d->inuse += newlen - oldlen;
		d->cheap_reallocs++;
		if (d->junk >= 2 && newsz > old)
			memset(page + off + old, OM_JUNK_NEW, newsz - old);
	}
	r->size = newsz;
	if (mopts.opt.chunk_canaries)
		fill_canary(r);
	return p;
}

/*
 * The common case kept light, without the frame resize needs: a region
 * of whole pages that keeps its page count (a buffer grown or cut by a
 * little) only takes its new size.  realloc calls this for every region
 * it is given.
 */
void *
om_region_realloc(struct dir_info *d, struct region_info *r, void *p,
    size_t newsz)
{
	om_region_check(d, r, p);
	if (OM_LIKELY(OM_REGION_OFFSET(r) == 0 && newsz >= OM_PAGE_SIZE &&
	    OM_PAGEROUND(newsz) == OM_PAGEROUND(r->size) &&
	    !mopts.opt.realloc_move && !mopts.opt.chunk_canaries &&
	    !d->conceal)) {
		r->size = newsz;
		return p;
	}
	return resize(d, r, p, newsz);
}
