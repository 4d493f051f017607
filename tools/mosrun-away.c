/*
 * The deputy while its process is away: moving P out (a dump into a
 * session with the target's guest agent), holding P as a husk that runs
 * the calls forwarded from the running copy R, passing on the signals sent
 * to P, bringing the process home (a restore into P itself), and ending P
 * as R ended. See docs/REMOTE.md.
 *
 * While away P sits in an injected pause() with every signal unblocked, so
 * that any signal sent to it stops it for us; a forwarded call is injected
 * in its place, and pause() again after it.
 */
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include <linux/ptrace.h>

#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "libremote/remote.h"
#include "migrate/migrate.h"
#include "mosrun.h"
#include "proto/ctl.pb-c.h"
#include "proto/migrate.pb-c.h"

#define AWAY_TIMEOUT		60	/* seconds for a move to finish */
#define AWAY_SILENCE		15.0	/* no word from the guest: lost */
#define AWAY_SCRATCH_MIN	(256UL << 10)
#define AWAY_ERESTARTSYS	512	/* the kernel's: restart the call */

static int	away_settle_call(struct deputy *, char **);

static int
away_send(struct deputy *d, uint16_t kind, const ProtobufCMessage *msg,
    char **cause)
{
	uint8_t	*buf;
	size_t	 len;
	int	 rc;

	len = msg == NULL ? 0 : protobuf_c_message_get_packed_size(msg);
	buf = xmalloc(len);
	if (msg != NULL)
		protobuf_c_message_pack(msg, buf);
	rc = session_send(&d->ses, kind, buf, len, cause);
	free(buf);
	return rc;
}

/* Are signals waiting for P? A peek at its queues, private and shared. */
static int
away_pending(pid_t pid)
{
	struct ptrace_peeksiginfo_args	a = { .off = 0, .nr = 1 };
	siginfo_t			si;

	if (ptrace(PTRACE_PEEKSIGINFO, pid, &a, &si) > 0)
		return 1;
	a.flags = PTRACE_PEEKSIGINFO_SHARED;
	return ptrace(PTRACE_PEEKSIGINFO, pid, &a, &si) > 0;
}

/*
 * Stop P where it is, at home, as a ptrace interrupt stop. Signals that
 * come first are delivered: at home they are P's own business.
 */
int
away_stop_home(struct deputy *d, char **cause)
{
	int	status;

	if (ptrace(PTRACE_INTERRUPT, d->pid, 0, 0) == -1) {
		xasprintf(cause, "PTRACE_INTERRUPT: %s", strerror(errno));
		return -1;
	}
	for (;;) {
		while (waitpid(d->pid, &status, __WALL) == -1 && errno == EINTR)
			;
		if (!WIFSTOPPED(status)) {
			xasprintf(cause, "the process ended");
			return -1;
		}
		if ((status >> 16) == PTRACE_EVENT_STOP &&
		    WSTOPSIG(status) == SIGTRAP)
			return 0;
		ptrace(PTRACE_CONT, d->pid, 0, (status >> 16) == 0 ?
		    WSTOPSIG(status) : 0);
	}
}

/* Let P run natively again, still traced by us. */
void
away_resume(struct deputy *d)
{
	char	*why = NULL;

	/* options first: they can be set only while P is stopped */
	if (deputy_options(d, &why) == -1 || mig_resume(d->task, &why) == -1) {
		log_warnx("process %d: resume: %s", (int)d->pid, why);
		free(why);
	}
	d->task = NULL;
}

static int
away_dump_fn(int fd, void *arg, char **cause)
{
	return mig_dump(arg, fd, MIG_CONTEXT, NULL, cause);
}

static int
away_restore_fn(int fd, void *arg, char **cause)
{
	struct mig_restore_opts	opts = { .flags = MIG_CONTEXT };

	return mig_restore(arg, fd, &opts, NULL, cause);
}

/* --- the husk ------------------------------------------------------- */

/*
 * Make P a husk: its memory released, the stub serving forwarded calls in
 * place, every signal unblocked, killed with the deputy should the deputy
 * die. The stub then waits for calls.
 */
