/*
 * Gossip on the wire: one UDP socket bound to this node's address in the
 * map. Every datagram is checked by lib/frame.c (size, magic, version,
 * MAC), then by gossip_receive (schema, ranges, replay, source); every drop
 * is counted by reason and nothing of a dropped datagram is used.
 */
#include <sys/socket.h>

#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mosd.h"
#include "proto/frame.pb-c.h"

#define NET_RX_BUF	GOSSIP_MSG_MAX	/* the largest datagram we accept */
#define NET_RX_BURST	64	/* datagrams per wakeup, then yield */

static const enum mosd_counter net_frame_counter[FRAME_NERRORS] = {
	[FRAME_OK] = C_RX_OK,
	[FRAME_SHORT] = C_RX_TRUNCATED,
	[FRAME_LONG] = C_RX_OVERSIZED,
	[FRAME_MAGIC_BAD] = C_RX_BAD_MAGIC,
	[FRAME_VERSION_BAD] = C_RX_BAD_VERSION,
	[FRAME_LENGTH_BAD] = C_RX_BAD_LENGTH,
	[FRAME_MAC_BAD] = C_RX_BAD_MAC,
};

static const enum mosd_counter net_gossip_counter[GOSSIP_NRESULTS] = {
	[GOSSIP_OK] = C_RX_OK,
	[GOSSIP_MALFORMED] = C_RX_MALFORMED,
	[GOSSIP_BAD_FIELD] = C_RX_BAD_FIELD,
	[GOSSIP_UNKNOWN_NODE] = C_RX_UNKNOWN_NODE,
	[GOSSIP_FROM_SELF] = C_RX_FROM_SELF,
	[GOSSIP_REPLAY] = C_RX_REPLAY,
	[GOSSIP_WRONG_SOURCE] = C_RX_WRONG_SOURCE,
};

/* The node whose map address (and port, if with_port) is ss; 0 if none. */
static struct log_limit net_log_rx;

uint32_t
net_node_by_addr(const struct cluster_conf *c,
    const struct sockaddr_storage *ss, int with_port)
{
	const struct sockaddr_in	*a = (const struct sockaddr_in *)ss;
	const struct sockaddr_in6	*a6 = (const struct sockaddr_in6 *)ss;
	const struct sockaddr_in	*n4;
	const struct sockaddr_in6	*n6;
	size_t				 i;

	for (i = 0; i < c->nnodes; i++) {
		n4 = (const struct sockaddr_in *)&c->nodes[i].sa;
		n6 = (const struct sockaddr_in6 *)&c->nodes[i].sa;
		if (c->nodes[i].sa.ss_family != ss->ss_family)
			continue;
		if (ss->ss_family == AF_INET &&
		    a->sin_addr.s_addr == n4->sin_addr.s_addr &&
		    (!with_port || a->sin_port == n4->sin_port))
			return c->nodes[i].id;
		if (ss->ss_family == AF_INET6 &&
		    memcmp(&a6->sin6_addr, &n6->sin6_addr,
		    sizeof a6->sin6_addr) == 0 &&
		    (!with_port || a6->sin6_port == n6->sin6_port))
			return c->nodes[i].id;
	}
	return 0;
}

static void
net_drop(struct mosd *m, enum mosd_counter c, uint32_t from, const char *why)
{
	m->counters[c]++;
	/* Counted always, logged only while debugging: peers can flood. */
	log_debug("dropped a datagram from node %u: %s", from, why);
}

static void
net_datagram(struct mosd *m, const uint8_t *buf, size_t len,
    const struct sockaddr_storage *ss)
{
	const uint8_t		*body;
	size_t			 blen;
	uint16_t		 kind;
	uint32_t		 from, sender;
	enum frame_error	 fe;
	enum gossip_result	 gr;

	from = net_node_by_addr(m->conf, ss, 1);
	if ((fe = frame_unpack(buf, len, GOSSIP_MSG_MAX, &m->key, &kind, &body,
	    &blen)) != FRAME_OK) {
		net_drop(m, net_frame_counter[fe], from, frame_strerror(fe));
		return;
	}
	if (kind != OSM__FRAME_KIND__FRAME_GOSSIP) {
		net_drop(m, C_RX_BAD_KIND, from, "unknown message kind");
		return;
	}
	gr = gossip_receive(m->gossip, now_ms(), body, blen, from, &sender);
	if (gr != GOSSIP_OK) {
		net_drop(m, net_gossip_counter[gr], from, gossip_strerror(gr));
		return;
	}
	m->counters[C_RX_OK]++;
}

