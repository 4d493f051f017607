/*
 * Is the lab ready? `moslab up` and `moslab start K` return only once
 * every node whose mosd runs sees every other such node up (the waiting
 * is mosd_wait_cluster's, moslab-mosd.c). A socket alone is not enough:
 * until gossip has gone round a node knows nothing of the others, and
 * `mosmigrate` right after `moslab up` would be told "node 2 is down".
 *
 * Each mosd is asked for its view over its own control socket, reached
 * through its node's root (/proc/INIT/root), as `mosctl status` would.
 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "lib/osm.h"
#include "moslab.h"
#include "proto/ctl.pb-c.h"

/*
 * Does node k see every node of want[0..n) up? If not, *cause names those
 * it does not see and says how it sees them (down, unknown).
 */
int
ready_node(struct lab *lab, unsigned k, const unsigned *want, size_t n,
    char **cause)
{
	Osm__CtlRequest	 req = OSM__CTL_REQUEST__INIT;
	Osm__CtlReply	*r;
	const char	*state;
	char		*sock, *why = NULL, *list = NULL, *t;
	pid_t		 init;
	size_t		 i, j, missing = 0;
	int		 fd;

	if ((fd = node_pidfd(lab, k, &init)) == -1) {
		xasprintf(cause, "node %u died", k);
		return -1;
	}
	close(fd);
	xasprintf(&sock, "/proc/%d/root%s", (int)init, lab->sockpath);
	req.type = OSM__CTL_TYPE__CTL_STATUS;
	r = ctl_call(sock, &req, &why);
	free(sock);
	if (r == NULL) {
		xasprintf(cause, "mosd on node %u does not answer: %s", k, why);
		free(why);
		return -1;
	}
	for (i = 0; i < n; i++) {
		for (j = 0; j < r->n_nodes; j++)
			if (r->nodes[j]->node == want[i])
				break;
		if (j == r->n_nodes)
			state = "not in its map";
		else if (r->nodes[j]->up && r->nodes[j]->known)
			continue;
		else
			state = ctl_node_state_name(ctl_node_state(
			    r->nodes[j]->up, r->nodes[j]->known));
		t = list;
		xasprintf(&list, "%s%s%u (%s)", t != NULL ? t : "",
		    t != NULL ? ", " : "", want[i], state);
		free(t);
		missing++;
	}
	ctl_reply_free(r);
	if (missing == 0)
		return 0;
	xasprintf(cause, "node %u does not see node%s %s up", k,
	    missing > 1 ? "s" : "", list);
	free(list);
	return -1;
}
