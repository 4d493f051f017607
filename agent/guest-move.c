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
#include <sys/syscall.h>
#include <sys/wait.h>

#include <linux/capability.h>
#include <linux/filter.h>

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"
#include "proto/migrate.pb-c.h"

struct move_restore {
	struct guest	*g;
	struct mig_task	*t;
	struct mig_pin	 pin;
};

/*
 * R, the image's process: it keeps its home's pid and thread ids, in a
 * PID namespace (and user namespace) of ours, so that its threads are
 * those of its husk at home, id for id, and threads it makes here can
 * take the ids of those made for them at home. A single-threaded process
 * may do without, where the namespace cannot be had (its threads then
 * bring it home). R holds nothing of this node: no log, no terminal on
 * 0-2.
 */
static struct mig_task *
move_spawn(struct guest *g, const struct mig_image *mi, char **cause)
{
	struct mig_task	*t;
	char		*why = NULL;

	g->threaded = mi->nthreads > 1;
	if ((t = mig_spawn_bare_pid(mi->header->pid, &why)) != NULL) {
		g->ids_kept = 1;
		return t;
	}
	if (mig_image_keeps_ids(mi)) {
		xasprintf(cause, "%zu threads, whose ids it must keep: %s",
		    mi->nthreads, why);
		free(why);
		return NULL;
	}
	log_warnx("%s: runs with an id of this node's: %s", g->conn.who, why);
	free(why);
	return mig_spawn_bare(cause);
}

/* R from the image, its files our stand-ins for those at home. */
static int
move_restore_fn(int fd, void *arg, char **cause)
{
	struct move_restore	*m = arg;
	struct mig_restore_opts	 opts = { .flags = MIG_CONTEXT };
	struct mig_image	 mi;
	int			 rc = -1;

	opts.mapped = guest_files_mapped;
	opts.mapped_arg = m->g;
	if (mig_restore_begin(fd, &mi, cause) == -1)
		return -1;
	if ((m->t = move_spawn(m->g, &mi, cause)) == NULL)
		goto out;
	m->g->pid = mig_pid(m->t);
	mig_pin(m->t, &m->pin);
	rc = mig_restore_from(m->t, &mi, &opts, NULL, cause);
out:
	mig_image_free(&mi);
	return rc;
}

/* R's context, as it goes home or into a checkpoint. */
int
guest_move_dump_fn(int fd, void *arg, char **cause)
{
	return mig_dump(arg, fd, MIG_CONTEXT | MIG_FILTERED, NULL, cause);
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
	struct move_restore mr;
	struct mig_task	*t;
	const uint8_t	*body;
	size_t		 len;
	uint16_t	 kind;
	int		 listener;
	char		*why = NULL;

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
	g->base.utime_ns = setup->cpu_user_ns;
	g->base.stime_ns = setup->cpu_sys_ns;
	if (guest_files_setup(g, setup, cause) == -1) {
		osm__ses_setup__free_unpacked(setup, NULL);
		return -1;
	}
	osm__ses_setup__free_unpacked(setup, NULL);

	mr.g = g;
	mr.t = NULL;
	if (session_recv_image(&g->ses, OSM__SES_KIND__SES_IMAGE,
	    OSM__SES_KIND__SES_IMAGE_END, move_restore_fn, &mr, cause) == -1)
		goto fail;
	t = mr.t;
	/* Restored: the descriptors of ours it was born with go. */
	if ((g->ids_kept && mig_call_ok(t, "close_range", NULL,
	    SYS_close_range, (sysargs){ 3, ~0U, 0 }, cause) == -1) ||
	    mig_call_ok(t, "PR_SET_PDEATHSIG", NULL, SYS_prctl,
	    (sysargs){ PR_SET_PDEATHSIG, SIGKILL }, cause) == -1 ||
	    move_drop_caps(t, cause) == -1 ||
	    (listener = move_confine(g, t, cause)) == -1)
		goto fail;
	if ((g->remote = remote_new(listener, g->pid, g->gs->pid, &g->base,
	    cause)) == NULL) {
		close(listener);
		goto fail;
	}
	/* R's CPU clocks answered in R; if not, by us (guest-stub.c) */
	if (guest_stub_install(g, t, &why) == -1) {
		log_info("%s: CPU clocks answered by the guest: %s",
		    g->conn.who, why);
		free(why);
	}
	/* R is our child: its end and its stops reach us by waitpid. */
	mig_unpin(t, &mr.pin);
	if (mig_release(t, cause) == -1) {
		kill(g->pid, SIGKILL);
		return -1;
	}
	arr.pid = g->pid;
	if (guest_ses_send(g, OSM__SES_KIND__SES_ARRIVED, &arr.base) == -1) {
		xasprintf(cause, "the home went away");
		kill(g->pid, SIGKILL);
		return -1;
	}
	log_info("%s (%s) runs here as %d", g->conn.who, g->gs->command,
	    (int)g->pid);
	return 0;
fail:
	if (mr.t != NULL) {
		mig_unpin(mr.t, &mr.pin);
		mig_kill(mr.t);
	}
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
	struct mig_task	*t;
	char		*cause = NULL;

	Osm__SesError	 reason = OSM__SES_ERROR__INIT;

	log_info("%s goes home: %s", g->conn.who, why);
	g->state = OSM__PROC_STATE__PROC_LEAVING;
	conn_report(&g->conn);
	if ((t = mig_seize(g->pid, &cause)) == NULL) {
		if (!guest_move_ended(g))
			guest_ses_fail(g, cause);
		free(cause);
		return;
	}
	/*
	 * Held signals are queued in R, frozen now: they go home with it,
	 * pending, and are taken there by the mask R then has — a wait's
	 * own mask among them (guest-serve.c).
	 */
	guest_signal_deliver_held(g);
	guest_files_stand_in(g, t);
	reason.reason = (char *)why;
	if (guest_ses_send(g, OSM__SES_KIND__SES_GO_HOME, &reason.base) == -1 ||
	    session_send_image(&g->ses, OSM__SES_KIND__SES_IMAGE,
	    OSM__SES_KIND__SES_IMAGE_END, guest_move_dump_fn, t,
	    &cause) == -1) {
		mig_kill(t);
		g->pid = 0;
		guest_ses_fail(g, cause != NULL ? cause : "going home failed");
	}
	mig_kill(t);	/* it lives at home now */
	g->pid = 0;
	guest_ses_stop(g, 0);
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
