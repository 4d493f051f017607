/*
 * The x86_64 system-call table: what becomes of each call of a process
 * running away from home, and how its arguments are described.
 *
 *   LOCAL    runs on the remote node: the filter lets it through. Only
 *	      calls about the process's own memory, signals, time and CPU
 *	      state, none that could reach the node's files, processes or
 *	      network (the sandbox depends on it).
 *   EMULATE  answered by the guest agent: the CPU-time clocks, continued
 *	      from the time used before (emulate.c).
 *   FORWARD  executed in the home process: files, terminals, sockets,
 *	      pipes, identity, signals to processes, children, limits.
 *   HOME     brings the process home, where it runs natively: new
 *	      processes and programs, shared and file-backed memory, calls
 *	      that hand the kernel pointers to read later (AIO, io_uring),
 *	      other processes' memory, administration, and every number the
 *	      table does not list.
 *
 * Entries run from the hottest local calls, whose order the filter keeps,
 * to the rarest. Borderline decisions are explained beside the entries and
 * in docs/REMOTE.md.
 */
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/sysinfo.h>
#include <sys/time.h>
#include <sys/timex.h>
#include <sys/utsname.h>

#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* Newer than this system's headers. */
#define SYS_cachestat		451
#define SYS_fchmodat2		452
#define SYS_map_shadow_stack	453
#define SYS_futex_wake		454
#define SYS_futex_wait		455
#define SYS_futex_requeue	456
#define SYS_mseal		462

/* Sizes the kernel and glibc agree on, on x86_64. */
_Static_assert(sizeof(struct stat) == 144, "struct stat");
_Static_assert(sizeof(struct statfs) == 120, "struct statfs");
_Static_assert(sizeof(struct rusage) == 144, "struct rusage");
_Static_assert(sizeof(struct utsname) == 390, "struct utsname");
_Static_assert(sizeof(struct sysinfo) == 112, "struct sysinfo");
_Static_assert(sizeof(struct timex) == 208, "struct timex");
_Static_assert(sizeof(siginfo_t) == 128, "siginfo_t");
_Static_assert(sizeof(struct sigevent) == 64, "struct sigevent");
_Static_assert(sizeof(struct pollfd) == 8, "struct pollfd");

#define SYS(n, c)	.nr = SYS_##n, .name = #n, .class = (c)
#define LOCAL		RMT_LOCAL
#define FWD		RMT_FORWARD
#define HOME		RMT_HOME

#define TS		16	/* struct timespec, timeval, utimbuf */
#define ITS		32	/* struct itimerspec, itimerval, 2 x timespec */
#define RUSAGE		sizeof(struct rusage)
#define STAT		sizeof(struct stat)
#define STATFS		sizeof(struct statfs)
#define SIGINFO		sizeof(siginfo_t)
#define SIGEVENT	sizeof(struct sigevent)
#define MQATTR		64
#define EPOLL_EVENT	12	/* packed on x86_64 */
#define RLIM		16
#define RD		(TF_TRIM | TF_CLAMP)	/* read(2)-like output */

