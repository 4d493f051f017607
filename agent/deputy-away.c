/*
 * The deputy while its process is away: what the running copy R says on
 * the session (its calls, its stops, its end, its wish to go home), bringing
 * the process home or elsewhere, and giving the copy up when it is lost —
 * going on from the last checkpoint, or killing P. See docs/REMOTE.md.
 *
 * While away P sits in its husk's stub with every signal unblocked, so
 * that any signal sent to it stops it for us; the forwarded calls run in
 * the stub (deputy-serve.c).
 */
#include <sys/ptrace.h>
#include <sys/wait.h>

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"
#include "proto/migrate.pb-c.h"

/*
 * What befell the process (its node was lost, or killed it), and what
 * becomes of it: the line for P's stderr, into msg; the log and mosps's
 * history have it too.
 */
static size_t
away_tell(struct deputy *d, const char *what, const char *then, char *msg,
    size_t size)
{
	int	n;

	n = snprintf(msg, size, "mosrun: process %d (%s) %s; %s\n",
	    (int)d->pid, d->command, what, then);
	if (n < 0)
		n = 0;
	if ((size_t)n >= size)
		n = size - 1;
	deputy_why(d, "%s; %s", what, then);	/* logged too */
	return n;
}

/* A descriptor the restart could not keep: the log says which. */
static void
away_warn(void *arg, const char *msg)
{
	struct deputy	*d = arg;

	log_warnx("process %d (%s): restart: %s", (int)d->pid, d->command,
	    msg);
}

/*
 * The copy away is lost but P's last checkpoint is there: P, held, becomes
 * the process of the checkpoint and goes on at home. P still holds every
 * descriptor the checkpoint recorded, pipes and sockets included: it keeps
 * them (MIG_KEEP_FDS), its files rewound to the checkpoint's offsets; what
 * it wrote since the checkpoint it writes again. The message saying so is
 * written by P itself once its files are back, where it writes next: into
 * a shared `cmd > log 2>&1` it goes before the output written again, not
 * under it. -1 if there is no checkpoint or it will not do; a failed
 * restore leaves P half made, and the caller kills it.
 */
static int
away_restart(struct deputy *d, const char *what)
{
	struct mig_restore_opts	 opts = { .flags = MIG_KEEP_FDS };
	char			*then, *path = NULL, *cause = NULL, *notice;
	char			 msg[768];
	size_t			 n;

	if (deputy_ckpt_last(d, &path, &cause) == -1) {
		if (cause != NULL)
			log_warnx("process %d (%s): no restart: %s",
			    (int)d->pid, d->command, cause);
		free(cause);
		return -1;
	}
	xasprintf(&then, "restarting it here from %s", path);
	n = away_tell(d, what, then, msg, sizeof msg);
	opts.notice_len = deputy_ckpt_retell(d, msg, n, &notice);
	opts.notice = notice;
	opts.warn = away_warn;
	opts.warn_arg = d;
	free(then);
	/*
	 * P may be the process of a way home that was lost on its way (its
	 * pages following): its clock and usage stubs go, for the restore
	 * to find its vDSO and libc as they were (the checkpoint's carry
	 * puts them in again).
	 */
	deputy_clock_leave(d);
	if (mig_restore_chain(d->task, path, &opts, NULL, &cause) == -1) {
		log_warnx("process %d: restart from %s: %s", (int)d->pid, path,
		    cause);
		free(cause);
		free(notice);
		free(path);
		return -1;
	}
	free(notice);
	free(path);
	/* After the checkpoint's offset too: a restart from it again. */
	deputy_ckpt_said(d, msg, n);
	deputy_move_home(d);
	return 0;
}

/*
 * The running copy is gone (what says how: its node was lost, or killed
 * it); P is held if held. It goes on at home from its last checkpoint;
 * without one it cannot go on: say so on P's stderr and in the log, and
 * end P with status, one its parent cannot take for a normal end.
 */
