/*
 * The network process's loop, timed. One thread answers every tool, peer
 * and agent, so a callback that runs long holds every answer behind it:
 * what each loop iteration's callbacks took together is measured around
 * libev's own invocation of them (ev_set_invoke_pending_cb), and each
 * callback names itself on entry (looptime_mark) so that a slow iteration
 * says which one took longest. Iterations whose callbacks took
 * LOOPTIME_SLOW_MS or more are counted (loop_slow_iterations) and logged,
 * at most a few every 10 s, with the wall time, the CPU time the thread
 * spent in them, how often it slept in a call (waits) and how often the
 * scheduler took the core from it (preemptions), and the longest
 * callback; the longest iteration so far is loop_longest_ms. Those slow
 * by the loop's own doing are counted apart: loop_slow_waited, it slept
 * in a call (a read that blocks: nothing in the loop may), and
 * loop_slow_busy, its own CPU time was LOOPTIME_SLOW_MS or more (work
 * that must be bounded or spread); the rest waited for a core, which
 * looptime_run_delay measures. One clock reading per callback, one
 * getrusage (two if slow) and one read of the thread's schedstat per
 * iteration: cheap enough to stay.
 */
#include <sys/resource.h>

#include <fcntl.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include "mosd.h"

static uint64_t
looptime_ns(clockid_t clock)
{
	struct timespec	ts;

	clock_gettime(clock, &ts);
	return (uint64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* The thread's CPU time in a getrusage, in microseconds. */
static uint64_t
looptime_us(const struct rusage *ru)
{
	return (uint64_t)(ru->ru_utime.tv_sec + ru->ru_stime.tv_sec) *
	    1000000 + ru->ru_utime.tv_usec + ru->ru_stime.tv_usec;
}

/* The callback running now has ended (at now): is it the longest? */
static void
looptime_close(struct looptime *lt, uint64_t now)
{
	if (lt->mark != NULL && now - lt->mark_ns > lt->longest_ns) {
		lt->longest_ns = now - lt->mark_ns;
		lt->longest = lt->mark;
	}
	lt->mark = NULL;
}

/*
 * How long the thread waited for a core (the scheduler's run_delay, in
 * /proc/thread-self/schedstat) since the last iteration began: woken
 * by a request and not yet run, or preempted. Not the loop's doing; but
 * what a tool waits for all the same, so counted (loop_core_waits, 25 ms
 * or more; loop_core_wait_longest_ms) and logged, for a slow answer
 * that no slow iteration explains.
 */
static void
looptime_run_delay(struct mosd *m, struct looptime *lt)
{
	static struct log_limit	 looptime_core_log;
	char			 buf[96];
	unsigned long long	 cpu, delay;
	uint64_t		 ms;
	ssize_t			 n;

	if (lt->schedstat == -1 ||
	    (n = pread(lt->schedstat, buf, sizeof buf - 1, 0)) <= 0)
		return;
	buf[n] = '\0';
	if (sscanf(buf, "%llu %llu", &cpu, &delay) != 2)
		return;
	ms = lt->run_delay != 0 && delay > lt->run_delay ?
	    (delay - lt->run_delay) / 1000000 : 0;
	lt->run_delay = delay;
	if (ms > m->counters[C_LOOP_CORE_LONGEST_MS])
		m->counters[C_LOOP_CORE_LONGEST_MS] = ms;
	if (ms < LOOPTIME_SLOW_MS)
		return;
	m->counters[C_LOOP_CORE_WAITS]++;
	log_limited_info(&looptime_core_log, 0, "loop: waited %llu ms for a "
	    "core since the last iteration began", (unsigned long long)ms);
}

static void
looptime_invoke(struct ev_loop *loop)
{
	static struct log_limit	 looptime_log;
	struct mosd		*m = ev_userdata(loop);
	struct looptime		*lt = &m->looptime;
	struct rusage		 ru0, ru1;
	uint64_t		 start, end, ms, cpu;

	start = looptime_ns(CLOCK_MONOTONIC);
	getrusage(RUSAGE_THREAD, &ru0);
	looptime_run_delay(m, lt);
	lt->mark = NULL;
	lt->longest = NULL;
	lt->longest_ns = 0;
	lt->ncallbacks = 0;
	ev_invoke_pending(loop);
	end = looptime_ns(CLOCK_MONOTONIC);
	looptime_close(lt, end);
	m->counters[C_LOOP_ITERATIONS]++;
	ms = (end - start) / 1000000;
	if (ms > m->counters[C_LOOP_LONGEST_MS])
		m->counters[C_LOOP_LONGEST_MS] = ms;
	if (ms < LOOPTIME_SLOW_MS)
		return;
	m->counters[C_LOOP_SLOW]++;
	getrusage(RUSAGE_THREAD, &ru1);
	cpu = looptime_us(&ru1) - looptime_us(&ru0);
	/* Its own doing: it slept in a call, or worked that long. */
	if (ru1.ru_nvcsw != ru0.ru_nvcsw)
		m->counters[C_LOOP_SLOW_WAITED]++;
	if (cpu >= LOOPTIME_SLOW_MS * 1000)
		m->counters[C_LOOP_SLOW_BUSY]++;
	log_limited_warnx(&looptime_log, 0, "loop: an iteration's %u "
	    "callbacks took %llu ms (%llu ms CPU, %ld waits, %ld preemptions, "
	    "%ld page faults read from disk), the longest %s, %llu ms",
	    lt->ncallbacks, (unsigned long long)ms,
	    (unsigned long long)(cpu / 1000), ru1.ru_nvcsw - ru0.ru_nvcsw,
	    ru1.ru_nivcsw - ru0.ru_nivcsw, ru1.ru_majflt - ru0.ru_majflt,
	    lt->longest != NULL ?
	    lt->longest : "unnamed",
	    (unsigned long long)(lt->longest_ns / 1000000));
}

/* Called first in each callback of the loop: what runs from now on. */
void
looptime_mark(struct ev_loop *loop, const char *what)
{
	struct mosd	*m = ev_userdata(loop);
	struct looptime	*lt;
	uint64_t	 now;

	if (m == NULL)
		return;		/* a loop not timed: a unit test's */
	lt = &m->looptime;
	now = looptime_ns(CLOCK_MONOTONIC);
	looptime_close(lt, now);
	lt->mark = what;
	lt->mark_ns = now;
	lt->ncallbacks++;
}

void
looptime_start(struct mosd *m)
{
	m->looptime.schedstat = open("/proc/thread-self/schedstat",
	    O_RDONLY | O_CLOEXEC);
	ev_set_userdata(m->loop, m);
	ev_set_invoke_pending_cb(m->loop, looptime_invoke);
}
