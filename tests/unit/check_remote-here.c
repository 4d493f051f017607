/*
 * check_remote, continued: opens made where R runs (docs/REMOTE.md, "Opens
 * made here"): P's descriptor table as the guest follows it (libremote/
 * ptable.c), and the home's open of such a file at its number (home.c's
 * home_check and home_pieces_next, RemoteCall.open_at), which waits for
 * a close that makes it moot (fiofd.c's fio_push_later).
 */
#include <sys/ioctl.h>
#include <sys/syscall.h>

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>

#include "libremote/internal.h"
#include "proto/remote.pb-c.h"
#include "check_remote.h"

START_TEST(test_ptable)
{
	struct ptable	t;
	uint64_t	words[PTABLE_WORDS] = { 0x7, 0, 0, 0 };	/* 0 1 2 */
	uint64_t	args[6] = { 0 };

	memset(&t, 0, sizeof t);
	ck_assert_int_eq(ptable_lowest(&t), -1);	/* not said yet */
	ptable_set(&t, words, 2, 022);			/* not all of it */
	ck_assert_int_eq(ptable_lowest(&t), -1);
	ptable_set(&t, words, PTABLE_WORDS, 022);
	ck_assert_int_eq(ptable_lowest(&t), 3);
	ck_assert_uint_eq(t.umask, 022);
	ptable_take(&t, 3);				/* opened here */
	ck_assert_int_eq(ptable_lowest(&t), 4);
	ptable_free(&t, 3);				/* and moot */
	ck_assert_int_eq(ptable_lowest(&t), 3);
	ptable_take(&t, 3);

	/* an open that went home takes what its reply says */
	ptable_sent(&t, SYS_openat, args);
	ck_assert_int_eq(ptable_lowest(&t), 4);
	ptable_got(&t, SYS_openat, args, 4);
	ck_assert_int_eq(ptable_lowest(&t), 5);
	ptable_got(&t, SYS_openat, args, -ENOENT);	/* none */
	ck_assert_int_eq(ptable_lowest(&t), 5);

	/* a close frees its number when it is sent, behind or not */
	args[0] = 1;
	ptable_sent(&t, SYS_close, args);
	ck_assert_int_eq(ptable_lowest(&t), 1);
	args[0] = 2;
	args[1] = 9;
	ptable_got(&t, SYS_dup2, args, 9);		/* dup2(2, 9) */
	ptable_got(&t, SYS_dup, args, 1);
	ck_assert_int_eq(ptable_lowest(&t), 5);

	/* calls that leave the table as it was */
	args[1] = F_SETLK;
	ptable_sent(&t, SYS_fcntl, args);
	ptable_sent(&t, SYS_pwrite64, args);
	ptable_sent(&t, SYS_unlink, args);
	ptable_sent(&t, SYS_fdatasync, args);
	args[1] = TCGETS;				/* isatty() */
	ptable_sent(&t, SYS_ioctl, args);
	ck_assert_int_eq(ptable_lowest(&t), 5);
	args[1] = F_DUPFD;				/* one that gives */
	ptable_sent(&t, SYS_fcntl, args);
	ptable_got(&t, SYS_fcntl, args, 5);
	ck_assert_int_eq(ptable_lowest(&t), 6);

	/* past the first word */
	words[0] = ~0ULL;
	words[1] = 0x3;
	ptable_set(&t, words, PTABLE_WORDS, 0);
	ck_assert_int_eq(ptable_lowest(&t), 66);
	memset(words, 0xff, sizeof words);		/* all 256 taken */
	ptable_set(&t, words, PTABLE_WORDS, 0);
	ck_assert_int_eq(ptable_lowest(&t), -1);

	/* what the guest cannot follow makes it unknown */
	words[0] = 0x7;
	words[1] = words[2] = words[3] = 0;
	ptable_set(&t, words, PTABLE_WORDS, 0);
	ptable_sent(&t, SYS_socket, args);
	ck_assert_int_eq(ptable_lowest(&t), -1);
	ptable_set(&t, words, PTABLE_WORDS, 0);
	ptable_sent(&t, SYS_recvmsg, args);		/* SCM_RIGHTS */
	ck_assert_int_eq(ptable_lowest(&t), -1);
	ptable_set(&t, words, PTABLE_WORDS, 0);
	ptable_sent(&t, SYS_umask, args);
	ck_assert_int_eq(ptable_lowest(&t), -1);
	ptable_set(&t, words, PTABLE_WORDS, 0);
	ptable_sent(&t, SYS_close_range, args);
	ck_assert_int_eq(ptable_lowest(&t), -1);
	ptable_set(&t, words, PTABLE_WORDS, 0);
	args[1] = 0xc018ae85;				/* a driver's */
	ptable_sent(&t, SYS_ioctl, args);
	ck_assert_int_eq(ptable_lowest(&t), -1);
}
END_TEST

