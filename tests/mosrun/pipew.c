/*
 * A test program for writes to pipes away (tests/lab/t-pipes.sh), each a
 * write(2) of its own on its standard output (and error):
 *
 *	pipew many N SIZE	N writes of SIZE bytes (at most 4096), the
 *				i-th its number in text, padded with '.'
 *	pipew both N		"out I" on 1 and "err I" on 2 in turn, N each
 *	pipew epipe		SIGPIPE ignored: lines until a write fails,
 *				then on 2 "EPIPE after K writes, T ms"
 *	pipew sigpipe		lines until SIGPIPE ends it
 *	pipew tick N		N lines a second apart, each saying when it
 *				was written (CLOCK_REALTIME, ns)
 *	pipew slow N MS		"line I" for I in 0..N-1, MS ms apart, then
 *				"done"
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static long long
now_ns(clockid_t id)
{
	struct timespec	ts;

	clock_gettime(id, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static int
put(int fd, const char *buf, size_t len)
{
	ssize_t	n = write(fd, buf, len);

	if (n == (ssize_t)len)
		return 0;
	if (n == -1 && errno == EPIPE)
		return -1;
	fprintf(stderr, "write: %zd of %zu: %s\n", n, len, strerror(errno));
	exit(1);
}

int
main(int argc, char **argv)
{
	struct timespec	 second = { 1, 0 };
	char		 buf[4096];
	long long	 t0;
	long		 i, n = argc > 2 ? atol(argv[2]) : 0;
	size_t		 size;
	int		 len;

	if (argc < 2)
		goto usage;
	if (strcmp(argv[1], "many") == 0 && argc == 4) {
		size = (size_t)atol(argv[3]);
		if (size < 8 || size > sizeof buf)
			goto usage;
		for (i = 0; i < n; i++) {
			memset(buf, '.', size);
			len = snprintf(buf, size, "%ld", i);
			buf[len] = '.';
			buf[size - 1] = '\n';
			put(1, buf, size);
		}
		return 0;
	}
	if (strcmp(argv[1], "both") == 0) {
		for (i = 0; i < n; i++) {
			len = snprintf(buf, sizeof buf, "out %ld\n", i);
			put(1, buf, len);
			len = snprintf(buf, sizeof buf, "err %ld\n", i);
			put(2, buf, len);
		}
		return 0;
	}
	if (strcmp(argv[1], "epipe") == 0 || strcmp(argv[1], "sigpipe") == 0) {
		if (argv[1][0] == 'e')
			signal(SIGPIPE, SIG_IGN);
		t0 = now_ns(CLOCK_MONOTONIC);
		for (i = 0; ; i++) {
			len = snprintf(buf, sizeof buf, "line %ld\n", i);
			if (put(1, buf, len) == -1)
				break;
		}
		fprintf(stderr, "EPIPE after %ld writes, %lld ms\n", i,
		    (now_ns(CLOCK_MONOTONIC) - t0) / 1000000);
		return 0;
	}
	if (strcmp(argv[1], "slow") == 0 && argc == 4) {
		second.tv_sec = 0;
		second.tv_nsec = atol(argv[3]) * 1000000L;
		for (i = 0; i < n; i++) {
			len = snprintf(buf, sizeof buf, "line %ld\n", i);
			put(1, buf, len);
			nanosleep(&second, NULL);
		}
		put(1, "done\n", 5);
		return 0;
	}
	if (strcmp(argv[1], "tick") == 0) {
		for (i = 0; i < n; i++) {
			if (i > 0)
				nanosleep(&second, NULL);
			len = snprintf(buf, sizeof buf, "tick %ld %lld\n", i,
			    now_ns(CLOCK_REALTIME));
			put(1, buf, len);
		}
		return 0;
	}
usage:
	fprintf(stderr, "usage: pipew many N SIZE | both N | epipe | "
	    "sigpipe | tick N | slow N MS\n");
	return 2;
}
