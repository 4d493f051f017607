/*
 * check_remote, continued: hostile calls to the home (home_check refuses
 * what a forwarded call may not be) and replies that do not match their
 * call (the guest refuses them).
 */
#include <sys/syscall.h>

#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "libremote/internal.h"
#include "proto/remote.pb-c.h"
#include "check_remote.h"

/* --- hostile calls to the home ----------------------------------------- */

/* A valid read(0, buf, 16): one out region, argument 1 pointing at it. */
struct call_parts {
	Osm__RemoteCall		 c;
	Osm__RemoteRegion	 r[3], *rp[3];
	Osm__RemoteReloc	 x[3], *xp[3];
	uint64_t		 args[6];
	uint8_t			 data[32];
};

static void
parts_init(struct call_parts *p)
{
	int	i;

	memset(p, 0, sizeof *p);
	osm__remote_call__init(&p->c);
	p->c.seq = 5;
	p->c.nr = SYS_read;
	p->c.n_args = 6;
	p->c.args = p->args;
	for (i = 0; i < 3; i++) {
		osm__remote_region__init(&p->r[i]);
		osm__remote_reloc__init(&p->x[i]);
		p->rp[i] = &p->r[i];
		p->xp[i] = &p->x[i];
	}
	p->args[1] = 0x7ffd0000;
	p->args[2] = 16;
	p->r[0].dir = OSM__REMOTE_DIR__REMOTE_OUT;
	p->r[0].size = 16;
	p->r[0].has_trim = p->r[0].trim = 1;
	p->x[0].target = 0;
	p->x[0].has_arg = 1;
	p->x[0].arg = 1;
	p->c.n_regions = p->c.n_relocs = 1;
	p->c.regions = p->rp;
	p->c.relocs = p->xp;
}

static void
refused(struct call_parts *p, const char *want)
{
	struct home_call	*hc;
	uint8_t			*buf;
	size_t			 len;
	char			*cause = NULL;

	len = osm__remote_call__get_packed_size(&p->c);
	buf = xmalloc(len);
	osm__remote_call__pack(&p->c, buf);
	hc = home_check(buf, len, 0, &cause);
	free(buf);
	ck_assert_msg(hc == NULL, "accepted; expected \"%s\"", want);
	ck_assert_msg(strstr(cause, want) != NULL, "\"%s\", expected \"%s\"",
	    cause, want);
	free(cause);
}

