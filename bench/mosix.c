/*
 * A synthetic program of the shape of one row of the MOSIX slowdown table
 * (bench/mosix-table): CPU work cut into slices, a system call after each
 * slice — a write of one block of a file, or a read of the block written
 * last, while there is I/O left to do, else an fstat — and the elapsed
 * time printed at the end.
 *
 *	mosix -c			iterations of the work loop per second
 *	mosix ITERS CALLS BYTES BLOCK FILE
 */
#include <sys/stat.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double
now(void)
{
	struct timespec	ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static volatile double	sink;

static void
work(long iters)
{
	double	x = sink;

	while (iters-- > 0)
		x = x * 1.000000001 + 1e-9;
	sink = x;
}

int
main(int argc, char **argv)
{
	long		 iters, calls, i, per;
	size_t		 bytes, block, done = 0;
	off_t		 woff = 0;
	struct stat	 st;
	char		*buf;
	double		 t0;
	int		 fd, rd = 0;

	if (argc == 2 && strcmp(argv[1], "-c") == 0) {
		t0 = now();
		work(200000000);
		printf("%.0f\n", 200000000 / (now() - t0));
		return 0;
	}
	if (argc != 6) {
		fprintf(stderr, "usage: mosix -c | mosix ITERS CALLS BYTES "
		    "BLOCK FILE\n");
		return 2;
	}
	iters = atol(argv[1]);
	calls = atol(argv[2]);
	bytes = strtoull(argv[3], NULL, 10);
	block = strtoull(argv[4], NULL, 10);
	if ((buf = calloc(1, block > 0 ? block : 1)) == NULL ||
	    (fd = open(argv[5], O_RDWR | O_CREAT | O_TRUNC, 0600)) == -1) {
		perror("mosix");
		return 1;
	}
	per = iters / (calls > 0 ? calls : 1);
	t0 = now();
	for (i = 0; i < calls; i++) {
		work(per);
		if (done < bytes) {
			/* a block written, then read back: both directions */
			if (rd && pread(fd, buf, block, woff - block) !=
			    (ssize_t)block)
				perror("read");
			else if (!rd && write(fd, buf, block) != (ssize_t)block)
				perror("write");
			else if (!rd)
				woff += block;
			rd = !rd;
			done += block;
		} else
			fstat(fd, &st);
	}
	printf("%.3f\n", now() - t0);
	close(fd);
	unlink(argv[5]);
	return 0;
}
