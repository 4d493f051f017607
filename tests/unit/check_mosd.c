/*
 * Check suite for mosd's pure cores, each through its own header and
 * without libev: gossip merge rules, message building and decoding of
 * hostile input, target cycles; the balancer's decisions, from plain
 * views of nodes and lists of processes. The load probe and the load
 * formula, against fake /proc and cgroup trees, are in check_mosd-probe.c;
 * what users may make mosd hold in check_mosd-quota.c; the channel to
 * the privileged parent and the network process's sandbox (which need
 * mosd.h) in check_mosd-privmsg.c; the memory guard in check_mosd-guard.c;
 * the probe's samples, taken off the loop, in check_mosd-probe-thread.c.
 */
#include <sys/stat.h>

#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/osm.h"
#include "mosd/decide.h"
#include "mosd/gossip.h"
#include "mosd/probe.h"
#include "proto/ctl.pb-c.h"
#include "proto/gossip.pb-c.h"

/* check_mosd-probe.c: its test case, added to s */
void	 check_mosd_probe(Suite *s);
/* check_mosd-quota.c: its test case, added to s */
void	 check_mosd_quota(Suite *s);
/* check_mosd-privmsg.c: the privileged parent's channel, the sandbox */
void	 check_mosd_privmsg(Suite *s);
/* check_mosd-guard.c: its test case, added to s */
void	 check_mosd_guard(Suite *s);
void	 check_mosd_hashes(Suite *s);
/* check_mosd-probe-thread.c: the probe's samples, off the loop */
void	 check_mosd_probe_thread(Suite *s);

static const uint32_t ids4[] = { 1, 2, 3, 4 };

static struct gossip_info
info_load(uint32_t load)
{
	struct gossip_info	i = { .load = load, .cpus = 100, .speed = 1000,
	    .mem_total = 1024, .mem_free = 512 };

	return i;
}

static struct gossip *
g_new(uint32_t self)
{
	struct gossip	*g = gossip_new(self, ids4, 4, 48, 1000, self);

	g->timeout_ms = 6000;
	return g;
}

START_TEST(test_merge_newest_wins)
{
	struct gossip		*g = g_new(1);
	struct gossip_info	 a = info_load(10), b = info_load(20);
	ssize_t			 i3 = gossip_index(g, 3);

	ck_assert_int_eq(gossip_merge(g, i3, 5000, &a), 1);
	ck_assert_uint_eq(g->view[i3].info.load, 10);
	/* older: ignored */
	ck_assert_int_eq(gossip_merge(g, i3, 4000, &b), 0);
	ck_assert_uint_eq(g->view[i3].info.load, 10);
	/* same age: ignored */
	ck_assert_int_eq(gossip_merge(g, i3, 5000, &b), 0);
	/* newer: taken */
	ck_assert_int_eq(gossip_merge(g, i3, 6000, &b), 1);
	ck_assert_uint_eq(g->view[i3].info.load, 20);
	/* nobody else's word about ourselves */
	gossip_set_self(g, &a, 7000);
	ck_assert_int_eq(gossip_merge(g, gossip_index(g, 1), 9000, &b), 0);
	ck_assert_uint_eq(g->view[gossip_index(g, 1)].info.load, 10);
	gossip_free(g);
}
END_TEST

START_TEST(test_up_down)
{
	struct gossip		*g = g_new(1);
	struct gossip_info	 a = info_load(10);
	ssize_t			 i2 = gossip_index(g, 2);

	ck_assert_int_eq(gossip_up(g, i2, 100), 0);	/* never heard */
	gossip_merge(g, i2, 1000, &a);
	ck_assert_int_eq(gossip_up(g, i2, 7000), 1);
	ck_assert_int_eq(gossip_up(g, i2, 7001), 0);	/* past timeout */
	ck_assert_int_eq(gossip_up(g, gossip_index(g, 1), 1e9), 1);
	gossip_merge(g, i2, 8000, &a);
	ck_assert_int_eq(gossip_up(g, i2, 8500), 1);	/* back up */
	gossip_free(g);
}
END_TEST

START_TEST(test_timeout_scales)
{
	ck_assert_uint_eq(gossip_timeout(4, 1000, 6000), 6000);
	ck_assert_uint_eq(gossip_timeout(4, 1000, 20000), 20000);
	ck_assert_uint_eq(gossip_timeout(16, 1000, 6000), 18000);
	ck_assert_uint_eq(gossip_timeout(1024, 1000, 6000), 532000);
	ck_assert_uint_eq(gossip_timeout(4, 250, 1000), 1500);
}
END_TEST

/*
 * Every node is a target exactly once per cycle of n-1 sends, in the same
 * order every cycle: each pair talks directly every n-1 intervals.
 */
