/*
 * Regular files for the copy away, at home (libremote/fileio.c has the
 * guest's side): what one of P's descriptors is (RemoteFdAsk), and bytes
 * read ahead of R's reads (RemoteRead). Both come in their turn after the
 * calls R sent before them, so that what they say follows those calls.
 *
 * Bytes are read through the deputy's own descriptor of the file, opened
 * by /proc/P/fd/N (as mappings are, deputy-files.c): P's file offset does
 * not move, and P is not woken. The deputy runs as P's owner; a file it
 * cannot open that way is read as before, by R's own reads. A pwrite64
 * written behind (R's writes at a known offset are sent so) is made the
 * same way, through the deputy's own descriptor, unless P's is O_APPEND
 * (where Linux appends a pwrite): it changes the file as P's would.
 */
#include <sys/stat.h>
#include <sys/syscall.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"
#include "proto/migrate.pb-c.h"
#include "proto/remote.pb-c.h"

#define IO_READ_MAX	(4U << 20)	/* as the guest takes at once */

static uint64_t
io_ns(const struct timespec *ts)
{
	return ts->tv_sec * 1000000000ULL + ts->tv_nsec;
}

/* P's descriptor fd: its offset and flags, from /proc/P/fdinfo/fd. */
static int
io_fdinfo(pid_t pid, int fd, uint64_t *pos, unsigned int *flags)
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

/* What P's descriptor is now (SES_FD_ASK): answered SES_FD_INFO. */
int
deputy_io_fd(struct deputy *d, const uint8_t *body, size_t len,
    char **cause)
{
	Osm__RemoteFdAsk	*a;
	Osm__RemoteFdInfo	 m = OSM__REMOTE_FD_INFO__INIT;
	struct stat		 st;
	char			 path[64];
	unsigned int		 flags = 0;
	uint64_t		 pos = 0;
	int			 rc;

	if ((a = osm__remote_fd_ask__unpack(NULL, len, body)) == NULL) {
		xasprintf(cause, "malformed descriptor question");
		return -1;
	}
	m.seq = a->seq;
	m.fd = a->fd;
	snprintf(path, sizeof path, "/proc/%d/fd/%d", (int)d->pid, a->fd);
	/* strict (mosrun -s): R's calls go home as they are */
	if (!d->o->strict_io && a->fd >= 0 && stat(path, &st) == 0 &&
	    S_ISREG(st.st_mode) && io_fdinfo(d->pid, a->fd, &pos,
	    &flags) == 0 && (flags & O_PATH) == 0) {
		m.has_regular = m.has_readable = m.has_behind = 1;
		m.has_append = 1;
		m.regular = 1;
		m.readable = (flags & O_ACCMODE) != O_WRONLY &&
		    (flags & O_DIRECT) == 0;
		m.behind = (flags & O_ACCMODE) != O_RDONLY &&
		    (flags & (O_SYNC | O_DSYNC | O_DIRECT)) == 0;
		m.append = (flags & O_APPEND) != 0;
		m.has_dev = m.has_ino = m.has_pos = m.has_size = 1;
		m.has_mtime_ns = m.has_ctime_ns = 1;
		m.dev = st.st_dev;
		m.ino = st.st_ino;
		m.pos = pos;
		m.size = st.st_size;
		m.mtime_ns = io_ns(&st.st_mtim);
		m.ctime_ns = io_ns(&st.st_ctim);
	}
	osm__remote_fd_ask__free_unpacked(a, NULL);
	rc = session_send_msg(&d->ses, OSM__SES_KIND__SES_FD_INFO, &m.base,
	    cause);
	return rc;
}

/* Our descriptor of P's fd, the file (dev, ino): -1 if not that file. */
static int
io_open(struct deputy *d, int fd, uint64_t dev, uint64_t ino)
{
	struct stat	st;
	char		path[64];

	if (d->io_fd > 0 && d->io_fdnum == fd && d->io_dev == dev &&
	    d->io_ino == ino)
		return d->io_fd;
	deputy_io_close(d);
	snprintf(path, sizeof path, "/proc/%d/fd/%d", (int)d->pid, fd);
	if ((d->io_fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY)) == -1) {
		d->io_fd = 0;
		return -1;
	}
	if (fstat(d->io_fd, &st) == -1 || st.st_dev != dev ||
	    st.st_ino != ino) {
		deputy_io_close(d);
		return -1;
	}
	d->io_fdnum = fd;
	d->io_dev = dev;
	d->io_ino = ino;
	return d->io_fd;
}

