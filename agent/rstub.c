/*
 * The read stub: R's reads of a descriptor's window answered inside R,
 * with no notification (libremote/rstub.c decides what it may serve;
 * docs/REMOTE.md, "The read stub"). libc's read in R starts with a jump
 * to a page of ours: for a descriptor of the shared page's slots whose
 * window holds the read (whole, or up to the file's end) and is not
 * stale (its TSC deadline), it copies the bytes from the window, which
 * R maps from a memfd the guest maps too, moves the slot's offset and
 * returns the count, as read would; anything else goes on in libc's own
 * read, through the instructions the jump displaced (copied, and a rip-
 * relative one made to point where it did) and a jump back, so errors,
 * errno and cancellation stay libc's.
 *
 * The stub is the guest's, not the program's: dumps of R leave its pages
 * out, record libc's read as it was (mig_hidden_pages) and R stopped in
 * the stub as stopped where the program would be (rstub_rewind). A libc
 * whose read starts otherwise than we know, no libc (a static program),
 * or no room near libc, and no stub: R's reads are the guest's as before.
 */
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>

#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

#define RSTUB_PAGE	4096

/*
 * The stub, position-independent, entered by a jump from the start of
 * read(fd %edi, buf %rsi, count %rdx): it returns to read's caller.
 * %rax, %rcx, %r8 to %r11 are the caller's to lose. It keeps the
 * arguments in %r9 to %r11 first, so that a thread stopped anywhere
 * before the commit (the add to the slot's offset) can be put back at
 * read's start with them; one stopped after it, at the ret, as returned.
 * The shared page is the page after the code (struct rstub_shm).
 */
extern const uint8_t rstub_code[], rstub_saved[], rstub_ret[],
    rstub_tramp[], rstub_pcode[], rstub_psaved[], rstub_pret[],
    rstub_ptramp[], wstub_code[], wstub_saved[], wstub_ret[],
    wstub_tramp[], wstub_pcode[], wstub_psaved[], wstub_pret[],
    wstub_ptramp[], lstub_fdcode[], lstub_fdsaved[], lstub_fdtramp[],
    lstub_fscode[], lstub_fssaved[], lstub_fstramp[], lstub_lscode[],
    lstub_lssaved[], lstub_lstramp[], lstub_lkcode[], lstub_lksaved[],
    lstub_lktramp[], lstub_flcode[], lstub_flsaved[], lstub_fltramp[],
    istub_pid[], istub_pidret[], istub_pidtramp[], istub_ppid[],
    istub_ppidret[], istub_ppidtramp[], istub_uid[], istub_uidret[],
    istub_uidtramp[], istub_euid[], istub_euidret[], istub_euidtramp[],
    istub_gid[], istub_gidret[], istub_gidtramp[], istub_egid[],
    istub_egidret[], istub_egidtramp[], lstub_ftcode[], lstub_ftsaved[],
    lstub_ftret[], lstub_fttramp[], lstub_clcode[], lstub_clsaved[],
    lstub_cltramp[], rstub_end[];
