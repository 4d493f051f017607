/*
 * mosd-guest, the guest agent. For every process accepted from another
 * node mosd starts one (mosd/guests.c), with the session socket on fd 3
 * and a pipe carrying GuestStart on fd 4. It reads its start message,
 * becomes the guest uid mosd chose for it for good — before it reads a
 * byte from the network — and then serves the session: the process that
 * arrives is restored into a fresh child R (guest-move.c), R's forwarded
 * calls go home (guest-serve.c), signals sent to it at home come here
 * (guest-signal.c), checkpoints are taken here (guest-ckpt.c), and R's
 * end goes home. This file is the agent's start and its loop.
 */
#include <sys/prctl.h>
#include <sys/resource.h>

#include <linux/capability.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include <netinet/in.h>
#include <netinet/tcp.h>

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"
#include "proto/ctl.pb-c.h"
#include "proto/migrate.pb-c.h"

#define GUEST_SETUP_TIMEOUT	60	/* seconds, for the image to arrive */
#define GUEST_STATS_EVERY	2.0	/* seconds between SesStats */
/*
 * Milliseconds our stats may go unacknowledged before the session counts
 * as broken (TCP_USER_TIMEOUT), and R with it: by then its home, 15 s
 * without word from us, has given it up and gone on from a checkpoint
 * or killed it; a copy nobody serves must not run on here.
 */
#define GUEST_CUT_OFF		20000

/* What mosd, which counts guests, is told of R (conn.c asks). */
static void
guest_describe(void *arg, Osm__CtlAgent *c)
{
	struct guest	*g = arg;

	c->role = OSM__CTL_ROLE__ROLE_GUEST;
	c->pid = g->gs->pid;
	c->home = g->gs->home;
	c->where = g->gs->self;
	c->state = g->state;
	c->command = g->gs->command;
	if (g->conn.order_fd != -1)
		c->socket = g->conn.order_path;
	if (g->pid != 0) {
		c->has_local_pid = 1;
		c->local_pid = g->pid;
	}
}

static void
guest_report(struct guest *g, Osm__ProcState state)
{
	g->state = state;
	conn_report(&g->conn);
}

/*
 * An order from mosd: its owner expels the guests, or its memory guard
 * wants this one gone (the reason says: then R goes home frozen, not
 * live, guest-move.c). The deputy calls R home (it
 * settles the call it runs for R first), so R is not frozen here while
 * its call may have run at home.
 */
static void
guest_order(void *arg, Osm__CtlRequest *req, int fd)
{
	struct guest	*g = arg;
	Osm__CtlReply	 reply = OSM__CTL_REPLY__INIT;
	Osm__SesError	 leave = OSM__SES_ERROR__INIT;

	if (req->type != OSM__CTL_TYPE__CTL_MIGRATE || !req->has_node ||
	    req->node != 0 || !req->has_pid || req->pid != g->gs->pid)
		reply.error = "a guest can only be sent home";
	else if (!g->expelled) {
		if (req->reason != NULL && req->reason[0] != '\0') {
			xasprintf(&leave.reason, "%.200s", req->reason);
			g->short_of_memory = 1;
		} else
			xasprintf(&leave.reason, "node %u's owner expels its "
			    "guests", g->gs->self);
		g->expelled = guest_ses_send(g, OSM__SES_KIND__SES_LEAVE,
		    &leave.base) == 0;
		free(leave.reason);
		if (!g->expelled)
			reply.error = "the home went away";
	}
	reply.ok = reply.error == NULL;
	ctl_order_answer(fd, &reply);
}

