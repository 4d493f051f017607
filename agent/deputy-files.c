/*
 * The files the process maps, as the deputy tells its guest of them. A
 * move's setup lists the files P maps (path, identity, the SHA-256 of
 * their content, the bytes mapped); the guest maps its node's own copy
 * where it is provably the same content and asks for the bytes of the
 * others. Away, R's new file mappings are made by its guest the same way,
 * asking here what R's descriptor refers to and for its bytes. The files
 * stay at home: the deputy reads them as P's owner, through P's own
 * descriptors (/proc/P/fd) or by the paths the setup named, each proved
 * to be the file it was. See docs/REMOTE.md, "File mappings".
 */
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"
#include "proto/migrate.pb-c.h"

#define FILES_CHUNK	(4U << 20)	/* bytes in one answer, at most */
#define FILES_PREHASH_ONE (8ULL << 20)	/* hashed ahead: a file, at most */
#define FILES_PREHASH	(32ULL << 20)	/* and all of them */

/* A file the guest has been told of, and which R may map away. */
static void
files_remember(struct deputy *d, const char *path, uint64_t dev,
    uint64_t ino)
{
	size_t	i;

	for (i = 0; i < d->nmapped; i++)
		if (d->mapped[i].dev == dev && d->mapped[i].ino == ino &&
		    strcmp(d->mapped[i].path, path) == 0)
			return;
	d->mapped = xreallocarray(d->mapped, d->nmapped + 1,
	    sizeof *d->mapped);
	d->mapped[d->nmapped].path = xstrdup(path);
	d->mapped[d->nmapped].dev = dev;
	d->mapped[d->nmapped++].ino = ino;
}

/* The process is home: what R mapped away is P's own again. */
void
deputy_files_forget(struct deputy *d)
{
	size_t	i;

	for (i = 0; i < d->nmapped; i++)
		free(d->mapped[i].path);
	free(d->mapped);
	d->mapped = NULL;
	d->nmapped = 0;
}

/* The files P maps, for the setup of a move to a guest (SesSetup.files). */
int
deputy_files_list(struct deputy *d, char **cause)
{
	size_t	i;

	deputy_files_clear(d);
	deputy_files_forget(d);
	if (mig_files(d->task, MIG_CONTEXT, &d->files, &d->nfiles, cause) == -1)
		return -1;
	for (i = 0; i < d->nfiles; i++)
		files_remember(d, d->files[i].path, d->files[i].id.dev,
		    d->files[i].id.ino);
	return 0;
}

/* Would the guest ask about the hash of f, listed? (st: the path's) */
static int
files_hashable(const struct mig_file *f, struct stat *st)
{
	return !f->shared && !f->id.has_sha256 &&
	    f->id.size <= FILES_PREHASH_ONE && stat(f->path, st) == 0 &&
	    (uint64_t)st->st_dev == f->id.dev &&
	    (uint64_t)st->st_ino == f->id.ino &&
	    (uint64_t)st->st_size == f->id.size &&
	    (uint64_t)st->st_mtim.tv_sec * 1000000000 + st->st_mtim.tv_nsec ==
	    f->id.mtime_ns;
}

/*
 * The hashes mosd knows of the files P maps (conn_hashes), in the list,
 * asked on a connection of their own: the deputy's own waits for the
 * session meanwhile.
 */
void
deputy_files_known(struct deputy *d)
{
	const char	**paths;
	struct stat	 *st;
	uint8_t		(*sha)[CRYPTO_HASH_LEN];
	size_t		 *at, i, n = 0;
	int		 *known, fd = -1;
	char		 *cause = NULL;

	paths = xcalloc(d->nfiles + 1, sizeof *paths);
	st = xcalloc(d->nfiles + 1, sizeof *st);
	sha = xcalloc(d->nfiles + 1, sizeof *sha);
	at = xcalloc(d->nfiles + 1, sizeof *at);
	known = xcalloc(d->nfiles + 1, sizeof *known);
	for (i = 0; i < d->nfiles; i++)
		if (files_hashable(&d->files[i], &st[n])) {
			paths[n] = d->files[i].path;
			at[n++] = i;
		}
	if (n > 0 && (fd = ctl_connect(d->o->sock, CTL_TIMEOUT_SEC,
	    &cause)) == -1) {
		log_debug("process %d: file hashes: %s", (int)d->pid, cause);
		free(cause);
	} else if (n > 0 && conn_hashes(fd, paths, st, n, sha, known) > 0)
		for (i = 0; i < n; i++) {
			if (!known[i])
				continue;
			memcpy(d->files[at[i]].sha256, sha[i], CRYPTO_HASH_LEN);
			d->files[at[i]].id.has_sha256 = 1;
			d->files[at[i]].id.sha256.data = d->files[at[i]].sha256;
			d->files[at[i]].id.sha256.len = CRYPTO_HASH_LEN;
		}
	if (n > 0 && fd != -1)
		close(fd);
	free(known);
	free(at);
	free(sha);
	free(st);
	free(paths);
}

