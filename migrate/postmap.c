/*
 * Where the source's pages go in a post-copy target whose process drops
 * and moves its memory while they come (postcopy.c): the userfaultfd
 * tells us each madvise(MADV_DONTNEED), munmap and mremap of a registered
 * area, in order, in the target's addresses of the time. The map holds,
 * for each range of source addresses an event touched, where its pages
 * are now or that they are gone; a source address no event touched is at
 * the same address in the target.
 *
 * Kept in event order: an address a range was dropped from may be where
 * a later mremap puts another area (the kernel reuses the hole), and the
 * pages moved there are that area's, not gone; a range moved away leaves
 * an address at which the source's pages are no longer. A set of dropped
 * addresses and a list of moves, looked up apart, got both wrong.
 */
#include <stdlib.h>
#include <string.h>

#include "lib/osm.h"
#include "internal.h"

void
postmap_init(struct postmap *m)
{
	memset(m, 0, sizeof *m);
}

void
postmap_free(struct postmap *m)
{
	free(m->s);
	postmap_init(m);
}

size_t
postmap_size(const struct postmap *m)
{
	return m->n;
}

/*
 * Source addresses [start, end) are now at start + delta, or gone: one
 * segment, replacing what the map said of them.
 */
static void
postmap_set(struct postmap *m, uint64_t start, uint64_t end, int64_t delta,
    int gone)
{
	struct post_seg	*out, *k;
	size_t		 n = 0, i, cap;

	if (start >= end)
		return;
	cap = m->n + 2;
	out = xreallocarray(NULL, cap, sizeof *out);
	for (i = 0; i < m->n; i++) {
		k = &m->s[i];
		if (k->end <= start || k->start >= end) {
			out[n++] = *k;
			continue;
		}
		/* what of k lies outside [start, end) stays as it was */
		if (k->start < start) {
			out[n] = *k;
			out[n++].end = start;
		}
		if (k->end > end) {
			if (n == cap) {
				cap *= 2;
				out = xreallocarray(out, cap, sizeof *out);
			}
			out[n] = *k;
			out[n++].start = end;
		}
	}
	if (n == cap)
		out = xreallocarray(out, ++cap, sizeof *out);
	/* in order of start: after the last that begins before it */
	for (i = n; i > 0 && out[i - 1].start > start; i--)
		out[i] = out[i - 1];
	out[i].start = start;
	out[i].end = end;
	out[i].delta = delta;
	out[i].gone = gone;
	n++;
	free(m->s);
	m->s = out;
	m->n = n;
}

/*
 * The pieces of source addresses whose pages are now in target
 * [start, end), each with where it is (delta): those of segments moved
 * there, and the untouched source addresses of [start, end) itself.
 */
static size_t
postmap_in(const struct postmap *m, uint64_t start, uint64_t end,
    struct post_seg **out)
{
	struct post_seg	*p;
	const struct post_seg *k;
	uint64_t	 s, e, pos;
	size_t		 n = 0, i;

	p = xreallocarray(NULL, 2 * m->n + 1, sizeof *p);
	for (i = 0; i < m->n; i++) {
		k = &m->s[i];
		if (k->gone)
			continue;
		s = k->start + k->delta;
		e = k->end + k->delta;
		if (e <= start || s >= end)
			continue;
		p[n].start = (s > start ? s : start) - k->delta;
		p[n].end = (e < end ? e : end) - k->delta;
		p[n].delta = k->delta;
		p[n++].gone = 0;
	}
	/* the untouched: [start, end) less every segment's own range */
	pos = start;
	for (i = 0; i < m->n && pos < end; i++) {
		k = &m->s[i];
		if (k->end <= pos)
			continue;
		if (k->start >= end)
			break;
		if (k->start > pos) {
			p[n].start = pos;
			p[n].end = k->start;
			p[n].delta = 0;
			p[n++].gone = 0;
		}
		pos = k->end;
	}
	if (pos < end) {
		p[n].start = pos;
		p[n].end = end;
		p[n].delta = 0;
		p[n++].gone = 0;
	}
	*out = p;
	return n;
}

/* Target [start, end) dropped or unmapped: the pages there are gone. */
void
postmap_drop(struct postmap *m, uint64_t start, uint64_t end)
{
	struct post_seg	*p;
	size_t		 n, i;

	n = postmap_in(m, start, end, &p);
	for (i = 0; i < n; i++)
		postmap_set(m, p[i].start, p[i].end, 0, 1);
	free(p);
}

/*
 * Target [from, from + len) moved to to: what was at to is gone (the
 * kernel unmaps it first), what was at from is at to.
 */
void
postmap_move(struct postmap *m, uint64_t from, uint64_t to, uint64_t len)
{
	struct post_seg	*p;
	size_t		 n, i;

	postmap_drop(m, to, to + len);
	n = postmap_in(m, from, from + len, &p);
	for (i = 0; i < n; i++)
		postmap_set(m, p[i].start, p[i].end,
		    p[i].delta + (int64_t)(to - from), 0);
	free(p);
}

/* The source's page at src: 1 and where it is now (*dst), or 0: gone. */
int
postmap_here(const struct postmap *m, uint64_t src, uint64_t *dst)
{
	size_t	i;

	for (i = 0; i < m->n; i++) {
		if (src < m->s[i].start || src >= m->s[i].end)
			continue;
		if (m->s[i].gone)
			return 0;
		*dst = src + m->s[i].delta;
		return 1;
	}
	*dst = src;
	return 1;
}

/*
 * The source address of the page at target dst: 1 and *src, or 0 if no
 * page of the source's is to be had there (it was dropped, or the
 * address is a new area's).
 */
int
postmap_there(const struct postmap *m, uint64_t dst, uint64_t *src)
{
	size_t	i;

	for (i = 0; i < m->n; i++) {
		if (m->s[i].gone || dst - m->s[i].delta < m->s[i].start ||
		    dst - m->s[i].delta >= m->s[i].end)
			continue;
		*src = dst - m->s[i].delta;
		return 1;
	}
	/* untouched: at its own address, if no event touched that */
	for (i = 0; i < m->n; i++)
		if (dst >= m->s[i].start && dst < m->s[i].end)
			return 0;
	*src = dst;
	return 1;
}
