/*
 * The record locks (fcntl F_SETLK, F_SETLKW) R holds on its regular files
 * at home, as the guest saw them taken and given up, so that a downgrade
 * can go behind (docs/REMOTE.md, "Calls behind"): a read lock over bytes
 * R holds a write lock on cannot conflict with another process's lock
 * (none can overlap R's write lock), so only the kernel's ENOLCK could
 * fail it, told by the next call on the descriptor. sqlite3 makes one at
 * each commit's end (EXCLUSIVE back to SHARED).
 *
 * The record errs only towards holding less: anything that may have let
 * a lock go unseen forgets the file's locks (a close of any descriptor of
 * it, which gives up every lock of the process on it) or every file's (a
 * close of a descriptor the guest does not know, dup2 onto one, a lock
 * it could not follow, a failure behind); a lock it thinks not held
 * only sends that call home. A process with threads keeps no record:
 * its threads' locks could come back in any order. OFD locks belong to
 * their open file, not to the process, and are not kept.
 */
#include <sys/syscall.h>
#include <sys/uio.h>

#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define LOCK_EOF	UINT64_MAX	/* a lock up to the end of the file */

/* Every lock of file (dev, ino), or of every file if all. */
void
fio_locks_forget(struct fio *f, int all, uint64_t dev, uint64_t ino)
{
	size_t	i;

	for (i = 0; i < f->nlocks; i++) {
		if (all || (f->locks[i].dev == dev && f->locks[i].ino == ino))
			f->locks[i--] = f->locks[--f->nlocks];
	}
}

/* R now holds type (F_UNLCK: nothing) on bytes lo..hi of e's file. */
static void
lock_set(struct fio *f, const struct fio_fd *e, int type, uint64_t lo,
    uint64_t hi)
{
	struct fio_lock	*was = f->locks, l;
	size_t		 i, n = f->nlocks;

	/* room for each kept, a split one's second piece, and the new */
	f->locks = xreallocarray(NULL, n + 2, sizeof *f->locks);
	f->nlocks = 0;
	for (i = 0; i < n; i++) {
		l = was[i];
		if (l.dev != e->dev || l.ino != e->ino || l.hi < lo ||
		    l.lo > hi) {
			f->locks[f->nlocks++] = l;
			continue;
		}
		/* what of it lies outside lo..hi stays, one piece each side */
		if (l.lo < lo) {
			f->locks[f->nlocks] = l;
			f->locks[f->nlocks++].hi = lo - 1;
		}
		if (l.hi > hi) {
			f->locks[f->nlocks] = l;
			f->locks[f->nlocks++].lo = hi + 1;
		}
	}
	free(was);
	if (type == F_UNLCK)
		return;
	l.dev = e->dev;
	l.ino = e->ino;
	l.lo = lo;
	l.hi = hi;
	l.type = type;
	f->locks[f->nlocks++] = l;
}

/* Does R hold a write lock on every byte lo..hi of e's file? */
static int
lock_written(const struct fio *f, const struct fio_fd *e, uint64_t lo,
    uint64_t hi)
{
	const struct fio_lock	*l;
	uint64_t		 pos = lo;
	size_t			 i;

	for (;;) {
		for (i = 0; i < f->nlocks; i++) {
			l = &f->locks[i];
			if (l->dev == e->dev && l->ino == e->ino &&
			    l->type == F_WRLCK && l->lo <= pos && l->hi >= pos)
				break;
		}
		if (i == f->nlocks)
			return 0;
		if (l->hi >= hi)
			return 1;
		pos = l->hi + 1;
	}
}

/*
 * The bytes R's flock (cmd) names, if the guest can follow it: from the
 * file's start, as fdcall_unlock checks them.
 */
static int
lock_range(int cmd, const struct flock *fl, uint64_t *lo, uint64_t *hi)
{
	struct flock	un = *fl;

	if (cmd != F_SETLK && cmd != F_SETLKW)
		return 0;
	un.l_type = F_UNLCK;
	if (!fdcall_unlock(cmd, &un) || (fl->l_type != F_RDLCK &&
	    fl->l_type != F_WRLCK && fl->l_type != F_UNLCK))
		return 0;
	*lo = fl->l_start;
	*hi = fl->l_len == 0 ? LOCK_EOF : (uint64_t)fl->l_start +
	    fl->l_len - 1;
	return 1;
}

/*
 * R's fcntl (args) on e, a known regular file, no other call on it at
 * home: 1 if it goes behind (an unlock, a downgrade to a read lock of
 * bytes R holds write-locked), its effect recorded now; 0 if it goes
 * home, a lock it takes recorded when it is answered (fio_locks_result).
 */
int
fio_locks_call(struct fio *f, struct fio_fd *e, pid_t tid,
    const uint64_t *args)
{
	struct iovec	local, remote;
	struct flock	fl;
	uint64_t	lo, hi;
	int		cmd = (int)args[1];

	e->lk_wait = 0;
	if (!fdcall_is_lock(cmd))
		return 0;
	local.iov_base = &fl;
	local.iov_len = sizeof fl;
	remote.iov_base = (void *)(uintptr_t)args[2];
	remote.iov_len = sizeof fl;
	if (process_vm_readv(tid, &local, 1, &remote, 1, 0) != sizeof fl)
		return 0;	/* the home says EFAULT */
	if (f->threaded || !lock_range(cmd, &fl, &lo, &hi)) {
		/* an unlock behind all the same; the record may be wrong */
		if (cmd == F_SETLK || cmd == F_SETLKW)
			fio_locks_forget(f, 0, e->dev, e->ino);
		return fdcall_unlock(cmd, &fl);
	}
	if (fl.l_type == F_UNLCK ||
	    (fl.l_type == F_RDLCK && lock_written(f, e, lo, hi))) {
		lock_set(f, e, fl.l_type, lo, hi);
		return 1;
	}
	e->lk_wait = 1;
	e->lk_type = fl.l_type;
	e->lk_lo = lo;
	e->lk_hi = hi;
	return 0;
}

/* The answer to R's lock that went home (fcntl, its result ret). */
void
fio_locks_result(struct fio *f, struct fio_fd *e, int64_t ret)
{
	if (!e->lk_wait)
		return;
	e->lk_wait = 0;
	/* a lock refused changes none R holds */
	if (ret == 0)
		lock_set(f, e, e->lk_type, e->lk_lo, e->lk_hi);
}

/*
 * R's call nr (args), for the record, before anything else: a close
 * gives up every lock of the process on its file — of any file, for all
 * the guest knows, if the descriptor is not one it knows (nor are dup2's
 * and dup3's targets, close_range's range); and a lock taken or given up
 * through a descriptor it does not know may be on any file.
 */
void
fio_locks_other(struct fio *f, int nr, const uint64_t *args)
{
	struct fio_fd	*e;

	if (f->nlocks == 0)
		return;
	e = fio_find(f, (int)args[0]);
	/* a directory an open returned holds none of these */
	if (nr == SYS_close && e != NULL && e->state == FIO_OTHER && e->dir)
		return;
	if (e != NULL && e->state != FIO_KNOWN)
		e = NULL;
	if (nr == SYS_close && e != NULL)
		fio_locks_forget(f, 0, e->dev, e->ino);
	else if (nr == SYS_close || nr == SYS_dup2 || nr == SYS_dup3 ||
	    nr == SYS_close_range || (nr == SYS_fcntl && e == NULL &&
	    fdcall_is_lock((int)args[1])))
		fio_locks_forget(f, 1, 0, 0);
}