static void
net_read_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct mosd		*m = w->data;
	struct sockaddr_storage	 ss;
	socklen_t		 sslen;
	ssize_t			 n;
	int			 i;

	looptime_mark(loop, "gossip read");

	for (i = 0; i < NET_RX_BURST; i++) {
		sslen = sizeof ss;
		/* MSG_TRUNC: n is the datagram's real size, even if larger. */
		n = recvfrom(m->udp_fd, m->rxbuf, NET_RX_BUF, MSG_TRUNC,
		    (struct sockaddr *)&ss, &sslen);
		if (n == -1) {
			if (errno != EAGAIN && errno != EINTR)
				log_limited_warnx(&net_log_rx, 0, "gossip: "
				    "recvfrom: %s", strerror(errno));
			return;
		}
		if ((size_t)n > NET_RX_BUF) {
			net_drop(m, C_RX_OVERSIZED, net_node_by_addr(m->conf,
			    &ss, 1), "oversized");
			continue;
		}
		net_datagram(m, m->rxbuf, n, &ss);
	}
}

int
net_open(struct mosd *m, char **cause)
{
	const struct conf_node	*self = conf_find(m->conf, m->conf->self);
	int			 fd;

	fd = socket(self->sa.ss_family, SOCK_DGRAM | SOCK_NONBLOCK |
	    SOCK_CLOEXEC, 0);
	if (fd == -1) {
		xasprintf(cause, "socket: %s", strerror(errno));
		return -1;
	}
	/* Bound to our map address, so that peers see it as our source. */
	if (bind(fd, (const struct sockaddr *)&self->sa, self->salen) == -1) {
		xasprintf(cause, "bind %s port %u: %s", self->addr,
		    m->conf->port, strerror(errno));
		close(fd);
		return -1;
	}
	m->udp_fd = fd;
	m->rxbuf = xmalloc(NET_RX_BUF);
	return 0;
}

void
net_start(struct mosd *m)
{
	ev_io_init(&m->udp_ev, net_read_cb, m->udp_fd, EV_READ);
	m->udp_ev.data = m;
	ev_io_start(m->loop, &m->udp_ev);
}

/* Our own entry in the view, fresh: load, guests, flags. */
void
net_refresh_self(struct mosd *m)
{
	struct gossip_info	info;

	probe_info(&m->probe, &info);
	info.guests = procs_guests(m);
	info.flags = m->flags;
	gossip_set_self(m->gossip, &info, now_ms());
}

/* One gossip round: our fresh entry and the window to the next target. */
void
net_send_gossip(struct mosd *m)
{
	const struct conf_node	*to;
	uint8_t			 body[GOSSIP_MSG_MAX], frame[GOSSIP_MSG_MAX];
	uint64_t		 now = now_ms();
	uint32_t		 target;
	size_t			 len, flen;

	net_refresh_self(m);
	if ((target = gossip_next_target(m->gossip)) == 0)
		return;		/* a cluster of one */
	to = conf_find(m->conf, target);
	len = gossip_build(m->gossip, target, now, body, sizeof body);
	flen = len == 0 ? 0 : frame_pack(OSM__FRAME_KIND__FRAME_GOSSIP, body,
	    len, &m->key, frame, sizeof frame);
	if (flen == 0)
		fatalx("gossip message does not fit in %d bytes",
		    GOSSIP_MSG_MAX);
	if (sendto(m->udp_fd, frame, flen, 0, (const struct sockaddr *)&to->sa,
	    to->salen) == -1) {
		m->counters[C_TX_ERROR]++;
		log_debug("gossip to node %u: %s", target, strerror(errno));
		return;
	}
	m->counters[C_TX_OK]++;
}
