/*
 * Check suite for migrate/'s image reader and writer: a synthetic image
 * written and read back; every truncation, every corrupted byte, foreign
 * magic and version, hostile lengths and misplaced pages refused.
 */
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include <check.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/osm.h"
#include "migrate/internal.h"
#include "tests/common/image-build.h"

#define VMA_START	IMAGE_BUILD_VMA

struct buf {
	uint8_t	*data;
	size_t	 len;
};

/* The bytes a file descriptor would carry: through a temporary file. */
static int
buf_fd(const uint8_t *data, size_t len)
{
	FILE	*f = tmpfile();
	int	 fd;

	ck_assert_ptr_nonnull(f);
	fd = dup(fileno(f));
	fclose(f);
	ck_assert_int_eq(write_all(fd, data, len), 0);
	lseek(fd, 0, SEEK_SET);
	return fd;
}

static void
buf_read_back(int fd, struct buf *b)
{
	off_t	end = lseek(fd, 0, SEEK_END);

	b->len = end;
	b->data = malloc(end);
	ck_assert_int_eq(pread(fd, b->data, end, 0), end);
}

/*
 * A small but valid image (tests/common/image-build.c): one anonymous area
 * with two runs of pages, a vDSO, a file, a pending signal. extent_addr
 * moves the second run.
 */
static void
make_image(struct buf *b, uint64_t extent_addr)
{
	struct image_build	 ib = { .comm = "unit",
				    .extent_addr = extent_addr };
	uint64_t		 bytes;
	char			*cause = NULL;
	int			 fd;

	fd = buf_fd(NULL, 0);
	ck_assert_msg(image_build(fd, &ib, &bytes, &cause) == 0, "%s", cause);
	buf_read_back(fd, b);
	ck_assert_uint_eq(b->len, bytes);
	close(fd);
}

/* Load an image from bytes; the cause on failure, NULL on success. */
static char *
load(const uint8_t *data, size_t len, struct mig_image *mi)
{
	char	*cause = NULL;
	int	 fd = buf_fd(data, len), rc;

	rc = mig_image_load(fd, mi, &cause);
	close(fd);
	if (rc == 0) {
		ck_assert_ptr_null(cause);
		return NULL;
	}
	ck_assert_ptr_nonnull(cause);
	return cause;
}

START_TEST(test_roundtrip)
{
	struct buf	 b;
	struct mig_image mi;
	char		*cause;

	make_image(&b, VMA_START + 4 * MIG_PAGE);
	cause = load(b.data, b.len, &mi);
	ck_assert_msg(cause == NULL, "%s", cause);
	ck_assert_int_eq(mi.header->pid, 4242);
	ck_assert_str_eq(mi.header->comm, "unit");
	ck_assert_uint_eq(mi.regs->gp->rip, VMA_START + 0x10);
	ck_assert_uint_eq(mi.regs->xfeatures, 7);
	ck_assert_uint_eq(mi.sig->n_pending, 1);
	ck_assert_uint_eq(mi.mm->n_vmas, 2);
	ck_assert_uint_eq(mi.vma_pages[0], 3);
	ck_assert_uint_eq(mi.bytes, b.len);
	mig_image_free(&mi);
	free(b.data);
}
END_TEST

/*
 * Descriptors no path opens again are recorded and load; one said to
 * share with a descriptor the image does not have is refused.
 */
START_TEST(test_other_fds)
{
	struct image_build	 ib = { .comm = "unit",
				    .extent_addr = VMA_START + 4 * MIG_PAGE,
				    .flags = IMAGE_BUILD_OTHER };
	struct mig_image	 mi;
	struct buf		 b;
	uint64_t		 bytes;
	char			*cause = NULL;
	int			 fd, bad;

	for (bad = 0; bad < 2; bad++) {
		if (bad)
			ib.flags |= IMAGE_BUILD_BAD_SAME;
		fd = buf_fd(NULL, 0);
		ck_assert_msg(image_build(fd, &ib, &bytes, &cause) == 0, "%s",
		    cause);
		buf_read_back(fd, &b);
		close(fd);
		cause = load(b.data, b.len, &mi);
		if (bad) {
			ck_assert_ptr_nonnull(strstr(cause, "files record"));
			free(cause);
		} else {
			ck_assert_msg(cause == NULL, "%s", cause);
			ck_assert_uint_eq(mi.files->n_fds, 3);
			ck_assert_int_eq(mi.files->fds[1]->kind,
			    OSM__IMG_FD_KIND__FD_OTHER);
			ck_assert_str_eq(mi.files->fds[1]->what, "pipe:[42]");
			ck_assert_uint_eq(mi.files->fds[2]->same_as, 7);
			mig_image_free(&mi);
		}
		free(b.data);
	}
}
END_TEST

