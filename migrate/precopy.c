/*
 * A live dump (pre-copy): the process's private anonymous memory goes in
 * rounds while it runs, each round the pages written during the one
 * before (track.c), until another round would not pay; then the caller
 * freezes it, and the description goes with the last written pages, as
 * mig_dump writes them (docs/IMAGE.md, "Rounds").
 *
 * The address space may change between rounds. Each round reads the
 * layout anew and says which ranges its target keeps (ImgMm.kept): the
 * parts of areas still registered with our userfaultfd that the target
 * already holds. An area the kernel no longer knows as ours (unmapped and
 * mapped again, moved by mremap, or new) is registered and sent whole, as
 * what the target held there is dropped; pages of areas that vanished are
 * never applied. Pages dropped with madvise(MADV_DONTNEED) show as
 * written on this kernel (a zapped page of a registered area loses its
 * protection), and go again, read as zeros; should a kernel not say so,
 * the last round also sends every page the target holds data for that
 * has none here.
 */
#include <sys/mman.h>
#include <sys/uio.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/osm.h"
#include "internal.h"

#define PRECOPY_FREEZE_US	20000	/* what the last pages may take */
#define PRECOPY_SHRINK		0.9	/* a round must leave less than this */
#define PRECOPY_NEAR_LINK	0.8	/* of the rate pages go out at */
#define PRECOPY_TRIES		8	/* to read a layout that holds */

struct precopy {
	struct mig_live	*lv;
	struct mig_track *k;
	struct mig_task	 tk;		/* the running process, for its layout */
	struct runs	 send;		/* this round's pages, all areas */
	struct runs	 kept;
	struct runs	 present;	/* last round: pages with data now */
	struct mm_dump	 last;		/* the last round's layout */
	uint64_t	 rate;		/* bytes per second the rounds went at */
	uint64_t	 rate_bytes;	/* in the largest round, which says */
};

/*
 * What goes of area v: its written pages if we track it, and every page
 * with data of what the target does not hold of it; last, also what the
 * target holds data for that is gone here. Adds to pc->send and pc->kept.
 */
static int
precopy_area(struct precopy *pc, int pagemap, const Osm__ImgVma *v, int last,
    char **cause)
{
	struct mig_track	*k = pc->k;
	struct runs		 area, w, fresh, part, tmp;
	int			 r, rc = -1;

	runs_init(&area);
	runs_init(&w);
	runs_init(&fresh);
	runs_init(&part);
	runs_init(&tmp);
	runs_add(&area, v->start, v->end);
	r = track_scan(pagemap, v->start, v->end, TRACK_WRITTEN |
	    TRACK_PROTECT | TRACK_CHECK, &w, cause);
	if (r == -1)
		goto out;
	if (r == 1) {
		/* Not ours (yet): a new area, whose old copy must go. */
		if (track_register(k, v->start, v->end) == -1) {
			/* Not to be tracked: it goes whole when frozen. */
			if (last && track_scan(pagemap, v->start, v->end,
			    TRACK_PRESENT, &fresh, cause) == -1)
				goto out;
			goto add;
		}
		/*
		 * Protect it, then send what has data: pages mremap moved
		 * here kept their protection from where they were, and
		 * would not show as written.
		 */
		if (track_scan(pagemap, v->start, v->end, TRACK_WRITTEN |
		    TRACK_PROTECT | TRACK_CHECK, &w, cause) != 0)
			goto out;
		w.n = 0;
		if (track_scan(pagemap, v->start, v->end, TRACK_PRESENT, &w,
		    cause) == -1)
			goto out;
		runs_copy(&w, &fresh);
		if (last) {
			runs_or(&pc->present, &w, &tmp);
			runs_copy(&tmp, &pc->present);
		}
	} else {
		runs_and(&area, &k->held, &part);	/* kept */
		runs_or(&pc->kept, &part, &tmp);
		runs_copy(&tmp, &pc->kept);
		runs_minus(&area, &k->held, &tmp);	/* not held there */
		for (size_t i = 0; i < tmp.n; i++) {
			if (track_scan(pagemap, tmp.r[i].start, tmp.r[i].end,
			    TRACK_PRESENT, &fresh, cause) == -1)
				goto out;
		}
		runs_or(&w, &fresh, &tmp);
		runs_copy(&tmp, &fresh);
		if (last) {
			/* held data, gone here: sent, it reads as zeros */
			w.n = 0;
			if (track_scan(pagemap, v->start, v->end,
			    TRACK_PRESENT, &w, cause) == -1)
				goto out;
			runs_or(&pc->present, &w, &tmp);
			runs_copy(&tmp, &pc->present);
			runs_and(&k->sent, &part, &tmp);
			runs_minus(&tmp, &w, &area);
			runs_or(&fresh, &area, &tmp);
			runs_copy(&tmp, &fresh);
		}
	}
add:
	runs_or(&pc->send, &fresh, &tmp);
	runs_copy(&tmp, &pc->send);
	rc = 0;
out:
	runs_free(&area);
	runs_free(&w);
	runs_free(&fresh);
	runs_free(&part);
	runs_free(&tmp);
	return rc;
}

