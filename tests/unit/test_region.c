/*
 * test_region.c - region.c: the hash table (insert, find, backward-shift
 * delete, growth), page regions, shifted medium regions, alignment.
 */
#define _GNU_SOURCE	/* mlock2 */
#include "unit.h"

#include <malloc.h>
#include <omalloc.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef MADV_GUARD_INSTALL
#define MADV_GUARD_INSTALL 102
#endif

/* Distinct, non-zero page addresses in a scrambled order. */
static uintptr_t
key_of(unsigned int i)
{
	return (uintptr_t)(0x10000000ULL + ((i * 2654435761u) & 0xfffffu))
	    << OM_PAGE_SHIFT;
}

static uint64_t rng_state = 88172645463325252ULL;

static unsigned int
next_rand(unsigned int n)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return (unsigned int)(rng_state % n);
}

static size_t
used(const struct dir_info *d)
{
	return d->regions_total - d->regions_free;
}

/* Every key not deleted is found with its size, every deleted one not. */
static void
verify(struct dir_info *d, unsigned int n, const unsigned char *gone)
{
	struct region_info *r = NULL;
	unsigned int i;

	for (i = 0; i < n; i++) {
		r = om_region_find(d, (void *)key_of(i));
		if (gone[i] ? r != NULL : r == NULL ||
		    OM_REGION_PAGE(r) != key_of(i) || r->size != i + 1)
			break;
	}
	ck_assert_msg(i == n, "key %u (%#jx, size %u%s): found %#jx, size %ju",
	    i, (uintmax_t)key_of(i), i + 1, gone[i] ? ", deleted" : "",
	    (uintmax_t)(r != NULL ? OM_REGION_PAGE(r) : 0),
	    (uintmax_t)(r != NULL ? r->size : 0));
}

static void
churn(unsigned int n, unsigned int deletes)
{
	struct dir_info *d = unit_pool();
	unsigned char *gone = calloc(n, 1);
	unsigned int *order = malloc(n * sizeof(*order));
	unsigned int i, j;
	size_t initial = d->regions_total;
	int rc = 0;

	ck_assert_ptr_nonnull(gone);
	ck_assert_ptr_nonnull(order);
	for (i = 0; i < n; i++)
		if ((rc = om_region_insert(d, key_of(i), i + 1, NULL)) != 0)
			break;
	ck_assert_msg(i == n, "insert of key %u: %d", i, rc);
	ck_assert_uint_eq(used(d), n);
	/* The table never fills beyond half. */
	if (n * 2 > initial)
		ck_assert_uint_gt(d->regions_total, initial);
	ck_assert_uint_ge(d->regions_free * 2, d->regions_total - 2);
	verify(d, n, gone);

	for (i = 0; i < n; i++)
		order[i] = i;
	for (i = n - 1; i > 0; i--) {
		unsigned int k = next_rand(i + 1), t = order[i];
		order[i] = order[k];
		order[k] = t;
	}
	for (i = 0; i < deletes; i++) {
		struct region_info *r;

		j = order[i];
		r = om_region_find(d, (void *)key_of(j));
		if (r == NULL)
			break;
		om_region_delete(d, r);
		gone[j] = 1;
		if (i % 97 == 0 || i == deletes - 1)
			verify(d, n, gone);
	}
	ck_assert_msg(i == deletes, "key %u lost before its delete", order[i]);
	ck_assert_uint_eq(used(d), n - deletes);
	ck_assert_uint_gt(d->delete_moves, 0);
	if (deletes == n) {
		for (i = 0; i < d->regions_total && d->r[i].p == 0; i++)
			;
		ck_assert_msg(i == d->regions_total, "entry %u of an empty "
		    "table: %#jx", i, (uintmax_t)d->r[i].p);
	}
	free(order);
	free(gone);
}

START_TEST(table_grow_and_delete)
{
	churn(5000, 2500);
}
END_TEST

START_TEST(table_dense_delete_all)
{
	/* Just under the growth threshold of a fresh table: long probe runs,
	 * some wrapping around the end, all deleted in random order. */
	churn(OM_HASH_INITIAL / 2 - 1, OM_HASH_INITIAL / 2 - 1);
}
END_TEST

/* Insert keys from *i on while the table takes them without growing:
 * it grows at the insert that finds it over half full. */
static void
fill_to_load(struct dir_info *d, unsigned int *i)
{
	for (; d->regions_free * 2 >= d->regions_total; (*i)++)
		ck_assert_int_eq(om_region_insert(d, key_of(*i), *i + 1, NULL),
		    0);
}

/*
 * A new pool's table lies in the pool's own pages, after its struct, and
 * costs no mapping.  Outgrowing it maps a table four times as large and
 * leaves it in place (nothing unmapped); the growth after that doubles
 * and unmaps the table it leaves.  Every entry survives both.
 */
START_TEST(table_first_in_pool_pages)
{
	struct dir_info *d = unit_pool(), *other = unit_pool();
	unsigned char gone[OM_HASH_INITIAL * 4] = { 0 };
	struct region_info *first = d->r;
	struct om_os_counts a, b;
	size_t mapped = d->mapped;
	unsigned int i = 0;
	int rc = 0;

	/* The owner hint's leaves for these keys, mapped now through
	 * another pool, so that the counts below see only the tables. */
	for (i = 0; i < sizeof(gone); i++)
		if ((rc = om_region_insert(other, key_of(i), 1, NULL)) != 0)
			break;
	ck_assert_msg(i == sizeof(gone), "insert of key %u: %d", i, rc);
	i = 0;
	ck_assert_ptr_eq(first, (void *)((char *)d + OM_POOL_TABLE_OFFSET));
	ck_assert_uint_eq(d->regions_total, OM_HASH_INITIAL);
	fill_to_load(d, &i);
	ck_assert_ptr_eq(d->r, first);

	om_os_counts(&a);
	ck_assert_int_eq(om_region_insert(d, key_of(i), i + 1, NULL), 0);
	om_os_counts(&b);
	i++;
	ck_assert_ptr_ne(d->r, first);
	ck_assert_uint_eq(d->regions_total, 4 * OM_HASH_INITIAL);
	ck_assert_uint_eq(b.mmap, a.mmap + 1);
	ck_assert_uint_eq(b.munmap, a.munmap);
	ck_assert_uint_eq(d->mapped, mapped + OM_PAGEROUND(4 *
	    OM_HASH_INITIAL * sizeof(struct region_info)));
	verify(d, i, gone);

	fill_to_load(d, &i);
	ck_assert_uint_eq(d->regions_total, 4 * OM_HASH_INITIAL);
	om_os_counts(&a);
	ck_assert_int_eq(om_region_insert(d, key_of(i), i + 1, NULL), 0);
	om_os_counts(&b);
	i++;
	ck_assert_uint_eq(d->regions_total, 8 * OM_HASH_INITIAL);
	ck_assert_uint_eq(b.mmap, a.mmap + 1);
	ck_assert_uint_eq(b.munmap, a.munmap + 1);
	ck_assert_uint_eq(d->mapped, mapped + OM_PAGEROUND(8 *
	    OM_HASH_INITIAL * sizeof(struct region_info)));
	ck_assert_uint_le(i, sizeof(gone));
	verify(d, i, gone);
}
END_TEST

