/*
 * The restore of a live dump's rounds (precopy.c writes them): before the
 * description comes, the target is emptied once (the first round's
 * layout places its vDSO), and each round reshapes its private anonymous
 * memory to the round's layout — what the round does not keep is
 * unmapped, areas that carry pages are mapped where they are new — and
 * takes the round's pages. Once the description is in, rounds_final does
 * the same for the last layout and maps every other area, as
 * mm_restore_map does for an image without rounds. image.c checks every
 * round against the ones before (runs_check_kept) before it comes here.
 */
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/osm.h"
#include "internal.h"

/* The vDSO areas stay where the first round put them. */
static int
rounds_vdso(struct rounds *rd, const Osm__ImgMm *mm, char **cause)
{
	size_t	i, n = 0;

	for (i = 0; i < mm->n_vmas; i++) {
		if (mm->vmas[i]->kind == OSM__IMG_VMA_KIND__VMA_ANON ||
		    mm->vmas[i]->kind == OSM__IMG_VMA_KIND__VMA_FILE)
			continue;
		if (n == nitems(rd->vdso))
			break;
		if (!rd->started) {
			rd->vdso[n][0] = mm->vmas[i]->start;
			rd->vdso[n][1] = mm->vmas[i]->end;
		} else if (rd->vdso[n][0] != mm->vmas[i]->start ||
		    rd->vdso[n][1] != mm->vmas[i]->end)
			goto moved;
		n++;
	}
	if (!rd->started) {
		rd->nvdso = n;
		return 0;
	}
	if (n == rd->nvdso)
		return 0;
moved:
	xasprintf(cause, "the process moved its vDSO during the rounds");
	return -1;
}

static int
rounds_overlaps(const Osm__ImgMm *mm, uint64_t s, uint64_t e)
{
	size_t	i;

	for (i = 0; i < mm->n_vmas; i++) {
		if (mm->vmas[i]->start < e && s < mm->vmas[i]->end)
			return 1;
	}
	return 0;
}

/*
 * Our scratch pages in the target must not lie where the process has
 * memory now: moved to a hole of both its layout and the target's.
 */
static int
rounds_scratch(struct mig_task *t, const Osm__ImgMm *mm, char **cause)
{
	char			 path[64], line[512];
	struct runs		 busy;
	unsigned long long	 s, e;
	uint64_t		 old = t->scratch, len = t->scratch_len, at;
	size_t			 i;
	FILE			*f;

	if (old == 0 || !rounds_overlaps(mm, old, old + len))
		return 0;
	runs_init(&busy);
	snprintf(path, sizeof path, "/proc/%d/maps", (int)t->pid);
	if ((f = fopen(path, "re")) == NULL) {
		xasprintf(cause, "%s: %s", path, strerror(errno));
		return -1;
	}
	while (fgets(line, sizeof line, f) != NULL) {
		if (sscanf(line, "%llx-%llx", &s, &e) == 2)
			runs_add(&busy, s, e);
	}
	fclose(f);
	for (i = 0; i < mm->n_vmas; i++)
		runs_add(&busy, mm->vmas[i]->start, mm->vmas[i]->end);
	runs_sort(&busy);
	at = 1UL << 20;
	for (i = 0; i < busy.n && busy.r[i].start < at + len; i++) {
		if (busy.r[i].end > at)
			at = busy.r[i].end;
	}
	runs_free(&busy);
	if (task_scratch(t, at, len, cause) == -1)
		return -1;
	if (task_sys_ok(t, "munmap scratch", SYS_munmap,
	    (sysargs){ old, len }) == -1) {
		*cause = task_cause(t);
		return -1;
	}
	return 0;
}

/* Drop what the target holds that mm does not keep. */
static int
rounds_drop(struct mig_task *t, const struct runs *held,
    const Osm__ImgMm *mm, struct runs *kept, char **cause)
{
	struct runs	drop;
	size_t		i;
	int		rc = 0;

	runs_init(&drop);
	runs_kept(mm, kept);
	runs_minus(held, kept, &drop);
	for (i = 0; i < drop.n && rc == 0; i++) {
		if ((rc = task_sys_ok(t, "munmap", SYS_munmap,
		    (sysargs){ drop.r[i].start, drop.r[i].end -
		    drop.r[i].start })) == -1)
			*cause = task_cause(t);
	}
	runs_free(&drop);
	return rc;
}

