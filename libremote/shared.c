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
 * home or on its next node.
 */
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/close_range.h>
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
 * would end with R's copy in the middle of what it guards. R's
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

	for (i = 0; i < s->nfds; i++) {
		snprintf(path, sizeof path, "/proc/%d/fdinfo/%d", (int)g->pid,
		    s->fds[i].fd);
		if (read_file_str(path, buf, sizeof buf) != 0 ||
		    strstr(buf, "\nlock:") == NULL)
			continue;
		snprintf(path, sizeof path, "/proc/%d/fd/%d", (int)g->pid,
		    s->fds[i].fd);
		if ((n = readlink(path, file, sizeof file - 1)) <= 0)
			n = snprintf(file, sizeof file, "descriptor %d",
			    s->fds[i].fd);
		file[n] = '\0';
		xasprintf(why, "it holds a lock on %s, opened where it runs",
		    file);
		return 0;
	}
	s->leaving = 1;
	return 1;
}

void
shared_free(struct shared *s)
{
	size_t	i;

	for (i = 0; i < s->nfds; i++)
		close(s->fds[i].ours);
	free(s->fds);
	free(s->roots);
	free(s->groups);
	if (s->info != NULL)
		osm__remote_fd_info__free_unpacked(s->info, NULL);
	if (s->null > 0)
		close(s->null);
}

