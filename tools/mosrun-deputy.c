/*
 * The deputy agent: holds a migratable process P with ptrace for its whole
 * life, from before mosrun execs the program until P is gone.
 *
 * At home P runs natively and the deputy only passes P's ptrace stops
 * through. It registers P with mosd and takes orders for it on a socket of
 * its own; moving P away and back and serving it while away is in
 * mosrun-away.c. The deputy runs as P's owner: it can do nothing to P that
 * P's owner could not.
 */
#include <sys/ptrace.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/user.h>
#include <sys/wait.h>

#include <linux/auxvec.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mosrun.h"
#include "proto/ctl.pb-c.h"

#define DEPUTY_RECONNECT	1.0	/* seconds between tries to reach mosd */
#define DEPUTY_STATS		1.0	/* seconds between reports from home */
#define DEPUTY_ORDER_TIMEOUT	5	/* seconds to read an order */

#define DEPUTY_OPTIONS	(PTRACE_O_TRACEEXEC | PTRACE_O_TRACESYSGOOD)

static void	deputy_connect_cb(struct ev_loop *, ev_timer *, int);

/*
 * P's trace options: exec events, syscall stops told apart, and while
 * away, P killed with us: a husk cannot live on without its deputy.
 */
int
deputy_options(struct deputy *d, char **cause)
{
	long	opts = DEPUTY_OPTIONS;

	if (d->state == DEPUTY_AWAY)
		opts |= PTRACE_O_EXITKILL;
	if (ptrace(PTRACE_SETOPTIONS, d->pid, 0, opts) == -1) {
		if (cause != NULL)
			xasprintf(cause, "PTRACE_SETOPTIONS: %s",
			    strerror(errno));
		return -1;
	}
	return 0;
}

static void
deputy_command(struct deputy *d)
{
	char	path[64];

	snprintf(path, sizeof path, "/proc/%d/comm", (int)d->pid);
	if (read_file_str(path, d->command, sizeof d->command) == -1)
		snprintf(d->command, sizeof d->command, "%s", d->o->argv[0]);
}

static void
deputy_agent(struct deputy *d, Osm__CtlAgent *a)
{
	a->role = OSM__CTL_ROLE__ROLE_DEPUTY;
	a->pid = d->pid;
	a->home = d->self;
	a->where = d->state == DEPUTY_HOME ? d->self : d->where;
	a->state = d->task != NULL && d->state == DEPUTY_HOME ?
	    OSM__PROC_STATE__PROC_MOVING : OSM__PROC_STATE__PROC_RUNNING;
	a->command = d->command;
	a->socket = d->order_path;
	a->has_locked = 1;
	a->locked = d->o->locked;
	if (d->o->mem_need != 0) {
		a->has_mem_need = 1;
		a->mem_need = d->o->mem_need;
	}
	a->has_cpu_permille = a->has_rss_bytes = 1;
	a->cpu_permille = d->cpu_permille;
	a->rss_bytes = d->rss;
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

	if (d->state != DEPUTY_HOME || proc_cpu_ns(d->pid, &u, &s) == -1)
		return;
	if (d->cpu_at != 0 && now > d->cpu_at && u + s >= d->cpu_ns)
		d->cpu_permille = (u + s - d->cpu_ns) / 1000 /
		    (now - d->cpu_at);
	d->cpu_ns = u + s;
	d->cpu_at = now;
	snprintf(path, sizeof path, "/proc/%d/statm", (int)d->pid);
	if (read_file_str(path, buf, sizeof buf) == 0)
		sscanf(buf, "%*u %lu", &pages);
	d->rss = (uint64_t)pages * sysconf(_SC_PAGESIZE);
	deputy_report(d);
}

static void
deputy_ctl_closed(struct deputy *d)
{
	if (d->ctl_fd == -1)
		return;
	ev_io_stop(d->loop, &d->ctl_ev);
	close(d->ctl_fd);
	d->ctl_fd = -1;
	ev_timer_again(d->loop, &d->reconnect);
}

