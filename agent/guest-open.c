/*
 * The opener: files under this node's shared paths, opened here with the
 * credentials of the process's owner (docs/REMOTE.md, "Shared file
 * systems"). The guest agent forks it as root, before it becomes the
 * guest uid; the opener becomes the owner — its uid, and its groups as
 * this node knows them (none and gid nogroup for a uid it does not know:
 * fewer rights, never more), no capabilities, no way back — and opens
 * nothing but beneath a shared path: openat2 from the path's directory
 * with RESOLVE_BENEATH (no "..", no absolute symlink out of it),
 * RESOLVE_NO_XDEV (no other file system mounted inside it) and
 * RESOLVE_NO_MAGICLINKS. So what R can open here is what its owner could
 * open in the shared file system, and nothing of this node's own. Root's
 * processes get no opener: root's rights here would be this node's.
 *
 * It serves the guest agent alone, over a socket pair: a request is what
 * to do (4 bytes: open, stat, unlink, who it is, run near the agent, or
 * open as R asked), the flags (4 bytes: open's, AT_SYMLINK_NOFOLLOW, or
 * the agent's CPU), for the last the mode (4 bytes) and the path; the
 * answer (none to "near") 4 bytes of
 * errno, 0 with the descriptor, the struct stat, or (who) its gid and
 * groups, so that the agent can check they are no more than the home
 * process's before it lets the opener act alone (an unlink). It ends
 * when the agent does.
 *
 * Here too the agent follows R's CPU, and has the opener follow it
 * (guest_open_follow): the wakeups of every call it answers stay on one.
 */
#include <sys/prctl.h>
#include <sys/socket.h>

#include <linux/capability.h>
#include <sys/syscall.h>

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/openat2.h>
#include <poll.h>
#include <pwd.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"
#include "proto/migrate.pb-c.h"

#define OPEN_OPEN	0	/* what a request asks */
#define OPEN_STAT	1
#define OPEN_UNLINK	2
#define OPEN_WHO	3
#define OPEN_NEAR	4	/* run on CPU flags: no answer */
#define OPEN_HERE	5	/* open as R asked, flags and mode */
#define OPEN_GROUPS_MAX	256	/* an answer's groups, at most */
#define OPEN_NOGROUP	65534
#define OPEN_TIMEOUT	10000	/* ms an open may take (NFS) */
#define OPEN_NEAR_EVERY	0.1	/* seconds between looks at R's CPU */
#define OPEN_FLAGS	(O_ACCMODE | O_APPEND | O_NONBLOCK | O_DSYNC | \
			 O_SYNC | O_DIRECT | O_NOATIME | O_LARGEFILE | \
			 O_NOFOLLOW | O_CLOEXEC)

/*
 * Become the owner: its uid, its groups here, nothing else; for a uid
 * this node does not know, the group it has at home (home_gid, 0: none
 * said) and no others.
 */
static int
open_become(uid_t uid, gid_t home_gid)
{
	struct passwd	*pw;
	gid_t		 gid = home_gid != 0 ? home_gid : OPEN_NOGROUP;
	int		 c;

	for (c = 0; prctl(PR_CAPBSET_READ, c, 0, 0, 0) >= 0; c++)
		if (c != CAP_SETPCAP && c != CAP_SETUID && c != CAP_SETGID &&
		    prctl(PR_CAPBSET_DROP, c, 0, 0, 0) == -1)
			return -1;
	if ((pw = getpwuid(uid)) != NULL && pw->pw_uid == uid) {
		gid = pw->pw_gid;
		if (initgroups(pw->pw_name, gid) == -1)
			return -1;
	} else if (setgroups(0, NULL) == -1)
		return -1;
	if (setresgid(gid, gid, gid) == -1 || setresuid(uid, uid, uid) == -1 ||
	    setuid(0) != -1)
		return -1;
	/* not dumpable: the guest uid cannot ptrace it */
	if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) == -1 ||
	    prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == -1)
		return -1;
	return 0;
}

/*
 * Send errno err, and fd if err is 0 (and the len bytes at buf, if not
 * NULL, instead).
 */
