/*
 * omfuzz.c - a differential fuzzer for the heap API.
 *
 * The input is a sequence of operations (malloc, calloc, realloc, free,
 * aligned_alloc, posix_memalign, memalign, valloc, pvalloc, reallocarray,
 * recallocarray, freezero, free_sized (free with an odd variant),
 * free_aligned_sized, malloc_usable_size, the conceal calls and a set of
 * calls that must fail).  Free with variant 2 or 3 hands the block to a
 * second thread, which frees it while this one waits: under omalloc such
 * a thread uses another pool, so its frees take the queue of frees into
 * other pools.  Each one runs against the process's heap while
 * a shadow model keeps every live block's pointer, requested size,
 * alignment and fill id.  Every block is filled with a pattern derived from
 * its id, all of its usable size (malloc_usable_size's bytes are the
 * program's to write, and a realloc must keep them up to the new size),
 * so a block that another allocation or the allocator's own metadata
 * overwrote is found on the next check; every free and realloc checks the
 * whole block first.  Any mismatch, overlap of two live blocks,
 * misalignment, short usable size, unexpected NULL, wrong errno or errno
 * changed by a successful call aborts, which is a crash for libFuzzer and
 * AFL alike.
 *
 * Built with OMFUZZ_OMALLOC the heap is omalloc's (its objects are linked
 * into the program, so omalloc is the process malloc and the fuzzer's own
 * allocations use it too) and omalloc's semantics are checked strictly:
 * realloc(p, 0) returns a live zero-size object, never NULL.  Without it the
 * same program runs against glibc, with stand-ins for the OpenBSD
 * extensions, which is how the harness itself is checked under valgrind.
 *
 * OMFUZZ_TRACE in the environment prints each operation on stderr before
 * it runs, which turns a crashing input into a readable reproducer.
 * OMFUZZ_VALGRIND in the environment skips the calls that must fail and
 * pvalloc, which valgrind's heap does not support.
 *
 * Input format, one operation after another until the input ends:
 *   byte 0   bits 0-3 operation, bits 4-5 size class, bits 6-7 variant
 *   byte 1   slot (0-63)
 *   byte 2-3 size, little endian, scaled by the size class:
 *            0: 0..64, 1: 0..4096, 2: 0..65535, 3: 32-byte steps to
 *            1 MiB (values below 0x8000), then 64-byte steps to 3 MiB,
 *            past the longest run a pool caches at first (2 MiB)
 *   byte 4   the operation's extra argument (alignment, element size, ...)
 * Operations that do not need the extra byte do not consume it.
 */
#include <errno.h>
#include <stdarg.h>
#include <malloc.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifdef OMFUZZ_OMALLOC
#include <omalloc.h>
#endif

#include "omfuzz.h"

#define NSLOTS 64
#define MAX_LIVE ((size_t)48 << 20)
#define ERRNO_MARK 0x5eed

enum {
	OP_MALLOC,
	OP_CALLOC,
	OP_REALLOC,
	OP_FREE,
	OP_ALIGNED_ALLOC,
	OP_POSIX_MEMALIGN,
	OP_REALLOCARRAY,
	OP_RECALLOCARRAY,
	OP_FREEZERO,
	OP_USABLE,
	OP_FAIL,
	OP_CHECK,
	OP_CONCEAL,
	OP_REALLOC0,
	OP_NULLARG,
	OP_PAGEALIGN,
};

struct slot {
	unsigned char *p;
	size_t size;	/* requested size */
	size_t usable;	/* malloc_usable_size: the bytes filled and checked */
	size_t align;	/* alignment asked for (16 at least) */
	uint32_t id;	/* fill pattern id */
};

static struct slot slots[NSLOTS];
static size_t live_bytes;
static uint32_t next_id;
static unsigned long long nops;
static long pagesz;
static int valgrind_heap;
static int trace;

static const char *const op_names[16] = {"malloc", "calloc", "realloc",
    "free", "aligned_alloc", "posix_memalign", "reallocarray",
    "recallocarray", "freezero", "usable", "fail", "check", "conceal",
    "realloc0", "nullarg", "pagealign"};

