/*
 * Serving the calls R forwards home, in P while it is away. A call comes
 * as a RemoteCall, is checked (libremote/home.c: a guest must not make P
 * do what a forwarded call may not), laid out in the shared area of the
 * husk's lane of the thread that made it and run by the husk's stub
 * there, in that thread's own context (a read, write or seek of a
 * regular file we make ourselves, on a duplicate of P's descriptor:
 * deputy-io.c); its result goes back as a
 * RemoteReply, after the signals P got meanwhile. P's ptrace stops while
 * away are the calls' returns and the signals sent to it at home.
 *
 * One call runs in a lane at a time, and the lanes of different threads
 * run theirs at once. What the copy sends meanwhile waits in its turn
 * (deputy_serve_enqueue; deputy-away.c takes them in order, by
 * serve_class): a call until its own lane is free and the messages before
 * it of the same thread have gone; a call written behind (a write R has
 * had its answer to, libremote's fileio.c), a question about a descriptor
 * and a read ahead, which we make ourselves without a lane, as soon as
 * nothing but calls waiting for their lanes is before them. Another
 * thread's call running in its lane (a read of a pipe) holds none of
 * them up, as at home: that thread waits in it, the two are at once. And
 * nothing goes past one of them: what R was told is done is done before
 * anything R does after. Anything else waits until no call runs at all;
 * nothing starts while P makes a call written behind (under a file size
 * limit of P's, in the lane of the thread that wrote). A call written
 * behind is never broken off: a restart code makes it run again.
 *
 * Each function here returns -1 with *cause when the copy must be given
 * up (the session broke, the guest sent what it may not): the caller
 * loses it (deputy-away.c).
 */
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "proto/migrate.pb-c.h"
#include "proto/remote.pb-c.h"

#define SERVE_ERESTARTSYS	512	/* the kernel's: restart the call */

/* Lane l's call is over, answered or moot. */
static void
serve_lane_done(struct husk_lane *l)
{
	home_free(l->call);
	l->call = NULL;
	l->nudged = 0;
	free(l->held);
	l->held = NULL;
}

/* Every call at home is over: moot, the process's state comes whole. */
void
deputy_serve_done(struct deputy *d)
{
	size_t	i;

	for (i = 0; i < d->husk.nlanes; i++)
		serve_lane_done(&d->husk.lanes[i]);
}

/*
 * Lane l's reply goes; after P's identity if the call was about it, so
 * that the guest answers the next such call from what it is now.
 */
static int
serve_send_held(struct deputy *d, struct husk_lane *l, char **cause)
{
	int	rc;

	if (home_ident(l->call) && deputy_ident_send(d, cause) == -1) {
		serve_lane_done(l);
		return -1;
	}
	rc = session_send(&d->ses, OSM__SES_KIND__SES_REPLY, l->held,
	    l->held_len, cause);
	serve_lane_done(l);
	return rc;
}

/* A message of the copy's that waits its turn. */
void
deputy_serve_enqueue(struct deputy *d, uint16_t kind, const uint8_t *body,
    size_t len)
{
	struct deputy_msg	*m;

	d->queue = xreallocarray(d->queue, d->nqueue + 1, sizeof *d->queue);
	m = &d->queue[d->nqueue++];
	m->kind = kind;
	m->body = xmalloc(len > 0 ? len : 1);
	memcpy(m->body, body, len);
	m->len = len;
}

enum serve_class {
	SERVE_CALL,		/* a call R's thread waits for */
	SERVE_BEHIND,		/* a call written behind */
	SERVE_FILE,		/* about a file, made by the deputy */
	SERVE_OTHER,
};

/*
 * What a message of the copy's is, for its turn; a call's thread (0: the
 * lead; -1 malformed, refused when it runs) in *tid, and in *lane whether
 * it needs that thread's lane (one written behind that P must make).
 */
