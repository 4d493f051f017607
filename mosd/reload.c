/*
 * SIGHUP, as the network process gets it: its privileged parent has
 * opened cluster.conf and the policy it names (parent.c), which may be
 * root's alone, and hands them over on the channel; this re-reads both
 * from those descriptors and applies them. Timing, speed, the policy and
 * the web token's path apply at once, the limits to what comes from then
 * on; the node map, port, window, key, socket, uids and web address are
 * fixed for the daemon's life. A bad file changes nothing.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mosd.h"

/* Apply the configuration on conffd and the policy on polfd (-1: none). */
void
reload_apply(struct mosd *m, int conffd, int polfd)
{
	struct cluster_conf	*c;
	struct policy		*pol;
	char			*cause = NULL;
	int			 same;
	size_t			 i;

	if ((c = conf_load_fd(m->conf->path, conffd, &cause)) == NULL) {
		log_warnx("reload: %s; keeping the old configuration", cause);
		free(cause);
		if (polfd != -1)
			close(polfd);
		return;
	}
	if (rules_load_fd(c->policy_path, polfd, &pol, &cause) == -1) {
		log_warnx("reload: %s; keeping the old configuration and "
		    "policy", cause);
		free(cause);
		conf_free(c);
		return;
	}
	policy_free(m->policy);
	m->policy = pol;
	same = c->nnodes == m->conf->nnodes && c->port == m->conf->port &&
	    (c->self == 0 || c->self == m->conf->self);
	for (i = 0; same && i < c->nnodes; i++)
		same = c->nodes[i].id == m->conf->nodes[i].id &&
		    strcmp(c->nodes[i].addr, m->conf->nodes[i].addr) == 0;
	if (!same)
		log_warnx("reload: the node map or port changed; restart mosd "
		    "to apply that");
	if (c->window != m->conf->window)
		log_warnx("reload: the window changed; restart mosd to apply "
		    "that");
	if (c->web_port != m->conf->web_port ||
	    strcmp(c->web_addr, m->conf->web_addr) != 0)
		log_warnx("reload: the web monitor's address changed; restart "
		    "mosd to apply that");
	if (c->net_uid != m->conf->net_uid)
		log_warnx("reload: net-uid changed; restart mosd to apply "
		    "that");
	/* The token file is read at each action (by the parent). */
	free(m->conf->web_token_path);
	m->conf->web_token_path = c->web_token_path;
	c->web_token_path = NULL;
	/* Shared paths: for the guests that come from now on. */
	for (i = 0; i < m->conf->nshared; i++)
		free(m->conf->shared[i]);
	free(m->conf->shared);
	m->conf->shared = c->shared;
	m->conf->nshared = c->nshared;
	c->shared = NULL;
	c->nshared = 0;
	m->conf->interval_ms = c->interval_ms;
	m->conf->timeout_ms = c->timeout_ms;
	m->gossip->timeout_ms = gossip_timeout(m->gossip->n, c->interval_ms,
	    c->timeout_ms);
	m->probe.speed = c->speed;
	/* The limits too: for new connections, new handshakes. */
	m->conf->clients = c->clients;
	m->conf->clients_per_user = c->clients_per_user;
	m->conf->requests_per_user = c->requests_per_user;
	m->conf->agents_per_user = c->agents_per_user;
	m->conf->client_timeout_ms = c->client_timeout_ms;
	m->conf->client_output = c->client_output;
	m->conf->user_output = c->user_output;
	m->conf->handshakes = c->handshakes;
	m->conf->handshakes_per_node = c->handshakes_per_node;
	m->conf->handshake_rate = c->handshake_rate;
	m->conf->handshake_timeout_ms = c->handshake_timeout_ms;
	control_limits(m);
	m->gossip_timer.repeat = c->interval_ms / 1000.0;
	ev_timer_again(m->loop, &m->gossip_timer);
	conf_free(c);
	log_info("reload: interval %llums, timeout %llums, speed %u, "
	    "policy %s, %zu shared paths",
	    (unsigned long long)m->conf->interval_ms,
	    (unsigned long long)m->gossip->timeout_ms, m->probe.speed,
	    pol->path != NULL ? pol->path : "built in (allow all)",
	    m->conf->nshared);
}
