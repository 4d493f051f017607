/*
 * A tool's steps timed, to find where a slow start of a tool goes
 * (tests/lab/load.py). With OSM_TOOL_TIMES=NS in the environment (the
 * CLOCK_MONOTONIC nanoseconds at which the caller started the tool),
 * each step marked records the time, how long the process has waited for
 * a core so far (/proc/self/schedstat) and its context switches; at exit
 * one line on stderr gives each step's time since the start, in ms:
 *   toolclock: pid 42 at 2490.116723 main 1.2 (cpu 1.0 wait 0.1, 0 1,
 *   disk 0 0, on 1) connected 1.5 (...) ... exit 2.0 (...)
 * with, so far at that step, the CPU time (the child side of the
 * fork included), the time waited for a core, the voluntary switches
 * (sleeps) and preemptions, the page faults read from disk and the
 * 512-byte blocks read, and the core it is on. Without the variable a
 * mark costs a test of one flag.
 */
#include <sys/resource.h>

#include <fcntl.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "osm.h"

#define TOOLCLOCK_MARKS	16

struct toolclock_mark {
	const char	*what;
	uint64_t	 at_ns;		/* CLOCK_MONOTONIC */
	uint64_t	 wait_ns;	/* schedstat run_delay */
	uint64_t	 cpu_ns;	/* CLOCK_THREAD_CPUTIME_ID */
	long		 nvcsw, nivcsw;
	long		 majflt, inblock;	/* reads from disk */
	int		 core;		/* the core it ran on */
};

static struct toolclock_mark	toolclock_marks[TOOLCLOCK_MARKS];
static int			toolclock_n = -1;	/* -1: off */
static uint64_t			toolclock_start;

static uint64_t
toolclock_now(void)
{
	struct timespec	ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

void
toolclock_mark(const char *what)
{
	struct toolclock_mark	*k;
	struct rusage		 ru;
	unsigned long long	 wait = 0;
	struct timespec		 ts;
	char			 buf[128];
	ssize_t			 n;
	int			 fd;

	if (toolclock_n < 0 || toolclock_n >= TOOLCLOCK_MARKS)
		return;
	k = &toolclock_marks[toolclock_n++];
	k->what = what;
	k->at_ns = toolclock_now();
	if ((fd = open("/proc/thread-self/schedstat", O_RDONLY |
	    O_CLOEXEC)) != -1) {
		if ((n = read(fd, buf, sizeof buf - 1)) > 0) {
			buf[n] = '\0';
			/* time on a core (as of the last switch), waited */
			sscanf(buf, "%*u %llu", &wait);
		}
		close(fd);
	}
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	k->cpu_ns = (uint64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
	k->wait_ns = wait;
	getrusage(RUSAGE_THREAD, &ru);
	k->nvcsw = ru.ru_nvcsw;
	k->nivcsw = ru.ru_nivcsw;
	k->majflt = ru.ru_majflt;
	k->inblock = ru.ru_inblock;
	k->core = sched_getcpu();
}

static void
toolclock_print(void)
{
	const struct toolclock_mark	*k;
	char				 line[2048];
	size_t				 len;
	int				 i;

	toolclock_mark("exit");
	len = snprintf(line, sizeof line, "toolclock: pid %ld at %.6f",
	    (long)getpid(), toolclock_start / 1e9);
	for (i = 0; i < toolclock_n && len < sizeof line; i++) {
		k = &toolclock_marks[i];
		len += snprintf(line + len, sizeof line - len,
		    " %s %.1f (cpu %.1f wait %.1f, %ld %ld, disk %ld %ld, "
		    "on %d)", k->what, (k->at_ns - toolclock_start) / 1e6,
		    k->cpu_ns / 1e6, k->wait_ns / 1e6, k->nvcsw, k->nivcsw,
		    k->majflt, k->inblock, k->core);
	}
	if (len < sizeof line)
		dprintf(2, "%s\n", line);
}

/* Before main: the first mark, once the dynamic libraries are loaded. */
static void __attribute__((constructor))
toolclock_init(void)
{
	const char	*v = getenv("OSM_TOOL_TIMES");

	if (v == NULL)
		return;
	toolclock_start = strtoull(v, NULL, 10);
	/* for this program only, not for those it starts */
	unsetenv("OSM_TOOL_TIMES");
	if (toolclock_start == 0)
		return;
	toolclock_n = 0;
	toolclock_mark("main");
	atexit(toolclock_print);
}
