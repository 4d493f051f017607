/*
 * The husk: what stays of a process at home while it runs on another node.
 * Its memory is released; its identity, files and children stay. A small
 * stub serves the calls forwarded from the running copy in the husk's own
 * context: it waits on a futex in a memory area it shares with its deputy
 * (a memfd both map), runs the call the deputy wrote there on the
 * arguments laid out there, and tells the deputy its end through a second
 * futex word, on which the deputy waits a little: one wakeup each way per
 * call, no ptrace stop, and no copy (the deputy reads and writes the
 * call's memory in place). A call that outlasts that wait (one that
 * blocks) ends in a trap instead, a ptrace stop the deputy's loop sees.
 *
 * Each thread of the process has its own area and runs the stub there,
 * as its lane: the calls of the copy's thread of the same id run in it,
 * in that thread's own context (gettid, its signal mask), each lane
 * blocking no other, so that a read one thread waits in at home holds up
 * no other thread's calls (docs/REMOTE.md, "Threads").
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
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "lib/osm.h"
#include "internal.h"

#define HUSK_PAGE	4096
#define HUSK_PATH	0x100	/* where in the stub's page a path goes */

/*
 * The stub, with rdi pointing at the shared control page:
 *
 *	   rbx = rdi
 *	   rt_sigprocmask(SIG_SETMASK, &ctl->nomask, NULL, 8)
 *	1: futex(&ctl->kick, FUTEX_WAIT, 0, NULL)	; shared futex
 *	   if (ctl->kick == 0) goto 1
 *	   ctl->kick = 0
 *	   rax = ctl->nr; rsi..r9 = ctl->args[1..5]; rdi = ctl->args[0]
 *	   syscall
 *	   ctl->rv = rax
 *	   old = xchg(&ctl->state, HUSK_DONE)
 *	   if (old == HUSK_WAITED)			; the deputy sleeps on it
 *		futex(&ctl->state, FUTEX_WAKE, 1); goto 1
 *	   if (old != HUSK_TRAP) goto 1			; it will look
 *	   rax = ctl->rv
 *	   int3						; the deputy's turn
 *
 * The stub unblocks every signal itself when it starts, so that a signal
 * sent to the process stops the husk for its deputy. A call the deputy
 * waits for (husk_call) ends without a stop: the stub
 * goes straight back to its futex, and P is woken once and sleeps once
 * per call. One the deputy stopped waiting for (a call that blocks, or a
 * signal that stopped the husk meanwhile) ends in the trap, which the
 * deputy sees among P's other ptrace stops.
 */
