/*
 * libremote/ inside: what the library's files share and no other folder
 * may include (its own unit tests, fuzz targets and bench/forward aside).
 * The public API is remote.h.
 */
#ifndef REMOTE_INTERNAL_H
#define REMOTE_INTERNAL_H

#include <sys/stat.h>

#include <protobuf-c/protobuf-c.h>

#include "remote.h"

struct Osm__RemoteCall;
struct Osm__RemoteReply;

#define RMT_REGIONS_MAX	4096
#define FIO_WIN_MAX_BYTES (4U << 20)	/* bytes read ahead at once */
#define FIO_WIN_MIN	(128U << 10)	/* the first window of a stream */
#define RMT_ALIGN	16		/* of every region laid out at home */
/*
 * What a pointer into memory R could not read becomes at home: an address
 * no process can map, so that the call fails there with EFAULT exactly
 * when, and after the checks with which, it would have failed natively.
 */
#define RMT_FAULT_ADDR	0xfffffffffffff000ULL

enum rmt_class {
	RMT_HOME = 0,	/* bring the process home; the default */
	RMT_LOCAL,	/* the filter lets it run on the remote node */
	RMT_EMULATE,	/* the guest agent answers it */
	RMT_FORWARD,	/* executed in the home process */
	RMT_MAP,	/* a file mapping the guest makes, the file from home */
	RMT_THREAD,	/* a thread made or ended: the guest mirrors it at home
			   (a process made goes home) */
};

enum rmt_dir {		/* the values of proto's RemoteDir */
	RMT_IN = 1,
	RMT_OUT = 2,
	RMT_INOUT = 3,
};

/* table.c */
/*
 * How one argument is described. A buffer's size is `size` if set, or
 * argument `len` times `unit` (default 1).
 */
enum table_kind {
	TA_VAL = 0,	/* a value, passed as is */
	TA_STR,		/* a NUL-terminated string, in (paths, names) */
	TA_BUF,		/* a buffer */
	TA_LENP,	/* in-out, sized by the int argument `len` points to */
	TA_IOV,		/* iovec array of argument `len` entries, data `dir` */
	TA_MSG,		/* struct msghdr: sendmsg (dir in), recvmsg (dir out) */
	TA_MMSG,	/* struct mmsghdr[argument `len`], the same */
	TA_FDSET,	/* fd_set of argument `len` (nfds) bits, in-out */
	TA_SIGDATA,	/* pselect6's { sigset_t *, size_t } */
	TA_MASK,	/* a wait's sigset_t *, applied where R runs */
	TA_CAPDATA,	/* capget/capset data, sized by argument 0's version */
};
#define TF_TRIM		0x01	/* out: returned up to the return value */
#define TF_CLAMP	0x02	/* size may be cut to RMT_IO_MAX (arg too) */
#define TF_INT		0x04	/* `len` is a C int: negative means 0 */
#define TF_NOBOUND	0x08	/* ret may exceed the buffer (MSG_TRUNC) */
struct table_arg {
	uint8_t		 kind;
	uint8_t		 dir;
	uint8_t		 len;
	uint8_t		 flags;
	uint16_t	 unit;
	uint32_t	 size;
};
/* Initialisers for the tables: a fixed size, or argument k times unit. */
#define V		{ .kind = TA_VAL }
#define STR		{ .kind = TA_STR }
#define IN(n)		{ .kind = TA_BUF, .dir = RMT_IN, .size = (n) }
#define OUT(n)		{ .kind = TA_BUF, .dir = RMT_OUT, .size = (n) }
#define INOUT(n)	{ .kind = TA_BUF, .dir = RMT_INOUT, .size = (n) }
#define INA(k, u, f)	{ .kind = TA_BUF, .dir = RMT_IN, .len = (k), \
			    .unit = (u), .flags = (f) }
#define OUTA(k, u, f)	{ .kind = TA_BUF, .dir = RMT_OUT, .len = (k), \
			    .unit = (u), .flags = (f) }
#define INOUTA(k, u, f)	{ .kind = TA_BUF, .dir = RMT_INOUT, .len = (k), \
			    .unit = (u), .flags = (f) }
