/*
 * Shared file systems, the calls on a path (docs/REMOTE.md, "Shared file
 * systems"): R's stat, unlink and open of an absolute path under a shared
 * path that a file opened here proved the same file system, made here by
 * the opener — as the owner, with no more rights than the home process
 * has — and not at home; and what shared.c and they share: which shared
 * path a path is under, R's path, its descriptors opened here, the answer.
 */
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/seccomp.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"
#include "proto/remote.pb-c.h"

struct shared_fd *
shared_find(struct shared *s, uint64_t fd)
{
	size_t	i;

	for (i = 0; i < s->nfds; i++)
		if ((uint64_t)s->fds[i].fd == fd)
			return &s->fds[i];
	return NULL;
}

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
int
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

/* R's path at addr, into buf (PATH_MAX): 0, or -1 (a fault, too long). */
int
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
int
shared_stat(struct remote *g, uint64_t id, pid_t tid, int nr,
    const uint64_t *args, struct remote_event *ev, char **cause)
{
	struct shared	*s = &g->shared;
	struct stat	 st;
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
	    (r = conf_shared_root(s->paths, s->npaths, path)) == -1 ||
	    !s->roots[r].proven)
		return 0;
	rv = s->stater(s->arg, path, nofollow, &st);
	if (rv == 0) {
		if (st.st_dev != s->roots[r].dev)
			return 0;
		st.st_dev = s->roots[r].home_dev;
		if (marshal_put_stat(tid, buf, &st) == -1)
			rv = -EFAULT;
	} else if (rv != -ENOENT && rv != -ENOTDIR && rv != -EACCES)
		return 0;
	s->stats_local++;
	ev->kind = REMOTE_ANSWERED;
	return shared_answer(g, id, rv, 0, cause) == -1 ? -1 : 1;
}

/*
 * Is an open made here still to be made at home of a descriptor R holds?
 * (One R closed meanwhile, -1 since, may find its file gone at home: its
 * number is then /dev/null's there until the close that follows it, and
 * no one's.)
 */
static int
shared_opening_held(struct shared *s)
{
	size_t	i;

	for (i = 0; i < s->nopening; i++)
		if (s->opening[i].fd != -1)
			return 1;
	return 0;
}

/*
 * R's unlink, or unlinkat from its directory without flags, of an
 * absolute path under a shared path that a file opened here proved the
 * same file system: made here by the opener, as the owner, when its rights
 * are no more than the home process's (shared_rights) and nothing R wrote
 * is still on its way home (so that no one sees the name gone before
 * what R wrote before it), nor while an open made here of a descriptor R
 * still holds is still to be made at home (which would find no file, and
 * leave /dev/null at its number in P: shared_opening_held). 1 answered
 * (ev), 0 it goes home: also when
 * the opener refused or failed, so that R has the home's own answer
 * (EACCES, EPERM, ENOENT, EISDIR...), -1 the listener failed.
 */
int
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
	    shared_opening_held(s) || !shared_rights(g) ||
	    fio_writing(&g->fio) ||
	    shared_path(tid, addr, path) == -1 || path[0] != '/' ||
	    (r = conf_shared_root(s->paths, s->npaths, path)) == -1 ||
	    !s->roots[r].proven)
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

/*
 * R's open, openat from its directory or creat of an absolute path under a
 * shared path that a file opened here proved the same file system, made
 * here alone (docs/REMOTE.md, "Opens made here"): the opener opens it as
 * R asked, creating and truncating it if it was to (the owner's rights,
 * no more than the home process's: shared_rights; a file it creates gets
 * P's group and P's umask), it goes into R at the number P's kernel would
 * have given (ptable.c), and the home opens the same file at that number
 * behind (RemoteCall.open_at). 1 answered (ev), 0 it goes home as any open
 * (the table not known, a call on its way home that may change it or the
 * file, the opener refused or failed: R then has the home's own answer),
 * -1 the listener failed.
 */
