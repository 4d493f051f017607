/*
 * The process arriving here and leaving. Arriving: the setup and the
 * context image come on the session, are restored into a fresh child R,
 * which is put under its system-call filter (libremote builds it,
 * migrate/'s mig_seccomp puts it on) and let run. Leaving: R is frozen —
 * a call it waits on is left to restart, at home — and its image goes
 * home; the agent then ends. See docs/REMOTE.md.
 */
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include <linux/capability.h>
#include <linux/filter.h>

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"
#include "proto/migrate.pb-c.h"

/* A move arriving: its guest, and the holder of files had late. */
struct move_in {
	struct guest	*g;
	pid_t		 holder;
};

/*
 * Files had once R was made (SES_FILES) are not in the table R was born
 * with, and R, in a user namespace of its own, may not open ours through
 * /proc/<G>/fd (a ptrace check across namespaces). A child of ours that
 * joins R's user namespace holds them for the restore, which opens them
 * through /proc/<holder>/fd. Where R is in ours (we are root), ours do.
 */
static int
move_holder(struct move_in *in, char **cause)
{
	struct guest	*g = in->g;
	struct stat	 ours, its;
	char		 path[64], c;
	size_t		 i, late = 0;
	int		 p[2], fd;
	pid_t		 h;

	for (i = 0; i < g->nfiles; i++)
		late += g->files[i]->late;
	if (late == 0 || !g->ids_kept || in->holder != 0)
		return 0;
	snprintf(path, sizeof path, "/proc/%d/ns/user", (int)g->pid);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1 ||
	    fstat(fd, &its) == -1 || stat("/proc/self/ns/user", &ours) == -1) {
		xasprintf(cause, "%s: %s", path, strerror(errno));
		if (fd != -1)
			close(fd);
		return -1;
	}
	h = 0;
	if (its.st_ino != ours.st_ino || its.st_dev != ours.st_dev) {
		if (pipe2(p, O_CLOEXEC) == -1 || (h = fork()) == -1) {
			xasprintf(cause, "a holder of files: %s",
			    strerror(errno));
			close(fd);
			return -1;
		}
		if (h == 0) {
			close(p[0]);
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			c = setns(fd, CLONE_NEWUSER) == 0 ? 0 : errno;
			if (write(p[1], &c, 1) != 1 || c != 0)
				_exit(1);
			for (;;)
				pause();
		}
		close(p[1]);
		if (read(p[0], &c, 1) != 1 || c != 0) {
			xasprintf(cause, "a holder of files in R's user "
			    "namespace: %s", strerror(c != 0 ? c : EPIPE));
			kill(h, SIGKILL);
			waitpid(h, NULL, 0);
			close(p[0]);
			close(fd);
			return -1;
		}
		close(p[0]);
		in->holder = h;
	}
	close(fd);
	for (i = 0; i < g->nfiles; i++) {
		if (!g->files[i]->late)
			continue;
		snprintf(g->files[i]->self_link, sizeof g->files[i]->self_link,
		    "/proc/%d/fd/%d", (int)(h != 0 ? h : getpid()),
		    g->files[i]->fd);
		g->files[i]->late = 0;
	}
	return 0;
}

/*
 * Inside the image, before its description: the files P maps now, which
 * are more than the setup's (SES_FILES: it mapped some as it ran through
 * a live move's rounds or a post-copy move's setup). Had as the setup's,
 * before the restore checks them.
 */
static int
move_more_files(void *arg, uint16_t kind, const uint8_t *body, size_t len,
    char **cause)
{
	struct move_in	*in = arg;
	Osm__SesFiles	*m;
	int		 rc;

	if (kind != OSM__SES_KIND__SES_FILES ||
	    (m = osm__ses_files__unpack(NULL, len, body)) == NULL) {
		xasprintf(cause, "message of kind %u inside the image", kind);
		return -1;
	}
	log_info("%s: %zu files mapped now, told inside the image",
	    in->g->conn.who, m->n_files);
	rc = guest_files_setup(in->g, m->files, m->n_files, cause);
	osm__ses_files__free_unpacked(m, NULL);
	return rc == -1 ? -1 : move_holder(in, cause);
}

/*
 * What R's times() and getrusage() go on from (each of user and system
 * time on its own, never below what P could read at home); a deputy of
 * an older version said nothing: its CPU clocks'.
 */
