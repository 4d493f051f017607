/*
 * The control socket: a unix stream socket for the local tools. Each
 * request is checked (size, version, type) and the caller's credentials,
 * taken from the kernel, decide what it may do. A bad request costs only
 * the connection it came on.
 *
 * A connection is taken only if its uid has room (quota.h): root, the
 * guest uids and each ordinary uid have their own, so that no user can
 * lock out root or another user's agents. One refused is told why in a
 * CtlReply before it is closed, so that its tool can say so.
 */
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <arpa/inet.h>

#include <errno.h>
#include <libgen.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mosd.h"
#include "proto/ctl.pb-c.h"

#define CONTROL_ACCEPT_BATCH	32	/* connections taken per wakeup */
#define CONTROL_PAUSE		0.25	/* seconds, out of descriptors */
#define CONTROL_ORDER_TIMEOUT	600.0	/* an agent answers an order */
#define CONTROL_FD_RESERVE	64	/* descriptors for the rest of mosd */

static struct log_limit control_log_bad, control_log_refused,
    control_log_accept;

static const struct ctl_cmd *const control_cmds[] = {
	&ctl_status_cmd,
	&ctl_stats_cmd,
	&ctl_ps_cmd,
	&ctl_migrate_cmd,
	&ctl_checkpoint_cmd,
	&ctl_agent_hello_cmd,
	&ctl_agent_status_cmd,
	&ctl_connect_cmd,
	&ctl_flags_cmd,
	&ctl_expel_cmd,
	&ctl_bring_cmd,
	&ctl_best_cmd,
	&ctl_file_hash_cmd,
};

void
control_reply(struct peer *p, Osm__CtlReply *reply)
{
	control_reply_fd(p, reply, -1);
}

/* A reply carrying a descriptor (closed here once sent), or none if -1. */
void
control_reply_fd(struct peer *p, Osm__CtlReply *reply, int fd)
{
	uint8_t	*buf;
	size_t	 len;

	len = osm__ctl_reply__get_packed_size(reply);
	buf = xmalloc(len);
	osm__ctl_reply__pack(reply, buf);
	if (fd == -1)
		peer_send(p, buf, len);
	else
		peer_send_fd(p, buf, len, fd);
	explicit_bzero(buf, len);	/* it may hold a session key */
	free(buf);
}

void
control_error(struct peer *p, const char *fmt, ...)
{
	Osm__CtlReply	 reply = OSM__CTL_REPLY__INIT;
	va_list		 ap;
	char		*msg;

	va_start(ap, fmt);
	xvasprintf(&msg, fmt, ap);
	va_end(ap);
	reply.ok = 0;
	reply.error = msg;
	control_reply(p, &reply);
	free(msg);
}

/*
 * Replies own their repeated fields as one block of elements plus an array
 * of pointers into it (see ctl-status.c); free those here. Strings point
 * into the daemon's own state.
 */
static void
control_reply_free(Osm__CtlReply *reply)
{
	if (reply->n_nodes > 0)
		free(reply->nodes[0]);
	free(reply->nodes);
	if (reply->n_counters > 0)
		free(reply->counters[0]);
	free(reply->counters);
	if (reply->n_procs > 0)
		free(reply->procs[0]);
	free(reply->procs);
	if (reply->n_files > 0)
		free(reply->files[0]);
	free(reply->files);
}

