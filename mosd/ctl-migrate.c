/*
 * CTL_MIGRATE: move a process homed here to a node, or home; CTL_CHECKPOINT:
 * checkpoint it now. Allowed to the process's owner and to root. mosd
 * checks what it can (the node exists, is up, is not where the process
 * already is, the policy allows it) and orders the process's deputy, which
 * does the work; the deputy's answer is the caller's.
 */
#include <stdlib.h>

#include "mosd.h"
#include "proto/ctl.pb-c.h"

static void
ctl_migrate_done(struct mosd *m, void *arg, Osm__CtlReply *answer,
    const char *why)
{
	struct peer	*caller = arg;
	Osm__CtlReply	 reply = OSM__CTL_REPLY__INIT;

	if (!caller->dead) {
		reply.ok = answer != NULL && answer->ok;
		if (answer == NULL)
			reply.error = (char *)why;
		else if (!answer->ok)
			reply.error = answer->error != NULL ? answer->error :
			    "the deputy refused without a reason";
		else
			reply.path = answer->path;
		control_reply(caller, &reply);
	}
	peer_unref(caller);
}

/* May mp go to node now, as far as this node knows? */
static int
ctl_migrate_may(struct mosd *m, const struct mproc *mp, uint32_t node,
    char **error)
{
	ssize_t	idx;

	if ((idx = gossip_index(m->gossip, node)) == -1) {
		xasprintf(error, "node %u is not in the cluster map", node);
		return -1;
	}
	if (!gossip_up(m->gossip, idx, now_ms())) {
		xasprintf(error, "node %u is down", node);
		return -1;
	}
	if (node == mp->where) {
		xasprintf(error, "process %u is already %s", mp->pid,
		    node == m->conf->self ? "home" : "there");
		return -1;
	}
	return rules_may_send(m, mp, node, error);
}

static int
ctl_migrate(struct mosd *m, struct peer *p, const Osm__CtlRequest *req,
    Osm__CtlReply *reply)
{
	struct mproc	*mp;
	uint32_t	 node;
	int		 ckpt = req->type == OSM__CTL_TYPE__CTL_CHECKPOINT;

	if (!req->has_pid || (!ckpt && !req->has_node)) {
		reply->error = xstrdup("migrate needs a pid and a node");
		return -1;
	}
	node = req->node == 0 ? m->conf->self : req->node;
	if ((mp = procs_deputy(m, req->pid)) == NULL) {
		xasprintf(&reply->error, "process %u is not a migratable "
		    "process of this node", req->pid);
		return -1;
	}
	if (p->uid != 0 && p->uid != mp->uid) {
		xasprintf(&reply->error, "process %u belongs to %s: only its "
		    "owner or root may %s it", req->pid, mp->user, ckpt ?
		    "checkpoint" : "move");
		return -1;
	}
	if (!ckpt && ctl_migrate_may(m, mp, node, &reply->error) == -1)
		return -1;
	/* one that does not say how: as its owner's rule says (moves) */
	if (procs_order(m, mp, req->type, node, req->has_move ? (int)req->move :
	    rules_for(m, mp)->move, ctl_migrate_done, p,
	    &reply->error) == -1)
		return -1;
	peer_ref(p);
	return CTL_DEFERRED;
}

const struct ctl_cmd ctl_migrate_cmd = {
	.type = OSM__CTL_TYPE__CTL_MIGRATE,
	.name = "migrate",
	.exec = ctl_migrate,
};

const struct ctl_cmd ctl_checkpoint_cmd = {
	.type = OSM__CTL_TYPE__CTL_CHECKPOINT,
	.name = "checkpoint",
	.exec = ctl_migrate,
};
