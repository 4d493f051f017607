/*
 * The address space: which areas a process has and how each comes back.
 * Anonymous memory is recreated and its pages carried (pages.c); private
 * mappings of a file still provably the same are mapped from that file
 * again, with only the pages the process wrote carried; the three vDSO
 * areas are moved where the image had them. What cannot come back right
 * is refused at dump time.
 */
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>

#include "lib/osm.h"
#include "internal.h"

#define MM_SCRATCH	(4 * MIG_PAGE)
#define MM_VMAS_MAX	262144


static Osm__ImgVma *
mm_vma_new(unsigned long long s, unsigned long long e, const char *perms)
{
	Osm__ImgVma	*v;

	v = xcalloc(1, sizeof *v);
	osm__img_vma__init(v);
	v->start = s;
	v->end = e;
	if (perms[0] == 'r')
		v->prot |= PROT_READ;
	if (perms[1] == 'w')
		v->prot |= PROT_WRITE;
	if (perms[2] == 'x')
		v->prot |= PROT_EXEC;
	v->flags = perms[3] == 's' ? MAP_SHARED : MAP_PRIVATE;
	v->kind = OSM__IMG_VMA_KIND__VMA_ANON;
	return v;
}

/* Make v an area of file path, identity id, from byte off of it. */
static int
mm_vma_file(Osm__ImgVma *v, const char *path, const Osm__ImgFileId *id,
    unsigned long long off)
{
	v->kind = OSM__IMG_VMA_KIND__VMA_FILE;
	v->path = xstrdup(path);
	v->has_pgoff = 1;
	v->pgoff = off;
	v->id = xmalloc(sizeof *v->id);
	*v->id = *id;
	v->id->sha256.data = NULL;
	v->id->sha256.len = 0;
	if (id->has_sha256) {
		v->id->sha256.data = xmalloc(id->sha256.len);
		memcpy(v->id->sha256.data, id->sha256.data, id->sha256.len);
		v->id->sha256.len = id->sha256.len;
	}
	return 0;
}

/*
 * A mapped file: an area of the file it stands for at home (a guest's
 * stand-in), or mapped again if it is provably the same, else carried as
 * anonymous memory. A migrated copy's guest agent maps what a guest uid
 * could not open from what the home sends it (agent/guest-files.c).
 */
static int
mm_classify_file(struct mig_task *t, Osm__ImgVma *v, const char *path,
    unsigned int maj, unsigned int min, unsigned long long ino,
    unsigned long long off, int maywrite, int flags, char **cause)
{
	char		 full[PATH_MAX + 64];
	struct stat	 st;
	Osm__ImgFileId	 id;
	uint8_t		 sha[CRYPTO_HASH_LEN];
	char		*why = NULL;
	int		 same, shared = v->flags & MAP_SHARED;
	size_t		 n = strlen(path), i;
	const char	*del = " (deleted)";

	for (i = 0; i < t->nstand_ins; i++) {
		if (t->stand_ins[i].dev != makedev(maj, min) ||
		    t->stand_ins[i].ino != ino)
			continue;
		if (shared && (maywrite || (v->prot & PROT_WRITE))) {
			xasprintf(cause, "process %d has a writable shared "
			    "mapping of %s", t->pid, t->stand_ins[i].path);
			return -1;
		}
		if (t->stand_ins[i].carry) {
			xasprintf(&v->label, "%s", t->stand_ins[i].path);
			return 0;
		}
		return mm_vma_file(v, t->stand_ins[i].path,
		    t->stand_ins[i].id, off);
	}
	if (strncmp(path, "/SYSV", 5) == 0) {
		xasprintf(cause, "process %d uses SysV shared memory (%s), "
		    "which cannot be checkpointed", t->pid, path);
		return -1;
	}
	if (shared && strncmp(path, "/dev/zero", 9) == 0) {
		v->label = xstrdup("shared anonymous");
		return 0;		/* shared anonymous memory */
	}
	if (shared && (maywrite || (v->prot & PROT_WRITE))) {
		xasprintf(cause, "process %d has a writable shared mapping of "
		    "%s at 0x%llx: its writes must reach the file, which a "
		    "restored copy cannot promise", t->pid, path,
		    (unsigned long long)v->start);
		return -1;
	}
	snprintf(full, sizeof full, "/proc/%d/root%s", t->pid, path);
	same = n < strlen(del) || strcmp(path + n - strlen(del), del) != 0;
	if (same && (stat(full, &st) == -1 || !S_ISREG(st.st_mode) ||
	    st.st_ino != ino || major(st.st_dev) != maj ||
	    minor(st.st_dev) != min))
		same = 0;
	if (!same && shared) {
		xasprintf(cause, "process %d has a shared mapping of %s, which "
		    "was deleted or replaced", t->pid, path);
		return -1;
	}
	if (!same) {
		/* Carried as anonymous memory. */
		xasprintf(&v->label, "%s", path);
		return 0;
	}
	if (strncmp(path, "/dev/", 5) == 0) {
		xasprintf(cause, "process %d maps device %s", t->pid, path);
		return -1;
	}
	/*
	 * Its content is what proves it elsewhere, and what a guest agent is
	 * sent when its node has no such file. One we may not read (an
	 * executable with no read permission) is kept by its identity alone,
	 * or carried when it is to leave the node. A move hashes nothing: a
	 * guest asks for the hashes it needs (agent/guest-files.c).
	 */
	if (fileid_identify(full, &id, (flags & MIG_CONTEXT) ? NULL : sha,
	    &why) == -1) {
		free(why);
		if (flags & MIG_CONTEXT) {
			if (shared) {
				xasprintf(cause, "process %d has a shared "
				    "mapping of %s, which it may not read",
				    t->pid, path);
				return -1;
			}
			xasprintf(&v->label, "%s", path);
			return 0;
		}
		fileid_make(&st, &id);
	}
	return mm_vma_file(v, path, &id, off);
}

