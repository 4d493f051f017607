/*
 * Threads born and ended in a held task, and the task killed: a clone3
 * injected into the lead thread makes a thread (with the id the caller
 * chose, where it may choose), an exit injected into a thread ends it
 * alone, and SIGKILL ends them all, each reaped as the kernel wants it.
 */
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include <linux/ptrace.h>
#include <linux/sched.h>

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "lib/osm.h"
#include "internal.h"

#define ROBUST_HEAD_LEN	24	/* struct robust_list_head */

/* The first stop of a thread a clone made: an event stop or SIGSTOP. */
static int
clone_first_stop(struct mig_task *t, struct mig_thread *th, char **cause)
{
	int	status;

	for (;;) {
		if (task_wait(t, th, &status, cause) == -1)
			return -1;
		if ((status >> 16) == PTRACE_EVENT_STOP ||
		    ((status >> 16) == 0 && WSTOPSIG(status) == SIGSTOP))
			return 0;
		if ((status >> 16) == 0 && task_steal(t, th, cause) == -1)
			return -1;
		if (ptrace(PTRACE_CONT, th->tid, 0, 0) == -1) {
			xasprintf(cause, "PTRACE_CONT %d: %s", th->tid,
			    strerror(errno));
			return -1;
		}
	}
}

/*
 * A new thread in the held process, made by a clone3 injected into its
 * lead thread: with id vtid in the process's PID namespace (0: the
 * kernel's choice). clone3 takes no function: the thread would start on
 * the lead's registers right after the syscall instruction, but it is
 * traced from its birth (PTRACE_O_TRACECLONE) and stops before its first
 * instruction, for us to give it what it is to run with. The scratch
 * area must be mapped.
 */
int
clone_new(struct mig_task *t, pid_t vtid, struct mig_thread **out,
    char **cause)
{
	struct clone_args	 ca;
	struct mig_thread	*th;
	uint64_t		 at = t->scratch;
	long			 rv;
	int			 rc;

	if (t->scratch == 0 || t->scratch_len < sizeof ca + sizeof vtid) {
		xasprintf(cause, "no scratch area for clone3");
		return -1;
	}
	memset(&ca, 0, sizeof ca);
	ca.flags = CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND |
	    CLONE_THREAD | CLONE_SYSVSEM;
	if (vtid != 0) {
		ca.set_tid = at + sizeof ca;
		ca.set_tid_size = 1;
	}
	if (task_write(t, at, &ca, sizeof ca, cause) == -1 ||
	    task_write(t, at + sizeof ca, &vtid, sizeof vtid, cause) == -1 ||
	    task_options(t, t->lead, PTRACE_O_TRACECLONE, cause) == -1)
		return -1;
	t->cloned = 0;
	rc = task_syscall(t, t->lead, &rv, SYS_clone3, (sysargs){ at,
	    sizeof ca });
	if (task_options(t, t->lead, 0, rc == -1 ? NULL : cause) == -1 &&
	    rc != -1)
		return -1;
	if (rc == -1) {
		*cause = task_cause(t);
		return -1;
	}
	if (rv == -EPERM && vtid != 0)
		xasprintf(cause, "cannot give a new thread of process %d the "
		    "id %d: choosing thread ids (clone3's set_tid) takes "
		    "CAP_SYS_ADMIN in the user namespace that owns the "
		    "process's PID namespace", t->vtgid, vtid);
	else if (rv == -EEXIST)
		xasprintf(cause, "cannot give a new thread of process %d the "
		    "id %d: that id is taken", t->vtgid, vtid);
	else if (rv < 0)
		xasprintf(cause, "clone3 in process %d: %s", t->vtgid,
		    strerror(-rv));
	else if (t->cloned <= 0)
		xasprintf(cause, "clone3 in process %d: no clone event",
		    t->vtgid);
	if (rv < 0 || t->cloned <= 0)
		return -1;
	th = task_thread_add(t, t->cloned);
	th->vtid = rv;
	if (clone_first_stop(t, th, cause) == -1 ||
	    task_options(t, th, 0, cause) == -1 ||
	    task_getregs(th, &th->regs, cause) == -1)
		return -1;
	/*
	 * Born inside our call, which blocks every signal (task_mask): its
	 * mask is the lead's own, as a clone of the lead's would have.
	 */
	if (ptrace(PTRACE_SETSIGMASK, th->tid, sizeof t->lead->mask,
	    &t->lead->mask) == -1) {
		xasprintf(cause, "PTRACE_SETSIGMASK %d: %s", th->tid,
		    strerror(errno));
		return -1;
	}
	*out = th;
	return 0;
}