START_TEST(table_reinsert)
{
	struct dir_info *d = unit_pool();
	unsigned char gone[2000] = { 0 };
	unsigned int round, i;

	for (i = 0; i < 2000; i++)
		om_region_insert(d, key_of(i), i + 1, NULL);
	/* Delete and insert again, many times over the same table. */
	for (round = 0; round < 20000; round++) {
		struct region_info *r;

		i = next_rand(2000);
		if (gone[i]) {
			if (om_region_insert(d, key_of(i), i + 1, NULL) != 0)
				break;
			gone[i] = 0;
		} else {
			r = om_region_find(d, (void *)key_of(i));
			if (r == NULL)
				break;
			om_region_delete(d, r);
			gone[i] = 1;
		}
	}
	ck_assert_msg(round == 20000, "round %u: key %u %s", round, i,
	    gone[i] ? "not inserted again" : "lost");
	verify(d, 2000, gone);
}
END_TEST

START_TEST(find_absent)
{
	struct dir_info *d = unit_pool();
	unsigned int i;
	struct region_info *r;

	ck_assert_ptr_null(om_region_find(d, (void *)0x12345000));
	for (i = 0; i < 1000; i += 2)
		om_region_insert(d, key_of(i), i + 1, NULL);
	for (i = 1; i < 1000; i += 2)
		if (om_region_find(d, (void *)key_of(i)) != NULL)
			break;
	ck_assert_msg(i >= 1000, "key %u found, never inserted", i);
	/* Any address inside a registered page finds that page. */
	r = om_region_find(d, (void *)(key_of(10) + 123));
	ck_assert_ptr_nonnull(r);
	ck_assert_uint_eq(r->size, 11);
	ck_assert_ptr_null(om_region_find(d, (void *)(key_of(10) +
	    OM_PAGE_SIZE)));
}
END_TEST

START_TEST(shifted_medium)
{
	struct dir_info *d = unit_pool();
	size_t sz;

	for (sz = OM_MAXCHUNK + 1; sz <= OM_PAGE_SIZE + 16; sz += 7) {
		char *p = om_region_alloc(d, sz, 0, 0, NULL);
		uintptr_t end;
		struct region_info *r;

		ck_assert_ptr_nonnull(p);
		end = (uintptr_t)p + sz;
		ck_assert_uint_eq((uintptr_t)p % OM_MINSIZE, 0);
		if (sz < OM_PAGE_SIZE)
			ck_assert_msg(OM_PAGEROUND(end) - end < 16,
			    "size %zu ends %zu bytes before the page end", sz,
			    (size_t)(OM_PAGEROUND(end) - end));
		else
			ck_assert_uint_eq((uintptr_t)p & OM_PAGE_MASK, 0);
		r = om_region_find(d, p);
		ck_assert_ptr_nonnull(r);
		ck_assert(!OM_REGION_IS_CHUNK(r));
		ck_assert_uint_eq(r->size, sz);
		ck_assert_uint_eq(OM_REGION_OFFSET(r),
		    (uintptr_t)p & OM_PAGE_MASK);
		memset(p, 0x55, sz);
		om_region_free(d, r, p, 0, 0);
		ck_assert_ptr_null(om_region_find(d, p));
	}
}
END_TEST

START_TEST(api_shifted_medium)
{
	size_t sz;

	for (sz = 2049; sz < 4096; sz += 101) {
		char *volatile p = malloc(sz);
		uintptr_t end = (uintptr_t)p + sz;

		ck_assert_ptr_nonnull(p);
		ck_assert_uint_lt(OM_PAGEROUND(end) - end, 16);
		ck_assert_uint_eq(malloc_usable_size(p),
		    mopts.opt.chunk_canaries ? sz : (sz + 15) & ~(size_t)15);
		free(p);
	}
}
END_TEST

/* The first bytes of p that do not hold i & 0xff at i; n if none. */
static size_t
counting_upto(const unsigned char *p, size_t n)
{
	size_t i;

	for (i = 0; i < n && p[i] == (unsigned char)i; i++)
		;
	return i;
}

/*
 * A region of more than half a page and less than one, resized within
 * that range, moves within its own page to its new shift, as OpenBSD's
 * does: it still ends at the page end, keeps its bytes, and no page is
 * taken or given back.  Under R it moves as every realloc does.
 */
START_TEST(realloc_within_page)
{
	static const size_t sizes[] = { 2100, 3000, 4000, 2049, 2500, 4095 };
	struct dir_info *d = unit_pool();
	unsigned char *p = om_region_alloc(d, 2064, 0, 0, NULL), *q;
	uintptr_t page = (uintptr_t)p & ~(uintptr_t)OM_PAGE_MASK, end;
	size_t old, cheap = d->cheap_reallocs, runs, keep, k, i;
	struct region_info *r;

	ck_assert_ptr_nonnull(p);
	/* Every byte the block offers is the program's (its usable size,
	 * past the size asked for), and moves with it. */
	old = om_region_usable(om_region_find(d, p));
	for (i = 0; i < old; i++)
		p[i] = (unsigned char)i;
	for (k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
		size_t sz = sizes[k];

		runs = d->cache_used;
		q = om_region_realloc(d, om_region_find(d, p), p, sz);
		if (mopts.opt.realloc_move) {
			ck_assert_ptr_null(q);
			break;
		}
		ck_assert_msg(q != NULL, "%zu to %zu bytes moved out", old,
		    sz);
		ck_assert_uint_eq((uintptr_t)q & ~(uintptr_t)OM_PAGE_MASK,
		    page);
		end = (uintptr_t)q + sz;
		ck_assert_uint_lt(OM_PAGEROUND(end) - end, 16);
		ck_assert_uint_eq((uintptr_t)q % OM_MINSIZE, 0);
		keep = old < sz ? old : sz;
		ck_assert_uint_eq(counting_upto(q, keep), keep);
		if (d->junk >= 2)
			for (i = old; i < sz; i++)
				ck_assert_uint_eq(q[i], OM_JUNK_NEW);
		ck_assert_ptr_nonnull(r = om_region_find(d, q));
		ck_assert_uint_eq(r->size, sz);
		ck_assert_uint_eq(OM_REGION_OFFSET(r),
		    (uintptr_t)q & OM_PAGE_MASK);
		ck_assert_uint_eq(d->cheap_reallocs, cheap + k + 1);
		ck_assert_uint_eq(d->cache_used, runs);
		for (i = keep; i < om_region_usable(r); i++)
			q[i] = (unsigned char)i;
		p = q;
		old = om_region_usable(r);
	}
	/* Under C, its canary is checked here. */
	om_region_free(d, om_region_find(d, p), p, 0, 0);
}
END_TEST

