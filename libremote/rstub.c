/*
 * R's reads and pread64s of a window answered inside R (docs/REMOTE.md,
 * "The read stub"). A read served from a window (fileio.c) still stops R
 * in a notification the guest answers, some 12 us, where the read at home
 * costs under one. So the guest puts a stub at the start of R's libc
 * read and pread64 (agent/rstub.c) and shares memory with it (struct
 * rstub_shm): for each of up to RSTUB_SLOTS descriptors whose pread64 the
 * guest would serve from its window right now, the window's bytes, where
 * it lies in the file, R's offset (and whether a read there would be
 * served too) and until when (a TSC deadline: FIO_FRESH_NS from the
 * window's arrival) it may be served. The stub serves a read or pread64
 * that the window holds whole (or up to the file's end), a read moving
 * the offset, a pread64 saying where it ended (the stream's next);
 * anything else goes on in libc, to the guest, as before.
 *
 * The guest's view of each offset is brought up to date from the stub's
 * (rstub_sync) at every notification of R's, before anything else, and
 * before a dump or R's end (remote_settle): what the stub read is owed
 * to the home's offset as any read from a window is. What the stub may
 * serve is written (rstub_publish) just before R is let go on from a
 * notification, from what fileio.c would do with a read then: the same
 * conditions as fio_where's for a window. R runs one thread while the
 * stub serves (rstub_threaded turns it off for good), so nothing reads
 * the slots while they are written, nor moves an offset while it is
 * read. The shared memory is the guest's mapping of a memfd: it outlives
 * R, so the offsets R leaves at its end are read after it.
 */
#include <sys/ioctl.h>
#include <sys/syscall.h>

#include <linux/seccomp.h>
#include <string.h>

#include "internal.h"

#define RSTUB_WRITE_NS	2000000.0	/* R's writes wait no longer here */

struct rstub_view {
	struct rstub_shm *shm;		/* our mapping of it */
	uint64_t	 at;		/* the same in R */
	int		 off;		/* R has threads: nothing served */
	int		 paused;	/* switched off: R left a call */
	struct rstub_mirror {		/* a slot as we last wrote it */
		int		 fd;	/* -1: free */
		uint64_t	 pos;
		uint64_t	 pnext;
		uint64_t	 hits;
		const uint8_t	*buf;	/* the window it holds */
		uint64_t	 off, at;
		size_t		 len;
	}		 m[RSTUB_SLOTS];
	struct rstub_wmirror {		/* the write slot as we wrote it */
		int		 fd;	/* -1: none */
		int		 nr;
		uint64_t	 base;	/* the ring's offset in the file, */
		int		 placed;	/* if known */
		uint64_t	 dev, ino;	/* its file */
		uint64_t	 taken;	/* the ring's bytes taken in */
		uint64_t	 hits;
		uint64_t	 deadline;
	}		 w;
	uint64_t	 lhits, lwrites;	/* the stub's calls here, as
					   last taken in */
	double		 tsc_ns;	/* TSC ticks a nanosecond */
	uint64_t	 answered;	/* the call R goes on from (its seq):
					   done, if still pending */
};

static uint64_t
rstub_tsc(void)
{
	uint32_t	lo, hi;

	__asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
	return (uint64_t)hi << 32 | lo;
}

/* The TSC's rate against CLOCK_MONOTONIC, over a millisecond. */
static double
rstub_calibrate(void)
{
	uint64_t	t0, t1, n0, n1;

	n0 = window_now();
	t0 = rstub_tsc();
	do
		n1 = window_now();
	while (n1 - n0 < 1000000);
	t1 = rstub_tsc();
	return (double)(t1 - t0) / (double)(n1 - n0);
}

/*
 * The stub in R serves from shm, mapped at at in R (agent/rstub.c): from
 * now on the guest keeps it up to date.
 */
