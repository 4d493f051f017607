/*
 * agent/ inside: what the deputy's files (deputy*.c), the guest agent's
 * (guest*.c) and the two's shared parts (husk.c, conn.c, image.c) have in
 * common.
 * The files of each agent are layered: each calls only those below it in
 * this header's order, never back up (docs/ARCHITECTURE.md).
 */
#ifndef AGENT_INTERNAL_H
#define AGENT_INTERNAL_H

#include <sys/types.h>

#include <ev.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include "agent.h"
#include "lib/osm.h"
#include "libremote/remote.h"
#include "migrate/migrate.h"
#include "proto/ctl.pb-c.h"
#include "proto/migrate.pb-c.h"

/* husk.c: P at home while it runs elsewhere */
struct husk_lane {			/* one thread of the husk */
	pid_t		 tid;
	int		 memfd;		/* the area shared with its stub */
	uint8_t		*shm;		/* our view: control page, scratch */
	size_t		 len;
	uint64_t	 base;		/* the same area in the task */
	int		 running;	/* the stub runs: not stopped by us */
	int		 busy;		/* a call was asked and not answered */
	/* the deputy's (deputy-serve.c) */
	struct home_call *call;		/* the forwarded call it runs */
	int		 nudged;	/* broken off for a checkpoint */
	uint8_t		*held;		/* its reply, until signals */
	size_t		 held_len;
};
struct husk {
	struct mig_task	*t;
	uint64_t	 code;		/* the stub */
	struct husk_lane *lanes;	/* the lead's first */
	size_t		 nlanes;
};
enum husk_stop {
	HUSK_RETURNED,		/* the call returned */
	HUSK_SIGNAL,		/* a signal for the process */
	HUSK_OTHER,		/* an interrupt or a group stop */
};
int		 husk_make(struct mig_task *t, size_t scratch, struct husk *h,
		    char **cause);
void		 husk_free(struct husk *h);
struct husk_lane *husk_lane(struct husk *h, pid_t tid);
int		 husk_busy(const struct husk *h);
uint8_t		*husk_scratch(const struct husk_lane *l, uint64_t *base,
		    size_t *len);
int		 husk_run(struct husk *h, char **cause);
int		 husk_run_lane(struct husk *h, struct husk_lane *l,
		    char **cause);
int		 husk_call(struct husk_lane *l, long nr, const uint64_t *args,
		    int wait, long *rv);
enum husk_stop	 husk_stopped(struct husk *h, struct husk_lane *l, int status,
		    long *rv, siginfo_t *si);
int		 husk_continue(struct husk *h, struct husk_lane *l, int sig,
		    char **cause);
int		 husk_hold(struct husk *h, char **cause);
int		 husk_grow(struct husk *h, struct husk_lane *l, size_t want,
		    char **cause);
int		 husk_unblock(struct husk *h, char **cause);
int		 husk_default(struct husk *h, int sig, char **cause);
int		 husk_end(struct husk *h, int signaled, int status,
		    char **cause);
int		 husk_say(struct mig_task *t, int fd, const char *msg,
		    size_t len);
struct husk_lane *husk_lane_add(struct husk *h, pid_t tid, size_t scratch,
		    char **cause);
int		 husk_lane_end(struct husk *h, struct husk_lane *l,
		    char **cause);

/* conn.c: an agent's connection to its node's mosd */
struct conn {
	struct ev_loop	*loop;
	int		 started;	/* watched on loop */
	const char	*sock;		/* mosd's control socket */
	char		 who[48];	/* the agent, in the log */
	int		 fd;		/* to mosd; -1: not now */
	ev_io		 ev;
	ev_timer	 reconnect;
	int		 order_fd;	/* where mosd sends orders, or -1 */
	ev_io		 order_ev;
	char		 order_path[64];
	uid_t		 order_uid;	/* orders come from it or root */
	void		(*describe)(void *arg, Osm__CtlAgent *a);
	void		(*order)(void *arg, Osm__CtlRequest *req, int fd);
	void		*arg;
};
int		 conn_init(struct conn *c, const char *sock, const char *who,
		    const char *what, void (*describe)(void *,
		    Osm__CtlAgent *), void (*order)(void *, Osm__CtlRequest *,
		    int), void *arg, char **cause);
int		 conn_hello(struct conn *c, uint32_t *self, char **cause);
void		 conn_start(struct conn *c, struct ev_loop *loop);
void		 conn_report(struct conn *c);
Osm__CtlReply	*conn_request(struct conn *c, Osm__CtlRequest *req, int *fd,
		    char **cause);
