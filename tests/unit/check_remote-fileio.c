/*
 * check_remote's part for libremote/fileio.c: regular files read ahead and
 * written behind, the guest's bookkeeping alone, on this process's own
 * memory (R is us): what a read, a write, a seek and another call become,
 * what goes home and in which order, and a failure behind told later.
 */
#include <sys/syscall.h>

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "libremote/internal.h"
#include "check_remote.h"
#include "proto/remote.pb-c.h"

/* The kinds of what fio has to send, in order, into kinds[]. */
static size_t
drain(struct fio *f, int *kinds, size_t max, uint64_t *lseek_by)
{
	Osm__RemoteCall	*c;
	uint8_t		*msg;
	size_t		 len, n = 0;
	int		 kind;

	while (fio_out(f, 1, &kind, &msg, &len)) {
		ck_assert_uint_lt(n, max);
		if (kind == REMOTE_OUT_CALL) {
			c = osm__remote_call__unpack(NULL, len, msg);
			ck_assert_ptr_nonnull(c);
			ck_assert(c->behind);
			kind = 100 + c->nr;
			if (c->nr == SYS_lseek && lseek_by != NULL)
				*lseek_by = c->args[1];
			osm__remote_call__free_unpacked(c, NULL);
		}
		kinds[n++] = kind;
		free(msg);
	}
	return n;
}

/*
 * What fio has to send, in order (calls behind as 100 + nr); the last
 * lseek's offset into *lseek_by if not NULL.
 */
size_t
check_fio_kinds(struct fio *f, int *kinds, size_t max, uint64_t *lseek_by)
{
	return drain(f, kinds, max, lseek_by);
}

/*
 * fio_data on a copy of m whose bytes are on the heap, as the unpacked
 * message's are: a window kept takes them.
 */
int
check_fio_data(struct fio *f, const Osm__RemoteReadData *m, int valid,
    uint64_t *seq, long *rv)
{
	Osm__RemoteReadData	d = *m;
	int			rc;

	d.data.data = malloc(m->data.len > 0 ? m->data.len : 1);
	ck_assert_ptr_nonnull(d.data.data);
	if (m->data.len > 0)
		memcpy(d.data.data, m->data.data, m->data.len);
	rc = fio_data(f, &d, valid, seq, rv);
	free(d.data.data);
	return rc;
}

