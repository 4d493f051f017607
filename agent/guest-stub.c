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
 * those bits), and adds the CPU time the process used before it came; any
 * other clock goes on in the vDSO, through the instructions the jump
 * displaced, copied after the stub, and a jump back.
 *
 * The stub is the guest's, not the program's: dumps of R (the way home, a
 * checkpoint) leave its page out, record the vDSO as the kernel made it,
 * and record R stopped in the stub as stopped at the same point of the
 * vDSO's clock_gettime (mig_hide). A vDSO whose clock_gettime starts with
 * instructions we do not know to be movable, or no room near the vDSO for
 * the page, and R's clocks are answered as before, by the guest agent.
 *
 * Calls made with the system call instruction itself (glibc's times() and
 * getrusage(), a clock_gettime of syscall(2)) still come to the guest agent.
 * The base added is the process's: right for CLOCK_THREAD_CPUTIME_ID in
 * its main thread, too much in any other thread of a threaded process
 * (docs/REMOTE.md, "Known deviations").
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
#define STUB_JMP	5		/* e9 rel32 */
#define STUB_NEAR	(1ULL << 30)	/* within a jmp rel32 of the vDSO */
#define NSEC		1000000000ULL

/*
 * The stub, position-independent, as bytes to copy into R. Entered by a
 * jump from the start of the vDSO's clock_gettime(clockid %edi, tp %rsi),
 * so it returns to the vDSO's caller; %rax, %rcx, %r11 and %rdi are the
 * caller's to lose. The base (seconds, nanoseconds) and the trampoline
 * (the displaced instructions and a jump back) are filled in per process.
 */
extern const uint8_t guest_stub_code[], guest_stub_sec[], guest_stub_nsec[];
extern const uint8_t guest_stub_tramp[], guest_stub_end[];
__asm__(
"	.pushsection .rodata.osm_clock_stub, \"a\"\n"
"	.balign 16\n"
"	.globl guest_stub_code, guest_stub_sec, guest_stub_nsec\n"
"	.globl guest_stub_tramp, guest_stub_end\n"
"guest_stub_code:\n"
"	cmpl	$2, %edi\n"			/* CLOCK_PROCESS_CPUTIME_ID */
"	je	1f\n"
"	cmpl	$3, %edi\n"			/* CLOCK_THREAD_CPUTIME_ID */
"	je	1f\n"
"	jmp	.Ltramp\n"
"1:	movabsq	$0x6f736d3100000000, %rax\n"	/* RMT_CLOCK_MAGIC << 32 */
"	movl	%edi, %edi\n"
"	orq	%rax, %rdi\n"
"	movl	$228, %eax\n"			/* SYS_clock_gettime */
"	syscall\n"
"	testq	%rax, %rax\n"
"	jnz	2f\n"
"	movq	.Lsec(%rip), %rcx\n"
"	addq	%rcx, (%rsi)\n"
"	movq	.Lnsec(%rip), %rcx\n"
"	addq	8(%rsi), %rcx\n"
"	cmpq	$1000000000, %rcx\n"
"	jb	3f\n"
"	subq	$1000000000, %rcx\n"
"	incq	(%rsi)\n"
"3:	movq	%rcx, 8(%rsi)\n"
"	xorl	%eax, %eax\n"
"2:	ret\n"
"	.balign 8\n"
"guest_stub_sec:\n"
".Lsec:	.quad 0\n"
"guest_stub_nsec:\n"
".Lnsec:	.quad 0\n"
"guest_stub_tramp:\n"
".Ltramp:	.fill 32, 1, 0xcc\n"
"guest_stub_end:\n"
"	.popsection\n");

_Static_assert(SYS_clock_gettime == 228, "the stub's call number");
_Static_assert(RMT_CLOCK_MAGIC == 0x6f736d31, "the stub's magic");

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
 * Dumps of R through t leave the stub out; NULL: none, what the rounds of
 * a live dump leave out (mig_live.hidden).
 */
const struct mig_hidden *
guest_stub_hide(struct guest *g, struct mig_task *t)
{
	if (g->stub.start == 0)
		return NULL;
	if (t != NULL)
		mig_hide(t, &g->stub.hidden);
	return &g->stub.hidden;
}

static void
stub_unmap(struct mig_task *t, uint64_t at)
{
	char	*cause = NULL;
	long	 rv;

	if (mig_call(t, &rv, SYS_munmap, (sysargs){ at, STUB_PAGE },
	    &cause) == -1)
		free(cause);
}

/*
 * Map the stub's page in R near its vDSO, below it, where a program maps
 * nothing of its own (it would have to name the address): its address, or
 * 0.
 */
static uint64_t
stub_map(struct mig_task *t, uint64_t vdso, uint64_t fn)
{
	uint64_t	 at;
	char		*cause = NULL;
	long		 rv;
	int		 k;

	for (k = 1; k <= 64; k++) {
		at = (vdso - (uint64_t)k * (1ULL << 21)) & ~(STUB_PAGE - 1ULL);
		if (mig_call(t, &rv, SYS_mmap, (sysargs){ at, STUB_PAGE,
		    PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS |
		    MAP_FIXED_NOREPLACE, -1, 0 }, &cause) == -1) {
			free(cause);
			return 0;
		}
		if ((uint64_t)rv == at && fn - at < STUB_NEAR)
			return at;
		if (rv > 0)
			stub_unmap(t, rv);
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
	uint8_t			 page[STUB_PAGE], jmp[16];
	uint64_t		 ours, ours_end, vdso, vdso_end, off, at, base, v;
	uint64_t		 rip = mig_regs(t)->rip;
	size_t			 code = guest_stub_end - guest_stub_code;
	size_t			 tramp = guest_stub_tramp - guest_stub_code;
	int32_t			 rel;
	long			 rv;
	char			 path[64];
	int			 fd;

	memset(s, 0, sizeof *s);
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
	if ((at = stub_map(t, vdso, s->fn)) == 0) {
		xasprintf(cause, "no room near the vDSO");
		return -1;
	}

	/* the stub, its base, its trampoline: displaced, jmp *0(%rip), fn+n */
	memset(page, 0xcc, sizeof page);
	memcpy(page, guest_stub_code, code);
	base = g->base.utime_ns + g->base.stime_ns;
	/* The stub's words are where its code puts them, not aligned. */
	v = base / NSEC;
	memcpy(page + (guest_stub_sec - guest_stub_code), &v, sizeof v);
	v = base % NSEC;
	memcpy(page + (guest_stub_nsec - guest_stub_code), &v, sizeof v);
	memcpy(page + tramp, s->orig, s->displaced);
	memcpy(page + tramp + s->displaced, "\xff\x25\0\0\0\0", 6);
	v = s->fn + s->displaced;
	memcpy(page + tramp + s->displaced + 6, &v, sizeof v);
	if (mig_write(t, at, page, sizeof page, cause) == -1 ||
	    mig_call_ok(t, "mprotect stub", &rv, SYS_mprotect, (sysargs){ at,
	    STUB_PAGE, PROT_READ | PROT_EXEC }, cause) == -1)
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
	s->tramp = at + tramp;
	s->hidden.start = at;
	s->hidden.end = at + STUB_PAGE;
	s->hidden.patched = s->fn;
	s->hidden.orig = s->orig;
	s->hidden.orig_len = s->displaced;
	s->hidden.rewind = stub_rewind;
	s->hidden.arg = s;
	return 0;

unmap:
	stub_unmap(t, at);
	s->displaced = 0;
	return -1;
}
