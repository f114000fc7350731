/*
 * test_random.c - random.c: the ChaCha20 keystream, seeding, the byte and
 * word draws.  The keystream tests run once with the refill the processor
 * gets and once with the AVX2 path turned off (loop index 1), so that
 * both the eight-block and the four-block code are checked here.
 */
#include "unit.h"

#include <stdint.h>
#include <stdlib.h>

/* Loop index 1: refill without AVX2. */
static void
choose_path(int i)
{
#if OM_CHACHA_AVX2
	if (i == 1)
		om_random_wide = 0;
#else
	(void)i;
#endif
}

START_TEST(chacha_known_answer)
{
	/* RFC 8439, 2.3.2: key 00..1f, nonce 00:00:00:09:00:00:00:4a:00:00:
	 * 00:00, block counter 1: the ChaCha20 block, and the same block
	 * with eight rounds (ChaCha8), either of which the generator may
	 * use. */
	static const uint8_t want8[64] = {
		0xee, 0xad, 0x9d, 0xfb, 0xbc, 0x60, 0x44, 0x3e,
		0x9d, 0x68, 0x11, 0xba, 0xb8, 0xe6, 0x0a, 0x3a,
		0xc6, 0x00, 0x1e, 0x0d, 0xfb, 0x98, 0x5f, 0x65,
		0xef, 0xcb, 0x0e, 0xa4, 0x24, 0x54, 0x41, 0x1c,
		0x64, 0x74, 0x7e, 0xf7, 0x3d, 0x47, 0x66, 0xe0,
		0xc2, 0x0e, 0x19, 0x20, 0x8e, 0x5c, 0xb1, 0x17,
		0x77, 0xd4, 0x87, 0x26, 0x31, 0x52, 0xe6, 0x5d,
		0xc5, 0xff, 0x94, 0x7f, 0xca, 0xb2, 0x3b, 0x2b,
	};
	static const uint8_t want[64] = {
		0x10, 0xf1, 0xe7, 0xe4, 0xd1, 0x3b, 0x59, 0x15,
		0x50, 0x0f, 0xdd, 0x1f, 0xa3, 0x20, 0x71, 0xc4,
		0xc7, 0xd1, 0xf4, 0xc7, 0x33, 0xc0, 0x68, 0x03,
		0x04, 0x22, 0xaa, 0x9a, 0xc3, 0xd4, 0x6c, 0x4e,
		0xd2, 0x82, 0x64, 0x46, 0x07, 0x9f, 0xaa, 0x09,
		0x14, 0xc2, 0xd7, 0x05, 0xd9, 0x8b, 0x02, 0xa2,
		0xb5, 0x12, 0x9c, 0xd1, 0xde, 0x16, 0x4e, 0xb9,
		0xcb, 0xd0, 0x83, 0xe8, 0xa2, 0x50, 0x3c, 0x4e,
	};
	static const uint8_t nonce[12] = { 0, 0, 0, 9, 0, 0, 0, 0x4a, 0, 0,
		0, 0 };
	struct om_rng r;
	uint8_t key[32];
	unsigned int i;

	choose_path(_i);
	for (i = 0; i < 32; i++)
		key[i] = (uint8_t)i;
	memset(&r, 0, sizeof(r));
	memcpy(r.key, key, sizeof(key));
	memcpy(r.nonce, nonce, sizeof(nonce));
	r.counter = 1;
	om_random_refill(&r);
	ck_assert_msg(memcmp(r.buf, want, sizeof(want)) == 0 ||
	    memcmp(r.buf, want8, sizeof(want8)) == 0,
	    "neither the ChaCha20 nor the ChaCha8 block");
	/* One block per 64 bytes of buffer; the first 32 bytes become the
	 * next key and are never handed out. */
	ck_assert_uint_eq(r.counter, 1 + sizeof(r.buf) / 64);
	ck_assert(memcmp(r.key, r.buf, sizeof(r.key)) == 0);
	ck_assert_uint_eq(r.pos, sizeof(r.key));
}
END_TEST

/* Every block of a refill is the block its counter gives on its own
 * (the first block of a refill started at that counter), whether the
 * generator computes blocks one at a time or several at once; and a
 * counter about to wrap moves the nonce on as one block at a time does. */
START_TEST(blocks_agree)
{
	static const uint32_t starts[] = { 1, 1000, UINT32_MAX - 5 };
	struct om_rng a, b;
	unsigned int i, j;

	choose_path(_i);
	for (i = 0; i < sizeof(starts) / sizeof(starts[0]); i++) {
		memset(&a, 0, sizeof(a));
		for (j = 0; j < 8; j++)
			a.key[j] = 0x01020304u * (j + 1) + i;
		a.nonce[0] = 7;
		a.nonce[1] = 8;
		a.nonce[2] = 9;
		a.counter = starts[i];
		b = a;
		om_random_refill(&a);
		for (j = 0; j < sizeof(a.buf) / 64; j++) {
			struct om_rng c = b;

			/* Block j alone: its counter, and the nonce a wrap
			 * on the way there would have moved. */
			c.counter = b.counter + j;
			if (c.counter < b.counter)
				c.nonce[0]++;
			om_random_refill(&c);
			ck_assert_msg(memcmp(c.buf, a.buf + 64 * j, 64) == 0,
			    "start %u: block %u differs", starts[i], j);
		}
	}
}
END_TEST

