/*
 * chunk.c - sizes up to half a page: slots in pages of one size class.
 *
 * A chunk page holds `total` slots of one bucket's size; its metadata, a
 * struct chunk_info, lives out of line in pages of its own and is found
 * through the region hash table (the page's entry points at it).  Pages
 * with free slots sit on one of OM_CHUNK_LISTS lists per bucket.
 *
 * Fast path, malloc: pick a random list, a random start slot, take the
 * next free bit (ctz), check the junk, done.  Fast path, free: one hash
 * probe (in api.c), an index check by reciprocal multiplication, the
 * free/delayed bits for double frees, junk, and a swap into a random slot
 * of the delayed-free ring; the chunk pushed out of the ring has its junk
 * validated and is released.
 *
 * Invariants: a slot is in exactly one of three states - allocated (bits
 * and delayed clear), delayed (delayed set), free (bits set).  A page is on
 * a list iff it has a free slot.  All functions here: pool locked.
 */
#include "internal.h"

#include <sys/mman.h>

const uint16_t om_bucket_size[OM_NBUCKETS] = {
	16,						/* malloc(0) */
	16, 32, 48, 64, 80, 96, 112, 128,
	144, 160, 176, 192, 208, 224, 240, 256,
	272, 288, 304, 336, 368, 400, 448, 512,
	576, 672, 816, 1024, 1360, 2048,
};
_Static_assert(sizeof(om_bucket_size) / sizeof(om_bucket_size[0]) ==
    OM_NBUCKETS, "bucket table");
_Static_assert(OM_CHUNK_LISTS == 4, "om_chunk_alloc takes 2 bits of list");

static size_t
sizes_offset(void)
{
	return (sizeof(struct chunk_info) + 15) & ~(size_t)15;
}

static size_t
callers_offset(unsigned int total)
{
	size_t off = sizes_offset();

	/* Requested sizes: for the canaries (C) and the leak report (D). */
	if (mopts.opt.chunk_canaries || mopts.opt.dump)
		off += ((size_t)total * sizeof(uint16_t) + 15) & ~(size_t)15;
	return off;
}

OM_INLINE uint16_t *
reqsizes(struct chunk_info *info)
{
	return (uint16_t *)((char *)info + sizes_offset());
}

OM_INLINE void **
callers(struct chunk_info *info)
{
	return (void **)((char *)info + callers_offset(info->total));
}

/*
 * The level-1 junk words of a block of words words: word 0, and a word of
 * each later quarter, loc words into it (modulo its length), as OpenBSD
 * places its four at a random offset each process: a program that writes
 * after free cannot know which words are checked.  Byte offsets.
 */
static void
junk_words(uint16_t out[4], unsigned int words, unsigned int loc)
{
	unsigned int i, lo, hi;

	out[0] = 0;
	for (i = 1; i < 4; i++) {
		lo = i * words / 4;
		hi = (i + 1) * words / 4;
		out[i] = (uint16_t)((lo + (hi > lo ? loc % (hi - lo) : 0)) * 8);
	}
}

/* Fill the size tables of the read-only page (before it is sealed). */
void
om_chunk_init_sizes(void)
{
	unsigned int b, i;
	uint16_t loc;

	om_random_buf(&loc, sizeof(loc));
	junk_words(mopts.page_junk, OM_PAGE_SIZE / 8, loc);
	for (i = 0; i < 4; i++)
		mopts.page_junk[i] /= 8;

	for (b = 0; b < OM_NBUCKETS; b++) {
		unsigned int size = om_bucket_size[b];
		unsigned int total = (unsigned int)(OM_PAGE_SIZE / size);
		size_t rec = callers_offset(total);

		if (mopts.opt.dump)
			rec += total * sizeof(void *);
		mopts.bucket_total[b] = (uint16_t)total;
		mopts.bucket_recip[b] =
		    (uint32_t)((((uint64_t)1 << 32) + size - 1) / size);
		mopts.info_size[b] = (uint16_t)((rec + 15) & ~(size_t)15);
		junk_words(mopts.junk_off[b], size / 8, loc);
	}
	mopts.size_bucket[0] = 0;
	for (i = 1, b = 1; i <= OM_MAXCHUNK / OM_MINSIZE; i++) {
		while (om_bucket_size[b] < i * OM_MINSIZE)
			b++;
		mopts.size_bucket[i] = (uint8_t)b;
	}
	mopts.canary_byte = (uint8_t)(mopts.canary >> 24) | 1;
}

