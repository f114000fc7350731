/*
 * test_badinput.c - options and environment the allocator must survive.
 *
 * Each case runs this program again with a given environment; the child
 * allocates a little and exits with status 42, which must come back
 * unchanged whatever the options said:
 * - unknown letters: one warning line per distinct letter, then normal work;
 * - very long option strings (120000 letters), valid and not;
 * - + - < > J j repeated far past their limits: clamped, as the dump's
 *   options line shows;
 * - D with an unwritable MALLOC_DUMP_FILE: a warning, normal exit status;
 * - /etc/malloc.conf as a regular file, not a symbolic link: ignored
 *   (tried in a private mount namespace over a scratch /etc, never the
 *   real one; skipped where namespaces are not allowed).
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "omalloc_config.h"
#include "util.h"

#define WORK_STATUS 42

static char err[65536];

/* The child: allocate and free a little of every size, exit 42. */
static int
child_work(void)
{
	void *p[32];

	for (int i = 0; i < 32; i++) {
		p[i] = malloc((size_t)1 << (i % 22));
		if (p[i] == NULL)
			return 1;
		memset(p[i], i, (size_t)1 << (i % 22));
	}
	for (int i = 0; i < 32; i++)
		free(p[i]);
	exit(WORK_STATUS);
}

/* Run the child with MALLOC_OPTIONS=opts and optional other variables. */
static int
run(const char *opts, const char *extra)
{
	static char optvar[300000];
	const char *env[3] = {NULL, NULL, NULL};
	int n = 0, status;

	if (opts != NULL) {
		snprintf(optvar, sizeof(optvar), "MALLOC_OPTIONS=%s", opts);
		env[n++] = optvar;
	}
	if (extra != NULL)
		env[n++] = extra;
	status = st_run_self("work", env, err, sizeof(err));
	ck_assert_msg(status != -1, "child hung with MALLOC_OPTIONS=%.40s",
	    opts ? opts : "(unset)");
	return status;
}

static void
expect_work(int status, const char *what)
{
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == WORK_STATUS,
	    "%s: status 0x%x, stderr: %.2000s", what, status, err);
}

START_TEST(unknown_letter)
{
	expect_work(run("Q", NULL), "Q");
	ck_assert_msg(st_lines(err) == 1, "Q: %d lines: %s", st_lines(err),
	    err);
	ck_assert_msg(strstr(err, "MALLOC_OPTIONS") != NULL &&
		strstr(err, "'Q'") != NULL,
	    "Q: warning does not name the source and the letter: %s", err);
	ck_assert_msg(strstr(err, "unknown option") != NULL, "Q: %s", err);
}
END_TEST

START_TEST(unknown_letters_mixed)
{
	/* valid letters around them still apply; one line per letter */
	expect_work(run("CQJZq!", NULL), "CQJZq!");
	ck_assert_msg(st_lines(err) == 4, "CQJZq!: %d lines: %s", st_lines(err),
	    err);
	expect_work(run("QQQQQQQQ", NULL), "QQQQQQQQ");
	ck_assert_msg(st_lines(err) == 1, "repeated Q: %d lines: %s",
	    st_lines(err), err);
	expect_work(run("\x01\x7f\xff", NULL), "control bytes");
	ck_assert_msg(st_lines(err) >= 1 && st_lines(err) <= 3,
	    "control bytes: %d lines: %s", st_lines(err), err);
	expect_work(run(" ", NULL), "space");
}
END_TEST

static char *
repeat(const char *unit, size_t total)
{
	char *s = malloc(total + 1);
	size_t n = strlen(unit);

	ck_assert_ptr_nonnull(s);
	for (size_t i = 0; i < total; i++)
		s[i] = unit[i % n];
	s[total] = '\0';
	return s;
}

START_TEST(long_strings)
{
	/* the kernel's limit for one environment string is 128 KiB */
	char *valid = repeat("CcGgJjRrUuFf<>+-", 120000);
	char *bad = repeat("QWE", 120000);

	expect_work(run(valid, NULL), "120000 valid letters");
	ck_assert_msg(err[0] == '\0', "valid letters warned: %.500s", err);
	expect_work(run(bad, NULL), "120000 unknown letters");
	ck_assert_msg(st_lines(err) == 3, "QWE repeated: %d lines",
	    st_lines(err));
	free(valid);
	free(bad);
}
END_TEST

/* Run with opts plus D and a dump file; return the dump's options line. */
static char dump[1 << 16];

static const char *
options_line(const char *opts)
{
	char path[] = "/tmp/omalloc-badinput-XXXXXX";
	char var[128], *all, *line;
	int fd = mkstemp(path);
	ssize_t n;

	ck_assert_int_ge(fd, 0);
	snprintf(var, sizeof(var), "MALLOC_DUMP_FILE=%s", path);
	all = malloc(strlen(opts) + 2);
	ck_assert_ptr_nonnull(all);
	strcpy(all, opts);
	strcat(all, "D");
	expect_work(run(all, var), opts);
	free(all);
	n = read(fd, dump, sizeof(dump) - 1);
	close(fd);
	unlink(path);
	ck_assert_msg(n > 0, "%s: empty dump; stderr: %s", opts, err);
	dump[n] = '\0';
	line = strstr(dump, "MT=");
	ck_assert_msg(line != NULL, "%s: no options line in dump", opts);
	*strchrnul(line, '\n') = '\0';
	return line;
}

static void
expect_field(const char *opts, const char *field)
{
	const char *line = options_line(opts);
	char want[64];

	snprintf(want, sizeof(want), " %s ", field);
	ck_assert_msg(strstr(line, want) != NULL ||
		strncmp(line, want + 1, strlen(want) - 1) == 0,
	    "%.20s...: options line \"%s\" lacks %s", opts, line, field);
}