static void
move_usage(struct guest *g, int said, uint64_t user_ns, uint64_t sys_ns)
{
	g->base.usage_user_ns = said ? user_ns : g->base.utime_ns;
	g->base.usage_sys_ns = said ? sys_ns : g->base.stime_ns;
}

/*
 * R from the image, straight from the session (no pipe, no pump thread),
 * its files our stand-ins for those at home; then the image's end, and
 * the CPU time P had used when it was frozen.
 */
static int
move_recv(struct guest *g, struct mig_task *t, char **cause)
{
	struct mig_restore_opts	opts = { .mapped = guest_files_mapped,
				    .mapped_arg = g };
	struct move_in		in = { .g = g, .holder = 0 };
	Osm__SesCpu		*cpu;
	const uint8_t		*body;
	uint16_t		 kind;
	size_t			 len;
	int			 rc;

	rc = image_recv(&g->ses, t, &opts, move_more_files, &in, NULL, cause);
	if (in.holder != 0) {
		kill(in.holder, SIGKILL);
		waitpid(in.holder, NULL, 0);
	}
	if (rc == -1 || session_recv(&g->ses, &kind, &body, &len, cause) == -1)
		return -1;
	/* R's CPU clocks go on from where P's stopped, not from the setup */
	if (kind != OSM__SES_KIND__SES_CPU ||
	    (cpu = osm__ses_cpu__unpack(NULL, len, body)) == NULL) {
		xasprintf(cause, "no CPU times after the image");
		return -1;
	}
	g->base.utime_ns = cpu->cpu_user_ns;
	g->base.stime_ns = cpu->cpu_sys_ns;
	move_usage(g, cpu->has_usage_user_ns && cpu->has_usage_sys_ns,
	    cpu->usage_user_ns, cpu->usage_sys_ns);
	osm__ses_cpu__free_unpacked(cpu, NULL);
	return 0;
}

/* R's context, as it goes home or into a checkpoint. */
int
guest_move_dump_fn(int fd, void *arg, char **cause)
{
	return mig_dump(arg, fd, MIG_CONTEXT | MIG_FILTERED, NULL, cause);
}

/* The rounds of a live way home are over: R frozen for the rest. */
static struct mig_task *
move_freeze(void *arg, char **cause)
{
	struct guest	*g = arg;
	struct mig_task	*t;

	if ((t = mig_seize(g->pid, cause)) == NULL)
		return NULL;
	/*
	 * Held signals are queued in R, frozen now: they go home with it,
	 * pending, and are taken there by the mask R then has — a wait's
	 * own mask among them (guest-serve.c).
	 */
	guest_signal_deliver_held(g);
	guest_files_stand_in(g, t);
	return t;
}

struct move_home {
	struct guest	*g;
	struct mig_live	 lv;		/* track NULL: R seized, lv.t */
	struct mig_stats st;
	struct postcopy_counts pc;		/* lv.post: its pages after */
};

/* R's image, straight into the session, then its end. */
static int
move_home_send(struct move_home *m, char **cause)
{
	return image_send(&m->g->ses, &m->lv, MIG_CONTEXT | MIG_FILTERED,
	    &m->st, cause);
}

/* The rounds and the freeze of the way home, in the agent's log. */
static void
move_home_log(struct guest *g, const struct move_home *m)
{
	const struct mig_live	*lv = &m->lv;
	char			 rounds[256];
	size_t			 off = 0;
	uint32_t		 i;

	if (g->remote != NULL)
		log_info("%s: goes home after %llu writes behind in R",
		    g->conn.who,
		    (unsigned long long)remote_stats(g->remote)->w_in_r);
	if (lv->post != NULL) {
		log_info("%s: home post-copy, frozen %.1f ms for %llu pages; "
		    "then %llu pages asked for by %llu faults, %llu pushed, "
		    "in %.1f ms", g->conn.who, m->st.frozen_us / 1000.0,
		    (unsigned long long)m->st.pages,
		    (unsigned long long)m->pc.answered,
		    (unsigned long long)m->pc.asks,
		    (unsigned long long)m->pc.pushed, m->pc.us / 1000.0);
		return;
	}
	if (lv->track == NULL) {
		log_info("%s: home, stopped for the copy, %llu pages, frozen "
		    "%.1f ms", g->conn.who, (unsigned long long)m->st.pages,
		    m->st.frozen_us / 1000.0);
		return;
	}
	rounds[0] = '\0';
	for (i = 0; i < lv->rounds && off < sizeof rounds - 24; i++)
		off += snprintf(rounds + off, sizeof rounds - off, "%s%llu",
		    i > 0 ? " " : "", (unsigned long long)lv->round_pages[i]);
	log_info("%s: home live, %u rounds of %s pages (%s), then frozen "
	    "%.1f ms for %llu pages; %llu bytes in %.1f ms", g->conn.who,
	    lv->rounds, rounds, lv->stop_why, lv->freeze_us / 1000.0,
	    (unsigned long long)lv->final_pages,
	    (unsigned long long)lv->bytes, lv->total_us / 1000.0);
}

