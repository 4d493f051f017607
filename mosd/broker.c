/*
 * The migration broker: opens sessions between a process's deputy here and
 * a guest agent on another node. On the gossip port number, over TCP:
 *
 *	target -> home	MigHello	a fresh challenge
 *	home -> target	MigOffer	echoes it, so a replayed offer fails
 *	target -> home	MigAnswer	accepted with its nonce, or why not
 *
 * every message a frame under the cluster key, from the node's map address.
 * Both sides then derive the session's keys (lib/session.c), each those of
 * its end; the target starts a guest agent on the connection and the home
 * passes it to the deputy. The cluster key stays here.
 *
 * Anyone who can reach the port can open a connection, without the key:
 * what that may cost is bounded (docs/RELIABILITY.md). Only a node's
 * address is served at all; a node has handshake_rate new connections a
 * second and handshakes_per_node under way, all nodes handshakes; past
 * these it is slowed: its connections are closed as soon as taken, with no
 * hello and one log line now and then. A handshake has handshake_timeout
 * and a buffer of LINK_MSG_MAX.
 */
#include <sys/random.h>
#include <sys/socket.h>

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mosd.h"
#include "proto/ctl.pb-c.h"
#include "proto/frame.pb-c.h"
#include "proto/migrate.pb-c.h"

#define LINK_MSG_MAX	4096
#define BROKER_ACCEPT_BATCH	32	/* connections taken per wakeup */
#define BROKER_PAUSE		0.25	/* seconds, out of descriptors */

static struct log_limit broker_log_fail, broker_log_offer, broker_log_busy,
    broker_log_accept, broker_log_session;

enum link_state {
	LINK_CONNECTING,	/* home: TCP connect under way */
	LINK_WAIT_HELLO,	/* home */
	LINK_WAIT_OFFER,	/* target */
	LINK_WAIT_ANSWER,	/* home */
};

struct link {
	struct mosd		*m;
	int			 fd;
	ev_io			 io;
	ev_timer		 timer;
	enum link_state		 state;
	uint32_t		 node;		/* the other end */
	uint8_t			 buf[LINK_MSG_MAX];
	size_t			 len;
	uint8_t			 challenge[SESSION_NONCE_LEN];
	uint8_t			 nonce[SESSION_NONCE_LEN];	/* ours */
	struct peer		*deputy;	/* home: who asked */
	uint32_t		 pid;		/* home: for whom */
	struct broker_node	*from;		/* target: counted there */
	int			 dead;
	TAILQ_ENTRY(link)	 entry;
};

static void	broker_link_cb(struct ev_loop *, ev_io *, int);

static void
broker_close(struct link *l)
{
	if (l->dead)
		return;
	ev_io_stop(l->m->loop, &l->io);
	ev_timer_stop(l->m->loop, &l->timer);
	if (l->fd != -1)
		close(l->fd);
	l->fd = -1;
	if (l->deputy != NULL)
		peer_unref(l->deputy);
	if (l->from != NULL) {
		l->from->handshakes--;
		l->m->handshakes--;
		l->from = NULL;
	}
	l->dead = 1;
}

/* Free the links closed during this loop iteration. */
void
broker_reap(struct mosd *m)
{
	struct link	*l, *next;

	for (l = TAILQ_FIRST(&m->links); l != NULL; l = next) {
		next = TAILQ_NEXT(l, entry);
		if (!l->dead)
			continue;
		TAILQ_REMOVE(&m->links, l, entry);
		explicit_bzero(l, sizeof *l);
		free(l);
	}
}

