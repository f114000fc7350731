/*
 * options.c - MALLOC_OPTIONS and friends, read once at initialisation.
 *
 * Sources, in order, each applied letter by letter (upper case on, lower
 * case off): the target of the symbolic link /etc/malloc.conf, the
 * environment variable MALLOC_OPTIONS (not for set-uid programs), and the
 * program's own `malloc_options` global.  The result is copied into the
 * read-only page by pool.c.  Unknown letters are reported once each and
 * ignored.  No allocation: readlink(2) and getenv(3) only.
 */
#include "internal.h"

#include <limits.h>
#include <stdlib.h>
#include <sys/auxv.h>
#include <unistd.h>

/* A statically linked daemon defines this; weak so that none is fine. */
extern const char *const malloc_options __attribute__((weak));

static const struct {
	char up, down;
	enum om_kind kind;
	int min, max;
	size_t off;
} table[] = {
#define OM_OPTION(u, d, field, k, def, mn, mx, doc)                          \
	{ u, d, k, mn, mx, offsetof(struct om_options, field) },
#include "options.def"
#undef OM_OPTION
};

#define FIELD(o, i) ((int *)((char *)(o) + table[i].off))

static void apply(struct om_options *o, char c, const char *src,
    unsigned char *warned);

static void
apply_index(struct om_options *o, size_t i, int up)
{
	int *v = FIELD(o, i);

	switch (table[i].kind) {
	case FLAG:
		*v = up;
		break;
	case LEVEL:
		*v += up ? 1 : -1;
		break;
	case SCALE:
		if (up)
			*v = *v == 0 ? 1 : *v * 2;
		else
			*v /= 2;
		break;
	case BUNDLE:
		break;
	}
	if (*v < table[i].min)
		*v = table[i].min;
	if (*v > table[i].max)
		*v = table[i].max;
}

static void
apply(struct om_options *o, char c, const char *src, unsigned char *warned)
{
	size_t i;

	/* OpenBSD's bundles and implications. */
	switch (c) {
	case 'S':
		apply(o, 'C', src, warned);
		apply(o, 'F', src, warned);
		apply(o, 'G', src, warned);
		apply(o, 'J', src, warned);
		o->cache_pages = 0;
		return;
	case 's':
		apply(o, 'c', src, warned);
		apply(o, 'f', src, warned);
		apply(o, 'g', src, warned);
		apply(o, 'j', src, warned);
		o->cache_pages = 64;
		return;
	case 'F':
		o->freeunmap = 1;
		break;
	case 'f':
		o->freeunmap = 0;
		break;
	default:
		break;
	}
	for (i = 0; i < sizeof(table) / sizeof(table[0]); i++) {
		if (table[i].kind == BUNDLE)
			continue;
		if (c == table[i].up || c == table[i].down) {
			apply_index(o, i, c == table[i].up);
			return;
		}
	}
	if (!warned[(unsigned char)c]) {
		warned[(unsigned char)c] = 1;
		if (c >= 0x20 && c < 0x7f)
			om_warn("%s: unknown option '%c' ignored", src, c);
		else
			om_warn("%s: unknown option byte 0x%x ignored", src,
			    (unsigned char)c);
	}
}

static void
parse(struct om_options *o, const char *s, const char *src,
    unsigned char *warned)
{
	for (; *s != '\0'; s++)
		apply(o, *s, src, warned);
}

/* Fill o with the defaults, then apply every source in order. */
void
om_options_init(struct om_options *o)
{
	unsigned char warned[256] = { 0 };
	char link[PATH_MAX];
	ssize_t n;
	int saved = errno;
	const char *env;

#define OM_OPTION(u, d, field, k, def, mn, mx, doc) o->field = (def);
#include "options.def"
#undef OM_OPTION

	n = readlink("/etc/malloc.conf", link, sizeof(link) - 1);
	if (n > 0) {
		link[n] = '\0';
		parse(o, link, "/etc/malloc.conf", warned);
	}
	if (getauxval(AT_SECURE) == 0 &&
	    (env = getenv("MALLOC_OPTIONS")) != NULL)
		parse(o, env, "MALLOC_OPTIONS", warned);
	if (&malloc_options != NULL && malloc_options != NULL)
		parse(o, malloc_options, "malloc_options", warned);
	errno = saved;
}
