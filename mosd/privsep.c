/*
 * The network process's end of the channel to mosd's privileged parent
 * (parent.c, privmsg.h). What needs root is asked of the parent, and
 * answered later: privsep_ask sends a request (starting a guest agent,
 * checking a web token) and calls its done with the answer, or with NULL
 * if none will come. From the parent come answers and, on SIGHUP, the
 * configuration files to apply (reload.c). If the parent goes, so does
 * this process: it could start no guest any more.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mosd.h"

#define PRIVSEP_PENDING_MAX	1024	/* requests awaiting an answer */
#define PRIVSEP_BATCH		64	/* records taken per wakeup */

struct privsep_req {
	uint32_t		 id;
	void			(*done)(struct mosd *, void *,
				    const struct privmsg_answer *);
	void			*arg;
	TAILQ_ENTRY(privsep_req) entry;
};

static struct log_limit privsep_log;

/*
 * Ask the parent for type with body (len bytes) and descriptor fd (-1:
 * none, else still the caller's). done gets the answer; *id names the
 * request for privsep_cancel. 0, or -1 and *cause.
 */
int
privsep_ask(struct mosd *m, uint32_t type, const void *body, size_t len,
    int fd, void (*done)(struct mosd *, void *,
    const struct privmsg_answer *), void *arg, uint32_t *id, char **cause)
{
	struct privsep_req	*r;

	if (m->npriv >= PRIVSEP_PENDING_MAX) {
		xasprintf(cause, "the privileged process has %zu requests to "
		    "answer", m->npriv);
		return -1;
	}
	if (++m->priv_id == 0)
		m->priv_id = 1;
	if (privmsg_send(m->priv_fd, type, m->priv_id, body, len, &fd,
	    fd == -1 ? 0 : 1) == -1) {
		xasprintf(cause, "cannot ask the privileged process: %s",
		    strerror(errno));
		return -1;
	}
	r = xcalloc(1, sizeof *r);
	r->id = m->priv_id;
	r->done = done;
	r->arg = arg;
	TAILQ_INSERT_TAIL(&m->priv_reqs, r, entry);
	m->npriv++;
	*id = r->id;
	return 0;
}

static struct privsep_req *
privsep_find(struct mosd *m, uint32_t id)
{
	struct privsep_req	*r;

	TAILQ_FOREACH(r, &m->priv_reqs, entry)
		if (r->id == id)
			return r;
	return NULL;
}

static void
privsep_remove(struct mosd *m, struct privsep_req *r)
{
	TAILQ_REMOVE(&m->priv_reqs, r, entry);
	m->npriv--;
	free(r);
}

/* The asker wants no answer any more (its link or request has gone). */
void
privsep_cancel(struct mosd *m, uint32_t id)
{
	struct privsep_req	*r;

	if ((r = privsep_find(m, id)) != NULL)
		privsep_remove(m, r);
}

static void
privsep_answer(struct mosd *m, struct privmsg *msg)
{
	struct privmsg_answer	 a;
	struct privsep_req	*r;
	void			(*done)(struct mosd *, void *,
				    const struct privmsg_answer *);
	void			*arg;

	if ((r = privsep_find(m, msg->hdr.id)) == NULL) {
		log_debug("privileged process: an answer to request %u, "
		    "which nobody awaits", msg->hdr.id);
		return;
	}
	memset(&a, 0, sizeof a);
	if (msg->len != sizeof a) {
		snprintf(a.why, sizeof a.why, "the privileged process "
		    "answered %zu bytes", msg->len);
	} else {
		memcpy(&a, msg->body, sizeof a);
		a.why[sizeof a.why - 1] = '\0';
	}
	done = r->done;
	arg = r->arg;
	privsep_remove(m, r);
	done(m, arg, &a);
}

static void
privsep_read_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct mosd	*m = w->data;
	struct privmsg	 msg;
	char		*why = NULL;
	int		 i;

	looptime_mark(loop, "privsep read");

	for (i = 0; i < PRIVSEP_BATCH; i++) {
		switch (privmsg_recv(m->priv_fd, &msg, &why)) {
		case PRIVMSG_OK:
			break;
		case PRIVMSG_BAD:
			log_limited_warnx(&privsep_log, 0, "from the privileged "
			    "process: %s", why);
			free(why);
			why = NULL;
			continue;
		case PRIVMSG_EOF:
			log_warnx("the privileged process has gone; stopping");
			ev_io_stop(loop, w);
			ev_break(loop, EVBREAK_ALL);
			return;
		case PRIVMSG_NONE:
			return;
		}
		if (msg.hdr.type == PRIVMSG_ANSWER)
			privsep_answer(m, &msg);
		else if (msg.hdr.type == PRIVMSG_RELOAD &&
		    msg.len == sizeof(struct privmsg_reload) && msg.nfds >= 1) {
			/* reload_apply takes the descriptors */
			reload_apply(m, msg.fds[0], msg.nfds > 1 ?
			    msg.fds[1] : -1);
			msg.nfds = 0;
		} else if (msg.hdr.type == PRIVMSG_STOP) {
			log_info("the privileged process asks to stop");
			privmsg_close_fds(&msg);
			ev_io_stop(loop, w);
			ev_break(loop, EVBREAK_ALL);
			return;
		} else
			log_limited_warnx(&privsep_log, 0, "from the privileged "
			    "process: an unexpected record of type %u",
			    msg.hdr.type);
		privmsg_close_fds(&msg);
	}
	ev_feed_event(loop, w, EV_READ);	/* the rest next iteration */
}

void
privsep_start(struct mosd *m)
{
	ev_io_init(&m->priv_ev, privsep_read_cb, m->priv_fd, EV_READ);
	m->priv_ev.data = m;
	ev_set_priority(&m->priv_ev, EV_MAXPRI);
	ev_io_start(m->loop, &m->priv_ev);
}

/* At the end: what is still asked gets no answer. */
void
privsep_stop(struct mosd *m)
{
	struct privsep_req	*r;

	while ((r = TAILQ_FIRST(&m->priv_reqs)) != NULL) {
		TAILQ_REMOVE(&m->priv_reqs, r, entry);
		m->npriv--;
		r->done(m, r->arg, NULL);
		free(r);
	}
	ev_io_stop(m->loop, &m->priv_ev);
	close(m->priv_fd);
	m->priv_fd = -1;
}
