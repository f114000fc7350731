/*
 * peakrss: run a program and report its peak resident memory.
 *
 *     peakrss PROGRAM [ARG...]
 *
 * Runs PROGRAM as a child, waits for it with wait4(2) and writes
 * `peakrss_kib=N` (the child's ru_maxrss) as the last line of standard
 * error, then exits with the child's status (128 + N for a child killed by
 * signal N).  bench/run starts every benchmark through it: Linux carries a
 * process's peak RSS across exec, so a benchmark started straight from the
 * runner would report at least the runner's own (Python's) resident size.
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

int
main(int argc, char **argv)
{
	struct rusage ru;
	pid_t pid;
	int st;

	if (argc < 2) {
		fprintf(stderr, "usage: %s PROGRAM [ARG...]\n", argv[0]);
		return 2;
	}
	pid = fork();
	if (pid < 0) {
		perror("peakrss: fork");
		return 2;
	}
	if (pid == 0) {
		execvp(argv[1], argv + 1);
		perror(argv[1]);
		_exit(127);
	}
	if (wait4(pid, &st, 0, &ru) != pid) {
		perror("peakrss: wait4");
		return 2;
	}
	fprintf(stderr, "peakrss_kib=%ld\n", ru.ru_maxrss);
	if (WIFSIGNALED(st))
		return 128 + WTERMSIG(st);
	return WEXITSTATUS(st);
}
