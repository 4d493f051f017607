/*
 * An agent's connection to its node's mosd, the same for the deputy and
 * the guest agent. The agent presents its process (CTL_AGENT_HELLO) and
 * keeps the connection open, telling mosd whenever the process changes
 * (CTL_AGENT_STATUS); mosd counts processes by their agents' connections,
 * so a restarted mosd learns them back when the agents, trying again every
 * second, present themselves anew. mosd never talks first on it.
 *
 * Orders for the process (migrate, checkpoint, expel) come the other way,
 * from mosd as a client of a socket of the agent's own, one connection
 * each; the agent's order callback answers them (ctl_order_answer).
 */
#include <sys/stat.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"
#include "proto/ctl.pb-c.h"

#define CONN_RECONNECT	1.0	/* seconds between tries to reach mosd */
#define CONN_ORDER_TIMEOUT 5	/* seconds to read an order */
#define CONN_BUSY_WAIT	30	/* seconds to wait while mosd is busy */
#define CONN_DOWN_WAIT	5	/* and while nothing listens (a restart) */

static void
conn_closed(struct conn *c)
{
	if (c->fd == -1)
		return;
	if (c->started)
		ev_io_stop(c->loop, &c->ev);
	close(c->fd);
	c->fd = -1;
	if (c->started)
		ev_timer_again(c->loop, &c->reconnect);
}

/*
 * Present the process to mosd on a new connection; mosd's node in *self.
 * *busy says whether mosd turned the connection away for its load (its
 * uid's connections: a burst of processes started at once is one).
 */
static int
conn_present(struct conn *c, uint32_t *self, int *busy, char **cause)
{
	Osm__CtlRequest	 req = OSM__CTL_REQUEST__INIT;
	Osm__CtlAgent	 a = OSM__CTL_AGENT__INIT;
	Osm__CtlReply	*r;
	int		 fd;

	*busy = 0;
	if ((fd = ctl_connect(c->sock, CTL_TIMEOUT_SEC, cause)) == -1) {
		/* Not listening: mosd may be restarting. */
		*busy = errno == ENOENT || errno == ECONNREFUSED ? 2 : 0;
		return -1;
	}
	c->describe(c->arg, &a);
	req.type = OSM__CTL_TYPE__CTL_AGENT_HELLO;
	req.agent = &a;
	if ((r = ctl_request(fd, &req, NULL, cause)) == NULL) {
		close(fd);
		return -1;
	}
	if (!r->ok) {
		xasprintf(cause, "mosd refused: %s", r->error);
		*busy = r->has_busy && r->busy;
		ctl_reply_free(r);
		close(fd);
		return -1;
	}
	if (self != NULL)
		*self = r->self;
	/* mosd's network process sends our orders, under a uid of its own. */
	c->order_uid = r->has_order_uid ? r->order_uid : 0;
	ctl_reply_free(r);
	c->fd = fd;
	if (c->started) {
		ev_io_set(&c->ev, fd, EV_READ);
		ev_io_start(c->loop, &c->ev);
	}
	return 0;
}

/*
 * The agent's first presentation: while mosd says it is busy, again
 * after a short wait, growing, for up to CONN_BUSY_WAIT seconds, so that
 * a user who starts many processes at once has them all, each as soon as
 * those before it are registered (and out of the tools' count). While
 * nothing listens on the socket, for up to CONN_DOWN_WAIT seconds: a
 * process started while mosd restarts is not lost for it.
 */
int
conn_hello(struct conn *c, uint32_t *self, char **cause)
{
	uint64_t	start = now_ms();
	uint64_t	rng = now_us() ^ (uint64_t)getpid() << 32;
	uint32_t	wait_ms = 5;
	int		busy;

	while (conn_present(c, self, &busy, cause) == -1) {
		if (!busy || now_ms() + wait_ms > start + 1000 *
		    (busy == 2 ? CONN_DOWN_WAIT : CONN_BUSY_WAIT))
			return -1;
		free(*cause);
		*cause = NULL;
		/* At random within the wait: those refused together spread. */
		sleep_ms(wait_ms / 2 + rand_below(&rng, wait_ms / 2 + 1));
		if (wait_ms < 500)
			wait_ms *= 2;
	}
	return 0;
}

