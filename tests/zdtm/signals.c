/*
 * Signal state: handlers with flags and masks, SIGCHLD's flags at its
 * default action, a blocked mask with a signal pending in it, an
 * alternate stack, an interval timer. After the
 * restore the driver sends SIGUSR2 (must reach its handler, on the
 * alternate stack) and then SIGUSR1.
 */
#include <stdint.h>
#include <sys/time.h>

#include "zdtm.h"

static volatile sig_atomic_t	 usr2, hup, on_alt;
static char			 altstack[65536];

static void
on_usr2(int sig, siginfo_t *si, void *uc)
{
	char	here;

	(void)sig; (void)uc;
	usr2 = si->si_code == SI_USER ? 1 : -1;
	on_alt = &here >= altstack && &here < altstack + sizeof altstack;
}

static void
on_hup(int sig)
{
	(void)sig;
	hup++;
}

int
main(void)
{
	struct sigaction	 sa, got;
	struct itimerval	 it;
	stack_t			 ss;
	sigset_t		 set, pend, now;

	zdtm_init();
	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = on_usr2;
	sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESTART;
	sigaddset(&sa.sa_mask, SIGTERM);
	sigaction(SIGUSR2, &sa, NULL);
	signal(SIGHUP, on_hup);
	signal(SIGPIPE, SIG_IGN);
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = SIG_DFL;
	sa.sa_flags = SA_NOCLDWAIT | SA_NOCLDSTOP;
	sigaction(SIGCHLD, &sa, NULL);
	ss.ss_sp = altstack;
	ss.ss_size = sizeof altstack;
	ss.ss_flags = 0;
	sigaltstack(&ss, NULL);
	sigemptyset(&set);
	sigaddset(&set, SIGHUP);
	sigaddset(&set, SIGWINCH);
	sigprocmask(SIG_BLOCK, &set, NULL);
	raise(SIGHUP);			/* pending until unblocked */
	memset(&it, 0, sizeof it);
	it.it_value.tv_sec = 1000;
	setitimer(ITIMER_REAL, &it, NULL);

	zdtm_ready();
	while (!zdtm_go || !usr2)
		pause();

	if (usr2 != 1)
		zdtm_fail("SIGUSR2 came without its siginfo");
	if (!on_alt)
		zdtm_fail("SIGUSR2 handler did not run on the alternate stack");
	sigaction(SIGUSR2, NULL, &got);
	if (got.sa_sigaction != on_usr2 || !(got.sa_flags & SA_ONSTACK) ||
	    !(got.sa_flags & SA_SIGINFO) || !sigismember(&got.sa_mask, SIGTERM))
		zdtm_fail("SIGUSR2 action differs");
	sigaction(SIGPIPE, NULL, &got);
	if (got.sa_handler != SIG_IGN)
		zdtm_fail("SIGPIPE is no longer ignored");
	sigaction(SIGCHLD, NULL, &got);
	if (got.sa_handler != SIG_DFL || !(got.sa_flags & SA_NOCLDWAIT) ||
	    !(got.sa_flags & SA_NOCLDSTOP))
		zdtm_fail("SIGCHLD lost SA_NOCLDWAIT or SA_NOCLDSTOP");
	sigprocmask(SIG_BLOCK, NULL, &now);
	if (!sigismember(&now, SIGHUP) || !sigismember(&now, SIGWINCH) ||
	    sigismember(&now, SIGUSR2))
		zdtm_fail("blocked mask differs");
	sigpending(&pend);
	if (!sigismember(&pend, SIGHUP) || hup != 0)
		zdtm_fail("pending SIGHUP lost");
	sigaltstack(NULL, &ss);
	if (ss.ss_sp != altstack || ss.ss_size != sizeof altstack)
		zdtm_fail("alternate stack differs");
	getitimer(ITIMER_REAL, &it);
	if (it.it_value.tv_sec < 900 || it.it_value.tv_sec > 1000)
		zdtm_fail("interval timer lost (%ld s left)",
		    (long)it.it_value.tv_sec);
	sigprocmask(SIG_UNBLOCK, &set, NULL);
	if (hup != 1)
		zdtm_fail("pending SIGHUP not delivered on unblock");
	zdtm_pass();
}