START_TEST(test_fileio)
{
	Osm__RemoteFdInfo	 info = OSM__REMOTE_FD_INFO__INIT;
	Osm__RemoteReadData	 data = OSM__REMOTE_READ_DATA__INIT;
	struct fio		 f;
	uint8_t			 file[300000], buf[8192];
	uint64_t		 seq = 0, args[6], by = 0;
	int64_t			 ret, expect;
	int			 kinds[16];
	long			 rv;
	size_t			 i, n;
	pid_t			 self = getpid();

	memset(&f, 0, sizeof f);
	for (i = 0; i < sizeof file; i++)
		file[i] = i * 7;

	/* the first read goes home, after the question about fd 5 */
	uint64_t r1[6] = { 5, (uint64_t)buf, 4096 };
	memcpy(args, r1, sizeof args);
	ck_assert_int_eq(fio_call(&f, self, 1, SYS_read, args, 0, &seq, &rv),
	    FIO_PASS);
	n = drain(&f, kinds, 16, NULL);
	ck_assert_uint_eq(n, 1);
	ck_assert_int_eq(kinds[0], REMOTE_OUT_FD_ASK);
	info.fd = 5;
	info.regular = info.readable = info.behind = 1;
	info.dev = 1;
	info.ino = 2;
	info.pos = 0;
	fio_info(&f, &info, 0);
	ret = 4096;
	fio_result(&f, SYS_read, args, &ret, -1, 0);

	/* the next waits for a window, then takes its bytes from it */
	memcpy(args, r1, sizeof args);
	ck_assert_int_eq(fio_call(&f, self, 2, SYS_read, args, 0, &seq, &rv),
	    FIO_WAIT);
	n = drain(&f, kinds, 16, NULL);
	ck_assert_uint_eq(n, 1);
	ck_assert_int_eq(kinds[0], REMOTE_OUT_READ);
	data.seq = f.wait_seq;
	data.has_data = data.has_size = 1;
	data.data.data = file + 4096;
	data.data.len = 128 << 10;
	data.size = sizeof file;
	ck_assert_int_eq(check_fio_data(&f, &data, 1, &seq, &rv), 1);
	ck_assert_int_eq(rv, 4096);
	ck_assert(memcmp(buf, file + 4096, 4096) == 0);
	memcpy(args, r1, sizeof args);
	ck_assert_int_eq(fio_call(&f, self, 3, SYS_read, args, 0, &seq, &rv),
	    FIO_ANSWER);
	ck_assert_int_eq(rv, 4096);
	ck_assert(memcmp(buf, file + 8192, 4096) == 0);
	ck_assert_uint_eq(drain(&f, kinds, 16, NULL), 0);

	/*
	 * What R owes the home's offset goes behind before R's SEEK_CUR
	 * that goes home (with another thread's call on the descriptor at
	 * home, as here), which goes as R made it (broken off by a way home,
	 * it is made again at home as it is)
	 */
	uint64_t s1[6] = { 5, (uint64_t)-100, SEEK_CUR };
	memcpy(args, s1, sizeof args);
	ck_assert_int_eq(fio_call(&f, self, 4, SYS_lseek, args, 1, &seq, &rv),
	    FIO_PASS);
	ck_assert_int_eq((int64_t)args[1], -100);
	ck_assert_uint_eq(drain(&f, kinds, 16, &by), 1);
	ck_assert_int_eq(kinds[0], 100 + SYS_lseek);
	ck_assert_uint_eq(by, 8192);
	ret = 12288 - 100;
	fio_result(&f, SYS_lseek, args, &ret, -1, 0);

	/* writes are answered at once and gathered, then go before fstat */
	uint64_t w1[6] = { 5, (uint64_t)file, 1000 };
	for (i = 0; i < 3; i++) {
		memcpy(args, w1, sizeof args);
		ck_assert_int_eq(fio_call(&f, self, 5 + i, SYS_write, args, 0,
		    &seq, &rv), FIO_ANSWER);
		ck_assert_int_eq(rv, 1000);
	}
	ck_assert_uint_eq(drain(&f, kinds, 16, NULL), 0);
	ck_assert(fio_batched(&f));
	uint64_t st[6] = { 5, 0 };
	memcpy(args, st, sizeof args);
	ck_assert_int_eq(fio_call(&f, self, 9, SYS_fstat, args, 0, &seq, &rv),
	    FIO_PASS);
	n = drain(&f, kinds, 16, NULL);
	ck_assert_uint_eq(n, 1);
	ck_assert_int_eq(kinds[0], 100 + SYS_write);

	/* a window of the file written is gone: the next read fetches */
	memcpy(args, r1, sizeof args);
	ck_assert_int_eq(fio_call(&f, self, 10, SYS_read, args, 0, &seq, &rv),
	    FIO_WAIT);
	n = drain(&f, kinds, 16, NULL);
	ck_assert_int_eq(kinds[n - 1], REMOTE_OUT_READ);
	data.seq = f.wait_seq;
	ck_assert_int_eq(check_fio_data(&f, &data, 1, &seq, &rv), 1);

	/* what R took is owed: settled as an lseek behind at its end */
	fio_settle(&f, &seq);
	n = drain(&f, kinds, 16, &by);
	ck_assert_uint_eq(n, 1);
	ck_assert_int_eq(kinds[0], 100 + SYS_lseek);
	ck_assert_uint_eq(by, 4096);

	/* a write behind that failed: the next call on fd 5 says so */
	memcpy(args, w1, sizeof args);
	ck_assert_int_eq(fio_call(&f, self, 11, SYS_write, args, 0, &seq, &rv),
	    FIO_ANSWER);
	fio_flush(&f, &seq);
	drain(&f, kinds, 16, NULL);
	ck_assert_int_eq(fio_behind_reply(&f, seq, -ENOSPC, -1, &expect), 1);
	ck_assert_int_eq(expect, 1000);
	uint64_t fs[6] = { 5 };
	memcpy(args, fs, sizeof args);
	ck_assert_int_eq(fio_call(&f, self, 12, SYS_fsync, args, 0, &seq, &rv),
	    FIO_ANSWER);
	ck_assert_int_eq(rv, -ENOSPC);
	memcpy(args, fs, sizeof args);
	ck_assert_int_eq(fio_call(&f, self, 13, SYS_fsync, args, 0, &seq, &rv),
	    FIO_PASS);

	/* dup2 onto fd 5: another file now, asked about again */
	uint64_t d2[6] = { 3, 5 };
	memcpy(args, d2, sizeof args);
	ck_assert_int_eq(fio_call(&f, self, 14, SYS_dup2, args, 0, &seq, &rv),
	    FIO_PASS);
	drain(&f, kinds, 16, NULL);
	memcpy(args, r1, sizeof args);
	ck_assert_int_eq(fio_call(&f, self, 15, SYS_read, args, 0, &seq, &rv),
	    FIO_PASS);
	n = drain(&f, kinds, 16, NULL);
	ck_assert_uint_eq(n, 1);
	ck_assert_int_eq(kinds[0], REMOTE_OUT_FD_ASK);

	/* strict: everything as it is */
	f.off = 1;
	memcpy(args, r1, sizeof args);
	ck_assert_int_eq(fio_call(&f, self, 14, SYS_read, args, 0, &seq, &rv),
	    FIO_PASS);
	fio_free(&f);
}
END_TEST

/*
 * What shared.c asks of fileio: a pread64 of a descriptor not known yet
 * asks what it is (so that a file R had before it came can be opened
 * where it runs); a close and an lseek written behind for a descriptor
 * opened there; and a failure of that close is nobody's to tell.
 */
START_TEST(test_fileio_shared)
{
	Osm__RemoteCall	*c;
	struct fio	 f;
	uint8_t		*msg, buf[64];
	uint64_t	 seq = 0, args[6];
	int64_t		 expect;
	size_t		 len;
	long		 rv;
	int		 kind;

	memset(&f, 0, sizeof f);
	uint64_t p1[6] = { 7, (uint64_t)buf, sizeof buf, 0 };
	memcpy(args, p1, sizeof args);
	ck_assert_int_eq(fio_call(&f, getpid(), 1, SYS_pread64, args, 0, &seq,
	    &rv), FIO_PASS);
	ck_assert(fio_out(&f, 1, &kind, &msg, &len));
	ck_assert_int_eq(kind, REMOTE_OUT_FD_ASK);
	free(msg);

	fio_lseek_behind(&f, 9, 4242, SEEK_SET, &seq);
	fio_close_behind(&f, 9, &seq);
	ck_assert(fio_out(&f, 1, &kind, &msg, &len));
	ck_assert_int_eq(kind, REMOTE_OUT_CALL);
	c = osm__remote_call__unpack(NULL, len, msg);
	ck_assert_ptr_nonnull(c);
	ck_assert(c->behind);
	ck_assert_int_eq(c->nr, SYS_lseek);
	ck_assert_uint_eq(c->args[0], 9);
	ck_assert_uint_eq(c->args[1], 4242);
	ck_assert_uint_eq(c->args[2], SEEK_SET);
	osm__remote_call__free_unpacked(c, NULL);
	free(msg);
	ck_assert(fio_out(&f, 1, &kind, &msg, &len));
	c = osm__remote_call__unpack(NULL, len, msg);
	ck_assert_ptr_nonnull(c);
	ck_assert(c->behind);
	ck_assert_int_eq(c->nr, SYS_close);
	osm__remote_call__free_unpacked(c, NULL);
	free(msg);
	ck_assert(!fio_out(&f, 1, &kind, &msg, &len));
	/* the close failed at home: told to no call of R's */
	ck_assert_int_eq(fio_behind_reply(&f, seq, -EIO, -1, &expect), 1);
	ck_assert_uint_eq(f.stats_errors, 0);
	fio_free(&f);
}
END_TEST