__asm__(
"	.pushsection .rodata.osm_read_stub, \"a\"\n"
"	.balign 16\n"
"	.globl rstub_code, rstub_saved, rstub_ret, rstub_tramp\n"
"	.globl rstub_pcode, rstub_psaved, rstub_pret, rstub_ptramp, rstub_end\n"
"	.globl wstub_code, wstub_saved, wstub_ret, wstub_tramp\n"
"	.globl wstub_pcode, wstub_psaved, wstub_pret, wstub_ptramp\n"
"	.globl lstub_fdcode, lstub_fdsaved, lstub_fdtramp\n"
"	.globl lstub_fscode, lstub_fssaved, lstub_fstramp\n"
"	.globl lstub_lscode, lstub_lssaved, lstub_lstramp\n"
"	.globl lstub_lkcode, lstub_lksaved, lstub_lktramp\n"
"	.globl lstub_flcode, lstub_flsaved, lstub_fltramp\n"
"	.globl istub_pid, istub_pidret, istub_pidtramp\n"
"	.globl istub_ppid, istub_ppidret, istub_ppidtramp\n"
"	.globl istub_uid, istub_uidret, istub_uidtramp\n"
"	.globl istub_euid, istub_euidret, istub_euidtramp\n"
"	.globl istub_gid, istub_gidret, istub_gidtramp\n"
"	.globl istub_egid, istub_egidret, istub_egidtramp\n"
"	.globl lstub_ftcode, lstub_ftsaved, lstub_ftret, lstub_fttramp\n"
"	.globl lstub_clcode, lstub_clsaved, lstub_cltramp\n"
/*
 * lstub_try: a call on a descriptor of a file opened here (its bit in the
 * shared page's lfds, while lon) made by the stub itself: the number and
 * the arguments (up to four, the fourth in %rcx) to libc's syscall(), the
 * descriptor marked in its high half (RMT_CLOCK_MAGIC), which returns to
 * the caller and sets errno as libc's function would. The jump is the
 * commit: before it the arguments are still in %r9 to %r11 (and the red
 * zone); after it the thread is in libc. wr: a write, counted.
 */
/* lstub_mine: is descriptor %edi one of lfds, while lon says calls? */
"	.macro	lstub_mine miss\n"
"	testl	$1, .Lr_start+4096+4(%rip)\n"		/* lon: calls */
"	jz	\\miss\n"
"	cmpl	$256, %edi\n"				/* RSTUB_LFDS */
"	jae	\\miss\n"
"	btl	%edi, .Lr_start+4096+32(%rip)\n"	/* lfds */
"	jnc	\\miss\n"
"	.endm\n"
"	.macro	lstub_try nr, wr\n"
"	lstub_mine 8f\n"
"	lock incq .Lr_start+4096+16(%rip)\n"		/* lhits */
"	.if	\\wr\n"
"	lock incq .Lr_start+4096+24(%rip)\n"		/* lwrites */
"	.endif\n"
"	movq	%rcx, %r8\n"
"	movq	%rdx, %rcx\n"
"	movq	%rsi, %rdx\n"
"	movl	%edi, %esi\n"
"	movabsq	$0x6f736d3100000000, %rax\n"		/* RMT_CLOCK_MAGIC */
"	orq	%rax, %rsi\n"
"	movl	$\\nr, %edi\n"
"	jmpq	*.Lr_start+4096+8(%rip)\n"		/* lsyscall */
"8:\n"
"	.endm\n"
/* a function of up to three arguments with no stub but lstub_try's */
"	.macro	lstub_only nr, code, saved, tramp\n"
"\\code:\n"
"	movq	%rdi, %r9\n"
"	movq	%rsi, %r10\n"
"	movq	%rdx, %r11\n"
"\\saved:\n"
"	lstub_try \\nr, 0\n"
"	movq	%r9, %rdi\n"
"	movq	%r10, %rsi\n"
"	movq	%r11, %rdx\n"
"\\tramp:\n"
"	.fill 32, 1, 0xcc\n"
"	.endm\n"
/*
 * rstub_wsame: a read (at off, count in %r11) of the write slot's file
 * that wants a byte its ring holds goes to libc (miss). wstub_put: the
 * write stub's copy into the ring and its commit, head in %rax; ret its
 * return, free where a write it cannot take un-marks the ring.
 */
"	.macro	rstub_wsame off, miss\n"
"	cmpl	$0, 68(%r8)\n"				/* wsame */
"	je	5f\n"
"	movq	\\off, %rdx\n"
"	addq	%r11, %rdx\n"				/* its end, as asked */
"	jc	\\miss\n"
"	cmpq	.Lr_start+4096+576+48(%rip), %rdx\n"	/* the ring's start */
"	jbe	5f\n"
"	movq	.Lr_start+4096+576+8(%rip), %rdx\n"	/* head */
"	btrq	$63, %rdx\n"
"	addq	.Lr_start+4096+576+48(%rip), %rdx\n"	/* the ring's end */
"	cmpq	\\off, %rdx\n"
"	ja	\\miss\n"				/* R wrote some of it */
"5:\n"
"	.endm\n"
"	.macro	wstub_put free, ret\n"
"	movq	16(%r8), %rcx\n"			/* room */
"	subq	%rax, %rcx\n"				/* - head */
"	jb	\\free\n"
"	cmpq	%rdx, %rcx\n"
"	jb	\\free\n"
"	rdtsc\n"
"	shlq	$32, %rdx\n"
"	orq	%rdx, %rax\n"
"	cmpq	24(%r8), %rax\n"			/* deadline */
"	jae	\\free\n"
"	movq	8(%r8), %rdi\n"
"	btrq	$63, %rdi\n"
"	addq	32(%r8), %rdi\n"			/* ring + head */
"	movq	%r10, %rsi\n"
"	movq	%r11, %rcx\n"
"	rep movsb\n"
"	incq	40(%r8)\n"				/* hits */
"	movq	8(%r8), %rcx\n"
"	btrq	$63, %rcx\n"
"	addq	%r11, %rcx\n"
"	movq	%r11, %rax\n"
"	movq	%rcx, 8(%r8)\n"			/* the commit, not busy */
"\\ret:\n"
"	ret\n"
"\\free:\n"
"	btrq	$63, 8(%r8)\n"				/* not busy */
"	.endm\n"
"rstub_code:\n"
".Lr_start:\n"
"	movq	%rdi, %r9\n"
"	movq	%rsi, %r10\n"
"	movq	%rdx, %r11\n"
"rstub_saved:\n"
"	lstub_try 0, 0\n"
"	cmpl	$0, .Lr_start+4096(%rip)\n"		/* on */
"	je	.Lr_miss\n"
"	testq	%rdx, %rdx\n"
"	jz	.Lr_miss\n"
"	leaq	.Lr_start+4096+64(%rip), %r8\n"		/* the slots */
"	movl	$4, %ecx\n"				/* RSTUB_SLOTS */
"1:	cmpl	%edi, (%r8)\n"				/* fd */
"	je	2f\n"
"	addq	$128, %r8\n"
"	decl	%ecx\n"
"	jnz	1b\n"
"	jmp	.Lr_miss\n"
"2:	cmpl	$0, 64(%r8)\n"				/* rok */
"	je	.Lr_miss\n"
"	movq	8(%r8), %rax\n"				/* pos */
"	subq	16(%r8), %rax\n"			/* - woff */
"	cmpq	24(%r8), %rax\n"			/* wlen */
"	jae	.Lr_miss\n"
"	movq	24(%r8), %rcx\n"
"	subq	%rax, %rcx\n"				/* what it holds on */
"	cmpq	%rdx, %rcx\n"
"	jae	3f\n"
"	cmpl	$0, 4(%r8)\n"				/* eof */
"	je	.Lr_miss\n"
"	jmp	4f\n"
"3:	movq	%rdx, %rcx\n"
"4:	rstub_wsame 8(%r8), .Lr_miss\n"
"	movq	%rax, %rsi\n"
"	rdtsc\n"
"	shlq	$32, %rdx\n"
"	orq	%rdx, %rax\n"
"	cmpq	32(%r8), %rax\n"			/* deadline */
"	jae	.Lr_miss\n"
"	addq	40(%r8), %rsi\n"			/* data */
"	movq	%r10, %rdi\n"
"	movq	%rcx, %rax\n"
"	rep movsb\n"
"	incq	48(%r8)\n"				/* hits */
"	addq	%rax, 8(%r8)\n"				/* the commit */
"rstub_ret:\n"
"	ret\n"
".Lr_miss:\n"
"	movq	%r9, %rdi\n"
"	movq	%r10, %rsi\n"
"	movq	%r11, %rdx\n"
"rstub_tramp:\n"
"	.fill 32, 1, 0xcc\n"
/* pread64(fd, buf, count, offset %rcx): the offset kept in the red zone */
"rstub_pcode:\n"
"	movq	%rdi, %r9\n"
"	movq	%rsi, %r10\n"
"	movq	%rdx, %r11\n"
"	movq	%rcx, -8(%rsp)\n"
"rstub_psaved:\n"
"	lstub_try 17, 0\n"
"	cmpl	$0, .Lr_start+4096(%rip)\n"		/* on */
"	je	.Lp_miss\n"
"	testq	%rdx, %rdx\n"
"	jz	.Lp_miss\n"
"	testq	%rcx, %rcx\n"
"	js	.Lp_miss\n"
"	leaq	.Lr_start+4096+64(%rip), %r8\n"		/* the slots */
"	movl	$4, %eax\n"				/* RSTUB_SLOTS */
"1:	cmpl	%edi, (%r8)\n"				/* fd */
"	je	2f\n"
"	addq	$128, %r8\n"
"	decl	%eax\n"
"	jnz	1b\n"
"	jmp	.Lp_miss\n"
"2:	movq	%rcx, %rax\n"				/* offset */
"	subq	16(%r8), %rax\n"			/* - woff */
"	cmpq	24(%r8), %rax\n"			/* wlen */
"	jae	.Lp_miss\n"
"	movq	24(%r8), %rcx\n"
"	subq	%rax, %rcx\n"				/* what it holds on */
"	cmpq	%rdx, %rcx\n"
"	jae	3f\n"
"	cmpl	$0, 4(%r8)\n"				/* eof */
"	je	.Lp_miss\n"
"	jmp	4f\n"
"3:	movq	%rdx, %rcx\n"
"4:	rstub_wsame -8(%rsp), .Lp_miss\n"
"	movq	%rax, %rsi\n"
"	rdtsc\n"
"	shlq	$32, %rdx\n"
"	orq	%rdx, %rax\n"
"	cmpq	32(%r8), %rax\n"			/* deadline */
"	jae	.Lp_miss\n"
"	addq	40(%r8), %rsi\n"			/* data */
"	movq	%r10, %rdi\n"
"	movq	%rcx, %rax\n"
"	rep movsb\n"
"	movq	-8(%rsp), %rcx\n"
"	addq	%rax, %rcx\n"
"	incq	48(%r8)\n"				/* hits */
"	movq	%rcx, 56(%r8)\n"			/* pnext: the commit */
"rstub_pret:\n"
"	ret\n"
".Lp_miss:\n"
"	movq	%r9, %rdi\n"
"	movq	%r10, %rsi\n"
"	movq	%r11, %rdx\n"
"	movq	-8(%rsp), %rcx\n"
"rstub_ptramp:\n"
"	.fill 32, 1, 0xcc\n"
/* write(fd, buf, count): into the ring of the write slot, head the commit */
"wstub_code:\n"
"	movq	%rdi, %r9\n"
"	movq	%rsi, %r10\n"
"	movq	%rdx, %r11\n"
"wstub_saved:\n"
"	lstub_try 1, 1\n"
"	cmpl	$0, .Lr_start+4096(%rip)\n"	/* on */
"	je	.Lw_miss\n"
"	leaq	.Lr_start+4096+576(%rip), %r8\n"	/* the write slot */
"	cmpl	%edi, (%r8)\n"			/* fd */
"	jne	.Lw_miss\n"
"	cmpl	$1, 4(%r8)\n"			/* SYS_write's */
"	jne	.Lw_miss\n"
"	testq	%rdx, %rdx\n"
"	jz	.Lw_miss\n"
"	btsq	$63, 8(%r8)\n"			/* busy: ours, or a */
"	jc	.Lw_miss\n"			/* handler's inside ours */
"	movq	8(%r8), %rax\n"
"	btrq	$63, %rax\n"			/* head */
"	wstub_put .Lw_free, wstub_ret\n"
".Lw_miss:\n"
"	movq	%r9, %rdi\n"
"	movq	%r10, %rsi\n"
"	movq	%r11, %rdx\n"
"wstub_tramp:\n"
"	.fill 32, 1, 0xcc\n"
/* pwrite64(fd, buf, count, offset %rcx): where the ring's bytes end */
"wstub_pcode:\n"
"	movq	%rdi, %r9\n"
"	movq	%rsi, %r10\n"
"	movq	%rdx, %r11\n"
"	movq	%rcx, -8(%rsp)\n"
"wstub_psaved:\n"
"	lstub_try 18, 1\n"
"	cmpl	$0, .Lr_start+4096(%rip)\n"	/* on */
"	je	.Lq_miss\n"
"	leaq	.Lr_start+4096+576(%rip), %r8\n"	/* the write slot */
"	cmpl	%edi, (%r8)\n"			/* fd */
"	jne	.Lq_miss\n"
"	cmpl	$18, 4(%r8)\n"			/* SYS_pwrite64's */
"	jne	.Lq_miss\n"
"	testq	%rdx, %rdx\n"
"	jz	.Lq_miss\n"
"	btsq	$63, 8(%r8)\n"			/* busy: ours, or a */
"	jc	.Lq_miss\n"			/* handler's inside ours */
"	movq	8(%r8), %rax\n"
"	btrq	$63, %rax\n"			/* head */
"	addq	48(%r8), %rax\n"		/* + base */
"	cmpq	%rcx, %rax\n"
"	jne	.Lq_free\n"
"	subq	48(%r8), %rax\n"
"	wstub_put .Lq_free, wstub_pret\n"
".Lq_miss:\n"
"	movq	%r9, %rdi\n"
"	movq	%r10, %rsi\n"
"	movq	%r11, %rdx\n"
"	movq	-8(%rsp), %rcx\n"
"wstub_ptramp:\n"
"	.fill 32, 1, 0xcc\n"
"	lstub_only 75, lstub_fdcode, lstub_fdsaved, lstub_fdtramp\n"	/* fdatasync */
"	lstub_only 74, lstub_fscode, lstub_fssaved, lstub_fstramp\n"	/* fsync */
"	lstub_only 8, lstub_lscode, lstub_lssaved, lstub_lstramp\n"	/* lseek */
/*
 * fcntl's lock commands (F_GETLK, F_SETLK, F_SETLKW and their OFD kind)
 * and flock: the stub's too while lon says locks (RSTUB_LON_LOCKS), which
 * the guest takes away, with R stopped, before R may leave (its locks
 * must then be seen: remote_may_leave).
 */
"lstub_lkcode:\n"
"	movq	%rdi, %r9\n"
"	movq	%rsi, %r10\n"
"	movq	%rdx, %r11\n"
"lstub_lksaved:\n"
"	testl	$2, .Lr_start+4096+4(%rip)\n"		/* lon: locks */
"	jz	7f\n"
"	cmpl	$5, %esi\n"				/* F_GETLK */
"	jb	7f\n"
"	cmpl	$7, %esi\n"				/* F_SETLKW */
"	jbe	6f\n"
"	cmpl	$36, %esi\n"				/* F_OFD_GETLK */
"	jb	7f\n"
"	cmpl	$38, %esi\n"				/* F_OFD_SETLKW */
"	ja	7f\n"
"6:\n"
"	lstub_try 72, 0\n"
"7:\n"
"	movq	%r9, %rdi\n"
"	movq	%r10, %rsi\n"
"	movq	%r11, %rdx\n"
"lstub_lktramp:\n"
"	.fill 32, 1, 0xcc\n"
"lstub_flcode:\n"
"	movq	%rdi, %r9\n"
"	movq	%rsi, %r10\n"
"	movq	%rdx, %r11\n"
"lstub_flsaved:\n"
"	testl	$2, .Lr_start+4096+4(%rip)\n"		/* lon: locks */
"	jz	7f\n"
"	lstub_try 73, 0\n"
"7:\n"
"	movq	%r9, %rdi\n"
"	movq	%r10, %rsi\n"
"	movq	%r11, %rdx\n"
"lstub_fltramp:\n"
"	.fill 32, 1, 0xcc\n"
/*
 * getpid and the like: the k-th value of ival, while ion says it is the
 * identity; else libc's own, the call the guest answers. Nothing to keep:
 * the load and the ret are the whole of it.
 */
"	.macro	istub k, code, ret, tramp\n"
"\\code:\n"
"	cmpl	$0, .Lr_start+4096+640(%rip)\n"		/* ion */
"	je	\\tramp\n"
"	lock incq .Lr_start+4096+672(%rip)\n"		/* ihits */
"	movl	.Lr_start+4096+644+4*\\k(%rip), %eax\n"	/* ival[k] */
"\\ret:\n"
"	ret\n"
"\\tramp:\n"
"	.fill 32, 1, 0xcc\n"
"	.endm\n"
"	istub 0, istub_pid, istub_pidret, istub_pidtramp\n"
"	istub 1, istub_ppid, istub_ppidret, istub_ppidtramp\n"
"	istub 2, istub_uid, istub_uidret, istub_uidtramp\n"
"	istub 3, istub_euid, istub_euidret, istub_euidtramp\n"
"	istub 4, istub_gid, istub_gidret, istub_gidtramp\n"
"	istub 5, istub_egid, istub_egidret, istub_egidtramp\n"
/*
 * fstat of a descriptor of a file opened here: the call made here, marked
 * (the filter lets it run), and the home's device number put in (ldev),
 * as the guest's answer says it (shared_fstat). Its failure, and any
 * other descriptor, go to libc's: the guest's answer, errno libc's. The
 * syscall instruction is the stub's own: after it the thread is still
 * before the commit (the ret), and put back at fstat's start it makes the
 * call again, which changes nothing.
 */
"lstub_ftcode:\n"
"	movq	%rdi, %r9\n"
"	movq	%rsi, %r10\n"
"lstub_ftsaved:\n"
"	lstub_mine 8f\n"
"	movl	%edi, %edi\n"
"	movabsq	$0x6f736d3100000000, %rax\n"		/* RMT_CLOCK_MAGIC */
"	orq	%rax, %rdi\n"
"	movl	$5, %eax\n"				/* SYS_fstat */
"	syscall\n"
"	testq	%rax, %rax\n"
"	jnz	8f\n"
"	leaq	.Lr_start+4096+1024(%rip), %rax\n"	/* ldev */
"	movl	%r9d, %ecx\n"
"	movq	(%rax,%rcx,8), %rax\n"
"	movq	%rax, (%r10)\n"				/* st_dev */
"	lock incq .Lr_start+4096+16(%rip)\n"		/* lhits */
"	xorl	%eax, %eax\n"
"lstub_ftret:\n"
"	ret\n"
"8:\n"
"	movq	%r9, %rdi\n"
"	movq	%r10, %rsi\n"
"lstub_fttramp:\n"
"	.fill 32, 1, 0xcc\n"
/*
 * close of a descriptor of a file opened here, while con (one thread):
 * its bit cleared (the stub's from then on, and no other call of R's on
 * it is the stub's), the descriptor put in the ring's slot at chead and
 * chead moved past it if no signal handler's close took the slot
 * meanwhile (cmpxchg, the commit; else again at the new head), and the
 * close made through libc's syscall() as lstub_try's calls are. A bit
 * already cleared, a full ring: libc's, the guest's (its bit stays
 * cleared: the guest's close needs none).
 * Put back at close's start before the jump, a thread makes the call
 * again; the guest takes a close from the ring only once R's descriptor
 * is no longer its file (kcmp).
 */
"lstub_clcode:\n"
"	movq	%rdi, %r9\n"
"lstub_clsaved:\n"
"	cmpl	$0, .Lr_start+4096+3072(%rip)\n"	/* con */
"	je	8f\n"
"	lstub_mine 8f\n"
"	lock btrl %edi, .Lr_start+4096+32(%rip)\n"	/* lfds */
"	jnc	8f\n"
"	leaq	.Lr_start+4096+3088(%rip), %rcx\n"	/* cfds */
"1:\n"
"	movl	.Lr_start+4096+3076(%rip), %eax\n"	/* chead */
"	movl	%eax, %edx\n"
"	subl	.Lr_start+4096+3080(%rip), %edx\n"	/* - ctail */
"	cmpl	$64, %edx\n"				/* RSTUB_CLOSES */
"	jae	8f\n"
"	movl	%eax, %edx\n"
"	andl	$63, %edx\n"
"	movl	%edi, (%rcx,%rdx,4)\n"
"	leal	1(%rax), %edx\n"
"	lock cmpxchgl %edx, .Lr_start+4096+3076(%rip)\n" /* the commit */
"	jne	1b\n"				/* a handler's close came between */
"	lock incq .Lr_start+4096+16(%rip)\n"		/* lhits */
"	movl	%edi, %esi\n"
"	movabsq	$0x6f736d3100000000, %rax\n"		/* RMT_CLOCK_MAGIC */
"	orq	%rax, %rsi\n"
"	movl	$3, %edi\n"				/* SYS_close */
"	jmpq	*.Lr_start+4096+8(%rip)\n"		/* lsyscall */
"8:\n"
"	movq	%r9, %rdi\n"
"lstub_cltramp:\n"
"	.fill 32, 1, 0xcc\n"
"rstub_end:\n"
"	.popsection\n");

