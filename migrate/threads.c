/*
 * What is each thread's, both ways: its registers (regs.c) and rseq
 * registration (rseq.c), signal mask, thread-directed pending signals,
 * alternate stack, robust list, clear-child-tid address, name and CPU
 * time (its own here and what it carried from before); which
 * threads a restore makes, keeps and ends; and what a dump refuses of
 * them.
 *
 * Thread ids are part of a process's memory: glibc keeps each thread's
 * in its descriptor (pthread_kill, pthread_join, raise), and
 * error-checking, recursive, robust and priority-inheritance mutexes keep
 * their owners' tids. So an image of more than one thread (or of one that
 * is not the main thread) is restored only with every id as it was: its
 * pid kept (mig_spawn_pid, or an adopted process of that pid) and each
 * thread made with its own tid (clone3 with set_tid, injected). A single
 * thread may come back under a new pid, its cached tid rewritten, as it
 * always could.
 */
#include <sys/ptrace.h>
#include <sys/prctl.h>
#include <sys/syscall.h>

#include <linux/kcmp.h>

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/osm.h"
#include "internal.h"

#define COMM_MAX		64
#define ROBUST_HEAD_LEN		24	/* struct robust_list_head */
#define SS_AUTODISARM		(1U << 31)

/* The kernel's stack_t on x86_64. */
struct kstack {
	uint64_t	sp;
	int32_t		flags;
	int32_t		pad;
	uint64_t	size;
};

/* --- dump ------------------------------------------------------------ */

/* Credentials and filters are each thread's; a restore gives all one. */
static const char *threads_same_keys[] = {
	"Uid", "Gid", "Groups", "CapInh", "CapPrm", "CapEff", "NoNewPrivs",
	"Seccomp", "Seccomp_filters",
};

static int
threads_kcmp(struct mig_task *t, struct mig_thread *th, int type,
    const char *what, char **cause)
{
	long	r;

	r = syscall(SYS_kcmp, t->lead->tid, th->tid, type, 0, 0);
	if (r == -1 && (errno == ENOSYS || errno == EPERM))
		return 0;	/* no kcmp here: nothing to compare with */
	if (r == -1) {
		xasprintf(cause, "kcmp %d %d: %s", t->lead->tid, th->tid,
		    strerror(errno));
		return -1;
	}
	if (r != 0) {
		xasprintf(cause, "thread %d of process %d has %s of its own, "
		    "which a restore would not keep", th->vtid, t->vtgid, what);
		return -1;
	}
	return 0;
}

/*
 * What the image cannot say of one thread: credentials, capabilities or
 * seccomp filters of its own (one raw setresuid in a thread), a file
 * table or working directory of its own (unshare in a thread). The image
 * holds them once, for the process; carrying them per thread is possible,
 * and not done.
 */
int
threads_refuse(struct mig_task *t, char **cause)
{
	struct mig_thread	*th;
	char			 a[1024], b[1024];
	size_t			 i, k;

	for (i = 0; i < t->nth; i++) {
		th = t->th[i];
		if (th == t->lead)
			continue;
		for (k = 0; k < nitems(threads_same_keys); k++) {
			if (task_thread_status(t, t->lead, threads_same_keys[k],
			    a, sizeof a, cause) == -1 ||
			    task_thread_status(t, th, threads_same_keys[k],
			    b, sizeof b, cause) == -1)
				return -1;
			if (strcmp(a, b) == 0)
				continue;
			xasprintf(cause, "threads %d and %d of process %d "
			    "differ in %s (%s, %s): a restore gives every "
			    "thread the same", t->lead->vtid, th->vtid,
			    t->vtgid, threads_same_keys[k], a, b);
			return -1;
		}
		if (threads_kcmp(t, th, KCMP_FILES, "a file table",
		    cause) == -1 ||
		    threads_kcmp(t, th, KCMP_FS, "a working directory",
		    cause) == -1)
			return -1;
	}
	return 0;
}

static int
threads_comm(struct mig_task *t, struct mig_thread *th, char **out,
    char **cause)
{
	char	path[96], buf[COMM_MAX + 2];

	snprintf(path, sizeof path, "/proc/%d/task/%d/comm", t->tgid,
	    th->tid);
	if (read_file_str(path, buf, sizeof buf) == -1) {
		xasprintf(cause, "%s: %s", path, strerror(errno));
		return -1;
	}
	buf[strcspn(buf, "\n")] = '\0';
	*out = xstrdup(buf);
	return 0;
}

