/*
 * The memory guard (mosd/guard.c): a node that runs short of memory sends
 * its guests away — home, where their state is whole and whence their
 * homes may move them on — before the kernel's out-of-memory killer would
 * pick one. Whether a guest may move for load (mosrun -L) does not matter:
 * this protects the node, as expelling does. Plain data in and out: the
 * glue (mosd/guests.c) samples the node's memory and its guests' every
 * GUARD_INTERVAL_MS and orders the guest this file names.
 *
 * The node acts when its free memory is below its reserve, or would be
 * within GUARD_HORIZON_MS at the pace it has been falling: a guest that
 * grows fast is sent while there is still room for it to be frozen and
 * sent. It sends the guest that grew most since the last sample (the
 * largest if none grew), one at a time: the next once the last has gone,
 * or at once if memory still falls, by a quarter of the reserve, after
 * the last one was told.
 */
#ifndef MOSD_GUARD_H
#define MOSD_GUARD_H

#include <sys/types.h>

#include <stddef.h>
#include <stdint.h>

#define GUARD_INTERVAL_MS	100
#define GUARD_HORIZON_MS	500	/* how far ahead free memory is seen */
#define GUARD_TAU_MS		300	/* smoothing of the pace it falls */
#define GUARD_SPACING_MS	500	/* after one has gone, unless urgent */
#define GUARD_PATIENCE_MS	5000	/* a guest told and still here: again */
#define GUARD_RESERVE_MIN	(32ULL << 20)
#define GUARD_RESERVE_MAX	(512ULL << 20)

struct guard {
	uint64_t	 last_ms;	/* the last sample, 0: none yet */
	uint64_t	 last_free;
	double		 falling;	/* bytes/s, smoothed; 0 if it rises */
	uint64_t	 sent_ms;	/* when a guest was last named */
	uint64_t	 sent_free;	/* and the free memory then */
};

struct guard_guest {
	uint64_t	 rss;		/* bytes, now */
	uint64_t	 grown;		/* bytes more than at the last sample */
	int		 sent;		/* told to leave, GUARD_PATIENCE_MS ago
					   at most */
};

/* What a node of total bytes keeps free: a tenth, within bounds. */
uint64_t guard_reserve(uint64_t total);
/*
 * One sample at now: the node's total and free memory (total 0: no limit
 * known, nothing is done) and its n guests. The guest to send away now,
 * by index, or -1.
 */
ssize_t	 guard_sample(struct guard *g, uint64_t now, uint64_t total,
	    uint64_t free, const struct guard_guest *guests, size_t n);

#endif
