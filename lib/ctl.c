/*
 * Client side of the control socket, shared by the tools and mosmon.
 *
 * A tool must say in words why mosd did not answer, and never die of
 * SIGPIPE: records go out with MSG_NOSIGNAL, and a mosd that refuses a
 * connection (too many for this uid, busy) answers with a CtlReply that
 * says why and hangs up, maybe before our request is even written, so the
 * reply is looked for also when the write fails.
 */
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/time.h>

#include <arpa/inet.h>
#include <sys/un.h>

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "osm.h"
#include "proto/ctl.pb-c.h"

/*
 * Send len bytes of buf on the unix socket s with descriptor fd attached
 * (SCM_RIGHTS): what sendmsg returns. The receiver is ctl_read_record.
 */
ssize_t
ctl_send_fd(int s, const void *buf, size_t len, int fd)
{
	struct msghdr	 msg;
	struct iovec	 iov;
	union {
		struct cmsghdr	hdr;
		char		buf[CMSG_SPACE(sizeof(int))];
	} cmsg;

	memset(&msg, 0, sizeof msg);
	iov.iov_base = (void *)buf;
	iov.iov_len = len;
	msg.msg_iov = &iov;
	msg.msg_iovlen = 1;
	msg.msg_control = cmsg.buf;
	msg.msg_controllen = sizeof cmsg.buf;
	cmsg.hdr.cmsg_level = SOL_SOCKET;
	cmsg.hdr.cmsg_type = SCM_RIGHTS;
	cmsg.hdr.cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(&cmsg.hdr), &fd, sizeof fd);
	return sendmsg(s, &msg, MSG_NOSIGNAL);
}

/* A unix socket address; "@name" is name in the abstract namespace. */
int
ctl_sockaddr(const char *path, struct sockaddr_un *sun, socklen_t *len)
{
	size_t	n = strlen(path);

	memset(sun, 0, sizeof *sun);
	sun->sun_family = AF_UNIX;
	if (n == 0 || n >= sizeof sun->sun_path)
		return -1;
	memcpy(sun->sun_path, path, n);
	if (path[0] == '@') {
		sun->sun_path[0] = '\0';
		*len = offsetof(struct sockaddr_un, sun_path) + n;
	} else
		*len = sizeof *sun;
	return 0;
}

/*
 * Connect to a control socket. A daemon that accepts but never answers
 * must not hang a tool: replies are awaited at most timeout seconds.
 */
int
ctl_connect(const char *path, int timeout, char **cause)
{
	struct timeval		tv = { .tv_sec = timeout };
	struct sockaddr_un	sun;
	socklen_t		len;
	int			fd;

	if (ctl_sockaddr(path, &sun, &len) == -1) {
		xasprintf(cause, "%s: bad socket path", path);
		return -1;
	}
	if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1) {
		xasprintf(cause, "socket: %s", strerror(errno));
		return -1;
	}
	if (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) == -1 ||
	    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv) == -1) {
		xasprintf(cause, "setsockopt: %s", strerror(errno));
		close(fd);
		return -1;
	}
	if (connect(fd, (struct sockaddr *)&sun, len) == -1) {
		int	e = errno;	/* for a caller that waits for mosd */

		if (e == ENOENT || e == ECONNREFUSED)
			xasprintf(cause, "cannot reach mosd at %s (is it "
			    "running?): %s", path, strerror(e));
		else
			xasprintf(cause, "%s: %s", path, strerror(e));
		close(fd);
		errno = e;
		return -1;
	}
	return fd;
}

int
ctl_peercred(int fd, uid_t *uid, gid_t *gid, pid_t *pid)
{
	struct ucred	cred;
	socklen_t	len = sizeof cred;

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == -1)
		return -1;
	*uid = cred.uid;
	*gid = cred.gid;
	*pid = cred.pid;
	return 0;
}

/* Send all of buf on the socket s, without SIGPIPE: 0, or -1 and errno. */
static int
ctl_send_all(int s, const void *buf, size_t len)
{
	const uint8_t	*p = buf;
	ssize_t		 n;

	while (len > 0) {
		if ((n = send(s, p, len, MSG_NOSIGNAL)) == -1) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		p += n;
		len -= n;
	}
	return 0;
}

/* One record (u32 length + buf) on the socket s, without SIGPIPE. */
static int
ctl_write_record(int s, const void *buf, size_t len)
{
	uint32_t	n = htonl(len);

	if (len > CTL_RECORD_MAX) {
		errno = EMSGSIZE;
		return -1;
	}
	if (ctl_send_all(s, &n, sizeof n) == -1)
		return -1;
	return ctl_send_all(s, buf, len);
}