/* The thread's own pending signals, those our stops took first. */
static int
threads_pending(struct mig_thread *th, Osm__ImgThread *it, char **cause)
{
	size_t	i, n;

	if (sig_peek(th, 0, &it->pending, &it->n_pending, cause) == -1)
		return -1;
	if (th->nstolen == 0)
		return 0;
	n = it->n_pending + th->nstolen;
	it->pending = xreallocarray(it->pending, n, sizeof *it->pending);
	memmove(it->pending + th->nstolen, it->pending,
	    it->n_pending * sizeof *it->pending);
	for (i = 0; i < th->nstolen; i++) {
		it->pending[i].data = xmalloc(sizeof th->stolen[i]);
		memcpy(it->pending[i].data, &th->stolen[i],
		    sizeof th->stolen[i]);
		it->pending[i].len = sizeof th->stolen[i];
	}
	it->n_pending = n;
	return 0;
}

/*
 * A call about the thread's alternate stack, made as if from off it: our
 * calls have no stack, and one on the stack may not change it.
 */
static int
threads_altstack(struct mig_task *t, struct mig_thread *th, uint64_t ss,
    uint64_t old)
{
	uint64_t	rsp = th->regs.rsp;
	int		rc;

	th->regs.rsp = 0;
	rc = task_tsys_ok(t, th, "sigaltstack", SYS_sigaltstack,
	    (sysargs){ ss, old });
	th->regs.rsp = rsp;
	return rc;
}

/*
 * Dumps of t from now on record each thread's CPU time as the kernel's
 * plus what c says it carried from before (threads c does not name
 * carried nothing), and the process's plus process_ns; c is the caller's,
 * and must outlive t's dumps.
 */
void
mig_cpu_carried(struct mig_task *t, uint64_t process_ns,
    const struct mig_cpu *c, size_t n)
{
	t->cpu_process = process_ns;
	t->cpu = c;
	t->ncpu = n;
}

/* The CPU time thread vtid had used when the image restored was dumped. */
int
mig_thread_cpu(const struct mig_task *t, pid_t vtid, uint64_t *ns)
{
	const struct mig_thread	*th;

	if ((th = task_thread(t, vtid)) == NULL || !th->has_cpu_img)
		return -1;
	*ns = th->cpu_img;
	return 0;
}

/*
 * The process's CPU time when the image restored was dumped, and how the
 * kernel there split it (user and system ticks).
 */
int
mig_process_cpu(const struct mig_task *t, uint64_t *ns, uint64_t *utime,
    uint64_t *stime)
{
	if (!t->has_cpu_img)
		return -1;
	*ns = t->cpu_img[0];
	*utime = t->cpu_img[1];
	*stime = t->cpu_img[2];
	return 0;
}

/*
 * Dumps of t from now on record the process's user and system time as
 * its times() and getrusage() could read them at most (ImgTask
 * cpu_user_ns, cpu_sys_ns): the kernel's (proc_usage_bound) plus
 * user_ns and sys_ns, what it carried of each.
 */
void
mig_usage_carried(struct mig_task *t, uint64_t user_ns, uint64_t sys_ns)
{
	t->cpu_usage[0] = user_ns;
	t->cpu_usage[1] = sys_ns;
}

/*
 * The process's user and system time the image restored recorded: what
 * its times() and getrusage() must never say less than.
 */
int
mig_process_usage(const struct mig_task *t, uint64_t *user_ns,
    uint64_t *sys_ns)
{
	if (!t->has_usage_img)
		return -1;
	*user_ns = t->usage_img[0];
	*sys_ns = t->usage_img[1];
	return 0;
}

/* The thread's CPU time: its schedstat's (ns on the CPU), and carried. */
static int
threads_cpu(struct mig_task *t, struct mig_thread *th, uint64_t *ns,
    char **cause)
{
	size_t	i;

	if (proc_thread_cpu(t->tgid, th->tid, ns) == -1) {
		xasprintf(cause, "/proc/%d/task/%d/schedstat: %s", t->tgid,
		    th->tid, strerror(errno));
		return -1;
	}
	for (i = 0; i < t->ncpu; i++) {
		if (t->cpu[i].tid == th->vtid) {
			*ns += t->cpu[i].ns;
			break;
		}
	}
	return 0;
}