int
shared_open_here(struct remote *g, uint64_t id, pid_t tid, int nr,
    const uint64_t *args, struct remote_event *ev, char **cause)
{
	struct shared			*s = &g->shared;
	struct fio			*f = &g->fio;
	struct table_call		 tc;
	struct rmt_call			 call;
	struct fio_fd			*fe;
	struct rlimit			 nofile;
	struct stat			 st;
	char				 path[PATH_MAX];
	const char			*why = NULL;
	uint64_t			 addr = args[0];
	uint8_t				*msg;
	size_t				 len;
	int				 flags, mode, fl = 1, at, r, ours;

	switch (nr) {
	case SYS_open:
		flags = (int)args[1];
		mode = (int)args[2];
		break;
	case SYS_openat:
		if ((int)args[0] != AT_FDCWD)
			return 0;
		addr = args[1];
		flags = (int)args[2];
		mode = (int)args[3];
		fl = 2;
		break;
	case SYS_creat:
		flags = O_CREAT | O_WRONLY | O_TRUNC;
		mode = (int)args[1];
		break;
	default:
		return 0;
	}
	/* (O_TMPFILE has O_DIRECTORY) */
	if (s->here == NULL || f->off || g->npending > 0 || fio_writing(f) ||
	    (flags & (O_PATH | O_DIRECTORY)) || !shared_rights(g) ||
	    ((flags & O_CREAT) && g->ident.id.gid[3] != s->gid) ||
	    (at = ptable_lowest(&f->ptab)) < 0 ||
	    prlimit(g->pid, RLIMIT_NOFILE, NULL, &nofile) == -1 ||
	    (rlim_t)at >= nofile.rlim_cur ||
	    shared_path(tid, addr, path) == -1 || path[0] != '/' ||
	    (r = conf_shared_root(s->paths, s->npaths, path)) == -1 ||
	    !s->roots[r].proven)
		return 0;
	/* the call as the home will make it: no more creating, truncating */
	table_resolve(nr, args, g->emu.home_pid, &tc);
	switch (marshal_call(tid, &tc, args, &call, &why, cause)) {
	case MARSHAL_OK:
		break;
	case MARSHAL_ERROR:
		return -1;
	default:
		return 0;
	}
	/* the memory we read was R's only if R still waits in this call */
	mode = (flags & O_CREAT) ? mode & 07777 & ~(int)f->ptab.umask : 0;
	if (ioctl(g->listener, SECCOMP_IOCTL_NOTIF_ID_VALID, &id) != 0 ||
	    (ours = s->here(s->arg, path, flags & ~(O_CLOEXEC | O_NOCTTY),
	    mode)) < 0) {
		marshal_free(&call);
		return 0;
	}
	if (fstat(ours, &st) == -1 ||
	    shared_addfd(g, id, ours, at, flags) == -1) {
		close(ours);
		marshal_free(&call);
		return 0;
	}
	if (nr == SYS_creat) {
		call.nr = SYS_open;
		call.name = "open";
		call.args[1] = O_WRONLY;
	} else
		call.args[fl] &= ~(uint64_t)(O_CREAT | O_EXCL | O_TRUNC);
	call.args[fl + 1] = 0;
	call.seq = ++g->seq;
	call.vtid = f->vtid;
	call.behind = 1;
	call.open_here = 1;
	call.open_at = at;
	call.open_ino = st.st_ino;
	marshal_pack(&call, &msg, &len);
	marshal_free(&call);
	fio_push_later(f, at, g->seq, msg, len);
	g->stats.forwarded++;
	ptable_take(&f->ptab, at);
	s->opening = xreallocarray(s->opening, s->nopening + 1,
	    sizeof *s->opening);
	s->opening[s->nopening].seq = g->seq;
	s->opening[s->nopening++].fd = at;
	/* what the guest had of a file of that number, or of this one */
	if ((fe = fio_find(f, at)) != NULL)
		fio_forget(f, fe);
	f->ostat_ok = 0;
	if (flags & (O_CREAT | O_TRUNC))
		fio_drop_file(f, 1, 0, 0, -1);
	shared_add(g, at, ours, s->roots[r].home_dev, st.st_ino, 0);
	s->stats_opened++;
	s->stats_alone++;
	ev->kind = REMOTE_ANSWERED;
	return shared_answer(g, id, at, 0, cause) == -1 ? -1 : 1;
}

/*
 * The reply to a call sent behind (seq) said ret: if it is the home's open
 * of a file opened here, P holds the file at its number (ret that number),
 * or not — another file of that name, the file gone (/dev/null there),
 * the number P's (-EBADF: the table was not as the guest knew it): that
 * descriptor then is one R may not take elsewhere, and the table is asked
 * again.
 */
void
shared_behind_reply(struct remote *g, uint64_t seq, int64_t ret)
{
	struct shared		*s = &g->shared;
	struct shared_fd	*e;
	size_t			 i;
	int			 fd;

	for (i = 0; i < s->nopening; i++)
		if (s->opening[i].seq == seq)
			break;
	if (i == s->nopening)
		return;
	fd = s->opening[i].fd;
	s->opening[i] = s->opening[--s->nopening];
	if (fd == -1 || ret == fd)
		return;
	if ((e = shared_find(s, fd)) != NULL)
		e->lost = 1;
	if (ret == -EBADF)
		g->fio.ptab.ok = 0;
}

/*
 * R's descriptor fd is ours (the same open file) from now on, of the
 * home's file dev, ino, whose descriptor at home is at home_off: the stub
 * in R makes its calls on it.
 */
struct shared_fd *
shared_add(struct remote *g, int fd, int ours, uint64_t dev, uint64_t ino,
    uint64_t home_off)
{
	struct shared		*s = &g->shared;
	struct shared_fd	*e;

	s->fds = xreallocarray(s->fds, s->nfds + 1, sizeof *s->fds);
	e = &s->fds[s->nfds++];
	memset(e, 0, sizeof *e);
	e->fd = fd;
	e->ours = ours;
	e->dev = dev;
	e->ino = ino;
	e->home_off = home_off;
	rstub_local(g, fd, 1, dev);
	return e;
}

/*
 * Put our src into R at number fd, through notification id (close on
 * exec if cloexec has O_CLOEXEC): 0, or -1 (R left the call, or it
 * cannot take it).
 */
int
shared_addfd(struct remote *g, uint64_t id, int src, int fd, int cloexec)
{
	struct seccomp_notif_addfd	add;

	memset(&add, 0, sizeof add);
	add.id = id;
	add.flags = SECCOMP_ADDFD_FLAG_SETFD;
	add.srcfd = (uint32_t)src;
	add.newfd = (uint32_t)fd;
	add.newfd_flags = cloexec & O_CLOEXEC;
	return ioctl(g->listener, SECCOMP_IOCTL_NOTIF_ADDFD, &add) == -1 ?
	    -1 : 0;
}

/*
 * Answer call id with val, or let R make it itself if cont
 * (SECCOMP_USER_NOTIF_FLAG_CONTINUE). A call R left is no error.
 */
int
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
