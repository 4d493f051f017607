/*
 * Taking hold of a process with ptrace, running system calls inside it,
 * and letting it go. A call is injected by pointing the stopped task at a
 * syscall instruction in its own vDSO and stepping it with PTRACE_SYSCALL
 * from entry to exit: no byte of the process is changed for it, and the
 * vDSO is there in every process, also after its memory is replaced.
 */
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>

#include <linux/ptrace.h>

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/osm.h"
#include "internal.h"

/*
 * The task's next stop, in *status; -1 with *cause if it ended. The end of
 * a task we did not spawn is seen, not reaped: whoever else waits for it
 * must see it too (a guest agent's R is its child, a deputy's P reports
 * to the deputy's own loop).
 */
int
task_wait(struct mig_task *t, int *status, char **cause)
{
	siginfo_t	si;
	pid_t		r;

	memset(&si, 0, sizeof si);
	while (!t->spawned && waitid(P_PID, t->pid, &si,
	    WEXITED | WNOWAIT | __WALL) == -1 && errno == EINTR)
		;
	if (si.si_code == CLD_EXITED || si.si_code == CLD_KILLED ||
	    si.si_code == CLD_DUMPED) {
		t->dead = 1;
		if (si.si_code == CLD_EXITED)
			xasprintf(cause, "process %d exited with status %d",
			    t->pid, si.si_status);
		else
			xasprintf(cause, "process %d was killed by signal %d",
			    t->pid, si.si_status);
		return -1;
	}
	while ((r = waitpid(t->pid, status, __WALL)) == -1 && errno == EINTR)
		;
	if (r == -1) {
		xasprintf(cause, "wait for process %d: %s", t->pid,
		    strerror(errno));
		return -1;
	}
	if (WIFEXITED(*status) || WIFSIGNALED(*status)) {
		t->dead = 1;
		if (WIFEXITED(*status))
			xasprintf(cause, "process %d exited with status %d",
			    t->pid, WEXITSTATUS(*status));
		else
			xasprintf(cause, "process %d was killed by signal %d",
			    t->pid, WTERMSIG(*status));
		return -1;
	}
	return 0;
}

/* Note a signal our stop took from the task: it is given back later. */
int
task_steal(struct mig_task *t, char **cause)
{
	siginfo_t	si;

	if (ptrace(PTRACE_GETSIGINFO, t->pid, 0, &si) == -1) {
		xasprintf(cause, "PTRACE_GETSIGINFO: %s", strerror(errno));
		return -1;
	}
	t->stolen = xreallocarray(t->stolen, t->nstolen + 1,
	    sizeof *t->stolen);
	t->stolen[t->nstolen++] = si;
	return 0;
}

static int
task_cont(struct mig_task *t, char **cause)
{
	if (ptrace(PTRACE_SYSCALL, t->pid, 0, 0) == -1) {
		xasprintf(cause, "ptrace resume %d: %s", t->pid,
		    strerror(errno));
		return -1;
	}
	return 0;
}

/*
 * The task resumed, wait for its next syscall stop; group stops and
 * interrupts are stepped over, signals set aside.
 */
int
task_await(struct mig_task *t, char **cause)
{
	int	status;

	for (;;) {
		if (task_wait(t, &status, cause) == -1)
			return -1;
		if (WIFSTOPPED(status) && WSTOPSIG(status) == (SIGTRAP | 0x80))
			return 0;
		if (WIFSTOPPED(status) && (status >> 16) == 0 &&
		    task_steal(t, cause) == -1)
			return -1;
		if (task_cont(t, cause) == -1)
			return -1;
	}
}

/* Resume until the next syscall stop. */
static int
task_step(struct mig_task *t, char **cause)
{
	if (task_cont(t, cause) == -1)
		return -1;
	return task_await(t, cause);
}

static int
task_getregs(struct mig_task *t, struct user_regs_struct *r, char **cause)
{
	if (ptrace(PTRACE_GETREGS, t->pid, 0, r) == -1) {
		xasprintf(cause, "PTRACE_GETREGS %d: %s", t->pid,
		    strerror(errno));
		return -1;
	}
	return 0;
}

