/*
 * An OpenMP reduction in flight: four threads sum a long series in
 * vector registers, dumped mid-way. The sum (exact in doubles, whatever
 * the order the partial sums meet in) must be the uninterrupted one.
 */
#include <stdint.h>

#include "zdtm.h"

#define N	(1500ULL * 1000 * 1000)

int
main(void)
{
	double		sum = 0, want;
	uint64_t	i, full = N / 1000, rest = N % 1000;

	zdtm_ready();
#pragma omp parallel for num_threads(4) schedule(static) reduction(+:sum)
	for (i = 0; i < N; i++)
		sum += (double)(i % 1000);
	/* What an uninterrupted run adds up to: 0 + ... + 999, N/1000 times. */
	want = (double)full * 499500.0 + (double)(rest * (rest - 1) / 2);
	if (sum != want)
		zdtm_fail("sum %.1f, not %.1f", sum, want);
	zdtm_pass();
}
