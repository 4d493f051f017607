/*
 * The image stream: an 8-byte preamble (magic, version, both in network
 * order), then records framed as lib/stream.c frames them: a u32 length in
 * network order and that many bytes. A record is a packed ImgRecord; one
 * holding `pages` is followed by a raw record with the page contents.
 *
 * Nothing is read ahead of the record being decoded, so that the stream
 * can continue on a socket after the image. A running CRC-32C covers the
 * preamble and every ImgRecord with its length; seals compare it, and each
 * raw record is covered by the CRC in the ImgPages before it.
 */
#include <arpa/inet.h>
#include <sys/uio.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/osm.h"
#include "internal.h"

static const char *img_names[] = {
	[OSM__IMG_RECORD__BODY__NOT_SET] = "empty",
	[OSM__IMG_RECORD__BODY_HEADER] = "header",
	[OSM__IMG_RECORD__BODY_TASK] = "task",
	[3] = "unknown",
	[OSM__IMG_RECORD__BODY_SIGNALS] = "signals",
	[OSM__IMG_RECORD__BODY_FILES] = "files",
	[OSM__IMG_RECORD__BODY_MM] = "memory map",
	[OSM__IMG_RECORD__BODY_PAGES] = "pages",
	[OSM__IMG_RECORD__BODY_SEAL] = "seal",
	[OSM__IMG_RECORD__BODY_THREAD] = "thread",
	[OSM__IMG_RECORD__BODY_ROUND] = "round",
	[OSM__IMG_RECORD__BODY_PARENT] = "parent",
};

void
img_init(struct img *img, int fd)
{
	memset(img, 0, sizeof *img);
	img->fd = fd;
	runs_init(&img->held);
}

void
img_free(struct img *img)
{
	runs_free(&img->held);
	free(img->parent);
	img->parent = NULL;
}

/*
 * Can the ranges an image keeps be checked? Not those of an incremental
 * image read alone: they refer to the images before it.
 */
static int
img_check_kept(struct img *img, const Osm__ImgMm *mm, char **cause)
{
	if (img->parent != NULL && !img->chained)
		return 0;
	return runs_check_kept(&img->held, mm, cause);
}

static int
img_writev(struct img *img, struct iovec *iov, int n, char **cause)
{
	ssize_t	 w;
	int	 i;

	if (img->io != NULL) {
		if (img->io->write(img->io->arg, iov, n, cause) == -1)
			return -1;
		for (i = 0; i < n; i++)
			img->bytes += iov[i].iov_len;
		return 0;
	}
	while (n > 0) {
		w = writev(img->fd, iov, n > IOV_MAX ? IOV_MAX : n);
		if (w == -1) {
			if (errno == EINTR)
				continue;
			xasprintf(cause, "write image: %s", strerror(errno));
			return -1;
		}
		img->bytes += w;
		while (n > 0 && (size_t)w >= iov->iov_len) {
			w -= iov->iov_len;
			iov++;
			n--;
		}
		if (n > 0) {
			iov->iov_base = (uint8_t *)iov->iov_base + w;
			iov->iov_len -= w;
		}
	}
	return 0;
}

int
img_write_preamble(struct img *img, char **cause)
{
	uint32_t	 pre[2] = { htonl(MIG_MAGIC), htonl(MIG_VERSION) };
	struct iovec	 iov = { pre, sizeof pre };

	img->crc = crc32c(0, pre, sizeof pre);
	return img_writev(img, &iov, 1, cause);
}

/* Pack rec after its length; the caller frees the buffer. */
static uint8_t *
img_pack(Osm__ImgRecord *rec, size_t *len, char **cause)
{
	size_t		 n;
	uint32_t	 be;
	uint8_t		*buf;

	n = osm__img_record__get_packed_size(rec);
	if (n > MIG_META_MAX) {
		xasprintf(cause, "%s record of %zu bytes exceeds the image "
		    "limit of %u", img_names[rec->body_case], n, MIG_META_MAX);
		return NULL;
	}
	buf = xmalloc(4 + n);
	be = htonl(n);
	memcpy(buf, &be, 4);
	osm__img_record__pack(rec, buf + 4);
	*len = 4 + n;
	return buf;
}

