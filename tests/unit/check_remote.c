/*
 * Check suite for libremote/: the table and the filter built from it
 * (checked against each other by a small BPF interpreter, and loaded for
 * real in a child); hostile calls to the home and replies to the guest
 * are in check_remote-hostile.c. check_forward carries calls through the
 * whole path.
 */
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "libremote/internal.h"
#include "check_remote.h"
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

static enum rmt_class
class_of(int nr, uint64_t a0, uint64_t a1, uint64_t a2, uint64_t a3,
    pid_t self)
{
	uint64_t		args[6] = { a0, a1, a2, a3, 0, 0 };
	struct table_call	tc;

	table_resolve(nr, args, self, &tc);
	return tc.class;
}

/* --- the table ----------------------------------------------------------- */

START_TEST(test_table_check)
{
	const struct table_entry	*tab;
	char				*cause = NULL;
	size_t				 n, i;
	int				 seen[TABLE_NR_MAX] = { 0 };

	ck_assert_msg(table_check(&cause) == 0, "%s", cause);
	tab = table_entries(&n);
	ck_assert_uint_gt(n, 300);
	for (i = 0; i < n; i++) {
		ck_assert_int_eq(seen[tab[i].nr]++, 0);
		ck_assert_ptr_eq(table_lookup(tab[i].nr), &tab[i]);
	}
	/* every call this x86_64 kernel has up to rseq, and the newer ones */
	for (i = 0; i <= SYS_rseq; i++) {
		if (i == SYS_tuxcall || i == SYS_security ||
		    i == SYS_afs_syscall || i == SYS_vserver ||
		    i == SYS_getpmsg || i == SYS_putpmsg ||
		    i == SYS_create_module || i == SYS_get_kernel_syms ||
		    i == SYS_query_module || i == SYS_nfsservctl ||
		    i == SYS__sysctl || i == SYS_epoll_ctl_old ||
		    i == SYS_epoll_wait_old || i == SYS_lookup_dcookie)
			continue;	/* ENOSYS: home, as unknown */
		ck_assert_msg(seen[i], "system call %zu not in the table", i);
	}
	for (i = SYS_pidfd_send_signal; i <= SYS_set_mempolicy_home_node; i++)
		ck_assert_msg(seen[i], "system call %zu not in the table", i);
	ck_assert_ptr_null(table_lookup(-1));
	ck_assert_ptr_null(table_lookup(TABLE_NR_MAX));
	ck_assert_str_eq(table_name(SYS_read), "read");
	ck_assert_str_eq(table_name(999), "unknown");
}
END_TEST

