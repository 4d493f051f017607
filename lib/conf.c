/*
 * cluster.conf: the map of the cluster and the daemon's settings, one
 * directive per line, '#' to end of line is a comment.
 *
 *	node ID ADDRESS [COUNT]	nodes ID.. at consecutive IPv4 addresses
 *	port N			UDP port of every node (4750)
 *	interval DURATION	gossip interval (1s)
 *	timeout DURATION	silence after which a node is shown down (6s)
 *	window N		entries relayed in each gossip message
 *	speed N			this node's speed, 1000 = the reference CPU
 *	self ID			this node's number (else found by address)
 *	key PATH		cluster key (cluster.key beside this file)
 *	socket PATH		control socket (/run/osmosis/mosd.sock)
 *	guests FIRST-LAST	uids for guest processes (60000-60999)
 *	net-uid UID		the uid mosd's network process runs as, a uid
 *				of its own (59999)
 *	policy PATH		who may migrate where (policy.conf beside this
 *				file); see policy.conf(5)
 *	web [ADDRESS] PORT	serve the web monitor there (off; the address
 *				is 127.0.0.1 unless given)
 *	web-token PATH		root's 0600 file of the token the web
 *				monitor's actions need (web.token beside this
 *				file)
 *	shared PATH...		file systems that are the same on every node
 *				(NFS...): a process away opens its files there
 *				where it runs (docs/REMOTE.md, "Shared file
 *				systems")
 *
 * What local users and other nodes may make mosd hold (docs/RELIABILITY.md):
 *
 *	clients N		users' tool connections, together (256)
 *	clients_per_user N	one uid's (16)
 *	requests_per_user N	requests a second of one uid's tools (1000)
 *	agents_per_user N	processes one uid may register (1024)
 *	client_timeout DURATION	a connection that neither asks nor reads (10s)
 *	client_output SIZE	unread replies, one connection (64K)
 *	user_output SIZE	unread replies, one uid's connections (1M)
 *	handshakes N		incoming migration handshakes at once (64)
 *	handshakes_per_node N	from one node (4)
 *	handshake_rate N	new connections a second from one node (20)
 *	handshake_timeout DURATION	for a whole handshake (5s)
 */
#include <arpa/inet.h>
#include <netinet/in.h>

#include <ctype.h>
#include <stdarg.h>
#include <errno.h>
#include <ifaddrs.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "osm.h"

#define CONF_MAX_WINDOW		1024
#define CONF_MAX_WORDS		8
#define CONF_MAX_SHARED		32	/* shared paths, all lines together */

struct conf_parse {
	struct cluster_conf	*conf;
	struct cfg_file		 in;
	char			**cause;
};

static int
conf_error(struct conf_parse *p, const char *fmt, ...)
{
	va_list	ap;

	va_start(ap, fmt);
	cfg_verror(&p->in, p->cause, fmt, ap);
	va_end(ap);
	return -1;
}

static int
conf_addr(const char *s, uint16_t port, struct sockaddr_storage *ss,
    socklen_t *len)
{
	struct sockaddr_in	*sin = (struct sockaddr_in *)ss;
	struct sockaddr_in6	*sin6 = (struct sockaddr_in6 *)ss;

	memset(ss, 0, sizeof *ss);
	if (inet_pton(AF_INET, s, &sin->sin_addr) == 1) {
		sin->sin_family = AF_INET;
		sin->sin_port = htons(port);
		*len = sizeof *sin;
		return 0;
	}
	if (inet_pton(AF_INET6, s, &sin6->sin6_addr) == 1) {
		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = htons(port);
		*len = sizeof *sin6;
		return 0;
	}
	return -1;
}

