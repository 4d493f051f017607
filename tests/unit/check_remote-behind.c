/*
 * check_remote's part for libremote/fiobehind.c: calls whose answer the
 * guest knows (docs/REMOTE.md, "Calls behind"), on this process's own
 * memory (R is us): an open's descriptor known from its reply, the fstat
 * after it answered here, an unlock and a close sent behind, the failures
 * they must still tell, and a seek and a terminal's ioctl answered here
 * (fileio.c's fio_here).
 */
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "libremote/internal.h"
#include "check_remote.h"
#include "proto/remote.pb-c.h"

/* The home's answer about fd, a regular file an open returned. */
static void
behind_opened(struct fio *f, int fd, int dir)
{
	Osm__RemoteFdInfo	m = OSM__REMOTE_FD_INFO__INIT;

	m.seq = 7;
	m.fd = fd;
	m.regular = !dir;
	m.directory = dir;
	m.readable = m.behind = !dir;
	m.dev = 1;
	m.ino = 20 + fd;
	m.size = 4096;
	m.has_mode = 1;
	m.mode = (dir ? S_IFDIR : S_IFREG) | 0644;
	m.nlink = 1;
	m.uid = 4242;
	m.blksize = 4096;
	m.blocks = 8;
	m.mtime_ns = 1700000000123456789ULL;
	fio_opened(f, &m);
}

