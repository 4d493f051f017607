/*
 * The clock stub: R's CPU-time clocks answered inside R, with no wakeup of
 * another process. A program that polls clock(), time.process_time() or
 * clock_gettime(CLOCK_PROCESS_CPUTIME_ID) calls the vDSO's clock_gettime,
 * which for a CPU clock makes the system call; R's filter would notify it
 * to us, some microseconds each (libremote/emulate.c), against half a
 * microsecond at home. So the vDSO's clock_gettime in R starts with a jump
 * to a page of ours in R: for CLOCK_PROCESS_CPUTIME_ID and
 * CLOCK_THREAD_CPUTIME_ID it makes the call itself, with RMT_CLOCK_MAGIC
 * in the id's high half, which the filter lets run (the kernel ignores
 * those bits), and adds the CPU time used before R came: the process's
 * to the process's clock, the calling thread's own to its thread clock.
 * Each thread's is in a table after the stub's page, (tid, base), written
 * at the restore from the threads' records in the image; the stub finds
 * its thread's entry by its id, from a gettid made with the same magic in
 * its first argument (gettid ignores it, the filter lets it run), without
 * a round trip. A thread made here has no entry and starts at 0, as it
 * would have at home; a thread that ends has its entry zeroed, for its id
 * may come back. Any other clock goes on in the vDSO, through the
 * instructions the jump displaced, copied after the stub, and a jump
 * back.
 *
 * The stub is the guest's, not the program's: dumps of R (the way home, a
 * checkpoint) leave its page out, record the vDSO as the kernel made it,
 * and record R stopped in the stub as stopped at the same point of the
 * vDSO's clock_gettime (mig_hide). A vDSO whose clock_gettime starts with
 * instructions we do not know to be movable, or no room near the vDSO for
 * the page, and R's clocks are answered as before, by the guest agent.
 *
 * Calls made with the system call instruction itself (glibc's times() and
 * getrusage(), a clock_gettime of syscall(2)) still come to the guest
 * agent, which adds the same bases (libremote/emulate.c). R's dumps carry
 * each thread's time on (guest_stub_hide: mig_cpu_carried).
 */
#include <sys/mman.h>
#include <sys/syscall.h>

#include <errno.h>
#include <fcntl.h>
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
 * The stub, position-independent, as bytes to copy into R. Entered by a
 * jump from the start of the vDSO's clock_gettime(clockid %edi, tp %rsi),
 * so it returns to the vDSO's caller; %rax, %rcx, %rdx, %rdi, %r8 and
 * %r11 are the caller's to lose (the C ABI's). The process's base
 * (guest_stub_proc), the number of entries in the threads' table, which
 * follows the stub's page, and the trampoline (the displaced
 * instructions and a jump back) are filled in per process. A base, and a
 * table entry, is { tid (entries only), nanoseconds, seconds }: 4, 4 and
 * 8 bytes. The thread's id comes from gettid, with the magic in its first
 * argument (which gettid ignores) for the filter to let it run; while R
 * has had only one thread (guest_stub_one not 0), the table's one entry
 * is its, and the stub makes no gettid.
 */
extern const uint8_t guest_stub_code[], guest_stub_proc[], guest_stub_count[];
extern const uint8_t guest_stub_one[], guest_stub_tramp[], guest_stub_end[];
__asm__(
"	.pushsection .rodata.osm_clock_stub, \"a\"\n"
"	.balign 16\n"
"	.globl guest_stub_code, guest_stub_proc, guest_stub_count\n"
"	.globl guest_stub_one, guest_stub_tramp, guest_stub_end\n"
"guest_stub_code:\n"
".Lstart:\n"
"	cmpl	$2, %edi\n"			/* CLOCK_PROCESS_CPUTIME_ID */
"	je	1f\n"
"	cmpl	$3, %edi\n"			/* CLOCK_THREAD_CPUTIME_ID */
"	jne	.Ltramp\n"
"	movabsq	$0x6f736d3100000000, %rax\n"	/* RMT_CLOCK_MAGIC << 32 */
"	movl	%edi, %edi\n"
"	orq	%rax, %rdi\n"
"	leaq	.Lstart+4096(%rip), %r8\n"
"	cmpl	$0, .Lone(%rip)\n"
"	jne	2f\n"
"	movl	$186, %eax\n"			/* SYS_gettid */
"	syscall\n"
"	leaq	.Lnone(%rip), %r8\n"
"	leaq	.Lstart+4096(%rip), %rcx\n"	/* the threads' table */
"	movl	.Lcount(%rip), %edx\n"
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
"	leaq	.Lproc(%rip), %r8\n"
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
"	.balign 16\n"
"guest_stub_proc:\n"
".Lproc:	.long 0, 0\n"
"	.quad 0\n"
".Lnone:	.long 0, 0\n"
"	.quad 0\n"
"guest_stub_count:\n"
".Lcount:	.long 0\n"
"guest_stub_one:\n"
".Lone:	.long 0\n"
"guest_stub_tramp:\n"
".Ltramp:	.fill 32, 1, 0xcc\n"
"guest_stub_end:\n"
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
_Static_assert(sizeof(struct stub_base) == 16, "the stub's entries");

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
	return 0;
}