START_TEST(test_table_classes)
{
	struct table_call	tc;
	uint64_t		args[6] = { 0, TCGETS, 0 };
	pid_t			self = 4242;

	ck_assert_int_eq(class_of(SYS_read, 0, 0, 0, 0, 0), RMT_FORWARD);
	ck_assert_int_eq(class_of(SYS_futex, 0, 0, 0, 0, 0), RMT_LOCAL);
	ck_assert_int_eq(class_of(SYS_fork, 0, 0, 0, 0, 0), RMT_HOME);
	ck_assert_int_eq(class_of(999, 0, 0, 0, 0, 0), RMT_HOME);
	ck_assert_int_eq(class_of(-1, 0, 0, 0, 0, 0), RMT_HOME);

	/* memory: anonymous here, a file mapped here, but writable shared */
	ck_assert_int_eq(class_of(SYS_mmap, 0, 4096, PROT_READ,
	    MAP_PRIVATE | MAP_ANONYMOUS, 0), RMT_LOCAL);
	ck_assert_int_eq(class_of(SYS_mmap, 0, 4096, PROT_READ,
	    MAP_SHARED | MAP_ANONYMOUS, 0), RMT_LOCAL);
	ck_assert_int_eq(class_of(SYS_mmap, 0, 4096, PROT_READ, MAP_PRIVATE,
	    0), RMT_MAP);
	ck_assert_int_eq(class_of(SYS_mmap, 0, 4096, 7, MAP_PRIVATE, 0), RMT_MAP);
	ck_assert_int_eq(class_of(SYS_mmap, 0, 4096, PROT_READ, MAP_SHARED,
	    0), RMT_MAP);
	ck_assert_int_eq(class_of(SYS_mmap, 0, 4096, 3, MAP_SHARED, 0), RMT_HOME);
	ck_assert_int_eq(class_of(SYS_mmap, 0, 4096, 3, MAP_SHARED_VALIDATE,
	    0), RMT_HOME);

	/* clocks: the node's here, its CPU time emulated, others home */
	ck_assert_int_eq(class_of(SYS_clock_gettime, CLOCK_MONOTONIC, 0, 0, 0,
	    self), RMT_LOCAL);
	ck_assert_int_eq(class_of(SYS_clock_gettime, 0x100000000ULL |
	    CLOCK_REALTIME, 0, 0, 0, self), RMT_LOCAL);
	ck_assert_int_eq(class_of(SYS_clock_gettime, CLOCK_PROCESS_CPUTIME_ID,
	    0, 0, 0, self), RMT_EMULATE);
	ck_assert_int_eq(class_of(SYS_clock_getres, CLOCK_THREAD_CPUTIME_ID,
	    0, 0, 0, self), RMT_EMULATE);
	ck_assert_int_eq(class_of(SYS_clock_gettime,
	    (uint32_t)~self << 3 | 2, 0, 0, 0, self), RMT_EMULATE);
	ck_assert_int_eq(class_of(SYS_clock_gettime,
	    (uint32_t)~0 << 3 | 6, 0, 0, 0, self), RMT_EMULATE);
	ck_assert_int_eq(class_of(SYS_clock_gettime,
	    (uint32_t)~99 << 3 | 2, 0, 0, 0, self), RMT_FORWARD);
	ck_assert_int_eq(class_of(SYS_clock_gettime,
	    (uint32_t)~3 << 3 | 3, 0, 0, 0, self), RMT_FORWARD);
	ck_assert_int_eq(class_of(SYS_clock_gettime, 10, 0, 0, 0, self),
	    RMT_FORWARD);
	ck_assert_int_eq(class_of(SYS_clock_nanosleep,
	    CLOCK_PROCESS_CPUTIME_ID, 0, 0, 0, self), RMT_HOME);
	ck_assert_int_eq(class_of(SYS_clock_nanosleep, CLOCK_MONOTONIC, 0, 0,
	    0, self), RMT_LOCAL);
	ck_assert_int_eq(class_of(SYS_times, 0x1000, 0, 0, 0, self),
	    RMT_EMULATE);
	/* times(NULL): the node's ticks, the usage stub's own call */
	ck_assert_int_eq(class_of(SYS_times, 0, 0, 0, 0, self), RMT_LOCAL);
	ck_assert_int_eq(class_of(SYS_getrusage, RUSAGE_SELF, 0, 0, 0, self),
	    RMT_EMULATE);
	ck_assert_int_eq(class_of(SYS_getrusage, (uint32_t)RUSAGE_CHILDREN, 0,
	    0, 0, self), RMT_FORWARD);
	ck_assert_int_eq(class_of(SYS_setitimer, ITIMER_REAL, 0, 0, 0, self),
	    RMT_FORWARD);
	ck_assert_int_eq(class_of(SYS_setitimer, ITIMER_PROF, 0, 0, 0, self),
	    RMT_HOME);
	ck_assert_int_eq(class_of(SYS_timer_create, CLOCK_PROCESS_CPUTIME_ID,
	    0, 0, 0, self), RMT_HOME);

	/* requests */
	ck_assert_int_eq(class_of(SYS_ioctl, 0, TCGETS, 0, 0, 0), RMT_FORWARD);
	ck_assert_int_eq(class_of(SYS_ioctl, 0, 0x4b33, 0, 0, 0), RMT_HOME);
	ck_assert_int_eq(class_of(SYS_fcntl, 0, F_GETLK, 0, 0, 0),
	    RMT_FORWARD);
	ck_assert_int_eq(class_of(SYS_fcntl, 0, 4242, 0, 0, 0), RMT_HOME);
	ck_assert_int_eq(class_of(SYS_prctl, PR_SET_NAME, 0, 0, 0, 0),
	    RMT_FORWARD);
	ck_assert_int_eq(class_of(SYS_prctl, PR_GET_TIMERSLACK, 0, 0, 0, 0),
	    RMT_LOCAL);
	ck_assert_int_eq(class_of(SYS_prctl, PR_SET_DUMPABLE, 0, 0, 0, 0),
	    RMT_HOME);
	ck_assert_int_eq(class_of(SYS_prctl, PR_SET_SECCOMP, 0, 0, 0, 0),
	    RMT_HOME);
	ck_assert_int_eq(class_of(SYS_sched_getaffinity, 0, 0, 0, 0, 0),
	    RMT_LOCAL);
	ck_assert_int_eq(class_of(SYS_sched_getaffinity, 42, 0, 0, 0, 0),
	    RMT_FORWARD);
	ck_assert_int_eq(class_of(SYS_setsockopt, 0, SOL_SOCKET,
	    SO_ATTACH_FILTER, 0, 0), RMT_HOME);
	ck_assert_int_eq(class_of(SYS_setsockopt, 0, SOL_SOCKET, SO_RCVBUF, 0,
	    0), RMT_FORWARD);

	/* a sub-request's description replaces the argument's */
	table_resolve(SYS_ioctl, args, 0, &tc);
	ck_assert_str_eq(tc.sub, "TCGETS");
	ck_assert_int_eq(tc.args[2].kind, TA_BUF);
	ck_assert_int_eq(tc.args[2].dir, RMT_OUT);
	ck_assert_uint_eq(tc.args[2].size, 36);
	ck_assert_uint_eq(table_pointers(&tc), 1U << 2);
	args[1] = FIOCLEX;
	table_resolve(SYS_ioctl, args, 0, &tc);
	ck_assert_uint_eq(table_pointers(&tc), 0);
}
END_TEST

