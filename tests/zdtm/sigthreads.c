/*
 * Signals per thread: three workers with masks of their own, one with an
 * alternate stack of its own, one with a signal sent to it alone (tgkill)
 * pending when dumped. After SIGUSR1 (main's alone): each finds its mask
 * and stack as they were, the pending one is still that thread's, and a
 * signal sent by tgkill to one thread reaches that thread only.
 */
#include <sys/syscall.h>

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <time.h>

#include "zdtm.h"

enum { A, B, C, N };	/* A: pending; B: handles, own stack; C: waits */

static pthread_barrier_t go;
static pid_t		 tids[N];
static volatile pid_t	 hit_tid;
static volatile int	 hits, hit_alt;
static char		 altstack[65536];

static void
on_usr2(int sig)
{
	char	here;

	(void)sig;
	hits++;
	hit_tid = syscall(SYS_gettid);
	hit_alt = &here >= altstack && &here < altstack + sizeof altstack;
}

static void
mask_of(int i, sigset_t *set)
{
	sigemptyset(set);
	sigaddset(set, SIGUSR1);
	if (i != B)
		sigaddset(set, SIGUSR2);
	if (i == C)
		sigaddset(set, SIGTERM);
}

static void
wait_for(int i, int sig)
{
	struct timespec	ts = { 10, 0 };
	siginfo_t	si;
	sigset_t	set;
	int		got;

	sigemptyset(&set);
	sigaddset(&set, sig);
	while ((got = sigtimedwait(&set, &si, &ts)) == -1 && errno == EINTR)
		;
	if (got != sig)
		zdtm_fail("thread %d: no signal %d for it", i, sig);
	if ((si.si_code != SI_TKILL && si.si_code != SI_USER) ||
	    si.si_pid != getpid())
		zdtm_fail("thread %d: signal %d from %d, code %d", i, sig,
		    si.si_pid, si.si_code);
}

static void *
worker(void *arg)
{
	int		i = (int)(intptr_t)arg;
	sigset_t	want, now;
	stack_t		ss;
	int		n;

	mask_of(i, &want);
	pthread_sigmask(SIG_SETMASK, &want, NULL);
	if (i == B) {
		ss.ss_sp = altstack;
		ss.ss_size = sizeof altstack;
		ss.ss_flags = 0;
		sigaltstack(&ss, NULL);
	}
	tids[i] = syscall(SYS_gettid);
	pthread_barrier_wait(&go);	/* started */
	pthread_barrier_wait(&go);	/* restored */
	pthread_sigmask(SIG_SETMASK, NULL, &now);
	if (sigismember(&now, SIGUSR2) != sigismember(&want, SIGUSR2) ||
	    sigismember(&now, SIGTERM) != sigismember(&want, SIGTERM))
		zdtm_fail("thread %d: its mask changed", i);
	sigaltstack(NULL, &ss);
	if (i == B && (ss.ss_sp != altstack || ss.ss_size != sizeof altstack))
		zdtm_fail("thread B: its alternate stack is gone");
	if (i != B && !(ss.ss_flags & SS_DISABLE))
		zdtm_fail("thread %d: an alternate stack not its own", i);
	if (i == A || i == C)
		wait_for(i, SIGUSR2);
	for (n = 0; i == B && hits == 0 && n < 10000; n++)
		usleep(1000);
	return NULL;
}

int
main(void)
{
	struct sigaction	sa;
	pthread_t		t[N];
	sigset_t		set;
	int			i;

	zdtm_init();
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_usr2;
	sa.sa_flags = SA_ONSTACK;
	sigaction(SIGUSR2, &sa, NULL);
	sigemptyset(&set);
	sigaddset(&set, SIGUSR2);
	pthread_sigmask(SIG_BLOCK, &set, NULL);	/* main: USR1 only */
	pthread_barrier_init(&go, NULL, N + 1);
	for (i = 0; i < N; i++)
		pthread_create(&t[i], NULL, worker, (void *)(intptr_t)i);
	pthread_barrier_wait(&go);
	syscall(SYS_tgkill, getpid(), tids[A], SIGUSR2);
	usleep(100000);
	if (hits != 0)
		zdtm_fail("a signal for A reached a handler");
	zdtm_ready();
	zdtm_wait_go();

	pthread_barrier_wait(&go);
	/* By the tids from before the dump, and by glibc's. */
	syscall(SYS_tgkill, getpid(), tids[B], SIGUSR2);
	pthread_kill(t[C], SIGUSR2);
	for (i = 0; i < N; i++)
		pthread_join(t[i], NULL);
	if (hits != 1 || hit_tid != tids[B] || !hit_alt)
		zdtm_fail("tgkill to B: %d hits, in thread %d, %s", hits,
		    hit_tid, hit_alt ? "on its stack" : "not on its stack");
	zdtm_pass();
}
