/*
 * util.h - helpers shared by the stress, out-of-memory and bad-input
 * programs: a per-thread random generator, block fill and check, child
 * processes with a watchdog, and the process's mapped size.
 */
#ifndef STRESS_UTIL_H
#define STRESS_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/*
 * Check's ck_assert records its location on every call, a system call
 * each: in loops and worker threads use ST_REQUIRE, which costs nothing
 * until it fails (needs <check.h>).
 */
#define ST_REQUIRE(cond, ...)                                                  \
	do {                                                                   \
		if (!(cond))                                                   \
			ck_abort_msg(__VA_ARGS__);                             \
	} while (0)

/* xorshift64*, one state per caller. */
uint64_t st_rand(uint64_t *state);

/* A size: mostly small, some up to a few pages, few up to max. */
size_t st_size(uint64_t *state, size_t max);

/*
 * Fill a block with a pattern derived from id, or check that it is still
 * there; st_check returns the first bad offset, or (size_t)-1.
 */
void st_fill(void *p, size_t size, uint32_t id);
size_t st_check(const void *p, size_t size, uint32_t id);

/*
 * Wait for pid for at most seconds; a child still running then is killed
 * and reported as hung (returns -1).  Otherwise returns the wait status.
 */
int st_wait(pid_t pid, double seconds);

/*
 * Run this program again as "prog mode" with the extra environment
 * variables in env (NULL-terminated, "NAME=value"; MALLOC_OPTIONS and
 * MALLOC_DUMP_FILE are removed from the inherited environment first).
 * Standard error is captured into err (NUL-terminated); returns the wait
 * status, or -1 when the child hung for more than 20 seconds.
 */
int st_run_self(const char *mode, const char *const *env, char *err,
    size_t errlen);

/* VmSize of this process in bytes, from /proc/self/status. */
size_t st_vmsize(void);

/* Seconds since an arbitrary start, monotonic. */
double st_now(void);

/* The number of lines in s. */
int st_lines(const char *s);

/* Run suite s and return the exit status of the program: 0 if every test
 * passed (the twin of unit_main in tests/unit). */
struct Suite;
int st_main(struct Suite *s);

#endif /* STRESS_UTIL_H */
