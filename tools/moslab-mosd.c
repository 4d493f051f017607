/*
 * mosd inside a node: start (rebooting a dead node first), wait for its
 * control socket, recognise it, stop it. The commands start and stop.
 *
 * mosd runs as `mosd -d -f STATEDIR/cluster.conf` with its output appended
 * to STATEDIR/nodeK/mosd.log, and finds its node number by its address.
 */
#include <sys/pidfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/osm.h"
#include "moslab.h"

#define MOSD_KILL_MS	2000	/* after SIGKILL */
#define MOSD_POLL_MS	50	/* between looks at the nodes' views */

/*
 * The process that becomes mosd, inside the node; never returns. Its
 * message tells moslab its pid: the kernel attaches the sender's
 * credentials, with the pid as the receiver sees it.
 */
static void __attribute__((noreturn))
mosd_exec(struct lab *lab, unsigned k, int logfd, int sock)
{
	char	*argv[] = { lab->mosd, "-d", "-f", lab->conf, NULL };
	int	 null, sig;

	if (cgroup_join(lab, k) == -1) {
		dprintf(sock, "error node %u: join its cgroup: %s", k,
		    strerror(errno));
		_exit(127);
	}
	setsid();
	for (sig = 1; sig < NSIG; sig++)
		signal(sig, SIG_DFL);
	if ((null = open("/dev/null", O_RDONLY)) != -1)
		dup2(null, STDIN_FILENO);
	dup2(logfd, STDOUT_FILENO);
	dup2(logfd, STDERR_FILENO);
	/*
	 * Nothing else of moslab's caller goes into mosd: a descriptor the
	 * shell held (a pipe of `out=$(moslab up 3)`, say) would stay open
	 * for the daemon's life, and whoever waits for its end would hang.
	 */
	close_range(STDERR_FILENO + 1, ~0U, CLOSE_RANGE_CLOEXEC);
	if (write(sock, "ok", 2) != 2)
		_exit(127);
	execv(lab->mosd, argv);
	dprintf(STDERR_FILENO, "moslab: %s: %s\n", lab->mosd, strerror(errno));
	_exit(127);
}

/*
 * Enter node K and start mosd there; never returns. mosd is forked by a
 * short-lived process of the node, so that it is orphaned inside the node
 * and its parent becomes the node's init, which reaps it at once.
 */
static void __attribute__((noreturn))
mosd_helper(struct lab *lab, unsigned k, int logfd, int sock)
{
	char	*cause;
	pid_t	 pid, mosd;

	if (node_enter(lab, k, &cause) == -1) {
		dprintf(sock, "error %s", cause);
		_exit(1);
	}
	node_setenv(lab, k);
	if ((pid = fork()) == 0) {
		if ((mosd = fork()) == 0)
			mosd_exec(lab, k, logfd, sock);
		if (mosd == -1)
			dprintf(sock, "error node %u: fork: %s", k,
			    strerror(errno));
		_exit(0);
	}
	if (pid == -1)
		dprintf(sock, "error node %u: fork: %s", k, strerror(errno));
	else
		while (waitpid(pid, NULL, 0) == -1 && errno == EINTR)
			;
	_exit(0);
}

/* The pid of mosd from mosd_exec's message, or an error from the others. */
static pid_t
mosd_recv(int sock, unsigned k, char **cause)
{
	union {
		struct cmsghdr	hdr;
		char		buf[CMSG_SPACE(sizeof(struct ucred))];
	} control;
	struct pollfd	 pfd = { .fd = sock, .events = POLLIN };
	struct msghdr	 msg;
	struct iovec	 iov;
	struct cmsghdr	*cmsg;
	struct ucred	 cred;
	char		 buf[512];
	ssize_t		 n;

	for (;;) {
		if (poll(&pfd, 1, LAB_WAIT_MS) == 0)
			break;
		memset(&msg, 0, sizeof msg);
		iov.iov_base = buf;
		iov.iov_len = sizeof buf - 1;
		msg.msg_iov = &iov;
		msg.msg_iovlen = 1;
		msg.msg_control = control.buf;
		msg.msg_controllen = sizeof control.buf;
		if ((n = recvmsg(sock, &msg, 0)) == -1) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (n == 0)
			break;
		buf[n] = '\0';
		if (strncmp(buf, "error ", 6) == 0) {
			xasprintf(cause, "start mosd: %s", buf + 6);
			return -1;
		}
		cmsg = CMSG_FIRSTHDR(&msg);
		if (strcmp(buf, "ok") == 0 && cmsg != NULL &&
		    cmsg->cmsg_level == SOL_SOCKET &&
		    cmsg->cmsg_type == SCM_CREDENTIALS) {
			memcpy(&cred, CMSG_DATA(cmsg), sizeof cred);
			return cred.pid;
		}
	}
	xasprintf(cause, "start mosd on node %u: it never started", k);
	return -1;
}

