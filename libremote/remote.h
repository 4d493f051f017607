/*
 * libremote/ — system-call forwarding for a process running away from home
 * (docs/REMOTE.md, "A forwarded call"). This is libremote.a's public
 * header, for the agents (agent/): the filter for R, the guest agent's
 * side of a forwarded call and the deputy's. What its files share is in
 * internal.h, which no other folder includes:
 *
 *   table.c, request.c   the x86_64 system-call table: which calls run
 *			  locally, which the guest agent answers itself, which
 *			  go home to be executed in the home process, which
 *			  bring the process home; and how each call's
 *			  arguments and memory are described
 *   filter.c		  R's seccomp filter, built from the table
 *   marshal.c		  reading a call's memory out of R into a description
 *   emulate.c		  CPU-time clocks continued from what was used before
 *   fileio.c		  regular files: reads ahead, writes behind
 *   window.c		  a descriptor's bytes read ahead
 *   held.c		  what R wrote of them, for reading back here
 *   room.c		  the room at home for writes behind
 *   pipes.c		  writes to pipes and devices gathered behind
 *   ident.c		  getpid, getuid and the like answered from the
 *			  identity the home sent
 *   remote.c		  R's side, in the guest agent: notification in,
 *			  RemoteCall out; RemoteReply in, R's memory written,
 *			  answered
 *   home.c		  P's side, in the deputy, pure code: RemoteCall in, memory
 *			  image and registers out; result in, RemoteReply out
 *
 * The library knows nothing of migrate/: the agent puts the filter it
 * builds on R with migrate/'s mig_seccomp. Like migrate/, it never
 * prints, and exits only on a broken invariant (a table that fails
 * table_check): functions return 0 or -1 (or NULL) and put what a user
 * should read in *cause. It keeps no state between calls but in a struct
 * remote, and is meant for one thread.
 */
#ifndef REMOTE_H
#define REMOTE_H

#include <sys/types.h>

#include <linux/filter.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/osm.h"

#define RMT_CALL_MAX	(64U << 20)	/* bytes in the regions of one call */
#define RMT_IO_MAX	(8U << 20)	/* longer reads and writes are cut */
#define RMT_MSG_MAX	(RMT_CALL_MAX + (1U << 20))	/* a packed message */
/*
 * The high half of clock_gettime's clock id (an int to the kernel, which
 * ignores it) with which the guest's clock stub in R reads R's own CPU
 * clocks, CLOCK_PROCESS_CPUTIME_ID and CLOCK_THREAD_CPUTIME_ID, and of
 * getrusage's who (an int too) with which the usage stub reads R's own
 * RUSAGE_SELF and RUSAGE_THREAD: the filter lets those run
 * (agent/guest-stub.c). Anything else R could read with it is what R may
 * read anyway: its own clocks and usage, without the time it used before
 * it came.
 */
#define RMT_CLOCK_MAGIC	0x6f736d31U	/* "osm1" */

/* filter.c */
int	 filter_build(struct sock_fprog *prog, char **cause);
void	 filter_free(struct sock_fprog *prog);
int	 filter_install_self(char **cause);

/* emulate.c */
/* What the process used before it arrived, carried in the session. */
struct emulate_base {
	uint64_t	 utime_ns;
	uint64_t	 stime_ns;
	uint64_t	 cutime_ns;	/* of its waited-for children */
	uint64_t	 cstime_ns;
	uint64_t	 minflt;
	uint64_t	 majflt;
	uint64_t	 nvcsw;
	uint64_t	 nivcsw;
	uint64_t	 maxrss_kb;
	/*
	 * What times() and getrusage() of the process go on from, each on
	 * its own (at least what it could read before; utime_ns and
	 * stime_ns are its CPU clocks', to the nanosecond)
	 */
	uint64_t	 usage_user_ns;
	uint64_t	 usage_sys_ns;
};