static int
mm_classify(struct mig_task *t, Osm__ImgVma *v, const char *path,
    unsigned int maj, unsigned int min, unsigned long long ino,
    unsigned long long off, const char *vmflags, int flags, char **cause)
{
	static const struct {
		const char	*name;
		Osm__ImgVmaKind	 kind;
	} special[] = {
		{ "[vdso]", OSM__IMG_VMA_KIND__VMA_VDSO },
		{ "[vvar]", OSM__IMG_VMA_KIND__VMA_VVAR },
		{ "[vvar_vclock]", OSM__IMG_VMA_KIND__VMA_VVAR_VCLOCK },
	};
	size_t	i;

	if (strstr(vmflags, " gd") != NULL)
		v->flags |= MAP_GROWSDOWN;
	/* Reserved, not committed (ASan's shadow): so again, or ENOMEM. */
	if (strstr(vmflags, " nr") != NULL)
		v->flags |= MAP_NORESERVE;
	if (strstr(vmflags, " ht") != NULL) {
		xasprintf(cause, "process %d uses hugetlb memory at 0x%llx, "
		    "which is not supported", t->pid,
		    (unsigned long long)v->start);
		return -1;
	}
	for (i = 0; i < nitems(special); i++) {
		if (strcmp(path, special[i].name) == 0) {
			v->kind = special[i].kind;
			v->label = xstrdup(path);
			return 0;
		}
	}
	if (strstr(vmflags, " io") != NULL || strstr(vmflags, " pf") != NULL) {
		xasprintf(cause, "process %d maps device memory at 0x%llx "
		    "(%s)", t->pid, (unsigned long long)v->start, path);
		return -1;
	}
	if (*path == '\0' || strcmp(path, "[heap]") == 0 ||
	    strcmp(path, "[stack]") == 0 || strncmp(path, "[anon:", 6) == 0) {
		if (*path != '\0')
			v->label = xstrdup(path);
		return 0;
	}
	if (*path == '/')
		return mm_classify_file(t, v, path, maj, min, ino, off,
		    strstr(vmflags, " mw") != NULL, flags, cause);
	xasprintf(cause, "process %d has a mapping the restore cannot "
	    "recreate: %s at 0x%llx", t->pid, path,
	    (unsigned long long)v->start);
	return -1;
}

/*
 * Read the areas from /proc/PID/smaps (for VmFlags), refuse those that
 * cannot come back, and classify the rest.
 */
