/*
 * migrate/ — checkpoint and restore of a process's user context
 * (libmigrate.a). Used by moscr, and by mosd and mosrun to move processes
 * between nodes.
 *
 * The library never prints and never exits: every function returns 0 or
 * -1 (or NULL) and puts what a user should read into *cause.
 *
 * A dump writes to any file descriptor (file, pipe, socket) and a restore
 * reads from any, strictly in order. A restore targets a process under our
 * ptrace control: a fresh one (mig_spawn) or one the caller already stopped
 * (mig_adopt).
 *
 *	dump:		t = mig_seize(pid); mig_dump(t, fd, ...); then
 *			mig_release(t) to let it go on, or mig_kill(t)
 *	restore:	t = mig_spawn() or mig_adopt(pid);
 *			mig_restore(t, fd, ...); mig_release(t) to let it run
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

/* The image: 8-byte preamble, then stream records (docs/IMAGE.md). */
#define MIG_MAGIC		0x4f534d43U	/* "OSMC" */
#define MIG_VERSION		1
#define MIG_META_MAX		(16U << 20)	/* one descriptive record */
#define MIG_PAGES_MAX		(8U << 20)	/* raw record of pages, at most */
#define MIG_BATCH		(1U << 20)	/* what a dump puts in one */
#define MIG_EXTENTS_MAX		1024		/* extents in one record */
#define MIG_PAGE		4096UL
#define MIG_TASK_SIZE		0x7ffffffff000UL	/* 47-bit user space */
#define MIG_XSTATE_MAX		(64U << 10)

/* A process under our ptrace control, stopped between our requests. */
struct mig_task;

