/*
 * test_dump.c - dump.c: the statistics dump, in OpenBSD's layout, written
 * to a pipe by om_dump_fd.  Registered with D as well (leak report).
 */
#define _GNU_SOURCE	/* F_SETPIPE_SZ */
#include "unit.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "omalloc.h"

static char out[1 << 20];

/* The whole dump in out. */
static const char *
dump(void)
{
	int fds[2];
	size_t len = 0;
	ssize_t n;

	ck_assert_int_eq(pipe(fds), 0);
	/* Room for the whole dump, so no reader thread is needed. */
	fcntl(fds[1], F_SETPIPE_SZ, 1 << 20);
	om_dump_fd(fds[1], 0);
	close(fds[1]);
	while ((n = read(fds[0], out + len, sizeof(out) - 1 - len)) > 0)
		len += (size_t)n;
	close(fds[0]);
	out[len] = '\0';
	return out;
}

static int
count(const char *hay, const char *needle)
{
	int n = 0;

	while ((hay = strstr(hay, needle)) != NULL) {
		n++;
		hay++;
	}
	return n;
}

/* The number after `field` in pool idx's section (idx -1: conceal). */
static long long
pool_field(const char *text, int idx, const char *field)
{
	char head[64];
	const char *s, *next;

	if (idx < 0)
		snprintf(head, sizeof(head), "pool conceal at ");
	else
		snprintf(head, sizeof(head), "pool %d at ", idx);
	s = strstr(text, head);
	ck_assert_msg(s != NULL, "no section %s", head);
	next = strstr(s + 1, "Malloc dir of");
	s = strstr(s, field);
	ck_assert_msg(s != NULL && (next == NULL || s < next),
	    "no \"%s\" in %s", field, head);
	return strtoll(s + strlen(field), NULL, 10);
}

static int
own_pool(void)
{
	return (int)(OM_SELF_TID(om_self) & mopts.pool_mask);
}

START_TEST(frame)
{
	const char *d;
	char line[256];
	size_t n;

	unit_init();
	d = dump();
	ck_assert_msg(strncmp(d, "******** Start dump test_dump *******\n",
	    38) == 0, "starts with: %.60s", d);
	n = strlen(d);
	ck_assert_uint_gt(n, 40);
	ck_assert_str_eq(d + n - 36, "******** End dump test_dump *******\n");
	ck_assert_int_eq(count(d, "******** Start dump"), 1);
	ck_assert_int_eq(count(d, "******** End dump"), 1);
	const char *mt;

	snprintf(line, sizeof(line), " M=%u I=1 F=%d U=%d J=%d R=%d "
	    "X=%d C=%d cache=%d G=%zu\n", mopts.npools, mopts.opt.freecheck,
	    mopts.opt.freeunmap, mopts.opt.junk, mopts.opt.realloc_move,
	    mopts.opt.xmalloc, mopts.opt.chunk_canaries,
	    mopts.opt.cache_pages, mopts.guard);
	/* MT says whether threads were seen: either, in this program. */
	mt = strstr(d, "\nMT=");
	ck_assert_ptr_nonnull(mt);
	ck_assert(mt[4] == '0' || mt[4] == '1');
	ck_assert_msg(strncmp(mt + 5, line, strlen(line)) == 0,
	    "options line %.80s is not MT=.%s", mt + 1, line);
}
END_TEST

START_TEST(one_section_per_pool)
{
	const char *d;
	char head[128];
	unsigned int i;

	unit_init();
	d = dump();
	ck_assert_int_eq(count(d, "Malloc dir of test_dump pool "),
	    (int)mopts.npools + 1);
	for (i = 0; i < mopts.npools; i++) {
		snprintf(head, sizeof(head),
		    "Malloc dir of test_dump pool %u at %p\n", i,
		    (void *)mopts.pools[i]);
		ck_assert_msg(strstr(d, head) != NULL, "no \"%s\"", head);
	}
	snprintf(head, sizeof(head),
	    "Malloc dir of test_dump pool conceal at %p\n",
	    (void *)mopts.conceal);
	ck_assert_msg(strstr(d, head) != NULL, "no \"%s\"", head);
	/* Every section has every line. */
	ck_assert_int_eq(count(d, "\nRegion slots free "), mopts.npools + 1);
	ck_assert_int_eq(count(d, "\nFinds "), mopts.npools + 1);
	ck_assert_int_eq(count(d, "\nInserts "), mopts.npools + 1);
	ck_assert_int_eq(count(d, "\nDeletes "), mopts.npools + 1);
	ck_assert_int_eq(count(d, "\nCheap reallocs "), mopts.npools + 1);
	ck_assert_int_eq(count(d, "\nOther pool searches "),
	    mopts.npools + 1);
	ck_assert_int_eq(count(d, "\nLock acquisitions "), mopts.npools + 1);
	ck_assert_int_eq(count(d, "\nIn use "), mopts.npools + 1);
	ck_assert_int_eq(count(d, "\nGuarded "), mopts.npools + 1);
	ck_assert_int_eq(count(d, "\nFree chunk structs:"), mopts.npools + 1);
	ck_assert_int_eq(count(d, "\nFree pages cached: "), mopts.npools + 1);
	ck_assert_int_eq(count(d, "Leak report:"), mopts.opt.dump ? 1 : 0);
}
END_TEST

