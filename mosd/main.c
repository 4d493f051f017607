/*
 * mosd: set up as root (config, key, policy, sockets, probe), drop every
 * capability but those that start guest agents, then become two
 * processes (docs/RELIABILITY.md): the privileged parent (parent.c), and
 * the network process, which enters its sandbox (sandbox.c) and runs the
 * event loop: a probe timer, a gossip timer, the balancer's timer, the
 * gossip socket, the broker's socket, the control socket and, if
 * cluster.conf asks for it, the web monitor (web.c).
 */
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/random.h>
#include <sys/socket.h>

#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/capability.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include "mosd.h"

#define PROBE_INTERVAL	0.5	/* seconds between load samples */

static void __attribute__((noreturn))
usage(int status)
{
	fprintf(status == 0 ? stdout : stderr,
	    "usage: mosd [-dnv] [-f file]\n"
	    "       mosd -K keyfile\n"
	    "The osmosis node daemon: measures this node's load, gossips it\n"
	    "with the other nodes and answers the local tools.\n"
	    "\n"
	    "  -d          stay in the foreground and log to stderr\n"
	    "  -f file     cluster configuration (default %s)\n"
	    "  -n          check the configuration, key and policy, then exit\n"
	    "  -v          verbose logging (with -d: every dropped datagram)\n"
	    "  -K keyfile  write a new random cluster key and exit\n"
	    "  -h, --help  this help\n"
	    "\n"
	    "Exit status: 0 on a clean stop or a good check, 1 on an error,\n"
	    "2 on a usage error.\n", OSM_CONF_PATH);
	exit(status);
}

/*
 * After set-up mosd keeps only what it takes to start a guest agent under
 * a guest uid: CAP_SETUID and CAP_SETGID, and, permitted but not
 * effective, CAP_SETPCAP, for the agent to empty its bounding set with
 * before it becomes the guest uid (agent/guest.c), so that the process it
 * runs holds no capability even in its bounding set, and CAP_SYS_RESOURCE,
 * for the agent to set its out-of-memory score and the floor under it,
 * if mosd had it (shielded, mosd_shield_oom). Everything else goes, from
 * the bounding set too, so nothing can come back through exec.
 */
static int
mosd_drop_caps(int shielded, char **cause)
{
	static const cap_value_t keep[] = { CAP_SETUID, CAP_SETGID };
	/* CAP_SYS_RESOURCE last: passed only if shielded */
	static const cap_value_t pass[] = { CAP_SETPCAP, CAP_SYS_RESOURCE };
	size_t	npass = nitems(pass) - (shielded ? 0 : 1);
	cap_t	caps;
	int	c;

	for (c = 0; c <= CAP_LAST_CAP; c++)
		if (c != CAP_SETUID && c != CAP_SETGID && c != CAP_SETPCAP &&
		    (c != CAP_SYS_RESOURCE || !shielded) &&
		    prctl(PR_CAPBSET_DROP, c, 0, 0, 0) == -1 && errno != EINVAL) {
			xasprintf(cause, "dropping capability %d from the "
			    "bounding set: %s", c, strerror(errno));
			return -1;
		}
	if ((caps = cap_init()) == NULL ||
	    cap_set_flag(caps, CAP_PERMITTED, nitems(keep), keep, CAP_SET) ||
	    cap_set_flag(caps, CAP_PERMITTED, npass, pass, CAP_SET) ||
	    cap_set_flag(caps, CAP_EFFECTIVE, nitems(keep), keep, CAP_SET) ||
	    cap_set_proc(caps) == -1) {
		xasprintf(cause, "dropping capabilities: %s", strerror(errno));
		if (caps != NULL)
			cap_free(caps);
		return -1;
	}
	cap_free(caps);
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == -1) {
		xasprintf(cause, "PR_SET_NO_NEW_PRIVS: %s", strerror(errno));
		return -1;
	}
	return 0;
}

static void
mosd_probe_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct mosd	*m = w->data;

	looptime_mark(loop, "probe");

	probe_thread_ask(m);
}

/* Say what the log limits held back in the windows that ended. */
static void
mosd_log_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	looptime_mark(loop, "log flush");
	sandbox_report();
	log_limit_flush();
}

/*
 * As many descriptors as the system lets us: every client, link and
 * order holds one (control.c sizes its quotas on what this gives).
 */