/*
 * R, restored, gives up every capability, in every thread: those it had
 * in our user namespace (to make its threads with their ids) are none of
 * its business, and it must hold none to run here.
 */
static int
move_drop_caps(struct mig_task *t, char **cause)
{
	struct __user_cap_header_struct	 hdr = { _LINUX_CAPABILITY_VERSION_3,
					     0 };
	struct __user_cap_data_struct	 data[2];
	pid_t				*tids;
	size_t				 n, i;
	long				 page;
	int				 rc = -1;

	memset(data, 0, sizeof data);
	if (mig_call_ok(t, "mmap", &page, SYS_mmap, (sysargs){ 0, 4096,
	    PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0 },
	    cause) == -1)
		return -1;
	n = mig_threads(t, NULL, 0);
	tids = xcalloc(n, sizeof *tids);
	mig_threads(t, tids, n);
	if (mig_write(t, page, &hdr, sizeof hdr, cause) == -1 ||
	    mig_write(t, page + 64, data, sizeof data, cause) == -1)
		goto out;
	for (i = 0; i < n; i++)
		if (mig_thread_call_ok(t, tids[i], "capset", NULL, SYS_capset,
		    (sysargs){ page, page + 64 }, cause) == -1)
			goto out;
	rc = mig_call_ok(t, "munmap", NULL, SYS_munmap, (sysargs){ page,
	    4096 }, cause);
out:
	free(tids);
	return rc;
}

/*
 * R, with its home's pid (home_pid, the setup's), and so its thread ids,
 * in a PID namespace (and user namespace) of its own, so that its threads
 * are those of its husk at home, id for id, and threads it makes here can
 * take the ids of those made for them at home. Where the namespace cannot
 * be had, R runs with an id of this node's: a threaded image then refuses
 * to be restored (its ids would change), and a thread made here brings it
 * home. R holds nothing of this node: no log, no terminal on 0-2.
 */
static struct mig_task *
move_spawn(struct guest *g, pid_t home_pid, char **cause)
{
	struct mig_task	*t;
	char		*why = NULL;

	if ((t = mig_spawn_bare_pid(home_pid, &why)) != NULL) {
		g->ids_kept = 1;
		return t;
	}
	log_warnx("%s: runs with an id of this node's: %s", g->conn.who, why);
	free(why);
	return mig_spawn_bare(cause);
}

/*
 * Post-copy: R, restored and held, gets its userfaultfd, made by R
 * through the /dev/userfaultfd it was born holding (ours: only a child
 * made with our descriptors has it), on every private anonymous area.
 */
static struct mig_fetch *
move_post(struct guest *g, struct mig_task *t, char **cause)
{
	int	uffd;

	if (!g->ids_kept) {
		xasprintf(cause, "no post-copy: R was not made holding "
		    "/dev/userfaultfd");
		return NULL;
	}
	if ((uffd = mig_post_uffd(t, g->devfd, cause)) == -1)
		return NULL;
	/*
	 * R's layout is read as a dump of R would read it: the files we
	 * map for it (a memfd of ours, shared for glibc's gconv cache) are
	 * the files at home they stand for, not areas it cannot have.
	 */
	guest_files_stand_in(g, t);
	if (mig_post_register(t, uffd, cause) == -1) {
		close(uffd);
		return NULL;
	}
	return mig_fetch_new(uffd);
}

/*
 * R runs; its pages come until the last, then it has them all and the
 * home hears so. Calls of R's that stop for us wait meanwhile. -1: R is
 * lost, for the caller to kill.
 */
