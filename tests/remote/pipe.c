/*
 * Pipes, scatter/gather, polling (waits with a signal mask too), epoll and
 * fd flags through forwarding.
 */
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/select.h>
#include <sys/uio.h>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include "rt.h"

int
main(void)
{
	char		 a[] = "scatter", b[] = "/gather", c[] = "/io!";
	char		 x[5], y[9], z[16];
	struct iovec	 out[3] = { { a, 7 }, { b, 7 }, { c, 4 } };
	struct iovec	 in[3] = { { x, 5 }, { y, 9 }, { z, 16 } };
	struct pollfd	 pfd;
	struct epoll_event ev, evs[4];
	fd_set		 rs;
	sigset_t	 mask, old;
	struct timeval	 tv;
	int		 p[2], ep, n, fl, dup;

	CHECK(pipe2(p, O_CLOEXEC) == 0, "pipe2");
	CHECK(fcntl(p[0], F_GETFD) == FD_CLOEXEC, "FD_CLOEXEC");

	pfd.fd = p[0];
	pfd.events = POLLIN;
	pfd.revents = 0x55;
	CHECK(poll(&pfd, 1, 0) == 0 && pfd.revents == 0, "poll empty");
	FD_ZERO(&rs);
	FD_SET(p[0], &rs);
	tv.tv_sec = 0;
	tv.tv_usec = 1000;
	CHECK(select(p[0] + 1, &rs, NULL, NULL, &tv) == 0 &&
	    !FD_ISSET(p[0], &rs), "select empty");

	fl = fcntl(p[0], F_GETFL);
	CHECK(fl != -1 && fcntl(p[0], F_SETFL, fl | O_NONBLOCK) == 0,
	    "F_SETFL");
	CHECK(read(p[0], x, 1) == -1 && errno == EAGAIN, "EAGAIN");

	CHECK(writev(p[1], out, 3) == 18, "writev");
	CHECK(ioctl(p[0], FIONREAD, &n) == 0 && n == 18, "FIONREAD %d", n);
	CHECK(poll(&pfd, 1, 1000) == 1 && pfd.revents == POLLIN, "poll");
	FD_SET(p[0], &rs);
	CHECK(select(p[0] + 1, &rs, NULL, NULL, NULL) == 1 &&
	    FD_ISSET(p[0], &rs), "select");

	/* waits with a signal mask of their own, served here, unmasked */
	sigemptyset(&mask);
	sigaddset(&mask, SIGUSR1);
	CHECK(ppoll(&pfd, 1, &(struct timespec){ 1, 0 }, &mask) == 1 &&
	    pfd.revents == POLLIN, "ppoll with a mask");
	FD_SET(p[0], &rs);
	CHECK(pselect(p[0] + 1, &rs, NULL, NULL, &(struct timespec){ 1, 0 },
	    &mask) == 1 && FD_ISSET(p[0], &rs), "pselect with a mask");
	CHECK(pselect(0, NULL, NULL, NULL, &(struct timespec){ 0, 20000000 },
	    &mask) == 0, "pselect with a mask, timed out");
	CHECK(sigprocmask(SIG_SETMASK, NULL, &old) == 0 &&
	    !sigismember(&old, SIGUSR1), "the mask after the wait");

	ep = epoll_create1(EPOLL_CLOEXEC);
	CHECK(ep >= 0, "epoll_create1");
	ev.events = EPOLLIN;
	ev.data.u64 = 0x1122334455667788ULL;
	CHECK(epoll_ctl(ep, EPOLL_CTL_ADD, p[0], &ev) == 0, "epoll_ctl");
	memset(evs, 0, sizeof evs);
	CHECK(epoll_wait(ep, evs, 4, 1000) == 1 &&
	    evs[0].data.u64 == 0x1122334455667788ULL &&
	    evs[0].events == EPOLLIN && evs[1].events == 0, "epoll_wait");
	memset(evs, 0, sizeof evs);
	CHECK(epoll_pwait(ep, evs, 4, 1000, &mask) == 1 &&
	    evs[0].data.u64 == 0x1122334455667788ULL, "epoll_pwait");

	memset(z, '#', sizeof z);
	CHECK(readv(p[0], in, 3) == 18, "readv");
	CHECK(memcmp(x, "scatt", 5) == 0 && memcmp(y, "er/gather", 9) == 0 &&
	    memcmp(z, "/io!", 4) == 0 && z[4] == '#' && z[15] == '#',
	    "scattered %.5s %.9s %.16s", x, y, z);

	dup = dup2(p[1], 100);
	CHECK(dup == 100, "dup2");
	CHECK(write(100, "via 100", 7) == 7 && read(p[0], z, 16) == 7 &&
	    memcmp(z, "via 100", 7) == 0, "through the dup");
	CHECK(close(100) == 0 && close(ep) == 0, "close");
	close(p[0]);
	close(p[1]);
	return rt_verdict("pipe");
}
