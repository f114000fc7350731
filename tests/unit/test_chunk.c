/*
 * test_chunk.c - chunk.c: size classes, slot index, random slots, the
 * delayed-free ring, junk and canaries.
 */
#include "unit.h"

#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static void *
chunk_get(struct dir_info *d, size_t sz)
{
	return om_chunk_alloc(d, sz, om_bucket_of(sz), NULL);
}

static void
chunk_put(struct dir_info *d, void *p)
{
	struct region_info *r = om_region_find(d, p);

	if (r == NULL || !OM_REGION_IS_CHUNK(r))
		abort();
	om_chunk_free(d, r, p, 0, 0);
}

static struct chunk_info *
info_of(struct dir_info *d, const void *p)
{
	struct region_info *r = om_region_find(d, p);

	return r != NULL && OM_REGION_IS_CHUNK(r) ? om_region_chunk(r) : NULL;
}

START_TEST(bucket_table)
{
	unsigned int b;
	size_t sz;

	unit_init();
	ck_assert_uint_eq(om_bucket_size[OM_NBUCKETS - 1], OM_MAXCHUNK);
	for (b = 1; b < OM_NBUCKETS; b++) {
		ck_assert_uint_eq(om_bucket_size[b] % OM_MINSIZE, 0);
		if (b > 1)
			ck_assert_uint_gt(om_bucket_size[b],
			    om_bucket_size[b - 1]);
	}
	/* 16-byte steps to 256; above, each class the largest multiple of
	 * 16 that a page holds as many times, and every such size a class:
	 * no slot takes more of its page than it needs. */
	for (b = 1; b <= 16; b++)
		ck_assert_uint_eq(om_bucket_size[b], b * OM_MINSIZE);
	for (b = 17; b < OM_NBUCKETS; b++) {
		unsigned int size = om_bucket_size[b];
		size_t n = OM_PAGE_SIZE / size;

		ck_assert_uint_lt(OM_PAGE_SIZE / (size + OM_MINSIZE), n);
		ck_assert_uint_eq(OM_PAGE_SIZE / om_bucket_size[b - 1], n + 1);
	}
	/* Every size maps to the smallest bucket that holds it. */
	for (sz = 1; sz <= OM_MAXCHUNK; sz++) {
		b = om_bucket_of(sz);
		if (b < 1 || b >= OM_NBUCKETS || om_bucket_size[b] < sz ||
		    (b > 1 && om_bucket_size[b - 1] >= sz))
			break;
	}
	ck_assert_msg(sz > OM_MAXCHUNK, "size %zu: bucket %u of %u bytes, "
	    "not the smallest that holds it", sz, b,
	    b < OM_NBUCKETS ? om_bucket_size[b] : 0);
}
END_TEST

START_TEST(bucket_geometry)
{
	unsigned int b;

	unit_init();
	for (b = 0; b < OM_NBUCKETS; b++) {
		ck_assert_uint_eq(mopts.bucket_total[b],
		    OM_PAGE_SIZE / om_bucket_size[b]);
		ck_assert_uint_le(mopts.bucket_total[b], OM_MAXSLOTS);
		ck_assert_uint_ge(mopts.info_size[b],
		    sizeof(struct chunk_info));
		ck_assert_uint_eq(mopts.info_size[b] % 16, 0);
	}
}
END_TEST

static void
fake_info(struct chunk_info *info, unsigned int b)
{
	memset(info, 0, sizeof(*info));
	info->page = (uintptr_t)0x7f0000000000ULL;
	info->bucket = (uint16_t)b;
	info->size = om_bucket_size[b];
	info->total = mopts.bucket_total[b];
	info->recip = mopts.bucket_recip[b];
}

