/*
 * The load probe's samples, taken by a thread of the network process's
 * own. A sample reads a stat file of every task of the node (to count the
 * runnable ones, probe_count_runnable) and the node's cgroup files, and
 * such a read can sleep while the kernel holds that process or cgroup: in
 * bench/load one read of a job's shell, forking, took 554 ms and a
 * sample of 100 processes 812 ms with 6 ms of CPU (docs/RELIABILITY.md,
 * "The loop's own time"). Taken in the loop, that sleep held every tool's
 * answer, every peer's handshake and every agent's report behind it.
 *
 * So the probe timer only wakes the thread (an eventfd: a write that
 * never waits). The thread samples into a struct probe of its own, which
 * keeps the smoothing, and hands a copy over: it fills the slot only when
 * the loop has emptied it (state, 0 empty, 1 full) and then wakes the
 * loop through an ev_async, whose callback copies the slot into m->probe
 * and empties it. Neither thread ever waits for the other: no lock is
 * shared, and a sample made while the loop has not taken the last one is
 * kept in the thread's probe, handed over with the next. The thread
 * blocks every signal but the filter's SIGSYS and runs under the same
 * sandbox (the filter lets the network process clone threads, never a
 * process: sandbox.c).
 */
#include <sys/eventfd.h>

#include <errno.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "mosd.h"

static void *
probe_thread_main(void *arg)
{
	struct mosd		*m = arg;
	struct probe_thread	*pt = &m->probe_thread;
	uint64_t		 v;

	/* Not itself: always running while it counts. */
	pt->own.exclude = gettid();
	for (;;) {
		if (read(pt->wake, &v, sizeof v) == -1 && errno != EINTR)
			break;
		if (atomic_load(&pt->stop))
			break;
		probe_sample(&pt->own, now_ms());
		if (atomic_load(&pt->state) != 0)
			continue;	/* not taken yet: the next one */
		pt->slot = pt->own;
		atomic_store(&pt->state, 1);
		ev_async_send(m->loop, &pt->done);
	}
	return NULL;
}

/* A sample is in: the loop's probe, from now on. */
static void
probe_thread_done_cb(struct ev_loop *loop, ev_async *w, int revents)
{
	struct mosd		*m = w->data;
	struct probe_thread	*pt = &m->probe_thread;
	uint32_t		 speed = m->probe.speed;

	looptime_mark(loop, "probe");
	if (atomic_load(&pt->state) != 1)
		return;
	m->probe = pt->slot;
	/* Not the sample's: the loop's own, which SIGHUP's reload sets. */
	m->probe.speed = speed;
	m->probe.exclude = pt->loop_tid;
	atomic_store(&pt->state, 0);
}

/* From the probe timer: sample again, once the sample under way is in. */
void
probe_thread_ask(struct mosd *m)
{
	struct probe_thread	*pt = &m->probe_thread;
	uint64_t		 one = 1;

	if (!pt->running) {
		/* No thread (it could not start): sample here, as before. */
		probe_sample(&m->probe, now_ms());
		return;
	}
	if (write(pt->wake, &one, sizeof one) == -1)
		log_limited_warnx(&pt->log, 0, "probe: waking its thread: %s",
		    strerror(errno));
}

void
probe_thread_start(struct mosd *m)
{
	struct probe_thread	*pt = &m->probe_thread;
	sigset_t		 all, old;
	int			 error;

	pt->own = m->probe;
	pt->loop_tid = m->probe.exclude;
	atomic_init(&pt->state, 0);
	atomic_init(&pt->stop, 0);
	ev_async_init(&pt->done, probe_thread_done_cb);
	pt->done.data = m;
	ev_async_start(m->loop, &pt->done);
	if ((pt->wake = eventfd(0, EFD_CLOEXEC)) == -1) {
		log_warn("probe: eventfd: sampling in the loop");
		return;
	}
	/* Signals are the loop's; the filter's SIGSYS comes anyway. */
	sigfillset(&all);
	sigdelset(&all, SIGSYS);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	error = pthread_create(&pt->thread, NULL, probe_thread_main, m);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (error != 0) {
		log_warnx("probe: no thread of its own (%s): sampling in the "
		    "loop", strerror(error));
		close(pt->wake);
		return;
	}
	pt->running = 1;
}

void
probe_thread_stop(struct mosd *m)
{
	struct probe_thread	*pt = &m->probe_thread;
	uint64_t		 one = 1;

	ev_async_stop(m->loop, &pt->done);
	if (!pt->running)
		return;
	atomic_store(&pt->stop, 1);
	if (write(pt->wake, &one, sizeof one) == -1)
		log_warn("probe: stopping its thread");
	pthread_join(pt->thread, NULL);
	close(pt->wake);
	pt->running = 0;
}
