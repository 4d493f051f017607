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
static struct rmt_region sc_reg;
static struct rmt_call	sc_c;

/*
 * R's stat of path (newfstatat, AT_FDCWD; lstat if nofollow), as
 * marshal_call gives it: the path its one region.
 */
static const struct rmt_call *
sc_call(const char *path, int nofollow)
{
	memset(&sc_c, 0, sizeof sc_c);
	sc_c.nr = SYS_newfstatat;
	sc_c.args[0] = (uint64_t)AT_FDCWD;
	sc_c.args[1] = (uint64_t)path;
	sc_c.args[2] = (uint64_t)&sc_buf;
	sc_c.args[3] = nofollow ? AT_SYMLINK_NOFOLLOW : 0;
	sc_reg.addr = (uint64_t)path;
	sc_reg.size = strlen(path) + 1;
	sc_reg.dir = RMT_IN;
	sc_reg.data = (uint8_t *)path;
	sc_c.regions = &sc_reg;
	sc_c.nregions = 1;
	return &sc_c;
}

/* R's stat of path through g: answered from one kept (1, *rv), or 0. */
static int
sc_stat(struct remote *g, const char *path, int nofollow, int64_t *rv)
{
	char	*keep;
	int	 rc;

	memset(&sc_buf, 0, sizeof sc_buf);
	statc_call(g, SYS_newfstatat, sc_call(path, nofollow)->args);
	rc = statc_answer(g, getpid(), sc_call(path, nofollow), rv, &keep);
	free(keep);
	return rc;
}

/*
 * R's stat of path sent home, not answered here, and the home's reply
 * ret (of size bytes if 0) to it, sent when the answers kept were at
 * generation gen: kept?
 */
static int
sc_told(struct remote *g, const char *path, int nofollow, uint64_t gen,
    int64_t ret, off_t size)
{
	struct stat	 st;
	char		*keep;
	int64_t		 rv;
	int		 kept;

	if (statc_answer(g, getpid(), sc_call(path, nofollow), &rv, &keep))
		return 0;
	memset(&st, 0, sizeof st);
	st.st_size = size;
	kept = keep != NULL;
	statc_reply(g, sc_call(path, nofollow), &keep, gen, ret,
	    ret == 0 ? &st : NULL, ret == 0 ? sizeof st : 0);
	kept = kept && keep == NULL;
	free(keep);
	return kept;
}

/* R's stat of path goes home, and the home's reply ret comes. */
static void
sc_reply(struct remote *g, const char *path, int64_t ret, off_t size)
{
	int64_t	rv;

	ck_assert_int_eq(sc_stat(g, path, 0, &rv), 0);
	sc_told(g, path, 0, g->statc.gen, ret, size);
}

