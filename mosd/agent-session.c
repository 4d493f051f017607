/*
 * A guest agent's life, once agent.c made it a guest uid: restore the
 * process that arrives on the session into a fresh child R, put R under its
 * system-call filter, then serve R — its forwarded calls go home, signals
 * sent to it at home come here, its end goes home — until R ends or goes
 * home. See docs/REMOTE.md.
 */
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include <netinet/in.h>
#include <netinet/tcp.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "libremote/remote.h"
#include "migrate/migrate.h"
#include "mosd.h"
#include "proto/ctl.pb-c.h"
#include "proto/migrate.pb-c.h"
#include "proto/remote.pb-c.h"

#define AGENT_SETUP_TIMEOUT	60	/* seconds, for the image to arrive */
#define AGENT_STATS_EVERY	2.0	/* seconds between SesStats */
#define AGENT_RECONNECT		1.0
/*
 * Milliseconds our stats may go unacknowledged before the session counts
 * as broken (TCP_USER_TIMEOUT), and R with it: by then its home, 15 s
 * without word from us, has given it up and gone on from a checkpoint
 * or killed it; a copy nobody serves must not run on here.
 */
#define AGENT_CUT_OFF		20000

struct agent {
	Osm__GuestStart		*gs;
	struct ev_loop		*loop;
	struct session		 ses;
	ev_io			 ses_ev;
	pid_t			 pid;		/* R */
	struct guest		*guest;		/* R's calls (libremote) */
	ev_io			 notif_ev;
	ev_signal		 sigchld;
	ev_timer		 stats;
	struct emulate_base	 base;		/* CPU used before it came */
	uint64_t		 pending;	/* the call at home, or 0 */
	int			 held[NSIG];	/* signals held until its reply */
	int			 nheld;
	int			 ctl_fd;
	ev_io			 ctl_ev;
	ev_timer		 reconnect;
	int			 order_fd;	/* mosd's orders: expel */
	ev_io			 order_ev;
	char			 order_path[64];
	int			 leaving;	/* asked home to call it */
	int			 ckpt_wanted;	/* home asked for R's context */
	Osm__ProcState		 state;
};

static void	agent_deliver_held(struct agent *);

static void __attribute__((noreturn))
agent_stop(struct agent *a, int code)
{
	if (a->ctl_fd != -1)
		close(a->ctl_fd);
	if (a->guest != NULL)
		guest_free(a->guest);
	session_free(&a->ses);
	exit(code);
}

static void __attribute__((noreturn))
agent_fail(struct agent *a, const char *why)
{
	log_warnx("guest %u@%u: %s", a->gs->pid, a->gs->home, why);
	if (a->pid != 0)
		kill(a->pid, SIGKILL);
	agent_stop(a, 1);
}

static int
agent_send_raw(struct agent *a, uint16_t kind, const void *buf, size_t len)
{
	char	*cause = NULL;

	if (session_send(&a->ses, kind, buf, len, &cause) == -1) {
		log_warnx("guest %u@%u: %s", a->gs->pid, a->gs->home, cause);
		free(cause);
		return -1;
	}
	return 0;
}

static int
agent_send(struct agent *a, uint16_t kind, const ProtobufCMessage *msg)
{
	uint8_t	*buf;
	size_t	 len;
	int	 rc;

	len = msg == NULL ? 0 : protobuf_c_message_get_packed_size(msg);
	buf = xmalloc(len);
	if (msg != NULL)
		protobuf_c_message_pack(msg, buf);
	rc = agent_send_raw(a, kind, buf, len);
	free(buf);
	return rc;
}

/* --- mosd, which counts guests ----------------------------------------- */

static void
agent_describe(struct agent *a, Osm__CtlAgent *c)
{
	c->role = OSM__CTL_ROLE__ROLE_GUEST;
	c->pid = a->gs->pid;
	c->home = a->gs->home;
	c->where = a->gs->self;
	c->state = a->state;
	c->command = a->gs->command;
	if (a->order_fd != -1)
		c->socket = a->order_path;
	if (a->pid != 0) {
		c->has_local_pid = 1;
		c->local_pid = a->pid;
	}
}

