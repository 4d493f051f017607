/*
 * lib/ — code every osmosis program uses. Knows nothing of mosd, migrate/,
 * libremote/ or the tools.
 */
#ifndef OSM_H
#define OSM_H

#include <stdarg.h>
#include <stdio.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/socket.h>

#define OSM_VERSION		"0.1"
#define OSM_SOCKET_PATH		"/run/osmosis/mosd.sock"
#define OSM_CONF_PATH		"/etc/osmosis/cluster.conf"
#define OSM_PORT		4750
#define OSM_MAX_NODES		65535
#define OSM_GUEST_START_MAX	4096	/* mosd to mosd-guest, bytes */

#define nitems(a)	(sizeof(a) / sizeof((a)[0]))

/* log.c */
#define LOG_QUIET	(-1)	/* log_init: only fatal's message, on stderr */
void	 log_init(int, const char *);
void	 log_setverbose(int);
void	 log_warn(const char *, ...) __attribute__((format(printf, 1, 2)));
void	 log_warnx(const char *, ...) __attribute__((format(printf, 1, 2)));
void	 log_info(const char *, ...) __attribute__((format(printf, 1, 2)));
void	 log_debug(const char *, ...) __attribute__((format(printf, 1, 2)));
void	 fatal(const char *, ...)
	    __attribute__((format(printf, 1, 2), noreturn));
void	 fatalx(const char *, ...)
	    __attribute__((format(printf, 1, 2), noreturn));

/* xmalloc.c */
void	*xmalloc(size_t);
void	*xcalloc(size_t, size_t);
void	*xreallocarray(void *, size_t, size_t);
char	*xstrdup(const char *);
char	*xstrndup(const char *, size_t);
int	 xasprintf(char **, const char *, ...)
	    __attribute__((format(printf, 2, 3)));
int	 xvasprintf(char **, const char *, va_list)
	    __attribute__((format(printf, 2, 0)));

/* util.c */
uint64_t now_ms(void);
uint64_t now_us(void);
void	 sleep_ms(unsigned ms);
int	 parse_uint(const char *, uint64_t, uint64_t, uint64_t *);
int	 parse_duration_ms(const char *, uint64_t *);
int	 parse_size_mb(const char *, uint64_t *);
int	 read_file_str(const char *, char *, size_t);
int	 read_file_u64(const char *, uint64_t *);
int	 write_file_str(const char *, const char *);
int	 mkdir_p(const char *, mode_t);
int	 write_all(int, const void *, size_t);
int	 read_all(int, void *, size_t);

/* rand.c: not for secrets (keys and nonces come from getrandom) */
uint64_t rand_next(uint64_t *state);
uint64_t rand_below(uint64_t *state, uint64_t n);

/* atomic.c: a file that appears whole under its name or not at all */
struct atomic_file {
	int		 fd;
	char		*path;		/* the name it will have */
	char		*tmp;		/* path.tmp.XXXXXX until then */
};
int	 atomic_create(struct atomic_file *af, const char *path, char **cause);
int	 atomic_commit(struct atomic_file *af, int ok, char **cause);

/* proc.c */
int	 proc_status(pid_t, const char *, char *, size_t);
int	 proc_status_mask(pid_t, const char *, uint64_t *);
int	 proc_cpu_ns(pid_t, uint64_t *, uint64_t *);

/* sha256.c */
#define SHA256_LEN	32
#define SHA256_BLOCK	64
struct sha256 {
	uint32_t	h[8];
	uint64_t	total;
	uint8_t		buf[SHA256_BLOCK];
	size_t		used;
};
void	 sha256_init(struct sha256 *);
void	 sha256_update(struct sha256 *, const void *, size_t);
void	 sha256_final(struct sha256 *, uint8_t[SHA256_LEN]);
void	 hmac_sha256(const uint8_t *, size_t, const void *, size_t,
	    uint8_t[SHA256_LEN]);
int	 timingsafe_memcmp(const void *, const void *, size_t);

