/*
 * The guest's table of R's descriptors of regular files (fileio.c) and
 * what it owes the home: the messages to send in order (fio_push,
 * fio_out; the opens made here, which a close may make moot, wait:
 * fio_push_later), the calls written behind and their replies to come
 * (fio_behind_add), the offsets R's reads from windows moved
 * (fio_settle_seek) and the writes gathered (fio_flush).
 */
#include <sys/syscall.h>

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"
#include "proto/remote.pb-c.h"

struct fio_fd *
fio_find(struct fio *f, int fd)
{
	size_t	i;

	for (i = 0; i < f->nfds; i++) {
		if (f->fds[i].fd == fd)
			return &f->fds[i];
	}
	return NULL;
}

struct fio_fd *
fio_add(struct fio *f, int fd)
{
	struct fio_fd	*e;

	f->fds = xreallocarray(f->fds, f->nfds + 1, sizeof *f->fds);
	e = &f->fds[f->nfds++];
	memset(e, 0, sizeof *e);
	e->fd = fd;
	e->gen = window_gen();
	return e;
}

void
fio_forget(struct fio *f, struct fio_fd *e)
{
	/* another thread's read waits on it: home, where it is closed now */
	if (f->waiting && f->wait_fd == e->fd)
		f->wait_home = 1;
	window_drop(e);
	held_drop(&f->held, e->fd);
	/* the stub in R gathers no write of a number opened again */
	if (f->wlive && f->wfd == e->fd)
		f->wlive = 0;
	*e = f->fds[--f->nfds];
}

/*
 * Every window of file (dev, ino), and what R wrote of it but through
 * descriptor keep (-1: none); every window and all R wrote if all.
 */
void
fio_drop_file(struct fio *f, int all, uint64_t dev, uint64_t ino, int keep)
{
	struct fio_fd	*e;
	size_t		 i;

	if (all)
		held_drop(&f->held, -1);
	/* a window on its way may hold the bytes from before: once only */
	if (f->waiting && (e = fio_find(f, f->wait_fd)) != NULL &&
	    (all || (e->dev == dev && e->ino == ino)))
		f->wait_stale = 1;
	for (i = 0; i < f->nfds; i++) {
		if (!all && (f->fds[i].dev != dev || f->fds[i].ino != ino))
			continue;
		window_drop(&f->fds[i]);
		if (!all && f->fds[i].fd != keep)
			held_drop(&f->held, f->fds[i].fd);
	}
}

/* Does window w hold any of len bytes at off (after its end, if eof)? */
static int
fio_win_holds(const struct fio_win *w, uint64_t off, uint64_t len)
{
	return w->buf != NULL && w->off < off + len &&
	    (w->eof || off < w->off + w->len);
}

/*
 * R wrote len bytes of file (dev, ino) at off through descriptor keep:
 * the windows of the file that hold any of them go (and those on their
 * way to it: from before), and what R wrote through its other
 * descriptors. Windows of other parts of the file are still its bytes.
 */
void
fio_drop_range(struct fio *f, uint64_t dev, uint64_t ino, int keep,
    uint64_t off, uint64_t len)
{
	struct fio_fd	*e;
	size_t		 i;

	if (f->waiting && (e = fio_find(f, f->wait_fd)) != NULL &&
	    e->dev == dev && e->ino == ino)
		f->wait_stale = 1;
	for (i = 0; i < f->nfds; i++) {
		e = &f->fds[i];
		if (e->dev != dev || e->ino != ino)
			continue;
		if (fio_win_holds(&e->win, off, len) ||
		    fio_win_holds(&e->next, off, len) ||
		    (f->pre_busy && f->pre_fd == e->fd))
			window_drop(e);
		if (e->fd != keep)
			held_drop(&f->held, e->fd);
	}
}

void
fio_free(struct fio *f)
{
	size_t	i;

	for (i = 0; i < f->nfds; i++)
		window_drop(&f->fds[i]);
	held_drop(&f->held, -1);
	free(f->fds);
	for (i = 0; i < f->nout; i++)
		free(f->out[i].msg);
	free(f->out);
	for (i = 0; i < f->nlater; i++)
		free(f->later[i].msg);
	free(f->later);
	free(f->behind);
	free(f->locks);
	free(f->fs);
	free(f->buf);
	free(f->parts);
	memset(f, 0, sizeof *f);
}

static void
fio_append(struct fio *f, int kind, int post, uint8_t *msg, size_t len)
{
	f->out = xreallocarray(f->out, f->nout + 1, sizeof *f->out);
	f->out[f->nout].kind = kind;
	f->out[f->nout].post = post;
	f->out[f->nout].msg = msg;
	f->out[f->nout].len = len;
	f->nout++;
}

/* The opens that wait (fio_push_later) go out, before anything else. */
static void
fio_later_go(struct fio *f)
{
	size_t	i;

	for (i = 0; i < f->nlater; i++)
		fio_append(f, REMOTE_OUT_CALL, 0, f->later[i].msg,
		    f->later[i].len);
	f->nlater = 0;
}