static int
away_husk(struct deputy *d, char **cause)
{
	/*
	 * A forwarded call wakes P, and P's trap wakes us: on one CPU each
	 * wakeup is cheap, across two in this kind of VM it costs tens of
	 * microseconds (docs/PERFORMANCE.md); so does each call we inject to
	 * make the husk. P's own affinity comes back with it.
	 */
	mig_pin(d->task, &d->pin);
	if (husk_make(d->task, AWAY_SCRATCH_MIN, &d->husk, cause) == -1)
		return -1;
	if (husk_unblock(&d->husk, cause) == -1 ||
	    deputy_options(d, cause) == -1 ||
	    husk_run(&d->husk, cause) == -1) {
		husk_free(&d->husk);
		return -1;
	}
	return 0;
}

/* --- moving ----------------------------------------------------------- */

static int
away_open_session(struct deputy *d, uint32_t node, char **cause)
{
	Osm__CtlRequest	 req = OSM__CTL_REQUEST__INIT;
	Osm__CtlReply	*r;
	struct timeval	 tv = { .tv_sec = AWAY_TIMEOUT };
	int		 fd;

	if (d->ctl_fd == -1) {
		xasprintf(cause, "mosd is not reachable");
		return -1;
	}
	req.type = OSM__CTL_TYPE__CTL_CONNECT;
	req.has_pid = req.has_node = 1;
	req.pid = d->pid;
	req.node = node;
	if ((r = ctl_request(d->ctl_fd, &req, &fd, cause)) == NULL)
		return -1;
	if (!r->ok || fd == -1 || !r->has_session_key ||
	    r->session_key.len != SESSION_KEY_LEN) {
		xasprintf(cause, "%s", r->ok ? "mosd sent no session" :
		    r->error);
		ctl_reply_free(r);
		if (fd != -1)
			close(fd);
		return -1;
	}
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
	session_init(&d->ses, fd, r->session_key.data, RMT_MSG_MAX);
	explicit_bzero(r->session_key.data, r->session_key.len);
	ctl_reply_free(r);
	d->ses_open = 1;
	return 0;
}

static void
away_close_session(struct deputy *d)
{
	if (!d->ses_open)
		return;
	ev_io_stop(d->loop, &d->ses_ev);
	ev_timer_stop(d->loop, &d->ses_timer);
	close(d->ses.fd);
	session_free(&d->ses);
	d->ses.fd = -1;
	d->ses_open = 0;
}

static void
away_silence_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	away_lost(w->data, "no word from it for too long");
}

/* The answer to a move: arrived, or why not. */
static int
away_arrived(struct deputy *d, uint32_t node, char **cause)
{
	Osm__SesArrived	*arr;
	Osm__SesError	*e;
	const uint8_t	*body;
	size_t		 len;
	uint16_t	 kind;

	if (session_recv(&d->ses, &kind, &body, &len, cause) == -1)
		return -1;
	if (kind == OSM__SES_KIND__SES_ERROR) {
		e = osm__ses_error__unpack(NULL, len, body);
		xasprintf(cause, "node %u: %s", node, e != NULL ? e->reason :
		    "malformed error");
		if (e != NULL)
			osm__ses_error__free_unpacked(e, NULL);
		return -1;
	}
	if (kind != OSM__SES_KIND__SES_ARRIVED ||
	    (arr = osm__ses_arrived__unpack(NULL, len, body)) == NULL) {
		xasprintf(cause, "node %u: unexpected answer", node);
		return -1;
	}
	log_info("process %d (%s) now runs on node %u as %u", (int)d->pid,
	    d->command, node, arr->pid);
	osm__ses_arrived__free_unpacked(arr, NULL);
	return 0;
}

/*
 * Hold P, running at home or in a ptrace stop if stopped, for calls of
 * ours (d->task); away_resume lets it go on. On failure P goes on.
 */
int
away_hold_home(struct deputy *d, int stopped, char **cause)
{
	if (!stopped && away_stop_home(d, cause) == -1)
		return -1;
	if ((d->task = mig_adopt(d->pid, cause)) == NULL) {
		deputy_options(d, NULL);
		ptrace(PTRACE_CONT, d->pid, 0, 0);
		return -1;
	}
	return 0;
}

