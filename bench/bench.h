/*
 * bench.h - the small toolkit every benchmark program shares: key=value
 * arguments, a monotonic clock, a per-thread random generator, a start
 * barrier for worker threads, a way to keep the compiler from deleting
 * a malloc/free pair whose result is never used, and (for programs that
 * define _GNU_SOURCE) binding threads to CPUs.
 *
 * Everything here is static so each benchmark stays one self-contained
 * program that can be built with nothing but "cc -O2 -pthread x.c".
 * The programs use only the standard malloc API, so they measure whatever
 * allocator LD_PRELOAD puts in front of glibc.
 *
 * Arguments are key=value pairs, the same keys the result line prints, so
 * a result line pasted back on the command line reproduces the run.
 */
#ifndef BENCH_H
#define BENCH_H

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#ifdef _GNU_SOURCE
#include <sched.h>
#endif

enum arg_type { ARG_LONG, ARG_SIZE, ARG_DOUBLE, ARG_STRING };

struct bench_arg {
	const char *key;
	enum arg_type type;
	void *value;
	const char *help;
};

static inline void
bench_usage(FILE *f, const char *name, const char *what,
    const struct bench_arg *args, size_t nargs)
{
	size_t i;

	fprintf(f, "usage: %s [key=value ...]\n%s\n", name, what);
	for (i = 0; i < nargs; i++) {
		const struct bench_arg *a = &args[i];

		switch (a->type) {
		case ARG_LONG:
		case ARG_SIZE:
			fprintf(f, "  %-12s %s (default %ld)\n", a->key,
			    a->help, *(long *)a->value);
			break;
		case ARG_DOUBLE:
			fprintf(f, "  %-12s %s (default %g)\n", a->key, a->help,
			    *(double *)a->value);
			break;
		case ARG_STRING:
			fprintf(f, "  %-12s %s (default %s)\n", a->key, a->help,
			    *(const char **)a->value);
			break;
		}
	}
	fprintf(f, "Sizes take a k or m suffix (4k = 4096).\n");
}

/* A non-negative integer with an optional k/m/g suffix (powers of 1024). */
static inline int
parse_long(const char *s, int suffix_ok, long *out)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 0);
	if (errno != 0 || end == s || v < 0)
		return -1;
	if (suffix_ok && *end != '\0' && end[1] == '\0') {
		long mul = 0;

		switch (*end) {
		case 'k': case 'K': mul = 1L << 10; break;
		case 'm': case 'M': mul = 1L << 20; break;
		case 'g': case 'G': mul = 1L << 30; break;
		default: return -1;
		}
		if (v > LONG_MAX / mul)
			return -1;
		v *= mul;
		end++;
	}
	if (*end != '\0')
		return -1;
	*out = v;
	return 0;
}

/*
 * Parse argv as key=value pairs into args.  A bad argument is a usage
 * error: message on stderr, exit status 2, as the runner expects.
 */
static inline void
bench_parse(int argc, char **argv, const char *what, struct bench_arg *args,
    size_t nargs)
{
	const char *name = argv[0];
	int i;

	for (i = 1; i < argc; i++) {
		const char *arg = argv[i];
		const char *eq = strchr(arg, '=');
		size_t j, klen;

		if (strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0) {
			bench_usage(stdout, name, what, args, nargs);
			exit(0);
		}
		if (eq == NULL || eq == arg) {
			fprintf(stderr, "%s: expected key=value, got '%s'\n",
			    name, arg);
			goto usage;
		}
		klen = (size_t)(eq - arg);
		for (j = 0; j < nargs; j++)
			if (strlen(args[j].key) == klen &&
			    strncmp(args[j].key, arg, klen) == 0)
				break;
		if (j == nargs) {
			fprintf(stderr, "%s: unknown key '%.*s'\n", name,
			    (int)klen, arg);
			goto usage;
		}
		switch (args[j].type) {
		case ARG_LONG:
		case ARG_SIZE:
			if (parse_long(eq + 1, args[j].type == ARG_SIZE,
			    args[j].value) == -1) {
				fprintf(stderr, "%s: %s: not a non-negative "
				    "integer: '%s'\n", name, args[j].key,
				    eq + 1);
				goto usage;
			}
			break;
		case ARG_DOUBLE: {
			char *end;
			double d;

			errno = 0;
			d = strtod(eq + 1, &end);
			if (errno != 0 || end == eq + 1 || *end != '\0' ||
			    !(d >= 0)) {
				fprintf(stderr, "%s: %s: not a non-negative "
				    "number: '%s'\n", name, args[j].key,
				    eq + 1);
				goto usage;
			}
			*(double *)args[j].value = d;
			break;
		}
		case ARG_STRING:
			*(const char **)args[j].value = eq + 1;
			break;
		}
	}
	return;
usage:
	bench_usage(stderr, name, what, args, nargs);
	exit(2);
}

