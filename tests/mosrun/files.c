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
 *   files dup PATH       the offset shared by a descriptor and its
 *			  duplicate: writes PATH (1 MiB, each 8 bytes its own
 *			  number), then for each of dup, dup2, dup3, F_DUPFD
 *			  and F_DUPFD_CLOEXEC reads a new descriptor of it
 *			  (read ahead), duplicates it and reads both in turn;
 *			  moves its offset by copy_file_range, sendfile and
 *			  splice with no offset of their own, readv and
 *			  preadv2 at -1, and reads on; writes PATH.w through
 *			  a descriptor and its duplicate in turn and reads
 *			  back what each wrote, and through one made O_APPEND
 *			  by fcntl after a seek. Every byte read is checked
 *			  against what it must be; prints a line per case.
 *   files big PATH       reads larger than a window: writes PATH (10 MiB and
 *			  1000 bytes, each byte a function of its place), reads
 *			  1000 bytes of it, then the rest in one read of 16
 *			  MiB, a read at its end, a pread64 of 6 MiB at 3,
 *			  checking every byte and the offset after each; says
 *			  "read", waits for PATH.go (PATH rewritten at home
 *			  by files bigwrite PATH 1 meanwhile), seeks to 0 and
 *			  reads it all in one read: the new bytes at once.
 *			  Prints "fresh" or what was stale.
 *   files bigwrite PATH G  writes PATH as big does, generation G.
 *
 * Exits 0, or 1 with what went wrong.
 */
#include <sys/sendfile.h>
#include <sys/uio.h>

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

#define DUP_SIZE	(1 << 20)

/* The byte at off of files dup's PATH: 8 bytes each its own number. */
static char
dup_byte(off_t off)
{
	char	rec[32];

	snprintf(rec, sizeof rec, "%07lld\n", (long long)(off / 8));
	return rec[off % 8];
}

/*
 * Are the n bytes at b those at off of PATH? If not, say where they are
 * from (the first whole record's number says).
 */
static int
dup_same(const char *what, const char *b, size_t n, off_t off)
{
	size_t	i, j;
	long	rec;

	for (i = 0; i < n; i++) {
		if (b[i] != dup_byte(off + i))
			break;
	}
	if (i == n)
		return 1;
	for (j = 0; j < n && b[j] != '\n'; j++)
		;
	if (j + 8 < n && sscanf(b + j + 1, "%7ld", &rec) == 1)
		printf("%s: read the bytes at %lld, not at %lld\n", what,
		    (long long)(rec * 8 - (long)j - 1), (long long)off);
	else
		printf("%s: byte %lld is not the file's\n", what,
		    (long long)(off + i));
	return 0;
}

/* read(fd, n) where the offset shared is *off, which moves by it. */
static int
dup_read(const char *what, int fd, size_t n, off_t *off)
{
	char	b[8192];
	ssize_t	got;

	if ((got = read(fd, b, n)) != (ssize_t)n) {
		printf("%s: read %zd of %zu: %s\n", what, got, n,
		    strerror(errno));
		return 0;
	}
	if (!dup_same(what, b, n, *off))
		return 0;
	*off += n;
	return 1;
}

/* A new descriptor of PATH, read ahead: 3 reads, the last from a window. */
static int
dup_open(const char *path, off_t *off)
{
	int	fd, i;

	*off = 0;
	if ((fd = open(path, O_RDONLY)) == -1) {
		perror(path);
		return -1;
	}
	for (i = 0; i < 3; i++) {
		if (!dup_read("first reads", fd, 1000, off))
			return -1;
	}
	return fd;
}

static int
dup_of(int how, int fd)
{
	switch (how) {
	case 0:
		return dup(fd);
	case 1:
		return dup2(fd, 40);
	case 2:
		return dup3(fd, 41, O_CLOEXEC);
	case 3:
		return fcntl(fd, F_DUPFD, 50);
	default:
		return fcntl(fd, F_DUPFD_CLOEXEC, 60);
	}
}

static const char *dup_names[] = {
	"dup", "dup2", "dup3", "F_DUPFD", "F_DUPFD_CLOEXEC"
};

