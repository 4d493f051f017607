/*
 * Load gossip (after Amar, Barak et al.): every interval each node sends one
 * datagram to one other node, holding its own fresh entry and a window of
 * other entries it knows; receivers keep the newest entry per node.
 *
 * This file is the algorithm only — no sockets, no clocks of its own — so
 * that mosgossip-sim runs exactly this code over a simulated network.
 *
 * Ages, not timestamps, travel on the wire: an entry says how old it was
 * when sent, and the receiver turns that into a stamp on its own clock. No
 * node needs a synchronised clock.
 *
 * Two choices keep every view fresh at scale (measured with the simulator,
 * see docs/PERFORMANCE.md):
 * - targets follow a cycle over all other nodes in an order shuffled once,
 *   so every node hears from every other one directly every n-1
 *   intervals: no pair can starve, however long the run;
 * - the window holds the newest entries by their stamps, so news spreads
 *   epidemically, packed as small as possible (see proto/gossip.proto).
 *   Mixing in a round-robin sweep over the whole view measured no better.
 */
#include <stdlib.h>
#include <string.h>

#include "lib/osm.h"
#include "gossip.h"
#include "proto/gossip.pb-c.h"

#define GOSSIP_LOAD_MAX		10000000U	/* load 100000.00 */
#define GOSSIP_CPUS_MAX		10000000U	/* 100000 CPUs */
#define GOSSIP_SPEED_MAX	1000000U
#define GOSSIP_MEM_MAX		(1U << 31)	/* MiB */
#define GOSSIP_GUESTS_MAX	1000000U
#define GOSSIP_ARRAYS		11	/* packed arrays in a message */