static int
control_dispatch(struct peer *p, const uint8_t *buf, size_t len)
{
	struct mosd		*m = p->mosd;
	Osm__CtlRequest		*req;
	Osm__CtlReply		 reply = OSM__CTL_REPLY__INIT;
	const struct ctl_cmd	*cmd = NULL;
	size_t			 i;

	m->counters[C_CTL_REQUESTS]++;
	if ((req = osm__ctl_request__unpack(NULL, len, buf)) == NULL) {
		m->counters[C_CTL_REFUSED]++;
		log_limited_warnx(&control_log_bad, p->uid, "client pid %ld "
		    "(uid %u): malformed request", (long)p->pid,
		    (unsigned)p->uid);
		control_error(p, "malformed request");
		return 0;
	}
	if (req->version != CTL_VERSION) {
		m->counters[C_CTL_REFUSED]++;
		control_error(p, "control protocol version %u, mosd speaks %u "
		    "(tools and mosd are from different builds)", req->version,
		    CTL_VERSION);
		goto out;
	}
	for (i = 0; i < nitems(control_cmds); i++)
		if (control_cmds[i]->type == (int)req->type)
			cmd = control_cmds[i];
	if (cmd == NULL) {
		m->counters[C_CTL_REFUSED]++;
		control_error(p, "unknown request type %d", (int)req->type);
		goto out;
	}
	if (cmd->root_only && p->uid != 0) {
		m->counters[C_CTL_REFUSED]++;
		control_error(p, "%s: permission denied (root only)", cmd->name);
		goto out;
	}
	reply.ok = 1;
	switch (cmd->exec(m, p, req, &reply)) {
	case CTL_DEFERRED:	/* the command holds p and answers later */
		break;
	case -1:
		reply.ok = 0;
		/* FALLTHROUGH */
	default:
		control_reply(p, &reply);
	}
	control_reply_free(&reply);
	free(reply.error);
out:
	osm__ctl_request__free_unpacked(req, NULL);
	return 0;
}

/* Tell a connection we do not take why, and hang up. */
static void
control_refuse(struct mosd *m, int fd, uid_t uid, pid_t pid, const char *why)
{
	Osm__CtlReply	 reply = OSM__CTL_REPLY__INIT;
	uint8_t		 buf[512];
	uint32_t	 n;
	size_t		 len;

	m->counters[C_CTL_TURNED_AWAY]++;
	log_limited_warnx(&control_log_refused, uid, "control: refused a "
	    "connection of uid %u (pid %ld): %s", (unsigned)uid, (long)pid,
	    why);
	reply.ok = 0;
	reply.error = (char *)why;
	reply.has_busy = reply.busy = 1;	/* an agent tries again */
	len = osm__ctl_reply__get_packed_size(&reply);
	if (len <= sizeof buf - 4) {
		n = htonl(len);
		memcpy(buf, &n, 4);
		osm__ctl_reply__pack(&reply, buf + 4);
		/* A fresh socket's buffer takes it; if not, so be it. */
		(void)send(fd, buf, 4 + len, MSG_DONTWAIT | MSG_NOSIGNAL);
	}
	close(fd);
}

/*
 * A client of uid on fd, if its uid has room: the peer, or NULL and *why.
 * Root's and the guest agents' come before users' tools in each loop
 * iteration.
 */
struct peer *
control_client(struct mosd *m, int fd, uid_t uid, gid_t gid, pid_t pid,
    char **why)
{
	struct quota_user	*u;
	struct peer		*p;

	if ((u = quota_connect(&m->quota, uid, why)) == NULL)
		return NULL;
	if ((p = peer_new(m, fd, control_dispatch)) == NULL) {
		xasprintf(why, "new client: %s", strerror(errno));
		quota_disconnect(&m->quota, u, 0);
		return NULL;
	}
	p->uid = uid;
	p->gid = gid;
	p->pid = pid;
	p->quota = u;
	if (u->kind != QUOTA_USER)
		peer_prefer(p);
	peer_timeout(p, m->conf->client_timeout_ms / 1000.0);
	return p;
}

/* Out of descriptors: take no connection for a moment (not a busy loop). */
static void
control_pause_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct mosd	*m = w->data;

	looptime_mark(loop, "control pause");

	ev_io_start(loop, &m->ctl_ev);
}

static void
control_accept_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct mosd	*m = w->data;
	uid_t		 uid;
	gid_t		 gid;
	pid_t		 pid;
	char		*why = NULL;
	int		 fd, i;

	looptime_mark(loop, "control accept");

	for (i = 0; i < CONTROL_ACCEPT_BATCH; i++) {
		if ((fd = accept4(m->ctl_fd, NULL, NULL, SOCK_CLOEXEC)) == -1)
			break;
		if (ctl_peercred(fd, &uid, &gid, &pid) == -1) {
			log_limited_warnx(&control_log_accept, 0, "control: "
			    "SO_PEERCRED: %s", strerror(errno));
			close(fd);
			continue;
		}
		if (control_client(m, fd, uid, gid, pid, &why) == NULL) {
			control_refuse(m, fd, uid, pid, why);
			free(why);
			why = NULL;
		}
	}
	if (fd != -1 || errno == EAGAIN || errno == EINTR ||
	    errno == ECONNABORTED)
		return;
	log_limited_warnx(&control_log_accept, 0, "control: accept: %s%s",
	    strerror(errno), errno == EMFILE || errno == ENFILE ?
	    "; pausing" : "");
	ev_io_stop(loop, &m->ctl_ev);
	ev_timer_set(&m->ctl_pause, CONTROL_PAUSE, 0);
	ev_timer_start(loop, &m->ctl_pause);
}

