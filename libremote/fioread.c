/*
 * R's reads of regular files that wait for bytes from home (fileio.c
 * decides which): the fetch of a window for a read, the window after it
 * asked for while R takes this one (fio_ahead), a read larger than a
 * window streamed in pieces (fio_stream), and the bytes coming in
 * (fio_data).
 */
#include <sys/syscall.h>
#include <sys/uio.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "proto/remote.pb-c.h"

/* Ask home for len bytes of e at off (R waits, or fio_ahead): its seq. */
static uint64_t
fio_fetch(struct fio *f, struct fio_fd *e, uint64_t off, size_t len,
    uint64_t *seq)
{
	uint8_t	*msg;
	size_t	 n;

	msg = window_ask(e, ++*seq, off, len, &n);
	fio_push(f, REMOTE_OUT_READ, 0, msg, n);
	f->stats_fetches++;
	return *seq;
}

/* The window after e's, asked for while R takes this one: one at a time. */
void
fio_ahead(struct fio *f, struct fio_fd *e, uint64_t *seq)
{
	if (f->pre_busy || !window_next_due(e, FIO_WIN_MAX_BYTES, &f->pre_off,
	    &f->pre_len))
		return;
	f->pre_busy = 1;
	f->pre_fd = e->fd;
	f->pre_gen = e->gen;
	f->pre_seq = fio_fetch(f, e, f->pre_off, f->pre_len, seq);
}

/* R's read or pread64 (nr, args) of e at off waits for bytes from home. */
static void
fio_wait_start(struct fio *f, struct fio_fd *e, pid_t tid, uint64_t id,
    int nr, const uint64_t *args, uint64_t off)
{
	f->waiting = 1;
	memcpy(f->wait_args, args, sizeof f->wait_args);
	f->wait_nr = nr;
	f->wait_off = off;
	f->wait_id = id;
	f->wait_tid = tid;
	f->wait_fd = e->fd;
	f->wait_buf = args[1];
	f->wait_len = (size_t)args[2];
	f->wait_home = f->wait_stale = 0;
	f->wait_np = 0;
	f->wait_got = f->wait_asked = 0;
}

/* Is the window after e's, on its way, the one at off (of len at most)? */
static int
fio_adopt(const struct fio *f, const struct fio_fd *e, uint64_t off,
    size_t len)
{
	return f->pre_busy && f->pre_fd == e->fd && f->pre_gen == e->gen &&
	    off == f->pre_off && len <= f->pre_len;
}

/*
 * R's read or pread64 of e waits for a window at off, which grows with a
 * stream and starts small after a jump.
 */
enum fio_verdict
fio_wait(struct fio *f, struct fio_fd *e, pid_t tid, uint64_t id, int nr,
    const uint64_t *args, uint64_t off, uint64_t *seq)
{
	size_t	len = (size_t)args[2];
	/* the window after, on its way, is this read's if it holds it */
	int	adopt = fio_adopt(f, e, off, len);

	/* another thread's read waits for its window: this one goes home */
	if (f->waiting) {
		fio_settle_seek(f, e, seq);
		return FIO_PASS;
	}

	if (adopt)
		e->grow = f->pre_len;
	else if (e->win.buf != NULL && off >= e->win.off &&
	    off <= e->win.off + e->win.len)
		e->grow = e->grow * 2 > FIO_WIN_MAX_BYTES ? FIO_WIN_MAX_BYTES :
		    e->grow * 2;
	else
		e->grow = FIO_WIN_MIN;
	fio_wait_start(f, e, tid, id, nr, args, off);
	f->wait_stream = 0;
	if (adopt) {
		f->pre_busy = 0;
		f->wait_seq = f->pre_seq;
	} else
		f->wait_seq = fio_fetch(f, e, off, len > e->grow ? len :
		    e->grow, seq);
	return FIO_WAIT;
}

