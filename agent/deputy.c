/*
 * The deputy: holds a migratable process P with ptrace for its whole life,
 * from before mosrun execs the program until P is gone. It runs as P's
 * owner: it can do nothing to P that P's owner could not.
 *
 * At home P runs natively and the deputy only passes P's ptrace stops
 * through. It registers P with mosd (conn.c) and takes orders for it:
 * moves (deputy-away.c, deputy-move.c) and checkpoints (deputy-ckpt.c).
 * While P is away, its stops are the forwarded calls it serves and the
 * signals sent to it (deputy-serve.c). This file is the deputy's start and
 * its loop, and calls into the others; they never call back into it.
 */
#include <sys/ptrace.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"
#include "proto/ctl.pb-c.h"

#define DEPUTY_STATS		1.0	/* seconds between reports from home */
#define DEPUTY_SILENCE		15.0	/* no word from the guest: lost */

static void
deputy_command(struct deputy *d)
{
	char	path[64];

	snprintf(path, sizeof path, "/proc/%d/comm", (int)d->pid);
	if (read_file_str(path, d->command, sizeof d->command) == -1)
		snprintf(d->command, sizeof d->command, "%s", d->o->argv[0]);
}

/* What mosd is told of P (conn.c asks). */
static void
deputy_describe(void *arg, Osm__CtlAgent *a)
{
	struct deputy	*d = arg;

	a->role = OSM__CTL_ROLE__ROLE_DEPUTY;
	a->pid = d->pid;
	a->home = d->self;
	a->where = d->state == DEPUTY_AWAY ? d->where : d->self;
	a->state = d->state == DEPUTY_HELD ? OSM__PROC_STATE__PROC_MOVING :
	    OSM__PROC_STATE__PROC_RUNNING;
	a->command = d->command;
	a->socket = d->conn.order_path;
	a->has_locked = 1;
	a->locked = d->o->locked;
	if (d->o->mem_need != 0) {
		a->has_mem_need = 1;
		a->mem_need = d->o->mem_need;
	}
	a->n_nodes = d->o->nnodes;
	a->nodes = d->o->nodes;
	a->has_cpu_permille = a->has_rss_bytes = a->has_threads = 1;
	a->cpu_permille = d->cpu_permille;
	/* away, the husk mirrors the copy's threads, one for one */
	a->threads = d->state == DEPUTY_AWAY ? d->husk.nlanes : d->threads;
	if (a->threads == 0)
		a->threads = 1;
	a->rss_bytes = d->rss;
	deputy_why_describe(d, a);
	deputy_ckpt_describe(d, a);
}

/*
 * How P does at home, every few seconds (away, the guest's reports say):
 * its recent CPU use and its resident memory.
 */
static void
deputy_stats_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct deputy	*d = w->data;
	char		 path[64], buf[128];
	uint64_t	 u, s, now = now_ms();
	unsigned long	 pages = 0;
	pid_t		*tids;
	ssize_t		 n;

	if (d->state != DEPUTY_HOME || proc_cpu_ns(d->pid, &u, &s) == -1)
		return;
	/* what it used away too: the total, as while away */
	u += d->carry_ns;
	if (d->cpu_at != 0 && now > d->cpu_at && u + s >= d->cpu_ns)
		d->cpu_permille = (u + s - d->cpu_ns) / 1000 /
		    (now - d->cpu_at);
	d->cpu_ns = u + s;
	d->cpu_at = now;
	snprintf(path, sizeof path, "/proc/%d/statm", (int)d->pid);
	if (read_file_str(path, buf, sizeof buf) == 0)
		sscanf(buf, "%*u %lu", &pages);
	d->rss = (uint64_t)pages * sysconf(_SC_PAGESIZE);
	if ((n = proc_threads(d->pid, &tids)) > 0)
		d->threads = n;
	free(tids);
	conn_report(&d->conn);
}