static int
agent_hello(struct agent *a)
{
	Osm__CtlRequest	 req = OSM__CTL_REQUEST__INIT;
	Osm__CtlAgent	 c = OSM__CTL_AGENT__INIT;
	Osm__CtlReply	*r;
	char		*cause;
	int		 fd;

	if ((fd = ctl_connect(a->gs->socket, CTL_TIMEOUT_SEC, &cause)) == -1) {
		free(cause);
		return -1;
	}
	agent_describe(a, &c);
	req.type = OSM__CTL_TYPE__CTL_AGENT_HELLO;
	req.agent = &c;
	if ((r = ctl_request(fd, &req, NULL, &cause)) == NULL || !r->ok) {
		log_warnx("guest %u@%u: mosd: %s", a->gs->pid, a->gs->home,
		    r == NULL ? cause : r->error);
		if (r == NULL)
			free(cause);
		ctl_reply_free(r);
		close(fd);
		return -1;
	}
	ctl_reply_free(r);
	a->ctl_fd = fd;
	if (a->loop != NULL) {
		ev_io_set(&a->ctl_ev, fd, EV_READ);
		ev_io_start(a->loop, &a->ctl_ev);
	}
	return 0;
}

static void
agent_report(struct agent *a, Osm__ProcState state)
{
	Osm__CtlRequest	 req = OSM__CTL_REQUEST__INIT;
	Osm__CtlAgent	 c = OSM__CTL_AGENT__INIT;
	Osm__CtlReply	*r;
	char		*cause;

	a->state = state;
	if (a->ctl_fd == -1)
		return;
	agent_describe(a, &c);
	req.type = OSM__CTL_TYPE__CTL_AGENT_STATUS;
	req.agent = &c;
	if ((r = ctl_request(a->ctl_fd, &req, NULL, &cause)) == NULL)
		free(cause);
	ctl_reply_free(r);
}

static void
agent_ctl_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct agent	*a = w->data;
	char		 c;

	/* mosd never talks first: readable means it went away. */
	if (read(a->ctl_fd, &c, 1) <= 0) {
		ev_io_stop(loop, w);
		close(a->ctl_fd);
		a->ctl_fd = -1;
		ev_timer_again(loop, &a->reconnect);
	}
}

/*
 * An order from mosd: its owner expels the guests. The deputy calls R home
 * (it settles the call it runs for R first), so R is not frozen here
 * while its call may have run at home.
 */
static void
agent_order_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct agent	*a = w->data;
	Osm__CtlRequest	*req;
	Osm__CtlReply	 reply = OSM__CTL_REPLY__INIT;
	Osm__SesError	 leave = OSM__SES_ERROR__INIT;
	int		 fd;

	if ((req = ctl_order_take(a->order_fd, CTL_TIMEOUT_SEC, &fd)) == NULL)
		return;
	if (req->type != OSM__CTL_TYPE__CTL_MIGRATE || !req->has_node ||
	    req->node != 0 || !req->has_pid || req->pid != a->gs->pid)
		reply.error = "a guest can only be sent home";
	else if (!a->leaving) {
		xasprintf(&leave.reason, "node %u's owner expels its guests",
		    a->gs->self);
		a->leaving = agent_send(a, OSM__SES_KIND__SES_LEAVE,
		    &leave.base) == 0;
		free(leave.reason);
		if (!a->leaving)
			reply.error = "the home went away";
	}
	reply.ok = reply.error == NULL;
	ctl_order_answer(fd, &reply);
	osm__ctl_request__free_unpacked(req, NULL);
}

static void
agent_reconnect_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct agent	*a = w->data;

	if (a->ctl_fd == -1 && agent_hello(a) == 0)
		ev_timer_stop(loop, w);
}

/* --- arriving -------------------------------------------------------- */

static int
agent_restore_fn(int fd, void *arg, char **cause)
{
	struct mig_restore_opts	opts = { .flags = MIG_CONTEXT };

	return mig_restore(arg, fd, &opts, NULL, cause);
}

