/*
 * A node's processes: booting its init, recognising it later, entering
 * its namespaces, and crashing it.
 *
 * Booting forks a child that joins the node's cgroups and network
 * namespace, unshares mount, UTS, IPC and PID namespaces, and forks the
 * node's PID 1. PID 1 gives the node a fresh /proc, /tmp, /run and
 * /dev/shm and its hostname, reports back through a pipe, then reaps
 * orphans until SIGTERM. Killing PID 1 makes the kernel kill everything
 * else in the node at once, which is how a node crashes.
 */
#include <sys/mount.h>
#include <sys/pidfd.h>
#include <sys/prctl.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/osm.h"
#include "moslab.h"

#define NODE_NS_FLAGS	(CLONE_NEWNET | CLONE_NEWUTS | CLONE_NEWIPC | \
			 CLONE_NEWPID | CLONE_NEWNS)
#define NODE_PATH	"/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:" \
			"/sbin:/bin"
#define NODE_KEEP_MAX	3
#define NODE_MOUNTS_MAX	256

/* The private file systems of a node, in mounting order. */
static const struct {
	const char	*path;
	const char	*type;
	unsigned long	 flags;
	const char	*data;
} node_fs[] = {
	{ "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL },
	{ "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777" },
	{ "/run", "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755" },
	{ "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777" },
};

static int
node_under(const char *path, const char *dir)
{
	size_t	len = strlen(dir);

	return strncmp(path, dir, len) == 0 &&
	    (path[len] == '/' || path[len] == '\0');
}

/*
 * If path lies in a directory the nodes have their own of, the entry right
 * below that directory which holds path (/tmp/ci for /tmp/ci/osmosis/bin),
 * or "" for the directory itself; else NULL.
 */
char *
node_private_top(const char *path)
{
	size_t	i, len;

	for (i = 0; i < nitems(node_fs); i++) {
		if (!node_under(path, node_fs[i].path))
			continue;
		len = strlen(node_fs[i].path);
		if (path[len] == '\0' || path[len + 1] == '\0')
			return xstrdup("");
		return xstrndup(path, len + 1 + strcspn(path + len + 1, "/"));
	}
	return NULL;
}

/*
 * The tree, the state directory and mosd must stay visible inside the node
 * even when they live under /tmp or /run (CI clones trees there): list the
 * entries there that hold them, to be mounted again over the node's own.
 */
static size_t
node_keep_list(struct lab *lab, char **keep)
{
	const char	*paths[NODE_KEEP_MAX];
	char		*mosd_dir, *top;
	size_t		 i, j, n = 0;

	mosd_dir = xstrdup(lab->mosd);
	paths[0] = lab->bindir;
	paths[1] = lab->dir;
	paths[2] = dirname(mosd_dir);
	for (i = 0; i < nitems(paths); i++) {
		if ((top = node_private_top(paths[i])) == NULL)
			continue;
		for (j = 0; j < n; j++)
			if (strcmp(keep[j], top) == 0)
				break;
		if (*top == '\0' || j < n)
			free(top);
		else
			keep[n++] = top;
	}
	free(mosd_dir);
	return n;
}

/* mountinfo escapes blanks and backslashes as \ooo. */
static void
node_unescape(char *s)
{
	char	*d = s;

	while (*s != '\0') {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' &&
		    s[2] >= '0' && s[2] <= '7' && s[3] >= '0' && s[3] <= '7') {
			*d++ = (s[1] - '0') << 6 | (s[2] - '0') << 3 |
			    (s[3] - '0');
			s += 4;
		} else
			*d++ = *s++;
	}
	*d = '\0';
}

/*
 * Detach the host's mounts on and below the directories the node gets
 * fresh: hidden under a new tmpfs they would still pin what they hold,
 * such as other labs' network namespaces under /run/netns.
 */
