/*
 * test_options.c - options.c: MALLOC_OPTIONS letters, bundles, clamps and
 * warnings.  om_options_init reads the real environment, so each case sets
 * MALLOC_OPTIONS and parses into a local struct (never mopts).
 *
 * This program also defines the weak `malloc_options` global, as a
 * statically linked daemon would: its letters apply after the environment.
 */
#include "unit.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

const char *const malloc_options = "V";

static char err[4096];

/* Parse env (NULL: unset) into o; stderr output lands in err. */
static void
parse(const char *env, struct om_options *o)
{
	int fds[2], saved;
	ssize_t n;
	size_t len = 0;

	if (env == NULL)
		unsetenv("MALLOC_OPTIONS");
	else
		setenv("MALLOC_OPTIONS", env, 1);
	ck_assert_int_eq(pipe(fds), 0);
	saved = dup(STDERR_FILENO);
	dup2(fds[1], STDERR_FILENO);
	close(fds[1]);
	memset(o, 0x5a, sizeof(*o));
	om_options_init(o);
	dup2(saved, STDERR_FILENO);
	close(saved);
	while ((n = read(fds[0], err + len, sizeof(err) - 1 - len)) > 0)
		len += (size_t)n;
	close(fds[0]);
	err[len] = '\0';
}

static int
count(const char *hay, const char *needle)
{
	int n = 0;

	while ((hay = strstr(hay, needle)) != NULL) {
		n++;
		hay++;
	}
	return n;
}

static void
assert_defaults(const struct om_options *o)
{
	ck_assert_int_eq(o->chunk_canaries, 0);
	ck_assert_int_eq(o->dump, 0);
	ck_assert_int_eq(o->freecheck, 0);
	ck_assert_int_eq(o->guard, 0);
	ck_assert_int_eq(o->junk, 1);
	ck_assert_int_eq(o->realloc_move, 0);
	ck_assert_int_eq(o->freeunmap, 0);
	ck_assert_int_eq(o->verbose, 1);	/* from malloc_options */
	ck_assert_int_eq(o->xmalloc, 0);
	ck_assert_int_eq(o->cache_pages, 64);
	ck_assert_int_eq(o->pools, OM_DEFAULT_POOLS);
}

START_TEST(defaults)
{
	struct om_options o;

	parse(NULL, &o);
	assert_defaults(&o);
	ck_assert_str_eq(err, "");
	parse("", &o);
	assert_defaults(&o);
	ck_assert_str_eq(err, "");
}
END_TEST

START_TEST(process_options)
{
	struct om_options o;
	const char *env = getenv("MALLOC_OPTIONS");
	char copy[256];

	unit_init();
	snprintf(copy, sizeof(copy), "%s", env != NULL ? env : "");
	parse(env != NULL ? copy : NULL, &o);
	ck_assert(memcmp(&o, &mopts.opt, sizeof(o)) == 0);
	ck_assert_int_eq(mopts.opt.verbose, 1);
	ck_assert_uint_eq(mopts.npools, (unsigned int)o.pools);
}
END_TEST

START_TEST(flags_in_order)
{
	struct om_options o;

	parse("CDGRUX", &o);
	ck_assert_int_eq(o.chunk_canaries, 1);
	ck_assert_int_eq(o.dump, 1);
	ck_assert_int_eq(o.guard, 1);
	ck_assert_int_eq(o.realloc_move, 1);
	ck_assert_int_eq(o.freeunmap, 1);
	ck_assert_int_eq(o.xmalloc, 1);
	ck_assert_int_eq(o.freecheck, 0);
	ck_assert_int_eq(o.junk, 1);
	parse("CDGRUXcdgrux", &o);
	assert_defaults(&o);
	parse("cC", &o);
	ck_assert_int_eq(o.chunk_canaries, 1);
	parse("CcC", &o);
	ck_assert_int_eq(o.chunk_canaries, 1);
	parse("Cc", &o);
	ck_assert_int_eq(o.chunk_canaries, 0);
	parse("GgGg", &o);
	ck_assert_int_eq(o.guard, 0);
	ck_assert_str_eq(err, "");
}
END_TEST

START_TEST(program_global_last)
{
	struct om_options o;

	/* The environment turns V off; the program's own string wins. */
	parse("v", &o);
	ck_assert_int_eq(o.verbose, 1);
	parse("VvVv", &o);
	ck_assert_int_eq(o.verbose, 1);
}
END_TEST

START_TEST(security_bundle)
{
	struct om_options o;

	parse("S", &o);
	ck_assert_int_eq(o.chunk_canaries, 1);
	ck_assert_int_eq(o.freecheck, 1);
	ck_assert_int_eq(o.freeunmap, 1);
	ck_assert_int_eq(o.guard, 1);
	ck_assert_int_eq(o.junk, 2);
	ck_assert_int_eq(o.cache_pages, 0);
	ck_assert_int_eq(o.dump, 0);
	ck_assert_int_eq(o.realloc_move, 0);
	ck_assert_int_eq(o.pools, OM_DEFAULT_POOLS);
	parse("Ss", &o);
	assert_defaults(&o);
	parse("SS", &o);
	ck_assert_int_eq(o.junk, 2);
	parse("Sc", &o);
	ck_assert_int_eq(o.chunk_canaries, 0);
	ck_assert_int_eq(o.guard, 1);
	parse("CS", &o);
	ck_assert_int_eq(o.chunk_canaries, 1);
	ck_assert_str_eq(err, "");
}
END_TEST

