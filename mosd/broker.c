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
 * its end; the target has its privileged parent start a guest agent on
 * the connection (parent.c, which answers before the target answers the
 * home), and the home passes it to the deputy. The cluster key stays in
 * the network process.
 *
 * Anyone who can reach the port can open a connection, without the key:
 * what that may cost is bounded (docs/RELIABILITY.md). Only a node's
 * address is served at all; a node has handshake_rate new connections a
 * second and handshakes_per_node under way, all nodes handshakes; past
 * these it is slowed: its connections are closed as soon as taken, with no
 * hello and one log line now and then. A handshake has handshake_timeout
 * and a buffer of LINK_MSG_MAX.
 *
 * The home keeps to the same limits towards each target, so that many
 * moves at once (an expel, an admin's burst, the balancer) are paced, not
 * refused: a deputy's session waits in a queue while handshakes_per_node
 * of ours to that node are under way or its handshake_rate is spent, up
 * to BROKER_QUEUE_MS (below the deputy's own wait for the answer).
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
#define BROKER_QUEUE_MS		8000	/* a session waits to start at most */

static struct log_limit broker_log_fail, broker_log_offer, broker_log_busy,
    broker_log_accept, broker_log_session;

enum link_state {
	LINK_QUEUED,		/* home: waits for its turn to the target */
	LINK_CONNECTING,	/* home: TCP connect under way */
	LINK_WAIT_HELLO,	/* home */
	LINK_WAIT_OFFER,	/* target */
	LINK_WAIT_ANSWER,	/* home */
	LINK_WAIT_GUEST,	/* target: the parent starts the guest agent */
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
	struct broker_node	*to;		/* home: counted there */
	uint64_t		 queued_ms;	/* home: when it was asked */
	uint32_t		 ask;		/* target: asked of the parent */
	struct privmsg_guest	 guest;		/* target: what was asked */
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
	if (l->ask != 0) {
		privsep_cancel(l->m, l->ask);
		l->ask = 0;
	}
	if (l->from != NULL) {
		l->from->handshakes--;
		l->m->handshakes--;
		l->from = NULL;
	}
	if (l->to != NULL) {
		/* Its place is free: the next session may start. */
		l->to->out--;
		l->to = NULL;
		ev_timer_stop(l->m->loop, &l->m->tcp_queue);
		ev_timer_set(&l->m->tcp_queue, 0, 0);
		ev_timer_start(l->m->loop, &l->m->tcp_queue);
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
	if (fd != -1)
		ev_io_start(m->loop, &l->io);
	ev_init(&l->timer, NULL);
	TAILQ_INSERT_TAIL(&m->links, l, entry);
	return l;
}

static void
broker_timeout_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct link	*l = w->data;

	looptime_mark(loop, "broker timeout");

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

	looptime_mark(loop, "broker pause");

	ev_io_start(loop, &m->tcp_ev);
}

static void
broker_accept_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct mosd		*m = w->data;
	struct sockaddr_storage	 ss;
	socklen_t		 sslen;
	int			 fd = -1, i;

	looptime_mark(loop, "broker accept");

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

/* Tell the home what became of its offer, and let go of the link. */
static void
broker_answer_home(struct link *l, const char *why)
{
	struct mosd		*m = l->m;
	struct privmsg_guest	*g = &l->guest;
	Osm__MigAnswer		 ans = OSM__MIG_ANSWER__INIT;

	ans.accept = why == NULL;
	m->counters[ans.accept ? C_OFFERS_ACCEPTED : C_OFFERS_REFUSED]++;
	if (ans.accept) {
		ans.nonce.data = l->nonce;
		ans.nonce.len = sizeof l->nonce;
		ans.has_nonce = 1;
		log_limited_info(&broker_log_offer, l->node, "guest %u@%u "
		    "(%s, %s) accepted", g->pid, l->node, g->user, g->command);
	} else {
		ans.reason = (char *)why;
		log_limited_info(&broker_log_offer, l->node, "offer of %u@%u "
		    "refused: %s", g->pid, l->node, why);
	}
	broker_send(l, OSM__FRAME_KIND__FRAME_MIG_ANSWER, &ans.base);
	/* Accepted: the connection is the guest agent's now. */
	broker_close(l);
}

/* The parent's answer: the guest agent runs, or why not. */
static void
broker_guest_done(struct mosd *m, void *arg, const struct privmsg_answer *a)
{
	struct link	*l = arg;

	l->ask = 0;
	explicit_bzero(l->guest.key, sizeof l->guest.key);
	if (a == NULL)
		broker_answer_home(l, "mosd is stopping");
	else if (!a->ok)
		broker_answer_home(l, a->why);
	else
		broker_answer_home(l, NULL);
}

/*
 * An offer checked and allowed: the guest agent is the privileged
 * parent's to start, on this connection; the home hears once it runs.
 */
static int
broker_guest(struct link *l, const Osm__MigOffer *o, char **why)
{
	struct mosd		*m = l->m;
	struct privmsg_guest	*g = &l->guest;

	if (getrandom(l->nonce, sizeof l->nonce, 0) != sizeof l->nonce) {
		*why = xstrdup("no randomness");
		return -1;
	}
	memset(g, 0, sizeof *g);
	g->home = o->home;
	g->pid = o->pid;
	g->owner_uid = o->uid;
	g->owner_gid = o->gid;
	snprintf(g->user, sizeof g->user, "%s", o->user);
	snprintf(g->command, sizeof g->command, "%s", o->command);
	/* The policy is ours, not the parent's: what it says goes along. */
	g->strict_files = policy_rule(m->policy, o->user,
	    (const char *const *)o->groups, o->n_groups)->strict_files;
	session_derive(&m->key, o->nonce.data, l->nonce, o->home,
	    m->conf->self, SESSION_REMOTE, g->key);
	if (privsep_ask(m, PRIVMSG_GUEST, g, sizeof *g, l->fd,
	    broker_guest_done, l, &l->ask, why) == -1) {
		explicit_bzero(g->key, sizeof g->key);
		return -1;
	}
	/* The home says nothing until it has our answer. */
	ev_io_stop(m->loop, &l->io);
	l->state = LINK_WAIT_GUEST;
	return 0;
}

static void
broker_offer(struct link *l, const uint8_t *body, size_t blen)
{
	struct mosd		*m = l->m;
	Osm__MigOffer		*o;
	char			*why = NULL;

	if ((o = osm__mig_offer__unpack(NULL, blen, body)) == NULL) {
		m->counters[C_RX_MALFORMED]++;
		broker_fail(l, "malformed offer");
		return;
	}
	if (broker_offer_valid(l, o, &why) == 0 &&
	    rules_may_take(m, o, &why) == 0 &&
	    broker_guest(l, o, &why) == 0) {
		osm__mig_offer__free_unpacked(o, NULL);
		return;
	}
	l->guest.pid = o->pid;
	osm__mig_offer__free_unpacked(o, NULL);
	broker_answer_home(l, why);
	free(why);
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
	o.gid = mp->gid;
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

	looptime_mark(loop, "broker link");

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
	case LINK_QUEUED:
	case LINK_CONNECTING:
	case LINK_WAIT_GUEST:
		break;
	}
}

/* Open the TCP connection of a queued session: 0, or -1 and *cause. */
static int
broker_open(struct link *l, char **cause)
{
	struct mosd		*m = l->m;
	const struct conf_node	*self = conf_find(m->conf, m->conf->self);
	const struct conf_node	*to = conf_find(m->conf, l->node);
	struct sockaddr_storage	 src;
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
		xasprintf(cause, "cannot connect: %s", strerror(errno));
		close(fd);
		return -1;
	}
	l->fd = fd;
	l->state = LINK_CONNECTING;
	ev_io_set(&l->io, fd, EV_WRITE);
	ev_io_start(m->loop, &l->io);
	broker_start_timer(l);
	return 0;
}