static int
task_setregs(struct mig_task *t, const struct user_regs_struct *r,
    char **cause)
{
	if (ptrace(PTRACE_SETREGS, t->pid, 0, r) == -1) {
		xasprintf(cause, "PTRACE_SETREGS %d: %s", t->pid,
		    strerror(errno));
		return -1;
	}
	return 0;
}

/*
 * Run system call nr with arguments a in the task; its return value (a
 * negative errno on failure) goes to *rv. -1 only when the task could not
 * be driven.
 */
/* Point the stopped task at its syscall instruction with these registers. */
int
task_aim(struct mig_task *t, long nr, const sysargs a, char **cause)
{
	struct user_regs_struct	 r;

	r = t->regs;
	r.rax = nr;
	r.orig_rax = -1;	/* no restart logic on the way out */
	r.rip = t->sysc;
	r.rdi = a[0];
	r.rsi = a[1];
	r.rdx = a[2];
	r.r10 = a[3];
	r.r8 = a[4];
	r.r9 = a[5];
	if (task_setregs(t, &r, cause) == -1)
		return -1;
	t->regs_dirty = 1;
	return 0;
}

static int
task_syscall(struct mig_task *t, long *rv, long nr, const sysargs a)
{
	struct user_regs_struct	 r;
	struct __ptrace_syscall_info info;
	char			*cause = NULL;

	if (task_aim(t, nr, a, &cause) == -1)
		goto fail;
	for (;;) {
		if (task_step(t, &cause) == -1)
			goto fail;
		if (ptrace(PTRACE_GET_SYSCALL_INFO, t->pid, sizeof info,
		    &info) == -1) {
			xasprintf(&cause, "PTRACE_GET_SYSCALL_INFO: %s",
			    strerror(errno));
			goto fail;
		}
		if (info.op == PTRACE_SYSCALL_INFO_EXIT)
			break;
	}
	if (task_getregs(t, &r, &cause) == -1)
		goto fail;
	*rv = (long)r.rax;
	return 0;

fail:
	free(t->cause);
	t->cause = cause;
	return -1;
}

/*
 * Run a system call that must succeed, its result in t->last_rv; name says
 * what it was for in the error, which is kept for task_cause(). The
 * arguments are a (sysargs){ ... }: converted as for a prototype, not
 * passed through varargs, so that an int -1 arrives as a 64-bit -1.
 */
int
task_sys_ok(struct mig_task *t, const char *name, long nr, const sysargs a)
{
	long	rv;

	if (task_syscall(t, &rv, nr, a) == -1)
		return -1;
	if (rv < 0 && rv > -4096) {
		free(t->cause);
		xasprintf(&t->cause, "%s in process %d: %s", name, t->pid,
		    strerror(-rv));
		return -1;
	}
	t->last_rv = rv;
	return 0;
}

/* The error of the last failed injection; the caller owns it. */
char *
task_cause(struct mig_task *t)
{
	char	*c = t->cause;

	t->cause = NULL;
	return c != NULL ? c : xstrdup("unknown error in injected call");
}

int
task_write(struct mig_task *t, uint64_t addr, const void *buf, size_t len,
    char **cause)
{
	struct iovec	 l = { (void *)buf, len };
	struct iovec	 r = { (void *)addr, len };
	ssize_t		 n;

	n = process_vm_writev(t->pid, &l, 1, &r, 1, 0);
	if (n != (ssize_t)len) {
		xasprintf(cause, "write %zu bytes at 0x%llx in process %d: %s",
		    len, (unsigned long long)addr, t->pid,
		    n == -1 ? strerror(errno) : "short write");
		return -1;
	}
	return 0;
}

int
task_read(struct mig_task *t, uint64_t addr, void *buf, size_t len,
    char **cause)
{
	struct iovec	 l = { buf, len };
	struct iovec	 r = { (void *)addr, len };
	ssize_t		 n;

	n = process_vm_readv(t->pid, &l, 1, &r, 1, 0);
	if (n != (ssize_t)len) {
		xasprintf(cause, "read %zu bytes at 0x%llx in process %d: %s",
		    len, (unsigned long long)addr, t->pid,
		    n == -1 ? strerror(errno) : "short read");
		return -1;
	}
	return 0;
}

