/*
 * Child process plumbing for the misuse tests.  The child gets a fresh
 * environment with only MALLOC_OPTIONS changed, since the allocator reads
 * its options once at start: every option set needs a process of its own.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <regex.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "runner.h"

extern char **environ;

static char **
child_env(const char *opts, char *slot, size_t slotlen)
{
	size_t n = 0, k = 0;

	while (environ[n] != NULL)
		n++;
	char **env = calloc(n + 2, sizeof(*env));
	if (env == NULL)
		return NULL;
	for (size_t i = 0; i < n; i++)
		if (strncmp(environ[i], "MALLOC_OPTIONS=", 15) != 0)
			env[k++] = environ[i];
	if (opts != NULL) {
		snprintf(slot, slotlen, "MALLOC_OPTIONS=%s", opts);
		env[k++] = slot;
	}
	env[k] = NULL;
	return env;
}

static long
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

/* Append what fd has to buf; returns 0 at end of file. */
static int
drain(int fd, char *buf, size_t cap, size_t *len)
{
	char tmp[4096];
	ssize_t n = read(fd, tmp, sizeof(tmp));

	if (n < 0)
		return errno == EINTR || errno == EAGAIN;
	if (n == 0)
		return 0;
	size_t room = cap - 1 - *len;
	size_t take = (size_t)n < room ? (size_t)n : room;
	memcpy(buf + *len, tmp, take);
	*len += take;
	buf[*len] = '\0';
	return 1;
}

int
misuse_run(const char *driver, const char *attack, const char *opts,
    int timeout_ms, struct run_result *r)
{
	int out[2], err[2];
	char slot[256];
	char **env;

	memset(r, 0, sizeof(*r));
	env = child_env(opts, slot, sizeof(slot));
	if (env == NULL || pipe2(out, O_CLOEXEC) != 0 ||
	    pipe2(err, O_CLOEXEC) != 0)
		return -1;
	pid_t pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		struct rlimit nocore = {0, 0};
		char *argv[] = {(char *)driver, (char *)attack, NULL};

		setrlimit(RLIMIT_CORE, &nocore);
		dup2(out[1], STDOUT_FILENO);
		dup2(err[1], STDERR_FILENO);
		execve(driver, argv, env);
		_exit(127);
	}
	free(env);
	close(out[1]);
	close(err[1]);
	r->pid = pid;

	size_t outlen = 0, errlen = 0;
	int open_out = 1, open_err = 1;
	long deadline = now_ms() + timeout_ms;
	while (open_out || open_err) {
		struct pollfd pf[2] = {
			{out[0], POLLIN, 0}, {err[0], POLLIN, 0}
		};
		long left = deadline - now_ms();
		if (left <= 0) {
			r->timed_out = 1;
			kill(pid, SIGKILL);
			break;
		}
		if (!open_out)
			pf[0].fd = -1;
		if (!open_err)
			pf[1].fd = -1;
		int n = poll(pf, 2, (int)left);
		if (n < 0 && errno != EINTR)
			break;
		if (n <= 0)
			continue;
		if (pf[0].revents)
			open_out = drain(out[0], r->out, sizeof(r->out),
			    &outlen);
		if (pf[1].revents)
			open_err = drain(err[0], r->err, sizeof(r->err),
			    &errlen);
	}
	close(out[0]);
	close(err[0]);
	while (waitpid(pid, &r->status, 0) < 0 && errno == EINTR)
		;

	const char *at = strstr(r->out, "PTR 0x");
	if (at != NULL) {
		r->ptr = (uintptr_t)strtoull(at + 4, NULL, 16);
		r->have_ptr = 1;
	}
	return 0;
}

int
misuse_match(const char *ere, const char *text, int whole)
{
	char pat[512];
	regex_t re;
	int ok;

	snprintf(pat, sizeof(pat), whole ? "^(%s)$" : "%s", ere);
	if (regcomp(&re, pat, REG_EXTENDED | REG_NOSUB) != 0)
		return 0;
	ok = regexec(&re, text, 0, NULL, 0) == 0;
	regfree(&re);
	return ok;
}

int
misuse_find_fatal(const char *err, struct fatal_line *fl)
{
	regex_t re;
	regmatch_t m[5];
	int found = 0;

	if (regcomp(&re,
	    "^([^()[:space:]]+)\\(([0-9]+)\\) in ([A-Za-z_0-9]+)\\(\\): (.*)$",
	    REG_EXTENDED | REG_NEWLINE) != 0)
		return 0;
	if (regexec(&re, err, 5, m, 0) == 0) {
		size_t n;

		n = (size_t)(m[1].rm_eo - m[1].rm_so);
		n = n < sizeof(fl->prog) - 1 ? n : sizeof(fl->prog) - 1;
		memcpy(fl->prog, err + m[1].rm_so, n);
		fl->prog[n] = '\0';
		fl->pid = strtol(err + m[2].rm_so, NULL, 10);
		n = (size_t)(m[3].rm_eo - m[3].rm_so);
		n = n < sizeof(fl->func) - 1 ? n : sizeof(fl->func) - 1;
		memcpy(fl->func, err + m[3].rm_so, n);
		fl->func[n] = '\0';
		n = (size_t)(m[4].rm_eo - m[4].rm_so);
		n = n < sizeof(fl->reason) - 1 ? n : sizeof(fl->reason) - 1;
		memcpy(fl->reason, err + m[4].rm_so, n);
		fl->reason[n] = '\0';
		found = 1;
	}
	regfree(&re);
	return found;
}

