/*
 * mosd's control socket: the records a local client sends, read by
 * mosd/peer.c and dispatched by mosd/control.c to the ctl-*.c commands,
 * and the replies agents send to mosd's orders. control.c is included
 * here for its static dispatch; the client is one end of a socketpair,
 * served by mosd's own event loop code.
 *
 * connect() is wrapped (-Wl,--wrap): mosd reaches no real socket. A
 * connection to an agent's unix socket, for an order, gets one end of a
 * fresh socketpair in its place, from which the input then answers;
 * any other fails with ECONNREFUSED.
 *
 * Input: a mode byte, then records. There are two clients: the first's
 * uid is chosen by mode bits 0-1 (root, a user, a guest uid), the second
 * is root; mode bit 2 lets orders reach their agent. A record goes to the
 * first client, with op bit 2 to the second, or with op bit 1 to an
 * agent that got an order (op >> 3 says which); with op bit 0 set the
 * harness frames its bytes as a record (u32 length), otherwise they go as
 * they are.
 */
#include "mosd/control.c"

#include <arpa/inet.h>

#include <fcntl.h>

#include "fuzz.h"

#define AGENTS_MAX	8

static struct mosd	 m;
static const uid_t	 uids[] = { 0, 1000, 60000, 60999 };
static int		 agents[AGENTS_MAX];
static size_t		 nagents;
static int		 orders_reach;
static const char	 conf_text[] = "node 1 127.0.0.1\nnode 2 127.0.0.2\n"
			    "node 3 127.0.0.3\nnode 9 ::1\nself 1\n";

int	__wrap_connect(int, const struct sockaddr *, socklen_t);

int
__wrap_connect(int fd, const struct sockaddr *sa, socklen_t len)
{
	int	sv[2];

	if (sa->sa_family != AF_UNIX || !orders_reach ||
	    nagents == AGENTS_MAX) {
		errno = ECONNREFUSED;
		return -1;
	}
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0,
	    sv) == -1)
		fatal("socketpair");
	if (dup3(sv[0], fd, O_CLOEXEC) == -1)
		fatal("dup3");
	close(sv[0]);
	agents[nagents++] = sv[1];
	return 0;
}

void
fuzz_init(void)
{
	struct gossip_info	 info = { .load = 50, .cpus = 400,
				    .speed = 1000, .mem_total = 8192,
				    .mem_free = 4096 };
	uint32_t		*ids;
	size_t			 i;

	m.conf = fuzz_conf(conf_text);
	m.key = *fuzz_key();
	m.loop = ev_loop_new(EVFLAG_AUTO);
	TAILQ_INIT(&m.peers);
	TAILQ_INIT(&m.procs);
	m.policy = policy_default();
	m.probe.cpus = 2;
	m.probe.speed = 1000;
	m.probe.mem_total = 4ULL << 30;
	m.probe.mem_free = 1ULL << 30;
	ids = xcalloc(m.conf->nnodes, sizeof *ids);
	for (i = 0; i < m.conf->nnodes; i++)
		ids[i] = m.conf->nodes[i].id;
	m.gossip = gossip_new(m.conf->self, ids, m.conf->nnodes, 8, 1, 1);
	free(ids);
	broker_init(&m);
	hashes_start(&m);
	/* Every node up, but node 3, never heard of. */
	m.gossip->timeout_ms = UINT64_MAX / 2;
	for (i = 0; i < m.gossip->n; i++)
		if (m.gossip->ids[i] != 3)
			gossip_merge(m.gossip, i, now_ms(), &info);
	net_refresh_self(&m);
	control_limits(&m);
}

static void
drain(int fd)
{
	uint8_t	buf[4096];

	while (read(fd, buf, sizeof buf) > 0)
		;
}

/* What mosd answered a client: records of CtlReply, every one. */
static void
replies(int fd, struct fuzz_out *got)
{
	Osm__CtlReply	*reply;
	uint8_t		 buf[4096];
	uint32_t	 n;
	ssize_t		 r;

	while ((r = read(fd, buf, sizeof buf)) > 0)
		fuzz_put(got, buf, r);
	while (got->n >= 4) {
		memcpy(&n, got->p, 4);
		n = ntohl(n);
		if (got->n < 4 + (size_t)n)
			break;
		reply = osm__ctl_reply__unpack(NULL, n, got->p + 4);
		fuzz_assert(reply != NULL);
		log_debug("reply: %s%s", reply->ok ? "ok" : "error: ",
		    reply->error != NULL ? reply->error : "");
		osm__ctl_reply__free_unpacked(reply, NULL);
		got->n -= 4 + n;
		memmove(got->p, got->p + 4 + n, got->n);
	}
}

/* Run mosd's loop until it has nothing more to do. */
static void
settle(const int *clients, struct fuzz_out *got)
{
	size_t	i, k;

	for (i = 0; i < 8; i++) {
		ev_run(m.loop, EVRUN_NOWAIT);
		replies(clients[0], &got[0]);
		replies(clients[1], &got[1]);
		for (k = 0; k < nagents; k++)
			drain(agents[k]);
	}
}