int		 conn_send(struct conn *c, Osm__CtlRequest *req,
		    char **cause);
Osm__CtlReply	*conn_reply(struct conn *c, int *fd, char **cause);
struct stat;
size_t		 conn_hashes(int fd, const char *const *paths,
		    const struct stat *st, size_t n,
		    uint8_t (*sha)[CRYPTO_HASH_LEN], int *known);
void		 conn_close(struct conn *c);

/* image.c: an image through the session, either way; a SesError's reason */
char		*ses_error_reason(const uint8_t *body, size_t len,
		    const char *none);
int		 image_send(struct session *s, struct mig_live *lv, int flags,
		    struct mig_stats *st, char **cause);
int		 image_recv(struct session *s, struct mig_task *t,
		    struct mig_restore_opts *opts, session_aside_fn aside,
		    void *aside_arg, struct mig_stats *st, char **cause);

/* postcopy.c */
#define GUEST_OOM_SCORE_ADJ 1000	/* guest_oom_first: the killer's first */
#define POST_SILENCE_MS	20000	/* a peer silent that long is gone */
struct postcopy_counts {
	uint64_t	 asks;		/* faults the target asked about */
	uint64_t	 answered;	/* pages sent in answer */
	uint64_t	 pushed;	/* pages pushed */
	uint64_t	 us;		/* the whole of it */
};
int		 postcopy_serve(struct session *s, struct mig_post *pp,
		    int silence_ms, struct postcopy_counts *pc, char **cause);
int		 postcopy_fetch(struct session *s, struct mig_fetch *f,
		    int silence_ms, char **cause);

/*
 * stub.c: the clock stub in a process (R away, P back home), its CPU
 * clocks answered inside it with the time used elsewhere added
 */
struct stub {
	pid_t		 pid;		/* the process */
	uint64_t	 start;		/* its pages; 0: none */
	uint64_t	 data;		/* the page of its bases */
	size_t		 len;		/* code, then data and the table */
	size_t		 ntable;	/* entries in the table */
	int		 one;		/* one thread: the first entry's */
	uint64_t	 tramp;		/* the displaced instructions */
	uint64_t	 fn;		/* the vDSO's clock_gettime */
	size_t		 displaced;	/* bytes of it */
	uint8_t		 orig[16];	/* as they were */
	struct mig_hidden hidden;	/* for dumps of the process */
};
struct stub_usage {			/* as getrusage's ru_utime, ru_stime */
	int64_t		 user_sec, user_usec;
	int64_t		 sys_sec, sys_usec;
};
int		 stub_install(struct stub *s, struct mig_task *t, pid_t pid,
		    uint64_t proc_ns, uint64_t user_ns, uint64_t sys_ns,
		    const struct mig_cpu *c, size_t n, char **cause);
size_t		 stub_displace(const uint8_t *p, size_t max);
int		 stub_thread_gone(struct stub *s, size_t i, char **cause);
int		 stub_threaded(struct stub *s, char **cause);
int		 stub_remove(struct stub *s, struct mig_task *t, char **cause);
uint64_t	 stub_symbol(const uint8_t *elf, size_t len, const char *name);
void		 stub_symbols(const uint8_t *elf, size_t len,
		    const char *const *names, size_t n, uint64_t *offs);
int		 stub_poke(pid_t pid, uint64_t addr, const void *buf, size_t len,
		    char **cause);
int		 stub_jump(pid_t pid, uint64_t fn, uint64_t to, size_t len,
		    char **cause);
uint64_t	 stub_map(struct mig_task *t, uint64_t below, uint64_t fn,
		    size_t len);
void		 stub_unmap(struct mig_task *t, uint64_t at, size_t len);
int		 stub_move_threads(struct mig_task *t, uint64_t from,
		    size_t len, uint64_t to, char **cause);

/*
 * rstub.c: the read stub in R, its reads of a window answered inside it
 * and its writes of a descriptor gathered there (libremote/rstub.c keeps
 * what it serves)
 */