OM_INLINE void
check_info(struct dir_info *d, struct chunk_info *info)
{
	if (OM_UNLIKELY(info->canary !=
	    (uint32_t)(mopts.canary ^ (uintptr_t)info)))
		om_fatal(d, "chunk info corrupted", (void *)info->page);
}

/*
 * The chunk_info a region-table entry points at, checked both ways: its
 * canary must hold and it must describe the entry's page, so that a
 * corrupted table entry or record is caught before it is trusted.
 */
static struct chunk_info *
entry_info(struct dir_info *d, const struct region_info *r)
{
	struct chunk_info *info = om_region_chunk(r);

	check_info(d, info);
	if (OM_UNLIKELY(info->page != OM_REGION_PAGE(r)))
		om_fatal(d, "region table corrupted",
		    (void *)OM_REGION_PAGE(r));
	return info;
}

/* A freed chunk's four junk words, level 1's check: all a pool without
 * extras makes. */
OM_INLINE void
check_sparse_junk(struct dir_info *d, void *p, unsigned int bucket)
{
	if (OM_UNLIKELY(!om_junk_chunk_ok(p, bucket)))
		om_fatal(d, "write after free", p);
}

/* A freed chunk's junk, checked as it is reused or leaves the ring: in
 * full under J2 and F, else its four junk words. */
OM_INLINE void
check_junk(struct dir_info *d, void *p, unsigned int bucket, size_t size)
{
	if (OM_UNLIKELY(mopts.junk_validate_full))
		om_junk_validate(d, 1, p, size);
	else
		check_sparse_junk(d, p, bucket);
}

/* The slot that holds byte off of info's page. */
OM_INLINE uint32_t
slot_of(const struct chunk_info *info, uint32_t off)
{
	return (uint32_t)(((uint64_t)off * info->recip) >> 32);
}

/* The slot of p in its page, or fatal if p is not a slot start. */
unsigned int
om_chunk_index(struct dir_info *d, struct chunk_info *info, const void *p)
{
	uint32_t off = (uint32_t)((uintptr_t)p - info->page);
	uint32_t slot = slot_of(info, off);

	if (OM_UNLIKELY(slot * info->size != off || slot >= info->total))
		om_fatal(d, "modified chunk-pointer", p);
	return slot;
}

/*
 * A chunk_info record for bucket: a spare one, else carved from the pool's
 * current batch of records pages, which all buckets share (a page per
 * bucket would keep up to 22 pages per pool resident for a few records
 * each).  A batch is one page at first and doubles with each batch up to
 * 16 pages, so a pool with many chunk pages maps their records a few
 * dozen at a time rather than a page per call (under D, whose records
 * hold the callers, that was a call per chunk page).  Pages of a batch
 * not yet carved are never touched and cost no memory.
 */
#define INFO_SHIFT_MAX 4		/* batches of at most 16 pages */

static struct chunk_info *
alloc_info(struct dir_info *d, unsigned int bucket)
{
	struct chunk_info *info = d->info_free[bucket];
	size_t rec, len;
	char *q;

	if (info != NULL) {
		d->info_free[bucket] = info->next;
		return info;
	}
	rec = mopts.info_size[bucket];
	if (rec > d->info_left) {
		size_t need = OM_PAGEROUND(rec);

		len = (size_t)OM_PAGE_SIZE << d->info_shift;
		if (len < need)
			len = need;
		/* Short of memory, a batch may fail where a page would not. */
		if ((q = om_os_map(len, d->conceal)) == NULL && len > need)
			q = om_os_map(len = need, d->conceal);
		if (q == NULL)
			return NULL;
		d->mapped += len;
		d->info_next = q;
		d->info_left = len;
		if (d->info_shift < INFO_SHIFT_MAX)
			d->info_shift++;
	}
	info = (struct chunk_info *)(void *)d->info_next;
	d->info_next += rec;
	d->info_left -= rec;
	return info;
}

/*
 * The back link of n, the page after one that enters or leaves a list, or
 * the pool's sink when there is none: a select, not a branch, since which
 * way it goes is as random as the list a page is put on.
 */