/*
 * Writes go behind only while the home's file system has room for them
 * beyond a spare, as the home's answers say: then one goes home as it is,
 * after those gathered before it, and behind again once a reply says the
 * room is back; every charge is paid back by its reply.
 */
START_TEST(test_fileio_room)
{
	Osm__RemoteFdInfo	 info = OSM__REMOTE_FD_INFO__INIT;
	struct fio		 f;
	uint8_t			 buf[4096];
	uint64_t		 seq = 0, args[6];
	int64_t			 ret, expect;
	int			 kinds[16];
	enum fio_verdict	 v;
	long			 rv;
	size_t			 i, n;

	memset(&f, 0, sizeof f);
	memset(buf, 'x', sizeof buf);
	uint64_t w1[6] = { 6, (uint64_t)buf, sizeof buf };
	memcpy(args, w1, sizeof args);
	ck_assert_int_eq(fio_call(&f, getpid(), 1, SYS_write, args, 0, &seq,
	    &rv), FIO_PASS);
	n = drain(&f, kinds, 16, NULL);
	ck_assert_uint_eq(n, 1);
	ck_assert_int_eq(kinds[0], REMOTE_OUT_FD_ASK);
	info.fd = 6;
	info.regular = info.behind = 1;
	info.dev = 3;
	info.ino = 4;
	info.has_fs_free = 1;
	info.fs_free = (8 << 20) + (300 << 10);
	fio_info(&f, &info, 0);
	ret = 4096;
	fio_result(&f, SYS_write, args, &ret, (8 << 20) + (300 << 10), 0);

	/* 300 KiB beyond the spare: some 280 KiB of writes go behind */
	for (i = 0; i < 200; i++) {
		memcpy(args, w1, sizeof args);
		v = fio_call(&f, getpid(), 2 + i, SYS_write, args, 0, &seq, &rv);
		if (v != FIO_ANSWER)
			break;
		ck_assert_int_eq(rv, 4096);
	}
	ck_assert_int_eq(v, FIO_PASS);
	ck_assert_uint_ge(i, 60);
	ck_assert_uint_le(i, 72);
	ck_assert_uint_eq(f.stats_at_once, 1);
	/* those gathered go first: the one made at once follows them */
	n = drain(&f, kinds, 16, NULL);
	ck_assert_uint_eq(n, 2);
	ck_assert_int_eq(kinds[0], 100 + SYS_write);
	ck_assert_int_eq(kinds[1], 100 + SYS_write);
	ck_assert_uint_eq(f.nbehind, 2);
	ck_assert_uint_gt(f.fs[0].ahead, i * 4096);

	/* the replies say the room is back (a file removed meanwhile) */
	while (f.nbehind > 0)
		ck_assert_int_eq(fio_behind_reply(&f, f.behind[0].seq,
		    f.behind[0].expect, 1 << 30, &expect), 1);
	ck_assert_uint_eq(f.fs[0].ahead, 0);
	ret = 4096;
	fio_result(&f, SYS_write, args, &ret, 1 << 30, 0);
	ck_assert_int_eq(ret, 4096);
	memcpy(args, w1, sizeof args);
	ck_assert_int_eq(fio_call(&f, getpid(), 300, SYS_write, args, 0, &seq,
	    &rv), FIO_ANSWER);
	fio_free(&f);
}
END_TEST

/* fd known to fio as a regular file (dev 1, ino 2), read and written. */
static void
known(struct fio *f, int fd, uint64_t *seq)
{
	Osm__RemoteFdInfo	 info = OSM__REMOTE_FD_INFO__INIT;
	uint8_t			 buf[16];
	uint64_t		 args[6] = { fd, (uint64_t)buf, sizeof buf, 0 };
	int			 kinds[4];
	int64_t			 ret = sizeof buf;
	long			 rv;

	ck_assert_int_eq(fio_call(f, getpid(), 1, SYS_pread64, args, 0, seq,
	    &rv), FIO_PASS);
	ck_assert_uint_eq(drain(f, kinds, 4, NULL), 1);
	info.fd = fd;
	info.regular = info.readable = info.behind = 1;
	info.dev = 1;
	info.ino = 2;
	fio_info(f, &info, 0);
	fio_result(f, SYS_pread64, args, &ret, -1, 0);
}

/* The offset and length of the RemoteRead fio has to send, the last. */
static void
fetched(struct fio *f, uint64_t *off, uint32_t *len)
{
	Osm__RemoteRead	*r;
	uint8_t		*msg;
	size_t		 n;
	int		 kind, seen = 0;

	while (fio_out(f, 1, &kind, &msg, &n)) {
		if (kind == REMOTE_OUT_READ) {
			r = osm__remote_read__unpack(NULL, n, msg);
			ck_assert_ptr_nonnull(r);
			*off = r->offset;
			*len = r->length;
			osm__remote_read__free_unpacked(r, NULL);
			seen = 1;
		}
		free(msg);
	}
	ck_assert(seen);
}