void
rstub_attach(struct remote *g, struct rstub_shm *shm, uint64_t at)
{
	struct rstub_view	*rs;
	size_t		 i;

	rs = xcalloc(1, sizeof *rs);
	rs->shm = shm;
	rs->at = at;
	rs->tsc_ns = rstub_calibrate();
	for (i = 0; i < RSTUB_SLOTS; i++) {
		rs->m[i].fd = -1;
		shm->slot[i].fd = -1;
		shm->slot[i].wlen = 0;
		shm->slot[i].data = at + RSTUB_DATA + i * RSTUB_BYTES;
	}
	rs->w.fd = -1;
	shm->w.fd = -1;
	shm->w.room = shm->w.head = 0;
	shm->w.ring = at + RSTUB_RING;
	shm->on = 1;
	memset(shm->lfds, 0, sizeof shm->lfds);
	shm->lhits = shm->lwrites = 0;
	/* the agent found libc's syscall() for them (agent/rstub.c) */
	shm->lon = shm->lsyscall != 0 ? RSTUB_LON_CALLS | RSTUB_LON_LOCKS : 0;
	shm->con = shm->lsyscall != 0;
	shm->chead = shm->ctail = 0;
	shm->ihits = 0;
	g->rstub = rs;
	rstub_ident(g);
}

/*
 * The identity the home said, for the stub's getpid and the like
 * (RSTUB_IDENT), while R has one thread; none while it is not known (a
 * call that may change it went home). Taken away before the values
 * change, given back after: R, running, reads the old or the new.
 */
void
rstub_ident(struct remote *g)
{
	struct rstub_shm		*shm;
	const struct remote_ident	*id = &g->ident.id;

	if (g->rstub == NULL)
		return;
	shm = g->rstub->shm;
	__atomic_store_n(&shm->ion, 0, __ATOMIC_SEQ_CST);
	if (!g->ident.valid || g->rstub->off)
		return;
	shm->ival[0] = id->pid;
	shm->ival[1] = id->ppid;
	shm->ival[2] = id->uid[0];
	shm->ival[3] = id->uid[1];
	shm->ival[4] = id->gid[0];
	shm->ival[5] = id->gid[1];
	__atomic_store_n(&shm->ion, 1, __ATOMIC_RELEASE);
}

/*
 * The oldest close the stub made that we have not taken: 1 with its
 * descriptor, 0 if none; rstub_close_taken takes it.
 */
int
rstub_close_next(const struct remote *g, int *fd)
{
	const struct rstub_shm	*shm;
	uint32_t		 tail;

	if (g->rstub == NULL)
		return 0;
	shm = g->rstub->shm;
	tail = shm->ctail;
	if (__atomic_load_n(&shm->chead, __ATOMIC_ACQUIRE) == tail)
		return 0;
	*fd = shm->cfds[tail % RSTUB_CLOSES];
	return 1;
}

void
rstub_close_taken(struct remote *g)
{
	__atomic_fetch_add(&g->rstub->shm->ctail, 1, __ATOMIC_RELEASE);
}

/* How many identity calls the stub answered in R. */
uint64_t
rstub_ident_hits(const struct remote *g)
{
	return g->rstub == NULL ? 0 :
	    __atomic_load_n(&g->rstub->shm->ihits, __ATOMIC_RELAXED);
}

/*
 * R's descriptor fd is a file opened here from now on (on), of the home's
 * device dev, or no more: the stub makes its calls itself, or leaves them
 * to the guest. Set before R has the descriptor, cleared before it loses
 * it (while its call waits): R's other threads test the bit as they go.
 */
void
rstub_local(struct remote *g, int fd, int on, uint64_t dev)
{
	uint8_t	*b;

	if (g->rstub == NULL || fd < 0 || fd >= RSTUB_LFDS)
		return;
	b = &g->rstub->shm->lfds[fd / 8];
	if (on) {
		__atomic_store_n(&g->rstub->shm->ldev[fd], dev,
		    __ATOMIC_SEQ_CST);
		__atomic_fetch_or(b, 1U << (fd % 8), __ATOMIC_SEQ_CST);
	} else
		__atomic_fetch_and(b, ~(1U << (fd % 8)) & 0xff,
		    __ATOMIC_SEQ_CST);
}

/*
 * The calls the stub made on files opened here since we last looked:
 * counted as the guest's own CONTINUEs are, and a write among them makes
 * windows of those files stale, as one the guest let through does.
 */
