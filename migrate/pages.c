/*
 * Page contents: which pages of an area hold data (the PAGEMAP_SCAN
 * ioctl, or /proc/PID/pagemap where it is missing), carrying them in large
 * batches with process_vm_readv, and writing them into the target with
 * process_vm_writev. Pages never touched are not carried: they come back
 * as the zero pages they were.
 */
#include <sys/mman.h>
#include <sys/uio.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/osm.h"
#include "internal.h"

#define PAGEMAP_PRESENT		(1ULL << 63)
#define PAGEMAP_SWAPPED		(1ULL << 62)
#define PAGEMAP_FILE		(1ULL << 61)

enum pages_want {
	WANT_NONE,
	WANT_ALL,		/* every page that can be read */
	WANT_TOUCHED,		/* anonymous: present or swapped */
	WANT_WRITTEN,		/* file: pages that became anonymous */
};

struct pages_scan {
	struct mm_dump	*md;
	size_t		 vma;
	int		 pagemap;
	int		 use_ioctl;
	size_t		 alloc;
};

static void
pages_add(struct pages_scan *ps, uint64_t start, uint64_t end)
{
	struct mm_dump	*md = ps->md;
	struct mm_run	*last;

	if (start >= end)
		return;
	last = md->nruns > 0 ? &md->runs[md->nruns - 1] : NULL;
	md->vmas[ps->vma]->pages += (end - start) / MIG_PAGE;
	if (last != NULL && last->vma == ps->vma &&
	    last->start + last->npages * MIG_PAGE == start) {
		last->npages += (end - start) / MIG_PAGE;
		return;
	}
	if (md->nruns == ps->alloc) {
		ps->alloc = ps->alloc == 0 ? 256 : ps->alloc * 2;
		md->runs = xreallocarray(md->runs, ps->alloc,
		    sizeof *md->runs);
	}
	md->runs[md->nruns].start = start;
	md->runs[md->nruns].npages = (end - start) / MIG_PAGE;
	md->runs[md->nruns].vma = ps->vma;
	md->nruns++;
}

static int
pages_keep(enum pages_want want, uint64_t cat)
{
	if (cat & PM_SWAPPED)
		return 1;
	if (!(cat & PM_PRESENT) || (cat & PM_PFNZERO))
		return 0;
	return want == WANT_TOUCHED || !(cat & PM_FILE);
}

/* A region of pages_scan_ioctl's walk, kept if want wants it. */
struct pages_walk {
	struct pages_scan	*ps;
	enum pages_want		 want;
};

static void
pages_region(void *arg, uint64_t s, uint64_t e, uint64_t categories)
{
	struct pages_walk	*w = arg;

	if (pages_keep(w->want, categories))
		pages_add(w->ps, s, e);
}

static int
pages_scan_ioctl(struct pages_scan *ps, const Osm__ImgVma *v,
    enum pages_want want, char **cause)
{
	struct pages_walk	 w = { ps, want };
	struct pm_scan_arg	 a;
	uint64_t		 before = ps->md->vmas[ps->vma]->pages;

	memset(&a, 0, sizeof a);
	a.category_anyof_mask = PM_PRESENT | PM_SWAPPED;
	a.return_mask = PM_PRESENT | PM_SWAPPED | PM_FILE | PM_PFNZERO;
	if (track_pm_scan(ps->pagemap, v->start, v->end, &a, pages_region, &w,
	    cause) == 0)
		return 0;
	/* no PAGEMAP_SCAN on this kernel: /proc/PID/pagemap read instead */
	if ((errno == ENOTTY || errno == EINVAL) &&
	    ps->md->vmas[ps->vma]->pages == before) {
		free(*cause);
		*cause = NULL;
		ps->use_ioctl = 0;
		return 1;
	}
	return -1;
}

static int
pages_scan_read(struct pages_scan *ps, const Osm__ImgVma *v,
    enum pages_want want, char **cause)
{
	uint64_t	 e[4096], addr = v->start, cat;
	size_t		 i, n;
	ssize_t		 r;

	while (addr < v->end) {
		n = (v->end - addr) / MIG_PAGE;
		if (n > nitems(e))
			n = nitems(e);
		r = pread(ps->pagemap, e, n * 8, addr / MIG_PAGE * 8);
		if (r != (ssize_t)(n * 8)) {
			xasprintf(cause, "read pagemap: %s",
			    r == -1 ? strerror(errno) : "short read");
			return -1;
		}
		for (i = 0; i < n; i++, addr += MIG_PAGE) {
			cat = 0;
			if (e[i] & PAGEMAP_PRESENT)
				cat |= PM_PRESENT;
			if (e[i] & PAGEMAP_SWAPPED)
				cat |= PM_SWAPPED;
			if (e[i] & PAGEMAP_FILE)
				cat |= PM_FILE;
			if (pages_keep(want, cat))
				pages_add(ps, addr, addr + MIG_PAGE);
		}
	}
	return 0;
}

/* Is the page at addr readable through the task's memory file? */
static int
pages_readable(int mem, uint64_t addr)
{
	uint8_t	c;

	return pread(mem, &c, 1, addr) == 1;
}

