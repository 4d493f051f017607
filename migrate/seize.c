/*
 * Taking hold of a process, every thread of it, and letting it go: a
 * running process seized, a fresh one spawned (with a pid of our choice,
 * where we may choose), one the caller already holds adopted; released,
 * resumed under our trace, or killed.
 */
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include <linux/sched.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/osm.h"
#include "internal.h"

#define PF_IO_WORKER	0x00000010	/* an io_uring worker thread */

/* The ids in /proc/PID/task, or -1 if the process is gone. */
static int
seize_list(pid_t pid, pid_t **out, size_t *n, char **cause)
{
	char		 path[64], *end;
	struct dirent	*e;
	DIR		*d;
	long		 v;

	*out = NULL;
	*n = 0;
	snprintf(path, sizeof path, "/proc/%d/task", pid);
	if ((d = opendir(path)) == NULL) {
		xasprintf(cause, errno == ENOENT ? "no process %d" :
		    "/proc/%d/task: %s", pid, strerror(errno));
		return -1;
	}
	while ((e = readdir(d)) != NULL) {
		v = strtol(e->d_name, &end, 10);
		if (end == e->d_name || *end != '\0' || v <= 0)
			continue;
		*out = xreallocarray(*out, *n + 1, sizeof **out);
		(*out)[(*n)++] = v;
	}
	closedir(d);
	return 0;
}

/* Field 9 of the thread's stat: its kernel flags. */
static unsigned long
seize_flags(pid_t pid, pid_t tid)
{
	char		 path[96], buf[1024], *p;
	int		 i;

	snprintf(path, sizeof path, "/proc/%d/task/%d/stat", pid, tid);
	if (read_file_str(path, buf, sizeof buf) == -1 ||
	    (p = strrchr(buf, ')')) == NULL)
		return 0;
	for (i = 0; i < 7 && p != NULL; i++)
		p = strchr(p + 1, ' ');
	return p != NULL ? strtoul(p + 1, NULL, 10) : 0;
}

static int
seize_dead(pid_t pid, pid_t tid)
{
	int	s = task_thread_state(pid, tid);

	return s == 0 || s == 'Z' || s == 'X';
}

/* Seize and interrupt each thread of the process not yet ours. */
static int
seize_more(struct mig_task *t, size_t *added, char **cause)
{
	pid_t	*tids;
	size_t	 n, i, j;
	int	 rc = -1;

	*added = 0;
	if (seize_list(t->tgid, &tids, &n, cause) == -1)
		return -1;
	for (i = 0; i < n; i++) {
		for (j = 0; j < t->nth && t->th[j]->tid != tids[i]; j++)
			;
		if (j < t->nth || seize_dead(t->tgid, tids[i]))
			continue;
		if (ptrace(PTRACE_SEIZE, tids[i], 0, t->options) == -1) {
			if (errno == ESRCH || seize_dead(t->tgid, tids[i]))
				continue;
			if (errno == EPERM &&
			    (seize_flags(t->tgid, tids[i]) & PF_IO_WORKER))
				xasprintf(cause, "process %d has io_uring "
				    "worker threads (%d), which cannot be "
				    "traced", t->tgid, tids[i]);
			else if (errno == EPERM)
				xasprintf(cause, "cannot trace process %d: "
				    "operation not permitted (not its owner, "
				    "already traced, or not dumpable)",
				    t->tgid);
			else
				xasprintf(cause, "PTRACE_SEIZE %d: %s",
				    tids[i], strerror(errno));
			goto out;
		}
		task_thread_add(t, tids[i])->running = 1;
		(*added)++;
		if (ptrace(PTRACE_INTERRUPT, tids[i], 0, 0) == -1 &&
		    errno != ESRCH) {
			xasprintf(cause, "PTRACE_INTERRUPT %d: %s", tids[i],
			    strerror(errno));
			goto out;
		}
	}
	rc = 0;
out:
	free(tids);
	return rc;
}

/*
 * Wait for the main thread's stop without blocking: were it to end alone
 * (pthread_exit) meanwhile, its end would not be reported before the
 * process's.
 */
