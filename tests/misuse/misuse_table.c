/*
 * misuse_table - print the misuse cases as a Markdown table: attack,
 * MALLOC_OPTIONS, what omalloc should do, what it did, and what plain
 * glibc does with the same attack (options do not apply there, so each
 * attack runs once against glibc).
 *
 *     misuse_table <omalloc misuse_attack> [<glibc misuse_glibc>]
 *
 * RESULTS.md in this folder is its output, with notes.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cases.h"
#include "runner.h"

#define TIMEOUT_MS 20000

/* Pipes would break the table; pointers and pids vary from run to run. */
static void
cell(const char *s)
{
	for (; *s != '\0'; s++)
		putchar(*s == '|' ? '/' : *s);
}

static const char *
expected(const struct misuse_case *c, char *buf, size_t len)
{
	if (c->informational)
		return "(not expected to catch)";
	switch (c->expect) {
	case EXPECT_ABORT:
		snprintf(buf, len, "SIGABRT: %s(): /%s/", c->func, c->reason);
		return buf;
	case EXPECT_SEGV:
		return "SIGSEGV";
	case EXPECT_EXIT0:
		return "exit 0";
	}
	return "?";
}

int
main(int argc, char **argv)
{
	const char *om = argc > 1 ? argv[1] : NULL;
	const char *gl = argc > 2 ? argv[2] : NULL;
	struct run_result *r = malloc(sizeof(*r));
	const char *last_attack = "";
	int failures = 0;

	if (om == NULL || r == NULL) {
		fprintf(stderr, "usage: misuse_table <misuse_attack> "
		    "[<misuse_glibc>]\n");
		return 2;
	}
	printf("| attack | what | MALLOC_OPTIONS | expected | omalloc | ok |"
	    "%s\n", gl ? " glibc |" : "");
	printf("|---|---|---|---|---|---|%s\n", gl ? "---|" : "");
	for (size_t i = 0; i < MISUSE_NCASES; i++) {
		const struct misuse_case *c = &misuse_cases[i];
		char why[512], out[1024], exp[256];
		int ok;

		if (misuse_run(om, c->attack, c->opts, TIMEOUT_MS, r) != 0) {
			perror("misuse_run");
			return 1;
		}
		ok = misuse_judge(c, om, r, why, sizeof(why));
		misuse_outcome(r, out, sizeof(out));
		printf("| %s | ", c->attack);
		cell(c->what);
		printf(" | `%s` | ", c->opts);
		cell(expected(c, exp, sizeof(exp)));
		printf(" | ");
		cell(out);
		if (c->informational)
			printf(" | - |");
		else if (ok)
			printf(" | yes |");
		else {
			printf(" | **no**: ");
			cell(why);
			printf(" |");
			failures++;
		}
		if (gl != NULL) {
			/* One glibc run per attack: options mean nothing
			 * there. */
			if (strcmp(c->attack, last_attack) != 0) {
				if (misuse_run(gl, c->attack, NULL, TIMEOUT_MS,
				    r) != 0) {
					perror("misuse_run");
					return 1;
				}
				misuse_outcome(r, out, sizeof(out));
				printf(" ");
				cell(out);
				printf(" |");
			} else
				printf(" (as above) |");
		}
		printf("\n");
		fflush(stdout);
		last_attack = c->attack;
	}
	free(r);
	return failures == 0 ? 0 : 1;
}