static int
threads_dump_one(struct mig_task *t, struct mig_thread *th,
    Osm__ImgThread *it, int flags, char **cause)
{
	struct kstack	 ks;
	long		 head;
	size_t		 hlen;
	uint64_t	 v;

	it->tid = th->vtid;
	if (threads_comm(t, th, &it->comm, cause) == -1 ||
	    threads_cpu(t, th, &it->cpu_ns, cause) == -1)
		return -1;
	it->has_cpu_ns = 1;
	it->regs = xmalloc(sizeof *it->regs);
	if (regs_dump(t, th, it->regs, cause) == -1)
		return -1;
	if (ptrace(PTRACE_GETSIGMASK, th->tid, sizeof it->blocked,
	    &it->blocked) == -1) {
		xasprintf(cause, "PTRACE_GETSIGMASK %d: %s", th->tid,
		    strerror(errno));
		return -1;
	}
	if ((!(flags & MIG_PENDING_STAY) &&
	    threads_pending(th, it, cause) == -1) ||
	    rseq_dump(th, it, cause) == -1)
		return -1;
	if (threads_altstack(t, th, 0, t->scratch) == -1)
		goto inject;
	if (task_read(t, t->scratch, &ks, sizeof ks, cause) == -1)
		return -1;
	it->altstack_sp = ks.sp;
	it->altstack_size = ks.size;
	it->altstack_flags = ks.flags & ~SS_ONSTACK;
	if (syscall(SYS_get_robust_list, th->tid, &head, &hlen) == -1) {
		xasprintf(cause, "get_robust_list %d: %s", th->tid,
		    strerror(errno));
		return -1;
	}
	it->robust_list = head;
	it->robust_list_len = hlen;
	if (task_tsys_ok(t, th, "PR_GET_TID_ADDRESS", SYS_prctl,
	    (sysargs){ PR_GET_TID_ADDRESS, t->scratch }) == -1)
		goto inject;
	if (task_read(t, t->scratch, &v, sizeof v, cause) == -1)
		return -1;
	it->clear_child_tid = v;
	return 0;
inject:
	*cause = task_cause(t);
	return -1;
}

/* Every thread's record, main first; the scratch area is mapped. */
int
threads_dump(struct mig_task *t, int flags, Osm__ImgThread ***out,
    size_t *n, char **cause)
{
	Osm__ImgThread	*it;
	size_t		 i;

	*out = xcalloc(t->nth, sizeof **out);
	*n = 0;
	for (i = 0; i < t->nth; i++) {
		it = xmalloc(sizeof *it);
		osm__img_thread__init(it);
		(*out)[(*n)++] = it;
		if (threads_dump_one(t, t->th[i], it, flags, cause) == -1)
			return -1;
	}
	return 0;
}

void
threads_free(Osm__ImgThread **v, size_t n)
{
	size_t	i, j;

	for (i = 0; i < n; i++) {
		free(v[i]->comm);
		regs_free(v[i]->regs);
		free(v[i]->regs);
		for (j = 0; j < v[i]->n_pending; j++)
			free(v[i]->pending[j].data);
		free(v[i]->pending);
		free(v[i]);
	}
	free(v);
}

/* --- checks ---------------------------------------------------------- */

/* The thread records, on paper: ids unique, the main thread first. */
int
threads_check(const Osm__ImgHeader *h, Osm__ImgThread **v, size_t n,
    char **cause)
{
	const Osm__ImgThread	*it;
	size_t			 i, j;

	if (n != h->threads || n == 0)
		goto bad;
	for (i = 0; i < n; i++) {
		it = v[i];
		if (it->tid <= 0 || (i > 0 && it->tid == h->pid) ||
		    strlen(it->comm) > COMM_MAX ||
		    it->n_pending > SIG_PENDING_MAX ||
		    sig_check_info(it->pending, it->n_pending) == -1 ||
		    (it->altstack_flags & ~(SS_DISABLE | SS_AUTODISARM)) != 0 ||
		    (it->has_rseq_addr && (!it->has_rseq_len ||
		    !it->has_rseq_sig || it->rseq_len > MIG_PAGE ||
		    it->rseq_addr >= MIG_TASK_SIZE)) ||
		    it->robust_list >= MIG_TASK_SIZE ||
		    (it->robust_list != 0 &&
		    it->robust_list_len != ROBUST_HEAD_LEN) ||
		    it->clear_child_tid >= MIG_TASK_SIZE)
			goto bad;
		if (regs_check(NULL, it->regs, cause) == -1)
			return -1;
		if (it->regs->xstate.len != v[0]->regs->xstate.len ||
		    it->regs->xfeatures != v[0]->regs->xfeatures)
			goto bad;
		for (j = 0; j < i; j++) {
			if (v[j]->tid == it->tid)
				goto bad;
		}
	}
	return 0;
bad:
	xasprintf(cause, "image corrupted: thread records");
	return -1;
}