#define LENP(k)		{ .kind = TA_LENP, .dir = RMT_INOUT, .len = (k) }
#define IOV(k, d)	{ .kind = TA_IOV, .dir = (d), .len = (k) }
#define MSG(d)		{ .kind = TA_MSG, .dir = (d) }
#define MMSG(k, d)	{ .kind = TA_MMSG, .dir = (d), .len = (k) }
#define FDSET		{ .kind = TA_FDSET, .dir = RMT_INOUT, .len = 0 }
#define SIGDATA		{ .kind = TA_SIGDATA, .dir = RMT_IN }
#define MASK		{ .kind = TA_MASK, .dir = RMT_IN }
#define CAPDATA(d)	{ .kind = TA_CAPDATA, .dir = (d) }

/*
 * A class that depends on one argument's value (its low 32 bits: every
 * such argument is a C int or unsigned int to the kernel): LOCAL when
 * `bit` is set in it (mmap's MAP_ANONYMOUS), or the class and the
 * description of argument `sub_arg` given for the value in `subs`.
 */
struct table_sub {
	uint32_t		 value;
	enum rmt_class		 class;
	const char		*name;
	struct table_arg	 arg;
	int			 marked;	/* RMT_CLOCK_MAGIC in argument
						   0's high half: the stub
						   in R's, local (filter.c) */
};
struct table_rule {
	int			 arg;
	uint32_t		 bit;
	int			 sub_arg;
	const struct table_sub	*subs;
	size_t			 nsubs;
};

/* What a call has to do with the process's identity (ident.c). */
enum table_ident {
	TI_NONE = 0,
	TI_READ,	/* answered from the identity the home sent */
	TI_CHANGE,	/* may change it: the home sends it again */
};

struct table_entry {
	int			 nr;
	const char		*name;
	enum rmt_class		 class;	/* unless rule or classify say */
	struct table_arg	 args[6];
	const struct table_rule	*rule;
	/* for values the rule does not list; `self` is the home pid */
	enum rmt_class		(*classify)(const uint64_t *a, pid_t self);
	uint8_t			 trim_unit;	/* of TF_TRIM, default 1 */
	uint8_t			 ident;		/* enum table_ident */
	const char		*why;	/* when it goes home, for logs */
};

/* One call resolved against the table. */
struct table_call {
	const struct table_entry *entry;	/* NULL: unknown number */
	enum rmt_class		 class;
	const char		*name;		/* "ioctl" */
	const char		*sub;		/* NULL, or "TCGETS" */
	struct table_arg	 args[6];
};

#define TABLE_NR_MAX	512
void	 table_resolve(int nr, const uint64_t *args, pid_t self,
	    struct table_call *tc);
const struct table_entry *table_lookup(int nr);
const char *table_name(int nr);
const char *table_class_name(enum rmt_class class);
unsigned int table_pointers(const struct table_call *tc);
int	 table_check(char **cause);
const struct table_entry *table_entries(size_t *n);

/* request.c */
extern const struct table_rule request_ioctl, request_fcntl, request_prctl;
extern const struct table_rule request_clocks, request_self;
extern const struct table_rule request_mmap;
enum rmt_class request_clock_class(const uint64_t *a, pid_t self);
enum rmt_class request_clock_gettime_class(const uint64_t *a, pid_t self);
int	 request_clock_stub(const uint64_t *a);
enum rmt_class request_gettid_class(const uint64_t *a, pid_t self);
enum rmt_class request_rusage_class(const uint64_t *a, pid_t self);
enum rmt_class request_times_class(const uint64_t *a, pid_t self);
enum rmt_class request_fd_stub_class(const uint64_t *a, pid_t self);
enum rmt_class request_itimer_class(const uint64_t *a, pid_t self);
enum rmt_class request_timer_class(const uint64_t *a, pid_t self);
enum rmt_class request_sockopt_class(const uint64_t *a, pid_t self);
enum rmt_class request_mmap_class(const uint64_t *a, pid_t self);
int	 request_cpu_clock(int32_t id, pid_t self, int *which, int *scope);