START_TEST(test_target_cycle)
{
	uint32_t	 ids[50], seen[51], first[49];
	struct gossip	*g;
	int		 i, c, t;

	for (i = 0; i < 50; i++)
		ids[i] = i + 1;
	g = gossip_new(7, ids, 50, 48, 1, 99);
	for (c = 0; c < 5; c++) {
		memset(seen, 0, sizeof seen);
		for (i = 0; i < 49; i++) {
			t = gossip_next_target(g);
			if (c == 0)
				first[i] = t;
			ck_assert_int_eq(t, first[i]);
			ck_assert_int_ne(t, 7);
			ck_assert_int_ge(t, 1);
			ck_assert_int_le(t, 50);
			seen[t]++;
		}
		for (i = 1; i <= 50; i++)
			ck_assert_uint_eq(seen[i], i == 7 ? 0 : 1);
	}
	gossip_free(g);
}
END_TEST

/* Build at node 1, receive at node 2: the views agree. */
START_TEST(test_build_receive)
{
	struct gossip		*a = g_new(1), *b = g_new(2);
	struct gossip_info	 self = info_load(77), three = info_load(33);
	uint8_t			 buf[GOSSIP_MSG_MAX];
	size_t			 len;
	uint32_t		 sender;
	ssize_t			 i;

	gossip_set_self(a, &self, 10000);
	gossip_merge(a, gossip_index(a, 3), 9000, &three);
	len = gossip_build(a, 2, 10000, buf, sizeof buf);
	ck_assert_uint_gt(len, 0);
	/* arrives 50 ms later on b's own clock */
	ck_assert_int_eq(gossip_receive(b, 50050, buf, len, 1, &sender),
	    GOSSIP_OK);
	ck_assert_uint_eq(sender, 1);
	i = gossip_index(b, 1);
	ck_assert_uint_eq(b->view[i].info.load, 77);
	ck_assert_uint_eq(b->view[i].stamp, 50050);	/* age 0 */
	i = gossip_index(b, 3);
	ck_assert_uint_eq(b->view[i].info.load, 33);
	ck_assert_uint_eq(b->view[i].stamp, 50050 - 1000);	/* age 1 s */
	/* node 4 was never known: not sent */
	ck_assert_uint_eq(b->view[gossip_index(b, 4)].stamp, 0);

	/* the same message again is a replay */
	ck_assert_int_eq(gossip_receive(b, 50100, buf, len, 1, &sender),
	    GOSSIP_REPLAY);
	/* from the wrong address */
	len = gossip_build(a, 2, 11000, buf, sizeof buf);
	ck_assert_int_eq(gossip_receive(b, 51000, buf, len, 3, &sender),
	    GOSSIP_WRONG_SOURCE);
	/* an older message after a newer one is refused too */
	len = gossip_build(a, 2, 12000, buf, sizeof buf);
	{
		uint8_t	later[GOSSIP_MSG_MAX];
		size_t	llen = gossip_build(a, 2, 13000, later, sizeof later);

		ck_assert_int_eq(gossip_receive(b, 53000, later, llen, 1,
		    &sender), GOSSIP_OK);
		ck_assert_int_eq(gossip_receive(b, 53001, buf, len, 1,
		    &sender), GOSSIP_REPLAY);
	}
	gossip_free(a);
	gossip_free(b);
}
END_TEST

/* A restarted sender (new incarnation) is believed at once. */
START_TEST(test_new_incarnation)
{
	struct gossip		*a = g_new(1), *b = g_new(2), *a2;
	struct gossip_info	 self = info_load(1);
	uint8_t			 buf[GOSSIP_MSG_MAX];
	size_t			 len;
	uint32_t		 sender;

	gossip_set_self(a, &self, 1000);
	len = gossip_build(a, 2, 1000, buf, sizeof buf);
	ck_assert_int_eq(gossip_receive(b, 1000, buf, len, 1, &sender),
	    GOSSIP_OK);
	a2 = gossip_new(1, ids4, 4, 48, 2000, 5);	/* later start */
	gossip_set_self(a2, &self, 5);
	len = gossip_build(a2, 2, 5, buf, sizeof buf);
	ck_assert_int_eq(gossip_receive(b, 1100, buf, len, 1, &sender),
	    GOSSIP_OK);
	/* the old incarnation replayed: refused while the new one talks */
	len = gossip_build(a, 2, 1200, buf, sizeof buf);
	ck_assert_int_eq(gossip_receive(b, 1200, buf, len, 1, &sender),
	    GOSSIP_REPLAY);
	gossip_free(a);
	gossip_free(a2);
	gossip_free(b);
}
END_TEST

/* Pack a hand-made message with n entries (arrays all of length n). */
static size_t
pack_raw(Osm__Gossip *m, uint32_t *arrs, size_t n, uint8_t *buf)
{
	m->n_node = m->n_age = m->n_load = m->n_cpus = m->n_speed =
	    m->n_mem_total = m->n_mem_free = m->n_guests = m->n_flags = n;
	m->node = arrs;
	m->age = arrs + n;
	m->load = arrs + 2 * n;
	m->cpus = arrs + 3 * n;
	m->speed = arrs + 4 * n;
	m->mem_total = arrs + 5 * n;
	m->mem_free = arrs + 6 * n;
	m->guests = arrs + 7 * n;
	m->flags = arrs + 8 * n;
	return osm__gossip__pack(m, buf);
}

