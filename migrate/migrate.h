/*
 * migrate/ — checkpoint and restore of a process's user context
 * (libmigrate.a), every thread of it. Used by moscr, and by the agents
 * (agent/) to move processes between nodes. This is its public header;
 * what its files share is in internal.h, which no other folder includes.
 *
 * The library never prints and never exits: every function returns 0 or
 * -1 (or NULL) and puts what a user should read into *cause.
 *
 * A dump writes to any file descriptor (file, pipe, socket) and a restore
 * reads from any, strictly in order. A restore targets a process under our
 * ptrace control: a fresh one (mig_spawn; mig_spawn_bare, with /dev/null
 * for 0-2; or mig_spawn_pid to give it the image's pid) or one the caller
 * already stopped (mig_adopt).
 *
 *	dump:		t = mig_seize(pid); mig_dump(t, fd, ...); then
 *			mig_release(t) to let it go on, or mig_kill(t)
 *	restore:	t = mig_spawn() or mig_adopt(pid);
 *			mig_restore(t, fd, ...); mig_release(t) to let it run
 *	  or, choosing the target from the image:
 *			mig_restore_begin(fd, &mi); mig_image_keeps_ids(&mi)?
 *			t = mig_spawn_pid(mi.header->pid) (after mig_pidns)
 *			: mig_spawn(); mig_restore_from(t, &mi, ...)
 *
 * Threads. A held task holds every thread of the process, each stopped.
 * Threads are named by their ids as the process knows them (gettid in
 * it, the image's); mig_thread_here says what the caller knows one by.
 * The calls without a thread (mig_call, mig_jump, ...) mean the main
 * thread, or, once that has ended (pthread_exit in main), the first
 * thread left. A process of more than one thread is restored only with
 * its pid and every tid as they were (glibc caches tids, mutexes hold
 * their owners'): into a target of the image's pid, where the missing
 * threads are made with their ids, which takes CAP_SYS_ADMIN over the
 * target's PID namespace (mig_pidns gives the caller's children that);
 * anything else is refused, never restored with ids changed.
 *
 * A thread of the held task that ends is the caller's to reap
 * (waitpid(mig_thread_here(t, tid), __WALL)): the kernel reports the
 * process's end only after every traced thread's.
 *
 * mig_release and mig_kill free t, and so does mig_forget once the caller
 * has seen the task end and waited for it. A failed mig_dump leaves the
 * process as it was; a failed mig_restore has already killed a spawned
 * target, while an adopted one may be half changed and is the caller's to
 * kill (every record is checked before it is applied, the description
 * before the target is touched, but pages stream in before the final
 * seal).
 */
#ifndef MIGRATE_H
#define MIGRATE_H

#include <sys/stat.h>
#include <sys/types.h>
#include <sys/user.h>

#include <sched.h>
#include <signal.h>
#include <stdint.h>

#include "proto/image.pb-c.h"

struct sock_fprog;

/* The image: 8-byte preamble, then stream records (docs/IMAGE.md). */
#define MIG_MAGIC		0x4f534d43U	/* "OSMC" */
#define MIG_VERSION		3	/* 2: threads (ids kept); rounds of a
					   live dump; 3: both */
#define MIG_VERSION_MIN		3
#define MIG_META_MAX		(16U << 20)	/* one descriptive record */
#define MIG_PAGES_MAX		(8U << 20)	/* raw record of pages, at most */
#define MIG_BATCH		(1U << 20)	/* what a dump puts in one */
#define MIG_EXTENTS_MAX		1024		/* extents in one record */
#define MIG_PAGE		4096UL
#define MIG_TASK_SIZE		0x7ffffffff000UL	/* 47-bit user space */
#define MIG_XSTATE_MAX		(64U << 10)
#define MIG_THREADS_MAX		4096		/* threads of one image */

/* A process under our ptrace control, stopped between our requests. */
struct mig_task;

