/*
 * check_remote, continued: a batch of writes to a pipe (libremote/
 * pipes.c, RemoteCall.writes) checked at home and run as the writes R
 * made, each its own, a short one written on (home.c's home_pieces_*).
 */
#include <sys/syscall.h>

#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "libremote/internal.h"
#include "proto/remote.pb-c.h"
#include "check_remote.h"

/* write(1, buf, 10) behind, of writes 3, 5 and 2 */
struct batch {
	Osm__RemoteCall		 c;
	Osm__RemoteRegion	 r, *rp;
	Osm__RemoteReloc	 x, *xp;
	uint64_t		 args[6];
	uint32_t		 writes[3];
	uint8_t			 data[10];
};

static void
batch_init(struct batch *b)
{
	memset(b, 0, sizeof *b);
	osm__remote_call__init(&b->c);
	osm__remote_region__init(&b->r);
	osm__remote_reloc__init(&b->x);
	b->c.seq = 7;
	b->c.nr = SYS_write;
	b->c.has_behind = b->c.behind = 1;
	b->c.n_args = 6;
	b->c.args = b->args;
	b->args[0] = 1;
	b->args[2] = 10;
	b->r.dir = OSM__REMOTE_DIR__REMOTE_IN;
	b->r.size = 10;
	b->r.has_data = 1;
	b->r.data.data = b->data;
	b->r.data.len = 10;
	b->rp = &b->r;
	b->x.target = 0;
	b->x.has_arg = 1;
	b->x.arg = 1;
	b->xp = &b->x;
	b->c.n_regions = b->c.n_relocs = 1;
	b->c.regions = &b->rp;
	b->c.relocs = &b->xp;
	b->writes[0] = 3;
	b->writes[1] = 5;
	b->writes[2] = 2;
	b->c.n_writes = 3;
	b->c.writes = b->writes;
}

static struct home_call *
batch_check(struct batch *b, char **cause)
{
	return check_home_call(&b->c, 0, cause);
}

static void
batch_refused(struct batch *b, const char *want)
{
	char	*cause = NULL;

	ck_assert_ptr_null(batch_check(b, &cause));
	ck_assert_msg(strstr(cause, want) != NULL, "\"%s\", expected \"%s\"",
	    cause, want);
	free(cause);
}

START_TEST(test_batch_refused)
{
	struct batch	b;

	batch_init(&b);
	b.writes[1] = 4;
	batch_refused(&b, "a batch of writes of 9 bytes");
	batch_init(&b);
	b.writes[1] = 0;
	b.writes[2] = 7;
	batch_refused(&b, "write 1 of a batch is empty");
	batch_init(&b);
	b.c.behind = 0;
	batch_refused(&b, "not one write behind");
	batch_init(&b);
	b.c.nr = SYS_pwrite64;
	batch_refused(&b, "not one write behind");
}
END_TEST

START_TEST(test_batch_pieces)
{
	struct batch		 b;
	struct home_call	*hc;
	char			*cause = NULL;
	long			 rv;

	batch_init(&b);
	hc = batch_check(&b, &cause);
	ck_assert_msg(hc != NULL, "%s", cause);
	ck_assert_int_eq(home_layout(hc, 0x10000, 16, &cause), 0);
	home_pieces_start(hc);
	ck_assert_uint_eq(hc->args[1], 0x10000);
	ck_assert_uint_eq(hc->args[2], 3);
	rv = 3;					/* the first, whole */
	ck_assert_int_eq(home_pieces_next(hc, NULL, &rv), 1);
	ck_assert_uint_eq(hc->args[1], 0x10003);
	ck_assert_uint_eq(hc->args[2], 5);
	rv = 2;					/* the second, short */
	ck_assert_int_eq(home_pieces_next(hc, NULL, &rv), 1);
	ck_assert_uint_eq(hc->args[1], 0x10005);
	ck_assert_uint_eq(hc->args[2], 3);
	rv = 3;
	ck_assert_int_eq(home_pieces_next(hc, NULL, &rv), 1);
	ck_assert_uint_eq(hc->args[1], 0x10008);
	ck_assert_uint_eq(hc->args[2], 2);
	rv = 2;
	ck_assert_int_eq(home_pieces_next(hc, NULL, &rv), 0);
	ck_assert_int_eq(rv, 10);		/* all of them */
	home_free(hc);

	/* one that fails stops the batch: its error is the answer */
	hc = batch_check(&b, &cause);
	ck_assert_int_eq(home_layout(hc, 0x10000, 16, &cause), 0);
	home_pieces_start(hc);
	rv = 3;
	ck_assert_int_eq(home_pieces_next(hc, NULL, &rv), 1);
	rv = -EPIPE;
	ck_assert_int_eq(home_pieces_next(hc, NULL, &rv), 0);
	ck_assert_int_eq(rv, -EPIPE);
	rv = 5;					/* over: no more */
	ck_assert_int_eq(home_pieces_next(hc, NULL, &rv), 0);
	home_free(hc);

	/* a device that takes nothing: EIO, not a loop */
	hc = batch_check(&b, &cause);
	ck_assert_int_eq(home_layout(hc, 0x10000, 16, &cause), 0);
	home_pieces_start(hc);
	rv = 0;
	ck_assert_int_eq(home_pieces_next(hc, NULL, &rv), 0);
	ck_assert_int_eq(rv, -EIO);
	home_free(hc);

	/* no batch: nothing to do */
	b.c.n_writes = 0;
	hc = batch_check(&b, &cause);
	ck_assert_msg(hc != NULL, "%s", cause);
	rv = 10;
	ck_assert_int_eq(home_pieces_next(hc, NULL, &rv), 0);
	ck_assert_int_eq(rv, 10);
	home_free(hc);
}
END_TEST

void
check_remote_pipes(Suite *s)
{
	TCase	*tc = tcase_create("pipes");

	tcase_add_test(tc, test_batch_refused);
	tcase_add_test(tc, test_batch_pieces);
	suite_add_tcase(s, tc);
}