/* marshal.c: a call described, as the guest keeps it while pending */
struct rmt_region {
	uint64_t	 addr;		/* in R */
	uint64_t	 size;
	uint8_t		 dir;
	uint8_t		 trim;
	uint8_t		*data;		/* in, in-out: read from R */
};
struct rmt_reloc {
	uint32_t	 target;
	int		 arg;		/* -1: a slot of region `in` */
	uint32_t	 in;
	uint64_t	 off;
};
/* A slot of an in-out region to put back as R had it, before writing. */
struct rmt_keep {
	uint32_t	 region;
	uint64_t	 off;
	uint64_t	 value;
};
struct rmt_call {
	uint64_t	 seq;
	pid_t		 vtid;		/* the caller, as R knows it; 0: lead */
	int		 nr;
	const char	*name;
	uint64_t	 args[6];
	struct rmt_region *regions;
	size_t		 nregions;
	struct rmt_reloc *relocs;
	size_t		 nrelocs;
	struct rmt_keep	*keeps;
	size_t		 nkeeps;
	uint64_t	 total;		/* bytes in regions */
	uint32_t	 trim_unit;
	int64_t		 ret_max;	/* the largest valid return value */
	int		 has_mask;	/* a wait with a signal mask, */
	uint64_t	 mask;		/* which stays here */
	int		 behind;	/* answered already (fileio.c) */
	int		 want_fd;	/* an open under a shared path */
	int		 fd_info;	/* an open: what it opened, first */
	int		 open_here;	/* an open made here (shared.c): */
	int		 open_at;	/* its number and file */
	uint64_t	 open_ino;
	const uint32_t	*writes;	/* a batch's writes, each its own */
	size_t		 nwrites;	/* at home (pipes.c) */
};
enum marshal_result {
	MARSHAL_OK,
	MARSHAL_HOME,		/* the call must run at home: *why says */
	MARSHAL_GONE,		/* R vanished (killed) */
	MARSHAL_ERROR,
};
enum marshal_result marshal_call(pid_t pid, const struct table_call *tc,
	    const uint64_t *args, struct rmt_call *c, const char **why,
	    char **cause);
void	 marshal_free(struct rmt_call *c);
int	 marshal_put_stat(pid_t tid, uint64_t addr, const struct stat *st);
void	 marshal_pack(struct rmt_call *c, uint8_t **out, size_t *len);

struct emulate {
	pid_t		 pid;		/* R */
	pid_t		 home_pid;
	struct emulate_base base;
	struct emulate_thread {		/* each thread's CPU before it came */
		pid_t		 tid;	/* ours */
		uint64_t	 ns;
	}		*threads;
	size_t		 nthreads;
	uint64_t	 prev_utime;	/* kept monotonic, as the kernel does */
	uint64_t	 prev_stime;
};
long	 emulate_call(struct emulate *e, pid_t tid, int nr,
	    const uint64_t *args);
void	 emulate_thread_base(struct emulate *e, pid_t tid, uint64_t ns);
void	 emulate_free(struct emulate *e);
int	 emulate_usage(struct emulate *e, uint64_t *user_ns,
	    uint64_t *sys_ns);

/* held.c */
struct held_page {
	int		 fd;
	uint64_t	 pg;		/* its page number in the file */
	uint32_t	 lo, hi;	/* the bytes held of it */
	uint64_t	 at;		/* when they were written */
	uint8_t		*data;
};
struct held {
	struct held_page *pages;	/* by fd, then pg */
	size_t		 n;
};
struct iovec;
void	 held_put(struct held *h, int fd, uint64_t off, const uint8_t *buf,
	    size_t len, uint64_t now, uint64_t fresh_ns);
int	 held_get(const struct held *h, int fd, uint64_t off, size_t len,
	    uint64_t now, uint64_t fresh_ns, struct iovec *iov, size_t maxiov,
	    size_t *niov);
void	 held_drop(struct held *h, int fd);
size_t	 held_bytes(const struct held *h);

