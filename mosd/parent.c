/*
 * mosd's privileged parent. After set-up mosd is two processes (OpenBSD
 * bgpd's privilege separation, docs/RELIABILITY.md): the network process,
 * which runs everything that reads what other nodes and local users send
 * (gossip, the broker, the control socket, the web monitor) as a uid of
 * its own with no capability, under a seccomp filter (sandbox.c); and
 * this one, which keeps root and what it needs to start guest agents
 * under guest uids, and reads nothing from the network. Its only input is
 * the channel to the network process (privmsg.h), whose every record it
 * checks as hostile before acting: start a guest agent, check a web
 * token. It also opens the configuration again on SIGHUP (for a network
 * process that may not read root's files), and stops the network process
 * on SIGTERM. If the network process ends, so does mosd.
 */
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mosd.h"

#define PARENT_BATCH		64	/* records taken per wakeup */
#define PARENT_STOP_WAIT	10.0	/* seconds, then we exit anyway */
#define PARENT_TOKEN_MIN	16

struct parent {
	struct mosd	*m;
	struct ev_loop	*loop;
	int		 fd;		/* the channel */
	pid_t		 net;		/* the network process */
	int		 stopping;	/* we asked it to stop */
	int		 status;	/* mosd's exit status */
	uint64_t	 refused;	/* records refused, for the log */
	ev_io		 io;
	ev_child	 child;
	ev_signal	 sig_term, sig_int, sig_hup;
	ev_timer	 kill_timer, log_timer;
	ev_timer	 spare_timer;	/* the next spare guest agent */
};

/*
 * A move takes the spare guest agent; the next starts PARENT_SPARE_AFTER
 * later, not at once: its exec would take the node's CPU from the move
 * it follows (the answer to the home, the restore, the program's start),
 * whose start is what the spare is for. (Lowering its priority instead
 * would need CAP_SYS_NICE for the agent to take it back.) A move meanwhile
 * starts an agent of its own, as without a spare.
 */
#define PARENT_SPARE_AFTER	0.05	/* seconds */

static struct log_limit parent_log_refused, parent_log_answer;

static void
parent_answer(struct parent *pp, uint32_t id, int ok, pid_t pid, uid_t uid,
    const char *why)
{
	struct privmsg_answer	a;

	memset(&a, 0, sizeof a);
	a.ok = ok;
	a.pid = pid;
	a.uid = uid;
	if (why != NULL)
		snprintf(a.why, sizeof a.why, "%s", why);
	/* A network process that reads no answers gets none. */
	if (privmsg_send(pp->fd, PRIVMSG_ANSWER, id, &a, sizeof a, NULL,
	    0) == -1)
		log_limited_warnx(&parent_log_answer, 0, "privileged process: "
		    "answer to the network process: %s", strerror(errno));
}

/* A record not acted on: said in the log, and answered as refused. */
static void
parent_refuse(struct parent *pp, uint32_t id, const char *why)
{
	pp->refused++;
	log_limited_warnx(&parent_log_refused, 0, "privileged process: "
	    "refused a record of the network process: %s", why);
	parent_answer(pp, id, 0, 0, 0, why);
}

static void
parent_guest(struct parent *pp, const struct privmsg *msg)
{
	struct privmsg_guest	g;
	char			*why = NULL;
	pid_t			 pid;
	uid_t			 uid;

	if (privmsg_check_guest(msg, pp->m->conf, &g, &why) == -1)
		parent_refuse(pp, msg->hdr.id, why);
	else if (guests_spawn(pp->m, msg->fds[0], &g, &pid, &uid, &why) == -1)
		parent_answer(pp, msg->hdr.id, 0, 0, 0, why);
	else
		parent_answer(pp, msg->hdr.id, 1, pid, uid, NULL);
	explicit_bzero(&g, sizeof g);
	free(why);
	/* the next offer's agent, once this move is under way */
	if (!pp->stopping && pp->loop != NULL &&
	    !ev_is_active(&pp->spare_timer))
		ev_timer_start(pp->loop, &pp->spare_timer);
}

/*
 * The token of path: one line of 16 to 255 characters in a regular file
 * of root's that no one else may read. Anything else and actions are off.
 */
static int
parent_token_load(const char *path, char *tok, size_t *len, char **why)
{
	struct stat	 st;
	ssize_t		 n;
	int		 fd, rc = -1;

	if ((fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW |
	    O_NONBLOCK)) == -1) {
		xasprintf(why, "%s: %s", path, strerror(errno));
		return -1;
	}
	if (fstat(fd, &st) == -1)
		xasprintf(why, "%s: %s", path, strerror(errno));
	else if (!S_ISREG(st.st_mode))
		xasprintf(why, "%s is not a regular file", path);
	else if (st.st_uid != 0 || (st.st_mode & 077) != 0)
		xasprintf(why, "%s must be root's and mode 0600 (it is uid %u, "
		    "mode %04o)", path, (unsigned)st.st_uid,
		    (unsigned)st.st_mode & 07777);
	else if ((n = read(fd, tok, PRIVMSG_TOKEN_MAX + 1)) == -1)
		xasprintf(why, "%s: %s", path, strerror(errno));
	else {
		*len = strcspn(tok, "\r\n");
		if (*len > (size_t)n)
			*len = n;
		if (*len < PARENT_TOKEN_MIN || *len > PRIVMSG_TOKEN_MAX)
			xasprintf(why, "%s: expected a line of %d to %d "
			    "characters", path, PARENT_TOKEN_MIN,
			    PRIVMSG_TOKEN_MAX);
		else
			rc = 0;
	}
	close(fd);
	return rc;
}

