/*
 * test_threads.c - pools under threads: blocks freed by other threads keep
 * their contents and are counted in the dump, fork from a busy process
 * leaves a child that can allocate, and thread exit leaks nothing.
 */
#include <check.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "omalloc.h"

#define NTHREADS 4
#define PER_ROUND 2000

struct mailbox {
	pthread_mutex_t mtx;
	pthread_cond_t cv;
	unsigned char *blk[PER_ROUND];
	size_t len[PER_ROUND];
	int full;
};

static struct mailbox box[NTHREADS];
static unsigned long bad;
static long tids[NTHREADS];

static size_t
size_of(unsigned int i, unsigned int t)
{
	static const size_t s[] = { 8, 24, 100, 300, 1000, 2048, 3000, 5000,
		20000, 70000 };
	return s[(i * 7 + t) % (sizeof(s) / sizeof(s[0]))];
}

/* Thread t fills box[t]; thread (t+1)%N checks and frees it. */
static void *
worker(void *arg)
{
	unsigned int t = (unsigned int)(uintptr_t)arg, round, i;
	struct mailbox *out = &box[t], *in = &box[(t + NTHREADS - 1) %
	    NTHREADS];

	tids[t] = syscall(SYS_gettid);
	for (round = 0; round < 5; round++) {
		pthread_mutex_lock(&out->mtx);
		while (out->full)
			pthread_cond_wait(&out->cv, &out->mtx);
		for (i = 0; i < PER_ROUND; i++) {
			size_t n = size_of(i, t);
			out->blk[i] = malloc(n);
			out->len[i] = n;
			memset(out->blk[i], (int)(t * 16 + i % 16), n);
		}
		out->full = 1;
		pthread_cond_broadcast(&out->cv);
		pthread_mutex_unlock(&out->mtx);

		pthread_mutex_lock(&in->mtx);
		while (!in->full)
			pthread_cond_wait(&in->cv, &in->mtx);
		unsigned int from = (t + NTHREADS - 1) % NTHREADS;
		for (i = 0; i < PER_ROUND; i++) {
			unsigned char want =
			    (unsigned char)(from * 16 + i % 16);
			for (size_t k = 0; k < in->len[i]; k += 61)
				if (in->blk[i][k] != want)
					__atomic_fetch_add(&bad, 1,
					    __ATOMIC_RELAXED);
			if (i % 3 == 0)
				in->blk[i] = realloc(in->blk[i],
				    in->len[i] * 2);
			/* Some by size, between frees queued for the pool. */
			if (i % 3 == 1)
				free_sized(in->blk[i], in->len[i]);
			else
				free(in->blk[i]);
		}
		in->full = 0;
		pthread_cond_broadcast(&in->cv);
		pthread_mutex_unlock(&in->mtx);
	}
	return NULL;
}

/* Sum of the a and b of every "Other pool searches a/b" line, and the
 * pool count of the options line (M=). */
static void
search_counts(unsigned long *other, unsigned long *total,
    unsigned int *npools)
{
	FILE *f = tmpfile();
	char line[256];
	unsigned long a, b;

	*other = *total = 0;
	*npools = 0;
	malloc_gdump(fileno(f));
	rewind(f);
	while (fgets(line, sizeof(line), f) != NULL)
		if (sscanf(line, "Other pool searches %lu/%lu", &a, &b) == 2) {
			*other += a;
			*total += b;
		} else if (*npools == 0)
			(void)sscanf(line, "MT=%*d M=%u", npools);
	fclose(f);
}

