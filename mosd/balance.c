/*
 * The balancer. Every round each process homed here is weighed against the
 * nodes of the gossip view, after the opportunity-cost approach of MOSIX: a
 * process moves when the speed it can expect elsewhere — that node's speed
 * times its free CPU capacity, counting the process itself — beats its
 * speed where it is by a margin, and the gain over the time it can be
 * expected to run on (as long as it has run: the older a process, the
 * longer it tends to live) pays for moving its memory. Memory decides
 * first: a process never goes where it does not fit, and leaves a node
 * that runs short.
 *
 * Against thrashing: a process stays where it arrived for a while; a move
 * must promise a margin; the balancer counts its own recent moves into and
 * out of each node until the node's gossiped load shows them; and each
 * round sends at most one process to a node, so that news of an idle node
 * draws processes over a few rounds, not all at once — other homes see the
 * node fill meanwhile.
 *
 * Decisions are the home's: guests are weighed by their own homes, which
 * learn through gossip that a node is blocked, short of memory or full.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "mosd.h"
#include "proto/ctl.pb-c.h"

#define BALANCE_MARGIN		0.25	/* a move must promise 25% more */
#define BALANCE_FIRST_MS	1000	/* a new process may move after */
#define BALANCE_RESIDENCY_MS	4000	/* a moved one stays this long */
#define BALANCE_SETTLE_MS	10000	/* a move shows in any load by then */
#define BALANCE_MOVE_COST	0.05	/* seconds a move costs, at least */
#define BALANCE_BANDWIDTH	(100.0 * (1 << 20))	/* bytes/s, assumed */
#define BALANCE_MEM_LOW		(64ULL << 20)	/* a node short of memory */
#define BALANCE_MEM_RESERVE	(32ULL << 20)	/* left free by a move */

static struct node_view *
balance_node(struct balance *b, uint32_t id)
{
	size_t	i;

	for (i = 0; i < b->n; i++)
		if (b->nodes[i].id == id)
			return &b->nodes[i];
	return NULL;
}

/*
 * How much of a move node v's load does not show yet: all of it if the
 * load was measured before the move, then less and less as the probe's
 * smoothing takes it in.
 */
static double
balance_unseen(struct mosd *m, const struct node_view *v,
    const struct balance_move *mv)
{
	ssize_t		idx = gossip_index(m->gossip, v->id);
	uint64_t	measured;

	measured = v->id == m->conf->self || idx == -1 ? now_ms() :
	    m->gossip->view[idx].stamp;
	if (measured <= mv->ms)
		return 1;
	return exp(-(double)(measured - mv->ms) / PROBE_TAU_MS);
}

/* The up nodes as gossip shows them, with our moves not yet shown. */
static void
balance_view(struct mosd *m, struct balance *b)
{
	struct gossip			*g = m->gossip;
	const struct gossip_info	*in;
	struct node_view		*v;
	uint64_t			 now = now_ms();
	size_t				 i, k;

	b->nodes = xreallocarray(b->nodes, g->n, sizeof *b->nodes);
	b->n = 0;
	for (i = 0; i < g->n; i++) {
		if (g->ids[i] != m->conf->self &&
		    (g->view[i].stamp == 0 || !gossip_up(g, i, now)))
			continue;
		v = &b->nodes[b->n++];
		memset(v, 0, sizeof *v);
		v->id = g->ids[i];
		in = &g->view[i].info;
		if (v->id == m->conf->self) {
			v->runnable = m->probe.runnable;
			v->cpus = m->probe.cpus;
			v->speed = m->probe.speed;
			v->mem_free = m->probe.mem_free;
			v->flags = m->flags;
			continue;
		}
		v->cpus = in->cpus / 100.0;
		v->speed = in->speed;
		v->runnable = in->load / 100.0 * v->cpus * in->speed / 1000.0;
		v->mem_free = (uint64_t)in->mem_free << 20;
		v->flags = in->flags;
	}
	/* Our moves, as far as the loads cannot show them yet. */
	for (k = 0; k < b->nrecent; k++) {
		if (now - b->recent[k].ms > BALANCE_SETTLE_MS) {
			b->recent[k--] = b->recent[--b->nrecent];
			continue;
		}
		if ((v = balance_node(b, b->recent[k].to)) != NULL)
			v->pending += balance_unseen(m, v, &b->recent[k]);
		if ((v = balance_node(b, b->recent[k].from)) != NULL)
			v->pending -= balance_unseen(m, v, &b->recent[k]);
	}
}