/* Home side: tell the deputy why it gets no session. */
static void
broker_fail(struct link *l, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void
broker_fail(struct link *l, const char *fmt, ...)
{
	va_list	 ap;
	char	*msg;

	va_start(ap, fmt);
	xvasprintf(&msg, fmt, ap);
	va_end(ap);
	if (l->deputy != NULL) {
		if (!l->deputy->dead)
			control_error(l->deputy, "node %u: %s", l->node, msg);
	} else
		log_limited_warnx(&broker_log_fail, l->node, "offer from node "
		    "%u refused: %s", l->node, msg);
	free(msg);
	broker_close(l);
}

static int
broker_send(struct link *l, uint16_t kind, const ProtobufCMessage *msg)
{
	uint8_t	body[LINK_MSG_MAX], frame[LINK_MSG_MAX];
	size_t	len, n;

	len = protobuf_c_message_get_packed_size(msg);
	if (len > sizeof body - FRAME_OVERHEAD)
		return -1;
	protobuf_c_message_pack(msg, body);
	n = frame_pack(kind, body, len, &l->m->key, frame, sizeof frame);
	/* Handshake messages are small: the socket buffer takes them. */
	return n == 0 || write(l->fd, frame, n) != (ssize_t)n ? -1 : 0;
}

/*
 * The next whole frame of the expected kind, checked: 1 with *body, 0 if
 * more must be read, -1 (and the link failed) on anything else.
 */
static int
broker_frame(struct link *l, uint16_t want, const uint8_t **body,
    size_t *blen)
{
	enum frame_error	fe;
	uint16_t		kind;
	size_t			n = frame_size(l->buf, l->len);

	if (n == 0 || (n <= sizeof l->buf && l->len < n))
		return 0;
	if (n > sizeof l->buf) {
		l->m->counters[C_RX_OVERSIZED]++;
		broker_fail(l, "handshake message too large");
		return -1;
	}
	fe = frame_unpack(l->buf, n, sizeof l->buf, &l->m->key, &kind, body,
	    blen);
	if (fe != FRAME_OK || kind != want || l->len != n) {
		l->m->counters[fe == FRAME_MAC_BAD ? C_RX_BAD_MAC :
		    C_RX_MALFORMED]++;
		broker_fail(l, "bad handshake message (%s)", fe != FRAME_OK ?
		    frame_strerror(fe) : "unexpected kind or trailing data");
		return -1;
	}
	l->len = 0;
	return 1;
}

static struct link *
broker_link(struct mosd *m, int fd, enum link_state state, uint32_t node)
{
	struct link	*l;

	l = xcalloc(1, sizeof *l);
	l->m = m;
	l->fd = fd;
	l->state = state;
	l->node = node;
	ev_io_init(&l->io, broker_link_cb, fd, state == LINK_CONNECTING ?
	    EV_WRITE : EV_READ);
	l->io.data = l;
	ev_io_start(m->loop, &l->io);
	ev_init(&l->timer, NULL);
	TAILQ_INSERT_TAIL(&m->links, l, entry);
	return l;
}

static void
broker_timeout_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct link	*l = w->data;

	broker_fail(l, "no answer within %.1f s",
	    l->m->conf->handshake_timeout_ms / 1000.0);
}

static void
broker_start_timer(struct link *l)
{
	ev_timer_init(&l->timer, broker_timeout_cb,
	    l->m->conf->handshake_timeout_ms / 1000.0, 0);
	l->timer.data = l;
	ev_timer_start(l->m->loop, &l->timer);
}

/* --- the target's side ---------------------------------------------- */

/*
 * May node, at index idx of the map, start one more handshake? Its tokens
 * grow by handshake_rate a second up to handshake_rate: one a connection.
 */
static struct broker_node *
broker_admit(struct mosd *m, uint32_t node, ssize_t idx)
{
	const struct cluster_conf	*c = m->conf;
	struct broker_node		*b = &m->bnodes[idx];
	uint64_t			 now = now_ms();
	char				 why[128];

	b->tokens += (now - b->at_ms) * c->handshake_rate / 1000.0;
	if (b->tokens > c->handshake_rate)
		b->tokens = c->handshake_rate;
	b->at_ms = now;
	if (b->tokens < 1)
		snprintf(why, sizeof why, "it opens more than %u connections "
		    "a second (handshake_rate)", c->handshake_rate);
	else if (b->handshakes >= c->handshakes_per_node)
		snprintf(why, sizeof why, "it has %u handshakes under way "
		    "(handshakes_per_node)", b->handshakes);
	else if (m->handshakes >= c->handshakes)
		snprintf(why, sizeof why, "%u handshakes are under way "
		    "(handshakes)", m->handshakes);
	else {
		b->tokens -= 1;
		b->handshakes++;
		m->handshakes++;
		m->counters[C_HS_TAKEN]++;
		return b;
	}
	m->counters[C_HS_REFUSED]++;
	log_limited_warnx(&broker_log_busy, node, "connection from node %u "
	    "closed: %s", node, why);
	return NULL;
}