START_TEST(index_exact)
{
	struct chunk_info info;
	unsigned int b, s, off, got = 0;

	unit_init();
	for (b = 0; b < OM_NBUCKETS; b++) {
		fake_info(&info, b);
		for (s = 0; s < info.total; s++) {
			got = om_chunk_index(NULL, &info,
			    (void *)(info.page + (uintptr_t)s * info.size));
			if (got != s)
				break;
		}
		ck_assert_msg(s == info.total, "bucket %u: slot %u has index "
		    "%u", info.size, s, got);
		/* The reciprocal divides every offset of the page exactly,
		 * so no interior offset can pass for a slot start. */
		for (off = 0; off < OM_PAGE_SIZE; off++)
			if (((uint64_t)off * info.recip >> 32) !=
			    off / info.size)
				break;
		ck_assert_msg(off == OM_PAGE_SIZE, "bucket %u offset %u",
		    info.size, off);
	}
}
END_TEST

struct bad_index {
	unsigned int bucket;
	uint32_t off;
};

static void
do_bad_index(void *arg)
{
	struct bad_index *a = arg;
	struct chunk_info info;

	fake_info(&info, a->bucket);
	om_chunk_index(NULL, &info, (void *)(info.page + a->off));
}

START_TEST(index_fatal)
{
	struct child c;
	struct bad_index a;
	unsigned int b, k;

	unit_init();
	for (b = 0; b < OM_NBUCKETS; b++) {
		unsigned int size = om_bucket_size[b];
		uint32_t offs[3] = { size + 1, size + size / 2,
			(uint32_t)mopts.bucket_total[b] * size };

		for (k = 0; k < 3; k++) {
			a.bucket = b;
			a.off = offs[k];
			unit_run(do_bad_index, &a, &c);
			ck_assert_fatal(&c, "malloc", "modified chunk-pointer");
		}
	}
}
END_TEST

START_TEST(random_slots)
{
	unsigned int seen[64] = { 0 }, distinct = 0, i, inorder = 1;
	unsigned int slots[16];

	/* The first chunk of a fresh pool lands in a random slot. */
	for (i = 0; i < 12; i++) {
		struct dir_info *d = unit_pool();
		char *p = chunk_get(d, 64);
		unsigned int slot;

		ck_assert_ptr_nonnull(p);
		slot = (unsigned int)(((uintptr_t)p & OM_PAGE_MASK) / 64);
		if (seen[slot]++ == 0)
			distinct++;
	}
	ck_assert_uint_ge(distinct, 2);

	/* And successive chunks of one page are not handed out in order. */
	{
		struct dir_info *d = unit_pool();

		for (i = 0; i < 16; i++) {
			char *p = chunk_get(d, 64);
			ck_assert_ptr_nonnull(p);
			slots[i] = (unsigned int)(((uintptr_t)p &
			    OM_PAGE_MASK) / 64);
			if (i > 0 && slots[i] != slots[i - 1] + 1)
				inorder = 0;
		}
		ck_assert_msg(!inorder, "slots handed out in address order");
	}
}
END_TEST

/*
 * The owner hint of a chunk page names its pool and its bucket, that of a
 * page region its pool alone: free() reads the pool to go straight to the
 * owner, and the bucket to ask early for the lines its junk goes to.
 */
START_TEST(owner_hint_names_bucket)
{
	struct dir_info *d = unit_pool();
	const size_t sizes[] = { 16, 64, 100, 1000, OM_MAXCHUNK };
	unsigned int i, h;
	char *p;

	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		p = chunk_get(d, sizes[i]);
		ck_assert_ptr_nonnull(p);
		h = om_region_owner_hint(p);
		ck_assert_uint_eq(h & OM_HINT_POOL, d->index + 1);
		ck_assert_uint_eq(h >> OM_HINT_BUCKET_SHIFT,
		    om_bucket_of(sizes[i]) + 1);
	}
	p = om_region_alloc(d, 3 * OM_PAGE_SIZE, 0, 0, NULL);
	ck_assert_ptr_nonnull(p);
	ck_assert_uint_eq(om_region_owner_hint(p), d->index + 1);
}
END_TEST

