/*
 * static_prog.c - linked with -static against libomalloc.a: the heap
 * functions, fork (glibc's static fork calls the __malloc_fork_* hooks),
 * threads and glibc's extras all resolve to omalloc.  Exits 0 when every
 * check holds; tests/check_static.sh also inspects the binary with nm.
 */
#include <malloc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "omalloc.h"

/* A statically linked daemon sets its options at compile time. */
const char *const malloc_options = "CJ";

static void *
worker(void *arg)
{
	void *p = malloc(300);
	free(arg);
	return p;
}

int
main(void)
{
	char *p = malloc(10), *q;
	pthread_t t;
	void *r;
	int st;

	strcpy(p, "omalloc");
	pthread_create(&t, NULL, worker, p);
	pthread_join(t, &r);
	free(r);

	pid_t pid = fork();
	if (pid == 0) {
		void *x = malloc(5000);
		free(x);
		_exit(7);
	}
	waitpid(pid, &st, 0);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 7) {
		fprintf(stderr, "child failed: 0x%x\n", st);
		return 1;
	}
	q = malloc(0);
	if (q == NULL || malloc_usable_size(q) != 0) {
		fprintf(stderr, "malloc(0) is not omalloc's\n");
		return 1;
	}
	free(q);
	if (mallopt(M_ARENA_MAX, 2) != 1 || mallinfo2().arena == 0) {
		fprintf(stderr, "glibc extras not served\n");
		return 1;
	}
	malloc_trim(0);
	/* The compiled-in options are in force: C makes the usable size
	 * exact. */
	q = malloc(13);
	if (malloc_usable_size(q) != 13) {
		fprintf(stderr, "malloc_options not applied\n");
		return 1;
	}
	/* C23's sized free is omalloc's too, not a call into glibc's. */
	free_sized(q, 13);
	malloc_gdump(STDOUT_FILENO);
	return 0;
}