static int
move_post_fetch(struct guest *g, struct mig_fetch *f, char **cause)
{
	Osm__SesArrived		 arr = OSM__SES_ARRIVED__INIT;
	const struct mig_fetch_stats *fs;
	uint64_t		 t0 = now_us();

	if (postcopy_fetch(&g->ses, f, POST_SILENCE_MS, cause) == -1) {
		log_warnx("%s lost during post-copy: %s", g->conn.who, *cause);
		mig_fetch_free(f);
		return -1;
	}
	fs = mig_fetch_stats(f);
	log_info("%s: post-copy done: %llu faults from %u threads, %llu pages "
	    "on fault, %llu pushed, %llu there already, %llu dropped, %llu "
	    "moved, in %.1f ms", g->conn.who, (unsigned long long)fs->faults,
	    fs->threads, (unsigned long long)fs->fault_pages,
	    (unsigned long long)fs->pushed_pages,
	    (unsigned long long)fs->there, (unsigned long long)fs->dropped,
	    (unsigned long long)fs->remaps, (now_us() - t0) / 1000.0);
	mig_fetch_free(f);
	arr.pid = g->pid;
	if (guest_ses_send(g, OSM__SES_KIND__SES_ARRIVED, &arr.base) == -1) {
		xasprintf(cause, "the home went away");
		return -1;
	}
	return 0;
}

/* Put R, restored and held, under its filter: its listener, or -1. */
static int
move_confine(struct guest *g, struct mig_task *t, char **cause)
{
	struct sock_fprog	prog;
	int			listener;

	if (filter_build(&prog, cause) == -1)
		return -1;
	listener = mig_seccomp(t, &prog, cause);
	filter_free(&prog);
	return listener;
}

/*
 * Receive the setup and the image, restore R, put it under its filter,
 * let it run. R dies with us: a copy nobody serves is of no use.
 */
int
guest_move_arrive(struct guest *g, char **cause)
{
	Osm__SesSetup	*setup;
	Osm__SesArrived	 arr = OSM__SES_ARRIVED__INIT;
	struct mig_task	*t;
	struct mig_fetch *f = NULL;
	struct mig_pin	 pin;
	const uint8_t	*body;
	size_t		 len, i;
	uint16_t	 kind;
	int		 listener;
	char		*why = NULL;
	pid_t		 home_pid;

	if (session_recv(&g->ses, &kind, &body, &len, cause) == -1)
		return -1;
	if (kind != OSM__SES_KIND__SES_SETUP ||
	    (setup = osm__ses_setup__unpack(NULL, len, body)) == NULL) {
		xasprintf(cause, "the session did not start with a setup");
		return -1;
	}
	if (setup->pid != g->gs->pid) {
		osm__ses_setup__free_unpacked(setup, NULL);
		xasprintf(cause, "setup for another process");
		return -1;
	}
	g->stop_copy = setup->has_stop_copy && setup->stop_copy;
	g->strict_io = setup->has_strict_io && setup->strict_io;
	g->post = setup->has_post_copy && setup->post_copy && g->devfd != -1;
	if (setup->has_post_copy && setup->post_copy && !g->post)
		log_warnx("%s: no post-copy here: /dev/userfaultfd could not "
		    "be opened", g->conn.who);
	home_pid = setup->pid;
	g->base.utime_ns = setup->cpu_user_ns;
	g->base.stime_ns = setup->cpu_sys_ns;
	move_usage(g, setup->has_usage_user_ns &&
	    setup->has_usage_sys_ns, setup->usage_user_ns,
	    setup->usage_sys_ns);
	if (guest_files_setup(g, setup->files, setup->n_files, cause) == -1) {
		osm__ses_setup__free_unpacked(setup, NULL);
		return -1;
	}
	osm__ses_setup__free_unpacked(setup, NULL);

	g->uffd = -1;
	if ((t = move_spawn(g, home_pid, cause)) == NULL)
		return -1;
	g->pid = mig_pid(t);
	mig_pin(t, &pin);
	/*
	 * Restored: post-copy, its userfaultfd is made through the device it
	 * holds from us; then the descriptors of ours it was born with go.
	 */
	if (move_recv(g, t, cause) == -1 ||
	    (g->post && (f = move_post(g, t, cause)) == NULL) ||
	    (g->ids_kept && mig_call_ok(t, "close_range", NULL,
	    SYS_close_range, (sysargs){ 3, ~0U, 0 }, cause) == -1) ||
	    mig_call_ok(t, "PR_SET_PDEATHSIG", NULL, SYS_prctl,
	    (sysargs){ PR_SET_PDEATHSIG, SIGKILL }, cause) == -1)
		goto fail;
	g->threaded = mig_threads(t, NULL, 0) > 1;
	guest_stub_threads(g, t);
	/*
	 * R's userfaultfd for its way home, live: made now, by injection,
	 * as the filter would send the call home. R's own use of userfaultfd
	 * still goes home (libremote's table).
	 */
	if (!g->stop_copy && (g->uffd = mig_track_uffd(t, &why)) == -1) {
		log_warnx("%s: its way home will stop it for the whole copy: "
		    "%s", g->conn.who, why);
		free(why);
	}
	/* before its filter, which would send home what it injects */
	guest_stub_reads(g, t);
	if (move_drop_caps(t, cause) == -1 ||
	    (listener = move_confine(g, t, cause)) == -1)
		goto fail;
	if ((g->remote = remote_new(listener, g->pid, g->gs->pid, &g->base,
	    cause)) == NULL) {
		close(listener);
		goto fail;
	}
	if (g->threaded)
		pipes_threaded(g->remote);	/* its pipes written as is */
	/* the owner's policy or mosrun -s: every file call as it is */
	if (g->gs->strict_files || g->strict_io)
		remote_strict(g->remote);
	for (i = 0; i < g->ntcpu; i++)
		remote_thread_cpu(g->remote, mig_thread_here(t,
		    g->tcpu[i].tid), g->tcpu[i].ns);
	if (g->opener != -1)
		guest_open_attach(g);
	/* R's CPU clocks answered in R; if not, by us (guest-stub.c) */
	if (guest_stub_install(g, t, &why) == -1) {
		log_info("%s: CPU clocks answered by the guest: %s",
		    g->conn.who, why);
		free(why);
	}
	if (g->rstub.start != 0)
		rstub_attach(g->remote, g->rstub.shm, g->rstub.shared);
	/* R is our child: its end and its stops reach us by waitpid. */
	mig_unpin(t, &pin);
	if (mig_release(t, cause) == -1) {
		kill(g->pid, SIGKILL);
		return -1;
	}
	arr.pid = g->pid;
	arr.has_pending = arr.pending = f != NULL;
	if (guest_ses_send(g, OSM__SES_KIND__SES_ARRIVED, &arr.base) == -1) {
		xasprintf(cause, "the home went away");
		mig_fetch_free(f);
		kill(g->pid, SIGKILL);
		return -1;
	}
	log_info("%s (%s) runs here as %d%s", g->conn.who, g->gs->command,
	    (int)g->pid, f != NULL ? ", its pages following" : "");
	if (f != NULL && move_post_fetch(g, f, cause) == -1) {
		kill(g->pid, SIGKILL);
		return -1;
	}
	return 0;
fail:
	mig_fetch_free(f);
	mig_unpin(t, &pin);
	mig_kill(t);
	g->pid = 0;
	return -1;
}

