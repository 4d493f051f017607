/*
 * libremote/guest.c: the home's reply to a forwarded call, as the guest
 * agent checks it and writes it into R (remote_apply, which remote_reply
 * calls for the pending call a reply names). This process plays R, as in
 * tests/unit/check_forward.c: a call of one of a set of shapes is
 * described from its own memory by marshal_call, and the reply is
 * written back into that memory with process_vm_writev.
 *
 * Input: a byte choosing the call, a mode byte, then in raw mode (mode
 * bit 0 clear) the packed RemoteReply. In honest mode, the call goes
 * through libremote/home.c as the deputy would run it, the "call"
 * returning the next 8 bytes (brought into the range the guest allows)
 * and leaving the rest of the input in its memory; the guest must then
 * take that reply.
 *
 * Whatever the reply, R's memory may change only inside the regions the
 * call writes, and never where R's own pointers are (a msghdr's), and
 * not at all when the reply is refused.
 */
#include <sys/ioctl.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>

#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fuzz.h"
#include "libremote/internal.h"
#include "proto/remote.pb-c.h"

#define ARENA		65536
#define SCRATCH		(1U << 20)

/* R's memory: what calls point at, with room around it. */
static uint8_t	 arena[ARENA] __attribute__((aligned(4096)));
static uint8_t	 pattern[ARENA], before[ARENA], expect[ARENA];
static uint8_t	*scratch;
static pid_t	 self;

#define AT(off)		((uint64_t)(uintptr_t)(arena + (off)))

/* Each shape sets its arguments and the memory they point at. */
struct shape {
	const char	*name;
	int		 nr;
	void		 (*setup)(uint64_t *);
};

static void
s_read(uint64_t *a)
{
	a[0] = 3;
	a[1] = AT(1024);
	a[2] = 64;
}

static void
s_readv(uint64_t *a)
{
	struct iovec	iov[3] = {
		{ arena + 2048, 8 }, { arena + 2100, 0 }, { arena + 2200, 32 }
	};

	memcpy(arena + 1024, iov, sizeof iov);
	a[0] = 3;
	a[1] = AT(1024);
	a[2] = 3;
}

static void
s_recvmsg(uint64_t *a)
{
	struct iovec	iov[2] = { { arena + 3000, 16 }, { arena + 3100, 40 } };
	struct msghdr	msg = {
		.msg_name = arena + 2048, .msg_namelen = 16,
		.msg_iov = (struct iovec *)(arena + 1200), .msg_iovlen = 2,
		.msg_control = arena + 4096, .msg_controllen = 64,
	};

	memcpy(arena + 1200, iov, sizeof iov);
	memcpy(arena + 1024, &msg, sizeof msg);
	a[0] = 3;
	a[1] = AT(1024);
	a[2] = 0;
}

static void
s_recvmmsg(uint64_t *a)
{
	struct mmsghdr	mm[2];
	struct iovec	iov[2] = { { arena + 3000, 24 }, { arena + 3100, 8 } };
	struct timespec	ts = { 1, 0 };

	memset(mm, 0, sizeof mm);
	mm[0].msg_hdr.msg_iov = (struct iovec *)(arena + 1400);
	mm[0].msg_hdr.msg_iovlen = 1;
	mm[0].msg_hdr.msg_name = arena + 2048;
	mm[0].msg_hdr.msg_namelen = 8;
	mm[1].msg_hdr.msg_iov = (struct iovec *)(arena + 1416);
	mm[1].msg_hdr.msg_iovlen = 1;
	memcpy(arena + 1400, iov, sizeof iov);
	memcpy(arena + 1024, mm, sizeof mm);
	memcpy(arena + 1600, &ts, sizeof ts);
	a[0] = 3;
	a[1] = AT(1024);
	a[2] = 2;
	a[3] = 0;
	a[4] = AT(1600);
}

static void
s_getsockopt(uint64_t *a)
{
	int	len = 12;

	memcpy(arena + 1024, &len, sizeof len);
	a[0] = 3;
	a[1] = SOL_SOCKET;
	a[2] = SO_RCVBUF;
	a[3] = AT(2048);
	a[4] = AT(1024);
}

static void
s_select(uint64_t *a)
{
	struct timeval	tv = { 0, 5000 };

	memset(arena + 1024, 0x0f, 16);
	memcpy(arena + 1100, &tv, sizeof tv);
	a[0] = 70;
	a[1] = AT(1024);
	a[2] = AT(1040);
	a[3] = 0;
	a[4] = AT(1100);
}

static void
s_poll(uint64_t *a)
{
	struct pollfd	p[3] = { { 0, POLLIN, 0 }, { 1, POLLOUT, 0 },
			    { 7, POLLIN, 0 } };

	memcpy(arena + 1024, p, sizeof p);
	a[0] = AT(1024);
	a[1] = 3;
	a[2] = 0;
}

