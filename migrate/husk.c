/*
 * The husk: what stays of a process at home while it runs on another node.
 * Its memory is released; its identity, files and children stay. A small
 * stub serves the calls forwarded from the running copy in the husk's own
 * context: it waits on a futex in a memory area it shares with its deputy
 * (a memfd both map), runs the call the deputy wrote there on the
 * arguments laid out there, and traps. One wakeup each way per call, and
 * no copy: the deputy reads and writes the call's memory in place.
 *
 * While the stub waits every signal is unblocked, so a signal sent to the
 * process stops the husk for its deputy, who passes it on. When the
 * process comes home mig_restore fills the husk again, stub and shared
 * area going with its old memory; when it ends away, the husk ends the
 * same way.
 */
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include <linux/futex.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/osm.h"
#include "migrate.h"

#define HUSK_AREAS_MAX	65536
#define HUSK_PATH	0x100	/* where in the stub's page a path goes */

/*
 * The stub, with rdi pointing at the shared control page:
 *
 *	1: futex(&ctl->kick, FUTEX_WAIT, 0, NULL)	; shared futex
 *	   if (ctl->kick == 0) goto 1
 *	   rax = ctl->nr; rsi..r9 = ctl->args[1..5]; rdi = ctl->args[0]
 *	   syscall
 *	   int3						; the deputy's turn
 */
static const uint8_t husk_stub[] = {
	0xb8, 0xca, 0x00, 0x00, 0x00,	/* mov $SYS_futex, %eax */
	0x31, 0xf6,			/* xor %esi, %esi */
	0x31, 0xd2,			/* xor %edx, %edx */
	0x45, 0x31, 0xd2,		/* xor %r10d, %r10d */
	0x0f, 0x05,			/* syscall */
	0x83, 0x3f, 0x00,		/* cmpl $0, (%rdi) */
	0x74, 0xed,			/* je 1b */
	0x48, 0x8b, 0x47, 0x08,		/* mov 0x08(%rdi), %rax */
	0x48, 0x8b, 0x77, 0x18,		/* mov 0x18(%rdi), %rsi */
	0x48, 0x8b, 0x57, 0x20,		/* mov 0x20(%rdi), %rdx */
	0x4c, 0x8b, 0x57, 0x28,		/* mov 0x28(%rdi), %r10 */
	0x4c, 0x8b, 0x47, 0x30,		/* mov 0x30(%rdi), %r8 */
	0x4c, 0x8b, 0x4f, 0x38,		/* mov 0x38(%rdi), %r9 */
	0x48, 0x8b, 0x7f, 0x10,		/* mov 0x10(%rdi), %rdi */
	0x0f, 0x05,			/* syscall */
	0xcc,				/* int3 */
};
#define HUSK_AFTER_CALL	0x31	/* where the call's syscall returns to */
#define HUSK_AFTER_TRAP	0x32	/* where the trap leaves rip */

/* The control page, the first page of the shared area. */
struct husk_ctl {
	uint32_t	kick;		/* the futex: 1 while a call is asked */
	uint32_t	pad;
	int64_t		nr;
	uint64_t	args[6];
};

static int
husk_special(const char *name)
{
	return strcmp(name, "[vdso]") == 0 || strcmp(name, "[vvar]") == 0 ||
	    strcmp(name, "[vvar_vclock]") == 0 ||
	    strcmp(name, "[vsyscall]") == 0;
}

/* Release every area but the kernel's, after unregistering rseq. */
static int
husk_unmap(struct mig_task *t, char **cause)
{
	char		 path[64], line[512], name[256];
	uint64_t	*areas = NULL;
	unsigned long	 start, end;
	size_t		 n = 0, i;
	FILE		*f;
	int		 rc = -1;

	/* The kernel writes into the rseq area at every return to user. */
	if (core_rseq_unregister(t, cause) == -1)
		return -1;
	snprintf(path, sizeof path, "/proc/%d/maps", t->pid);
	if ((f = fopen(path, "re")) == NULL) {
		xasprintf(cause, "%s: %s", path, strerror(errno));
		return -1;
	}
	while (fgets(line, sizeof line, f) != NULL && n < HUSK_AREAS_MAX) {
		name[0] = '\0';
		if (sscanf(line, "%lx-%lx %*s %*s %*s %*s %255s", &start, &end,
		    name) < 2 || husk_special(name))
			continue;
		areas = xreallocarray(areas, n + 1, 2 * sizeof *areas);
		areas[2 * n] = start;
		areas[2 * n + 1] = end - start;
		n++;
	}
	fclose(f);
	for (i = 0; i < n; i++)
		if (task_sys_ok(t, "munmap", SYS_munmap, (sysargs){ areas[2 * i],
		    areas[2 * i + 1] }) == -1) {
			*cause = task_cause(t);
			goto out;
		}
	rc = 0;
out:
	free(areas);
	return rc;
}

