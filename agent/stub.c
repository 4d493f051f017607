/*
 * The clock stub: a process's CPU-time clocks answered inside it, with no
 * wakeup of another process and no ptrace stop, adding the CPU time it
 * used elsewhere (shared by the guest agent, for R, and the deputy, for P
 * back home: guest-stub.c, deputy-clock.c). A program that polls clock(),
 * time.process_time() or clock_gettime(CLOCK_PROCESS_CPUTIME_ID) calls
 * the vDSO's clock_gettime, which for a CPU clock makes the system call.
 * So the vDSO's clock_gettime in the process starts with a jump to a page
 * of ours in it: for CLOCK_PROCESS_CPUTIME_ID and CLOCK_THREAD_CPUTIME_ID
 * it makes the call itself, with RMT_CLOCK_MAGIC in the id's high half
 * (the kernel ignores those bits; R's filter lets exactly that run), and
 * adds the CPU time used before: the process's to the process's clock,
 * the calling thread's own to its thread clock. Each thread's is in a
 * table, (tid, base); the stub finds its thread's entry by its id, from
 * a gettid made with the same magic in its first argument, without a
 * round trip. A thread with no entry starts at 0; the owner zeroes an
 * entry whose thread ended (stub_thread_gone), for its id may come back.
 * Any other clock goes on in the vDSO, through the instructions the jump
 * displaced, copied after the stub, and a jump back.
 *
 * The stub is ours, not the program's: dumps of the process leave its
 * pages out, record the vDSO as the kernel made it, and record a thread
 * stopped in the stub as stopped at the same point of the vDSO's
 * clock_gettime (mig_hide, stub->hidden). A vDSO whose clock_gettime
 * starts with instructions we do not know to be movable, or no room near
 * the vDSO for the pages, and no stub.
 */
#include <sys/mman.h>
#include <sys/syscall.h>

#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

/*
 * After ev.h (in internal.h), whose EV_NONE elf.h (and sys/auxv.h with it)
 * defines as a macro.
 */
#include <sys/auxv.h>

#include <elf.h>

#define STUB_PAGE	4096
#define STUB_THREADS	4096		/* at most, in its table */
#define STUB_JMP	5		/* e9 rel32 */
#define STUB_NEAR	(1ULL << 30)	/* within a jmp rel32 of the vDSO */
#define NSEC		1000000000ULL

/*
 * The stub, position-independent, as bytes to copy into the process.
 * Entered by a jump from the start of the vDSO's clock_gettime(clockid
 * %edi, tp %rsi), so it returns to the vDSO's caller; %rax, %rcx, %rdx,
 * %rdi, %r8 and %r11 are the caller's to lose (the C ABI's). Its page is
 * code and the trampoline (the displaced instructions and a jump back),
 * filled in per process; the page after it is data (struct stub_data:
 * the process's base, the threads' table), wiped in a child the process
 * forks (MADV_WIPEONFORK), whose clocks are then its own from 0. A base,
 * and a table entry, is { tid (entries only), nanoseconds, seconds }: 4,
 * 4 and 8 bytes. The thread's id comes from gettid, with the magic in its
 * first argument (which gettid ignores) for R's filter to let it run;
 * while the process has had only one thread (one not 0), the table's one
 * entry is its, and the stub makes no gettid.
 */
