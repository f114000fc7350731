/*
 * test_misuse - the hardening checks, one Check test case per detection
 * and option set.  Each case runs misuse_attack (the path is argv[1]) in a
 * child with its MALLOC_OPTIONS, then asserts the signal and, for aborts,
 * the whole message: `<prog>(<pid>) in <function>(): <reason> <pointer>`
 * with the driver's name, the child's pid, the function the mistake was
 * made in, the reason, and the pointer the driver announced.
 *
 * Run one case: CK_RUN_CASE='chunk_canary [C]' test_misuse misuse_attack
 */
#define _GNU_SOURCE
#include <check.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "cases.h"
#include "runner.h"

/* Generous: the machine is shared, and recursion runs up to two seconds. */
#define ATTACK_TIMEOUT_MS 10000

static const char *driver;

static const char *
expect_name(enum expect e)
{
	switch (e) {
	case EXPECT_ABORT:
		return "SIGABRT";
	case EXPECT_SEGV:
		return "SIGSEGV";
	case EXPECT_EXIT0:
		return "exit 0";
	}
	return "?";
}

START_TEST(run_case)
{
	const struct misuse_case *c = &misuse_cases[_i];
	struct run_result *r = malloc(sizeof(*r));
	char why[512], outcome[1024];

	ck_assert_ptr_nonnull(r);
	ck_assert_int_eq(misuse_run(driver, c->attack, c->opts,
	    ATTACK_TIMEOUT_MS, r), 0);
	int ok = misuse_judge(c, driver, r, why, sizeof(why));
	misuse_outcome(r, outcome, sizeof(outcome));
	ck_assert_msg(ok,
	    "%s with MALLOC_OPTIONS=\"%s\": %s (expected %s%s%s)\n"
	    "  outcome: %s\n  stdout: %s\n  stderr: %s",
	    c->attack, c->opts, why, expect_name(c->expect),
	    c->reason ? ", reason /" : "", c->reason ? c->reason : "",
	    outcome, r->out, r->err);
	free(r);
}
END_TEST

static Suite *
misuse_suite(void)
{
	Suite *s = suite_create("misuse");

	for (size_t i = 0; i < MISUSE_NCASES; i++) {
		const struct misuse_case *c = &misuse_cases[i];
		char name[128];

		if (c->informational)
			continue;
		snprintf(name, sizeof(name), "%s [%s]", c->attack, c->opts);
		/* Check keeps the pointer: the name must outlive the suite. */
		TCase *tc = tcase_create(strdup(name));
		tcase_set_timeout(tc, ATTACK_TIMEOUT_MS / 1000 + 10);
		tcase_add_loop_test(tc, run_case, (int)i, (int)i + 1);
		suite_add_tcase(s, tc);
	}
	return s;
}

int
main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: test_misuse <path to misuse_attack>\n");
		return 2;
	}
	driver = argv[1];

	SRunner *sr = srunner_create(misuse_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
