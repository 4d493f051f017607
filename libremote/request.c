/*
 * Calls whose class depends on an argument: ioctl by request, fcntl by
 * command, prctl by option, the clock calls by clock id, the scheduler
 * calls by pid, mmap by its flags, and a few by a small function.
 *
 * An ioctl, fcntl command or prctl option that is not listed brings the
 * process home: its argument may be a pointer to anything, and forwarding
 * it blind could hand the home kernel one of R's addresses.
 */
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/time.h>

#include <fcntl.h>
#include <linux/fs.h>
#include <linux/sockios.h>
#include <net/if.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <time.h>

#include "internal.h"

#define SUB(v, c, a)	{ (uint32_t)(v), c, #v, a, 0 }
#define SUBM(v, c, a)	{ (uint32_t)(v), c, #v, a, 1 }
#define FWD		RMT_FORWARD

#define KTERMIOS	36	/* the kernel's struct termios, not glibc's */
#define KTERMIOS2	44
#define KTERMIO		18

/* ioctl(fd, request, arg): the description of arg by request. */
static const struct table_sub ioctl_subs[] = {
	SUB(TCGETS, FWD, OUT(KTERMIOS)),
	SUB(TCSETS, FWD, IN(KTERMIOS)),
	SUB(TCSETSW, FWD, IN(KTERMIOS)),
	SUB(TCSETSF, FWD, IN(KTERMIOS)),
	SUB(TCGETA, FWD, OUT(KTERMIO)),
	SUB(TCSETA, FWD, IN(KTERMIO)),
	SUB(TCSETAW, FWD, IN(KTERMIO)),
	SUB(TCSETAF, FWD, IN(KTERMIO)),
	{ 0x802c542a, FWD, "TCGETS2", OUT(KTERMIOS2), 0 },
	{ 0x402c542b, FWD, "TCSETS2", IN(KTERMIOS2), 0 },
	{ 0x402c542c, FWD, "TCSETSW2", IN(KTERMIOS2), 0 },
	{ 0x402c542d, FWD, "TCSETSF2", IN(KTERMIOS2), 0 },
	SUB(TCSBRK, FWD, V),
	SUB(TCSBRKP, FWD, V),
	SUB(TCXONC, FWD, V),
	SUB(TCFLSH, FWD, V),
	SUB(TIOCSBRK, FWD, V),
	SUB(TIOCCBRK, FWD, V),
	SUB(TIOCEXCL, FWD, V),
	SUB(TIOCNXCL, FWD, V),
	SUB(TIOCGEXCL, FWD, OUT(4)),
	SUB(TIOCSCTTY, FWD, V),
	SUB(TIOCNOTTY, FWD, V),
	SUB(TIOCCONS, FWD, V),
	SUB(TIOCVHANGUP, FWD, V),
	SUB(TIOCGPGRP, FWD, OUT(4)),
	SUB(TIOCSPGRP, FWD, IN(4)),
	SUB(TIOCGSID, FWD, OUT(4)),
	SUB(TIOCOUTQ, FWD, OUT(4)),
	SUB(TIOCSTI, FWD, IN(1)),
	SUB(TIOCGWINSZ, FWD, OUT(8)),
	SUB(TIOCSWINSZ, FWD, IN(8)),
	SUB(TIOCMGET, FWD, OUT(4)),
	SUB(TIOCMBIS, FWD, IN(4)),
	SUB(TIOCMBIC, FWD, IN(4)),
	SUB(TIOCMSET, FWD, IN(4)),
	SUB(TIOCGSOFTCAR, FWD, OUT(4)),
	SUB(TIOCSSOFTCAR, FWD, IN(4)),
	SUB(TIOCPKT, FWD, IN(4)),
	SUB(TIOCGPKT, FWD, OUT(4)),
	SUB(TIOCSETD, FWD, IN(4)),
	SUB(TIOCGETD, FWD, OUT(4)),
	SUB(TIOCGPTN, FWD, OUT(4)),
	SUB(TIOCSPTLCK, FWD, IN(4)),
	SUB(TIOCGPTLCK, FWD, OUT(4)),
	SUB(TIOCGDEV, FWD, OUT(4)),
	SUB(TIOCSIG, FWD, V),			/* the signal, by value */
	SUB(TIOCGPTPEER, FWD, V),
	SUB(FIONREAD, FWD, OUT(4)),		/* also TIOCINQ, SIOCINQ */
	SUB(FIONBIO, FWD, IN(4)),
	SUB(FIOASYNC, FWD, IN(4)),
	SUB(FIOCLEX, FWD, V),
	SUB(FIONCLEX, FWD, V),
	SUB(FIOQSIZE, FWD, OUT(8)),
	SUB(FIOSETOWN, FWD, IN(4)),
	SUB(FIOGETOWN, FWD, OUT(4)),
	SUB(SIOCSPGRP, FWD, IN(4)),
	SUB(SIOCGPGRP, FWD, OUT(4)),
	SUB(SIOCATMARK, FWD, OUT(4)),
	SUB(SIOCGSTAMP, FWD, OUT(16)),
	SUB(SIOCGSTAMPNS, FWD, OUT(16)),
	/* interfaces of the home node: struct ifreq in and out */
	SUB(SIOCGIFNAME, FWD, INOUT(sizeof(struct ifreq))),
	SUB(SIOCGIFINDEX, FWD, INOUT(sizeof(struct ifreq))),
	SUB(SIOCGIFFLAGS, FWD, INOUT(sizeof(struct ifreq))),
	SUB(SIOCGIFADDR, FWD, INOUT(sizeof(struct ifreq))),
	SUB(SIOCGIFDSTADDR, FWD, INOUT(sizeof(struct ifreq))),
	SUB(SIOCGIFBRDADDR, FWD, INOUT(sizeof(struct ifreq))),
	SUB(SIOCGIFNETMASK, FWD, INOUT(sizeof(struct ifreq))),
	SUB(SIOCGIFMETRIC, FWD, INOUT(sizeof(struct ifreq))),
	SUB(SIOCGIFMTU, FWD, INOUT(sizeof(struct ifreq))),
	SUB(SIOCGIFHWADDR, FWD, INOUT(sizeof(struct ifreq))),
	SUB(SIOCGIFTXQLEN, FWD, INOUT(sizeof(struct ifreq))),
	/* files: the kernel reads and writes an int, whatever _IOR says */
	SUB(FS_IOC_GETFLAGS, FWD, OUT(4)),
	SUB(FS_IOC_SETFLAGS, FWD, IN(4)),
	SUB(FS_IOC_GETVERSION, FWD, OUT(4)),
	SUB(FIGETBSZ, FWD, OUT(4)),
	SUB(FICLONE, FWD, V),			/* the source fd, by value */
	SUB(FICLONERANGE, FWD, IN(sizeof(struct file_clone_range))),
	SUB(BLKGETSIZE64, FWD, OUT(8)),
	SUB(BLKGETSIZE, FWD, OUT(8)),
	SUB(BLKSSZGET, FWD, OUT(4)),
};
const struct table_rule request_ioctl = {
	.arg = 1, .sub_arg = 2,
	.subs = ioctl_subs, .nsubs = nitems(ioctl_subs),
};