/*
 * Plan what goes of md's areas: for those whose pages go in rounds, what
 * precopy_area says; the others as pages_scan() chose (last) or nothing
 * (a round). md's runs, page counts and kept ranges are set.
 */
static int
precopy_plan(struct precopy *pc, struct mm_dump *md, int last, char **cause)
{
	struct mm_run	*runs = NULL;
	size_t		 n = 0, alloc = 0, i, j, r = 0;
	Osm__ImgVma	*v;
	int		 pagemap, rc = -1;

	pc->send.n = pc->kept.n = pc->present.n = 0;
	if ((pagemap = track_pagemap(pc->k, cause)) == -1)
		return -1;
	for (i = 0; i < md->nvmas; i++) {
		v = md->vmas[i];
		if (runs_live(v) && precopy_area(pc, pagemap, v, last,
		    cause) == -1)
			goto out;
	}
	for (i = 0; i < md->nvmas; i++) {
		v = md->vmas[i];
		if (!runs_live(v)) {
			if (!last)
				v->pages = 0;
			for (; last && r < md->nruns && md->runs[r].vma <= i;
			    r++) {
				if (md->runs[r].vma == i)
					runs_dump_add(&runs, &n, &alloc,
					    md->runs[r].start, md->runs[r].start
					    + md->runs[r].npages * MIG_PAGE, i);
			}
			continue;
		}
		v->pages = 0;
		for (j = 0; j < pc->send.n; j++) {
			uint64_t s = pc->send.r[j].start, e = pc->send.r[j].end;

			if (e <= v->start || s >= v->end)
				continue;
			s = s < v->start ? v->start : s;
			e = e > v->end ? v->end : e;
			runs_dump_add(&runs, &n, &alloc, s, e, i);
			v->pages += (e - s) / MIG_PAGE;
		}
	}
	free(md->runs);
	md->runs = runs;
	md->nruns = n;
	runs = NULL;
	/* Kept ranges, each inside one area (adjacent ones are merged). */
	md->mm.n_kept = 0;
	md->mm.kept = xcalloc(pc->kept.n + md->nvmas + 1,
	    sizeof *md->mm.kept);
	for (i = 0, j = 0; i < md->nvmas; i++) {
		v = md->vmas[i];
		for (; j < pc->kept.n && pc->kept.r[j].end <= v->start; j++)
			;
		for (r = j; runs_live(v) && r < pc->kept.n &&
		    pc->kept.r[r].start < v->end; r++) {
			uint64_t s = pc->kept.r[r].start, e = pc->kept.r[r].end;
			Osm__ImgExtent *k;

			s = s < v->start ? v->start : s;
			e = e > v->end ? v->end : e;
			k = xmalloc(sizeof *k);
			osm__img_extent__init(k);
			k->addr = s;
			k->npages = (e - s) / MIG_PAGE;
			md->mm.kept[md->mm.n_kept++] = k;
		}
	}
	rc = 0;
out:
	free(runs);
	close(pagemap);
	return rc;
}