/* Argument checks that need more than one value: same exit status. */
static inline void
bench_require(int ok, const char *name, const char *msg)
{
	if (!ok) {
		fprintf(stderr, "%s: %s\n", name, msg);
		exit(2);
	}
}

static inline uint64_t
now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* xorshift64*: fast, and good enough to pick sizes and slots. */
static inline uint64_t
rnd_next(uint64_t *state)
{
	uint64_t x = *state;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*state = x;
	return x * 0x2545F4914F6CDD1DULL;
}

static inline uint64_t
rnd_seed(uint64_t seed, uint64_t stream)
{
	uint64_t s = seed * 0x9E3779B97F4A7C15ULL + stream + 1;

	return s != 0 ? s : 1;
}

/*
 * Make the compiler believe p is used: without it, gcc may drop a
 * malloc/free pair whose result is never read.
 */
static inline void
escape(void *p)
{
	__asm__ volatile("" : : "g"(p) : "memory");
}

/* Allocation failure ends the benchmark: a result would be meaningless. */
static inline void *
check_alloc(void *p, size_t size)
{
	if (p == NULL && size != 0) {
		fprintf(stderr, "malloc(%zu) failed\n", size);
		exit(1);
	}
	return p;
}

/*
 * Write v to the pages of the size bytes at p, as a program filling a
 * buffer makes each page resident: a byte in the middle of each page
 * whose middle the block holds, wherever p starts within its first page
 * (a page the block only begins or ends in may get none).  On some
 * processors (an Intel Xeon here) a byte written to the first or last
 * line of each of thousands of pages in a row takes half as long again
 * as one written to their middle, whichever allocator gave the block;
 * bytes at p plus multiples of 4096 would charge that to the allocators
 * whose big blocks start on a page.
 */
static inline void
touch_pages(char *p, size_t size, char v)
{
	size_t off;

	for (off = (2048 - (uintptr_t)p) & 4095; off < size; off += 4096)
		p[off] = v;
}

/*
 * Run fn(arg_i) on nthreads threads that all start together.  Returns the
 * wall time in ns from the first thread's start to the last one's end,
 * each taken by the worker itself: the main thread may not be scheduled
 * right after the start barrier (more threads than cores), so its own
 * clock would miss part of the run.  Thread creation is not measured.
 */
struct bench_threads {
	pthread_barrier_t start;
	void *(*fn)(void *);
};

struct bench_thread_arg {
	struct bench_threads *bt;
	void *arg;
	uint64_t t_start, t_end;
};

static void *
bench_trampoline(void *p)
{
	struct bench_thread_arg *ta = p;
	void *ret;

	pthread_barrier_wait(&ta->bt->start);
	ta->t_start = now_ns();
	ret = ta->bt->fn(ta->arg);
	ta->t_end = now_ns();
	return ret;
}

