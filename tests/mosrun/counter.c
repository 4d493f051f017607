/*
 * A test program for checkpoints: counts from 1 to N, a line a tick, into
 * FILE (kept open) and on its standard output, then writes "done". A run
 * recovered from a checkpoint rewrites FILE from the checkpoint's offset,
 * so FILE ends the same as after a run that never stopped. Descriptors it
 * inherits beyond 0-2 (a test harness's pipes) are closed first: they
 * could not be checkpointed.
 *
 *	counter N FILE [TICK_MS]
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

int
main(int argc, char **argv)
{
	struct timespec	 tick = { 0, 100 * 1000000L };
	char		 line[32];
	int		 i, n, fd, len;

	if (argc < 3 || (n = atoi(argv[1])) <= 0) {
		fprintf(stderr, "usage: counter N FILE [TICK_MS]\n");
		return 2;
	}
	if (argc > 3)
		tick.tv_nsec = atol(argv[3]) * 1000000L;
	close_range(3, ~0U, 0);
	if ((fd = open(argv[2], O_WRONLY | O_CREAT | O_TRUNC, 0644)) == -1) {
		perror(argv[2]);
		return 1;
	}
	for (i = 1; i <= n; i++) {
		len = snprintf(line, sizeof line, "%d\n", i);
		if (write(fd, line, len) != len || write(1, line, len) != len)
			return 1;
		nanosleep(&tick, NULL);
	}
	if (write(fd, "done\n", 5) != 5 || write(1, "done\n", 5) != 5)
		return 1;
	return 0;
}
