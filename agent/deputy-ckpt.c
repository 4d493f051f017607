/*
 * Checkpoints for users. mosrun -C FILE has the deputy write FILE.1,
 * FILE.2, ... every -A minutes and whenever mosmigrate PID checkpoint asks,
 * keeping the last -N; mosrun -R FILE makes a new process of one, on any
 * node, whose home is that node. A checkpoint is a whole image of
 * migrate/'s (memory, registers, signal state, the working directory and
 * the regular files at their offsets); it is written under a temporary
 * name and renamed once complete, so that a crash while writing never
 * spoils the one before. At home a checkpoint is live and incremental:
 * P runs on while its memory goes (migrate/precopy.c), and each FILE.N
 * after the first holds only what P wrote since FILE.N-1 (a chain,
 * docs/IMAGE.md); one in CKPT_CHAIN, or in -N, is whole again, and -N
 * keeps every file the last -N need. A process away is checkpointed where it runs:
 * its copy sends its context, and P's husk adds what stays at home
 * (docs/REMOTE.md, "Checkpoints while away").
 */
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"
#include "proto/ctl.pb-c.h"
#include "proto/migrate.pb-c.h"

#define CKPT_NUDGE	0.1	/* seconds a call may block a checkpoint */
#define CKPT_CHAIN	8	/* images in a chain at most, without -N */
#define CKPT_SAID_MAX	65536	/* bytes kept of what was said since one */

/*
 * Say how the checkpoint asked for went to the orders waiting for it (path
 * NULL: it failed, why says why).
 */
static void
ckpt_answer(struct deputy *d, const char *path, const char *why)
{
	Osm__CtlReply	reply = OSM__CTL_REPLY__INIT;
	size_t		i;

	reply.ok = path != NULL;
	reply.path = (char *)path;
	reply.error = (char *)why;
	for (i = 0; i < d->nckpt_waiting; i++)
		ctl_order_answer(d->ckpt_waiting[i], &reply);
	d->nckpt_waiting = 0;
}

/* P ended: no checkpoint of it is coming. */
void
deputy_ckpt_ended(struct deputy *d)
{
	ckpt_answer(d, NULL, "the process ended");
}

