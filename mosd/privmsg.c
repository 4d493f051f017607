/*
 * The records between mosd's privileged parent and its network process
 * (privmsg.h): sending and receiving them, and the checks the parent
 * makes of each request before it acts on one. A record that fails a
 * check is refused whole, with a cause that says what was wrong.
 */
#include <sys/socket.h>

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "privmsg.h"

static const char *const privmsg_names[] = {
	[PRIVMSG_GUEST] = "guest",
	[PRIVMSG_TOKEN] = "token",
	[PRIVMSG_ANSWER] = "answer",
	[PRIVMSG_RELOAD] = "reload",
	[PRIVMSG_STOP] = "stop",
};

const char *
privmsg_type_name(uint32_t type)
{
	if (type >= nitems(privmsg_names) || privmsg_names[type] == NULL)
		return NULL;
	return privmsg_names[type];
}

/*
 * One record, at once or not at all: the channel never blocks either
 * process on the other (-1 and errno, EAGAIN if the other reads nothing).
 */
int
privmsg_send(int fd, uint32_t type, uint32_t id, const void *body,
    size_t len, const int *fds, size_t nfds)
{
	union {
		struct cmsghdr	hdr;
		char		buf[CMSG_SPACE(PRIVMSG_FDS * sizeof(int))];
	} control;
	struct privmsg_hdr	 h = { .type = type, .id = id };
	struct iovec		 iov[2];
	struct msghdr		 msg;
	struct cmsghdr		*cmsg;

	if (sizeof h + len > PRIVMSG_MAX || nfds > PRIVMSG_FDS) {
		errno = EMSGSIZE;
		return -1;
	}
	memset(&msg, 0, sizeof msg);
	iov[0].iov_base = &h;
	iov[0].iov_len = sizeof h;
	iov[1].iov_base = (void *)body;
	iov[1].iov_len = len;
	msg.msg_iov = iov;
	msg.msg_iovlen = 2;
	if (nfds > 0) {
		memset(&control, 0, sizeof control);
		msg.msg_control = control.buf;
		msg.msg_controllen = CMSG_SPACE(nfds * sizeof(int));
		cmsg = CMSG_FIRSTHDR(&msg);
		cmsg->cmsg_level = SOL_SOCKET;
		cmsg->cmsg_type = SCM_RIGHTS;
		cmsg->cmsg_len = CMSG_LEN(nfds * sizeof(int));
		memcpy(CMSG_DATA(cmsg), fds, nfds * sizeof(int));
	}
	if (sendmsg(fd, &msg, MSG_DONTWAIT | MSG_NOSIGNAL) == -1)
		return -1;
	return 0;
}

void
privmsg_close_fds(struct privmsg *msg)
{
	size_t	i;

	for (i = 0; i < msg->nfds; i++)
		close(msg->fds[i]);
	msg->nfds = 0;
}

