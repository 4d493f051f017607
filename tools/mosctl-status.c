/*
 * mosctl status: the node's view of the cluster, one line per node, or
 * with --json one document (lib/ctl-json.c).
 */
#include <stdio.h>
#include <stdlib.h>

#include "mosctl.h"
#include "proto/ctl.pb-c.h"

static void
mosctl_status_num(char *buf, size_t size, int known, double v, int prec)
{
	if (known)
		snprintf(buf, size, "%.*f", prec, v);
	else
		snprintf(buf, size, "-");
}

static void
mosctl_status_node(const Osm__CtlNode *n)
{
	enum ctl_node_state	 st = ctl_node_state(n->up, n->known);
	char			 load[16], cpus[16], speed[16], mfree[16];
	char			 mtotal[16], guests[16], age[16], sfree[16];
	char			 stotal[16], *flags;

	mosctl_status_num(load, sizeof load, n->has_load, n->load / 100.0, 2);
	mosctl_status_num(cpus, sizeof cpus, n->has_cpus, n->cpus / 100.0, 2);
	mosctl_status_num(speed, sizeof speed, n->has_speed, n->speed, 0);
	mosctl_status_num(mfree, sizeof mfree, n->has_mem_free, n->mem_free,
	    0);
	mosctl_status_num(mtotal, sizeof mtotal, n->has_mem_total,
	    n->mem_total, 0);
	mosctl_status_num(guests, sizeof guests, n->has_guests, n->guests, 0);
	/* whole seconds, rounded down */
	mosctl_status_num(age, sizeof age, n->has_age_ms, n->age_ms / 1000,
	    0);
	mosctl_status_num(sfree, sizeof sfree, n->has_swap_free, n->swap_free,
	    0);
	mosctl_status_num(stotal, sizeof stotal, n->has_swap_total,
	    n->swap_total, 0);
	/* one word, so that the line splits into its columns */
	flags = ctl_flags_text(n->has_flags ? n->flags : 0, ",", "-");
	printf("%-5u %-15s %-7s %6s %6s %6s %8s %8s %6s %4s %-11s %8s %9s\n",
	    n->node, n->address, ctl_node_state_name(st), load, cpus, speed,
	    mfree, mtotal, guests, age, flags, sfree, stotal);
	free(flags);
}

static int
mosctl_status(const char *sock, int argc, char **argv)
{
	Osm__CtlReply	*r;
	char		*flags;
	size_t		 i;
	int		 json, rc;

	if ((json = mosctl_json_arg(argc, argv)) == -1) {
		fprintf(stderr, "usage: mosctl status [--json]\n");
		return 2;
	}
	if ((r = mosctl_call(sock, OSM__CTL_TYPE__CTL_STATUS)) == NULL)
		return 1;
	if (json) {
		rc = ctl_json_print(stdout, ctl_json_status(r)) == 0 ? 0 : 1;
		ctl_reply_free(r);
		return rc;
	}
	/* Scripts read the columns by position: new ones go last. */
	printf("%-5s %-15s %-7s %6s %6s %6s %8s %8s %6s %4s %-11s %8s %9s\n",
	    "NODE", "ADDRESS", "STATE", "LOAD", "CPUS", "SPEED", "MEMFREE",
	    "MEMTOTAL", "GUESTS", "AGE", "FLAGS", "SWAPFREE", "SWAPTOTAL");
	for (i = 0; i < r->n_nodes; i++)
		mosctl_status_node(r->nodes[i]);
	if (r->has_self) {
		printf("this node: %u", r->self);
		if (r->has_flags) {
			flags = ctl_flags_text(r->flags, " ", "none");
			printf(", flags: %s", flags);
			free(flags);
		}
		printf("\n");
	}
	fflush(stdout);
	toolclock_mark("printed");
	ctl_reply_free(r);
	return 0;
}

const struct mosctl_cmd mosctl_status_cmd = {
	.name = "status",
	.usage = "[--json]",
	.help = "the cluster as this node sees it",
	.exec = mosctl_status,
};
