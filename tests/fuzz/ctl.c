/*
 * lib/ctl.c, the other side of the control socket: what a tool or an
 * agent reads from mosd. ctl_request reads a reply record and the
 * descriptor that may come with it (a deputy's session socket); an
 * agent's ctl_order_take reads an order from mosd on its own socket.
 *
 * Input: a mode byte, then the bytes the peer sends. Mode bit 0: an order
 * to ctl_order_take, through a real listening socket made by
 * ctl_order_listen; otherwise a reply to ctl_request, on a socketpair,
 * with a descriptor attached if bit 1 is set (to all of it, as mosd sends
 * it, or with bit 3 to its first byte alone), and nowhere to put it if
 * bit 2 is set (as ctl_call asks). Nothing may leak,
 * descriptors included, and what ctl_order_take answers must decode.
 */
#include <sys/socket.h>
#include <sys/un.h>

#include <arpa/inet.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fuzz.h"
#include "proto/ctl.pb-c.h"

static int	order_fd = -1;
static char	order_path[64];

void
fuzz_init(void)
{
	char	*cause = NULL;

	if ((order_fd = ctl_order_listen("fuzz", order_path,
	    sizeof order_path, &cause)) == -1)
		fatalx("%s", cause);
}

/* Send p with descriptor fd attached. */
static void
send_fd(int s, const uint8_t *p, size_t len, int fd)
{
	if (ctl_send_fd(s, p, len, fd) == -1)
		fatal("sendmsg");
}

static void
reply(const uint8_t *p, size_t len, int mode)
{
	Osm__CtlRequest	 req = OSM__CTL_REQUEST__INIT;
	Osm__CtlReply	*r;
	char		*cause = NULL;
	size_t		 n;
	int		 sv[2], rfd = -1, fd;

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == -1)
		fatal("socketpair");
	if ((mode & 2) && len > 0) {
		/* as mosd sends it, with the whole record; or a byte only */
		n = mode & 8 ? 1 : len;
		fd = fuzz_memfd("", 0);
		send_fd(sv[1], p, n, fd);
		close(fd);
		p += n;
		len -= n;
	}
	if (write_all(sv[1], p, len) == -1)
		fatal("write");
	shutdown(sv[1], SHUT_WR);

	req.type = OSM__CTL_TYPE__CTL_STATUS;
	r = ctl_request(sv[0], &req, (mode & 4) ? NULL : &rfd, &cause);
	if (r == NULL) {
		fuzz_assert(cause != NULL && rfd == -1);
		log_debug("%s", cause);
		free(cause);
	} else {
		log_debug("reply: ok %d, %zu nodes", r->ok, r->n_nodes);
		if (rfd != -1)
			close(rfd);
		ctl_reply_free(r);
	}
	close(sv[0]);
	close(sv[1]);
}

static void
order(const uint8_t *p, size_t len)
{
	Osm__CtlReply	 ok = OSM__CTL_REPLY__INIT, *answer;
	Osm__CtlRequest	*req;
	uint8_t		*buf;
	size_t		 n;
	char		*cause = NULL;
	int		 c, fd;

	if ((c = ctl_connect(order_path, 1, &cause)) == -1)
		fatalx("%s", cause);
	if (write_all(c, p, len) == -1)
		fatal("write");
	shutdown(c, SHUT_WR);
	if ((req = ctl_order_take(order_fd, 1, 0, &fd)) != NULL) {
		log_debug("order of type %d", req->type);
		ok.ok = 1;
		ctl_order_answer(fd, &ok);
		osm__ctl_request__free_unpacked(req, NULL);
	}
	/* Whatever came back is a whole reply. */
	if (stream_read(c, &buf, &n, CTL_RECORD_MAX, &cause) == 0) {
		fuzz_assert((answer = osm__ctl_reply__unpack(NULL, n,
		    buf)) != NULL);
		fuzz_assert(answer->ok == (req != NULL));
		osm__ctl_reply__free_unpacked(answer, NULL);
		free(buf);
	} else
		free(cause);
	close(c);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_in	 in = { data, size };
	const uint8_t	*p;
	size_t		 len;
	int		 mode, fd0 = fuzz_lowest_fd();

	mode = fuzz_u8(&in);
	/* No more than the socket takes before anyone reads. */
	len = fuzz_take(&in, 65536, &p);
	if (mode & 1)
		order(p, len);
	else
		reply(p, len, mode);
	fuzz_fd_check(fd0);
	return 0;
}

static void
put_record(struct fuzz_out *o, const ProtobufCMessage *m)
{
	struct fuzz_out	body = { 0 };
	uint32_t	n;

	fuzz_put_packed(&body, m);
	n = htonl(body.n);
	fuzz_put(o, &n, 4);
	fuzz_put(o, body.p, body.n);
	free(body.p);
}

void
fuzz_seeds(const char *dir)
{
	struct fuzz_out	 o = { 0 };
	Osm__CtlReply	 r = OSM__CTL_REPLY__INIT;
	Osm__CtlNode	 node = OSM__CTL_NODE__INIT, *nodes[] = { &node };
	Osm__CtlRequest	 req = OSM__CTL_REQUEST__INIT;

	r.ok = 1;
	r.has_self = 1;
	r.self = 1;
	node.node = 1;
	node.address = "127.0.0.1";
	node.up = node.known = 1;
	node.has_load = 1;
	node.load = 120;
	r.nodes = nodes;
	r.n_nodes = 1;
	fuzz_put_u8(&o, 0);
	put_record(&o, &r.base);
	fuzz_seed(dir, "status", &o);

	osm__ctl_reply__init(&r);
	r.ok = 1;
	r.has_session_key = 1;
	r.session_key.data = (uint8_t *)"0123456789abcdef0123456789abcdef";
	r.session_key.len = 32;
	fuzz_put_u8(&o, 2);
	put_record(&o, &r.base);
	fuzz_seed(dir, "session-fd", &o);
	fuzz_put_u8(&o, 6);
	put_record(&o, &r.base);
	fuzz_seed(dir, "stray-fd", &o);

	osm__ctl_reply__init(&r);
	r.error = "permission denied";
	fuzz_put_u8(&o, 0);
	put_record(&o, &r.base);
	fuzz_seed(dir, "error", &o);

	req.version = CTL_VERSION;
	req.type = OSM__CTL_TYPE__CTL_MIGRATE;
	req.has_pid = req.has_node = 1;
	req.pid = 4242;
	req.node = 2;
	fuzz_put_u8(&o, 1);
	put_record(&o, &req.base);
	fuzz_seed(dir, "order", &o);
	req.version = CTL_VERSION + 1;
	fuzz_put_u8(&o, 1);
	put_record(&o, &req.base);
	fuzz_seed(dir, "order-version", &o);
}
