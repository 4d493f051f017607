/*
 * Serving the calls R forwards home, in P while it is away. A call comes
 * as a RemoteCall, is checked (libremote/home.c: a guest must not make P
 * do what a forwarded call may not), laid out in the husk's shared area
 * and run by the husk's stub in P's own context; its result goes back as
 * a RemoteReply, after the signals P got meanwhile. P's ptrace stops while
 * away are the calls' returns and the signals sent to it at home.
 *
 * One call runs in P at a time; what the copy sends meanwhile waits in
 * its turn (deputy_serve_enqueue; deputy-away.c takes them in order). A
 * call written behind (a write R has had its answer to, libremote's
 * fileio.c) is never broken off: a restart code makes it run again.
 *
 * Each function here returns -1 with *cause when the copy must be given
 * up (the session broke, the guest sent what it may not): the caller
 * loses it (deputy-away.c).
 */
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "proto/migrate.pb-c.h"
#include "proto/remote.pb-c.h"

#define SERVE_ERESTARTSYS	512	/* the kernel's: restart the call */

/* The call at home is over, answered or moot. */
void
deputy_serve_done(struct deputy *d)
{
	home_free(d->call);
	d->call = NULL;
	d->nudged = 0;
	free(d->held);
	d->held = NULL;
}

/*
 * The reply goes; after P's identity if the call was about it, so that
 * the guest answers the next such call from what it is now.
 */
static int
serve_send_held(struct deputy *d, char **cause)
{
	int	rc;

	if (home_ident(d->call) && deputy_ident_send(d, cause) == -1) {
		deputy_serve_done(d);
		return -1;
	}
	rc = session_send(&d->ses, OSM__SES_KIND__SES_REPLY, d->held,
	    d->held_len, cause);
	deputy_serve_done(d);
	return rc;
}

/* A message of the copy's that waits for the call running now. */
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