static const uint8_t husk_stub[] = {
	0x48, 0x89, 0xfb,		/* mov %rdi, %rbx */
	0xb8, 0x0e, 0x00, 0x00, 0x00,	/* mov $SYS_rt_sigprocmask, %eax */
	0xbf, 0x02, 0x00, 0x00, 0x00,	/* mov $SIG_SETMASK, %edi */
	0x48, 0x8d, 0x73, 0x48,		/* lea 0x48(%rbx), %rsi */
	0x31, 0xd2,			/* xor %edx, %edx */
	0x41, 0xba, 0x08, 0x00, 0x00, 0x00, /* mov $8, %r10d */
	0x0f, 0x05,			/* syscall */
	0xb8, 0xca, 0x00, 0x00, 0x00,	/* 1: mov $SYS_futex, %eax */
	0x48, 0x89, 0xdf,		/* mov %rbx, %rdi */
	0x31, 0xf6,			/* xor %esi, %esi */
	0x31, 0xd2,			/* xor %edx, %edx */
	0x45, 0x31, 0xd2,		/* xor %r10d, %r10d */
	0x0f, 0x05,			/* syscall */
	0x83, 0x3b, 0x00,		/* cmpl $0, (%rbx) */
	0x74, 0xea,			/* je 1b */
	0xc7, 0x03, 0x00, 0x00, 0x00, 0x00, /* movl $0, (%rbx) */
	0x48, 0x8b, 0x43, 0x08,		/* mov 0x08(%rbx), %rax */
	0x48, 0x8b, 0x73, 0x18,		/* mov 0x18(%rbx), %rsi */
	0x48, 0x8b, 0x53, 0x20,		/* mov 0x20(%rbx), %rdx */
	0x4c, 0x8b, 0x53, 0x28,		/* mov 0x28(%rbx), %r10 */
	0x4c, 0x8b, 0x43, 0x30,		/* mov 0x30(%rbx), %r8 */
	0x4c, 0x8b, 0x4b, 0x38,		/* mov 0x38(%rbx), %r9 */
	0x48, 0x8b, 0x7b, 0x10,		/* mov 0x10(%rbx), %rdi */
	0x0f, 0x05,			/* syscall */
	0x48, 0x89, 0x43, 0x40,		/* mov %rax, 0x40(%rbx) */
	0xb8, 0x03, 0x00, 0x00, 0x00,	/* mov $HUSK_DONE, %eax */
	0x87, 0x43, 0x04,		/* xchg %eax, 0x04(%rbx) */
	0x83, 0xf8, 0x01,		/* cmp $HUSK_WAITED, %eax */
	0x75, 0x17,			/* jne 2f */
	0xb8, 0xca, 0x00, 0x00, 0x00,	/* mov $SYS_futex, %eax */
	0x48, 0x8d, 0x7b, 0x04,		/* lea 0x04(%rbx), %rdi */
	0xbe, 0x01, 0x00, 0x00, 0x00,	/* mov $FUTEX_WAKE, %esi */
	0xba, 0x01, 0x00, 0x00, 0x00,	/* mov $1, %edx */
	0x0f, 0x05,			/* syscall */
	0xeb, 0x9e,			/* jmp 1b */
	0x83, 0xf8, 0x02,		/* 2: cmp $HUSK_TRAP, %eax */
	0x75, 0x99,			/* jne 1b */
	0x48, 0x8b, 0x43, 0x40,		/* mov 0x40(%rbx), %rax */
	0xcc,				/* int3 */
};
#define HUSK_AFTER_CALL	0x55	/* where the call's syscall returns to */
#define HUSK_AFTER_TRAP	0x87	/* where the trap leaves rip */

/* The control page, the first page of the shared area. */
struct husk_ctl {
	uint32_t	kick;		/* the futex: 1 while a call is asked */
	uint32_t	state;		/* the call's end: enum husk_state */
	int64_t		nr;
	uint64_t	args[6];
	int64_t		rv;		/* its result, once HUSK_DONE */
	uint64_t	nomask;		/* 0: the stub blocks no signal */
};
enum husk_state {
	HUSK_BUSY,		/* it runs; the deputy will look */
	HUSK_WAITED,		/* it runs; the deputy sleeps on state */
	HUSK_TRAP,		/* it runs; it is to end in the trap */
	HUSK_DONE,		/* it ended, rv holds its result */
};

/*
 * How long the deputy waits for a call's end in the stub before it lets
 * it end in the trap: long enough for any call that does not block, on a
 * loaded machine too (a stat or an open takes microseconds), short enough
 * that a call that blocks holds up the deputy's other work little.
 */
#define HUSK_WAIT_NS	300000

/*
 * Write len bytes at addr in the held task, read-only memory too: through
 * /proc/PID/mem, which we may write as its tracer.
 */
static int
husk_poke(struct husk *h, uint64_t addr, const void *buf, size_t len,
    char **cause)
{
	char	path[64];
	ssize_t	n;
	int	fd;

	snprintf(path, sizeof path, "/proc/%d/mem", (int)mig_pid(h->t));
	if ((fd = open(path, O_WRONLY | O_CLOEXEC)) == -1) {
		xasprintf(cause, "%s: %s", path, strerror(errno));
		return -1;
	}
	n = pwrite(fd, buf, len, (off_t)addr);
	close(fd);
	if (n != (ssize_t)len) {
		xasprintf(cause, "the husk's stub: %s", n == -1 ?
		    strerror(errno) : "short write");
		return -1;
	}
	return 0;
}

/*
 * Map lane l's memfd, of len bytes, in the task, by thread l's call: it
 * opens it through our /proc entry, the path being at addr in its
 * memory. Sets l->base.
 */
