/*
 * Unit tests for agent/: the deputy's husk, a process at home reduced to
 * a stub that runs calls in its own context.
 */
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/internal.h"

#define ERESTARTNOHAND	514	/* the kernel's, not in libc */

/* A child to make a husk of: seized, stopped, its memory its own. */
static struct mig_task *
child(pid_t *pid)
{
	struct mig_task	*t;
	char		*cause = NULL;

	if ((*pid = fork()) == 0) {
		/* a test timed out must not leave it behind */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		for (;;)
			pause();
	}
	ck_assert_int_gt(*pid, 0);
	t = mig_seize(*pid, &cause);
	ck_assert_msg(t != NULL, "%s", cause);
	return t;
}

/* Wait for lane l's next stop and say what it was. */
static enum husk_stop
lane_stop(struct husk *h, struct husk_lane *l, long *rv, siginfo_t *si)
{
	int	status;

	ck_assert_int_eq(waitpid(l->tid, &status, __WALL), l->tid);
	ck_assert(WIFSTOPPED(status));
	return husk_stopped(h, l, status, rv, si);
}

/* The same, of the lead's lane. */
static enum husk_stop
next_stop(struct husk *h, long *rv, siginfo_t *si)
{
	return lane_stop(h, &h->lanes[0], rv, si);
}

/*
 * Wait until thread tid blocks in call nr (/proc/TID/syscall), so that a
 * signal sent next breaks off that call rather than reaching the stub
 * before it: on a loaded machine the stub may not have run yet.
 */
static void
blocked_in(pid_t tid, long nr)
{
	char	path[64], buf[64];
	FILE	*f;
	long	got;
	int	i;

	snprintf(path, sizeof path, "/proc/%d/syscall", (int)tid);
	for (i = 0; i < 10000; i++) {
		ck_assert((f = fopen(path, "r")) != NULL);
		got = fgets(buf, sizeof buf, f) != NULL ? strtol(buf, NULL, 10)
		    : -1;
		fclose(f);
		if (got == nr)
			return;
		usleep(1000);
	}
	ck_abort_msg("thread %d not blocked in call %ld", (int)tid, nr);
}