/* The pieces of a streamed read asked for, up to FIO_STREAM_AHEAD. */
static void
fio_stream_ask(struct fio *f, struct fio_fd *e, uint64_t *seq)
{
	size_t	n;

	while (f->wait_np < FIO_STREAM_AHEAD && !f->wait_home &&
	    f->wait_asked < f->wait_len) {
		n = f->wait_len - f->wait_asked;
		if (n > FIO_WIN_MAX_BYTES)
			n = FIO_WIN_MAX_BYTES;
		f->wait_plen[f->wait_np] = n;
		f->wait_pseq[f->wait_np++] = fio_fetch(f, e,
		    f->wait_off + f->wait_asked, n, seq);
		f->wait_asked += n;
	}
}

/*
 * R's read or pread64 of e at off, larger than a window, is streamed:
 * its pieces (windows of the largest size) are asked a few ahead, so that
 * the home's read and seal of one overlap the link's transfer and the
 * guest's receive of the one before, and each is written into R's buffer
 * as it comes, kept nowhere. Its bytes are the file's as the home reads
 * them then: nothing of it is kept to go stale.
 */
enum fio_verdict
fio_stream(struct fio *f, struct fio_fd *e, pid_t tid, uint64_t id, int nr,
    const uint64_t *args, uint64_t off, uint64_t *seq)
{
	if (f->waiting) {
		fio_settle_seek(f, e, seq);
		return FIO_PASS;
	}
	fio_wait_start(f, e, tid, id, nr, args, off);
	if (f->wait_len > FIO_STREAM_MAX)
		f->wait_len = FIO_STREAM_MAX;	/* as the kernel cuts a read */
	f->wait_stream = 1;
	/* the window after e's, on its way from here, is its first piece */
	if (fio_adopt(f, e, off, f->wait_len)) {
		f->pre_busy = 0;
		f->wait_plen[0] = f->pre_len;
		f->wait_pseq[0] = f->pre_seq;
		f->wait_np = 1;
		f->wait_asked = f->pre_len;
	}
	fio_stream_ask(f, e, seq);
	return FIO_WAIT;
}

/*
 * A piece of R's streamed read came (m, the first of those asked): 1 R's
 * answer is *rv, 0 more are to come (or R left its read: the rest is for
 * none), -1 R's read goes home as it is (a failure at home, another
 * thread's call on the descriptor).
 */
static int
fio_piece(struct fio *f, const Osm__RemoteReadData *m, int valid,
    uint64_t *seq, long *rv)
{
	struct iovec	 local, remote;
	struct fio_fd	*e = fio_find(f, f->wait_fd);
	size_t		 asked = f->wait_plen[0], n = m->data.len;

	memmove(f->wait_pseq, f->wait_pseq + 1, --f->wait_np *
	    sizeof *f->wait_pseq);
	memmove(f->wait_plen, f->wait_plen + 1, f->wait_np *
	    sizeof *f->wait_plen);
	if (!valid) {
		f->waiting = 0;
		return 0;
	}
	if (e == NULL || m->error != 0 || f->wait_home) {
		if (e != NULL && m->error != 0)
			e->readable = 0;
		f->waiting = 0;
		fio_flush(f, seq);
		if (e != NULL)
			fio_settle_seek(f, e, seq);
		return -1;
	}
	if (n > asked)
		n = asked;
	local.iov_base = m->data.data;
	local.iov_len = n;
	remote.iov_base = (void *)(uintptr_t)(f->wait_buf + f->wait_got);
	remote.iov_len = n;
	if (n > 0 && process_vm_writev(f->wait_tid, &local, 1, &remote, 1,
	    0) != (ssize_t)n) {
		f->waiting = 0;
		*rv = f->wait_got > 0 ? (long)f->wait_got : -EFAULT;
		goto done;
	}
	f->wait_got += n;
	/* a short piece is the file's end: those after it are for none */
	if (n == asked && f->wait_got < f->wait_len) {
		fio_stream_ask(f, e, seq);
		return 0;
	}
	f->waiting = 0;
	*rv = f->wait_got;
done:
	if (*rv > 0 && f->wait_nr == SYS_read) {
		e->pos += *rv;
		e->seek += *rv;
	} else if (*rv >= 0 && f->wait_nr == SYS_pread64) {
		e->pstream = 1;
		e->pnext = f->wait_off + *rv;
	}
	if (*rv >= 0)
		f->stats_served++;
	return 1;
}

