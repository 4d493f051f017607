/*
 * Files of a checkpoint: the working directory, the umask, and every open
 * descriptor. Those a path opens again (regular files, directories,
 * stateless devices) are reopened at their number, flags and offset;
 * descriptors that share one open file description (dup, `2>&1`) share
 * one again. Descriptors 0-2 on a terminal, pipe or socket are left to
 * whoever restores: a fresh target has the restoring command's own. The
 * others (a pipe, a socket, a terminal beyond 0-2, a deleted file) are
 * recorded for what they were (FD_OTHER) and never refuse a dump: the
 * process that still holds them (the deputy's P, recovering at home, with
 * MIG_KEEP_FDS) keeps them as they are, and anywhere else they become
 * what the caller names, or /dev/null, each with a warning.
 */
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>

#include <linux/kcmp.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/osm.h"
#include "internal.h"

#define FD_MAX		(1 << 20)
#define FD_KEEP_FLAGS	(O_ACCMODE | O_APPEND | O_NONBLOCK | O_DSYNC | \
			 O_SYNC | O_DIRECT | O_NOATIME | O_PATH | \
			 O_DIRECTORY | O_LARGEFILE | O_CLOEXEC | O_NOFOLLOW)

/* Devices that have no state to lose: reopening them is the same. */
static const char *files_devices[] = {
	"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom",
};

static int
files_is_device(const char *path)
{
	size_t	i;

	for (i = 0; i < nitems(files_devices); i++) {
		if (strcmp(path, files_devices[i]) == 0)
			return 1;
	}
	return 0;
}

/* A descriptor's offset and open flags, and whether it holds a lock. */
static int
files_fdinfo(pid_t pid, int fd, uint64_t *pos, uint32_t *flags, int *locked,
    char **cause)
{
	char			 path[64], line[512];
	FILE			*f;
	unsigned long long	 v;
	unsigned int		 fl;

	snprintf(path, sizeof path, "/proc/%d/fdinfo/%d", pid, fd);
	if ((f = fopen(path, "re")) == NULL) {
		xasprintf(cause, "%s: %s", path, strerror(errno));
		return -1;
	}
	*pos = 0;
	*flags = 0;
	*locked = 0;
	while (fgets(line, sizeof line, f) != NULL) {
		if (sscanf(line, "pos: %llu", &v) == 1)
			*pos = v;
		else if (sscanf(line, "flags: %o", &fl) == 1)
			*flags = fl;
		else if (strncmp(line, "lock:", 5) == 0)
			*locked = 1;
	}
	fclose(f);
	return 0;
}

static int
files_one(struct mig_task *t, int fd, Osm__ImgFd *d, char **cause)
{
	char		 link[64], path[PATH_MAX], full[PATH_MAX + 64];
	struct stat	 st, now;
	ssize_t		 n;
	uint32_t	 flags;
	int		 locked;

	snprintf(link, sizeof link, "/proc/%d/fd/%d", t->pid, fd);
	if ((n = readlink(link, path, sizeof path - 1)) == -1 ||
	    stat(link, &st) == -1) {
		xasprintf(cause, "%s: %s", link, strerror(errno));
		return -1;
	}
	path[n] = '\0';
	osm__img_fd__init(d);
	d->fd = fd;
	d->has_dev = d->has_ino = 1;
	d->dev = st.st_dev;
	d->ino = st.st_ino;
	if (files_fdinfo(t->pid, fd, &d->offset, &flags, &locked, cause) == -1)
		return -1;
	d->flags = flags & FD_KEEP_FLAGS;
	d->has_locked = d->locked = locked;

	if (path[0] == '/' && files_is_device(path) && S_ISCHR(st.st_mode)) {
		d->kind = OSM__IMG_FD_KIND__FD_DEVICE;
		d->path = xstrdup(path);
		return 0;
	}
	if (path[0] == '/' && (S_ISREG(st.st_mode) || S_ISDIR(st.st_mode))) {
		snprintf(full, sizeof full, "/proc/%d/root%s", t->pid, path);
		if (stat(full, &now) == 0 && now.st_dev == st.st_dev &&
		    now.st_ino == st.st_ino) {
			d->kind = S_ISREG(st.st_mode) ?
			    OSM__IMG_FD_KIND__FD_REGULAR :
			    OSM__IMG_FD_KIND__FD_DIRECTORY;
			d->id = xmalloc(sizeof *d->id);
			fileid_make(&st, d->id);
			d->path = xstrdup(path);
			return 0;
		}
		/* Deleted ("... (deleted)") or another file at its path. */
		if (n < 10 || strcmp(path + n - 10, " (deleted)") != 0) {
			xasprintf(&d->what, "%s (replaced)", path);
			goto other;
		}
	}
	d->what = xstrdup(path);
other:
	/* 0-2: the restorer's own; beyond, only its holder has it. */
	d->kind = fd <= 2 ? OSM__IMG_FD_KIND__FD_STDIO :
	    OSM__IMG_FD_KIND__FD_OTHER;
	return 0;
}