struct mig_stats {
	uint64_t	 frozen_us;	/* dump: stopped, seize to last seal;
					   restore: from spawn to ready */
	uint64_t	 pages;		/* pages carried */
	uint64_t	 bytes;		/* image bytes */
	uint64_t	 mem_us;	/* time spent moving pages */
	uint32_t	 rounds;	/* restore: rounds of a live dump */
};

/*
 * Where an image goes or comes from instead of a descriptor: write sends
 * the pieces of one write of the image's (one frame of a session); read
 * gives exactly len bytes (0), says the image's end came first (1), or
 * fails (-1); both fill *cause. lib/session.c's session_image_* are
 * these, for an image straight through a session.
 */
struct iovec;
struct mig_io {
	int		(*write)(void *arg, const struct iovec *iov, int n,
			    char **cause);
	int		(*read)(void *arg, void *buf, size_t len,
			    char **cause);
	/*
	 * Optional: the next len bytes where the reader already holds them
	 * (a session's opened frame), valid until the next call, instead of
	 * a copy; NULL if they are not all there, and read takes them.
	 */
	const void	*(*view)(void *arg, size_t len);
	void		*arg;
};

struct mig_fd_override {
	int		 fd;
	const char	*path;
};

/*
 * MIG_CONTEXT: the user context alone — memory, registers, signals, rseq,
 * the mm's fields — for migration, where files, working directory,
 * credentials and children stay with the process at home. Such a dump
 * refuses less (children, descriptors of any kind, file locks, timers,
 * set-id credentials all stay behind, at home), and such a restore opens
 * no file and takes on no identity.
 */
#define MIG_CONTEXT		0x01
/* The process runs under osmosis's own filter: a migrated copy. */
#define MIG_FILTERED		0x02
/*
 * A restore into the very process the image was taken of, which still
 * holds its descriptors (a deputy's P, going on at home from a checkpoint
 * after its copy was lost): what it still holds at the same number, the
 * same object opened the same way, it keeps — pipes, sockets, terminals,
 * and the open file descriptions it shares with other processes — regular
 * files rewound to their offsets; only what it no longer holds is opened
 * again, and what it opened since the image is closed.
 */
#define MIG_KEEP_FDS		0x04
/*
 * A dump whose process lives on as the one its signals are sent to (a
 * deputy's P, its husk once its copy runs away): the signals pending in
 * it stay there, out of the image, and reach the copy as every signal
 * sent to it while away does. In the image too, the copy would have each
 * twice.
 */
#define MIG_PENDING_STAY	0x08

/*
 * A file area's stand-in, for a restore whose caller holds the file's
 * content (a guest agent, which had it from home): the path the target is
 * to open for area v, taken as v's file unchecked; or NULL for v's own
 * path, which must then prove to be the file (the same identity, or the
 * same SHA-256 of its content).
 */
typedef const char *(*mig_mapped_fn)(void *arg, const Osm__ImgVma *v);

/*
 * What a restore could not bring back as it was, told as it goes (a
 * descriptor of the image's that cannot be opened here, now /dev/null):
 * one line each, for the caller to pass on.
 */
typedef void (*mig_warn_fn)(void *arg, const char *msg);

struct mig_restore_opts {
	const struct mig_fd_override *overrides;
	size_t		 noverrides;
	int		 flags;		/* MIG_CONTEXT, MIG_KEEP_FDS */
	mig_mapped_fn	 mapped;	/* NULL: every file as it is here */
	void		*mapped_arg;
	mig_warn_fn	 warn;		/* NULL: no warnings */
	void		*warn_arg;
	/*
	 * Written on the target's descriptor 2 by the target itself, once
	 * its descriptors are back (a deputy's "restarting it from ..."):
	 * where it writes next, so that its own output follows the notice
	 * rather than overwriting it.
	 */
	const char	*notice;
	size_t		 notice_len;
	const struct mig_io *io;	/* not NULL: the image, not fd */
};

