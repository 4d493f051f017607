/*
 * check_remote's part for the guest's side of the read stub
 * (libremote/rstub.c): what it lets the stub serve is what fileio.c
 * would serve of a read then, and what the stub served moves the
 * guest's offset, owed home; an lseek leaves it pread64s only, a write
 * of the file nothing, threads nothing for good; and nothing is written
 * for a call R left (it may be running in the stub). And its writes: the
 * descriptor whose writes fileio.c gathers may be written in R while
 * the home has room and no failure is to be told; what R wrote there is
 * gathered, in order, read back, sent home; no read of that file is
 * served in R meanwhile.
 */
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/signal.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include <check.h>
#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "libremote/internal.h"
#include "check_remote.h"
#include "proto/remote.pb-c.h"

#define RS_FILE		(1U << 20)
#define RS_READ		(64U << 10)
#define RS_AT		0x7000000ULL	/* the shared memory "in R" */

static uint8_t	rs_file[RS_FILE];
static uint8_t	rs_buf[RS_READ];

/*
 * A child waiting in a notified getppid: g's listener, the child's pid,
 * the notification's id in *id.
 */
static pid_t
rs_waiter(struct remote *g, uint64_t *id)
{
	struct sock_filter	 prog[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
		    offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_getppid, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_USER_NOTIF),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog	 fp = { 4, prog };
	struct seccomp_notif	 n;
	struct msghdr		 msg;
	struct iovec		 iov;
	union {
		struct cmsghdr	hdr;
		char		buf[CMSG_SPACE(sizeof(int))];
	} cmsg;
	char			 c;
	int			 sv[2], fd;
	pid_t			 pid;

	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	if ((pid = fork()) == 0) {
		if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == -1 ||
		    (fd = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER,
		    SECCOMP_FILTER_FLAG_NEW_LISTENER, &fp)) == -1 ||
		    ctl_send_fd(sv[1], "l", 1, fd) != 1)
			_exit(1);
		syscall(SYS_getppid);
		_exit(0);
	}
	ck_assert_int_gt(pid, 0);
	memset(&msg, 0, sizeof msg);
	iov.iov_base = &c;
	iov.iov_len = 1;
	msg.msg_iov = &iov;
	msg.msg_iovlen = 1;
	msg.msg_control = cmsg.buf;
	msg.msg_controllen = sizeof cmsg.buf;
	ck_assert_int_eq(recvmsg(sv[0], &msg, 0), 1);
	memcpy(&g->listener, CMSG_DATA(CMSG_FIRSTHDR(&msg)), sizeof(int));
	close(sv[0]);
	close(sv[1]);
	memset(&n, 0, sizeof n);
	ck_assert_int_eq(ioctl(g->listener, SECCOMP_IOCTL_NOTIF_RECV, &n), 0);
	*id = n.id;
	return pid;
}

/* The home's answer about fd: a regular file of dev 1, inode ino. */
static void
rs_info(struct fio *f, int fd, uint64_t ino)
{
	Osm__RemoteFdInfo	info = OSM__REMOTE_FD_INFO__INIT;

	info.fd = fd;
	info.regular = info.readable = info.behind = 1;
	info.dev = 1;
	info.ino = ino;
	info.has_fs_free = 1;
	info.fs_free = 1ULL << 30;
	fio_info(f, &info, 0);
}

/*
 * fd known (inode ino): a first read of len at home, a second from a
 * window, which the home sends (*r: what was asked).
 */
