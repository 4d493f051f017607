/*
 * mosd/gossip.c: gossip_receive on any message body (what is left of a
 * datagram once lib/frame.c has checked it), as mosd's gossip socket
 * hands them on, against a node's view of a small cluster.
 *
 * Input: records, each one datagram's body. The op byte says which node's
 * address it came from (bits 0-2) and how long after the one before
 * (bits 3-4). After each, the node builds its own message to the next
 * target from what it has merged: that must still decode and carry only
 * valid entries, whatever it was told.
 */
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "mosd/gossip.h"
#include "proto/gossip.pb-c.h"

#define SELF	1

static const uint32_t	ids[] = { 1, 2, 3, 7, 100, 4096, 65535 };
static const uint64_t	steps[] = { 0, 10, 1500, 10000000 };

void
fuzz_init(void)
{
}

static struct gossip *
node_new(uint32_t self, uint64_t incarnation)
{
	struct gossip		*g;
	struct gossip_info	 info = { .load = 150, .cpus = 200,
				    .speed = 1000, .mem_total = 4096,
				    .mem_free = 1024 };

	g = gossip_new(self, ids, nitems(ids), 4, incarnation, self);
	g->timeout_ms = 6000;
	gossip_set_self(g, &info, 1000000);
	return g;
}

/* What the node sends next must be a valid message of its own. */
static void
check_build(struct gossip *g, uint64_t now)
{
	uint8_t		 buf[GOSSIP_MSG_MAX];
	Osm__Gossip	*m;
	uint32_t	 target, id = 0;
	size_t		 len, i;

	target = gossip_next_target(g);
	len = gossip_build(g, target, now, buf, sizeof buf - FRAME_OVERHEAD);
	fuzz_assert(len > 0 && len <= sizeof buf - FRAME_OVERHEAD);
	m = osm__gossip__unpack(NULL, len, buf);
	fuzz_assert(m != NULL);
	fuzz_assert(m->sender == SELF && m->n_node >= 1);
	fuzz_assert(m->n_node <= g->window + 1);
	for (i = 0; i < m->n_node; i++) {
		fuzz_assert(i == 0 || m->node[i] > 0);
		id += m->node[i];
		fuzz_assert(gossip_index(g, id) != -1 && id != target);
		fuzz_assert(m->cpus[i] > 0 && m->mem_free[i] <=
		    m->mem_total[i]);
	}
	osm__gossip__free_unpacked(m, NULL);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_in		 in = { data, size };
	struct gossip		*g = node_new(SELF, 1000);
	enum gossip_result	 rc;
	const uint8_t		*body;
	uint64_t		 now = 1000000;
	uint32_t		 from, sender;
	size_t			 len, i;
	uint8_t			 op;

	while (fuzz_record(&in, &op, &body, &len)) {
		from = ids[(op & 7) % nitems(ids)];
		now += steps[(op >> 3) & 3];
		rc = gossip_receive(g, now, body, len, from, &sender);
		fuzz_assert(rc >= GOSSIP_OK && rc < GOSSIP_NRESULTS);
		log_debug("from %u: %s", from, gossip_strerror(rc));
		if (rc == GOSSIP_OK)
			fuzz_assert(sender == from && from != SELF);
		for (i = 0; i < g->n; i++) {
			fuzz_assert(g->view[i].stamp <= now);
			gossip_up(g, i, now);
		}
		check_build(g, now);
	}
	gossip_free(g);
	return 0;
}

/* What node g would send to node 1, copies times over. */
static void
put_body(struct fuzz_out *o, uint8_t op, struct gossip *g, uint64_t now,
    int copies)
{
	uint8_t	buf[GOSSIP_MSG_MAX];
	size_t	len;

	len = gossip_build(g, SELF, now, buf, sizeof buf);
	while (copies-- > 0)
		fuzz_put_record(o, op, buf, len);
}

void
fuzz_seeds(const char *dir)
{
	struct fuzz_out		 o = { 0 };
	struct gossip		*a = node_new(2, 500), *b = node_new(7, 900);
	struct gossip_info	 info = { .load = 90, .cpus = 100,
				    .speed = 1200, .mem_total = 2048,
				    .mem_free = 2000 };

	/* 2 tells us of itself; 7 of itself and of 100, which 2 then hears */
	gossip_merge(b, gossip_index(b, 100), 999000, &info);
	put_body(&o, 1, a, 1000000, 1);
	fuzz_seed(dir, "one", &o);
	put_body(&o, 3, b, 1000000, 1);
	put_body(&o, 1 | 8, a, 1000010, 1);
	put_body(&o, 1 | 8, a, 1000020, 1);
	fuzz_seed(dir, "relay", &o);
	/* a replay, a wrong source, and news after a long silence */
	put_body(&o, 1, a, 1000000, 2);
	put_body(&o, 2, a, 1000000, 1);
	put_body(&o, 1 | 24, a, 1001500, 1);
	fuzz_seed(dir, "replay", &o);
	fuzz_put_record(&o, 1, "\x08\x02\x10\x01", 4);
	fuzz_seed(dir, "short", &o);
	gossip_free(a);
	gossip_free(b);
}