/* Tell mosd where P is and how it does. */
void
deputy_report(struct deputy *d)
{
	Osm__CtlRequest	 req = OSM__CTL_REQUEST__INIT;
	Osm__CtlAgent	 a = OSM__CTL_AGENT__INIT;
	Osm__CtlReply	*r;
	char		*cause;

	if (d->ctl_fd == -1)
		return;
	deputy_agent(d, &a);
	req.type = OSM__CTL_TYPE__CTL_AGENT_STATUS;
	req.agent = &a;
	if ((r = ctl_request(d->ctl_fd, &req, NULL, &cause)) == NULL) {
		log_warnx("process %d: mosd: %s", (int)d->pid, cause);
		free(cause);
		deputy_ctl_closed(d);
		return;
	}
	if (!r->ok)
		log_warnx("process %d: mosd: %s", (int)d->pid, r->error);
	ctl_reply_free(r);
}

/* (Re)connect to mosd and present P. */
static int
deputy_hello(struct deputy *d, char **cause)
{
	Osm__CtlRequest	 req = OSM__CTL_REQUEST__INIT;
	Osm__CtlAgent	 a = OSM__CTL_AGENT__INIT;
	Osm__CtlReply	*r;
	int		 fd;

	if ((fd = ctl_connect(d->o->sock, CTL_TIMEOUT_SEC, cause)) == -1)
		return -1;
	deputy_agent(d, &a);
	req.type = OSM__CTL_TYPE__CTL_AGENT_HELLO;
	req.agent = &a;
	if ((r = ctl_request(fd, &req, NULL, cause)) == NULL) {
		close(fd);
		return -1;
	}
	if (!r->ok) {
		xasprintf(cause, "mosd refused: %s", r->error);
		ctl_reply_free(r);
		close(fd);
		return -1;
	}
	d->self = r->self;
	ctl_reply_free(r);
	d->ctl_fd = fd;
	return 0;
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
	if ((r = ctl_request(d->ctl_fd, &req, NULL, &cause)) == NULL) {
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

static void
deputy_connect_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct deputy	*d = w->data;
	char		*cause;

	if (d->ctl_fd != -1)
		return;
	if (deputy_hello(d, &cause) == -1) {
		log_debug("process %d: mosd: %s", (int)d->pid, cause);
		free(cause);
		return;
	}
	ev_timer_stop(loop, w);
	ev_io_set(&d->ctl_ev, d->ctl_fd, EV_READ);
	ev_io_start(loop, &d->ctl_ev);
	log_info("process %d: registered again with mosd", (int)d->pid);
}

/*
 * Run P, stopped at its exec, to the program's entry point: the dynamic
 * loader has mapped every library by then, which a process away could only
 * do by coming home. A breakpoint at AT_ENTRY stops it there, stopped
 * again for the caller.
 */
static int
deputy_to_entry(struct deputy *d, char **cause)
{
	struct user_regs_struct	 r;
	unsigned long		 av[2], entry = 0;
	long			 word;
	char			 path[64];
	FILE			*f;
	int			 status;

	snprintf(path, sizeof path, "/proc/%d/auxv", (int)d->pid);
	if ((f = fopen(path, "re")) == NULL) {
		xasprintf(cause, "%s: %s", path, strerror(errno));
		return -1;
	}
	while (fread(av, sizeof av, 1, f) == 1 && av[0] != AT_NULL)
		if (av[0] == AT_ENTRY)
			entry = av[1];
	fclose(f);
	errno = 0;
	word = ptrace(PTRACE_PEEKTEXT, d->pid, entry, 0);
	if (entry == 0 || errno != 0 || ptrace(PTRACE_POKETEXT, d->pid, entry,
	    (word & ~0xffL) | 0xcc) == -1) {
		xasprintf(cause, "breakpoint at the entry point: %s",
		    strerror(errno));
		return -1;
	}
	ptrace(PTRACE_CONT, d->pid, 0, 0);
	for (;;) {
		while (waitpid(d->pid, &status, __WALL) == -1 && errno == EINTR)
			;
		if (!WIFSTOPPED(status)) {
			xasprintf(cause, "the process ended");
			return -1;
		}
		if ((status >> 16) == 0 && WSTOPSIG(status) == SIGTRAP &&
		    ptrace(PTRACE_GETREGS, d->pid, 0, &r) == 0 &&
		    r.rip == entry + 1)
			break;
		ptrace(PTRACE_CONT, d->pid, 0, (status >> 16) == 0 ?
		    WSTOPSIG(status) : 0);
	}
	r.rip = entry;
	if (ptrace(PTRACE_POKETEXT, d->pid, entry, word) == -1 ||
	    ptrace(PTRACE_SETREGS, d->pid, 0, &r) == -1) {
		xasprintf(cause, "back from the breakpoint: %s",
		    strerror(errno));
		return -1;
	}
	return 0;
}

/* P is gone, or must go: end the deputy. */
void
deputy_exit(struct deputy *d, int code)
{
	ckpt_ended(d);
	if (d->ctl_fd != -1)
		close(d->ctl_fd);
	if (d->order_fd != -1)
		close(d->order_fd);
	exit(code);
}

/* Carry out one order from mosd; the reply says how it went. */
static void
deputy_order(struct deputy *d, const Osm__CtlRequest *req,
    Osm__CtlReply *reply)
{
	char	*cause = NULL;
	int	 rc = 0;

	if (!req->has_pid || req->pid != (uint32_t)d->pid) {
		xasprintf(&reply->error, "this deputy holds process %d",
		    (int)d->pid);
		return;
	}
	if (req->type != OSM__CTL_TYPE__CTL_MIGRATE || !req->has_node) {
		reply->error = xstrdup("the deputy takes migrate and checkpoint "
		    "orders only");
		return;
	}
	if (req->node == d->self) {
		if (d->state == DEPUTY_AWAY)
			rc = away_come_home(d, &cause);
	} else if (d->state == DEPUTY_AWAY && req->node == d->where)
		rc = 0;
	else {
		/* Elsewhere: through home, where P's state is whole. */
		if (d->state == DEPUTY_AWAY)
			rc = away_come_home(d, &cause);
		if (rc == 0)
			rc = away_migrate(d, req->node, 0, &cause);
	}
	reply->ok = rc == 0;
	reply->error = cause;
	deputy_report(d);
}

static void
deputy_order_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct deputy	*d = w->data;
	Osm__CtlRequest	*req;
	Osm__CtlReply	 reply = OSM__CTL_REPLY__INIT;
	int		 fd;

	if ((req = ctl_order_take(d->order_fd, DEPUTY_ORDER_TIMEOUT,
	    &fd)) == NULL)
		return;
	if (req->type == OSM__CTL_TYPE__CTL_CHECKPOINT && req->has_pid &&
	    req->pid == (uint32_t)d->pid) {
		ckpt_take(d, fd);	/* answered once written */
		osm__ctl_request__free_unpacked(req, NULL);
		return;
	}
	deputy_order(d, req, &reply);
	ctl_order_answer(fd, &reply);
	free(reply.error);
	osm__ctl_request__free_unpacked(req, NULL);
}

