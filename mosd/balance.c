/*
 * The balancer's glue; the decision itself is mosd/decide.c. Every round
 * this file builds the view of the up nodes from gossip and the probe,
 * counting its own recent moves that their loads cannot show yet, lists
 * the processes homed here that it may move with where their owners'
 * policy lets them go, asks the decision, and orders the deputies to move.
 *
 * Decisions are the home's: guests are weighed by their own homes, which
 * learn through gossip that a node is blocked, short of memory or full.
 */
#include <sys/random.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mosd.h"
#include "proto/ctl.pb-c.h"

#define BALANCE_SETTLE_MS	10000	/* a move shows in any load by then */

static struct decide_node *
balance_node(struct balance *b, uint32_t id)
{
	size_t	i;

	for (i = 0; i < b->view.n; i++)
		if (b->view.nodes[i].id == id)
			return &b->view.nodes[i];
	return NULL;
}

/*
 * How much of a move node v's load does not show yet: all of it if the
 * load was measured before the move, then less and less as the probe's
 * smoothing takes it in.
 */
static double
balance_unseen(struct mosd *m, const struct decide_node *v,
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
	struct decide_node		*v;
	uint64_t			 now = now_ms();
	size_t				 i, k;

	b->view.home = m->conf->self;
	b->view.nodes = xreallocarray(b->view.nodes, g->n,
	    sizeof *b->view.nodes);
	b->view.n = 0;
	for (i = 0; i < g->n; i++) {
		if (g->ids[i] != m->conf->self &&
		    (g->view[i].stamp == 0 || !gossip_up(g, i, now)))
			continue;
		v = &b->view.nodes[b->view.n++];
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
			v->pending += b->recent[k].busy *
			    balance_unseen(m, v, &b->recent[k]);
		if ((v = balance_node(b, b->recent[k].from)) != NULL)
			v->pending -= b->recent[k].busy *
			    balance_unseen(m, v, &b->recent[k]);
	}
}

/*
 * May the balancer move p at all: a process of ours with an agent to
 * order, running, not locked to its node nor on its way, whose owner's
 * rule lets the balancer move it. The rest is the decision's.
 */
static int
balance_candidate(struct mosd *m, const struct mproc *p)
{
	if (p->role != OSM__CTL_ROLE__ROLE_DEPUTY || p->moving ||
	    p->locked || p->socket == NULL ||
	    p->state != OSM__PROC_STATE__PROC_RUNNING)
		return 0;
	return rules_for(m, p)->automatic;
}

/* What p needs of a node's memory. */
static uint64_t
balance_need(const struct mproc *p)
{
	return p->mem_need > p->rss ? p->mem_need : p->rss;
}

/*
 * p as the decision weighs it, needing need bytes: its times, and what its
 * owner's policy says now — the nodes of the view it may go to (allowed,
 * one per node) and how many more of the owner's processes may be away.
 */
static void
balance_proc(struct mosd *m, const struct mproc *p, uint64_t need,
    uint8_t *allowed, struct decide_proc *dp)
{
	const struct decide_view	*w = &m->balance.view;
	const struct policy_rule	*r = rules_for(m, p);
	char				*why;
	size_t				 i, away;

	memset(dp, 0, sizeof *dp);
	dp->where = p->where;
	dp->cpu_permille = p->cpu_permille;
	dp->busy = decide_busy(p->cpu_permille, p->threads);
	dp->need = need;
	dp->start_ms = p->start_ms;
	dp->moved_ms = p->moved_ms;
	for (i = 0; i < w->n; i++) {
		why = NULL;
		allowed[i] = rules_may_send(m, p, w->nodes[i].id, &why) == 0;
		free(why);
	}
	dp->allowed = allowed;
	dp->owner = p->uid;
	away = rules_away(m, p->uid, p);
	if (r->max_away == POLICY_NO_LIMIT)
		dp->away_left = UINT32_MAX;
	else
		dp->away_left = away < r->max_away ? r->max_away - away : 0;
}

/*
 * The node where p, about to start at home, would run fastest: for mosrun
 * -b, among the nodes its owner's policy allows with need bytes free.
 */