/*
 * A file a task maps that stands for another one, at the process's home:
 * a dump of the task records areas of the file here (dev, ino) as areas
 * of that file (path, id), so that its home maps the real one again; or,
 * if that file was replaced at home since (carry), carries the areas'
 * bytes, as the process had them.
 */
struct mig_stand_in {
	uint64_t	 dev;
	uint64_t	 ino;
	const char	*path;
	const Osm__ImgFileId *id;
	int		 carry;		/* that file is gone: carry the bytes */
};

/*
 * Code a guest agent put into a task for its own ends, not the program's
 * (agent/guest-stub.c, a clock stub): a dump of the task leaves its area
 * out, records the vDSO as it was before the agent patched it, and records
 * a task stopped inside that code as stopped at the same point of the
 * program's own (rewind changes the registers the dump records). The
 * patched bytes may be in any page of the program (a function of its
 * libc, agent/rstub.c): every page a dump reads has them as they were
 * (mig_hidden_pages).
 */
struct mig_hidden {
	uint64_t	 start;		/* the area, never dumped */
	uint64_t	 end;
	uint64_t	 patched;	/* where the vDSO (or text) was changed */
	const uint8_t	*orig;		/* its bytes there before */
	size_t		 orig_len;
	void		(*rewind)(void *arg, struct user_regs_struct *r);
	void		*arg;
	const struct mig_hidden *next;	/* another such code, or NULL */
};

/*
 * The CPU time a thread used before it came to this task (elsewhere: a
 * migrated process's threads on their earlier nodes), which the kernel
 * here does not count: a dump of the task records each thread's CPU time
 * (ImgThread.cpu_ns) as the kernel's plus this, and the process's
 * (ImgTask.cpu_total_ns) as its CPU clock's plus what the process carried
 * (mig_cpu_carried); after a restore, mig_thread_cpu and mig_process_cpu
 * say what the image recorded.
 */
struct mig_cpu {
	pid_t		 tid;		/* as the process knows it */
	uint64_t	 ns;
};

/* A file a task maps, and the bytes of it mapped, as a dump would record. */
struct mig_range {
	uint64_t	 offset;
	uint64_t	 length;
};
struct mig_file {
	char		*path;
	Osm__ImgFileId	 id;		/* sha256 set when it was hashed */
	uint8_t		 sha256[32];
	struct mig_range *ranges;
	size_t		 nranges;
	int		 shared;	/* some of it in a shared mapping */
};

/* An image's description, as moscr info shows it. */
struct img;
struct mig_image {
	Osm__ImgRecord	*rec[5];
	Osm__ImgHeader	*header;
	Osm__ImgTask	*task;
	Osm__ImgSignals	*sig;
	Osm__ImgFiles	*files;
	Osm__ImgMm	*mm;
	Osm__ImgRecord	**trec;
	Osm__ImgThread	**threads;	/* main first, if it had not ended */
	size_t		 nthreads;
	uint64_t	*vma_pages;	/* pages found in the image, per vma */
	uint64_t	 bytes;		/* whole image */
	struct img	*rd;		/* mig_restore_begin's reader */
	uint32_t	 rounds;	/* of a live dump, before the description */
	char		*parent;	/* incremental: the image before */
	uint32_t	 parent_crc;	/* and its final seal */
	uint64_t	 parent_records;
	uint32_t	 end_crc;	/* this image's final seal */
	uint64_t	 end_records;
};

typedef unsigned long sysargs[6];

/*
 * seize.c, held.c, seccomp.c, mm.c: a process held under our ptrace
 * control, and what may be done to it between our requests — calls run
 * inside it, its memory read and written, code of ours started in it (the
 * deputy's husk, agent/husk.c), a seccomp filter put on it (a guest's R),
 * the files it maps and what they stand for. mig_spawn_pid is mig_spawn
 * with pid as the child's own pid (clone3 with set_tid: see mig_pidns);
 * mig_spawn_bare_pid is both, in a PID namespace (and a user namespace,
 * unless root) of the child's own, made for it by a helper while the
 * caller stays in its own and able to make threads; the child is born
 * holding the caller's descriptors from 3 up (its /proc/self/fd/N is the
 * caller's N, which it could not open through the caller's /proc from
 * inside its user namespace), for the caller to close.
 */