int
misuse_names_ptr(const char *text, uintptr_t ptr)
{
	for (const char *s = text; (s = strstr(s, "0x")) != NULL; s += 2)
		if ((uintptr_t)strtoull(s + 2, NULL, 16) == ptr)
			return 1;
	return 0;
}

static const char *
base_name(const char *path)
{
	const char *s = strrchr(path, '/');

	return s != NULL ? s + 1 : path;
}

int
misuse_judge(const struct misuse_case *c, const char *driver,
    const struct run_result *r, char *why, size_t whylen)
{
	struct fatal_line fl;
	int st = r->status;

	if (r->timed_out) {
		snprintf(why, whylen, "hung: killed after the deadline");
		return 0;
	}
	switch (c->expect) {
	case EXPECT_EXIT0:
		if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
			snprintf(why, whylen, "expected exit 0");
			return 0;
		}
		if (misuse_find_fatal(r->err, &fl)) {
			snprintf(why, whylen, "exit 0 but an error message");
			return 0;
		}
		return 1;
	case EXPECT_SEGV:
		if (!WIFSIGNALED(st) || WTERMSIG(st) != SIGSEGV) {
			snprintf(why, whylen, "expected SIGSEGV");
			return 0;
		}
		return 1;
	case EXPECT_ABORT:
		break;
	}
	if (!WIFSIGNALED(st) || WTERMSIG(st) != SIGABRT) {
		snprintf(why, whylen, "expected SIGABRT");
		return 0;
	}
	if (!misuse_find_fatal(r->err, &fl)) {
		snprintf(why, whylen,
		    "no `<prog>(<pid>) in <function>(): <reason>` line");
		return 0;
	}
	if (strcmp(fl.prog, base_name(driver)) != 0) {
		snprintf(why, whylen, "program name %s, expected %s", fl.prog,
		    base_name(driver));
		return 0;
	}
	if (fl.pid != (long)r->pid) {
		snprintf(why, whylen, "pid %ld, expected %ld", fl.pid,
		    (long)r->pid);
		return 0;
	}
	if (!misuse_match(c->func, fl.func, 1)) {
		snprintf(why, whylen, "function %s, expected /%s/", fl.func,
		    c->func);
		return 0;
	}
	if (!misuse_match(c->reason, fl.reason, 0)) {
		snprintf(why, whylen, "reason does not match /%s/", c->reason);
		return 0;
	}
	if (c->check_ptr) {
		if (!r->have_ptr) {
			snprintf(why, whylen, "driver announced no pointer");
			return 0;
		}
		if (!misuse_names_ptr(fl.reason, r->ptr)) {
			snprintf(why, whylen,
			    "message does not name %#" PRIxPTR, r->ptr);
			return 0;
		}
	}
	return 1;
}

static const char *
sig_name(int sig)
{
	switch (sig) {
	case SIGABRT:
		return "SIGABRT";
	case SIGSEGV:
		return "SIGSEGV";
	case SIGBUS:
		return "SIGBUS";
	case SIGKILL:
		return "SIGKILL";
	case SIGILL:
		return "SIGILL";
	case SIGTRAP:
		return "SIGTRAP";
	default:
		return strsignal(sig);
	}
}

/* The first line of s, pid and pointers left as they are. */
static void
first_line(const char *s, char *buf, size_t len)
{
	size_t n = strcspn(s, "\n");

	if (n >= len)
		n = len - 1;
	memcpy(buf, s, n);
	buf[n] = '\0';
}

void
misuse_outcome(const struct run_result *r, char *buf, size_t len)
{
	char line[sizeof(((struct fatal_line *)0)->reason) + 128];
	struct fatal_line fl;
	int st = r->status;

	if (misuse_find_fatal(r->err, &fl))
		snprintf(line, sizeof(line), "%s(): %s", fl.func, fl.reason);
	else
		first_line(r->err, line, sizeof(line));

	if (r->timed_out)
		snprintf(buf, len, "hung (killed)");
	else if (WIFSIGNALED(st) && line[0] != '\0')
		snprintf(buf, len, "%s: %s", sig_name(WTERMSIG(st)), line);
	else if (WIFSIGNALED(st))
		snprintf(buf, len, "%s", sig_name(WTERMSIG(st)));
	else if (WEXITSTATUS(st) == 77)
		snprintf(buf, len, "n/a");
	else if (strstr(r->out, "SURVIVED") != NULL)
		snprintf(buf, len, "silent (exit %d)%s%s", WEXITSTATUS(st),
		    line[0] ? ": " : "", line);
	else
		snprintf(buf, len, "exit %d%s%s", WEXITSTATUS(st),
		    line[0] ? ": " : "", line);
}