static void
rs_window(struct fio *f, int fd, uint64_t ino, size_t len, uint64_t *seq,
    Osm__RemoteRead *r)
{
	Osm__RemoteReadData	d = OSM__REMOTE_READ_DATA__INIT;
	uint64_t		a[6] = { fd, (uint64_t)rs_buf, len }, args[6];
	int64_t			ret = len;
	long			rv;

	memcpy(args, a, sizeof args);
	ck_assert_int_eq(fio_call(f, getpid(), 1, SYS_read, args, 0, seq,
	    &rv), FIO_PASS);
	check_fio_drain(f, r);
	rs_info(f, fd, ino);
	fio_result(f, SYS_read, a, &ret, -1, 0);
	memcpy(args, a, sizeof args);
	ck_assert_int_eq(fio_call(f, getpid(), 2, SYS_read, args, 0, seq,
	    &rv), FIO_WAIT);
	ck_assert_uint_eq(check_fio_drain(f, r), 1);
	d.seq = r->seq;
	d.has_data = d.has_size = 1;
	d.data.data = rs_file + r->offset;
	d.data.len = r->length;
	d.size = RS_FILE;
	ck_assert_int_eq(check_fio_data(f, &d, 1, seq, &rv), 1);
	ck_assert_int_eq(rv, len);
}

START_TEST(test_rstub)
{
	Osm__RemoteRead		 r = { 0 };
	struct remote		*g = xcalloc(1, sizeof *g);
	struct rstub_shm	*shm = xcalloc(1, RSTUB_LEN);
	struct rstub_slot	*sl = &shm->slot[0];
	struct fio		*f = &g->fio;
	struct fio_fd		*e;
	uint64_t		 seq = 0, seek, args[6];
	long			 rv;
	size_t			 i;
	uint64_t		 id;
	pid_t			 child;
	int			 status;

	child = rs_waiter(g, &id);
	for (i = 0; i < RS_FILE; i++)
		rs_file[i] = (uint8_t)(i * 13 + i / 4096);

	/* fd 5 known, a first read at home, a second from a window */
	rs_window(f, 5, 2, RS_READ, &seq, &r);
	e = fio_find(f, 5);
	ck_assert_ptr_nonnull(e);
	ck_assert_uint_eq(e->pos, 2 * RS_READ);

	/* R goes on: the stub may serve fd 5 from that window */
	rstub_attach(g, shm, RS_AT);
	ck_assert_uint_eq(shm->on, 1);
	rstub_publish(g, id);
	ck_assert_int_eq(sl->fd, 5);
	ck_assert_uint_eq(sl->rok, 1);
	ck_assert_uint_eq(sl->pos, 2 * RS_READ);
	ck_assert_uint_eq(sl->woff, r.offset);
	ck_assert_uint_eq(sl->wlen, r.length);
	ck_assert_uint_eq(sl->data, RS_AT + RSTUB_DATA);
	ck_assert(memcmp((uint8_t *)shm + RSTUB_DATA, rs_file + r.offset,
	    r.length) == 0);
	ck_assert_int_eq(shm->slot[1].fd, -1);
	ck_assert_uint_eq(shm->slot[1].wlen, 0);

	/* it serves two reads of 4 KiB; R's next call brings them in */
	sl->pos += 8192;
	sl->hits += 2;
	seek = e->seek;
	rstub_sync(g);
	ck_assert_uint_eq(e->pos, 2 * RS_READ + 8192);
	ck_assert_uint_eq(e->seek, seek + 8192);
	ck_assert_uint_eq(g->stats.in_r, 2);
	rstub_sync(g);		/* nothing more */
	ck_assert_uint_eq(e->pos, 2 * RS_READ + 8192);
	ck_assert_uint_eq(g->stats.in_r, 2);

	/*
	 * an lseek from the end, which goes home (the size is the home's):
	 * what is owed is moot; the offset is unknown till it is answered:
	 * the stub may serve pread64s, no read
	 */
	uint64_t l1[6] = { 5, 0, SEEK_END };
	memcpy(args, l1, sizeof args);
	ck_assert_int_eq(fio_call(f, getpid(), 3, SYS_lseek, args, 0, &seq,
	    &rv), FIO_PASS);
	ck_assert_uint_eq(e->seek, 0);
	ck_assert_uint_eq(check_fio_drain(f, &r), 0);
	rstub_publish(g, id);
	ck_assert_int_eq(sl->fd, 5);
	ck_assert_uint_eq(sl->rok, 0);
	ck_assert_uint_eq(sl->wlen, r.length);

	/* a pread64 served: the next one on from it is a stream */
	sl->pnext = r.offset + 4096;
	sl->hits++;
	rstub_sync(g);
	ck_assert_int_eq(e->pstream, 1);
	ck_assert_uint_eq(e->pnext, r.offset + 4096);
	ck_assert_uint_eq(g->stats.in_r, 3);

	/* R writes the file: its window is gone, the stub serves nothing */
	uint64_t w1[6] = { 5, (uint64_t)rs_file, 100 };
	memcpy(args, w1, sizeof args);
	ck_assert_int_eq(fio_call(f, getpid(), 4, SYS_write, args, 0, &seq,
	    &rv), FIO_ANSWER);
	rstub_publish(g, id);
	ck_assert_int_eq(sl->fd, -1);
	ck_assert_uint_eq(sl->wlen, 0);
	ck_assert_uint_eq(shm->on, 1);

	/*
	 * R left its call (here: ended) and may run in the stub: switched
	 * off, no slot written, until a call of R's is answered so
	 */
	kill(child, SIGKILL);
	ck_assert_int_eq(waitpid(child, &status, 0), child);
	sl->fd = 7;
	rstub_publish(g, id);
	ck_assert_uint_eq(shm->on, 0);
	ck_assert_int_eq(sl->fd, 7);
	rstub_publish(g, id);
	ck_assert_uint_eq(shm->on, 0);
	ck_assert_int_eq(sl->fd, 7);
	close(g->listener);
	child = rs_waiter(g, &id);
	rstub_publish(g, id);
	ck_assert_uint_eq(shm->on, 1);
	kill(child, SIGKILL);
	waitpid(child, &status, 0);
	close(g->listener);

	/* a thread: nothing ever again */
	rstub_threaded(g);
	ck_assert_uint_eq(shm->on, 0);
	fio_free(f);
	free(g->rstub);
	free(g);
	free(shm);
}
END_TEST

