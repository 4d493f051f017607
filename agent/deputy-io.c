/*
 * Regular files for the copy away, at home (libremote/fileio.c has the
 * guest's side): what one of P's descriptors is (RemoteFdAsk), bytes read
 * ahead of R's reads (RemoteRead), and the calls written behind (a write,
 * a pwrite64, an lseek of the offset R owes). All come in their turn after
 * the calls R sent before them, so that what they say follows those calls
 * (but another thread's still running in its lane: deputy-serve.c).
 *
 * The deputy makes them itself, on a duplicate of P's descriptor
 * (pidfd_getfd: the same open file, its offset and flags shared, as a
 * dup(2) shares them), so P is not woken: the call does to the file and
 * its offset what P's would. Not when P has a file size limit of its own
 * (RLIMIT_FSIZE: its writes would be held to it, ours not): P makes
 * those. So are the reads, writes and seeks of a regular file that R
 * waits for (deputy_io_call), in the call's memory in the husk's area, as
 * P would have made them there.
 *
 * The answers about a regular file and the replies to writes say the room
 * left on its file system, for the guest to write behind only while there
 * is room (deputy_io_room).
 */
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/uio.h>

#include <linux/magic.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

#include "internal.h"
#include "proto/migrate.pb-c.h"
#include "proto/remote.pb-c.h"

#define KCMP_FILE	0

#define IO_READ_MAX	(4U << 20)	/* as the guest takes at once */
#define IO_TABLE_WORDS	4	/* P's descriptors told of: 0 to 255 */

static uint64_t
io_ns(const struct timespec *ts)
{
	return ts->tv_sec * 1000000000ULL + ts->tv_nsec;
}

/* P's descriptor fd: its offset and flags, from /proc/P/fdinfo/fd. */
int
deputy_io_fdinfo(pid_t pid, int fd, uint64_t *pos, unsigned int *flags)
{
	char			 path[64], line[128];
	unsigned long long	 v;
	unsigned int		 f;
	FILE			*fp;
	int			 seen = 0;

	snprintf(path, sizeof path, "/proc/%d/fdinfo/%d", (int)pid, fd);
	if ((fp = fopen(path, "re")) == NULL)
		return -1;
	while (fgets(line, sizeof line, fp) != NULL) {
		if (sscanf(line, "pos: %llu", &v) == 1) {
			*pos = v;
			seen |= 1;
		} else if (sscanf(line, "flags: %o", &f) == 1) {
			*flags = f;
			seen |= 2;
		}
	}
	fclose(fp);
	return seen == 3 ? 0 : -1;
}

/*
 * Do the regular files of a file system of this type (statfs) answer a
 * terminal's ioctls with ENOTTY? Those of the local and network file
 * systems below do: neither the VFS nor their own ioctls know TCGETS,
 * TIOCGWINSZ or TIOCGPGRP. A FUSE file's go to its daemon, and a file
 * system not listed may have ioctls of its own: no.
 */
static int
io_notty(long type)
{
	switch (type) {
	case EXT4_SUPER_MAGIC:		/* ext2, ext3 too */
	case XFS_SUPER_MAGIC:
	case BTRFS_SUPER_MAGIC:
	case TMPFS_MAGIC:
	case NFS_SUPER_MAGIC:
	case OVERLAYFS_SUPER_MAGIC:
	case F2FS_SUPER_MAGIC:
	case CEPH_SUPER_MAGIC:
		return 1;
	}
	return 0;
}

/*
 * Bytes free on the file system of the file at path (NULL: of fd), to P's
 * owner (we are its owner; root also has the blocks kept for root), or -1
 * if the file system does not say (no blocks: FUSE and the like); *notty
 * (if not NULL) whether its files answer a terminal's ioctls with ENOTTY.
 */
static int64_t
io_room(const char *path, int fd, int *notty)
{
	struct statfs	sf;
	uint64_t	free;

	if (notty != NULL)
		*notty = 0;
	if ((path != NULL ? statfs(path, &sf) : fstatfs(fd, &sf)) == -1)
		return -1;
	if (notty != NULL)
		*notty = io_notty((long)sf.f_type);
	if (sf.f_blocks == 0)
		return -1;
	free = (uint64_t)(geteuid() == 0 ? sf.f_bfree : sf.f_bavail) *
	    (uint64_t)(sf.f_frsize != 0 ? sf.f_frsize : sf.f_bsize);
	return free > INT64_MAX ? INT64_MAX : (int64_t)free;
}