_Static_assert(RSTUB_SLOTS == 4, "the stub's slots");
_Static_assert(sizeof(struct rstub_slot) == 128 &&
    offsetof(struct rstub_slot, eof) == 4 &&
    offsetof(struct rstub_slot, pos) == 8 &&
    offsetof(struct rstub_slot, woff) == 16 &&
    offsetof(struct rstub_slot, wlen) == 24 &&
    offsetof(struct rstub_slot, deadline) == 32 &&
    offsetof(struct rstub_slot, data) == 40 &&
    offsetof(struct rstub_slot, hits) == 48 &&
    offsetof(struct rstub_slot, pnext) == 56 &&
    offsetof(struct rstub_slot, rok) == 64 &&
    offsetof(struct rstub_slot, wsame) == 68 &&
    offsetof(struct rstub_shm, slot) == 64, "the stub's slots");
_Static_assert(sizeof(struct rstub_wslot) == 64 &&
    offsetof(struct rstub_wslot, nr) == 4 &&
    offsetof(struct rstub_wslot, head) == 8 &&
    offsetof(struct rstub_wslot, room) == 16 &&
    offsetof(struct rstub_wslot, deadline) == 24 &&
    offsetof(struct rstub_wslot, ring) == 32 &&
    offsetof(struct rstub_wslot, hits) == 40 &&
    offsetof(struct rstub_wslot, base) == 48 &&
    offsetof(struct rstub_shm, w) == 576 &&
    SYS_write == 1 && SYS_pwrite64 == 18, "the stub's write slot");