/*
 * The limits of cluster.conf, and the connections this mosd's
 * descriptors allow: each may bring one more (an order, a link).
 */
void
control_limits(struct mosd *m)
{
	struct quota_limits	*l = &m->quota.lim;
	struct rlimit		 rl;
	rlim_t			 fds = 1024;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
		fds = rl.rlim_cur;
	if (fds > 1U << 20)
		fds = 1U << 20;
	fds = fds > CONTROL_FD_RESERVE + m->conf->handshakes ?
	    fds - CONTROL_FD_RESERVE - m->conf->handshakes : 0;
	l->total = fds / 2 > QUOTA_ROOT_SPARE * 2 ? fds / 2 :
	    QUOTA_ROOT_SPARE * 2;
	l->clients = m->conf->clients;
	l->clients_per_user = m->conf->clients_per_user;
	l->requests_per_user = m->conf->requests_per_user;
	l->agents_per_user = m->conf->agents_per_user;
	l->client_output = m->conf->client_output;
	l->user_output = m->conf->user_output;
	l->guest_first = m->conf->guest_uid_first;
	l->guest_last = m->conf->guest_uid_last;
}

/* Is a daemon already answering on path? */
static int
control_in_use(const char *path)
{
	char	*cause = NULL;
	int	 fd;

	if ((fd = ctl_connect(path, 1, &cause)) == -1) {
		free(cause);
		return 0;
	}
	close(fd);
	return 1;
}

int
control_listen(struct mosd *m, char **cause)
{
	struct sockaddr_un	 sun;
	const char		*path = m->conf->socket_path;
	char			*dir;
	mode_t			 old;

	memset(&sun, 0, sizeof sun);
	sun.sun_family = AF_UNIX;
	if (strlen(path) >= sizeof sun.sun_path) {
		xasprintf(cause, "%s: socket path too long", path);
		return -1;
	}
	strcpy(sun.sun_path, path);
	dir = xstrdup(path);
	if (mkdir_p(dirname(dir), 0755) == -1) {
		xasprintf(cause, "%s: %s", dir, strerror(errno));
		free(dir);
		return -1;
	}
	free(dir);
	if (control_in_use(path)) {
		xasprintf(cause, "%s: another mosd is already running here",
		    path);
		return -1;
	}
	unlink(path);	/* left by a daemon that died */
	if ((m->ctl_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK |
	    SOCK_CLOEXEC, 0)) == -1) {
		xasprintf(cause, "socket: %s", strerror(errno));
		return -1;
	}
	/* Every local user may ask; each request checks who asks. */
	old = umask(0111);
	if (bind(m->ctl_fd, (struct sockaddr *)&sun, sizeof sun) == -1) {
		umask(old);
		xasprintf(cause, "%s: bind: %s", path, strerror(errno));
		close(m->ctl_fd);
		return -1;
	}
	umask(old);
	if (listen(m->ctl_fd, 64) == -1) {
		xasprintf(cause, "%s: listen: %s", path, strerror(errno));
		close(m->ctl_fd);
		unlink(path);
		return -1;
	}
	return 0;
}

void
control_start(struct mosd *m)
{
	TAILQ_INIT(&m->peers);
	control_limits(m);
	ev_io_init(&m->ctl_ev, control_accept_cb, m->ctl_fd, EV_READ);
	m->ctl_ev.data = m;
	/* New connections, root's among them, before users' requests. */
	ev_set_priority(&m->ctl_ev, EV_MAXPRI);
	ev_io_start(m->loop, &m->ctl_ev);
	ev_init(&m->ctl_pause, control_pause_cb);
	m->ctl_pause.data = m;
}

