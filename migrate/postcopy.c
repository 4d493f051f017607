/*
 * Post-copy (docs/REMOTE.md, "Post-copy"): the process runs on its target
 * as soon as its description, registers and a hot set of pages are there;
 * the rest of its private anonymous memory follows, each page fetched
 * when the process faults on it or pushed by the source meanwhile.
 *
 * Source: mig_dump_live with lv->post dumps the held task as a stop and
 * copy would, but of its private anonymous areas only the pages near each
 * thread's stack pointer; what it left out is the post's, for the caller
 * to send (mig_post_next, mig_post_take) from the task, still held.
 *
 * Target: the restored task gets a userfaultfd in missing mode on those
 * areas, made inside it (mig_post_uffd), before it runs: a page it touches
 * that has not come blocks it until mig_fetch_copy puts the page in. The
 * userfaultfd must take faults from the kernel too (a system call's
 * buffer, a futex), which an unprivileged one (UFFD_USER_MODE_ONLY) would
 * turn into EFAULT: it is made through /dev/userfaultfd (a descriptor the
 * caller hands down) or by a process allowed the full one. The process's
 * madvise(MADV_DONTNEED), munmap and mremap meanwhile are told to us
 * (UFFD_FEATURE_EVENT_REMOVE, _UNMAP, _REMAP): what it dropped is never
 * filled from the source again, and pages it moved are filled where they
 * went, followed in the order the events came (postmap.c). Closing the
 * userfaultfd once the last page is in leaves the rest to the kernel:
 * pages the source never had read as zeros, as there.
 */
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <sys/uio.h>

#include <linux/userfaultfd.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/osm.h"
#include "internal.h"

#ifndef USERFAULTFD_IOC_NEW
#define USERFAULTFD_IOC_NEW	_IO(0xAA, 0x00)
#endif

#define POSTCOPY_HOT		(64UL << 10)	/* each side of a stack pointer */
#define POSTCOPY_EVENTS		(UFFD_FEATURE_EVENT_REMOVE | \
				    UFFD_FEATURE_EVENT_UNMAP | \
				    UFFD_FEATURE_EVENT_REMAP | \
				    UFFD_FEATURE_THREAD_ID)
#define POSTCOPY_TIDS		64	/* faulting threads told apart */

struct mig_post {
	pid_t		 pid;
	int		 mem;		/* /proc/PID/mem, for what readv cannot */
	struct runs	 left;		/* pages with data not sent yet */
	struct runs	 areas;		/* the live areas, one run each */
	uint64_t	 hot_pages;
	uint64_t	 left_pages;	/* at the dump */
	struct mm_dump	 early;		/* the layout read while it ran */
	int		 have_early;
	const struct mig_hidden *hidden;	/* its pages as the program's */
};

struct mig_fetch {
	int		 uffd;
	struct postmap	 map;		/* its drops and moves meanwhile */
	uint32_t	 tids[POSTCOPY_TIDS];	/* threads that faulted */
	uint64_t	*asks;		/* faults to ask the source about */
	size_t		 nasks;
	size_t		 asks_alloc;
	struct mig_fetch_stats st;
};

/*
 * Read a batch from the running process. It may unmap or protect memory
 * meanwhile: what process_vm_readv cannot read is read through its memory
 * file, and what that cannot read either was unmapped, reads as zeros
 * (the target drops it, as the next layout no longer has it registered).
 */
static void
postcopy_read_raw(pid_t pid, int mem, const struct iovec *remote, size_t n,
    uint8_t *buf, size_t len)
{
	struct iovec	local = { buf, len };
	uint64_t	addr;
	size_t		i, off, left;
	ssize_t		r;

	if (process_vm_readv(pid, &local, 1, remote, n, 0) == (ssize_t)len)
		return;
	/* Page by page past what cannot be read: the rest still can. */
	for (i = 0; i < n; i++) {
		addr = (uintptr_t)remote[i].iov_base;
		for (off = 0; off < remote[i].iov_len;) {
			left = remote[i].iov_len - off;
			r = pread(mem, buf + off, left, addr + off);
			if (r >= (ssize_t)MIG_PAGE) {
				off += r & ~(MIG_PAGE - 1);
				continue;
			}
			memset(buf + off, 0, MIG_PAGE);
			off += MIG_PAGE;
		}
		buf += remote[i].iov_len;
	}
}