struct rstub_patch {			/* one function of libc's, patched */
	pid_t		 pid;		/* the process */
	uint64_t	 fn;		/* 0: not patched */
	uint64_t	 code, saved, ret;	/* its stub's, in the process */
	uint64_t	 tramp;		/* its displaced instructions */
	size_t		 displaced;
	int		 offset_kept;	/* pread64's, under the stack */
	uint64_t	 lsyscall;	/* libc's syscall(), or 0 */
	uint8_t		 orig[16];	/* as they were */
	struct mig_hidden hidden;	/* for dumps of the process */
};
struct rstub {
	uint64_t	 start;		/* its pages: code, then shared; 0 none */
	size_t		 len;
	struct rstub_patch read, pread, write, pwrite, fdatasync, fsync,
			 lseek, fcntl, flock, fstat, close,
			 ident[RSTUB_IDENT];
	struct rstub_shm *shm;		/* our mapping of the shared part */
	uint64_t	 shared;	/* R's */
};
int		 rstub_install(struct rstub *s, struct mig_task *t, pid_t pid,
		    char **cause);
#define RSTUB_NEAR	(1ULL << 30)	/* a jump's reach, as we use it */
/* where libc's syscall() has made its call: mov 8(%rsp), %r9; syscall */
#define RSTUB_SYSCALL_DONE	0x19
/* a function of libc's: where it is in the file, and its first bytes */
struct rstub_sym {
	uint64_t	 off;		/* 0: none */
	uint8_t		 start[16];
};
/* a stub of one, as linked: its page's start, and points in it */
struct rstub_entry {
	const uint8_t	*base, *code, *saved, *ret, *tramp;
};
int		 rstub_libc(pid_t pid, uint64_t *base, char *path,
		    size_t size);
void		 rstub_symbols(const char *path, const char *const *names,
		    struct rstub_sym *syms, size_t n);
int		 rstub_prepare(struct rstub_patch *p, pid_t pid,
		    const struct rstub_sym *sym, uint64_t fn, uint64_t at,
		    uint8_t *page, const struct rstub_entry *e);
uint64_t	 rstub_map(struct mig_task *t, uint64_t base, uint64_t fn,
		    uint64_t fn2, size_t len);
int		 rstub_patch(struct rstub_patch *p, struct mig_task *t,
		    char **cause);
int		 rstub_patch_two(struct rstub_patch *a, struct rstub_patch *b,
		    struct mig_task *t, char **cause);
void		 rstub_rewind(void *arg, struct user_regs_struct *r);
int		 rstub_locking(const struct rstub *s, uint64_t pc);

/*
 * ustub.c: times and getrusage of P at home, and of R away, with what
 * the process used elsewhere
 */
struct ustub {
	uint64_t	 start;		/* its page; 0: none */
	struct rstub_patch times, getrusage;
};
int		 ustub_install(struct ustub *u, const struct stub *c,
		    struct mig_task *t, pid_t pid, int away, char **cause);
const struct mig_hidden *ustub_hidden(const struct ustub *u);
int		 ustub_remove(struct ustub *u, struct mig_task *t,
		    char **cause);

/* --- the deputy ------------------------------------------------------ */

enum deputy_state {
	DEPUTY_HOME,		/* P runs natively */
	DEPUTY_HELD,		/* at home, stopped for a dump or a move */
	DEPUTY_AWAY,		/* P is a husk, R runs on where */
};

#define DEPUTY_HISTORY	8	/* events kept for mosps -v */

struct deputy {
	const struct deputy_opts *o;
	pid_t			 pid;		/* P */
	uint32_t		 self;		/* the home node */
	enum deputy_state	 state;
	uint32_t		 where;		/* away: the node R runs on */
	char			 command[256];
	int			 log_fd;	/* OSM_DEPUTY_LOG, or -1 */
	struct ev_loop		*loop;
	ev_signal		 sigchld;
	struct conn		 conn;		/* to mosd, and its orders */
	ev_timer		 stats;		/* how P does, at home */

