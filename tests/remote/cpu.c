/*
 * CPU time that goes on from a base: run by the loopback with -b, the
 * process's CPU clocks, times() and getrusage() must count from there.
 * Neither of user and system time ever goes back, from the first
 * reading on (the kernel's samples may find the first ticks of either
 * late).
 * Usage: cpu BASE_SECONDS (0 natively)
 */
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/times.h>

#include <time.h>
#include <unistd.h>

#include "rt.h"

static double
clock_s(clockid_t id)
{
	struct timespec	ts;

	if (clock_gettime(id, &ts) != 0)
		return -1;
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* getrusage's and times' user and system time, polled for 30 ms of CPU. */
static void
never_back(void)
{
	struct rusage	ru;
	struct tms	t;
	double		u = 0, s = 0, tu = 0, ts = 0, now, end;
	int		failed = rt_failures;

	end = clock_s(CLOCK_PROCESS_CPUTIME_ID) + 0.03;
	do {
		CHECK(getrusage(RUSAGE_SELF, &ru) == 0 && times(&t) !=
		    (clock_t)-1, "getrusage, times");
		now = ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6;
		CHECK(now >= u, "getrusage's user time went from %f to %f",
		    u, now);
		u = now;
		now = ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
		CHECK(now >= s, "getrusage's system time went from %f to %f",
		    s, now);
		s = now;
		CHECK(t.tms_utime >= tu && t.tms_stime >= ts, "times went "
		    "from %.0f %.0f to %ld %ld", tu, ts, (long)t.tms_utime,
		    (long)t.tms_stime);
		tu = t.tms_utime;
		ts = t.tms_stime;
	} while (rt_failures == failed &&
	    clock_s(CLOCK_PROCESS_CPUTIME_ID) < end);
}

int
main(int argc, char **argv)
{
	struct timespec	 ts;
	struct rusage	 ru;
	struct tms	 t;
	clockid_t	 own, other;
	volatile double	 x = 0;
	double		 base, t0, t1, th, own_s, cpu;
	long		 hz = sysconf(_SC_CLK_TCK);
	clock_t		 now;
	int		 i;

	if (argc != 2) {
		fprintf(stderr, "usage: cpu BASE_SECONDS\n");
		return 2;
	}
	base = atof(argv[1]);
	never_back();
	t0 = clock_s(CLOCK_PROCESS_CPUTIME_ID);
	CHECK(t0 >= base && t0 < base + 5, "process clock %f", t0);
	th = clock_s(CLOCK_THREAD_CPUTIME_ID);
	CHECK(th >= base && th < base + 5, "thread clock %f", th);
	CHECK(clock_getres(CLOCK_PROCESS_CPUTIME_ID, &ts) == 0 &&
	    ts.tv_sec == 0 && ts.tv_nsec == 1, "resolution");
	CHECK(syscall(SYS_clock_getres, CLOCK_THREAD_CPUTIME_ID, NULL) == 0,
	    "resolution, no buffer");

	/* the clock of our own pid: the home pid, so emulated too */
	CHECK(clock_getcpuclockid(getpid(), &own) == 0, "getcpuclockid");
	own_s = clock_s(own);
	CHECK(own_s >= base && own_s < base + 5, "own clock %f", own_s);
	/* another process's clock is read at home */
	CHECK(clock_getcpuclockid(getppid(), &other) == 0 &&
	    clock_s(other) >= 0, "parent's clock");
	CHECK(syscall(SYS_clock_gettime, CLOCK_PROCESS_CPUTIME_ID, NULL) ==
	    -1 && errno == EFAULT, "EFAULT");

	for (i = 0; i < 40000000; i++)
		x += i * 0.5;
	t1 = clock_s(CLOCK_PROCESS_CPUTIME_ID);
	CHECK(t1 - t0 > 0.01 && t1 - t0 < 5, "burnt %f", t1 - t0);

	now = times(&t);
	CHECK(now != (clock_t)-1 && now > 0, "times");
	cpu = (t.tms_utime + t.tms_stime) / (double)hz;
	CHECK(cpu >= base + (t1 - t0) / 2 && cpu < base + 5, "times %ld %ld",
	    (long)t.tms_utime, (long)t.tms_stime);
	CHECK(getrusage(RUSAGE_SELF, &ru) == 0, "getrusage");
	CHECK(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec >= base &&
	    ru.ru_utime.tv_sec + ru.ru_stime.tv_sec < base + 5 &&
	    ru.ru_maxrss > 0, "rusage %ld %ld %ld", (long)ru.ru_utime.tv_sec,
	    (long)ru.ru_stime.tv_sec, ru.ru_maxrss);
	CHECK(getrusage(RUSAGE_THREAD, &ru) == 0 &&
	    ru.ru_utime.tv_sec + ru.ru_stime.tv_sec >= base, "RUSAGE_THREAD");
	CHECK(getrusage(RUSAGE_CHILDREN, &ru) == 0, "RUSAGE_CHILDREN");
	/* the node's own clocks run here, through the vDSO or not */
	CHECK(syscall(SYS_clock_gettime, CLOCK_MONOTONIC, &ts) == 0 &&
	    ts.tv_sec > 0, "CLOCK_MONOTONIC");
	return rt_verdict("cpu");
}
