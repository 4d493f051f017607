/*
 * mosd — the per-node daemon: load probe, gossip, control socket, the
 * migration broker, policy and the balancer. The pure cores have headers
 * of their own, without libev or struct mosd (gossip.h, probe.h, the
 * balancer's decision in decide.h); this one is the daemon around them.
 */
#ifndef MOSD_H
#define MOSD_H

#include <sys/queue.h>

#include <ev.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "lib/osm.h"
#include "gossip.h"
#include "probe.h"
#include "decide.h"
#include "quota.h"
#include "privmsg.h"
#include "guard.h"


/* peer.c */
struct mosd;
enum peer_kind {
	PEER_CLIENT,		/* a tool, or an agent not registered yet */
	PEER_AGENT,		/* holds a registered process (procs.c) */
	PEER_ORDER,		/* ours, to an agent's order socket */
};
struct peer {
	ev_io			 rev;
	ev_io			 wev;
	ev_timer		 idle;		/* neither asks nor reads */
	ev_timer		 throttle;	/* its uid asks too fast */
	double			 timeout;	/* its seconds; 0: none */
	enum peer_kind		 kind;
	struct quota_user	*quota;		/* what its uid holds, or NULL */
	int			 fd;
	struct mosd		*mosd;
	uint8_t			*in;
	size_t			 inlen;
	uint8_t			*out;
	size_t			 outlen;
	size_t			 outoff;
	int			 out_fd;	/* to send with a record */
	size_t			 out_fd_at;	/* at this offset in out */
	int			 (*dispatch)(struct peer *p, const uint8_t *buf,
				    size_t len);
	void			 (*closed)(struct peer *p);
	void			*arg;		/* the owner's */
	uid_t			 uid;
	gid_t			 gid;
	pid_t			 pid;
	int			 dead;
	int			 eof;		/* it hung up its side */
	int			 timed_out;
	int			 refs;		/* deferred replies pending */
	TAILQ_ENTRY(peer)	 entry;
};
TAILQ_HEAD(peers, peer);
struct peer *peer_new(struct mosd *m, int fd, int (*dispatch)(struct peer *,
	    const uint8_t *, size_t));
void	 peer_send(struct peer *p, const void *buf, size_t len);
int	 peer_send_fd(struct peer *p, const void *buf, size_t len, int fd);
void	 peer_prefer(struct peer *p);
void	 peer_timeout(struct peer *p, double seconds);
void	 peer_agent(struct peer *p);
void	 peer_ref(struct peer *p);
void	 peer_unref(struct peer *p);
void	 peer_close(struct peer *p);
void	 peer_reap(struct mosd *m);

/* control.c */
struct Osm__CtlRequest;
struct Osm__CtlReply;
/*
 * A control request: exec fills the reply and returns 0, or -1 with
 * reply->error (a malloc'd string), or CTL_DEFERRED when it keeps a
 * reference to the peer and answers later with control_reply().
 */
#define CTL_DEFERRED	1
struct ctl_cmd {
	int		 type;		/* Osm__CtlType */
	const char	*name;
	int		 root_only;
	int		 (*exec)(struct mosd *m, struct peer *p,
			    const struct Osm__CtlRequest *req,
			    struct Osm__CtlReply *reply);
};
extern const struct ctl_cmd ctl_status_cmd;
extern const struct ctl_cmd ctl_stats_cmd;
extern const struct ctl_cmd ctl_ps_cmd;
extern const struct ctl_cmd ctl_migrate_cmd;
extern const struct ctl_cmd ctl_checkpoint_cmd;
extern const struct ctl_cmd ctl_agent_hello_cmd;
extern const struct ctl_cmd ctl_agent_status_cmd;
extern const struct ctl_cmd ctl_connect_cmd;
extern const struct ctl_cmd ctl_flags_cmd;
extern const struct ctl_cmd ctl_expel_cmd;
extern const struct ctl_cmd ctl_bring_cmd;
extern const struct ctl_cmd ctl_best_cmd;
extern const struct ctl_cmd ctl_file_hash_cmd;
void	 control_reply(struct peer *p, struct Osm__CtlReply *reply);
void	 control_reply_fd(struct peer *p, struct Osm__CtlReply *reply, int fd);
void	 control_error(struct peer *p, const char *fmt, ...)
	    __attribute__((format(printf, 2, 3)));