int
img_write(struct img *img, Osm__ImgRecord *rec, char **cause)
{
	struct iovec	 iov;
	uint8_t		*buf;
	size_t		 len;
	int		 rc;

	if ((buf = img_pack(rec, &len, cause)) == NULL)
		return -1;
	img->crc = crc32c(img->crc, buf, len);
	img->records++;
	iov.iov_base = buf;
	iov.iov_len = len;
	rc = img_writev(img, &iov, 1, cause);
	free(buf);
	return rc;
}

int
img_write_pages(struct img *img, Osm__ImgExtent **ext, size_t next,
    const void *data, size_t len, char **cause)
{
	Osm__ImgRecord	 rec = OSM__IMG_RECORD__INIT;
	Osm__ImgPages	 pages = OSM__IMG_PAGES__INIT;
	struct iovec	 iov[3];
	uint32_t	 be;
	uint8_t		*buf;
	size_t		 n;
	int		 rc;

	pages.extents = ext;
	pages.n_extents = next;
	pages.crc = crc32c(0, data, len);
	rec.body_case = OSM__IMG_RECORD__BODY_PAGES;
	rec.pages = &pages;
	if ((buf = img_pack(&rec, &n, cause)) == NULL)
		return -1;
	img->crc = crc32c(img->crc, buf, n);
	img->records++;
	be = htonl(len);
	iov[0].iov_base = buf;
	iov[0].iov_len = n;
	iov[1].iov_base = &be;
	iov[1].iov_len = 4;
	iov[2].iov_base = (void *)data;
	iov[2].iov_len = len;
	rc = img_writev(img, iov, 3, cause);
	free(buf);
	return rc;
}

int
img_write_seal(struct img *img, int last, char **cause)
{
	Osm__ImgRecord	 rec = OSM__IMG_RECORD__INIT;
	Osm__ImgSeal	 seal = OSM__IMG_SEAL__INIT;

	seal.crc = img->crc;
	seal.records = img->records;
	if (last) {
		img->end_crc = seal.crc;
		img->end_records = seal.records;
	}
	seal.kind = last ? OSM__IMG_SEAL_KIND__SEAL_END :
	    img->end_seal != 0 ? (Osm__ImgSealKind)img->end_seal :
	    OSM__IMG_SEAL_KIND__SEAL_DESCRIPTION;
	rec.body_case = OSM__IMG_RECORD__BODY_SEAL;
	rec.seal = &seal;
	return img_write(img, &rec, cause);
}

/* Exactly len bytes, from the fd or img->io: -1 and errno 0 at the end. */
static int
img_get(struct img *img, void *buf, size_t len, char **cause)
{
	int	rc;

	if (img->io == NULL)
		return read_all(img->fd, buf, len);
	if ((rc = img->io->read(img->io->arg, buf, len, cause)) == 0)
		return 0;
	errno = rc == 1 ? 0 : EIO;
	return -1;
}

/* Read exactly len bytes; a short read is a truncated image. */
static int
img_fill(struct img *img, void *buf, size_t len, const char *what,
    char **cause)
{
	char	*why = NULL;

	if (img_get(img, buf, len, &why) == -1) {
		if (why != NULL)
			*cause = why;
		else if (errno == 0)
			xasprintf(cause, "image truncated: it ends inside %s "
			    "(after %llu bytes)", what,
			    (unsigned long long)img->bytes);
		else
			xasprintf(cause, "read image: %s", strerror(errno));
		return -1;
	}
	img->bytes += len;
	return 0;
}

static int
img_read_preamble(struct img *img, char **cause)
{
	uint32_t	pre[2];
	char		*why = NULL;

	if (img_get(img, pre, sizeof pre, &why) == -1) {
		if (why != NULL)
			*cause = why;
		else if (errno == 0)
			xasprintf(cause, "not a checkpoint image: too short");
		else
			xasprintf(cause, "read image: %s", strerror(errno));
		return -1;
	}
	img->bytes = sizeof pre;
	if (ntohl(pre[0]) != MIG_MAGIC) {
		xasprintf(cause, "not a checkpoint image: bad magic number "
		    "0x%08x", ntohl(pre[0]));
		return -1;
	}
	if (ntohl(pre[1]) < MIG_VERSION_MIN || ntohl(pre[1]) > MIG_VERSION) {
		xasprintf(cause, "image format version %u, this build reads "
		    "versions %u to %u", ntohl(pre[1]), MIG_VERSION_MIN,
		    MIG_VERSION);
		return -1;
	}
	img->version = ntohl(pre[1]);
	img->crc = crc32c(0, pre, sizeof pre);
	return 0;
}