/* ident.c: the process's identity at home, as the home says it */
struct remote_ident {
	pid_t		 pid;
	pid_t		 ppid;
	pid_t		 pgrp;
	pid_t		 sid;
	uint32_t	 uid[4];	/* real, effective, saved, fs */
	uint32_t	 gid[4];
	uint32_t	*groups;	/* supplementary */
	size_t		 ngroups;
};

/*
 * rstub.c: R's reads and pread64s of a window answered in R, and its
 * writes of one descriptor gathered there (agent/rstub.c puts the stub
 * in). The memory R and the guest share, a memfd: this control page, then
 * RSTUB_SLOTS windows of RSTUB_BYTES, one a descriptor, then the ring of
 * R's writes. The guest writes a slot only while R's one thread is
 * stopped (in a notification, or held); the stub reads it and moves pos
 * (a write slot's head) by what it serves.
 */
#define RSTUB_SLOTS	4
#define RSTUB_BYTES	(4U << 20)	/* a window, at most */
#define RSTUB_DATA	4096		/* where the windows start */
#define RSTUB_RING	(RSTUB_DATA + RSTUB_SLOTS * RSTUB_BYTES)
#define RSTUB_RING_BYTES (1U << 20)	/* R's writes, until the guest's */
#define RSTUB_LEN	(RSTUB_RING + RSTUB_RING_BYTES)
struct rstub_slot {			/* as the stub reads it: 128 bytes */
	int32_t		 fd;		/* 0: R's descriptor; -1 none */
	uint32_t	 eof;		/* 4: the window ends the file */
	uint64_t	 pos;		/* 8: R's offset (read moves it) */
	uint64_t	 woff;		/* 16: the window's offset in the file */
	uint64_t	 wlen;		/* 24: its bytes; 0: serve nothing */
	uint64_t	 deadline;	/* 32: stale from this TSC on */
	uint64_t	 data;		/* 40: its bytes in R */
	uint64_t	 hits;		/* 48: reads the stub served */
	uint64_t	 pnext;		/* 56: where its last pread64 ended */
	uint32_t	 rok;		/* 64: read too, not pread64 only */
	uint32_t	 wsame;		/* 68: the write slot's file: nothing
					   its ring holds (rstub_wslot) */
	uint32_t	 pad[14];
};
/*
 * R's writes of one descriptor, put into the ring by the stub (which
 * moves head, the commit) while head stays within room and the TSC
 * before deadline (a pwrite64 only where the ring's bytes end in the
 * file: at base + head); the guest takes them in (rstub_sync, and its
 * timer while R runs: bytes below head never change) and empties the
 * ring only while R is stopped. The stub marks head busy (RSTUB_WBUSY) while it
 * copies: a signal handler's write inside it goes to libc, and the
 * guest leaves the ring alone until the copy is in.
 */
#define RSTUB_WBUSY	(1ULL << 63)	/* in head: a write half way in */
struct rstub_wslot {			/* as the stub reads it: 64 bytes */
	int32_t		 fd;		/* 0: R's descriptor; -1 none */
	uint32_t	 nr;		/* 4: SYS_write's, or SYS_pwrite64's */
	uint64_t	 head;		/* 8: the ring's bytes R wrote */
	uint64_t	 room;		/* 16: head may grow up to it */
	uint64_t	 deadline;	/* 24: nothing more from this TSC on */
	uint64_t	 ring;		/* 32: the ring in R */
	uint64_t	 hits;		/* 40: writes the stub served */
	uint64_t	 base;		/* 48: the ring's offset in the file */
	uint64_t	 pad;
};
/*
 * Calls on R's descriptors of files opened here (a shared path: R's
 * table holds them, docs/REMOTE.md "Shared file systems") are made by the
 * stub itself, without a notification, while lon is set and the
 * descriptor's bit in lfds is: the call's number and its arguments go to
 * libc's syscall() (lsyscall, in R), the descriptor marked with
 * RMT_CLOCK_MAGIC in its high half, which the kernel ignores and the
 * filter lets run (filter_fd_stub). lhits counts them, lwrites the writes
 * among them. Descriptors from RSTUB_LFDS on are the guest's as before.
 * An fstat the stub makes itself, and says the home's device number of
 * (ldev), as the guest would. A close too, while con is set (R has one
 * thread): the stub clears the descriptor's bit, puts it in cfds at chead
 * and moves chead (its commit), then makes the close; the guest takes
 * them from ctail at R's next call that reaches it (shared_stub_closes),
 * each once R's descriptor is no longer its file, and sends the close
 * home behind. A full ring, and the close is the guest's as before.
 */
