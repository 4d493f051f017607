/*
 * Check suite for libremote/, calls carried through the whole path: this
 * process plays R (its own memory read and written with process_vm_*),
 * the guest and the home (it executes the calls itself); then the
 * loopback harness (tests/remote/loopback.c) runs the test programs of
 * tests/remote/ under the real filter.
 */
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <sys/wait.h>

#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

#include "libremote/internal.h"
#include "proto/remote.pb-c.h"

#define SCRATCH		(RMT_CALL_MAX + (1U << 20))

static uint8_t	*scratch;

static void
scratch_setup(void)
{
	scratch = mmap(NULL, SCRATCH, PROT_READ | PROT_WRITE,
	    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	ck_assert_ptr_ne(scratch, MAP_FAILED);
}

static void
scratch_teardown(void)
{
	munmap(scratch, SCRATCH);
}

/* --- calls carried through the whole path ----------------------------- */

/*
 * Call nr through marshal, home and guest, this process being R (its own
 * memory read and written with process_vm_*) and the home (the call is
 * executed here on the laid-out scratch area).
 */
static long
through(int nr, uint64_t a0, uint64_t a1, uint64_t a2, uint64_t a3,
    uint64_t a4, uint64_t a5)
{
	uint64_t		 args[6] = { a0, a1, a2, a3, a4, a5 };
	struct table_call	 tc;
	struct rmt_call		 c;
	struct home_call	*hc;
	Osm__RemoteReply	*r;
	const char		*why = NULL;
	char			*cause = NULL;
	uint8_t			*msg, *rmsg;
	size_t			 len, rlen;
	int64_t			 ret;
	long			 sys;

	table_resolve(nr, args, getpid(), &tc);
	ck_assert_int_eq(tc.class, RMT_FORWARD);
	ck_assert_int_eq(marshal_call(getpid(), &tc, args, &c, &why, &cause),
	    MARSHAL_OK);
	c.seq = 77;
	marshal_pack(&c, &msg, &len);
	hc = home_check(msg, len, getpid(), &cause);
	ck_assert_msg(hc != NULL, "%s", cause);
	ck_assert_int_eq(hc->nr, nr);
	ck_assert_int_eq(home_layout(hc, (uintptr_t)scratch, SCRATCH, &cause),
	    0);
	/* nothing of the caller's memory may reach the home's registers */
	memset(scratch, 0xa5, hc->span);
	memcpy(scratch, hc->image, hc->image_len);
	sys = syscall(hc->nr, hc->args[0], hc->args[1], hc->args[2],
	    hc->args[3], hc->args[4], hc->args[5]);
	if (sys == -1)
		sys = -errno;
	ck_assert_int_eq(home_reply(hc, sys, scratch, home_readback(hc, sys),
	    &rmsg, &rlen, &cause), 0);
	r = osm__remote_reply__unpack(NULL, rlen, rmsg);
	ck_assert_ptr_nonnull(r);
	ck_assert_msg(remote_apply(getpid(), &c, r, &ret, &cause) == 0, "%s",
	    cause);
	osm__remote_reply__free_unpacked(r, NULL);
	home_free(hc);
	marshal_free(&c);
	free(msg);
	free(rmsg);
	return ret;
}

#define T1(nr, a)		through(nr, (uintptr_t)(a), 0, 0, 0, 0, 0)
#define T2(nr, a, b)		through(nr, (uintptr_t)(a), (uintptr_t)(b), \
				    0, 0, 0, 0)
#define T3(nr, a, b, c)		through(nr, (uintptr_t)(a), (uintptr_t)(b), \
				    (uintptr_t)(c), 0, 0, 0)
#define T4(nr, a, b, c, d)	through(nr, (uintptr_t)(a), (uintptr_t)(b), \
				    (uintptr_t)(c), (uintptr_t)(d), 0, 0)