/*
 * Receive the setup and the image, restore R, put it under its filter,
 * let it run. R dies with us: a copy nobody serves is of no use.
 */
static int
agent_arrive(struct agent *a, char **cause)
{
	Osm__SesSetup	*setup;
	Osm__SesArrived	 arr = OSM__SES_ARRIVED__INIT;
	struct mig_task	*t;
	struct mig_pin	 pin;
	const uint8_t	*body;
	size_t		 len;
	uint16_t	 kind;
	int		 listener;

	if (session_recv(&a->ses, &kind, &body, &len, cause) == -1)
		return -1;
	if (kind != OSM__SES_KIND__SES_SETUP ||
	    (setup = osm__ses_setup__unpack(NULL, len, body)) == NULL) {
		xasprintf(cause, "the session did not start with a setup");
		return -1;
	}
	if (setup->pid != a->gs->pid) {
		osm__ses_setup__free_unpacked(setup, NULL);
		xasprintf(cause, "setup for another process");
		return -1;
	}
	a->base.utime_ns = setup->cpu_user_ns;
	a->base.stime_ns = setup->cpu_sys_ns;
	osm__ses_setup__free_unpacked(setup, NULL);

	if ((t = mig_spawn(cause)) == NULL)
		return -1;
	a->pid = mig_pid(t);
	mig_pin(t, &pin);
	if (session_recv_image(&a->ses, OSM__SES_KIND__SES_IMAGE,
	    OSM__SES_KIND__SES_IMAGE_END, agent_restore_fn, t, cause) == -1)
		goto fail;
	if (task_sys_ok(t, "PR_SET_PDEATHSIG", SYS_prctl,
	    (sysargs){ PR_SET_PDEATHSIG, SIGKILL }) == -1) {
		*cause = task_cause(t);
		goto fail;
	}
	if ((listener = install_filter(t, cause)) == -1)
		goto fail;
	if ((a->guest = guest_new(listener, a->pid, a->gs->pid, &a->base,
	    cause)) == NULL) {
		close(listener);
		goto fail;
	}
	/* R is our child: its end and its stops reach us by waitpid. */
	mig_unpin(t, &pin);
	if (mig_release(t, cause) == -1) {
		kill(a->pid, SIGKILL);
		return -1;
	}
	arr.pid = a->pid;
	if (agent_send(a, OSM__SES_KIND__SES_ARRIVED, &arr.base) == -1) {
		xasprintf(cause, "the home went away");
		kill(a->pid, SIGKILL);
		return -1;
	}
	log_info("guest %u@%u (%s) runs here as %d", a->gs->pid, a->gs->home,
	    a->gs->command, (int)a->pid);
	return 0;
fail:
	mig_unpin(t, &pin);
	mig_kill(t);
	a->pid = 0;
	return -1;
}

/* --- going home ------------------------------------------------------ */

/*
 * Has R ended, its end not reaped yet? Then agent_sigchld_cb, which the
 * loop runs, sends it home.
 */
static int
agent_ended(struct agent *a)
{
	siginfo_t	si;

	memset(&si, 0, sizeof si);
	if (waitid(P_PID, a->pid, &si, WEXITED | WNOHANG | WNOWAIT) == -1 ||
	    si.si_pid != a->pid)
		return 0;
	ev_feed_signal_event(a->loop, SIGCHLD);
	return 1;
}

static int
agent_dump_fn(int fd, void *arg, char **cause)
{
	return mig_dump(arg, fd, MIG_CONTEXT | MIG_FILTERED, NULL, cause);
}

/*
 * Freeze R — a call it waits on is left to restart, at home — send it
 * home, and end. Returns only if R ended first: its end goes home
 * (agent_sigchld_cb), which is all the home needs.
 */