/* fcntl(fd, cmd, arg) */
static const struct table_sub fcntl_subs[] = {
	SUB(F_DUPFD, FWD, V),
	SUB(F_DUPFD_CLOEXEC, FWD, V),
	SUB(F_GETFD, FWD, V),
	SUB(F_SETFD, FWD, V),
	SUB(F_GETFL, FWD, V),
	SUB(F_SETFL, FWD, V),
	/* the locks, and the stub's on files opened here (marked) */
	SUBM(F_GETLK, FWD, INOUT(sizeof(struct flock))),
	SUBM(F_SETLK, FWD, IN(sizeof(struct flock))),
	SUBM(F_SETLKW, FWD, IN(sizeof(struct flock))),
	SUBM(F_OFD_GETLK, FWD, INOUT(sizeof(struct flock))),
	SUBM(F_OFD_SETLK, FWD, IN(sizeof(struct flock))),
	SUBM(F_OFD_SETLKW, FWD, IN(sizeof(struct flock))),
	SUB(F_GETOWN, FWD, V),
	SUB(F_SETOWN, FWD, V),
	SUB(F_GETOWN_EX, FWD, OUT(sizeof(struct f_owner_ex))),
	SUB(F_SETOWN_EX, FWD, IN(sizeof(struct f_owner_ex))),
	{ 17, FWD, "F_GETOWNER_UIDS", OUT(8), 0 },
	SUB(F_GETSIG, FWD, V),
	SUB(F_SETSIG, FWD, V),
	SUB(F_GETLEASE, FWD, V),
	SUB(F_SETLEASE, FWD, V),
	SUB(F_NOTIFY, FWD, V),
	{ 1027, FWD, "F_DUPFD_QUERY", V, 0 },
	{ 1028, FWD, "F_CREATED_QUERY", V, 0 },
	{ 1029, FWD, "F_CANCELLK", V, 0 },
	SUB(F_GETPIPE_SZ, FWD, V),
	SUB(F_SETPIPE_SZ, FWD, V),
	SUB(F_ADD_SEALS, FWD, V),
	SUB(F_GET_SEALS, FWD, V),
	SUB(F_GET_RW_HINT, FWD, OUT(8)),
	SUB(F_SET_RW_HINT, FWD, IN(8)),
	SUB(F_GET_FILE_RW_HINT, FWD, OUT(8)),
	SUB(F_SET_FILE_RW_HINT, FWD, IN(8)),
};
const struct table_rule request_fcntl = {
	.arg = 1, .sub_arg = 2,
	.subs = fcntl_subs, .nsubs = nitems(fcntl_subs),
};