static void
raw_entry(uint32_t *arrs, size_t n, size_t k, uint32_t delta)
{
	arrs[k] = delta;		/* node */
	arrs[n + k] = 0;		/* age */
	arrs[2 * n + k] = 50;		/* load */
	arrs[3 * n + k] = 100;		/* cpus */
	arrs[4 * n + k] = 1000;		/* speed */
	arrs[5 * n + k] = 1024;		/* mem_total */
	arrs[6 * n + k] = 100;		/* mem_free */
	arrs[7 * n + k] = 0;
	arrs[8 * n + k] = 0;
}

START_TEST(test_receive_hostile)
{
	struct gossip	*b = g_new(2);
	Osm__Gossip	 m = OSM__GOSSIP__INIT;
	uint32_t	 arrs[9 * 3], sender;
	uint8_t		 buf[2048], good[2048];
	size_t		 len, glen, i;
	uint64_t	 seq = 1;

#define RAW(n) (m.seq = seq++, pack_raw(&m, arrs, (n), buf))
	m.sender = 1;
	m.incarnation = 1;
	/* the good one first: nodes 1 and 3 */
	raw_entry(arrs, 2, 0, 1);
	raw_entry(arrs, 2, 1, 2);
	glen = RAW(2);
	memcpy(good, buf, glen);

	/* every truncation and garbage is refused and changes nothing */
	for (i = 0; i < glen; i++)
		ck_assert_int_ne(gossip_receive(b, 1000, good, i, 1, &sender),
		    GOSSIP_OK);
	for (i = 0; i < sizeof buf; i++)
		buf[i] = (uint8_t)(i * 37 + 11);
	ck_assert_int_ne(gossip_receive(b, 1000, buf, sizeof buf, 1, &sender),
	    GOSSIP_OK);
	for (i = 0; i < 4; i++)
		ck_assert_uint_eq(b->view[i].stamp, 0);

	/* unknown entry node 9 */
	raw_entry(arrs, 2, 0, 1);
	raw_entry(arrs, 2, 1, 8);
	len = RAW(2);
	ck_assert_int_eq(gossip_receive(b, 1000, buf, len, 1, &sender),
	    GOSSIP_UNKNOWN_NODE);
	/* duplicate node (delta 0 after the first) */
	raw_entry(arrs, 2, 0, 1);
	raw_entry(arrs, 2, 1, 0);
	len = RAW(2);
	ck_assert_int_eq(gossip_receive(b, 1000, buf, len, 1, &sender),
	    GOSSIP_BAD_FIELD);
	/* the sender's own entry missing */
	raw_entry(arrs, 1, 0, 3);
	len = RAW(1);
	ck_assert_int_eq(gossip_receive(b, 1000, buf, len, 1, &sender),
	    GOSSIP_BAD_FIELD);
	/* free memory above total */
	raw_entry(arrs, 1, 0, 1);
	arrs[6] = 5000;
	len = RAW(1);
	ck_assert_int_eq(gossip_receive(b, 1000, buf, len, 1, &sender),
	    GOSSIP_BAD_FIELD);
	/* zero CPUs */
	raw_entry(arrs, 1, 0, 1);
	arrs[3] = 0;
	len = RAW(1);
	ck_assert_int_eq(gossip_receive(b, 1000, buf, len, 1, &sender),
	    GOSSIP_BAD_FIELD);
	/* arrays of different lengths */
	raw_entry(arrs, 1, 0, 1);
	pack_raw(&m, arrs, 1, buf);
	m.n_load = 0;
	m.seq = seq++;
	len = osm__gossip__pack(&m, buf);
	ck_assert_int_eq(gossip_receive(b, 1000, buf, len, 1, &sender),
	    GOSSIP_BAD_FIELD);
	/* a sender not in the map */
	m.sender = 40;
	raw_entry(arrs, 1, 0, 40);
	len = RAW(1);
	ck_assert_int_eq(gossip_receive(b, 1000, buf, len, 40, &sender),
	    GOSSIP_UNKNOWN_NODE);
	/* claims to be us */
	m.sender = 2;
	raw_entry(arrs, 1, 0, 2);
	len = RAW(1);
	ck_assert_int_eq(gossip_receive(b, 1000, buf, len, 2, &sender),
	    GOSSIP_FROM_SELF);

	/* nothing of all that got in */
	for (i = 0; i < 4; i++)
		ck_assert_uint_eq(b->view[i].stamp, 0);
	/* and the good one still works (its seq is older: new incarnation) */
	m.sender = 1;
	m.incarnation = 2;
	raw_entry(arrs, 2, 0, 1);
	raw_entry(arrs, 2, 1, 2);
	len = RAW(2);
	ck_assert_int_eq(gossip_receive(b, 1000, buf, len, 1, &sender),
	    GOSSIP_OK);
	ck_assert_uint_eq(b->view[gossip_index(b, 3)].info.load, 50);
#undef RAW
	gossip_free(b);
}
END_TEST

/*
 * Swap travels in arrays of its own (gossip.proto's fields 13 and 14): a
 * new sender's reach the receiver; an older sender's message, without
 * them, is still good and says no swap; arrays of the wrong length, or
 * more swap free than there is, are refused.
 */
