/*
 * check_remote's part for libremote/statc.c: stats of paths at home
 * answered again from the home's last answer, on this process's own
 * memory (R is us): which are kept, which answered, and what drops them.
 */
#include <sys/stat.h>
#include <sys/syscall.h>

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "libremote/internal.h"
#include "check_remote.h"

static struct stat	sc_buf;

/*
 * R's stat of path (newfstatat, AT_FDCWD; lstat if nofollow) through g:
 * answered (1, *rv), or 0 and *keep says what of its reply is kept.
 */
static int
sc_stat(struct remote *g, const char *path, int nofollow, long *rv,
    struct statc_keep *keep)
{
	uint64_t	args[6] = { (uint64_t)AT_FDCWD, (uint64_t)path,
	    (uint64_t)&sc_buf, nofollow ? AT_SYMLINK_NOFOLLOW : 0 };

	memset(&sc_buf, 0, sizeof sc_buf);
	return statc_answer(g, getpid(), SYS_newfstatat, args, rv, keep);
}

/* The home's reply ret to R's stat of path, of size bytes if 0: kept? */
static void
sc_reply(struct remote *g, const char *path, int64_t ret, off_t size)
{
	struct statc_keep	keep;
	struct stat		st;
	long			rv;

	ck_assert_int_eq(sc_stat(g, path, 0, &rv, &keep), 0);
	ck_assert_ptr_nonnull(keep.path);
	memset(&st, 0, sizeof st);
	st.st_size = size;
	statc_reply(&g->statc, &keep, ret, ret == 0 ? &st : NULL,
	    ret == 0 ? sizeof st : 0);
	ck_assert_ptr_null(keep.path);
}

