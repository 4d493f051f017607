/*
 * Regular files away from home, in fewer and overlapped round trips
 * (docs/REMOTE.md, "Regular files"). The guest learns what each of R's
 * descriptors is at home the first time R reads or writes it (a
 * RemoteFdAsk before the call, answered in order); then, for a regular file:
 *
 *   - R's reads are served from a read-ahead window: bytes the home reads
 *     without moving the file offset (RemoteRead), fetched in blocks that
 *     grow with a sequential stream and are dropped on a seek elsewhere;
 *     the bytes R takes are owed to the home's offset, which moves by
 *     them (an lseek written behind) before any other call. A pread64
 *     that goes on where the last one ended is a stream too;
 *   - R's reads of bytes it wrote itself, a moment before, are served
 *     from what it wrote (held.c), without waiting for the writes behind;
 *   - R's lseeks and a terminal's ioctls (isatty) are answered from what
 *     the guest knows of the file (fio_here);
 *   - R's writes are answered at once and sent behind, run at home in
 *     their turn; a write that fails there makes the next call on that
 *     descriptor fail with its error (fsync and close included), as NFS
 *     does. Only while the home's file system has room for them, as its
 *     answers say (room.c): near full, a write goes home as it is, and
 *     its ENOSPC is its own, as at home.
 *
 * What is kept of a descriptor's offset holds while nothing unseen moves
 * it: one the home says shares its open file is not read ahead, and a
 * call that makes one share it (dup and its kind) or moves it by itself
 * (copy_file_range, sendfile, splice) settles it first (fio_moved,
 * fdcall.c's fdcall_moves).
 *
 * Data read ahead, and what R wrote, live only as long as their
 * descriptor, at most FIO_FRESH_NS, and until a lock is taken on the file
 * (as NFS drops its cache then), a write of the file's from here but the
 * descriptor's own gathered writes, or any call that may change files
 * (open with O_TRUNC, truncate, rename...). A writable shared mapping
 * of a file brings R home (request.c): none writes to a file here.
 * Writes to pipes and devices share the gathering (pipes.c).
 *
 * Messages to send go out in order through remote_out (the agent sends
 * them around the call it sends, if any). The state is keyed by
 * descriptor, for the process, whichever thread calls: every call of any
 * thread first settles what is owed before it (writes gathered, offsets).
 * With threads, a descriptor that has a call at home now (busy: another
 * thread's) is served nothing here until it is back, and one read waits
 * for a window at a time; another thread's call on the descriptor it
 * waits on sends it home as it is, after that call (docs/REMOTE.md,
 * "Threads").
 */
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <sys/uio.h>

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"
#include "proto/remote.pb-c.h"

#define FIO_WIN_MAX	FIO_WIN_MAX_BYTES
#define FIO_HELD_ONE	(64U << 10)	/* the largest read served from held */

static void	fio_sent_behind_pos(struct fio *, struct fio_fd *, int,
		    int64_t);

/*
 * Room at the batch's end for R's write (nr) of len bytes on e, at off
 * for a pwrite64: those gathered before that cannot go with it go home
 * first.
 */
static uint8_t *
fio_batch_room(struct fio *f, const struct fio_fd *e, int nr, uint64_t off,
    size_t len, uint64_t *seq)
{
	if (f->blen > 0 && (f->bfd != e->fd || f->bnr != nr ||
	    (nr == SYS_pwrite64 && off != f->boff + f->blen) ||
	    f->blen + len > FIO_BATCH))
		fio_flush(f, seq);
	if (f->buf == NULL)
		f->buf = xmalloc(FIO_BATCH);
	return f->buf + f->blen;
}

/*
 * The len bytes at the batch's end are R's write (nr) on e, at off for a
 * pwrite64: gathered. Where it lands is not sure while another call on e
 * is at home (busy).
 */
