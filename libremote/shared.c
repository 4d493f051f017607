/*
 * Shared file systems (docs/REMOTE.md, "Shared file systems"): a file R
 * opens under one of the node's shared paths (cluster.conf "shared") is
 * opened at home as always — the home's kernel checks the owner's rights,
 * numbers the descriptor, creates or truncates — and then here too, by
 * the agent's opener (the owner's credentials, beneath the shared path),
 * once the home said what the file is and the file here is provably the
 * same one (inode, size, modification and change times). Our descriptor
 * goes into R at the home's number; R's calls on it then run here: reads,
 * writes, seeks, fsync, locks. The home's descriptor stays open, the same
 * file: it takes R's offset before any call on it that goes home and
 * before every dump of R, so that the process finds it as it left it at
 * home or on its next node. Once a file proved a shared path the same
 * file system, calls on a path under it are made here: a stat, an unlink,
 * an open without the home's first (sharedpath.c).
 */
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/close_range.h>
#include <linux/kcmp.h>
#include <linux/seccomp.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"
#include "proto/remote.pb-c.h"

#ifndef F_OFD_GETLK
#define F_OFD_GETLK	36
#define F_OFD_SETLK	37
#define F_OFD_SETLKW	38
#endif

void
remote_shared(struct remote *g, char **paths, size_t npaths,
    const struct remote_opener_of *op)
{
	struct shared	*s = &g->shared;

	s->paths = paths;
	s->npaths = npaths;
	free(s->roots);
	s->roots = xcalloc(npaths > 0 ? npaths : 1, sizeof *s->roots);
	s->opener = op->open;
	s->stater = op->stat;
	s->unlinker = op->unlink;
	s->here = op->here;
	s->arg = op->arg;
	s->uid = op->uid;
	s->gid = op->gid;
	free(s->groups);
	s->groups = xreallocarray(NULL, op->ngroups + 1, sizeof *s->groups);
	if (op->ngroups > 0)
		memcpy(s->groups, op->groups, op->ngroups * sizeof *s->groups);
	s->ngroups = op->ngroups;
	if (s->null <= 0)
		s->null = open("/dev/null", O_RDONLY | O_CLOEXEC);
}

/*
 * May R leave this node now? Not while it holds a lock on a file opened
 * here: the lock is R's, on this node's kernel (or its NFS client), and
 * would end with R's copy in the middle of what it guards; nor while it
 * holds a file opened here that the home could not open at its number
 * (shared_behind_reply), which it would find there no more. R's
 * /proc/PID/fdinfo lists the locks taken through each descriptor ("lock:"
 * lines: POSIX, OFD and flock alike). 0 with *why naming the file; 1 it
 * may, and from now on its lock calls on these files go home, where the
 * deputy holds them until R is there (they then lock the home's
 * descriptor, the same file), so that none is taken here in the meantime.
 */
int
remote_may_leave(struct remote *g, char **why)
{
	struct shared	*s = &g->shared;
	char		 path[64], buf[4096], file[PATH_MAX];
	ssize_t		 n;
	size_t		 i;

	shared_stub_closes(g);
	for (i = 0; i < s->nfds; i++) {
		snprintf(path, sizeof path, "/proc/%d/fdinfo/%d", (int)g->pid,
		    s->fds[i].fd);
		if (!s->fds[i].lost && (read_file_str(path, buf,
		    sizeof buf) != 0 || strstr(buf, "\nlock:") == NULL))
			continue;
		snprintf(path, sizeof path, "/proc/%d/fd/%d", (int)g->pid,
		    s->fds[i].fd);
		if ((n = readlink(path, file, sizeof file - 1)) <= 0)
			n = snprintf(file, sizeof file, "descriptor %d",
			    s->fds[i].fd);
		file[n] = '\0';
		xasprintf(why, s->fds[i].lost ? "it holds %s, opened where "
		    "it runs, which its home could not open" : "it holds a "
		    "lock on %s, opened where it runs", file);
		return 0;
	}
	s->leaving = 1;
	return 1;
}