static int
files_cmp(const void *a, const void *b)
{
	const Osm__ImgFd	*x = *(Osm__ImgFd *const *)a;
	const Osm__ImgFd	*y = *(Osm__ImgFd *const *)b;

	return x->fd < y->fd ? -1 : x->fd > y->fd;
}

/*
 * Which descriptors share an open file description: each is marked the
 * same as the lowest one it shares with. Only descriptors on one object
 * can (kcmp asked only of those); without kcmp none is marked, and each
 * comes back with its own offset.
 */
static void
files_share(struct mig_task *t, Osm__ImgFiles *f)
{
	Osm__ImgFd	*a, *b;
	size_t		 i, j;

	for (i = 1; i < f->n_fds; i++) {
		b = f->fds[i];
		for (j = 0; j < i; j++) {
			a = f->fds[j];
			if (a->has_same_as || a->dev != b->dev ||
			    a->ino != b->ino)
				continue;
			if (syscall(SYS_kcmp, t->pid, t->pid, KCMP_FILE,
			    a->fd, b->fd) == 0) {
				b->has_same_as = 1;
				b->same_as = a->fd;
				break;
			}
		}
	}
}

/* With MIG_CONTEXT the descriptors stay at home: only cwd and umask. */
int
files_dump(struct mig_task *t, Osm__ImgFiles *f, int flags, char **cause)
{
	char		 path[64], cwd[PATH_MAX], buf[64];
	DIR		*dir;
	struct dirent	*de;
	ssize_t		 n;
	uint64_t	 fd;
	size_t		 alloc = 0;
	int		 rc = -1;

	osm__img_files__init(f);
	snprintf(path, sizeof path, "/proc/%d/cwd", t->pid);
	if ((n = readlink(path, cwd, sizeof cwd - 1)) == -1) {
		xasprintf(cause, "%s: %s", path, strerror(errno));
		return -1;
	}
	cwd[n] = '\0';
	if (!(flags & MIG_CONTEXT) && (cwd[0] != '/' || (n > 10 &&
	    strcmp(cwd + n - 10, " (deleted)") == 0))) {
		xasprintf(cause, "the working directory of process %d was "
		    "deleted", t->pid);
		return -1;
	}
	f->cwd = xstrdup(cwd);

	if (core_status_value(t->pid, "Umask", buf, sizeof buf, cause) == -1)
		return -1;
	f->umask = strtoul(buf, NULL, 8);
	if (flags & MIG_CONTEXT)
		return 0;

	snprintf(path, sizeof path, "/proc/%d/fd", t->pid);
	if ((dir = opendir(path)) == NULL) {
		xasprintf(cause, "%s: %s", path, strerror(errno));
		return -1;
	}
	while ((de = readdir(dir)) != NULL) {
		if (parse_uint(de->d_name, 0, FD_MAX, &fd) == -1)
			continue;
		if (f->n_fds == alloc) {
			alloc = alloc == 0 ? 16 : alloc * 2;
			f->fds = xreallocarray(f->fds, alloc, sizeof *f->fds);
		}
		f->fds[f->n_fds] = xcalloc(1, sizeof **f->fds);
		if (files_one(t, fd, f->fds[f->n_fds], cause) == -1) {
			free(f->fds[f->n_fds]);
			goto out;
		}
		f->n_fds++;
	}
	if (f->n_fds > 0)
		qsort(f->fds, f->n_fds, sizeof *f->fds, files_cmp);
	files_share(t, f);
	rc = 0;
out:
	closedir(dir);
	return rc;
}

