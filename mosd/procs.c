/*
 * The migratable processes this node knows: those homed here, each held by
 * its deputy agent, and the guests it runs for other nodes, each served by
 * a guest agent. Agents present themselves on a control connection and
 * keep it open; an entry lives as long as that connection, which from then
 * on counts as an agent's (quota.h), not a tool's.
 */
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mosd.h"
#include "proto/ctl.pb-c.h"

struct mproc *
procs_find(struct mosd *m, int role, uint32_t home, uint32_t pid)
{
	struct mproc	*p;

	TAILQ_FOREACH(p, &m->procs, entry)
		if (p->role == role && p->home == home && p->pid == pid)
			return p;
	return NULL;
}

/* A deputy of ours for pid, or NULL. */
struct mproc *
procs_deputy(struct mosd *m, uint32_t pid)
{
	return procs_find(m, OSM__CTL_ROLE__ROLE_DEPUTY, m->conf->self, pid);
}

size_t
procs_guests(struct mosd *m)
{
	struct mproc	*p;
	size_t		 n = 0;

	TAILQ_FOREACH(p, &m->procs, entry)
		n += p->role == OSM__CTL_ROLE__ROLE_GUEST;
	return n;
}

static void
procs_history_free(struct mproc *p)
{
	size_t	i;

	for (i = 0; i < p->nhistory; i++)
		free(p->history[i]);
	free(p->history);
	free(p->why);
	p->history = NULL;
	p->nhistory = 0;
	p->why = NULL;
}

static void
procs_ckpt_free(struct mproc *p)
{
	if (p->ckpt == NULL)
		return;
	free(p->ckpt->last_path);
	free(p->ckpt->failed_why);
	free(p->ckpt);
	p->ckpt = NULL;
}

/* What a deputy says of its checkpoints, its strings within bounds. */
static void
procs_ckpt(struct mproc *p, const Osm__CtlCheckpoints *c)
{
	procs_ckpt_free(p);
	if (c == NULL)
		return;
	p->ckpt = xmalloc(sizeof *p->ckpt);
	osm__ctl_checkpoints__init(p->ckpt);
	p->ckpt->has_last_ms = c->has_last_ms;
	p->ckpt->last_ms = c->last_ms;
	if (c->last_path != NULL)
		p->ckpt->last_path = xstrndup(c->last_path, 256);
	p->ckpt->has_failed_ms = c->has_failed_ms;
	p->ckpt->failed_ms = c->failed_ms;
	if (c->failed_why != NULL)
		p->ckpt->failed_why = xstrndup(c->failed_why, 256);
	p->ckpt->written = c->written;
	p->ckpt->failed = c->failed;
}

static void
procs_free(struct mproc *p)
{
	procs_history_free(p);
	procs_ckpt_free(p);
	policy_groups_free(p->groups, p->ngroups);
	free(p->command);
	free(p->socket);
	free(p->nodes);
	free(p);
}

static void
procs_agent_closed(struct peer *peer)
{
	struct mosd	*m = peer->mosd;
	struct mproc	*p = peer->arg;

	log_debug("%s agent of %u@%u gone", p->role ==
	    OSM__CTL_ROLE__ROLE_DEPUTY ? "deputy" : "guest", p->pid, p->home);
	TAILQ_REMOVE(&m->procs, p, entry);
	procs_free(p);
}

/*
 * A return home of the process's own, counted by its reason: the words
 * before any detail (a file mapping's path), among at most MOSD_HOMES.
 */
static void
procs_count_home(struct mosd *m, const char *reason)
{
	char	name[sizeof m->homes[0].name];
	size_t	i, n = strcspn(reason, ":(");

	while (n > 0 && reason[n - 1] == ' ')
		n--;
	snprintf(name, sizeof name, "home: %.*s", (int)n, reason);
	for (i = 0; i < m->nhomes; i++) {
		if (strcmp(m->homes[i].name, name) == 0)
			break;
	}
	if (i == m->nhomes) {
		if (m->nhomes == MOSD_HOMES)
			i = MOSD_HOMES - 1;	/* the last counts the rest */
		else
			snprintf(m->homes[m->nhomes++].name, sizeof name, "%s",
			    name);
		if (i == MOSD_HOMES - 1)
			snprintf(m->homes[i].name, sizeof name, "home: other");
	}
	m->homes[i].n++;
}

/* What a deputy says of why its process is where it is. */
static void
procs_why(struct mosd *m, struct mproc *p, const Osm__CtlAgent *a)
{
	size_t	i;

	/* Counted as they come; a deputy met anew (hello) brings its old. */
	if (a->has_homecomings && a->homecomings > p->homecomings) {
		if (p->agent != NULL)
			procs_count_home(m, a->home_why != NULL ?
			    a->home_why : "no reason given");
		p->homecomings = a->homecomings;
	}
	procs_history_free(p);
	if (a->why != NULL)
		p->why = xstrndup(a->why, 256);
	p->nhistory = a->n_history < 16 ? a->n_history : 16;
	p->history = xcalloc(p->nhistory + 1, sizeof *p->history);
	for (i = 0; i < p->nhistory; i++)
		p->history[i] = xstrndup(a->history[i], 256);
}