static int
seize_wait_main(struct mig_task *t, struct mig_thread *th, int *status,
    char **cause)
{
	siginfo_t	si;
	unsigned	us = 20;

	for (;;) {
		memset(&si, 0, sizeof si);
		if (waitid(P_PID, th->tid, &si, WEXITED | WSTOPPED | WNOHANG |
		    WNOWAIT | __WALL) == -1 && errno != EINTR) {
			xasprintf(cause, "wait for %d: %s", th->tid,
			    strerror(errno));
			return -1;
		}
		if (si.si_pid != 0)
			return task_wait(t, th, status, cause);
		if (seize_dead(t->tgid, th->tid)) {
			th->dead = 1;
			xasprintf(cause, "the main thread of process %d ended",
			    t->tgid);
			return -1;
		}
		usleep(us);
		if (us < 1000)
			us *= 2;
	}
}

/*
 * Wait for a seized thread's interrupt stop; signals that come first are
 * set aside. A thread that ends meanwhile is dropped.
 */
static int
seize_stop(struct mig_task *t, struct mig_thread *th, char **cause)
{
	char	*why = NULL;
	int	 status, rc;

	for (;;) {
		if (th->tid == t->tgid)
			rc = seize_wait_main(t, th, &status, &why);
		else
			rc = task_wait(t, th, &status, &why);
		if (rc == -1) {
			if (!th->dead || t->dead) {
				*cause = why;
				return -1;
			}
			free(why);
			task_thread_drop(t, th);
			return 0;
		}
		if ((status >> 16) == PTRACE_EVENT_STOP)
			break;
		if ((status >> 16) == 0 && task_steal(t, th, cause) == -1)
			return -1;
		if (ptrace(PTRACE_CONT, th->tid, 0, 0) == -1) {
			xasprintf(cause, "PTRACE_CONT %d: %s", th->tid,
			    strerror(errno));
			return -1;
		}
	}
	th->running = 0;
	return 0;
}

/*
 * Let go of the threads seized so far, once each has stopped (only a
 * stopped tracee can be detached), with the first signal a stop took
 * from it (its siginfo is lost).
 */
static void
seize_abandon(struct mig_task *t)
{
	struct mig_thread	*th;
	char			*why = NULL;
	size_t			 i;

	for (i = t->nth; i > 0; i--) {
		th = t->th[i - 1];
		if (!t->dead && th->running && seize_stop(t, th, &why) == -1) {
			free(why);
			why = NULL;
		}
	}
	for (i = 0; i < t->nth && !t->dead; i++) {
		th = t->th[i];
		if (!th->dead && !th->running)
			ptrace(PTRACE_DETACH, th->tid, 0, th->nstolen > 0 ?
			    th->stolen[0].si_signo : 0);
	}
	task_free(t);
}

/*
 * Freeze a running process, every thread of it: PTRACE_SEIZE and
 * PTRACE_INTERRUPT each, and wait for their stops; then look again for
 * threads made meanwhile, until a look once all are stopped finds none.
 */
struct mig_task *
mig_seize(pid_t pid, char **cause)
{
	struct mig_task	*t;
	char		 buf[64];
	size_t		 i, added;

	if (kill(pid, 0) == -1 && errno == ESRCH) {
		xasprintf(cause, "no process %d", pid);
		return NULL;
	}
	if (proc_status(pid, "Tgid", buf, sizeof buf) == -1) {
		xasprintf(cause, "no process %d", pid);
		return NULL;
	}
	if (strtol(buf, NULL, 10) != pid) {
		xasprintf(cause, "%d is a thread of process %s, not a process",
		    pid, buf);
		return NULL;
	}
	t = task_new(pid);
	do {
		if (seize_more(t, &added, cause) == -1)
			goto fail;
		for (i = t->nth; i > 0; i--) {
			if (t->th[i - 1]->running &&
			    seize_stop(t, t->th[i - 1], cause) == -1)
				goto fail;
		}
	} while (added > 0);
	if (t->nth == 0) {
		xasprintf(cause, "process %d has exited", pid);
		goto fail;
	}
	if (task_ready(t, cause) == -1)
		goto fail;
	return t;

fail:
	seize_abandon(t);
	return NULL;
}

/*
 * The child's side of a spawn: stop at once under our trace, holding
 * nothing but 0-2 (ours, or with bare /dev/null); with bare 2, our
 * descriptors from 3 up too, for the caller to close.
 */
