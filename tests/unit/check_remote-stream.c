/*
 * check_remote's part for a read larger than a window (libremote/
 * fioread.c, fio_stream): its pieces are asked a few ahead, each written
 * into R's buffer as it comes and the next asked for; a short one ends
 * it; R's offset moves by what it read (owed to the home's); R leaving
 * its read, the home failing and another thread's call on the descriptor
 * end it as a read waiting for a window ends. And SES_READ_DATA's body
 * (fio_data_unpack): the bytes read ahead, then their message.
 */
#include <sys/syscall.h>

#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "libremote/internal.h"
#include "check_remote.h"
#include "proto/remote.pb-c.h"

#define STREAM_FILE	((10U << 20) + 1000)	/* two windows and a bit */
#define STREAM_READ	(16U << 20)
#define STREAM_PIECE	FIO_WIN_MAX_BYTES

static uint8_t	stream_file[STREAM_FILE];
static uint8_t	stream_buf[STREAM_READ];

/* The RemoteReads fio has to send, into r (at most max): how many. */
static size_t
stream_drain(struct fio *f, Osm__RemoteRead *r, size_t max)
{
	Osm__RemoteRead	*m;
	uint8_t		*msg;
	size_t		 len, n = 0;
	int		 kind;

	while (fio_out(f, 1, &kind, &msg, &len)) {
		if (kind == REMOTE_OUT_READ) {
			ck_assert_uint_lt(n, max);
			m = osm__remote_read__unpack(NULL, len, msg);
			ck_assert_ptr_nonnull(m);
			r[n].seq = m->seq;
			r[n].offset = m->offset;
			r[n].length = m->length;
			osm__remote_read__free_unpacked(m, NULL);
			n++;
		}
		free(msg);
	}
	return n;
}

/* The home's answer to r, the file's bytes (or error): fio_data's. */
static int
stream_answer(struct fio *f, const Osm__RemoteRead *r, int valid, int error,
    uint64_t *seq, long *rv)
{
	Osm__RemoteReadData	d = OSM__REMOTE_READ_DATA__INIT;

	d.seq = r->seq;
	if (error != 0) {
		d.has_error = 1;
		d.error = error;
		return check_fio_data(f, &d, valid, seq, rv);
	}
	d.has_data = d.has_size = 1;
	d.data.data = stream_file + r->offset;
	d.data.len = r->offset >= STREAM_FILE ? 0 :
	    r->offset + r->length > STREAM_FILE ? STREAM_FILE - r->offset :
	    r->length;
	d.size = STREAM_FILE;
	return check_fio_data(f, &d, valid, seq, rv);
}

/* fd 5, a regular file the home told about, R's offset at 0. */
static void
stream_open(struct fio *f, uint64_t *seq)
{
	Osm__RemoteFdInfo	info = OSM__REMOTE_FD_INFO__INIT;
	uint64_t		args[6] = { 5, (uint64_t)stream_buf, 10 };
	long			rv;

	memset(f, 0, sizeof *f);
	ck_assert_int_eq(fio_call(f, getpid(), 1, SYS_read, args, 0, seq,
	    &rv), FIO_PASS);
	stream_drain(f, NULL, 0);
	info.fd = 5;
	info.regular = info.readable = info.behind = 1;
	info.dev = 1;
	info.ino = 2;
	fio_info(f, &info, 0);
	/* (that first read went home and read nothing) */
}

