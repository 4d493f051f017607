/*
 * Threads made and ended while the process is away (docs/REMOTE.md,
 * "Threads"): each thread of the copy has its mirror in the husk, of the
 * same id, which runs its forwarded calls. A thread the copy makes is
 * made here first, by the mirror of its maker (which waits in no call:
 * its copy waits in the clone), with the id the kernel gives it here;
 * the guest then has the copy's clone take that id. A thread that ends
 * away ends its mirror. Each returns -1 with *cause when the session
 * broke or the guest sent what it may not: the caller gives the copy up.
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "proto/migrate.pb-c.h"

#define THREAD_SCRATCH	(256UL << 10)	/* a new lane's, as a move's */

static int
thread_answer(struct deputy *d, uint64_t seq, pid_t tid, const char *error,
    char **cause)
{
	Osm__SesThread	t = OSM__SES_THREAD__INIT;

	t.seq = seq;
	t.tid = tid;
	t.error = (char *)error;
	return session_send_msg(&d->ses, OSM__SES_KIND__SES_THREAD_MADE,
	    &t.base, cause);
}

/* A thread of the copy's makes one (SES_THREAD_NEW): its mirror first. */
int
deputy_thread_new(struct deputy *d, const uint8_t *body, size_t len,
    char **cause)
{
	Osm__SesThread		*t;
	struct husk_lane	*l, *nl;
	char			*why = NULL;
	pid_t			 maker, made = 0;
	int			 rc = -1;

	if ((t = osm__ses_thread__unpack(NULL, len, body)) == NULL) {
		xasprintf(cause, "malformed thread");
		return -1;
	}
	if ((l = husk_lane(&d->husk, t->tid)) == NULL) {
		xasprintf(cause, "thread %u, which the process has not, makes "
		    "one", t->tid);
		goto out;
	}
	maker = l->tid;
	if (l->running && mig_thread_interrupt(d->task, maker, cause) == -1)
		goto out;
	l->running = l->busy = 0;
	if (mig_thread_new_in(d->task, maker, 0, &made, &why) == -1 ||
	    (nl = husk_lane_add(&d->husk, made, THREAD_SCRATCH,
	    &why)) == NULL) {
		/* none made, or its mirror left half made: end it */
		log_warnx("process %d: no thread for thread %d: %s",
		    (int)d->pid, (int)maker, why);
		if (made != 0 && husk_lane(&d->husk, made) == NULL) {
			char	*ignored = NULL;

			if (mig_thread_exit(d->task, made, &ignored) == -1)
				free(ignored);
		}
		rc = husk_run_lane(&d->husk, husk_lane(&d->husk, maker),
		    cause) == -1 || thread_answer(d, t->seq, 0, why,
		    cause) == -1 ? -1 : 0;
		goto out;
	}
	log_debug("process %d: thread %d made thread %d", (int)d->pid,
	    (int)maker, (int)made);
	/* lanes moved: look the maker up again */
	if (husk_run_lane(&d->husk, husk_lane(&d->husk, maker), cause) == -1 ||
	    husk_run_lane(&d->husk, husk_lane(&d->husk, made), cause) == -1 ||
	    deputy_signal_stolen(d, cause) == -1)
		goto out;
	rc = thread_answer(d, t->seq, made, NULL, cause);
out:
	free(why);
	osm__ses_thread__free_unpacked(t, NULL);
	return rc;
}

/* A thread of the copy's ended (SES_THREAD_EXIT): so does its mirror. */
int
deputy_thread_exit(struct deputy *d, const uint8_t *body, size_t len,
    char **cause)
{
	Osm__SesThread		*t;
	struct husk_lane	*l;
	int			 rc = -1;

	if ((t = osm__ses_thread__unpack(NULL, len, body)) == NULL) {
		xasprintf(cause, "malformed thread");
		return -1;
	}
	if ((l = husk_lane(&d->husk, t->tid)) == NULL) {
		xasprintf(cause, "thread %u, which the process has not, ended",
		    t->tid);
		goto out;
	}
	if (d->husk.nlanes == 1) {
		xasprintf(cause, "its last thread ended, alone");
		goto out;
	}
	log_debug("process %d: thread %d ended", (int)d->pid, (int)l->tid);
	rc = husk_lane_end(&d->husk, l, cause);
out:
	osm__ses_thread__free_unpacked(t, NULL);
	return rc;
}