/*
 * pread64: one that goes on where the last ended is a stream, read ahead
 * (a jump goes home as it is); a page R wrote is read back from what R
 * wrote, with the writes still gathered, while it is fresh and until a
 * lock is taken on the file, the file is truncated, another descriptor of
 * it writes, or a write behind fails.
 */
START_TEST(test_fileio_pread)
{
	Osm__RemoteReadData	 data = OSM__REMOTE_READ_DATA__INIT;
	struct fio		 f;
	static uint8_t		 file[300000];
	uint8_t			 buf[8192], page[4096];
	uint64_t		 seq = 0, args[6], off;
	uint32_t		 len;
	int64_t			 expect;
	int			 kinds[16];
	long			 rv;
	size_t			 i, n;
	pid_t			 self = getpid();

	memset(&f, 0, sizeof f);
	for (i = 0; i < sizeof file; i++)
		file[i] = i * 11;
	known(&f, 5, &seq);

	/* 16 bytes at 0 went home; 4096 at 16 go on: a window from 16 */
	uint64_t p1[6] = { 5, (uint64_t)buf, 4096, 16 };
	memcpy(args, p1, sizeof args);
	ck_assert_int_eq(fio_call(&f, self, 2, SYS_pread64, args, 0, &seq, &rv),
	    FIO_WAIT);
	fetched(&f, &off, &len);
	ck_assert_uint_eq(off, 16);
	ck_assert_uint_eq(len, 128 << 10);
	data.seq = f.wait_seq;
	data.has_data = data.has_size = 1;
	data.data.data = file + 16;
	data.data.len = 128 << 10;
	data.size = sizeof file;
	ck_assert_int_eq(check_fio_data(&f, &data, 1, &seq, &rv), 1);
	ck_assert_int_eq(rv, 4096);
	ck_assert(memcmp(buf, file + 16, 4096) == 0);
	/* the next, and one further on within the window: served here */
	uint64_t p2[6] = { 5, (uint64_t)buf, 4096, 4112 };
	memcpy(args, p2, sizeof args);
	ck_assert_int_eq(fio_call(&f, self, 3, SYS_pread64, args, 0, &seq, &rv),
	    FIO_ANSWER);
	ck_assert(memcmp(buf, file + 4112, 4096) == 0);
	uint64_t p3[6] = { 5, (uint64_t)buf, 8192, 100000 };
	memcpy(args, p3, sizeof args);
	ck_assert_int_eq(fio_call(&f, self, 4, SYS_pread64, args, 0, &seq, &rv),
	    FIO_ANSWER);
	ck_assert_int_eq(rv, 8192);
	ck_assert(memcmp(buf, file + 100000, 8192) == 0);
	ck_assert_uint_eq(f.stats_served, 3);
	/* a jump beyond it goes home as it is, and starts no fetch */
	uint64_t p4[6] = { 5, (uint64_t)buf, 4096, 250000 };
	memcpy(args, p4, sizeof args);
	ck_assert_int_eq(fio_call(&f, self, 5, SYS_pread64, args, 0, &seq, &rv),
	    FIO_PASS);
	ck_assert_uint_eq(drain(&f, kinds, 16, NULL), 0);

	/* a page written, read back from here: its write still gathered */
	memset(page, 'W', sizeof page);
	uint64_t w1[6] = { 5, (uint64_t)page, 4096, 8192 };
	memcpy(args, w1, sizeof args);
	ck_assert_int_eq(fio_call(&f, self, 6, SYS_pwrite64, args, 0, &seq, &rv),
	    FIO_ANSWER);
	uint64_t p5[6] = { 5, (uint64_t)buf, 4096, 8192 };
	memcpy(args, p5, sizeof args);
	ck_assert_int_eq(fio_call(&f, self, 7, SYS_pread64, args, 0, &seq, &rv),
	    FIO_ANSWER);
	ck_assert_int_eq(rv, 4096);
	ck_assert(memcmp(buf, page, 4096) == 0);
	ck_assert_uint_eq(f.stats_held, 1);
	ck_assert(fio_batched(&f));
	ck_assert_uint_eq(drain(&f, kinds, 16, NULL), 0);
	/* the window was dropped by the write: bytes beside it go home */
	uint64_t p6[6] = { 5, (uint64_t)buf, 100, 8100 };
	memcpy(args, p6, sizeof args);
	ck_assert_int_eq(fio_call(&f, self, 8, SYS_pread64, args, 0, &seq, &rv),
	    FIO_PASS);
	n = drain(&f, kinds, 16, NULL);
	ck_assert_uint_eq(n, 1);
	ck_assert_int_eq(kinds[0], 100 + SYS_pwrite64);

	/* fresh for FIO_FRESH_NS only */
	memcpy(args, w1, sizeof args);
	ck_assert_int_eq(fio_call(&f, self, 9, SYS_pwrite64, args, 0, &seq, &rv),
	    FIO_ANSWER);
	for (i = 0; i < f.held.n; i++)
		f.held.pages[i].at -= 2000000000ULL;
	memcpy(args, p5, sizeof args);
	ck_assert_int_eq(fio_call(&f, self, 10, SYS_pread64, args, 0, &seq,
	    &rv), FIO_PASS);
	ck_assert_uint_eq(f.stats_held, 1);
	drain(&f, kinds, 16, NULL);

	/* a lock taken on the file drops it, as NFS drops its cache */
	memcpy(args, w1, sizeof args);
	ck_assert_int_eq(fio_call(&f, self, 11, SYS_pwrite64, args, 0, &seq,
	    &rv), FIO_ANSWER);
	uint64_t l1[6] = { 5, F_SETLK, 0 };
	memcpy(args, l1, sizeof args);
	ck_assert_int_eq(fio_call(&f, self, 12, SYS_fcntl, args, 0, &seq, &rv),
	    FIO_PASS);
	ck_assert_uint_eq(held_bytes(&f.held), 0);
	memcpy(args, p5, sizeof args);
	ck_assert_int_ne(fio_call(&f, self, 13, SYS_pread64, args, 0, &seq,
	    &rv), FIO_ANSWER);
	drain(&f, kinds, 16, NULL);
	f.waiting = 0;

	/* so do ftruncate, a write of another descriptor, a failure behind */
	memcpy(args, w1, sizeof args);
	ck_assert_int_eq(fio_call(&f, self, 14, SYS_pwrite64, args, 0, &seq,
	    &rv), FIO_ANSWER);
	ck_assert_uint_eq(held_bytes(&f.held), 4096);
	uint64_t t1[6] = { 5, 4096 };
	memcpy(args, t1, sizeof args);
	ck_assert_int_eq(fio_call(&f, self, 15, SYS_ftruncate, args, 0, &seq,
	    &rv), FIO_PASS);
	ck_assert_uint_eq(held_bytes(&f.held), 0);
	drain(&f, kinds, 16, NULL);
	known(&f, 6, &seq);
	memcpy(args, w1, sizeof args);
	ck_assert_int_eq(fio_call(&f, self, 16, SYS_pwrite64, args, 0, &seq,
	    &rv), FIO_ANSWER);
	ck_assert_uint_eq(held_bytes(&f.held), 4096);
	uint64_t w2[6] = { 6, (uint64_t)page, 10, 0 };
	memcpy(args, w2, sizeof args);
	ck_assert_int_eq(fio_call(&f, self, 17, SYS_pwrite64, args, 0, &seq,
	    &rv), FIO_ANSWER);
	ck_assert_uint_eq(held_bytes(&f.held), 10);
	fio_flush(&f, &seq);
	drain(&f, kinds, 16, NULL);
	ck_assert_int_eq(fio_behind_reply(&f, seq, -ENOSPC, -1, &expect), 1);
	ck_assert_uint_eq(held_bytes(&f.held), 0);

	/* strict: every pread64 as it is */
	f.off = 1;
	memcpy(args, p2, sizeof args);
	ck_assert_int_eq(fio_call(&f, self, 18, SYS_pread64, args, 0, &seq,
	    &rv), FIO_PASS);
	fio_free(&f);
}
END_TEST

