/*
 * test_threads_stress.c - many threads against one heap.
 *
 * - random operations in 8 threads, a quarter of the blocks handed to other
 *   threads through a mailbox and freed there, every block's contents
 *   checked before it is freed or resized;
 * - 5000 short-lived threads that allocate, free and hand blocks back to
 *   the main thread: mapped memory must not grow between 1000 and 5000;
 * - realloc chains that grow blocks byte by byte, by factors and by pages
 *   up to 4 MiB and shrink them back, in several threads at once;
 * - 4 threads of page-sized blocks with the process at vm.max_map_count,
 *   where the kernel refuses most munmap calls and freed runs are
 *   released in place and reused; a malloc that needs a new mapping may
 *   fail there, with ENOMEM, and the heap must stay sound.
 * Each case is bounded in operations and in time (about a second).
 */
#include <check.h>
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <omalloc.h>

#include "util.h"

#define NTHREADS 8
#define NSLOTS 256
#define MAILBOX 1024
#define MAX_SIZE ((size_t)1 << 20)

struct block {
	unsigned char *p;
	size_t size;
	uint32_t id;
};

struct mailbox_slot {
	pthread_mutex_t lock;
	struct block b;
};

static struct mailbox_slot mailbox[MAILBOX];
static atomic_uint next_id;
static atomic_ulong total_ops, cross_frees;
static double deadline;

static void
check_block(const struct block *b, const char *what)
{
	size_t bad = st_check(b->p, b->size, b->id);

	ST_REQUIRE(bad == (size_t)-1,
	    "%s: block %p size %zu id %u corrupt at byte %zu", what,
	    (void *)b->p, b->size, b->id, bad);
	ST_REQUIRE(malloc_usable_size(b->p) >= b->size,
	    "%s: usable size %zu < %zu", what, malloc_usable_size(b->p),
	    b->size);
}

static void
new_block(struct block *b, unsigned char *p, size_t size)
{
	ST_REQUIRE(p != NULL, "allocation of %zu failed: errno %d", size,
	    errno);
	ST_REQUIRE(((uintptr_t)p & 15) == 0, "%p not 16-byte aligned",
	    (void *)p);
	b->p = p;
	b->size = size;
	b->id = atomic_fetch_add(&next_id, 1);
	st_fill(p, size, b->id);
}

static void
free_block(struct block *b, const char *what)
{
	if (b->p == NULL)
		return;
	check_block(b, what);
	free(b->p);
	b->p = NULL;
}

/* Swap b with a random mailbox slot: the other thread's block is ours. */
static void
exchange(struct block *b, uint64_t *rng)
{
	struct mailbox_slot *m = &mailbox[st_rand(rng) % MAILBOX];
	struct block t;

	pthread_mutex_lock(&m->lock);
	t = m->b;
	m->b = *b;
	pthread_mutex_unlock(&m->lock);
	*b = t;
	if (b->p != NULL) {
		atomic_fetch_add(&cross_frees, 1);
		free_block(b, "cross-thread free");
	}
}