/* Start nthreads workers; they run once the caller waits on bt->start. */
static inline struct bench_thread_arg *
start_threads(struct bench_threads *bt, pthread_t *tids, long nthreads,
    void *(*fn)(void *), void *args, size_t argsize)
{
	struct bench_thread_arg *ta;
	long i;

	bt->fn = fn;
	pthread_barrier_init(&bt->start, NULL, (unsigned)nthreads + 1);
	ta = check_alloc(calloc((size_t)nthreads, sizeof(*ta)), 1);
	for (i = 0; i < nthreads; i++) {
		ta[i].bt = bt;
		ta[i].arg = (char *)args + (size_t)i * argsize;
		if (pthread_create(&tids[i], NULL, bench_trampoline,
		    &ta[i]) != 0) {
			fprintf(stderr, "pthread_create failed\n");
			exit(1);
		}
	}
	return ta;
}

/* Join the workers; the span from the earliest start to the latest end. */
static inline uint64_t
join_threads(struct bench_threads *bt, pthread_t *tids,
    struct bench_thread_arg *ta, long nthreads)
{
	uint64_t first = UINT64_MAX, last = 0;
	long i;

	for (i = 0; i < nthreads; i++) {
		pthread_join(tids[i], NULL);
		if (ta[i].t_start < first)
			first = ta[i].t_start;
		if (ta[i].t_end > last)
			last = ta[i].t_end;
	}
	pthread_barrier_destroy(&bt->start);
	free(ta);
	return last > first ? last - first : 1;
}

static inline uint64_t
run_threads(long nthreads, void *(*fn)(void *), void *args, size_t argsize)
{
	struct bench_threads bt;
	struct bench_thread_arg *ta;
	pthread_t *tids;
	uint64_t ns;

	tids = check_alloc(calloc((size_t)nthreads, sizeof(*tids)), 1);
	ta = start_threads(&bt, tids, nthreads, fn, args, argsize);
	pthread_barrier_wait(&bt.start);
	ns = join_threads(&bt, tids, ta, nthreads);
	free(tids);
	return ns;
}

/* Sleep for a fractional number of seconds (time-limited benchmarks). */
static inline void
sleep_seconds(double s)
{
	struct timespec ts;

	ts.tv_sec = (time_t)s;
	ts.tv_nsec = (long)((s - (double)ts.tv_sec) * 1e9);
	while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
		;
}

/* One cache line per thread's hot counters, so they do not false-share. */
#define BENCH_CACHELINE 64
#define BENCH_ALIGNED __attribute__((aligned(BENCH_CACHELINE)))

#ifdef _GNU_SOURCE
/*
 * cpu=none, N or N,M: where the two kinds of thread of a benchmark run.
 * none leaves them to the scheduler (*a = *b = -1), N puts both on CPU
 * N, N,M the first kind on N and the second on M.  0 if cpu is one of
 * those, else -1.
 */
static inline int
bench_parse_cpus_value(const char *cpu, long *a, long *b)
{
	char first[32];
	const char *comma = strchr(cpu, ',');
	size_t len = comma != NULL ? (size_t)(comma - cpu) : strlen(cpu);

	*a = *b = -1;
	if (strcmp(cpu, "none") == 0)
		return 0;
	if (len == 0 || len >= sizeof(first))
		return -1;
	memcpy(first, cpu, len);
	first[len] = '\0';
	if (parse_long(first, 0, a) != 0 || *a >= CPU_SETSIZE)
		return -1;
	if (comma == NULL) {
		*b = *a;
		return 0;
	}
	return parse_long(comma + 1, 0, b) != 0 || *b >= CPU_SETSIZE ? -1 : 0;
}

/* The cpu argument of program name, or exit with a message. */
static inline void
bench_parse_cpus(const char *name, const char *cpu, long *a, long *b)
{
	bench_require(bench_parse_cpus_value(cpu, a, b) == 0, name,
	    "cpu must be none, a CPU number or two joined by a comma");
}

/* Bind the calling thread to CPU cpu, unless cpu is negative. */
static inline void
bench_pin(const char *prog, long cpu)
{
	cpu_set_t set;

	if (cpu < 0)
		return;
	CPU_ZERO(&set);
	CPU_SET((int)cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set) != 0) {
		fprintf(stderr, "%s: cannot run on CPU %ld: %s\n", prog, cpu,
		    strerror(errno));
		exit(1);
	}
}
#endif

#endif /* BENCH_H */
