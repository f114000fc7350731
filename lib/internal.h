/*
 * internal.h - the one internal header of omalloc.
 *
 * Types, constants, checked arithmetic and the prototypes of every
 * cross-file function, grouped under the file that defines them.  Layers go
 * one way: os -> cache -> chunk/region -> pool -> api.  Only api.c (and the
 * fork hooks in pool.c) take pool locks; every core function documented as
 * "pool locked" runs with exactly one pool lock held by its caller.
 */
#ifndef OM_INTERNAL_H
#define OM_INTERNAL_H

#include "omalloc_config.h"

#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#if OM_HAVE_RSEQ
#include <sys/rseq.h>
#endif

/* Nothing declared here leaves the library: see omalloc.map. */
#pragma GCC visibility push(hidden)

#define OM_LIKELY(x)	__builtin_expect(!!(x), 1)
#define OM_UNLIKELY(x)	__builtin_expect(!!(x), 0)
#define OM_COLD		__attribute__((cold, noinline))
#define OM_NOINLINE	__attribute__((noinline))
#define OM_INLINE	static inline __attribute__((always_inline))
#if defined(__x86_64__) || defined(__i386__)
#define OM_CPU_RELAX()	__builtin_ia32_pause()
#elif defined(__aarch64__)
#define OM_CPU_RELAX()	__asm__ __volatile__("yield")
#else
#define OM_CPU_RELAX()	((void)0)
#endif