/* What does not fit in the socket is lost, as from a client gone mad. */
static void
send_record(int fd, uint8_t op, const uint8_t *p, size_t len)
{
	uint32_t	n = htonl(len);

	if ((op & 1) && write(fd, &n, sizeof n) != sizeof n)
		return;
	if (write(fd, p, len) == -1)
		return;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_in	 in = { data, size };
	struct fuzz_out	 got[2] = { { 0 }, { 0 } };
	struct peer	*p;
	const uint8_t	*body;
	size_t		 len, k;
	uint8_t		 op, mode;
	uid_t		 uid;
	char		*why = NULL;
	int		 sv[2][2], ends[2], i, fd0 = fuzz_lowest_fd();

	/* Each input with the sessions' limits whole: the same every run. */
	memset(m.bnodes, 0, m.gossip->n * sizeof *m.bnodes);
	mode = fuzz_u8(&in);
	orders_reach = (mode & 4) != 0;
	for (i = 0; i < 2; i++) {
		if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK |
		    SOCK_CLOEXEC, 0, sv[i]) == -1)
			fatal("socketpair");
		/* pid 0: /proc shows 0 as the tracer of most */
		uid = i == 0 ? uids[mode & 3] : 0;
		if (control_client(&m, sv[i][0], uid, uid, 0, &why) == NULL)
			fatalx("control_client: %s", why);
		ends[i] = sv[i][1];
	}

	while (fuzz_record(&in, &op, &body, &len)) {
		if (!(op & 2))
			send_record(ends[(op >> 2) & 1], op, body, len);
		else if (nagents > 0)
			send_record(agents[(op >> 3) % nagents], op, body, len);
		settle(ends, got);
	}
	for (i = 0; i < 2; i++)
		shutdown(ends[i], SHUT_WR);
	for (k = 0; k < nagents; k++)
		shutdown(agents[k], SHUT_WR);
	settle(ends, got);

	/* mosd's shutdown: every connection closed, every process gone */
	TAILQ_FOREACH(p, &m.peers, entry)
		peer_close(p);
	/* Sessions still queued find their deputies gone. */
	ev_feed_event(m.loop, &m.tcp_queue, EV_TIMER);
	ev_run(m.loop, EVRUN_NOWAIT);
	broker_reap(&m);
	peer_reap(&m);
	fuzz_assert(TAILQ_EMPTY(&m.peers) && m.npeers == 0);
	/* every quota given back */
	fuzz_assert(m.quota.users == NULL && m.quota.conns == 0);
	fuzz_assert(TAILQ_EMPTY(&m.procs));
	fuzz_assert(TAILQ_EMPTY(&m.links));
	for (i = 0; i < 2; i++) {
		close(ends[i]);
		free(got[i].p);
	}
	for (k = 0; k < nagents; k++)
		close(agents[k]);
	nagents = 0;
	m.flags = 0;
	fuzz_fd_check(fd0);
	return 0;
}

/* n copies of req, each framed, in one raw write to the first client. */
static void
control_seed_burst(struct fuzz_out *o, Osm__CtlRequest *req, size_t n)
{
	struct fuzz_out	 burst = { 0 };
	uint8_t		 buf[256];
	uint32_t	 len;
	size_t		 i;

	req->version = CTL_VERSION;
	len = osm__ctl_request__get_packed_size(req);
	fuzz_assert(len <= sizeof buf);
	osm__ctl_request__pack(req, buf);
	len = htonl(len);
	for (i = 0; i < n; i++) {
		fuzz_put(&burst, &len, sizeof len);
		fuzz_put(&burst, buf, ntohl(len));
	}
	fuzz_put_record(o, 0, burst.p, burst.n);
	free(burst.p);
}

static void
put_request(struct fuzz_out *o, uint8_t op, Osm__CtlRequest *req)
{
	req->version = CTL_VERSION;
	fuzz_put_msg(o, op | 1, &req->base);
}

