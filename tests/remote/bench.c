/*
 * The cost of a forwarded call: getppid and reads of 4 KiB and 64 KiB
 * from /dev/zero, run natively and under the loopback. Not run by make
 * check; see docs/FORWARDING-PERF.md. Usage: bench [iterations]
 */
#include <fcntl.h>
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
	int	 n = argc > 1 ? atoi(argv[1]) : 20000, i, fd;
	double	 t0, t1, t2, t3;

	fd = open("/dev/zero", O_RDONLY);
	CHECK(fd >= 0 && n > 0, "open");
	t0 = now_us();
	for (i = 0; i < n; i++)
		getppid();
	t1 = now_us();
	for (i = 0; i < n; i++)
		CHECK(read(fd, buf, 4096) == 4096, "read 4k");
	t2 = now_us();
	for (i = 0; i < n; i++)
		CHECK(read(fd, buf, 65536) == 65536, "read 64k");
	t3 = now_us();
	printf("getppid %.2f us, read 4 KiB %.2f us, read 64 KiB %.2f us\n",
	    (t1 - t0) / n, (t2 - t1) / n, (t3 - t2) / n);
	return rt_verdict("bench");
}
