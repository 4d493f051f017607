/*
 * mosd/broker.c: the migration handshake, both ends, on whatever another
 * node sends. The broker's own code is included here, so that its static
 * reader (broker_link_cb) runs exactly as in mosd, on one end of a
 * socketpair; privsep_ask and privsep_cancel are wrapped (-Wl,--wrap):
 * the harness plays the privileged parent, which would start the agent.
 *
 * Input: a mode byte, then records, each written to the link and read by
 * the broker before the next. Mode bit 0 plays the home (waiting for a
 * hello, then an answer; a deputy peer waits for the session), otherwise
 * the target (waiting for an offer, with the challenge it sent); bit 1
 * hangs up after the last record. The parent, asked for a guest agent,
 * cannot be asked with bit 2, refuses with bit 3, never answers with bit
 * 4, else starts it. A record whose op has bit 0 set is a
 * body that the harness frames under the cluster key as a hello, offer or
 * answer (op bits 1-2); otherwise its bytes go as they are.
 */
#include <sys/ioctl.h>

#include "mosd/broker.c"

#include "fuzz.h"

#define PEER_NODE	2
#define DEPUTY_PID	4242

static struct mosd	 m;
static const uint8_t	 challenge[SESSION_NONCE_LEN] = "fuzz challenge 0";
static const char	 conf_text[] = "node 1 127.0.0.1\nnode 2 127.0.0.2\n"
			    "node 3 127.0.0.3\nself 1\n";

static uint8_t		 mode;
static struct {				/* what the parent was asked */
	void	(*done)(struct mosd *, void *,
		    const struct privmsg_answer *);
	void	*arg;
	uint32_t id;
}			 asked;

int	__wrap_privsep_ask(struct mosd *, uint32_t, const void *, size_t,
	    int, void (*)(struct mosd *, void *,
	    const struct privmsg_answer *), void *, uint32_t *, char **);
void	__wrap_privsep_cancel(struct mosd *, uint32_t);

/*
 * The offer passed every check: the parent is asked for a guest agent,
 * with what its own checks (privmsg_check_guest) will take.
 */
int
__wrap_privsep_ask(struct mosd *mosd, uint32_t type, const void *body,
    size_t len, int fd, void (*done)(struct mosd *, void *,
    const struct privmsg_answer *), void *arg, uint32_t *id, char **why)
{
	const struct privmsg_guest	*g = body;

	fuzz_assert(type == PRIVMSG_GUEST && len == sizeof *g && fd != -1);
	fuzz_assert(asked.done == NULL);
	fuzz_assert(g->home == PEER_NODE && g->pid != 0);
	fuzz_assert(memchr(g->user, '\0', sizeof g->user) != NULL &&
	    g->user[0] != '\0');
	fuzz_assert(memchr(g->command, '\0', sizeof g->command) != NULL);
	if (mode & 4) {
		*why = xstrdup("cannot ask the privileged process");
		return -1;
	}
	asked.done = done;
	asked.arg = arg;
	*id = asked.id = 42;
	return 0;
}

void
__wrap_privsep_cancel(struct mosd *mosd, uint32_t id)
{
	fuzz_assert(asked.done != NULL && id == asked.id);
	asked.done = NULL;
}

/* The parent's answer, unless it gives none. */
static void
answer(void)
{
	struct privmsg_answer	 a;
	void			(*done)(struct mosd *, void *,
				    const struct privmsg_answer *) = asked.done;

	if (done == NULL || (mode & 16))
		return;
	memset(&a, 0, sizeof a);
	a.ok = !(mode & 8);
	if (!a.ok)
		snprintf(a.why, sizeof a.why, "no guest uid free");
	asked.done = NULL;
	done(&m, asked.arg, &a);
}

void
fuzz_init(void)
{
	m.conf = fuzz_conf(conf_text);
	m.key = *fuzz_key();
	m.loop = ev_loop_new(EVFLAG_AUTO);
	m.policy = policy_default();
	m.probe.cpus = 2;
	m.probe.speed = 1000;
	m.probe.mem_total = 4ULL << 30;
	m.probe.mem_free = 1ULL << 30;
	TAILQ_INIT(&m.links);
	TAILQ_INIT(&m.peers);
	TAILQ_INIT(&m.procs);
}

static int
deputy_dispatch(struct peer *p, const uint8_t *buf, size_t len)
{
	return 0;
}

/* What the broker sent back: read and dropped. */
static void
drain(int fd)
{
	uint8_t	buf[4096];

	while (read(fd, buf, sizeof buf) > 0)
		;
}

/* Let the broker read all there is, as its watcher would. */
static void
pump(struct link *l, int fd)
{
	int	avail, i;

	/* While the parent starts the agent, the broker does not read. */
	for (i = 0; i < 64 && !l->dead && l->state != LINK_WAIT_GUEST; i++) {
		if (ioctl(fd, FIONREAD, &avail) == -1 || avail == 0)
			break;
		broker_link_cb(m.loop, &l->io, EV_READ);
	}
}