int
mosd_check(struct lab *lab, char **cause)
{
	char	*copy, *dir, *top;
	int	 rc = 0;

	if (access(lab->mosd, X_OK) == -1) {
		xasprintf(cause, "cannot run mosd at %s: %s (build it with "
		    "'make' or point MOSLAB_MOSD at one)", lab->mosd,
		    strerror(errno));
		return -1;
	}
	/* Of /tmp and the like, nodes see only directories kept for them. */
	copy = xstrdup(lab->mosd);
	dir = dirname(copy);
	top = node_private_top(dir);
	if (top != NULL && *top == '\0') {
		xasprintf(cause, "mosd at %s would not be seen in the nodes, "
		    "which have their own %s: move it to a directory below",
		    lab->mosd, dir);
		rc = -1;
	}
	free(top);
	free(copy);
	return rc;
}

/*
 * Start mosd in node K and record its pid; mosd_wait_ready then waits for
 * it, so that up can start every node's before waiting for any.
 */
int
mosd_spawn(struct lab *lab, unsigned k, char **cause)
{
	char	*log, *sock;
	pid_t	 helper, pid, init;
	int	 sv[2], logfd, fd, one = 1;

	if (mosd_check(lab, cause) == -1)
		return -1;
	if ((fd = node_pidfd(lab, k, &init)) == -1) {
		xasprintf(cause, "node %u is dead", k);
		return -1;
	}
	close(fd);
	/* A socket left by an earlier mosd would look like a ready one. */
	xasprintf(&sock, "/proc/%d/root%s", (int)init, lab->sockpath);
	unlink(sock);
	free(sock);

	log = lab_node_path(lab, k, "mosd.log");
	logfd = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	if (logfd == -1) {
		xasprintf(cause, "%s: %s", log, strerror(errno));
		free(log);
		return -1;
	}
	free(log);
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) == -1 ||
	    setsockopt(sv[0], SOL_SOCKET, SO_PASSCRED, &one, sizeof one) == -1)
		fatal("socketpair");
	if ((helper = fork()) == -1)
		fatal("fork");
	if (helper == 0) {
		close(sv[0]);
		mosd_helper(lab, k, logfd, sv[1]);
	}
	close(sv[1]);
	close(logfd);
	pid = mosd_recv(sv[0], k, cause);
	close(sv[0]);
	while (waitpid(helper, NULL, 0) == -1 && errno == EINTR)
		;
	if (pid <= 0)
		return -1;
	return lab_pid_write(lab, k, "mosd.pid", pid, cause);
}

/* The last line of node K's mosd.log, to say why mosd died. */
static char *
mosd_log_tail(struct lab *lab, unsigned k)
{
	FILE	*f;
	char	*path = lab_node_path(lab, k, "mosd.log");
	char	*line = NULL, *last = NULL;
	size_t	 size = 0;

	if ((f = fopen(path, "re")) != NULL) {
		while (getline(&line, &size, f) != -1) {
			line[strcspn(line, "\n")] = '\0';
			if (*line == '\0')
				continue;
			free(last);
			last = xstrdup(line);
		}
		free(line);
		fclose(f);
	}
	if (last == NULL)
		xasprintf(&last, "nothing in %s", path);
	free(path);
	return last;
}