/* Map what of area v the target does not keep, as mm_restore_map would. */
static int
rounds_map(struct mig_task *t, const Osm__ImgVma *v, const struct runs *kept,
    char **cause)
{
	struct runs	area, part;
	size_t		i;
	int		rc = 0;

	runs_init(&area);
	runs_init(&part);
	runs_add(&area, v->start, v->end);
	runs_minus(&area, kept, &part);
	for (i = 0; i < part.n && rc == 0; i++) {
		if ((rc = task_sys_ok(t, "mmap", SYS_mmap,
		    (sysargs){ part.r[i].start, part.r[i].end -
		    part.r[i].start, PROT_READ | PROT_WRITE, v->flags |
		    MAP_FIXED_NOREPLACE | MAP_ANONYMOUS, -1, 0 })) == -1)
			*cause = task_cause(t);
	}
	runs_free(&area);
	runs_free(&part);
	return rc;
}

/* Reshape the target to the round r: what it keeps, what is new. */
static int
rounds_reshape(struct rounds *rd, struct img *img, const Osm__ImgRound *r,
    char **cause)
{
	struct mig_task	*t = rd->t;
	const Osm__ImgMm *mm = r->mm;
	struct runs	 kept;
	size_t		 i;
	int		 rc = -1;

	runs_init(&kept);
	if (!rd->started) {
		if (mm_check_target(t, mm, cause) == -1 ||
		    rseq_unregister_all(t, cause) == -1 ||
		    mm_restore_clear(t, mm, cause) == -1)
			goto out;
		if (rounds_vdso(rd, mm, cause) == -1)
			goto out;
		rd->started = 1;
	} else if (rounds_vdso(rd, mm, cause) == -1)
		goto out;
	if (rounds_scratch(t, mm, cause) == -1 ||
	    rounds_drop(t, &img->held, mm, &kept, cause) == -1)
		goto out;
	for (i = 0; i < mm->n_vmas; i++) {
		if (runs_live(mm->vmas[i]) && mm->vmas[i]->pages > 0 &&
		    rounds_map(t, mm->vmas[i], &kept, cause) == -1)
			goto out;
	}
	if (rd->st != NULL)
		rd->st->rounds++;
	rc = 0;
out:
	runs_free(&kept);
	return rc;
}

/* A round, image.c's round_fn: reshape the target, then the pages. */
int
rounds_apply(void *arg, struct img *img, const Osm__ImgRound *r,
    char **cause)
{
	struct rounds	*rd = arg;

	if (rounds_reshape(rd, img, r, cause) == -1)
		return -1;
	return pages_restore(rd->t, r->mm, img, rd->st, cause);
}

/*
 * mm with the ranges it keeps cut out of its areas (what is still to be
 * mapped), or (prot) with each area that keeps some marked as carrying
 * pages, for mm_restore_prot. Free with rounds_mm_free.
 */
static void
rounds_mm(const Osm__ImgMm *mm, const struct runs *kept, int prot,
    Osm__ImgMm *out)
{
	struct runs	 area, part;
	Osm__ImgVma	*v;
	size_t		 i, j, n = 0;

	*out = *mm;
	out->n_kept = 0;
	out->kept = NULL;
	out->vmas = xcalloc(mm->n_vmas * 2 + kept->n + 1, sizeof *out->vmas);
	runs_init(&area);
	runs_init(&part);
	for (i = 0; i < mm->n_vmas; i++) {
		area.n = 0;
		runs_add(&area, mm->vmas[i]->start, mm->vmas[i]->end);
		runs_and(&area, kept, &part);
		if (prot || part.n == 0) {
			v = xmalloc(sizeof *v);
			*v = *mm->vmas[i];
			if (prot && part.n > 0 && v->pages == 0)
				v->pages = 1;
			out->vmas[n++] = v;
			continue;
		}
		runs_minus(&area, kept, &part);
		for (j = 0; j < part.n; j++) {
			v = xmalloc(sizeof *v);
			*v = *mm->vmas[i];
			v->start = part.r[j].start;
			v->end = part.r[j].end;
			out->vmas[n++] = v;
		}
	}
	out->n_vmas = n;
	runs_free(&area);
	runs_free(&part);
}

static void
rounds_mm_free(Osm__ImgMm *mm)
{
	size_t	i;

	for (i = 0; i < mm->n_vmas; i++)
		free(mm->vmas[i]);
	free(mm->vmas);
}

/*
 * The description is in: the target's memory to the last layout, every
 * area mapped that the rounds did not (files, shared memory, new areas);
 * in place of mm_restore_clear and mm_restore_map.
 */
int
rounds_final(struct rounds *rd, const struct img *img, const Osm__ImgMm *mm,
    const Osm__ImgTask *task, const struct mig_restore_opts *o, int flags,
    char **cause)
{
	struct mig_task	*t = rd->t;
	Osm__ImgMm	 rest;
	struct runs	 kept;
	int		 rc = -1;

	runs_init(&kept);
	if (rounds_vdso(rd, mm, cause) == -1 ||
	    rounds_scratch(t, mm, cause) == -1 ||
	    rounds_drop(t, &img->held, mm, &kept, cause) == -1 ||
	    core_restore_identity(t, task, flags, cause) == -1)
		goto out;
	rounds_mm(mm, &kept, 0, &rest);
	rc = mm_restore_map(t, &rest, o, cause);
	rounds_mm_free(&rest);
out:
	runs_free(&kept);
	return rc;
}