/*
 * The room left where P's descriptor fd writes, after P's write or
 * pwrite64 on it (hc), for its reply: -1 for any other call.
 */
int64_t
deputy_io_room(struct deputy *d, const struct home_call *hc)
{
	char	path[64];

	if (d->o->strict_io || (hc->nr != SYS_write &&
	    hc->nr != SYS_pwrite64))
		return -1;
	snprintf(path, sizeof path, "/proc/%d/fd/%d", (int)d->pid,
	    (int)hc->args[0]);
	return io_room(path, -1, NULL);
}

/* Are P's fd and ours the same open file? */
static int
io_same(pid_t pid, int fd, int ours)
{
	return syscall(SYS_kcmp, pid, getpid(), KCMP_FILE, fd, ours) == 0;
}

/* Our duplicate of P's descriptor fd (the same open file), or -1. */
static int
io_dup(struct deputy *d, int fd)
{
	if (d->io_fd > 0 && d->io_fdnum == fd && io_same(d->pid, fd, d->io_fd))
		return d->io_fd;
	if (d->io_fd > 0)
		close(d->io_fd);
	d->io_fd = 0;
	if (d->io_pidfd <= 0 &&
	    (d->io_pidfd = syscall(SYS_pidfd_open, d->pid, 0)) <= 0) {
		d->io_pidfd = 0;
		return -1;
	}
	if ((d->io_fd = syscall(SYS_pidfd_getfd, d->io_pidfd, fd, 0)) <= 0) {
		d->io_fd = 0;
		return -1;
	}
	d->io_fdnum = fd;
	return d->io_fd;
}

/*
 * Is fd the same open file as another of P's descriptors (a dup, 2>&1)?
 * 1 if it is, or if /proc cannot say; those others below 64 in *mask.
 */
static int
io_shared(pid_t pid, int fd, uint64_t *mask)
{
	char		 path[64];
	struct dirent	*de;
	DIR		*dir;
	int		 other, shared = 0;

	*mask = 0;
	snprintf(path, sizeof path, "/proc/%d/fd", (int)pid);
	if ((dir = opendir(path)) == NULL)
		return 1;
	while ((de = readdir(dir)) != NULL) {
		other = atoi(de->d_name);
		if (de->d_name[0] == '.' || other == fd ||
		    syscall(SYS_kcmp, pid, pid, KCMP_FILE, fd, other) != 0)
			continue;
		shared = 1;
		if (other < 64)
			*mask |= 1ULL << other;
	}
	closedir(dir);
	return shared;
}

/*
 * P's descriptors below 64 x IO_TABLE_WORDS, a bit each, and its umask,
 * into m (RemoteFdInfo.table, .umask): for the guest to number and create
 * the files it opens where R runs as P's kernel would (docs/REMOTE.md,
 * "Opens made here"). Nothing if /proc cannot say.
 */
static void
io_table(pid_t pid, Osm__RemoteFdInfo *m, uint64_t *words)
{
	char		 path[64], mask[16];
	struct dirent	*de;
	DIR		*dir;
	char		*end;
	long		 fd, um;

	snprintf(path, sizeof path, "/proc/%d/fd", (int)pid);
	if (proc_status(pid, "Umask", mask, sizeof mask) != 0 ||
	    (um = strtol(mask, &end, 8)) < 0 || um > 0777 || end == mask ||
	    (dir = opendir(path)) == NULL)
		return;
	memset(words, 0, IO_TABLE_WORDS * sizeof *words);
	while ((de = readdir(dir)) != NULL) {
		if (de->d_name[0] == '.')
			continue;
		fd = strtol(de->d_name, &end, 10);
		if (*end == '\0' && fd >= 0 && fd < 64 * IO_TABLE_WORDS)
			words[fd / 64] |= 1ULL << (fd % 64);
	}
	closedir(dir);
	m->n_table = IO_TABLE_WORDS;
	m->table = words;
	m->has_umask = 1;
	m->umask = (uint32_t)um;
}