START_TEST(test_gossip_swap)
{
	struct gossip		*a = g_new(1), *b = g_new(2);
	struct gossip_info	 self = info_load(10);
	Osm__Gossip		 m = OSM__GOSSIP__INIT;
	uint32_t		 arrs[9], swap[2] = { 2048, 100 }, sender;
	uint8_t			 buf[GOSSIP_MSG_MAX];
	size_t			 len;
	ssize_t			 i;

	self.swap_total = 2048;
	self.swap_free = 1500;
	gossip_set_self(a, &self, 1000);
	len = gossip_build(a, 2, 1000, buf, sizeof buf);
	ck_assert_int_eq(gossip_receive(b, 1000, buf, len, 1, &sender),
	    GOSSIP_OK);
	i = gossip_index(b, 1);
	ck_assert_uint_eq(b->view[i].info.swap_total, 2048);
	ck_assert_uint_eq(b->view[i].info.swap_free, 1500);

	/* from node 3, as a build before swap in gossip would send it */
	m.sender = 3;
	m.incarnation = 1;
	m.seq = 1;
	raw_entry(arrs, 1, 0, 3);
	len = pack_raw(&m, arrs, 1, buf);
	ck_assert_int_eq(gossip_receive(b, 1000, buf, len, 3, &sender),
	    GOSSIP_OK);
	i = gossip_index(b, 3);
	ck_assert_uint_eq(b->view[i].info.load, 50);
	ck_assert_uint_eq(b->view[i].info.swap_total, 0);

	/* one swap array without the other */
	m.seq = 2;
	m.n_swap_total = 1;
	m.swap_total = swap;
	len = osm__gossip__pack(&m, buf);
	ck_assert_int_eq(gossip_receive(b, 2000, buf, len, 3, &sender),
	    GOSSIP_BAD_FIELD);
	/* both, but longer than the entries */
	m.n_swap_total = m.n_swap_free = 2;
	m.swap_free = swap;
	len = osm__gossip__pack(&m, buf);
	ck_assert_int_eq(gossip_receive(b, 2000, buf, len, 3, &sender),
	    GOSSIP_BAD_FIELD);
	/* more free than total */
	m.n_swap_total = m.n_swap_free = 1;
	m.swap_total = &swap[1];
	m.swap_free = &swap[0];
	len = osm__gossip__pack(&m, buf);
	ck_assert_int_eq(gossip_receive(b, 2000, buf, len, 3, &sender),
	    GOSSIP_BAD_FIELD);
	/* and right */
	m.swap_total = &swap[0];
	m.swap_free = &swap[1];
	len = osm__gossip__pack(&m, buf);
	ck_assert_int_eq(gossip_receive(b, 2000, buf, len, 3, &sender),
	    GOSSIP_OK);
	ck_assert_uint_eq(b->view[i].info.swap_total, 2048);
	ck_assert_uint_eq(b->view[i].info.swap_free, 100);
	gossip_free(a);
	gossip_free(b);
}
END_TEST

/* However many nodes, a message fits in a datagram. */
START_TEST(test_build_size_limit)
{
	uint32_t		*ids;
	struct gossip		*g;
	struct gossip_info	 in = info_load(12345);
	uint8_t			 buf[GOSSIP_MSG_MAX];
	size_t			 i, len, n = 3000;

	ids = calloc(n, sizeof *ids);
	for (i = 0; i < n; i++)
		ids[i] = 60000 - 7 * i;		/* large, sparse ids */
	g = gossip_new(ids[0], ids, n, 1024, 1, 1);
	in.mem_total = in.mem_free = 1U << 30;
	in.guests = 99999;
	in.flags = 0xffff;
	for (i = 0; i < n; i++)
		gossip_merge(g, i, 1 + i, &in);
	gossip_set_self(g, &in, 5000000);
	len = gossip_build(g, ids[1], 5000000 + GOSSIP_MAX_AGE_MS, buf,
	    sizeof buf);
	ck_assert_uint_gt(len, 0);
	ck_assert_uint_le(len + FRAME_OVERHEAD, GOSSIP_MSG_MAX);
	gossip_free(g);
	free(ids);
}
END_TEST

/* --- the balancer's decision ----------------------------------- */

#define HOME	1
#define NOW	100000			/* ms; the processes began at 0 */
#define MiB	(1ULL << 20)
#define SEEDS	64			/* rounds with different draws */

static struct decide_node	last[8];	/* the view after a round */

/* Node id: speed, CPUs, runnable tasks and MiB free. */
static struct decide_node
dnode(uint32_t id, uint32_t speed, double cpus, double runnable,
    uint64_t mem)
{
	struct decide_node	v = { .id = id, .speed = speed, .cpus = cpus,
				    .runnable = runnable,
				    .mem_free = mem * MiB };

	return v;
}

/* A CPU-bound process on node where, begun long ago, never moved. */
static struct decide_proc
dproc(uint32_t where)
{
	struct decide_proc	p = { .where = where, .cpu_permille = 1000,
				    .need = 16 * MiB, .owner = 1000,
				    .away_left = UINT32_MAX };

	return p;
}

