/*
 * util.c - see util.h.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <check.h>

#include "util.h"

extern char **environ;

uint64_t
st_rand(uint64_t *s)
{
	uint64_t x = *s ? *s : 0x9e3779b97f4a7c15ull;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*s = x;
	return x * 2685821657736338717ull;
}

size_t
st_size(uint64_t *s, size_t max)
{
	uint64_t r = st_rand(s);
	size_t n;

	switch (r % 16) {
	case 0:
		n = (size_t)(r >> 8) % (max + 1);
		break;
	case 1:
	case 2:
		n = (size_t)(r >> 8) % 16385;
		break;
	default:
		n = (size_t)(r >> 8) % 1025;
		break;
	}
	return n > max ? max : n;
}

/*
 * The pattern: the id in the first and last eight bytes, a byte derived
 * from it everywhere else, so a check is a cheap scan.
 */
static unsigned char
idbyte(uint32_t id)
{
	return (unsigned char)(id * 2654435761u >> 24 | 1);
}

void
st_fill(void *p, size_t size, uint32_t id)
{
	unsigned char *b = p;
	uint64_t w = (uint64_t)id * 0x100000001ull;

	if (size < 16) {
		memset(b, idbyte(id), size);
		return;
	}
	memcpy(b, &w, 8);
	memset(b + 8, idbyte(id), size - 16);
	memcpy(b + size - 8, &w, 8);
}

size_t
st_check(const void *p, size_t size, uint32_t id)
{
	const unsigned char *b = p;
	uint64_t w = (uint64_t)id * 0x100000001ull, v;
	unsigned char c = idbyte(id);
	size_t from = 0, to = size;

	if (size >= 16) {
		memcpy(&v, b, 8);
		if (v != w)
			return 0;
		memcpy(&v, b + size - 8, 8);
		if (v != w)
			return size - 8;
		from = 8;
		to = size - 8;
	}
	for (size_t i = from; i < to; i++)
		if (b[i] != c)
			return i;
	return (size_t)-1;
}

double
st_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int
st_wait(pid_t pid, double seconds)
{
	double end = st_now() + seconds;
	int status;

	for (;;) {
		pid_t r = waitpid(pid, &status, WNOHANG);

		if (r == pid)
			return status;
		if (r < 0 && errno != EINTR)
			return -1;
		if (st_now() > end) {
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
			return -1;
		}
		usleep(1000);
	}
}

int
st_run_self(const char *mode, const char *const *env, char *err,
    size_t errlen)
{
	int fd[2], status;
	size_t n = 0, nenv = 0, nextra = 0;
	pid_t pid;
	char **envp;
	double end;

	for (char **e = environ; *e != NULL; e++)
		nenv++;
	while (env != NULL && env[nextra] != NULL)
		nextra++;
	envp = calloc(nenv + nextra + 1, sizeof(*envp));
	if (envp == NULL || pipe(fd) != 0)
		return -1;
	n = 0;
	for (char **e = environ; *e != NULL; e++)
		if (strncmp(*e, "MALLOC_OPTIONS=", 15) != 0 &&
		    strncmp(*e, "MALLOC_DUMP_FILE=", 17) != 0)
			envp[n++] = *e;
	for (size_t i = 0; i < nextra; i++)
		envp[n++] = (char *)env[i];
	envp[n] = NULL;
	fflush(NULL);
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		char self[] = "/proc/self/exe";
		char *argv[] = {self, (char *)mode, NULL};
		int null = open("/dev/null", O_RDWR);

		dup2(null, 0);
		dup2(null, 1);
		dup2(fd[1], 2);
		close(fd[0]);
		execve(self, argv, envp);
		_exit(127);
	}
	free(envp);
	close(fd[1]);
	fcntl(fd[0], F_SETFL, O_NONBLOCK);
	end = st_now() + 20;
	n = 0;
	for (;;) {
		char tmp[4096], *dst = errlen - n > 1 ? err + n : tmp;
		size_t room = errlen - n > 1 ? errlen - n - 1 : sizeof(tmp);
		ssize_t r = read(fd[0], dst, room);

		if (r > 0) {
			if (dst != tmp)
				n += (size_t)r;
			continue;
		}
		if (r == 0)
			break;
		if (errno != EAGAIN && errno != EINTR)
			break;
		if (st_now() > end)
			break;
		usleep(1000);
	}
	err[n] = '\0';
	close(fd[0]);
	status = st_wait(pid, end - st_now() > 1 ? end - st_now() : 1);
	return status;
}

size_t
st_vmsize(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	size_t kb = 0;

	if (f == NULL)
		return 0;
	while (fgets(line, sizeof(line), f) != NULL)
		if (sscanf(line, "VmSize: %zu kB", &kb) == 1)
			break;
	fclose(f);
	return kb * 1024;
}

int
st_lines(const char *s)
{
	int n = 0;

	for (; *s != '\0'; s++)
		if (*s == '\n')
			n++;
	return n;
}

int
st_main(Suite *s)
{
	SRunner *sr = srunner_create(s);
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
