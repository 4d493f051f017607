/*
 * A local client on a stream socket: records in (u32 length + message),
 * records out through a queue that keeps EV_WRITE on only while it is not
 * empty. A peer is never freed inside its own callback; closed peers are
 * reaped after the loop iteration.
 *
 * What a client can make mosd hold is bounded (docs/RELIABILITY.md): its
 * unread replies (client_output, and its uid's together, user_output,
 * charged to its quota entry; over either it is dropped), one request in
 * flight (while a deferred one is pending, the rest wait in the socket),
 * a few requests per loop iteration, and time (a connection that neither
 * asks nor reads for its timeout is closed; a registered agent has none).
 * An ordinary user's tools together ask at most requests_per_user times a
 * second: past that their requests are read later (quota_request).
 */
#include <sys/socket.h>

#include <arpa/inet.h>

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mosd.h"

#define PEER_IN_MAX	(64U << 10)	/* largest request from a client */
#define PEER_BATCH	16		/* requests taken per loop iteration */

static struct log_limit peer_log_big, peer_log_drop, peer_log_idle;

/* What a client did: its timeout starts again. */
static void
peer_touch(struct peer *p)
{
	if (p->timeout > 0 && p->refs == 0 && p->kind != PEER_AGENT)
		ev_timer_again(p->mosd->loop, &p->idle);
}

static void
peer_idle_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct peer	*p = w->data;

	looptime_mark(loop, "peer idle");

	if (p->dead)
		return;
	if (p->kind == PEER_CLIENT)
		p->mosd->counters[C_CTL_DROPPED]++;
	p->timed_out = 1;
	if (p->outlen > p->outoff)
		log_limited_warnx(&peer_log_idle, p->uid, "client pid %ld "
		    "(uid %u) read no reply for %.0f s; closing", (long)p->pid,
		    (unsigned)p->uid, p->timeout);
	else
		log_debug("client pid %ld (uid %u) idle for %.0f s; closing",
		    (long)p->pid, (unsigned)p->uid, p->timeout);
	peer_close(p);
}

/* Its uid may ask again: the requests read are taken up, then the rest. */
static void
peer_throttle_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct peer	*p = w->data;

	looptime_mark(loop, "peer throttle");

	if (p->dead || p->refs > 0)
		return;		/* peer_unref takes them up */
	if (!p->eof)
		ev_io_start(loop, &p->rev);
	ev_feed_event(loop, &p->rev, EV_READ);
}

/* A tool of a uid over its requests a second: read on later. */
static int
peer_throttled(struct peer *p)
{
	struct ev_loop	*loop = p->mosd->loop;
	uint64_t	 wait_ms = 0;

	if (p->kind != PEER_CLIENT || p->quota == NULL ||
	    quota_request(&p->mosd->quota, p->quota,
	    (uint64_t)(ev_now(loop) * 1000), &wait_ms))
		return 0;
	if (!ev_is_active(&p->throttle))
		p->mosd->counters[C_CTL_THROTTLED]++;
	ev_io_stop(loop, &p->rev);
	ev_timer_stop(loop, &p->throttle);
	ev_timer_set(&p->throttle, wait_ms / 1000.0, 0);
	ev_timer_start(loop, &p->throttle);
	return 1;
}

/* Dispatch the whole records read, a few at a time, one in flight. */
static void
peer_input(struct peer *p)
{
	struct ev_loop	*loop = p->mosd->loop;
	uint32_t	 n;
	size_t		 done = 0, batch = 0;

	while (!p->dead && p->refs == 0 && p->inlen - done >= 4) {
		if (batch++ == PEER_BATCH) {
			/* Others' turn; the rest next iteration. */
			ev_feed_event(loop, &p->rev, EV_READ);
			break;
		}
		memcpy(&n, p->in + done, 4);
		n = ntohl(n);
		if (n > PEER_IN_MAX) {
			log_limited_warnx(&peer_log_big, p->uid, "client pid "
			    "%ld (uid %u): request of %u bytes is over the "
			    "limit; closing", (long)p->pid, (unsigned)p->uid, n);
			peer_close(p);
			return;
		}
		if (p->inlen - done < 4 + n || peer_throttled(p))
			break;
		if (p->dispatch(p, p->in + done + 4, n) == -1) {
			peer_close(p);
			return;
		}
		done += 4 + n;
	}
	if (p->dead)
		return;
	p->inlen -= done;
	memmove(p->in, p->in + done, p->inlen);
	if (p->inlen == 0) {
		/* Most clients ask once: hold no buffer for them. */
		free(p->in);
		p->in = NULL;
	}
	/* A deferred request is in flight: the socket holds the rest. */
	if (p->refs > 0)
		ev_io_stop(loop, &p->rev);
}