static void
mosd_raise_nofile(void)
{
	struct rlimit	rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

/*
 * mosd answers its peers' gossip and handshakes and its users' tools. On a
 * node busy with its own work and many moves at once, a daemon of the same
 * weight as each runnable process waits its turn behind them all: 130 to
 * 600 ms for an answer in bench/load, slow to its users and, for gossip,
 * late enough to look dead to its peers. So it runs at nice MOSD_NICE (the
 * network process too, forked from it); guests_spawn puts the guest agents,
 * and so the programs they run, back to nice 0. Not fatal: a node that
 * does not let root lower its nice runs mosd at the usual weight.
 */
static void
mosd_raise_priority(void)
{
	if (setpriority(PRIO_PROCESS, 0, MOSD_NICE) == -1)
		log_warn("setpriority %d", MOSD_NICE);
}

/*
 * A guest that outgrows its node inside one call is the out-of-memory
 * killer's (docs/RELIABILITY.md): the killer must take it, never mosd,
 * which would leave every other guest of the node without its agent's
 * daemon and the node out of the cluster. A lab saw it take the network
 * process after a guest of 251 MiB in a node of 256. So mosd, and the
 * network process forked from it, are never its choice; each guest agent
 * puts itself and its R first (agent/guest.c, guest_oom_first), which is
 * all there is where root lacks CAP_SYS_RESOURCE (some containers): guests
 * then still go first, mosd's score is the usual one. Returns whether
 * mosd is shielded; before mosd_drop_caps.
 */
static int
mosd_shield_oom(void)
{
	if (write_file_str("/proc/self/oom_score_adj", "-1000") == 0)
		return 1;
	log_info("not shielded from the out-of-memory killer: "
	    "/proc/self/oom_score_adj: %s", strerror(errno));
	return 0;
}

static void
mosd_gossip_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	looptime_mark(loop, "gossip send");
	net_send_gossip(w->data);
}

static void
mosd_stop_cb(struct ev_loop *loop, ev_signal *w, int revents)
{
	looptime_mark(loop, "stop");
	log_info("signal %d: stopping", w->signum);
	ev_break(loop, EVBREAK_ALL);
}

/* Ended clients and links, freed outside their callbacks. */
static void
mosd_reap_cb(struct ev_loop *loop, ev_check *w, int revents)
{
	looptime_mark(loop, "reap");
	peer_reap(w->data);
	broker_reap(w->data);
}

/* What mosd_setup and the run made; what is not made yet is NULL. */
static void
mosd_free(struct mosd *m)
{
	free(m->guest_exe);
	free(m->guest_pids);
	free(m->bnodes);
	free(m->rxbuf);
	gossip_free(m->gossip);
	policy_free(m->policy);
	free(m->balance.view.nodes);
	conf_free(m->conf);
	explicit_bzero(&m->key, sizeof m->key);
}

