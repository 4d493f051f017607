/*
 * Putting R's filter on R. A seccomp filter can only be installed by the
 * task itself, so the guest agent injects the two calls into R while it
 * holds R stopped under ptrace (migrate/'s struct mig_task, after the
 * restore): prctl(PR_SET_NO_NEW_PRIVS, 1), then seccomp(SET_MODE_FILTER,
 * FLAG_NEW_LISTENER, &prog), and takes the listener out of R with
 * pidfd_getfd.
 *
 * From then on, any call injected into R goes through its filter: a local
 * one runs (the scratch area is unmapped with munmap), any other would
 * wait for an answer on the listener while we wait for R, forever. So the
 * signals our stops took from R are queued back first (mig_release would
 * inject rt_tgsigqueueinfo, a forwarded call), and those taken during the
 * two calls are sent from here (with tgkill: their siginfo is lost). And
 * the listener R got stays open in R: closing it would be a forwarded call.
 * It is out of R's reach all the same: no local call takes a file
 * descriptor (mmap is local only with MAP_ANONYMOUS, which ignores it),
 * every other call is forwarded home or brings R home. Whatever dumps R on
 * its way home must leave R's own descriptors alone: the process's are
 * those of P.
 */
#include <sys/prctl.h>
#include <sys/syscall.h>

#include <errno.h>
#include <linux/seccomp.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "remote.h"
#include "migrate/migrate.h"

/* Give back the signals t's stops took, by injection: before the filter. */
static int
install_requeue(struct mig_task *t, char **cause)
{
	size_t	i;

	for (i = 0; i < t->nstolen; i++) {
		if (sig_requeue(t, &t->stolen[i], 0, cause) != 0)
			return -1;
	}
	t->nstolen = 0;
	return 0;
}

/*
 * Install the filter in the stopped task t and return our end of its
 * listener, or -1. t's scratch area is used if it has one big enough;
 * otherwise a page is mapped for the time of the calls.
 */
int
install_filter(struct mig_task *t, char **cause)
{
	struct sock_fprog	 prog;
	uint64_t		 saved = t->scratch, hdr[2];
	size_t			 saved_len = t->scratch_len, need;
	char			*ignored = NULL;
	size_t			 i;
	long			 rfd;
	int			 ours = 0, pidfd = -1, fd = -1;

	if (filter_build(&prog, cause) != 0)
		return -1;
	need = sizeof hdr + prog.len * sizeof *prog.filter;
	if (saved == 0 || saved_len < need) {
		if (task_scratch(t, 0, (need + MIG_PAGE - 1) & ~(MIG_PAGE - 1),
		    cause) != 0)
			goto out;
		ours = 1;
	}
	if (install_requeue(t, cause) != 0)
		goto out;
	/* struct sock_fprog: a short count, padding, the pointer */
	hdr[0] = prog.len;
	hdr[1] = t->scratch + sizeof hdr;
	if (task_write(t, t->scratch, hdr, sizeof hdr, cause) != 0 ||
	    task_write(t, t->scratch + sizeof hdr, prog.filter,
	    prog.len * sizeof *prog.filter, cause) != 0)
		goto out;
	if (task_sys_ok(t, "PR_SET_NO_NEW_PRIVS", SYS_prctl,
	    (sysargs){ PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0 }) != 0 ||
	    task_sys_ok(t, "seccomp", SYS_seccomp,
	    (sysargs){ SECCOMP_SET_MODE_FILTER,
	    SECCOMP_FILTER_FLAG_NEW_LISTENER, t->scratch }) != 0) {
		*cause = task_cause(t);
		goto out;
	}
	rfd = t->last_rv;
	for (i = 0; i < t->nstolen; i++) {
		syscall(SYS_tgkill, mig_pid(t), mig_pid(t),
		    t->stolen[i].si_signo);
	}
	t->nstolen = 0;

	if ((pidfd = syscall(SYS_pidfd_open, mig_pid(t), 0)) == -1) {
		xasprintf(cause, "pidfd_open %ld: %s", (long)mig_pid(t),
		    strerror(errno));
		goto out;
	}
	if ((fd = syscall(SYS_pidfd_getfd, pidfd, rfd, 0)) == -1)
		xasprintf(cause, "pidfd_getfd %ld of process %ld: %s", rfd,
		    (long)mig_pid(t), strerror(errno));

out:
	if (ours) {
		/* munmap is local: it runs under the filter too */
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
	filter_free(&prog);
	return fd;
}