static void
open_answer(int s, int err, int fd, const void *buf, size_t len)
{
	struct msghdr	 msg;
	struct iovec	 iov[2];
	char		 ctl[CMSG_SPACE(sizeof(int))];
	struct cmsghdr	*cm;
	int32_t		 e = err;

	memset(&msg, 0, sizeof msg);
	iov[0].iov_base = &e;
	iov[0].iov_len = sizeof e;
	msg.msg_iov = iov;
	msg.msg_iovlen = 1;
	if (err == 0 && buf != NULL) {
		iov[1].iov_base = (void *)buf;
		iov[1].iov_len = len;
		msg.msg_iovlen = 2;
	} else if (err == 0) {
		memset(ctl, 0, sizeof ctl);
		msg.msg_control = ctl;
		msg.msg_controllen = sizeof ctl;
		cm = CMSG_FIRSTHDR(&msg);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(cm), &fd, sizeof fd);
	}
	sendmsg(s, &msg, MSG_NOSIGNAL);
}

/* Open path beneath its shared path, with flags: fd or -errno. */
static int
open_beneath(char **paths, const int *roots, size_t n, const char *path,
    int flags, int mode)
{
	struct open_how	 how;
	const char	*rel;
	int		 r, fd;

	if ((r = conf_shared_root(paths, n, path)) == -1 || roots[r] == -1)
		return -EXDEV;
	rel = path + strlen(paths[r]);
	while (*rel == '/')
		rel++;
	if (*rel == '\0')
		rel = ".";
	memset(&how, 0, sizeof how);
	how.flags = (uint64_t)flags | O_CLOEXEC;
	how.mode = (flags & O_CREAT) ? (uint64_t)mode : 0;
	how.resolve = RESOLVE_BENEATH | RESOLVE_NO_XDEV |
	    RESOLVE_NO_MAGICLINKS;
	if ((fd = syscall(SYS_openat2, roots[r], rel, &how,
	    sizeof how)) == -1)
		return -errno;
	return fd;
}

/*
 * Unlink path, its directory opened beneath its shared path: 0 or
 * -errno. Its last name is not followed, as unlink does not; one that
 * cannot be a file's ("", ".", "..", a path ending in "/") is refused.
 */
static int
open_unlink(char **paths, const int *roots, size_t n, const char *path)
{
	char		 dir[PATH_MAX];
	const char	*base;
	int		 dfd, rv = 0;

	if ((base = strrchr(path, '/')) == NULL || base == path ||
	    (size_t)(base - path) >= sizeof dir)
		return -EINVAL;
	memcpy(dir, path, base - path);
	dir[base - path] = '\0';
	base++;
	if (*base == '\0' || strcmp(base, ".") == 0 || strcmp(base, "..") == 0)
		return -EINVAL;
	if ((dfd = open_beneath(paths, roots, n, dir, O_PATH |
	    O_DIRECTORY, 0)) < 0)
		return dfd;
	if (unlinkat(dfd, base, 0) == -1)
		rv = -errno;
	close(dfd);
	return rv;
}

/*
 * Open path beneath its shared path as R asked (flags, with O_CREAT,
 * O_EXCL and O_TRUNC; mode, P's umask applied, for a file it creates): a
 * regular file or a directory, and nothing else — a device, a FIFO or a
 * socket would be this node's, and opening some does things — so the
 * name is first looked up alone (O_PATH), its file checked, and then
 * opened through what the lookup found. fd, or -errno (-EINVAL: not one
 * to open here).
 */
