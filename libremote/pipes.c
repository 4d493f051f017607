/*
 * Writes to a pipe, a FIFO or a character device at home gathered behind
 * (docs/REMOTE.md, "Pipes and devices"). The home says what a descriptor
 * is at R's first write on it (fileio.c's question): one open for writing
 * and blocking, a terminal only without TOSTOP, is a pipe (FIO_PIPE);
 * an fcntl F_SETFL or an ioctl on it makes it asked again. R's writes on
 * it are answered at once and gathered, with the writes of regular
 * files, into the one batch of fileio.c: consecutive writes on one
 * descriptor, up to FIO_BATCH, sent before any other call of R's that
 * goes home (fio_call: a read of a regular file served here, or read
 * ahead, is none; the batch's file is no file), before a dump and R's
 * end, and at most the agent's delay after the first. The batch carries
 * the length of each write (RemoteCall.writes), and P makes each its own
 * write(2) at home, in order (home.c's home_pieces_next): a pipe's reader
 * sees the same writes, PIPE_BUF's atomicity and all, as from a process
 * at home; a writev would not be the same to a pipe others write too.
 *
 * A write that fails at home (EPIPE, its SIGPIPE P's and so R's; EIO of
 * a device) fails the next call on that descriptor, as a write behind of
 * a regular file does, and the descriptor is written as it is from then
 * on, so that each later write has its own answer, and its own SIGPIPE,
 * as at home. What R may be ahead of its reader is bounded: with
 * PIPES_AHEAD bytes written behind and not yet written at home (a pipe
 * whose reader is slow holds P in its write), R's next write goes home as
 * it is and waits, as it would have waited at home.
 *
 * A read of /dev/zero (the home says which pipe-like one is: zero) is
 * answered here with its zeros, with no round trip (dd if=/dev/zero).
 *
 * Not gathered: writes of more than FIO_BATCH, a terminal with TOSTOP
 * (a write from the background stops its writer), non-blocking
 * descriptors, sockets, a process that has had threads (another thread's
 * call at home may be what a blocked write waits for), mosrun -s.
 */
#include <sys/syscall.h>
#include <sys/uio.h>

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define PIPES_AHEAD	(1U << 20)	/* behind, not yet written at home */
#define PIPES_PARTS	(FIO_BATCH / 64)	/* writes in one batch */

/* Bytes of writes to pipes sent behind and not yet answered. */
static uint64_t
pipes_ahead(struct fio *f)
{
	struct fio_fd	*e;
	uint64_t	 n = 0;
	size_t		 i;

	for (i = 0; i < f->nbehind; i++) {
		if (f->behind[i].expect > 0 &&
		    (e = fio_find(f, f->behind[i].fd)) != NULL &&
		    e->state == FIO_PIPE)
			n += (uint64_t)f->behind[i].expect;
	}
	return n;
}

/*
 * May R's write on e join the batch of writes to f->bfd: the same
 * descriptor, or one the home said is the same open file (2>&1), each of
 * the other? Each answer held when it was given, and neither descriptor
 * was replaced since (that forgets it: fio_replaced), so the later of
 * the two still holds: the writes do at home on one what they would on
 * the other.
 */
static int
pipes_same(struct fio *f, const struct fio_fd *e)
{
	const struct fio_fd	*b;

	if (e->fd == f->bfd)
		return 1;
	return e->fd < 64 && f->bfd >= 0 && f->bfd < 64 &&
	    (b = fio_find(f, f->bfd)) != NULL && b->state == FIO_PIPE &&
	    (e->same & 1ULL << b->fd) != 0 && (b->same & 1ULL << e->fd) != 0;
}

/*
 * R's read of /dev/zero at home (args) answered here, as that file reads
 * anywhere: len bytes of 0 (cut as any read is), or EFAULT.
 */
