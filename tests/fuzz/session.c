/*
 * lib/session.c: the stream between a deputy and its guest agent, read
 * as both read it (session_recv: session_fill, session_next), from a
 * file holding what the other end sent; each message then decoded as the
 * receiving side decodes its kind (agent/guest*.c, agent/deputy*.c):
 * forwarded calls by home_check, replies by remote_reply, the
 * Ses* messages by their unpackers and the checks made on them. In image
 * mode the stream carries an image first, through session_recv_image's
 * pump thread to a reader (tests/fuzz/image.c fuzzes images themselves)
 * which may stop early, as a restore does at the image's final seal or
 * when it finds the image bad.
 *
 * Input: a mode byte (bit 0: image mode; bit 1: the reader stops after
 * (mode >> 3) * 64 bytes, and fails if bit 2 is set), then records. A
 * record whose op has bit 0 set is a message body that the harness seals
 * as the guest agent would (session_send under the guest's keys) as the
 * next message, of kind op >> 1; op 0xfe (FUZZ_FLIP) flips the byte of
 * what is in the stream so far at the offset its first two bytes give
 * (modulo; a byte flipped once is not flipped again, which could undo
 * it); any other op's bytes go into the stream as they are. The
 * receiver has the home's keys. Every refusal has a cause, and outside
 * image mode no message taken covers a flipped byte.
 */
#include <arpa/inet.h>

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fuzz.h"
#include "libremote/remote.h"
#include "migrate/migrate.h"
#include "proto/migrate.pb-c.h"
#include "proto/remote.pb-c.h"
#include "proto/remote.pb-c.h"

#define FUZZ_FLIP	0xfe
#define FUZZ_FLIPS	8

/* The offsets of the bytes FUZZ_FLIP flipped in this input's stream. */
struct flips {
	size_t	off[FUZZ_FLIPS];
	int	n;
};

static uint8_t		 home_keys[SESSION_KEY_LEN];
static uint8_t		 guest_keys[SESSION_KEY_LEN];
static struct remote	*guest;

/* The message each kind carries, where it is a protobuf-c one. */
static const struct {
	int				 kind;
	const ProtobufCMessageDescriptor *desc;
} session_msgs[] = {
	{ OSM__SES_KIND__SES_SETUP, &osm__ses_setup__descriptor },
	{ OSM__SES_KIND__SES_ARRIVED, &osm__ses_arrived__descriptor },
	{ OSM__SES_KIND__SES_ERROR, &osm__ses_error__descriptor },
	{ OSM__SES_KIND__SES_CANCEL, &osm__ses_cancel__descriptor },
	{ OSM__SES_KIND__SES_SIGNAL, &osm__ses_signal__descriptor },
	{ OSM__SES_KIND__SES_STATS, &osm__ses_stats__descriptor },
	{ OSM__SES_KIND__SES_STOPPED, &osm__ses_signal__descriptor },
	{ OSM__SES_KIND__SES_EXIT, &osm__ses_exit__descriptor },
	{ OSM__SES_KIND__SES_LEAVE, &osm__ses_error__descriptor },
	{ OSM__SES_KIND__SES_CHECKPOINT, &osm__ses_error__descriptor },
	{ OSM__SES_KIND__SES_GO_HOME, &osm__ses_error__descriptor },
	{ OSM__SES_KIND__SES_WANT_HOME, &osm__ses_error__descriptor },
	{ OSM__SES_KIND__SES_LEAVE_ANSWER, &osm__ses_error__descriptor },
	{ OSM__SES_KIND__SES_COME_HOME, &osm__ses_replaced__descriptor },
	{ OSM__SES_KIND__SES_FILE_ASK, &osm__ses_file_ask__descriptor },
	{ OSM__SES_KIND__SES_FILE_ANSWER, &osm__ses_file_answer__descriptor },
	{ OSM__SES_KIND__SES_IDENTITY, &osm__ses_identity__descriptor },
	{ OSM__SES_KIND__SES_FD_ASK, &osm__remote_fd_ask__descriptor },
	{ OSM__SES_KIND__SES_READ, &osm__remote_read__descriptor },
};

void
fuzz_init(void)
{
	static const uint8_t	nh[SESSION_NONCE_LEN] = "home nonce 01234";
	static const uint8_t	nr[SESSION_NONCE_LEN] = "guest nonce 0123";
	char			*cause = NULL;

	session_derive(fuzz_key(), nh, nr, 1, 2, SESSION_HOME, home_keys);
	session_derive(fuzz_key(), nh, nr, 1, 2, SESSION_REMOTE, guest_keys);
	/* A guest agent with no call pending: every reply is refused. */
	if ((guest = remote_new(-1, getpid(), getpid(), NULL, &cause)) == NULL)
		fatalx("%s", cause);
}

