/*
 * Moving the process. Out: P is held at home, a session is asked of mosd
 * for the target node, the setup and P's context image go to the target's
 * guest agent, and once it says the copy runs there P becomes a husk.
 * Home: the copy's image comes back on the session and is restored into P
 * itself, which then runs natively again. A move elsewhere goes through
 * home (deputy-away.c), where the process's state is whole. See
 * docs/REMOTE.md.
 */
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/syscall.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"
#include "proto/ctl.pb-c.h"
#include "proto/migrate.pb-c.h"

#define MOVE_TIMEOUT		60	/* seconds for a move to finish */
#define MOVE_SCRATCH_MIN	(256UL << 10)

/* A move out: stop-and-copy, or live (the process runs meanwhile). */
struct move_out {
	struct deputy	*d;
	uint32_t	 node;
	struct mig_live	 lv;		/* track NULL: stop-and-copy */
	struct mig_stats st;
	struct postcopy_counts pc;		/* lv.post: its pages after */
};

/*
 * The setup (or SES_FILES) is sent: answer the guest's asks about the
 * files P maps until it is ready for the image, or says why it will not
 * take the process. post (NULL after SES_FILES): may it be post-copy?
 */
static int
move_files(struct deputy *d, uint32_t node, int *post, char **cause)
{
	Osm__SesReady	*ready;
	char		*why;
	const uint8_t	*body;
	size_t		 len;
	uint16_t	 kind;

	for (;;) {
		if (session_recv(&d->ses, &kind, &body, &len, cause) == -1)
			return -1;
		switch (kind) {
		case OSM__SES_KIND__SES_READY:
			ready = len > 0 ? osm__ses_ready__unpack(NULL, len,
			    body) : NULL;
			if (post != NULL && *post && (ready == NULL ||
			    !ready->has_post_copy || !ready->post_copy)) {
				log_warnx("process %d (%s): node %u cannot "
				    "take it post-copy: it stops for the copy",
				    (int)d->pid, d->command, node);
				*post = 0;
			}
			if (ready != NULL)
				osm__ses_ready__free_unpacked(ready, NULL);
			return 0;
		case OSM__SES_KIND__SES_FILE_ASK:
			if (deputy_files_answer(d, body, len, cause) == -1)
				return -1;
			break;
		case OSM__SES_KIND__SES_ERROR:
			why = ses_error_reason(body, len, "malformed error");
			xasprintf(cause, "node %u: %s", node, why);
			free(why);
			return -1;
		default:
			xasprintf(cause, "node %u: unexpected answer to the "
			    "setup", node);
			return -1;
		}
	}
}

/*
 * P, held, ran since the setup listed its files: if it maps more now (a
 * library it loaded, a file it mapped), the guest is told inside the
 * image, before the description that names them, and has them as it has
 * the setup's (fetched from home where its node has no same copy).
 */
static int
move_more_files(struct move_out *m, char **cause)
{
	switch (deputy_files_relist(m->d, cause)) {
	case -1:
		return -1;
	case 0:
		return 0;
	}
	return deputy_files_more(m->d, cause) == -1 ||
	    move_files(m->d, m->node, NULL, cause) == -1 ? -1 : 0;
}

/* The rounds are over: P held for the last pages (d->task). */
static struct mig_task *
move_freeze(void *arg, char **cause)
{
	struct move_out	*m = arg;

	if (deputy_hold(m->d, 0, cause) == -1 ||
	    move_more_files(m, cause) == -1)
		return NULL;
	return m->d->task;
}

/*
 * The image, straight into the session (no pipe, no pump thread: the
 * frames are sealed from the dump's own buffers), then its end.
 */
static int
move_send(struct deputy *d, struct move_out *m, char **cause)
{
	Osm__SesCpu	cpu = OSM__SES_CPU__INIT;
	char		*why = NULL;

	/*
	 * Post-copy (or stop-and-copy in its stead): held only now, its
	 * layout read just before (the freeze reuses it if it holds).
	 */
	if (m->lv.post != NULL && d->state != DEPUTY_HELD &&
	    mig_post_prepare(m->lv.post, d->pid, MIG_CONTEXT, m->lv.hidden,
	    &why) == -1) {
		log_debug("process %d: layout before the freeze: %s",
		    (int)d->pid, why);
		free(why);
	}
	if (m->lv.track == NULL && d->state != DEPUTY_HELD &&
	    (deputy_hold(d, 0, cause) == -1 || move_more_files(m, cause) == -1))
		return -1;
	if (m->lv.track == NULL)
		m->lv.t = d->task;
	/* P's pending signals stay in P: its husk passes them on */
	if (image_send(&d->ses, &m->lv, MIG_CONTEXT | MIG_PENDING_STAY,
	    &m->st, cause) == -1)
		return -1;
	/* P is frozen now: what it used while the rounds went counts too. */
	deputy_clock_cpu(d, &cpu.cpu_user_ns, &cpu.cpu_sys_ns);
	d->cpu_sent_ns = cpu.cpu_user_ns + cpu.cpu_sys_ns;
	deputy_clock_usage(d, &cpu.usage_user_ns, &cpu.usage_sys_ns);
	cpu.has_usage_user_ns = cpu.has_usage_sys_ns = 1;
	return session_send_msg(&d->ses, OSM__SES_KIND__SES_CPU, &cpu.base,
	    cause);
}