/*
 * Is P's descriptor fd (path, st) one whose writes the guest may gather
 * (libremote/pipes.c): a pipe, a FIFO or a character device, open for
 * writing and blocking (a non-blocking one's EAGAIN is its write's own);
 * a terminal only without TOSTOP (with it, a write of P's from the
 * background would stop it, and a write R was told is done cannot wait
 * for the stop: its writes go as they are). /dev/zero open for reading
 * is one too, whose reads the guest answers (*zero).
 */
static int
io_pipe(struct deputy *d, int fd, const struct stat *st, int *zero)
{
	struct termios	tio;
	unsigned int	flags = 0;
	uint64_t	pos;
	int		ours;

	*zero = 0;
	if ((!S_ISFIFO(st->st_mode) && !S_ISCHR(st->st_mode)) ||
	    deputy_io_fdinfo(d->pid, fd, &pos, &flags) == -1 ||
	    (flags & O_PATH) != 0)
		return 0;
	*zero = S_ISCHR(st->st_mode) && st->st_rdev == makedev(1, 5) &&
	    (flags & O_ACCMODE) != O_WRONLY;
	if ((flags & O_ACCMODE) == O_RDONLY || (flags & O_NONBLOCK) != 0)
		return 0;
	if (S_ISFIFO(st->st_mode))
		return 1;
	if ((ours = io_dup(d, fd)) == -1)
		return 0;
	return !isatty(ours) || (tcgetattr(ours, &tio) == 0 &&
	    (tio.c_lflag & TOSTOP) == 0);
}

/*
 * The rest of an open's fstat (st), for the guest to answer the fstat
 * that programs make right after an open; none if a time is before 1970
 * (the message's times are unsigned).
 */
static void
io_stat(Osm__RemoteFdInfo *m, const struct stat *st)
{
	if (st->st_atim.tv_sec < 0 || st->st_mtim.tv_sec < 0 ||
	    st->st_ctim.tv_sec < 0)
		return;
	m->has_mode = m->has_nlink = m->has_uid = m->has_gid = 1;
	m->has_rdev = m->has_blksize = m->has_blocks = m->has_atime_ns = 1;
	m->mode = st->st_mode;
	m->nlink = st->st_nlink;
	m->uid = st->st_uid;
	m->gid = st->st_gid;
	m->rdev = st->st_rdev;
	m->blksize = st->st_blksize;
	m->blocks = st->st_blocks;
	m->atime_ns = io_ns(&st->st_atim);
}

/*
 * What P's descriptor fd is now, for question seq; opened: the
 * descriptor an open returned (seq 0: one under a shared path), which
 * shares its open file with no other.
 */