START_TEST(test_stream)
{
	Osm__RemoteRead	 r[8];
	struct fio	 f;
	struct fio_fd	*e;
	uint64_t	 seq = 0;
	uint64_t	 big[6] = { 5, (uint64_t)stream_buf, STREAM_READ };
	long		 rv = -1;
	size_t		 i;

	for (i = 0; i < STREAM_FILE; i++)
		stream_file[i] = (uint8_t)(i * 13 + i / 4096);
	stream_open(&f, &seq);

	/* R reads 16 MiB at once: three pieces asked at once */
	ck_assert_int_eq(fio_call(&f, getpid(), 2, SYS_read, big, 0, &seq,
	    &rv), FIO_WAIT);
	ck_assert_uint_eq(stream_drain(&f, r, 8), 3);
	for (i = 0; i < 3; i++) {
		ck_assert_uint_eq(r[i].offset, i * STREAM_PIECE);
		ck_assert_uint_eq(r[i].length, STREAM_PIECE);
	}
	/* each one in asks the next, until the read's length is asked */
	ck_assert_int_eq(stream_answer(&f, &r[0], 1, 0, &seq, &rv), 0);
	ck_assert_uint_eq(stream_drain(&f, r + 3, 5), 1);
	ck_assert_uint_eq(r[3].offset, 3 * STREAM_PIECE);
	ck_assert_uint_eq(r[3].length, STREAM_PIECE);
	ck_assert_int_eq(stream_answer(&f, &r[1], 1, 0, &seq, &rv), 0);
	ck_assert_uint_eq(stream_drain(&f, r + 4, 4), 0);
	/* the third is short, the file's end: R has all of it */
	ck_assert_int_eq(stream_answer(&f, &r[2], 1, 0, &seq, &rv), 1);
	ck_assert_int_eq(rv, STREAM_FILE);
	ck_assert(memcmp(stream_buf, stream_file, STREAM_FILE) == 0);
	ck_assert_int_eq(f.waiting, 0);
	/* the fourth, on its way, is for none */
	rv = -1;
	ck_assert_int_eq(stream_answer(&f, &r[3], 1, 0, &seq, &rv), 0);
	ck_assert_int_eq(rv, -1);
	/* R's offset moved by it, owed to the home's */
	e = fio_find(&f, 5);
	ck_assert_ptr_nonnull(e);
	ck_assert_uint_eq(e->pos, STREAM_FILE);
	ck_assert_uint_eq(e->seek, STREAM_FILE);
	fio_free(&f);
}
END_TEST

START_TEST(test_stream_ends)
{
	Osm__RemoteRead	 r[8];
	struct fio	 f;
	struct fio_fd	*e;
	uint64_t	 seq = 0, args[6];
	uint64_t	 big[6] = { 5, (uint64_t)stream_buf, STREAM_READ };
	uint64_t	 pbig[6] = { 5, (uint64_t)stream_buf, 6U << 20, 1000 };
	uint64_t	 c5[6] = { 5 };
	long		 rv = -1;

	stream_open(&f, &seq);
	e = fio_find(&f, 5);

	/* R leaves its read (a signal) when the first piece comes */
	memcpy(args, big, sizeof args);
	ck_assert_int_eq(fio_call(&f, getpid(), 2, SYS_read, args, 0, &seq,
	    &rv), FIO_WAIT);
	ck_assert_uint_eq(stream_drain(&f, r, 8), 3);
	ck_assert_int_eq(stream_answer(&f, &r[0], 0, 0, &seq, &rv), 0);
	ck_assert_int_eq(f.waiting, 0);
	ck_assert_uint_eq(stream_drain(&f, r + 3, 5), 0);
	ck_assert_int_eq(stream_answer(&f, &r[1], 1, 0, &seq, &rv), 0);
	ck_assert_uint_eq(e->pos, 0);
	ck_assert_uint_eq(e->seek, 0);

	/* a pread64 larger than a window: from its offset, none moved */
	memcpy(args, pbig, sizeof args);
	ck_assert_int_eq(fio_call(&f, getpid(), 3, SYS_pread64, args, 0,
	    &seq, &rv), FIO_WAIT);
	ck_assert_uint_eq(stream_drain(&f, r, 8), 2);
	ck_assert_uint_eq(r[0].offset, 1000);
	ck_assert_uint_eq(r[0].length, STREAM_PIECE);
	ck_assert_uint_eq(r[1].offset, 1000 + STREAM_PIECE);
	ck_assert_uint_eq(r[1].length, (6U << 20) - STREAM_PIECE);
	ck_assert_int_eq(stream_answer(&f, &r[0], 1, 0, &seq, &rv), 0);
	ck_assert_int_eq(stream_answer(&f, &r[1], 1, 0, &seq, &rv), 1);
	ck_assert_int_eq(rv, 6U << 20);
	ck_assert(memcmp(stream_buf, stream_file + 1000, 6U << 20) == 0);
	ck_assert_uint_eq(e->pos, 0);
	ck_assert_int_eq(e->pstream, 1);
	ck_assert_uint_eq(e->pnext, 1000 + (6U << 20));

	/* another thread closes it meanwhile: the read goes home after */
	memcpy(args, big, sizeof args);
	ck_assert_int_eq(fio_call(&f, getpid(), 4, SYS_read, args, 0, &seq,
	    &rv), FIO_WAIT);
	ck_assert_uint_eq(stream_drain(&f, r, 8), 3);
	memcpy(args, c5, sizeof args);
	ck_assert_int_eq(fio_call(&f, getpid(), 5, SYS_close, args, 0, &seq,
	    &rv), FIO_PASS);
	ck_assert_int_eq(stream_answer(&f, &r[0], 1, 0, &seq, &rv), -1);
	ck_assert_int_eq(f.waiting, 0);
	ck_assert_uint_eq(stream_drain(&f, r + 3, 5), 0);

	/* the home fails the first piece: home as it is, not read ahead */
	fio_free(&f);
	stream_open(&f, &seq);
	e = fio_find(&f, 5);
	memcpy(args, big, sizeof args);
	ck_assert_int_eq(fio_call(&f, getpid(), 6, SYS_read, args, 0, &seq,
	    &rv), FIO_WAIT);
	ck_assert_uint_eq(stream_drain(&f, r, 8), 3);
	ck_assert_int_eq(stream_answer(&f, &r[0], 1, EIO, &seq, &rv), -1);
	ck_assert_int_eq(e->readable, 0);
	ck_assert_int_eq(f.waiting, 0);
	fio_free(&f);
}
END_TEST

