/*
 * loopback: run a program under R's filter with this process as both its
 * guest agent and its home. The program stops at its exec under our
 * trace; we put the filter on it as the guest agent does on R
 * (libremote's filter_build, put on with migrate/'s mig_seccomp), let it
 * go, serve its listener with libremote/remote.c, and execute each
 * forwarded call here, in our own context, through home.c (the deputy
 * injects it into P instead). The program's files, pipes and sockets are
 * therefore ours.
 *
 * A call that must go home is reported on stderr as "loopback: HOME name:
 * why", the program is killed and we exit 3. Otherwise we exit as the
 * program did.
 *
 * usage: loopback [-sw] [-b ns] program [arg ...]
 *	-b ns	CPU time the program (its one thread) used before, user
 *		time, in ns
 *	-s	statistics and time spent per forwarded call, on stderr
 *	-w	plain wakeups: no SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP
 */
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include <errno.h>
#include <sched.h>
#include <fcntl.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "libremote/internal.h"
#include "migrate/migrate.h"

#define SCRATCH_SIZE	(RMT_CALL_MAX + (1U << 20))
#ifndef SECCOMP_IOCTL_NOTIF_SET_FLAGS
#define SECCOMP_IOCTL_NOTIF_SET_FLAGS	SECCOMP_IOW(4, __u64)
#endif
#define HIGH_FD		200

struct timing {
	uint64_t	 calls;
	uint64_t	 guest_ns;	/* receive (describe, pack) and reply */
	uint64_t	 home_ns;	/* check, layout, reply */
	uint64_t	 sys_ns;	/* the call itself */
};

