/*
 * The files R maps, as its guest agent has them (docs/REMOTE.md, "File
 * mappings"). The files stay at home; here each is either the node's own
 * copy, where it is provably the same content (the same size and
 * SHA-256), or a memfd holding the bytes of it that R maps, had from home
 * (SES_FILE_ASK). R opens them through /proc/<G>/fd when it is restored,
 * or is given one as its descriptor for a mapping it makes away
 * (guest-serve.c); dumps of R record their areas as areas of the files at
 * home (mig_stand_ins), so that the home maps the real ones again.
 */
#include <sys/mman.h>
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"
#include "proto/migrate.pb-c.h"

#define FILES_CHUNK	(4U << 20)	/* bytes asked for at once */
#define FILES_PAGE	4096ULL

static int
files_same_id(const Osm__ImgFileId *a, const Osm__ImgFileId *b)
{
	return a->dev == b->dev && a->ino == b->ino && a->size == b->size &&
	    a->mtime_ns == b->mtime_ns;
}

/*
 * The file we hold for the file of identity id at home, or NULL; a copy
 * of it had from home if copy (for shared mappings: they show the file as
 * it was when mapped, wherever the node's own copy is).
 */
struct guest_file *
guest_files_find(struct guest *g, const Osm__ImgFileId *id, int copy)
{
	size_t	i;

	for (i = 0; i < g->nfiles; i++)
		if (files_same_id(&g->files[i]->id, id) &&
		    (!copy || g->files[i]->memfd != -1))
			return g->files[i];
	return NULL;
}

/*
 * The node's own copy of the file at path, if it is provably the file of
 * identity id at home: the same size and content hash, its hash mosd's if
 * mosd knows it (conn_hashes), else made here. A descriptor, or -1.
 */
static int
files_local(struct guest *g, const char *path, const Osm__ImgFileId *id)
{
	Osm__ImgFileId	 here;
	uint8_t		 sha[1][CRYPTO_HASH_LEN];
	char		 link[64], *cause = NULL;
	struct stat	 st;
	int		 fd, known;

	if (!id->has_sha256 || id->sha256.len != CRYPTO_HASH_LEN ||
	    (fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)) == -1)
		return -1;
	snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
	if (fstat(fd, &st) == -1 || !S_ISREG(st.st_mode) ||
	    (uint64_t)st.st_size != id->size)
		goto fail;
	if (conn_hashes(g->conn.fd, &path, &st, 1, sha, &known) == 0 &&
	    (mig_file_identify(link, &here, sha[0], &cause) == -1 ||
	    !here.has_sha256))
		goto fail;
	if (memcmp(sha[0], id->sha256.data, CRYPTO_HASH_LEN) != 0)
		goto fail;
	return fd;
fail:
	free(cause);
	close(fd);
	return -1;
}

/*
 * Could the node's own copy of the file at path stand for the file of
 * identity id at home? A regular file of its size: its content's hash, had
 * from home, then decides (guest_files_add).
 */
int
guest_files_candidate(const char *path, const Osm__ImgFileId *id)
{
	struct stat	st;

	return stat(path, &st) == 0 && S_ISREG(st.st_mode) &&
	    (uint64_t)st.st_size == id->size;
}

/*
 * Hold the file of identity id at home (path there): the node's own copy,
 * unless copy, or an empty memfd of its size for its bytes to come. NULL
 * with *cause.
 */
struct guest_file *
guest_files_add(struct guest *g, const char *path, const Osm__ImgFileId *id,
    int copy, char **cause)
{
	struct guest_file	*f;
	struct stat		 st;
	char			 link[64];

	f = xcalloc(1, sizeof *f);
	f->path = xstrdup(path);
	f->id = *id;
	f->id.sha256.data = f->sha;
	if (id->has_sha256 && id->sha256.len == sizeof f->sha)
		memcpy(f->sha, id->sha256.data, sizeof f->sha);
	else
		f->id.has_sha256 = 0;
	f->memfd = -1;
	if (copy || (f->fd = files_local(g, path, id)) == -1) {
		/* Read-only for R: a shared mapping of it cannot turn writable. */
		if ((f->memfd = memfd_create("osmosis-file", MFD_CLOEXEC)) ==
		    -1 || ftruncate(f->memfd, id->size) == -1) {
			xasprintf(cause, "a memory file for %s: %s", path,
			    strerror(errno));
			goto fail;
		}
		snprintf(link, sizeof link, "/proc/self/fd/%d", f->memfd);
		if ((f->fd = open(link, O_RDONLY | O_CLOEXEC)) == -1) {
			xasprintf(cause, "%s: %s", link, strerror(errno));
			goto fail;
		}
	}
	if (fstat(f->fd, &st) == -1) {
		xasprintf(cause, "%s: %s", path, strerror(errno));
		goto fail;
	}
	f->dev = st.st_dev;
	f->ino = st.st_ino;
	f->late = g->pid != 0;
	snprintf(f->self_link, sizeof f->self_link, "/proc/self/fd/%d", f->fd);
	snprintf(f->link, sizeof f->link, "/proc/%d/fd/%d", (int)getpid(),
	    f->fd);
	log_debug("%s: %s %s", g->conn.who, path, f->memfd == -1 ?
	    "is the node's own copy" : "comes from home");
	g->files = xreallocarray(g->files, g->nfiles + 1, sizeof *g->files);
	g->files[g->nfiles++] = f;
	return f;
fail:
	if (f->memfd != -1)
		close(f->memfd);
	free(f->path);
	free(f);
	return NULL;
}

