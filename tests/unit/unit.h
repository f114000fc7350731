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

/* 1 if no page of [p, p + npages) is mapped (mincore says ENOMEM). */
int unit_unmapped(const void *p, size_t npages);

/* Write a byte at arg (for unit_run).  A write and a read at p fault
 * (SIGSEGV), each in a child; a write at p does not. */
void unit_write(void *arg);
void unit_expect_fault(void *p);
void unit_expect_ok(void *p);

/* Run a whole suite; returns the exit status for main. */
int unit_main(Suite *s);

/*
 * Check records the location of every assertion that passes with a system
 * call, so a check of every byte or word of a range finds the first that
 * differs and asserts once.  These return its index, or n if none does.
 */
size_t unit_first_not(const void *p, unsigned char c, size_t n);
size_t unit_first_not64(const uint64_t *p, uint64_t w, size_t n);

/* Every byte of p[0, n) is c; else fail naming the first that is not. */
#define ck_assert_bytes(p, c, n)                                             \
	do {                                                                 \
		const unsigned char *p_ = (const void *)(p);                 \
		size_t n_ = (n), at_ = unit_first_not(p_, (c), n_);          \
		ck_assert_msg(at_ == n_, "%s: byte %zu of %zu is 0x%02x, "   \
		    "not 0x%02x", #p, at_, n_, p_[at_], (unsigned int)(c));  \
	} while (0)

/* The same for the 64-bit words of p[0, n), each to be w. */
#define ck_assert_words(p, w, n)                                             \
	do {                                                                 \
		const uint64_t *p_ = (p);                                    \
		size_t n_ = (n), at_ = unit_first_not64(p_, (w), n_);        \
		ck_assert_msg(at_ == n_, "%s: word %zu of %zu is %#llx, "    \
		    "not %#llx", #p, at_, n_, (unsigned long long)p_[at_],   \
		    (unsigned long long)(w));                                \
	} while (0)

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
