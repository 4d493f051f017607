/*
 * Sockets through forwarding: sendmsg/recvmsg with iovecs, SCM_RIGHTS and
 * names, sendto/recvfrom, socket options and names, poll, MSG_TRUNC.
 */
#include <sys/socket.h>
#include <sys/un.h>

#include <poll.h>
#include <stddef.h>
#include <unistd.h>

#include "rt.h"

static socklen_t
abstract(struct sockaddr_un *sun, const char *name)
{
	memset(sun, 0, sizeof *sun);
	sun->sun_family = AF_UNIX;
	memcpy(sun->sun_path + 1, name, strlen(name));
	return offsetof(struct sockaddr_un, sun_path) + 1 + strlen(name);
}

static void
rights(void)
{
	char		 h1[] = "hello ", h2[] = "over there";
	char		 r1[4], r2[8], r3[32];
	struct iovec	 out[2] = { { h1, 6 }, { h2, 10 } };
	struct iovec	 in[3] = { { r1, 4 }, { r2, 8 }, { r3, 32 } };
	union {
		struct cmsghdr	 h;
		char		 buf[CMSG_SPACE(sizeof(int)) + 16];
	}		 ctl;
	struct msghdr	 msg;
	struct cmsghdr	*cm;
	struct pollfd	 pfd;
	int		 sv[2], p[2], got = -1;
	char		 buf[16];

	CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0, "socketpair");
	CHECK(pipe(p) == 0, "pipe");

	memset(&msg, 0, sizeof msg);
	memset(&ctl, 0, sizeof ctl);
	msg.msg_iov = out;
	msg.msg_iovlen = 2;
	msg.msg_control = ctl.buf;
	msg.msg_controllen = CMSG_SPACE(sizeof(int));
	cm = CMSG_FIRSTHDR(&msg);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &p[1], sizeof(int));
	CHECK(sendmsg(sv[0], &msg, 0) == 16, "sendmsg");

	pfd.fd = sv[1];
	pfd.events = POLLIN;
	CHECK(poll(&pfd, 1, 1000) == 1 && (pfd.revents & POLLIN), "poll");

	memset(&msg, 0, sizeof msg);
	memset(&ctl, 0xee, sizeof ctl);
	memset(r3, '#', sizeof r3);
	msg.msg_iov = in;
	msg.msg_iovlen = 3;
	msg.msg_control = ctl.buf;
	msg.msg_controllen = sizeof ctl.buf;
	CHECK(recvmsg(sv[1], &msg, 0) == 16, "recvmsg");
	CHECK(memcmp(r1, "hell", 4) == 0 && memcmp(r2, "o over t", 8) == 0 &&
	    memcmp(r3, "here", 4) == 0 && r3[4] == '#', "data");
	/* our pointers are back in the msghdr, the lengths the kernel's */
	CHECK(msg.msg_iov == in && msg.msg_control == ctl.buf &&
	    msg.msg_iovlen == 3 && msg.msg_controllen ==
	    CMSG_SPACE(sizeof(int)) && msg.msg_flags == 0, "msghdr");
	cm = CMSG_FIRSTHDR(&msg);
	CHECK(cm != NULL && cm->cmsg_type == SCM_RIGHTS, "cmsg");
	if (cm != NULL)
		memcpy(&got, CMSG_DATA(cm), sizeof got);
	CHECK(got >= 0 && got != p[1], "fd %d", got);
	CHECK(write(got, "passed", 6) == 6 && read(p[0], buf, 16) == 6 &&
	    memcmp(buf, "passed", 6) == 0, "write through the passed fd");
	close(got);
	close(p[0]);
	close(p[1]);
	close(sv[0]);
	close(sv[1]);
}

static void
datagrams(void)
{
	struct sockaddr_un	 a, b, from;
	struct sockaddr_storage	 ss;
	struct msghdr		 msg;
	struct iovec		 iov;
	socklen_t		 alen, blen, len;
	char			 buf[8], name[32];
	int			 sa, sb, v;

	snprintf(name, sizeof name, "osm-loop-a-%ld", (long)getpid());
	alen = abstract(&a, name);
	snprintf(name, sizeof name, "osm-loop-b-%ld", (long)getpid());
	blen = abstract(&b, name);
	sa = socket(AF_UNIX, SOCK_DGRAM, 0);
	sb = socket(AF_UNIX, SOCK_DGRAM, 0);
	CHECK(sa >= 0 && sb >= 0, "socket");
	CHECK(bind(sa, (struct sockaddr *)&a, alen) == 0, "bind a");
	CHECK(bind(sb, (struct sockaddr *)&b, blen) == 0, "bind b");
	len = sizeof ss;
	CHECK(getsockname(sb, (struct sockaddr *)&ss, &len) == 0 &&
	    len == blen && memcmp(&ss, &b, blen) == 0, "getsockname");
	len = sizeof v;
	CHECK(getsockopt(sa, SOL_SOCKET, SO_TYPE, &v, &len) == 0 &&
	    v == SOCK_DGRAM && len == sizeof v, "SO_TYPE");
	v = 65536;
	CHECK(setsockopt(sa, SOL_SOCKET, SO_RCVBUF, &v, sizeof v) == 0,
	    "SO_RCVBUF");

	CHECK(sendto(sb, "datagram!", 9, 0, (struct sockaddr *)&a, alen) == 9,
	    "sendto");
	memset(&msg, 0, sizeof msg);
	memset(&from, 0, sizeof from);
	memset(buf, '#', sizeof buf);
	iov.iov_base = buf;
	iov.iov_len = 4;
	msg.msg_name = &from;
	msg.msg_namelen = sizeof from;
	msg.msg_iov = &iov;
	msg.msg_iovlen = 1;
	/* MSG_TRUNC: the datagram's length, more than was copied */
	CHECK(recvmsg(sa, &msg, MSG_TRUNC) == 9, "recvmsg MSG_TRUNC");
	CHECK(memcmp(buf, "data", 4) == 0 && buf[4] == '#', "truncated");
	CHECK((msg.msg_flags & MSG_TRUNC) && msg.msg_name == &from &&
	    msg.msg_namelen == blen && memcmp(&from, &b, blen) == 0,
	    "sender's name");

	CHECK(sendto(sb, "again", 5, 0, (struct sockaddr *)&a, alen) == 5,
	    "sendto");
	len = sizeof ss;
	CHECK(recvfrom(sa, buf, sizeof buf, 0, (struct sockaddr *)&ss,
	    &len) == 5 && memcmp(buf, "again", 5) == 0 && len == blen &&
	    memcmp(&ss, &b, blen) == 0, "recvfrom");
	close(sa);
	close(sb);
}

int
main(void)
{
	rights();
	datagrams();
	return rt_verdict("sock");
}