OM_INLINE struct chunk_info ***
back_link(struct dir_info *d, struct chunk_info *n)
{
	return n != NULL ? &n->pprev : &d->list_sink;
}

static void
list_push(struct dir_info *d, struct chunk_info *info)
{
	unsigned int l = om_rbyte(&d->rng) & (OM_CHUNK_LISTS - 1);
	struct chunk_info **head = &d->chunk_dir[info->bucket][l];
	struct chunk_info *n = *head;

	info->list = (uint16_t)l;
	info->next = n;
	info->pprev = head;
	*back_link(d, n) = &info->next;
	*head = info;
	d->chunk_lists[info->bucket] |= (uint8_t)(1u << l);
	info->onlist = 1;
	d->chunk_pages_avail[info->bucket]++;
}

static void
list_remove(struct dir_info *d, struct chunk_info *info)
{
	unsigned int b = info->bucket;
	struct chunk_info *n = info->next;
	uint8_t empty;

	*info->pprev = n;
	*back_link(d, n) = info->pprev;
	/* The list's bit goes if that emptied it. */
	empty = (uint8_t)-(d->chunk_dir[b][info->list] == NULL);
	d->chunk_lists[b] &= (uint8_t)~((1u << info->list) & empty);
	info->onlist = 0;
	d->chunk_pages_avail[b]--;
}

/* A new chunk page for bucket, on a random list; NULL without memory. */
static OM_NOINLINE struct chunk_info *
make_chunks(struct dir_info *d, unsigned int bucket)
{
	struct chunk_info *info;
	unsigned int total = mopts.bucket_total[bucket], w;
	int zeroed;
	void *page;

	info = alloc_info(d, bucket);
	if (info == NULL)
		return NULL;
	page = om_cache_get_chunk_page(d, &zeroed);
	if (page == NULL)
		goto fail_info;
	if (bucket == 0) {
		/* malloc(0) objects: any access faults. */
		if (om_os_protect(page, OM_PAGE_SIZE, 0) != 0)
			goto fail_page;
	} else if (d->junk && (mopts.junk_validate_full || total > 32)) {
		/* Every slot starts as junk, so reuse validation holds. */
		memset(page, OM_JUNK_FREE, OM_PAGE_SIZE);
	} else if (d->junk) {
		/* Slots of 128 bytes and more: only the words reuse checks. */
		for (w = 0; w < total; w++)
			om_junk_chunk((char *)page + w * om_bucket_size[bucket],
			    bucket);
	}
	memset(info, 0, sizeof(*info));
	info->page = (uintptr_t)page;
	info->canary = (uint32_t)(mopts.canary ^ (uintptr_t)info);
	info->bucket = (uint16_t)bucket;
	info->size = om_bucket_size[bucket];
	info->total = (uint16_t)total;
	info->free = (uint16_t)total;
	info->recip = mopts.bucket_recip[bucket];
	for (w = 0; w < total / 64; w++)
		info->bits[w] = ~0ULL;
	if (total % 64)
		info->bits[w] = (1ULL << (total % 64)) - 1;
	if (om_region_insert(d, (uintptr_t)page | OM_REGION_CHUNK,
	    (uintptr_t)info, NULL) != 0)
		goto fail_page;
	list_push(d, info);
	return info;

fail_page:
	if (bucket == 0)
		om_os_protect(page, OM_PAGE_SIZE, 1);
	om_cache_put(d, page, 1, 0);
fail_info:
	info->next = d->info_free[bucket];
	d->info_free[bucket] = info;
	return NULL;
}

/* Give an empty chunk page back to the page cache. */
static void
release_page(struct dir_info *d, struct chunk_info *info)
{
	void *page = (void *)info->page;
	unsigned int bucket = info->bucket;
	struct region_info *r;

	if (info->onlist)
		list_remove(d, info);
	r = om_region_find(d, page);
	if (r == NULL)
		om_fatal(d, "chunk page not in the region table", page);
	om_region_delete(d, r);
	if (bucket == 0)
		om_os_protect(page, OM_PAGE_SIZE, 1);
	om_cache_put(d, page, 1, 0);
	info->canary = 0;
	info->next = d->info_free[bucket];
	d->info_free[bucket] = info;
}