/*
 * Map our memfd, of len bytes, in the task: it opens it through our /proc
 * entry, the path being at addr in its memory. Sets h->base.
 */
static int
husk_map(struct mig_husk *h, uint64_t addr, size_t len, char **cause)
{
	struct mig_task	*t = h->t;
	long		 fd;

	if (task_sys_ok(t, "open the husk's memory", SYS_openat,
	    (sysargs){ AT_FDCWD, addr, O_RDWR | O_CLOEXEC }) == -1)
		goto inject;
	fd = t->last_rv;
	if (task_sys_ok(t, "mmap the husk's memory", SYS_mmap, (sysargs){ 0,
	    len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0 }) == -1) {
		task_sys_ok(t, "close", SYS_close, (sysargs){ fd });
		goto inject;
	}
	h->base = t->last_rv;
	if (task_sys_ok(t, "close", SYS_close, (sysargs){ fd }) == -1)
		goto inject;
	return 0;
inject:
	*cause = task_cause(t);
	return -1;
}

static int
husk_path(const struct mig_husk *h, char *buf, size_t size)
{
	return snprintf(buf, size, "/proc/%d/fd/%d", (int)getpid(),
	    h->memfd) >= (int)size ? -1 : 0;
}

/*
 * Make the stopped task a husk with a scratch area of scratch bytes: its
 * memory released, the stub and the shared area in place. It stays
 * stopped; mig_husk_run starts the stub.
 */
int
mig_husk_make(struct mig_task *t, size_t scratch, struct mig_husk *h,
    char **cause)
{
	char	path[64];

	memset(h, 0, sizeof *h);
	h->t = t;
	h->memfd = -1;
	h->shm = MAP_FAILED;
	h->len = MIG_PAGE + scratch;
	if ((h->memfd = memfd_create("osmosis-husk", MFD_CLOEXEC)) == -1 ||
	    ftruncate(h->memfd, h->len) == -1 ||
	    (h->shm = mmap(NULL, h->len, PROT_READ | PROT_WRITE, MAP_SHARED,
	    h->memfd, 0)) == MAP_FAILED) {
		xasprintf(cause, "the husk's memory: %s", strerror(errno));
		goto fail;
	}
	if (husk_unmap(t, cause) == -1)
		goto fail;
	/* The stub's page: its code, and for now the path to our memfd. */
	if (task_sys_ok(t, "mmap the stub", SYS_mmap, (sysargs){ 0, MIG_PAGE,
	    PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1,
	    0 }) == -1) {
		*cause = task_cause(t);
		goto fail;
	}
	h->code = t->last_rv;
	if (husk_path(h, path, sizeof path) == -1 ||
	    task_write(t, h->code, husk_stub, sizeof husk_stub, cause) == -1 ||
	    task_write(t, h->code + HUSK_PATH, path, strlen(path) + 1,
	    cause) == -1 ||
	    husk_map(h, h->code + HUSK_PATH, h->len, cause) == -1)
		goto fail;
	if (task_sys_ok(t, "mprotect the stub", SYS_mprotect, (sysargs){
	    h->code, MIG_PAGE, PROT_READ | PROT_EXEC }) == -1) {
		*cause = task_cause(t);
		goto fail;
	}
	return 0;
fail:
	mig_husk_free(h);
	return -1;
}

void
mig_husk_free(struct mig_husk *h)
{
	if (h->shm != MAP_FAILED && h->shm != NULL)
		munmap(h->shm, h->len);
	if (h->memfd != -1)
		close(h->memfd);
	h->shm = MAP_FAILED;
	h->memfd = -1;
}

