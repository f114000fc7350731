/*
 * random.c - random bytes for placement decisions.
 *
 * A ChaCha8 keystream (eight rounds: ample for placement decisions, and
 * the key is replaced at every refill), keyed from getrandom(2) once per
 * process and once per pool, fills a 512-byte buffer per pool, all eight
 * blocks at once where the processor has AVX2, else four at a time with
 * SSE2; the allocator consumes it a byte at a time (om_rbyte) under the
 * pool lock.  Fast path: a buffer index increment.  Invariant: no two
 * pools share a key.
 */
#include "internal.h"

#include <sys/random.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static struct om_rng global_rng;
static pthread_mutex_t global_mtx = PTHREAD_MUTEX_INITIALIZER;

/* The first four words of every block: "expand 32-byte k". */
static const uint32_t sigma[4] = { 0x61707865, 0x3320646e, 0x79622d32,
	0x6b206574 };

#define ROTL(v, n) (((v) << (n)) | ((v) >> (32 - (n))))
#define QR(a, b, c, d)                                                       \
	do {                                                                 \
		a += b; d ^= a; d = ROTL(d, 16);                             \
		c += d; b ^= c; b = ROTL(b, 12);                             \
		a += b; d ^= a; d = ROTL(d, 8);                              \
		c += d; b ^= c; b = ROTL(b, 7);                              \
	} while (0)

/* One double round (a column round, then a diagonal one) with the quarter
 * round Q, on scalars or on vectors of four blocks alike. */
#define DOUBLE_ROUND(Q, x)                                                   \
	do {                                                                 \
		Q(x[0], x[4], x[8], x[12]);                                  \
		Q(x[1], x[5], x[9], x[13]);                                  \
		Q(x[2], x[6], x[10], x[14]);                                 \
		Q(x[3], x[7], x[11], x[15]);                                 \
		Q(x[0], x[5], x[10], x[15]);                                 \
		Q(x[1], x[6], x[11], x[12]);                                 \
		Q(x[2], x[7], x[8], x[13]);                                  \
		Q(x[3], x[4], x[9], x[14]);                                  \
	} while (0)

static void
chacha_block(struct om_rng *r, uint8_t out[64])
{
	uint32_t in[16], x[16];
	int i;

	for (i = 0; i < 4; i++)
		in[i] = sigma[i];
	for (i = 0; i < 8; i++)
		in[4 + i] = r->key[i];
	in[12] = r->counter++;
	in[13] = r->nonce[0];
	in[14] = r->nonce[1];
	in[15] = r->nonce[2];
	if (r->counter == 0)
		r->nonce[0]++;
	memcpy(x, in, sizeof(x));
	for (i = 0; i < 4; i++)
		DOUBLE_ROUND(QR, x);
	for (i = 0; i < 16; i++)
		x[i] += in[i];
	memcpy(out, x, 64);
}

#if defined(__SSE2__)
#include <emmintrin.h>

#define ROTL4(v, n) \
	_mm_or_si128(_mm_slli_epi32((v), (n)), _mm_srli_epi32((v), 32 - (n)))
#define QR4(a, b, c, d)                                                      \
	do {                                                                 \
		a = _mm_add_epi32(a, b); d = _mm_xor_si128(d, a);            \
		d = ROTL4(d, 16);                                            \
		c = _mm_add_epi32(c, d); b = _mm_xor_si128(b, c);            \
		b = ROTL4(b, 12);                                            \
		a = _mm_add_epi32(a, b); d = _mm_xor_si128(d, a);            \
		d = ROTL4(d, 8);                                             \
		c = _mm_add_epi32(c, d); b = _mm_xor_si128(b, c);            \
		b = ROTL4(b, 7);                                             \
	} while (0)

/*
 * Four consecutive blocks at once, the same bytes chacha_block would give
 * for them: lane j of every vector works on the block of counter + j, and
 * the lanes are transposed back into blocks on the way out.  The caller
 * makes sure the counter does not wrap inside the four.
 */