/* Does the web client's token match the file's? The file is read anew. */
static void
parent_token(struct parent *pp, const struct privmsg *msg)
{
	struct privmsg_token	t;
	char			 tok[PRIVMSG_TOKEN_MAX + 2], *why = NULL;
	char			*off;
	size_t			 len = 0;

	memset(tok, 0, sizeof tok);
	if (privmsg_check_token(msg, &t, &why) == -1)
		parent_refuse(pp, msg->hdr.id, why);
	else if (parent_token_load(pp->m->conf->web_token_path, tok, &len,
	    &why) == -1) {
		log_warnx("web: actions refused: %s", why);
		xasprintf(&off, "actions are off: %s", why);
		parent_answer(pp, msg->hdr.id, 0, 0, 0, off);
		free(off);
	} else if (t.len != len || timingsafe_memcmp(t.token, tok, len) != 0)
		parent_answer(pp, msg->hdr.id, 0, 0, 0, "wrong token");
	else
		parent_answer(pp, msg->hdr.id, 1, 0, 0, NULL);
	explicit_bzero(tok, sizeof tok);
	explicit_bzero(&t, sizeof t);
	free(why);
}

/* One record of the network process, whatever it holds. */
static void
parent_dispatch(struct parent *pp, struct privmsg *msg)
{
	char	*why = NULL;

	switch (msg->hdr.type) {
	case PRIVMSG_GUEST:
		parent_guest(pp, msg);
		break;
	case PRIVMSG_TOKEN:
		parent_token(pp, msg);
		break;
	default:
		if (privmsg_type_name(msg->hdr.type) != NULL)
			xasprintf(&why, "a record of type %s, which only the "
			    "privileged process sends",
			    privmsg_type_name(msg->hdr.type));
		else
			xasprintf(&why, "a record of unknown type %u",
			    msg->hdr.type);
		parent_refuse(pp, msg->hdr.id, why);
		free(why);
	}
	privmsg_close_fds(msg);
}

/* Read the records there are, a batch at a time. */
static void
parent_read(struct parent *pp)
{
	struct privmsg	 msg;
	char		*why = NULL;
	int		 i;

	for (i = 0; i < PARENT_BATCH; i++) {
		switch (privmsg_recv(pp->fd, &msg, &why)) {
		case PRIVMSG_OK:
			parent_dispatch(pp, &msg);
			break;
		case PRIVMSG_BAD:
			parent_refuse(pp, 0, why);
			free(why);
			why = NULL;
			break;
		case PRIVMSG_EOF:
			/* It is ending: its exit (parent_child_cb) says how. */
			if (pp->loop != NULL)
				ev_io_stop(pp->loop, &pp->io);
			return;
		case PRIVMSG_NONE:
			return;
		}
	}
}

static void
parent_read_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	parent_read(w->data);
}

static void
parent_child_cb(struct ev_loop *loop, ev_child *w, int revents)
{
	struct parent	*pp = w->data;
	int		 st = w->rstatus;

	if (w->rpid != pp->net) {
		guests_reaped(pp->m, w->rpid, st);
		return;
	}
	if (pp->stopping && WIFEXITED(st) && WEXITSTATUS(st) == 0)
		pp->status = 0;
	else {
		if (WIFSIGNALED(st))
			log_warnx("the network process %d died of signal %d%s; "
			    "stopping", (int)w->rpid, WTERMSIG(st),
			    WTERMSIG(st) == SIGSYS ? " (a system call its "
			    "seccomp filter refuses)" : "");
		else
			log_warnx("the network process %d exited %d; stopping",
			    (int)w->rpid, WEXITSTATUS(st));
		pp->status = 1;
	}
	ev_break(loop, EVBREAK_ALL);
}

static void
parent_kill_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct parent	*pp = w->data;

	/* No signal of ours reaches it; our end does (PR_SET_PDEATHSIG). */
	log_warnx("the network process %d did not stop in %.0f s: leaving it "
	    "to be killed as we exit", (int)pp->net, PARENT_STOP_WAIT);
	ev_break(loop, EVBREAK_ALL);
}

static void
parent_spare_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct parent	*pp = w->data;

	if (!pp->stopping)
		guests_spare(pp->m);
}

