/*
 * floor - the least a design that takes a lock on every operation and
 * finds a pointer's metadata through a hash table can cost on this
 * machine: one uncontended pthread mutex lock/unlock pair, and one probe
 * of an open-addressing table (multiplicative hash of a page address,
 * linear probing) of a few thousand entries, looked up with random keys
 * that are present.  Their sum is the floor under a free() of such a
 * design; an allocator's lps figure can be read against it.
 *
 * A second thread is kept alive (idle) while measuring, as in any threaded
 * program, so that no single-thread shortcut of the C library applies.
 * The probe loop does not depend on the allocator: the table is a static
 * array.
 *
 * Result: mutex_ns, probe_ns, sum_ns.
 */
#include "bench.h"

#define MAX_ENTRIES (1L << 20)
#define LOOKUPS 65536

struct slot {
	uintptr_t page;
	uintptr_t value;
};

static struct slot table[MAX_ENTRIES];
static uintptr_t lookups[LOOKUPS];

static pthread_mutex_t idle_mtx = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t idle_cv = PTHREAD_COND_INITIALIZER;
static int idle_done;

static void *
idle(void *p)
{
	(void)p;
	pthread_mutex_lock(&idle_mtx);
	while (!idle_done)
		pthread_cond_wait(&idle_cv, &idle_mtx);
	pthread_mutex_unlock(&idle_mtx);
	return NULL;
}

static inline size_t
hash(uintptr_t page, int bits)
{
	return (size_t)(((uint64_t)(page >> 12) * 0x9E3779B97F4A7C15ULL) >>
	    (64 - bits));
}

static inline uintptr_t
probe(uintptr_t page, int bits, size_t mask)
{
	size_t h = hash(page, bits);

	while (table[h].page != page) {
		if (table[h].page == 0)
			return 0;
		h = (h - 1) & mask;
	}
	return table[h].value;
}

int
main(int argc, char **argv)
{
	long iterations = 20000000, entries = 4096, fill = 50, seed = 1;
	struct bench_arg args[] = {
		{ "iterations", ARG_LONG, &iterations,
		    "lock pairs and probes to time" },
		{ "entries", ARG_LONG, &entries,
		    "hash table size (a power of two)" },
		{ "fill", ARG_LONG, &fill, "percent of the table in use" },
		{ "seed", ARG_LONG, &seed, "random seed" },
	};
	pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
	uintptr_t *keys, sink = 0;
	uint64_t rng, t0, mutex_ns, probe_ns;
	pthread_t t;
	long i, nkeys;
	size_t mask;
	int bits;

	bench_parse(argc, argv, "Floor of a lock-per-operation design: "
	    "uncontended mutex pair and one hash-table probe.", args,
	    sizeof(args) / sizeof(args[0]));
	bench_require(entries >= 16 && entries <= MAX_ENTRIES &&
	    (entries & (entries - 1)) == 0, argv[0],
	    "entries must be a power of two in [16, 1048576]");
	bench_require(fill >= 1 && fill <= 90, argv[0],
	    "fill must be in [1, 90]");
	bench_require(iterations >= 1, argv[0],
	    "iterations must be at least 1");

	bits = __builtin_ctzl((unsigned long)entries);
	mask = (size_t)entries - 1;
	nkeys = entries * fill / 100;
	keys = check_alloc(malloc((size_t)nkeys * sizeof(*keys)), 1);
	rng = rnd_seed((uint64_t)seed, 0);
	for (i = 0; i < nkeys; i++) {
		uintptr_t page;
		size_t h;

		do {
			page = (uintptr_t)(rnd_next(&rng) &
			    0x7ffffffff000ULL);
		} while (page == 0 || probe(page, bits, mask) != 0);
		h = hash(page, bits);
		while (table[h].page != 0)
			h = (h - 1) & mask;
		table[h].page = page;
		table[h].value = page | 1;
		keys[i] = page;
	}
	for (i = 0; i < LOOKUPS; i++)
		lookups[i] = keys[rnd_next(&rng) % (uint64_t)nkeys];

	if (pthread_create(&t, NULL, idle, NULL) != 0) {
		fprintf(stderr, "pthread_create failed\n");
		return 1;
	}

	t0 = now_ns();
	for (i = 0; i < iterations; i++) {
		pthread_mutex_lock(&m);
		escape(&m);
		pthread_mutex_unlock(&m);
	}
	mutex_ns = now_ns() - t0;

	t0 = now_ns();
	for (i = 0; i < iterations; i++)
		sink += probe(lookups[i & (LOOKUPS - 1)], bits, mask);
	probe_ns = now_ns() - t0;
	escape(&sink);
	if (sink == 0)
		fprintf(stderr, "every probe missed\n");

	pthread_mutex_lock(&idle_mtx);
	idle_done = 1;
	pthread_cond_signal(&idle_cv);
	pthread_mutex_unlock(&idle_mtx);
	pthread_join(t, NULL);

	printf("bench=floor iterations=%ld entries=%ld fill=%ld "
	    "mutex_ns=%.2f probe_ns=%.2f sum_ns=%.2f\n", iterations, entries,
	    fill, (double)mutex_ns / (double)iterations,
	    (double)probe_ns / (double)iterations,
	    (double)(mutex_ns + probe_ns) / (double)iterations);
	free(keys);
	return 0;
}
