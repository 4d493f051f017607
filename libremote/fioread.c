/*
 * R's reads of regular files that wait for bytes from home (fileio.c
 * decides which): the fetch of a window for a read, the window after it
 * asked for while R takes this one (fio_ahead), and the bytes coming in
 * (fio_data).
 */
#include <sys/syscall.h>

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
	int	adopt = f->pre_busy && f->pre_fd == e->fd &&
	    f->pre_gen == e->gen && off == f->pre_off && len <= f->pre_len;

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
	f->waiting = 1;
	memcpy(f->wait_args, args, sizeof f->wait_args);
	f->wait_nr = nr;
	f->wait_off = off;
	f->wait_id = id;
	f->wait_tid = tid;
	f->wait_fd = e->fd;
	f->wait_buf = args[1];
	f->wait_len = len;
	f->wait_home = f->wait_stale = 0;
	if (adopt) {
		f->pre_busy = 0;
		f->wait_seq = f->pre_seq;
	} else
		f->wait_seq = fio_fetch(f, e, off, len > e->grow ? len :
		    e->grow, seq);
	return FIO_WAIT;
}

/*
 * Bytes read ahead for R's waiting read (m), still waiting if valid, or
 * the window after one. *rv is R's answer when 1; 0: R left its read,
 * the data is for none, or the window after; -1: R's read (f->wait_*)
 * goes home as it is, after what is owed: the home could not read ahead
 * (its descriptor is read ahead no more), or another thread's call came.
 */
int
fio_data(struct fio *f, const Osm__RemoteReadData *m, int valid,
    uint64_t *seq, long *rv)
{
	struct fio_fd	*e;
	int		 stale = f->wait_stale;

	if (f->pre_busy && m->seq == f->pre_seq) {
		f->pre_busy = 0;
		e = fio_find(f, f->pre_fd);
		if (e != NULL && e->gen == f->pre_gen && m->error == 0 &&
		    m->data.len > 0)
			window_fill(e, f->pre_off, m->data.data, m->data.len,
			    m->size, 1);
		return 0;
	}
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
	window_fill(e, f->wait_off, m->data.data, m->data.len, m->size, 0);
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
