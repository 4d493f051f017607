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
 * It serves the guest agent alone, over a socket pair: a request is the
 * flags (4 bytes) and the path; the answer 4 bytes of errno, 0 with the
 * descriptor. It ends when the agent does.
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
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"
#include "proto/migrate.pb-c.h"

#define OPEN_NOGROUP	65534
#define OPEN_TIMEOUT	10000	/* ms an open may take (NFS) */
#define OPEN_FLAGS	(O_ACCMODE | O_APPEND | O_NONBLOCK | O_DSYNC | \
			 O_SYNC | O_DIRECT | O_NOATIME | O_LARGEFILE | \
			 O_NOFOLLOW | O_CLOEXEC)

/* Become the owner: its uid, its groups here, nothing else. */
static int
open_become(uid_t uid)
{
	struct passwd	*pw;
	gid_t		 gid = OPEN_NOGROUP;
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

/* Send errno err, and fd if err is 0. */
static void
open_answer(int s, int err, int fd)
{
	struct msghdr	 msg;
	struct iovec	 iov;
	char		 ctl[CMSG_SPACE(sizeof(int))];
	struct cmsghdr	*cm;
	int32_t		 e = err;

	memset(&msg, 0, sizeof msg);
	iov.iov_base = &e;
	iov.iov_len = sizeof e;
	msg.msg_iov = &iov;
	msg.msg_iovlen = 1;
	if (err == 0) {
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

/* Open req (flags, then the path) beneath its shared path: fd or -errno. */
static int
open_one(char **paths, const int *roots, size_t n, const char *req,
    size_t len)
{
	struct open_how	 how;
	const char	*path = req + 4, *rel;
	size_t		 i, best = n, plen = 0;
	int32_t		 flags;
	int		 fd;

	if (len < 6 || req[len - 1] != '\0')
		return -EINVAL;
	memcpy(&flags, req, 4);
	if ((flags & ~OPEN_FLAGS) != 0)
		return -EINVAL;
	for (i = 0; i < n; i++) {
		if (roots[i] == -1 || !conf_is_shared(&paths[i], 1, path) ||
		    strlen(paths[i]) < plen)
			continue;
		best = i;
		plen = strlen(paths[i]);
	}
	if (best == n)
		return -EXDEV;
	rel = path + plen;
	while (*rel == '/')
		rel++;
	if (*rel == '\0')
		rel = ".";
	memset(&how, 0, sizeof how);
	how.flags = (uint64_t)flags | O_CLOEXEC;
	how.resolve = RESOLVE_BENEATH | RESOLVE_NO_XDEV |
	    RESOLVE_NO_MAGICLINKS;
	if ((fd = syscall(SYS_openat2, roots[best], rel, &how,
	    sizeof how)) == -1)
		return -errno;
	return fd;
}

static void __attribute__((noreturn))
open_serve(int s, const Osm__GuestStart *gs)
{
	char	 req[4 + OSM_SHARED_PATH_MAX + PATH_MAX];
	int	*roots, fd;
	ssize_t	 n;
	size_t	 i;

	if (open_become(gs->owner_uid) == -1)
		_exit(1);
	roots = xcalloc(gs->n_shared, sizeof *roots);
	for (i = 0; i < gs->n_shared; i++)
		roots[i] = open(gs->shared[i], O_PATH | O_DIRECTORY |
		    O_CLOEXEC);
	while ((n = recv(s, req, sizeof req, 0)) > 0) {
		fd = open_one(gs->shared, roots, gs->n_shared, req, n);
		open_answer(s, fd < 0 ? -fd : 0, fd);
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
 * Open path with flags through the opener (remote_opener): a descriptor,
 * or -1 with *cause.
 */
int
guest_open(void *arg, const char *path, int flags, char **cause)
{
	struct guest	*g = arg;
	struct msghdr	 msg;
	struct iovec	 iov[2];
	struct pollfd	 pfd;
	char		 ctl[CMSG_SPACE(sizeof(int))];
	struct cmsghdr	*cm;
	int32_t		 f = flags, err;
	int		 fd = -1;

	iov[0].iov_base = &f;
	iov[0].iov_len = sizeof f;
	iov[1].iov_base = (void *)path;
	iov[1].iov_len = strlen(path) + 1;
	memset(&msg, 0, sizeof msg);
	msg.msg_iov = iov;
	msg.msg_iovlen = 2;
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
	iov[0].iov_base = &err;
	iov[0].iov_len = sizeof err;
	msg.msg_iov = iov;
	msg.msg_iovlen = 1;
	msg.msg_control = ctl;
	msg.msg_controllen = sizeof ctl;
	if (recvmsg(g->opener, &msg, MSG_CMSG_CLOEXEC) != sizeof err) {
		xasprintf(cause, "opener: gone");
		return -1;
	}
	for (cm = CMSG_FIRSTHDR(&msg); cm != NULL; cm = CMSG_NXTHDR(&msg, cm))
		if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type ==
		    SCM_RIGHTS && cm->cmsg_len == CMSG_LEN(sizeof(int)))
			memcpy(&fd, CMSG_DATA(cm), sizeof fd);
	if (err != 0 || fd == -1) {
		if (fd != -1)
			close(fd);
		xasprintf(cause, "%s: %s", path, strerror(err != 0 ? err :
		    EBADMSG));
		return -1;
	}
	return fd;
}