static void
chacha_block4(struct om_rng *r, uint8_t out[256])
{
	__m128i in[16], x[16];
	int i, j;

	for (i = 0; i < 4; i++)
		in[i] = _mm_set1_epi32((int)sigma[i]);
	for (i = 0; i < 8; i++)
		in[4 + i] = _mm_set1_epi32((int)r->key[i]);
	in[12] = _mm_set_epi32((int)(r->counter + 3), (int)(r->counter + 2),
	    (int)(r->counter + 1), (int)r->counter);
	for (i = 0; i < 3; i++)
		in[13 + i] = _mm_set1_epi32((int)r->nonce[i]);
	r->counter += 4;
	memcpy(x, in, sizeof(x));
	for (i = 0; i < 4; i++)
		DOUBLE_ROUND(QR4, x);
	for (i = 0; i < 16; i += 4) {
		__m128i a = _mm_add_epi32(x[i], in[i]);
		__m128i b = _mm_add_epi32(x[i + 1], in[i + 1]);
		__m128i c = _mm_add_epi32(x[i + 2], in[i + 2]);
		__m128i d = _mm_add_epi32(x[i + 3], in[i + 3]);
		__m128i ab0 = _mm_unpacklo_epi32(a, b);	/* a0 b0 a1 b1 */
		__m128i ab1 = _mm_unpackhi_epi32(a, b);	/* a2 b2 a3 b3 */
		__m128i cd0 = _mm_unpacklo_epi32(c, d);
		__m128i cd1 = _mm_unpackhi_epi32(c, d);
		__m128i lane[4];

		lane[0] = _mm_unpacklo_epi64(ab0, cd0);	/* a0 b0 c0 d0 */
		lane[1] = _mm_unpackhi_epi64(ab0, cd0);
		lane[2] = _mm_unpacklo_epi64(ab1, cd1);
		lane[3] = _mm_unpackhi_epi64(ab1, cd1);
		for (j = 0; j < 4; j++)
			_mm_storeu_si128((__m128i *)(void *)(out + 64 * j +
			    4 * i), lane[j]);
	}
}
#endif

#if OM_CHACHA_AVX2
#include <cpuid.h>
#include <immintrin.h>

#define AVX2 __attribute__((target("avx2")))
#define ROTL8X(v, n) _mm256_or_si256(_mm256_slli_epi32((v), (n)),         \
	_mm256_srli_epi32((v), 32 - (n)))
/* Rotations by 16 and 8 move whole bytes: one shuffle instead of three
 * instructions. */
#define QR8(a, b, c, d)                                                      \
	do {                                                                 \
		a = _mm256_add_epi32(a, b); d = _mm256_xor_si256(d, a);      \
		d = _mm256_shuffle_epi8(d, rot16);                           \
		c = _mm256_add_epi32(c, d); b = _mm256_xor_si256(b, c);      \
		b = ROTL8X(b, 12);                                           \
		a = _mm256_add_epi32(a, b); d = _mm256_xor_si256(d, a);      \
		d = _mm256_shuffle_epi8(d, rot8);                            \
		c = _mm256_add_epi32(c, d); b = _mm256_xor_si256(b, c);      \
		b = ROTL8X(b, 7);                                            \
	} while (0)

int om_random_wide;

/*
 * Whether AVX2 code may run: the processor has it and the kernel saves
 * the YMM registers (XCR0 bits 1 and 2).  Asked here rather than through
 * __builtin_cpu_supports, whose support code from libgcc (5 KiB of text,
 * a constructor and a page of data) every process would map for this
 * one answer.
 */
static int
avx2_usable(void)
{
	unsigned int a, b, c, d, lo, hi;

	if (__get_cpuid_max(0, NULL) < 7)
		return 0;
	__cpuid(1, a, b, c, d);
	if ((c & bit_OSXSAVE) == 0 || (c & bit_AVX) == 0)
		return 0;
	__asm__ volatile ("xgetbv" : "=a" (lo), "=d" (hi) : "c" (0));
	(void)hi;
	if ((lo & 6) != 6)
		return 0;
	__cpuid_count(7, 0, a, b, c, d);
	return (b & bit_AVX2) != 0;
}