/*
 * held.c: runs of bytes by page, merged while fresh, served whole or not
 * at all, and bounded: past 16 MiB the stale go, then all.
 */
/* The window read ahead of descriptor fd, or NULL. */
static const uint8_t *
win_of(const struct fio *f, int fd)
{
	size_t	i;

	for (i = 0; i < f->nfds; i++)
		if (f->fds[i].fd == fd)
			return f->fds[i].win.buf;
	return NULL;
}

/*
 * Threads: a descriptor with another thread's call at home serves nothing
 * here; one read waits for a window at a time; another thread's call on
 * the descriptor a read waits on sends that read home after it, with what
 * is owed first; a change of the file meanwhile makes the window serve
 * the read waiting only.
 */
START_TEST(test_fileio_threads)
{
	Osm__RemoteFdInfo	 info = OSM__REMOTE_FD_INFO__INIT;
	Osm__RemoteReadData	 data = OSM__REMOTE_READ_DATA__INIT;
	struct fio		 f;
	uint8_t			 file[300000], buf[4096], wbuf[4096];
	uint64_t		 seq = 0, args[6], by = 0;
	int64_t			 ret;
	int			 kinds[16];
	long			 rv;
	size_t			 i, n;
	pid_t			 self = getpid();

	memset(&f, 0, sizeof f);
	memset(wbuf, 'w', sizeof wbuf);
	for (i = 0; i < sizeof file; i++)
		file[i] = i * 7;
	uint64_t r5[6] = { 5, (uint64_t)buf, 4096 };
	uint64_t r6[6] = { 6, (uint64_t)buf, 4096 };
	memcpy(args, r5, sizeof args);
	ck_assert_int_eq(fio_call(&f, self, 1, SYS_read, args, 0, &seq, &rv),
	    FIO_PASS);
	info.fd = 5;
	info.regular = info.readable = info.behind = 1;
	info.dev = 1;
	info.ino = 2;
	/* another thread's call on 5 was at home meanwhile: no offset */
	fio_info(&f, &info, 1);
	ret = 4096;
	fio_result(&f, SYS_read, args, &ret, -1, 0);
	memcpy(args, r5, sizeof args);
	ck_assert_int_eq(fio_call(&f, self, 2, SYS_read, args, 0, &seq, &rv),
	    FIO_PASS);
	drain(&f, kinds, 16, NULL);
	/* an lseek with nothing else at home gives it back */
	uint64_t s0[6] = { 5, 4096, SEEK_SET };
	memcpy(args, s0, sizeof args);
	ck_assert_int_eq(fio_call(&f, self, 3, SYS_lseek, args, 0, &seq, &rv),
	    FIO_PASS);
	ret = 4096;
	fio_result(&f, SYS_lseek, args, &ret, -1, 0);
	/* with a call of another thread's on 5 at home: home as it is */
	memcpy(args, r5, sizeof args);
	ck_assert_int_eq(fio_call(&f, self, 4, SYS_read, args, 1, &seq, &rv),
	    FIO_PASS);
	/* ... and its result, the other still there: no offset again */
	ret = 4096;
	fio_result(&f, SYS_read, args, &ret, -1, 1);
	memcpy(args, r5, sizeof args);
	ck_assert_int_eq(fio_call(&f, self, 5, SYS_read, args, 0, &seq, &rv),
	    FIO_PASS);
	memcpy(args, s0, sizeof args);
	fio_call(&f, self, 6, SYS_lseek, args, 0, &seq, &rv);
	ret = 4096;
	fio_result(&f, SYS_lseek, args, &ret, -1, 0);
	drain(&f, kinds, 16, NULL);

	/* one read waits for a window; another's, of 6, goes home */
	memcpy(args, r5, sizeof args);
	ck_assert_int_eq(fio_call(&f, self, 7, SYS_read, args, 0, &seq, &rv),
	    FIO_WAIT);
	drain(&f, kinds, 16, NULL);
	memcpy(args, r6, sizeof args);
	ck_assert_int_eq(fio_call(&f, self, 8, SYS_read, args, 0, &seq, &rv),
	    FIO_PASS);
	info.fd = 6;
	info.ino = 3;
	fio_info(&f, &info, 0);
	ret = 4096;
	fio_result(&f, SYS_read, args, &ret, -1, 0);
	memcpy(args, r6, sizeof args);
	ck_assert_int_eq(fio_call(&f, self, 9, SYS_read, args, 0, &seq, &rv),
	    FIO_PASS);
	drain(&f, kinds, 16, NULL);
	/* another thread writes 5 meanwhile: behind, and the read goes home */
	uint64_t w5[6] = { 5, (uint64_t)wbuf, 4096 };
	memcpy(args, w5, sizeof args);
	ck_assert_int_eq(fio_call(&f, self, 10, SYS_write, args, 0, &seq,
	    &rv), FIO_ANSWER);
	ck_assert_int_eq(rv, 4096);
	data.seq = f.wait_seq;
	data.has_data = data.has_size = 1;
	data.data.data = file + 4096;
	data.data.len = 128 << 10;
	data.size = sizeof file;
	ck_assert_int_eq(check_fio_data(&f, &data, 1, &seq, &rv), -1);
	/* after the write gathered, which the home makes first */
	n = drain(&f, kinds, 16, &by);
	ck_assert_uint_eq(n, 1);
	ck_assert_int_eq(kinds[0], 100 + SYS_write);
	ck_assert_ptr_null(win_of(&f, 5));

	/* a change of the file while a window comes: it serves that read */
	memcpy(args, s0, sizeof args);
	fio_call(&f, self, 11, SYS_lseek, args, 0, &seq, &rv);
	ret = 4096;
	fio_result(&f, SYS_lseek, args, &ret, -1, 0);
	memcpy(args, r5, sizeof args);
	ck_assert_int_eq(fio_call(&f, self, 12, SYS_read, args, 0, &seq,
	    &rv), FIO_WAIT);
	drain(&f, kinds, 16, NULL);
	fio_changed(&f, 1, 2);
	data.seq = f.wait_seq;
	ck_assert_int_eq(check_fio_data(&f, &data, 1, &seq, &rv), 1);
	ck_assert_int_eq(rv, 4096);
	ck_assert(memcmp(buf, file + 4096, 4096) == 0);
	ck_assert_ptr_null(win_of(&f, 5));

	/* another thread closes 5 while a read waits on it: home it goes */
	memcpy(args, r5, sizeof args);
	ck_assert_int_eq(fio_call(&f, self, 13, SYS_read, args, 0, &seq,
	    &rv), FIO_WAIT);
	drain(&f, kinds, 16, NULL);
	uint64_t c5[6] = { 5 };
	memcpy(args, c5, sizeof args);
	ck_assert_int_eq(fio_call(&f, self, 14, SYS_close, args, 0, &seq,
	    &rv), FIO_PASS);
	data.seq = f.wait_seq;
	ck_assert_int_eq(check_fio_data(&f, &data, 1, &seq, &rv), -1);
	ck_assert_int_eq(f.waiting, 0);
	fio_free(&f);
}
END_TEST

