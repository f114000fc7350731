/*
 * larson - a server in the spirit of Larson and Krishnan's benchmark: each
 * of the worker lineages owns an array of live objects of random sizes and
 * keeps replacing a random one (free it, allocate a new size).  After a
 * fixed number of replacements a worker thread ends and a fresh thread
 * takes over the same array, as a server hands a connection's state to
 * another thread: every object allocated by one thread is freed by another.
 * The main thread allocates the first generation of objects.
 *
 * Result: ops_per_sec counts replacements (one free plus one malloc) per
 * second over the whole run; threads_created counts the generations.
 */
#include <stdatomic.h>

#include "bench.h"

static atomic_int stop;

struct lineage {
	char **slots;
	long nslots;
	long rounds;
	long min, max;
	uint64_t rng;
	long ops;
	long generations;
} BENCH_ALIGNED;

/* One generation: rounds replacements, then hand the array on. */
static void *
generation(void *p)
{
	struct lineage *l = p;
	long span = l->max - l->min + 1;
	long i;

	for (i = 0; i < l->rounds; i++) {
		uint64_t r = rnd_next(&l->rng);
		long k = (long)(r % (uint64_t)l->nslots);
		size_t size = (size_t)(l->min + (long)((r >> 32) %
		    (uint64_t)span));

		if ((i & 63) == 0 &&
		    atomic_load_explicit(&stop, memory_order_relaxed))
			break;
		free(l->slots[k]);
		l->slots[k] = check_alloc(malloc(size), size);
		l->slots[k][0] = (char)i;
		l->slots[k][size - 1] = (char)i;
	}
	l->ops += i;
	return NULL;
}

/*
 * Runs the generations of one lineage one after the other.  The driver
 * itself does not allocate from the lineage, so every free of an object
 * made by the previous generation comes from a different thread.
 */
static void *
driver(void *p)
{
	struct lineage *l = p;

	while (!atomic_load(&stop)) {
		pthread_t t;

		if (pthread_create(&t, NULL, generation, l) != 0) {
			fprintf(stderr, "pthread_create failed\n");
			exit(1);
		}
		pthread_join(t, NULL);
		l->generations++;
	}
	return NULL;
}

int
main(int argc, char **argv)
{
	long threads = 2, slots = 1000, rounds = 10000, min = 8, max = 1000;
	long seed = 1;
	double seconds = 2;
	struct bench_arg args[] = {
		{ "threads", ARG_LONG, &threads, "concurrent worker lineages" },
		{ "seconds", ARG_DOUBLE, &seconds, "run time" },
		{ "slots", ARG_LONG, &slots, "live objects per lineage" },
		{ "rounds", ARG_LONG, &rounds,
		    "replacements before a thread hands over its objects" },
		{ "min", ARG_SIZE, &min, "smallest object size" },
		{ "max", ARG_SIZE, &max, "largest object size" },
		{ "seed", ARG_LONG, &seed, "random seed" },
	};
	struct lineage *l;
	pthread_t *drivers;
	uint64_t t0, ns;
	long i, j, ops = 0, gens = 0;

	bench_parse(argc, argv, "Larson-style server: objects of random "
	    "sizes are replaced at random and freed by another thread than "
	    "the one that allocated them.", args,
	    sizeof(args) / sizeof(args[0]));
	bench_require(threads >= 1, argv[0], "threads must be at least 1");
	bench_require(slots >= 1 && rounds >= 1, argv[0],
	    "slots and rounds must be at least 1");
	bench_require(min >= 1 && max >= min, argv[0],
	    "need 1 <= min <= max");

	l = check_alloc(aligned_alloc(BENCH_CACHELINE,
	    (size_t)threads * sizeof(*l)), 1);
	drivers = check_alloc(calloc((size_t)threads, sizeof(*drivers)), 1);
	for (i = 0; i < threads; i++) {
		memset(&l[i], 0, sizeof(l[i]));
		l[i].nslots = slots;
		l[i].rounds = rounds;
		l[i].min = min;
		l[i].max = max;
		l[i].rng = rnd_seed((uint64_t)seed, (uint64_t)i);
		l[i].slots = check_alloc(calloc((size_t)slots,
		    sizeof(char *)), 1);
		for (j = 0; j < slots; j++) {
			size_t size = (size_t)(min + (long)(rnd_next(
			    &l[i].rng) % (uint64_t)(max - min + 1)));

			l[i].slots[j] = check_alloc(malloc(size), size);
			l[i].slots[j][0] = 0;
		}
	}

	t0 = now_ns();
	for (i = 0; i < threads; i++)
		if (pthread_create(&drivers[i], NULL, driver, &l[i]) != 0) {
			fprintf(stderr, "pthread_create failed\n");
			exit(1);
		}
	sleep_seconds(seconds);
	atomic_store(&stop, 1);
	for (i = 0; i < threads; i++)
		pthread_join(drivers[i], NULL);
	ns = now_ns() - t0;

	for (i = 0; i < threads; i++) {
		ops += l[i].ops;
		gens += l[i].generations;
		for (j = 0; j < slots; j++)
			free(l[i].slots[j]);
		free(l[i].slots);
	}
	printf("bench=larson threads=%ld seconds=%g slots=%ld rounds=%ld "
	    "min=%ld max=%ld elapsed_s=%.4f threads_created=%ld "
	    "ops_per_sec=%.0f\n", threads, seconds, slots, rounds, min, max,
	    (double)ns / 1e9, gens, (double)ops * 1e9 / (double)ns);
	free(drivers);
	free(l);
	return 0;
}