static int
open_here(char **paths, const int *roots, size_t n, const char *path,
    int flags, int mode)
{
	struct stat	st, got;
	char		self[64];
	int		pfd, fd;

	if ((flags & ~(OPEN_FLAGS | O_CREAT | O_EXCL | O_TRUNC)) != 0)
		return -EINVAL;
	pfd = open_beneath(paths, roots, n, path, O_PATH |
	    (flags & O_NOFOLLOW), 0);
	/* none of that name: a new file, made here, can be nothing else */
	if (pfd == -ENOENT && (flags & O_CREAT))
		return open_beneath(paths, roots, n, path,
		    (flags & ~O_TRUNC) | O_EXCL | O_NOFOLLOW, mode);
	if (pfd < 0)
		return pfd;
	fd = -EEXIST;
	if ((flags & (O_CREAT | O_EXCL)) == (O_CREAT | O_EXCL) ||
	    (fd = fstat(pfd, &st) == -1 ? -errno : 0) != 0)
		goto out;
	fd = -EINVAL;
	if (!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode))
		goto out;
	snprintf(self, sizeof self, "/proc/self/fd/%d", pfd);
	if ((fd = open(self, (flags & ~(O_CREAT | O_EXCL | O_NOFOLLOW)) |
	    O_CLOEXEC)) == -1)
		fd = -errno;
	else if (fstat(fd, &got) == -1 || got.st_ino != st.st_ino ||
	    got.st_dev != st.st_dev) {
		close(fd);
		fd = -EINVAL;
	}
out:
	close(pfd);
	return fd;
}

/*
 * Do req: open or stat its path beneath its shared path, with its flags
 * (a stat's: O_PATH, and O_NOFOLLOW for AT_SYMLINK_NOFOLLOW): fd or
 * -errno; or unlink it: 0 or -errno.
 */
static int
open_one(char **paths, const int *roots, size_t n, const char *req,
    size_t len)
{
	const char	*path = req + 8;
	int32_t		 op, flags, mode;

	if (len < 10 || req[len - 1] != '\0')
		return -EINVAL;
	memcpy(&op, req, 4);
	memcpy(&flags, req + 4, 4);
	if (op == OPEN_HERE) {
		if (len < 14)
			return -EINVAL;
		memcpy(&mode, req + 8, 4);
		return open_here(paths, roots, n, req + 12, flags, mode);
	}
	if (op == OPEN_UNLINK)
		return flags != 0 ? -EINVAL :
		    open_unlink(paths, roots, n, path);
	if (op == OPEN_STAT) {
		if ((flags & ~AT_SYMLINK_NOFOLLOW) != 0)
			return -EINVAL;
		flags = O_PATH | ((flags & AT_SYMLINK_NOFOLLOW) ?
		    O_NOFOLLOW : 0);
	} else if (op != OPEN_OPEN || (flags & ~OPEN_FLAGS) != 0)
		return -EINVAL;
	return open_beneath(paths, roots, n, path, flags, 0);
}

/* Run on the CPU the request says, where the agent now runs. */
static void
open_near(const char *req, ssize_t len)
{
	cpu_set_t	one;
	int32_t		cpu;

	if (len < 8)
		return;
	memcpy(&cpu, req + 4, sizeof cpu);
	if (cpu < 0 || cpu >= CPU_SETSIZE)
		return;
	CPU_ZERO(&one);
	CPU_SET(cpu, &one);
	sched_setaffinity(0, sizeof one, &one);
}

/* Answer who we are: our gid, then our groups (u32s). */
static void
open_who(int s)
{
	uint32_t	ids[1 + OPEN_GROUPS_MAX];
	gid_t		groups[OPEN_GROUPS_MAX];
	int		n, i;

	if ((n = getgroups(OPEN_GROUPS_MAX, groups)) == -1) {
		open_answer(s, errno, -1, NULL, 0);
		return;
	}
	ids[0] = getegid();
	for (i = 0; i < n; i++)
		ids[1 + i] = groups[i];
	open_answer(s, 0, -1, ids, (1 + n) * sizeof *ids);
}

