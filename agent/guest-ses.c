/*
 * The guest agent's session with the process's home, and its end. Sending
 * fails only when the home is gone or the link is cut off; then the copy
 * R is of no use to anyone, and the agent ends with it (guest_ses_fail).
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include "internal.h"
#include "proto/migrate.pb-c.h"

#define SES_LINGER	15000	/* ms the home has to take R's end */

/* The agent is done: R is gone or lives at home now. */
void
guest_ses_stop(struct guest *g, int code)
{
	conn_close(&g->conn);
	if (g->remote != NULL)
		remote_free(g->remote);
	session_free(&g->ses);
	exit(code);
}

/* The agent cannot go on: R dies with it, nobody would serve it. */
void
guest_ses_fail(struct guest *g, const char *why)
{
	log_warnx("%s: %s", g->conn.who, why);
	if (g->pid != 0)
		kill(g->pid, SIGKILL);
	guest_ses_stop(g, 1);
}

int
guest_ses_send_raw(struct guest *g, uint16_t kind, const void *buf,
    size_t len)
{
	char	*cause = NULL;

	if (session_send(&g->ses, kind, buf, len, &cause) == -1) {
		log_warnx("%s: %s", g->conn.who, cause);
		free(cause);
		return -1;
	}
	return 0;
}

int
guest_ses_send(struct guest *g, uint16_t kind,
    const struct ProtobufCMessage *msg)
{
	char	*cause = NULL;

	if (session_send_msg(&g->ses, kind, msg, &cause) == -1) {
		log_warnx("%s: %s", g->conn.who, cause);
		free(cause);
		return -1;
	}
	return 0;
}

/*
 * What libremote left to send home besides a call (remote_out): those
 * that go before the call sent now (post 0), or all (post 1). A write
 * behind, an offset owed, a question about a descriptor, a read ahead.
 * later: its calls (behind: no one waits for them) wait in the session
 * for the next message that goes, or for the agent's timer.
 */
static void
ses_out(struct guest *g, int post, int later)
{
	enum remote_out	 kind;
	uint8_t		*msg;
	size_t		 len;
	uint16_t	 ses;
	int		 rc;

	if (g->remote == NULL)
		return;
	while (remote_out(g->remote, post, &kind, &msg, &len)) {
		switch (kind) {
		case REMOTE_OUT_CALL:
			ses = OSM__SES_KIND__SES_CALL;
			break;
		case REMOTE_OUT_FD_ASK:
			ses = OSM__SES_KIND__SES_FD_ASK;
			break;
		case REMOTE_OUT_READ:
			ses = OSM__SES_KIND__SES_READ;
			break;
		default:
			fatalx("remote_out kind %d", kind);
		}
		session_hold(&g->ses, later && kind == REMOTE_OUT_CALL);
		rc = guest_ses_send_raw(g, ses, msg, len);
		session_hold(&g->ses, 0);
		free(msg);
		if (rc == -1)
			guest_ses_fail(g, "the home went away");
	}
}

void
guest_ses_out(struct guest *g, int post)
{
	ses_out(g, post, 0);
}

/*
 * After a call answered here, all of it: the calls behind it left (an
 * open made here, then at home; a close) go with the next message, in
 * one write, so that a transaction of sqlite3's on a shared path costs
 * the home one wakeup, not four; guest_ses_flush sends them a moment
 * later if none comes.
 */
void
guest_ses_out_later(struct guest *g)
{
	ses_out(g, 1, 1);
}

/* What waits in the session goes home now. */
void
guest_ses_flush(struct guest *g)
{
	char	*cause = NULL;

	if (session_flush(&g->ses, &cause) == -1) {
		log_warnx("%s: %s", g->conn.who, cause);
		free(cause);
		guest_ses_fail(g, "the home went away");
	}
}

/*
 * R ended, or went home, and the home was told: wait until the home hangs
 * up (at most SES_LINGER ms), so that what it runs after R's writes
 * behind, and replies to, finds the session open, and what it sends
 * meanwhile is read (a close with unread data would reset the connection,
 * dropping what the home has not read yet); it is of no use now.
 */
void
guest_ses_linger(struct guest *g)
{
	struct pollfd	 p = { .fd = g->ses.fd, .events = POLLIN };
	uint8_t		 buf[16384];
	uint64_t	 end = now_ms() + SES_LINGER;
	ssize_t		 n;

	while (g->ses.fd != -1 && now_ms() < end) {
		if (poll(&p, 1, 100) == -1 && errno != EINTR)
			return;
		if ((p.revents & (POLLIN | POLLHUP | POLLERR)) == 0)
			continue;
		if ((n = read(g->ses.fd, buf, sizeof buf)) == 0 ||
		    (n == -1 && errno != EINTR && errno != EAGAIN))
			return;
	}
}

/* Before a dump of R or its end: what R owes the home's offsets, sent. */
void
guest_ses_settle(struct guest *g)
{
	if (g->remote == NULL)
		return;
	remote_settle(g->remote);
	guest_ses_out(g, 1);
}