/* Both descriptors read in turn, one offset; an lseek says where. */
static int
dup_reads(const char *path, int how)
{
	const char	*name = dup_names[how];
	off_t		 off;
	int		 a, b;

	if ((a = dup_open(path, &off)) == -1)
		return 0;
	if ((b = dup_of(how, a)) == -1) {
		printf("%s: %s\n", name, strerror(errno));
		return 0;
	}
	if (!dup_read(name, b, 1000, &off) || !dup_read(name, a, 1000, &off))
		return 0;
	if (lseek(a, 0, SEEK_CUR) != off) {
		printf("%s: lseek says %lld, not %lld\n", name,
		    (long long)lseek(a, 0, SEEK_CUR), (long long)off);
		return 0;
	}
	if (!dup_read(name, a, 1000, &off) || !dup_read(name, b, 1000, &off) ||
	    !dup_read(name, a, 1000, &off) || !dup_read(name, a, 5000, &off))
		return 0;
	close(b);
	if (!dup_read(name, a, 1000, &off) || !dup_read(name, a, 1000, &off))
		return 0;
	close(a);
	printf("%s: one offset, %lld\n", name, (long long)off);
	return 1;
}

/* copy_file_range to a file not read or written yet, then reads on. */
static int
dup_copy(const char *path)
{
	char	out[4096], b[4096];
	off_t	off, at;
	int	a, o;
	ssize_t	n;

	snprintf(out, sizeof out, "%s.out", path);
	if ((a = dup_open(path, &off)) == -1 ||
	    (o = open(out, O_RDWR | O_CREAT | O_TRUNC, 0644)) == -1)
		return 0;
	at = off;
	if ((n = copy_file_range(a, NULL, o, NULL, 3000, 0)) != 3000) {
		printf("copy_file_range: %zd: %s\n", n, strerror(errno));
		return 0;
	}
	off += n;
	if (!dup_read("copy_file_range", a, 1000, &off) ||
	    pread(o, b, 3000, 0) != 3000 ||
	    !dup_same("copy_file_range's copy", b, 3000, at))
		return 0;
	close(a);
	close(o);
	printf("copy_file_range: %lld\n", (long long)off);
	return 1;
}

/* sendfile to a file written a moment before (known), then reads on. */
static int
dup_sendfile(const char *path)
{
	char	out[4096], b[4096];
	off_t	off, at;
	int	a, o;
	ssize_t	n;

	snprintf(out, sizeof out, "%s.out", path);
	if ((a = dup_open(path, &off)) == -1 ||
	    (o = open(out, O_RDWR | O_CREAT | O_TRUNC, 0644)) == -1 ||
	    write(o, "x", 1) != 1 || write(o, "y", 1) != 1)
		return 0;
	at = off;
	if ((n = sendfile(o, a, NULL, 3000)) != 3000) {
		printf("sendfile: %zd: %s\n", n, strerror(errno));
		return 0;
	}
	off += n;
	if (!dup_read("sendfile", a, 1000, &off) ||
	    pread(o, b, 3000, 2) != 3000 ||
	    !dup_same("sendfile's copy", b, 3000, at))
		return 0;
	/* one with an offset of its own moves none */
	at = 100000;
	if (sendfile(o, a, &at, 100) != 100 || at != 100100 ||
	    !dup_read("sendfile at 100000", a, 1000, &off))
		return 0;
	close(a);
	close(o);
	printf("sendfile: %lld\n", (long long)off);
	return 1;
}

/* splice into a pipe, then reads on. */
static int
dup_splice(const char *path)
{
	char	b[4096];
	off_t	off, at;
	int	a, p[2];
	ssize_t	n;

	if ((a = dup_open(path, &off)) == -1 || pipe(p) == -1)
		return 0;
	at = off;
	if ((n = splice(a, NULL, p[1], NULL, 2000, 0)) != 2000) {
		printf("splice: %zd: %s\n", n, strerror(errno));
		return 0;
	}
	off += n;
	if (!dup_read("splice", a, 1000, &off) ||
	    read(p[0], b, 2000) != 2000 || !dup_same("splice's", b, 2000, at))
		return 0;
	close(a);
	close(p[0]);
	close(p[1]);
	printf("splice: %lld\n", (long long)off);
	return 1;
}

