/*
 * A threaded test program for mosrun (tests/lab/t-threads.sh).
 *
 *	threads omp PHASES	OpenMP: PHASES parallel reductions of two
 *				threads, a line each; the same lines wherever
 *				it runs
 *	threads pipe FIFO N	three workers write N lines each, one every
 *				20 ms, while a fourth thread waits in a read of
 *				FIFO, fed later; "read: WORD" once it is
 *	threads spawn FIFO N	once FIFO is read, N rounds of four threads
 *				made and joined, each saying its id; then a
 *				signal sent to one thread (pthread_kill) and
 *				one to the process that only one thread takes,
 *				each saying which thread took it; then a fork
 *	threads end CODE	a thread made away ends the process, main
 *				waiting: exit(CODE), or if CODE is negative
 *				the signal -CODE sent to itself
 *	threads copy FILE T	FILE read from start to end in 4 KiB reads
 *				by the main thread, the pieces written on
 *				stdout by T threads in turn (piece i by
 *				thread i % T), each write after the one
 *				before: stdout is FILE again; T 0: the main
 *				thread writes them (no other thread)
 *	threads share FIFO FILE N
 *				a thread waits in an open and a read of FIFO,
 *				fed later, while another writes FILE in N
 *				4 KiB pieces, each read by the main thread
 *				through a descriptor of its own right after:
 *				"share: N pieces, K stale" (K 0: each read saw
 *				the write before it); "fifo: WORD" once fed
 *	threads full FIFO FILE	FILE opened and a byte written to it; a thread
 *				waits in a read of FIFO ("ready"), then another
 *				writes 64 KiB ("write: N") and the main thread
 *				then fsyncs and closes it ("fsync: ...",
 *				"close: ...")
 *
 * Every line goes out with write(2) on stdout: forwarded while away, each
 * thread's from its own thread.
 */
#include <sys/syscall.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
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

	/*
	 * What it inherits beyond 0-2 (a test harness's pipes) goes: a
	 * checkpoint of it refuses pipes, as it says.
	 */
	close_range(3, ~0U, 0);
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

static volatile pid_t	took;

static void
on_signal(int sig)
{
	took = (pid_t)syscall(SYS_gettid);
	(void)sig;
}

static void *
spawned(void *arg)
{
	say("round %d thread %d\n", (int)(intptr_t)arg / 4,
	    (int)(intptr_t)arg % 4);
	return (void *)(intptr_t)syscall(SYS_gettid);
}

static volatile int	 stop;
static volatile pid_t	 target_tid;

static void *
target(void *arg)
{
	sigset_t	set;

	/* the only thread that takes SIGUSR2 */
	sigemptyset(&set);
	sigaddset(&set, SIGUSR2);
	pthread_sigmask(SIG_UNBLOCK, &set, NULL);
	target_tid = (pid_t)syscall(SYS_gettid);
	while (!stop)
		usleep(1000);
	return arg;
}

static int
spawn(char *fifo, int rounds)
{
	struct sigaction sa;
	pthread_t	 th[4], t;
	sigset_t	 set;
	char		 buf[16];
	void		*rv;
	int		 fd, r, i, status;
	pid_t		 seen[4], child;

	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_signal;
	sigaction(SIGUSR1, &sa, NULL);
	sigaction(SIGUSR2, &sa, NULL);
	sigemptyset(&set);
	sigaddset(&set, SIGUSR2);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	say("ready\n");
	if ((fd = open(fifo, O_RDONLY)) == -1 || read(fd, buf, sizeof buf) <= 0)
		return 1;
	for (r = 0; r < rounds; r++) {
		for (i = 0; i < 4; i++)
			pthread_create(&th[i], NULL, spawned,
			    (void *)(intptr_t)(r * 4 + i));
		for (i = 0; i < 4; i++) {
			pthread_join(th[i], &rv);
			seen[i] = (pid_t)(intptr_t)rv;
		}
		for (i = 0; i < 4; i++)
			if (seen[i] <= 0 || seen[i] == getpid())
				return 4;
	}
	say("joined %d\n", rounds * 4);
	pthread_create(&t, NULL, target, NULL);
	while (target_tid == 0)
		usleep(1000);
	took = 0;
	pthread_kill(t, SIGUSR1);
	while (took == 0)
		usleep(1000);
	say("usr1 to the thread: %s\n", took == target_tid ? "took it" :
	    "another took it");
	took = 0;
	say("waiting for usr2\n");
	while (took == 0)
		usleep(1000);
	say("usr2 to the process: %s\n", took == target_tid ?
	    "the one that takes it took it" : "another took it");
	/* a process made by a threaded one: it goes home, where it forks */
	if ((child = fork()) == 0)
		_exit(3);
	if (child == -1 || waitpid(child, &status, 0) != child)
		return 5;
	say("child exited %d\n", WEXITSTATUS(status));
	stop = 1;
	pthread_join(t, NULL);
	return 0;
}