/* mosrun -b: where mosd's balancer would start P; home if it cannot say. */
static uint32_t
deputy_best(struct deputy *d)
{
	Osm__CtlRequest	 req = OSM__CTL_REQUEST__INIT;
	Osm__CtlReply	*r;
	uint32_t	 node = d->self;
	char		*cause = NULL;

	req.type = OSM__CTL_TYPE__CTL_BEST;
	if (d->o->mem_need != 0) {
		req.has_mem_need = 1;
		req.mem_need = d->o->mem_need;
	}
	if ((r = conn_request(&d->conn, &req, NULL, &cause)) == NULL) {
		fprintf(stderr, "mosrun: no best node: %s; running %s here\n",
		    cause, d->command);
		free(cause);
		return node;
	}
	if (r->ok && r->has_node)
		node = r->node;
	else
		fprintf(stderr, "mosrun: no best node: %s; running %s here\n",
		    r->error != NULL ? r->error : "no answer", d->command);
	ctl_reply_free(r);
	return node;
}

/* P is gone, or must go: end the deputy. */
static void __attribute__((noreturn))
deputy_exit(struct deputy *d, int code)
{
	deputy_ckpt_ended(d);
	conn_close(&d->conn);
	exit(code);
}

/*
 * A checkpoint, now, asked for by reason (timer, request; the signal of
 * --checkpoint-on marks itself); an order's connection fd is answered
 * when done.
 */
static void
deputy_checkpoint(struct deputy *d, int fd, const char *reason)
{
	char	*cause = NULL;

	d->ckpt_reason = reason;
	if (deputy_ckpt_take(d, fd, &cause) == -1) {
		deputy_away_lost(d, cause);
		free(cause);
	}
}

static void
deputy_ckpt_timer_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	deputy_checkpoint(w->data, -1, "timer");
}

/* The signal of --checkpoint-on came (deputy_hold_pass). */
static void
deputy_ckpt_soon_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	deputy_checkpoint(w->data, -1, "signal");
}

/* An order from mosd (conn.c takes it); the reply says how it went. */
static void
deputy_order(void *arg, Osm__CtlRequest *req, int fd)
{
	struct deputy	*d = arg;
	Osm__CtlReply	 reply = OSM__CTL_REPLY__INIT;
	char		*cause = NULL;

	if (!req->has_pid || req->pid != (uint32_t)d->pid)
		xasprintf(&reply.error, "this deputy holds process %d",
		    (int)d->pid);
	else if (req->type == OSM__CTL_TYPE__CTL_CHECKPOINT) {
		/* answered once written */
		deputy_checkpoint(d, fd, "request");
		return;
	} else if (req->type != OSM__CTL_TYPE__CTL_MIGRATE || !req->has_node)
		reply.error = xstrdup("the deputy takes migrate and "
		    "checkpoint orders only");
	else {
		d->move = req->has_move ? req->move : OSM__MOVE_MODE__MOVE_DEFAULT;
		reply.ok = deputy_away_move(d, req->node, 0, &cause) == 0;
		d->move = OSM__MOVE_MODE__MOVE_DEFAULT;
		reply.error = cause;
		conn_report(&d->conn);
	}
	ctl_order_answer(fd, &reply);
	free(reply.error);
}

/* A ptrace stop or the end of P's thread tid, while P is at home. */
static void
deputy_home_event(struct deputy *d, pid_t tid, int status)
{
	int		sig = 0, event = status >> 16;
	unsigned long	msg;

	if (!WIFSTOPPED(status))
		return;
	if (event == PTRACE_EVENT_EXEC) {
		deputy_clock_exec(d);
		deputy_command(d);
		conn_report(&d->conn);
	} else if (event == PTRACE_EVENT_CLONE) {
		if (ptrace(PTRACE_GETEVENTMSG, tid, 0, &msg) == 0)
			deputy_clock_clone(d, (pid_t)msg);
	} else if (event == PTRACE_EVENT_STOP) {
		/* A group stop: stay stopped, as the shell expects. */
		if (WSTOPSIG(status) != SIGTRAP) {
			ptrace(PTRACE_LISTEN, tid, 0, 0);
			return;
		}
		/* a new thread's first stop, maybe before its maker's event */
		deputy_clock_clone(d, 0);
	} else if (event == 0)
		sig = deputy_hold_pass(d, WSTOPSIG(status));
	ptrace(PTRACE_CONT, tid, 0, sig);
}