/* How many bytes of whole movable instructions cover a jump, or 0. */
static size_t
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

/* Where [vdso] is in process pid's map (pid 0: ours). */
static int
stub_vdso(pid_t pid, uint64_t *start, uint64_t *end)
{
	char			 path[64], line[256];
	unsigned long long	 s, e;
	FILE			*f;
	int			 rc = -1;

	if (pid == 0)
		snprintf(path, sizeof path, "/proc/self/maps");
	else
		snprintf(path, sizeof path, "/proc/%d/maps", (int)pid);
	if ((f = fopen(path, "re")) == NULL)
		return -1;
	while (fgets(line, sizeof line, f) != NULL) {
		if (strstr(line, " [vdso]") != NULL &&
		    sscanf(line, "%llx-%llx", &s, &e) == 2) {
			*start = s;
			*end = e;
			rc = 0;
			break;
		}
	}
	fclose(f);
	return rc;
}

/*
 * The offset of symbol name in our own vDSO (the same kernel's as R's: a
 * restore checks the vDSO), from its section headers; 0 if not found.
 */
static uint64_t
stub_symbol(const uint8_t *vdso, size_t len, const char *name)
{
	const Elf64_Ehdr	*eh = (const void *)vdso;
	const Elf64_Shdr	*sh, *strs;
	const Elf64_Sym		*sym;
	size_t			 i, j;

	if (len < sizeof *eh || memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 ||
	    eh->e_shentsize != sizeof *sh ||
	    eh->e_shoff + (uint64_t)eh->e_shnum * sizeof *sh > len)
		return 0;
	sh = (const void *)(vdso + eh->e_shoff);
	for (i = 0; i < eh->e_shnum; i++) {
		if (sh[i].sh_type != SHT_DYNSYM || sh[i].sh_link >= eh->e_shnum)
			continue;
		strs = &sh[sh[i].sh_link];
		if (sh[i].sh_offset + sh[i].sh_size > len ||
		    strs->sh_offset + strs->sh_size > len)
			return 0;
		sym = (const void *)(vdso + sh[i].sh_offset);
		for (j = 0; j < sh[i].sh_size / sizeof *sym; j++) {
			if (sym[j].st_name >= strs->sh_size ||
			    strnlen((const char *)vdso + strs->sh_offset +
			    sym[j].st_name, strs->sh_size - sym[j].st_name) ==
			    strs->sh_size - sym[j].st_name)
				continue;
			if (strcmp((const char *)vdso + strs->sh_offset +
			    sym[j].st_name, name) == 0 &&
			    sym[j].st_value < len)
				return sym[j].st_value;
		}
	}
	return 0;
}

/*
 * R stopped in the stub, for a dump: at the same point of the vDSO's
 * clock_gettime, whose instructions the trampoline runs as they are; in
 * the stub's own code, at its start (nothing it did shows but in
 * registers the caller loses, and in *tp, which the call writes again).
 */
static void
stub_rewind(void *arg, struct user_regs_struct *r)
{
	struct guest_stub	*s = arg;

	if (r->rip >= s->tramp && r->rip <= s->tramp + s->displaced)
		r->rip = s->fn + (r->rip - s->tramp);
	else if (r->rip >= s->start && r->rip < s->tramp) {
		r->rip = s->fn;
		r->rdi = (uint32_t)r->rdi;
	}
}

/*
 * Dumps of R through t leave the stub out, and record each thread's CPU
 * time with what it carried here; NULL: none, what the rounds of a live
 * dump leave out (mig_live.hidden).
 */