int
mm_dump_layout(struct mig_task *t, struct mm_dump *md, int flags,
    char **cause)
{
	char			 path[64], *line = NULL, perms[8], *name;
	size_t			 cap = 0, alloc = 0;
	ssize_t			 len;
	FILE			*f;
	unsigned long long	 s, e, off, ino;
	unsigned int		 maj, min;
	int			 pos, rc = -1;
	Osm__ImgVma		*v = NULL;
	char			 vmflags[256] = "";
	uint8_t			*vdso;

	memset(md, 0, sizeof *md);
	osm__img_mm__init(&md->mm);
	snprintf(path, sizeof path, "/proc/%d/smaps", t->pid);
	if ((f = fopen(path, "re")) == NULL) {
		xasprintf(cause, "%s: %s", path, strerror(errno));
		return -1;
	}
	/* Each area is classified when its VmFlags line has been seen. */
	while ((len = getline(&line, &cap, f)) != -1) {
		if (len > 0 && line[len - 1] == '\n')
			line[--len] = '\0';
		if (strncmp(line, "VmFlags:", 8) == 0 && v != NULL) {
			snprintf(vmflags, sizeof vmflags, "%s", line + 8);
			name = v->label;
			v->label = NULL;
			if (mm_classify(t, v, name, maj, min, ino, off, vmflags,
			    flags, cause) == -1) {
				free(name);
				goto out;
			}
			free(name);
			if (v->kind == OSM__IMG_VMA_KIND__VMA_VDSO) {
				md->vdso_start = v->start;
				md->vdso_end = v->end;
			}
			if (md->nvmas == alloc) {
				alloc = alloc == 0 ? 64 : alloc * 2;
				md->vmas = xreallocarray(md->vmas, alloc,
				    sizeof *md->vmas);
			}
			md->vmas[md->nvmas++] = v;
			v = NULL;
			continue;
		}
		pos = 0;
		if (sscanf(line, "%llx-%llx %7s %llx %x:%x %llu %n", &s, &e,
		    perms, &off, &maj, &min, &ino, &pos) < 7 || pos == 0)
			continue;
		if (v != NULL) {
			xasprintf(cause, "%s: no VmFlags for an area", path);
			goto out;
		}
		md->maps = xreallocarray(md->maps, md->maps_len + len + 2, 1);
		memcpy(md->maps + md->maps_len, line, len);
		md->maps_len += len;
		md->maps[md->maps_len++] = '\n';
		if (s >= MIG_TASK_SIZE)
			continue;	/* [vsyscall] */
		if (hidden_area(t->hidden, s, e))
			continue;	/* not the program's */
		if (md->nvmas >= MM_VMAS_MAX) {
			xasprintf(cause, "process %d has more than %d memory "
			    "areas", t->pid, MM_VMAS_MAX);
			goto out;
		}
		v = mm_vma_new(s, e, perms);
		v->label = xstrdup(line + pos);	/* the name, for now */
	}
	if (v != NULL) {
		xasprintf(cause, "%s: no VmFlags for an area", path);
		goto out;
	}
	if (md->vdso_start == 0) {	/* no areas at all: it is exiting */
		xasprintf(cause, "process %d %s", t->pid, md->nvmas == 0 ?
		    "is ending: its memory is gone" : "has no vDSO");
		goto out;
	}
	md->mm.vmas = md->vmas;
	md->mm.n_vmas = md->nvmas;
	len = md->vdso_end - md->vdso_start;
	vdso = xmalloc(len);
	if (task_read(t, md->vdso_start, vdso, len, cause) == -1) {
		free(vdso);
		goto out;
	}
	/* as the kernel made it, not as a guest agent patched it */
	mig_hidden_pages(t->hidden, md->vdso_start, vdso, len);
	md->mm.vdso_crc = crc32c(0, vdso, len);
	free(vdso);
	rc = 0;
out:
	if (v != NULL) {
		free(v->label);
		free(v);
	}
	free(line);
	fclose(f);
	if (rc == -1)
		mm_dump_free(md);
	return rc;
}

void
mm_dump_free(struct mm_dump *md)
{
	size_t	i;

	for (i = 0; i < md->nvmas; i++) {
		free(md->vmas[i]->path);
		free(md->vmas[i]->label);
		if (md->vmas[i]->id != NULL)
			free(md->vmas[i]->id->sha256.data);
		free(md->vmas[i]->id);
		free(md->vmas[i]);
	}
	free(md->vmas);
	free(md->runs);
	free(md->maps);
	memset(md, 0, sizeof *md);
}

/*
 * Does the task still have the areas md was read with? /proc/PID/maps
 * says so without walking every page (smaps does, for its counts): a
 * live dump's freeze reuses the last round's layout when it holds.
 */