void
fio_push(struct fio *f, int kind, int post, uint8_t *msg, size_t len)
{
	fio_later_go(f);
	fio_append(f, kind, post, msg, len);
}

/*
 * The home's open of a file opened where R runs (seq, R's descriptor fd),
 * msg, sent behind: it waits, as no one needs it yet, for whatever goes
 * home next (fio_push, fio_out before a message of the agent's own), a
 * move or R's end (fio_settle), or the flush a moment later (fio_flush).
 * A close of fd meanwhile makes both moot (fio_later_cancel): sqlite3's
 * journal and its directory, opened and closed in a commit, then cost the
 * home nothing. Its reply is awaited as any call's behind. (As many wait
 * as R holds such descriptors: each at a number of P's table below
 * 64 x PTABLE_WORDS.)
 */
void
fio_push_later(struct fio *f, int fd, uint64_t seq, uint8_t *msg, size_t len)
{
	f->later = xreallocarray(f->later, f->nlater + 1, sizeof *f->later);
	f->later[f->nlater].fd = fd;
	f->later[f->nlater].seq = seq;
	f->later[f->nlater].msg = msg;
	f->later[f->nlater++].len = len;
	fio_behind_add(f, seq, -1, -1, 0, 0);
	f->stats_behind++;
}

/*
 * R closes fd: if the home's open of it still waits, it goes, and with it
 * the reply it would have had (1, its seq into *seq); 0 if it went.
 */
int
fio_later_cancel(struct fio *f, int fd, uint64_t *seq)
{
	size_t	i, j;

	for (i = 0; i < f->nlater && f->later[i].fd != fd; i++)
		;
	if (i == f->nlater)
		return 0;
	*seq = f->later[i].seq;
	free(f->later[i].msg);
	memmove(&f->later[i], &f->later[i + 1],
	    (f->nlater - i - 1) * sizeof *f->later);
	f->nlater--;
	for (j = 0; j < f->nbehind; j++) {
		if (f->behind[j].seq == *seq) {
			f->behind[j] = f->behind[--f->nbehind];
			break;
		}
	}
	f->stats_behind--;
	return 1;
}

/*
 * The next message to send: those before the call the agent sends now
 * (post 0; the opens that wait first), or after it (post 1). The caller
 * frees *msg.
 */
int
fio_out(struct fio *f, int post, int *kind, uint8_t **msg, size_t *len)
{
	size_t	i;

	if (post == 0)
		fio_later_go(f);
	for (i = 0; i < f->nout; i++) {
		if (f->out[i].post > post)
			continue;
		*kind = f->out[i].kind;
		*msg = f->out[i].msg;
		*len = f->out[i].len;
		memmove(&f->out[i], &f->out[i + 1],
		    (f->nout - i - 1) * sizeof *f->out);
		f->nout--;
		return 1;
	}
	return 0;
}

/*
 * A call written behind: its reply says only whether it failed. A write
 * charges what it may take (charge) to its file system (dev) until then.
 */
void
fio_behind_add(struct fio *f, uint64_t seq, int fd, int64_t expect,
    uint64_t dev, uint64_t charge)
{
	struct fio_fs	*fs;

	f->behind = xreallocarray(f->behind, f->nbehind + 1,
	    sizeof *f->behind);
	f->behind[f->nbehind].seq = seq;
	f->behind[f->nbehind].fd = fd;
	f->behind[f->nbehind].expect = expect;
	f->behind[f->nbehind].dev = dev;
	f->behind[f->nbehind].charge = 0;
	if (charge > 0 && (fs = room_fs(f, dev, 0)) != NULL) {
		fs->ahead += charge;
		f->behind[f->nbehind].charge = charge;
	}
	f->nbehind++;
}

/*
 * Call c (its number, name and arguments set) written behind, its failure
 * charged to fd (-1: nobody's).
 */
static void
fio_call_behind(struct fio *f, struct rmt_call *c, int fd, uint64_t *seq)
{
	uint8_t	*msg;
	size_t	 len;

	c->seq = ++*seq;
	c->vtid = f->vtid;
	c->trim_unit = 1;
	c->behind = 1;
	ptable_sent(&f->ptab, c->nr, c->args);
	marshal_pack(c, &msg, &len);
	fio_push(f, REMOTE_OUT_CALL, 0, msg, len);
	fio_behind_add(f, c->seq, fd, -1, 0, 0);
	f->stats_behind++;
}

/* An lseek of fd (to off, by whence) written behind, before the call. */
void
fio_lseek_behind(struct fio *f, int fd, int64_t off, int whence,
    uint64_t *seq)
{
	struct rmt_call	 c;

	memset(&c, 0, sizeof c);
	c.nr = SYS_lseek;
	c.name = "lseek";
	c.args[0] = fd;
	c.args[1] = (uint64_t)off;
	c.args[2] = whence;
	fio_call_behind(f, &c, fd, seq);
}

/*
 * A close of fd written behind (one opened where R runs, whose home
 * descriptor had no writes to fail): its failure is nobody's.
 */
