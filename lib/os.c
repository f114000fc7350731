/*
 * os.c - the only caller of mmap, mremap, munmap, mprotect and madvise
 * (and process_madvise, for several ranges at once).
 *
 * Every function here leaves errno as it found it: the allocator sets
 * ENOMEM itself when an allocation fails, and a successful malloc must not
 * change errno.  System calls are counted (relaxed atomics) for the dump.
 * Guard pages use MADV_GUARD_INSTALL where the kernel has it (Linux 6.13+),
 * which costs no extra mapping, and fall back to mprotect(PROT_NONE).
 */
#include "internal.h"

#include <fcntl.h>
#include <linux/futex.h>
#include <linux/membarrier.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#ifndef MADV_GUARD_INSTALL
#define MADV_GUARD_INSTALL 102
#define MADV_GUARD_REMOVE 103
#endif

#ifndef PIDFD_SELF
#define PIDFD_SELF (-10001)	/* the calling process, to newer kernels */
#endif

static struct om_os_counts counts;
static int release_batched = 1;	/* cleared once the kernel refuses it */
static int guard_madvise = 1;	/* cleared once the kernel refuses it */
static int guard_marked;	/* a marker was installed: some may remain */
static int guard_protected;	/* a guard was made with mprotect */

#if OM_FAULT_INJECTION
static long fault_mmap;		/* > 0: fail that many more; < 0: fail all */

OM_EXPORT void omalloc_fault_mmap(long n);

void
omalloc_fault_mmap(long n)
{
	__atomic_store_n(&fault_mmap, n, __ATOMIC_SEQ_CST);
}

static int
fault(void)
{
	long n = __atomic_load_n(&fault_mmap, __ATOMIC_SEQ_CST);

	if (n == 0)
		return 0;
	if (n > 0)
		__atomic_fetch_sub(&fault_mmap, 1, __ATOMIC_SEQ_CST);
	return 1;
}
#else
#define fault() 0
#endif

#define COUNT(field) __atomic_fetch_add(&counts.field, 1, __ATOMIC_RELAXED)

/*
 * Mappings left to the program.  An munmap that takes pages out of the
 * middle of a mapping splits it in two, and a heap of many page runs
 * freed in scattered order splits its mappings by the tens of thousands:
 * up to vm.max_map_count, where the kernel refuses the split (see keep,
 * below), and refuses the program too, whose pthread_create needs a
 * mapping for the new stack and dlopen several, and omalloc itself a new
 * one for every large block no kept run fits.  So the process's mappings
 * (the lines of /proc/self/maps) are counted now and then, and from
 * three quarters of the limit on, freed ranges are released in place and
 * kept as if the kernel had refused them, until a count finds fewer than
 * five eighths: a quarter of the mappings stays the program's.
 *
 * Between counts, each call that may add a mapping (mmap, mremap, munmap,
 * mprotect) spends a credit: half the way from the last count to the
 * mark, at least MAPS_CREDIT_MIN, the other half left for what the
 * program maps itself.  While holding back, a count comes every
 * MAPS_HOLD_FIRST calls, twice as many each time it is still high, up to
 * MAPS_HOLD_MAX.  A count reads about 0.3 us a mapping; a program that
 * never spends its first credit never counts.  One thread counts at a
 * time; the others go on as the last count decided.
 */
#define MAPS_LIMIT_DEFAULT 65530	/* vm.max_map_count's default */
#define MAPS_CREDIT_MIN	1024
#define MAPS_HOLD_FIRST	4096
#define MAPS_HOLD_MAX	65536

static struct {
	long credit;			/* calls left before the next count */
	long limit;			/* vm.max_map_count; 0: not read yet */
	long count;			/* mappings at the last count */
	long hold_every;		/* calls between counts, holding back */
	int hold;			/* release in place rather than unmap */
	int counting;			/* a thread is counting */
} maps = { .credit = MAPS_CREDIT_MIN };

