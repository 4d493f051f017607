/*
 * migrate/ inside: what the library's files share and no other folder may
 * include (its own unit tests and fuzz targets aside). The public API is
 * migrate.h.
 */
#ifndef MIGRATE_INTERNAL_H
#define MIGRATE_INTERNAL_H

#include <sys/ioctl.h>

#include "migrate.h"

/* The kernel's restart codes, which libc does not define. */
#define ERESTARTSYS		512
#define ERESTARTNOINTR		513
#define ERESTARTNOHAND		514
#define ERESTART_RESTARTBLOCK	516

#define SIG_PENDING_MAX		65536	/* queued signals of one queue */

/*
 * One thread of a held process. Two ids: ours, for ptrace, waitpid and
 * /proc, and the process's own, which it uses (gettid) and the image
 * keeps; they differ when the process is in a PID namespace below ours.
 */
struct mig_thread {
	pid_t		 tid;		/* ours */
	pid_t		 vtid;		/* the process's own */
	struct user_regs_struct regs;	/* to resume with */
	int		 regs_dirty;	/* regs must be set before release */
	int		 running;	/* let run by mig_thread_jump */
	int		 dead;
	siginfo_t	*stolen;	/* signals dequeued by our stops */
	size_t		 nstolen;
	uint64_t	 mask;		/* its own signal mask, kept while */
	int		 masked;	/* it runs a call of ours: task_mask */
	uint64_t	 rseq_area;	/* its rseq area, while dumping */
	uint64_t	 rseq_cs;	/* the word kept there meanwhile */
	cpu_set_t	 affinity;	/* to come back to after mig_pin */
	int		 pinned;
	int		 has_cpu_img;	/* restored: the image said cpu_img */
	uint64_t	 cpu_img;	/* its CPU time, ns, as the image said */
};

struct mig_task {
	pid_t		 pid;		/* lead->tid: /proc, process_vm_* */
	pid_t		 tgid;		/* the process, ours */
	pid_t		 vtgid;		/* the process, its own pid */
	struct mig_thread **th;		/* every live thread, main first */
	size_t		 nth;
	struct mig_thread *lead;	/* the main thread, or the first left */
	int		 spawned;	/* our child, killed on failure */
	int		 dead;
	int		 options;	/* ptrace options of every thread */
	pid_t		 cloned;	/* ours, of a thread clone_new made */
	uint64_t	 sysc;		/* a syscall instruction (the vDSO's) */
	uint64_t	 scratch;	/* our pages in the task, 0: none */
	size_t		 scratch_len;
	uint64_t	 seized_us;
	long		 last_rv;	/* of the last task_sys_ok() */
	char		*cause;		/* of the last failed injection */
	const struct mig_stand_in *stand_ins;	/* not ours: mig_stand_ins */
	size_t		 nstand_ins;
	const struct mig_hidden *hidden;	/* not the program's: mig_hide */
	const struct mig_cpu *cpu;	/* carried: mig_cpu_carried */
	size_t		 ncpu;
	uint64_t	 cpu_process;	/* carried by the process */
	uint64_t	 cpu_usage[2];	/* user, system: carried too */
	int		 has_cpu_img;	/* restored: the image said */
	uint64_t	 cpu_img[3];	/* cpu_total_ns, utime, stime ticks */
	int		 has_usage_img;	/* and cpu_user_ns, cpu_sys_ns */
	uint64_t	 usage_img[2];
};

/* task.c */
struct mig_task	*task_new(pid_t tgid);
void	 task_free(struct mig_task *t);
struct mig_thread *task_thread_add(struct mig_task *t, pid_t tid);
void	 task_thread_drop(struct mig_task *t, struct mig_thread *th);
struct mig_thread *task_thread(const struct mig_task *t, pid_t vtid);
void	 task_lead(struct mig_task *t);
int	 task_vtid(struct mig_task *t, struct mig_thread *th, char **cause);
int	 task_thread_state(pid_t tgid, pid_t tid);
int	 task_thread_status(struct mig_task *t, struct mig_thread *th,
	    const char *key, char *out, size_t size, char **cause);
