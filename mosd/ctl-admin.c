/*
 * The node owner's commands (root only): CTL_FLAGS sets and clears this
 * node's flags (block: no new guests; stay: no automatic migration away;
 * lstay: this node's own processes stay), which travel in gossip so that
 * other homes' balancers respect them; CTL_EXPEL sends every guest home;
 * CTL_BRING calls every process homed here back. The last two answer at
 * once with how many processes were told; each move then takes its time.
 */
#include <stdlib.h>

#include "mosd.h"
#include "proto/ctl.pb-c.h"

#define CTL_FLAGS_ALL	(OSM__NODE_FLAG__NODE_BLOCK | \
			 OSM__NODE_FLAG__NODE_STAY | OSM__NODE_FLAG__NODE_LSTAY)

static int
ctl_flags(struct mosd *m, struct peer *p, const Osm__CtlRequest *req,
    Osm__CtlReply *reply)
{
	uint32_t	set = req->has_set_flags ? req->set_flags : 0;
	uint32_t	clear = req->has_clear_flags ? req->clear_flags : 0;

	if (((set | clear) & ~CTL_FLAGS_ALL) != 0) {
		xasprintf(&reply->error, "unknown node flags %#x",
		    (set | clear) & ~CTL_FLAGS_ALL);
		return -1;
	}
	m->flags = (m->flags | set) & ~clear;
	net_refresh_self(m);
	log_info("node flags:%s%s%s%s", m->flags == 0 ? " none" : "",
	    m->flags & OSM__NODE_FLAG__NODE_BLOCK ? " block" : "",
	    m->flags & OSM__NODE_FLAG__NODE_STAY ? " stay" : "",
	    m->flags & OSM__NODE_FLAG__NODE_LSTAY ? " lstay" : "");
	reply->has_flags = 1;
	reply->flags = m->flags;
	return 0;
}

/* Agents answer, each a line at most now and then: hundreds may fail. */
static struct log_limit ctl_admin_log;

/* How an order for a process ended: only failures are news. */
static void
ctl_admin_done(struct mosd *m, void *arg, Osm__CtlReply *answer,
    const char *why)
{
	char	*what = arg;

	if (answer == NULL || !answer->ok)
		log_limited_warnx(&ctl_admin_log, 0, "%s: %s", what,
		    answer == NULL ? why : answer->error != NULL ?
		    answer->error : "refused");
	free(what);
}

/* Order the agent of mp to move the process to node (0: home). */
static int
ctl_admin_order(struct mosd *m, struct mproc *mp, uint32_t node,
    const char *verb)
{
	char	*what, *cause = NULL;

	xasprintf(&what, "%s %u@%u", verb, mp->pid, mp->home);
	if (procs_order(m, mp, OSM__CTL_TYPE__CTL_MIGRATE, node,
	    rules_for(m, mp)->move,
	    ctl_admin_done, what, &cause) == -1) {
		log_limited_warnx(&ctl_admin_log, 0, "%s: %s", what, cause);
		free(cause);
		free(what);
		return -1;
	}
	return 0;
}

static int
ctl_expel(struct mosd *m, struct peer *p, const Osm__CtlRequest *req,
    Osm__CtlReply *reply)
{
	struct mproc	*mp;

	reply->has_count = 1;
	TAILQ_FOREACH(mp, &m->procs, entry)
		if (mp->role == OSM__CTL_ROLE__ROLE_GUEST &&
		    ctl_admin_order(m, mp, 0, "expelling") == 0)
			reply->count++;
	log_info("expel: %u guests sent home", reply->count);
	return 0;
}

static int
ctl_bring(struct mosd *m, struct peer *p, const Osm__CtlRequest *req,
    Osm__CtlReply *reply)
{
	struct mproc	*mp;

	reply->has_count = 1;
	TAILQ_FOREACH(mp, &m->procs, entry)
		if (mp->role == OSM__CTL_ROLE__ROLE_DEPUTY &&
		    mp->where != m->conf->self &&
		    ctl_admin_order(m, mp, m->conf->self, "bringing") == 0)
			reply->count++;
	log_info("bring: %u processes called home", reply->count);
	return 0;
}

const struct ctl_cmd ctl_flags_cmd = {
	.type = OSM__CTL_TYPE__CTL_FLAGS,
	.name = "flags",
	.root_only = 1,
	.exec = ctl_flags,
};

const struct ctl_cmd ctl_expel_cmd = {
	.type = OSM__CTL_TYPE__CTL_EXPEL,
	.name = "expel",
	.root_only = 1,
	.exec = ctl_expel,
};

const struct ctl_cmd ctl_bring_cmd = {
	.type = OSM__CTL_TYPE__CTL_BRING,
	.name = "bring",
	.root_only = 1,
	.exec = ctl_bring,
};
