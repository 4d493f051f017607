/*
 * A test program for the write stub (docs/REMOTE.md, "The write stub"):
 * it writes a file of N blocks of 4 KiB, each holding its number and a
 * pattern of it, in bursts of 32 with 10 ms between (so that it can be
 * moved midway, and the stub's deadline and the agent's timer both come
 * into play), then reads the file back and checks every block: none lost,
 * none twice, none out of place.
 *
 *	writer PATH N [pwrite|thread|readback|signal]
 *
 * "pwrite" writes with pwrite64 at each block's offset instead of write;
 * "thread" starts a thread at half way, which writes the second half
 * while the first waits for it; "readback" reads the file on a second
 * descriptor as it goes, a block after each burst, and checks it, and
 * after the last burst reads the last block written, then writes over the
 * block it reads next (which it has read ahead of) and reads it there;
 * "signal" writes without the pauses, and a SIGALRM handler writes a
 * block of its own every 100 us (whatever the main flow is doing: in a
 * write among them); the check wants both sequences whole, each in its
 * order.
 * It prints "ready" after its first burst, "half" at half way, and "ok N
 * blocks" or what is wrong at the end.
 */
#include <sys/time.h>

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define BLOCK	4096
#define BURST	32
#define HMARK	1000000000L	/* the handler's blocks: HMARK + its count */

static const char	*mode = "write";
static long		 nblocks;
static int		 wfd, rfd = -1;
static long		 rnext;		/* the block rfd reads next */
static volatile sig_atomic_t hcount, hfail;	/* the handler's writes */

static void
block(unsigned char *b, long i)
{
	long	j;

	for (j = 0; j < BLOCK; j++)
		b[j] = (unsigned char)(i * 131 + j * 7 + j / 256);
	memcpy(b, &i, sizeof i);
}

/*
 * rfd's next block (or block at, pread), which must be block as written
 * (-1: its own): -1 if it is not.
 */
static int
readback(long at, long as)
{
	unsigned char	b[BLOCK], r[BLOCK];
	ssize_t		n;
	long		k = at >= 0 ? at : rnext++;

	if (at >= 0)
		n = pread(rfd, r, BLOCK, (off_t)at * BLOCK);
	else
		n = read(rfd, r, BLOCK);
	block(b, as >= 0 ? as : k);
	if (n != BLOCK || memcmp(b, r, BLOCK) != 0) {
		printf("read back block %ld: %s\n", k, n != BLOCK ? "short" :
		    "not what was written");
		return -1;
	}
	return 0;
}

/* Blocks from to to: -1 if one could not be written. */
static int
put(long from, long to)
{
	unsigned char		b[BLOCK];
	struct timespec		ts = { 0, 10 * 1000 * 1000 };
	ssize_t			n;
	long			i;

	for (i = from; i < to; i++) {
		block(b, i);
		if (strcmp(mode, "pwrite") == 0)
			n = pwrite(wfd, b, BLOCK, (off_t)i * BLOCK);
		else
			n = write(wfd, b, BLOCK);
		if (n != BLOCK) {
			printf("error on write %ld: %s\n", i,
			    n < 0 ? strerror(errno) : "short");
			return -1;
		}
		if ((i + 1) % BURST == 0) {
			if (i + 1 == BURST)
				printf("ready\n");
			if (rfd != -1 && readback(-1, -1) == -1)
				return -1;
			/* (the handler's: into the main flow's writes) */
			if (strcmp(mode, "signal") != 0)
				nanosleep(&ts, NULL);
		}
	}
	return 0;
}

/* Block k written over with block as, through wfd. */
static int
over(long k, long as)
{
	unsigned char	b[BLOCK];

	block(b, as);
	if (lseek(wfd, (off_t)k * BLOCK, SEEK_SET) == -1 ||
	    write(wfd, b, BLOCK) != BLOCK) {
		printf("over block %ld: %s\n", k, strerror(errno));
		return -1;
	}
	return 0;
}