/*
 * Track P's writes for a live move, and let it run until the rounds are
 * over; without tracking (P stopped where it must stay, or no
 * userfaultfd) the move stops and copies.
 */
static void
move_live(struct deputy *d, struct move_out *m, int stopped)
{
	char		*why = NULL;
	const char	*env;

	m->d = d;
	m->lv.freeze = move_freeze;
	m->lv.arg = m;
	m->lv.hidden = deputy_clock_hidden(d);
	if (m->lv.post != NULL) {
		/* it runs on until the image: then held, and goes at once */
		if (!stopped)
			deputy_hold_resume(d);
		return;
	}
	if (stopped || d->move == OSM__MOVE_MODE__MOVE_STOP ||
	    (d->move == OSM__MOVE_MODE__MOVE_DEFAULT &&
	    d->o->move_mode == DEPUTY_MOVE_STOP))
		return;
	/* For tests: exactly that many rounds, whatever they achieve. */
	if ((env = getenv("OSM_LIVE_ROUNDS")) != NULL &&
	    (m->lv.rounds_min = m->lv.rounds_max = atoi(env)) > 0)
		m->lv.freeze_bytes = 1;
	/* One tracker for P: its checkpoints' own, if it has one. */
	d->ckpt_delta = 0;
	if ((m->lv.track = d->track) == NULL &&
	    (m->lv.track = d->track = mig_track_new(d->task, &why)) == NULL) {
		log_warnx("process %d (%s): no live move, it stops for the "
		    "whole copy: %s", (int)d->pid, d->command, why);
		free(why);
		return;
	}
	deputy_hold_resume(d);
}

/* Is this move post-copy? (The guest may yet say it cannot.) */
static int
move_is_post(struct deputy *d, int stopped)
{
	if (stopped)
		return 0;
	return d->move == OSM__MOVE_MODE__MOVE_POST ||
	    (d->move == OSM__MOVE_MODE__MOVE_DEFAULT &&
	    d->o->move_mode == DEPUTY_MOVE_POST);
}

/* The rounds and the freeze, in the deputy's log. */
static void
move_log(struct deputy *d, const struct move_out *m, uint32_t node)
{
	const struct mig_live	*lv = &m->lv;
	char			 rounds[256];
	size_t			 off = 0;
	uint32_t		 i;
	uint64_t		 hot, left;

	if (lv->post != NULL) {
		hot = mig_post_pages(lv->post, &left);
		log_info("process %d (%s) to node %u: post-copy, frozen %.1f "
		    "ms for %llu hot pages, %llu bytes; then %llu pages "
		    "left, %llu asked for by %llu faults, %llu pushed, in "
		    "%.1f ms", (int)d->pid, d->command, node,
		    m->st.frozen_us / 1000.0, (unsigned long long)hot,
		    (unsigned long long)m->st.bytes, (unsigned long long)left,
		    (unsigned long long)m->pc.answered,
		    (unsigned long long)m->pc.asks,
		    (unsigned long long)m->pc.pushed, m->pc.us / 1000.0);
		return;
	}
	if (lv->track == NULL) {
		log_info("process %d (%s) to node %u: stopped for the copy, "
		    "%llu pages, %llu bytes, frozen %.1f ms", (int)d->pid,
		    d->command, node, (unsigned long long)m->st.pages,
		    (unsigned long long)m->st.bytes, m->st.frozen_us / 1000.0);
		return;
	}
	rounds[0] = '\0';
	for (i = 0; i < lv->rounds && off < sizeof rounds - 24; i++)
		off += snprintf(rounds + off, sizeof rounds - off, "%s%llu",
		    i > 0 ? " " : "", (unsigned long long)lv->round_pages[i]);
	log_info("process %d (%s) to node %u: live, %u rounds of %s pages "
	    "in %.1f ms (%s), then frozen %.1f ms for %llu pages; %llu bytes "
	    "in %.1f ms", (int)d->pid, d->command, node, lv->rounds, rounds,
	    (lv->total_us - lv->freeze_us) / 1000.0, lv->stop_why,
	    lv->freeze_us / 1000.0, (unsigned long long)lv->final_pages,
	    (unsigned long long)lv->bytes, lv->total_us / 1000.0);
}