static int
io_fd_send(struct deputy *d, uint64_t seq, int fd, int opened, char **cause)
{
	Osm__RemoteFdInfo	 m = OSM__REMOTE_FD_INFO__INIT;
	struct stat		 st;
	char			 path[64], name[PATH_MAX];
	uint64_t		 table[IO_TABLE_WORDS];
	struct statx		 stx;
	unsigned int		 flags = 0;
	uint64_t		 pos = 0;
	int64_t			 room;
	ssize_t			 n;
	uint64_t		 same;
	int			 zero = 0, notty;

	m.seq = seq;
	m.fd = fd;
	snprintf(path, sizeof path, "/proc/%d/fd/%d", (int)d->pid, fd);
	/* strict (mosrun -s): R's calls go home as they are */
	if (!d->o->strict_io && fd >= 0 && stat(path, &st) == 0 &&
	    S_ISREG(st.st_mode) && deputy_io_fdinfo(d->pid, fd, &pos,
	    &flags) == 0 && (flags & O_PATH) == 0) {
		m.has_regular = m.has_readable = m.has_behind = 1;
		m.has_append = 1;
		m.regular = 1;
		m.readable = (flags & O_ACCMODE) != O_WRONLY &&
		    (flags & O_DIRECT) == 0;
		m.behind = (flags & O_ACCMODE) != O_RDONLY &&
		    (flags & (O_SYNC | O_DSYNC | O_DIRECT)) == 0;
		m.append = (flags & O_APPEND) != 0;
		m.has_shared = 1;
		m.shared = !opened && io_shared(d->pid, fd, &same);
		m.has_dev = m.has_ino = m.has_pos = m.has_size = 1;
		m.has_mtime_ns = m.has_ctime_ns = 1;
		m.dev = st.st_dev;
		m.ino = st.st_ino;
		m.pos = pos;
		m.size = st.st_size;
		m.mtime_ns = io_ns(&st.st_mtim);
		m.ctime_ns = io_ns(&st.st_ctim);
		/* the file it is, for the guest to open it too if shared */
		if ((n = readlink(path, name, sizeof name - 1)) > 0) {
			name[n] = '\0';
			m.path = name;
		}
		m.has_flags = 1;
		m.flags = flags;
		if (statx(AT_FDCWD, path, 0, STATX_BTIME, &stx) == 0 &&
		    (stx.stx_mask & STATX_BTIME)) {
			m.has_btime_ns = 1;
			m.btime_ns = stx.stx_btime.tv_sec * 1000000000ULL +
			    stx.stx_btime.tv_nsec;
		}
		if ((room = io_room(path, -1, &notty)) >= 0) {
			m.has_fs_free = 1;
			m.fs_free = room;
		}
		m.has_notty = 1;
		m.notty = notty;
		if (opened)
			io_stat(&m, &st);
	} else if (!opened && !d->o->strict_io && fd >= 0 &&
	    stat(path, &st) == 0 && ((m.behind = io_pipe(d, fd, &st,
	    &zero)) || zero)) {
		/* writes gathered if behind, reads answered there if zero */
		m.has_pipe = m.has_behind = m.has_zero = 1;
		m.pipe = 1;
		m.zero = zero;
		/* 2>&1: its writes and the others' gathered together */
		if (io_shared(d->pid, fd, &same) && same != 0) {
			m.has_same = 1;
			m.same = same;
		}
	} else if (opened && !d->o->strict_io && fd >= 0 &&
	    stat(path, &st) == 0 && S_ISDIR(st.st_mode) &&
	    (n = readlink(path, name, sizeof name - 1)) > 0) {
		/* an open's directory (sqlite3's, for an fsync of it) */
		name[n] = '\0';
		m.path = name;
		m.has_directory = m.has_dev = m.has_ino = m.has_size = 1;
		m.has_mtime_ns = m.has_ctime_ns = 1;
		m.directory = 1;
		m.dev = st.st_dev;
		m.ino = st.st_ino;
		m.size = st.st_size;
		m.mtime_ns = io_ns(&st.st_mtim);
		m.ctime_ns = io_ns(&st.st_ctim);
		io_stat(&m, &st);
	}
	/* under a shared path: what the next opens there are numbered */
	if (opened && seq == 0 && (m.regular || m.directory))
		io_table(d->pid, &m, table);
	return session_send_msg(&d->ses, OSM__SES_KIND__SES_FD_INFO, &m.base,
	    cause);
}

/* What P's descriptor is now (SES_FD_ASK): answered SES_FD_INFO. */
int
deputy_io_fd(struct deputy *d, const uint8_t *body, size_t len,
    char **cause)
{
	Osm__RemoteFdAsk	*a;
	int			 rc;

	if ((a = osm__remote_fd_ask__unpack(NULL, len, body)) == NULL) {
		xasprintf(cause, "malformed descriptor question");
		return -1;
	}
	rc = io_fd_send(d, a->seq, a->fd, 0, cause);
	osm__remote_fd_ask__free_unpacked(a, NULL);
	return rc;
}

/*
 * An open returned fd in P: the guest hears what it is before the reply,
 * for the call seq (RemoteCall.fd_info: to know it from the start,
 * docs/REMOTE.md, "Calls behind"), or as seq 0 for one under a shared
 * path, to open the same file where R runs ("Shared file systems").
 */
int
deputy_io_opened(struct deputy *d, uint64_t seq, int fd, char **cause)
{
	return io_fd_send(d, seq, fd, 1, cause);
}

void
deputy_io_close(struct deputy *d)
{
	if (d->io_fd > 0)
		close(d->io_fd);
	d->io_fd = 0;		/* none: the deputy's 0 is /dev/null */
	if (d->io_pidfd > 0)
		close(d->io_pidfd);
	d->io_pidfd = 0;
	free(d->io_buf);
	d->io_buf = NULL;
}

