/*
 * libremote/home.c: a forwarded call from a hostile guest, as the deputy
 * takes it: home_check, then home_layout into a scratch area, then after
 * the "call" home_readback and home_reply.
 *
 * Input: 8 bytes (network order) of the return value the call is to
 * have, then the packed RemoteCall. Whatever the call says, every pointer
 * the home process is given must point into its scratch area (or be NULL
 * or RMT_FAULT_ADDR), the image must fit the area, and the reply must
 * read only memory inside it.
 */
#include <sys/syscall.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fuzz.h"
#include "libremote/internal.h"
#include "proto/remote.pb-c.h"

#define BASE		0x7f1234560000ULL	/* the scratch area, in P */
#define SCRATCH_MAX	(1U << 20)		/* what the harness lays out */

static pid_t	self;

void
fuzz_init(void)
{
	self = getpid();
}

/*
 * The laid-out call points only into the area: every region lies inside
 * it, apart from the others, and every pointer P is given is a region's
 * address, NULL or RMT_FAULT_ADDR.
 */
static void
check_layout(const struct home_call *hc, uint64_t base)
{
	Osm__RemoteCall		*c = hc->call;
	Osm__RemoteReloc	*x;
	struct table_call	 tc;
	unsigned int		 ptrs, moved = 0;
	uint64_t		 v, off, end;
	size_t			 i, j;

	fuzz_assert(hc->image_len <= hc->span);
	for (i = 0; i < c->n_regions; i++) {
		off = hc->offsets[i];
		end = off + c->regions[i]->size;
		fuzz_assert(off % RMT_ALIGN == 0 && end <= hc->span);
		fuzz_assert(c->regions[i]->trim || end <= hc->image_len);
		for (j = 0; j < i && c->n_regions <= 256; j++)
			fuzz_assert(c->regions[j]->size == 0 ||
			    c->regions[i]->size == 0 ||
			    hc->offsets[j] >= end ||
			    hc->offsets[j] + c->regions[j]->size <= off);
	}
	for (i = 0; i < c->n_relocs; i++) {
		x = c->relocs[i];
		if (x->has_arg) {
			fuzz_assert(hc->args[x->arg] ==
			    base + hc->offsets[x->target]);
			moved |= 1U << x->arg;
			continue;
		}
		off = hc->offsets[x->region] + x->offset;
		fuzz_assert(off + 8 <= hc->image_len);
		memcpy(&v, hc->image + off, 8);
		fuzz_assert(v == base + hc->offsets[x->target]);
	}
	table_resolve(hc->nr, c->args, self, &tc);
	fuzz_assert(tc.class == RMT_FORWARD);
	ptrs = table_pointers(&tc);
	for (i = 0; i < 6; i++)
		if ((ptrs & ~moved) & (1U << i))
			fuzz_assert(hc->args[i] == 0 ||
			    hc->args[i] == RMT_FAULT_ADDR);
}

/* The reply carries only what the call may write back. */
static void
check_reply(const struct home_call *hc, const uint8_t *msg, size_t len,
    long ret)
{
	Osm__RemoteCall		*c = hc->call;
	Osm__RemoteReply	*r;
	Osm__RemoteOutput	*o;
	size_t			 i;

	r = osm__remote_reply__unpack(NULL, len, msg);
	fuzz_assert(r != NULL && r->seq == hc->seq && r->ret == ret);
	for (i = 0; i < r->n_outputs; i++) {
		o = r->outputs[i];
		fuzz_assert(o->region < c->n_regions);
		fuzz_assert(i == 0 || o->region > r->outputs[i - 1]->region);
		fuzz_assert(o->data.len <= c->regions[o->region]->size);
		fuzz_assert((int)c->regions[o->region]->dir != RMT_IN);
	}
	osm__remote_reply__free_unpacked(r, NULL);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_in		 in = { data, size };
	struct home_call	*hc;
	const uint8_t		*p;
	uint8_t			*mem, *msg;
	size_t			 len, need, mlen;
	char			*cause = NULL;
	long			 ret;

	ret = (long)fuzz_u64(&in);
	len = fuzz_take(&in, in.n, &p);
	if ((hc = home_check(p, len, self, &cause)) == NULL) {
		fuzz_assert(cause != NULL);
		log_debug("%s", cause);
		free(cause);
		return 0;
	}
	log_debug("%s (%d): %zu bytes of scratch", hc->name, hc->nr, hc->span);
	if (hc->span > SCRATCH_MAX) {
		fuzz_assert(home_layout(hc, BASE, SCRATCH_MAX, &cause) == -1);
		free(cause);
		home_free(hc);
		return 0;
	}
	if (hc->span > 0) {
		fuzz_assert(home_layout(hc, BASE, hc->span - 1, &cause) == -1);
		free(cause);
		cause = NULL;
	}
	fuzz_assert(home_layout(hc, BASE + 8, SCRATCH_MAX, &cause) == -1);
	free(cause);
	cause = NULL;
	if (home_layout(hc, BASE, hc->span, &cause) == -1)
		fatalx("layout refused: %s", cause);
	check_layout(hc, BASE);

	/* The call ran: the area is as the image left it, and more. */
	mem = xcalloc(1, hc->span + 1);
	memcpy(mem, hc->image, hc->image_len);
	need = home_readback(hc, ret);
	fuzz_assert(need <= hc->span);
	fuzz_assert(home_reply(hc, ret, mem, need - (need > 0), &msg, &mlen,
	    &cause) == (need > 0 ? -1 : 0));
	if (need > 0)
		free(cause);
	else
		free(msg);
	cause = NULL;
	if (home_reply(hc, ret, mem, need, &msg, &mlen, &cause) == -1)
		fatalx("reply refused: %s", cause);
	check_reply(hc, msg, mlen, ret);
	free(msg);
	free(mem);
	home_free(hc);
	return 0;
}

