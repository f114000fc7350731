/*
 * test_fork_stress.c - fork from a busy multi-threaded process.
 *
 * The classic ways an allocator's fork handling deadlocks:
 * - another thread is inside malloc when fork takes the pool locks;
 * - another thread holds a stdio lock (a FILE, or the list of FILEs while
 *   fopen or fclose allocates) when fork runs;
 * - fork is called from a signal handler that interrupted malloc, or that
 *   interrupted fork itself after the prepare handlers took the locks
 *   (there _Fork, see fork_in_handler_during_fork).
 * Every child allocates (except in a signal handler, where only _exit is
 * safe) and must exit 0 within a few seconds: a child that hangs is killed
 * and counts as a failure, and the whole test has Check's timeout, so a
 * parent that hangs fails too instead of holding up CI.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "util.h"

#define NWORKERS 2
#define NFORKS 200

static atomic_int stop;
static atomic_ulong worker_ops;

/* Random heap work until told to stop. */
static void *
heap_worker(void *arg)
{
	uint64_t rng = (uintptr_t)arg * 31 + 7;
	void *slots[128] = {0};
	unsigned long ops = 0;

	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		int i = st_rand(&rng) % 128;
		size_t size = st_size(&rng, 1 << 18);
		void *q;

		if (st_rand(&rng) % 3 == 0 && slots[i] != NULL) {
			q = realloc(slots[i], size + 1);
			if (q != NULL)
				slots[i] = q;
		} else {
			free(slots[i]);
			slots[i] = malloc(size);
			if (slots[i] != NULL)
				memset(slots[i], 0x33, size < 64 ? size : 64);
		}
		ops++;
	}
	for (int i = 0; i < 128; i++)
		free(slots[i]);
	atomic_fetch_add(&worker_ops, ops);
	return NULL;
}

/* Threads that keep stdio's locks busy: a FILE's own lock and the list. */
static FILE *shared_fp;

static void *
stdio_worker(void *arg)
{
	char line[512];

	memset(line, 'x', sizeof(line) - 1);
	line[sizeof(line) - 1] = '\0';
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		FILE *f;
		char *buf = NULL;
		size_t len = 0;

		if ((uintptr_t)arg % 2 == 0) {
			/* hold the FILE lock while allocating */
			flockfile(shared_fp);
			fprintf(shared_fp, "%s %d\n", line, 42);
			free(malloc(100));
			funlockfile(shared_fp);
		} else {
			/* fopen and fclose take the list lock and allocate */
			f = fopen("/dev/null", "w");
			if (f != NULL) {
				fprintf(f, "%s\n", line);
				fclose(f);
			}
			f = open_memstream(&buf, &len);
			if (f != NULL) {
				fprintf(f, "%s%s%s\n", line, line, line);
				fclose(f);
				free(buf);
			}
			fflush(NULL);
		}
	}
	return NULL;
}

/* What a child does: allocate every kind of block, use stdio, maybe a
 * thread. */
static void *
child_thread(void *arg)
{
	void *p = malloc(5000);

	free(arg);
	return p;
}

static int
child_work(int n)
{
	static const size_t sizes[] = {
		0, 1, 16, 100, 2048, 4096, 10000, 1 << 20
	};
	void *p[8];
	pthread_t t;
	void *r;

	for (int i = 0; i < 8; i++) {
		p[i] = malloc(sizes[i]);
		if (p[i] == NULL)
			return 1;
		st_fill(p[i], sizes[i], (uint32_t)i);
	}
	for (int i = 0; i < 8; i++) {
		void *q = realloc(p[i], sizes[i] * 2 + 1);

		if (q == NULL)
			return 2;
		if (st_check(q, sizes[i], (uint32_t)i) != (size_t)-1)
			return 3;
		free(q);
	}
	if (shared_fp != NULL)
		fprintf(shared_fp, "child %d\n", n);
	fflush(NULL);
	if (n % 10 == 0) {
		if (pthread_create(&t, NULL, child_thread, malloc(10)) != 0)
			return 4;
		pthread_join(t, &r);
		if (r == NULL)
			return 5;
		free(r);
	}
	return 0;
}