void
deputy_io_close(struct deputy *d)
{
	if (d->io_fd > 0)
		close(d->io_fd);
	d->io_fd = 0;		/* none: the deputy's 0 is /dev/null */
	if (d->io_wfd > 0)
		close(d->io_wfd);
	d->io_wfd = 0;
}

/* Our descriptor to write P's fd's file with, or -1 (P's makes it). */
static int
io_wopen(struct deputy *d, int fd)
{
	struct stat	 st, ours;
	char		 path[64];
	unsigned int	 flags = 0;
	uint64_t	 pos;

	snprintf(path, sizeof path, "/proc/%d/fd/%d", (int)d->pid, fd);
	if (stat(path, &st) == -1 || !S_ISREG(st.st_mode))
		return -1;
	if (d->io_wfd > 0 && d->io_wfdnum == fd && d->io_wdev == st.st_dev &&
	    d->io_wino == st.st_ino)
		return d->io_wfd;
	if (d->io_wfd > 0)
		close(d->io_wfd);
	d->io_wfd = 0;
	if (io_fdinfo(d->pid, fd, &pos, &flags) == -1 ||
	    (flags & (O_APPEND | O_SYNC | O_DSYNC | O_DIRECT)) != 0 ||
	    (flags & O_ACCMODE) == O_RDONLY)
		return -1;
	if ((d->io_wfd = open(path, O_WRONLY | O_CLOEXEC | O_NOCTTY)) == -1) {
		d->io_wfd = 0;
		return -1;
	}
	if (fstat(d->io_wfd, &ours) == -1 || ours.st_dev != st.st_dev ||
	    ours.st_ino != st.st_ino) {
		close(d->io_wfd);
		d->io_wfd = 0;
		return -1;
	}
	d->io_wfdnum = fd;
	d->io_wdev = st.st_dev;
	d->io_wino = st.st_ino;
	return d->io_wfd;
}

/*
 * A pwrite64 written behind (hc), made here through our descriptor of the
 * file, its reply sent: 1; 0 if P must make it; -1 if the session broke.
 */
int
deputy_io_write(struct deputy *d, const struct home_call *hc, char **cause)
{
	const Osm__RemoteCall	*c = hc->call;
	Osm__RemoteReply	 r = OSM__REMOTE_REPLY__INIT;
	ssize_t			 n;
	int			 fd;

	if (!hc->behind || hc->nr != SYS_pwrite64 || c->n_regions != 1 ||
	    !c->regions[0]->has_data || c->args[3] > INT64_MAX ||
	    (fd = io_wopen(d, (int)c->args[0])) == -1)
		return 0;
	n = pwrite(fd, c->regions[0]->data.data, c->regions[0]->data.len,
	    (off_t)c->args[3]);
	r.seq = hc->seq;
	r.ret = n == -1 ? -errno : n;
	log_debug("process %d: pwrite64 = %lld (behind, by the deputy)",
	    (int)d->pid, (long long)r.ret);
	return session_send_msg(&d->ses, OSM__SES_KIND__SES_REPLY, &r.base,
	    cause) == -1 ? -1 : 1;
}

/* Bytes of P's file read ahead (SES_READ): answered SES_READ_DATA. */
int
deputy_io_read(struct deputy *d, const uint8_t *body, size_t len,
    char **cause)
{
	Osm__RemoteRead		*r;
	Osm__RemoteReadData	 m = OSM__REMOTE_READ_DATA__INIT;
	struct stat		 st;
	uint8_t			*buf = NULL;
	ssize_t			 n = -1;
	int			 fd, rc;

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
	if ((fd = io_open(d, r->fd, r->dev, r->ino)) == -1) {
		m.has_error = 1;
		m.error = EBADF;
	} else {
		buf = xmalloc(r->length > 0 ? r->length : 1);
		n = pread(fd, buf, r->length, r->offset);
		if (n == -1 || fstat(fd, &st) == -1) {
			m.has_error = 1;
			m.error = errno;
		} else {
			m.has_data = m.has_size = 1;
			m.has_mtime_ns = m.has_ctime_ns = 1;
			m.data.data = buf;
			m.data.len = n;
			m.size = st.st_size;
			m.mtime_ns = io_ns(&st.st_mtim);
			m.ctime_ns = io_ns(&st.st_ctim);
		}
	}
	osm__remote_read__free_unpacked(r, NULL);
	rc = session_send_msg(&d->ses, OSM__SES_KIND__SES_READ_DATA, &m.base,
	    cause);
	free(buf);
	return rc;
}