/* fileio.c, fiofd.c, fioread.c: R's regular files at home */
#define FIO_FRESH_NS	1000000000ULL	/* bytes older are read again */
#define FIO_BATCH	(256U << 10)	/* writes behind gathered into one */
#define FIO_BATCH_ONE	(64U << 10)	/* larger ones go as they are */
#define FIO_STREAM_AHEAD 3	/* pieces of a streamed read on their way */
#define FIO_STREAM_MAX	0x7ffff000UL	/* the most a read takes (Linux's) */
enum fio_state {
	FIO_ASKED = 1,		/* what it is asked of the home */
	FIO_KNOWN,		/* a regular file */
	FIO_OTHER,		/* anything else: calls go home as they are */
	FIO_PIPE,		/* a pipe, a device: writes gathered (pipes.c) */
};
/* Bytes of a file read ahead: len at off, none if buf is NULL. */
struct fio_win {
	uint8_t		*buf;
	uint64_t	 off;
	size_t		 len;
	int		 eof;		/* up to the end of the file */
	uint64_t	 at;		/* when read */
};
struct fio_fd {
	int		 fd;
	enum fio_state	 state;
	int		 readable;
	int		 behind;	/* writes may go behind */
	int		 append;
	int		 alone;		/* no other of P's shares its offset */
	int		 notty;		/* a terminal's ioctls: ENOTTY */
	uint64_t	 dev, ino;
	int		 pos_known;
	int		 pos_was;	/* before the call at home now */
	uint64_t	 pos;		/* R's file offset */
	uint64_t	 seek;		/* taken from windows, owed home */
	struct fio_win	 win;		/* read ahead */
	struct fio_win	 next;		/* the window after, read ahead of R */
	uint64_t	 gen;		/* new at each drop (window_gen) */
	size_t		 grow;		/* the stream's window */
	int		 pstream;	/* a pread64 ended at pnext */
	uint64_t	 pnext;
	int64_t		 err;		/* a write behind failed */
	uint64_t	 same;		/* a pipe's: the others below 64 of
					   its open file, a bit each */
	int		 dir;		/* a directory an open returned */
	int		 closing;	/* R's close of it is at home */
	int		 lk_wait;	/* a lock it takes at home (fiolock.c) */
	int		 lk_type;
	uint64_t	 lk_lo, lk_hi;
	uint64_t	 wgen;		/* calls that may have written it, */
	uint64_t	 synced;	/* of them synced (fiobehind.c), */
	uint64_t	 sync_at;	/* and as the fsync at home asks */
	int		 syncing;
};
struct fio_msg {
	int		 kind;		/* enum remote_out */
	int		 post;		/* after the call sent now */
	uint8_t		*msg;
	size_t		 len;
};
/*
 * An open made where R runs, for the home to make behind, that waits
 * (fio_push_later): a close of fd before anything else goes home makes
 * both moot.
 */
struct fio_later {
	int		 fd;
	uint64_t	 seq;
	uint8_t		*msg;
	size_t		 len;
};
struct fio_behind {
	uint64_t	 seq;
	int		 fd;
	int64_t		 expect;	/* its full answer; -1 any */
	uint64_t	 dev;		/* a write's file system, */
	uint64_t	 charge;	/* and what it may take of it */
};
/* A record lock R holds: of bytes lo..hi of file (dev, ino) at home. */
struct fio_lock {
	uint64_t	 dev, ino;
	uint64_t	 lo, hi;
	int		 type;		/* F_RDLCK, F_WRLCK */
};
/* A file system at home, as the home's last answer about it said. */
struct fio_fs {
	uint64_t	 dev;
	uint64_t	 free;		/* bytes free to P's owner then */
	uint64_t	 ahead;		/* charged to writes behind since */
};
/*
 * ptable.c: P's descriptor table as the guest knows it, for opens made
 * where R runs (docs/REMOTE.md, "Opens made here"): which of P's numbers
 * below 64 x PTABLE_WORDS are taken, and P's umask, as the home said them
 * and as every call sent home since changed them.
 */
#define PTABLE_WORDS	4
struct ptable {
	int		 ok;		/* known */
	uint64_t	 used[PTABLE_WORDS];
	uint32_t	 umask;
};
void	 ptable_set(struct ptable *t, const uint64_t *words, size_t n,
	    uint32_t umask);
void	 ptable_sent(struct ptable *t, int nr, const uint64_t *args);
void	 ptable_got(struct ptable *t, int nr, const uint64_t *args,
	    int64_t ret);
int	 ptable_lowest(const struct ptable *t);
void	 ptable_take(struct ptable *t, int fd);
void	 ptable_free(struct ptable *t, int fd);

