/*
 * The room left on the home's file systems, as its answers say, for
 * fileio.c to write behind only while there is room (docs/REMOTE.md,
 * "Room at home"): each write behind is charged to its file system from
 * when it is sent until its reply.
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define ROOM_SPARE	(8U << 20)	/* room kept: metadata, other writers */

/* File system dev at home, if the home said its room (add: make it). */
struct fio_fs *
room_fs(struct fio *f, uint64_t dev, int add)
{
	size_t	i;

	for (i = 0; i < f->nfs; i++) {
		if (f->fs[i].dev == dev)
			return &f->fs[i];
	}
	if (!add)
		return NULL;
	f->fs = xreallocarray(f->fs, f->nfs + 1, sizeof *f->fs);
	memset(&f->fs[f->nfs], 0, sizeof *f->fs);
	f->fs[f->nfs].dev = dev;
	return &f->fs[f->nfs++];
}

/*
 * The home said dev's room (-1: it did not), after the calls before its
 * answer: those after it, still on their way, are charged to it.
 */
void
room_told(struct fio *f, uint64_t dev, int64_t fs_free)
{
	if (fs_free >= 0)
		room_fs(f, dev, 1)->free = fs_free;
}

/*
 * May R's write of len bytes on e go behind? Only if the home's file
 * system, as it last said, has room for it beyond what went behind since
 * and a spare (its metadata, others writing there meanwhile): a write
 * behind is told to have written all, and a failure could only be told
 * later. Near full, the write goes home as it is, and its short count or
 * ENOSPC is its own, as at home. A file system the home says nothing of
 * (statvfs does not know it) is written behind.
 */
int
room_for(struct fio *f, const struct fio_fd *e, size_t len)
{
	const struct fio_fs	*fs = room_fs(f, e->dev, 0);
	uint64_t		 need;

	if (fs == NULL)
		return 1;
	need = fs->ahead + len + FIO_SLACK;
	if (f->blen > 0 && f->bdev == e->dev)
		need += f->blen + FIO_SLACK;
	return fs->free >= need + need / 32 + ROOM_SPARE;
}