static void
precopy_plan_free(struct mm_dump *md)
{
	size_t	i;

	for (i = 0; i < md->mm.n_kept; i++)
		free(md->mm.kept[i]);
	free(md->mm.kept);
	md->mm.kept = NULL;
	md->mm.n_kept = 0;
}

/* What the target holds once a round of md is in, and the data it has. */
static void
precopy_sent(struct precopy *pc, const struct mm_dump *md)
{
	struct mig_track	*k = pc->k;
	struct runs		 tmp;

	runs_init(&tmp);
	runs_and(&k->sent, &pc->kept, &tmp);
	runs_or(&tmp, &pc->send, &k->sent);
	runs_hold(&k->held, &md->mm);
	runs_free(&tmp);
}

/* Send a round's pages (md's runs) from the running process. */
static int
precopy_pages(struct precopy *pc, const struct mm_dump *md, struct img *img,
    char **cause)
{
	Osm__ImgExtent	 ext[MIG_EXTENTS_MAX], *extp[MIG_EXTENTS_MAX];
	struct iovec	 iov[MIG_EXTENTS_MAX];
	char		 path[64];
	uint8_t		*buf;
	uint64_t	 addr, left, take;
	size_t		 i, nb = 0, len = 0;
	int		 mem, rc = -1;

	snprintf(path, sizeof path, "/proc/%d/mem", (int)pc->k->pid);
	if ((mem = open(path, O_RDONLY | O_CLOEXEC)) == -1) {
		xasprintf(cause, "%s: %s", path, strerror(errno));
		return -1;
	}
	buf = xmalloc(MIG_BATCH);
	for (i = 0; i < MIG_EXTENTS_MAX; i++) {
		osm__img_extent__init(&ext[i]);
		extp[i] = &ext[i];
	}
	for (i = 0; i <= md->nruns; i++) {
		addr = i < md->nruns ? md->runs[i].start : 0;
		left = i < md->nruns ? md->runs[i].npages * MIG_PAGE : 0;
		do {
			if (nb > 0 && (nb == MIG_EXTENTS_MAX ||
			    len == MIG_BATCH || i == md->nruns)) {
				postcopy_read(pc->k->pid, mem, pc->tk.hidden,
				    iov, nb, buf, len);
				if (img_write_pages(img, extp, nb, buf, len,
				    cause) == -1)
					goto out;
				nb = len = 0;
			}
			if (left == 0)
				break;
			take = MIG_BATCH - len < left ? MIG_BATCH - len : left;
			ext[nb].addr = addr;
			ext[nb].npages = take / MIG_PAGE;
			iov[nb].iov_base = (void *)addr;
			iov[nb].iov_len = take;
			nb++;
			len += take;
			addr += take;
			left -= take;
		} while (left > 0 || (nb > 0 && i == md->nruns));
	}
	rc = 0;
out:
	free(buf);
	close(mem);
	return rc;
}