START_TEST(test_husk_calls)
{
	struct husk	 h;
	struct mig_task	*t;
	siginfo_t	 si;
	uint64_t	 base, args[6] = { 0 };
	uint8_t		*mem, zero[8] = { 0 };
	size_t		 len;
	char		*cause = NULL, path[64], want[256];
	ssize_t		 n;
	long		 rv;
	pid_t		 pid;
	int		 status;

	t = child(&pid);
	ck_assert_msg(husk_make(t, 1 << 16, &h, &cause) == 0, "%s", cause);
	ck_assert_msg(husk_run(&h, &cause) == 0, "%s", cause);

	/* a call in the child's own context: its pid */
	husk_call(&h.lanes[0], SYS_getpid, args, 0, NULL);
	ck_assert_int_eq(next_stop(&h, &rv, &si), HUSK_RETURNED);
	ck_assert_int_eq(rv, pid);
	ck_assert(!h.lanes[0].busy);

	/* memory laid out in the shared area, read back in place */
	mem = husk_scratch(&h.lanes[0], &base, &len);
	ck_assert_uint_ge(len, 1 << 16);
	ck_assert_msg(husk_run(&h, &cause) == 0, "%s", cause);
	args[0] = AT_FDCWD;
	args[1] = base;
	args[2] = base + 4096;
	args[3] = 64;
	strcpy((char *)mem, "/proc/self/exe");
	husk_call(&h.lanes[0], SYS_readlinkat, args, 0, NULL);
	ck_assert_int_eq(next_stop(&h, &rv, &si), HUSK_RETURNED);
	ck_assert_int_gt(rv, 0);
	snprintf(path, sizeof path, "/proc/%d/exe", pid);
	n = readlink(path, want, sizeof want);
	ck_assert_int_eq(rv, n);
	ck_assert_int_eq(memcmp(mem + 4096, want, n), 0);

	/* a signal while it waits stops it for us, and it waits on */
	ck_assert_msg(husk_run(&h, &cause) == 0, "%s", cause);
	kill(pid, SIGUSR1);
	ck_assert_int_eq(next_stop(&h, &rv, &si), HUSK_SIGNAL);
	ck_assert_int_eq(si.si_signo, SIGUSR1);
	ck_assert_int_eq(husk_continue(&h, &h.lanes[0], 0, &cause), 0);
	husk_call(&h.lanes[0], SYS_getppid, args, 0, NULL);
	ck_assert_int_eq(next_stop(&h, &rv, &si), HUSK_RETURNED);
	ck_assert_int_eq(rv, getpid());

	/* a signal breaks off a blocking call, which returns its restart code */
	ck_assert_msg(husk_run(&h, &cause) == 0, "%s", cause);
	memset(args, 0, sizeof args);
	husk_call(&h.lanes[0], SYS_pause, args, 0, NULL);
	blocked_in(pid, SYS_pause);
	kill(pid, SIGUSR2);
	ck_assert_int_eq(next_stop(&h, &rv, &si), HUSK_SIGNAL);
	ck_assert_int_eq(si.si_signo, SIGUSR2);
	ck_assert_int_eq(husk_continue(&h, &h.lanes[0], 0, &cause), 0);
	ck_assert_int_eq(next_stop(&h, &rv, &si), HUSK_RETURNED);
	ck_assert_int_eq(rv, -ERESTARTNOHAND);

	/* held, grown, and the stub serves from the new area */
	ck_assert_msg(husk_run(&h, &cause) == 0, "%s", cause);
	ck_assert_msg(husk_hold(&h, &cause) == 0, "%s", cause);
	ck_assert_msg(husk_grow(&h, &h.lanes[0], 1 << 20, &cause) == 0, "%s", cause);
	mem = husk_scratch(&h.lanes[0], &base, &len);
	ck_assert_uint_ge(len, 1 << 20);
	ck_assert_msg(husk_run(&h, &cause) == 0, "%s", cause);
	memset(mem + len - 4096, 0, 8);
	args[0] = base + len - 4096;	/* into the new area's last page */
	args[1] = 8;
	husk_call(&h.lanes[0], SYS_getrandom, args, 0, NULL);
	ck_assert_int_eq(next_stop(&h, &rv, &si), HUSK_RETURNED);
	ck_assert_int_eq(rv, 8);
	ck_assert(memcmp(mem + len - 4096, zero, 8) != 0);

	/* it ends as told */
	ck_assert_int_eq(husk_end(&h, 0, 7, &cause), 0);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFEXITED(status));
	ck_assert_int_eq(WEXITSTATUS(status), 7);
	husk_free(&h);
	mig_forget(t);
}
END_TEST

/*
 * A call the deputy waits for ends without a ptrace stop, the stub back
 * at its futex for the next; one that outlasts the wait ends in the trap,
 * a signal breaking it off as before.
 */
START_TEST(test_husk_waited)
{
	struct husk	 h;
	struct mig_task	*t;
	siginfo_t	 si;
	uint64_t	 base, args[6] = { 0 };
	uint8_t		*mem;
	size_t		 len;
	char		*cause = NULL;
	long		 rv;
	pid_t		 pid;
	int		 status, i, waited = 0;

	t = child(&pid);
	ck_assert_msg(husk_make(t, 1 << 16, &h, &cause) == 0, "%s", cause);
	ck_assert_msg(husk_run(&h, &cause) == 0, "%s", cause);

	/*
	 * Calls in a row, the stub never started again: most end while we
	 * wait (on a loaded machine one may not, and ends in the trap).
	 */
	for (i = 0; i < 50; i++) {
		if (husk_call(&h.lanes[0], SYS_getpid, args, 1, &rv) == 1) {
			waited++;
			ck_assert_int_eq(waitpid(pid, &status, __WALL | WNOHANG),
			    0);
		} else {
			ck_assert_int_eq(next_stop(&h, &rv, &si), HUSK_RETURNED);
			ck_assert_msg(husk_run(&h, &cause) == 0, "%s", cause);
		}
		ck_assert_int_eq(rv, pid);
		ck_assert(!h.lanes[0].busy);
	}
	ck_assert_int_gt(waited, 0);

	/* memory laid out in the shared area, written in place */
	mem = husk_scratch(&h.lanes[0], &base, &len);
	memset(mem, 0, 16);
	args[0] = base;
	args[1] = 16;
	if (husk_call(&h.lanes[0], SYS_getrandom, args, 1, &rv) == 0) {
		ck_assert_int_eq(next_stop(&h, &rv, &si), HUSK_RETURNED);
		ck_assert_msg(husk_run(&h, &cause) == 0, "%s", cause);
	}
	ck_assert_int_eq(rv, 16);

	/* a call that blocks outlasts the wait; a signal breaks it off */
	memset(args, 0, sizeof args);
	ck_assert_int_eq(husk_call(&h.lanes[0], SYS_pause, args, 1, &rv), 0);
	ck_assert(h.lanes[0].busy);
	blocked_in(pid, SYS_pause);
	kill(pid, SIGUSR1);
	ck_assert_int_eq(next_stop(&h, &rv, &si), HUSK_SIGNAL);
	ck_assert_int_eq(si.si_signo, SIGUSR1);
	ck_assert_int_eq(husk_continue(&h, &h.lanes[0], 0, &cause), 0);
	ck_assert_int_eq(next_stop(&h, &rv, &si), HUSK_RETURNED);
	ck_assert_int_eq(rv, -ERESTARTNOHAND);

	/* and the next waited call goes as before */
	ck_assert_msg(husk_run(&h, &cause) == 0, "%s", cause);
	if (husk_call(&h.lanes[0], SYS_getppid, args, 1, &rv) == 0)
		ck_assert_int_eq(next_stop(&h, &rv, &si), HUSK_RETURNED);
	ck_assert_int_eq(rv, getpid());

	ck_assert_msg(husk_hold(&h, &cause) == 0, "%s", cause);
	ck_assert_int_eq(husk_end(&h, 0, 5, &cause), 0);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFEXITED(status));
	ck_assert_int_eq(WEXITSTATUS(status), 5);
	husk_free(&h);
	mig_forget(t);
}
END_TEST