static uint64_t
now_ns(void)
{
	struct timespec	ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

static void
usage(void)
{
	fprintf(stderr, "usage: loopback [-sw] [-b ns] program [arg ...]\n");
	exit(2);
}

static int
high_fd(int fd)
{
	int	nfd;

	if ((nfd = fcntl(fd, F_DUPFD_CLOEXEC, HIGH_FD)) == -1)
		fatal("F_DUPFD_CLOEXEC");
	close(fd);
	return nfd;
}

/* The program, stopped at its exec under our trace, gets R's filter. */
static int
confine(pid_t pid, char **cause)
{
	struct sock_fprog prog;
	struct mig_task	*t;
	int		 status, fd;

	if (waitpid(pid, &status, 0) != pid || !WIFSTOPPED(status)) {
		xasprintf(cause, "the program did not stop at its exec");
		return -1;
	}
	if ((t = mig_adopt(pid, cause)) == NULL)
		return -1;
	if (filter_build(&prog, cause) == -1) {
		mig_kill(t);
		return -1;
	}
	fd = mig_seccomp(t, &prog, cause);
	filter_free(&prog);
	if (fd == -1) {
		mig_kill(t);
		return -1;
	}
	if (mig_release(t, cause) != 0) {
		close(fd);
		return -1;
	}
	return high_fd(fd);
}

/*
 * Execute a forwarded call here, as the deputy would in P, and again as
 * long as the guest asks (a call interrupted here, restarted).
 */
static int
serve(struct remote *g, struct remote_event *ev, uint8_t *scratch,
    struct timing *t, char **cause)
{
	struct home_call	*hc;
	uint8_t			*reply;
	size_t			 len;
	uint64_t		 t0, t1, t2;
	long			 ret;
	int			 rv;

again:
	t0 = now_ns();
	if ((hc = home_check(ev->msg, ev->len, getpid(), cause)) == NULL)
		return -1;
	if (home_layout(hc, (uintptr_t)scratch, SCRATCH_SIZE, cause) != 0) {
		home_free(hc);
		return -1;
	}
	memcpy(scratch, hc->image, hc->image_len);
	t1 = now_ns();
	ret = syscall(hc->nr, hc->args[0], hc->args[1], hc->args[2],
	    hc->args[3], hc->args[4], hc->args[5]);
	if (ret == -1)
		ret = -errno;
	t2 = now_ns();
	rv = home_reply(hc, ret, scratch, home_readback(hc, ret), &reply,
	    &len, cause);
	home_free(hc);
	if (rv != 0)
		return -1;
	t->home_ns += now_ns() - t2 + (t1 - t0);
	t->sys_ns += t2 - t1;
	t0 = now_ns();
	rv = remote_reply(g, reply, len, -1, ev, cause);
	t->guest_ns += now_ns() - t0;
	t->calls++;
	free(reply);
	if (rv == 0 && ev->kind == REMOTE_FORWARD)
		goto again;
	return rv;
}

static int
wait_child(pid_t pid)
{
	int	status;

	while (waitpid(pid, &status, 0) == -1) {
		if (errno != EINTR)
			fatal("waitpid");
	}
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	fprintf(stderr, "loopback: program killed by signal %d\n",
	    WTERMSIG(status));
	return 128 + WTERMSIG(status);
}

int
main(int argc, char **argv)
{
	struct remote		*g;
	struct remote_event	 ev;
	struct emulate_base	 base = { 0 };
	struct timing		 t = { 0 };
	struct pollfd		 pfd[2];
	uint8_t			*scratch;
	char			*cause, env[32];
	uint64_t		 t0, recv_ns = 0;
	pid_t			 pid;
	int			 c, stats = 0, plain = 0, pidfd, lfd, i;

	while ((c = getopt(argc, argv, "+b:sw")) != -1) {
		switch (c) {
		case 'b':
			/* as the guest takes one not told its usage's */
			base.utime_ns = strtoull(optarg, NULL, 10);
			base.usage_user_ns = base.utime_ns;
			break;
		case 's':
			stats = 1;
			break;
		case 'w':
			plain = 1;
			break;
		default:
			usage();
		}
	}
	argc -= optind;
	argv += optind;
	if (argc == 0)
		usage();
	log_init(1, "loopback");

	scratch = mmap(NULL, SCRATCH_SIZE, PROT_READ | PROT_WRITE,
	    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (scratch == MAP_FAILED)
		fatal("mmap");
	snprintf(env, sizeof env, "%ld", (long)getpid());
	setenv("LOOPBACK_HOME_PID", env, 1);
	fflush(NULL);

	if ((pid = fork()) == -1)
		fatal("fork");
	if (pid == 0) {
		if (ptrace(PTRACE_TRACEME, 0, 0, 0) == 0)
			execv(argv[0], argv);
		_exit(127);
	}
	if ((pidfd = syscall(SYS_pidfd_open, pid, 0)) == -1)
		fatal("pidfd_open");
	pidfd = high_fd(pidfd);
	if ((lfd = confine(pid, &cause)) == -1)
		fatalx("%s", cause);
	if ((g = remote_new(lfd, pid, getpid(), &base, &cause)) == NULL)
		fatalx("%s", cause);
	/* its one thread's own time, as a guest has it from the image */
	remote_thread_cpu(g, pid, base.utime_ns);
	if (plain && g->sync_wakeup) {
		if (ioctl(lfd, SECCOMP_IOCTL_NOTIF_SET_FLAGS, 0UL) != 0)
			fatal("SECCOMP_IOCTL_NOTIF_SET_FLAGS");
		g->sync_wakeup = 0;
	}

	pfd[0].fd = lfd;
	pfd[0].events = POLLIN;
	pfd[1].fd = pidfd;
	pfd[1].events = POLLIN;
	for (;;) {
		if (poll(pfd, 2, -1) == -1) {
			if (errno == EINTR)
				continue;
			fatal("poll");
		}
		if (pfd[1].revents != 0 || (pfd[0].revents & POLLHUP))
			break;
		if (!(pfd[0].revents & POLLIN))
			continue;
		t0 = now_ns();
		if (remote_receive(g, &ev, &cause) != 0)
			fatalx("%s", cause);
		recv_ns += now_ns() - t0;
		if (ev.kind == REMOTE_FORWARD) {
			if (serve(g, &ev, scratch, &t, &cause) != 0)
				fatalx("%s", cause);
			continue;
		}
		if (ev.kind == REMOTE_MAP) {
			/* our descriptors are R's: it maps ours, as is */
			if (remote_map(g, ev.id, (int)ev.args[4],
			    (int)ev.args[4], &cause) == -1)
				fatalx("%s", cause);
			continue;
		}
		if (ev.kind == REMOTE_THREAD) {
			uint64_t	flags = 0;

			/* threads run as they are; a process goes home */
			if (ev.nr == SYS_exit || (remote_clone_flags(g, ev.tid,
			    ev.nr, ev.args, &flags) == 0 &&
			    (flags & CLONE_THREAD))) {
				if (remote_continue(g, ev.id, &cause) == -1)
					fatalx("%s", cause);
				continue;
			}
			ev.why = "new process";
		} else if (ev.kind != REMOTE_HOME)
			continue;
		fprintf(stderr, "loopback: HOME %s: %s\n", ev.name, ev.why);
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		remote_free(g);
		return 3;
	}
	i = wait_child(pid);
	if (stats) {
		fprintf(stderr, "loopback: %llu forwarded, %llu emulated, "
		    "%llu home, %llu gone, %llu restarted, %llu faults\n",
		    (unsigned long long)g->stats.forwarded,
		    (unsigned long long)g->stats.emulated,
		    (unsigned long long)g->stats.home,
		    (unsigned long long)g->stats.gone,
		    (unsigned long long)g->stats.restarted,
		    (unsigned long long)g->stats.faults);
		if (t.calls > 0)
			fprintf(stderr, "loopback: per forwarded call: guest "
			    "%.2f us, home %.2f us, system call %.2f us\n",
			    (recv_ns + t.guest_ns) / 1e3 / t.calls,
			    t.home_ns / 1e3 / t.calls,
			    t.sys_ns / 1e3 / t.calls);
	}
	remote_free(g);
	return i;
}