START_TEST(test_read_write)
{
	char	 buf[32];
	int	 p[2];
	char	*big;

	ck_assert_int_eq(pipe(p), 0);
	ck_assert_int_eq(T3(SYS_write, p[1], "hello", 5), 5);
	memset(buf, '#', sizeof buf);
	ck_assert_int_eq(T3(SYS_read, p[0], buf, sizeof buf), 5);
	ck_assert(memcmp(buf, "hello#", 6) == 0);	/* trimmed */
	ck_assert_int_eq(T3(SYS_read, -1, buf, 4), -EBADF);
	/* unreadable memory: EFAULT, after the checks that come first */
	ck_assert_int_eq(T3(SYS_write, p[1], 8, 4), -EFAULT);
	ck_assert_int_eq(T3(SYS_write, -1, 8, 4), -EBADF);
	ck_assert_int_eq(write(p[1], "abc", 3), 3);
	ck_assert_int_eq(T3(SYS_read, p[0], 8, 3), -EFAULT);
	close(p[0]);
	close(p[1]);

	/* a read longer than RMT_IO_MAX is cut, as read(2) may be */
	p[0] = open("/dev/zero", O_RDONLY);
	big = mmap(NULL, 3 * RMT_IO_MAX, PROT_READ | PROT_WRITE,
	    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ck_assert_ptr_ne(big, MAP_FAILED);
	memset(big, 1, 3 * RMT_IO_MAX);
	ck_assert_int_eq(T3(SYS_read, p[0], big, 3 * RMT_IO_MAX), RMT_IO_MAX);
	ck_assert_int_eq(big[RMT_IO_MAX - 1], 0);
	ck_assert_int_eq(big[RMT_IO_MAX], 1);
	munmap(big, 3 * RMT_IO_MAX);
	close(p[0]);
}
END_TEST

START_TEST(test_openat_fstat)
{
	struct stat	 a, b;
	char		 cwd[PATH_MAX], name[PATH_MAX + 8];
	int		 fd;

	fd = T4(SYS_openat, AT_FDCWD, "/proc/self/status", O_RDONLY, 0);
	ck_assert_int_ge(fd, 0);
	/* "self" is the caller: this process, which executed it */
	ck_assert_int_eq(T2(SYS_fstat, fd, &a), 0);
	ck_assert_int_eq(fstat(fd, &b), 0);
	ck_assert(memcmp(&a, &b, sizeof a) == 0);
	close(fd);
	ck_assert_int_eq(T4(SYS_openat, AT_FDCWD, "/nonexistent", O_RDONLY, 0),
	    -ENOENT);
	ck_assert_int_eq(T4(SYS_openat, AT_FDCWD, NULL, O_RDONLY, 0), -EFAULT);
	memset(name, 'x', sizeof name - 1);
	name[sizeof name - 1] = '\0';
	ck_assert_int_eq(T4(SYS_openat, AT_FDCWD, name, O_RDONLY, 0),
	    -ENAMETOOLONG);
	memset(cwd, '#', sizeof cwd);
	ck_assert_int_eq(T2(SYS_getcwd, cwd, sizeof cwd),
	    (long)strlen(getcwd(name, sizeof name)) + 1);
	ck_assert_str_eq(cwd, name);
	ck_assert_int_eq(cwd[strlen(name) + 1], '#');
}
END_TEST

START_TEST(test_readv_writev)
{
	char		 a[3], b[5], c[16];
	struct iovec	 out[3] = { { "one", 3 }, { "two", 3 },
	    { "three", 5 } };
	struct iovec	 in[3] = { { a, 3 }, { b, 5 }, { c, 16 } };
	struct iovec	 bad[1] = { { (void *)8, 4 } };
	int		 p[2];

	ck_assert_int_eq(pipe(p), 0);
	ck_assert_int_eq(T3(SYS_writev, p[1], out, 3), 11);
	memset(c, '#', sizeof c);
	ck_assert_int_eq(T3(SYS_readv, p[0], in, 3), 11);
	ck_assert(memcmp(a, "one", 3) == 0);
	ck_assert(memcmp(b, "twoth", 5) == 0);
	ck_assert(memcmp(c, "ree#", 4) == 0);
	/* our iovec array is not touched */
	ck_assert_ptr_eq(in[1].iov_base, b);
	ck_assert_uint_eq(in[2].iov_len, 16);
	ck_assert_int_eq(T3(SYS_writev, p[1], bad, 1), -EFAULT);
	ck_assert_int_eq(T3(SYS_writev, p[1], out, 2000), -EINVAL);
	close(p[0]);
	close(p[1]);
}
END_TEST

static socklen_t
abstract(struct sockaddr_un *sun, const char *tag)
{
	memset(sun, 0, sizeof *sun);
	sun->sun_family = AF_UNIX;
	snprintf(sun->sun_path + 1, sizeof sun->sun_path - 1,
	    "check-forward-%s-%ld", tag, (long)getpid());
	return offsetof(struct sockaddr_un, sun_path) + 1 +
	    strlen(sun->sun_path + 1);
}

START_TEST(test_recvmsg)
{
	struct sockaddr_un	 sa, sb, from;
	socklen_t		 la, lb;
	char			 x[4], y[32];
	struct iovec		 iov[2] = { { x, 4 }, { y, 32 } };
	union {
		struct cmsghdr	 h;
		char		 buf[64];
	}			 ctl;
	struct msghdr		 msg, smsg;
	struct cmsghdr		*cm;
	struct iovec		 siov = { "with rights", 11 };
	int			 a, b, p[2], got;

	la = abstract(&sa, "a");
	lb = abstract(&sb, "b");
	a = socket(AF_UNIX, SOCK_DGRAM, 0);
	b = socket(AF_UNIX, SOCK_DGRAM, 0);
	ck_assert_int_eq(bind(a, (struct sockaddr *)&sa, la), 0);
	ck_assert_int_eq(bind(b, (struct sockaddr *)&sb, lb), 0);
	ck_assert_int_eq(pipe(p), 0);

	/* sendmsg natively, with a name and an fd */
	memset(&smsg, 0, sizeof smsg);
	memset(&ctl, 0, sizeof ctl);
	smsg.msg_name = &sa;
	smsg.msg_namelen = la;
	smsg.msg_iov = &siov;
	smsg.msg_iovlen = 1;
	smsg.msg_control = ctl.buf;
	smsg.msg_controllen = CMSG_SPACE(sizeof(int));
	cm = CMSG_FIRSTHDR(&smsg);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &p[1], sizeof(int));
	ck_assert_int_eq(T3(SYS_sendmsg, b, &smsg, 0), 11);

	memset(&msg, 0, sizeof msg);
	memset(&ctl, 0x5a, sizeof ctl);
	memset(&from, 0x5a, sizeof from);
	memset(y, '#', sizeof y);
	msg.msg_name = &from;
	msg.msg_namelen = sizeof from;
	msg.msg_iov = iov;
	msg.msg_iovlen = 2;
	msg.msg_control = ctl.buf;
	msg.msg_controllen = sizeof ctl.buf;
	ck_assert_int_eq(T3(SYS_recvmsg, a, &msg, MSG_CMSG_CLOEXEC), 11);
	ck_assert(memcmp(x, "with", 4) == 0);
	ck_assert(memcmp(y, " rights#", 8) == 0);
	/* the kernel's lengths, our pointers */
	ck_assert_ptr_eq(msg.msg_name, &from);
	ck_assert_ptr_eq(msg.msg_iov, iov);
	ck_assert_ptr_eq(msg.msg_control, ctl.buf);
	ck_assert_uint_eq(msg.msg_iovlen, 2);
	ck_assert_uint_eq(msg.msg_namelen, lb);
	ck_assert(memcmp(&from, &sb, lb) == 0);
	/* past the name the kernel wrote, what we had */
	ck_assert_int_eq(((unsigned char *)&from)[lb], 0x5a);
	ck_assert_uint_eq(msg.msg_controllen, CMSG_SPACE(sizeof(int)));
	ck_assert_int_eq((unsigned char)ctl.buf[CMSG_SPACE(sizeof(int))],
	    0x5a);
	cm = CMSG_FIRSTHDR(&msg);
	ck_assert_ptr_nonnull(cm);
	ck_assert_int_eq(cm->cmsg_type, SCM_RIGHTS);
	memcpy(&got, CMSG_DATA(cm), sizeof got);
	ck_assert_int_eq(fcntl(got, F_GETFD), FD_CLOEXEC);
	ck_assert_int_eq(write(got, "!", 1), 1);
	ck_assert_int_eq(read(p[0], x, 4), 1);
	close(got);
	close(p[0]);
	close(p[1]);
	close(a);
	close(b);
}
END_TEST

