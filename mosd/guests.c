/*
 * Guest agents. For every process accepted from another node mosd starts
 * one: the mosd-guest program beside mosd (agent/guest.c), with the
 * session socket on fd 3 and a pipe carrying GuestStart on fd 4, under a
 * guest uid of its own from the configured range. The agent drops to that
 * uid before it reads a byte from the network, then serves the session.
 * mosd itself holds no process and forwards no call.
 *
 * And the memory guard's glue (the decision is mosd/guard.c): every
 * GUARD_INTERVAL_MS the node's memory and its guests' sizes are looked
 * at, and the guest the guard names is told to leave, as expelling tells
 * it, with the reason; the node's out-of-memory kills are counted and
 * logged.
 */
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mosd.h"
#include "proto/ctl.pb-c.h"
#include "proto/migrate.pb-c.h"

/* How guest agents end: the homes they serve may make many end at once. */
static struct log_limit guests_log;

/* A free slot of the guest uid range, or -1. */
static ssize_t
guests_slot(struct mosd *m)
{
	size_t	i;

	for (i = 0; i < m->nagent_slots; i++)
		if (m->guest_pids[i] == 0)
			return i;
	return -1;
}

static void
guests_child_cb(struct ev_loop *loop, ev_child *w, int revents)
{
	struct mosd	*m = w->data;
	size_t		 i;

	for (i = 0; i < m->nagent_slots; i++) {
		if (m->guest_pids[i] != w->rpid)
			continue;
		m->guest_pids[i] = 0;
		if (WIFSIGNALED(w->rstatus))
			log_limited_warnx(&guests_log, 0, "guest agent %d "
			    "(uid %u) died of signal %d", w->rpid,
			    m->conf->guest_uid_first + (unsigned)i,
			    WTERMSIG(w->rstatus));
		else if (WEXITSTATUS(w->rstatus) != 0)
			log_limited_warnx(&guests_log, 0, "guest agent %d "
			    "(uid %u) exited %d", w->rpid,
			    m->conf->guest_uid_first + (unsigned)i,
			    WEXITSTATUS(w->rstatus));
	}
}

/*
 * The guest agent's program, mosd-guest beside this mosd: checked at
 * start, so that a node that cannot take guests says so at once.
 */
int
guests_find(struct mosd *m, char **cause)
{
	char	*self, *slash;

	if ((self = realpath("/proc/self/exe", NULL)) == NULL) {
		xasprintf(cause, "/proc/self/exe: %s", strerror(errno));
		return -1;
	}
	if ((slash = strrchr(self, '/')) != NULL)
		*slash = '\0';
	xasprintf(&m->guest_exe, "%s/mosd-guest", self);
	free(self);
	if (access(m->guest_exe, X_OK) == -1) {
		xasprintf(cause, "cannot run the guest agent %s: %s",
		    m->guest_exe, strerror(errno));
		return -1;
	}
	return 0;
}

void
guests_init(struct mosd *m)
{
	m->nagent_slots = (size_t)(m->conf->guest_uid_last -
	    m->conf->guest_uid_first) + 1;
	m->guest_pids = xcalloc(m->nagent_slots, sizeof *m->guest_pids);
	ev_child_init(&m->child_ev, guests_child_cb, 0, 0);
	m->child_ev.data = m;
	ev_child_start(m->loop, &m->child_ev);
}

/*
 * Start the guest agent for an accepted offer on the session socket fd.
 * The socket stays ours to close; the agent has its own copy.
 */
int
guests_spawn(struct mosd *m, int fd, const uint8_t *key,
    const Osm__MigOffer *o, char **why)
{
	Osm__GuestStart	 gs = OSM__GUEST_START__INIT;
	uint8_t		 buf[OSM_GUEST_START_MAX];
	ssize_t		 slot;
	sigset_t	 none;
	size_t		 len;
	pid_t		 pid;
	int		 p[2], null;

	if ((slot = guests_slot(m)) == -1) {
		*why = xstrdup("this node runs as many guests as it has guest "
		    "uids");
		return -1;
	}
	gs.session_key.data = (uint8_t *)key;
	gs.session_key.len = SESSION_KEY_LEN;
	gs.self = m->conf->self;
	gs.home = o->home;
	gs.pid = o->pid;
	gs.owner_uid = o->uid;
	gs.user = o->user;
	gs.command = o->command;
	gs.guest_uid = m->conf->guest_uid_first + slot;
	gs.socket = m->conf->socket_path;
	if (m->probe.mem_cg[0] != '\0')
		gs.memory_cgroup = m->probe.mem_cg;
	gs.has_strict_files = 1;
	gs.strict_files = policy_rule(m->policy, o->user,
	    (const char *const *)o->groups, o->n_groups)->strict_files;
	gs.shared = m->conf->shared;
	gs.n_shared = m->conf->nshared;
	if ((len = osm__guest_start__get_packed_size(&gs)) > sizeof buf) {
		*why = xstrdup("offer too large");
		return -1;
	}
	osm__guest_start__pack(&gs, buf);

	if (pipe2(p, O_CLOEXEC) == -1) {
		xasprintf(why, "pipe: %s", strerror(errno));
		return -1;
	}
	switch (pid = fork()) {
	case -1:
		xasprintf(why, "fork: %s", strerror(errno));
		close(p[0]);
		close(p[1]);
		explicit_bzero(buf, sizeof buf);
		return -1;
	case 0:
		/* libev blocks the signals it watches: undo for the agent */
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		if ((null = open("/dev/null", O_RDONLY)) != -1)
			dup2(null, 0);
		if (dup2(fd, 3) == -1 || dup2(p[0], 4) == -1)
			_exit(127);
		close_range(5, ~0U, 0);
		execl(m->guest_exe, "mosd-guest", m->debug ? "-d" : "-q",
		    m->verbose ? "-v" : "-q", (char *)NULL);
		_exit(127);
	}
	close(p[0]);
	if (stream_write(p[1], buf, len) == -1)
		log_warn("guest agent %d: start message", pid);
	close(p[1]);
	explicit_bzero(buf, sizeof buf);
	m->guest_pids[slot] = pid;
	return 0;
}

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