static size_t
img_pages_bytes(const Osm__ImgPages *p)
{
	size_t	i, n = 0;

	for (i = 0; i < p->n_extents; i++)
		n += p->extents[i]->npages * MIG_PAGE;
	return n;
}

/* The checks a pages record needs before its size can be trusted. */
static int
img_check_pages(struct img *img, const Osm__ImgPages *p, char **cause)
{
	size_t	i, total = 0;

	if (p->n_extents == 0 || p->n_extents > MIG_EXTENTS_MAX) {
		xasprintf(cause, "image corrupted: pages record %llu has %zu "
		    "extents", (unsigned long long)img->records,
		    p->n_extents);
		return -1;
	}
	for (i = 0; i < p->n_extents; i++) {
		if (p->extents[i]->npages == 0 ||
		    p->extents[i]->npages > MIG_PAGES_MAX / MIG_PAGE ||
		    total + p->extents[i]->npages * MIG_PAGE >
		    MIG_PAGES_MAX) {
			xasprintf(cause, "image corrupted: pages record %llu "
			    "is larger than %u bytes",
			    (unsigned long long)img->records, MIG_PAGES_MAX);
			return -1;
		}
		total += p->extents[i]->npages * MIG_PAGE;
	}
	return 0;
}

Osm__ImgRecord *
img_read(struct img *img, char **cause)
{
	Osm__ImgRecord	*rec;
	Osm__ImgSeal	*seal;
	uint32_t	 be, n, crc;
	uint8_t		*buf;

	if (img->expect_raw) {
		xasprintf(cause, "image reader: page data not consumed");
		return NULL;
	}
	if (img_fill(img, &be, 4, "a record length", cause) == -1)
		return NULL;
	n = ntohl(be);
	if (n > MIG_META_MAX) {
		xasprintf(cause, "image corrupted: record %llu claims %u "
		    "bytes, more than the limit of %u",
		    (unsigned long long)img->records, n, MIG_META_MAX);
		return NULL;
	}
	buf = xmalloc(n > 0 ? n : 1);
	if (img_fill(img, buf, n, "a record", cause) == -1) {
		free(buf);
		return NULL;
	}
	rec = osm__img_record__unpack(NULL, n, buf);
	crc = crc32c(crc32c(img->crc, &be, 4), buf, n);
	free(buf);
	if (rec == NULL || rec->body_case == OSM__IMG_RECORD__BODY__NOT_SET) {
		xasprintf(cause, "image corrupted: record %llu does not decode",
		    (unsigned long long)img->records);
		goto fail;
	}
	if (rec->body_case == OSM__IMG_RECORD__BODY_SEAL) {
		seal = rec->seal;
		if (seal->kind != OSM__IMG_SEAL_KIND__SEAL_DESCRIPTION &&
		    seal->kind != OSM__IMG_SEAL_KIND__SEAL_END &&
		    seal->kind != OSM__IMG_SEAL_KIND__SEAL_ROUND) {
			xasprintf(cause, "image corrupted: seal of unknown "
			    "kind %d", seal->kind);
			goto fail;
		}
		if (seal->crc != img->crc || seal->records != img->records) {
			xasprintf(cause, "image corrupted: checksum mismatch "
			    "before record %llu",
			    (unsigned long long)img->records);
			goto fail;
		}
		if (seal->kind == OSM__IMG_SEAL_KIND__SEAL_END) {
			img->end_crc = seal->crc;
			img->end_records = seal->records;
		}
	}
	if (rec->body_case == OSM__IMG_RECORD__BODY_PAGES) {
		if (img_check_pages(img, rec->pages, cause) == -1)
			goto fail;
		img->expect_raw = 1;
		img->raw_len = img_pages_bytes(rec->pages);
		img->raw_crc = rec->pages->crc;
	}
	img->crc = crc;
	img->records++;
	return rec;

fail:
	if (rec != NULL)
		osm__img_record__free_unpacked(rec, NULL);
	return NULL;
}

/*
 * The page contents after a pages record, into buf of raw_len bytes, or
 * where io holds them: img->raw says which.
 */