static void
agent_go_home(struct agent *a, const char *why)
{
	struct mig_task	*t;
	char		*cause = NULL;

	log_info("guest %u@%u goes home: %s", a->gs->pid, a->gs->home, why);
	agent_report(a, OSM__PROC_STATE__PROC_LEAVING);
	agent_deliver_held(a);	/* pending in R, they go home with it */
	if ((t = mig_seize(a->pid, &cause)) == NULL) {
		if (!agent_ended(a))
			agent_fail(a, cause);
		free(cause);
		return;
	}
	if (agent_send(a, OSM__SES_KIND__SES_GO_HOME, NULL) == -1 ||
	    session_send_image(&a->ses, OSM__SES_KIND__SES_IMAGE,
	    OSM__SES_KIND__SES_IMAGE_END, agent_dump_fn, t, &cause) == -1) {
		mig_kill(t);
		a->pid = 0;
		agent_fail(a, cause != NULL ? cause : "going home failed");
	}
	mig_kill(t);	/* it lives at home now */
	a->pid = 0;
	agent_stop(a, 0);
}

/* --- checkpoints ------------------------------------------------------- */

static void	agent_deliver(struct agent *, const Osm__SesSignal *);

/*
 * The home asked for R's context, for a checkpoint: freeze R, send its
 * image, let it go on. Only while no call of R's is at home, so that what
 * the home adds (descriptors, offsets) is of the same moment; else once
 * the call's reply is in (the home breaks off a call that blocks, and R
 * makes it again after). A call R made meanwhile that nobody took yet is
 * broken off by the freeze and made again after it. Signals the freeze
 * took are in the image, and are sent to R again from here, as kill or
 * sigqueue (R's filter would send a re-queueing inside R home).
 *
 * broken: the call the home broke off for it, which R, frozen in it,
 * makes again, or which is dropped if R ended; 0 if none. -1 if it is
 * still to be made: R was not frozen (not asked, or a call at home).
 */
static int
agent_checkpoint(struct agent *a, uint64_t broken)
{
	Osm__SesError	 err = OSM__SES_ERROR__INIT;
	Osm__SesSignal	 s = OSM__SES_SIGNAL__INIT;
	struct mig_task	*t;
	siginfo_t	*si = NULL;
	size_t		 n = 0, i;
	char		*cause = NULL;

	if (!a->ckpt_wanted || a->pending != 0)
		return -1;
	a->ckpt_wanted = 0;
	if ((t = mig_seize(a->pid, &cause)) == NULL) {
		err.reason = cause;
		if (agent_send(a, OSM__SES_KIND__SES_CHECKPOINT,
		    &err.base) == -1)
			agent_fail(a, "the home went away");
		free(cause);
		if (!agent_ended(a))
			return -1;
		if (broken != 0)
			guest_forget(a->guest, broken);
		return 0;
	}
	if (broken != 0)
		guest_forget(a->guest, broken);
	if (agent_send(a, OSM__SES_KIND__SES_CHECKPOINT, NULL) == -1 ||
	    session_send_image(&a->ses, OSM__SES_KIND__SES_IMAGE,
	    OSM__SES_KIND__SES_IMAGE_END, agent_dump_fn, t, &cause) == -1) {
		log_warnx("guest %u@%u: checkpoint: %s", a->gs->pid,
		    a->gs->home, cause != NULL ? cause : "the home went away");
		free(cause);
		cause = NULL;
	} else
		log_info("guest %u@%u: checkpoint image sent", a->gs->pid,
		    a->gs->home);
	for (;;) {
		si = xreallocarray(si, n + 8, sizeof *si);
		if ((i = mig_stolen(t, si + n, 8)) == 0)
			break;
		n += i;
	}
	if (mig_release(t, &cause) == -1) {
		free(si);
		agent_fail(a, cause);
	}
	for (i = 0; i < n; i++) {
		s.signo = si[i].si_signo;
		s.has_code = s.has_value = 1;
		s.code = si[i].si_code;
		s.value = si[i].si_value.sival_int;
		agent_deliver(a, &s);
	}
	free(si);
	return 0;
}

/* --- serving R --------------------------------------------------------- */

/* Send R's call home; the answer comes in agent_reply. */
static void
agent_call(struct agent *a, const struct guest_event *ev)
{
	a->pending = ev->seq;
	if (agent_send_raw(a, OSM__SES_KIND__SES_CALL, ev->msg, ev->len) == -1)
		agent_fail(a, "the home went away");
}

