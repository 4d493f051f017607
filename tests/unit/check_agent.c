/*
 * Unit tests for agent/: the deputy's husk, a process at home reduced to
 * a stub that runs calls in its own context.
 */
#include <sys/syscall.h>
#include <sys/wait.h>

#include <check.h>
#include <errno.h>
#include <fcntl.h>
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
		for (;;)
			pause();
	}
	ck_assert_int_gt(*pid, 0);
	t = mig_seize(*pid, &cause);
	ck_assert_msg(t != NULL, "%s", cause);
	return t;
}

/* Wait for the husk's next stop and say what it was. */
static enum husk_stop
next_stop(struct husk *h, long *rv, siginfo_t *si)
{
	int	status;

	ck_assert_int_eq(waitpid(mig_pid(h->t), &status, __WALL),
	    mig_pid(h->t));
	ck_assert(WIFSTOPPED(status));
	return husk_stopped(h, status, rv, si);
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
	husk_call(&h, SYS_getpid, args);
	ck_assert_int_eq(next_stop(&h, &rv, &si), HUSK_RETURNED);
	ck_assert_int_eq(rv, pid);
	ck_assert(!h.busy);

	/* memory laid out in the shared area, read back in place */
	mem = husk_scratch(&h, &base, &len);
	ck_assert_uint_ge(len, 1 << 16);
	ck_assert_msg(husk_run(&h, &cause) == 0, "%s", cause);
	args[0] = AT_FDCWD;
	args[1] = base;
	args[2] = base + 4096;
	args[3] = 64;
	strcpy((char *)mem, "/proc/self/exe");
	husk_call(&h, SYS_readlinkat, args);
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
	ck_assert_int_eq(husk_continue(&h, 0, &cause), 0);
	husk_call(&h, SYS_getppid, args);
	ck_assert_int_eq(next_stop(&h, &rv, &si), HUSK_RETURNED);
	ck_assert_int_eq(rv, getpid());

	/* a signal breaks off a blocking call, which returns its restart code */
	ck_assert_msg(husk_run(&h, &cause) == 0, "%s", cause);
	memset(args, 0, sizeof args);
	husk_call(&h, SYS_pause, args);
	usleep(20000);
	kill(pid, SIGUSR2);
	ck_assert_int_eq(next_stop(&h, &rv, &si), HUSK_SIGNAL);
	ck_assert_int_eq(si.si_signo, SIGUSR2);
	ck_assert_int_eq(husk_continue(&h, 0, &cause), 0);
	ck_assert_int_eq(next_stop(&h, &rv, &si), HUSK_RETURNED);
	ck_assert_int_eq(rv, -ERESTARTNOHAND);

	/* held, grown, and the stub serves from the new area */
	ck_assert_msg(husk_run(&h, &cause) == 0, "%s", cause);
	ck_assert_msg(husk_hold(&h, &cause) == 0, "%s", cause);
	ck_assert_msg(husk_grow(&h, 1 << 20, &cause) == 0, "%s", cause);
	mem = husk_scratch(&h, &base, &len);
	ck_assert_uint_ge(len, 1 << 20);
	ck_assert_msg(husk_run(&h, &cause) == 0, "%s", cause);
	memset(mem + len - 4096, 0, 8);
	args[0] = base + len - 4096;	/* into the new area's last page */
	args[1] = 8;
	husk_call(&h, SYS_getrandom, args);
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

static Suite *
agent_suite(void)
{
	Suite	*s = suite_create("agent");
	TCase	*tc;

	tc = tcase_create("husk");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_husk_calls);
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
