/*
 * The control socket: a unix stream socket for the local tools. Each
 * request is checked (size, version, type) and the caller's credentials,
 * taken from the kernel, decide what it may do. A bad request costs only
 * the connection it came on.
 */
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <errno.h>
#include <libgen.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mosd.h"
#include "proto/ctl.pb-c.h"

#define CONTROL_MAX_PEERS	128

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
		log_warnx("client pid %ld: malformed request", (long)p->pid);
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

static void
control_accept_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct mosd	*m = w->data;
	struct peer	*p;
	uid_t		 uid;
	gid_t		 gid;
	pid_t		 pid;
	int		 fd;

	if ((fd = accept4(m->ctl_fd, NULL, NULL, SOCK_CLOEXEC)) == -1) {
		if (errno != EAGAIN && errno != EINTR && errno != ECONNABORTED)
			log_warn("control: accept");
		return;
	}
	if (m->npeers >= CONTROL_MAX_PEERS) {
		log_warnx("control: too many clients; refusing one");
		close(fd);
		return;
	}
	if (ctl_peercred(fd, &uid, &gid, &pid) == -1) {
		log_warn("control: SO_PEERCRED");
		close(fd);
		return;
	}
	if ((p = peer_new(m, fd, control_dispatch)) == NULL) {
		log_warn("control: new client");
		close(fd);
		return;
	}
	p->uid = uid;
	p->gid = gid;
	p->pid = pid;
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
	ev_io_init(&m->ctl_ev, control_accept_cb, m->ctl_fd, EV_READ);
	m->ctl_ev.data = m;
	ev_io_start(m->loop, &m->ctl_ev);
}

void
control_shutdown(struct mosd *m)
{
	struct peer	*p;

	TAILQ_FOREACH(p, &m->peers, entry)
		peer_close(p);
	peer_reap(m);
	ev_io_stop(m->loop, &m->ctl_ev);
	close(m->ctl_fd);
	unlink(m->conf->socket_path);
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
		o->done(p->mosd, o->arg, NULL, "the agent hung up");
	free(o);
}

int
control_order(struct mosd *m, const char *path, Osm__CtlRequest *req,
    void (*done)(struct mosd *, void *, Osm__CtlReply *, const char *),
    void *arg, char **cause)
{
	struct control_order	*o;
	struct sockaddr_un	 sun;
	struct peer		*p;
	socklen_t		 slen;
	uint8_t			*buf;
	size_t			 len;
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
	if ((p = peer_new(m, fd, control_order_dispatch)) == NULL) {
		xasprintf(cause, "agent connection: %s", strerror(errno));
		close(fd);
		return -1;
	}
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
