/*
 * A process held under our ptrace control, thread by thread: the bottom
 * of migrate/. A call is injected into one stopped thread by pointing it
 * at a syscall instruction in the process's own vDSO and stepping it with
 * PTRACE_SYSCALL from entry to exit: no byte of the process is changed
 * for it, and the vDSO is there in every process, also after its memory
 * is replaced. The other threads stay in their stops meanwhile.
 *
 * Each thread has two ids: ours (ptrace, waitpid, /proc) and the
 * process's own, which differ when it lives in a PID namespace below
 * ours. Calls injected into the process take its own ids.
 */
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>

#include <linux/ptrace.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/osm.h"
#include "internal.h"


struct mig_task *
task_new(pid_t tgid)
{
	struct mig_task	*t;

	t = xcalloc(1, sizeof *t);
	t->pid = t->tgid = t->vtgid = tgid;
	t->options = PTRACE_O_TRACESYSGOOD;
	t->seized_us = now_us();
	return t;
}

void
task_free(struct mig_task *t)
{
	size_t	i;

	for (i = 0; i < t->nth; i++) {
		free(t->th[i]->stolen);
		free(t->th[i]);
	}
	free(t->th);
	free(t->cause);
	free(t);
}

/* The main thread first, the others by their ids. */
static int
task_before(const struct mig_task *t, pid_t a, pid_t b)
{
	if (a == t->tgid || b == t->tgid)
		return a == t->tgid;
	return a < b;
}

struct mig_thread *
task_thread_add(struct mig_task *t, pid_t tid)
{
	struct mig_thread	*th;
	size_t			 i;

	th = xcalloc(1, sizeof *th);
	th->tid = th->vtid = tid;
	t->th = xreallocarray(t->th, t->nth + 1, sizeof *t->th);
	for (i = t->nth; i > 0 && task_before(t, tid, t->th[i - 1]->tid); i--)
		t->th[i] = t->th[i - 1];
	t->th[i] = th;
	t->nth++;
	task_lead(t);
	return th;
}

void
task_thread_drop(struct mig_task *t, struct mig_thread *th)
{
	size_t	i;

	for (i = 0; i < t->nth && t->th[i] != th; i++)
		;
	if (i == t->nth)
		return;
	memmove(t->th + i, t->th + i + 1, (t->nth - i - 1) * sizeof *t->th);
	t->nth--;
	free(th->stolen);
	free(th);
	task_lead(t);
}

/* The thread the process knows as vtid, or NULL. */
struct mig_thread *
task_thread(const struct mig_task *t, pid_t vtid)
{
	size_t	i;

	for (i = 0; i < t->nth; i++) {
		if (t->th[i]->vtid == vtid)
			return t->th[i];
	}
	return NULL;
}

/*
 * The thread process-wide calls go through: the main thread while it
 * lives; once it has ended (pthread_exit), /proc/PID shows no memory and
 * process_vm_* fail on the process's id, so the first thread left.
 */
void
task_lead(struct mig_task *t)
{
	t->lead = t->nth > 0 ? t->th[0] : NULL;
	if (t->lead != NULL)
		t->pid = t->lead->tid;
}

/* A line of /proc/TGID/task/TID/status, its value. */
int
task_thread_status(struct mig_task *t, struct mig_thread *th,
    const char *key, char *out, size_t size, char **cause)
{
	char	 path[96], *line = NULL, *v;
	size_t	 cap = 0, klen = strlen(key);
	FILE	*f;
	int	 rc = -1;

	snprintf(path, sizeof path, "/proc/%d/task/%d/status", t->tgid,
	    th->tid);
	if ((f = fopen(path, "re")) == NULL) {
		xasprintf(cause, "%s: %s", path, strerror(errno));
		return -1;
	}
	while (getline(&line, &cap, f) != -1) {
		if (strncmp(line, key, klen) != 0 || line[klen] != ':')
			continue;
		line[strcspn(line, "\n")] = '\0';
		v = line + klen + 1 + strspn(line + klen + 1, " \t");
		snprintf(out, size, "%s", v);
		rc = 0;
		break;
	}
	free(line);
	fclose(f);
	if (rc == -1)
		xasprintf(cause, "%s: no %s line", path, key);
	return rc;
}