int
mm_dump_same(struct mig_task *t, const struct mm_dump *md)
{
	char	 path[64], *buf;
	size_t	 len = 0, cap = md->maps_len + 4096;
	ssize_t	 n;
	int	 fd, same;

	if (md->maps == NULL)
		return 0;
	snprintf(path, sizeof path, "/proc/%d/maps", t->pid);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1)
		return 0;
	buf = xmalloc(cap);
	while (len < cap && (n = read(fd, buf + len, cap - len)) > 0)
		len += n;
	close(fd);
	same = len == md->maps_len && memcmp(buf, md->maps, len) == 0;
	free(buf);
	return same;
}

static int
mm_is_vdso_kind(const Osm__ImgVma *v)
{
	return v->kind == OSM__IMG_VMA_KIND__VMA_VDSO ||
	    v->kind == OSM__IMG_VMA_KIND__VMA_VVAR ||
	    v->kind == OSM__IMG_VMA_KIND__VMA_VVAR_VCLOCK;
}

/* Everything about the memory map that can be checked on paper. */
int
mm_check(const Osm__ImgMm *mm, char **cause)
{
	const Osm__ImgVma	*v;
	size_t			 i;
	uint64_t		 prev = 0;
	int			 seen[8] = { 0 };

	if (mm->n_vmas == 0 || mm->n_vmas > MM_VMAS_MAX) {
		xasprintf(cause, "image corrupted: %zu memory areas",
		    mm->n_vmas);
		return -1;
	}
	for (i = 0; i < mm->n_vmas; i++) {
		v = mm->vmas[i];
		if (v->start % MIG_PAGE != 0 || v->end % MIG_PAGE != 0 ||
		    v->start >= v->end || v->end > MIG_TASK_SIZE ||
		    v->start < prev) {
			xasprintf(cause, "image corrupted: memory area %zu "
			    "(0x%llx-0x%llx) is misplaced", i,
			    (unsigned long long)v->start,
			    (unsigned long long)v->end);
			return -1;
		}
		prev = v->end;
		if ((v->prot & ~(PROT_READ | PROT_WRITE | PROT_EXEC)) != 0 ||
		    (v->flags & ~(MAP_SHARED | MAP_PRIVATE |
		    MAP_GROWSDOWN | MAP_NORESERVE)) != 0 ||
		    ((v->flags & MAP_SHARED) != 0) ==
		    ((v->flags & MAP_PRIVATE) != 0) ||
		    v->kind < OSM__IMG_VMA_KIND__VMA_ANON ||
		    v->kind > OSM__IMG_VMA_KIND__VMA_VVAR_VCLOCK ||
		    v->pages > (v->end - v->start) / MIG_PAGE) {
			xasprintf(cause, "image corrupted: memory area %zu "
			    "(0x%llx-0x%llx) has bad flags: prot %#x, flags "
			    "%#x, kind %d, %llu pages", i,
			    (unsigned long long)v->start,
			    (unsigned long long)v->end, (unsigned)v->prot,
			    (unsigned)v->flags, (int)v->kind,
			    (unsigned long long)v->pages);
			return -1;
		}
		if (mm_is_vdso_kind(v)) {
			if (seen[v->kind]++ || v->pages != 0 ||
			    (v->flags & MAP_SHARED)) {
				xasprintf(cause, "image corrupted: vDSO area "
				    "%zu", i);
				return -1;
			}
		}
		if (v->kind == OSM__IMG_VMA_KIND__VMA_FILE &&
		    (v->path == NULL || v->path[0] != '/' ||
		    strlen(v->path) >= PATH_MAX || v->id == NULL ||
		    !v->has_pgoff || v->pgoff % MIG_PAGE != 0 ||
		    v->pgoff > (1ULL << 62))) {
			xasprintf(cause, "image corrupted: file mapping %zu",
			    i);
			return -1;
		}
		if ((v->flags & MAP_SHARED) && v->kind ==
		    OSM__IMG_VMA_KIND__VMA_FILE && (v->prot & PROT_WRITE)) {
			xasprintf(cause, "image corrupted: writable shared "
			    "file mapping %zu", i);
			return -1;
		}
	}
	if (!seen[OSM__IMG_VMA_KIND__VMA_VDSO]) {
		xasprintf(cause, "image corrupted: no vDSO area");
		return -1;
	}
	return 0;
}