/* Why a read of mosd's reply failed, in words. */
static void
ctl_read_error(char **cause, ssize_t r, int err)
{
	if (r == 0 || (r == -1 && (err == ECONNRESET || err == EPIPE)))
		xasprintf(cause, "mosd closed the connection without "
		    "replying (it may be overloaded; its log says why)");
	else if (r == -1 && (err == EAGAIN || err == EWOULDBLOCK))
		xasprintf(cause, "no answer from mosd within the time limit "
		    "(it may be overloaded)");
	else if (r == -1)
		xasprintf(cause, "reading mosd's answer: %s", strerror(err));
	else
		xasprintf(cause, "mosd's answer was cut short");
}

/*
 * Read one record of at most max bytes (a u32 length, then its bytes) and
 * the descriptor sent with its first bytes, if any and rfd is not NULL
 * (any other is closed). 1: read; 0: the end of the stream before it
 * began; -1 with errno (EMSGSIZE: over max; EPROTO: cut short).
 */
int
ctl_recv_record(int fd, size_t max, uint8_t **buf, size_t *len, int *rfd)
{
	struct msghdr	 msg;
	struct iovec	 iov;
	struct cmsghdr	*c;
	union {
		struct cmsghdr	hdr;
		char		buf[CMSG_SPACE(sizeof(int))];
	} cmsg;
	uint32_t	 n;
	ssize_t		 r;

	memset(&msg, 0, sizeof msg);
	iov.iov_base = &n;
	iov.iov_len = sizeof n;
	msg.msg_iov = &iov;
	msg.msg_iovlen = 1;
	msg.msg_control = cmsg.buf;
	msg.msg_controllen = sizeof cmsg.buf;
	/* The length and any descriptor come in the first bytes. */
	while ((r = recvmsg(fd, &msg, MSG_WAITALL | MSG_CMSG_CLOEXEC)) == -1 &&
	    errno == EINTR)
		;
	toolclock_mark("first");
	for (c = CMSG_FIRSTHDR(&msg); c != NULL; c = CMSG_NXTHDR(&msg, c))
		if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
			if (rfd != NULL && *rfd == -1)
				memcpy(rfd, CMSG_DATA(c), sizeof(int));
			else {
				int stray;

				memcpy(&stray, CMSG_DATA(c), sizeof stray);
				close(stray);
			}
		}
	if (r <= 0)
		return r;
	if (r != sizeof n) {
		errno = EPROTO;
		return -1;
	}
	if ((n = ntohl(n)) > max) {
		errno = EMSGSIZE;
		return -1;
	}
	*buf = xmalloc(n);
	if (read_all(fd, *buf, n) == -1) {
		if (errno == 0)
			errno = EPROTO;
		free(*buf);
		return -1;
	}
	*len = n;
	return 1;
}

/* Read one of mosd's records, and the descriptor sent with it if any. */
static int
ctl_read_record(int fd, uint8_t **buf, size_t *len, int *rfd, char **cause)
{
	int	r;

	if ((r = ctl_recv_record(fd, CTL_RECORD_MAX, buf, len, rfd)) == 1)
		return 0;
	if (r == -1 && errno == EMSGSIZE)
		xasprintf(cause, "reply over the limit of %u bytes",
		    CTL_RECORD_MAX);
	else
		ctl_read_error(cause, r == -1 && errno == EPROTO ? 1 : r,
		    errno);
	return -1;
}

/* Send one request on an open connection; its reply is ctl_reply_read's. */
int
ctl_request_send(int fd, Osm__CtlRequest *req, char **cause)
{
	uint8_t	*buf;
	size_t	 len;
	int	 wrote, werr;

	req->version = CTL_VERSION;
	len = osm__ctl_request__get_packed_size(req);
	buf = xmalloc(len);
	osm__ctl_request__pack(req, buf);
	wrote = ctl_write_record(fd, buf, len);
	werr = errno;
	free(buf);
	toolclock_mark("written");
	/* Refused, mosd may have hung up first: its answer says why. */
	if (wrote == -1 && werr != EPIPE && werr != ECONNRESET) {
		xasprintf(cause, "sending the request to mosd: %s",
		    werr == EAGAIN ? "timed out (mosd may be overloaded)" :
		    strerror(werr));
		return -1;
	}
	return 0;
}

/*
 * The reply to the request sent on fd. If rfd is not NULL, a descriptor
 * sent with it lands there (-1 if none).
 */