int	 task_options(struct mig_task *t, struct mig_thread *th, int extra,
	    char **cause);
int	 task_wait(struct mig_task *t, struct mig_thread *th, int *status,
	    char **cause);
int	 task_steal(struct mig_task *t, struct mig_thread *th, char **cause);
int	 task_mask(struct mig_thread *th, char **cause);
int	 task_unmask(struct mig_thread *th, char **cause);
int	 task_getregs(struct mig_thread *th, struct user_regs_struct *r,
	    char **cause);
int	 task_setregs(struct mig_thread *th, const struct user_regs_struct *r,
	    char **cause);
int	 task_ready(struct mig_task *t, char **cause);
int	 task_aim(struct mig_task *t, struct mig_thread *th, long nr,
	    const sysargs a, char **cause);
int	 task_await(struct mig_task *t, struct mig_thread *th, char **cause);
int	 task_syscall(struct mig_task *t, struct mig_thread *th, long *rv,
	    long nr, const sysargs a);
int	 task_tsys_ok(struct mig_task *t, struct mig_thread *th,
	    const char *name, long nr, const sysargs a);
int	 task_sys_ok(struct mig_task *t, const char *name, long nr,
	    const sysargs a);
int	 task_write(struct mig_task *t, uint64_t addr, const void *buf,
	    size_t len, char **cause);
int	 task_read(struct mig_task *t, uint64_t addr, void *buf, size_t len,
	    char **cause);
int	 task_scratch(struct mig_task *t, uint64_t addr, size_t len,
	    char **cause);
int	 task_unscratch(struct mig_task *t, char **cause);
int	 task_settle(struct mig_task *t, char **cause);
int	 task_requeue(struct mig_task *t, struct mig_thread *th,
	    const siginfo_t *si, int shared, char **cause);
int	 task_requeue_stolen(struct mig_task *t, char **cause);
char	*task_cause(struct mig_task *t);

/* clone.c */
int	 clone_new(struct mig_task *t, pid_t vtid, struct mig_thread **out,
	    char **cause);
int	 clone_end(struct mig_task *t, struct mig_thread *th,
	    char **cause);
void	 clone_kill(struct mig_task *t);

/* The PAGEMAP_SCAN ioctl (Linux 6.7), not in this libc's headers. */
struct pm_region {
	uint64_t	start;
	uint64_t	end;
	uint64_t	categories;
};
struct pm_scan_arg {
	uint64_t	size;
	uint64_t	flags;
	uint64_t	start;
	uint64_t	end;
	uint64_t	walk_end;
	uint64_t	vec;
	uint64_t	vec_len;
	uint64_t	max_pages;
	uint64_t	category_inverted;
	uint64_t	category_mask;
	uint64_t	category_anyof_mask;
	uint64_t	return_mask;
};
#define PM_SCAN			_IOWR('f', 16, struct pm_scan_arg)
#define PM_SCAN_WP_MATCHING	(1 << 0)	/* protect what matched */
#define PM_SCAN_CHECK_WPASYNC	(1 << 1)	/* EPERM unless registered */
#define PM_WRITTEN		(1 << 1)
#define PM_FILE			(1 << 2)
#define PM_PRESENT		(1 << 3)
#define PM_SWAPPED		(1 << 4)
#define PM_PFNZERO		(1 << 5)
#define PM_NREGIONS		1024

/* runs.c: sorted, disjoint address ranges */
struct run {
	uint64_t	 start;
	uint64_t	 end;
};
struct runs {
	struct run	*r;
	size_t		 n;
	size_t		 alloc;
};
void	 runs_init(struct runs *s);
void	 runs_free(struct runs *s);
void	 runs_add(struct runs *s, uint64_t start, uint64_t end);
struct mm_run;
void	 runs_dump_add(struct mm_run **runs, size_t *n, size_t *alloc,
	    uint64_t start, uint64_t end, size_t vma);
void	 runs_sort(struct runs *s);
void	 runs_and(const struct runs *a, const struct runs *b,
	    struct runs *out);
void	 runs_minus(const struct runs *a, const struct runs *b,
	    struct runs *out);
void	 runs_or(const struct runs *a, const struct runs *b,
	    struct runs *out);
