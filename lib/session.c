/*
 * A session between two agents on different nodes (a deputy and a guest):
 * a byte stream of frames (lib/frame.c) under a session key that only
 * these two hold. Each frame's body starts with its sequence number, so a
 * frame that is replayed, dropped or reordered breaks the session instead
 * of being believed.
 *
 * Reading is incremental for event loops (session_fill when the fd is
 * readable, then session_next until it says there is no more); writing
 * blocks, bounded by the socket's send timeout.
 */
#include <arpa/inet.h>

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <protobuf-c/protobuf-c.h>

#include "osm.h"

#define SESSION_SEQ	8

void
session_init(struct session *s, int fd, const uint8_t *key,
    size_t max)
{
	memset(s, 0, sizeof *s);
	s->fd = fd;
	memcpy(s->key.bytes, key, SESSION_KEY_LEN);
	s->key.len = SESSION_KEY_LEN;
	s->max = max + FRAME_OVERHEAD + SESSION_SEQ;
}

void
session_free(struct session *s)
{
	free(s->in);
	free(s->out);
	explicit_bzero(&s->key, sizeof s->key);
	s->in = s->out = NULL;
	s->inlen = s->insize = s->outsize = 0;
}

/*
 * Both ends derive the session key from the cluster key and what they
 * exchanged in the clear: each side's random nonce and the two node numbers.
 */
void
session_derive(const struct cluster_key *ck, const uint8_t *nonce_home,
    const uint8_t *nonce_remote, uint32_t home, uint32_t remote,
    uint8_t *out)
{
	static const char	label[] = "osmosis session v1";
	uint8_t			buf[sizeof label + 2 * SESSION_NONCE_LEN + 8];
	uint32_t		n;
	size_t			off = 0;

	memcpy(buf, label, sizeof label);
	off += sizeof label;
	memcpy(buf + off, nonce_home, SESSION_NONCE_LEN);
	off += SESSION_NONCE_LEN;
	memcpy(buf + off, nonce_remote, SESSION_NONCE_LEN);
	off += SESSION_NONCE_LEN;
	n = htonl(home);
	memcpy(buf + off, &n, 4);
	n = htonl(remote);
	memcpy(buf + off + 4, &n, 4);
	hmac_sha256(ck->bytes, ck->len, buf, sizeof buf, out);
	explicit_bzero(buf, sizeof buf);
}

int
session_send(struct session *s, uint16_t kind, const void *body, size_t len,
    char **cause)
{
	uint64_t	seq = ++s->tx_seq;
	size_t		need = FRAME_OVERHEAD + SESSION_SEQ + len, n, i;
	uint8_t		*plain;

	if (need > s->max) {
		xasprintf(cause, "session message of %zu bytes is over the "
		    "limit of %zu", len, s->max - FRAME_OVERHEAD - SESSION_SEQ);
		return -1;
	}
	if (s->outsize < 2 * need) {
		free(s->out);
		s->outsize = 2 * need;
		s->out = xmalloc(s->outsize);
	}
	/* sequence number then body, framed: two halves of one buffer */
	plain = s->out + need;
	for (i = 0; i < SESSION_SEQ; i++)
		plain[i] = seq >> (8 * (SESSION_SEQ - 1 - i));
	memcpy(plain + SESSION_SEQ, body, len);
	n = frame_pack(kind, plain, SESSION_SEQ + len, &s->key, s->out, need);
	if (n == 0 || write_all(s->fd, s->out, n) == -1) {
		xasprintf(cause, "session write: %s", n == 0 ? "frame" :
		    errno == EAGAIN ? "timed out" : strerror(errno));
		return -1;
	}
	return 0;
}

/*
 * Read what the fd has: 1 if anything came, 0 if nothing was there
 * (EAGAIN, EINTR: errno says which), -1 at the end of the stream (*cause
 * NULL) or on an error.
 */
