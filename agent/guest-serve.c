/*
 * Serving R: its filter's notifications, through libremote's remote.c,
 * become calls sent home (or answers given here, file mappings made here,
 * or a trip home), and the home's replies are written into R and answered
 * — after the signals that came for R meanwhile, as guest-signal.c says.
 */
#include <sys/mman.h>

#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "proto/migrate.pb-c.h"
#include "proto/remote.pb-c.h"

#define SERVE_MAP_MAX	(1ULL << 30)	/* bytes of one mapping had from home */
#define SERVE_FLUSH	0.002		/* s: writes gathered wait no longer */

/* Send R's call home; the answer comes in guest_serve_reply. */
static void
serve_call(struct guest *g, const struct remote_event *ev)
{
	g->pending = ev->seq;
	g->has_mask = ev->has_mask;
	g->mask = ev->mask;
	if (guest_ses_send_raw(g, OSM__SES_KIND__SES_CALL, ev->msg,
	    ev->len) == -1)
		guest_ses_fail(g, "the home went away");
}

/* --- file mappings ---------------------------------------------------- */

/*
 * Ask home about the file of R's mapping: its description (with its
 * content's hash if hash), or bytes of it.
 */
static void
serve_map_ask(struct guest *g, uint64_t off, uint64_t len, int hash)
{
	Osm__SesFileAsk	a = OSM__SES_FILE_ASK__INIT;

	a.seq = g->map.seq = ++g->ask_seq;
	g->map.off = off;
	g->map.hashing = hash;
	a.has_hash = hash;
	a.hash = hash;
	a.has_fd = 1;
	a.fd = (int)g->map.args[4];
	a.offset = off;
	a.length = len;
	if (guest_ses_send(g, OSM__SES_KIND__SES_FILE_ASK, &a.base) == -1)
		guest_ses_fail(g, "the home went away");
}

/* R cannot map it here: home, where the call runs as it is. */
static void
serve_map_home(struct guest *g, const char *what)
{
	char	*why;

	g->map.busy = 0;
	xasprintf(&why, "file mapping: %s", what);
	guest_move_want_home(g, why);
	free(why);
}

/*
 * The mapping's bytes are in, or the next of them asked for: once all are,
 * the mapping is made in R, of our file, at R's own address and flags.
 */
static void
serve_map_next(struct guest *g)
{
	struct guest_map	*m = &g->map;
	uint64_t		 o, n;
	char			*cause = NULL;
	int			 fd = (int)m->args[4];

	if (guest_files_missing(m->f, m->args[5], m->args[1], &o, &n)) {
		serve_map_ask(g, o, n, 0);
		return;
	}
	m->busy = 0;
	switch (remote_map(g->remote, m->id, fd, m->f->fd, &cause)) {
	case -1:
		guest_ses_fail(g, cause);
	case 1:
		return;		/* R left the call: it makes it again */
	}
	log_debug("%s: maps %s (descriptor %d) here", g->conn.who,
	    m->f->path, fd);
}

/* R's mmap of a file (REMOTE_MAP): its file from home, asked for first. */
static void
serve_map(struct guest *g, const struct remote_event *ev)
{
	/* a mapping that was waiting is moot: R left it to make this one */
	g->map.busy = 1;
	g->map.id = ev->id;
	memcpy(g->map.args, ev->args, sizeof g->map.args);
	g->map.f = NULL;
	serve_map_ask(g, 0, 0, 0);
}

/* An answer about a file (SES_FILE_ANSWER), for the mapping R waits in. */
void
guest_serve_file(struct guest *g, const uint8_t *body, size_t len)
{
	struct guest_map	*m = &g->map;
	Osm__SesFileAnswer	*r;
	char			*cause = NULL, what[64];
	int			 shared;

	if ((r = osm__ses_file_answer__unpack(NULL, len, body)) == NULL)
		guest_ses_fail(g, "malformed file answer from home");
	if (!m->busy || r->seq != m->seq) {
		osm__ses_file_answer__free_unpacked(r, NULL);
		return;		/* for a mapping R left */
	}
	shared = ((uint32_t)m->args[3] & MAP_TYPE) != MAP_PRIVATE;
	if (r->error != NULL)
		serve_map_home(g, r->error);
	else if (m->f != NULL) {
		if (!r->has_data)
			guest_ses_fail(g, "the home sent no bytes of a file");
		if (guest_files_put(m->f, m->off, r->data.data, r->data.len,
		    &cause) == -1)
			guest_ses_fail(g, cause);
		serve_map_next(g);
	} else if (r->id == NULL || r->path == NULL || r->path[0] != '/')
		guest_ses_fail(g, "the home sent a file without its identity");
	else if (shared && (!r->has_writable || r->writable))
		serve_map_home(g, "a shared mapping of a file open for "
		    "writing");
	else if (m->args[1] > SERVE_MAP_MAX) {
		snprintf(what, sizeof what, "%llu MiB at once",
		    (unsigned long long)(m->args[1] >> 20));
		serve_map_home(g, what);
	} else if ((m->f = guest_files_find(g, r->id, shared)) != NULL)
		serve_map_next(g);
	else if (!shared && !m->hashing && guest_files_candidate(r->path,
	    r->id))
		serve_map_ask(g, 0, 0, 1);	/* the node's own, if the same */
	else if ((m->f = guest_files_add(g, r->path, r->id, shared,
	    &cause)) == NULL) {
		serve_map_home(g, cause);
		free(cause);
	} else
		serve_map_next(g);
	osm__ses_file_answer__free_unpacked(r, NULL);
}

/* --- notifications and replies ---------------------------------------- */