#if OM_DEBUG_CHECKS
#define OM_ASSERT(d, x)                                                      \
	do {                                                                 \
		if (!(x))                                                    \
			om_fatal((d), "assertion failed: " #x, NULL);        \
	} while (0)
#else
#define OM_ASSERT(d, x) ((void)0)
#endif

/* Geometry.  x86-64 and aarch64 Linux with 4 KiB pages. */
#define OM_PAGE_SHIFT	12
#define OM_PAGE_SIZE	((size_t)1 << OM_PAGE_SHIFT)
#define OM_PAGE_MASK	(OM_PAGE_SIZE - 1)
#define OM_PAGEROUND(x) (((x) + OM_PAGE_MASK) & ~OM_PAGE_MASK)
#define OM_MINSIZE	16		/* every pointer is 16-byte aligned */
#define OM_MAXCHUNK	(OM_PAGE_SIZE / 2)	/* larger sizes are regions */
#define OM_MAXSLOTS	(OM_PAGE_SIZE / OM_MINSIZE)
#define OM_BITWORDS	(OM_MAXSLOTS / 64)

/* Size classes: bucket 0 holds malloc(0) objects in no-access pages. */
#define OM_NBUCKETS	31
#define OM_CHUNK_LISTS	4		/* random list choice per bucket */
#define OM_DELAYED	16		/* delayed-free ring, a power of two */
#define OM_CACHE_SMALL	32		/* cache classes by run length */
#define OM_CACHE_BIG	512		/* longest run class 0 takes at first */
#define OM_CACHE_GONE	4		/* lengths of long runs remembered */
#define OM_CACHE_TAKEN	4		/* runs taken whole remembered */
#define OM_CACHE_DECAY_PUTS 32768	/* a round of the cache's decay */
#define OM_CACHE_LONG_SCALE 4	/* class 0's pages, times this: longest */
#define OM_CACHE_CLASSES (OM_CACHE_SMALL + 1)
#define OM_HASH_INITIAL 128		/* region slots of a new pool */

#define OM_JUNK_FREE	0xdf		/* freed memory */
#define OM_JUNK_NEW	0xdb		/* new memory, junk level 2 */
#define OM_JUNK_FREE64	0xdfdfdfdfdfdfdfdfULL


_Static_assert((OM_DEFAULT_POOLS & (OM_DEFAULT_POOLS - 1)) == 0,
    "the default pool count must be a power of two");
_Static_assert((OM_MAX_POOLS & (OM_MAX_POOLS - 1)) == 0,
    "max_pools must be a power of two");
_Static_assert(OM_DEFAULT_POOLS <= OM_MAX_POOLS, "pools > max_pools");
_Static_assert(OM_MAX_POOLS <= 256, "the pool index must fit a byte");
_Static_assert((OM_DELAYED & (OM_DELAYED - 1)) == 0, "ring not 2^n");
_Static_assert(OM_CACHE_CLASSES <= 64, "cache_classes is one word");

/* Checked arithmetic: every sum and product of sizes goes through here. */
OM_INLINE int
om_add(size_t a, size_t b, size_t *r)
{
	return __builtin_add_overflow(a, b, r);
}

OM_INLINE int
om_mul(size_t a, size_t b, size_t *r)
{
	return __builtin_mul_overflow(a, b, r);
}

/* ------------------------------------------------------------------ */
/* Options (options.c, from options.def) */

enum om_kind { FLAG, LEVEL, SCALE, BUNDLE };

struct om_options {
#define OM_OPTION(up, down, field, kind, def, min, max, doc) int field;
#include "options.def"
#undef OM_OPTION
};

/*
 * Everything fixed at initialisation lives in one page that is made
 * read-only (and sealed where the kernel can) before the first allocation
 * returns: the options, the pool array and the global canary.
 */
struct dir_info;
/* The fatal path (error.c), declared early for the inline checks below. */
__attribute__((noreturn)) OM_COLD void om_fatal(struct dir_info *d,
    const char *reason, const void *p);

struct om_readonly {
	struct om_options opt;
	struct dir_info *pools[OM_MAX_POOLS];
	struct dir_info *conceal;	/* malloc_conceal's pool */
	unsigned int pool_mask;		/* npools - 1 */
	unsigned int npools;
	uintptr_t canary;		/* pool and chunk_info canaries */
	size_t guard;			/* bytes of guard after regions, G */
	uint16_t info_size[OM_NBUCKETS]; /* chunk_info record sizes */
	uint16_t bucket_total[OM_NBUCKETS]; /* slots per chunk page */
	uint32_t bucket_recip[OM_NBUCKETS]; /* ceil(2^32 / slot size) */
	uint8_t size_bucket[OM_MAXCHUNK / OM_MINSIZE + 1];
	uint16_t junk_off[OM_NBUCKETS][4]; /* level-1 junk words of a chunk */
	uint16_t page_junk[4];		/* and of a page run's first page */
	uint8_t canary_byte;		/* fill of chunk canaries, C */
	int junk_validate_full;		/* J2, F: check every junk byte */
	int bias_locks;			/* membarrier(2) granted: bias locks */
	int exit_key_ok;		/* exit_key made: threads are counted */
	int batch_frees;		/* frees into other pools queued */
	pthread_key_t exit_key;		/* its destructor is om_thread_exit */
};

extern union om_readonly_page {
	struct om_readonly mopts;
	char pad[OM_PAGE_SIZE];
} om_ro __attribute__((aligned(4096)));
#define mopts (om_ro.mopts)

void om_options_init(struct om_options *o);

/* ------------------------------------------------------------------ */
/* Random bytes (random.c) */

struct om_rng {
	uint32_t key[8];
	uint32_t counter;
	uint32_t nonce[3];
	unsigned int pos;		/* next unused byte of buf */
	uint8_t buf[512];
};

/* x86-64 compilers that build AVX2 code in a function of its own, chosen
 * at run time; om_random_wide is set where refills use it (all eight
 * blocks of the buffer at once). */
#if defined(__x86_64__) && defined(__GNUC__)
#define OM_CHACHA_AVX2 1
extern int om_random_wide;
#else
#define OM_CHACHA_AVX2 0
#endif

int om_random_global_init(void);
void om_random_fork_child(void);	/* then om_random_seed each pool */
void om_random_seed(struct om_rng *r);
void om_random_refill(struct om_rng *r);
void om_random_buf(void *p, size_t n);	/* from the global generator */

OM_INLINE uint8_t
om_rbyte(struct om_rng *r)
{
	if (OM_UNLIKELY(r->pos >= sizeof(r->buf)))
		om_random_refill(r);
	return r->buf[r->pos++];
}

OM_INLINE uint16_t
om_rword(struct om_rng *r)
{
	if (OM_UNLIKELY(r->pos + 1 >= sizeof(r->buf)))
		om_random_refill(r);
	uint16_t v = (uint16_t)(r->buf[r->pos] | r->buf[r->pos + 1] << 8);
	r->pos += 2;
	return v;
}

/* ------------------------------------------------------------------ */
/*
 * The pool lock.  Atomic read-modify-write instructions are the price of
 * a lock, so it pays one per acquire and none per release: w is taken with
 * a compare-and-swap and given back with a plain release store.  A
 * contended acquire spins briefly.  If w was taken on the waiter's own
 * CPU, its holder is not running: preempted (more threads than CPUs) or
 * blocked.  The waiter then yields the CPU, up to OM_MUTEX_YIELDS times,
 * which lets a preempted holder run out its hold at once.  Otherwise, or
 * after that, it sleeps on the futex, counted in `sleepers` while it
 * does so that a release wakes it.  A release wakes one sleeper at a
 * time: `waking` says a woken one has not run yet, and only that one
 * clears it (a wake that found nobody asleep clears it at once).  Were
 * it cleared by a sleeper whose sleep timed out, the woken one, counted
 * until it runs, would draw a futex_wake from every release meanwhile,
 * each finding nobody.  The release reads `sleepers` without a fence, so
 * a wake-up can be missed in a window of a few instructions, and only a
 * later release of the same lock makes up for it.  The sleep's timeout
 * bounds what that costs if none comes: OM_MUTEX_NAP_NS, doubled at each
 * sleep of the same wait up to OM_MUTEX_NAP_MAX_NS.  It is long because
 * it is for that case alone: a sleeper that wakes on its timeout while
 * others queue for the lock is one more thread contending for it and for
 * the CPUs.  With 500 threads on eight pools and two CPUs, naps of 0.2 ms
 * made 250,000 futex calls a second, and threadtest ran 20 times slower
 * than with 20 ms.
 * The word holds the owner's thread id, so the fork hooks know for sure
 * which locks the forking thread already holds.
 */
struct om_mutex {
	int w;			/* 0 free, else the owner's thread id */
	int sleepers;		/* threads in or about to be in futex_wait */
	int waking;		/* a sleeper was woken and has not run yet */
	int cpu;		/* the CPU w was taken on (-1: unknown) */
};
#define OM_MUTEX_NAP_NS 20000000L
#define OM_MUTEX_NAP_MAX_NS (OM_MUTEX_NAP_NS << 4)
#define OM_MUTEX_YIELDS 8

/* The CPU the calling thread runs on, as the kernel keeps it in the
 * thread's rseq area (one load); -1 where there is none. */
OM_INLINE int
om_cpu(void)
{
#if OM_HAVE_RSEQ
	if (__rseq_size != 0)
		return *(volatile int32_t *)
		    ((char *)__builtin_thread_pointer() + __rseq_offset +
		    offsetof(struct rseq, cpu_id));
#endif
	return -1;
}

int om_os_futex_wait(int *w, int val, long ns);
int om_os_futex_wake(int *w);
void om_mutex_wait(struct om_mutex *m, int owner);
void om_mutex_wake(struct om_mutex *m);

OM_INLINE int
om_mutex_trylock(struct om_mutex *m, int owner)
{
	int z = 0;

	if (!__atomic_compare_exchange_n(&m->w, &z, owner, 0,
	    __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
		return 0;
	__atomic_store_n(&m->cpu, om_cpu(), __ATOMIC_RELAXED);
	return 1;
}

/* m free, with no sleeper: a new lock, or one a fork child inherits
 * (the threads that held it or slept on it do not exist there). */
OM_INLINE void
om_mutex_init(struct om_mutex *m)
{
	m->w = 0;
	m->sleepers = 0;
	m->waking = 0;
	m->cpu = -1;
}

/* Take m for owner: at once when it is free, else after waiting. */
OM_INLINE void
om_mutex_lock(struct om_mutex *m, int owner)
{
	if (!om_mutex_trylock(m, owner))
		om_mutex_wait(m, owner);
}

/* Release; wake a sleeper unless one woken before has not run yet: on an
 * oversubscribed machine a woken thread may wait long for a CPU, and the
 * holder would otherwise pay a futex_wake for every release meanwhile. */
OM_INLINE void
om_mutex_unlock(struct om_mutex *m)
{
	__atomic_store_n(&m->w, 0, __ATOMIC_RELEASE);
	if (OM_UNLIKELY(__atomic_load_n(&m->sleepers, __ATOMIC_RELAXED) != 0) &&
	    !__atomic_load_n(&m->waking, __ATOMIC_RELAXED))
		om_mutex_wake(m);
}

/*
 * A biased pool lock.  A pool that one thread has taken OM_BIAS_FIRST
 * times in a row is handed to that thread: it then enters by setting its
 * flag in bias_in and checking that nobody holds w, with no atomic
 * instruction.  That is Dekker's store-then-load, which x86 may reorder;
 * the other side makes it sound: any other thread takes w as usual,
 * clears the bias and calls membarrier(2), which runs a full barrier on
 * every CPU running a thread of the process, then waits for the flag to
 * drop.  After the barrier either the biased thread's flag store is
 * visible, or its later loads see w taken and the bias gone and it falls
 * back to w.  Each revocation costs a system call and inter-processor
 * interrupts.  A bias taken back after fewer than OM_BIAS_PAYS biased
 * acquisitions by a thread that needs the pool doubles the run that earns
 * it back (OM_BIAS_MAX at most): pools that really are shared settle on
 * the plain lock.  One taken back after more paid for its revocation
 * many times over (a membarrier call, 2.5-5 us on a 2-CPU VM, and the
 * run that earns the bias back; a biased acquisition and release save
 * about 10 ns), and the run stays OM_BIAS_FIRST: threads that share a
 * pool but take turns at it, as more threads than CPUs do a time slice at
 * a time, each earn it in turn.  The bias of a thread that has exited is
 * taken back with neither: threads come and go, and the next one to run
 * alone in the pool earns the bias as the first did.
 *
 * Each flag has one writer: a flag (a slot of bias_in) belongs to one
 * thread for as long as that thread lives (bias_who), since a thread that
 * lost the bias may still be about to store to its flag, and would clear
 * another holder's.  The bias word names the thread and its flag, read
 * in one load, so a thread that finds the bias its own enters through its
 * own flag; release_lock finds the flag in om_self.  OM_BIAS_SLOTS
 * threads may take turns at a pool's bias; others share the plain lock.
 * Without membarrier (old kernels, seccomp), no pool is ever biased.
 */
#define OM_BIAS_FIRST	1024u
#define OM_BIAS_MAX	(1u << 24)
#define OM_BIAS_PAYS	(16u * OM_BIAS_FIRST)
#define OM_BIAS_SLOTS	4
/*
 * The bias word: the thread (never 0) in the low 32 bits, and from bit
 * OM_BIAS_SHIFT the offset of its flag in struct dir_info.  The thread
 * that finds its own id there ORs the word into om_self, whose low bits
 * are the same id and whose middle ones are free for the busy pool: a
 * hold through the bias is then om_self >> OM_BIAS_SHIFT, never 0, and
 * that is where release_lock clears the flag.
 */
#define OM_BIAS_SHIFT	48
#define OM_BIAS_FLAG0	offsetof(struct dir_info, bias_in)
#define OM_BIAS(tid, slot) ((uint64_t)(uint32_t)(tid) | (uint64_t) \
	(OM_BIAS_FLAG0 + (slot) * sizeof(int)) << OM_BIAS_SHIFT)
#define OM_BIAS_TID(b)	((int)(uint32_t)(b))
#define OM_BIAS_SLOT(b)	((unsigned int)((((b) >> OM_BIAS_SHIFT) - \
	OM_BIAS_FLAG0) / sizeof(int)))