static uint64_t
ckpt_clock_ms(void)
{
	struct timespec	ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/*
 * How a checkpoint went (path NULL: it failed, why says why), for the log
 * and for mosps. A failure is logged when its reason is new: every -A
 * minutes the same one would fill the log.
 */
static void
ckpt_note(struct deputy *d, const char *path, const char *why)
{
	Osm__CtlCheckpoints	*c = &d->ckpt_seen;
	int			 failing;

	failing = c->has_failed_ms && (!c->has_last_ms ||
	    c->failed_ms >= c->last_ms);
	if (path != NULL) {
		if (failing)
			log_info("process %d (%s): checkpoint %s, the first "
			    "since %u failed", (int)d->pid, d->command, path,
			    c->failed);
		else
			log_info("process %d (%s): checkpoint %s", (int)d->pid,
			    d->command, path);
		free(d->ckpt_ok_path);
		d->ckpt_ok_path = xstrdup(path);
		c->has_last_ms = 1;
		c->last_ms = ckpt_clock_ms();
		c->last_path = d->ckpt_ok_path;
		c->written++;
	} else {
		if (!failing || strncmp(why, d->ckpt_why,
		    sizeof d->ckpt_why - 1) != 0)
			log_warnx("process %d (%s): no checkpoint: %s",
			    (int)d->pid, d->command, why);
		snprintf(d->ckpt_why, sizeof d->ckpt_why, "%s", why);
		c->has_failed_ms = 1;
		c->failed_ms = ckpt_clock_ms();
		c->failed_why = d->ckpt_why;
		c->failed++;
	}
	conn_report(&d->conn);
}

/*
 * The first checkpoint asked for that cannot be taken is said on P's
 * stderr, t holding P (its own, at home, or its husk's), as MOSIX's
 * "MOSRUN:" lines are: the user learns that a crash would lose the
 * process. Later ones only go to the log, and mosps -v shows the last
 * good one.
 */
static void
ckpt_tell(struct deputy *d, struct mig_task *t, const char *why)
{
	char	msg[640];
	int	n;

	if (d->ckpt_told || t == NULL)
		return;
	d->ckpt_told = 1;
	n = snprintf(msg, sizeof msg, "mosrun: process %d (%s): cannot "
	    "checkpoint: %.400s (said once; mosps -v shows the last good "
	    "checkpoint)\n", (int)d->pid, d->command, why);
	if (n >= (int)sizeof msg)
		n = sizeof msg - 1;
	if (husk_say(t, 2, msg, n) == 0)
		deputy_ckpt_said(d, msg, n);
}

/* At home: P held just long enough for the line on its stderr. */
static void
ckpt_tell_home(struct deputy *d, const char *why)
{
	char	*ignored = NULL;

	if (d->ckpt_told)
		return;
	if (deputy_hold(d, 0, &ignored) == 0) {
		ckpt_tell(d, d->task, why);
		deputy_hold_resume(d);
	}
	free(ignored);
}

/* For mosps: how its checkpoints go, once any was asked for. */
void
deputy_ckpt_describe(struct deputy *d, Osm__CtlAgent *a)
{
	/* Its first hello comes before deputy_ckpt_init. */
	if (d->ckpt_seen.base.descriptor == NULL)
		return;
	if (d->o->ckpt_every > 0 || d->ckpt_seen.written > 0 ||
	    d->ckpt_seen.failed > 0)
		a->checkpoints = &d->ckpt_seen;
}

/*
 * mosrun --checkpoint-exec PROG: run PROG FILE REASON PID once FILE is
 * written, as P's owner (we are), its output on P's standard error (or
 * ours), not waited for: a double fork leaves it to init. REASON is what
 * asked: signal (--checkpoint-on), timer (-A) or request (mosmigrate).
 */
static void
ckpt_exec(struct deputy *d, const char *path)
{
	const char	*reason = d->ckpt_signalled ? "signal" :
			    d->ckpt_reason != NULL ? d->ckpt_reason : "request";
	char		 err[64], pid[16];
	char		*argv[] = { (char *)d->o->ckpt_exec, (char *)path,
			    (char *)reason, pid, NULL };
	sigset_t	 none;
	pid_t		 child;
	int		 fd, status;

	snprintf(err, sizeof err, "/proc/%d/fd/2", (int)d->pid);
	snprintf(pid, sizeof pid, "%d", (int)d->pid);
	sigemptyset(&none);
	if ((child = fork()) == -1) {
		log_warn("--checkpoint-exec %s: fork", d->o->ckpt_exec);
		return;
	}
	if (child == 0) {
		if (fork() != 0)
			_exit(0);
		if ((fd = open(err, O_WRONLY | O_APPEND)) != -1) {
			dup2(fd, 1);
			dup2(fd, 2);
		} else
			dup2(2, 1);
		close_range(3, ~0U, 0);
		signal(SIGPIPE, SIG_DFL);
		sigprocmask(SIG_SETMASK, &none, NULL);
		execvp(argv[0], argv);
		dprintf(2, "mosrun: --checkpoint-exec %s: %s\n", argv[0],
		    strerror(errno));
		_exit(127);
	}
	while (waitpid(child, &status, 0) == -1 && errno == EINTR)
		;
}

/* How a checkpoint asked for went: the orders, the log, the program. */
static void
ckpt_done(struct deputy *d, const char *path, const char *why)
{
	ckpt_answer(d, path, why);
	ckpt_note(d, path, why);	/* the log, mosps */
	if (path != NULL && d->o->ckpt_exec != NULL)
		ckpt_exec(d, path);
	d->ckpt_signalled = 0;
}

/* The next FILE.N, open under a temporary name (lib/atomic.c). */
static int
ckpt_create(struct deputy *d, struct atomic_file *af, char **cause)
{
	char	*name;
	int	 fd;

	xasprintf(&name, "%s.%u", d->ckpt_base, d->ckpt_last + 1);
	fd = atomic_create(af, name, cause);
	free(name);
	return fd;
}

/*
 * Beyond -N, forget what the last -N no longer need: every file before
 * the first of the chain the oldest of them is part of.
 */
static void
ckpt_forget(struct deputy *d)
{
	unsigned	 oldest, keep;
	char		*old;

	if (d->o->ckpt_max == 0 || d->ckpt_last <= d->o->ckpt_max)
		return;
	oldest = d->ckpt_last - d->o->ckpt_max + 1;
	keep = d->ckpt_start[oldest];
	for (; d->ckpt_gone + 1 < keep; d->ckpt_gone++) {
		xasprintf(&old, "%s.%u", d->ckpt_base, d->ckpt_gone + 1);
		unlink(old);
		free(old);
	}
}

/*
 * The image in af is whole (ok) or not: make it FILE.N for good, forgetting
 * the oldest beyond -N, its name in *path; or throw it away, the file's
 * name put before *cause.
 */
static int
ckpt_commit(struct deputy *d, struct atomic_file *af, int ok, char **path,
    char **cause)
{
	char	*name, *old;

	if (!ok && cause != NULL && *cause != NULL) {
		xasprintf(&old, "%s: %s", af->path, *cause);
		free(*cause);
		*cause = old;
	}
	name = xstrdup(af->path);
	if (atomic_commit(af, ok, cause) == -1) {
		free(name);
		return -1;
	}
	d->ckpt_last++;
	/* A restart from this one finds what was said before it in place. */
	d->ckpt_nsaid = 0;
	d->ckpt_start = xreallocarray(d->ckpt_start, d->ckpt_last + 1,
	    sizeof *d->ckpt_start);
	d->ckpt_start[d->ckpt_last] = d->ckpt_whole ? d->ckpt_last :
	    d->ckpt_start[d->ckpt_last - 1];
	ckpt_forget(d);
	*path = name;
	return 0;
}

/* The rounds of a checkpoint are over: P held for the rest. */
static struct mig_task *
ckpt_freeze(void *arg, char **cause)
{
	struct deputy	*d = arg;

	if (deputy_hold(d, 0, cause) == -1)
		return NULL;
	return d->task;
}

/*
 * The dump of P, held, into fd: live, and if the file before is the
 * last this tracker made and the chain is short enough, only what P
 * wrote since. P runs during the rounds; held again after, if all went
 * well. Without a tracker, a whole dump, P stopped for it.
 */
static int
ckpt_dump(struct deputy *d, int fd, char **cause)
{
	struct mig_live	 lv;
	char		*why = NULL, *parent = NULL, *slash;
	unsigned	 chain = d->o->ckpt_max > 0 ? d->o->ckpt_max : CKPT_CHAIN;
	int		 rc;

	if (d->track == NULL && (d->track = mig_track_new(d->task,
	    &why)) == NULL) {
		log_warnx("process %d (%s): its checkpoints stop it for the "
		    "whole copy: %s", (int)d->pid, d->command, why);
		free(why);
		d->ckpt_whole = 1;
		return mig_dump(d->task, fd, 0, NULL, cause);
	}
	memset(&lv, 0, sizeof lv);
	lv.track = d->track;
	lv.freeze = ckpt_freeze;
	lv.arg = d;
	lv.hidden = deputy_clock_hidden(d);
	d->ckpt_whole = !d->ckpt_delta || d->ckpt_last == 0 ||
	    d->ckpt_last + 1 - d->ckpt_start[d->ckpt_last] >= chain;
	if (!d->ckpt_whole) {
		xasprintf(&parent, "%s.%u", d->ckpt_base, d->ckpt_last);
		slash = strrchr(parent, '/');
		lv.parent = slash != NULL ? slash + 1 : parent;
		lv.parent_crc = d->ckpt_crc;
		lv.parent_records = d->ckpt_records;
	}
	/* The tracker's state is this image's until it is committed. */
	d->ckpt_delta = 0;
	deputy_hold_resume(d);
	rc = mig_dump_live(&lv, fd, 0, NULL, cause);
	free(parent);
	if (rc == 0) {
		d->ckpt_crc = lv.end_crc;
		d->ckpt_records = lv.end_records;
		log_info("process %d (%s): checkpoint %s, %u rounds, frozen "
		    "%.1f ms for %llu pages, %llu bytes", (int)d->pid,
		    d->command, d->ckpt_whole ? "whole" : "of what changed",
		    lv.rounds, lv.freeze_us / 1000.0,
		    (unsigned long long)lv.final_pages,
		    (unsigned long long)lv.bytes);
	}
	return rc;
}

/*
 * Checkpoint P, at home, into the next FILE.N: the file's name in *path,
 * or -1 with *cause (said on P's stderr the first time). P goes on after
 * it, failed or not.
 */
static int
ckpt_write(struct deputy *d, char **path, char **cause)
{
	struct atomic_file	af;
	int			ok;

	if (ckpt_create(d, &af, cause) == -1) {
		ckpt_tell_home(d, *cause);
		return -1;
	}
	if ((ok = deputy_hold(d, 0, cause) == 0)) {
		ok = ckpt_dump(d, af.fd, cause) == 0;
		if (d->state == DEPUTY_HELD)
			deputy_hold_resume(d);
	}
	if (ckpt_commit(d, &af, ok, path, cause) == -1) {
		ckpt_tell_home(d, *cause);
		return -1;
	}
	/* The next may add to this one. */
	d->ckpt_delta = d->track != NULL;
	return 0;
}

/*
 * A checkpoint now: at home one is written at once; away the copy is
 * asked for its context (SES_CHECKPOINT), which comes in deputy_ckpt_away.
 * An order's connection, if fd is not -1, is answered once it is written.
 * -1 with *cause if the session broke asking: the copy is lost.
 */
int
deputy_ckpt_take(struct deputy *d, int fd, char **cause)
{
	char	*path = NULL, *why = NULL;

	if (fd != -1) {
		d->ckpt_waiting = xreallocarray(d->ckpt_waiting,
		    d->nckpt_waiting + 1, sizeof *d->ckpt_waiting);
		d->ckpt_waiting[d->nckpt_waiting++] = fd;
	}
	if (d->state == DEPUTY_AWAY) {
		/* Lost, the session closed: its restart or end answers. */
		if (d->ses.fd == -1 || d->ckpt_asked)
			return 0;
		if (deputy_files_send(d, OSM__SES_KIND__SES_CHECKPOINT,
		    cause) == -1)
			return -1;
		d->ckpt_asked = 1;
		ev_timer_again(d->loop, &d->ckpt_nudge);
		return 0;
	}
	d->ckpt_asked = 0;
	if (ckpt_write(d, &path, &why) == -1)
		ckpt_done(d, NULL, why);
	else
		ckpt_done(d, path, NULL);
	free(path);
	free(why);
	return 0;
}

/* P is home again: what was asked of the copy is taken here. */
void
deputy_ckpt_home(struct deputy *d)
{
	char	*cause = NULL;

	if (d->ckpt_asked || d->nckpt_waiting > 0)
		deputy_ckpt_take(d, -1, &cause);	/* at home: no session */
	free(cause);
}

/*
 * Away, the copy sends its context only once no call of its runs at home.
 * Every tick after the request, a call running at home then (a read from
 * a terminal or a pipe that blocks, say) is broken off, as a signal would
 * break it off, and the copy makes it again after the checkpoint; a call
 * that ends meanwhile is not disturbed, and one only starting ends or is
 * caught at the next tick. Not a wait with a timeout of its own: made
 * again it would wait its whole timeout anew; it ends by itself.
 */
static void
ckpt_nudge_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct deputy		*d = w->data;
	struct husk_lane	*l;
	size_t			 i;

	if (!d->ckpt_asked || d->state != DEPUTY_AWAY) {
		ev_timer_stop(loop, w);
		return;
	}
	for (i = 0; i < d->husk.nlanes; i++) {
		l = &d->husk.lanes[i];
		if (l->call != NULL && l->held == NULL && l->busy &&
		    !home_timed(l->call) && !l->call->behind) {
			l->nudged = 1;
			ptrace(PTRACE_INTERRUPT, l->tid, 0, 0);
		}
	}
}

