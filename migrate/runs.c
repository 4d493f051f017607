/*
 * Sets of address ranges, sorted and disjoint: what a live dump's target
 * holds from the rounds before (both ends keep the same set by the same
 * rule, runs_hold), the pages a round sent, the ranges written since.
 * Pure code, shared by the dump (precopy.c), the reader (image.c) and the
 * restore (rounds.c).
 */
#include <sys/mman.h>

#include <stdlib.h>
#include <string.h>

#include "lib/osm.h"
#include "internal.h"

void
runs_init(struct runs *s)
{
	memset(s, 0, sizeof *s);
}

void
runs_free(struct runs *s)
{
	free(s->r);
	runs_init(s);
}

/*
 * Append [start, end), merged with the last run if it touches it. One that
 * begins before the last is appended as it is: runs_sort puts it right.
 */
void
runs_add(struct runs *s, uint64_t start, uint64_t end)
{
	struct run	*last;

	if (start >= end)
		return;
	last = s->n > 0 ? &s->r[s->n - 1] : NULL;
	if (last != NULL && start >= last->start && start <= last->end) {
		if (end > last->end)
			last->end = end;
		return;
	}
	if (s->n == s->alloc) {
		s->alloc = s->alloc == 0 ? 16 : s->alloc * 2;
		s->r = xreallocarray(s->r, s->alloc, sizeof *s->r);
	}
	s->r[s->n].start = start;
	s->r[s->n].end = end;
	s->n++;
}