/* openat(AT_FDCWD, "/s/f", flags) behind, to be held at number at */
struct openat {
	Osm__RemoteCall		 c;
	Osm__RemoteRegion	 r, *rp;
	Osm__RemoteReloc	 x, *xp;
	uint64_t		 args[6];
	uint8_t			 path[5];
};

static void
openat_init(struct openat *o, int flags, int at)
{
	memset(o, 0, sizeof *o);
	osm__remote_call__init(&o->c);
	osm__remote_region__init(&o->r);
	osm__remote_reloc__init(&o->x);
	memcpy(o->path, "/s/f", 5);
	o->c.seq = 9;
	o->c.nr = SYS_openat;
	o->c.has_behind = o->c.behind = 1;
	o->c.has_open_at = o->c.has_open_ino = 1;
	o->c.open_at = at;
	o->c.open_ino = 77;
	o->c.n_args = 6;
	o->c.args = o->args;
	o->args[0] = (uint64_t)AT_FDCWD;
	o->args[2] = (uint64_t)flags;
	o->r.dir = OSM__REMOTE_DIR__REMOTE_IN;
	o->r.size = 5;
	o->r.has_data = 1;
	o->r.data.data = o->path;
	o->r.data.len = 5;
	o->rp = &o->r;
	o->x.target = 0;
	o->x.has_arg = 1;
	o->x.arg = 1;
	o->xp = &o->x;
	o->c.n_regions = o->c.n_relocs = 1;
	o->c.regions = &o->rp;
	o->c.relocs = &o->xp;
}

static struct home_call *
openat_check(struct openat *o, char **cause)
{
	return check_home_call(&o->c, 1234, cause);
}

static void
openat_refused(struct openat *o)
{
	char	*cause = NULL;

	ck_assert_ptr_null(openat_check(o, &cause));
	ck_assert_msg(strstr(cause, "not one to make here") != NULL, "%s",
	    cause);
	free(cause);
}

/* A message of n bytes, each b, for fio's queues. */
static uint8_t *
here_msg(uint8_t b, size_t n)
{
	uint8_t	*m = malloc(n);

	ck_assert_ptr_nonnull(m);
	memset(m, b, n);
	return m;
}

/* The next message fio has for home (post) is the n bytes b. */
static void
here_next(struct fio *f, int post, uint8_t b, size_t n)
{
	uint8_t	*msg;
	size_t	 len;
	int	 kind;

	ck_assert(fio_out(f, post, &kind, &msg, &len));
	ck_assert_int_eq(kind, REMOTE_OUT_CALL);
	ck_assert_uint_eq(len, n);
	ck_assert_uint_eq(msg[0], b);
	free(msg);
}

/*
 * The home's opens of files opened here wait (fio_push_later): a close
 * before anything else goes home makes the open moot, its reply not
 * awaited; anything pushed, a message of the agent's own (fio_out before
 * it), the flush and a settle send them first, in order.
 */