/*
 * Where checkpoints go: -C's FILE, else ckpt.PID, relative to the
 * directory mosrun started in. The -A timer is the caller's (deputy.c).
 */
void
deputy_ckpt_init(struct deputy *d)
{
	char	cwd[PATH_MAX];

	if (d->o->ckpt_base != NULL && d->o->ckpt_base[0] == '/')
		d->ckpt_base = xstrdup(d->o->ckpt_base);
	else {
		if (getcwd(cwd, sizeof cwd) == NULL)
			snprintf(cwd, sizeof cwd, "/tmp");
		if (d->o->ckpt_base != NULL)
			xasprintf(&d->ckpt_base, "%s/%s", cwd, d->o->ckpt_base);
		else
			xasprintf(&d->ckpt_base, "%s/ckpt.%d", cwd,
			    (int)d->pid);
	}
	osm__ctl_checkpoints__init(&d->ckpt_seen);
	ev_timer_init(&d->ckpt_nudge, ckpt_nudge_cb, 0, CKPT_NUDGE);
	d->ckpt_nudge.data = d;
}

struct ckpt_husk {
	struct deputy		*d;
	struct atomic_file	 af;	/* the checkpoint file; fd -1: none */
	char			*why;	/* why there is none */
	int			 failed; /* we failed, not the session */
};