int
img_read_raw(struct img *img, void *buf, size_t len, char **cause)
{
	uint32_t	be;

	if (!img->expect_raw || len != img->raw_len) {
		xasprintf(cause, "image reader: no page data expected");
		return -1;
	}
	img->expect_raw = 0;
	if (img_fill(img, &be, 4, "page data", cause) == -1)
		return -1;
	if (ntohl(be) != len) {
		xasprintf(cause, "image corrupted: page data of %u bytes "
		    "where %zu were announced", ntohl(be), len);
		return -1;
	}
	/* Where the session already holds them, the pages are not copied. */
	img->raw = NULL;
	if (img->io != NULL && img->io->view != NULL &&
	    (img->raw = img->io->view(img->io->arg, len)) != NULL)
		img->bytes += len;
	else if (img_fill(img, buf, len, "page data", cause) == -1)
		return -1;
	else
		img->raw = buf;
	if (crc32c(0, img->raw, len) != img->raw_crc) {
		xasprintf(cause, "image corrupted: page data checksum "
		    "mismatch after record %llu",
		    (unsigned long long)img->records);
		return -1;
	}
	return 0;
}

/*
 * A round of a live dump, before the description: its layout checked as
 * a description's is, what it keeps against what the rounds before left,
 * then its pages, which the restore's round_fn writes into the target or
 * which are read and checked here, up to the round's seal.
 */
static int
img_round(struct img *img, const Osm__ImgRound *round, char **cause)
{
	Osm__ImgRecord	*rec = NULL;
	struct img_pages cur;
	uint64_t	*counts;
	uint8_t		*buf;
	int		 more, rc = -1;

	if (img->version < 2 || round->round != img->rounds + 1) {
		xasprintf(cause, "image corrupted: round %u where %s belongs",
		    round->round, img->version < 2 ? "no round" : "the next");
		return -1;
	}
	if (mm_check(round->mm, cause) == -1 ||
	    img_check_kept(img, round->mm, cause) == -1)
		return -1;
	img->rounds++;
	img->end_seal = OSM__IMG_SEAL_KIND__SEAL_ROUND;
	if (img->round_fn != NULL) {
		rc = img->round_fn(img->round_arg, img, round, cause);
		goto out;
	}
	counts = xcalloc(round->mm->n_vmas + 1, sizeof *counts);
	buf = xmalloc(MIG_PAGES_MAX);
	img_pages_init(&cur, round->mm);
	while ((more = img_pages_next(img, &cur, counts, buf, &rec,
	    cause)) == 1) {
		osm__img_record__free_unpacked(rec, NULL);
		rec = NULL;
	}
	free(buf);
	free(counts);
	rc = more;
out:
	img->end_seal = 0;
	if (rc == 0)
		runs_hold(&img->held, round->mm);
	return rc;
}

static const Osm__ImgRecord__BodyCase img_meta_order[] = {
	OSM__IMG_RECORD__BODY_HEADER,
	OSM__IMG_RECORD__BODY_TASK,
	OSM__IMG_RECORD__BODY_SIGNALS,
	OSM__IMG_RECORD__BODY_FILES,
	OSM__IMG_RECORD__BODY_MM,
};

/* The next record, which must be of kind want where the image has it. */
static Osm__ImgRecord *
img_read_kind(struct img *img, Osm__ImgRecord__BodyCase want,
    const char *where, char **cause)
{
	Osm__ImgRecord	*rec;

	if ((rec = img_read(img, cause)) == NULL)
		return NULL;
	if (rec->body_case != want || (want == OSM__IMG_RECORD__BODY_SEAL &&
	    rec->seal->kind != OSM__IMG_SEAL_KIND__SEAL_DESCRIPTION)) {
		xasprintf(cause, "image corrupted: %s record where the %s "
		    "belongs", img_names[rec->body_case], where);
		osm__img_record__free_unpacked(rec, NULL);
		return NULL;
	}
	return rec;
}

/*
 * The description of the process: every record up to the first seal, in
 * the one order a dump writes them (the process's records, then one per
 * thread, as many as the header says), each checked before it is
 * returned.
 */
