/*
 * The network process's sandbox, entered once it is forked and before it
 * reads a byte from anyone: the uid of its own (cluster.conf's net-uid),
 * no groups, no capability in any set (the bounding set included), no
 * way to gain one (no_new_privs), not dumpable (no one of its uid may
 * trace it), and a seccomp filter that lets through only the system calls
 * the daemon's loop makes: no exec, no fork (a thread, probe-thread.c),
 * no ptrace, no file opened but to read, sockets only of the families it
 * uses. A call the filter does not let through fails with EPERM (SIGSYS,
 * caught here) and is said in the log, so that a path we missed shows as
 * an error, not a dead daemon; whoever controls the process still gets
 * nothing from it.
 *
 * Under the sanitizers (make asan) the filter logs instead of refusing
 * and the process stays dumpable: their reports open files and their
 * leak check traces the process.
 */
#include <sys/capability.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <ucontext.h>
#include <unistd.h>

#include "mosd.h"
/* After ev.h: its elf.h defines EV_NONE, a name of libev's enum. */
#include <seccomp.h>

#if defined(__SANITIZE_ADDRESS__)
#define SANDBOX_SANITIZED	1
#else
#define SANDBOX_SANITIZED	0
#endif

/* What the loop calls, with no argument to check. */
static const int sandbox_calls[] = {
	SCMP_SYS(read), SCMP_SYS(write), SCMP_SYS(readv), SCMP_SYS(writev),
	SCMP_SYS(pread64), SCMP_SYS(close), SCMP_SYS(fstat),
	SCMP_SYS(newfstatat), SCMP_SYS(statx), SCMP_SYS(lseek),
	SCMP_SYS(getdents64), SCMP_SYS(readlink), SCMP_SYS(readlinkat),
	SCMP_SYS(fcntl), SCMP_SYS(dup), SCMP_SYS(dup3),
	SCMP_SYS(mmap), SCMP_SYS(mprotect), SCMP_SYS(munmap),
	SCMP_SYS(mremap), SCMP_SYS(madvise), SCMP_SYS(brk),
	SCMP_SYS(rt_sigaction), SCMP_SYS(rt_sigprocmask),
	SCMP_SYS(rt_sigreturn), SCMP_SYS(sigaltstack),
	SCMP_SYS(poll), SCMP_SYS(ppoll), SCMP_SYS(pselect6),
	SCMP_SYS(epoll_create1), SCMP_SYS(epoll_ctl), SCMP_SYS(epoll_wait),
	SCMP_SYS(epoll_pwait), SCMP_SYS(eventfd2), SCMP_SYS(pipe2),
	SCMP_SYS(timerfd_create), SCMP_SYS(timerfd_settime),
	SCMP_SYS(timerfd_gettime),
	SCMP_SYS(connect), SCMP_SYS(accept), SCMP_SYS(accept4),
	SCMP_SYS(bind), SCMP_SYS(shutdown), SCMP_SYS(sendto),
	SCMP_SYS(recvfrom), SCMP_SYS(sendmsg), SCMP_SYS(recvmsg),
	SCMP_SYS(sendmmsg), SCMP_SYS(recvmmsg), SCMP_SYS(setsockopt),
	SCMP_SYS(getsockopt), SCMP_SYS(getsockname), SCMP_SYS(getpeername),
	SCMP_SYS(getpid), SCMP_SYS(gettid), SCMP_SYS(getppid),
	SCMP_SYS(getuid), SCMP_SYS(geteuid), SCMP_SYS(getgid),
	SCMP_SYS(getegid), SCMP_SYS(getgroups), SCMP_SYS(getrandom),
	SCMP_SYS(clock_gettime), SCMP_SYS(clock_getres),
	SCMP_SYS(gettimeofday), SCMP_SYS(clock_nanosleep),
	SCMP_SYS(nanosleep), SCMP_SYS(futex), SCMP_SYS(sched_yield),
	SCMP_SYS(sched_getaffinity), SCMP_SYS(getrlimit), SCMP_SYS(getrusage),
	SCMP_SYS(prlimit64), SCMP_SYS(uname), SCMP_SYS(sysinfo),
	SCMP_SYS(restart_syscall), SCMP_SYS(exit), SCMP_SYS(exit_group),
	SCMP_SYS(set_robust_list), SCMP_SYS(rseq),	/* a new thread's */
};

/* The ioctls of stdio and of the sockets' non-blocking mode. */
static const unsigned long sandbox_ioctls[] = {
	FIONREAD, FIONBIO, FIOCLEX, FIONCLEX, TCGETS,
};

/* Socket families: local clients and agents, the nodes, syslog. */
static const int sandbox_families[] = { AF_UNIX, AF_INET, AF_INET6 };

static volatile sig_atomic_t sandbox_refused, sandbox_refused_nr;
static sig_atomic_t sandbox_said;

/* A call the filter refused: it fails with EPERM; the log says it later. */
static void
sandbox_sigsys(int sig, siginfo_t *si, void *arg)
{
	ucontext_t	*uc = arg;

	uc->uc_mcontext.gregs[REG_RAX] = -EPERM;
	sandbox_refused_nr = si->si_syscall;
	sandbox_refused++;
}

/* From the loop: say what the filter refused since the last time. */
void
sandbox_report(void)
{
	char	*name;
	int	 n = sandbox_refused, nr = sandbox_refused_nr;

	if (n == sandbox_said)
		return;
	name = seccomp_syscall_resolve_num_arch(SCMP_ARCH_NATIVE, nr);
	log_warnx("sandbox: the seccomp filter refused %d system calls, the "
	    "last %s (%d): it failed with EPERM", n - sandbox_said,
	    name != NULL ? name : "?", nr);
	free(name);
	sandbox_said = n;
}