/* Wait until node K's mosd has made its control socket. */
int
mosd_wait_ready(struct lab *lab, unsigned k, char **cause)
{
	struct pollfd	 pfd;
	struct stat	 st;
	char		*sock, *tail;
	uint64_t	 end = now_ms() + LAB_WAIT_MS;
	pid_t		 pid, init;
	int		 initfd, rc = -1;

	if ((initfd = node_pidfd(lab, k, &init)) == -1) {
		xasprintf(cause, "node %u died while mosd started", k);
		return -1;
	}
	close(initfd);
	pfd.fd = -1;
	if (lab_pid_read(lab, k, "mosd.pid", &pid) == 0)
		pfd.fd = pidfd_open(pid, 0);
	pfd.events = POLLIN;
	/* Look from inside the node: /run is the node's own. */
	xasprintf(&sock, "/proc/%d/root%s", (int)init, lab->sockpath);
	for (;;) {
		if (stat(sock, &st) == 0 && S_ISSOCK(st.st_mode)) {
			rc = 0;
			break;
		}
		if (pfd.fd == -1 || poll(&pfd, 1, 0) == 1) {
			tail = mosd_log_tail(lab, k);
			xasprintf(cause, "mosd on node %u exited at start: %s",
			    k, tail);
			free(tail);
			lab_pid_remove(lab, k, "mosd.pid");
			break;
		}
		if (now_ms() >= end) {
			xasprintf(cause, "mosd on node %u made no socket %s "
			    "within %d ms", k, lab->sockpath, LAB_WAIT_MS);
			break;
		}
		sleep_ms(10);
	}
	free(sock);
	if (pfd.fd != -1)
		close(pfd.fd);
	return rc;
}

/* Is argument arg among the NUL-separated ones of /proc/pid/cmdline? */
static int
mosd_has_arg(pid_t pid, const char *arg)
{
	char	path[64], buf[4096], *p;
	int	fd;
	ssize_t	n;

	snprintf(path, sizeof path, "/proc/%d/cmdline", (int)pid);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1)
		return 0;
	n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	for (p = buf; p < buf + n; p += strlen(p) + 1)
		if (strcmp(p, arg) == 0)
			return 1;
	return 0;
}

/*
 * A pidfd for node K's mosd if it runs, else -1: the recorded pid must be
 * a process of node K's PID namespace running with this lab's cluster.conf.
 */
int
mosd_pidfd(struct lab *lab, unsigned k, pid_t *pidp)
{
	char		 path[64], initpath[64];
	pid_t		 pid, init;
	int		 fd, initfd;

	if ((initfd = node_pidfd(lab, k, &init)) == -1)
		return -1;
	close(initfd);
	if (lab_pid_read(lab, k, "mosd.pid", &pid) == -1)
		return -1;
	if ((fd = pidfd_open(pid, 0)) == -1)
		return -1;
	snprintf(path, sizeof path, "/proc/%d/ns/pid", (int)pid);
	snprintf(initpath, sizeof initpath, "/proc/%d/ns/pid", (int)init);
	/* Still alive after the checks: they were about this process. */
	if (!lab_same_file(path, initpath) || !mosd_has_arg(pid, lab->conf) ||
	    pidfd_send_signal(fd, 0, NULL, 0) == -1) {
		close(fd);
		return -1;
	}
	if (pidp != NULL)
		*pidp = pid;
	return fd;
}

/* SIGTERM node K's mosd and wait for it to go; SIGKILL it if it lingers. */
int
mosd_stop(struct lab *lab, unsigned k, char **cause)
{
	int	fd, rc = 0;

	if ((fd = mosd_pidfd(lab, k, NULL)) == -1)
		return 0;
	pidfd_send_signal(fd, SIGTERM, NULL, 0);
	if (lab_pidfd_wait(fd, LAB_WAIT_MS) == -1) {
		fprintf(stderr, "moslab: mosd on node %u ignored SIGTERM for "
		    "%d ms: killing it\n", k, LAB_WAIT_MS);
		pidfd_send_signal(fd, SIGKILL, NULL, 0);
		if (lab_pidfd_wait(fd, MOSD_KILL_MS) == -1) {
			xasprintf(cause, "mosd on node %u does not die", k);
			rc = -1;
		}
	}
	close(fd);
	if (rc == 0)
		lab_pid_remove(lab, k, "mosd.pid");
	return rc;
}

/*
 * Wait up to ms for every node whose mosd runs to see every other such
 * node up (moslab-ready.c asks them); on timeout *cause names the first
 * node that does not see another.
 */