/* The thread of a threaded child: it waits, as the lead does. */
static void *
waiter(void *arg)
{
	for (;;)
		pause();
	return arg;
}

/*
 * A husk of a process of two threads: one lane per thread, each running
 * its calls in its own thread (gettid), one blocked in a read of a pipe
 * while the other's calls go on.
 */
START_TEST(test_husk_threads)
{
	struct husk		 h;
	struct husk_lane	*lead, *other;
	struct mig_task		*t;
	pthread_t		 th;
	siginfo_t		 si;
	uint64_t		 base, args[6] = { 0 };
	uint8_t			*mem;
	size_t			 len;
	char			*cause = NULL;
	long			 rv;
	pid_t			 pid, tids[4], *got;
	ssize_t			 n;
	int			 p[2], status;

	ck_assert_int_eq(pipe(p), 0);
	if ((pid = fork()) == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		close(p[1]);
		pthread_create(&th, NULL, waiter, NULL);
		for (;;)
			pause();
	}
	close(p[0]);
	ck_assert_int_gt(pid, 0);
	/* its second thread, once there */
	for (;;) {
		n = proc_threads(pid, &got);
		free(got);
		if (n == 2)
			break;
		usleep(1000);
	}
	t = mig_seize(pid, &cause);
	ck_assert_msg(t != NULL, "%s", cause);
	ck_assert_uint_eq(mig_threads(t, tids, 4), 2);
	ck_assert_msg(husk_make(t, 1 << 16, &h, &cause) == 0, "%s", cause);
	ck_assert_uint_eq(h.nlanes, 2);
	lead = husk_lane(&h, 0);
	other = husk_lane(&h, tids[1]);
	ck_assert_ptr_eq(lead, &h.lanes[0]);
	ck_assert_ptr_nonnull(other);
	ck_assert_int_eq(lead->tid, pid);
	ck_assert_msg(husk_run(&h, &cause) == 0, "%s", cause);

	/* the thread's lane reads the pipe, which has nothing yet */
	mem = husk_scratch(other, &base, &len);
	args[0] = p[0];	/* the child's read end, the same number */
	args[1] = base;
	args[2] = 16;
	husk_call(other, SYS_read, args, 0, NULL);
	blocked_in(tids[1], SYS_read);

	/* meanwhile the lead's calls run, each in its own thread */
	memset(args, 0, sizeof args);
	husk_call(lead, SYS_gettid, args, 0, NULL);
	ck_assert_int_eq(lane_stop(&h, lead, &rv, &si), HUSK_RETURNED);
	ck_assert_int_eq(rv, pid);
	ck_assert(other->busy);

	/* fed, the read ends in the other thread's lane */
	ck_assert_int_eq(write(p[1], "fed", 3), 3);
	ck_assert_int_eq(lane_stop(&h, other, &rv, &si), HUSK_RETURNED);
	ck_assert_int_eq(rv, 3);
	ck_assert_int_eq(memcmp(mem, "fed", 3), 0);
	ck_assert_msg(husk_run_lane(&h, other, &cause) == 0, "%s", cause);
	husk_call(other, SYS_gettid, args, 0, NULL);
	ck_assert_int_eq(lane_stop(&h, other, &rv, &si), HUSK_RETURNED);
	ck_assert_int_eq(rv, tids[1]);

	/* both held, it ends as told, every thread with it */
	ck_assert_msg(husk_run(&h, &cause) == 0, "%s", cause);
	ck_assert_msg(husk_hold(&h, &cause) == 0, "%s", cause);
	ck_assert_int_eq(husk_end(&h, 0, 9, &cause), 0);
	ck_assert_int_eq(waitpid(pid, &status, __WALL), pid);
	ck_assert(WIFEXITED(status));
	ck_assert_int_eq(WEXITSTATUS(status), 9);
	husk_free(&h);
	mig_forget(t);
	close(p[1]);
}
END_TEST