/* Does R hold a file opened here? */
int
remote_opened_here(const struct remote *g)
{
	return g->shared.nfds > 0;
}

void
shared_free(struct shared *s)
{
	size_t	i;

	for (i = 0; i < s->nfds; i++)
		close(s->fds[i].ours);
	free(s->fds);
	free(s->opening);
	free(s->roots);
	free(s->groups);
	if (s->info != NULL)
		osm__remote_fd_info__free_unpacked(s->info, NULL);
	if (s->null > 0)
		close(s->null);
}

/* The home's offset of e is made R's, if it differs (an lseek behind). */
static void
shared_settle_one(struct remote *g, struct shared_fd *e)
{
	off_t	off;

	if ((off = lseek(e->ours, 0, SEEK_CUR)) == -1 ||
	    (uint64_t)off == e->home_off)
		return;
	fio_lseek_behind(&g->fio, e->fd, off, SEEK_SET, &g->seq);
	e->home_off = off;
}

void
shared_settle(struct remote *g)
{
	size_t	i;

	shared_stub_closes(g);
	for (i = 0; i < g->shared.nfds; i++)
		shared_settle_one(g, &g->shared.fds[i]);
}

/* R's descriptor e is closed: ours goes too. */
static void
shared_drop(struct remote *g, struct shared_fd *e)
{
	struct shared	*s = &g->shared;
	size_t		 i;

	/* its open at home, if still to come, is no longer R's file's */
	for (i = 0; i < s->nopening; i++)
		if (s->opening[i].fd == e->fd)
			s->opening[i].fd = -1;
	close(e->ours);
	*e = s->fds[--s->nfds];
}

/*
 * R closes e (close, the target of dup2 or dup3, close_range): ours goes,
 * and R's descriptor of that number becomes /dev/null (which replacing it
 * closes the file in R, its locks with it); the call then goes home as
 * always, where it closes the home's descriptor.
 */
static int
shared_close(struct remote *g, uint64_t id, struct shared_fd *e)
{
	struct shared	*s = &g->shared;

	if (s->null <= 0)
		return -1;
	/* the stub in R makes no call on it from now on */
	rstub_local(g, e->fd, 0, 0);
	if (shared_addfd(g, id, s->null, e->fd, O_CLOEXEC) == -1) {
		rstub_local(g, e->fd, 1, e->dev);
		return -1;
	}
	shared_drop(g, e);
	return 0;
}

/*
 * R closed its descriptor fd of a file opened here (ours gone): the
 * home's goes behind — or, if the home's open of it still waits
 * (fio_push_later), neither goes: P's table stays as it was, and the
 * home never needs the file.
 */
static void
shared_close_home(struct remote *g, int fd)
{
	struct shared	*s = &g->shared;
	uint64_t	 seq;
	size_t		 i;

	if (!fio_later_cancel(&g->fio, fd, &seq)) {
		fio_close_behind(&g->fio, fd, &g->seq);
		return;
	}
	for (i = 0; i < s->nopening; i++) {
		if (s->opening[i].seq == seq) {
			s->opening[i] = s->opening[--s->nopening];
			break;
		}
	}
	ptable_free(&g->fio.ptab, fd);
	g->stats.forwarded--;
	s->stats_unseen++;
}

/*
 * The closes the stub in R made (rstub_close_next), in order: each, once
 * R's descriptor is no longer our file (the stub may have been stopped
 * before the close itself), as R's close would have been here — ours
 * goes, and the home's goes behind. Before any call of R's the guest
 * deals with, and before R leaves or ends.
 */