/*
 * Are the files to be mapped again the files the process had (or stand-ins
 * the caller holds for them)? A process coming home from away (a
 * MIG_CONTEXT restore) maps the same file again even if it was changed in
 * place meanwhile: natively it would see those changes too.
 */
int
mm_check_files(const Osm__ImgMm *mm, const struct mig_restore_opts *o,
    char **cause)
{
	const Osm__ImgVma	*v;
	size_t			 i;

	for (i = 0; i < mm->n_vmas; i++) {
		v = mm->vmas[i];
		if (v->kind != OSM__IMG_VMA_KIND__VMA_FILE ||
		    (o != NULL && o->mapped != NULL &&
		    o->mapped(o->mapped_arg, v) != NULL))
			continue;
		if (access(v->path, F_OK) == -1) {
			xasprintf(cause, "mapped file %s: %s", v->path,
			    strerror(errno));
			return -1;
		}
		if (!fileid_is(v->id, v->path) && !(o != NULL &&
		    (o->flags & MIG_CONTEXT) && fileid_inode(v->id, v->path))) {
			xasprintf(cause, "mapped file %s is not the file the "
			    "process had (changed or replaced since the "
			    "checkpoint)", v->path);
			return -1;
		}
	}
	return 0;
}

/* The target's own areas, to find room for scratch and what to unmap. */
struct mm_area {
	uint64_t	start;
	uint64_t	end;
	int		kind;	/* 0, or a vDSO kind */
};

static int
mm_target_areas(pid_t pid, struct mm_area **out, size_t *n, char **cause)
{
	char			 path[64], line[512], name[256];
	FILE			*f;
	unsigned long long	 s, e;
	struct mm_area		*a = NULL;
	size_t			 na = 0;

	snprintf(path, sizeof path, "/proc/%d/maps", pid);
	if ((f = fopen(path, "re")) == NULL) {
		xasprintf(cause, "%s: %s", path, strerror(errno));
		return -1;
	}
	while (fgets(line, sizeof line, f) != NULL) {
		name[0] = '\0';
		if (sscanf(line, "%llx-%llx %*s %*s %*s %*s %255s", &s, &e,
		    name) < 2 || s >= MIG_TASK_SIZE)
			continue;
		a = xreallocarray(a, na + 1, sizeof *a);
		a[na].start = s;
		a[na].end = e;
		a[na].kind = 0;
		if (strcmp(name, "[vdso]") == 0)
			a[na].kind = OSM__IMG_VMA_KIND__VMA_VDSO;
		else if (strcmp(name, "[vvar]") == 0)
			a[na].kind = OSM__IMG_VMA_KIND__VMA_VVAR;
		else if (strcmp(name, "[vvar_vclock]") == 0)
			a[na].kind = OSM__IMG_VMA_KIND__VMA_VVAR_VCLOCK;
		na++;
	}
	fclose(f);
	*out = a;
	*n = na;
	return 0;
}

static int
mm_overlaps(uint64_t s, uint64_t e, const Osm__ImgMm *mm,
    const struct mm_area *a, size_t na)
{
	size_t	i;

	for (i = 0; i < mm->n_vmas; i++) {
		if (s < mm->vmas[i]->end && mm->vmas[i]->start < e)
			return 1;
	}
	for (i = 0; i < na; i++) {
		if (s < a[i].end && a[i].start < e)
			return 1;
	}
	return 0;
}

/* A free range of len bytes, clear of the image and of the target. */
static uint64_t
mm_find_hole(const Osm__ImgMm *mm, const struct mm_area *a, size_t na,
    size_t len)
{
	uint64_t	addr;

	for (addr = 0x100000000ULL; addr + len < MIG_TASK_SIZE;
	    addr += 0x10000000ULL) {
		if (!mm_overlaps(addr, addr + len, mm, a, na))
			return addr;
	}
	return 0;
}

static const Osm__ImgVma *
mm_find_kind(const Osm__ImgMm *mm, int kind)
{
	size_t	i;

	for (i = 0; i < mm->n_vmas; i++) {
		if ((int)mm->vmas[i]->kind == kind)
			return mm->vmas[i];
	}
	return NULL;
}

/*
 * The vDSO of the target must be the one the image's code calls into:
 * same areas, same sizes, same text.
 */
