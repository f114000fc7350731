/*
 * misuse_attack - one heap misuse per run, chosen by name on the command
 * line.  The test harness (test_misuse.c) runs it in a child process with
 * the MALLOC_OPTIONS under test and checks how it dies: the signal and the
 * allocator's message on stderr.  The same source is also built against
 * plain glibc (ATTACK_GLIBC) so that misuse_table.c can show what an
 * unhardened allocator does with the same mistakes.
 *
 * Protocol: before the mistake the driver writes "PTR 0x<hex>\n" to stdout
 * (with write(2), since stdio allocates) naming the pointer the allocator
 * is expected to report.  If the attack completes without being stopped it
 * writes "SURVIVED" and exits 0; functional checks (conceal, the OOM path
 * without X) exit 0 on success and 1 with a reason on stderr otherwise.
 *
 * Each attack passes its pointers through launder() so that the compiler
 * cannot see the undefined behaviour and delete or rearrange it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#ifdef ATTACK_GLIBC
#ifdef HAVE_LIBBSD
#include <bsd/stdlib.h>
#endif
#else
#include <omalloc.h>
#endif

#define PAGE 4096UL

static void *
launder(void *p)
{
	__asm__ volatile("" : "+r"(p) : : "memory");
	return p;
}

static size_t
launder_size(size_t n)
{
	__asm__ volatile("" : "+r"(n));
	return n;
}

static void
say(const char *s)
{
	size_t len = strlen(s);

	while (len > 0) {
		ssize_t n = write(STDOUT_FILENO, s, len);
		if (n <= 0)
			return;
		s += n;
		len -= (size_t)n;
	}
}

static void
complain(const char *s)
{
	ssize_t r = write(STDERR_FILENO, s, strlen(s));
	(void)r;
}

/* Announce the pointer the allocator should name in its message. */
static void
report_ptr(const void *p)
{
	char buf[32] = "PTR 0x";
	char hex[17];
	uintptr_t v = (uintptr_t)p;
	int n = 0;

	do {
		hex[n++] = "0123456789abcdef"[v & 15];
		v >>= 4;
	} while (v != 0);
	size_t at = strlen(buf);
	while (n > 0)
		buf[at++] = hex[--n];
	buf[at++] = '\n';
	buf[at] = '\0';
	say(buf);
}

static int
survived(void)
{
	say("SURVIVED\n");
	return 0;
}

static int
failed(const char *why)
{
	complain("misuse_attack: ");
	complain(why);
	complain("\n");
	return 1;
}

#if defined(ATTACK_GLIBC) && !defined(HAVE_LIBBSD)
/* glibc alone has no freezero or recallocarray: those attacks do not apply. */
#define NO_BSD_API 1
#endif

#ifdef ATTACK_GLIBC
/* glibc 2.36 has no free_sized or free_aligned_sized (C23). */
#define NO_SIZED_FREE 1
#endif

/* --- double free --- */

static int
chunk_double_free_now(void)
{
	char *p = malloc(32);

	report_ptr(p);
	free(p);
	free(launder(p));
	return survived();
}

/*
 * The first free has long left the delayed ring when the second comes:
 * 200 frees of another size class went through it.  A second chunk of
 * the same class stays allocated so the page is not given back.
 */
static int
chunk_double_free_later(void)
{
	char *p = malloc(32);
	char *keep = malloc(32);

	free(p);
	for (int i = 0; i < 200; i++)
		free(launder(malloc(200)));
	report_ptr(p);
	free(launder(p));
	free(keep);
	return survived();
}

static int
region_double_free(void)
{
	char *p = malloc(65536);

	report_ptr(p);
	free(p);
	free(launder(p));
	return survived();
}

/* realloc to newsz of a block of size bytes that was just freed: a
 * double free by another name. */
static int
realloc_freed(size_t size, size_t newsz)
{
	char *p = malloc(size);

	report_ptr(p);
	free(p);
	p = realloc(launder(p), newsz);
	free(p);
	return survived();
}

static int realloc_after_free(void) { return realloc_freed(32, 64); }

/* The same with a 64 KiB region, grown. */
static int
realloc_region_after_free(void)
{
	return realloc_freed(65536, 131072);
}

/* malloc_usable_size of a 32-byte chunk that was just freed. */
static int
usable_after_free(void)
{
	char *p = malloc(32);

	report_ptr(p);
	free(p);
	(void)launder_size(malloc_usable_size(launder(p)));
	return survived();
}

