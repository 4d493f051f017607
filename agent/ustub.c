/*
 * The usage stub: times() and getrusage() of a process (P back home, R
 * away) total, with no ptrace stop and no wakeup of another process. The
 * clock stub (stub.c) adds the CPU time used elsewhere to its clocks
 * read through the vDSO; glibc's times and getrusage make the system
 * call themselves, and the kernel counts only what the process used
 * where it runs. So libc's times and getrusage in it start with a jump
 * to a page of ours near libc (patched as the read stub patches read:
 * rstub.c's rstub_prepare and rstub_patch, whose dumps leave it out and
 * rewind a thread stopped in it, rstub_rewind): the stub makes the call
 * itself and adds the bases in the clock stub's data page, whose address
 * it holds — times()'s user and system ticks; getrusage(RUSAGE_SELF)'s
 * process's timevals; getrusage(RUSAGE_THREAD)'s the calling thread's,
 * found in the clock stub's table by its id (gettid), none meaning 0. A
 * child the process forks reads that page wiped (MADV_WIPEONFORK): its
 * counts are its own, from 0, as natively. Anything else
 * (RUSAGE_CHILDREN, a NULL buffer, an error) goes on in libc's own
 * function, through the instruction the jump displaced (the mov of the
 * call's number) and a jump back: errno and the error paths stay libc's,
 * and the call is made again there (neither call changes anything).
 *
 * Away, under R's filter (libremote/filter.c), the stub's calls are made
 * so that the filter lets them run: getrusage and gettid with
 * RMT_CLOCK_MAGIC in the high half of their first argument (an int to
 * the kernel, which ignores it; gettid has none), as the clock stub's
 * clock ids. times(buf) cannot carry it: away the stub computes times()'s
 * user and system ticks from getrusage(RUSAGE_SELF)'s timevals with the
 * process's bases added (the kernel's times() and getrusage() say the
 * same split, rounded down, to the tick and to the microsecond: a count
 * of microseconds rounded down to ticks is the count of ticks), the
 * children's as 0 (R has none: a fork goes home; G's emulation,
 * libremote/emulate.c, says 0 too), and the return value from
 * times(NULL), which the filter lets run (the node's ticks since boot,
 * which G's emulation returns too). What goes on in libc's own function
 * still comes to G, which adds the same bases.
 */
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

#define USTUB_PAGE	4096
#define USTUB_FRAME	152	/* a struct rusage, 8-aligned, below %rsp */

/*
 * The stubs, position-independent but for .Lu_data, the clock stub's
 * data page's address, .Lu_away (1 under R's filter) and .Lu_tick
 * (microseconds a tick), written in at install (struct stub_data in
 * stub.c: the process's usage at 64, its ticks at 96, the count of
 * threads at 16, the one-thread flag at 20, the table at 128, each
 * thread's usage after it, 32 bytes each, zeros at 32). Entered by a jump
 * from the start of times(buf %rdi) or getrusage(who %edi, ru %rsi);
 * %rax, %rcx, %rdx, %rsi, %rdi, %r8 to %r11 are the caller's to lose. The
 * arguments are kept in %r9 and %r10 (rstub_rewind puts a thread stopped
 * after that back at the function's start with them; ustub_rewind first
 * gives back the stack away's times() takes, from ustub_frame to
 * ustub_unframe).
 */
extern const uint8_t ustub_code[], ustub_saved[], ustub_ret[],
    ustub_frame[], ustub_unframe[], ustub_tramp[], ustub_rcode[],
    ustub_rsaved[], ustub_rret[], ustub_rtramp[], ustub_data[],
    ustub_away[], ustub_tick[], ustub_end[];