/* The stub in R writes len bytes of rs_file at from into the ring. */
static void
ws_write(struct rstub_shm *shm, size_t from, size_t len)
{
	ck_assert_uint_le(shm->w.head + len, shm->w.room);
	memcpy((uint8_t *)shm + RSTUB_RING + shm->w.head, rs_file + from,
	    len);
	shm->w.head += len;
	shm->w.hits++;
}

/* The next message for home is a write behind (nr) of rs_file at from. */
static void
ws_sent(struct fio *f, int nr, size_t from, size_t len, uint64_t off)
{
	Osm__RemoteCall	*c;
	uint8_t		*msg;
	size_t		 n;
	int		 kind;

	ck_assert(fio_out(f, 1, &kind, &msg, &n));
	ck_assert_int_eq(kind, REMOTE_OUT_CALL);
	c = osm__remote_call__unpack(NULL, n, msg);
	ck_assert_ptr_nonnull(c);
	ck_assert(c->behind);
	ck_assert_int_eq(c->nr, nr);
	ck_assert_uint_eq(c->args[0], 6);
	ck_assert_uint_eq(c->args[2], len);
	if (nr == SYS_pwrite64)
		ck_assert_uint_eq(c->args[3], off);
	ck_assert_uint_eq(c->n_regions, 1);
	ck_assert_uint_eq(c->regions[0]->data.len, len);
	ck_assert(memcmp(c->regions[0]->data.data, rs_file + from, len) == 0);
	osm__remote_call__free_unpacked(c, NULL);
	free(msg);
}