struct mig_pin {
	cpu_set_t	 self, task;	/* the affinities to come back to */
	int		 pinned;
};
struct mig_task	*mig_seize(pid_t pid, char **cause);
struct mig_task	*mig_spawn(char **cause);
struct mig_task	*mig_spawn_bare(char **cause);
struct mig_task	*mig_spawn_pid(pid_t pid, char **cause);
struct mig_task	*mig_spawn_bare_pid(pid_t pid, char **cause);
struct mig_task	*mig_adopt(pid_t pid, char **cause);
pid_t		 mig_pid(const struct mig_task *t);
int		 mig_release(struct mig_task *t, char **cause);
int		 mig_resume(struct mig_task *t, char **cause);
void		 mig_kill(struct mig_task *t);
void		 mig_forget(struct mig_task *t);
int		 mig_call(struct mig_task *t, long *rv, long nr,
		    const sysargs args, char **cause);
int		 mig_call_ok(struct mig_task *t, const char *what, long *rv,
		    long nr, const sysargs args, char **cause);
size_t		 mig_stolen(struct mig_task *t, siginfo_t *out, size_t max);
int		 mig_read(struct mig_task *t, uint64_t addr, void *buf,
		    size_t len, char **cause);
int		 mig_write(struct mig_task *t, uint64_t addr, const void *buf,
		    size_t len, char **cause);
void		 mig_pin(struct mig_task *t, struct mig_pin *p);
void		 mig_unpin(struct mig_task *t, struct mig_pin *p);
int		 mig_jump(struct mig_task *t, uint64_t rip, uint64_t rdi,
		    char **cause);
int		 mig_interrupt(struct mig_task *t, char **cause);
int		 mig_exit(struct mig_task *t, int status, char **cause);
int		 mig_empty(struct mig_task *t, char **cause);
int		 mig_seccomp(struct mig_task *t, const struct sock_fprog *prog,
		    char **cause);
void		 mig_stand_ins(struct mig_task *t,
		    const struct mig_stand_in *s, size_t n);
void		 mig_hide(struct mig_task *t, const struct mig_hidden *h);
void		 mig_hidden_pages(const struct mig_hidden *h, uint64_t addr,
		    uint8_t *buf, size_t len);
void		 mig_cpu_carried(struct mig_task *t, uint64_t process_ns,
		    const struct mig_cpu *c, size_t n);
int		 mig_thread_cpu(const struct mig_task *t, pid_t vtid,
		    uint64_t *ns);
int		 mig_process_cpu(const struct mig_task *t, uint64_t *ns,
		    uint64_t *utime_ticks, uint64_t *stime_ticks);
void		 mig_usage_carried(struct mig_task *t, uint64_t user_ns,
		    uint64_t sys_ns);
int		 mig_process_usage(const struct mig_task *t, uint64_t *user_ns,
		    uint64_t *sys_ns);
const struct user_regs_struct *mig_regs(struct mig_task *t);
int		 mig_files(struct mig_task *t, int flags,
		    struct mig_file **files, size_t *n, char **cause);
void		 mig_files_free(struct mig_file *files, size_t n);
int		 mig_file_identify(const char *path, Osm__ImgFileId *id,
		    uint8_t *sha256, char **cause);