#define OM_BIAS_FLAG(d, b) \
	((int *)(void *)((char *)(d) + ((b) >> OM_BIAS_SHIFT)))

/* ------------------------------------------------------------------ */
/* The pool (pool.c): struct dir_info, OpenBSD's name for it. */

struct region_info {
	/*
	 * Key: the page address.  Low bits: bit 0 set for a chunk page;
	 * bits 4..11 the offset of the user pointer in the first page of a
	 * region (medium regions are shifted to the page end).
	 */
	uintptr_t p;
	uintptr_t size;		/* region: requested bytes; chunk page: info */
	void *f;		/* caller, with D */
};
#define OM_REGION_CHUNK		((uintptr_t)1)
#define OM_REGION_PAGE(r)	((r)->p & ~(uintptr_t)OM_PAGE_MASK)
#define OM_REGION_OFFSET(r)	((r)->p & (OM_PAGE_MASK & ~(uintptr_t)15))
#define OM_REGION_IS_CHUNK(r)	((r)->p & OM_REGION_CHUNK)

struct chunk_info {
	struct chunk_info *next;	/* on chunk_dir[bucket][list] */
	struct chunk_info **pprev;	/* the pointer that points at this */
	uintptr_t page;
	uint32_t canary;		/* mopts.canary ^ address of this */
	uint16_t bucket;
	uint16_t size;			/* slot size */
	uint16_t free;			/* free slots */
	uint16_t total;			/* slots in the page */
	uint16_t list;			/* the list it sits on */
	uint16_t onlist;
	uint32_t recip;			/* ceil(2^32/size): off*recip >> 32 */
	uint64_t bits[OM_BITWORDS];	/* 1: slot free */
	uint64_t delayed[OM_BITWORDS];	/* 1: slot sitting in the ring */
	/* then uint16_t reqsize[total] with C, then void *f[total] with D */
};

