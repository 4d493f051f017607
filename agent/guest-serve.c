/*
 * Serving R: its filter's notifications, through libremote's remote.c,
 * become calls sent home (or answers given here, file mappings made here,
 * or a trip home), and the home's replies are written into R and answered
 * — after the signals that came for R meanwhile, as guest-signal.c says.
 */
#include <sys/mman.h>

#include <dirent.h>
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
	struct guest_call	*c;

	g->calls = xreallocarray(g->calls, g->ncalls + 1, sizeof *g->calls);
	c = &g->calls[g->ncalls++];
	memset(c, 0, sizeof *c);
	c->seq = ev->seq;
	c->tid = ev->tid;
	c->has_mask = ev->has_mask;
	c->mask = ev->mask;
	if (guest_ses_send_raw(g, OSM__SES_KIND__SES_CALL, ev->msg,
	    ev->len) == -1)
		guest_ses_fail(g, "the home went away");
}

static void
serve_drop(struct guest *g, struct guest_call *c)
{
	free(c->reply);
	*c = g->calls[--g->ncalls];
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

static void	serve_flush_later(struct guest *);

/*
 * Writes behind gathered, or calls behind held in the session, and no
 * call of R's since: they go home now.
 * Those the stub in R gathers meanwhile, while it may, are taken in at
 * the next tick (rstub.c).
 */
static void
serve_flush_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct guest	*g = w->data;

	remote_flush(g->remote);
	g->held_late += session_held(&g->ses);
	guest_ses_out(g, 1);
	guest_ses_flush(g);
	serve_flush_later(g);
}

/*
 * Writes gathered wait a moment for the next (SERVE_FLUSH seconds), as
 * do those the stub in R may gather from R's going on, and calls behind
 * held in the session (guest_ses_out_later).
 */
