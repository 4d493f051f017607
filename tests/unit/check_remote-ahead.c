/*
 * check_remote's part for the window after one (libremote/window.c,
 * fileio.c): a stream past its first window has the next asked for as
 * soon as it has one; R's read at its start is served from it without a
 * fetch, or waits for it when it is still on its way, without a second
 * one; and a change of the file meanwhile makes it nobody's.
 */
#include <sys/syscall.h>

#include <check.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "libremote/internal.h"
#include "check_remote.h"
#include "proto/remote.pb-c.h"

#define AHEAD_FILE	(4U << 20)
#define AHEAD_READ	(64U << 10)

static uint8_t	ahead_file[AHEAD_FILE];
static uint8_t	ahead_buf[AHEAD_READ];

/*
 * What fio has to send: how many messages, the last RemoteRead's seq,
 * offset and length in *r (seq 0: none).
 */
size_t
check_fio_drain(struct fio *f, Osm__RemoteRead *r)
{
	Osm__RemoteRead	*m;
	uint8_t		*msg;
	size_t		 len, n = 0;
	int		 kind;

	r->seq = 0;
	while (fio_out(f, 1, &kind, &msg, &len)) {
		if (kind == REMOTE_OUT_READ) {
			m = osm__remote_read__unpack(NULL, len, msg);
			ck_assert_ptr_nonnull(m);
			r->seq = m->seq;
			r->offset = m->offset;
			r->length = m->length;
			osm__remote_read__free_unpacked(m, NULL);
		}
		free(msg);
		n++;
	}
	return n;
}

/* The home's answer to fetch r: its bytes of the file. */
static void
ahead_answer(struct fio *f, const Osm__RemoteRead *r, int valid, int expect,
    uint64_t *seq, long *rv)
{
	Osm__RemoteReadData	d = OSM__REMOTE_READ_DATA__INIT;

	d.seq = r->seq;
	d.has_data = d.has_size = 1;
	d.data.data = ahead_file + r->offset;
	d.data.len = r->offset + r->length > AHEAD_FILE ?
	    AHEAD_FILE - r->offset : r->length;
	d.size = AHEAD_FILE;
	ck_assert_int_eq(check_fio_data(f, &d, valid, seq, rv), expect);
}

/* R reads AHEAD_READ bytes of fd 5 (notification id): fio's verdict. */
static enum fio_verdict
ahead_read(struct fio *f, uint64_t id, uint64_t *seq, long *rv)
{
	uint64_t	args[6] = { 5, (uint64_t)ahead_buf, AHEAD_READ };

	return fio_call(f, getpid(), id, SYS_read, args, 0, seq, rv);
}

/* R's reads take the window to its end: off, where R is then. */
static uint64_t
ahead_take(struct fio *f, uint64_t off, uint64_t end, uint64_t *seq)
{
	Osm__RemoteRead	r;
	long		rv;

	for (; off < end; off += AHEAD_READ) {
		ck_assert_int_eq(ahead_read(f, off, seq, &rv), FIO_ANSWER);
		ck_assert_int_eq(rv, AHEAD_READ);
		ck_assert(memcmp(ahead_buf, ahead_file + off, AHEAD_READ) == 0);
		ck_assert_uint_eq(check_fio_drain(f, &r), 0);
	}
	return off;
}