/*
 * Hash the files P maps that the guest would ask about (a node's own copy
 * stands for one only with the same content), while mosd opens the
 * session and the guest agent starts, and put each hash in the list: the
 * setup then carries them, and the guest asks about none of these.
 * Libraries, not data: up to FILES_PREHASH_ONE bytes a file,
 * FILES_PREHASH in all; the guest asks about the others, which are hashed
 * then (migrate/fileid.c keeps the hashes for our life).
 */
void
deputy_files_prehash(struct deputy *d)
{
	Osm__ImgFileId	 id;
	struct mig_file	*f;
	struct stat	 st;
	uint64_t	 total = 0;
	size_t		 i;
	char		*why = NULL;

	for (i = 0; i < d->nfiles; i++) {
		f = &d->files[i];
		if (total + f->id.size > FILES_PREHASH ||
		    !files_hashable(f, &st))
			continue;
		total += f->id.size;
		if (mig_file_identify(f->path, &id, f->sha256, &why) == -1) {
			log_debug("process %d: %s", (int)d->pid, why);
			free(why);
			why = NULL;
			continue;
		}
		/* the hash of the file listed, not of one put in its place */
		if (id.has_sha256 && id.dev == f->id.dev &&
		    id.ino == f->id.ino && id.size == f->id.size &&
		    id.mtime_ns == f->id.mtime_ns) {
			f->id.has_sha256 = 1;
			f->id.sha256.data = f->sha256;
			f->id.sha256.len = sizeof f->sha256;
		}
	}
}

/*
 * Ask the guest for R (kind SES_COME_HOME or SES_CHECKPOINT), saying which
 * of the files R maps were replaced at home since: the image must carry
 * their bytes, the files at home are others now. A file changed in place
 * is the same file, which P maps again as it is.
 */
int
deputy_files_send(struct deputy *d, uint16_t kind, char **cause)
{
	Osm__SesReplaced	 r = OSM__SES_REPLACED__INIT;
	struct stat		 st;
	size_t			 i;
	int			 rc;

	r.paths = xcalloc(d->nmapped + 1, sizeof *r.paths);
	for (i = 0; i < d->nmapped; i++) {
		if (stat(d->mapped[i].path, &st) == 0 &&
		    (uint64_t)st.st_dev == d->mapped[i].dev &&
		    (uint64_t)st.st_ino == d->mapped[i].ino)
			continue;
		log_info("process %d: %s was replaced while it mapped it away",
		    (int)d->pid, d->mapped[i].path);
		r.paths[r.n_paths++] = d->mapped[i].path;
	}
	if (kind == OSM__SES_KIND__SES_COME_HOME && d->post_home)
		r.has_post_copy = r.post_copy = 1;
	else if (kind == OSM__SES_KIND__SES_COME_HOME &&
	    d->move == OSM__MOVE_MODE__MOVE_STOP)
		r.has_stop_copy = r.stop_copy = 1;
	rc = session_send_msg(&d->ses, kind, &r.base, cause);
	free(r.paths);
	return rc;
}

void
deputy_files_clear(struct deputy *d)
{
	mig_files_free(d->files, d->nfiles);
	d->files = NULL;
	d->nfiles = 0;
}

/* The files listed, as the session names them (in d->files' memory). */
static Osm__SesFile **
files_entries(struct deputy *d)
{
	Osm__SesFile	**files, *f;
	Osm__SesRange	 *r;
	size_t		  i, j;

	files = xcalloc(d->nfiles + 1, sizeof *files);
	for (i = 0; i < d->nfiles; i++) {
		f = files[i] = xmalloc(sizeof *f);
		osm__ses_file__init(f);
		f->path = d->files[i].path;
		f->id = &d->files[i].id;
		f->has_shared = 1;
		f->shared = d->files[i].shared;
		f->n_ranges = d->files[i].nranges;
		f->ranges = xcalloc(f->n_ranges, sizeof *f->ranges);
		for (j = 0; j < f->n_ranges; j++) {
			r = f->ranges[j] = xmalloc(sizeof *r);
			osm__ses_range__init(r);
			r->offset = d->files[i].ranges[j].offset;
			r->length = d->files[i].ranges[j].length;
		}
	}
	return files;
}

