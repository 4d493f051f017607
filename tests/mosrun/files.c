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
 *   files pstale PATH    as sqlite reads its database: pread64s of PATH (512
 *			  KiB of one letter) opened read-write, 4 KiB at 0 then
 *			  on (a stream: read ahead), a page written at 256 KiB
 *			  and read back at once (from what it wrote); says
 *			  "read X W" and waits for PATH.go (PATH rewritten at
 *			  home with another letter meanwhile); takes a lock on
 *			  PATH and reads both pages again at once: the new
 *			  letter (a lock drops what was held); writes and reads
 *			  back a page again, reads on, says "again", waits for
 *			  PATH.go2 (rewritten again) and 1.2 s later reads both
 *			  kinds of page without a lock: the newest letter.
 *			  Prints "fresh X Y" or "stale: ...".
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

/* The letter of the page at off of fd, or 0 if not one letter. */
static int
page_is(int fd, off_t off)
{
	char	b[BLOCK];
	int	i;

	if (pread(fd, b, BLOCK, off) != BLOCK)
		return 0;
	for (i = 1; i < BLOCK; i++)
		if (b[i] != b[0])
			return 0;
	return b[0];
}

static void
wait_file(const char *path, const char *suffix)
{
	char	go[4096];

	snprintf(go, sizeof go, "%s%s", path, suffix);
	while (access(go, F_OK) != 0)
		usleep(20000);
}

static int
do_pstale(const char *path)
{
	struct flock	 lk;
	char		 w[BLOCK];
	int		 fd, a, b = 0, c;

	printf("start\n");
	if ((fd = open(path, O_RDWR)) == -1) {
		perror(path);
		return 1;
	}
	/*
	 * What PATH is (the first read), a page written at 256 KiB, a stream
	 * read ahead from 4 KiB (a window of 128 KiB), then the page read
	 * back (beyond the window: from what was written).
	 */
	a = page_is(fd, 0);
	memset(w, 'w', sizeof w);
	if (pwrite(fd, w, BLOCK, 262144) != BLOCK) {
		perror(path);
		return 1;
	}
	if (page_is(fd, 4096) != a || page_is(fd, 8192) != a ||
	    (b = page_is(fd, 262144)) != 'w') {
		printf("stale: read %c, then %c where w was written\n", a, b);
		return 1;
	}
	printf("read %c %c\n", a, b);
	wait_file(path, ".go");
	memset(&lk, 0, sizeof lk);
	lk.l_type = F_WRLCK;
	lk.l_whence = SEEK_SET;
	if (fcntl(fd, F_SETLKW, &lk) == -1) {
		perror("lock");
		return 1;
	}
	b = page_is(fd, 8192);
	c = page_is(fd, 262144);
	if (b == a || c != b) {
		printf("stale: after a lock, read %c and %c\n", b, c);
		return 1;
	}
	a = b;
	lk.l_type = F_UNLCK;
	fcntl(fd, F_SETLK, &lk);
	/* again, without a lock: a page written, then a window */
	memset(w, 'x', sizeof w);
	if (pwrite(fd, w, BLOCK, 266240) != BLOCK ||
	    page_is(fd, 266240) != 'x' || page_is(fd, 270336) != a ||
	    page_is(fd, 274432) != a) {
		printf("stale: wrote x at 260 KiB, or %c is gone\n", a);
		return 1;
	}
	printf("again\n");
	wait_file(path, ".go2");
	usleep(1200000);
	b = page_is(fd, 278528);
	c = page_is(fd, 266240);
	if (b == a || b != c) {
		printf("stale: read %c and %c 1.2 s after %c\n", b, c, a);
		return 1;
	}
	printf("fresh %c %c\n", a, b);
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
	if (argc == 3 && strcmp(argv[1], "pstale") == 0)
		return do_pstale(argv[2]);
	fprintf(stderr, "usage: files write PATH N | files stale PATH | "
	    "files pstale PATH\n");
	return 2;
}