/*
 * The sandbox: whatever the arguments, nothing that reaches files,
 * processes, the network or the kernel's configuration runs here.
 */
START_TEST(test_table_sandbox)
{
	static const int never[] = {
		SYS_open, SYS_openat, SYS_openat2, SYS_creat, SYS_stat,
		SYS_read, SYS_write, SYS_readlink, SYS_unlink, SYS_rename,
		SYS_mkdir, SYS_chdir, SYS_getdents64, SYS_socket,
		SYS_connect, SYS_bind, SYS_sendto, SYS_kill, SYS_tgkill,
		SYS_ptrace, SYS_process_vm_readv, SYS_execve, SYS_fork,
		SYS_clone, SYS_clone3, SYS_ioctl, SYS_fcntl, SYS_mount,
		SYS_uname, SYS_sysinfo, SYS_getpid, SYS_wait4, SYS_pipe2,
		SYS_memfd_create, SYS_io_uring_setup, SYS_pidfd_open,
		SYS_shmget, SYS_bpf, SYS_perf_event_open, SYS_userfaultfd,
		SYS_setrlimit, SYS_prlimit64, SYS_chroot, SYS_seccomp,
	};
	uint64_t	 vals[] = { 0, 1, 2, 3, 4, 5, 0x20, 0x21, 0x5401,
	    0xffffffff, 0x100000000ULL, ~0ULL };
	size_t		 i, j, k;

	for (i = 0; i < nitems(never); i++) {
		for (j = 0; j < nitems(vals); j++) {
			for (k = 0; k < 4; k++) {
				uint64_t a[4] = { 0, 0, 0, 0 };

				a[k] = vals[j];
				ck_assert_int_ne(class_of(never[i], a[0], a[1],
				    a[2], a[3], 0), RMT_LOCAL);
			}
		}
	}
}
END_TEST

/* --- the filter ------------------------------------------------------- */

/* Just enough of a classic BPF machine for the programs filter.c emits. */
static uint32_t
bpf_run(const struct sock_fprog *p, const struct seccomp_data *d)
{
	const struct sock_filter	*f;
	uint32_t			 a = 0;
	size_t				 pc = 0;

	while (pc < p->len) {
		f = &p->filter[pc];
		switch (f->code) {
		case BPF_LD | BPF_W | BPF_ABS:
			ck_assert_uint_le(f->k + 4, sizeof *d);
			memcpy(&a, (const char *)d + f->k, 4);
			pc++;
			break;
		case BPF_JMP | BPF_JEQ | BPF_K:
			pc += 1 + (a == f->k ? f->jt : f->jf);
			break;
		case BPF_JMP | BPF_JSET | BPF_K:
			pc += 1 + ((a & f->k) ? f->jt : f->jf);
			break;
		case BPF_JMP | BPF_JA:
			pc += 1 + f->k;
			break;
		case BPF_RET | BPF_K:
			return f->k;
		default:
			ck_abort_msg("instruction %zu: code %#x", pc, f->code);
		}
	}
	ck_abort_msg("ran off the end of the filter");
	return 0;
}

static void
bpf_compare(const struct sock_fprog *p, int nr, const uint64_t *args)
{
	struct seccomp_data	d = { .nr = nr, .arch = AUDIT_ARCH_X86_64 };
	struct table_call	tc;
	uint32_t		action;

	memcpy(d.args, args, sizeof d.args);
	action = bpf_run(p, &d);
	table_resolve(nr, args, 0, &tc);
	ck_assert_msg(action == SECCOMP_RET_ALLOW ||
	    action == SECCOMP_RET_USER_NOTIF, "action %#x", action);
	ck_assert_msg((action == SECCOMP_RET_ALLOW) ==
	    (tc.class == RMT_LOCAL), "%s (%d) with %#llx %#llx %#llx %#llx: "
	    "filter %s, table %s", tc.name, nr, (unsigned long long)args[0],
	    (unsigned long long)args[1], (unsigned long long)args[2],
	    (unsigned long long)args[3],
	    action == SECCOMP_RET_ALLOW ? "allows" : "notifies",
	    table_class_name(tc.class));
}