static void
start(pthread_t *t, int n, void *(*fn)(void *))
{
	atomic_store(&stop, 0);
	for (int i = 0; i < n; i++)
		ck_assert_int_eq(
		    pthread_create(&t[i], NULL, fn, (void *)(uintptr_t)i), 0);
}

static void
finish(pthread_t *t, int n)
{
	atomic_store(&stop, 1);
	for (int i = 0; i < n; i++)
		pthread_join(t[i], NULL);
}

static void
fork_children(const char *what)
{
	double t0 = st_now();

	for (int i = 0; i < NFORKS; i++) {
		pid_t pid = fork();
		int status;

		ck_assert_msg(pid >= 0, "fork: %s", strerror(errno));
		if (pid == 0)
			_exit(child_work(i));
		status = st_wait(pid, 10);
		ST_REQUIRE(status != -1, "%s: child %d hung", what, i);
		ST_REQUIRE(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		    "%s: child %d: status 0x%x", what, i, status);
	}
	fprintf(stderr, "%s: %d forks in %.2f s\n", what, NFORKS,
	    st_now() - t0);
}

START_TEST(fork_busy_heap)
{
	pthread_t t[NWORKERS];

	start(t, NWORKERS, heap_worker);
	fork_children("fork_busy_heap");
	finish(t, NWORKERS);
	fprintf(stderr, "fork_busy_heap: %d forks, %lu worker operations\n",
	    NFORKS, (unsigned long)worker_ops);
}
END_TEST

START_TEST(fork_stdio_locks)
{
	pthread_t t[2], h[1];

	shared_fp = fopen("/dev/null", "w");
	ck_assert_ptr_nonnull(shared_fp);
	start(t, 2, stdio_worker);
	start(h, 1, heap_worker);
	fork_children("fork_stdio_locks");
	atomic_store(&stop, 1);
	finish(t, 2);
	finish(h, 1);
	fclose(shared_fp);
	shared_fp = NULL;
	fprintf(stderr, "fork_stdio_locks: %d forks\n", NFORKS);
}
END_TEST

/*
 * fork in a signal handler.  The handler only forks; the child only
 * _exits; the parent records the child, reaped after the run.
 */
#define NSIGFORKS 300
static pid_t sig_children[NSIGFORKS + 8];
static atomic_int nsig_children;
static atomic_int sig_fork_failures;
static pthread_t victim;

static int handler_uses_fork_syscall;

static void
fork_handler(int sig)
{
	int saved = errno, n;
	pid_t pid;

	(void)sig;
	if (atomic_load(&nsig_children) >= NSIGFORKS)
		return;
	pid = handler_uses_fork_syscall ? _Fork() : fork();
	if (pid == 0)
		_exit(0);
	if (pid < 0) {
		atomic_fetch_add(&sig_fork_failures, 1);
	} else {
		n = atomic_fetch_add(&nsig_children, 1);
		sig_children[n] = pid;
	}
	errno = saved;
}

/* Signal the victim thread at short random intervals. */
static void *
signaller(void *arg)
{
	uint64_t rng = 12345;

	(void)arg;
	while (!atomic_load(&stop) && atomic_load(&nsig_children) < NSIGFORKS) {
		pthread_kill(victim, SIGUSR1);
		usleep(200 + st_rand(&rng) % 800);
	}
	return NULL;
}

static void
reap_signal_children(const char *what)
{
	int n = atomic_load(&nsig_children);

	for (int i = 0; i < n; i++) {
		int status = st_wait(sig_children[i], 10);

		ST_REQUIRE(status != -1, "%s: child %d hung", what, i);
		ST_REQUIRE(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		    "%s: child %d: status 0x%x", what, i, status);
	}
	ck_assert_int_eq(atomic_load(&sig_fork_failures), 0);
}