static void
s_readlink(uint64_t *a)
{
	memcpy(arena + 1024, "/proc/self/exe", 15);
	a[0] = AT(1024);
	a[1] = AT(2048);
	a[2] = 100;
}

static void
s_getdents64(uint64_t *a)
{
	a[0] = 3;
	a[1] = AT(1024);
	a[2] = 300;
}

static void
s_statx(uint64_t *a)
{
	memcpy(arena + 1024, "/", 2);
	a[0] = (uint64_t)AT_FDCWD;
	a[1] = AT(1024);
	a[2] = 0;
	a[3] = 0x7ff;
	a[4] = AT(2048);
}

static void
s_accept4(uint64_t *a)
{
	int	len = 110;

	memcpy(arena + 1024, &len, sizeof len);
	a[0] = 3;
	a[1] = AT(2048);
	a[2] = AT(1024);
	a[3] = 0;
}

static void
s_capget(uint64_t *a)
{
	struct __user_cap_header_struct	h = { _LINUX_CAPABILITY_VERSION_3, 0 };

	memcpy(arena + 1024, &h, sizeof h);
	a[0] = AT(1024);
	a[1] = AT(2048);
}

static void
s_tcgets(uint64_t *a)
{
	a[0] = 0;
	a[1] = TCGETS;
	a[2] = AT(1024);
}

static void
s_pipe2(uint64_t *a)
{
	a[0] = AT(1024);
	a[1] = 0;
}

static void
s_fstat(uint64_t *a)
{
	a[0] = 3;
	a[1] = AT(1024);
}

/* a pointer R cannot read: the call faults at home */
static void
s_fault(uint64_t *a)
{
	a[0] = 3;
	a[1] = 16;
	a[2] = 4;
}

static const struct shape shapes[] = {
	{ "read", SYS_read, s_read },
	{ "readv", SYS_readv, s_readv },
	{ "recvmsg", SYS_recvmsg, s_recvmsg },
	{ "recvmmsg", SYS_recvmmsg, s_recvmmsg },
	{ "getsockopt", SYS_getsockopt, s_getsockopt },
	{ "select", SYS_select, s_select },
	{ "poll", SYS_poll, s_poll },
	{ "readlink", SYS_readlink, s_readlink },
	{ "getdents64", SYS_getdents64, s_getdents64 },
	{ "statx", SYS_statx, s_statx },
	{ "accept4", SYS_accept4, s_accept4 },
	{ "capget", SYS_capget, s_capget },
	{ "tcgets", SYS_ioctl, s_tcgets },
	{ "pipe2", SYS_pipe2, s_pipe2 },
	{ "fstat", SYS_fstat, s_fstat },
	{ "fault", SYS_read, s_fault },
};

/* Describe shape k, R being this process. */
static void
describe(size_t k, struct rmt_call *c)
{
	struct table_call	 tc;
	uint64_t		 args[6] = { 0 };
	const char		*why = NULL;
	char			*cause = NULL;

	memcpy(arena, pattern, ARENA);
	shapes[k].setup(args);
	memcpy(before, arena, ARENA);
	table_resolve(shapes[k].nr, args, self, &tc);
	if (tc.class != RMT_FORWARD)
		fatalx("%s: not forwarded (%s)", shapes[k].name,
		    table_class_name(tc.class));
	if (marshal_call(self, &tc, args, c, &why, &cause) != MARSHAL_OK)
		fatalx("%s: %s", shapes[k].name, why != NULL ? why : cause);
	c->seq = 1;
}

void
fuzz_init(void)
{
	struct rmt_call	c;
	size_t		k;

	self = getpid();
	for (k = 0; k < ARENA; k++)
		pattern[k] = k * 7 + 3;
	if ((scratch = aligned_alloc(RMT_ALIGN, SCRATCH)) == NULL)
		fatal("scratch");
	for (k = 0; k < nitems(shapes); k++) {
		describe(k, &c);
		marshal_free(&c);
	}
}

/* The call as the deputy would run it: the reply it sends. */
static uint8_t *
honest(struct rmt_call *c, struct fuzz_in *in, size_t *len)
{
	struct home_call	*hc;
	uint8_t			*msg, *out = NULL;
	size_t			 mlen, i, span;
	uint64_t		 range;
	int64_t			 ret;
	char			*cause = NULL;

	/* a result the kernel could give: an errno, or up to ret_max */
	range = c->ret_max < 4096 ? (uint64_t)c->ret_max + 4096 : 8192;
	ret = (int64_t)fuzz_u64(in);
	if (ret < -4095 || ret > c->ret_max)
		ret = (int64_t)((uint64_t)ret % range) - 4095;
	marshal_pack(c, &msg, &mlen);
	if ((hc = home_check(msg, mlen, self, &cause)) == NULL)
		fatalx("home refused its own guest's call: %s", cause);
	if (home_layout(hc, (uintptr_t)scratch, SCRATCH, &cause) == -1)
		fatalx("%s", cause);
	memcpy(scratch, hc->image, hc->image_len);
	span = hc->span;
	for (i = 0; i < span && in->n > 0; i++)
		scratch[i] = in->p[i % in->n];
	if (home_reply(hc, ret, scratch, home_readback(hc, ret), &out, len,
	    &cause) == -1)
		fatalx("%s", cause);
	home_free(hc);
	free(msg);
	return out;
}

