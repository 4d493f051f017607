/*
 * mosd/parent.c, mosd/privmsg.c: the privileged parent's decoder, on what
 * a network process taken over by an attacker could send it on their
 * channel. The parent's own code is included here, so that its static
 * reader (parent_read) runs as in mosd, on one end of a SOCK_SEQPACKET
 * socketpair; guests_spawn and guests_spare are wrapped (-Wl,--wrap) to
 * start no agent, and the first checks that what it is given is what
 * the parent's checks promise.
 *
 * Input: records, each sent as one datagram and read by the parent
 * before the next. A record's op says what goes with it: bits 0-1 how
 * many descriptors (0 to 3; more than 2 is refused), bits 2-3 of what
 * kind (a TCP socket, a unix socket, a pipe, /dev/null); with bit 4 the
 * bytes are a header's type and id and then a body, which the harness
 * cuts or pads with zeroes to the size that type's body has, so that the
 * fuzzer reaches the checks of the fields; otherwise the bytes go as
 * they are. Every answer the parent sends must be a whole
 * PRIVMSG_ANSWER with a terminated reason, and no descriptor is left.
 */
#include <sys/socket.h>
#include <sys/stat.h>

#include "mosd/parent.c"

#include "fuzz.h"

#define PEER_NODE	2

static struct mosd	 m;
static struct parent	 pp;
static const char	 conf_text[] = "node 1 127.0.0.1\nnode 2 127.0.0.2\n"
			    "node 3 127.0.0.3\nself 1\nguests 60000-60003\n";
static const char	 token[] = "a-token-of-the-fuzzer-0123456789";
static int		 spawned;

int	__wrap_guests_spawn(struct mosd *, int, const struct privmsg_guest *,
	    pid_t *, uid_t *, char **);
void	__wrap_guests_spare(struct mosd *);

/* No spare agent is started ahead either. */
void
__wrap_guests_spare(struct mosd *mosd)
{
}

/* The request passed the parent's checks: the agent would start now. */
int
__wrap_guests_spawn(struct mosd *mosd, int fd, const struct privmsg_guest *g,
    pid_t *pid, uid_t *uid, char **why)
{
	int		type = -1, domain = -1;
	socklen_t	len = sizeof type;

	fuzz_assert(getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) == 0 &&
	    type == SOCK_STREAM);
	fuzz_assert(getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain,
	    &len) == 0 && (domain == AF_INET || domain == AF_INET6));
	fuzz_assert(g->home != mosd->conf->self &&
	    conf_find(mosd->conf, g->home) != NULL);
	fuzz_assert(g->pid != 0 && g->pid <= PRIVMSG_PID_MAX);
	fuzz_assert(strnlen(g->user, sizeof g->user) <= PRIVMSG_USER_MAX &&
	    g->user[0] != '\0');
	fuzz_assert(strnlen(g->command, sizeof g->command) <=
	    PRIVMSG_COMMAND_MAX);
	if (spawned++ % 2) {
		*why = xstrdup("this node runs as many guests as it has guest "
		    "uids");
		return -1;
	}
	*pid = 4242;
	*uid = mosd->conf->guest_uid_first;
	return 0;
}

static char	 token_path[] = "/tmp/osm-fuzz-token-XXXXXX";

static void
token_unlink(void)
{
	unlink(token_path);
}

void
fuzz_init(void)
{
	int	fd;

	m.conf = fuzz_conf(conf_text);
	/* The token file, read at every token record (0600 already). */
	if ((fd = mkstemp(token_path)) == -1 ||
	    write(fd, token, strlen(token)) != (ssize_t)strlen(token))
		fatal("%s", token_path);
	close(fd);
	atexit(token_unlink);
	free(m.conf->web_token_path);
	m.conf->web_token_path = xstrdup(token_path);
	pp.m = &m;
	guests_init(&m);
}

/* A descriptor of the kind asked for, to send. */
static int
make_fd(int kind)
{
	int	p[2], fd;

	switch (kind) {
	case 0:
		return socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	case 1:
		return socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	case 2:
		if (pipe2(p, O_CLOEXEC) == -1)
			return -1;
		close(p[1]);
		return p[0];
	default:
		fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
		return fd;
	}
}

/* The size of the body a record of type has, or 0 for a type without. */
static size_t
body_size(uint32_t type)
{
	switch (type) {
	case PRIVMSG_GUEST:
		return sizeof(struct privmsg_guest);
	case PRIVMSG_TOKEN:
		return sizeof(struct privmsg_token);
	case PRIVMSG_ANSWER:
		return sizeof(struct privmsg_answer);
	case PRIVMSG_RELOAD:
		return sizeof(struct privmsg_reload);
	}
	return 0;
}