void
files_free(Osm__ImgFiles *f)
{
	size_t	i;

	free(f->cwd);
	for (i = 0; i < f->n_fds; i++) {
		free(f->fds[i]->path);
		free(f->fds[i]->what);
		free(f->fds[i]->id);
		free(f->fds[i]);
	}
	free(f->fds);
}

static const Osm__ImgFd *
files_find(const Osm__ImgFiles *f, int fd)
{
	size_t	i;

	for (i = 0; i < f->n_fds; i++) {
		if ((int)f->fds[i]->fd == fd)
			return f->fds[i];
	}
	return NULL;
}

static const char *
files_override(const struct mig_restore_opts *o, int fd)
{
	size_t	i;

	for (i = 0; o != NULL && i < o->noverrides; i++) {
		if (o->overrides[i].fd == fd)
			return o->overrides[i].path;
	}
	return NULL;
}

static void __attribute__((format(printf, 2, 3)))
files_warn(const struct mig_restore_opts *o, const char *fmt, ...)
{
	va_list	 ap;
	char	*msg;

	if (o == NULL || o->warn == NULL)
		return;
	va_start(ap, fmt);
	xvasprintf(&msg, fmt, ap);
	va_end(ap);
	o->warn(o->warn_arg, msg);
	free(msg);
}

/*
 * Does the target, the very process the image was taken of, still hold
 * d at its number: the same object, opened the same way? Only with
 * MIG_KEEP_FDS; an image from before dev and ino were recorded knows its
 * regular files by their identity.
 */
static int
files_held(struct mig_task *t, const struct mig_restore_opts *o,
    const Osm__ImgFd *d)
{
	const uint32_t	 same = O_ACCMODE | O_APPEND | O_PATH;
	char		 link[64], *ignored = NULL;
	struct stat	 st;
	uint64_t	 dev, ino, pos;
	uint32_t	 flags;
	int		 locked;

	if (t == NULL || o == NULL || !(o->flags & MIG_KEEP_FDS))
		return 0;
	if (d->has_dev && d->has_ino) {
		dev = d->dev;
		ino = d->ino;
	} else if (d->id != NULL) {
		dev = d->id->dev;
		ino = d->id->ino;
	} else
		return 0;
	snprintf(link, sizeof link, "/proc/%d/fd/%u", t->pid, d->fd);
	if (stat(link, &st) == -1 || st.st_dev != dev || st.st_ino != ino)
		return 0;
	if (files_fdinfo(t->pid, d->fd, &pos, &flags, &locked,
	    &ignored) == -1) {
		free(ignored);
		return 0;
	}
	return (flags & same) == (d->flags & same);
}

/* Will the restore open d's path? */
static int
files_reopens(struct mig_task *t, const struct mig_restore_opts *o,
    const Osm__ImgFd *d)
{
	if (d->kind == OSM__IMG_FD_KIND__FD_STDIO ||
	    d->kind == OSM__IMG_FD_KIND__FD_OTHER || d->has_same_as ||
	    files_override(o, d->fd) != NULL)
		return 0;
	return !files_held(t, o, d);
}

/*
 * On paper; with options, also that every file to reopen exists here
 * (overrides, and with MIG_KEEP_FDS what the target t still holds, aside)
 * and that the overrides make sense.
 */
