/*
 * clock SECONDS [threads | late | idle]: polls its CPU-time clocks in a
 * loop, as a solver checking its time limit does, until it has used
 * SECONDS of CPU (tests/lab/t-fast.sh, bench/real). Every value of
 * CLOCK_PROCESS_CPUTIME_ID, clock() and CLOCK_THREAD_CPUTIME_ID must be at
 * least the last and at most 0.1 s more (the process's 0.25 while two
 * threads poll: shared_step), so that a move neither loses the time used
 * before nor counts it twice, away or back home. With "threads", a
 * second thread polls its own thread
 * clock and the process's the same way, alongside the main thread: each
 * thread's clock must go on from that thread's own time (not jump by
 * the process's, not start again at 0), and at the end each holds a fair
 * part of the process's (both did the same work) and together no more
 * than it. With "late", the second thread is made only once SIGUSR1 comes
 * (a test sends it after a move): its clock must start at 0, and the
 * two threads' together be no more than the process's. With "idle", a
 * second thread sleeps while the main one polls alone (what a thread's
 * clock costs in a threaded process, for bench/real). SIGUSR2 makes
 * it fork a child whose CPU clocks must be its own, from 0 (it exits 1
 * otherwise), and wait for it. After 0.3 s it says "ready" on stdout, for
 * a test to move it.
 * Prints "ok POLLS polls, NS ns each, CPU s" (with "threads": then
 * "; threads MAIN OTHER" s) and exits 0, or says what went wrong and
 * exits 1.
 */
#include <sys/wait.h>

#include <pthread.h>
#include <signal.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* One polling thread's last values. */
struct poller {
	const char	*who;
	double		 p, t, c;
	double		 first;		/* its thread clock at its start */
	long		 polls;
};

static double		 limit = 1;
static volatile int	 done;
static int		 idle;
/*
 * How far the process's clocks may go between two polls of a thread: 0.1
 * s; 0.25 while another thread polls too, which may run that long on the
 * other core while this one waits for one (a loaded machine). A move
 * counting the time before twice adds at least 0.3 s (the "ready" mark).
 */
static volatile double	 shared_step = 0.1;
static volatile sig_atomic_t go, forks;

static void
usr(int sig)
{
	if (sig == SIGUSR1)
		go = 1;
	else
		forks = 1;
}

static double
cpu(clockid_t id)
{
	struct timespec	ts;

	if (clock_gettime(id, &ts) != 0) {
		perror("clock_gettime");
		exit(1);
	}
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void
step(struct poller *w, const char *what, double *last, double now,
    double most)
{
	if (now < *last || now > *last + most) {
		printf("%s%s went from %.6f to %.6f s (process %.6f, thread "
		    "%.6f, clock() %.6f)\n", w->who, what, *last, now, w->p,
		    w->t, w->c);
		exit(1);
	}
	*last = now;
}

static void
poll_once(struct poller *w)
{
	step(w, "CLOCK_PROCESS_CPUTIME_ID", &w->p,
	    cpu(CLOCK_PROCESS_CPUTIME_ID), shared_step);
	step(w, "CLOCK_THREAD_CPUTIME_ID", &w->t,
	    cpu(CLOCK_THREAD_CPUTIME_ID), 0.1);
	step(w, "clock()", &w->c, (double)clock() / CLOCKS_PER_SEC,
	    shared_step);
	w->polls += 3;
}

static void
poll_start(struct poller *w, const char *who)
{
	memset(w, 0, sizeof *w);
	w->who = who;
	w->p = cpu(CLOCK_PROCESS_CPUTIME_ID);
	w->t = w->first = cpu(CLOCK_THREAD_CPUTIME_ID);
	w->c = (double)clock() / CLOCKS_PER_SEC;
}

/* A child's clocks are its own, not its parent's. */
static void
child(void)
{
	double	p, t;
	pid_t	pid;
	int	status;

	forks = 0;
	if ((pid = fork()) == 0) {
		p = cpu(CLOCK_PROCESS_CPUTIME_ID);
		t = cpu(CLOCK_THREAD_CPUTIME_ID);
		if (p > 0.05 || t > 0.05) {
			printf("the child's clocks read %.6f and %.6f s\n", p,
			    t);
			_exit(1);
		}
		_exit(0);
	}
	if (pid == -1 || waitpid(pid, &status, 0) != pid ||
	    !WIFEXITED(status) || WEXITSTATUS(status) != 0)
		exit(1);
	printf("child ok\n");
}

static void *
other(void *arg)
{
	struct poller	*w = arg;

	/* its own, not main's; and the others as they are now */
	poll_start(w, w->who);
	while (!done) {
		if (idle)
			usleep(10000);
		else
			poll_once(w);
	}
	w->t = cpu(CLOCK_THREAD_CPUTIME_ID);
	return NULL;
}

int
main(int argc, char **argv)
{
	struct timespec	 a, b;
	struct poller	 m, o;
	pthread_t	 th;
	int		 i, ready = 0, threads = 0, late = 0;
	int		 made = 0;
	double		 p, first;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc > 1)
		limit = atof(argv[1]);
	for (i = 2; i < argc; i++) {
		if (strcmp(argv[i], "threads") == 0)
			threads = 1;
		else if (strcmp(argv[i], "late") == 0)
			threads = late = 1;
		else if (strcmp(argv[i], "idle") == 0)
			threads = idle = 1;
	}
	signal(SIGUSR1, usr);
	signal(SIGUSR2, usr);
	poll_start(&m, threads ? "main thread: " : "");
	clock_gettime(CLOCK_MONOTONIC, &a);
	if (threads)
		poll_start(&o, "other thread: ");
	while (m.p < limit || (late && !made)) {
		if (threads && !made && (!late || go)) {
			if (!idle)
				shared_step = 0.25;
			if (pthread_create(&th, NULL, other, &o) != 0) {
				printf("pthread_create failed\n");
				return 1;
			}
			made = 1;
		}
		poll_once(&m);
		if (forks)
			child();
		if (!ready && m.p >= 0.3) {
			printf("ready\n");
			ready = 1;
		}
	}
	done = 1;
	clock_gettime(CLOCK_MONOTONIC, &b);
	if (!threads) {
		printf("ok %ld polls, %.0f ns each, %.3f s\n", m.polls,
		    ((b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec)) /
		    m.polls, m.p);
		return 0;
	}
	pthread_join(th, NULL);
	first = o.first;
	m.t = cpu(CLOCK_THREAD_CPUTIME_ID);
	p = cpu(CLOCK_PROCESS_CPUTIME_ID);
	if (m.t + o.t > p + 0.01 || (!late && !idle && (m.t < 0.15 * p ||
	    o.t < 0.15 * p)) || (late && first > 0.05)) {
		printf("thread clocks %.6f and %.6f s (the other's first "
		    "%.6f s) of a process's %.6f s\n", m.t, o.t, first, p);
		return 1;
	}
	printf("ok %ld polls, %.0f ns each, %.3f s; threads %.3f %.3f\n",
	    m.polls + o.polls, ((b.tv_sec - a.tv_sec) * 1e9 +
	    (b.tv_nsec - a.tv_nsec)) / m.polls, p, m.t, o.t);
	return 0;
}