/*
 * held.c: the same, thread by thread (tid as the process knows it).
 *
 * mig_threads		the held task's thread ids, main first, into tids
 *			(up to max of them); returns how many there are.
 * mig_thread_here	the id by which the caller knows thread tid
 *			(ptrace, waitpid, tgkill): tid itself unless the
 *			task is in a PID namespace below the caller's; -1
 *			if there is no such thread.
 * mig_thread_call	inject system call nr into thread tid, which must
 *			be held (not let run by mig_thread_jump), and run it
 *			to its end; *rv its value (a negative errno). The
 *			call must not block: every other thread stays
 *			stopped meanwhile. _ok: a failed call is an error,
 *			what names it in *cause; rv may be NULL.
 * mig_thread_regs	the registers thread tid is to resume with;
 * mig_thread_set_regs	and new ones (a restart code in rax with orig_rax
 *			>= 0 is resolved on release, as the kernel would).
 * mig_thread_jump	let thread tid run code of the caller's from rip,
 *			rdi its argument, its other registers those it is
 *			to resume with (put back before it is let go); it
 *			runs under our trace, its stops the caller's to
 *			wait for, until mig_thread_interrupt stops it and
 *			holds it again (any stop answers; a signal that
 *			came first is kept: mig_thread_stolen).
 * mig_thread_stolen	signals our stops took from thread tid, now the
 *			caller's to deliver; how many went to out.
 * mig_thread_new	a new thread in the held task, held, with id tid
 *			(0: the kernel's choice); its id in *made (may be
 *			NULL). It starts on the lead's registers: give it
 *			its own (mig_thread_set_regs) before it runs. A
 *			chosen id takes CAP_SYS_ADMIN, in the task, over
 *			its PID namespace; a taken one is refused.
 * mig_thread_new_in	the same, made by held thread via, not the lead.
 * mig_thread_exit	end thread tid alone (exit, not exit_group), its
 *			clear-child-tid word and robust list let go first;
 *			reaped here. Not the last thread: end the process.
 */
size_t		 mig_threads(const struct mig_task *t, pid_t *tids,
		    size_t max);
pid_t		 mig_thread_here(const struct mig_task *t, pid_t tid);
int		 mig_thread_call(struct mig_task *t, pid_t tid, long *rv,
		    long nr, const sysargs args, char **cause);
int		 mig_thread_call_ok(struct mig_task *t, pid_t tid,
		    const char *what, long *rv, long nr, const sysargs args,
		    char **cause);
int		 mig_thread_regs(struct mig_task *t, pid_t tid,
		    struct user_regs_struct *regs, char **cause);
int		 mig_thread_set_regs(struct mig_task *t, pid_t tid,
		    const struct user_regs_struct *regs, char **cause);
int		 mig_thread_jump(struct mig_task *t, pid_t tid, uint64_t rip,
		    uint64_t rdi, char **cause);
int		 mig_thread_interrupt(struct mig_task *t, pid_t tid,
		    char **cause);
size_t		 mig_thread_stolen(struct mig_task *t, pid_t tid,
		    siginfo_t *out, size_t max);
int		 mig_thread_new(struct mig_task *t, pid_t tid, pid_t *made,
		    char **cause);
int		 mig_thread_new_in(struct mig_task *t, pid_t via, pid_t tid,
		    pid_t *made, char **cause);
int		 mig_thread_exit(struct mig_task *t, pid_t tid, char **cause);

/*
 * pidns.c: let the caller choose the pids of the children it makes from
 * now on (mig_spawn_pid): a PID namespace for them, owned by a user
 * namespace of the caller's own unless it is root (root holds
 * CAP_SYS_ADMIN over a namespace it makes; a user namespace would take
 * every privilege outside it from a process restored as root), and an
 * init there, pid 1, which reaps orphans and leaves when nothing else is
 * left in the namespace. The caller must be single-threaded; it stays in
 * its own PID namespace. Returns init's pid (ours), or -1.
 */
pid_t		 mig_pidns(char **cause);
/*
 * A child with pid as its own pid in a PID namespace of its own (and a
 * user namespace, unless we are root), its init there, while the caller
 * stays in its namespaces: for mosrun -R, whose process must have its
 * checkpoint's ids and whose deputy must not be in the namespace. The
 * child is a fork of the caller's but born by a raw clone3: glibc's idea
 * of its tid is wrong (no raise, no pthread calls). 0 in the child, its
 * pid (ours) in the caller, -1 with *cause.
 */