static int
conf_node_add(struct conf_parse *p, uint64_t id, const char *addr,
    uint64_t count)
{
	struct cluster_conf	*c = p->conf;
	struct sockaddr_storage	 ss;
	struct in_addr		 in = { 0 };
	socklen_t		 len;
	struct conf_node	*n, *o;
	uint64_t		 i, k, clash = count;
	size_t			 j, with = 0;
	uint32_t		 off;

	if (conf_addr(addr, 0, &ss, &len) == -1)
		return conf_error(p, "expected a numeric IPv4 or IPv6 address, "
		    "found '%s'", addr);
	if (count > 1 && ss.ss_family != AF_INET)
		return conf_error(p, "a node range needs an IPv4 address");
	if (id + count - 1 > OSM_MAX_NODES)
		return conf_error(p, "node range %llu-%llu goes past %d",
		    (unsigned long long)id,
		    (unsigned long long)(id + count - 1), OSM_MAX_NODES);
	if (count > 1)
		in = ((struct sockaddr_in *)&ss)->sin_addr;
	/*
	 * The nodes of one line differ from each other in number and in
	 * address: find the first that clashes with an earlier line's in
	 * one pass over those, not one per node (a range of 65535 nodes
	 * took 17 s).
	 */
	for (j = 0; j < c->nnodes; j++) {
		o = &c->nodes[j];
		k = o->id >= id && o->id - id < count ? o->id - id : count;
		if (o->salen == len && count == 1 &&
		    memcmp(&o->sa, &ss, len) == 0)
			k = 0;
		else if (o->salen == len && count > 1) {
			off = ntohl(((struct sockaddr_in *)&o->sa)->
			    sin_addr.s_addr) - ntohl(in.s_addr);
			if (off < k)
				k = off;
		}
		if (k < clash) {
			clash = k;
			with = j;
		}
	}
	c->nodes = xreallocarray(c->nodes, c->nnodes + count,
	    sizeof *c->nodes);
	for (i = 0; i < count; i++) {
		n = &c->nodes[c->nnodes];
		memset(n, 0, sizeof *n);
		n->id = id + i;
		if (count > 1) {
			struct in_addr a;

			a.s_addr = htonl(ntohl(in.s_addr) + i);
			inet_ntop(AF_INET, &a, n->addr, sizeof n->addr);
		} else
			snprintf(n->addr, sizeof n->addr, "%s", addr);
		conf_addr(n->addr, 0, &n->sa, &n->salen);
		if (i == clash) {
			if (c->nodes[with].id == n->id)
				return conf_error(p, "node %u is defined twice",
				    n->id);
			return conf_error(p, "address %s is given to nodes %u "
			    "and %u", n->addr, c->nodes[with].id, n->id);
		}
		c->nnodes++;
	}
	return 0;
}

static int
conf_number(struct conf_parse *p, const char *what, const char *s,
    uint64_t min, uint64_t max, uint64_t *out)
{
	if (parse_uint(s, min, max, out) == -1)
		return conf_error(p, "expected %s from %llu to %llu, found '%s'",
		    what, (unsigned long long)min, (unsigned long long)max, s);
	return 0;
}

static int
conf_duration(struct conf_parse *p, const char *what, const char *s,
    uint64_t min, uint64_t *out)
{
	if (parse_duration_ms(s, out) == -1 || *out < min)
		return conf_error(p, "expected %s as a duration of at least "
		    "%llums (like 500ms or 2s), found '%s'", what,
		    (unsigned long long)min, s);
	return 0;
}

/* web [ADDRESS] PORT: where mosd serves the web monitor (mosd(8)). */
static int
conf_web(struct conf_parse *p, char **w, int nw)
{
	struct cluster_conf	*c = p->conf;
	const char		*addr = nw == 3 ? w[1] : "127.0.0.1";
	uint64_t		 port;

	if (nw != 2 && nw != 3)
		return conf_error(p, "expected 'web [ADDRESS] PORT'");
	if (conf_number(p, "a web port", w[nw - 1], 1, 65535, &port) == -1)
		return -1;
	if (conf_addr(addr, port, &c->web_sa, &c->web_salen) == -1)
		return conf_error(p, "expected a numeric IPv4 or IPv6 address "
		    "for the web monitor, found '%s'", addr);
	snprintf(c->web_addr, sizeof c->web_addr, "%s", addr);
	c->web_port = port;
	return 0;
}

/* A size in bytes, with K, M or G (binary) after the number. */
static int
conf_size(struct conf_parse *p, const char *what, const char *s,
    uint64_t min, uint64_t *out)
{
	char		*num = xstrdup(s);
	size_t		 len = strlen(num);
	unsigned	 shift = 0;
	int		 rc;

	if (len > 0 && strchr("KMG", num[len - 1]) != NULL) {
		shift = num[len - 1] == 'K' ? 10 : num[len - 1] == 'M' ? 20 :
		    30;
		num[len - 1] = '\0';
	}
	rc = parse_uint(num, 0, (1ULL << 40) >> shift, out);
	free(num);
	if (rc == -1 || (*out <<= shift) < min)
		return conf_error(p, "expected %s of at least %llu bytes (like "
		    "64K or 1M), found '%s'", what, (unsigned long long)min, s);
	return 0;
}