/* Mark a slot free; the page goes back on a list or, empty, away. */
static void
free_slot(struct dir_info *d, struct chunk_info *info, unsigned int slot)
{
	OM_ASSERT(d, info->free < info->total);
	OM_ASSERT(d, !(info->bits[slot >> 6] & (1ULL << (slot & 63))));
	info->bits[slot >> 6] |= 1ULL << (slot & 63);
	info->free++;
	if (info->free == 1)
		list_push(d, info);
	/* Keep one page with free slots per bucket, to avoid thrashing,
	 * unless no thread is left to allocate from it. */
	if (info->free == info->total &&
	    (d->chunk_pages_avail[info->bucket] > 1 || om_pool_ownerless(d)))
		release_page(d, info);
}

/* The options' share of handing out slot: callers and sizes (D),
 * malloc(0) objects, junk levels 0 and 2, canaries (C). */
static OM_NOINLINE void *
alloc_extras(struct dir_info *d, struct chunk_info *info, unsigned int slot,
    char *p, size_t sz, void *f)
{
	unsigned int bucket = info->bucket, size = info->size;

	if (mopts.opt.dump) {
		callers(info)[slot] = f;
		reqsizes(info)[slot] = (uint16_t)sz;
	}
	if (bucket == 0)
		return p;
	d->inuse += size;
	if (d->junk) {
		check_junk(d, p, bucket, size);
		if (d->junk >= 2)
			memset(p, OM_JUNK_NEW, sz);
	}
	if (mopts.opt.chunk_canaries) {
		reqsizes(info)[slot] = (uint16_t)sz;
		om_fill(p + sz, mopts.canary_byte, size - sz);
	}
	return p;
}

void *
om_chunk_alloc(struct dir_info *d, size_t sz, unsigned int bucket, void *f)
{
	unsigned int lists = d->chunk_lists[bucket], l;
	/* One draw: the low bits pick the list, the other 14 the slot. */
	unsigned int r = d->rnext;
	struct chunk_info *info;
	unsigned int start, w, slot, size, total;
	uint64_t word;
	char *p;

	if (OM_UNLIKELY(lists == 0)) {
		if ((info = make_chunks(d, bucket)) == NULL)
			return NULL;
	} else {
		/* A random list; if empty, the next one that is not, without
		 * a branch: rotate the mask of non-empty lists to l. */
		l = r & (OM_CHUNK_LISTS - 1);
		l = (l + (unsigned int)__builtin_ctz((lists | lists <<
		    OM_CHUNK_LISTS) >> l)) & (OM_CHUNK_LISTS - 1);
		info = d->chunk_dir[bucket][l];
	}
	check_info(d, info);
	d->rnext = om_rword(&d->rng);

	/* A random start slot, then the next free one, wrapping around.
	 * The bucket's slot count, not the page's (the same), so that the
	 * start does not wait for the load of info. */
	total = mopts.bucket_total[bucket];
	start = (unsigned int)(((r >> 2) * total) >> 14);
	w = start >> 6;
	word = info->bits[w] & (~0ULL << (start & 63));
	if (total <= 64) {
		/* One word: wrapping around is taking it whole, chosen
		 * without a branch, which would go either way at random. */
		word |= info->bits[0] & -(uint64_t)(word == 0);
	} else {
		while (word == 0) {
			w = (w + 1) * 64 < total ? w + 1 : 0;
			word = info->bits[w];
		}
	}
	slot = (w << 6) + (unsigned int)__builtin_ctzll(word);
	OM_ASSERT(d, total == info->total && slot < total && info->free > 0);
	info->bits[w] &= ~(1ULL << (slot & 63));
	if (--info->free == 0)
		list_remove(d, info);

	size = info->size;
	p = (char *)info->page + (size_t)slot * size;
	if (OM_UNLIKELY(d->extras | (bucket == 0)))
		return alloc_extras(d, info, slot, p, sz, f);
	/* Junk level 1, nothing else to record. */
	d->inuse += size;
	check_sparse_junk(d, p, bucket);
	return p;
}

static OM_COLD void
canary_corrupted(struct dir_info *d, const void *p)
{
	om_fatal(d, "chunk canary corrupted", p);
}