/*
 * The starts of libc's functions the stubs take over, as this machine's
 * glibc has them: the whole instructions a jump covers, moved as they
 * are; none where one is relative to where it lies.
 */
START_TEST(test_stub_displace)
{
	static const struct {
		uint8_t	start[16];
		size_t	n;
	} cases[] = {
		/* getpid: mov $0x27, %eax; syscall; ret */
		{ { 0xb8, 0x27, 0, 0, 0, 0x0f, 0x05, 0xc3 }, 5 },
		/* fstat64: mov %rsi, %rdx; test %edi, %edi; js */
		{ { 0x48, 0x89, 0xf2, 0x85, 0xff, 0x78, 0x19 }, 5 },
		/* endbr64; push %rbp; mov %rsp, %rbp */
		{ { 0xf3, 0x0f, 0x1e, 0xfa, 0x55, 0x48, 0x89, 0xe5 }, 5 },
		/* mov %r8, %r10 (REX.WRB); push %rbx */
		{ { 0x4d, 0x89, 0xc2, 0x53, 0x53 }, 5 },
		/* mov 0x...(%rip), %rax: relative to itself */
		{ { 0x48, 0x8b, 0x05, 0xb9, 0xb5, 0x0d, 0x00 }, 0 },
		/* mov %rsi, (%rdx): not a register's move */
		{ { 0x48, 0x89, 0x32, 0x85, 0xff, 0x90 }, 0 },
		/* test %edi, (%rax) */
		{ { 0x85, 0x38, 0x90, 0x90, 0x90, 0x90 }, 0 },
	};
	size_t	i;

	for (i = 0; i < nitems(cases); i++)
		ck_assert_msg(stub_displace(cases[i].start, 16) == cases[i].n,
		    "case %zu: %zu", i, stub_displace(cases[i].start, 16));
}
END_TEST

/*
 * The stubs' own code, run here: the identity stub answers from the
 * shared page while ion says so, and goes on in libc (here: a
 * trampoline that returns -2) while not; the fstat stub makes the call
 * itself on a descriptor of lfds, marked (the kernel reads its low half),
 * and says the home's device number from ldev, and leaves any other
 * descriptor, and a call that fails, to libc; the close stub closes a
 * descriptor of lfds itself (through libc's syscall(), as in R), clears
 * its bit and puts it in the ring, and leaves it to libc when the ring is
 * full.
 */
extern const uint8_t rstub_code[], rstub_end[], istub_pid[],
    istub_pidtramp[], istub_egid[], istub_egidtramp[], lstub_ftcode[],
    lstub_fttramp[], lstub_clcode[], lstub_cltramp[];