static void
decode(uint16_t kind, const uint8_t *body, size_t len)
{
	ProtobufCMessage	*msg;
	struct home_call	*hc;
	struct remote_event	 ev;
	Osm__SesSignal		*sig;
	char			*cause = NULL;
	size_t			 i;

	if (kind == OSM__SES_KIND__SES_CALL) {
		if ((hc = home_check(body, len, getpid(), &cause)) == NULL)
			fuzz_assert(cause != NULL);
		home_free(hc);
	} else if (kind == OSM__SES_KIND__SES_REPLY) {
		/* no call behind: not one of those, or malformed */
		if (remote_reply_behind(guest, body, len, &cause) == -1)
			fuzz_assert(cause != NULL);
		free(cause);
		cause = NULL;
		fuzz_assert(remote_reply(guest, body, len, -1, &ev, &cause) ==
		    -1 && cause != NULL);
	} else if (kind == OSM__SES_KIND__SES_FD_INFO) {
		if (remote_fd_info(guest, body, len, &cause) == -1)
			fuzz_assert(cause != NULL);
	} else if (kind == OSM__SES_KIND__SES_READ_DATA) {
		/* no read waits: dropped, or refused (and the copy freed) */
		uint8_t	*own = xmalloc(len > 0 ? len : 1);

		memcpy(own, body, len);
		if (remote_read_data(guest, own, len, &ev, &cause) == -1)
			fuzz_assert(cause != NULL);
		else
			fuzz_assert(ev.kind == REMOTE_NONE);
	}
	free(cause);
	for (i = 0; i < nitems(session_msgs); i++) {
		if (session_msgs[i].kind != kind)
			continue;
		msg = protobuf_c_message_unpack(session_msgs[i].desc, NULL, len,
		    body);
		if (msg == NULL)
			return;
		if (session_msgs[i].desc == &osm__ses_signal__descriptor) {
			sig = (Osm__SesSignal *)msg;
			log_debug("signal %d%s", sig->signo, sig->signo < 1 ||
			    sig->signo >= NSIG ? " refused" : "");
		}
		protobuf_c_message_free_unpacked(msg, NULL);
	}
}

/*
 * The image's reader: takes up to limit bytes, then stops, as a restore
 * stops at the image's final seal (0) or when it finds the image bad (-1).
 */
struct reader {
	size_t	limit;
	int	fail;
};

static int
read_image(int fd, void *arg, char **cause)
{
	struct reader	*r = arg;
	uint8_t		 buf[512];
	size_t		 left = r->limit;
	ssize_t		 n;

	while (left > 0) {
		n = read(fd, buf, sizeof buf < left ? sizeof buf : left);
		if (n == -1 && errno == EINTR)
			continue;
		if (n <= 0)
			return 0;
		left -= n;
	}
	if (r->fail) {
		xasprintf(cause, "the reader stopped");
		return -1;
	}
	return 0;
}

/* Flip one byte of what the stream holds so far. */
static void
flip(int fd, const uint8_t *p, size_t len, struct flips *f)
{
	off_t	end = lseek(fd, 0, SEEK_CUR);
	uint8_t	c;
	size_t	off;
	int	i;

	if (len < 2 || end <= 0 || f->n == FUZZ_FLIPS)
		return;
	off = (p[0] << 8 | p[1]) % end;
	/* A second flip of a byte could put it back as it was. */
	for (i = 0; i < f->n; i++)
		if (f->off[i] == off)
			return;
	if (pread(fd, &c, 1, off) != 1)
		fatal("memfd");
	c ^= len > 2 && p[2] != 0 ? p[2] : 1;
	if (pwrite(fd, &c, 1, off) != 1)
		fatal("memfd");
	f->off[f->n++] = off;
}

/* The stream the input describes, in a file read from its start. */
static int
stream(struct fuzz_in *in, struct flips *f)
{
	struct session	 snd;
	const uint8_t	*p;
	uint8_t		 op;
	size_t		 len;
	char		*cause = NULL;
	int		 fd;

	fd = fuzz_memfd("", 0);
	session_init(&snd, fd, guest_keys, RMT_MSG_MAX);
	while (fuzz_record(in, &op, &p, &len)) {
		if (op == FUZZ_FLIP)
			flip(fd, p, len, f);
		else if (!(op & 1)) {
			if (write_all(fd, p, len) == -1)
				fatal("memfd");
		} else if (session_send(&snd, op >> 1, p, len, &cause) == -1)
			fatalx("%s", cause);
	}
	session_free(&snd);
	if (lseek(fd, 0, SEEK_SET) == -1)
		fatal("memfd");
	return fd;
}

