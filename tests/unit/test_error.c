/*
 * test_error.c - error.c: the allocation-free formatter and the one fatal
 * path, whose message shape is `<prog>(<pid>) in <func>(): <reason> 0x...`.
 */
#include "unit.h"

#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static int fds[2];
static char got[8192];

static void
setup(void)
{
	if (pipe(fds) != 0)
		abort();
}

static void
teardown(void)
{
	close(fds[0]);
	close(fds[1]);
}

/* Everything written to the pipe so far (the writes are complete). */
static const char *
drain(void)
{
	ssize_t n = read(fds[0], got, sizeof(got) - 1);

	got[n > 0 ? n : 0] = '\0';
	return got;
}

/* om_buf_printf and snprintf must agree. */
#define SAME(...)                                                            \
	do {                                                                 \
		struct om_buf o_ = { .fd = fds[1] };                         \
		char want_[256];                                             \
		om_buf_printf(&o_, __VA_ARGS__);                             \
		om_buf_flush(&o_);                                           \
		snprintf(want_, sizeof(want_), __VA_ARGS__);                 \
		ck_assert_str_eq(drain(), want_);                            \
	} while (0)

/* om_buf_printf gives exactly want. */
#define GIVES(want, ...)                                                     \
	do {                                                                 \
		struct om_buf o_ = { .fd = fds[1] };                         \
		om_buf_printf(&o_, __VA_ARGS__);                             \
		om_buf_flush(&o_);                                           \
		ck_assert_str_eq(drain(), (want));                           \
	} while (0)

START_TEST(format_strings)
{
	const char *volatile none = NULL;

	SAME("plain text");
	SAME("%s", "abc");
	SAME("[%5s]", "ab");
	SAME("[%-5s]", "ab");
	SAME("[%2s]", "abcdef");
	SAME("%s=%s", "key", "value");
	SAME("%c%c", 'o', 'k');
	SAME("100%%");
	GIVES("(null)", "%s", none);
}
END_TEST

START_TEST(format_integers)
{
	SAME("%d", 0);
	SAME("%d", 42);
	SAME("%d", -42);
	SAME("%d", INT_MAX);
	SAME("%d", INT_MIN);
	SAME("[%5d]", 42);
	SAME("[%5d]", -42);
	SAME("[%05d]", 42);
	SAME("[%2d]", 12345);
	SAME("%u", 4000000000u);
	SAME("%x", 0xdeadbeefu);
	SAME("%08x", 0xbeefu);
	SAME("%ld", LONG_MIN);
	SAME("%ld", LONG_MAX);
	SAME("%lu", ULONG_MAX);
	SAME("%lx", 0x123456789abcdefUL);
	SAME("%lld", LLONG_MIN);
	SAME("%llu", ULLONG_MAX);
	SAME("%zu", (size_t)0);
	SAME("%zu", SIZE_MAX);
	SAME("[%7zu]", (size_t)4096);
	SAME("[%6zu]", (size_t)1234567);
	SAME("%d %u %x %zu %s", -1, 1u, 255u, (size_t)77, "end");
}
END_TEST

START_TEST(format_pointers)
{
	SAME("%p", (void *)0x7f3a1b2c000);
	SAME("%p", (void *)(uintptr_t)UINTPTR_MAX);
	SAME("at %p.", (void *)0x10);
	GIVES("0x0", "%p", (void *)NULL);
}
END_TEST

/* A width for %p: the leak report prints unresolved callers with "%18p"
 * to keep its columns. */
START_TEST(format_pointer_width)
{
	SAME("[%18p]", (void *)0x1234);
	SAME("[%4p]", (void *)0x1234);
}
END_TEST

/* Zero padding goes after the sign. */
START_TEST(format_negative_zero_pad)
{
	SAME("[%05d]", -42);
	SAME("[%03d]", -42);
}
END_TEST

START_TEST(long_output)
{
	struct om_buf o = { .fd = fds[1] };
	char want[3100];
	unsigned int i;

	/* More than the 1024-byte buffer: flushed on the way, in order. */
	for (i = 0; i < 3000; i++)
		want[i] = (char)('a' + i % 26);
	want[3000] = '\0';
	for (i = 0; i < 3000; i += 100)
		om_buf_printf(&o, "%s", "");
	for (i = 0; i < 3000; i++)
		om_buf_printf(&o, "%c", want[i]);
	om_buf_flush(&o);
	ck_assert_uint_eq(o.len, 0);
	ck_assert_str_eq(drain(), want);
}
END_TEST