static void
agent_notif_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct agent		*a = w->data;
	struct guest_event	 ev;
	struct pollfd		 hup = { .fd = w->fd, .events = POLLIN };
	char			*cause = NULL;

	if (guest_receive(a->guest, &ev, &cause) == -1)
		agent_fail(a, cause);
	switch (ev.kind) {
	case GUEST_FORWARD:
		agent_call(a, &ev);
		break;
	case GUEST_HOME:
		agent_go_home(a, ev.why);
		break;
	case GUEST_ANSWERED:
		break;
	case GUEST_NONE:
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

/* Queue a signal sent to the process at home into R. */
static void
agent_deliver(struct agent *a, const Osm__SesSignal *s)
{
	siginfo_t	si;
	int		rc;

	if (s->has_code && s->code == SI_QUEUE && s->has_value) {
		/* sigqueue's value must survive; the sender is now us */
		memset(&si, 0, sizeof si);
		si.si_signo = s->signo;
		si.si_code = SI_QUEUE;
		si.si_pid = getpid();
		si.si_uid = getuid();
		si.si_value.sival_int = s->value;
		rc = syscall(SYS_rt_sigqueueinfo, a->pid, s->signo, &si);
	} else
		rc = kill(a->pid, s->signo);
	if (rc == -1)
		log_warn("guest %u@%u: signal %d", a->gs->pid, a->gs->home,
		    s->signo);
}

static void
agent_deliver_held(struct agent *a)
{
	Osm__SesSignal	s = OSM__SES_SIGNAL__INIT;
	int		i;

	for (i = 0; i < a->nheld; i++) {
		s.signo = a->held[i];
		agent_deliver(a, &s);
	}
	a->nheld = 0;
}

/*
 * A signal sent to the process at home. With no call of R's at home it
 * goes to R at once. Otherwise whether that call ran decides, at home, as
 * it would have natively: the signal waits for the call's reply (asking
 * the home to stop the call if the signal came before the call got
 * there), then goes to R after a result, or before an interrupted call's
 * answer, so that R's own mask and handler flags decide whether the call
 * restarts or fails with EINTR.
 */
static void
agent_signal(struct agent *a, const uint8_t *body, size_t len)
{
	Osm__SesSignal	*s;
	Osm__SesCancel	 c = OSM__SES_CANCEL__INIT;

	if ((s = osm__ses_signal__unpack(NULL, len, body)) == NULL ||
	    s->signo < 1 || s->signo >= NSIG) {
		if (s != NULL)
			osm__ses_signal__free_unpacked(s, NULL);
		agent_fail(a, "malformed signal from home");
	}
	if (a->pending == 0 || (s->has_code && s->code == SI_QUEUE))
		agent_deliver(a, s);	/* queued signals carry a value */
	else {
		if (!s->has_seq || s->seq != a->pending) {
			c.seq = a->pending;
			agent_send(a, OSM__SES_KIND__SES_CANCEL, &c.base);
		}
		if (a->nheld < NSIG)
			a->held[a->nheld++] = s->signo;
	}
	osm__ses_signal__free_unpacked(s, NULL);
}

/*
 * Will sig end R's wait in a call? Not if R blocks or ignores it, or if
 * its default action is to ignore it: R is waiting, it cannot change its
 * mask or its handlers now.
 */
static int
agent_wakes(pid_t pid, int sig)
{
	uint64_t	bit = 1ULL << (sig - 1), blk = 0, ign = 0, cgt = 0;

	if (sig == SIGKILL)
		return 1;
	proc_status_mask(pid, "SigBlk", &blk);
	proc_status_mask(pid, "SigIgn", &ign);
	proc_status_mask(pid, "SigCgt", &cgt);
	if ((blk | ign) & bit)
		return 0;
	if (!(cgt & bit) && (sig == SIGCHLD || sig == SIGURG ||
	    sig == SIGWINCH || sig == SIGCONT))
		return 0;
	return 1;
}

static void
agent_reply(struct agent *a, const uint8_t *body, size_t len)
{
	struct guest_event	 ev;
	Osm__RemoteReply	*r;
	char			*cause = NULL;
	int			 interrupted = 0, woken = 0, i;

	if (a->nheld > 0 &&
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
		for (i = 0; i < a->nheld; i++)
			woken |= agent_wakes(a->pid, a->held[i]);
		agent_deliver_held(a);
	}
	a->pending = 0;
	if (guest_reply(a->guest, body, len, interrupted ? woken : -1, &ev,
	    &cause) == -1)
		agent_fail(a, cause);
	agent_deliver_held(a);
	/* A call to make again: R makes it itself if frozen for a checkpoint. */
	if (ev.kind == GUEST_FORWARD) {
		if (agent_checkpoint(a, ev.seq) == -1)
			agent_call(a, &ev);
	} else
		agent_checkpoint(a, 0);
}

static void
agent_session_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct agent	*a = w->data;
	const uint8_t	*body;
	size_t		 len;
	uint16_t	 kind;
	char		*cause = NULL;
	int		 rc;

	if (session_fill(&a->ses, &cause) == -1)
		agent_fail(a, cause != NULL ? cause :
		    "the home closed the session");
	while ((rc = session_next(&a->ses, &kind, &body, &len, &cause)) == 1) {
		switch (kind) {
		case OSM__SES_KIND__SES_REPLY:
			agent_reply(a, body, len);
			break;
		case OSM__SES_KIND__SES_SIGNAL:
			agent_signal(a, body, len);
			break;
		case OSM__SES_KIND__SES_CHECKPOINT:
			a->ckpt_wanted = 1;
			agent_checkpoint(a, 0);
			break;
		case OSM__SES_KIND__SES_COME_HOME:
			agent_go_home(a, "called home");
			break;
		case OSM__SES_KIND__SES_KILL:
			log_info("guest %u@%u killed at home", a->gs->pid,
			    a->gs->home);
			kill(a->pid, SIGKILL);
			a->pid = 0;
			agent_stop(a, 0);
		default:
			agent_fail(a, "unexpected message from home");
		}
	}
	if (rc == -1)
		agent_fail(a, cause);
}