/* copy: the piece read last, and whose turn it is to write it. */
static pthread_mutex_t	 copy_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t	 copy_cv = PTHREAD_COND_INITIALIZER;
static char		 copy_buf[4096];
static ssize_t		 copy_len = -1;	/* -1: none; 0: the end */
static long		 copy_seq;	/* pieces written */
static int		 copy_threads;

static void
copy_out(const char *buf, size_t len)
{
	size_t	done = 0;
	ssize_t	n;

	while (done < len) {
		if ((n = write(1, buf + done, len - done)) <= 0)
			exit(3);
		done += n;
	}
}

static void *
copy_writer(void *arg)
{
	long	me = (long)(intptr_t)arg;

	pthread_mutex_lock(&copy_mu);
	for (;;) {
		while (copy_len == -1 || (copy_len > 0 &&
		    copy_seq % copy_threads != me))
			pthread_cond_wait(&copy_cv, &copy_mu);
		if (copy_len == 0)
			break;
		copy_out(copy_buf, copy_len);
		copy_len = -1;
		copy_seq++;
		pthread_cond_broadcast(&copy_cv);
	}
	pthread_mutex_unlock(&copy_mu);
	return NULL;
}

static int
copy(const char *path, int nt)
{
	pthread_t	t[8];
	char		buf[sizeof copy_buf];
	ssize_t		n;
	int		fd, i;

	if ((fd = open(path, O_RDONLY)) == -1 || nt < 0 || nt > 8)
		return 4;
	copy_threads = nt;
	for (i = 0; i < nt; i++)
		pthread_create(&t[i], NULL, copy_writer, (void *)(intptr_t)i);
	for (;;) {
		if ((n = read(fd, buf, sizeof buf)) < 0)
			return 5;
		if (nt == 0) {
			if (n == 0)
				break;
			copy_out(buf, n);
			continue;
		}
		pthread_mutex_lock(&copy_mu);
		while (copy_len != -1)
			pthread_cond_wait(&copy_cv, &copy_mu);
		memcpy(copy_buf, buf, n);
		copy_len = n;
		pthread_cond_broadcast(&copy_cv);
		pthread_mutex_unlock(&copy_mu);
		if (n == 0)
			break;
	}
	for (i = 0; i < nt; i++)
		pthread_join(t[i], NULL);
	return close(fd) == -1 ? 6 : 0;
}

/* share, full: a thread waiting in an open and a read of a FIFO. */
static void *
fifo_reader(void *arg)
{
	char	buf[64];
	ssize_t	n;
	int	fd;

	if ((fd = open(arg, O_RDONLY)) == -1)
		exit(7);
	n = read(fd, buf, sizeof buf - 1);
	buf[n > 0 ? n : 0] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
	say("fifo: %s\n", buf);
	close(fd);
	return NULL;
}

/* share: the piece written last (-1 none), read back by main in turn. */
static pthread_mutex_t	 share_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t	 share_cv = PTHREAD_COND_INITIALIZER;
static long		 share_written = -1, share_read = -1, share_n;
static int		 share_fd;

static void
share_piece(char *buf, long k)
{
	memset(buf, 'a' + k % 26, 4096);
	snprintf(buf, 32, "piece %ld", k);
}