int
mosd_wait_cluster(struct lab *lab, unsigned ms, char **cause)
{
	unsigned	 want[LAB_NODES_MAX], k;
	uint64_t	 end = now_ms() + ms;
	char		*why = NULL;
	size_t		 n = 0, i;
	int		 fd;

	for (k = 1; k <= lab->nnodes; k++) {
		if ((fd = mosd_pidfd(lab, k, NULL)) == -1)
			continue;
		close(fd);
		want[n++] = k;
	}
	for (;;) {
		for (i = 0; i < n; i++) {
			free(why);
			why = NULL;
			if ((fd = mosd_pidfd(lab, want[i], NULL)) == -1) {
				why = mosd_log_tail(lab, want[i]);
				xasprintf(cause, "mosd on node %u exited: %s",
				    want[i], why);
				free(why);
				return -1;
			}
			close(fd);
			if (ready_node(lab, want[i], want, n, &why) == -1)
				break;
		}
		if (i == n)
			return 0;
		if (now_ms() >= end)
			break;
		sleep_ms(MOSD_POLL_MS);
	}
	xasprintf(cause, "the lab is not ready after %u ms: %s", ms, why);
	free(why);
	return -1;
}

static int
cmd_start_exec(struct lab *lab, int argc, char **argv)
{
	char		*cause;
	uint64_t	 wait_s = LAB_READY_MS / 1000;
	pid_t		 pid;
	unsigned	 k;
	int		 fd, rc;

	if ((rc = lab_node_arg(lab, argv[1], &k)) != 0)
		return rc;
	if (argc == 4 && strcmp(argv[2], "--wait") == 0) {
		if (parse_uint(argv[3], 0, 3600, &wait_s) == -1) {
			fprintf(stderr, "moslab: --wait: expected seconds from "
			    "0 to 3600, found '%s'\n", argv[3]);
			return 2;
		}
	} else if (argc != 2) {
		lab_usage_cmd(&cmd_start);
		return 2;
	}
	if ((fd = mosd_pidfd(lab, k, &pid)) != -1) {
		close(fd);
		fprintf(stderr, "moslab: mosd on node %u is already running "
		    "(pid %d)\n", k, (int)pid);
		return 0;
	}
	if (mosd_check(lab, &cause) == -1)
		return lab_fail(cause);
	if ((fd = node_pidfd(lab, k, NULL)) != -1)
		close(fd);
	else {
		/* A dead node reboots: same address and cgroup, all else new. */
		if (node_kill(lab, k, &cause) == -1 ||
		    node_boot(lab, k, &cause) == -1)
			return lab_fail(cause);
	}
	if (mosd_spawn(lab, k, &cause) == -1 ||
	    mosd_wait_ready(lab, k, &cause) == -1 ||
	    (wait_s > 0 && mosd_wait_cluster(lab, wait_s * 1000,
	    &cause) == -1))
		return lab_fail(cause);
	return 0;
}

static int
cmd_stop_exec(struct lab *lab, int argc, char **argv)
{
	char		*cause;
	unsigned	 k;
	int		 fd, rc;

	if ((rc = lab_node_arg(lab, argv[1], &k)) != 0)
		return rc;
	if ((fd = node_pidfd(lab, k, NULL)) == -1) {
		fprintf(stderr, "moslab: node %u is dead (bring it back with "
		    "'moslab start %u')\n", k, k);
		return 1;
	}
	close(fd);
	if ((fd = mosd_pidfd(lab, k, NULL)) == -1) {
		fprintf(stderr, "moslab: mosd on node %u is not running\n", k);
		return 0;
	}
	close(fd);
	if (mosd_stop(lab, k, &cause) == -1)
		return lab_fail(cause);
	return 0;
}

const struct lab_cmd cmd_start = {
	.name = "start",
	.args = "K [--wait S]",
	.help = "start node K's mosd, rebooting node K first if it is dead; "
	    "return once\n\tit and the other running nodes see each other up "
	    "(at most S seconds,\n\tdefault 30; 0: do not wait)",
	.argc_min = 1,
	.argc_max = 3,
	.flags = CMD_LOCK | CMD_LAB,
	.exec = cmd_start_exec,
};

const struct lab_cmd cmd_stop = {
	.name = "stop",
	.args = "K",
	.help = "stop node K's mosd",
	.argc_min = 1,
	.argc_max = 1,
	.flags = CMD_LOCK | CMD_LAB,
	.exec = cmd_stop_exec,
};