static void
fio_batch_add(struct fio *f, struct fio_fd *e, int nr, uint64_t off,
    size_t len, int busy)
{
	if (f->blen == 0) {
		f->bnr = nr;
		f->bfd = e->fd;
		f->bdev = e->dev;
		f->bino = e->ino;
		f->boff = off;
	}
	/* where it lands, for R to read it back from here (not O_APPEND) */
	f->bvtid = f->vtid;
	if (!e->append && (nr == SYS_pwrite64 || (e->pos_known && !busy)))
		held_put(&f->held, e->fd, nr == SYS_pwrite64 ? off :
		    e->pos, f->buf + f->blen, len, window_now(), FIO_FRESH_NS);
	else
		held_drop(&f->held, e->fd);
	f->blen += len;
	/* the stub in R may gather the next (fio_wstub) */
	f->wlive = 1;
	f->wfd = e->fd;
	f->wnr = nr;
	f->wnext = off + len;
}

/*
 * R's write (or pwrite64) of len bytes at buf, on e, gathered with those
 * before it: 1 (its answer *rv), or 0 if it goes as it is.
 */
static int
fio_gather(struct fio *f, struct fio_fd *e, pid_t tid, int nr,
    const uint64_t *args, int busy, uint64_t *seq, long *rv)
{
	struct iovec	local, remote;
	size_t		len = args[2];

	if (len == 0 || len > FIO_BATCH_ONE) {
		fio_flush(f, seq);	/* it goes after those before it */
		return 0;
	}
	local.iov_base = fio_batch_room(f, e, nr, args[3], len, seq);
	local.iov_len = len;
	remote.iov_base = (void *)(uintptr_t)args[1];
	remote.iov_len = len;
	if (process_vm_readv(tid, &local, 1, &remote, 1, 0) != (ssize_t)len) {
		fio_flush(f, seq);	/* home says EFAULT, or what it says */
		return 0;
	}
	fio_batch_add(f, e, nr, args[3], len, busy);
	*rv = len;
	return 1;
}

/*
 * The descriptor whose next write (*nr: or pwrite64, at *off) the stub in
 * R may gather now (rstub.c), ring bytes of them at most: one that R's
 * last write gathered was on, which fio_call would gather again (known,
 * written behind, no error to tell, no offset owed, room at home for all
 * of them). NULL if none.
 */
struct fio_fd *
fio_wstub(struct fio *f, size_t ring, int *nr, uint64_t *off)
{
	struct fio_fd	*e;

	if (f->off || !f->wlive || (e = fio_find(f, f->wfd)) == NULL ||
	    e->state != FIO_KNOWN || !e->behind || e->err != 0 ||
	    e->seek != 0 || (f->waiting && f->wait_fd == e->fd) ||
	    !room_for(f, e, ring + (ring / FIO_BATCH + 2) * FIO_SLACK))
		return NULL;
	*nr = f->wnr;
	*off = f->wnext;
	return e;
}

/*
 * R's writes (nr) on fd that the stub in R gathered (rstub.c), len bytes
 * at bytes, the first at off for a pwrite64: taken in as fio_call takes
 * in each write it gathers, in R's order after those before them, but
 * that they drop only the windows of the file that hold any of their
 * bytes (the stub served no read of them: wsame). R was told they were
 * written: they go home whatever became of fd here.
 */
void
fio_written(struct fio *f, int fd, int nr, uint64_t off,
    const uint8_t *bytes, size_t len, uint64_t *seq)
{
	struct fio_fd	*e = fio_find(f, fd), none;
	size_t		 n;

	if (e == NULL || e->state != FIO_KNOWN) {
		memset(&none, 0, sizeof none);
		none.fd = fd;
		none.append = 1;	/* nothing held */
		e = &none;
		fio_drop_file(f, 1, 0, 0, -1);
	} else if (nr == SYS_pwrite64 || (e->pos_known && !e->append))
		fio_drop_range(f, e->dev, e->ino, e->fd, nr == SYS_pwrite64 ?
		    off : e->pos, len);
	else
		fio_drop_file(f, 0, e->dev, e->ino, e->fd);
	/* written since its last sync: its close may have that to tell */
	if (e != &none)
		e->wgen++;
	/* an fstat after them is not one right after an open */
	f->ostat_ok = 0;
	while (len > 0) {
		n = len < FIO_BATCH_ONE ? len : FIO_BATCH_ONE;
		memcpy(fio_batch_room(f, e, nr, off, n, seq), bytes, n);
		fio_batch_add(f, e, nr, off, n, 0);
		if (e != &none)
			fio_sent_behind_pos(f, e, nr, n);
		bytes += n;
		off += n;
		len -= n;
	}
	if (e == &none)
		f->wlive = 0;
}

