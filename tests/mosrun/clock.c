/*
 * clock SECONDS [home]: polls its CPU-time clocks in a loop, as a solver
 * checking its time limit does, until it has used SECONDS of CPU
 * (tests/lab/t-fast.sh, bench/real). Every value of
 * CLOCK_PROCESS_CPUTIME_ID, clock() and CLOCK_THREAD_CPUTIME_ID must be at
 * least the last and at most 0.1 s more (a move neither loses the time used
 * before nor counts it twice); with "home", the clocks may go back once
 * (after a return home they count only the time used at home,
 * docs/REMOTE.md). After 0.3 s it says "ready" on stdout, for a test to
 * move it. Prints "ok POLLS polls, NS ns each, CPU s, N back" and exits 0,
 * or says what went wrong and exits 1.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double
cpu(clockid_t id)
{
	struct timespec	ts;

	if (clock_gettime(id, &ts) != 0) {
		perror("clock_gettime");
		exit(1);
	}
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static double	p, t, c;
static int	backs, back_ok;

static void
step(const char *what, double *last, double now)
{
	if (*last < 0) {		/* the first after going back */
		*last = now;
		return;
	}
	if (now < *last && back_ok) {
		back_ok = 0;
		backs++;
		p = t = c = -1;
		*last = now;
		return;
	}
	if (now < *last || now > *last + 0.1) {
		printf("%s went from %.6f to %.6f s (process %.6f, thread "
		    "%.6f, clock() %.6f)\n", what, *last, now, p, t, c);
		exit(1);
	}
	*last = now;
}

int
main(int argc, char **argv)
{
	struct timespec	 a, b;
	double		 limit = argc > 1 ? atof(argv[1]) : 1;
	long		 polls = 0;
	int		 ready = 0;

	setvbuf(stdout, NULL, _IOLBF, 0);
	back_ok = argc > 2 && strcmp(argv[2], "home") == 0;
	p = cpu(CLOCK_PROCESS_CPUTIME_ID);
	t = cpu(CLOCK_THREAD_CPUTIME_ID);
	c = (double)clock() / CLOCKS_PER_SEC;
	clock_gettime(CLOCK_MONOTONIC, &a);
	while (p < limit) {
		step("CLOCK_PROCESS_CPUTIME_ID", &p,
		    cpu(CLOCK_PROCESS_CPUTIME_ID));
		step("CLOCK_THREAD_CPUTIME_ID", &t,
		    cpu(CLOCK_THREAD_CPUTIME_ID));
		step("clock()", &c, (double)clock() / CLOCKS_PER_SEC);
		polls += 3;
		if (!ready && p >= 0.3) {
			printf("ready\n");
			ready = 1;
		}
	}
	clock_gettime(CLOCK_MONOTONIC, &b);
	printf("ok %ld polls, %.0f ns each, %.3f s, %d back\n", polls,
	    ((b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec)) / polls, p,
	    backs);
	return 0;
}