START_TEST(delayed_not_reused)
{
	struct dir_info *d = unit_pool();
	char *p = chunk_get(d, 32), *q;
	unsigned int i, found = 0;

	ck_assert_ptr_nonnull(p);
	chunk_put(d, p);
	if (d->junk)
		for (i = 0; i < 32; i++)
			ck_assert_uint_eq((uint8_t)p[i], OM_JUNK_FREE);
	/* Nothing is freed meanwhile, so p stays in the ring. */
	for (i = 0; i < 300; i++) {
		q = chunk_get(d, 32);
		ck_assert_ptr_nonnull(q);
		ck_assert_ptr_ne(q, p);
	}
	/* Out of the ring, its slot is free again and is found. */
	om_chunk_flush_delayed(d);
	for (i = 0; i < 400 && !found; i++)
		found = chunk_get(d, 32) == p;
	ck_assert_msg(found, "a flushed slot was never reused");
}
END_TEST

START_TEST(api_free_then_malloc)
{
	unsigned int i;

	for (i = 0; i < 200; i++) {
		void *volatile p = malloc(48);
		void *volatile q;

		ck_assert_ptr_nonnull(p);
		free(p);
		q = malloc(48);
		ck_assert_ptr_ne(q, p);
		free(q);
	}
}
END_TEST

static void
do_api_double_free(void *arg)
{
	/* volatile: the compiler may not pair the calls away. */
	char *volatile p = malloc(40);

	(void)arg;
	free(p);
	free(p);
}

static void
do_ring_double_free(void *arg)
{
	struct dir_info *d = unit_pool();
	char *p = chunk_get(d, 100);

	(void)arg;
	chunk_put(d, p);
	chunk_put(d, p);
}

static void
do_late_double_free(void *arg)
{
	struct dir_info *d = unit_pool();
	char *p = chunk_get(d, 100);

	(void)arg;
	chunk_put(d, p);
	om_chunk_flush_delayed(d);
	chunk_put(d, p);
}

START_TEST(double_free)
{
	struct child c;

	unit_init();
	unit_run(do_api_double_free, NULL, &c);
	ck_assert_fatal(&c, "free", "double free");
	unit_run(do_ring_double_free, NULL, &c);
	ck_assert_fatal(&c, "malloc", "double free");
	unit_run(do_late_double_free, NULL, &c);
	ck_assert_fatal(&c, "malloc", "double free");
}
END_TEST

static void
do_write_after_free(void *arg)
{
	struct dir_info *d = unit_pool();
	char *p = chunk_get(d, 64);

	(void)arg;
	chunk_put(d, p);
	p[0] = 'x';
	om_chunk_flush_delayed(d);
}

/* The same, through the last of the four junk words of a 1 KiB chunk. */
static void
do_write_after_free_last_word(void *arg)
{
	struct dir_info *d = unit_pool();
	char *p = chunk_get(d, 1024);

	(void)arg;
	chunk_put(d, p);
	p[mopts.junk_off[om_bucket_of(1024)][3] + 7] = 'x';
	om_chunk_flush_delayed(d);
}

/* A table entry whose chunk_info describes another page is corrupt. */
static void
do_table_corrupt(void *arg)
{
	char *volatile p = malloc(40);
	struct dir_info *d = mopts.pools[om_self & mopts.pool_mask];
	struct region_info *r;

	(void)arg;
	om_lock(d);
	r = om_region_find(d, p);
	om_unlock(d);
	om_region_chunk(r)->page += OM_PAGE_SIZE;
	free(p);
}

START_TEST(table_entry_checked)
{
	struct child c;

	unit_init();
	unit_run(do_table_corrupt, NULL, &c);
	ck_assert_fatal(&c, "free", "region table corrupted");
}
END_TEST

START_TEST(write_after_free)
{
	struct child c;

	unit_init();
	if (mopts.opt.junk == 0)
		return;
	unit_run(do_write_after_free, NULL, &c);
	ck_assert_fatal(&c, "malloc", "write after free");
	unit_run(do_write_after_free_last_word, NULL, &c);
	ck_assert_fatal(&c, "malloc", "write after free");
}
END_TEST