static void
rstub_ltake(struct remote *g)
{
	struct rstub_view	*rs = g->rstub;
	struct shared		*s = &g->shared;
	uint64_t		 hits, writes;
	size_t			 i;

	hits = __atomic_load_n(&rs->shm->lhits, __ATOMIC_ACQUIRE);
	writes = __atomic_load_n(&rs->shm->lwrites, __ATOMIC_ACQUIRE);
	s->stats_local += hits - rs->lhits;
	s->stats_local_r += hits - rs->lhits;
	rs->lhits = hits;
	/* which file the writes were of it does not say: each */
	for (i = 0; writes != rs->lwrites && i < s->nfds; i++)
		fio_changed(&g->fio, s->fds[i].dev, s->fds[i].ino);
	rs->lwrites = writes;
}

/* Is the home's file dev, ino open here too (shared.c's, in R)? */
static int
rstub_opened_here(const struct shared *s, uint64_t dev, uint64_t ino)
{
	size_t	i;

	for (i = 0; i < s->nfds; i++)
		if (s->fds[i].dev == dev && s->fds[i].ino == ino)
			return 1;
	return 0;
}

/*
 * The stub serves no more: R is making its second thread (which waits),
 * or is seen outside the stub after rstub_stop. What it served is taken
 * in.
 */
void
rstub_threaded(struct remote *g)
{
	if (g->rstub == NULL)
		return;
	rstub_stop(g);
	rstub_sync(g);
	g->rstub->off = 1;
	rstub_ident(g);
	/* (a close it made before is still taken: shared_stub_closes) */
	__atomic_store_n(&g->rstub->shm->con, 0, __ATOMIC_SEQ_CST);
}

/*
 * R runs and the stub is to serve no more (the way home, live): from now
 * on a read R begins goes to libc. One begun before may still end in the
 * stub: rstub_threaded once R is seen outside it. 1 if it was serving.
 */
int
rstub_stop(struct remote *g)
{
	if (g->rstub == NULL)
		return 0;
	g->rstub->paused = 0;
	return __atomic_exchange_n(&g->rstub->shm->on, 0, __ATOMIC_SEQ_CST);
}

/*
 * R's way home goes live: the stub makes no call on a file opened here
 * from now on (R's calls of the rounds wait for the guest, as every
 * other: the offsets the home takes at the freeze must not move after).
 * A call it began may still be in the kernel: the caller waits for it.
 * 1 if it was making them.
 */
int
rstub_local_stop(struct remote *g)
{
	if (g->rstub == NULL)
		return 0;
	return __atomic_exchange_n(&g->rstub->shm->lon, 0, __ATOMIC_SEQ_CST);
}

/*
 * The stub's lock calls off (on 0: R about to leave, R stopped: from now
 * on they come to the guest), or on again. Whether they were on.
 */
int
rstub_locks(struct remote *g, int on)
{
	uint32_t	*lon;

	if (g->rstub == NULL)
		return 0;
	lon = &g->rstub->shm->lon;
	/* (the stub makes none without RSTUB_LON_CALLS too) */
	return ((on ? __atomic_fetch_or(lon, RSTUB_LON_LOCKS,
	    __ATOMIC_SEQ_CST) : __atomic_fetch_and(lon, ~RSTUB_LON_LOCKS,
	    __ATOMIC_SEQ_CST)) & RSTUB_LON_LOCKS) != 0;
}

/*
 * R's writes the stub put into the ring since we last looked, gathered
 * as fio_call gathers a write (fio_written): R is stopped, gone, or
 * running (the agent's timer): the stub only ever adds bytes after head,
 * and moves head once they are in.
 */