/* The limits: each a number, a duration or a size, checked. */
static const struct conf_limit {
	const char	*name;
	const char	*what;
	enum { CONF_NUMBER, CONF_DURATION, CONF_SIZE } type;
	uint64_t	 min, max;
	size_t		 off;
	int		 u32;
} conf_limits[] = {
	{ "clients", "a number of connections", CONF_NUMBER, 1, 1000000,
	    offsetof(struct cluster_conf, clients), 1 },
	{ "clients_per_user", "a number of connections", CONF_NUMBER, 1,
	    1000000, offsetof(struct cluster_conf, clients_per_user), 1 },
	{ "requests_per_user", "a number of requests a second", CONF_NUMBER,
	    1, 1000000, offsetof(struct cluster_conf, requests_per_user), 1 },
	{ "agents_per_user", "a number of processes", CONF_NUMBER, 1, 1000000,
	    offsetof(struct cluster_conf, agents_per_user), 1 },
	{ "client_timeout", "the client timeout", CONF_DURATION, 100, 0,
	    offsetof(struct cluster_conf, client_timeout_ms), 0 },
	{ "client_output", "a size", CONF_SIZE, 4096, 0,
	    offsetof(struct cluster_conf, client_output), 0 },
	{ "user_output", "a size", CONF_SIZE, 4096, 0,
	    offsetof(struct cluster_conf, user_output), 0 },
	{ "handshakes", "a number of handshakes", CONF_NUMBER, 1, 100000,
	    offsetof(struct cluster_conf, handshakes), 1 },
	{ "handshakes_per_node", "a number of handshakes", CONF_NUMBER, 1,
	    100000, offsetof(struct cluster_conf, handshakes_per_node), 1 },
	{ "handshake_rate", "a number of connections a second", CONF_NUMBER,
	    1, 1000000, offsetof(struct cluster_conf, handshake_rate), 1 },
	{ "handshake_timeout", "the handshake timeout", CONF_DURATION, 100,
	    0, offsetof(struct cluster_conf, handshake_timeout_ms), 0 },
};

/* A limit's line: 1 if k is one, 0 if not, -1 on a bad value. */
static int
conf_limit(struct conf_parse *p, const char *k, const char *v)
{
	const struct conf_limit	*l;
	uint64_t		 n;
	size_t			 i;
	int			 rc;

	for (i = 0; i < nitems(conf_limits); i++)
		if (strcmp(conf_limits[i].name, k) == 0)
			break;
	if (i == nitems(conf_limits))
		return 0;
	l = &conf_limits[i];
	if (l->type == CONF_NUMBER)
		rc = conf_number(p, l->what, v, l->min, l->max, &n);
	else if (l->type == CONF_DURATION)
		rc = conf_duration(p, l->what, v, l->min, &n);
	else
		rc = conf_size(p, l->what, v, l->min, &n);
	if (rc == -1)
		return -1;
	if (l->u32)
		*(uint32_t *)((char *)p->conf + l->off) = n;
	else
		*(uint64_t *)((char *)p->conf + l->off) = n;
	return 1;
}

/*
 * A shared path: absolute, in its plainest spelling (no "." or ".."
 * component, no doubled or trailing slash), for a process's path is
 * compared with it by its characters; never "/" itself, which would
 * leave no file at home.
 */
static int
conf_shared(struct conf_parse *p, char **w, int nw)
{
	struct cluster_conf	*c = p->conf;
	const char		*s, *e;
	size_t			 len;
	int			 i;

	if (nw < 2)
		return conf_error(p, "expected 'shared PATH...'");
	for (i = 1; i < nw; i++) {
		s = w[i];
		len = strlen(s);
		if (s[0] != '/' || len < 2 || len >= OSM_SHARED_PATH_MAX ||
		    s[len - 1] == '/')
			return conf_error(p, "a shared path is absolute, not "
			    "'/', and ends in a name: found '%s'", s);
		for (e = s; *e != '\0'; e++) {
			if (*e != '/')
				continue;
			if (e[1] == '/' || (e[1] == '.' && (e[2] == '/' ||
			    e[2] == '\0' || (e[2] == '.' && (e[3] == '/' ||
			    e[3] == '\0')))))
				return conf_error(p, "a shared path has no "
				    "'.', '..' or empty component: found "
				    "'%s'", s);
		}
		if (c->nshared == CONF_MAX_SHARED)
			return conf_error(p, "more than %d shared paths",
			    CONF_MAX_SHARED);
		c->shared = xreallocarray(c->shared, c->nshared + 1,
		    sizeof *c->shared);
		c->shared[c->nshared++] = xstrdup(s);
	}
	return 0;
}