/*
 * Has R ended, its end not reaped yet? Then the SIGCHLD handler, which the
 * loop runs, sends it home.
 */
int
guest_move_ended(struct guest *g)
{
	siginfo_t	si;

	memset(&si, 0, sizeof si);
	if (waitid(P_PID, g->pid, &si, WEXITED | WNOHANG | WNOWAIT) == -1 ||
	    si.si_pid != g->pid)
		return 0;
	ev_feed_signal_event(g->loop, SIGCHLD);
	return 1;
}

/*
 * Freeze R — a call it waits on is left to restart, at home — send it
 * home, and end. Returns only if R ended first: its end goes home (the
 * SIGCHLD handler), which is all the home needs.
 */
void
guest_move_home(struct guest *g, const char *why)
{
	Osm__SesError	 reason = OSM__SES_ERROR__INIT;
	struct move_home m;
	char		*cause = NULL;

	log_info("%s goes home: %s", g->conn.who, why);
	g->state = OSM__PROC_STATE__PROC_LEAVING;
	conn_report(&g->conn);
	memset(&m, 0, sizeof m);
	m.g = g;
	/*
	 * Sent home by the memory guard, R is frozen at once: live, it would
	 * go on growing through the rounds, into the OOM killer (which, if
	 * it still comes, ends R here, and its end goes home as such). So
	 * it is when the order said post-copy or stop and copy.
	 */
	if (g->uffd != -1 && (g->short_of_memory ||
	    g->home_how != GUEST_HOME_LIVE)) {
		close(g->uffd);
		g->uffd = -1;
	}
	if (g->home_how == GUEST_HOME_POST)
		m.lv.post = mig_post_new();
	if (g->uffd != -1) {
		/* Live: R runs on while its memory goes, in rounds. */
		m.lv.track = mig_track_fd(g->pid, g->uffd);
		g->uffd = -1;
		m.lv.freeze = move_freeze;
		m.lv.arg = g;
		/*
		 * What R owes the home's offsets goes now, before the home
		 * is told (it runs no call after): the stub and the windows
		 * serve no more, every call of the rounds goes as it is.
		 */
		guest_stub_reads_off(g);
		if (g->remote != NULL)
			remote_strict(g->remote);
		guest_files_stand_in(g, NULL);
		m.lv.hidden = guest_stub_hide(g, NULL);
		m.lv.stand_ins = g->stand_ins;
		m.lv.nstand_ins = g->nfiles;
	} else if ((m.lv.t = move_freeze(g, &cause)) == NULL) {
		if (!guest_move_ended(g))
			guest_ses_fail(g, cause);
		free(cause);
		return;
	}
	reason.reason = (char *)why;
	if (guest_ses_send(g, OSM__SES_KIND__SES_GO_HOME, &reason.base) == -1 ||
	    move_home_send(&m, &cause) == -1 || (m.lv.post != NULL &&
	    postcopy_serve(&g->ses, m.lv.post, POST_SILENCE_MS, &m.pc, &cause) ==
	    -1)) {
		mig_post_free(m.lv.post);
		mig_track_free(m.lv.track);
		if (m.lv.t != NULL)
			mig_kill(m.lv.t);
		else
			kill(g->pid, SIGKILL);
		g->pid = 0;
		guest_ses_fail(g, cause != NULL ? cause : "going home failed");
	}
	move_home_log(g, &m);
	mig_post_free(m.lv.post);
	mig_track_free(m.lv.track);
	mig_kill(m.lv.t);	/* it lives at home now */
	g->pid = 0;
	/*
	 * Not closed under the home's feet: what it sent since it called R
	 * home (replies, data read ahead) lies unread here, and a close with
	 * unread data resets the connection, which drops the end of the
	 * image still on its way to the home: the process was lost.
	 */
	guest_ses_linger(g);
	guest_ses_stop(g, 0);
}