extern const uint8_t stub_code[], stub_tramp[], stub_end[];
__asm__(
"	.pushsection .rodata.osm_clock_stub, \"a\"\n"
"	.balign 16\n"
"	.globl stub_code, stub_tramp, stub_end\n"
"stub_code:\n"
".Lstart:\n"
"	cmpl	$2, %edi\n"			/* CLOCK_PROCESS_CPUTIME_ID */
"	je	1f\n"
"	cmpl	$3, %edi\n"			/* CLOCK_THREAD_CPUTIME_ID */
"	jne	.Ltramp\n"
"	movabsq	$0x6f736d3100000000, %rax\n"	/* RMT_CLOCK_MAGIC << 32 */
"	movl	%edi, %edi\n"
"	orq	%rax, %rdi\n"
"	leaq	.Lstart+4096+128(%rip), %r8\n"	/* the table */
"	cmpl	$0, .Lstart+4096+20(%rip)\n"	/* one */
"	jne	2f\n"
"	movl	$186, %eax\n"			/* SYS_gettid */
"	syscall\n"
"	movq	%r8, %rcx\n"
"	leaq	.Lstart+4096+32(%rip), %r8\n"	/* none: 0 */
"	movl	.Lstart+4096+16(%rip), %edx\n"	/* count */
"4:	testl	%edx, %edx\n"
"	jz	2f\n"
"	cmpl	%eax, (%rcx)\n"
"	je	5f\n"
"	addq	$16, %rcx\n"
"	decl	%edx\n"
"	jmp	4b\n"
"5:	movq	%rcx, %r8\n"
"	jmp	2f\n"
"1:	movabsq	$0x6f736d3100000000, %rax\n"
"	movl	%edi, %edi\n"
"	orq	%rax, %rdi\n"
"	leaq	.Lstart+4096(%rip), %r8\n"	/* the process's base */
"2:	movl	$228, %eax\n"			/* SYS_clock_gettime */
"	syscall\n"
"	testq	%rax, %rax\n"
"	jnz	3f\n"
"	movq	8(%r8), %rcx\n"
"	addq	%rcx, (%rsi)\n"
"	movl	4(%r8), %ecx\n"
"	addq	8(%rsi), %rcx\n"
"	cmpq	$1000000000, %rcx\n"
"	jb	6f\n"
"	subq	$1000000000, %rcx\n"
"	incq	(%rsi)\n"
"6:	movq	%rcx, 8(%rsi)\n"
"	xorl	%eax, %eax\n"
"3:	ret\n"
"stub_tramp:\n"
".Ltramp:	.fill 32, 1, 0xcc\n"
"stub_end:\n"
"	.popsection\n");

_Static_assert(SYS_clock_gettime == 228, "the stub's call number");
_Static_assert(SYS_gettid == 186, "the stub's call number");
_Static_assert(RMT_CLOCK_MAGIC == 0x6f736d31, "the stub's magic");

/* A base as the stub reads it. */
struct stub_base {
	int32_t		 tid;
	uint32_t	 nsec;
	uint64_t	 sec;
};

/*
 * The data page, as the stub's code reads it (its offsets), and the usage
 * stub's (ustub.c): the same bases as getrusage's user and system
 * timevals, and times()'s ticks. After the table, each thread's entry's
 * usage (struct stub_usage), in the table's order.
 */
struct stub_data {
	struct stub_base proc;		/* 0 */
	uint32_t	 count;		/* 16: entries in the table */
	uint32_t	 one;		/* 20 */
	uint64_t	 pad;
	struct stub_base none;		/* 32: all 0, and the 16 after it */
	uint8_t		 pad2[16];
	struct stub_usage proc_usage;	/* 64 */
	int64_t		 proc_ticks[2];	/* 96: user, system */
	uint8_t		 pad3[16];
	struct stub_base table[];	/* 128 */
};
_Static_assert(sizeof(struct stub_base) == 16, "the stub's entries");
_Static_assert(sizeof(struct stub_usage) == 32, "the usage entries");
_Static_assert(offsetof(struct stub_data, count) == 16 &&
    offsetof(struct stub_data, one) == 20 &&
    offsetof(struct stub_data, none) == 32 &&
    offsetof(struct stub_data, proc_usage) == 64 &&
    offsetof(struct stub_data, proc_ticks) == 96 &&
    offsetof(struct stub_data, table) == 128, "the stub's data");


/*
 * The length of one instruction of a function's prologue that runs the
 * same anywhere (no address relative to itself), or 0 for anything else.
 */
