/*
 * migrate/ inside: what the library's files share and no other folder may
 * include (its own unit tests and fuzz targets aside). The public API is
 * migrate.h.
 */
#ifndef MIGRATE_INTERNAL_H
#define MIGRATE_INTERNAL_H

#include "migrate.h"

/* The kernel's restart codes, which libc does not define. */
#define ERESTARTSYS		512
#define ERESTARTNOINTR		513
#define ERESTARTNOHAND		514
#define ERESTART_RESTARTBLOCK	516

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
int	 task_requeue(struct mig_task *, const siginfo_t *, int, char **);
int	 task_requeue_stolen(struct mig_task *, char **);
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
/* Where a stream of page records has got to in the memory map. */
struct img_pages {
	const Osm__ImgMm *mm;
	size_t		 vma;		/* where the last extent was */
	uint64_t	 end;		/* and where it ended */
};
void	 img_pages_init(struct img_pages *, const Osm__ImgMm *);
int	 img_pages_next(struct img *, struct img_pages *, uint64_t *,
	    uint8_t *, Osm__ImgRecord **, char **);

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
int	 pages_scan(struct mig_task *, struct mm_dump *, char **);
int	 pages_dump(struct mig_task *, struct mm_dump *, struct img *,
	    struct mig_stats *, char **);
int	 pages_restore(struct mig_task *, const Osm__ImgMm *, struct img *,
	    struct mig_stats *, char **);

/* regs.c */
int	 regs_dump(struct mig_task *, Osm__ImgRegs *, char **);
void	 regs_free(Osm__ImgRegs *);
int	 regs_check(struct mig_task *, const Osm__ImgRegs *, char **);
int	 regs_restore(struct mig_task *, const Osm__ImgRegs *, char **);

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
int	 core_status_value(pid_t, const char *, char *, size_t, char **);

/* rseq.c */
int	 rseq_dump(struct mig_task *, Osm__ImgTask *, char **);
int	 rseq_unregister(struct mig_task *, char **);
int	 rseq_restore(struct mig_task *, const Osm__ImgTask *, char **);
int	 rseq_cs(struct mig_task *, uint64_t *, char **);
int	 rseq_cs_put(struct mig_task *, uint64_t, char **);

/* sig.c */
int	 sig_dump(struct mig_task *, Osm__ImgSignals *, int, char **);
void	 sig_free(Osm__ImgSignals *);
int	 sig_check(const Osm__ImgSignals *, char **);
int	 sig_restore(struct mig_task *, const Osm__ImgSignals *, int, char **);

/* files.c */
int	 files_dump(struct mig_task *, Osm__ImgFiles *, int, char **);
void	 files_free(Osm__ImgFiles *);
int	 files_check(const Osm__ImgFiles *, const struct mig_restore_opts *,
	    char **);
int	 files_restore(struct mig_task *, const Osm__ImgFiles *,
	    const struct mig_restore_opts *, char **);

#endif