/* Map len bytes of scratch memory in the task, at addr if not 0. */
int
task_scratch(struct mig_task *t, uint64_t addr, size_t len, char **cause)
{
	int	flags = MAP_PRIVATE | MAP_ANONYMOUS;

	if (addr != 0)
		flags |= MAP_FIXED_NOREPLACE;
	if (task_sys_ok(t, "mmap scratch", SYS_mmap, (sysargs){ addr, len,
	    PROT_READ | PROT_WRITE, flags, -1, 0 }) == -1) {
		*cause = task_cause(t);
		return -1;
	}
	if (addr != 0 && (uint64_t)t->last_rv != addr) {
		xasprintf(cause, "mmap scratch in process %d: placed at "
		    "0x%lx, not 0x%llx", t->pid, t->last_rv,
		    (unsigned long long)addr);
		return -1;
	}
	t->scratch = t->last_rv;
	t->scratch_len = len;
	return 0;
}

/* Unmap the scratch area, if any; cause NULL: on the way out, quietly. */
int
task_unscratch(struct mig_task *t, char **cause)
{
	char	*why;

	if (t->scratch == 0)
		return 0;
	if (task_sys_ok(t, "munmap scratch", SYS_munmap, (sysargs){ t->scratch,
	    t->scratch_len }) == -1) {
		why = task_cause(t);
		if (cause != NULL)
			*cause = why;
		else
			free(why);
		return -1;
	}
	t->scratch = 0;
	return 0;
}

/* Where the task's [vdso] is, from its maps. */
static int
task_vdso(pid_t pid, uint64_t *start, uint64_t *end, char **cause)
{
	char			 path[64], line[512];
	FILE			*f;
	unsigned long long	 s, e;

	snprintf(path, sizeof path, "/proc/%d/maps", pid);
	if ((f = fopen(path, "re")) == NULL) {
		xasprintf(cause, "%s: %s", path, strerror(errno));
		return -1;
	}
	*start = *end = 0;
	while (fgets(line, sizeof line, f) != NULL) {
		if (strstr(line, " [vdso]") == NULL)
			continue;
		if (sscanf(line, "%llx-%llx", &s, &e) == 2) {
			*start = s;
			*end = e;
		}
	}
	fclose(f);
	if (*start == 0) {
		xasprintf(cause, "process %d has no vDSO", pid);
		return -1;
	}
	return 0;
}

/* Find a syscall instruction (0f 05) in the vDSO at [start, end). */
static int
task_find_sysc(struct mig_task *t, uint64_t start, uint64_t end,
    char **cause)
{
	uint8_t		*buf;
	size_t		 i, len = end - start;

	if (len == 0 || len > (1 << 20)) {
		xasprintf(cause, "vDSO of process %d has odd size %zu", t->pid,
		    len);
		return -1;
	}
	buf = xmalloc(len);
	if (task_read(t, start, buf, len, cause) == -1) {
		free(buf);
		return -1;
	}
	for (i = 0; i + 1 < len; i++) {
		if (buf[i] == 0x0f && buf[i + 1] == 0x05) {
			t->sysc = start + i;
			free(buf);
			return 0;
		}
	}
	free(buf);
	xasprintf(cause, "no syscall instruction in the vDSO of process %d",
	    t->pid);
	return -1;
}

static struct mig_task *
task_new(pid_t pid)
{
	struct mig_task	*t;

	t = xcalloc(1, sizeof *t);
	t->pid = pid;
	t->seized_us = now_us();
	return t;
}

static void
task_free(struct mig_task *t)
{
	free(t->stolen);
	free(t->cause);
	free(t);
}

static int
task_ready(struct mig_task *t, char **cause)
{
	uint64_t	s, e;

	if (task_getregs(t, &t->regs, cause) == -1)
		return -1;
	if (task_vdso(t->pid, &s, &e, cause) == -1)
		return -1;
	return task_find_sysc(t, s, e, cause);
}

/*
 * Freeze a running process: PTRACE_SEIZE, then PTRACE_INTERRUPT, and wait
 * for the interrupt stop. A signal that arrives first is set aside.
 */