/* R's image, straight from the session into P, and its end. */
static int
move_recv(struct deputy *d, struct mig_stats *st, char **cause)
{
	struct mig_restore_opts	opts = { .flags = 0 };

	return image_recv(&d->ses, d->task, &opts, NULL, NULL, st, cause);
}

/*
 * May its way home be post-copy? Only if asked, and if P can have a
 * userfaultfd that takes the kernel's faults too: made by a user with the
 * privilege (root, or vm.unprivileged_userfaultfd set), tried on us, who
 * are P's user.
 */
int
deputy_move_post_home(struct deputy *d)
{
	int	fd;

	if (d->move != OSM__MOVE_MODE__MOVE_POST &&
	    (d->move != OSM__MOVE_MODE__MOVE_DEFAULT ||
	    d->o->move_mode != DEPUTY_MOVE_POST))
		return 0;
	if ((fd = syscall(SYS_userfaultfd, O_CLOEXEC)) == -1) {
		log_warnx("process %d (%s): its way home is not post-copy: "
		    "userfaultfd: %s", (int)d->pid, d->command,
		    strerror(errno));
		return 0;
	}
	close(fd);
	return 1;
}

/*
 * Post-copy home: P, restored and held, gets its userfaultfd before it
 * runs; then it runs, and its pages come. 0: home, every page in; -1:
 * lost with its pages half here, P held (again).
 */
static int
move_home_post(struct deputy *d, uint64_t t0, char **cause)
{
	Osm__SesArrived		 arr = OSM__SES_ARRIVED__INIT;
	const struct mig_fetch_stats *fs;
	struct mig_fetch	*f;
	char			*why = NULL;
	int			 uffd;

	if ((uffd = mig_post_uffd(d->task, -1, cause)) == -1)
		return -1;
	if (mig_post_register(d->task, uffd, cause) == -1) {
		close(uffd);
		return -1;
	}
	f = mig_fetch_new(uffd);
	deputy_move_home(d);
	if (postcopy_fetch(&d->ses, f, POST_SILENCE_MS, cause) == -1) {
		/*
		 * Closed first: a thread waiting on a page in a call of its
		 * own would keep P from stopping (it sees zeros: the state is
		 * given up anyway).
		 */
		mig_fetch_free(f);
		deputy_move_close(d);
		if (deputy_hold(d, 0, &why) == -1) {
			log_warnx("process %d: %s", (int)d->pid, why);
			free(why);
			kill(d->pid, SIGKILL);
		}
		return -1;
	}
	fs = mig_fetch_stats(f);
	log_info("process %d (%s) is home post-copy: %llu faults from %u "
	    "threads, %llu pages on fault, %llu pushed, %llu there already, "
	    "%llu dropped, %llu moved, in %.1f ms", (int)d->pid, d->command,
	    (unsigned long long)fs->faults, fs->threads,
	    (unsigned long long)fs->fault_pages,
	    (unsigned long long)fs->pushed_pages,
	    (unsigned long long)fs->there, (unsigned long long)fs->dropped,
	    (unsigned long long)fs->remaps, (now_us() - t0) / 1000.0);
	mig_fetch_free(f);
	arr.pid = d->pid;
	if (session_send_msg(&d->ses, OSM__SES_KIND__SES_ARRIVED, &arr.base,
	    &why) == -1) {
		log_warnx("process %d: %s", (int)d->pid, why);
		free(why);
	}
	deputy_move_close(d);
	return 0;
}

/*
 * Make P a husk: its memory released, the stub serving forwarded calls in
 * place, every signal unblocked, killed with the deputy should the deputy
 * die. The stub then waits for calls.
 */
static int
move_husk(struct deputy *d, char **cause)
{
	/*
	 * A forwarded call wakes P, and P's trap wakes us: on one CPU each
	 * wakeup is cheap, across two in this kind of VM it costs tens of
	 * microseconds (docs/PERFORMANCE.md); so does each call we inject to
	 * make the husk. P's own affinity comes back with it.
	 */
	mig_pin(d->task, &d->pin);
	deputy_clock_leave(d);
	if (husk_make(d->task, MOVE_SCRATCH_MIN, &d->husk, cause) == -1)
		return -1;
	/* the stub unblocks every signal as it starts */
	if (deputy_hold_options(d, cause) == -1 ||
	    husk_run(&d->husk, cause) == -1) {
		husk_free(&d->husk);
		return -1;
	}
	return 0;
}

