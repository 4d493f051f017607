/*
 * Sampling: ask the local mosd for the cluster's status and turn its reply
 * into a plain struct the renderers can use without knowing the wire types.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lib/osm.h"
#include "mon/mon.h"
#include "proto/ctl.pb-c.h"

static double
sample_figure(protobuf_c_boolean has, uint32_t v, double unit)
{
	return has ? v / unit : NAN;
}

static int
sample_cmp(const void *a, const void *b)
{
	const struct mon_node	*x = a, *y = b;

	return (x->id > y->id) - (x->id < y->id);
}

/*
 * Fill s from a status reply. On failure s is left as it was, so a monitor
 * can keep showing the last good sample beside the error.
 */
int
sample_convert(const Osm__CtlReply *r, struct mon_sample *s, char **cause)
{
	struct mon_node	*nodes, *n;
	Osm__CtlNode	*c;
	size_t		 i, active = 0;

	if (!r->ok) {
		if (r->error != NULL && *r->error != '\0')
			xasprintf(cause, "mosd: %s", r->error);
		else
			xasprintf(cause, "mosd refused the status request");
		return -1;
	}
	if (r->n_nodes > OSM_MAX_NODES) {
		xasprintf(cause, "mosd sent %zu nodes, more than the %u a "
		    "cluster can have", r->n_nodes, OSM_MAX_NODES);
		return -1;
	}
	nodes = xcalloc(r->n_nodes, sizeof *nodes);
	for (i = 0; i < r->n_nodes; i++) {
		c = r->nodes[i];
		n = &nodes[i];
		n->id = c->node;
		n->state = ctl_node_state(c->up, c->known);
		n->up = n->state == CTL_NODE_UP;
		/* What a down node last reported is stale: show none of it. */
		if (!n->up) {
			n->load = n->cpus = n->speed = NAN;
			n->mem_total = n->mem_free = NAN;
			n->swap_total = n->swap_free = n->guests = NAN;
			continue;
		}
		active++;
		n->load = sample_figure(c->has_load, c->load, 100);
		n->cpus = sample_figure(c->has_cpus, c->cpus, 100);
		n->speed = sample_figure(c->has_speed, c->speed, 1);
		n->mem_total = sample_figure(c->has_mem_total, c->mem_total, 1);
		n->mem_free = sample_figure(c->has_mem_free, c->mem_free, 1);
		n->swap_total = sample_figure(c->has_swap_total, c->swap_total,
		    1);
		n->swap_free = sample_figure(c->has_swap_free, c->swap_free, 1);
		n->guests = sample_figure(c->has_guests, c->guests, 1);
		n->flags = c->has_flags ? c->flags : 0;
	}
	qsort(nodes, r->n_nodes, sizeof *nodes, sample_cmp);
	for (i = 1; i < r->n_nodes; i++) {
		if (nodes[i].id == nodes[i - 1].id) {
			xasprintf(cause, "mosd sent node %u twice",
			    nodes[i].id);
			free(nodes);
			return -1;
		}
	}
	free(s->nodes);
	s->nodes = nodes;
	s->nnodes = r->n_nodes;
	s->active = active;
	s->self = r->has_self ? r->self : 0;
	return 0;
}

/* One status round trip to the mosd listening on path. */
int
sample_fetch(const char *path, struct mon_sample *s, char **cause)
{
	Osm__CtlRequest	 req = OSM__CTL_REQUEST__INIT;
	Osm__CtlReply	*reply;
	int		 rc;

	req.type = OSM__CTL_TYPE__CTL_STATUS;
	if ((reply = ctl_call(path, &req, cause)) == NULL)
		return -1;
	rc = sample_convert(reply, s, cause);
	ctl_reply_free(reply);
	if (rc == 0)
		s->when = time(NULL);
	return rc;
}

void
sample_clear(struct mon_sample *s)
{
	free(s->nodes);
	memset(s, 0, sizeof *s);
}

/* How many nodes are shown: all of them, or the up ones only. */
size_t
sample_visible(const struct mon_sample *s, int hide_down)
{
	size_t	i, n = 0;

	for (i = 0; i < s->nnodes; i++) {
		if (s->nodes[i].up || !hide_down)
			n++;
	}
	return n;
}
