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
 * same way. Everything is done through migrate/'s public task calls.
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
#include "internal.h"

#define HUSK_PAGE	4096
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

/*
 * Map our memfd, of len bytes, in the task: it opens it through our /proc
 * entry, the path being at addr in its memory. Sets h->base.
 */
static int
husk_map(struct husk *h, uint64_t addr, size_t len, char **cause)
{
	char	*ignored = NULL;
	long	 fd, base;

	if (mig_call_ok(h->t, "open the husk's memory", &fd, SYS_openat,
	    (sysargs){ AT_FDCWD, addr, O_RDWR | O_CLOEXEC }, cause) == -1)
		return -1;
	if (mig_call_ok(h->t, "mmap the husk's memory", &base, SYS_mmap,
	    (sysargs){ 0, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0 },
	    cause) == -1) {
		if (mig_call_ok(h->t, "close", NULL, SYS_close,
		    (sysargs){ fd }, &ignored) == -1)
			free(ignored);
		return -1;
	}
	h->base = base;
	return mig_call_ok(h->t, "close", NULL, SYS_close, (sysargs){ fd },
	    cause);
}

static int
husk_path(const struct husk *h, char *buf, size_t size)
{
	return snprintf(buf, size, "/proc/%d/fd/%d", (int)getpid(),
	    h->memfd) >= (int)size ? -1 : 0;
}

/*
 * Make the stopped task a husk with a scratch area of scratch bytes: its
 * memory released, the stub and the shared area in place. It stays
 * stopped; husk_run starts the stub.
 */
int
husk_make(struct mig_task *t, size_t scratch, struct husk *h, char **cause)
{
	char	path[64];
	long	code;

	memset(h, 0, sizeof *h);
	h->t = t;
	h->memfd = -1;
	h->shm = MAP_FAILED;
	h->len = HUSK_PAGE + scratch;
	if ((h->memfd = memfd_create("osmosis-husk", MFD_CLOEXEC)) == -1 ||
	    ftruncate(h->memfd, h->len) == -1 ||
	    (h->shm = mmap(NULL, h->len, PROT_READ | PROT_WRITE, MAP_SHARED,
	    h->memfd, 0)) == MAP_FAILED) {
		xasprintf(cause, "the husk's memory: %s", strerror(errno));
		goto fail;
	}
	if (mig_empty(t, cause) == -1)
		goto fail;
	/* The stub's page: its code, and for now the path to our memfd. */
	if (mig_call_ok(t, "mmap the stub", &code, SYS_mmap, (sysargs){ 0,
	    HUSK_PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
	    -1, 0 }, cause) == -1)
		goto fail;
	h->code = code;
	if (husk_path(h, path, sizeof path) == -1 ||
	    mig_write(t, h->code, husk_stub, sizeof husk_stub, cause) == -1 ||
	    mig_write(t, h->code + HUSK_PATH, path, strlen(path) + 1,
	    cause) == -1 ||
	    husk_map(h, h->code + HUSK_PATH, h->len, cause) == -1 ||
	    mig_call_ok(t, "mprotect the stub", NULL, SYS_mprotect, (sysargs){
	    h->code, HUSK_PAGE, PROT_READ | PROT_EXEC }, cause) == -1)
		goto fail;
	return 0;
fail:
	husk_free(h);
	return -1;
}

void
husk_free(struct husk *h)
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
husk_scratch(const struct husk *h, uint64_t *base, size_t *len)
{
	*base = h->base + HUSK_PAGE;
	*len = h->len - HUSK_PAGE;
	return h->shm + HUSK_PAGE;
}

/*
 * Start (or resume) the stub waiting for calls: after husk_make, a hold,
 * or a call returned (other stops resume with husk_continue).
 */
int
husk_run(struct husk *h, char **cause)
{
	if (mig_jump(h->t, h->code, h->base, cause) == -1)
		return -1;
	h->running = 1;
	return 0;
}