/* The protection of every area, those the rounds mapped included. */
int
rounds_prot(struct mig_task *t, const Osm__ImgMm *mm, char **cause)
{
	Osm__ImgMm	all;
	struct runs	kept;
	int		rc;

	runs_init(&kept);
	runs_kept(mm, &kept);
	rounds_mm(mm, &kept, 1, &all);
	rc = mm_restore_prot(t, &all, cause);
	rounds_mm_free(&all);
	runs_free(&kept);
	return rc;
}

/*
 * The pages of an image that is not the last of its chain: those of the
 * areas that go in rounds, as a round's; the others (mapped from files,
 * shared) are the last image's to carry, and are read past.
 */
static int
rounds_pages(struct mig_task *t, const Osm__ImgMm *mm, struct img *img,
    struct mig_stats *st, char **cause)
{
	Osm__ImgRecord	*rec = NULL;
	struct img_pages cur;
	struct iovec	 local[MIG_EXTENTS_MAX], remote[MIG_EXTENTS_MAX];
	uint64_t	*counts, addr, len, off;
	uint8_t		*buf;
	size_t		 i, j, n, v;
	ssize_t		 w;
	int		 rc = -1, more;

	counts = xcalloc(mm->n_vmas + 1, sizeof *counts);
	buf = xmalloc(MIG_PAGES_MAX);
	img_pages_init(&cur, mm);
	while ((more = img_pages_next(img, &cur, counts, buf, &rec,
	    cause)) == 1) {
		for (i = n = 0, off = len = 0, v = 0; i < rec->pages->n_extents;
		    i++, off += len) {
			addr = rec->pages->extents[i]->addr;
			len = rec->pages->extents[i]->npages * MIG_PAGE;
			for (j = v; j < mm->n_vmas && mm->vmas[j]->end <= addr;
			    j++)
				;
			v = j;
			if (j == mm->n_vmas || !runs_live(mm->vmas[j]))
				continue;
			local[n].iov_base = (uint8_t *)img->raw + off;
			local[n].iov_len = len;
			remote[n].iov_base = (void *)addr;
			remote[n++].iov_len = len;
		}
		for (i = 0, len = 0; i < n; i++)
			len += local[i].iov_len;
		if (n > 0 && (w = process_vm_writev(t->pid, local, n, remote,
		    n, 0)) != (ssize_t)len) {
			xasprintf(cause, "write pages into process %d: %s",
			    (int)t->pid, w == -1 ? strerror(errno) :
			    "short write");
			goto out;
		}
		if (st != NULL)
			st->pages += len / MIG_PAGE;
		osm__img_record__free_unpacked(rec, NULL);
		rec = NULL;
	}
	rc = more;
out:
	if (rec != NULL)
		osm__img_record__free_unpacked(rec, NULL);
	free(buf);
	free(counts);
	return rc;
}

/*
 * An image of a chain that is not the last, applied as rounds of the
 * last: its own rounds, then its description's layout as one more round,
 * whose pages are the image's own, up to its final seal.
 */
int
rounds_image(struct rounds *rd, struct img *img, char **cause)
{
	Osm__ImgRound	 round = OSM__IMG_ROUND__INIT;
	struct mig_image mi;
	int		 rc;

	if (img_read_meta(img, &mi, cause) == -1)
		return -1;
	if (rounds_linked(img, cause) == -1) {
		mig_image_free(&mi);
		return -1;
	}
	round.round = img->rounds + 1;
	round.mm = mi.mm;
	rc = rounds_reshape(rd, img, &round, cause);
	if (rc == 0)
		rc = rounds_pages(rd->t, mi.mm, img, rd->st, cause);
	if (rc == 0)
		runs_hold(&img->held, mi.mm);
	mig_image_free(&mi);
	return rc;
}

/* On to the next image of a chain, what the target holds carried over. */
void
rounds_next(struct img *img, int fd)
{
	struct img	next;

	img_init(&next, fd);
	runs_copy(&img->held, &next.held);
	next.round_fn = img->round_fn;
	next.round_arg = img->round_arg;
	next.chained = 1;
	next.prev_crc = img->end_crc;
	next.prev_records = img->end_records;
	img_free(img);
	*img = next;
}

/* The image read names the one before it, as it was. */
int
rounds_linked(struct img *img, char **cause)
{
	if (!img->chained)
		return 0;
	if (img->parent == NULL || img->parent_crc != img->prev_crc ||
	    img->parent_records != img->prev_records) {
		xasprintf(cause, "the chain is broken: an image does not add "
		    "to the one before it");
		return -1;
	}
	return 0;
}