/*
 * Could p go to node v at all: the policy, the node's flags and its
 * memory. Home always takes its own.
 */
static int
balance_allowed(struct mosd *m, const struct mproc *p,
    const struct node_view *v, uint64_t need)
{
	char	*why = NULL;

	if (v->id == m->conf->self)
		return 1;
	if ((v->flags & OSM__NODE_FLAG__NODE_BLOCK) ||
	    need + BALANCE_MEM_RESERVE > v->mem_free ||
	    rules_may_send(m, p, v->id, &why) == -1) {
		free(why);
		return 0;
	}
	return 1;
}

/* What p needs of a node's memory. */
static uint64_t
balance_need(const struct mproc *p)
{
	return p->mem_need > p->rss ? p->mem_need : p->rss;
}

/*
 * The node where p, about to start at home, would run fastest: for mosrun
 * -b. Home wins unless another node promises the margin; ties between
 * other nodes are broken at random.
 */
uint32_t
balance_best(struct mosd *m, const struct mproc *p, uint64_t need)
{
	struct node_view	*v, *best = NULL;
	double			 s, top = -1;
	size_t			 i, ties = 0;

	balance_view(m, &m->balance);
	for (i = 0; i < m->balance.n; i++) {
		v = &m->balance.nodes[i];
		if (!balance_allowed(m, p, v, need))
			continue;
		/* Stopped before its first instruction, it is nowhere yet. */
		s = balance_speed(v, 1);
		if (v->id == m->conf->self)
			s *= 1 + BALANCE_MARGIN;
		if (s > top) {
			top = s;
			best = v;
			ties = 1;
		} else if (s == top && best->id != m->conf->self &&
		    gossip_rand(&m->balance.rng) % ++ties == 0)
			best = v;
	}
	return best != NULL ? best->id : m->conf->self;
}

static void
balance_moved(struct mosd *m, void *arg, Osm__CtlReply *answer,
    const char *why)
{
	struct mproc	*p = procs_deputy(m, (uint32_t)(uintptr_t)arg);

	if (p == NULL)
		return;
	p->moving = 0;
	p->moved_ms = now_ms();	/* failed or not: not again at once */
	if (answer == NULL || !answer->ok)
		log_info("balancer: process %u did not move: %s", p->pid,
		    answer == NULL ? why : answer->error != NULL ?
		    answer->error : "refused");
}

static void
balance_order(struct mosd *m, struct mproc *p, struct node_view *to)
{
	struct balance	*b = &m->balance;
	struct node_view *from;
	char		*cause = NULL;

	if (procs_order(m, p, OSM__CTL_TYPE__CTL_MIGRATE, to->id,
	    balance_moved, (void *)(uintptr_t)p->pid, &cause) == -1) {
		log_warnx("balancer: process %u: %s", p->pid, cause);
		free(cause);
		p->moved_ms = now_ms();
		return;
	}
	log_info("balancer: process %u (%s) from node %u to node %u",
	    p->pid, p->command != NULL ? p->command : "?", p->where, to->id);
	p->moving = 1;
	if (b->nrecent < nitems(b->recent)) {
		b->recent[b->nrecent].from = p->where;
		b->recent[b->nrecent].to = to->id;
		b->recent[b->nrecent++].ms = now_ms();
	}
	to->pending += 1;
	if ((from = balance_node(b, p->where)) != NULL)
		from->pending -= 1;
}

/* May the balancer move p away from where it is? */
static int
balance_movable(struct mosd *m, const struct mproc *p,
    const struct node_view *at, uint64_t now)
{
	const struct policy_rule *r;

	if (p->role != OSM__CTL_ROLE__ROLE_DEPUTY || p->moving ||
	    p->locked || p->socket == NULL ||
	    p->state != OSM__PROC_STATE__PROC_RUNNING)
		return 0;
	if (now - p->moved_ms < (p->moved_ms == p->start_ms ?
	    BALANCE_FIRST_MS : BALANCE_RESIDENCY_MS))
		return 0;
	if (at->id == m->conf->self && (m->flags &
	    (OSM__NODE_FLAG__NODE_STAY | OSM__NODE_FLAG__NODE_LSTAY)))
		return 0;
	if (at->id != m->conf->self && (at->flags & OSM__NODE_FLAG__NODE_STAY))
		return 0;
	r = rules_for(m, p);
	return r->automatic;
}

