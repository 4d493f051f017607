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
 * put on every one (SECCOMP_FILTER_FLAG_TSYNC). The listener the task got stays open in
 * it: closing it would be a call the filter may stop. Whatever later dumps
 * the task must leave that descriptor alone.
 */
#include <sys/prctl.h>
#include <sys/syscall.h>

#include <linux/filter.h>
#include <linux/seccomp.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/osm.h"
#include "internal.h"

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
	int		 ours = 0, pidfd = -1, fd = -1;

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
	for (i = 0; i < t->nth; i++) {
		th = t->th[i];
		for (j = 0; j < th->nstolen; j++)
			syscall(SYS_tgkill, t->tgid, th->tid,
			    th->stolen[j].si_signo);
		th->nstolen = 0;
	}

	if ((pidfd = syscall(SYS_pidfd_open, t->tgid, 0)) == -1) {
		xasprintf(cause, "pidfd_open %ld: %s", (long)t->tgid,
		    strerror(errno));
		goto out;
	}
	if ((fd = syscall(SYS_pidfd_getfd, pidfd, rfd, 0)) == -1)
		xasprintf(cause, "pidfd_getfd %ld of process %ld: %s", rfd,
		    (long)t->tgid, strerror(errno));

out:
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