	/* held and away */
	struct mig_task		*task;		/* P, held by us */
	struct session		 ses;		/* with R's guest; fd -1: none */
	ev_io			 ses_ev;
	ev_prepare		 ses_pending;	/* what ses_ev cannot see */
	ev_timer		 ses_timer;	/* silence on the session */
	struct husk		 husk;		/* P while away */
	struct mig_pin		 pin;		/* P and us, while away */
	int			 move;		/* this order's MoveMode */
	int			 post_home;	/* this way home is post-copy */
	int			 stop_sent;	/* our stop signal, to pass */
	int			 ending;	/* the signal P dies of */
	int			 gone;		/* P's end reaped, not by SIGCHLD's */
	uint64_t		 cpu_ns;	/* total, for mosps */
	struct stub		 stub;		/* in P at home (deputy-clock.c) */
	struct ustub		 ustub;		/* its times, getrusage */
	uint64_t		 carry_ns;	/* CPU P used away, which its */
	uint64_t		 carry_user_ns;	/* kernel does not count */
	uint64_t		 usage_user_ns;	/* and of its times and */
	uint64_t		 usage_sys_ns;	/* getrusage, each its own */
	struct mig_cpu		*tcpu;		/* each thread's so */
	size_t			 ntcpu;
	uint64_t		 cpu_sent_ns;	/* P's, sent with the last move out */
	uint64_t		 cpu_exec_ns;	/* P's before the program: mosrun's */
	uint64_t		 cpu_at;	/* when cpu_ns was last seen */
	uint32_t		 cpu_permille;	/* of one CPU: 2000 is two */
	uint32_t		 threads;	/* at home, last counted */
	uint64_t		 rss;
	struct mig_file		*files;		/* P maps, listed at a move */
	size_t			 nfiles;
	struct deputy_mapped {			/* told to the guest: away, */
		char		*path;		/* R maps them */
		uint64_t	 dev, ino;
	}			*mapped;
	size_t			 nmapped;
	ev_io			 ident_ev;	/* a pidfd of P's parent */
	pid_t			 ident_ppid;	/* which */
	struct deputy_msg {			/* the copy's, in their turn */
		uint16_t	 kind;
		uint8_t		*body;
		size_t		 len;
	}			*queue;
	size_t			 nqueue;
	uint64_t		 cancel_seq;	/* a call queued, to break off */
	struct deputy_calls {			/* served since P's exec */
		uint64_t	 deputy;	/* made by us: P not woken */
		uint64_t	 waited;	/* by P, ended while we waited */
		uint64_t	 trapped;	/* by P, ended in its trap */
	}			 calls;
	int			 io_pidfd;	/* P's, > 0 (deputy-io.c) */
	int			 io_fd;		/* a duplicate of P's, > 0 */
	int			 io_fdnum;	/* P's descriptor */
	uint8_t			*io_buf;	/* reads ahead, IO_READ_MAX */

	/* why it is where it is (deputy-why.c) */
	char			 history[DEPUTY_HISTORY][160];
	char			*history_p[DEPUTY_HISTORY];
	size_t			 nhistory;
	uint32_t		 homecomings;	/* of its own */
	char			 home_why[160];

	/* checkpoints */
	char			*ckpt_base;	/* absolute */
	unsigned		 ckpt_last;	/* FILE.N written last, or 0 */
	ev_timer		 ckpt_timer;	/* -A */
	int			 ckpt_asked;	/* away: R's context asked for */
	ev_timer		 ckpt_nudge;	/* breaks off R's blocked calls */
	int			*ckpt_waiting;	/* orders to answer, when done */
	size_t			 nckpt_waiting;
	Osm__CtlCheckpoints	 ckpt_seen;	/* for mosps */
	char			*ckpt_ok_path;
	char			 ckpt_why[256];	/* the last failure's */
	int			 ckpt_told;	/* P's stderr heard of one */
	char			*ckpt_said;	/* on P's stderr since the last */
	size_t			 ckpt_nsaid;	/* good one (deputy_ckpt_said) */
	ev_timer		 ckpt_soon;	/* --checkpoint-on's signal came */
	int			 ckpt_signalled; /* since the last one written */
	const char		*ckpt_reason;	/* asked for by: timer, request */
	struct mig_track	*track;		/* P's writes, at home */
	int			 ckpt_delta;	/* the next may add to the last */
	int			 ckpt_whole;	/* the one being written is */
	uint32_t		 ckpt_crc;	/* the last one's final seal */
	uint64_t		 ckpt_records;
	unsigned		*ckpt_start;	/* FILE.N's chain starts at */
	unsigned		 ckpt_gone;	/* FILE.1 to this are forgotten */
};

/* deputy-why.c */
void	 deputy_why(struct deputy *d, const char *fmt, ...)
	    __attribute__((format(printf, 2, 3)));
void	 deputy_why_home(struct deputy *d, const char *reason);
void	 deputy_why_describe(struct deputy *d, Osm__CtlAgent *a);