/*
 * The thread's id in its own PID namespace: the last of its NSpid line
 * (ours first, then one per namespace below).
 */
int
task_vtid(struct mig_task *t, struct mig_thread *th, char **cause)
{
	char	 buf[256], *p, *end;
	long	 v = -1;

	if (task_thread_status(t, th, "NSpid", buf, sizeof buf, cause) == -1)
		return -1;
	for (p = buf;; p = end) {
		long n = strtol(p, &end, 10);

		if (end == p)
			break;
		v = n;
	}
	if (v <= 0) {
		xasprintf(cause, "thread %d: bad NSpid line", th->tid);
		return -1;
	}
	th->vtid = v;
	return 0;
}

/* The state letter of a thread (R, S, Z...), or 0 if it is gone. */
int
task_thread_state(pid_t tgid, pid_t tid)
{
	char	 path[96], buf[512], *p;

	snprintf(path, sizeof path, "/proc/%d/task/%d/stat", tgid, tid);
	if (read_file_str(path, buf, sizeof buf) == -1 ||
	    (p = strrchr(buf, ')')) == NULL || p[1] != ' ')
		return 0;
	return p[2];
}

int
task_options(struct mig_task *t, struct mig_thread *th, int extra,
    char **cause)
{
	if (ptrace(PTRACE_SETOPTIONS, th->tid, 0, t->options | extra) == -1) {
		xasprintf(cause, "PTRACE_SETOPTIONS %d: %s", th->tid,
		    strerror(errno));
		return -1;
	}
	return 0;
}

static void
task_ended(struct mig_task *t, struct mig_thread *th, int exited, int code,
    char **cause)
{
	th->dead = 1;
	if (th->tid == t->tgid || t->nth == 1)
		t->dead = 1;
	if (th->tid == t->tgid)
		xasprintf(cause, "process %d %s %d", t->tgid, exited ?
		    "exited with status" : "was killed by signal", code);
	else
		xasprintf(cause, "thread %d of process %d %s %d", th->tid,
		    t->tgid, exited ? "exited with status" :
		    "was killed by signal", code);
}

/*
 * The thread's next stop, in *status; -1 with *cause if it ended. The end
 * of a process we did not spawn is seen, not reaped: whoever else waits
 * for it must see it too (a guest agent's R is its child, a deputy's P
 * reports to the deputy's own loop). Its other threads' ends are ours to
 * reap: the kernel reports the process's end only after theirs.
 */
int
task_wait(struct mig_task *t, struct mig_thread *th, int *status,
    char **cause)
{
	siginfo_t	si;
	pid_t		r;

	memset(&si, 0, sizeof si);
	while (!t->spawned && th->tid == t->tgid && waitid(P_PID, th->tid,
	    &si, WEXITED | WNOWAIT | __WALL) == -1 && errno == EINTR)
		;
	if (si.si_code == CLD_EXITED || si.si_code == CLD_KILLED ||
	    si.si_code == CLD_DUMPED) {
		task_ended(t, th, si.si_code == CLD_EXITED, si.si_status,
		    cause);
		return -1;
	}
	while ((r = waitpid(th->tid, status, __WALL)) == -1 && errno == EINTR)
		;
	if (r == -1) {
		xasprintf(cause, "wait for thread %d of process %d: %s",
		    th->tid, t->tgid, strerror(errno));
		return -1;
	}
	if (WIFEXITED(*status) || WIFSIGNALED(*status)) {
		task_ended(t, th, WIFEXITED(*status), WIFEXITED(*status) ?
		    WEXITSTATUS(*status) : WTERMSIG(*status), cause);
		return -1;
	}
	return 0;
}