#define RSTUB_LFDS	256
#define RSTUB_LON_CALLS	1	/* reads, writes, seeks, syncs */
#define RSTUB_LON_LOCKS	2	/* fcntl's locks, flock */
/*
 * libc's getpid, getppid, getuid, geteuid, getgid and getegid in R are
 * answered by the stub from ival, in that order, while ion is set: the
 * identity the home said (the guest's own answers', "Identity" in
 * docs/REMOTE.md), while R has one thread; ihits counts them.
 */
#define RSTUB_IDENT	6
#define RSTUB_CLOSES	64		/* closes the guest has not seen */
struct rstub_shm {
	uint32_t	 on;		/* 0: the stub serves nothing */
	uint32_t	 lon;		/* 4: calls on files opened here
					   (RSTUB_LON_*) */
	uint64_t	 lsyscall;	/* 8: libc's syscall() in R */
	uint64_t	 lhits;		/* 16: calls the stub made so */
	uint64_t	 lwrites;	/* 24: writes among them */
	uint8_t		 lfds[RSTUB_LFDS / 8];	/* 32: R's fd n is bit n */
	struct rstub_slot slot[RSTUB_SLOTS];	/* at 64 */
	struct rstub_wslot w;			/* at 576 */
	uint32_t	 ion;		/* 640: ival is the identity */
	uint32_t	 ival[RSTUB_IDENT];	/* 644 */
	uint64_t	 ihits;		/* 672: answered so */
	uint64_t	 pad[43];
	uint64_t	 ldev[RSTUB_LFDS];	/* 1024: the home's st_dev of
						   each descriptor in lfds */
	uint32_t	 con;		/* 3072: closes too */
	uint32_t	 chead;		/* 3076: closes the stub made */
	uint32_t	 ctail;		/* 3080: of them, the guest's */
	uint32_t	 cpad;
	int32_t		 cfds[RSTUB_CLOSES];	/* 3088: their descriptors */
};
struct remote;
void	 rstub_attach(struct remote *g, struct rstub_shm *shm, uint64_t at);
void	 rstub_threaded(struct remote *g);
int	 rstub_stop(struct remote *g);
int	 rstub_local_stop(struct remote *g);
int	 rstub_locks(struct remote *g, int on);
int	 rstub_half_written(const struct remote *g);