int
img_read_meta(struct img *img, struct mig_image *mi, char **cause)
{
	Osm__ImgRecord	*rec;
	size_t		 i, n;

	memset(mi, 0, sizeof *mi);
	if (img_read_preamble(img, cause) == -1)
		return -1;
	/* An incremental image names the one before it, first. */
	if ((rec = img_read(img, cause)) != NULL &&
	    rec->body_case == OSM__IMG_RECORD__BODY_PARENT) {
		if (img->version < 2 || rec->parent->name[0] == '\0' ||
		    strchr(rec->parent->name, '/') != NULL) {
			xasprintf(cause, "image corrupted: a parent named %s",
			    img->version < 2 ? "in a version 1 image" :
			    "by a path, or empty");
			osm__img_record__free_unpacked(rec, NULL);
			return -1;
		}
		img->parent = xstrdup(rec->parent->name);
		img->parent_crc = rec->parent->crc;
		img->parent_records = rec->parent->records;
		osm__img_record__free_unpacked(rec, NULL);
		rec = img_read(img, cause);
	}
	/* A live dump's rounds come first. */
	while (rec != NULL &&
	    rec->body_case == OSM__IMG_RECORD__BODY_ROUND) {
		if (img_round(img, rec->round, cause) == -1) {
			osm__img_record__free_unpacked(rec, NULL);
			return -1;
		}
		osm__img_record__free_unpacked(rec, NULL);
		rec = img_read(img, cause);
	}
	if (rec == NULL)
		return -1;
	for (i = 0; i < nitems(img_meta_order); i++) {
		if (i > 0 && (rec = img_read(img, cause)) == NULL)
			goto fail;
		mi->rec[i] = rec;
		if (rec->body_case != img_meta_order[i]) {
			xasprintf(cause, "image corrupted: %s record where the "
			    "%s record belongs", img_names[rec->body_case],
			    img_names[img_meta_order[i]]);
			goto fail;
		}
	}
	mi->header = mi->rec[0]->header;
	mi->task = mi->rec[1]->task;
	mi->sig = mi->rec[2]->signals;
	mi->files = mi->rec[3]->files;
	mi->mm = mi->rec[4]->mm;
	/* Before the threads are read: their count is checked there. */
	if (core_check(mi->header, mi->task, cause) == -1)
		goto fail;
	n = mi->header->threads;
	mi->trec = xcalloc(n, sizeof *mi->trec);
	mi->threads = xcalloc(n, sizeof *mi->threads);
	for (i = 0; i < n; i++) {
		if ((mi->trec[i] = img_read_kind(img,
		    OSM__IMG_RECORD__BODY_THREAD, "thread", cause)) == NULL)
			goto fail;
		mi->threads[i] = mi->trec[i]->thread;
		mi->nthreads++;
	}
	if ((rec = img_read_kind(img, OSM__IMG_RECORD__BODY_SEAL,
	    "first seal", cause)) == NULL)
		goto fail;
	osm__img_record__free_unpacked(rec, NULL);
	if (sig_check(mi->sig, cause) == -1 ||
	    files_check(mi->files, NULL, NULL, cause) == -1 ||
	    mm_check(mi->mm, cause) == -1 ||
	    threads_check(mi->header, mi->threads, mi->nthreads, cause) == -1 ||
	    img_check_kept(img, mi->mm, cause) == -1)
		goto fail;
	mi->vma_pages = xcalloc(mi->mm->n_vmas + 1, sizeof *mi->vma_pages);
	return 0;

fail:
	mig_image_free(mi);
	return -1;
}

void
mig_image_free(struct mig_image *mi)
{
	size_t	i;

	for (i = 0; i < nitems(mi->rec); i++) {
		if (mi->rec[i] != NULL)
			osm__img_record__free_unpacked(mi->rec[i], NULL);
	}
	for (i = 0; i < mi->nthreads; i++)
		osm__img_record__free_unpacked(mi->trec[i], NULL);
	free(mi->trec);
	free(mi->threads);
	free(mi->vma_pages);
	if (mi->rd != NULL) {
		img_free(mi->rd);
		free(mi->rd);
	}
	free(mi->parent);
	memset(mi, 0, sizeof *mi);
}

/*
 * The runs of pages that follow an image's description, read in order and
 * checked against its memory map as they come.
 */
void
img_pages_init(struct img_pages *cur, const Osm__ImgMm *mm)
{
	cur->mm = mm;
	cur->vma = 0;
	cur->end = 0;
}

/*
 * Every extent must lie in an area that carries pages, after the last
 * one: so no page is written twice, nor outside the areas made for them.
 * Counts pages per area into counts.
 */