void	 runs_copy(const struct runs *a, struct runs *out);
uint64_t runs_bytes(const struct runs *s);
int	 runs_live(const Osm__ImgVma *v);
void	 runs_kept(const Osm__ImgMm *mm, struct runs *out);
int	 runs_check_kept(const struct runs *held, const Osm__ImgMm *mm,
	    char **cause);
void	 runs_hold(struct runs *held, const Osm__ImgMm *mm);

/* image.c */
struct img;
/* A round read (rec), for a restore to apply: its pages are next. */
typedef int (*img_round_fn)(void *arg, struct img *img,
    const Osm__ImgRound *round, char **cause);
struct img {
	int		 fd;
	const struct mig_io *io;	/* instead of fd, if not NULL */
	uint32_t	 version;	/* of the image read */
	uint32_t	 crc;		/* over everything but raw pages */
	uint64_t	 records;
	uint64_t	 bytes;
	int		 expect_raw;	/* a pages record came, its data next */
	size_t		 raw_len;
	uint32_t	 raw_crc;
	const uint8_t	*raw;		/* the last page data read: the
					   caller's buffer, or io's view */
	int		 end_seal;	/* what ends the pages now: 0, END */
	uint32_t	 rounds;	/* read so far */
	struct runs	 held;		/* what the rounds left the target */
	img_round_fn	 round_fn;	/* NULL: rounds read and checked */
	void		*round_arg;
	char		*parent;	/* a chain's: the image before, or NULL */
	uint32_t	 parent_crc;	/* and its final seal */
	uint64_t	 parent_records;
	int		 chained;	/* held is the chain's so far */
	uint32_t	 prev_crc;	/* chained: the final seal before */
	uint64_t	 prev_records;
	uint32_t	 end_crc;	/* the final seal read */
	uint64_t	 end_records;
};
void	 img_init(struct img *img, int fd);
void	 img_free(struct img *img);
int	 img_write_preamble(struct img *img, char **cause);
int	 img_write(struct img *img, Osm__ImgRecord *rec, char **cause);
int	 img_write_pages(struct img *img, Osm__ImgExtent **ext, size_t next,
	    const void *data, size_t len, char **cause);
int	 img_write_seal(struct img *img, int last, char **cause);
Osm__ImgRecord *img_read(struct img *img, char **cause);
int	 img_read_raw(struct img *img, void *buf, size_t len, char **cause);
int	 img_read_meta(struct img *img, struct mig_image *mi, char **cause);
/* Where a stream of page records has got to in the memory map. */
struct img_pages {
	const Osm__ImgMm *mm;
	size_t		 vma;		/* where the last extent was */
	uint64_t	 end;		/* and where it ended */
};
void	 img_pages_init(struct img_pages *cur, const Osm__ImgMm *mm);
int	 img_pages_next(struct img *img, struct img_pages *cur,
	    uint64_t *counts, uint8_t *buf, Osm__ImgRecord **rec, char **cause);

/* track.c */
struct mig_track {
	pid_t		 pid;
	int		 uffd;
	struct runs	 held;		/* what the stream's target holds */
	struct runs	 sent;		/* pages sent into held, not zero */
};
#define TRACK_WRITTEN	0x01
#define TRACK_PROTECT	0x02
#define TRACK_PRESENT	0x04
#define TRACK_CHECK	0x08		/* 1 if not registered with us */
void	 track_reset(struct mig_track *k);
int	 track_register(struct mig_track *k, uint64_t start, uint64_t end);
int	 track_pagemap(struct mig_track *k, char **cause);
int	 track_pm_scan(int pagemap, uint64_t start, uint64_t end,
	    const struct pm_scan_arg *how,
	    void (*fn)(void *, uint64_t, uint64_t, uint64_t), void *arg,
	    char **cause);
int	 track_scan(int pagemap, uint64_t start, uint64_t end, int how,
	    struct runs *out, char **cause);

/*
 * postcopy.c: the dump of lv->t, held, with lv->post; a batch read from a
 * process, running or not, zeros where it cannot be read
 */
int	 postcopy_dump(struct mig_live *lv, struct img *img, int flags,
	    struct mig_stats *st, char **cause);