/* P, held, is the process again and goes on natively at home. */
static void
away_now_home(struct deputy *d)
{
	husk_free(&d->husk);
	mig_unpin(d->task, &d->pin);
	d->state = DEPUTY_HOME;
	d->where = d->self;
	away_resume(d);
	deputy_report(d);
	ckpt_home(d);
}

/*
 * Move P, running at home or in a ptrace stop if stopped, to node. On any
 * failure before the target has it running, P goes on at home as if
 * nothing happened.
 */
int
away_migrate(struct deputy *d, uint32_t node, int stopped, char **cause)
{
	Osm__SesSetup	 setup = OSM__SES_SETUP__INIT;
	char		*why = NULL;

	if (away_hold_home(d, stopped, cause) == -1)
		return -1;
	setup.pid = d->pid;
	setup.uid = getuid();
	setup.gid = getgid();
	proc_cpu_ns(d->pid, &setup.cpu_user_ns, &setup.cpu_sys_ns);
	setup.command = d->command;
	if (away_open_session(d, node, cause) == -1 ||
	    away_send(d, OSM__SES_KIND__SES_SETUP, &setup.base, cause) == -1 ||
	    session_send_image(&d->ses, OSM__SES_KIND__SES_IMAGE,
	    OSM__SES_KIND__SES_IMAGE_END, away_dump_fn, d->task, cause) == -1 ||
	    away_arrived(d, node, cause) == -1) {
		away_close_session(d);
		away_resume(d);
		return -1;
	}

	/* Arrived: only now may P's memory go. */
	d->state = DEPUTY_AWAY;
	d->where = node;
	d->cpu_at = now_ms();
	if (away_husk(d, &why) == -1) {
		away_lost(d, why);
		free(why);
		return 0;	/* it runs there; P was what failed */
	}
	ev_io_init(&d->ses_ev, away_session_cb, d->ses.fd, EV_READ);
	d->ses_ev.data = d;
	ev_io_start(d->loop, &d->ses_ev);
	ev_timer_init(&d->ses_timer, away_silence_cb, AWAY_SILENCE,
	    AWAY_SILENCE);
	d->ses_timer.data = d;
	ev_timer_start(d->loop, &d->ses_timer);
	return 0;
}

static void
away_call_done(struct deputy *d)
{
	home_free(d->call);
	d->call = NULL;
	d->nudged = 0;
	free(d->held);
	d->held = NULL;
}

/*
 * The image of the process is coming home on the session, asked by us or
 * by the guest: restore it into P and let P run natively.
 */
static int
away_arrive_home(struct deputy *d, char **cause)
{
	ev_io_stop(d->loop, &d->ses_ev);
	ev_timer_stop(d->loop, &d->ses_timer);
	/* Whatever P was doing for R is moot: R's state comes whole. */
	away_call_done(d);
	if (husk_hold(&d->husk, cause) == -1 ||
	    session_recv_image(&d->ses, OSM__SES_KIND__SES_IMAGE,
	    OSM__SES_KIND__SES_IMAGE_END, away_restore_fn, d->task,
	    cause) == -1) {
		away_close_session(d);
		return -1;
	}
	away_close_session(d);
	log_info("process %d (%s) is home", (int)d->pid, d->command);
	away_now_home(d);
	return 0;
}

/* Bring the process home, at mosd's order. */
int
away_come_home(struct deputy *d, char **cause)
{
	const uint8_t	*body;
	size_t		 len;
	uint16_t	 kind;

	if (away_settle_call(d, cause) == -1 ||
	    session_send(&d->ses, OSM__SES_KIND__SES_COME_HOME, "", 0,
	    cause) == -1)
		goto lost;
	/*
	 * What R sent before it knew is dropped: the calls it waits on
	 * restart once it is here, and it sends nothing else that matters.
	 */
	for (;;) {
		if (session_recv(&d->ses, &kind, &body, &len, cause) == -1)
			goto lost;
		if (kind == OSM__SES_KIND__SES_GO_HOME)
			break;
		if (kind == OSM__SES_KIND__SES_EXIT) {
			away_message(d, kind, body, len);
			xasprintf(cause, "the process ended meanwhile");
			return -1;
		}
	}
	if (away_arrive_home(d, cause) == 0)
		return 0;
lost:
	away_lost(d, *cause);
	return -1;
}