/* A size of the chunk's own class, which realloc would otherwise settle
 * in place. */
static int
realloc_after_free_same_class(void)
{
	return realloc_freed(32, 20);
}

/*
 * A 32-byte chunk allocated by a thread of another pool, which has exited
 * by the time this returns: one whose tid differs from the caller's in
 * bit 0, hence in the pool at any pool count above one.  omalloc queues a
 * free of it, to make it with others in one hold of that pool's lock.
 * The thread leaves a second chunk allocated, so that its pool, left
 * without a thread, is not retired by that free.
 */
struct other {
	void *p, *keep;
	long tid;
};

static void *
alloc_there(void *arg)
{
	struct other *o = arg;

	o->tid = syscall(SYS_gettid);
	o->p = malloc(32);
	o->keep = malloc(32);
	return NULL;
}

static void *
other_pool_chunk(void)
{
	long me = syscall(SYS_gettid);
	struct other o = { 0 };

	for (int i = 0; i < 100; i++) {
		pthread_t t;

		if (pthread_create(&t, NULL, alloc_there, &o) != 0 ||
		    pthread_join(t, NULL) != 0)
			return NULL;
		if (((o.tid ^ me) & 1) != 0)
			return o.p;
	}
	return NULL;
}

/* free(p); free(p) of another pool's chunk: both wait in the queue, and
 * the second is caught when the queue is emptied (here at exit). */
static int
remote_double_free(void)
{
	char *p = other_pool_chunk();

	if (p == NULL)
		return failed("no thread in another pool");
	report_ptr(p);
	free(p);
	free(launder(p));
	return survived();
}

/* free(p + 8) of another pool's chunk: no chunk starts there, so it is
 * not queued (a queue entry's low bits name the function that queued
 * it) but found wrong at once. */
static int
remote_chunk_plus8(void)
{
	char *p = other_pool_chunk();

	if (p == NULL)
		return failed("no thread in another pool");
	report_ptr(p + 8);
	free(launder(p + 8));
	return survived();
}

/* free(p); realloc(p, 64) of another pool's chunk: realloc makes the
 * queued frees first, and finds p freed. */
static int
remote_realloc_after_free(void)
{
	char *p = other_pool_chunk();

	if (p == NULL)
		return failed("no thread in another pool");
	report_ptr(p);
	free(p);
	p = realloc(launder(p), 64);
	free(p);
	return survived();
}

/* --- pointers that are not ours --- */

static int
free_stack(void)
{
	char buf[64];

	memset(buf, 1, sizeof(buf));
	report_ptr(buf);
	free(launder(buf));
	return survived();
}

static char static_buf[64];

static int
free_static(void)
{
	report_ptr(static_buf);
	free(launder(static_buf));
	return survived();
}

static int
realloc_stack(void)
{
	char buf[64];

	memset(buf, 1, sizeof(buf));
	report_ptr(buf);
	void *q = realloc(launder(buf), 128);
	(void)launder(q);
	return survived();
}

static int
chunk_interior(size_t size, size_t off)
{
	char *p = malloc(size);

	report_ptr(p + off);
	free(launder(p + off));
	return survived();
}

static int chunk_plus1(void) { return chunk_interior(64, 1); }
static int chunk_plus8(void) { return chunk_interior(64, 8); }
/* The middle of a 32-byte slot. */
static int chunk_mid_slot(void) { return chunk_interior(32, 16); }
/* 32-byte aligned, as a slot of the 32 class would be, but in a 64 page. */
static int chunk_other_class(void) { return chunk_interior(64, 32); }

/*
 * A slot start that was never handed out: the only 1024-byte chunk of a
 * fresh process sits alone in its page, so the next slot is free.
 */
static int
chunk_unallocated_slot(void)
{
	char *p = malloc(1024);
	uintptr_t base = (uintptr_t)p & ~(PAGE - 1);
	uintptr_t off = ((uintptr_t)p - base + 1024) & (PAGE - 1);
	char *q = (char *)(base + off);

	report_ptr(q);
	free(launder(q));
	return survived();
}

static int
realloc_chunk_interior(void)
{
	char *p = malloc(64);

	report_ptr(p + 16);
	p = realloc(launder(p + 16), 100);
	(void)launder(p);
	return survived();
}

static int
region_interior(size_t size, size_t off)
{
	char *p = malloc(size);

	report_ptr(p + off);
	free(launder(p + off));
	return survived();
}