/* One round of the decision over a copy of nodes (left in last). */
static size_t
round_of(const struct decide_node *nodes, size_t n,
    const struct decide_proc *procs, size_t np, uint64_t seed,
    struct decide_move *moves)
{
	struct decide_view	w = { .home = HOME, .nodes = last, .n = n };

	memcpy(last, nodes, n * sizeof *nodes);
	return decide_round(&w, procs, np, NOW, &seed, moves);
}

/* Where one process goes in a round: 0 if it stays. */
static uint32_t
move_of(const struct decide_node *nodes, size_t n,
    const struct decide_proc *p, uint64_t seed)
{
	struct decide_move	mv;

	return round_of(nodes, n, p, 1, seed, &mv) == 1 ? mv.to : 0;
}

static uint32_t
best_of(const struct decide_node *nodes, size_t n,
    const struct decide_proc *p, uint64_t seed)
{
	struct decide_view	w = { .home = HOME, .n = n };

	memcpy(last, nodes, n * sizeof *nodes);
	w.nodes = last;
	return decide_best(&w, p, &seed);
}

/*
 * What a CPU-bound process can expect of a node: all of a CPU while there
 * is one free, else its share; twice the capacity, twice the share; our
 * own moves not yet in the load count.
 */
START_TEST(test_decide_speed)
{
	struct decide_node	one = { .id = 1, .runnable = 3, .cpus = 1,
				    .speed = 1000 };
	struct decide_node	two = one;

	two.cpus = 2;
	ck_assert(fabs(decide_speed(&one, 0) - 1000.0 / 3) < 1e-9);
	ck_assert(fabs(decide_speed(&one, 1) - 250) < 1e-9);
	ck_assert(fabs(decide_speed(&two, 1) - 500) < 1e-9);
	two.speed = 2000;
	ck_assert(fabs(decide_speed(&two, 1) - 1000) < 1e-9);
	one.runnable = 0;
	ck_assert(fabs(decide_speed(&one, 0) - 1000) < 1e-9);
	ck_assert(fabs(decide_speed(&one, 1) - 1000) < 1e-9);
	one.pending = 1;
	ck_assert(fabs(decide_speed(&one, 1) - 500) < 1e-9);
	one.cpus = 0.4;
	one.pending = -1;
	ck_assert(fabs(decide_speed(&one, 0) - 400) < 1e-9);
}
END_TEST

/*
 * A process of 4 busy threads, sharing 2 CPUs at home, needs 4 CPUs'
 * worth of room: 2 idle CPUs elsewhere gain it nothing, 8 do; and it
 * counts as 4 where it goes. Its CPU use says how many are busy.
 */
START_TEST(test_decide_threads)
{
	struct decide_node	v[] = { dnode(HOME, 1000, 2, 4, 4096),
				    dnode(2, 1000, 2, 0, 4096),
				    dnode(3, 1000, 8, 0, 4096) };
	struct decide_proc	p = dproc(HOME);
	uint64_t		s;

	ck_assert_uint_eq(decide_busy(3900, 4), 4);
	ck_assert_uint_eq(decide_busy(3900, 2), 2);
	ck_assert_uint_eq(decide_busy(100, 4), 1);
	ck_assert_uint_eq(decide_busy(1600, 8), 2);
	ck_assert_uint_eq(decide_busy(2000, 0), 1);
	p.cpu_permille = 2000;		/* two CPUs' worth, of 4 threads */
	p.busy = 4;
	for (s = 0; s < SEEDS; s++)
		ck_assert_uint_eq(move_of(v, 3, &p, s), 3);
	ck_assert(fabs(last[2].pending - 4) < 1e-9);
	/* without node 3, node 2 is no better than home */
	for (s = 0; s < SEEDS; s++)
		ck_assert_uint_eq(move_of(v, 2, &p, s), 0);
	/* one busy thread of the same would go to node 2 */
	p.cpu_permille = 1000;
	p.busy = 1;
	v[0].runnable = 2;
	ck_assert_uint_eq(move_of(v, 2, &p, 1), 0);
	v[0].runnable = 3;
	for (s = 0; s < SEEDS; s++)
		ck_assert_uint_eq(move_of(v, 2, &p, s), 2);
}
END_TEST

/* Alone at home, it moves only for a node that promises 25% more. */
START_TEST(test_decide_margin)
{
	struct decide_node	v[] = { dnode(HOME, 1000, 1, 1, 4096),
				    dnode(2, 1200, 1, 0, 4096) };
	struct decide_proc	p = dproc(HOME);
	uint64_t		s;

	for (s = 0; s < SEEDS; s++)
		ck_assert_uint_eq(move_of(v, 2, &p, s), 0);
	v[1].speed = 1400;
	for (s = 0; s < SEEDS; s++)
		ck_assert_uint_eq(move_of(v, 2, &p, s), 2);
}
END_TEST