/*
 * fd of regular file ino read as a stream: the first read home (after the
 * question), the next two from a window; R owes its offset 8192.
 */
static void
stream(struct fio *f, int fd, uint64_t ino, uint8_t *file, size_t size,
    uint8_t *buf, uint64_t *seq)
{
	Osm__RemoteFdInfo	 info = OSM__REMOTE_FD_INFO__INIT;
	Osm__RemoteReadData	 data = OSM__REMOTE_READ_DATA__INIT;
	uint64_t		 args[6];
	int64_t			 ret = 4096;
	int			 kinds[16];
	long			 rv;
	size_t			 n;

	uint64_t r[6] = { fd, (uint64_t)buf, 4096 };
	memcpy(args, r, sizeof args);
	ck_assert_int_eq(fio_call(f, getpid(), 1, SYS_read, args, 0, seq, &rv),
	    FIO_PASS);
	/* (what is owed others' offsets goes first) */
	n = drain(f, kinds, 16, NULL);
	ck_assert_int_eq(kinds[n - 1], REMOTE_OUT_FD_ASK);
	info.fd = fd;
	info.regular = info.readable = info.behind = 1;
	info.dev = 1;
	info.ino = ino;
	fio_info(f, &info, 0);
	fio_result(f, SYS_read, args, &ret, -1, 0);
	ck_assert_int_eq(fio_call(f, getpid(), 2, SYS_read, args, 0, seq, &rv),
	    FIO_WAIT);
	ck_assert_uint_eq(drain(f, kinds, 16, NULL), 1);
	data.seq = f->wait_seq;
	data.has_data = data.has_size = 1;
	data.data.data = file + 4096;
	data.data.len = 128 << 10;
	data.size = size;
	ck_assert_int_eq(check_fio_data(f, &data, 1, seq, &rv), 1);
	ck_assert_int_eq(fio_call(f, getpid(), 3, SYS_read, args, 0, seq, &rv),
	    FIO_ANSWER);
	ck_assert(memcmp(buf, file + 8192, 4096) == 0);
}