/* One connection from another node: its hello, if it is a node's. */
static void
broker_accept_one(struct mosd *m, int fd, const struct sockaddr_storage *ss)
{
	Osm__MigHello		 hello = OSM__MIG_HELLO__INIT;
	struct broker_node	*b;
	struct link		*l;
	uint32_t		 node;
	ssize_t			 idx;
	int			 one = 1;

	/* Any port, but the address must be a node's. */
	if ((node = net_node_by_addr(m->conf, ss, 0)) == 0 ||
	    node == m->conf->self ||
	    (idx = gossip_index(m->gossip, node)) == -1) {
		m->counters[C_RX_UNKNOWN_NODE]++;
		close(fd);
		return;
	}
	if ((b = broker_admit(m, node, idx)) == NULL) {
		close(fd);
		return;
	}
	/*
	 * Calls and their answers are small and must not wait for the ACK
	 * of a report sent before them (Nagle and delayed ACKs: 40 ms).
	 */
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	l = broker_link(m, fd, LINK_WAIT_OFFER, node);
	l->from = b;
	broker_start_timer(l);
	if (getrandom(l->challenge, sizeof l->challenge, 0) !=
	    sizeof l->challenge) {
		broker_fail(l, "getrandom: %s", strerror(errno));
		return;
	}
	hello.node = m->conf->self;
	hello.challenge.data = l->challenge;
	hello.challenge.len = sizeof l->challenge;
	if (broker_send(l, OSM__FRAME_KIND__FRAME_MIG_HELLO,
	    &hello.base) == -1)
		broker_fail(l, "cannot send hello: %s", strerror(errno));
}

/* Out of descriptors: take no connection for a moment (not a busy loop). */
static void
broker_pause_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct mosd	*m = w->data;

	ev_io_start(loop, &m->tcp_ev);
}

static void
broker_accept_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct mosd		*m = w->data;
	struct sockaddr_storage	 ss;
	socklen_t		 sslen;
	int			 fd = -1, i;

	for (i = 0; i < BROKER_ACCEPT_BATCH; i++) {
		sslen = sizeof ss;
		fd = accept4(m->tcp_fd, (struct sockaddr *)&ss, &sslen,
		    SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd == -1)
			break;
		broker_accept_one(m, fd, &ss);
	}
	if (fd != -1 || errno == EAGAIN || errno == EINTR ||
	    errno == ECONNABORTED)
		return;
	log_limited_warnx(&broker_log_accept, 0, "broker: accept: %s%s",
	    strerror(errno), errno == EMFILE || errno == ENFILE ?
	    "; pausing" : "");
	ev_io_stop(loop, &m->tcp_ev);
	ev_timer_set(&m->tcp_pause, BROKER_PAUSE, 0);
	ev_timer_start(loop, &m->tcp_pause);
}

/* What an offer must hold before we even consider it. */
static int
broker_offer_valid(struct link *l, const Osm__MigOffer *o, char **why)
{
	size_t	i;

	for (i = 0; i < o->n_groups; i++)
		if (strlen(o->groups[i]) == 0 || strlen(o->groups[i]) > 32)
			break;
	if (o->n_groups > 256 || i < o->n_groups)
		*why = xstrdup("offer has bad group names");
	else if (o->home != l->node || o->target != l->m->conf->self)
		*why = xstrdup("offer names the wrong nodes");
	else if (o->challenge.len != sizeof l->challenge ||
	    timingsafe_memcmp(o->challenge.data, l->challenge,
	    sizeof l->challenge) != 0)
		*why = xstrdup("offer does not answer our challenge");
	else if (o->nonce.len != SESSION_NONCE_LEN)
		*why = xstrdup("offer has a bad nonce");
	else if (o->pid == 0 || strlen(o->user) == 0 || strlen(o->user) > 32 ||
	    strlen(o->command) > 256)
		*why = xstrdup("offer has a bad process description");
	else
		return 0;
	return -1;
}

static void
broker_offer(struct link *l, const uint8_t *body, size_t blen)
{
	struct mosd		*m = l->m;
	Osm__MigOffer		*o;
	Osm__MigAnswer		 ans = OSM__MIG_ANSWER__INIT;
	uint8_t			 key[SESSION_KEY_LEN];
	char			*why = NULL;

	if ((o = osm__mig_offer__unpack(NULL, blen, body)) == NULL) {
		m->counters[C_RX_MALFORMED]++;
		broker_fail(l, "malformed offer");
		return;
	}
	if (broker_offer_valid(l, o, &why) == 0 &&
	    rules_may_take(m, o, &why) == 0 &&
	    getrandom(l->nonce, sizeof l->nonce, 0) == sizeof l->nonce) {
		session_derive(&m->key, o->nonce.data, l->nonce, o->home,
		    m->conf->self, SESSION_REMOTE, key);
		guests_spawn(m, l->fd, key, o, &why);
		explicit_bzero(key, sizeof key);
	} else if (why == NULL)
		why = xstrdup("no randomness");
	ans.accept = why == NULL;
	m->counters[ans.accept ? C_OFFERS_ACCEPTED : C_OFFERS_REFUSED]++;
	if (ans.accept) {
		ans.nonce.data = l->nonce;
		ans.nonce.len = sizeof l->nonce;
		ans.has_nonce = 1;
		log_limited_info(&broker_log_offer, o->home, "guest %u@%u "
		    "(%s, %s) accepted", o->pid, o->home, o->user, o->command);
	} else {
		ans.reason = why;
		log_limited_info(&broker_log_offer, o->home, "offer of %u@%u "
		    "refused: %s", o->pid, o->home, why);
	}
	broker_send(l, OSM__FRAME_KIND__FRAME_MIG_ANSWER, &ans.base);
	/* Accepted: the connection is the guest's now. */
	free(why);
	osm__mig_offer__free_unpacked(o, NULL);
	broker_close(l);
}