/* deputy-clock.c */
void	 deputy_clock_restored(struct deputy *d);
void	 deputy_clock_hold(struct deputy *d);
const struct mig_hidden *deputy_clock_hidden(struct deputy *d);
void	 deputy_clock_usage(struct deputy *d, uint64_t *user_ns,
	    uint64_t *sys_ns);
void	 deputy_clock_cpu(struct deputy *d, uint64_t *user_ns,
	    uint64_t *sys_ns);
void	 deputy_clock_leave(struct deputy *d);
void	 deputy_clock_clone(struct deputy *d, pid_t tid);
void	 deputy_clock_exec(struct deputy *d);

/* deputy-hold.c */
int	 deputy_hold_options(struct deputy *d, char **cause);
int	 deputy_hold_pass(struct deputy *d, int sig);
int	 deputy_hold_seize(struct deputy *d, char **cause);
int	 deputy_hold(struct deputy *d, int stopped, char **cause);
void	 deputy_hold_resume(struct deputy *d);
int	 deputy_hold_to_entry(struct deputy *d, char **cause);

/* deputy-signal.c */
int	 deputy_signal_pending(struct deputy *d, pid_t tid);
int	 deputy_signal_relay(struct deputy *d, struct husk_lane *l,
	    const siginfo_t *si, char **cause);
int	 deputy_signal_stolen(struct deputy *d, char **cause);
int	 deputy_signal_stopped(struct deputy *d, const uint8_t *body,
	    size_t len, char **cause);

/* deputy-files.c */
int	 deputy_files_list(struct deputy *d, char **cause);
void	 deputy_files_known(struct deputy *d);
void	 deputy_files_prehash(struct deputy *d);
void	 deputy_files_clear(struct deputy *d);
void	 deputy_files_setup(struct deputy *d, Osm__SesSetup *setup);
void	 deputy_files_setup_free(Osm__SesSetup *setup);
int	 deputy_files_relist(struct deputy *d, char **cause);
int	 deputy_files_more(struct deputy *d, char **cause);
int	 deputy_files_answer(struct deputy *d, const uint8_t *body,
	    size_t len, char **cause);
void	 deputy_files_forget(struct deputy *d);
int	 deputy_files_send(struct deputy *d, uint16_t kind, char **cause);

/* deputy-io.c */
int	 deputy_io_opened(struct deputy *d, uint64_t seq, int fd,
	    char **cause);
int	 deputy_io_fdinfo(pid_t pid, int fd, uint64_t *pos,
	    unsigned int *flags);
int64_t	 deputy_io_room(struct deputy *d, const struct home_call *hc);
int	 deputy_io_fd(struct deputy *d, const uint8_t *body, size_t len,
	    char **cause);
int	 deputy_io_read(struct deputy *d, const uint8_t *body, size_t len,
	    char **cause);
void	 deputy_io_close(struct deputy *d);
int	 deputy_io_call(struct deputy *d, const struct home_call *hc,
	    uint8_t *mem, uint64_t base, size_t room, long *rv);
struct Osm__RemoteCall;
int	 deputy_io_self(struct deputy *d, const struct Osm__RemoteCall *c,
	    int *fd);
int	 deputy_io_write(struct deputy *d, const struct home_call *hc,
	    char **cause);

/* deputy-ident.c */
int	 deputy_ident_send(struct deputy *d, char **cause);

/* deputy-ckpt.c */
void	 deputy_ckpt_init(struct deputy *d);
int	 deputy_ckpt_take(struct deputy *d, int fd, char **cause);
void	 deputy_ckpt_home(struct deputy *d);
int	 deputy_ckpt_away(struct deputy *d, const uint8_t *body, size_t len,
	    char **lost);
void	 deputy_ckpt_ended(struct deputy *d);
void	 deputy_ckpt_describe(struct deputy *d, Osm__CtlAgent *a);
int	 deputy_ckpt_last(struct deputy *d, char **path, char **cause);
void	 deputy_ckpt_said(struct deputy *d, const char *msg, size_t len);
size_t	 deputy_ckpt_retell(struct deputy *d, const char *msg, size_t len,
	    char **notice);
int	 deputy_ckpt_recover(struct deputy *d);

/* deputy-serve.c */
void	 deputy_serve_done(struct deputy *d);
void	 deputy_serve_enqueue(struct deputy *d, uint16_t kind,
	    const uint8_t *body, size_t len);
int	 deputy_serve_may(struct deputy *d, uint16_t kind,
	    const uint8_t *body, size_t len);
