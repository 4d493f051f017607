/*
 * mosgossip-sim: run mosd's own gossip code (mosd/gossip.c) for N nodes over
 * a simulated network and report how fresh every node's view stays.
 *
 * Every node sends once per interval at its own random phase; a message is
 * delivered the moment it is sent. Ages are measured in intervals over all
 * ordered pairs (v, u), v != u, once the run has settled.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/osm.h"
#include "mosd/gossip.h"

#define SIM_INTERVAL_MS	1000

struct sim_node {
	struct gossip	*g;
	uint64_t	 phase;	/* ms into each interval at which it sends */
};

static void __attribute__((noreturn))
usage(int status)
{
	fprintf(status == 0 ? stdout : stderr,
	    "usage: mosgossip-sim --nodes N [--window W] [--rounds R] "
	    "[--seed S]\n"
	    "Simulate load gossip with mosd's gossip code and print the age of\n"
	    "every node's knowledge of every other node, in gossip intervals.\n"
	    "\n"
	    "  --nodes N    cluster size (2 to 65535)\n"
	    "  --window W   entries relayed per message (default %d, as mosd;\n"
	    "               the 1400-byte datagram limit may cut it shorter)\n"
	    "  --rounds R   intervals to run (default 3N, at least 2N+1)\n"
	    "  --seed S     random seed (default 1)\n"
	    "\n"
	    "The last line is: nodes=N window=W avg_age=X max_age=Y msg_bytes=Z\n",
	    CONF_DEFAULT_WINDOW);
	exit(status);
}

static uint64_t
opt_number(const char *name, const char *s, uint64_t min, uint64_t max)
{
	uint64_t	v;

	if (parse_uint(s, min, max, &v) == -1) {
		fprintf(stderr, "mosgossip-sim: %s: expected a number from "
		    "%llu to %llu, found '%s'\n", name,
		    (unsigned long long)min, (unsigned long long)max, s);
		exit(2);
	}
	return v;
}

static int
cmp_phase(const void *a, const void *b)
{
	const struct sim_node	*x = *(struct sim_node *const *)a;
	const struct sim_node	*y = *(struct sim_node *const *)b;

	return x->phase < y->phase ? -1 : x->phase > y->phase;
}

int
main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "nodes", required_argument, NULL, 'n' },
		{ "window", required_argument, NULL, 'w' },
		{ "rounds", required_argument, NULL, 'r' },
		{ "seed", required_argument, NULL, 's' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	struct sim_node		*nodes, **order;
	struct gossip_info	 info;
	uint32_t		*ids, target, sender;
	uint64_t		 n = 0, window = CONF_DEFAULT_WINDOW, rounds = 0;
	uint64_t		 seed = 1;
	uint64_t		 rng, round, now, settle, every, samples = 0;
	uint64_t		 age, max_age = 0;
	uint8_t			 buf[GOSSIP_MSG_MAX];
	size_t			 i, v, u, len, msg_max = 0, entries = 0;
	double			 sum = 0, avg;
	ssize_t			 tidx;
	enum gossip_result	 rc;
	int			 ch;

	while ((ch = getopt_long(argc, argv, "n:w:r:s:h", longopts,
	    NULL)) != -1) {
		switch (ch) {
		case 'n':
			n = opt_number("--nodes", optarg, 2, OSM_MAX_NODES);
			break;
		case 'w':
			window = opt_number("--window", optarg, 0, 1024);
			break;
		case 'r':
			rounds = opt_number("--rounds", optarg, 1, 1U << 30);
			break;
		case 's':
			seed = opt_number("--seed", optarg, 0, UINT64_MAX);
			break;
		case 'h':
			usage(0);
		default:
			usage(2);
		}
	}
	if (optind != argc || n == 0)
		usage(2);
	if (rounds == 0)
		rounds = 3 * n;
	if (rounds <= 2 * n) {
		fprintf(stderr, "mosgossip-sim: --rounds must be more than 2N "
		    "(%llu) so that ages settle before they are measured\n",
		    (unsigned long long)(2 * n));
		exit(2);
	}
	settle = 2 * n;
	/* A full scan costs N^2: sample often enough for ~1000 samples. */
	every = (rounds - settle) / 1000;
	if (every == 0)
		every = 1;

	rng = seed;
	ids = xcalloc(n, sizeof *ids);
	for (i = 0; i < n; i++)
		ids[i] = i + 1;
	nodes = xcalloc(n, sizeof *nodes);
	order = xcalloc(n, sizeof *order);
	for (i = 0; i < n; i++) {
		nodes[i].g = gossip_new(i + 1, ids, n, window, 1,
		    rand_next(&rng));
		nodes[i].g->timeout_ms = UINT64_MAX;
		nodes[i].phase = rand_below(&rng, SIM_INTERVAL_MS);
		order[i] = &nodes[i];
	}
	qsort(order, n, sizeof *order, cmp_phase);

	memset(&info, 0, sizeof info);
	info.cpus = 100;
	info.speed = 1000;
	info.mem_total = 4096;
	info.mem_free = 2048;

	for (round = 1; round <= rounds; round++) {
		for (i = 0; i < n; i++) {
			struct sim_node *s = order[i];

			now = round * SIM_INTERVAL_MS + s->phase;
			info.load = (s->g->self * 37 + round) % 400;
			gossip_set_self(s->g, &info, now);
			target = gossip_next_target(s->g);
			len = gossip_build(s->g, target, now, buf, sizeof buf);
			if (len == 0)
				fatalx("message did not fit");
			if (len + FRAME_OVERHEAD > msg_max)
				msg_max = len + FRAME_OVERHEAD;
			if (s->g->last_entries > entries)
				entries = s->g->last_entries;
			tidx = gossip_index(s->g, target);
			rc = gossip_receive(nodes[tidx].g, now, buf, len,
			    s->g->self, &sender);
			if (rc != GOSSIP_OK)
				fatalx("node %u refused a message from %u: %s",
				    target, s->g->self, gossip_strerror(rc));
		}
		if (round <= settle || (round - settle) % every != 0)
			continue;
		/* Measure at the end of the round. */
		now = (round + 1) * SIM_INTERVAL_MS;
		for (v = 0; v < n; v++) {
			for (u = 0; u < n; u++) {
				if (u == v)
					continue;
				age = now - nodes[v].g->view[u].stamp;
				sum += (double)age;
				if (age > max_age)
					max_age = age;
			}
		}
		samples++;
	}

	avg = sum / ((double)samples * n * (n - 1)) / SIM_INTERVAL_MS;
	/* Each message carries at most `entries`: no view can be fresher. */
	printf("entries_per_message=%zu floor=%.2f\n", entries,
	    (double)n / (2.0 * (double)entries));
	printf("nodes=%llu window=%llu avg_age=%.2f max_age=%.2f "
	    "msg_bytes=%zu\n", (unsigned long long)n,
	    (unsigned long long)window, avg,
	    (double)max_age / SIM_INTERVAL_MS, msg_max);

	for (i = 0; i < n; i++)
		gossip_free(nodes[i].g);
	free(nodes);
	free(order);
	free(ids);
	return 0;
}