/* Descriptor fd as it is before R's call (fio_unanswered). */
void
fio_mark(struct fio *f, int fd)
{
	struct fio_fd	*e = fio_find(f, fd);

	f->mark.fd = e != NULL ? fd : -1;
	if (e != NULL)
		f->mark.was = *e;
	f->mark.blen = f->blen;
}

/*
 * R never had the answer fio_call or pipes_call gave its call nr (R left
 * the call for a signal, and makes it again after its handler): as if it
 * had not been made. A write gathered leaves the batch (its bytes are the
 * batch's last), the offset it or a read moved goes back, a failure it
 * told is told again, what was kept to be read back of the descriptor
 * goes. Else the write would be made twice, a read would skip bytes.
 */
void
fio_unanswered(struct fio *f, int nr, const uint64_t *args, long rv)
{
	struct fio_fd	*e = fio_find(f, (int)args[0]);
	const struct fio_fd *was = &f->mark.was;

	/* a close behind: it is made (at home, in its turn) all the same */
	if (nr == SYS_close && e == NULL && f->mark.fd == (int)args[0]) {
		f->reclose = 1;
		f->reclose_fd = (int)args[0];
		f->reclose_rv = rv;
		return;
	}
	if (e == NULL || f->mark.fd != e->fd)
		return;
	if ((nr == SYS_write || nr == SYS_pwrite64) && rv > 0 &&
	    f->bfd == e->fd && f->blen >= (size_t)rv) {
		f->blen -= rv;
		if (e->state == FIO_PIPE && f->nparts > 0)
			f->nparts--;
		held_drop(&f->held, e->fd);
	}
	e->pos = was->pos;
	e->pos_known = was->pos_known;
	e->seek = was->seek;
	e->pstream = was->pstream;
	e->pnext = was->pnext;
	e->behind = was->behind;
	if (rv < 0 && e->err == 0)
		e->err = was->err;
}

static void
fio_ask(struct fio *f, struct fio_fd *e, uint64_t *seq)
{
	Osm__RemoteFdAsk	 a = OSM__REMOTE_FD_ASK__INIT;
	uint8_t			*msg;

	a.seq = ++*seq;
	a.fd = e->fd;
	msg = xmalloc(osm__remote_fd_ask__get_packed_size(&a));
	/* before the call: its answer comes first, and the call's follows */
	fio_push(f, REMOTE_OUT_FD_ASK, 0, msg,
	    osm__remote_fd_ask__pack(&a, msg));
	e->state = FIO_ASKED;
}

int
fio_fd_call(int nr)
{
	switch (nr) {
	case SYS_read:
	case SYS_write:
	case SYS_pread64:
	case SYS_pwrite64:
	case SYS_readv:
	case SYS_writev:
	case SYS_preadv:
	case SYS_pwritev:
	case SYS_preadv2:
	case SYS_pwritev2:
	case SYS_lseek:
	case SYS_fstat:
	case SYS_fsync:
	case SYS_fdatasync:
	case SYS_ftruncate:
	case SYS_fallocate:
	case SYS_close:
	case SYS_flock:
	case SYS_fcntl:
	case SYS_ioctl:
	case SYS_sync_file_range:
	case SYS_fadvise64:
	case SYS_fstatfs:
	case SYS_getdents64:
	case SYS_sendfile:
		return 1;
	}
	return 0;
}

/* R's calls at home (pending) on descriptor fd of those above, but skip. */
int
fio_on_fd(const struct remote_pending *pending, size_t n, uint64_t fd,
    uint64_t skip)
{
	size_t	i;
	int	busy = 0;

	for (i = 0; i < n; i++)
		busy += pending[i].call.seq != skip &&
		    fio_fd_call(pending[i].call.nr) &&
		    pending[i].call.args[0] == fd;
	return busy;
}

/*
 * dup2 and dup3 close their target, close_range its range: what R owed
 * those descriptors' offsets is paid first, and they are forgotten (a
 * new descriptor only ever takes a free number).
 */
