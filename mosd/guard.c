/*
 * The memory guard's decision, apart from the daemon so that it can be
 * tested with plain inputs (see guard.h; the glue is mosd/guests.c).
 */
#include <math.h>

#include "guard.h"

uint64_t
guard_reserve(uint64_t total)
{
	uint64_t	r = total / 10;

	if (r < GUARD_RESERVE_MIN)
		r = GUARD_RESERVE_MIN;
	if (r > GUARD_RESERVE_MAX)
		r = GUARD_RESERVE_MAX;
	return r;
}

/* The pace free memory falls at, bytes/s, smoothed over GUARD_TAU_MS. */
static void
guard_pace(struct guard *g, uint64_t now, uint64_t free)
{
	double	dt, rate, a;

	if (g->last_ms != 0 && now > g->last_ms) {
		dt = (now - g->last_ms) / 1000.0;
		rate = ((double)g->last_free - (double)free) / dt;
		if (rate < 0)
			rate = 0;
		a = 1 - exp(-(double)(now - g->last_ms) / GUARD_TAU_MS);
		g->falling += a * (rate - g->falling);
	}
	g->last_ms = now;
	g->last_free = free;
}

/* The guest that grew most, or the largest if none grew; -1: none left. */
static ssize_t
guard_pick(const struct guard_guest *guests, size_t n)
{
	const struct guard_guest	*x, *best = NULL;
	size_t				 i;

	for (i = 0; i < n; i++) {
		x = &guests[i];
		if (x->sent || x->rss == 0)
			continue;
		if (best == NULL || x->grown > best->grown ||
		    (x->grown == best->grown && x->rss > best->rss))
			best = x;
	}
	return best == NULL ? -1 : best - guests;
}

ssize_t
guard_sample(struct guard *g, uint64_t now, uint64_t total, uint64_t free,
    const struct guard_guest *guests, size_t n)
{
	uint64_t	reserve;
	double		foreseen;
	ssize_t		k;
	size_t		i;
	int		urgent;

	guard_pace(g, now, free);
	if (total == 0)
		return -1;
	reserve = guard_reserve(total);
	foreseen = (double)free - g->falling * GUARD_HORIZON_MS / 1000.0;
	if (free >= reserve && foreseen >= (double)reserve)
		return -1;
	/*
	 * A guest told is frozen and sent within moments, its memory in use
	 * until it has gone: no other meanwhile unless memory still runs
	 * out, by a quarter of the reserve more; and a moment after, for
	 * its memory to show free.
	 */
	for (i = 0; i < n && !guests[i].sent; i++)
		;
	urgent = free < reserve && free + reserve / 4 < g->sent_free;
	if (!urgent && (i < n || (g->sent_ms != 0 &&
	    now - g->sent_ms < GUARD_SPACING_MS)))
		return -1;
	if ((k = guard_pick(guests, n)) != -1) {
		g->sent_ms = now;
		g->sent_free = free;
	}
	return k;
}