static int
ckpt_husk_fn(int ctx, void *arg, char **cause)
{
	struct ckpt_husk	*h = arg;
	char			 buf[65536];

	if (h->af.fd == -1) {
		*cause = h->why;
		h->why = NULL;
	} else if (mig_dump_husk(h->d->task, ctx, h->af.fd, cause) == 0)
		return 0;
	/* The rest of the image is read, so that the session goes on. */
	h->failed = 1;
	while (read(ctx, buf, sizeof buf) > 0)
		;
	return -1;
}

/*
 * The copy's answer to deputy_ckpt_take: its context (body empty, an
 * image follows), to which P's husk, held meanwhile, adds what stays at
 * home, into the next FILE.N; or why not (a SesError). The guest sends it
 * with no call of R's under way, so P's descriptors are of R's moment. -1
 * with *cause if the copy is lost: the session broke, or it sent what was
 * not asked for.
 */
int
deputy_ckpt_away(struct deputy *d, const uint8_t *body, size_t len,
    char **lost)
{
	struct ckpt_husk	 h = { .d = d, .af = { .fd = -1 } };
	Osm__SesError		*e;
	char			*path = NULL;
	char			*cause = NULL, *why = NULL;
	int			 rc, ended;

	if (!d->ckpt_asked || husk_busy(&d->husk)) {
		xasprintf(lost, "it sent a checkpoint that was not asked for");
		return -1;
	}
	d->ckpt_asked = 0;
	if (len > 0) {
		e = osm__ses_error__unpack(NULL, len, body);
		xasprintf(&cause, "node %u: %s", d->where, e != NULL ?
		    e->reason : "a malformed refusal");
		/* R ended meanwhile: its end follows, nothing to tell. */
		ended = e != NULL && e->has_ended && e->ended;
		if (e != NULL)
			osm__ses_error__free_unpacked(e, NULL);
		/* No call of R's runs at home: its husk waits, idle. */
		if (!d->ckpt_told && !ended) {
			if (husk_hold(&d->husk, &why) == -1)
				goto lost_why;
			ckpt_tell(d, d->task, cause);
			if (husk_run(&d->husk, &why) == -1)
				goto lost_why;
		}
		goto answer;
	}
	ckpt_create(d, &h.af, &h.why);
	if (husk_hold(&d->husk, &cause) == -1)
		goto lost;
	rc = session_recv_image(&d->ses, OSM__SES_KIND__SES_IMAGE,
	    OSM__SES_KIND__SES_IMAGE_END, ckpt_husk_fn, &h, &cause);
	if (rc == -1 && !h.failed)
		goto lost;
	if (h.af.fd != -1) {
		d->ckpt_whole = 1;
		d->ckpt_delta = 0;
		ckpt_commit(d, &h.af, rc == 0, &path, &cause);
	}
	if (path == NULL)
		ckpt_tell(d, d->task, cause);
	if (husk_run(&d->husk, &why) == -1)
		goto lost_why;
	/* The silence timer was last set before the image: count anew. */
	ev_now_update(d->loop);
	ev_timer_again(d->loop, &d->ses_timer);
answer:
	ckpt_done(d, path, cause);
	free(path);
	free(cause);
	/* Last: relaying a signal may find the session broken. */
	return deputy_signal_stolen(d, lost);
lost_why:
	free(cause);
	cause = why;
lost:
	/* Its end, or its restart at home, answers the orders. */
	if (h.af.fd != -1)
		ckpt_commit(d, &h.af, 0, &path, NULL);
	free(path);
	free(h.why);
	*lost = cause;
	return -1;
}