void
fio_close_behind(struct fio *f, int fd, uint64_t *seq)
{
	struct rmt_call	 c;

	memset(&c, 0, sizeof c);
	c.nr = SYS_close;
	c.name = "close";
	c.args[0] = fd;
	fio_call_behind(f, &c, -1, seq);
}

/* The home's offset of e moves by what R took from windows. */
void
fio_settle_seek(struct fio *f, struct fio_fd *e, uint64_t *seq)
{
	if (e->seek == 0)
		return;
	fio_lseek_behind(f, e->fd, (int64_t)e->seek, SEEK_CUR, seq);
	e->seek = 0;
}

/* Forget fd: R's calls on it are no longer ours (shared.c has it). */
void
fio_drop_fd(struct fio *f, int fd)
{
	struct fio_fd	*e;

	if ((e = fio_find(f, fd)) != NULL)
		fio_forget(f, e);
}

/*
 * A file written some other way (through a descriptor opened where R
 * runs): its windows are stale.
 */
void
fio_changed(struct fio *f, uint64_t dev, uint64_t ino)
{
	fio_drop_file(f, 0, dev, ino, -1);
}

/*
 * The writes gathered go home, as one write or pwrite64 behind: before
 * any call but the next of them and a read served from another file's
 * window, before a dump of R and its end, and a moment after the last
 * (the agent's timer), so that the home has them promptly.
 */
void
fio_flush(struct fio *f, uint64_t *seq)
{
	struct rmt_region	 reg;
	struct rmt_reloc	 rel;
	struct rmt_call		 c;
	uint8_t			*msg;
	size_t			 len;

	fio_later_go(f);
	if (f->blen == 0)
		return;
	memset(&c, 0, sizeof c);
	memset(&reg, 0, sizeof reg);
	memset(&rel, 0, sizeof rel);
	reg.size = f->blen;
	reg.dir = RMT_IN;
	reg.data = f->buf;
	rel.target = 0;
	rel.arg = 1;
	c.seq = ++*seq;
	c.nr = f->bnr;
	c.name = f->bnr == SYS_write ? "write" : "pwrite64";
	c.vtid = f->bvtid;	/* its lane, if P must make it */
	c.args[0] = f->bfd;
	c.args[2] = f->blen;
	c.args[3] = f->boff;
	c.regions = &reg;
	c.nregions = 1;
	c.relocs = &rel;
	c.nrelocs = 1;
	c.total = f->blen;
	c.trim_unit = 1;
	c.behind = 1;
	c.writes = f->parts;	/* a pipe's: each write R made (pipes.c) */
	c.nwrites = f->nparts;
	marshal_pack(&c, &msg, &len);	/* which frees the region's bytes */
	f->buf = NULL;
	f->nparts = 0;
	fio_push(f, REMOTE_OUT_CALL, 0, msg, len);
	fio_behind_add(f, c.seq, f->bfd, f->blen, f->bdev,
	    f->blen + FIO_SLACK);
	f->stats_behind++;
	f->blen = 0;
}

/* Are writes gathered, or opens waiting, for the agent's timer? */
int
fio_batched(const struct fio *f)
{
	return f->blen > 0 || f->nlater > 0;
}

/*
 * Is something R wrote still on its way home: writes gathered, or a
 * write behind not answered yet (lseeks and closes behind change no
 * file)?
 */
int
fio_writing(const struct fio *f)
{
	size_t	i;

	if (f->blen > 0)
		return 1;
	for (i = 0; i < f->nbehind; i++)
		if (f->behind[i].expect >= 0)
			return 1;
	return 0;
}

/* Every offset owed goes home: before a call that may show them. */
void
fio_settle(struct fio *f, uint64_t *seq)
{
	size_t	i;

	fio_flush(f, seq);
	for (i = 0; i < f->nfds; i++)
		fio_settle_seek(f, &f->fds[i], seq);
}

/*
 * The home's answer about a descriptor; others: another thread's call on
 * it was at home meanwhile, which may have moved its offset either side.
 */
void
fio_info(struct fio *f, const Osm__RemoteFdInfo *m, int others)
{
	struct fio_fd	*e = fio_find(f, m->fd);

	if (e == NULL || e->state != FIO_ASKED)
		return;		/* closed meanwhile */
	/* its offset moved by another descriptor too: no offset of ours */
	e->readable = (m->readable && !m->shared) || m->zero;
	e->behind = m->behind;
	e->same = m->has_same ? m->same : 0;
	if (!m->regular) {
		e->state = m->pipe ? FIO_PIPE : FIO_OTHER;
		return;
	}
	e->state = FIO_KNOWN;
	e->append = m->append;
	e->alone = !m->shared;
	e->notty = m->notty;
	e->dev = m->dev;
	e->ino = m->ino;
	e->pos = m->pos;
	e->pos_known = !m->append && !others;
	if (m->has_fs_free)
		room_told(f, m->dev, m->fs_free > INT64_MAX ? INT64_MAX :
		    (int64_t)m->fs_free);
}