_Static_assert(offsetof(struct rstub_shm, lon) == 4 &&
    offsetof(struct rstub_shm, lsyscall) == 8 &&
    offsetof(struct rstub_shm, lhits) == 16 &&
    offsetof(struct rstub_shm, lwrites) == 24 &&
    offsetof(struct rstub_shm, lfds) == 32 && RSTUB_LFDS == 256 &&
    RMT_CLOCK_MAGIC == 0x6f736d31U && SYS_read == 0 && SYS_pread64 == 17 &&
    SYS_fdatasync == 75 && SYS_fsync == 74 && SYS_lseek == 8 &&
    SYS_fcntl == 72 && SYS_flock == 73 && F_GETLK == 5 && F_SETLKW == 7 &&
    F_OFD_GETLK == 36 && F_OFD_SETLKW == 38 && RSTUB_LON_CALLS == 1 &&
    RSTUB_LON_LOCKS == 2,
    "the stub's calls on files opened here");
_Static_assert(offsetof(struct rstub_shm, ion) == 640 &&
    offsetof(struct rstub_shm, ival) == 644 &&
    offsetof(struct rstub_shm, ihits) == 672 && RSTUB_IDENT == 6,
    "the stub's identity");
_Static_assert(offsetof(struct rstub_shm, con) == 3072 &&
    offsetof(struct rstub_shm, chead) == 3076 &&
    offsetof(struct rstub_shm, ctail) == 3080 &&
    offsetof(struct rstub_shm, cfds) == 3088 && RSTUB_CLOSES == 64 &&
    SYS_close == 3, "the stub's closes");