int	 control_order(struct mosd *m, const char *path,
	    struct Osm__CtlRequest *req, void (*done)(struct mosd *, void *,
	    struct Osm__CtlReply *, const char *), void *arg, char **cause);
int	 control_order_fd(struct mosd *m, int fd, struct Osm__CtlRequest *req,
	    void (*done)(struct mosd *, void *, struct Osm__CtlReply *,
	    const char *), void *arg, char **cause);
int	 control_loopback(struct mosd *m, char **cause);
struct peer *control_client(struct mosd *m, int fd, uid_t uid, gid_t gid,
	    pid_t pid, char **why);
void	 control_limits(struct mosd *m);
int	 control_listen(struct mosd *m, char **cause);
void	 control_start(struct mosd *m);
void	 control_shutdown(struct mosd *m);

/* procs.c */
struct Osm__CtlAgent;
struct mproc {
	int			 role;		/* Osm__CtlRole */
	uint32_t		 pid;		/* at home */
	uint32_t		 home;
	uid_t			 uid;		/* owner (a guest: its uid) */
	gid_t			 gid;		/* a deputy's: its group */
	char			 user[33];
	char			**groups;	/* a deputy's owner's, by name */
	size_t			 ngroups;
	uint32_t		 where;
	int			 state;		/* Osm__ProcState */
	uint32_t		 cpu_permille;	/* of one CPU: 2000 is two */
	uint32_t		 threads;	/* it has (a deputy says) */
	uint64_t		 rss;
	char			*command;
	char			*socket;	/* its agent's, for orders */
	uint32_t		 local_pid;	/* a guest's running copy */
	int			 locked;	/* mosrun -L */
	uint64_t		 mem_need;	/* mosrun -m, bytes */
	uint32_t		*nodes;		/* mosrun -n, besides home */
	size_t			 nnodes;	/* 0: any node */
	uint64_t		 start_ms;	/* when its agent came */
	uint64_t		 moved_ms;	/* when it came where it is */
	int			 moving;	/* the balancer ordered a move */
	char			*why;		/* its agent's: CtlAgent.why */
	char			**history;
	size_t			 nhistory;
	uint32_t		 homecomings;	/* counted in mosd.homes */
	struct Osm__CtlCheckpoints *ckpt;	/* a deputy's; NULL: none asked */
	struct peer		*agent;
	uint64_t		 guard_rss;	/* a guest's, the guard's last look */
	uint64_t		 guard_sent_ms;	/* the guard told it to leave */
	TAILQ_ENTRY(mproc)	 entry;
};
TAILQ_HEAD(mprocs, mproc);
struct mproc *procs_find(struct mosd *m, int role, uint32_t home, uint32_t pid);
struct mproc *procs_deputy(struct mosd *m, uint32_t pid);
size_t	 procs_guests(struct mosd *m);
int	 procs_hello(struct mosd *m, struct peer *peer,
	    const struct Osm__CtlAgent *a, char **cause);
int	 procs_status(struct mosd *m, struct peer *peer,
	    const struct Osm__CtlAgent *a, char **cause);
int	 procs_order(struct mosd *m, const struct mproc *mp, int type,
	    uint32_t node, int move, void (*done)(struct mosd *, void *,
	    struct Osm__CtlReply *, const char *), void *arg, char **cause);
int	 procs_order_leave(struct mosd *m, const struct mproc *mp,
	    const char *reason, void (*done)(struct mosd *, void *,
	    struct Osm__CtlReply *, const char *), void *arg, char **cause);

/* broker.c */
struct link;
TAILQ_HEAD(links, link);
struct broker_node {			/* what one node's links may take */
	double		 tokens;	/* connections it may open now */
	uint64_t	 at_ms;		/* tokens counted then */
	uint32_t	 handshakes;	/* incoming, under way */
	double		 out_tokens;	/* ours to it, by the same limits */
	uint64_t	 out_at_ms;
	uint32_t	 out;		/* ours to it, under way */
};
int	 broker_listen(struct mosd *m, char **cause);
void	 broker_init(struct mosd *m);
void	 broker_start(struct mosd *m);
int	 broker_connect(struct mosd *m, struct peer *deputy, uint32_t pid,
	    uint32_t node, char **cause);
void	 broker_reap(struct mosd *m);