struct mig_task *
mig_seize(pid_t pid, char **cause)
{
	struct mig_task	*t;
	char		 state[64];
	int		 status;

	if (kill(pid, 0) == -1 && errno == ESRCH) {
		xasprintf(cause, "no process %d", pid);
		return NULL;
	}
	/* A zombie would never report the stop we wait for. */
	if (proc_status(pid, "State", state, sizeof state) == -1) {
		xasprintf(cause, "no process %d", pid);
		return NULL;
	}
	if (strchr("ZX", state[strspn(state, " \t")]) != NULL) {
		xasprintf(cause, "process %d has exited", pid);
		return NULL;
	}
	if (ptrace(PTRACE_SEIZE, pid, 0, PTRACE_O_TRACESYSGOOD) == -1) {
		if (errno == ESRCH)
			xasprintf(cause, "no process %d", pid);
		else if (errno == EPERM)
			xasprintf(cause, "cannot trace process %d: operation "
			    "not permitted (not its owner, already traced, or "
			    "not dumpable)", pid);
		else
			xasprintf(cause, "PTRACE_SEIZE %d: %s", pid,
			    strerror(errno));
		return NULL;
	}
	t = task_new(pid);
	if (ptrace(PTRACE_INTERRUPT, pid, 0, 0) == -1) {
		xasprintf(cause, "PTRACE_INTERRUPT %d: %s", pid,
		    strerror(errno));
		goto fail;
	}
	for (;;) {
		if (task_wait(t, &status, cause) == -1)
			goto fail;
		if ((status >> 16) == PTRACE_EVENT_STOP)
			break;
		if ((status >> 16) == 0 && task_steal(t, cause) == -1)
			goto fail;
		if (ptrace(PTRACE_CONT, pid, 0, 0) == -1) {
			xasprintf(cause, "PTRACE_CONT %d: %s", pid,
			    strerror(errno));
			goto fail;
		}
	}
	if (task_ready(t, cause) == -1)
		goto fail;
	return t;

fail:
	if (!t->dead)
		ptrace(PTRACE_DETACH, pid, 0, 0);
	task_free(t);
	return NULL;
}

/*
 * A fresh process to restore into: a child of ours that stops at once
 * under our trace with nothing open but 0-2 (ours, or with bare
 * /dev/null). It dies with us.
 */
static struct mig_task *
task_spawn(int bare, char **cause)
{
	struct mig_task	*t;
	pid_t		 pid;
	int		 status, null;

	if ((pid = fork()) == -1) {
		xasprintf(cause, "fork: %s", strerror(errno));
		return NULL;
	}
	if (pid == 0) {
		if (ptrace(PTRACE_TRACEME, 0, 0, 0) == -1)
			_exit(127);
		if (bare) {
			if ((null = open("/dev/null", O_RDWR)) == -1 ||
			    dup2(null, 0) == -1 || dup2(null, 1) == -1 ||
			    dup2(null, 2) == -1)
				_exit(127);
		}
		syscall(SYS_close_range, 3, ~0U, 0);
		raise(SIGSTOP);
		_exit(127);
	}
	t = task_new(pid);
	t->spawned = 1;
	if (task_wait(t, &status, cause) == -1)
		goto fail;
	if (!WIFSTOPPED(status) || WSTOPSIG(status) != SIGSTOP) {
		xasprintf(cause, "restore process %d did not stop", pid);
		goto fail;
	}
	if (ptrace(PTRACE_SETOPTIONS, pid, 0,
	    PTRACE_O_TRACESYSGOOD | PTRACE_O_EXITKILL) == -1) {
		xasprintf(cause, "PTRACE_SETOPTIONS: %s", strerror(errno));
		goto fail;
	}
	if (task_ready(t, cause) == -1)
		goto fail;
	return t;

fail:
	mig_kill(t);
	return NULL;
}

struct mig_task *
mig_spawn(char **cause)
{
	return task_spawn(0, cause);
}

/*
 * The same, but holding nothing of ours: 0-2 are /dev/null. For a guest's
 * R, whose descriptors are its home's (forwarded), never this node's.
 */
struct mig_task *
mig_spawn_bare(char **cause)
{
	return task_spawn(1, cause);
}

/*
 * A process the caller already holds in a ptrace stop, traced by this
 * thread. Its trace options get PTRACE_O_TRACESYSGOOD.
 */
struct mig_task *
mig_adopt(pid_t pid, char **cause)
{
	struct mig_task	*t;

	if (ptrace(PTRACE_SETOPTIONS, pid, 0, PTRACE_O_TRACESYSGOOD) == -1) {
		xasprintf(cause, "process %d is not stopped under our trace: "
		    "%s", pid, strerror(errno));
		return NULL;
	}
	t = task_new(pid);
	if (task_ready(t, cause) == -1) {
		task_free(t);
		return NULL;
	}
	return t;
}