START_TEST(freecheck_implies_unmap)
{
	struct om_options o;

	parse("F", &o);
	ck_assert_int_eq(o.freecheck, 1);
	ck_assert_int_eq(o.freeunmap, 1);
	parse("uF", &o);
	ck_assert_int_eq(o.freeunmap, 1);
	parse("Fu", &o);
	ck_assert_int_eq(o.freecheck, 1);
	ck_assert_int_eq(o.freeunmap, 0);
	parse("Ff", &o);
	ck_assert_int_eq(o.freecheck, 0);
}
END_TEST

static void
repeat(char *buf, char c, unsigned int n)
{
	memset(buf, c, n);
	buf[n] = '\0';
}

START_TEST(pools_clamped)
{
	struct om_options o;
	char s[32];
	unsigned int k;
	int want;

	for (k = 0; k <= 10; k++) {
		repeat(s, '+', k);
		parse(s, &o);
		want = OM_DEFAULT_POOLS << k;
		if (want > OM_MAX_POOLS || k > 8)
			want = OM_MAX_POOLS;
		ck_assert_msg(o.pools == want, "\"%s\": %d pools, not %d", s,
		    o.pools, want);
		repeat(s, '-', k);
		parse(s, &o);
		want = OM_DEFAULT_POOLS >> k;
		if (want < 1)
			want = 1;
		ck_assert_msg(o.pools == want, "\"%s\": %d pools, not %d", s,
		    o.pools, want);
	}
	parse("--------------------+", &o);
	ck_assert_int_eq(o.pools, OM_MAX_POOLS >= 2 ? 2 : 1);
	parse("++++++++++++++++++++-", &o);
	ck_assert_int_eq(o.pools, OM_MAX_POOLS / 2 > 0 ? OM_MAX_POOLS / 2 : 1);
	ck_assert_str_eq(err, "");
}
END_TEST

START_TEST(cache_clamped)
{
	struct om_options o;
	char s[32];
	unsigned int k;
	int want;

	for (k = 0; k <= 10; k++) {
		repeat(s, '>', k);
		parse(s, &o);
		want = k >= 2 ? 256 : 64 << k;
		ck_assert_msg(o.cache_pages == want, "\"%s\": %d, not %d", s,
		    o.cache_pages, want);
		repeat(s, '<', k);
		parse(s, &o);
		want = 64 >> k;
		ck_assert_msg(o.cache_pages == want, "\"%s\": %d, not %d", s,
		    o.cache_pages, want);
	}
	parse("<<>", &o);
	ck_assert_int_eq(o.cache_pages, 32);
	parse(">>>>>><", &o);
	ck_assert_int_eq(o.cache_pages, 128);
	ck_assert_str_eq(err, "");
}
END_TEST

START_TEST(junk_levels)
{
	struct om_options o;

	parse("J", &o);
	ck_assert_int_eq(o.junk, 2);
	parse("JJJJ", &o);
	ck_assert_int_eq(o.junk, 2);
	parse("j", &o);
	ck_assert_int_eq(o.junk, 0);
	parse("jjjj", &o);
	ck_assert_int_eq(o.junk, 0);
	parse("jjJ", &o);
	ck_assert_int_eq(o.junk, 1);
	parse("JJj", &o);
	ck_assert_int_eq(o.junk, 1);
	ck_assert_str_eq(err, "");
}
END_TEST

START_TEST(unknown_warned_once)
{
	struct om_options o;
	char want[128];

	parse("QQZCQ", &o);
	/* Ignored: the rest still applies. */
	ck_assert_int_eq(o.chunk_canaries, 1);
	ck_assert_int_eq(o.junk, 1);
	ck_assert_int_eq(count(err, "\n"), 2);
	ck_assert_int_eq(count(err, "unknown option 'Q' ignored"), 1);
	ck_assert_int_eq(count(err, "unknown option 'Z' ignored"), 1);
	ck_assert_int_eq(count(err, "MALLOC_OPTIONS: unknown option"), 2);
	snprintf(want, sizeof(want), "%s(%ld): MALLOC_OPTIONS: ",
	    "test_options", (long)getpid());
	ck_assert_msg(strncmp(err, want, strlen(want)) == 0,
	    "warning \"%s\" does not start with \"%s\"", err, want);

	parse("\001J", &o);
	ck_assert_int_eq(o.junk, 2);
	ck_assert_int_eq(count(err, "unknown option byte 0x1 ignored"), 1);

	/* Letters of other allocators' option strings are not ours. */
	parse("AHPaZz", &o);
	ck_assert_int_eq(count(err, "\n"), 6);
	assert_defaults(&o);
}
END_TEST

START_TEST(errno_kept)
{
	struct om_options o;
	int saved = dup(STDERR_FILENO), null = open("/dev/null", O_WRONLY);
	int e;

	/* An unknown letter, so the warning path runs too. */
	setenv("MALLOC_OPTIONS", "CQ", 1);
	dup2(null, STDERR_FILENO);
	errno = 4242;
	om_options_init(&o);
	e = errno;
	dup2(saved, STDERR_FILENO);
	close(saved);
	close(null);
	ck_assert_int_eq(e, 4242);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("options");
	TCase *t = tcase_create("options");

	tcase_add_test(t, defaults);
	tcase_add_test(t, process_options);
	tcase_add_test(t, flags_in_order);
	tcase_add_test(t, program_global_last);
	tcase_add_test(t, security_bundle);
	tcase_add_test(t, freecheck_implies_unmap);
	tcase_add_test(t, pools_clamped);
	tcase_add_test(t, cache_clamped);
	tcase_add_test(t, junk_levels);
	tcase_add_test(t, unknown_warned_once);
	tcase_add_test(t, errno_kept);
	suite_add_tcase(s, t);
	return unit_main(s);
}
