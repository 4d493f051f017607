/*
 * The restore, start to end: read and check the whole description of the
 * process, and the target against it, before the target is touched; then
 * replace its memory, files, task state and signals by injected calls,
 * the pages as they stream in, and only once the final seal has proved
 * the stream whole, set the registers. The caller then lets the process go
 * (mig_release). On failure a fresh target is killed: no half-restored
 * process is ever left running.
 */
#include <sys/wait.h>

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "lib/osm.h"
#include "internal.h"

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
	struct mig_pin	 pin = { .pinned = 0 };
	int		 rc = -1, flags = o != NULL ? o->flags : 0;
	int		 context = flags & MIG_CONTEXT;
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
	if ((!context && (core_check_local(mi.task, cause) == -1 ||
	    files_check(mi.files, o, t, cause) == -1)) ||
	    regs_check(t, mi.regs, cause) == -1 ||
	    mm_check_files(mi.mm, o, cause) == -1 ||
	    mm_check_target(t, mi.mm, cause) == -1)
		goto out;

	/* From here on the target changes. */
	mig_pin(t, &pin);
	if ((!rd.started && (rseq_unregister(t, cause) == -1 ||
	    mm_restore_clear(t, mi.mm, cause) == -1 ||
	    core_restore_identity(t, mi.task, flags, cause) == -1 ||
	    mm_restore_map(t, mi.mm, o, cause) == -1)) ||
	    (rd.started && rounds_final(&rd, &img, mi.mm, mi.task, o,
	    flags, cause) == -1) ||
	    (!context && files_restore(t, mi.files, o, cause) == -1) ||
	    pages_restore(t, mi.mm, &img, st, cause) == -1 ||
	    rounds_prot(t, mi.mm, cause) == -1 ||
	    core_restore(t, mi.header, mi.task, flags, cause) == -1 ||
	    sig_restore(t, mi.sig, flags, cause) == -1)
		goto out;
	/* Signals that reached the target while we held it. */
	if (task_requeue_stolen(t, cause) == -1 ||
	    task_unscratch(t, cause) == -1 ||
	    rseq_restore(t, mi.task, cause) == -1 ||
	    regs_restore(t, mi.regs, cause) == -1)
		goto out;
	if (st != NULL) {
		st->bytes = img.bytes;
		st->frozen_us = now_us() - t->seized_us;
	}
	rc = 0;
out:
	mig_unpin(t, &pin);
	mig_image_free(&mi);
fail:
	img_free(&img);
	if (rc == -1 && t->spawned && !t->dead) {
		kill(t->pid, SIGKILL);
		while (waitpid(t->pid, NULL, __WALL) == -1 && errno == EINTR)
			;
		t->dead = 1;
	}
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
