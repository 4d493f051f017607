/*
 * Tracking what a process writes, from outside it (DESIGN.md section 7,
 * "Write tracking from outside the process"). This kernel has no
 * soft-dirty bits; a userfaultfd in write-protect mode with
 * UFFD_FEATURE_WP_ASYNC makes the kernel itself note the first write to
 * each protected page (no fault reaches us), and PAGEMAP_SCAN on
 * /proc/PID/pagemap finds those pages and protects them again in the same
 * call. Only the userfaultfd itself must be made inside the process, by
 * injection; we take it with pidfd_getfd. A process's own use of
 * userfaultfd is untouched: an area it registered itself is refused to
 * us (EBUSY), and such an area goes whole with the description.
 */
#include <sys/syscall.h>

#include <linux/userfaultfd.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/osm.h"
#include "internal.h"

#ifndef UFFD_FEATURE_WP_ASYNC
#define UFFD_FEATURE_WP_ASYNC	(1 << 15)
#endif

/*
 * Make a userfaultfd inside the held task t, for write tracking, and take
 * it: our descriptor, or -1 with *cause. The task's own is closed again.
 * Unprivileged (vm.unprivileged_userfaultfd is 0 here) it is allowed only
 * for faults from user space, which is all that tracking needs.
 */
int
mig_track_uffd(struct mig_task *t, char **cause)
{
	struct uffdio_api	 api;
	uint64_t		 saved = t->scratch;
	size_t			 saved_len = t->scratch_len;
	long			 rfd = -1;
	int			 ours = 0, pidfd = -1, fd = -1;

	if (saved == 0) {
		if (task_scratch(t, 0, MIG_PAGE, cause) == -1)
			return -1;
		ours = 1;
	}
	if (task_sys_ok(t, "userfaultfd", SYS_userfaultfd,
	    (sysargs){ O_CLOEXEC | O_NONBLOCK | UFFD_USER_MODE_ONLY }) == -1) {
		*cause = task_cause(t);
		goto out;
	}
	rfd = t->last_rv;
	memset(&api, 0, sizeof api);
	api.api = UFFD_API;
	api.features = UFFD_FEATURE_WP_ASYNC;
	if (task_write(t, t->scratch, &api, sizeof api, cause) == -1)
		goto out;
	if (task_sys_ok(t, "UFFDIO_API", SYS_ioctl,
	    (sysargs){ rfd, UFFDIO_API, t->scratch }) == -1) {
		*cause = task_cause(t);
		goto out;
	}
	if ((pidfd = syscall(SYS_pidfd_open, t->pid, 0)) == -1) {
		xasprintf(cause, "pidfd_open %ld: %s", (long)t->pid,
		    strerror(errno));
		goto out;
	}
	if ((fd = syscall(SYS_pidfd_getfd, pidfd, rfd, 0)) == -1)
		xasprintf(cause, "pidfd_getfd of the userfaultfd of process "
		    "%ld: %s", (long)t->pid, strerror(errno));
out:
	if (rfd != -1 && task_sys_ok(t, "close", SYS_close,
	    (sysargs){ rfd }) == -1 && fd != -1) {
		*cause = task_cause(t);
		close(fd);
		fd = -1;
	}
	if (ours) {
		task_unscratch(t, NULL);
		t->scratch = saved;
		t->scratch_len = saved_len;
	}
	if (pidfd != -1)
		close(pidfd);
	return fd;
}

struct mig_track *
mig_track_fd(pid_t pid, int uffd)
{
	struct mig_track	*k;

	k = xcalloc(1, sizeof *k);
	k->pid = pid;
	k->uffd = uffd;
	runs_init(&k->held);
	runs_init(&k->sent);
	return k;
}

/* A tracker of the held task t, its userfaultfd made inside it. */
struct mig_track *
mig_track_new(struct mig_task *t, char **cause)
{
	int	fd;

	if ((fd = mig_track_uffd(t, cause)) == -1)
		return NULL;
	return mig_track_fd(t->pid, fd);
}

/*
 * Closing the userfaultfd unregisters every area and drops the write
 * protection: the process goes on as if never tracked.
 */
void
mig_track_free(struct mig_track *k)
{
	if (k == NULL)
		return;
	close(k->uffd);
	runs_free(&k->held);
	runs_free(&k->sent);
	free(k);
}

/* A new stream: its target holds nothing yet. */
void
track_reset(struct mig_track *k)
{
	k->held.n = 0;
	k->sent.n = 0;
}