/* rules.c */
struct Osm__MigOffer;
struct policy_rule;
int	 rules_load(const char *path, struct policy **out, char **cause);
int	 rules_load_fd(const char *path, int fd, struct policy **out,
	    char **cause);
const struct policy_rule *rules_for(struct mosd *m, const struct mproc *mp);
size_t	 rules_away(struct mosd *m, uid_t uid, const struct mproc *except);
int	 rules_may_send(struct mosd *m, const struct mproc *mp, uint32_t node,
	    char **why);
int	 rules_may_take(struct mosd *m, const struct Osm__MigOffer *o,
	    char **why);

/* balance.c: the glue of the balancer's decision (decide.h) */
#define BALANCE_INTERVAL	0.5	/* seconds between rounds */
struct balance_move {			/* one of ours, recently ordered */
	uint32_t	 from, to;
	uint64_t	 ms;
	uint32_t	 busy;		/* the threads it keeps busy */
};
#define BALANCE_RECENT_MAX	256
struct balance {
	struct decide_view	 view;	/* the up nodes, self included */
	struct balance_move	 recent[BALANCE_RECENT_MAX];
	size_t			 nrecent;
	uint64_t		 rng;	/* lib/rand.c: its own, not gossip's */
};
void	 balance_start(struct mosd *m);
uint32_t balance_best(struct mosd *m, const struct mproc *p, uint64_t need);

/* guests.c: in the privileged parent */
int	 guests_find(struct mosd *m, char **cause);
int	 guests_spawn(struct mosd *m, int fd, const struct privmsg_guest *g,
	    pid_t *pid, uid_t *uid, char **why);
int	 guests_reaped(struct mosd *m, pid_t pid, int status);
void	 guests_init(struct mosd *m);
void	 guests_spare(struct mosd *m);

/* looptime.c: the network process's loop iterations, timed */
#define LOOPTIME_SLOW_MS	25	/* an iteration's callbacks: slow */
struct looptime {
	const char	*mark;		/* the callback running, NULL: none */
	uint64_t	 mark_ns;	/* since */
	const char	*longest;	/* this iteration's longest callback */
	uint64_t	 longest_ns;
	uint32_t	 ncallbacks;	/* marked in this iteration */
	int		 schedstat;	/* /proc/thread-self/schedstat, or -1 */
	uint64_t	 run_delay;	/* its second field, last read (ns) */
};
void	 looptime_start(struct mosd *m);
void	 looptime_mark(struct ev_loop *loop, const char *what);

/* probe-thread.c: the load probe's samples, off the loop */
/* hashes.c: the SHA-256 of this node's files, for agents */
#define HASHES_KEPT	256
#define HASHES_WANTED	32
struct hash_id {
	uint64_t	dev, ino, size, mtime_ns, ctime_ns;
};
struct hashes {
	struct hash_kept {
		struct hash_id	id;
		uint8_t		sha256[CRYPTO_HASH_LEN];
	}		 kept[HASHES_KEPT];
	size_t		 n, next;
	struct hash_want {
		char		*path;
		struct hash_id	 id;
	}		 want[HASHES_WANTED];	/* to hash, in the loop */
	size_t		 nwant;
	ev_timer	 timer;
};
struct stat;
void	 hashes_start(struct mosd *m);
void	 hashes_id(const struct stat *st, struct hash_id *id);
int	 hashes_find(struct hashes *h, const struct hash_id *id,
	    uint8_t out[CRYPTO_HASH_LEN]);
void	 hashes_keep(struct hashes *h, const struct hash_id *id,
	    const uint8_t sha[CRYPTO_HASH_LEN]);
int	 hashes_settled(const struct hash_id *id, uint64_t now);
void	 hashes_want(struct mosd *m, const char *path,
	    const struct hash_id *id);

struct probe_thread {
	pthread_t		 thread;
	int			 running;	/* 0: the loop samples */
	int			 wake;		/* eventfd: sample now */
	atomic_int		 stop;
	struct probe		 own;		/* the thread's */
	struct probe		 slot;		/* handed over, if state 1 */
	atomic_int		 state;		/* 0 empty, 1 full */
	pid_t			 loop_tid;	/* m->probe's exclude */
	ev_async		 done;		/* the loop's: slot full */
	struct log_limit	 log;
};
void	 probe_thread_start(struct mosd *m);
void	 probe_thread_ask(struct mosd *m);
void	 probe_thread_stop(struct mosd *m);

