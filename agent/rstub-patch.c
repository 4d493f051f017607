/*
 * Patching libc's functions in a process for the stubs (the read stub,
 * rstub.c, and the usage stub, ustub.c): libc found in the process and
 * its functions in its file, their first instructions moved into a
 * trampoline and a jump to the stub put in their place, and a thread
 * stopped in a stub put back where the program would be, for a dump.
 */
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

/* 8 bytes of process pid at addr into *v; -1 if it cannot be read. */
static int
rstub_peek(pid_t pid, uint64_t addr, uint64_t *v)
{
	struct iovec	local = { v, sizeof *v };
	struct iovec	remote = { (void *)(uintptr_t)addr, sizeof *v };

	return process_vm_readv(pid, &local, 1, &remote, 1, 0) ==
	    sizeof *v ? 0 : -1;
}

/*
 * A thread stopped in a stub, for a dump: in the trampoline, at the same
 * point of libc's function; after the commit, as returned from it; before
 * it, at the function's start with its arguments (what the stub did shows
 * only in registers the caller loses, and in the buffer, which the call
 * writes again).
 */
void
rstub_rewind(void *arg, struct user_regs_struct *r)
{
	struct rstub_patch	*p = arg;
	uint64_t		 v;

	if (r->rip >= p->tramp && r->rip <= p->tramp + p->displaced)
		r->rip = p->fn + (r->rip - p->tramp);
	else if (r->rip == p->ret) {
		if (rstub_peek(p->pid, r->rsp, &v) == -1)
			return;		/* no stack: it could not return */
		r->rip = v;
		r->rsp += 8;
	} else if (r->rip >= p->saved && r->rip < p->tramp) {
		if (p->offset_kept) {
			if (rstub_peek(p->pid, r->rsp - 8, &v) == -1)
				return;
			r->rcx = v;
		}
		r->rip = p->fn;
		r->rdi = r->r9;
		r->rsi = r->r10;
		r->rdx = r->r11;
	} else if (r->rip >= p->code && r->rip < p->saved)
		r->rip = p->fn;
	/*
	 * In libc's syscall(), in a call the stub made (or stopped in the
	 * kernel in it, to be restarted): unmarked, so that wherever the
	 * process goes on the call goes where its descriptor is now.
	 */
	if (p->lsyscall != 0 && r->rip >= p->lsyscall &&
	    r->rip <= p->lsyscall + RSTUB_SYSCALL_DONE) {
		if (r->rdi >> 32 == RMT_CLOCK_MAGIC)
			r->rdi = (uint32_t)r->rdi;
		if (r->rsi >> 32 == RMT_CLOCK_MAGIC)
			r->rsi = (uint32_t)r->rsi;
	}
}

/*
 * libc in process pid: the start of its first area and where its file
 * is, from /proc/PID/maps. -1 if it has none (a static program).
 */
int
rstub_libc(pid_t pid, uint64_t *base, char *path, size_t size)
{
	char			 name[64], *line = NULL, *p;
	size_t			 cap = 0;
	unsigned long long	 s, e, off;
	FILE			*f;
	int			 pos, rc = -1;

	snprintf(name, sizeof name, "/proc/%d/maps", (int)pid);
	if ((f = fopen(name, "re")) == NULL)
		return -1;
	while (getline(&line, &cap, f) != -1) {
		pos = 0;
		if (sscanf(line, "%llx-%llx %*s %llx %*s %*s %n", &s, &e,
		    &off, &pos) < 3 || pos == 0 || off != 0)
			continue;
		p = line + pos;
		p[strcspn(p, "\n")] = '\0';
		if (strlen(p) < 11 || strcmp(p + strlen(p) - 10,
		    "/libc.so.6") != 0 || strlen(p) >= size)
			continue;
		*base = s;
		strcpy(path, p);
		rc = 0;
		break;
	}
	free(line);
	fclose(f);
	return rc;
}

/* The n functions names[] in the libc file at path, into syms[]. */
void
rstub_symbols(const char *path, const char *const *names,
    struct rstub_sym *syms, size_t n)
{
	struct stat	 sb;
	uint64_t	*offs;
	void		*m;
	size_t		 i;
	int		 fd;

	for (i = 0; i < n; i++)
		syms[i].off = 0;
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1)
		return;
	if (fstat(fd, &sb) == 0 && sb.st_size > 0 && (m = mmap(NULL,
	    sb.st_size, PROT_READ, MAP_PRIVATE, fd, 0)) != MAP_FAILED) {
		offs = xcalloc(n, sizeof *offs);
		stub_symbols(m, sb.st_size, names, n, offs);
		for (i = 0; i < n; i++) {
			/* libc's text lies in its file where it lies in memory */
			if (offs[i] == 0 || offs[i] + sizeof syms[i].start >
			    (uint64_t)sb.st_size)
				continue;
			syms[i].off = offs[i];
			memcpy(syms[i].start, (uint8_t *)m + offs[i],
			    sizeof syms[i].start);
		}
		free(offs);
		munmap(m, sb.st_size);
	}
	close(fd);
}