/* The bytes of that stream, for seeds. */
static void
stream_bytes(struct fuzz_out *o, struct fuzz_out *wire)
{
	struct fuzz_in	 in = { o->p, o->n };
	struct flips	 f = { .n = 0 };
	uint8_t		 buf[4096];
	ssize_t		 n;
	int		 fd = stream(&in, &f);

	while ((n = read(fd, buf, sizeof buf)) > 0)
		fuzz_put(wire, buf, n);
	close(fd);
	free(o->p);
	memset(o, 0, sizeof *o);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_in	 in = { data, size };
	struct session	 s;
	const uint8_t	*body;
	uint16_t	 kind;
	struct reader	 r;
	struct flips	 f = { .n = 0 };
	size_t		 len, at = 0;
	char		*cause = NULL;
	int		 fd, mode, i, fd0 = fuzz_lowest_fd();

	mode = fuzz_u8(&in);
	fd = stream(&in, &f);
	session_init(&s, fd, home_keys, RMT_MSG_MAX);
	if (mode & 1) {
		r.limit = mode & 2 ? (size_t)(mode >> 3) * 64 : SIZE_MAX;
		r.fail = (mode & 4) != 0;
		if (session_recv_image(&s, OSM__SES_KIND__SES_IMAGE,
		    OSM__SES_KIND__SES_IMAGE_END, read_image, &r,
		    &cause) == -1) {
			fuzz_assert(cause != NULL);
			log_debug("image: %s", cause);
		}
		free(cause);
		cause = NULL;
	}
	while (session_recv(&s, &kind, &body, &len, &cause) == 0) {
		fuzz_assert(len <= RMT_MSG_MAX);
		/* The frame taken was at [at, at + consumed) of the stream. */
		for (i = 0; i < f.n && !(mode & 1); i++)
			fuzz_assert(f.off[i] < at || f.off[i] >= at + s.consumed);
		at += s.consumed;
		log_debug("message of kind %u, %zu bytes", kind, len);
		decode(kind, body, len);
	}
	fuzz_assert(cause != NULL);
	log_debug("%s", cause);
	free(cause);
	session_free(&s);
	close(fd);
	fuzz_fd_check(fd0);
	return 0;
}

