/*
 * Calls on regular files whose answer the guest knows, sent behind or
 * answered here (docs/REMOTE.md, "Calls behind"): a transactional
 * program (sqlite3's autocommit) makes some twenty calls home a commit,
 * and these need not wait for one.
 *
 *   - What an open returned is said with its reply (RemoteCall.fd_info):
 *     a regular file is known from the start, so its first write goes
 *     behind, and an fstat R makes right after the open (nothing of R's
 *     between, within FIO_FRESH_NS) is answered from what the home said;
 *   - an unlock (fcntl F_SETLK and its kind with F_UNLCK) of a known
 *     file goes behind, and so does a downgrade of a write lock R holds
 *     to a read lock (fiolock.c): they cannot fail in a way the guest
 *     does not see first (their arguments are checked: fdcall.c), but
 *     for ENOLCK, which the next call on the descriptor tells, as a
 *     write behind's failure;
 *   - a close of a directory, and of a regular file with nothing of its
 *     own left to fail (no write since its last fsync or fdatasync that
 *     succeeded, none behind still to answer, no failure owed), goes
 *     behind: its failure then is nobody's.
 *
 * Acquiring a lock still goes home and waits: the lock is taken there,
 * where other processes see it. Everything behind runs at home in R's
 * order, before any later call of R's, so an unlock reaches home before
 * anything R does after it that another process could see.
 */
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>

#include <fcntl.h>
#include <string.h>

#include "internal.h"
#include "proto/remote.pb-c.h"

/* Is R's call an open of a path (not O_PATH), that may open a file? */
int
fio_opens(int nr, const uint64_t *args)
{
	switch (nr) {
	case SYS_open:
		return (args[1] & O_PATH) == 0;
	case SYS_openat:
		return (args[2] & O_PATH) == 0;
	case SYS_creat:
		return 1;
	}
	return 0;
}

/*
 * What an open R waits in returned, described by the home before the
 * reply (m). A number taken again was closed: what we had of it goes.
 */
void
fio_opened(struct fio *f, const Osm__RemoteFdInfo *m)
{
	struct fio_fd	*e;

	if ((e = fio_find(f, m->fd)) != NULL)
		fio_forget(f, e);
	f->ostat_ok = 0;
	if (f->off || (!m->regular && !m->directory))
		return;
	e = fio_add(f, m->fd);
	if (m->directory) {
		e->state = FIO_OTHER;
		e->dir = 1;
	} else {
		e->state = FIO_ASKED;
		fio_info(f, m, 0);
	}
	if (!m->has_mode)
		return;
	memset(&f->ostat, 0, sizeof f->ostat);
	f->ostat.st_dev = m->dev;
	f->ostat.st_ino = m->ino;
	f->ostat.st_nlink = m->nlink;
	f->ostat.st_mode = m->mode;
	f->ostat.st_uid = m->uid;
	f->ostat.st_gid = m->gid;
	f->ostat.st_rdev = m->rdev;
	f->ostat.st_size = m->size;
	f->ostat.st_blksize = m->blksize;
	f->ostat.st_blocks = m->blocks;
	f->ostat.st_atim.tv_sec = m->atime_ns / 1000000000;
	f->ostat.st_atim.tv_nsec = m->atime_ns % 1000000000;
	f->ostat.st_mtim.tv_sec = m->mtime_ns / 1000000000;
	f->ostat.st_mtim.tv_nsec = m->mtime_ns % 1000000000;
	f->ostat.st_ctim.tv_sec = m->ctime_ns / 1000000000;
	f->ostat.st_ctim.tv_nsec = m->ctime_ns % 1000000000;
	f->ostat_fd = m->fd;
	f->ostat_at = window_now();
	f->ostat_ok = 1;
}

/*
 * R's call, if it is an fstat of the descriptor just opened (fstat, or
 * newfstatat of "" with AT_EMPTY_PATH) and nothing of R's came between:
 * answered from the open's (*rv), 1. Any other call ends that.
 */
int
fio_open_stat(struct fio *f, pid_t tid, int nr, const uint64_t *args,
    long *rv)
{
	struct iovec	local, remote;
	char		path;
	uint64_t	buf;
	int		ok = f->ostat_ok;

	f->ostat_ok = 0;
	if (!ok || (int)args[0] != f->ostat_fd ||
	    window_now() - f->ostat_at > FIO_FRESH_NS)
		return 0;
	if (nr == SYS_fstat)
		buf = args[1];
	else if (nr == SYS_newfstatat && (args[3] & AT_EMPTY_PATH) &&
	    (args[3] & ~(uint64_t)(AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW |
	    AT_NO_AUTOMOUNT)) == 0) {
		local.iov_base = &path;
		local.iov_len = 1;
		remote.iov_base = (void *)(uintptr_t)args[1];
		remote.iov_len = 1;
		if (process_vm_readv(tid, &local, 1, &remote, 1, 0) != 1 ||
		    path != '\0')
			return 0;
		buf = args[2];
	} else
		return 0;
	if (marshal_put_stat(tid, buf, &f->ostat) == -1)
		return 0;	/* the home says EFAULT */
	*rv = 0;
	f->stats_known++;
	return 1;
}

/* A write of e's behind whose reply has not come (or an unlock's)? */
static int
fio_owed(const struct fio *f, const struct fio_fd *e)
{
	size_t	i;

	for (i = 0; i < f->nbehind; i++) {
		if (f->behind[i].fd == e->fd && f->behind[i].expect >= 0)
			return 1;
	}
	return 0;
}

/*
 * May R's close of e go behind? A directory's always; a regular file's
 * when nothing of its own is left to fail: every write of it made and
 * synced (fsync or fdatasync said so since the last), none behind
 * unanswered, no call of another thread's on it at home.
 */
int
fio_close_clean(const struct fio *f, const struct fio_fd *e, int busy)
{
	if (busy > 0 || f->off)
		return 0;
	if (e->state == FIO_OTHER)
		return e->dir;
	return e->state == FIO_KNOWN && e->wgen == e->synced &&
	    e->err == 0 && !fio_owed(f, e);
}