struct fio {
	int		 off;		/* strict: every call as it is */
	struct ptable	 ptab;		/* P's descriptors (shared.c's) */
	struct fio_fd	*fds;
	size_t		 nfds;
	struct fio_msg	*out;
	size_t		 nout;
	struct fio_later *later;	/* opens that wait (fio_push_later) */
	size_t		 nlater;
	struct fio_behind *behind;
	size_t		 nbehind;
	struct fio_lock	*locks;		/* R's, as it took them (fiolock.c) */
	size_t		 nlocks;
	struct fio_fs	*fs;		/* those the home said the room of */
	size_t		 nfs;
	struct held	 held;		/* what R wrote (held.c) */
	int		 waiting;	/* R's read, for its window */
	int		 wait_nr;	/* read or pread64 */
	uint64_t	 wait_off;	/* where the window starts */
	uint64_t	 wait_id;
	pid_t		 wait_tid;
	int		 wait_fd;
	uint64_t	 wait_buf;
	size_t		 wait_len;
	uint64_t	 wait_seq;
	uint64_t	 wait_args[6];
	int		 wait_home;	/* another thread's call on its
					   descriptor came: it goes home */
	int		 wait_stale;	/* its file changed meanwhile: the
					   window serves it, and goes */
	/* a read larger than a window, streamed (fio_stream): pieces
	   asked ahead of it, written into R's buffer as each comes */
	int		 wait_stream;
	uint64_t	 wait_pseq[FIO_STREAM_AHEAD];	/* asked, to come */
	size_t		 wait_plen[FIO_STREAM_AHEAD];
	int		 wait_np;
	size_t		 wait_asked;	/* bytes asked for, */
	size_t		 wait_got;	/* and written into R's buffer */
	int		 pre_busy;	/* a stream's next window asked for */
	int		 pre_fd;	/* of this descriptor, */
	uint64_t	 pre_gen;	/* unless dropped since (its gen) */
	uint64_t	 pre_off;
	size_t		 pre_len;
	uint64_t	 pre_seq;
	pid_t		 vtid;		/* the thread whose call is decided
					   (as R knows it; 0 the lead) */
	pid_t		 bvtid;		/* the last that wrote the batch */
	/* writes behind gathered into one (fio_batch): a write, or a
	   pwrite64 at boff, of blen bytes on bfd's file */
	int		 bnr;
	int		 bfd;
	uint64_t	 bdev, bino;
	uint64_t	 boff;
	uint8_t		*buf;
	size_t		 blen;
	int		 wlive;		/* a write gathered since R came: */
	int		 wfd;		/* the last one's descriptor, */
	int		 wnr;		/* call, and where a pwrite64 */
	uint64_t	 wnext;		/* on from it lands */
	uint32_t	*parts;		/* a pipe's: each write's length */
	size_t		 nparts;
	struct fio_mark {		/* a descriptor before R's call */
		int		 fd;	/* (fio_mark): -1 none */
		struct fio_fd	 was;
		size_t		 blen;
	}		 mark;
	int		 reclose;	/* a close behind R never had the */
	int		 reclose_fd;	/* answer of (fio_unanswered): */
	long		 reclose_rv;	/* its descriptor, its answer */
	int		 threaded;	/* R has had threads (pipes.c) */
	uint64_t	 stats_piped;	/* writes to pipes gathered */
	uint64_t	 stats_behind;
	uint64_t	 stats_served;
	uint64_t	 stats_held;	/* reads served from what R wrote */
	uint64_t	 stats_fetches;
	uint64_t	 stats_errors;
	uint64_t	 stats_at_once;	/* writes not behind, for room */
	uint64_t	 stats_known;	/* fstats answered from an open's */
	uint64_t	 stats_here;	/* lseeks, terminal ioctls answered */
	/* the last open's descriptor's fstat, until R's next call */
	int		 ostat_ok;
	int		 ostat_fd;
	uint64_t	 ostat_at;
	struct stat	 ostat;
};
/* room.c */
#define FIO_SLACK	(8U << 10)	/* a write's partial blocks, each end */
struct fio_fs	*room_fs(struct fio *f, uint64_t dev, int add);
void	 room_told(struct fio *f, uint64_t dev, int64_t fs_free);
int	 room_for(struct fio *f, const struct fio_fd *e, size_t len);

/* fdcall.c */
int	 fdcall_chattr(int nr);
int	 fdcall_harmless(int nr, const uint64_t *args);
int	 fdcall_keeps(int nr, const uint64_t *args);
int	 fdcall_moves(int nr, const uint64_t *args, int *fds, int *dups);
int	 fdcall_is_lock(int cmd);
struct flock;
int	 fdcall_unlock(int cmd, const struct flock *fl);

/* window.c */
uint64_t window_now(void);
void	 window_drop(struct fio_fd *e);
long	 window_serve(struct fio_fd *e, pid_t tid, uint64_t buf, uint64_t off,
	    size_t len, int move);
int	 window_servable(const struct fio_fd *e, uint64_t off, size_t len);
void	 window_fill(struct fio_fd *e, uint64_t off,
	    ProtobufCBinaryData *data, uint64_t size, int next);