static size_t
stub_insn(const uint8_t *p)
{
	if (p[0] == 0xf3 && p[1] == 0x0f && p[2] == 0x1e && p[3] == 0xfa)
		return 4;			/* endbr64 */
	if (p[0] >= 0x50 && p[0] <= 0x57)
		return 1;			/* push %reg */
	if (p[0] == 0x41 && p[1] >= 0x50 && p[1] <= 0x57)
		return 2;			/* push %r8-%r15 */
	if (p[0] == 0x48 && p[1] == 0x89 && p[2] == 0xe5)
		return 3;			/* mov %rsp, %rbp */
	if (p[0] == 0x48 && p[1] == 0x83 && (p[2] == 0xec || p[2] == 0xe4))
		return 4;			/* sub, and $imm8, %rsp */
	if (p[0] == 0x48 && p[1] == 0x81 && p[2] == 0xec)
		return 7;			/* sub $imm32, %rsp */
	if (p[0] >= 0xb8 && p[0] <= 0xbf)
		return 5;			/* mov $imm32, %r32 */
	if (p[0] == 0x48 && p[1] == 0x89 && (p[2] & 0xc7) == 0x44 &&
	    p[3] == 0x24)
		return 5;			/* mov %r64, disp8(%rsp) */
	if ((p[0] & 0xf0) == 0x40 && (p[0] & 0x08) && p[1] == 0x89 &&
	    (p[2] & 0xc0) == 0xc0)
		return 3;			/* mov %r64, %r64 */
	if (p[0] == 0x85 && (p[1] & 0xc0) == 0xc0)
		return 2;			/* test %r32, %r32 */
	return 0;
}

/* How many bytes of whole movable instructions cover a jump, or 0. */
size_t
stub_displace(const uint8_t *p, size_t max)
{
	size_t	n = 0, k;

	while (n < STUB_JMP) {
		if (n + 8 > max || (k = stub_insn(p + n)) == 0)
			return 0;
		n += k;
	}
	return n;
}

/*
 * The offsets of the n symbols names[] in our own vDSO (the same kernel's
 * as R's: a restore checks the vDSO), or in an ELF file of len bytes at
 * vdso, from its section headers, into offs[]: 0 for one not found. One
 * pass over the symbols for all the names (libc has thousands).
 */
void
stub_symbols(const uint8_t *vdso, size_t len, const char *const *names,
    size_t n, uint64_t *offs)
{
	const Elf64_Ehdr	*eh = (const void *)vdso;
	const Elf64_Shdr	*sh, *strs;
	const Elf64_Sym		*sym;
	const char		*name;
	size_t			 i, j, k;

	for (k = 0; k < n; k++)
		offs[k] = 0;
	if (len < sizeof *eh || memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 ||
	    eh->e_shentsize != sizeof *sh ||
	    eh->e_shoff + (uint64_t)eh->e_shnum * sizeof *sh > len)
		return;
	sh = (const void *)(vdso + eh->e_shoff);
	for (i = 0; i < eh->e_shnum; i++) {
		if (sh[i].sh_type != SHT_DYNSYM || sh[i].sh_link >= eh->e_shnum)
			continue;
		strs = &sh[sh[i].sh_link];
		if (sh[i].sh_offset + sh[i].sh_size > len ||
		    strs->sh_offset + strs->sh_size > len)
			return;
		sym = (const void *)(vdso + sh[i].sh_offset);
		for (j = 0; j < sh[i].sh_size / sizeof *sym; j++) {
			if (sym[j].st_name >= strs->sh_size ||
			    sym[j].st_value >= len)
				continue;
			name = (const char *)vdso + strs->sh_offset +
			    sym[j].st_name;
			if (strnlen(name, strs->sh_size - sym[j].st_name) ==
			    strs->sh_size - sym[j].st_name)
				continue;
			for (k = 0; k < n; k++)
				if (offs[k] == 0 && name[0] == names[k][0] &&
				    strcmp(name, names[k]) == 0)
					offs[k] = sym[j].st_value;
		}
	}
}

/* The offset of symbol name, as stub_symbols; 0 if not found. */
uint64_t
stub_symbol(const uint8_t *vdso, size_t len, const char *name)
{
	uint64_t	off;

	stub_symbols(vdso, len, &name, 1, &off);
	return off;
}


/*
 * A thread stopped in the stub, for a dump: at the same point of the
 * vDSO's clock_gettime, whose instructions the trampoline runs as they
 * are; in the stub's own code, at its start (nothing it did shows but in
 * registers the caller loses, and in *tp, which the call writes again).
 */
