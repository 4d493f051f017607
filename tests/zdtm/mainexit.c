/*
 * The main thread gone (pthread_exit) while two others run: the process
 * keeps its pid, its main thread a zombie. After SIGUSR1 (which W1 alone
 * takes) W1 finds the pid, its tid and TLS as they were, the main thread
 * still gone, sends W2 a signal by glibc's cached tid, joins W2, and
 * exits for the process.
 */
#include <sys/syscall.h>

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <time.h>

#include "zdtm.h"

static pid_t		pid;
static pid_t		tids[2];
static pthread_t	w2;
static __thread int	tls;

static void
check(int i)
{
	if (syscall(SYS_gettid) != tids[i] || tls != 500 + i)
		zdtm_fail("W%d: tid %ld (was %d), TLS %d", i + 1,
		    (long)syscall(SYS_gettid), tids[i], tls);
}

static void *
worker2(void *arg)
{
	struct timespec	ts = { 30, 0 };
	sigset_t	set;
	int		sig;

	tls = 501;
	tids[1] = syscall(SYS_gettid);
	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	sigaddset(&set, SIGUSR2);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	sigdelset(&set, SIGUSR1);
	/* EINTR: the dump's stop ends a sigtimedwait, as any ptrace stop. */
	while ((sig = sigtimedwait(&set, NULL, &ts)) == -1 && errno == EINTR)
		;
	if (sig != SIGUSR2)
		zdtm_fail("W2: no SIGUSR2");
	check(1);
	return arg;
}

static void *
worker1(void *arg)
{
	char	buf[512], *p;
	FILE	*f;
	size_t	 n = 0;

	tls = 500;
	tids[0] = syscall(SYS_gettid);
	zdtm_wait_go();
	check(0);
	if (getpid() != pid)
		zdtm_fail("pid %d, was %d", getpid(), pid);
	/* The main thread's state is the process's /proc/self/stat. */
	if ((f = fopen("/proc/self/stat", "r")) != NULL) {
		n = fread(buf, 1, sizeof buf - 1, f);
		fclose(f);
	}
	buf[n] = '\0';
	if ((p = strrchr(buf, ')')) == NULL || p[2] != 'Z')
		zdtm_fail("the main thread is back: %s", buf);
	pthread_kill(w2, SIGUSR2);
	pthread_join(w2, NULL);
	zdtm_pass();
	return arg;
}

int
main(void)
{
	pthread_t	w1;
	sigset_t	set;

	zdtm_init();
	pid = getpid();
	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	pthread_create(&w2, NULL, worker2, NULL);
	pthread_sigmask(SIG_UNBLOCK, &set, NULL);
	pthread_create(&w1, NULL, worker1, NULL);
	while (tids[0] == 0 || tids[1] == 0)
		usleep(1000);
	zdtm_ready();
	pthread_exit(NULL);
}