uint64_t window_gen(void);
int	 window_advance(struct fio_fd *e, uint64_t off);
int	 window_next_due(const struct fio_fd *e, size_t max, uint64_t *off,
	    size_t *len);
uint8_t	*window_ask(const struct fio_fd *e, uint64_t seq, uint64_t off,
	    size_t len, size_t *n);

enum fio_verdict {
	FIO_PASS,
	FIO_BEHIND,
	FIO_ANSWER,
	FIO_WAIT,
};
struct Osm__RemoteFdInfo;
struct Osm__RemoteReadData;
/* fiofd.c */
struct fio_fd	*fio_find(struct fio *f, int fd);
struct fio_fd	*fio_add(struct fio *f, int fd);
void	 fio_forget(struct fio *f, struct fio_fd *e);
void	 fio_drop_file(struct fio *f, int all, uint64_t dev, uint64_t ino,
	    int keep);
void	 fio_drop_range(struct fio *f, uint64_t dev, uint64_t ino, int keep,
	    uint64_t off, uint64_t len);
void	 fio_behind_add(struct fio *f, uint64_t seq, int fd, int64_t expect,
	    uint64_t dev, uint64_t charge);
void	 fio_settle_seek(struct fio *f, struct fio_fd *e, uint64_t *seq);
void	 fio_free(struct fio *f);
void	 fio_push(struct fio *f, int kind, int post, uint8_t *msg,
	    size_t len);
void	 fio_push_later(struct fio *f, int fd, uint64_t seq, uint8_t *msg,
	    size_t len);
int	 fio_later_cancel(struct fio *f, int fd, uint64_t *seq);
int	 fio_out(struct fio *f, int post, int *kind, uint8_t **msg,
	    size_t *len);
void	 fio_settle(struct fio *f, uint64_t *seq);
void	 fio_flush(struct fio *f, uint64_t *seq);
void	 fio_lseek_behind(struct fio *f, int fd, int64_t off, int whence,
	    uint64_t *seq);
void	 fio_changed(struct fio *f, uint64_t dev, uint64_t ino);
void	 fio_close_behind(struct fio *f, int fd, uint64_t *seq);
void	 fio_drop_fd(struct fio *f, int fd);
int	 fio_batched(const struct fio *f);
void	 fio_info(struct fio *f, const struct Osm__RemoteFdInfo *m,
	    int others);
int	 fio_writing(const struct fio *f);
/* fiobehind.c */
int	 fio_opens(int nr, const uint64_t *args);
void	 fio_opened(struct fio *f, const struct Osm__RemoteFdInfo *m);
int	 fio_open_stat(struct fio *f, pid_t tid, int nr, const uint64_t *args,
	    long *rv);
int	 fio_close_clean(const struct fio *f, const struct fio_fd *e,
	    int busy);
/* fiolock.c */
void	 fio_locks_forget(struct fio *f, int all, uint64_t dev, uint64_t ino);
int	 fio_locks_call(struct fio *f, struct fio_fd *e, pid_t tid,
	    const uint64_t *args);
void	 fio_locks_result(struct fio *f, struct fio_fd *e, int64_t ret);
void	 fio_locks_other(struct fio *f, int nr, const uint64_t *args);
/* fileio.c */
int	 fio_fd_call(int nr);
struct fio_fd	*fio_wstub(struct fio *f, size_t ring, int *nr, uint64_t *off);
void	 fio_written(struct fio *f, int fd, int nr, uint64_t off,
	    const uint8_t *bytes, size_t len, uint64_t *seq);
void	 fio_mark(struct fio *f, int fd);
void	 fio_unanswered(struct fio *f, int nr, const uint64_t *args, long rv);
struct remote_pending;
int	 fio_on_fd(const struct remote_pending *pending, size_t n,
	    uint64_t fd, uint64_t skip);
enum fio_verdict fio_call(struct fio *f, pid_t tid, uint64_t id, int nr,
	    uint64_t *args, int busy, uint64_t *seq, long *rv);
void	 fio_sent_behind(struct fio *f, uint64_t seq, int nr,
	    const uint64_t *args, int64_t expect);
int	 fio_behind_reply(struct fio *f, uint64_t seq, int64_t ret,
	    int64_t fs_free, int64_t *expect);
void	 fio_result(struct fio *f, int nr, const uint64_t *args,
	    int64_t *ret, int64_t fs_free, int others);