/* Note a signal our stop took from the thread: it is given back later. */
int
task_steal(struct mig_task *t, struct mig_thread *th, char **cause)
{
	siginfo_t	si;

	if (ptrace(PTRACE_GETSIGINFO, th->tid, 0, &si) == -1) {
		xasprintf(cause, "PTRACE_GETSIGINFO %d: %s", th->tid,
		    strerror(errno));
		return -1;
	}
	th->stolen = xreallocarray(th->stolen, th->nstolen + 1,
	    sizeof *th->stolen);
	th->stolen[th->nstolen++] = si;
	return 0;
}

/*
 * Block every signal in the stopped thread for the time it runs a call of
 * ours, its own mask kept in th->mask (task_syscall, seccomp.c). Our
 * injected calls then never take a signal: one taken had to be put back,
 * and a signal put back was taken again by the next call and, once no
 * call came to give it back, lost. Signals sent meanwhile wait in the
 * kernel's queues, in their order and with their siginfo. Between our
 * calls the thread has its own mask (task_unmask): what a dump reads and
 * a restore sets, and what it goes on with should we die.
 */
int
task_mask(struct mig_thread *th, char **cause)
{
	uint64_t	all = ~0ULL;

	if (th->masked)
		return 0;
	if (ptrace(PTRACE_GETSIGMASK, th->tid, sizeof th->mask,
	    &th->mask) == -1 || ptrace(PTRACE_SETSIGMASK, th->tid,
	    sizeof all, &all) == -1) {
		xasprintf(cause, "signal mask of %d: %s", th->tid,
		    strerror(errno));
		return -1;
	}
	th->masked = 1;
	return 0;
}

/* The thread's own mask back, our call over. */
int
task_unmask(struct mig_thread *th, char **cause)
{
	if (!th->masked)
		return 0;
	if (ptrace(PTRACE_SETSIGMASK, th->tid, sizeof th->mask,
	    &th->mask) == -1) {
		xasprintf(cause, "signal mask of %d: %s", th->tid,
		    strerror(errno));
		return -1;
	}
	th->masked = 0;
	return 0;
}

static int
task_cont(struct mig_thread *th, char **cause)
{
	if (ptrace(PTRACE_SYSCALL, th->tid, 0, 0) == -1) {
		xasprintf(cause, "ptrace resume %d: %s", th->tid,
		    strerror(errno));
		return -1;
	}
	return 0;
}

/*
 * The thread resumed, wait for its next syscall stop; group stops and
 * interrupts are stepped over, signals set aside, and the thread a clone
 * made noted.
 */
int
task_await(struct mig_task *t, struct mig_thread *th, char **cause)
{
	unsigned long	msg;
	int		status;

	for (;;) {
		if (task_wait(t, th, &status, cause) == -1)
			return -1;
		if (WIFSTOPPED(status) && WSTOPSIG(status) == (SIGTRAP | 0x80))
			return 0;
		if (WIFSTOPPED(status) &&
		    (status >> 16) == PTRACE_EVENT_CLONE &&
		    ptrace(PTRACE_GETEVENTMSG, th->tid, 0, &msg) == 0)
			t->cloned = msg;
		if (WIFSTOPPED(status) && (status >> 16) == 0 &&
		    task_steal(t, th, cause) == -1)
			return -1;
		if (task_cont(th, cause) == -1)
			return -1;
	}
}

/* Resume the thread until its next syscall stop. */
static int
task_step(struct mig_task *t, struct mig_thread *th, char **cause)
{
	if (task_cont(th, cause) == -1)
		return -1;
	return task_await(t, th, cause);
}

int
task_getregs(struct mig_thread *th, struct user_regs_struct *r, char **cause)
{
	if (ptrace(PTRACE_GETREGS, th->tid, 0, r) == -1) {
		xasprintf(cause, "PTRACE_GETREGS %d: %s", th->tid,
		    strerror(errno));
		return -1;
	}
	return 0;
}

int
task_setregs(struct mig_thread *th, const struct user_regs_struct *r,
    char **cause)
{
	if (ptrace(PTRACE_SETREGS, th->tid, 0, r) == -1) {
		xasprintf(cause, "PTRACE_SETREGS %d: %s", th->tid,
		    strerror(errno));
		return -1;
	}
	return 0;
}

