/*
 * The dump, start to end: refuse what cannot be restored, describe the
 * process (task, signals, files, memory map, then each thread), seal
 * that, then carry the pages and seal the whole. The process stays
 * stopped under our trace, every thread of it; the caller then lets it go
 * (mig_release) or kills it (mig_kill).
 */
#include <sys/stat.h>
#include <sys/syscall.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/osm.h"
#include "internal.h"

#define DUMP_SCRATCH	MIG_PAGE

/*
 * What a restore could not bring back right, it must not be asked to.
 * Children and timers stay at home with MIG_CONTEXT, where they belong.
 */
/*
 * What a restore could not bring back right, it must not be asked to.
 * Children and timers stay at home with MIG_CONTEXT, where they belong.
 */
static int
dump_refuse(struct mig_task *t, int flags, char **cause)
{
	char	 path[96], buf[256];

	snprintf(path, sizeof path, "/proc/%d/task/%d/children", t->tgid,
	    t->lead->tid);
	if (!(flags & MIG_CONTEXT) &&
	    read_file_str(path, buf, sizeof buf) == 0 && buf[0] != '\0') {
		xasprintf(cause, "process %d has child processes (%s): they "
		    "would be lost", t->tgid, buf);
		return -1;
	}
	snprintf(path, sizeof path, "/proc/%d/timers", t->pid);
	if (!(flags & MIG_CONTEXT) &&
	    read_file_str(path, buf, sizeof buf) == 0 && buf[0] != '\0') {
		xasprintf(cause, "process %d has POSIX timers, which cannot "
		    "be restored", t->tgid);
		return -1;
	}
	if (core_status_value(t->pid, "Seccomp", buf, sizeof buf,
	    cause) == -1)
		return -1;
	if (!(flags & MIG_FILTERED) && strtol(buf, NULL, 10) != 0) {
		xasprintf(cause, "process %d runs under seccomp, which cannot "
		    "be restored", t->tgid);
		return -1;
	}
	return 0;
}

static int
dump_write(struct img *img, int kind, void *msg, char **cause)
{
	Osm__ImgRecord	rec = OSM__IMG_RECORD__INIT;

	rec.body_case = kind;
	switch (kind) {
	case OSM__IMG_RECORD__BODY_HEADER:
		rec.header = msg;
		break;
	case OSM__IMG_RECORD__BODY_TASK:
		rec.task = msg;
		break;
	case OSM__IMG_RECORD__BODY_THREAD:
		rec.thread = msg;
		break;
	case OSM__IMG_RECORD__BODY_SIGNALS:
		rec.signals = msg;
		break;
	case OSM__IMG_RECORD__BODY_FILES:
		rec.files = msg;
		break;
	case OSM__IMG_RECORD__BODY_MM:
		rec.mm = msg;
		break;
	}
	return img_write(img, &rec, cause);
}

/*
 * The description, after img's preamble (and a live dump's rounds): the
 * process's records, each thread's, the seal.
 */
static int
dump_describe(struct img *img, Osm__ImgHeader *hdr, Osm__ImgTask *task,
    Osm__ImgSignals *sig, Osm__ImgFiles *files, Osm__ImgMm *mm,
    Osm__ImgThread **th, size_t nth, char **cause)
{
	size_t	i;

	if (dump_write(img, OSM__IMG_RECORD__BODY_HEADER, hdr, cause) == -1 ||
	    dump_write(img, OSM__IMG_RECORD__BODY_TASK, task, cause) == -1 ||
	    dump_write(img, OSM__IMG_RECORD__BODY_SIGNALS, sig, cause) == -1 ||
	    dump_write(img, OSM__IMG_RECORD__BODY_FILES, files, cause) == -1 ||
	    dump_write(img, OSM__IMG_RECORD__BODY_MM, mm, cause) == -1)
		return -1;
	for (i = 0; i < nth; i++) {
		if (dump_write(img, OSM__IMG_RECORD__BODY_THREAD, th[i],
		    cause) == -1)
			return -1;
	}
	return img_write_seal(img, 0, cause);
}

/*
 * The image of the held task after img's preamble (and a live dump's
 * rounds): the description, then the pages pages_scan() chose, which
 * runs, if not NULL, may change (precopy.c: what the rounds sent).
 */