static int
husk_map(struct husk *h, struct husk_lane *l, uint64_t addr, size_t len,
    char **cause)
{
	char	*ignored = NULL;
	long	 fd, base;

	if (mig_thread_call_ok(h->t, l->tid, "open the husk's memory", &fd,
	    SYS_openat, (sysargs){ AT_FDCWD, addr, O_RDWR | O_CLOEXEC },
	    cause) == -1)
		return -1;
	if (mig_thread_call_ok(h->t, l->tid, "mmap the husk's memory", &base,
	    SYS_mmap, (sysargs){ 0, len, PROT_READ | PROT_WRITE, MAP_SHARED,
	    fd, 0 }, cause) == -1) {
		if (mig_thread_call_ok(h->t, l->tid, "close", NULL, SYS_close,
		    (sysargs){ fd }, &ignored) == -1)
			free(ignored);
		return -1;
	}
	l->base = base;
	return mig_thread_call_ok(h->t, l->tid, "close", NULL, SYS_close,
	    (sysargs){ fd }, cause);
}

static int
husk_path(const struct husk_lane *l, char *buf, size_t size)
{
	return snprintf(buf, size, "/proc/%d/fd/%d", (int)getpid(),
	    l->memfd) >= (int)size ? -1 : 0;
}

/*
 * Lane l's shared area, of a control page and scratch bytes, mapped; the
 * path to it written by via (NULL: into the stub's page, still writable).
 */
static int
husk_lane_make(struct husk *h, struct husk_lane *l, size_t scratch,
    const struct husk_lane *via, char **cause)
{
	char	path[64];

	l->len = HUSK_PAGE + scratch;
	if ((l->memfd = memfd_create("osmosis-husk", MFD_CLOEXEC)) == -1 ||
	    ftruncate(l->memfd, l->len) == -1 ||
	    (l->shm = mmap(NULL, l->len, PROT_READ | PROT_WRITE, MAP_SHARED,
	    l->memfd, 0)) == MAP_FAILED) {
		xasprintf(cause, "the husk's memory: %s", strerror(errno));
		return -1;
	}
	if (husk_path(l, path, sizeof path) == -1) {
		xasprintf(cause, "the husk's memory: path too long");
		return -1;
	}
	if (via != NULL) {
		/* past the control words of via's page, which it shares */
		memcpy(via->shm + HUSK_PATH, path, strlen(path) + 1);
		return husk_map(h, l, via->base + HUSK_PATH, l->len, cause);
	}
	if (husk_poke(h, h->code + HUSK_PATH, path, strlen(path) + 1,
	    cause) == -1)
		return -1;
	return husk_map(h, l, h->code + HUSK_PATH, l->len, cause);
}

/*
 * Make the stopped task a husk with a scratch area of scratch bytes for
 * each of its threads: its memory released, the stub and each thread's
 * shared area in place. It stays stopped; husk_run starts the stub in
 * every thread, each waiting for the calls of its own thread away.
 */
int
husk_make(struct mig_task *t, size_t scratch, struct husk *h, char **cause)
{
	pid_t	*tids;
	size_t	 n, i;
	long	 code;

	memset(h, 0, sizeof *h);
	h->t = t;
	n = mig_threads(t, NULL, 0);
	tids = xcalloc(n, sizeof *tids);
	mig_threads(t, tids, n);
	h->lanes = xcalloc(n, sizeof *h->lanes);
	h->nlanes = n;
	for (i = 0; i < n; i++) {
		h->lanes[i].tid = tids[i];
		h->lanes[i].memfd = -1;
		h->lanes[i].shm = MAP_FAILED;
	}
	free(tids);
	if (mig_empty(t, cause) == -1)
		goto fail;
	/*
	 * The stub's page: its code, and for now the path to a memfd. Made
	 * executable and read-only at once, and written through the task's
	 * memory file, which writes past the protections as ptrace does:
	 * each call injected costs the task two ptrace stops.
	 */
	if (mig_call_ok(t, "mmap the stub", &code, SYS_mmap, (sysargs){ 0,
	    HUSK_PAGE, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS,
	    -1, 0 }, cause) == -1)
		goto fail;
	h->code = code;
	if (husk_poke(h, h->code, husk_stub, sizeof husk_stub, cause) == -1)
		goto fail;
	for (i = 0; i < n; i++)
		if (husk_lane_make(h, &h->lanes[i], scratch, NULL,
		    cause) == -1)
			goto fail;
	return 0;
fail:
	husk_free(h);
	return -1;
}

