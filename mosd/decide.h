/*
 * The balancer's decision (mosd/decide.c): from a view of the nodes and a
 * list of the processes homed here, which processes to move where. Plain
 * data in, plain data out: no event loop, no struct mosd, no clock of its
 * own (the caller passes the time and the random state). mosd/balance.c is
 * the glue that builds the view from gossip and the probe, asks, and sends
 * the orders.
 */
#ifndef MOSD_DECIDE_H
#define MOSD_DECIDE_H

#include <stddef.h>
#include <stdint.h>

#define DECIDE_MARGIN		0.25	/* a move must promise 25% more */
#define DECIDE_FIRST_MS		1000	/* a new process may move after */
#define DECIDE_RESIDENCY_MS	4000	/* a moved one stays this long */
#define DECIDE_MOVE_COST	0.05	/* seconds a move costs, at least */
#define DECIDE_BANDWIDTH	(100.0 * (1 << 20))	/* bytes/s, assumed */
#define DECIDE_MEM_LOW		(64ULL << 20)	/* a node short of memory */
#define DECIDE_MEM_RESERVE	(32ULL << 20)	/* left free by a move */

struct decide_node {			/* what the balancer knows of a node */
	uint32_t	 id;
	double		 runnable;	/* tasks that want a CPU */
	double		 cpus;
	uint32_t	 speed;		/* 1000: the reference CPU */
	uint64_t	 mem_free;	/* bytes */
	uint32_t	 flags;		/* NodeFlag */
	double		 pending;	/* our moves there, not in its load */
};

struct decide_view {			/* the up nodes, home included */
	uint32_t		 home;	/* this node: the processes' home */
	struct decide_node	*nodes;
	size_t			 n;
};

struct decide_proc {			/* a process homed here */
	uint32_t	 where;		/* the node it runs on */
	uint32_t	 cpu_permille;	/* of a CPU, lately: 2000 is two */
	uint32_t	 busy;		/* threads it keeps busy (decide_busy) */
	uint64_t	 need;		/* bytes of memory it needs of a node */
	uint64_t	 start_ms;	/* when it began */
	uint64_t	 moved_ms;	/* when it came where it is */
	const uint8_t	*allowed;	/* per view node: policy lets it go
					   there; NULL: anywhere */
	uint32_t	 owner;		/* a uid: one away limit for all its */
	uint32_t	 away_left;	/* more of the owner's that may be away
					   at once; UINT32_MAX: no limit */
};

struct decide_move {
	size_t		 proc;		/* index in the process list */
	uint32_t	 from, to;
};

/*
 * What each of a CPU-bound process's threads can expect of node v, join
 * of them joining it (0: it is there).
 */
double	 decide_speed(const struct decide_node *v, int join);
/* The threads a process of threads threads keeps busy, at cpu_permille. */
uint32_t decide_busy(uint32_t cpu_permille, uint32_t threads);
/* One round over n processes: fills moves (room for n), says how many. */
size_t	 decide_round(struct decide_view *w, const struct decide_proc *procs,
	    size_t n, uint64_t now, uint64_t *rng, struct decide_move *moves);
/* Where p, about to start at home, would run fastest (mosrun -b). */
uint32_t decide_best(const struct decide_view *w, const struct decide_proc *p,
	    uint64_t *rng);

#endif
