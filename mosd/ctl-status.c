/* CTL_STATUS: the cluster as this node sees it, one entry per node. */
#include <stdlib.h>

#include "mosd.h"
#include "proto/ctl.pb-c.h"

static int
ctl_status(struct mosd *m, struct peer *p, const Osm__CtlRequest *req,
    Osm__CtlReply *reply)
{
	struct gossip			*g = m->gossip;
	const struct gossip_entry	*e;
	const struct conf_node		*cn;
	Osm__CtlNode			*nodes;
	uint64_t			 now = now_ms();
	size_t				 i;

	nodes = xcalloc(g->n, sizeof *nodes);
	reply->nodes = xcalloc(g->n, sizeof *reply->nodes);
	reply->n_nodes = g->n;
	reply->has_self = reply->has_flags = 1;
	reply->self = g->self;
	reply->flags = m->flags;
	for (i = 0; i < g->n; i++) {
		e = &g->view[i];
		osm__ctl_node__init(&nodes[i]);
		reply->nodes[i] = &nodes[i];
		nodes[i].node = g->ids[i];
		cn = conf_find(m->conf, g->ids[i]);
		nodes[i].address = (char *)cn->addr;
		nodes[i].up = gossip_up(g, i, now);
		nodes[i].known = e->stamp != 0;
		if (!nodes[i].known)
			continue;
		nodes[i].has_load = nodes[i].has_cpus = nodes[i].has_speed = 1;
		nodes[i].has_mem_total = nodes[i].has_mem_free = 1;
		nodes[i].has_guests = nodes[i].has_age_ms = 1;
		nodes[i].has_flags = 1;
		nodes[i].has_swap_total = nodes[i].has_swap_free = 1;
		nodes[i].load = e->info.load;
		nodes[i].cpus = e->info.cpus;
		nodes[i].speed = e->info.speed;
		nodes[i].mem_total = e->info.mem_total;
		nodes[i].mem_free = e->info.mem_free;
		nodes[i].guests = e->info.guests;
		nodes[i].flags = e->info.flags;
		nodes[i].swap_total = e->info.swap_total;
		nodes[i].swap_free = e->info.swap_free;
		nodes[i].age_ms = now - e->stamp > UINT32_MAX ? UINT32_MAX :
		    now - e->stamp;
	}
	return 0;
}

const struct ctl_cmd ctl_status_cmd = {
	.type = OSM__CTL_TYPE__CTL_STATUS,
	.name = "status",
	.root_only = 0,
	.exec = ctl_status,
};
