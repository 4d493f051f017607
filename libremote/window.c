/*
 * A descriptor's window of bytes read ahead (fileio.c): filled from the
 * home's RemoteReadData, served to R's reads and pread64s while fresh
 * (FIO_FRESH_NS), dropped when the file may have changed. A stream past
 * its first window has the window after it asked for as soon as it has
 * one (next): the home's read and the link's transfer overlap R's work on
 * the window before, instead of R waiting a round trip and a window's
 * bytes each time it reaches the end of one.
 */
#include <sys/uio.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "internal.h"
#include "proto/remote.pb-c.h"

static uint64_t window_gens;

/* Now, on the clock windows and what R wrote are timed by. */
uint64_t
window_now(void)
{
	struct timespec	ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

/* e's window is no longer the file's. */
void
window_drop(struct fio_fd *e)
{
	free(e->win.buf);
	memset(&e->win, 0, sizeof e->win);
	e->grow = 0;
	free(e->next.buf);
	memset(&e->next, 0, sizeof e->next);
	/* a window after this one on its way is for nobody now */
	e->gen = window_gen();
}

/* A generation no descriptor had: a window asked for under another is stale. */
uint64_t
window_gen(void)
{
	return ++window_gens;
}

/*
 * Write len bytes of e's window at off into R's buffer; R's read takes
 * them from its offset if move (a read; a pread64 moves none).
 */
long
window_serve(struct fio_fd *e, pid_t tid, uint64_t buf, uint64_t off,
    size_t len, int move)
{
	struct iovec	local, remote;
	size_t		n = e->win.off + e->win.len - off;

	if (n > len)
		n = len;
	local.iov_base = e->win.buf + (off - e->win.off);
	local.iov_len = n;
	remote.iov_base = (void *)(uintptr_t)buf;
	remote.iov_len = n;
	if (n > 0 && process_vm_writev(tid, &local, 1, &remote, 1, 0) !=
	    (ssize_t)n)
		return -EFAULT;
	if (move) {
		e->pos += n;
		e->seek += n;
	}
	return n;
}

/*
 * Can e's window serve a read of len bytes at off? 1 it can, 0 a fetch
 * (for the stream at off).
 */
int
window_servable(const struct fio_fd *e, uint64_t off, size_t len)
{
	uint64_t	end = e->win.off + e->win.len;

	if (e->win.buf == NULL || off < e->win.off || off >= end ||
	    window_now() - e->win.at > FIO_FRESH_NS)
		return 0;
	return end - off >= len || e->win.eof;
}

/*
 * The window of e: the bytes of data at off (taken, not copied: data is
 * left empty), of a file of size bytes; or, if next, the window after it.
 * A copy of each window was 6 % of the guest's time to receive it
 * (docs/PERFORMANCE.md, "Real programs").
 */
void
window_fill(struct fio_fd *e, uint64_t off, ProtobufCBinaryData *data,
    uint64_t size, int next)
{
	struct fio_win	*w = next ? &e->next : &e->win;

	free(w->buf);
	w->len = data->len;
	if (w->len > 0)
		w->buf = data->data;
	else {
		free(data->data);
		w->buf = xmalloc(1);	/* a window, of no bytes */
	}
	data->data = NULL;
	data->len = 0;
	w->off = off;
	w->eof = off + w->len >= size;
	w->at = window_now();
}

/*
 * R's read at off is past e's window, where the window after it starts:
 * that one is the window now (1), the stream's next grown.
 */
int
window_advance(struct fio_fd *e, uint64_t off)
{
	if (e->next.buf == NULL || off < e->next.off ||
	    off >= e->next.off + e->next.len ||
	    window_now() - e->next.at > FIO_FRESH_NS)
		return 0;
	free(e->win.buf);
	e->win = e->next;
	memset(&e->next, 0, sizeof e->next);
	e->grow = e->win.len;
	return 1;
}

/*
 * Is the window after e's to be asked for now, and which (*off, *len, up
 * to max bytes)? Only for a stream past its first window (a file read
 * once from its start, or a few bytes of it, costs no more than before),
 * one not at its file's end and with none after it yet.
 */
int
window_next_due(const struct fio_fd *e, size_t max, uint64_t *off,
    size_t *len)
{
	if (e->win.buf == NULL || e->win.eof || e->next.buf != NULL ||
	    e->grow <= FIO_WIN_MIN || !e->readable)
		return 0;
	*off = e->win.off + e->win.len;
	*len = e->grow * 2 > max ? max : e->grow * 2;
	return 1;
}

/* A RemoteRead (seq) of len bytes of e at off, packed into *n bytes. */
uint8_t *
window_ask(const struct fio_fd *e, uint64_t seq, uint64_t off, size_t len,
    size_t *n)
{
	Osm__RemoteRead	 r = OSM__REMOTE_READ__INIT;
	uint8_t		*msg;

	r.seq = seq;
	r.fd = e->fd;
	r.dev = e->dev;
	r.ino = e->ino;
	r.offset = off;
	r.length = len;
	msg = xmalloc(osm__remote_read__get_packed_size(&r));
	*n = osm__remote_read__pack(&r, msg);
	return msg;
}
