/*
 * R's stats of paths at home answered again from the home's last answer
 * (docs/REMOTE.md, "Stats answered again"). Python's importer stats each
 * directory of sys.path at every import and each module's source twice;
 * a compiler stats the same include directories for every header. Each
 * went home: a round trip that R waited for.
 *
 * The home's answer to a stat, lstat or newfstatat of a path (its struct
 * stat, or ENOENT, ENOTDIR) is kept FIO_FRESH_NS from its arrival, as a
 * window's bytes are, and answers the same call of R's again, while
 * nothing could have changed what it says as R sees it: every answer kept
 * goes at any call of R's but those statc_keeps lists (a write, a rename,
 * a chdir, a fork, an IPC read that could tell R of a change made
 * elsewhere), at writes of the stub in R, at a signal sent to R, at a
 * move (the guest's state goes with the node). A reply is kept only if
 * nothing was dropped between its call and its arrival. A change made at
 * home by another process is seen within FIO_FRESH_NS, as NFS's
 * attribute cache is (its acregmin is 3 s). Not kept: paths under /proc,
 * /sys and /dev (what they say moves by itself), under a shared path
 * (R's writes there are made where it runs, unseen), a relative one
 * when there are shared paths (the working directory may be under one),
 * one relative to a descriptor; nothing under mosrun -s.
 */
#include <sys/ioctl.h>
#include <sys/syscall.h>

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/*
 * Calls after which what a stat said of a path is still what it says:
 * those that change no file's bytes (fdcall_harmless) but those that
 * change a file's owner or mode or create one, and a read only of a
 * regular file (a pipe's, a socket's may bring news); and some fcntl,
 * a TCGETS, an fadvise64.
 */
static int
statc_keeps(struct remote *g, int nr, const uint64_t *args)
{
	const struct fio_fd	*e;

	if (fdcall_chattr(nr))
		return 0;
	switch (nr) {
	case SYS_read:
	case SYS_pread64:
	case SYS_readv:
		e = fio_find(&g->fio, (int)args[0]);
		return e != NULL && e->state == FIO_KNOWN;
	case SYS_ioctl:
		return (unsigned int)args[1] == TCGETS;
	case SYS_fcntl:
		return (int)args[1] == F_GETFD || (int)args[1] == F_SETFD ||
		    (int)args[1] == F_GETFL;
	case SYS_fadvise64:
		return 1;
	case SYS_open:
		return ((int)args[1] & (O_CREAT | O_TMPFILE)) == 0 &&
		    fdcall_harmless(nr, args);
	case SYS_openat:
		return ((int)args[2] & (O_CREAT | O_TMPFILE)) == 0 &&
		    fdcall_harmless(nr, args);
	}
	return fdcall_harmless(nr, args);
}

void
statc_clear(struct statc *c)
{
	size_t	i;

	for (i = 0; i < c->n; i++)
		free(c->e[i].path);
	c->n = 0;
	c->next = 0;
	c->gen++;
}

/* What moves by itself: never kept. */
static char * const statc_never[] = { "/proc", "/sys", "/dev" };
/*
 * Under it, by conf_is_shared's rule, is every absolute path without a
 * //, a /./ or a /../ in it ("" begins each, and a / follows).
 */
static char * const statc_root[] = { "" };

/*
 * Is R's call c a stat of a path statc may answer or keep? Which of its
 * arguments is the path (*arg), whether it follows a last link
 * (*nofollow), where its struct stat goes (*buf).
 */
static int
statc_how(const struct remote *g, const struct rmt_call *c, int *arg,
    int *nofollow, uint64_t *buf)
{
	*arg = 0;
	*nofollow = c->nr == SYS_lstat;
	*buf = c->args[1];
	if (c->nr == SYS_newfstatat) {
		if ((c->args[3] & ~(uint64_t)(AT_SYMLINK_NOFOLLOW |
		    AT_NO_AUTOMOUNT)) != 0)
			return 0;
		*arg = 1;
		*buf = c->args[2];
		*nofollow = (c->args[3] & AT_SYMLINK_NOFOLLOW) != 0;
	} else if (c->nr != SYS_stat && c->nr != SYS_lstat)
		return 0;
	return !g->fio.off;
}

/*
 * The path of R's stat c as marshal_call read it (its string region;
 * gone once the call is packed), if statc may answer or keep it: an
 * absolute path written plainly (conf_is_shared's rule: no . or .. to
 * lead it elsewhere), not under a shared path nor statc_never; or NULL.
 */