/* The descriptors of every SCM_RIGHTS message: kept, or closed if too many. */
static int
privmsg_take_fds(struct privmsg *msg, struct msghdr *mh, char **why)
{
	struct cmsghdr	*cmsg;
	size_t		 n, i;
	int		 fd, bad = 0;

	for (cmsg = CMSG_FIRSTHDR(mh); cmsg != NULL;
	    cmsg = CMSG_NXTHDR(mh, cmsg)) {
		if (cmsg->cmsg_level != SOL_SOCKET ||
		    cmsg->cmsg_type != SCM_RIGHTS) {
			bad = 1;	/* nothing else is asked for */
			continue;
		}
		n = (cmsg->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (i = 0; i < n; i++) {
			memcpy(&fd, CMSG_DATA(cmsg) + i * sizeof(int),
			    sizeof fd);
			if (msg->nfds < PRIVMSG_FDS)
				msg->fds[msg->nfds++] = fd;
			else {
				close(fd);
				bad = 1;
			}
		}
	}
	if (bad) {
		xasprintf(why, "a record with more than %d descriptors or a "
		    "control message other than descriptors", PRIVMSG_FDS);
		privmsg_close_fds(msg);
		return -1;
	}
	return 0;
}

/*
 * The next record on fd, which must be non-blocking. A record cut short
 * (over PRIVMSG_MAX, or its descriptors over what fits) or without a
 * whole header is PRIVMSG_BAD, its descriptors closed.
 */
enum privmsg_recv
privmsg_recv(int fd, struct privmsg *msg, char **why)
{
	union {
		struct cmsghdr	hdr;
		char		buf[CMSG_SPACE((PRIVMSG_FDS + 1) *
				    sizeof(int))];
	} control;
	uint8_t		 buf[PRIVMSG_MAX];
	struct pollfd	 pfd = { .fd = fd, .events = POLLIN | POLLRDHUP };
	struct iovec	 iov;
	struct msghdr	 mh;
	ssize_t		 n;

	memset(msg, 0, sizeof *msg);
	memset(&mh, 0, sizeof mh);
	iov.iov_base = buf;
	iov.iov_len = sizeof buf;
	mh.msg_iov = &iov;
	mh.msg_iovlen = 1;
	mh.msg_control = control.buf;
	mh.msg_controllen = sizeof control.buf;
	n = recvmsg(fd, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC | MSG_TRUNC);
	if (n == -1)
		return PRIVMSG_NONE;
	if (privmsg_take_fds(msg, &mh, why) == -1)
		return PRIVMSG_BAD;
	if (n == 0 && poll(&pfd, 1, 0) == 1 &&
	    (pfd.revents & (POLLHUP | POLLRDHUP)) != 0)
		return PRIVMSG_EOF;
	if ((mh.msg_flags & MSG_CTRUNC) != 0)
		xasprintf(why, "a record with more descriptors than %d",
		    PRIVMSG_FDS);
	else if ((size_t)n > sizeof buf)
		xasprintf(why, "a record of %zd bytes (at most %d)", n,
		    PRIVMSG_MAX);
	else if ((size_t)n < sizeof msg->hdr)
		xasprintf(why, "a record of %zd bytes, shorter than its "
		    "header (%zu)", n, sizeof msg->hdr);
	else {
		memcpy(&msg->hdr, buf, sizeof msg->hdr);
		msg->len = n - sizeof msg->hdr;
		memcpy(msg->body, buf + sizeof msg->hdr, msg->len);
		explicit_bzero(buf, sizeof buf);
		return PRIVMSG_OK;
	}
	explicit_bzero(buf, sizeof buf);
	privmsg_close_fds(msg);
	return PRIVMSG_BAD;
}

/* Is s, of size bytes, a NUL-terminated string of 1 to max characters? */
static const char *
privmsg_string(const char *s, size_t size, size_t max, int empty_ok)
{
	const char	*nul = memchr(s, '\0', size);

	if (nul == NULL)
		return "is not NUL-terminated";
	if ((size_t)(nul - s) > max)
		return "is too long";
	if (nul == s && !empty_ok)
		return "is empty";
	return NULL;
}

/*
 * A request to start a guest agent, checked whole: its size, its one
 * descriptor (a TCP socket, the session), the nodes, the strings. The
 * guest uid is the parent's to choose, never the request's. 0 and the
 * request in *out, or -1 and *why.
 */
int
privmsg_check_guest(const struct privmsg *msg,
    const struct cluster_conf *conf, struct privmsg_guest *out, char **why)
{
	const char	*bad;
	socklen_t	 len = sizeof(int);
	int		 domain = -1, type = -1;

	if (msg->len != sizeof *out) {
		xasprintf(why, "guest: %zu bytes, expected %zu", msg->len,
		    sizeof *out);
		return -1;
	}
	memcpy(out, msg->body, sizeof *out);
	if (msg->nfds != 1) {
		xasprintf(why, "guest: %zu descriptors, expected 1 (the "
		    "session)", msg->nfds);
		return -1;
	}
	if (getsockopt(msg->fds[0], SOL_SOCKET, SO_DOMAIN, &domain,
	    &len) == -1 || getsockopt(msg->fds[0], SOL_SOCKET, SO_TYPE, &type,
	    &len) == -1 || (domain != AF_INET && domain != AF_INET6) ||
	    type != SOCK_STREAM) {
		xasprintf(why, "guest: the descriptor is not a TCP socket");
		return -1;
	}
	if (out->home == conf->self || conf_find(conf, out->home) == NULL) {
		xasprintf(why, "guest: home %u is not another node of the "
		    "map", out->home);
		return -1;
	}
	if (out->pid == 0 || out->pid > PRIVMSG_PID_MAX) {
		xasprintf(why, "guest: pid %u is out of range", out->pid);
		return -1;
	}
	if ((bad = privmsg_string(out->user, sizeof out->user,
	    PRIVMSG_USER_MAX, 0)) != NULL) {
		xasprintf(why, "guest: the user name %s", bad);
		return -1;
	}
	if ((bad = privmsg_string(out->command, sizeof out->command,
	    PRIVMSG_COMMAND_MAX, 1)) != NULL) {
		xasprintf(why, "guest: the command %s", bad);
		return -1;
	}
	if (out->strict_files > 1) {
		xasprintf(why, "guest: strict_files is %u, not 0 or 1",
		    out->strict_files);
		return -1;
	}
	return 0;
}

/* A token to check: 1 to PRIVMSG_TOKEN_MAX bytes. */
int
privmsg_check_token(const struct privmsg *msg, struct privmsg_token *out,
    char **why)
{
	if (msg->len != sizeof *out) {
		xasprintf(why, "token: %zu bytes, expected %zu", msg->len,
		    sizeof *out);
		return -1;
	}
	if (msg->nfds != 0) {
		xasprintf(why, "token: %zu descriptors, expected none",
		    msg->nfds);
		return -1;
	}
	memcpy(out, msg->body, sizeof *out);
	if (out->len == 0 || out->len > sizeof out->token) {
		xasprintf(why, "token: a length of %u (1 to %zu)", out->len,
		    sizeof out->token);
		return -1;
	}
	return 0;
}
