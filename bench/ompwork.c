/*
 * bench/ompwork triad MIB REPS | compute N: OpenMP work for bench/omp.
 *
 *	triad MIB REPS	STREAM's triad, a[i] = b[i] + s * c[i], over three
 *			arrays of MIB MiB each (far beyond the caches),
 *			REPS times; prints the time of the repetitions and
 *			the best one's GB/s (STREAM counts 3 arrays moved)
 *	compute N	N iterations per element of a dependent chain of
 *			multiplies and adds over 2^16 elements: no memory
 *			traffic; prints the time and the result
 *
 * Threads: OMP_NUM_THREADS (or the CPUs the process may use). The time is
 * the work's alone (CLOCK_MONOTONIC around it), without the start.
 */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double
now(void)
{
	struct timespec	ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int
triad(long mib, int reps)
{
	double	*a, *b, *c, s = 3.0, t0, t, best = 1e30, all;
	long	 n = mib * (1 << 20) / (long)sizeof(double), i;
	int	 r;

	a = malloc(n * sizeof *a);
	b = malloc(n * sizeof *b);
	c = malloc(n * sizeof *c);
	if (a == NULL || b == NULL || c == NULL)
		return 1;
#pragma omp parallel for schedule(static)
	for (i = 0; i < n; i++) {
		a[i] = 0;
		b[i] = i % 1000;
		c[i] = 1.0 / (1 + i % 7);
	}
	all = now();
	for (r = 0; r < reps; r++) {
		t0 = now();
#pragma omp parallel for schedule(static)
		for (i = 0; i < n; i++)
			a[i] = b[i] + s * c[i];
		if ((t = now() - t0) < best)
			best = t;
	}
	all = now() - all;
	printf("triad: %d threads, %ld MiB x 3, %d reps in %.3f s, best "
	    "%.2f GB/s, a[7] %.4f\n", omp_get_max_threads(), mib, reps, all,
	    3.0 * n * sizeof(double) / best / 1e9, a[7]);
	return 0;
}

static int
compute(long iters)
{
	enum { N = 1 << 16 };
	double		 t0, sum = 0;
	long		 i, k;

	t0 = now();
#pragma omp parallel for schedule(static) reduction(+:sum)
	for (i = 0; i < N; i++) {
		double	v = i * 1e-5;

		for (k = 0; k < iters; k++)
			v = v * 0.999999 + 1e-6;
		sum += v;
	}
	printf("compute: %d threads, %ld iterations in %.3f s, sum %.6f\n",
	    omp_get_max_threads(), iters, now() - t0, sum);
	return 0;
}

int
main(int argc, char **argv)
{
	if (argc == 4 && strcmp(argv[1], "triad") == 0)
		return triad(atol(argv[2]), atoi(argv[3]));
	if (argc == 3 && strcmp(argv[1], "compute") == 0)
		return compute(atol(argv[2]));
	fprintf(stderr, "usage: ompwork triad MIB REPS | compute N\n");
	return 2;
}