/* Where the forwarded calls' memory is: ours, and the task's. */
uint8_t *
mig_husk_scratch(const struct mig_husk *h, uint64_t *base, size_t *len)
{
	*base = h->base + MIG_PAGE;
	*len = h->len - MIG_PAGE;
	return h->shm + MIG_PAGE;
}

/*
 * Start (or resume) the stub waiting for calls: after mig_husk_make, a hold,
 * or a call returned (other stops resume with mig_husk_continue).
 */
int
mig_husk_run(struct mig_husk *h, char **cause)
{
	struct user_regs_struct	r = h->t->regs;

	r.rip = h->code;
	r.rdi = h->base;
	r.orig_rax = -1;
	r.rax = 0;
	if (ptrace(PTRACE_SETREGS, h->t->pid, 0, &r) == -1 ||
	    ptrace(PTRACE_CONT, h->t->pid, 0, 0) == -1) {
		xasprintf(cause, "starting the stub of %d: %s", h->t->pid,
		    strerror(errno));
		return -1;
	}
	h->t->regs_dirty = 1;
	h->running = 1;
	return 0;
}

/* Ask the waiting stub to run a call; its memory is laid out already. */
void
mig_husk_call(struct mig_husk *h, long nr, const uint64_t *args)
{
	struct husk_ctl	*c = (struct husk_ctl *)h->shm;

	c->nr = nr;
	memcpy(c->args, args, sizeof c->args);
	__atomic_store_n(&c->kick, 1, __ATOMIC_RELEASE);
	syscall(SYS_futex, &c->kick, FUTEX_WAKE, 1, NULL, NULL, 0);
	h->busy = 1;
}

/*
 * A ptrace stop of the running husk: the call's return (*rv), a signal
 * for the process (*si), or another stop. A call a signal or an interrupt
 * broke off is reported as it returned (a restart code) rather than
 * restarted here: the running copy decides, by its own signal state.
 */
enum mig_husk_stop
mig_husk_stopped(struct mig_husk *h, int status, long *rv, siginfo_t *si)
{
	struct user_regs_struct	r;
	pid_t			pid = h->t->pid;
	int			got;

	h->running = 0;
	if (ptrace(PTRACE_GETREGS, pid, 0, &r) == -1)
		return MIG_HUSK_OTHER;
	if (h->busy && r.rip == h->code + HUSK_AFTER_CALL &&
	    (long)r.rax <= -512 && (long)r.rax >= -516) {
		r.orig_rax = -1;
		ptrace(PTRACE_SETREGS, pid, 0, &r);
	}
	if ((status >> 16) != 0 || WSTOPSIG(status) == (SIGTRAP | 0x80))
		return MIG_HUSK_OTHER;
	got = ptrace(PTRACE_GETSIGINFO, pid, 0, si) == 0;
	if (h->busy && WSTOPSIG(status) == SIGTRAP && got &&
	    si->si_code == SI_KERNEL && r.rip == h->code + HUSK_AFTER_TRAP) {
		*rv = (long)r.rax;
		__atomic_store_n(&((struct husk_ctl *)h->shm)->kick, 0,
		    __ATOMIC_RELEASE);
		h->busy = 0;
		return MIG_HUSK_RETURNED;
	}
	if (!got) {
		memset(si, 0, sizeof *si);
		si->si_signo = WSTOPSIG(status);
	}
	return MIG_HUSK_SIGNAL;
}

/* Resume the husk after one of its stops, with signal sig (0: none). */
int
mig_husk_continue(struct mig_husk *h, int sig, char **cause)
{
	if (ptrace(PTRACE_CONT, h->t->pid, 0, sig) == -1) {
		xasprintf(cause, "PTRACE_CONT %d: %s", h->t->pid,
		    strerror(errno));
		return -1;
	}
	h->running = 1;
	return 0;
}

/*
 * Stop the stub and leave the task stopped, for calls of our own or a
 * restore; a call it was running is abandoned (callers let it finish
 * first when its result matters). Signals taken meanwhile are kept
 * (mig_stolen).
 */