int	 deputy_serve_dequeue(struct deputy *d, uint16_t *kind,
	    uint8_t **body, size_t *len);
void	 deputy_serve_clear(struct deputy *d);
int	 deputy_serve_behind(const uint8_t *body, size_t len);
int	 deputy_serve_wait(struct deputy *d, char **cause);
int	 deputy_serve_flush(struct deputy *d, char **cause);
int	 deputy_serve_call(struct deputy *d, const uint8_t *body, size_t len,
	    char **cause);
int	 deputy_serve_cancel(struct deputy *d, const uint8_t *body, size_t len,
	    char **cause);
int	 deputy_serve_stop(struct deputy *d, pid_t tid, int status,
	    char **cause);
int	 deputy_serve_settle(struct deputy *d, char **cause);

/* deputy-thread.c */
int	 deputy_thread_new(struct deputy *d, const uint8_t *body, size_t len,
	    char **cause);
int	 deputy_thread_exit(struct deputy *d, const uint8_t *body, size_t len,
	    char **cause);

/* deputy-move.c */
void	 deputy_move_close(struct deputy *d);
int	 deputy_move_out(struct deputy *d, uint32_t node, int stopped,
	    char **cause);
void	 deputy_move_home(struct deputy *d);
int	 deputy_move_arrive_home(struct deputy *d, char **cause);
int	 deputy_move_post_home(struct deputy *d);

/* deputy-away.c */
void	 deputy_away_lost(struct deputy *d, const char *why);
void	 deputy_away_lost_held(struct deputy *d, uint32_t node,
	    const char *why);
void	 deputy_away_ended(struct deputy *d);
int	 deputy_away_come_home(struct deputy *d, const char *why,
	    char **cause);
int	 deputy_away_move(struct deputy *d, uint32_t node, int stopped,
	    char **cause);
void	 deputy_away_session_cb(struct ev_loop *loop, ev_io *w, int revents);
void	 deputy_away_pending_cb(struct ev_loop *loop, ev_prepare *w,
	    int revents);
void	 deputy_away_silence_cb(struct ev_loop *loop, ev_timer *w,
	    int revents);
void	 deputy_away_drain(struct deputy *d);

/* --- the guest agent ------------------------------------------------- */

/* A file R maps, as its guest has it (guest-files.c). */
struct guest_file {
	char		*path;		/* at home */
	Osm__ImgFileId	 id;		/* at home, its hash in sha */
	uint8_t		 sha[32];
	int		 fd;		/* read-only, here: what R maps */
	int		 memfd;		/* its bytes from home; -1: a local copy */
	int		 carry;		/* replaced at home: dumps carry it */
	char		 link[64];	/* /proc/<G>/fd/<fd>, for R to open */
	char		 self_link[64];	/* /proc/self/fd/<fd>: R, born with
					   our descriptors, in a user
					   namespace, where ours are barred */
	uint64_t	 dev, ino;	/* of fd */
	int		 late;		/* had once R was made: not in its
					   table (guest-move.c's holder) */
	struct mig_range *have;		/* memfd: the bytes in, sorted */
	size_t		 nhave;
};

/* A mapping R waits for while its file's bytes come (guest-serve.c). */
struct guest_map {
	int		 busy;
	uint64_t	 id;		/* R's notification */
	uint64_t	 args[6];	/* its mmap's */
	uint64_t	 seq;		/* of the ask answered next */
	uint64_t	 off;		/* and the bytes it asked for */
	int		 hashing;	/* it asked for the file's hash */
	struct guest_file *f;		/* NULL: its description not in yet */
};

/*
 * A call of R's at home (guest-serve.c), one per thread of R at most: each
 * thread of R's runs its calls in its own thread of the husk at home.
 */
struct guest_call {
	uint64_t	 seq;
	pid_t		 tid;		/* R's thread, ours */
	int		 has_mask;	/* a wait, with R's mask for it */
	uint64_t	 mask;
	int		 cancelled;	/* asked to stop for a signal */
	uint8_t		*reply;		/* in, kept until the others' are */
	size_t		 reply_len;
};

/* A signal held until the calls it may break off have answered. */
struct guest_held {
	int		 signo;
	pid_t		 tid;		/* for this thread (ours) alone; 0: any */
};

