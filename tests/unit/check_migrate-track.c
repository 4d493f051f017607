/* migrate/track.c: write tracking's scans, against the kernel's own. */
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <linux/userfaultfd.h>
#include <check.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>
#include "lib/osm.h"
#include "migrate/internal.h"
#include "tests/unit/check_migrate.h"
/*
 * track_scan while another thread writes and drops the memory it scans:
 * the kernel may end a walk (walk_end) short of regions it reported and
 * report them again from there; what comes out is still in order, each
 * page once, inside the range. (Before, such a region went in twice, and a
 * live dump of xz counted 10,356 pages in an area of 7,940.)
 */
#define SCAN_SIZE	(32UL << 20)
static volatile int	scan_stop;

static void *
scan_writer(void *arg)
{
	char		*m = arg;
	uint64_t	 x = 1;

	while (!scan_stop) {
		x = x * 6364136223846793005ULL + 1;
		m[((x >> 20) % SCAN_SIZE) & ~4095ULL] = (char)x;
		if ((x & 0xfff) == 0)
			madvise(m + (((x >> 24) % (SCAN_SIZE / 2)) & ~4095ULL),
			    1 << 20, MADV_DONTNEED);
	}
	return NULL;
}

START_TEST(test_track_scan_churn)
{
	struct uffdio_api	 api = { .api = UFFD_API,
				    .features = 1 << 15 /* WP_ASYNC */ };
	struct uffdio_register	 reg;
	struct runs		 out;
	pthread_t		 t;
	uint64_t		 start, end, deadline;
	char			*m, *cause = NULL;
	size_t			 i, scans = 0;
	int			 uffd, pm;

	m = mmap(NULL, SCAN_SIZE, PROT_READ | PROT_WRITE,
	    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ck_assert_ptr_ne(m, MAP_FAILED);
	memset(m, 1, SCAN_SIZE);
	uffd = syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK |
	    UFFD_USER_MODE_ONLY);
	ck_assert_int_ge(uffd, 0);
	ck_assert_int_eq(ioctl(uffd, UFFDIO_API, &api), 0);
	memset(&reg, 0, sizeof reg);
	reg.range.start = (uintptr_t)m;
	reg.range.len = SCAN_SIZE;
	reg.mode = UFFDIO_REGISTER_MODE_WP;
	ck_assert_int_eq(ioctl(uffd, UFFDIO_REGISTER, &reg), 0);
	pm = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
	ck_assert_int_ge(pm, 0);
	start = (uintptr_t)m;
	end = start + SCAN_SIZE;
	runs_init(&out);
	ck_assert_int_eq(pthread_create(&t, NULL, scan_writer, m), 0);
	deadline = now_ms() + 2000;
	while (now_ms() < deadline) {
		out.n = 0;
		ck_assert_msg(track_scan(pm, start, end, scans % 2 ?
		    TRACK_WRITTEN | TRACK_PROTECT | TRACK_CHECK :
		    TRACK_PRESENT, &out, &cause) == 0, "%s", cause);
		for (i = 0; i < out.n; i++) {
			ck_assert_uint_ge(out.r[i].start, start);
			ck_assert_uint_le(out.r[i].end, end);
			ck_assert_msg(i == 0 || out.r[i].start >
			    out.r[i - 1].end, "scan %zu: run %zu at %#llx "
			    "after %#llx-%#llx", scans, i,
			    (unsigned long long)out.r[i].start,
			    (unsigned long long)out.r[i - 1].start,
			    (unsigned long long)out.r[i - 1].end);
		}
		scans++;
	}
	scan_stop = 1;
	pthread_join(t, NULL);
	runs_free(&out);
	close(pm);
	close(uffd);
	munmap(m, SCAN_SIZE);
}
END_TEST

void
check_migrate_track(Suite *s)
{
	TCase	*tc = tcase_create("track");

	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_track_scan_churn);
	suite_add_tcase(s, tc);
}