static int
mm_check_vdso(struct mig_task *t, const Osm__ImgMm *mm,
    const struct mm_area *a, size_t na, char **cause)
{
	const Osm__ImgVma	*v;
	uint8_t			*buf;
	size_t			 i, len;
	uint32_t		 crc;
	int			 kind, found;

	for (kind = OSM__IMG_VMA_KIND__VMA_VDSO;
	    kind <= OSM__IMG_VMA_KIND__VMA_VVAR_VCLOCK; kind++) {
		v = mm_find_kind(mm, kind);
		found = 0;
		for (i = 0; i < na; i++) {
			if (a[i].kind != kind)
				continue;
			found = 1;
			if (v == NULL || v->end - v->start !=
			    a[i].end - a[i].start)
				goto differ;
			if (kind != OSM__IMG_VMA_KIND__VMA_VDSO)
				continue;
			len = a[i].end - a[i].start;
			buf = xmalloc(len);
			if (task_read(t, a[i].start, buf, len, cause) == -1) {
				free(buf);
				return -1;
			}
			crc = crc32c(0, buf, len);
			free(buf);
			if (crc != mm->vdso_crc)
				goto differ;
		}
		if (v != NULL && !found)
			goto differ;
	}
	return 0;
differ:
	xasprintf(cause, "the image comes from a different kernel: its vDSO "
	    "does not match this one");
	return -1;
}

/* Move one of the target's vDSO areas, keeping the syscall site on it. */
static int
mm_move(struct mig_task *t, uint64_t from, uint64_t len, uint64_t to,
    int is_vdso, char **cause)
{
	if (from == to)
		return 0;
	if (task_sys_ok(t, "mremap vDSO", SYS_mremap, (sysargs){ from, len,
	    len, MREMAP_MAYMOVE | MREMAP_FIXED, to }) == -1) {
		*cause = task_cause(t);
		return -1;
	}
	if (is_vdso)
		t->sysc = t->sysc - from + to;
	return 0;
}

/* Before anything changes: is the target's kernel the image's? */
int
mm_check_target(struct mig_task *t, const Osm__ImgMm *mm, char **cause)
{
	struct mm_area	*a;
	size_t		 na;
	int		 rc;

	if (mm_target_areas(t->pid, &a, &na, cause) == -1)
		return -1;
	rc = mm_check_vdso(t, mm, a, na, cause);
	free(a);
	return rc;
}

/*
 * Empty the target but for a scratch area and its vDSO, and move the vDSO
 * areas to the image's addresses.
 */
int
mm_restore_clear(struct mig_task *t, const Osm__ImgMm *mm, char **cause)
{
	struct mm_area		*a = NULL, keep[4], x;
	size_t			 na, nkeep = 0, i, j;
	uint64_t		 hole, tmp, prev, end, len;
	const Osm__ImgVma	*v;
	int			 rc = -1;

	if (mm_target_areas(t->pid, &a, &na, cause) == -1)
		return -1;
	len = MM_SCRATCH;
	for (i = 0; i < na; i++) {
		if (a[i].kind != 0)
			len += a[i].end - a[i].start;
	}
	if ((hole = mm_find_hole(mm, a, na, len)) == 0) {
		xasprintf(cause, "no room for the restore's scratch area");
		goto out;
	}
	if (task_scratch(t, hole, MM_SCRATCH, cause) == -1)
		goto out;

	/* Unmap everything around what we keep. */
	keep[nkeep].start = hole;
	keep[nkeep].end = hole + MM_SCRATCH;
	keep[nkeep++].kind = 0;
	for (i = 0; i < na; i++) {
		if (a[i].kind != 0 && nkeep < nitems(keep))
			keep[nkeep++] = a[i];
	}
	for (i = 0; i < nkeep; i++) {
		for (j = i + 1; j < nkeep; j++) {
			if (keep[j].start < keep[i].start) {
				x = keep[i];
				keep[i] = keep[j];
				keep[j] = x;
			}
		}
	}
	prev = 0;
	for (i = 0; i <= nkeep; i++) {
		end = i < nkeep ? keep[i].start : MIG_TASK_SIZE;
		if (end > prev && task_sys_ok(t, "munmap", SYS_munmap,
		    (sysargs){ prev, end - prev }) == -1) {
			*cause = task_cause(t);
			goto out;
		}
		if (i < nkeep)
			prev = keep[i].end;
	}

	/* The vDSO areas: first out of the way, then into place. */
	tmp = hole + MM_SCRATCH;
	for (i = 0; i < nkeep; i++) {
		if (keep[i].kind == 0)
			continue;
		if (mm_move(t, keep[i].start, keep[i].end - keep[i].start, tmp,
		    keep[i].kind == OSM__IMG_VMA_KIND__VMA_VDSO, cause) == -1)
			goto out;
		keep[i].end = tmp + keep[i].end - keep[i].start;
		keep[i].start = tmp;
		tmp = keep[i].end;
	}
	for (i = 0; i < nkeep; i++) {
		if (keep[i].kind == 0)
			continue;
		v = mm_find_kind(mm, keep[i].kind);
		if (mm_move(t, keep[i].start, keep[i].end - keep[i].start,
		    v->start, keep[i].kind == OSM__IMG_VMA_KIND__VMA_VDSO,
		    cause) == -1)
			goto out;
	}
	rc = 0;
out:
	free(a);
	return rc;
}