/* Must the restore keep the image's pid and thread ids? */
int
mig_image_keeps_ids(const struct mig_image *mi)
{
	return mi->nthreads > 1 || mi->threads[0]->tid != mi->header->pid;
}

/*
 * Before the target changes: can its threads be the image's? Refused
 * where the ids would change: a process of another pid, or whose main
 * thread has ended when the image's has not.
 */
int
threads_check_target(struct mig_task *t, const struct mig_image *mi,
    char **cause)
{
	pid_t	pid = mi->header->pid;

	if (!mig_image_keeps_ids(mi))
		return 0;
	if (t->vtgid != pid) {
		xasprintf(cause, "process %d had %zu threads%s, whose ids the "
		    "restore must keep (glibc and mutexes hold them): it can "
		    "only be restored as pid %d (moscr restore and mosrun -R "
		    "do so in a PID namespace of its own), not %d", pid, mi->nthreads,
		    mi->threads[0]->tid != pid ? ", its main thread ended" :
		    "", pid, t->vtgid);
		return -1;
	}
	if (mi->threads[0]->tid == pid && task_thread(t, pid) == NULL) {
		xasprintf(cause, "the main thread of process %d has ended, "
		    "the image's has not", t->vtgid);
		return -1;
	}
	return 0;
}

/* --- restore --------------------------------------------------------- */

/* The target's thread image thread i goes into. */
static struct mig_thread *
threads_target(struct mig_task *t, const struct mig_image *mi, size_t i)
{
	if (!mig_image_keeps_ids(mi))
		return i == 0 ? t->lead : NULL;
	return task_thread(t, mi->threads[i]->tid);
}

static int
threads_in_image(struct mig_task *t, const struct mig_image *mi,
    const struct mig_thread *th)
{
	size_t	i;

	for (i = 0; i < mi->nthreads; i++) {
		if (threads_target(t, mi, i) == th)
			return 1;
	}
	return 0;
}

/*
 * The target's threads made the image's: each missing one made with its
 * id, each the image has not ended (but the main thread, which goes
 * last: threads_end_main). A failure to make one ends those made before
 * it, and changes nothing else.
 */
int
threads_make(struct mig_task *t, const struct mig_image *mi, char **cause)
{
	struct mig_thread	**made, *th;
	size_t			  i, nmade = 0;
	int			  ours = 0, rc = -1;
	char			 *why = NULL;

	made = xcalloc(mi->nthreads, sizeof *made);
	for (i = 0; i < mi->nthreads; i++) {
		if (threads_target(t, mi, i) != NULL)
			continue;
		if (t->scratch == 0) {
			if (task_scratch(t, 0, MIG_PAGE, cause) == -1)
				goto out;
			ours = 1;
		}
		if (clone_new(t, mi->threads[i]->tid, &th, cause) == -1)
			goto undo;
		made[nmade++] = th;
	}
	for (i = t->nth; i > 0; i--) {
		th = t->th[i - 1];
		if (th->tid != t->tgid && !threads_in_image(t, mi, th) &&
		    clone_end(t, th, cause) == -1)
			goto out;
	}
	rc = 0;
	goto out;
undo:
	while (nmade > 0) {
		if (clone_end(t, made[--nmade], &why) == -1) {
			free(why);
			why = NULL;
		}
	}
out:
	if (ours && task_unscratch(t, rc == 0 ? cause : NULL) == -1)
		rc = -1;
	free(made);
	return rc;
}