const struct mig_hidden *
guest_stub_hide(struct guest *g, struct mig_task *t)
{
	if (t != NULL)
		mig_cpu_carried(t, g->tcpu, g->ntcpu);
	if (g->stub.start == 0)
		return NULL;
	if (t != NULL)
		mig_hide(t, &g->stub.hidden);
	return &g->stub.hidden;
}

/*
 * Each thread's CPU time before it came, from its record in the image R
 * was restored from (t, held): the stub's table and the guest's
 * emulation go on from it (remote_thread_cpu, once g->remote is made),
 * and R's dumps carry it. A record without it (an image of an older
 * version) gives the main thread the process's, as before.
 */
void
guest_stub_threads(struct guest *g, struct mig_task *t)
{
	pid_t	*tids;
	size_t	 n, i;
	uint64_t ns;

	n = mig_threads(t, NULL, 0);
	tids = xcalloc(n, sizeof *tids);
	mig_threads(t, tids, n);
	free(g->tcpu);
	g->tcpu = xcalloc(n, sizeof *g->tcpu);
	g->ntcpu = 0;
	for (i = 0; i < n; i++) {
		if (mig_thread_cpu(t, tids[i], &ns) == -1) {
			if (i != 0)
				continue;
			ns = g->base.utime_ns + g->base.stime_ns;
		}
		g->tcpu[g->ntcpu].tid = tids[i];
		g->tcpu[g->ntcpu++].ns = ns;
	}
	free(tids);
}

/*
 * Thread vtid (as R knows it) ended: its id may come back for a thread
 * made here, which starts at 0. Its entry is zeroed in the stub's table,
 * through /proc/R/mem (R cannot write it); the thread is in its exit and
 * reads it no more.
 */
void
guest_stub_thread_gone(struct guest *g, pid_t vtid)
{
	struct guest_stub	*s = &g->stub;
	int32_t			 zero = 0;
	char			 path[64];
	size_t			 i;
	int			 fd;

	for (i = 0; i < g->ntcpu; i++) {
		if (g->tcpu[i].tid == vtid)
			break;
	}
	if (i == g->ntcpu)
		return;
	g->tcpu[i].tid = 0;
	g->tcpu[i].ns = 0;
	if (s->start == 0 || i >= s->ntable)
		return;
	snprintf(path, sizeof path, "/proc/%d/mem", (int)g->pid);
	if ((fd = open(path, O_RDWR | O_CLOEXEC)) == -1 ||
	    pwrite(fd, &zero, sizeof zero, s->start + STUB_PAGE + i *
	    sizeof(struct stub_base)) != sizeof zero)
		log_warnx("%s: %s: %s", g->conn.who, path, strerror(errno));
	if (fd != -1)
		close(fd);
}

/*
 * R is making a thread, which waits in its clone for us: from now on the
 * stub looks its thread up (it had only one, and took the table's entry
 * as its). -1 if the stub could not be told: R's thread clocks would be
 * wrong here.
 */
int
guest_stub_threaded(struct guest *g)
{
	struct guest_stub	*s = &g->stub;
	uint32_t		 zero = 0;
	char			 path[64];
	int			 fd, rc = 0;

	if (s->start == 0 || !s->one)
		return 0;
	snprintf(path, sizeof path, "/proc/%d/mem", (int)g->pid);
	if ((fd = open(path, O_RDWR | O_CLOEXEC)) == -1 ||
	    pwrite(fd, &zero, sizeof zero, s->start + (guest_stub_one -
	    guest_stub_code)) != sizeof zero) {
		log_warnx("%s: %s: %s", g->conn.who, path, strerror(errno));
		rc = -1;
	} else
		s->one = 0;
	if (fd != -1)
		close(fd);
	return rc;
}

static void
stub_unmap(struct mig_task *t, uint64_t at, size_t len)
{
	char	*cause = NULL;
	long	 rv;

	if (mig_call(t, &rv, SYS_munmap, (sysargs){ at, len },
	    &cause) == -1)
		free(cause);
}

/*
 * Map the stub's page and its table (len bytes) in R near its vDSO, below
 * it, where a program maps nothing of its own (it would have to name the
 * address): its address, or 0.
 */
static uint64_t
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
 * Put the stub into R, held in t under its filter (only local calls may
 * be injected). 0, or -1 with *cause if R's clocks stay the guest's to
 * answer.
 */