void
shared_stub_closes(struct remote *g)
{
	struct shared_fd	*e;
	int			 fd, n;

	/* (R can write the ring: no more than it holds, whatever it says) */
	for (n = 0; n < RSTUB_CLOSES && rstub_close_next(g, &fd); n++) {
		if ((e = shared_find(&g->shared, fd)) != NULL) {
			if (syscall(SYS_kcmp, g->pid, getpid(), KCMP_FILE, fd,
			    e->ours) == 0)
				return;		/* not closed yet */
			shared_drop(g, e);
			shared_close_home(g, fd);
		}
		rstub_close_taken(g);
	}
}

/*
 * R's fstat of e: answered from ours (the same open file), with the
 * home's device number, so that it agrees with what a stat of the path
 * (which goes home) says. 0, or -errno.
 */
static long
shared_fstat(struct remote *g, pid_t tid, struct shared_fd *e, uint64_t buf)
{
	struct stat	st;

	if (fstat(e->ours, &st) == -1)
		return -errno;
	st.st_dev = e->dev;
	if (marshal_put_stat(tid, buf, &st) == -1)
		return -EFAULT;
	(void)g;
	return 0;
}

/* Is R's path argument at addr the empty string? */
static int
shared_empty_path(pid_t tid, uint64_t addr)
{
	struct iovec	local, remote;
	char		c;

	local.iov_base = &c;
	local.iov_len = 1;
	remote.iov_base = (void *)(uintptr_t)addr;
	remote.iov_len = 1;
	return process_vm_readv(tid, &local, 1, &remote, 1, 0) == 1 &&
	    c == '\0';
}

/* Calls that take, give up or ask about a lock. */
static int
shared_locks(int nr, const uint64_t *args)
{
	if (nr == SYS_flock)
		return 1;
	if (nr != SYS_fcntl)
		return 0;
	switch ((int)args[1]) {
	case F_GETLK:
	case F_SETLK:
	case F_SETLKW:
	case F_OFD_GETLK:
	case F_OFD_SETLK:
	case F_OFD_SETLKW:
		return 1;
	}
	return 0;
}

/* Calls on a descriptor of ours that R makes itself, here. */
static int
shared_runs_here(int nr, const uint64_t *args)
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
	case SYS_fsync:
	case SYS_fdatasync:
	case SYS_ftruncate:
	case SYS_fallocate:
	case SYS_flock:
	case SYS_fadvise64:
	case SYS_readahead:
	case SYS_sync_file_range:
	case SYS_fstatfs:
		return 1;
	case SYS_fcntl:
		switch ((int)args[1]) {
		case F_GETFD:
		case F_SETFD:
		case F_GETFL:
			return 1;
		}
		return shared_locks(nr, args);
	}
	return 0;
}

/* Calls that may change the file's bytes: windows of it are stale. */
static int
shared_writes(int nr)
{
	return nr == SYS_write || nr == SYS_pwrite64 || nr == SYS_writev ||
	    nr == SYS_pwritev || nr == SYS_pwritev2 || nr == SYS_ftruncate ||
	    nr == SYS_fallocate;
}

/*
 * R's call nr (notification id) before it is forwarded: 1 it was dealt
 * with here (ev says how), 0 it goes on its way (offsets settled, our
 * descriptors it closes gone), -1 with *cause if the listener failed.
 */