void	 postcopy_read(pid_t pid, int mem, const struct mig_hidden *h,
	    const struct iovec *remote, size_t n, uint8_t *buf, size_t len);


/* crc32c.c */
uint32_t crc32c(uint32_t crc, const void *buf, size_t len);

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
	char		*maps;		/* the areas' lines, as /proc/PID/maps */
	size_t		 maps_len;
	int		 skip_live;	/* pages_scan: not those of rounds */
};
int	 mm_dump_layout(struct mig_task *t, struct mm_dump *md, int flags,
	    char **cause);
int	 mm_dump_same(struct mig_task *t, const struct mm_dump *md);
void	 mm_dump_free(struct mm_dump *md);
int	 mm_check(const Osm__ImgMm *mm, char **cause);
int	 mm_check_files(const Osm__ImgMm *mm,
	    const struct mig_restore_opts *o, char **cause);
int	 mm_check_target(struct mig_task *t, const Osm__ImgMm *mm,
	    char **cause);
int	 mm_restore_clear(struct mig_task *t, const Osm__ImgMm *mm,
	    char **cause);
int	 mm_restore_map(struct mig_task *t, const Osm__ImgMm *mm,
	    const struct mig_restore_opts *o, char **cause);
int	 mm_restore_prot(struct mig_task *t, const Osm__ImgMm *mm,
	    char **cause);


/* fileid.c */
int	 fileid_make(const struct stat *st, Osm__ImgFileId *id);
int	 fileid_same(const Osm__ImgFileId *id, const struct stat *st);
int	 fileid_identify(const char *path, Osm__ImgFileId *id, uint8_t *out,
	    char **cause);
int	 fileid_is(const Osm__ImgFileId *id, const char *path);
int	 fileid_inode(const Osm__ImgFileId *id, const char *path);

/* dump.c */
typedef int (*dump_runs_fn)(void *arg, struct mig_task *t, struct mm_dump *md,
    char **cause);
int	 dump_image(struct mig_task *t, struct img *img, int flags,
	    struct mig_stats *st, struct mm_dump *given, dump_runs_fn runs,
	    void *arg, char **cause);

/* pages.c */
int	 pages_scan(struct mig_task *t, struct mm_dump *md, char **cause);
int	 pages_dump(struct mig_task *t, struct mm_dump *md, struct img *img,
	    struct mig_stats *st, char **cause);
int	 pages_restore(struct mig_task *t, const Osm__ImgMm *mm,
	    struct img *img, struct mig_stats *st, char **cause);

/* rounds.c */
struct rounds {
	struct mig_task	*t;
	struct mig_stats *st;
	int		 started;
	uint64_t	 vdso[3][2];	/* where the first round put them */
	size_t		 nvdso;
};
int	 rounds_apply(void *arg, struct img *img, const Osm__ImgRound *r,
	    char **cause);
int	 rounds_final(struct rounds *rd, const struct img *img,
	    const Osm__ImgMm *mm, const Osm__ImgTask *task,
	    const struct mig_restore_opts *o, int flags, char **cause);
int	 rounds_prot(struct mig_task *t, const Osm__ImgMm *mm, char **cause);
int	 rounds_image(struct rounds *rd, struct img *img, char **cause);
void	 rounds_next(struct img *img, int fd);
int	 rounds_linked(struct img *img, char **cause);

/* regs.c */
int	 regs_dump(struct mig_task *t, struct mig_thread *th,
	    Osm__ImgRegs *img, char **cause);
void	 regs_free(Osm__ImgRegs *img);
int	 regs_check(struct mig_task *t, const Osm__ImgRegs *img, char **cause);
int	 regs_restore(struct mig_thread *th, const Osm__ImgRegs *img,
	    char **cause);

/* core.c */
int	 core_dump(struct mig_task *t, Osm__ImgHeader *h, Osm__ImgTask *k,
	    int flags, char **cause);
void	 core_free(Osm__ImgHeader *h, Osm__ImgTask *k);
int	 core_check(const Osm__ImgHeader *h, const Osm__ImgTask *k,
	    char **cause);
