/*
 * A test program for mosrun: it does environment-touching work, waits on a
 * FIFO while the test moves it, then does the same work again and reports
 * everything on stdout for the test to compare. Every step that runs after
 * a move is served at home (files, pipes, identity) or runs on the node
 * it moved to (CPU work).
 *
 *	walker FIFO [MODE] [EXIT]
 *
 * MODE: "walk" (default) the whole walk, exiting with EXIT (default 0);
 * "fork" forks once moved; "wait" blocks on the FIFO until killed;
 * "spin" burns CPU for EXIT seconds after the first line; "big" fills
 * EXIT MiB with a pattern before it is ready, and checks it once moved;
 * "nap" fills EXIT MiB likewise and then sleeps until killed, making no
 * call at home; "poll" waits in EXIT polls of 600 ms (forwarded) and says
 * how long they took; "epoll" waits in epoll_wait for the FIFO to be
 * written, without a timeout, and says how often it was interrupted.
 */
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/times.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t usr1;

static void
on_usr1(int sig)
{
	usr1 = 1;
}

static void
say(const char *fmt, ...)
{
	va_list	ap;

	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
}

/* Block until the test writes a line into the FIFO. */
static void
wait_fifo(const char *fifo)
{
	char	 line[64];
	FILE	*f;

	if ((f = fopen(fifo, "r")) == NULL) {
		say("FAIL fopen %s: %s", fifo, strerror(errno));
		exit(99);
	}
	if (fgets(line, sizeof line, f) == NULL)
		say("FAIL fifo closed");
	fclose(f);
}

static double
cpu_seconds(void)
{
	struct timespec	ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void
burn(double secs)
{
	double		 until = cpu_seconds() + secs;
	volatile double	 x = 1;

	while (cpu_seconds() < until)
		for (int i = 0; i < 100000; i++)
			x = x * 1.0000001 + 1e-9;
}

static void
show_file(const char *path)
{
	char	buf[256];
	ssize_t	n;
	int	fd;

	if ((fd = open(path, O_RDONLY)) == -1) {
		say("open %s: %s", path, strerror(errno));
		return;
	}
	n = read(fd, buf, sizeof buf - 1);
	buf[n < 0 ? 0 : n] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
	say("read %s: %s", path, buf);
	close(fd);
}

int
main(int argc, char **argv)
{
	const char	*fifo, *mode = "walk";
	char		 line[256];
	int		 log, code = 0, st;
	struct tms	 t;
	pid_t		 child;
	FILE		*f;
	double		 before;

	if (argc < 2) {
		fprintf(stderr, "usage: walker FIFO [MODE] [EXIT]\n");
		return 2;
	}
	fifo = argv[1];
	if (argc > 2)
		mode = argv[2];
	if (argc > 3)
		code = atoi(argv[3]);
	signal(SIGUSR1, on_usr1);

	if (strcmp(mode, "big") == 0 || strcmp(mode, "nap") == 0) {
		size_t	 n = (size_t)code << 20, i;
		uint8_t	*m = malloc(n);

		/* a test harness's pipes: they would stop a checkpoint */
		close_range(3, ~0U, 0);
		for (i = 0; i < n; i++)
			m[i] = (uint8_t)(i * 7 + i / 4096);
		say("pid %d", (int)getpid());
		say("ready");
		while (strcmp(mode, "nap") == 0)
			usleep(100000);
		wait_fifo(fifo);
		for (i = 0; i < n; i++)
			if (m[i] != (uint8_t)(i * 7 + i / 4096))
				break;
		say("memory %s", i == n ? "intact" : "corrupted");
		return 0;
	}
	if (strcmp(mode, "poll") == 0) {
		struct timespec	a, b;
		int		i;

		close_range(3, ~0U, 0);
		say("ready");
		clock_gettime(CLOCK_MONOTONIC, &a);
		for (i = 0; i < code; i++)
			poll(NULL, 0, 600);
		clock_gettime(CLOCK_MONOTONIC, &b);
		say("polled %d times in %ld ms", code, (long)((b.tv_sec -
		    a.tv_sec) * 1000 + (b.tv_nsec - a.tv_nsec) / 1000000));
		return 0;
	}
	if (strcmp(mode, "epoll") == 0) {
		struct epoll_event	ev = { .events = EPOLLIN };
		int			fd, ep, n, eintr = 0;

		if ((fd = open(fifo, O_RDONLY | O_NONBLOCK)) == -1 ||
		    (ep = epoll_create1(0)) == -1 ||
		    epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) == -1) {
			say("FAIL epoll: %s", strerror(errno));
			return 1;
		}
		say("ready");
		while ((n = epoll_wait(ep, &ev, 1, -1)) == -1 && errno == EINTR)
			eintr++;
		say("epoll %d, interrupted %d", n, eintr);
		return 0;
	}
	if (strcmp(mode, "spin") == 0) {
		say("pid %d", (int)getpid());
		burn(code);
		say("cpu at least %d: %s", code, cpu_seconds() >= code ?
		    "yes" : "no");
		return 0;
	}

	say("pid %d ppid %d", (int)getpid(), (int)getppid());
	log = open("/tmp/walk.log", O_WRONLY | O_CREAT | O_APPEND, 0644);
	if (log == -1 || write(log, "before\n", 7) != 7)
		say("FAIL log: %s", strerror(errno));
	show_file("/tmp/home-only");
	say("ready");
	wait_fifo(fifo);

	if (strcmp(mode, "wait") == 0) {
		for (;;)
			wait_fifo(fifo);
	}
	if (strcmp(mode, "fork") == 0) {
		if ((child = fork()) == 0) {
			say("child %d parent %d", (int)getpid(),
			    (int)getppid());
			_exit(3);
		}
		waitpid(child, &st, 0);
		say("child exited %d", WEXITSTATUS(st));
		return 0;
	}

	/* moved now: the same identity, files, pipes */
	say("pid %d ppid %d", (int)getpid(), (int)getppid());
	if (write(log, "after\n", 6) != 6)
		say("FAIL log after: %s", strerror(errno));
	say("log offset %ld", (long)lseek(log, 0, SEEK_CUR));
	close(log);
	if ((f = fopen("/tmp/walk.new", "w")) == NULL)
		say("FAIL create: %s", strerror(errno));
	else {
		fprintf(f, "written away\n");
		fclose(f);
	}
	show_file("/tmp/home-only");
	show_file("/tmp/node2-only");
	while (fgets(line, sizeof line, stdin) != NULL) {
		line[strcspn(line, "\n")] = '\0';
		say("stdin: %s", line);
	}
	before = cpu_seconds();
	burn(1.0);
	times(&t);
	say("cpu grew: %s", cpu_seconds() - before >= 1.0 ? "yes" : "no");
	/* sampled ticks of a precise second: allow for rounding */
	say("ticks %s", t.tms_utime + t.tms_stime >=
	    sysconf(_SC_CLK_TCK) * 9 / 10 ? "ok" : "few");
	say("waiting for usr1");
	while (!usr1)
		wait_fifo(fifo);
	say("usr1 handled");
	return code;
}