static void
fio_replaced(struct fio *f, int nr, const uint64_t *args, uint64_t *seq)
{
	uint64_t	lo, hi;
	size_t		i;

	if (nr == SYS_dup2 || nr == SYS_dup3)
		lo = hi = (uint32_t)args[1];
	else if (nr == SYS_close_range) {
		lo = (uint32_t)args[0];
		hi = (uint32_t)args[1];
	} else
		return;
	fio_flush(f, seq);
	for (i = 0; i < f->nfds; i++) {
		if ((uint64_t)f->fds[i].fd >= lo &&
		    (uint64_t)f->fds[i].fd <= hi) {
			fio_settle_seek(f, &f->fds[i], seq);
			fio_forget(f, &f->fds[i--]);
		}
	}
}

/*
 * A call that makes a descriptor of ours share its offset with another,
 * or moves it by itself (fdcall_moves): what R owes that offset is paid
 * before it, and the guest knows it no longer (pos_known off, until an
 * lseek). A descriptor duplicated is read at home from then on, as one
 * the home said shares its offset: the other's calls move it unseen; what
 * was read ahead or held of it goes. One asked about and not answered yet
 * is forgotten (the answer would say its offset before the call), asked
 * again at its next read or write; a read waiting for its window on one
 * goes home as it is, after the call.
 */
static void
fio_moved(struct fio *f, int nr, const uint64_t *args, uint64_t *seq)
{
	struct fio_fd	*e;
	int		 fds[2], dups, n, i;

	n = fdcall_moves(nr, args, fds, &dups);
	for (i = 0; i < n; i++) {
		if ((e = fio_find(f, fds[i])) == NULL || e->state == FIO_OTHER)
			continue;
		if (f->waiting && f->wait_fd == e->fd)
			f->wait_home = 1;
		if (e->state != FIO_KNOWN) {
			fio_forget(f, e);
			continue;
		}
		fio_flush(f, seq);
		fio_settle_seek(f, e, seq);
		e->pos_known = 0;
		e->wgen++;	/* copy_file_range, sendfile may write it */
		if (dups) {
			e->readable = 0;
			e->alone = 0;
			window_drop(e);
			held_drop(&f->held, e->fd);
		}
	}
}

#define FIO_SEEK_MAX	(1ULL << 40)	/* an lseek beyond goes home */
/* _IOR('T', 0x2A, struct termios2), which <termios.h> has no room for */
#define FIO_TCGETS2	0x802c542aU

/* A terminal's ioctl, to be answered ENOTTY for a regular file. */
static int
fio_tty_ioctl(unsigned int cmd)
{
	return cmd == TCGETS || cmd == FIO_TCGETS2 || cmd == TIOCGWINSZ ||
	    cmd == TIOCGPGRP;
}

/*
 * R's call nr (args) on e, a regular file no other call of R's is on at
 * home, answered from what the guest knows of it (*rv, 1; 0: it goes
 * home): a terminal's ioctl with the ENOTTY the file's file system
 * answers (RemoteFdInfo.notty: isatty() of each file Python and perl
 * open); an lseek from the offset R has, while no other descriptor of
 * P's shares it, to SEEK_SET or SEEK_CUR within FIO_SEEK_MAX (ours and
 * every file system's largest file), where it cannot fail. The home's
 * offset follows as a window's reads make it: what R owes it (e->seek)
 * goes behind before anything that could see it.
 */
static int
fio_here(struct fio *f, struct fio_fd *e, int nr, const uint64_t *args,
    long *rv)
{
	int64_t	by = (int64_t)args[1];
	uint64_t to;

	if (nr == SYS_ioctl && e->notty &&
	    fio_tty_ioctl((unsigned int)args[1])) {
		*rv = -ENOTTY;
		f->stats_here++;
		return 1;
	}
	if (nr != SYS_lseek || !e->pos_known || !e->alone ||
	    by < -(int64_t)FIO_SEEK_MAX || by > (int64_t)FIO_SEEK_MAX)
		return 0;
	if ((int)args[2] == SEEK_SET)
		to = (uint64_t)by;
	else if ((int)args[2] == SEEK_CUR && (by >= 0 ||
	    e->pos >= (uint64_t)-by))
		to = e->pos + by;
	else
		return 0;
	if (to > FIO_SEEK_MAX)
		return 0;
	e->seek += to - e->pos;
	e->pos = to;
	*rv = (long)to;
	f->stats_here++;
	return 1;
}