/*
 * Do we make this call written behind (c: write, pwrite64, lseek)
 * ourselves, on our duplicate of P's descriptor (its number in *fd)?
 * Not if P has a file size limit and it writes: P makes it, in the lane
 * of the thread that wrote.
 */
int
deputy_io_self(struct deputy *d, const Osm__RemoteCall *c, int *fd)
{
	struct rlimit	fsize;

	/* a batch of writes (a pipe's): P makes each, in its lane */
	if (!c->behind || c->n_args != 6 || c->n_writes > 0 ||
	    (c->nr != SYS_lseek && (c->n_regions != 1 ||
	    !c->regions[0]->has_data)) ||
	    (c->nr != SYS_write && c->nr != SYS_pwrite64 &&
	    c->nr != SYS_lseek) || c->args[3] > INT64_MAX ||
	    c->args[0] > INT32_MAX)
		return 0;
	if (c->nr != SYS_lseek && (prlimit(d->pid, RLIMIT_FSIZE, NULL,
	    &fsize) == -1 || fsize.rlim_cur != RLIM_INFINITY))
		return 0;
	return (*fd = io_dup(d, (int)c->args[0])) != -1;
}

/*
 * A call written behind (hc: write, pwrite64, lseek), made here on our
 * duplicate of P's descriptor, its reply sent: 1; 0 if P must make it; -1
 * if the session broke.
 */
int
deputy_io_write(struct deputy *d, const struct home_call *hc, char **cause)
{
	const Osm__RemoteCall	*c = hc->call;
	Osm__RemoteReply	 r = OSM__REMOTE_REPLY__INIT;
	size_t			 done;
	ssize_t			 n = 0;
	int64_t			 room;
	int			 fd;

	if (!hc->behind || !deputy_io_self(d, c, &fd))
		return 0;
	/*
	 * R has had its answer: what a short write leaves is written on, so
	 * that the reply says all, or why not (ENOSPC), as the next write of
	 * a native process would have told it.
	 */
	if (hc->nr == SYS_lseek) {
		r.ret = lseek(fd, (off_t)c->args[1], (int)c->args[2]);
		if (r.ret == -1)
			r.ret = -errno;
	} else {
		for (done = 0; done < c->regions[0]->data.len; done += n) {
			n = hc->nr == SYS_write ? write(fd,
			    c->regions[0]->data.data + done,
			    c->regions[0]->data.len - done) : pwrite(fd,
			    c->regions[0]->data.data + done,
			    c->regions[0]->data.len - done,
			    (off_t)(c->args[3] + done));
			if (n <= 0)
				break;
		}
		r.ret = n == -1 ? -errno : (int64_t)done;
		if ((room = io_room(NULL, fd, NULL)) >= 0) {
			r.has_fs_free = 1;
			r.fs_free = room;
		}
	}
	r.seq = hc->seq;
	log_debug("process %d: %s = %lld (behind, by the deputy)",
	    (int)d->pid, hc->name, (long long)r.ret);
	return session_send_msg(&d->ses, OSM__SES_KIND__SES_REPLY, &r.base,
	    cause) == -1 ? -1 : 1;
}

/*
 * A read, write, pread64, pwrite64 or lseek of P's on a regular file (hc,
 * laid out in the lane's area: mem is base in P, room bytes), made here
 * on our duplicate of its descriptor: 1, its result in *rv, the bytes
 * read where P's would have gone; 0 if P must make it (not a regular
 * file, mosrun -s, a write under a file size limit of P's, a call written
 * behind, which deputy_io_write takes).
 */