/* Ask the waiting stub to run a call; its memory is laid out already. */
void
husk_call(struct husk *h, long nr, const uint64_t *args)
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
enum husk_stop
husk_stopped(struct husk *h, int status, long *rv, siginfo_t *si)
{
	struct user_regs_struct	r;
	pid_t			pid = mig_pid(h->t);
	int			got;

	h->running = 0;
	if (ptrace(PTRACE_GETREGS, pid, 0, &r) == -1)
		return HUSK_OTHER;
	if (h->busy && r.rip == h->code + HUSK_AFTER_CALL &&
	    (long)r.rax <= -512 && (long)r.rax >= -516) {
		r.orig_rax = -1;
		ptrace(PTRACE_SETREGS, pid, 0, &r);
	}
	if ((status >> 16) != 0 || WSTOPSIG(status) == (SIGTRAP | 0x80))
		return HUSK_OTHER;
	got = ptrace(PTRACE_GETSIGINFO, pid, 0, si) == 0;
	if (h->busy && WSTOPSIG(status) == SIGTRAP && got &&
	    si->si_code == SI_KERNEL && r.rip == h->code + HUSK_AFTER_TRAP) {
		*rv = (long)r.rax;
		__atomic_store_n(&((struct husk_ctl *)h->shm)->kick, 0,
		    __ATOMIC_RELEASE);
		h->busy = 0;
		return HUSK_RETURNED;
	}
	if (!got) {
		memset(si, 0, sizeof *si);
		si->si_signo = WSTOPSIG(status);
	}
	return HUSK_SIGNAL;
}

/* Resume the husk after one of its stops, with signal sig (0: none). */
int
husk_continue(struct husk *h, int sig, char **cause)
{
	if (ptrace(PTRACE_CONT, mig_pid(h->t), 0, sig) == -1) {
		xasprintf(cause, "PTRACE_CONT %d: %s", (int)mig_pid(h->t),
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
husk_hold(struct husk *h, char **cause)
{
	if (!h->running)
		return 0;
	if (mig_interrupt(h->t, cause) == -1)
		return -1;
	h->running = h->busy = 0;
	return 0;
}

/* A larger scratch area, of at least want bytes; the stub is held. */
int
husk_grow(struct husk *h, size_t want, char **cause)
{
	size_t		 len = HUSK_PAGE + want;
	uint64_t	 old = h->base;
	uint8_t		*p;
	char		*path;

	if (ftruncate(h->memfd, len) == -1 ||
	    (p = mremap(h->shm, h->len, len, MREMAP_MAYMOVE)) == MAP_FAILED) {
		xasprintf(cause, "growing the husk's memory: %s",
		    strerror(errno));
		return -1;
	}
	h->shm = p;
	/* the path in the old mapping, which the task still has */
	path = (char *)h->shm + HUSK_PAGE;
	if (husk_path(h, path, 64) == -1 ||
	    husk_map(h, old + HUSK_PAGE, len, cause) == -1 ||
	    mig_call_ok(h->t, "munmap", NULL, SYS_munmap, (sysargs){ old,
	    h->len }, cause) == -1)
		return -1;
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
husk_end(struct husk *h, int signaled, int status, char **cause)
{
	if (signaled)
		return husk_default(h, status, cause) == -1 ||
		    husk_unblock(h, cause) == -1 ? -1 : 0;
	return mig_exit(h->t, status, cause);
}

/*
 * Write a message on descriptor fd of the held task t, best effort, from
 * a page of its own: a husk's (after a restore into it failed half way,
 * the shared area may be gone from the task), or P's held at home.
 */
int
husk_say(struct mig_task *t, int fd, const char *msg, size_t len)
{
	char	*ignored = NULL;
	long	 page;
	int	 rc = -1;

	if (len > HUSK_PAGE)
		len = HUSK_PAGE;
	if (mig_call_ok(t, "mmap", &page, SYS_mmap, (sysargs){ 0, HUSK_PAGE,
	    PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0 },
	    &ignored) == -1)
		goto out;
	if (mig_write(t, page, msg, len, &ignored) == 0 &&
	    mig_call_ok(t, "write", NULL, SYS_write, (sysargs){ fd, page,
	    len }, &ignored) == 0)
		rc = 0;
	free(ignored);
	ignored = NULL;
	mig_call_ok(t, "munmap", NULL, SYS_munmap, (sysargs){ page,
	    HUSK_PAGE }, &ignored);
out:
	free(ignored);
	return rc;
}

/* Set the signal mask of the held husk to nothing blocked. */
int
husk_unblock(struct husk *h, char **cause)
{
	memset(h->shm + HUSK_PAGE, 0, 8);
	return mig_call_ok(h->t, "rt_sigprocmask", NULL, SYS_rt_sigprocmask,
	    (sysargs){ SIG_SETMASK, h->base + HUSK_PAGE, 0, 8 }, cause);
}

/* Give one signal SIG_DFL in the held husk (its handler is gone). */
int
husk_default(struct husk *h, int sig, char **cause)
{
	memset(h->shm + HUSK_PAGE, 0, 32);
	return mig_call_ok(h->t, "rt_sigaction", NULL, SYS_rt_sigaction,
	    (sysargs){ sig, h->base + HUSK_PAGE, 0, 8 }, cause);
}
