/* CTL_PS: the migratable processes homed here, the caller's or all. */
#include <stdlib.h>

#include "mosd.h"
#include "proto/ctl.pb-c.h"

static int
ctl_ps(struct mosd *m, struct peer *p, const Osm__CtlRequest *req,
    Osm__CtlReply *reply)
{
	struct mproc	*mp;
	Osm__CtlProc	*procs;
	size_t		 n = 0;
	int		 all = req->has_all && req->all;

	TAILQ_FOREACH(mp, &m->procs, entry)
		n++;
	procs = xcalloc(n, sizeof *procs);
	reply->procs = xcalloc(n, sizeof *reply->procs);
	TAILQ_FOREACH(mp, &m->procs, entry) {
		if (mp->role != OSM__CTL_ROLE__ROLE_DEPUTY ||
		    (!all && mp->uid != p->uid))
			continue;
		osm__ctl_proc__init(&procs[reply->n_procs]);
		procs[reply->n_procs].pid = mp->pid;
		procs[reply->n_procs].uid = mp->uid;
		procs[reply->n_procs].user = mp->user;
		procs[reply->n_procs].where = mp->where;
		procs[reply->n_procs].state = mp->state;
		procs[reply->n_procs].cpu_permille = mp->cpu_permille;
		procs[reply->n_procs].has_threads = 1;
		procs[reply->n_procs].threads = mp->threads > 0 ?
		    mp->threads : 1;
		procs[reply->n_procs].rss_bytes = mp->rss;
		procs[reply->n_procs].command = mp->command != NULL ?
		    mp->command : "";
		procs[reply->n_procs].why = mp->why;
		procs[reply->n_procs].n_history = mp->nhistory;
		procs[reply->n_procs].history = mp->history;
		procs[reply->n_procs].checkpoints = mp->ckpt;
		reply->procs[reply->n_procs] = &procs[reply->n_procs];
		reply->n_procs++;
	}
	if (reply->n_procs == 0) {	/* control_reply_free frees procs[0] */
		free(procs);
		free(reply->procs);
		reply->procs = NULL;
	}
	reply->has_self = 1;
	reply->self = m->conf->self;
	return 0;
}

const struct ctl_cmd ctl_ps_cmd = {
	.type = OSM__CTL_TYPE__CTL_PS,
	.name = "ps",
	.exec = ctl_ps,
};