static int
img_pages_check(struct img_pages *cur, const Osm__ImgPages *p,
    uint64_t *counts, char **cause)
{
	const Osm__ImgMm	*mm = cur->mm;
	const Osm__ImgVma	*v;
	const Osm__ImgExtent	*e;
	uint64_t		 end;
	size_t			 i;

	for (i = 0; i < p->n_extents; i++) {
		e = p->extents[i];
		end = e->addr + e->npages * MIG_PAGE;
		if (e->addr % MIG_PAGE != 0 || end <= e->addr ||
		    e->addr < cur->end)
			goto bad;
		while (cur->vma < mm->n_vmas &&
		    mm->vmas[cur->vma]->end <= e->addr)
			cur->vma++;
		if (cur->vma == mm->n_vmas)
			goto bad;
		v = mm->vmas[cur->vma];
		if (e->addr < v->start || end > v->end ||
		    counts[cur->vma] + e->npages > v->pages)
			goto bad;
		counts[cur->vma] += e->npages;
		cur->end = end;
	}
	return 0;
bad:
	xasprintf(cause, "image corrupted: pages at 0x%llx lie outside the "
	    "areas that carry pages", (unsigned long long)e->addr);
	return -1;
}

static int
img_pages_done(struct img_pages *cur, const uint64_t *counts,
    char **cause)
{
	const Osm__ImgMm	*mm = cur->mm;
	size_t			 i;

	for (i = 0; i < mm->n_vmas; i++) {
		if (counts[i] != mm->vmas[i]->pages) {
			xasprintf(cause, "image corrupted: area at 0x%llx has "
			    "%llu of its %llu pages",
			    (unsigned long long)mm->vmas[i]->start,
			    (unsigned long long)counts[i],
			    (unsigned long long)mm->vmas[i]->pages);
			return -1;
		}
	}
	return 0;
}

/*
 * The next run of an image's pages, after its description: checked
 * against the memory map as the cursor goes (counts per area, n_vmas + 1
 * of them), its contents read into buf (MIG_PAGES_MAX bytes) or viewed
 * where img->io holds them. 1 with the record in *rec, which the caller
 * frees, and img->raw_len bytes at img->raw;
 * 0 at the final seal, every area's pages found; -1 with *cause.
 */
int
img_pages_next(struct img *img, struct img_pages *cur, uint64_t *counts,
    uint8_t *buf, Osm__ImgRecord **rec, char **cause)
{
	Osm__ImgRecord	*r;

	*rec = NULL;
	if ((r = img_read(img, cause)) == NULL)
		return -1;
	if (r->body_case == OSM__IMG_RECORD__BODY_SEAL &&
	    (int)r->seal->kind == (img->end_seal != 0 ? img->end_seal :
	    OSM__IMG_SEAL_KIND__SEAL_END)) {
		osm__img_record__free_unpacked(r, NULL);
		return img_pages_done(cur, counts, cause) == -1 ? -1 : 0;
	}
	if (r->body_case != OSM__IMG_RECORD__BODY_PAGES) {
		xasprintf(cause, "image corrupted: a record other than pages "
		    "among the pages");
		osm__img_record__free_unpacked(r, NULL);
		return -1;
	}
	if (img_pages_check(cur, r->pages, counts, cause) == -1 ||
	    img_read_raw(img, buf, img->raw_len, cause) == -1) {
		osm__img_record__free_unpacked(r, NULL);
		return -1;
	}
	*rec = r;
	return 1;
}

/*
 * Read and check a whole image without restoring it: the description,
 * every page record against the memory map, the seals, and that nothing
 * follows the end.
 */
int
mig_image_load(int fd, struct mig_image *mi, char **cause)
{
	struct img	 img;
	Osm__ImgRecord	*rec = NULL;
	struct img_pages cur;
	uint8_t		*buf, c;
	ssize_t		 n;
	int		 rc = -1, more;

	img_init(&img, fd);
	if (img_read_meta(&img, mi, cause) == -1) {
		img_free(&img);
		return -1;
	}
	buf = xmalloc(MIG_PAGES_MAX);
	img_pages_init(&cur, mi->mm);
	while ((more = img_pages_next(&img, &cur, mi->vma_pages, buf, &rec,
	    cause)) == 1) {
		osm__img_record__free_unpacked(rec, NULL);
		rec = NULL;
	}
	if (more == -1)
		goto out;
	while ((n = read(fd, &c, 1)) == -1 && errno == EINTR)
		;
	if (n == -1) {
		xasprintf(cause, "read image: %s", strerror(errno));
		goto out;
	}
	if (n == 1) {
		xasprintf(cause, "image corrupted: data after the final seal");
		goto out;
	}
	mi->bytes = img.bytes;
	mi->rounds = img.rounds;
	if (img.parent != NULL) {
		mi->parent = img.parent;
		img.parent = NULL;
		mi->parent_crc = img.parent_crc;
		mi->parent_records = img.parent_records;
	}
	mi->end_crc = img.end_crc;
	mi->end_records = img.end_records;
	rc = 0;
out:
	if (rec != NULL)
		osm__img_record__free_unpacked(rec, NULL);
	free(buf);
	img_free(&img);
	if (rc == -1)
		mig_image_free(mi);
	return rc;
}