START_TEST(test_behind)
{
	struct fio	 f;
	struct stat	 st;
	struct flock	 fl;
	uint64_t	 seq = 0, args[6];
	int64_t		 ret, expect;
	int		 kinds[16];
	long		 rv;
	size_t		 n;
	pid_t		 self = getpid();
	char		 data[512];

	memset(&f, 0, sizeof f);
	memset(data, 'a', sizeof data);
	ck_assert(fio_opens(SYS_openat, (uint64_t[6]){ -100, 0, O_RDWR }));
	ck_assert(!fio_opens(SYS_openat, (uint64_t[6]){ -100, 0, O_PATH }));

	/* the fstat right after the open: answered from the open's reply */
	behind_opened(&f, 5, 0);
	memset(&st, 0, sizeof st);
	uint64_t fs[6] = { 5, (uint64_t)"", (uint64_t)&st, AT_EMPTY_PATH };
	memcpy(args, fs, sizeof args);
	ck_assert_int_eq(fio_call(&f, self, 1, SYS_newfstatat, args, 0, &seq,
	    &rv), FIO_ANSWER);
	ck_assert_int_eq(rv, 0);
	ck_assert_uint_eq(st.st_ino, 25);
	ck_assert_int_eq(st.st_size, 4096);
	ck_assert_uint_eq(st.st_uid, 4242);
	ck_assert_int_eq(st.st_mtim.tv_nsec, 123456789);
	ck_assert(S_ISREG(st.st_mode));
	/* once: the next one is the file's now */
	memcpy(args, fs, sizeof args);
	ck_assert_int_eq(fio_call(&f, self, 2, SYS_newfstatat, args, 0, &seq,
	    &rv), FIO_PASS);
	/* not after any other call of R's */
	behind_opened(&f, 5, 0);
	uint64_t gp[6] = { 0 };
	memcpy(args, gp, sizeof args);
	ck_assert_int_eq(fio_call(&f, self, 3, SYS_getppid, args, 0, &seq,
	    &rv), FIO_PASS);
	memcpy(args, fs, sizeof args);
	ck_assert_int_eq(fio_call(&f, self, 4, SYS_newfstatat, args, 0, &seq,
	    &rv), FIO_PASS);

	/* known from the open: its first write goes behind */
	uint64_t pw[6] = { 5, (uint64_t)data, sizeof data, 0 };
	memcpy(args, pw, sizeof args);
	ck_assert_int_eq(fio_call(&f, self, 5, SYS_pwrite64, args, 0, &seq,
	    &rv), FIO_ANSWER);
	ck_assert_int_eq(rv, sizeof data);

	/* an unlock from the start: behind, after the write gathered */
	memset(&fl, 0, sizeof fl);
	fl.l_type = F_UNLCK;
	fl.l_whence = SEEK_SET;
	uint64_t ul[6] = { 5, F_SETLK, (uint64_t)&fl };
	memcpy(args, ul, sizeof args);
	ck_assert_int_eq(fio_call(&f, self, 6, SYS_fcntl, args, 0, &seq, &rv),
	    FIO_BEHIND);
	n = check_fio_kinds(&f, kinds, 16, NULL);
	ck_assert_uint_eq(n, 1);
	ck_assert_int_eq(kinds[0], 100 + SYS_pwrite64);
	/* as remote_forward sends it: its failure is the descriptor's */
	fio_sent_behind(&f, ++seq, SYS_fcntl, args, 0);
	ck_assert_int_eq(fio_behind_reply(&f, seq, -ENOLCK, -1, &expect), 1);
	memcpy(args, fs, sizeof args);
	ck_assert_int_eq(fio_call(&f, self, 7, SYS_fstat, args, 0, &seq, &rv),
	    FIO_ANSWER);
	ck_assert_int_eq(rv, -ENOLCK);
	/* what Linux would refuse, or a lock taken: home, as they are */
	fl.l_whence = SEEK_CUR;
	memcpy(args, ul, sizeof args);
	ck_assert_int_eq(fio_call(&f, self, 8, SYS_fcntl, args, 0, &seq, &rv),
	    FIO_PASS);
	fl.l_whence = SEEK_SET;
	fl.l_len = -1;
	memcpy(args, ul, sizeof args);
	ck_assert_int_eq(fio_call(&f, self, 9, SYS_fcntl, args, 0, &seq, &rv),
	    FIO_PASS);
	fl.l_len = 0;
	fl.l_pid = 1;
	uint64_t ou[6] = { 5, F_OFD_SETLK, (uint64_t)&fl };
	memcpy(args, ou, sizeof args);
	ck_assert_int_eq(fio_call(&f, self, 10, SYS_fcntl, args, 0, &seq,
	    &rv), FIO_PASS);
	fl.l_pid = 0;
	fl.l_type = F_WRLCK;
	memcpy(args, ul, sizeof args);
	ck_assert_int_eq(fio_call(&f, self, 11, SYS_fcntl, args, 0, &seq,
	    &rv), FIO_PASS);
	check_fio_kinds(&f, kinds, 16, NULL);

	/* written since its last fsync: its close waits for its answer */
	memcpy(args, pw, sizeof args);
	ck_assert_int_eq(fio_call(&f, self, 12, SYS_pwrite64, args, 0, &seq,
	    &rv), FIO_ANSWER);
	uint64_t sy[6] = { 5 };
	memcpy(args, sy, sizeof args);
	ck_assert_int_eq(fio_call(&f, self, 13, SYS_fdatasync, args, 0, &seq,
	    &rv), FIO_PASS);
	n = check_fio_kinds(&f, kinds, 16, NULL);
	ck_assert_uint_eq(n, 1);
	ck_assert_int_eq(fio_behind_reply(&f, seq, sizeof data, -1, &expect),
	    1);
	memcpy(args, pw, sizeof args);
	ck_assert_int_eq(fio_call(&f, self, 14, SYS_pwrite64, args, 0, &seq,
	    &rv), FIO_ANSWER);
	ret = 0;
	memcpy(args, sy, sizeof args);
	fio_result(&f, SYS_fdatasync, args, &ret, -1, 0);
	memcpy(args, sy, sizeof args);
	ck_assert_int_eq(fio_call(&f, self, 15, SYS_close, args, 0, &seq,
	    &rv), FIO_PASS);
	n = check_fio_kinds(&f, kinds, 16, NULL);
	ck_assert_uint_eq(n, 1);
	ck_assert_int_eq(kinds[0], 100 + SYS_pwrite64);
	/* that write failed, its reply before the close's: the close says */
	ck_assert_int_eq(fio_behind_reply(&f, seq, -ENOSPC, -1, &expect), 1);
	ret = 0;
	memcpy(args, sy, sizeof args);
	fio_result(&f, SYS_close, args, &ret, -1, 0);
	ck_assert_int_eq(ret, -ENOSPC);
	ck_assert_ptr_null(fio_find(&f, 5));

	/* synced since its last write: the close goes behind */
	behind_opened(&f, 6, 0);
	uint64_t pw6[6] = { 6, (uint64_t)data, sizeof data, 0 };
	memcpy(args, pw6, sizeof args);
	ck_assert_int_eq(fio_call(&f, self, 16, SYS_pwrite64, args, 0, &seq,
	    &rv), FIO_ANSWER);
	uint64_t sy6[6] = { 6 };
	memcpy(args, sy6, sizeof args);
	ck_assert_int_eq(fio_call(&f, self, 17, SYS_fdatasync, args, 0, &seq,
	    &rv), FIO_PASS);
	n = check_fio_kinds(&f, kinds, 16, NULL);
	ck_assert_int_eq(fio_behind_reply(&f, seq, sizeof data, -1, &expect),
	    1);
	ret = 0;
	fio_result(&f, SYS_fdatasync, args, &ret, -1, 0);
	memcpy(args, sy6, sizeof args);
	ck_assert_int_eq(fio_call(&f, self, 18, SYS_close, args, 0, &seq,
	    &rv), FIO_ANSWER);
	ck_assert_int_eq(rv, 0);
	n = check_fio_kinds(&f, kinds, 16, NULL);
	ck_assert_uint_eq(n, 1);
	ck_assert_int_eq(kinds[0], 100 + SYS_close);
	ck_assert_ptr_null(fio_find(&f, 6));

	/* a write behind failed: the close says so, and still closes */
	behind_opened(&f, 6, 0);
	memcpy(args, pw6, sizeof args);
	ck_assert_int_eq(fio_call(&f, self, 19, SYS_pwrite64, args, 0, &seq,
	    &rv), FIO_ANSWER);
	fio_flush(&f, &seq);
	check_fio_kinds(&f, kinds, 16, NULL);
	ck_assert_int_eq(fio_behind_reply(&f, seq, -ENOSPC, -1, &expect), 1);
	memcpy(args, sy6, sizeof args);
	ck_assert_int_eq(fio_call(&f, self, 20, SYS_close, args, 0, &seq,
	    &rv), FIO_ANSWER);
	ck_assert_int_eq(rv, -ENOSPC);
	n = check_fio_kinds(&f, kinds, 16, NULL);
	ck_assert_uint_eq(n, 1);
	ck_assert_int_eq(kinds[0], 100 + SYS_close);

	/* a directory's close: behind; another call on it goes home */
	behind_opened(&f, 7, 1);
	uint64_t d7[6] = { 7 };
	memcpy(args, d7, sizeof args);
	ck_assert_int_eq(fio_call(&f, self, 21, SYS_fsync, args, 0, &seq,
	    &rv), FIO_PASS);
	memcpy(args, d7, sizeof args);
	ck_assert_int_eq(fio_call(&f, self, 22, SYS_close, args, 0, &seq,
	    &rv), FIO_ANSWER);
	n = check_fio_kinds(&f, kinds, 16, NULL);
	ck_assert_uint_eq(n, 1);
	ck_assert_int_eq(kinds[0], 100 + SYS_close);

	/* strict: nothing of it */
	f.off = 1;
	behind_opened(&f, 8, 0);
	ck_assert_ptr_null(fio_find(&f, 8));
	fio_free(&f);
}
END_TEST