/*
 * What free leaves in a chunk of every size: at level 1 the first word
 * and three more spread over it (all of a chunk of four words or less),
 * the rest untouched; under J2 and F every byte.
 */
START_TEST(junk_words)
{
	struct dir_info *d = unit_pool();
	unsigned int b, i;

	if (d->junk == 0)
		return;
	for (b = 1; b < OM_NBUCKETS; b++) {
		size_t size = om_bucket_size[b], words = size / 8, n = 0;
		uint64_t *p = chunk_get(d, size);

		ck_assert_ptr_nonnull(p);
		memset(p, 0x11, size);
		chunk_put(d, p);
		for (i = 0; i < words; i++) {
			if (p[i] == OM_JUNK_FREE64)
				n++;
			else if (p[i] != 0x1111111111111111ULL)
				break;
		}
		ck_assert_msg(i == words, "size %zu: word %u is %#llx, neither "
		    "junk nor as written", size, i, (unsigned long long)p[i]);
		if (mopts.junk_validate_full) {
			ck_assert_uint_eq(n, words);
			continue;
		}
		ck_assert_uint_eq(p[0], OM_JUNK_FREE64);
		ck_assert_uint_eq(n, words < 4 ? words : 4);
		ck_assert_uint_eq(p[mopts.junk_off[b][3] / 8], OM_JUNK_FREE64);
		ck_assert_uint_ge(mopts.junk_off[b][3], size / 2);
	}
}
END_TEST

/* The places of the junk words, as this process drew them. */
static void
print_junk(void)
{
	unsigned int b, i;

	free(malloc(1));
	for (b = 0; b < OM_NBUCKETS; b++)
		for (i = 0; i < 4; i++)
			printf("%u ", mopts.junk_off[b][i]);
	for (i = 0; i < 4; i++)
		printf("%u ", mopts.page_junk[i]);
	printf("\n");
}

/*
 * Word 0 and one word of each later quarter, of every chunk and of a
 * page run's first page; which word of each quarter, drawn by each
 * process (four runs of this program do not all agree).
 */
START_TEST(junk_words_drawn)
{
	char self[512], cmd[600], out[4][2048];
	unsigned int b, i, k, words, lo, hi;
	ssize_t n;

	unit_init();
	for (b = 1; b < OM_NBUCKETS; b++) {
		words = om_bucket_size[b] / 8;
		ck_assert_uint_eq(mopts.junk_off[b][0], 0);
		for (i = 1; i < 4; i++) {
			lo = i * words / 4;
			hi = (i + 1) * words / 4;
			ck_assert_uint_ge(mopts.junk_off[b][i] / 8, lo);
			ck_assert_uint_le(mopts.junk_off[b][i] / 8,
			    hi > lo ? hi - 1 : lo);
		}
	}
	for (i = 1; i < 4; i++)
		ck_assert_uint_eq(mopts.page_junk[i] / (OM_PAGE_SIZE / 32), i);
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	ck_assert_int_gt(n, 0);
	self[n] = '\0';
	snprintf(cmd, sizeof(cmd), "OM_PRINT_JUNK=1 '%s'", self);
	for (k = 0; k < 4; k++) {
		FILE *f = popen(cmd, "r");

		ck_assert_ptr_nonnull(f);
		ck_assert_ptr_nonnull(fgets(out[k], sizeof(out[k]), f));
		ck_assert_int_eq(pclose(f), 0);
	}
	ck_assert_msg(strcmp(out[0], out[1]) != 0 ||
	    strcmp(out[0], out[2]) != 0 || strcmp(out[0], out[3]) != 0,
	    "four processes placed their junk words alike: %s", out[0]);
}
END_TEST

/*
 * A new chunk page starts with every slot junked, so that the check at
 * reuse holds for slots never handed out.  At level 1 a page of slots of
 * 128 bytes or more gets just the words that check reads (a fresh page's
 * other bytes stay zero); smaller slots, and J2 and F, get the whole page.
 */