static int
conf_line(struct conf_parse *p, char **w, int nw)
{
	struct cluster_conf	*c = p->conf;
	uint64_t		 v, id, count = 1;
	const char		*k = w[0];

	if (strcmp(k, "node") == 0) {
		if (nw < 3 || nw > 4)
			return conf_error(p, "expected 'node ID ADDRESS "
			    "[COUNT]'");
		if (conf_number(p, "a node number", w[1], 1, OSM_MAX_NODES,
		    &id) == -1)
			return -1;
		if (nw == 4 && conf_number(p, "a node count", w[3], 1,
		    OSM_MAX_NODES, &count) == -1)
			return -1;
		return conf_node_add(p, id, w[2], count);
	}
	if (strcmp(k, "web") == 0)
		return conf_web(p, w, nw);
	if (strcmp(k, "shared") == 0)
		return conf_shared(p, w, nw);
	if (nw != 2)
		return conf_error(p, "expected '%s VALUE'", k);
	switch (conf_limit(p, k, w[1])) {
	case -1:
		return -1;
	case 1:
		return 0;
	}
	if (strcmp(k, "port") == 0) {
		if (conf_number(p, "a port", w[1], 1, 65535, &v) == -1)
			return -1;
		c->port = v;
	} else if (strcmp(k, "interval") == 0) {
		if (conf_duration(p, "the gossip interval", w[1], 10,
		    &c->interval_ms) == -1)
			return -1;
	} else if (strcmp(k, "timeout") == 0) {
		if (conf_duration(p, "the down timeout", w[1], 100,
		    &c->timeout_ms) == -1)
			return -1;
	} else if (strcmp(k, "window") == 0) {
		if (conf_number(p, "a window size", w[1], 0, CONF_MAX_WINDOW,
		    &v) == -1)
			return -1;
		c->window = v;
	} else if (strcmp(k, "speed") == 0) {
		if (conf_number(p, "a speed", w[1], 1, 1000000, &v) == -1)
			return -1;
		c->speed = v;
	} else if (strcmp(k, "self") == 0) {
		if (conf_number(p, "a node number", w[1], 1, OSM_MAX_NODES,
		    &v) == -1)
			return -1;
		c->self = v;
	} else if (strcmp(k, "key") == 0) {
		free(c->key_path);
		c->key_path = xstrdup(w[1]);
	} else if (strcmp(k, "policy") == 0) {
		free(c->policy_path);
		c->policy_path = xstrdup(w[1]);
	} else if (strcmp(k, "web-token") == 0) {
		free(c->web_token_path);
		c->web_token_path = xstrdup(w[1]);
	} else if (strcmp(k, "guests") == 0) {
		char		*dash = strchr(w[1], '-');
		uint64_t	 first, last;

		if (dash == NULL)
			return conf_error(p, "expected a uid range like "
			    "60000-60999, found '%s'", w[1]);
		*dash = '\0';
		if (conf_number(p, "a first guest uid", w[1], 1, 4294967294ULL,
		    &first) == -1 || conf_number(p, "a last guest uid",
		    dash + 1, first, 4294967294ULL, &last) == -1)
			return -1;
		c->guest_uid_first = first;
		c->guest_uid_last = last;
	} else if (strcmp(k, "net-uid") == 0) {
		if (conf_number(p, "a uid", w[1], 1, 4294967294ULL, &v) == -1)
			return -1;
		c->net_uid = v;
	} else if (strcmp(k, "socket") == 0) {
		if (w[1][0] != '/' || strlen(w[1]) >= 108)
			return conf_error(p, "expected an absolute socket path "
			    "of under 108 characters");
		free(c->socket_path);
		c->socket_path = xstrdup(w[1]);
	} else
		return conf_error(p, "unknown directive '%s' (expected node, "
		    "port, interval, timeout, window, speed, self, key, "
		    "socket, guests, net-uid, policy, web, web-token, shared or a "
		    "limit: "
		    "clients, clients_per_user, requests_per_user, "
		    "agents_per_user, "
		    "client_timeout, client_output, user_output, handshakes, "
		    "handshakes_per_node, handshake_rate, handshake_timeout)",
		    k);
	return 0;
}