/* remote.c */
/* What became of R's notified calls. */
struct remote_stats {
	uint64_t	 forwarded;
	uint64_t	 emulated;	/* CPU clocks answered by the guest */
	uint64_t	 usage;		/* of them, times and getrusage */
	uint64_t	 home;
	uint64_t	 gone;		/* answers for a call R left */
	uint64_t	 restarted;	/* sent home again */
	uint64_t	 faults;	/* outputs R's memory refused */
	uint64_t	 mapped;	/* file mappings handed to the caller */
	uint64_t	 ident;		/* identity answered here */
	uint64_t	 ident_in_r;	/* by the stub in R (rstub.c) */
	uint64_t	 behind;	/* calls sent behind (fileio.c) */
	uint64_t	 served;	/* reads served from windows */
	uint64_t	 in_r;		/* of them, by the stub in R (rstub.c) */
	uint64_t	 w_in_r;	/* writes behind by the stub in R */
	uint64_t	 held;		/* reads served from what R wrote */
	uint64_t	 fetches;	/* windows read at home */
	uint64_t	 behind_errors;	/* writes behind that failed */
	uint64_t	 at_once;	/* writes not behind: little room at home */
	uint64_t	 piped;	/* writes to pipes, devices gathered */
	uint64_t	 waited;	/* calls R waited for at home */
	uint64_t	 known;		/* fstats answered from an open's */
	uint64_t	 here;		/* lseeks, terminal ioctls answered */
	uint64_t	 stats_again;	/* stats answered again (statc.c) */
	uint64_t	 local;		/* calls on files opened here (shared) */
	uint64_t	 local_in_r;	/* of them, by the stub in R */
	uint64_t	 opened;	/* files opened here */
	uint64_t	 refused;	/* not provably the same file here */
	uint64_t	 unlinked;	/* unlinks made here (shared) */
	uint64_t	 opened_alone;	/* of opened, with no wait for home */
	uint64_t	 opened_unseen;	/* of them, closed before the home
					   needed to open it */
};
/* Messages for home besides the call of a REMOTE_FORWARD (remote_out). */
enum remote_out {
	REMOTE_OUT_CALL = 1,	/* a RemoteCall, written behind */
	REMOTE_OUT_FD_ASK,	/* a RemoteFdAsk */
	REMOTE_OUT_READ,	/* a RemoteRead */
};
enum remote_event_kind {
	REMOTE_NONE,		/* nothing: R left the call */
	REMOTE_ANSWERED,		/* R has its answer */
	REMOTE_FORWARD,		/* send msg home, then remote_reply */
	REMOTE_HOME,		/* bring R home; the call stays pending */
	REMOTE_WAITING,		/* R waits for bytes read ahead (remote_out) */
	REMOTE_MAP,		/* a file mapping: args say which; the caller
				   makes it (remote_map) or brings R home */
	REMOTE_THREAD,		/* clone, clone3 or exit: nr and args say
				   which; the caller lets it run
				   (remote_continue) or brings R home */
};
struct remote_event {
	enum remote_event_kind kind;
	uint64_t	 id;		/* of the notification */
	pid_t		 tid;		/* R's calling thread */
	int		 nr;
	const char	*name;		/* of the call */
	const char	*why;		/* REMOTE_HOME */
	uint64_t	 seq;		/* REMOTE_FORWARD */
	const uint8_t	*msg;		/* REMOTE_FORWARD, until its reply */
	size_t		 len;
	uint64_t	 args[6];	/* REMOTE_MAP: mmap's */
	int		 has_mask;	/* REMOTE_FORWARD: a wait with R's */
	uint64_t	 mask;		/* signal mask for its duration */
};
struct remote	*remote_new(int listener, pid_t pid, pid_t home_pid,
		    const struct emulate_base *base, char **cause);
void		 remote_free(struct remote *g);
int		 remote_receive(struct remote *g, struct remote_event *ev,
		    char **cause);
void		 remote_forget(struct remote *g, uint64_t seq);
int		 remote_reply(struct remote *g, const uint8_t *msg, size_t len,
		    int woken, struct remote_event *ev, char **cause);
int		 remote_listener(const struct remote *g);
pid_t		 remote_vtid(struct remote *g, pid_t tid);
void		 remote_thread_forget(struct remote *g, pid_t tid);
void		 remote_thread_cpu(struct remote *g, pid_t tid, uint64_t ns);
int		 remote_usage(struct remote *g, uint64_t *user_ns,
		    uint64_t *sys_ns);
pid_t		 remote_tid_here(struct remote *g, pid_t vtid);
void		 remote_set_ident(struct remote *g,
		    const struct remote_ident *id);
const struct remote_stats *remote_stats(struct remote *g);
int		 remote_out(struct remote *g, int post, enum remote_out *kind,
		    uint8_t **msg, size_t *len);
int		 remote_reply_behind(struct remote *g, const uint8_t *msg,
		    size_t len, char **cause);
int		 remote_fd_info(struct remote *g, const uint8_t *msg,
		    size_t len, char **cause);
int		 remote_read_data(struct remote *g, uint8_t *msg,
		    size_t len, struct remote_event *ev, char **cause);