START_TEST(test_wstub)
{
	Osm__RemoteRead		 r = { 0 };
	struct remote		*g = xcalloc(1, sizeof *g);
	struct rstub_shm	*shm = xcalloc(1, RSTUB_LEN);
	struct fio		*f = &g->fio;
	struct fio_fd		*e;
	uint64_t		 seq = 0, args[6], id, pos;
	int64_t			 ret, expect;
	long			 rv;
	size_t			 i;
	pid_t			 child;
	int			 status;

	child = rs_waiter(g, &id);
	for (i = 0; i < RS_FILE; i++)
		rs_file[i] = (uint8_t)(i * 13 + i / 4096);
	rstub_attach(g, shm, RS_AT);
	ck_assert_int_eq(shm->w.fd, -1);
	ck_assert_uint_eq(shm->w.ring, RS_AT + RSTUB_RING);

	/* fd 6's first write goes home with the question: no write slot */
	uint64_t w1[6] = { 6, (uint64_t)rs_file, 4096 };
	memcpy(args, w1, sizeof args);
	ck_assert_int_eq(fio_call(f, getpid(), 1, SYS_write, args, 0, &seq,
	    &rv), FIO_PASS);
	check_fio_drain(f, &r);
	rs_info(f, 6, 3);
	ret = 4096;
	fio_result(f, SYS_write, w1, &ret, 1LL << 30, 0);
	rstub_publish(g, id);
	ck_assert_int_eq(shm->w.fd, -1);

	/* its second is gathered: R may write on in the stub */
	uint64_t w2[6] = { 6, (uint64_t)rs_file + 4096, 4096 };
	memcpy(args, w2, sizeof args);
	ck_assert_int_eq(fio_call(f, getpid(), 2, SYS_write, args, 0, &seq,
	    &rv), FIO_ANSWER);
	ck_assert_int_eq(rv, 4096);
	rstub_publish(g, id);
	ck_assert_int_eq(shm->w.fd, 6);
	ck_assert_uint_eq(shm->w.nr, SYS_write);
	ck_assert_uint_eq(shm->w.head, 0);
	ck_assert_uint_eq(shm->w.room, RSTUB_RING_BYTES);
	ck_assert_uint_ne(shm->w.deadline, 0);
	ck_assert(rstub_batched(g));

	/* three writes in R; R's next call takes them in, in order */
	ws_write(shm, 8192, 4096);
	ws_write(shm, 12288, 4096);
	ws_write(shm, 16384, 4096);
	rstub_sync(g);
	e = fio_find(f, 6);
	ck_assert_ptr_nonnull(e);
	ck_assert_uint_eq(e->pos, 20480);
	ck_assert_uint_eq(f->blen, 16384);
	ck_assert_uint_eq(g->stats.w_in_r, 3);
	rstub_sync(g);		/* nothing more */
	ck_assert_uint_eq(f->blen, 16384);
	ck_assert_uint_eq(g->stats.w_in_r, 3);
	/* read back from what R wrote, the writes still gathered */
	uint64_t p1[6] = { 6, (uint64_t)rs_buf, 4096, 12288 };
	memcpy(args, p1, sizeof args);
	ck_assert_int_eq(fio_call(f, getpid(), 3, SYS_pread64, args, 0, &seq,
	    &rv), FIO_ANSWER);
	ck_assert_int_eq(rv, 4096);
	ck_assert(memcmp(rs_buf, rs_file + 12288, 4096) == 0);
	fio_flush(f, &seq);
	ws_sent(f, SYS_write, 4096, 16384, 0);
	ck_assert_uint_eq(check_fio_drain(f, &r), 0);

	/* fd 6 goes on at 1 MiB */
	uint64_t l1[6] = { 6, 1U << 20, SEEK_SET };
	memcpy(args, l1, sizeof args);
	ck_assert_int_eq(fio_call(f, getpid(), 40, SYS_lseek, args, 0, &seq,
	    &rv), FIO_ANSWER);
	ck_assert_int_eq(rv, 1 << 20);
	memcpy(args, w2, sizeof args);
	ck_assert_int_eq(fio_call(f, getpid(), 41, SYS_write, args, 0, &seq,
	    &rv), FIO_ANSWER);

	/*
	 * another descriptor of the file, read at home and read ahead: read
	 * in R but for what the ring holds (wsame), and its window kept by
	 * writes in R elsewhere in the file
	 */
	rs_window(f, 5, 3, 4096, &seq, &r);
	rstub_publish(g, id);
	ck_assert_int_eq(shm->w.fd, 6);
	ck_assert_uint_eq(shm->w.base, (1U << 20) + 4096);
	ck_assert_int_eq(shm->slot[0].fd, 5);
	ck_assert_uint_eq(shm->slot[0].wsame, 1);
	ck_assert_uint_lt(r.offset + r.length, 1U << 20);
	ws_write(shm, 0, 4096);
	rstub_sync(g);
	e = fio_find(f, 5);
	ck_assert_ptr_nonnull(e->win.buf);
	rstub_publish(g, id);
	ck_assert_int_eq(shm->slot[0].fd, 5);
	/* the file's bytes the window holds, written: it goes */
	fio_drop_range(f, 1, 3, 6, r.offset + r.length - 1, 100);
	ck_assert_ptr_null(e->win.buf);
	rstub_publish(g, id);
	ck_assert_int_eq(shm->slot[0].fd, -1);
	e = fio_find(f, 6);
	fio_flush(f, &seq);
	ck_assert_uint_eq(check_fio_drain(f, &r), 1);

	/* little room at home: no write in R, till there is again */
	room_told(f, 1, 4U << 20);
	rstub_publish(g, id);
	ck_assert_int_eq(shm->w.fd, -1);
	room_told(f, 1, 1LL << 30);
	rstub_publish(g, id);
	ck_assert_int_eq(shm->w.fd, 6);

	/* a pwrite64 gathered: the next where it ended */
	uint64_t q1[6] = { 6, (uint64_t)rs_file + 65536, 4096, 65536 };
	memcpy(args, q1, sizeof args);
	ck_assert_int_eq(fio_call(f, getpid(), 6, SYS_pwrite64, args, 0, &seq,
	    &rv), FIO_ANSWER);
	rstub_publish(g, id);
	ck_assert_int_eq(shm->w.fd, 6);
	ck_assert_uint_eq(shm->w.nr, SYS_pwrite64);
	ck_assert_uint_eq(shm->w.base, 65536 + 4096);
	ws_write(shm, 69632, 8192);
	rstub_sync(g);
	ck_assert_uint_eq(e->pos, (1U << 20) + 8192);	/* pwrite64s: none */
	uint64_t p2[6] = { 6, (uint64_t)rs_buf, 4096, 73728 };
	memcpy(args, p2, sizeof args);
	ck_assert_int_eq(fio_call(f, getpid(), 7, SYS_pread64, args, 0, &seq,
	    &rv), FIO_ANSWER);
	ck_assert(memcmp(rs_buf, rs_file + 73728, 4096) == 0);
	fio_flush(f, &seq);
	ws_sent(f, SYS_pwrite64, 65536, 12288, 65536);

	/*
	 * it fails at home: the stub writes no more at once (R runs), nor
	 * from R's next call on, which tells the failure
	 */
	rstub_publish(g, id);
	ck_assert_int_eq(shm->w.fd, 6);
	/* (the second, the lseek to 1 MiB that R owed its offset) */
	ck_assert_uint_eq(f->nbehind, 5);
	ck_assert_int_eq(f->behind[1].expect, -1);
	ck_assert_int_eq(fio_behind_reply(f, f->behind[2].seq, -ENOSPC, -1,
	    &expect), 1);
	rstub_failed(g);
	ck_assert_uint_eq(shm->w.deadline, 0);
	rstub_publish(g, id);
	ck_assert_int_eq(shm->w.fd, -1);
	memcpy(args, w2, sizeof args);
	ck_assert_int_eq(fio_call(f, getpid(), 8, SYS_write, args, 0, &seq,
	    &rv), FIO_ANSWER);
	ck_assert_int_eq(rv, -ENOSPC);
	/* R left that call for a signal: it is told again when it makes it */
	rstub_unanswered(g, SYS_write, w2, rv);
	memcpy(args, w2, sizeof args);
	ck_assert_int_eq(fio_call(f, getpid(), 8, SYS_write, args, 0, &seq,
	    &rv), FIO_ANSWER);
	ck_assert_int_eq(rv, -ENOSPC);

	/* while R runs, the agent's timer takes in what it wrote */
	memcpy(args, w2, sizeof args);
	ck_assert_int_eq(fio_call(f, getpid(), 9, SYS_write, args, 0, &seq,
	    &rv), FIO_ANSWER);
	rstub_publish(g, id);
	ck_assert_int_eq(shm->w.fd, 6);
	fio_flush(f, &seq);
	ws_sent(f, SYS_write, 4096, 4096, 0);
	ws_write(shm, 0, 4096);
	ck_assert(rstub_batched(g));
	remote_flush(g);
	ws_sent(f, SYS_write, 0, 4096, 0);
	ws_write(shm, 4096, 100);
	remote_flush(g);
	ws_sent(f, SYS_write, 4096, 100, 0);

	/*
	 * R stopped in a call of a signal handler's, called while a write
	 * was half way in the stub: the ring stays as it is, for that
	 * write to land where it saw head; nothing more is written there
	 */
	rstub_publish(g, id);
	ck_assert_uint_eq(shm->w.head, 0);
	ws_write(shm, 0, 200);
	shm->w.head |= RSTUB_WBUSY;
	rstub_publish(g, id);
	ck_assert_int_eq(shm->w.fd, 6);
	ck_assert_uint_eq(shm->w.head, RSTUB_WBUSY | 200);
	ck_assert_uint_eq(shm->w.deadline, 0);
	fio_flush(f, &seq);
	ws_sent(f, SYS_write, 0, 200, 0);
	memcpy((uint8_t *)shm + RSTUB_RING + 200, rs_file + 500, 50);
	shm->w.head = 250;	/* its commit */
	rstub_sync(g);
	fio_flush(f, &seq);
	ws_sent(f, SYS_write, 500, 50, 0);
	rstub_publish(g, id);
	ck_assert_uint_eq(shm->w.head, 0);
	ck_assert_uint_ne(shm->w.deadline, 0);

	/*
	 * R left a write gathered for a signal (the answer was for nobody):
	 * undone, the stub off till a call is answered; made again, once
	 */
	pos = e->pos;
	memcpy(args, w2, sizeof args);
	ck_assert_int_eq(fio_call(f, getpid(), 10, SYS_write, args, 0, &seq,
	    &rv), FIO_ANSWER);
	ck_assert_uint_eq(f->blen, 4096);
	ck_assert_uint_eq(e->pos, pos + 4096);
	rstub_unanswered(g, SYS_write, w2, rv);
	ck_assert_uint_eq(f->blen, 0);
	ck_assert_uint_eq(e->pos, pos);
	ck_assert_uint_eq(shm->on, 0);
	memcpy(args, w2, sizeof args);
	ck_assert_int_eq(fio_call(f, getpid(), 11, SYS_write, args, 0, &seq,
	    &rv), FIO_ANSWER);
	rstub_publish(g, id);
	ck_assert_uint_eq(shm->on, 1);
	fio_flush(f, &seq);
	ws_sent(f, SYS_write, 4096, 4096, 0);
	ck_assert_uint_eq(e->pos, pos + 4096);

	/* a thread: what R wrote is taken in, and nothing more in R */
	ws_write(shm, 8192, 300);
	rstub_threaded(g);
	ck_assert_uint_eq(shm->on, 0);
	fio_flush(f, &seq);
	ws_sent(f, SYS_write, 8192, 300, 0);
	ck_assert_uint_eq(g->stats.w_in_r, 9);

	kill(child, SIGKILL);
	waitpid(child, &status, 0);
	close(g->listener);
	fio_free(f);
	free(g->rstub);
	free(g);
	free(shm);
}
END_TEST

void
check_remote_rstub(Suite *s)
{
	TCase	*tc = tcase_create("rstub");

	tcase_add_test(tc, test_rstub);
	tcase_add_test(tc, test_wstub);
	suite_add_tcase(s, tc);
}