enum fio_where {
	FIO_HOME,		/* neither: fetched, or home as it is */
	FIO_WINDOW,		/* from the window read ahead */
	FIO_HELD,		/* from what R wrote */
};

/*
 * Where R's read or pread64 (nr, args) of e can be served: its window
 * first (dropped by any write of the file since it was read, so never
 * older than what R wrote), then what R wrote, then home.
 */
static enum fio_where
fio_where(struct fio *f, const struct fio_fd *e, int nr, const uint64_t *args)
{
	struct iovec	iov[FIO_HELD_ONE / 4096 + 2];
	size_t		len = (size_t)args[2], niov;
	uint64_t	off;

	if (e->state != FIO_KNOWN || !e->readable || e->err != 0 ||
	    len == 0 || len > FIO_WIN_MAX)
		return FIO_HOME;
	if (nr == SYS_read && e->pos_known)
		off = e->pos;
	else if (nr == SYS_pread64 && (int64_t)args[3] >= 0)
		off = args[3];
	else
		return FIO_HOME;
	if (window_servable(e, off, len))
		return FIO_WINDOW;
	if (len > FIO_HELD_ONE)
		return FIO_HOME;
	if (held_get(&f->held, e->fd, off, len, window_now(), FIO_FRESH_NS,
	    iov, nitems(iov), &niov))
		return FIO_HELD;
	return FIO_HOME;
}

/* R's read or pread64 of e served from what R wrote, as fio_where said. */
static long
fio_serve_held(struct fio *f, struct fio_fd *e, pid_t tid, int nr,
    const uint64_t *args)
{
	struct iovec	iov[FIO_HELD_ONE / 4096 + 2], remote;
	size_t		len = (size_t)args[2], niov;
	uint64_t	off = nr == SYS_read ? e->pos : args[3];

	if (!held_get(&f->held, e->fd, off, len, window_now(), FIO_FRESH_NS,
	    iov, nitems(iov), &niov))
		return -EIO;	/* fio_where said otherwise */
	remote.iov_base = (void *)(uintptr_t)args[1];
	remote.iov_len = len;
	if (process_vm_writev(tid, iov, niov, &remote, 1, 0) != (ssize_t)len)
		return -EFAULT;
	if (nr == SYS_read) {
		e->pos += len;
		e->seek += len;
	}
	f->stats_held++;
	return len;
}

/*
 * R's forwarded call nr (tid, notification id) before it is sent home:
 *
 *   FIO_PASS    send it home as it is (args may have changed: an lseek
 *		 taking what R owes the offset)
 *   FIO_BEHIND  send it home behind; answer R with *rv now
 *   FIO_ANSWER  answer R with *rv: served from a window, or a deferred
 *		 error
 *   FIO_WAIT    R waits for its window: the fetch is queued
 *
 * busy is the number of R's calls at home now on the call's descriptor
 * (other threads': those of fio_fd_call).
 */