static void
deputy_ctl_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct deputy	*d = w->data;
	char		 c;

	/* mosd never talks first: readable means it went away. */
	if (read(d->ctl_fd, &c, 1) <= 0) {
		log_warnx("process %d: mosd went away; reconnecting",
		    (int)d->pid);
		deputy_ctl_closed(d);
	}
}

/* A ptrace stop or the end of P, while P is at home. */
static void
deputy_home_event(struct deputy *d, int status)
{
	int	sig = 0, event = status >> 16;

	if (!WIFSTOPPED(status))
		return;
	if (event == PTRACE_EVENT_EXEC) {
		deputy_command(d);
		deputy_report(d);
	} else if (event == PTRACE_EVENT_STOP) {
		/* A group stop: stay stopped, as the shell expects. */
		if (WSTOPSIG(status) != SIGTRAP) {
			ptrace(PTRACE_LISTEN, d->pid, 0, 0);
			return;
		}
	} else if (event == 0)
		sig = WSTOPSIG(status);	/* pass the signal on */
	ptrace(PTRACE_CONT, d->pid, 0, sig);
}

static void
deputy_sigchld_cb(struct ev_loop *loop, ev_signal *w, int revents)
{
	struct deputy	*d = w->data;
	int		 status;
	pid_t		 r;

	while ((r = waitpid(d->pid, &status, WNOHANG | __WALL)) > 0) {
		if (WIFEXITED(status) || WIFSIGNALED(status)) {
			log_debug("process %d ended", (int)d->pid);
			if (d->state == DEPUTY_AWAY)
				away_lost(d, NULL);
			deputy_exit(d, 0);
		}
		if (d->state == DEPUTY_AWAY)
			away_ptrace_event(d, status);
		else
			deputy_home_event(d, status);
	}
}

/*
 * Runs in the grandchild of mosrun (pid is mosrun, about to exec). Writes
 * one byte on sync once P is held and registered; on failure says why on
 * stderr and exits, and mosrun, reading nothing, gives up.
 */
