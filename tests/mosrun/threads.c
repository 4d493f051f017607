/*
 * A threaded test program for mosrun (tests/lab/t-threads.sh).
 *
 *	threads omp PHASES	OpenMP: PHASES parallel reductions of two
 *				threads, a line each; the same lines wherever
 *				it runs
 *	threads pipe FIFO N	three workers write N lines each, one every
 *				20 ms, while a fourth thread waits in a read of
 *				FIFO, fed later; "read: WORD" once it is
 *
 * Every line goes out with write(2) on stdout: forwarded while away, each
 * thread's from its own thread.
 */
#include <sys/syscall.h>

#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static void __attribute__((format(printf, 1, 2)))
say(const char *fmt, ...)
{
	char	buf[256];
	va_list	ap;
	int	n;

	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	if (write(1, buf, n) != n)
		exit(3);
}

static int
omp(int phases)
{
	uint64_t	sum, n = 600ULL * 1000 * 1000;
	int64_t		i;
	int		k;

	for (k = 0; k < phases; k++) {
		sum = 0;
#pragma omp parallel for num_threads(2) schedule(static) reduction(+:sum)
		for (i = 0; i < (int64_t)n; i++)
			sum += (uint64_t)(i * (k + 1)) % 1009;
		say("phase %d sum %llu\n", k, (unsigned long long)sum);
	}
	say("done\n");
	return 0;
}

static int	 lines;

static void *
worker(void *arg)
{
	struct timespec	ts = { 0, 20 * 1000 * 1000 };
	int		i, w = (int)(intptr_t)arg;

	for (i = 0; i < lines; i++) {
		say("worker %d line %d\n", w, i);
		nanosleep(&ts, NULL);
	}
	say("worker %d done\n", w);
	return NULL;
}

static void *
reader(void *arg)
{
	char	buf[64];
	ssize_t	n;
	int	fd;

	if ((fd = open(arg, O_RDONLY)) == -1 ||
	    (n = read(fd, buf, sizeof buf - 1)) <= 0)
		return (void *)1;
	buf[strcspn(buf, "\n")] = '\0';
	say("read: %s (thread %ld)\n", buf, (long)syscall(SYS_gettid));
	return NULL;
}

static int
pipes(char *fifo, int n)
{
	pthread_t	w[3], r;
	void		*rv;
	int		i;

	lines = n;
	say("ready\n");
	pthread_create(&r, NULL, reader, fifo);
	for (i = 0; i < 3; i++)
		pthread_create(&w[i], NULL, worker, (void *)(intptr_t)i);
	for (i = 0; i < 3; i++)
		pthread_join(w[i], NULL);
	pthread_join(r, &rv);
	say("joined%s\n", rv == NULL ? "" : " (the read failed)");
	return rv == NULL ? 0 : 1;
}

int
main(int argc, char **argv)
{
	if (argc == 3 && strcmp(argv[1], "omp") == 0)
		return omp(atoi(argv[2]));
	if (argc == 4 && strcmp(argv[1], "pipe") == 0)
		return pipes(argv[2], atoi(argv[3]));
	fprintf(stderr, "usage: threads omp PHASES | pipe FIFO N\n");
	return 2;
}