/*
 * prctl(option, arg2, ...): the options about this task's memory or CPU
 * run here; those about its identity, credentials, parent and children
 * are the home process's; the rest come home, among them PR_SET_DUMPABLE
 * (an undumpable process shuts the agents out of its memory: they have no
 * CAP_SYS_PTRACE), PR_SET_SECCOMP and PR_SET_SYSCALL_USER_DISPATCH
 * (kernel state that no image carries) and PR_SET_MM.
 */
static const struct table_sub prctl_subs[] = {
	SUB(PR_GET_TIMERSLACK, RMT_LOCAL, V),
	SUB(PR_SET_TIMERSLACK, RMT_LOCAL, V),
	SUB(PR_GET_THP_DISABLE, RMT_LOCAL, V),
	SUB(PR_SET_THP_DISABLE, RMT_LOCAL, V),
	SUB(PR_GET_SPECULATION_CTRL, RMT_LOCAL, V),
	SUB(PR_SET_SPECULATION_CTRL, RMT_LOCAL, V),
	SUB(PR_GET_TID_ADDRESS, RMT_LOCAL, V),
	SUB(PR_MCE_KILL, RMT_LOCAL, V),
	SUB(PR_MCE_KILL_GET, RMT_LOCAL, V),
	SUB(PR_GET_TSC, RMT_LOCAL, V),
	SUB(PR_SET_TSC, RMT_LOCAL, V),
	SUB(PR_TASK_PERF_EVENTS_DISABLE, RMT_LOCAL, V),
	SUB(PR_TASK_PERF_EVENTS_ENABLE, RMT_LOCAL, V),
	SUB(PR_SET_VMA, RMT_LOCAL, V),
	{ 0x41555856, RMT_LOCAL, "PR_GET_AUXV", V, 0 },

	SUB(PR_SET_PDEATHSIG, FWD, V),
	SUB(PR_GET_PDEATHSIG, FWD, OUT(4)),
	SUB(PR_GET_DUMPABLE, FWD, V),
	SUB(PR_GET_KEEPCAPS, FWD, V),
	SUB(PR_SET_KEEPCAPS, FWD, V),
	SUB(PR_SET_NAME, FWD, STR),
	SUB(PR_GET_NAME, FWD, OUT(16)),
	SUB(PR_GET_SECCOMP, FWD, V),
	SUB(PR_CAPBSET_READ, FWD, V),
	SUB(PR_CAPBSET_DROP, FWD, V),
	SUB(PR_GET_SECUREBITS, FWD, V),
	SUB(PR_SET_SECUREBITS, FWD, V),
	SUB(PR_CAP_AMBIENT, FWD, V),
	SUB(PR_SET_CHILD_SUBREAPER, FWD, V),
	SUB(PR_GET_CHILD_SUBREAPER, FWD, OUT(4)),
	SUB(PR_SET_NO_NEW_PRIVS, FWD, V),
	SUB(PR_GET_NO_NEW_PRIVS, FWD, V),
	SUB(PR_SET_PTRACER, FWD, V),
};
const struct table_rule request_prctl = {
	.arg = 0, .sub_arg = 1,
	.subs = prctl_subs, .nsubs = nitems(prctl_subs),
};

/*
 * The clocks every node has. They run here (and in the vDSO); a clock id
 * not listed is a CPU-time clock, a clock fd or invalid: see
 * request_clock_class.
 */
