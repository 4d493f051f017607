/*
 * Datagram framing between nodes. Layout (network byte order):
 *
 *	u32 magic | u16 version | u16 kind | u32 body length | body | mac[32]
 *
 * The MAC is HMAC-SHA256 (lib/crypto.c) under the cluster key over header
 * and body. Every field is checked before the body is handed on; the body
 * itself is still untrusted protobuf that the caller must unpack and
 * validate. Gossip and the broker's handshake use these frames; sessions
 * have their own, encrypted (lib/session.c).
 */
#include <arpa/inet.h>

#include <string.h>

#include "osm.h"

/* 32 bits in network order, at any alignment: frames' and sessions'. */
void
frame_put32(uint8_t *p, uint32_t v)
{
	v = htonl(v);
	memcpy(p, &v, 4);
}

uint32_t
frame_get32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return ntohl(v);
}

/* The header of frames and session messages: magic, version, kind, length. */
void
frame_header(uint8_t *out, uint16_t version, uint16_t kind, uint32_t len)
{
	uint16_t	v;

	frame_put32(out, FRAME_MAGIC);
	v = htons(version);
	memcpy(out + 4, &v, 2);
	v = htons(kind);
	memcpy(out + 6, &v, 2);
	frame_put32(out + 8, len);
}

/* Returns the frame's size, or 0 when it does not fit in out. */
size_t
frame_pack(uint16_t kind, const void *body, size_t len,
    const struct cluster_key *key, uint8_t *out, size_t outlen)
{
	size_t	total = FRAME_OVERHEAD + len;

	if (len > UINT32_MAX || total > outlen)
		return 0;
	frame_header(out, FRAME_VERSION, kind, len);
	memcpy(out + FRAME_HDR, body, len);
	crypto_hmac(key->bytes, key->len, out, FRAME_HDR + len,
	    out + FRAME_HDR + len);
	return total;
}

/*
 * The whole size of the frame that buf starts with, from its header; 0 if
 * fewer than FRAME_HDR bytes are there. For reading frames off a stream.
 */
size_t
frame_size(const uint8_t *buf, size_t n)
{
	if (n < FRAME_HDR)
		return 0;
	return FRAME_OVERHEAD + (size_t)frame_get32(buf + 8);
}

/* Check a frame of n bytes, of at most max, and find its body. */
enum frame_error
frame_unpack(const uint8_t *buf, size_t n, size_t max,
    const struct cluster_key *key, uint16_t *kind, const uint8_t **body,
    size_t *len)
{
	uint8_t		mac[FRAME_MAC];
	uint16_t	v;
	uint32_t	blen;

	if (n < FRAME_OVERHEAD)
		return FRAME_SHORT;
	if (n > max)
		return FRAME_LONG;
	if (frame_get32(buf) != FRAME_MAGIC)
		return FRAME_MAGIC_BAD;
	memcpy(&v, buf + 4, 2);
	if (ntohs(v) != FRAME_VERSION)
		return FRAME_VERSION_BAD;
	blen = frame_get32(buf + 8);
	if (blen != n - FRAME_OVERHEAD)
		return blen > n - FRAME_OVERHEAD ? FRAME_SHORT :
		    FRAME_LENGTH_BAD;
	crypto_hmac(key->bytes, key->len, buf, FRAME_HDR + blen, mac);
	if (timingsafe_memcmp(mac, buf + FRAME_HDR + blen, FRAME_MAC) != 0)
		return FRAME_MAC_BAD;
	memcpy(&v, buf + 6, 2);
	*kind = ntohs(v);
	*body = buf + FRAME_HDR;
	*len = blen;
	return FRAME_OK;
}

const char *
frame_strerror(enum frame_error e)
{
	switch (e) {
	case FRAME_OK:
		return "ok";
	case FRAME_SHORT:
		return "truncated";
	case FRAME_LONG:
		return "oversized";
	case FRAME_MAGIC_BAD:
		return "bad magic";
	case FRAME_VERSION_BAD:
		return "wrong version";
	case FRAME_LENGTH_BAD:
		return "bad length";
	case FRAME_MAC_BAD:
		return "bad MAC";
	case FRAME_NERRORS:
		break;
	}
	return "unknown";
}