void
fuzz_seeds(const char *dir)
{
	struct fuzz_out	 o = { 0 };
	Osm__CtlRequest	 req = OSM__CTL_REQUEST__INIT;
	Osm__CtlAgent	 agent = OSM__CTL_AGENT__INIT;
	Osm__CtlReply	 reply = OSM__CTL_REPLY__INIT;
	size_t		 k;

	/* each request alone, as a user */
	for (k = 0; k < nitems(control_cmds); k++) {
		osm__ctl_request__init(&req);
		req.type = control_cmds[k]->type;
		req.has_pid = req.has_node = 1;
		req.pid = 1;
		req.node = 2;
		fuzz_put_u8(&o, 1);
		put_request(&o, 0, &req);
		put_request(&o, 0, &req);
		fuzz_seed(dir, control_cmds[k]->name, &o);
	}

	/* root: a deputy for pid 1, moved, its agent answering */
	agent.role = OSM__CTL_ROLE__ROLE_DEPUTY;
	agent.pid = 1;
	agent.where = 1;
	agent.state = OSM__PROC_STATE__PROC_RUNNING;
	agent.command = "init";
	agent.socket = "@osmosis-deputy-fuzz";
	agent.has_rss_bytes = 1;
	agent.rss_bytes = 1 << 20;
	osm__ctl_request__init(&req);
	req.type = OSM__CTL_TYPE__CTL_AGENT_HELLO;
	req.agent = &agent;
	fuzz_put_u8(&o, 4);
	put_request(&o, 0, &req);
	osm__ctl_request__init(&req);
	req.type = OSM__CTL_TYPE__CTL_MIGRATE;
	req.has_pid = req.has_node = 1;
	req.pid = 1;
	req.node = 2;
	put_request(&o, 0, &req);
	reply.ok = 1;
	fuzz_put_msg(&o, 2 | 1, &reply.base);
	osm__ctl_request__init(&req);
	req.type = OSM__CTL_TYPE__CTL_CONNECT;
	req.has_pid = req.has_node = 1;
	req.pid = 1;
	req.node = 2;
	put_request(&o, 0, &req);
	req.type = OSM__CTL_TYPE__CTL_BEST;
	put_request(&o, 0, &req);
	req.type = OSM__CTL_TYPE__CTL_PS;
	req.has_all = req.all = 1;
	put_request(&o, 0, &req);
	fuzz_seed(dir, "deputy", &o);

	/* a guest agent, then the owner (root) blocks the node, expels it */
	agent.role = OSM__CTL_ROLE__ROLE_GUEST;
	agent.pid = 4242;
	agent.home = 2;
	agent.where = 1;
	agent.socket = "@osmosis-guest-fuzz";
	agent.has_local_pid = 1;
	agent.local_pid = 77;
	osm__ctl_request__init(&req);
	req.type = OSM__CTL_TYPE__CTL_AGENT_HELLO;
	req.agent = &agent;
	fuzz_put_u8(&o, 2 | 4);
	put_request(&o, 0, &req);
	agent.state = OSM__PROC_STATE__PROC_STOPPED;
	req.type = OSM__CTL_TYPE__CTL_AGENT_STATUS;
	put_request(&o, 0, &req);
	osm__ctl_request__init(&req);
	req.type = OSM__CTL_TYPE__CTL_FLAGS;
	req.has_set_flags = 1;
	req.set_flags = OSM__NODE_FLAG__NODE_BLOCK;
	put_request(&o, 4, &req);
	osm__ctl_request__init(&req);
	req.type = OSM__CTL_TYPE__CTL_EXPEL;
	put_request(&o, 4, &req);
	reply.ok = 0;
	reply.error = "not now";
	fuzz_put_msg(&o, 2 | 1, &reply.base);
	req.type = OSM__CTL_TYPE__CTL_BRING;
	put_request(&o, 4, &req);
	fuzz_seed(dir, "guest-expelled", &o);

	/* a guest agent in a state that is none of ProcState's: refused */
	agent.state = (Osm__ProcState)99;
	osm__ctl_request__init(&req);
	req.type = OSM__CTL_TYPE__CTL_AGENT_HELLO;
	req.agent = &agent;
	fuzz_put_u8(&o, 2);
	put_request(&o, 0, &req);
	fuzz_seed(dir, "bad-state", &o);

	/*
	 * requests that come faster than they are answered: a burst in one
	 * write (taken a few per loop iteration), and a deputy's order
	 * (deferred) with a request behind it that waits for its answer
	 */
	osm__ctl_request__init(&req);
	req.type = OSM__CTL_TYPE__CTL_STATS;
	fuzz_put_u8(&o, 1);
	control_seed_burst(&o, &req, 500);
	fuzz_seed(dir, "burst", &o);

	agent.role = OSM__CTL_ROLE__ROLE_DEPUTY;
	agent.pid = 1;
	agent.home = 0;
	agent.where = 1;
	agent.state = OSM__PROC_STATE__PROC_RUNNING;
	agent.socket = "@osmosis-deputy-fuzz";
	agent.has_local_pid = 0;
	osm__ctl_request__init(&req);
	req.type = OSM__CTL_TYPE__CTL_AGENT_HELLO;
	req.agent = &agent;
	fuzz_put_u8(&o, 4);
	put_request(&o, 0, &req);
	osm__ctl_request__init(&req);
	req.type = OSM__CTL_TYPE__CTL_MIGRATE;
	req.has_pid = req.has_node = 1;
	req.pid = 1;
	req.node = 2;
	control_seed_burst(&o, &req, 1);
	osm__ctl_request__init(&req);
	req.type = OSM__CTL_TYPE__CTL_STATUS;
	control_seed_burst(&o, &req, 3);
	reply.ok = 1;
	reply.error = NULL;
	fuzz_put_msg(&o, 2 | 1, &reply.base);
	fuzz_seed(dir, "deferred-then-more", &o);

	/* a record over the limit, announced and cut short */
	fuzz_put_u8(&o, 1);
	fuzz_put_record(&o, 0, "\0\1\0\1\x08\x01", 6);
	fuzz_seed(dir, "oversized", &o);
}