_Static_assert(offsetof(struct rstub_shm, ldev) == 1024 &&
    sizeof(struct rstub_shm) <= RSTUB_DATA && SYS_fstat == 5 &&
    offsetof(struct stat, st_dev) == 0, "the stub's fstat");

/*
 * libc's syscall(), as the stub's calls on files opened here want it: the
 * arguments moved down one register, the seventh from the stack, the
 * call, and errno set from its result. Its first bytes, and where the
 * call has returned (the thread is past the arguments).
 */
static const uint8_t rstub_syscall_start[16] = {
	0x48, 0x89, 0xf8,		/* mov %rdi, %rax */
	0x48, 0x89, 0xf7,		/* mov %rsi, %rdi */
	0x48, 0x89, 0xd6,		/* mov %rdx, %rsi */
	0x48, 0x89, 0xca,		/* mov %rcx, %rdx */
	0x4d, 0x89, 0xc2,		/* mov %r8, %r10 */
	0x4d				/* mov %r9, %r8 ... */
};

/*
 * A thread of R's stopped at pc: is it making a lock call the stub took,
 * past the stub's look at lon (in fcntl's or flock's stub before its
 * jump, or in libc's syscall() before the call)? A call of the stub's
 * already in the kernel says so itself (its marked descriptor).
 */
