/*
 * Registers: the general ones by name, the FPU/SSE/AVX state as the
 * XSAVE block the kernel hands out (NT_X86_XSTATE), and what to do about
 * a system call the task was stopped in.
 */
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/uio.h>

#include <linux/futex.h>

#include <elf.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lib/osm.h"
#include "internal.h"


/* Where ptrace puts XCR0 in the XSAVE block's software area (as gdb). */
#define XSTATE_XCR0_OFF		464
#define XSTATE_MIN		(512 + 64)

#define GPREGS(X) \
	X(r15) X(r14) X(r13) X(r12) X(rbp) X(rbx) X(r11) X(r10) X(r9) X(r8) \
	X(rax) X(rcx) X(rdx) X(rsi) X(rdi) X(orig_rax) X(rip) X(cs) \
	X(eflags) X(rsp) X(ss) X(fs_base) X(gs_base) X(ds) X(es) X(fs) X(gs)

static void
regs_to_img(const struct user_regs_struct *r, Osm__ImgGpregs *g)
{
	osm__img_gpregs__init(g);
#define TO(n)	g->n = r->n;
	GPREGS(TO)
#undef TO
}

static void
regs_from_img(const Osm__ImgGpregs *g, struct user_regs_struct *r)
{
	memset(r, 0, sizeof *r);
#define FROM(n)	r->n = g->n;
	GPREGS(FROM)
#undef FROM
}

static int
regs_get_xstate(pid_t pid, uint8_t **buf, size_t *len, char **cause)
{
	struct iovec	iov;

	*buf = xmalloc(MIG_XSTATE_MAX);
	iov.iov_base = *buf;
	iov.iov_len = MIG_XSTATE_MAX;
	if (ptrace(PTRACE_GETREGSET, pid, NT_X86_XSTATE, &iov) == -1) {
		xasprintf(cause, "PTRACE_GETREGSET NT_X86_XSTATE %d: %s", pid,
		    strerror(errno));
		free(*buf);
		return -1;
	}
	*len = iov.iov_len;
	return 0;
}

static uint64_t
regs_xfeatures(const uint8_t *x, size_t len)
{
	uint64_t	v = 0;

	if (len >= XSTATE_XCR0_OFF + 8)
		memcpy(&v, x + XSTATE_XCR0_OFF, 8);
	return v;
}

/*
 * How the kernel would resume the call a thread is stopped in, had no
 * signal handler run: -ERESTARTSYS and friends restart it; a relative
 * sleep with a restart block is reissued for the time left; a futex wait
 * with a deadline (FUTEX_WAIT_BITSET: glibc's timed waits) is issued
 * again, its deadline absolute in the caller's memory; other restart
 * blocks (poll, a relative FUTEX_WAIT) have no meaning in a new process,
 * and get -EINTR as after a handler.
 */
static void
regs_restart(struct mig_task *t, const struct user_regs_struct *r,
    Osm__ImgRegs *img)
{
	long		rax = (long)r->rax;
	uint64_t	rem = 0;
	struct timespec	ts;
	char		*cause = NULL;

	img->restart = OSM__IMG_RESTART__RESTART_NONE;
	if ((long)r->orig_rax < 0)
		return;
	if (rax == -ERESTARTSYS || rax == -ERESTARTNOINTR ||
	    rax == -ERESTARTNOHAND) {
		img->restart = OSM__IMG_RESTART__RESTART_SAME;
		return;
	}
	if (rax != -ERESTART_RESTARTBLOCK)
		return;
	if (r->orig_rax == SYS_futex &&
	    (r->rsi & FUTEX_CMD_MASK) == FUTEX_WAIT_BITSET) {
		img->restart = OSM__IMG_RESTART__RESTART_SAME;
		return;
	}
	if (r->orig_rax == SYS_nanosleep)
		rem = r->rsi;
	else if (r->orig_rax == SYS_clock_nanosleep &&
	    (r->rsi & TIMER_ABSTIME) == 0)
		rem = r->r10;
	else {
		img->restart = OSM__IMG_RESTART__RESTART_EINTR;
		return;
	}
	img->restart = OSM__IMG_RESTART__RESTART_SLEEP;
	/* The kernel wrote the time left to the caller's rem. */
	if (rem != 0 && task_read(t, rem, &ts, sizeof ts, &cause) == 0) {
		img->has_sleep_left_ns = 1;
		img->sleep_left_ns = (uint64_t)ts.tv_sec * 1000000000 +
		    ts.tv_nsec;
	}
	free(cause);
}

