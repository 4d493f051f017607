/*
 * The pages of a post-copy move over the agents' session, the same either
 * way (the deputy and the guest agent are each source or target): the
 * source answers the target's faults and pushes the rest meanwhile, the
 * target puts them into the running process (migrate/postcopy.c). See
 * docs/REMOTE.md, "Post-copy". Both loops are the agent's only business
 * while they run: calls of the process's that go through the agent wait
 * for the last page.
 */
#include <sys/ioctl.h>

#include <linux/sockios.h>

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "internal.h"
#include "proto/migrate.pb-c.h"

#define POST_PUSH	(256U << 10)	/* bytes in one push */
#define POST_ANSWER	(64U << 10)	/* at most in one answer to a fault */
#define POST_HDR	12		/* address, flags */
/*
 * Pushes waiting in our socket ahead of an answer delay it: no push while
 * this much is still unsent or unacknowledged; a fault's answer goes at
 * once.
 */
#define POST_AHEAD	(1U << 20)
#define POST_ANSWERED	1

static void
postcopy_put64(uint8_t *p, uint64_t v)
{
	int	i;

	for (i = 0; i < 8; i++)
		p[i] = v >> (8 * i);
}

static uint64_t
postcopy_get64(const uint8_t *p)
{
	uint64_t	v = 0;
	int		i;

	for (i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

/* len bytes of the source's at addr, read now, as one SES_PAGES. */
static int
postcopy_send(struct session *s, struct mig_post *pp, uint8_t *buf,
    uint64_t addr, size_t len, uint32_t flags, char **cause)
{
	struct iovec	iov[2];
	uint8_t		hdr[POST_HDR];

	postcopy_put64(hdr, addr);
	hdr[8] = flags;
	hdr[9] = hdr[10] = hdr[11] = 0;
	mig_post_read(pp, addr, buf, len);
	iov[0].iov_base = hdr;
	iov[0].iov_len = sizeof hdr;
	iov[1].iov_base = buf;
	iov[1].iov_len = len;
	return session_sendv(s, OSM__SES_KIND__SES_PAGES, iov, 2, cause);
}

/* Wait up to ms for fd to be readable: 1, 0 if not, -1 if poll fails. */
static int
postcopy_wait(int fd, int fd2, int ms, int *ready2)
{
	struct pollfd	p[2] = { { fd, POLLIN, 0 }, { fd2, POLLIN, 0 } };
	int		n;

	n = poll(p, fd2 != -1 ? 2 : 1, ms);
	if (n == -1)
		return errno == EINTR ? 0 : -1;
	if (ready2 != NULL)
		*ready2 = fd2 != -1 && (p[1].revents & (POLLIN | POLLERR));
	return (p[0].revents & (POLLIN | POLLHUP | POLLERR)) != 0;
}

/*
 * What a deputy sends a guest unasked or in answer to R's calls: on the
 * way home some may have left it before it heard R was coming (R, frozen,
 * makes its call again at home, as guest_move_home says), and arrive
 * among its page asks. Of no use now, and no error.
 */
static int
postcopy_stale(uint16_t kind)
{
	switch (kind) {
	case OSM__SES_KIND__SES_REPLY:
	case OSM__SES_KIND__SES_SIGNAL:
	case OSM__SES_KIND__SES_FD_INFO:
	case OSM__SES_KIND__SES_READ_DATA:
	case OSM__SES_KIND__SES_THREAD_MADE:
	case OSM__SES_KIND__SES_FILE_ANSWER:
	case OSM__SES_KIND__SES_MAY_LEAVE:
	case OSM__SES_KIND__SES_IDENTITY:
		return 1;
	}
	return 0;
}

/*
 * The source's side: answer each SES_PAGE_ASK with its page (and those
 * left after it), push what is left between, then SES_PAGES_DONE, and
 * wait for the target's last SesArrived. silence_ms: how long the target
 * may say nothing once everything is sent. 0, or -1 with *cause: the
 * process is lost (its memory is on both nodes).
 */
int
postcopy_serve(struct session *s, struct mig_post *pp, int silence_ms,
    struct postcopy_counts *pc, char **cause)
{
	Osm__SesArrived	*arr;
	const uint8_t	*body;
	uint8_t		*buf;
	uint64_t	 addr, t0 = now_us();
	size_t		 len, blen;
	uint16_t	 kind;
	int		 done = 0, r, rc = -1, queued, full;

	memset(pc, 0, sizeof *pc);
	buf = xmalloc(POST_PUSH);
	for (;;) {
		full = !done && ioctl(s->fd, SIOCOUTQ, &queued) == 0 &&
		    queued > (int)POST_AHEAD;
		r = postcopy_wait(s->fd, -1, done ? silence_ms : full ? 1 : 0,
		    NULL);
		if (r == -1) {
			xasprintf(cause, "poll: %s", strerror(errno));
			goto out;
		}
		if (r == 0 && done) {
			xasprintf(cause, "no word from the target for %d s "
			    "during post-copy", silence_ms / 1000);
			goto out;
		}
		if (r == 1 && session_fill(s, cause) == -1) {
			if (*cause == NULL)
				xasprintf(cause, "the target hung up during "
				    "post-copy");
			goto out;
		}
		while ((r = session_next(s, &kind, &body, &blen, cause)) == 1) {
			switch (kind) {
			case OSM__SES_KIND__SES_PAGE_ASK:
				if (blen != 8) {
					xasprintf(cause, "malformed page ask");
					goto out;
				}
				pc->asks++;
				/* after the end, what is asked is zeros */
				if (done)
					break;
				addr = postcopy_get64(body) & ~(MIG_PAGE - 1);
				len = mig_post_take(pp, addr, POST_ANSWER);
				if (postcopy_send(s, pp, buf, addr, len,
				    POST_ANSWERED, cause) == -1)
					goto out;
				pc->answered += len / MIG_PAGE;
				break;
			case OSM__SES_KIND__SES_ARRIVED:
				if ((arr = osm__ses_arrived__unpack(NULL, blen,
				    body)) == NULL) {
					xasprintf(cause, "malformed arrival");
					goto out;
				}
				osm__ses_arrived__free_unpacked(arr, NULL);
				if (!done) {
					xasprintf(cause, "the target said the "
					    "move was over before it was");
					goto out;
				}
				pc->us = now_us() - t0;
				rc = 0;
				goto out;
			case OSM__SES_KIND__SES_ERROR:
				*cause = ses_error_reason(body, blen,
				    "malformed error");
				goto out;
			default:
				if (postcopy_stale(kind))
					break;
				xasprintf(cause, "unexpected message %u during "
				    "post-copy", kind);
				goto out;
			}
		}
		if (r == -1)
			goto out;
		if (done || full)
			continue;
		if (mig_post_next(pp, &addr, &len, POST_PUSH)) {
			if (postcopy_send(s, pp, buf, addr, len, 0, cause) == -1)
				goto out;
			pc->pushed += len / MIG_PAGE;
			continue;
		}
		if (session_send(s, OSM__SES_KIND__SES_PAGES_DONE, "", 0,
		    cause) == -1)
			goto out;
		done = 1;
	}
out:
	free(buf);
	return rc;
}

/*
 * The target's side, the process running: its faults asked of the source,
 * the pages that come put in, until SES_PAGES_DONE; silence_ms: how long
 * the source may say nothing while a fault waits. 0 (f may be freed now,
 * and the move is over), or -1 with *cause: the process is lost.
 */
int
postcopy_fetch(struct session *s, struct mig_fetch *f, int silence_ms,
    char **cause)
{
	const uint8_t	*body;
	uint8_t		 a[8];
	uint64_t	 addr, quiet = now_us();
	size_t		 blen;
	uint16_t	 kind;
	int		 r, ufd_ready = 0;

	for (;;) {
		r = postcopy_wait(s->fd, mig_fetch_fd(f), 1000, &ufd_ready);
		if (r == -1) {
			xasprintf(cause, "poll: %s", strerror(errno));
			return -1;
		}
		if (ufd_ready && mig_fetch_events(f, cause) == -1)
			return -1;
		while (mig_fetch_ask(f, &addr)) {
			postcopy_put64(a, addr);
			if (session_send(s, OSM__SES_KIND__SES_PAGE_ASK, a,
			    sizeof a, cause) == -1)
				return -1;
		}
		if (r == 0) {
			if ((now_us() - quiet) / 1000 > (uint64_t)silence_ms) {
				xasprintf(cause, "no page from the source for "
				    "%d s during post-copy", silence_ms / 1000);
				return -1;
			}
			continue;
		}
		quiet = now_us();
		if (session_fill(s, cause) == -1) {
			if (*cause == NULL)
				xasprintf(cause, "the source hung up during "
				    "post-copy");
			return -1;
		}
		while ((r = session_next(s, &kind, &body, &blen, cause)) == 1) {
			switch (kind) {
			case OSM__SES_KIND__SES_PAGES:
				if (blen < POST_HDR) {
					xasprintf(cause, "malformed pages");
					return -1;
				}
				if (mig_fetch_copy(f, postcopy_get64(body),
				    body + POST_HDR, blen - POST_HDR,
				    body[8] & POST_ANSWERED, cause) == -1)
					return -1;
				break;
			case OSM__SES_KIND__SES_PAGES_DONE:
				return 0;
			case OSM__SES_KIND__SES_ERROR:
				*cause = ses_error_reason(body, blen,
				    "malformed error");
				return -1;
			default:
				xasprintf(cause, "unexpected message %u during "
				    "post-copy", kind);
				return -1;
			}
		}
		if (r == -1)
			return -1;
	}
}