START_TEST(test_mmsg)
{
	struct mmsghdr	 out[2], in[3];
	struct iovec	 oi[2] = { { "first", 5 }, { "second!", 7 } };
	char		 b0[8], b1[3], b2[8];
	struct iovec	 ii[3] = { { b0, 8 }, { b1, 3 }, { b2, 8 } };
	int		 sv[2], i;

	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_DGRAM, 0, sv), 0);
	memset(out, 0, sizeof out);
	for (i = 0; i < 2; i++) {
		out[i].msg_hdr.msg_iov = &oi[i];
		out[i].msg_hdr.msg_iovlen = 1;
		out[i].msg_len = 99;
	}
	ck_assert_int_eq(T4(SYS_sendmmsg, sv[0], out, 2, 0), 2);
	ck_assert_uint_eq(out[0].msg_len, 5);
	ck_assert_uint_eq(out[1].msg_len, 7);
	ck_assert_ptr_eq(out[1].msg_hdr.msg_iov, &oi[1]);

	memset(in, 0, sizeof in);
	memset(b1, '#', sizeof b1);
	memset(b2, '#', sizeof b2);
	for (i = 0; i < 3; i++) {
		in[i].msg_hdr.msg_iov = &ii[i];
		in[i].msg_hdr.msg_iovlen = 1;
	}
	ck_assert_int_eq(through(SYS_recvmmsg, sv[1], (uintptr_t)in, 3,
	    MSG_DONTWAIT, 0, 0), 2);
	ck_assert_uint_eq(in[0].msg_len, 5);
	ck_assert_uint_eq(in[1].msg_len, 3);
	ck_assert_int_ne(in[1].msg_hdr.msg_flags & MSG_TRUNC, 0);
	ck_assert(memcmp(b0, "first", 5) == 0);
	ck_assert(memcmp(b1, "sec", 3) == 0);
	ck_assert_int_eq(b2[0], '#');		/* no third message */
	ck_assert_ptr_eq(in[0].msg_hdr.msg_iov, &ii[0]);
	close(sv[0]);
	close(sv[1]);
}
END_TEST

