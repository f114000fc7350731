/*
 * check_bytes.h - assertions over a range of bytes or words, for the
 * Check suites, white-box and black-box alike.
 *
 * Check records the location of every assertion that passes with a system
 * call, so a check of every byte or word of a range finds the first that
 * differs and asserts once, naming it.
 */
#ifndef CHECK_BYTES_H
#define CHECK_BYTES_H

#include <check.h>
#include <stddef.h>
#include <stdint.h>

/* The index of the first byte of p[0, n) that is not c, or n. */
static inline size_t
check_first_not(const void *p, unsigned char c, size_t n)
{
	const unsigned char *b = p;
	size_t i;

	for (i = 0; i < n && b[i] == c; i++)
		;
	return i;
}

/* The index of the first word of p[0, n) that is not w, or n. */
static inline size_t
check_first_not64(const uint64_t *p, uint64_t w, size_t n)
{
	size_t i;

	for (i = 0; i < n && p[i] == w; i++)
		;
	return i;
}

/* Every byte of p[0, n) is c; else fail naming the first that is not. */
#define ck_assert_bytes(p, c, n)                                             \
	do {                                                                 \
		const unsigned char *p_ = (const void *)(p);                 \
		size_t n_ = (n), at_ = check_first_not(p_, (c), n_);         \
		ck_assert_msg(at_ == n_, "%s: byte %zu of %zu is 0x%02x, "   \
		    "not 0x%02x", #p, at_, n_, p_[at_], (unsigned int)(c));  \
	} while (0)

/* The same for the 64-bit words of p[0, n), each to be w. */
#define ck_assert_words(p, w, n)                                             \
	do {                                                                 \
		const uint64_t *p_ = (p);                                    \
		size_t n_ = (n), at_ = check_first_not64(p_, (w), n_);       \
		ck_assert_msg(at_ == n_, "%s: word %zu of %zu is %#llx, "    \
		    "not %#llx", #p, at_, n_, (unsigned long long)p_[at_],   \
		    (unsigned long long)(w));                                \
	} while (0)

#endif /* CHECK_BYTES_H */