/* The same, as the program had them: what hidden code patched put back. */
void
postcopy_read(pid_t pid, int mem, const struct mig_hidden *h,
    const struct iovec *remote, size_t n, uint8_t *buf, size_t len)
{
	size_t	i;

	postcopy_read_raw(pid, mem, remote, n, buf, len);
	for (i = 0; h != NULL && i < n; buf += remote[i++].iov_len)
		mig_hidden_pages(h, (uintptr_t)remote[i].iov_base, buf,
		    remote[i].iov_len);
}

struct mig_post *
mig_post_new(void)
{
	struct mig_post	*pp;

	pp = xcalloc(1, sizeof *pp);
	pp->mem = -1;
	runs_init(&pp->left);
	runs_init(&pp->areas);
	return pp;
}

void
mig_post_free(struct mig_post *pp)
{
	if (pp == NULL)
		return;
	if (pp->mem != -1)
		close(pp->mem);
	if (pp->have_early)
		mm_dump_free(&pp->early);
	runs_free(&pp->left);
	runs_free(&pp->areas);
	free(pp);
}

uint64_t
mig_post_pages(const struct mig_post *pp, uint64_t *left)
{
	if (left != NULL)
		*left = pp->left_pages;
	return pp->hot_pages;
}

/*
 * The pages near each thread's stack pointer: what it touches first. And
 * the pages of each thread's rseq area, which the kernel writes as soon
 * as the target registers it, before the userfaultfd is there to fetch
 * them (rseq.c): left out, that page would be a fresh page of zeros
 * there, and the page the source pushes later would not go in (glibc
 * keeps the area in the thread's TCB, where errno and its TLS are).
 */
static int
postcopy_hot(struct mig_task *t, struct runs *hot, char **cause)
{
	size_t		 i;
	uint64_t	 sp, s, e;

	for (i = 0; i < t->nth; i++) {
		if (rseq_pages(t->th[i], &s, &e, cause) == -1)
			return -1;
		if (e > s)
			runs_add(hot, s, e);
		sp = t->th[i]->regs.rsp & ~(MIG_PAGE - 1);
		s = sp > POSTCOPY_HOT ? sp - POSTCOPY_HOT : 0;
		runs_add(hot, s, sp + POSTCOPY_HOT);
	}
	runs_sort(hot);
	return 0;
}

/*
 * dump_image's runs for a post-copy dump: of each private anonymous area
 * only its hot pages, the others with data left for later; the other
 * areas as pages_scan() chose.
 */
static int
postcopy_runs(void *arg, struct mig_task *t, struct mm_dump *md, char **cause)
{
	struct mig_post	*pp = arg;
	struct mm_run	*runs = NULL;
	struct runs	 hot, present, in, out, tmp;
	size_t		 n = 0, alloc = 0, i, j, r = 0;
	Osm__ImgVma	*v;
	char		 path[64];
	int		 pagemap, rc = -1;

	runs_init(&hot);
	runs_init(&present);
	runs_init(&in);
	runs_init(&out);
	runs_init(&tmp);
	snprintf(path, sizeof path, "/proc/%d/pagemap", (int)t->pid);
	if ((pagemap = open(path, O_RDONLY | O_CLOEXEC)) == -1) {
		xasprintf(cause, "%s: %s", path, strerror(errno));
		return -1;
	}
	if (postcopy_hot(t, &hot, cause) == -1)
		goto out;
	pp->left.n = pp->areas.n = 0;
	for (i = 0; i < md->nvmas; i++) {
		v = md->vmas[i];
		if (!runs_live(v)) {
			for (; r < md->nruns && md->runs[r].vma <= i; r++)
				if (md->runs[r].vma == i)
					runs_dump_add(&runs, &n, &alloc,
					    md->runs[r].start, md->runs[r].start
					    + md->runs[r].npages * MIG_PAGE, i);
			continue;
		}
		/* one run per area: runs_add would merge neighbours */
		if (pp->areas.n == pp->areas.alloc) {
			pp->areas.alloc = pp->areas.alloc == 0 ? 64 :
			    2 * pp->areas.alloc;
			pp->areas.r = xreallocarray(pp->areas.r,
			    pp->areas.alloc, sizeof *pp->areas.r);
		}
		pp->areas.r[pp->areas.n].start = v->start;
		pp->areas.r[pp->areas.n].end = v->end;
		pp->areas.n++;
		present.n = 0;
		if (track_scan(pagemap, v->start, v->end, TRACK_PRESENT,
		    &present, cause) == -1)
			goto out;
		runs_and(&present, &hot, &in);
		runs_minus(&present, &hot, &out);
		v->pages = 0;
		for (j = 0; j < in.n; j++) {
			runs_dump_add(&runs, &n, &alloc, in.r[j].start,
			    in.r[j].end, i);
			v->pages += (in.r[j].end - in.r[j].start) / MIG_PAGE;
		}
		pp->hot_pages += v->pages;
		runs_or(&pp->left, &out, &tmp);
		runs_copy(&tmp, &pp->left);
	}
	free(md->runs);
	md->runs = runs;
	md->nruns = n;
	runs = NULL;
	pp->left_pages = runs_bytes(&pp->left) / MIG_PAGE;
	rc = 0;
out:
	free(runs);
	close(pagemap);
	runs_free(&hot);
	runs_free(&present);
	runs_free(&in);
	runs_free(&out);
	runs_free(&tmp);
	return rc;
}

