/*
 * check_mosd's probe thread (mosd/probe-thread.c): a sample whose read of
 * a task's stat file waits does not hold the loop. The fake /proc holds a
 * FIFO where a task's stat file would be, so that the sample's open of it
 * waits until the test's writer opens it 300 ms later; meanwhile a 10 ms
 * timer must keep firing, and the sample must still come in, counting
 * the FIFO's task. Sampled in the loop (no thread), the loop stops for
 * those 300 ms and the test fails. Part of the check_mosd binary.
 */
#include <sys/stat.h>

#include <check.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mosd/mosd.h"

void	 check_mosd_probe_thread(Suite *s);

static char	 pt_root[64];
static char	 pt_fifo[128];
static uint64_t	 pt_last, pt_gap, pt_ticks;

void	 check_probe_put(const char *top, const char *rel,
	    const char *content);

static void
pt_put(const char *rel, const char *content)
{
	check_probe_put(pt_root, rel, content);
}

/* 300 ms on, the writer the sample's open waits for. */
static void *
pt_writer(void *arg)
{
	const char	*line = "12 (z) R 1 1 1\n";
	int		 fd;

	usleep(300 * 1000);
	if ((fd = open(pt_fifo, O_WRONLY)) != -1) {
		write(fd, line, strlen(line));
		close(fd);
	}
	return NULL;
}

static void
pt_tick_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	uint64_t	now = now_ms();

	if (pt_last != 0 && now - pt_last > pt_gap)
		pt_gap = now - pt_last;
	pt_last = now;
	pt_ticks++;
}

static void
pt_ask_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	probe_thread_ask(w->data);
}

static void
pt_end_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	ev_break(loop, EVBREAK_ALL);
}

START_TEST(test_probe_thread_waits_apart)
{
	struct mosd	 m;
	ev_timer	 tick, ask, end;
	pthread_t	 writer;
	char		*cause = NULL, cmd[128];

	strcpy(pt_root, "/tmp/check_mosd.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(pt_root));
	pt_put("/sys/devices/system/cpu/online", "0-3\n");
	pt_put("/proc/meminfo", "MemTotal:       8000000 kB\n"
	    "MemFree:        1000000 kB\nMemAvailable:   6000000 kB\n");
	pt_put("/proc/10/task/10/stat", "10 (a) R 1 1 1\n");
	pt_put("/proc/11/task/11/stat", "11 (b) R 1 1 1\n");
	pt_put("/proc/self/status", "\n");
	memset(&m, 0, sizeof m);
	ck_assert_msg(probe_init(&m.probe, pt_root, 100, 0, &cause) == 0,
	    "probe_init: %s", cause);
	/* Task 12's stat, a FIFO: opening it waits for pt_writer. */
	snprintf(pt_fifo, sizeof pt_fifo, "%s/proc/12/task/12/stat", pt_root);
	snprintf(cmd, sizeof cmd, "%s/proc/12/task/12", pt_root);
	ck_assert_int_eq(mkdir_p(cmd, 0755), 0);
	ck_assert_int_eq(mkfifo(pt_fifo, 0600), 0);

	m.loop = ev_loop_new(EVFLAG_AUTO);
	probe_thread_start(&m);
	ev_timer_init(&tick, pt_tick_cb, 0.01, 0.01);
	ev_timer_init(&ask, pt_ask_cb, 0.05, 0);
	ask.data = &m;
	ev_timer_init(&end, pt_end_cb, 0.7, 0);
	ev_timer_start(m.loop, &tick);
	ev_timer_start(m.loop, &ask);
	ev_timer_start(m.loop, &end);
	ck_assert_int_eq(pthread_create(&writer, NULL, pt_writer, NULL), 0);
	pt_last = pt_gap = pt_ticks = 0;
	ev_run(m.loop, 0);
	pthread_join(writer, NULL);
	probe_thread_stop(&m);

	/* The loop went on while the sample waited... */
	ck_assert_msg(pt_gap < 100, "the loop stood still %llu ms",
	    (unsigned long long)pt_gap);
	ck_assert_uint_gt(pt_ticks, 30);
	/* ... and the sample came in, the waited-for task counted. */
	ck_assert_uint_ne(m.probe.last_ms, 0);
	ck_assert_double_eq_tol(m.probe.runnable, 3, 0.01);
	ck_assert_int_eq(m.probe_thread.stop, 1);	/* it ran, and ended */
	ev_loop_destroy(m.loop);
	snprintf(cmd, sizeof cmd, "rm -rf %s", pt_root);
	ck_assert_int_eq(system(cmd), 0);
}
END_TEST

void
check_mosd_probe_thread(Suite *s)
{
	TCase	*tc = tcase_create("probe_thread");

	tcase_add_test(tc, test_probe_thread_waits_apart);
	suite_add_tcase(s, tc);
}
