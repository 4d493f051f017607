/*
 * A descriptor's window of bytes read ahead (fileio.c): filled from the
 * home's RemoteReadData, served to R's reads and pread64s while fresh
 * (FIO_FRESH_NS), dropped when the file may have changed.
 */
#include <sys/uio.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "internal.h"

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
	free(e->win);
	e->win = NULL;
	e->win_len = 0;
	e->grow = 0;
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
	size_t		n = e->win_off + e->win_len - off;

	if (n > len)
		n = len;
	local.iov_base = e->win + (off - e->win_off);
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
	uint64_t	end = e->win_off + e->win_len;

	if (e->win == NULL || off < e->win_off || off >= end ||
	    window_now() - e->win_at > FIO_FRESH_NS)
		return 0;
	return end - off >= len || e->win_eof;
}

/* The window of e: len bytes of data at off, of a file of size bytes. */
void
window_fill(struct fio_fd *e, uint64_t off, const uint8_t *data, size_t len,
    uint64_t size)
{
	free(e->win);
	e->win = xmalloc(len > 0 ? len : 1);
	if (len > 0)
		memcpy(e->win, data, len);
	e->win_off = off;
	e->win_len = len;
	e->win_eof = off + len >= size;
	e->win_at = window_now();
}