pid_t
mig_pid(const struct mig_task *t)
{
	return t->pid;
}

/* The registers the held task resumes with. */
const struct user_regs_struct *
mig_regs(struct mig_task *t)
{
	return &t->regs;
}

/*
 * The dumped task goes on after our injected calls returned through
 * syscall exit, which does not run the restart logic: do it here, as the
 * kernel would have.
 */
static void
task_resumable(struct user_regs_struct *r)
{
	long	rax = (long)r->rax;

	if ((long)r->orig_rax < 0)
		return;
	if (rax == -ERESTARTSYS || rax == -ERESTARTNOINTR ||
	    rax == -ERESTARTNOHAND) {
		r->rax = r->orig_rax;
		r->rip -= 2;
	} else if (rax == -ERESTART_RESTARTBLOCK) {
		r->rax = SYS_restart_syscall;
		r->rip -= 2;
	}
	r->orig_rax = -1;
}

/* Queue signals in the task as if they had never left its queue. */
int
task_requeue(struct mig_task *t, const siginfo_t *si, int shared,
    char **cause)
{
	if (task_write(t, t->scratch, si, sizeof *si, cause) == -1)
		return -1;
	if (shared) {
		if (task_sys_ok(t, "rt_sigqueueinfo", SYS_rt_sigqueueinfo,
		    (sysargs){ t->pid, si->si_signo, t->scratch }) == -1)
			goto inject;
	} else if (task_sys_ok(t, "rt_tgsigqueueinfo", SYS_rt_tgsigqueueinfo,
	    (sysargs){ t->pid, t->pid, si->si_signo, t->scratch }) == -1)
		goto inject;
	return 0;
inject:
	*cause = task_cause(t);
	return -1;
}

/*
 * Give the task back every signal our stops took, as it had them; its
 * scratch area must be mapped.
 */
int
task_requeue_stolen(struct mig_task *t, char **cause)
{
	size_t	i;

	for (i = 0; i < t->nstolen; i++) {
		if (task_requeue(t, &t->stolen[i], 0, cause) == -1)
			return -1;
	}
	t->nstolen = 0;
	return 0;
}

/*
 * Put back the registers the task is to resume with, its interrupted call
 * restarted as the kernel would have after our injected calls (which
 * return through syscall exit, where the restart logic does not run).
 * Done as soon as the injected calls are over, so that a task whose
 * tracer dies goes on as it was.
 */
int
task_settle(struct mig_task *t, char **cause)
{
	if (!t->regs_dirty)
		return 0;
	task_resumable(&t->regs);
	if (task_setregs(t, &t->regs, cause) == -1)
		return -1;
	t->regs_dirty = 0;
	return 0;
}