#ifndef OMFUZZ_OMALLOC
/*
 * Stand-ins for the OpenBSD extensions glibc lacks, so that the harness
 * runs unchanged against glibc.
 */
static void
fz_freezero(void *p, size_t n)
{
	if (p != NULL)
		explicit_bzero(p, n);
	free(p);
}

static void *
fz_recallocarray(void *p, size_t oldn, size_t newn, size_t size)
{
	size_t oldsz, newsz;
	unsigned char *q;

	if (p == NULL)
		return calloc(newn, size);
	if (__builtin_mul_overflow(newn, size, &newsz) ||
	    __builtin_mul_overflow(oldn, size, &oldsz)) {
		errno = ENOMEM;
		return NULL;
	}
	q = malloc(newsz);
	if (q == NULL)
		return NULL;
	if (newsz > oldsz) {
		memcpy(q, p, oldsz);
		memset(q + oldsz, 0, newsz - oldsz);
	} else
		memcpy(q, p, newsz);
	explicit_bzero(p, oldsz);
	free(p);
	return q;
}
#define freezero fz_freezero
#define free_sized(p, n) ((void)(n), free(p))
#define free_aligned_sized(p, a, n) ((void)(a), (void)(n), free(p))
#define recallocarray fz_recallocarray
#define malloc_conceal malloc
#define calloc_conceal calloc
#endif

static void __attribute__((noreturn, format(printf, 1, 2)))
fail(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "omfuzz: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, " (after %llu operations)\n", nops);
	abort();
}

/*
 * Block contents: the bytes of a fixed random table, starting at an offset
 * derived from the block's id, so that filling and checking are memcpy and
 * memcmp and two blocks almost never hold the same bytes.
 */
#define TABLE_SIZE 65536
static unsigned char table[2 * TABLE_SIZE];

static void
table_init(void)
{
	uint64_t x = 0x243f6a8885a308d3ull;

	for (size_t i = 0; i < TABLE_SIZE; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		table[i] = table[i + TABLE_SIZE] = (unsigned char)(x >> 32);
	}
}

static inline const unsigned char *
pattern_at(uint32_t id, size_t i)
{
	return &table[((id * 2654435761u >> 16) + i) % TABLE_SIZE];
}

static void
fill(struct slot *s, size_t from, size_t to)
{
	while (from < to) {
		size_t n = TABLE_SIZE - from % TABLE_SIZE;

		if (n > to - from)
			n = to - from;
		memcpy(s->p + from, pattern_at(s->id, from), n);
		from += n;
	}
}

static void
verify(const struct slot *s, const unsigned char *p, size_t from, size_t to,
    const char *what)
{
	while (from < to) {
		size_t n = TABLE_SIZE - from % TABLE_SIZE;
		const unsigned char *want = pattern_at(s->id, from);

		if (n > to - from)
			n = to - from;
		if (memcmp(p + from, want, n) != 0) {
			size_t i = 0;

			while (p[from + i] == want[i])
				i++;
			fail("%s: block %p size %zu id %u: byte %zu is 0x%02x, "
			     "expected 0x%02x",
			    what, (void *)p, s->size, s->id, from + i,
			    p[from + i], want[i]);
		}
		from += n;
	}
}

static void
verify_zero(const unsigned char *p, size_t from, size_t to, const char *what)
{
	for (size_t i = from; i < to; i++)
		if (p[i] != 0)
			fail("%s: %p byte %zu is 0x%02x, expected 0", what,
			    (void *)p, i, p[i]);
}

/* Keeps the compiler from warning about sizes that are meant to fail. */
static size_t
opaque(size_t v)
{
	volatile size_t x = v;

	return x;
}

static void
check_errno(const char *what)
{
	if (errno != ERRNO_MARK)
		fail("%s succeeded but changed errno to %d", what, errno);
}