static void *
share_writer(void *arg)
{
	char	buf[4096];
	long	k;

	for (k = 0; k < share_n; k++) {
		share_piece(buf, k);
		if (write(share_fd, buf, sizeof buf) != sizeof buf)
			exit(8);
		pthread_mutex_lock(&share_mu);
		share_written = k;
		pthread_cond_broadcast(&share_cv);
		while (share_read < k)
			pthread_cond_wait(&share_cv, &share_mu);
		pthread_mutex_unlock(&share_mu);
	}
	return NULL;
}

static int
share(const char *fifo, const char *path, long n)
{
	pthread_t	r, w;
	char		want[4096], got[4096];
	long		k, stale = 0;
	int		fd;

	if ((share_fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644)) == -1 ||
	    (fd = open(path, O_RDONLY)) == -1)
		return 4;
	share_n = n;
	pthread_create(&r, NULL, fifo_reader, (void *)fifo);
	pthread_create(&w, NULL, share_writer, NULL);
	for (k = 0; k < n; k++) {
		pthread_mutex_lock(&share_mu);
		while (share_written < k)
			pthread_cond_wait(&share_cv, &share_mu);
		pthread_mutex_unlock(&share_mu);
		share_piece(want, k);
		if (read(fd, got, sizeof got) != sizeof got ||
		    memcmp(want, got, sizeof got) != 0)
			stale++;
		pthread_mutex_lock(&share_mu);
		share_read = k;
		pthread_cond_broadcast(&share_cv);
		pthread_mutex_unlock(&share_mu);
	}
	pthread_join(w, NULL);
	say("share: %ld pieces, %ld stale\n", n, stale);
	pthread_join(r, NULL);
	return close(fd) == -1 || close(share_fd) == -1 ? 6 : 0;
}

static int	full_fd;

static void *
full_writer(void *arg)
{
	static char	buf[65536];

	memset(buf, 'x', sizeof buf);
	say("write: %zd\n", write(full_fd, buf, sizeof buf));
	return NULL;
}

static int
full(const char *fifo, const char *path)
{
	pthread_t	t;

	if ((full_fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644)) == -1 ||
	    write(full_fd, "x", 1) != 1)
		return 4;
	pthread_create(&t, NULL, fifo_reader, (void *)fifo);
	say("ready\n");
	pthread_join(t, NULL);
	pthread_create(&t, NULL, full_writer, NULL);
	pthread_join(t, NULL);
	say("fsync: %s\n", fsync(full_fd) == -1 ? strerror(errno) : "ok");
	say("close: %s\n", close(full_fd) == -1 ? strerror(errno) : "ok");
	return 0;
}

/* A thread, not main, ends the process: exit(code), or signal -code. */
static void *
ender(void *arg)
{
	int	code = (int)(intptr_t)arg;

	usleep(100 * 1000);
	if (code < 0)
		pthread_kill(pthread_self(), -code);
	exit(code);
}

static void __attribute__((noreturn))
end(int code)
{
	pthread_t	t;

	pthread_create(&t, NULL, ender, (void *)(intptr_t)code);
	for (;;)
		pause();
}

int
main(int argc, char **argv)
{
	if (argc == 3 && strcmp(argv[1], "omp") == 0)
		return omp(atoi(argv[2]));
	if (argc == 4 && strcmp(argv[1], "pipe") == 0)
		return pipes(argv[2], atoi(argv[3]));
	if (argc == 4 && strcmp(argv[1], "spawn") == 0)
		return spawn(argv[2], atoi(argv[3]));
	if (argc == 3 && strcmp(argv[1], "end") == 0)
		end(atoi(argv[2]));
	if (argc == 4 && strcmp(argv[1], "copy") == 0)
		return copy(argv[2], atoi(argv[3]));
	if (argc == 5 && strcmp(argv[1], "share") == 0)
		return share(argv[2], argv[3], atol(argv[4]));
	if (argc == 4 && strcmp(argv[1], "full") == 0)
		return full(argv[2], argv[3]);
	fprintf(stderr, "usage: threads omp PHASES | pipe FIFO N | "
	    "spawn FIFO N | end CODE | copy FILE T | share FIFO FILE N | "
	    "full FIFO FILE\n");
	return 2;
}
