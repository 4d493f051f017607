/*
 * What may be done to a held task between our requests, thread by
 * thread: calls run inside a thread, the registers it is to resume with,
 * code of ours started in it (the deputy's husk, agent/husk.c) and
 * interrupted, threads made and ended, the task's memory read and
 * written. A thread is named by its id as the process knows it; the calls
 * without a thread mean the main thread (or, once that has ended, the
 * first thread left).
 */
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "lib/osm.h"
#include "internal.h"

static struct mig_thread *
held_thread(struct mig_task *t, pid_t tid, char **cause)
{
	struct mig_thread	*th;

	if ((th = task_thread(t, tid)) == NULL) {
		xasprintf(cause, "process %d has no thread %d", t->vtgid, tid);
		return NULL;
	}
	return th;
}

/* The threads' ids, as the process knows them, main first; how many. */
size_t
mig_threads(const struct mig_task *t, pid_t *tids, size_t max)
{
	size_t	i;

	for (i = 0; i < t->nth && i < max; i++)
		tids[i] = t->th[i]->vtid;
	return t->nth;
}

/* Thread tid's id here (ptrace, waitpid, tgkill from us); -1: none. */
pid_t
mig_thread_here(const struct mig_task *t, pid_t tid)
{
	struct mig_thread	*th = task_thread(t, tid);

	return th != NULL ? th->tid : -1;
}

static int
held_call(struct mig_task *t, struct mig_thread *th, long *rv, long nr,
    const sysargs a, char **cause)
{
	if (task_syscall(t, th, rv, nr, a) == -1) {
		*cause = task_cause(t);
		return -1;
	}
	return 0;
}

static int
held_call_ok(struct mig_task *t, struct mig_thread *th, const char *what,
    long *rv, long nr, const sysargs a, char **cause)
{
	if (task_tsys_ok(t, th, what, nr, a) == -1) {
		*cause = task_cause(t);
		return -1;
	}
	if (rv != NULL)
		*rv = t->last_rv;
	return 0;
}

/* A call that must not block, run to its end; its value in *rv. */
int
mig_call(struct mig_task *t, long *rv, long nr, const sysargs a,
    char **cause)
{
	return held_call(t, t->lead, rv, nr, a, cause);
}

/* The same, for a call that must succeed: a failure is an error too. */
int
mig_call_ok(struct mig_task *t, const char *what, long *rv, long nr,
    const sysargs a, char **cause)
{
	return held_call_ok(t, t->lead, what, rv, nr, a, cause);
}

int
mig_thread_call(struct mig_task *t, pid_t tid, long *rv, long nr,
    const sysargs a, char **cause)
{
	struct mig_thread	*th;

	if ((th = held_thread(t, tid, cause)) == NULL)
		return -1;
	return held_call(t, th, rv, nr, a, cause);
}

int
mig_thread_call_ok(struct mig_task *t, pid_t tid, const char *what,
    long *rv, long nr, const sysargs a, char **cause)
{
	struct mig_thread	*th;

	if ((th = held_thread(t, tid, cause)) == NULL)
		return -1;
	return held_call_ok(t, th, what, rv, nr, a, cause);
}

static size_t
held_stolen(struct mig_thread *th, siginfo_t *out, size_t max)
{
	size_t	n = th->nstolen < max ? th->nstolen : max;

	if (n == 0)
		return 0;	/* th->stolen may be NULL */
	memcpy(out, th->stolen, n * sizeof *out);
	memmove(th->stolen, th->stolen + n, (th->nstolen - n) * sizeof *out);
	th->nstolen -= n;
	return n;
}

/* Signals our stops took from the task, now the caller's to deliver. */
size_t
mig_stolen(struct mig_task *t, siginfo_t *out, size_t max)
{
	return held_stolen(t->lead, out, max);
}

size_t
mig_thread_stolen(struct mig_task *t, pid_t tid, siginfo_t *out,
    size_t max)
{
	struct mig_thread	*th = task_thread(t, tid);

	return th != NULL ? held_stolen(th, out, max) : 0;
}

int
mig_thread_regs(struct mig_task *t, pid_t tid, struct user_regs_struct *r,
    char **cause)
{
	struct mig_thread	*th;

	if ((th = held_thread(t, tid, cause)) == NULL)
		return -1;
	*r = th->regs;
	return 0;
}