START_TEST(new_page_junk)
{
	static const size_t sizes[] = { 64, 128, 512, 2048 };
	unsigned int k, i, j;

	if (unit_pool()->junk == 0)
		return;
	om_cache_depot_trim();
	for (k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
		struct dir_info *d = unit_pool();
		size_t size = sizes[k], words = size / 8;
		unsigned int b = om_bucket_of(size);
		unsigned int total = mopts.bucket_total[b];
		char *p = chunk_get(d, size), *page;
		int sparse = !mopts.junk_validate_full && total <= 32;

		ck_assert_ptr_nonnull(p);
		page = (char *)((uintptr_t)p & ~(uintptr_t)OM_PAGE_MASK);
		for (i = 0; i < total; i++) {
			const uint64_t *s = (const uint64_t *)(const void *)
			    (page + i * size);
			unsigned int junk = 0;

			if ((char *)s == p)
				continue;
			ck_assert(om_junk_chunk_ok(s, b));
			for (j = 0; j < words; j++)
				junk += s[j] == OM_JUNK_FREE64;
			ck_assert_uint_eq(junk, sparse ? 4 : words);
		}
	}
}
END_TEST

/* Write byte *arg of a 20-byte block (its slot is 32) and free it. */
static void
do_overrun(void *arg)
{
	char *volatile p = malloc(20);

	((volatile char *)p)[*(const int *)arg] = 'x';
	free(p);
}

START_TEST(canary)
{
	/* The first byte past the size, and the slot's last, which the
	 * word-wise check reaches last. */
	static const int at[] = { 20, 31 };
	struct child c;
	void *volatile p = malloc(20);
	unsigned int i;

	ck_assert_uint_eq(malloc_usable_size(p),
	    mopts.opt.chunk_canaries ? 20 : 32);
	free(p);
	for (i = 0; i < 2; i++) {
		unit_run(do_overrun, (void *)&at[i], &c);
		if (mopts.opt.chunk_canaries)
			ck_assert_fatal(&c, "free", "chunk canary corrupted");
		else
			ck_assert_exited_ok(&c);
	}
}
END_TEST

/* What om_bytes_are gets wrong about n bytes of 0xa5 at buf + off, among
 * bytes of 0x11: it must see them, and any one of them changed.  NULL if
 * nothing. */
static const char *
bytes_are_wrong(unsigned char *buf, size_t len, size_t off, size_t n)
{
	static char why[64];
	unsigned char *p = buf + off;
	size_t k;

	memset(buf, 0x11, len);
	memset(p, 0xa5, n);
	if (!om_bytes_are(p, 0xa5, n)) {
		snprintf(why, sizeof(why), "off %zu n %zu: not seen", off, n);
		return why;
	}
	for (k = 0; k < n; k++) {
		p[k] ^= 0x40;
		if (om_bytes_are(p, 0xa5, n)) {
			snprintf(why, sizeof(why), "off %zu n %zu byte %zu",
			    off, n, k);
			return why;
		}
		p[k] ^= 0x40;
	}
	return NULL;
}

/* The canary check: any one byte changed, at any alignment and length,
 * is seen; bytes just outside the range are not looked at. */
START_TEST(bytes_are_every_position)
{
	static uint64_t words[24];
	const char *why = NULL;
	size_t off, n;

	for (off = 1; off < 17 && why == NULL; off++)
		for (n = 0; n <= 100 && why == NULL; n++)
			why = bytes_are_wrong((unsigned char *)words,
			    sizeof(words), off, n);
	ck_assert_msg(why == NULL, "%s", why);
}
END_TEST

static void
do_corrupt_info(void *arg)
{
	struct dir_info *d = unit_pool();
	char *p = chunk_get(d, 64);

	(void)arg;
	info_of(d, p)->canary ^= 1;
	chunk_put(d, p);
}