/* A relative path, or def when none was given, is beside this file. */
static void
conf_beside(struct conf_parse *p, char **path, const char *def)
{
	char	*dir, *tmp, *rel;

	if (*path != NULL && (*path)[0] == '/')
		return;
	tmp = xstrdup(p->in.path);
	dir = dirname(tmp);
	rel = *path;
	xasprintf(path, "%s/%s", dir, rel == NULL ? def : rel);
	free(rel);
	free(tmp);
}

static int
conf_finish(struct conf_parse *p)
{
	struct cluster_conf	*c = p->conf;
	size_t			 i;

	if (c->nnodes == 0) {
		xasprintf(p->cause, "%s: no nodes defined (expected at least "
		    "one 'node ID ADDRESS' line)", p->in.path);
		return -1;
	}
	if (c->self != 0 && conf_find(c, c->self) == NULL) {
		xasprintf(p->cause, "%s: 'self %u' names a node that is not "
		    "defined", p->in.path, c->self);
		return -1;
	}
	if (c->timeout_ms <= c->interval_ms) {
		xasprintf(p->cause, "%s: timeout (%llums) must be longer than "
		    "the gossip interval (%llums)", p->in.path,
		    (unsigned long long)c->timeout_ms,
		    (unsigned long long)c->interval_ms);
		return -1;
	}
	if (c->clients_per_user > c->clients) {
		xasprintf(p->cause, "%s: clients_per_user (%u) is more than "
		    "clients (%u), the connections of every user together",
		    p->in.path, c->clients_per_user, c->clients);
		return -1;
	}
	if (c->handshakes_per_node > c->handshakes) {
		xasprintf(p->cause, "%s: handshakes_per_node (%u) is more than "
		    "handshakes (%u), those of every node together",
		    p->in.path, c->handshakes_per_node, c->handshakes);
		return -1;
	}
	if (c->net_uid >= c->guest_uid_first &&
	    c->net_uid <= c->guest_uid_last) {
		xasprintf(p->cause, "%s: net-uid %u is one of the guest uids "
		    "(%u-%u): mosd's network process needs a uid of its own",
		    p->in.path, (unsigned)c->net_uid,
		    (unsigned)c->guest_uid_first, (unsigned)c->guest_uid_last);
		return -1;
	}
	for (i = 0; i < c->nnodes; i++)
		conf_addr(c->nodes[i].addr, c->port, &c->nodes[i].sa,
		    &c->nodes[i].salen);
	conf_beside(p, &c->key_path, "cluster.key");
	conf_beside(p, &c->policy_path, "policy.conf");
	conf_beside(p, &c->web_token_path, "web.token");
	if (c->socket_path == NULL)
		c->socket_path = xstrdup(OSM_SOCKET_PATH);
	return 0;
}

struct cluster_conf *
conf_load(const char *path, char **cause)
{
	return conf_load_fd(path, -1, cause);
}

/* The configuration open on fd (taken), named path; path if fd is -1. */
struct cluster_conf *
conf_load_fd(const char *path, int fd, char **cause)
{
	struct conf_parse	 p;
	struct cluster_conf	*c;
	char			*w[CONF_MAX_WORDS];
	int			 nw;

	if (cfg_open_fd(&p.in, path, fd, cause) == -1)
		return NULL;
	c = xcalloc(1, sizeof *c);
	c->path = xstrdup(path);
	c->port = OSM_PORT;
	c->interval_ms = 1000;
	c->timeout_ms = 6000;
	c->window = CONF_DEFAULT_WINDOW;
	c->speed = 1000;
	c->guest_uid_first = CONF_GUEST_UID_FIRST;
	c->guest_uid_last = CONF_GUEST_UID_LAST;
	c->net_uid = CONF_NET_UID;
	c->clients = CONF_CLIENTS;
	c->clients_per_user = CONF_CLIENTS_PER_USER;
	c->requests_per_user = CONF_REQUESTS_PER_USER;
	c->agents_per_user = CONF_AGENTS_PER_USER;
	c->client_timeout_ms = CONF_CLIENT_TIMEOUT_MS;
	c->client_output = CONF_CLIENT_OUTPUT;
	c->user_output = CONF_USER_OUTPUT;
	c->handshakes = CONF_HANDSHAKES;
	c->handshakes_per_node = CONF_HANDSHAKES_PER_NODE;
	c->handshake_rate = CONF_HANDSHAKE_RATE;
	c->handshake_timeout_ms = CONF_HANDSHAKE_TIMEOUT_MS;
	p.conf = c;
	p.cause = cause;

	while ((nw = cfg_words(&p.in, w, CONF_MAX_WORDS, cause)) > 0)
		if (conf_line(&p, w, nw) == -1)
			goto fail;
	if (nw == -1 || conf_finish(&p) == -1)
		goto fail;
	cfg_close(&p.in);
	return c;

fail:
	cfg_close(&p.in);
	conf_free(c);
	return NULL;
}

