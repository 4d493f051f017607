/*
 * What the local users may make mosd hold (mosd/quota.c), per uid: the
 * connections of their tools, the processes their agents register, the
 * replies they leave unread. Plain accounting, no event loop, no struct
 * mosd: the daemon asks before it accepts a connection, registers an agent
 * or queues a reply, and says when it lets go (control.c, procs.c,
 * peer.c). See docs/RELIABILITY.md for the limits and why.
 *
 * Three kinds of uid, each with room of its own, so that no ordinary user
 * can take what root or the guests need:
 *	root		its own pool of connections; no limit on what it
 *			registers or leaves unread
 *	a guest uid	QUOTA_GUEST_CLIENTS connections (one guest agent
 *			each uses one)
 *	any other	clients_per_user connections, clients for all of them
 *			together; agents_per_user registered processes; its
 *			tools' requests_per_user requests a second (a quarter
 *			of a second's in one burst): past that mosd reads
 *			its requests later, so that its answering a flood
 *			takes no more of the node's CPU than that (mosd runs
 *			at a higher priority than the users' programs)
 * A connection that registers an agent leaves the tools' count for the
 * agents'. Every connection of any kind counts against total, the
 * descriptors mosd may use; root alone may take the last QUOTA_ROOT_SPARE.
 */
#ifndef MOSD_QUOTA_H
#define MOSD_QUOTA_H

#include <sys/types.h>

#include <stddef.h>
#include <stdint.h>

#define QUOTA_GUEST_CLIENTS	4
#define QUOTA_ROOT_SPARE	32

struct quota_limits {
	uint32_t	 clients;	/* users' tool connections, together */
	uint32_t	 clients_per_user;
	uint32_t	 requests_per_user;	/* a second, its tools' */
	uint32_t	 agents_per_user;	/* registered processes */
	uint64_t	 client_output;	/* unread bytes, one connection */
	uint64_t	 user_output;	/* unread bytes, one uid's */
	uint32_t	 total;		/* connections of every kind */
	uid_t		 guest_first;	/* the guest uids */
	uid_t		 guest_last;
};

enum quota_kind {
	QUOTA_ROOT,
	QUOTA_GUEST,
	QUOTA_USER,
};

struct quota_user {			/* one uid, while it holds anything */
	uid_t			 uid;
	enum quota_kind		 kind;
	uint32_t		 clients;	/* tool connections */
	uint32_t		 agents;	/* registered processes */
	uint64_t		 output;	/* unread reply bytes */
	uint64_t		 tokens;	/* thousandths of a request */
	uint64_t		 tokens_ms;	/* when counted */
	struct quota_user	*next;
};

struct quota {
	struct quota_limits	 lim;
	struct quota_user	*users;
	uint32_t		 user_clients;	/* QUOTA_USER tools, together */
	uint32_t		 root_clients;
	uint32_t		 conns;		/* every counted connection */
};

/* A new connection of uid: its entry, or NULL and *why (the refusal). */
struct quota_user *quota_connect(struct quota *q, uid_t uid, char **why);
/* May u's tool connection register a process? 0, or -1 and *why. */
int	 quota_may_register(struct quota *q, const struct quota_user *u,
	    char **why);
/*
 * May a tool connection of u make one more request at now_ms? 1, or 0
 * and *wait_ms until it may (QUOTA_USER's requests_per_user).
 */
int	 quota_request(struct quota *q, struct quota_user *u, uint64_t now_ms,
	    uint64_t *wait_ms);
/* u's tool connection now holds a registered process. */
void	 quota_registered(struct quota *q, struct quota_user *u);
/*
 * May a connection of u with queued bytes unread queue len more? 0 and
 * charged to u, or -1 and *why. The first reply of an empty queue always
 * may: one reply is what a tool waits for.
 */
int	 quota_charge(struct quota *q, struct quota_user *u, uint64_t queued,
	    size_t len, char **why);
void	 quota_uncharge(struct quota *q, struct quota_user *u, uint64_t len);
/* A connection of u closed; agent: it held a registered process. */
void	 quota_disconnect(struct quota *q, struct quota_user *u, int agent);
void	 quota_free(struct quota *q);

#endif