START_TEST(test_every_truncation)
{
	struct buf	 b;
	struct mig_image mi;
	char		*cause;
	size_t		 n;

	make_image(&b, VMA_START + 4 * MIG_PAGE);
	for (n = 0; n < b.len; n++) {
		cause = load(b.data, n, &mi);
		ck_assert_msg(cause != NULL, "image cut at %zu accepted", n);
		ck_assert_msg(strstr(cause, "truncated") != NULL ||
		    strstr(cause, "too short") != NULL,
		    "cut at %zu: %s", n, cause);
		free(cause);
	}
	free(b.data);
}
END_TEST

START_TEST(test_every_corruption)
{
	struct buf	 b;
	struct mig_image mi;
	char		*cause;
	size_t		 n;

	make_image(&b, VMA_START + 4 * MIG_PAGE);
	for (n = 0; n < b.len; n++) {
		b.data[n] ^= 0x5a;
		cause = load(b.data, b.len, &mi);
		ck_assert_msg(cause != NULL, "byte %zu changed, accepted", n);
		free(cause);
		b.data[n] ^= 0x5a;
	}
	/* Something added at the end is refused too. */
	b.data = realloc(b.data, b.len + 1);
	b.data[b.len] = 0;
	cause = load(b.data, b.len + 1, &mi);
	ck_assert_ptr_nonnull(strstr(cause, "after the final seal"));
	free(cause);
	free(b.data);
}
END_TEST

START_TEST(test_foreign)
{
	struct buf	 b;
	struct mig_image mi;
	char		*cause;

	make_image(&b, VMA_START + 4 * MIG_PAGE);
	b.data[0] = 'E';
	cause = load(b.data, b.len, &mi);
	ck_assert_ptr_nonnull(strstr(cause, "not a checkpoint image"));
	free(cause);
	b.data[0] = 'O';
	b.data[7] = MIG_VERSION + 1;
	cause = load(b.data, b.len, &mi);
	ck_assert_ptr_nonnull(strstr(cause, "format version 3"));
	free(cause);
	cause = load((const uint8_t *)"#!/bin/sh\n", 10, &mi);
	ck_assert_ptr_nonnull(strstr(cause, "bad magic"));
	free(cause);
	free(b.data);
}
END_TEST

/* runs: what both ends of a live dump compute alike. */
static void
runs_of(struct runs *s, const uint64_t *v, size_t n)
{
	size_t	i;

	runs_init(s);
	for (i = 0; i + 1 < n; i += 2)
		runs_add(s, v[i], v[i + 1]);
}

static void
runs_is(const struct runs *s, const uint64_t *v, size_t n)
{
	size_t	i;

	ck_assert_uint_eq(s->n, n / 2);
	for (i = 0; i < s->n; i++) {
		ck_assert_uint_eq(s->r[i].start, v[2 * i]);
		ck_assert_uint_eq(s->r[i].end, v[2 * i + 1]);
	}
}

START_TEST(test_runs)
{
	static const uint64_t	a[] = { 10, 20, 30, 40, 50, 60 };
	static const uint64_t	b[] = { 15, 35, 55, 70 };
	static const uint64_t	and[] = { 15, 20, 30, 35, 55, 60 };
	static const uint64_t	minus[] = { 10, 15, 35, 40, 50, 55 };
	static const uint64_t	or[] = { 10, 40, 50, 70 };
	static const uint64_t	merged[] = { 1, 9 };
	struct runs		 x, y, z;

	runs_of(&x, a, nitems(a));
	runs_of(&y, b, nitems(b));
	runs_init(&z);
	runs_and(&x, &y, &z);
	runs_is(&z, and, nitems(and));
	runs_minus(&x, &y, &z);
	runs_is(&z, minus, nitems(minus));
	runs_or(&x, &y, &z);
	runs_is(&z, or, nitems(or));
	ck_assert_uint_eq(runs_bytes(&z), 50);
	/* out of order, overlapping, adjacent: sorted and merged */
	x.n = 0;
	runs_add(&x, 5, 9);
	runs_add(&x, 1, 3);
	runs_add(&x, 3, 6);
	runs_sort(&x);
	runs_is(&x, merged, nitems(merged));
	runs_free(&x);
	runs_free(&y);
	runs_free(&z);
}
END_TEST

/* A round's kept ranges must lie in what the target holds, each inside one
 * private anonymous area; held after a round is kept and its areas with
 * pages. */
