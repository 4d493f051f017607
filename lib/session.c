/*
 * A session between two agents on different nodes (a deputy and a guest):
 * a byte stream of frames that only these two can read or make. Layout
 * (network byte order):
 *
 *	u32 magic | u16 version | u16 kind | u32 length | body | tag[16]
 *
 * The body is encrypted and the whole frame authenticated with AES-256-GCM
 * (lib/crypto.c), the header as associated data. Each direction has its
 * own key, derived with HKDF from the cluster key and both ends' nonces
 * (session_derive). The 96-bit IV is the sender's direction (4 bytes)
 * then the frame's sequence number (8 bytes, from 1), which is never sent:
 * each end counts. So a frame that is altered, replayed, dropped,
 * reordered, sent back to its sender or made under another key fails
 * authentication, and the session breaks instead of believing it.
 *
 * Reading is incremental for event loops (session_fill when the fd is
 * readable, then session_next until it says there is no more); writing
 * blocks, bounded by the socket's send timeout.
 */
#include <sys/uio.h>

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <protobuf-c/protobuf-c.h>

#include "osm.h"

/* The first part of the IV, by who sends. */
static const uint8_t	session_from_home[SESSION_DIR_LEN] = { 0, 0, 0, 1 };
static const uint8_t	session_from_remote[SESSION_DIR_LEN] = { 0, 0, 0, 2 };

static void
session_iv(const uint8_t *dir, uint64_t seq, uint8_t *iv)
{
	int	i;

	memcpy(iv, dir, SESSION_DIR_LEN);
	for (i = 0; i < 8; i++)
		iv[SESSION_DIR_LEN + i] = seq >> (8 * (7 - i));
}

/* key: what session_derive made for this end; max: the largest body. */
void
session_init(struct session *s, int fd, const uint8_t *key,
    size_t max)
{
	const uint8_t	*rx = key + CRYPTO_KEY_LEN + SESSION_DIR_LEN;

	memset(s, 0, sizeof *s);
	s->fd = fd;
	s->tx = crypto_aead_new(key, 1);
	memcpy(s->tx_dir, key + CRYPTO_KEY_LEN, SESSION_DIR_LEN);
	s->rx = crypto_aead_new(rx, 0);
	memcpy(s->rx_dir, rx + CRYPTO_KEY_LEN, SESSION_DIR_LEN);
	s->max = max + SESSION_OVERHEAD;
}

void
session_free(struct session *s)
{
	free(s->in);
	free(s->out);
	free(s->held);
	s->held = NULL;
	s->heldlen = s->nwait = 0;
	crypto_aead_free(s->tx);
	crypto_aead_free(s->rx);
	s->tx = s->rx = NULL;
	s->in = s->out = NULL;
	s->inlen = s->insize = s->outsize = 0;
}

/*
 * Both ends derive the keys of both directions from the cluster key and
 * what they exchanged in the clear: each side's random nonce and the two
 * node numbers. HKDF-SHA256 with both nonces as the salt and, as the
 * info, a label, the nodes and the direction. side says which end out is
 * for: its sending key first.
 */
void
session_derive(const struct cluster_key *ck, const uint8_t *nonce_home,
    const uint8_t *nonce_remote, uint32_t home, uint32_t remote,
    enum session_side side, uint8_t *out)
{
	static const char	 label[] = "osmosis session v2";
	uint8_t			 salt[2 * SESSION_NONCE_LEN];
	uint8_t			 info[sizeof label - 1 + 8 + 1];
	uint8_t			 from_home[CRYPTO_KEY_LEN + SESSION_DIR_LEN];
	uint8_t			 from_remote[sizeof from_home];
	uint8_t			*tx, *rx;