/* --- the running process's requests ---------------------------------- */

static void
away_send_held(struct deputy *d)
{
	char	*cause = NULL;

	if (session_send(&d->ses, OSM__SES_KIND__SES_REPLY, d->held,
	    d->held_len, &cause) == -1)
		away_lost(d, cause);
	away_call_done(d);
	free(cause);
}

/*
 * The forwarded call returned in P. Its reply waits while signals are
 * pending for P: R must have them before it sees the call's end, as it
 * would have at home (a kill of itself returns after the handler ran; an
 * interrupted call restarts or fails by R's handler flags).
 */
static void
away_returned(struct deputy *d, long rv)
{
	uint64_t	 base;
	size_t		 len;
	uint8_t		*mem = husk_scratch(&d->husk, &base, &len);
	char		*cause = NULL;
	int		 pending;

	log_debug("process %d: %s = %ld", (int)d->pid, d->call->name, rv);
	/*
	 * Broken off for a checkpoint, the calls Linux does not restart
	 * after a stop (epoll_wait, a socket read with a timeout) say EINTR:
	 * R makes them again, as the kernel restarts the others. Not if a
	 * signal for R came meanwhile: the EINTR may be its.
	 */
	if (d->nudged && rv == -EINTR && home_again(d->call))
		rv = -AWAY_ERESTARTSYS;
	if (home_reply(d->call, rv, mem, home_readback(d->call, rv), &d->held,
	    &d->held_len, &cause) == -1) {
		away_lost(d, cause);
		free(cause);
		return;
	}
	/* Before P runs on: once it does, it takes its signals at once. */
	pending = away_pending(d->pid);
	if (husk_run(&d->husk, &cause) == -1) {
		away_lost(d, cause);
		free(cause);
		return;
	}
	if (!pending)
		away_send_held(d);
}

/* Run a forwarded call inside P: the stub runs it, in P's context. */
static void
away_call(struct deputy *d, const uint8_t *body, size_t len)
{
	uint64_t	 base;
	size_t		 room;
	uint8_t		*mem;
	char		*cause = NULL;

	if (d->call != NULL) {
		away_lost(d, "a call came while one was running");
		return;
	}
	/* A guest must not make P do what a forwarded call may not. */
	if ((d->call = home_check(body, len, d->pid, &cause)) == NULL) {
		log_warnx("process %d: refused a call: %s", (int)d->pid, cause);
		free(cause);
		away_lost(d, "it sent a call that is not forwardable");
		return;
	}
	log_debug("process %d: %s, %zu bytes", (int)d->pid, d->call->name,
	    d->call->span);
	husk_scratch(&d->husk, &base, &room);
	if (d->call->span > room && (husk_hold(&d->husk, &cause) == -1 ||
	    husk_grow(&d->husk, (d->call->span + 0xffff) & ~0xffffUL,
	    &cause) == -1 || husk_run(&d->husk, &cause) == -1)) {
		away_lost(d, cause);
		free(cause);
		return;
	}
	away_relay_stolen(d);
	mem = husk_scratch(&d->husk, &base, &room);
	if (home_layout(d->call, base, room, &cause) == -1) {
		away_lost(d, cause);
		free(cause);
		return;
	}
	memcpy(mem, d->call->image, d->call->image_len);
	husk_call(&d->husk, d->call->nr, d->call->args);
}

/*
 * A signal for R came while the call was on its way: stop the call if it
 * still runs (its reply then says it was interrupted, or what it did if it
 * ended first). A call already answered is nothing to stop.
 */