static void
guest_session_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct guest	*g = w->data;
	const uint8_t	*body;
	uint8_t		*own;
	size_t		 len;
	uint16_t	 kind;
	char		*cause = NULL;
	int		 rc;

	/* EV_CUSTOM: fed by guest_pending_cb, nothing to read */
	if (!(revents & EV_CUSTOM) && session_fill(&g->ses, &cause) == -1)
		guest_ses_fail(g, cause != NULL ? cause :
		    "the home closed the session");
	/* bytes read ahead are decrypted where their window keeps them */
	while ((rc = session_take(&g->ses, OSM__SES_KIND__SES_READ_DATA,
	    &kind, &own, &body, &len, &cause)) == 1) {
		switch (kind) {
		case OSM__SES_KIND__SES_REPLY:
			guest_serve_reply(g, body, len);
			break;
		case OSM__SES_KIND__SES_SIGNAL:
			guest_signal_from_home(g, body, len);
			break;
		case OSM__SES_KIND__SES_CHECKPOINT:
			guest_files_replaced(g, body, len);
			g->ckpt_wanted = 1;
			guest_ckpt(g, 0);
			break;
		case OSM__SES_KIND__SES_FILE_ANSWER:
			guest_serve_file(g, body, len);
			break;
		case OSM__SES_KIND__SES_THREAD_MADE:
			guest_thread_made(g, body, len);
			break;
		case OSM__SES_KIND__SES_IDENTITY:
			guest_serve_identity(g, body, len);
			break;
		case OSM__SES_KIND__SES_FD_INFO:
			guest_serve_fd_info(g, body, len);
			break;
		case OSM__SES_KIND__SES_READ_DATA:
			guest_serve_read_data(g, own, len);
			break;
		case OSM__SES_KIND__SES_MAY_LEAVE:
			guest_move_may_leave(g);
			break;
		case OSM__SES_KIND__SES_COME_HOME:
			g->home_how = guest_files_replaced(g, body, len);
			guest_move_home(g, g->homeward ? "it must" :
			    "called home");
			break;
		case OSM__SES_KIND__SES_KILL:
			log_info("%s killed at home", g->conn.who);
			kill(g->pid, SIGKILL);
			g->pid = 0;
			guest_ses_stop(g, 0);
		default:
			guest_ses_fail(g, "unexpected message from home");
		}
	}
	if (rc == -1)
		guest_ses_fail(g, cause);
}

/* R's CPU time here, plus what it used before it came. */
static void
guest_cpu(struct guest *g, uint64_t *user_ns, uint64_t *sys_ns)
{
	proc_cpu_ns(g->pid, user_ns, sys_ns);
	*user_ns += g->base.utime_ns;
	*sys_ns += g->base.stime_ns;
}

static void
guest_stats_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct guest	*g = w->data;
	Osm__SesStats	 s = OSM__SES_STATS__INIT;
	char		 path[64], buf[128];
	unsigned long	 pages = 0;

	guest_cpu(g, &s.cpu_user_ns, &s.cpu_sys_ns);
	snprintf(path, sizeof path, "/proc/%d/statm", (int)g->pid);
	if (read_file_str(path, buf, sizeof buf) == 0)
		sscanf(buf, "%*u %lu", &pages);
	s.rss_bytes = (uint64_t)pages * sysconf(_SC_PAGESIZE);
	s.stopped = g->state == OSM__PROC_STATE__PROC_STOPPED;
	if (guest_ses_send(g, OSM__SES_KIND__SES_STATS, &s.base) == -1)
		guest_ses_fail(g, "the home went away");
}

/*
 * Was R's SIGKILL the out-of-memory killer's? This node's cgroup counts
 * its kills: one more than when R came is R (its home kills R only
 * through us, and we say so; nobody but root here may signal a guest
 * uid).
 */
static int
guest_oom_killed(struct guest *g)
{
	uint64_t	n;

	return proc_oom_kills(g->gs->memory_cgroup, &n) == 0 &&
	    n > g->oom_kills;
}

static double
guest_tv_ms(const struct timeval *tv)
{
	return tv->tv_sec * 1e3 + tv->tv_usec / 1e3;
}