START_TEST(info_canary)
{
	struct child c;
	struct dir_info *d = unit_pool();
	char *p = chunk_get(d, 64);
	struct chunk_info *info = info_of(d, p);

	ck_assert_ptr_nonnull(info);
	ck_assert_uint_eq(info->canary,
	    (uint32_t)(mopts.canary ^ (uintptr_t)info));
	ck_assert_uint_eq(info->page, (uintptr_t)p & ~(uintptr_t)OM_PAGE_MASK);
	ck_assert_uint_eq(info->size, 64);
	unit_run(do_corrupt_info, NULL, &c);
	ck_assert_fatal(&c, "malloc", "chunk info corrupted");
}
END_TEST

static void
do_touch_zero(void *arg)
{
	*(volatile char *)arg = 1;
}

START_TEST(malloc_zero)
{
	struct child c;
	char *volatile p = malloc(0);
	char *volatile q = malloc(0);

	ck_assert_ptr_nonnull(p);
	ck_assert_ptr_nonnull(q);
	ck_assert_ptr_ne(p, q);
	unit_run(do_touch_zero, p, &c);
	ck_assert_msg(unit_signalled(&c, SIGSEGV), "status 0x%x", c.status);
	free(p);
	free(q);
}
END_TEST

/*
 * The chunk_info records of all buckets are carved one after another from
 * shared memory, not a page each: first from what the pool's own pages
 * leave after its region table (a few hundred bytes to 4 KiB, by the
 * pool's random offset), then from pages mapped in batches.  In a new
 * pool the first chunk pages of five size classes have their records in
 * the pool's pages while they fit, each after the last, and the rest one
 * after another in one mapped page.
 */
START_TEST(info_records_shared)
{
	static const size_t sizes[] = { 16, 64, 256, 1024, 2048 };
	struct dir_info *d = unit_pool();
	char *own = (char *)d + OM_POOL_BYTES, *next = own;
	uintptr_t end = ((uintptr_t)d & ~(uintptr_t)OM_PAGE_MASK) +
	    OM_PAGEROUND(OM_POOL_BYTES) + OM_PAGE_SIZE;
	struct chunk_info *last = NULL;
	unsigned int i, mapped = 0;

	/* Five classes' first pages, then pages of 2048-byte slots (two a
	 * page) until the records have left the pool's pages. */
	for (i = 0; i < 1024 && mapped < 2; i++) {
		size_t sz = i < 5 ? sizes[i] : 2048;
		struct chunk_info *info = info_of(d, chunk_get(d, sz));
		size_t rec = mopts.info_size[om_bucket_of(sz)];

		ck_assert_ptr_nonnull(info);
		if (info == last)
			continue;	/* the last page's second slot */
		last = info;
		if (!mapped && (uintptr_t)next + rec <= end) {
			ck_assert_ptr_eq(info, next);
		} else if (!mapped) {
			/* The first record the pool's pages cannot hold:
			 * the start of a batch of its own. */
			ck_assert((uintptr_t)info + rec <= (uintptr_t)d ||
			    (uintptr_t)info >= end);
			ck_assert_uint_eq((uintptr_t)info & OM_PAGE_MASK, 0);
			mapped = 1;
		} else {
			ck_assert_ptr_eq(info, next);
			mapped = 2;
		}
		next = (char *)info + rec;
	}
	ck_assert_uint_eq(mapped, 2);
	/* Whatever the offset, the pool's pages held the first of them,
	 * unless it is too big for any (D's records hold callers). */
	if (mopts.info_size[om_bucket_of(sizes[0])] <= end - (uintptr_t)own)
		ck_assert_ptr_eq(info_of(d, chunk_get(d, sizes[0])), own);
}
END_TEST

/*
 * A pool with many chunk pages maps their records in batches of growing
 * length: in the order they are made, each record follows the last one
 * across page boundaries, and a new mapping starts only a few times, not
 * once per page of records.
 */