static void
rstub_wtake(struct remote *g)
{
	struct rstub_view	*rs = g->rstub;
	struct rstub_wmirror	*w = &rs->w;
	uint64_t		 head, hits;

	if (w->fd == -1)
		return;
	head = __atomic_load_n(&rs->shm->w.head, __ATOMIC_ACQUIRE) &
	    ~RSTUB_WBUSY;
	hits = __atomic_load_n(&rs->shm->w.hits, __ATOMIC_RELAXED);
	/* R's memory says it: never more than the room it was given */
	if (head > RSTUB_RING_BYTES)
		head = RSTUB_RING_BYTES;
	if (head > w->taken) {
		fio_written(&g->fio, w->fd, w->nr, w->base + w->taken,
		    (const uint8_t *)rs->shm + RSTUB_RING + w->taken,
		    head - w->taken, &g->seq);
		w->taken = head;
		statc_clear(&g->statc);	/* a file at home changes */
	}
	g->stats.w_in_r += hits - w->hits;
	w->hits = hits;
}

/*
 * What the stub served since we last looked: R's offsets moved by it,
 * owed to the home's as a window's reads are (fio_call's FIO_WINDOW),
 * and the writes it gathered. R is stopped, or gone.
 */
void
rstub_sync(struct remote *g)
{
	struct rstub_view		*rs = g->rstub;
	struct rstub_mirror	*m;
	struct fio_fd		*e;
	uint64_t		 pos, pnext, hits;
	size_t			 i;

	if (rs == NULL)
		return;
	rstub_ltake(g);
	rstub_wtake(g);
	for (i = 0; i < RSTUB_SLOTS; i++) {
		m = &rs->m[i];
		if (m->fd == -1)
			continue;
		pos = __atomic_load_n(&rs->shm->slot[i].pos, __ATOMIC_ACQUIRE);
		pnext = rs->shm->slot[i].pnext;
		hits = rs->shm->slot[i].hits;
		e = fio_find(&g->fio, m->fd);
		if (pos != m->pos && e != NULL) {
			e->pos += pos - m->pos;
			e->seek += pos - m->pos;
		}
		/* a pread64 served: the next one on from it is a stream */
		if (pnext != m->pnext && e != NULL) {
			e->pstream = 1;
			e->pnext = pnext;
		}
		m->pos = pos;
		m->pnext = pnext;
		g->fio.stats_served += hits - m->hits;
		g->stats.in_r += hits - m->hits;
		m->hits = hits;
	}
}

/*
 * Would fileio.c serve R's pread64 of e from its window now? fio_where's
 * conditions, and no call of R's at home on it. Its read too if rok.
 */
static int
rstub_servable(struct remote *g, const struct fio_fd *e, uint64_t now)
{
	const struct fio	*f = &g->fio;
	const struct rstub_wmirror *w = &g->rstub->w;

	/*
	 * R reads what it wrote: not from the stub on the descriptor whose
	 * writes (not pwrite64s) it takes (one offset, two moving it), nor
	 * on any of that file unless the stub knows where the ring's bytes
	 * go (it then serves no read that wants any of them: wsame).
	 */
	if (w->fd != -1 && e->dev == w->dev && e->ino == w->ino &&
	    ((e->fd == w->fd && w->nr == SYS_write) || !w->placed))
		return 0;
	/* nor of a file opened here too, which R writes unseen */
	if (rstub_opened_here(&g->shared, e->dev, e->ino))
		return 0;
	return !f->off && e->state == FIO_KNOWN && e->readable &&
	    e->err == 0 && e->win.buf != NULL &&
	    e->win.len > 0 && e->win.len <= RSTUB_BYTES &&
	    now - e->win.at < FIO_FRESH_NS &&
	    !(f->waiting && f->wait_fd == e->fd) &&
	    fio_on_fd(g->pending, g->npending, e->fd, g->rstub->answered) == 0;
}

static int
rstub_rok(const struct fio_fd *e)
{
	return e->pos_known && e->pos >= e->win.off &&
	    e->pos < e->win.off + e->win.len;
}