static int region_plus_page(void) { return region_interior(65536, PAGE); }
static int region_plus16(void) { return region_interior(65536, 16); }
static int medium_plus16(void) { return region_interior(3000, 16); }

/* A block of more than half a page resized within those sizes moves
 * inside its page: the address it had is still in a page of the heap,
 * but no block starts there any more. */
static int
medium_stale_after_realloc(void)
{
	char *p = malloc(3000), *q;

	q = realloc(launder(p), 3100);
	(void)launder(q);
	report_ptr(p);
	free(launder(p));
	return survived();
}

static int
realloc_region_interior(void)
{
	char *p = malloc(65536);

	report_ptr(p + PAGE);
	p = realloc(launder(p + PAGE), 10);
	(void)launder(p);
	return survived();
}

/* p + 16 in a region's first page, given to the calls that resize or
 * measure a block in place: each must refuse it as free does, before it
 * reads or writes past the block's end. */
static int
realloc_in_place_interior(size_t size, size_t newsz)
{
	char *p = malloc(size);

	report_ptr(p + 16);
	p = realloc(launder(p + 16), newsz);
	(void)launder(p);
	return survived();
}

static int
realloc_region_plus16(void)
{
	return realloc_in_place_interior(65536, 65600);
}

static int
realloc_page_count_plus16(void)
{
	return realloc_in_place_interior(8192, 8000);
}

static int
realloc_medium_plus16(void)
{
	return realloc_in_place_interior(3000, 3010);
}

static int
usable_region_plus16(void)
{
	char *p = malloc(65536);

	report_ptr(p + 16);
	(void)launder_size(malloc_usable_size(launder(p + 16)));
	return survived();
}

static int
recalloc_region_plus16(void)
{
#ifdef NO_BSD_API
	return 77;
#else
	char *p = malloc(65536);

	report_ptr(p + 16);
	p = recallocarray(launder(p + 16), 65536, 60000, 1);
	(void)launder(p);
	return survived();
#endif
}

/* --- write after free --- */

/*
 * Write into a freed chunk, then churn the same size class until the
 * chunk is evicted from the delayed ring (and reused): the junk check on
 * the way out must notice.
 */
static int
chunk_waf_churn(void)
{
	volatile char *p = malloc(64);

	report_ptr((void *)p);
	free((void *)p);
	p = launder((void *)p);
	p[0] = 0x41;
	for (int i = 0; i < 2000; i++)
		free(launder(malloc(64)));
	return survived();
}

/*
 * Write into a freed chunk and free one other chunk straight away.  With
 * F every free validates the junk of the whole delayed ring.
 */
static int
chunk_waf_next_free(void)
{
	char *q = malloc(64);
	volatile char *p = malloc(64);

	report_ptr((void *)p);
	free((void *)p);
	p = launder((void *)p);
	p[0] = 0x41;
	free(q);
	return survived();
}

/*
 * A thread writes into a chunk it freed, then exits.  It was the only
 * thread of its pool (the main thread's tid is one less), which gives
 * back its delayed ring as the thread exits and checks the junk on the
 * way out.
 */
static void *
waf_then_exit(void *arg)
{
	volatile char *p = malloc(64);

	(void)arg;
	report_ptr((void *)p);
	free((void *)p);
	p = launder((void *)p);
	p[0] = 0x41;
	return NULL;
}

static int
thread_waf_exit(void)
{
	pthread_t t;

	free(launder(malloc(64)));
	if (pthread_create(&t, NULL, waf_then_exit, NULL) != 0 ||
	    pthread_join(t, NULL) != 0)
		return failed("pthread");
	return survived();
}

/* Pages in the free-page cache are PROT_NONE with U (and F). */
static int
page_waf(void)
{
	volatile char *p = malloc(4 * PAGE);

	report_ptr((void *)p);
	free((void *)p);
	p = launder((void *)p);
	p[0] = 0x41;
	/* Reuse the cached pages, in case validation happens there. */
	free(launder(malloc(4 * PAGE)));
	return survived();
}

/* --- overflows --- */

/* One byte past the requested 13, inside the 16-byte slot. */
static int
chunk_canary(void)
{
	volatile char *p = malloc(13);

	report_ptr((void *)p);
	p = launder((void *)p);
	p[13] = (char)~p[13];
	free((void *)p);
	return survived();
}

/* freezero or free_sized of a block of alloc bytes, claiming claim bytes;
 * NULL where the library under attack lacks the function. */