static enum serve_class
serve_class(struct deputy *d, uint16_t kind, const uint8_t *body,
    size_t len, pid_t *tid, int *lane)
{
	Osm__RemoteCall		*c;
	enum serve_class	 class = SERVE_CALL;
	int			 fd;

	*tid = 0;
	*lane = 0;
	switch (kind) {
	case OSM__SES_KIND__SES_FD_ASK:
	case OSM__SES_KIND__SES_READ:
	case OSM__SES_KIND__SES_FILE_ASK:
		return SERVE_FILE;
	case OSM__SES_KIND__SES_CALL:
		break;
	default:
		return SERVE_OTHER;
	}
	*lane = 1;
	if ((c = osm__remote_call__unpack(NULL, len, body)) == NULL) {
		*tid = -1;
		return SERVE_CALL;
	}
	*tid = c->has_tid ? (pid_t)c->tid : 0;
	if (c->behind) {
		class = SERVE_BEHIND;
		*lane = !deputy_io_self(d, c, &fd);
	}
	osm__remote_call__free_unpacked(c, NULL);
	return class;
}

/* Does P make a call written behind now (nothing starts meanwhile)? */
static int
serve_behind_running(struct deputy *d)
{
	size_t	i;

	for (i = 0; i < d->husk.nlanes; i++)
		if (d->husk.lanes[i].call != NULL &&
		    d->husk.lanes[i].call->behind)
			return 1;
	return 0;
}

/* The lane a call of thread tid runs in: a thread gone's behind, the lead's. */
static struct husk_lane *
serve_lane(struct deputy *d, pid_t tid, enum serve_class class)
{
	struct husk_lane	*l;

	if ((l = husk_lane(&d->husk, tid)) == NULL && class == SERVE_BEHIND)
		l = husk_lane(&d->husk, 0);
	return l;
}

/* May a message of this class run now, nothing before it in the way? */
static int
serve_ready(struct deputy *d, enum serve_class class, pid_t tid, int lane)
{
	struct husk_lane	*l;

	if (serve_behind_running(d))
		return 0;
	if (class == SERVE_OTHER)
		return !husk_busy(&d->husk);
	if (!lane)
		return 1;
	return (l = serve_lane(d, tid, class)) == NULL || l->call == NULL;
}

/* May this message of the copy's run now, with nothing before it waiting? */
int
deputy_serve_may(struct deputy *d, uint16_t kind, const uint8_t *body,
    size_t len)
{
	enum serve_class	class;
	pid_t			tid;
	int			lane;

	class = serve_class(d, kind, body, len, &tid, &lane);
	return serve_ready(d, class, tid, lane);
}

/*
 * The next message that may run, in its turn: the first that may of those
 * up to the first that is not a call of R's thread waiting for its lane,
 * never a call past one of its thread's. 1, the caller frees it.
 */
int
deputy_serve_dequeue(struct deputy *d, uint16_t *kind, uint8_t **body,
    size_t *len)
{
	enum serve_class	 class;
	pid_t			 busy[64], tid;
	size_t			 nbusy = 0, i, k;
	int			 lane;

	for (i = 0; i < d->nqueue; i++) {
		class = serve_class(d, d->queue[i].kind, d->queue[i].body,
		    d->queue[i].len, &tid, &lane);
		if (class == SERVE_OTHER && i > 0)
			return 0;
		for (k = 0; k < nbusy && busy[k] != tid; k++)
			;
		if ((k == nbusy || !lane) && serve_ready(d, class, tid, lane))
			break;
		if (class != SERVE_CALL)
			return 0;	/* nothing goes past it */
		if (k == nbusy && nbusy < nitems(busy))
			busy[nbusy++] = tid;
		if (nbusy == nitems(busy))
			return 0;
	}
	if (i == d->nqueue)
		return 0;
	*kind = d->queue[i].kind;
	*body = d->queue[i].body;
	*len = d->queue[i].len;
	memmove(&d->queue[i], &d->queue[i + 1], (--d->nqueue - i) *
	    sizeof *d->queue);
	return 1;
}

