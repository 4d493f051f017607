/*
 * What R wrote of its regular files, held where it runs (docs/REMOTE.md,
 * "Regular files"): sqlite reads back pages it wrote a moment before, and
 * each such pread64 was a round trip waiting for the writes behind it.
 * fileio.c keeps here the bytes of every write it gathers, by descriptor
 * and page, and serves a read of a range held whole from them; it drops a
 * descriptor's pages whenever the file may have changed otherwise.
 *
 * Pages are kept sorted by (descriptor, page number) for a binary search;
 * each holds one run of bytes [lo, hi) and when it was written. At most
 * HELD_PAGES pages (16 MiB) are held: when full, the pages older than
 * fileio's freshness go, and if none is, all of them.
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define HELD_PAGE	4096U
#define HELD_PAGES	4096U

/* The index of (fd, pg), or where it would go (*found 0). */
static size_t
held_find(const struct held *h, int fd, uint64_t pg, int *found)
{
	size_t	lo = 0, hi = h->n, mid;

	while (lo < hi) {
		mid = (lo + hi) / 2;
		if (h->pages[mid].fd < fd || (h->pages[mid].fd == fd &&
		    h->pages[mid].pg < pg))
			lo = mid + 1;
		else
			hi = mid;
	}
	*found = lo < h->n && h->pages[lo].fd == fd && h->pages[lo].pg == pg;
	return lo;
}

static void
held_remove(struct held *h, size_t i)
{
	free(h->pages[i].data);
	memmove(&h->pages[i], &h->pages[i + 1],
	    (h->n - i - 1) * sizeof *h->pages);
	h->n--;
}

/* Room for one more page: the stale go first, then all. */
static void
held_room(struct held *h, uint64_t now, uint64_t fresh_ns)
{
	size_t	i;

	if (h->n < HELD_PAGES)
		return;
	for (i = 0; i < h->n; ) {
		if (now - h->pages[i].at > fresh_ns)
			held_remove(h, i);
		else
			i++;
	}
	if (h->n >= HELD_PAGES)
		held_drop(h, -1);
}

/*
 * R wrote len bytes of buf at off of fd, at now: held. A page's older
 * bytes stay with it only while fresh (fresh_ns) and next to the new
 * ones, and keep their time: no byte is served later than fresh_ns after
 * it was written.
 */
void
held_put(struct held *h, int fd, uint64_t off, const uint8_t *buf,
    size_t len, uint64_t now, uint64_t fresh_ns)
{
	struct held_page	*p;
	uint64_t		 pg;
	uint32_t		 a, b;
	size_t			 i, n;
	int			 found;

	while (len > 0) {
		pg = off / HELD_PAGE;
		a = off % HELD_PAGE;
		n = HELD_PAGE - a < len ? HELD_PAGE - a : len;
		b = a + n;
		i = held_find(h, fd, pg, &found);
		if (!found) {
			held_room(h, now, fresh_ns);
			i = held_find(h, fd, pg, &found);
			h->pages = xreallocarray(h->pages, h->n + 1,
			    sizeof *h->pages);
			memmove(&h->pages[i + 1], &h->pages[i],
			    (h->n - i) * sizeof *h->pages);
			h->n++;
			p = &h->pages[i];
			p->fd = fd;
			p->pg = pg;
			p->data = xmalloc(HELD_PAGE);
			p->lo = p->hi = 0;
		}
		p = &h->pages[i];
		if (p->hi > p->lo && (a > p->lo || b < p->hi) &&
		    now - p->at <= fresh_ns && a <= p->hi && b >= p->lo) {
			/* next to fresh bytes: one run, as old as they are */
			p->lo = a < p->lo ? a : p->lo;
			p->hi = b > p->hi ? b : p->hi;
		} else {
			p->lo = a;
			p->hi = b;
			p->at = now;
		}
		memcpy(p->data + a, buf, n);
		buf += n;
		off += n;
		len -= n;
	}
}

/*
 * Are the len bytes at off of fd all held, written at most fresh_ns
 * before now? 1 with them in iov (at most maxiov pieces, *niov of them),
 * pointing into the pages; 0 if not.
 */
int
held_get(const struct held *h, int fd, uint64_t off, size_t len,
    uint64_t now, uint64_t fresh_ns, struct iovec *iov, size_t maxiov,
    size_t *niov)
{
	const struct held_page	*p;
	uint64_t		 pg;
	uint32_t		 a;
	size_t			 i, n;
	int			 found;

	*niov = 0;
	if (len == 0 || h->n == 0)
		return 0;
	i = held_find(h, fd, off / HELD_PAGE, &found);
	while (len > 0) {
		pg = off / HELD_PAGE;
		a = off % HELD_PAGE;
		n = HELD_PAGE - a < len ? HELD_PAGE - a : len;
		if (i >= h->n || *niov == maxiov)
			return 0;
		p = &h->pages[i];
		if (p->fd != fd || p->pg != pg || a < p->lo || a + n > p->hi ||
		    now - p->at > fresh_ns)
			return 0;
		iov[*niov].iov_base = p->data + a;
		iov[*niov].iov_len = n;
		(*niov)++;
		off += n;
		len -= n;
		i++;
	}
	return 1;
}

/* Forget what fd wrote (-1: every descriptor). */
void
held_drop(struct held *h, int fd)
{
	size_t	i, j;

	for (i = j = 0; i < h->n; i++) {
		if (fd == -1 || h->pages[i].fd == fd)
			free(h->pages[i].data);
		else
			h->pages[j++] = h->pages[i];
	}
	h->n = j;
	if (h->n == 0) {
		free(h->pages);
		h->pages = NULL;
	}
}

/* Bytes held, for the tests. */
size_t
held_bytes(const struct held *h)
{
	size_t	i, n = 0;

	for (i = 0; i < h->n; i++)
		n += h->pages[i].hi - h->pages[i].lo;
	return n;
}
