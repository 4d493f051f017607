/*
 * Guest agents, started by mosd's privileged parent (parent.c) for every
 * process the network process accepted from another node: the mosd-guest
 * program beside mosd (agent/guest.c), with a socket on fd 4 on which
 * GuestStart comes and, with it, the session socket; under a guest uid
 * of the configured range that this file chooses, one a running agent.
 * The agent drops to that uid before it reads a byte from the network,
 * then serves the session. GUESTS_SPARES agents are kept started
 * ahead, waiting on their fd 4 (the spares): an offer takes one, so that
 * its exec, its libraries and its cipher are not part of a move's start,
 * and the next is started a moment after (parent.c). mosd itself holds
 * no process and forwards no call.
 */
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include <arpa/inet.h>
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

	for (i = 0; i < GUESTS_SPARES; i++) {
		if (pid != m->guest_spare[i])
			continue;
		/* never given a process: the next offer starts one */
		log_limited_warnx(&guests_log, 0, "the spare guest agent %d "
		    "ended before it was needed", pid);
		close(m->guest_spare_sock[i]);
		m->guest_spare[i] = 0;
		m->guest_spare_sock[i] = -1;
		return 1;
	}
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
	size_t	i;

	m->nagent_slots = (size_t)(m->conf->guest_uid_last -
	    m->conf->guest_uid_first) + 1;
	m->guest_pids = xcalloc(m->nagent_slots, sizeof *m->guest_pids);
	for (i = 0; i < GUESTS_SPARES; i++) {
		m->guest_spare[i] = 0;
		m->guest_spare_sock[i] = -1;
	}
}

/*
 * Start mosd-guest, to wait for its start message on *sock (its fd 4):
 * its pid, or -1 and *why.
 */
static pid_t
guests_exec(struct mosd *m, int *sock, char **why)
{
	sigset_t	none;
	pid_t		pid;
	int		sp[2], null;

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp) == -1) {
		xasprintf(why, "socketpair: %s", strerror(errno));
		return -1;
	}
	switch (pid = fork()) {
	case -1:
		xasprintf(why, "fork: %s", strerror(errno));
		close(sp[0]);
		close(sp[1]);
		return -1;
	case 0:
		/* libev blocks the signals it watches: undo for the agent */
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		setpriority(PRIO_PROCESS, 0, 0);	/* not mosd's MOSD_NICE */
		if ((null = open("/dev/null", O_RDONLY)) != -1)
			dup2(null, 0);
		if ((sp[1] != 4 && dup2(sp[1], 4) == -1) ||
		    fcntl(4, F_SETFD, 0) == -1)
			_exit(127);
		close(3);
		close_range(5, ~0U, 0);
		execl(m->guest_exe, "mosd-guest", m->debug ? "-d" : "-q",
		    m->verbose ? "-v" : "-q", (char *)NULL);
		_exit(127);
	}
	close(sp[1]);
	*sock = sp[0];
	return pid;
}

/* Have the spare guest agents started that are not. */
void
guests_spare(struct mosd *m)
{
	char	*why = NULL;
	size_t	 i;
	pid_t	 pid;
	int	 sock;

	for (i = 0; i < GUESTS_SPARES; i++) {
		if (m->guest_spare[i] != 0)
			continue;
		if ((pid = guests_exec(m, &sock, &why)) == -1) {
			log_limited_warnx(&guests_log, 0, "no spare guest "
			    "agent: %s", why);
			free(why);
			return;
		}
		m->guest_spare[i] = pid;
		m->guest_spare_sock[i] = sock;
	}
}

/* The start message, packed, to the agent on sock, the session fd with it. */
static int
guests_give(int sock, const uint8_t *buf, size_t len, int fd)
{
	uint32_t	n = htonl(len);

	if (ctl_send_fd(sock, &n, sizeof n, fd) != sizeof n)
		return -1;
	return write_all(sock, buf, len);
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
	size_t		 len, i;
	pid_t		 pid;
	int		 sock;

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
	gs.has_owner_gid = 1;
	gs.owner_gid = g->owner_gid;
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

	/* a spare if there is one, else one started now */
	for (i = 0, pid = 0, sock = -1; i < GUESTS_SPARES && pid == 0; i++) {
		pid = m->guest_spare[i];
		sock = m->guest_spare_sock[i];
		m->guest_spare[i] = 0;
		m->guest_spare_sock[i] = -1;
	}
	if (pid != 0 && guests_give(sock, buf, len, fd) == -1) {
		log_limited_warnx(&guests_log, 0, "the spare guest agent %d: "
		    "%s; starting another", pid, strerror(errno));
		kill(pid, SIGKILL);
		close(sock);
		pid = 0;
	}
	if (pid == 0 && ((pid = guests_exec(m, &sock, why)) == -1 ||
	    guests_give(sock, buf, len, fd) == -1)) {
		if (pid != -1) {
			xasprintf(why, "the guest agent's start message: %s",
			    strerror(errno));
			kill(pid, SIGKILL);
			close(sock);
		}
		explicit_bzero(buf, sizeof buf);
		return -1;
	}
	close(sock);
	explicit_bzero(buf, sizeof buf);
	m->guest_pids[slot] = pid;
	log_limited_info(&guests_log_start, g->home, "guest agent %d (uid %u) "
	    "started for %u@%u", pid, (unsigned)gs.guest_uid, g->pid, g->home);
	*pidp = pid;
	*uidp = gs.guest_uid;
	return 0;
}