/*
 * A session with the guest agent of node, through mosd (CTL_CONNECT):
 * asked for first (move_ask), so that mosd opens it and the target
 * starts its guest agent while P's files are listed and hashed, then
 * taken (move_open).
 */
static int
move_ask(struct deputy *d, uint32_t node, char **cause)
{
	Osm__CtlRequest	 req = OSM__CTL_REQUEST__INIT;

	req.type = OSM__CTL_TYPE__CTL_CONNECT;
	req.has_pid = req.has_node = 1;
	req.pid = d->pid;
	req.node = node;
	return conn_send(&d->conn, &req, cause);
}

static int
move_open(struct deputy *d, uint32_t node, char **cause)
{
	Osm__CtlReply	*r;
	struct timeval	 tv = { .tv_sec = MOVE_TIMEOUT };
	int		 fd;

	if ((r = conn_reply(&d->conn, &fd, cause)) == NULL)
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
	return 0;
}

/* Close the session, if one is open. */
void
deputy_move_close(struct deputy *d)
{
	if (d->ses.fd == -1)
		return;
	ev_io_stop(d->loop, &d->ses_ev);
	ev_timer_stop(d->loop, &d->ses_timer);
	close(d->ses.fd);
	session_free(&d->ses);
	d->ses.fd = -1;
}

/* The answer to a move: arrived, or why not. */
static int
move_arrived(struct deputy *d, uint32_t node, int *pending, char **cause)
{
	Osm__SesArrived	*arr;
	char		*why;
	const uint8_t	*body;
	size_t		 len;
	uint16_t	 kind;

	if (session_recv(&d->ses, &kind, &body, &len, cause) == -1)
		return -1;
	if (kind == OSM__SES_KIND__SES_ERROR) {
		why = ses_error_reason(body, len, "malformed error");
		xasprintf(cause, "node %u: %s", node, why);
		free(why);
		return -1;
	}
	if (kind != OSM__SES_KIND__SES_ARRIVED ||
	    (arr = osm__ses_arrived__unpack(NULL, len, body)) == NULL) {
		xasprintf(cause, "node %u: unexpected answer", node);
		return -1;
	}
	*pending = arr->has_pending && arr->pending;
	log_info("process %d (%s) now runs on node %u as %u%s", (int)d->pid,
	    d->command, node, arr->pid, *pending ? ", its pages following" :
	    "");
	osm__ses_arrived__free_unpacked(arr, NULL);
	return 0;
}

/*
 * Move P, running at home or in a ptrace stop if stopped, to node. On any
 * failure before the target has it running, P goes on at home as if
 * nothing happened: -1, *cause says why. 1 if the copy runs there but P
 * could not become its husk (*cause says why): the process is lost, for
 * the caller to say so. 2 if it was lost during post-copy, its memory on
 * both nodes: P is held, for the caller to give up. 0: away.
 */