/* SES_READ_DATA's body, bytes | msg (len bytes of it, default all) | u32. */
static uint8_t *
stream_body(const Osm__RemoteReadData *m, const void *bytes, size_t n,
    size_t *len)
{
	size_t	 ml = osm__remote_read_data__get_packed_size(m);
	uint8_t	*b = malloc(n + ml + 4);

	ck_assert_ptr_nonnull(b);
	memcpy(b, bytes, n);
	osm__remote_read_data__pack(m, b + n);
	b[n + ml] = ml >> 24;
	b[n + ml + 1] = ml >> 16;
	b[n + ml + 2] = ml >> 8;
	b[n + ml + 3] = ml;
	*len = n + ml + 4;
	return b;
}

/*
 * The bytes read ahead come before their message, which says nothing of
 * them: unpacked, the message holds the body itself as its data; a body
 * that is not that layout is refused (and freed).
 */
START_TEST(test_read_data_unpack)
{
	Osm__RemoteReadData	 d = OSM__REMOTE_READ_DATA__INIT, *m;
	uint8_t			*b;
	size_t			 len;
	char			*cause = NULL;

	d.seq = 7;
	d.has_size = 1;
	d.size = 12345;
	b = stream_body(&d, "0123456789", 10, &len);
	m = fio_data_unpack(b, len, &cause);
	ck_assert_ptr_nonnull(m);
	ck_assert(m->data.data == b);
	ck_assert_uint_eq(m->data.len, 10);
	ck_assert_uint_eq(m->seq, 7);
	ck_assert_uint_eq(m->size, 12345);
	osm__remote_read_data__free_unpacked(m, NULL);	/* b with it */

	/* no bytes: a window of none */
	b = stream_body(&d, "", 0, &len);
	m = fio_data_unpack(b, len, &cause);
	ck_assert_ptr_nonnull(m);
	ck_assert_uint_eq(m->data.len, 0);
	osm__remote_read_data__free_unpacked(m, NULL);

	/* a length past the body, a body too short, bytes in the message */
	b = stream_body(&d, "0123", 4, &len);
	b[len - 4] = 1;
	ck_assert_ptr_null(fio_data_unpack(b, len, &cause));
	ck_assert_ptr_nonnull(strstr(cause, "malformed"));
	free(cause);
	b = malloc(3);
	ck_assert_ptr_null(fio_data_unpack(b, 3, &cause));
	free(cause);
	d.has_data = 1;
	d.data.data = (uint8_t *)"inside";
	d.data.len = 6;
	b = stream_body(&d, "", 0, &len);
	ck_assert_ptr_null(fio_data_unpack(b, len, &cause));
	ck_assert_ptr_nonnull(strstr(cause, "malformed"));
	free(cause);
}
END_TEST

void
check_remote_stream(Suite *s)
{
	TCase	*tc = tcase_create("stream");

	tcase_add_test(tc, test_stream);
	tcase_add_test(tc, test_stream_ends);
	tcase_add_test(tc, test_read_data_unpack);
	suite_add_tcase(s, tc);
}