__asm__(
"	.pushsection .rodata.osm_usage_stub, \"a\"\n"
"	.balign 16\n"
"	.globl ustub_code, ustub_saved, ustub_ret, ustub_frame\n"
"	.globl ustub_unframe, ustub_tramp\n"
"	.globl ustub_rcode, ustub_rsaved, ustub_rret, ustub_rtramp\n"
"	.globl ustub_data, ustub_away, ustub_tick, ustub_end\n"
"ustub_code:\n"
"	movq	%rdi, %r9\n"
"ustub_saved:\n"
"	testq	%rdi, %rdi\n"
"	jz	.Lt_miss\n"
"	movq	.Lu_data(%rip), %r8\n"
"	cmpq	$0, .Lu_away(%rip)\n"
"	jne	.Lt_away\n"
"	movl	$100, %eax\n"			/* SYS_times */
"	syscall\n"
"	cmpq	$-4096, %rax\n"
"	ja	.Lt_miss\n"
"	movq	96(%r8), %rcx\n"		/* tms_utime */
"	addq	%rcx, (%r9)\n"
"	movq	104(%r8), %rcx\n"		/* tms_stime */
"	addq	%rcx, 8(%r9)\n"
"ustub_ret:\n"
"	ret\n"
/* away: getrusage(RUSAGE_SELF)'s, with the bases, in ticks */
".Lt_away:\n"
"	subq	$152, %rsp\n"
"ustub_frame:\n"
"	movabsq	$0x6f736d3100000000, %rdi\n"	/* RUSAGE_SELF, the magic */
"	movq	%rsp, %rsi\n"
"	movl	$98, %eax\n"			/* SYS_getrusage */
"	syscall\n"
"	cmpq	$-4096, %rax\n"
"	ja	1f\n"
"	movq	(%rsp), %rax\n"			/* ru_utime */
"	addq	64(%r8), %rax\n"
"	imulq	$1000000, %rax, %rax\n"
"	addq	8(%rsp), %rax\n"
"	addq	72(%r8), %rax\n"
"	xorl	%edx, %edx\n"
"	divq	.Lu_tick(%rip)\n"
"	movq	%rax, (%r9)\n"
"	movq	16(%rsp), %rax\n"		/* ru_stime */
"	addq	80(%r8), %rax\n"
"	imulq	$1000000, %rax, %rax\n"
"	addq	24(%rsp), %rax\n"
"	addq	88(%r8), %rax\n"
"	xorl	%edx, %edx\n"
"	divq	.Lu_tick(%rip)\n"
"	movq	%rax, 8(%r9)\n"
"	xorl	%eax, %eax\n"
"	movq	%rax, 16(%r9)\n"		/* no children here */
"	movq	%rax, 24(%r9)\n"
"1:	addq	$152, %rsp\n"
"ustub_unframe:\n"
"	testq	%rax, %rax\n"
"	jnz	.Lt_miss\n"
"	xorl	%edi, %edi\n"
"	movl	$100, %eax\n"			/* times(NULL): the ticks */
"	syscall\n"
"	ret\n"
".Lt_miss:\n"
"	movq	%r9, %rdi\n"
"ustub_tramp:\n"
"	.fill 32, 1, 0xcc\n"
"ustub_rcode:\n"
"	movq	%rdi, %r9\n"
"	movq	%rsi, %r10\n"
"ustub_rsaved:\n"
"	movq	.Lu_data(%rip), %r8\n"
"	leaq	64(%r8), %rdx\n"		/* the process's */
"	testl	%edi, %edi\n"			/* RUSAGE_SELF */
"	je	2f\n"
"	cmpl	$1, %edi\n"			/* RUSAGE_THREAD */
"	jne	.Lg_miss\n"
"	movl	16(%r8), %edx\n"		/* count */
"	shlq	$4, %rdx\n"
"	leaq	128(%r8,%rdx), %rdx\n"		/* the first thread's */
"	cmpl	$0, 20(%r8)\n"			/* one */
"	jne	2f\n"
"	movabsq	$0x6f736d3100000000, %rdi\n"	/* the magic */
"	movl	$186, %eax\n"			/* SYS_gettid */
"	syscall\n"
"	movl	16(%r8), %ecx\n"
"	leaq	128(%r8), %rsi\n"		/* the table */
"1:	testl	%ecx, %ecx\n"
"	jz	3f\n"
"	cmpl	%eax, (%rsi)\n"
"	je	2f\n"
"	addq	$16, %rsi\n"
"	addq	$32, %rdx\n"
"	decl	%ecx\n"
"	jmp	1b\n"
"3:	leaq	32(%r8), %rdx\n"		/* none: 0 */
"2:	movl	%r9d, %edi\n"
"	movabsq	$0x6f736d3100000000, %rax\n"	/* who, the magic */
"	orq	%rax, %rdi\n"
"	movq	%r10, %rsi\n"
"	movl	$98, %eax\n"			/* SYS_getrusage */
"	syscall\n"
"	cmpq	$-4096, %rax\n"
"	ja	.Lg_miss\n"
"	movq	(%rdx), %rax\n"			/* ru_utime */
"	addq	%rax, (%rsi)\n"
"	movq	8(%rdx), %rax\n"
"	addq	8(%rsi), %rax\n"
"	cmpq	$1000000, %rax\n"
"	jb	4f\n"
"	subq	$1000000, %rax\n"
"	incq	(%rsi)\n"
"4:	movq	%rax, 8(%rsi)\n"
"	movq	16(%rdx), %rax\n"		/* ru_stime */
"	addq	%rax, 16(%rsi)\n"
"	movq	24(%rdx), %rax\n"
"	addq	24(%rsi), %rax\n"
"	cmpq	$1000000, %rax\n"
"	jb	5f\n"
"	subq	$1000000, %rax\n"
"	incq	16(%rsi)\n"
"5:	movq	%rax, 24(%rsi)\n"
"	xorl	%eax, %eax\n"
"ustub_rret:\n"
"	ret\n"
".Lg_miss:\n"
"	movq	%r9, %rdi\n"
"	movq	%r10, %rsi\n"
"ustub_rtramp:\n"
"	.fill 32, 1, 0xcc\n"
"	.balign 8\n"
"ustub_data:\n"
".Lu_data:\n"
"	.quad	0\n"
"ustub_away:\n"
".Lu_away:\n"
"	.quad	0\n"
"ustub_tick:\n"
".Lu_tick:\n"
"	.quad	0\n"
"ustub_end:\n"
"	.popsection\n");