START_TEST(test_rstub_answers)
{
	static const uint8_t	 minus2[] = { 0xb8, 0xfe, 0xff, 0xff, 0xff,
				    0xc3 };	/* mov $-2, %eax; ret */
	const uint8_t		*tramps[] = { istub_pidtramp, istub_egidtramp,
				    lstub_fttramp, lstub_cltramp };
	struct rstub_shm	*shm;
	struct stat		 st, want;
	long			(*id)(void), (*fst)(int, struct stat *),
				(*cl)(int);
	uint8_t			*m;
	size_t			 i;
	int			 fd;

	m = mmap(NULL, 4096 + RSTUB_DATA, PROT_READ | PROT_WRITE | PROT_EXEC,
	    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ck_assert(m != MAP_FAILED);
	ck_assert_uint_le(rstub_end - rstub_code, 4096);
	memcpy(m, rstub_code, rstub_end - rstub_code);
	for (i = 0; i < nitems(tramps); i++)
		memcpy(m + (tramps[i] - rstub_code), minus2, sizeof minus2);
	shm = (struct rstub_shm *)(m + 4096);

	id = (long (*)(void))(m + (istub_pid - rstub_code));
	ck_assert_int_eq((int)id(), -2);
	shm->ival[0] = 4242;
	shm->ival[5] = 77;
	shm->ion = 1;
	ck_assert_int_eq((int)id(), 4242);
	id = (long (*)(void))(m + (istub_egid - rstub_code));
	ck_assert_int_eq((int)id(), 77);
	ck_assert_uint_eq(shm->ihits, 2);
	shm->ion = 0;
	ck_assert_int_eq((int)id(), -2);
	ck_assert_uint_eq(shm->ihits, 2);

	fst = (long (*)(int, struct stat *))(m + (lstub_ftcode - rstub_code));
	ck_assert_int_ge(fd = open("/proc/self/exe", O_RDONLY), 0);
	ck_assert_int_lt(fd, RSTUB_LFDS);
	ck_assert_int_eq(fstat(fd, &want), 0);
	memset(&st, 0, sizeof st);
	ck_assert_int_eq((int)fst(fd, &st), -2);	/* not in lfds */
	shm->lfds[fd / 8] |= 1U << (fd % 8);
	ck_assert_int_eq((int)fst(fd, &st), -2);	/* lon off */
	shm->lon = RSTUB_LON_CALLS;
	shm->ldev[fd] = 0x1234;
	ck_assert_int_eq((int)fst(fd, &st), 0);
	ck_assert_uint_eq(st.st_dev, 0x1234);
	ck_assert_uint_eq(st.st_ino, want.st_ino);
	ck_assert_int_eq(st.st_size, want.st_size);
	ck_assert_uint_eq(shm->lhits, 1);
	close(fd);
	ck_assert_int_eq((int)fst(fd, &st), -2);	/* EBADF: libc's */
	ck_assert_uint_eq(shm->lhits, 1);

	cl = (long (*)(int))(m + (lstub_clcode - rstub_code));
	shm->lsyscall = (uint64_t)(uintptr_t)syscall;
	ck_assert_int_ge(fd = open("/proc/self/exe", O_RDONLY), 0);
	shm->lfds[fd / 8] |= 1U << (fd % 8);
	ck_assert_int_eq((int)cl(fd), -2);		/* con off */
	shm->con = 1;
	ck_assert_int_eq((int)cl(fd), 0);
	ck_assert_int_eq(fcntl(fd, F_GETFD), -1);	/* closed */
	ck_assert_uint_eq(shm->chead, 1);
	ck_assert_int_eq(shm->cfds[0], fd);
	ck_assert_uint_eq(shm->lfds[fd / 8] & (1U << (fd % 8)), 0);
	ck_assert_uint_eq(shm->lhits, 2);
	ck_assert_int_eq((int)cl(fd), -2);		/* its bit is gone */
	ck_assert_int_ge(fd = open("/proc/self/exe", O_RDONLY), 0);
	shm->lfds[fd / 8] |= 1U << (fd % 8);
	shm->chead = RSTUB_CLOSES;			/* the ring full */
	ck_assert_int_eq((int)cl(fd), -2);
	ck_assert_int_eq(fcntl(fd, F_GETFD), 0);
	ck_assert_uint_eq(shm->lfds[fd / 8] & (1U << (fd % 8)), 0);
	shm->ctail = 1;
	shm->lfds[fd / 8] |= 1U << (fd % 8);
	ck_assert_int_eq((int)cl(fd), 0);
	ck_assert_int_eq(shm->cfds[0], fd);		/* at 64 % 64 */
	ck_assert_uint_eq(shm->chead, RSTUB_CLOSES + 1);
	munmap(m, 4096 + RSTUB_DATA);
}
END_TEST

static Suite *
agent_suite(void)
{
	Suite	*s = suite_create("agent");
	TCase	*tc;

	tc = tcase_create("husk");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_husk_calls);
	tcase_add_test(tc, test_husk_waited);
	tcase_add_test(tc, test_husk_threads);
	tcase_add_test(tc, test_stub_displace);
	tcase_add_test(tc, test_rstub_answers);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner	*sr = srunner_create(agent_suite());
	int	 failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? 0 : 1;
}