static void __attribute__((noreturn))
seize_child(int bare)
{
	long	null;

	/* Raw calls: after a raw clone3 glibc's idea of our tid is wrong. */
	if (syscall(SYS_ptrace, PTRACE_TRACEME, 0, 0, 0) == -1)
		syscall(SYS_exit_group, 127);
	if (bare && ((null = syscall(SYS_open, "/dev/null", O_RDWR)) == -1 ||
	    syscall(SYS_dup2, null, 0) == -1 ||
	    syscall(SYS_dup2, null, 1) == -1 ||
	    syscall(SYS_dup2, null, 2) == -1))
		syscall(SYS_exit_group, 127);
	if (bare != 2)
		syscall(SYS_close_range, 3, ~0U, 0);
	syscall(SYS_kill, syscall(SYS_getpid), SIGSTOP);
	syscall(SYS_exit_group, 127);
	for (;;)
		;
}

/* Take the child spawned as pid under our trace once it has stopped. */
static struct mig_task *
seize_spawned(pid_t pid, char **cause)
{
	struct mig_task	*t;
	int		 status;

	t = task_new(pid);
	t->spawned = 1;
	t->options |= PTRACE_O_EXITKILL;
	task_thread_add(t, pid);
	if (task_wait(t, t->lead, &status, cause) == -1)
		goto fail;
	if (!WIFSTOPPED(status) || WSTOPSIG(status) != SIGSTOP) {
		xasprintf(cause, "restore process %d did not stop", pid);
		goto fail;
	}
	if (task_options(t, t->lead, 0, cause) == -1 ||
	    task_ready(t, cause) == -1)
		goto fail;
	return t;

fail:
	clone_kill(t);
	task_free(t);
	return NULL;
}

/*
 * A fresh process to restore into: a child of ours that stops at once
 * under our trace with nothing open but 0-2. It dies with us.
 */
static struct mig_task *
seize_spawn(int bare, char **cause)
{
	pid_t	pid;

	if ((pid = fork()) == -1) {
		xasprintf(cause, "fork: %s", strerror(errno));
		return NULL;
	}
	if (pid == 0)
		seize_child(bare);
	return seize_spawned(pid, cause);
}

struct mig_task *
mig_spawn(char **cause)
{
	return seize_spawn(0, cause);
}

/*
 * The same, but holding nothing of ours: 0-2 are /dev/null. For a guest's
 * R, whose descriptors are its home's (forwarded), never this node's.
 */
struct mig_task *
mig_spawn_bare(char **cause)
{
	return seize_spawn(1, cause);
}

/* Child r seized, held only if it has the pid it was made with. */
static struct mig_task *
seize_spawned_pid(pid_t r, pid_t pid, char **cause)
{
	struct mig_task	*t;

	if ((t = seize_spawned(r, cause)) == NULL)
		return NULL;
	if (t->vtgid != pid) {
		xasprintf(cause, "spawned process %d has pid %d in its PID "
		    "namespace, not %d", (int)r, t->vtgid, pid);
		mig_kill(t);
		return NULL;
	}
	return t;
}

/*
 * The same, with pid as its own pid: clone3 with set_tid, which takes
 * CAP_SYS_ADMIN in the user namespace owning the PID namespace our
 * children are born in, and an init already there (mig_pidns).
 */
static struct mig_task *
seize_spawn_pid(pid_t pid, int bare, char **cause)
{
	struct clone_args	 ca;
	long			 r;

	memset(&ca, 0, sizeof ca);
	ca.exit_signal = SIGCHLD;
	ca.set_tid = (uintptr_t)&pid;
	ca.set_tid_size = 1;
	if ((r = syscall(SYS_clone3, &ca, sizeof ca)) == -1) {
		if (errno == EPERM)
			xasprintf(cause, "cannot choose pid %d: that takes "
			    "CAP_SYS_ADMIN in the user namespace owning the "
			    "PID namespace of our children", pid);
		else if (errno == EEXIST)
			xasprintf(cause, "cannot choose pid %d: it is taken",
			    pid);
		else if (errno == EINVAL)
			xasprintf(cause, "cannot choose pid %d: beyond "
			    "pid_max, or no init in the PID namespace of our "
			    "children", pid);
		else
			xasprintf(cause, "clone3 with pid %d: %s", pid,
			    strerror(errno));
		return NULL;
	}
	if (r == 0)
		seize_child(bare);
	return seize_spawned_pid(r, pid, cause);
}

struct mig_task *
mig_spawn_pid(pid_t pid, char **cause)
{
	return seize_spawn_pid(pid, 0, cause);
}