pid_t		 mig_fork_pid(pid_t pid, char **cause);
int		 mig_pidns_next(pid_t member, pid_t next, char **cause);

/* dump.c */
int		 mig_dump(struct mig_task *t, int fd, int flags,
		    struct mig_stats *stats, char **cause);
int		 mig_dump_husk(struct mig_task *t, int ctx, int fd,
		    char **cause);

/*
 * restore.c. mig_restore_begin reads and checks an image's description
 * from fd (what a caller needs to choose its target: mig_image_keeps_ids
 * says whether it must have the image's pid, mi->header->pid);
 * mig_restore_from restores it into t, the rest read from the same fd,
 * and frees nothing (mig_image_free does). mig_restore is both.
 */
int		 mig_restore(struct mig_task *t, int fd,
		    const struct mig_restore_opts *opts,
		    struct mig_stats *stats, char **cause);
int		 mig_restore_begin(int fd, struct mig_image *mi, char **cause);
int		 mig_restore_from(struct mig_task *t, struct mig_image *mi,
		    const struct mig_restore_opts *opts,
		    struct mig_stats *stats, char **cause);
/*
 * mig_restore_chain restores an incremental checkpoint: the image at path
 * and those it adds to (ImgParent, each beside the next), oldest first,
 * into the state of the last.
 */
#define MIG_CHAIN_MAX		64
int		 mig_restore_chain(struct mig_task *t, const char *path,
		    const struct mig_restore_opts *opts,
		    struct mig_stats *stats, char **cause);


/*
 * track.c, precopy.c: a live dump. The process's writes are tracked with
 * a userfaultfd in write-protect mode (UFFD_FEATURE_WP_ASYNC) and the
 * PAGEMAP_SCAN ioctl: the userfaultfd is made inside the process (held:
 * mig_track_new; or by whoever made it, mig_track_fd), everything else
 * is done from outside. mig_dump_live then sends its memory in rounds
 * while it runs, each round what it wrote during the one before, until
 * that no longer shrinks or the rest fits in a short freeze; then it
 * calls freeze, which stops the process and gives it held, and writes
 * the description and the last pages as mig_dump does. The image is one
 * stream, restored by mig_restore as any other (docs/IMAGE.md, "Rounds").
 */
struct mig_track;
#define MIG_ROUNDS_MAX		32
struct mig_live {
	struct mig_track *track;	/* NULL: t is held, stop and copy */
	const struct mig_io *io;	/* not NULL: the image, not fd */
	struct mig_task	*(*freeze)(void *arg, char **cause);
	void		*arg;
	int		 rounds_max;	/* 0: MIG_ROUNDS_MAX; 1: one round */
	int		 rounds_min;	/* rounds before any other reason */
	uint64_t	 freeze_bytes;	/* what may be left for the freeze;
					   0: 20 ms worth at the rate seen */
	const struct mig_hidden *hidden;	/* left out of the rounds too,
						   as mig_hide */
	const struct mig_stand_in *stand_ins;	/* as mig_stand_ins */
	size_t		 nstand_ins;
	/*
	 * Post-copy (track NULL, t held): of the private anonymous areas only
	 * the pages near each thread's stack pointer; the rest is post's.
	 */
	struct mig_post	*post;
	/*
	 * An incremental image: what changed since the last image made with
	 * this tracker, which is parent (its name, beside this one) and
	 * ended with the seal parent_crc, parent_records. NULL: whole.
	 */
	const char	*parent;
	uint32_t	 parent_crc;
	uint64_t	 parent_records;
	/* out */
	struct mig_task	*t;		/* held, from freeze */
	uint32_t	 rounds;	/* rounds sent while it ran */
	uint64_t	 round_pages[MIG_ROUNDS_MAX];
	uint64_t	 round_us[MIG_ROUNDS_MAX];
	uint64_t	 final_pages;	/* sent while frozen */
	uint64_t	 freeze_us;	/* freeze called to the final seal */
	uint64_t	 total_us;
	uint64_t	 bytes;
	const char	*stop_why;	/* why the rounds ended */
	uint32_t	 end_crc;	/* the image's final seal */
	uint64_t	 end_records;
};
int		 mig_track_uffd(struct mig_task *t, char **cause);
struct mig_track *mig_track_new(struct mig_task *t, char **cause);
struct mig_track *mig_track_fd(pid_t pid, int uffd);
void		 mig_track_free(struct mig_track *k);
int		 mig_dump_live(struct mig_live *lv, int fd, int flags,
		    struct mig_stats *stats, char **cause);