static void
node_detach_mounts(void)
{
	FILE	*f;
	char	*line = NULL, *mnt[NODE_MOUNTS_MAX], mp[4096];
	size_t	 size = 0, n = 0, i;

	if ((f = fopen("/proc/self/mountinfo", "re")) == NULL)
		return;
	while (getline(&line, &size, f) != -1 && n < NODE_MOUNTS_MAX) {
		if (sscanf(line, "%*s %*s %*s %*s %4095s", mp) != 1)
			continue;
		node_unescape(mp);
		for (i = 0; i < nitems(node_fs); i++) {
			if (node_under(mp, node_fs[i].path)) {
				mnt[n++] = xstrdup(mp);
				break;
			}
		}
	}
	free(line);
	fclose(f);
	/* Newest first, so that children go before their parents. */
	while (n > 0) {
		umount2(mnt[--n], MNT_DETACH);
		free(mnt[n]);
	}
}

static void __attribute__((noreturn, format(printf, 2, 3)))
node_init_fail(int fd, const char *fmt, ...)
{
	va_list	 ap;
	char	*msg;

	va_start(ap, fmt);
	xvasprintf(&msg, fmt, ap);
	va_end(ap);
	dprintf(fd, "error %s: %s\n", msg, strerror(errno));
	_exit(1);
}

/* The node's PID 1. */
static void __attribute__((noreturn))
node_init(struct lab *lab, unsigned k, int fd)
{
	char		*keep[NODE_KEEP_MAX], host[32];
	int		 tree[NODE_KEEP_MAX], null;
	size_t		 nkeep, i;
	sigset_t	 all;
	siginfo_t	 si;

	setsid();
	prctl(PR_SET_NAME, "moslab-init");
	snprintf(host, sizeof host, "moslab-init %s node%u", lab->name, k);
	lab_set_title(host);
	if ((null = open("/dev/null", O_RDWR)) == -1)
		node_init_fail(fd, "/dev/null");
	dup2(null, STDIN_FILENO);
	dup2(null, STDOUT_FILENO);
	dup2(null, STDERR_FILENO);
	/* Nothing of moslab's, such as the lab lock, may stay open here. */
	close_range(STDERR_FILENO + 1, fd - 1, 0);
	close_range(fd + 1, ~0U, 0);

	nkeep = node_keep_list(lab, keep);
	for (i = 0; i < nkeep; i++) {
		tree[i] = open_tree(AT_FDCWD, keep[i], OPEN_TREE_CLONE |
		    AT_RECURSIVE | OPEN_TREE_CLOEXEC);
		if (tree[i] == -1)
			node_init_fail(fd, "open_tree %s", keep[i]);
	}
	node_detach_mounts();
	for (i = 0; i < nitems(node_fs); i++) {
		if (access(node_fs[i].path, F_OK) == -1)
			continue;
		if (mount(node_fs[i].type, node_fs[i].path, node_fs[i].type,
		    node_fs[i].flags, node_fs[i].data) == -1)
			node_init_fail(fd, "mount %s", node_fs[i].path);
	}
	for (i = 0; i < nkeep; i++) {
		if (mkdir_p(keep[i], 0755) == -1)
			node_init_fail(fd, "mkdir %s", keep[i]);
		if (move_mount(tree[i], "", AT_FDCWD, keep[i],
		    MOVE_MOUNT_F_EMPTY_PATH) == -1)
			node_init_fail(fd, "move_mount %s", keep[i]);
		close(tree[i]);
	}
	snprintf(host, sizeof host, "node%u", k);
	if (sethostname(host, strlen(host)) == -1)
		node_init_fail(fd, "sethostname");
	if (chdir("/") == -1)
		node_init_fail(fd, "chdir /");

	/*
	 * Signals stay blocked and are taken with sigwaitinfo: a blocked
	 * signal reaches a namespace's init even without a handler.
	 */
	sigfillset(&all);
	sigprocmask(SIG_SETMASK, &all, NULL);
	dprintf(fd, "ready\n");
	close(fd);
	for (;;) {
		if (sigwaitinfo(&all, &si) == -1)
			continue;
		switch (si.si_signo) {
		case SIGCHLD:
			while (waitpid(-1, NULL, WNOHANG) > 0)
				;
			break;
		case SIGTERM:
		case SIGINT:
			_exit(0);
		}
	}
}

