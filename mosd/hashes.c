/*
 * The SHA-256 of files of this node that agents hash to prove a mapped
 * file the same on two nodes (docs/REMOTE.md, "File mappings"), kept for
 * mosd's life: a deputy hashes the libraries its process maps at every
 * move, a guest agent the node's own copies, and each is a process of
 * its own, which would hash them again at every start. mosd is their
 * keeper because no agent can write into it: a guest agent cannot make
 * another's proof.
 *
 * A hash is keyed by the file's identity: device, inode, size, and its
 * modification and change times. The change time is the kernel's, set at
 * every change of the content and never by a user; a change within the
 * clock's tick would keep it, so a file changed less than HASHES_SETTLED
 * ago is not kept. A file mosd does not know is answered unknown at once
 * (the agent hashes it itself, as before) and hashed afterwards in the
 * loop by mosd, from its path, as the network process's uid — what any
 * user could read — and kept only if what it opened is the file asked
 * about, unchanged while it read it.
 */
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "mosd.h"

/* larger files are not hashed: the loop waits while it hashes */
#define HASHES_MAX_BYTES	(8ULL << 20)
#define HASHES_SETTLED_NS	2000000000ULL	/* unchanged that long */

void
hashes_id(const struct stat *st, struct hash_id *id)
{
	memset(id, 0, sizeof *id);
	id->dev = st->st_dev;
	id->ino = st->st_ino;
	id->size = st->st_size;
	id->mtime_ns = (uint64_t)st->st_mtim.tv_sec * 1000000000 +
	    st->st_mtim.tv_nsec;
	id->ctime_ns = (uint64_t)st->st_ctim.tv_sec * 1000000000 +
	    st->st_ctim.tv_nsec;
}

static int
hashes_same(const struct hash_id *a, const struct hash_id *b)
{
	return a->dev == b->dev && a->ino == b->ino && a->size == b->size &&
	    a->mtime_ns == b->mtime_ns && a->ctime_ns == b->ctime_ns;
}

/* The hash of the file of identity id, if kept: 1 and out, else 0. */
int
hashes_find(struct hashes *h, const struct hash_id *id,
    uint8_t out[CRYPTO_HASH_LEN])
{
	size_t	i;

	for (i = 0; i < h->n; i++)
		if (hashes_same(&h->kept[i].id, id)) {
			memcpy(out, h->kept[i].sha256, CRYPTO_HASH_LEN);
			return 1;
		}
	return 0;
}

/* Keep sha as the hash of id, in place of the oldest if full. */
void
hashes_keep(struct hashes *h, const struct hash_id *id,
    const uint8_t sha[CRYPTO_HASH_LEN])
{
	struct hash_kept	*k;
	uint8_t			 old[CRYPTO_HASH_LEN];

	if (hashes_find(h, id, old))
		return;
	k = h->n < HASHES_KEPT ? &h->kept[h->n++] :
	    &h->kept[h->next++ % HASHES_KEPT];
	k->id = *id;
	memcpy(k->sha256, sha, CRYPTO_HASH_LEN);
}

/*
 * Has the file of identity id been unchanged long enough (now, the real
 * time, in ns) to be kept?
 */
int
hashes_settled(const struct hash_id *id, uint64_t now)
{
	return now > id->ctime_ns && now - id->ctime_ns >= HASHES_SETTLED_NS &&
	    id->size <= HASHES_MAX_BYTES;
}

static uint64_t
hashes_now(void)
{
	struct timespec	ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/*
 * Hash the file at path if it is still the file of identity id, settled,
 * and keep the hash. Nothing if not: an agent that asks again hashes it
 * itself.
 */
static void
hashes_make(struct mosd *m, const char *path, const struct hash_id *id)
{
	struct hash_id	 got, after;
	struct stat	 st;
	uint8_t		 sha[CRYPTO_HASH_LEN];
	char		*cause = NULL;
	int		 fd;

	/* only a regular file is opened: a device's open may act */
	if (stat(path, &st) == -1 || !S_ISREG(st.st_mode) ||
	    (fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY |
	    O_CLOEXEC)) == -1)
		return;
	if (fstat(fd, &st) == -1 || !S_ISREG(st.st_mode))
		goto out;
	hashes_id(&st, &got);
	if (!hashes_same(&got, id) || !hashes_settled(&got, hashes_now()))
		goto out;
	if (file_sha256(fd, got.size, sha, &cause) == -1) {
		free(cause);
		goto out;
	}
	/* changed while we read it: not this identity's content */
	if (fstat(fd, &st) == -1)
		goto out;
	hashes_id(&st, &after);
	if (!hashes_same(&got, &after))
		goto out;
	hashes_keep(&m->hashes, &got, sha);
	m->counters[C_FILE_HASHES_MADE]++;
out:
	close(fd);
}

/* One wanted file a loop iteration, until none is left. */
static void
hashes_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct mosd	*m = w->data;
	struct hashes	*h = &m->hashes;
	struct hash_want want;

	looptime_mark(loop, "file hashes");
	if (h->nwant == 0)
		return;
	want = h->want[0];
	memmove(h->want, h->want + 1, --h->nwant * sizeof *h->want);
	hashes_make(m, want.path, &want.id);
	free(want.path);
	if (h->nwant > 0) {
		ev_timer_set(w, 0, 0);
		ev_timer_start(loop, w);
	}
}

/*
 * The file at path, of identity id, was asked about and not known: hash
 * it soon, if it may be kept, and if not too many wait already (each
 * path at most PATH_MAX: what a local user can make mosd hold is
 * bounded).
 */
void
hashes_want(struct mosd *m, const char *path, const struct hash_id *id)
{
	struct hashes	*h = &m->hashes;
	size_t		 i;

	if (h->nwant == HASHES_WANTED || path[0] != '/' ||
	    strlen(path) >= PATH_MAX || !hashes_settled(id, hashes_now()))
		return;
	for (i = 0; i < h->nwant; i++)
		if (hashes_same(&h->want[i].id, id))
			return;
	h->want[h->nwant].path = xstrdup(path);
	h->want[h->nwant++].id = *id;
	if (!ev_is_active(&h->timer)) {
		ev_timer_set(&h->timer, 0, 0);
		ev_timer_start(m->loop, &h->timer);
	}
}

void
hashes_start(struct mosd *m)
{
	memset(&m->hashes, 0, sizeof m->hashes);
	ev_init(&m->hashes.timer, hashes_cb);
	m->hashes.timer.data = m;
}
