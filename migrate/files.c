/*
 * Files of a checkpoint: the working directory, the umask, and every open
 * descriptor that can be opened again by path (regular files, directories,
 * stateless devices) at its number, flags and offset. Descriptors 0-2 on a
 * terminal, pipe or socket are left to whoever restores: a fresh target
 * has the restoring command's own. Anything else is refused at dump time.
 */
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
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

static int
files_fdinfo(pid_t pid, int fd, uint64_t *pos, uint32_t *flags,
    char **cause)
{
	char			 path[64], line[512];
	FILE			*f;
	unsigned long long	 v;
	unsigned int		 fl;
	int			 locked = 0;

	snprintf(path, sizeof path, "/proc/%d/fdinfo/%d", pid, fd);
	if ((f = fopen(path, "re")) == NULL) {
		xasprintf(cause, "%s: %s", path, strerror(errno));
		return -1;
	}
	*pos = 0;
	*flags = 0;
	while (fgets(line, sizeof line, f) != NULL) {
		if (sscanf(line, "pos: %llu", &v) == 1)
			*pos = v;
		else if (sscanf(line, "flags: %o", &fl) == 1)
			*flags = fl;
		else if (strncmp(line, "lock:", 5) == 0)
			locked = 1;
	}
	fclose(f);
	if (locked) {
		xasprintf(cause, "process %d holds a lock on descriptor %d: "
		    "locks cannot be restored", pid, fd);
		return -1;
	}
	return 0;
}

static int
files_one(struct mig_task *t, int fd, Osm__ImgFd *d, char **cause)
{
	char		 link[64], path[PATH_MAX], full[PATH_MAX + 64];
	struct stat	 st, now;
	ssize_t		 n;
	uint32_t	 flags;
	int		 gone;

	snprintf(link, sizeof link, "/proc/%d/fd/%d", t->pid, fd);
	if ((n = readlink(link, path, sizeof path - 1)) == -1 ||
	    stat(link, &st) == -1) {
		xasprintf(cause, "%s: %s", link, strerror(errno));
		return -1;
	}
	path[n] = '\0';
	osm__img_fd__init(d);
	d->fd = fd;
	if (files_fdinfo(t->pid, fd, &d->offset, &flags, cause) == -1)
		return -1;
	d->flags = flags & FD_KEEP_FLAGS;

	if (path[0] == '/' && files_is_device(path) && S_ISCHR(st.st_mode))
		d->kind = OSM__IMG_FD_KIND__FD_DEVICE;
	else if (path[0] == '/' && (S_ISREG(st.st_mode) ||
	    S_ISDIR(st.st_mode))) {
		d->kind = S_ISREG(st.st_mode) ? OSM__IMG_FD_KIND__FD_REGULAR :
		    OSM__IMG_FD_KIND__FD_DIRECTORY;
		snprintf(full, sizeof full, "/proc/%d/root%s", t->pid, path);
		gone = stat(full, &now) == -1 || now.st_dev != st.st_dev ||
		    now.st_ino != st.st_ino;
		if (gone && fd <= 2) {
			/* as for a terminal: the restorer's own */
			d->kind = OSM__IMG_FD_KIND__FD_STDIO;
			return 0;
		}
		if (gone) {
			xasprintf(cause, "process %d has descriptor %d open "
			    "on %s, which was deleted or replaced: it cannot "
			    "be reopened", t->pid, fd, path);
			return -1;
		}
		d->id = xmalloc(sizeof *d->id);
		fileid_make(&st, d->id);
	} else if (fd <= 2) {
		d->kind = OSM__IMG_FD_KIND__FD_STDIO;
		return 0;
	} else {
		xasprintf(cause, "process %d has descriptor %d open on %s: "
		    "only regular files, directories and /dev/null-like "
		    "devices can be restored beyond 0-2", t->pid, fd, path);
		return -1;
	}
	d->path = xstrdup(path);
	return 0;
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

/*
 * On paper; with options, also that every file to reopen exists here
 * (overrides aside) and that the overrides make sense.
 */
int
files_check(const Osm__ImgFiles *f, const struct mig_restore_opts *o,
    char **cause)
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
		if (d->kind == OSM__IMG_FD_KIND__FD_STDIO) {
			if (d->fd > 2)
				goto bad;
		} else if (d->kind < OSM__IMG_FD_KIND__FD_REGULAR ||
		    d->kind > OSM__IMG_FD_KIND__FD_DEVICE || d->path == NULL ||
		    d->path[0] != '/' || strlen(d->path) >= PATH_MAX)
			goto bad;
		for (j = 0; j < i; j++) {
			if (f->fds[j]->fd == d->fd)
				goto bad;
		}
		if (o == NULL || d->kind == OSM__IMG_FD_KIND__FD_STDIO ||
		    files_override(o, d->fd) != NULL)
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
	for (i = 0; i < f->n_fds; i++) {
		d = f->fds[i];
		if (d->kind == OSM__IMG_FD_KIND__FD_STDIO ||
		    files_override(o, d->fd) != NULL)
			continue;
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
	return 0;
}