void
deputy_serve_clear(struct deputy *d)
{
	size_t	i;

	for (i = 0; i < d->nqueue; i++)
		free(d->queue[i].body);
	free(d->queue);
	d->queue = NULL;
	d->nqueue = 0;
	deputy_io_close(d);
}

/* Is this RemoteCall written behind (R has had its answer)? */
int
deputy_serve_behind(const uint8_t *body, size_t len)
{
	Osm__RemoteCall	*c;
	int		 behind;

	if ((c = osm__remote_call__unpack(NULL, len, body)) == NULL)
		return 0;
	behind = c->behind;
	osm__remote_call__free_unpacked(c, NULL);
	return behind;
}

/* Replies held back for signals go once no more are pending for P. */
int
deputy_serve_flush(struct deputy *d, char **cause)
{
	struct husk_lane	*l;
	size_t			 i;

	for (i = 0; i < d->husk.nlanes; i++) {
		l = &d->husk.lanes[i];
		if (l->held == NULL || deputy_signal_pending(d, l->tid))
			continue;
		if (serve_send_held(d, l, cause) == -1)
			return -1;
	}
	return 0;
}

/* Does P (pid) hold descriptor fd? Its file's inode in *ino, if so. */
static int
serve_holds(pid_t pid, long fd, uint64_t *ino)
{
	char		path[64];
	struct stat	st;

	snprintf(path, sizeof path, "/proc/%d/fd/%ld", (int)pid, fd);
	*ino = 0;
	if (stat(path, &st) == 0) {
		*ino = st.st_ino;
		return 1;
	}
	/* held, for all we know, unless /proc says there is none */
	return errno != ENOENT;
}

/*
 * The forwarded call returned in lane l: in a trap (its stub stopped, to
 * be started again), or while we waited (waiting: the stub already waits
 * for the next call). Its reply waits while signals are pending for P: R
 * must have them before it sees the call's end, as it would have at home
 * (a kill of itself returns after the handler ran; an interrupted call
 * restarts or fails by R's handler flags). A call that ended while we
 * waited had none: one would have stopped the husk before its end, and
 * we would have stopped waiting.
 */
static int
serve_returned(struct deputy *d, struct husk_lane *l, long rv, int waiting,
    char **cause)
{
	uint64_t	 base;
	size_t		 len;
	uint8_t		*mem = husk_scratch(l, &base, &len);
	int		 pending = 0;

	log_debug("process %d, thread %d: %s = %ld%s", (int)d->pid,
	    (int)l->tid, l->call->name, rv, l->call->behind ? " (behind)" : "");
	/*
	 * R has had its answer: the call must happen, whatever broke it off;
	 * a batch of writes (a pipe's) goes on with the next of them.
	 */
	for (;;) {
		if (!l->call->behind || rv > -SERVE_ERESTARTSYS || rv < -516) {
			if (!home_pieces_next(l->call, serve_holds, &rv))
				break;
		}
		if (!waiting && husk_run_lane(&d->husk, l, cause) == -1)
			return -1;
		if ((waiting = husk_call(l, l->call->nr, l->call->args, 1,
		    &rv)) == 0)
			return 0;
	}
	/*
	 * Broken off for a checkpoint, the calls Linux does not restart
	 * after a stop (epoll_wait, a socket read with a timeout) say EINTR:
	 * R makes them again, as the kernel restarts the others. Not if a
	 * signal for R came meanwhile: the EINTR may be its.
	 */
	if (l->nudged && rv == -EINTR && home_again(l->call))
		rv = -SERVE_ERESTARTSYS;
	l->call->fs_free = deputy_io_room(d, l->call);
	if (home_reply(l->call, rv, mem, home_readback(l->call, rv), &l->held,
	    &l->held_len, cause) == -1)
		return -1;
	if ((home_want_fd(l->call) || home_fd_info(l->call)) && rv >= 0 &&
	    rv <= INT32_MAX && deputy_io_opened(d, home_want_fd(l->call) ? 0 :
	    l->call->seq, (int)rv, cause) == -1)
		return -1;
	if (!waiting) {
		/* Before P runs on: once it does, it takes its signals. */
		pending = deputy_signal_pending(d, l->tid);
		if (husk_run_lane(&d->husk, l, cause) == -1)
			return -1;
	}
	return pending ? 0 : serve_send_held(d, l, cause);
}