/*
 * The home asks whether R may leave now, for a move it chose (mosmigrate,
 * the balancer): not while R holds a lock on a file opened here
 * (remote_may_leave), which would end with R's copy. The stub in R takes
 * such locks unseen (rstub.c): so R is held stopped while the guest looks,
 * and the stub's lock calls are taken away first, unless a thread is
 * taking one right then (its lock would come after the look); from a yes
 * on, they come to the guest, which sends them home. The answer is a
 * reason, or none for yes.
 */
void
guest_move_may_leave(struct guest *g)
{
	Osm__SesError	 reason = OSM__SES_ERROR__INIT;
	struct mig_task	*t = NULL;
	char		*why = NULL, *cause = NULL;
	int		 locks = 0;

	if ((g->rstub.fcntl.fn != 0 || g->rstub.flock.fn != 0) &&
	    remote_opened_here(g->remote)) {
		if ((t = mig_seize(g->pid, &cause)) == NULL) {
			xasprintf(&why, "its locks could not be looked at: %s",
			    cause);
			free(cause);
		} else if (guest_stub_locking(g))
			why = xstrdup("it is taking a lock on a file opened "
			    "where it runs");
		else
			locks = rstub_locks(g->remote, 0);
	}
	if (why == NULL && !remote_may_leave(g->remote, &why) && locks)
		rstub_locks(g->remote, 1);
	if (t != NULL)
		guest_release(g, t);
	if (why != NULL)
		log_info("%s stays for now: %s", g->conn.who, why);
	/* what waits to go home (an open made here) goes before the answer */
	remote_flush(g->remote);
	guest_ses_out(g, 1);
	reason.reason = why != NULL ? why : "";
	if (guest_ses_send(g, OSM__SES_KIND__SES_LEAVE_ANSWER,
	    &reason.base) == -1)
		guest_ses_fail(g, "the home went away");
	free(why);
}

/*
 * R must go home, for a call it can make only there: ask the home to call
 * it (SES_WANT_HOME), which it does once the files R maps are checked;
 * R waits in the call meanwhile, and goes with SES_COME_HOME.
 */
void
guest_move_want_home(struct guest *g, const char *why)
{
	Osm__SesError	reason = OSM__SES_ERROR__INIT;

	if (g->homeward)
		return;
	log_info("%s must go home: %s", g->conn.who, why);
	reason.reason = (char *)why;
	if (guest_ses_send(g, OSM__SES_KIND__SES_WANT_HOME, &reason.base) ==
	    -1)
		guest_ses_fail(g, "the home went away");
	g->homeward = 1;
}