struct mig_stats {
	uint64_t	 frozen_us;	/* dump: stopped, seize to last seal;
					   restore: from spawn to ready */
	uint64_t	 pages;		/* pages carried */
	uint64_t	 bytes;		/* image bytes */
	uint64_t	 mem_us;	/* time spent moving pages */
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

struct mig_restore_opts {
	const struct mig_fd_override *overrides;
	size_t		 noverrides;
	int		 flags;		/* MIG_CONTEXT */
};

/* An image's description, as moscr info shows it. */
struct mig_image {
	Osm__ImgRecord	*rec[6];
	Osm__ImgHeader	*header;
	Osm__ImgTask	*task;
	Osm__ImgRegs	*regs;
	Osm__ImgSignals	*sig;
	Osm__ImgFiles	*files;
	Osm__ImgMm	*mm;
	uint64_t	*vma_pages;	/* pages found in the image, per vma */
	uint64_t	 bytes;		/* whole image */
};

typedef unsigned long sysargs[6];

/* task.c */
struct mig_pin {
	cpu_set_t	 self, task;	/* the affinities to come back to */
	int		 pinned;
};
struct mig_task	*mig_seize(pid_t, char **);
struct mig_task	*mig_spawn(char **);
struct mig_task	*mig_adopt(pid_t, char **);
pid_t		 mig_pid(const struct mig_task *);
int		 mig_release(struct mig_task *, char **);
int		 mig_resume(struct mig_task *, char **);
void		 mig_kill(struct mig_task *);
void		 mig_forget(struct mig_task *);
int		 mig_call(struct mig_task *, long *, long, const sysargs,
		    char **);
size_t		 mig_stolen(struct mig_task *, siginfo_t *, size_t);
int		 mig_read(struct mig_task *, uint64_t, void *, size_t, char **);
int		 mig_write(struct mig_task *, uint64_t, const void *, size_t,
		    char **);
void		 mig_pin(struct mig_task *, struct mig_pin *);
void		 mig_unpin(struct mig_task *, struct mig_pin *);

/* husk.c: a process at home while it runs elsewhere */
struct mig_husk {
	struct mig_task	*t;
	int		 memfd;		/* the area shared with the stub */
	uint8_t		*shm;		/* our view: control page, scratch */
	size_t		 len;
	uint64_t	 base;		/* the same area in the task */
	uint64_t	 code;		/* the stub */
	int		 running;	/* the stub runs: not stopped by us */
	int		 busy;		/* a call was asked and not answered */
};
enum mig_husk_stop {
	MIG_HUSK_RETURNED,	/* the call returned */
	MIG_HUSK_SIGNAL,	/* a signal for the process */
	MIG_HUSK_OTHER,		/* an interrupt or a group stop */
};
int		 mig_husk_make(struct mig_task *, size_t, struct mig_husk *,
		    char **);
void		 mig_husk_free(struct mig_husk *);
uint8_t		*mig_husk_scratch(const struct mig_husk *, uint64_t *,
		    size_t *);
int		 mig_husk_run(struct mig_husk *, char **);
void		 mig_husk_call(struct mig_husk *, long, const uint64_t *);
enum mig_husk_stop mig_husk_stopped(struct mig_husk *, int, long *,
		    siginfo_t *);
int		 mig_husk_continue(struct mig_husk *, int, char **);
int		 mig_husk_hold(struct mig_husk *, char **);
int		 mig_husk_grow(struct mig_husk *, size_t, char **);
int		 mig_husk_unblock(struct mig_husk *, char **);
int		 mig_husk_default(struct mig_husk *, int, char **);
int		 mig_end(struct mig_husk *, int, int, char **);
int		 mig_say(struct mig_husk *, int, const char *, size_t);

/* dump.c */
int		 mig_dump(struct mig_task *, int, int, struct mig_stats *,
		    char **);
int		 mig_dump_husk(struct mig_task *, int, int, char **);

/* restore.c */
int		 mig_restore(struct mig_task *, int,
		    const struct mig_restore_opts *, struct mig_stats *,
		    char **);

/* image.c */
int		 mig_image_load(int, struct mig_image *, char **);
void		 mig_image_free(struct mig_image *);

/* --- inside the library ------------------------------------------------ */

struct mig_task {
	pid_t		 pid;
	int		 spawned;	/* our child, killed on failure */
	int		 dead;
	uint64_t	 sysc;		/* a syscall instruction (the vDSO's) */
	uint64_t	 scratch;	/* our pages in the task, 0: none */
	size_t		 scratch_len;
	struct user_regs_struct regs;	/* to resume with */
	int		 regs_dirty;	/* regs must be set before release */
	siginfo_t	*stolen;	/* signals dequeued by our stops */
	size_t		 nstolen;
	uint64_t	 seized_us;
	long		 last_rv;	/* of the last task_sys_ok() */
	uint64_t	 rseq_area;	/* its rseq area, while dumping */
	char		*cause;		/* of the last failed injection */
};

/* task.c */
int	 task_wait(struct mig_task *, int *, char **);
int	 task_steal(struct mig_task *, char **);
int	 task_sys_ok(struct mig_task *, const char *, long, const sysargs);
int	 task_write(struct mig_task *, uint64_t, const void *, size_t, char **);
int	 task_read(struct mig_task *, uint64_t, void *, size_t, char **);
int	 task_scratch(struct mig_task *, uint64_t, size_t, char **);
int	 task_unscratch(struct mig_task *, char **);
int	 task_settle(struct mig_task *, char **);
char	*task_cause(struct mig_task *);

/* image.c */
struct img {
	int		 fd;
	uint32_t	 crc;		/* over everything but raw pages */
	uint64_t	 records;
	uint64_t	 bytes;
	int		 expect_raw;	/* a pages record came, its data next */
	size_t		 raw_len;
	uint32_t	 raw_crc;
};
void	 img_init(struct img *, int);
int	 img_write_preamble(struct img *, char **);
int	 img_write(struct img *, Osm__ImgRecord *, char **);
int	 img_write_pages(struct img *, Osm__ImgExtent **, size_t,
	    const void *, size_t, char **);
int	 img_write_seal(struct img *, int, char **);
Osm__ImgRecord *img_read(struct img *, char **);
int	 img_read_raw(struct img *, void *, size_t, char **);
int	 img_read_meta(struct img *, struct mig_image *, char **);

/* crc32c.c */
uint32_t crc32c(uint32_t, const void *, size_t);

/* mm.c */
/* The areas of a dumped task, and the runs of pages pages_scan() chose. */
struct mm_run {
	uint64_t	 start;
	uint64_t	 npages;
	size_t		 vma;
};
struct mm_dump {
	Osm__ImgMm	 mm;
	Osm__ImgVma	**vmas;
	size_t		 nvmas;
	uint64_t	 vdso_start;
	uint64_t	 vdso_end;
	struct mm_run	*runs;
	size_t		 nruns;
};
int	 mm_dump_layout(struct mig_task *, struct mm_dump *, int, char **);
void	 mm_dump_free(struct mm_dump *);
int	 mm_check(const Osm__ImgMm *, char **);
int	 mm_check_files(const Osm__ImgMm *, char **);
int	 mm_check_target(struct mig_task *, const Osm__ImgMm *, char **);
int	 mm_restore_clear(struct mig_task *, const Osm__ImgMm *, char **);
int	 mm_restore_map(struct mig_task *, const Osm__ImgMm *, char **);
int	 mm_restore_prot(struct mig_task *, const Osm__ImgMm *, char **);
int	 mm_file_id(const struct stat *, Osm__ImgFileId *);
int	 mm_same_file(const Osm__ImgFileId *, const struct stat *);

/* pages.c */
/* Where a stream of page records has got to in the memory map. */
struct pages_cursor {
	const Osm__ImgMm *mm;
	size_t		 vma;		/* where the last extent was */
	uint64_t	 end;		/* and where it ended */
};
int	 pages_scan(struct mig_task *, struct mm_dump *, char **);
int	 pages_dump(struct mig_task *, struct mm_dump *, struct img *,
	    struct mig_stats *, char **);
int	 pages_restore(struct mig_task *, const Osm__ImgMm *, struct img *,
	    struct mig_stats *, char **);
void	 pages_cursor_init(struct pages_cursor *, const Osm__ImgMm *);
int	 pages_next(struct img *, struct pages_cursor *, uint64_t *, uint8_t *,
	    Osm__ImgRecord **, char **);

/* regs.c */
int	 regs_dump(struct mig_task *, Osm__ImgRegs *, char **);
void	 regs_free(Osm__ImgRegs *);
int	 regs_check(struct mig_task *, const Osm__ImgRegs *, char **);
int	 regs_restore(struct mig_task *, const Osm__ImgRegs *, char **);
void	 regs_resumable(struct user_regs_struct *);

/* core.c */
int	 core_dump(struct mig_task *, Osm__ImgHeader *, Osm__ImgTask *, int,
	    char **);
void	 core_free(Osm__ImgHeader *, Osm__ImgTask *);
int	 core_check(const Osm__ImgHeader *, const Osm__ImgTask *, char **);
int	 core_check_local(const Osm__ImgTask *, char **);
int	 core_restore_identity(struct mig_task *, const Osm__ImgTask *, int,
	    char **);
int	 core_restore(struct mig_task *, const Osm__ImgHeader *,
	    const Osm__ImgTask *, int, char **);
int	 core_restore_rseq(struct mig_task *, const Osm__ImgTask *, char **);
int	 core_rseq_unregister(struct mig_task *, char **);
int	 core_rseq_cs(struct mig_task *, uint64_t *, char **);
int	 core_rseq_cs_put(struct mig_task *, uint64_t, char **);
int	 core_status_value(pid_t, const char *, char *, size_t, char **);

/* sig.c */
int	 sig_dump(struct mig_task *, Osm__ImgSignals *, int, char **);
void	 sig_free(Osm__ImgSignals *);
int	 sig_check(const Osm__ImgSignals *, char **);
int	 sig_restore(struct mig_task *, const Osm__ImgSignals *, int, char **);
int	 sig_requeue(struct mig_task *, const siginfo_t *, int, char **);

/* files.c */
int	 files_dump(struct mig_task *, Osm__ImgFiles *, int, char **);
void	 files_free(Osm__ImgFiles *);
int	 files_check(const Osm__ImgFiles *, const struct mig_restore_opts *,
	    char **);
int	 files_restore(struct mig_task *, const Osm__ImgFiles *,
	    const struct mig_restore_opts *, char **);

#endif