int
files_check(const Osm__ImgFiles *f, const struct mig_restore_opts *o,
    struct mig_task *t, char **cause)
{
	const Osm__ImgFd	*d;
	struct stat		 st;
	size_t			 i, j;

	if (f->cwd[0] != '/' || strlen(f->cwd) >= PATH_MAX ||
	    f->umask > 0777)
		goto bad;
	if (o != NULL && stat(f->cwd, &st) == -1) {
		xasprintf(cause, "working directory %s: %s", f->cwd,
		    strerror(errno));
		return -1;
	}
	for (i = 0; i < f->n_fds; i++) {
		d = f->fds[i];
		if (d->fd >= FD_MAX || (d->flags & ~FD_KEEP_FLAGS) != 0)
			goto bad;
		switch (d->kind) {
		case OSM__IMG_FD_KIND__FD_STDIO:
			if (d->fd > 2)
				goto bad;
			break;
		case OSM__IMG_FD_KIND__FD_OTHER:
			if (d->fd <= 2)
				goto bad;
			break;
		case OSM__IMG_FD_KIND__FD_REGULAR:
		case OSM__IMG_FD_KIND__FD_DIRECTORY:
		case OSM__IMG_FD_KIND__FD_DEVICE:
			if (d->path == NULL || d->path[0] != '/' ||
			    strlen(d->path) >= PATH_MAX)
				goto bad;
			break;
		default:
			goto bad;
		}
		if (d->what != NULL && strlen(d->what) >= PATH_MAX + 16)
			goto bad;
		if (d->has_same_as && (d->same_as >= d->fd ||
		    files_find(f, d->same_as) == NULL))
			goto bad;
		for (j = 0; j < i; j++) {
			if (f->fds[j]->fd == d->fd)
				goto bad;
		}
		if (o == NULL || !files_reopens(t, o, d))
			continue;
		if (stat(d->path, &st) == -1) {
			xasprintf(cause, "file %s (descriptor %u): %s",
			    d->path, d->fd, strerror(errno));
			return -1;
		}
	}
	for (i = 0; o != NULL && i < o->noverrides; i++) {
		if (o->overrides[i].fd < 0 || o->overrides[i].fd >= FD_MAX ||
		    o->overrides[i].path == NULL ||
		    o->overrides[i].path[0] == '\0') {
			xasprintf(cause, "bad descriptor override %d",
			    o->overrides[i].fd);
			return -1;
		}
	}
	return 0;
bad:
	xasprintf(cause, "image corrupted: files record");
	return -1;
}

/* Open path in the target as descriptor fd, at offset (-1: the end). */
static int
files_open_at(struct mig_task *t, const char *path, int fd, uint32_t flags,
    int64_t offset, char **cause)
{
	size_t	 n = strlen(path) + 1;
	long	 got;
	char	*c;

	if (n > t->scratch_len) {
		xasprintf(cause, "path too long: %s", path);
		return -1;
	}
	if (task_write(t, t->scratch, path, n, cause) == -1)
		return -1;
	if (task_sys_ok(t, "open", SYS_openat, (sysargs){ AT_FDCWD, t->scratch,
	    flags, 0666 }) == -1)
		goto fail;
	got = t->last_rv;
	if (got != fd) {
		if (task_sys_ok(t, "dup3", SYS_dup3, (sysargs){ got, fd,
		    flags & O_CLOEXEC }) == -1 ||
		    task_sys_ok(t, "close", SYS_close, (sysargs){ got }) == -1)
			goto fail;
	}
	if ((flags & O_PATH) == 0 && task_sys_ok(t, "lseek", SYS_lseek,
	    (sysargs){ fd, offset < 0 ? 0 : offset,
	    offset < 0 ? SEEK_END : SEEK_SET }) == -1)
		goto fail;
	return 0;
fail:
	c = task_cause(t);
	xasprintf(cause, "%s (descriptor %d): %s", path, fd, c);
	free(c);
	return -1;
}

