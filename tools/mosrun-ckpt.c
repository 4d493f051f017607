/*
 * Checkpoints for users. mosrun -C FILE has the deputy write FILE.1,
 * FILE.2, ... every -A minutes and whenever mosmigrate PID checkpoint asks,
 * keeping the last -N; mosrun -R FILE makes a new process of one, on any
 * node, whose home is that node. A checkpoint is a whole image of
 * migrate/'s (memory, registers, signal state, the working directory and
 * the regular files at their offsets); it is written under a temporary
 * name and renamed once complete, so that a crash while writing never
 * spoils the one before.
 */
#include <sys/ptrace.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mosrun.h"

static void
ckpt_timer_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct deputy	*d = w->data;
	char		*path = NULL, *cause = NULL;

	if (ckpt_write(d, &path, &cause) == -1)
		log_warnx("process %d (%s): no checkpoint: %s", (int)d->pid,
		    d->command, cause);
	else
		log_info("process %d (%s): checkpoint %s", (int)d->pid,
		    d->command, path);
	free(path);
	free(cause);
}

/*
 * Where checkpoints go: -C's FILE, else ckpt.PID, relative to the
 * directory mosrun started in; and -A's timer.
 */
void
ckpt_init(struct deputy *d)
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
	ev_timer_init(&d->ckpt_timer, ckpt_timer_cb, d->o->ckpt_every,
	    d->o->ckpt_every);
	d->ckpt_timer.data = d;
	if (d->o->ckpt_every > 0)
		ev_timer_start(d->loop, &d->ckpt_timer);
}

/*
 * Checkpoint P into the next FILE.N, forgetting the oldest beyond -N: the
 * file's name in *path, or -1 with *cause. P is stopped for the dump and
 * goes on after it, failed or not.
 */
int
ckpt_write(struct deputy *d, char **path, char **cause)
{
	char		*name, *tmp, *old;
	int		 fd, rc;

	if (d->state != DEPUTY_HOME) {
		xasprintf(cause, "process %d runs on node %u: checkpoints of a "
		    "process away are not made yet; bring it home first",
		    (int)d->pid, d->where);
		return -1;
	}
	xasprintf(&name, "%s.%u", d->ckpt_base, d->ckpt_last + 1);
	xasprintf(&tmp, "%s.tmp.XXXXXX", name);
	if ((fd = mkostemp(tmp, O_CLOEXEC)) == -1) {
		xasprintf(cause, "%s: %s", tmp, strerror(errno));
		goto fail;
	}
	if (away_hold_home(d, 0, cause) == -1)
		goto fail_unlink;
	rc = mig_dump(d->task, fd, 0, NULL, cause);
	away_resume(d);
	if (rc == -1)
		goto fail_unlink;
	if (fsync(fd) == -1 || close(fd) == -1) {
		fd = -1;
		xasprintf(cause, "%s: %s", tmp, strerror(errno));
		goto fail_unlink;
	}
	fd = -1;
	if (rename(tmp, name) == -1) {
		xasprintf(cause, "rename %s to %s: %s", tmp, name,
		    strerror(errno));
		goto fail_unlink;
	}
	d->ckpt_last++;
	if (d->o->ckpt_max > 0 && d->ckpt_last > d->o->ckpt_max) {
		xasprintf(&old, "%s.%u", d->ckpt_base,
		    d->ckpt_last - d->o->ckpt_max);
		unlink(old);
		free(old);
	}
	free(tmp);
	*path = name;
	return 0;

fail_unlink:
	if (fd != -1)
		close(fd);
	unlink(tmp);
fail:
	free(tmp);
	free(name);
	return -1;
}

/*
 * A checkpoint to restore from, checked whole first (so that a bad file
 * changes nothing) and rewound: its descriptor, or -1 with *cause.
 */
static int
ckpt_open(const char *path, char **cause)
{
	struct mig_image	mi;
	int			fd;

	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1) {
		xasprintf(cause, "%s: %s", path, strerror(errno));
		return -1;
	}
	if (mig_image_load(fd, &mi, cause) == -1) {
		close(fd);
		return -1;
	}
	mig_image_free(&mi);
	if (lseek(fd, 0, SEEK_SET) == -1) {
		xasprintf(cause, "%s: %s", path, strerror(errno));
		close(fd);
		return -1;
	}
	return fd;
}

/*
 * The last checkpoint written, checked and open, its name in *path; -1
 * when there is none (*cause NULL) or it will not do (*cause says why).
 */
int
ckpt_open_last(struct deputy *d, char **path, char **cause)
{
	int	fd;

	*cause = NULL;
	if (d->ckpt_last == 0)
		return -1;
	xasprintf(path, "%s.%u", d->ckpt_base, d->ckpt_last);
	if ((fd = ckpt_open(*path, cause)) == -1) {
		free(*path);
		*path = NULL;
	}
	return fd;
}

/*
 * mosrun -R: P stops itself once we hold it; make it the process of the
 * checkpoint, then let it run. A bad file leaves P as it was: it then
 * says so and exits 1. Returns -1 with *cause when P is to be told (it
 * goes on from its stop).
 */
int
ckpt_recover(struct deputy *d, char **cause)
{
	struct mig_restore_opts	 opts = { .flags = 0 };
	int			 fd, status;

	opts.overrides = d->o->overrides;
	opts.noverrides = d->o->noverrides;
	for (;;) {
		while (waitpid(d->pid, &status, __WALL) == -1 && errno == EINTR)
			;
		if (!WIFSTOPPED(status)) {
			xasprintf(cause, "mosrun ended before the recovery");
			return -1;
		}
		if ((status >> 16) == 0 && WSTOPSIG(status) == SIGSTOP)
			break;
		ptrace(PTRACE_CONT, d->pid, 0, 0);
	}
	if ((fd = ckpt_open(d->o->recover, cause)) == -1)
		return -1;
	if (away_hold_home(d, 1, cause) == -1) {
		close(fd);
		return -1;
	}
	if (mig_restore(d->task, fd, &opts, NULL, cause) == -1) {
		/* A half-made process cannot go on: its parent sees SIGKILL. */
		fprintf(stderr, "mosrun: cannot recover from %s: %s\n",
		    d->o->recover, *cause);
		mig_kill(d->task);
		d->task = NULL;
		close(fd);
		deputy_exit(d, 1);
	}
	close(fd);
	away_resume(d);
	return 0;
}
