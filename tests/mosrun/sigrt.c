/*
 * A test program for signals through moves (tests/lab/sigflood.sh).
 *
 *	sigrt take N	counts the SIGRTMIN values 1..N queued to it (sigqueue),
 *			working meanwhile; on SIGUSR1 prints how many values
 *			came once, twice or more, and which never came, then
 *			exits
 *	sigrt send PID N [USEC]
 *			queues SIGRTMIN with values 1..N to PID, in a tight
 *			loop, USEC (50) between two (a move refuses a process
 *			with too many signals pending; a full queue: tried
 *			again); prints "sent N"
 *
 * Realtime signals are queued, each one delivered: at home, every value
 * comes exactly once.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t	 report;
static unsigned char		*seen;
static int			 n;
static volatile unsigned long	 bad;

static void
sigrt_rt(int sig, siginfo_t *si, void *uc)
{
	int	v = si->si_value.sival_int;

	(void)sig;
	(void)uc;
	if (si->si_code != SI_QUEUE || v < 1 || v > n)
		bad++;
	else if (seen[v] < 255)
		seen[v]++;
}

static void
sigrt_usr1(int sig)
{
	(void)sig;
	report = 1;
}

static int
sigrt_take(void)
{
	struct sigaction	 sa;
	volatile unsigned long	 work = 0;
	int			 i, once = 0, more = 0, none = 0, shown = 0;

	if ((seen = calloc(n + 1, 1)) == NULL)
		return 1;
	memset(&sa, 0, sizeof sa);
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sa.sa_sigaction = sigrt_rt;
	sigaction(SIGRTMIN, &sa, NULL);
	sa.sa_flags = SA_RESTART;
	sa.sa_handler = sigrt_usr1;
	sigaction(SIGUSR1, &sa, NULL);
	printf("ready\n");
	fflush(stdout);
	while (!report) {
		/* some work, and some calls that go home */
		for (i = 0; i < 200000; i++)
			work += i;
		if (getppid() == 1)
			return 1;
	}
	for (i = 1; i <= n; i++) {
		if (seen[i] == 1)
			once++;
		else if (seen[i] > 1)
			more++;
		else {
			none++;
			if (shown++ < 10)
				printf("missing %d\n", i);
		}
	}
	printf("once %d twice-or-more %d missing %d bad %lu\n", once, more,
	    none, bad);
	return 0;
}

static int
sigrt_send(pid_t pid, long usec)
{
	struct timespec	 gap = { 0, usec * 1000 }, nap = { 0, 100000 };
	union sigval	 v;
	int		 i;

	for (i = 1; i <= n; i++) {
		v.sival_int = i;
		while (sigqueue(pid, SIGRTMIN, v) == -1) {
			if (errno != EAGAIN) {
				perror("sigqueue");
				return 1;
			}
			nanosleep(&nap, NULL);
		}
		if (usec > 0)
			nanosleep(&gap, NULL);
	}
	printf("sent %d\n", n);
	return 0;
}

int
main(int argc, char **argv)
{
	if (argc == 3 && strcmp(argv[1], "take") == 0 &&
	    (n = atoi(argv[2])) > 0)
		return sigrt_take();
	if ((argc == 4 || argc == 5) && strcmp(argv[1], "send") == 0 &&
	    (n = atoi(argv[3])) > 0)
		return sigrt_send(atoi(argv[2]), argc == 5 ?
		    atol(argv[4]) % 1000000 : 50);
	fprintf(stderr, "usage: sigrt take N | sigrt send PID N [USEC]\n");
	return 2;
}