/*
 * osmosis wrote msg on P's stderr (a refused checkpoint told, a restart's
 * notice): kept until the next good checkpoint, for a restart from the
 * last one to say it again (deputy_ckpt_retell).
 */
void
deputy_ckpt_said(struct deputy *d, const char *msg, size_t len)
{
	if (d->ckpt_nsaid + len > CKPT_SAID_MAX) {
		log_warnx("process %d (%s): a restart will not say again "
		    "what was said since the last checkpoint: over %d bytes",
		    (int)d->pid, d->command, CKPT_SAID_MAX);
		return;
	}
	d->ckpt_said = xreallocarray(d->ckpt_said, d->ckpt_nsaid + len, 1);
	memcpy(d->ckpt_said + d->ckpt_nsaid, msg, len);
	d->ckpt_nsaid += len;
}

/*
 * The notice of a restart from the last good checkpoint, msg, into
 * *notice, its length returned. A restart rewinds a regular file to the
 * checkpoint's offset, and the program writes there again what it wrote
 * since: the lines osmosis wrote on its stderr meanwhile would be written
 * over, and the tail of one longer than what replaces it would stay after
 * the program's last line. They come again first, so that the file is
 * the unbroken run's with whole lines of ours. A pipe, a terminal or a
 * file written at its end (O_APPEND) is not rewound: they stay where
 * they are, and are not said twice.
 */