/*
 * The instructions at a function's start the jump replaces, copied into
 * the trampoline at tramp (buf, its bytes): an endbr64, then the test of
 * __libc_single_threaded glibc's read begins with (cmpb $imm8, rel32(%rip)),
 * its address made the same from where the copy is; or instructions that
 * run the same anywhere (stub_displace: the mov of the call's number
 * times and getrusage begin with). Their length, or 0 for any other
 * start.
 */
static size_t
rstub_relocate(const uint8_t *p, uint64_t fn, uint64_t tramp, uint8_t *buf)
{
	size_t		n = 0;
	int64_t		rel;
	int32_t		d;

	if (p[0] == 0xf3 && p[1] == 0x0f && p[2] == 0x1e && p[3] == 0xfa)
		n = 4;					/* endbr64 */
	if (p[n] != 0x80 || p[n + 1] != 0x3d) {
		if ((n = stub_displace(p, 16)) != 0)
			memcpy(buf, p, n);
		return n;
	}
	memcpy(&d, p + n + 2, 4);
	rel = (int64_t)(fn + n + 7 + d) - (int64_t)(tramp + n + 7);
	if (rel != (int32_t)rel)
		return 0;
	memcpy(buf, p, n + 7);
	d = (int32_t)rel;
	memcpy(buf + n + 2, &d, 4);
	return n + 7;
}

/*
 * Patch p: libc's function sym in process pid, at fn, whose stub is at
 * e's code, saved, ret and tramp (in page, the stub's code page, which
 * starts at e->base and is mapped at at): its first instructions read,
 * copied into the trampoline in page and a jump back after them. -1 if
 * they are not the file's (the process's libc is another than the file
 * at its path now), or cannot move. The stub keeps the function's
 * arguments in %r9 to %r11 from saved on (rstub_rewind), and returns at
 * ret once done.
 */
int
rstub_prepare(struct rstub_patch *p, pid_t pid, const struct rstub_sym *sym,
    uint64_t fn, uint64_t at, uint8_t *page, const struct rstub_entry *e)
{
	struct iovec	local = { p->orig, sizeof p->orig }, remote;
	uint64_t	v;
	size_t		t = e->tramp - e->base;

	memset(p, 0, sizeof *p);
	remote.iov_base = (void *)(uintptr_t)fn;
	remote.iov_len = sizeof p->orig;
	if (process_vm_readv(pid, &local, 1, &remote, 1, 0) !=
	    sizeof p->orig || memcmp(p->orig, sym->start, sizeof p->orig) != 0)
		return -1;
	p->tramp = at + t;
	if ((p->displaced = rstub_relocate(p->orig, fn, p->tramp,
	    page + t)) == 0)
		return -1;
	memcpy(page + t + p->displaced, "\xff\x25\0\0\0\0", 6);
	v = fn + p->displaced;
	memcpy(page + t + p->displaced + 6, &v, sizeof v);
	p->pid = pid;
	p->fn = fn;
	p->code = at + (e->code - e->base);
	p->saved = at + (e->saved - e->base);
	p->ret = e->ret != NULL ? at + (e->ret - e->base) : 0;
	return 0;
}

/* The jump from p's function to its stub, once the page is in. */
int
rstub_patch(struct rstub_patch *p, struct mig_task *t, char **cause)
{
	if (stub_move_threads(t, p->fn + 1, p->displaced - 1, p->tramp + 1,
	    cause) == -1 ||
	    stub_jump(p->pid, p->fn, p->code, p->displaced, cause) == -1)
		return -1;
	p->hidden.patched = p->fn;
	p->hidden.orig = p->orig;
	p->hidden.orig_len = p->displaced;
	p->hidden.rewind = rstub_rewind;
	p->hidden.arg = p;
	return 0;
}

/*
 * len bytes mapped near libc (at base), within a jump of fn and of fn2
 * (0: none), where a program maps nothing of its own: their address, or
 * 0.
 */
uint64_t
rstub_map(struct mig_task *t, uint64_t base, uint64_t fn, uint64_t fn2,
    size_t len)
{
	uint64_t	at;

	if ((at = stub_map(t, base, fn, len)) != 0 && fn2 != 0 &&
	    fn2 - at >= RSTUB_NEAR) {
		stub_unmap(t, at, len);
		at = 0;
	}
	return at;
}

/*
 * The jumps to the stubs of a and b (b->fn 0: none), once the page is in:
 * both or neither.
 */
int
rstub_patch_two(struct rstub_patch *a, struct rstub_patch *b,
    struct mig_task *t, char **cause)
{
	char	*ignored = NULL;

	if (rstub_patch(a, t, cause) == -1)
		return -1;
	if (b->fn != 0 && rstub_patch(b, t, cause) == -1) {
		/* a's is in: take it out again */
		if (stub_poke(a->pid, a->fn, a->orig, a->displaced,
		    &ignored) == -1)
			free(ignored);
		return -1;
	}
	return 0;
}