void
control_shutdown(struct mosd *m)
{
	struct peer	*p;

	TAILQ_FOREACH(p, &m->peers, entry)
		peer_close(p);
	peer_reap(m);
	quota_free(&m->quota);
	ev_timer_stop(m->loop, &m->ctl_pause);
	ev_io_stop(m->loop, &m->ctl_ev);
	/* The socket's file is in root's directory: the parent unlinks it. */
	close(m->ctl_fd);
}

/*
 * Orders to an agent: mosd connects to the agent's own socket as a client,
 * sends one request and hands the reply (NULL and a reason if none came)
 * to done.
 */
struct control_order {
	void	(*done)(struct mosd *, void *, Osm__CtlReply *,
		    const char *);
	void	*arg;
	int	 answered;
};

static int
control_order_dispatch(struct peer *p, const uint8_t *buf, size_t len)
{
	struct control_order	*o = p->arg;
	Osm__CtlReply		*reply;

	reply = osm__ctl_reply__unpack(NULL, len, buf);
	o->answered = 1;
	o->done(p->mosd, o->arg, reply, reply == NULL ?
	    "malformed reply from the agent" : NULL);
	if (reply != NULL)
		osm__ctl_reply__free_unpacked(reply, NULL);
	return -1;	/* one order per connection: close */
}

static void
control_order_closed(struct peer *p)
{
	struct control_order	*o = p->arg;

	if (!o->answered)
		o->done(p->mosd, o->arg, NULL, p->timed_out ?
		    "the agent did not answer in time" : "the agent hung up");
	free(o);
}

int
control_order(struct mosd *m, const char *path, Osm__CtlRequest *req,
    void (*done)(struct mosd *, void *, Osm__CtlReply *, const char *),
    void *arg, char **cause)
{
	struct sockaddr_un	 sun;
	socklen_t		 slen;
	int			 fd;

	if (ctl_sockaddr(path, &sun, &slen) == -1) {
		xasprintf(cause, "%s: bad socket path", path);
		return -1;
	}
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd == -1 || connect(fd, (struct sockaddr *)&sun, slen) == -1) {
		xasprintf(cause, "cannot reach the agent at %s: %s", path,
		    strerror(errno));
		if (fd != -1)
			close(fd);
		return -1;
	}
	return control_order_fd(m, fd, req, done, arg, cause);
}

/* The same on a connected socket fd, which this takes. */
int
control_order_fd(struct mosd *m, int fd, Osm__CtlRequest *req,
    void (*done)(struct mosd *, void *, Osm__CtlReply *, const char *),
    void *arg, char **cause)
{
	struct control_order	*o;
	struct peer		*p;
	uint8_t			*buf;
	size_t			 len;

	if ((p = peer_new(m, fd, control_order_dispatch)) == NULL) {
		xasprintf(cause, "agent connection: %s", strerror(errno));
		close(fd);
		return -1;
	}
	p->kind = PEER_ORDER;
	peer_timeout(p, CONTROL_ORDER_TIMEOUT);
	o = xcalloc(1, sizeof *o);
	o->done = done;
	o->arg = arg;
	p->arg = o;
	p->closed = control_order_closed;
	req->version = CTL_VERSION;
	len = osm__ctl_request__get_packed_size(req);
	buf = xmalloc(len);
	osm__ctl_request__pack(req, buf);
	peer_send(p, buf, len);
	free(buf);
	return 0;
}

/*
 * A connection to this mosd's own control socket, as root: the web
 * monitor's requests are the tools' (web-api.c), but the network process
 * is not root, and a request it made on the socket's path would be
 * checked as its uid's. A socketpair, whose other end is a client of
 * uid 0: the end to send on, or -1 and *cause.
 */
int
control_loopback(struct mosd *m, char **cause)
{
	int	sv[2];
	char	*why = NULL;

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0,
	    sv) == -1) {
		xasprintf(cause, "socketpair: %s", strerror(errno));
		return -1;
	}
	if (control_client(m, sv[0], 0, 0, getpid(), &why) == NULL) {
		xasprintf(cause, "mosd refused: %s", why);
		free(why);
		close(sv[0]);
		close(sv[1]);
		return -1;
	}
	return sv[1];
}