START_TEST(info_records_batched)
{
	enum { PAGES = 600 };
	static struct chunk_info *infos[PAGES];
	struct dir_info *d = unit_pool();
	size_t rec = mopts.info_size[om_bucket_of(2048)];
	unsigned int n = 0, breaks = 0, i, j;

	/* Two 2048-byte slots a page: a new page every two or so. */
	while (n < PAGES) {
		struct chunk_info *info = info_of(d, chunk_get(d, 2048));

		if (info == NULL)
			break;
		for (j = 0; j < n && infos[j] != info; j++)
			continue;
		if (j == n)
			infos[n++] = info;
	}
	ck_assert_msg(n == PAGES, "no chunk page after %u", n);
	for (i = 1; i < n; i++)
		if ((char *)infos[i] != (char *)infos[i - 1] + rec)
			breaks++;
	/* The pool's own pages, batches of 1, 2, 4 and 8 pages, then 16 at
	 * a time; a mapping per page would break at each of the 8 pages or
	 * more. */
	ck_assert_uint_ge(PAGES * rec / OM_PAGE_SIZE, 8);
	ck_assert_msg(breaks <= 5 + PAGES * rec / (16 * OM_PAGE_SIZE),
	    "%u breaks for %u records of %zu bytes", breaks, n, rec);
}
END_TEST

START_TEST(empty_page_released)
{
	struct dir_info *d = unit_pool();
	char *p[4];
	size_t regions, cached;
	unsigned int i;

	/* 2048-byte chunks: two per page, so four fill two pages. */
	for (i = 0; i < 4; i++) {
		p[i] = chunk_get(d, 2048);
		ck_assert_ptr_nonnull(p[i]);
	}
	regions = d->regions_total - d->regions_free;
	cached = d->cache_pages;
	ck_assert_uint_eq(d->chunk_pages_avail[om_bucket_of(2048)], 0);
	for (i = 0; i < 4; i++)
		chunk_put(d, p[i]);
	om_chunk_flush_delayed(d);
	/* One empty page is kept, the other goes back to the cache. */
	ck_assert_uint_eq(d->chunk_pages_avail[om_bucket_of(2048)], 1);
	ck_assert_uint_eq(d->regions_total - d->regions_free, regions - 1);
	ck_assert_uint_eq(d->cache_pages, cached + (d->cache_max > 0));
	ck_assert_uint_eq(d->inuse, 0);
}
END_TEST

/* Walk bucket b's lists: each page links back to what points at it, sits
 * on the list it says, has a free slot; the bits and counts agree.
 * Returns what is wrong, or NULL. */
static const char *
lists_wrong(struct dir_info *d, unsigned int b)
{
	static char why[160];
	unsigned int l, pages = 0;

	for (l = 0; l < OM_CHUNK_LISTS; l++) {
		struct chunk_info **link = &d->chunk_dir[b][l], *c;

		if (!!(d->chunk_lists[b] & (1u << l)) != (*link != NULL)) {
			snprintf(why, sizeof(why), "list %u: bit %u, head %p",
			    l, !!(d->chunk_lists[b] & (1u << l)),
			    (void *)*link);
			return why;
		}
		for (c = *link; c != NULL; link = &c->next, c = c->next) {
			if (c->pprev != link || c->list != l ||
			    c->onlist != 1 || c->free == 0 || c->bucket != b) {
				snprintf(why, sizeof(why), "page %u of list %u "
				    "of bucket %u: pprev %p, link %p, list %u, "
				    "onlist %u, free %u, bucket %u", pages, l,
				    b, (void *)c->pprev, (void *)link, c->list,
				    c->onlist, c->free, c->bucket);
				return why;
			}
			pages++;
		}
	}
	if (pages != d->chunk_pages_avail[b]) {
		snprintf(why, sizeof(why), "%u pages on the lists, %u counted",
		    pages, (unsigned int)d->chunk_pages_avail[b]);
		return why;
	}
	return NULL;
}