struct om_cache_entry {
	uintptr_t p;
	uint32_t npages;
	uint8_t guarded;	/* last page is a guard (G) */
	uint8_t junked;		/* filled with free junk, validate at reuse */
	uint8_t noaccess;	/* PROT_NONE (U, F) */
	uint8_t fresh;		/* never used: still zero */
};

/*
 * A page address where used cached runs end or start (see cache.c, the
 * bounds index): the run that ends there ([0]) and the one that starts
 * there ([1]), by length (0: none) and the slot of cache[] each came in.
 */
struct om_cache_bound {
	uintptr_t at;		/* 0: none */
	uint32_t npages[2];
	uint32_t slot[2];
};

struct om_delayed {
	void *p;
	struct chunk_info *info;
};

/*
 * A range of pages to give back: unmapped, or, where `offer` holds the
 * cache entry it was (npages != 0), first offered to the depot.
 */
struct om_span {
	uintptr_t p;
	size_t len;
	struct om_cache_entry offer;
};
#define OM_PENDING	32	/* ranges deferred until the lock is dropped */

struct dir_info {
	uintptr_t canary1;
	struct om_mutex mtx;
	uint64_t bias;			/* OM_BIAS(thread, slot), or 0 */
	int bias_in[OM_BIAS_SLOTS];	/* the slot's thread holds the lock */
	int bias_cand;			/* thread that took w last ... */
	unsigned int bias_run;		/* ... that many times in a row */
	unsigned int bias_after;	/* run that earns the bias */
	const char *func;		/* API function running, for messages */
	unsigned int index;		/* position in mopts.pools */
	int conceal;			/* malloc_conceal's pool */
	int junk;			/* junk level of this pool */
	int extras;			/* more than junk level 1 to do */
	unsigned int cache_max;		/* cache scale, < and > */
	/*
	 * Live threads whose pool this is (om_thread_init counts them in,
	 * their exit out); the conceal pool and private pools count one
	 * forever.  At 0 the pool is ownerless: see om_thread_exit.
	 */
	int threads;

	/* Region hash table: open addressing, linear probing. */
	struct region_info *r;
	size_t regions_total;		/* a power of two */
	size_t regions_free;
	unsigned int regions_shift;	/* 64 - log2(regions_total) */

	/* Chunk pages with free slots, per bucket, on OM_CHUNK_LISTS lists. */
	struct chunk_info *chunk_dir[OM_NBUCKETS][OM_CHUNK_LISTS];
	uint8_t chunk_lists[OM_NBUCKETS];	/* bit l: list l not empty */
	struct chunk_info **list_sink;	/* back link of the end of a list */
	unsigned int chunk_pages_avail[OM_NBUCKETS];
	struct chunk_info *info_free[OM_NBUCKETS];	/* spare records */
	char *info_next;		/* unused part of the records pages
					 * (at first, of the pool's own) */
	size_t info_left;		/* its bytes */
	unsigned int info_shift;	/* next batch: 1 << this pages */

	/* Delayed-free ring. */
	struct om_delayed delayed[OM_DELAYED];

	/*
	 * Free-page cache: runs by length, class k holding runs of k pages
	 * and class 0 longer ones, each class a block of slots in `cache`
	 * (mapped apart from the pool, see om_cache_init).
	 */
	struct om_cache_entry *cache;
	uint16_t cache_base[OM_CACHE_CLASSES];	/* first slot of a class */
	uint16_t cache_cap[OM_CACHE_CLASSES];	/* its share of the runs */
	uint16_t cache_room[OM_CACHE_CLASSES];	/* its slots */
	uint16_t cache_n[OM_CACHE_CLASSES];	/* its runs */
	uint16_t cache_warm[OM_CACHE_CLASSES];	/* of them used, first */
	uint16_t cache_low[OM_CACHE_CLASSES];	/* fewest used this round */
	struct om_cache_bound *cache_bounds;	/* used runs by their ends,
						 * open addressing (mapped) */
	unsigned int cache_bounds_mask;	/* its slots less one */
	unsigned int cache_bounds_n;	/* addresses in it */
	/* The runs gets took whole last (0: none), and their lengths. */
	uintptr_t cache_taken[OM_CACHE_TAKEN];
	uint32_t cache_taken_npages[OM_CACHE_TAKEN];
	unsigned int cache_taken_next;	/* the slot the next one takes */
	uint32_t cache_rest;		/* the slot of the run kept last */
	uintptr_t cache_front;		/* a loop's run, not yet in its class
					 * (0: none; see om_cache_put) */
	uint32_t cache_front_npages;	/* its length */
	unsigned int cache_puts;	/* puts this round (see decay) */
	uint64_t cache_classes;		/* bit k: class k holds runs */
	unsigned int cache_used;	/* runs */
	/* A bit, by hash, for each address where a cached run starts or
	 * ends (see edge_note), after the slots; 64 less the log of its
	 * bits, and the runs noted since it was rebuilt. */
	uint64_t *cache_edges;
	unsigned int cache_edges_shift;
	unsigned int cache_edges_set;
	unsigned int cache_idle;	/* runs other pools' threads put since
					 * the last get or own put */
	uint8_t cache_idle_shift;	/* puts it waits for: IDLE_PUTS << */
	uint8_t cache_idle_gave;	/* gave runs away since a miss */
	uint32_t cache_miss_tid;	/* the thread that missed last */
	size_t cache_pages;		/* pages held */
	size_t cache_big_pages;		/* of them in class 0 */
	size_t cache_big_max;		/* and at most there */
	size_t cache_long;		/* longest run class 0 takes */
	uint32_t cache_gone[OM_CACHE_GONE];	/* runs too long for it that
						 * were unmapped lately */
	unsigned int cache_gone_next;	/* the oldest of them */
	uint32_t cache_cut_npages;	/* the length of the last run cut
					 * from a longer one, in a pool of one
					 * thread (see take_longer) ... */
	size_t cache_small_max;		/* at most in classes 1..32 */
	uintptr_t cache_cut;		/* ... and where it starts */
	uintptr_t cache_shrunk;		/* the block realloc last cut in
					 * place (see om_cache_forget) */
	/* The block realloc grew last, where it is now and its length,
	 * and the length it had as its growth began: a get of that length
	 * while its run is cached cuts it (see om_cache_get_grown). */
	uintptr_t cache_grown;
	uint32_t cache_grown_npages;
	uint32_t cache_grow_first;	/* 0: no get cuts it */

