/*
 * Threads free each other's blocks: the main thread allocates batches that
 * worker threads free, and frees the batches the workers allocated.  Each
 * thread allocates from its own pool (kernel thread id modulo the pool
 * count), so freeing a block from another thread's pool must leave the
 * caller's pool: the dump's "Other pool searches" becomes non-zero.
 */
#include <pthread.h>
#include <stdlib.h>

#define NTHREADS 4
#define NBLOCKS 200

static void *from_main[NTHREADS][NBLOCKS];
static void *from_worker[NTHREADS][NBLOCKS];

static size_t
size_of(int i)
{
	/* Chunks of several classes, and some page regions. */
	return (i % 10 == 0) ? 5000 + (size_t)i : 16 + (size_t)(i % 7) * 90;
}

static void *
worker(void *arg)
{
	int t = (int)(long)arg;

	for (int i = 0; i < NBLOCKS; i++)
		free(from_main[t][i]);
	for (int i = 0; i < NBLOCKS; i++)
		if ((from_worker[t][i] = malloc(size_of(i))) == NULL)
			abort();
	return NULL;
}

int
main(void)
{
	pthread_t tid[NTHREADS];

	for (int t = 0; t < NTHREADS; t++)
		for (int i = 0; i < NBLOCKS; i++)
			if ((from_main[t][i] = malloc(size_of(i))) == NULL)
				return 1;
	for (int t = 0; t < NTHREADS; t++)
		if (pthread_create(&tid[t], NULL, worker, (void *)(long)t))
			return 1;
	for (int t = 0; t < NTHREADS; t++)
		pthread_join(tid[t], NULL);
	for (int t = 0; t < NTHREADS; t++)
		for (int i = 0; i < NBLOCKS; i++)
			free(from_worker[t][i]);
	return 0;
}