int
rstub_locking(const struct rstub *s, uint64_t pc)
{
	const struct rstub_patch	*p[] = { &s->fcntl, &s->flock };
	size_t				 i;

	for (i = 0; i < nitems(p); i++)
		if (p[i]->fn != 0 && pc >= p[i]->code && pc < p[i]->tramp)
			return 1;
	return s->fcntl.lsyscall != 0 && pc >= s->fcntl.lsyscall &&
	    pc < s->fcntl.lsyscall + RSTUB_SYSCALL_DONE;
}

/*
 * The functions the stub takes over, in that order, and libc's syscall()
 * (RSTUB_SYSCALL), which its calls on files opened here go through.
 */
enum { RSTUB_READ, RSTUB_PREAD, RSTUB_WRITE, RSTUB_PWRITE, RSTUB_FDATASYNC,
	RSTUB_FSYNC, RSTUB_LSEEK, RSTUB_FCNTL, RSTUB_FLOCK, RSTUB_FSTAT,
	RSTUB_CLOSE, RSTUB_GETPID, RSTUB_NFN = RSTUB_GETPID + RSTUB_IDENT,
	RSTUB_SYSCALL = RSTUB_NFN };
static const char *const rstub_names[RSTUB_NFN + 1] = {
	"read", "pread64", "write", "pwrite64", "fdatasync", "fsync",
	"lseek", "fcntl64", "flock", "fstat", "close", "getpid", "getppid",
	"getuid", "geteuid", "getgid", "getegid", "syscall"
};