/*
 * Release every area of the held task but the kernel's (the vDSO's three),
 * its threads' rseq registrations first: the kernel writes into those
 * areas at every return to user space. What stays is a task with no
 * memory of its own, for code the caller maps next (the deputy's husk).
 */
int
mig_empty(struct mig_task *t, char **cause)
{
	struct mm_area	*a = NULL;
	size_t		 na, i, j;
	int		 rc = -1;

	if (rseq_unregister_all(t, cause) == -1 ||
	    mm_target_areas(t->pid, &a, &na, cause) == -1)
		return -1;
	/*
	 * One munmap per run of areas between the kernel's, holes and all:
	 * each call injected costs the task two ptrace stops, and a program
	 * with many libraries has a hundred areas or more.
	 */
	for (i = 0; i < na; i = j) {
		if (a[i].kind != 0) {
			j = i + 1;
			continue;
		}
		for (j = i + 1; j < na && a[j].kind == 0; j++)
			;
		if (task_sys_ok(t, "munmap", SYS_munmap, (sysargs){ a[i].start,
		    a[j - 1].end - a[i].start }) == -1) {
			*cause = task_cause(t);
			goto out;
		}
	}
	rc = 0;
out:
	free(a);
	return rc;
}

/*
 * Open the file of area v in the target: the caller's stand-in, or v's
 * own path, proved to be the file of the image.
 */
static int
mm_open_in(struct mig_task *t, const Osm__ImgVma *v,
    const struct mig_restore_opts *o, long *fd, char **cause)
{
	const char	*path = NULL;
	char		 link[64];
	size_t		 n;

	if (o != NULL && o->mapped != NULL)
		path = o->mapped(o->mapped_arg, v);
	if (path == NULL)
		path = v->path;
	if ((n = strlen(path) + 1) > MM_SCRATCH) {
		xasprintf(cause, "path too long: %s", path);
		return -1;
	}
	if (task_write(t, t->scratch, path, n, cause) == -1)
		return -1;
	if (task_sys_ok(t, "open mapped file", SYS_openat, (sysargs){ AT_FDCWD,
	    t->scratch, O_RDONLY | O_CLOEXEC, 0 }) == -1) {
		*cause = task_cause(t);
		return -1;
	}
	*fd = t->last_rv;
	snprintf(link, sizeof link, "/proc/%d/fd/%ld", t->pid, *fd);
	if (path == v->path && !fileid_is(v->id, link) && !(o != NULL &&
	    (o->flags & MIG_CONTEXT) && fileid_inode(v->id, link))) {
		xasprintf(cause, "mapped file %s is not the file the process "
		    "had", v->path);
		return -1;
	}
	return 0;
}

static int
mm_close_in(struct mig_task *t, long *fd)
{
	if (*fd == -1)
		return 0;
	if (task_sys_ok(t, "close", SYS_close, (sysargs){ *fd }) == -1)
		return -1;
	*fd = -1;
	return 0;
}