/* Signals an ending thread had taken go to another, for the process. */
static void
clone_hand_over(struct mig_task *t, struct mig_thread *th)
{
	struct mig_thread	*to;
	size_t			 i;

	for (i = 0, to = NULL; i < t->nth && to == NULL; i++) {
		if (t->th[i] != th)
			to = t->th[i];
	}
	if (to == NULL || th->nstolen == 0)
		return;
	to->stolen = xreallocarray(to->stolen, to->nstolen + th->nstolen,
	    sizeof *to->stolen);
	memcpy(to->stolen + to->nstolen, th->stolen,
	    th->nstolen * sizeof *th->stolen);
	to->nstolen += th->nstolen;
	th->nstolen = 0;
}

/*
 * End one thread of the held process (exit, not exit_group), nothing of
 * it reaching the memory after it: neither the kernel's write at its
 * clear-child-tid address nor a walk of its robust list. A thread's end
 * is ours to reap; the main thread's is not reported until the process
 * ends, so its exit is seen at its PTRACE_EVENT_EXIT stop.
 */
int
clone_end(struct mig_task *t, struct mig_thread *th, char **cause)
{
	struct user_regs_struct	 r;
	char			*why = NULL;
	int			 status, leader = th->tid == t->tgid;

	if (task_tsys_ok(t, th, "set_tid_address", SYS_set_tid_address,
	    (sysargs){ 0 }) == -1 ||
	    task_tsys_ok(t, th, "set_robust_list", SYS_set_robust_list,
	    (sysargs){ 0, ROBUST_HEAD_LEN }) == -1) {
		*cause = task_cause(t);
		return -1;
	}
	if (leader && task_options(t, th, PTRACE_O_TRACEEXIT, cause) == -1)
		return -1;
	r = th->regs;
	r.rip = t->sysc;
	r.rax = SYS_exit;
	r.orig_rax = -1;
	r.rdi = 0;
	if (task_setregs(th, &r, cause) == -1)
		return -1;
	for (;;) {
		if (ptrace(PTRACE_CONT, th->tid, 0, 0) == -1) {
			xasprintf(cause, "PTRACE_CONT %d: %s", th->tid,
			    strerror(errno));
			return -1;
		}
		if (task_wait(t, th, &status, &why) == -1) {
			free(why);
			if (!th->dead || leader)
				return -1;
			break;		/* a thread gone, as it should */
		}
		if (leader && (status >> 16) == PTRACE_EVENT_EXIT) {
			/* Let it go: a zombie until the process ends. */
			ptrace(PTRACE_CONT, th->tid, 0, 0);
			break;
		}
		if ((status >> 16) == 0 && WSTOPSIG(status) != SIGSTOP &&
		    task_steal(t, th, cause) == -1)
			return -1;
	}
	clone_hand_over(t, th);
	task_thread_drop(t, th);
	return 0;
}

/* Kill the process and wait until every thread of it is gone. */
void
clone_kill(struct mig_task *t)
{
	struct mig_thread	*th;
	char			*cause = NULL;
	size_t			 i;
	int			 status, leader_in = 0;

	if (t->dead)
		return;
	kill(t->tgid, SIGKILL);
	/* The others first: the process's end waits for theirs. */
	for (i = t->nth; i > 0; i--) {
		th = t->th[i - 1];
		if (th->tid == t->tgid) {
			leader_in = 1;
			continue;
		}
		while (!th->dead && task_wait(t, th, &status, &cause) == 0)
			ptrace(PTRACE_CONT, th->tid, 0, 0);
		free(cause);
		cause = NULL;
	}
	if (leader_in) {
		th = t->th[0];
		while (!th->dead && task_wait(t, th, &status, &cause) == 0)
			ptrace(PTRACE_CONT, th->tid, 0, 0);
		free(cause);
	} else if (t->spawned) {
		/* Our child, its main thread ended earlier. */
		while (waitpid(t->tgid, &status, __WALL) == -1 &&
		    errno == EINTR)
			;
	}
	t->dead = 1;
}