/*
 * Read the layout of process pid while it still runs, for the dump to
 * reuse if /proc/PID/maps says it holds when frozen: read with every page
 * counted (smaps), it would cost the freeze tens of milliseconds a GiB.
 * 0, or -1 with *cause (the dump then reads it itself).
 */
int
mig_post_prepare(struct mig_post *pp, pid_t pid, int flags,
    const struct mig_hidden *hidden, char **cause)
{
	struct mig_task	 tk;

	if (pp->have_early)
		mm_dump_free(&pp->early);
	pp->have_early = 0;
	memset(&tk, 0, sizeof tk);
	tk.pid = pid;
	tk.hidden = pp->hidden = hidden;
	if (mm_dump_layout(&tk, &pp->early, flags, cause) == -1)
		return -1;
	if (mm_check(&pp->early.mm, cause) == -1) {
		mm_dump_free(&pp->early);
		return -1;
	}
	pp->have_early = 1;
	return 0;
}

/* The post-copy dump of the held lv->t (precopy.c's stop and copy). */
int
postcopy_dump(struct mig_live *lv, struct img *img, int flags,
    struct mig_stats *st, char **cause)
{
	struct mig_post	*pp = lv->post;
	struct mm_dump	*given;
	char		 path[64];

	pp->pid = lv->t->pid;
	pp->hidden = lv->hidden;
	pp->hot_pages = pp->left_pages = 0;
	if (pp->mem == -1) {
		snprintf(path, sizeof path, "/proc/%d/mem", (int)pp->pid);
		if ((pp->mem = open(path, O_RDONLY | O_CLOEXEC)) == -1) {
			xasprintf(cause, "%s: %s", path, strerror(errno));
			return -1;
		}
	}
	/* dump_image takes the early layout, used or freed */
	given = pp->have_early ? &pp->early : NULL;
	pp->have_early = 0;
	return dump_image(lv->t, img, flags, st, given, postcopy_runs, pp,
	    cause);
}

/* The end of the area that holds addr, or 0. */
static uint64_t
postcopy_area_end(const struct mig_post *pp, uint64_t addr)
{
	size_t	i;

	for (i = 0; i < pp->areas.n; i++)
		if (addr >= pp->areas.r[i].start && addr < pp->areas.r[i].end)
			return pp->areas.r[i].end;
	return 0;
}

static void
postcopy_drop(struct mig_post *pp, uint64_t s, uint64_t e)
{
	struct runs	one, tmp;

	runs_init(&one);
	runs_init(&tmp);
	runs_add(&one, s, e);
	runs_minus(&pp->left, &one, &tmp);
	runs_copy(&tmp, &pp->left);
	runs_free(&one);
	runs_free(&tmp);
}

/*
 * The next pages to push, at most max bytes inside one area: 1 with
 * *addr and *len, taken from what is left; 0 when none is left.
 */