int
guest_stub_install(struct guest *g, struct mig_task *t, char **cause)
{
	struct guest_stub	*s = &g->stub;
	struct stub_base	 b;
	uint8_t			*page, jmp[16];
	uint64_t		 ours, ours_end, vdso, vdso_end, off, at, v;
	uint64_t		 rip = mig_regs(t)->rip;
	size_t			 code = guest_stub_end - guest_stub_code;
	size_t			 tramp = guest_stub_tramp - guest_stub_code;
	size_t			 len, i;
	uint32_t		 n;
	int32_t			 rel;
	long			 rv;
	char			 path[64];
	int			 fd;

	memset(s, 0, sizeof *s);
	if (g->ntcpu > STUB_THREADS) {
		xasprintf(cause, "more than %d threads", STUB_THREADS);
		return -1;
	}
	ours = getauxval(AT_SYSINFO_EHDR);
	if (ours == 0 || stub_vdso(0, &ours, &ours_end) == -1 ||
	    stub_vdso(g->pid, &vdso, &vdso_end) == -1 ||
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
	if (rip >= s->fn && rip < s->fn + s->displaced) {
		xasprintf(cause, "it stopped at the start of clock_gettime");
		return -1;
	}
	len = STUB_PAGE + (g->ntcpu * sizeof b + STUB_PAGE - 1) /
	    STUB_PAGE * STUB_PAGE;
	if ((at = stub_map(t, vdso, s->fn, len)) == 0) {
		xasprintf(cause, "no room near the vDSO");
		return -1;
	}

	/*
	 * The stub, the process's base, its trampoline: displaced, jmp
	 * *0(%rip), fn+n; then the threads' table, each thread's base.
	 */
	page = xcalloc(1, len);
	memset(page, 0xcc, STUB_PAGE);
	memcpy(page, guest_stub_code, code);
	v = g->base.utime_ns + g->base.stime_ns;
	b = (struct stub_base){ 0, v % NSEC, v / NSEC };
	/* The stub's words are where its code puts them, not aligned. */
	memcpy(page + (guest_stub_proc - guest_stub_code), &b, sizeof b);
	for (i = 0; i < g->ntcpu; i++) {
		v = g->tcpu[i].ns;
		b = (struct stub_base){ g->tcpu[i].tid, v % NSEC, v / NSEC };
		memcpy(page + STUB_PAGE + i * sizeof b, &b, sizeof b);
	}
	n = g->ntcpu;
	memcpy(page + (guest_stub_count - guest_stub_code), &n, sizeof n);
	n = s->one = g->ntcpu == 1 && mig_threads(t, NULL, 0) == 1;
	memcpy(page + (guest_stub_one - guest_stub_code), &n, sizeof n);
	memcpy(page + tramp, s->orig, s->displaced);
	memcpy(page + tramp + s->displaced, "\xff\x25\0\0\0\0", 6);
	v = s->fn + s->displaced;
	memcpy(page + tramp + s->displaced + 6, &v, sizeof v);
	rv = mig_write(t, at, page, len, cause);
	free(page);
	if (rv == -1 || mig_call_ok(t, "mprotect stub", &rv, SYS_mprotect,
	    (sysargs){ at, STUB_PAGE, PROT_READ | PROT_EXEC }, cause) == -1 ||
	    (len > STUB_PAGE && mig_call_ok(t, "mprotect stub", &rv,
	    SYS_mprotect, (sysargs){ at + STUB_PAGE, len - STUB_PAGE,
	    PROT_READ }, cause) == -1))
		goto unmap;

	/*
	 * The jump, written through /proc/R/mem: the vDSO is read-only to
	 * R, and only a debugger's write (ours: R is held) may change it.
	 */
	memset(jmp, 0xcc, sizeof jmp);
	rel = (int32_t)(int64_t)(at - (s->fn + STUB_JMP));
	jmp[0] = 0xe9;
	memcpy(jmp + 1, &rel, 4);
	snprintf(path, sizeof path, "/proc/%d/mem", (int)g->pid);
	if ((fd = open(path, O_RDWR | O_CLOEXEC)) == -1 ||
	    pwrite(fd, jmp, s->displaced, s->fn) != (ssize_t)s->displaced) {
		xasprintf(cause, "%s: %s", path, strerror(errno));
		if (fd != -1)
			close(fd);
		goto unmap;
	}
	close(fd);

	s->start = at;
	s->len = len;
	s->ntable = g->ntcpu;
	s->tramp = at + tramp;
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
	s->displaced = 0;
	return -1;
}
