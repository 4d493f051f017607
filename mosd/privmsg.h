/*
 * The channel between mosd's two processes (docs/RELIABILITY.md, "Two
 * processes"): the privileged parent (parent.c), which keeps what needs
 * root, and the network process, which parses everything that comes from
 * other nodes and local clients. One SOCK_SEQPACKET socketpair: a record
 * is one datagram, a header and a fixed-size body, descriptors beside it
 * (SCM_RIGHTS). The parent decodes nothing but these structs, each of an
 * exact size, and checks every field as hostile input: a network process
 * taken over by an attacker can ask for nothing but what is below, each
 * within the parent's own limits.
 *
 * Pure code, like the other cores of mosd: no libev, no struct mosd.
 */
#ifndef MOSD_PRIVMSG_H
#define MOSD_PRIVMSG_H

#include <stddef.h>
#include <stdint.h>

#include "lib/osm.h"

#define PRIVMSG_MAX	1024	/* the largest record, header included */
#define PRIVMSG_FDS	2	/* descriptors with one record, at most */
#define PRIVMSG_PID_MAX	4194304	/* the kernel's PID_MAX_LIMIT */

enum privmsg_type {
	/* net -> parent: start a guest agent; its session on one fd */
	PRIVMSG_GUEST = 1,
	/* net -> parent: does this web token open the actions? */
	PRIVMSG_TOKEN = 2,
	/* parent -> net: the answer to either (struct privmsg_answer) */
	PRIVMSG_ANSWER = 3,
	/* parent -> net: SIGHUP; cluster.conf and policy.conf (if any) */
	PRIVMSG_RELOAD = 4,
	/* parent -> net: SIGTERM or SIGINT; no body (no signal of the
	 * parent's reaches another uid's process: it has no CAP_KILL) */
	PRIVMSG_STOP = 5,
};

struct privmsg_hdr {
	uint32_t	type;		/* enum privmsg_type */
	uint32_t	id;		/* a request's, echoed in its answer */
};

#define PRIVMSG_USER_MAX	32
#define PRIVMSG_COMMAND_MAX	256
struct privmsg_guest {			/* an offer the broker accepted */
	uint32_t	home;		/* a node of the map, not this one */
	uint32_t	pid;		/* at home */
	uint32_t	owner_uid;	/* at home */
	uint32_t	owner_gid;	/* its group at home (the offer's) */
	uint8_t		key[SESSION_KEY_LEN];	/* the guest's keys */
	char		user[PRIVMSG_USER_MAX + 1];	/* NUL-terminated */
	char		command[PRIVMSG_COMMAND_MAX + 1];
	uint8_t		strict_files;	/* 0 or 1: the policy's, for user */
};

#define PRIVMSG_TOKEN_MAX	255
struct privmsg_token {
	uint32_t	len;		/* of token, 1 to PRIVMSG_TOKEN_MAX */
	char		token[PRIVMSG_TOKEN_MAX];
};

#define PRIVMSG_WHY_MAX		200
struct privmsg_answer {
	int32_t		ok;		/* 1: done; 0: refused, why says */
	uint32_t	pid;		/* PRIVMSG_GUEST: the agent's */
	uint32_t	uid;		/* PRIVMSG_GUEST: the guest uid */
	char		why[PRIVMSG_WHY_MAX];	/* NUL-terminated */
};

struct privmsg_reload {
	uint32_t	policy;		/* 1: a second fd, the policy's */
};

/*
 * A record received: the header, a body of len bytes, and the
 * descriptors that came with it (which the receiver owns).
 */
struct privmsg {
	struct privmsg_hdr	 hdr;
	uint8_t			 body[PRIVMSG_MAX];
	size_t			 len;
	int			 fds[PRIVMSG_FDS];
	size_t			 nfds;
};

enum privmsg_recv {
	PRIVMSG_OK,		/* a record, in msg */
	PRIVMSG_EOF,		/* the other process has gone */
	PRIVMSG_NONE,		/* none now (or an error: errno) */
	PRIVMSG_BAD,		/* a record, refused before its type: why */
};
int	 privmsg_send(int fd, uint32_t type, uint32_t id, const void *body,
	    size_t len, const int *fds, size_t nfds);
enum privmsg_recv privmsg_recv(int fd, struct privmsg *msg, char **why);
void	 privmsg_close_fds(struct privmsg *msg);
const char *privmsg_type_name(uint32_t type);
int	 privmsg_check_guest(const struct privmsg *msg,
	    const struct cluster_conf *conf, struct privmsg_guest *out,
	    char **why);
int	 privmsg_check_token(const struct privmsg *msg,
	    struct privmsg_token *out, char **why);

#endif