int
mig_post_next(struct mig_post *pp, uint64_t *addr, size_t *len, size_t max)
{
	uint64_t	s, e, ae;

	if (pp->left.n == 0)
		return 0;
	s = pp->left.r[0].start;
	e = pp->left.r[0].end;
	if ((ae = postcopy_area_end(pp, s)) != 0 && e > ae)
		e = ae;
	if (e - s > max)
		e = s + max;
	postcopy_drop(pp, s, e);
	*addr = s;
	*len = e - s;
	return 1;
}

/*
 * What answers a fault on the page at addr: that page and the pages left
 * after it in the same run and area, at most max bytes; taken from what
 * is left. A page not left (sent already, or never with data) goes alone.
 * (The length is told from the run found, never from what is left after
 * the take: a run taken whole from its start may have been the last one,
 * and its other pages would then be neither sent nor left to push.)
 */
size_t
mig_post_take(struct mig_post *pp, uint64_t addr, size_t max)
{
	uint64_t	e, ae;
	size_t		i;

	addr &= ~(MIG_PAGE - 1);
	for (i = 0; i < pp->left.n; i++) {
		if (addr < pp->left.r[i].start || addr >= pp->left.r[i].end)
			continue;
		e = pp->left.r[i].end;
		if ((ae = postcopy_area_end(pp, addr)) != 0 && e > ae)
			e = ae;
		if (e - addr > max)
			e = addr + max;
		postcopy_drop(pp, addr, e);
		return e - addr;
	}
	return MIG_PAGE;
}

/* len bytes of the held process at addr into buf (zeros if unmapped). */
void
mig_post_read(struct mig_post *pp, uint64_t addr, void *buf, size_t len)
{
	struct iovec	remote = { (void *)addr, len };

	postcopy_read(pp->pid, pp->mem, pp->hidden, &remote, 1, buf, len);
}

/*
 * Make the post-copy userfaultfd inside the held task t and take it: our
 * descriptor, or -1 with *cause. devfd is a descriptor of
 * /dev/userfaultfd the task holds (-1: none; the userfaultfd call then
 * needs the privilege of a full userfaultfd).
 */
int
mig_post_uffd(struct mig_task *t, int devfd, char **cause)
{
	struct uffdio_api	 api;
	long			 rfd = -1;
	int			 pidfd = -1, fd = -1;

	if (devfd != -1 ? task_sys_ok(t, "USERFAULTFD_IOC_NEW", SYS_ioctl,
	    (sysargs){ devfd, USERFAULTFD_IOC_NEW, O_CLOEXEC | O_NONBLOCK })
	    == -1 : task_sys_ok(t, "userfaultfd", SYS_userfaultfd,
	    (sysargs){ O_CLOEXEC | O_NONBLOCK }) == -1) {
		*cause = task_cause(t);
		return -1;
	}
	rfd = t->last_rv;
	if ((pidfd = syscall(SYS_pidfd_open, t->pid, 0)) == -1) {
		xasprintf(cause, "pidfd_open %ld: %s", (long)t->pid,
		    strerror(errno));
		goto out;
	}
	if ((fd = syscall(SYS_pidfd_getfd, pidfd, rfd, 0)) == -1) {
		xasprintf(cause, "pidfd_getfd of the userfaultfd of process "
		    "%ld: %s", (long)t->pid, strerror(errno));
		goto out;
	}
	memset(&api, 0, sizeof api);
	api.api = UFFD_API;
	api.features = POSTCOPY_EVENTS;
	if (ioctl(fd, UFFDIO_API, &api) == -1 ||
	    (api.ioctls & (1ULL << _UFFDIO_REGISTER)) == 0) {
		xasprintf(cause, "UFFDIO_API for post-copy: %s",
		    strerror(errno));
		close(fd);
		fd = -1;
	}
out:
	if (task_sys_ok(t, "close", SYS_close, (sysargs){ rfd }) == -1 &&
	    fd != -1) {
		*cause = task_cause(t);
		close(fd);
		fd = -1;
	}
	if (pidfd != -1)
		close(pidfd);
	return fd;
}

/*
 * Register every private anonymous area of the held task t with uffd in
 * missing mode: what the restore did not put there faults to us.
 */