/* A pool no thread has opened gets its section, all zero, without being
 * opened by the dump. */
START_TEST(closed_pool_section)
{
	const char *d;
	int closed;

	free(malloc(1));	/* not unit_init, which opens every pool */
	for (closed = 0; closed < (int)mopts.npools &&
	    om_pool_used((unsigned int)closed); closed++)
		;
	if (closed == (int)mopts.npools)
		return;		/* one pool, this thread's */
	d = dump();
	ck_assert_int_eq(count(d, "Malloc dir of test_dump pool "),
	    (int)mopts.npools + 1);
	ck_assert_int_eq(pool_field(d, closed, "Region slots free "), 0);
	ck_assert_int_eq(pool_field(d, closed, "Lock acquisitions "), 0);
	ck_assert_int_eq(pool_field(d, closed, "In use "), 0);
	ck_assert_int_gt(pool_field(d, own_pool(), "Region slots free "), 0);
	ck_assert(!om_pool_used((unsigned int)closed));
}
END_TEST

START_TEST(in_use_grows)
{
	long long before, after, chunk;
	char *volatile big, *volatile small;
	int me;

	unit_init();
	me = own_pool();
	before = pool_field(dump(), me, "\nIn use ");
	big = malloc(100000);
	ck_assert_ptr_nonnull(big);
	after = pool_field(dump(), me, "\nIn use ");
	ck_assert_int_eq(after - before, (long long)OM_PAGEROUND(100000));
	small = malloc(100);
	chunk = pool_field(dump(), me, "\nIn use ");
	ck_assert_int_eq(chunk - after, 112);
	free(big);
	free(small);
	ck_assert_int_eq(pool_field(dump(), me, "\nIn use "), before);
	ck_assert_int_eq(pool_field(dump(), -1, "\nIn use "), 0);
}
END_TEST

START_TEST(counters_shown)
{
	struct dir_info *d;
	const char *text;
	long long inserts, deletes, slots_free, guarded;
	char *volatile p;
	int me;

	unit_init();
	me = own_pool();
	d = mopts.pools[me];
	text = dump();
	inserts = pool_field(text, me, "\nInserts ");
	deletes = pool_field(text, me, "\nDeletes ");
	slots_free = pool_field(text, me, "\nRegion slots free ");
	/* The guard pages of the blocks live now (G): the harness's own. */
	guarded = pool_field(text, me, "\nGuarded ");
	ck_assert_int_eq(guarded, (long long)d->guarded);
	ck_assert_int_gt(slots_free, 0);
	ck_assert_int_le(slots_free, (long long)d->regions_total);
	p = malloc(5 * OM_PAGE_SIZE);
	ck_assert_uint_eq(d->guarded, (size_t)guarded + mopts.guard);
	free(p);
	text = dump();
	ck_assert_int_eq(pool_field(text, me, "\nInserts "), inserts + 1);
	ck_assert_int_eq(pool_field(text, me, "\nDeletes "), deletes + 1);
	ck_assert_int_ge(pool_field(text, me, "\nLock acquisitions "), 0);
	ck_assert_int_eq(pool_field(text, me, "\nGuarded "), guarded);
	if (!mopts.guard)
		ck_assert_int_eq(guarded, 0);
}
END_TEST

/* A malloc/free loop's run, kept in the page cache's front beside its
 * class, is counted among the pages cached. */
START_TEST(front_counted)
{
	struct dir_info *d = unit_front_pool();
	char *p;
	int me = own_pool();

	if (d == NULL)
		return;
	p = unit_front_loop(d);
	ck_assert_int_eq(pool_field(dump(), me, "\nFree pages cached: "),
	    (long long)d->cache_pages + UNIT_FRONT_PAGES);
	ck_assert_ptr_eq((void *)d->cache_front, p);
}
END_TEST

START_TEST(gdump_same_layout)
{
	int fds[2];
	char buf[4096];
	ssize_t n;

	unit_init();
	ck_assert_int_eq(pipe(fds), 0);
	fcntl(fds[1], F_SETPIPE_SZ, 1 << 20);
	malloc_gdump(fds[1]);
	close(fds[1]);
	n = read(fds[0], buf, sizeof(buf) - 1);
	close(fds[0]);
	ck_assert_int_gt(n, 0);
	buf[n] = '\0';
	ck_assert(strncmp(buf, "******** Start dump test_dump", 29) == 0);
	ck_assert_ptr_nonnull(strstr(buf, " M="));
	ck_assert_ptr_nonnull(strstr(buf, "\nMT="));
}
END_TEST