/* A held slot's page is on a list exactly when it has a free slot. */
static const char *
held_wrong(struct dir_info *d, char **held, unsigned int n)
{
	static char why[96];
	unsigned int i;

	for (i = 0; i < n; i++) {
		struct chunk_info *c = info_of(d, held[i]);

		if (c == NULL || c->onlist != (c->free > 0)) {
			snprintf(why, sizeof(why), "slot %p: info %p, "
			    "onlist %u, free %u", (void *)held[i], (void *)c,
			    c ? c->onlist : 0, c ? c->free : 0);
			return why;
		}
	}
	return NULL;
}

START_TEST(lists_linked)
{
	struct dir_info *d = unit_pool();
	unsigned int b = om_bucket_of(1024), i, n = 0, step;
	uint32_t x = 12345;
	char *held[64];
	const char *why = NULL;

	/* Four slots a page: pages fill and come back onto the lists all
	 * the time, from the head, the middle and the end of a list. */
	for (step = 0; step < 4000; step++) {
		x = x * 1103515245u + 12345u;
		if (n < 64 && (n == 0 || (x >> 16) % 3 != 0)) {
			held[n] = chunk_get(d, 1024);
			if (held[n] == NULL) {
				why = "chunk_get failed";
				break;
			}
			n++;
		} else {
			i = (x >> 8) % n;
			chunk_put(d, held[i]);
			held[i] = held[--n];
		}
		if (step % 8 == 0)
			om_chunk_flush_delayed(d);
		if ((why = lists_wrong(d, b)) != NULL ||
		    (why = held_wrong(d, held, n)) != NULL)
			break;
	}
	ck_assert_msg(why == NULL, "step %u: %s", step, why);
	while (n > 0)
		chunk_put(d, held[--n]);
	om_chunk_flush_delayed(d);
	why = lists_wrong(d, b);
	ck_assert_msg(why == NULL, "%s", why);
	ck_assert_uint_eq(d->chunk_pages_avail[b], 1);
}
END_TEST

START_TEST(inuse_counts)
{
	struct dir_info *d = unit_pool();
	char *p = chunk_get(d, 100), *q = chunk_get(d, 1000);

	ck_assert_uint_eq(d->inuse, 112 + 1024);
	chunk_put(d, p);
	ck_assert_uint_eq(d->inuse, 1024);
	chunk_put(d, q);
	ck_assert_uint_eq(d->inuse, 0);
}
END_TEST

START_TEST(junk_new)
{
	struct dir_info *d = unit_pool();
	unsigned char *p = chunk_get(d, 200);
	unsigned int i;

	if (d->junk < 2)
		return;
	for (i = 0; i < 200; i++)
		ck_assert_uint_eq(p[i], OM_JUNK_NEW);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("chunk");
	TCase *t = tcase_create("chunk");

	if (getenv("OM_PRINT_JUNK") != NULL) {
		print_junk();
		return 0;
	}

	tcase_add_test(t, bucket_table);
	tcase_add_test(t, bucket_geometry);
	tcase_add_test(t, index_exact);
	tcase_add_test(t, index_fatal);
	tcase_add_test(t, random_slots);
	tcase_add_test(t, delayed_not_reused);
	tcase_add_test(t, api_free_then_malloc);
	tcase_add_test(t, double_free);
	tcase_add_test(t, write_after_free);
	tcase_add_test(t, junk_words);
	tcase_add_test(t, junk_words_drawn);
	tcase_add_test(t, new_page_junk);
	tcase_add_test(t, canary);
	tcase_add_test(t, bytes_are_every_position);
	tcase_add_test(t, info_canary);
	tcase_add_test(t, malloc_zero);
	tcase_add_test(t, empty_page_released);
	tcase_add_test(t, lists_linked);
	tcase_add_test(t, info_records_shared);
	tcase_add_test(t, info_records_batched);
	tcase_add_test(t, inuse_counts);
	tcase_add_test(t, junk_new);
	tcase_add_test(t, table_entry_checked);
	tcase_add_test(t, owner_hint_names_bucket);
	suite_add_tcase(s, t);
	return unit_main(s);
}