START_TEST(test_poll)
{
	struct pollfd	pfd[2];
	int		p[2];

	ck_assert_int_eq(pipe(p), 0);
	pfd[0].fd = p[0];
	pfd[0].events = POLLIN;
	pfd[0].revents = 0x7777;
	pfd[1].fd = p[1];
	pfd[1].events = POLLOUT;
	pfd[1].revents = 0x7777;
	ck_assert_int_eq(T3(SYS_poll, pfd, 2, 0), 1);
	ck_assert_int_eq(pfd[0].revents, 0);
	ck_assert_int_eq(pfd[1].revents, POLLOUT);
	ck_assert_int_eq(write(p[1], "x", 1), 1);
	ck_assert_int_eq(T3(SYS_poll, pfd, 2, 1000), 2);
	ck_assert_int_eq(pfd[0].revents, POLLIN);
	close(p[0]);
	close(p[1]);
}
END_TEST

START_TEST(test_ioctl_tcgets)
{
	unsigned char	 a[64], b[64];
	int		 m, s, n;

	m = posix_openpt(O_RDWR | O_NOCTTY);
	ck_assert_int_ge(m, 0);
	ck_assert_int_eq(unlockpt(m), 0);
	s = open(ptsname(m), O_RDWR | O_NOCTTY);
	ck_assert_int_ge(s, 0);
	memset(a, 0xee, sizeof a);
	memset(b, 0xee, sizeof b);
	ck_assert_int_eq(T3(SYS_ioctl, s, TCGETS, a), 0);
	ck_assert_int_eq(ioctl(s, TCGETS, b), 0);
	ck_assert(memcmp(a, b, sizeof a) == 0);
	ck_assert_int_eq(a[36], 0xee);		/* the kernel's 36 bytes */
	ck_assert_int_eq(T3(SYS_ioctl, m, TIOCGPTN, &n), 0);
	ck_assert_str_eq(ptsname(m) + strlen("/dev/pts/"),
	    (snprintf((char *)b, sizeof b, "%d", n), (char *)b));
	ck_assert_int_eq(T3(SYS_ioctl, -1, TCGETS, a), -EBADF);
	close(s);
	close(m);
}
END_TEST

