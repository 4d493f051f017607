/*
 * CTL_CONNECT: a deputy asks for a session to a node for its process. Only
 * the process's own deputy, on its agent connection, may ask; the answer
 * (later) carries the connected socket and the session key.
 */
#include <stdlib.h>

#include "mosd.h"
#include "proto/ctl.pb-c.h"

static int
ctl_session(struct mosd *m, struct peer *p, const Osm__CtlRequest *req,
    Osm__CtlReply *reply)
{
	struct mproc	*mp = p->arg;
	ssize_t		 idx;

	if (!req->has_pid || !req->has_node) {
		reply->error = xstrdup("connect needs a pid and a node");
		return -1;
	}
	if (mp == NULL || mp->role != OSM__CTL_ROLE__ROLE_DEPUTY ||
	    mp->pid != req->pid) {
		xasprintf(&reply->error, "only the deputy of process %u may "
		    "ask for its session", req->pid);
		return -1;
	}
	if (req->node == m->conf->self ||
	    (idx = gossip_index(m->gossip, req->node)) == -1) {
		xasprintf(&reply->error, "node %u is not another node of the "
		    "cluster", req->node);
		return -1;
	}
	if (!gossip_up(m->gossip, idx, now_ms())) {
		xasprintf(&reply->error, "node %u is down", req->node);
		return -1;
	}
	if (rules_may_send(m, mp, req->node, &reply->error) == -1)
		return -1;
	if (broker_connect(m, p, req->pid, req->node, &reply->error) == -1)
		return -1;
	return CTL_DEFERRED;
}

const struct ctl_cmd ctl_connect_cmd = {
	.type = OSM__CTL_TYPE__CTL_CONNECT,
	.name = "connect",
	.exec = ctl_session,
};