static const struct table_entry table[] = {
	/* memory, futexes, signals, time: local, hottest first */
	{ SYS(futex, LOCAL) },
	{ SYS(mmap, HOME), .rule = &request_mmap,
	    .classify = request_mmap_class,
	    .why = "writable shared file mapping" },
	{ SYS(munmap, LOCAL) },
	{ SYS(mprotect, LOCAL) },
	{ SYS(brk, LOCAL) },
	{ SYS(madvise, LOCAL) },
	{ SYS(mremap, LOCAL) },
	{ SYS(rt_sigprocmask, LOCAL) },
	{ SYS(rt_sigaction, LOCAL) },
	{ SYS(rt_sigreturn, LOCAL) },
	{ SYS(sched_yield, LOCAL) },
	{ SYS(nanosleep, LOCAL) },
	{ SYS(clock_nanosleep, HOME), .rule = &request_clocks,
	    .why = "sleep on a CPU-time clock" },
	{ SYS(clock_gettime, FWD), .args = { V, OUT(TS) },
	    .rule = &request_clocks, .classify = request_clock_gettime_class },
	{ SYS(clock_getres, FWD), .args = { V, OUT(TS) },
	    .rule = &request_clocks, .classify = request_clock_class },
	{ SYS(gettimeofday, LOCAL) },
	{ SYS(time, LOCAL) },
	{ SYS(getrandom, LOCAL) },
	{ SYS(exit, RMT_THREAD) },	/* the thread's mirror at home ends */
	{ SYS(exit_group, LOCAL) },
	{ SYS(restart_syscall, LOCAL) },
	{ SYS(set_robust_list, LOCAL) },
	{ SYS(rseq, LOCAL) },
	/* returns the local tid; glibc calls it only at start */
	{ SYS(set_tid_address, LOCAL) },
	{ SYS(arch_prctl, LOCAL) },
	{ SYS(sigaltstack, LOCAL) },
	{ SYS(rt_sigpending, LOCAL) },
	{ SYS(rt_sigsuspend, LOCAL) },
	{ SYS(rt_sigtimedwait, LOCAL) },
	{ SYS(pause, LOCAL) },
	{ SYS(getcpu, LOCAL) },
	{ SYS(membarrier, LOCAL) },
	{ SYS(msync, LOCAL) },
	{ SYS(mincore, LOCAL) },
	{ SYS(mlock, LOCAL) },
	{ SYS(munlock, LOCAL) },
	{ SYS(mlock2, LOCAL) },
	{ SYS(mlockall, LOCAL) },
	{ SYS(munlockall, LOCAL) },
	{ SYS(pkey_mprotect, LOCAL) },
	{ SYS(pkey_alloc, LOCAL) },
	{ SYS(pkey_free, LOCAL) },
	{ SYS(mbind, LOCAL) },
	{ SYS(set_mempolicy, LOCAL) },
	{ SYS(get_mempolicy, LOCAL) },
	{ SYS(set_mempolicy_home_node, LOCAL) },
	{ SYS(futex_waitv, LOCAL) },
	{ SYS(futex_wake, LOCAL) },
	{ SYS(futex_wait, LOCAL) },
	{ SYS(futex_requeue, LOCAL) },
	{ SYS(sched_get_priority_max, LOCAL) },
	{ SYS(sched_get_priority_min, LOCAL) },
	{ SYS(prctl, HOME), .rule = &request_prctl,
	    .why = "unlisted prctl option" },
	/* pid 0: the running copy, on this node's CPUs; else a home process */
	{ SYS(sched_getaffinity, FWD),
	    .args = { V, V, OUTA(1, 1, TF_TRIM | TF_INT) },
	    .rule = &request_self },
	{ SYS(sched_setaffinity, FWD), .args = { V, V, INA(1, 1, TF_INT) },
	    .rule = &request_self },
	{ SYS(sched_getparam, FWD), .args = { V, OUT(4) },
	    .rule = &request_self },
	{ SYS(sched_setparam, FWD), .args = { V, IN(4) },
	    .rule = &request_self },
	{ SYS(sched_getscheduler, FWD), .rule = &request_self },
	{ SYS(sched_setscheduler, FWD), .args = { V, V, IN(4) },
	    .rule = &request_self },
	{ SYS(sched_rr_get_interval, FWD), .args = { V, OUT(TS) },
	    .rule = &request_self },
	{ SYS(sched_getattr, FWD), .args = { V, OUTA(2, 1, TF_INT) },
	    .rule = &request_self },
	{ SYS(sched_setattr, HOME), .rule = &request_self,
	    .why = "sched_setattr of another process" },
	{ SYS(get_robust_list, HOME), .rule = &request_self,
	    .why = "robust futex list of another process" },

	/* CPU time: the guest agent adds what was used before */
	{ SYS(times, RMT_EMULATE), .classify = request_times_class },
	{ SYS(getrusage, FWD), .args = { V, OUT(RUSAGE) },
	    .classify = request_rusage_class },

	/* files and directories */
	{ SYS(read, FWD), .args = { V, OUTA(2, 1, RD), V },
	    .classify = request_fd_stub_class },
	{ SYS(write, FWD), .args = { V, INA(2, 1, TF_CLAMP), V },
	    .classify = request_fd_stub_class },
	{ SYS(pread64, FWD), .args = { V, OUTA(2, 1, RD), V, V },
	    .classify = request_fd_stub_class },
	{ SYS(pwrite64, FWD), .args = { V, INA(2, 1, TF_CLAMP), V, V },
	    .classify = request_fd_stub_class },
	{ SYS(readv, FWD), .args = { V, IOV(2, RMT_OUT), V } },
	{ SYS(writev, FWD), .args = { V, IOV(2, RMT_IN), V } },
	{ SYS(preadv, FWD), .args = { V, IOV(2, RMT_OUT), V, V, V } },
	{ SYS(pwritev, FWD), .args = { V, IOV(2, RMT_IN), V, V, V } },
	{ SYS(preadv2, FWD), .args = { V, IOV(2, RMT_OUT), V, V, V, V } },
	{ SYS(pwritev2, FWD), .args = { V, IOV(2, RMT_IN), V, V, V, V } },
	{ SYS(lseek, FWD), .classify = request_fd_stub_class },
	{ SYS(open, FWD), .args = { STR, V, V } },
	{ SYS(openat, FWD), .args = { V, STR, V, V } },
	{ SYS(openat2, FWD), .args = { V, STR, INA(3, 1, 0), V } },
	{ SYS(creat, FWD), .args = { STR, V } },
	{ SYS(close, FWD), .classify = request_fd_stub_class },
	{ SYS(close_range, FWD) },
	{ SYS(dup, FWD) },
	{ SYS(dup2, FWD) },
	{ SYS(dup3, FWD) },
	{ SYS(fcntl, HOME), .rule = &request_fcntl,
	    .why = "unlisted fcntl command" },
	{ SYS(flock, FWD), .classify = request_fd_stub_class },
	{ SYS(ioctl, HOME), .rule = &request_ioctl,
	    .why = "unlisted ioctl request" },
	{ SYS(stat, FWD), .args = { STR, OUT(STAT) } },
	{ SYS(lstat, FWD), .args = { STR, OUT(STAT) } },
	{ SYS(fstat, FWD), .args = { V, OUT(STAT) },
	    .classify = request_fd_stub_class },
	{ SYS(newfstatat, FWD), .args = { V, STR, OUT(STAT), V } },
	{ SYS(statx, FWD), .args = { V, STR, V, V, OUT(256) } },
	{ SYS(statfs, FWD), .args = { STR, OUT(STATFS) } },
	{ SYS(fstatfs, FWD), .args = { V, OUT(STATFS) } },
	{ SYS(getdents, FWD), .args = { V, OUTA(2, 1, RD), V } },
	{ SYS(getdents64, FWD), .args = { V, OUTA(2, 1, RD), V } },
	{ SYS(access, FWD), .args = { STR, V } },
	{ SYS(faccessat, FWD), .args = { V, STR, V } },
	{ SYS(faccessat2, FWD), .args = { V, STR, V, V } },
	{ SYS(readlink, FWD), .args = { STR, OUTA(2, 1, RD | TF_INT), V } },
	{ SYS(readlinkat, FWD),
	    .args = { V, STR, OUTA(3, 1, RD | TF_INT), V } },
	{ SYS(unlink, FWD), .args = { STR } },
	{ SYS(unlinkat, FWD), .args = { V, STR, V } },
	{ SYS(rename, FWD), .args = { STR, STR } },
	{ SYS(renameat, FWD), .args = { V, STR, V, STR } },
	{ SYS(renameat2, FWD), .args = { V, STR, V, STR, V } },
	{ SYS(mkdir, FWD), .args = { STR, V } },
	{ SYS(mkdirat, FWD), .args = { V, STR, V } },
	{ SYS(rmdir, FWD), .args = { STR } },
	{ SYS(mknod, FWD), .args = { STR, V, V } },
	{ SYS(mknodat, FWD), .args = { V, STR, V, V } },
	{ SYS(link, FWD), .args = { STR, STR } },
	{ SYS(linkat, FWD), .args = { V, STR, V, STR, V } },
	{ SYS(symlink, FWD), .args = { STR, STR } },
	{ SYS(symlinkat, FWD), .args = { STR, V, STR } },
	{ SYS(chmod, FWD), .args = { STR, V } },
	{ SYS(fchmod, FWD) },
	{ SYS(fchmodat, FWD), .args = { V, STR, V } },
	{ SYS(fchmodat2, FWD), .args = { V, STR, V, V } },
	{ SYS(chown, FWD), .args = { STR, V, V } },
	{ SYS(lchown, FWD), .args = { STR, V, V } },
	{ SYS(fchown, FWD) },
	{ SYS(fchownat, FWD), .args = { V, STR, V, V, V } },
	{ SYS(truncate, FWD), .args = { STR, V } },
	{ SYS(ftruncate, FWD) },
	{ SYS(fsync, FWD), .classify = request_fd_stub_class },
	{ SYS(fdatasync, FWD), .classify = request_fd_stub_class },
	{ SYS(sync, FWD) },
	{ SYS(syncfs, FWD) },
	{ SYS(sync_file_range, FWD) },
	{ SYS(fallocate, FWD) },
	{ SYS(fadvise64, FWD) },
	{ SYS(readahead, FWD) },
	{ SYS(utime, FWD), .args = { STR, IN(TS) } },
	{ SYS(utimes, FWD), .args = { STR, IN(ITS) } },
	{ SYS(futimesat, FWD), .args = { V, STR, IN(ITS) } },
	{ SYS(utimensat, FWD), .args = { V, STR, IN(ITS), V } },
	{ SYS(umask, FWD) },
	{ SYS(sendfile, FWD), .args = { V, V, INOUT(8), V } },
	{ SYS(copy_file_range, FWD),
	    .args = { V, INOUT(8), V, INOUT(8), V, V } },
	{ SYS(splice, FWD), .args = { V, INOUT(8), V, INOUT(8), V, V } },
	{ SYS(tee, FWD) },
	{ SYS(cachestat, FWD), .args = { V, IN(16), OUT(32), V } },
	{ SYS(setxattr, FWD), .args = { STR, STR, INA(3, 1, 0), V, V } },
	{ SYS(lsetxattr, FWD), .args = { STR, STR, INA(3, 1, 0), V, V } },
	{ SYS(fsetxattr, FWD), .args = { V, STR, INA(3, 1, 0), V, V } },
	{ SYS(getxattr, FWD), .args = { STR, STR, OUTA(3, 1, RD), V } },
	{ SYS(lgetxattr, FWD), .args = { STR, STR, OUTA(3, 1, RD), V } },
	{ SYS(fgetxattr, FWD), .args = { V, STR, OUTA(3, 1, RD), V } },
	{ SYS(listxattr, FWD), .args = { STR, OUTA(2, 1, RD), V } },
	{ SYS(llistxattr, FWD), .args = { STR, OUTA(2, 1, RD), V } },
	{ SYS(flistxattr, FWD), .args = { V, OUTA(2, 1, RD), V } },
	{ SYS(removexattr, FWD), .args = { STR, STR } },
	{ SYS(lremovexattr, FWD), .args = { STR, STR } },
	{ SYS(fremovexattr, FWD), .args = { V, STR } },
	{ SYS(inotify_init, FWD) },
	{ SYS(inotify_init1, FWD) },
	{ SYS(inotify_add_watch, FWD), .args = { V, STR, V } },
	{ SYS(inotify_rm_watch, FWD) },
	{ SYS(fanotify_init, FWD) },
	{ SYS(fanotify_mark, FWD), .args = { V, V, V, V, STR } },

	/* the working directory and root */
	{ SYS(getcwd, FWD), .args = { OUTA(1, 1, RD), V } },
	{ SYS(chdir, FWD), .args = { STR } },
	{ SYS(fchdir, FWD) },
	{ SYS(chroot, FWD), .args = { STR } },

	/* pipes, event and timer descriptors */
	{ SYS(pipe, FWD), .args = { OUT(8) } },
	{ SYS(pipe2, FWD), .args = { OUT(8), V } },
	{ SYS(eventfd, FWD) },
	{ SYS(eventfd2, FWD) },
	{ SYS(timerfd_create, FWD) },
	{ SYS(timerfd_settime, FWD), .args = { V, V, IN(ITS), OUT(ITS) } },
	{ SYS(timerfd_gettime, FWD), .args = { V, OUT(ITS) } },

	/*
	 * Waiting. A signal mask given to ppoll, pselect6 or epoll_pwait is
	 * R's for the wait's duration: it stays with the guest agent, which
	 * decides by it which signals end the wait, and the wait is
	 * forwarded without it (marshal.c m_mask).
	 */
	{ SYS(poll, FWD),
	    .args = { INOUTA(1, sizeof(struct pollfd), TF_INT), V, V } },
	{ SYS(ppoll, FWD), .args = { INOUTA(1, sizeof(struct pollfd), TF_INT),
	    V, INOUT(TS), MASK, V } },
	{ SYS(select, FWD), .args = { V, FDSET, FDSET, FDSET, INOUT(TS) } },
	{ SYS(pselect6, FWD),
	    .args = { V, FDSET, FDSET, FDSET, INOUT(TS), SIGDATA } },
	{ SYS(epoll_create, FWD) },
	{ SYS(epoll_create1, FWD) },
	{ SYS(epoll_ctl, FWD), .args = { V, V, V, IN(EPOLL_EVENT) } },
	{ SYS(epoll_wait, FWD),
	    .args = { V, OUTA(2, EPOLL_EVENT, RD | TF_INT), V },
	    .trim_unit = EPOLL_EVENT },
	{ SYS(epoll_pwait, FWD),
	    .args = { V, OUTA(2, EPOLL_EVENT, RD | TF_INT), V, V,
	    MASK, V }, .trim_unit = EPOLL_EVENT },
	{ SYS(epoll_pwait2, FWD),
	    .args = { V, OUTA(2, EPOLL_EVENT, RD | TF_INT), V,
	    IN(TS), MASK, V }, .trim_unit = EPOLL_EVENT },

	/* sockets: the home node's network */
	{ SYS(socket, FWD) },
	{ SYS(socketpair, FWD), .args = { V, V, V, OUT(8) } },
	{ SYS(connect, FWD), .args = { V, INA(2, 1, TF_INT), V } },
	{ SYS(bind, FWD), .args = { V, INA(2, 1, TF_INT), V } },
	{ SYS(listen, FWD) },
	{ SYS(accept, FWD), .args = { V, LENP(2), INOUT(4) } },
	{ SYS(accept4, FWD), .args = { V, LENP(2), INOUT(4), V } },
	{ SYS(shutdown, FWD) },
	{ SYS(getsockname, FWD), .args = { V, LENP(2), INOUT(4) } },
	{ SYS(getpeername, FWD), .args = { V, LENP(2), INOUT(4) } },
	{ SYS(sendto, FWD), .args = { V, INA(2, 1, TF_CLAMP), V, V,
	    INA(5, 1, TF_INT), V } },
	{ SYS(recvfrom, FWD), .args = { V, OUTA(2, 1, RD | TF_NOBOUND), V, V,
	    LENP(5), INOUT(4) } },
	{ SYS(sendmsg, FWD), .args = { V, MSG(RMT_IN), V } },
	{ SYS(recvmsg, FWD), .args = { V, MSG(RMT_OUT), V } },
	{ SYS(setsockopt, FWD), .args = { V, V, V, INA(4, 1, TF_INT), V },
	    .classify = request_sockopt_class,
	    .why = "socket option with pointers" },
	{ SYS(getsockopt, FWD), .args = { V, V, V, LENP(4), INOUT(4) },
	    .classify = request_sockopt_class,
	    .why = "socket option with pointers" },
	{ SYS(sendmmsg, FWD), .args = { V, MMSG(2, RMT_IN), V, V } },
	{ SYS(recvmmsg, FWD),
	    .args = { V, MMSG(2, RMT_OUT), V, V, INOUT(TS) } },

	/*
	 * identity and credentials: the home process's. The guest answers
	 * the TI_READ ones from what the home last said (ident.c); a
	 * TI_CHANGE one goes home, and the home's answer follows what it
	 * changed.
	 */
	{ SYS(getpid, FWD), .ident = TI_READ },
	{ SYS(getppid, FWD), .ident = TI_READ },
	{ SYS(gettid, FWD), .ident = TI_READ,
	    .classify = request_gettid_class },
	{ SYS(getuid, FWD), .ident = TI_READ },
	{ SYS(geteuid, FWD), .ident = TI_READ },
	{ SYS(getgid, FWD), .ident = TI_READ },
	{ SYS(getegid, FWD), .ident = TI_READ },
	{ SYS(getresuid, FWD), .args = { OUT(4), OUT(4), OUT(4) },
	    .ident = TI_READ },
	{ SYS(getresgid, FWD), .args = { OUT(4), OUT(4), OUT(4) },
	    .ident = TI_READ },
	{ SYS(getgroups, FWD), .args = { V, OUTA(0, 4, TF_TRIM | TF_INT) },
	    .trim_unit = 4, .ident = TI_READ },
	{ SYS(setgroups, FWD), .args = { V, INA(0, 4, TF_INT) },
	    .ident = TI_CHANGE },
	{ SYS(setuid, FWD), .ident = TI_CHANGE },
	{ SYS(setgid, FWD), .ident = TI_CHANGE },
	{ SYS(setreuid, FWD), .ident = TI_CHANGE },
	{ SYS(setregid, FWD), .ident = TI_CHANGE },
	{ SYS(setresuid, FWD), .ident = TI_CHANGE },
	{ SYS(setresgid, FWD), .ident = TI_CHANGE },
	{ SYS(setfsuid, FWD), .ident = TI_CHANGE },
	{ SYS(setfsgid, FWD), .ident = TI_CHANGE },
	{ SYS(capget, FWD), .args = { INOUT(8), CAPDATA(RMT_OUT) } },
	{ SYS(capset, FWD), .args = { IN(8), CAPDATA(RMT_IN) } },
	{ SYS(getpgrp, FWD), .ident = TI_READ },
	{ SYS(getpgid, FWD), .ident = TI_READ },
	{ SYS(setpgid, FWD), .ident = TI_CHANGE },
	{ SYS(getsid, FWD), .ident = TI_READ },
	{ SYS(setsid, FWD), .ident = TI_CHANGE },
	{ SYS(personality, FWD) },

	/*
	 * Signals to processes: executed at home, where the targets are. A
	 * signal the process sends itself reaches P; the deputy catches it
	 * there like any other and passes it on to R.
	 */
	{ SYS(kill, FWD) },
	{ SYS(tkill, FWD) },
	{ SYS(tgkill, FWD) },
	{ SYS(rt_sigqueueinfo, FWD), .args = { V, V, IN(SIGINFO) } },
	{ SYS(rt_tgsigqueueinfo, FWD), .args = { V, V, V, IN(SIGINFO) } },
	{ SYS(pidfd_open, FWD) },
	{ SYS(pidfd_send_signal, FWD), .args = { V, V, IN(SIGINFO), V } },
	{ SYS(pidfd_getfd, FWD) },
	/* signalfd reads signals the deputy takes first: home */
	{ SYS(signalfd, HOME), .why = "signalfd" },
	{ SYS(signalfd4, HOME), .why = "signalfd" },

	/* children live at home */
	{ SYS(wait4, FWD), .args = { V, INOUT(4), V, INOUT(RUSAGE) } },
	{ SYS(waitid, FWD),
	    .args = { V, V, INOUT(SIGINFO), V, INOUT(RUSAGE) } },

	/* timers: real time at home, CPU time goes home */
	{ SYS(alarm, FWD) },
	{ SYS(getitimer, FWD), .args = { V, OUT(ITS) },
	    .classify = request_itimer_class, .why = "CPU-time timer" },
	{ SYS(setitimer, FWD), .args = { V, IN(ITS), OUT(ITS) },
	    .classify = request_itimer_class, .why = "CPU-time timer" },
	{ SYS(timer_create, FWD), .args = { V, IN(SIGEVENT), OUT(4) },
	    .classify = request_timer_class, .why = "CPU-time timer" },
	{ SYS(timer_settime, FWD), .args = { V, V, IN(ITS), OUT(ITS) } },
	{ SYS(timer_gettime, FWD), .args = { V, OUT(ITS) } },
	{ SYS(timer_getoverrun, FWD) },
	{ SYS(timer_delete, FWD) },

	/* the home node's system: names, clocks, limits, priorities */
	{ SYS(uname, FWD), .args = { OUT(sizeof(struct utsname)) } },
	{ SYS(sysinfo, FWD), .args = { OUT(sizeof(struct sysinfo)) } },
	{ SYS(settimeofday, FWD), .args = { IN(TS), IN(8) } },
	{ SYS(clock_settime, FWD), .args = { V, IN(TS) } },
	{ SYS(clock_adjtime, FWD), .args = { V, INOUT(sizeof(struct timex)) } },
	{ SYS(adjtimex, FWD), .args = { INOUT(sizeof(struct timex)) } },
	{ SYS(getrlimit, FWD), .args = { V, OUT(RLIM) } },
	{ SYS(setrlimit, FWD), .args = { V, IN(RLIM) } },
	{ SYS(prlimit64, FWD), .args = { V, V, IN(RLIM), OUT(RLIM) } },
	{ SYS(getpriority, FWD) },
	{ SYS(setpriority, FWD) },
	{ SYS(ioprio_get, FWD) },
	{ SYS(ioprio_set, FWD) },
	{ SYS(mq_open, FWD), .args = { STR, V, V, IN(MQATTR) } },
	{ SYS(mq_unlink, FWD), .args = { STR } },
	{ SYS(mq_timedsend, FWD), .args = { V, INA(2, 1, 0), V, V, IN(TS) } },
	{ SYS(mq_timedreceive, FWD),
	    .args = { V, OUTA(2, 1, TF_TRIM), V, OUT(4),
	    IN(TS) } },
	{ SYS(mq_notify, FWD), .args = { V, IN(SIGEVENT) } },
	{ SYS(mq_getsetattr, FWD), .args = { V, IN(MQATTR), OUT(MQATTR) } },

	/* new processes and programs */
	{ SYS(fork, HOME), .why = "new process" },
	{ SYS(vfork, HOME), .why = "new process" },
	{ SYS(clone, RMT_THREAD), .why = "new process" },
	{ SYS(clone3, RMT_THREAD), .why = "new process" },
	{ SYS(execve, HOME), .why = "new program" },
	{ SYS(execveat, HOME), .why = "new program" },
	{ SYS(unshare, HOME), .why = "namespaces" },
	{ SYS(setns, HOME), .why = "namespaces" },

	/* memory that is not the process's alone, or is read later */
	{ SYS(memfd_create, HOME),
	    .why = "memfd: its fd would be at home, its memory here" },
	{ SYS(memfd_secret, HOME), .why = "memfd_secret" },
	{ SYS(remap_file_pages, HOME), .why = "file mapping" },
	{ SYS(map_shadow_stack, HOME), .why = "shadow stack" },
	{ SYS(mseal, HOME), .why = "sealed memory" },
	{ SYS(modify_ldt, HOME), .why = "LDT" },
	{ SYS(set_thread_area, HOME), .why = "TLS descriptors" },
	{ SYS(get_thread_area, HOME), .why = "TLS descriptors" },
	{ SYS(shmget, HOME), .why = "System V IPC" },
	{ SYS(shmat, HOME), .why = "System V IPC" },
	{ SYS(shmdt, HOME), .why = "System V IPC" },
	{ SYS(shmctl, HOME), .why = "System V IPC" },
	{ SYS(semget, HOME), .why = "System V IPC" },
	{ SYS(semop, HOME), .why = "System V IPC" },
	{ SYS(semtimedop, HOME), .why = "System V IPC" },
	{ SYS(semctl, HOME), .why = "System V IPC" },
	{ SYS(msgget, HOME), .why = "System V IPC" },
	{ SYS(msgsnd, HOME), .why = "System V IPC" },
	{ SYS(msgrcv, HOME), .why = "System V IPC" },
	{ SYS(msgctl, HOME), .why = "System V IPC" },
	{ SYS(io_setup, HOME), .why = "asynchronous I/O" },
	{ SYS(io_destroy, HOME), .why = "asynchronous I/O" },
	{ SYS(io_submit, HOME), .why = "asynchronous I/O" },
	{ SYS(io_cancel, HOME), .why = "asynchronous I/O" },
	{ SYS(io_getevents, HOME), .why = "asynchronous I/O" },
	{ SYS(io_pgetevents, HOME), .why = "asynchronous I/O" },
	{ SYS(io_uring_setup, HOME), .why = "io_uring" },
	{ SYS(io_uring_enter, HOME), .why = "io_uring" },
	{ SYS(io_uring_register, HOME), .why = "io_uring" },
	{ SYS(userfaultfd, HOME), .why = "userfaultfd" },
	{ SYS(vmsplice, HOME), .why = "vmsplice" },
	{ SYS(migrate_pages, HOME), .why = "another process's memory" },
	{ SYS(move_pages, HOME), .why = "another process's memory" },
	{ SYS(process_madvise, HOME), .why = "another process's memory" },
	{ SYS(process_mrelease, HOME), .why = "another process's memory" },

	/* other processes, and the kernel's view of this one */
	{ SYS(ptrace, HOME), .why = "ptrace" },
	{ SYS(process_vm_readv, HOME), .why = "another process's memory" },
	{ SYS(process_vm_writev, HOME), .why = "another process's memory" },
	{ SYS(kcmp, HOME), .why = "kcmp" },
	{ SYS(seccomp, HOME), .why = "seccomp" },
	{ SYS(landlock_create_ruleset, HOME), .why = "landlock" },
	{ SYS(landlock_add_rule, HOME), .why = "landlock" },
	{ SYS(landlock_restrict_self, HOME), .why = "landlock" },
	{ SYS(perf_event_open, HOME), .why = "perf events" },
	{ SYS(bpf, HOME), .why = "bpf" },
	{ SYS(name_to_handle_at, HOME), .why = "file handles" },
	{ SYS(open_by_handle_at, HOME), .why = "file handles" },
	{ SYS(add_key, HOME), .why = "keyrings" },
	{ SYS(request_key, HOME), .why = "keyrings" },
	{ SYS(keyctl, HOME), .why = "keyrings" },

	/* administration */
	{ SYS(mount, HOME), .why = "administration" },
	{ SYS(umount2, HOME), .why = "administration" },
	{ SYS(pivot_root, HOME), .why = "administration" },
	{ SYS(open_tree, HOME), .why = "administration" },
	{ SYS(move_mount, HOME), .why = "administration" },
	{ SYS(fsopen, HOME), .why = "administration" },
	{ SYS(fsconfig, HOME), .why = "administration" },
	{ SYS(fsmount, HOME), .why = "administration" },
	{ SYS(fspick, HOME), .why = "administration" },
	{ SYS(mount_setattr, HOME), .why = "administration" },
	{ SYS(swapon, HOME), .why = "administration" },
	{ SYS(swapoff, HOME), .why = "administration" },
	{ SYS(reboot, HOME), .why = "administration" },
	{ SYS(sethostname, HOME), .why = "administration" },
	{ SYS(setdomainname, HOME), .why = "administration" },
	{ SYS(iopl, HOME), .why = "administration" },
	{ SYS(ioperm, HOME), .why = "administration" },
	{ SYS(init_module, HOME), .why = "administration" },
	{ SYS(finit_module, HOME), .why = "administration" },
	{ SYS(delete_module, HOME), .why = "administration" },
	{ SYS(kexec_load, HOME), .why = "administration" },
	{ SYS(kexec_file_load, HOME), .why = "administration" },
	{ SYS(quotactl, HOME), .why = "administration" },
	{ SYS(quotactl_fd, HOME), .why = "administration" },
	{ SYS(acct, HOME), .why = "administration" },
	{ SYS(vhangup, HOME), .why = "administration" },
	{ SYS(syslog, HOME), .why = "administration" },
	{ SYS(sysfs, HOME), .why = "administration" },
	{ SYS(ustat, HOME), .why = "administration" },
	{ SYS(uselib, HOME), .why = "administration" },
};