START_TEST(test_getdents64)
{
	char		 a[8192], b[8192];
	struct dirent64	*da, *db;
	long		 n, off;
	int		 fd;

	fd = open("/proc/self", O_RDONLY | O_DIRECTORY);
	ck_assert_int_ge(fd, 0);
	memset(a, 0x33, sizeof a);
	memset(b, 0x33, sizeof b);
	n = T3(SYS_getdents64, fd, a, sizeof a);
	ck_assert_int_gt(n, 0);
	ck_assert_int_eq(lseek(fd, 0, SEEK_SET), 0);
	ck_assert_int_eq(syscall(SYS_getdents64, fd, b, sizeof b), n);
	/* record by record: the kernel does not write their padding */
	for (off = 0; off < n; off += da->d_reclen) {
		da = (struct dirent64 *)(a + off);
		db = (struct dirent64 *)(b + off);
		ck_assert_uint_eq(da->d_ino, db->d_ino);
		ck_assert_uint_eq(da->d_off, db->d_off);
		ck_assert_uint_eq(da->d_reclen, db->d_reclen);
		ck_assert_uint_eq(da->d_type, db->d_type);
		ck_assert_str_eq(da->d_name, db->d_name);
	}
	ck_assert_int_eq(off, n);
	ck_assert_int_eq(a[n], 0x33);
	ck_assert_int_eq(T3(SYS_getdents64, fd, a, sizeof a), 0);
	close(fd);
}
END_TEST

START_TEST(test_fcntl_getlk)
{
	struct flock	 fl;
	char		 path[] = "/tmp/check_forward.lock.XXXXXX";
	int		 fd, p[2];
	pid_t		 pid;
	char		 c;

	fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(pipe(p), 0);
	if ((pid = fork()) == 0) {
		memset(&fl, 0, sizeof fl);
		fl.l_type = F_WRLCK;
		fl.l_whence = SEEK_SET;
		fl.l_start = 100;
		fl.l_len = 10;
		if (fcntl(fd, F_SETLK, &fl) != 0)
			_exit(10 + errno);
		if (write(p[1], "k", 1) != 1)
			_exit(1);
		pause();		/* until killed */
		_exit(0);
	}
	close(p[1]);
	ck_assert_int_eq(read(p[0], &c, 1), 1);
	memset(&fl, 0, sizeof fl);
	fl.l_type = F_RDLCK;
	fl.l_whence = SEEK_SET;
	fl.l_len = 0;
	ck_assert_int_eq(T3(SYS_fcntl, fd, F_GETLK, &fl), 0);
	ck_assert_int_eq(fl.l_type, F_WRLCK);
	ck_assert_int_eq(fl.l_start, 100);
	ck_assert_int_eq(fl.l_len, 10);
	ck_assert_int_eq(fl.l_pid, pid);
	ck_assert_int_eq(T3(SYS_fcntl, fd, F_GETFD, 0), 0);
	ck_assert_int_eq(T3(SYS_fcntl, fd, F_SETFD, FD_CLOEXEC), 0);
	ck_assert_int_eq(fcntl(fd, F_GETFD), FD_CLOEXEC);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	close(p[0]);
	close(fd);
	unlink(path);
}
END_TEST