static void
stub_rewind(void *arg, struct user_regs_struct *r)
{
	struct stub	*s = arg;

	if (r->rip >= s->tramp && r->rip <= s->tramp + s->displaced)
		r->rip = s->fn + (r->rip - s->tramp);
	else if (r->rip >= s->start && r->rip < s->tramp) {
		r->rip = s->fn;
		r->rdi = (uint32_t)r->rdi;
	}
}

/* Write len bytes at addr in process pid, as a debugger does. */
int
stub_poke(pid_t pid, uint64_t addr, const void *buf, size_t len,
    char **cause)
{
	char	path[64];
	int	fd;

	snprintf(path, sizeof path, "/proc/%d/mem", (int)pid);
	if ((fd = open(path, O_RDWR | O_CLOEXEC)) == -1 ||
	    pwrite(fd, buf, len, addr) != (ssize_t)len) {
		xasprintf(cause, "%s: %s", path, strerror(errno));
		if (fd != -1)
			close(fd);
		return -1;
	}
	close(fd);
	return 0;
}

/*
 * A jump from fn to to written over the len bytes at fn in process pid
 * (the instructions a stub displaced: at most 16), the rest of them int3s,
 * as a debugger writes (stub_poke: the vDSO is read-only to the process).
 */
int
stub_jump(pid_t pid, uint64_t fn, uint64_t to, size_t len, char **cause)
{
	uint8_t	jmp[16];
	int32_t	rel = (int32_t)(int64_t)(to - (fn + STUB_JMP));

	if (len < STUB_JMP || len > sizeof jmp) {
		xasprintf(cause, "a jump over %zu bytes", len);
		return -1;
	}
	memset(jmp, 0xcc, sizeof jmp);
	jmp[0] = 0xe9;
	memcpy(jmp + 1, &rel, 4);
	return stub_poke(pid, fn, jmp, len, cause);
}

/*
 * Entry i's thread ended, or its id is about to be a new thread's: it
 * starts at 0. The thread is in its exit (or not made yet) and reads it
 * no more.
 */
int
stub_thread_gone(struct stub *s, size_t i, char **cause)
{
	int32_t	zero = 0;

	if (s->start == 0 || i >= s->ntable)
		return 0;
	return stub_poke(s->pid, s->start + STUB_PAGE +
	    offsetof(struct stub_data, table) + i * sizeof(struct stub_base),
	    &zero, sizeof zero, cause);
}

/*
 * The process is making a thread, which waits to run: from now on the
 * stub looks its thread up (it had only one, and took the table's entry
 * as its). -1 if the stub could not be told: the thread clocks would be
 * wrong.
 */
int
stub_threaded(struct stub *s, char **cause)
{
	uint32_t	zero = 0;

	if (s->start == 0 || !s->one)
		return 0;
	if (stub_poke(s->pid, s->start + STUB_PAGE + offsetof(struct stub_data,
	    one), &zero, sizeof zero, cause) == -1)
		return -1;
	s->one = 0;
	return 0;
}

void
stub_unmap(struct mig_task *t, uint64_t at, size_t len)
{
	char	*cause = NULL;
	long	 rv;

	if (mig_call(t, &rv, SYS_munmap, (sysargs){ at, len },
	    &cause) == -1)
		free(cause);
}

/*
 * Map the stub's pages (len bytes) in the process near its vDSO (or what
 * else is at vdso), below it, where a program maps nothing of its own (it
 * would have to name the address), within a jump of fn: their address,
 * or 0.
 */
uint64_t
stub_map(struct mig_task *t, uint64_t vdso, uint64_t fn, size_t len)
{
	uint64_t	 at;
	char		*cause = NULL;
	long		 rv;
	int		 k;

	for (k = 1; k <= 64; k++) {
		at = (vdso - (uint64_t)k * (1ULL << 21)) & ~(STUB_PAGE - 1ULL);
		if (mig_call(t, &rv, SYS_mmap, (sysargs){ at, len,
		    PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS |
		    MAP_FIXED_NOREPLACE, -1, 0 }, &cause) == -1) {
			free(cause);
			return 0;
		}
		if ((uint64_t)rv == at && fn - at < STUB_NEAR)
			return at;
		if (rv > 0)
			stub_unmap(t, rv, len);
	}
	return 0;
}