static void
deputy_sigchld_cb(struct ev_loop *loop, ev_signal *w, int revents)
{
	struct deputy	*d = w->data;
	char		*cause = NULL;
	int		 status;
	pid_t		 r;

	if (d->gone) {
		log_debug("process %d ended", (int)d->pid);
		deputy_exit(d, 0);
	}
	/* Every thread of P is ours to wait for (__WALL); only P's end ends us. */
	while ((r = waitpid(-1, &status, WNOHANG | __WALL)) > 0) {
		if (WIFEXITED(status) || WIFSIGNALED(status)) {
			if (r != d->pid)
				continue;	/* a thread of P's ended */
			log_debug("process %d ended", (int)d->pid);
			if (d->state == DEPUTY_AWAY)
				deputy_away_ended(d);
			deputy_exit(d, 0);
		}
		if (d->state != DEPUTY_AWAY)
			deputy_home_event(d, r, status);
		else if (deputy_serve_stop(d, r, status, &cause) == -1) {
			deputy_away_lost(d, cause);
			free(cause);
			cause = NULL;
		} else
			deputy_away_drain(d);
	}
}

/* The watchers of a deputy's life; the session's start with a move. */
static void
deputy_watch(struct deputy *d)
{
	/* Not the default loop: its own SIGCHLD handler would reap P's stops. */
	d->loop = ev_loop_new(EVFLAG_AUTO);
	ev_signal_init(&d->sigchld, deputy_sigchld_cb, SIGCHLD);
	d->sigchld.data = d;
	ev_signal_start(d->loop, &d->sigchld);
	ev_timer_init(&d->stats, deputy_stats_cb, DEPUTY_STATS, DEPUTY_STATS);
	d->stats.data = d;
	ev_timer_start(d->loop, &d->stats);
	ev_io_init(&d->ses_ev, deputy_away_session_cb, -1, EV_READ);
	d->ses_ev.data = d;
	ev_prepare_init(&d->ses_pending, deputy_away_pending_cb);
	d->ses_pending.data = d;
	ev_prepare_start(d->loop, &d->ses_pending);
	ev_unref(d->loop);	/* it alone does not keep the loop running */
	ev_timer_init(&d->ses_timer, deputy_away_silence_cb, DEPUTY_SILENCE,
	    DEPUTY_SILENCE);
	d->ses_timer.data = d;
	ev_timer_init(&d->ckpt_timer, deputy_ckpt_timer_cb, d->o->ckpt_every,
	    d->o->ckpt_every);
	d->ckpt_timer.data = d;
	if (d->o->ckpt_every > 0)
		ev_timer_start(d->loop, &d->ckpt_timer);
	ev_timer_init(&d->ckpt_soon, deputy_ckpt_soon_cb, 0, 0);
	d->ckpt_soon.data = d;
	conn_start(&d->conn, d->loop);
	signal(SIGPIPE, SIG_IGN);
}

/*
 * The deputy's log: syslog, or a file named by OSM_DEPUTY_LOG (the lab
 * has no syslog); OSM_DEPUTY_DEBUG adds every forwarded call.
 */
static void
deputy_log(struct deputy *d)
{
	const char	*env;
	int		 fd;

	if ((env = getenv("OSM_DEPUTY_LOG")) != NULL && (fd = open(env,
	    O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600)) != -1) {
		d->log_fd = fd;
		log_init(1, "mosrun");
		log_setfd(fd);	/* not P's stderr, which the deputy shares */
	} else
		log_init(0, "mosrun");
	log_setverbose(getenv("OSM_DEPUTY_DEBUG") != NULL);
}