START_TEST(test_going_home)
{
	struct table_call	 tc;
	struct rmt_call		 c;
	const char		*why = NULL;
	char			*cause = NULL;
	sigset_t		 mask;
	uint64_t		 args[6] = { 0, 0, 0, 0, (uintptr_t)&mask, 8 };

	/*
	 * a wait's signal mask stays with the call, read out of its memory,
	 * and the wait goes home without it
	 */
	sigemptyset(&mask);
	sigaddset(&mask, SIGUSR1);
	sigaddset(&mask, SIGCHLD);
	table_resolve(SYS_ppoll, (uint64_t[6]){ 0, 0, 0, (uintptr_t)&mask, 8,
	    0 }, 0, &tc);
	ck_assert_int_eq(tc.class, RMT_FORWARD);
	ck_assert_int_eq(marshal_call(getpid(), &tc, (uint64_t[6]){ 0, 0, 0,
	    (uintptr_t)&mask, 8, 0 }, &c, &why, &cause), MARSHAL_OK);
	ck_assert(c.has_mask);
	ck_assert_uint_eq(c.mask, (1ULL << (SIGUSR1 - 1)) |
	    (1ULL << (SIGCHLD - 1)));
	ck_assert_uint_eq(c.args[3], 0);
	marshal_free(&c);
	table_resolve(SYS_epoll_pwait, args, 0, &tc);
	ck_assert_int_eq(marshal_call(getpid(), &tc, args, &c, &why, &cause),
	    MARSHAL_OK);
	ck_assert(c.has_mask && c.args[4] == 0);
	marshal_free(&c);
	/* one of a size the kernel would refuse goes home, to be refused */
	args[5] = 16;
	ck_assert_int_eq(marshal_call(getpid(), &tc, args, &c, &why, &cause),
	    MARSHAL_HOME);
	ck_assert_str_eq(why, "wait with a signal mask of an odd size");
	/* a wait without one has none */
	table_resolve(SYS_ppoll, (uint64_t[6]){ 0 }, 0, &tc);
	ck_assert_int_eq(marshal_call(getpid(), &tc, (uint64_t[6]){ 0 }, &c,
	    &why, &cause), MARSHAL_OK);
	ck_assert(!c.has_mask);
	marshal_free(&c);
	/* and so does a call bigger than any scratch area */
	table_resolve(SYS_setsockopt, (uint64_t[6]){ 0, 1, 2,
	    (uintptr_t)scratch, RMT_CALL_MAX + 1, 0 }, 0, &tc);
	ck_assert_int_eq(marshal_call(getpid(), &tc, (uint64_t[6]){ 0, 1, 2,
	    (uintptr_t)scratch, RMT_CALL_MAX + 1, 0 }, &c, &why, &cause),
	    MARSHAL_HOME);
	ck_assert_str_eq(why, "arguments too large to forward");
}
END_TEST

/* --- the loopback programs ------------------------------------------- */

static char	 here[PATH_MAX];