/*
 * R's memfd for the shared part, made in R (held in t, before its filter:
 * the filter would send the call home), and ours of the same: R's
 * descriptor in *rfd, ours returned; -1 with *cause.
 */
static int
rstub_memfd(struct mig_task *t, pid_t pid, uint64_t name, long *rfd,
    char **cause)
{
	int	pidfd, fd = -1;

	if (mig_call_ok(t, "memfd_create", rfd, SYS_memfd_create,
	    (sysargs){ name, MFD_CLOEXEC }, cause) == -1)
		return -1;
	if ((pidfd = syscall(SYS_pidfd_open, pid, 0)) == -1 ||
	    (fd = syscall(SYS_pidfd_getfd, pidfd, (int)*rfd, 0)) == -1 ||
	    ftruncate(fd, RSTUB_LEN) == -1) {
		xasprintf(cause, "the read stub's memfd: %s", strerror(errno));
		if (fd != -1)
			close(fd);
		fd = -1;
	}
	if (pidfd != -1)
		close(pidfd);
	return fd;
}

/* Each function's stub: its start, its commit's end, its trampoline. */
static const struct rstub_code {
	struct rstub_entry e;
	int		 offset_kept;	/* in the red zone: pread64's */
} rstub_codes[RSTUB_NFN] = {
	{ { rstub_code, rstub_code, rstub_saved, rstub_ret, rstub_tramp }, 0 },
	{ { rstub_code, rstub_pcode, rstub_psaved, rstub_pret, rstub_ptramp },
	    1 },
	{ { rstub_code, wstub_code, wstub_saved, wstub_ret, wstub_tramp }, 0 },
	{ { rstub_code, wstub_pcode, wstub_psaved, wstub_pret, wstub_ptramp },
	    1 },
	{ { rstub_code, lstub_fdcode, lstub_fdsaved, NULL, lstub_fdtramp }, 0 },
	{ { rstub_code, lstub_fscode, lstub_fssaved, NULL, lstub_fstramp }, 0 },
	{ { rstub_code, lstub_lscode, lstub_lssaved, NULL, lstub_lstramp }, 0 },
	{ { rstub_code, lstub_lkcode, lstub_lksaved, NULL, lstub_lktramp }, 0 },
	{ { rstub_code, lstub_flcode, lstub_flsaved, NULL, lstub_fltramp }, 0 },
	{ { rstub_code, lstub_ftcode, lstub_ftsaved, lstub_ftret,
	    lstub_fttramp }, 0 },
	{ { rstub_code, lstub_clcode, lstub_clsaved, NULL, lstub_cltramp },
	    0 },
	{ { rstub_code, istub_pid, istub_pid, istub_pidret, istub_pidtramp },
	    0 },
	{ { rstub_code, istub_ppid, istub_ppid, istub_ppidret,
	    istub_ppidtramp }, 0 },
	{ { rstub_code, istub_uid, istub_uid, istub_uidret, istub_uidtramp },
	    0 },
	{ { rstub_code, istub_euid, istub_euid, istub_euidret,
	    istub_euidtramp }, 0 },
	{ { rstub_code, istub_gid, istub_gid, istub_gidret, istub_gidtramp },
	    0 },
	{ { rstub_code, istub_egid, istub_egid, istub_egidret,
	    istub_egidtramp }, 0 },
};

/*
 * libc's syscall() in process pid, at fn (sym, in its file), if it is the
 * one the stub knows: its address, or 0 (the stub then leaves the calls
 * on files opened here to the guest).
 */
static uint64_t
rstub_syscall(pid_t pid, const struct rstub_sym *sym, uint64_t fn)
{
	uint8_t		b[sizeof rstub_syscall_start];
	struct iovec	local = { b, sizeof b };
	struct iovec	remote = { (void *)(uintptr_t)fn, sizeof b };

	if (sym->off == 0 || memcmp(sym->start, rstub_syscall_start,
	    sizeof b) != 0 || process_vm_readv(pid, &local, 1, &remote, 1, 0) !=
	    sizeof b || memcmp(b, rstub_syscall_start, sizeof b) != 0)
		return 0;
	return fn;
}

/*
 * Put the read stub into process pid (R), held in t before its filter
 * (its memfd is mapped by calls the filter would send home), of one
 * thread: libc's read, and its pread64, write and pwrite64 that start as
 * we know. 0, or -1 with *cause: no stub.
 */