static void
put_call(struct fuzz_out *o, int64_t ret, Osm__RemoteCall *c)
{
	fuzz_put_u64(o, (uint64_t)ret);
	fuzz_put_packed(o, &c->base);
}

void
fuzz_seeds(const char *dir)
{
	struct fuzz_out		 o = { 0 };
	Osm__RemoteCall		 c = OSM__REMOTE_CALL__INIT;
	Osm__RemoteRegion	 r[3], *rp[3] = { &r[0], &r[1], &r[2] };
	Osm__RemoteReloc	 x[3], *xp[3] = { &x[0], &x[1], &x[2] };
	uint64_t		 args[6] = { 3, 0, 16 };
	uint8_t			 data[32] = "/etc/hostname";
	int			 i;

	for (i = 0; i < 3; i++) {
		osm__remote_region__init(&r[i]);
		osm__remote_reloc__init(&x[i]);
	}
	c.seq = 1;
	c.args = args;
	c.n_args = 6;
	c.regions = rp;
	c.relocs = xp;

	/* read(3, buf, 16): one trimmed out region */
	c.nr = SYS_read;
	r[0].dir = OSM__REMOTE_DIR__REMOTE_OUT;
	r[0].size = 16;
	r[0].has_trim = r[0].trim = 1;
	x[0].has_arg = 1;
	x[0].arg = 1;
	c.n_regions = c.n_relocs = 1;
	put_call(&o, 5, &c);
	fuzz_seed(dir, "read", &o);
	put_call(&o, -EBADF, &c);
	fuzz_seed(dir, "read-ebadf", &o);

	/* openat(AT_FDCWD, path, 0): an in string */
	c.nr = SYS_openat;
	args[0] = (uint64_t)-100;
	args[2] = 0;
	r[0].dir = OSM__REMOTE_DIR__REMOTE_IN;
	r[0].size = 14;
	r[0].has_trim = r[0].trim = 0;
	r[0].has_data = 1;
	r[0].data.data = data;
	r[0].data.len = 14;
	put_call(&o, 4, &c);
	fuzz_seed(dir, "openat", &o);

	/* readv(3, iov, 2): an iovec array pointing at two out regions */
	c.nr = SYS_readv;
	args[0] = 3;
	args[2] = 2;
	memset(data, 0, sizeof data);
	r[0].size = 32;
	r[0].data.len = 32;
	for (i = 1; i < 3; i++) {
		r[i].dir = OSM__REMOTE_DIR__REMOTE_OUT;
		r[i].size = 8 * i;
		r[i].has_trim = r[i].trim = 1;
		x[i].target = i;
		x[i].has_region = 1;
		x[i].region = 0;
		x[i].has_offset = 1;
		x[i].offset = 16 * (i - 1);
	}
	c.n_regions = c.n_relocs = 3;
	put_call(&o, 20, &c);
	fuzz_seed(dir, "readv", &o);

	/* fstat(3, buf): a whole out region */
	c.nr = SYS_fstat;
	r[0].dir = OSM__REMOTE_DIR__REMOTE_OUT;
	r[0].has_data = 0;
	r[0].size = 144;
	c.n_regions = c.n_relocs = 1;
	put_call(&o, 0, &c);
	fuzz_seed(dir, "fstat", &o);
}
