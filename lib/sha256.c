/*
 * SHA-256 (FIPS 180-4) and HMAC-SHA256 (RFC 2104), for message
 * authentication between nodes. Written here so that the daemon needs no
 * crypto library beyond the short list of dependencies.
 */
#include <cpuid.h>
#include <immintrin.h>
#include <stdlib.h>
#include <string.h>

#include "osm.h"

static const uint32_t sha256_k[64] = {
	0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1,
	0x923f82a4, 0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3,
	0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786,
	0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
	0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147,
	0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13,
	0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
	0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
	0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a,
	0x5b9cca4f, 0x682e6ff3, 0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208,
	0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2
};

static uint32_t
ror(uint32_t x, int n)
{
	return (x >> n) | (x << (32 - n));
}

/*
 * The same compression with the SHA extensions, which this generation of
 * x86 has: several times faster, and the MAC covers whole migration
 * streams. The state is kept as ABEF/CDGH halves, as the instructions want.
 */
__attribute__((target("sha,sse4.1,ssse3")))
static void
sha256_blocks_ni(uint32_t h[8], const uint8_t *p, size_t nblocks)
{
	const __m128i	 swap = _mm_set_epi64x(0x0c0d0e0f08090a0bULL,
			    0x0405060700010203ULL);
	__m128i		 s0, s1, t, msg, w[4], save0, save1;
	int		 g;

	t = _mm_shuffle_epi32(_mm_loadu_si128((const __m128i *)&h[0]), 0xb1);
	s1 = _mm_shuffle_epi32(_mm_loadu_si128((const __m128i *)&h[4]), 0x1b);
	s0 = _mm_alignr_epi8(t, s1, 8);
	s1 = _mm_blend_epi16(s1, t, 0xf0);
	for (; nblocks > 0; nblocks--, p += SHA256_BLOCK) {
		save0 = s0;
		save1 = s1;
		for (g = 0; g < 16; g++) {
			/* w[g & 3] holds words 4g..4g+3 of the schedule */
			if (g < 4)
				w[g] = _mm_shuffle_epi8(_mm_loadu_si128(
				    (const __m128i *)(p + 16 * g)), swap);
			else
				w[g & 3] = _mm_sha256msg2_epu32(_mm_add_epi32(
				    _mm_sha256msg1_epu32(w[g & 3],
				    w[(g + 1) & 3]), _mm_alignr_epi8(
				    w[(g + 3) & 3], w[(g + 2) & 3], 4)),
				    w[(g + 3) & 3]);
			msg = _mm_add_epi32(w[g & 3], _mm_loadu_si128(
			    (const __m128i *)&sha256_k[4 * g]));
			s1 = _mm_sha256rnds2_epu32(s1, s0, msg);
			s0 = _mm_sha256rnds2_epu32(s0, s1,
			    _mm_shuffle_epi32(msg, 0x0e));
		}
		s0 = _mm_add_epi32(s0, save0);
		s1 = _mm_add_epi32(s1, save1);
	}
	t = _mm_shuffle_epi32(s0, 0x1b);
	s1 = _mm_shuffle_epi32(s1, 0xb1);
	_mm_storeu_si128((__m128i *)&h[0], _mm_blend_epi16(t, s1, 0xf0));
	_mm_storeu_si128((__m128i *)&h[4], _mm_alignr_epi8(s1, t, 8));
}

static int
sha256_have_ni(void)
{
	static int	have = -1;
	unsigned	a, b, c, d;

	if (have == -1) {
		have = __get_cpuid_count(7, 0, &a, &b, &c, &d) &&
		    (b & (1U << 29)) != 0 &&		/* SHA */
		    __get_cpuid(1, &a, &b, &c, &d) &&
		    (c & (1U << 19)) != 0;		/* SSE4.1 */
		if (getenv("OSM_NO_SHA_NI") != NULL)
			have = 0;	/* to test the portable code */
	}
	return have;
}