	memcpy(salt, nonce_home, SESSION_NONCE_LEN);
	memcpy(salt + SESSION_NONCE_LEN, nonce_remote, SESSION_NONCE_LEN);
	memcpy(info, label, sizeof label - 1);
	frame_put32(info + sizeof label - 1, home);
	frame_put32(info + sizeof label + 3, remote);
	info[sizeof info - 1] = 1;
	crypto_hkdf(salt, sizeof salt, ck->bytes, ck->len, info, sizeof info,
	    from_home, CRYPTO_KEY_LEN);
	memcpy(from_home + CRYPTO_KEY_LEN, session_from_home, SESSION_DIR_LEN);
	info[sizeof info - 1] = 2;
	crypto_hkdf(salt, sizeof salt, ck->bytes, ck->len, info, sizeof info,
	    from_remote, CRYPTO_KEY_LEN);
	memcpy(from_remote + CRYPTO_KEY_LEN, session_from_remote,
	    SESSION_DIR_LEN);
	tx = side == SESSION_HOME ? from_home : from_remote;
	rx = side == SESSION_HOME ? from_remote : from_home;
	memcpy(out, tx, sizeof from_home);
	memcpy(out + sizeof from_home, rx, sizeof from_home);
	explicit_bzero(from_home, sizeof from_home);
	explicit_bzero(from_remote, sizeof from_remote);
}

/* Room in s->out for a message of len bytes, if it may be sent. */
static int
session_room(struct session *s, size_t len, char **cause)
{
	if (len > s->max - SESSION_OVERHEAD) {
		xasprintf(cause, "session message of %zu bytes is over the "
		    "limit of %zu", len, s->max - SESSION_OVERHEAD);
		return -1;
	}
	if (s->tx_seq == UINT64_MAX) {	/* an IV must never come again */
		xasprintf(cause, "session has sent all it may under its key");
		return -1;
	}
	if (s->outsize < SESSION_OVERHEAD + len) {
		free(s->out);
		s->outsize = SESSION_OVERHEAD + len;
		s->out = xmalloc(s->outsize);
	}
	return 0;
}

static int
session_write(struct session *s, const uint8_t *buf, size_t len,
    char **cause)
{
	if (write_all(s->fd, buf, len) == -1) {
		xasprintf(cause, "session write: %s", errno == EAGAIN ?
		    "timed out" : strerror(errno));
		return -1;
	}
	return 0;
}

/*
 * Seal the pieces of iov as one frame of kind, and send it. A piece may
 * be s->out's own body (session_send_msg packs there): sealed in place.
 */
int
session_sendv(struct session *s, uint16_t kind, const struct iovec *iov,
    int n, char **cause)
{
	uint8_t	iv[CRYPTO_IV_LEN];
	size_t	len = 0, need;
	int	i;

	for (i = 0; i < n; i++)
		len += iov[i].iov_len;
	need = SESSION_OVERHEAD + len;
	if (session_room(s, len, cause) == -1)
		return -1;
	frame_header(s->out, SESSION_VERSION, kind, len);
	session_iv(s->tx_dir, ++s->tx_seq, iv);
	crypto_sealv(s->tx, iv, s->out, SESSION_HDR, iov, n,
	    s->out + SESSION_HDR, s->out + SESSION_HDR + len);
	/*
	 * No more than SESSION_HELD_WITH bytes wait: those held go first when
	 * this one would not fit, and a larger one goes at once after them,
	 * not copied.
	 */
	if (s->heldlen + need > SESSION_HELD_WITH &&
	    session_flush(s, cause) == -1)
		return -1;
	if (s->heldlen > 0 || (s->hold && need <= SESSION_HELD_WITH)) {
		if (s->held == NULL)
			s->held = xmalloc(SESSION_HELD_WITH);
		memcpy(s->held + s->heldlen, s->out, need);
		s->heldlen += need;
		s->nwait++;
		s->nheld += s->hold;
		return s->hold ? 0 : session_flush(s, cause);
	}
	return session_write(s, s->out, need, cause);
}

/*
 * While on, the frames sent wait, sealed, for the next frame sent without
 * it or for session_flush, and go with it in one write: calls no one
 * waits for (a close behind) do not each cost a write and the other
 * end's wakeup. At most SESSION_HELD_WITH bytes wait; a frame larger
 * than that does not: it goes at once, after those that did.
 */
void
session_hold(struct session *s, int on)
{
	s->hold = on;
}

/* How many frames wait (session_hold)? */
size_t
session_held(const struct session *s)
{
	return s->nwait;
}

/* The frames that wait go now. */
int
session_flush(struct session *s, char **cause)
{
	size_t	len = s->heldlen;

	if (len == 0)
		return 0;
	s->heldlen = 0;
	s->nwait = 0;
	return session_write(s, s->held, len, cause);
}

int
session_send(struct session *s, uint16_t kind, const void *body, size_t len,
    char **cause)
{
	struct iovec	iov = { (void *)body, len };

	return session_sendv(s, kind, &iov, 1, cause);
}

