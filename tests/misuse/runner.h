/*
 * Running one attack of misuse_attack in a child process with a given
 * MALLOC_OPTIONS, and reading the allocator's message back.  Shared by the
 * Check suite (test_misuse.c) and the table printer (misuse_table.c).
 */
#ifndef MISUSE_RUNNER_H
#define MISUSE_RUNNER_H

#include <stdint.h>
#include <sys/types.h>

enum expect {
	EXPECT_ABORT,	/* SIGABRT with a message naming function and reason */
	EXPECT_SEGV,	/* SIGSEGV: a guard or PROT_NONE page stops it */
	EXPECT_EXIT0,	/* a correct use: exits 0 */
};

struct misuse_case {
	const char *attack;	/* the misuse_attack argument */
	const char *opts;	/* MALLOC_OPTIONS for the child */
	enum expect expect;
	const char *func;	/* ERE for <function>, anchored at both ends */
	const char *reason;	/* ERE searched in <reason> */
	int check_ptr;		/* the message must name the pointer */
	int informational;	/* only in the table, never a test */
	const char *what;	/* one line for the table */
};

struct run_result {
	pid_t pid;
	int status;		/* from waitpid */
	int timed_out;		/* killed by the runner's deadline */
	int have_ptr;		/* the driver announced a pointer */
	uintptr_t ptr;
	char out[4096];
	char err[16384];
};

/* The parts of `<prog>(<pid>) in <function>(): <reason>`. */
struct fatal_line {
	char prog[256];
	long pid;
	char func[64];
	char reason[1024];
};

/*
 * Run `driver attack` with MALLOC_OPTIONS set to opts (unset when opts is
 * NULL), no core dump, stdout and stderr captured, killed after
 * timeout_ms.  Returns 0, or -1 when the child could not be started.
 */
int misuse_run(const char *driver, const char *attack, const char *opts,
    int timeout_ms, struct run_result *r);

/* Find the allocator's message in stderr; 1 when found. */
int misuse_find_fatal(const char *err, struct fatal_line *fl);

/* Whether text names ptr as a 0x... token. */
int misuse_names_ptr(const char *text, uintptr_t ptr);

/* Whether the ERE matches text (anchored when whole is set). */
int misuse_match(const char *ere, const char *text, int whole);

/*
 * Judge a run against a case.  Returns 1 when it matches; otherwise 0 and
 * a one-line reason in why.
 */
int misuse_judge(const struct misuse_case *c, const char *driver,
    const struct run_result *r, char *why, size_t whylen);

/* Describe the outcome in one line: signal or exit, and the message. */
void misuse_outcome(const struct run_result *r, char *buf, size_t len);

#endif