static void
install_fork_handler(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = fork_handler;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	ck_assert_int_eq(sigaction(SIGUSR1, &sa, NULL), 0);
}

START_TEST(fork_in_handler_during_malloc)
{
	pthread_t sig, w[2];
	uint64_t rng = 99;
	void *slots[64] = {0};
	unsigned long ops = 0;
	double end = st_now() + 8;

	install_fork_handler();
	victim = pthread_self();
	start(w, 2, heap_worker);
	ck_assert_int_eq(pthread_create(&sig, NULL, signaller, NULL), 0);
	/* the victim does nothing but allocate, so most signals land there */
	while (atomic_load(&nsig_children) < NSIGFORKS && st_now() < end) {
		int i = st_rand(&rng) % 64;

		free(slots[i]);
		slots[i] = malloc(st_size(&rng, 1 << 17));
		ops++;
	}
	finish(w, 2);
	pthread_join(sig, NULL);
	for (int i = 0; i < 64; i++)
		free(slots[i]);
	reap_signal_children("fork_in_handler_during_malloc");
	fprintf(stderr, "fork_in_handler_during_malloc: %d forks from a "
			"handler, %lu mallocs in the interrupted thread\n",
	    atomic_load(&nsig_children), ops);
	ck_assert_int_ge(atomic_load(&nsig_children), NSIGFORKS / 2);
}
END_TEST

/*
 * A signal that interrupts fork.  glibc holds its own atfork lock from the
 * first prepare handler to the last parent handler, so fork() from a
 * handler that interrupted fork deadlocks inside glibc whatever the
 * allocator does.  The handler uses _Fork() instead (async-signal-safe,
 * runs no handlers): the outer fork, whose prepare handler may be holding
 * the pool locks at that moment, must still complete, and its children
 * must still allocate.
 */
START_TEST(fork_in_handler_during_fork)
{
	pthread_t sig, w[2];
	int forks = 0;
	double end = st_now() + 8;

	handler_uses_fork_syscall = 1;
	install_fork_handler();
	victim = pthread_self();
	start(w, 2, heap_worker);
	ck_assert_int_eq(pthread_create(&sig, NULL, signaller, NULL), 0);
	while (atomic_load(&nsig_children) < NSIGFORKS && st_now() < end) {
		pid_t pid = fork();
		int status;

		if (pid == 0)
			_exit(child_work(forks));
		ST_REQUIRE(pid > 0, "fork: %s", strerror(errno));
		status = st_wait(pid, 10);
		ST_REQUIRE(status != -1, "fork_in_handler_during_fork: child "
					 "%d hung",
		    forks);
		ST_REQUIRE(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		    "child %d: status 0x%x", forks, status);
		forks++;
	}
	finish(w, 2);
	pthread_join(sig, NULL);
	reap_signal_children("fork_in_handler_during_fork");
	fprintf(stderr, "fork_in_handler_during_fork: %d forks, %d from a "
			"handler\n",
	    forks, atomic_load(&nsig_children));
}
END_TEST

/* One case per test, so that one can be run alone: CK_RUN_CASE=name. */
static void
add(Suite *s, const char *name, const TTest *test)
{
	TCase *tc = tcase_create(name);

	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test);
	suite_add_tcase(s, tc);
}

static Suite *
fork_suite(void)
{
	Suite *s = suite_create("fork_stress");

	add(s, "fork_busy_heap", fork_busy_heap);
	add(s, "fork_stdio_locks", fork_stdio_locks);
	add(s, "fork_in_handler_during_malloc", fork_in_handler_during_malloc);
	add(s, "fork_in_handler_during_fork", fork_in_handler_during_fork);
	return s;
}

int
main(void)
{
	return st_main(fork_suite());
}