static void
files_entries_free(Osm__SesFile **files, size_t n)
{
	size_t	i, j;

	for (i = 0; i < n; i++) {
		for (j = 0; j < files[i]->n_ranges; j++)
			free(files[i]->ranges[j]);
		free(files[i]->ranges);
		free(files[i]);
	}
	free(files);
}

/*
 * Fill setup with the files listed: its own entries, freed with it, which
 * point into d->files (freed after it; they are not read by then).
 */
void
deputy_files_setup(struct deputy *d, Osm__SesSetup *setup)
{
	setup->n_files = d->nfiles;
	setup->files = files_entries(d);
}

void
deputy_files_setup_free(Osm__SesSetup *setup)
{
	files_entries_free(setup->files, setup->n_files);
	setup->files = NULL;
	setup->n_files = 0;
}

/* Does the list old hold all of nf: the file, each byte it maps, shared? */
static int
files_covered(const struct mig_file *old, size_t nold,
    const struct mig_file *nf)
{
	const struct mig_file	*of = NULL;
	uint64_t		 off, end;
	size_t			 i, j;

	for (i = 0; i < nold && of == NULL; i++)
		if (old[i].id.dev == nf->id.dev && old[i].id.ino == nf->id.ino &&
		    old[i].id.size == nf->id.size &&
		    old[i].id.mtime_ns == nf->id.mtime_ns)
			of = &old[i];
	if (of == NULL || (nf->shared && !of->shared))
		return 0;
	for (i = 0; i < nf->nranges; i++) {
		off = nf->ranges[i].offset;
		end = off + nf->ranges[i].length;
		/* the old ranges, however the areas were split or merged */
		while (off < end) {
			for (j = 0; j < of->nranges; j++)
				if (of->ranges[j].offset <= off && off <
				    of->ranges[j].offset + of->ranges[j].length)
					break;
			if (j == of->nranges)
				return 0;
			off = of->ranges[j].offset + of->ranges[j].length;
		}
	}
	return 1;
}

/*
 * P, held, ran since its files were listed for the move (through a live
 * move's rounds, or the setup of a post-copy one): does it map a file, or
 * bytes of one, or share one, that the list has not? Then the list is
 * what P maps now and the guest must be told of it (deputy_files_more):
 * 1. 0 if the list holds it all; -1 with *cause (P maps what cannot move:
 * a writable shared mapping, say).
 */
int
deputy_files_relist(struct deputy *d, char **cause)
{
	struct mig_file	*files;
	size_t		 n, i, fresh = 0;

	if (mig_files(d->task, MIG_CONTEXT, &files, &n, cause) == -1)
		return -1;
	for (i = 0; i < n; i++)
		if (!files_covered(d->files, d->nfiles, &files[i]))
			fresh++;
	if (fresh == 0) {
		mig_files_free(files, n);
		return 0;
	}
	log_info("process %d (%s) mapped %zu more file%s during its move",
	    (int)d->pid, d->command, fresh, fresh == 1 ? "" : "s");
	deputy_files_clear(d);
	d->files = files;
	d->nfiles = n;
	for (i = 0; i < d->nfiles; i++)
		files_remember(d, d->files[i].path, d->files[i].id.dev,
		    d->files[i].id.ino);
	return 1;
}

/*
 * Tell the guest of the files listed anew (SES_FILES), inside the image:
 * it asks for what it has not, as for the setup's, then says SES_READY.
 */
int
deputy_files_more(struct deputy *d, char **cause)
{
	Osm__SesFiles	m = OSM__SES_FILES__INIT;
	int		rc;

	m.n_files = d->nfiles;
	m.files = files_entries(d);
	rc = session_send_msg(&d->ses, OSM__SES_KIND__SES_FILES, &m.base,
	    cause);
	files_entries_free(m.files, m.n_files);
	return rc;
}

/*
 * Open what the guest asks about: file index of the setup (its path,
 * proved to be the file listed), or P's descriptor fd. Writable says
 * whether P's descriptor is open for writing.
 */