void		 remote_settle(struct remote *g);
int		 remote_batched(const struct remote *g);
void		 remote_flush(struct remote *g);
void		 remote_strict(struct remote *g);
void		 remote_news(struct remote *g);
int		 remote_map(struct remote *g, uint64_t id, int fd, int srcfd,
		    char **cause);
int		 remote_continue(struct remote *g, uint64_t id, char **cause);
int		 remote_clone_flags(struct remote *g, pid_t tid, int nr,
		    const uint64_t *args, uint64_t *flags);
/*
 * The opener of files under shared paths: a descriptor, or -1; its stat
 * of one, its unlink of one: 0, or -errno (-EAGAIN: it could not say).
 */
struct stat;
typedef int	(*remote_opener)(void *arg, const char *path, int flags,
		    char **cause);
typedef int	(*remote_stater)(void *arg, const char *path, int nofollow,
		    struct stat *st);
typedef int	(*remote_unlinker)(void *arg, const char *path);
/* An open as R asked it (flags, and mode for O_CREAT with P's umask
   applied): a descriptor of a regular file or a directory, or -errno. */
typedef int	(*remote_here)(void *arg, const char *path, int flags,
		    int mode);
/* What the opener can do, and who it is (docs/REMOTE.md, "Shared file
   systems"): its uid, gid and groups, which the unlinker may act alone
   with only while the home process has them all. */
struct remote_opener_of {
	remote_opener	 open;
	remote_stater	 stat;
	remote_unlinker	 unlink;
	remote_here	 here;
	void		*arg;
	uint32_t	 uid;
	uint32_t	 gid;
	const uint32_t	*groups;
	size_t		 ngroups;
};
void		 remote_shared(struct remote *g, char **paths, size_t npaths,
		    const struct remote_opener_of *op);
int		 remote_may_leave(struct remote *g, char **why);
int		 remote_opened_here(const struct remote *g);

/* pipes.c */
void		 pipes_threaded(struct remote *g);

/* home.c */
struct home_call {
	uint64_t	 seq;
	pid_t		 tid;		/* the thread it is for; 0: the lead */
	int		 nr;
	int		 behind;	/* R has had its answer: run it whole */
	const char	*name;
	size_t		 span;		/* scratch bytes the call needs */
	uint64_t	 args[6];	/* registers, after home_layout */
	uint8_t		*image;		/* to write at base */
	size_t		 image_len;
	int64_t		 fs_free;	/* for the reply; -1: not said */
	/* a batch of writes (home_pieces_next): the one running, */
	size_t		 piece;
	uint64_t	 piece_done;	/* what of it is written, */
	uint64_t	 done;		/* the bytes of those before, */
	uint64_t	 piece_base;	/* and where the region is in P */
	/* an open made where R runs (home_open_at_next): P's pid, where
	   the scratch area is and /dev/null in it, what P's kernel gave
	   and the answer */
	pid_t		 self;
	uint64_t	 base;
	size_t		 null_off;
	long		 oa_got;
	long		 oa_final;
	/* inside */
	struct Osm__RemoteCall *call;
	uint64_t	*offsets;	/* of each region from base */
};
struct home_call *home_check(const uint8_t *msg, size_t len, pid_t self,
		    char **cause);
int		 home_layout(struct home_call *hc, uint64_t base, size_t size,
		    char **cause);
size_t		 home_readback(const struct home_call *hc, long ret);
int		 home_reply(const struct home_call *hc, long ret,
		    const void *mem, size_t len, uint8_t **out, size_t *outlen,
		    char **cause);
void		 home_free(struct home_call *hc);
int		 home_timed(const struct home_call *hc);
int		 home_again(const struct home_call *hc);
int		 home_want_fd(const struct home_call *hc);
int		 home_fd_info(const struct home_call *hc);
int		 home_ident(const struct home_call *hc);
void		 home_pieces_start(struct home_call *hc);
/* Does process pid hold descriptor fd (1, its file's inode in *ino)? */
typedef int	(*home_holds)(pid_t pid, long fd, uint64_t *ino);
int		 home_pieces_next(struct home_call *hc, home_holds holds,
		    long *rv);

#endif