static const struct table_sub clock_subs[] = {
	SUB(CLOCK_REALTIME, RMT_LOCAL, V),
	SUB(CLOCK_MONOTONIC, RMT_LOCAL, V),
	SUB(CLOCK_MONOTONIC_RAW, RMT_LOCAL, V),
	SUB(CLOCK_REALTIME_COARSE, RMT_LOCAL, V),
	SUB(CLOCK_MONOTONIC_COARSE, RMT_LOCAL, V),
	SUB(CLOCK_BOOTTIME, RMT_LOCAL, V),
	SUB(CLOCK_REALTIME_ALARM, RMT_LOCAL, V),
	SUB(CLOCK_BOOTTIME_ALARM, RMT_LOCAL, V),
	SUB(CLOCK_TAI, RMT_LOCAL, V),
};
const struct table_rule request_clocks = {
	.arg = 0, .sub_arg = -1,
	.subs = clock_subs, .nsubs = nitems(clock_subs),
};

/*
 * The scheduler calls (affinity, policy, parameters) with pid 0 are about
 * the running copy on this node, whose CPUs they name; with a pid they are
 * about a process at home.
 */
static const struct table_sub self_subs[] = {
	{ 0, RMT_LOCAL, "self", V, 0 },
};
const struct table_rule request_self = {
	.arg = 0, .sub_arg = -1,
	.subs = self_subs, .nsubs = nitems(self_subs),
};

/*
 * Anonymous memory is the process's own. A private file mapping, or a
 * shared one that is not writable, the guest agent makes itself of the
 * file's content from home (agent/guest-files.c); a writable shared one
 * must write to the file at home, and brings the process home.
 */
const struct table_rule request_mmap = {
	.arg = 3, .sub_arg = -1, .bit = MAP_ANONYMOUS,
};

enum rmt_class
request_mmap_class(const uint64_t *a, pid_t self)
{
	switch ((uint32_t)a[3] & MAP_TYPE) {
	case MAP_PRIVATE:
		return RMT_MAP;
	case MAP_SHARED:
	case MAP_SHARED_VALIDATE:
		return (a[2] & PROT_WRITE) ? RMT_HOME : RMT_MAP;
	}
	return RMT_HOME;
}

#define CPUCLOCK_WHICH(c)	((c) & 3)
#define CPUCLOCK_PERTHREAD(c)	((c) & 4)
#define CPUCLOCK_PID(c)		((pid_t)~((c) >> 3))
#define CPUCLOCK_FD		3

/*
 * Is clock id a CPU-time clock of the process itself? Its pid or tid is 0
 * or the home pid (which is also its main thread's tid at home). *which is
 * CPUCLOCK_PROF (0), VIRT (1) or SCHED (2); *scope 0 the process, 1 the
 * calling thread, 2 the main thread.
 */
int
request_cpu_clock(int32_t id, pid_t self, int *which, int *scope)
{
	pid_t	pid;

	if (id == CLOCK_PROCESS_CPUTIME_ID || id == CLOCK_THREAD_CPUTIME_ID) {
		*which = 2;
		*scope = id == CLOCK_THREAD_CPUTIME_ID;
		return 0;
	}
	if (id >= 0 || CPUCLOCK_WHICH(id) == CPUCLOCK_FD)
		return -1;
	pid = CPUCLOCK_PID(id);
	if (pid != 0 && (self <= 0 || pid != self))
		return -1;
	*which = CPUCLOCK_WHICH(id);
	if (!CPUCLOCK_PERTHREAD(id))
		*scope = 0;
	else
		*scope = pid == 0 ? 1 : 2;
	return 0;
}

/*
 * clock_gettime and clock_getres: the process's own CPU clocks are
 * answered by the guest agent; another process's CPU clock, a clock fd
 * (PTP) and invalid ids are for the home kernel to answer.
 */
enum rmt_class
request_clock_class(const uint64_t *a, pid_t self)
{
	int	which, scope;

	if (request_cpu_clock((int32_t)a[0], self, &which, &scope) == 0)
		return RMT_EMULATE;
	return RMT_FORWARD;
}

/*
 * The guest's clock stub reading R's own CPU clocks (RMT_CLOCK_MAGIC in
 * the high half of the id): local, as the filter lets it.
 */