static void
away_give_up(struct deputy *d, const char *what, int held, int signaled,
    int status)
{
	char	 msg[768], *cause = NULL;
	size_t	 n;

	if (held && away_restart(d, what) == 0)
		return;
	n = away_tell(d, what, signaled ? "killing it" : "ending it", msg,
	    sizeof msg);
	if (held)
		husk_say(d->task, 2, msg, n);
	if (signaled || !held || husk_end(&d->husk, 0, status, &cause) == -1)
		kill(d->pid, SIGKILL);
	free(cause);
}

/*
 * The running copy is lost: the target died, the link stayed down past
 * the timeout, the guest broke the rules. A lost process goes on at home
 * from its last checkpoint; without one it is killed (SIGKILL).
 */
void
deputy_away_lost(struct deputy *d, const char *why)
{
	char	*cause = NULL, *what;
	int	 held;

	deputy_move_close(d);
	deputy_serve_done(d);
	deputy_serve_clear(d);
	held = d->task != NULL && husk_hold(&d->husk, &cause) == 0;
	free(cause);
	xasprintf(&what, "was lost with node %u: %s", d->where, why);
	away_give_up(d, what, held, 1, SIGKILL);
	free(what);
}

/*
 * Lost during post-copy (its memory on both nodes, the link or the other
 * node gone): P is held, and goes on from its last checkpoint, or is
 * ended with a line on its stderr, as any lost process.
 */
void
deputy_away_lost_held(struct deputy *d, uint32_t node, const char *why)
{
	char	*what;

	deputy_move_close(d);
	xasprintf(&what, "was lost with node %u during post-copy: %s", node,
	    why);
	away_give_up(d, what, d->state == DEPUTY_HELD, 1, SIGKILL);
	free(what);
}

/* P ended at home while away (killed there): R must end too. */
void
deputy_away_ended(struct deputy *d)
{
	char	*cause = NULL;

	if (d->ses.fd != -1)
		session_send(&d->ses, OSM__SES_KIND__SES_KILL, "", 0, &cause);
	free(cause);
	deputy_move_close(d);
}

/*
 * The node it ran on killed R to free memory: not its own end, nor one its
 * parent would have seen at home. It goes on from its last checkpoint;
 * without one P exits with status 137 (128 + SIGKILL, what a shell shows
 * for an out-of-memory kill) rather than dying of SIGKILL itself, so that
 * a parent can tell it from a kill or a lost node (docs/RELIABILITY.md).
 */
static void
away_oom(struct deputy *d)
{
	char	*cause = NULL, *what;
	int	 held;

	deputy_move_close(d);
	deputy_serve_done(d);
	held = husk_hold(&d->husk, &cause) == 0;
	free(cause);
	xasprintf(&what, "was killed by node %u's out-of-memory killer",
	    d->where);
	away_give_up(d, what, held, 0, 128 + SIGKILL);
	free(what);
}

/* R ended: P ends the same way, so that the parent sees the same. */
static int
away_exit(struct deputy *d, const uint8_t *body, size_t len, char **lost)
{
	Osm__SesExit	*e;
	char		*cause = NULL;
	uint64_t	 total, here_u, here_s;

	if ((e = osm__ses_exit__unpack(NULL, len, body)) == NULL) {
		xasprintf(lost, "malformed exit");
		return -1;
	}
	if (e->has_oom_killed && e->oom_killed) {
		osm__ses_exit__free_unpacked(e, NULL);
		away_oom(d);
		return 0;
	}
	/*
	 * Where its CPU time went: R's is the total less what the last move
	 * carried; P's is what it used here since the program's exec (not
	 * mosrun's before it), the husk's calls included (bench/stayaway
	 * reads this line).
	 */
	total = e->cpu_user_ns + e->cpu_sys_ns;
	total = total > d->cpu_sent_ns ? (total - d->cpu_sent_ns) / 100000 : 0;
	proc_cpu_ns(d->pid, &here_u, &here_s);
	here_u = here_u + here_s > d->cpu_exec_ns ?
	    (here_u + here_s - d->cpu_exec_ns) / 100000 : 0;
	/*
	 * In tenths of a millisecond: a program's home share is a few. The
	 * calls served at home say how: by us, by P without a ptrace stop,
	 * or in its trap (docs/REMOTE.md, "The husk").
	 */
	log_info("process %d (%s) ended on node %u: %s %d; CPU time "
	    "%llu.%llu ms there, %llu.%llu ms at home; calls at home: %llu "
	    "by the deputy, %llu without a stop, %llu in a trap", (int)d->pid,
	    d->command, d->where, e->signaled ? "signal" : "status",
	    e->status, (unsigned long long)total / 10,
	    (unsigned long long)total % 10, (unsigned long long)here_u / 10,
	    (unsigned long long)here_u % 10,
	    (unsigned long long)d->calls.deputy,
	    (unsigned long long)d->calls.waited,
	    (unsigned long long)d->calls.trapped);
	deputy_move_close(d);
	deputy_serve_done(d);
	deputy_serve_clear(d);
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
	/* P's end shows in deputy.c's SIGCHLD handler, which ends us. */
	return 0;
}

