/*
 * The restore, start to end: read and check the whole description of the
 * process, and the target against it, before the target is touched; then
 * make its threads the image's, replace its memory, files, task state and
 * signals by injected calls, the pages as they stream in, and only once
 * the final seal has proved the stream whole, set each thread's
 * registers. The caller then lets the process go (mig_release). On
 * failure a fresh target is killed: no half-restored process is ever left
 * running.
 */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "lib/osm.h"
#include "internal.h"

/* Read and check the description; the reader stays in mi for the rest. */
int
mig_restore_begin(int fd, struct mig_image *mi, char **cause)
{
	struct img	*img;

	img = xmalloc(sizeof *img);
	img_init(img, fd);
	if (img_read_meta(img, mi, cause) == -1) {
		free(img);
		return -1;
	}
	mi->rd = img;
	return 0;
}

int
mig_restore_from(struct mig_task *t, struct mig_image *mi,
    const struct mig_restore_opts *o, struct mig_stats *st, char **cause)
{
	struct mig_pin	 pin = { .pinned = 0 };
	int		 rc = -1, flags = o != NULL ? o->flags : 0;
	int		 context = flags & MIG_CONTEXT;

	if (st != NULL)
		memset(st, 0, sizeof *st);
	if (mi->rd == NULL) {
		xasprintf(cause, "image description not read");
		goto out;
	}
	if ((!context && (core_check_local(mi->task, cause) == -1 ||
	    files_check(mi->files, o, cause) == -1)) ||
	    regs_check(t, mi->threads[0]->regs, cause) == -1 ||
	    threads_check_target(t, mi, cause) == -1 ||
	    mm_check_files(mi->mm, o, cause) == -1 ||
	    mm_check_target(t, mi->mm, cause) == -1)
		goto out;

	/* From here on the target changes; first, its threads. */
	mig_pin(t, &pin);
	if (threads_make(t, mi, cause) == -1 ||
	    rseq_unregister_all(t, cause) == -1 ||
	    mm_restore_clear(t, mi->mm, cause) == -1 ||
	    core_restore_identity(t, mi->task, flags, cause) == -1 ||
	    mm_restore_map(t, mi->mm, o, cause) == -1 ||
	    (!context && files_restore(t, mi->files, o, cause) == -1) ||
	    pages_restore(t, mi->mm, mi->rd, st, cause) == -1 ||
	    mm_restore_prot(t, mi->mm, cause) == -1 ||
	    core_restore(t, mi->header, mi->task, flags, cause) == -1 ||
	    sig_restore(t, mi->sig, flags, cause) == -1 ||
	    threads_restore(t, mi, flags, cause) == -1 ||
	    core_restore_caps(t, mi->task, flags, cause) == -1 ||
	    threads_end_main(t, mi, cause) == -1)
		goto out;
	/* Signals that reached the target while we held it. */
	if (task_requeue_stolen(t, cause) == -1 ||
	    task_unscratch(t, cause) == -1 ||
	    threads_finish(t, mi, cause) == -1)
		goto out;
	if (st != NULL) {
		st->bytes = mi->rd->bytes;
		st->frozen_us = now_us() - t->seized_us;
	}
	rc = 0;
out:
	mig_unpin(t, &pin);
	if (rc == -1 && t->spawned)
		clone_kill(t);
	return rc;
}

int
mig_restore(struct mig_task *t, int fd, const struct mig_restore_opts *o,
    struct mig_stats *st, char **cause)
{
	struct mig_image mi;
	int		 rc;

	if (mig_restore_begin(fd, &mi, cause) == -1) {
		if (t->spawned)
			clone_kill(t);
		return -1;
	}
	rc = mig_restore_from(t, &mi, o, st, cause);
	mig_image_free(&mi);
	return rc;
}
