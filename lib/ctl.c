/* Client side of the control socket, shared by the tools and mosmon. */
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "osm.h"
#include "proto/ctl.pb-c.h"

int
ctl_connect(const char *path, char **cause)
{
	/* A daemon that accepts but never answers must not hang a tool. */
	struct timeval		tv = { .tv_sec = CTL_TIMEOUT_SEC };
	struct sockaddr_un	sun;
	int			fd;

	memset(&sun, 0, sizeof sun);
	sun.sun_family = AF_UNIX;
	if (strlen(path) >= sizeof sun.sun_path) {
		xasprintf(cause, "%s: socket path too long", path);
		return -1;
	}
	strcpy(sun.sun_path, path);
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
	if (connect(fd, (struct sockaddr *)&sun, sizeof sun) == -1) {
		if (errno == ENOENT || errno == ECONNREFUSED)
			xasprintf(cause, "cannot reach mosd at %s (is it "
			    "running?): %s", path, strerror(errno));
		else
			xasprintf(cause, "%s: %s", path, strerror(errno));
		close(fd);
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

/* Send one request and wait for its reply; NULL with *cause on failure. */
Osm__CtlReply *
ctl_call(const char *path, Osm__CtlRequest *req, char **cause)
{
	Osm__CtlReply	*reply = NULL;
	uint8_t		*buf = NULL;
	size_t		 len;
	int		 fd;
	char		*why;

	req->version = CTL_VERSION;
	if ((fd = ctl_connect(path, cause)) == -1)
		return NULL;
	len = osm__ctl_request__get_packed_size(req);
	buf = xmalloc(len);
	osm__ctl_request__pack(req, buf);
	if (stream_write(fd, buf, len) == -1) {
		xasprintf(cause, "%s: write: %s", path, strerror(errno));
		goto out;
	}
	free(buf);
	buf = NULL;
	if (stream_read(fd, &buf, &len, CTL_RECORD_MAX, &why) == -1) {
		if (why == NULL)
			xasprintf(cause, "%s: mosd closed the connection "
			    "without replying", path);
		else {
			xasprintf(cause, "%s: %s", path, why);
			free(why);
		}
		goto out;
	}
	reply = osm__ctl_reply__unpack(NULL, len, buf);
	if (reply == NULL)
		xasprintf(cause, "%s: malformed reply from mosd", path);
out:
	free(buf);
	close(fd);
	return reply;
}

void
ctl_reply_free(Osm__CtlReply *reply)
{
	if (reply != NULL)
		osm__ctl_reply__free_unpacked(reply, NULL);
}