/* One round while the process runs: its layout, what goes, the pages. */
static int
precopy_round(struct precopy *pc, struct img *img, int flags, uint32_t n,
    uint64_t *pages, char **cause)
{
	Osm__ImgRecord	 rec = OSM__IMG_RECORD__INIT;
	Osm__ImgRound	 round = OSM__IMG_ROUND__INIT;
	struct mm_dump	 md;
	char		*why = NULL;
	int		 rc = -1, tries = 0;

	/*
	 * Read while the process maps and unmaps, the layout may be torn
	 * (two areas overlapping): read it again.
	 */
	for (;;) {
		if (mm_dump_layout(&pc->tk, &md, flags, cause) == -1)
			return -1;
		if (mm_check(&md.mm, &why) == 0)
			break;
		mm_dump_free(&md);
		if (++tries == PRECOPY_TRIES) {
			*cause = why;
			return -1;
		}
		free(why);
		why = NULL;
	}
	if (precopy_plan(pc, &md, 0, cause) == -1)
		goto out;
	round.round = n;
	round.mm = &md.mm;
	rec.body_case = OSM__IMG_RECORD__BODY_ROUND;
	rec.round = &round;
	if (img_write(img, &rec, cause) == -1 ||
	    precopy_pages(pc, &md, img, cause) == -1)
		goto out;
	img->end_seal = OSM__IMG_SEAL_KIND__SEAL_ROUND;
	if (img_write_seal(img, 0, cause) == -1)
		goto out;
	precopy_sent(pc, &md);
	*pages = runs_bytes(&pc->send) / MIG_PAGE;
	rc = 0;
out:
	img->end_seal = 0;
	precopy_plan_free(&md);
	/* Kept for the freeze, which reuses it if the areas are the same. */
	free(md.runs);
	md.runs = NULL;
	md.nruns = 0;
	mm_dump_free(&pc->last);
	if (rc == 0)
		pc->last = md;
	else
		mm_dump_free(&md);
	return rc;
}

/* Bytes written since the last round, in areas we track. */
static int
precopy_dirty(struct precopy *pc, uint64_t *bytes, char **cause)
{
	struct runs	w;
	size_t		i;
	int		pagemap, rc = 0;

	if ((pagemap = track_pagemap(pc->k, cause)) == -1)
		return -1;
	runs_init(&w);
	for (i = 0; i < pc->k->held.n && rc != -1; i++)
		rc = track_scan(pagemap, pc->k->held.r[i].start,
		    pc->k->held.r[i].end, TRACK_WRITTEN, &w, cause);
	*bytes = runs_bytes(&w);
	runs_free(&w);
	close(pagemap);
	return rc == -1 ? -1 : 0;
}

/* The last pages, once frozen: dump_image's runs. */
static int
precopy_final(void *arg, struct mig_task *t, struct mm_dump *md,
    char **cause)
{
	struct precopy	*pc = arg;

	if (precopy_plan(pc, md, 1, cause) == -1)
		return -1;
	pc->lv->final_pages = runs_bytes(&pc->send) / MIG_PAGE;
	/*
	 * For an image that adds to this one: a chain's restore takes this
	 * one's pages as a round, and holds what a round would; the data it
	 * holds is what has data here now.
	 */
	runs_hold(&pc->k->held, &md->mm);
	runs_and(&pc->present, &pc->k->held, &pc->k->sent);
	return 0;
}

/* Whether to go on with another round, and if not why. */
static const char *
precopy_enough(struct precopy *pc, uint32_t n, uint64_t sent, uint64_t us,
    uint64_t dirty, uint64_t last_dirty)
{
	struct mig_live	*lv = pc->lv;
	uint64_t	 rate, budget, max;

	/* Small rounds go out at buffer speed: trust the largest. */
	rate = us > 0 ? sent * 1000000 / us : 0;
	if (rate > 0 && sent >= pc->rate_bytes) {
		pc->rate = rate;
		pc->rate_bytes = sent;
	}
	budget = lv->freeze_bytes != 0 ? lv->freeze_bytes :
	    pc->rate / 1000 * PRECOPY_FREEZE_US / 1000;
	max = lv->rounds_max > 0 && lv->rounds_max < MIG_ROUNDS_MAX ?
	    lv->rounds_max : MIG_ROUNDS_MAX;
	if (n >= max)
		return "the last round allowed";
	if (n < (uint32_t)lv->rounds_min)
		return NULL;
	if (dirty <= budget)
		return "the rest fits in the freeze";
	if (n > 1 && dirty >= last_dirty * PRECOPY_SHRINK)
		return "a round no longer shrinks what is written";
	if (us > 0 && pc->rate > 0 &&
	    dirty * 1000000 / us >= pc->rate * PRECOPY_NEAR_LINK)
		return "it writes nearly as fast as the link carries";
	return NULL;
}

