/*
 * Records on a byte stream (control socket, image files, migration
 * stream): u32 length in network order, then that many bytes.
 */
#include <arpa/inet.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "osm.h"

int
stream_write(int fd, const void *buf, size_t len)
{
	uint32_t	n = htonl(len);

	if (len > STREAM_RECORD_MAX) {
		errno = EMSGSIZE;
		return -1;
	}
	if (write_all(fd, &n, sizeof n) == -1)
		return -1;
	return write_all(fd, buf, len);
}

static void
stream_error(char **cause, const char *what)
{
	/* EAGAIN on a blocking fd: its SO_RCVTIMEO ran out. */
	if (errno == EAGAIN)
		xasprintf(cause, "%s: timed out", what);
	else
		xasprintf(cause, "%s: %s", what, strerror(errno));
}

/*
 * Read one record of at most max bytes into a fresh buffer. At a clean end
 * of stream returns -1 with *cause NULL.
 */
int
stream_read(int fd, uint8_t **out, size_t *len, size_t max, char **cause)
{
	uint32_t	 n;
	uint8_t		*buf;

	*cause = NULL;
	if (read_all(fd, &n, sizeof n) == -1) {
		if (errno != 0)
			stream_error(cause, "read");
		return -1;
	}
	n = ntohl(n);
	if (n > max) {
		xasprintf(cause, "record of %u bytes exceeds the limit of %zu",
		    n, max);
		return -1;
	}
	buf = xmalloc(n);
	if (read_all(fd, buf, n) == -1) {
		if (errno != 0)
			stream_error(cause, "read");
		else
			xasprintf(cause, "truncated record: expected %u bytes",
			    n);
		free(buf);
		return -1;
	}
	*out = buf;
	*len = n;
	return 0;
}