/* Run the loopback on a program; its exit status, its output in *out. */
static int
loopback(char **out, const char *prog, const char *opt, const char *arg)
{
	char	 harness[PATH_MAX + 16], path[PATH_MAX + 16], buf[4096];
	char	*argv[6], *s = xstrdup("");
	size_t	 len = 0;
	ssize_t	 n;
	pid_t	 pid;
	int	 p[2], status, i = 0;

	if (here[0] == '\0') {
		ck_assert_int_gt(readlink("/proc/self/exe", here,
		    sizeof here - 1), 0);
		dirname(here);
	}
	snprintf(harness, sizeof harness, "%s/loopback", here);
	snprintf(path, sizeof path, "%s/remote/%s", here, prog);
	argv[i++] = harness;
	if (opt != NULL) {
		argv[i++] = "-b";
		argv[i++] = (char *)opt;
	}
	argv[i++] = path;
	argv[i++] = (char *)arg;
	argv[i] = NULL;
	ck_assert_int_eq(pipe(p), 0);
	if ((pid = fork()) == 0) {
		dup2(p[1], 1);
		dup2(p[1], 2);
		close(p[0]);
		close(p[1]);
		execv(harness, argv);
		_exit(126);
	}
	close(p[1]);
	while ((n = read(p[0], buf, sizeof buf)) > 0) {
		s = xreallocarray(s, len + n + 1, 1);
		memcpy(s + len, buf, n);
		len += n;
		s[len] = '\0';
	}
	close(p[0]);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	*out = s;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

static void
loopback_pass(const char *prog, const char *opt, const char *arg)
{
	char	*out, want[64];
	int	 rv;

	rv = loopback(&out, prog, opt, arg);
	snprintf(want, sizeof want, "PASS %s\n", prog);
	ck_assert_msg(rv == 0 && strstr(out, want) != NULL,
	    "%s exited %d:\n%s", prog, rv, out);
	free(out);
}

START_TEST(test_loopback_files)
{
	char	dir[] = "/tmp/check_forward.XXXXXX";

	ck_assert_ptr_nonnull(mkdtemp(dir));
	loopback_pass("files", NULL, dir);
	ck_assert_int_eq(rmdir(dir), 0);	/* and it left nothing */
}
END_TEST

START_TEST(test_loopback_pipe)
{
	loopback_pass("pipe", NULL, NULL);
}
END_TEST

START_TEST(test_loopback_sock)
{
	loopback_pass("sock", NULL, NULL);
}
END_TEST

START_TEST(test_loopback_pty)
{
	loopback_pass("pty", NULL, NULL);
}
END_TEST

START_TEST(test_loopback_cpu)
{
	/* 1000 s used before, as user time */
	loopback_pass("cpu", "1000000000000", "1000");
}
END_TEST

START_TEST(test_loopback_home)
{
	static const char *cases[][2] = {
		{ "fork", "loopback: HOME clone: new process\n" },
		{ "mmap", "loopback: HOME mmap: writable shared file "
		    "mapping\n" },
		{ "ioctl", "loopback: HOME ioctl: unlisted ioctl request\n" },
		{ "i386", "loopback: HOME foreign: not an x86_64 system "
		    "call\n" },
		{ "unknown", "loopback: HOME unknown: unknown system call\n" },
		{ "pselect", "loopback: HOME pselect6: wait with a signal "
		    "mask of an odd size\n" },
	};
	char	*out;
	size_t	 i;
	int	 rv;

	for (i = 0; i < nitems(cases); i++) {
		rv = loopback(&out, "home", NULL, cases[i][0]);
		ck_assert_msg(rv == 3 && strstr(out, cases[i][1]) != NULL &&
		    strstr(out, "returned") == NULL, "%s exited %d:\n%s",
		    cases[i][0], rv, out);
		free(out);
	}
}
END_TEST

static Suite *
forward_suite(void)
{
	Suite	*s = suite_create("forward");
	TCase	*tc;

	tc = tcase_create("through");
	tcase_add_checked_fixture(tc, scratch_setup, scratch_teardown);
	tcase_add_test(tc, test_read_write);
	tcase_add_test(tc, test_openat_fstat);
	tcase_add_test(tc, test_readv_writev);
	tcase_add_test(tc, test_recvmsg);
	tcase_add_test(tc, test_mmsg);
	tcase_add_test(tc, test_poll);
	tcase_add_test(tc, test_ioctl_tcgets);
	tcase_add_test(tc, test_getdents64);
	tcase_add_test(tc, test_fcntl_getlk);
	tcase_add_test(tc, test_going_home);
	suite_add_tcase(s, tc);

	tc = tcase_create("loopback");
	tcase_add_test(tc, test_loopback_files);
	tcase_add_test(tc, test_loopback_pipe);
	tcase_add_test(tc, test_loopback_sock);
	tcase_add_test(tc, test_loopback_pty);
	tcase_add_test(tc, test_loopback_cpu);
	tcase_add_test(tc, test_loopback_home);
	tcase_set_timeout(tc, 60);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner	*sr = srunner_create(forward_suite());
	int	 failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? 0 : 1;
}