int
deputy_main(const struct mosrun_opts *o, pid_t pid, int sync)
{
	struct deputy	 d;
	char		*cause = NULL, what[32];
	const char	*env;
	uint32_t	 start;
	int		 null, status;

	memset(&d, 0, sizeof d);
	d.o = o;
	d.pid = pid;
	d.ctl_fd = d.order_fd = d.log_fd = -1;
	d.state = DEPUTY_HOME;
	snprintf(d.command, sizeof d.command, "%s", o->argv[0]);
	/* Out of the terminal's way: ^C at P must not reach us. */
	setsid();
	if ((null = open("/dev/null", O_RDWR)) != -1) {
		dup2(null, 0);
		dup2(null, 1);
		close(null);
	}
	/*
	 * Syslog, or a file named by OSM_DEPUTY_LOG (the lab has no syslog);
	 * OSM_DEPUTY_DEBUG adds every forwarded call.
	 */
	if ((env = getenv("OSM_DEPUTY_LOG")) != NULL &&
	    (null = open(env, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC,
	    0600)) != -1) {
		d.log_fd = null;
		log_init(1, "mosrun");
	} else
		log_init(0, "mosrun");
	log_setverbose(getenv("OSM_DEPUTY_DEBUG") != NULL);
	if (ptrace(PTRACE_SEIZE, pid, 0, DEPUTY_OPTIONS) == -1) {
		fprintf(stderr, "mosrun: cannot hold process %d: %s\n",
		    (int)pid, strerror(errno));
		return 1;
	}
	snprintf(what, sizeof what, "deputy-%d", (int)pid);
	if ((d.order_fd = ctl_order_listen(what, d.order_path,
	    sizeof d.order_path, &cause)) == -1 ||
	    deputy_hello(&d, &cause) == -1) {
		fprintf(stderr, "mosrun: %s\n", cause);
		ptrace(PTRACE_DETACH, pid, 0, 0);
		return 1;
	}

	/* Not the default loop: its own SIGCHLD handler would reap P's stops. */
	d.loop = ev_loop_new(EVFLAG_AUTO);
	ev_signal_init(&d.sigchld, deputy_sigchld_cb, SIGCHLD);
	d.sigchld.data = &d;
	ev_signal_start(d.loop, &d.sigchld);
	ev_io_init(&d.order_ev, deputy_order_cb, d.order_fd, EV_READ);
	d.order_ev.data = &d;
	ev_io_start(d.loop, &d.order_ev);
	ev_io_init(&d.ctl_ev, deputy_ctl_cb, d.ctl_fd, EV_READ);
	d.ctl_ev.data = &d;
	ev_io_start(d.loop, &d.ctl_ev);
	ev_timer_init(&d.reconnect, deputy_connect_cb, DEPUTY_RECONNECT,
	    DEPUTY_RECONNECT);
	d.reconnect.data = &d;
	ev_timer_init(&d.stats, deputy_stats_cb, DEPUTY_STATS, DEPUTY_STATS);
	d.stats.data = &d;
	ev_timer_start(d.loop, &d.stats);
	signal(SIGPIPE, SIG_IGN);

	ckpt_init(&d);

	if (write(sync, "", 1) != 1)
		deputy_exit(&d, 1);
	close(sync);

	if (o->recover != NULL) {
		/* mosrun -R: P stops itself for us to make it the process. */
		ckpt_recover(&d);
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
		deputy_home_event(&d, status);
	}
	deputy_command(&d);
	d.cpu_at = now_ms();	/* the program starts: its CPU use counts */
	start = o->best ? deputy_best(&d) : o->start_node;
	if (start != 0 && start != d.self) {
		if (deputy_to_entry(&d, &cause) == -1 ||
		    away_migrate(&d, start, 1, &cause) == -1) {
			fprintf(stderr, "mosrun: cannot start %s on node %u: "
			    "%s; running it here\n", d.command, start, cause);
			free(cause);
		}
	} else
		ptrace(PTRACE_CONT, pid, 0, 0);
run:
	deputy_report(&d);
	/* From now on the process's messages go through P's own stderr. */
	if (d.log_fd != -1)
		dup2(d.log_fd, 2);
	else if ((null = open("/dev/null", O_RDWR)) != -1) {
		dup2(null, 2);
		close(null);
	}
	ev_run(d.loop, 0);
	deputy_exit(&d, 0);
	return 0;
}