static void
away_cancel(struct deputy *d, const uint8_t *body, size_t len)
{
	Osm__SesCancel	*c;

	if ((c = osm__ses_cancel__unpack(NULL, len, body)) == NULL) {
		away_lost(d, "malformed cancel");
		return;
	}
	if (d->call != NULL && d->call->seq == c->seq && d->held == NULL)
		ptrace(PTRACE_INTERRUPT, d->pid, 0, 0);
	osm__ses_cancel__free_unpacked(c, NULL);
}

/*
 * Before the process leaves: the call running at home is stopped, and its
 * outcome — done, or not begun — told to R first, so that nothing it did
 * at home is lost and nothing is done twice.
 */
static int
away_settle_call(struct deputy *d, char **cause)
{
	int	status;

	if (d->husk.busy && ptrace(PTRACE_INTERRUPT, d->pid, 0, 0) == -1) {
		xasprintf(cause, "PTRACE_INTERRUPT: %s", strerror(errno));
		return -1;
	}
	while (d->call != NULL && d->ses_open) {
		while (waitpid(d->pid, &status, __WALL) == -1 && errno == EINTR)
			;
		if (!WIFSTOPPED(status)) {
			xasprintf(cause, "the process ended");
			return -1;
		}
		away_ptrace_event(d, status);
	}
	if (!d->ses_open) {
		xasprintf(cause, "the session broke");
		return -1;
	}
	return 0;
}

/* R ended: P ends the same way, so that the parent sees the same. */
static void
away_exit(struct deputy *d, const uint8_t *body, size_t len)
{
	Osm__SesExit	*e;
	char		*cause = NULL;

	if ((e = osm__ses_exit__unpack(NULL, len, body)) == NULL) {
		away_lost(d, "malformed exit");
		return;
	}
	log_info("process %d (%s) ended on node %u: %s %d", (int)d->pid,
	    d->command, d->where, e->signaled ? "signal" : "status",
	    e->status);
	away_close_session(d);
	away_call_done(d);
	if (husk_hold(&d->husk, &cause) == -1 ||
	    husk_end(&d->husk, e->signaled, e->status, &cause) == -1) {
		log_warnx("process %d: %s", (int)d->pid, cause);
		free(cause);
		kill(d->pid, SIGKILL);
	} else if (e->signaled) {
		d->ending = e->status;
		kill(d->pid, e->status);
		ptrace(PTRACE_CONT, d->pid, 0, 0);
	}
	osm__ses_exit__free_unpacked(e, NULL);
	/* P's end shows in deputy_sigchld_cb, which ends the deputy. */
}

/* R stopped by a stop signal: P stops too, a group stop for the shell. */
static void
away_stopped(struct deputy *d, const uint8_t *body, size_t len)
{
	Osm__SesSignal	*s;
	char		*cause = NULL;

	if ((s = osm__ses_signal__unpack(NULL, len, body)) == NULL ||
	    s->signo < 1 || s->signo >= NSIG) {
		if (s != NULL)
			osm__ses_signal__free_unpacked(s, NULL);
		away_lost(d, "malformed stop");
		return;
	}
	/*
	 * R waits in no call: it is stopped. P's handler is gone: default
	 * (SIGSTOP's action is always that, and cannot be set).
	 */
	if (d->call == NULL && (husk_hold(&d->husk, &cause) == -1 ||
	    (s->signo != SIGSTOP &&
	    husk_default(&d->husk, s->signo, &cause) == -1) ||
	    husk_run(&d->husk, &cause) == -1)) {
		osm__ses_signal__free_unpacked(s, NULL);
		away_lost(d, cause);
		free(cause);
		return;
	}
	d->stop_sent = s->signo;
	kill(d->pid, s->signo);
	osm__ses_signal__free_unpacked(s, NULL);
	away_relay_stolen(d);
}

static void
away_stats(struct deputy *d, const uint8_t *body, size_t len)
{
	Osm__SesStats	*s;
	uint64_t	 now = now_ms(), cpu;

	if ((s = osm__ses_stats__unpack(NULL, len, body)) == NULL)
		return;
	cpu = s->cpu_user_ns + s->cpu_sys_ns;
	if (now > d->cpu_at && cpu >= d->cpu_ns)
		d->cpu_permille = (cpu - d->cpu_ns) / 1000 / (now - d->cpu_at);
	d->cpu_ns = cpu;
	d->cpu_at = now;
	d->rss = s->rss_bytes;
	osm__ses_stats__free_unpacked(s, NULL);
	deputy_report(d);
}