START_TEST(cross_thread_free)
{
	pthread_t th[NTHREADS];
	unsigned long other0, total0, other, total;
	unsigned int t, npools, cross = 0;

	search_counts(&other0, &total0, &npools);
	for (t = 0; t < NTHREADS; t++) {
		pthread_mutex_init(&box[t].mtx, NULL);
		pthread_cond_init(&box[t].cv, NULL);
		box[t].full = 0;
	}
	for (t = 0; t < NTHREADS; t++)
		pthread_create(&th[t], NULL, worker, (void *)(uintptr_t)t);
	for (t = 0; t < NTHREADS; t++)
		pthread_join(th[t], NULL);
	ck_assert_uint_eq(bad, 0);
	search_counts(&other, &total, &npools);
	ck_assert_uint_ge(total - total0, NTHREADS * 5 * PER_ROUND);
	/* Thread t frees what thread t-1 made, in another pool exactly when
	 * their ids differ in the pool bits (tid & (npools - 1)).  Ids made
	 * one after another are usually consecutive, but other processes
	 * making threads meanwhile can leave them all in one pool. */
	ck_assert_uint_gt(npools, 0);
	for (t = 0; t < NTHREADS; t++)
		if ((tids[t] ^ tids[(t + NTHREADS - 1) % NTHREADS]) &
		    (long)(npools - 1))
			cross++;
	if (cross > 0)
		ck_assert_uint_gt(other - other0, 0);
	else
		ck_assert_uint_eq(other - other0, 0);
}
END_TEST

static volatile int stop;

static void *
churn(void *arg)
{
	unsigned int seed = (unsigned int)(uintptr_t)arg;
	void *keep[64] = { 0 };

	while (!stop) {
		unsigned int i = (seed = seed * 1103515245 + 12345) % 64;
		free(keep[i]);
		keep[i] = malloc((seed >> 8) % 9000 + 1);
	}
	for (unsigned int i = 0; i < 64; i++)
		free(keep[i]);
	return NULL;
}

START_TEST(fork_while_threads_allocate)
{
	pthread_t th[3];
	int i, st;

	stop = 0;
	for (i = 0; i < 3; i++)
		pthread_create(&th[i], NULL, churn, (void *)(uintptr_t)(i + 1));
	for (i = 0; i < 40; i++) {
		pid_t pid = fork();

		ck_assert_int_ge(pid, 0);
		if (pid == 0) {
			/* The child has one thread and every pool usable. */
			alarm(10);
			void *v[100];
			for (int k = 0; k < 100; k++)
				v[k] = malloc((size_t)k * 97 + 1);
			for (int k = 0; k < 100; k++)
				free(v[k]);
			pthread_t t2;
			stop = 0;
			pthread_create(&t2, NULL, churn, (void *)9);
			usleep(1000);
			stop = 1;
			pthread_join(t2, NULL);
			_exit(42);
		}
		ck_assert_int_eq(waitpid(pid, &st, 0), pid);
		ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 42,
		    "child %d ended with status 0x%x", i, st);
	}
	stop = 1;
	for (i = 0; i < 3; i++)
		pthread_join(th[i], NULL);
}
END_TEST

static void *
short_lived(void *arg)
{
	void *p = malloc((size_t)(uintptr_t)arg);
	free(p);
	return NULL;
}

START_TEST(thread_exit_leaks_nothing)
{
	struct mallinfo2 before, after;
	int i;

	for (i = 0; i < 50; i++) {
		pthread_t t;
		pthread_create(&t, NULL, short_lived, (void *)(uintptr_t)100);
		pthread_join(t, NULL);
	}
	malloc_trim(0);
	before = mallinfo2();
	for (i = 0; i < 500; i++) {
		pthread_t t;
		pthread_create(&t, NULL, short_lived,
		    (void *)(uintptr_t)(i * 37 % 20000 + 1));
		pthread_join(t, NULL);
	}
	malloc_trim(0);
	after = mallinfo2();
	ck_assert_uint_le(after.uordblks, before.uordblks + 16384);
}
END_TEST

static Suite *
threads_suite(void)
{
	Suite *s = suite_create("threads");
	TCase *tc = tcase_create("threads");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, cross_thread_free);
	tcase_add_test(tc, fork_while_threads_allocate);
	tcase_add_test(tc, thread_exit_leaks_nothing);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(threads_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