/* How R does, every few seconds: for mosps and the balancer. */
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
	conn_report(&d->conn);
}

/* The message that waited its turn, taken now. */
static int	away_message(struct deputy *, uint16_t, const uint8_t *, size_t,
		    char **);
static int	away_arrived(struct deputy *, uint16_t, const uint8_t *, size_t,
		    char **);

/*
 * Run what waits in its turn now, in order, the call P runs first: before
 * an image comes (a checkpoint, the way home), which needs P still. A call
 * R waits in is dropped if !calls (R, frozen, makes it again at home).
 */
static int
away_finish(struct deputy *d, int calls, char **cause)
{
	uint8_t		*body;
	size_t		 len;
	uint16_t	 kind;
	int		 rc;

	for (;;) {
		if (husk_busy(&d->husk)) {
			if (deputy_serve_wait(d, cause) == -1)
				return -1;
			continue;
		}
		if (!deputy_serve_dequeue(d, &kind, &body, &len))
			return 0;
		if (!calls && kind == OSM__SES_KIND__SES_CALL &&
		    !deputy_serve_behind(body, len)) {
			free(body);
			continue;
		}
		rc = away_message(d, kind, body, len, cause);
		free(body);
		if (rc == -1)
			return -1;
	}
}

/*
 * Bring the process home: the call P runs for R settled first, then R
 * asked home. What R sent before it knew is dropped: the calls it waits on
 * restart once it is here, and it sends nothing else that matters. -1
 * with *cause if it is not home: it ended meanwhile, or it is lost (and
 * given up here).
 */
int
deputy_away_come_home(struct deputy *d, const char *why, char **cause)
{
	const uint8_t	*body;
	size_t		 len;
	uint16_t	 kind;
	uint32_t	 node;
	char		*full;

	if (why != NULL)
		deputy_why(d, "%s from node %u", why, d->where);
	d->post_home = deputy_move_post_home(d);
	if (deputy_serve_settle(d, cause) == -1 ||
	    away_finish(d, 0, cause) == -1 ||
	    deputy_files_send(d, OSM__SES_KIND__SES_COME_HOME, cause) == -1)
		goto lost;
	for (;;) {
		if (session_recv(&d->ses, &kind, &body, &len, cause) == -1)
			goto lost;
		if (kind == OSM__SES_KIND__SES_GO_HOME)
			break;
		/* a write it had its answer to must happen: nothing is lost */
		if (kind == OSM__SES_KIND__SES_CALL &&
		    deputy_serve_behind(body, len) &&
		    (deputy_serve_call(d, body, len, cause) == -1 ||
		    deputy_serve_settle(d, cause) == -1))
			goto lost;
		/* It may yet ask about a file it maps, or have done so. */
		if (kind == OSM__SES_KIND__SES_FILE_ASK &&
		    deputy_files_answer(d, body, len, cause) == -1)
			goto lost;
		/* A thread that ended before it froze: its image lacks it. */
		if (kind == OSM__SES_KIND__SES_THREAD_EXIT &&
		    deputy_thread_exit(d, body, len, cause) == -1)
			goto lost;
		if (kind == OSM__SES_KIND__SES_EXIT) {
			if (away_exit(d, body, len, cause) == -1)
				goto lost;
			xasprintf(cause, "the process ended meanwhile");
			return -1;
		}
	}
	deputy_io_close(d);	/* our duplicates of P's files */
	node = d->where;
	switch (deputy_move_arrive_home(d, cause)) {
	case 0:
		return 0;
	case 2:
		deputy_away_lost_held(d, node, *cause);
		return -1;
	}
lost:
	/*
	 * Why it was called home says what may have ended it there: sent
	 * home for memory, its guest agent too may be the out-of-memory
	 * killer's, once R is (docs/RELIABILITY.md).
	 */
	if (why != NULL) {
		xasprintf(&full, "%s while it was %s", *cause, why);
		free(*cause);
		*cause = full;
	}
	deputy_away_lost(d, *cause);
	return -1;
}