/* Tell mosd where the process is and how it does. */
void
conn_report(struct conn *c)
{
	Osm__CtlRequest	 req = OSM__CTL_REQUEST__INIT;
	Osm__CtlAgent	 a = OSM__CTL_AGENT__INIT;
	Osm__CtlReply	*r;
	char		*cause;

	if (c->fd == -1)
		return;
	c->describe(c->arg, &a);
	req.type = OSM__CTL_TYPE__CTL_AGENT_STATUS;
	req.agent = &a;
	if ((r = ctl_request(c->fd, &req, NULL, &cause)) == NULL) {
		log_warnx("%s: mosd: %s", c->who, cause);
		free(cause);
		conn_closed(c);
		return;
	}
	if (!r->ok)
		log_warnx("%s: mosd: %s", c->who, r->error);
	ctl_reply_free(r);
}

/*
 * A request of the agent's own to mosd on the open connection (a deputy's
 * CTL_CONNECT and CTL_BEST), with a descriptor in the reply if fd is not
 * NULL. A broken connection is made again later. In two halves for an
 * agent that works while mosd prepares the reply: conn_send, then
 * conn_reply, with no other request between them.
 */
int
conn_send(struct conn *c, Osm__CtlRequest *req, char **cause)
{
	if (c->fd == -1) {
		xasprintf(cause, "mosd is not reachable");
		return -1;
	}
	if (ctl_request_send(c->fd, req, cause) == -1) {
		conn_closed(c);
		return -1;
	}
	return 0;
}

Osm__CtlReply *
conn_reply(struct conn *c, int *fd, char **cause)
{
	Osm__CtlReply	*r;

	if (fd != NULL)
		*fd = -1;
	if (c->fd == -1) {
		xasprintf(cause, "mosd is not reachable");
		return NULL;
	}
	if ((r = ctl_reply_read(c->fd, fd, cause)) == NULL)
		conn_closed(c);
	return r;
}

Osm__CtlReply *
conn_request(struct conn *c, Osm__CtlRequest *req, int *fd, char **cause)
{
	if (fd != NULL)
		*fd = -1;
	if (conn_send(c, req, cause) == -1)
		return NULL;
	return conn_reply(c, fd, cause);
}

/*
 * What mosd knows of the content of n files (CTL_FILE_HASH: mosd keeps
 * the SHA-256 of the files of its node that agents ask about, which no
 * agent can write into; mosd/hashes.c), asked on fd, a connection to
 * mosd with no request pending: paths[i] with st[i], from the caller's
 * own open descriptor of it. The hash of each file known goes to sha[i],
 * with known[i] set; the others are the caller's to hash. The number
 * known: 0 also when mosd cannot say (not reachable, older).
 */
size_t
conn_hashes(int fd, const char *const *paths, const struct stat *st,
    size_t n, uint8_t (*sha)[CRYPTO_HASH_LEN], int *known)
{
	Osm__CtlRequest	  req = OSM__CTL_REQUEST__INIT;
	Osm__CtlFile	 *q, **qs;
	Osm__CtlReply	 *r;
	const Osm__CtlFile *a;
	char		 *cause = NULL;
	size_t		  i, nknown = 0;

	memset(known, 0, n * sizeof *known);
	if (n == 0 || fd == -1)
		return 0;
	q = xcalloc(n, sizeof *q);
	qs = xcalloc(n, sizeof *qs);
	for (i = 0; i < n; i++) {
		osm__ctl_file__init(&q[i]);
		q[i].path = (char *)paths[i];
		q[i].dev = st[i].st_dev;
		q[i].ino = st[i].st_ino;
		q[i].size = st[i].st_size;
		q[i].mtime_ns = (uint64_t)st[i].st_mtim.tv_sec * 1000000000 +
		    st[i].st_mtim.tv_nsec;
		q[i].ctime_ns = (uint64_t)st[i].st_ctim.tv_sec * 1000000000 +
		    st[i].st_ctim.tv_nsec;
		qs[i] = &q[i];
	}
	req.type = OSM__CTL_TYPE__CTL_FILE_HASH;
	req.files = qs;
	req.n_files = n;
	if ((r = ctl_request(fd, &req, NULL, &cause)) == NULL) {
		log_debug("file hashes: %s", cause);
		free(cause);
	} else if (r->ok && r->n_files == n) {
		for (i = 0; i < n; i++) {
			a = r->files[i];
			/* the answer about the file asked about */
			if (!a->has_sha256 || a->sha256.len != CRYPTO_HASH_LEN ||
			    a->dev != q[i].dev || a->ino != q[i].ino ||
			    a->size != q[i].size ||
			    a->mtime_ns != q[i].mtime_ns ||
			    a->ctime_ns != q[i].ctime_ns)
				continue;
			memcpy(sha[i], a->sha256.data, CRYPTO_HASH_LEN);
			known[i] = 1;
			nknown++;
		}
	}
	ctl_reply_free(r);
	free(qs);
	free(q);
	return nknown;
}