static void
expect_enomem(const void *p, const char *what)
{
	if (p != NULL)
		fail("%s: expected NULL, got %p", what, p);
	if (errno != ENOMEM)
		fail("%s: expected ENOMEM, errno %d", what, errno);
}

/*
 * A new block must be aligned, report a usable size at least its size, and
 * neither it nor its usable range may overlap any other live block.  A
 * zero-size block still occupies its address.
 */
static void
check_new(int idx, const unsigned char *p, size_t size, size_t align,
    const char *what)
{
	uintptr_t a = (uintptr_t)p, aend;
	size_t usable;

	if (p == NULL)
		fail("%s(%zu): unexpected NULL (errno %d)", what, size, errno);
	if (a % 16 != 0 || a % align != 0)
		fail("%s(%zu): %p not aligned to %zu", what, size, (void *)p,
		    align < 16 ? 16 : align);
	usable = malloc_usable_size((void *)p);
	if (usable < size)
		fail("%s(%zu): usable size %zu too small", what, size, usable);
	aend = a + (usable > size ? usable : size);
	if (aend == a)
		aend = a + 1;
	for (int i = 0; i < NSLOTS; i++) {
		const struct slot *o = &slots[i];
		uintptr_t b = (uintptr_t)o->p, bend;

		if (i == idx || o->p == NULL)
			continue;
		bend = b + (o->usable ? o->usable : 1);
		if (a < bend && b < aend)
			fail("%s(%zu): [%p, +%zu) overlaps live block %p size "
			     "%zu",
			    what, size, (void *)p, usable, (void *)o->p,
			    o->size);
	}
}

static void
take(int idx, void *p, size_t size, size_t align, const char *what)
{
	struct slot *s = &slots[idx];

	check_new(idx, p, size, align, what);
	s->p = p;
	s->size = size;
	s->usable = malloc_usable_size(p);
	s->align = align;
	s->id = ++next_id;
	live_bytes += size;
}

static void
drop(struct slot *s)
{
	live_bytes -= s->size;
	s->p = NULL;
	s->size = 0;
	s->usable = 0;
}

static void
release(int idx)
{
	struct slot *s = &slots[idx];

	if (s->p == NULL)
		return;
	verify(s, s->p, 0, s->usable, "free");
	errno = ERRNO_MARK;
	free(s->p);
	check_errno("free");
	drop(s);
}

/* C23's sized frees, told the size asked for (and the alignment). */
static void
free_by_size(void *p, size_t size, size_t align)
{
	errno = ERRNO_MARK;
	if (align > 16)
		free_aligned_sized(p, align, size);
	else
		free_sized(p, size);
	check_errno("free_sized");
}

static void
release_sized(int idx)
{
	struct slot *s = &slots[idx];

	verify(s, s->p, 0, s->usable, "free_sized");
	free_by_size(s->p, s->size, s->align);
	drop(s);
}

/*
 * The second thread that frees blocks for this one, one at a time: the
 * caller posts a block and waits until it is freed, so the runs stay
 * deterministic.  Started at the first such free, and again until its
 * thread id differs from the caller's in bit 0, which puts it in another
 * pool at any pool count above one.
 */
static struct {
	int state;		/* 0 not started, 1 running, -1 failed */
	long tid;
	sem_t go, done;
	void *p;		/* NULL: exit */
	size_t size, align;
	int sized;
} helper;

static void
sem_wait_all(sem_t *s)
{
	while (sem_wait(s) != 0)
		if (errno != EINTR)
			fail("sem_wait: errno %d", errno);
}

static void *
helper_main(void *arg)
{
	(void)arg;
	helper.tid = syscall(SYS_gettid);
	sem_post(&helper.done);
	for (;;) {
		sem_wait_all(&helper.go);
		if (helper.p == NULL)
			break;
		if (helper.sized)
			free_by_size(helper.p, helper.size, helper.align);
		else {
			errno = ERRNO_MARK;
			free(helper.p);
			check_errno("free by another thread");
		}
		sem_post(&helper.done);
	}
	sem_post(&helper.done);
	return NULL;
}