/*
 * Run a forwarded call inside P, in the lane of the thread that made it
 * away: the stub runs it there, in that thread's context.
 */
int
deputy_serve_call(struct deputy *d, const uint8_t *body, size_t len,
    char **cause)
{
	struct home_call	*hc;
	struct husk_lane	*l;
	uint64_t		 base;
	size_t			 room;
	uint8_t			*mem;
	char			*why = NULL;
	long			 rv;
	int			 cancel;

	if ((hc = home_check(body, len, d->pid, &why)) == NULL) {
		log_warnx("process %d: refused a call: %s", (int)d->pid, why);
		free(why);
		xasprintf(cause, "it sent a call that is not forwardable");
		return -1;
	}
	/* a write behind made here needs no lane (its thread may be gone) */
	switch (hc->behind ? deputy_io_write(d, hc, cause) : 0) {
	case -1:
		home_free(hc);
		return -1;
	case 1:
		home_free(hc);	/* made here, P not woken */
		d->calls.deputy++;
		return 0;
	}
	if ((l = serve_lane(d, hc->tid, hc->behind ? SERVE_BEHIND :
	    SERVE_CALL)) == NULL) {
		xasprintf(cause, "it sent a call of thread %d, which the "
		    "process has not", (int)hc->tid);
		home_free(hc);
		return -1;
	}
	if (l->call != NULL) {
		xasprintf(cause, "a call of thread %d came while one was "
		    "running", (int)l->tid);
		home_free(hc);
		return -1;
	}
	l->call = hc;
	log_debug("process %d, thread %d: %s, %zu bytes", (int)d->pid,
	    (int)l->tid, hc->name, hc->span);
	husk_scratch(l, &base, &room);
	if (hc->span > room) {
		/* only this lane stops: the others go on with their calls */
		if (l->running && mig_thread_interrupt(d->task, l->tid,
		    cause) == -1)
			return -1;
		l->running = 0;
		if (husk_grow(&d->husk, l, (hc->span + 0xffff) & ~0xffffUL,
		    cause) == -1 || husk_run_lane(&d->husk, l, cause) == -1)
			return -1;
	}
	if (deputy_signal_stolen(d, cause) == -1)
		return -1;
	mem = husk_scratch(l, &base, &room);
	if (home_layout(hc, base, room, cause) == -1)
		return -1;
	memcpy(mem, hc->image, hc->image_len);
	home_pieces_start(hc);		/* a batch: its first write */
	cancel = d->cancel_seq == hc->seq;
	if (cancel)
		d->cancel_seq = 0;
	/* a read, write or seek of a regular file: made here, P not woken */
	if (deputy_io_call(d, hc, mem, base, room, &rv) == 1) {
		log_debug("process %d: %s made by the deputy", (int)d->pid,
		    hc->name);
		d->calls.deputy++;
		return serve_returned(d, l, rv, 1, cause);
	}
	if (cancel && !hc->behind) {
		/* a signal for R came while it waited its turn: break it off */
		husk_call(l, hc->nr, hc->args, 0, NULL);
		ptrace(PTRACE_INTERRUPT, l->tid, 0, 0);
		return 0;
	}
	/* most calls end at once: their reply goes without a ptrace stop */
	if (husk_call(l, hc->nr, hc->args, 1, &rv) == 1) {
		d->calls.waited++;
		return serve_returned(d, l, rv, 1, cause);
	}
	return 0;
}

/* The lane running call seq, or NULL. */
static struct husk_lane *
serve_lane_of(struct deputy *d, uint64_t seq)
{
	size_t	i;

	for (i = 0; i < d->husk.nlanes; i++)
		if (d->husk.lanes[i].call != NULL &&
		    d->husk.lanes[i].call->seq == seq)
			return &d->husk.lanes[i];
	return NULL;
}