/* Thread th's registers, as it stopped. */
int
regs_dump(struct mig_task *t, struct mig_thread *th, Osm__ImgRegs *img,
    char **cause)
{
	uint8_t	*x;
	size_t	 len;

	struct user_regs_struct	 r = th->regs;
	const struct mig_hidden	*h;

	/* stopped in code not the program's: where the program's would be */
	for (h = t->hidden; h != NULL; h = h->next) {
		if (h->rewind != NULL)
			h->rewind(h->arg, &r);
	}
	osm__img_regs__init(img);
	img->gp = xmalloc(sizeof *img->gp);
	regs_to_img(&r, img->gp);
	if (regs_get_xstate(th->tid, &x, &len, cause) == -1)
		return -1;
	img->xstate.data = x;
	img->xstate.len = len;
	img->xfeatures = regs_xfeatures(x, len);
	regs_restart(t, &r, img);
	return 0;
}

void
regs_free(Osm__ImgRegs *img)
{
	if (img == NULL)
		return;
	free(img->gp);
	free(img->xstate.data);
}

/*
 * The image's registers, on paper; with a target, also that its CPU saves
 * the same FPU state: a different size or feature set is refused, not
 * guessed at.
 */
int
regs_check(struct mig_task *t, const Osm__ImgRegs *img, char **cause)
{
	uint8_t		*x;
	size_t		 len;
	uint64_t	 feat;

	if (img->xstate.len < XSTATE_MIN || img->xstate.len > MIG_XSTATE_MAX ||
	    img->xfeatures != regs_xfeatures(img->xstate.data,
	    img->xstate.len) ||
	    img->restart > OSM__IMG_RESTART__RESTART_EINTR ||
	    img->gp->cs != 0x33 || img->gp->ss != 0x2b ||
	    img->gp->rip >= MIG_TASK_SIZE) {
		xasprintf(cause, "image corrupted: registers");
		return -1;
	}
	if (t == NULL)
		return 0;
	if (regs_get_xstate(t->lead->tid, &x, &len, cause) == -1)
		return -1;
	feat = regs_xfeatures(x, len);
	free(x);
	if (len != img->xstate.len || feat != img->xfeatures) {
		xasprintf(cause, "this CPU's FPU state (%zu bytes, features "
		    "0x%llx) differs from the image's (%zu bytes, features "
		    "0x%llx)", len, (unsigned long long)feat,
		    img->xstate.len, (unsigned long long)img->xfeatures);
		return -1;
	}
	return 0;
}

/* Put thread th's FPU state in and set up its registers to resume with. */
int
regs_restore(struct mig_thread *th, const Osm__ImgRegs *img, char **cause)
{
	struct user_regs_struct	*r = &th->regs;
	struct iovec		 iov;

	iov.iov_base = img->xstate.data;
	iov.iov_len = img->xstate.len;
	if (ptrace(PTRACE_SETREGSET, th->tid, NT_X86_XSTATE, &iov) == -1) {
		xasprintf(cause, "PTRACE_SETREGSET NT_X86_XSTATE: %s",
		    strerror(errno));
		return -1;
	}
	regs_from_img(img->gp, r);
	switch (img->restart) {
	case OSM__IMG_RESTART__RESTART_SAME:
		r->rax = r->orig_rax;
		r->rip -= 2;
		break;
	case OSM__IMG_RESTART__RESTART_SLEEP:
		r->rax = r->orig_rax;
		r->rip -= 2;
		/* Sleep for what the kernel left in rem, not from the start. */
		if (r->orig_rax == SYS_nanosleep && r->rsi != 0)
			r->rdi = r->rsi;
		else if (r->orig_rax == SYS_clock_nanosleep && r->r10 != 0)
			r->rdx = r->r10;
		break;
	case OSM__IMG_RESTART__RESTART_EINTR:
		r->rax = -EINTR;
		break;
	default:
		break;
	}
	r->orig_rax = -1;
	th->regs_dirty = 1;
	return 0;
}