/* Point the stopped thread at the syscall instruction with these. */
int
task_aim(struct mig_task *t, struct mig_thread *th, long nr,
    const sysargs a, char **cause)
{
	struct user_regs_struct	 r;

	r = th->regs;
	r.rax = nr;
	r.orig_rax = -1;	/* no restart logic on the way out */
	r.rip = t->sysc;
	r.rdi = a[0];
	r.rsi = a[1];
	r.rdx = a[2];
	r.r10 = a[3];
	r.r8 = a[4];
	r.r9 = a[5];
	if (task_setregs(th, &r, cause) == -1)
		return -1;
	th->regs_dirty = 1;
	return 0;
}

/*
 * Run system call nr with arguments a in thread th; its return value (a
 * negative errno on failure) goes to *rv. -1 only when the thread could
 * not be driven, the cause kept for task_cause().
 */
int
task_syscall(struct mig_task *t, struct mig_thread *th, long *rv, long nr,
    const sysargs a)
{
	struct user_regs_struct	 r;
	struct __ptrace_syscall_info info;
	char			*cause = NULL, *ignored = NULL;
	/* a call that sets the mask itself is not undone after it */
	int			 mask = nr != SYS_rt_sigprocmask;

	if (th->running) {
		xasprintf(&cause, "thread %d of process %d is running, not "
		    "held", th->vtid, t->vtgid);
		goto fail;
	}
	if (th->dead) {
		xasprintf(&cause, "thread %d of process %d has ended",
		    th->vtid, t->vtgid);
		goto fail;
	}
	if ((mask && task_mask(th, &cause) == -1) ||
	    task_aim(t, th, nr, a, &cause) == -1)
		goto fail;
	for (;;) {
		if (task_step(t, th, &cause) == -1)
			goto fail;
		if (ptrace(PTRACE_GET_SYSCALL_INFO, th->tid, sizeof info,
		    &info) == -1) {
			xasprintf(&cause, "PTRACE_GET_SYSCALL_INFO: %s",
			    strerror(errno));
			goto fail;
		}
		if (info.op == PTRACE_SYSCALL_INFO_EXIT)
			break;
	}
	if (task_getregs(th, &r, &cause) == -1 ||
	    task_unmask(th, &cause) == -1)
		goto fail;
	*rv = (long)r.rax;
	return 0;

fail:
	if (!th->dead && task_unmask(th, &ignored) == -1)
		free(ignored);
	free(t->cause);
	t->cause = cause;
	return -1;
}

/*
 * Run a system call that must succeed in thread th, its result in
 * t->last_rv; name says what it was for in the error, which is kept for
 * task_cause(). The arguments are a (sysargs){ ... }: converted as for a
 * prototype, not passed through varargs, so that an int -1 arrives as a
 * 64-bit -1.
 */
int
task_tsys_ok(struct mig_task *t, struct mig_thread *th, const char *name,
    long nr, const sysargs a)
{
	long	rv;

	if (task_syscall(t, th, &rv, nr, a) == -1)
		return -1;
	if (rv < 0 && rv > -4096) {
		free(t->cause);
		if (th == t->lead)
			xasprintf(&t->cause, "%s in process %d: %s", name,
			    t->vtgid, strerror(-rv));
		else
			xasprintf(&t->cause, "%s in thread %d of process %d: "
			    "%s", name, th->vtid, t->vtgid, strerror(-rv));
		return -1;
	}
	t->last_rv = rv;
	return 0;
}

/* The same in the thread process-wide calls go through. */
int
task_sys_ok(struct mig_task *t, const char *name, long nr, const sysargs a)
{
	return task_tsys_ok(t, t->lead, name, nr, a);
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
		    len, (unsigned long long)addr, t->tgid,
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
		    len, (unsigned long long)addr, t->tgid,
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
		    "0x%lx, not 0x%llx", t->tgid, t->last_rv,
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
	if (proc_vdso(pid, start, end) == 0)
		return 0;
	if (errno == ESRCH || errno == ENOENT)
		xasprintf(cause, "process %d %s", pid, errno == ESRCH ?
		    "is ending: its memory is gone" : "has no vDSO");
	else
		xasprintf(cause, "/proc/%d/maps: %s", pid, strerror(errno));
	return -1;
}