int
deputy_move_out(struct deputy *d, uint32_t node, int stopped, char **cause)
{
	Osm__SesSetup	 setup = OSM__SES_SETUP__INIT;
	struct move_out	 m;
	char		*why = NULL;
	int		 rc, post, pending = 0;

	memset(&m, 0, sizeof m);
	m.node = node;
	if (deputy_hold(d, stopped, cause) == -1)
		return -1;
	post = move_is_post(d, stopped);
	setup.has_post_copy = setup.post_copy = post;
	setup.pid = d->pid;
	setup.uid = getuid();
	setup.gid = getgid();
	deputy_clock_cpu(d, &setup.cpu_user_ns, &setup.cpu_sys_ns);
	d->cpu_sent_ns = setup.cpu_user_ns + setup.cpu_sys_ns;
	deputy_clock_usage(d, &setup.usage_user_ns, &setup.usage_sys_ns);
	setup.has_usage_user_ns = setup.has_usage_sys_ns = 1;
	setup.command = d->command;
	setup.has_stop_copy = setup.stop_copy =
	    d->o->move_mode == DEPUTY_MOVE_STOP;
	setup.has_strict_io = setup.strict_io = d->o->strict_io;
	if (move_ask(d, node, cause) == -1) {
		deputy_hold_resume(d);
		return -1;
	}
	if (deputy_files_list(d, cause) == -1) {
		/* the session asked for, if it came, goes unused */
		if (move_open(d, node, &why) == 0)
			deputy_move_close(d);
		free(why);
		deputy_hold_resume(d);
		return -1;
	}
	if (post)
		m.lv.post = mig_post_new();
	move_live(d, &m, stopped);
	/* hashed while mosd opens the session: the setup carries them */
	deputy_files_known(d);
	deputy_files_prehash(d);
	crypto_aead_prepare();
	rc = move_open(d, node, cause);
	deputy_files_setup(d, &setup);
	rc = rc == -1 ||
	    session_send_msg(&d->ses, OSM__SES_KIND__SES_SETUP, &setup.base,
	    cause) == -1 || move_files(d, node, &post, cause) == -1 ? -1 : 0;
	if (rc == 0 && !post && m.lv.post != NULL) {
		mig_post_free(m.lv.post);
		m.lv.post = NULL;
	}
	rc = rc == -1 || move_send(d, &m, cause) == -1 ||
	    move_arrived(d, node, &pending, cause) == -1 ? -1 : 0;
	deputy_files_setup_free(&setup);
	deputy_files_clear(d);
	if (rc == -1) {
		mig_post_free(m.lv.post);
		deputy_move_close(d);
		/* Still running if the rounds had not ended. */
		if (d->state == DEPUTY_HELD)
			deputy_hold_resume(d);
		return -1;
	}
	/*
	 * Post-copy: it runs there, and P, held, is the source of the pages
	 * it has not yet. From here a failure loses the process.
	 */
	if (pending && (m.lv.post == NULL || postcopy_serve(&d->ses, m.lv.post,
	    POST_SILENCE_MS, &m.pc, cause) == -1)) {
		if (m.lv.post == NULL)
			xasprintf(cause, "node %u wants pages of a move that "
			    "sent them all", node);
		mig_post_free(m.lv.post);
		deputy_move_close(d);
		return 2;
	}
	move_log(d, &m, node);
	mig_post_free(m.lv.post);
	/* Closed, our userfaultfd leaves P's memory as it was. */
	mig_track_free(d->track);
	d->track = NULL;

	/* Arrived: only now may P's memory go. */
	d->state = DEPUTY_AWAY;
	d->where = node;
	deputy_why(d, "moved to node %u", node);
	d->cpu_at = now_ms();
	if (move_husk(d, cause) == -1)
		return 1;	/* it runs there; P was what failed */
	ev_io_set(&d->ses_ev, d->ses.fd, EV_READ);
	ev_io_start(d->loop, &d->ses_ev);
	/*
	 * The loop's clock stood still while the move ran (seconds, for a
	 * large one): without this, silence would be counted from before.
	 */
	ev_now_update(d->loop);
	ev_timer_again(d->loop, &d->ses_timer);
	return 0;
}

/* P, held, is the process again and goes on natively at home. */
void
deputy_move_home(struct deputy *d)
{
	husk_free(&d->husk);
	mig_unpin(d->task, &d->pin);
	deputy_files_forget(d);
	d->where = d->self;
	deputy_clock_restored(d);
	deputy_hold_resume(d);
	conn_report(&d->conn);
	deputy_ckpt_home(d);
}

/*
 * The image of the process is coming home on the session, asked by us or
 * by the guest: restore it into P and let P run natively. -1 with *cause:
 * the process is lost; 2: lost during post-copy, P held (d->post_home:
 * this way home is post-copy).
 */
int
deputy_move_arrive_home(struct deputy *d, char **cause)
{
	struct mig_stats	st;
	uint64_t		t0 = now_us();
	int			post = d->post_home;

	d->post_home = 0;
	ev_io_stop(d->loop, &d->ses_ev);
	ev_timer_stop(d->loop, &d->ses_timer);
	/* Whatever P was doing for R is moot: R's state comes whole. */
	deputy_serve_done(d);
	memset(&st, 0, sizeof st);
	if (husk_hold(&d->husk, cause) == -1 ||
	    move_recv(d, &st, cause) == -1) {
		deputy_move_close(d);
		return -1;
	}
	if (post) {
		log_info("process %d (%s) runs home, its pages following: %llu "
		    "hot pages, %llu bytes in %.1f ms", (int)d->pid,
		    d->command, (unsigned long long)st.pages,
		    (unsigned long long)st.bytes, (now_us() - t0) / 1000.0);
		if (move_home_post(d, t0, cause) == 0)
			return 0;
		deputy_move_close(d);
		return 2;
	}
	deputy_move_close(d);
	log_info("process %d (%s) is home: %u rounds, %llu pages, %llu "
	    "bytes in %.1f ms", (int)d->pid, d->command, st.rounds,
	    (unsigned long long)st.pages, (unsigned long long)st.bytes,
	    (now_us() - t0) / 1000.0);
	deputy_move_home(d);
	return 0;
}