/* R's fcntl cmd of fd with a lock of type on bytes start, len. */
static enum fio_verdict
behind_lock(struct fio *f, int fd, int cmd, int type, off_t start,
    off_t len, int64_t ret)
{
	enum fio_verdict	v;
	struct flock		fl;
	uint64_t		seq = 0;
	long			rv;

	memset(&fl, 0, sizeof fl);
	fl.l_type = type;
	fl.l_whence = SEEK_SET;
	fl.l_start = start;
	fl.l_len = len;
	uint64_t a[6] = { fd, cmd, (uint64_t)&fl };
	v = fio_call(f, getpid(), 1, SYS_fcntl, a, 0, &seq, &rv);
	if (v == FIO_PASS)
		fio_result(f, SYS_fcntl, a, &ret, -1, 0);
	return v;
}

/*
 * A downgrade of a write lock R holds to a read lock goes behind; one of
 * bytes it does not hold write-locked, or after anything that may have
 * given up its locks unseen, goes home.
 */
START_TEST(test_behind_locks)
{
	struct fio	f;
	uint64_t	seq = 0;
	long		rv;

	memset(&f, 0, sizeof f);
	behind_opened(&f, 4, 0);
	behind_opened(&f, 5, 0);
	ck_assert_int_eq(behind_lock(&f, 4, F_SETLK, F_WRLCK, 100, 500, 0),
	    FIO_PASS);
	ck_assert_int_eq(behind_lock(&f, 4, F_SETLK, F_RDLCK, 100, 500, 0),
	    FIO_BEHIND);
	/* read-locked now, no more write-locked */
	ck_assert_int_eq(behind_lock(&f, 4, F_SETLK, F_RDLCK, 100, 500, 0),
	    FIO_PASS);
	/* a lock refused is not held */
	ck_assert_int_eq(behind_lock(&f, 4, F_SETLKW, F_WRLCK, 0, 0,
	    -EAGAIN), FIO_PASS);
	ck_assert_int_eq(behind_lock(&f, 4, F_SETLK, F_RDLCK, 0, 10, 0),
	    FIO_PASS);
	/* two write locks side by side cover what a downgrade names */
	ck_assert_int_eq(behind_lock(&f, 4, F_SETLK, F_WRLCK, 1000, 10, 0),
	    FIO_PASS);
	ck_assert_int_eq(behind_lock(&f, 4, F_SETLK, F_WRLCK, 1010, 0, 0),
	    FIO_PASS);
	ck_assert_int_eq(behind_lock(&f, 4, F_SETLK, F_RDLCK, 1005, 100, 0),
	    FIO_BEHIND);
	/* the part unlocked in the middle is no more held */
	ck_assert_int_eq(behind_lock(&f, 4, F_SETLK, F_UNLCK, 2000, 10, 0),
	    FIO_BEHIND);
	ck_assert_int_eq(behind_lock(&f, 4, F_SETLK, F_RDLCK, 1995, 10, 0),
	    FIO_PASS);
	ck_assert_int_eq(behind_lock(&f, 4, F_SETLK, F_RDLCK, 2010, 10, 0),
	    FIO_BEHIND);
	/* fd 5 is another file: its locks its own */
	ck_assert_int_eq(behind_lock(&f, 5, F_SETLK, F_RDLCK, 3000, 10, 0),
	    FIO_PASS);
	/* a directory's close gives up none */
	ck_assert_int_eq(behind_lock(&f, 4, F_SETLK, F_WRLCK, 4000, 10, 0),
	    FIO_PASS);
	behind_opened(&f, 9, 1);
	uint64_t c9[6] = { 9 };
	ck_assert_int_eq(fio_call(&f, getpid(), 2, SYS_close, c9, 0, &seq,
	    &rv), FIO_ANSWER);
	ck_assert_int_eq(behind_lock(&f, 4, F_SETLK, F_RDLCK, 4000, 10, 0),
	    FIO_BEHIND);
	/* a close of a descriptor not known may give up any lock */
	ck_assert_int_eq(behind_lock(&f, 4, F_SETLK, F_WRLCK, 5000, 10, 0),
	    FIO_PASS);
	uint64_t cl[6] = { 42 };
	ck_assert_int_eq(fio_call(&f, getpid(), 2, SYS_close, cl, 0, &seq,
	    &rv), FIO_PASS);
	ck_assert_int_eq(behind_lock(&f, 4, F_SETLK, F_RDLCK, 5000, 10, 0),
	    FIO_PASS);
	/* and so may a lock through one not known */
	ck_assert_int_eq(behind_lock(&f, 4, F_SETLK, F_WRLCK, 6000, 10, 0),
	    FIO_PASS);
	ck_assert_int_eq(behind_lock(&f, 43, F_SETLK, F_UNLCK, 0, 0, 0),
	    FIO_PASS);
	ck_assert_int_eq(behind_lock(&f, 4, F_SETLK, F_RDLCK, 6000, 10, 0),
	    FIO_PASS);
	/* a close of another of its file's descriptors gives up them all */
	ck_assert_int_eq(behind_lock(&f, 4, F_SETLK, F_WRLCK, 7000, 10, 0),
	    FIO_PASS);
	behind_opened(&f, 6, 0);
	f.fds[f.nfds - 1].ino = 24;	/* fd 4's file */
	uint64_t c6[6] = { 6 };
	fio_call(&f, getpid(), 3, SYS_close, c6, 0, &seq, &rv);
	ck_assert_int_eq(behind_lock(&f, 4, F_SETLK, F_RDLCK, 7000, 10, 0),
	    FIO_PASS);
	/* with threads, none kept */
	ck_assert_int_eq(behind_lock(&f, 4, F_SETLK, F_WRLCK, 8000, 10, 0),
	    FIO_PASS);
	f.threaded = 1;
	ck_assert_int_eq(behind_lock(&f, 4, F_SETLK, F_RDLCK, 8000, 10, 0),
	    FIO_PASS);
	fio_free(&f);
}
END_TEST