/* May the process run on node, by the nodes mosrun -n lists? */
static int
away_listed(struct deputy *d, uint32_t node)
{
	size_t	i;

	if (d->o->nnodes == 0 || node == d->self)
		return 1;
	for (i = 0; i < d->o->nnodes; i++)
		if (d->o->nodes[i] == node)
			return 1;
	return 0;
}

/*
 * May the copy leave its node for a move we chose? Its guest says no while
 * R holds a lock on a file opened there (remote_may_leave). What comes
 * before the answer is served as always. 0: it may (or it is no longer
 * away); -1 with *cause: not now, or it is lost.
 */
static int
away_may_leave(struct deputy *d, uint32_t node, char **cause)
{
	const uint8_t	*body;
	size_t		 len;
	uint16_t	 kind;
	char		*why;

	if (session_send(&d->ses, OSM__SES_KIND__SES_MAY_LEAVE, "", 0,
	    cause) == -1)
		goto lost;
	while (d->state == DEPUTY_AWAY) {
		if (session_recv(&d->ses, &kind, &body, &len, cause) == -1)
			goto lost;
		if (kind != OSM__SES_KIND__SES_LEAVE_ANSWER) {
			if (away_arrived(d, kind, body, len, cause) == -1)
				goto lost;
			continue;
		}
		why = ses_error_reason(body, len, "");
		if (*why == '\0') {
			free(why);
			return 0;
		}
		xasprintf(cause, "process %d not moved now: %s", (int)d->pid,
		    why);
		deputy_why(d, "not moved to node %u: %s", node, why);
		free(why);
		return -1;
	}
	return 0;
lost:
	deputy_away_lost(d, *cause);
	return -1;
}

/*
 * Move the process to node, wherever it is now: home, or elsewhere through
 * home, where its state is whole. P is in a ptrace stop at home if
 * stopped. -1 with *cause if it is not there, or may not go there.
 */
int
deputy_away_move(struct deputy *d, uint32_t node, int stopped, char **cause)
{
	/*
	 * Its pid and thread ids are those of a PID namespace here (mosrun
	 * -R of a threaded checkpoint): R would be made with ours, P's
	 * threads are found by theirs (docs/IMAGE.md, "mosrun -R").
	 */
	if (d->o->ids_here && node != d->self) {
		xasprintf(cause, "process %d keeps its checkpoint's thread "
		    "ids in a PID namespace of this node's (mosrun -R): it "
		    "runs only here", (int)d->pid);
		deputy_why(d, "not moved to node %u: its thread ids are those "
		    "of a PID namespace of its home", node);
		if (stopped)
			ptrace(PTRACE_CONT, d->pid, 0, 0);
		return -1;
	}
	/* mosd refuses too; this holds whatever mosd is told */
	if (!away_listed(d, node)) {
		xasprintf(cause, "process %d may run only on the nodes mosrun "
		    "-n lists, and node %u is not one", (int)d->pid, node);
		deputy_why(d, "not moved to node %u: not listed by -n", node);
		if (stopped)
			ptrace(PTRACE_CONT, d->pid, 0, 0);
		return -1;
	}
	if (d->state == DEPUTY_AWAY && node == d->where)
		return 0;
	if (d->state == DEPUTY_AWAY && away_may_leave(d, node, cause) == -1)
		return -1;
	if (node == d->self)
		return d->state == DEPUTY_AWAY ?
		    deputy_away_come_home(d, "called home", cause) : 0;
	if (d->state == DEPUTY_AWAY && deputy_away_come_home(d,
	    "called home on its way elsewhere", cause) == -1)
		return -1;
	switch (deputy_move_out(d, node, stopped, cause)) {
	case -1:
		deputy_why(d, "not moved to node %u: %s", node, *cause);
		return -1;
	case 1:
		deputy_away_lost(d, *cause);
		free(*cause);
		*cause = NULL;
		break;
	case 2:
		deputy_away_lost_held(d, node, *cause);
		free(*cause);
		*cause = NULL;
		break;
	}
	return 0;
}