/* readv, and preadv2 at -1 (at the offset, which it moves), reads on. */
static int
dup_vec(const char *path)
{
	struct iovec	iov[2];
	char		b[4096], c[4096];
	off_t		off;
	int		a;

	if ((a = dup_open(path, &off)) == -1)
		return 0;
	iov[0].iov_base = b;
	iov[0].iov_len = 500;
	iov[1].iov_base = c;
	iov[1].iov_len = 700;
	if (readv(a, iov, 2) != 1200 || !dup_same("readv", b, 500, off) ||
	    !dup_same("readv", c, 700, off + 500))
		return 0;
	off += 1200;
	if (!dup_read("readv", a, 1000, &off))
		return 0;
	if (preadv2(a, iov, 1, -1, 0) != 500 ||
	    !dup_same("preadv2", b, 500, off))
		return 0;
	off += 500;
	if (!dup_read("preadv2", a, 1000, &off) ||
	    !dup_read("preadv2", a, 1000, &off))
		return 0;
	close(a);
	printf("readv, preadv2: %lld\n", (long long)off);
	return 1;
}

/* The page of fd at off: letter l throughout? */
static int
dup_page(const char *what, int fd, off_t off, int l)
{
	char	b[BLOCK];
	int	i;

	if (pread(fd, b, BLOCK, off) != BLOCK) {
		printf("%s: no page at %lld\n", what, (long long)off);
		return 0;
	}
	for (i = 0; i < BLOCK; i++) {
		if (b[i] != l) {
			printf("%s: page at %lld is %c, not %c\n", what,
			    (long long)off, b[i], l);
			return 0;
		}
	}
	return 1;
}

/* Writes through a descriptor and its duplicate in turn, read back. */
static int
dup_writes(const char *path, int how)
{
	const char	*name = dup_names[how];
	char		 w[4096], p[BLOCK];
	int		 a, b;

	snprintf(w, sizeof w, "%s.w", path);
	if ((a = open(w, O_RDWR | O_CREAT | O_TRUNC, 0644)) == -1) {
		perror(w);
		return 0;
	}
	memset(p, 'a', sizeof p);
	if (write(a, p, BLOCK) != BLOCK || write(a, p, BLOCK) != BLOCK ||
	    (b = dup_of(how, a)) == -1)
		return 0;
	memset(p, 'b', sizeof p);
	if (write(b, p, BLOCK) != BLOCK)
		return 0;
	memset(p, 'c', sizeof p);
	if (write(a, p, BLOCK) != BLOCK ||
	    !dup_page(name, a, BLOCK, 'a') || !dup_page(name, a, 2 * BLOCK, 'b') ||
	    !dup_page(name, a, 3 * BLOCK, 'c'))
		return 0;
	if (lseek(a, 0, SEEK_CUR) != 4 * BLOCK) {
		printf("%s: lseek says %lld after 4 pages\n", name,
		    (long long)lseek(a, 0, SEEK_CUR));
		return 0;
	}
	memset(p, 'd', sizeof p);
	if (write(b, p, BLOCK) != BLOCK)
		return 0;
	memset(p, 'e', sizeof p);
	if (write(a, p, BLOCK) != BLOCK ||
	    !dup_page(name, a, 4 * BLOCK, 'd') ||
	    !dup_page(name, a, 5 * BLOCK, 'e') ||
	    !dup_page(name, b, 3 * BLOCK, 'c'))
		return 0;
	close(a);
	close(b);
	printf("%s: writes in turn, read back\n", name);
	return 1;
}

/* Made O_APPEND by fcntl: a write after a seek lands at the end. */
static int
dup_append(const char *path)
{
	char	w[4096], p[BLOCK];
	int	a;

	snprintf(w, sizeof w, "%s.w", path);
	if ((a = open(w, O_RDWR | O_CREAT | O_TRUNC, 0644)) == -1) {
		perror(w);
		return 0;
	}
	memset(p, 'a', sizeof p);
	if (write(a, p, BLOCK) != BLOCK || write(a, p, BLOCK) != BLOCK ||
	    fcntl(a, F_SETFL, O_APPEND) == -1 || lseek(a, 0, SEEK_SET) != 0)
		return 0;
	memset(p, 'b', sizeof p);
	if (write(a, p, BLOCK) != BLOCK || !dup_page("O_APPEND", a, 0, 'a') ||
	    !dup_page("O_APPEND", a, 2 * BLOCK, 'b'))
		return 0;
	close(a);
	printf("O_APPEND: written at the end\n");
	return 1;
}