/* R's close of fd, as fio_call takes it: its verdict, its answer in *rv. */
static enum fio_verdict
behind_close(struct fio *f, int fd, uint64_t *seq, long *rv)
{
	uint64_t	args[6] = { fd };

	return fio_call(f, getpid(), 1, SYS_close, args, 0, seq, rv);
}

/*
 * Writes the stub in R took (fio_written) are writes like those fio_call
 * gathers: the close after them waits for its answer, though they were
 * answered at home meanwhile (its failure may be a late write's: NFS, a
 * quota), and an fstat after them is not one right after the open.
 */
START_TEST(test_behind_stub_writes)
{
	struct fio	 f;
	struct stat	 st;
	uint64_t	 seq = 0, args[6];
	int64_t		 expect;
	long		 rv;
	pid_t		 self = getpid();
	char		 data[100];

	memset(&f, 0, sizeof f);
	memset(data, 'b', sizeof data);

	/* no write: its close goes behind */
	behind_opened(&f, 6, 0);
	ck_assert_int_eq(behind_close(&f, 6, &seq, &rv), FIO_ANSWER);
	/* written in R, the writes sent and answered: its close waits */
	behind_opened(&f, 6, 0);
	fio_written(&f, 6, SYS_write, 0, (const uint8_t *)data, sizeof data,
	    &seq);
	fio_flush(&f, &seq);
	ck_assert_int_eq(fio_behind_reply(&f, seq, sizeof data, -1, &expect),
	    1);
	ck_assert_int_eq(behind_close(&f, 6, &seq, &rv), FIO_PASS);
	fio_free(&f);

	memset(&f, 0, sizeof f);
	behind_opened(&f, 7, 0);
	fio_written(&f, 7, SYS_write, 0, (const uint8_t *)data, sizeof data,
	    &seq);
	uint64_t fs[6] = { 7, (uint64_t)&st };
	memcpy(args, fs, sizeof args);
	ck_assert_int_eq(fio_call(&f, self, 3, SYS_fstat, args, 0, &seq, &rv),
	    FIO_PASS);
	fio_free(&f);
}
END_TEST

