/* migrate/postcopy.c: the source's side, what it sends and when. */
#include <sys/mman.h>
#include <sys/wait.h>
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "lib/osm.h"
#include "migrate/migrate.h"
#include "migrate/internal.h"
#include "tests/unit/check_migrate.h"

#define PG		4096UL
#define NPG		8
/* Above the stack, the highest of a process's areas: its last run. */
#define POST_TOP	0x7ffffff00000UL

/* A child with two areas of NPG pages with data, A anywhere, B on top. */
static pid_t
post_child(uint64_t *a, uint64_t *b)
{
	uint8_t	*p[2];
	uint64_t addr[2];
	int	 fds[2], i, j;
	pid_t	 pid;

	ck_assert_int_eq(pipe(fds), 0);
	if ((pid = fork()) == 0) {
		p[0] = mmap(NULL, NPG * PG, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		p[1] = mmap((void *)POST_TOP, NPG * PG, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
		for (i = 0; i < 2; i++) {
			if (p[i] == MAP_FAILED)
				_exit(1);
			for (j = 0; j < NPG; j++)
				memset(p[i] + j * PG, 'A' + 16 * i + j, PG);
			addr[i] = (uintptr_t)p[i];
		}
		if (write(fds[1], addr, sizeof addr) != sizeof addr)
			_exit(1);
		for (;;)
			pause();
	}
	ck_assert_int_gt(pid, 0);
	close(fds[1]);
	ck_assert_int_eq(read(fds[0], addr, sizeof addr), sizeof addr);
	close(fds[0]);
	*a = addr[0];
	*b = addr[1];
	return pid;
}

/* Is B above every other area of pid (the stack too)? */
static int
post_on_top(pid_t pid, uint64_t b)
{
	char			 path[64], line[512];
	unsigned long long	 s, e;
	FILE			*f;
	int			 top = 1;

	snprintf(path, sizeof path, "/proc/%d/maps", (int)pid);
	ck_assert_ptr_nonnull(f = fopen(path, "r"));
	while (fgets(line, sizeof line, f) != NULL) {
		if (sscanf(line, "%llx-%llx", &s, &e) == 2 && s != b &&
		    e > b && s < 0x800000000000ULL)
			top = 0;
	}
	fclose(f);
	return top;
}

/*
 * Faults answered by mig_post_take, the rest pushed by mig_post_next:
 * every page left at the dump goes exactly once, whichever run a fault
 * falls in. A fault on the first page of the last run takes the run
 * whole (before, its length was told from what was left after: one page
 * went, the others were neither sent nor left, and the target read
 * zeros there; post-copy's churn test lost a 24 KiB table so).
 */
START_TEST(test_post_take_last)
{
	struct mig_live	 lv;
	struct mig_task	*t;
	struct mig_post	*pp;
	uint64_t	 a, b, addr, left, sent = 0, early = 0;
	uint8_t		 buf[NPG * PG];
	size_t		 len, i;
	char		*cause = NULL;
	pid_t		 pid;
	int		 fd;

	pid = post_child(&a, &b);
	ck_assert_msg(post_on_top(pid, b), "area %llx is not the highest",
	    (unsigned long long)b);
	t = mig_seize(pid, &cause);
	ck_assert_msg(t != NULL, "%s", cause);
	memset(&lv, 0, sizeof lv);
	lv.t = t;
	lv.post = pp = mig_post_new();
	ck_assert_int_ge(fd = memfd_create("post", MFD_CLOEXEC), 0);
	ck_assert_msg(mig_dump_live(&lv, fd, 0, NULL, &cause) == 0, "%s",
	    cause);
	mig_post_pages(pp, &left);
	ck_assert_uint_ge(left, 2 * NPG);

	/* a fault inside A: the rest of A; on B's first page: all of B */
	ck_assert_uint_eq(mig_post_take(pp, a + 2 * PG + 100, 1 << 20),
	    (NPG - 2) * PG);
	ck_assert_uint_eq(mig_post_take(pp, b, 1 << 20), NPG * PG);
	mig_post_read(pp, b, buf, NPG * PG);
	for (i = 0; i < NPG; i++)
		ck_assert_int_eq(buf[i * PG + 7], 'A' + 16 + i);
	sent = (NPG - 2) + NPG;
	/* sent already: alone, and not again */
	ck_assert_uint_eq(mig_post_take(pp, b + 3 * PG, 1 << 20), PG);

	while (mig_post_next(pp, &addr, &len, 256 << 10)) {
		ck_assert_msg(addr + len <= a + 2 * PG || addr >= a + NPG * PG,
		    "%llx+%zu pushed again", (unsigned long long)addr, len);
		ck_assert_msg(addr + len <= b || addr >= b + NPG * PG,
		    "%llx+%zu pushed again", (unsigned long long)addr, len);
		if (addr >= a && addr < a + 2 * PG)
			early += len / PG;
		sent += len / PG;
	}
	ck_assert_uint_eq(early, 2);
	ck_assert_uint_eq(sent, left);

	mig_post_free(pp);
	close(fd);
	mig_kill(t);
	ck_assert_int_eq(waitpid(pid, NULL, 0), pid);
}
END_TEST

/*
 * The target's map of the source's pages, kept in event order. A hole
 * left by a munmap that the kernel reuses for an mremap's destination
 * holds the moved area's pages, not nothing (churn once read zeros
 * there); the source's pages of an area moved away are not where it was;
 * an area moved twice is followed; a drop of a moved area loses its pages.
 */
START_TEST(test_post_map)
{
	struct postmap	m;
	uint64_t	a;
	const uint64_t	A = 0x100000, B = 0x200000, C = 0x300000;

	postmap_init(&m);
	ck_assert_int_eq(postmap_here(&m, A, &a), 1);
	ck_assert_uint_eq(a, A);
	/* A unmapped, then B moved into its hole */
	postmap_drop(&m, A, A + 4 * PG);
	ck_assert_int_eq(postmap_here(&m, A, &a), 0);
	ck_assert_int_eq(postmap_there(&m, A, &a), 0);
	postmap_move(&m, B, A, 4 * PG);
	ck_assert_int_eq(postmap_here(&m, B + PG, &a), 1);
	ck_assert_uint_eq(a, A + PG);
	ck_assert_int_eq(postmap_there(&m, A + PG, &a), 1);
	ck_assert_uint_eq(a, B + PG);
	ck_assert_int_eq(postmap_here(&m, A + PG, &a), 0);
	/* nothing of the source's where B was */
	ck_assert_int_eq(postmap_there(&m, B + PG, &a), 0);
	/* on to C, and C's own pages are gone (mremap unmaps the target) */
	postmap_move(&m, A, C, 4 * PG);
	ck_assert_int_eq(postmap_here(&m, B + 3 * PG, &a), 1);
	ck_assert_uint_eq(a, C + 3 * PG);
	ck_assert_int_eq(postmap_there(&m, C + 3 * PG, &a), 1);
	ck_assert_uint_eq(a, B + 3 * PG);
	ck_assert_int_eq(postmap_here(&m, C, &a), 0);
	ck_assert_int_eq(postmap_there(&m, A, &a), 0);
	/* half of it dropped where it is now */
	postmap_drop(&m, C, C + 2 * PG);
	ck_assert_int_eq(postmap_here(&m, B + PG, &a), 0);
	ck_assert_int_eq(postmap_here(&m, B + 2 * PG, &a), 1);
	ck_assert_uint_eq(a, C + 2 * PG);
	ck_assert_int_eq(postmap_there(&m, C + PG, &a), 0);
	/* untouched addresses are where they were */
	ck_assert_int_eq(postmap_here(&m, C + 8 * PG, &a), 1);
	ck_assert_uint_eq(a, C + 8 * PG);
	ck_assert_int_eq(postmap_there(&m, C + 8 * PG, &a), 1);
	ck_assert_uint_eq(a, C + 8 * PG);
	postmap_free(&m);
}
END_TEST

void
check_migrate_post(Suite *s)
{
	TCase	*tc;

	tc = tcase_create("postcopy");
	tcase_add_test(tc, test_post_take_last);
	tcase_add_test(tc, test_post_map);
	suite_add_tcase(s, tc);
}
