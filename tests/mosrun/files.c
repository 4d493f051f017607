/*
 * files: regular files read ahead and written behind (tests/lab/t-fast.sh).
 *
 *   files write PATH N   writes N numbered 4 KiB blocks to PATH, stopping
 *			  at the first error; then fsync and close. Reads PATH
 *			  back: it must hold blocks 0..M-1 in order, each once.
 *			  Prints "wrote M of N" and, if a call failed, "error
 *			  on CALL: ERRNO" (write K, fsync or close).
 *   files stale PATH     reads 8 KiB of PATH, says "read", waits for
 *			  PATH.go (its bytes rewritten at home meanwhile),
 *			  opens PATH again at once (close-to-open: what a new
 *			  descriptor reads must be the new bytes), then after
 *			  1.2 s reads on the first descriptor: the new bytes
 *			  too. Prints "fresh X" (what both read) or "stale".
 *
 * Exits 0, or 1 with what went wrong.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define BLOCK	4096

static void
block(char *b, long i)
{
	int	n;

	memset(b, 'a' + i % 26, BLOCK);
	n = snprintf(b, BLOCK, "block %ld\n", i);
	b[n] = '.';
	b[BLOCK - 1] = '\n';
}

static int
do_write(const char *path, long n)
{
	char	 b[BLOCK], r[BLOCK];
	long	 i, m;
	int	 fd, err = 0;

	if ((fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644)) == -1) {
		perror(path);
		return 1;
	}
	for (i = 0; i < n; i++) {
		block(b, i);
		if (write(fd, b, BLOCK) != BLOCK) {
			printf("error on write %ld: %s\n", i, strerror(errno));
			err = 1;
			break;
		}
	}
	if (fsync(fd) != 0 && !err) {
		printf("error on fsync: %s\n", strerror(errno));
		err = 1;
	}
	if (close(fd) != 0 && !err)
		printf("error on close: %s\n", strerror(errno));
	if ((fd = open(path, O_RDONLY)) == -1) {
		perror(path);
		return 1;
	}
	for (m = 0; read(fd, r, BLOCK) == BLOCK; m++) {
		block(b, m);
		if (memcmp(b, r, BLOCK) != 0) {
			printf("block %ld of %s is not block %ld\n", m, path, m);
			return 1;
		}
	}
	close(fd);
	printf("wrote %ld of %ld\n", m, n);
	return 0;
}

static int
do_stale(const char *path)
{
	char	 go[4096], b[BLOCK], now;
	int	 fd, fd2;

	snprintf(go, sizeof go, "%s.go", path);
	/*
	 * Its standard output known first (the first write to a descriptor
	 * may be to any file: it drops what was read ahead); then the first
	 * read says what PATH is, the second reads ahead.
	 */
	printf("start\n");
	if ((fd = open(path, O_RDONLY)) == -1 || read(fd, b, BLOCK) != BLOCK ||
	    read(fd, b, BLOCK) != BLOCK) {
		perror(path);
		return 1;
	}
	printf("read %c\n", b[0]);
	fflush(stdout);
	while (access(go, F_OK) != 0)
		usleep(20000);
	if ((fd2 = open(path, O_RDONLY)) == -1 || read(fd2, &now, 1) != 1) {
		perror(path);
		return 1;
	}
	usleep(1200000);
	if (read(fd, b, BLOCK) != BLOCK) {
		perror(path);
		return 1;
	}
	if (b[0] != now) {
		printf("stale: read %c after 1.2 s, %c opened again at once\n",
		    b[0], now);
		return 1;
	}
	printf("fresh %c\n", now);
	return 0;
}

int
main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc == 4 && strcmp(argv[1], "write") == 0)
		return do_write(argv[2], atol(argv[3]));
	if (argc == 3 && strcmp(argv[1], "stale") == 0)
		return do_stale(argv[2]);
	fprintf(stderr, "usage: files write PATH N | files stale PATH\n");
	return 2;
}