#ifdef NO_BSD_API
#define FREEZERO NULL
#else
#define FREEZERO freezero
#endif
#ifdef NO_SIZED_FREE
#define FREE_SIZED NULL
#else
#define FREE_SIZED free_sized
#endif

static int
claim_size(void (*release)(void *, size_t), size_t alloc, size_t claim)
{
	char *p;

	if (release == NULL)
		return 77;
	p = malloc(alloc);
	report_ptr(p);
	release(launder(p), launder_size(claim));
	return survived();
}

/* Larger than the 32-byte slot: wrong with or without C. */
static int freezero_chunk_big(void) { return claim_size(FREEZERO, 32, 48); }
/* Within the slot, one past the request: only C records the request. */
static int freezero_chunk_C(void) { return claim_size(FREEZERO, 13, 14); }
static int freezero_region_big(void)
{
	return claim_size(FREEZERO, 20000, 40000);
}
static int free_sized_chunk_big(void) { return claim_size(FREE_SIZED, 32, 48); }
static int free_sized_chunk_C(void) { return claim_size(FREE_SIZED, 13, 14); }
static int free_sized_region_big(void)
{
	return claim_size(FREE_SIZED, 20000, 40000);
}

/* A block of alloc bytes freed, then freed again by release, with its
 * own size. */
static int
double_claim(void (*release)(void *, size_t), size_t alloc)
{
	char *p;

	if (release == NULL)
		return 77;
	p = malloc(alloc);
	report_ptr(p);
	free(p);
	release(launder(p), launder_size(alloc));
	return survived();
}

static int free_sized_double(void) { return double_claim(FREE_SIZED, 32); }
static int freezero_double(void) { return double_claim(FREEZERO, 32); }
static int freezero_region_double(void)
{
	return double_claim(FREEZERO, 65536);
}

/* Twice the alignment the block has, whatever slot it got. */
static int
free_aligned_sized_misaligned(void)
{
#ifdef NO_SIZED_FREE
	return 77;
#else
	char *p = malloc(48);
	uintptr_t a = (uintptr_t)p & -(uintptr_t)p;

	report_ptr(p);
	free_aligned_sized(launder(p), launder_size(2 * a), launder_size(48));
	return survived();
#endif
}

/*
 * Sized frees of another pool's 32-byte chunk.  free(p) then a sized free
 * of p: both are queued (the size fits the slot), and the second is
 * caught when the queue is emptied, named as the function that queued
 * it.  A size too large for the slot is not queued: it aborts at once.
 */
static int
remote_sized(int how)
{
#ifdef NO_SIZED_FREE
	(void)how;
	return 77;
#else
	char *p = other_pool_chunk();

	if (p == NULL)
		return failed("no thread in another pool");
	report_ptr(p);
	if (how == 2) {
		free_sized(launder(p), launder_size(48));
		return survived();
	}
	free(p);
	if (how == 0)
		free_sized(launder(p), launder_size(32));
	else
		free_aligned_sized(launder(p), launder_size(16),
		    launder_size(32));
	return survived();
#endif
}

static int remote_free_sized_double(void) { return remote_sized(0); }
static int remote_free_aligned_sized_double(void) { return remote_sized(1); }
static int remote_free_sized_big(void) { return remote_sized(2); }

static int
recalloc_wrong(size_t n, size_t claim, size_t grow, size_t elem)
{
#ifdef NO_BSD_API
	(void)n;
	(void)claim;
	(void)grow;
	(void)elem;
	return 77;
#else
	char *p = recallocarray(NULL, 0, n, elem);

	report_ptr(p);
	p = recallocarray(launder(p), launder_size(claim), grow, elem);
	(void)launder(p);
	return survived();
#endif
}

/* 100 bytes allocated, 200 claimed. */
static int recalloc_chunk_big(void) { return recalloc_wrong(10, 20, 30, 10); }
/* 10000 bytes allocated, 1000 claimed. */
static int
recalloc_region_small(void)
{
	return recalloc_wrong(100, 10, 200, 100);
}
/* 100 allocated, 90 claimed: fits the slot, so only C can tell. */
static int recalloc_chunk_C(void) { return recalloc_wrong(10, 9, 20, 10); }

/* The first byte after a three-page region: the guard page with G. */
static int
region_overflow(void)
{
	volatile char *p = malloc(3 * PAGE);

	report_ptr((void *)p);
	p = launder((void *)p);
	p[3 * PAGE] = 0x41;
	return survived();
}

/*
 * Sizes between half a page and a page end within 16 bytes of their
 * page's end, so 16 bytes past the request is on the next page.
 */
