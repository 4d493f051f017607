/*
 * CTL_FILE_HASH: the SHA-256 of files of this node that mosd knows
 * (hashes.c), asked by agents about the files a move maps; a file not
 * known is answered without one, and mosd hashes it for the next ask.
 * Anyone may ask: mosd hashes only what any user could read.
 */
#include <stdlib.h>
#include <string.h>

#include "mosd.h"
#include "proto/ctl.pb-c.h"

#define CTL_FILE_HASH_MAX	64	/* files in one request */

static int
ctl_file_hash(struct mosd *m, struct peer *p, const Osm__CtlRequest *req,
    Osm__CtlReply *reply)
{
	struct answer {
		Osm__CtlFile	f;
		uint8_t		sha[CRYPTO_HASH_LEN];
	}			*a;
	const Osm__CtlFile	*q;
	struct hash_id		 id;
	size_t			 i;

	if (req->n_files > CTL_FILE_HASH_MAX) {
		xasprintf(&reply->error, "%zu files asked about at once (at "
		    "most %d)", req->n_files, CTL_FILE_HASH_MAX);
		return -1;
	}
	if (req->n_files == 0)
		return 0;
	/* one block: control_reply_free frees files[0] */
	a = xcalloc(req->n_files, sizeof *a);
	reply->files = xcalloc(req->n_files, sizeof *reply->files);
	reply->n_files = req->n_files;
	for (i = 0; i < req->n_files; i++) {
		q = req->files[i];
		reply->files[i] = &a[i].f;
		osm__ctl_file__init(&a[i].f);
		a[i].f.path = q->path;
		a[i].f.dev = id.dev = q->dev;
		a[i].f.ino = id.ino = q->ino;
		a[i].f.size = id.size = q->size;
		a[i].f.mtime_ns = id.mtime_ns = q->mtime_ns;
		a[i].f.ctime_ns = id.ctime_ns = q->ctime_ns;
		if (hashes_find(&m->hashes, &id, a[i].sha)) {
			a[i].f.has_sha256 = 1;
			a[i].f.sha256.data = a[i].sha;
			a[i].f.sha256.len = sizeof a[i].sha;
			m->counters[C_FILE_HASHES_KNOWN]++;
		} else
			hashes_want(m, q->path, &id);
	}
	return 0;
}

const struct ctl_cmd ctl_file_hash_cmd = {
	.type = OSM__CTL_TYPE__CTL_FILE_HASH,
	.name = "file-hash",
	.root_only = 0,
	.exec = ctl_file_hash,
};