	/* Fresh pages mapped ahead, handed out on cache misses. */
	uintptr_t reserve;
	size_t reserve_pages;		/* left at reserve */
	size_t reserve_next;		/* pages the next reserve maps */

	/*
	 * Ranges evicted under the lock, handed to the depot or unmapped by
	 * unlock() after the lock is released: munmap waits for the kernel's
	 * mmap lock, which page faults of other threads hold, and the depot
	 * for other pools, and neither must stall the pool.  They are no
	 * longer reachable from any cache, so nobody can use them.
	 */
	struct om_span pending[OM_PENDING];
	unsigned int npending;

	struct om_rng rng;
	/*
	 * The next chunk allocation's random word and the next free's ring
	 * slot, drawn one call ahead: the call then starts from one load
	 * instead of waiting on the buffer's index and then the buffer.
	 */
	uint16_t rnext;
	uint8_t rring;

	/* Statistics (pool locked). */
	size_t inuse;			/* bytes handed out */
	size_t guarded;			/* bytes of guard pages */
	size_t mapped;			/* bytes mapped by this pool */
	unsigned long finds, find_collisions;
	unsigned long inserts, insert_collisions;
	unsigned long deletes, delete_moves;
	unsigned long cheap_realloc_tries, cheap_reallocs;
	/*
	 * Lookups by threads whose own pool is i that ended here, and those
	 * of them that had to leave pool i: counted by the pool that owned
	 * the pointer, under its lock.  The dump adds them up per pool i as
	 * "Other pool searches".
	 */
	unsigned long searches_from[OM_MAX_POOLS + 1];
	unsigned long left_from[OM_MAX_POOLS + 1];
	/* Acquisitions: through w (or single-threaded), through the bias. */
	unsigned long lock_plain, lock_contended;
	unsigned long long lock_wait_ns;
	unsigned long lock_biased, lock_revoked;
	/* lock_biased when the bias was last granted */
	unsigned long bias_since;
	int bias_who[OM_BIAS_SLOTS];	/* only live thread a slot may serve */

	uintptr_t canary2;
};

/* A new pool's region table lives in the pool's own pages, right after
 * its struct (om_region_table_init): the pool needs no mapping for it,
 * and a pool that owns few pages touches no page for it alone. */
#define OM_POOL_TABLE_OFFSET	((sizeof(struct dir_info) + 63) & ~(size_t)63)
#define OM_POOL_BYTES		(OM_POOL_TABLE_OFFSET + \
				 OM_HASH_INITIAL * sizeof(struct region_info))

extern int om_ready;
int om_thread_init(void);
void om_thread_exit(void *arg);
struct dir_info *om_pool_create(unsigned int index, int conceal);
int om_pool_used(unsigned int i);
int om_pool_open(unsigned int i);
void om_pool_add_searches(const struct dir_info *d, unsigned long *other,
    unsigned long *searches);
void om_pool_bias_grant(struct dir_info *d, int owner);
int om_pool_bias_revoke(struct dir_info *d, int spins, int backoff);
void om_pool_fork_prepare(void);
void om_pool_fork_parent(void);
void om_pool_fork_child(void);

/* The per-thread word: kernel thread id, and the pool being held + 1. */
extern __thread uint64_t om_self;
#define OM_SELF_TID(s)	((uint32_t)(s))

long om_os_gettid(void);

/* The calling thread's lock-owner id: its kernel thread id, never 0. */
OM_INLINE int
om_owner(void)
{
	uint32_t t = OM_SELF_TID(om_self);

	return t != 0 ? (int)t : (int)om_os_gettid();
}
#define OM_SELF_BUSY(s) ((uint32_t)((s) >> 32) & 0xffff)
#define OM_SELF_INIT	0xffffu		/* busy value while initialising */

/*
 * A thread's frees of chunks that another pool owns, waiting to be done
 * together in one hold of that pool's lock (api.c, queue).  Every listed
 * queue is on one list under the init lock, for the dump: a queued chunk
 * is no leak.  n is stored after the entries it counts, and both are
 * read by other threads, so both go through atomic accesses.
 */
#define OM_RQ_LEN	32
enum { OM_RQ_UNLISTED, OM_RQ_LISTED, OM_RQ_CLOSED };
/* An entry's low bits, below any chunk's alignment, say which function
 * queued it: 0 free, else OM_RQ_SIZED or OM_RQ_ALIGNED_SIZED. */
#define OM_RQ_TAGS	((uintptr_t)OM_MINSIZE - 1)
enum { OM_RQ_FREE, OM_RQ_SIZED, OM_RQ_ALIGNED_SIZED };
#define OM_RQ_PTR(e)	((void *)((uintptr_t)(e) & ~OM_RQ_TAGS))
struct om_rq {
	struct om_rq *next, *prev;
	unsigned int pool;		/* the pool that owns every entry */
	unsigned int n;
	int state;			/* OM_RQ_*; closed at thread exit */
	void *p[OM_RQ_LEN];
};
extern __thread struct om_rq om_rq;
void om_pool_rq_list(struct om_rq *q);
void om_pool_rq_unlist(struct om_rq *q);
size_t om_pool_rq_gather(void **out, size_t max, int try);

