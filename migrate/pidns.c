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
#include <sys/wait.h>

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
