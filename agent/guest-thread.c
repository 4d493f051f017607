/*
 * Threads made and ended while away (docs/REMOTE.md, "Threads"). Each
 * thread of R's has its mirror in the husk at home, of the same id, which
 * runs its forwarded calls. A thread R makes (clone, clone3 with
 * CLONE_THREAD) waits in its call while the home makes the mirror, whose
 * id the kernel chooses there; that id is then made the next in R's PID
 * namespace and R's clone runs as R made it, and gets it. A thread that
 * ends (exit) ends its mirror. One thread is made at a time: the id is
 * the namespace's next for whoever asks first. A process R makes (fork,
 * or clone without CLONE_THREAD) goes home, as before.
 */
#include <sys/syscall.h>

#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"
#include "proto/migrate.pb-c.h"

#define THREAD_WAIT_MS	2000	/* for a thread let made to show */

/* Ask the home for the mirror of the first thread waiting to be made. */
static void
thread_next(struct guest *g)
{
	Osm__SesThread	t = OSM__SES_THREAD__INIT;
	pid_t		v;

	while (g->nclones > 0 && !g->clone_asked) {
		if ((v = remote_vtid(g->remote, g->clones[0].tid)) == -1) {
			/* the maker is gone: so is its call */
			memmove(g->clones, g->clones + 1, --g->nclones *
			    sizeof *g->clones);
			continue;
		}
		t.seq = g->clones[0].seq = ++g->thread_seq;
		t.tid = v;
		if (guest_ses_send(g, OSM__SES_KIND__SES_THREAD_NEW,
		    &t.base) == -1)
			guest_ses_fail(g, "the home went away");
		g->clone_asked = 1;
	}
}

/* Thread vtid (as R knows it) ended, or was never made here: so is its mirror. */
static void
thread_gone(struct guest *g, pid_t vtid)
{
	Osm__SesThread	t = OSM__SES_THREAD__INIT;

	t.tid = vtid;
	if (guest_ses_send(g, OSM__SES_KIND__SES_THREAD_EXIT, &t.base) == -1)
		guest_ses_fail(g, "the home went away");
}

/* R's clone, clone3 or exit (REMOTE_THREAD). */
void
guest_thread_call(struct guest *g, const struct remote_event *ev)
{
	uint64_t	 flags = 0;
	pid_t		*tids, v;
	ssize_t		 n;
	char		*cause = NULL;

	if (ev->nr == SYS_exit) {
		/* the last thread's exit is the process's: SIGCHLD says */
		n = proc_threads(g->pid, &tids);
		free(tids);
		v = remote_vtid(g->remote, ev->tid);
		if (n > 1 && v != -1)
			thread_gone(g, v);
		if (v != -1)
			guest_stub_thread_gone(g, v);
		remote_thread_forget(g->remote, ev->tid);
		if (remote_continue(g->remote, ev->id, &cause) == -1)
			guest_ses_fail(g, cause);
		return;
	}
	if (remote_clone_flags(g->remote, ev->tid, ev->nr, ev->args,
	    &flags) == -1) {
		guest_move_want_home(g, "a clone whose flags cannot be read");
		return;
	}
	if (!(flags & CLONE_THREAD)) {
		guest_move_want_home(g, "new process");
		return;
	}
	if (!g->ids_kept) {
		guest_move_want_home(g, "new thread, whose id this node cannot "
		    "give it (no PID namespace of its own)");
		return;
	}
	if (guest_stub_threaded(g) == -1) {
		guest_move_want_home(g, "new thread, which the clock stub "
		    "could not be told of");
		return;
	}
	g->threaded = 1;
	pipes_threaded(g->remote);
	g->clones = xreallocarray(g->clones, g->nclones + 1,
	    sizeof *g->clones);
	g->clones[g->nclones].id = ev->id;
	g->clones[g->nclones].tid = ev->tid;
	g->clones[g->nclones++].seq = 0;
	thread_next(g);
}

/* Has R a thread of id vtid (as R knows it)? Wait a little for it. */
static int
thread_shows(struct guest *g, pid_t vtid)
{
	struct timespec	ts = { 0, 1000 * 1000 };
	int		i;

	for (i = 0; i < THREAD_WAIT_MS; i++) {
		if (remote_tid_here(g->remote, vtid) > 0)
			return 1;
		nanosleep(&ts, NULL);
	}
	return 0;
}

/* The home made the mirror (SES_THREAD_MADE): now R makes the thread. */
void
guest_thread_made(struct guest *g, const uint8_t *body, size_t len)
{
	Osm__SesThread	*t;
	char		*cause = NULL, *why;
	uint64_t	 id;

	if ((t = osm__ses_thread__unpack(NULL, len, body)) == NULL ||
	    !g->clone_asked || g->nclones == 0 || t->seq != g->clones[0].seq)
		guest_ses_fail(g, "unexpected thread from home");
	id = g->clones[0].id;
	memmove(g->clones, g->clones + 1, --g->nclones * sizeof *g->clones);
	g->clone_asked = 0;
	if (t->error != NULL) {
		xasprintf(&why, "new thread: %s", t->error);
		guest_move_want_home(g, why);
		free(why);
		osm__ses_thread__free_unpacked(t, NULL);
		return;
	}
	if (mig_pidns_next(g->pid, (pid_t)t->tid, &cause) == -1) {
		log_warnx("%s: %s", g->conn.who, cause);
		free(cause);
		thread_gone(g, t->tid);
		guest_move_want_home(g, "new thread, whose id this node could "
		    "not give it");
		osm__ses_thread__free_unpacked(t, NULL);
		return;
	}
	switch (remote_continue(g->remote, id, &cause)) {
	case -1:
		guest_ses_fail(g, cause);
	case 1:
		/* R left the call (a signal): it makes it again, anew */
		thread_gone(g, t->tid);
		break;
	default:
		if (!thread_shows(g, t->tid)) {
			xasprintf(&why, "thread %u was not made with its id",
			    t->tid);
			guest_ses_fail(g, why);
		}
		log_debug("%s: thread %u made", g->conn.who, t->tid);
	}
	osm__ses_thread__free_unpacked(t, NULL);
	thread_next(g);
}