/* Register [start, end) for write tracking: 0, or -1 and errno. */
int
track_register(struct mig_track *k, uint64_t start, uint64_t end)
{
	struct uffdio_register	r;

	memset(&r, 0, sizeof r);
	r.range.start = start;
	r.range.len = end - start;
	r.mode = UFFDIO_REGISTER_MODE_WP;
	return ioctl(k->uffd, UFFDIO_REGISTER, &r);
}

int
track_pagemap(struct mig_track *k, char **cause)
{
	char	path[64];
	int	fd;

	snprintf(path, sizeof path, "/proc/%d/pagemap", (int)k->pid);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1)
		xasprintf(cause, "%s: %s", path, strerror(errno));
	return fd;
}

/*
 * Walk [start, end) of pagemap with PAGEMAP_SCAN as how asks (its flags
 * and masks), giving fn each region once, in order. The kernel may end a
 * walk (walk_end) before the end of regions it reported, and report them
 * again from there: what was seen is not given twice (out of order, it
 * made overlapping runs, and an image whose areas counted more pages than
 * they hold). 0, or -1 with *cause and errno (the ioctl's; EPROTO if a
 * walk made no progress).
 */
int
track_pm_scan(int pagemap, uint64_t start, uint64_t end,
    const struct pm_scan_arg *how, void (*fn)(void *, uint64_t, uint64_t,
    uint64_t), void *arg, char **cause)
{
	struct pm_region	 r[PM_NREGIONS];
	struct pm_scan_arg	 a;
	uint64_t		 pos = start, seen = start, s;
	int			 n, i, e;

	while (pos < end) {
		a = *how;
		a.size = sizeof a;
		a.start = pos;
		a.end = end;
		a.vec = (uintptr_t)r;
		a.vec_len = PM_NREGIONS;
		if ((n = ioctl(pagemap, PM_SCAN, &a)) == -1) {
			e = errno;
			xasprintf(cause, "PAGEMAP_SCAN: %s", strerror(e));
			errno = e;
			return -1;
		}
		for (i = 0; i < n; i++) {
			s = r[i].start > seen ? r[i].start : seen;
			if (r[i].end <= s)
				continue;
			fn(arg, s, r[i].end, r[i].categories);
			seen = r[i].end;
		}
		if (a.walk_end <= pos) {
			xasprintf(cause, "PAGEMAP_SCAN made no progress");
			errno = EPROTO;
			return -1;
		}
		pos = a.walk_end;
	}
	return 0;
}

/* A region of track_scan's walk: its pages, but the shared zero page's. */
static void
track_region(void *arg, uint64_t s, uint64_t e, uint64_t categories)
{
	if (!(categories & PM_PFNZERO))
		runs_add(arg, s, e);
}

/*
 * The pages of [start, end) that are written since they were last
 * protected (TRACK_WRITTEN; with TRACK_PROTECT protected again in the same
 * walk) or that hold data (TRACK_PRESENT: present or swapped), added to
 * out; pages of the shared zero page are left out. 1 if the area is not
 * registered with us (TRACK_CHECK asks), 0, or -1 with *cause.
 */
int
track_scan(int pagemap, uint64_t start, uint64_t end, int how,
    struct runs *out, char **cause)
{
	struct pm_scan_arg	 a;

	memset(&a, 0, sizeof a);
	if (how & TRACK_WRITTEN) {
		if (how & TRACK_CHECK)
			a.flags |= PM_SCAN_CHECK_WPASYNC;
		if (how & TRACK_PROTECT)
			a.flags |= PM_SCAN_WP_MATCHING;
		a.category_mask = PM_WRITTEN;
		/*
		 * Of pages that hold data only: a hole of an area we track
		 * reads as written until protected, and once protected
		 * (WP_ASYNC implies WP_UNPOPULATED) holds a marker that reads
		 * as a swapped page, so that every untouched page of a sparse
		 * area (a thread's stack) would go, and go again. Left alone,
		 * a hole stays one; a write makes it a page, present and
		 * written; a page that becomes a hole again (MADV_DONTNEED)
		 * is found by what was sent and is no longer present
		 * (precopy.c).
		 */
	}
	a.category_anyof_mask = PM_PRESENT | PM_SWAPPED;
	a.return_mask = PM_WRITTEN | PM_PRESENT | PM_SWAPPED | PM_PFNZERO;
	if (track_pm_scan(pagemap, start, end, &a, track_region, out,
	    cause) == 0)
		return 0;
	if (errno == EPERM && (how & TRACK_CHECK)) {
		free(*cause);
		*cause = NULL;
		return 1;
	}
	return -1;
}