static void *
worker(void *arg)
{
	uint64_t rng = (uintptr_t)arg * 7919 + 1;
	struct block *slots = calloc(NSLOTS, sizeof(*slots));
	unsigned long ops = 0;

	ST_REQUIRE(slots != NULL, "calloc");
	while (ops < 200000 && (ops % 256 != 0 || st_now() < deadline)) {
		struct block *b = &slots[st_rand(&rng) % NSLOTS];
		unsigned op = st_rand(&rng) % 10;
		size_t size = st_size(&rng, MAX_SIZE);
		unsigned char *q;

		ops++;
		switch (op) {
		case 0:
		case 1:
		case 2:
			free_block(b, "free");
			new_block(b, malloc(size), size);
			break;
		case 3:
			free_block(b, "free");
			q = calloc(1, size);
			ST_REQUIRE(q != NULL, "calloc(1, %zu) failed", size);
			for (size_t i = 0; i < size; i++)
				ST_REQUIRE(q[i] == 0, "calloc byte %zu", i);
			new_block(b, q, size);
			break;
		case 4:
			free_block(b, "free");
			new_block(b,
			    aligned_alloc((size_t)64 << (op & 3), size), size);
			break;
		case 5:
		case 6:
			if (b->p == NULL)
				break;
			check_block(b, "realloc");
			/* realloc(p, 0) is the fuzzer's */
			size = size ? size : 1;
			q = realloc(b->p, size);
			ST_REQUIRE(q != NULL, "realloc(%zu) failed", size);
			b->p = q;
			/* the kept prefix is checked through the tail word */
			if (size >= 16 && b->size >= 16) {
				size_t keep = size < b->size ? size : b->size;
				unsigned char c = b->p[8];

				for (size_t i = 8; i < keep - 8; i++)
					ST_REQUIRE(q[i] == c,
					    "realloc lost byte %zu", i);
			}
			new_block(b, q, size);
			break;
		case 7:
		case 8:
			exchange(b, &rng);
			break;
		case 9:
			free_block(b, "free");
			break;
		}
	}
	for (int i = 0; i < NSLOTS; i++)
		if (st_rand(&rng) % 4 == 0)
			exchange(&slots[i], &rng);
		else
			free_block(&slots[i], "final free");
	free(slots);
	atomic_fetch_add(&total_ops, ops);
	return NULL;
}

START_TEST(random_ops_cross_thread)
{
	pthread_t t[NTHREADS];

	for (int i = 0; i < MAILBOX; i++)
		pthread_mutex_init(&mailbox[i].lock, NULL);
	deadline = st_now() + 1.5;
	for (int i = 0; i < NTHREADS; i++)
		ck_assert_int_eq(pthread_create(&t[i], NULL, worker,
				     (void *)(uintptr_t)(i + 1)),
		    0);
	for (int i = 0; i < NTHREADS; i++)
		pthread_join(t[i], NULL);
	for (int i = 0; i < MAILBOX; i++)
		free_block(&mailbox[i].b, "mailbox free");
	fprintf(stderr, "random_ops: %d threads, %lu operations, %lu "
			"cross-thread frees\n",
	    NTHREADS, (unsigned long)total_ops, (unsigned long)cross_frees);
}
END_TEST

/* A short-lived thread: a few blocks freed here, a few handed back. */
struct brief {
	void *keep[4];
	size_t sizes[4];
};

static void *
brief_thread(void *arg)
{
	struct brief *r = arg;
	static const size_t sizes[] = {16, 1000, 5000, 70000};

	for (int i = 0; i < 4; i++) {
		void *p = malloc(sizes[i]), *q = malloc(sizes[3 - i]);

		if (p == NULL || q == NULL)
			return NULL;
		st_fill(p, sizes[i], (uint32_t)i);
		memset(q, 1, sizes[3 - i]);
		free(q);
		r->keep[i] = p;
		r->sizes[i] = sizes[i];
	}
	return r;
}

static void
run_brief_threads(int n)
{
	for (int done = 0; done < n; done += 8) {
		pthread_t t[8];
		struct brief r[8];

		memset(r, 0, sizeof(r));
		for (int i = 0; i < 8; i++)
			ST_REQUIRE(pthread_create(&t[i], NULL, brief_thread,
				       &r[i]) == 0,
			    "pthread_create");
		for (int i = 0; i < 8; i++) {
			void *ret;

			pthread_join(t[i], &ret);
			ST_REQUIRE(ret != NULL, "thread allocation failed");
			for (int k = 0; k < 4; k++) {
				ST_REQUIRE(st_check(r[i].keep[k], r[i].sizes[k],
					       (uint32_t)k) == (size_t)-1,
				    "block of a finished thread corrupt");
				free(r[i].keep[k]);
			}
		}
	}
}

START_TEST(short_lived_threads)
{
	size_t at1000, at5000;

	run_brief_threads(1000);
	at1000 = st_vmsize();
	run_brief_threads(4000);
	at5000 = st_vmsize();
	fprintf(stderr, "short_lived_threads: VmSize %zu KiB after 1000, %zu "
			"KiB after 5000 threads\n",
	    at1000 >> 10, at5000 >> 10);
	ST_REQUIRE(at5000 <= at1000 + ((size_t)16 << 20),
	    "mapped memory grew from %zu to %zu KiB between 1000 and 5000 "
	    "threads",
	    at1000 >> 10, at5000 >> 10);
}
END_TEST