_Static_assert(SYS_times == 100 && SYS_getrusage == 98 &&
    SYS_gettid == 186, "the stub's call numbers");
_Static_assert(RUSAGE_SELF == 0 && RUSAGE_THREAD == 1, "the stub's who");
_Static_assert(RMT_CLOCK_MAGIC == 0x6f736d31, "the stub's magic");
_Static_assert(USTUB_FRAME == 152 && sizeof(struct rusage) <= USTUB_FRAME,
    "the stub's frame");

/*
 * A thread stopped in a stub, for a dump: in away's times(), where it
 * holds its frame, with it given back first; then as rstub_rewind says.
 */
static void
ustub_rewind(void *arg, struct user_regs_struct *r)
{
	struct rstub_patch	*p = arg;

	/* (times()'s code is the page's start) */
	if (r->rip >= p->code + (ustub_frame - ustub_code) &&
	    r->rip < p->code + (ustub_unframe - ustub_code))
		r->rsp += USTUB_FRAME;
	rstub_rewind(arg, r);
}

/*
 * Put the usage stub into the process (pid, held in t; away: under R's
 * filter, only local calls may be injected), beside its clock stub c,
 * whose bases it adds. 0, or -1 with *cause: times and getrusage are the
 * kernel's at home, the guest's away.
 */