static const struct table_entry *table_index[TABLE_NR_MAX];

static void
table_build(void)
{
	static int	 built;
	size_t		 i;
	char		*cause;

	if (built)
		return;
	if (table_check(&cause) != 0)
		fatalx("syscall table: %s", cause);
	for (i = 0; i < nitems(table); i++)
		table_index[table[i].nr] = &table[i];
	built = 1;
}

const struct table_entry *
table_entries(size_t *n)
{
	*n = nitems(table);
	return table;
}

const struct table_entry *
table_lookup(int nr)
{
	table_build();
	if (nr < 0 || nr >= TABLE_NR_MAX)
		return NULL;
	return table_index[nr];
}

const char *
table_name(int nr)
{
	const struct table_entry	*e = table_lookup(nr);

	return e != NULL ? e->name : "unknown";
}

const char *
table_class_name(enum rmt_class class)
{
	switch (class) {
	case RMT_LOCAL:
		return "local";
	case RMT_EMULATE:
		return "emulate";
	case RMT_FORWARD:
		return "forward";
	case RMT_MAP:
		return "map";
	case RMT_THREAD:
		return "thread";
	case RMT_HOME:
		break;
	}
	return "home";
}

/*
 * What becomes of call nr with these arguments, and how its arguments are
 * described. `self` is the process's pid at home (0 if unknown), which
 * names its own CPU clocks.
 */
