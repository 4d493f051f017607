/*
 * The memory guard's glue, in the network process (the decision is
 * mosd/guard.c): every GUARD_INTERVAL_MS the node's memory and its
 * guests' sizes are looked at, and the guest the guard names is told to
 * leave, as expelling tells it, with the reason; the node's out-of-memory
 * kills are counted and logged.
 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "mosd.h"
#include "proto/ctl.pb-c.h"

/* The resident size of a guest's running copy, bytes; 0 if unknown. */
static uint64_t
guests_rss(const struct mproc *mp)
{
	char		path[64], buf[128];
	unsigned long	pages = 0;

	if (mp->local_pid == 0)
		return 0;
	snprintf(path, sizeof path, "/proc/%u/statm", mp->local_pid);
	if (read_file_str(path, buf, sizeof buf) == -1 ||
	    sscanf(buf, "%*u %lu", &pages) != 1)
		return 0;
	return (uint64_t)pages * sysconf(_SC_PAGESIZE);
}

static struct log_limit guests_guard_log;

static void
guests_guard_done(struct mosd *m, void *arg, Osm__CtlReply *answer,
    const char *why)
{
	char	*what = arg;

	if (answer == NULL || !answer->ok)
		log_limited_warnx(&guests_guard_log, 0, "%s: %s", what,
		    answer == NULL ? why : answer->error != NULL ?
		    answer->error : "refused");
	free(what);
}

static void
guests_guard_send(struct mosd *m, struct mproc *mp, uint64_t rss)
{
	char	*reason, *what, *cause = NULL;

	xasprintf(&reason, "node %u is short of memory: %llu MiB free of "
	    "%llu, the process has %llu MiB", m->conf->self,
	    (unsigned long long)(m->probe.mem_free >> 20),
	    (unsigned long long)(m->probe.mem_total >> 20),
	    (unsigned long long)(rss >> 20));
	xasprintf(&what, "sending guest %u@%u home for memory", mp->pid,
	    mp->home);
	mp->guard_sent_ms = now_ms();
	if (procs_order_leave(m, mp, reason, guests_guard_done, what,
	    &cause) == -1) {
		log_limited_warnx(&guests_guard_log, 0, "%s: %s", what, cause);
		free(cause);
		free(what);
	} else {
		m->counters[C_GUARD_SENT]++;
		log_info("memory guard: guest %u@%u (%s) sent home: %s",
		    mp->pid, mp->home, mp->command != NULL ? mp->command : "?",
		    reason);
	}
	free(reason);
}

/* The kernel's out-of-memory kills here since the last look: logged. */
static void
guests_guard_kills(struct mosd *m)
{
	uint64_t	n;

	if (proc_oom_kills(m->probe.mem_cg, &n) == -1)
		return;
	if (m->oom_known && n > m->oom_kills) {
		m->counters[C_OOM_KILLS] += n - m->oom_kills;
		log_warnx("memory guard: the out-of-memory killer killed "
		    "%llu process(es) on this node", (unsigned long long)(n -
		    m->oom_kills));
	}
	m->oom_kills = n;
	m->oom_known = 1;
}

static void
guests_guard_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct mosd		*m = w->data;
	struct mproc		*mp, **mps;
	struct guard_guest	*gg;
	uint64_t		 now = now_ms(), rss;
	size_t			 n = 0;
	ssize_t			 k;

	looptime_mark(loop, "memory guard");

	guests_guard_kills(m);
	probe_sample_memory(&m->probe);
	TAILQ_FOREACH(mp, &m->procs, entry)
		n += mp->role == OSM__CTL_ROLE__ROLE_GUEST;
	mps = xcalloc(n + 1, sizeof *mps);
	gg = xcalloc(n + 1, sizeof *gg);
	n = 0;
	TAILQ_FOREACH(mp, &m->procs, entry) {
		if (mp->role != OSM__CTL_ROLE__ROLE_GUEST)
			continue;
		rss = guests_rss(mp);
		gg[n].rss = rss;
		gg[n].grown = mp->guard_rss != 0 && rss > mp->guard_rss ?
		    rss - mp->guard_rss : 0;
		mp->guard_rss = rss;
		/* One on its way in or out cannot be sent: as if told. */
		gg[n].sent = mp->state != OSM__PROC_STATE__PROC_RUNNING ||
		    (mp->guard_sent_ms != 0 &&
		    now - mp->guard_sent_ms < GUARD_PATIENCE_MS);
		mps[n++] = mp;
	}
	k = guard_sample(&m->guard, now, m->probe.mem_total,
	    m->probe.mem_free, gg, n);
	if (k >= 0)
		guests_guard_send(m, mps[k], gg[k].rss);
	free(gg);
	free(mps);
}

void
guests_guard_start(struct mosd *m)
{
	ev_timer_init(&m->guard_timer, guests_guard_cb, 0,
	    GUARD_INTERVAL_MS / 1000.0);
	m->guard_timer.data = m;
	ev_timer_start(m->loop, &m->guard_timer);
}