static const char *
files_mode(uint32_t flags)
{
	switch (flags & O_ACCMODE) {
	case O_RDONLY:
		return (flags & O_PATH) ? "a path" : "read-only";
	case O_WRONLY:
		return "write-only";
	default:
		return "read-write";
	}
}

/* With MIG_KEEP_FDS: the descriptors the target opened since the image. */
static int
files_close_others(struct mig_task *t, const Osm__ImgFiles *f,
    const struct mig_restore_opts *o, char **cause)
{
	char		 path[64];
	DIR		*dir;
	struct dirent	*de;
	uint64_t	 fd, *close = NULL;
	size_t		 n = 0, i;
	int		 rc = 0;

	snprintf(path, sizeof path, "/proc/%d/fd", t->pid);
	if ((dir = opendir(path)) == NULL) {
		xasprintf(cause, "%s: %s", path, strerror(errno));
		return -1;
	}
	while ((de = readdir(dir)) != NULL) {
		if (parse_uint(de->d_name, 0, FD_MAX, &fd) == -1 ||
		    files_find(f, fd) != NULL || files_override(o, fd) != NULL)
			continue;
		close = xreallocarray(close, n + 1, sizeof *close);
		close[n++] = fd;
	}
	closedir(dir);
	for (i = 0; i < n && rc == 0; i++) {
		if (task_sys_ok(t, "close", SYS_close,
		    (sysargs){ close[i] }) == -1) {
			*cause = task_cause(t);
			rc = -1;
		}
	}
	free(close);
	return rc;
}

/* A descriptor of the image's that cannot be had here: /dev/null. */
static int
files_null(struct mig_task *t, const Osm__ImgFd *d,
    const struct mig_restore_opts *o, char **cause)
{
	uint32_t	flags;

	flags = d->flags & (O_ACCMODE | O_CLOEXEC | O_NONBLOCK);
	if (d->flags & O_PATH)
		flags &= ~O_ACCMODE;
	if (files_open_at(t, "/dev/null", d->fd, flags, 0, cause) == -1)
		return -1;
	files_warn(o, "descriptor %u (%s, %s) cannot be opened again: it is "
	    "/dev/null now", d->fd, d->what != NULL ? d->what : "?",
	    files_mode(d->flags));
	return 0;
}

/* d shares its description with a lower descriptor: share it again. */
static int
files_dup(struct mig_task *t, const Osm__ImgFiles *f, const Osm__ImgFd *d,
    const struct mig_restore_opts *o, char **cause)
{
	const Osm__ImgFd	*src;
	char			*c;

	/* The restorer's own, or an override of the caller's: theirs. */
	if (d->kind == OSM__IMG_FD_KIND__FD_STDIO ||
	    files_override(o, d->fd) != NULL)
		return 0;
	if (files_held(t, o, d) && syscall(SYS_kcmp, t->pid, t->pid,
	    KCMP_FILE, d->same_as, d->fd) == 0)
		return 0;
	if (task_sys_ok(t, "dup3", SYS_dup3, (sysargs){ d->same_as, d->fd,
	    d->flags & O_CLOEXEC }) == -1) {
		c = task_cause(t);
		xasprintf(cause, "descriptor %u as %u: %s", d->fd, d->same_as,
		    c);
		free(c);
		return -1;
	}
	/*
	 * It is what the lower one became: the caller's file, the object
	 * itself still held, or what stands in for it (a warning).
	 */
	src = files_find(f, d->same_as);
	if (d->kind != OSM__IMG_FD_KIND__FD_OTHER || src == NULL ||
	    files_override(o, d->same_as) != NULL || files_held(t, o, src))
		return 0;
	files_warn(o, "descriptor %u (%s, %s) cannot be opened again: it is "
	    "%s now, one with descriptor %u", d->fd, d->what != NULL ?
	    d->what : "?", files_mode(d->flags),
	    src->kind == OSM__IMG_FD_KIND__FD_OTHER ? "/dev/null" :
	    "the restorer's own", d->same_as);
	return 0;
}