/*
 * The same through the API: a buffer grown 16 bytes at a time from 2 KiB
 * to a page stays in its page; recallocarray, shrinking such a block,
 * moves it up in its page and clears what it left, as well as the tail
 * it gave up.
 */
START_TEST(api_realloc_within_page)
{
	unsigned char *p = malloc(2064), *q;
	uintptr_t page = (uintptr_t)p & ~(uintptr_t)OM_PAGE_MASK;
	size_t sz, i;

	ck_assert_ptr_nonnull(p);
	for (i = 0; i < 2064; i++)
		p[i] = (unsigned char)i;
	for (sz = 2080; sz < OM_PAGE_SIZE; sz += 16) {
		ck_assert_ptr_nonnull(q = realloc(p, sz));
		if (!mopts.opt.realloc_move)
			ck_assert_uint_eq((uintptr_t)q &
			    ~(uintptr_t)OM_PAGE_MASK, page);
		ck_assert_uint_eq(counting_upto(q, sz - 16), sz - 16);
		for (i = sz - 16; i < sz; i++)
			q[i] = (unsigned char)i;
		p = q;
	}
	free(p);

	ck_assert_ptr_nonnull(p = recallocarray(NULL, 0, 3000, 1));
	page = (uintptr_t)p & ~(uintptr_t)OM_PAGE_MASK;
	memset(p, 0x77, 3000);
	ck_assert_ptr_nonnull(q = recallocarray(p, 3000, 2500, 1));
	for (i = 0; i < 2500; i++)
		ck_assert_uint_eq(q[i], 0x77);
	if (!mopts.opt.realloc_move) {
		ck_assert_uint_eq((uintptr_t)q & ~(uintptr_t)OM_PAGE_MASK,
		    page);
		ck_assert_uint_gt((uintptr_t)q, (uintptr_t)p);
		/* What it left before it is zero, and so is what it gave
		 * up after it, but for its canary under C. */
		for (i = 0; p + i < q; i++)
			ck_assert_uint_eq(p[i], 0);
		for (i = 2500; i < (size_t)(p + 3000 - q); i++)
			ck_assert_uint_eq(q[i], mopts.opt.chunk_canaries ?
			    mopts.canary_byte : 0);
	}
	free(q);
}
END_TEST

/*
 * realloc keeps every byte malloc_usable_size offered, not only those
 * asked for: a program may write them all, as Redis's listpacks do.
 * Sizes that are not multiples of 16, from chunks through blocks shifted
 * to their page's end (which move within it) to page runs (which grow in
 * place, junked after what they had under J), grown by a byte, a little
 * and a lot.
 */
START_TEST(api_realloc_keeps_usable)
{
	static const size_t sizes[] = { 100, 1000, 2049, 2050, 3001, 4079,
	    5000, 65001, 70001 };
	unsigned char *p, *q;
	unsigned int k, g;
	size_t i, u, to;

	for (k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++)
		for (g = 0; g < 3; g++) {
			ck_assert_ptr_nonnull(p = malloc(sizes[k]));
			u = malloc_usable_size(p);
			ck_assert_uint_ge(u, sizes[k]);
			for (i = 0; i < u; i++)
				p[i] = (unsigned char)(i * 7 + 1);
			to = g == 0 ? u + 1 : g == 1 ? u + 100 :
			    2 * u + OM_PAGE_SIZE;
			ck_assert_ptr_nonnull(q = realloc(p, to));
			for (i = 0; i < u; i++)
				if (q[i] != (unsigned char)(i * 7 + 1))
					break;
			ck_assert_msg(i == u, "%zu bytes, %zu usable, to %zu: "
			    "byte %zu lost", sizes[k], u, to, i);
			free(q);
		}
}
END_TEST

START_TEST(alignments)
{
	struct dir_info *d = unit_pool();
	size_t align, sz;
	static const size_t sizes[] = { 3000, 5000, 70000 };
	unsigned int k;

	for (align = 32; align <= ((size_t)2 << 20); align <<= 1) {
		for (k = 0; k < 3; k++) {
			char *p;
			struct region_info *r;

			sz = sizes[k];
			p = om_region_alloc(d, sz, align, 0, NULL);
			ck_assert_ptr_nonnull(p);
			ck_assert_msg((uintptr_t)p % align == 0,
			    "%p not aligned to %zu", (void *)p, align);
			memset(p, 1, sz);
			r = om_region_find(d, p);
			ck_assert_ptr_nonnull(r);
			om_region_free(d, r, p, 0, 0);
		}
	}
}
END_TEST

/*
 * A block aligned beyond a page, freed and asked for again, comes back
 * from the cache without a system call; a cached run of that length that
 * is not so aligned is never taken for it.  With G the guard page stays.
 */
START_TEST(aligned_reuse)
{
	struct dir_info *d = unit_pool();
	size_t align = (size_t)64 << 10, sz = (size_t)64 << 10;
	size_t len = sz + mopts.guard;
	struct om_os_counts a, b;
	char *p, *q, *odd;
	unsigned int i;

	/* Two runs of its length kept (not under <<<<<<). */
	if (d->cache_room[len / OM_PAGE_SIZE] < 2)
		return;
	/* A run of the same length, cached first, starting off alignment. */
	odd = om_os_map(len + OM_PAGE_SIZE + align, 0);
	ck_assert_ptr_nonnull(odd);
	d->mapped += len + OM_PAGE_SIZE + align;
	odd = (char *)(((uintptr_t)odd + align - 1) & ~(uintptr_t)(align - 1))
	    + OM_PAGE_SIZE;
	if (mopts.guard)
		ck_assert_int_eq(om_os_guard(odd + sz, mopts.guard), 0);
	om_cache_put(d, odd, len / OM_PAGE_SIZE, mopts.guard != 0);
	p = om_region_alloc(d, sz, align, 0, NULL);
	ck_assert_ptr_nonnull(p);
	ck_assert_uint_eq((uintptr_t)p % align, 0);
	ck_assert_ptr_ne(p, odd);
	om_region_free(d, om_region_find(d, p), p, 0, 0);
	for (i = 0; i < 10; i++) {
		om_os_counts(&a);
		q = om_region_alloc(d, sz, align, 0, NULL);
		om_os_counts(&b);
		ck_assert_ptr_eq(q, p);
		ck_assert_uint_eq(b.mmap, a.mmap);
		ck_assert_uint_eq(b.munmap, a.munmap);
		ck_assert_uint_eq(b.madvise + b.mprotect,
		    a.madvise + a.mprotect + (mopts.opt.freeunmap ? 1 : 0));
		memset(q, 3, sz);
		om_region_free(d, om_region_find(d, q), q, 0, 0);
	}
}
END_TEST