void
fuzz_seeds(const char *dir)
{
	struct fuzz_out		 o = { 0 }, wire = { 0 };
	Osm__SesSetup		 setup = OSM__SES_SETUP__INIT;
	Osm__SesSignal		 sig = OSM__SES_SIGNAL__INIT;
	Osm__SesArrived		 arr = OSM__SES_ARRIVED__INIT;
	Osm__SesStats		 stats = OSM__SES_STATS__INIT;
	Osm__SesExit		 ex = OSM__SES_EXIT__INIT;
	Osm__SesCancel		 cancel = OSM__SES_CANCEL__INIT;
	Osm__SesError		 err = OSM__SES_ERROR__INIT;
	Osm__RemoteCall		 call = OSM__REMOTE_CALL__INIT;
	Osm__RemoteRegion	 r = OSM__REMOTE_REGION__INIT, *rp = &r;
	Osm__RemoteReloc	 x = OSM__REMOTE_RELOC__INIT, *xp = &x;
	Osm__RemoteReply	 reply = OSM__REMOTE_REPLY__INIT;
	Osm__RemoteOutput	 out = OSM__REMOTE_OUTPUT__INIT, *outp = &out;
	uint64_t		 args[6] = { 3, 0, 16 };
	uint16_t		 flip_at;
	uint8_t			*big;
	const uint32_t		 pre[2] = { htonl(MIG_MAGIC),
				    htonl(MIG_VERSION) };

#define K(k)	(OSM__SES_KIND__SES_ ## k << 1 | 1)
	/* from home: setup, a signal, a reply, called home */
	setup.pid = 4242;
	setup.cpu_user_ns = 1000000;
	setup.command = "sleep 100";
	sig.signo = SIGINT;
	sig.has_seq = 1;
	sig.seq = 1;
	reply.seq = 1;
	reply.ret = 4;
	out.data.data = (uint8_t *)"abcd";
	out.data.len = 4;
	reply.outputs = &outp;
	reply.n_outputs = 1;
	fuzz_put_u8(&o, 0);
	fuzz_put_msg(&o, K(SETUP), &setup.base);
	fuzz_put_msg(&o, K(SIGNAL), &sig.base);
	fuzz_put_msg(&o, K(REPLY), &reply.base);
	fuzz_put_record(&o, K(COME_HOME), "", 0);
	fuzz_seed(dir, "from-home", &o);

	/* from the guest: arrived, a call, stats, a cancel, the end */
	arr.pid = 999;
	call.seq = 1;
	call.nr = 0;		/* read(3, buf, 16) */
	call.args = args;
	call.n_args = 6;
	r.dir = OSM__REMOTE_DIR__REMOTE_OUT;
	r.size = 16;
	r.has_trim = r.trim = 1;
	call.regions = &rp;
	call.n_regions = 1;
	x.has_arg = 1;
	x.arg = 1;
	call.relocs = &xp;
	call.n_relocs = 1;
	stats.cpu_user_ns = 5000000;
	stats.rss_bytes = 1 << 20;
	cancel.seq = 1;
	ex.status = 0;
	ex.cpu_user_ns = 6000000;
	err.reason = "expelled";
	fuzz_put_u8(&o, 0);
	fuzz_put_msg(&o, K(ARRIVED), &arr.base);
	fuzz_put_msg(&o, K(CALL), &call.base);
	fuzz_put_msg(&o, K(STATS), &stats.base);
	fuzz_put_msg(&o, K(CANCEL), &cancel.base);
	fuzz_put_msg(&o, K(LEAVE), &err.base);
	fuzz_put_msg(&o, K(EXIT), &ex.base);
	fuzz_seed(dir, "from-guest", &o);

	/* an image in two pieces, then the end of it */
	fuzz_put_u8(&o, 1);
	fuzz_put_record(&o, K(IMAGE), pre, 4);
	fuzz_put_record(&o, K(IMAGE), (const uint8_t *)pre + 4, 4);
	fuzz_put_record(&o, K(IMAGE_END), "", 0);
	fuzz_put_msg(&o, K(ARRIVED), &arr.base);
	fuzz_seed(dir, "image", &o);

	/* the reader has all it wants after 64 bytes; more comes */
	big = xcalloc(1, 2048);
	fuzz_put_u8(&o, 1 | 2 | 1 << 3);
	fuzz_put_record(&o, K(IMAGE), big, 64);
	fuzz_put_record(&o, K(IMAGE), big, 2048);
	fuzz_put_record(&o, K(IMAGE_END), "", 0);
	fuzz_seed(dir, "image-longer", &o);
	free(big);

	/* a replay: the first message as it is on the wire, twice */
	fuzz_put_msg(&o, K(SETUP), &setup.base);
	stream_bytes(&o, &wire);
	fuzz_put_u8(&o, 0);
	fuzz_put_record(&o, 0, wire.p, wire.n);
	fuzz_put_record(&o, 0, wire.p, wire.n);
	fuzz_seed(dir, "replay", &o);

	/*
	 * One byte flipped by the harness: of the second message's body, of
	 * the first's tag; the first message sent again, with one ciphertext
	 * byte flipped; a frame of version 1.
	 */
	fuzz_put_u8(&o, 0);
	fuzz_put_msg(&o, K(SETUP), &setup.base);
	fuzz_put_msg(&o, K(SIGNAL), &sig.base);
	flip_at = htons(wire.n + SESSION_HDR + 1);
	fuzz_put_record(&o, FUZZ_FLIP, &flip_at, 2);
	fuzz_put_msg(&o, K(SIGNAL), &sig.base);
	fuzz_seed(dir, "flipped-body", &o);
	fuzz_put_u8(&o, 0);
	fuzz_put_msg(&o, K(SETUP), &setup.base);
	flip_at = htons(wire.n - 1);
	fuzz_put_record(&o, FUZZ_FLIP, &flip_at, 2);
	fuzz_put_msg(&o, K(ARRIVED), &arr.base);
	fuzz_seed(dir, "flipped-tag", &o);
	wire.p[SESSION_HDR] ^= 1;
	fuzz_put_u8(&o, 0);
	fuzz_put_record(&o, 0, wire.p, wire.n);
	fuzz_seed(dir, "tampered", &o);
	wire.p[SESSION_HDR] ^= 1;
	wire.p[5] = 1;
	fuzz_put_u8(&o, 0);
	fuzz_put_record(&o, 0, wire.p, wire.n);
	fuzz_seed(dir, "version-1", &o);
	free(wire.p);
#undef K
}