/* The number in a /proc file of one number, or -1. */
static long
read_number(const char *path)
{
	char buf[32];
	long v = 0;
	ssize_t n;
	int fd, i;

	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0 || buf[0] < '0' || buf[0] > '9')
		return -1;
	for (i = 0; i < n && buf[i] >= '0' && buf[i] <= '9'; i++)
		v = v * 10 + (buf[i] - '0');
	return v;
}

/* The lines of /proc/self/maps, or -1 if it cannot be read. */
static long
count_mappings(void)
{
	char buf[4096];
	long lines = 0;
	ssize_t n, i;
	int fd;

	if ((fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC)) < 0)
		return -1;
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		for (i = 0; i < n; i++)
			lines += buf[i] == '\n';
	close(fd);
	return n < 0 ? -1 : lines;
}

/* Count the mappings and decide: unmap, or hold back. */
static void
maps_count(void)
{
	long n, high, low, credit, every, limit;
	int expect = 0, saved = errno;

	if (!__atomic_compare_exchange_n(&maps.counting, &expect, 1, 0,
	    __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
		return;
	if ((limit = maps.limit) == 0) {
		if ((limit = read_number("/proc/sys/vm/max_map_count")) <= 0)
			limit = MAPS_LIMIT_DEFAULT;
		__atomic_store_n(&maps.limit, limit, __ATOMIC_RELAXED);
	}
	high = limit - limit / 4;
	low = limit - limit * 3 / 8;
	n = count_mappings();
	if (n < 0) {
		/* No /proc: as the last count decided, asked again later. */
		credit = MAPS_HOLD_MAX;
	} else if (n >= high || (maps.hold && n >= low)) {
		every = !maps.hold ? MAPS_HOLD_FIRST :
		    maps.hold_every < MAPS_HOLD_MAX ? maps.hold_every * 2 :
		    MAPS_HOLD_MAX;
		maps.hold_every = credit = every;
		__atomic_store_n(&maps.hold, 1, __ATOMIC_RELAXED);
	} else {
		credit = (high - n) / 2 > MAPS_CREDIT_MIN ? (high - n) / 2 :
		    MAPS_CREDIT_MIN;
		__atomic_store_n(&maps.hold, 0, __ATOMIC_RELAXED);
	}
	if (n >= 0)
		__atomic_store_n(&maps.count, n, __ATOMIC_RELAXED);
	__atomic_store_n(&maps.credit, credit, __ATOMIC_RELAXED);
	__atomic_store_n(&maps.counting, 0, __ATOMIC_RELEASE);
	errno = saved;
}

/* A call that may add a mapping: 1 if freed ranges are to be released
 * in place for now rather than unmapped. */
static int
maps_spend(void)
{
	if (__atomic_sub_fetch(&maps.credit, 1, __ATOMIC_RELAXED) <= 0)
		maps_count();
	return __atomic_load_n(&maps.hold, __ATOMIC_RELAXED);
}

/* Count now, whatever credit is left: malloc_trim, before it unmaps
 * kept runs, and the tests.  Returns 1 if holding back. */
int
om_os_maps_recount(void)
{
	maps_count();
	return __atomic_load_n(&maps.hold, __ATOMIC_RELAXED);
}

/* Keep [p, p+len) out of core dumps (conceal memory). */
static void
dontdump(void *p, size_t len)
{
	COUNT(madvise);
	madvise(p, len, MADV_DONTDUMP);
}

static void *
map(void *hint, size_t len, int flags, int conceal)
{
	int saved = errno;
	void *p;

	if (fault())
		return NULL;
	maps_spend();
	COUNT(mmap);
	p = mmap(hint, len, PROT_READ | PROT_WRITE,
	    MAP_PRIVATE | MAP_ANONYMOUS | flags, -1, 0);
	if (p == MAP_FAILED) {
		errno = saved;
		return NULL;
	}
	if (conceal)
		dontdump(p, len);
	errno = saved;
	return p;
}

/* Map len bytes of fresh, zeroed, read-write memory; NULL on failure.
 * Runs released in place come first (see keep); not for conceal memory,
 * which would need a madvise of its own. */
void *
om_os_map(size_t len, int conceal)
{
	void *p;

	if (!conceal && (p = om_os_map_kept(len)) != NULL)
		return p;
	return map(NULL, len, 0, conceal);
}

/*
 * Map len bytes of fresh, zeroed, read-write memory that end at p, if
 * nothing is mapped there (MAP_FIXED_NOREPLACE): their start, p - len,
 * or NULL.  A kernel older than the flag (4.17) takes the address as a
 * hint and may map elsewhere; that mapping is undone.
 */
void *
om_os_map_below(void *p, size_t len)
{
	char *want = (char *)p - len;
	char *q;

	if ((uintptr_t)p < len + OM_PAGE_SIZE)
		return NULL;
	q = map(want, len, MAP_FIXED_NOREPLACE, 0);
	if (q == NULL || q == want)
		return q;
	om_os_unmap(q, len);
	return NULL;
}

/*
 * Reserve len bytes of address space: no access and no commit charge
 * until om_os_commit opens part of it.  NULL on failure.
 */
void *
om_os_reserve(size_t len)
{
	int saved = errno;
	void *p;

	if (fault())
		return NULL;
	maps_spend();
	COUNT(mmap);
	p = mmap(NULL, len, PROT_NONE,
	    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	errno = saved;
	return p == MAP_FAILED ? NULL : p;
}

/* Make [p, p+len) of a reservation zeroed read-write memory, kept out of
 * core dumps if conceal.  Returns 0 or -1. */
int
om_os_commit(void *p, size_t len, int conceal)
{
	int saved = errno;

	if (fault())
		return -1;
	if (om_os_protect(p, len, 1) != 0)
		return -1;
	if (conceal)
		dontdump(p, len);
	errno = saved;
	return 0;
}

/*
 * Grow the mapping [p, p+oldlen) to newlen bytes: in place when the pages
 * behind it are free, else moved elsewhere by the kernel, which moves the
 * page tables and copies nothing; the old range is then unmapped.  The
 * new pages are zero.  With to, moved there instead, onto pages we own,
 * whose old pages the kernel drops.  Returns the mapping's address, NULL
 * on failure (p untouched).  Counted with mmap.
 */
void *
om_os_remap(void *p, size_t oldlen, size_t newlen, void *to)
{
	int saved = errno;
	void *q;

	if (fault())
		return NULL;
	maps_spend();
	COUNT(mmap);
	q = to == NULL ? mremap(p, oldlen, newlen, MREMAP_MAYMOVE) :
	    mremap(p, oldlen, newlen, MREMAP_MAYMOVE | MREMAP_FIXED, to);
	errno = saved;
	return q == MAP_FAILED ? NULL : q;
}

/*
 * Ranges released in place.  An munmap that takes pages out of the middle
 * of a mapping splits it in two, and the kernel refuses that (ENOMEM) once
 * the process has vm.max_map_count mappings: a heap of many page-sized
 * blocks freed in scattered order gets there (every other 4 KiB block of
 * a GiB does).  The range is then released with MADV_DONTNEED instead,
 * which frees its pages but keeps the addresses (and, under strict
 * overcommit, the commit charge), and kept here: the pools take such runs
 * before they map anything (om_os_map, om_os_map_kept), since a new
 * mapping is what the kernel is refusing, and malloc_trim tries munmap on
 * each again (om_os_trim_kept).
 *
 * Runs wait in bins by length, each a stack of slots; bin 0 holds the
 * runs too long for the others.  The slots come in blocks of a page: the
 * first in .bss, the others the first page of a refused range each, as
 * they are needed (no new mapping either).  A slot index is stored plus
 * one, so that 0 is none and all starts zero.  A run that finds no slot
 * stays released and is counted as lost: its pages are free, only its
 * addresses are not given back.
 */
#define KEPT_PER_BLOCK	(OM_PAGE_SIZE / sizeof(struct kept_run))
#define KEPT_BLOCKS	4096
#define KEPT_BINS	64

struct kept_run {
	uintptr_t p;
	uint32_t npages;
	uint32_t next;			/* in its bin or the free list */
};

static struct {
	struct om_mutex mtx;
	unsigned int runs;		/* runs kept */
	size_t pages;			/* their pages */
	unsigned long refused;		/* munmap calls refused */
	unsigned long held;		/* releases held back (maps_spend) */
	unsigned long lost;		/* runs released but not kept */
	uint64_t bins;			/* bit b: bin b not empty */
	uint32_t bin[KEPT_BINS];	/* first slot of each bin */
	uint32_t free;			/* first slot of the free list */
	uint32_t used;			/* slots ever used */
	unsigned int blocks;		/* blocks beyond the first */
} kept;

/*
 * The slots' blocks apart from the counts, which every om_os_map reads:
 * defined after them, they come before them in memory (GCC emits a file's
 * variables last-defined first), and the counts share a page with the
 * other small variables rather than one with the depot's far end.
 */
static struct kept_run kept_first[KEPT_PER_BLOCK];
static struct kept_run *kept_block[KEPT_BLOCKS];

/* The counts are changed under the lock, and read without it (kept.runs
 * by om_os_map_kept, all by the dump): relaxed atomic stores. */
#define KEPT_ADD(v, n)	__atomic_store_n(&(v), (v) + (n), __ATOMIC_RELAXED)

static void
kept_lock(void)
{
	om_mutex_lock(&kept.mtx, om_owner());
}

static void
kept_unlock(void)
{
	om_mutex_unlock(&kept.mtx);
}

static struct kept_run *
kept_slot(uint32_t i)
{
	size_t b = (i - 1) / KEPT_PER_BLOCK;

	return (b == 0 ? kept_first : kept_block[b]) +
	    (i - 1) % KEPT_PER_BLOCK;
}

static unsigned int
kept_bin(size_t npages)
{
	return npages < KEPT_BINS ? (unsigned int)npages : 0;
}

/* Keep a run (kept locked); 0, or -1 when no slot is free. */
static int
kept_push(uintptr_t p, size_t npages)
{
	unsigned int b = kept_bin(npages);
	struct kept_run *e;
	uint32_t i;

	if (kept.free != 0) {
		i = kept.free;
		kept.free = kept_slot(i)->next;
	} else if (kept.used < (kept.blocks + 1) * KEPT_PER_BLOCK)
		i = ++kept.used;
	else
		return -1;
	e = kept_slot(i);
	e->p = p;
	e->npages = (uint32_t)npages;
	e->next = kept.bin[b];
	kept.bin[b] = i;
	kept.bins |= (uint64_t)1 << b;
	KEPT_ADD(kept.runs, 1);
	KEPT_ADD(kept.pages, npages);
	return 0;
}

/* Take out the run *link names, in bin b (kept locked). */
static struct kept_run
kept_unlink(unsigned int b, uint32_t *link)
{
	uint32_t i = *link;
	struct kept_run r = *kept_slot(i);

	*link = r.next;
	if (kept.bin[b] == 0)
		kept.bins &= ~((uint64_t)1 << b);
	kept_slot(i)->next = kept.free;
	kept.free = i;
	KEPT_ADD(kept.runs, -1);
	KEPT_ADD(kept.pages, -(size_t)r.npages);
	return r;
}

/*
 * The front npages of a kept run (kept locked), the rest kept: from the
 * bin of that length, else the shortest longer bin, else the first run
 * long enough in bin 0.  p is 0 if there is none.
 */
static struct kept_run
kept_take(size_t npages)
{
	struct kept_run r = { 0, 0, 0 };
	unsigned int b = kept_bin(npages);
	uint64_t m = b == 0 ? 0 : kept.bins & ~(((uint64_t)1 << b) - 1);
	uint32_t *link;

	if (m != 0) {
		b = (unsigned int)__builtin_ctzll(m);
		link = &kept.bin[b];
	} else {
		b = 0;
		for (link = &kept.bin[0]; *link != 0;
		    link = &kept_slot(*link)->next)
			if (kept_slot(*link)->npages >= npages)
				break;
		if (*link == 0)
			return r;
	}
	r = kept_unlink(b, link);
	/* The slot just freed takes the rest. */
	if (r.npages > npages)
		kept_push(r.p + (npages << OM_PAGE_SHIFT), r.npages - npages);
	r.npages = (uint32_t)npages;
	return r;
}

/* Keep a released run (kept locked); with no slot free, its first page
 * becomes a block of slots, when it can be made read-write. */
static void
kept_add(uintptr_t p, size_t npages)
{
	if (kept_push(p, npages) == 0)
		return;
	if (kept.blocks + 1 >= KEPT_BLOCKS) {
		KEPT_ADD(kept.lost, 1);
		return;
	}
	COUNT(mprotect);
	if (mprotect((void *)p, OM_PAGE_SIZE, PROT_READ | PROT_WRITE) == 0) {
		kept_block[kept.blocks + 1] = (struct kept_run *)p;
		KEPT_ADD(kept.blocks, 1);
		if (npages > 1)
			kept_push(p + OM_PAGE_SIZE, npages - 1);
		return;
	}
	KEPT_ADD(kept.lost, 1);
}

/* munmap refused, or held back near the limit (refused 0): release the
 * range in place and keep it. */
static void
keep(void *p, size_t len, int refused)
{
	/* Guard markers outlive MADV_DONTNEED: off with them first. */
	if (__atomic_load_n(&guard_marked, __ATOMIC_RELAXED)) {
		COUNT(madvise);
		madvise(p, len, MADV_GUARD_REMOVE);
	}
	COUNT(madvise);
	if (madvise(p, len, MADV_DONTNEED) != 0)
		om_fatal(NULL, "munmap failed", p);
	kept_lock();
	if (refused)
		KEPT_ADD(kept.refused, 1);
	else
		KEPT_ADD(kept.held, 1);
	kept_add((uintptr_t)p, OM_PAGEROUND(len) >> OM_PAGE_SHIFT);
	kept_unlock();
}

/* munmap, or keep what the kernel refuses to unmap (errno changed). */
static void
unmap_now(void *p, size_t len)
{
	COUNT(munmap);
	if (munmap(p, len) != 0) {
		if (errno != ENOMEM)
			om_fatal(NULL, "munmap failed", p);
		keep(p, len, 1);
	}
}

void
om_os_unmap(void *p, size_t len)
{
	int saved = errno;

	if (OM_UNLIKELY(maps_spend()))
		keep(p, len, 0);
	else
		unmap_now(p, len);
	errno = saved;
}

/* Ranges in address order (by insertion: batches are short). */
void
om_sort_spans(struct om_span *s, unsigned int n)
{
	unsigned int i, j;

	for (i = 1; i < n; i++) {
		struct om_span t = s[i];

		for (j = i; j > 0 && s[j - 1].p > t.p; j--)
			s[j] = s[j - 1];
		s[j] = t;
	}
}

/* Ranges in address order, those that touch joined; returns how many. */
unsigned int
om_join_spans(struct om_span *s, unsigned int n)
{
	unsigned int i, m;

	if (n == 0)
		return 0;
	om_sort_spans(s, n);
	for (i = 1, m = 0; i < n; i++)
		if (s[i].p == s[m].p + s[m].len)
			s[m].len += s[i].len;
		else
			s[++m] = s[i];
	return m + 1;
}

/*
 * Unmap n ranges, those that touch as one.  A call that takes pages out
 * of the mappings flushes the TLB, on every CPU the process runs on, and
 * that flush is most of what a small munmap costs; in a virtual machine
 * it is far more than the rest.  So for several ranges, one
 * process_madvise(MADV_DONTNEED) first releases the pages of up to
 * OM_UNMAP_SPANS of them, which a kernel that batches the flush over the
 * whole call (6.18 does) flushes once; the munmaps after it find no page
 * to flush.  They still unmap: the commit charge drops, and a stale
 * pointer faults.  Where the kernel refuses the call (an older one, or a
 * range mlock()ed), the ranges are unmapped alike.
 */
void
om_os_unmap_spans(struct om_span *s, unsigned int n)
{
	struct iovec v[OM_UNMAP_SPANS];
	unsigned int i, m;

	for (n = om_join_spans(s, n); n > 0; s += m, n -= m) {
		m = n < OM_UNMAP_SPANS ? n : OM_UNMAP_SPANS;
		if (m > 1 && __atomic_load_n(&release_batched,
		    __ATOMIC_RELAXED)) {
			int saved = errno;

			for (i = 0; i < m; i++) {
				v[i].iov_base = (void *)s[i].p;
				v[i].iov_len = s[i].len;
			}
			COUNT(madvise);
			if (syscall(SYS_process_madvise, PIDFD_SELF, v,
			    (size_t)m, MADV_DONTNEED, 0U) < 0 &&
			    errno != EINTR && errno != EAGAIN &&
			    errno != ENOMEM)
				__atomic_store_n(&release_batched, 0,
				    __ATOMIC_RELAXED);
			errno = saved;
		}
		for (i = 0; i < m; i++)
			om_os_unmap((void *)s[i].p, s[i].len);
	}
}

/*
 * A kept run of len bytes, read-write and zero (its pages were released);
 * NULL if there is none long enough, or if it could not be opened (it was
 * PROT_NONE in U's cache, and the kernel refused the mprotect too).
 */
void *
om_os_map_kept(size_t len)
{
	struct kept_run r;
	int saved;

	if (__atomic_load_n(&kept.runs, __ATOMIC_RELAXED) == 0)
		return NULL;
	saved = errno;
	kept_lock();
	r = kept_take(OM_PAGEROUND(len) >> OM_PAGE_SHIFT);
	kept_unlock();
	if (r.p != 0 && om_os_protect((void *)r.p, len, 1) != 0) {
		kept_lock();
		kept_add(r.p, r.npages);
		kept_unlock();
		r.p = 0;
	}
	errno = saved;
	return (void *)r.p;
}

static void
sift(struct kept_run *r, size_t root, size_t end)
{
	struct kept_run t;
	size_t child;

	while ((child = 2 * root + 1) < end) {
		if (child + 1 < end && r[child].p < r[child + 1].p)
			child++;
		if (r[root].p >= r[child].p)
			return;
		t = r[root];
		r[root] = r[child];
		r[child] = t;
		root = child;
	}
}

/* Runs in address order: a heap sort, since qsort may allocate. */
static void
sort_runs(struct kept_run *r, size_t n)
{
	struct kept_run t;
	size_t i;

	for (i = n / 2; i-- > 0;)
		sift(r, i, n);
	for (i = n; i-- > 1;) {
		t = r[0];
		r[0] = r[i];
		r[i] = t;
		sift(r, 0, i);
	}
}

/*
 * malloc_trim while holding back (see maps_spend): every kept run, in
 * address order and joined to the kept runs it touches, unmapped from
 * the lowest up, so that a mapping made of kept runs goes whole rather
 * than split first: after the caches are emptied, that is most of them.
 * A kept run between live blocks still makes a hole, so a count every
 * MAPS_CREDIT_MIN ranges stops it at seven eighths of the limit; what
 * is left is kept again.
 */
static void
trim_holding(void)
{
	long limit = __atomic_load_n(&maps.limit, __ATOMIC_RELAXED);
	size_t n = __atomic_load_n(&kept.runs, __ATOMIC_RELAXED), m, i, j;
	size_t len = OM_PAGEROUND(n * sizeof(struct kept_run)), np;
	struct kept_run *r;
	long spans = 0;

	if (n == 0 || (r = map(NULL, len, 0, 0)) == NULL)
		return;
	kept_lock();
	for (m = 0; m < n && kept.bins != 0; m++) {
		unsigned int b = (unsigned int)__builtin_ctzll(kept.bins);

		r[m] = kept_unlink(b, &kept.bin[b]);
	}
	kept_unlock();
	sort_runs(r, m);
	for (i = 0; i < m; i = j) {
		np = r[i].npages;
		for (j = i + 1; j < m && r[j].p == r[i].p + (np <<
		    OM_PAGE_SHIFT); j++)
			np += r[j].npages;
		if (++spans % MAPS_CREDIT_MIN == 0 &&
		    count_mappings() >= limit - limit / 8)
			break;
		COUNT(munmap);
		if (munmap((void *)r[i].p, np << OM_PAGE_SHIFT) != 0)
			break;
	}
	kept_lock();
	for (; i < m; i++)
		kept_add(r[i].p, r[i].npages);
	kept_unlock();
	/* Not kept: that would leave a run where the caller asked for
	 * none. */
	unmap_now(r, len);
}

/* malloc_trim: try munmap on the kept runs again, until the kernel still
 * refuses one; while holding back, in address order (trim_holding). */
void
om_os_trim_kept(void)
{
	int saved = errno;

	if (__atomic_load_n(&kept.runs, __ATOMIC_RELAXED) == 0)
		return;
	if (om_os_maps_recount()) {
		trim_holding();
		om_os_maps_recount();
		errno = saved;
		return;
	}
	while (__atomic_load_n(&kept.runs, __ATOMIC_RELAXED) != 0) {
		struct kept_run r = { 0, 0, 0 };
		unsigned int b;

		kept_lock();
		if (kept.bins != 0) {
			b = (unsigned int)__builtin_ctzll(kept.bins);
			r = kept_unlink(b, &kept.bin[b]);
		}
		kept_unlock();
		if (r.p == 0)
			break;
		maps_spend();
		COUNT(munmap);
		if (munmap((void *)r.p, (size_t)r.npages << OM_PAGE_SHIFT) ==
		    0)
			continue;
		kept_lock();
		kept_add(r.p, r.npages);
		kept_unlock();
		break;
	}
	errno = saved;
}

/* The kept runs, for the dump: read without the lock, which a fatal
 * error's dump may be called under. */
void
om_os_kept(struct om_os_kept *k)
{
	k->runs = __atomic_load_n(&kept.runs, __ATOMIC_RELAXED);
	k->pages = __atomic_load_n(&kept.pages, __ATOMIC_RELAXED);
	k->refused = __atomic_load_n(&kept.refused, __ATOMIC_RELAXED);
	k->held = __atomic_load_n(&kept.held, __ATOMIC_RELAXED);
	k->maps = __atomic_load_n(&maps.count, __ATOMIC_RELAXED);
	k->maps_limit = __atomic_load_n(&maps.limit, __ATOMIC_RELAXED);
	k->holding = __atomic_load_n(&maps.hold, __ATOMIC_RELAXED);
	k->lost = __atomic_load_n(&kept.lost, __ATOMIC_RELAXED);
	k->blocks = __atomic_load_n(&kept.blocks, __ATOMIC_RELAXED);
}

/* Fork: the kept lock is taken last, after the depot's, and is a leaf:
 * nothing else is taken under it. */
void
om_os_fork_prepare(void)
{
	kept_lock();
}

void
om_os_fork_parent(void)
{
	kept_unlock();
}

void
om_os_fork_child(void)
{
	om_mutex_init(&kept.mtx);
	/* A count another thread had under way is not the child's. */
	maps.counting = 0;
}

/* access: 0 none, 1 read-write.  Returns 0 or -1. */
int
om_os_protect(void *p, size_t len, int access)
{
	int saved = errno, rc;

	maps_spend();
	COUNT(mprotect);
	rc = mprotect(p, len, access ? PROT_READ | PROT_WRITE : PROT_NONE);
	errno = saved;
	return rc;
}

/* Make [p, p+len) fault on any access. */
int
om_os_guard(void *p, size_t len)
{
	int saved = errno;

	if (__atomic_load_n(&guard_madvise, __ATOMIC_RELAXED)) {
		COUNT(madvise);
		if (madvise(p, len, MADV_GUARD_INSTALL) == 0) {
			if (!__atomic_load_n(&guard_marked, __ATOMIC_RELAXED))
				__atomic_store_n(&guard_marked, 1,
				    __ATOMIC_RELAXED);
			errno = saved;
			return 0;
		}
		__atomic_store_n(&guard_madvise, 0, __ATOMIC_RELAXED);
	}
	if (!__atomic_load_n(&guard_protected, __ATOMIC_RELAXED))
		__atomic_store_n(&guard_protected, 1, __ATOMIC_RELAXED);
	errno = saved;
	return om_os_protect(p, len, 0);
}

/* Undo om_os_guard: the pages become zeroed read-write memory. */
int
om_os_unguard(void *p, size_t len)
{
	int saved = errno, rc = 0;

	/* Either kind, whichever were made: markers stay in use once the
	 * kernel refuses a new one (a locked mapping, say), and a
	 * marker's page is read-write as far as mprotect knows. */
	if (__atomic_load_n(&guard_marked, __ATOMIC_RELAXED)) {
		COUNT(madvise);
		if (madvise(p, len, MADV_GUARD_REMOVE) != 0)
			rc = -1;
	}
	if (__atomic_load_n(&guard_protected, __ATOMIC_RELAXED) &&
	    om_os_protect(p, len, 1) != 0)
		rc = -1;
	errno = saved;
	return rc;
}

/* Make [p, p+len) read-only for good: mprotect, then mseal(2) where the
 * kernel has it (Linux 6.10+), so it cannot be made writable again. */
void
om_os_readonly(void *p, size_t len)
{
	int saved = errno;

	COUNT(mprotect);
	if (mprotect(p, len, PROT_READ) != 0)
		om_fatal(NULL, "mprotect of the option page failed", p);
#ifndef SYS_mseal
#define SYS_mseal 462
#endif
	syscall(SYS_mseal, p, len, 0UL);
	errno = saved;
}

/* Sleep while *w == val, ns at most; whether a wake ended the sleep
 * (not the timeout, a signal or w changed). */
int
om_os_futex_wait(int *w, int val, long ns)
{
	struct timespec ts = { .tv_sec = ns / 1000000000L,
		.tv_nsec = ns % 1000000000L };
	int saved = errno;
	long rc = syscall(SYS_futex, w, FUTEX_WAIT_PRIVATE, val, &ts, NULL, 0);

	errno = saved;
	return rc == 0;
}

/* Wake one thread sleeping on w; whether there was one. */
int
om_os_futex_wake(int *w)
{
	int saved = errno;
	long n = syscall(SYS_futex, w, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);

	errno = saved;
	return n > 0;
}

static int
membarrier_cmd(int cmd)
{
	int saved = errno;
	long rc = syscall(SYS_membarrier, cmd, 0, 0);

	errno = saved;
	return rc == 0 ? 0 : -1;
}

/* Ask for the expedited private barrier of the biased pool locks.
 * Returns 0 when the kernel grants it. */
int
om_os_membarrier_register(void)
{
	return membarrier_cmd(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED);
}

/* A full memory barrier on every CPU running a thread of this process.
 * Returns 0, or -1 when the kernel refused. */
int
om_os_membarrier(void)
{
	return membarrier_cmd(MEMBARRIER_CMD_PRIVATE_EXPEDITED);
}

/* Whether a thread of this process has that id. */
int
om_os_thread_alive(int tid)
{
	int saved = errno, alive;

	alive = syscall(SYS_tgkill, om_os_getpid(), tid, 0) == 0 ||
	    errno != ESRCH;
	errno = saved;
	return alive;
}

void
om_os_counts(struct om_os_counts *c)
{
	c->mmap = __atomic_load_n(&counts.mmap, __ATOMIC_RELAXED);
	c->munmap = __atomic_load_n(&counts.munmap, __ATOMIC_RELAXED);
	c->mprotect = __atomic_load_n(&counts.mprotect, __ATOMIC_RELAXED);
	c->madvise = __atomic_load_n(&counts.madvise, __ATOMIC_RELAXED);
}

long
om_os_gettid(void)
{
	return syscall(SYS_gettid);
}

long
om_os_getpid(void)
{
	return syscall(SYS_getpid);
}

/* Write all of buf, retrying on EINTR and short writes.  0 or -1. */
int
om_os_write(int fd, const void *buf, size_t len)
{
	const char *c = buf;
	int saved = errno;

	while (len > 0) {
		ssize_t n = write(fd, c, len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			errno = saved;
			return -1;
		}
		c += n;
		len -= (size_t)n;
	}
	errno = saved;
	return 0;
}