/* fioread.c */
void	 fio_ahead(struct fio *f, struct fio_fd *e, uint64_t *seq);
enum fio_verdict fio_wait(struct fio *f, struct fio_fd *e, pid_t tid,
	    uint64_t id, int nr, const uint64_t *args, uint64_t off,
	    uint64_t *seq);
enum fio_verdict fio_stream(struct fio *f, struct fio_fd *e, pid_t tid,
	    uint64_t id, int nr, const uint64_t *args, uint64_t off,
	    uint64_t *seq);
int	 fio_data(struct fio *f, struct Osm__RemoteReadData *m,
	    int valid, uint64_t *seq, long *rv);
struct Osm__RemoteReadData *fio_data_unpack(uint8_t *msg, size_t len,
	    char **cause);

/* pipes.c */
int	 pipes_call(struct fio *f, pid_t tid, int nr, const uint64_t *args,
	    uint64_t *seq, long *rv);

/* ident.c */
struct ident {
	int		 valid;
	struct remote_ident id;
};
void	 ident_set(struct ident *c, const struct remote_ident *id);
void	 ident_clear(struct ident *c);
int	 ident_answer(const struct ident *c, pid_t tid, pid_t main_tid,
	    int nr, const uint64_t *args, long *rv);


/* shared.c */
struct shared_fd {
	int		 fd;		/* R's, the home's number */
	int		 ours;		/* the same open file */
	uint64_t	 dev, ino;	/* at home */
	uint64_t	 home_off;	/* the home's descriptor's offset */
	int		 lost;		/* P has not this file at its number */
};
struct shared_root {
	int		 proven;	/* a file of it was the home's */
	uint64_t	 dev;		/* its device here */
	uint64_t	 home_dev;	/* and at home */
};
struct shared {
	char		**paths;	/* the node's shared paths */
	size_t		 npaths;
	struct shared_root *roots;	/* one for each path */
	remote_opener	 opener;
	remote_stater	 stater;
	remote_unlinker	 unlinker;
	remote_here	 here;
	void		*arg;
	uint32_t	 uid, gid;	/* the opener's */
	uint32_t	*groups;
	size_t		 ngroups;
	struct shared_fd *fds;		/* R's descriptors opened here */
	size_t		 nfds;
	struct Osm__RemoteFdInfo *info;	/* the home's, of an open's fd */
	int		 null;		/* /dev/null, for R's closed ones */
	int		 leaving;	/* remote_may_leave said yes */
	uint64_t	 stats_local;	/* calls made here on them */
	uint64_t	 stats_local_r;	/* of them, by the stub in R */
	uint64_t	 stats_opened;
	uint64_t	 stats_refused;	/* not provably the same file */
	uint64_t	 stats_unlinked;	/* unlinks made here alone */
	uint64_t	 stats_alone;	/* opens made here alone */
	uint64_t	 stats_unseen;	/* of them, closed before the home
					   opened it: moot (fio_later) */
	struct shared_opening {		/* of those, the home's to come: */
		uint64_t	 seq;	/* its call behind, */
		int		 fd;	/* the number */
	}		*opening;
	size_t		 nopening;
};
struct remote;
struct remote_event;
void	 shared_free(struct shared *s);
void	 shared_settle(struct remote *g);
void	 shared_stub_closes(struct remote *g);
int	 shared_call(struct remote *g, uint64_t id, pid_t tid, int nr,
	    const uint64_t *args, int map, struct remote_event *ev,
	    char **cause);
int	 shared_want(struct remote *g, struct rmt_call *c, int *flags,
	    int *dup_of);
void	 shared_dup(struct remote *g, uint64_t id, int from, int flags,
	    int64_t fd);
void	 shared_info(struct shared *s, struct Osm__RemoteFdInfo *m);
void	 shared_opened(struct remote *g, uint64_t id, int flags,
	    int64_t fd, int last);
int	 shared_adopt(struct remote *g, const struct Osm__RemoteFdInfo *m,
	    uint64_t id);
void	 shared_adopted(struct remote *g, int nr, int fd, int64_t ret);
void	 shared_behind_reply(struct remote *g, uint64_t seq, int64_t ret);
/* sharedpath.c */
struct shared_fd *shared_find(struct shared *s, uint64_t fd);
int	 shared_rights(const struct remote *g);
int	 shared_path(pid_t tid, uint64_t addr, char *buf);
int	 shared_answer(struct remote *g, uint64_t id, int64_t val, int cont,
	    char **cause);