/* R's CPU time here, plus what it used before it came. */
static void
agent_cpu(struct agent *a, uint64_t *user_ns, uint64_t *sys_ns)
{
	proc_cpu_ns(a->pid, user_ns, sys_ns);
	*user_ns += a->base.utime_ns;
	*sys_ns += a->base.stime_ns;
}

static void
agent_stats_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct agent	*a = w->data;
	Osm__SesStats	 s = OSM__SES_STATS__INIT;
	char		 path[64], buf[128];
	unsigned long	 pages = 0;

	agent_cpu(a, &s.cpu_user_ns, &s.cpu_sys_ns);
	snprintf(path, sizeof path, "/proc/%d/statm", (int)a->pid);
	if (read_file_str(path, buf, sizeof buf) == 0)
		sscanf(buf, "%*u %lu", &pages);
	s.rss_bytes = (uint64_t)pages * sysconf(_SC_PAGESIZE);
	s.stopped = a->state == OSM__PROC_STATE__PROC_STOPPED;
	if (agent_send(a, OSM__SES_KIND__SES_STATS, &s.base) == -1)
		agent_fail(a, "the home went away");
}

static void
agent_sigchld_cb(struct ev_loop *loop, ev_signal *w, int revents)
{
	struct agent	*a = w->data;
	Osm__SesExit	 e = OSM__SES_EXIT__INIT;
	Osm__SesSignal	 s = OSM__SES_SIGNAL__INIT;
	int		 status;

	while (waitpid(a->pid, &status, WNOHANG | WUNTRACED |
	    WCONTINUED) > 0) {
		if (WIFSTOPPED(status)) {
			agent_report(a, OSM__PROC_STATE__PROC_STOPPED);
			s.signo = WSTOPSIG(status);
			agent_send(a, OSM__SES_KIND__SES_STOPPED, &s.base);
			continue;
		}
		if (WIFCONTINUED(status)) {
			agent_report(a, OSM__PROC_STATE__PROC_RUNNING);
			continue;
		}
		e.signaled = WIFSIGNALED(status);
		e.status = e.signaled ? WTERMSIG(status) : WEXITSTATUS(status);
		e.has_core = 1;
		e.core = e.signaled && WCOREDUMP(status);
		agent_cpu(a, &e.cpu_user_ns, &e.cpu_sys_ns);
		agent_send(a, OSM__SES_KIND__SES_EXIT, &e.base);
		log_info("guest %u@%u ended: %s %d", a->gs->pid, a->gs->home,
		    e.signaled ? "signal" : "status", e.status);
		a->pid = 0;
		agent_stop(a, 0);
	}
}