/* --- the home's side ------------------------------------------------ */

static void
broker_hello(struct link *l, const uint8_t *body, size_t blen)
{
	struct mosd	*m = l->m;
	struct mproc	*mp;
	Osm__MigHello	*h;
	Osm__MigOffer	 o = OSM__MIG_OFFER__INIT;

	if ((h = osm__mig_hello__unpack(NULL, blen, body)) == NULL ||
	    h->node != l->node || h->challenge.len != SESSION_NONCE_LEN) {
		if (h != NULL)
			osm__mig_hello__free_unpacked(h, NULL);
		broker_fail(l, "bad hello");
		return;
	}
	if ((mp = procs_deputy(m, l->pid)) == NULL ||
	    getrandom(l->nonce, sizeof l->nonce, 0) != sizeof l->nonce) {
		osm__mig_hello__free_unpacked(h, NULL);
		broker_fail(l, "process %u has gone", l->pid);
		return;
	}
	o.home = m->conf->self;
	o.target = l->node;
	o.challenge = h->challenge;
	o.nonce.data = l->nonce;
	o.nonce.len = sizeof l->nonce;
	o.pid = mp->pid;
	o.uid = mp->uid;
	o.gid = 0;
	o.user = mp->user;
	o.command = mp->command != NULL ? mp->command : "";
	if (mp->rss != 0 || mp->mem_need != 0) {
		o.has_mem_bytes = 1;
		o.mem_bytes = mp->mem_need > mp->rss ? mp->mem_need : mp->rss;
	}
	o.groups = mp->groups;
	o.n_groups = mp->ngroups;
	if (broker_send(l, OSM__FRAME_KIND__FRAME_MIG_OFFER, &o.base) == -1) {
		osm__mig_hello__free_unpacked(h, NULL);
		broker_fail(l, "cannot send the offer: %s", strerror(errno));
		return;
	}
	osm__mig_hello__free_unpacked(h, NULL);
	l->state = LINK_WAIT_ANSWER;
}

static void
broker_answer(struct link *l, const uint8_t *body, size_t blen)
{
	struct mosd	*m = l->m;
	Osm__MigAnswer	*a;
	Osm__CtlReply	 reply = OSM__CTL_REPLY__INIT;
	uint8_t		 key[SESSION_KEY_LEN];
	int		 fl;

	if ((a = osm__mig_answer__unpack(NULL, blen, body)) == NULL) {
		broker_fail(l, "malformed answer");
		return;
	}
	if (!a->accept) {
		broker_fail(l, "refused: %s", a->reason != NULL ? a->reason :
		    "no reason given");
		osm__mig_answer__free_unpacked(a, NULL);
		return;
	}
	if (!a->has_nonce || a->nonce.len != SESSION_NONCE_LEN) {
		osm__mig_answer__free_unpacked(a, NULL);
		broker_fail(l, "answer without a nonce");
		return;
	}
	session_derive(&m->key, l->nonce, a->nonce.data, m->conf->self,
	    l->node, SESSION_HOME, key);
	osm__mig_answer__free_unpacked(a, NULL);
	if (!l->deputy->dead) {
		/* The deputy blocks on it: give the socket back blocking. */
		fl = fcntl(l->fd, F_GETFL);
		fcntl(l->fd, F_SETFL, fl & ~O_NONBLOCK);
		reply.ok = 1;
		reply.has_session_key = 1;
		reply.session_key.data = key;
		reply.session_key.len = sizeof key;
		control_reply_fd(l->deputy, &reply, l->fd);
		l->fd = -1;	/* the deputy's now */
		log_limited_info(&broker_log_session, l->node, "session for "
		    "%u to node %u open", l->pid, l->node);
	}
	explicit_bzero(key, sizeof key);
	broker_close(l);
}

