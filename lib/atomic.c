/*
 * A file that appears whole under its name or not at all: written under a
 * temporary name beside it (the same directory, so the same file system,
 * where rename is atomic), flushed to disk, then renamed over the name.
 * A crash or a failed write leaves the file before it, if any, untouched.
 * moscr dump writes its images so, and the deputy its checkpoints.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "osm.h"

/*
 * Open a temporary file for path, mode 0600: its fd (also in af->fd), or
 * -1 with *cause naming the file. The caller writes to it, then ends it
 * with atomic_commit.
 */
int
atomic_create(struct atomic_file *af, const char *path, char **cause)
{
	af->path = xstrdup(path);
	xasprintf(&af->tmp, "%s.tmp.XXXXXX", path);
	if ((af->fd = mkostemp(af->tmp, O_CLOEXEC)) == -1) {
		xasprintf(cause, "%s: %s", af->tmp, strerror(errno));
		free(af->tmp);
		free(af->path);
		af->tmp = af->path = NULL;
		return -1;
	}
	return af->fd;
}

/*
 * End the file: if ok, flush it and rename it to its name, 0 when done;
 * otherwise, or if that fails, remove it and return -1. A failure to
 * flush or rename goes into *cause, naming the file; when the caller said
 * !ok, *cause is left as it is (its own reason). Either way fd, path and
 * tmp are gone.
 */
int
atomic_commit(struct atomic_file *af, int ok, char **cause)
{
	int	rc = -1;

	if (ok && fsync(af->fd) == -1) {
		if (cause != NULL)
			xasprintf(cause, "%s: %s", af->path, strerror(errno));
		ok = 0;
	}
	/* on some file systems (NFS) a write error shows only at close */
	if (close(af->fd) == -1 && ok) {
		if (cause != NULL)
			xasprintf(cause, "%s: %s", af->path, strerror(errno));
		ok = 0;
	}
	if (ok && rename(af->tmp, af->path) == -1) {
		if (cause != NULL)
			xasprintf(cause, "rename %s to %s: %s", af->tmp,
			    af->path, strerror(errno));
		ok = 0;
	}
	if (ok)
		rc = 0;
	else
		unlink(af->tmp);
	free(af->tmp);
	free(af->path);
	af->tmp = af->path = NULL;
	af->fd = -1;
	return rc;
}