static void
sha256_block_c(struct sha256 *c, const uint8_t *p)
{
	uint32_t	w[64], a, b, d, e, f, g, h, cc, t1, t2;
	int		i;

	for (i = 0; i < 16; i++)
		w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 |
		    (uint32_t)p[4 * i + 2] << 8 | p[4 * i + 3];
	for (; i < 64; i++)
		w[i] = (ror(w[i - 2], 17) ^ ror(w[i - 2], 19) ^ (w[i - 2] >> 10))
		    + w[i - 7] + (ror(w[i - 15], 7) ^ ror(w[i - 15], 18) ^
		    (w[i - 15] >> 3)) + w[i - 16];
	a = c->h[0]; b = c->h[1]; cc = c->h[2]; d = c->h[3];
	e = c->h[4]; f = c->h[5]; g = c->h[6]; h = c->h[7];
	for (i = 0; i < 64; i++) {
		t1 = h + (ror(e, 6) ^ ror(e, 11) ^ ror(e, 25)) +
		    ((e & f) ^ (~e & g)) + sha256_k[i] + w[i];
		t2 = (ror(a, 2) ^ ror(a, 13) ^ ror(a, 22)) +
		    ((a & b) ^ (a & cc) ^ (b & cc));
		h = g; g = f; f = e; e = d + t1;
		d = cc; cc = b; b = a; a = t1 + t2;
	}
	c->h[0] += a; c->h[1] += b; c->h[2] += cc; c->h[3] += d;
	c->h[4] += e; c->h[5] += f; c->h[6] += g; c->h[7] += h;
}

static void
sha256_blocks(struct sha256 *c, const uint8_t *p, size_t nblocks)
{
	if (sha256_have_ni())
		sha256_blocks_ni(c->h, p, nblocks);
	else
		for (; nblocks > 0; nblocks--, p += SHA256_BLOCK)
			sha256_block_c(c, p);
}

void
sha256_init(struct sha256 *c)
{
	static const uint32_t iv[8] = {
		0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
		0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19
	};

	memcpy(c->h, iv, sizeof iv);
	c->total = 0;
	c->used = 0;
}

void
sha256_update(struct sha256 *c, const void *data, size_t len)
{
	const uint8_t	*p = data;
	size_t		 n;

	c->total += len;
	if (c->used > 0) {
		n = SHA256_BLOCK - c->used;
		if (n > len)
			n = len;
		memcpy(c->buf + c->used, p, n);
		c->used += n;
		p += n;
		len -= n;
		if (c->used < SHA256_BLOCK)
			return;
		sha256_blocks(c, c->buf, 1);
		c->used = 0;
	}
	n = len / SHA256_BLOCK;
	sha256_blocks(c, p, n);
	p += n * SHA256_BLOCK;
	len -= n * SHA256_BLOCK;
	memcpy(c->buf, p, len);
	c->used = len;
}

void
sha256_final(struct sha256 *c, uint8_t out[SHA256_LEN])
{
	uint64_t	bits = c->total * 8;
	int		i;

	c->buf[c->used++] = 0x80;
	if (c->used > SHA256_BLOCK - 8) {
		memset(c->buf + c->used, 0, SHA256_BLOCK - c->used);
		sha256_blocks(c, c->buf, 1);
		c->used = 0;
	}
	memset(c->buf + c->used, 0, SHA256_BLOCK - 8 - c->used);
	for (i = 0; i < 8; i++)
		c->buf[SHA256_BLOCK - 1 - i] = bits >> (8 * i);
	sha256_blocks(c, c->buf, 1);
	for (i = 0; i < 8; i++) {
		out[4 * i] = c->h[i] >> 24;
		out[4 * i + 1] = c->h[i] >> 16;
		out[4 * i + 2] = c->h[i] >> 8;
		out[4 * i + 3] = c->h[i];
	}
	memset(c, 0, sizeof *c);
}

void
hmac_sha256(const uint8_t *key, size_t keylen, const void *data, size_t len,
    uint8_t out[SHA256_LEN])
{
	struct sha256	c;
	uint8_t		k[SHA256_BLOCK], pad[SHA256_BLOCK], inner[SHA256_LEN];
	size_t		i;

	memset(k, 0, sizeof k);
	if (keylen > SHA256_BLOCK) {
		sha256_init(&c);
		sha256_update(&c, key, keylen);
		sha256_final(&c, k);
	} else
		memcpy(k, key, keylen);

	for (i = 0; i < SHA256_BLOCK; i++)
		pad[i] = k[i] ^ 0x36;
	sha256_init(&c);
	sha256_update(&c, pad, sizeof pad);
	sha256_update(&c, data, len);
	sha256_final(&c, inner);

	for (i = 0; i < SHA256_BLOCK; i++)
		pad[i] = k[i] ^ 0x5c;
	sha256_init(&c);
	sha256_update(&c, pad, sizeof pad);
	sha256_update(&c, inner, sizeof inner);
	sha256_final(&c, out);
}

/* Compare without leaking where the first difference is. */
int
timingsafe_memcmp(const void *a, const void *b, size_t len)
{
	const volatile uint8_t	*pa = a, *pb = b;
	uint8_t			 diff = 0;
	size_t			 i;

	for (i = 0; i < len; i++)
		diff |= pa[i] ^ pb[i];
	return diff != 0;
}