static void
send_record(int sock, uint8_t op, const uint8_t *p, size_t len)
{
	union {
		struct cmsghdr	hdr;
		char		buf[CMSG_SPACE(3 * sizeof(int))];
	} control;
	uint8_t			 buf[PRIVMSG_MAX + 64];
	struct privmsg_hdr	 h;
	struct msghdr		 msg;
	struct cmsghdr		*cmsg;
	struct iovec		 iov;
	int			 fds[3];
	size_t			 n = op & 3, i, blen;

	if (op & 16) {
		memset(&h, 0, sizeof h);
		memcpy(&h, p, len < sizeof h ? len : sizeof h);
		/* the type, from its low bits: one of ours, mostly */
		h.type %= 8;
		blen = body_size(h.type);
		if (blen == 0)
			blen = len > sizeof h ? len - sizeof h : 0;
		if (blen > sizeof buf - sizeof h)
			blen = sizeof buf - sizeof h;
		memset(buf, 0, sizeof buf);
		memcpy(buf, &h, sizeof h);
		if (len > sizeof h)
			memcpy(buf + sizeof h, p + sizeof h,
			    len - sizeof h < blen ? len - sizeof h : blen);
		p = buf;
		len = sizeof h + blen;
	}
	for (i = 0; i < n; i++)
		fds[i] = make_fd((op >> 2) & 3);
	memset(&msg, 0, sizeof msg);
	iov.iov_base = (void *)p;
	iov.iov_len = len;
	msg.msg_iov = &iov;
	msg.msg_iovlen = 1;
	if (n > 0) {
		memset(&control, 0, sizeof control);
		msg.msg_control = control.buf;
		msg.msg_controllen = CMSG_SPACE(n * sizeof(int));
		cmsg = CMSG_FIRSTHDR(&msg);
		cmsg->cmsg_level = SOL_SOCKET;
		cmsg->cmsg_type = SCM_RIGHTS;
		cmsg->cmsg_len = CMSG_LEN(n * sizeof(int));
		memcpy(CMSG_DATA(cmsg), fds, n * sizeof(int));
	}
	if (sendmsg(sock, &msg, MSG_DONTWAIT | MSG_NOSIGNAL) == -1 &&
	    errno != EMSGSIZE)
		fatal("sendmsg");
	for (i = 0; i < n; i++)
		close(fds[i]);
}

/* Every answer the parent sent: whole, and saying why if it refused. */
static void
check_answers(int sock)
{
	struct privmsg	 msg;
	char		*why = NULL;
	const struct privmsg_answer *a;

	while (privmsg_recv(sock, &msg, &why) == PRIVMSG_OK) {
		fuzz_assert(msg.hdr.type == PRIVMSG_ANSWER &&
		    msg.len == sizeof *a && msg.nfds == 0);
		a = (const struct privmsg_answer *)msg.body;
		fuzz_assert(memchr(a->why, '\0', sizeof a->why) != NULL);
		fuzz_assert(a->ok == 1 || a->why[0] != '\0');
	}
	fuzz_assert(why == NULL);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_in	 in = { data, size };
	const uint8_t	*p;
	size_t		 len;
	uint8_t		 op;
	int		 sv[2], fd0 = fuzz_lowest_fd();

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC,
	    0, sv) == -1)
		fatal("socketpair");
	pp.fd = sv[0];
	while (fuzz_record(&in, &op, &p, &len)) {
		send_record(sv[1], op, p, len);
		parent_read(&pp);
		check_answers(sv[1]);
	}
	close(sv[1]);
	parent_read(&pp);		/* the end of the network process */
	close(sv[0]);
	fuzz_fd_check(fd0);
	return 0;
}

/* A record of type with body, as the network process would send it. */
static void
put(struct fuzz_out *o, uint8_t op, uint32_t type, const void *body,
    size_t len)
{
	struct privmsg_hdr	h = { .type = type, .id = 7 };
	uint8_t			buf[PRIVMSG_MAX];

	memcpy(buf, &h, sizeof h);
	memcpy(buf + sizeof h, body, len);
	fuzz_put_record(o, op, buf, sizeof h + len);
}

void
fuzz_seeds(const char *dir)
{
	struct fuzz_out		 o = { 0 };
	struct privmsg_guest	 g;
	struct privmsg_token	 t;

	memset(&g, 0, sizeof g);
	g.home = PEER_NODE;
	g.pid = 77;
	g.owner_uid = 1000;
	snprintf(g.user, sizeof g.user, "alice");
	snprintf(g.command, sizeof g.command, "sleep 100");
	put(&o, 1, PRIVMSG_GUEST, &g, sizeof g);	/* a TCP socket */
	fuzz_seed(dir, "guest", &o);
	put(&o, 1 | 2 << 2, PRIVMSG_GUEST, &g, sizeof g);	/* a pipe */
	put(&o, 2, PRIVMSG_GUEST, &g, sizeof g);	/* two sockets */
	put(&o, 0, PRIVMSG_GUEST, &g, sizeof g);	/* none */
	fuzz_seed(dir, "guest-fds", &o);
	memset(g.user, 'a', sizeof g.user);		/* not terminated */
	put(&o, 1, PRIVMSG_GUEST, &g, sizeof g);
	g.home = 1;					/* itself */
	snprintf(g.user, sizeof g.user, "alice");
	put(&o, 1, PRIVMSG_GUEST, &g, sizeof g);
	put(&o, 1, PRIVMSG_GUEST, &g, sizeof g - 1);	/* short */
	fuzz_seed(dir, "guest-bad", &o);

	memset(&t, 0, sizeof t);
	t.len = strlen(token);
	memcpy(t.token, token, t.len);
	put(&o, 0, PRIVMSG_TOKEN, &t, sizeof t);
	t.token[0] ^= 1;
	put(&o, 0, PRIVMSG_TOKEN, &t, sizeof t);
	t.len = 300;
	put(&o, 0, PRIVMSG_TOKEN, &t, sizeof t);
	fuzz_seed(dir, "token", &o);

	put(&o, 0, PRIVMSG_ANSWER, "", 0);		/* not the parent's */
	put(&o, 0, 99, "", 0);
	fuzz_put_record(&o, 0, "abc", 3);		/* shorter than a header */
	fuzz_seed(dir, "other", &o);
}
