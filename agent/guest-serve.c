/*
 * Serving R: its filter's notifications, through libremote's remote.c,
 * become calls sent home (or answers given here, or a trip home), and the
 * home's replies are written into R and answered — after the signals that
 * came for R meanwhile, as guest-signal.c says.
 */
#include <poll.h>
#include <stdlib.h>

#include "internal.h"
#include "proto/migrate.pb-c.h"
#include "proto/remote.pb-c.h"

/* Send R's call home; the answer comes in guest_serve_reply. */
static void
serve_call(struct guest *g, const struct remote_event *ev)
{
	g->pending = ev->seq;
	if (guest_ses_send_raw(g, OSM__SES_KIND__SES_CALL, ev->msg,
	    ev->len) == -1)
		guest_ses_fail(g, "the home went away");
}

/* R's filter notified a call. */
void
guest_serve_notif_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct guest		*g = w->data;
	struct remote_event	 ev;
	struct pollfd		 hup = { .fd = w->fd, .events = POLLIN };
	char			*cause = NULL;

	if (remote_receive(g->remote, &ev, &cause) == -1)
		guest_ses_fail(g, cause);
	switch (ev.kind) {
	case REMOTE_FORWARD:
		serve_call(g, &ev);
		break;
	case REMOTE_HOME:
		guest_move_home(g, ev.why);
		break;
	case REMOTE_ANSWERED:
		break;
	case REMOTE_NONE:
		/*
		 * R ended: its filter hangs up, and the listener would wake
		 * us for ever, starving R's exit on our CPU. SIGCHLD says
		 * the rest.
		 */
		if (poll(&hup, 1, 0) == 1 && (hup.revents & POLLHUP))
			ev_io_stop(loop, w);
		break;
	}
}

/* The home's answer to R's call (SES_REPLY). */
void
guest_serve_reply(struct guest *g, const uint8_t *body, size_t len)
{
	struct remote_event	 ev;
	Osm__RemoteReply	*r;
	char			*cause = NULL;
	int			 interrupted = 0, woken = 0, i;

	if (g->nheld > 0 &&
	    (r = osm__remote_reply__unpack(NULL, len, body)) != NULL) {
		interrupted = r->ret <= -512 && r->ret >= -516;
		osm__remote_reply__free_unpacked(r, NULL);
	}
	/*
	 * The call was broken off by a signal: R gets the signal first, and
	 * whether it ends R's wait decides between the restart logic of R's
	 * kernel and sending the call home again. A call that ran gives R
	 * its result before the signal.
	 */
	if (interrupted) {
		for (i = 0; i < g->nheld; i++)
			woken |= guest_signal_wakes(g->pid, g->held[i]);
		guest_signal_deliver_held(g);
	}
	g->pending = 0;
	if (remote_reply(g->remote, body, len, interrupted ? woken : -1, &ev,
	    &cause) == -1)
		guest_ses_fail(g, cause);
	guest_signal_deliver_held(g);
	/* A call to make again: R makes it itself if frozen for a checkpoint. */
	if (ev.kind == REMOTE_FORWARD) {
		if (guest_ckpt(g, ev.seq) == -1)
			serve_call(g, &ev);
	} else
		guest_ckpt(g, 0);
}
