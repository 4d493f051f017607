/*
 * Guest agents, started by mosd's privileged parent (parent.c) for every
 * process the network process accepted from another node: the mosd-guest
 * program beside mosd (agent/guest.c), with the session socket on fd 3
 * and a pipe carrying GuestStart on fd 4, under a guest uid of the
 * configured range that this file chooses, one a running agent. The
 * agent drops to that uid before it reads a byte from the network, then
 * serves the session. mosd itself holds no process and forwards no call.
 */
#include <sys/resource.h>
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
static struct log_limit guests_log, guests_log_start;

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

/* Was pid a guest agent? Then its slot is free again: 1, else 0. */
int
guests_reaped(struct mosd *m, pid_t pid, int status)
{
	size_t	i;

	for (i = 0; i < m->nagent_slots; i++) {
		if (m->guest_pids[i] != pid)
			continue;
		m->guest_pids[i] = 0;
		if (WIFSIGNALED(status))
			log_limited_warnx(&guests_log, 0, "guest agent %d "
			    "(uid %u) died of signal %d", pid,
			    m->conf->guest_uid_first + (unsigned)i,
			    WTERMSIG(status));
		else if (WEXITSTATUS(status) != 0)
			log_limited_warnx(&guests_log, 0, "guest agent %d "
			    "(uid %u) exited %d", pid,
			    m->conf->guest_uid_first + (unsigned)i,
			    WEXITSTATUS(status));
		return 1;
	}
	return 0;
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
}

/*
 * Start the guest agent for an accepted offer, checked by the parent
 * (privmsg_check_guest), on the session socket fd, which stays the
 * caller's to close. Its pid and guest uid, or -1 and *why.
 */
int
guests_spawn(struct mosd *m, int fd, const struct privmsg_guest *g,
    pid_t *pidp, uid_t *uidp, char **why)
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
	gs.session_key.data = (uint8_t *)g->key;
	gs.session_key.len = SESSION_KEY_LEN;
	gs.self = m->conf->self;
	gs.home = g->home;
	gs.pid = g->pid;
	gs.owner_uid = g->owner_uid;
	gs.user = (char *)g->user;
	gs.command = (char *)g->command;
	gs.guest_uid = m->conf->guest_uid_first + slot;
	gs.socket = m->conf->socket_path;
	if (m->probe.mem_cg[0] != '\0')
		gs.memory_cgroup = m->probe.mem_cg;
	gs.has_strict_files = 1;
	gs.strict_files = g->strict_files;
	gs.shared = m->conf->shared;
	gs.n_shared = m->conf->nshared;
	if ((len = osm__guest_start__get_packed_size(&gs)) > sizeof buf) {
		*why = xstrdup("offer too large");
		return -1;
	}
	osm__guest_start__pack(&gs, buf);

	if (pipe2(p, O_CLOEXEC) == -1) {
		xasprintf(why, "pipe: %s", strerror(errno));
		explicit_bzero(buf, sizeof buf);
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
		setpriority(PRIO_PROCESS, 0, 0);	/* not mosd's MOSD_NICE */
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
	log_limited_info(&guests_log_start, g->home, "guest agent %d (uid %u) "
	    "started for %u@%u", pid, (unsigned)gs.guest_uid, g->pid, g->home);
	*pidp = pid;
	*uidp = gs.guest_uid;
	return 0;
}