static int
helper_start(void)
{
	long me = syscall(SYS_gettid);
	pthread_t t;

	if (helper.state != 0)
		return helper.state > 0;
	helper.state = -1;
	if (sem_init(&helper.go, 0, 0) != 0 ||
	    sem_init(&helper.done, 0, 0) != 0)
		return 0;
	for (int tries = 0; tries < 16; tries++) {
		if (pthread_create(&t, NULL, helper_main, NULL) != 0)
			return 0;
		pthread_detach(t);
		sem_wait_all(&helper.done);
		if (((helper.tid ^ me) & 1) != 0 || tries == 15)
			break;
		helper.p = NULL;
		sem_post(&helper.go);
		sem_wait_all(&helper.done);
	}
	helper.state = 1;
	return 1;
}

/* Slot idx freed by the second thread, by size if sized. */
static void
release_elsewhere(int idx, int sized)
{
	struct slot *s = &slots[idx];

	if (!helper_start()) {
		release(idx);
		return;
	}
	verify(s, s->p, 0, s->usable, "free by another thread");
	helper.p = s->p;
	helper.size = s->size;
	helper.align = s->align;
	helper.sized = sized;
	sem_post(&helper.go);
	sem_wait_all(&helper.done);
	drop(s);
}

/* Room for size more bytes within the live cap, freeing slot idx first. */
static int
room(int idx, size_t size)
{
	release(idx);
	return live_bytes + size <= MAX_LIVE;
}

/* The extra byte, or 0 once the input is used up. */
static unsigned
extra(const uint8_t **d, const uint8_t *end)
{
	return *d < end ? *(*d)++ : 0;
}

static size_t
decode_size(unsigned cls, unsigned v)
{
	switch (cls) {
	case 0:
		return v % 65;
	case 1:
		return v % 4097;
	case 2:
		return v;
	default:
		if (v < 0x8000)
			return (size_t)v * 32;
		return ((size_t)1 << 20) + (size_t)(v - 0x8000) * 64;
	}
}

/* realloc-like call on slot idx that succeeded with q and size newsz;
 * the first keep bytes of the block must have come along. */
static void
moved(int idx, unsigned char *q, size_t newsz, size_t keep, const char *what)
{
	struct slot *s = &slots[idx];

	s->p = NULL;	/* the old block is gone: exclude it from overlaps */
	check_new(idx, q, newsz, 16, what);
	verify(s, q, 0, keep, what);
	live_bytes = live_bytes - s->size + newsz;
	s->p = q;
	s->size = newsz;
	s->usable = malloc_usable_size(q);
	s->align = 16;
}

static void op_other(unsigned op, unsigned variant, int idx, size_t size,
    unsigned x);