/* guest-lookup.c: stats the agent makes itself, beneath shared paths */
#define GUEST_LOOKUP_DIRS	16	/* directories' verdicts kept */
struct guest_lookup {
	int		*roots;		/* ours, of each shared path; or -1 */
	size_t		 n;
	uint32_t	 uid, gid;	/* the owner's, as the opener has them */
	uint32_t	*groups;
	size_t		 ngroups;
	struct lookup_dir {		/* may the owner search it? */
		uint64_t	 dev, ino;
		struct timespec	 ctime;
		int		 search;
	}		 dirs[GUEST_LOOKUP_DIRS];
	size_t		 next;		/* the one to replace */
	uint64_t	 made;		/* stats answered so */
};
void	 guest_lookup_init(struct guest_lookup *l, size_t n, uint32_t uid,
	    uint32_t gid, const uint32_t *groups, size_t ngroups);
void	 guest_lookup_root(struct guest_lookup *l, size_t i, const char *path,
	    const struct stat *st);
void	 guest_lookup_free(struct guest_lookup *l);
int	 guest_lookup_stat(struct guest_lookup *l, char **paths,
	    const char *path, int nofollow, struct stat *st);

struct guest {
	Osm__GuestStart		*gs;
	Osm__ProcState		 state;	/* as mosd is told */
	struct ev_loop		*loop;
	struct conn		 conn;		/* to mosd, and its orders */
	struct session		 ses;		/* with the deputy */
	ev_io			 ses_ev;
	ev_prepare		 ses_pending;	/* what ses_ev cannot see */
	pid_t			 pid;		/* R */
	int			 ids_kept;	/* R has its home's pid, tids */
	int			 threaded;	/* R has had threads */
	struct remote		*remote;	/* R's calls (libremote) */
	ev_io			 notif_ev;
	ev_signal		 sigchld;
	ev_timer		 stats;
	ev_tstamp		 near_at;	/* R's CPU looked at */
	int			 near_cpu;	/* we run on, or -1 */
	struct emulate_base	 base;		/* CPU used before it came */
	struct mig_cpu		*tcpu;		/* each thread's, as R knows */
	size_t			 ntcpu;		/* it: the stub's table's order */
	struct guest_call	*calls;		/* at home */
	size_t			 ncalls;
	struct guest_held	 held[NSIG];	/* until their replies */
	int			 nheld;
	int			 expelled;	/* asked home to call it home */
	int			 homeward;	/* asked it for its own needs */
	int			 ckpt_wanted;	/* home asked for R's context */
	uint64_t		 oom_kills;	/* the node's, as R arrived */
	int			 short_of_memory; /* the guard sends it home */
	int			 uffd;		/* R's, for live dumps; or -1 */
	int			 stop_copy;	/* its moves stop and copy */
	int			 strict_io;	/* mosrun -s: calls as they are */
	int			 devfd;		/* /dev/userfaultfd, or -1 */
	int			 post;		/* this arrival is post-copy */
	int			 home_how;	/* GUEST_HOME_*: its way home */
	struct guest_file	**files;	/* R maps */
	size_t			 nfiles;
	struct mig_stand_in	*stand_ins;	/* for dumps of R */
	uint64_t		 ask_seq;
	struct guest_map	 map;
	struct guest_clone {			/* threads R makes, waiting */
		uint64_t	 id;		/* its clone's notification */
		pid_t		 tid;		/* the maker, ours */
		uint64_t	 seq;		/* asked of home */
	}			*clones;
	size_t			 nclones;
	int			 clone_asked;	/* the first one's */
	uint64_t		 thread_seq;
	struct stub		 stub;
	struct ustub		 ustub;		/* R's times, getrusage */
	struct rstub		 rstub;		/* R's reads (rstub.c) */
	ev_timer		 flush;		/* writes gathered go home */
	int			 opener;	/* guest-open.c's socket, or -1 */
	struct guest_lookup	 lookup;	/* stats beneath shared paths */
	uint64_t		 held_late;	/* calls behind the timer sent */
};

/* guest-ses.c */
void	 guest_ses_stop(struct guest *g, int code)
	    __attribute__((noreturn));
void	 guest_ses_fail(struct guest *g, const char *why)
	    __attribute__((noreturn));
int	 guest_ses_send_raw(struct guest *g, uint16_t kind, const void *buf,
	    size_t len);
int	 guest_ses_send(struct guest *g, uint16_t kind,
	    const struct ProtobufCMessage *msg);
void	 guest_ses_out(struct guest *g, int post);
void	 guest_ses_out_later(struct guest *g);
void	 guest_ses_flush(struct guest *g);
void	 guest_ses_settle(struct guest *g);
void	 guest_ses_linger(struct guest *g);