OM_INLINE int
om_pool_ok(const struct dir_info *d)
{
	/* Both tests, one branch. */
	return ((d->canary1 ^ ~d->canary2) |
	    (d->canary1 ^ mopts.canary ^ (uintptr_t)d)) == 0;
}

/* Security check: a pool whose canaries changed was overwritten. */
OM_INLINE void
om_pool_check(struct dir_info *d)
{
	if (OM_UNLIKELY(!om_pool_ok(d)))
		om_fatal(d, "internal struct corrupt", d);
}

/* Pool i of the array, or the conceal pool for i == npools: the order in
 * which every walk over all pools goes. */
OM_INLINE struct dir_info *
om_pool_at(unsigned int i)
{
	return i < mopts.npools ? mopts.pools[i] : mopts.conceal;
}

/* Pool i as om_pool_at, if a thread has opened it; else NULL (its pages
 * are inaccessible, and it owns nothing). */
OM_INLINE struct dir_info *
om_pool_if_open(unsigned int i)
{
	return om_pool_used(i) ? om_pool_at(i) : NULL;
}

/* No live thread has d for its pool (see om_thread_exit). */
OM_INLINE int
om_pool_ownerless(struct dir_info *d)
{
	return __atomic_load_n(&d->threads, __ATOMIC_RELAXED) == 0;
}

/* ------------------------------------------------------------------ */
/* Chunks (chunk.c): sizes up to OM_MAXCHUNK, pool locked. */

extern const uint16_t om_bucket_size[OM_NBUCKETS];

/* The bucket of a size in [1, OM_MAXCHUNK]; bucket 0 is malloc(0). */
OM_INLINE unsigned int
om_bucket_of(size_t sz)
{
	return mopts.size_bucket[(sz + OM_MINSIZE - 1) >> 4];
}

void om_chunk_init_sizes(void);
void *om_chunk_alloc(struct dir_info *d, size_t sz, unsigned int bucket,
    void *f);
void om_chunk_free(struct dir_info *d, struct region_info *r, void *p,
    int clear, size_t clearsz);
size_t om_chunk_usable(struct dir_info *d, struct region_info *r, void *p);
int om_chunk_size_ok(struct dir_info *d, struct region_info *r, void *p,
    size_t sz);
int om_chunk_resize(struct dir_info *d, struct region_info *r, void *p,
    size_t newsz);
void om_chunk_flush_delayed(struct dir_info *d);
void om_chunk_release_empty(struct dir_info *d);
unsigned int om_chunk_index(struct dir_info *d, struct chunk_info *info,
    const void *p);
void *om_chunk_caller(struct chunk_info *info, unsigned int slot);
size_t om_chunk_slot_reqsize(struct chunk_info *info, unsigned int slot);
int om_chunk_slot_used(struct chunk_info *info, unsigned int slot);

OM_INLINE struct chunk_info *
om_region_chunk(const struct region_info *r)
{
	return (struct chunk_info *)r->size;
}

/* ------------------------------------------------------------------ */
/* Regions (region.c): the hash table and page regions, pool locked. */

/*
 * The owner hint: a lock-free map from page to (pool index + 1), written
 * when a page is registered and read by free() to go straight to the pool
 * that probably owns the pointer.  Only a hint: the owner's table, under
 * its lock, has the last word, and a stale hint falls back to the search.
 * A chunk page's entry also carries its bucket + 1 above the pool, so that
 * a free into another pool can ask early for the lines its junk goes to.
 * Two levels: 1 GiB of address space per leaf of 2^18 entries.
 */
#define OM_HINT_POOL	0x1ffu		/* bits of the pool index + 1 */
#define OM_HINT_BUCKET_SHIFT 9		/* and where the bucket + 1 starts */
_Static_assert(OM_MAX_POOLS + 1 <= OM_HINT_POOL, "pool index hint bits");
_Static_assert(OM_NBUCKETS + 1 < 1 << (16 - OM_HINT_BUCKET_SHIFT),
    "bucket hint bits");
#define OM_HINT_TOP	(1UL << 17)	/* 47-bit user addresses */
#define OM_HINT_LEAF	(1UL << 18)
extern uint16_t *om_hint_top[OM_HINT_TOP];

OM_INLINE unsigned int
om_region_owner_hint(const void *p)
{
	uintptr_t top = (uintptr_t)p >> 30;
	uint16_t *leaf;

	if (OM_UNLIKELY(top >= OM_HINT_TOP))
		return 0;
	leaf = __atomic_load_n(&om_hint_top[top], __ATOMIC_ACQUIRE);
	if (OM_UNLIKELY(leaf == NULL))
		return 0;
	return __atomic_load_n(&leaf[((uintptr_t)p >> OM_PAGE_SHIFT) &
	    (OM_HINT_LEAF - 1)], __ATOMIC_RELAXED);
}

#define OM_HASH_MULT	0x9E3779B97F4A7C15ULL

/* A page's home slot in d's table: multiplicative hashing. */
OM_INLINE size_t
om_region_hash(const struct dir_info *d, uintptr_t page)
{
	return (size_t)(((page >> OM_PAGE_SHIFT) * OM_HASH_MULT) >>
	    d->regions_shift);
}

/* The entry of the page holding p, or NULL if this pool does not own it:
 * inline where free() and realloc() find a pointer's pool (findpool),
 * om_region_find elsewhere. */
OM_INLINE struct region_info *
om_region_lookup(struct dir_info *d, const void *p)
{
	uintptr_t page = (uintptr_t)p & ~(uintptr_t)OM_PAGE_MASK;
	size_t mask = d->regions_total - 1;
	size_t i = om_region_hash(d, page);
	struct region_info *r;

	d->finds++;
	for (;;) {
		r = &d->r[i];
		if (OM_LIKELY((r->p & ~(uintptr_t)OM_PAGE_MASK) == page))
			return r;
		if (r->p == 0)
			return NULL;
		d->find_collisions++;
		i = (i + 1) & mask;
	}
}