/*
 * What R's time here cost this node, R's part and ours apart (its rusage
 * from wait4, ours so far): where a program runs slower away than at
 * home, which of the two spends the difference (bench/real).
 */
static void
guest_log_rusage(struct guest *g, const struct rusage *ru)
{
	struct rusage	self;

	if (getrusage(RUSAGE_SELF, &self) == -1)
		memset(&self, 0, sizeof self);
	log_info("%s used here %.1f ms user, %.1f ms system, %ld minor "
	    "faults, %ld waits, %ld preemptions; its guest agent %.1f ms "
	    "user, %.1f ms system, %ld minor faults, %ld waits", g->conn.who,
	    guest_tv_ms(&ru->ru_utime), guest_tv_ms(&ru->ru_stime),
	    ru->ru_minflt, ru->ru_nvcsw, ru->ru_nivcsw,
	    guest_tv_ms(&self.ru_utime), guest_tv_ms(&self.ru_stime),
	    self.ru_minflt, self.ru_nvcsw);
}

/* R stopped, continued or ended: the home hears it. */
static void
guest_sigchld_cb(struct ev_loop *loop, ev_signal *w, int revents)
{
	struct guest	*g = w->data;
	Osm__SesExit	 e = OSM__SES_EXIT__INIT;
	Osm__SesSignal	 s = OSM__SES_SIGNAL__INIT;
	static const struct remote_stats none;
	const struct remote_stats *st;
	struct rusage	 ru;
	int		 status;

	while (wait4(g->pid, &status, WNOHANG | WUNTRACED | WCONTINUED,
	    &ru) > 0) {
		if (WIFSTOPPED(status)) {
			guest_report(g, OSM__PROC_STATE__PROC_STOPPED);
			s.signo = WSTOPSIG(status);
			guest_ses_send(g, OSM__SES_KIND__SES_STOPPED, &s.base);
			continue;
		}
		if (WIFCONTINUED(status)) {
			guest_report(g, OSM__PROC_STATE__PROC_RUNNING);
			continue;
		}
		e.signaled = WIFSIGNALED(status);
		e.status = e.signaled ? WTERMSIG(status) : WEXITSTATUS(status);
		e.has_core = 1;
		e.core = e.signaled && WCOREDUMP(status);
		e.has_oom_killed = 1;
		e.oom_killed = e.signaled && e.status == SIGKILL &&
		    guest_oom_killed(g);
		/* R is reaped: its CPU clock is gone, its rusage says it */
		e.cpu_user_ns = g->base.utime_ns + ru.ru_utime.tv_sec *
		    1000000000ULL + ru.ru_utime.tv_usec * 1000ULL;
		e.cpu_sys_ns = g->base.stime_ns + ru.ru_stime.tv_sec *
		    1000000000ULL + ru.ru_stime.tv_usec * 1000ULL;
		/* the offsets R leaves, before its end */
		guest_ses_settle(g);
		guest_ses_send(g, OSM__SES_KIND__SES_EXIT, &e.base);
		st = g->remote != NULL ? remote_stats(g->remote) : &none;
		if (e.oom_killed)
			log_warnx("%s killed by this node's out-of-memory "
			    "killer", g->conn.who);
		else
			log_info("%s ended: %s %d; calls %llu sent home (%llu "
			    "behind), %llu CPU clocks (%llu times and "
			    "getrusage) and %llu identity "
			    "answered here (%llu in R), %llu reads from %llu "
			    "read ahead "
			    "(%llu in R), "
			    "%llu from what it wrote, "
			    "%llu mappings, %llu files opened here (%llu "
			    "not, %llu without the home, %llu closed before "
			    "the home opened it), %llu calls on "
			    "them here (%llu in R), "
			    "%llu unlinks here, %llu writes not "
			    "behind for room at home, %llu writes to pipes "
			    "and devices gathered, %llu writes behind in R, "
			    "%llu calls waited for at home, %llu fstats "
			    "answered from an open's, %llu seeks and terminal "
			    "ioctls of files answered here, %llu stats answered "
			    "again, %llu stats made by the "
			    "agent itself, %llu calls behind sent with the "
			    "next message (%llu a moment later)",
			    g->conn.who, e.signaled ? "signal" : "status",
			    e.status,
			    (unsigned long long)st->forwarded,
			    (unsigned long long)st->behind,
			    (unsigned long long)st->emulated,
			    (unsigned long long)st->usage,
			    (unsigned long long)(st->ident + st->ident_in_r),
			    (unsigned long long)st->ident_in_r,
			    (unsigned long long)st->served,
			    (unsigned long long)st->fetches,
			    (unsigned long long)st->in_r,
			    (unsigned long long)st->held,
			    (unsigned long long)st->mapped,
			    (unsigned long long)st->opened,
			    (unsigned long long)st->refused,
			    (unsigned long long)st->opened_alone,
			    (unsigned long long)st->opened_unseen,
			    (unsigned long long)st->local,
			    (unsigned long long)st->local_in_r,
			    (unsigned long long)st->unlinked,
			    (unsigned long long)st->at_once,
			    (unsigned long long)st->piped,
			    (unsigned long long)st->w_in_r,
			    (unsigned long long)st->waited,
			    (unsigned long long)st->known,
			    (unsigned long long)st->here,
			    (unsigned long long)st->stats_again,
			    (unsigned long long)g->lookup.made,
			    (unsigned long long)g->ses.nheld,
			    (unsigned long long)g->held_late);
		guest_log_rusage(g, &ru);
		guest_ses_linger(g);
		g->pid = 0;
		guest_ses_stop(g, 0);
	}
}