/*
 * May a session of ours to b's node start now? As broker_admit counts
 * what comes in, so that the target does not turn ours away: at most
 * handshakes_per_node at once, and a little below its handshake_rate
 * (a burst of half, then 80%), for the network's jitter.
 */
static int
broker_may_open(struct mosd *m, struct broker_node *b, uint64_t now,
    double *wait)
{
	const struct cluster_conf	*c = m->conf;
	double				 rate = c->handshake_rate * 0.8;
	double				 burst = c->handshake_rate / 2.0;

	if (burst < 1)
		burst = 1;
	b->out_tokens += (now - b->out_at_ms) * rate / 1000.0;
	if (b->out_tokens > burst)
		b->out_tokens = burst;
	b->out_at_ms = now;
	if (b->out >= c->handshakes_per_node)
		return 0;	/* one ending starts the next */
	if (b->out_tokens < 1) {
		if (*wait == 0 || (1 - b->out_tokens) / rate < *wait)
			*wait = (1 - b->out_tokens) / rate;
		return 0;
	}
	b->out_tokens -= 1;
	b->out++;
	return 1;
}

/*
 * Start the queued sessions that may start, in the order asked; fail
 * those that waited too long. Again when a token comes, if one waits.
 */
static void
broker_queue_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct mosd		*m = w->data;
	struct broker_node	*b;
	struct link		*l;
	uint64_t		 now = now_ms();
	double			 wait = 0;
	char			*cause = NULL;

	looptime_mark(loop, "broker queue");

	TAILQ_FOREACH(l, &m->links, entry) {
		if (l->dead || l->state != LINK_QUEUED)
			continue;
		if (l->deputy->dead) {		/* nobody waits for it */
			broker_close(l);
			continue;
		}
		if (now - l->queued_ms > BROKER_QUEUE_MS) {
			broker_fail(l, "%llu ms waiting for a turn: too many "
			    "moves to it at once", (unsigned long long)(now -
			    l->queued_ms));
			continue;
		}
		b = &m->bnodes[gossip_index(m->gossip, l->node)];
		if (!broker_may_open(m, b, now, &wait))
			continue;
		l->to = b;
		if (broker_open(l, &cause) == -1) {
			broker_fail(l, "%s", cause);
			free(cause);
			cause = NULL;
		}
	}
	/* A token to come, or the oldest to fail: look again then. */
	TAILQ_FOREACH(l, &m->links, entry)
		if (!l->dead && l->state == LINK_QUEUED) {
			if (wait == 0 || wait > BROKER_QUEUE_MS / 1000.0)
				wait = BROKER_QUEUE_MS / 1000.0;
			ev_timer_stop(loop, w);
			ev_timer_set(w, wait, 0);
			ev_timer_start(loop, w);
			break;
		}
}