static int
medium_overflow(void)
{
	volatile char *p = malloc(3000);
	uintptr_t end = (uintptr_t)p + 3000;
	uintptr_t page_end = ((uintptr_t)p & ~(PAGE - 1)) + PAGE;

	report_ptr((void *)p);
	if (page_end - end >= 16)
		complain("misuse_attack: block not at the end of its page\n");
	p = launder((void *)p);
	p[3000 + 16] = 0x41;
	return survived();
}

/* --- malloc(0) --- */

static int
malloc0_read(void)
{
	volatile char *p = malloc(0);

	if (p == NULL)
		return failed("malloc(0) returned NULL");
	report_ptr((void *)p);
	p = launder((void *)p);
	char c = p[0];
	(void)c;
	return survived();
}

static int
malloc0_write(void)
{
	volatile char *p = malloc(0);

	if (p == NULL)
		return failed("malloc(0) returned NULL");
	report_ptr((void *)p);
	p = launder((void *)p);
	p[0] = 0x41;
	return survived();
}

static int
realloc0_read(void)
{
	char *q = malloc(100);
	volatile char *p = realloc(q, 0);

	if (p == NULL)
		return failed("realloc(p, 0) returned NULL");
	report_ptr((void *)p);
	p = launder((void *)p);
	char c = p[0];
	(void)c;
	return survived();
}

/* --- out of memory --- */

static int
oom_malloc(void)
{
	errno = 0;
	void *p = malloc(launder_size(SIZE_MAX / 2));

	if (p != NULL)
		return failed("malloc(SIZE_MAX / 2) succeeded");
	if (errno != ENOMEM)
		return failed("malloc(SIZE_MAX / 2) did not set ENOMEM");
	return 0;
}

static int
oom_calloc(void)
{
	errno = 0;
	void *p = calloc(launder_size(SIZE_MAX / 2), 4);

	if (p != NULL)
		return failed("calloc(SIZE_MAX / 2, 4) succeeded");
	if (errno != ENOMEM)
		return failed("calloc(SIZE_MAX / 2, 4) did not set ENOMEM");
	return 0;
}

/*
 * The same after the allocator has started: options such as X are read at
 * the first call, and an overflow refused before that must still obey them.
 */
static int
oom_calloc_warm(void)
{
	free(launder(malloc(16)));
	return oom_calloc();
}

/* --- recursion --- */

static volatile sig_atomic_t handler_calls;

static void
alarm_malloc(int sig)
{
	(void)sig;
	free(launder(malloc(16)));
	handler_calls++;
}

/*
 * A timer signal whose handler allocates, while the main loop spends
 * nearly all its time inside malloc and free.  Sooner or later the
 * handler lands inside the allocator; the loop is bounded by time (two
 * seconds) so that a missed detection ends instead of running forever,
 * and the harness kills a deadlocked child.
 */
static int
recursion_loop(int warm)
{
	struct sigaction sa;
	struct itimerval it = {{0, 100}, {0, 100}};
	struct timespec start, now;
	void *slots[64] = {0};

	if (warm)
		free(launder(malloc(16)));
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = alarm_malloc;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_RESTART;
	sigaction(SIGALRM, &sa, NULL);
	clock_gettime(CLOCK_MONOTONIC, &start);
	setitimer(ITIMER_REAL, &it, NULL);
	for (unsigned long i = 0;; i++) {
		unsigned j = i & 63;

		free(slots[j]);
		slots[j] = malloc(16 + (i * 37) % 3000);
		if ((i & 1023) == 0) {
			clock_gettime(CLOCK_MONOTONIC, &now);
			if (now.tv_sec - start.tv_sec >= 2)
				break;
		}
	}
	memset(&it, 0, sizeof(it));
	setitimer(ITIMER_REAL, &it, NULL);
	if (handler_calls == 0)
		return failed("the timer never fired");
	return survived();
}

/* The allocator is initialised before the timer starts. */
static int recursion(void) { return recursion_loop(1); }

/*
 * The timer runs from before the first allocation of the process, so the
 * handler may also interrupt the allocator's initialisation.
 */
static int recursion_init(void) { return recursion_loop(0); }

/* --- conceal (functional) --- */

#ifndef ATTACK_GLIBC
static int
all_zero(const unsigned char *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != 0)
			return 0;
	return 1;
}