int
mig_post_register(struct mig_task *t, int uffd, char **cause)
{
	struct uffdio_register	 r;
	struct mm_dump		 md;
	Osm__ImgVma		*v;
	size_t			 i;
	int			 rc = -1;
	const uint64_t		 need = (1ULL << _UFFDIO_COPY) |
				    (1ULL << _UFFDIO_ZEROPAGE) |
				    (1ULL << _UFFDIO_WAKE);

	if (mm_dump_layout(t, &md, MIG_CONTEXT, cause) == -1)
		return -1;
	for (i = 0; i < md.nvmas; i++) {
		v = md.vmas[i];
		if (!runs_live(v))
			continue;
		memset(&r, 0, sizeof r);
		r.range.start = v->start;
		r.range.len = v->end - v->start;
		r.mode = UFFDIO_REGISTER_MODE_MISSING;
		if (ioctl(uffd, UFFDIO_REGISTER, &r) == -1) {
			xasprintf(cause, "UFFDIO_REGISTER %llx-%llx: %s",
			    (unsigned long long)v->start,
			    (unsigned long long)v->end, strerror(errno));
			goto out;
		}
		if ((r.ioctls & need) != need) {
			xasprintf(cause, "the userfaultfd cannot copy into "
			    "%llx-%llx", (unsigned long long)v->start,
			    (unsigned long long)v->end);
			goto out;
		}
	}
	rc = 0;
out:
	mm_dump_free(&md);
	return rc;
}

struct mig_fetch *
mig_fetch_new(int uffd)
{
	struct mig_fetch	*f;

	f = xcalloc(1, sizeof *f);
	f->uffd = uffd;
	postmap_init(&f->map);
	return f;
}

/* Closed, the userfaultfd leaves every area to the kernel again. */
void
mig_fetch_free(struct mig_fetch *f)
{
	if (f == NULL)
		return;
	if (f->uffd != -1)
		close(f->uffd);
	postmap_free(&f->map);
	free(f->asks);
	free(f);
}

/* The next fault to ask the source about: 1 and *addr, or 0. */
int
mig_fetch_ask(struct mig_fetch *f, uint64_t *addr)
{
	if (f->nasks == 0)
		return 0;
	*addr = f->asks[--f->nasks];
	return 1;
}

int
mig_fetch_fd(const struct mig_fetch *f)
{
	return f->uffd;
}

const struct mig_fetch_stats *
mig_fetch_stats(const struct mig_fetch *f)
{
	return &f->st;
}

static void
postcopy_wake(struct mig_fetch *f, uint64_t addr, size_t len)
{
	struct uffdio_range	r = { .start = addr, .len = len };

	ioctl(f->uffd, UFFDIO_WAKE, &r);
}

/* Note which thread faulted: the log says how many did. */
static void
postcopy_tid(struct mig_fetch *f, uint32_t tid)
{
	uint32_t	i;

	for (i = 0; i < f->st.threads && i < POSTCOPY_TIDS; i++)
		if (f->tids[i] == tid)
			return;
	if (f->st.threads < POSTCOPY_TIDS)
		f->tids[f->st.threads++] = tid;
}

/*
 * The process's events so far: its faults, each the source's address of
 * the page it waits on, for mig_fetch_ask (a fault on a page it dropped
 * is answered here with zeros); what it dropped and moved, noted. 0, or
 * -1 with *cause.
 */
int
mig_fetch_events(struct mig_fetch *f, char **cause)
{
	struct uffd_msg		 msg[16];
	struct uffdio_zeropage	 z;
	uint64_t		 a, src;
	ssize_t			 r;
	size_t			 i;

	for (;;) {
		if ((r = read(f->uffd, msg, sizeof msg)) == -1) {
			if (errno == EAGAIN || errno == EINTR)
				break;
			xasprintf(cause, "userfaultfd: %s", strerror(errno));
			return -1;
		}
		for (i = 0; i < (size_t)r / sizeof msg[0]; i++) {
			switch (msg[i].event) {
			case UFFD_EVENT_PAGEFAULT:
				a = msg[i].arg.pagefault.address &
				    ~(MIG_PAGE - 1);
				f->st.faults++;
				postcopy_tid(f, msg[i].arg.pagefault.feat.ptid);
				if (postmap_there(&f->map, a, &src)) {
					if (f->nasks == f->asks_alloc) {
						f->asks_alloc = f->asks_alloc ==
						    0 ? 64 : 2 * f->asks_alloc;
						f->asks = xreallocarray(f->asks,
						    f->asks_alloc,
						    sizeof *f->asks);
					}
					f->asks[f->nasks++] = src;
					break;
				}
				memset(&z, 0, sizeof z);
				z.range.start = a;
				z.range.len = MIG_PAGE;
				if (ioctl(f->uffd, UFFDIO_ZEROPAGE, &z) == -1)
					postcopy_wake(f, a, MIG_PAGE);
				break;
			case UFFD_EVENT_REMOVE:
			case UFFD_EVENT_UNMAP:
				postmap_drop(&f->map, msg[i].arg.remove.start,
				    msg[i].arg.remove.end);
				f->st.dropped++;
				break;
			case UFFD_EVENT_REMAP:
				postmap_move(&f->map, msg[i].arg.remap.from,
				    msg[i].arg.remap.to, msg[i].arg.remap.len);
				f->st.remaps++;
				break;
			}
		}
	}
	return 0;
}