/* guests-guard.c: the memory guard, in the network process */
void	 guests_guard_start(struct mosd *m);

/* parent.c: the privileged parent */
int	 parent_run(struct mosd *m, pid_t net, int fd);

/* privsep.c: the network process's side of the channel to the parent */
struct privsep_req;
TAILQ_HEAD(privsep_reqs, privsep_req);
int	 privsep_ask(struct mosd *m, uint32_t type, const void *body,
	    size_t len, int fd, void (*done)(struct mosd *m, void *arg,
	    const struct privmsg_answer *a), void *arg, uint32_t *id,
	    char **cause);
void	 privsep_cancel(struct mosd *m, uint32_t id);
void	 privsep_start(struct mosd *m);
void	 privsep_stop(struct mosd *m);

/* sandbox.c: the network process's uid, capabilities, seccomp filter */
int	 sandbox_enter(struct mosd *m, pid_t parent, char **cause);
void	 sandbox_report(void);

/* reload.c: SIGHUP's files, applied in the network process */
void	 reload_apply(struct mosd *m, int conffd, int polfd);

/* net.c */
uint32_t net_node_by_addr(const struct cluster_conf *c,
	    const struct sockaddr_storage *ss, int with_port);
int	 net_open(struct mosd *m, char **cause);
void	 net_start(struct mosd *m);
void	 net_refresh_self(struct mosd *m);
void	 net_send_gossip(struct mosd *m);

/*
 * web.c, web-api.c: the web monitor, libmicrohttpd on mosd's loop. web.c
 * is the server (the daemon, its descriptors under libev, requests in,
 * answers out); web-api.c says what a request gets (the page, the JSON of
 * a control request to this mosd, an action once its token is checked).
 */
struct MHD_Daemon;
struct MHD_Connection;
struct web_route;
struct web_req {
	struct mosd		*mosd;
	struct MHD_Connection	*conn;		/* NULL once MHD is done with it */
	const struct web_route	*route;
	char			*body;		/* what a POST sent */
	size_t			 bodylen;
	int			 handled;	/* web-api has seen it whole */
	int			 refs;		/* MHD's, a pending request's */
	unsigned		 status;	/* the answer: 0 until there is one */
	char			*answer;
	size_t			 answerlen;
	int			 persistent;	/* answer is not ours to free */
	const char		*type;		/* its Content-Type */
	const char		*allow;		/* for a 405: the method allowed */
	TAILQ_ENTRY(web_req)	 entry;		/* in web's pending list */
};
TAILQ_HEAD(web_reqs, web_req);
struct web {
	struct MHD_Daemon	*daemon;
	ev_io			 io;		/* MHD's epoll descriptor */
	ev_timer		 timer;		/* MHD's next timeout */
	struct web_reqs		 pending;	/* suspended for mosd's answer */
};
int	 web_listen(struct mosd *m, char **cause);
void	 web_start(struct mosd *m);
void	 web_stop(struct mosd *m);
struct web_req *webapi_new(struct mosd *m, struct MHD_Connection *conn);
int	 webapi_handle(struct web_req *wr, const char *method, const char *url);
void	 webapi_error(struct web_req *wr, unsigned status, const char *fmt,
	    ...) __attribute__((format(printf, 3, 4)));
void	 webapi_unref(struct web_req *wr);
extern const char web_page[];		/* web-page.html, built in */
extern const size_t web_page_len;