static void
send_record(struct link *l, int fd, uint8_t op, const uint8_t *p,
    size_t len)
{
	uint8_t	*frame = NULL;
	size_t	 off = 0;
	ssize_t	 n;

	if (op & 1) {
		frame = xmalloc(len + FRAME_OVERHEAD);
		len = frame_pack(OSM__FRAME_KIND__FRAME_MIG_HELLO +
		    (op >> 1) % 3, p, len, &m.key, frame, len + FRAME_OVERHEAD);
		p = frame;
	}
	while (off < len && !l->dead) {
		if ((n = write(fd, p + off, len - off)) == -1)
			break;
		off += n;
		pump(l, l->fd);
		answer();
		drain(fd);
	}
	free(frame);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_in	 in = { data, size };
	struct peer	*deputy = NULL;
	struct mproc	*mp = NULL;
	struct link	*l;
	const uint8_t	*p;
	size_t		 len;
	uint8_t		 op;
	int		 sv[2], dv[2], fd0 = fuzz_lowest_fd();

	mode = fuzz_u8(&in);
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0,
	    sv) == -1)
		fatal("socketpair");
	if (mode & 1) {
		if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0,
		    dv) == -1)
			fatal("socketpair");
		deputy = peer_new(&m, dv[0], deputy_dispatch);
		mp = xcalloc(1, sizeof *mp);
		mp->role = OSM__CTL_ROLE__ROLE_DEPUTY;
		mp->pid = DEPUTY_PID;
		mp->home = mp->where = m.conf->self;
		snprintf(mp->user, sizeof mp->user, "root");
		mp->command = xstrdup("fuzz");
		TAILQ_INSERT_TAIL(&m.procs, mp, entry);
		l = broker_link(&m, sv[0], LINK_WAIT_HELLO, PEER_NODE);
		l->deputy = deputy;
		l->pid = DEPUTY_PID;
		peer_ref(deputy);
	} else {
		l = broker_link(&m, sv[0], LINK_WAIT_OFFER, PEER_NODE);
		memcpy(l->challenge, challenge, sizeof l->challenge);
	}

	while (!l->dead && fuzz_record(&in, &op, &p, &len))
		send_record(l, sv[1], op, p, len);
	if ((mode & 2) && !l->dead && l->state != LINK_WAIT_GUEST) {
		shutdown(sv[1], SHUT_WR);
		broker_link_cb(m.loop, &l->io, EV_READ);
	}

	broker_close(l);
	broker_reap(&m);
	fuzz_assert(TAILQ_EMPTY(&m.links));
	fuzz_assert(asked.done == NULL);	/* answered or cancelled */
	close(sv[1]);
	if (deputy != NULL) {
		fuzz_assert(deputy->refs == 0);
		peer_close(deputy);
		peer_reap(&m);
		close(dv[1]);
		TAILQ_REMOVE(&m.procs, mp, entry);
		free(mp->command);
		free(mp);
	}
	fuzz_assert(TAILQ_EMPTY(&m.peers));
	fuzz_fd_check(fd0);
	return 0;
}

void
fuzz_seeds(const char *dir)
{
	struct fuzz_out	 o = { 0 };
	Osm__MigHello	 h = OSM__MIG_HELLO__INIT;
	Osm__MigOffer	 of = OSM__MIG_OFFER__INIT;
	Osm__MigAnswer	 a = OSM__MIG_ANSWER__INIT;
	uint8_t		 nonce[SESSION_NONCE_LEN] = "a nonce of 16 b.";
	uint8_t		 frame[LINK_MSG_MAX], body[LINK_MSG_MAX];
	char		*groups[] = { "users", "staff" };
	size_t		 len, n;

	/* the target's side: an offer that answers our challenge */
	of.home = PEER_NODE;
	of.target = 1;
	of.challenge.data = (uint8_t *)challenge;
	of.challenge.len = sizeof challenge;
	of.nonce.data = nonce;
	of.nonce.len = sizeof nonce;
	of.pid = 77;
	of.uid = of.gid = 1000;
	of.user = "alice";
	of.command = "sleep 100";
	of.has_mem_bytes = 1;
	of.mem_bytes = 1 << 20;
	of.groups = groups;
	of.n_groups = nitems(groups);
	fuzz_put_u8(&o, 0);
	fuzz_put_msg(&o, 1 | 1 << 1, &of.base);
	fuzz_seed(dir, "offer", &o);

	/* the same framed here, arriving in two pieces */
	len = osm__mig_offer__pack(&of, body);
	n = frame_pack(OSM__FRAME_KIND__FRAME_MIG_OFFER, body, len, fuzz_key(),
	    frame, sizeof frame);
	fuzz_put_u8(&o, 2);
	fuzz_put_record(&o, 0, frame, 10);
	fuzz_put_record(&o, 0, frame + 10, n - 10);
	fuzz_seed(dir, "offer-split", &o);

	of.mem_bytes = 1ULL << 40;
	of.n_groups = 0;
	fuzz_put_u8(&o, 0);
	fuzz_put_msg(&o, 1 | 1 << 1, &of.base);
	fuzz_seed(dir, "offer-too-big", &o);

	/* the home's side: a hello, then an answer */
	h.node = PEER_NODE;
	h.challenge.data = (uint8_t *)challenge;
	h.challenge.len = sizeof challenge;
	a.accept = 1;
	a.has_nonce = 1;
	a.nonce.data = nonce;
	a.nonce.len = sizeof nonce;
	fuzz_put_u8(&o, 1);
	fuzz_put_msg(&o, 1, &h.base);
	fuzz_put_msg(&o, 1 | 2 << 1, &a.base);
	fuzz_seed(dir, "hello-answer", &o);

	a.accept = 0;
	a.has_nonce = 0;
	a.reason = "node 2 takes no new guests";
	fuzz_put_u8(&o, 3);
	fuzz_put_msg(&o, 1, &h.base);
	fuzz_put_msg(&o, 1 | 2 << 1, &a.base);
	fuzz_seed(dir, "hello-refused", &o);
}