START_TEST(byte_distribution)
{
	struct om_rng r;
	unsigned int hist[256] = { 0 }, i, min = ~0u, max = 0;
	const unsigned int n = 256 * 64;

	unit_init();
	om_random_seed(&r);
	for (i = 0; i < n; i++)
		hist[om_rbyte(&r)]++;
	for (i = 0; i < 256; i++) {
		if (hist[i] < min)
			min = hist[i];
		if (hist[i] > max)
			max = hist[i];
	}
	/* 64 expected per value: far outside these bounds is broken. */
	ck_assert_msg(min >= 20, "value drawn only %u times", min);
	ck_assert_msg(max <= 130, "value drawn %u times", max);
}
END_TEST

START_TEST(bytes_used_once)
{
	struct om_rng r;
	uint8_t copy[sizeof(r.buf)];
	unsigned int i;

	unit_init();
	om_random_seed(&r);
	ck_assert_uint_eq(r.pos, 32);
	memcpy(copy, r.buf, sizeof(copy));
	for (i = 32; i < sizeof(copy); i++)
		ck_assert_uint_eq(om_rbyte(&r), copy[i]);
	/* The buffer is exhausted: the next draw refills it. */
	(void)om_rbyte(&r);
	ck_assert_uint_eq(r.pos, 33);
	ck_assert(memcmp(copy, r.buf, sizeof(copy)) != 0);
}
END_TEST

START_TEST(word_draws)
{
	struct om_rng r;
	unsigned int lo = 0, hi = 0, i;

	unit_init();
	om_random_seed(&r);
	for (i = 0; i < 4096; i++) {
		uint16_t w = om_rword(&r);
		lo |= 1u << (w & 31);
		hi |= 1u << (w >> 11);
		ck_assert_uint_le(r.pos, sizeof(r.buf));
	}
	ck_assert_uint_eq(lo, 0xffffffffu);
	ck_assert_uint_eq(hi, 0xffffffffu);
}
END_TEST

START_TEST(generators_differ)
{
	struct om_rng a, b;
	uint8_t x[64], y[64];
	unsigned int i;

	unit_init();
	om_random_seed(&a);
	om_random_seed(&b);
	ck_assert(memcmp(a.key, b.key, sizeof(a.key)) != 0);
	for (i = 0; i < sizeof(x); i++) {
		x[i] = om_rbyte(&a);
		y[i] = om_rbyte(&b);
	}
	ck_assert(memcmp(x, y, sizeof(x)) != 0);
	om_random_buf(x, sizeof(x));
	om_random_buf(y, sizeof(y));
	ck_assert(memcmp(x, y, sizeof(x)) != 0);
}
END_TEST

START_TEST(pools_have_own_keys)
{
	struct dir_info *a = unit_pool(), *b = unit_pool();

	ck_assert(memcmp(a->rng.key, b->rng.key, sizeof(a->rng.key)) != 0);
	ck_assert(memcmp(mopts.pools[0]->rng.buf, a->rng.buf,
	    sizeof(a->rng.buf)) != 0);
}
END_TEST

START_TEST(global_init_keeps_errno)
{
	errno = 4242;
	ck_assert_int_eq(om_random_global_init(), 0);
	ck_assert_int_eq(errno, 4242);
}
END_TEST

/* The eight-block refill is chosen exactly where the processor has AVX2
 * (the library asks the processor itself; libgcc's answer is the check),
 * and gives the bytes the four-block one gives. */
START_TEST(paths_agree)
{
#if OM_CHACHA_AVX2
	struct om_rng a, b;
	unsigned int j;

	ck_assert_int_eq(om_random_wide, __builtin_cpu_supports("avx2") != 0);
	memset(&a, 0, sizeof(a));
	for (j = 0; j < 8; j++)
		a.key[j] = 0x9e3779b9u * (j + 1);
	a.nonce[2] = 3;
	a.counter = 77;
	b = a;
	om_random_refill(&a);
	om_random_wide = 0;
	om_random_refill(&b);
	ck_assert(memcmp(a.buf, b.buf, sizeof(a.buf)) == 0);
	ck_assert_uint_eq(a.counter, b.counter);
#endif
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("random");
	TCase *t = tcase_create("random");

	tcase_add_loop_test(t, chacha_known_answer, 0, 2);
	tcase_add_loop_test(t, blocks_agree, 0, 2);
	tcase_add_test(t, paths_agree);
	tcase_add_test(t, byte_distribution);
	tcase_add_test(t, bytes_used_once);
	tcase_add_test(t, word_draws);
	tcase_add_test(t, generators_differ);
	tcase_add_test(t, pools_have_own_keys);
	tcase_add_test(t, global_init_keeps_errno);
	suite_add_tcase(s, t);
	return unit_main(s);
}