/*
 * A signal for R came while the call was on its way: stop the call if it
 * still runs (its reply then says it was interrupted, or what it did if it
 * ended first), or once it runs if it still waits its turn. A call
 * already answered is nothing to stop.
 */
int
deputy_serve_cancel(struct deputy *d, const uint8_t *body, size_t len,
    char **cause)
{
	Osm__SesCancel		*c;
	struct husk_lane	*l;

	if ((c = osm__ses_cancel__unpack(NULL, len, body)) == NULL) {
		xasprintf(cause, "malformed cancel");
		return -1;
	}
	if ((l = serve_lane_of(d, c->seq)) != NULL) {
		if (l->held == NULL && !l->call->behind)
			ptrace(PTRACE_INTERRUPT, l->tid, 0, 0);
	} else
		d->cancel_seq = c->seq;	/* if it is still to come */
	osm__ses_cancel__free_unpacked(c, NULL);
	return 0;
}

/* A ptrace stop of P's thread tid while it is away. */
int
deputy_serve_stop(struct deputy *d, pid_t tid, int status, char **cause)
{
	struct husk_lane	*l;
	siginfo_t		 si;
	int			 sig = WSTOPSIG(status);
	long			 rv;

	if (!WIFSTOPPED(status))
		return 0;
	if ((l = husk_lane(&d->husk, tid)) == NULL) {
		/* not a lane's: let it be (it is not ours to serve) */
		ptrace(PTRACE_CONT, tid, 0, 0);
		return 0;
	}
	if ((status >> 16) == PTRACE_EVENT_STOP && sig != SIGTRAP) {
		/* a group stop, the one that mirrors R's: stay stopped */
		ptrace(PTRACE_LISTEN, tid, 0, 0);
		return 0;
	}
	switch (husk_stopped(&d->husk, l, status, &rv, &si)) {
	case HUSK_RETURNED:
		d->calls.trapped++;
		return serve_returned(d, l, rv, 0, cause);
	case HUSK_SIGNAL:
		if (sig == d->ending || sig == d->stop_sent) {
			/* ours: the one that ends P, or stops it */
			d->stop_sent = 0;
			break;
		}
		if (deputy_hold_pass(d, sig) == 0) {
			sig = 0;	/* a checkpoint's, not R's */
			break;
		}
		/* a signal for the process: R's, not the husk's */
		if (deputy_signal_relay(d, l, &si, cause) == -1 ||
		    deputy_serve_flush(d, cause) == -1)
			return -1;
		sig = 0;
		break;
	case HUSK_OTHER:
		sig = 0;
		break;
	}
	return husk_continue(&d->husk, l, sig, cause);
}

/*
 * Before the process leaves: the calls running at home are stopped (but
 * those written behind, which must happen), and their outcomes — done,
 * or not begun — told to R first, so that nothing done at home is lost
 * and nothing is done twice.
 */
int
deputy_serve_settle(struct deputy *d, char **cause)
{
	struct husk_lane	*l;
	size_t			 i;

	for (i = 0; i < d->husk.nlanes; i++) {
		l = &d->husk.lanes[i];
		if (l->busy && (l->call == NULL || !l->call->behind) &&
		    ptrace(PTRACE_INTERRUPT, l->tid, 0, 0) == -1) {
			xasprintf(cause, "PTRACE_INTERRUPT: %s",
			    strerror(errno));
			return -1;
		}
	}
	while (husk_busy(&d->husk)) {
		if (deputy_serve_wait(d, cause) == -1)
			return -1;
	}
	return 0;
}

/* Wait for the next stop of a thread of P's while calls run, and take it. */
int
deputy_serve_wait(struct deputy *d, char **cause)
{
	pid_t	r;
	int	status;

	while ((r = waitpid(-1, &status, __WALL)) == -1 && errno == EINTR)
		;
	if (r == -1 || (r == d->pid && !WIFSTOPPED(status))) {
		xasprintf(cause, "the process ended");
		return -1;
	}
	return deputy_serve_stop(d, r, status, cause);
}