uint32_t
balance_best(struct mosd *m, const struct mproc *p, uint64_t need)
{
	struct balance		*b = &m->balance;
	struct decide_proc	 dp;
	uint8_t			*allowed;
	uint32_t		 best;

	balance_view(m, b);
	allowed = xcalloc(b->view.n, 1);
	balance_proc(m, p, need, allowed, &dp);
	best = decide_best(&b->view, &dp, &b->rng);
	free(allowed);
	return best;
}

static struct log_limit balance_log_moved, balance_log_order;

static void
balance_moved(struct mosd *m, void *arg, Osm__CtlReply *answer,
    const char *why)
{
	struct mproc	*p = procs_deputy(m, (uint32_t)(uintptr_t)arg);

	if (p == NULL)
		return;
	p->moving = 0;
	p->moved_ms = now_ms();	/* failed or not: not again at once */
	/* Its deputy, the owner's program, says why: a line now and then. */
	if (answer == NULL || !answer->ok)
		log_limited_info(&balance_log_moved, p->uid, "balancer: process "
		    "%u did not move: %s", p->pid, answer == NULL ? why :
		    answer->error != NULL ? answer->error : "refused");
}

/*
 * Order p's deputy to move it to node to. An order that cannot be given
 * still counted in this round's loads: the next round's view is built
 * afresh.
 */
static void
balance_order(struct mosd *m, struct mproc *p, uint32_t to)
{
	struct balance	*b = &m->balance;
	char		*cause = NULL;

	if (procs_order(m, p, OSM__CTL_TYPE__CTL_MIGRATE, to,
	    rules_for(m, p)->move, balance_moved,
	    (void *)(uintptr_t)p->pid, &cause) == -1) {
		log_limited_warnx(&balance_log_order, p->uid, "balancer: "
		    "process %u: %s", p->pid, cause);
		free(cause);
		p->moved_ms = now_ms();
		return;
	}
	log_info("balancer: process %u (%s) from node %u to node %u",
	    p->pid, p->command != NULL ? p->command : "?", p->where, to);
	p->moving = 1;
	if (b->nrecent < nitems(b->recent)) {
		b->recent[b->nrecent].from = p->where;
		b->recent[b->nrecent].to = to;
		b->recent[b->nrecent].busy = decide_busy(p->cpu_permille,
		    p->threads);
		b->recent[b->nrecent++].ms = now_ms();
	}
}

static void
balance_round(struct mosd *m)
{
	struct balance		*b = &m->balance;
	struct mproc		*p, **mp;
	struct decide_proc	*dp;
	struct decide_move	*moves;
	uint8_t			*allowed;
	size_t			 n = 0, k, nmoves;

	balance_view(m, b);
	if (b->view.n < 2)
		return;
	TAILQ_FOREACH(p, &m->procs, entry)
		n++;
	mp = xcalloc(n, sizeof *mp);
	dp = xcalloc(n, sizeof *dp);
	allowed = xcalloc(n, b->view.n);
	moves = xcalloc(n, sizeof *moves);
	n = 0;
	TAILQ_FOREACH(p, &m->procs, entry) {
		if (!balance_candidate(m, p))
			continue;
		balance_proc(m, p, balance_need(p), allowed + n * b->view.n,
		    &dp[n]);
		mp[n++] = p;
	}
	nmoves = decide_round(&b->view, dp, n, now_ms(), &b->rng, moves);
	for (k = 0; k < nmoves; k++)
		balance_order(m, mp[moves[k].proc], moves[k].to);
	free(moves);
	free(allowed);
	free(dp);
	free(mp);
}

static void
balance_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	looptime_mark(loop, "balancer");
	balance_round(w->data);
}

void
balance_start(struct mosd *m)
{
	struct balance	*b = &m->balance;

	/* Its own stream: its draws never shift gossip's. */
	if (getrandom(&b->rng, sizeof b->rng, 0) != sizeof b->rng)
		b->rng = now_us() ^ (uint64_t)getpid();
	ev_timer_init(&m->balance_timer, balance_cb, BALANCE_INTERVAL,
	    BALANCE_INTERVAL);
	m->balance_timer.data = m;
	ev_timer_start(m->loop, &m->balance_timer);
}