/* Find a syscall instruction (0f 05) in the vDSO at [start, end). */
static int
task_find_sysc(struct mig_task *t, uint64_t start, uint64_t end,
    char **cause)
{
	uint8_t		*buf;
	size_t		 i, len = end - start;

	if (len == 0 || len > (1 << 20)) {
		xasprintf(cause, "vDSO of process %d has odd size %zu", t->tgid,
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
	    t->tgid);
	return -1;
}

/*
 * Every thread stopped: their registers, their own ids and the
 * process's, and the syscall instruction to inject calls through.
 */
int
task_ready(struct mig_task *t, char **cause)
{
	struct mig_thread	 leader = { .tid = t->tgid };
	uint64_t		 s, e;
	size_t			 i;

	for (i = 0; i < t->nth; i++) {
		if (task_getregs(t->th[i], &t->th[i]->regs, cause) == -1 ||
		    task_vtid(t, t->th[i], cause) == -1)
			return -1;
	}
	if (task_vtid(t, &leader, cause) == -1)
		return -1;
	t->vtgid = leader.vtid;
	if (task_vdso(t->pid, &s, &e, cause) == -1)
		return -1;
	return task_find_sysc(t, s, e, cause);
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

/*
 * Queue a signal in the process as if it had never left its queue:
 * thread-directed to th, or process-directed. The kernel lets a process
 * queue a siginfo that claims a sender (kill, tgkill) only to itself, as
 * the thread the call names, so each is queued from there: a thread's
 * own from that thread, a process-directed one from the main thread.
 */
int
task_requeue(struct mig_task *t, struct mig_thread *th, const siginfo_t *si,
    int shared, char **cause)
{
	if (task_write(t, t->scratch, si, sizeof *si, cause) == -1)
		return -1;
	if (shared) {
		if (task_sys_ok(t, "rt_sigqueueinfo", SYS_rt_sigqueueinfo,
		    (sysargs){ t->vtgid, si->si_signo, t->scratch }) == -1)
			goto inject;
	} else if (task_tsys_ok(t, th, "rt_tgsigqueueinfo",
	    SYS_rt_tgsigqueueinfo, (sysargs){ t->vtgid, th->vtid,
	    si->si_signo, t->scratch }) == -1)
		goto inject;
	return 0;
inject:
	*cause = task_cause(t);
	return -1;
}

/*
 * Give every thread back the signals our stops took from it, as it had
 * them; the scratch area must be mapped. Each call of ours blocks every
 * signal (task_mask): what is queued stays queued through those that
 * follow.
 */
int
task_requeue_stolen(struct mig_task *t, char **cause)
{
	struct mig_thread	*th;
	size_t			 i, j;
	int			 rc = 0;

	for (i = 0; i < t->nth && rc == 0; i++) {
		th = t->th[i];
		if (th->nstolen == 0)
			continue;
		for (j = 0; j < th->nstolen && rc == 0; j++)
			rc = task_requeue(t, th, &th->stolen[j], 0, cause);
		th->nstolen = 0;
	}
	return rc;
}

/*
 * Put back the registers each thread is to resume with, an interrupted
 * call restarted as the kernel would have after our injected calls (which
 * return through syscall exit, where the restart logic does not run).
 * Done as soon as the injected calls are over, so that a task whose
 * tracer dies goes on as it was.
 */
int
task_settle(struct mig_task *t, char **cause)
{
	struct mig_thread	*th;
	size_t			 i;

	for (i = 0; i < t->nth; i++) {
		th = t->th[i];
		if (!th->regs_dirty)
			continue;
		task_resumable(&th->regs);
		if (task_setregs(th, &th->regs, cause) == -1)
			return -1;
		th->regs_dirty = 0;
	}
	return 0;
}