int
rstub_install(struct rstub *s, struct mig_task *t, pid_t pid, char **cause)
{
	struct rstub_sym syms[RSTUB_NFN + 1];
	struct rstub_patch *p[RSTUB_NFN] = { &s->read, &s->pread, &s->write,
			    &s->pwrite, &s->fdatasync, &s->fsync, &s->lseek,
			    &s->fcntl, &s->flock, &s->fstat, &s->close,
			    &s->ident[0], &s->ident[1], &s->ident[2],
			    &s->ident[3], &s->ident[4], &s->ident[5] };
	const struct rstub_code *c;
	uint8_t		 page[RSTUB_PAGE];
	char		 path[512], *ignored = NULL;
	uint64_t	 base, at, lsyscall;
	size_t		 len = RSTUB_PAGE + RSTUB_LEN;
	struct rstub_shm *shm = MAP_FAILED;
	long		 rfd = -1, rv;
	int		 fd = -1, i, j;

	memset(s, 0, sizeof *s);
	if (rstub_libc(pid, &base, path, sizeof path) == -1) {
		xasprintf(cause, "no libc.so.6");
		return -1;
	}
	rstub_symbols(path, rstub_names, syms, RSTUB_NFN + 1);
	if (syms[RSTUB_READ].off == 0) {
		xasprintf(cause, "no read in %s", path);
		return -1;
	}
	if ((at = stub_map(t, base, base + syms[RSTUB_READ].off, len)) == 0) {
		xasprintf(cause, "no room near libc");
		return -1;
	}
	if (rstub_end - rstub_code > RSTUB_PAGE) {
		xasprintf(cause, "the stub is over a page");
		return -1;
	}
	memset(page, 0xcc, sizeof page);
	memcpy(page, rstub_code, rstub_end - rstub_code);
	lsyscall = rstub_syscall(pid, &syms[RSTUB_SYSCALL],
	    base + syms[RSTUB_SYSCALL].off);
	for (i = 0; i < RSTUB_NFN; i++) {
		c = &rstub_codes[i];
		/* read's is the stub; the others' where they can be */
		if (syms[i].off == 0 ||
		    base + syms[i].off - at >= RSTUB_NEAR ||
		    rstub_prepare(p[i], pid, &syms[i], base + syms[i].off,
		    at, page, &c->e) == -1) {
			memset(p[i], 0, sizeof *p[i]);
			if (i == RSTUB_READ) {
				xasprintf(cause, "libc's read is not %s's, "
				    "or starts with instructions that cannot "
				    "move", path);
				goto unmap;
			}
		}
		p[i]->offset_kept = c->offset_kept;
		p[i]->lsyscall = lsyscall;
	}

	/* the memfd's name, in the page that will be the code */
	if (mig_write(t, at, "osmosis-rstub", 14, cause) == -1 ||
	    (fd = rstub_memfd(t, pid, at, &rfd, cause)) == -1)
		goto unmap;
	if ((shm = mmap(NULL, RSTUB_LEN, PROT_READ | PROT_WRITE, MAP_SHARED,
	    fd, 0)) == MAP_FAILED) {
		xasprintf(cause, "map the read stub's memfd: %s",
		    strerror(errno));
		goto unmap;
	}
	if (mig_call_ok(t, "mmap the read stub's memfd", &rv, SYS_mmap,
	    (sysargs){ at + RSTUB_PAGE, RSTUB_LEN, PROT_READ | PROT_WRITE,
	    MAP_SHARED | MAP_FIXED, rfd, 0 }, cause) == -1)
		goto unmap;
	if (mig_write(t, at, page, sizeof page, cause) == -1 ||
	    mig_call_ok(t, "mprotect the read stub", &rv, SYS_mprotect,
	    (sysargs){ at, RSTUB_PAGE, PROT_READ | PROT_EXEC }, cause) == -1)
		goto unmap;
	for (i = 0; i < RSTUB_NFN; i++) {
		if (p[i]->fn == 0 || rstub_patch(p[i], t, cause) == 0)
			continue;
		/* those in before: take them out again */
		for (j = 0; j < i; j++) {
			if (p[j]->fn != 0 && stub_poke(pid, p[j]->fn,
			    p[j]->orig, p[j]->displaced, &ignored) == -1) {
				free(ignored);
				ignored = NULL;
			}
		}
		goto unmap;
	}

	if (mig_call_ok(t, "close", NULL, SYS_close, (sysargs){ rfd },
	    &ignored) == -1)
		free(ignored);
	close(fd);
	/* read by rstub_attach: the calls on files opened here too */
	shm->lsyscall = lsyscall;
	s->start = at;
	s->len = len;
	s->shm = shm;
	s->shared = at + RSTUB_PAGE;
	s->read.hidden.start = at;
	s->read.hidden.end = at + len;
	/* one chain for dumps: read's, then each other patched */
	for (i = RSTUB_NFN - 1, j = -1; i > RSTUB_READ; i--) {
		if (p[i]->fn == 0)
			continue;
		p[i]->hidden.next = j == -1 ? NULL : &p[j]->hidden;
		j = i;
	}
	if (j != -1)
		s->read.hidden.next = &p[j]->hidden;
	return 0;

unmap:
	if (rfd != -1 && mig_call_ok(t, "close", NULL, SYS_close,
	    (sysargs){ rfd }, &ignored) == -1)
		free(ignored);
	if (shm != MAP_FAILED)
		munmap(shm, RSTUB_LEN);
	if (fd != -1)
		close(fd);
	stub_unmap(t, at, len);
	memset(s, 0, sizeof *s);
	return -1;
}