void
husk_free(struct husk *h)
{
	struct husk_lane	*l;
	size_t			 i;

	for (i = 0; i < h->nlanes; i++) {
		l = &h->lanes[i];
		if (l->shm != MAP_FAILED && l->shm != NULL)
			munmap(l->shm, l->len);
		if (l->memfd != -1)
			close(l->memfd);
		home_free(l->call);
		free(l->held);
	}
	free(h->lanes);
	h->lanes = NULL;
	h->nlanes = 0;
}

/*
 * The lane of thread tid, or NULL; 0 is the lead's (or, once the main
 * thread has ended, the first left's).
 */
struct husk_lane *
husk_lane(struct husk *h, pid_t tid)
{
	size_t	i;

	if (h->nlanes == 0)
		return NULL;
	if (tid == 0)
		return &h->lanes[0];
	for (i = 0; i < h->nlanes; i++)
		if (h->lanes[i].tid == tid)
			return &h->lanes[i];
	return NULL;
}

/* Does some lane run a forwarded call (or hold its reply)? */
int
husk_busy(const struct husk *h)
{
	size_t	i;

	for (i = 0; i < h->nlanes; i++)
		if (h->lanes[i].call != NULL)
			return 1;
	return 0;
}

/* Where lane l's forwarded calls' memory is: ours, and the task's. */
uint8_t *
husk_scratch(const struct husk_lane *l, uint64_t *base, size_t *len)
{
	*base = l->base + HUSK_PAGE;
	*len = l->len - HUSK_PAGE;
	return l->shm + HUSK_PAGE;
}

/*
 * Start (or resume) the stub waiting for calls in lane l: after
 * husk_make, a hold, or a call returned (other stops resume with
 * husk_continue).
 */
int
husk_run_lane(struct husk *h, struct husk_lane *l, char **cause)
{
	if (mig_thread_jump(h->t, l->tid, h->code, l->base, cause) == -1)
		return -1;
	l->running = 1;
	return 0;
}

/* The same in every lane that does not run. */
int
husk_run(struct husk *h, char **cause)
{
	size_t	i;

	for (i = 0; i < h->nlanes; i++)
		if (!h->lanes[i].running &&
		    husk_run_lane(h, &h->lanes[i], cause) == -1)
			return -1;
	return 0;
}

/*
 * Wait up to HUSK_WAIT_NS for the end of the call lane l's stub runs:
 * 1, its result in *rv, the stub already waiting for the next; 0 if it
 * still runs, to end in the trap.
 */