int
dump_image(struct mig_task *t, struct img *img, int flags,
    struct mig_stats *st, struct mm_dump *given, dump_runs_fn runs,
    void *arg, char **cause)
{
	Osm__ImgHeader	 hdr = OSM__IMG_HEADER__INIT;
	Osm__ImgTask	 task = OSM__IMG_TASK__INIT;
	Osm__ImgSignals	 sig = OSM__IMG_SIGNALS__INIT;
	Osm__ImgFiles	 files = OSM__IMG_FILES__INIT;
	Osm__ImgThread	**th = NULL;
	size_t		 nth = 0;
	struct mm_dump	 md;
	struct mig_pin	 pin = { .pinned = 0 };
	int		 rc = -1, have_cs = 0;

	memset(&md, 0, sizeof md);
	if (dump_refuse(t, flags, cause) == -1 ||
	    threads_refuse(t, cause) == -1) {
		if (given != NULL)
			mm_dump_free(given);
		return -1;
	}
	/*
	 * The areas before our scratch page joins them: those given (a live
	 * dump's last round) if the task still has them, which a freeze
	 * then need not read with every page counted.
	 */
	if (given != NULL && mm_dump_same(t, given)) {
		md = *given;
		memset(given, 0, sizeof *given);
	} else {
		if (given != NULL)
			mm_dump_free(given);
		if (mm_dump_layout(t, &md, flags, cause) == -1)
			return -1;
	}
	md.skip_live = runs != NULL;
	mig_pin(t, &pin);

	/*
	 * Our calls return to user space, where the kernel clears an rseq
	 * critical section pointer that no longer matches the ip: keep each.
	 */
	if (rseq_cs_keep(t, cause) == -1)
		goto out;
	have_cs = 1;
	if (task_scratch(t, 0, DUMP_SCRATCH, cause) == -1)
		goto out;
	if (core_dump(t, &hdr, &task, flags, cause) == -1 ||
	    sig_dump(t, &sig, flags, cause) == -1 ||
	    files_dump(t, &files, flags, cause) == -1 ||
	    threads_dump(t, flags, &th, &nth, cause) == -1)
		goto out;
	if (task_unscratch(t, cause) == -1)
		goto out;
	if (rseq_cs_put(t, cause) == -1)
		goto out;
	have_cs = 0;
	if (task_settle(t, cause) == -1)
		goto out;
	if (pages_scan(t, &md, cause) == -1 ||
	    (runs != NULL && runs(arg, t, &md, cause) == -1))
		goto out;

	if (dump_describe(img, &hdr, &task, &sig, &files, &md.mm, th, nth,
	    cause) == -1)
		goto out;
	if (pages_dump(t, &md, img, st, cause) == -1 ||
	    img_write_seal(img, 1, cause) == -1)
		goto out;

	if (st != NULL) {
		st->bytes = img->bytes;
		st->frozen_us = now_us() - t->seized_us;
	}
	rc = 0;
out:
	if (have_cs)
		rseq_cs_put(t, NULL);
	task_unscratch(t, NULL);
	mig_unpin(t, &pin);
	core_free(&hdr, &task);
	sig_free(&sig);
	files_free(&files);
	threads_free(th, nth);
	mm_dump_free(&md);
	return rc;
}

int
mig_dump(struct mig_task *t, int fd, int flags, struct mig_stats *st,
    char **cause)
{
	struct img	img;

	if (st != NULL)
		memset(st, 0, sizeof *st);
	img_init(&img, fd);
	if (img_write_preamble(&img, cause) == -1)
		return -1;
	return dump_image(t, &img, flags, st, NULL, NULL, NULL, cause);
}

/*
 * The files a checkpoint's areas map, hashed where the copy away could not
 * (a move hashes nothing): so that a recovery on another node can prove
 * its file the same. Only files still the same here; others keep their
 * identity alone, and a recovery finds them or refuses.
 */
static int
dump_hash_files(Osm__ImgMm *mm, char **cause)
{
	Osm__ImgFileId	 id;
	Osm__ImgVma	*v;
	uint8_t		*sha;
	struct stat	 st;
	size_t		 i;

	for (i = 0; i < mm->n_vmas; i++) {
		v = mm->vmas[i];
		if (v->kind != OSM__IMG_VMA_KIND__VMA_FILE || v->id == NULL ||
		    v->id->has_sha256 || stat(v->path, &st) == -1 ||
		    !fileid_same(v->id, &st))
			continue;
		sha = xmalloc(CRYPTO_HASH_LEN);
		if (fileid_identify(v->path, &id, sha, cause) == -1) {
			free(sha);
			return -1;
		}
		if (!id.has_sha256) {
			free(sha);
			continue;
		}
		/* freed with the image it came in (protobuf-c's allocator) */
		v->id->has_sha256 = 1;
		v->id->sha256.data = sha;
		v->id->sha256.len = CRYPTO_HASH_LEN;
	}
	return 0;
}