/* stats */
enum mosd_counter {
	C_RX_OK,
	C_RX_TRUNCATED,
	C_RX_OVERSIZED,
	C_RX_BAD_MAGIC,
	C_RX_BAD_VERSION,
	C_RX_BAD_LENGTH,
	C_RX_BAD_MAC,
	C_RX_BAD_KIND,
	C_RX_MALFORMED,
	C_RX_BAD_FIELD,
	C_RX_UNKNOWN_NODE,
	C_RX_FROM_SELF,
	C_RX_REPLAY,
	C_RX_WRONG_SOURCE,
	C_TX_OK,
	C_TX_ERROR,
	C_CTL_REQUESTS,
	C_CTL_REFUSED,
	C_OFFERS_ACCEPTED,
	C_OFFERS_REFUSED,
	C_CTL_TURNED_AWAY,	/* connections refused: over a quota */
	C_CTL_DROPPED,		/* clients cut off: unread, idle */
	C_HS_TAKEN,		/* incoming handshakes begun */
	C_HS_REFUSED,		/* handshakes refused: over a limit */
	C_GUARD_SENT,		/* guests sent home: memory ran short */
	C_OOM_KILLS,		/* the OOM killer's kills here, seen */
	C_CTL_THROTTLED,	/* tools' requests read later: too fast */
	C_LOOP_ITERATIONS,	/* the network process's loop's (looptime.c) */
	C_LOOP_SLOW,		/* whose callbacks took LOOPTIME_SLOW_MS+ */
	C_LOOP_LONGEST_MS,	/* the longest one's callbacks, in ms */
	C_LOOP_SLOW_WAITED,	/* slow ones in which it slept in a call */
	C_LOOP_SLOW_BUSY,	/* slow ones of LOOPTIME_SLOW_MS+ of CPU */
	C_LOOP_CORE_WAITS,	/* waits of LOOPTIME_SLOW_MS+ for a core */
	C_LOOP_CORE_LONGEST_MS,	/* the longest, in ms */
	C_FILE_HASHES_KNOWN,	/* files' hashes answered from hashes.c */
	C_FILE_HASHES_MADE,	/* and made there */
	C_NCOUNTERS
};
extern const char *const mosd_counter_names[C_NCOUNTERS];
#define MOSD_NICE	(-10)	/* mosd's own, mosd_raise_priority */
#define MOSD_HOMES	32	/* reasons for coming home counted apart */

struct mosd {
	struct cluster_conf	*conf;
	struct cluster_key	 key;
	struct gossip		*gossip;
	struct probe		 probe;
	struct ev_loop		*loop;

	int			 udp_fd;
	ev_io			 udp_ev;
	uint8_t			*rxbuf;
	ev_timer		 gossip_timer;
	ev_timer		 probe_timer;
	ev_timer		 balance_timer;
	ev_timer		 log_timer;	/* log_limit_flush */
	struct balance		 balance;
	struct policy		*policy;
	uint32_t		 flags;		/* NodeFlag, set by mosctl */
	ev_signal		 sig_term;
	ev_signal		 sig_int;

	int			 ctl_fd;
	ev_io			 ctl_ev;
	ev_timer		 ctl_pause;	/* out of descriptors: wait */
	struct quota		 quota;
	ev_check		 reap_ev;
	struct peers		 peers;
	size_t			 npeers;
	struct mprocs		 procs;

	int			 tcp_fd;	/* the migration broker */
	ev_io			 tcp_ev;
	ev_timer		 tcp_pause;	/* out of descriptors: wait */
	ev_timer		 tcp_queue;	/* start the sessions queued */
	struct links		 links;
	struct broker_node	*bnodes;	/* per node, in gossip order */
	uint32_t		 handshakes;	/* incoming, under way */
	char			*guest_exe;	/* mosd-guest, to start agents */
	pid_t			*guest_pids;	/* parent: agent per guest uid */
#define GUESTS_SPARES	2	/* guest agents started ahead */
	pid_t			 guest_spare[GUESTS_SPARES]; /* parent's */
	int			 guest_spare_sock[GUESTS_SPARES]; /* start */
	size_t			 nagent_slots;

	int			 priv_fd;	/* to the privileged parent */
	ev_io			 priv_ev;
	struct privsep_reqs	 priv_reqs;	/* asked, not answered yet */
	size_t			 npriv;
	uint32_t		 priv_id;	/* the last request's */

	struct guard		 guard;		/* memory: guests sent away */
	ev_timer		 guard_timer;
	uint64_t		 oom_kills;	/* the memory cgroup's, last seen */
	int			 oom_known;

	struct web		*web;		/* NULL: the monitor is off */
	struct looptime		 looptime;
	struct probe_thread	 probe_thread;
	struct hashes		 hashes;	/* files' SHA-256 (hashes.c) */

	uint64_t		 counters[C_NCOUNTERS];
	struct mosd_home {			/* returns home, by reason */
		char		 name[64];
		uint64_t	 n;
	}			 homes[MOSD_HOMES];
	size_t			 nhomes;
	int			 debug;		/* -d */
	int			 verbose;	/* -v */
};

#endif