void
guest_files_free(struct guest *g)
{
	size_t	i;

	for (i = 0; i < g->nfiles; i++) {
		close(g->files[i]->fd);
		if (g->files[i]->memfd != -1)
			close(g->files[i]->memfd);
		free(g->files[i]->have);
		free(g->files[i]->path);
		free(g->files[i]);
	}
	free(g->files);
	free(g->stand_ins);
	g->files = NULL;
	g->stand_ins = NULL;
	g->nfiles = 0;
}

/*
 * The first piece of [off, off + len) of f, within the file, whose bytes
 * we do not have: 1 with it in *o, *n (at most FILES_CHUNK), or 0.
 */
int
guest_files_missing(const struct guest_file *f, uint64_t off, uint64_t len,
    uint64_t *o, uint64_t *n)
{
	uint64_t	end;
	size_t		i;

	if (f->memfd == -1 || off >= f->id.size)
		return 0;
	end = len > f->id.size - off ? f->id.size : off + len;
	off &= ~(FILES_PAGE - 1);
	/* ranges are kept sorted and merged */
	for (i = 0; i < f->nhave && off < end; i++) {
		if (f->have[i].offset + f->have[i].length <= off)
			continue;
		if (f->have[i].offset > off)
			break;
		off = f->have[i].offset + f->have[i].length;
	}
	if (off >= end)
		return 0;
	*o = off;
	*n = end - off;
	if (i < f->nhave && f->have[i].offset < end)
		*n = f->have[i].offset - off;
	if (*n > FILES_CHUNK)
		*n = FILES_CHUNK;
	return 1;
}

/* Bytes of f from home, at off: into its memfd. */
int
guest_files_put(struct guest_file *f, uint64_t off, const uint8_t *data,
    size_t len, char **cause)
{
	struct mig_range	*r;
	size_t			 i, done = 0;
	ssize_t			 n;

	while (done < len) {
		if ((n = pwrite(f->memfd, data + done, len - done,
		    off + done)) == -1) {
			if (errno == EINTR)
				continue;
			xasprintf(cause, "%s: %s", f->path, strerror(errno));
			return -1;
		}
		done += n;
	}
	/* a short read at home is the end of the file: count it all in */
	if (len == 0 || off + len >= f->id.size)
		len = f->id.size - off;
	f->have = xreallocarray(f->have, f->nhave + 1, sizeof *f->have);
	for (i = f->nhave; i > 0 && f->have[i - 1].offset > off; i--)
		f->have[i] = f->have[i - 1];
	f->have[i].offset = off;
	f->have[i].length = len;
	f->nhave++;
	/* merge neighbours */
	for (i = 0; i + 1 < f->nhave; ) {
		r = &f->have[i];
		if (r->offset + r->length < r[1].offset) {
			i++;
			continue;
		}
		if (r[1].offset + r[1].length > r->offset + r->length)
			r->length = r[1].offset + r[1].length - r->offset;
		memmove(r + 1, r + 2, (f->nhave - i - 2) * sizeof *r);
		f->nhave--;
	}
	return 0;
}

/* One ask about a file, and its answer, while R is not yet running. */
static Osm__SesFileAnswer *
files_ask(struct guest *g, uint32_t index, uint64_t off, uint64_t len,
    int hash, char **cause)
{
	Osm__SesFileAsk		 a = OSM__SES_FILE_ASK__INIT;
	Osm__SesFileAnswer	*r;
	const uint8_t		*body;
	size_t			 blen;
	uint16_t		 kind;

	a.seq = ++g->ask_seq;
	a.has_index = 1;
	a.index = index;
	a.offset = off;
	a.length = len;
	a.has_hash = hash;
	a.hash = hash;
	if (session_send_msg(&g->ses, OSM__SES_KIND__SES_FILE_ASK, &a.base,
	    cause) == -1 ||
	    session_recv(&g->ses, &kind, &body, &blen, cause) == -1)
		return NULL;
	if (kind != OSM__SES_KIND__SES_FILE_ANSWER ||
	    (r = osm__ses_file_answer__unpack(NULL, blen, body)) == NULL) {
		xasprintf(cause, "the home did not answer about a file");
		return NULL;
	}
	if (r->seq != a.seq || (r->error == NULL && (len > 0 ? !r->has_data :
	    r->id == NULL))) {
		xasprintf(cause, "the home answered another ask");
		osm__ses_file_answer__free_unpacked(r, NULL);
		return NULL;
	}
	if (r->error != NULL) {
		xasprintf(cause, "%s", r->error);
		osm__ses_file_answer__free_unpacked(r, NULL);
		return NULL;
	}
	return r;
}