/*
 * Before the loop waits: what a linear receive (the restore, a checkpoint,
 * the way home given up) read past the message it wanted lies in the
 * session's buffer, where ses_ev cannot see it. Taken as if the fd had
 * said so, without reading it (it blocks).
 */
static void
guest_pending_cb(struct ev_loop *loop, ev_prepare *w, int revents)
{
	struct guest	*g = w->data;

	if (g->ses.fd != -1 && ev_is_active(&g->ses_ev) &&
	    session_ready(&g->ses))
		ev_feed_event(loop, &g->ses_ev, EV_CUSTOM);
}

/* The loop's watchers, once R runs. */
static void
guest_watch(struct guest *g, int fd)
{
	/* Not the default loop: its own SIGCHLD handler would reap R. */
	g->loop = ev_loop_new(EVFLAG_AUTO);
	ev_io_init(&g->ses_ev, guest_session_cb, fd, EV_READ);
	g->ses_ev.data = g;
	ev_io_start(g->loop, &g->ses_ev);
	ev_prepare_init(&g->ses_pending, guest_pending_cb);
	g->ses_pending.data = g;
	ev_prepare_start(g->loop, &g->ses_pending);
	ev_unref(g->loop);	/* it alone does not keep the loop running */
	ev_io_init(&g->notif_ev, guest_serve_notif_cb,
	    remote_listener(g->remote), EV_READ);
	g->notif_ev.data = g;
	ev_io_start(g->loop, &g->notif_ev);
	ev_signal_init(&g->sigchld, guest_sigchld_cb, SIGCHLD);
	g->sigchld.data = g;
	ev_signal_start(g->loop, &g->sigchld);
	ev_timer_init(&g->stats, guest_stats_cb, GUEST_STATS_EVERY,
	    GUEST_STATS_EVERY);
	g->stats.data = g;
	ev_timer_start(g->loop, &g->stats);
	g->near_cpu = -1;
	conn_start(&g->conn, g->loop);
	/* R may have ended before SIGCHLD was watched: look once. */
	ev_feed_signal_event(g->loop, SIGCHLD);
}