/*
 * A close behind that R left for a signal's handler, and makes again,
 * is answered as it was (it was made): not sent home, to say EBADF.
 */
START_TEST(test_behind_reclose)
{
	struct fio	 f;
	uint64_t	 seq = 0, c8[6] = { 8 };
	long		 rv;

	memset(&f, 0, sizeof f);
	behind_opened(&f, 8, 0);
	ck_assert_int_eq(behind_close(&f, 8, &seq, &rv), FIO_ANSWER);
	ck_assert_int_eq(rv, 0);
	fio_unanswered(&f, SYS_close, c8, rv);
	rv = -1;
	ck_assert_int_eq(behind_close(&f, 8, &seq, &rv), FIO_ANSWER);
	ck_assert_int_eq(rv, 0);
	/* once */
	ck_assert_int_eq(behind_close(&f, 8, &seq, &rv), FIO_PASS);
	fio_free(&f);
}
END_TEST

/* R's call nr (fd, a1, a2; busy: others on fd at home): fio_call's say. */
static enum fio_verdict
here_call(struct fio *f, int nr, int fd, uint64_t a1, uint64_t a2, int busy,
    uint64_t *seq, long *rv)
{
	uint64_t	args[6] = { fd, a1, a2 };

	return fio_call(f, getpid(), 1, nr, args, busy, seq, rv);
}