void
table_resolve(int nr, const uint64_t *args, pid_t self, struct table_call *tc)
{
	const struct table_entry	*e = table_lookup(nr);
	const struct table_rule		*r;
	const struct table_sub		*s = NULL;
	uint32_t			 v;
	size_t				 i;

	memset(tc, 0, sizeof *tc);
	tc->class = RMT_HOME;
	tc->name = "unknown";
	if (e == NULL)
		return;
	tc->entry = e;
	tc->name = e->name;
	memcpy(tc->args, e->args, sizeof tc->args);
	if ((r = e->rule) != NULL) {
		v = (uint32_t)args[r->arg];
		if (r->bit != 0 && (v & r->bit)) {
			tc->class = RMT_LOCAL;
			return;
		}
		for (i = 0; i < r->nsubs; i++) {
			if (r->subs[i].value == v) {
				s = &r->subs[i];
				break;
			}
		}
	}
	if (s != NULL) {
		tc->class = s->marked && args[0] >> 32 == RMT_CLOCK_MAGIC ?
		    RMT_LOCAL : s->class;
		tc->sub = s->name;
		if (r->sub_arg >= 0)
			tc->args[r->sub_arg] = s->arg;
	} else if (e->classify != NULL)
		tc->class = e->classify(args, self);
	else
		tc->class = e->class;
}

