/*
 * error.c - the one fatal path, and formatting that never allocates.
 *
 * om_fatal writes `<prog>(<pid>) in <function>(): <reason> <pointer>` to
 * stderr with a single write(2), dumps the statistics first under D, and
 * aborts.  It may run with a pool lock held, inside a signal handler or
 * with the heap corrupt, so it uses no stdio and no heap.  The small
 * printf here (om_buf_printf) serves the dump and the option warnings for
 * the same reason.
 */
#include "internal.h"

#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <unistd.h>

extern char *program_invocation_short_name;

const char *
om_progname(void)
{
	const char *p = program_invocation_short_name;

	return p != NULL && *p != '\0' ? p : "omalloc";
}

void
om_buf_flush(struct om_buf *o)
{
	if (o->len > 0 && o->fd >= 0)
		om_os_write(o->fd, o->b, o->len);
	o->len = 0;
}

static void
putc_buf(struct om_buf *o, char c)
{
	if (o->len == sizeof(o->b))
		om_buf_flush(o);
	o->b[o->len++] = c;
}

void
om_buf_puts(struct om_buf *o, const char *s)
{
	while (*s != '\0')
		putc_buf(o, *s++);
}

static void
put_num(struct om_buf *o, unsigned long long v, unsigned int base, int width,
    int neg, int zero)
{
	char tmp[24];
	int n = 0;

	do {
		tmp[n++] = "0123456789abcdef"[v % base];
		v /= base;
	} while (v != 0);
	/* The sign goes before zero padding and after space padding. */
	if (neg && zero) {
		putc_buf(o, '-');
		width--;
	} else if (neg)
		tmp[n++] = '-';
	for (; width > n; width--)
		putc_buf(o, zero ? '0' : ' ');
	while (n > 0)
		putc_buf(o, tmp[--n]);
}

/*
 * A printf for %s %c %d %u %x %p with an optional field width and the
 * l, ll and z length modifiers.  Left alignment ('-') pads strings.
 */
static void
vformat(struct om_buf *o, const char *fmt, va_list ap)
{
	for (; *fmt != '\0'; fmt++) {
		int width = 0, left = 0, zero = 0, lng = 0;
		unsigned long long u;
		long long s;

		if (*fmt != '%') {
			putc_buf(o, *fmt);
			continue;
		}
		fmt++;
		if (*fmt == '-') {
			left = 1;
			fmt++;
		}
		if (*fmt == '0') {
			zero = 1;
			fmt++;
		}
		while (*fmt >= '0' && *fmt <= '9')
			width = width * 10 + (*fmt++ - '0');
		while (*fmt == 'l' || *fmt == 'z') {
			lng = *fmt == 'z' ? 2 : lng + 1;
			fmt++;
		}
		switch (*fmt) {
		case 's': {
			const char *str = va_arg(ap, const char *);
			int len;

			if (str == NULL)
				str = "(null)";
			len = (int)strlen(str);
			if (!left)
				for (; width > len; width--)
					putc_buf(o, ' ');
			om_buf_puts(o, str);
			if (left)
				for (; width > len; width--)
					putc_buf(o, ' ');
			break;
		}
		case 'c':
			putc_buf(o, (char)va_arg(ap, int));
			break;
		case 'd':
			s = lng == 0 ? va_arg(ap, int) : va_arg(ap, long long);
			put_num(o, s < 0 ? 0ULL - (unsigned long long)s :
			    (unsigned long long)s, 10, width, s < 0, zero);
			break;
		case 'u':
		case 'x':
			u = lng == 0 ? va_arg(ap, unsigned int) :
			    va_arg(ap, unsigned long long);
			put_num(o, u, *fmt == 'u' ? 10 : 16, width, 0, zero);
			break;
		case 'p': {
			uintptr_t v = (uintptr_t)va_arg(ap, void *);
			int digits = 1;

			for (uintptr_t t = v >> 4; t != 0; t >>= 4)
				digits++;
			for (; width > digits + 2; width--)
				putc_buf(o, ' ');
			putc_buf(o, '0');
			putc_buf(o, 'x');
			put_num(o, v, 16, 0, 0, 0);
			break;
		}
		case '%':
			putc_buf(o, '%');
			break;
		default:
			putc_buf(o, '?');
			break;
		}
	}
}

void
om_buf_printf(struct om_buf *o, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vformat(o, fmt, ap);
	va_end(ap);
}

/* A warning line on stderr: `<prog>(<pid>): <text>`. */
void
om_warn(const char *fmt, ...)
{
	struct om_buf o = { .fd = STDERR_FILENO };
	va_list ap;

	om_buf_printf(&o, "%s(%ld): ", om_progname(), om_os_getpid());
	va_start(ap, fmt);
	vformat(&o, fmt, ap);
	va_end(ap);
	putc_buf(&o, '\n');
	om_buf_flush(&o);
}

void
om_fatal(struct dir_info *d, const char *reason, const void *p)
{
	const char *func = "malloc";

	if (d != NULL && om_pool_ok(d) && d->func != NULL)
		func = d->func;
	om_fatal_in(func, reason, p);
}

/* The fatal path proper, naming the API function explicitly. */
void
om_fatal_in(const char *func, const char *reason, const void *p)
{
	static int dying;
	struct om_buf o = { .fd = STDERR_FILENO };

	om_buf_printf(&o, "%s(%ld) in %s(): %s", om_progname(),
	    om_os_getpid(), func, reason);
	if (p != NULL)
		om_buf_printf(&o, " %p", p);
	putc_buf(&o, '\n');
	om_buf_flush(&o);

	/* Dump once; a second fault while dumping goes straight to abort. */
	if (mopts.opt.dump && !__atomic_exchange_n(&dying, 1, __ATOMIC_SEQ_CST))
		om_dump_exit();
	abort();
}
