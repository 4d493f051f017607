/*
 * The osmosis nodes of a Slurm job: each node of SLURM_JOB_NODELIST is
 * the osmosis node at the address Slurm reaches it by (its NodeAddr, or
 * its name, resolved), found in the map that this node's mosd has. Nodes
 * of the job that are no osmosis node are no place for its processes.
 */
#include <sys/socket.h>

#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <slurm/slurm.h>

#include "lib/osm.h"
#include "proto/ctl.pb-c.h"
#include "slurm/osmosis-slurm.h"

/* Is the address a (a numeric one from the map) one that name has? */
static int
nodes_same(const char *a, const char *name)
{
	struct addrinfo	 hints, *ra, *rn, *p;
	int		 same = 0;

	memset(&hints, 0, sizeof hints);
	hints.ai_flags = AI_NUMERICHOST;
	hints.ai_socktype = SOCK_DGRAM;
	if (getaddrinfo(a, NULL, &hints, &ra) != 0)
		return 0;
	hints.ai_flags = 0;
	if (getaddrinfo(name, NULL, &hints, &rn) != 0) {
		freeaddrinfo(ra);
		return 0;
	}
	for (p = rn; p != NULL && !same; p = p->ai_next) {
		if (p->ai_family != ra->ai_family)
			continue;
		if (p->ai_family == AF_INET)
			same = memcmp(&((struct sockaddr_in *)p->ai_addr)->
			    sin_addr, &((struct sockaddr_in *)ra->ai_addr)->
			    sin_addr, sizeof(struct in_addr)) == 0;
		else if (p->ai_family == AF_INET6)
			same = memcmp(&((struct sockaddr_in6 *)p->ai_addr)->
			    sin6_addr, &((struct sockaddr_in6 *)ra->ai_addr)->
			    sin6_addr, sizeof(struct in6_addr)) == 0;
	}
	freeaddrinfo(rn);
	freeaddrinfo(ra);
	return same;
}

/* Where Slurm reaches node name: its NodeAddr, else the name itself. */
static const char *
nodes_addr(node_info_msg_t *info, const char *name)
{
	uint32_t	i;

	for (i = 0; i < info->record_count; i++) {
		if (info->node_array[i].name == NULL ||
		    strcmp(info->node_array[i].name, name) != 0)
			continue;
		if (info->node_array[i].node_addr != NULL &&
		    *info->node_array[i].node_addr != '\0')
			return info->node_array[i].node_addr;
		break;
	}
	return name;
}

/* Add node to the list unless it is there. */
static void
nodes_add(uint32_t **list, size_t *n, uint32_t node)
{
	size_t	i;

	for (i = 0; i < *n; i++)
		if ((*list)[i] == node)
			return;
	*list = xreallocarray(*list, *n + 1, sizeof **list);
	(*list)[(*n)++] = node;
}

/*
 * The osmosis node numbers of the job's nodes, this one's first (mosd
 * at sock says which it is), as "1,2,5" in *out; the Slurm names that
 * are no osmosis node are said on stderr when verbose. -1 with *cause.
 */
int
nodes_of_job(const char *sock, int verbose, char **out, char **cause)
{
	Osm__CtlRequest	 req = OSM__CTL_REQUEST__INIT;
	Osm__CtlReply	*r = NULL;
	node_info_msg_t	*info = NULL;
	hostlist_t	 hl = NULL;
	const char	*list, *addr;
	uint32_t	*nodes = NULL;
	size_t		 n = 0, i, len;
	char		*name, *s;
	int		 found, rc = -1;

	if ((list = getenv("SLURM_JOB_NODELIST")) == NULL) {
		xasprintf(cause, "SLURM_JOB_NODELIST is not set: not in a "
		    "Slurm job");
		return -1;
	}
	req.type = OSM__CTL_TYPE__CTL_STATUS;
	if ((r = ctl_call(sock, &req, cause)) == NULL)
		return -1;
	if (!r->ok || !r->has_self) {
		xasprintf(cause, "mosd: %s", r->error != NULL ? r->error :
		    "no status");
		goto out;
	}
	nodes_add(&nodes, &n, r->self);
	slurm_init(NULL);
	if (slurm_load_node(0, &info, SHOW_ALL) != 0) {
		xasprintf(cause, "the nodes of Slurm: %s",
		    slurm_strerror(slurm_get_errno()));
		goto out;
	}
	if ((hl = slurm_hostlist_create(list)) == NULL) {
		xasprintf(cause, "SLURM_JOB_NODELIST '%s' is not a host list",
		    list);
		goto out;
	}
	while ((name = slurm_hostlist_shift(hl)) != NULL) {
		addr = nodes_addr(info, name);
		for (i = 0, found = 0; i < r->n_nodes && !found; i++) {
			if (nodes_same(r->nodes[i]->address, addr)) {
				nodes_add(&nodes, &n, r->nodes[i]->node);
				found = 1;
			}
		}
		if (!found && verbose)
			fprintf(stderr, "slurm-task: Slurm node %s (%s) is no "
			    "osmosis node\n", name, addr);
		free(name);
	}
	len = n * 6 + 1;	/* "65535," at most a node (OSM_MAX_NODES) */
	s = *out = xmalloc(len);
	*s = '\0';
	for (i = 0; i < n; i++)
		s += snprintf(s, len - (s - *out), "%s%u", i > 0 ? "," : "",
		    nodes[i]);
	rc = 0;
out:
	if (hl != NULL)
		slurm_hostlist_destroy(hl);
	if (info != NULL)
		slurm_free_node_info_msg(info);
	ctl_reply_free(r);
	free(nodes);
	return rc;
}