static const char *
statc_key(const struct remote *g, const struct rmt_call *c, int *nofollow,
    uint64_t *buf)
{
	const struct shared	*s = &g->shared;
	const struct rmt_region	*r;
	const char		*path;
	int			 arg;
	size_t			 i;

	if (!statc_how(g, c, &arg, nofollow, buf))
		return NULL;
	for (i = 0; i < c->nregions; i++) {
		r = &c->regions[i];
		if (r->dir == RMT_IN && r->addr == c->args[arg] &&
		    r->data != NULL && r->size > 0 &&
		    r->data[r->size - 1] == '\0')
			break;
	}
	if (i == c->nregions)
		return NULL;
	path = (const char *)c->regions[i].data;
	return conf_is_shared(statc_root, 1, path) &&
	    !conf_is_shared(statc_never, nitems(statc_never), path) &&
	    !conf_is_shared(s->paths, s->npaths, path) ? path : NULL;
}

/* The fresh answer kept for path (nofollow), or NULL. */
static struct statc_entry *
statc_find(struct statc *c, const char *path, int nofollow)
{
	uint64_t	now = window_now();
	size_t		i;

	for (i = 0; i < c->n; i++) {
		if (c->e[i].nofollow == nofollow &&
		    now - c->e[i].at <= FIO_FRESH_NS &&
		    strcmp(c->e[i].path, path) == 0)
			return &c->e[i];
	}
	return NULL;
}

/*
 * R's call nr (args), before anything else is done with it: all answers
 * kept go if it is not one of statc_keeps.
 */
void
statc_call(struct remote *g, int nr, const uint64_t *args)
{
	if (!statc_keeps(g, nr, args))
		statc_clear(&g->statc);
}

/*
 * The home's reply to R's call nr (args) came, or to a write or unlock
 * of R's behind (nr -1): what R's other threads asked meanwhile, in
 * lanes of their own at home, may have been answered before it changed
 * anything: all answers kept go.
 */
void
statc_replied(struct remote *g, int nr, const uint64_t *args)
{
	if (nr == -1 || !statc_keeps(g, nr, args))
		statc_clear(&g->statc);
}

/*
 * R's call c (thread tid), marshalled to go home, if it is a stat of
 * which a fresh answer is kept: the struct stat written into R, its
 * return value in *rv, 1. Else 0, and *keep (ours to free, or NULL) is
 * the path whose reply is to be kept, for statc_reply.
 */
int
statc_answer(struct remote *g, pid_t tid, const struct rmt_call *c,
    int64_t *rv, char **keep)
{
	struct statc_entry	*e;
	const char		*path;
	uint64_t		 buf;
	int			 nofollow;

	*keep = NULL;
	if ((path = statc_key(g, c, &nofollow, &buf)) == NULL)
		return 0;
	if ((e = statc_find(&g->statc, path, nofollow)) == NULL) {
		*keep = xstrdup(path);
		return 0;
	}
	if (e->ret == 0 && marshal_put_stat(tid, buf, &e->st) == -1)
		return 0;	/* the home says EFAULT */
	*rv = e->ret;
	g->statc.hits++;
	return 1;
}

/*
 * The home's reply ret (its struct stat st, of len bytes, if 0) to R's
 * stat c of *path (statc_answer's keep; NULL: none), sent when the
 * answers kept were at generation gen: kept, *path taken, if none was
 * dropped since.
 */
void
statc_reply(struct remote *g, const struct rmt_call *c, char **path,
    uint64_t gen, int64_t ret, const void *st, size_t len)
{
	struct statc		*sc = &g->statc;
	struct statc_entry	*e;
	uint64_t		 buf;
	int			 arg, nofollow;

	if (*path == NULL || gen != sc->gen || (ret == 0 ?
	    len != sizeof e->st : ret != -ENOENT && ret != -ENOTDIR) ||
	    !statc_how(g, c, &arg, &nofollow, &buf))
		return;
	if (sc->n < STATC_MAX)
		e = &sc->e[sc->n++];
	else {
		e = &sc->e[sc->next];
		sc->next = (sc->next + 1) % STATC_MAX;
		free(e->path);
	}
	e->path = *path;
	*path = NULL;
	e->nofollow = nofollow;
	e->ret = ret;
	if (ret == 0)
		memcpy(&e->st, st, sizeof e->st);
	e->at = window_now();
}