/*
 * A deputy asks for a session to node for process pid. Answered later
 * through control_reply_fd, or control_error; queued until our handshakes
 * to node leave it room.
 */
int
broker_connect(struct mosd *m, struct peer *deputy, uint32_t pid,
    uint32_t node, char **cause)
{
	struct link	*l;

	l = broker_link(m, -1, LINK_QUEUED, node);
	l->deputy = deputy;
	l->pid = pid;
	l->queued_ms = now_ms();
	peer_ref(deputy);
	ev_timer_stop(m->loop, &m->tcp_queue);
	ev_timer_set(&m->tcp_queue, 0, 0);
	ev_timer_start(m->loop, &m->tcp_queue);
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

/* What the links need, without the listening socket (the fuzz targets'). */
void
broker_init(struct mosd *m)
{
	TAILQ_INIT(&m->links);
	m->bnodes = xcalloc(m->gossip->n, sizeof *m->bnodes);
	ev_init(&m->tcp_pause, broker_pause_cb);
	m->tcp_pause.data = m;
	ev_init(&m->tcp_queue, broker_queue_cb);
	m->tcp_queue.data = m;
}

void
broker_start(struct mosd *m)
{
	broker_init(m);
	ev_io_init(&m->tcp_ev, broker_accept_cb, m->tcp_fd, EV_READ);
	m->tcp_ev.data = m;
	ev_io_start(m->loop, &m->tcp_ev);
}
