/*
 * Checkpoints of a process away, taken where it runs (docs/REMOTE.md,
 * "Checkpoints while away"). The home asks for R's context; the guest
 * freezes R, sends its image, and lets it go on. Only while no call of
 * R's is at home, so that what the home adds (descriptors, offsets) is of
 * the same moment; else once the call's reply is in (the home breaks off
 * a call that blocks, and R makes it again after).
 */
#include <stdlib.h>

#include "internal.h"
#include "proto/migrate.pb-c.h"

/*
 * Take the checkpoint the home asked for, if it can be taken now. A call
 * R made meanwhile that nobody took yet is broken off by the freeze and
 * made again after it. Signals the freeze took are in the image, and are
 * sent to R again from here, as kill or sigqueue (R's filter would send a
 * re-queueing inside R home).
 *
 * broken: the call the home broke off for it, which R, frozen in it,
 * makes again, or which is dropped if R ended; 0 if none. -1 if it is
 * still to be made: R was not frozen (not asked, or a call at home).
 */
int
guest_ckpt(struct guest *g, uint64_t broken)
{
	Osm__SesError	 err = OSM__SES_ERROR__INIT;
	struct mig_task	*t;
	char		*cause = NULL;

	if (!g->ckpt_wanted || g->ncalls != 0)
		return -1;
	g->ckpt_wanted = 0;
	if ((t = mig_seize(g->pid, &cause)) == NULL) {
		err.reason = cause;
		err.has_ended = 1;
		err.ended = guest_move_ended(g);
		if (guest_ses_send(g, OSM__SES_KIND__SES_CHECKPOINT,
		    &err.base) == -1)
			guest_ses_fail(g, "the home went away");
		free(cause);
		if (!err.ended)
			return -1;
		if (broken != 0)
			remote_forget(g->remote, broken);
		return 0;
	}
	if (broken != 0)
		remote_forget(g->remote, broken);
	guest_files_stand_in(g, t);
	if (guest_ses_send(g, OSM__SES_KIND__SES_CHECKPOINT, NULL) == -1 ||
	    session_send_image(&g->ses, OSM__SES_KIND__SES_IMAGE,
	    OSM__SES_KIND__SES_IMAGE_END, guest_move_dump_fn, t,
	    &cause) == -1) {
		log_warnx("%s: checkpoint: %s", g->conn.who,
		    cause != NULL ? cause : "the home went away");
		free(cause);
		cause = NULL;
	} else
		log_info("%s: checkpoint image sent", g->conn.who);
	guest_release(g, t);
	return 0;
}