enum fio_verdict
fio_call(struct fio *f, pid_t tid, uint64_t id, int nr, uint64_t *args,
    int busy, uint64_t *seq, long *rv)
{
	struct fio_fd	*e = NULL;
	enum fio_where	 where = FIO_HOME;
	int		 fd = (int)args[0];
	size_t		 len;

	if (f->off)
		return FIO_PASS;
	fio_mark(f, fd);
	/*
	 * The close R makes again after a signal's handler, of the one
	 * behind it left (fio_unanswered): made already, its answer the
	 * same. Any other call ends that.
	 */
	if (f->reclose) {
		f->reclose = 0;
		if (nr == SYS_close && fd == f->reclose_fd) {
			*rv = f->reclose_rv;
			return FIO_ANSWER;
		}
	}
	/* an fstat right after an open: the open's reply said it */
	if (fio_open_stat(f, tid, nr, args, rv))
		return FIO_ANSWER;
	fio_locks_other(f, nr, args);
	fio_replaced(f, nr, args, seq);
	fio_moved(f, nr, args, seq);
	if (fio_fd_call(nr))
		e = fio_find(f, fd);
	/*
	 * A read of another thread's waits on e for its window: it goes home
	 * as it is after this call (which the home then sees first), so that
	 * the two never take the same bytes.
	 */
	if (e != NULL && f->waiting && f->wait_fd == e->fd) {
		f->wait_home = 1;
		busy++;
	}
	if (e != NULL && busy == 0 && (nr == SYS_read || nr == SYS_pread64)) {
		if (e->next.buf != NULL)
			window_advance(e, nr == SYS_read ? e->pos : args[3]);
		where = fio_where(f, e, nr, args);
	}
	/*
	 * Writes gathered go before anything else, but the next of them, a
	 * read served here (from a window, older than no write of its file,
	 * or from what R wrote, those writes included) and a read of another
	 * file fetched ahead: one of the same file fetched must see them.
	 */
	if (f->blen > 0 && !(e != NULL && e->state == FIO_KNOWN &&
	    (((nr == SYS_write || nr == SYS_pwrite64) && e->fd == f->bfd) ||
	    ((nr == SYS_read || nr == SYS_pread64) && (where != FIO_HOME ||
	    e->dev != f->bdev || e->ino != f->bino)))))
		fio_flush(f, seq);
	/*
	 * R sees what it wrote: a call that may change a file drops every
	 * window, but for a call on a known descriptor (a regular file's
	 * drops that file's below; a pipe's, a socket's, a terminal's change
	 * no file).
	 */
	if ((e == NULL || e->state == FIO_ASKED) && !fdcall_harmless(nr, args))
		fio_drop_file(f, 1, 0, 0, -1);
	if (e == NULL || e->state != FIO_KNOWN) {
		/* another call may show an offset owed: pay them first */
		fio_settle(f, seq);
		if (e == NULL && (nr == SYS_read || nr == SYS_write ||
		    nr == SYS_pwrite64 || nr == SYS_writev ||
		    nr == SYS_pread64)) {
			e = fio_add(f, fd);
			fio_ask(f, e, seq);
		}
		if (e != NULL && nr == SYS_close) {
			/* a directory's: nothing it could fail to write */
			if (fio_close_clean(f, e, busy)) {
				fio_close_behind(f, fd, seq);
				fio_forget(f, e);
				*rv = 0;
				return FIO_ANSWER;
			}
			fio_forget(f, e);
		}
		return FIO_PASS;
	}

	/* a write behind failed: this call says so (close still closes) */
	if (e->err != 0 && nr != SYS_close) {
		*rv = e->err;
		e->err = 0;
		return FIO_ANSWER;
	}
	if (busy == 0 && fio_here(f, e, nr, args, rv))
		return FIO_ANSWER;
	len = (size_t)args[2];
	if (where == FIO_WINDOW) {
		*rv = window_serve(e, tid, args[1], nr == SYS_read ? e->pos :
		    args[3], len, nr == SYS_read);
		f->stats_served++;
		fio_ahead(f, e, seq);
	} else if (where == FIO_HELD)
		*rv = fio_serve_held(f, e, tid, nr, args);
	if (where != FIO_HOME) {
		if (nr == SYS_pread64 && *rv >= 0) {
			e->pstream = 1;
			e->pnext = args[3] + *rv;
		}
		return FIO_ANSWER;
	}
	/* larger than a window: streamed in pieces, asked ahead */
	if (nr == SYS_read && busy == 0 && e->readable && e->pos_known &&
	    len > FIO_WIN_MAX)
		return fio_stream(f, e, tid, id, nr, args, e->pos, seq);
	if (nr == SYS_read && busy == 0 && e->readable && e->pos_known &&
	    len > 0)
		return fio_wait(f, e, tid, id, nr, args, e->pos, seq);
	if (nr == SYS_pread64 && busy == 0 && e->readable &&
	    len > FIO_WIN_MAX && (int64_t)args[3] >= 0)
		return fio_stream(f, e, tid, id, nr, args, args[3], seq);
	if (nr == SYS_pread64 && busy == 0 && e->readable && len > 0 &&
	    (int64_t)args[3] >= 0) {
		/* one on from where the last ended is a stream: read ahead */
		if (e->pstream && args[3] == e->pnext)
			return fio_wait(f, e, tid, id, nr, args, args[3], seq);
		e->pstream = 0;		/* fio_result says where it ends */
	}
	if (nr == SYS_lseek) {
		/* owed goes first, behind: a call broken off goes again as is */
		if ((int)args[2] == SEEK_CUR)
			fio_settle_seek(f, e, seq);
		e->seek = 0;
		e->pos_known = 0;
		return FIO_PASS;
	}
	if (nr != SYS_pwrite64)
		fio_settle_seek(f, e, seq);
	if (nr == SYS_close) {
		/*
		 * Behind, if nothing of its own is left to fail; and if a
		 * write behind failed, the close says so and still closes.
		 */
		if (e->err != 0 || fio_close_clean(f, e, busy)) {
			*rv = e->err;
			fio_close_behind(f, fd, seq);
			fio_forget(f, e);
			return FIO_ANSWER;
		}
		/*
		 * Kept until its reply, which says the failure of a write
		 * behind whose reply comes first (fio_result); nothing is
		 * served of it meanwhile.
		 */
		window_drop(e);
		held_drop(&f->held, e->fd);
		e->state = FIO_OTHER;
		e->dir = 0;
		e->closing = 1;
		return FIO_PASS;
	}
	/* synced up to its writes so far, if it says so (fio_result) */
	if ((nr == SYS_fsync || nr == SYS_fdatasync) && busy == 0) {
		e->sync_at = e->wgen;
		e->syncing = 1;
	}
	/* its writes land at the end from now on, not at its offset */
	if (nr == SYS_fcntl && (int)args[1] == F_SETFL &&
	    (args[2] & O_APPEND) != 0)
		e->append = 1;
	/*
	 * A write drops the file's windows and what other descriptors of it
	 * wrote; what this one wrote is kept for a write gathered (which
	 * updates it), forgotten for any other. Any other call that may
	 * change the file, or takes a lock on it, drops all of it.
	 */
	if (nr == SYS_write || nr == SYS_pwrite64)
		fio_drop_file(f, 0, e->dev, e->ino, e->fd);
	else if (!fdcall_keeps(nr, args))
		fio_drop_file(f, 0, e->dev, e->ino, -1);
	/* what its close could have to write (a lock writes nothing) */
	if (!fdcall_keeps(nr, args) && nr != SYS_fcntl)
		e->wgen++;
	/*
	 * An unlock, a downgrade: behind, in its turn (what it drops is
	 * dropped). With another call on it at home, the locks R holds
	 * on the file may come out in either order: forgotten.
	 */
	if (nr == SYS_fcntl && busy == 0 && fio_locks_call(f, e, tid, args))
		return FIO_BEHIND;
	if (nr == SYS_fcntl && busy > 0) {
		fio_locks_forget(f, 0, e->dev, e->ino);
		e->lk_wait = 0;
	}
	if ((nr == SYS_write || nr == SYS_pwrite64) && e->behind) {
		if (room_for(f, e, len)) {
			if (fio_gather(f, e, tid, nr, args, busy, seq,
			    rv)) {
				fio_sent_behind_pos(f, e, nr, *rv);
				return FIO_ANSWER;
			}
			held_drop(&f->held, e->fd);
			return FIO_BEHIND;
		}
		/* after those before it, which had room */
		fio_flush(f, seq);
		f->stats_at_once++;
	}
	if (nr == SYS_write || nr == SYS_pwrite64)
		held_drop(&f->held, e->fd);
	/*
	 * A call that may move the offset: unknown after it (an ioctl's
	 * that failed did nothing: fio_result). fcntl moves none (its dups
	 * are fio_moved's): a program that sets its flags before it reads
	 * (xz clears O_NONBLOCK) keeps its reads ahead.
	 */
	e->pos_was = e->pos_known;
	if (nr != SYS_read && nr != SYS_pread64 && nr != SYS_fstat &&
	    nr != SYS_fsync && nr != SYS_fdatasync && nr != SYS_pwrite64 &&
	    nr != SYS_fcntl && nr != SYS_flock && nr != SYS_fadvise64 &&
	    nr != SYS_fstatfs && nr != SYS_sync_file_range)
		e->pos_known = 0;
	return FIO_PASS;
}