/* The filter and the table agree on what is local, argument by argument. */
START_TEST(test_filter_agrees)
{
	const struct table_entry	*tab;
	const struct table_rule		*r;
	struct sock_fprog		 p;
	struct seccomp_data		 d = { 0 };
	uint64_t			 args[6];
	char				*cause = NULL;
	size_t				 n, i, j;
	int				 nr, k;

	ck_assert_msg(filter_build(&p, &cause) == 0, "%s", cause);
	ck_assert_uint_gt(p.len, 50);
	ck_assert_uint_le(p.len, BPF_MAXINSNS);
	srandom(1);
	for (nr = 0; nr < TABLE_NR_MAX + 64; nr++) {
		memset(args, 0, sizeof args);
		bpf_compare(&p, nr, args);
		for (k = 0; k < 20; k++) {
			for (i = 0; i < 6; i++)
				args[i] = (uint64_t)random() << 33 ^ random();
			bpf_compare(&p, nr, args);
		}
	}
	tab = table_entries(&n);
	for (i = 0; i < n; i++) {
		if ((r = tab[i].rule) == NULL)
			continue;
		memset(args, 0, sizeof args);
		for (j = 0; j < r->nsubs; j++) {
			args[r->arg] = r->subs[j].value;
			bpf_compare(&p, tab[i].nr, args);
			args[r->arg] |= 0xdead00000000ULL;
			bpf_compare(&p, tab[i].nr, args);
		}
		if (r->bit != 0) {
			args[r->arg] = r->bit | 0x2;
			bpf_compare(&p, tab[i].nr, args);
			args[r->arg] = ~(uint64_t)r->bit;
			bpf_compare(&p, tab[i].nr, args);
		}
	}
	/* the guest's clock stub reads R's own CPU clocks, and only those */
	memset(args, 0, sizeof args);
	for (k = -8; k < 16; k++) {
		args[0] = (uint64_t)RMT_CLOCK_MAGIC << 32 | (uint32_t)k;
		bpf_compare(&p, SYS_clock_gettime, args);
		bpf_compare(&p, SYS_clock_getres, args);
	}
	args[0] = (uint64_t)RMT_CLOCK_MAGIC << 32 | CLOCK_PROCESS_CPUTIME_ID;
	memcpy(d.args, args, sizeof d.args);
	d.arch = AUDIT_ARCH_X86_64;
	d.nr = SYS_clock_gettime;
	ck_assert_uint_eq(bpf_run(&p, &d), SECCOMP_RET_ALLOW);
	d.nr = SYS_clock_getres;
	ck_assert_uint_eq(bpf_run(&p, &d), SECCOMP_RET_USER_NOTIF);
	args[0] = (uint64_t)RMT_CLOCK_MAGIC << 32 | 0xfffffffa;	/* pid 0 */
	memcpy(d.args, args, sizeof d.args);
	d.nr = SYS_clock_gettime;
	ck_assert_uint_eq(bpf_run(&p, &d), SECCOMP_RET_USER_NOTIF);
	/* and its thread's id, with the magic where gettid ignores it */
	args[0] = (uint64_t)RMT_CLOCK_MAGIC << 32 | 3;
	bpf_compare(&p, SYS_gettid, args);
	memcpy(d.args, args, sizeof d.args);
	d.nr = SYS_gettid;
	ck_assert_uint_eq(bpf_run(&p, &d), SECCOMP_RET_ALLOW);
	d.args[0] = 3;
	ck_assert_uint_eq(bpf_run(&p, &d), SECCOMP_RET_USER_NOTIF);
	d.args[0] = RMT_CLOCK_MAGIC;
	ck_assert_uint_eq(bpf_run(&p, &d), SECCOMP_RET_USER_NOTIF);
	memset(d.args, 0, sizeof d.args);

	/*
	 * The stub's calls on files opened here: the calls it makes, on any
	 * descriptor, and no other call with the same mark
	 */
	{
		static const int fd_nrs[] = { SYS_read, SYS_write,
		    SYS_pread64, SYS_pwrite64, SYS_lseek, SYS_fsync,
		    SYS_fdatasync, SYS_flock, SYS_fstat, SYS_close };
		static const int lock_cmds[] = { F_GETLK, F_SETLK, F_SETLKW,
		    F_OFD_GETLK, F_OFD_SETLK, F_OFD_SETLKW };
		static const int not_cmds[] = { F_DUPFD, F_DUPFD_CLOEXEC,
		    F_GETFD, F_SETFD, F_SETFL, F_SETOWN, F_SETLEASE, 4, 8,
		    35, 39 };
		static const int not_nrs[] = { SYS_close_range, SYS_fcntl,
		    SYS_ioctl, SYS_dup2, SYS_mmap, SYS_readv, SYS_writev,
		    SYS_sendfile, SYS_ftruncate, SYS_newfstatat,
		    SYS_openat };

		for (i = 0; i < nitems(fd_nrs); i++) {
			memset(args, 0, sizeof args);
			for (k = 0; k < 300; k += 7) {
				args[0] = (uint64_t)RMT_CLOCK_MAGIC << 32 | k;
				bpf_compare(&p, fd_nrs[i], args);
				memcpy(d.args, args, sizeof d.args);
				d.nr = fd_nrs[i];
				ck_assert_uint_eq(bpf_run(&p, &d),
				    SECCOMP_RET_ALLOW);
				args[0] = (uint32_t)k;
				memcpy(d.args, args, sizeof d.args);
				ck_assert_uint_eq(bpf_run(&p, &d),
				    SECCOMP_RET_USER_NOTIF);
				args[0] = (uint64_t)(RMT_CLOCK_MAGIC ^ 1) <<
				    32 | k;
				bpf_compare(&p, fd_nrs[i], args);
			}
		}
		for (i = 0; i < nitems(not_nrs); i++) {
			memset(d.args, 0, sizeof d.args);
			d.args[0] = (uint64_t)RMT_CLOCK_MAGIC << 32 | 3;
			d.args[1] = F_SETOWN;
			d.nr = not_nrs[i];
			ck_assert_msg(bpf_run(&p, &d) ==
			    SECCOMP_RET_USER_NOTIF, "marked call %d allowed",
			    not_nrs[i]);
		}
		/* fcntl's lock commands marked, and no other command */
		for (i = 0; i < nitems(lock_cmds); i++) {
			memset(args, 0, sizeof args);
			args[0] = (uint64_t)RMT_CLOCK_MAGIC << 32 | 5;
			args[1] = (uint64_t)lock_cmds[i];
			bpf_compare(&p, SYS_fcntl, args);
			memcpy(d.args, args, sizeof d.args);
			d.nr = SYS_fcntl;
			ck_assert_uint_eq(bpf_run(&p, &d), SECCOMP_RET_ALLOW);
			args[0] = 5;
			bpf_compare(&p, SYS_fcntl, args);
			memcpy(d.args, args, sizeof d.args);
			ck_assert_uint_eq(bpf_run(&p, &d),
			    SECCOMP_RET_USER_NOTIF);
		}
		for (i = 0; i < nitems(not_cmds); i++) {
			memset(args, 0, sizeof args);
			args[0] = (uint64_t)RMT_CLOCK_MAGIC << 32 | 5;
			args[1] = (uint64_t)not_cmds[i];
			bpf_compare(&p, SYS_fcntl, args);
			memcpy(d.args, args, sizeof d.args);
			d.nr = SYS_fcntl;
			ck_assert_msg(bpf_run(&p, &d) != SECCOMP_RET_ALLOW,
			    "marked fcntl %d allowed", not_cmds[i]);
		}
		memset(d.args, 0, sizeof d.args);
	}

	/*
	 * The usage stub reads R's own usage (getrusage with the magic in
	 * who's high half) and the node's ticks (times(NULL)), and only those
	 */
	memset(args, 0, sizeof args);
	for (k = -4; k < 8; k++) {
		args[0] = (uint64_t)RMT_CLOCK_MAGIC << 32 | (uint32_t)k;
		bpf_compare(&p, SYS_getrusage, args);
		bpf_compare(&p, SYS_times, args);
		args[0] = (uint32_t)k;
		bpf_compare(&p, SYS_getrusage, args);
		args[0] = (uint64_t)(uint32_t)k << 32;
		bpf_compare(&p, SYS_times, args);
	}
	d.nr = SYS_getrusage;
	d.args[0] = (uint64_t)RMT_CLOCK_MAGIC << 32 | RUSAGE_SELF;
	ck_assert_uint_eq(bpf_run(&p, &d), SECCOMP_RET_ALLOW);
	d.args[0] = (uint64_t)RMT_CLOCK_MAGIC << 32 | RUSAGE_THREAD;
	ck_assert_uint_eq(bpf_run(&p, &d), SECCOMP_RET_ALLOW);
	d.args[0] = (uint64_t)RMT_CLOCK_MAGIC << 32 | (uint32_t)RUSAGE_CHILDREN;
	ck_assert_uint_eq(bpf_run(&p, &d), SECCOMP_RET_USER_NOTIF);
	ck_assert_int_eq(class_of(SYS_getrusage, d.args[0], 0, 0, 0, 0),
	    RMT_FORWARD);
	d.args[0] = RUSAGE_SELF;
	ck_assert_uint_eq(bpf_run(&p, &d), SECCOMP_RET_USER_NOTIF);
	ck_assert_int_eq(class_of(SYS_getrusage, d.args[0], 0, 0, 0, 0),
	    RMT_EMULATE);
	d.nr = SYS_times;
	d.args[0] = 0;
	ck_assert_uint_eq(bpf_run(&p, &d), SECCOMP_RET_ALLOW);
	d.args[0] = 0x7fff00000000ULL;	/* a buffer, its low half 0 */
	ck_assert_uint_eq(bpf_run(&p, &d), SECCOMP_RET_USER_NOTIF);
	ck_assert_int_eq(class_of(SYS_times, d.args[0], 0, 0, 0, 0),
	    RMT_EMULATE);
	memset(d.args, 0, sizeof d.args);

	/* i386 (int 0x80) and x32 numbers are never let through */
	d.arch = AUDIT_ARCH_I386;
	d.nr = SYS_futex;
	ck_assert_uint_eq(bpf_run(&p, &d), SECCOMP_RET_USER_NOTIF);
	d.arch = AUDIT_ARCH_X86_64;
	d.nr = SYS_futex | 0x40000000;
	ck_assert_uint_eq(bpf_run(&p, &d), SECCOMP_RET_USER_NOTIF);
	d.nr = SYS_futex;
	ck_assert_uint_eq(bpf_run(&p, &d), SECCOMP_RET_ALLOW);
	filter_free(&p);
}
END_TEST