static void
conn_reconnect_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct conn	*c = w->data;
	char		*cause;
	int		 busy;

	if (c->fd != -1)
		return;
	/* Busy or not, the timer tries again in a second. */
	if (conn_present(c, NULL, &busy, &cause) == -1) {
		log_debug("%s: mosd: %s", c->who, cause);
		free(cause);
		return;
	}
	ev_timer_stop(loop, w);
	log_info("%s: registered again with mosd", c->who);
}

static void
conn_read_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct conn	*c = w->data;
	char		 ch;

	/* mosd never talks first: readable means it went away. */
	if (read(c->fd, &ch, 1) <= 0) {
		log_warnx("%s: mosd went away; reconnecting", c->who);
		conn_closed(c);
	}
}

static void
conn_order_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct conn	*c = w->data;
	Osm__CtlRequest	*req;
	int		 fd;

	if ((req = ctl_order_take(c->order_fd, CONN_ORDER_TIMEOUT,
	    c->order_uid, &fd)) == NULL)
		return;
	c->order(c->arg, req, fd);
	osm__ctl_request__free_unpacked(req, NULL);
}

/*
 * Set up the connection for an agent: describe fills what mosd is told of
 * the process, order carries out an order and answers on its fd (which it
 * owns). who names the agent in the log. The order socket is made at once
 * (its name is part of what mosd is told); the first hello is the
 * caller's, the watchers start with conn_start.
 */
int
conn_init(struct conn *c, const char *sock, const char *who,
    const char *what, void (*describe)(void *, Osm__CtlAgent *),
    void (*order)(void *, Osm__CtlRequest *, int), void *arg, char **cause)
{
	memset(c, 0, sizeof *c);
	c->sock = sock;
	snprintf(c->who, sizeof c->who, "%s", who);
	c->describe = describe;
	c->order = order;
	c->arg = arg;
	c->fd = -1;
	if ((c->order_fd = ctl_order_listen(what, c->order_path,
	    sizeof c->order_path, cause)) == -1)
		return -1;
	return 0;
}

/* Watch the connection and the order socket on loop from now on. */
void
conn_start(struct conn *c, struct ev_loop *loop)
{
	c->loop = loop;
	c->started = 1;
	ev_io_init(&c->ev, conn_read_cb, c->fd, EV_READ);
	c->ev.data = c;
	ev_timer_init(&c->reconnect, conn_reconnect_cb, CONN_RECONNECT,
	    CONN_RECONNECT);
	c->reconnect.data = c;
	if (c->fd != -1)
		ev_io_start(loop, &c->ev);
	else
		ev_timer_start(loop, &c->reconnect);
	ev_io_init(&c->order_ev, conn_order_cb, c->order_fd, EV_READ);
	c->order_ev.data = c;
	if (c->order_fd != -1)
		ev_io_start(loop, &c->order_ev);
}

void
conn_close(struct conn *c)
{
	if (c->fd != -1)
		close(c->fd);
	if (c->order_fd != -1)
		close(c->order_fd);
	c->fd = c->order_fd = -1;
}