START_TEST(api_alignments)
{
	static const size_t sizes[] = { 1, 100, 2048, 3000, 5000, 100000 };
	size_t align;
	unsigned int k;

	for (align = 8; align <= ((size_t)1 << 20); align <<= 1) {
		for (k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
			void *p = NULL;

			ck_assert_int_eq(posix_memalign(&p, align, sizes[k]),
			    0);
			ck_assert_msg((uintptr_t)p % align == 0,
			    "%p size %zu not aligned to %zu", p, sizes[k],
			    align);
			ck_assert_uint_ge(malloc_usable_size(p), sizes[k]);
			memset(p, 2, sizes[k]);
			free(p);
		}
	}
}
END_TEST

START_TEST(zeroed_on_reuse)
{
	struct dir_info *d = unit_pool();
	unsigned int round;

	for (round = 0; round < 4; round++) {
		unsigned char *p = om_region_alloc(d, 3 * OM_PAGE_SIZE, 0, 1,
		    NULL);

		ck_assert_ptr_nonnull(p);
		ck_assert_bytes(p, 0, 3 * OM_PAGE_SIZE);
		memset(p, 0x55, 3 * OM_PAGE_SIZE);
		om_region_free(d, om_region_find(d, p), p, 0, 0);
	}
}
END_TEST

START_TEST(accounting)
{
	struct dir_info *d = unit_pool();
	char *p = om_region_alloc(d, 10000, 0, 0, NULL);
	size_t guard = mopts.guard;

	ck_assert_ptr_nonnull(p);
	ck_assert_uint_eq(d->inuse, 3 * OM_PAGE_SIZE);
	ck_assert_uint_eq(d->guarded, guard);
	om_region_free(d, om_region_find(d, p), p, 0, 0);
	ck_assert_uint_eq(d->inuse, 0);
	ck_assert_uint_eq(d->guarded, 0);
}
END_TEST

START_TEST(realloc_in_place)
{
	struct dir_info *d = unit_pool();
	char *p = om_region_alloc(d, 20 * OM_PAGE_SIZE, 0, 0, NULL), *q;
	struct region_info *r = om_region_find(d, p);
	unsigned int cached = d->cache_n[3];
	struct om_os_counts a, b;

	ck_assert_ptr_nonnull(r);
	memset(p, 0x33, 17 * OM_PAGE_SIZE);
	/* realloc_guarded; and with no page cache (<<<<<<<) nothing is
	 * cached behind a block. */
	if (mopts.guard || d->cache_max == 0)
		return;
	q = om_region_realloc(d, r, p, 17 * OM_PAGE_SIZE);
	if (mopts.opt.realloc_move) {
		ck_assert_ptr_null(q);
		return;
	}
	/* From 64 KiB, a shrink keeps the block and caches the tail. */
	ck_assert_ptr_eq(q, p);
	ck_assert_uint_eq(d->cheap_reallocs, 1);
	ck_assert_uint_eq(d->cheap_realloc_tries, 1);
	ck_assert_uint_eq(om_region_find(d, p)->size, 17 * OM_PAGE_SIZE);
	ck_assert_uint_eq(d->inuse, 17 * OM_PAGE_SIZE);
	ck_assert_uint_eq(d->cache_n[3], cached + 1);
	ck_assert_uint_eq((uint8_t)p[17 * OM_PAGE_SIZE - 1], 0x33);
	/* The same page count: nothing to do, still in place. */
	q = om_region_realloc(d, om_region_find(d, p), p,
	    17 * OM_PAGE_SIZE - 100);
	ck_assert_ptr_eq(q, p);
	ck_assert_uint_eq(om_region_find(d, p)->size, 17 * OM_PAGE_SIZE - 100);
	/* Growing takes the cached pages behind the block, as below 64 KiB:
	 * the front of the tail cached above, the rest staying cached. */
	om_os_counts(&a);
	q = om_region_realloc(d, om_region_find(d, p), p, 18 * OM_PAGE_SIZE);
	om_os_counts(&b);
	ck_assert_ptr_eq(q, p);
	ck_assert_uint_eq(b.mmap, a.mmap);
	ck_assert_uint_eq(d->cheap_realloc_tries, 2);
	ck_assert_uint_eq(d->cheap_reallocs, 2);
	ck_assert_uint_eq(d->cache_n[3], cached);
	ck_assert_uint_eq((uint8_t)p[17 * OM_PAGE_SIZE - 101], 0x33);
	ck_assert_uint_eq(om_region_find(d, p)->size, 18 * OM_PAGE_SIZE);
	ck_assert_uint_eq(d->inuse, 18 * OM_PAGE_SIZE);
	/* More than is cached behind it: the kernel moves the block,
	 * without a copy, and only the new address is known. */
	q = om_region_realloc(d, om_region_find(d, p), p, 21 * OM_PAGE_SIZE);
	ck_assert_ptr_nonnull(q);
	/* The rest of the tail keeps the pages behind it taken. */
	ck_assert_ptr_ne(q, p);
	ck_assert_uint_eq(d->cheap_realloc_tries, 3);
	ck_assert_uint_eq(d->cheap_reallocs, 3);
	ck_assert_uint_eq((uint8_t)q[17 * OM_PAGE_SIZE - 101], 0x33);
	/* Its new pages: fresh, or filled as new memory at junk level 2. */
	ck_assert_uint_eq((uint8_t)q[21 * OM_PAGE_SIZE - 1],
	    d->junk >= 2 ? OM_JUNK_NEW : 0);
	ck_assert_uint_eq(om_region_find(d, q)->size, 21 * OM_PAGE_SIZE);
	ck_assert_uint_eq(d->inuse, 21 * OM_PAGE_SIZE);
	ck_assert_ptr_null(om_region_find(d, p));
	p = q;
	/* Small sizes always move. */
	ck_assert_ptr_null(om_region_realloc(d, om_region_find(d, p), p,
	    OM_MAXCHUNK));
	/* Under 64 KiB a region moves to shrink, without trying: the cache
	 * holds runs by exact length, and the tail a shrink would leave is a
	 * length nobody asked for. */
	p = om_region_alloc(d, 5 * OM_PAGE_SIZE, 0, 0, NULL);
	ck_assert_ptr_nonnull(p);
	ck_assert_ptr_null(om_region_realloc(d, om_region_find(d, p), p,
	    3 * OM_PAGE_SIZE));
	ck_assert_uint_eq(d->cheap_realloc_tries, 3);
	/* It grows into the cached run behind it: p is the lowest of the
	 * runs its miss mapped, and the next one is cached, fresh. */
	ck_assert(om_region_find(d, p + 5 * OM_PAGE_SIZE) == NULL);
	q = om_region_realloc(d, om_region_find(d, p), p, 6 * OM_PAGE_SIZE);
	ck_assert_ptr_eq(q, p);
	ck_assert_uint_eq(d->cheap_realloc_tries, 4);
	ck_assert_uint_eq(d->cheap_reallocs, 4);
	ck_assert_uint_eq(om_region_find(d, p)->size, 6 * OM_PAGE_SIZE);
	ck_assert_uint_eq(d->inuse, 27 * OM_PAGE_SIZE);
	p[6 * OM_PAGE_SIZE - 1] = 1;
	/* What is left of that run, 4 pages, is too short for 6 more. */
	ck_assert_ptr_null(om_region_realloc(d, om_region_find(d, p), p,
	    12 * OM_PAGE_SIZE));
	ck_assert_uint_eq(d->cheap_realloc_tries, 5);
	ck_assert_uint_eq(d->cheap_reallocs, 4);
	ck_assert_uint_eq(om_region_find(d, p)->size, 6 * OM_PAGE_SIZE);
}
END_TEST

