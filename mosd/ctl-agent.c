/*
 * CTL_AGENT_HELLO, CTL_AGENT_STATUS: a process's agent presents itself and
 * keeps its connection open, then says what changes (see procs.c).
 */
#include <stdlib.h>
#include <unistd.h>

#include "mosd.h"
#include "proto/ctl.pb-c.h"

static int
ctl_agent_hello(struct mosd *m, struct peer *p, const Osm__CtlRequest *req,
    Osm__CtlReply *reply)
{
	if (req->agent == NULL) {
		reply->error = xstrdup("agent hello without agent");
		return -1;
	}
	if (procs_hello(m, p, req->agent, &reply->error) == -1)
		return -1;
	reply->has_self = 1;
	reply->self = m->conf->self;
	/* Our orders come from this process, which is not root. */
	reply->has_order_uid = 1;
	reply->order_uid = geteuid();
	return 0;
}

static int
ctl_agent_status(struct mosd *m, struct peer *p, const Osm__CtlRequest *req,
    Osm__CtlReply *reply)
{
	if (req->agent == NULL) {
		reply->error = xstrdup("agent status without agent");
		return -1;
	}
	return procs_status(m, p, req->agent, &reply->error);
}

const struct ctl_cmd ctl_agent_hello_cmd = {
	.type = OSM__CTL_TYPE__CTL_AGENT_HELLO,
	.name = "agent-hello",
	.exec = ctl_agent_hello,
};

const struct ctl_cmd ctl_agent_status_cmd = {
	.type = OSM__CTL_TYPE__CTL_AGENT_STATUS,
	.name = "agent-status",
	.exec = ctl_agent_status,
};