/*
 * The node it runs on wants it gone (its owner expelled its guests): call
 * it home as mosmigrate would, the call P runs for it settled first.
 */
static void
away_leave(struct deputy *d, const uint8_t *body, size_t len)
{
	Osm__SesError	*e;
	char		*cause = NULL;

	e = osm__ses_error__unpack(NULL, len, body);
	log_info("process %d (%s): node %u sends it home: %s", (int)d->pid,
	    d->command, d->where, e != NULL ? e->reason : "no reason given");
	if (e != NULL)
		osm__ses_error__free_unpacked(e, NULL);
	if (away_come_home(d, &cause) == 0)
		deputy_report(d);
	free(cause);
}

void
away_message(struct deputy *d, uint16_t kind, const uint8_t *body,
    size_t len)
{
	char	*cause = NULL;

	ev_timer_again(d->loop, &d->ses_timer);
	switch (kind) {
	case OSM__SES_KIND__SES_CALL:
		away_call(d, body, len);
		break;
	case OSM__SES_KIND__SES_CANCEL:
		away_cancel(d, body, len);
		break;
	case OSM__SES_KIND__SES_STATS:
		away_stats(d, body, len);
		break;
	case OSM__SES_KIND__SES_EXIT:
		away_exit(d, body, len);
		break;
	case OSM__SES_KIND__SES_STOPPED:
		away_stopped(d, body, len);
		break;
	case OSM__SES_KIND__SES_GO_HOME:
		if (away_arrive_home(d, &cause) == -1)
			away_lost(d, cause);
		free(cause);
		break;
	case OSM__SES_KIND__SES_LEAVE:
		away_leave(d, body, len);
		break;
	case OSM__SES_KIND__SES_CHECKPOINT:
		ckpt_away(d, body, len);
		break;
	default:
		away_lost(d, "it sent an unexpected message");
	}
}

void
away_session_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct deputy	*d = w->data;
	const uint8_t	*body;
	size_t		 len;
	uint16_t	 kind;
	char		*cause = NULL;
	int		 rc = 0;

	if (session_fill(&d->ses, &cause) == -1) {
		away_lost(d, cause != NULL ? cause : "the connection closed");
		free(cause);
		return;
	}
	while (d->ses_open && d->state == DEPUTY_AWAY &&
	    (rc = session_next(&d->ses, &kind, &body, &len, &cause)) == 1)
		away_message(d, kind, body, len);
	if (d->ses_open && rc == -1)
		away_lost(d, cause);
	free(cause);
}

/* --- P's stops while away -------------------------------------------- */

/* Pass a signal sent to P at home on to R. */
static void
away_signal(struct deputy *d, const siginfo_t *si)
{
	Osm__SesSignal	 s = OSM__SES_SIGNAL__INIT;
	char		*cause = NULL;

	s.signo = si->si_signo;
	if (d->call != NULL) {
		s.has_seq = 1;
		s.seq = d->call->seq;
		d->nudged = 0;	/* its EINTR may be this signal's */
	}
	s.has_code = s.has_sender_pid = s.has_sender_uid = 1;
	s.code = si->si_code;
	s.sender_pid = si->si_pid;
	s.sender_uid = si->si_uid;
	if (si->si_code == SI_QUEUE) {
		s.has_value = 1;
		s.value = si->si_value.sival_int;
	}
	if (away_send(d, OSM__SES_KIND__SES_SIGNAL, &s.base, &cause) == -1) {
		away_lost(d, cause);
		free(cause);
		return;
	}
	if (d->held != NULL && !away_pending(d->pid))
		away_send_held(d);
}

/* Signals migrate's stops took from P on our behalf go to R too. */
void
away_relay_stolen(struct deputy *d)
{
	siginfo_t	si[8];
	size_t		n, i;

	while ((n = mig_stolen(d->task, si, nitems(si))) > 0)
		for (i = 0; i < n && d->ses_open; i++)
			away_signal(d, &si[i]);
}