static int
conceal_one(size_t size)
{
	unsigned char *p = malloc_conceal(size);

	if (p == NULL)
		return failed("malloc_conceal returned NULL");
	if (((uintptr_t)p & 15) != 0)
		return failed("malloc_conceal pointer not 16-byte aligned");
	if (malloc_usable_size(p) < size)
		return failed("malloc_usable_size below the request");
	memset(p, 0xa5, size);
	unsigned char *q = realloc(p, size * 2);
	if (q == NULL)
		return failed("realloc of a conceal block failed");
	if (q == p)
		return failed("realloc of a conceal block did not move it");
	for (size_t i = 0; i < size; i++)
		if (q[i] != 0xa5)
			return failed("realloc of a conceal block lost data");
	memset(q, 0x5a, size * 2);
	free(q);

	/* Dirty a block, free it, then ask for zeroed memory of that size. */
	p = malloc_conceal(size);
	if (p == NULL)
		return failed("malloc_conceal returned NULL");
	memset(p, 0xff, size);
	free(p);
	p = calloc_conceal(size / 8, 8);
	if (p == NULL)
		return failed("calloc_conceal returned NULL");
	if (!all_zero(p, size / 8 * 8))
		return failed("calloc_conceal memory not zeroed");
	free(p);

	errno = 0;
	if (calloc_conceal(SIZE_MAX / 4, 8) != NULL || errno != ENOMEM)
		return failed("calloc_conceal overflow not refused with "
		    "ENOMEM");
	return 0;
}
#endif

/* glibc has no conceal pool: not applicable there. */
static int
conceal(void)
{
#ifdef ATTACK_GLIBC
	return 77;
#else
	static const size_t sizes[] = {8, 16, 100, 2048, 3000, 4096, 20000,
	    300000};

	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		int r = conceal_one(sizes[i]);
		if (r != 0)
			return r;
	}
	/* Conceal blocks and ordinary ones side by side. */
	void *a = malloc_conceal(64), *b = malloc(64);
	if (a == NULL || b == NULL || a == b)
		return failed("conceal and ordinary blocks overlap");
	free(a);
	free(b);
	return 0;
#endif
}

static const struct {
	const char *name;
	int (*fn)(void);
} attacks[] = {
#define A(n) {#n, n}
	A(chunk_double_free_now),
	A(chunk_double_free_later),
	A(region_double_free),
	A(realloc_after_free),
	A(realloc_after_free_same_class),
	A(realloc_region_after_free),
	A(usable_after_free),
	A(remote_double_free),
	A(remote_realloc_after_free),
	A(remote_chunk_plus8),
	A(remote_free_sized_double),
	A(remote_free_aligned_sized_double),
	A(remote_free_sized_big),
	A(free_stack),
	A(free_static),
	A(realloc_stack),
	A(chunk_plus1),
	A(chunk_plus8),
	A(chunk_mid_slot),
	A(chunk_other_class),
	A(chunk_unallocated_slot),
	A(realloc_chunk_interior),
	A(region_plus_page),
	A(region_plus16),
	A(medium_plus16),
	A(medium_stale_after_realloc),
	A(realloc_region_interior),
	A(realloc_region_plus16),
	A(realloc_page_count_plus16),
	A(realloc_medium_plus16),
	A(usable_region_plus16),
	A(recalloc_region_plus16),
	A(chunk_waf_churn),
	A(chunk_waf_next_free),
	A(thread_waf_exit),
	A(page_waf),
	A(chunk_canary),
	A(freezero_chunk_big),
	A(freezero_chunk_C),
	A(freezero_region_big),
	A(free_sized_chunk_big),
	A(free_sized_chunk_C),
	A(free_sized_region_big),
	A(free_sized_double),
	A(freezero_double),
	A(freezero_region_double),
	A(free_aligned_sized_misaligned),
	A(recalloc_chunk_big),
	A(recalloc_region_small),
	A(recalloc_chunk_C),
	A(region_overflow),
	A(medium_overflow),
	A(malloc0_read),
	A(malloc0_write),
	A(realloc0_read),
	A(oom_malloc),
	A(oom_calloc),
	A(oom_calloc_warm),
	A(recursion),
	A(recursion_init),
	A(conceal),
#undef A
};

int
main(int argc, char **argv)
{
	if (argc != 2) {
		complain("usage: misuse_attack <attack>\n");
		return 2;
	}
	for (size_t i = 0; i < sizeof(attacks) / sizeof(attacks[0]); i++)
		if (strcmp(argv[1], attacks[i].name) == 0)
			return attacks[i].fn();
	complain("misuse_attack: unknown attack\n");
	return 2;
}