START_TEST(no_fd_discards)
{
	struct om_buf o = { .fd = -1 };

	om_buf_printf(&o, "%s %d", "lost", 1);
	ck_assert_uint_eq(o.len, 6);
	om_buf_flush(&o);
	ck_assert_uint_eq(o.len, 0);
}
END_TEST

START_TEST(progname)
{
	ck_assert_str_eq(om_progname(), "test_error");
}
END_TEST

START_TEST(warn_shape)
{
	int saved = dup(STDERR_FILENO);
	char want[128];

	dup2(fds[1], STDERR_FILENO);
	om_warn("hello %d %s", 42, "there");
	dup2(saved, STDERR_FILENO);
	close(saved);
	snprintf(want, sizeof(want), "test_error(%ld): hello 42 there\n",
	    (long)getpid());
	ck_assert_str_eq(drain(), want);
}
END_TEST

struct fatal_case {
	const char *func;	/* pool's function, NULL: no pool */
	int corrupt;		/* break the pool's canary first */
	int busy;		/* pretend to be inside the allocator */
	int in;			/* om_fatal_in */
	const void *p;
};

static void
do_fatal(void *arg)
{
	struct fatal_case *f = arg;
	struct dir_info *d = NULL;

	if (f->func != NULL) {
		d = unit_pool();
		d->func = f->func;
		if (f->corrupt)
			d->canary2++;
	}
	if (f->busy)
		om_self |= (uint64_t)1 << 32;
	if (f->in)
		om_fatal_in("realloc", "reason here", f->p);
	om_fatal(d, "reason here", f->p);
}

static void
expect_fatal(struct fatal_case *f, const char *func)
{
	struct child c;
	char want[256];

	unit_run(do_fatal, f, &c);
	ck_assert_msg(unit_signalled(&c, SIGABRT), "status 0x%x", c.status);
	if (f->p != NULL)
		snprintf(want, sizeof(want), "test_error(%ld) in %s(): "
		    "reason here %p\n", c.pid, func, f->p);
	else
		snprintf(want, sizeof(want), "test_error(%ld) in %s(): "
		    "reason here\n", c.pid, func);
	ck_assert_str_eq(c.out, want);
}

START_TEST(fatal_shape)
{
	struct fatal_case f;

	unit_init();
	memset(&f, 0, sizeof(f));
	f.p = (void *)0x7f3a1b2c000;
	expect_fatal(&f, "malloc");
	f.p = NULL;
	expect_fatal(&f, "malloc");
	f.p = (void *)0x1230;
	f.func = "freezero";
	expect_fatal(&f, "freezero");
	/* A corrupt pool's function name is not trusted. */
	f.corrupt = 1;
	expect_fatal(&f, "malloc");
	f.func = NULL;
	f.corrupt = 0;
	f.in = 1;
	expect_fatal(&f, "realloc");
}
END_TEST

START_TEST(fatal_without_heap)
{
	struct fatal_case f;

	/* Marked as inside a pool, any malloc would die of "recursive
	 * call"; the message must come out unchanged all the same. */
	unit_init();
	memset(&f, 0, sizeof(f));
	f.busy = 1;
	f.p = (void *)0xabc0;
	expect_fatal(&f, "malloc");
}
END_TEST

static void
do_recursive(void *arg)
{
	(void)arg;
	om_self |= (uint64_t)1 << 32;
	free(malloc(10));
}

START_TEST(recursion_caught)
{
	struct child c;

	unit_init();
	unit_run(do_recursive, NULL, &c);
	ck_assert_fatal(&c, "malloc", "recursive call");
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("error");
	TCase *t = tcase_create("error");

	tcase_add_checked_fixture(t, setup, teardown);
	tcase_add_test(t, format_strings);
	tcase_add_test(t, format_integers);
	tcase_add_test(t, format_pointers);
	tcase_add_test(t, format_pointer_width);
	tcase_add_test(t, format_negative_zero_pad);
	tcase_add_test(t, long_output);
	tcase_add_test(t, no_fd_discards);
	tcase_add_test(t, progname);
	tcase_add_test(t, warn_shape);
	tcase_add_test(t, fatal_shape);
	tcase_add_test(t, fatal_without_heap);
	tcase_add_test(t, recursion_caught);
	suite_add_tcase(s, t);
	return unit_main(s);
}
