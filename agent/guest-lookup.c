/*
 * Stats the guest agent makes itself: R's stat of a path beneath a
 * shared path, answered with no trip to the opener (guest-open.c) where
 * the agent's own lookup comes to what the owner's would (docs/REMOTE.md,
 * "Stat"). The opener's answer costs two more wakeups, and sqlite3 makes
 * six stats a commit.
 *
 * The agent runs as the guest uid: its rights are not the owner's. So it
 * walks the path itself, a name at a time from its own descriptor of the
 * shared path (opened as the opener's is, proved the same directory), and
 * answers only where the owner's rights decide nothing the agent's do
 * not: every directory it looks a name up in must be one the owner may
 * search by its mode (its uid's, its group's or the others' bits, as the
 * kernel picks them), with no access list; the agent's own lookup must
 * succeed, or fail for want of the name (ENOENT, ENOTDIR), which is the
 * same for anyone who may search; and no link may be followed, no other
 * file system entered, no "." or "..". Anything else — a directory the
 * owner may not search, one with an access list, the agent refused, a
 * link — is the opener's, with the owner's own rights. The verdict on a
 * directory is kept by its inode and change time, which chmod, chown and
 * setfacl all move.
 */
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/xattr.h>

#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

/* Is gid the owner's group, or one of its groups? */
static int
lookup_has_group(const struct guest_lookup *l, uint32_t gid)
{
	size_t	i;

	if (l->gid == gid)
		return 1;
	for (i = 0; i < l->ngroups; i++)
		if (l->groups[i] == gid)
			return 1;
	return 0;
}

/* May the owner search directory dir, by its mode alone? */
static int
lookup_search(struct guest_lookup *l, int dir)
{
	struct lookup_dir	*d;
	struct stat		 st;
	char			 self[64];
	mode_t			 bit;
	size_t			 i;

	if (fstat(dir, &st) == -1)
		return 0;
	for (i = 0; i < GUEST_LOOKUP_DIRS; i++) {
		d = &l->dirs[i];
		if (d->ino == st.st_ino && d->dev == st.st_dev &&
		    d->ctime.tv_sec == st.st_ctim.tv_sec &&
		    d->ctime.tv_nsec == st.st_ctim.tv_nsec)
			return d->search;
	}
	d = &l->dirs[l->next++ % GUEST_LOOKUP_DIRS];
	d->dev = st.st_dev;
	d->ino = st.st_ino;
	d->ctime = st.st_ctim;
	if (st.st_uid == l->uid)
		bit = S_IXUSR;
	else if (lookup_has_group(l, st.st_gid))
		bit = S_IXGRP;
	else
		bit = S_IXOTH;
	/* an access list, or one we cannot rule out: the opener's */
	snprintf(self, sizeof self, "/proc/self/fd/%d", dir);
	d->search = S_ISDIR(st.st_mode) && (st.st_mode & bit) != 0 &&
	    getxattr(self, "system.posix_acl_access", NULL, 0) == -1 &&
	    (errno == ENODATA || errno == EOPNOTSUPP);
	return d->search;
}

void
guest_lookup_init(struct guest_lookup *l, size_t n, uint32_t uid,
    uint32_t gid, const uint32_t *groups, size_t ngroups)
{
	size_t	i;

	memset(l, 0, sizeof *l);
	l->roots = xcalloc(n, sizeof *l->roots);
	for (i = 0; i < n; i++)
		l->roots[i] = -1;
	l->n = n;
	l->uid = uid;
	l->gid = gid;
	l->groups = xcalloc(ngroups + 1, sizeof *l->groups);
	memcpy(l->groups, groups, ngroups * sizeof *groups);
	l->ngroups = ngroups;
}

/*
 * Our own descriptor of shared path i (path), kept if it is the directory
 * the opener's stat of it says (st): the one the owner reaches.
 */
void
guest_lookup_root(struct guest_lookup *l, size_t i, const char *path,
    const struct stat *st)
{
	struct stat	mine;
	int		fd;

	if (i >= l->n || (fd = open(path, O_PATH | O_DIRECTORY |
	    O_CLOEXEC)) == -1)
		return;
	if (fstat(fd, &mine) == -1 || mine.st_dev != st->st_dev ||
	    mine.st_ino != st->st_ino) {
		close(fd);
		return;
	}
	l->roots[i] = fd;
}

void
guest_lookup_free(struct guest_lookup *l)
{
	size_t	i;

	for (i = 0; i < l->n; i++)
		if (l->roots[i] != -1)
			close(l->roots[i]);
	free(l->roots);
	free(l->groups);
	memset(l, 0, sizeof *l);
}

/*
 * The name rel starts with, at most a directory's: its length, and in
 * *next where the rest starts; 0 for one we do not look up ourselves
 * (".", "..", one ending in "/", too long).
 */
static size_t
lookup_name(const char *rel, const char **next)
{
	size_t	len = strcspn(rel, "/");

	*next = rel + len;
	while (**next == '/')
		(*next)++;
	if (len == 0 || len >= NAME_MAX + 1 || (rel[len] == '/' &&
	    **next == '\0') || (len == 1 && rel[0] == '.') ||
	    (len == 2 && rel[0] == '.' && rel[1] == '.'))
		return 0;
	return len;
}

/*
 * Stat path (beneath shared path root, whose part of it is plen bytes)
 * ourselves, following a last link unless nofollow: 0 into st, -ENOENT
 * or -ENOTDIR, or 1: the opener's to say.
 */
static int
lookup_walk(struct guest_lookup *l, int root, const char *path, size_t plen,
    int nofollow, struct stat *st)
{
	struct open_how	 how;
	char		 name[NAME_MAX + 1];
	const char	*rel = path + plen, *next;
	size_t		 len;
	int		 dir = root, fd, rv = 1;

	while (*rel == '/')
		rel++;
	if (*rel == '\0')
		return fstat(root, st) == -1 ? 1 : 0;
	memset(&how, 0, sizeof how);
	how.flags = O_PATH | O_DIRECTORY | O_CLOEXEC;
	how.resolve = RESOLVE_BENEATH | RESOLVE_NO_XDEV |
	    RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
	for (;;) {
		if ((len = lookup_name(rel, &next)) == 0 ||
		    !lookup_search(l, dir))
			break;
		memcpy(name, rel, len);
		name[len] = '\0';
		if (*next == '\0') {
			if (fstatat(dir, name, st, AT_SYMLINK_NOFOLLOW) == 0)
				rv = S_ISLNK(st->st_mode) && !nofollow ? 1 : 0;
			else if (errno == ENOENT)
				rv = -ENOENT;
			break;
		}
		if ((fd = syscall(SYS_openat2, dir, name, &how,
		    sizeof how)) == -1) {
			if (errno == ENOENT || errno == ENOTDIR)
				rv = -errno;
			break;
		}
		if (dir != root)
			close(dir);
		dir = fd;
		rel = next;
	}
	if (dir != root)
		close(dir);
	return rv;
}

/*
 * R's stat of path, beneath one of this node's shared paths (paths),
 * following a last link unless nofollow: 0 into st, -ENOENT or -ENOTDIR,
 * made here; or 1: the opener's to say.
 */
int
guest_lookup_stat(struct guest_lookup *l, char **paths, const char *path,
    int nofollow, struct stat *st)
{
	int	r, rv;

	if ((r = conf_shared_root(paths, l->n, path)) == -1 ||
	    l->roots[r] == -1)
		return 1;
	if ((rv = lookup_walk(l, l->roots[r], path, strlen(paths[r]),
	    nofollow, st)) != 1)
		l->made++;
	return rv;
}
