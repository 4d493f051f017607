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

/*
 * The description read (mi, from img): check it against the target, then
 * apply it and the rest of img; rd says what a live dump's rounds (or an
 * incremental chain's older images) did to the target already.
 */
static int
restore_apply(struct mig_task *t, struct img *img, struct mig_image *mi,
    struct rounds *rd, const struct mig_restore_opts *o, struct mig_stats *st,
    char **cause)
{
	struct mig_pin	 pin = { .pinned = 0 };
	int		 rc = -1, flags = o != NULL ? o->flags : 0;
	int		 context = flags & MIG_CONTEXT;
	int		 started = rd != NULL && rd->started;

	if ((!context && (core_check_local(mi->task, cause) == -1 ||
	    files_check(mi->files, o, t, cause) == -1)) ||
	    regs_check(t, mi->threads[0]->regs, cause) == -1 ||
	    threads_check_target(t, mi, cause) == -1 ||
	    mm_check_files(mi->mm, o, cause) == -1 ||
	    mm_check_target(t, mi->mm, cause) == -1)
		goto out;

	/* From here on the target changes; first, its threads. */
	mig_pin(t, &pin);
	if (threads_make(t, mi, cause) == -1 ||
	    (!started && (rseq_unregister_all(t, cause) == -1 ||
	    mm_restore_clear(t, mi->mm, cause) == -1 ||
	    core_restore_identity(t, mi->task, flags, cause) == -1 ||
	    mm_restore_map(t, mi->mm, o, cause) == -1)) ||
	    (started && rounds_final(rd, img, mi->mm, mi->task, o, flags,
	    cause) == -1) ||
	    (!context && files_restore(t, mi->files, o, cause) == -1) ||
	    pages_restore(t, mi->mm, img, st, cause) == -1 ||
	    rounds_prot(t, mi->mm, cause) == -1 ||
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
		st->bytes = img->bytes;
		st->frozen_us = now_us() - t->seized_us;
	}
	rc = 0;
out:
	mig_unpin(t, &pin);
	return rc;
}

/* Read and check the description; the reader stays in mi for the rest. */
int
mig_restore_begin(int fd, struct mig_image *mi, char **cause)
{
	struct img	*img;

	img = xmalloc(sizeof *img);
	img_init(img, fd);
	if (img_read_meta(img, mi, cause) == -1) {
		img_free(img);
		free(img);
		return -1;
	}
	/* Rounds change the target before the description: none here yet. */
	if (img->rounds > 0) {
		xasprintf(cause, "a live dump's image: it restores only into a "
		    "target chosen before it is read (mig_restore)");
		mig_image_free(mi);
		img_free(img);
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
	int	rc = -1;

	if (st != NULL)
		memset(st, 0, sizeof *st);
	if (mi->rd == NULL)
		xasprintf(cause, "image description not read");
	else
		rc = restore_apply(t, mi->rd, mi, NULL, o, st, cause);
	if (rc == -1 && t->spawned)
		clone_kill(t);
	return rc;
}

/*
 * The images of a chain (one for mig_restore), oldest first: all but the
 * last are applied as rounds of the last (rounds.c), each checked to be
 * the one the next was made from.
 */
static int
restore_chain(struct mig_task *t, const int *fds, size_t n,
    const struct mig_restore_opts *o, struct mig_stats *st, char **cause)
{
	struct mig_image mi;
	struct img	 img;
	struct rounds	 rd = { .t = t, .st = st };
	int		 rc = -1;
	size_t		 i;

	memset(&mi, 0, sizeof mi);
	if (st != NULL)
		memset(st, 0, sizeof *st);
	img_init(&img, fds[0]);
	img.io = o != NULL ? o->io : NULL;
	/* A live dump's rounds change the target before the description. */
	img.round_fn = rounds_apply;
	img.round_arg = &rd;
	for (i = 0; i + 1 < n; i++) {
		if (rounds_image(&rd, &img, cause) == -1)
			goto fail;
		rounds_next(&img, fds[i + 1]);
	}
	if (img_read_meta(&img, &mi, cause) == -1 ||
	    rounds_linked(&img, cause) == -1)
		goto fail;
	rc = restore_apply(t, &img, &mi, &rd, o, st, cause);
	mig_image_free(&mi);
fail:
	img_free(&img);
	if (rc == -1 && t->spawned)
		clone_kill(t);
	return rc;
}

int
mig_restore(struct mig_task *t, int fd, const struct mig_restore_opts *o,
    struct mig_stats *st, char **cause)
{
	return restore_chain(t, &fd, 1, o, st, cause);
}

int
mig_restore_chain(struct mig_task *t, const char *path,
    const struct mig_restore_opts *o, struct mig_stats *st, char **cause)
{
	int	fds[MIG_CHAIN_MAX], rc;
	size_t	n, i;

	if (mig_chain_open(path, fds, &n, cause) == -1)
		return -1;
	rc = restore_chain(t, fds, n, o, st, cause);
	for (i = 0; i < n; i++)
		close(fds[i]);
	return rc;
}