static void
serve_flush_later(struct guest *g)
{
	if (g->remote == NULL || (!remote_batched(g->remote) &&
	    !session_held(&g->ses)) || ev_is_active(&g->flush))
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

	if (remote_receive(g->remote, &ev, &cause) == -1)
		guest_ses_fail(g, cause);
	guest_open_follow(g);
	if (ev.kind != REMOTE_ANSWERED)
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
	case REMOTE_THREAD:
		guest_thread_call(g, &ev);
		break;
	case REMOTE_ANSWERED:
		guest_ses_out_later(g);
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
	serve_flush_later(g);
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

/* Bytes read ahead for R's read (SES_READ_DATA), body taken. */
void
guest_serve_read_data(struct guest *g, uint8_t *body, size_t len)
{
	struct remote_event	 ev;
	char			*cause = NULL;

	if (remote_read_data(g->remote, body, len, &ev, &cause) == -1)
		guest_ses_fail(g, cause);
	guest_ses_out(g, 0);
	if (ev.kind == REMOTE_FORWARD)
		serve_call(g, &ev);
	guest_ses_out(g, 1);
	serve_flush_later(g);
}

/* Is this reply a call broken off at home (a restart code)? */
static int
serve_interrupted(const uint8_t *body, size_t len, uint64_t *seq)
{
	Osm__RemoteReply	*r;
	int			 interrupted;

	if ((r = osm__remote_reply__unpack(NULL, len, body)) == NULL)
		return -1;
	interrupted = r->ret <= -512 && r->ret >= -516;
	*seq = r->seq;
	osm__remote_reply__free_unpacked(r, NULL);
	return interrupted;
}

/*
 * Apply the reply of call seq, woken saying whether a signal just queued
 * ends the thread's wait (-1: look). A call to make again goes home again,
 * unless R makes it itself, frozen for a checkpoint; a wait made again
 * keeps back the signals its mask blocks.
 */
static void
serve_apply(struct guest *g, uint64_t seq, const uint8_t *body, size_t len,
    int woken)
{
	struct remote_event	 ev;
	struct guest_call	*c;
	uint64_t		 keep = 0;
	char			*cause = NULL;

	if ((c = guest_signal_call(g, seq)) != NULL) {
		if (c->has_mask)
			keep = c->mask;
		serve_drop(g, c);
	}
	if (remote_reply(g->remote, body, len, woken, &ev, &cause) == -1)
		guest_ses_fail(g, cause);
	if (ev.kind == REMOTE_FORWARD) {
		if (guest_ckpt(g, ev.seq) == -1)
			serve_call(g, &ev);
		guest_ses_out(g, 1);
		guest_signal_deliver_unblocked(g, keep);
	}
	serve_flush_later(g);
}

/*
 * A thread for process-directed signal h: one of R's waiting in a call
 * broken off at home that h ends (it takes h and its kernel's restart
 * logic decides), else R itself if none of its calls is at home, else a
 * thread in none of them that does not block h, so that no thread waiting
 * in a call at home is woken by it: its call could run twice. -1: none
 * now; h stays held.
 */
static pid_t
serve_target(struct guest *g, struct guest_call **broken, size_t n,
    const struct guest_held *h)
{
	char		 path[64];
	struct dirent	*e;
	DIR		*dir;
	uint64_t	 blk;
	pid_t		 tid, found = -1;
	size_t		 i;

	for (i = 0; i < n; i++)
		if (guest_signal_wakes(g, broken[i], h))
			return broken[i]->tid;
	if (g->ncalls == n)
		return 0;
	snprintf(path, sizeof path, "/proc/%d/task", (int)g->pid);
	if ((dir = opendir(path)) == NULL)
		return -1;
	while (found == -1 && (e = readdir(dir)) != NULL) {
		if ((tid = (pid_t)strtol(e->d_name, NULL, 10)) <= 0)
			continue;
		for (i = 0; i < g->ncalls && g->calls[i].tid != tid; i++)
			;
		blk = 0;
		if (i == g->ncalls && proc_status_mask(tid, "SigBlk",
		    &blk) == 0 && !(blk & (1ULL << (h->signo - 1))))
			found = tid;
	}
	closedir(dir);
	return found;
}

/*
 * Every call a held signal may break off has answered: give R the results
 * of the calls that ran, then the signals, then the answers of the calls
 * they broke off, so that R's own masks and handler flags decide, in each
 * thread, between restarting the call and EINTR; a call no signal ends
 * goes home again, as the kernel would have restarted it.
 */
static void
serve_settle(struct guest *g)
{
	Osm__SesSignal		 sig = OSM__SES_SIGNAL__INIT;
	struct guest_call	*broken[64], *c;
	uint64_t		 seqs[64], blocked, seq;
	uint8_t			*b;
	size_t			 n = 0, j, l;
	int			 woken[64], i, k, nheld;

	/*
	 * A signal sent to one thread that ends R goes before any result:
	 * the kernel takes it before that thread runs on (raise, or
	 * pthread_kill of itself, whose call this may be), where given after
	 * the call's result the thread could go on to end R another way.
	 */
	for (i = k = 0; i < g->nheld; i++) {
		if (!guest_signal_ends(g, &g->held[i])) {
			g->held[k++] = g->held[i];
			continue;
		}
		sig.signo = g->held[i].signo;
		guest_signal_deliver(g, &sig, g->held[i].tid);
	}
	g->nheld = k;
	for (j = 0; j < g->ncalls; ) {
		c = &g->calls[j];
		if (c->reply == NULL) {
			j++;
			continue;
		}
		if (serve_interrupted(c->reply, c->reply_len, &seq) == 1 &&
		    n < nitems(broken)) {
			broken[n++] = c;
			j++;
			continue;
		}
		/* ran: its result first (serve_apply drops it from calls) */
		b = c->reply;
		l = c->reply_len;
		c->reply = NULL;
		serve_apply(g, c->seq, b, l, -1);
		free(b);
		j = 0;
		n = 0;
	}
	/* the signals, each to a thread that takes it */
	nheld = g->nheld;
	for (i = 0; i < nheld; i++) {
		if (g->held[i].tid != 0 || g->held[i].signo == SIGKILL ||
		    g->held[i].signo == SIGSTOP)
			continue;
		g->held[i].tid = serve_target(g, broken, n, &g->held[i]);
	}
	for (j = 0; j < n; j++) {
		/* none held: broken off for a checkpoint, say; R's own say */
		woken[j] = g->nheld == 0 ? -1 : 0;
		for (i = 0; i < g->nheld; i++)
			woken[j] |= g->held[i].tid != -1 &&
			    guest_signal_wakes(g, broken[j], &g->held[i]);
		/*
		 * A wait with a mask of its own, ended by a signal the
		 * thread's mask blocks: only R's kernel can take the signal
		 * under the wait's mask, and only at home, where the wait
		 * starts again with it (the signal pending, going home with
		 * R).
		 */
		blocked = 0;
		proc_status_mask(broken[j]->tid, "SigBlk", &blocked);
		if (woken[j] == 1 && broken[j]->has_mask &&
		    broken[j]->mask != blocked) {
			for (k = 0; k < g->nheld; k++)
				if (g->held[k].tid == -1)
					g->held[k].tid = 0;
			guest_move_want_home(g, "a signal for a wait with a "
			    "signal mask of its own");
			return;
		}
	}
	/* deliver all but those with no thread to take them now */
	k = 0;
	for (i = 0; i < g->nheld; i++) {
		if (g->held[i].tid == -1) {
			g->held[k].signo = g->held[i].signo;
			g->held[k++].tid = 0;
			continue;
		}
		sig.signo = g->held[i].signo;
		guest_signal_deliver(g, &sig, g->held[i].tid);
	}
	g->nheld = k;
	/* the broken-off calls' answers: their pointers move as calls drop */
	for (j = 0; j < n; j++)
		seqs[j] = broken[j]->seq;
	for (j = 0; j < n; j++) {
		if ((c = guest_signal_call(g, seqs[j])) == NULL)
			continue;
		b = c->reply;
		l = c->reply_len;
		c->reply = NULL;
		serve_apply(g, seqs[j], b, l, woken[j]);
		free(b);
	}
	guest_ckpt(g, 0);
}

/*
 * The home's answer to one of R's calls (SES_REPLY). While signals are
 * held for calls the home was asked to stop, the answers wait until every
 * one of those is in.
 */
void
guest_serve_reply(struct guest *g, const uint8_t *body, size_t len)
{
	struct guest_call	*c;
	uint64_t		 seq;
	size_t			 i;
	char			*cause = NULL;
	struct remote_event	 ev;

	/* a write behind, or an offset owed: no call of R's waits for it */
	switch (remote_reply_behind(g->remote, body, len, &cause)) {
	case -1:
		guest_ses_fail(g, cause);
	case 1:
		return;
	}
	if (serve_interrupted(body, len, &seq) == -1 ||
	    (c = guest_signal_call(g, seq)) == NULL) {
		/* remote_reply says what is wrong with it */
		if (remote_reply(g->remote, body, len, -1, &ev, &cause) == -1)
			guest_ses_fail(g, cause);
		guest_ses_fail(g, "a reply to no call at home");
	}
	c->reply = xmalloc(len > 0 ? len : 1);
	memcpy(c->reply, body, len);
	c->reply_len = len;
	c->cancelled = 0;
	if (g->nheld > 0)
		for (i = 0; i < g->ncalls; i++)
			if (g->calls[i].cancelled && g->calls[i].reply == NULL)
				return;
	serve_settle(g);
}