/*
 * A child that confines itself with the real filter and runs fn; the
 * parent gets the listener. The child must make no forwarded call the
 * parent does not serve, so it reports through shared memory and _exit.
 */
struct confined {
	volatile int	 fd;		/* the child's listener, -1 until set */
	volatile int	 step;
	volatile long	 value;
	volatile int	 flag;
	volatile long	 more[3];
};

static pid_t
confine(struct confined **shp, int (*fn)(struct confined *), int *listener)
{
	struct confined	*sh;
	char		*cause;
	pid_t		 pid;
	int		 pidfd, i;

	sh = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
	    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ck_assert_ptr_ne(sh, MAP_FAILED);
	sh->fd = -1;
	pid = fork();
	ck_assert_int_ne(pid, -1);
	if (pid == 0) {
		if ((i = filter_install_self(&cause)) == -1)
			_exit(100);
		sh->fd = i;
		_exit(fn(sh));
	}
	for (i = 0; i < 5000 && sh->fd == -1; i++)
		usleep(1000);
	ck_assert_int_ne(sh->fd, -1);
	pidfd = syscall(SYS_pidfd_open, pid, 0);
	ck_assert_int_ge(pidfd, 0);
	*listener = syscall(SYS_pidfd_getfd, pidfd, sh->fd, 0);
	ck_assert_int_ge(*listener, 0);
	close(pidfd);
	*shp = sh;
	return pid;
}