static int
sandbox_filter(char **cause)
{
	struct sigaction	 sa;
	scmp_filter_ctx		 ctx;
	uint32_t		 deflt;
	size_t			 i;
	int			 rc = 0;

	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = sandbox_sigsys;
	sa.sa_flags = SA_SIGINFO;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGSYS, &sa, NULL) == -1) {
		xasprintf(cause, "sigaction SIGSYS: %s", strerror(errno));
		return -1;
	}
	deflt = SANDBOX_SANITIZED ? SCMP_ACT_LOG : SCMP_ACT_TRAP;
	if ((ctx = seccomp_init(deflt)) == NULL) {
		xasprintf(cause, "seccomp_init failed");
		return -1;
	}
	for (i = 0; i < nitems(sandbox_calls) && rc == 0; i++)
		rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, sandbox_calls[i], 0);
	/* Files are opened to be read, never written or made. */
	if (rc == 0)
		rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(openat), 1,
		    SCMP_A2(SCMP_CMP_MASKED_EQ, O_ACCMODE | O_CREAT | O_TRUNC |
		    O_APPEND, 0));
	for (i = 0; i < nitems(sandbox_families) && rc == 0; i++)
		rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(socket), 1,
		    SCMP_A0(SCMP_CMP_EQ, sandbox_families[i], 0));
	if (rc == 0)
		rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(socketpair),
		    1, SCMP_A0(SCMP_CMP_EQ, AF_UNIX, 0));
	for (i = 0; i < nitems(sandbox_ioctls) && rc == 0; i++)
		rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(ioctl), 1,
		    SCMP_A1(SCMP_CMP_EQ, sandbox_ioctls[i], 0));
	/*
	 * Threads (probe-thread.c), never a process: clone only with
	 * CLONE_THREAD; clone3, whose flags a filter cannot see, fails as
	 * unknown and glibc falls back to clone.
	 */
	if (rc == 0)
		rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(clone), 1,
		    SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_THREAD, CLONE_THREAD));
	if (rc == 0)
		rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS),
		    SCMP_SYS(clone3), 0);
	/* abort() signals itself, and only itself. */
	if (rc == 0)
		rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(tgkill), 1,
		    SCMP_A0(SCMP_CMP_EQ, getpid(), 0));
	if (rc == 0)
		rc = seccomp_load(ctx);
	seccomp_release(ctx);
	if (rc != 0) {
		xasprintf(cause, "seccomp filter: %s", strerror(-rc));
		return -1;
	}
	return 0;
}

/* No capability in any set, the bounding set emptied (CAP_SETPCAP last). */
static int
sandbox_uid(uid_t uid, char **cause)
{
	static const cap_value_t setpcap[] = { CAP_SETPCAP };
	cap_t	caps, none;
	int	c;

	if ((caps = cap_get_proc()) == NULL ||
	    cap_set_flag(caps, CAP_EFFECTIVE, 1, setpcap, CAP_SET) == -1 ||
	    cap_set_proc(caps) == -1) {
		xasprintf(cause, "CAP_SETPCAP: %s", strerror(errno));
		if (caps != NULL)
			cap_free(caps);
		return -1;
	}
	cap_free(caps);
	for (c = 0; c <= CAP_LAST_CAP; c++)
		if (c != CAP_SETPCAP && prctl(PR_CAPBSET_DROP, c, 0, 0, 0) == -1 &&
		    errno != EINVAL)
			goto bset;
	if (prctl(PR_CAPBSET_DROP, CAP_SETPCAP, 0, 0, 0) == -1)
		goto bset;
	if (setgroups(0, NULL) == -1 || setresgid(uid, uid, uid) == -1 ||
	    setresuid(uid, uid, uid) == -1) {
		xasprintf(cause, "cannot become uid %u: %s", (unsigned)uid,
		    strerror(errno));
		return -1;
	}
	if (setuid(0) != -1) {
		xasprintf(cause, "could become root again after dropping");
		return -1;
	}
	caps = cap_get_proc();
	none = cap_init();
	c = caps == NULL || none == NULL || cap_compare(caps, none) != 0;
	cap_free(caps);
	cap_free(none);
	if (c) {
		xasprintf(cause, "capabilities left after becoming uid %u",
		    (unsigned)uid);
		return -1;
	}
	return 0;

bset:
	xasprintf(cause, "emptying the capability bounding set: %s",
	    strerror(errno));
	return -1;
}

/*
 * Become the network process, forked from parent: called once, before
 * anything is read. -1 and *cause if any step fails (mosd then stops).
 */
int
sandbox_enter(struct mosd *m, pid_t parent, char **cause)
{
	/* Name lookups load their modules now, before the filter. */
	getpwuid(0);
	getgrgid(0);
	if (sandbox_uid(m->conf->net_uid, cause) == -1)
		return -1;
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == -1 ||
	    prctl(PR_SET_DUMPABLE, SANDBOX_SANITIZED, 0, 0, 0) == -1 ||
	    prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) == -1 ||
	    prctl(PR_SET_NAME, "mosd-net", 0, 0, 0) == -1) {
		xasprintf(cause, "prctl: %s", strerror(errno));
		return -1;
	}
	if (getppid() != parent) {
		xasprintf(cause, "the privileged process has gone");
		return -1;
	}
	return sandbox_filter(cause);
}
