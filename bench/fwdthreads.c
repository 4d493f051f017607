/*
 * bench/fwdthreads T N: T threads each make N getppid calls at once (a
 * forwarded call when away), after all are ready; prints the aggregate
 * calls per second and the time. For bench/threads.
 */
#include <sys/syscall.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static pthread_barrier_t	 start;
static long			 per;

static void *
caller(void *arg)
{
	long	i;

	pthread_barrier_wait(&start);
	for (i = 0; i < per; i++)
		syscall(SYS_getppid);
	return arg;
}

static double
now(void)
{
	struct timespec	ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int
main(int argc, char **argv)
{
	pthread_t	*th;
	double		 t0, t;
	int		 n, i;

	if (argc != 3 || (n = atoi(argv[1])) < 1 || n > 64 ||
	    (per = atol(argv[2])) < 1) {
		fprintf(stderr, "usage: fwdthreads THREADS CALLS\n");
		return 2;
	}
	th = calloc(n, sizeof *th);
	pthread_barrier_init(&start, NULL, n + 1);
	for (i = 0; i < n; i++)
		pthread_create(&th[i], NULL, caller, NULL);
	pthread_barrier_wait(&start);
	t0 = now();
	for (i = 0; i < n; i++)
		pthread_join(th[i], NULL);
	t = now() - t0;
	printf("%d threads: %.0f calls per second, %.3f s\n", n,
	    n * per / t, t);
	return 0;
}