static int
reaped(pid_t pid)
{
	int	status;

	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_msg(WIFEXITED(status), "status %#x", status);
	return WEXITSTATUS(status);
}

static int
wait_readable(int fd, int ms)
{
	struct pollfd	pfd = { .fd = fd, .events = POLLIN };

	return poll(&pfd, 1, ms) == 1;
}

/*
 * Serve one forwarded call in this process, as the loopback does; or, if
 * fake is not 0, answer it without executing it (a call interrupted at
 * home). What remote_reply made of the reply goes to *out.
 */
static void
serve_one(struct remote *g, const struct remote_event *ev, long fake,
    struct remote_event *out)
{
	struct home_call	*hc;
	uint8_t			*reply;
	size_t			 len;
	char			*cause = NULL;
	long			 ret = fake;

	hc = home_check(ev->msg, ev->len, getpid(), &cause);
	ck_assert_msg(hc != NULL, "%s", cause);
	ck_assert_int_eq(home_layout(hc, (uintptr_t)scratch, SCRATCH, &cause),
	    0);
	memcpy(scratch, hc->image, hc->image_len);
	if (fake == 0) {
		ret = syscall(hc->nr, hc->args[0], hc->args[1], hc->args[2],
		    hc->args[3], hc->args[4], hc->args[5]);
		if (ret == -1)
			ret = -errno;
	}
	ck_assert_int_eq(home_reply(hc, ret, scratch, home_readback(hc, ret),
	    &reply, &len, &cause), 0);
	home_free(hc);
	ck_assert_msg(remote_reply(g, reply, len, -1, out, &cause) == 0, "%s",
	    cause);
	free(reply);
}