/* R's offset after a write behind of n bytes. */
static void
fio_sent_behind_pos(struct fio *f, struct fio_fd *e, int nr, int64_t n)
{
	if (e == NULL || nr == SYS_pwrite64)
		return;
	if (e->pos_known && !e->append)
		e->pos += n;
	else
		e->pos_known = 0;
}

/* A call sent behind (seq), answered expect bytes. */
void
fio_sent_behind(struct fio *f, uint64_t seq, int nr, const uint64_t *args,
    int64_t expect)
{
	struct fio_fd	*e = fio_find(f, (int)args[0]);

	fio_behind_add(f, seq, (int)args[0], expect, e != NULL ? e->dev : 0,
	    e != NULL && expect >= 0 && (nr == SYS_write ||
	    nr == SYS_pwrite64) ? (uint64_t)expect + FIO_SLACK : 0);
	f->stats_behind++;
	fio_sent_behind_pos(f, e, nr, expect);
}

/*
 * The reply to a call sent behind, if seq is one: 1 (its failure kept for
 * the next call on its descriptor), 0 not one. A write's says the room
 * left on its file system (fs_free; -1 if it does not).
 */
int
fio_behind_reply(struct fio *f, uint64_t seq, int64_t ret, int64_t fs_free,
    int64_t *expect)
{
	struct fio_fd	*e;
	struct fio_fs	*fs;
	size_t		 i;

	for (i = 0; i < f->nbehind; i++) {
		if (f->behind[i].seq == seq)
			break;
	}
	if (i == f->nbehind)
		return 0;
	*expect = f->behind[i].expect;
	if ((ret < 0 || (f->behind[i].expect >= 0 &&
	    ret != f->behind[i].expect)) &&
	    (e = fio_find(f, f->behind[i].fd)) != NULL && e->err == 0) {
		/* a short write is one whose rest the home could not write */
		e->err = ret < 0 ? ret : -EIO;
		f->stats_errors++;
		/* an unlock or a downgrade that failed: locks unknown */
		fio_locks_forget(f, 0, e->dev, e->ino);
		fio_drop_file(f, 0, e->dev, e->ino, -1);
	}
	if (f->behind[i].charge > 0 &&
	    (fs = room_fs(f, f->behind[i].dev, 0)) != NULL)
		fs->ahead -= f->behind[i].charge;
	if (f->behind[i].expect >= 0)
		room_told(f, f->behind[i].dev, fs_free);
	f->behind[i] = f->behind[--f->nbehind];
	return 1;
}

