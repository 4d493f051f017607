/*
 * The balancer's decision, apart from the daemon so that it can be tested
 * with plain inputs (mosd/balance.c is the glue).
 *
 * Every round each process homed here is weighed against the nodes of the
 * view, after the opportunity-cost approach of MOSIX: a process moves when
 * the speed it can expect elsewhere — that node's speed times its free CPU
 * capacity, counting the process itself — beats its speed where it is by a
 * margin, and the gain over the time it can be expected to run on (as long
 * as it has run: the older a process, the longer it tends to live) pays
 * for moving its memory. Memory decides first: a process never goes where
 * it does not fit, and leaves a node that runs short.
 *
 * Against thrashing: a process stays where it arrived for a while; a move
 * must promise a margin; the moves of the round count into the loads at
 * once (and the glue counts its recent ones until gossip shows them); and
 * each round sends at most one process to a node, so that news of an idle
 * node draws processes over a few rounds, not all at once — other homes
 * see the node fill meanwhile.
 */
#include <stdlib.h>

#include "lib/osm.h"
#include "decide.h"
#include "proto/ctl.pb-c.h"

/* One round's state: what its moves so far have used up. */
struct decide_state {
	struct decide_view		*w;
	const struct decide_proc	*procs;
	uint64_t			 now;
	uint64_t			*rng;
	/* Per node: a process sent there, one sent away for memory. */
	uint8_t				*taken;
	uint8_t				*relieved;
	struct decide_move		*moves;
	size_t				 nmoves;
};

/*
 * The speed (1000: a reference CPU to itself) a CPU-bound thread can
 * expect on node v, among the tasks there, join of its process's threads
 * joining them.
 */
double
decide_speed(const struct decide_node *v, int join)
{
	double	n = v->runnable + v->pending + join;

	if (n < 1)
		n = 1;
	return v->speed * (v->cpus < n ? v->cpus / n : 1.0);
}

/*
 * A process is weighed by the threads it keeps busy: one of 4 busy
 * threads needs 4 CPUs' worth of room where it goes, and gains only if
 * each thread runs faster there. Its CPU use says how many are busy
 * (rounded, at least one), no more than it has.
 */
uint32_t
decide_busy(uint32_t cpu_permille, uint32_t threads)
{
	uint32_t	busy = (cpu_permille + 500) / 1000;

	if (threads == 0)
		threads = 1;
	if (busy > threads)
		busy = threads;
	return busy > 0 ? busy : 1;
}

static struct decide_node *
decide_node(const struct decide_view *w, uint32_t id)
{
	size_t	i;

	for (i = 0; i < w->n; i++)
		if (w->nodes[i].id == id)
			return &w->nodes[i];
	return NULL;
}

/*
 * Could p go to node i of the view at all: the node's flags and memory,
 * the policy, and its owner's limit on processes away, of which gone left
 * home this round. Home always takes its own.
 */
static int
decide_allowed(const struct decide_view *w, const struct decide_proc *p,
    size_t i, size_t gone)
{
	const struct decide_node	*v = &w->nodes[i];

	if (v->id == w->home)
		return 1;
	if ((v->flags & OSM__NODE_FLAG__NODE_BLOCK) ||
	    p->need + DECIDE_MEM_RESERVE > v->mem_free)
		return 0;
	if (p->allowed != NULL && !p->allowed[i])
		return 0;
	/* Leaving home makes one more away; moving on from a node does not. */
	return p->where != w->home || p->away_left == UINT32_MAX ||
	    gone < p->away_left;
}

/* How many of owner's processes this round's moves have taken from home. */
static size_t
decide_gone(const struct decide_state *st, uint32_t owner)
{
	const struct decide_move	*mv;
	size_t				 k, n = 0;

	for (k = 0; k < st->nmoves; k++) {
		mv = &st->moves[k];
		n += mv->from == st->w->home &&
		    st->procs[mv->proc].owner == owner;
	}
	return n;
}

/* May p move away from node at, now? */
static int
decide_movable(const struct decide_view *w, const struct decide_proc *p,
    const struct decide_node *at, uint64_t now)
{
	if (now - p->moved_ms < (p->moved_ms == p->start_ms ?
	    DECIDE_FIRST_MS : DECIDE_RESIDENCY_MS))
		return 0;
	if (at->id == w->home)
		return !(at->flags & (OSM__NODE_FLAG__NODE_STAY |
		    OSM__NODE_FLAG__NODE_LSTAY));
	return !(at->flags & OSM__NODE_FLAG__NODE_STAY);
}