START_TEST(test_statc)
{
	static char		*shared[] = { "/scratch" };
	struct remote		*g = calloc(1, sizeof *g);
	struct statc_keep	 keep;
	struct stat		 st;
	long			 rv;

	ck_assert_ptr_nonnull(g);
	/* the home's answer, then the same stat again: answered here */
	sc_reply(g, "/usr/lib/python3.11", 0, 4096);
	ck_assert_int_eq(sc_stat(g, "/usr/lib/python3.11", 0, &rv, &keep), 1);
	ck_assert_int_eq(rv, 0);
	ck_assert_int_eq(sc_buf.st_size, 4096);
	/* an lstat is another question */
	ck_assert_int_eq(sc_stat(g, "/usr/lib/python3.11", 1, &rv, &keep), 0);
	ck_assert_int_eq(keep.nofollow, 1);
	free(keep.path);
	/* a file not there, kept too; a refusal is not */
	sc_reply(g, "/usr/lib/none.py", -ENOENT, 0);
	ck_assert_int_eq(sc_stat(g, "/usr/lib/none.py", 0, &rv, &keep), 1);
	ck_assert_int_eq(rv, -ENOENT);
	sc_reply(g, "/root/x", -EACCES, 0);
	ck_assert_int_eq(sc_stat(g, "/root/x", 0, &rv, &keep), 0);
	free(keep.path);

	/* a read of a descriptor not known to be a regular file drops all */
	uint64_t r[6] = { 0, (uint64_t)&st, 1 };
	ck_assert_int_eq(statc_answer(g, getpid(), SYS_read, r, &rv, &keep),
	    0);
	ck_assert_ptr_null(keep.path);
	ck_assert_int_eq(sc_stat(g, "/usr/lib/python3.11", 0, &rv, &keep), 0);
	free(keep.path);
	/* and a write, a rename, a chdir; an open to read does not */
	sc_reply(g, "/usr/lib/python3.11", 0, 4096);
	uint64_t o[6] = { (uint64_t)AT_FDCWD, (uint64_t)"/etc/passwd",
	    O_RDONLY | O_CLOEXEC };
	ck_assert_int_eq(statc_answer(g, getpid(), SYS_openat, o, &rv, &keep),
	    0);
	ck_assert_int_eq(sc_stat(g, "/usr/lib/python3.11", 0, &rv, &keep), 1);
	static const int changes[] = {
		SYS_write, SYS_renameat2, SYS_chdir, SYS_unlinkat, SYS_mkdir,
	};
	memset(&st, 0, sizeof st);
	for (size_t i = 0; i < sizeof changes / sizeof changes[0]; i++) {
		ck_assert_int_eq(sc_stat(g, "/usr/lib/python3.11", 0, &rv,
		    &keep), 1);
		uint64_t c[6] = { 3, (uint64_t)"x", 0 };
		ck_assert_int_eq(statc_answer(g, getpid(), changes[i], c, &rv,
		    &keep), 0);
		ck_assert_int_eq(sc_stat(g, "/usr/lib/python3.11", 0, &rv,
		    &keep), 0);
		statc_reply(&g->statc, &keep, 0, &st, sizeof st);
	}
	/* one that creates a file drops them */
	sc_reply(g, "/tmp/new", -ENOENT, 0);
	o[2] = O_WRONLY | O_CREAT;
	ck_assert_int_eq(statc_answer(g, getpid(), SYS_openat, o, &rv, &keep),
	    0);
	ck_assert_int_eq(sc_stat(g, "/tmp/new", 0, &rv, &keep), 0);
	free(keep.path);

	/*
	 * the reply to another thread's write at home, or to a write behind:
	 * what was answered meanwhile may be from before it
	 */
	sc_reply(g, "/usr/lib/a.py", 0, 1);
	statc_replied(g, SYS_newfstatat, o);
	ck_assert_int_eq(sc_stat(g, "/usr/lib/a.py", 0, &rv, &keep), 1);
	statc_replied(g, SYS_write, o);
	ck_assert_int_eq(sc_stat(g, "/usr/lib/a.py", 0, &rv, &keep), 0);
	free(keep.path);
	sc_reply(g, "/usr/lib/a.py", 0, 1);
	statc_replied(g, -1, NULL);
	ck_assert_int_eq(sc_stat(g, "/usr/lib/a.py", 0, &rv, &keep), 0);

	/* a reply to a stat sent before a drop is not kept */
	statc_clear(&g->statc);
	memset(&st, 0, sizeof st);
	statc_reply(&g->statc, &keep, 0, &st, sizeof st);
	ck_assert_int_eq(sc_stat(g, "/usr/lib/a.py", 0, &rv, &keep), 0);
	free(keep.path);

	/* kept no longer than FIO_FRESH_NS */
	sc_reply(g, "/usr/bin", 0, 4096);
	g->statc.e[g->statc.n - 1].at -= FIO_FRESH_NS + 1;
	ck_assert_int_eq(sc_stat(g, "/usr/bin", 0, &rv, &keep), 0);
	free(keep.path);

	/*
	 * never: /proc, /sys, /dev, a path with . or .., a relative one,
	 * one under a shared path; nothing under mosrun -s
	 */
	static const char *never[] = {
		"/proc/self/stat", "/proc", "/sys/fs", "/dev/null",
		"/usr/../proc/1", "/usr/./bin", "//usr", "bin", "",
		"/scratch/a",
	};
	g->shared.paths = shared;
	g->shared.npaths = 1;
	for (size_t i = 0; i < sizeof never / sizeof never[0]; i++) {
		ck_assert_int_eq(sc_stat(g, never[i], 0, &rv, &keep), 0);
		ck_assert_msg(keep.path == NULL, "%s kept", never[i]);
	}
	ck_assert_int_eq(sc_stat(g, "/scratcher", 0, &rv, &keep), 0);
	ck_assert_ptr_nonnull(keep.path);
	free(keep.path);
	g->fio.off = 1;
	ck_assert_int_eq(sc_stat(g, "/usr/lib", 0, &rv, &keep), 0);
	ck_assert_ptr_null(keep.path);

	ck_assert_uint_eq(g->statc.hits, 3 + 5 + 1);
	statc_clear(&g->statc);
	free(g);
}
END_TEST

/* More answers than it keeps: the oldest go first. */
START_TEST(test_statc_full)
{
	struct remote		*g = calloc(1, sizeof *g);
	struct statc_keep	 keep;
	char			 path[64];
	long			 rv;
	int			 i;

	ck_assert_ptr_nonnull(g);
	for (i = 0; i < STATC_MAX + 10; i++) {
		snprintf(path, sizeof path, "/usr/lib/m%d.py", i);
		sc_reply(g, path, 0, i);
	}
	ck_assert_uint_eq(g->statc.n, STATC_MAX);
	ck_assert_int_eq(sc_stat(g, "/usr/lib/m0.py", 0, &rv, &keep), 0);
	free(keep.path);
	snprintf(path, sizeof path, "/usr/lib/m%d.py", STATC_MAX + 9);
	ck_assert_int_eq(sc_stat(g, path, 0, &rv, &keep), 1);
	ck_assert_int_eq(sc_buf.st_size, STATC_MAX + 9);
	statc_clear(&g->statc);
	free(g);
}
END_TEST

void
check_remote_statc(Suite *s)
{
	TCase	*tc = tcase_create("statc");

	tcase_add_test(tc, test_statc);
	tcase_add_test(tc, test_statc_full);
	suite_add_tcase(s, tc);
}