/*
 * postcopy.c: a post-copy move (docs/REMOTE.md, "Post-copy"). Source: a
 * mig_dump_live with lv.post leaves the held task's private anonymous
 * pages but the hot ones to the post, sent later from the task (still
 * held) in pieces of at most max bytes (mig_post_prepare, while the
 * task still runs, reads its layout for the dump to reuse, leaving out
 * what hidden says, as mig_hide): pushed (mig_post_next) or asked
 * for by a fault (mig_post_take), read with mig_post_read. Target: before
 * the restored task runs, a userfaultfd made in it (mig_post_uffd; devfd
 * its descriptor of /dev/userfaultfd, or -1 to make one of the calling
 * user's privilege) and registered on its private anonymous areas
 * (mig_post_register); then mig_fetch_events when the userfaultfd is
 * readable, mig_fetch_ask for the faults to ask about, mig_fetch_copy
 * for what comes. mig_fetch_free closes the userfaultfd: the move is
 * over.
 */
struct mig_post;
struct mig_fetch;
struct mig_fetch_stats {
	uint64_t	 faults;	/* fault messages read */
	uint32_t	 threads;	/* threads that faulted (up to 64) */
	uint64_t	 fault_pages;	/* pages put in by answers to asks */
	uint64_t	 pushed_pages;	/* by pushes */
	uint64_t	 there;		/* pages that came but were there */
	uint64_t	 dropped;	/* madvise/munmap ranges told us */
	uint64_t	 remaps;	/* mremaps told us */
};
struct mig_post	*mig_post_new(void);
void		 mig_post_free(struct mig_post *pp);
int		 mig_post_prepare(struct mig_post *pp, pid_t pid, int flags,
		    const struct mig_hidden *hidden, char **cause);
uint64_t	 mig_post_pages(const struct mig_post *pp, uint64_t *left);
int		 mig_post_next(struct mig_post *pp, uint64_t *addr,
		    size_t *len, size_t max);
size_t		 mig_post_take(struct mig_post *pp, uint64_t addr,
		    size_t max);
void		 mig_post_read(struct mig_post *pp, uint64_t addr,
		    void *buf, size_t len);
int		 mig_post_uffd(struct mig_task *t, int devfd, char **cause);
int		 mig_post_register(struct mig_task *t, int uffd,
		    char **cause);
struct mig_fetch *mig_fetch_new(int uffd);
void		 mig_fetch_free(struct mig_fetch *f);
int		 mig_fetch_fd(const struct mig_fetch *f);
const struct mig_fetch_stats *mig_fetch_stats(const struct mig_fetch *f);
int		 mig_fetch_events(struct mig_fetch *f, char **cause);
int		 mig_fetch_ask(struct mig_fetch *f, uint64_t *addr);
int		 mig_fetch_copy(struct mig_fetch *f, uint64_t addr,
		    const void *data, size_t len, int answer, char **cause);

/* image.c, threads.c */
int		 mig_image_load(int fd, struct mig_image *mi, char **cause);
int		 mig_chain_open(const char *path, int *fds, size_t *n,
		    char **cause);
int		 mig_chain_load(const char *path, char **cause);
void		 mig_image_free(struct mig_image *mi);
int		 mig_image_keeps_ids(const struct mig_image *mi);

#endif