/* key.c */
#define KEY_MIN		16
#define KEY_MAX		64
struct cluster_key {
	uint8_t		bytes[KEY_MAX];
	size_t		len;
};
int	 key_load(const char *, struct cluster_key *, char **);
int	 key_generate(const char *, char **);

/* frame.c */
/*
 * A datagram between nodes: magic, version, kind, body length, the packed
 * protobuf-c body, then an HMAC-SHA256 over everything before it.
 */
#define FRAME_MAGIC	0x4f534d47U	/* "OSMG" */
#define FRAME_VERSION	1
#define FRAME_HDR	12
#define FRAME_MAC	SHA256_LEN
#define FRAME_OVERHEAD	(FRAME_HDR + FRAME_MAC)
enum frame_error {
	FRAME_OK = 0,
	FRAME_SHORT,
	FRAME_LONG,
	FRAME_MAGIC_BAD,
	FRAME_VERSION_BAD,
	FRAME_LENGTH_BAD,
	FRAME_MAC_BAD,
	FRAME_NERRORS
};
size_t	 frame_pack(uint16_t, const void *, size_t, const struct cluster_key *,
	    uint8_t *, size_t);
size_t	 frame_size(const uint8_t *, size_t);
enum frame_error frame_unpack(const uint8_t *, size_t, size_t,
	    const struct cluster_key *, uint16_t *, const uint8_t **, size_t *);
const char *frame_strerror(enum frame_error);

/* session.c */
#define SESSION_KEY_LEN		SHA256_LEN
#define SESSION_NONCE_LEN	16
struct session {
	int			 fd;
	struct cluster_key	 key;
	uint64_t		 tx_seq;
	uint64_t		 rx_seq;
	size_t			 max;		/* largest whole frame */
	uint8_t			*in;
	size_t			 inlen;
	size_t			 insize;
	size_t			 consumed;	/* by the last session_next */
	uint8_t			*out;
	size_t			 outsize;
};
void	 session_init(struct session *, int, const uint8_t *, size_t);
void	 session_free(struct session *);
void	 session_derive(const struct cluster_key *, const uint8_t *,
	    const uint8_t *, uint32_t, uint32_t, uint8_t *);
int	 session_send(struct session *, uint16_t, const void *, size_t,
	    char **);
struct ProtobufCMessage;
int	 session_send_msg(struct session *s, uint16_t kind,
	    const struct ProtobufCMessage *msg, char **cause);
int	 session_fill(struct session *, char **);
int	 session_next(struct session *, uint16_t *, const uint8_t **, size_t *,
	    char **);
int	 session_recv(struct session *, uint16_t *, const uint8_t **, size_t *,
	    char **);
#define SESSION_CHUNK		(1U << 20)	/* image bytes per frame */
int	 session_send_image(struct session *, uint16_t, uint16_t,
	    int (*)(int, void *, char **), void *, char **);
int	 session_recv_image(struct session *, uint16_t, uint16_t,
	    int (*)(int, void *, char **), void *, char **);

/* stream.c */
/* A stream record: u32 length (network order) then the packed message. */
#define STREAM_RECORD_MAX	(64U << 20)
int	 stream_write(int, const void *, size_t);
int	 stream_read(int, uint8_t **, size_t *, size_t, char **);

/* cfg.c */
struct cfg_file {
	FILE		*f;
	const char	*path;
	unsigned	 line;
	char		*buf;
	size_t		 size;
};
int	 cfg_open(struct cfg_file *, const char *, char **);
void	 cfg_close(struct cfg_file *);
int	 cfg_words(struct cfg_file *, char **, int, char **);
int	 cfg_error(const struct cfg_file *, char **, const char *, ...)
	    __attribute__((format(printf, 3, 4)));
int	 cfg_verror(const struct cfg_file *, char **, const char *, va_list);