static void __attribute__((noreturn))
open_serve(int s, const Osm__GuestStart *gs)
{
	char		 req[8 + OSM_SHARED_PATH_MAX + PATH_MAX];
	struct stat	 st;
	int		*roots, fd, err;
	int32_t		 op;
	ssize_t		 n;
	size_t		 i;

	if (open_become(gs->owner_uid, gs->has_owner_gid ? gs->owner_gid :
	    0) == -1)
		_exit(1);
	/* what it creates gets the mode the agent says: P's umask applied */
	umask(0);
	roots = xcalloc(gs->n_shared, sizeof *roots);
	for (i = 0; i < gs->n_shared; i++)
		roots[i] = open(gs->shared[i], O_PATH | O_DIRECTORY |
		    O_CLOEXEC);
	while ((n = recv(s, req, sizeof req, 0)) > 0) {
		op = -1;
		if (n >= (ssize_t)sizeof op)
			memcpy(&op, req, sizeof op);
		if (op == OPEN_WHO) {
			open_who(s);
			continue;
		}
		if (op == OPEN_NEAR) {
			open_near(req, n);
			continue;
		}
		fd = open_one(gs->shared, roots, gs->n_shared, req, n);
		if (op == OPEN_UNLINK) {
			open_answer(s, fd < 0 ? -fd : 0, -1, &op, 0);
			continue;
		}
		if (fd >= 0 && op == OPEN_STAT) {
			err = fstat(fd, &st) == -1 ? errno : 0;
			open_answer(s, err, -1, &st, sizeof st);
		} else
			open_answer(s, fd < 0 ? -fd : 0, fd, NULL, 0);
		if (fd >= 0)
			close(fd);
	}
	_exit(0);
}

/*
 * Start the opener, if this node has shared paths and the owner is not
 * root: the agent's end of its socket, or -1 (none; the reason in
 * *cause, or NULL when there is simply nothing to share).
 */
int
guest_open_start(const Osm__GuestStart *gs, char **cause)
{
	int	sp[2];
	pid_t	pid;

	*cause = NULL;
	if (gs->n_shared == 0)
		return -1;
	if (gs->owner_uid == 0) {
		*cause = xstrdup("root's processes open nothing here");
		return -1;
	}
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) == -1) {
		xasprintf(cause, "socketpair: %s", strerror(errno));
		return -1;
	}
	switch (pid = fork()) {
	case -1:
		xasprintf(cause, "fork: %s", strerror(errno));
		close(sp[0]);
		close(sp[1]);
		return -1;
	case 0:
		close(sp[0]);
		/* the session, the start pipe: not the opener's */
		if (dup2(sp[1], 3) == -1)
			_exit(1);
		close_range(4, ~0U, 0);
		open_serve(3, gs);
	}
	close(sp[1]);
	return sp[0];
}

/*
 * Ask the opener (op, flags, path): its descriptor into *fd (an open's),
 * or what else it answers into out (*len bytes at most; *len then says
 * how many came); 0, or -1 with *cause (errno in *err, 0 if the opener
 * failed).
 */
static int
open_ask(struct guest *g, int32_t op, int flags, int mode, const char *path,
    int *fd, void *out, size_t *len, int *err, char **cause)
{
	struct msghdr	 msg;
	struct iovec	 iov[4];
	struct pollfd	 pfd;
	char		 ctl[CMSG_SPACE(sizeof(int))];
	struct cmsghdr	*cm;
	int32_t		 f = flags, m = mode, e;
	ssize_t		 n;
	int		 k = 2;

	*fd = -1;
	*err = 0;
	iov[0].iov_base = &op;
	iov[0].iov_len = sizeof op;
	iov[1].iov_base = &f;
	iov[1].iov_len = sizeof f;
	if (op == OPEN_HERE) {
		iov[k].iov_base = &m;
		iov[k++].iov_len = sizeof m;
	}
	iov[k].iov_base = (void *)path;
	iov[k++].iov_len = strlen(path) + 1;
	memset(&msg, 0, sizeof msg);
	msg.msg_iov = iov;
	msg.msg_iovlen = k;
	if (sendmsg(g->opener, &msg, MSG_NOSIGNAL) == -1) {
		xasprintf(cause, "opener: %s", strerror(errno));
		return -1;
	}
	pfd.fd = g->opener;
	pfd.events = POLLIN;
	if (poll(&pfd, 1, OPEN_TIMEOUT) != 1) {
		xasprintf(cause, "opener: no answer");
		return -1;
	}
	memset(&msg, 0, sizeof msg);
	iov[0].iov_base = &e;
	iov[0].iov_len = sizeof e;
	iov[1].iov_base = out;
	iov[1].iov_len = out != NULL ? *len : 0;
	msg.msg_iov = iov;
	msg.msg_iovlen = 2;
	msg.msg_control = ctl;
	msg.msg_controllen = sizeof ctl;
	if ((n = recvmsg(g->opener, &msg, MSG_CMSG_CLOEXEC)) <
	    (ssize_t)sizeof e) {
		xasprintf(cause, "opener: gone");
		return -1;
	}
	for (cm = CMSG_FIRSTHDR(&msg); cm != NULL; cm = CMSG_NXTHDR(&msg, cm))
		if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type ==
		    SCM_RIGHTS && cm->cmsg_len == CMSG_LEN(sizeof(int)))
			memcpy(fd, CMSG_DATA(cm), sizeof *fd);
	if (len != NULL)
		*len = n - sizeof e;
	if (e == 0 && ((op == OPEN_OPEN || op == OPEN_HERE) != (*fd != -1) ||
	    (msg.msg_flags & MSG_TRUNC)))
		e = EBADMSG;
	if (e != 0) {
		if (*fd != -1)
			close(*fd);
		*fd = -1;
		*err = e;
		xasprintf(cause, "%s: %s", path, strerror(e));
		return -1;
	}
	return 0;
}