/*
 * Send a protobuf message (NULL: an empty body) as one frame of kind,
 * packed straight where it is sealed: no buffer of its own, no copy.
 */
int
session_send_msg(struct session *s, uint16_t kind,
    const struct ProtobufCMessage *msg, char **cause)
{
	struct iovec	iov;
	size_t		len;

	len = msg == NULL ? 0 : protobuf_c_message_get_packed_size(msg);
	if (session_room(s, len, cause) == -1)
		return -1;
	if (msg != NULL)
		protobuf_c_message_pack(msg, s->out + SESSION_HDR);
	iov.iov_base = s->out + SESSION_HDR;
	iov.iov_len = len;
	return session_sendv(s, kind, &iov, 1, cause);
}

/*
 * Read what the fd has: 1 if anything came, 0 if nothing was there
 * (EAGAIN, EINTR: errno says which), -1 at the end of the stream (*cause
 * NULL) or on an error.
 */
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

/* A frame's header, checked as soon as it is there: -1 and why if bad. */
static int
session_header(struct session *s, size_t *n, char **cause)
{
	unsigned	version = s->in[4] << 8 | s->in[5];

	if (frame_get32(s->in) != FRAME_MAGIC) {
		xasprintf(cause, "session message refused: bad magic");
		return -1;
	}
	if (version != SESSION_VERSION) {
		xasprintf(cause, "session message refused: version %u, where "
		    "this osmosis speaks %u", version, SESSION_VERSION);
		return -1;
	}
	*n = SESSION_OVERHEAD + (size_t)frame_get32(s->in + 8);
	if (*n > s->max) {
		xasprintf(cause, "session message of %zu bytes is over the "
		    "limit", *n);
		return -1;
	}
	return 0;
}

/*
 * The next whole message, if one has arrived: 1 with *body (valid until
 * the next call) and *len, 0 if more bytes are needed, -1 if the stream
 * holds something that is not the next message of this session. Once it
 * has said -1, it says so again.
 */
int
session_next(struct session *s, uint16_t *kind, const uint8_t **body,
    size_t *len, char **cause)
{
	uint8_t	*own;

	return session_take(s, 0, kind, &own, body, len, cause);
}

/*
 * session_next, but a message of kind take (0: none) is decrypted into a
 * buffer of its own, *own, which the caller frees (NULL for any other):
 * what the caller keeps of it needs no copy of its own, the decryption
 * being one already.
 */
int
session_take(struct session *s, uint16_t take, uint16_t *kind, uint8_t **own,
    const uint8_t **body, size_t *len, char **cause)
{
	uint8_t		iv[CRYPTO_IV_LEN], *out;
	uint64_t	seq = s->rx_seq + 1;
	size_t		n, blen;

	if (s->broken) {
		xasprintf(cause, "session broken by a refused message");
		return -1;
	}
	if (s->consumed > 0) {
		memmove(s->in, s->in + s->consumed, s->inlen - s->consumed);
		s->inlen -= s->consumed;
		s->consumed = 0;
	}
	if (s->inlen < SESSION_HDR)
		return 0;
	if (session_header(s, &n, cause) == -1) {
		s->broken = 1;
		return -1;
	}
	if (s->inlen < n) {
		if (s->insize < n) {
			s->insize = n;
			s->in = xreallocarray(s->in, s->insize, 1);
		}
		return 0;
	}
	blen = n - SESSION_OVERHEAD;
	session_iv(s->rx_dir, seq, iv);
	*kind = s->in[6] << 8 | s->in[7];
	/* Decrypted where it lies, or where it is taken: refused, never
	   handed out. */
	*own = NULL;
	out = s->in + SESSION_HDR;
	if (take != 0 && *kind == take)
		out = *own = xmalloc(blen > 0 ? blen : 1);
	if (seq == 0 || crypto_open(s->rx, iv, s->in, SESSION_HDR,
	    s->in + SESSION_HDR, blen, out, s->in + SESSION_HDR + blen) == -1) {
		free(*own);
		*own = NULL;
		xasprintf(cause, "session message %llu refused: it fails "
		    "authentication (altered, replayed, reordered or under "
		    "another key)", (unsigned long long)seq);
		s->broken = 1;
		return -1;
	}
	s->rx_seq = seq;
	s->consumed = n;
	*body = out;
	*len = blen;
	return 1;
}