/* Send a protobuf message (NULL: an empty body) as one frame of kind. */
int
session_send_msg(struct session *s, uint16_t kind,
    const struct ProtobufCMessage *msg, char **cause)
{
	uint8_t	*buf;
	size_t	 len;
	int	 rc;

	len = msg == NULL ? 0 : protobuf_c_message_get_packed_size(msg);
	buf = xmalloc(len);
	if (msg != NULL)
		protobuf_c_message_pack(msg, buf);
	rc = session_send(s, kind, buf, len, cause);
	free(buf);
	return rc;
}

int
session_fill(struct session *s, char **cause)
{
	ssize_t	n;

	*cause = NULL;
	if (s->insize - s->inlen < 65536) {
		s->insize = s->insize == 0 ? 131072 : 2 * s->insize;
		if (s->insize > 2 * s->max + 131072)
			s->insize = 2 * s->max + 131072;
		s->in = xreallocarray(s->in, s->insize, 1);
	}
	n = read(s->fd, s->in + s->inlen, s->insize - s->inlen);
	if (n == -1) {
		if (errno == EINTR || errno == EAGAIN)
			return 0;
		xasprintf(cause, "session read: %s", strerror(errno));
		return -1;
	}
	if (n == 0) {
		if (s->inlen != 0)
			xasprintf(cause, "session ended inside a message");
		return -1;
	}
	s->inlen += n;
	return 1;
}

/*
 * The next whole message, if one has arrived: 1 with *body (valid until
 * the next call) and *len, 0 if more bytes are needed, -1 if the stream
 * holds something that is not the next message of this session.
 */
int
session_next(struct session *s, uint16_t *kind, const uint8_t **body,
    size_t *len, char **cause)
{
	const uint8_t		*b;
	enum frame_error	 fe;
	size_t			 n, blen, i;
	uint64_t		 seq = 0;

	if (s->consumed > 0) {
		memmove(s->in, s->in + s->consumed, s->inlen - s->consumed);
		s->inlen -= s->consumed;
		s->consumed = 0;
	}
	if ((n = frame_size(s->in, s->inlen)) == 0)
		return 0;
	if (n > s->max) {
		xasprintf(cause, "session message of %zu bytes is over the "
		    "limit", n);
		return -1;
	}
	if (s->inlen < n) {
		if (s->insize < n) {
			s->insize = n;
			s->in = xreallocarray(s->in, s->insize, 1);
		}
		return 0;
	}
	fe = frame_unpack(s->in, n, s->max, &s->key, kind, &b, &blen);
	if (fe != FRAME_OK || blen < SESSION_SEQ) {
		xasprintf(cause, "session message refused: %s",
		    fe != FRAME_OK ? frame_strerror(fe) : "truncated");
		return -1;
	}
	for (i = 0; i < SESSION_SEQ; i++)
		seq = seq << 8 | b[i];
	if (seq != s->rx_seq + 1) {
		xasprintf(cause, "session message %llu out of order (expected "
		    "%llu): replayed or lost", (unsigned long long)seq,
		    (unsigned long long)(s->rx_seq + 1));
		return -1;
	}
	s->rx_seq = seq;
	s->consumed = n;
	*body = b + SESSION_SEQ;
	*len = blen - SESSION_SEQ;
	return 1;
}

/* Wait for the next message (linear code: handshakes, image transfer). */
int
session_recv(struct session *s, uint16_t *kind, const uint8_t **body,
    size_t *len, char **cause)
{
	int	rc;

	while ((rc = session_next(s, kind, body, len, cause)) == 0) {
		switch (session_fill(s, cause)) {
		case -1:
			if (*cause == NULL)
				xasprintf(cause, "session closed by the peer");
			return -1;
		case 0:
			if (errno == EAGAIN) {	/* SO_RCVTIMEO ran out */
				xasprintf(cause, "session: the peer went "
				    "silent");
				return -1;
			}
			break;
		}
	}
	return rc == 1 ? 0 : -1;
}