START_TEST(limits_clamped)
{
	char *plus = repeat("+", 100), *minus = repeat("-", 100);
	char *more = repeat(">", 100), *less = repeat("<", 100);
	char *junk = repeat("J", 50), *nojunk = repeat("j", 50);
	char want[32];

	snprintf(want, sizeof(want), "M=%d", OM_MAX_POOLS);
	expect_field(plus, want);
	expect_field(minus, "M=1");
	expect_field(more, "cache=256");
	expect_field(less, "cache=0");
	expect_field(junk, "J=2");
	expect_field(nojunk, "J=0");
	/* past the lower end and back up: only the last letters count */
	free(plus);
	plus = malloc(strlen(minus) + 3);
	ck_assert_ptr_nonnull(plus);
	snprintf(plus, strlen(minus) + 3, "%s++", minus);
	expect_field(plus, OM_MAX_POOLS >= 4 ? "M=4" : "M=1");
	free(plus);
	free(minus);
	free(more);
	free(less);
	free(junk);
	free(nojunk);
}
END_TEST

START_TEST(dump_file_unwritable)
{
	static const char *const paths[] = {
	    "MALLOC_DUMP_FILE=/nonexistent-omalloc-dir/dump",
	    "MALLOC_DUMP_FILE=/",
	};

	for (int i = 0; i < 2; i++) {
		expect_work(run("D", paths[i]), paths[i]);
		ck_assert_msg(err[0] != '\0', "%s: no warning", paths[i]);
		ck_assert_msg(strstr(err, "dump") != NULL,
		    "%s: warning does not mention the dump: %s", paths[i],
		    err);
	}
}
END_TEST

START_TEST(dump_default_file)
{
	char dir[] = "/tmp/omalloc-badinput-XXXXXX", path[128];
	FILE *f;
	size_t n;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	ck_assert_int_eq(chdir(dir), 0);
	expect_work(run("D", NULL), "D");
	snprintf(path, sizeof(path), "%s/malloc.out", dir);
	f = fopen(path, "r");
	ck_assert_msg(f != NULL, "D made no malloc.out in the current "
				 "directory; stderr: %s",
	    err);
	n = fread(dump, 1, sizeof(dump) - 1, f);
	dump[n] = '\0';
	fclose(f);
	unlink(path);
	rmdir(dir);
	ck_assert_msg(strstr(dump, "Start dump") != NULL, "malloc.out: %.200s",
	    dump);
}
END_TEST

/*
 * Over a scratch /etc in a private mount namespace: malloc.conf as a
 * symbolic link to "D" must dump, as a regular file holding "D" it must be
 * ignored.
 */
static int
conf_case(int as_link, const char *dumpfile)
{
	char etc[] = "/tmp/omalloc-etc-XXXXXX", conf[128], var[160];
	pid_t pid;
	int status;

	if (mkdtemp(etc) == NULL)
		return -1;
	snprintf(conf, sizeof(conf), "%s/malloc.conf", etc);
	if (as_link) {
		if (symlink("D", conf) != 0)
			return -1;
	} else {
		int fd = open(conf, O_WRONLY | O_CREAT, 0644);

		if (fd < 0 || write(fd, "D", 1) != 1)
			return -1;
		close(fd);
	}
	snprintf(var, sizeof(var), "MALLOC_DUMP_FILE=%s", dumpfile);
	pid = fork();
	if (pid == 0) {
		const char *env[] = {var, NULL};

		if (unshare(CLONE_NEWNS) != 0 ||
		    mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0 ||
		    mount(etc, "/etc", NULL, MS_BIND, NULL) != 0)
			_exit(77);
		status = st_run_self("work", env, err, sizeof(err));
		_exit(WIFEXITED(status) ? WEXITSTATUS(status) : 1);
	}
	status = st_wait(pid, 30);
	unlink(conf);
	rmdir(etc);
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

START_TEST(malloc_conf_not_a_link)
{
	char dumpfile[] = "/tmp/omalloc-badinput-XXXXXX";
	struct stat st;
	int fd = mkstemp(dumpfile), rc;

	ck_assert_int_ge(fd, 0);
	close(fd);
	unlink(dumpfile);
	rc = conf_case(1, dumpfile);
	if (rc == 77) {
		fprintf(stderr, "malloc_conf_not_a_link: no mount namespace "
				"here, skipped\n");
		return;
	}
	ck_assert_int_eq(rc, WORK_STATUS);
	ck_assert_msg(stat(dumpfile, &st) == 0 && st.st_size > 0,
	    "a /etc/malloc.conf link to \"D\" made no dump");
	unlink(dumpfile);
	rc = conf_case(0, dumpfile);
	ck_assert_int_eq(rc, WORK_STATUS);
	ck_assert_msg(stat(dumpfile, &st) != 0,
	    "a regular /etc/malloc.conf file was read");
}
END_TEST

static Suite *
badinput_suite(void)
{
	Suite *s = suite_create("badinput");
	TCase *tc = tcase_create("options");

	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, unknown_letter);
	tcase_add_test(tc, unknown_letters_mixed);
	tcase_add_test(tc, long_strings);
	tcase_add_test(tc, limits_clamped);
	tcase_add_test(tc, dump_file_unwritable);
	tcase_add_test(tc, dump_default_file);
	tcase_add_test(tc, malloc_conf_not_a_link);
	suite_add_tcase(s, tc);
	return s;
}

int
main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "work") == 0)
		return child_work();
	return st_main(badinput_suite());
}