/* conf.c */
#define CONF_DEFAULT_WINDOW	128	/* the datagram size limits it first */
#define CONF_GUEST_UID_FIRST	60000
#define CONF_GUEST_UID_LAST	60999
struct conf_node {
	uint32_t	id;
	char		addr[64];	/* numeric IPv4 or IPv6, as written */
	struct sockaddr_storage sa;	/* with the cluster's port */
	socklen_t	salen;
};
struct cluster_conf {
	char		*path;
	struct conf_node *nodes;
	size_t		 nnodes;
	uint16_t	 port;
	uint64_t	 interval_ms;
	uint64_t	 timeout_ms;
	uint32_t	 window;
	uint32_t	 speed;
	uint32_t	 self;		/* 0: find from local addresses */
	char		*key_path;
	char		*socket_path;
	uid_t		 guest_uid_first;	/* guests run under these */
	uid_t		 guest_uid_last;
	char		*policy_path;	/* policy.conf beside this file */
};
struct cluster_conf *conf_load(const char *, char **);
void	 conf_free(struct cluster_conf *);
const struct conf_node *conf_find(const struct cluster_conf *, uint32_t);
int	 conf_find_self(struct cluster_conf *, char **);

/* policy.c: who may migrate where (policy.conf(5)) */
#define POLICY_NO_LIMIT		UINT32_MAX
struct policy_range {
	uint32_t	 first, last;
};
struct policy_nodes {			/* a set of node ids */
	int		 all;
	struct policy_range *r;
	size_t		 n;
};
struct policy_rule {			/* for a user, a group, the default */
	struct policy_nodes nodes;	/* where its processes may run */
	uint32_t	 max_away;	/* processes away at once */
	int		 automatic;	/* the balancer may move them */
};
enum policy_who_kind { POLICY_USER, POLICY_GROUP, POLICY_ANYONE };
struct policy_who {
	enum policy_who_kind kind;
	char		*name;		/* NULL for POLICY_ANYONE */
};
struct policy_host {			/* what a node takes as guests */
	struct policy_nodes nodes;	/* the nodes the line is about */
	struct policy_who *accept;	/* none: anyone not refused */
	size_t		 naccept;
	struct policy_who *refuse;
	size_t		 nrefuse;
	uint32_t	 max_guests;
};
struct policy_named {
	char		*name;
	struct policy_rule rule;
};
struct policy {
	char		*path;		/* NULL: the built-in default */
	struct policy_rule def;
	struct policy_named *users;
	size_t		 nusers;
	struct policy_named *groups;	/* in file order */
	size_t		 ngroups;
	struct policy_host *hosts;	/* in file order */
	size_t		 nhosts;
};
struct policy *policy_load(const char *, char **);
struct policy *policy_default(void);
void	 policy_free(struct policy *);
int	 policy_has_node(const struct policy_nodes *, uint32_t);
const struct policy_rule *policy_rule(const struct policy *, const char *,
	    const char *const *, size_t);
int	 policy_accepts(const struct policy *, uint32_t, const char *,
	    const char *const *, size_t, uint32_t, char **);
struct passwd;
char	**policy_groups(const struct passwd *pw, size_t *n);
void	 policy_groups_free(char **names, size_t n);

/* ctl.c */
#define CTL_VERSION	2	/* 2: process states as ProcState, not text */
#define CTL_RECORD_MAX	(4U << 20)
#define CTL_TIMEOUT_SEC	10
struct Osm__CtlRequest;
struct Osm__CtlReply;
struct sockaddr_un;
int	 ctl_sockaddr(const char *, struct sockaddr_un *, socklen_t *);
int	 ctl_connect(const char *, int, char **);
int	 ctl_peercred(int, uid_t *, gid_t *, pid_t *);
ssize_t	 ctl_send_fd(int, const void *, size_t, int);
struct Osm__CtlReply *ctl_request(int, struct Osm__CtlRequest *, int *,
	    char **);
struct Osm__CtlReply *ctl_call(const char *, struct Osm__CtlRequest *,
	    char **);
void	 ctl_reply_free(struct Osm__CtlReply *);
int	 ctl_order_listen(const char *, char *, size_t, char **);
struct Osm__CtlRequest *ctl_order_take(int, int, int *);
void	 ctl_order_answer(int, struct Osm__CtlReply *);

/* ctl-state.c */
const char *ctl_state_name(int state);	/* Osm__ProcState; NULL: none */

#endif