/*
 * Below 512 KiB a block with no cached pages behind it goes to the kernel
 * to grow only if it is the block that grew last, a buffer being built
 * up (and, growing by more than an eighth, no cached run could take it:
 * realloc_copies_the_last_grown_by_much); any other moves by copying
 * (NULL here), without a system call, so that its pages go back to the
 * cache.  From 512 KiB the kernel moves any.
 */
START_TEST(realloc_remaps_the_last_grown)
{
	struct dir_info *d = unit_pool();
	size_t pg = OM_PAGE_SIZE;
	struct om_os_counts a, b;
	char *p, *q, *big;

	if (mopts.guard || mopts.opt.realloc_move || d->cache_max == 0)
		return;
	/* p grows last: cut, then grown into its own tail. */
	p = om_region_alloc(d, 20 * pg, 0, 0, NULL);
	ck_assert_ptr_eq(om_region_realloc(d, om_region_find(d, p), p,
	    17 * pg), p);
	ck_assert_ptr_eq(om_region_realloc(d, om_region_find(d, p), p,
	    18 * pg), p);
	q = om_region_alloc(d, 20 * pg, 0, 0, NULL);
	big = om_region_alloc(d, 130 * pg, 0, 0, NULL);
	ck_assert_ptr_nonnull(q);
	ck_assert_ptr_nonnull(big);
	q[20 * pg - 1] = 7;
	/* More than any run cached behind q: q is to be copied. */
	om_os_counts(&a);
	ck_assert_ptr_null(om_region_realloc(d, om_region_find(d, q), q,
	    120 * pg));
	om_os_counts(&b);
	ck_assert_uint_eq(b.mmap, a.mmap);
	ck_assert_uint_eq(b.munmap, a.munmap);
	ck_assert_uint_eq(om_region_find(d, q)->size, 20 * pg);
	ck_assert_uint_eq((uint8_t)q[20 * pg - 1], 7);
	/* p, and a block of 512 KiB or more, grow whatever grew last. */
	q = om_region_realloc(d, om_region_find(d, p), p, 120 * pg);
	ck_assert_ptr_nonnull(q);
	ck_assert_uint_eq(om_region_find(d, q)->size, 120 * pg);
	ck_assert_ptr_nonnull(om_region_realloc(d, om_region_find(d, big),
	    big, 200 * pg));
}
END_TEST

/*
 * The block that grew last, growing by more than an eighth, is copied
 * when a used run long enough is cached (NULL here), its own pages going
 * back to the cache, and grows by the kernel when none is; growing by an
 * eighth or less, a buffer being built up, it grows by the kernel either
 * way, onto the front of that run.
 */
START_TEST(realloc_copies_the_last_grown_by_much)
{
	struct dir_info *d = unit_pool();
	size_t pg = OM_PAGE_SIZE;
	struct om_os_counts a, b;
	char *p, *q, *big;

	/* big is kept when freed (not under <<<<<). */
	if (mopts.guard || mopts.opt.realloc_move || d->cache_big_max < 100)
		return;
	p = om_region_alloc(d, 20 * pg, 0, 0, NULL);
	big = om_region_alloc(d, 100 * pg, 0, 0, NULL);
	ck_assert_ptr_nonnull(p);
	ck_assert_ptr_nonnull(big);
	memset(big, 1, 100 * pg);
	p[20 * pg - 1] = 7;
	/* Nothing cached, nor a reserve: the rest of the reserve p came
	 * from, cached when big needed a new one, was a run the kernel
	 * could put q right in front of (6 in 200 runs of a UBSan build). */
	om_cache_trim(d);
	om_cache_grew(d, 0, 0, (uintptr_t)p, 20);
	ck_assert(om_cache_take_at(d, (uintptr_t)p + 20 * pg, 1) == 0);
	/* No used run to take: the kernel grows it. */
	q = om_region_realloc(d, om_region_find(d, p), p, 40 * pg);
	ck_assert_ptr_nonnull(q);
	ck_assert_uint_eq((uint8_t)q[20 * pg - 1], 7);
	ck_assert(om_cache_take_at(d, (uintptr_t)q + 40 * pg, 1) == 0);
	/* big, written and freed, is such a run: q is to be copied. */
	om_region_free(d, om_region_find(d, big), big, 0, 0);
	om_os_counts(&a);
	ck_assert_ptr_null(om_region_realloc(d, om_region_find(d, q), q,
	    80 * pg));
	om_os_counts(&b);
	ck_assert_uint_eq(b.mmap, a.mmap);
	ck_assert_uint_eq(om_region_find(d, q)->size, 40 * pg);
	/* By an eighth, it moves onto that run's front. */
	p = om_region_realloc(d, om_region_find(d, q), q, 45 * pg);
	ck_assert_ptr_eq(p, big);
	ck_assert_uint_eq((uint8_t)p[20 * pg - 1], 7);
	ck_assert_uint_eq(om_region_find(d, p)->size, 45 * pg);
}
END_TEST

/* Whether the kernel makes guard pages as markers in a mapping
 * (MADV_GUARD_INSTALL, Linux 6.13), which om_os_guard prefers. */