static void
broker_link_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct link	*l = w->data;
	const uint8_t	*body;
	size_t		 blen;
	ssize_t		 n;
	int		 err = 0;
	socklen_t	 elen = sizeof err;

	if (l->state == LINK_CONNECTING) {
		if (getsockopt(l->fd, SOL_SOCKET, SO_ERROR, &err, &elen) == -1 ||
		    err != 0) {
			broker_fail(l, "cannot connect: %s", strerror(err));
			return;
		}
		ev_io_stop(loop, &l->io);
		ev_io_set(&l->io, l->fd, EV_READ);
		ev_io_start(loop, &l->io);
		l->state = LINK_WAIT_HELLO;
		return;
	}
	n = read(l->fd, l->buf + l->len, sizeof l->buf - l->len);
	if (n <= 0) {
		if (n == -1 && (errno == EAGAIN || errno == EINTR))
			return;
		broker_fail(l, "connection closed during the handshake");
		return;
	}
	l->len += n;
	switch (l->state) {
	case LINK_WAIT_OFFER:
		if (broker_frame(l, OSM__FRAME_KIND__FRAME_MIG_OFFER, &body,
		    &blen) == 1)
			broker_offer(l, body, blen);
		break;
	case LINK_WAIT_HELLO:
		if (broker_frame(l, OSM__FRAME_KIND__FRAME_MIG_HELLO, &body,
		    &blen) == 1)
			broker_hello(l, body, blen);
		break;
	case LINK_WAIT_ANSWER:
		if (broker_frame(l, OSM__FRAME_KIND__FRAME_MIG_ANSWER, &body,
		    &blen) == 1)
			broker_answer(l, body, blen);
		break;
	case LINK_CONNECTING:
		break;
	}
}

/*
 * A deputy asks for a session to node for process pid. Answered later
 * through control_reply_fd, or control_error.
 */
int
broker_connect(struct mosd *m, struct peer *deputy, uint32_t pid,
    uint32_t node, char **cause)
{
	const struct conf_node	*self = conf_find(m->conf, m->conf->self);
	const struct conf_node	*to = conf_find(m->conf, node);
	struct sockaddr_storage	 src;
	struct link		*l;
	int			 fd, one = 1;

	fd = socket(to->sa.ss_family, SOCK_STREAM | SOCK_NONBLOCK |
	    SOCK_CLOEXEC, 0);
	if (fd == -1) {
		xasprintf(cause, "socket: %s", strerror(errno));
		return -1;
	}
	/* From our map address, which the target checks. */
	memcpy(&src, &self->sa, self->salen);
	((struct sockaddr_in *)&src)->sin_port = 0;	/* same for v6 */
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	if (bind(fd, (struct sockaddr *)&src, self->salen) == -1 ||
	    (connect(fd, (const struct sockaddr *)&to->sa, to->salen) == -1 &&
	    errno != EINPROGRESS)) {
		xasprintf(cause, "node %u: cannot connect: %s", node,
		    strerror(errno));
		close(fd);
		return -1;
	}
	l = broker_link(m, fd, LINK_CONNECTING, node);
	l->deputy = deputy;
	l->pid = pid;
	peer_ref(deputy);
	broker_start_timer(l);
	return 0;
}

int
broker_listen(struct mosd *m, char **cause)
{
	const struct conf_node	*self = conf_find(m->conf, m->conf->self);
	int			 fd, one = 1;

	fd = socket(self->sa.ss_family, SOCK_STREAM | SOCK_NONBLOCK |
	    SOCK_CLOEXEC, 0);
	if (fd == -1) {
		xasprintf(cause, "socket: %s", strerror(errno));
		return -1;
	}
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	if (bind(fd, (const struct sockaddr *)&self->sa, self->salen) == -1 ||
	    listen(fd, 64) == -1) {
		xasprintf(cause, "TCP %s port %u: %s", self->addr,
		    m->conf->port, strerror(errno));
		close(fd);
		return -1;
	}
	m->tcp_fd = fd;
	return 0;
}

void
broker_start(struct mosd *m)
{
	TAILQ_INIT(&m->links);
	m->bnodes = xcalloc(m->gossip->n, sizeof *m->bnodes);
	ev_io_init(&m->tcp_ev, broker_accept_cb, m->tcp_fd, EV_READ);
	m->tcp_ev.data = m;
	ev_io_start(m->loop, &m->tcp_ev);
	ev_init(&m->tcp_pause, broker_pause_cb);
	m->tcp_pause.data = m;
}