/* R's call nr (args) goes home as it is, after an lseek of by, or none. */
static void
home_after(struct fio *f, int nr, uint64_t *args, uint64_t by, uint64_t *seq)
{
	uint64_t	got = 0;
	int64_t		ret = 0;
	int		kinds[16];
	long		rv;
	size_t		n;

	ck_assert_int_eq(fio_call(f, getpid(), 9, nr, args, 0, seq, &rv),
	    FIO_PASS);
	/* a close's reply forgets the descriptor (what it read or wrote
	   kept till then, for a failure behind to tell) */
	if (nr == SYS_close)
		fio_result(f, nr, args, &ret, -1, 0);
	n = drain(f, kinds, 16, &got);
	ck_assert_uint_eq(n, by != 0);
	if (by != 0) {
		ck_assert_int_eq(kinds[0], 100 + SYS_lseek);
		ck_assert_uint_eq(got, by);
	}
}

/*
 * A descriptor duplicated (dup, dup2, dup3, fcntl F_DUPFD...) shares its
 * offset with the new one: what R owes it goes home first and its reads
 * go home from then on, as a shared one's; one asked about is asked
 * again. copy_file_range, sendfile and splice with no offset of their own
 * move it: paid first, and unknown after. A plain stream is still read
 * ahead, and sendfile with an offset of its own leaves the window alone.
 * Made O_APPEND by fcntl, a descriptor's writes land at the end.
 */
START_TEST(test_fileio_dup)
{
	Osm__RemoteFdInfo	 info = OSM__REMOTE_FD_INFO__INIT;
	struct fio		 f;
	uint8_t			 file[300000], buf[8192];
	uint64_t		 seq = 0, args[6];
	int64_t			 ret;
	int			 kinds[16], how;
	long			 rv;
	size_t			 i;

	memset(&f, 0, sizeof f);
	for (i = 0; i < sizeof file; i++)
		file[i] = i * 7;
	uint64_t r5[6] = { 5, (uint64_t)buf, 4096 };
	for (how = 0; how < 5; how++) {
		uint64_t d[5][6] = {
			{ 5 }, { 5, 40 }, { 5, 41, O_CLOEXEC },
			{ 5, F_DUPFD, 50 }, { 5, F_DUPFD_CLOEXEC, 60 },
		};
		static const int nrs[5] = {
			SYS_dup, SYS_dup2, SYS_dup3, SYS_fcntl, SYS_fcntl,
		};
		stream(&f, 5, 2, file, sizeof file, buf, &seq);
		memcpy(args, d[how], sizeof args);
		home_after(&f, nrs[how], args, 8192, &seq);
		/* home as it is, even once its offset is known again */
		memcpy(args, r5, sizeof args);
		home_after(&f, SYS_read, args, 0, &seq);
		uint64_t s0[6] = { 5, 0, SEEK_CUR };
		memcpy(args, s0, sizeof args);
		home_after(&f, SYS_lseek, args, 0, &seq);
		ret = 16384;
		fio_result(&f, SYS_lseek, args, &ret, -1, 0);
		memcpy(args, r5, sizeof args);
		home_after(&f, SYS_read, args, 0, &seq);
		uint64_t c5[6] = { 5 };
		memcpy(args, c5, sizeof args);
		home_after(&f, SYS_close, args, 0, &seq);
	}

	/* pidfd_getfd of it (R's own pidfd, or another's: unknown here) */
	stream(&f, 5, 2, file, sizeof file, buf, &seq);
	uint64_t g5[6] = { 3, 5, 0 };
	memcpy(args, g5, sizeof args);
	home_after(&f, SYS_pidfd_getfd, args, 8192, &seq);
	memcpy(args, r5, sizeof args);
	home_after(&f, SYS_read, args, 0, &seq);
	uint64_t c5[6] = { 5 };
	memcpy(args, c5, sizeof args);
	home_after(&f, SYS_close, args, 0, &seq);

	/* asked about, not answered yet: forgotten, asked again */
	memcpy(args, r5, sizeof args);
	ck_assert_int_eq(fio_call(&f, getpid(), 1, SYS_read, args, 0, &seq,
	    &rv), FIO_PASS);
	ck_assert_uint_eq(drain(&f, kinds, 16, NULL), 1);
	uint64_t d5[6] = { 5 };
	memcpy(args, d5, sizeof args);
	home_after(&f, SYS_dup, args, 0, &seq);
	info.fd = 5;
	info.regular = info.readable = 1;
	fio_info(&f, &info, 0);
	memcpy(args, r5, sizeof args);
	ck_assert_int_eq(fio_call(&f, getpid(), 1, SYS_read, args, 0, &seq,
	    &rv), FIO_PASS);
	ck_assert_uint_eq(drain(&f, kinds, 16, NULL), 1);
	ck_assert_int_eq(kinds[0], REMOTE_OUT_FD_ASK);
	fio_free(&f);

	/* copy_file_range, splice, sendfile: the offset moved at home */
	for (how = 0; how < 3; how++) {
		uint64_t m[3][6] = {
			{ 5, 0, 9, 0, 3000 }, { 5, 0, 9, 0, 3000 },
			{ 9, 5, 0, 3000 },
		};
		static const int nrs[3] = {
			SYS_copy_file_range, SYS_splice, SYS_sendfile,
		};
		memset(&f, 0, sizeof f);
		stream(&f, 5, 2, file, sizeof file, buf, &seq);
		memcpy(args, m[how], sizeof args);
		home_after(&f, nrs[how], args, 8192, &seq);
		memcpy(args, r5, sizeof args);
		home_after(&f, SYS_read, args, 0, &seq);
		fio_free(&f);
	}
	/* sendfile's output known: what its input owes is paid before too */
	memset(&f, 0, sizeof f);
	stream(&f, 9, 3, file, sizeof file, buf, &seq);
	stream(&f, 5, 2, file, sizeof file, buf, &seq);
	uint64_t sf[6] = { 9, 5, 0, 3000 };
	memcpy(args, sf, sizeof args);
	home_after(&f, SYS_sendfile, args, 8192, &seq);
	/* with an offset of its own, its input's window serves on */
	stream(&f, 7, 4, file, sizeof file, buf, &seq);
	uint64_t so[6] = { 9, 7, (uint64_t)&ret, 3000 };
	memcpy(args, so, sizeof args);
	home_after(&f, SYS_sendfile, args, 0, &seq);
	uint64_t r7[6] = { 7, (uint64_t)buf, 4096 };
	memcpy(args, r7, sizeof args);
	ck_assert_int_eq(fio_call(&f, getpid(), 9, SYS_read, args, 0, &seq,
	    &rv), FIO_ANSWER);
	ck_assert(memcmp(buf, file + 12288, 4096) == 0);

	/* made O_APPEND: what it writes after a seek is not held at 0 */
	uint64_t w6[6] = { 6, (uint64_t)file, 4096 };
	memcpy(args, w6, sizeof args);
	ck_assert_int_eq(fio_call(&f, getpid(), 1, SYS_write, args, 0, &seq,
	    &rv), FIO_PASS);
	drain(&f, kinds, 16, NULL);
	info.fd = 6;
	info.regular = info.readable = info.behind = 1;
	info.dev = 1;
	info.ino = 5;
	fio_info(&f, &info, 0);
	ret = 4096;
	fio_result(&f, SYS_write, args, &ret, -1, 0);
	uint64_t fl[6] = { 6, F_SETFL, O_APPEND };
	memcpy(args, fl, sizeof args);
	home_after(&f, SYS_fcntl, args, 0, &seq);
	/* (its offset known: answered here, fio_here) */
	uint64_t s6[6] = { 6, 0, SEEK_SET };
	memcpy(args, s6, sizeof args);
	ck_assert_int_eq(fio_call(&f, getpid(), 4, SYS_lseek, args, 0, &seq,
	    &rv), FIO_ANSWER);
	ck_assert_int_eq(rv, 0);
	memcpy(args, w6, sizeof args);
	ck_assert_int_eq(fio_call(&f, getpid(), 2, SYS_write, args, 0, &seq,
	    &rv), FIO_ANSWER);
	uint64_t p6[6] = { 6, (uint64_t)buf, 4096, 0 };
	memcpy(args, p6, sizeof args);
	ck_assert_int_ne(fio_call(&f, getpid(), 3, SYS_pread64, args, 0, &seq,
	    &rv), FIO_ANSWER);
	fio_free(&f);
}
END_TEST

