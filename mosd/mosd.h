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
#include <stdint.h>

#include "lib/osm.h"
#include "gossip.h"
#include "probe.h"
#include "decide.h"


/* peer.c */
struct mosd;
struct peer {
	ev_io			 rev;
	ev_io			 wev;
	int			 fd;
	struct mosd		*mosd;
	uint8_t			*in;
	size_t			 inlen;
	uint8_t			*out;
	size_t			 outlen;
	size_t			 outoff;
	int			 out_fd;	/* to send with a record */
	size_t			 out_fd_at;	/* at this offset in out */
	int			 (*dispatch)(struct peer *, const uint8_t *,
				    size_t);
	void			 (*closed)(struct peer *);
	void			*arg;		/* the owner's */
	uid_t			 uid;
	gid_t			 gid;
	pid_t			 pid;
	int			 dead;
	int			 refs;		/* deferred replies pending */
	TAILQ_ENTRY(peer)	 entry;
};
TAILQ_HEAD(peers, peer);
struct peer *peer_new(struct mosd *, int, int (*)(struct peer *,
	    const uint8_t *, size_t));
void	 peer_send(struct peer *, const void *, size_t);
int	 peer_send_fd(struct peer *, const void *, size_t, int);
void	 peer_ref(struct peer *);
void	 peer_unref(struct peer *);
void	 peer_close(struct peer *);
void	 peer_reap(struct mosd *);

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
	int		 (*exec)(struct mosd *, struct peer *,
			    const struct Osm__CtlRequest *,
			    struct Osm__CtlReply *);
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
void	 control_reply(struct peer *, struct Osm__CtlReply *);
void	 control_reply_fd(struct peer *, struct Osm__CtlReply *, int);
void	 control_error(struct peer *, const char *, ...)
	    __attribute__((format(printf, 2, 3)));
int	 control_order(struct mosd *, const char *,
	    struct Osm__CtlRequest *, void (*)(struct mosd *, void *,
	    struct Osm__CtlReply *, const char *), void *, char **);
int	 control_listen(struct mosd *, char **);
void	 control_start(struct mosd *);
void	 control_shutdown(struct mosd *);

/* procs.c */
struct Osm__CtlAgent;
struct mproc {
	int			 role;		/* Osm__CtlRole */
	uint32_t		 pid;		/* at home */
	uint32_t		 home;
	uid_t			 uid;		/* owner (a guest: its uid) */
	char			 user[33];
	char			**groups;	/* a deputy's owner's, by name */
	size_t			 ngroups;
	uint32_t		 where;
	int			 state;		/* Osm__ProcState */
	uint32_t		 cpu_permille;
	uint64_t		 rss;
	char			*command;
	char			*socket;	/* its agent's, for orders */
	uint32_t		 local_pid;	/* a guest's running copy */
	int			 locked;	/* mosrun -L */
	uint64_t		 mem_need;	/* mosrun -m, bytes */
	uint64_t		 start_ms;	/* when its agent came */
	uint64_t		 moved_ms;	/* when it came where it is */
	int			 moving;	/* the balancer ordered a move */
	struct peer		*agent;
	TAILQ_ENTRY(mproc)	 entry;
};
TAILQ_HEAD(mprocs, mproc);
struct mproc *procs_find(struct mosd *, int, uint32_t, uint32_t);
struct mproc *procs_deputy(struct mosd *, uint32_t);
size_t	 procs_guests(struct mosd *);
int	 procs_hello(struct mosd *, struct peer *,
	    const struct Osm__CtlAgent *, char **);
int	 procs_status(struct mosd *, struct peer *,
	    const struct Osm__CtlAgent *, char **);
int	 procs_order(struct mosd *, const struct mproc *, int, uint32_t,
	    void (*)(struct mosd *, void *, struct Osm__CtlReply *,
	    const char *), void *, char **);

/* broker.c */
struct link;
TAILQ_HEAD(links, link);
int	 broker_listen(struct mosd *, char **);
void	 broker_start(struct mosd *);
int	 broker_connect(struct mosd *, struct peer *, uint32_t, uint32_t,
	    char **);
void	 broker_reap(struct mosd *);

/* rules.c */
struct Osm__MigOffer;
struct policy_rule;
int	 rules_load(const char *, struct policy **, char **);
const struct policy_rule *rules_for(struct mosd *, const struct mproc *);
size_t	 rules_away(struct mosd *, uid_t, const struct mproc *);
int	 rules_may_send(struct mosd *, const struct mproc *, uint32_t,
	    char **);
int	 rules_may_take(struct mosd *, const struct Osm__MigOffer *, char **);

/* balance.c: the glue of the balancer's decision (decide.h) */
#define BALANCE_INTERVAL	0.5	/* seconds between rounds */
struct balance_move {			/* one of ours, recently ordered */
	uint32_t	 from, to;
	uint64_t	 ms;
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

/* guests.c */
int	 guests_find(struct mosd *m, char **cause);
int	 guests_spawn(struct mosd *m, int fd, const uint8_t *key,
	    const struct Osm__MigOffer *o, char **why);
void	 guests_init(struct mosd *m);

/* net.c */
uint32_t net_node_by_addr(const struct cluster_conf *,
	    const struct sockaddr_storage *, int);
int	 net_open(struct mosd *, char **);
void	 net_start(struct mosd *);
void	 net_refresh_self(struct mosd *);
void	 net_send_gossip(struct mosd *);

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
	C_NCOUNTERS
};
extern const char *const mosd_counter_names[C_NCOUNTERS];

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
	struct balance		 balance;
	struct policy		*policy;
	uint32_t		 flags;		/* NodeFlag, set by mosctl */
	ev_signal		 sig_term;
	ev_signal		 sig_int;
	ev_signal		 sig_hup;

	int			 ctl_fd;
	ev_io			 ctl_ev;
	ev_check		 reap_ev;
	struct peers		 peers;
	size_t			 npeers;
	struct mprocs		 procs;

	int			 tcp_fd;	/* the migration broker */
	ev_io			 tcp_ev;
	struct links		 links;
	char			*guest_exe;	/* mosd-guest, to start agents */
	pid_t			*guest_pids;	/* agent per guest uid slot */
	size_t			 nagent_slots;
	ev_child		 child_ev;

	uint64_t		 counters[C_NCOUNTERS];
	int			 debug;		/* -d */
	int			 verbose;	/* -v */
};

#endif