/* guest-open.c */
int	 guest_open_start(const Osm__GuestStart *gs, char **cause);
int	 guest_open(void *arg, const char *path, int flags, char **cause);
int	 guest_open_stat(void *arg, const char *path, int nofollow,
	    struct stat *st);
int	 guest_open_unlink(void *arg, const char *path);
int	 guest_open_here(void *arg, const char *path, int flags, int mode);
int	 guest_open_who(struct guest *g, uint32_t *gid, uint32_t *groups,
	    size_t max);
void	 guest_open_attach(struct guest *g);
void	 guest_open_follow(struct guest *g);

/* guest-stub.c */
int	 guest_stub_install(struct guest *g, struct mig_task *t,
	    char **cause);
const struct mig_hidden *guest_stub_hide(struct guest *g,
	    struct mig_task *t);
void	 guest_stub_threads(struct guest *g, struct mig_task *t);
void	 guest_stub_thread_gone(struct guest *g, pid_t vtid);
int	 guest_stub_threaded(struct guest *g);
void	 guest_stub_reads(struct guest *g, struct mig_task *t);
void	 guest_stub_reads_off(struct guest *g);
int	 guest_stub_locking(struct guest *g);

/* guest-files.c */
struct guest_file *guest_files_find(struct guest *g,
	    const Osm__ImgFileId *id, int copy);
int	 guest_files_candidate(const char *path, const Osm__ImgFileId *id);
struct guest_file *guest_files_add(struct guest *g, const char *path,
	    const Osm__ImgFileId *id, int copy, char **cause);
void	 guest_files_free(struct guest *g);
int	 guest_files_missing(const struct guest_file *f, uint64_t off,
	    uint64_t len, uint64_t *o, uint64_t *n);
int	 guest_files_put(struct guest_file *f, uint64_t off,
	    const uint8_t *data, size_t len, char **cause);
int	 guest_files_setup(struct guest *g, Osm__SesFile **files, size_t nfiles,
	    char **cause);
const char *guest_files_mapped(void *arg, const Osm__ImgVma *v);
void	 guest_files_stand_in(struct guest *g, struct mig_task *t);

/* guest-signal.c */
struct guest_call *guest_signal_call(struct guest *g, uint64_t seq);
void	 guest_signal_deliver(struct guest *g, const Osm__SesSignal *s,
	    pid_t tid);
void	 guest_signal_deliver_unblocked(struct guest *g, uint64_t keep);
void	 guest_signal_deliver_held(struct guest *g);
int	 guest_signal_ends(struct guest *g, const struct guest_held *h);
int	 guest_signal_wakes(struct guest *g, const struct guest_call *c,
	    const struct guest_held *h);
void	 guest_signal_from_home(struct guest *g, const uint8_t *body,
	    size_t len);

/* guest-move.c */
int	 guest_move_dump_fn(int fd, void *arg, char **cause);
int	 guest_move_arrive(struct guest *g, char **cause);
int	 guest_move_ended(struct guest *g);
void	 guest_move_home(struct guest *g, const char *why);
void	 guest_move_may_leave(struct guest *g);
void	 guest_move_want_home(struct guest *g, const char *why);

/* guest-files.c, continued */
enum { GUEST_HOME_LIVE, GUEST_HOME_POST, GUEST_HOME_STOP };
int	 guest_files_replaced(struct guest *g, const uint8_t *body,
	    size_t len);

/* guest-thread.c */
void	 guest_thread_call(struct guest *g, const struct remote_event *ev);
void	 guest_thread_made(struct guest *g, const uint8_t *body, size_t len);

/* guest-ckpt.c */
int	 guest_ckpt(struct guest *g, uint64_t broken);
void	 guest_release(struct guest *g, struct mig_task *t);

/* guest-serve.c */
void	 guest_serve_notif_cb(struct ev_loop *loop, ev_io *w, int revents);
void	 guest_serve_file(struct guest *g, const uint8_t *body, size_t len);
void	 guest_serve_reply(struct guest *g, const uint8_t *body, size_t len);
void	 guest_serve_identity(struct guest *g, const uint8_t *body,
	    size_t len);
void	 guest_serve_fd_info(struct guest *g, const uint8_t *body,
	    size_t len);
void	 guest_serve_read_data(struct guest *g, uint8_t *body,
	    size_t len);

#endif