static int
gossip_cmp_id(const void *a, const void *b)
{
	uint32_t	x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/*
 * A view of the nodes in ids (which must include self), sending at most
 * window relayed entries per message, with the given incarnation and
 * random seed.
 */
struct gossip *
gossip_new(uint32_t self, const uint32_t *ids, size_t n, uint32_t window,
    uint64_t incarnation, uint64_t seed)
{
	struct gossip	*g;
	ssize_t		 idx;

	g = xcalloc(1, sizeof *g);
	g->self = self;
	g->n = n;
	g->ids = xreallocarray(NULL, n, sizeof *g->ids);
	memcpy(g->ids, ids, n * sizeof *ids);
	qsort(g->ids, n, sizeof *g->ids, gossip_cmp_id);
	if ((idx = gossip_index(g, self)) == -1)
		fatalx("%s: node %u is not in the map", __func__, self);
	g->self_idx = idx;
	g->view = xcalloc(n, sizeof *g->view);
	g->senders = xcalloc(n, sizeof *g->senders);
	g->window = window;
	g->max_body = GOSSIP_MSG_MAX - FRAME_OVERHEAD;
	g->incarnation = incarnation;
	g->rng = seed;
	g->order = xcalloc(n, sizeof *g->order);
	g->order_next = n;	/* shuffle at the first send */
	g->nrecent = 4 * (size_t)window + 4;
	g->recent = xcalloc(g->nrecent, sizeof *g->recent);
	g->cand = xcalloc(g->nrecent, sizeof *g->cand);
	g->picked = xcalloc(n, 1);
	g->pick = xcalloc(n, sizeof *g->pick);
	g->sorted = xcalloc(n, sizeof *g->sorted);
	g->rx_idx = xcalloc(n, sizeof *g->rx_idx);
	g->rx_info = xcalloc(n, sizeof *g->rx_info);
	return g;
}

void
gossip_free(struct gossip *g)
{
	if (g == NULL)
		return;
	free(g->ids);
	free(g->view);
	free(g->senders);
	free(g->order);
	free(g->recent);
	free(g->cand);
	free(g->picked);
	free(g->pick);
	free(g->sorted);
	free(g->rx_idx);
	free(g->rx_info);
	free(g);
}

ssize_t
gossip_index(const struct gossip *g, uint32_t id)
{
	size_t	lo = 0, hi = g->n, mid;

	while (lo < hi) {
		mid = (lo + hi) / 2;
		if (g->ids[mid] == id)
			return mid;
		if (g->ids[mid] < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return -1;
}

void
gossip_set_self(struct gossip *g, const struct gossip_info *info,
    uint64_t now)
{
	g->view[g->self_idx].info = *info;
	g->view[g->self_idx].stamp = now;
}

/*
 * How long a node may go unheard of before it is shown down. An entry's age
 * at a live node is bounded by the target cycle (n-1 intervals) and in
 * large clusters stays far below that (measured tails with mosgossip-sim
 * are in docs/PERFORMANCE.md). The configured timeout is a floor.
 */
uint64_t
gossip_timeout(size_t n, uint64_t interval_ms, uint64_t floor_ms)
{
	uint64_t	bound = n + 2;

	if (bound > 20 + n / 2)
		bound = 20 + n / 2;
	bound *= interval_ms;
	return bound > floor_ms ? bound : floor_ms;
}

int
gossip_up(const struct gossip *g, size_t idx, uint64_t now)
{
	const struct gossip_entry	*e = &g->view[idx];

	if (idx == g->self_idx)
		return 1;
	return e->stamp != 0 && now - e->stamp <= g->timeout_ms;
}

/*
 * The next node to send to: all others in a random order chosen once, then
 * the same order again, so that every node hears from every other one
 * directly every n-1 intervals — however long the run.
 */
uint32_t
gossip_next_target(struct gossip *g)
{
	size_t		i, j, m = 0;
	uint32_t	t;

	if (g->n < 2)
		return 0;
	if (g->order_next == g->n) {	/* first call: shuffle */
		for (i = 0; i < g->n; i++)
			if (i != g->self_idx)
				g->order[m++] = i;
		for (i = m - 1; i > 0; i--) {
			j = rand_below(&g->rng, i + 1);
			t = g->order[i];
			g->order[i] = g->order[j];
			g->order[j] = t;
		}
		g->order_next = 0;
	}
	t = g->ids[g->order[g->order_next]];
	g->order_next = (g->order_next + 1) % (g->n - 1);
	return t;
}

/*
 * Keep the entry if it is newer than what we have. Returns 1 when the view
 * changed.
 */
int
gossip_merge(struct gossip *g, size_t idx, uint64_t stamp,
    const struct gossip_info *info)
{
	struct gossip_entry	*e = &g->view[idx];
	struct gossip_recent	*r;

	if (idx == g->self_idx || stamp <= e->stamp)
		return 0;
	e->stamp = stamp;
	e->info = *info;
	r = &g->recent[g->recent_head];
	r->idx = idx;
	r->stamp = stamp;
	g->recent_head = (g->recent_head + 1) % g->nrecent;
	return 1;
}

static size_t
varint_len(uint64_t v)
{
	size_t	n = 1;

	while (v >= 0x80) {
		v >>= 7;
		n++;
	}
	return n;
}

/* A message being filled: the chosen view indices and their byte cost. */
struct gossip_pick {
	uint32_t	*idx;
	size_t		 n;
	size_t		 max;
	size_t		 bytes;
	size_t		 limit;
};

static uint32_t
gossip_age_units(uint64_t now, uint64_t stamp)
{
	uint64_t	age = now - stamp;

	if (age > GOSSIP_MAX_AGE_MS)
		age = GOSSIP_MAX_AGE_MS;
	return age / GOSSIP_AGE_UNIT_MS;
}

/*
 * The bytes an entry adds to the packed arrays. Its node delta is not known
 * until the entries are sorted: count one byte, and let gossip_build drop
 * entries in the rare case the real deltas do not fit.
 */
static size_t
gossip_entry_cost(const struct gossip *g, size_t idx, uint64_t now)
{
	const struct gossip_entry	*e = &g->view[idx];

	return 1 +
	    varint_len(gossip_age_units(now, e->stamp)) +
	    varint_len(e->info.load) + varint_len(e->info.cpus) +
	    varint_len(e->info.speed) + varint_len(e->info.mem_total) +
	    varint_len(e->info.mem_free) + varint_len(e->info.guests) +
	    varint_len(e->info.flags) + varint_len(e->info.swap_total) +
	    varint_len(e->info.swap_free);
}

/* Add idx if it fits; returns 0 when the message is full. */
static int
gossip_pick_add(struct gossip *g, struct gossip_pick *p, size_t idx,
    uint64_t now)
{
	size_t	cost;

	if (p->n == p->max)
		return 0;
	cost = gossip_entry_cost(g, idx, now);
	if (p->bytes + cost > p->limit)
		return 0;
	p->bytes += cost;
	p->idx[p->n++] = idx;
	g->picked[idx] = 1;
	return 1;
}

static int
gossip_relayable(const struct gossip *g, size_t idx, size_t target_idx)
{
	/* The target knows itself better than anyone. */
	return idx != g->self_idx && idx != target_idx && !g->picked[idx] &&
	    g->view[idx].stamp != 0;
}

static int
gossip_cmp_recent(const void *a, const void *b)
{
	const struct gossip_recent	*x = a, *y = b;

	return x->stamp > y->stamp ? -1 : x->stamp < y->stamp;
}

static int
gossip_cmp_u32(const void *a, const void *b)
{
	uint32_t	x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/* Reorder a so that its first k elements are the k newest (quickselect). */
static void
gossip_select(struct gossip_recent *a, size_t n, size_t k)
{
	struct gossip_recent	t;
	size_t			lo = 0, hi = n - 1, i, j;
	uint64_t		pivot;

	while (lo < hi) {
		pivot = a[lo + (hi - lo) / 2].stamp;
		i = lo;
		j = hi;
		while (i <= j) {
			while (a[i].stamp > pivot)
				i++;
			while (a[j].stamp < pivot)
				j--;
			if (i <= j) {
				t = a[i];
				a[i] = a[j];
				a[j] = t;
				i++;
				if (j == 0)
					break;
				j--;
			}
		}
		if (k - 1 <= j)
			hi = j;
		else if (k - 1 >= i)
			lo = i;
		else
			return;
	}
}

/* Choose what goes in the message: our own entry, then the newest news. */
static void
gossip_choose(struct gossip *g, struct gossip_pick *p, size_t target_idx,
    uint64_t now)
{
	struct gossip_recent	*r;
	size_t			 k, nc = 0;

	gossip_pick_add(g, p, g->self_idx, now);

	/* The freshest entries we hold, by stamp; the ring only says where. */
	for (k = 0; k < g->nrecent; k++) {
		r = &g->recent[k];
		if (r->stamp != 0 && r->stamp == g->view[r->idx].stamp &&
		    gossip_relayable(g, r->idx, target_idx))
			g->cand[nc++] = *r;
	}
	/* Only the newest few need ordering; the ring holds four windows. */
	if (nc > g->window) {
		gossip_select(g->cand, nc, g->window);
		nc = g->window;
	}
	qsort(g->cand, nc, sizeof *g->cand, gossip_cmp_recent);
	for (k = 0; k < nc; k++) {
		if (g->picked[g->cand[k].idx])
			continue;	/* in the ring twice */
		if (!gossip_pick_add(g, p, g->cand[k].idx, now))
			return;
	}
}

/* Fill msg's arrays (in arr) with the n entries of sorted. */
static void
gossip_fill(const struct gossip *g, Osm__Gossip *msg, const uint32_t *sorted,
    size_t n, uint32_t *arr, uint64_t now)
{
	const struct gossip_info	*in;
	size_t				 k, idx, prev = 0;

	msg->n_node = msg->n_age = msg->n_load = msg->n_cpus = msg->n_speed =
	    msg->n_mem_total = msg->n_mem_free = msg->n_guests =
	    msg->n_flags = msg->n_swap_total = msg->n_swap_free = n;
	msg->node = arr;
	msg->age = arr + n;
	msg->load = arr + 2 * n;
	msg->cpus = arr + 3 * n;
	msg->speed = arr + 4 * n;
	msg->mem_total = arr + 5 * n;
	msg->mem_free = arr + 6 * n;
	msg->guests = arr + 7 * n;
	msg->flags = arr + 8 * n;
	msg->swap_total = arr + 9 * n;
	msg->swap_free = arr + 10 * n;
	for (k = 0; k < n; k++) {
		idx = sorted[k];
		in = &g->view[idx].info;
		msg->node[k] = g->ids[idx] - prev;
		prev = g->ids[idx];
		msg->age[k] = gossip_age_units(now, g->view[idx].stamp);
		msg->load[k] = in->load;
		msg->cpus[k] = in->cpus;
		msg->speed[k] = in->speed;
		msg->mem_total[k] = in->mem_total;
		msg->mem_free[k] = in->mem_free;
		msg->guests[k] = in->guests;
		msg->flags[k] = in->flags;
		msg->swap_total[k] = in->swap_total;
		msg->swap_free[k] = in->swap_free;
	}
}

/*
 * Pack the message for target into buf; returns its size, or 0 if it does
 * not fit in size.
 */
size_t
gossip_build(struct gossip *g, uint32_t target, uint64_t now, uint8_t *buf,
    size_t size)
{
	Osm__Gossip		 msg = OSM__GOSSIP__INIT;
	struct gossip_pick	 p;
	uint32_t		*arr;
	size_t			 k, len;

	p.max = (size_t)g->window + 1;
	if (p.max > g->n)
		p.max = g->n;
	p.idx = g->pick;
	p.n = 0;
	msg.sender = g->self;
	msg.incarnation = g->incarnation;
	msg.seq = ++g->seq;
	/* the header, plus a tag and a length of up to 3 bytes per array */
	p.bytes = osm__gossip__get_packed_size(&msg) + GOSSIP_ARRAYS * 4;
	p.limit = g->max_body < size ? g->max_body : size;

	gossip_choose(g, &p, gossip_index(g, target), now);
	for (k = 0; k < p.n; k++)
		g->picked[p.idx[k]] = 0;

	arr = xcalloc(GOSSIP_ARRAYS * (size_t)p.n, sizeof *arr);
	for (;;) {
		memcpy(g->sorted, p.idx, p.n * sizeof *p.idx);
		qsort(g->sorted, p.n, sizeof *g->sorted, gossip_cmp_u32);
		gossip_fill(g, &msg, g->sorted, p.n, arr, now);
		len = osm__gossip__get_packed_size(&msg);
		if (len <= p.limit || p.n == 1)
			break;
		p.n--;		/* drop the least fresh; our own is first */
	}
	g->last_entries = p.n;
	if (len > size)
		len = 0;
	else
		osm__gossip__pack(&msg, buf);
	free(arr);
	return len;
}

static int
gossip_info_valid(const struct gossip_info *i)
{
	return i->load <= GOSSIP_LOAD_MAX && i->cpus > 0 &&
	    i->cpus <= GOSSIP_CPUS_MAX && i->speed > 0 &&
	    i->speed <= GOSSIP_SPEED_MAX && i->mem_total <= GOSSIP_MEM_MAX &&
	    i->mem_free <= i->mem_total && i->guests <= GOSSIP_GUESTS_MAX &&
	    i->swap_total <= GOSSIP_MEM_MAX && i->swap_free <= i->swap_total;
}

/* Is this message newer than the last one from its sender? */
static int
gossip_fresh(struct gossip *g, size_t idx, const Osm__Gossip *m,
    uint64_t now)
{
	struct gossip_sender	*s = &g->senders[idx];

	if (m->incarnation == s->incarnation)
		return m->seq > s->seq;
	if (m->incarnation > s->incarnation)
		return 1;
	/*
	 * An older incarnation: a restart whose clock went back, or a replay.
	 * Believe it only once the sender has been silent past the timeout.
	 */
	return s->heard == 0 || now - s->heard > g->timeout_ms;
}

/*
 * Check and merge one message body that came from the address of node
 * from. Nothing of it is used unless all of it is valid. *sender is set
 * once the claimed sender is known.
 */
enum gossip_result
gossip_receive(struct gossip *g, uint64_t now, const uint8_t *body,
    size_t len, uint32_t from, uint32_t *sender)
{
	Osm__Gossip		*m;
	enum gossip_result	 rc = GOSSIP_OK;
	struct gossip_info	*info = g->rx_info;
	ssize_t			 sidx, idx;
	size_t			 i, n, self_seen = 0;
	uint64_t		 id = 0, age;
	int			 swap;

	*sender = 0;
	if ((m = osm__gossip__unpack(NULL, len, body)) == NULL)
		return GOSSIP_MALFORMED;
	if ((sidx = gossip_index(g, m->sender)) == -1) {
		rc = GOSSIP_UNKNOWN_NODE;
		goto out;
	}
	*sender = m->sender;
	if ((size_t)sidx == g->self_idx) {
		rc = GOSSIP_FROM_SELF;
		goto out;
	}
	if (m->sender != from) {
		rc = GOSSIP_WRONG_SOURCE;
		goto out;
	}
	n = m->n_node;
	if (n == 0 || n > g->n || m->n_age != n || m->n_load != n ||
	    m->n_cpus != n || m->n_speed != n || m->n_mem_total != n ||
	    m->n_mem_free != n || m->n_guests != n || m->n_flags != n ||
	    m->n_swap_total != m->n_swap_free ||
	    (m->n_swap_total != 0 && m->n_swap_total != n)) {
		rc = GOSSIP_BAD_FIELD;
		goto out;
	}
	/* A sender older than swap in gossip sends none: no swap, then. */
	swap = m->n_swap_total == n;
	for (i = 0; i < n; i++) {
		/* ascending ids: every delta after the first is positive */
		if (i > 0 && m->node[i] == 0) {
			rc = GOSSIP_BAD_FIELD;
			goto out;
		}
		id += m->node[i];
		if (id > OSM_MAX_NODES || (idx = gossip_index(g, id)) == -1) {
			rc = GOSSIP_UNKNOWN_NODE;
			goto out;
		}
		g->rx_idx[i] = idx;
		info[i].load = m->load[i];
		info[i].cpus = m->cpus[i];
		info[i].speed = m->speed[i];
		info[i].mem_total = m->mem_total[i];
		info[i].mem_free = m->mem_free[i];
		info[i].guests = m->guests[i];
		info[i].flags = m->flags[i];
		info[i].swap_total = swap ? m->swap_total[i] : 0;
		info[i].swap_free = swap ? m->swap_free[i] : 0;
		if (!gossip_info_valid(&info[i]) ||
		    m->age[i] > GOSSIP_MAX_AGE_MS / GOSSIP_AGE_UNIT_MS) {
			rc = GOSSIP_BAD_FIELD;
			goto out;
		}
		if ((size_t)idx == (size_t)sidx)
			self_seen = 1;
	}
	if (!self_seen) {	/* a sender always includes itself */
		rc = GOSSIP_BAD_FIELD;
		goto out;
	}
	if (!gossip_fresh(g, sidx, m, now)) {
		rc = GOSSIP_REPLAY;
		goto out;
	}
	g->senders[sidx].incarnation = m->incarnation;
	g->senders[sidx].seq = m->seq;
	g->senders[sidx].heard = now;

	for (i = 0; i < n; i++) {
		age = (uint64_t)m->age[i] * GOSSIP_AGE_UNIT_MS;
		gossip_merge(g, g->rx_idx[i], now > age ? now - age : 1,
		    &info[i]);
	}
out:
	osm__gossip__free_unpacked(m, NULL);
	return rc;
}

const char *
gossip_strerror(enum gossip_result r)
{
	switch (r) {
	case GOSSIP_OK:
		return "ok";
	case GOSSIP_MALFORMED:
		return "malformed message";
	case GOSSIP_BAD_FIELD:
		return "field out of range";
	case GOSSIP_UNKNOWN_NODE:
		return "node not in the map";
	case GOSSIP_FROM_SELF:
		return "claims to come from this node";
	case GOSSIP_REPLAY:
		return "replayed or out of order";
	case GOSSIP_WRONG_SOURCE:
		return "sender does not match the source address";
	case GOSSIP_NRESULTS:
		break;
	}
	return "unknown";
}