/*
 * The files of a move's setup, or those the home lists again inside the
 * image (SES_FILES: P mapped more as it ran): found here or had from
 * home, every byte R will map, before the image (or its description)
 * comes (SES_READY says so).
 */
int
guest_files_setup(struct guest *g, Osm__SesFile **files, size_t nfiles,
    char **cause)
{
	Osm__SesReady		 ready = OSM__SES_READY__INIT;
	Osm__SesFileAnswer	*r;
	struct guest_file	*f;
	const Osm__SesFile	*sf;
	uint64_t		 o, n;
	size_t			 i, j;
	char			*why;
	int			 copy;

	for (i = 0; i < nfiles; i++) {
		sf = files[i];
		if (sf->path[0] != '/') {
			xasprintf(cause, "a file of the setup without a path");
			return -1;
		}
		copy = sf->has_shared && sf->shared;
		if ((f = guest_files_find(g, sf->id, copy)) == NULL) {
			/* the node's own copy, if its content is the same */
			r = NULL;
			if (!copy && !sf->id->has_sha256 &&
			    guest_files_candidate(sf->path, sf->id) &&
			    (r = files_ask(g, i, 0, 0, 1, cause)) == NULL)
				goto fail;
			f = guest_files_add(g, sf->path, r != NULL ? r->id :
			    sf->id, copy, cause);
			if (r != NULL)
				osm__ses_file_answer__free_unpacked(r, NULL);
			if (f == NULL)
				return -1;
		}
		for (j = 0; j < sf->n_ranges; j++) {
			while (guest_files_missing(f, sf->ranges[j]->offset,
			    sf->ranges[j]->length, &o, &n)) {
				if ((r = files_ask(g, i, o, n, 0,
				    cause)) == NULL)
					goto fail;
				if (guest_files_put(f, o, r->data.data,
				    r->data.len, cause) == -1) {
					osm__ses_file_answer__free_unpacked(r,
					    NULL);
					return -1;
				}
				osm__ses_file_answer__free_unpacked(r, NULL);
			}
		}
	}
	ready.has_post_copy = 1;
	ready.post_copy = g->post;
	return session_send_msg(&g->ses, OSM__SES_KIND__SES_READY, &ready.base,
	    cause);
fail:
	xasprintf(&why, "%s: %s", sf->path, *cause);
	free(*cause);
	*cause = why;
	return -1;
}

/* The restore's stand-in for the file of area v (mig_mapped_fn). */
const char *
guest_files_mapped(void *arg, const Osm__ImgVma *v)
{
	struct guest		*g = arg;
	struct guest_file	*f;

	if (v->id == NULL || (f = guest_files_find(g, v->id,
	    (v->flags & MAP_SHARED) != 0)) == NULL)
		return NULL;
	return g->ids_kept ? f->self_link : f->link;
}

/*
 * Dumps of t (R) record our files as the files at home they stand for,
 * and leave out what else is ours in R (the clock stub).
 */
void
guest_files_stand_in(struct guest *g, struct mig_task *t)
{
	size_t	i;

	guest_stub_hide(g, t);
	guest_ses_settle(g);
	g->stand_ins = xreallocarray(g->stand_ins, g->nfiles + 1,
	    sizeof *g->stand_ins);
	for (i = 0; i < g->nfiles; i++) {
		g->stand_ins[i].dev = g->files[i]->dev;
		g->stand_ins[i].ino = g->files[i]->ino;
		g->stand_ins[i].path = g->files[i]->path;
		g->stand_ins[i].id = &g->files[i]->id;
		g->stand_ins[i].carry = g->files[i]->carry;
	}
	if (t != NULL)
		mig_stand_ins(t, g->stand_ins, g->nfiles);
}

/*
 * The files at home the deputy says were replaced since R mapped them
 * (SesReplaced, with SES_COME_HOME or SES_CHECKPOINT): their bytes are
 * only here now, and dumps of R carry them. Returns how the way home is
 * to go, GUEST_HOME_*, as SES_COME_HOME's order says.
 */
int
guest_files_replaced(struct guest *g, const uint8_t *body, size_t len)
{
	Osm__SesReplaced	*r;
	size_t			 i, j;
	int			 how = GUEST_HOME_LIVE;

	if (len == 0 || (r = osm__ses_replaced__unpack(NULL, len, body)) ==
	    NULL)
		return how;
	if (r->has_post_copy && r->post_copy)
		how = GUEST_HOME_POST;
	else if (r->has_stop_copy && r->stop_copy)
		how = GUEST_HOME_STOP;
	for (i = 0; i < r->n_paths; i++) {
		for (j = 0; j < g->nfiles; j++) {
			if (strcmp(g->files[j]->path, r->paths[i]) != 0)
				continue;
			log_info("%s: %s was replaced at home: carried",
			    g->conn.who, r->paths[i]);
			g->files[j]->carry = 1;
		}
	}
	osm__ses_replaced__free_unpacked(r, NULL);
	return how;
}
