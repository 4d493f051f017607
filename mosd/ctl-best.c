/*
 * CTL_BEST: where a process about to start would run fastest (mosrun -b),
 * by the balancer's measure, among the nodes its owner's policy allows
 * with the memory it says it needs. Asked by the process's deputy.
 */
#include <stdlib.h>

#include "mosd.h"
#include "proto/ctl.pb-c.h"

static int
ctl_best(struct mosd *m, struct peer *p, const Osm__CtlRequest *req,
    Osm__CtlReply *reply)
{
	struct mproc	*mp = p->arg;

	if (mp == NULL || mp->role != OSM__CTL_ROLE__ROLE_DEPUTY) {
		reply->error = xstrdup("only a deputy may ask for the best node");
		return -1;
	}
	reply->has_node = 1;
	reply->node = balance_best(m, mp, req->has_mem_need ? req->mem_need :
	    mp->mem_need);
	return 0;
}

const struct ctl_cmd ctl_best_cmd = {
	.type = OSM__CTL_TYPE__CTL_BEST,
	.name = "best",
	.root_only = 0,
	.exec = ctl_best,
};