/*
 * Bytes read ahead for R's waiting read (m), still waiting if valid, or
 * the window after one. *rv is R's answer when 1; 0: R left its read,
 * the data is for none, or the window after; -1: R's read (f->wait_*)
 * goes home as it is, after what is owed: the home could not read ahead
 * (its descriptor is read ahead no more), or another thread's call came.
 * A window kept takes m's bytes (m->data is left empty).
 */
int
fio_data(struct fio *f, Osm__RemoteReadData *m, int valid,
    uint64_t *seq, long *rv)
{
	struct fio_fd	*e;
	int		 stale = f->wait_stale;

	if (f->pre_busy && m->seq == f->pre_seq) {
		f->pre_busy = 0;
		e = fio_find(f, f->pre_fd);
		if (e != NULL && e->gen == f->pre_gen && m->error == 0 &&
		    m->data.len > 0)
			window_fill(e, f->pre_off, &m->data, m->size, 1);
		return 0;
	}
	if (f->waiting && f->wait_stream)
		return f->wait_np > 0 && m->seq == f->wait_pseq[0] ?
		    fio_piece(f, m, valid, seq, rv) : 0;
	if (!f->waiting || m->seq != f->wait_seq)
		return 0;
	f->waiting = 0;
	e = fio_find(f, f->wait_fd);
	if (e == NULL || m->error != 0 || f->wait_home) {
		if (e != NULL && m->error != 0)
			e->readable = 0;
		if (!valid)
			return 0;
		fio_flush(f, seq);
		if (e != NULL)
			fio_settle_seek(f, e, seq);
		return -1;
	}
	window_fill(e, f->wait_off, &m->data, m->size, 0);
	if (!valid) {
		if (stale)
			window_drop(e);
		return 0;	/* it reads again, from the window */
	}
	*rv = window_serve(e, f->wait_tid, f->wait_buf, f->wait_off, f->wait_len,
	    f->wait_nr == SYS_read);
	if (f->wait_nr == SYS_pread64 && *rv >= 0)
		e->pnext = f->wait_off + *rv;
	/* bytes maybe older than a change of the file made since: R's only */
	if (stale)
		window_drop(e);
	else
		fio_ahead(f, e, seq);
	f->stats_served++;
	return 1;
}

/*
 * SES_READ_DATA's body, msg (taken), len bytes: the file's bytes, then a
 * RemoteReadData without them, then that message's length (a u32 in
 * network order). The message, holding msg as its data (the window keeps
 * it: no copy), or NULL and why, msg freed.
 */
Osm__RemoteReadData *
fio_data_unpack(uint8_t *msg, size_t len, char **cause)
{
	Osm__RemoteReadData	*m = NULL;
	size_t			 mlen = 0;

	/* (not lib/frame.c's frame_get32, which would bring libcrypto in) */
	if (len >= 4)
		mlen = (size_t)msg[len - 4] << 24 | msg[len - 3] << 16 |
		    msg[len - 2] << 8 | msg[len - 1];
	if (len < 4 || len > RMT_MSG_MAX || mlen > len - 4 ||
	    (m = osm__remote_read_data__unpack(NULL, mlen,
	    msg + len - 4 - mlen)) == NULL || m->has_data) {
		xasprintf(cause, "malformed read-ahead data");
		goto fail;
	}
	if (len - 4 - mlen > FIO_WIN_MAX_BYTES) {
		xasprintf(cause, "read-ahead data of %zu bytes",
		    len - 4 - mlen);
		goto fail;
	}
	m->has_data = 1;
	m->data.data = msg;
	m->data.len = len - 4 - mlen;
	return m;

fail:
	if (m != NULL)
		osm__remote_read_data__free_unpacked(m, NULL);
	free(msg);
	return NULL;
}