/* A ptrace stop of P while it is away. */
void
away_ptrace_event(struct deputy *d, int status)
{
	siginfo_t	 si;
	int		 sig = WSTOPSIG(status);
	long		 rv;
	char		*cause = NULL;

	if (!WIFSTOPPED(status))
		return;
	if ((status >> 16) == PTRACE_EVENT_STOP && sig != SIGTRAP) {
		/* a group stop, the one that mirrors R's: stay stopped */
		ptrace(PTRACE_LISTEN, d->pid, 0, 0);
		return;
	}
	switch (husk_stopped(&d->husk, status, &rv, &si)) {
	case HUSK_RETURNED:
		away_returned(d, rv);
		return;
	case HUSK_SIGNAL:
		if (sig == d->ending || sig == d->stop_sent) {
			/* ours: the one that ends P, or stops it */
			d->stop_sent = 0;
			break;
		}
		/* a signal for the process: R's, not the husk's */
		away_signal(d, &si);
		sig = 0;
		break;
	case HUSK_OTHER:
		sig = 0;
		break;
	}
	if (husk_continue(&d->husk, sig, &cause) == -1) {
		away_lost(d, cause);
		free(cause);
	}
}

/*
 * Say in the log, and on P's stderr if P is held, that the process was
 * lost with its node and why, and what becomes of it.
 */
static void
away_say_lost(struct deputy *d, int held, const char *why, const char *then)
{
	char	msg[768];
	int	n;

	n = snprintf(msg, sizeof msg, "mosrun: process %d (%s) was lost with "
	    "node %u: %s; %s\n", (int)d->pid, d->command, d->where, why, then);
	if (n >= (int)sizeof msg)
		n = sizeof msg - 1;
	log_warnx("%.*s", n - 1, msg);
	if (held)
		husk_say(&d->husk, 2, msg, n);
}

/*
 * The copy away is lost but P's last checkpoint is there: P, held, becomes
 * the process of the checkpoint and goes on at home. What it wrote since
 * the checkpoint it writes again. -1 if there is no checkpoint or it will
 * not do; a failed restore leaves P half made, and the caller kills it.
 */
static int
away_restart(struct deputy *d, const char *why)
{
	struct mig_restore_opts	 opts = { .flags = 0 };
	char			*then, *path = NULL, *cause = NULL;
	int			 fd;

	if ((fd = ckpt_open_last(d, &path, &cause)) == -1) {
		if (cause != NULL)
			log_warnx("process %d (%s): no restart: %s",
			    (int)d->pid, d->command, cause);
		free(cause);
		return -1;
	}
	xasprintf(&then, "restarting it here from %s", path);
	away_say_lost(d, 1, why, then);
	free(then);
	if (mig_restore(d->task, fd, &opts, NULL, &cause) == -1) {
		log_warnx("process %d: restart from %s: %s", (int)d->pid, path,
		    cause);
		free(cause);
		free(path);
		close(fd);
		return -1;
	}
	close(fd);
	free(path);
	away_now_home(d);
	return 0;
}

/*
 * The running copy is lost (the target died, the link stayed down past
 * the timeout), or P ended at home while away (why NULL). A lost process
 * goes on at home from its last checkpoint; without one it cannot go on:
 * say so on P's stderr and in the log, and kill P, a status its parent
 * cannot take for a normal exit.
 */
void
away_lost(struct deputy *d, const char *why)
{
	char	*cause = NULL;
	int	 held;

	if (why == NULL) {
		if (d->ses_open)
			session_send(&d->ses, OSM__SES_KIND__SES_KILL, "", 0,
			    &cause);
		free(cause);
		away_close_session(d);
		return;
	}
	away_close_session(d);
	away_call_done(d);
	held = d->task != NULL && husk_hold(&d->husk, &cause) == 0;
	free(cause);
	if (held && away_restart(d, why) == 0)
		return;
	away_say_lost(d, held, why, "killing it");
	kill(d->pid, SIGKILL);
}