static void
check_canary(struct dir_info *d, struct chunk_info *info, unsigned int slot,
    const char *p)
{
	size_t sz = reqsizes(info)[slot];

	if (OM_UNLIKELY(!om_bytes_are(p + sz, mopts.canary_byte,
	    info->size - sz)))
		canary_corrupted(d, p);
}

/* Validate every chunk in the ring (F): junk intact, and so no write after
 * free went unnoticed. */
static OM_NOINLINE void
check_ring(struct dir_info *d)
{
	unsigned int i;

	for (i = 0; i < OM_DELAYED; i++) {
		struct om_delayed *e = &d->delayed[i];

		if (e->p != NULL && e->info->bucket != 0 && d->junk)
			om_junk_validate(d, 1, e->p, e->info->size);
	}
}

/*
 * Really free a chunk that leaves the delayed ring.  free() checked that p
 * starts a slot of info's page before it went in, and the ring is pool
 * memory, as the region table and the chunk records are: its slot is
 * computed again, not checked again.  (Keeping the slot in the ring saves
 * the multiplication, but an entry of 24 bytes instead of 16 puts every
 * third one across two cache lines and moves the pool's later fields:
 * frees across CPUs paid a fifth of their speed for it.)
 */
static void
undelay(struct dir_info *d, void *p, struct chunk_info *info)
{
	unsigned int slot;

	check_info(d, info);
	slot = slot_of(info, (uint32_t)((uintptr_t)p - info->page));
	info->delayed[slot >> 6] &= ~(1ULL << (slot & 63));
	/* Without extras the junk is level 1's (see om_chunk_free). */
	if (!d->extras)
		check_sparse_junk(d, p, info->bucket);
	else if (d->junk && info->bucket != 0)
		check_junk(d, p, info->bucket, info->size);
	free_slot(d, info, slot);
}

/*
 * The options' share of a free before the chunk enters the delayed ring:
 * callers (D), canaries (C), clearing (freezero), junk levels 0 and 2,
 * freecheck (F).  Returns 1 if the slot was released at once instead
 * (malloc(0) objects, conceal memory).
 */
static OM_NOINLINE int
free_extras(struct dir_info *d, struct chunk_info *info, unsigned int slot,
    void *p, size_t clearsz)
{
	if (mopts.opt.dump)
		callers(info)[slot] = NULL;
	if (info->bucket == 0) {
		free_slot(d, info, slot);
		return 1;
	}
	if (mopts.opt.chunk_canaries)
		check_canary(d, info, slot, p);
	d->inuse -= info->size;
	if (clearsz > 0)
		memset(p, 0, clearsz);
	if (d->conceal) {
		/* Conceal memory is cleared and released at once. */
		memset(p, 0, info->size);
		__asm__ __volatile__("" : : "r"(p) : "memory");
		free_slot(d, info, slot);
		return 1;
	}
	if (OM_UNLIKELY(mopts.junk_validate_full))
		memset(p, OM_JUNK_FREE, info->size);
	else if (d->junk)
		om_junk_chunk(p, info->bucket);
	if (OM_UNLIKELY(mopts.opt.freecheck))
		check_ring(d);
	return 0;
}

void
om_chunk_free(struct dir_info *d, struct region_info *r, void *p, int clear,
    size_t clearsz)
{
	struct chunk_info *info = entry_info(d, r);
	unsigned int slot, i;
	uint64_t bit;
	struct om_delayed out;

	slot = om_chunk_index(d, info, p);
	bit = 1ULL << (slot & 63);
	if (OM_UNLIKELY((info->bits[slot >> 6] | info->delayed[slot >> 6]) &
	    bit))
		om_fatal(d, "double free", p);
	if (OM_UNLIKELY(d->extras | clear | (info->bucket == 0))) {
		if (free_extras(d, info, slot, p, clearsz))
			return;
	} else {
		d->inuse -= info->size;
		om_junk_chunk(p, info->bucket);
	}

	i = d->rring;
	d->rring = om_rbyte(&d->rng) & (OM_DELAYED - 1);
	out = d->delayed[i];
	d->delayed[i].p = p;
	d->delayed[i].info = info;
	info->delayed[slot >> 6] |= bit;
	if (out.p != NULL)
		undelay(d, out.p, out.info);
}