static void
on_alarm(int sig)
{
	unsigned char	b[BLOCK];
	int		saved = errno;

	block(b, HMARK + hcount);
	if (write(wfd, b, BLOCK) == BLOCK)
		hcount++;
	else
		hfail = 1;
	errno = saved;
}

/* A SIGALRM every 100 us (on), or none. */
static int
alarms(int on)
{
	struct sigaction	sa;
	struct itimerval	it = { { 0, on ? 100 : 0 }, { 0, on ? 100 : 0 } };

	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_alarm;
	sa.sa_flags = SA_RESTART;
	if (on && sigaction(SIGALRM, &sa, NULL) == -1)
		return -1;
	return setitimer(ITIMER_REAL, &it, NULL);
}

static void *
second_half(void *arg)
{
	return (void *)(intptr_t)put(nblocks / 2, nblocks);
}

int
main(int argc, char **argv)
{
	unsigned char	b[BLOCK], r[BLOCK];
	pthread_t	t;
	void		*rv;
	long		m, h, id, want;
	int		fd;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc < 3 || argc > 4 || (nblocks = atol(argv[2])) < 2 ||
	    (argc == 4 && strcmp(argv[3], "pwrite") != 0 &&
	    strcmp(argv[3], "thread") != 0 &&
	    strcmp(argv[3], "readback") != 0 &&
	    strcmp(argv[3], "signal") != 0)) {
		fprintf(stderr, "usage: writer PATH N "
		    "[pwrite|thread|readback|signal]\n");
		return 2;
	}
	if (argc == 4)
		mode = argv[3];
	if ((wfd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC, 0644)) == -1) {
		perror(argv[1]);
		return 1;
	}
	if (strcmp(mode, "readback") == 0 &&
	    (rfd = open(argv[1], O_RDONLY)) == -1) {
		perror(argv[1]);
		return 1;
	}
	if (strcmp(mode, "signal") == 0 && alarms(1) == -1) {
		perror("setitimer");
		return 1;
	}
	if (put(0, nblocks / 2) == -1)
		return 1;
	printf("half\n");
	if (strcmp(mode, "thread") == 0) {
		if (pthread_create(&t, NULL, second_half, NULL) != 0 ||
		    pthread_join(t, &rv) != 0 || rv != NULL)
			return 1;
	} else if (put(nblocks / 2, nblocks) == -1)
		return 1;
	/*
	 * what was written last, through the other descriptor; and the block
	 * it reads next, written over (and back) through the first just
	 * before, read there (it has read ahead of it: those bytes are old)
	 */
	if (rfd != -1 && (readback(nblocks - 1, -1) == -1 ||
	    over(rnext, rnext + nblocks) == -1 ||
	    readback(-1, rnext + nblocks) == -1 ||
	    over(rnext - 1, rnext - 1) == -1 ||
	    readback(rnext - 1, -1) == -1 ||
	    lseek(wfd, 0, SEEK_END) == -1))
		return 1;
	if (strcmp(mode, "signal") == 0 && (alarms(0) == -1 || hfail)) {
		printf("the handler's write failed\n");
		return 1;
	}
	if (fsync(wfd) != 0 || close(wfd) != 0) {
		printf("error on fsync or close: %s\n", strerror(errno));
		return 1;
	}
	if ((fd = open(argv[1], O_RDONLY)) == -1) {
		perror(argv[1]);
		return 1;
	}
	/* the main flow's blocks in order, the handler's in theirs */
	for (m = h = 0; read(fd, r, BLOCK) == BLOCK; ) {
		memcpy(&id, r, sizeof id);
		want = id >= HMARK ? HMARK + h : m;
		block(b, want);
		if (memcmp(b, r, BLOCK) != 0) {
			printf("block %ld is not %ld (it says %ld)\n", m + h,
			    want, id);
			return 1;
		}
		if (id >= HMARK)
			h++;
		else
			m++;
	}
	close(fd);
	if (h != hcount) {
		printf("%ld of the handler's %ld blocks\n", h, (long)hcount);
		return 1;
	}
	if (h > 0)
		printf("ok %ld blocks, %ld by the handler\n", m, h);
	else
		printf("ok %ld blocks\n", m);
	return 0;
}