START_TEST(leak_report)
{
	const char *text, *rep;
	void *volatile p;

	unit_init();
	if (!mopts.opt.dump)
		return;
	p = malloc(77777);
	text = dump();
	rep = strstr(text, "Leak report:\n");
	ck_assert_ptr_nonnull(rep);
	ck_assert_ptr_nonnull(strstr(rep, "     f     sum      #    avg\n"));
	/* Our own allocation, by caller as object+offset. */
	ck_assert_msg(strstr(rep, "test_dump+0x") != NULL, "%s", rep);
	ck_assert_ptr_nonnull(strstr(rep, " 77777 "));
	free(p);
}
END_TEST

/*
 * Chunks that another thread has freed, but still holds in its queue of
 * frees into other pools, are no leaks: the leak report leaves them out
 * although their pool still counts them in use.
 */
#define QUEUED_N 23
#define QUEUED_SIZE 999

struct freer {
	void *blk[QUEUED_N];
	unsigned int avoid;	/* the allocating thread's pool */
	int other;		/* this thread's pool is another */
	unsigned int queued;
	int ready, go;
};

/* One call site for all of them, however the loop is unrolled: the
 * leak report groups by caller.  Not a tail call either. */
static __attribute__((noinline)) void *
alloc_one(void)
{
	void *p = malloc(QUEUED_SIZE);

	__asm__ volatile("" : : "r"(p) : "memory");
	return p;
}

static void *
free_from_elsewhere(void *arg)
{
	struct freer *f = arg;
	unsigned int i;

	if (((unsigned int)syscall(SYS_gettid) & mopts.pool_mask) ==
	    f->avoid) {
		__atomic_store_n(&f->ready, 1, __ATOMIC_RELEASE);
		return NULL;
	}
	f->other = 1;
	/* Some by size: queued too, tagged with the function. */
	for (i = 0; i < QUEUED_N; i++)
		if (i % 3 == 0)
			free_sized(f->blk[i], QUEUED_SIZE);
		else if (i % 3 == 1)
			free_aligned_sized(f->blk[i], 16, QUEUED_SIZE);
		else
			free(f->blk[i]);
	f->queued = om_rq.n;
	__atomic_store_n(&f->ready, 1, __ATOMIC_RELEASE);
	while (!__atomic_load_n(&f->go, __ATOMIC_ACQUIRE))
		usleep(1000);
	return NULL;
}

START_TEST(queued_frees_not_leaks)
{
	struct freer f = { 0 };
	struct dir_info *d;
	const char *rep;
	char want[32];
	size_t inuse;
	unsigned int i;
	pthread_t t;

	unit_init();
	if (!mopts.opt.dump || !mopts.batch_frees)
		return;
	f.avoid = (unsigned int)syscall(SYS_gettid) & mopts.pool_mask;
	d = mopts.pools[f.avoid];
	for (i = 0; i < QUEUED_N; i++)
		f.blk[i] = alloc_one();
	snprintf(want, sizeof(want), " %d %6d ", QUEUED_N * QUEUED_SIZE,
	    QUEUED_N);
	rep = strstr(dump(), "Leak report:");
	ck_assert_msg(strstr(rep, want) != NULL, "%.3000s", rep);
	for (;;) {
		ck_assert_int_eq(pthread_create(&t, NULL, free_from_elsewhere,
		    &f), 0);
		while (!__atomic_load_n(&f.ready, __ATOMIC_ACQUIRE))
			usleep(1000);
		if (f.other)
			break;
		ck_assert_int_eq(pthread_join(t, NULL), 0);
		f.ready = 0;
	}
	ck_assert_uint_eq(f.queued, QUEUED_N);
	inuse = d->inuse;
	rep = strstr(dump(), "Leak report:");
	ck_assert_msg(strstr(rep, want) == NULL, "%.3000s", rep);
	/* The thread's exit makes the frees: until then the pool counted
	 * the 1 KiB slots in use. */
	__atomic_store_n(&f.go, 1, __ATOMIC_RELEASE);
	ck_assert_int_eq(pthread_join(t, NULL), 0);
	ck_assert_uint_le(d->inuse, inuse - QUEUED_N * 1024);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("dump");
	TCase *t = tcase_create("dump");

	tcase_add_test(t, frame);
	tcase_add_test(t, one_section_per_pool);
	tcase_add_test(t, closed_pool_section);
	tcase_add_test(t, in_use_grows);
	tcase_add_test(t, counters_shown);
	tcase_add_test(t, gdump_same_layout);
	tcase_add_test(t, front_counted);
	tcase_add_test(t, leak_report);
	tcase_add_test(t, queued_frees_not_leaks);
	suite_add_tcase(s, t);
	return unit_main(s);
}