/* Empty the delayed ring, e.g. before a dump or a trim. */
void
om_chunk_flush_delayed(struct dir_info *d)
{
	unsigned int i;

	for (i = 0; i < OM_DELAYED; i++) {
		struct om_delayed e = d->delayed[i];

		d->delayed[i].p = NULL;
		if (e.p != NULL)
			undelay(d, e.p, e.info);
	}
}

/* Give back every empty chunk page, including the one per bucket that
 * free_slot keeps. */
void
om_chunk_release_empty(struct dir_info *d)
{
	unsigned int b, l;

	for (b = 0; b < OM_NBUCKETS; b++)
		for (l = 0; l < OM_CHUNK_LISTS; l++) {
			struct chunk_info *info = d->chunk_dir[b][l], *next;

			for (; info != NULL; info = next) {
				next = info->next;
				check_info(d, info);
				if (info->free == info->total)
					release_page(d, info);
			}
		}
}

/* Bytes the caller may use of a live slot: the request under C, else the
 * slot (none for malloc(0)'s). */
static size_t
usable_of(struct chunk_info *info, unsigned int slot)
{
	if (info->bucket == 0)
		return 0;
	if (mopts.opt.chunk_canaries)
		return reqsizes(info)[slot];
	return info->size;
}

size_t
om_chunk_usable(struct dir_info *d, struct region_info *r, void *p)
{
	struct chunk_info *info = entry_info(d, r);
	unsigned int slot;

	slot = om_chunk_index(d, info, p);
	if (!om_chunk_slot_used(info, slot))
		om_fatal(d, "use of freed pointer", p);
	return usable_of(info, slot);
}

/*
 * Whether sz may be claimed for p, a chunk of r's page (freezero, the
 * sized frees): not more than the request under C, else the slot.  A
 * chunk that is already free passes, for om_chunk_free to report the
 * double free.
 */
int
om_chunk_size_ok(struct dir_info *d, struct region_info *r, void *p,
    size_t sz)
{
	struct chunk_info *info = entry_info(d, r);
	unsigned int slot;

	if (sz <= info->size && info->bucket != 0 &&
	    !mopts.opt.chunk_canaries)
		return 1;
	slot = om_chunk_index(d, info, p);
	return !om_chunk_slot_used(info, slot) || sz <= usable_of(info, slot);
}

/* Resize in place if newsz stays in p's bucket.  Returns 1 if done. */
int
om_chunk_resize(struct dir_info *d, struct region_info *r, void *p,
    size_t newsz)
{
	struct chunk_info *info = entry_info(d, r);
	unsigned int slot;

	if (newsz == 0 || newsz > OM_MAXCHUNK ||
	    om_bucket_of(newsz) != info->bucket || d->conceal ||
	    mopts.opt.realloc_move)
		return 0;
	slot = om_chunk_index(d, info, p);
	/* Freed, in the delayed ring or free in its page: reported as the
	 * move would report it (om_chunk_usable), not resized in place. */
	if (!om_chunk_slot_used(info, slot))
		om_fatal(d, "use of freed pointer", p);
	if (mopts.opt.chunk_canaries) {
		size_t old = reqsizes(info)[slot];

		check_canary(d, info, slot, p);
		if (newsz > old && d->junk >= 2)
			memset((char *)p + old, OM_JUNK_NEW, newsz - old);
		reqsizes(info)[slot] = (uint16_t)newsz;
		om_fill((char *)p + newsz, mopts.canary_byte,
		    info->size - newsz);
	}
	return 1;
}

void *
om_chunk_caller(struct chunk_info *info, unsigned int slot)
{
	return mopts.opt.dump ? callers(info)[slot] : NULL;
}

/* The size requested for slot, where recorded (C or D), else the slot. */
size_t
om_chunk_slot_reqsize(struct chunk_info *info, unsigned int slot)
{
	if (info->bucket == 0)
		return 0;
	if (mopts.opt.chunk_canaries || mopts.opt.dump)
		return reqsizes(info)[slot];
	return info->size;
}

/* 1 if slot holds a live allocation (not free, not delayed). */
int
om_chunk_slot_used(struct chunk_info *info, unsigned int slot)
{
	uint64_t bit = 1ULL << (slot & 63);

	return !((info->bits[slot >> 6] | info->delayed[slot >> 6]) & bit);
}