/* The home's answer ret to R's call nr on fd. */
static void
here_told(struct fio *f, int nr, int fd, int64_t ret)
{
	uint64_t	args[6] = { fd };

	fio_result(f, nr, args, &ret, -1, 0);
}

/*
 * A known regular file's lseek to SEEK_SET or SEEK_CUR and a terminal's
 * ioctl are answered here (fio_here): no message; what the lseek moved
 * R's offset by goes behind before anything that could see it. An lseek
 * that needs the home (SEEK_END, one below 0, one of a descriptor another
 * shares, one with another thread's call on it at home) and an ioctl the
 * file system may answer goes home. An answer R never had is undone.
 */
START_TEST(test_fileio_here)
{
	Osm__RemoteFdInfo	 info = OSM__REMOTE_FD_INFO__INIT;
	struct fio		 f;
	struct fio_fd		*e;
	uint8_t			 buf[4096];
	uint64_t		 seq = 0, args[6], by = 0;
	int			 kinds[16], fd;
	long			 rv;

	memset(&f, 0, sizeof f);
	for (fd = 5; fd <= 7; fd++) {
		/* 5: ENOTTY by its file system; 6: not; 7: shared */
		ck_assert_int_eq(here_call(&f, SYS_read, fd, (uint64_t)buf,
		    4096, 0, &seq, &rv), FIO_PASS);
		ck_assert_uint_eq(check_fio_kinds(&f, kinds, 16, NULL), 1);
		info.fd = fd;
		info.regular = info.readable = info.behind = 1;
		info.dev = 1;
		info.ino = fd;
		info.notty = fd == 5;
		info.shared = fd == 7;
		fio_info(&f, &info, 0);
		here_told(&f, SYS_read, fd, 4096);
	}

	ck_assert_int_eq(here_call(&f, SYS_ioctl, 5, TCGETS, (uint64_t)buf, 0,
	    &seq, &rv), FIO_ANSWER);
	ck_assert_int_eq(rv, -ENOTTY);
	ck_assert_int_eq(here_call(&f, SYS_ioctl, 5, TIOCGWINSZ,
	    (uint64_t)buf, 0, &seq, &rv), FIO_ANSWER);
	ck_assert_int_eq(rv, -ENOTTY);
	ck_assert_uint_eq(check_fio_kinds(&f, kinds, 16, NULL), 0);
	ck_assert_int_eq(here_call(&f, SYS_ioctl, 6, TCGETS, (uint64_t)buf, 0,
	    &seq, &rv), FIO_PASS);
	here_told(&f, SYS_ioctl, 6, -ENOTTY);

	/* where it is, and a seek back: nothing sent */
	ck_assert_int_eq(here_call(&f, SYS_lseek, 5, 0, SEEK_CUR, 0, &seq,
	    &rv), FIO_ANSWER);
	ck_assert_int_eq(rv, 4096);
	ck_assert_int_eq(here_call(&f, SYS_lseek, 5, 100, SEEK_SET, 0, &seq,
	    &rv), FIO_ANSWER);
	ck_assert_int_eq(rv, 100);
	ck_assert_uint_eq(check_fio_kinds(&f, kinds, 16, NULL), 0);
	e = fio_find(&f, 5);
	ck_assert_uint_eq(e->pos, 100);

	/* R left the call for a signal: as if it had not been made */
	uint64_t f5[6] = { 5, 1000, SEEK_CUR };
	memcpy(args, f5, sizeof args);
	ck_assert_int_eq(fio_call(&f, getpid(), 8, SYS_lseek, args, 0, &seq,
	    &rv), FIO_ANSWER);
	ck_assert_int_eq(rv, 1100);
	fio_unanswered(&f, SYS_lseek, args, rv);
	ck_assert_uint_eq(e->pos, 100);

	/* below 0, from the end, another thread's: home, owed first */
	ck_assert_int_eq(here_call(&f, SYS_lseek, 5, (uint64_t)-200, SEEK_CUR,
	    0, &seq, &rv), FIO_PASS);
	ck_assert_uint_eq(check_fio_kinds(&f, kinds, 16, &by), 1);
	ck_assert_int_eq(kinds[0], 100 + SYS_lseek);
	ck_assert_int_eq((int64_t)by, 100 - 4096);
	here_told(&f, SYS_lseek, 5, -EINVAL);
	ck_assert_int_eq(here_call(&f, SYS_lseek, 5, 0, SEEK_END, 0, &seq,
	    &rv), FIO_PASS);
	here_told(&f, SYS_lseek, 5, 300000);
	ck_assert_int_eq(here_call(&f, SYS_lseek, 5, 0, SEEK_CUR, 1, &seq,
	    &rv), FIO_PASS);
	here_told(&f, SYS_lseek, 5, 300000);
	ck_assert_int_eq(here_call(&f, SYS_lseek, 5, 0, SEEK_CUR, 0, &seq,
	    &rv), FIO_ANSWER);
	ck_assert_int_eq(rv, 300000);

	/*
	 * FIONREAD is the VFS's (the size left): at home; the offset is
	 * not known after an ioctl that did something
	 */
	ck_assert_int_eq(here_call(&f, SYS_ioctl, 5, FIONREAD, (uint64_t)buf,
	    0, &seq, &rv), FIO_PASS);
	here_told(&f, SYS_ioctl, 5, 0);
	ck_assert_int_eq(here_call(&f, SYS_lseek, 5, 0, SEEK_CUR, 0, &seq,
	    &rv), FIO_PASS);

	/* another descriptor of P's shares it: its offset is not ours */
	ck_assert_int_eq(here_call(&f, SYS_lseek, 7, 0, SEEK_CUR, 0, &seq,
	    &rv), FIO_PASS);
	ck_assert_uint_eq(f.stats_here, 6);
	fio_free(&f);
}
END_TEST

void
check_remote_behind(Suite *s)
{
	TCase	*tc = tcase_create("behind");

	tcase_add_test(tc, test_behind);
	tcase_add_test(tc, test_behind_locks);
	tcase_add_test(tc, test_behind_stub_writes);
	tcase_add_test(tc, test_behind_reclose);
	tcase_add_test(tc, test_fileio_here);
	suite_add_tcase(s, tc);
}