int	 core_check_local(const Osm__ImgTask *k, char **cause);
int	 core_restore_identity(struct mig_task *t, const Osm__ImgTask *k,
	    int flags, char **cause);
int	 core_restore(struct mig_task *t, const Osm__ImgHeader *h,
	    const Osm__ImgTask *k, int flags, char **cause);
int	 core_restore_caps(struct mig_task *t, const Osm__ImgTask *k,
	    int flags, char **cause);
int	 core_status_value(pid_t pid, const char *key, char *out, size_t size,
	    char **cause);

/* postmap.c: the source's pages in a post-copy target, by event */
struct post_seg {
	uint64_t	 start, end;	/* source addresses */
	int64_t		 delta;		/* now at start + delta */
	int		 gone;		/* dropped */
};
struct postmap {
	struct post_seg	*s;		/* in order, apart */
	size_t		 n;
};
void	 postmap_init(struct postmap *m);
void	 postmap_free(struct postmap *m);
size_t	 postmap_size(const struct postmap *m);
void	 postmap_drop(struct postmap *m, uint64_t start, uint64_t end);
void	 postmap_move(struct postmap *m, uint64_t from, uint64_t to,
	    uint64_t len);
int	 postmap_here(const struct postmap *m, uint64_t src, uint64_t *dst);
int	 postmap_there(const struct postmap *m, uint64_t dst, uint64_t *src);

/* rseq.c */
int	 rseq_dump(struct mig_thread *th, Osm__ImgThread *it, char **cause);
int	 rseq_pages(struct mig_thread *th, uint64_t *start, uint64_t *end,
	    char **cause);
int	 rseq_unregister(struct mig_task *t, struct mig_thread *th,
	    char **cause);
int	 rseq_unregister_all(struct mig_task *t, char **cause);
int	 rseq_restore(struct mig_task *t, struct mig_thread *th,
	    const Osm__ImgThread *it, char **cause);
int	 rseq_cs_keep(struct mig_task *t, char **cause);
int	 rseq_cs_put(struct mig_task *t, char **cause);

/* sig.c */
int	 sig_peek(struct mig_thread *th, int shared, ProtobufCBinaryData **out,
	    size_t *n, char **cause);
int	 sig_dump(struct mig_task *t, Osm__ImgSignals *s, int flags,
	    char **cause);
void	 sig_free(Osm__ImgSignals *s);
int	 sig_check_info(const ProtobufCBinaryData *d, size_t n);
int	 sig_check(const Osm__ImgSignals *s, char **cause);
int	 sig_restore(struct mig_task *t, const Osm__ImgSignals *s, int flags,
	    char **cause);

/* threads.c */
int	 threads_refuse(struct mig_task *t, char **cause);
int	 threads_dump(struct mig_task *t, int flags, Osm__ImgThread ***out,
	    size_t *n, char **cause);
void	 threads_free(Osm__ImgThread **v, size_t n);
int	 threads_check(const Osm__ImgHeader *h, Osm__ImgThread **v, size_t n,
	    char **cause);
int	 threads_check_target(struct mig_task *t, const struct mig_image *mi,
	    char **cause);
int	 threads_make(struct mig_task *t, const struct mig_image *mi,
	    char **cause);
int	 threads_restore(struct mig_task *t, const struct mig_image *mi,
	    int flags, char **cause);
int	 threads_end_main(struct mig_task *t, const struct mig_image *mi,
	    char **cause);
int	 threads_finish(struct mig_task *t, const struct mig_image *mi,
	    char **cause);

/* files.c */
int	 files_dump(struct mig_task *t, Osm__ImgFiles *f, int flags,
	    char **cause);
void	 files_free(Osm__ImgFiles *f);
int	 files_check(const Osm__ImgFiles *f, const struct mig_restore_opts *o,
	    struct mig_task *t, char **cause);
int	 files_restore(struct mig_task *t, const Osm__ImgFiles *f,
	    const struct mig_restore_opts *o, char **cause);

/* pidns.c */
pid_t		 pidns_fork(pid_t pid, char **cause);

/* hidden.c */
int	 hidden_area(const struct mig_hidden *h, uint64_t s, uint64_t e);

#endif