int
deputy_io_call(struct deputy *d, const struct home_call *hc, uint8_t *mem,
    uint64_t base, size_t room, long *rv)
{
	struct rlimit	 fsize;
	struct stat	 st;
	uint8_t		*buf;
	ssize_t		 n;
	int		 fd;

	if (d->o->strict_io || hc->behind || hc->args[0] > INT32_MAX)
		return 0;
	switch (hc->nr) {
	case SYS_write:
	case SYS_pwrite64:
		if (prlimit(d->pid, RLIMIT_FSIZE, NULL, &fsize) == -1 ||
		    fsize.rlim_cur != RLIM_INFINITY)
			return 0;
		/* FALLTHROUGH */
	case SYS_read:
	case SYS_pread64:
		if (hc->args[1] < base || hc->args[2] > room ||
		    hc->args[1] - base > room - hc->args[2] ||
		    hc->args[2] > SSIZE_MAX)
			return 0;
		break;
	case SYS_lseek:
		break;
	default:
		return 0;
	}
	if ((fd = io_dup(d, (int)hc->args[0])) == -1 || fstat(fd, &st) == -1 ||
	    !S_ISREG(st.st_mode))
		return 0;
	buf = hc->nr != SYS_lseek ? mem + (hc->args[1] - base) : NULL;
	switch (hc->nr) {
	case SYS_read:
		n = read(fd, buf, hc->args[2]);
		break;
	case SYS_pread64:
		n = pread(fd, buf, hc->args[2], (off_t)hc->args[3]);
		break;
	case SYS_write:
		n = write(fd, buf, hc->args[2]);
		break;
	case SYS_pwrite64:
		n = pwrite(fd, buf, hc->args[2], (off_t)hc->args[3]);
		break;
	default:
		n = lseek(fd, (off_t)hc->args[1], (int)hc->args[2]);
		break;
	}
	*rv = n == -1 ? -errno : (long)n;
	return 1;
}

/*
 * SES_READ_DATA's body: the file's bytes, then m without them packed,
 * then that message's length (u32): sealed from where they lie (no copy
 * of them into a message first), and decrypted by the guest straight
 * into the buffer its window keeps (remote_read_data).
 */
static int
deputy_io_send_data(struct deputy *d, Osm__RemoteReadData *m, char **cause)
{
	struct iovec	iov[3];
	uint8_t		msg[64], n[4];
	size_t		len;

	iov[0].iov_base = m->data.data;
	iov[0].iov_len = m->data.len;
	m->has_data = 0;
	m->data.data = NULL;
	m->data.len = 0;
	if ((len = osm__remote_read_data__get_packed_size(m)) > sizeof msg)
		fatalx("RemoteReadData of %zu bytes", len);
	osm__remote_read_data__pack(m, msg);
	frame_put32(n, len);
	iov[1].iov_base = msg;
	iov[1].iov_len = len;
	iov[2].iov_base = n;
	iov[2].iov_len = sizeof n;
	return session_sendv(&d->ses, OSM__SES_KIND__SES_READ_DATA, iov, 3,
	    cause);
}

/* Bytes of P's file read ahead (SES_READ): answered SES_READ_DATA. */
int
deputy_io_read(struct deputy *d, const uint8_t *body, size_t len,
    char **cause)
{
	Osm__RemoteRead		*r;
	Osm__RemoteReadData	 m = OSM__REMOTE_READ_DATA__INIT;
	struct stat		 st;
	ssize_t			 n = -1;
	int			 fd;

	if ((r = osm__remote_read__unpack(NULL, len, body)) == NULL) {
		xasprintf(cause, "malformed read ahead");
		return -1;
	}
	m.seq = r->seq;
	if (r->length > IO_READ_MAX || r->offset > INT64_MAX) {
		osm__remote_read__free_unpacked(r, NULL);
		xasprintf(cause, "a read ahead of %u bytes", r->length);
		return -1;
	}
	if ((fd = io_dup(d, r->fd)) == -1 || fstat(fd, &st) == -1 ||
	    st.st_dev != r->dev || st.st_ino != r->ino) {
		m.has_error = 1;
		m.error = EBADF;
	} else {
		/* One buffer for the whole stay: no fresh pages each window. */
		if (d->io_buf == NULL)
			d->io_buf = xmalloc(IO_READ_MAX);
		n = pread(fd, d->io_buf, r->length, r->offset);
		if (n == -1 || fstat(fd, &st) == -1) {
			m.has_error = 1;
			m.error = errno;
		} else {
			m.has_data = m.has_size = 1;
			m.has_mtime_ns = m.has_ctime_ns = 1;
			m.data.data = d->io_buf;
			m.data.len = n;
			m.size = st.st_size;
			m.mtime_ns = io_ns(&st.st_mtim);
			m.ctime_ns = io_ns(&st.st_ctim);
		}
	}
	osm__remote_read__free_unpacked(r, NULL);
	return deputy_io_send_data(d, &m, cause);
}