/* No tracker: lv->t, held, stops for the whole copy, as mig_dump. */
static int
precopy_stop(struct mig_live *lv, int fd, int flags, struct mig_stats *st,
    char **cause)
{
	struct img	img;
	uint64_t	t0 = now_us();
	int		rc;

	lv->rounds = 0;
	lv->stop_why = "stopped for the copy";
	img_init(&img, fd);
	img.io = lv->io;
	if (lv->post != NULL)
		lv->stop_why = "post-copy";
	rc = img_write_preamble(&img, cause) == -1 ? -1 : lv->post != NULL ?
	    postcopy_dump(lv, &img, flags, st, cause) :
	    dump_image(lv->t, &img, flags, st, NULL, NULL, NULL, cause);
	lv->freeze_us = lv->total_us = now_us() - t0;
	lv->bytes = img.bytes;
	lv->end_crc = img.end_crc;
	lv->end_records = img.end_records;
	img_free(&img);
	return rc;
}

static int
precopy_parent(struct mig_live *lv, struct img *img, char **cause)
{
	Osm__ImgRecord	 rec = OSM__IMG_RECORD__INIT;
	Osm__ImgParent	 parent = OSM__IMG_PARENT__INIT;

	parent.name = (char *)lv->parent;
	parent.crc = lv->parent_crc;
	parent.records = lv->parent_records;
	rec.body_case = OSM__IMG_RECORD__BODY_PARENT;
	rec.parent = &parent;
	return img_write(img, &rec, cause);
}

int
mig_dump_live(struct mig_live *lv, int fd, int flags, struct mig_stats *st,
    char **cause)
{
	struct precopy	 pc;
	struct img	 img;
	uint64_t	 t0 = now_us(), r0, dirty = 0, last = 0, pages, b0;
	uint32_t	 n = 0;
	int		 rc = -1;

	memset(&pc, 0, sizeof pc);
	if (st != NULL)
		memset(st, 0, sizeof *st);
	if (lv->track == NULL)
		return precopy_stop(lv, fd, flags, st, cause);
	pc.lv = lv;
	pc.k = lv->track;
	pc.tk.pid = pc.k->pid;
	pc.tk.stand_ins = lv->stand_ins;
	pc.tk.nstand_ins = lv->nstand_ins;
	pc.tk.hidden = lv->hidden;
	runs_init(&pc.send);
	runs_init(&pc.kept);
	runs_init(&pc.present);
	if (lv->parent == NULL)
		track_reset(pc.k);
	lv->t = NULL;
	lv->rounds = 0;
	lv->stop_why = NULL;
	img_init(&img, fd);
	img.io = lv->io;
	if (img_write_preamble(&img, cause) == -1 ||
	    (lv->parent != NULL && precopy_parent(lv, &img, cause) == -1))
		goto out;
	while (lv->stop_why == NULL) {
		r0 = now_us();
		b0 = img.bytes;
		if (precopy_round(&pc, &img, flags, ++n, &pages, cause) == -1)
			goto out;
		lv->round_pages[n - 1] = pages;
		lv->round_us[n - 1] = now_us() - r0;
		lv->rounds = n;
		last = n > 1 ? dirty : UINT64_MAX;
		if (precopy_dirty(&pc, &dirty, cause) == -1)
			goto out;
		lv->stop_why = precopy_enough(&pc, n, img.bytes - b0,
		    now_us() - r0, dirty, last);
	}
	r0 = now_us();
	if ((lv->t = lv->freeze(lv->arg, cause)) == NULL)
		goto out;
	if (dump_image(lv->t, &img, flags, st, &pc.last, precopy_final, &pc,
	    cause) == -1)
		goto out;
	lv->freeze_us = now_us() - r0;
	lv->total_us = now_us() - t0;
	lv->bytes = img.bytes;
	lv->end_crc = img.end_crc;
	lv->end_records = img.end_records;
	rc = 0;
out:
	runs_free(&pc.send);
	runs_free(&pc.kept);
	runs_free(&pc.present);
	mm_dump_free(&pc.last);
	img_free(&img);
	return rc;
}
