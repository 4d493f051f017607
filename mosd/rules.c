/*
 * The policy as mosd applies it (policy.conf(5)): both ends enforce. The
 * home never sends a process where its owner's rule does not allow it,
 * nor more of a user's processes away than the rule says; a node refuses
 * the guests its own line does not accept, and every guest when its owner
 * has blocked it.
 */
#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mosd.h"
#include "proto/ctl.pb-c.h"
#include "proto/migrate.pb-c.h"


/* The policy at path; none there is the built-in one, allowing all. */
int
rules_load(const char *path, struct policy **out, char **cause)
{
	if (access(path, F_OK) == -1 && errno == ENOENT) {
		*out = policy_default();
		return 0;
	}
	if ((*out = policy_load(path, cause)) == NULL)
		return -1;
	return 0;
}

/*
 * The policy open on fd (taken), named path; -1: there is no file (the
 * privileged parent found none), the built-in one.
 */
int
rules_load_fd(const char *path, int fd, struct policy **out, char **cause)
{
	if (fd == -1) {
		*out = policy_default();
		return 0;
	}
	if ((*out = policy_load_fd(path, fd, cause)) == NULL)
		return -1;
	return 0;
}

/* The rule for a process homed here: its owner's. */
const struct policy_rule *
rules_for(struct mosd *m, const struct mproc *mp)
{
	return policy_rule(m->policy, mp->user,
	    (const char *const *)mp->groups, mp->ngroups);
}

/*
 * How many processes homed here and owned by uid run elsewhere or are on
 * their way there, but for one.
 */
size_t
rules_away(struct mosd *m, uid_t uid, const struct mproc *except)
{
	struct mproc	*p;
	size_t		 n = 0;

	TAILQ_FOREACH(p, &m->procs, entry)
		n += p != except && p->role == OSM__CTL_ROLE__ROLE_DEPUTY &&
		    p->uid == uid && (p->where != m->conf->self || p->moving);
	return n;
}

/* Is node one of those mosrun -n let the process run on? */
static int
rules_listed(const struct mproc *mp, uint32_t node)
{
	size_t	i;

	for (i = 0; i < mp->nnodes; i++)
		if (mp->nodes[i] == node)
			return 1;
	return 0;
}

/*
 * May the process homed here go to node by its owner's rule and the nodes
 * its mosrun -n lists? Home is
 * always allowed. Returns 0, or -1 with *why. Whether the node takes it
 * (its flags, its memory, its own rules) is the node's to say: gossip
 * only tells what it said a moment ago.
 */
int
rules_may_send(struct mosd *m, const struct mproc *mp, uint32_t node,
    char **why)
{
	const struct policy_rule *r;

	if (node == m->conf->self)
		return 0;
	if (mp->nnodes > 0 && !rules_listed(mp, node)) {
		xasprintf(why, "process %u may run only on the nodes mosrun -n "
		    "lists, and node %u is not one", mp->pid, node);
		return -1;
	}
	r = rules_for(m, mp);
	if (!policy_has_node(&r->nodes, node)) {
		xasprintf(why, "policy: processes of %s may not run on node "
		    "%u", mp->user, node);
		return -1;
	}
	if (mp->where == m->conf->self &&
	    rules_away(m, mp->uid, mp) >= r->max_away) {
		xasprintf(why, "policy: %s may have at most %u processes "
		    "away", mp->user, r->max_away);
		return -1;
	}
	return 0;
}

/* May this node take the offered guest? Returns 0, or -1 with *why. */
int
rules_may_take(struct mosd *m, const Osm__MigOffer *o, char **why)
{
	if (m->flags & OSM__NODE_FLAG__NODE_BLOCK) {
		xasprintf(why, "node %u takes no new guests", m->conf->self);
		return -1;
	}
	if (o->has_mem_bytes && o->mem_bytes > m->probe.mem_free) {
		xasprintf(why, "node %u has %llu MiB free, the process needs "
		    "%llu", m->conf->self,
		    (unsigned long long)(m->probe.mem_free >> 20),
		    (unsigned long long)(o->mem_bytes >> 20));
		return -1;
	}
	if (!policy_accepts(m->policy, m->conf->self, o->user,
	    (const char *const *)o->groups, o->n_groups, procs_guests(m),
	    why))
		return -1;
	return 0;
}