/* A new process waits a second; one that moved stays four. */
START_TEST(test_decide_residency)
{
	struct decide_node	v[] = { dnode(HOME, 1000, 1, 0, 4096),
				    dnode(2, 1000, 1, 3, 4096) };
	struct decide_proc	p = dproc(2);

	p.moved_ms = NOW - 2000;	/* came to node 2 two seconds ago */
	ck_assert_uint_eq(move_of(v, 2, &p, 1), 0);
	p.moved_ms = NOW - 4000;
	ck_assert_uint_eq(move_of(v, 2, &p, 1), HOME);
	p = dproc(HOME);
	v[0].runnable = 3;
	v[1].runnable = 0;
	p.start_ms = p.moved_ms = NOW - 500;
	ck_assert_uint_eq(move_of(v, 2, &p, 1), 0);
	p.start_ms = p.moved_ms = NOW - 1000;
	ck_assert_uint_eq(move_of(v, 2, &p, 1), 2);
}
END_TEST

/* Never where its memory and the reserve do not fit. */
START_TEST(test_decide_memory_fit)
{
	struct decide_node	v[] = { dnode(HOME, 1000, 1, 3, 4096),
				    dnode(2, 4000, 4, 0, 100 + 32 - 1),
				    dnode(3, 1000, 1, 0, 4096) };
	struct decide_proc	p = dproc(HOME);
	uint64_t		s;

	p.need = 100 * MiB;
	for (s = 0; s < SEEDS; s++) {
		ck_assert_uint_eq(move_of(v, 3, &p, s), 3);
		ck_assert_uint_eq(best_of(v, 3, &p, s), 3);
	}
	v[1].mem_free = (100 + 32) * MiB;
	ck_assert_uint_eq(move_of(v, 3, &p, 1), 2);
	ck_assert_uint_eq(best_of(v, 3, &p, 1), 2);
}
END_TEST

/* A node short of memory sends one process a round, busy or not. */
START_TEST(test_decide_memory_short)
{
	struct decide_node	v[] = { dnode(HOME, 1000, 4, 1, 40),
				    dnode(2, 1000, 1, 0, 4096),
				    dnode(3, 1000, 1, 0, 4096),
				    dnode(4, 1000, 1, 0, 4096) };
	struct decide_proc	p[3];
	struct decide_move	mv[3];
	uint64_t		s;
	size_t			i;

	for (i = 0; i < 3; i++) {
		p[i] = dproc(HOME);
		p[i].cpu_permille = 10;		/* it mostly waits */
	}
	for (s = 0; s < SEEDS; s++)
		ck_assert_uint_eq(round_of(v, 4, p, 3, s, mv), 1);
	v[0].mem_free = 4096 * MiB;
	for (s = 0; s < SEEDS; s++)
		ck_assert_uint_eq(round_of(v, 4, p, 3, s, mv), 0);
}
END_TEST

/*
 * However many it could take, a node is sent one process a round; the
 * move counts into both loads at once.
 */
START_TEST(test_decide_one_per_node)
{
	struct decide_node	v[] = { dnode(HOME, 1000, 1, 4, 4096),
				    dnode(2, 1000, 4, 0, 4096) };
	struct decide_proc	p[4];
	struct decide_move	mv[4];
	size_t			i;

	for (i = 0; i < 4; i++)
		p[i] = dproc(HOME);
	ck_assert_uint_eq(round_of(v, 2, p, 4, 1, mv), 1);
	ck_assert_uint_eq(mv[0].from, HOME);
	ck_assert_uint_eq(mv[0].to, 2);
	ck_assert(fabs(last[1].pending - 1) < 1e-9);
	ck_assert(fabs(last[0].pending + 1) < 1e-9);
}
END_TEST

/* A move not yet in a node's load counts: it is not idle for us. */
START_TEST(test_decide_pending)
{
	struct decide_node	v[] = { dnode(HOME, 1000, 1, 2, 4096),
				    dnode(2, 1000, 1, 0, 4096) };
	struct decide_proc	p = dproc(HOME);

	ck_assert_uint_eq(move_of(v, 2, &p, 1), 2);
	v[1].pending = 1;
	ck_assert_uint_eq(move_of(v, 2, &p, 1), 0);
}
END_TEST

/*
 * Speeds and CPU counts differ: it goes where it runs fastest — not to the
 * fastest CPU, which is busy, nor to the idle node of many slow CPUs.
 */
START_TEST(test_decide_heterogeneous)
{
	/* Joined, home gives it 250, node 2 750, node 3 500, node 4 1500. */
	struct decide_node	v[] = { dnode(HOME, 1000, 1, 3, 4096),
				    dnode(2, 3000, 1, 3, 4096),
				    dnode(3, 500, 8, 0, 4096),
				    dnode(4, 1500, 2, 1, 4096) };
	struct decide_proc	p = dproc(HOME);
	uint64_t		s;

	for (s = 0; s < SEEDS; s++) {
		ck_assert_uint_eq(move_of(v, 4, &p, s), 4);
		ck_assert_uint_eq(best_of(v, 4, &p, s), 4);
	}
}
END_TEST