Osm__CtlReply *
ctl_reply_read(int fd, int *rfd, char **cause)
{
	Osm__CtlReply	*reply;
	uint8_t		*buf;
	size_t		 len;

	if (rfd != NULL)
		*rfd = -1;
	if (ctl_read_record(fd, &buf, &len, rfd, cause) == -1)
		goto fail;
	toolclock_mark("read");
	reply = osm__ctl_reply__unpack(NULL, len, buf);
	free(buf);
	if (reply == NULL) {
		xasprintf(cause, "malformed reply from mosd");
		goto fail;
	}
	return reply;
fail:
	if (rfd != NULL && *rfd != -1) {
		close(*rfd);
		*rfd = -1;
	}
	return NULL;
}

/* One request on an open connection and its reply (ctl_reply_read). */
Osm__CtlReply *
ctl_request(int fd, Osm__CtlRequest *req, int *rfd, char **cause)
{
	if (rfd != NULL)
		*rfd = -1;
	if (ctl_request_send(fd, req, cause) == -1)
		return NULL;
	return ctl_reply_read(fd, rfd, cause);
}

/* Connect, send one request and wait for its reply; NULL with *cause. */
Osm__CtlReply *
ctl_call(const char *path, Osm__CtlRequest *req, char **cause)
{
	Osm__CtlReply	*reply;
	char		*why;
	int		 fd;

	toolclock_mark("call");
	if ((fd = ctl_connect(path, CTL_TIMEOUT_SEC, cause)) == -1)
		return NULL;
	toolclock_mark("connected");
	if ((reply = ctl_request(fd, req, NULL, &why)) == NULL) {
		xasprintf(cause, "%s: %s", path, why);
		free(why);
	}
	close(fd);
	toolclock_mark("unpacked");
	return reply;
}

void
ctl_reply_free(Osm__CtlReply *reply)
{
	if (reply != NULL)
		osm__ctl_reply__free_unpacked(reply, NULL);
}

/*
 * An agent's socket for mosd's orders, in the abstract namespace under a
 * name made of what (its role and process) and a random tag, written to
 * path. The listening descriptor, non-blocking, or -1 with *cause.
 */
int
ctl_order_listen(const char *what, char *path, size_t size, char **cause)
{
	struct sockaddr_un	sun;
	socklen_t		len;
	uint32_t		r;
	int			fd;

	if (getrandom(&r, sizeof r, 0) != sizeof r)
		r = getpid() ^ (uint32_t)now_us();
	snprintf(path, size, "@osmosis-%s-%08x", what, r);
	if (ctl_sockaddr(path, &sun, &len) == -1 ||
	    (fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK,
	    0)) == -1) {
		xasprintf(cause, "order socket: %s", strerror(errno));
		return -1;
	}
	if (bind(fd, (struct sockaddr *)&sun, len) == -1 ||
	    listen(fd, 8) == -1) {
		xasprintf(cause, "order socket: %s", strerror(errno));
		close(fd);
		return -1;
	}
	return fd;
}

/*
 * One order from mosd on a connection accepted from the order socket lfd:
 * orders come from root or from uid from (mosd's network process, which
 * says its uid when an agent registers: CtlReply.order_uid) alone, whole
 * within timeout seconds. The request and the connection to answer on
 * (ctl_order_answer), or NULL.
 */
Osm__CtlRequest *
ctl_order_take(int lfd, int timeout, uid_t from, int *fd)
{
	struct timeval	 tv = { .tv_sec = timeout };
	Osm__CtlReply	 bad = OSM__CTL_REPLY__INIT;
	Osm__CtlRequest	*req = NULL;
	uint8_t		*buf;
	size_t		 len;
	uid_t		 uid;
	gid_t		 gid;
	pid_t		 pid;
	char		*cause = NULL;

	if ((*fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC)) == -1)
		return NULL;
	if (ctl_peercred(*fd, &uid, &gid, &pid) == 0 &&
	    (uid == 0 || uid == from) &&
	    setsockopt(*fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) == 0 &&
	    stream_read(*fd, &buf, &len, CTL_RECORD_MAX, &cause) == 0) {
		req = osm__ctl_request__unpack(NULL, len, buf);
		free(buf);
		if (req != NULL && req->version == CTL_VERSION)
			return req;
		bad.error = "malformed order";
		ctl_order_answer(*fd, &bad);
		if (req != NULL)
			osm__ctl_request__free_unpacked(req, NULL);
		return NULL;
	}
	free(cause);
	close(*fd);
	return NULL;
}

/* Answer an order taken with ctl_order_take, and hang up. */
void
ctl_order_answer(int fd, Osm__CtlReply *reply)
{
	uint8_t	*buf;
	size_t	 len;

	len = osm__ctl_reply__get_packed_size(reply);
	buf = xmalloc(len);
	osm__ctl_reply__pack(reply, buf);
	ctl_write_record(fd, buf, len);
	free(buf);
	close(fd);
}