START_TEST(test_open_later)
{
	struct fio	f;
	uint64_t	seq;
	uint8_t		*msg;
	size_t		 len;
	int		 kind;

	memset(&f, 0, sizeof f);
	fio_push_later(&f, 5, 11, here_msg('a', 3), 3);
	ck_assert_uint_eq(f.nbehind, 1);	/* its reply to come */
	ck_assert(fio_batched(&f));		/* the agent's timer */
	ck_assert(!fio_out(&f, 1, &kind, &msg, &len));	/* not after */
	ck_assert(!fio_later_cancel(&f, 6, &seq));	/* not that one */
	ck_assert(fio_later_cancel(&f, 5, &seq));
	ck_assert_uint_eq(seq, 11);
	ck_assert_uint_eq(f.nbehind, 0);	/* no reply to come */
	ck_assert_uint_eq(f.stats_behind, 0);
	ck_assert(!fio_batched(&f));
	ck_assert(!fio_out(&f, 0, &kind, &msg, &len));

	/* pushed after them: they go first, and can no longer be moot */
	fio_push_later(&f, 5, 12, here_msg('b', 4), 4);
	fio_push_later(&f, 6, 13, here_msg('c', 5), 5);
	fio_push(&f, REMOTE_OUT_CALL, 0, here_msg('d', 6), 6);
	ck_assert(!fio_later_cancel(&f, 6, &seq));
	here_next(&f, 1, 'b', 4);
	here_next(&f, 1, 'c', 5);
	here_next(&f, 1, 'd', 6);
	ck_assert(!fio_out(&f, 1, &kind, &msg, &len));

	/* before a message of the agent's own (post 0) */
	fio_push_later(&f, 7, 14, here_msg('e', 7), 7);
	here_next(&f, 0, 'e', 7);
	ck_assert(!fio_later_cancel(&f, 7, &seq));

	/* the flush a moment later, and a settle before a move */
	fio_push_later(&f, 8, 15, here_msg('f', 8), 8);
	fio_flush(&f, &seq);
	here_next(&f, 1, 'f', 8);
	fio_push_later(&f, 9, 16, here_msg('g', 9), 9);
	fio_settle(&f, &seq);
	here_next(&f, 1, 'g', 9);
	ck_assert(!fio_batched(&f));

	/* one that waits when fio goes is freed with it */
	fio_push_later(&f, 10, 17, here_msg('h', 10), 10);
	fio_free(&f);
	ck_assert_uint_eq(f.nlater, 0);
}
END_TEST

START_TEST(test_open_at_refused)
{
	struct openat	o;

	openat_init(&o, O_RDWR | O_CREAT, 3);		/* it would create */
	openat_refused(&o);
	openat_init(&o, O_RDWR | O_TRUNC, 3);
	openat_refused(&o);
	openat_init(&o, O_PATH, 3);
	openat_refused(&o);
	openat_init(&o, O_RDWR, 3);
	o.c.behind = 0;					/* waited for */
	openat_refused(&o);
	openat_init(&o, O_RDWR, -1);
	openat_refused(&o);
	openat_init(&o, O_RDWR, 3);
	o.c.has_open_ino = 0;
	openat_refused(&o);
	openat_init(&o, O_RDWR, 3);
	o.c.has_want_fd = o.c.want_fd = 1;
	openat_refused(&o);
}
END_TEST

/* P as the fake holds says: descriptors below held_below and 5 (what its
   kernel gives in the cases of another number), of inode held_ino */
static long	held_below;
static uint64_t	held_ino = 77;

static int
fake_holds(pid_t pid, long fd, uint64_t *ino)
{
	int	held = fd < held_below || fd == 5;

	ck_assert_int_eq(pid, 1234);
	*ino = held ? held_ino : 0;
	return held;
}

static struct home_call *
openat_laid(struct openat *o, int flags, int at)
{
	struct home_call	*hc;
	char			*cause = NULL;

	openat_init(o, flags, at);
	hc = openat_check(o, &cause);
	ck_assert_msg(hc != NULL, "%s", cause);
	ck_assert_int_eq(home_layout(hc, 0x10000, 4096, &cause), 0);
	home_pieces_start(hc);
	return hc;
}

