/*
 * A test program for signals through moves (tests/lab/t-sigflood.sh).
 *
 *	sigrt take N	counts the SIGRTMIN values 1..N queued to it (sigqueue)
 *			and the SIGUSR2s sent to it, working meanwhile; on
 *			SIGUSR1 prints how many values came once, twice or
 *			more, and which never came or came again, then
 *			exits
 *	sigrt send PID N [USEC]
 *			queues SIGRTMIN with values 1..N to PID, in a tight
 *			loop, USEC (50) between two (a full queue: tried
 *			again), and a SIGUSR2 after every 50th; prints
 *			"sent N usr2 M"
 *
 * With SIGRT_TIMES=PREFIX, the sender writes PREFIX.send, the time it
 * queued each value ("V US", CLOCK_REALTIME in microseconds), and the
 * taker PREFIX.take, for each value how often it came and when it came
 * first and second ("V COUNT US US", 0: never): a test can tell which move
 * a lost or doubled value fell in.
 *
 * Realtime signals are queued, each one delivered: at home, every value
 * comes exactly once. A standard signal is pending at most once: SIGUSR2
 * may come fewer times than it was sent, never more.
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
static unsigned long long	*first, *second;
static int			 n;
static volatile unsigned long	 bad, usr2;

static unsigned long long
sigrt_us(void)
{
	struct timespec	ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return ts.tv_sec * 1000000ULL + ts.tv_nsec / 1000;
}

static void
sigrt_rt(int sig, siginfo_t *si, void *uc)
{
	int	v = si->si_value.sival_int;

	(void)sig;
	(void)uc;
	if (si->si_code != SI_QUEUE || v < 1 || v > n) {
		bad++;
		return;
	}
	if (seen[v] == 0)
		first[v] = sigrt_us();
	else if (seen[v] == 1)
		second[v] = sigrt_us();
	if (seen[v] < 255)
		seen[v]++;
}

static void
sigrt_usr1(int sig)
{
	(void)sig;
	report = 1;
}

static void
sigrt_usr2(int sig)
{
	(void)sig;
	usr2++;
}

/* PREFIX.what for SIGRT_TIMES, or NULL. */
static FILE *
sigrt_times(const char *what)
{
	const char	*prefix = getenv("SIGRT_TIMES");
	char		 path[1024];

	if (prefix == NULL || snprintf(path, sizeof path, "%s.%s", prefix,
	    what) >= (int)sizeof path)
		return NULL;
	return fopen(path, "w");
}

static int
sigrt_take(void)
{
	struct sigaction	 sa;
	volatile unsigned long	 work = 0;
	FILE			*f;
	int			 i, once = 0, more = 0, none = 0, shown = 0;

	seen = calloc(n + 1, 1);
	first = calloc(n + 1, sizeof *first);
	second = calloc(n + 1, sizeof *second);
	if (seen == NULL || first == NULL || second == NULL)
		return 1;
	memset(&sa, 0, sizeof sa);
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sa.sa_sigaction = sigrt_rt;
	sigaction(SIGRTMIN, &sa, NULL);
	sa.sa_flags = SA_RESTART;
	sa.sa_handler = sigrt_usr1;
	sigaction(SIGUSR1, &sa, NULL);
	sa.sa_handler = sigrt_usr2;
	sigaction(SIGUSR2, &sa, NULL);
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
		else if (seen[i] > 1) {
			more++;
			if (shown++ < 10)
				printf("twice %d\n", i);
		} else {
			none++;
			if (shown++ < 10)
				printf("missing %d\n", i);
		}
	}
	if ((f = sigrt_times("take")) != NULL) {
		for (i = 1; i <= n; i++)
			fprintf(f, "%d %d %llu %llu\n", i, seen[i], first[i],
			    second[i]);
		fclose(f);
	}
	printf("usr2 %lu\n", usr2);
	printf("once %d twice-or-more %d missing %d bad %lu\n", once, more,
	    none, bad);
	return 0;
}

static int
sigrt_send(pid_t pid, long usec)
{
	struct timespec		 gap = { 0, usec * 1000 }, nap = { 0, 100000 };
	union sigval		 v;
	unsigned long long	*at;
	FILE			*f;
	int			 i, usr2s = 0;

	if ((at = calloc(n + 1, sizeof *at)) == NULL)
		return 1;
	for (i = 1; i <= n; i++) {
		v.sival_int = i;
		while (sigqueue(pid, SIGRTMIN, v) == -1) {
			if (errno != EAGAIN) {
				perror("sigqueue");
				return 1;
			}
			nanosleep(&nap, NULL);
		}
		at[i] = sigrt_us();
		if (i % 50 == 0) {
			if (kill(pid, SIGUSR2) == -1) {
				perror("kill");
				return 1;
			}
			usr2s++;
		}
		if (usec > 0)
			nanosleep(&gap, NULL);
	}
	if ((f = sigrt_times("send")) != NULL) {
		for (i = 1; i <= n; i++)
			fprintf(f, "%d %llu\n", i, at[i]);
		fclose(f);
	}
	printf("sent %d usr2 %d\n", n, usr2s);
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