/*
 * Open path with flags through the opener (remote_opener): a descriptor,
 * or -1 with *cause.
 */
int
guest_open(void *arg, const char *path, int flags, char **cause)
{
	int	fd, err;

	if (open_ask(arg, OPEN_OPEN, flags, 0, path, &fd, NULL, NULL, &err,
	    cause) == -1)
		return -1;
	return fd;
}

/*
 * Open path as R asked, flags and mode (remote_here): a descriptor, or
 * -errno (-EAGAIN: the opener could not say).
 */
int
guest_open_here(void *arg, const char *path, int flags, int mode)
{
	char	*cause = NULL;
	int	 fd, err;

	if (open_ask(arg, OPEN_HERE, flags, mode, path, &fd, NULL, NULL, &err,
	    &cause) == 0)
		return fd;
	free(cause);
	return err != 0 ? -err : -EAGAIN;
}

/*
 * Stat path (remote_stater), ourselves where we may (guest-lookup.c),
 * else through the opener, following a last link unless nofollow: 0, or
 * -errno (-EAGAIN: ask the home).
 */
int
guest_open_stat(void *arg, const char *path, int nofollow, struct stat *st)
{
	struct guest	*g = arg;
	char		*cause = NULL;
	size_t		 len = sizeof *st;
	int		 fd, err;

	if ((err = guest_lookup_stat(&g->lookup, g->gs->shared, path,
	    nofollow, st)) != 1)
		return err;
	if (open_ask(arg, OPEN_STAT, nofollow ? AT_SYMLINK_NOFOLLOW : 0, 0,
	    path, &fd, st, &len, &err, &cause) == 0 && len == sizeof *st)
		return 0;
	free(cause);
	return err != 0 ? -err : -EAGAIN;
}

/*
 * Unlink path through the opener (remote_unlinker): 0, or -errno
 * (-EAGAIN: the opener could not say).
 */
int
guest_open_unlink(void *arg, const char *path)
{
	char	*cause = NULL;
	int	 fd, err;

	if (open_ask(arg, OPEN_UNLINK, 0, 0, path, &fd, NULL, NULL, &err,
	    &cause) == 0)
		return 0;
	free(cause);
	return err != 0 ? -err : -EAGAIN;
}

/*
 * The opener's group and groups, into *gid and groups (room for max):
 * how many groups, or -1 if it could not say.
 */
