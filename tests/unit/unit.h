/*
 * unit.h - helpers shared by the white-box suites of tests/unit.
 *
 * These suites link the static archive, so the hidden om_* functions are
 * reachable and the library is also the process malloc.  Checks that must
 * end the process (om_fatal, a fault on a guard page) run in a forked
 * child whose stderr is captured through a pipe.
 */
#ifndef UNIT_H
#define UNIT_H

#include "internal.h"
#include "../check_bytes.h"

#include <check.h>
#include <stddef.h>
#include <sys/wait.h>

struct child {
	int status;		/* as returned by waitpid */
	long pid;
	size_t len;
	char out[16384];	/* the child's stderr, NUL-terminated */
};

/* Run fn(arg) in a child with stderr on a pipe; the child exits 0 if fn
 * returns. */
void unit_run(void (*fn)(void *), void *arg, struct child *c);

/* 1 if the child died of sig. */
int unit_signalled(const struct child *c, int sig);

/* Initialise the library (first malloc) so mopts is filled in, and open
 * every pool. */
void unit_init(void);

/* A private pool, outside mopts.pools, for tests that want a fresh heap. */
struct dir_info *unit_pool(void);

/* This thread's pool, with nothing cached, where the page cache's front
 * applies to it (see cache.c); NULL where options keep it out (extras,
 * F, G, no room for the run). */
struct dir_info *unit_front_pool(void);

/* The calling thread's pool, in use and then trimmed: nothing cached. */
struct dir_info *unit_own_pool(void);

/* A run of UNIT_FRONT_PAGES, taken whole and freed: in d's front. */
#define UNIT_FRONT_PAGES 16
char *unit_front_loop(struct dir_info *d);

/* 1 if no page of [p, p + npages) is mapped (mincore says ENOMEM). */
int unit_unmapped(const void *p, size_t npages);

/* Write a byte at arg (for unit_run).  A write and a read at p fault
 * (SIGSEGV), each in a child; a write at p does not. */
void unit_write(void *arg);
void unit_expect_fault(void *p);
void unit_expect_ok(void *p);

/* Run a whole suite; returns the exit status for main. */
int unit_main(Suite *s);

/* The child aborted with `<prog>(<pid>) in <func>(): <reason>`. */
#define ck_assert_fatal(c, func, reason)                                     \
	do {                                                                 \
		char want_[256];                                             \
		snprintf(want_, sizeof(want_), "(%ld) in %s(): %s",          \
		    (c)->pid, (func), (reason));                             \
		ck_assert_msg(unit_signalled((c), SIGABRT),                  \
		    "expected SIGABRT, status 0x%x, stderr: %s",             \
		    (c)->status, (c)->out);                                  \
		ck_assert_msg(strstr((c)->out, want_) != NULL,               \
		    "expected \"%s\" in stderr: %s", want_, (c)->out);       \
	} while (0)

/* The child exited with status 0; else its status and stderr. */
#define ck_assert_exited_ok(c)                                              \
	ck_assert_msg(WIFEXITED((c)->status) && WEXITSTATUS((c)->status) == 0, \
	    "expected exit 0, status 0x%x, stderr: %s", (c)->status, (c)->out)

#endif /* UNIT_H */