/*
 * A private mapping of a file that is gone is carried whole, up to the
 * end of the file: pages past it cannot be read (they would fault).
 */
static void
pages_scan_all(struct pages_scan *ps, const Osm__ImgVma *v, int mem)
{
	uint64_t	lo = 0, hi = (v->end - v->start) / MIG_PAGE, mid;

	if (!pages_readable(mem, v->end - MIG_PAGE)) {
		/* Find the first unreadable page. */
		while (lo < hi) {
			mid = (lo + hi) / 2;
			if (pages_readable(mem, v->start + mid * MIG_PAGE))
				lo = mid + 1;
			else
				hi = mid;
		}
		pages_add(ps, v->start, v->start + lo * MIG_PAGE);
	} else
		pages_add(ps, v->start, v->end);
}

static enum pages_want
pages_want(const Osm__ImgVma *v)
{
	switch (v->kind) {
	case OSM__IMG_VMA_KIND__VMA_ANON:
		if ((v->flags & MAP_SHARED) ||
		    (v->label != NULL && v->label[0] == '/'))
			return WANT_ALL;
		return WANT_TOUCHED;
	case OSM__IMG_VMA_KIND__VMA_FILE:
		return (v->flags & MAP_SHARED) ? WANT_NONE : WANT_WRITTEN;
	default:
		return WANT_NONE;
	}
}

/* Decide, area by area, which pages the image carries. */
int
pages_scan(struct mig_task *t, struct mm_dump *md, char **cause)
{
	struct pages_scan	 ps;
	char			 path[64];
	enum pages_want		 want;
	int			 mem = -1, r, rc = -1;
	size_t			 i;

	memset(&ps, 0, sizeof ps);
	ps.md = md;
	ps.use_ioctl = 1;
	snprintf(path, sizeof path, "/proc/%d/pagemap", t->pid);
	if ((ps.pagemap = open(path, O_RDONLY | O_CLOEXEC)) == -1) {
		xasprintf(cause, "%s: %s", path, strerror(errno));
		return -1;
	}
	snprintf(path, sizeof path, "/proc/%d/mem", t->pid);
	if ((mem = open(path, O_RDONLY | O_CLOEXEC)) == -1) {
		xasprintf(cause, "%s: %s", path, strerror(errno));
		goto out;
	}
	for (i = 0; i < md->nvmas; i++) {
		ps.vma = i;
		md->vmas[i]->pages = 0;
		want = pages_want(md->vmas[i]);
		/* A live dump's own, from its tracking: precopy.c. */
		if (want == WANT_NONE || (md->skip_live &&
		    runs_live(md->vmas[i])))
			continue;
		if (want == WANT_ALL) {
			pages_scan_all(&ps, md->vmas[i], mem);
			continue;
		}
		r = 1;
		if (ps.use_ioctl)
			r = pages_scan_ioctl(&ps, md->vmas[i], want, cause);
		if (r == 1)
			r = pages_scan_read(&ps, md->vmas[i], want, cause);
		if (r == -1)
			goto out;
	}
	rc = 0;
out:
	if (mem != -1)
		close(mem);
	close(ps.pagemap);
	return rc;
}

struct pages_batch {
	Osm__ImgExtent	 ext[MIG_EXTENTS_MAX];
	Osm__ImgExtent	*extp[MIG_EXTENTS_MAX];
	struct iovec	 iov[MIG_EXTENTS_MAX];
	int		 readable[MIG_EXTENTS_MAX];
	size_t		 n;
	size_t		 len;
	uint8_t		*buf;
};

/* Read the batch's pages from the task into buf. */
static int
pages_read_batch(struct mig_task *t, struct pages_batch *b, int mem,
    char **cause)
{
	struct iovec	 local;
	size_t		 i, j, len;
	uint8_t		*p = b->buf;
	ssize_t		 n;

	for (i = 0; i < b->n; i = j) {
		len = 0;
		for (j = i; j < b->n && b->readable[j] == b->readable[i]; j++)
			len += b->iov[j].iov_len;
		if (b->readable[i]) {
			local.iov_base = p;
			local.iov_len = len;
			n = process_vm_readv(t->pid, &local, 1, &b->iov[i],
			    j - i, 0);
		} else {
			/* No read access: only the memory file may look. */
			n = 0;
			for (size_t k = i; k < j; k++) {
				ssize_t r = pread(mem, p + n,
				    b->iov[k].iov_len,
				    (uintptr_t)b->iov[k].iov_base);
				if (r != (ssize_t)b->iov[k].iov_len) {
					n = -1;
					break;
				}
				n += r;
			}
		}
		if (n != (ssize_t)len) {
			xasprintf(cause, "read memory of process %d near "
			    "0x%llx: %s", t->pid,
			    (unsigned long long)b->ext[i].addr,
			    n == -1 ? strerror(errno) : "short read");
			return -1;
		}
		p += len;
	}
	for (i = 0, p = b->buf; i < b->n; p += b->iov[i++].iov_len)
		mig_hidden_pages(t->hidden, (uintptr_t)b->iov[i].iov_base, p,
		    b->iov[i].iov_len);
	return 0;
}

