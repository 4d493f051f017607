/*
 * Putting a seccomp filter on a held task, with a listener for its
 * notifications (a guest's R, under the filter libremote builds). A filter
 * can only be installed by the task itself, so the two calls are injected:
 * prctl(PR_SET_NO_NEW_PRIVS, 1), then seccomp(SET_MODE_FILTER,
 * FLAG_NEW_LISTENER, &prog); the listener is taken out of the task with
 * pidfd_getfd.
 *
 * From then on, any call injected into the task goes through its filter:
 * one the filter lets run does (the filter must let munmap run: the
 * scratch area is unmapped after), any other would wait for an answer on the listener while we wait for the
 * task, forever. So the signals our stops took are queued back first
 * (mig_release would inject rt_tgsigqueueinfo, which such a filter may not
 * let run), and those taken during the two calls are sent from here (with
 * tgkill: their siginfo is lost). With more than one thread the filter is
 * put on every one (SECCOMP_FILTER_FLAG_TSYNC). The listener the task got
 * is closed in it, with a call that the filter stops for us and that we
 * let through (SECCOMP_USER_NOTIF_FLAG_CONTINUE): the task needs no end
 * of its own filter, and a guest's R is to hold nothing it does not need.
 */
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/user.h>

#include <linux/filter.h>
#include <linux/ptrace.h>
#include <linux/seccomp.h>

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/osm.h"
#include "internal.h"

#define SECCOMP_NOTIF_WAIT_MS	5000	/* for our own call's notification */

/*
 * Run close(rfd) in the stopped task t under its new filter, which stops
 * it for listener: its notification, once we see it is this call of this
 * task, is answered with "let it run".
 */
static int
seccomp_close_call(struct mig_task *t, int listener, long rfd, char **cause)
{
	struct seccomp_notif		req;
	struct seccomp_notif_resp	resp;
	struct pollfd			pfd = { listener, POLLIN, 0 };
	struct user_regs_struct		r;
	struct __ptrace_syscall_info	info;

	/* to the entry stop, then on into the filter, which waits on us */
	if (task_aim(t, t->lead, SYS_close, (sysargs){ rfd }, cause) == -1 ||
	    ptrace(PTRACE_SYSCALL, t->pid, 0, 0) == -1 ||
	    task_await(t, t->lead, cause) == -1 ||
	    ptrace(PTRACE_SYSCALL, t->pid, 0, 0) == -1) {
		if (*cause == NULL)
			xasprintf(cause, "ptrace %d: %s", t->pid,
			    strerror(errno));
		return -1;
	}
	memset(&req, 0, sizeof req);
	if (poll(&pfd, 1, SECCOMP_NOTIF_WAIT_MS) != 1 ||
	    ioctl(listener, SECCOMP_IOCTL_NOTIF_RECV, &req) == -1) {
		xasprintf(cause, "closing the listener in process %d: no "
		    "notification (%s)", t->pid, strerror(errno));
		return -1;
	}
	memset(&resp, 0, sizeof resp);
	resp.id = req.id;
	if (req.pid != (uint32_t)t->pid || req.data.nr != SYS_close ||
	    req.data.args[0] != (uint64_t)rfd) {
		/* not ours: refuse it, and give up on the task */
		resp.error = -EPERM;
		ioctl(listener, SECCOMP_IOCTL_NOTIF_SEND, &resp);
		xasprintf(cause, "closing the listener in process %d: "
		    "notification of call %d of %u", t->pid, req.data.nr,
		    req.pid);
		return -1;
	}
	resp.flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
	if (ioctl(listener, SECCOMP_IOCTL_NOTIF_SEND, &resp) == -1 ||
	    task_await(t, t->lead, cause) == -1 ||
	    ptrace(PTRACE_GET_SYSCALL_INFO, t->pid, sizeof info, &info) == -1 ||
	    info.op != PTRACE_SYSCALL_INFO_EXIT) {
		if (*cause == NULL)
			xasprintf(cause, "closing the listener in process %d: "
			    "%s", t->pid, strerror(errno));
		return -1;
	}
	if (ptrace(PTRACE_GETREGS, t->pid, 0, &r) == -1 || r.rax != 0) {
		xasprintf(cause, "closing the listener in process %d failed",
		    t->pid);
		return -1;
	}
	return 0;
}

