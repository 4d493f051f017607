/*
 * Floating point and AVX work in flight: the same computation runs once
 * uninterrupted, then again while the process is dumped and restored; the
 * results must be bit for bit equal. The accumulators live in vector
 * registers across the loop (AVX-512 ones and a mask register too where
 * the CPU has them), and x87 long doubles are in use.
 */
#include <immintrin.h>
#include <stdint.h>
#include <time.h>

#include "zdtm.h"

struct result {
	double		v[16];
	double		z[16];		/* AVX-512, where the CPU has it */
	long double	x;
};

static int	has_avx512;

__attribute__((target("avx2,fma"), noinline))
static void
work(long iters, struct result *r)
{
	__m256d	a = _mm256_set_pd(1.0, 1.1, 1.2, 1.3);
	__m256d	b = _mm256_set_pd(0.5, 0.25, 0.125, 0.0625);
	__m256d	c = _mm256_set_pd(1e-9, 2e-9, 3e-9, 4e-9);
	__m256d	d = _mm256_set1_pd(0.999999);
	long double x = 1.0L;
	long	i;

	for (i = 0; i < iters; i++) {
		a = _mm256_fmadd_pd(a, d, c);
		b = _mm256_fmadd_pd(b, a, c);
		c = _mm256_sqrt_pd(_mm256_add_pd(_mm256_mul_pd(c, c), b));
		d = _mm256_min_pd(_mm256_add_pd(d, c), _mm256_set1_pd(1.0));
		x = x * 1.0000001L + (long double)i * 1e-12L;
	}
	_mm256_storeu_pd(r->v, a);
	_mm256_storeu_pd(r->v + 4, b);
	_mm256_storeu_pd(r->v + 8, c);
	_mm256_storeu_pd(r->v + 12, d);
	r->x = x;
}

/* The same with the 512-bit registers and a mask register in play. */
__attribute__((target("avx512f"), noinline))
static void
work512(long iters, struct result *r)
{
	__m512d		a = _mm512_set1_pd(1.01), b = _mm512_set1_pd(0.5);
	__m512d		d = _mm512_set1_pd(0.9999999);
	__mmask8	m = 0x5a;
	long		i;

	for (i = 0; i < iters; i++) {
		a = _mm512_fmadd_pd(a, d, b);
		b = _mm512_mask_sqrt_pd(b, m, a);
		m = (__mmask8)((m << 1) | (m >> 7));
	}
	_mm512_storeu_pd(r->z, a);
	_mm512_storeu_pd(r->z + 8, b);
}

static void
run(long iters, struct result *r)
{
	memset(r, 0, sizeof *r);
	work(iters, r);
	if (has_avx512)
		work512(iters, r);
}

int
main(int argc, char **argv)
{
	struct result	 ref, got;
	struct timespec	 t0, t1;
	long		 iters = 20000000;
	double		 s;

	if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma"))
		zdtm_fail("this CPU has no AVX2/FMA");
	has_avx512 = __builtin_cpu_supports("avx512f");
	/* Size the run to last about four seconds. */
	clock_gettime(CLOCK_MONOTONIC, &t0);
	run(iters, &ref);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	s = (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
	iters = (long)(iters * 4.0 / (s > 0.01 ? s : 0.01));
	run(iters, &ref);
	zdtm_ready();
	run(iters, &got);
	if (memcmp(ref.v, got.v, sizeof ref.v) != 0 ||
	    memcmp(ref.z, got.z, sizeof ref.z) != 0 || ref.x != got.x)
		zdtm_fail("results differ from the uninterrupted run");
	if (argc > 1)
		printf("%.17g\n", got.v[0]);
	zdtm_pass();
}
