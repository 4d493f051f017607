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
#define OSM_GUEST_START_MAX	(48U << 10) /* mosd to mosd-guest, bytes (32
					   shared paths of 1 KiB) */

#define nitems(a)	(sizeof(a) / sizeof((a)[0]))

/* log.c */
#define LOG_QUIET	(-1)	/* log_init: only fatal's message, on stderr */
void	 log_init(int debugging, const char *ident);
void	 log_setverbose(int v);
void	 log_setfd(int fd);
void	 log_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void	 log_warnx(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void	 log_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void	 log_debug(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/*
 * A log site that a peer or a client can set off: LOG_LIMIT_BURST lines
 * per key (a node, a uid) in each window, then a count of the rest, said
 * when the window ends ("... and 124,976 more in the last 10 s"). Declare
 * one static struct log_limit per site; a daemon calls log_limit_flush
 * every second. Keys past LOG_LIMIT_KEYS - 1 at once share the last slot.
 */
#define LOG_LIMIT_BURST		5
#define LOG_LIMIT_WINDOW_MS	10000
#define LOG_LIMIT_KEYS		8
#define LOG_LIMIT_OTHERS	UINT64_MAX
struct log_limit_slot {
	uint64_t	 key;
	uint64_t	 start_ms;	/* the window began */
	uint32_t	 logged;
	uint64_t	 held;		/* counted, not written */
	int		 pri;
	int		 used;
	char		 last[240];	/* the newest held back */
};
struct log_limit {
	uint64_t		 window_ms;	/* 0: LOG_LIMIT_WINDOW_MS */
	struct log_limit_slot	 slot[LOG_LIMIT_KEYS];
	struct log_limit	*next;		/* on log.c's list once used */
	int			 listed;
};
void	 log_limited_warnx(struct log_limit *l, uint64_t key, const char *fmt,
	    ...) __attribute__((format(printf, 3, 4)));
void	 log_limited_info(struct log_limit *l, uint64_t key, const char *fmt,
	    ...) __attribute__((format(printf, 3, 4)));
void	 log_limit_flush(void);
void	 fatal(const char *fmt, ...)
	    __attribute__((format(printf, 1, 2), noreturn));
void	 fatalx(const char *fmt, ...)
	    __attribute__((format(printf, 1, 2), noreturn));

/* xmalloc.c */
void	*xmalloc(size_t size);
void	*xcalloc(size_t n, size_t size);
void	*xreallocarray(void *old, size_t n, size_t size);
char	*xstrdup(const char *s);
char	*xstrndup(const char *s, size_t n);
int	 xasprintf(char **ret, const char *fmt, ...)
	    __attribute__((format(printf, 2, 3)));
int	 xvasprintf(char **ret, const char *fmt, va_list ap)
	    __attribute__((format(printf, 2, 0)));

/* toolclock.c */
void	 toolclock_mark(const char *what);

/* util.c */
uint64_t now_ms(void);
uint64_t now_us(void);
void	 sleep_ms(unsigned ms);
int	 parse_uint(const char *s, uint64_t min, uint64_t max, uint64_t *out);
int	 parse_duration_ms(const char *s, uint64_t *out);
int	 parse_size_mb(const char *s, uint64_t *out);
int	 parse_signal(const char *s, int *out);
int	 parse_nodes(const char *s, uint32_t **out, size_t *n);
int	 read_file_str(const char *path, char *buf, size_t size);
int	 read_file_u64(const char *path, uint64_t *out);
int	 write_file_str(const char *path, const char *s);
int	 mkdir_p(const char *path, mode_t mode);
int	 write_all(int fd, const void *buf, size_t len);
int	 read_all(int fd, void *buf, size_t len);

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
int	 proc_status(pid_t pid, const char *key, char *out, size_t size);
int	 proc_status_mask(pid_t pid, const char *key, uint64_t *mask);
int	 proc_cpu_ns(pid_t pid, uint64_t *user_ns, uint64_t *sys_ns);
int	 proc_last_cpu(pid_t pid);
int	 proc_usage_bound(pid_t pid, int most, uint64_t *user_ns,
	    uint64_t *sys_ns);
int	 proc_cpu_clock(pid_t pid, uint64_t *ns);
int	 proc_thread_cpu(pid_t pid, pid_t tid, uint64_t *ns);
ssize_t	 proc_threads(pid_t pid, pid_t **tids);
int	 proc_key_u64(const char *path, const char *key, uint64_t *v);
int	 proc_oom_kills(const char *dir, uint64_t *n);
int	 proc_wait_as(pid_t pid);
int	 proc_vdso(pid_t pid, uint64_t *start, uint64_t *end);

/* crypto.c: HMAC-SHA256, HKDF-SHA256, AES-256-GCM, SHA-256, from libcrypto */
#define CRYPTO_HMAC_LEN	32
#define CRYPTO_HASH_LEN	32	/* SHA-256 */
#define CRYPTO_KEY_LEN	32	/* AES-256 */
#define CRYPTO_IV_LEN	12	/* GCM's 96 bits */
#define CRYPTO_TAG_LEN	16
struct crypto_aead;
struct crypto_hash;
struct crypto_hash *crypto_hash_new(void);
void	 crypto_hash_update(struct crypto_hash *h, const void *data,
	    size_t len);
void	 crypto_hash_final(struct crypto_hash *h,
	    uint8_t out[CRYPTO_HASH_LEN]);
void	 crypto_hash_free(struct crypto_hash *h);
void	 crypto_hmac(const uint8_t *key, size_t keylen, const void *data,
	    size_t len, uint8_t out[CRYPTO_HMAC_LEN]);
void	 crypto_hkdf(const uint8_t *salt, size_t saltlen, const uint8_t *ikm,
	    size_t ikmlen, const uint8_t *info, size_t infolen, uint8_t *out,
	    size_t outlen);
struct crypto_aead *crypto_aead_new(const uint8_t key[CRYPTO_KEY_LEN],
	    int encrypt);
void	 crypto_aead_free(struct crypto_aead *a);
void	 crypto_aead_prepare(void);
void	 crypto_seal(struct crypto_aead *a, const uint8_t iv[CRYPTO_IV_LEN],
	    const void *aad, size_t aadlen, const void *in, size_t len,
	    uint8_t *out, uint8_t tag[CRYPTO_TAG_LEN]);
struct iovec;
void	 crypto_sealv(struct crypto_aead *a, const uint8_t iv[CRYPTO_IV_LEN],
	    const void *aad, size_t aadlen, const struct iovec *iov, int n,
	    uint8_t *out, uint8_t tag[CRYPTO_TAG_LEN]);
int	 crypto_open(struct crypto_aead *a, const uint8_t iv[CRYPTO_IV_LEN],
	    const void *aad, size_t aadlen, const uint8_t *in, size_t len,
	    uint8_t *out, const uint8_t tag[CRYPTO_TAG_LEN]);
int	 timingsafe_memcmp(const void *a, const void *b, size_t len);

/* filehash.c */
int	 file_sha256(int fd, uint64_t size, uint8_t out[CRYPTO_HASH_LEN],
	    char **cause);

/* key.c */
#define KEY_MIN		16
#define KEY_MAX		64
struct cluster_key {
	uint8_t		bytes[KEY_MAX];
	size_t		len;
};
int	 key_load(const char *path, struct cluster_key *key, char **cause);
int	 key_generate(const char *path, char **cause);

/* frame.c */
/*
 * A datagram between nodes: magic, version, kind, body length, the packed
 * protobuf-c body, then an HMAC-SHA256 over everything before it.
 */
#define FRAME_MAGIC	0x4f534d47U	/* "OSMG" */
#define FRAME_VERSION	1
#define FRAME_HDR	12
#define FRAME_MAC	CRYPTO_HMAC_LEN
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
void	 frame_put32(uint8_t *p, uint32_t v);
uint32_t frame_get32(const uint8_t *p);
void	 frame_header(uint8_t *out, uint16_t version, uint16_t kind,
	    uint32_t len);
size_t	 frame_pack(uint16_t kind, const void *body, size_t len,
	    const struct cluster_key *key, uint8_t *out, size_t outlen);
size_t	 frame_size(const uint8_t *buf, size_t n);
enum frame_error frame_unpack(const uint8_t *buf, size_t n, size_t max,
	    const struct cluster_key *key, uint16_t *kind, const uint8_t **body,
	    size_t *len);
const char *frame_strerror(enum frame_error e);

/* session.c */
/*
 * A session's frames: magic, version, kind, length, the body encrypted
 * with AES-256-GCM, the tag. SESSION_KEY_LEN bytes of keys per end, from
 * session_derive: its sending key and IV prefix, then its receiving ones.
 */
#define SESSION_VERSION		3	/* 2: SES_READ_DATA's bytes in its
					   message; 1: HMAC-SHA256, bodies
					   in clear */
#define SESSION_HDR		FRAME_HDR
#define SESSION_OVERHEAD	(SESSION_HDR + CRYPTO_TAG_LEN)
#define SESSION_HELD_WITH	65536	/* bytes of frames that may wait */
#define SESSION_NONCE_LEN	16
#define SESSION_DIR_LEN		4	/* the IV's first part: who sends */
#define SESSION_KEY_LEN		(2 * (CRYPTO_KEY_LEN + SESSION_DIR_LEN))
enum session_side {
	SESSION_HOME,			/* the deputy's end */
	SESSION_REMOTE			/* the guest agent's */
};
struct session {
	int			 fd;
	struct crypto_aead	*tx;
	struct crypto_aead	*rx;
	uint8_t			 tx_dir[SESSION_DIR_LEN];
	uint8_t			 rx_dir[SESSION_DIR_LEN];
	uint64_t		 tx_seq;	/* in the IV, never sent */
	uint64_t		 rx_seq;
	int			 broken;	/* a frame was refused */
	size_t			 max;		/* largest whole frame */
	uint8_t			*in;
	size_t			 inlen;
	size_t			 insize;
	size_t			 consumed;	/* by the last session_next */
	uint8_t			*out;
	size_t			 outsize;
	int			 hold;		/* frames wait in held */
	uint8_t			*held;		/* sealed, to go with the next:
						   SESSION_HELD_WITH bytes */
	size_t			 heldlen;
	size_t			 nwait;		/* frames in held */
	uint64_t		 nheld;		/* frames that waited so */
};
void	 session_init(struct session *s, int fd, const uint8_t *key,
	    size_t max);
void	 session_free(struct session *s);
void	 session_derive(const struct cluster_key *ck, const uint8_t *nonce_home,
	    const uint8_t *nonce_remote, uint32_t home, uint32_t remote,
	    enum session_side side, uint8_t *out);
int	 session_send(struct session *s, uint16_t kind, const void *body,
	    size_t len, char **cause);
struct ProtobufCMessage;
int	 session_send_msg(struct session *s, uint16_t kind,
	    const struct ProtobufCMessage *msg, char **cause);
void	 session_hold(struct session *s, int on);
size_t	 session_held(const struct session *s);
int	 session_flush(struct session *s, char **cause);
int	 session_fill(struct session *s, char **cause);
int	 session_next(struct session *s, uint16_t *kind, const uint8_t **body,
	    size_t *len, char **cause);
int	 session_take(struct session *s, uint16_t take, uint16_t *kind,
	    uint8_t **own, const uint8_t **body, size_t *len, char **cause);
int	 session_recv(struct session *s, uint16_t *kind, const uint8_t **body,
	    size_t *len, char **cause);
int	 session_ready(const struct session *s);
#define SESSION_CHUNK		(1U << 20)	/* image bytes per frame */
/*
 * An image straight through a session, no pump: session_image_write and
 * session_image_read are the writer's and the reader's (migrate/'s
 * mig_io), frames of kind; session_image_end sends the end frame, or
 * waits for it after the last byte read.
 */
typedef int (*session_aside_fn)(void *arg, uint16_t kind,
    const uint8_t *body, size_t len, char **cause);
struct session_image {
	struct session	*s;
	uint16_t	 kind;
	uint16_t	 end;
	const uint8_t	*p;		/* the frame being read */
	size_t		 left;
	int		 ended;		/* its end frame came */
	/*
	 * The reader's, for a frame of another kind between the image's
	 * (NULL: an error): -1 with *cause stops the image.
	 */
	session_aside_fn aside;
	void		*aside_arg;
};
int	 session_sendv(struct session *s, uint16_t kind,
	    const struct iovec *iov, int n, char **cause);
int	 session_image_write(void *arg, const struct iovec *iov, int n,
	    char **cause);
int	 session_image_read(void *arg, void *buf, size_t len, char **cause);
const void *session_image_view(void *arg, size_t len);
int	 session_image_end(struct session_image *si, int sender, char **cause);
int	 session_send_image(struct session *s, uint16_t kind, uint16_t end,
	    int (*fn)(int, void *, char **), void *arg, char **cause);
int	 session_recv_image(struct session *s, uint16_t kind, uint16_t end,
	    int (*fn)(int, void *, char **), void *arg, char **cause);

/* stream.c */
/* A stream record: u32 length (network order) then the packed message. */
#define STREAM_RECORD_MAX	(64U << 20)
int	 stream_write(int fd, const void *buf, size_t len);
int	 stream_read(int fd, uint8_t **out, size_t *len, size_t max,
	    char **cause);

/* cfg.c */
struct cfg_file {
	FILE		*f;
	const char	*path;
	unsigned	 line;
	char		*buf;
	size_t		 size;
};
int	 cfg_open(struct cfg_file *in, const char *path, char **cause);
int	 cfg_open_fd(struct cfg_file *in, const char *path, int fd,
	    char **cause);
void	 cfg_close(struct cfg_file *in);
int	 cfg_words(struct cfg_file *in, char **w, int max, char **cause);
int	 cfg_error(const struct cfg_file *in, char **cause,
	    const char *fmt, ...)
	    __attribute__((format(printf, 3, 4)));
int	 cfg_verror(const struct cfg_file *in, char **cause, const char *fmt,
	    va_list ap);

/* conf.c */
#define CONF_DEFAULT_WINDOW	128	/* the datagram size limits it first */
#define CONF_GUEST_UID_FIRST	60000
#define CONF_GUEST_UID_LAST	60999
#define CONF_NET_UID		59999	/* mosd's network process */
/* What local users and other nodes may make mosd hold (RELIABILITY.md) */
#define CONF_CLIENTS		256
#define CONF_CLIENTS_PER_USER	16
#define CONF_REQUESTS_PER_USER	1000	/* a second */
#define CONF_AGENTS_PER_USER	1024
#define CONF_CLIENT_TIMEOUT_MS	10000
#define CONF_CLIENT_OUTPUT	(64U << 10)
#define CONF_USER_OUTPUT	(1U << 20)
#define CONF_HANDSHAKES		64
#define CONF_HANDSHAKES_PER_NODE 4
#define CONF_HANDSHAKE_RATE	20
#define CONF_HANDSHAKE_TIMEOUT_MS 5000
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
	uid_t		 net_uid;	/* mosd's network process runs as */
	char		*policy_path;	/* policy.conf beside this file */
	uint16_t	 web_port;	/* the web monitor's; 0: off */
	char		 web_addr[64];	/* numeric, 127.0.0.1 unless given */
	struct sockaddr_storage web_sa;
	socklen_t	 web_salen;
	char		*web_token_path; /* web.token beside this file */
	char		**shared;	/* shared PATH...: the same file system
					   on every node, in plain spelling */
	size_t		 nshared;
	uint32_t	 clients;	/* users' tool connections, together */
	uint32_t	 clients_per_user;
	uint32_t	 requests_per_user;	/* a second, its tools' */
	uint32_t	 agents_per_user;	/* processes registered */
	uint64_t	 client_timeout_ms;	/* neither asks nor reads */
	uint64_t	 client_output;	/* unread reply bytes, a connection */
	uint64_t	 user_output;	/* a uid's */
	uint32_t	 handshakes;	/* incoming, under way at once */
	uint32_t	 handshakes_per_node;
	uint32_t	 handshake_rate;	/* new connections/s from a node */
	uint64_t	 handshake_timeout_ms;
};
#define OSM_SHARED_PATH_MAX	1024	/* bytes of a shared path, and NUL */
struct cluster_conf *conf_load(const char *path, char **cause);
struct cluster_conf *conf_load_fd(const char *path, int fd, char **cause);
int	 conf_is_shared(char * const *shared, size_t nshared,
	     const char *path);
int	 conf_shared_root(char * const *shared, size_t nshared,
	     const char *path);
void	 conf_free(struct cluster_conf *c);
const struct conf_node *conf_find(const struct cluster_conf *c, uint32_t id);
int	 conf_find_self(struct cluster_conf *c, char **cause);

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
	int		 strict_files;	/* files strict: no read ahead, no
					   write behind away (mosrun -s) */
	int		 move;		/* moves: how mosd's moves of them
					   carry the memory, a MoveMode
					   (ctl.proto); 0, MOVE_DEFAULT:
					   as mosrun said, else live */
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
struct policy *policy_load(const char *path, char **cause);
struct policy *policy_load_fd(const char *path, int fd, char **cause);
struct policy *policy_default(void);
void	 policy_free(struct policy *pol);
int	 policy_has_node(const struct policy_nodes *nodes, uint32_t id);
const struct policy_rule *policy_rule(const struct policy *pol,
	    const char *user, const char *const *groups, size_t ngroups);
int	 policy_accepts(const struct policy *pol, uint32_t self,
	    const char *user, const char *const *groups, size_t ngroups,
	    uint32_t guests_now, char **why);
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
int	 ctl_sockaddr(const char *path, struct sockaddr_un *sun,
	    socklen_t *len);
int	 ctl_connect(const char *path, int timeout, char **cause);
int	 ctl_peercred(int fd, uid_t *uid, gid_t *gid, pid_t *pid);
ssize_t	 ctl_send_fd(int s, const void *buf, size_t len, int fd);
int	 ctl_recv_record(int fd, size_t max, uint8_t **buf, size_t *len,
	    int *rfd);
int	 ctl_request_send(int fd, struct Osm__CtlRequest *req,
	    char **cause);
struct Osm__CtlReply *ctl_reply_read(int fd, int *rfd, char **cause);
struct Osm__CtlReply *ctl_request(int fd, struct Osm__CtlRequest *req, int *rfd,
	    char **cause);
struct Osm__CtlReply *ctl_call(const char *path, struct Osm__CtlRequest *req,
	    char **cause);
void	 ctl_reply_free(struct Osm__CtlReply *reply);
int	 ctl_order_listen(const char *what, char *path, size_t size,
	    char **cause);
struct Osm__CtlRequest *ctl_order_take(int lfd, int timeout, uid_t from,
	    int *fd);
void	 ctl_order_answer(int fd, struct Osm__CtlReply *reply);

/* ctl-state.c */
enum ctl_node_state {
	CTL_NODE_UNKNOWN,	/* never heard of since this mosd started */
	CTL_NODE_UP,
	CTL_NODE_DOWN		/* heard of, silent past the timeout */
};
const char *ctl_state_name(int state);	/* Osm__ProcState; NULL: none */
enum ctl_node_state ctl_node_state(int up, int known);
const char *ctl_node_state_name(enum ctl_node_state state);
const char *ctl_flag_name(size_t i, uint32_t *bit);
char	*ctl_flags_text(uint32_t flags, const char *sep, const char *none);

/*
 * ctl-json.c: the JSON documents of control replies (jansson), the same
 * for the tools' --json and mosd's web API. Each returns a new reference.
 */
struct json_t;
struct json_t *ctl_json_status(const struct Osm__CtlReply *r);
struct json_t *ctl_json_stats(const struct Osm__CtlReply *r);
struct json_t *ctl_json_ps(const struct Osm__CtlReply *r, uint32_t pid);
struct json_t *ctl_json_reply(const struct Osm__CtlReply *r);
char	*ctl_json_text(struct json_t *doc);
int	 ctl_json_print(FILE *f, struct json_t *doc);

#endif