/* Give back the signals our stops took, and settle the registers. */
static int
task_hand_back(struct mig_task *t, char **cause)
{
	if (t->nstolen > 0) {
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
	int	 rc = -1;

	if (cause == NULL)
		cause = &ignored;
	if (task_hand_back(t, cause) == -1)
		goto out;
	if (ptrace(PTRACE_DETACH, t->pid, 0, 0) == -1) {
		xasprintf(cause, "PTRACE_DETACH %d: %s", t->pid,
		    strerror(errno));
		goto out;
	}
	rc = 0;
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
	int	rc = -1;

	if (task_hand_back(t, cause) == -1)
		goto out;
	if (ptrace(PTRACE_CONT, t->pid, 0, 0) == -1) {
		xasprintf(cause, "PTRACE_CONT %d: %s", t->pid,
		    strerror(errno));
		goto out;
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
	int	 status;
	char	*cause = NULL;

	if (!t->dead) {
		kill(t->pid, SIGKILL);
		while (task_wait(t, &status, &cause) == 0) {
			/* Stops still reported on the way out. */
			ptrace(PTRACE_CONT, t->pid, 0, 0);
		}
		free(cause);
	}
	task_free(t);
}

/* Signals our stops took from the task, now the caller's to deliver. */
size_t
mig_stolen(struct mig_task *t, siginfo_t *out, size_t max)
{
	size_t	n = t->nstolen < max ? t->nstolen : max;

	if (n == 0)
		return 0;	/* t->stolen may be NULL */
	memcpy(out, t->stolen, n * sizeof *out);
	memmove(t->stolen, t->stolen + n, (t->nstolen - n) * sizeof *out);
	t->nstolen -= n;
	return n;
}

/* A call that must not block, run to its end; its value in *rv. */
int
mig_call(struct mig_task *t, long *rv, long nr, const sysargs a,
    char **cause)
{
	if (task_syscall(t, rv, nr, a) == -1) {
		*cause = task_cause(t);
		return -1;
	}
	return 0;
}

/* The same, for a call that must succeed: a failure is an error too. */
int
mig_call_ok(struct mig_task *t, const char *what, long *rv, long nr,
    const sysargs args, char **cause)
{
	if (task_sys_ok(t, what, nr, args) == -1) {
		*cause = task_cause(t);
		return -1;
	}
	if (rv != NULL)
		*rv = t->last_rv;
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
 * Keep the task and us on the CPU we run on while we inject calls into
 * it: each call is a stop and a resume, and the one of us that waits for
 * the other to run wakes it cheaply on its own CPU, dearly (tens of
 * microseconds in a VM) on another. Where we may not (the task's cpuset
 * has not our CPU), nothing changes.
 */
void
mig_pin(struct mig_task *t, struct mig_pin *p)
{
	cpu_set_t	one;

	CPU_ZERO(&one);
	CPU_SET(sched_getcpu(), &one);
	p->pinned = sched_getaffinity(0, sizeof p->self, &p->self) == 0 &&
	    sched_getaffinity(t->pid, sizeof p->task, &p->task) == 0 &&
	    sched_setaffinity(t->pid, sizeof one, &one) == 0;
	if (p->pinned)
		sched_setaffinity(0, sizeof one, &one);
}

void
mig_unpin(struct mig_task *t, struct mig_pin *p)
{
	if (!p->pinned)
		return;
	if (!t->dead)
		sched_setaffinity(t->pid, sizeof p->task, &p->task);
	sched_setaffinity(0, sizeof p->self, &p->self);
	p->pinned = 0;
}

/*
 * Let the held task run code of ours from rip, with rdi as its argument
 * and its registers otherwise those it is to resume with, which are put
 * back before it is let go. It runs under our trace until mig_interrupt.
 */
int
mig_jump(struct mig_task *t, uint64_t rip, uint64_t rdi, char **cause)
{
	struct user_regs_struct	r = t->regs;

	r.rip = rip;
	r.rdi = rdi;
	r.orig_rax = -1;
	r.rax = 0;
	if (task_setregs(t, &r, cause) == -1)
		return -1;
	t->regs_dirty = 1;
	if (ptrace(PTRACE_CONT, t->pid, 0, 0) == -1) {
		xasprintf(cause, "PTRACE_CONT %d: %s", t->pid, strerror(errno));
		return -1;
	}
	return 0;
}

/*
 * Stop the task, running under our trace, and hold it for calls of ours.
 * Any stop answers the interrupt; a signal that stopped it first is kept
 * (mig_stolen).
 */
int
mig_interrupt(struct mig_task *t, char **cause)
{
	int	status;

	if (ptrace(PTRACE_INTERRUPT, t->pid, 0, 0) == -1) {
		xasprintf(cause, "PTRACE_INTERRUPT %d: %s", t->pid,
		    strerror(errno));
		return -1;
	}
	if (task_wait(t, &status, cause) == -1)
		return -1;
	if ((status >> 16) == 0 && WSTOPSIG(status) != SIGTRAP &&
	    task_steal(t, cause) == -1)
		return -1;
	return 0;
}

/*
 * Start the held task's exit_group(status): it is gone when its waiter
 * next sees it.
 */
int
mig_exit(struct mig_task *t, int status, char **cause)
{
	struct user_regs_struct	r = t->regs;

	r.rip = t->sysc;
	r.rax = SYS_exit_group;
	r.orig_rax = -1;
	r.rdi = status;
	if (task_setregs(t, &r, cause) == -1)
		return -1;
	if (ptrace(PTRACE_CONT, t->pid, 0, 0) == -1) {
		xasprintf(cause, "exit_group in %d: %s", t->pid,
		    strerror(errno));
		return -1;
	}
	return 0;
}