int
mig_thread_set_regs(struct mig_task *t, pid_t tid,
    const struct user_regs_struct *r, char **cause)
{
	struct mig_thread	*th;

	if ((th = held_thread(t, tid, cause)) == NULL)
		return -1;
	th->regs = *r;
	th->regs_dirty = 1;
	return 0;
}

int
mig_read(struct mig_task *t, uint64_t addr, void *buf, size_t len,
    char **cause)
{
	return task_read(t, addr, buf, len, cause);
}

int
mig_write(struct mig_task *t, uint64_t addr, const void *buf, size_t len,
    char **cause)
{
	return task_write(t, addr, buf, len, cause);
}

/*
 * Keep the task's threads and us on the CPU we run on while we inject
 * calls into it: each call is a stop and a resume, and the one of us that
 * waits for the other to run wakes it cheaply on its own CPU, dearly
 * (tens of microseconds in a VM) on another. Where we may not (the task's
 * cpuset has not our CPU), nothing changes.
 */
void
mig_pin(struct mig_task *t, struct mig_pin *p)
{
	struct mig_thread	*th;
	cpu_set_t		 one;
	size_t			 i;

	CPU_ZERO(&one);
	CPU_SET(sched_getcpu(), &one);
	p->pinned = sched_getaffinity(0, sizeof p->self, &p->self) == 0 &&
	    sched_getaffinity(t->pid, sizeof p->task, &p->task) == 0 &&
	    sched_setaffinity(t->pid, sizeof one, &one) == 0;
	if (!p->pinned)
		return;
	sched_setaffinity(0, sizeof one, &one);
	for (i = 0; i < t->nth; i++) {
		th = t->th[i];
		th->pinned = th == t->lead || (sched_getaffinity(th->tid,
		    sizeof th->affinity, &th->affinity) == 0 &&
		    sched_setaffinity(th->tid, sizeof one, &one) == 0);
		if (th == t->lead)
			th->affinity = p->task;
	}
}

/* Each thread back where it may run: threads made meanwhile, the lead's. */
void
mig_unpin(struct mig_task *t, struct mig_pin *p)
{
	struct mig_thread	*th;
	size_t			 i;

	if (!p->pinned)
		return;
	for (i = 0; i < t->nth && !t->dead; i++) {
		th = t->th[i];
		sched_setaffinity(th->tid, sizeof th->affinity, th->pinned ?
		    &th->affinity : &p->task);
		th->pinned = 0;
	}
	sched_setaffinity(0, sizeof p->self, &p->self);
	p->pinned = 0;
}

static int
held_jump(struct mig_task *t, struct mig_thread *th, uint64_t rip,
    uint64_t rdi, char **cause)
{
	struct user_regs_struct	r = th->regs;

	r.rip = rip;
	r.rdi = rdi;
	r.orig_rax = -1;
	r.rax = 0;
	if (task_setregs(th, &r, cause) == -1)
		return -1;
	th->regs_dirty = 1;
	if (ptrace(PTRACE_CONT, th->tid, 0, 0) == -1) {
		xasprintf(cause, "PTRACE_CONT %d: %s", th->tid,
		    strerror(errno));
		return -1;
	}
	th->running = 1;
	return 0;
}

/*
 * Let the held thread run code of ours from rip, with rdi as its
 * argument and its registers otherwise those it is to resume with, which
 * are put back before it is let go. It runs under our trace until
 * mig_interrupt; its stops are the caller's to wait for meanwhile.
 */
int
mig_jump(struct mig_task *t, uint64_t rip, uint64_t rdi, char **cause)
{
	return held_jump(t, t->lead, rip, rdi, cause);
}

int
mig_thread_jump(struct mig_task *t, pid_t tid, uint64_t rip, uint64_t rdi,
    char **cause)
{
	struct mig_thread	*th;

	if ((th = held_thread(t, tid, cause)) == NULL)
		return -1;
	return held_jump(t, th, rip, rdi, cause);
}

static int
held_interrupt(struct mig_task *t, struct mig_thread *th, char **cause)
{
	int	status;

	if (ptrace(PTRACE_INTERRUPT, th->tid, 0, 0) == -1) {
		xasprintf(cause, "PTRACE_INTERRUPT %d: %s", th->tid,
		    strerror(errno));
		return -1;
	}
	if (task_wait(t, th, &status, cause) == -1)
		return -1;
	th->running = 0;
	if ((status >> 16) == 0 && WSTOPSIG(status) != SIGTRAP &&
	    task_steal(t, th, cause) == -1)
		return -1;
	return 0;
}