START_TEST(test_statc)
{
	static char		*shared[] = { "/scratch" };
	struct remote		*g = calloc(1, sizeof *g);
	struct stat		 st;
	int64_t			 rv;

	ck_assert_ptr_nonnull(g);
	/* the home's answer, then the same stat again: answered here */
	sc_reply(g, "/usr/lib/python3.11", 0, 4096);
	ck_assert_int_eq(sc_stat(g, "/usr/lib/python3.11", 0, &rv), 1);
	ck_assert_int_eq(rv, 0);
	ck_assert_int_eq(sc_buf.st_size, 4096);
	/* an lstat is another question */
	ck_assert_int_eq(sc_stat(g, "/usr/lib/python3.11", 1, &rv), 0);
	ck_assert(sc_told(g, "/usr/lib/python3.11", 1, g->statc.gen, 0, 8));
	ck_assert_int_eq(g->statc.e[g->statc.n - 1].nofollow, 1);
	/* a file not there, kept too; a refusal is not */
	sc_reply(g, "/usr/lib/none.py", -ENOENT, 0);
	ck_assert_int_eq(sc_stat(g, "/usr/lib/none.py", 0, &rv), 1);
	ck_assert_int_eq(rv, -ENOENT);
	sc_reply(g, "/root/x", -EACCES, 0);
	ck_assert_int_eq(sc_stat(g, "/root/x", 0, &rv), 0);

	/* a read of a descriptor not known to be a regular file drops all */
	uint64_t r[6] = { 0, (uint64_t)&st, 1 };
	statc_call(g, SYS_read, r);
	ck_assert_int_eq(sc_stat(g, "/usr/lib/python3.11", 0, &rv), 0);
	/* and a write, a rename, a chdir; an open to read does not */
	sc_reply(g, "/usr/lib/python3.11", 0, 4096);
	uint64_t o[6] = { (uint64_t)AT_FDCWD, (uint64_t)"/etc/passwd",
	    O_RDONLY | O_CLOEXEC };
	statc_call(g, SYS_openat, o);
	ck_assert_int_eq(sc_stat(g, "/usr/lib/python3.11", 0, &rv), 1);
	static const int changes[] = {
		SYS_write, SYS_renameat2, SYS_chdir, SYS_unlinkat, SYS_mkdir,
	};
	for (size_t i = 0; i < sizeof changes / sizeof changes[0]; i++) {
		ck_assert_int_eq(sc_stat(g, "/usr/lib/python3.11", 0, &rv), 1);
		uint64_t c[6] = { 3, (uint64_t)"x", 0 };
		statc_call(g, changes[i], c);
		ck_assert_int_eq(sc_stat(g, "/usr/lib/python3.11", 0, &rv), 0);
		sc_told(g, "/usr/lib/python3.11", 0, g->statc.gen, 0, 4096);
	}
	/* one that creates a file drops them */
	sc_reply(g, "/tmp/new", -ENOENT, 0);
	o[2] = O_WRONLY | O_CREAT;
	statc_call(g, SYS_openat, o);
	ck_assert_int_eq(sc_stat(g, "/tmp/new", 0, &rv), 0);

	/*
	 * the reply to another thread's write at home, or to a write behind:
	 * what was answered meanwhile may be from before it
	 */
	sc_reply(g, "/usr/lib/a.py", 0, 1);
	statc_replied(g, SYS_newfstatat, o);
	ck_assert_int_eq(sc_stat(g, "/usr/lib/a.py", 0, &rv), 1);
	statc_replied(g, SYS_write, o);
	ck_assert_int_eq(sc_stat(g, "/usr/lib/a.py", 0, &rv), 0);
	sc_told(g, "/usr/lib/a.py", 0, g->statc.gen, 0, 1);
	statc_replied(g, -1, NULL);
	ck_assert_int_eq(sc_stat(g, "/usr/lib/a.py", 0, &rv), 0);

	/* a reply to a stat sent before a drop is not kept */
	uint64_t gen = g->statc.gen;
	statc_clear(&g->statc);
	ck_assert(!sc_told(g, "/usr/lib/a.py", 0, gen, 0, 1));
	ck_assert_int_eq(sc_stat(g, "/usr/lib/a.py", 0, &rv), 0);

	/* kept no longer than FIO_FRESH_NS */
	sc_reply(g, "/usr/bin", 0, 4096);
	g->statc.e[g->statc.n - 1].at -= FIO_FRESH_NS + 1;
	ck_assert_int_eq(sc_stat(g, "/usr/bin", 0, &rv), 0);

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
		ck_assert_int_eq(sc_stat(g, never[i], 0, &rv), 0);
		ck_assert_msg(!sc_told(g, never[i], 0, g->statc.gen, -ENOENT,
		    0), "%s kept", never[i]);
	}
	ck_assert_int_eq(sc_stat(g, "/scratcher", 0, &rv), 0);
	ck_assert(sc_told(g, "/scratcher", 0, g->statc.gen, -ENOENT, 0));
	g->fio.off = 1;
	ck_assert_int_eq(sc_stat(g, "/usr/lib", 0, &rv), 0);
	ck_assert(!sc_told(g, "/usr/lib", 0, g->statc.gen, -ENOENT, 0));

	ck_assert_uint_eq(g->statc.hits, 3 + 5 + 1);
	statc_clear(&g->statc);
	free(g);
}
END_TEST

/* More answers than it keeps: the oldest go first. */
START_TEST(test_statc_full)
{
	struct remote		*g = calloc(1, sizeof *g);
	char			 path[64];
	int64_t			 rv;
	int			 i;

	ck_assert_ptr_nonnull(g);
	for (i = 0; i < STATC_MAX + 10; i++) {
		snprintf(path, sizeof path, "/usr/lib/m%d.py", i);
		sc_reply(g, path, 0, i);
	}
	ck_assert_uint_eq(g->statc.n, STATC_MAX);
	ck_assert_int_eq(sc_stat(g, "/usr/lib/m0.py", 0, &rv), 0);
	snprintf(path, sizeof path, "/usr/lib/m%d.py", STATC_MAX + 9);
	ck_assert_int_eq(sc_stat(g, path, 0, &rv), 1);
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