/* A blocked node, or one policy refuses, is never chosen. */
START_TEST(test_decide_blocked_target)
{
	struct decide_node	v[] = { dnode(HOME, 1000, 1, 3, 4096),
				    dnode(2, 4000, 4, 0, 4096),
				    dnode(3, 1000, 1, 0, 4096) };
	struct decide_proc	p = dproc(HOME);
	uint8_t			allowed[] = { 1, 1, 0 };
	uint64_t		s;

	v[1].flags = OSM__NODE_FLAG__NODE_BLOCK;
	for (s = 0; s < SEEDS; s++) {
		ck_assert_uint_eq(move_of(v, 3, &p, s), 3);
		ck_assert_uint_eq(best_of(v, 3, &p, s), 3);
	}
	p.allowed = allowed;
	for (s = 0; s < SEEDS; s++) {
		ck_assert_uint_eq(move_of(v, 3, &p, s), 0);
		ck_assert_uint_eq(best_of(v, 3, &p, s), HOME);
	}
}
END_TEST

/*
 * A blocked node sends our guest anywhere it fits, even slower, even if it
 * mostly waits; home always takes it. A blocked home keeps its own.
 */
START_TEST(test_decide_blocked_here)
{
	struct decide_node	v[] = { dnode(HOME, 1000, 1, 5, 4096),
				    dnode(2, 2000, 4, 0, 4096),
				    dnode(3, 500, 1, 0, 4096) };
	struct decide_proc	p = dproc(2);
	uint64_t		s;

	p.cpu_permille = 10;
	ck_assert_uint_eq(move_of(v, 3, &p, 1), 0);
	v[1].flags = OSM__NODE_FLAG__NODE_BLOCK;
	for (s = 0; s < SEEDS; s++)
		ck_assert_uint_eq(move_of(v, 3, &p, s), 3);
	v[2].mem_free = 0;
	v[0].mem_free = 0;
	ck_assert_uint_eq(move_of(v, 3, &p, 1), HOME);
	p = dproc(HOME);
	p.cpu_permille = 10;
	v[0] = dnode(HOME, 1000, 1, 1, 4096);
	v[0].flags = OSM__NODE_FLAG__NODE_BLOCK;
	v[1].flags = 0;
	ck_assert_uint_eq(move_of(v, 3, &p, 1), 0);
}
END_TEST

/* One that uses less than half its share of a CPU has little to gain. */
START_TEST(test_decide_waiting)
{
	struct decide_node	v[] = { dnode(HOME, 1000, 1, 2, 4096),
				    dnode(2, 2000, 1, 0, 4096) };
	struct decide_proc	p = dproc(HOME);

	p.cpu_permille = 240;		/* its share here: 500 */
	ck_assert_uint_eq(move_of(v, 2, &p, 1), 0);
	p.cpu_permille = 260;
	ck_assert_uint_eq(move_of(v, 2, &p, 1), 2);
}
END_TEST

/*
 * The gain over the time it has run must pay twice for moving its memory:
 * a young process with a big memory stays, an old one or a small one goes.
 */
START_TEST(test_decide_gain_cost)
{
	struct decide_node	v[] = { dnode(HOME, 1000, 1, 2, 8192),
				    dnode(2, 1000, 1, 0, 8192) };
	struct decide_proc	p = dproc(HOME);

	/* gain 1/2 for 2 s against 2 x (0.05 + 10.24) s */
	p.need = 1024 * MiB;
	p.start_ms = p.moved_ms = NOW - 2000;
	ck_assert_uint_eq(move_of(v, 2, &p, 1), 0);
	/* 1/2 for 100 s pays */
	p.start_ms = p.moved_ms = 0;
	ck_assert_uint_eq(move_of(v, 2, &p, 1), 2);
	/* and 1/2 for 2 s pays for 16 MiB */
	p.need = 16 * MiB;
	p.start_ms = p.moved_ms = NOW - 2000;
	ck_assert_uint_eq(move_of(v, 2, &p, 1), 2);
}
END_TEST

/* STAY keeps everything on its node, LSTAY only home's own there. */
START_TEST(test_decide_stay)
{
	struct decide_node	v[] = { dnode(HOME, 1000, 1, 3, 4096),
				    dnode(2, 1000, 1, 3, 4096),
				    dnode(3, 1000, 4, 0, 4096) };
	struct decide_proc	p = dproc(HOME);

	v[0].flags = OSM__NODE_FLAG__NODE_STAY;
	ck_assert_uint_eq(move_of(v, 3, &p, 1), 0);
	v[0].flags = OSM__NODE_FLAG__NODE_LSTAY;
	ck_assert_uint_eq(move_of(v, 3, &p, 1), 0);
	v[0].flags = 0;
	ck_assert_uint_eq(move_of(v, 3, &p, 1), 3);
	p = dproc(2);
	v[1].flags = OSM__NODE_FLAG__NODE_LSTAY;
	ck_assert_uint_eq(move_of(v, 3, &p, 1), 3);
	v[1].flags = OSM__NODE_FLAG__NODE_STAY;
	ck_assert_uint_eq(move_of(v, 3, &p, 1), 0);
}
END_TEST