static int
husk_wait(struct husk_lane *l, long *rv)
{
	struct husk_ctl	*c = (struct husk_ctl *)l->shm;
	struct timespec	 end;
	uint32_t	 s = HUSK_BUSY;

	clock_gettime(CLOCK_MONOTONIC, &end);
	end.tv_nsec += HUSK_WAIT_NS;
	if (end.tv_nsec >= 1000000000) {
		end.tv_sec++;
		end.tv_nsec -= 1000000000;
	}
	sched_yield();
	if (!__atomic_compare_exchange_n(&c->state, &s, HUSK_WAITED, 0,
	    __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
		goto done;	/* it ended before we slept */
	for (;;) {
		/* absolute, on CLOCK_MONOTONIC */
		if (syscall(SYS_futex, &c->state, FUTEX_WAIT_BITSET,
		    HUSK_WAITED, &end, NULL, FUTEX_BITSET_MATCH_ANY) == -1 &&
		    errno == ETIMEDOUT) {
			s = HUSK_WAITED;
			if (__atomic_compare_exchange_n(&c->state, &s,
			    HUSK_TRAP, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
				return 0;
			goto done;
		}
		if (__atomic_load_n(&c->state, __ATOMIC_ACQUIRE) == HUSK_DONE)
			goto done;
	}
done:
	*rv = c->rv;
	l->busy = 0;
	return 1;
}

/*
 * Ask lane l's waiting stub to run a call; its memory is laid out. With
 * wait, wait a little for its end: 1 if it ended, its result in *rv (the
 * stub waits for the next call: no ptrace stop, no husk_run_lane). 0 if it
 * runs on: its end is a ptrace stop (husk_stopped's HUSK_RETURNED).
 */
int
husk_call(struct husk_lane *l, long nr, const uint64_t *args, int wait,
    long *rv)
{
	struct husk_ctl	*c = (struct husk_ctl *)l->shm;

	c->nr = nr;
	memcpy(c->args, args, sizeof c->args);
	c->state = wait ? HUSK_BUSY : HUSK_TRAP;
	__atomic_store_n(&c->kick, 1, __ATOMIC_RELEASE);
	syscall(SYS_futex, &c->kick, FUTEX_WAKE, 1, NULL, NULL, 0);
	l->busy = 1;
	return wait ? husk_wait(l, rv) : 0;
}

/*
 * A ptrace stop of lane l's running thread: the call's return (*rv), a
 * signal for the process (*si), or another stop. A call a signal or an
 * interrupt broke off is reported as it returned (a restart code) rather
 * than restarted here: the running copy decides, by its own signal state.
 */
enum husk_stop
husk_stopped(struct husk *h, struct husk_lane *l, int status, long *rv,
    siginfo_t *si)
{
	struct user_regs_struct	r;
	pid_t			tid = mig_thread_here(h->t, l->tid);
	int			got;

	l->running = 0;
	if (ptrace(PTRACE_GETREGS, tid, 0, &r) == -1)
		return HUSK_OTHER;
	if (l->busy && r.rip == h->code + HUSK_AFTER_CALL &&
	    (long)r.rax <= -512 && (long)r.rax >= -516) {
		r.orig_rax = -1;
		ptrace(PTRACE_SETREGS, tid, 0, &r);
	}
	if ((status >> 16) != 0 || WSTOPSIG(status) == (SIGTRAP | 0x80))
		return HUSK_OTHER;
	got = ptrace(PTRACE_GETSIGINFO, tid, 0, si) == 0;
	if (l->busy && WSTOPSIG(status) == SIGTRAP && got &&
	    si->si_code == SI_KERNEL && r.rip == h->code + HUSK_AFTER_TRAP) {
		*rv = (long)r.rax;
		l->busy = 0;
		return HUSK_RETURNED;
	}
	if (!got) {
		memset(si, 0, sizeof *si);
		si->si_signo = WSTOPSIG(status);
	}
	return HUSK_SIGNAL;
}

/* Resume lane l after one of its stops, with signal sig (0: none). */
int
husk_continue(struct husk *h, struct husk_lane *l, int sig, char **cause)
{
	pid_t	tid = mig_thread_here(h->t, l->tid);

	if (ptrace(PTRACE_CONT, tid, 0, sig) == -1) {
		xasprintf(cause, "PTRACE_CONT %d: %s", (int)tid,
		    strerror(errno));
		return -1;
	}
	l->running = 1;
	return 0;
}

/*
 * Stop the stub in every lane and leave the task stopped, for calls of
 * our own or a restore; a call a lane was running is abandoned (callers
 * let it finish first when its result matters). Signals taken meanwhile
 * are kept (mig_thread_stolen).
 */
int
husk_hold(struct husk *h, char **cause)
{
	struct husk_lane	*l;
	size_t			 i;

	for (i = 0; i < h->nlanes; i++) {
		l = &h->lanes[i];
		if (!l->running)
			continue;
		if (mig_thread_interrupt(h->t, l->tid, cause) == -1)
			return -1;
		/* a call asked and not yet taken is abandoned too */
		__atomic_store_n(&((struct husk_ctl *)l->shm)->kick, 0,
		    __ATOMIC_RELEASE);
		l->running = l->busy = 0;
	}
	return 0;
}

/* A larger scratch area for lane l, of at least want bytes; it is held. */
int
husk_grow(struct husk *h, struct husk_lane *l, size_t want, char **cause)
{
	size_t		 len = HUSK_PAGE + want;
	uint64_t	 old = l->base;
	uint8_t		*p;
	char		*path;

	if (ftruncate(l->memfd, len) == -1 ||
	    (p = mremap(l->shm, l->len, len, MREMAP_MAYMOVE)) == MAP_FAILED) {
		xasprintf(cause, "growing the husk's memory: %s",
		    strerror(errno));
		return -1;
	}
	l->shm = p;
	/* the path in the old mapping, which the task still has */
	path = (char *)l->shm + HUSK_PAGE;
	if (husk_path(l, path, 64) == -1 ||
	    husk_map(h, l, old + HUSK_PAGE, len, cause) == -1 ||
	    mig_thread_call_ok(h->t, l->tid, "munmap", NULL, SYS_munmap,
	    (sysargs){ old, l->len }, cause) == -1)
		return -1;
	l->len = len;
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

/*
 * Set the signal mask of every thread of the held husk to nothing
 * blocked: a signal sent to the process at home then stops some thread
 * of it for us, one sent to a thread stops that one.
 */
int
husk_unblock(struct husk *h, char **cause)
{
	struct husk_lane	*l = &h->lanes[0];
	size_t			 i;

	memset(l->shm + HUSK_PAGE, 0, 8);
	for (i = 0; i < h->nlanes; i++)
		if (mig_thread_call_ok(h->t, h->lanes[i].tid, "rt_sigprocmask",
		    NULL, SYS_rt_sigprocmask, (sysargs){ SIG_SETMASK,
		    l->base + HUSK_PAGE, 0, 8 }, cause) == -1)
			return -1;
	return 0;
}

/* Give one signal SIG_DFL in the held husk (its handler is gone). */
int
husk_default(struct husk *h, int sig, char **cause)
{
	struct husk_lane	*l = &h->lanes[0];

	memset(l->shm + HUSK_PAGE, 0, 32);
	return mig_call_ok(h->t, "rt_sigaction", NULL, SYS_rt_sigaction,
	    (sysargs){ sig, l->base + HUSK_PAGE, 0, 8 }, cause);
}

/*
 * A lane for thread tid, new in the held task (made for a thread its copy
 * makes away), held: its area mapped by that thread. husk_run_lane
 * starts it.
 */
struct husk_lane *
husk_lane_add(struct husk *h, pid_t tid, size_t scratch, char **cause)
{
	struct husk_lane	*l;
	size_t			 via = 0;

	while (via < h->nlanes && h->lanes[via].busy)
		via++;
	if (via == h->nlanes) {
		xasprintf(cause, "every thread of the husk is busy");
		return NULL;
	}
	h->lanes = xreallocarray(h->lanes, h->nlanes + 1, sizeof *h->lanes);
	l = &h->lanes[h->nlanes];
	memset(l, 0, sizeof *l);
	l->tid = tid;
	l->memfd = -1;
	l->shm = MAP_FAILED;
	if (husk_lane_make(h, l, scratch, &h->lanes[via], cause) == -1) {
		if (l->shm != MAP_FAILED)
			munmap(l->shm, l->len);
		if (l->memfd != -1)
			close(l->memfd);
		return NULL;
	}
	h->nlanes++;
	return l;
}

/*
 * End lane l's thread (its copy's thread ended away), and the lane: its
 * area unmapped by the thread, which then exits, alone.
 */
int
husk_lane_end(struct husk *h, struct husk_lane *l, char **cause)
{
	char	*ignored = NULL;
	size_t	 i = l - h->lanes;

	if (l->running && mig_thread_interrupt(h->t, l->tid, cause) == -1)
		return -1;
	l->running = l->busy = 0;
	if (mig_thread_call_ok(h->t, l->tid, "munmap", NULL, SYS_munmap,
	    (sysargs){ l->base, l->len }, &ignored) == -1)
		free(ignored);
	if (mig_thread_exit(h->t, l->tid, cause) == -1)
		return -1;
	munmap(l->shm, l->len);
	close(l->memfd);
	home_free(l->call);
	free(l->held);
	/* in order: the lead's stays first */
	memmove(&h->lanes[i], &h->lanes[i + 1], (--h->nlanes - i) *
	    sizeof *h->lanes);
	return 0;
}