static void
op_alloc(unsigned op, unsigned variant, int idx, size_t size, unsigned x)
{
	struct slot *s = &slots[idx];
	size_t align = 16, n, m;
	void *p = NULL;
	int rc;

	switch (op) {
	case OP_MALLOC:
		if (!room(idx, size))
			return;
		errno = ERRNO_MARK;
		p = malloc(size);
		take(idx, p, size, 16, "malloc");
		check_errno("malloc");
		break;
	case OP_CALLOC:
	case OP_CONCEAL:
		/* size = n * m with n from the extra byte where it divides */
		n = (x % 16) + 1;
		if (size % n != 0)
			n = 1;
		m = size / n;
		if (!room(idx, size))
			return;
		errno = ERRNO_MARK;
		if (op == OP_CALLOC)
			p = calloc(n, m);
		else if (variant & 1)
			p = calloc_conceal(n, m);
		else
			p = malloc_conceal(size);
		take(idx, p, size, 16, op == OP_CALLOC ? "calloc" : "conceal");
		check_errno("calloc");
		if (op == OP_CALLOC || (variant & 1))
			verify_zero(p, 0, size, "calloc");
		break;
	case OP_ALIGNED_ALLOC:
		align = (size_t)1 << (x % 21);
		if (!room(idx, size))
			return;
		errno = ERRNO_MARK;
		if (variant & 1) {
			p = memalign(align, size);
			take(idx, p, size, align, "memalign");
		} else {
			p = aligned_alloc(align, size);
			take(idx, p, size, align, "aligned_alloc");
		}
		check_errno("aligned_alloc");
		break;
	case OP_POSIX_MEMALIGN:
		align = sizeof(void *) << (x % 19);
		if (!room(idx, size))
			return;
		errno = ERRNO_MARK;
		rc = posix_memalign(&p, align, size);
		if (rc != 0)
			fail("posix_memalign(%zu, %zu) = %d", align, size, rc);
		take(idx, p, size, align, "posix_memalign");
		check_errno("posix_memalign");
		break;
	case OP_PAGEALIGN:
		if (!room(idx, size + (size_t)pagesz))
			return;
		errno = ERRNO_MARK;
		if ((variant & 1) && !valgrind_heap) {
			/* pvalloc allocates the size rounded up to whole
			 * pages (one page for 0): that is the block's size,
			 * the one recallocarray must later be told. */
			size_t rounded = (size + (size_t)pagesz - 1) &
			    ~((size_t)pagesz - 1);
#ifdef OMFUZZ_OMALLOC
			if (size == 0)	/* glibc gives a minimum chunk */
				rounded = (size_t)pagesz;
#endif
			p = pvalloc(size);
			take(idx, p, rounded, (size_t)pagesz, "pvalloc");
		} else {
			p = valloc(size);
			take(idx, p, size, (size_t)pagesz, "valloc");
		}
		check_errno("valloc");
		break;
	default:
		return;
	}
	fill(s, 0, s->usable);
}

static void
op_resize(unsigned op, unsigned variant, int idx, size_t size, unsigned x)
{
	struct slot *s = &slots[idx];
	size_t oldsz = s->size, e, n, newsz, keep;
	unsigned char *q;

	if (s->p == NULL) {
		/* realloc(NULL, n) and friends allocate */
		if (live_bytes + size > MAX_LIVE)
			return;
		errno = ERRNO_MARK;
		if (op == OP_RECALLOCARRAY) {
			q = recallocarray(NULL, 0, size, 1);
			take(idx, q, size, 16, "recallocarray(NULL)");
			verify_zero(q, 0, size, "recallocarray(NULL)");
		} else {
			q = realloc(NULL, size);
			take(idx, q, size, 16, "realloc(NULL)");
		}
		check_errno("realloc(NULL)");
		fill(s, 0, s->usable);
		return;
	}
	verify(s, s->p, 0, s->usable, "before realloc");
	/* realloc keeps every byte the block offered (its usable size, which
	 * the program may have written), up to the new size. */
	keep = s->usable < size ? s->usable : size;
#ifndef OMFUZZ_OMALLOC
	if (size == 0 && op != OP_RECALLOCARRAY) {
		/* glibc's realloc(p, 0) frees p and returns NULL */
		op_other(OP_REALLOC0, variant, idx, 0, x);
		return;
	}
#endif
	if (live_bytes - oldsz + size > MAX_LIVE)
		return;
	errno = ERRNO_MARK;
	switch (op) {
	case OP_REALLOC:
		q = realloc(s->p, size);
		moved(idx, q, size, keep, "realloc");
		break;
	case OP_REALLOCARRAY:
		n = (x % 8) + 1;
		if (size % n != 0)
			n = 1;
		q = reallocarray(s->p, n, size / n);
		moved(idx, q, size, keep, "reallocarray");
		break;
	case OP_RECALLOCARRAY:
		/* an element size that divides both the old and the new size */
		e = (size_t)1 << (x % 5);
		while (oldsz % e != 0 || size % e != 0)
			e >>= 1;
		n = size / e;
		newsz = n * e;
		q = recallocarray(s->p, oldsz / e, n, e);
		/* Only the old size it is told of. */
		keep = oldsz < newsz ? oldsz : newsz;
		moved(idx, q, newsz, keep, "recallocarray");
		if (newsz > oldsz)
			verify_zero(q, oldsz, newsz, "recallocarray growth");
		break;
	default:
		return;
	}
	(void)variant;
	check_errno("realloc");
	fill(s, keep, s->usable);
}