int
guest_open_who(struct guest *g, uint32_t *gid, uint32_t *groups, size_t max)
{
	uint32_t	 ids[1 + OPEN_GROUPS_MAX];
	size_t		 len = sizeof ids;
	char		*cause = NULL;
	int		 fd, err;

	if (open_ask(g, OPEN_WHO, 0, 0, "", &fd, ids, &len, &err,
	    &cause) == -1 || len < sizeof *ids || len % sizeof *ids != 0 ||
	    len / sizeof *ids - 1 > max) {
		free(cause);
		return -1;
	}
	*gid = ids[0];
	memcpy(groups, ids + 1, len - sizeof *ids);
	return (int)(len / sizeof *ids - 1);
}

/*
 * Give R's remote the opener: what it can do, and who it is (asked of it:
 * what it really has). If it cannot say, it is taken to have a group no
 * process has, and acts alone never (shared_rights).
 */
void
guest_open_attach(struct guest *g)
{
	struct remote_opener_of	 op;
	uint32_t		 groups[OPEN_GROUPS_MAX];
	struct stat		 st;
	char			*cause;
	size_t			 i, len;
	int			 n, fd, err;

	memset(&op, 0, sizeof op);
	op.open = guest_open;
	op.stat = guest_open_stat;
	op.unlink = guest_open_unlink;
	op.here = guest_open_here;
	op.arg = g;
	op.uid = g->gs->owner_uid;
	if ((n = guest_open_who(g, &op.gid, groups, nitems(groups))) == -1) {
		op.gid = OPEN_NOGROUP;
		groups[0] = UINT32_MAX;
		n = 1;
	}
	op.groups = groups;
	op.ngroups = n;
	remote_shared(g->remote, g->gs->shared, g->gs->n_shared, &op);
	/* the shared paths as the owner reaches them, for our own stats */
	guest_lookup_free(&g->lookup);
	guest_lookup_init(&g->lookup, g->gs->n_shared, op.uid, op.gid, groups,
	    n);
	for (i = 0; i < g->gs->n_shared; i++) {
		len = sizeof st;
		cause = NULL;
		if (open_ask(g, OPEN_STAT, 0, 0, g->gs->shared[i], &fd, &st,
		    &len, &err, &cause) == 0 && len == sizeof st)
			guest_lookup_root(&g->lookup, i, g->gs->shared[i], &st);
		free(cause);
	}
}

/* Have the opener run on cpu too, where we now run (no answer). */
static void
open_near_ask(struct guest *g, int cpu)
{
	struct msghdr	msg;
	struct iovec	iov[3];
	int32_t		op = OPEN_NEAR, c = cpu;

	iov[0].iov_base = &op;
	iov[0].iov_len = sizeof op;
	iov[1].iov_base = &c;
	iov[1].iov_len = sizeof c;
	iov[2].iov_base = "";
	iov[2].iov_len = 1;
	memset(&msg, 0, sizeof msg);
	msg.msg_iov = iov;
	msg.msg_iovlen = 3;
	sendmsg(g->opener, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
}

/*
 * Run where R runs: every call of R's we answer wakes us and then R, and
 * a wakeup across CPUs costs 40 us in this VM against 6 on one (the
 * ping-pong of DESIGN.md; with the opener, a transaction of sqlite3's is
 * some forty). So while R makes calls we serve, we look at R's CPU at
 * most every OPEN_NEAR_EVERY and follow it, the opener with us; while R
 * computes we do not wake for it (t-awaycpu). R itself is never pinned:
 * its own scheduling stays the kernel's (docs/REMOTE.md, "A forwarded
 * call").
 */
void
guest_open_follow(struct guest *g)
{
	cpu_set_t	one;
	ev_tstamp	now = ev_now(g->loop);
	int		cpu;

	if (g->pid <= 0 || now - g->near_at < OPEN_NEAR_EVERY)
		return;
	g->near_at = now;
	if ((cpu = proc_last_cpu(g->pid)) < 0 || cpu == g->near_cpu ||
	    cpu >= CPU_SETSIZE)
		return;
	CPU_ZERO(&one);
	CPU_SET(cpu, &one);
	if (sched_setaffinity(0, sizeof one, &one) == -1)
		return;
	g->near_cpu = cpu;
	if (g->opener != -1)
		open_near_ask(g, cpu);
}