START_TEST(test_held)
{
	struct held	h;
	struct iovec	iov[8];
	uint8_t		b[10000], out[10000];
	size_t		i, niov, got;

	memset(&h, 0, sizeof h);
	for (i = 0; i < sizeof b; i++)
		b[i] = i * 3;
	/* 10,000 bytes at 1000: pages 0 to 2, in three pieces */
	held_put(&h, 3, 1000, b, sizeof b, 100, 50);
	ck_assert(held_get(&h, 3, 1000, sizeof b, 120, 50, iov, 8, &niov));
	ck_assert_uint_eq(niov, 3);
	for (i = got = 0; i < niov; got += iov[i++].iov_len)
		memcpy(out + got, iov[i].iov_base, iov[i].iov_len);
	ck_assert_uint_eq(got, sizeof b);
	ck_assert(memcmp(out, b, sizeof b) == 0);
	ck_assert(!held_get(&h, 3, 999, 10, 120, 50, iov, 8, &niov));
	ck_assert(!held_get(&h, 4, 1000, 10, 120, 50, iov, 8, &niov));
	ck_assert(!held_get(&h, 3, 1000, 10, 151, 50, iov, 8, &niov));
	/* next to fresh bytes: one run; next to stale ones: only the new */
	held_put(&h, 3, 900, b, 100, 130, 50);
	ck_assert(held_get(&h, 3, 900, 200, 140, 50, iov, 8, &niov));
	held_put(&h, 3, 800, b, 100, 190, 50);
	ck_assert(!held_get(&h, 3, 800, 200, 195, 50, iov, 8, &niov));
	ck_assert(held_get(&h, 3, 800, 100, 195, 50, iov, 8, &niov));
	held_drop(&h, 3);
	ck_assert_uint_eq(held_bytes(&h), 0);
	/* bounded */
	for (i = 0; i < 5000; i++)
		held_put(&h, 1, i * 4096, b, 4096, i < 100 ? 1 : 1000, 50);
	ck_assert_uint_le(h.n, 4096);
	ck_assert(held_get(&h, 1, 4999 * 4096, 4096, 1000, 50, iov, 8,
	    &niov));
	held_drop(&h, -1);
	ck_assert_uint_eq(h.n, 0);
}
END_TEST

void
check_remote_fileio(Suite *s)
{
	TCase	*tc = tcase_create("fileio");

	tcase_add_test(tc, test_fileio);
	tcase_add_test(tc, test_fileio_shared);
	tcase_add_test(tc, test_fileio_room);
	tcase_add_test(tc, test_fileio_pread);
	tcase_add_test(tc, test_fileio_threads);
	tcase_add_test(tc, test_fileio_dup);
	tcase_add_test(tc, test_held);
	suite_add_tcase(s, tc);
}