void
conf_free(struct cluster_conf *c)
{
	size_t	i;

	if (c == NULL)
		return;
	free(c->path);
	free(c->nodes);
	free(c->key_path);
	free(c->socket_path);
	free(c->policy_path);
	free(c->web_token_path);
	for (i = 0; i < c->nshared; i++)
		free(c->shared[i]);
	free(c->shared);
	free(c);
}

/*
 * Is path under one of the shared paths (or one of them)? Only a path in
 * plain spelling can say: one with a "." or ".." component, or a doubled
 * slash, is not (it goes home, where the kernel resolves it).
 */
int
conf_is_shared(char * const *shared, size_t nshared, const char *path)
{
	const char	*e;
	size_t		 i, len;

	if (path[0] != '/')
		return 0;
	for (e = path; *e != '\0'; e++)
		if (*e == '/' && (e[1] == '/' || (e[1] == '.' &&
		    (e[2] == '/' || e[2] == '\0' || (e[2] == '.' &&
		    (e[3] == '/' || e[3] == '\0'))))))
			return 0;
	for (i = 0; i < nshared; i++) {
		len = strlen(shared[i]);
		if (strncmp(path, shared[i], len) == 0 &&
		    (path[len] == '\0' || path[len] == '/'))
			return 1;
	}
	return 0;
}

/*
 * The shared path path is under (conf_is_shared), the longest of them if
 * one holds another: its index, or -1.
 */
int
conf_shared_root(char * const *shared, size_t nshared, const char *path)
{
	size_t	i, len, best = 0;
	int	r = -1;

	for (i = 0; i < nshared; i++) {
		len = strlen(shared[i]);
		if (len > best && conf_is_shared(&shared[i], 1, path)) {
			best = len;
			r = (int)i;
		}
	}
	return r;
}

const struct conf_node *
conf_find(const struct cluster_conf *c, uint32_t id)
{
	size_t	i;

	for (i = 0; i < c->nnodes; i++)
		if (c->nodes[i].id == id)
			return &c->nodes[i];
	return NULL;
}

static int
conf_same_host(const struct sockaddr *a, const struct sockaddr_storage *b)
{
	if (a->sa_family != b->ss_family)
		return 0;
	if (a->sa_family == AF_INET)
		return ((const struct sockaddr_in *)a)->sin_addr.s_addr ==
		    ((const struct sockaddr_in *)b)->sin_addr.s_addr;
	if (a->sa_family == AF_INET6)
		return memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr,
		    &((const struct sockaddr_in6 *)b)->sin6_addr,
		    sizeof(struct in6_addr)) == 0;
	return 0;
}

/* Set conf->self from the host's addresses unless the file named it. */
int
conf_find_self(struct cluster_conf *c, char **cause)
{
	struct ifaddrs	*ifa, *i;
	size_t		 j;
	uint32_t	 found = 0;

	if (c->self != 0)
		return 0;
	if (getifaddrs(&ifa) == -1) {
		xasprintf(cause, "getifaddrs: %s", strerror(errno));
		return -1;
	}
	for (i = ifa; i != NULL && found == 0; i = i->ifa_next) {
		if (i->ifa_addr == NULL)
			continue;
		for (j = 0; j < c->nnodes; j++) {
			if (conf_same_host(i->ifa_addr, &c->nodes[j].sa)) {
				found = c->nodes[j].id;
				break;
			}
		}
	}
	freeifaddrs(ifa);
	if (found == 0) {
		xasprintf(cause, "%s: none of this host's addresses is in the "
		    "map; add 'self ID' or this host's node line", c->path);
		return -1;
	}
	c->self = found;
	return 0;
}