int
shared_call(struct remote *g, uint64_t id, pid_t tid, int nr,
    const uint64_t *args, int map, struct remote_event *ev, char **cause)
{
	struct shared		*s = &g->shared;
	struct shared_fd	*e;
	uint64_t		 i, last;
	long			 rv;
	int			 fd, rc;

	if (!map && (nr == SYS_stat || nr == SYS_lstat ||
	    (nr == SYS_newfstatat && (int)args[0] == AT_FDCWD)))
		return shared_stat(g, id, tid, nr, args, ev, cause);
	if (!map && (nr == SYS_unlink || (nr == SYS_unlinkat &&
	    (int)args[0] == AT_FDCWD)))
		return shared_unlink(g, id, tid, nr, args, ev, cause);
	if (!map && fio_opens(nr, args) && (rc = shared_open_here(g, id, tid,
	    nr, args, ev, cause)) != 0)
		return rc;
	if (s->nfds == 0)
		return 0;
	if (map) {
		/* a mapping of ours would need the file here at every move */
		if (shared_find(s, args[4]) == NULL)
			return 0;
		ev->kind = REMOTE_HOME;
		ev->why = "a mapping of a file opened where it runs";
		g->stats.home++;
		return 1;
	}
	if (nr == SYS_close_range) {
		last = args[1] < args[0] ? args[0] : args[1];
		for (i = 0; i < s->nfds; i++) {
			e = &s->fds[i];
			if ((uint64_t)e->fd < args[0] || (uint64_t)e->fd > last)
				continue;
			if (args[2] & CLOSE_RANGE_CLOEXEC)
				continue;
			if (shared_close(g, id, e) == 0)
				i--;
		}
		return 0;
	}
	if ((nr == SYS_dup2 || nr == SYS_dup3) && args[0] != args[1] &&
	    (e = shared_find(s, args[1])) != NULL)
		shared_close(g, id, e);
	if ((e = shared_find(s, args[0])) == NULL)
		return 0;
	/*
	 * A close: ours goes, the home's goes behind (no write went through
	 * it to fail), and R has its answer now.
	 */
	if (nr == SYS_close) {
		fd = e->fd;
		if (shared_close(g, id, e) == -1)
			return 0;
		shared_close_home(g, fd);
		s->stats_local++;
		ev->kind = REMOTE_ANSWERED;
		return shared_answer(g, id, 0, 0, cause) == -1 ? -1 : 1;
	}
	rv = 1;
	if (nr == SYS_fstat)
		rv = shared_fstat(g, tid, e, args[1]);
	else if (nr == SYS_newfstatat && (args[3] & AT_EMPTY_PATH) &&
	    shared_empty_path(tid, args[1]))
		rv = shared_fstat(g, tid, e, args[2]);
	if (rv <= 0) {
		s->stats_local++;
		ev->kind = REMOTE_ANSWERED;
		return shared_answer(g, id, rv, 0, cause) == -1 ? -1 : 1;
	}
	if (shared_runs_here(nr, args) &&
	    !(s->leaving && shared_locks(nr, args))) {
		if (shared_writes(nr))
			fio_changed(&g->fio, e->dev, e->ino);
		s->stats_local++;
		ev->kind = REMOTE_ANSWERED;
		return shared_answer(g, id, 0, 1, cause) == -1 ? -1 : 1;
	}
	/*
	 * Anything else on it runs at home, on the same file at R's offset;
	 * a change of its flags (O_APPEND, O_NONBLOCK) is made here too.
	 */
	if (nr == SYS_fcntl && args[1] == F_SETFL)
		fcntl(e->ours, F_SETFL, (int)args[2]);
	shared_settle_one(g, e);
	return 0;
}

/*
 * Is call c an open that may be made here too? Then it asks the home
 * what the descriptor is and which file (RemoteCall.want_fd: whether it
 * is under a shared path is known only once the home's kernel resolved
 * the path, relative to the home's directory, through the home's
 * links), and *flags say how to open it here. Or a dup of one of ours
 * (dup, dup2, dup3, fcntl F_DUPFD): *dup_of says which, for shared_dup.
 */