/* Calls that must fail with ENOMEM or EINVAL and leave the heap alone. */
static void
op_fail(unsigned variant, int idx, unsigned x)
{
	struct slot *s = &slots[idx];
	size_t big = opaque((size_t)PTRDIFF_MAX + 1 + (x << 12));
	size_t huge = opaque((size_t)1 << 40);
	void *p, *orig = (void *)&p;
	int rc;

	switch ((variant << 3 | (x & 7)) % 10) {
	case 0:
		errno = 0;
		expect_enomem(malloc(big), "malloc(> PTRDIFF_MAX)");
		break;
	case 1:
		errno = 0;
		expect_enomem(malloc(opaque(SIZE_MAX - x)), "malloc(SIZE_MAX)");
		break;
	case 2:
		errno = 0;
		expect_enomem(calloc(huge >> 7, (huge >> 9) + x),
		    "calloc overflow");
		break;
	case 3:
		errno = 0;
		expect_enomem(calloc(1, big), "calloc(1, > PTRDIFF_MAX)");
		break;
	case 4:
		p = orig;
		rc = posix_memalign(&p, sizeof(void *) * 3 + x * 16, 8);
		if (rc != EINVAL)
			fail("posix_memalign(bad alignment) = %d", rc);
		break;
	case 5:
		p = orig;
		rc = posix_memalign(&p, 16, big);
		if (rc != ENOMEM)
			fail("posix_memalign(16, huge) = %d", rc);
		break;
	case 6:
	case 7:
	case 8:
	case 9:
		if (s->p == NULL) {
			errno = 0;
			expect_enomem(reallocarray(NULL, big, 2),
			    "reallocarray(NULL) overflow");
			break;
		}
		verify(s, s->p, 0, s->usable, "before failing realloc");
		errno = 0;
		if (x % 4 == 0)
			p = realloc(s->p, big);
		else if (x % 4 == 1)
			p = reallocarray(s->p, huge, huge);
		else if (x % 4 == 2)
			p = recallocarray(s->p, s->size, huge, huge);
		else
			p = realloc(s->p, opaque(SIZE_MAX - 15));
		expect_enomem(p, "failing realloc");
		verify(s, s->p, 0, s->usable, "after failing realloc");
		break;
	}
}