int
ustub_install(struct ustub *u, const struct stub *c, struct mig_task *t,
    pid_t pid, int away, char **cause)
{
	static const char *const names[] = { "times", "getrusage" };
	static const struct rstub_entry te = { ustub_code, ustub_code,
	    ustub_saved, ustub_ret, ustub_tramp }, re = { ustub_code,
	    ustub_rcode, ustub_rsaved, ustub_rret, ustub_rtramp };
	struct rstub_sym syms[2];
	uint8_t		 page[USTUB_PAGE];
	char		 path[512];
	uint64_t	 base, at, v;
	long		 rv, hz = sysconf(_SC_CLK_TCK);

	memset(u, 0, sizeof *u);
	if (c->start == 0) {
		xasprintf(cause, "no clock stub");
		return -1;
	}
	/* a tick a whole number of microseconds: the kernel's USER_HZ 100 */
	if (hz <= 0 || 1000000 % hz != 0) {
		xasprintf(cause, "%ld ticks a second", hz);
		return -1;
	}
	if (rstub_libc(pid, &base, path, sizeof path) == -1) {
		xasprintf(cause, "no libc.so.6");
		return -1;
	}
	rstub_symbols(path, names, syms, 2);
	if (syms[0].off == 0 || syms[1].off == 0) {
		xasprintf(cause, "no times or getrusage in %s", path);
		return -1;
	}
	if ((at = rstub_map(t, base, base + syms[0].off, base + syms[1].off,
	    USTUB_PAGE)) == 0) {
		xasprintf(cause, "no room near libc");
		return -1;
	}
	memset(page, 0xcc, sizeof page);
	memcpy(page, ustub_code, ustub_end - ustub_code);
	memcpy(page + (ustub_data - ustub_code), &c->data, sizeof c->data);
	v = away != 0;
	memcpy(page + (ustub_away - ustub_code), &v, sizeof v);
	v = 1000000 / hz;
	memcpy(page + (ustub_tick - ustub_code), &v, sizeof v);
	if (rstub_prepare(&u->times, pid, &syms[0], base + syms[0].off, at,
	    page, &te) == -1 || rstub_prepare(&u->getrusage, pid, &syms[1],
	    base + syms[1].off, at, page, &re) == -1) {
		xasprintf(cause, "libc's times or getrusage is not %s's, or "
		    "starts with instructions that cannot move", path);
		goto unmap;
	}
	/*
	 * A thread the image brought back about to make the call (its
	 * restart, rewound to the syscall after the mov: it waited in it for
	 * its guest agent) makes it through the stub, from the start.
	 */
	if (stub_move_threads(t, u->times.fn + u->times.displaced, 1,
	    u->times.fn, cause) == -1 || stub_move_threads(t,
	    u->getrusage.fn + u->getrusage.displaced, 1, u->getrusage.fn,
	    cause) == -1)
		goto unmap;
	if (mig_write(t, at, page, sizeof page, cause) == -1 ||
	    mig_call_ok(t, "mprotect the usage stub", &rv, SYS_mprotect,
	    (sysargs){ at, USTUB_PAGE, PROT_READ | PROT_EXEC }, cause) == -1 ||
	    rstub_patch_two(&u->times, &u->getrusage, t, cause) == -1)
		goto unmap;
	u->start = at;
	u->times.hidden.rewind = ustub_rewind;
	u->times.hidden.start = at;
	u->times.hidden.end = at + USTUB_PAGE;
	u->times.hidden.next = &u->getrusage.hidden;
	return 0;

unmap:
	stub_unmap(t, at, USTUB_PAGE);
	memset(u, 0, sizeof *u);
	return -1;
}

/* What dumps of the process leave out of the usage stub; NULL: none. */
const struct mig_hidden *
ustub_hidden(const struct ustub *u)
{
	return u->start != 0 ? &u->times.hidden : NULL;
}

/*
 * Take the usage stub out of the process, held in t: libc's functions as
 * they were, the page unmapped (no thread may be in it, as for
 * stub_remove).
 */
int
ustub_remove(struct ustub *u, struct mig_task *t, char **cause)
{
	pid_t	pid = u->times.pid;
	int	rc = 0;

	if (u->start == 0)
		return 0;
	if (stub_poke(pid, u->times.fn, u->times.orig, u->times.displaced,
	    cause) == -1 || stub_poke(pid, u->getrusage.fn,
	    u->getrusage.orig, u->getrusage.displaced, cause) == -1)
		rc = -1;
	else
		stub_unmap(t, u->start, USTUB_PAGE);
	memset(u, 0, sizeof *u);
	return rc;
}