void om_region_table_init(struct dir_info *d);
struct region_info *om_region_find(struct dir_info *d, const void *p);
int om_region_insert(struct dir_info *d, uintptr_t key, uintptr_t size,
    void *f);
void om_region_delete(struct dir_info *d, struct region_info *r);
/* om_region_alloc's flags: zeroed memory; a block that moves to grow;
 * one that grows by an eighth of its size or less (om_cache_get_to_grow). */
#define OM_ALLOC_ZERO	1
#define OM_ALLOC_GROW	2
#define OM_ALLOC_STEP	4
void *om_region_alloc(struct dir_info *d, size_t sz, size_t align, int flags,
    void *f);
void om_region_free(struct dir_info *d, struct region_info *r, void *p,
    int clear, size_t clearsz);
size_t om_region_usable(struct region_info *r);

/* p, looked up to region r, must be where r's block starts: its page,
 * plus the shift of a block shorter than a page.  Anywhere else in the
 * page it is no block, for every call that takes one, as for free. */
OM_INLINE void
om_region_check(struct dir_info *d, const struct region_info *r,
    const void *p)
{
	if (OM_UNLIKELY((uintptr_t)p != OM_REGION_PAGE(r) +
	    OM_REGION_OFFSET(r)))
		om_fatal(d, "bogus pointer (double free?)", p);
}

void *om_region_realloc(struct dir_info *d, struct region_info *r, void *p,
    size_t newsz);

/* ------------------------------------------------------------------ */
/* Free-page cache and junk (cache.c), pool locked. */

int om_cache_init(struct dir_info *d);
void *om_cache_get_run(struct dir_info *d, size_t npages, int guarded,
    int *zeroed);
void *om_cache_get_front(struct dir_info *d, size_t npages, int guarded,
    int *zeroed);
void *om_cache_get_aligned(struct dir_info *d, size_t npages, int guarded,
    size_t align, int *zeroed);
void om_cache_put_run(struct dir_info *d, void *p, size_t npages,
    int guarded);
void om_cache_put(struct dir_info *d, void *p, size_t npages, int guarded);

/* npages pages from the cache (see cache.c), or NULL: by its front where
 * it holds a run (see om_cache_put). */
OM_INLINE void *
om_cache_get(struct dir_info *d, size_t npages, int guarded, int *zeroed)
{
	if (d->cache_front != 0)
		return om_cache_get_front(d, npages, guarded, zeroed);
	return om_cache_get_run(d, npages, guarded, zeroed);
}

/* A page for chunks: as om_cache_get, but never the front of the run
 * the block realloc grew last left, which that buffer's next round
 * would grow into (see om_cache_get_grown). */
OM_INLINE void *
om_cache_get_chunk_page(struct dir_info *d, int *zeroed)
{
	uint32_t first = d->cache_grow_first;
	void *p;

	d->cache_grow_first = 0;
	p = om_cache_get(d, 1, 0, zeroed);
	d->cache_grow_first = first;
	return p;
}

size_t om_cache_trim(struct dir_info *d);
int om_cache_give_back(struct dir_info *d);

/* The runs and pages a pool's cache holds, its front run among them
 * (see om_cache_put). */
OM_INLINE unsigned int
om_cache_runs(const struct dir_info *d)
{
	return d->cache_used + (d->cache_front != 0);
}

OM_INLINE size_t
om_cache_held(const struct dir_info *d)
{
	return d->cache_pages + (d->cache_front != 0 ?
	    d->cache_front_npages : 0);
}
int om_cache_take_at(struct dir_info *d, uintptr_t p, size_t npages);
void om_cache_forget(struct dir_info *d, uintptr_t p);
void om_cache_grew(struct dir_info *d, uintptr_t from, size_t frompages,
    uintptr_t to, size_t topages);
int om_cache_grow_flags(const struct dir_info *d, uintptr_t p, size_t oldsz,
    size_t newsz);

/* Whether the block at p is the one realloc grew last (see
 * om_cache_grew). */
OM_INLINE int
om_cache_grew_last(const struct dir_info *d, uintptr_t p)
{
	return p == d->cache_grown;
}

/* Whether the block at p, growing from oldsz to newsz bytes, is a buffer
 * being built up: the block realloc grew last (see om_cache_grew),
 * growing by an eighth of its size or less. */
OM_INLINE int
om_cache_building(const struct dir_info *d, uintptr_t p, size_t oldsz,
    size_t newsz)
{
	return newsz - oldsz <= oldsz / 8 && om_cache_grew_last(d, p);
}
void *om_cache_get_grown(struct dir_info *d, size_t npages, int *zeroed);
void *om_cache_get_to_grow(struct dir_info *d, size_t npages, int step,
    int *zeroed);
void om_cache_grown_to(struct dir_info *d, size_t npages);
int om_cache_has_run_to_grow(struct dir_info *d, size_t newpages);
void *om_cache_move_to_grow(struct dir_info *d, void *p, size_t npages,
    size_t newpages);
int om_cache_edges_hold(const struct dir_info *d);
size_t om_cache_depot_pages(void);
size_t om_cache_depot_limit(void);
int om_cache_depot_offer(const struct om_cache_entry *e,
    struct om_cache_entry *out);
size_t om_cache_depot_trim(void);
void om_cache_check_leaving(const char *func, const struct om_cache_entry *e);
void om_cache_fork_prepare(void);
void om_cache_fork_parent(void);
void om_cache_fork_child(void);
void om_junk_free(int level, void *p, size_t sz);

/* Level-1 junk: four words spread over the block (its first page). */
OM_INLINE size_t
om_junk_step(size_t words)
{
	return words / 4 == 0 ? 1 : words / 4;
}