START_TEST(test_home_refuses)
{
	struct call_parts	 p;
	struct home_call	*hc;
	uint8_t			 junk[] = { 0x0a, 0xff, 0xff, 0x01 };
	uint8_t			*buf;
	size_t			 len;
	char			*cause = NULL;

	/* the base case is accepted */
	parts_init(&p);
	len = osm__remote_call__get_packed_size(&p.c);
	buf = xmalloc(len);
	osm__remote_call__pack(&p.c, buf);
	hc = home_check(buf, len, 0, &cause);
	ck_assert_msg(hc != NULL, "%s", cause);
	ck_assert_uint_eq(hc->span, 16);
	ck_assert_int_eq(home_layout(hc, 0x10000, 15, &cause), -1);
	ck_assert_ptr_nonnull(strstr(cause, "needs 16 bytes of scratch"));
	free(cause);
	ck_assert_int_eq(home_layout(hc, 0x10000, 16, &cause), 0);
	ck_assert_uint_eq(hc->args[1], 0x10000);
	ck_assert_uint_eq(hc->args[2], 16);
	ck_assert_uint_eq(hc->image_len, 0);	/* trimmed: not written */
	ck_assert_uint_eq(home_readback(hc, 5), 5);
	ck_assert_uint_eq(home_readback(hc, -EIO), 0);
	home_free(hc);
	free(buf);

	ck_assert_ptr_null(home_check(junk, sizeof junk, 0, &cause));
	ck_assert_str_eq(cause, "malformed call");
	free(cause);

	parts_init(&p);
	p.c.nr = 999;
	refused(&p, "not forwardable (home)");
	p.c.nr = SYS_fork;
	refused(&p, "not forwardable (home)");
	p.c.nr = SYS_ptrace;
	refused(&p, "not forwardable (home)");
	p.c.nr = SYS_futex;
	refused(&p, "not forwardable (local)");
	p.c.nr = SYS_clock_gettime;
	p.args[0] = CLOCK_PROCESS_CPUTIME_ID;
	refused(&p, "not forwardable (emulate)");
	p.c.nr = SYS_ioctl;
	p.args[1] = 0x4b33;
	refused(&p, "not forwardable (home)");

	parts_init(&p);
	p.c.n_args = 5;
	refused(&p, "5 arguments");

	parts_init(&p);
	p.r[0].size = RMT_CALL_MAX + 1;
	refused(&p, "over the limit");

	parts_init(&p);
	p.c.n_regions = 2;
	p.r[1].dir = OSM__REMOTE_DIR__REMOTE_IN;
	p.r[1].size = RMT_CALL_MAX - 8;
	p.r[1].has_data = 1;
	p.r[1].data.len = 0;
	p.r[0].size = 16;
	refused(&p, "over the limit");

	parts_init(&p);
	p.r[0].dir = OSM__REMOTE_DIR__REMOTE_IN;
	refused(&p, "data on an out region or none on an in region");
	p.r[0].has_data = 1;
	p.r[0].data.len = 3;
	p.r[0].data.data = p.data;
	refused(&p, "3 bytes of data for a size of 16");
	p.r[0].data.len = 16;
	refused(&p, "trimmed but not out");
	p.r[0].dir = 9;
	refused(&p, "bad direction 9");

	/* relocations */
	parts_init(&p);
	p.x[0].target = 1;
	refused(&p, "relocation 0: no region 1");
	parts_init(&p);
	p.x[0].arg = 0;
	refused(&p, "argument 0 is not a pointer");
	parts_init(&p);
	p.x[0].arg = 7;
	refused(&p, "argument 7 is not a pointer");
	parts_init(&p);
	p.x[0].has_region = 1;
	refused(&p, "neither or both");
	parts_init(&p);
	p.c.n_relocs = 2;
	p.x[1] = p.x[0];
	refused(&p, "pointed at twice");
	parts_init(&p);
	p.c.n_relocs = 0;
	refused(&p, "pointed at by nothing");

	/* a pointer into the remote process's memory */
	parts_init(&p);
	p.c.n_relocs = 0;
	p.c.n_regions = 0;
	refused(&p, "argument 1 is a pointer of the remote process");

	/* slots: in range, aligned, in an in region, once each */
	parts_init(&p);
	p.c.n_regions = 3;
	p.c.n_relocs = 3;
	p.r[1].dir = OSM__REMOTE_DIR__REMOTE_IN;
	p.r[1].size = 32;
	p.r[1].has_data = 1;
	p.r[1].data.len = 32;
	p.r[1].data.data = p.data;
	p.r[2].dir = OSM__REMOTE_DIR__REMOTE_OUT;
	p.r[2].size = 8;
	p.x[0].target = 1;		/* arg 1 -> region 1 */
	p.x[1].target = 0;		/* region 1 slot 0 -> region 0 */
	p.x[1].has_region = 1;
	p.x[1].region = 1;
	p.x[2].target = 2;		/* region 1 slot 8 -> region 2 */
	p.x[2].has_region = 1;
	p.x[2].region = 1;
	p.x[2].has_offset = 1;
	p.x[2].offset = 8;
	len = osm__remote_call__get_packed_size(&p.c);
	buf = xmalloc(len);
	osm__remote_call__pack(&p.c, buf);
	hc = home_check(buf, len, 0, &cause);
	ck_assert_msg(hc != NULL, "%s", cause);
	ck_assert_int_eq(home_layout(hc, 0x20000, 4096, &cause), 0);
	ck_assert_uint_eq(hc->args[1], 0x20000);	/* region 1, first */
	ck_assert_uint_eq(hc->image_len, 48);		/* 32 + 8 -> 16 */
	ck_assert_uint_eq(*(uint64_t *)hc->image, 0x20000 + 48);
	ck_assert_uint_eq(*(uint64_t *)(hc->image + 8), 0x20000 + 32);
	home_free(hc);
	free(buf);
	p.x[2].offset = 0;
	refused(&p, "slot 0 of region 1 relocated twice");
	p.x[2].offset = 4;
	refused(&p, "offset 4 is not a slot of region 1");
	p.x[2].offset = 32;
	refused(&p, "offset 32 is not a slot of region 1");
	p.x[2].offset = 8;
	p.x[2].region = 2;
	refused(&p, "not a slot of region 2");
	p.x[2].region = 3;
	refused(&p, "relocation 2: no region 3");
}
END_TEST

/* --- replies that do not match their call ------------------------------ */

static int
apply_reply(const struct rmt_call *c, Osm__RemoteReply *r, int64_t *ret,
    char **cause)
{
	return remote_apply(getpid(), c, r, ret, cause);
}