int
shared_want(struct remote *g, struct rmt_call *c, int *flags, int *dup_of)
{
	struct shared	*s = &g->shared;
	int		 fl;

	*dup_of = -1;
	if ((c->nr == SYS_dup || c->nr == SYS_dup2 || c->nr == SYS_dup3 ||
	    (c->nr == SYS_fcntl && (c->args[1] == F_DUPFD ||
	    c->args[1] == F_DUPFD_CLOEXEC))) &&
	    shared_find(s, c->args[0]) != NULL) {
		*dup_of = (int)c->args[0];
		*flags = (c->nr == SYS_dup3 && (c->args[2] & O_CLOEXEC)) ||
		    (c->nr == SYS_fcntl && c->args[1] == F_DUPFD_CLOEXEC) ?
		    O_CLOEXEC : 0;
		return 1;
	}
	if (s->opener == NULL || s->npaths == 0 || g->fio.off)
		return 0;
	switch (c->nr) {
	case SYS_open:
	case SYS_creat:
		fl = c->nr == SYS_creat ? O_CREAT | O_WRONLY | O_TRUNC :
		    (int)c->args[1];
		break;
	case SYS_openat:
		fl = (int)c->args[2];
		break;
	default:
		return 0;
	}
	/* not a directory, a path or an unnamed file (O_TMPFILE has
	   O_DIRECTORY): those stay at home */
	if (fl & (O_PATH | O_DIRECTORY))
		return 0;
	/* the home created and truncated it, if it was to */
	*flags = fl & ~(O_CREAT | O_EXCL | O_TRUNC | O_NOCTTY);
	c->want_fd = 1;
	return 1;
}

/*
 * R's dup of our from returned fd at home (notification id still
 * waiting): ours goes into R at that number too, the same open file.
 */
void
shared_dup(struct remote *g, uint64_t id, int from, int flags, int64_t fd)
{
	struct shared		*s = &g->shared;
	struct shared_fd	*e, copy;
	int			 ours;

	if ((e = shared_find(s, from)) == NULL || fd == from ||
	    shared_find(s, fd) != NULL ||
	    (ours = fcntl(e->ours, F_DUPFD_CLOEXEC, 0)) == -1)
		return;
	copy = *e;
	if (shared_addfd(g, id, ours, (int)fd, flags) == -1) {
		close(ours);
		return;
	}
	shared_add(g, (int)fd, ours, copy.dev, copy.ino,
	    copy.home_off)->lost = copy.lost;
}

/* The home's answer about the descriptor an open gave (seq 0). */
void
shared_info(struct shared *s, Osm__RemoteFdInfo *m)
{
	if (s->info != NULL)
		osm__remote_fd_info__free_unpacked(s->info, NULL);
	s->info = m;
}

static uint64_t
shared_ns(const struct timespec *ts)
{
	return ts->tv_sec * 1000000000ULL + ts->tv_nsec;
}

/* The birth time of fd's file, or 0 where the file system keeps none. */
static uint64_t
shared_btime(int fd)
{
	struct statx	stx;

	if (statx(fd, "", AT_EMPTY_PATH, STATX_BTIME, &stx) == -1 ||
	    !(stx.stx_mask & STATX_BTIME))
		return 0;
	return stx.stx_btime.tv_sec * 1000000000ULL + stx.stx_btime.tv_nsec;
}

/*
 * Open here the file the home described (m) and put it into R at m's
 * number, through notification id: 1, or 0 if it is not provably the
 * same file here (or anything failed) and R's descriptor stays the
 * home's.
 */