int	 shared_addfd(struct remote *g, uint64_t id, int src, int fd,
	    int cloexec);
struct shared_fd *shared_add(struct remote *g, int fd, int ours,
	    uint64_t dev, uint64_t ino, uint64_t home_off);
int	 shared_stat(struct remote *g, uint64_t id, pid_t tid, int nr,
	    const uint64_t *args, struct remote_event *ev, char **cause);
int	 shared_unlink(struct remote *g, uint64_t id, pid_t tid, int nr,
	    const uint64_t *args, struct remote_event *ev, char **cause);
int	 shared_open_here(struct remote *g, uint64_t id, pid_t tid, int nr,
	    const uint64_t *args, struct remote_event *ev, char **cause);

/* remote.c */
/* A stat's answer kept to answer again (statc.c). */
#define STATC_MAX	64
struct statc_entry {
	char		*path;
	int		 nofollow;	/* an lstat's */
	int64_t		 ret;
	struct stat	 st;		/* if ret is 0 */
	uint64_t	 at;		/* when the reply came */
};
struct statc {
	struct statc_entry e[STATC_MAX];
	size_t		 n, next;	/* next: the one to give up next */
	uint64_t	 gen;		/* new at each drop of all */
	uint64_t	 hits;
};
/* A call of R's forwarded, until its reply. */
struct remote_pending {
	uint64_t	 id;		/* of the notification */
	pid_t		 tid;
	struct rmt_call	 call;
	uint8_t		*msg;		/* the packed RemoteCall */
	size_t		 len;
	int		 open;	/* an open, maybe under a shared path */
	int		 flags;		/* to open it here with */
	int		 dup_of;	/* a dup of a descriptor opened here */
	int		 adopted;	/* its descriptor opened here meanwhile */
	char		*statc_path;	/* a stat's, whose reply statc keeps */
	uint64_t	 statc_gen;	/* the stats kept's when sent */
};
struct remote {
	int		 listener;
	pid_t		 pid;		/* R */
	pid_t		 vpid;		/* R's pid as R knows it; 0: not read */
	struct emulate	 emu;
	struct ident	 ident;		/* the home's, as it last said */
	struct fio	 fio;		/* regular files (fileio.c) */
	struct shared	 shared;	/* opened here (shared.c) */
	int		 sync_wakeup;	/* SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP */
	uint64_t	 seq;
	struct remote_pending *pending;	/* forwarded, not yet answered */
	size_t		 npending;
	struct remote_tid {		/* R's threads: our id, and R's */
		pid_t	 here, v;
	}		*tids;
	size_t		 ntids;
	void		*notif;
	size_t		 notif_size;
	void		*resp;
	size_t		 resp_size;
	struct remote_stats stats;
	struct rstub_view *rstub;	/* the stub in R (rstub.c), or NULL */
	struct statc	 statc;		/* stats answered again (statc.c) */
};
int		 remote_apply(pid_t tid, const struct rmt_call *c,
		    struct Osm__RemoteReply *r, int64_t *ret, char **cause);


/* statc.c */
void		 statc_clear(struct statc *c);
void		 statc_call(struct remote *g, int nr, const uint64_t *args);
int		 statc_answer(struct remote *g, pid_t tid,
		    const struct rmt_call *c, int64_t *rv, char **keep);
void		 statc_reply(struct remote *g, const struct rmt_call *c,
		    char **path, uint64_t gen, int64_t ret, const void *st,
		    size_t len);
void		 statc_replied(struct remote *g, int nr, const uint64_t *args);

/* rstub.c */
void		 rstub_sync(struct remote *g);
void		 rstub_ident(struct remote *g);
int		 rstub_close_next(const struct remote *g, int *fd);
void		 rstub_close_taken(struct remote *g);
uint64_t	 rstub_ident_hits(const struct remote *g);
void		 rstub_local(struct remote *g, int fd, int on, uint64_t dev);
void		 rstub_publish(struct remote *g, uint64_t id);
int		 rstub_batched(const struct remote *g);
void		 rstub_flush(struct remote *g);
void		 rstub_failed(struct remote *g);
void		 rstub_unanswered(struct remote *g, int nr, const uint64_t *args,
		    long rv);

/* home.c */
uint64_t	 home_budget(int64_t ret, uint32_t unit);
int64_t		 home_output(int dir, uint64_t size, int trim, int64_t ret,
		    uint64_t *budget);


#endif