static int
do_dup(const char *path)
{
	char	b[65536];
	off_t	off;
	int	fd, how, bad = 0;
	size_t	i;

	if ((fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644)) == -1) {
		perror(path);
		return 1;
	}
	for (off = 0; off < DUP_SIZE; off += sizeof b) {
		for (i = 0; i < sizeof b; i++)
			b[i] = dup_byte(off + i);
		if (write(fd, b, sizeof b) != sizeof b) {
			perror(path);
			return 1;
		}
	}
	if (close(fd) != 0) {
		perror(path);
		return 1;
	}
	/* each case on its own descriptors: one failing says so, and on */
	for (how = 0; how < 5; how++)
		bad += !dup_reads(path, how);
	bad += !dup_copy(path) + !dup_sendfile(path) + !dup_splice(path) +
	    !dup_vec(path);
	for (how = 0; how < 5; how++)
		bad += !dup_writes(path, how);
	bad += !dup_append(path);
	if (bad > 0)
		return 1;
	printf("ok\n");
	return 0;
}

#define BIG_SIZE	((10L << 20) + 1000)
#define BIG_READ	(16L << 20)

static unsigned char
big_byte(off_t i, int g)
{
	return (unsigned char)((i * 131 + i / 4099) ^ (g * 0x5a));
}

static int
do_bigwrite(const char *path, int g)
{
	unsigned char	b[65536];
	off_t		off;
	size_t		i, n;
	int		fd;

	if ((fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644)) == -1) {
		perror(path);
		return 1;
	}
	for (off = 0; off < BIG_SIZE; off += n) {
		n = (size_t)(BIG_SIZE - off) < sizeof b ?
		    (size_t)(BIG_SIZE - off) : sizeof b;
		for (i = 0; i < n; i++)
			b[i] = big_byte(off + i, g);
		if (write(fd, b, n) != (ssize_t)n) {
			perror(path);
			return 1;
		}
	}
	return close(fd) == 0 ? 0 : 1;
}

/* Are the n bytes of b, read at off, generation g's? Says where not. */
static int
big_check(const char *what, const unsigned char *b, off_t off, ssize_t n,
    ssize_t want, int g)
{
	ssize_t	i;

	if (n != want) {
		printf("%s: read %zd bytes at %lld, not %zd\n", what, n,
		    (long long)off, want);
		return 0;
	}
	for (i = 0; i < n; i++) {
		if (b[i] != big_byte(off + i, g)) {
			printf("%s: byte at %lld is not generation %d's\n",
			    what, (long long)(off + i), g);
			return 0;
		}
	}
	return 1;
}

static int
do_big(const char *path)
{
	unsigned char	*b = malloc(BIG_READ);
	int		 fd;

	if (b == NULL || do_bigwrite(path, 0) != 0)
		return 1;
	printf("start\n");
	if ((fd = open(path, O_RDONLY)) == -1) {
		perror(path);
		return 1;
	}
	if (!big_check("first", b, 0, read(fd, b, 1000), 1000, 0) ||
	    !big_check("rest", b, 1000, read(fd, b, BIG_READ),
	    BIG_SIZE - 1000, 0) ||
	    !big_check("end", b, BIG_SIZE, read(fd, b, BIG_READ), 0, 0))
		return 1;
	if (lseek(fd, 0, SEEK_CUR) != BIG_SIZE) {
		printf("offset %lld after the end\n",
		    (long long)lseek(fd, 0, SEEK_CUR));
		return 1;
	}
	if (!big_check("pread", b, 3, pread(fd, b, 6L << 20, 3), 6L << 20,
	    0))
		return 1;
	if (lseek(fd, 0, SEEK_CUR) != BIG_SIZE) {
		printf("offset %lld after the pread\n",
		    (long long)lseek(fd, 0, SEEK_CUR));
		return 1;
	}
	printf("read\n");
	wait_file(path, ".go");
	if (lseek(fd, 0, SEEK_SET) != 0 || !big_check("again", b, 0,
	    read(fd, b, BIG_READ), BIG_SIZE, 1))
		return 1;
	close(fd);
	free(b);
	printf("fresh\n");
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
	if (argc == 3 && strcmp(argv[1], "dup") == 0)
		return do_dup(argv[2]);
	if (argc == 3 && strcmp(argv[1], "big") == 0)
		return do_big(argv[2]);
	if (argc == 4 && strcmp(argv[1], "bigwrite") == 0)
		return do_bigwrite(argv[2], atoi(argv[3]));
	fprintf(stderr, "usage: files write PATH N | files stale PATH | "
	    "files pstale PATH | files dup PATH | files big PATH | "
	    "files bigwrite PATH G\n");
	return 2;
}