static int
shared_install(struct remote *g, const Osm__RemoteFdInfo *m, int flags,
    uint64_t id)
{
	struct shared	*s = &g->shared;
	struct stat	 st;
	char		*cause = NULL;
	int		 ours, r;

	/* a device, a pipe stays home's */
	if ((!m->regular && !m->directory) || m->path == NULL ||
	    !conf_is_shared(s->paths, s->npaths, m->path) ||
	    shared_find(s, m->fd) != NULL)
		return 0;
	if ((ours = s->opener(s->arg, m->path, flags & ~O_CLOEXEC,
	    &cause)) == -1) {
		free(cause);
		s->stats_refused++;
		return 0;
	}
	/*
	 * The same file, not one of the same name: a shared file system.
	 * Its inode and birth time, which a write does not change (the
	 * call that asked may have run at home meanwhile); where there is
	 * no birth time, its size and times as the home said.
	 */
	if (fstat(ours, &st) == -1 ||
	    !(m->directory ? S_ISDIR(st.st_mode) : S_ISREG(st.st_mode)) ||
	    st.st_ino != m->ino ||
	    (m->has_btime_ns ? shared_btime(ours) != m->btime_ns :
	    ((uint64_t)st.st_size != m->size ||
	    shared_ns(&st.st_mtim) != m->mtime_ns ||
	    shared_ns(&st.st_ctim) != m->ctime_ns)) ||
	    (!m->directory && lseek(ours, (off_t)m->pos, SEEK_SET) == -1)) {
		close(ours);
		s->stats_refused++;
		return 0;
	}
	if (shared_addfd(g, id, ours, m->fd, flags) == -1) {
		close(ours);
		return 0;
	}
	shared_add(g, m->fd, ours, m->dev, m->ino, m->pos);
	s->stats_opened++;
	/* its shared path is the same file system here as at home */
	if ((r = conf_shared_root(s->paths, s->npaths, m->path)) != -1) {
		s->roots[r].proven = 1;
		s->roots[r].dev = st.st_dev;
		s->roots[r].home_dev = m->dev;
	}
	return 1;
}

/*
 * R's open (flags, as here) returned fd at home, notification id still
 * waiting: if the home's file is under a shared path of this node, the
 * same file opened here goes into R at that number, once it is proved the
 * one the home opened. Otherwise R's descriptor stays the home's, its
 * calls going home as before, and what the home said of it is what it
 * says of any open's (fio_opened: its fstat answered, its close behind).
 * What the home said of P's table is taken if the open was the last call
 * sent home (last): then it is still so.
 */
void
shared_opened(struct remote *g, uint64_t id, int flags, int64_t fd,
    int last)
{
	const Osm__RemoteFdInfo	*m = g->shared.info;

	if (m == NULL || m->fd != fd)
		return;
	/* P's table after it, if no call went home since */
	if (last && m->has_umask)
		ptable_set(&g->fio.ptab, m->table, m->n_table, m->umask);
	if (!shared_install(g, m, flags, id))
		fio_opened(&g->fio, m);
}

/* The open flags a descriptor of P's is opened here with. */
#define SHARED_ADOPT_FLAGS	(O_ACCMODE | O_APPEND | O_NONBLOCK | O_DSYNC | \
				 O_SYNC | O_DIRECT | O_NOATIME | O_CLOEXEC)

/*
 * The home's answer about a descriptor R had before it came here (m),
 * asked for by R's first call on it, which waits at home as notification
 * id: under a shared path, the same file is opened here and put into R
 * (1); the caller then tells shared_adopted that call's result.
 */
int
shared_adopt(struct remote *g, const Osm__RemoteFdInfo *m, uint64_t id)
{
	struct shared	*s = &g->shared;

	/*
	 * Not one P shares with another of its descriptors (2>&1): ours
	 * would be another open file, of an offset of its own.
	 */
	if (s->opener == NULL || s->npaths == 0 || g->fio.off ||
	    !m->has_flags || !m->regular || m->shared)
		return 0;
	return shared_install(g, m, (int)(m->flags & SHARED_ADOPT_FLAGS), id);
}

/*
 * The call that asked about fd, adopted meanwhile, returned ret at home,
 * on the home's descriptor: the offset here follows the home's.
 */
void
shared_adopted(struct remote *g, int nr, int fd, int64_t ret)
{
	struct shared_fd	*e;
	off_t			 off;

	if ((e = shared_find(&g->shared, fd)) == NULL || ret < 0)
		return;
	if (nr == SYS_read || nr == SYS_write || nr == SYS_writev) {
		if ((off = lseek(e->ours, (off_t)ret, SEEK_CUR)) != -1)
			e->home_off = off;
	}
}