/*
 * Images through a session. migrate/ writes and reads images on a file
 * descriptor; a session carries them as frames of kind `kind`, ended by
 * an empty frame of kind `end`. A pump thread moves the bytes between a
 * pipe and the session while the caller's function runs on the other end.
 */
struct session_pump {
	struct session	*s;
	int		 fd;
	uint16_t	 kind;
	uint16_t	 end;
	int		 rc;
	char		*cause;
};

static void *
session_pump_out(void *arg)
{
	struct session_pump	*p = arg;
	uint8_t			*buf = xmalloc(SESSION_CHUNK);
	ssize_t			 n;

	p->rc = 0;
	while ((n = read(p->fd, buf, SESSION_CHUNK)) != 0) {
		if (n == -1) {
			if (errno == EINTR)
				continue;
			xasprintf(&p->cause, "image pipe: %s", strerror(errno));
			p->rc = -1;
			break;
		}
		if (session_send(p->s, p->kind, buf, n, &p->cause) == -1) {
			p->rc = -1;
			break;
		}
	}
	if (p->rc == 0 && session_send(p->s, p->end, "", 0, &p->cause) == -1)
		p->rc = -1;
	free(buf);
	close(p->fd);
	return NULL;
}

static void *
session_pump_in(void *arg)
{
	struct session_pump	*p = arg;
	const uint8_t		*body;
	size_t			 len;
	uint16_t		 kind;

	p->rc = -1;
	for (;;) {
		if (session_recv(p->s, &kind, &body, &len, &p->cause) == -1)
			break;
		if (kind == p->end) {
			p->rc = 0;
			break;
		}
		if (kind != p->kind) {
			xasprintf(&p->cause, "message of kind %u inside an "
			    "image", kind);
			break;
		}
		/* EPIPE: the reader stopped; it says why. */
		if (write_all(p->fd, body, len) == -1)
			break;
	}
	close(p->fd);
	return NULL;
}

static int
session_pumped(struct session *s, int out, uint16_t kind, uint16_t end,
    int (*fn)(int, void *, char **), void *arg, char **cause)
{
	struct session_pump	 p = { .s = s, .kind = kind, .end = end };
	pthread_t		 th;
	int			 fds[2], rc;

	if (pipe2(fds, O_CLOEXEC) == -1) {
		xasprintf(cause, "pipe: %s", strerror(errno));
		return -1;
	}
	p.fd = out ? fds[0] : fds[1];
	if (pthread_create(&th, NULL, out ? session_pump_out :
	    session_pump_in, &p) != 0) {
		xasprintf(cause, "thread: %s", strerror(errno));
		close(fds[0]);
		close(fds[1]);
		return -1;
	}
	rc = fn(out ? fds[1] : fds[0], arg, cause);
	close(out ? fds[1] : fds[0]);
	pthread_join(th, NULL);
	if (p.rc == -1 && p.cause != NULL) {
		/* A broken session is the first cause of what failed. */
		if (rc == -1)
			free(*cause);
		*cause = p.cause;
		return -1;
	}
	free(p.cause);
	if (rc == 0 && p.rc == -1) {
		/* The reader had its image whole; the pump had more (EPIPE). */
		xasprintf(cause, "the session carries more than the image");
		return -1;
	}
	return rc == 0 && p.rc == 0 ? 0 : -1;
}

/* Send what fn writes on the fd it is given, then the end frame. */
int
session_send_image(struct session *s, uint16_t kind, uint16_t end,
    int (*fn)(int, void *, char **), void *arg, char **cause)
{
	return session_pumped(s, 1, kind, end, fn, arg, cause);
}

/* Give fn an fd to read the incoming image from, up to its end frame. */
int
session_recv_image(struct session *s, uint16_t kind, uint16_t end,
    int (*fn)(int, void *, char **), void *arg, char **cause)
{
	return session_pumped(s, 0, kind, end, fn, arg, cause);
}