/* The next message in its turn, once no call runs: 1, the caller frees. */
int
deputy_serve_dequeue(struct deputy *d, uint16_t *kind, uint8_t **body,
    size_t *len)
{
	if (d->call != NULL || d->nqueue == 0)
		return 0;
	*kind = d->queue[0].kind;
	*body = d->queue[0].body;
	*len = d->queue[0].len;
	memmove(&d->queue[0], &d->queue[1], --d->nqueue * sizeof *d->queue);
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

/* A reply held back for signals goes once no more are pending for P. */
int
deputy_serve_flush(struct deputy *d, char **cause)
{
	if (d->held == NULL || deputy_signal_pending(d->pid))
		return 0;
	return serve_send_held(d, cause);
}

/*
 * The forwarded call returned in P. Its reply waits while signals are
 * pending for P: R must have them before it sees the call's end, as it
 * would have at home (a kill of itself returns after the handler ran; an
 * interrupted call restarts or fails by R's handler flags).
 */
static int
serve_returned(struct deputy *d, long rv, char **cause)
{
	uint64_t	 base;
	size_t		 len;
	uint8_t		*mem = husk_scratch(&d->husk, &base, &len);
	int		 pending;

	log_debug("process %d: %s = %ld%s", (int)d->pid, d->call->name, rv,
	    d->call->behind ? " (behind)" : "");
	/* R has had its answer: the call must happen, whatever broke it off */
	if (d->call->behind && rv <= -SERVE_ERESTARTSYS && rv >= -516) {
		if (husk_run(&d->husk, cause) == -1)
			return -1;
		husk_call(&d->husk, d->call->nr, d->call->args);
		return 0;
	}
	/*
	 * Broken off for a checkpoint, the calls Linux does not restart
	 * after a stop (epoll_wait, a socket read with a timeout) say EINTR:
	 * R makes them again, as the kernel restarts the others. Not if a
	 * signal for R came meanwhile: the EINTR may be its.
	 */
	if (d->nudged && rv == -EINTR && home_again(d->call))
		rv = -SERVE_ERESTARTSYS;
	if (home_reply(d->call, rv, mem, home_readback(d->call, rv), &d->held,
	    &d->held_len, cause) == -1)
		return -1;
	if (home_want_fd(d->call) && rv >= 0 && rv <= INT32_MAX &&
	    deputy_io_opened(d, (int)rv, cause) == -1)
		return -1;
	/* Before P runs on: once it does, it takes its signals at once. */
	pending = deputy_signal_pending(d->pid);
	if (husk_run(&d->husk, cause) == -1)
		return -1;
	return pending ? 0 : serve_send_held(d, cause);
}

/* Run a forwarded call inside P: the stub runs it, in P's context. */
int
deputy_serve_call(struct deputy *d, const uint8_t *body, size_t len,
    char **cause)
{
	uint64_t	 base;
	size_t		 room;
	uint8_t		*mem;
	char		*why = NULL;

	if (d->call != NULL) {
		xasprintf(cause, "a call came while one was running");
		return -1;
	}
	if ((d->call = home_check(body, len, d->pid, &why)) == NULL) {
		log_warnx("process %d: refused a call: %s", (int)d->pid, why);
		free(why);
		xasprintf(cause, "it sent a call that is not forwardable");
		return -1;
	}
	log_debug("process %d: %s, %zu bytes", (int)d->pid, d->call->name,
	    d->call->span);
	switch (deputy_io_write(d, d->call, cause)) {
	case -1:
		return -1;
	case 1:
		deputy_serve_done(d);	/* made here, P not woken */
		return 0;
	}
	husk_scratch(&d->husk, &base, &room);
	if (d->call->span > room && (husk_hold(&d->husk, cause) == -1 ||
	    husk_grow(&d->husk, (d->call->span + 0xffff) & ~0xffffUL,
	    cause) == -1 || husk_run(&d->husk, cause) == -1))
		return -1;
	if (deputy_signal_stolen(d, cause) == -1)
		return -1;
	mem = husk_scratch(&d->husk, &base, &room);
	if (home_layout(d->call, base, room, cause) == -1)
		return -1;
	memcpy(mem, d->call->image, d->call->image_len);
	husk_call(&d->husk, d->call->nr, d->call->args);
	/* a signal for R came while it waited its turn: break it off now */
	if (d->cancel_seq == d->call->seq && !d->call->behind)
		ptrace(PTRACE_INTERRUPT, d->pid, 0, 0);
	d->cancel_seq = 0;
	return 0;
}

/*
 * A signal for R came while the call was on its way: stop the call if it
 * still runs (its reply then says it was interrupted, or what it did if it
 * ended first). A call already answered is nothing to stop.
 */
int
deputy_serve_cancel(struct deputy *d, const uint8_t *body, size_t len,
    char **cause)
{
	Osm__SesCancel	*c;

	if ((c = osm__ses_cancel__unpack(NULL, len, body)) == NULL) {
		xasprintf(cause, "malformed cancel");
		return -1;
	}
	if (d->call != NULL && d->call->seq == c->seq && d->held == NULL &&
	    !d->call->behind)
		ptrace(PTRACE_INTERRUPT, d->pid, 0, 0);
	else if (d->call == NULL || d->call->seq != c->seq)
		d->cancel_seq = c->seq;	/* if it is still to come */
	osm__ses_cancel__free_unpacked(c, NULL);
	return 0;
}

/* A ptrace stop of P while it is away. */
int
deputy_serve_stop(struct deputy *d, int status, char **cause)
{
	siginfo_t	 si;
	int		 sig = WSTOPSIG(status);
	long		 rv;

	if (!WIFSTOPPED(status))
		return 0;
	if ((status >> 16) == PTRACE_EVENT_STOP && sig != SIGTRAP) {
		/* a group stop, the one that mirrors R's: stay stopped */
		ptrace(PTRACE_LISTEN, d->pid, 0, 0);
		return 0;
	}
	switch (husk_stopped(&d->husk, status, &rv, &si)) {
	case HUSK_RETURNED:
		return serve_returned(d, rv, cause);
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
		if (deputy_signal_relay(d, &si, cause) == -1 ||
		    deputy_serve_flush(d, cause) == -1)
			return -1;
		sig = 0;
		break;
	case HUSK_OTHER:
		sig = 0;
		break;
	}
	return husk_continue(&d->husk, sig, cause);
}

/*
 * Before the process leaves: the call running at home is stopped, and its
 * outcome — done, or not begun — told to R first, so that nothing it did
 * at home is lost and nothing is done twice.
 */
int
deputy_serve_settle(struct deputy *d, char **cause)
{
	if (d->husk.busy && (d->call == NULL || !d->call->behind) &&
	    ptrace(PTRACE_INTERRUPT, d->pid, 0, 0) == -1) {
		xasprintf(cause, "PTRACE_INTERRUPT: %s", strerror(errno));
		return -1;
	}
	while (d->call != NULL) {
		if (deputy_serve_wait(d, cause) == -1)
			return -1;
	}
	return 0;
}

/* Wait for P's next stop while it runs a call, and take it. */
int
deputy_serve_wait(struct deputy *d, char **cause)
{
	int	status;

	while (waitpid(d->pid, &status, __WALL) == -1 && errno == EINTR)
		;
	if (!WIFSTOPPED(status)) {
		xasprintf(cause, "the process ended");
		return -1;
	}
	return deputy_serve_stop(d, status, cause);
}