/* Slot i serves e's window from now on. */
static void
rstub_set(struct rstub_view *rs, size_t i, const struct fio_fd *e, uint64_t now)
{
	struct rstub_mirror	*m = &rs->m[i];
	struct rstub_slot	*s = &rs->shm->slot[i];
	uint64_t		 left = e->win.at + FIO_FRESH_NS - now;

	if (m->fd != e->fd || m->buf != e->win.buf || m->off != e->win.off ||
	    m->len != e->win.len || m->at != e->win.at) {
		memcpy((uint8_t *)rs->shm + RSTUB_DATA + i * RSTUB_BYTES,
		    e->win.buf, e->win.len);
		s->woff = e->win.off;
		s->wlen = e->win.len;
		s->eof = e->win.eof;
		s->deadline = rstub_tsc() + (uint64_t)(left * rs->tsc_ns);
		m->buf = e->win.buf;
		m->off = e->win.off;
		m->len = e->win.len;
		m->at = e->win.at;
	}
	if (m->fd != e->fd || m->pos != e->pos || m->pnext != e->pnext) {
		s->pos = m->pos = e->pos;
		s->pnext = m->pnext = e->pnext;
		s->hits = m->hits = 0;
	}
	s->rok = rstub_rok(e);
	s->wsame = rs->w.fd != -1 && e->dev == rs->w.dev &&
	    e->ino == rs->w.ino;
	s->fd = m->fd = e->fd;
}

static void
rstub_clear(struct rstub_view *rs, size_t i)
{
	rs->shm->slot[i].wlen = 0;
	rs->shm->slot[i].fd = -1;
	memset(&rs->m[i], 0, sizeof rs->m[i]);
	rs->m[i].fd = -1;
}

/*
 * The write slot: the descriptor whose writes fileio.c would gather now
 * (fio_wstub), for at most RSTUB_WRITE_NS (the gather's bound: the
 * agent's timer takes them in then) and the ring's bytes. R is stopped
 * and all it wrote there is taken in: the ring starts again.
 */
static void
rstub_wfill(struct remote *g, struct rstub_view *rs)
{
	struct rstub_wslot	*ws = &rs->shm->w;
	struct rstub_wmirror	*w = &rs->w;
	struct fio_fd		*e;
	uint64_t		 off = 0;
	int			 nr = 0;

	rstub_wtake(g);		/* nothing is left in it, but be sure */
	/*
	 * A write of R's is half way in the stub, a signal's handler called
	 * meanwhile waits in this call: it writes there once the handler
	 * returns, at the head it saw. Nothing more, and nothing moved.
	 */
	if (ws->head & RSTUB_WBUSY) {
		ws->deadline = w->deadline = 0;
		return;
	}
	e = fio_wstub(&g->fio, RSTUB_RING_BYTES, &nr, &off);
	if (e != NULL && (fio_on_fd(g->pending, g->npending, e->fd,
	    rs->answered) != 0 ||
	    off > INT64_MAX))
		e = NULL;
	ws->fd = -1;
	ws->room = ws->head = ws->hits = 0;
	w->taken = w->hits = 0;
	w->fd = -1;
	if (e == NULL)
		return;
	w->fd = e->fd;
	w->nr = nr;
	/* a write's lands at R's offset, if it is known (not O_APPEND) */
	w->placed = nr == SYS_pwrite64 || (e->pos_known && !e->append);
	w->base = nr == SYS_pwrite64 ? off : e->pos_known ? e->pos : 0;
	w->dev = e->dev;
	w->ino = e->ino;
	w->deadline = rstub_tsc() + (uint64_t)(RSTUB_WRITE_NS * rs->tsc_ns);
	ws->nr = nr;
	ws->base = w->base;
	ws->deadline = w->deadline;
	ws->room = RSTUB_RING_BYTES;
	ws->fd = e->fd;
}

/* The slots as fileio.c would serve R's reads and writes now. */
static void
rstub_fill(struct remote *g, struct rstub_view *rs)
{
	struct fio_fd	*e;
	uint64_t	 now;
	size_t		 i, j;

	rstub_wfill(g, rs);
	now = window_now();
	for (i = 0; i < RSTUB_SLOTS; i++) {
		if (rs->m[i].fd == -1)
			continue;
		e = fio_find(&g->fio, rs->m[i].fd);
		if (e != NULL && rstub_servable(g, e, now))
			rstub_set(rs, i, e, now);
		else
			rstub_clear(rs, i);
	}
	for (j = 0; j < g->fio.nfds; j++) {
		e = &g->fio.fds[j];
		if (!rstub_servable(g, e, now))
			continue;
		for (i = 0; i < RSTUB_SLOTS && rs->m[i].fd != e->fd; i++)
			;
		if (i < RSTUB_SLOTS)
			continue;
		for (i = 0; i < RSTUB_SLOTS && rs->m[i].fd != -1; i++)
			;
		if (i == RSTUB_SLOTS)
			return;
		rstub_set(rs, i, e, now);
	}
}