/* The parent an image at fd names, or NULL; fd is rewound. */
static int
img_parent_of(int fd, char **name, char **cause)
{
	struct img	 img;
	Osm__ImgRecord	*rec;
	int		 rc = -1;

	*name = NULL;
	img_init(&img, fd);
	if (img_read_preamble(&img, cause) == -1 ||
	    (rec = img_read(&img, cause)) == NULL)
		goto out;
	if (rec->body_case == OSM__IMG_RECORD__BODY_PARENT)
		*name = xstrdup(rec->parent->name);
	osm__img_record__free_unpacked(rec, NULL);
	rc = 0;
out:
	img_free(&img);
	if (lseek(fd, 0, SEEK_SET) == -1 && rc == 0) {
		xasprintf(cause, "rewind image: %s", strerror(errno));
		free(*name);
		*name = NULL;
		rc = -1;
	}
	return rc;
}

/*
 * The images of the chain that ends at path, opened, oldest first, into
 * fds (MIG_CHAIN_MAX of them); each parent is found beside its child.
 */
int
mig_chain_open(const char *path, int *fds, size_t *n, char **cause)
{
	char	*cur = xstrdup(path), *name, *dir, *slash;
	size_t	 i, k = 0;
	int	 fd;

	dir = xstrdup(path);
	if ((slash = strrchr(dir, '/')) != NULL)
		slash[1] = '\0';
	else
		dir[0] = '\0';
	for (;;) {
		if (k == MIG_CHAIN_MAX) {
			xasprintf(cause, "%s: a chain of more than %d images",
			    path, MIG_CHAIN_MAX);
			goto fail;
		}
		if ((fd = open(cur, O_RDONLY | O_CLOEXEC)) == -1) {
			xasprintf(cause, "%s: %s", cur, strerror(errno));
			goto fail;
		}
		fds[k++] = fd;
		if (img_parent_of(fd, &name, cause) == -1) {
			char *c = *cause;

			xasprintf(cause, "%s: %s", cur, c);
			free(c);
			goto fail;
		}
		if (name == NULL)
			break;
		free(cur);
		xasprintf(&cur, "%s%s", dir, name);
		free(name);
	}
	/* oldest first */
	for (i = 0; i < k / 2; i++) {
		fd = fds[i];
		fds[i] = fds[k - 1 - i];
		fds[k - 1 - i] = fd;
	}
	*n = k;
	free(cur);
	free(dir);
	return 0;
fail:
	while (k > 0)
		close(fds[--k]);
	free(cur);
	free(dir);
	return -1;
}

/*
 * Check a whole chain: each image whole, each naming the final seal of
 * the one before.
 */
int
mig_chain_load(const char *path, char **cause)
{
	struct mig_image mi;
	int		 fds[MIG_CHAIN_MAX];
	size_t		 n, i;
	uint32_t	 crc = 0;
	uint64_t	 records = 0;
	int		 rc = -1;

	if (mig_chain_open(path, fds, &n, cause) == -1)
		return -1;
	for (i = 0; i < n; i++) {
		if (mig_image_load(fds[i], &mi, cause) == -1)
			goto out;
		if (i > 0 && (mi.parent_crc != crc ||
		    mi.parent_records != records)) {
			xasprintf(cause, "%s: the image it adds to (%s) is "
			    "not the one it was made from", path, mi.parent);
			mig_image_free(&mi);
			goto out;
		}
		crc = mi.end_crc;
		records = mi.end_records;
		mig_image_free(&mi);
	}
	rc = 0;
out:
	for (i = 0; i < n; i++)
		close(fds[i]);
	return rc;
}
