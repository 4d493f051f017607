/*
 * Load gossip, the algorithm alone (mosd/gossip.c): the view of every node,
 * merging what others say, choosing whom to tell and what, building and
 * checking the messages. No sockets, no clocks, no event loop: mosd's
 * net.c is the glue, and mosgossip-sim and the fuzz target drive this
 * same code with nothing else.
 */
#ifndef MOSD_GOSSIP_H
#define MOSD_GOSSIP_H

#include <sys/types.h>

#include <stddef.h>
#include <stdint.h>

#define GOSSIP_MSG_MAX		1400	/* bytes of a whole datagram */
#define GOSSIP_MAX_AGE_MS	(7U * 24 * 3600 * 1000)
#define GOSSIP_AGE_UNIT_MS	10	/* ages travel in 10 ms units */

struct gossip_info {
	uint32_t	load;		/* x 100 */
	uint32_t	cpus;		/* x 100 */
	uint32_t	speed;
	uint32_t	mem_total;	/* MiB */
	uint32_t	mem_free;	/* MiB */
	uint32_t	guests;
	uint32_t	flags;		/* NodeFlag */
	uint32_t	swap_total;	/* MiB; 0 from a sender without swap */
	uint32_t	swap_free;	/* MiB */
};

struct gossip_entry {
	uint64_t		stamp;	/* local ms the info was fresh; 0: none */
	struct gossip_info	info;
};

/* Per sender: the newest message seen, to refuse replays. */
struct gossip_sender {
	uint64_t	incarnation;
	uint64_t	seq;
	uint64_t	heard;		/* local ms of its last message */
};

struct gossip_recent {
	uint32_t	idx;
	uint64_t	stamp;
};

enum gossip_result {
	GOSSIP_OK = 0,
	GOSSIP_MALFORMED,	/* not a Gossip message */
	GOSSIP_BAD_FIELD,	/* a value out of range, a duplicate entry */
	GOSSIP_UNKNOWN_NODE,	/* sender or entry not in the map */
	GOSSIP_FROM_SELF,
	GOSSIP_REPLAY,		/* not newer than the last from that sender */
	GOSSIP_WRONG_SOURCE,	/* sender is not the node at that address */
	GOSSIP_NRESULTS
};

struct gossip {
	uint32_t		 self;
	size_t			 self_idx;
	size_t			 n;
	uint32_t		*ids;		/* sorted */
	struct gossip_entry	*view;		/* parallel to ids */
	struct gossip_sender	*senders;	/* parallel to ids */
	uint32_t		 window;
	size_t			 max_body;
	uint64_t		 incarnation;
	uint64_t		 seq;
	uint64_t		 timeout_ms;
	size_t			 last_entries;	/* in the last message built */

	uint32_t		*order;		/* a shuffled cycle of targets */
	size_t			 order_next;
	struct gossip_recent	*recent;	/* ring of fresh updates */
	size_t			 nrecent;
	size_t			 recent_head;

	/* scratch, sized once */
	struct gossip_recent	*cand;		/* nrecent */
	uint8_t			*picked;	/* n */
	uint32_t		*pick;		/* n, by priority */
	uint32_t		*sorted;	/* n, by node id */
	uint32_t		*rx_idx;	/* n */
	struct gossip_info	*rx_info;	/* n */
	uint64_t		 rng;		/* lib/rand.c */
};

struct gossip *gossip_new(uint32_t self, const uint32_t *ids, size_t n,
	    uint32_t window, uint64_t incarnation, uint64_t seed);
void	 gossip_free(struct gossip *g);
ssize_t	 gossip_index(const struct gossip *g, uint32_t id);
void	 gossip_set_self(struct gossip *g, const struct gossip_info *info,
	    uint64_t now);
uint32_t gossip_next_target(struct gossip *g);
size_t	 gossip_build(struct gossip *g, uint32_t target, uint64_t now,
	    uint8_t *buf, size_t size);
enum gossip_result gossip_receive(struct gossip *g, uint64_t now,
	    const uint8_t *body, size_t len, uint32_t from, uint32_t *sender);
uint64_t gossip_timeout(size_t n, uint64_t interval_ms, uint64_t floor_ms);
int	 gossip_merge(struct gossip *g, size_t idx, uint64_t stamp,
	    const struct gossip_info *info);
int	 gossip_up(const struct gossip *g, size_t idx, uint64_t now);
const char *gossip_strerror(enum gossip_result r);

#endif