/*
 * The caller's notice, written on the target's descriptor 2 by the target
 * itself once its descriptors are back: where the process writes next, so
 * that what it writes after goes after the notice, not over it. Whether
 * it could be written is not the restore's concern.
 */
static void
files_notice(struct mig_task *t, const struct mig_restore_opts *o)
{
	char	*ignored = NULL;
	size_t	 off, n;

	for (off = 0; o != NULL && off < o->notice_len; off += n) {
		n = o->notice_len - off;
		if (n > t->scratch_len)
			n = t->scratch_len;
		if (task_write(t, t->scratch, o->notice + off, n,
		    &ignored) == -1 || task_sys_ok(t, "write", SYS_write,
		    (sysargs){ 2, t->scratch, n }) == -1 || t->last_rv <= 0)
			break;
		n = t->last_rv;
	}
	free(ignored);
}

int
files_restore(struct mig_task *t, const Osm__ImgFiles *f,
    const struct mig_restore_opts *o, char **cause)
{
	const Osm__ImgFd	*d;
	const char		*path;
	size_t			 i;
	uint32_t		 flags;
	int64_t			 off;
	int			 fd;

	if (task_write(t, t->scratch, f->cwd, strlen(f->cwd) + 1,
	    cause) == -1)
		return -1;
	if (task_sys_ok(t, "chdir", SYS_chdir, (sysargs){ t->scratch }) == -1 ||
	    task_sys_ok(t, "umask", SYS_umask, (sysargs){ f->umask }) == -1) {
		*cause = task_cause(t);
		return -1;
	}
	if (o != NULL && (o->flags & MIG_KEEP_FDS) &&
	    files_close_others(t, f, o, cause) == -1)
		return -1;
	for (i = 0; i < f->n_fds; i++) {
		d = f->fds[i];
		if (d->kind == OSM__IMG_FD_KIND__FD_STDIO || d->has_same_as ||
		    files_override(o, d->fd) != NULL)
			continue;
		if (files_held(t, o, d)) {
			/* At home: the same description, at its offset. */
			if ((d->kind == OSM__IMG_FD_KIND__FD_REGULAR ||
			    d->kind == OSM__IMG_FD_KIND__FD_DIRECTORY) &&
			    !(d->flags & O_PATH) && task_sys_ok(t, "lseek",
			    SYS_lseek, (sysargs){ d->fd, d->offset,
			    SEEK_SET }) == -1) {
				*cause = task_cause(t);
				return -1;
			}
			continue;
		}
		if (d->kind == OSM__IMG_FD_KIND__FD_OTHER) {
			if (files_null(t, d, o, cause) == -1)
				return -1;
			continue;
		}
		if (d->has_locked && d->locked)
			files_warn(o, "descriptor %u (%s) held a lock, which is "
			    "not taken again", d->fd, d->path);
		off = d->kind == OSM__IMG_FD_KIND__FD_DEVICE ? 0 : d->offset;
		if (files_open_at(t, d->path, d->fd, d->flags, off,
		    cause) == -1)
			return -1;
	}
	for (i = 0; o != NULL && i < o->noverrides; i++) {
		fd = o->overrides[i].fd;
		path = o->overrides[i].path;
		d = files_find(f, fd);
		if (d != NULL)
			flags = d->flags & ~(O_PATH | O_DIRECTORY);
		else
			flags = fd == 0 ? O_RDONLY : O_RDWR;
		if ((flags & O_ACCMODE) != O_RDONLY)
			flags |= O_CREAT;
		/* Another file: written at its end, read from its start. */
		off = (flags & O_ACCMODE) == O_RDONLY ? 0 : -1;
		if (files_open_at(t, path, fd, flags, off, cause) == -1)
			return -1;
	}
	for (i = 0; i < f->n_fds; i++) {
		d = f->fds[i];
		if (d->has_same_as && files_dup(t, f, d, o, cause) == -1)
			return -1;
	}
	files_notice(t, o);
	return 0;
}
