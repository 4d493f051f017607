/*
 * A probe of the kernel, not of osmosis: does SECCOMP_IOCTL_NOTIF_SEND
 * say 0 for an answer the task then drops? (docs/REMOTE.md, "Regular
 * files", An answer R never had.) A child calls getppid N times under a
 * filter that notifies it, with a SIGALRM (SA_RESTART, a handler that
 * makes no call) every 100 us; the parent answers each notification
 * with the count of answers SEND took so far, plus one. The child must
 * see 1, 2, 3...: a number skipped is an answer SEND said it gave, that
 * the task never had (the signal woke it before the answer, and the
 * kernel restarted the call). Exits 1 if it saw one.
 *
 *	cc -O2 -o notif-lost tests/probe/notif-lost.c && ./notif-lost 300000
 *	./notif-lost 300000 sync	(SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP)
 *
 * On 6.18 here (2 CPUs, load 3, 2026-12-02): answers lost in 7 runs of
 * 7 without sync (1 to 23 in 300,000 calls, of about 3,400 that SEND
 * found gone), in 2 of 21 with it (4 in 6.8 million calls, 65,000
 * gone; 3 of them in a run with both CPUs busy besides).
 */
#define _GNU_SOURCE
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>

#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef SECCOMP_IOCTL_NOTIF_SET_FLAGS
#define SECCOMP_IOCTL_NOTIF_SET_FLAGS	SECCOMP_IOW(4, __u64)
#endif
#ifndef SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP
#define SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP	(1UL << 0)
#endif

static void
on_alarm(int sig)
{
	(void)sig;	/* only to wake the child: no call */
}

/* The child: n calls, the numbers it was answered checked. */
static int
calls(int to, long n)
{
	struct sock_filter	 f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
		    offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_getppid, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_USER_NOTIF),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog	 p = { 4, f };
	struct sigaction	 sa;
	struct itimerval	 it = { { 0, 100 }, { 0, 100 } };
	long			 i, v, last = 0, lost = 0;
	int			 lfd;

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
	    (lfd = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER,
	    SECCOMP_FILTER_FLAG_NEW_LISTENER, &p)) < 0 ||
	    write(to, &lfd, sizeof lfd) != sizeof lfd)
		return 2;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_alarm;
	sa.sa_flags = SA_RESTART;
	if (sigaction(SIGALRM, &sa, NULL) != 0 ||
	    setitimer(ITIMER_REAL, &it, NULL) != 0)
		return 2;
	for (i = 0; i < n; i++) {
		v = syscall(SYS_getppid);
		if (v != last + 1) {
			lost += v - last - 1;
			dprintf(1, "call %ld: answered %ld after %ld\n", i, v,
			    last);
		}
		last = v;
	}
	memset(&it, 0, sizeof it);
	setitimer(ITIMER_REAL, &it, NULL);
	dprintf(1, "%ld calls, %ld answers lost\n", n, lost);
	return lost > 0;
}

int
main(int argc, char **argv)
{
	struct seccomp_notif_sizes	 sz;
	struct seccomp_notif		*req;
	struct seccomp_notif_resp	*resp;
	long				 n = argc > 1 ? atol(argv[1]) : 300000;
	long				 sent = 0, gone = 0;
	pid_t				 pid;
	int				 pv[2], lfd, fd, pfd, st;

	if (pipe(pv) != 0 || (pid = fork()) == -1)
		return 2;
	if (pid == 0)
		_exit(calls(pv[1], n));
	if (read(pv[0], &lfd, sizeof lfd) != sizeof lfd ||
	    (pfd = syscall(SYS_pidfd_open, pid, 0)) < 0 ||
	    (fd = syscall(SYS_pidfd_getfd, pfd, lfd, 0)) < 0 ||
	    syscall(SYS_seccomp, SECCOMP_GET_NOTIF_SIZES, 0, &sz) != 0) {
		perror("listener");
		return 2;
	}
	/* as the guest agent sets it (libremote/remote.c) */
	if (argc > 2 && strcmp(argv[2], "sync") == 0 &&
	    ioctl(fd, SECCOMP_IOCTL_NOTIF_SET_FLAGS,
	    SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP) != 0) {
		perror("SECCOMP_IOCTL_NOTIF_SET_FLAGS");
		return 2;
	}
	req = calloc(1, sz.seccomp_notif);
	resp = calloc(1, sz.seccomp_notif_resp);
	for (;;) {
		memset(req, 0, sz.seccomp_notif);
		if (ioctl(fd, SECCOMP_IOCTL_NOTIF_RECV, req) == -1) {
			if ((errno == EINTR || errno == ENOENT) &&
			    waitpid(pid, &st, WNOHANG) == 0)
				continue;
			break;
		}
		memset(resp, 0, sz.seccomp_notif_resp);
		resp->id = req->id;
		resp->val = sent + 1;
		if (ioctl(fd, SECCOMP_IOCTL_NOTIF_SEND, resp) == 0)
			sent++;
		else if (errno == ENOENT)
			gone++;
		else
			break;
	}
	if (waitpid(pid, &st, WNOHANG) == 0)
		waitpid(pid, &st, 0);
	printf("SEND said 0 for %ld answers, ENOENT for %ld\n", sent, gone);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 2;
}
