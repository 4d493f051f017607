/*
 * The SHA-256 of a file's whole content: what proves that a file on one
 * node is the file another node mapped, whatever its device and inode
 * (migrate/'s file areas, the guest agent's mapped files).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "osm.h"

#define FILEHASH_CHUNK	(1U << 20)

/* Hash the size bytes of the file open on fd; -1 with *cause. */
int
file_sha256(int fd, uint64_t size, uint8_t out[CRYPTO_HASH_LEN],
    char **cause)
{
	struct crypto_hash *c = crypto_hash_new();
	uint8_t		*buf = xmalloc(FILEHASH_CHUNK);
	uint64_t	 off = 0;
	ssize_t		 n;

	while (off < size) {
		n = pread(fd, buf, size - off < FILEHASH_CHUNK ? size - off :
		    FILEHASH_CHUNK, off);
		if (n == -1 && errno == EINTR)
			continue;
		if (n <= 0) {
			xasprintf(cause, "%s", n == 0 ? "the file shrank" :
			    strerror(errno));
			crypto_hash_free(c);
			free(buf);
			return -1;
		}
		crypto_hash_update(c, buf, n);
		off += n;
	}
	crypto_hash_final(c, out);
	free(buf);
	return 0;
}
