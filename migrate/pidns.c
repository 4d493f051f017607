/*
 * A PID namespace for the caller's children, so that it may choose their
 * pids (mig_spawn_pid) and a restored process keeps its pid and every
 * thread id. Choosing ids (clone3's set_tid) takes CAP_SYS_ADMIN in the
 * user namespace that owns the PID namespace: root has it over one it
 * makes; anyone else makes a user namespace too, in which it keeps its
 * own user and group ids (each mapped to itself) and holds every
 * capability of that namespace, none outside it. Root makes no user
 * namespace: a process restored as root inside one would lose every
 * privilege outside it.
 *
 * A PID namespace dies with its init (pid 1): ours stays while anything
 * else lives in the namespace, reaps the orphans reparented to it, and
 * leaves when it finds itself alone. Until a first process has joined
 * it, it also leaves if the caller goes.
 */
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include <linux/sched.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "lib/osm.h"
#include "internal.h"

#define PIDNS_TICK_MS	200

static int
pidns_write(const char *path, const char *s, char **cause)
{
	if (write_file_str(path, s) == -1) {
		xasprintf(cause, "%s: %s", path, strerror(errno));
		return -1;
	}
	return 0;
}

/* Someone besides us in our namespace? */
static int
pidns_others(void)
{
	return kill(-1, 0) == 0 || errno != ESRCH;
}

static void __attribute__((noreturn))
pidns_init(int alive)
{
	struct timespec	 ts = { 0, PIDNS_TICK_MS * 1000000L };
	struct pollfd	 pfd = { .fd = 3, .events = POLLIN };
	sigset_t	 set;
	int		 fd;

	prctl(PR_SET_NAME, "osm-pidns-init");
	setsid();
	/* Nothing of the caller's held open: a pipe's reader waits for EOF. */
	alive = fcntl(alive, F_DUPFD, 10);
	if ((fd = open("/dev/null", O_RDWR)) != -1) {
		dup2(fd, 0);
		dup2(fd, 1);
		dup2(fd, 2);
	}
	dup2(alive, 3);
	close_range(4, ~0U, 0);
	sigemptyset(&set);
	sigaddset(&set, SIGCHLD);
	sigprocmask(SIG_BLOCK, &set, NULL);
	while (!pidns_others()) {
		if (poll(&pfd, 1, PIDNS_TICK_MS) > 0)
			_exit(0);	/* the caller is gone, nobody came */
	}
	for (;;) {
		while (waitpid(-1, NULL, WNOHANG) > 0)
			;
		if (!pidns_others())
			_exit(0);
		sigtimedwait(&set, NULL, &ts);
	}
}

pid_t
mig_pidns(char **cause)
{
	uid_t	 uid = geteuid();
	gid_t	 gid = getegid();
	char	 map[64];
	int	 p[2], user = uid != 0;
	pid_t	 init;

	if (unshare(CLONE_NEWPID | (user ? CLONE_NEWUSER : 0)) == -1) {
		xasprintf(cause, "cannot make a %sPID namespace: %s%s",
		    user ? "user and " : "", strerror(errno),
		    errno == EINVAL ? " (the caller has threads)" :
		    errno == EPERM || errno == ENOSPC ? " (user namespaces "
		    "not allowed here: user.max_user_namespaces)" : "");
		return -1;
	}
	if (user) {
		snprintf(map, sizeof map, "%u %u 1", uid, uid);
		if (pidns_write("/proc/self/uid_map", map, cause) == -1 ||
		    pidns_write("/proc/self/setgroups", "deny", cause) == -1)
			return -1;
		snprintf(map, sizeof map, "%u %u 1", gid, gid);
		if (pidns_write("/proc/self/gid_map", map, cause) == -1)
			return -1;
	}
	/* Its read end says when we are gone; ours stays open till then. */
	if (pipe2(p, O_CLOEXEC) == -1) {
		xasprintf(cause, "pipe: %s", strerror(errno));
		return -1;
	}
	if ((init = fork()) == -1) {
		xasprintf(cause, "fork: %s", strerror(errno));
		close(p[0]);
		close(p[1]);
		return -1;
	}
	if (init == 0) {
		close(p[1]);
		pidns_init(p[0]);
	}
	close(p[0]);
	return init;
}

/* In a fresh user namespace: our own ids mapped to themselves. */
static int
pidns_map(uid_t uid, gid_t gid)
{
	char	map[64];

	snprintf(map, sizeof map, "%u %u 1", uid, uid);
	if (write_file_str("/proc/self/uid_map", map) == -1 ||
	    write_file_str("/proc/self/setgroups", "deny") == -1)
		return -1;
	snprintf(map, sizeof map, "%u %u 1", gid, gid);
	return write_file_str("/proc/self/gid_map", map);
}

/*
 * In a fresh user namespace, its capabilities are all ours, the bounding
 * set full again: empty it, so that what we make there can never have
 * more than it is given (the caller drops the rest once it is done).
 */
static int
pidns_bound(void)
{
	int	c;

	for (c = 0; prctl(PR_CAPBSET_READ, c, 0, 0, 0) >= 0; c++)
		if (prctl(PR_CAPBSET_DROP, c, 0, 0, 0) == -1)
			return -1;
	return 0;
}

/*
 * A child with pid as its own pid, in a PID namespace of its own, for a
 * caller that must stay as it is: in its own namespaces, able to make
 * threads (a guest agent reads its images in one), its peers' ids seen as
 * they are. A helper it forks makes the namespaces (a user namespace
 * too, unless we are root: its owner, our uid, keeps every capability
 * over it), their init, and the child, with CLONE_PARENT, so that the
 * child is the caller's. Returns 0 in the child, its pid in the caller,
 * -1 with *cause.
 */