static int
child_local_then_forward(struct confined *sh)
{
	char	buf[8];
	void	*p;

	/* local: must not stop, nobody serves us yet */
	if (syscall(SYS_getrandom, buf, sizeof buf, 0) != sizeof buf)
		return 1;
	p = mmap(NULL, 8192, PROT_READ | PROT_WRITE,
	    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return 2;
	sh->step = 1;
	/* forwarded: answered by the parent, for the parent */
	sh->value = syscall(SYS_getppid);
	return 0;
}

START_TEST(test_filter_live)
{
	struct confined		*sh;
	struct remote		*g;
	struct remote_event	 ev;
	char			*cause = NULL;
	pid_t			 pid;
	int			 listener, i;

	pid = confine(&sh, child_local_then_forward, &listener);
	for (i = 0; i < 5000 && sh->step == 0; i++)
		usleep(1000);
	ck_assert_msg(sh->step == 1, "local calls were stopped");
	g = remote_new(listener, pid, getpid(), NULL, &cause);
	ck_assert_msg(g != NULL, "%s", cause);
	ck_assert(wait_readable(listener, 5000));
	ck_assert_int_eq(remote_receive(g, &ev, &cause), 0);
	ck_assert_int_eq(ev.kind, REMOTE_FORWARD);
	ck_assert_int_eq(ev.nr, SYS_getppid);
	ck_assert_int_eq(ev.tid, pid);
	serve_one(g, &ev, 0, &ev);
	ck_assert_int_eq(ev.kind, REMOTE_ANSWERED);
	ck_assert_int_eq(reaped(pid), 0);
	/* executed here: our parent, not the child's (us) */
	ck_assert_int_eq(sh->value, getppid());
	ck_assert_uint_eq(g->stats.forwarded, 1);
	remote_free(g);
	close(listener);
}
END_TEST

static volatile sig_atomic_t usr1;

static void
on_usr1(int sig)
{
	usr1 = sig;
}

static int
child_interrupted(struct confined *sh)
{
	struct sigaction	sa;

	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_usr1;
	sa.sa_flags = SA_RESTART;
	if (sigaction(SIGUSR1, &sa, NULL) != 0)
		return 1;
	sh->value = syscall(SYS_getppid);
	sh->flag = usr1;
	return 0;
}

/*
 * R interrupted while its call is away (a signal, or the guest agent
 * stopping it): the call's answer finds R gone and is dropped, and R,
 * restarting the call, sends it again.
 */
START_TEST(test_interrupted)
{
	struct confined		*sh;
	struct remote		*g;
	struct remote_event	 ev, ev2;
	uint8_t			*first;
	char			*cause = NULL;
	pid_t			 pid;
	int			 listener, i;

	pid = confine(&sh, child_interrupted, &listener);
	g = remote_new(listener, pid, getpid(), NULL, &cause);
	ck_assert_msg(g != NULL, "%s", cause);
	ck_assert(wait_readable(listener, 5000));
	ck_assert_int_eq(remote_receive(g, &ev, &cause), 0);
	ck_assert_int_eq(ev.kind, REMOTE_FORWARD);
	first = xmalloc(ev.len);
	memcpy(first, ev.msg, ev.len);
	ev.msg = first;
	ck_assert_int_eq(kill(pid, SIGUSR1), 0);
	for (i = 0; i < 5000; i++) {
		if (ioctl(listener, SECCOMP_IOCTL_NOTIF_ID_VALID, &ev.id) != 0)
			break;
		usleep(1000);
	}
	ck_assert_int_ne(i, 5000);
	/* the restarted call is a new notification */
	ck_assert(wait_readable(listener, 5000));
	ck_assert_int_eq(remote_receive(g, &ev2, &cause), 0);
	ck_assert_int_eq(ev2.kind, REMOTE_FORWARD);
	ck_assert_int_eq(ev2.nr, SYS_getppid);
	ck_assert_uint_ne(ev2.seq, ev.seq);
	/* the first call's answer finds R gone and is dropped */
	serve_one(g, &ev, 0, &ev);
	ck_assert_int_eq(ev.kind, REMOTE_NONE);
	serve_one(g, &ev2, 0, &ev2);
	ck_assert_int_eq(ev2.kind, REMOTE_ANSWERED);
	ck_assert_uint_eq(g->npending, 0);
	ck_assert_uint_eq(g->stats.gone, 1);
	free(first);
	ck_assert_int_eq(reaped(pid), 0);
	ck_assert_int_eq(sh->value, getppid());
	ck_assert_int_eq(sh->flag, SIGUSR1);
	remote_free(g);
	close(listener);
}
END_TEST

static int
child_blocked(struct confined *sh)
{
	sigset_t	set;

	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	if (sigprocmask(SIG_BLOCK, &set, NULL) != 0)
		return 1;
	sh->value = syscall(SYS_getppid);
	return 0;
}

/*
 * A call interrupted at home (by a signal R blocks) asks to be restarted;
 * R will take no signal path that would restart it, so the guest sends
 * it home again instead of handing R -ERESTARTSYS.
 */
START_TEST(test_restarted)
{
	struct confined		*sh;
	struct remote		*g;
	struct remote_event	 ev;
	char			*cause = NULL;
	uint64_t		 seq;
	pid_t			 pid;
	int			 listener;

	pid = confine(&sh, child_blocked, &listener);
	g = remote_new(listener, pid, getpid(), NULL, &cause);
	ck_assert_msg(g != NULL, "%s", cause);
	ck_assert(wait_readable(listener, 5000));
	ck_assert_int_eq(remote_receive(g, &ev, &cause), 0);
	ck_assert_int_eq(ev.kind, REMOTE_FORWARD);
	seq = ev.seq;
	serve_one(g, &ev, -512, &ev);
	ck_assert_int_eq(ev.kind, REMOTE_FORWARD);
	ck_assert_uint_eq(ev.seq, seq);
	ck_assert_int_eq(ev.nr, SYS_getppid);
	serve_one(g, &ev, 0, &ev);
	ck_assert_int_eq(ev.kind, REMOTE_ANSWERED);
	ck_assert_int_eq(reaped(pid), 0);
	ck_assert_int_eq(sh->value, getppid());
	ck_assert_uint_eq(g->stats.restarted, 1);
	remote_free(g);
	close(listener);
}
END_TEST

static int
child_goes_home(struct confined *sh)
{
	int	fd = 0;

	/* a writable shared mapping: the table sends it home */
	mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	return 1;
}

START_TEST(test_home_call_left_pending)
{
	struct confined		*sh;
	struct remote		*g;
	struct remote_event	 ev;
	char			*cause = NULL;
	pid_t			 pid;
	int			 listener;

	pid = confine(&sh, child_goes_home, &listener);
	g = remote_new(listener, pid, getpid(), NULL, &cause);
	ck_assert_msg(g != NULL, "%s", cause);
	ck_assert(wait_readable(listener, 5000));
	ck_assert_int_eq(remote_receive(g, &ev, &cause), 0);
	ck_assert_int_eq(ev.kind, REMOTE_HOME);
	ck_assert_str_eq(ev.name, "mmap");
	ck_assert_str_eq(ev.why, "writable shared file mapping");
	/* unanswered: R still waits in it */
	ck_assert_int_eq(ioctl(listener, SECCOMP_IOCTL_NOTIF_ID_VALID,
	    &ev.id), 0);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	remote_free(g);
	close(listener);
}
END_TEST

static long
cpu_ns(clockid_t id)
{
	struct timespec	ts;

	/* the call itself, as glibc's vDSO makes it for a CPU clock */
	if (syscall(SYS_clock_gettime, id, &ts) != 0)
		return -1;
	return ts.tv_sec * 1000000000L + ts.tv_nsec;
}

static pid_t	clocks_home;

static void *
child_thread_clock(void *arg)
{
	struct confined	*sh = arg;

	sh->more[2] = cpu_ns(CLOCK_THREAD_CPUTIME_ID);
	/* the main thread's, by the id it has at home: the test's pid */
	sh->more[1] = cpu_ns((clockid_t)((~(unsigned int)clocks_home << 3) |
	    4 | 2));
	return NULL;
}

static int
child_clocks(struct confined *sh)
{
	pthread_t	th;

	sh->value = cpu_ns(CLOCK_PROCESS_CPUTIME_ID);
	sh->more[0] = cpu_ns(CLOCK_THREAD_CPUTIME_ID);
	if (pthread_create(&th, NULL, child_thread_clock, sh) != 0 ||
	    pthread_join(th, NULL) != 0)
		return 1;
	return 0;
}

/*
 * The emulated CPU clocks: the process's go on from the process's base,
 * each thread's from its own (the main thread's 7 s), a thread the
 * guest was told nothing of starts at 0.
 */
START_TEST(test_clocks_per_thread)
{
	struct emulate_base	 base = { .utime_ns = 1500000000ULL,
				    .stime_ns = 500000000ULL };
	struct confined		*sh;
	struct remote		*g;
	struct remote_event	 ev;
	char			*cause = NULL;
	pid_t			 pid;
	int			 listener, i;

	clocks_home = getpid();
	pid = confine(&sh, child_clocks, &listener);
	g = remote_new(listener, pid, getpid(), &base, &cause);
	ck_assert_msg(g != NULL, "%s", cause);
	remote_thread_cpu(g, pid, 7000000000ULL);
	for (i = 0; i < 50; i++) {
		if (!wait_readable(listener, 5000))
			break;
		if (remote_receive(g, &ev, &cause) != 0)
			break;
		if (ev.kind == REMOTE_THREAD)
			ck_assert_msg(remote_continue(g, ev.id, &cause) == 0,
			    "%s", cause);
		else
			ck_assert_msg(ev.kind == REMOTE_ANSWERED ||
			    ev.kind == REMOTE_NONE, "%s: kind %d", ev.name,
			    ev.kind);
	}
	free(cause);
	ck_assert_int_eq(reaped(pid), 0);
	ck_assert_int_ge(sh->value, 2000000000L);
	ck_assert_int_lt(sh->value, 3000000000L);
	ck_assert_int_ge(sh->more[0], 7000000000L);
	ck_assert_int_lt(sh->more[0], 8000000000L);
	ck_assert_int_ge(sh->more[1], 7000000000L);
	ck_assert_int_lt(sh->more[1], 8000000000L);
	ck_assert_int_ge(sh->more[2], 0);
	ck_assert_int_lt(sh->more[2], 1000000000L);
	remote_free(g);
	close(listener);
}
END_TEST

struct home_call *
check_home_call(const Osm__RemoteCall *c, pid_t self, char **cause)
{
	struct home_call	*hc;
	uint8_t			*buf;
	size_t			 len;

	len = osm__remote_call__get_packed_size(c);
	buf = xmalloc(len);
	osm__remote_call__pack(c, buf);
	hc = home_check(buf, len, self, cause);
	free(buf);
	return hc;
}

static Suite *
remote_suite(void)
{
	Suite	*s = suite_create("remote");
	TCase	*tc;

	tc = tcase_create("table");
	tcase_add_test(tc, test_table_check);
	tcase_add_test(tc, test_table_classes);
	tcase_add_test(tc, test_table_sandbox);
	tcase_add_test(tc, test_filter_agrees);
	suite_add_tcase(s, tc);

	tc = tcase_create("seccomp");
	tcase_add_checked_fixture(tc, scratch_setup, scratch_teardown);
	tcase_add_test(tc, test_filter_live);
	tcase_add_test(tc, test_interrupted);
	tcase_add_test(tc, test_restarted);
	tcase_add_test(tc, test_home_call_left_pending);
	tcase_add_test(tc, test_clocks_per_thread);
	tcase_set_timeout(tc, 20);
	suite_add_tcase(s, tc);

	check_remote_hostile(s);
	check_remote_pipes(s);
	check_remote_fileio(s);
	check_remote_behind(s);
	check_remote_ahead(s);
	check_remote_stream(s);
	check_remote_rstub(s);
	check_remote_here(s);
	check_remote_statc(s);
	return s;
}

int
main(void)
{
	SRunner	*sr = srunner_create(remote_suite());
	int	 failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? 0 : 1;
}