static int
mosd_setup(struct mosd *m, const char *path, char **cause)
{
	struct timespec	 ts;
	uint32_t	*ids;
	uint64_t	 seed;
	size_t		 i;

	if ((m->conf = conf_load(path, cause)) == NULL)
		return -1;
	if (key_load(m->conf->key_path, &m->key, cause) == -1)
		return -1;
	if (conf_find_self(m->conf, cause) == -1)
		return -1;
	if (rules_load(m->conf->policy_path, &m->policy, cause) == -1)
		return -1;
	if (probe_init(&m->probe, "", m->conf->speed, gettid(), cause) == -1)
		return -1;
	ids = xcalloc(m->conf->nnodes, sizeof *ids);
	for (i = 0; i < m->conf->nnodes; i++)
		ids[i] = m->conf->nodes[i].id;
	/* A fresh incarnation per start, ordered by time: see gossip_fresh */
	clock_gettime(CLOCK_REALTIME, &ts);
	if (getrandom(&seed, sizeof seed, 0) != sizeof seed)
		seed = ts.tv_nsec ^ getpid();
	m->gossip = gossip_new(m->conf->self, ids, m->conf->nnodes,
	    m->conf->window, (uint64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000,
	    seed);
	m->gossip->timeout_ms = gossip_timeout(m->conf->nnodes,
	    m->conf->interval_ms, m->conf->timeout_ms);
	free(ids);
	return 0;
}

/*
 * The network process, once in its sandbox: the probe, gossip, the
 * broker, the control socket and the web monitor on one loop, until
 * SIGTERM (from the parent, which gets the administrator's) or the
 * parent's end.
 */
static int
mosd_net(struct mosd *m)
{
	double	first;

	/* SIGHUP is the parent's, which hands us the files (reload.c). */
	signal(SIGHUP, SIG_IGN);
	m->probe.exclude = gettid();
	m->loop = ev_default_loop(EVFLAG_AUTO);
	looptime_start(m);
	TAILQ_INIT(&m->procs);
	TAILQ_INIT(&m->priv_reqs);
	privsep_start(m);
	net_start(m);
	broker_start(m);
	control_start(m);
	web_start(m);
	/* Ended clients and links are freed here, outside their callbacks. */
	ev_check_init(&m->reap_ev, mosd_reap_cb);
	m->reap_ev.data = m;
	ev_check_start(m->loop, &m->reap_ev);
	/* Known to itself from the start, not from its first gossip round. */
	net_refresh_self(m);
	balance_start(m);
	guests_guard_start(m);
	probe_thread_start(m);
	hashes_start(m);
	ev_timer_init(&m->probe_timer, mosd_probe_cb, 0, PROBE_INTERVAL);
	m->probe_timer.data = m;
	ev_timer_start(m->loop, &m->probe_timer);
	/* Random phase, so that nodes started together do not send together */
	first = rand_below(&m->gossip->rng, m->conf->interval_ms) / 1000.0;
	ev_timer_init(&m->gossip_timer, mosd_gossip_cb, first,
	    m->conf->interval_ms / 1000.0);
	m->gossip_timer.data = m;
	ev_timer_start(m->loop, &m->gossip_timer);
	ev_timer_init(&m->log_timer, mosd_log_cb, 1, 1);
	ev_timer_start(m->loop, &m->log_timer);
	ev_signal_init(&m->sig_term, mosd_stop_cb, SIGTERM);
	ev_signal_init(&m->sig_int, mosd_stop_cb, SIGINT);
	ev_signal_start(m->loop, &m->sig_term);
	ev_signal_start(m->loop, &m->sig_int);

	log_info("node %u of %zu up: interval %llums, down after %llums, "
	    "%.2f CPUs, speed %u; network process %d as uid %u", m->conf->self,
	    m->conf->nnodes, (unsigned long long)m->conf->interval_ms,
	    (unsigned long long)m->gossip->timeout_ms, m->probe.cpus,
	    m->probe.speed, (int)getpid(), (unsigned)geteuid());
	ev_run(m->loop, 0);

	probe_thread_stop(m);
	web_stop(m);
	control_shutdown(m);
	privsep_stop(m);
	close(m->udp_fd);
	close(m->tcp_fd);
	mosd_free(m);
	return 0;
}

int
main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	struct mosd	 m;
	const char	*path = OSM_CONF_PATH, *keyfile = NULL;
	char		*cause = NULL;
	int		 ch, debug = 0, check = 0, verbose = 0, sv[2];
	int		 shielded;
	pid_t		 parent, net;

	while ((ch = getopt_long(argc, argv, "df:hnvK:", longopts, NULL)) !=
	    -1) {
		switch (ch) {
		case 'd':
			debug = 1;
			break;
		case 'f':
			path = optarg;
			break;
		case 'n':
			check = 1;
			break;
		case 'v':
			verbose = 1;
			break;
		case 'K':
			keyfile = optarg;
			break;
		case 'h':
			usage(0);
		default:
			usage(2);
		}
	}
	if (optind != argc)
		usage(2);
	if (keyfile != NULL) {
		if (key_generate(keyfile, &cause) == -1) {
			fprintf(stderr, "mosd: %s\n", cause);
			return 1;
		}
		return 0;
	}

	log_init(1, "mosd");
	log_setverbose(verbose);
	memset(&m, 0, sizeof m);
	m.debug = debug;
	m.verbose = verbose;
	if (mosd_setup(&m, path, &cause) == -1) {
		fprintf(stderr, "mosd: %s\n", cause);
		free(cause);
		mosd_free(&m);
		return 1;
	}
	if (m.policy->path == NULL)
		log_info("no %s: the built-in policy allows everything",
		    m.conf->policy_path);
	if (check) {
		printf("%s: OK: node %u of %zu, key %s, policy %s\n", path,
		    m.conf->self, m.conf->nnodes, m.conf->key_path,
		    m.policy->path != NULL ? m.policy->path :
		    "built in (allow all)");
		mosd_free(&m);
		return 0;
	}
	if (geteuid() != 0) {
		fprintf(stderr, "mosd: must be started as root\n");
		return 1;
	}
	if (guests_find(&m, &cause) == -1) {
		fprintf(stderr, "mosd: %s\n", cause);
		return 1;
	}
	if (net_open(&m, &cause) == -1 || broker_listen(&m, &cause) == -1 ||
	    control_listen(&m, &cause) == -1 || web_listen(&m, &cause) == -1) {
		fprintf(stderr, "mosd: %s\n", cause);
		return 1;
	}
	if (!debug) {
		if (daemon(0, 0) == -1) {
			fprintf(stderr, "mosd: daemon: %s\n", strerror(errno));
			return 1;
		}
		log_init(0, "mosd");
	}
	mosd_raise_priority();	/* while root has CAP_SYS_NICE */
	shielded = mosd_shield_oom();	/* and CAP_SYS_RESOURCE */
	if (mosd_drop_caps(shielded, &cause) == -1)
		fatalx("%s", cause);
	signal(SIGPIPE, SIG_IGN);
	mosd_raise_nofile();
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) == -1)
		fatal("socketpair");
	parent = getpid();
	switch (net = fork()) {
	case -1:
		fatal("fork");
	case 0:
		close(sv[0]);
		m.priv_fd = sv[1];
		if (sandbox_enter(&m, parent, &cause) == -1)
			fatalx("network process: %s", cause);
		return mosd_net(&m);
	}
	/*
	 * The sockets are the network process's: the parent keeps only the
	 * channel (as descriptor 3) and the log.
	 */
	if (!debug)
		closelog();
	if (dup2(sv[0], 3) == -1)
		fatal("dup2");
	close_range(4, ~0U, 0);
	if (!debug)
		log_init(0, "mosd");
	return parent_run(&m, net, 3);
}