/*
 * A forwarded call's result, before R has it: offsets follow, a write's
 * reply says the room left on its file system (fs_free, or -1), and a
 * failure behind that came meanwhile is this call's to tell. others: R's
 * calls at home on the same descriptor but this one.
 */
void
fio_result(struct fio *f, int nr, const uint64_t *args, int64_t *ret,
    int64_t fs_free, int others)
{
	struct fio_fd	*e;

	if (!fio_fd_call(nr) || (e = fio_find(f, (int)args[0])) == NULL)
		return;
	if (nr == SYS_fcntl && fdcall_is_lock((int)args[1]))
		fio_locks_result(f, e, *ret);
	if (nr == SYS_ioctl && *ret < 0 && others == 0 && e->state == FIO_KNOWN)
		e->pos_known = e->pos_was;
	if (nr == SYS_close && e->closing) {
		if (e->err != 0 && *ret >= 0)
			*ret = e->err;
		fio_forget(f, e);
		return;
	}
	/* others at home on it meanwhile (threads): in which order, unsure */
	if (others > 0 && nr != SYS_pread64 && nr != SYS_pwrite64)
		e->pos_known = 0;
	if ((nr == SYS_write || nr == SYS_pwrite64) && e->state == FIO_KNOWN)
		room_told(f, e->dev, fs_free);
	if (nr == SYS_lseek && *ret >= 0) {
		e->pos = *ret;
		e->pos_known = 1;
	} else if ((nr == SYS_read || (nr == SYS_write && !e->append)) &&
	    *ret >= 0 && e->pos_known)
		e->pos += *ret;
	if (nr == SYS_pread64 && *ret >= 0) {
		e->pstream = 1;
		e->pnext = args[3] + *ret;
	}
	if (e->err != 0 && *ret >= 0) {
		*ret = e->err;
		e->err = 0;
	}
	if ((nr == SYS_fsync || nr == SYS_fdatasync) && e->syncing) {
		if (*ret == 0)
			e->synced = e->sync_at;
		e->syncing = 0;
	}
}