/* The level-1 check: the four junk words of a block of sz bytes. */
OM_INLINE int
om_junk_sparse_ok(const void *p, size_t sz)
{
	const uint64_t *lp = p;
	size_t words = sz / sizeof(uint64_t), step = om_junk_step(words);

	for (size_t i = 0; i < words; i += step)
		if (lp[i] != OM_JUNK_FREE64)
			return 0;
	return 1;
}
void om_junk_validate(struct dir_info *d, int full, const void *p, size_t sz);

/*
 * Level-1 junk of a freed chunk: four words, word 0 and one in each later
 * quarter of the chunk (both words of a 16-byte chunk), from offsets per
 * bucket drawn at initialisation (see om_chunk_init_sizes), so that free
 * and reuse pay four stores and four loads whatever the chunk size.
 * Word 0, where a stale pointer is most often written through, is always
 * one of them.
 */
OM_INLINE void
om_junk_chunk(void *p, unsigned int bucket)
{
	const uint16_t *o = mopts.junk_off[bucket];
	char *c = p;

	for (int k = 0; k < 4; k++)
		*(uint64_t *)(void *)(c + o[k]) = OM_JUNK_FREE64;
}

OM_INLINE int
om_junk_chunk_ok(const void *p, unsigned int bucket)
{
	const uint16_t *o = mopts.junk_off[bucket];
	const char *c = p;
	uint64_t x = 0;

	for (int k = 0; k < 4; k++)
		x |= *(const uint64_t *)(const void *)(c + o[k]) ^
		    OM_JUNK_FREE64;
	return x == 0;
}

/*
 * memset, but nothing at all for n == 0.  glibc's AVX-512 memset still
 * issues a masked store, all lanes off, at p, and where p is the start of
 * a page not yet touched (the end of a block that fills its page: a
 * canary of no bytes) the store costs a microcode assist of about 170 ns.
 */
OM_INLINE void
om_fill(void *p, int c, size_t n)
{
	if (n != 0)
		memset(p, c, n);
}

/* 1 if the n bytes at p all equal c: a word at a time, since a canary
 * can run to the end of a page. */
OM_INLINE int
om_bytes_are(const void *p, uint8_t c, size_t n)
{
	const unsigned char *b = p;
	uint64_t want = c * 0x0101010101010101ULL, x = 0, w;
	size_t i = 0, k, words;

	for (; i < n && ((uintptr_t)(b + i) & 7) != 0; i++)
		x |= (uint64_t)(b[i] ^ c);
	/* A counted loop, which the compiler vectorizes. */
	words = (n - i) / 8;
	for (k = 0; k < words; k++) {
		memcpy(&w, b + i + 8 * k, 8);
		x |= w ^ want;
	}
	for (i += 8 * words; i < n; i++)
		x |= (uint64_t)(b[i] ^ c);
	return x == 0;
}

/* ------------------------------------------------------------------ */
/* The operating system (os.c): the only caller of mmap and friends. */

struct om_os_counts {
	unsigned long mmap, munmap, mprotect, madvise;
};

void *om_os_map(size_t len, int conceal);
void *om_os_remap(void *p, size_t oldlen, size_t newlen, void *to);
void *om_os_map_below(void *p, size_t len);
void *om_os_reserve(size_t len);
int om_os_commit(void *p, size_t len, int conceal);
void om_os_unmap(void *p, size_t len);
#define OM_UNMAP_SPANS	OM_PENDING	/* ranges released in one call */
void om_os_unmap_spans(struct om_span *s, unsigned int n);
void om_sort_spans(struct om_span *s, unsigned int n);
unsigned int om_join_spans(struct om_span *s, unsigned int n);
int om_os_protect(void *p, size_t len, int access);
int om_os_guard(void *p, size_t len);
int om_os_unguard(void *p, size_t len);
void om_os_counts(struct om_os_counts *c);

/* Runs the kernel would not unmap (the process at vm.max_map_count),
 * released with MADV_DONTNEED and kept for om_os_map to reuse. */
struct om_os_kept {
	unsigned int runs;
	size_t pages;
	unsigned long refused, lost;
	unsigned int blocks;		/* pages of them that hold the list */
	unsigned long held;		/* releases held back near the limit */
	long maps, maps_limit;		/* at the last count; 0: none yet */
	int holding;			/* holding back now */
};

void om_os_kept(struct om_os_kept *k);
void *om_os_map_kept(size_t len);
void om_os_trim_kept(void);
int om_os_maps_recount(void);
void om_os_fork_prepare(void);
void om_os_fork_parent(void);
void om_os_fork_child(void);
void om_os_readonly(void *p, size_t len);
long om_os_getpid(void);
int om_os_write(int fd, const void *buf, size_t len);
int om_os_membarrier_register(void);
int om_os_membarrier(void);
int om_os_thread_alive(int tid);

/* ------------------------------------------------------------------ */
/* Errors and formatting without allocation (error.c). */

struct om_buf {
	int fd;
	size_t len;
	char b[1024];
};

void om_buf_flush(struct om_buf *o);
void om_buf_puts(struct om_buf *o, const char *s);
void om_buf_printf(struct om_buf *o, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
const char *om_progname(void);
void om_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
__attribute__((noreturn)) OM_COLD void om_fatal(struct dir_info *d,
    const char *reason, const void *p);
__attribute__((noreturn)) OM_COLD void om_fatal_in(const char *func,
    const char *reason, const void *p);

/* ------------------------------------------------------------------ */
/* Statistics and the dump (dump.c). */

void om_dump_fd(int fd, int for_fatal);
void om_dump_exit(void);

/* ------------------------------------------------------------------ */
/* Pool locking (api.c). */

void om_lock(struct dir_info *d);
void om_unlock(struct dir_info *d);
void om_rq_flush(void);

#pragma GCC visibility pop

#define OM_EXPORT __attribute__((visibility("default")))

#endif /* OM_INTERNAL_H */