START_TEST(test_guest_refuses)
{
	struct table_call	 tc;
	struct rmt_call		 c;
	struct remote		*g;
	struct remote_event	 ev;
	Osm__RemoteReply	 r = OSM__REMOTE_REPLY__INIT;
	Osm__RemoteOutput	 o[2], *op[2] = { &o[0], &o[1] };
	const char		*why;
	char			*cause = NULL, buf[16];
	uint8_t			 data[32] = "0123456789", *msg;
	uint64_t		 args[6] = { 0, (uintptr_t)buf, 10 };
	int64_t			 ret;
	size_t			 len;

	table_resolve(SYS_read, args, 0, &tc);
	ck_assert_int_eq(marshal_call(getpid(), &tc, args, &c, &why, &cause),
	    MARSHAL_OK);
	ck_assert_int_eq(c.ret_max, 10);
	osm__remote_output__init(&o[0]);
	osm__remote_output__init(&o[1]);
	r.outputs = op;

	/* a good one, then variations */
	memset(buf, '#', sizeof buf);
	r.ret = 4;
	r.n_outputs = 1;
	o[0].data.len = 4;
	o[0].data.data = data;
	ck_assert_int_eq(apply_reply(&c, &r, &ret, &cause), 0);
	ck_assert_int_eq(ret, 4);
	ck_assert(memcmp(buf, "0123#", 5) == 0);

	r.ret = 11;
	o[0].data.len = 10;
	ck_assert_int_eq(apply_reply(&c, &r, &ret, &cause), -1);
	ck_assert_ptr_nonnull(strstr(cause, "return value 11 out of range"));
	free(cause);
	r.ret = -4096;
	ck_assert_int_eq(apply_reply(&c, &r, &ret, &cause), -1);
	free(cause);
	r.ret = 4;
	o[0].data.len = 5;
	ck_assert_int_eq(apply_reply(&c, &r, &ret, &cause), -1);
	ck_assert_ptr_nonnull(strstr(cause, "expected region 0 of 4"));
	free(cause);
	o[0].data.len = 4;
	o[0].region = 1;
	ck_assert_int_eq(apply_reply(&c, &r, &ret, &cause), -1);
	free(cause);
	o[0].region = 0;
	r.n_outputs = 2;
	o[1] = o[0];
	ck_assert_int_eq(apply_reply(&c, &r, &ret, &cause), -1);
	ck_assert_ptr_nonnull(strstr(cause, "2 outputs, expected 1"));
	free(cause);
	r.n_outputs = 0;
	ck_assert_int_eq(apply_reply(&c, &r, &ret, &cause), -1);
	ck_assert_ptr_nonnull(strstr(cause, "output for region 0 missing"));
	free(cause);
	/* an error carries no out region */
	r.ret = -EINTR;
	ck_assert_int_eq(apply_reply(&c, &r, &ret, &cause), 0);
	ck_assert_int_eq(ret, -EINTR);
	r.n_outputs = 1;
	ck_assert_int_eq(apply_reply(&c, &r, &ret, &cause), -1);
	free(cause);
	/* a wait interrupted at home restarts whole, or fails with EINTR */
	r.n_outputs = 0;
	r.ret = -516;
	ck_assert_int_eq(apply_reply(&c, &r, &ret, &cause), 0);
	ck_assert_int_eq(ret, -514);
	marshal_free(&c);

	/* remote_reply: framing and sequence */
	g = remote_new(-1, getpid(), 0, NULL, &cause);
	ck_assert_msg(g != NULL, "%s", cause);
	ck_assert_int_eq(remote_reply(g, data, 3, -1, &ev, &cause), -1);
	ck_assert_str_eq(cause, "malformed reply");
	free(cause);
	r.seq = 12;
	r.ret = 0;
	len = osm__remote_reply__get_packed_size(&r);
	msg = xmalloc(len);
	osm__remote_reply__pack(&r, msg);
	ck_assert_int_eq(remote_reply(g, msg, len, -1, &ev, &cause), -1);
	ck_assert_str_eq(cause, "reply to no pending call (seq 12)");
	free(cause);
	free(msg);
	remote_free(g);
}
END_TEST

void
check_remote_hostile(Suite *s)
{
	TCase	*tc = tcase_create("hostile");

	tcase_add_test(tc, test_home_refuses);
	tcase_add_test(tc, test_guest_refuses);
	suite_add_tcase(s, tc);
}
