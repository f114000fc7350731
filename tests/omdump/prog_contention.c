/*
 * Four threads hammer malloc/free at the same time.  With one pool
 * (MALLOC_OPTIONS=D-----) they all share one lock and some acquisitions
 * must find it held; with more pools (D+) each thread mostly has a pool
 * of its own, so the share of contended acquisitions drops.
 *
 * Usage: prog_contention [iterations per thread]
 */
#include <pthread.h>
#include <stdlib.h>

#define NTHREADS 4
#define BATCH 16

static pthread_barrier_t start;
static long iterations = 200000;

static void *
hammer(void *arg)
{
	void *volatile batch[BATCH];
	unsigned int x = (unsigned int)(long)arg * 2654435761u + 1;

	pthread_barrier_wait(&start);
	for (long i = 0; i < iterations; i++) {
		int j = (int)(i % BATCH);
		if (i >= BATCH)
			free(batch[j]);
		x = x * 1103515245u + 12345u;
		if ((batch[j] = malloc(16 + (x >> 16) % 1000)) == NULL)
			abort();
	}
	for (int j = 0; j < BATCH; j++)
		free(batch[j]);
	return NULL;
}

int
main(int argc, char **argv)
{
	pthread_t tid[NTHREADS];

	if (argc > 1)
		iterations = atol(argv[1]);
	pthread_barrier_init(&start, NULL, NTHREADS);
	for (int t = 0; t < NTHREADS; t++)
		if (pthread_create(&tid[t], NULL, hammer, (void *)(long)t))
			return 1;
	for (int t = 0; t < NTHREADS; t++)
		pthread_join(tid[t], NULL);
	pthread_barrier_destroy(&start);
	return 0;
}