int
agent_session(Osm__GuestStart *gs, int fd)
{
	struct agent	 a;
	struct timeval	 tv = { .tv_sec = AGENT_SETUP_TIMEOUT };
	unsigned int	 cut = AGENT_CUT_OFF;
	Osm__SesError	 err = OSM__SES_ERROR__INIT;
	char		*cause = NULL, what[32];

	memset(&a, 0, sizeof a);
	a.gs = gs;
	a.ctl_fd = -1;
	/* R's copy of it goes: mig_spawn closes all but 0-2. */
	snprintf(what, sizeof what, "guest-%u-%u", gs->home, gs->pid);
	if ((a.order_fd = ctl_order_listen(what, a.order_path,
	    sizeof a.order_path, &cause)) == -1) {
		log_warnx("guest %u@%u: %s", gs->pid, gs->home, cause);
		free(cause);
		cause = NULL;
	}
	a.state = OSM__PROC_STATE__PROC_ARRIVING;
	session_init(&a.ses, fd, gs->session_key.data, RMT_MSG_MAX);
	/* Blocking, within limits: the broker accepted it non-blocking. */
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
	setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &cut, sizeof cut);
	signal(SIGPIPE, SIG_IGN);
	if (agent_hello(&a) == -1)
		log_warnx("guest %u@%u: mosd not reachable", gs->pid,
		    gs->home);
	if (agent_arrive(&a, &cause) == -1) {
		err.reason = cause;
		agent_send(&a, OSM__SES_KIND__SES_ERROR, &err.base);
		agent_fail(&a, cause);
	}
	agent_report(&a, OSM__PROC_STATE__PROC_RUNNING);

	/* Not the default loop: its own SIGCHLD handler would reap R. */
	a.loop = ev_loop_new(EVFLAG_AUTO);
	ev_io_init(&a.ses_ev, agent_session_cb, fd, EV_READ);
	a.ses_ev.data = &a;
	ev_io_start(a.loop, &a.ses_ev);
	ev_io_init(&a.notif_ev, agent_notif_cb, a.guest->listener, EV_READ);
	a.notif_ev.data = &a;
	ev_io_start(a.loop, &a.notif_ev);
	ev_signal_init(&a.sigchld, agent_sigchld_cb, SIGCHLD);
	a.sigchld.data = &a;
	ev_signal_start(a.loop, &a.sigchld);
	ev_timer_init(&a.stats, agent_stats_cb, AGENT_STATS_EVERY,
	    AGENT_STATS_EVERY);
	a.stats.data = &a;
	ev_timer_start(a.loop, &a.stats);
	ev_io_init(&a.ctl_ev, agent_ctl_cb, a.ctl_fd, EV_READ);
	a.ctl_ev.data = &a;
	if (a.ctl_fd != -1)
		ev_io_start(a.loop, &a.ctl_ev);
	ev_io_init(&a.order_ev, agent_order_cb, a.order_fd, EV_READ);
	a.order_ev.data = &a;
	if (a.order_fd != -1)
		ev_io_start(a.loop, &a.order_ev);
	ev_timer_init(&a.reconnect, agent_reconnect_cb, AGENT_RECONNECT,
	    AGENT_RECONNECT);
	a.reconnect.data = &a;
	if (a.ctl_fd == -1)
		ev_timer_start(a.loop, &a.reconnect);
	/* R may have ended before SIGCHLD was watched: look once. */
	ev_feed_signal_event(a.loop, SIGCHLD);
	ev_run(a.loop, 0);
	agent_stop(&a, 0);
}