/*
 * The nodes a deputy's process may run on (mosrun -n): every one in the
 * map, or the agent is refused.
 */
static int
procs_nodes(struct mosd *m, struct mproc *p, const Osm__CtlAgent *a,
    char **cause)
{
	size_t	i;

	if (a->n_nodes > m->conf->nnodes) {
		xasprintf(cause, "%zu nodes listed, the map has %zu",
		    a->n_nodes, m->conf->nnodes);
		return -1;
	}
	for (i = 0; i < a->n_nodes; i++) {
		if (conf_find(m->conf, a->nodes[i]) == NULL) {
			xasprintf(cause, "node %u is not in the map",
			    a->nodes[i]);
			return -1;
		}
	}
	free(p->nodes);
	p->nodes = NULL;
	p->nnodes = a->n_nodes;
	if (p->nnodes > 0) {
		p->nodes = xcalloc(p->nnodes, sizeof *p->nodes);
		memcpy(p->nodes, a->nodes, p->nnodes * sizeof *p->nodes);
	}
	return 0;
}

/*
 * Copy what an agent says, refusing what makes no sense. A deputy may not
 * know this node's number yet: 0 is here.
 */
static int
procs_update(struct mosd *m, struct mproc *p, const Osm__CtlAgent *a,
    char **cause)
{
	uint32_t	where = a->where;

	if (where == 0 && p->role == OSM__CTL_ROLE__ROLE_DEPUTY)
		where = m->conf->self;
	if (where == 0 || conf_find(m->conf, where) == NULL) {
		xasprintf(cause, "node %u is not in the map", a->where);
		return -1;
	}
	/* protobuf-c takes any number for an enum: only ours make sense. */
	if (ctl_state_name(a->state) == NULL) {
		xasprintf(cause, "bad state %d", (int)a->state);
		return -1;
	}
	if (procs_nodes(m, p, a, cause) == -1)
		return -1;
	if (where != p->where)
		p->moved_ms = now_ms();
	p->where = where;
	p->state = a->state;
	p->cpu_permille = a->has_cpu_permille ? a->cpu_permille : 0;
	p->threads = a->has_threads && a->threads > 0 ? a->threads : 1;
	p->rss = a->has_rss_bytes ? a->rss_bytes : 0;
	if (a->command != NULL) {
		free(p->command);
		p->command = xstrndup(a->command, 256);
	}
	if (a->has_local_pid)
		p->local_pid = a->local_pid;
	p->locked = a->has_locked && a->locked;
	p->mem_need = a->has_mem_need ? a->mem_need : 0;
	procs_why(m, p, a);
	if (p->role == OSM__CTL_ROLE__ROLE_DEPUTY)
		procs_ckpt(p, a->checkpoints);
	return 0;
}

/*
 * Is the peer the deputy of pid? It must run as the process's owner and be
 * its tracer: only the process's own deputy can be both.
 */
static int
procs_check_deputy(struct peer *peer, uint32_t pid, uid_t *owner,
    char **cause)
{
	char	tracer[32], uid[64];

	if (proc_status(pid, "TracerPid", tracer, sizeof tracer) == -1 ||
	    proc_status(pid, "Uid", uid, sizeof uid) == -1) {
		xasprintf(cause, "no process %u", pid);
		return -1;
	}
	/* Uid: real, effective, saved, fs */
	if (strtol(tracer, NULL, 10) != peer->pid ||
	    strtoul(uid, NULL, 10) != peer->uid) {
		xasprintf(cause, "pid %ld is not the deputy of process %u",
		    (long)peer->pid, pid);
		return -1;
	}
	*owner = peer->uid;
	return 0;
}

