/*
 * Check suite for migrate/'s image reader and writer: a synthetic image
 * written and read back; every truncation, every corrupted byte, foreign
 * magic and version, hostile lengths and misplaced pages refused.
 */
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
#include "migrate/migrate.h"
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
	b.data[7] = 2;
	cause = load(b.data, b.len, &mi);
	ck_assert_ptr_nonnull(strstr(cause, "format version 2"));
	free(cause);
	cause = load((const uint8_t *)"#!/bin/sh\n", 10, &mi);
	ck_assert_ptr_nonnull(strstr(cause, "bad magic"));
	free(cause);
	free(b.data);
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

#define ERESTARTNOHAND	514	/* the kernel's, not in libc */

/* --- the husk and its stub ------------------------------------------ */

/* A child to make a husk of: seized, stopped, its memory its own. */
static struct mig_task *
husk_child(pid_t *pid)
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

/* Wait for the husk's next stop and say what it was. */
static enum mig_husk_stop
husk_next(struct mig_husk *h, long *rv, siginfo_t *si)
{
	int	status;

	ck_assert_int_eq(waitpid(mig_pid(h->t), &status, __WALL),
	    mig_pid(h->t));
	ck_assert(WIFSTOPPED(status));
	return mig_husk_stopped(h, status, rv, si);
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

	t = husk_child(&pid);
	mig_kill(t);
	ck_assert_int_eq(waitpid(pid, &status, WNOHANG), pid);
	ck_assert(WIFSIGNALED(status));
	ck_assert_int_eq(WTERMSIG(status), SIGKILL);
}
END_TEST

START_TEST(test_husk_calls)
{
	struct mig_husk	 h;
	struct mig_task	*t;
	siginfo_t	 si;
	uint64_t	 base, args[6] = { 0 };
	uint8_t		*mem, zero[8] = { 0 };
	size_t		 len;
	char		*cause = NULL, path[64], want[256];
	ssize_t		 n;
	long		 rv;
	pid_t		 pid;
	int		 status;

	t = husk_child(&pid);
	ck_assert_msg(mig_husk_make(t, 1 << 16, &h, &cause) == 0, "%s", cause);
	ck_assert_msg(mig_husk_run(&h, &cause) == 0, "%s", cause);

	/* a call in the child's own context: its pid */
	mig_husk_call(&h, SYS_getpid, args);
	ck_assert_int_eq(husk_next(&h, &rv, &si), MIG_HUSK_RETURNED);
	ck_assert_int_eq(rv, pid);
	ck_assert(!h.busy);

	/* memory laid out in the shared area, read back in place */
	mem = mig_husk_scratch(&h, &base, &len);
	ck_assert_uint_ge(len, 1 << 16);
	ck_assert_msg(mig_husk_run(&h, &cause) == 0, "%s", cause);
	args[0] = AT_FDCWD;
	args[1] = base;
	args[2] = base + 4096;
	args[3] = 64;
	strcpy((char *)mem, "/proc/self/exe");
	mig_husk_call(&h, SYS_readlinkat, args);
	ck_assert_int_eq(husk_next(&h, &rv, &si), MIG_HUSK_RETURNED);
	ck_assert_int_gt(rv, 0);
	snprintf(path, sizeof path, "/proc/%d/exe", pid);
	n = readlink(path, want, sizeof want);
	ck_assert_int_eq(rv, n);
	ck_assert_int_eq(memcmp(mem + 4096, want, n), 0);

	/* a signal while it waits stops it for us, and it waits on */
	ck_assert_msg(mig_husk_run(&h, &cause) == 0, "%s", cause);
	kill(pid, SIGUSR1);
	ck_assert_int_eq(husk_next(&h, &rv, &si), MIG_HUSK_SIGNAL);
	ck_assert_int_eq(si.si_signo, SIGUSR1);
	ck_assert_int_eq(mig_husk_continue(&h, 0, &cause), 0);
	mig_husk_call(&h, SYS_getppid, args);
	ck_assert_int_eq(husk_next(&h, &rv, &si), MIG_HUSK_RETURNED);
	ck_assert_int_eq(rv, getpid());

	/* a signal breaks off a blocking call, which returns its restart code */
	ck_assert_msg(mig_husk_run(&h, &cause) == 0, "%s", cause);
	memset(args, 0, sizeof args);
	mig_husk_call(&h, SYS_pause, args);
	usleep(20000);
	kill(pid, SIGUSR2);
	ck_assert_int_eq(husk_next(&h, &rv, &si), MIG_HUSK_SIGNAL);
	ck_assert_int_eq(si.si_signo, SIGUSR2);
	ck_assert_int_eq(mig_husk_continue(&h, 0, &cause), 0);
	ck_assert_int_eq(husk_next(&h, &rv, &si), MIG_HUSK_RETURNED);
	ck_assert_int_eq(rv, -ERESTARTNOHAND);

	/* held, grown, and the stub serves from the new area */
	ck_assert_msg(mig_husk_run(&h, &cause) == 0, "%s", cause);
	ck_assert_msg(mig_husk_hold(&h, &cause) == 0, "%s", cause);
	ck_assert_msg(mig_husk_grow(&h, 1 << 20, &cause) == 0, "%s", cause);
	mem = mig_husk_scratch(&h, &base, &len);
	ck_assert_uint_ge(len, 1 << 20);
	ck_assert_msg(mig_husk_run(&h, &cause) == 0, "%s", cause);
	memset(mem + len - 4096, 0, 8);
	args[0] = base + len - 4096;	/* into the new area's last page */
	args[1] = 8;
	mig_husk_call(&h, SYS_getrandom, args);
	ck_assert_int_eq(husk_next(&h, &rv, &si), MIG_HUSK_RETURNED);
	ck_assert_int_eq(rv, 8);
	ck_assert(memcmp(mem + len - 4096, zero, 8) != 0);

	/* it ends as told */
	ck_assert_int_eq(mig_end(&h, 0, 7, &cause), 0);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFEXITED(status));
	ck_assert_int_eq(WEXITSTATUS(status), 7);
	mig_husk_free(&h);
	mig_forget(t);
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
	tcase_add_test(tc, test_every_truncation);
	tcase_add_test(tc, test_every_corruption);
	tcase_add_test(tc, test_foreign);
	tcase_add_test(tc, test_hostile_length);
	tcase_add_test(tc, test_pages_outside);
	tcase_add_test(tc, test_husk_calls);
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
