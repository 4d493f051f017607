/*
 * A local client on a stream socket: records in (u32 length + message),
 * records out through a queue that keeps EV_WRITE on only while it is not
 * empty. A peer is never freed inside its own callback; closed peers are
 * reaped after the loop iteration.
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
#define PEER_OUT_MAX	(16U << 20)	/* largest backlog to a client */

static void
peer_read_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct peer	*p = w->data;
	uint32_t	 n;
	ssize_t		 r;

	if (p->dead)
		return;
	if (p->in == NULL)
		p->in = xmalloc(PEER_IN_MAX + 4);
	r = read(p->fd, p->in + p->inlen, PEER_IN_MAX + 4 - p->inlen);
	if (r == -1) {
		if (errno != EAGAIN && errno != EINTR)
			peer_close(p);
		return;
	}
	if (r == 0) {
		/* Half-closed: finish sending what is queued, then close. */
		ev_io_stop(loop, &p->rev);
		if (p->outlen == p->outoff)
			peer_close(p);
		return;
	}
	p->inlen += r;
	while (!p->dead && p->inlen >= 4) {
		memcpy(&n, p->in, 4);
		n = ntohl(n);
		if (n > PEER_IN_MAX) {
			log_warnx("client pid %ld: request of %u bytes is over "
			    "the limit; closing", (long)p->pid, n);
			peer_close(p);
			return;
		}
		if (p->inlen < 4 + n)
			break;
		if (p->dispatch(p, p->in + 4, n) == -1) {
			peer_close(p);
			return;
		}
		p->inlen -= 4 + n;
		memmove(p->in, p->in + 4 + n, p->inlen);
	}
}

/* Write from the queue; the queued descriptor goes with its record. */
static ssize_t
peer_write(struct peer *p)
{
	ssize_t	r;

	if (p->out_fd == -1 || p->outoff != p->out_fd_at)
		return write(p->fd, p->out + p->outoff, p->outlen - p->outoff);
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

	r = peer_write(p);
	if (r == -1) {
		if (errno != EAGAIN && errno != EINTR)
			peer_close(p);
		return;
	}
	p->outoff += r;
	if (p->outoff < p->outlen)
		return;
	p->outoff = p->outlen = p->out_fd_at = 0;
	ev_io_stop(loop, &p->wev);
	if (!ev_is_active(&p->rev))
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
	p->rev.data = p->wev.data = p;
	ev_io_start(m->loop, &p->rev);
	TAILQ_INSERT_TAIL(&m->peers, p, entry);
	m->npeers++;
	return p;
}

/* Queue one record. */
void
peer_send(struct peer *p, const void *buf, size_t len)
{
	uint32_t	n = htonl(len);

	if (p->dead)
		return;
	if (p->outlen + 4 + len > PEER_OUT_MAX) {
		log_warnx("client pid %ld is not reading; closing",
		    (long)p->pid);
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
	p->refs++;
}

void
peer_unref(struct peer *p)
{
	p->refs--;
}

void
peer_close(struct peer *p)
{
	if (p->dead)
		return;
	ev_io_stop(p->mosd->loop, &p->rev);
	ev_io_stop(p->mosd->loop, &p->wev);
	close(p->fd);
	p->fd = -1;
	if (p->out_fd != -1) {
		close(p->out_fd);
		p->out_fd = -1;
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