/*
 * Has a client that hung up its side been answered? Then it is done: what
 * is left of its input is no whole request.
 */
static int
peer_done(const struct peer *p)
{
	uint32_t	n;

	if (!p->eof || p->refs > 0 || p->outlen > p->outoff)
		return 0;
	if (p->inlen < 4)
		return 1;
	memcpy(&n, p->in, 4);
	return p->inlen < 4 + (size_t)ntohl(n);
}

/* What looptime.c calls a read of each kind of peer. */
static const char *const peer_names[] = {
	[PEER_CLIENT] = "client read",
	[PEER_AGENT] = "agent read",
	[PEER_ORDER] = "order read",
};

static void
peer_read_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct peer	*p = w->data;
	ssize_t		 r;

	looptime_mark(loop, peer_names[p->kind]);

	if (p->dead)
		return;
	if (p->in == NULL)
		p->in = xmalloc(PEER_IN_MAX + 4);
	if (p->inlen < PEER_IN_MAX + 4 && !p->eof) {
		r = read(p->fd, p->in + p->inlen, PEER_IN_MAX + 4 - p->inlen);
		if (r == -1 && errno != EAGAIN && errno != EINTR) {
			peer_close(p);
			return;
		}
		if (r == 0) {
			/* Half-closed: answer what came, then close. */
			p->eof = 1;
			ev_io_stop(loop, &p->rev);
		}
		if (r > 0) {
			p->inlen += r;
			peer_touch(p);
		}
	}
	peer_input(p);
	if (!p->dead && peer_done(p))
		peer_close(p);
}

/* Write from the queue; the queued descriptor goes with its record. */
static ssize_t
peer_write(struct peer *p)
{
	ssize_t	r;

	if (p->out_fd == -1 || p->outoff != p->out_fd_at)
		return send(p->fd, p->out + p->outoff, p->outlen - p->outoff,
		    MSG_NOSIGNAL);
	if ((r = ctl_send_fd(p->fd, p->out + p->outoff,
	    p->outlen - p->outoff, p->out_fd)) > 0) {
		close(p->out_fd);
		p->out_fd = -1;
	}
	return r;
}

static void
peer_write_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct peer	*p = w->data;
	ssize_t		 r;

	looptime_mark(loop, "peer write");

	r = peer_write(p);
	if (r == -1) {
		if (errno != EAGAIN && errno != EINTR)
			peer_close(p);
		return;
	}
	p->outoff += r;
	if (p->quota != NULL)
		quota_uncharge(&p->mosd->quota, p->quota, r);
	peer_touch(p);
	if (p->outoff < p->outlen)
		return;
	free(p->out);
	p->out = NULL;
	p->outoff = p->outlen = p->out_fd_at = 0;
	ev_io_stop(loop, &p->wev);
	if (peer_done(p))
		peer_close(p);	/* the client already hung up its side */
}

struct peer *
peer_new(struct mosd *m, int fd, int (*dispatch)(struct peer *,
    const uint8_t *, size_t))
{
	struct peer	*p;
	int		 fl;

	if ((fl = fcntl(fd, F_GETFL)) == -1 ||
	    fcntl(fd, F_SETFL, fl | O_NONBLOCK) == -1)
		return NULL;
	p = xcalloc(1, sizeof *p);
	p->fd = fd;
	p->out_fd = -1;
	p->mosd = m;
	p->dispatch = dispatch;
	ev_io_init(&p->rev, peer_read_cb, fd, EV_READ);
	ev_io_init(&p->wev, peer_write_cb, fd, EV_WRITE);
	ev_init(&p->idle, peer_idle_cb);
	ev_init(&p->throttle, peer_throttle_cb);
	p->rev.data = p->wev.data = p->idle.data = p->throttle.data = p;
	ev_io_start(m->loop, &p->rev);
	TAILQ_INSERT_TAIL(&m->peers, p, entry);
	m->npeers++;
	return p;
}

/*
 * The peer's events come before those of users' tools in each loop
 * iteration (root's, guest agents', registered agents'). Between
 * callbacks, or from the peer's own.
 */