/* Writes behind gathered, and no call of R's since: they go home now. */
static void
serve_flush_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct guest	*g = w->data;

	remote_flush(g->remote);
	guest_ses_out(g, 1);
}

/* Writes gathered wait a moment for the next (SERVE_FLUSH seconds). */
static void
serve_flush_later(struct guest *g)
{
	if (!remote_batched(g->remote) || ev_is_active(&g->flush))
		return;
	ev_timer_init(&g->flush, serve_flush_cb, SERVE_FLUSH, 0);
	g->flush.data = g;
	ev_timer_start(g->loop, &g->flush);
}

/* R's filter notified a call. */
void
guest_serve_notif_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct guest		*g = w->data;
	struct remote_event	 ev;
	struct pollfd		 hup = { .fd = w->fd, .events = POLLIN };
	char			*cause = NULL;

	/* the owner's policy may want every file call as it is */
	if (g->gs->strict_files)
		remote_strict(g->remote);
	if (remote_receive(g->remote, &ev, &cause) == -1)
		guest_ses_fail(g, cause);
	guest_ses_out(g, 0);
	switch (ev.kind) {
	case REMOTE_FORWARD:
		serve_call(g, &ev);
		guest_ses_out(g, 1);
		break;
	case REMOTE_WAITING:
		break;
	case REMOTE_MAP:
		serve_map(g, &ev);
		break;
	case REMOTE_HOME:
		guest_move_want_home(g, ev.why);
		break;
	case REMOTE_ANSWERED:
		guest_ses_out(g, 1);
		serve_flush_later(g);
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

/*
 * P's identity at home (SES_IDENTITY): R's getpid, getuid and the like
 * are answered from it until a call may change it.
 */
void
guest_serve_identity(struct guest *g, const uint8_t *body, size_t len)
{
	Osm__SesIdentity	*m;
	struct remote_ident	 id;

	if ((m = osm__ses_identity__unpack(NULL, len, body)) == NULL)
		guest_ses_fail(g, "malformed identity from home");
	if (m->n_uid != 4 || m->n_gid != 4 || m->pid == 0 ||
	    m->pid > INT32_MAX || m->ppid > INT32_MAX ||
	    m->pgrp > INT32_MAX || m->sid > INT32_MAX || m->n_groups > 65536)
		guest_ses_fail(g, "the home sent an impossible identity");
	memset(&id, 0, sizeof id);
	id.pid = m->pid;
	id.ppid = m->ppid;
	id.pgrp = m->pgrp;
	id.sid = m->sid;
	memcpy(id.uid, m->uid, sizeof id.uid);
	memcpy(id.gid, m->gid, sizeof id.gid);
	id.groups = m->groups;
	id.ngroups = m->n_groups;
	remote_set_ident(g->remote, &id);
	osm__ses_identity__free_unpacked(m, NULL);
}

/* What a descriptor of R's is at home (SES_FD_INFO). */
void
guest_serve_fd_info(struct guest *g, const uint8_t *body, size_t len)
{
	char	*cause = NULL;

	if (remote_fd_info(g->remote, body, len, &cause) == -1)
		guest_ses_fail(g, cause);
}

/* Bytes read ahead for R's read (SES_READ_DATA). */
void
guest_serve_read_data(struct guest *g, const uint8_t *body, size_t len)
{
	struct remote_event	 ev;
	char			*cause = NULL;

	if (remote_read_data(g->remote, body, len, &ev, &cause) == -1)
		guest_ses_fail(g, cause);
	guest_ses_out(g, 0);
	if (ev.kind == REMOTE_FORWARD)
		serve_call(g, &ev);
	guest_ses_out(g, 1);
}

/* The home's answer to R's call (SES_REPLY). */
void
guest_serve_reply(struct guest *g, const uint8_t *body, size_t len)
{
	struct remote_event	 ev;
	Osm__RemoteReply	*r;
	uint64_t		 blocked = 0, keep = 0;
	char			*cause = NULL;
	int			 interrupted = 0, woken = 0, i;

	/* a write behind, or an offset owed: no call of R's waits for it */
	switch (remote_reply_behind(g->remote, body, len, &cause)) {
	case -1:
		guest_ses_fail(g, cause);
	case 1:
		return;
	}
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
			woken |= guest_signal_wakes(g, g->held[i]);
		/*
		 * A wait with a mask of its own, ended by a signal R's mask
		 * blocks: only R's kernel can take the signal under the
		 * wait's mask, and only at home, where the wait starts again
		 * with it (the signal pending, going home with R).
		 */
		proc_status_mask(g->pid, "SigBlk", &blocked);
		if (woken && g->has_mask && g->mask != blocked) {
			g->pending = 0;
			guest_move_want_home(g, "a signal for a wait with a "
			    "signal mask of its own");
			return;
		}
		guest_signal_deliver_held(g);
	}
	if (g->has_mask)
		keep = g->mask;
	g->pending = 0;
	if (remote_reply(g->remote, body, len, interrupted ? woken : -1, &ev,
	    &cause) == -1)
		guest_ses_fail(g, cause);
	/*
	 * A call to make again: R makes it itself if frozen for a checkpoint.
	 * A wait made again keeps back the signals its mask blocks.
	 */
	if (ev.kind == REMOTE_FORWARD) {
		if (guest_ckpt(g, ev.seq) == -1)
			serve_call(g, &ev);
		guest_ses_out(g, 1);
		guest_signal_deliver_unblocked(g, keep);
		return;
	}
	g->has_mask = 0;
	guest_signal_deliver_held(g);
	guest_ckpt(g, 0);
}