/*
 * A whole image of a process away, made at home for a checkpoint: its
 * user context from the image its running copy sent (ctx, a MIG_CONTEXT
 * dump, read to its end), what stays at home — identity, descriptors,
 * working directory, interval timers — from its husk t, held. Written on
 * fd as mig_dump writes an image, and restored as one. The caller sees to
 * it that no call of the copy's runs at home meanwhile, so that both
 * halves are of one moment.
 */
int
mig_dump_husk(struct mig_task *t, int ctx, int fd, char **cause)
{
	Osm__ImgHeader	 hdr = OSM__IMG_HEADER__INIT, header;
	Osm__ImgTask	 home = OSM__IMG_TASK__INIT, task;
	Osm__ImgSignals	 hsig = OSM__IMG_SIGNALS__INIT, sig;
	Osm__ImgFiles	 files = OSM__IMG_FILES__INIT;
	Osm__ImgThread	 main;
	Osm__ImgRecord	*rec = NULL;
	struct mig_image mi;
	struct img_pages cur;
	struct img	 in, out;
	uint8_t		*buf = NULL;
	int		 rc = -1, more;

	memset(&mi, 0, sizeof mi);
	img_init(&in, ctx);
	if (dump_refuse(t, 0, cause) == -1)
		return -1;
	if (task_scratch(t, 0, DUMP_SCRATCH, cause) == -1)
		return -1;
	if (core_dump(t, &hdr, &home, 0, cause) == -1 ||
	    sig_dump(t, &hsig, 0, cause) == -1 ||
	    files_dump(t, &files, 0, cause) == -1 ||
	    task_unscratch(t, cause) == -1 || task_settle(t, cause) == -1)
		goto out;

	if (img_read_meta(&in, &mi, cause) == -1)
		goto out;
	/* The husk's memory is gone: its command line is the copy's. */
	header = *mi.header;
	header.pid = hdr.pid;
	header.comm = hdr.comm;
	header.time = hdr.time;
	header.node = hdr.node;
	header.kernel = hdr.kernel;
	task = *mi.task;
	task.uid = home.uid;
	task.gid = home.gid;
	task.n_groups = home.n_groups;
	task.groups = home.groups;
	task.n_rlimits = home.n_rlimits;
	task.rlimits = home.rlimits;
	task.exe = home.exe;
	task.exe_id = home.exe_id;
	task.no_new_privs = home.no_new_privs;
	task.dumpable = home.dumpable;
	task.cap_eff = home.cap_eff;
	task.cap_prm = home.cap_prm;
	task.cap_inh = home.cap_inh;
	sig = *mi.sig;
	sig.n_itimers = hsig.n_itimers;
	sig.itimers = hsig.itimers;
	if (dump_hash_files(mi.mm, cause) == -1)
		goto out;

	/*
	 * The copy's main thread is the home process's: its id there. (A
	 * copy of several threads has their home ids already.)
	 */
	if (mi.threads[0]->tid == mi.header->pid) {
		main = *mi.threads[0];
		main.tid = hdr.pid;
		mi.threads[0] = &main;
	}
	img_init(&out, fd);
	if (img_write_preamble(&out, cause) == -1 ||
	    dump_describe(&out, &header, &task, &sig, &files, mi.mm,
	    mi.threads, mi.nthreads, cause) == -1)
		goto out;

	/* The pages as they come, each run checked as a restore checks it. */
	buf = xmalloc(MIG_PAGES_MAX);
	img_pages_init(&cur, mi.mm);
	while ((more = img_pages_next(&in, &cur, mi.vma_pages, buf, &rec,
	    cause)) == 1) {
		if (img_write_pages(&out, rec->pages->extents,
		    rec->pages->n_extents, in.raw, in.raw_len, cause) == -1)
			goto out;
		osm__img_record__free_unpacked(rec, NULL);
		rec = NULL;
	}
	if (more == -1 || img_write_seal(&out, 1, cause) == -1)
		goto out;
	rc = 0;
out:
	if (rec != NULL)
		osm__img_record__free_unpacked(rec, NULL);
	task_unscratch(t, NULL);
	free(buf);
	img_free(&in);
	mig_image_free(&mi);
	core_free(&hdr, &home);
	sig_free(&hsig);
	files_free(&files);
	return rc;
}