_Static_assert(sizeof(((struct om_rng *)0)->buf) == 512,
    "chacha_block8 fills the buffer");

/*
 * Eight consecutive blocks at once, as chacha_block4 does four: lane j of
 * every vector works on the block of counter + j.  On the way out each
 * half of the state (words 0-7, then 8-15) is an 8x8 matrix of words,
 * transposed so that every row is 32 bytes of one block.  The caller
 * makes sure the counter does not wrap inside the eight.
 */
static AVX2 void
chacha_block8(struct om_rng *r, uint8_t out[512])
{
	const __m256i rot16 = _mm256_setr_epi8(2, 3, 0, 1, 6, 7, 4, 5,
	    10, 11, 8, 9, 14, 15, 12, 13, 2, 3, 0, 1, 6, 7, 4, 5,
	    10, 11, 8, 9, 14, 15, 12, 13);
	const __m256i rot8 = _mm256_setr_epi8(3, 0, 1, 2, 7, 4, 5, 6,
	    11, 8, 9, 10, 15, 12, 13, 14, 3, 0, 1, 2, 7, 4, 5, 6,
	    11, 8, 9, 10, 15, 12, 13, 14);
	__m256i in[16], x[16];
	int i, j;

	for (i = 0; i < 4; i++)
		in[i] = _mm256_set1_epi32((int)sigma[i]);
	for (i = 0; i < 8; i++)
		in[4 + i] = _mm256_set1_epi32((int)r->key[i]);
	in[12] = _mm256_add_epi32(_mm256_set1_epi32((int)r->counter),
	    _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
	for (i = 0; i < 3; i++)
		in[13 + i] = _mm256_set1_epi32((int)r->nonce[i]);
	r->counter += 8;
	memcpy(x, in, sizeof(x));
	for (i = 0; i < 4; i++)
		DOUBLE_ROUND(QR8, x);
	for (i = 0; i < 16; i += 8) {
		__m256i a[8], t[8], u[8];

		for (j = 0; j < 8; j++)
			a[j] = _mm256_add_epi32(x[i + j], in[i + j]);
		/* t[j]: words j and j + 1 of lanes 0 and 1 in the low
		 * half, 4 and 5 in the high; t[j + 1]: lanes 2, 3, 6, 7. */
		for (j = 0; j < 8; j += 2) {
			t[j] = _mm256_unpacklo_epi32(a[j], a[j + 1]);
			t[j + 1] = _mm256_unpackhi_epi32(a[j], a[j + 1]);
		}
		/* u[k]: four words of lane k in the low half, of lane
		 * k + 4 in the high (k = 0..3), then u[4 + k] the next
		 * four words of the same lanes. */
		for (j = 0; j < 8; j += 4) {
			u[j] = _mm256_unpacklo_epi64(t[j], t[j + 2]);
			u[j + 1] = _mm256_unpackhi_epi64(t[j], t[j + 2]);
			u[j + 2] = _mm256_unpacklo_epi64(t[j + 1], t[j + 3]);
			u[j + 3] = _mm256_unpackhi_epi64(t[j + 1], t[j + 3]);
		}
		for (j = 0; j < 4; j++) {
			_mm256_storeu_si256((__m256i *)(void *)(out + 64 * j +
			    4 * i), _mm256_permute2x128_si256(u[j], u[j + 4],
			    0x20));
			_mm256_storeu_si256((__m256i *)(void *)(out +
			    64 * (j + 4) + 4 * i), _mm256_permute2x128_si256(
			    u[j], u[j + 4], 0x31));
		}
	}
}
#endif

/* Refill the buffer; the first 32 bytes of every refill rekey the stream so
 * that a later memory disclosure does not reveal earlier output. */
void
om_random_refill(struct om_rng *r)
{
	size_t i = 0;

#if OM_CHACHA_AVX2
	if (om_random_wide && r->counter <= UINT32_MAX - 8) {
		chacha_block8(r, r->buf);
		i = sizeof(r->buf);
	}
#endif
#if defined(__SSE2__)
	/* Four blocks at a time while the counter cannot wrap among them
	 * (where the nonce moves on, which chacha_block does). */
	for (; i + 256 <= sizeof(r->buf) && r->counter <= UINT32_MAX - 4;
	    i += 256)
		chacha_block4(r, r->buf + i);
#endif
	for (; i < sizeof(r->buf); i += 64)
		chacha_block(r, r->buf + i);
	memcpy(r->key, r->buf, sizeof(r->key));
	r->pos = sizeof(r->key);
}

/*
 * Key the process generator from the kernel.  What the kernel gives is
 * mixed into what the generator would give next: nothing at start-up (it
 * is all zeros), the parent's stream in a fork child, which nobody outside
 * knows.  Returns -1 if the kernel gives no randomness at all: then the
 * stack address, thread id and time are mixed in instead, so that a fork
 * child under a sandbox that refuses getrandom still draws apart from its
 * siblings, and the failure is not fatal.
 */
static int
seed_global(void)
{
	uint8_t seed[48], k[48] = { 0 };
	size_t got = 0, i;
	int saved = errno;

	while (got < sizeof(k)) {
		long n = syscall(SYS_getrandom, k + got, sizeof(k) - got, 0);
		if (n <= 0) {
			if (n < 0 && errno == EINTR)
				continue;
			break;
		}
		got += (size_t)n;
	}
	if (got < sizeof(k)) {
		uintptr_t a = (uintptr_t)&seed ^ (uintptr_t)om_os_gettid();
		struct timespec ts;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		for (i = 0; i < sizeof(a); i++)
			k[i] ^= ((const uint8_t *)&a)[i];
		for (i = 0; i < sizeof(ts); i++)
			k[sizeof(a) + i] ^= ((const uint8_t *)&ts)[i];
	}
	for (i = 0; i < sizeof(seed); i++)
		seed[i] = om_rbyte(&global_rng) ^ k[i];
	memcpy(global_rng.key, seed, 32);
	memcpy(global_rng.nonce, seed + 32, 12);
	global_rng.counter = 0;
	om_random_refill(&global_rng);
	memset(seed, 0, sizeof(seed));
	memset(k, 0, sizeof(k));
	errno = saved;
	return got == sizeof(k) ? 0 : -1;
}

/* Seed the process generator, once, at initialisation. */
int
om_random_global_init(void)
{
#if OM_CHACHA_AVX2
	om_random_wide = avx2_usable();
#endif
	return seed_global();
}

/*
 * In the child of a fork, whose one thread is the one that forked: a key
 * of its own from the kernel.  Without it every child of one parent would
 * draw what its siblings draw, and one child's layout, learnt by an
 * attacker who can make a server fork a worker again after each crash,
 * would be every worker's.  (OpenBSD's arc4random, which its malloc
 * draws from, is rekeyed in a fork child too.)  No other thread holds
 * the lock: it is only taken under the pool-opening lock, which the fork
 * hooks hold.
 */
void
om_random_fork_child(void)
{
	pthread_mutex_init(&global_mtx, NULL);
	(void)seed_global();
}

void
om_random_buf(void *p, size_t n)
{
	uint8_t *o = p;

	pthread_mutex_lock(&global_mtx);
	while (n--)
		*o++ = om_rbyte(&global_rng);
	pthread_mutex_unlock(&global_mtx);
}

void
om_random_seed(struct om_rng *r)
{
	om_random_buf(r->key, sizeof(r->key));
	om_random_buf(r->nonce, sizeof(r->nonce));
	r->counter = 0;
	om_random_refill(r);
}