START_TEST(test_open_at_pieces)
{
	struct openat		 o;
	struct home_call	*hc;
	long			 rv;

	/* P's kernel gave the number, the file is the one: done */
	held_below = 4;
	held_ino = 77;
	hc = openat_laid(&o, O_RDWR | O_CLOEXEC, 3);
	rv = 3;
	ck_assert_int_eq(home_pieces_next(hc, fake_holds, &rv), 0);
	ck_assert_int_eq(rv, 3);
	home_free(hc);

	/* another file of that name: held, but said */
	held_ino = 78;
	hc = openat_laid(&o, O_RDWR, 3);
	rv = 3;
	ck_assert_int_eq(home_pieces_next(hc, fake_holds, &rv), 0);
	ck_assert_int_eq(rv, -ESTALE);
	home_free(hc);
	held_ino = 77;

	/* the file gone: /dev/null at its number, the error said */
	held_below = 3;
	hc = openat_laid(&o, O_RDWR | O_CLOEXEC, 3);
	rv = -ENOENT;
	ck_assert_int_eq(home_pieces_next(hc, fake_holds, &rv), 1);
	ck_assert_int_eq(hc->nr, SYS_openat);
	ck_assert_int_eq((int)hc->args[0], AT_FDCWD);
	ck_assert_uint_eq(hc->args[1], 0x10000 + hc->null_off);
	ck_assert_str_eq((char *)hc->image + hc->null_off, "/dev/null");
	ck_assert_uint_eq(hc->args[2], O_RDONLY | O_CLOEXEC);
	rv = 3;
	ck_assert_int_eq(home_pieces_next(hc, fake_holds, &rv), 0);
	ck_assert_int_eq(rv, -ENOENT);
	home_free(hc);

	/* P's kernel gave another: dup3 to the number, the other closed */
	held_below = 3;
	hc = openat_laid(&o, O_RDWR, 3);
	rv = 5;
	ck_assert_int_eq(home_pieces_next(hc, fake_holds, &rv), 1);
	ck_assert_int_eq(hc->nr, SYS_dup3);
	ck_assert_uint_eq(hc->args[0], 5);
	ck_assert_uint_eq(hc->args[1], 3);
	ck_assert_uint_eq(hc->args[2], 0);
	rv = 3;
	ck_assert_int_eq(home_pieces_next(hc, fake_holds, &rv), 1);
	ck_assert_int_eq(hc->nr, SYS_close);
	ck_assert_uint_eq(hc->args[0], 5);
	rv = 0;
	ck_assert_int_eq(home_pieces_next(hc, fake_holds, &rv), 0);
	ck_assert_int_eq(rv, 3);
	home_free(hc);

	/* the number P's for something else: the one given closed, EBADF */
	held_below = 4;
	hc = openat_laid(&o, O_RDWR, 3);
	rv = 5;
	ck_assert_int_eq(home_pieces_next(hc, fake_holds, &rv), 1);
	ck_assert_int_eq(hc->nr, SYS_close);
	ck_assert_uint_eq(hc->args[0], 5);
	rv = 0;
	ck_assert_int_eq(home_pieces_next(hc, fake_holds, &rv), 0);
	ck_assert_int_eq(rv, -EBADF);
	home_free(hc);

	/* gone, and the number P's: nothing more to do in P */
	hc = openat_laid(&o, O_RDWR, 3);
	rv = -ENOENT;
	ck_assert_int_eq(home_pieces_next(hc, fake_holds, &rv), 0);
	ck_assert_int_eq(rv, -EBADF);
	home_free(hc);
}
END_TEST

void
check_remote_here(Suite *s)
{
	TCase	*tc = tcase_create("here");

	tcase_add_test(tc, test_ptable);
	tcase_add_test(tc, test_open_later);
	tcase_add_test(tc, test_open_at_refused);
	tcase_add_test(tc, test_open_at_pieces);
	suite_add_tcase(s, tc);
}