static int
guard_markers(void)
{
	void *p = mmap(NULL, OM_PAGE_SIZE, PROT_READ | PROT_WRITE,
	    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	int ok;

	ck_assert_ptr_ne(p, MAP_FAILED);
	ok = madvise(p, OM_PAGE_SIZE, MADV_GUARD_INSTALL) == 0;
	munmap(p, OM_PAGE_SIZE);
	return ok;
}

/*
 * With G a region from 64 KiB grows through the kernel as unguarded ones
 * do, its guard following its end, and shrinks in place, a guard put
 * where it now ends.  A guard page mapped on its own (a kernel without
 * markers) makes the kernel refuse, and the caller copies.
 */
START_TEST(realloc_guarded)
{
	struct dir_info *d = unit_pool();
	size_t pg = OM_PAGE_SIZE, i;
	char *p, *q;
	unsigned char vec[18];

	if (!mopts.guard)
		return;
	/* Under 64 KiB a guarded block moves by copying. */
	p = om_region_alloc(d, 15 * pg, 0, 0, NULL);
	ck_assert_ptr_nonnull(p);
	ck_assert_ptr_null(om_region_realloc(d, om_region_find(d, p), p,
	    20 * pg));
	ck_assert_ptr_null(om_region_realloc(d, om_region_find(d, p), p,
	    10 * pg));
	ck_assert_uint_eq(d->cheap_realloc_tries, 0);
	om_region_free(d, om_region_find(d, p), p, 0, 0);

	p = om_region_alloc(d, 20 * pg, 0, 0, NULL);
	ck_assert_ptr_nonnull(p);
	p[0] = 1;
	p[20 * pg - 1] = 2;
	q = om_region_realloc(d, om_region_find(d, p), p, 40 * pg);
	ck_assert_uint_eq(d->cheap_realloc_tries, 1);
	if (!guard_markers()) {
		ck_assert_ptr_null(q);
		return;
	}
	ck_assert_ptr_nonnull(q);
	ck_assert_uint_eq(d->cheap_reallocs, 1);
	ck_assert_uint_eq(q[0], 1);
	ck_assert_uint_eq(q[20 * pg - 1], 2);
	/* Not copied: the pages between, never written, are still not
	 * there (unless junk level 2 filled them as new memory). */
	if (d->junk < 2) {
		ck_assert_int_eq(mincore(q + pg, 18 * pg, vec), 0);
		for (i = 0; i < 18; i++)
			ck_assert_msg(!(vec[i] & 1), "page %zu resident",
			    i + 1);
	}
	ck_assert_uint_eq((uint8_t)q[40 * pg - 1],
	    d->junk >= 2 ? OM_JUNK_NEW : 0);
	ck_assert_uint_eq(om_region_find(d, q)->size, 40 * pg);
	ck_assert_uint_eq(d->inuse, 40 * pg);
	ck_assert_uint_eq(d->guarded, mopts.guard);
	if (q != p) {
		ck_assert_ptr_null(om_region_find(d, p));
		ck_assert(unit_unmapped(p, 21));
	}
	/* The old guard is data now, and the guard is at the new end. */
	q[20 * pg] = 3;
	unit_expect_fault(q + 40 * pg);

	/* Shrunk in place: a guard at the new end; the pages behind it, to
	 * the old guard, cached (or unmapped, with no cache). */
	p = om_region_realloc(d, om_region_find(d, q), q, 30 * pg);
	ck_assert_ptr_eq(p, q);
	ck_assert_uint_eq(d->cheap_reallocs, 2);
	ck_assert_uint_eq(om_region_find(d, q)->size, 30 * pg);
	ck_assert_uint_eq(d->inuse, 30 * pg);
	ck_assert_uint_eq(d->guarded, mopts.guard);
	ck_assert_uint_eq(q[20 * pg], 3);
	unit_expect_fault(q + 30 * pg);
	om_lock(d);	/* what the pool evicts goes when it is unlocked */
	om_unlock(d);
	ck_assert_int_eq(unit_unmapped(q + 31 * pg, 10), d->cache_max == 0);
	/* By one page: the old guard is all that is left behind, and
	 * goes. */
	p = om_region_realloc(d, om_region_find(d, q), q, 29 * pg - 100);
	ck_assert_ptr_eq(p, q);
	ck_assert_uint_eq(d->inuse, 29 * pg);
	unit_expect_fault(q + 29 * pg);
	ck_assert(unit_unmapped(q + 30 * pg, 1));
	om_region_free(d, om_region_find(d, q), q, 0, 0);
	ck_assert_uint_eq(d->inuse, 0);
	ck_assert_uint_eq(d->guarded, 0);
}
END_TEST

/*
 * A guarded region locked after its guard was made, then grown: the
 * kernel refuses markers in a locked mapping, so the new guard is made
 * with mprotect, and the old one, a marker, must still come off.  With
 * *arg, the write goes past the new end instead.
 */
static void
do_grow_locked(void *arg)
{
	struct dir_info *d = unit_pool();
	size_t pg = OM_PAGE_SIZE;
	char *p = om_region_alloc(d, 20 * pg, 0, 0, NULL), *q;

	if (p == NULL || mlock2(p, 21 * pg, MLOCK_ONFAULT) != 0)
		_exit(3);
	q = om_region_realloc(d, om_region_find(d, p), p, 40 * pg);
	if (q == NULL)
		_exit(4);
	q[*(const int *)arg ? 40 * pg : 20 * pg] = 1;
}

START_TEST(realloc_guarded_locked)
{
	static const int past_end[] = { 0, 1 };
	struct child c;

	unit_init();
	if (!mopts.guard || !guard_markers())
		return;
	unit_run(do_grow_locked, (void *)&past_end[0], &c);
	if (WIFEXITED(c.status) && WEXITSTATUS(c.status) == 3)
		return;		/* no mlock2 here (RLIMIT_MEMLOCK) */
	ck_assert_exited_ok(&c);
	unit_run(do_grow_locked, (void *)&past_end[1], &c);
	ck_assert_msg(unit_signalled(&c, SIGSEGV),
	    "no guard past the end: status 0x%x", c.status);
}
END_TEST

/*
 * realloc's copy into a page run, watched: the page it copies from is
 * made unreadable, and the fault handler notes whether the thread was
 * inside a pool then, opens the page again and, with copy_free, frees
 * the block meanwhile, as a racing thread of the program would.
 */
static char *copy_from;
static int copy_free;
static volatile sig_atomic_t copy_faults, copy_inside;

static char *
page_of(const void *p)
{
	return (char *)((uintptr_t)p & ~(uintptr_t)(OM_PAGE_SIZE - 1));
}

static void
on_copy_fault(int sig, siginfo_t *si, void *ctx)
{
	char *page = page_of(copy_from);

	(void)ctx;
	if ((char *)si->si_addr < page ||
	    (char *)si->si_addr >= page + OM_PAGE_SIZE) {
		signal(sig, SIG_DFL);
		return;
	}
	copy_faults++;
	copy_inside = OM_SELF_BUSY(om_self) != 0;
	mprotect(page, OM_PAGE_SIZE, PROT_READ | PROT_WRITE);
	if (copy_free)
		free(copy_from);
}

/* Grow a half-page chunk (it moves, to a page run) with the source page
 * unreadable; the new block. */
static char *
watched_move(int free_meanwhile)
{
	struct sigaction sa = { 0 }, old;
	char *q;
	size_t i;

	copy_from = malloc(OM_MAXCHUNK);
	ck_assert_ptr_nonnull(copy_from);
	for (i = 0; i < OM_MAXCHUNK; i++)
		copy_from[i] = (char)(i * 7);
	copy_free = free_meanwhile;
	copy_faults = copy_inside = 0;
	sa.sa_sigaction = on_copy_fault;
	sa.sa_flags = SA_SIGINFO;
	ck_assert_int_eq(sigaction(SIGSEGV, &sa, &old), 0);
	ck_assert_int_eq(mprotect(page_of(copy_from), OM_PAGE_SIZE,
	    PROT_NONE), 0);
	q = realloc(copy_from, 3 * OM_PAGE_SIZE);
	sigaction(SIGSEGV, &old, NULL);
	return q;
}

/* The copy is made with the pool unlocked: a fault there (a fresh page,
 * 11-16 us) keeps no other thread of the pool waiting.  Made under the
 * lock, the handler finds the thread inside its pool. */
START_TEST(realloc_copies_unlocked)
{
	char *q;
	size_t i;

	unit_init();
	q = watched_move(0);
	ck_assert_ptr_nonnull(q);
	ck_assert_int_eq(copy_faults, 1);
	ck_assert_int_eq(copy_inside, 0);
	for (i = 0; i < OM_MAXCHUNK && q[i] == (char)(i * 7); i++)
		;
	ck_assert_msg(i == OM_MAXCHUNK, "byte %zu of the copy is %d, not %d",
	    i, q[i], (char)(i * 7));
	free(q);
}
END_TEST

static void
do_free_during_copy(void *arg)
{
	(void)arg;
	watched_move(1);
}

/* A free of the block while realloc copies it (a race in the program) is
 * caught when realloc gives the old block back. */
START_TEST(realloc_free_during_copy)
{
	struct child c;

	unit_init();
	unit_run(do_free_during_copy, NULL, &c);
	ck_assert_msg(unit_signalled(&c, SIGABRT),
	    "expected SIGABRT, status 0x%x, stderr: %s", c.status, c.out);
	ck_assert_msg(strstr(c.out, "in realloc(): ") != NULL &&
	    strstr(c.out, "double free") != NULL, "stderr: %s", c.out);
}
END_TEST

/* Grow a region from npages to newpages pages a page at a time, as
 * realloc does, writing each new page; the block, wherever it went.  It
 * starts as realloc's last grown block, a buffer built up from less. */
static char *
grow_pages(struct dir_info *d, char *p, size_t npages, size_t newpages)
{
	om_cache_grew(d, 0, 0, (uintptr_t)p, npages);
	for (npages++; npages <= newpages; npages++) {
		p = om_region_realloc(d, om_region_find(d, p), p,
		    npages * OM_PAGE_SIZE);
		if (p == NULL)
			break;
		p[(npages - 1) * OM_PAGE_SIZE] = (char)npages;
	}
	ck_assert_msg(npages > newpages, "growing to %zu pages failed",
	    npages);
	return p;
}

/*
 * A block realloc cut in place joins the rest cut off it when freed,
 * whatever its length: 16 pages cut to 8, or to 2, go back as one run of
 * 16, where runs of 8 pages or fewer freed beside cached ones stay apart
 * (om_cache_forget).
 */
START_TEST(cut_block_rejoins_its_rest)
{
	static const unsigned int keep[] = { 8, 2 };
	struct dir_info *d;
	unsigned int i;
	char *p, *q;

	for (i = 0; i < sizeof(keep) / sizeof(keep[0]); i++) {
		d = unit_pool();
		if (d->cache_max == 0 || mopts.guard ||
		    mopts.opt.realloc_move || d->cache_room[16] == 0)
			return;
		p = om_region_alloc(d, 16 * OM_PAGE_SIZE, 0, 0, NULL);
		ck_assert_ptr_nonnull(p);
		q = om_region_realloc(d, om_region_find(d, p), p,
		    keep[i] * OM_PAGE_SIZE);
		ck_assert_ptr_eq(q, p);
		ck_assert_uint_eq(d->cache_n[16 - keep[i]], 1);
		om_region_free(d, om_region_find(d, p), p, 0, 0);
		ck_assert_uint_eq(d->cache_n[16], 1);
		ck_assert_uint_eq(d->cache_n[keep[i]], 0);
		ck_assert_uint_eq(d->cache_n[16 - keep[i]], 0);
		ck_assert_uint_eq(d->cache_pages, 16);
	}
}
END_TEST

/*
 * A buffer longer than the cache keeps (OM_CACHE_BIG pages), built up by
 * realloc again and again: grown once to the length of one freed before,
 * the next one freed is kept (as for a length asked for again), and the
 * next buffer is cut from the front of its pages and grows through them
 * without a system call.
 */
START_TEST(big_buffer_regrows_in_its_pages)
{
	struct dir_info *d = unit_pool();
	size_t n = OM_CACHE_BIG + 88, i;
	struct om_os_counts a, b;
	char *p, *q;

	/* A cache too small ever to keep such a run (<<<<) shows nothing. */
	if (d->cache_max == 0 || mopts.guard || mopts.opt.realloc_move ||
	    n > (size_t)d->cache_max * OM_CACHE_SMALL * OM_CACHE_LONG_SCALE)
		return;
	/* Freed once: unmapped, its length remembered. */
	p = grow_pages(d, om_region_alloc(d, 16 * OM_PAGE_SIZE, 0, 0, NULL),
	    16, n);
	om_region_free(d, om_region_find(d, p), p, 0, 0);
	ck_assert_uint_eq(d->cache_pages, 0);
	/* Grown to that length again: kept when freed. */
	p = grow_pages(d, om_region_alloc(d, 16 * OM_PAGE_SIZE, 0, 0, NULL),
	    16, n);
	om_region_free(d, om_region_find(d, p), p, 0, 0);
	ck_assert_uint_eq(d->cache_n[0], 1);
	ck_assert_uint_eq(d->cache_pages, n);
	/* The next buffer starts on it and grows in place, its bytes
	 * kept. */
	q = om_region_alloc(d, 16 * OM_PAGE_SIZE, 0, 0, NULL);
	ck_assert_ptr_eq(q, p);
	for (i = 0; i < 16; i++)
		q[i * OM_PAGE_SIZE] = (char)(0x40 + i);
	om_os_counts(&a);
	q = grow_pages(d, q, 16, n);
	om_os_counts(&b);
	ck_assert_ptr_eq(q, p);
	ck_assert_uint_eq(b.mmap, a.mmap);
	ck_assert_uint_eq(b.munmap, a.munmap);
	ck_assert_uint_eq(d->cache_pages, 0);
	for (i = 0; i < 16; i++)
		ck_assert_int_eq(q[i * OM_PAGE_SIZE], (char)(0x40 + i));
	ck_assert_uint_eq(d->inuse, n * OM_PAGE_SIZE);
	om_region_free(d, om_region_find(d, q), q, 0, 0);
	ck_assert_uint_eq(d->cache_pages, n);
}
END_TEST

/* A buffer built up again reuses the pages it had: the block that moves
 * to grow takes the front of the freed run and grows into the rest. */
START_TEST(regrowth_reuses_pages)
{
	struct dir_info *d = unit_pool();
	char *p = om_region_alloc(d, 64 * OM_PAGE_SIZE, 0, 0, NULL), *q;
	struct om_os_counts a, b;
	size_t mapped;

	ck_assert_ptr_nonnull(p);
	om_region_free(d, om_region_find(d, p), p, 0, 0);
	mapped = d->mapped;
	q = om_region_alloc(d, 2 * OM_PAGE_SIZE, 0, OM_ALLOC_GROW, NULL);
	ck_assert_ptr_nonnull(q);
	if (mopts.guard || d->cache_max == 0) {
		ck_assert_ptr_ne(q, p);
		return;
	}
	/* p was not kept (<<<<<<). */
	if (d->cache_big_max < 64)
		return;
	ck_assert_ptr_eq(q, p);
	q = om_region_realloc(d, om_region_find(d, q), q, 9 * OM_PAGE_SIZE);
	if (mopts.opt.realloc_move) {
		/* R: the caller moves every realloc. */
		ck_assert_ptr_null(q);
		return;
	}
	ck_assert_ptr_eq(q, p);
	q = om_region_realloc(d, om_region_find(d, q), q, 16 * OM_PAGE_SIZE);
	ck_assert_ptr_eq(q, p);
	/* Past 64 KiB too, without a system call (mremap would have moved
	 * it away from the run, a call for each page it grew by). */
	om_os_counts(&a);
	q = om_region_realloc(d, om_region_find(d, q), q, 17 * OM_PAGE_SIZE);
	ck_assert_ptr_eq(q, p);
	q = om_region_realloc(d, om_region_find(d, q), q, 64 * OM_PAGE_SIZE);
	ck_assert_ptr_eq(q, p);
	om_os_counts(&b);
	ck_assert_uint_eq(b.mmap, a.mmap);
	ck_assert_uint_eq(d->mapped, mapped);
	ck_assert_uint_eq(d->cache_pages, 0);
	memset(q, 1, 64 * OM_PAGE_SIZE);
	/* The next request of the length it grew from cuts it, to grow
	 * into the rest again (see om_cache_get_grown)... */
	om_region_free(d, om_region_find(d, q), q, 0, 0);
	q = om_region_alloc(d, 2 * OM_PAGE_SIZE, 0, 0, NULL);
	ck_assert_ptr_eq(q, p);
	/* ... once.  Without the flag, a request of a length not cached
	 * does not cut up a longer run. */
	q = om_region_alloc(d, 2 * OM_PAGE_SIZE, 0, 0, NULL);
	ck_assert(q < p || q >= p + 64 * OM_PAGE_SIZE);
}
END_TEST

static void
do_bogus(void *arg)
{
	struct dir_info *d = unit_pool();
	char *p = om_region_alloc(d, 3 * OM_PAGE_SIZE, 0, 0, NULL);

	(void)arg;
	om_region_free(d, om_region_find(d, p), p + 16, 0, 0);
}

static void
do_api_interior(void *arg)
{
	char *volatile p = malloc(3 * OM_PAGE_SIZE);

	(void)arg;
	free(p + OM_PAGE_SIZE);
}

static void
do_api_double(void *arg)
{
	char *volatile p = malloc(5 * OM_PAGE_SIZE);

	(void)arg;
	free(p);
	free(p);
}

START_TEST(bogus_pointers)
{
	struct child c;
	char want[64];

	unit_init();
	unit_run(do_bogus, NULL, &c);
	ck_assert_fatal(&c, "malloc", "bogus pointer (double free?)");
	unit_run(do_api_interior, NULL, &c);
	ck_assert_fatal(&c, "free", "bogus pointer (double free?)");
	unit_run(do_api_double, NULL, &c);
	ck_assert_fatal(&c, "free", "bogus pointer (double free?)");
	/* The pointer is printed. */
	snprintf(want, sizeof(want), "(double free?) 0x");
	ck_assert_ptr_nonnull(strstr(c.out, want));
}
END_TEST

/* Write byte *arg of a 5000-byte block (two pages) and free it. */
static void
do_region_overrun(void *arg)
{
	char *volatile p = malloc(5000);

	((volatile char *)p)[*(const size_t *)arg] = 'x';
	free(p);
}

static void
do_guard_overrun(void *arg)
{
	struct dir_info *d = unit_pool();
	char *p = om_region_alloc(d, 2 * OM_PAGE_SIZE, 0, 0, NULL);

	(void)arg;
	((volatile char *)p)[2 * OM_PAGE_SIZE] = 'x';
}

START_TEST(region_canary_and_guard)
{
	/* The first byte past the size, and the last of the second page,
	 * the canary's last. */
	static const size_t at[] = { 5000, 2 * OM_PAGE_SIZE - 1 };
	struct child c;
	unsigned int i;

	unit_init();
	for (i = 0; i < 2; i++) {
		unit_run(do_region_overrun, (void *)&at[i], &c);
		if (mopts.opt.chunk_canaries)
			ck_assert_fatal(&c, "free", "region canary corrupted");
		else
			ck_assert_exited_ok(&c);
	}
	if (mopts.guard) {
		unit_run(do_guard_overrun, NULL, &c);
		ck_assert_msg(unit_signalled(&c, SIGSEGV),
		    "guard page did not fault: status 0x%x", c.status);
	}
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("region");
	TCase *t = tcase_create("region");

	tcase_add_test(t, table_grow_and_delete);
	tcase_add_test(t, table_first_in_pool_pages);
	tcase_add_test(t, table_dense_delete_all);
	tcase_add_test(t, table_reinsert);
	tcase_add_test(t, find_absent);
	tcase_add_test(t, shifted_medium);
	tcase_add_test(t, api_shifted_medium);
	tcase_add_test(t, realloc_within_page);
	tcase_add_test(t, api_realloc_within_page);
	tcase_add_test(t, api_realloc_keeps_usable);
	tcase_add_test(t, alignments);
	tcase_add_test(t, aligned_reuse);
	tcase_add_test(t, api_alignments);
	tcase_add_test(t, zeroed_on_reuse);
	tcase_add_test(t, accounting);
	tcase_add_test(t, realloc_in_place);
	tcase_add_test(t, realloc_remaps_the_last_grown);
	tcase_add_test(t, realloc_copies_the_last_grown_by_much);
	tcase_add_test(t, cut_block_rejoins_its_rest);
	tcase_add_test(t, realloc_guarded);
	tcase_add_test(t, realloc_guarded_locked);
	tcase_add_test(t, realloc_copies_unlocked);
	tcase_add_test(t, realloc_free_during_copy);
	tcase_add_test(t, regrowth_reuses_pages);
	tcase_add_test(t, big_buffer_regrows_in_its_pages);
	tcase_add_test(t, bogus_pointers);
	tcase_add_test(t, region_canary_and_guard);
	suite_add_tcase(s, t);
	return unit_main(s);
}