static int
pages_flush(struct mig_task *t, struct pages_batch *b, struct img *img,
    int mem, struct mig_stats *st, char **cause)
{
	if (b->n == 0)
		return 0;
	if (pages_read_batch(t, b, mem, cause) == -1)
		return -1;
	if (img_write_pages(img, b->extp, b->n, b->buf, b->len, cause) == -1)
		return -1;
	if (st != NULL)
		st->pages += b->len / MIG_PAGE;
	b->n = 0;
	b->len = 0;
	return 0;
}

/*
 * Carry the pages pages_scan() chose, in batches of MIG_BATCH: 1 MiB keeps
 * the buffer in cache between process_vm_readv, the checksum and write,
 * which measured faster than 2 to 8 MiB (docs/PERFORMANCE.md).
 */
int
pages_dump(struct mig_task *t, struct mm_dump *md, struct img *img,
    struct mig_stats *st, char **cause)
{
	struct pages_batch	*b;
	struct mm_run		*r;
	char			 path[64];
	uint64_t		 addr, left, take, t0 = now_us();
	size_t			 i;
	int			 mem, rc = -1;

	snprintf(path, sizeof path, "/proc/%d/mem", t->pid);
	if ((mem = open(path, O_RDONLY | O_CLOEXEC)) == -1) {
		xasprintf(cause, "%s: %s", path, strerror(errno));
		return -1;
	}
	b = xcalloc(1, sizeof *b);
	b->buf = xmalloc(MIG_BATCH);
	for (i = 0; i < MIG_EXTENTS_MAX; i++) {
		osm__img_extent__init(&b->ext[i]);
		b->extp[i] = &b->ext[i];
	}
	for (i = 0; i < md->nruns; i++) {
		r = &md->runs[i];
		addr = r->start;
		left = r->npages * MIG_PAGE;
		while (left > 0) {
			if (b->n == MIG_EXTENTS_MAX ||
			    b->len == MIG_BATCH) {
				if (pages_flush(t, b, img, mem, st,
				    cause) == -1)
					goto out;
			}
			take = MIG_BATCH - b->len;
			if (take > left)
				take = left;
			b->ext[b->n].addr = addr;
			b->ext[b->n].npages = take / MIG_PAGE;
			b->iov[b->n].iov_base = (void *)addr;
			b->iov[b->n].iov_len = take;
			b->readable[b->n] =
			    (md->vmas[r->vma]->prot & PROT_READ) != 0;
			b->n++;
			b->len += take;
			addr += take;
			left -= take;
		}
	}
	if (pages_flush(t, b, img, mem, st, cause) == -1)
		goto out;
	if (st != NULL)
		st->mem_us += now_us() - t0;
	rc = 0;
out:
	free(b->buf);
	free(b);
	close(mem);
	return rc;
}

/*
 * Write the image's pages into the target, each batch checked against the
 * memory map before it is written, until the final seal. Reading the next
 * batch in a second thread while this one is written was tried and
 * measured no faster here (docs/PERFORMANCE.md): the time goes into
 * allocating the target's pages.
 */
int
pages_restore(struct mig_task *t, const Osm__ImgMm *mm, struct img *img,
    struct mig_stats *st, char **cause)
{
	Osm__ImgRecord	*rec = NULL;
	struct img_pages cur;
	struct iovec	 local, remote[MIG_EXTENTS_MAX];
	uint64_t	*counts, t0 = now_us();
	uint8_t		*buf;
	size_t		 i, len;
	ssize_t		 n;
	int		 rc = -1, more;

	counts = xcalloc(mm->n_vmas + 1, sizeof *counts);
	buf = xmalloc(MIG_PAGES_MAX);
	img_pages_init(&cur, mm);
	while ((more = img_pages_next(img, &cur, counts, buf, &rec, cause)) == 1) {
		len = img->raw_len;
		for (i = 0; i < rec->pages->n_extents; i++) {
			remote[i].iov_base =
			    (void *)rec->pages->extents[i]->addr;
			remote[i].iov_len =
			    rec->pages->extents[i]->npages * MIG_PAGE;
		}
		local.iov_base = (void *)img->raw;
		local.iov_len = len;
		n = process_vm_writev(t->pid, &local, 1, remote, i, 0);
		if (n != (ssize_t)len) {
			xasprintf(cause, "write pages into process %d: %s",
			    t->pid, n == -1 ? strerror(errno) : "short write");
			goto out;
		}
		if (st != NULL)
			st->pages += len / MIG_PAGE;
		osm__img_record__free_unpacked(rec, NULL);
		rec = NULL;
	}
	if (more == -1)
		goto out;
	if (st != NULL)
		st->mem_us += now_us() - t0;
	rc = 0;
out:
	if (rec != NULL)
		osm__img_record__free_unpacked(rec, NULL);
	free(buf);
	free(counts);
	return rc;
}