START_TEST(test_runs_kept)
{
	Osm__ImgVma	 v[2], *vp[2] = { &v[0], &v[1] };
	Osm__ImgExtent	 k = OSM__IMG_EXTENT__INIT, *kp = &k;
	Osm__ImgMm	 mm = OSM__IMG_MM__INIT;
	struct runs	 held;
	char		*cause = NULL;
	static const uint64_t	after[] = { 0x10000, 0x12000, 0x20000, 0x24000 };

	osm__img_vma__init(&v[0]);
	osm__img_vma__init(&v[1]);
	v[0].start = 0x10000;
	v[0].end = 0x14000;
	v[0].kind = OSM__IMG_VMA_KIND__VMA_ANON;
	v[0].flags = MAP_PRIVATE;
	v[1] = v[0];
	v[1].start = 0x20000;
	v[1].end = 0x24000;
	v[1].pages = 1;
	mm.vmas = vp;
	mm.n_vmas = 2;
	mm.kept = &kp;
	mm.n_kept = 1;
	k.addr = 0x10000;
	k.npages = 2;
	runs_init(&held);
	ck_assert_int_eq(runs_check_kept(&held, &mm, &cause), -1);
	ck_assert_ptr_nonnull(strstr(cause, "kept range 0"));
	free(cause);
	cause = NULL;
	runs_add(&held, 0x10000, 0x14000);
	ck_assert_int_eq(runs_check_kept(&held, &mm, &cause), 0);
	/* across two areas: refused */
	k.npages = 0x10;
	ck_assert_int_eq(runs_check_kept(&held, &mm, &cause), -1);
	free(cause);
	k.npages = 2;
	runs_hold(&held, &mm);
	runs_is(&held, after, nitems(after));
	runs_free(&held);
}
END_TEST

START_TEST(test_hostile_length)
{
	struct mig_image mi;
	uint8_t		 data[12] = { 'O', 'S', 'M', 'C', 0, 0, 0, 1,
			    0xff, 0xff, 0xff, 0xf0 };
	char		*cause;

	/* Four gigabytes announced: refused without reading or allocating. */
	cause = load(data, sizeof data, &mi);
	ck_assert_ptr_nonnull(strstr(cause, "more than the limit"));
	free(cause);
}
END_TEST

START_TEST(test_pages_outside)
{
	struct buf	 b;
	struct mig_image mi;
	char		*cause;

	/* Pages past the end of their area, or on top of earlier ones. */
	make_image(&b, VMA_START + 15 * MIG_PAGE);
	cause = load(b.data, b.len, &mi);
	ck_assert_ptr_nonnull(strstr(cause, "outside the areas"));
	free(cause);
	free(b.data);
	make_image(&b, VMA_START);
	cause = load(b.data, b.len, &mi);
	ck_assert_ptr_nonnull(strstr(cause, "outside the areas"));
	free(cause);
	free(b.data);
	make_image(&b, 0x7f0000000000ULL);
	cause = load(b.data, b.len, &mi);
	ck_assert_ptr_nonnull(strstr(cause, "outside the areas"));
	free(cause);
	free(b.data);
}
END_TEST

START_TEST(test_crc32c)
{
	/* RFC 3720 B.4 test vectors. */
	uint8_t	z[32], inc[32];
	size_t	i;

	memset(z, 0, sizeof z);
	for (i = 0; i < 32; i++)
		inc[i] = i;
	ck_assert_uint_eq(crc32c(0, z, 32), 0x8a9136aa);
	ck_assert_uint_eq(crc32c(0, inc, 32), 0x46dd794e);
	ck_assert_uint_eq(crc32c(crc32c(0, inc, 13), inc + 13, 19),
	    0x46dd794e);
	ck_assert_uint_eq(crc32c(0, "123456789", 9), 0xe3069283);
}
END_TEST

/* --- seized tasks ---------------------------------------------------- */

/* A child, seized and stopped. */
static struct mig_task *
seized_child(pid_t *pid)
{
	struct mig_task	*t;
	char		*cause = NULL;

	if ((*pid = fork()) == 0) {
		for (;;)
			pause();
	}
	ck_assert_int_gt(*pid, 0);
	t = mig_seize(*pid, &cause);
	ck_assert_msg(t != NULL, "%s", cause);
	return t;
}

/*
 * The end of a task we seized is seen, not reaped: its parent (a guest
 * agent, for R; here, us) must see it too, and how it ended.
 */
START_TEST(test_seized_end_left)
{
	struct mig_task	*t;
	pid_t		 pid;
	int		 status;

	t = seized_child(&pid);
	mig_kill(t);
	ck_assert_int_eq(waitpid(pid, &status, WNOHANG), pid);
	ck_assert(WIFSIGNALED(status));
	ck_assert_int_eq(WTERMSIG(status), SIGKILL);
}
END_TEST

static Suite *
migrate_suite(void)
{
	Suite	*s = suite_create("migrate");
	TCase	*tc;

	tc = tcase_create("image");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_crc32c);
	tcase_add_test(tc, test_roundtrip);
	tcase_add_test(tc, test_other_fds);
	tcase_add_test(tc, test_every_truncation);
	tcase_add_test(tc, test_every_corruption);
	tcase_add_test(tc, test_foreign);
	tcase_add_test(tc, test_runs);
	tcase_add_test(tc, test_runs_kept);
	tcase_add_test(tc, test_hostile_length);
	tcase_add_test(tc, test_pages_outside);
	tcase_add_test(tc, test_seized_end_left);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner	*sr = srunner_create(migrate_suite());
	int	 failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? 0 : 1;
}