/* Serve one guest on the session socket fd, as the guest uid. */
static int
guest_serve(Osm__GuestStart *gs, int fd, int opener, int devfd)
{
	struct guest	 g;
	struct timeval	 tv = { .tv_sec = GUEST_SETUP_TIMEOUT };
	unsigned int	 cut = GUEST_CUT_OFF;
	Osm__SesError	 err = OSM__SES_ERROR__INIT;
	char		*cause = NULL, what[32], who[32];

	memset(&g, 0, sizeof g);
	g.gs = gs;
	g.opener = opener;
	g.devfd = devfd;
	g.state = OSM__PROC_STATE__PROC_ARRIVING;
	snprintf(what, sizeof what, "guest-%u-%u", gs->home, gs->pid);
	snprintf(who, sizeof who, "guest %u@%u", gs->pid, gs->home);
	/* Without an order socket it cannot be expelled, but it can run. */
	if (conn_init(&g.conn, gs->socket, who, what, guest_describe,
	    guest_order, &g, &cause) == -1) {
		log_warnx("%s: %s", who, cause);
		free(cause);
		cause = NULL;
	}
	session_init(&g.ses, fd, gs->session_key.data, RMT_MSG_MAX);
	/* Blocking, within limits: the broker accepted it non-blocking. */
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
	setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &cut, sizeof cut);
	signal(SIGPIPE, SIG_IGN);
	if (conn_hello(&g.conn, NULL, &cause) == -1) {
		log_warnx("%s: mosd not reachable: %s", who, cause);
		free(cause);
		cause = NULL;
	}
	proc_oom_kills(gs->memory_cgroup, &g.oom_kills);
	if (guest_move_arrive(&g, &cause) == -1) {
		err.reason = cause;
		/*
		 * Then read what the home still sends until it hangs up:
		 * closed under its writes, the connection would be reset and
		 * the home would hear "Connection reset", not why.
		 */
		if (guest_ses_send(&g, OSM__SES_KIND__SES_ERROR,
		    &err.base) == 0)
			guest_ses_linger(&g);
		guest_ses_fail(&g, cause);
	}
	guest_report(&g, OSM__PROC_STATE__PROC_RUNNING);
	guest_watch(&g, fd);
	ev_run(g.loop, 0);
	guest_ses_stop(&g, 0);
	return 0;
}

/*
 * Become the guest uid for good: no groups, no capabilities, no way back.
 * The bounding set goes first, CAP_SETPCAP (which dropping needs) last;
 * the uid change then empties the rest, so R has none even to inherit.
 */
static int
guest_drop(uid_t uid, char **cause)
{
	int	c;

	for (c = 0; prctl(PR_CAPBSET_READ, c, 0, 0, 0) >= 0; c++)
		if (c != CAP_SETPCAP && prctl(PR_CAPBSET_DROP, c, 0, 0, 0) == -1)
			break;
	if (prctl(PR_CAPBSET_READ, c, 0, 0, 0) >= 0 ||
	    prctl(PR_CAPBSET_DROP, CAP_SETPCAP, 0, 0, 0) == -1) {
		xasprintf(cause, "cannot empty the capability bounding set: %s",
		    strerror(errno));
		return -1;
	}
	if (setgroups(0, NULL) == -1 || setresgid(uid, uid, uid) == -1 ||
	    setresuid(uid, uid, uid) == -1) {
		xasprintf(cause, "cannot become guest uid %u: %s",
		    (unsigned)uid, strerror(errno));
		return -1;
	}
	if (setuid(0) != -1) {
		xasprintf(cause, "could become root again after dropping");
		return -1;
	}
	/* A set*id process is not dumpable: we must ptrace our child. */
	if (prctl(PR_SET_DUMPABLE, 1, 0, 0, 0) == -1 ||
	    prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == -1) {
		xasprintf(cause, "prctl: %s", strerror(errno));
		return -1;
	}
	return 0;
}