static struct shared_fd *
shared_find(struct shared *s, uint64_t fd)
{
	size_t	i;

	for (i = 0; i < s->nfds; i++)
		if ((uint64_t)s->fds[i].fd == fd)
			return &s->fds[i];
	return NULL;
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

	for (i = 0; i < g->shared.nfds; i++)
		shared_settle_one(g, &g->shared.fds[i]);
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
	struct shared			*s = &g->shared;
	struct seccomp_notif_addfd	 add;

	memset(&add, 0, sizeof add);
	add.id = id;
	add.flags = SECCOMP_ADDFD_FLAG_SETFD;
	add.srcfd = s->null;
	add.newfd = e->fd;
	add.newfd_flags = O_CLOEXEC;
	if (s->null <= 0)
		return -1;
	/* the stub in R makes no call on it from now on */
	rstub_local(g, e->fd, 0);
	if (ioctl(g->listener, SECCOMP_IOCTL_NOTIF_ADDFD, &add) == -1) {
		rstub_local(g, e->fd, 1);
		return -1;
	}
	close(e->ours);
	*e = s->fds[--s->nfds];
	return 0;
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
	struct iovec	local, remote;

	if (fstat(e->ours, &st) == -1)
		return -errno;
	st.st_dev = e->dev;
	local.iov_base = &st;
	local.iov_len = sizeof st;
	remote.iov_base = (void *)(uintptr_t)buf;
	remote.iov_len = sizeof st;
	if (process_vm_writev(tid, &local, 1, &remote, 1, 0) != sizeof st)
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

static int	shared_answer(struct remote *, uint64_t, int64_t, int,
		    char **);

/* Is gid the home process's (its fs group, or one of its groups)? */
static int
shared_has_group(const struct remote_ident *id, uint32_t gid)
{
	size_t	i;

	if (id->gid[3] == gid)
		return 1;
	for (i = 0; i < id->ngroups; i++)
		if (id->groups[i] == gid)
			return 1;
	return 0;
}

/*
 * May the opener answer alone, with no check of the home's kernel first
 * (a stat, an unlink)? Only while its rights are no more than the home
 * process's, as the home says them now (the identity it sent): its uid
 * P's fs uid, its group and every one of its groups P's too. Else the
 * call goes home, whose kernel checks it.
 */
static int
shared_rights(const struct remote *g)
{
	const struct shared		*s = &g->shared;
	const struct remote_ident	*id = &g->ident.id;
	size_t				 i;

	if (!g->ident.valid || id->uid[3] != s->uid ||
	    !shared_has_group(id, s->gid))
		return 0;
	for (i = 0; i < s->ngroups; i++)
		if (!shared_has_group(id, s->groups[i]))
			return 0;
	return 1;
}

/* The shared path path is under (the longest), or -1. */
static int
shared_root(const struct shared *s, const char *path)
{
	size_t	i, len, best = 0;
	int	r = -1;

	for (i = 0; i < s->npaths; i++) {
		len = strlen(s->paths[i]);
		if (len > best && conf_is_shared(&s->paths[i], 1, path)) {
			best = len;
			r = (int)i;
		}
	}
	return r;
}

/* R's path at addr, into buf (PATH_MAX): 0, or -1 (a fault, too long). */
static int
shared_path(pid_t tid, uint64_t addr, char *buf)
{
	struct iovec	 local, remote;
	size_t		 got = 0, chunk;
	ssize_t		 n;

	while (got < PATH_MAX) {
		chunk = 4096 - ((addr + got) & 4095);
		if (chunk > PATH_MAX - got)
			chunk = PATH_MAX - got;
		local.iov_base = buf + got;
		local.iov_len = chunk;
		remote.iov_base = (void *)(uintptr_t)(addr + got);
		remote.iov_len = chunk;
		if ((n = process_vm_readv(tid, &local, 1, &remote, 1, 0)) <= 0)
			return -1;
		if (memchr(buf + got, '\0', n) != NULL)
			return 0;
		got += n;
	}
	return -1;
}

/*
 * R's stat, lstat or newfstatat of an absolute path under a shared path
 * that a file opened here proved the same file system: answered here by
 * the opener (the owner's rights, beneath the path), with the home's
 * device number; 1 answered (ev), 0 it goes home, -1 the listener failed.
 * What the opener cannot say (a link out of the path) goes home.
 */
static int
shared_stat(struct remote *g, uint64_t id, pid_t tid, int nr,
    const uint64_t *args, struct remote_event *ev, char **cause)
{
	struct shared	*s = &g->shared;
	struct stat	 st;
	struct iovec	 local, remote;
	char		 path[PATH_MAX];
	uint64_t	 addr = args[0], buf = args[1];
	int		 nofollow = nr == SYS_lstat, r;
	long		 rv;

	if (nr == SYS_newfstatat) {
		if ((args[3] & ~(uint64_t)AT_SYMLINK_NOFOLLOW) != 0 ||
		    (int)args[0] != AT_FDCWD)
			return 0;
		addr = args[1];
		buf = args[2];
		nofollow = (args[3] & AT_SYMLINK_NOFOLLOW) != 0;
	}
	/* (what R wrote still on its way home could be this file's) */
	if (s->stater == NULL || !shared_rights(g) || fio_writing(&g->fio) ||
	    shared_path(tid, addr, path) == -1 || path[0] != '/' ||
	    (r = shared_root(s, path)) == -1 || !s->roots[r].proven)
		return 0;
	rv = s->stater(s->arg, path, nofollow, &st);
	if (rv == 0) {
		if (st.st_dev != s->roots[r].dev)
			return 0;
		st.st_dev = s->roots[r].home_dev;
		local.iov_base = &st;
		local.iov_len = sizeof st;
		remote.iov_base = (void *)(uintptr_t)buf;
		remote.iov_len = sizeof st;
		if (process_vm_writev(tid, &local, 1, &remote, 1, 0) !=
		    sizeof st)
			rv = -EFAULT;
	} else if (rv != -ENOENT && rv != -ENOTDIR && rv != -EACCES)
		return 0;
	s->stats_local++;
	ev->kind = REMOTE_ANSWERED;
	return shared_answer(g, id, rv, 0, cause) == -1 ? -1 : 1;
}

/*
 * R's unlink, or unlinkat from its directory without flags, of an
 * absolute path under a shared path that a file opened here proved the
 * same file system: made here by the opener, as the owner, when its rights
 * are no more than the home process's (shared_rights) and nothing R wrote
 * is still on its way home (so that no one sees the name gone before
 * what R wrote before it). 1 answered (ev), 0 it goes home: also when
 * the opener refused or failed, so that R has the home's own answer
 * (EACCES, EPERM, ENOENT, EISDIR...), -1 the listener failed.
 */
static int
shared_unlink(struct remote *g, uint64_t id, pid_t tid, int nr,
    const uint64_t *args, struct remote_event *ev, char **cause)
{
	struct shared	*s = &g->shared;
	char		 path[PATH_MAX];
	uint64_t	 addr = args[0];
	int		 r;

	if (nr == SYS_unlinkat) {
		if ((int)args[0] != AT_FDCWD || args[2] != 0)
			return 0;
		addr = args[1];
	}
	if (s->unlinker == NULL || g->fio.off || g->npending > 0 ||
	    !shared_rights(g) || fio_writing(&g->fio) ||
	    shared_path(tid, addr, path) == -1 || path[0] != '/' ||
	    (r = shared_root(s, path)) == -1 || !s->roots[r].proven)
		return 0;
	/* the memory we read was R's only if R still waits in this call */
	if (ioctl(g->listener, SECCOMP_IOCTL_NOTIF_ID_VALID, &id) != 0 ||
	    s->unlinker(s->arg, path) != 0)
		return 0;
	/* a file changed: what the guest has of any file may be stale */
	fio_drop_file(&g->fio, 1, 0, 0, -1);
	s->stats_unlinked++;
	ev->kind = REMOTE_ANSWERED;
	return shared_answer(g, id, 0, 0, cause) == -1 ? -1 : 1;
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
 * Answer call id with val, or let R make it itself if cont
 * (SECCOMP_USER_NOTIF_FLAG_CONTINUE). A call R left is no error.
 */
static int
shared_answer(struct remote *g, uint64_t id, int64_t val, int cont,
    char **cause)
{
	struct seccomp_notif_resp	*resp = g->resp;

	rstub_publish(g, id);
	memset(resp, 0, g->resp_size);
	resp->id = id;
	resp->val = val;
	if (cont)
		resp->flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
	if (ioctl(g->listener, SECCOMP_IOCTL_NOTIF_SEND, resp) == 0 ||
	    errno == ENOENT)
		return 0;
	xasprintf(cause, "SECCOMP_IOCTL_NOTIF_SEND: %s", strerror(errno));
	return -1;
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
	int			 fd;

	if (!map && (nr == SYS_stat || nr == SYS_lstat ||
	    (nr == SYS_newfstatat && (int)args[0] == AT_FDCWD)))
		return shared_stat(g, id, tid, nr, args, ev, cause);
	if (!map && (nr == SYS_unlink || (nr == SYS_unlinkat &&
	    (int)args[0] == AT_FDCWD)))
		return shared_unlink(g, id, tid, nr, args, ev, cause);
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
		fio_close_behind(&g->fio, fd, &g->seq);
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
	struct shared			*s = &g->shared;
	struct seccomp_notif_addfd	 add;
	struct shared_fd		*e, copy;
	int				 ours;

	if ((e = shared_find(s, from)) == NULL || fd == from ||
	    shared_find(s, fd) != NULL ||
	    (ours = fcntl(e->ours, F_DUPFD_CLOEXEC, 0)) == -1)
		return;
	copy = *e;
	memset(&add, 0, sizeof add);
	add.id = id;
	add.flags = SECCOMP_ADDFD_FLAG_SETFD;
	add.srcfd = ours;
	add.newfd = (uint32_t)fd;
	add.newfd_flags = flags & O_CLOEXEC;
	if (ioctl(g->listener, SECCOMP_IOCTL_NOTIF_ADDFD, &add) == -1) {
		close(ours);
		return;
	}
	s->fds = xreallocarray(s->fds, s->nfds + 1, sizeof *s->fds);
	e = &s->fds[s->nfds++];
	*e = copy;
	e->fd = (int)fd;
	e->ours = ours;
	rstub_local(g, e->fd, 1);
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
	struct shared			*s = &g->shared;
	struct seccomp_notif_addfd	 add;
	struct shared_fd		*e;
	struct stat			 st;
	char				*cause = NULL;
	int				 ours, r;

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
	memset(&add, 0, sizeof add);
	add.id = id;
	add.flags = SECCOMP_ADDFD_FLAG_SETFD;
	add.srcfd = ours;
	add.newfd = (uint32_t)m->fd;
	add.newfd_flags = flags & O_CLOEXEC;
	if (ioctl(g->listener, SECCOMP_IOCTL_NOTIF_ADDFD, &add) == -1) {
		close(ours);
		return 0;
	}
	s->fds = xreallocarray(s->fds, s->nfds + 1, sizeof *s->fds);
	e = &s->fds[s->nfds++];
	e->fd = m->fd;
	e->ours = ours;
	e->dev = m->dev;
	e->ino = m->ino;
	e->home_off = m->pos;
	rstub_local(g, e->fd, 1);
	s->stats_opened++;
	/* its shared path is the same file system here as at home */
	if ((r = shared_root(s, m->path)) != -1) {
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
 */
void
shared_opened(struct remote *g, uint64_t id, int flags, int64_t fd)
{
	const Osm__RemoteFdInfo	*m = g->shared.info;

	if (m != NULL && m->fd == fd && !shared_install(g, m, flags, id))
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
