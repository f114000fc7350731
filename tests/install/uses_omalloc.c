/*
 * uses_omalloc.c - built against an installed omalloc by install-test.sh,
 * it checks that the program really allocates with omalloc and not with
 * glibc: only omalloc returns a pointer into a no-access page for
 * malloc(0), and only omalloc has malloc_gdump().
 *
 * Built with -DOPTIONS='"..."', it also defines the malloc_options global
 * the way a daemon compiles its options in.
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <omalloc.h>

#ifdef OPTIONS
const char *const malloc_options = OPTIONS;
#endif

static int
fail(const char *what)
{
	fprintf(stderr, "uses_omalloc: %s\n", what);
	return 1;
}

/* malloc(0) must be a unique pointer whose first byte faults. */
static int
check_malloc0(void)
{
	/* Volatile pointers: the compiler must not reason about the read. */
	char *volatile z = malloc(0);
	char *volatile z2 = malloc(0);
	pid_t pid;
	int status;

	if (z == NULL || z2 == NULL)
		return fail("malloc(0) returned NULL");
	if (z == z2)
		return fail("two malloc(0) calls returned the same pointer");
	pid = fork();
	if (pid == -1)
		return fail("fork failed");
	if (pid == 0) {
		volatile char c = z[0];
		(void)c;
		_exit(3);
	}
	if (waitpid(pid, &status, 0) != pid)
		return fail("waitpid failed");
	if (!WIFSIGNALED(status) ||
	    (WTERMSIG(status) != SIGSEGV && WTERMSIG(status) != SIGBUS))
		return fail("reading malloc(0) memory did not fault: "
			    "glibc's malloc is in use");
	free(z);
	free(z2);
	return 0;
}

/* malloc_gdump() writes a whole dump. */
static int
check_gdump(void)
{
	char path[] = "/tmp/uses_omalloc.XXXXXX";
	char *buf;
	size_t len = 0, cap = 1 << 16;
	ssize_t got;
	int fd = mkstemp(path);
	void *keep = malloc(100);

	if (fd == -1)
		return fail("mkstemp failed");
	unlink(path);
	malloc_gdump(fd);
	if (lseek(fd, 0, SEEK_SET) != 0)
		return fail("lseek failed");
	buf = malloc(cap + 1);
	if (buf == NULL)
		return fail("malloc failed");
	while ((got = read(fd, buf + len, cap - len)) > 0) {
		len += (size_t)got;
		if (len == cap) {
			char *bigger = realloc(buf, 2 * cap + 1);
			if (bigger == NULL)
				return fail("realloc failed");
			buf = bigger;
			cap *= 2;
		}
	}
	close(fd);
	buf[len] = '\0';
	if (strstr(buf, "Start dump") == NULL ||
	    strstr(buf, "End dump") == NULL)
		return fail("malloc_gdump() wrote no complete dump");
	free(buf);
	free(keep);
	return 0;
}

int
main(void)
{
	if (check_malloc0() || check_gdump())
		return 1;
	printf("omalloc %s in use\n", omalloc_version());
	return 0;
}