/* Weigh p where it is against every node; move it if one is worth it. */
static void
balance_one(struct mosd *m, struct mproc *p, uint8_t *taken,
    uint8_t *relieved, uint64_t now)
{
	struct balance		*b = &m->balance;
	struct node_view	*at, *v, *best = NULL;
	uint64_t		 need = balance_need(p);
	double			 here, s, top = 0, fair, ran, cost;
	size_t			 i, ties = 0;
	int			 must;

	if ((at = balance_node(b, p->where)) == NULL ||
	    !balance_movable(m, p, at, now))
		return;
	here = balance_speed(at, 0);
	/*
	 * From a node short of memory (one process a round) or a blocked
	 * one, any node where it fits will do, whatever it does. Otherwise
	 * only a CPU-bound process gains: it gets about its fair share of a
	 * CPU where it is; one that mostly waits has little to gain anywhere.
	 */
	must = (at->mem_free < BALANCE_MEM_LOW && !relieved[at - b->nodes]) ||
	    (at->id != m->conf->self &&
	    (at->flags & OSM__NODE_FLAG__NODE_BLOCK));
	fair = here / at->speed * 1000;
	if (!must && p->cpu_permille < fair / 2)
		return;
	for (i = 0; i < b->n; i++) {
		v = &b->nodes[i];
		if (v == at || taken[i] || !balance_allowed(m, p, v, need))
			continue;
		s = balance_speed(v, 1);
		if (s > top) {
			top = s;
			best = v;
			ties = 1;
		} else if (s == top && gossip_rand(&b->rng) % ++ties == 0)
			best = v;
	}
	if (best == NULL)
		return;
	if (!must) {
		if (top <= here * (1 + BALANCE_MARGIN))
			return;
		/* The gain over the time it may run on pays for the move. */
		ran = (now - p->start_ms) / 1000.0;
		cost = BALANCE_MOVE_COST + need / BALANCE_BANDWIDTH;
		if ((top - here) / top * (ran > 1 ? ran : 1) < 2 * cost)
			return;
	}
	taken[best - b->nodes] = 1;
	if (at->mem_free < BALANCE_MEM_LOW)
		relieved[at - b->nodes] = 1;
	balance_order(m, p, best);
}

static void
balance_round(struct mosd *m)
{
	struct mproc	*p, **order;
	uint8_t		*taken, *relieved;
	uint64_t	 now = now_ms();
	size_t		 n = 0, i, j;

	balance_view(m, &m->balance);
	if (m->balance.n < 2)
		return;
	TAILQ_FOREACH(p, &m->procs, entry)
		n += p->role == OSM__CTL_ROLE__ROLE_DEPUTY;
	if (n == 0)
		return;
	/* In a random order, so that no process always goes first. */
	order = xcalloc(n, sizeof *order);
	n = 0;
	TAILQ_FOREACH(p, &m->procs, entry)
		if (p->role == OSM__CTL_ROLE__ROLE_DEPUTY)
			order[n++] = p;
	for (i = n - 1; i > 0; i--) {
		j = gossip_rand(&m->balance.rng) % (i + 1);
		p = order[i];
		order[i] = order[j];
		order[j] = p;
	}
	/* Per node, this round: a process sent there, one sent away. */
	taken = xcalloc(m->balance.n, 1);
	relieved = xcalloc(m->balance.n, 1);
	for (i = 0; i < n; i++)
		balance_one(m, order[i], taken, relieved, now);
	free(relieved);
	free(taken);
	free(order);
}

static void
balance_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	balance_round(w->data);
}

void
balance_start(struct mosd *m)
{
	m->balance.rng = m->gossip->rng ^ 0x9e3779b97f4a7c15ULL;
	ev_timer_init(&m->balance_timer, balance_cb, BALANCE_INTERVAL,
	    BALANCE_INTERVAL);
	m->balance_timer.data = m;
	ev_timer_start(m->loop, &m->balance_timer);
}