/* Grow a block to 4 MiB and shrink it back, checking the kept bytes. */
static void *
chain(void *arg)
{
	uint64_t rng = (uintptr_t)arg + 99;
	unsigned char *p = malloc(1), *other[64] = {0};
	size_t size = 1, steps = 0;
	int dir = 1, k = 0, cycles = 0;

	ST_REQUIRE(p != NULL, "malloc(1) failed");
	p[0] = 0x5a;
	while (steps < 3000) {
		size_t next;
		unsigned char *q;

		if (dir > 0) {
			if (size < 300)
				next = size + 1;
			else if (st_rand(&rng) % 2)
				next = size + size / 3;
			else
				next = (size / 4096 + 1) * 4096;
			if (next >= ((size_t)4 << 20))
				dir = -1;
		} else {
			next = size < 300 ? size - 1 : size - size / 4;
			if (next <= 1) {
				next = 1;
				dir = 1;
				cycles++;
			}
		}
		q = realloc(p, next);
		ST_REQUIRE(q != NULL, "realloc(%zu) failed", next);
		for (size_t i = 0; i < (size < next ? size : next); i++)
			ST_REQUIRE(q[i] == (unsigned char)(0x5a + i * 7),
			    "realloc %zu -> %zu lost byte %zu", size, next, i);
		for (size_t i = size; i < next; i++)
			q[i] = (unsigned char)(0x5a + i * 7);
		p = q;
		size = next;
		steps++;
		/* neighbours that get in the way of growing in place */
		free(other[k]);
		other[k] = malloc(st_size(&rng, 65536));
		k = (k + 1) % 64;
		if (cycles == 2)
			break;
	}
	free(p);
	for (int i = 0; i < 64; i++)
		free(other[i]);
	return (void *)steps;
}

START_TEST(realloc_chains)
{
	pthread_t t[4];
	size_t steps = 0;

	for (int i = 0; i < 4; i++)
		ck_assert_int_eq(
		    pthread_create(&t[i], NULL, chain, (void *)(uintptr_t)i),
		    0);
	for (int i = 0; i < 4; i++) {
		void *r;

		pthread_join(t[i], &r);
		steps += (size_t)r;
	}
	fprintf(stderr, "realloc_chains: 4 threads, %zu reallocs\n", steps);
}
END_TEST

static atomic_ulong limit_enomem;

/* Past this vm.max_map_count, filling the mappings would take the kernel
 * hundreds of MiB and many seconds: the case is skipped. */
#define MAP_LIMIT_MAX 262144

/* Use up the process's mappings but margin, without touching a page;
 * returns the reservation that holds them, of *len bytes, or NULL if the
 * limit is past MAP_LIMIT_MAX. */
static void *
fill_maps(long margin, size_t *len)
{
	FILE *f = fopen("/proc/sys/vm/max_map_count", "r");
	long max = 0, n = 0, calls;
	char *p;
	int c;

	ck_assert(f != NULL && fscanf(f, "%ld", &max) == 1);
	fclose(f);
	if (max > MAP_LIMIT_MAX)
		return NULL;
	f = fopen("/proc/self/maps", "r");
	ck_assert(f != NULL);
	while ((c = fgetc(f)) != EOF)
		n += c == '\n';
	fclose(f);
	calls = (max - margin - n) / 2;
	ck_assert_int_gt(calls, 0);
	*len = (size_t)(2 * calls + 2) * 4096;
	p = mmap(NULL, *len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS |
	    MAP_NORESERVE, -1, 0);
	ck_assert(p != MAP_FAILED);
	for (long i = 0; i < calls; i++)
		ST_REQUIRE(mprotect(p + (2 * i + 1) * 4096, 4096, PROT_READ) ==
		    0, "mprotect %ld of %ld", i, calls);
	return p;
}