/*
 * R goes on from notification id: the stub serves what fileio.c would
 * serve of a read now, and nothing else. After rstub_sync (the
 * notification's start), so no offset the stub moved is lost.
 *
 * The slots are written while R waits in the call, so not in the stub
 * (it has one thread). R may have left the call, though (a signal while
 * it waited: the answer is for nobody), and run: so the stub is switched
 * off first, then the call looked at. Still waiting: R cannot have begun
 * a read in the stub since it was switched off, and it serves again once
 * the slots are whole. Gone: nothing is written, and it stays off until
 * a call of R's is answered so (what it served meanwhile is rstub_sync's
 * at the next notification). Stopped for the way home: stays so.
 */
void
rstub_publish(struct remote *g, uint64_t id)
{
	struct rstub_view	*rs = g->rstub;
	size_t			 i;

	if (rs == NULL || rs->off)
		return;
	if (!__atomic_exchange_n(&rs->shm->on, 0, __ATOMIC_SEQ_CST) &&
	    !rs->paused)
		return;
	if (ioctl(g->listener, SECCOMP_IOCTL_NOTIF_ID_VALID, &id) != 0) {
		rs->paused = 1;
		return;
	}
	rs->paused = 0;
	/* the call answered now is done, though still listed */
	rs->answered = 0;
	for (i = 0; i < g->npending; i++) {
		if (g->pending[i].id == id)
			rs->answered = g->pending[i].call.seq;
	}
	rstub_fill(g, rs);
	__atomic_store_n(&rs->shm->on, 1, __ATOMIC_RELEASE);
}

/* Is a write of R's half way into the ring (the stub's busy mark)? */
int
rstub_half_written(const struct remote *g)
{
	return g->rstub != NULL && (__atomic_load_n(&g->rstub->shm->w.head,
	    __ATOMIC_ACQUIRE) & RSTUB_WBUSY) != 0;
}

/*
 * Writes in the ring, or that the stub may still put there: the agent
 * takes them in a moment later (rstub_flush) if no call of R's comes.
 */
int
rstub_batched(const struct remote *g)
{
	const struct rstub_view	*rs = g->rstub;

	if (rs == NULL || rs->w.fd == -1)
		return 0;
	return (__atomic_load_n(&rs->shm->w.head, __ATOMIC_ACQUIRE) &
	    ~RSTUB_WBUSY) > rs->w.taken ||
	    (rs->shm->on && rstub_tsc() < rs->w.deadline);
}

/* R's writes in the ring, taken in while R may run (remote_flush). */
void
rstub_flush(struct remote *g)
{
	if (g->rstub != NULL)
		rstub_wtake(g);
}

/*
 * A reply to a call behind came: if a write of the write slot's failed,
 * the stub gathers no more of it, so that R's next write tells the
 * failure (one the stub has begun may still go behind, after it).
 */
void
rstub_failed(struct remote *g)
{
	struct rstub_view	*rs = g->rstub;
	struct fio_fd		*e;

	if (rs != NULL && rs->w.fd != -1 &&
	    (e = fio_find(&g->fio, rs->w.fd)) != NULL && e->err != 0)
		__atomic_store_n(&rs->shm->w.deadline, 0, __ATOMIC_RELEASE);
}

/*
 * R never had the answer to its call nr, which fileio.c answered (it left
 * the call for a signal): undone (fio_unanswered), and the stub serves
 * nothing from slots written for it until a call of R's is answered.
 */
void
rstub_unanswered(struct remote *g, int nr, const uint64_t *args, long rv)
{
	fio_unanswered(&g->fio, nr, args, rv);
	if (g->rstub != NULL && !g->rstub->off) {
		__atomic_store_n(&g->rstub->shm->on, 0, __ATOMIC_SEQ_CST);
		g->rstub->paused = 1;
	}
}
