/*
 * Check suite for migrate/'s image reader and writer: a synthetic image
 * written and read back; every truncation, every corrupted byte, foreign
 * magic and version, hostile lengths and misplaced pages refused; thread
 * records checked. And held tasks: a threaded child seized (also while
 * it makes and ends threads), dumped, its thread records read back, calls
 * injected and code run per thread, threads made and ended, and a
 * threaded child restored with its pid and tids in a PID namespace.
 */
#include <sys/ioctl.h>
#include <sys/ptrace.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include <linux/userfaultfd.h>

#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/osm.h"
#include "migrate/internal.h"
#include "tests/common/image-build.h"
#include "tests/unit/check_migrate.h"

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
make_image_ex(struct buf *b, uint64_t extent_addr, int flags, int threads,
    int tid2)
{
	struct image_build	 ib = { .comm = "unit",
				    .extent_addr = extent_addr,
				    .flags = flags, .threads = threads,
				    .tid2 = tid2 };
	uint64_t		 bytes;
	char			*cause = NULL;
	int			 fd;

	fd = buf_fd(NULL, 0);
	ck_assert_msg(image_build(fd, &ib, &bytes, &cause) == 0, "%s", cause);
	buf_read_back(fd, b);
	ck_assert_uint_eq(b->len, bytes);
	close(fd);
}