int
procs_hello(struct mosd *m, struct peer *peer, const Osm__CtlAgent *a,
    char **cause)
{
	struct mproc	*p;
	struct passwd	*pw;
	uid_t		 owner;

	if (peer->arg != NULL) {
		xasprintf(cause, "this connection already has a process");
		return -1;
	}
	if (a->role == OSM__CTL_ROLE__ROLE_DEPUTY) {
		if (a->home != 0 && a->home != m->conf->self) {
			xasprintf(cause, "a deputy's home must be this node");
			return -1;
		}
		if (procs_check_deputy(peer, a->pid, &owner, cause) == -1)
			return -1;
		if (a->socket == NULL || a->socket[0] != '@' ||
		    strlen(a->socket) > 100) {
			xasprintf(cause, "a deputy needs an abstract socket");
			return -1;
		}
	} else if (a->role == OSM__CTL_ROLE__ROLE_GUEST) {
		if (peer->uid < m->conf->guest_uid_first ||
		    peer->uid > m->conf->guest_uid_last) {
			xasprintf(cause, "uid %u is not a guest uid",
			    (unsigned)peer->uid);
			return -1;
		}
		if (a->home == m->conf->self ||
		    conf_find(m->conf, a->home) == NULL) {
			xasprintf(cause, "node %u is not another node",
			    a->home);
			return -1;
		}
		if (a->socket != NULL && (a->socket[0] != '@' ||
		    strlen(a->socket) > 100)) {
			xasprintf(cause, "a guest's socket must be abstract");
			return -1;
		}
		owner = peer->uid;
	} else {
		xasprintf(cause, "unknown role");
		return -1;
	}
	if (procs_find(m, a->role, a->role == OSM__CTL_ROLE__ROLE_DEPUTY ?
	    m->conf->self : a->home, a->pid) != NULL) {
		xasprintf(cause, "process %u@%u already has an agent", a->pid,
		    a->home);
		return -1;
	}
	if (peer->quota != NULL &&
	    quota_may_register(&m->quota, peer->quota, cause) == -1)
		return -1;
	p = xcalloc(1, sizeof *p);
	p->role = a->role;
	p->pid = a->pid;
	p->home = a->role == OSM__CTL_ROLE__ROLE_DEPUTY ? m->conf->self :
	    a->home;
	p->uid = owner;
	p->gid = a->role == OSM__CTL_ROLE__ROLE_DEPUTY ? peer->gid : 0;
	if ((pw = getpwuid(owner)) != NULL) {
		snprintf(p->user, sizeof p->user, "%s", pw->pw_name);
		/* For policy, once: the balancer asks every round. */
		if (p->role == OSM__CTL_ROLE__ROLE_DEPUTY)
			p->groups = policy_groups(pw, &p->ngroups);
	} else
		snprintf(p->user, sizeof p->user, "%u", (unsigned)owner);
	if (a->socket != NULL)
		p->socket = xstrdup(a->socket);
	if (procs_update(m, p, a, cause) == -1) {
		procs_free(p);
		return -1;
	}
	p->start_ms = p->moved_ms;
	p->agent = peer;
	peer->arg = p;
	peer->closed = procs_agent_closed;
	/* Its own room now, no timeout, ahead of users' tools. */
	peer_agent(peer);
	TAILQ_INSERT_TAIL(&m->procs, p, entry);
	log_debug("%s agent of %u@%u: pid %ld", p->role ==
	    OSM__CTL_ROLE__ROLE_DEPUTY ? "deputy" : "guest", p->pid, p->home,
	    (long)peer->pid);
	return 0;
}

int
procs_status(struct mosd *m, struct peer *peer, const Osm__CtlAgent *a,
    char **cause)
{
	struct mproc	*p = peer->arg;

	if (p == NULL || p->role != (int)a->role || p->pid != a->pid) {
		xasprintf(cause, "not the agent of process %u@%u", a->pid,
		    a->home);
		return -1;
	}
	return procs_update(m, p, a, cause);
}

static int
procs_send(struct mosd *m, const struct mproc *mp, Osm__CtlRequest *order,
    void (*done)(struct mosd *, void *, Osm__CtlReply *, const char *),
    void *arg, char **cause)
{
	if (mp->socket == NULL) {
		xasprintf(cause, "process %u@%u has no agent to order",
		    mp->pid, mp->home);
		return -1;
	}
	order->has_pid = 1;
	order->pid = mp->pid;
	return control_order(m, mp->socket, order, done, arg, cause);
}

/*
 * Send the agent of mp an order: CTL_MIGRATE to node (0: home, for a
 * guest), the way move says (MoveMode), or CTL_CHECKPOINT. done gets the
 * agent's answer.
 */
int
procs_order(struct mosd *m, const struct mproc *mp, int type, uint32_t node,
    int move, void (*done)(struct mosd *, void *, Osm__CtlReply *, const char *),
    void *arg, char **cause)
{
	Osm__CtlRequest	order = OSM__CTL_REQUEST__INIT;

	order.type = type;
	if (type == OSM__CTL_TYPE__CTL_MIGRATE) {
		order.has_node = 1;
		order.node = node;
		order.has_move = move != OSM__MOVE_MODE__MOVE_DEFAULT;
		order.move = move;
	}
	return procs_send(m, mp, &order, done, arg, cause);
}

/* Order a guest's agent to have it called home, saying why. */
int
procs_order_leave(struct mosd *m, const struct mproc *mp, const char *reason,
    void (*done)(struct mosd *, void *, Osm__CtlReply *, const char *),
    void *arg, char **cause)
{
	Osm__CtlRequest	order = OSM__CTL_REQUEST__INIT;

	order.type = OSM__CTL_TYPE__CTL_MIGRATE;
	order.has_node = 1;
	order.node = 0;
	order.reason = (char *)reason;
	return procs_send(m, mp, &order, done, arg, cause);
}