static void
parent_stop_cb(struct ev_loop *loop, ev_signal *w, int revents)
{
	struct parent	*pp = w->data;

	if (pp->stopping)
		return;
	log_info("signal %d: stopping", w->signum);
	pp->stopping = 1;
	/*
	 * A record, not a signal: the network process is another uid's and
	 * we have no CAP_KILL. If the channel is full, its end reads EOF.
	 */
	if (privmsg_send(pp->fd, PRIVMSG_STOP, 0, NULL, 0, NULL, 0) == -1)
		shutdown(pp->fd, SHUT_WR);
	ev_timer_start(loop, &pp->kill_timer);
}

/*
 * SIGHUP: cluster.conf and the policy it names, opened here (they may be
 * root's alone) and handed to the network process, which applies them.
 * Our own copy keeps what this process uses that may change: the path of
 * the web token, the shared paths told to guest agents. A file that
 * cannot be read changes nothing.
 */
static void
parent_reload_cb(struct ev_loop *loop, ev_signal *w, int revents)
{
	struct parent		*pp = w->data;
	struct cluster_conf	*c;
	struct privmsg_reload	 r = { .policy = 0 };
	char			*cause = NULL;
	size_t			 i;
	int			 fds[2], n = 1;

	if ((c = conf_load(pp->m->conf->path, &cause)) == NULL) {
		log_warnx("reload: %s; keeping the old configuration", cause);
		free(cause);
		return;
	}
	if ((fds[0] = open(c->path, O_RDONLY | O_CLOEXEC)) == -1) {
		log_warnx("reload: %s: %s; keeping the old configuration",
		    c->path, strerror(errno));
		conf_free(c);
		return;
	}
	if ((fds[1] = open(c->policy_path, O_RDONLY | O_CLOEXEC)) != -1) {
		r.policy = 1;
		n = 2;
	} else if (errno != ENOENT) {
		/* Never the built-in policy for a file we could not read. */
		log_warnx("reload: %s: %s; keeping the old configuration and "
		    "policy", c->policy_path, strerror(errno));
		close(fds[0]);
		conf_free(c);
		return;
	}
	if (privmsg_send(pp->fd, PRIVMSG_RELOAD, 0, &r, sizeof r, fds,
	    n) == -1)
		log_warn("reload: to the network process");
	while (n-- > 0)
		close(fds[n]);
	free(pp->m->conf->web_token_path);
	pp->m->conf->web_token_path = c->web_token_path;
	c->web_token_path = NULL;
	for (i = 0; i < pp->m->conf->nshared; i++)
		free(pp->m->conf->shared[i]);
	free(pp->m->conf->shared);
	pp->m->conf->shared = c->shared;
	pp->m->conf->nshared = c->nshared;
	c->shared = NULL;
	c->nshared = 0;
	conf_free(c);
}

static void
parent_log_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	log_limit_flush();
}

/*
 * Run as the parent of the network process net, talking to it on fd,
 * until it ends; mosd's exit status. What set-up opened for the network
 * process the caller has closed here already.
 */
int
parent_run(struct mosd *m, pid_t net, int fd)
{
	struct parent	 pp;

	memset(&pp, 0, sizeof pp);
	pp.m = m;
	pp.fd = fd;
	pp.net = net;
	pp.status = 1;
	/* The cluster key is the network process's: none here. */
	explicit_bzero(&m->key, sizeof m->key);
	guests_init(m);
	guests_spare(m);
	pp.loop = ev_default_loop(EVFLAG_AUTO);
	ev_io_init(&pp.io, parent_read_cb, fd, EV_READ);
	ev_child_init(&pp.child, parent_child_cb, 0, 0);
	ev_signal_init(&pp.sig_term, parent_stop_cb, SIGTERM);
	ev_signal_init(&pp.sig_int, parent_stop_cb, SIGINT);
	ev_signal_init(&pp.sig_hup, parent_reload_cb, SIGHUP);
	ev_timer_init(&pp.kill_timer, parent_kill_cb, PARENT_STOP_WAIT, 0);
	ev_timer_init(&pp.log_timer, parent_log_cb, 1, 1);
	ev_timer_init(&pp.spare_timer, parent_spare_cb, PARENT_SPARE_AFTER, 0);
	pp.io.data = pp.child.data = pp.sig_term.data = pp.sig_int.data =
	    pp.sig_hup.data = pp.kill_timer.data = pp.spare_timer.data = &pp;
	ev_io_start(pp.loop, &pp.io);
	ev_child_start(pp.loop, &pp.child);
	ev_signal_start(pp.loop, &pp.sig_term);
	ev_signal_start(pp.loop, &pp.sig_int);
	ev_signal_start(pp.loop, &pp.sig_hup);
	ev_timer_start(pp.loop, &pp.log_timer);
	ev_run(pp.loop, 0);

	/* The network process cannot: its socket is in root's directory. */
	unlink(m->conf->socket_path);
	close(fd);
	if (pp.refused > 0)
		log_info("privileged process: %llu records of the network "
		    "process refused", (unsigned long long)pp.refused);
	log_info("stopped");
	return pp.status;
}