static int
files_open(struct deputy *d, const Osm__SesFileAsk *a, char *path,
    size_t size, int *writable, char **cause)
{
	char		 info[64], line[128];
	struct stat	 st;
	unsigned int	 flags = 0;
	FILE		*f;
	int		 fd;

	*writable = 0;
	if (a->has_index) {
		if (a->index >= d->nfiles) {
			xasprintf(cause, "no file %u", a->index);
			return -1;
		}
		snprintf(path, size, "%s", d->files[a->index].path);
		if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1 ||
		    fstat(fd, &st) == -1) {
			xasprintf(cause, "%s: %s", path, strerror(errno));
			if (fd != -1)
				close(fd);
			return -1;
		}
		if ((uint64_t)st.st_dev != d->files[a->index].id.dev ||
		    (uint64_t)st.st_ino != d->files[a->index].id.ino) {
			xasprintf(cause, "%s was replaced since the move began",
			    path);
			close(fd);
			return -1;
		}
		return fd;
	}
	if (!a->has_fd || a->fd < 0) {
		xasprintf(cause, "neither a file of the setup nor a descriptor");
		return -1;
	}
	/* Not blocking on a FIFO's open; anything but a file goes home. */
	snprintf(path, size, "/proc/%d/fd/%d", (int)d->pid, a->fd);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)) == -1) {
		xasprintf(cause, "descriptor %d: %s", a->fd, strerror(errno));
		return -1;
	}
	if (fstat(fd, &st) == -1 || !S_ISREG(st.st_mode)) {
		xasprintf(cause, "descriptor %d is not a regular file", a->fd);
		close(fd);
		return -1;
	}
	snprintf(info, sizeof info, "/proc/%d/fdinfo/%d", (int)d->pid, a->fd);
	if ((f = fopen(info, "re")) != NULL) {
		while (fgets(line, sizeof line, f) != NULL)
			if (sscanf(line, "flags: %o", &flags) == 1)
				break;
		fclose(f);
	}
	*writable = (flags & O_ACCMODE) != O_RDONLY;
	return fd;
}

/*
 * Answer one ask of the guest's (SES_FILE_ASK): a file's description
 * (length 0) or up to FILES_CHUNK of its bytes. What cannot be answered
 * is answered with why; -1 with *cause only when the session broke.
 */
int
deputy_files_answer(struct deputy *d, const uint8_t *body, size_t len,
    char **cause)
{
	Osm__SesFileAsk		*a;
	Osm__SesFileAnswer	 r = OSM__SES_FILE_ANSWER__INIT;
	Osm__ImgFileId		 id;
	uint8_t			 sha[32], *buf = NULL;
	char			 path[PATH_MAX], link[PATH_MAX], *why = NULL;
	ssize_t			 n;
	int			 fd = -1, writable, rc;

	if ((a = osm__ses_file_ask__unpack(NULL, len, body)) == NULL) {
		xasprintf(cause, "malformed file ask");
		return -1;
	}
	r.seq = a->seq;
	if ((fd = files_open(d, a, path, sizeof path, &writable,
	    &why)) == -1)
		goto answer;
	if (a->length == 0) {
		/* its identity (and hash) through our descriptor, its name P's */
		snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
		if (mig_file_identify(link, &id, a->has_hash && a->hash ? sha :
		    NULL, &why) == -1)
			goto answer;
		if ((n = readlink(path, link, sizeof link - 1)) > 0 &&
		    !a->has_index) {
			link[n] = '\0';
			r.path = link;
		} else
			r.path = path;
		r.id = &id;
		r.has_writable = 1;
		r.writable = writable;
		files_remember(d, r.path, id.dev, id.ino);
		goto answer;
	}
	if (a->length > FILES_CHUNK) {
		xasprintf(&why, "%llu bytes asked for at once",
		    (unsigned long long)a->length);
		goto answer;
	}
	buf = xmalloc(a->length);
	while ((n = pread(fd, buf, a->length, a->offset)) == -1 &&
	    errno == EINTR)
		;
	if (n == -1) {
		xasprintf(&why, "%s: %s", path, strerror(errno));
		goto answer;
	}
	r.has_data = 1;
	r.data.data = buf;
	r.data.len = n;
answer:
	r.error = why;
	rc = session_send_msg(&d->ses, OSM__SES_KIND__SES_FILE_ANSWER, &r.base,
	    cause);
	if (why != NULL)
		log_debug("process %d: file ask: %s", (int)d->pid, why);
	free(why);
	free(buf);
	if (fd != -1)
		close(fd);
	osm__ses_file_ask__free_unpacked(a, NULL);
	return rc;
}
