/*
 * rss - resident memory after a burst: `threads` threads (32) allocate
 * blocks of `size` bytes (4 KiB), write every byte so they are resident,
 * until together they hold `blocks` blocks; when all have arrived, each
 * frees its own blocks (or, with cross=1, the main thread frees them all
 * after the threads have exited).  The peak shows the allocator's overhead
 * and fragmentation under many threads, the final figure how much it gives
 * back to the system without being asked (no malloc_trim).
 *
 * Result (KiB): base_kib resident at start, peak_kib the high-water mark
 * (VmHWM), final_kib resident after everything is freed (VmRSS), data_kib
 * what the program asked for.
 */
#include "bench.h"

struct shared {
	pthread_barrier_t allocated;
	long size;
	int cross;
};

struct worker {
	struct shared *sh;
	char **blocks;
	long n;
} BENCH_ALIGNED;

static long
status_kib(const char *key)
{
	char line[256];
	size_t klen = strlen(key);
	long v = -1;
	FILE *f = fopen("/proc/self/status", "r");

	if (f == NULL)
		return -1;
	while (fgets(line, sizeof(line), f) != NULL)
		if (strncmp(line, key, klen) == 0 && line[klen] == ':') {
			v = strtol(line + klen + 1, NULL, 10);
			break;
		}
	fclose(f);
	return v;
}

static void *
worker(void *p)
{
	struct worker *w = p;
	size_t size = (size_t)w->sh->size;
	long i;

	for (i = 0; i < w->n; i++) {
		w->blocks[i] = check_alloc(malloc(size), size);
		memset(w->blocks[i], (int)(i & 0xff) | 1, size);
	}
	pthread_barrier_wait(&w->sh->allocated);
	if (!w->sh->cross)
		for (i = 0; i < w->n; i++)
			free(w->blocks[i]);
	return NULL;
}

int
main(int argc, char **argv)
{
	long threads = 32, blocks = 16384, size = 4096, cross = 0;
	struct bench_arg args[] = {
		{ "threads", ARG_LONG, &threads, "allocating threads" },
		{ "blocks", ARG_LONG, &blocks, "blocks in total" },
		{ "size", ARG_SIZE, &size, "block size in bytes" },
		{ "cross", ARG_LONG, &cross,
		    "1: the main thread frees everything after the join" },
	};
	struct shared sh;
	struct worker *w;
	long i, j, base, peak, final;
	uint64_t ns;

	bench_parse(argc, argv, "Resident memory: many threads allocate "
	    "and touch blocks, then free them all.", args,
	    sizeof(args) / sizeof(args[0]));
	bench_require(threads >= 1, argv[0], "threads must be at least 1");
	bench_require(blocks >= threads, argv[0],
	    "blocks must be at least threads");
	bench_require(size >= 1, argv[0], "size must be at least 1");
	bench_require(cross == 0 || cross == 1, argv[0],
	    "cross must be 0 or 1");

	base = status_kib("VmRSS");
	sh.size = size;
	sh.cross = (int)cross;
	pthread_barrier_init(&sh.allocated, NULL, (unsigned)threads);
	w = check_alloc(aligned_alloc(BENCH_CACHELINE,
	    (size_t)threads * sizeof(*w)), 1);
	for (i = 0; i < threads; i++) {
		w[i].sh = &sh;
		w[i].n = blocks / threads + (i < blocks % threads);
		w[i].blocks = check_alloc(calloc((size_t)w[i].n,
		    sizeof(char *)), 1);
	}
	ns = run_threads(threads, worker, w, sizeof(*w));
	for (i = 0; i < threads; i++) {
		if (cross)
			for (j = 0; j < w[i].n; j++)
				free(w[i].blocks[j]);
		free(w[i].blocks);
	}
	free(w);
	pthread_barrier_destroy(&sh.allocated);
	peak = status_kib("VmHWM");
	final = status_kib("VmRSS");
	printf("bench=rss threads=%ld blocks=%ld size=%ld cross=%ld "
	    "elapsed_s=%.4f data_kib=%ld base_kib=%ld peak_kib=%ld "
	    "final_kib=%ld\n", threads, blocks, size, cross, (double)ns / 1e9,
	    (long)((double)blocks * (double)size / 1024), base, peak, final);
	return 0;
}