/*
 * Does the buffer hold the next message whole (or a header session_next
 * refuses)? A linear receive reads past the message it wants; what it
 * leaves here a watcher on the fd cannot see.
 */
int
session_ready(const struct session *s)
{
	const uint8_t	*p = s->in + s->consumed;
	size_t		 left = s->inlen - s->consumed, n;

	if (s->broken || left < SESSION_HDR)
		return 0;
	if (frame_get32(p) != FRAME_MAGIC ||
	    (p[4] << 8 | p[5]) != SESSION_VERSION)
		return 1;
	n = SESSION_OVERHEAD + (size_t)frame_get32(p + 8);
	return n > s->max || left >= n;
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
	/*
	 * A frame's worth in the pipe: with the default 64 KiB the two
	 * threads take turns sixteen times per frame. Best effort: an
	 * unprivileged user may be held to less (fs.pipe-max-size).
	 */
	fcntl(fds[0], F_SETPIPE_SZ, SESSION_CHUNK);
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

/*
 * An image written straight into the session (migrate/'s mig_io): each
 * write of the image's is one frame (more if it is over the session's
 * limit), sealed from the writer's own buffers; no pipe, no pump thread.
 * 0, or -1 with *cause.
 */
int
session_image_write(void *arg, const struct iovec *iov, int n, char **cause)
{
	struct session_image	*si = arg;
	struct iovec		 part[16];
	size_t			 max = si->s->max - SESSION_OVERHEAD, room, off;
	int			 i = 0, k;

	off = 0;
	while (i < n) {
		room = max;
		for (k = 0; i < n && room > 0 && k < (int)nitems(part); k++) {
			part[k].iov_base = (uint8_t *)iov[i].iov_base + off;
			part[k].iov_len = iov[i].iov_len - off;
			if (part[k].iov_len > room) {
				part[k].iov_len = room;
				off += room;
			} else {
				off = 0;
				i++;
			}
			room -= part[k].iov_len;
		}
		if (session_sendv(si->s, si->kind, part, k, cause) == -1)
			return -1;
	}
	return 0;
}

/*
 * Exactly len bytes of the image coming on the session, taken from its
 * frames where they were opened: 0; 1 if its end frame came first; -1
 * with *cause. A frame of another kind goes to si->aside, if set, which
 * may use the session meanwhile (a guest's asks about files).
 */
int
session_image_read(void *arg, void *buf, size_t len, char **cause)
{
	struct session_image	*si = arg;
	uint8_t			*out = buf;
	uint16_t		 kind;
	size_t			 n;

	while (len > 0) {
		if (si->left == 0) {
			if (si->ended)
				return 1;
			if (session_recv(si->s, &kind, &si->p, &si->left,
			    cause) == -1)
				return -1;
			if (kind == si->end) {
				si->ended = 1;
				si->left = 0;
				return 1;
			}
			if (kind != si->kind && si->aside != NULL) {
				if (si->aside(si->aside_arg, kind, si->p,
				    si->left, cause) == -1)
					return -1;
				si->left = 0;
			} else if (kind != si->kind) {
				xasprintf(cause, "message of kind %u inside an "
				    "image", kind);
				return -1;
			}
			continue;
		}
		n = len < si->left ? len : si->left;
		memcpy(out, si->p, n);
		out += n;
		si->p += n;
		si->left -= n;
		len -= n;
	}
	return 0;
}

/*
 * The next len bytes of the image where the last frame was opened, if
 * they are all in it (as a pages record's data is: the writer sends each
 * of its writes as one frame), else NULL and session_image_read copies
 * them. Valid until the next read.
 */
const void *
session_image_view(void *arg, size_t len)
{
	struct session_image	*si = arg;
	const uint8_t		*p;

	if (si->left < len)
		return NULL;
	p = si->p;
	si->p += len;
	si->left -= len;
	return p;
}

/*
 * The image is over: the sender sends the end frame; the reader, its
 * image read whole, takes the end frame, which must come next.
 */
int
session_image_end(struct session_image *si, int sender, char **cause)
{
	uint8_t	c;

	if (sender)
		return session_send(si->s, si->end, "", 0, cause);
	switch (session_image_read(si, &c, 1, cause)) {
	case 1:
		return 0;
	case 0:
		xasprintf(cause, "the session carries more than the image");
		/* FALLTHROUGH */
	default:
		return -1;
	}
}