/*
 * The node it runs on wants it gone (its owner expelled its guests): call
 * it home as mosmigrate would, the call P runs for it settled first.
 */
static void
away_leave(struct deputy *d, const uint8_t *body, size_t len)
{
	char		*cause = NULL, *reason, *why;

	reason = ses_error_reason(body, len, "no reason given");
	xasprintf(&why, "sent home (%s)", reason);
	free(reason);
	if (deputy_away_come_home(d, why, &cause) == 0)
		conn_report(&d->conn);
	free(why);
	free(cause);
}

/*
 * The copy must come home, for a call it can make only there
 * (SES_WANT_HOME): call it home, the guest's reason noted.
 */
static int
away_want_home(struct deputy *d, const uint8_t *body, size_t len,
    char **cause)
{
	char	*reason;

	reason = ses_error_reason(body, len, "no reason given");
	deputy_why_home(d, reason);
	free(reason);
	if (deputy_away_come_home(d, NULL, cause) == -1)
		return 0;	/* lost and given up, or ended meanwhile */
	conn_report(&d->conn);
	return 0;
}

/* One message of the copy's; -1 with *cause if the copy is lost. */
static int
away_message(struct deputy *d, uint16_t kind, const uint8_t *body,
    size_t len, char **cause)
{
	uint32_t	node;
	int		rc;

	switch (kind) {
	case OSM__SES_KIND__SES_CALL:
		return deputy_serve_call(d, body, len, cause);
	case OSM__SES_KIND__SES_FD_ASK:
		return deputy_io_fd(d, body, len, cause);
	case OSM__SES_KIND__SES_READ:
		return deputy_io_read(d, body, len, cause);
	case OSM__SES_KIND__SES_CANCEL:
		return deputy_serve_cancel(d, body, len, cause);
	case OSM__SES_KIND__SES_STATS:
		away_stats(d, body, len);
		return 0;
	case OSM__SES_KIND__SES_EXIT:
		return away_exit(d, body, len, cause);
	case OSM__SES_KIND__SES_STOPPED:
		return deputy_signal_stopped(d, body, len, cause);
	case OSM__SES_KIND__SES_WANT_HOME:
		return away_want_home(d, body, len, cause);
	case OSM__SES_KIND__SES_GO_HOME:
		node = d->where;
		if ((rc = deputy_move_arrive_home(d, cause)) != 2)
			return rc;
		deputy_away_lost_held(d, node, *cause);
		free(*cause);
		*cause = NULL;
		return 0;
	case OSM__SES_KIND__SES_LEAVE:
		away_leave(d, body, len);
		return 0;
	case OSM__SES_KIND__SES_CHECKPOINT:
		return deputy_ckpt_away(d, body, len, cause);
	case OSM__SES_KIND__SES_FILE_ASK:
		return deputy_files_answer(d, body, len, cause);
	case OSM__SES_KIND__SES_THREAD_NEW:
		return deputy_thread_new(d, body, len, cause);
	case OSM__SES_KIND__SES_THREAD_EXIT:
		return deputy_thread_exit(d, body, len, cause);
	default:
		xasprintf(cause, "it sent an unexpected message");
		return -1;
	}
}

