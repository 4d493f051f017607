/*
 * bench/memthreads T MIB: a process of T threads (the main one among
 * them) holding MIB MiB it has written, for bench/thmove. The other
 * threads wake every millisecond (a nanosleep) and do nothing else, as
 * the idle workers of a pool do. Prints "ready" once the memory is
 * written; on SIGUSR1 checks it and prints "check ok" or "check bad"; on
 * SIGTERM exits 0.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t	 check, done;
static uint64_t			*mem;
static size_t			 words;

static void
on_signal(int sig)
{
	if (sig == SIGUSR1)
		check = 1;
	else
		done = 1;
}

static void *
idle(void *arg)
{
	struct timespec	ts = { 0, 1000 * 1000 };

	while (!done)
		nanosleep(&ts, NULL);
	return arg;
}

static void
say(const char *s)
{
	if (write(1, s, strlen(s)) == -1)
		exit(3);
}

int
main(int argc, char **argv)
{
	struct sigaction sa;
	pthread_t	*th;
	sigset_t	 set, old;
	size_t		 i;
	int		 t, k, bad;

	if (argc != 3 || (t = atoi(argv[1])) < 1 || atoi(argv[2]) < 1) {
		fprintf(stderr, "usage: memthreads THREADS MIB\n");
		return 2;
	}
	words = (size_t)atoi(argv[2]) << 17;
	if ((mem = malloc(words * sizeof *mem)) == NULL)
		return 1;
	for (i = 0; i < words; i++)
		mem[i] = i * 0x9e3779b97f4a7c15ULL;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_signal;
	sigaction(SIGUSR1, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	/* The workers block both: the main thread takes them. */
	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	sigaddset(&set, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &set, &old);
	th = calloc(t, sizeof *th);
	for (k = 1; k < t; k++)
		pthread_create(&th[k], NULL, idle, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	say("ready\n");
	while (!done) {
		pause();
		if (!check)
			continue;
		check = 0;
		for (i = 0, bad = 0; i < words; i++)
			bad |= mem[i] != i * 0x9e3779b97f4a7c15ULL;
		say(bad ? "check bad\n" : "check ok\n");
	}
	for (k = 1; k < t; k++)
		pthread_join(th[k], NULL);
	return 0;
}