/* An owner's limit on processes away holds within a round too. */
START_TEST(test_decide_away_limit)
{
	struct decide_node	v[] = { dnode(HOME, 1000, 1, 3, 4096),
				    dnode(2, 1000, 1, 0, 4096),
				    dnode(3, 1000, 1, 0, 4096) };
	struct decide_proc	p[2] = { dproc(HOME), dproc(HOME) };
	struct decide_move	mv[2];
	uint64_t		s;

	p[0].away_left = p[1].away_left = 1;
	for (s = 0; s < SEEDS; s++)
		ck_assert_uint_eq(round_of(v, 3, p, 2, s, mv), 1);
	p[1].owner = 1001;
	ck_assert_uint_eq(round_of(v, 3, p, 2, 1, mv), 2);
	p[0].away_left = 0;
	ck_assert_uint_eq(round_of(v, 3, p, 2, 1, mv), 1);
	ck_assert_uint_eq(mv[0].proc, 1);
}
END_TEST

/* Ties between nodes and the order of processes are drawn at random. */
START_TEST(test_decide_random)
{
	struct decide_node	v[] = { dnode(HOME, 1000, 1, 3, 4096),
				    dnode(2, 1000, 1, 0, 4096),
				    dnode(3, 1000, 1, 0, 4096) };
	struct decide_proc	p[2] = { dproc(HOME), dproc(HOME) };
	struct decide_move	mv[2];
	int			to[4] = { 0 }, best[4] = { 0 };
	int			first[2] = { 0 };
	uint64_t		s;

	for (s = 0; s < SEEDS; s++) {
		to[move_of(v, 3, &p[0], s)]++;
		best[best_of(v, 3, &p[0], s)]++;
	}
	ck_assert_int_eq(to[0] + to[HOME] + best[0] + best[HOME], 0);
	ck_assert_int_gt(to[2], SEEDS / 4);
	ck_assert_int_gt(to[3], SEEDS / 4);
	ck_assert_int_gt(best[2], SEEDS / 4);
	ck_assert_int_gt(best[3], SEEDS / 4);
	v[2].runnable = 3;	/* one node for two: who goes first? */
	for (s = 0; s < SEEDS; s++) {
		ck_assert_uint_eq(round_of(v, 3, p, 2, s, mv), 1);
		first[mv[0].proc]++;
	}
	ck_assert_int_gt(first[0], SEEDS / 4);
	ck_assert_int_gt(first[1], SEEDS / 4);
}
END_TEST

/* mosrun -b: home unless another node promises the margin. */
START_TEST(test_decide_best)
{
	struct decide_node	v[] = { dnode(HOME, 1000, 1, 0, 4096),
				    dnode(2, 1200, 1, 0, 4096) };
	struct decide_proc	p = dproc(HOME);

	ck_assert_uint_eq(best_of(v, 2, &p, 1), HOME);
	v[1].speed = 1400;
	ck_assert_uint_eq(best_of(v, 2, &p, 1), 2);
	p.away_left = 0;
	ck_assert_uint_eq(best_of(v, 2, &p, 1), HOME);
	ck_assert_uint_eq(best_of(v, 1, &p, 1), HOME);
}
END_TEST

static Suite *
mosd_suite(void)
{
	Suite	*s = suite_create("mosd");
	TCase	*tc;

	tc = tcase_create("gossip");
	tcase_add_test(tc, test_merge_newest_wins);
	tcase_add_test(tc, test_up_down);
	tcase_add_test(tc, test_timeout_scales);
	tcase_add_test(tc, test_target_cycle);
	tcase_add_test(tc, test_build_receive);
	tcase_add_test(tc, test_new_incarnation);
	tcase_add_test(tc, test_receive_hostile);
	tcase_add_test(tc, test_build_size_limit);
	tcase_add_test(tc, test_gossip_swap);
	suite_add_tcase(s, tc);

	check_mosd_probe(s);

	tc = tcase_create("decide");
	tcase_add_test(tc, test_decide_speed);
	tcase_add_test(tc, test_decide_margin);
	tcase_add_test(tc, test_decide_residency);
	tcase_add_test(tc, test_decide_memory_fit);
	tcase_add_test(tc, test_decide_memory_short);
	tcase_add_test(tc, test_decide_one_per_node);
	tcase_add_test(tc, test_decide_pending);
	tcase_add_test(tc, test_decide_heterogeneous);
	tcase_add_test(tc, test_decide_threads);
	tcase_add_test(tc, test_decide_blocked_target);
	tcase_add_test(tc, test_decide_blocked_here);
	tcase_add_test(tc, test_decide_waiting);
	tcase_add_test(tc, test_decide_gain_cost);
	tcase_add_test(tc, test_decide_stay);
	tcase_add_test(tc, test_decide_away_limit);
	tcase_add_test(tc, test_decide_random);
	tcase_add_test(tc, test_decide_best);
	suite_add_tcase(s, tc);

	check_mosd_quota(s);
	check_mosd_privmsg(s);
	check_mosd_guard(s);
	check_mosd_hashes(s);
	check_mosd_probe_thread(s);
	return s;
}

int
main(void)
{
	SRunner	*sr = srunner_create(mosd_suite());
	int	 failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? 0 : 1;
}