START_TEST(test_ahead)
{
	Osm__RemoteFdInfo	info = OSM__REMOTE_FD_INFO__INIT;
	Osm__RemoteRead		r, pre;
	struct fio		f;
	uint64_t		seq = 0, off, w[6];
	int64_t			ret;
	long			rv;
	size_t			i;

	memset(&f, 0, sizeof f);
	for (i = 0; i < AHEAD_FILE; i++)
		ahead_file[i] = (uint8_t)(i * 7 + i / 4096);

	/* the first read goes home with the question; the home answers */
	ck_assert_int_eq(ahead_read(&f, 1, &seq, &rv), FIO_PASS);
	ck_assert_uint_eq(check_fio_drain(&f, &r), 1);
	info.fd = 5;
	info.regular = info.readable = info.behind = 1;
	info.dev = 1;
	info.ino = 2;
	fio_info(&f, &info, 0);
	uint64_t a1[6] = { 5, (uint64_t)ahead_buf, AHEAD_READ };
	ret = AHEAD_READ;
	fio_result(&f, SYS_read, a1, &ret, -1, 0);
	off = AHEAD_READ;

	/* the first window (128 KiB): nothing asked for after it */
	ck_assert_int_eq(ahead_read(&f, 2, &seq, &rv), FIO_WAIT);
	ck_assert_uint_eq(check_fio_drain(&f, &r), 1);
	ck_assert_uint_eq(r.offset, off);
	ck_assert_uint_eq(r.length, 128 << 10);
	ahead_answer(&f, &r, 1, 1, &seq, &rv);
	ck_assert_uint_eq(check_fio_drain(&f, &pre), 0);
	off = ahead_take(&f, off + AHEAD_READ, r.offset + r.length, &seq);

	/* the second (256 KiB): the third asked for as soon as it is in */
	ck_assert_int_eq(ahead_read(&f, 3, &seq, &rv), FIO_WAIT);
	ck_assert_uint_eq(check_fio_drain(&f, &r), 1);
	ck_assert_uint_eq(r.offset, off);
	ck_assert_uint_eq(r.length, 256 << 10);
	ahead_answer(&f, &r, 1, 1, &seq, &rv);
	ck_assert_uint_eq(check_fio_drain(&f, &pre), 1);
	ck_assert_uint_eq(pre.offset, r.offset + r.length);
	ck_assert_uint_eq(pre.length, 512 << 10);
	/* it comes while R takes the second, for no read of R's */
	ahead_answer(&f, &pre, 0, 0, &seq, &rv);
	off = ahead_take(&f, off + AHEAD_READ, pre.offset, &seq);

	/* R's read at its start: served from it, the fourth asked for */
	ck_assert_int_eq(ahead_read(&f, 4, &seq, &rv), FIO_ANSWER);
	ck_assert_int_eq(rv, AHEAD_READ);
	ck_assert(memcmp(ahead_buf, ahead_file + off, AHEAD_READ) == 0);
	ck_assert_uint_eq(check_fio_drain(&f, &r), 1);
	ck_assert_uint_eq(r.offset, pre.offset + pre.length);
	ck_assert_uint_eq(r.length, 1024 << 10);
	off = ahead_take(&f, off + AHEAD_READ, r.offset, &seq);

	/* R is there before it: it waits for that one, asks no other */
	ck_assert_int_eq(ahead_read(&f, 5, &seq, &rv), FIO_WAIT);
	ck_assert_uint_eq(check_fio_drain(&f, &pre), 0);
	ck_assert_uint_eq(f.wait_seq, r.seq);
	ahead_answer(&f, &r, 1, 1, &seq, &rv);
	ck_assert_int_eq(rv, AHEAD_READ);
	ck_assert(memcmp(ahead_buf, ahead_file + off, AHEAD_READ) == 0);
	/* (the fifth asked for meanwhile) */
	ck_assert_uint_eq(check_fio_drain(&f, &pre), 1);
	ck_assert_uint_eq(pre.offset, r.offset + r.length);
	off = ahead_take(&f, off + AHEAD_READ, pre.offset, &seq);

	/* R writes the file while the fifth is on its way: it is stale */
	uint64_t w1[6] = { 5, (uint64_t)ahead_file, 100 };
	memcpy(w, w1, sizeof w);
	ck_assert_int_eq(fio_call(&f, getpid(), 6, SYS_write, w, 0, &seq,
	    &rv), FIO_ANSWER);
	fio_flush(&f, &seq);
	check_fio_drain(&f, &r);
	ahead_answer(&f, &pre, 0, 0, &seq, &rv);
	/* R's next read, in its range, is fetched afresh from home */
	ck_assert_int_eq(ahead_read(&f, 7, &seq, &rv), FIO_WAIT);
	ck_assert_uint_eq(check_fio_drain(&f, &r), 1);
	ck_assert_uint_eq(r.offset, off + 100);
	ck_assert_uint_ne(r.seq, pre.seq);
	ck_assert_uint_eq(r.length, 128 << 10);
	fio_free(&f);
}
END_TEST

void
check_remote_ahead(Suite *s)
{
	TCase	*tc = tcase_create("ahead");

	tcase_add_test(tc, test_ahead);
	suite_add_tcase(s, tc);
}