static void __attribute__((noreturn))
usage(void)
{
	fprintf(stderr, "usage: mosd-guest [-d] [-v]\n"
	    "The guest agent of one process that another node moved here.\n"
	    "mosd starts it with a socket on descriptor 4, where its start\n"
	    "message and the session come; it is not for running by hand\n"
	    "(mosd(8)).\n");
	exit(2);
}

/*
 * The start message on fd (a u32 length, then GuestStart), the session's
 * socket sent with its first bytes, made our descriptor 3. 0 at the end
 * of the stream: mosd ended before it needed us (we were its spare).
 */
static int
guest_start_read(int fd, uint8_t **buf, size_t *len)
{
	int	ses = -1, r;

	if ((r = ctl_recv_record(fd, OSM_GUEST_START_MAX, buf, len,
	    &ses)) == 0)
		return 0;
	if (r == -1)
		fatal("start message");
	if (ses == -1)
		fatalx("start message: without the session");
	/* received close-on-exec; dup2 clears it, fcntl where it is 3 */
	if (ses != 3 ? dup2(ses, 3) == -1 || close(ses) == -1 :
	    fcntl(ses, F_SETFD, 0) == -1)
		fatal("start message: the session");
	return 1;
}

/*
 * The out-of-memory killer takes guests before any process of the node's
 * own (and never mosd, where it could shield itself, mosd/main.c): this
 * agent, the opener it forks and the R it makes, with their home to go on
 * from (a checkpoint, docs/RELIABILITY.md). Written while we are root
 * with CAP_SYS_RESOURCE (mosd passes it on only if it had it), the value
 * is also the floor none of them can go below; without, the floor stays
 * the node's 0, the score a guest could lower itself to.
 */
static void
guest_oom_first(void)
{
	char	 v[16];

	snprintf(v, sizeof v, "%d", GUEST_OOM_SCORE_ADJ);
	if (write_file_str("/proc/self/oom_score_adj", v) == -1)
		log_warn("/proc/self/oom_score_adj");
}

int
main(int argc, char **argv)
{
	Osm__GuestStart	*gs;
	uint8_t		*buf;
	size_t		 len;
	char		*cause = NULL;
	int		 i, debug = 0, rc, opener, devfd;

	for (i = 1; i < argc; i++) {
		if (strcmp(argv[i], "-d") == 0)
			debug = 1;
		else if (strcmp(argv[i], "-v") == 0)
			log_setverbose(1);
		else if (strcmp(argv[i], "-q") != 0)
			usage();
	}
	if (fcntl(4, F_GETFD) == -1)
		usage();
	log_init(debug, "mosd-guest");
	/* What a spare can do before it is needed, as root. */
	guest_oom_first();
	crypto_aead_prepare();
	if (guest_start_read(4, &buf, &len) == 0)
		return 0;
	close(4);
	gs = osm__guest_start__unpack(NULL, len, buf);
	explicit_bzero(buf, len);
	free(buf);
	if (gs == NULL || gs->session_key.len != SESSION_KEY_LEN)
		fatalx("malformed start message");
	/* the owner's opener of shared files, forked while we are root */
	if ((opener = guest_open_start(gs, &cause)) == -1 && cause != NULL) {
		log_info("guest %u@%u: no files opened here: %s", gs->pid,
		    gs->home, cause);
		free(cause);
		cause = NULL;
	}
	/*
	 * For post-copy arrivals: a userfaultfd that takes the kernel's
	 * faults too needs a privilege we drop, or this device, opened
	 * while we are root (docs/REMOTE.md, "Post-copy").
	 */
	devfd = open("/dev/userfaultfd", O_RDWR | O_CLOEXEC);
	if (guest_drop(gs->guest_uid, &cause) == -1)
		fatalx("%s", cause);
	rc = guest_serve(gs, 3, opener, devfd);
	explicit_bzero(gs->session_key.data, gs->session_key.len);
	osm__guest_start__free_unpacked(gs, NULL);
	return rc;
}
