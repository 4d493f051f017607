/*
 * A file's identity, as images record it: where it was (device, inode,
 * size, modification time) and, for files not too large to hash, the
 * SHA-256 of its content — what proves a file elsewhere to be the same
 * file, whatever its device and inode there (mapped files, the
 * executable, descriptors).
 */
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/osm.h"
#include "internal.h"

int
fileid_make(const struct stat *st, Osm__ImgFileId *id)
{
	osm__img_file_id__init(id);
	id->dev = st->st_dev;
	id->ino = st->st_ino;
	id->size = st->st_size;
	id->mtime_ns = (uint64_t)st->st_mtim.tv_sec * 1000000000 +
	    st->st_mtim.tv_nsec;
	return 0;
}

int
fileid_same(const Osm__ImgFileId *id, const struct stat *st)
{
	Osm__ImgFileId	now;

	fileid_make(st, &now);
	return id->dev == now.dev && id->ino == now.ino &&
	    id->size == now.size && id->mtime_ns == now.mtime_ns;
}

/*
 * Content hashes of the files mapped, kept for the process's life: a
 * deputy dumps its process at every move, and a file does not change
 * under the same identity.
 */
#define FILEID_HASH_MAX	(256ULL << 20)	/* larger files are not hashed */
#define FILEID_HASHES	64
static struct {
	uint64_t	 dev, ino, size, mtime_ns;
	uint8_t		 sha256[CRYPTO_HASH_LEN];
} fileid_hashes[FILEID_HASHES];
static size_t	 fileid_nhashes, fileid_next;

/*
 * The SHA-256 of the file open on fd, whose identity is id, into out: 1,
 * or 0 if it is too large to hash, or -1 with *cause.
 */
static int
fileid_hash(int fd, const Osm__ImgFileId *id, uint8_t *out, char **cause)
{
	size_t	i;

	if (id->size > FILEID_HASH_MAX)
		return 0;
	for (i = 0; i < fileid_nhashes; i++) {
		if (fileid_hashes[i].dev == id->dev && fileid_hashes[i].ino == id->ino &&
		    fileid_hashes[i].size == id->size &&
		    fileid_hashes[i].mtime_ns == id->mtime_ns) {
			memcpy(out, fileid_hashes[i].sha256, CRYPTO_HASH_LEN);
			return 1;
		}
	}
	if (file_sha256(fd, id->size, out, cause) == -1)
		return -1;
	i = fileid_nhashes < FILEID_HASHES ? fileid_nhashes++ : fileid_next++ % FILEID_HASHES;
	fileid_hashes[i].dev = id->dev;
	fileid_hashes[i].ino = id->ino;
	fileid_hashes[i].size = id->size;
	fileid_hashes[i].mtime_ns = id->mtime_ns;
	memcpy(fileid_hashes[i].sha256, out, CRYPTO_HASH_LEN);
	return 1;
}

/*
 * The identity of the file at path (as seen from here), with its content's
 * hash in out[CRYPTO_HASH_LEN] when out is not NULL and the file not too large
 * to hash: 0, or -1 with *cause.
 */
int
fileid_identify(const char *path, Osm__ImgFileId *id, uint8_t *out,
    char **cause)
{
	struct stat	st;
	int		fd, rc = 0;

	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1 ||
	    fstat(fd, &st) == -1) {
		xasprintf(cause, "%s: %s", path, strerror(errno));
		if (fd != -1)
			close(fd);
		return -1;
	}
	fileid_make(&st, id);
	if (out != NULL && (rc = fileid_hash(fd, id, out, cause)) == 1) {
		id->has_sha256 = 1;
		id->sha256.data = out;
		id->sha256.len = CRYPTO_HASH_LEN;
	}
	close(fd);
	return rc == -1 ? -1 : 0;
}

/*
 * Is the file at path the file of identity id: the same file, or one
 * with the same content (its SHA-256, when id carries one)?
 */
int
fileid_is(const Osm__ImgFileId *id, const char *path)
{
	Osm__ImgFileId	 here;
	uint8_t		 sha[CRYPTO_HASH_LEN];
	struct stat	 st;
	char		*cause = NULL;

	if (stat(path, &st) == -1 || !S_ISREG(st.st_mode))
		return 0;
	if (fileid_same(id, &st))
		return 1;
	if (!id->has_sha256 || id->sha256.len != CRYPTO_HASH_LEN ||
	    (uint64_t)st.st_size != id->size)
		return 0;
	if (fileid_identify(path, &here, sha, &cause) == -1) {
		free(cause);
		return 0;
	}
	return here.has_sha256 && here.size == id->size &&
	    memcmp(sha, id->sha256.data, CRYPTO_HASH_LEN) == 0;
}

/* Is the file at path the very file of id, changed in place or not? */
int
fileid_inode(const Osm__ImgFileId *id, const char *path)
{
	struct stat	st;

	return stat(path, &st) == 0 && S_ISREG(st.st_mode) &&
	    (uint64_t)st.st_dev == id->dev && (uint64_t)st.st_ino == id->ino;
}

/*
 * The identity of the file at path and, if sha256 is not NULL and it is not
 * too large to hash, the SHA-256 of its content, in sha256[32] (id points at
 * it): for a
 * deputy telling its guest what the process maps. Hashes are kept for the
 * process's life.
 */
int
mig_file_identify(const char *path, Osm__ImgFileId *id, uint8_t *sha256,
    char **cause)
{
	return fileid_identify(path, id, sha256, cause);
}