static void
make_image(struct buf *b, uint64_t extent_addr)
{
	make_image_ex(b, extent_addr, 0, 2, 0);
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
	ck_assert_uint_eq(mi.nthreads, 2);
	ck_assert_int_eq(mi.threads[0]->tid, 4242);
	ck_assert_uint_eq(mi.threads[0]->regs->gp->rip, VMA_START + 0x10);
	ck_assert_uint_eq(mi.threads[0]->regs->xfeatures, 7);
	ck_assert_uint_eq(mi.threads[0]->n_pending, 1);
	ck_assert_int_eq(mi.threads[1]->tid, 4243);
	ck_assert_str_eq(mi.threads[1]->comm, "worker");
	ck_assert_uint_eq(mi.threads[1]->regs->gp->rip, VMA_START + 0x40);
	ck_assert_uint_eq(mi.threads[1]->blocked, 1ULL << (SIGUSR2 - 1));
	ck_assert_uint_eq(mi.threads[1]->n_pending, 0);
	ck_assert(mig_image_keeps_ids(&mi));
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
	b.data[7] = 1;		/* the single-threaded format before */
	cause = load(b.data, b.len, &mi);
	ck_assert_ptr_nonnull(strstr(cause, "format version 1, this build "
	    "reads versions 3 to 3"));
	free(cause);
	b.data[7] = MIG_VERSION + 1;
	cause = load(b.data, b.len, &mi);
	ck_assert_ptr_nonnull(strstr(cause, "format version 4"));
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
	uint8_t		 data[12] = { 'O', 'S', 'M', 'C', 0, 0, 0, MIG_VERSION,
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

/* Thread records that do not add up: refused, saying so. */
START_TEST(test_thread_records)
{
	struct buf	 b;
	struct mig_image mi;
	char		*cause;

	/* Two threads of one id. */
	make_image_ex(&b, VMA_START + 4 * MIG_PAGE, 0, 2, 4242);
	cause = load(b.data, b.len, &mi);
	ck_assert_msg(cause != NULL && strstr(cause, "thread records") != NULL,
	    "%s", cause);
	free(cause);
	free(b.data);
	/* The header counts one more than there are. */
	make_image_ex(&b, VMA_START + 4 * MIG_PAGE, IMAGE_BUILD_MISCOUNT, 2,
	    0);
	cause = load(b.data, b.len, &mi);
	ck_assert_msg(cause != NULL && strstr(cause, "seal record where the "
	    "thread belongs") != NULL, "%s", cause);
	free(cause);
	free(b.data);
	/* The main thread alone may come back under another pid. */
	make_image_ex(&b, VMA_START + 4 * MIG_PAGE, 0, 1, 0);
	cause = load(b.data, b.len, &mi);
	ck_assert_ptr_null(cause);
	ck_assert_uint_eq(mi.nthreads, 1);
	ck_assert(!mig_image_keeps_ids(&mi));
	mig_image_free(&mi);
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

/* --- threaded children ----------------------------------------------- */

#define KID_MAX		8

static int		 kid_pipe = -1;
static pthread_barrier_t kid_barrier;
static __thread long	 kid_tls;
static pid_t		 kid_tids[KID_MAX];
static int		 kid_sleep_ms;

/*
 * A worker: named w<i>, SIGUSR2 blocked if i is odd, its tid and a TLS
 * value noted; it sleeps kid_sleep_ms (0: for ever), then checks that its
 * tid and TLS value are still what they were.
 */
static void *
kid_worker(void *arg)
{
	int		 i = (int)(intptr_t)arg;
	char		 name[16];
	sigset_t	 set;
	struct timespec	 ts;

	snprintf(name, sizeof name, "w%d", i);
	pthread_setname_np(pthread_self(), name);
	if (i % 2 == 1) {
		sigemptyset(&set);
		sigaddset(&set, SIGUSR2);
		pthread_sigmask(SIG_BLOCK, &set, NULL);
	}
	kid_tls = 7000 + i;
	kid_tids[i] = syscall(SYS_gettid);
	pthread_barrier_wait(&kid_barrier);
	if (kid_sleep_ms == 0)
		for (;;)
			pause();
	ts.tv_sec = kid_sleep_ms / 1000;
	ts.tv_nsec = (kid_sleep_ms % 1000) * 1000000L;
	while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
		;
	if (syscall(SYS_gettid) != kid_tids[i] || kid_tls != 7000 + i)
		_exit(3);
	return NULL;
}

/* A child of n worker threads, their tids in tids once all have started. */
static pid_t
kid_start(int n, int sleep_ms, pid_t *tids)
{
	pthread_t	t[KID_MAX];
	pid_t		pid;
	int		p[2], i;

	ck_assert_int_le(n, KID_MAX);
	ck_assert_int_eq(pipe(p), 0);
	if ((pid = fork()) == 0) {
		/* Nothing of the suite's open: a dump would refuse it. */
		kid_pipe = dup2(p[1], 100);
		close_range(0, 99, 0);
		close_range(101, ~0U, 0);
		kid_sleep_ms = sleep_ms;
		pthread_barrier_init(&kid_barrier, NULL, n + 1);
		for (i = 0; i < n; i++)
			pthread_create(&t[i], NULL, kid_worker,
			    (void *)(intptr_t)i);
		pthread_barrier_wait(&kid_barrier);
		if (write(kid_pipe, kid_tids, n * sizeof *kid_tids) < 0)
			_exit(2);
		close(kid_pipe);	/* a dump refuses pipes beyond 0-2 */
		for (i = 0; i < n; i++)
			pthread_join(t[i], NULL);
		_exit(0);
	}
	close(p[1]);
	ck_assert_int_eq(read_all(p[0], tids, n * sizeof *tids), 0);
	close(p[0]);
	usleep(50000);		/* the pipe closed, each in its sleep */
	return pid;
}

static void
kid_end(pid_t pid)
{
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

/*
 * A process that ends while held for a dump (killed, its memory gone):
 * the dump says it is ending, not that something of it is missing.
 */
START_TEST(test_dump_ending)
{
	struct mig_task	*t;
	char		*cause = NULL, path[64], buf[256], *p;
	pid_t		 pid;
	int		 fd, i;

	if ((pid = fork()) == 0) {
		close_range(3, ~0U, 0);
		for (;;)
			pause();
	}
	t = mig_seize(pid, &cause);
	ck_assert_msg(t != NULL, "%s", cause);
	ck_assert_int_eq(kill(pid, SIGKILL), 0);
	snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
	for (i = 0; i < 500; i++) {	/* a zombie: its memory gone */
		ck_assert_int_eq(read_file_str(path, buf, sizeof buf), 0);
		if ((p = strrchr(buf, ')')) != NULL && p[2] == 'Z')
			break;
		usleep(10000);
	}
	ck_assert_int_lt(i, 500);
	fd = buf_fd(NULL, 0);
	ck_assert_int_eq(mig_dump(t, fd, 0, NULL, &cause), -1);
	ck_assert_msg(strstr(cause, "is ending") != NULL, "%s", cause);
	free(cause);
	close(fd);
	mig_kill(t);
	ck_assert_int_eq(waitpid(pid, NULL, 0), pid);
}
END_TEST

/*
 * A child of 3 threads seized: every thread held, a call injected into
 * each runs there (gettid), and a dump records each thread as it was.
 */
START_TEST(test_seize_threads)
{
	struct mig_task	*t;
	struct mig_image mi;
	pid_t		 tids[3], got[8];
	char		*cause = NULL, name[16];
	long		 rv;
	size_t		 i, j, n;
	pid_t		 pid;
	int		 fd;

	pid = kid_start(3, 0, tids);
	t = mig_seize(pid, &cause);
	ck_assert_msg(t != NULL, "%s", cause);
	n = mig_threads(t, got, nitems(got));
	ck_assert_uint_eq(n, 4);
	ck_assert_int_eq(got[0], pid);
	for (i = 0; i < 3; i++)
		ck_assert_int_eq(got[i + 1], tids[i]);
	for (i = 0; i < n; i++) {
		ck_assert_int_eq(mig_thread_here(t, got[i]), got[i]);
		ck_assert_msg(mig_thread_call_ok(t, got[i], "gettid", &rv,
		    SYS_gettid, (sysargs){ 0 }, &cause) == 0, "%s", cause);
		ck_assert_int_eq(rv, got[i]);
	}
	ck_assert_int_eq(mig_thread_here(t, 1), -1);
	fd = buf_fd(NULL, 0);
	ck_assert_msg(mig_dump(t, fd, 0, NULL, &cause) == 0, "%s", cause);
	ck_assert_msg(mig_release(t, &cause) == 0, "%s", cause);
	ck_assert_int_eq(kill(pid, 0), 0);

	lseek(fd, 0, SEEK_SET);
	ck_assert_msg(mig_image_load(fd, &mi, &cause) == 0, "%s", cause);
	close(fd);
	ck_assert_uint_eq(mi.nthreads, 4);
	ck_assert_int_eq(mi.header->threads, 4);
	ck_assert_int_eq(mi.threads[0]->tid, pid);
	for (i = 1; i < 4; i++) {
		ck_assert_int_eq(mi.threads[i]->tid, tids[i - 1]);
		snprintf(name, sizeof name, "w%zu", i - 1);
		ck_assert_str_eq(mi.threads[i]->comm, name);
		ck_assert_uint_eq(mi.threads[i]->blocked &
		    (1ULL << (SIGUSR2 - 1)), (i - 1) % 2 == 1 ?
		    1ULL << (SIGUSR2 - 1) : 0);
		/* Each with its own TLS, rseq area, robust list, tid word. */
		for (j = 0; j < i; j++) {
			ck_assert_uint_ne(mi.threads[i]->regs->gp->fs_base,
			    mi.threads[j]->regs->gp->fs_base);
			ck_assert_uint_ne(mi.threads[i]->rseq_addr,
			    mi.threads[j]->rseq_addr);
			ck_assert_uint_ne(mi.threads[i]->robust_list,
			    mi.threads[j]->robust_list);
			ck_assert_uint_ne(mi.threads[i]->clear_child_tid,
			    mi.threads[j]->clear_child_tid);
		}
		ck_assert(mi.threads[i]->has_rseq_addr);
		ck_assert_uint_ne(mi.threads[i]->clear_child_tid, 0);
		/* In pause(), to be restarted. */
		ck_assert_int_eq(mi.threads[i]->regs->restart,
		    OSM__IMG_RESTART__RESTART_SAME);
	}
	ck_assert(mig_image_keeps_ids(&mi));
	mig_image_free(&mi);
	kid_end(pid);
}
END_TEST

/* A thread on its way out: dead or a zombie, or gone. */
static int
thread_ended(pid_t pid, pid_t tid)
{
	char	path[96], buf[512], *p;

	snprintf(path, sizeof path, "/proc/%d/task/%d/stat", pid, tid);
	if (read_file_str(path, buf, sizeof buf) == -1 ||
	    (p = strrchr(buf, ')')) == NULL)
		return 1;
	return p[2] == 'Z' || p[2] == 'X';
}

static void *
churn_short(void *arg)
{
	usleep(2000);
	return arg;
}

/*
 * Seized while it makes and ends threads all the time: every seize takes
 * the threads there are, none left running, and the dump goes through.
 */
START_TEST(test_seize_churn)
{
	struct mig_task	*t;
	struct dirent	*e;
	DIR		*d;
	char		*cause = NULL, path[64];
	pthread_t	 th[4];
	pid_t		 pid, tid, got[64];
	size_t		 n, j;
	int		 i, fd, st;

	if ((pid = fork()) == 0) {
		close_range(0, ~0U, 0);
		for (;;) {
			for (i = 0; i < 4; i++)
				pthread_create(&th[i], NULL, churn_short, NULL);
			for (i = 0; i < 4; i++)
				pthread_join(th[i], NULL);
		}
	}
	usleep(50000);
	for (i = 0; i < 40; i++) {
		t = mig_seize(pid, &cause);
		ck_assert_msg(t != NULL, "seize %d: %s", i, cause);
		n = mig_threads(t, got, nitems(got));
		ck_assert_uint_ge(n, 1);
		ck_assert_uint_le(n, nitems(got));
		/* Every thread there is held: none made meanwhile runs free. */
		snprintf(path, sizeof path, "/proc/%d/task", pid);
		ck_assert_ptr_nonnull(d = opendir(path));
		while ((e = readdir(d)) != NULL) {
			if ((tid = strtol(e->d_name, NULL, 10)) <= 0 ||
			    thread_ended(pid, tid))
				continue;
			for (j = 0; j < n && got[j] != tid; j++)
				;
			ck_assert_msg(j < n, "seize %d: thread %d not held",
			    i, tid);
		}
		closedir(d);
		fd = buf_fd(NULL, 0);
		ck_assert_msg(mig_dump(t, fd, 0, NULL, &cause) == 0, "dump %d: "
		    "%s", i, cause);
		close(fd);
		ck_assert_msg(mig_release(t, &cause) == 0, "%s", cause);
		usleep(5000);
	}
	/* Still making threads, and traced by nobody. */
	snprintf(path, sizeof path, "/proc/%d/status", pid);
	ck_assert_int_eq(waitpid(pid, &st, WNOHANG), 0);
	ck_assert_int_eq(proc_status(pid, "TracerPid", path, sizeof path), 0);
	ck_assert_str_eq(path, "0");
	kid_end(pid);
}
END_TEST

/* A loop that uses no stack: code of ours for a thread to run. */
extern char spin_loop[];
__asm__(".text\n.globl spin_loop\nspin_loop: jmp spin_loop\n");

/*
 * Per-thread calls on a held task: a thread made (its id the kernel's
 * choice), code of ours run in it and interrupted, calls refused while it
 * runs, the thread ended; the process goes on as it was.
 */
START_TEST(test_thread_calls)
{
	struct user_regs_struct	 r;
	struct mig_task		*t;
	char			*cause = NULL, path[64];
	pid_t			 pid, tid, got[4];
	long			 rv;

	t = seized_child(&pid);
	ck_assert_msg(mig_thread_new(t, 0, &tid, &cause) == 0, "%s", cause);
	ck_assert_int_ne(tid, pid);
	ck_assert_uint_eq(mig_threads(t, got, nitems(got)), 2);
	snprintf(path, sizeof path, "/proc/%d/task/%d", pid, tid);
	ck_assert_int_eq(access(path, F_OK), 0);
	ck_assert_msg(mig_thread_jump(t, tid, (uint64_t)spin_loop, 0,
	    &cause) == 0, "%s", cause);
	ck_assert_int_eq(mig_thread_call(t, tid, &rv, SYS_getpid,
	    (sysargs){ 0 }, &cause), -1);
	ck_assert_ptr_nonnull(strstr(cause, "is running"));
	free(cause);
	cause = NULL;
	/* The other thread is held meanwhile. */
	ck_assert_msg(mig_call_ok(t, "getpid", &rv, SYS_getpid,
	    (sysargs){ 0 }, &cause) == 0, "%s", cause);
	ck_assert_int_eq(rv, pid);
	usleep(20000);
	ck_assert_msg(mig_thread_interrupt(t, tid, &cause) == 0, "%s", cause);
	/* Where it was running, and apart from that what it resumes with. */
	ck_assert_int_eq(ptrace(PTRACE_GETREGS, mig_thread_here(t, tid), 0,
	    &r), 0);
	ck_assert_uint_eq(r.rip, (uint64_t)spin_loop);
	ck_assert_msg(mig_thread_regs(t, tid, &r, &cause) == 0, "%s", cause);
	ck_assert_uint_ne(r.rip, (uint64_t)spin_loop);
	ck_assert_msg(mig_thread_exit(t, tid, &cause) == 0, "%s", cause);
	ck_assert_int_eq(access(path, F_OK), -1);
	ck_assert_uint_eq(mig_threads(t, got, nitems(got)), 1);
	ck_assert_int_eq(mig_thread_exit(t, pid, &cause), -1);
	free(cause);
	cause = NULL;
	ck_assert_msg(mig_release(t, &cause) == 0, "%s", cause);
	ck_assert_int_eq(kill(pid, 0), 0);
	kid_end(pid);
}
END_TEST

/* Restore the image on fd in a PID namespace of ours; 0 if it exits 0. */
static int
restore_apart(int fd)
{
	struct mig_task	*t;
	struct mig_image mi;
	char		*cause = NULL;
	pid_t		 pid;
	int		 st;

	if (mig_pidns(&cause) == -1 ||
	    mig_restore_begin(fd, &mi, &cause) == -1 ||
	    !mig_image_keeps_ids(&mi) ||
	    (t = mig_spawn_pid(mi.header->pid, &cause)) == NULL ||
	    mig_restore_from(t, &mi, NULL, NULL, &cause) == -1) {
		fprintf(stderr, "restore: %s\n", cause);
		return 1;
	}
	mig_image_free(&mi);
	pid = mig_pid(t);
	if (mig_release(t, &cause) == -1) {
		fprintf(stderr, "release: %s\n", cause);
		return 1;
	}
	if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) ||
	    WEXITSTATUS(st) != 0)
		return 2;
	return 0;
}

/*
 * A child of 3 threads, dumped asleep and killed, restored in a PID
 * namespace of ours with its pid and every tid: each thread finds its tid
 * and TLS value as they were, main joins them all (pthread_join waits on
 * the tids glibc cached) and the process exits 0. Without a pid to
 * choose, the same image is refused.
 */
START_TEST(test_restore_threads)
{
	struct mig_task	*t;
	pid_t		 tids[3], pid, kid;
	char		*cause = NULL;
	int		 fd, st;

	pid = kid_start(3, 600, tids);
	t = mig_seize(pid, &cause);
	ck_assert_msg(t != NULL, "%s", cause);
	fd = buf_fd(NULL, 0);
	ck_assert_msg(mig_dump(t, fd, 0, NULL, &cause) == 0, "%s", cause);
	mig_kill(t);
	ck_assert_int_eq(waitpid(pid, NULL, WNOHANG), pid);

	lseek(fd, 0, SEEK_SET);
	t = mig_spawn(&cause);
	ck_assert_msg(t != NULL, "%s", cause);
	ck_assert_int_eq(mig_restore(t, fd, NULL, NULL, &cause), -1);
	ck_assert_msg(strstr(cause, "only be restored as pid") != NULL, "%s",
	    cause);
	free(cause);
	cause = NULL;
	mig_kill(t);

	/*
	 * Apart, in a child that ends with _exit: a PID namespace for the
	 * children of a process takes LeakSanitizer's, which stops a process
	 * at its exit() by a child tracer, to where it cannot see it.
	 */
	lseek(fd, 0, SEEK_SET);
	if ((kid = fork()) == 0)
		_exit(restore_apart(fd));
	ck_assert_int_eq(waitpid(kid, &st, 0), kid);
	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the restored "
	    "process: status 0x%x (1: restore failed, 2: it did not exit 0)",
	    st);
	close(fd);
}
END_TEST

/*
 * Post-copy's target side on an area of our own: pages put in whole,
 * a page already there left as it is and counted, answers and pushes
 * told apart, pieces that are not whole pages refused with a reason, and
 * the rest left to the kernel (zeros) once the userfaultfd is closed.
 */
START_TEST(test_fetch)
{
	struct uffdio_api	 api = { .api = UFFD_API };
	struct uffdio_register	 reg;
	const struct mig_fetch_stats *st;
	struct mig_fetch	*f;
	uint8_t			*area, buf[2 * 4096];
	char			*cause = NULL;
	int			 uffd;

	uffd = syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK |
	    UFFD_USER_MODE_ONLY);
	ck_assert_int_ge(uffd, 0);
	ck_assert_int_eq(ioctl(uffd, UFFDIO_API, &api), 0);
	area = mmap(NULL, 4 * 4096, PROT_READ | PROT_WRITE,
	    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ck_assert_ptr_ne(area, MAP_FAILED);
	memset(&reg, 0, sizeof reg);
	reg.range.start = (uintptr_t)area;
	reg.range.len = 4 * 4096;
	reg.mode = UFFDIO_REGISTER_MODE_MISSING;
	ck_assert_int_eq(ioctl(uffd, UFFDIO_REGISTER, &reg), 0);
	f = mig_fetch_new(uffd);

	memset(buf, 'a', sizeof buf);
	ck_assert_int_eq(mig_fetch_copy(f, (uintptr_t)area, buf, sizeof buf,
	    1, &cause), 0);
	memset(buf, 'b', sizeof buf);
	ck_assert_int_eq(mig_fetch_copy(f, (uintptr_t)area + 4096, buf,
	    sizeof buf, 0, &cause), 0);
	ck_assert_int_eq(mig_fetch_copy(f, (uintptr_t)area + 1, buf, 4096, 0,
	    &cause), -1);
	ck_assert_ptr_nonnull(strstr(cause, "not whole pages"));
	free(cause);
	cause = NULL;
	ck_assert_int_eq(mig_fetch_copy(f, (uintptr_t)area, buf, 0, 0,
	    &cause), -1);
	free(cause);
	st = mig_fetch_stats(f);
	ck_assert_uint_eq(st->fault_pages, 2);
	ck_assert_uint_eq(st->pushed_pages, 1);	/* page 2; page 1 there */
	ck_assert_uint_eq(st->there, 1);
	ck_assert_int_eq(area[0], 'a');
	ck_assert_int_eq(area[4096 + 100], 'a');
	ck_assert_int_eq(area[2 * 4096], 'b');
	mig_fetch_free(f);
	ck_assert_int_eq(area[3 * 4096], 0);
	munmap(area, 4 * 4096);
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
	tcase_add_test(tc, test_dump_ending);
	tcase_add_test(tc, test_other_fds);
	tcase_add_test(tc, test_every_truncation);
	tcase_add_test(tc, test_every_corruption);
	tcase_add_test(tc, test_foreign);
	tcase_add_test(tc, test_runs);
	tcase_add_test(tc, test_runs_kept);
	tcase_add_test(tc, test_hostile_length);
	tcase_add_test(tc, test_pages_outside);
	tcase_add_test(tc, test_thread_records);
	tcase_add_test(tc, test_seized_end_left);
	tcase_add_test(tc, test_fetch);
	suite_add_tcase(s, tc);

	tc = tcase_create("threads");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_seize_threads);
	tcase_add_test(tc, test_seize_churn);
	tcase_add_test(tc, test_thread_calls);
	tcase_add_test(tc, test_restore_threads);
	suite_add_tcase(s, tc);
	check_migrate_track(s);
	check_migrate_post(s);
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