/*
 * Stop the thread, running under our trace, and hold it for calls of
 * ours. Any stop answers the interrupt; a signal that stopped it first is
 * kept (mig_stolen, mig_thread_stolen).
 */
int
mig_interrupt(struct mig_task *t, char **cause)
{
	return held_interrupt(t, t->lead, cause);
}

int
mig_thread_interrupt(struct mig_task *t, pid_t tid, char **cause)
{
	struct mig_thread	*th;

	if ((th = held_thread(t, tid, cause)) == NULL)
		return -1;
	return held_interrupt(t, th, cause);
}

/*
 * Start the held task's exit_group(status) in its lead thread: it is gone
 * when its waiter next sees it. Its other threads die with it, and their
 * ends, ours to reap (the process's end is reported only after theirs),
 * are reaped here.
 */
int
mig_exit(struct mig_task *t, int status, char **cause)
{
	struct user_regs_struct	 r = t->lead->regs;
	struct mig_thread	*th;
	size_t			 i;
	int			 st;

	r.rip = t->sysc;
	r.rax = SYS_exit_group;
	r.orig_rax = -1;
	r.rdi = status;
	if (task_setregs(t->lead, &r, cause) == -1)
		return -1;
	if (ptrace(PTRACE_CONT, t->lead->tid, 0, 0) == -1) {
		xasprintf(cause, "exit_group in %d: %s", t->tgid,
		    strerror(errno));
		return -1;
	}
	t->lead->running = 1;
	for (i = 0; i < t->nth; i++) {
		th = t->th[i];
		if (th->tid == t->tgid)
			continue;
		while (waitpid(th->tid, &st, __WALL) == th->tid &&
		    WIFSTOPPED(st))
			ptrace(PTRACE_CONT, th->tid, 0, 0);
		th->dead = 1;
	}
	return 0;
}

/*
 * End thread tid of the held task (the thread alone, as its exit would);
 * nothing of it reaches the memory after it (its clear-child-tid word and
 * robust list are let go first). Ending the main thread leaves the
 * process's id to the process, as pthread_exit in main does.
 */
int
mig_thread_exit(struct mig_task *t, pid_t tid, char **cause)
{
	struct mig_thread	*th;

	if ((th = held_thread(t, tid, cause)) == NULL)
		return -1;
	if (t->nth == 1) {
		xasprintf(cause, "thread %d is the last of process %d: end "
		    "the process", tid, t->vtgid);
		return -1;
	}
	return clone_end(t, th, cause);
}

/*
 * A new thread in the held task, held: its id tid (0: the kernel's
 * choice, which goes to *made). It starts on the lead's registers: the
 * caller gives it its own (mig_thread_set_regs) before it runs. A chosen
 * id takes CAP_SYS_ADMIN, in the target, over its PID namespace.
 */
int
mig_thread_new(struct mig_task *t, pid_t tid, pid_t *made, char **cause)
{
	struct mig_thread	*th;
	int			 ours = 0, rc = -1;

	if (t->scratch == 0) {
		if (task_scratch(t, 0, MIG_PAGE, cause) == -1)
			return -1;
		ours = 1;
	}
	if (clone_new(t, tid, &th, cause) == 0) {
		if (made != NULL)
			*made = th->vtid;
		rc = 0;
	}
	if (ours && task_unscratch(t, rc == 0 ? cause : NULL) == -1)
		rc = -1;
	return rc;
}

/*
 * The same, made by thread via of the held task rather than by its lead:
 * the lead may be busy (a husk's thread serving a call), via must be held.
 */
int
mig_thread_new_in(struct mig_task *t, pid_t via, pid_t tid, pid_t *made,
    char **cause)
{
	struct mig_thread	*th, *lead = t->lead;
	int			 rc;

	if ((th = held_thread(t, via, cause)) == NULL)
		return -1;
	if (th->running) {
		xasprintf(cause, "thread %d of process %d is running, not "
		    "held", via, t->vtgid);
		return -1;
	}
	t->lead = th;
	rc = mig_thread_new(t, tid, made, cause);
	t->lead = lead;
	return rc;
}

/* The registers the held task's lead resumes with. */
const struct user_regs_struct *
mig_regs(struct mig_task *t)
{
	return &t->lead->regs;
}