static int
pipes_zero(pid_t tid, const uint64_t *args, long *rv)
{
	static const uint8_t	 zeros[65536];
	struct iovec		 local[64], remote;
	size_t			 len = (size_t)args[2], n, i;
	ssize_t			 w;

	if (len > RMT_IO_MAX)
		len = RMT_IO_MAX;
	for (i = 0; i < nitems(local); i++) {
		local[i].iov_base = (void *)zeros;
		local[i].iov_len = sizeof zeros;
	}
	for (n = 0; n < len; n += (size_t)w) {
		remote.iov_base = (void *)(uintptr_t)(args[1] + n);
		remote.iov_len = len - n;
		if ((w = process_vm_writev(tid, local, nitems(local), &remote,
		    1, 0)) <= 0)
			break;
	}
	/* a fault after some bytes: those, as the kernel's read says */
	*rv = n > 0 ? (long)n : -EFAULT;
	return 1;
}

/*
 * R's call nr (thread tid) before fileio.c's fio_call: 1 if it is a
 * write to a pipe gathered, a read of /dev/zero, or a call on a pipe
 * whose write behind failed (*rv its answer); 0 for fio_call to decide
 * (which sends what is gathered first, if it must).
 */
int
pipes_call(struct fio *f, pid_t tid, int nr, const uint64_t *args,
    uint64_t *seq, long *rv)
{
	struct iovec	 local, remote;
	struct fio_fd	*e;
	size_t		 len = (size_t)args[2];

	if (f->off)
		return 0;
	/* any other call: fio_call sends those gathered first, if it must */
	if (!fio_fd_call(nr) || (e = fio_find(f, (int)args[0])) == NULL ||
	    e->state != FIO_PIPE)
		return 0;
	fio_mark(f, e->fd);
	/* O_NONBLOCK may change (F_SETFL, FIONBIO): asked again at a write */
	if ((nr == SYS_fcntl && (int)args[1] == F_SETFL) || nr == SYS_ioctl) {
		fio_drop_fd(f, e->fd);
		return 0;
	}
	if (e->err != 0 && nr != SYS_close) {
		*rv = e->err;
		e->err = 0;
		e->behind = 0;	/* each write its own answer from now on */
		return 1;
	}
	if (nr == SYS_read && e->readable)
		return pipes_zero(tid, args, rv);
	if (nr != SYS_write || !e->behind || f->threaded || len == 0 ||
	    len > FIO_BATCH)	/* cat's 128 KiB: behind, a batch of one */
		return 0;
	if (f->blen > 0 && (!pipes_same(f, e) || f->bnr != SYS_write ||
	    f->nparts == 0 || f->blen + len > FIO_BATCH ||
	    f->nparts == PIPES_PARTS))
		fio_flush(f, seq);
	if (pipes_ahead(f) + f->blen + len > PIPES_AHEAD)
		return 0;	/* it waits for the home, as at home */
	if (f->buf == NULL)
		f->buf = xmalloc(FIO_BATCH);
	if (f->parts == NULL)
		f->parts = xcalloc(PIPES_PARTS, sizeof *f->parts);
	local.iov_base = f->buf + f->blen;
	local.iov_len = len;
	remote.iov_base = (void *)(uintptr_t)args[1];
	remote.iov_len = len;
	if (process_vm_readv(tid, &local, 1, &remote, 1, 0) != (ssize_t)len)
		return 0;	/* home says EFAULT, after those before */
	if (f->blen == 0) {
		f->bnr = SYS_write;
		f->bfd = e->fd;
		f->bdev = f->bino = 0;	/* no file's */
		f->boff = 0;
	}
	f->bvtid = f->vtid;
	f->parts[f->nparts++] = (uint32_t)len;
	f->blen += len;
	f->stats_piped++;
	*rv = (long)len;
	return 1;
}

/*
 * R has threads (made here, or brought): its writes to pipes go home
 * as they are from now on.
 */
void
pipes_threaded(struct remote *g)
{
	g->fio.threaded = 1;
}