/* Weigh process k where it is against every node; move it if worth it. */
static void
decide_one(struct decide_state *st, size_t k)
{
	const struct decide_proc	*p = &st->procs[k];
	struct decide_view		*w = st->w;
	struct decide_node		*at, *v, *best = NULL;
	struct decide_move		*mv;
	double				 here, s, top = 0, fair, ran, cost;
	size_t				 i, ties = 0, gone;
	int				 must, busy = p->busy > 0 ? p->busy : 1;

	if ((at = decide_node(w, p->where)) == NULL ||
	    !decide_movable(w, p, at, st->now))
		return;
	here = decide_speed(at, 0);
	/*
	 * From a node short of memory (one process a round) or a blocked
	 * one, any node where it fits will do, whatever it does. Otherwise
	 * only a CPU-bound process gains: it gets about its fair share of a
	 * CPU where it is; one that mostly waits has little to gain anywhere.
	 */
	must = (at->mem_free < DECIDE_MEM_LOW &&
	    !st->relieved[at - w->nodes]) || (at->id != w->home &&
	    (at->flags & OSM__NODE_FLAG__NODE_BLOCK));
	fair = here / at->speed * 1000;
	if (!must && p->cpu_permille / busy < fair / 2)
		return;
	gone = decide_gone(st, p->owner);
	for (i = 0; i < w->n; i++) {
		v = &w->nodes[i];
		if (v == at || st->taken[i] || !decide_allowed(w, p, i, gone))
			continue;
		s = decide_speed(v, busy);
		if (s > top) {
			top = s;
			best = v;
			ties = 1;
		} else if (s == top && rand_below(st->rng, ++ties) == 0)
			best = v;
	}
	if (best == NULL)
		return;
	if (!must) {
		if (top <= here * (1 + DECIDE_MARGIN))
			return;
		/* The gain over the time it may run on pays for the move. */
		ran = (st->now - p->start_ms) / 1000.0;
		cost = DECIDE_MOVE_COST + p->need / DECIDE_BANDWIDTH;
		if ((top - here) / top * (ran > 1 ? ran : 1) < 2 * cost)
			return;
	}
	st->taken[best - w->nodes] = 1;
	if (at->mem_free < DECIDE_MEM_LOW)
		st->relieved[at - w->nodes] = 1;
	/* The next process weighs the nodes as this move leaves them. */
	best->pending += busy;
	at->pending -= busy;
	mv = &st->moves[st->nmoves++];
	mv->proc = k;
	mv->from = at->id;
	mv->to = best->id;
}

/*
 * One round: the n processes, in a random order so that no process always
 * goes first. Fills moves (room for n) and returns how many; the view's
 * pending loads then include them.
 */
size_t
decide_round(struct decide_view *w, const struct decide_proc *procs,
    size_t n, uint64_t now, uint64_t *rng, struct decide_move *moves)
{
	struct decide_state	 st = { .w = w, .procs = procs, .now = now,
				    .rng = rng, .moves = moves };
	size_t			*order, i, j, t;

	if (w->n < 2 || n == 0)
		return 0;
	order = xcalloc(n, sizeof *order);
	for (i = 0; i < n; i++)
		order[i] = i;
	for (i = n - 1; i > 0; i--) {
		j = rand_below(rng, i + 1);
		t = order[i];
		order[i] = order[j];
		order[j] = t;
	}
	st.taken = xcalloc(w->n, 1);
	st.relieved = xcalloc(w->n, 1);
	for (i = 0; i < n; i++)
		decide_one(&st, order[i]);
	free(st.relieved);
	free(st.taken);
	free(order);
	return st.nmoves;
}

/*
 * The node where p, about to start at home, would run fastest: for mosrun
 * -b. Home wins unless another node promises the margin; ties between
 * other nodes are broken at random.
 */
uint32_t
decide_best(const struct decide_view *w, const struct decide_proc *p,
    uint64_t *rng)
{
	const struct decide_node	*v, *best = NULL;
	double				 s, top = -1;
	size_t				 i, ties = 0;

	for (i = 0; i < w->n; i++) {
		v = &w->nodes[i];
		if (!decide_allowed(w, p, i, 0))
			continue;
		/* Stopped before its first instruction, it is nowhere yet. */
		s = decide_speed(v, p->busy > 0 ? p->busy : 1);
		if (v->id == w->home)
			s *= 1 + DECIDE_MARGIN;
		if (s > top) {
			top = s;
			best = v;
			ties = 1;
		} else if (s == top && best->id != w->home &&
		    rand_below(rng, ++ties) == 0)
			best = v;
	}
	return best != NULL ? best->id : w->home;
}