static int
threads_restore_one(struct mig_task *t, struct mig_thread *th,
    const Osm__ImgThread *it, int flags, char **cause)
{
	struct kstack	 ks;
	siginfo_t	 si;
	uint32_t	 tid;
	size_t		 i;
	char		*c = NULL;

	if (task_write(t, t->scratch, it->comm, strlen(it->comm) + 1,
	    cause) == -1)
		return -1;
	if (task_tsys_ok(t, th, "PR_SET_NAME", SYS_prctl,
	    (sysargs){ PR_SET_NAME, t->scratch }) == -1 ||
	    task_tsys_ok(t, th, "set_tid_address", SYS_set_tid_address,
	    (sysargs){ it->clear_child_tid }) == -1 ||
	    task_tsys_ok(t, th, "set_robust_list", SYS_set_robust_list,
	    (sysargs){ it->robust_list, ROBUST_HEAD_LEN }) == -1)
		goto inject;
	/*
	 * A lone thread under a new id: glibc keeps its id at the
	 * clear-child-tid address and trusts it (raise, mutex owners), so it
	 * gets the new one. Not with MIG_CONTEXT: a migrated process keeps
	 * its home pid, which its forwarded calls (getpid, tgkill) use.
	 */
	if (!(flags & MIG_CONTEXT) && th->vtid != it->tid &&
	    it->clear_child_tid != 0 && task_read(t, it->clear_child_tid,
	    &tid, sizeof tid, &c) == 0 && tid == (uint32_t)it->tid) {
		tid = th->vtid;
		if (task_write(t, it->clear_child_tid, &tid, sizeof tid,
		    cause) == -1)
			return -1;
	}
	free(c);

	memset(&ks, 0, sizeof ks);
	ks.sp = it->altstack_sp;
	ks.size = it->altstack_size;
	ks.flags = it->altstack_flags;
	if (task_write(t, t->scratch, &ks, sizeof ks, cause) == -1)
		return -1;
	if (threads_altstack(t, th, t->scratch, 0) == -1)
		goto inject;
	if (ptrace(PTRACE_SETSIGMASK, th->tid, sizeof it->blocked,
	    &it->blocked) == -1) {
		xasprintf(cause, "PTRACE_SETSIGMASK %d: %s", th->tid,
		    strerror(errno));
		return -1;
	}
	for (i = 0; i < it->n_pending; i++) {
		memcpy(&si, it->pending[i].data, sizeof si);
		if (task_requeue(t, th, &si, 0, cause) == -1)
			return -1;
	}
	return 0;
inject:
	*cause = task_cause(t);
	return -1;
}

/* Each thread's state but its rseq and registers (threads_finish). */
int
threads_restore(struct mig_task *t, const struct mig_image *mi, int flags,
    char **cause)
{
	size_t			 i;
	struct mig_thread	*th;

	for (i = 0; i < mi->nthreads; i++) {
		th = threads_target(t, mi, i);
		if (threads_restore_one(t, th, mi->threads[i], flags,
		    cause) == -1)
			return -1;
		th->has_cpu_img = mi->threads[i]->has_cpu_ns;
		th->cpu_img = mi->threads[i]->cpu_ns;
	}
	return 0;
}

/*
 * The main thread, if the image's had ended: now, as pthread_exit, with
 * the process's name, which is its name (ps, /proc/PID/comm).
 */
int
threads_end_main(struct mig_task *t, const struct mig_image *mi,
    char **cause)
{
	struct mig_thread	*th;
	const char		*comm = mi->header->comm;

	if (!mig_image_keeps_ids(mi) || mi->threads[0]->tid == t->vtgid ||
	    (th = task_thread(t, t->vtgid)) == NULL)
		return 0;
	if (task_write(t, t->scratch, comm, strlen(comm) + 1, cause) == -1)
		return -1;
	if (task_tsys_ok(t, th, "PR_SET_NAME", SYS_prctl,
	    (sysargs){ PR_SET_NAME, t->scratch }) == -1) {
		*cause = task_cause(t);
		return -1;
	}
	return clone_end(t, th, cause);
}

/*
 * Last of all: each thread's rseq area registered (after it, no injected
 * call may return to user space in that thread) and its registers.
 */
int
threads_finish(struct mig_task *t, const struct mig_image *mi,
    char **cause)
{
	struct mig_thread	*th;
	size_t			 i;

	for (i = 0; i < mi->nthreads; i++) {
		th = threads_target(t, mi, i);
		if (rseq_restore(t, th, mi->threads[i], cause) == -1 ||
		    regs_restore(th, mi->threads[i]->regs, cause) == -1)
			return -1;
	}
	return 0;
}