/*
 * A message from the copy, as it comes. Most wait their turn behind the
 * call P runs and those before them, so that the home sees R's calls in
 * R's order (a write behind, then the read that must see it); a signal's
 * cancel and R's statistics do not; a checkpoint's or the way home's
 * image needs P still, and waits here for the calls before it.
 */
static int
away_arrived(struct deputy *d, uint16_t kind, const uint8_t *body,
    size_t len, char **cause)
{
	ev_timer_again(d->loop, &d->ses_timer);
	switch (kind) {
	case OSM__SES_KIND__SES_CANCEL:
	case OSM__SES_KIND__SES_STATS:
	case OSM__SES_KIND__SES_LEAVE:
	/*
	 * A thread's mirror is made or ended at once: its maker's calls are
	 * done (it waits in its clone, answered only after), an ending
	 * thread's too; a call of another thread's must not hold it up.
	 */
	case OSM__SES_KIND__SES_THREAD_NEW:
	case OSM__SES_KIND__SES_THREAD_EXIT:
		return away_message(d, kind, body, len, cause);
	case OSM__SES_KIND__SES_CHECKPOINT:
	case OSM__SES_KIND__SES_GO_HOME:
		if (away_finish(d, 1, cause) == -1)
			return -1;
		return away_message(d, kind, body, len, cause);
	}
	if (d->nqueue > 0 || !deputy_serve_may(d, kind, body, len)) {
		deputy_serve_enqueue(d, kind, body, len);
		/* a call of a thread whose lane is free may go past others */
		deputy_away_drain(d);
		return 0;
	}
	return away_message(d, kind, body, len, cause);
}

/*
 * P's call ended: what waited its turn goes on, as far as it can without
 * waiting for P.
 */
void
deputy_away_drain(struct deputy *d)
{
	uint8_t		*body;
	size_t		 len;
	uint16_t	 kind;
	char		*cause = NULL;
	int		 rc;

	while (d->state == DEPUTY_AWAY && d->ses.fd != -1 &&
	    deputy_serve_dequeue(d, &kind, &body, &len)) {
		rc = away_message(d, kind, body, len, &cause);
		free(body);
		if (rc == -1) {
			deputy_away_lost(d, cause != NULL ? cause :
			    "it could not be served");
			free(cause);
			return;
		}
	}
}

/* The session is readable: the copy's messages, as many as have come. */
void
deputy_away_session_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct deputy	*d = w->data;
	const uint8_t	*body;
	size_t		 len;
	uint16_t	 kind;
	char		*cause = NULL;
	int		 rc = 0;

	/* EV_CUSTOM: fed by deputy_away_pending_cb, nothing to read */
	if (!(revents & EV_CUSTOM) && session_fill(&d->ses, &cause) == -1) {
		deputy_away_lost(d, cause != NULL ? cause :
		    "the connection closed");
		free(cause);
		return;
	}
	while (d->ses.fd != -1 && d->state == DEPUTY_AWAY &&
	    (rc = session_next(&d->ses, &kind, &body, &len, &cause)) == 1) {
		if (away_arrived(d, kind, body, len, &cause) == -1) {
			deputy_away_lost(d, cause != NULL ? cause :
			    "it could not be served");
			break;
		}
	}
	if (d->ses.fd != -1 && rc == -1)
		deputy_away_lost(d, cause);
	free(cause);
}

/*
 * Before the loop waits: what a linear receive (a move's, a checkpoint's,
 * the calls it settled) read past the message it wanted lies in the
 * session's buffer, where ses_ev cannot see it; R's end there would wait
 * for the silence timer. Taken as if the fd had said so, without reading
 * it (it blocks).
 */
void
deputy_away_pending_cb(struct ev_loop *loop, ev_prepare *w, int revents)
{
	struct deputy	*d = w->data;

	if (d->ses.fd != -1 && d->state == DEPUTY_AWAY &&
	    ev_is_active(&d->ses_ev) && session_ready(&d->ses))
		ev_feed_event(loop, &d->ses_ev, EV_CUSTOM);
}

void
deputy_away_silence_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	deputy_away_lost(w->data, "no word from it for too long");
}