void
peer_prefer(struct peer *p)
{
	struct ev_loop	*loop = p->mosd->loop;
	int		 rd = ev_is_active(&p->rev), wr = ev_is_active(&p->wev);

	ev_io_stop(loop, &p->rev);
	ev_io_stop(loop, &p->wev);
	ev_set_priority(&p->rev, EV_MAXPRI);
	ev_set_priority(&p->wev, EV_MAXPRI);
	if (rd)
		ev_io_start(loop, &p->rev);
	if (wr)
		ev_io_start(loop, &p->wev);
}

/* Close the peer if it neither asks nor reads for seconds (0: never). */
void
peer_timeout(struct peer *p, double seconds)
{
	p->timeout = seconds;
	p->idle.repeat = seconds;
	if (seconds > 0)
		peer_touch(p);
	else
		ev_timer_stop(p->mosd->loop, &p->idle);
}

/* The peer holds a registered process now: no timeout, no tool's quota. */
void
peer_agent(struct peer *p)
{
	p->kind = PEER_AGENT;
	ev_timer_stop(p->mosd->loop, &p->idle);
	if (p->quota != NULL)
		quota_registered(&p->mosd->quota, p->quota);
	peer_prefer(p);
}

/* Queue one record; a client over its quota of unread replies is dropped. */
void
peer_send(struct peer *p, const void *buf, size_t len)
{
	uint32_t	 n = htonl(len);
	char		*why = NULL;

	if (p->dead)
		return;
	if (p->quota != NULL && quota_charge(&p->mosd->quota, p->quota,
	    p->outlen - p->outoff, 4 + len, &why) == -1) {
		p->mosd->counters[C_CTL_DROPPED]++;
		log_limited_warnx(&peer_log_drop, p->uid, "client pid %ld (uid "
		    "%u) dropped: %s", (long)p->pid, (unsigned)p->uid, why);
		free(why);
		peer_close(p);
		return;
	}
	p->out = xreallocarray(p->out, p->outlen + 4 + len, 1);
	memcpy(p->out + p->outlen, &n, 4);
	memcpy(p->out + p->outlen + 4, buf, len);
	p->outlen += 4 + len;
	ev_io_start(p->mosd->loop, &p->wev);
}

/*
 * Queue one record with a descriptor (which the peer now owns and closes
 * once sent). One at a time: returns -1 if another is still queued.
 */
int
peer_send_fd(struct peer *p, const void *buf, size_t len, int fd)
{
	if (p->dead || p->out_fd != -1) {
		close(fd);
		return -1;
	}
	p->out_fd = fd;
	p->out_fd_at = p->outlen;
	peer_send(p, buf, len);
	return 0;
}

void
peer_ref(struct peer *p)
{
	if (p->refs++ == 0)
		ev_timer_stop(p->mosd->loop, &p->idle);
}

/* The deferred request answered: the next may come. */
void
peer_unref(struct peer *p)
{
	struct ev_loop	*loop = p->mosd->loop;

	if (--p->refs > 0 || p->dead)
		return;
	peer_touch(p);
	if (!p->eof)
		ev_io_start(loop, &p->rev);
	/* Records already read are taken up on the next iteration. */
	if (p->inlen > 0 || p->eof)
		ev_feed_event(loop, &p->rev, EV_READ);
}

void
peer_close(struct peer *p)
{
	struct mosd	*m = p->mosd;

	if (p->dead)
		return;
	ev_io_stop(m->loop, &p->rev);
	ev_io_stop(m->loop, &p->wev);
	ev_timer_stop(m->loop, &p->idle);
	ev_timer_stop(m->loop, &p->throttle);
	close(p->fd);
	p->fd = -1;
	if (p->out_fd != -1) {
		close(p->out_fd);
		p->out_fd = -1;
	}
	if (p->quota != NULL) {
		quota_uncharge(&m->quota, p->quota, p->outlen - p->outoff);
		quota_disconnect(&m->quota, p->quota, p->kind == PEER_AGENT);
		p->quota = NULL;
	}
	p->dead = 1;
	if (p->closed != NULL)
		p->closed(p);
}

/*
 * Free the peers closed during this loop iteration, unless a request that
 * will answer later still holds them.
 */
void
peer_reap(struct mosd *m)
{
	struct peer	*p, *next;

	for (p = TAILQ_FIRST(&m->peers); p != NULL; p = next) {
		next = TAILQ_NEXT(p, entry);
		if (!p->dead || p->refs > 0)
			continue;
		TAILQ_REMOVE(&m->peers, p, entry);
		m->npeers--;
		free(p->in);
		free(p->out);
		free(p);
	}
}