int
mig_husk_hold(struct mig_husk *h, char **cause)
{
	int	status;

	if (!h->running)
		return 0;
	if (ptrace(PTRACE_INTERRUPT, h->t->pid, 0, 0) == -1) {
		xasprintf(cause, "PTRACE_INTERRUPT %d: %s", h->t->pid,
		    strerror(errno));
		return -1;
	}
	/* Any stop answers the interrupt. */
	if (task_wait(h->t, &status, cause) == -1)
		return -1;
	if ((status >> 16) == 0 && WSTOPSIG(status) != SIGTRAP &&
	    task_steal(h->t, cause) == -1)
		return -1;
	h->running = h->busy = 0;
	return 0;
}

/* A larger scratch area, of at least want bytes; the stub is held. */
int
mig_husk_grow(struct mig_husk *h, size_t want, char **cause)
{
	struct mig_task	*t = h->t;
	size_t		 len = MIG_PAGE + want;
	uint64_t	 old = h->base;
	uint8_t		*p;
	char		*path = (char *)h->shm + MIG_PAGE;

	if (ftruncate(h->memfd, len) == -1 ||
	    (p = mremap(h->shm, h->len, len, MREMAP_MAYMOVE)) == MAP_FAILED) {
		xasprintf(cause, "growing the husk's memory: %s",
		    strerror(errno));
		return -1;
	}
	h->shm = p;
	path = (char *)h->shm + MIG_PAGE;
	/* the path in the old mapping, which the task still has */
	if (husk_path(h, path, 64) == -1 ||
	    husk_map(h, old + MIG_PAGE, len, cause) == -1)
		return -1;
	if (task_sys_ok(t, "munmap", SYS_munmap, (sysargs){ old,
	    h->len }) == -1) {
		*cause = task_cause(t);
		return -1;
	}
	h->len = len;
	return 0;
}

/*
 * End the held husk as its copy ended away: with exit code status (the
 * exit_group is started: the task is gone when the caller next sees it),
 * or, if signaled, ready to die of signal status: its default action
 * restored and every signal unblocked, for the caller to send the signal
 * and let it through.
 */
int
mig_end(struct mig_husk *h, int signaled, int status, char **cause)
{
	struct mig_task		*t = h->t;
	struct user_regs_struct	 r = t->regs;

	if (signaled)
		return mig_husk_default(h, status, cause) == -1 ||
		    mig_husk_unblock(h, cause) == -1 ? -1 : 0;
	r.rip = t->sysc;
	r.rax = SYS_exit_group;
	r.orig_rax = -1;
	r.rdi = status;
	if (ptrace(PTRACE_SETREGS, t->pid, 0, &r) == -1 ||
	    ptrace(PTRACE_CONT, t->pid, 0, 0) == -1) {
		xasprintf(cause, "exit_group in %d: %s", t->pid,
		    strerror(errno));
		return -1;
	}
	return 0;
}

/* Write a message on the held husk's descriptor fd, best effort. */
int
mig_say(struct mig_husk *h, int fd, const char *msg, size_t len)
{
	struct mig_task	*t = h->t;

	if (len > h->len - MIG_PAGE)
		len = h->len - MIG_PAGE;
	memcpy(h->shm + MIG_PAGE, msg, len);
	if (task_sys_ok(t, "write", SYS_write, (sysargs){ fd,
	    h->base + MIG_PAGE, len }) == -1) {
		free(task_cause(t));
		return -1;
	}
	return 0;
}

/* Set the signal mask of the held husk to nothing blocked. */
int
mig_husk_unblock(struct mig_husk *h, char **cause)
{
	memset(h->shm + MIG_PAGE, 0, 8);
	if (task_sys_ok(h->t, "rt_sigprocmask", SYS_rt_sigprocmask,
	    (sysargs){ SIG_SETMASK, h->base + MIG_PAGE, 0, 8 }) == -1) {
		*cause = task_cause(h->t);
		return -1;
	}
	return 0;
}

/* Give one signal SIG_DFL in the held husk (its handler is gone). */
int
mig_husk_default(struct mig_husk *h, int sig, char **cause)
{
	memset(h->shm + MIG_PAGE, 0, 32);
	if (task_sys_ok(h->t, "rt_sigaction", SYS_rt_sigaction, (sysargs){
	    sig, h->base + MIG_PAGE, 0, 8 }) == -1) {
		*cause = task_cause(h->t);
		return -1;
	}
	return 0;
}