/* Create every area of the image, writable where pages are to come. */
int
mm_restore_map(struct mig_task *t, const Osm__ImgMm *mm,
    const struct mig_restore_opts *o, char **cause)
{
	const Osm__ImgVma	*v;
	const char		*open_path = NULL;
	long			 fd = -1;
	size_t			 i;
	int			 prot, flags;

	for (i = 0; i < mm->n_vmas; i++) {
		v = mm->vmas[i];
		if (mm_is_vdso_kind(v))
			continue;
		prot = v->prot;
		if (v->pages > 0)
			prot |= PROT_READ | PROT_WRITE;
		flags = v->flags | MAP_FIXED_NOREPLACE;
		if (v->kind == OSM__IMG_VMA_KIND__VMA_ANON) {
			if (task_sys_ok(t, "mmap", SYS_mmap,
			    (sysargs){ v->start, v->end - v->start, prot,
			    flags | MAP_ANONYMOUS, -1, 0 }) == -1)
				goto fail;
			continue;
		}
		/* Consecutive areas of one file share one descriptor. */
		if (open_path == NULL || strcmp(open_path, v->path) != 0) {
			if (mm_close_in(t, &fd) == -1)
				goto fail;
			if (mm_open_in(t, v, o, &fd, cause) == -1)
				return -1;
			open_path = v->path;
		}
		if (task_sys_ok(t, "mmap file", SYS_mmap, (sysargs){ v->start,
		    v->end - v->start, prot, flags, fd, v->pgoff }) == -1)
			goto fail;
	}
	if (mm_close_in(t, &fd) == -1)
		goto fail;
	return 0;
fail:
	*cause = task_cause(t);
	return -1;
}

/* Take write access back where it was only lent for the pages. */
int
mm_restore_prot(struct mig_task *t, const Osm__ImgMm *mm, char **cause)
{
	const Osm__ImgVma	*v;
	size_t			 i;

	for (i = 0; i < mm->n_vmas; i++) {
		v = mm->vmas[i];
		if (v->pages == 0 || mm_is_vdso_kind(v) ||
		    v->prot == (v->prot | PROT_READ | PROT_WRITE))
			continue;
		if (task_sys_ok(t, "mprotect", SYS_mprotect,
		    (sysargs){ v->start, v->end - v->start, v->prot }) == -1) {
			*cause = task_cause(t);
			return -1;
		}
	}
	return 0;
}

/*
 * Dumps of t from now on record areas of these files as areas of the files
 * they stand for; s is the caller's, and must outlive t's dumps.
 */
void
mig_stand_ins(struct mig_task *t, const struct mig_stand_in *s, size_t n)
{
	t->stand_ins = s;
	t->nstand_ins = n;
}

static struct mig_file *
mm_files_find(struct mig_file *files, size_t n, const Osm__ImgVma *v)
{
	size_t	i;

	for (i = 0; i < n; i++) {
		if (strcmp(files[i].path, v->path) == 0 &&
		    files[i].id.dev == v->id->dev &&
		    files[i].id.ino == v->id->ino)
			return &files[i];
	}
	return NULL;
}

/*
 * The files a dump of t with flags would record as file areas, each with
 * its identity (and content hash) and the ranges of it mapped: what a
 * target must have, or be sent, to map them again.
 */
int
mig_files(struct mig_task *t, int flags, struct mig_file **out, size_t *n,
    char **cause)
{
	struct mm_dump		 md;
	struct mig_file		*files = NULL, *f;
	const Osm__ImgVma	*v;
	size_t			 i;

	if (mm_dump_layout(t, &md, flags, cause) == -1)
		return -1;
	*n = 0;
	for (i = 0; i < md.nvmas; i++) {
		v = md.vmas[i];
		if (v->kind != OSM__IMG_VMA_KIND__VMA_FILE)
			continue;
		if ((f = mm_files_find(files, *n, v)) == NULL) {
			files = xreallocarray(files, *n + 1, sizeof *files);
			f = &files[(*n)++];
			memset(f, 0, sizeof *f);
			f->path = xstrdup(v->path);
			f->id = *v->id;
			if (v->id->has_sha256) {
				memcpy(f->sha256, v->id->sha256.data,
				    CRYPTO_HASH_LEN);
				f->id.sha256.data = f->sha256;
			}
		}
		f->shared |= (v->flags & MAP_SHARED) != 0;
		f->ranges = xreallocarray(f->ranges, f->nranges + 1,
		    sizeof *f->ranges);
		f->ranges[f->nranges].offset = v->pgoff;
		f->ranges[f->nranges++].length = v->end - v->start;
	}
	mm_dump_free(&md);
	*out = files;
	return 0;
}

void
mig_files_free(struct mig_file *files, size_t n)
{
	size_t	i;

	for (i = 0; i < n; i++) {
		free(files[i].path);
		free(files[i].ranges);
	}
	free(files);
}