/* The child that sets up the namespaces and forks PID 1; never returns. */
static void __attribute__((noreturn))
node_spawn(struct lab *lab, unsigned k, int netns, int fd)
{
	pid_t	pid;

	if (cgroup_join(lab, k) == -1)
		node_init_fail(fd, "join node %u's cgroup", k);
	if (setns(netns, CLONE_NEWNET) == -1)
		node_init_fail(fd, "enter node %u's network namespace", k);
	if (unshare(CLONE_NEWNS | CLONE_NEWUTS | CLONE_NEWIPC |
	    CLONE_NEWPID) == -1)
		node_init_fail(fd, "unshare");
	/* Nothing the node mounts may leak out to the host, or back in. */
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) == -1)
		node_init_fail(fd, "make / private");
	if ((pid = fork()) == -1)
		node_init_fail(fd, "fork");
	if (pid == 0)
		node_init(lab, k, fd);
	dprintf(fd, "pid %d\n", (int)pid);
	_exit(0);
}

/* Start node K's init and record its pid. */
int
node_boot(struct lab *lab, unsigned k, char **cause)
{
	struct pollfd	 pfd;
	char		 buf[1024], *nspath, *line, *next, *err = NULL;
	size_t		 len = 0;
	ssize_t		 n;
	uint64_t	 end;
	pid_t		 child, init = 0;
	int		 p[2], netns, ready = 0, rc = -1;

	nspath = net_netns_path(lab, k);
	netns = open(nspath, O_RDONLY | O_CLOEXEC);
	if (netns == -1) {
		xasprintf(cause, "%s: %s", nspath, strerror(errno));
		free(nspath);
		return -1;
	}
	free(nspath);
	if (pipe2(p, O_CLOEXEC) == -1)
		fatal("pipe");
	if ((child = fork()) == -1)
		fatal("fork");
	if (child == 0) {
		close(p[0]);
		node_spawn(lab, k, netns, p[1]);
	}
	close(p[1]);
	close(netns);

	/* Read the reports of the child and of PID 1 until both are done. */
	pfd.fd = p[0];
	pfd.events = POLLIN;
	end = now_ms() + LAB_WAIT_MS;
	while (len < sizeof buf - 1 && now_ms() < end) {
		if (poll(&pfd, 1, end - now_ms()) <= 0)
			continue;
		n = read(p[0], buf + len, sizeof buf - 1 - len);
		if (n == 0)
			break;
		if (n > 0)
			len += n;
	}
	buf[len] = '\0';
	close(p[0]);
	while (waitpid(child, NULL, 0) == -1 && errno == EINTR)
		;

	for (line = buf; line != NULL && *line != '\0'; line = next) {
		if ((next = strchr(line, '\n')) != NULL)
			*next++ = '\0';
		if (strncmp(line, "pid ", 4) == 0)
			init = atoi(line + 4);
		else if (strcmp(line, "ready") == 0)
			ready = 1;
		else if (strncmp(line, "error ", 6) == 0 && err == NULL)
			err = xstrdup(line + 6);
	}
	if (!ready || init <= 0)
		xasprintf(cause, "node %u: %s", k, err != NULL ? err :
		    "its init did not start");
	else if (lab_pid_write(lab, k, "init.pid", init, cause) == 0)
		rc = 0;
	if (rc == -1 && init > 0)
		kill(init, SIGKILL);
	free(err);
	return rc;
}

/* The pid of process pid in its own PID namespace, from NSpid. */
static int
node_nspid(pid_t pid)
{
	FILE	*f;
	char	 path[64], *line = NULL, *last;
	size_t	 size = 0;
	int	 nspid = -1;

	snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
	if ((f = fopen(path, "re")) == NULL)
		return -1;
	while (getline(&line, &size, f) != -1) {
		if (strncmp(line, "NSpid:", 6) != 0)
			continue;
		line[strcspn(line, "\n")] = '\0';
		if ((last = strrchr(line, '\t')) != NULL ||
		    (last = strrchr(line, ' ')) != NULL)
			nspid = atoi(last + 1);
		break;
	}
	free(line);
	fclose(f);
	return nspid;
}