/*
 * Runs in the grandchild of mosrun (pid is mosrun, about to exec). Writes
 * one byte on sync once P is held and registered; on failure says why on
 * stderr and exits, and mosrun, reading nothing, gives up.
 */
int
deputy_main(const struct deputy_opts *o, pid_t pid, int sync)
{
	struct deputy	 d;
	char		*cause = NULL, what[32], who[32];
	uint64_t	 cpu_sys;
	uint32_t	 start;
	int		 null, status;

	memset(&d, 0, sizeof d);
	d.o = o;
	d.pid = pid;
	d.log_fd = -1;
	d.ses.fd = -1;
	d.state = DEPUTY_HOME;
	snprintf(d.command, sizeof d.command, "%s", o->argv[0]);
	/* Out of the terminal's way: ^C at P must not reach us. */
	setsid();
	if ((null = open("/dev/null", O_RDWR)) != -1) {
		dup2(null, 0);
		dup2(null, 1);
		close(null);
	}
	deputy_log(&d);
	snprintf(what, sizeof what, "deputy-%d", (int)pid);
	snprintf(who, sizeof who, "process %d", (int)pid);
	if (deputy_hold_seize(&d, &cause) == -1) {
		fprintf(stderr, "mosrun: %s\n", cause);
		return 1;
	}
	if (conn_init(&d.conn, o->sock, who, what, deputy_describe,
	    deputy_order, &d, &cause) == -1 ||
	    conn_hello(&d.conn, &d.self, &cause) == -1) {
		fprintf(stderr, "mosrun: %s\n", cause);
		ptrace(PTRACE_DETACH, pid, 0, 0);
		return 1;
	}
	deputy_ckpt_init(&d);
	deputy_watch(&d);

	if (write(sync, "", 1) != 1)
		deputy_exit(&d, 1);
	close(sync);

	if (o->recover != NULL) {
		/* mosrun -R: P stops itself for us to make it the process. */
		if (deputy_ckpt_recover(&d) == -1)
			deputy_exit(&d, 1);
		deputy_command(&d);
		d.cpu_at = now_ms();
		goto run;
	}
	/* The exec stop: the program is loaded and has not run yet. */
	for (;;) {
		while (waitpid(pid, &status, __WALL) == -1 && errno == EINTR)
			;
		if (!WIFSTOPPED(status))
			deputy_exit(&d, 0);	/* exec failed: mosrun said */
		if ((status >> 16) == PTRACE_EVENT_EXEC)
			break;
		deputy_home_event(&d, pid, status);
	}
	deputy_command(&d);
	d.cpu_at = now_ms();	/* the program starts: its CPU use counts */
	proc_cpu_ns(pid, &d.cpu_exec_ns, &cpu_sys);
	d.cpu_exec_ns += cpu_sys;
	start = o->best ? deputy_best(&d) : o->start_node;
	if (start != 0 && start != d.self) {
		if (deputy_hold_to_entry(&d, &cause) == -1 ||
		    deputy_away_move(&d, start, 1, &cause) == -1) {
			fprintf(stderr, "mosrun: cannot start %s on node %u: "
			    "%s; running it here\n", d.command, start, cause);
			free(cause);
		}
	} else
		ptrace(PTRACE_CONT, pid, 0, 0);
run:
	conn_report(&d.conn);
	/* From now on the process's messages go through P's own stderr. */
	if (d.log_fd != -1)
		dup2(d.log_fd, 2);
	else if ((null = open("/dev/null", O_RDWR)) != -1) {
		dup2(null, 2);
		close(null);
	}
	ev_run(d.loop, 0);
	deputy_exit(&d, 0);
}