/* The arguments that are pointers, as a bit mask. */
unsigned int
table_pointers(const struct table_call *tc)
{
	unsigned int	mask = 0;
	int		i;

	for (i = 0; i < 6; i++) {
		if (tc->args[i].kind != TA_VAL)
			mask |= 1U << i;
	}
	return mask;
}

static int
table_check_arg(const struct table_entry *e, const char *sub,
    const struct table_arg *a, int i, char **cause)
{
	const char	*what = NULL;

	switch (a->kind) {
	case TA_VAL:
	case TA_STR:
	case TA_SIGDATA:
	case TA_MASK:
		if (a->flags != 0)
			what = "flags on an argument without a buffer";
		break;
	case TA_BUF:
		if (a->dir < RMT_IN || a->dir > RMT_INOUT)
			what = "no direction";
		else if (a->size == 0 && (a->len >= 6 || a->len == i ||
		    e->args[a->len].kind != TA_VAL))
			what = "size taken from a bad argument";
		else if ((a->flags & TF_TRIM) && a->dir != RMT_OUT)
			what = "a trimmed buffer that is not out";
		else if ((a->flags & TF_CLAMP) && a->size != 0)
			what = "a clamped fixed size";
		break;
	case TA_LENP:
		if (a->len >= 6 || e->args[a->len].kind != TA_BUF ||
		    e->args[a->len].size != 4 ||
		    e->args[a->len].dir != RMT_INOUT)
			what = "length pointer is not an in-out int";
		break;
	case TA_IOV:
	case TA_MMSG:
	case TA_FDSET:
		if (a->len >= 6 || a->len == i ||
		    e->args[a->len].kind != TA_VAL)
			what = "count taken from a bad argument";
		break;
	case TA_MSG:
	case TA_CAPDATA:
		break;
	default:
		what = "unknown kind";
	}
	if (what == NULL)
		return 0;
	xasprintf(cause, "%s%s%s argument %d: %s", e->name, sub ? " " : "",
	    sub ? sub : "", i, what);
	return -1;
}