size_t
deputy_ckpt_retell(struct deputy *d, const char *msg, size_t len,
    char **notice)
{
	struct stat	 st;
	char		 path[64];
	unsigned int	 flags;
	uint64_t	 pos;
	size_t		 again = 0;

	snprintf(path, sizeof path, "/proc/%d/fd/2", (int)d->pid);
	if (d->ckpt_nsaid > 0 && stat(path, &st) == 0 &&
	    S_ISREG(st.st_mode) && deputy_io_fdinfo(d->pid, 2, &pos,
	    &flags) == 0 && (flags & O_APPEND) == 0)
		again = d->ckpt_nsaid;
	*notice = xmalloc(again + len);
	if (again > 0)
		memcpy(*notice, d->ckpt_said, again);
	memcpy(*notice + again, msg, len);
	return again + len;
}

/*
 * The last checkpoint written, checked whole with the chain it ends (so
 * that a bad file changes nothing), its name in *path; -1 when there is
 * none (*cause NULL) or it will not do (*cause says why).
 */
int
deputy_ckpt_last(struct deputy *d, char **path, char **cause)
{
	*cause = NULL;
	if (d->ckpt_last == 0)
		return -1;
	xasprintf(path, "%s.%u", d->ckpt_base, d->ckpt_last);
	if (mig_chain_load(*path, cause) == -1) {
		free(*path);
		*path = NULL;
		return -1;
	}
	return 0;
}

/* What the recovery could not bring back as it was: on the user's stderr. */
static void
ckpt_recover_warn(void *arg, const char *msg)
{
	struct deputy	*d = arg;

	fprintf(stderr, "mosrun: %s: %s (--fd N=PATH opens another)\n",
	    d->o->recover, msg);
}

/*
 * mosrun -R: P stops itself once we hold it; make it the process of the
 * checkpoint, then let it run. Why not is said here, on the user's
 * stderr: a bad file leaves P as it was, and P, let go from its stop,
 * exits 1; a failed restore leaves P half made, and it is killed (its
 * parent sees SIGKILL) and -1 returned, for the deputy to end.
 */

int
deputy_ckpt_recover(struct deputy *d)
{
	struct mig_restore_opts	 opts = { .flags = 0 };
	char			*cause = NULL;
	int			 status;

	opts.overrides = d->o->overrides;
	opts.noverrides = d->o->noverrides;
	opts.warn = ckpt_recover_warn;
	opts.warn_arg = d;
	for (;;) {
		while (waitpid(d->pid, &status, __WALL) == -1 && errno == EINTR)
			;
		if (!WIFSTOPPED(status)) {
			xasprintf(&cause, "mosrun ended before the recovery");
			goto fail;
		}
		if ((status >> 16) == 0 && WSTOPSIG(status) == SIGSTOP)
			break;
		ptrace(PTRACE_CONT, d->pid, 0, 0);
	}
	if (mig_chain_load(d->o->recover, &cause) == -1 ||
	    deputy_hold(d, 1, &cause) == -1 ||
	    mig_restore_chain(d->task, d->o->recover, &opts, NULL,
	    &cause) == -1)
		goto fail;
	deputy_clock_restored(d);
	deputy_hold_resume(d);
	return 0;
fail:
	fprintf(stderr, "mosrun: cannot recover from %s: %s\n",
	    d->o->recover, cause);
	free(cause);
	if (d->task != NULL) {
		mig_kill(d->task);
		d->task = NULL;
		return -1;
	}
	ptrace(PTRACE_CONT, d->pid, 0, 0);
	return 0;
}