int
request_clock_stub(const uint64_t *a)
{
	return (a[0] >> 32) == RMT_CLOCK_MAGIC &&
	    ((uint32_t)a[0] == CLOCK_PROCESS_CPUTIME_ID ||
	    (uint32_t)a[0] == CLOCK_THREAD_CPUTIME_ID);
}

enum rmt_class
request_clock_gettime_class(const uint64_t *a, pid_t self)
{
	if (request_clock_stub(a))
		return RMT_LOCAL;
	return request_clock_class(a, self);
}

/*
 * gettid with RMT_CLOCK_MAGIC in the high half of its first argument
 * (which it ignores): the clock stub finding its thread's base, local as
 * the filter lets it; any other is answered from the identity.
 */
enum rmt_class
request_gettid_class(const uint64_t *a, pid_t self)
{
	(void)self;
	if ((a[0] >> 32) == RMT_CLOCK_MAGIC)
		return RMT_LOCAL;
	return RMT_FORWARD;
}

/*
 * A call on a descriptor (read, write, pread64, pwrite64, lseek, fsync,
 * fdatasync, flock, fstat, close) with RMT_CLOCK_MAGIC in its high half:
 * the stub in R's own, on a file opened here, local as the filter lets
 * it (filter_fd_stub; fcntl's locks are its marked subs); any other is
 * forwarded.
 */
enum rmt_class
request_fd_stub_class(const uint64_t *a, pid_t self)
{
	(void)self;
	return (a[0] >> 32) == RMT_CLOCK_MAGIC ? RMT_LOCAL : RMT_FORWARD;
}

/*
 * getrusage: the process itself is emulated, its children are at home;
 * the guest's usage stub in R reading R's own (RMT_CLOCK_MAGIC in the
 * high half of who, an int to the kernel) is local, as the filter lets
 * it.
 */
enum rmt_class
request_rusage_class(const uint64_t *a, pid_t self)
{
	int	who = (int)a[0];

	(void)self;
	if (who == RUSAGE_SELF || who == RUSAGE_THREAD)
		return (a[0] >> 32) == RMT_CLOCK_MAGIC ? RMT_LOCAL :
		    RMT_EMULATE;
	return RMT_FORWARD;
}

/*
 * times: emulated; times(NULL), the node's ticks since boot only (what
 * the emulation answers too), is local: the usage stub's, which takes
 * the counts from getrusage (a pointer carries no magic).
 */
enum rmt_class
request_times_class(const uint64_t *a, pid_t self)
{
	(void)self;
	return a[0] == 0 ? RMT_LOCAL : RMT_EMULATE;
}

/*
 * getitimer/setitimer: the real-time timer lives at home (its SIGALRM is
 * caught there and passed on); the virtual and profiling timers count CPU
 * time, which only R consumes and no image carries, so they go home.
 */
enum rmt_class
request_itimer_class(const uint64_t *a, pid_t self)
{
	return (int)a[0] == ITIMER_REAL ? RMT_FORWARD : RMT_HOME;
}

/* timer_create: a timer on a CPU-time clock goes home, as above. */
enum rmt_class
request_timer_class(const uint64_t *a, pid_t self)
{
	int32_t	id = (int32_t)a[0];

	if (id == CLOCK_PROCESS_CPUTIME_ID || id == CLOCK_THREAD_CPUTIME_ID ||
	    (id < 0 && CPUCLOCK_WHICH(id) != CPUCLOCK_FD))
		return RMT_HOME;
	return RMT_FORWARD;
}

/*
 * getsockopt/setsockopt: the option is a plain buffer of optlen bytes but
 * for those that carry pointers or count in other units: socket filters
 * (struct sock_fprog; SO_GET_FILTER counts in filter entries), TCP's
 * zero-copy receive, and the firewall tables (iptables, arptables,
 * ebtables: options 64 to 131 of SOL_IP and SOL_IPV6).
 */
enum rmt_class
request_sockopt_class(const uint64_t *a, pid_t self)
{
	int	level = (int)a[1], name = (int)a[2];

	if (level == SOL_SOCKET && (name == SO_ATTACH_FILTER ||
	    name == SO_ATTACH_REUSEPORT_CBPF))
		return RMT_HOME;
	if (level == IPPROTO_TCP && name == TCP_ZEROCOPY_RECEIVE)
		return RMT_HOME;
	if ((level == SOL_IP || level == SOL_IPV6) && name >= 64 &&
	    name <= 131)
		return RMT_HOME;
	return RMT_FORWARD;
}