/*
 * Both, for a guest's R that keeps its home's pid: in a PID namespace of
 * its own (and a user namespace of ours, unless we are root) made for it,
 * while the caller stays in its own, still able to make threads (which a
 * caller in the state mig_pidns leaves cannot). It is born with the
 * caller's descriptors from 3 up, which only it may open through
 * /proc/self/fd from inside its user namespace: the caller closes them
 * once it has what it needs.
 */
struct mig_task *
mig_spawn_bare_pid(pid_t pid, char **cause)
{
	pid_t	r;

	if ((r = pidns_fork(pid, cause)) == -1)
		return NULL;
	if (r == 0)
		seize_child(2);
	return seize_spawned_pid(r, pid, cause);
}

/*
 * A process the caller already holds, every thread of it in a ptrace
 * stop traced by this thread. Their trace options become
 * PTRACE_O_TRACESYSGOOD.
 */
struct mig_task *
mig_adopt(pid_t pid, char **cause)
{
	struct mig_task	*t;
	pid_t		*tids;
	size_t		 n, i;

	if (seize_list(pid, &tids, &n, cause) == -1)
		return NULL;
	t = task_new(pid);
	for (i = 0; i < n; i++) {
		if (seize_dead(pid, tids[i]))
			continue;
		task_thread_add(t, tids[i]);
		if (ptrace(PTRACE_SETOPTIONS, tids[i], 0, t->options) == -1) {
			if (tids[i] == pid)
				xasprintf(cause, "process %d is not stopped "
				    "under our trace: %s", pid,
				    strerror(errno));
			else
				xasprintf(cause, "thread %d of process %d is "
				    "not stopped under our trace: %s", tids[i],
				    pid, strerror(errno));
			goto fail;
		}
	}
	free(tids);
	tids = NULL;
	if (t->nth == 0) {
		xasprintf(cause, "process %d has exited", pid);
		goto fail;
	}
	if (task_ready(t, cause) == -1)
		goto fail;
	return t;
fail:
	free(tids);
	task_free(t);
	return NULL;
}

/* The process's id, ours (waitpid, kill). */
pid_t
mig_pid(const struct mig_task *t)
{
	return t->tgid;
}

/* Give back the signals our stops took, and settle the registers. */
static int
seize_hand_back(struct mig_task *t, char **cause)
{
	size_t	i, n = 0;

	for (i = 0; i < t->nth; i++) {
		if (t->th[i]->running) {
			xasprintf(cause, "thread %d of process %d is running, "
			    "not held", t->th[i]->vtid, t->vtgid);
			return -1;
		}
		n += t->th[i]->nstolen;
	}
	if (n > 0) {
		if (task_scratch(t, 0, MIG_PAGE, cause) == -1 ||
		    task_requeue_stolen(t, cause) == -1 ||
		    task_unscratch(t, cause) == -1)
			return -1;
	}
	return task_settle(t, cause);
}

/* Let the task run on, no longer traced by us. */
int
mig_release(struct mig_task *t, char **cause)
{
	char	*ignored = NULL;
	size_t	 i;
	int	 rc = -1;

	if (cause == NULL)
		cause = &ignored;
	if (seize_hand_back(t, cause) == -1)
		goto out;
	rc = 0;
	for (i = 0; i < t->nth; i++) {
		if (ptrace(PTRACE_DETACH, t->th[i]->tid, 0, 0) == -1 &&
		    rc == 0) {
			xasprintf(cause, "PTRACE_DETACH %d: %s", t->th[i]->tid,
			    strerror(errno));
			rc = -1;
		}
	}
out:
	free(ignored);
	task_free(t);
	return rc;
}

/*
 * Let the task run on and stay its tracer: a deputy keeps its process
 * traced for life, also once it is home again.
 */
int
mig_resume(struct mig_task *t, char **cause)
{
	size_t	i;
	int	rc = -1;

	if (seize_hand_back(t, cause) == -1)
		goto out;
	for (i = 0; i < t->nth; i++) {
		if (ptrace(PTRACE_CONT, t->th[i]->tid, 0, 0) == -1) {
			xasprintf(cause, "PTRACE_CONT %d: %s", t->th[i]->tid,
			    strerror(errno));
			goto out;
		}
	}
	rc = 0;
out:
	task_free(t);
	return rc;
}

/* Free a task its caller has seen end and has waited for. */
void
mig_forget(struct mig_task *t)
{
	task_free(t);
}

/* Kill the task and wait until it is gone. */
void
mig_kill(struct mig_task *t)
{
	clone_kill(t);
	task_free(t);
}
