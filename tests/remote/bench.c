/*
 * The cost of a forwarded call: getppid, reads of 4 KiB and 64 KiB
 * from /dev/zero, and stat of a file (/etc/passwd), natively or under
 * the loopback. Not run by make check;
 * see docs/PERFORMANCE.md, "Forwarding". With BENCH_CPU set, it first
 * moves itself to that CPU (sched_setaffinity runs locally).
 * Usage: bench getppid|read4k|read64k|stat [iterations]
 */
#include <sys/stat.h>

#include <fcntl.h>
#include <sched.h>
#include <time.h>
#include <unistd.h>

#include "rt.h"

static char	buf[65536];

static double
now_us(void)
{
	struct timespec	ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

int
main(int argc, char **argv)
{
	const char	*what = argc > 1 ? argv[1] : "";
	size_t		 size = 0;
	struct stat	 st;
	double		 t0;
	int		 n = argc > 2 ? atoi(argv[2]) : 20000, i, fd = -1;

	if (strcmp(what, "read4k") == 0)
		size = 4096;
	else if (strcmp(what, "read64k") == 0)
		size = 65536;
	else if ((strcmp(what, "getppid") != 0 && strcmp(what, "stat") != 0) ||
	    n <= 0) {
		fprintf(stderr, "usage: bench getppid|read4k|read64k|stat "
		    "[iterations]\n");
		return 2;
	}
	if (getenv("BENCH_CPU") != NULL) {
		cpu_set_t	set;

		CPU_ZERO(&set);
		CPU_SET(atoi(getenv("BENCH_CPU")), &set);
		CHECK(sched_setaffinity(0, sizeof set, &set) == 0, "affinity");
	}
	if (size != 0)
		CHECK((fd = open("/dev/zero", O_RDONLY)) >= 0, "open");
	t0 = now_us();
	for (i = 0; i < n; i++) {
		if (what[0] == 's') {
			if (stat("/etc/passwd", &st) != 0)
				break;
		} else if (size == 0)
			getppid();
		else if (read(fd, buf, size) != (ssize_t)size)
			break;
	}
	CHECK(i == n, "read");
	printf("%s: %.2f us per call\n", what, (now_us() - t0) / n);
	return rt_verdict("bench");
}