static void *
page_blocks(void *arg)
{
	uint64_t rng = 0x9e3779b97f4a7c15ULL * ((uintptr_t)arg + 1);
	struct block b[512];
	unsigned long ops = 0;

	memset(b, 0, sizeof(b));
	while (st_now() < deadline) {
		struct block *x = &b[st_rand(&rng) % 512];
		size_t size = 2049 + st_rand(&rng) % (8 * 4096);

		if (x->p != NULL)
			free_block(x, "at the map limit");
		else {
			unsigned char *q = malloc(size);

			if (q == NULL) {
				ST_REQUIRE(errno == ENOMEM, "errno %d", errno);
				atomic_fetch_add(&limit_enomem, 1);
				continue;
			}
			new_block(x, q, size);
		}
		if (++ops % 20000 == 0 && (uintptr_t)arg == 0)
			malloc_trim(0);
	}
	for (int i = 0; i < 512; i++)
		free_block(&b[i], "at the map limit, last");
	return (void *)ops;
}

/* The dump's line for refused munmap calls, or "" if it has none. */
static void
refused_line(char *line, size_t len)
{
	FILE *f = tmpfile();
	char buf[256];

	ck_assert(f != NULL);
	malloc_gdump(fileno(f));
	rewind(f);
	line[0] = '\0';
	while (fgets(buf, sizeof(buf), f) != NULL)
		if (strncmp(buf, "Munmap refused", 14) == 0)
			snprintf(line, len, "%s", buf);
	fclose(f);
}

START_TEST(at_map_limit)
{
	pthread_t t[4];
	unsigned long ops = 0, enomem;
	char line[256], *p;
	size_t len;
	void *fill;

	free(malloc(1));
	fill = fill_maps(200, &len);
	if (fill == NULL) {
		fprintf(stderr, "at_map_limit: vm.max_map_count over %d, "
		    "skipped\n", MAP_LIMIT_MAX);
		return;
	}
	deadline = st_now() + 1.0;
	for (int i = 0; i < 4; i++)
		ck_assert_int_eq(pthread_create(&t[i], NULL, page_blocks,
		    (void *)(uintptr_t)i), 0);
	for (int i = 0; i < 4; i++) {
		void *r;

		pthread_join(t[i], &r);
		ops += (unsigned long)r;
	}
	refused_line(line, sizeof(line));
	if (line[0] == '\0') {
		/* A slow second on a loaded machine may not have used up
		 * the margin: holes that must, every other of 4000 runs. */
		static char *hole[4000];

		for (int i = 0; i < 4000; i++)
			hole[i] = malloc(2 * 4096);
		for (int i = 0; i < 4000; i += 2)
			free(hole[i]);
		for (int i = 1; i < 4000; i += 2)
			free(hole[i]);
		refused_line(line, sizeof(line));
	}
	/* The limit was reached: the case tested what it says. */
	ck_assert_msg(line[0] != '\0', "no munmap refused");
	ck_assert_msg(strstr(line, "lost 0 runs") != NULL, "%s", line);
	enomem = atomic_load(&limit_enomem);
	ck_assert_uint_gt(ops, enomem);
	/* Room again: allocation works, and what was kept is unmapped. */
	ck_assert_int_eq(munmap(fill, len), 0);
	p = malloc(20 * 4096);
	ck_assert_ptr_nonnull(p);
	memset(p, 1, 20 * 4096);
	free(p);
	malloc_trim(0);
	refused_line(line, sizeof(line));
	ck_assert_msg(strstr(line, "kept 0 runs 0 pages") != NULL, "%s",
	    line);
	fprintf(stderr, "at_map_limit: 4 threads, %lu operations, %lu "
	    "ENOMEM; %s", ops, enomem, line);
}
END_TEST

static Suite *
stress_suite(void)
{
	Suite *s = suite_create("threads_stress");
	TCase *tc = tcase_create("threads");

	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, random_ops_cross_thread);
	tcase_add_test(tc, short_lived_threads);
	tcase_add_test(tc, realloc_chains);
	tcase_add_test(tc, at_map_limit);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return st_main(stress_suite());
}
