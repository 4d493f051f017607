/*
 * lib/frame.c: frame_unpack and frame_size on any datagram, as mosd's
 * gossip socket and the broker call them.
 *
 * Input: a mode byte, then the datagram. Mode bit 0 has the harness put
 * the right body length in the header, bit 1 the right MAC at the end,
 * so that the fuzzer also explores frames that get past those checks;
 * bits 2-3 choose the size limit (gossip's, the broker's, 64 KiB, none).
 *
 * A frame accepted must be exactly the frame frame_pack makes of its kind
 * and body.
 */
#include <arpa/inet.h>

#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "proto/frame.pb-c.h"

static const size_t	frame_limits[] = { 1400, 4096, 65536 + FRAME_OVERHEAD,
			    SIZE_MAX };

void
fuzz_init(void)
{
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_in		 in = { data, size };
	const struct cluster_key *key = fuzz_key();
	enum frame_error	 fe;
	const uint8_t		*p, *body;
	uint8_t			*buf, *again;
	uint32_t		 blen;
	uint16_t		 kind;
	size_t			 n, len, max;
	int			 mode;

	mode = fuzz_u8(&in);
	n = fuzz_take(&in, in.n, &p);
	max = frame_limits[(mode >> 2) & 3];
	/* A copy of its own size, so that ASan sees any read past it. */
	buf = xmalloc(n + 1);
	memcpy(buf, p, n);
	if ((mode & 1) && n >= FRAME_OVERHEAD) {
		blen = htonl(n - FRAME_OVERHEAD);
		memcpy(buf + 8, &blen, 4);
	}
	if ((mode & 2) && n >= FRAME_OVERHEAD)
		crypto_hmac(key->bytes, key->len, buf, n - FRAME_MAC,
		    buf + n - FRAME_MAC);

	if (n >= FRAME_HDR) {
		memcpy(&blen, buf + 8, 4);
		fuzz_assert(frame_size(buf, n) == FRAME_OVERHEAD +
		    (size_t)ntohl(blen));
	} else
		fuzz_assert(frame_size(buf, n) == 0);
	fe = frame_unpack(buf, n, max, key, &kind, &body, &len);
	fuzz_assert(fe >= FRAME_OK && fe < FRAME_NERRORS);
	fuzz_assert(frame_strerror(fe) != NULL);
	if (fe == FRAME_OK) {
		fuzz_assert(n <= max);
		fuzz_assert(body == buf + FRAME_HDR);
		fuzz_assert(len == n - FRAME_OVERHEAD);
		fuzz_assert(frame_size(buf, n) == n);
		again = xmalloc(n);
		fuzz_assert(frame_pack(kind, body, len, key, again, n) == n);
		fuzz_assert(memcmp(again, buf, n) == 0);
		fuzz_assert(frame_pack(kind, body, len, key, again, n - 1) ==
		    0);
		free(again);
	}
	free(buf);
	return 0;
}

void
fuzz_seeds(const char *dir)
{
	struct fuzz_out	 o = { 0 };
	uint8_t		 frame[256];
	const char	*body = "\010\001\020\002";	/* a small message */
	size_t		 n;

	n = frame_pack(OSM__FRAME_KIND__FRAME_GOSSIP, body, 4, fuzz_key(),
	    frame, sizeof frame);
	fuzz_put_u8(&o, 0);
	fuzz_put(&o, frame, n);
	fuzz_seed(dir, "gossip-kind", &o);
	n = frame_pack(OSM__FRAME_KIND__FRAME_MIG_OFFER, "", 0, fuzz_key(),
	    frame, sizeof frame);
	fuzz_put_u8(&o, 4);
	fuzz_put(&o, frame, n);
	fuzz_seed(dir, "empty-body", &o);
	fuzz_put_u8(&o, 3);
	fuzz_put(&o, "OSMG\0\1\0\1\0\0\0\0", 12);
	fuzz_put(&o, frame, 32);
	fuzz_seed(dir, "fixed-up", &o);
	fuzz_put_u8(&o, 0);
	fuzz_put(&o, "OSMG", 4);
	fuzz_seed(dir, "short", &o);
}