/* Drops and moves told so far: the map changed if this did. */
static uint64_t
postcopy_events(const struct mig_fetch *f)
{
	return f->st.dropped + f->st.remaps;
}

/*
 * Copy one page or run (here, in the process's address space now) in,
 * waking whoever waits on it: how many pages went in. *used: how many of
 * the len bytes are dealt with; fewer if the process dropped or moved
 * memory meanwhile, the rest then to be placed again by the map.
 */
static uint64_t
postcopy_copy_here(struct mig_fetch *f, uint64_t here, const uint8_t *data,
    size_t len, size_t *used, char **cause)
{
	struct uffdio_copy	c;
	size_t			off, u;
	uint64_t		done = 0, ev;

	*used = 0;
	for (;;) {
		memset(&c, 0, sizeof c);
		c.dst = here + *used;
		c.src = (uintptr_t)(data + *used);
		c.len = len - *used;
		if (ioctl(f->uffd, UFFDIO_COPY, &c) == 0) {
			*used = len;
			return done + c.len / MIG_PAGE;
		}
		if (errno != EAGAIN)
			break;
		/* the layout is changing: its events first */
		if (c.copy > 0) {
			done += c.copy / MIG_PAGE;
			*used += c.copy;
		}
		ev = postcopy_events(f);
		if (mig_fetch_events(f, cause) == -1 ||
		    postcopy_events(f) != ev)
			return done;
	}
	if (len - *used == MIG_PAGE) {
		if (errno == EEXIST) {
			f->st.there++;
			postcopy_wake(f, here + *used, MIG_PAGE);
		}
		*used = len;
		return done;
	}
	/* Part of it is there, or no longer ours: page by page. */
	for (off = *used; off < len; off += MIG_PAGE) {
		done += postcopy_copy_here(f, here + off, data + off, MIG_PAGE,
		    &u, cause);
		if (u == 0 || (cause != NULL && *cause != NULL)) {
			*used = off;
			return done;
		}
	}
	*used = len;
	return done;
}

/*
 * Pages from the source, len bytes of them at its address addr: into the
 * process where they are now, but for what it dropped meanwhile (and
 * those it has already, faulted in with an earlier answer). answer: they
 * answer an ask. 0, or -1 with *cause.
 */
int
mig_fetch_copy(struct mig_fetch *f, uint64_t addr, const void *data,
    size_t len, int answer, char **cause)
{
	const uint8_t	*p = data;
	uint64_t	 got = 0, here;
	size_t		 off, n, used;
	char		*why = NULL;

	if ((addr | len) & (MIG_PAGE - 1) || len == 0) {
		xasprintf(cause, "pages at %llx of %zu bytes: not whole pages",
		    (unsigned long long)addr, len);
		return -1;
	}
	for (off = 0; off < len && why == NULL; off += used) {
		if (!postmap_here(&f->map, addr + off, &here)) {
			used = MIG_PAGE;
			continue;
		}
		/* no drop or move yet: the rest lies as at the source */
		n = postmap_size(&f->map) == 0 ? len - off : MIG_PAGE;
		got += postcopy_copy_here(f, here, p + off, n, &used, &why);
	}
	if (why != NULL) {
		*cause = why;
		return -1;
	}
	if (answer)
		f->st.fault_pages += got;
	else
		f->st.pushed_pages += got;
	return 0;
}