/*
 * R's memory changed only where the reply had the right to write: it is
 * what it was but for the outputs' bytes.
 */
static void
check_memory(const struct rmt_call *c, const Osm__RemoteReply *r, int ok)
{
	const struct rmt_region	*reg;
	const Osm__RemoteOutput	*o;
	uint64_t		 addr, v;
	size_t			 i, off;

	if (!ok) {
		fuzz_assert(memcmp(arena, before, ARENA) == 0);
		return;
	}
	memcpy(expect, before, ARENA);
	for (i = 0; i < r->n_outputs; i++) {
		o = r->outputs[i];
		reg = &c->regions[o->region];
		/* outside: R could not be read there, nor written */
		if (o->data.len == 0 || reg->addr < AT(0) ||
		    reg->addr >= AT(ARENA))
			continue;
		fuzz_assert(reg->addr + o->data.len <= AT(ARENA));
		off = reg->addr - AT(0);
		memcpy(expect + off, arena + off, o->data.len);
	}
	fuzz_assert(memcmp(arena, expect, ARENA) == 0);
	/* R's pointers in what the call wrote are R's still */
	for (i = 0; i < c->nkeeps; i++) {
		addr = c->regions[c->keeps[i].region].addr + c->keeps[i].off;
		fuzz_assert(addr >= AT(0) && addr + 8 <= AT(ARENA));
		memcpy(&v, (void *)(uintptr_t)addr, 8);
		fuzz_assert(v == c->keeps[i].value);
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_in		 in = { data, size };
	struct rmt_call		 c;
	Osm__RemoteReply	*r;
	const uint8_t		*p;
	uint8_t			*msg = NULL;
	size_t			 k, len;
	int64_t			 ret;
	char			*cause = NULL;
	int			 mode, rc;

	k = fuzz_u8(&in) % nitems(shapes);
	mode = fuzz_u8(&in);
	describe(k, &c);
	if (mode & 1)
		p = msg = honest(&c, &in, &len);
	else
		len = fuzz_take(&in, in.n, &p);
	if ((r = osm__remote_reply__unpack(NULL, len, p)) == NULL) {
		free(msg);
		marshal_free(&c);
		return 0;
	}
	rc = remote_apply(self, &c, r, &ret, &cause);
	log_debug("%s: %s", shapes[k].name, rc == 0 ? "applied" : cause);
	if (rc == -1) {
		fuzz_assert(cause != NULL && !(mode & 1));
		free(cause);
	} else
		fuzz_assert(ret >= -4095 && ret <= c.ret_max);
	check_memory(&c, r, rc == 0);
	osm__remote_reply__free_unpacked(r, NULL);
	free(msg);
	marshal_free(&c);
	return 0;
}

void
fuzz_seeds(const char *dir)
{
	struct fuzz_out	 o = { 0 };
	struct fuzz_in	 in;
	struct rmt_call	 c;
	uint8_t		*msg, fill[64];
	size_t		 k, len, i;
	char		 name[64];

	for (i = 0; i < sizeof fill; i++)
		fill[i] = 0x41 + i % 26;
	for (k = 0; k < nitems(shapes); k++) {
		/* honest: ret 8, then what the call left in memory */
		fuzz_put_u8(&o, k);
		fuzz_put_u8(&o, 1);
		fuzz_put_u64(&o, 8);
		fuzz_put(&o, fill, sizeof fill);
		snprintf(name, sizeof name, "%s-honest", shapes[k].name);
		fuzz_seed(dir, name, &o);

		/* the same reply, raw, for the fuzzer to bend */
		describe(k, &c);
		fuzz_put_u64(&o, 8);
		fuzz_put(&o, fill, sizeof fill);
		in.p = o.p;
		in.n = o.n;
		msg = honest(&c, &in, &len);
		free(o.p);
		memset(&o, 0, sizeof o);
		fuzz_put_u8(&o, k);
		fuzz_put_u8(&o, 0);
		fuzz_put(&o, msg, len);
		snprintf(name, sizeof name, "%s-raw", shapes[k].name);
		fuzz_seed(dir, name, &o);
		free(msg);
		marshal_free(&c);
	}
}