/*
 * The table's own consistency: numbers in range and listed once, local
 * and emulated calls without buffers to describe, every description
 * well-formed, trim units only where something is trimmed.
 */
int
table_check(char **cause)
{
	static uint8_t			 seen[TABLE_NR_MAX];
	const struct table_entry	*e;
	const struct table_rule		*r;
	size_t				 i, j;
	int				 k, trims;

	memset(seen, 0, sizeof seen);
	for (i = 0; i < nitems(table); i++) {
		e = &table[i];
		if (e->nr < 0 || e->nr >= TABLE_NR_MAX) {
			xasprintf(cause, "%s: number %d out of range",
			    e->name, e->nr);
			return -1;
		}
		if (seen[e->nr]++) {
			xasprintf(cause, "%s: number %d listed twice",
			    e->name, e->nr);
			return -1;
		}
		trims = 0;
		for (k = 0; k < 6; k++) {
			if (table_check_arg(e, NULL, &e->args[k], k,
			    cause) != 0)
				return -1;
			if (e->args[k].flags & TF_TRIM)
				trims++;
		}
		if ((e->class == RMT_LOCAL || e->class == RMT_EMULATE) &&
		    table_pointers(&(struct table_call){ .args = {
		    e->args[0], e->args[1], e->args[2], e->args[3],
		    e->args[4], e->args[5] } }) != 0) {
			xasprintf(cause, "%s: %s call with described "
			    "arguments", e->name, table_class_name(e->class));
			return -1;
		}
		if (e->trim_unit != 0 && trims == 0) {
			xasprintf(cause, "%s: trim unit without a trimmed "
			    "buffer", e->name);
			return -1;
		}
		if (e->class == RMT_HOME && e->rule == NULL &&
		    e->classify == NULL && e->why == NULL) {
			xasprintf(cause, "%s: goes home without a reason",
			    e->name);
			return -1;
		}
		if ((r = e->rule) == NULL)
			continue;
		if (r->arg < 0 || r->arg >= 6 || r->sub_arg >= 6 ||
		    (r->bit != 0) == (r->nsubs != 0)) {
			xasprintf(cause, "%s: bad rule", e->name);
			return -1;
		}
		for (j = 0; j < r->nsubs; j++) {
			for (k = 0; k < (int)j; k++) {
				if (r->subs[k].value == r->subs[j].value) {
					xasprintf(cause, "%s: %s and %s have "
					    "the same value", e->name,
					    r->subs[k].name, r->subs[j].name);
					return -1;
				}
			}
			if (r->sub_arg >= 0 && table_check_arg(e,
			    r->subs[j].name, &r->subs[j].arg, r->sub_arg,
			    cause) != 0)
				return -1;
			if (r->subs[j].class == RMT_LOCAL &&
			    r->subs[j].arg.kind != TA_VAL) {
				xasprintf(cause, "%s %s: local with a "
				    "described argument", e->name,
				    r->subs[j].name);
				return -1;
			}
		}
	}
	return 0;
}
