/* util.c - the helpers of unit.h. */
#include "unit.h"

#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

void
unit_run(void (*fn)(void *), void *arg, struct child *c)
{
	int fds[2];
	pid_t pid;
	ssize_t n;

	memset(c, 0, sizeof(*c));
	if (pipe(fds) != 0)
		abort();
	pid = fork();
	if (pid < 0)
		abort();
	if (pid == 0) {
		close(fds[0]);
		dup2(fds[1], STDERR_FILENO);
		close(fds[1]);
		/* No core files from the expected crashes. */
		signal(SIGABRT, SIG_DFL);
		signal(SIGSEGV, SIG_DFL);
		fn(arg);
		_exit(0);
	}
	close(fds[1]);
	while (c->len < sizeof(c->out) - 1 &&
	    (n = read(fds[0], c->out + c->len,
	    sizeof(c->out) - 1 - c->len)) != 0) {
		if (n > 0)
			c->len += (size_t)n;
		else if (errno != EINTR)
			break;
	}
	/* Drain whatever did not fit, so the child never blocks. */
	if (c->len == sizeof(c->out) - 1) {
		char sink[4096];
		while (read(fds[0], sink, sizeof(sink)) > 0)
			;
	}
	close(fds[0]);
	c->out[c->len] = '\0';
	c->pid = (long)pid;
	while (waitpid(pid, &c->status, 0) < 0)
		;
}

int
unit_signalled(const struct child *c, int sig)
{
	return WIFSIGNALED(c->status) && WTERMSIG(c->status) == sig;
}

void
unit_init(void)
{
	unsigned int i;

	free(malloc(1));
	if (!om_ready)
		abort();
	/* Tests look into any pool: open them all, as threads of every
	 * pool and malloc_conceal would (pools_open_on_use tests that
	 * they open only then). */
	for (i = 0; i <= mopts.npools; i++)
		if (om_pool_open(i) != 0)
			abort();
}

struct dir_info *
unit_pool(void)
{
	struct dir_info *d;

	unit_init();
	/* An index past the array: never confused with a real pool. */
	d = om_pool_create(OM_MAX_POOLS + 1, 0);
	if (d == NULL)
		abort();
	return d;
}

struct dir_info *
unit_own_pool(void)
{
	unit_init();
	free(malloc(1));
	malloc_trim(0);
	return mopts.pools[OM_SELF_TID(om_self) & mopts.pool_mask];
}

struct dir_info *
unit_front_pool(void)
{
	/* Nothing cached: no run the loop's could join. */
	struct dir_info *d = unit_own_pool();

	if (d->extras || mopts.opt.freeunmap || mopts.guard ||
	    d->cache_room[UNIT_FRONT_PAGES] == 0)
		return NULL;
	return d;
}

char *
unit_front_loop(struct dir_info *d)
{
	char *p = malloc(UNIT_FRONT_PAGES * OM_PAGE_SIZE);

	ck_assert_ptr_nonnull(p);
	free(p);
	p = malloc(UNIT_FRONT_PAGES * OM_PAGE_SIZE);
	ck_assert_ptr_nonnull(p);
	free(p);
	ck_assert_ptr_eq((void *)d->cache_front, p);
	return p;
}

int
unit_unmapped(const void *p, size_t npages)
{
	unsigned char vec;
	size_t i;

	for (i = 0; i < npages; i++)
		if (mincore((char *)p + i * OM_PAGE_SIZE, OM_PAGE_SIZE,
		    &vec) == 0 || errno != ENOMEM)
			return 0;
	return 1;
}

void
unit_write(void *arg)
{
	*(volatile char *)arg = 1;
}

static void
unit_read(void *arg)
{
	(void)*(volatile char *)arg;
}

void
unit_expect_fault(void *p)
{
	struct child c;

	unit_run(unit_write, p, &c);
	ck_assert_msg(unit_signalled(&c, SIGSEGV), "write at %p: status 0x%x",
	    p, c.status);
	unit_run(unit_read, p, &c);
	ck_assert_msg(unit_signalled(&c, SIGSEGV), "read at %p: status 0x%x",
	    p, c.status);
}

void
unit_expect_ok(void *p)
{
	struct child c;

	unit_run(unit_write, p, &c);
	ck_assert_exited_ok(&c);
}

int
unit_main(Suite *s)
{
	SRunner *sr = srunner_create(s);
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