/* The same, every signal blocked meanwhile, as in any call of ours. */
static int
seccomp_close(struct mig_task *t, int listener, long rfd, char **cause)
{
	char	*ignored = NULL;
	int	 rc;

	if (task_mask(t->lead, cause) == -1)
		return -1;
	rc = seccomp_close_call(t, listener, rfd, cause);
	if (task_unmask(t->lead, rc == -1 ? &ignored : cause) == -1 &&
	    rc == 0)
		rc = -1;
	free(ignored);
	return rc;
}

/*
 * Install prog in the stopped task t and return our end of its listener,
 * or -1. t's scratch area is used if it has one big enough; otherwise a
 * page is mapped for the time of the calls.
 */
int
mig_seccomp(struct mig_task *t, const struct sock_fprog *prog, char **cause)
{
	uint64_t	 saved = t->scratch, hdr[2];
	size_t		 saved_len = t->scratch_len, need;
	struct mig_thread *th;
	unsigned long	 sflags = SECCOMP_FILTER_FLAG_NEW_LISTENER;
	char		*ignored = NULL;
	size_t		 i, j;
	long		 rfd;
	int		 ours = 0, filtered = 0, pidfd = -1, fd = -1;

	need = sizeof hdr + prog->len * sizeof *prog->filter;
	if (saved == 0 || saved_len < need) {
		if (task_scratch(t, 0, (need + MIG_PAGE - 1) & ~(MIG_PAGE - 1),
		    cause) != 0)
			goto out;
		ours = 1;
	}
	/* by injection: before the filter, which may stop the call */
	if (task_requeue_stolen(t, cause) != 0)
		goto out;
	/* struct sock_fprog: a short count, padding, the pointer */
	hdr[0] = prog->len;
	hdr[1] = t->scratch + sizeof hdr;
	if (task_write(t, t->scratch, hdr, sizeof hdr, cause) != 0 ||
	    task_write(t, t->scratch + sizeof hdr, prog->filter,
	    prog->len * sizeof *prog->filter, cause) != 0)
		goto out;
	/* Every thread under the filter: TSYNC, which gives them NNP too. */
	if (t->nth > 1)
		sflags |= SECCOMP_FILTER_FLAG_TSYNC |
		    SECCOMP_FILTER_FLAG_TSYNC_ESRCH;
	if (task_sys_ok(t, "PR_SET_NO_NEW_PRIVS", SYS_prctl,
	    (sysargs){ PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0 }) != 0 ||
	    task_sys_ok(t, "seccomp", SYS_seccomp,
	    (sysargs){ SECCOMP_SET_MODE_FILTER, sflags, t->scratch }) != 0) {
		*cause = task_cause(t);
		goto out;
	}
	rfd = t->last_rv;
	filtered = 1;

	if ((pidfd = syscall(SYS_pidfd_open, t->tgid, 0)) == -1) {
		xasprintf(cause, "pidfd_open %ld: %s", (long)t->tgid,
		    strerror(errno));
		goto out;
	}
	if ((fd = syscall(SYS_pidfd_getfd, pidfd, rfd, 0)) == -1) {
		xasprintf(cause, "pidfd_getfd %ld of process %ld: %s", rfd,
		    (long)t->tgid, strerror(errno));
		goto out;
	}
	if (seccomp_close(t, fd, rfd, cause) == -1) {
		close(fd);
		fd = -1;
	}

out:
	/* The signals our stops took since the filter: sent back. */
	for (i = 0; filtered && i < t->nth; i++) {
		th = t->th[i];
		for (j = 0; j < th->nstolen; j++)
			syscall(SYS_tgkill, t->tgid, th->tid,
			    th->stolen[j].si_signo);
		th->nstolen = 0;
	}
	if (ours) {
		/* under the filter now: munmap must be one it lets run */
		if (task_unscratch(t, fd == -1 ? &ignored : cause) != 0 &&
		    fd != -1) {
			close(fd);
			fd = -1;
		}
		t->scratch = saved;
		t->scratch_len = saved_len;
	}
	free(ignored);
	if (pidfd != -1)
		close(pidfd);
	return fd;
}