pid_t
pidns_fork(pid_t pid, char **cause)
{
	static int		 alive[2] = { -1, -1 };
	struct clone_args	 ca;
	uid_t			 uid = geteuid();
	gid_t			 gid = getegid();
	int			 p[2], status, err = 0, user = uid != 0;
	pid_t			 helper, init, r = -1;

	/* Its read end tells init we are gone; ours stays open till then. */
	if (alive[1] == -1 && pipe2(alive, O_CLOEXEC) == -1) {
		xasprintf(cause, "pipe: %s", strerror(errno));
		return -1;
	}
	if (pipe2(p, O_CLOEXEC) == -1) {
		xasprintf(cause, "pipe: %s", strerror(errno));
		return -1;
	}
	if ((helper = fork()) == -1) {
		xasprintf(cause, "fork: %s", strerror(errno));
		close(p[0]);
		close(p[1]);
		return -1;
	}
	if (helper == 0) {
		close(p[0]);
		if (unshare(CLONE_NEWPID | (user ? CLONE_NEWUSER : 0)) == -1 ||
		    (user && pidns_map(uid, gid) == -1))
			err = errno != 0 ? errno : EPERM;
		else if (user && pidns_bound() == -1)
			err = errno;
		else if ((init = fork()) == 0)
			pidns_init(alive[0]);
		else if (init == -1)
			err = errno;
		else {
			memset(&ca, 0, sizeof ca);
			ca.flags = CLONE_PARENT;
			ca.set_tid = (uintptr_t)&pid;
			ca.set_tid_size = 1;
			if ((r = syscall(SYS_clone3, &ca, sizeof ca)) == 0) {
				close(p[1]);
				return 0;	/* the child, the caller's */
			}
			if (r == -1)
				err = errno;
		}
		if (err != 0)
			r = err;
		if (write(p[1], &r, sizeof r) != sizeof r)
			_exit(1);
		_exit(err != 0 ? 2 : 0);
	}
	close(p[1]);
	if (read(p[0], &r, sizeof r) != sizeof r) {
		r = -1;
		err = EIO;
	}
	close(p[0]);
	while (waitpid(helper, &status, 0) == -1 && errno == EINTR)
		;
	if (WIFEXITED(status) && WEXITSTATUS(status) == 2) {
		err = (int)r;
		r = -1;
	}
	if (r <= 0) {
		if (err == EEXIST)
			xasprintf(cause, "cannot choose pid %d: it is taken",
			    pid);
		else
			xasprintf(cause, "a %sPID namespace with pid %d: %s%s",
			    user ? "user and " : "", pid,
			    strerror(err != 0 ? err : EIO), err == EPERM ||
			    err == ENOSPC ? " (user namespaces not allowed "
			    "here: user.max_user_namespaces)" : "");
		return -1;
	}
	return r;
}

pid_t
mig_fork_pid(pid_t pid, char **cause)
{
	return pidns_fork(pid, cause);
}

/*
 * Make next the id the PID namespace of process member (made by
 * mig_spawn_bare_pid) gives next: its ns_last_pid set to next - 1, from a
 * process of ours inside it, which takes CAP_SYS_ADMIN over it (ours, in
 * our user namespace). Who makes the next process or thread there gets
 * next, if it is free: the caller lets only that one be made meanwhile.
 */
int
mig_pidns_next(pid_t member, pid_t next, char **cause)
{
	char	 path[64], val[32];
	pid_t	 helper, in;
	int	 fd, ufd, status, err = 0;

	snprintf(path, sizeof path, "/proc/%d/ns/pid", (int)member);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1) {
		xasprintf(cause, "%s: %s", path, strerror(errno));
		return -1;
	}
	if ((helper = fork()) == -1) {
		xasprintf(cause, "fork: %s", strerror(errno));
		close(fd);
		return -1;
	}
	if (helper == 0) {
		/*
		 * Its user namespace first (ours if we are root), where we,
		 * its owner, hold every capability; only a process born
		 * inside then writes the PID namespace's next id.
		 */
		snprintf(path, sizeof path, "/proc/%d/ns/user", (int)member);
		if (geteuid() != 0 && ((ufd = open(path, O_RDONLY)) == -1 ||
		    setns(ufd, CLONE_NEWUSER) == -1))
			_exit(10 + errno % 100);
		if (setns(fd, CLONE_NEWPID) == -1)
			_exit(10 + errno % 100);
		if ((in = fork()) == 0) {
			snprintf(val, sizeof val, "%d", (int)next - 1);
			_exit(write_file_str("/proc/sys/kernel/ns_last_pid",
			    val) == -1 ? 110 + errno % 100 : 0);
		}
		if (in == -1 || waitpid(in, &status, 0) != in ||
		    !WIFEXITED(status))
			_exit(3);
		_exit(WEXITSTATUS(status));
	}
	close(fd);
	while (waitpid(helper, &status, 0) == -1 && errno == EINTR)
		;
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return 0;
	if (WIFEXITED(status) && WEXITSTATUS(status) >= 10) {
		err = WEXITSTATUS(status) >= 110 ? WEXITSTATUS(status) - 110 :
		    WEXITSTATUS(status) - 10;
		xasprintf(cause, "%s the id %d in process %d's PID namespace: "
		    "%s", WEXITSTATUS(status) >= 110 ? "cannot make" :
		    "cannot enter", (int)next, (int)member, strerror(err));
	} else
		xasprintf(cause, "cannot make the id %d in process %d's PID "
		    "namespace", (int)next, (int)member);
	return -1;
}