/*
 * A pidfd for node K's init if it is alive, else -1. The pid file alone
 * proves nothing (pids are reused): the process must be PID 1 of its own
 * namespace and live in node K's network namespace.
 */
int
node_pidfd(struct lab *lab, unsigned k, pid_t *pidp)
{
	char		 path[64], *nspath;
	pid_t		 pid;
	int		 fd, same;

	if (lab_pid_read(lab, k, "init.pid", &pid) == -1)
		return -1;
	if ((fd = pidfd_open(pid, 0)) == -1)
		return -1;
	snprintf(path, sizeof path, "/proc/%d/ns/net", (int)pid);
	nspath = net_netns_path(lab, k);
	same = lab_same_file(path, nspath);
	free(nspath);
	/* Still alive after the checks: they were about this process. */
	if (!same || node_nspid(pid) != 1 ||
	    pidfd_send_signal(fd, 0, NULL, 0) == -1) {
		close(fd);
		return -1;
	}
	if (pidp != NULL)
		*pidp = pid;
	return fd;
}

/* Is any node of the lab alive? A killed run leaves a lab of dead nodes. */
int
node_any_alive(struct lab *lab)
{
	unsigned	k;
	int		fd;

	for (k = 1; k <= lab->nnodes; k++) {
		if ((fd = node_pidfd(lab, k, NULL)) != -1) {
			close(fd);
			return 1;
		}
	}
	return 0;
}

/*
 * Move the calling process into node K's namespaces; its next child is a
 * process of the node (which must still join the node's cgroups).
 */
int
node_enter(struct lab *lab, unsigned k, char **cause)
{
	int	fd;

	if ((fd = node_pidfd(lab, k, NULL)) == -1) {
		xasprintf(cause, "node %u is dead (bring it back with 'moslab "
		    "start %u')", k, k);
		return -1;
	}
	if (setns(fd, NODE_NS_FLAGS) == -1) {
		xasprintf(cause, "enter node %u: %s", k, strerror(errno));
		close(fd);
		return -1;
	}
	close(fd);
	if (chdir("/") == -1) {
		xasprintf(cause, "node %u: chdir /: %s", k, strerror(errno));
		return -1;
	}
	return 0;
}

/* The environment of a node's processes: bin/ first on PATH, OSM_NODE. */
void
node_setenv(struct lab *lab, unsigned k)
{
	const char	*path;
	char		*newpath, node[16];

	if ((path = getenv("PATH")) == NULL || *path == '\0')
		path = NODE_PATH;
	xasprintf(&newpath, "%s:%s", lab->bindir, path);
	snprintf(node, sizeof node, "%u", k);
	if (setenv("PATH", newpath, 1) == -1 ||
	    setenv("OSM_NODE", node, 1) == -1)
		fatal("setenv");
	free(newpath);
}

/*
 * Crash node K: SIGKILL its PID 1, which takes every process of the node
 * with it, and wait until its cgroups are empty.
 */
int
node_kill(struct lab *lab, unsigned k, char **cause)
{
	int	fd;

	if ((fd = node_pidfd(lab, k, NULL)) != -1) {
		if (pidfd_send_signal(fd, SIGKILL, NULL, 0) == 0)
			lab_pidfd_wait(fd, LAB_WAIT_MS);
		close(fd);
	}
	lab_pid_remove(lab, k, "init.pid");
	lab_pid_remove(lab, k, "mosd.pid");
	if (cgroup_kill(lab, k, LAB_WAIT_MS) == -1) {
		xasprintf(cause, "node %u: processes are still in its cgroup "
		    "after %d ms", k, LAB_WAIT_MS);
		return -1;
	}
	return 0;
}