static int
runs_cmp(const void *a, const void *b)
{
	const struct run	*x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

/* Put runs added in any order back in order, merged. */
void
runs_sort(struct runs *s)
{
	size_t	i, n = s->n;

	qsort(s->r, n, sizeof *s->r, runs_cmp);
	s->n = 0;
	for (i = 0; i < n; i++)
		runs_add(s, s->r[i].start, s->r[i].end);
}

/* out = a and b (out is neither). */
void
runs_and(const struct runs *a, const struct runs *b, struct runs *out)
{
	size_t		i = 0, j = 0;
	uint64_t	s, e;

	out->n = 0;
	while (i < a->n && j < b->n) {
		s = a->r[i].start > b->r[j].start ? a->r[i].start :
		    b->r[j].start;
		e = a->r[i].end < b->r[j].end ? a->r[i].end : b->r[j].end;
		runs_add(out, s, e);
		if (a->r[i].end < b->r[j].end)
			i++;
		else
			j++;
	}
}

/* out = a without b (out is neither). */
void
runs_minus(const struct runs *a, const struct runs *b, struct runs *out)
{
	size_t		i, j = 0;
	uint64_t	s;

	out->n = 0;
	for (i = 0; i < a->n; i++) {
		s = a->r[i].start;
		while (j < b->n && b->r[j].end <= s)
			j++;
		while (j < b->n && b->r[j].start < a->r[i].end) {
			runs_add(out, s, b->r[j].start);
			if (b->r[j].end >= a->r[i].end) {
				s = a->r[i].end;
				break;
			}
			s = b->r[j].end;
			j++;
		}
		runs_add(out, s, a->r[i].end);
	}
}

/* out = a or b (out is neither). */
void
runs_or(const struct runs *a, const struct runs *b, struct runs *out)
{
	size_t	i = 0, j = 0;

	out->n = 0;
	while (i < a->n || j < b->n) {
		if (j == b->n || (i < a->n && a->r[i].start < b->r[j].start)) {
			runs_add(out, a->r[i].start, a->r[i].end);
			i++;
		} else {
			runs_add(out, b->r[j].start, b->r[j].end);
			j++;
		}
	}
}

void
runs_copy(const struct runs *a, struct runs *out)
{
	size_t	i;

	out->n = 0;
	for (i = 0; i < a->n; i++)
		runs_add(out, a->r[i].start, a->r[i].end);
}

uint64_t
runs_bytes(const struct runs *s)
{
	uint64_t	n = 0;
	size_t		i;

	for (i = 0; i < s->n; i++)
		n += s->r[i].end - s->r[i].start;
	return n;
}

/*
 * The areas whose pages go in rounds: private anonymous memory, the bulk
 * of a process (heap, stacks, anonymous mappings). The others are few
 * pages, or mapped from a file, and go with the description.
 */
int
runs_live(const Osm__ImgVma *v)
{
	return v->kind == OSM__IMG_VMA_KIND__VMA_ANON &&
	    !(v->flags & MAP_SHARED) &&
	    (v->label == NULL || v->label[0] != '/');
}

/* The kept ranges of mm, as runs. */
void
runs_kept(const Osm__ImgMm *mm, struct runs *out)
{
	size_t	i;

	out->n = 0;
	for (i = 0; i < mm->n_kept; i++)
		runs_add(out, mm->kept[i]->addr,
		    mm->kept[i]->addr + mm->kept[i]->npages * MIG_PAGE);
}

/*
 * Check the ranges mm keeps against what the target holds: in order,
 * page aligned, each inside what it holds and inside one area of mm whose
 * pages go in rounds.
 */
int
runs_check_kept(const struct runs *held, const Osm__ImgMm *mm, char **cause)
{
	const Osm__ImgExtent	*k;
	const Osm__ImgVma	*v;
	struct runs		 one, in;
	uint64_t		 end, last = 0;
	size_t			 i, j = 0;
	int			 ok;

	for (i = 0; i < mm->n_kept; i++) {
		k = mm->kept[i];
		end = k->addr + k->npages * MIG_PAGE;
		if (k->addr % MIG_PAGE != 0 || k->npages == 0 ||
		    k->npages > MIG_TASK_SIZE / MIG_PAGE || end <= k->addr ||
		    k->addr < last)
			goto bad;
		last = end;
		while (j < mm->n_vmas && mm->vmas[j]->end <= k->addr)
			j++;
		if (j == mm->n_vmas)
			goto bad;
		v = mm->vmas[j];
		if (!runs_live(v) || k->addr < v->start || end > v->end)
			goto bad;
		runs_init(&one);
		runs_init(&in);
		runs_add(&one, k->addr, end);
		runs_and(&one, held, &in);
		ok = in.n == 1 && in.r[0].start == k->addr &&
		    in.r[0].end == end;
		runs_free(&one);
		runs_free(&in);
		if (!ok)
			goto bad;
	}
	return 0;
bad:
	xasprintf(cause, "image corrupted: kept range %zu is not memory the "
	    "rounds before sent", i);
	return -1;
}

/*
 * What the target holds after a round of mm: what it kept, and the
 * areas of the round that carried pages, whole (the rest of such an area
 * is zero there, as it was here when the area was first sent).
 */
void
runs_hold(struct runs *held, const Osm__ImgMm *mm)
{
	struct runs	kept, area;
	size_t		i;

	runs_init(&kept);
	runs_init(&area);
	runs_kept(mm, &kept);
	for (i = 0; i < mm->n_vmas; i++) {
		if (runs_live(mm->vmas[i]) && mm->vmas[i]->pages > 0)
			runs_add(&area, mm->vmas[i]->start, mm->vmas[i]->end);
	}
	runs_or(&kept, &area, held);
	runs_free(&kept);
	runs_free(&area);
}

/* Add run [start, end) of area vma to *runs, as mm_dump's runs are. */
void
runs_dump_add(struct mm_run **runs, size_t *n, size_t *alloc, uint64_t start,
    uint64_t end, size_t vma)
{
	if (start >= end)
		return;
	if (*n == *alloc) {
		*alloc = *alloc == 0 ? 256 : *alloc * 2;
		*runs = xreallocarray(*runs, *alloc, sizeof **runs);
	}
	(*runs)[*n].start = start;
	(*runs)[*n].npages = (end - start) / MIG_PAGE;
	(*runs)[*n].vma = vma;
	(*n)++;
}