/*
 * Threads stopped at from, or up to len bytes after it, go on at to, as
 * far after it. The clock and read stubs move those stopped among the
 * instructions the jump is to replace (a dump records one stopped in a
 * stub there, and a restore brings it back so) into the trampoline, at
 * the same instruction: the inverse of stub_rewind (one at the very
 * start runs the jump).
 */
int
stub_move_threads(struct mig_task *t, uint64_t from, size_t len, uint64_t to,
    char **cause)
{
	struct user_regs_struct	 r;
	pid_t			*tids;
	size_t			 n, i;
	int			 rc = -1;

	n = mig_threads(t, NULL, 0);
	tids = xcalloc(n, sizeof *tids);
	mig_threads(t, tids, n);
	for (i = 0; i < n; i++) {
		if (mig_thread_regs(t, tids[i], &r, cause) == -1)
			goto out;
		if (r.rip < from || r.rip >= from + len)
			continue;
		r.rip = to + (r.rip - from);
		if (mig_thread_set_regs(t, tids[i], &r, cause) == -1)
			goto out;
	}
	rc = 0;
out:
	free(tids);
	return rc;
}

static struct stub_base
stub_base(pid_t tid, uint64_t ns)
{
	return (struct stub_base){ tid, ns % NSEC, ns / NSEC };
}

/*
 * user_ns and sys_ns as getrusage's two timevals, rounded up (added to
 * the kernel's, rounded down, they say no less than the sum would).
 */
static struct stub_usage
stub_usage(uint64_t user_ns, uint64_t sys_ns)
{
	uint64_t	u = (user_ns + 999) / 1000, s = (sys_ns + 999) / 1000;

	return (struct stub_usage){ u / 1000000, u % 1000000, s / 1000000,
	    s % 1000000 };
}

/* The part of ns that is the user's, as user_ns is of all_ns. */
static uint64_t
stub_user_part(uint64_t ns, uint64_t user_ns, uint64_t all_ns)
{
	if (all_ns == 0)
		return ns;
	return (unsigned __int128)ns * user_ns / all_ns;
}

/*
 * Put the stub into process pid, held in t (under R's filter, only local
 * calls may be injected), with the process's base proc_ns, the bases of
 * its user and system time for times() and getrusage() (user_ns, sys_ns:
 * each carried on its own, rounded up) and each thread's (c, as the
 * process knows its threads' ids, split as the process's is): in the
 * table in c's order. 0, or -1 with *cause: no stub.
 */