static void
op_other(unsigned op, unsigned variant, int idx, size_t size, unsigned x)
{
	struct slot *s = &slots[idx];
	size_t n, usable;
	void *q;

	switch (op) {
	case OP_FREE:
		if (s->p == NULL) {
			errno = ERRNO_MARK;
			free(NULL);
			check_errno("free(NULL)");
		} else if (variant & 2)
			release_elsewhere(idx, variant & 1);
		else if (variant & 1)
			release_sized(idx);
		else
			release(idx);
		break;
	case OP_FREEZERO:
		if (s->p == NULL) {
			freezero(NULL, size);
			break;
		}
		verify(s, s->p, 0, s->usable, "freezero");
		/* all of it, or a prefix */
		n = (variant & 1) && s->size ? size % (s->size + 1) : s->size;
		errno = ERRNO_MARK;
		freezero(s->p, n);
		check_errno("freezero");
		drop(s);
		break;
	case OP_USABLE:
		if (s->p == NULL) {
			if (malloc_usable_size(NULL) != 0)
				fail("malloc_usable_size(NULL) != 0");
			break;
		}
		usable = malloc_usable_size(s->p);
		if (usable != s->usable)
			fail("malloc_usable_size(%p) = %zu, was %zu",
			    (void *)s->p, usable, s->usable);
		verify(s, s->p, 0, s->usable, "usable");
		break;
	case OP_CHECK:
		/* all live blocks, or one */
		if (variant == 0) {
			for (int i = 0; i < NSLOTS; i++)
				if (slots[i].p != NULL)
					verify(&slots[i], slots[i].p, 0,
					    slots[i].usable, "check");
		} else if (s->p != NULL)
			verify(s, s->p, 0, s->usable, "check");
		break;
	case OP_REALLOC0:
		if (s->p == NULL)
			break;
		verify(s, s->p, 0, s->usable, "realloc(p, 0)");
		errno = ERRNO_MARK;
		q = realloc(s->p, 0);
#ifdef OMFUZZ_OMALLOC
		/* omalloc: frees p and returns a zero-size object */
		moved(idx, q, 0, 0, "realloc(p, 0)");
		check_errno("realloc(p, 0)");
#else
		/* glibc frees p and returns NULL */
		if (q != NULL)
			fail("glibc realloc(p, 0) returned %p", q);
		drop(s);
#endif
		break;
	case OP_NULLARG:
		(void)x;
		if (s->p == NULL && live_bytes + size <= MAX_LIVE) {
			errno = ERRNO_MARK;
			q = reallocarray(NULL, 1, size);
			take(idx, q, size, 16, "reallocarray(NULL)");
			check_errno("reallocarray(NULL)");
			fill(s, 0, s->usable);
		}
		break;
	case OP_FAIL:
		if (!valgrind_heap)
			op_fail(variant, idx, x);
		break;
	}
}

void
omfuzz_reset(void)
{
	for (int i = 0; i < NSLOTS; i++)
		release(i);
	if (live_bytes != 0)
		fail("live byte count %zu after freeing everything",
		    live_bytes);
}

size_t
omfuzz_op_len(unsigned char first)
{
	switch (first & 15) {
	case OP_CALLOC:
	case OP_CONCEAL:
	case OP_ALIGNED_ALLOC:
	case OP_POSIX_MEMALIGN:
	case OP_REALLOCARRAY:
	case OP_RECALLOCARRAY:
	case OP_FAIL:
		return 5;
	default:
		return 4;
	}
}

int
omfuzz_run(const uint8_t *data, size_t len)
{
	const uint8_t *d = data, *end = data + len;

	if (pagesz == 0) {
		pagesz = sysconf(_SC_PAGESIZE);
		/* valgrind's heap: no errno on failure, no pvalloc */
		valgrind_heap = getenv("OMFUZZ_VALGRIND") != NULL;
		trace = getenv("OMFUZZ_TRACE") != NULL;
		table_init();
	}
	while (end - d >= 4) {
		unsigned b = d[0], op = b & 15, cls = (b >> 4) & 3;
		unsigned variant = b >> 6, x = 0;
		int idx = d[1] % NSLOTS;
		size_t size = decode_size(cls, d[2] | (unsigned)d[3] << 8);

		d += 4;
		if (omfuzz_op_len(b) == 5)
			x = extra(&d, end);
		nops++;
		if (trace)
			fprintf(stderr, "op %llu: %s variant %u slot %d "
			    "(%p, %zu) size %zu x %u\n",
			    nops, op_names[op], variant, idx,
			    (void *)slots[idx].p, slots[idx].size, size, x);
		switch (op) {
		case OP_MALLOC:
		case OP_CALLOC:
		case OP_CONCEAL:
		case OP_ALIGNED_ALLOC:
		case OP_POSIX_MEMALIGN:
		case OP_PAGEALIGN:
			op_alloc(op, variant, idx, size, x);
			break;
		case OP_REALLOC:
		case OP_REALLOCARRAY:
		case OP_RECALLOCARRAY:
			op_resize(op, variant, idx, size, x);
			break;
		default:
			op_other(op, variant, idx, size, x);
			break;
		}
	}
	omfuzz_reset();
	return 0;
}

unsigned long long
omfuzz_ops(void)
{
	return nops;
}

#ifdef OMFUZZ_LIBFUZZER
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	return omfuzz_run(data, len);
}
#endif