int
stub_install(struct stub *s, struct mig_task *t, pid_t pid, uint64_t proc_ns,
    uint64_t user_ns, uint64_t sys_ns, const struct mig_cpu *c, size_t n,
    char **cause)
{
	struct stub_data	*data;
	struct stub_usage	*usage;
	uint8_t			*page;
	uint64_t		 ours, ours_end, vdso, vdso_end, off, at, v;
	uint64_t		 tick;
	size_t			 code = stub_end - stub_code;
	size_t			 tramp = stub_tramp - stub_code;
	size_t			 len, i;
	long			 rv;

	memset(s, 0, sizeof *s);
	s->pid = pid;
	if (n > STUB_THREADS) {
		xasprintf(cause, "more than %d threads", STUB_THREADS);
		return -1;
	}
	ours = getauxval(AT_SYSINFO_EHDR);
	if (ours == 0 || proc_vdso(0, &ours, &ours_end) == -1 ||
	    proc_vdso(pid, &vdso, &vdso_end) == -1 ||
	    ours_end - ours != vdso_end - vdso) {
		xasprintf(cause, "no vDSO like ours");
		return -1;
	}
	if ((off = stub_symbol((const uint8_t *)ours, ours_end - ours,
	    "__vdso_clock_gettime")) == 0 || off + 16 > ours_end - ours) {
		xasprintf(cause, "no clock_gettime in the vDSO");
		return -1;
	}
	if ((s->displaced = stub_displace((const uint8_t *)ours + off,
	    16)) == 0) {
		xasprintf(cause, "the vDSO's clock_gettime starts with "
		    "instructions that cannot move");
		return -1;
	}
	memcpy(s->orig, (const uint8_t *)ours + off, s->displaced);
	s->fn = vdso + off;
	len = STUB_PAGE + (sizeof *data + n * (sizeof(struct stub_base) +
	    sizeof *usage) + STUB_PAGE - 1) / STUB_PAGE * STUB_PAGE;
	tick = NSEC / sysconf(_SC_CLK_TCK);
	if ((at = stub_map(t, vdso, s->fn, len)) == 0) {
		xasprintf(cause, "no room near the vDSO");
		return -1;
	}

	/*
	 * The stub and its trampoline: displaced, jmp *0(%rip), fn+n; then
	 * the data, the process's base and the threads' table.
	 */
	page = xcalloc(1, len);
	memset(page, 0xcc, STUB_PAGE);
	memcpy(page, stub_code, code);
	memcpy(page + tramp, s->orig, s->displaced);
	memcpy(page + tramp + s->displaced, "\xff\x25\0\0\0\0", 6);
	v = s->fn + s->displaced;
	memcpy(page + tramp + s->displaced + 6, &v, sizeof v);
	data = (struct stub_data *)(page + STUB_PAGE);
	data->proc = stub_base(0, proc_ns);
	data->proc_usage = stub_usage(user_ns, sys_ns);
	data->proc_ticks[0] = (user_ns + tick - 1) / tick;
	data->proc_ticks[1] = (sys_ns + tick - 1) / tick;
	usage = (struct stub_usage *)&data->table[n];
	for (i = 0; i < n; i++) {
		data->table[i] = stub_base(c[i].tid, c[i].ns);
		v = stub_user_part(c[i].ns, user_ns, user_ns + sys_ns);
		usage[i] = stub_usage(v, c[i].ns - v);
	}
	data->count = n;
	data->one = s->one = n == 1 && mig_threads(t, NULL, 0) == 1;
	rv = mig_write(t, at, page, len, cause);
	free(page);
	if (rv == -1 || mig_call_ok(t, "mprotect stub", &rv, SYS_mprotect,
	    (sysargs){ at, STUB_PAGE, PROT_READ | PROT_EXEC }, cause) == -1 ||
	    mig_call_ok(t, "mprotect stub", &rv, SYS_mprotect, (sysargs){ at +
	    STUB_PAGE, len - STUB_PAGE, PROT_READ }, cause) == -1 ||
	    mig_call_ok(t, "MADV_WIPEONFORK", &rv, SYS_madvise, (sysargs){ at +
	    STUB_PAGE, len - STUB_PAGE, MADV_WIPEONFORK }, cause) == -1)
		goto unmap;

	s->start = at;
	s->data = at + STUB_PAGE;
	s->len = len;
	s->ntable = n;
	s->tramp = at + tramp;
	if (stub_move_threads(t, s->fn + 1, s->displaced - 1, s->tramp + 1,
	    cause) == -1)
		goto unmap;
	/* the jump: only a debugger's write (ours: it is held) may do it */
	if (stub_jump(s->pid, s->fn, at, s->displaced, cause) == -1)
		goto unmap;

	s->hidden.start = at;
	s->hidden.end = at + len;
	s->hidden.patched = s->fn;
	s->hidden.orig = s->orig;
	s->hidden.orig_len = s->displaced;
	s->hidden.rewind = stub_rewind;
	s->hidden.arg = s;
	return 0;

unmap:
	stub_unmap(t, at, len);
	memset(s, 0, sizeof *s);
	return -1;
}

/*
 * Take the stub out of the process, held in t: its vDSO as the kernel
 * made it, the pages unmapped. No thread may be in the stub: t holds
 * them, and a dump of it would rewind them (a thread in the stub's code
 * goes to clock_gettime's start; one in the trampoline to the same point
 * of the vDSO), which the caller does first (stub_unwind).
 */
int
stub_remove(struct stub *s, struct mig_task *t, char **cause)
{
	if (s->start == 0)
		return 0;
	if (stub_poke(s->pid, s->fn, s->orig, s->displaced, cause) == -1)
		return -1;
	stub_unmap(t, s->start, s->len);
	memset(s, 0, sizeof *s);
	return 0;
}
