/*
 * clock SECONDS [threads | late | idle] [usage [noraw]]: polls its
 * CPU-time clocks in a loop, as a solver checking its time limit does,
 * until it has used
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
 * a test to move it. With "usage", each poll reads times(),
 * getrusage(RUSAGE_SELF) and getrusage(RUSAGE_THREAD) too, which must
 * go on as the clocks do and agree with them (the process's, the
 * thread's; times() to its ticks), away and back home; the child's
 * count from 0 too; it says "at N s: usage NS ns a call, raw NS" as its
 * CPU time passes each second (what libc's calls cost since the last such
 * line, and the same calls made with syscall(2), one poll in four; with
 * "noraw" it makes none of those, and says raw 0: a test counting the
 * calls that reach the guest agent).
 * Prints "ok POLLS polls, NS ns each, CPU s" (with "threads": then
 * "; threads MAIN OTHER" s; with "usage": then "; usage NS ns a call
 * (raw NS), rusage USER user SYS system, times TIMES s") and exits 0, or
 * says what went wrong and exits 1.
 */
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/times.h>
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
	double		 rs, rt, tm;	/* RUSAGE_SELF, _THREAD, times() */
	double		 rsu, rss;	/* RUSAGE_SELF's user, system */
	double		 tmu, tms;	/* times()'s */
	double		 usage_ns;	/* spent in those calls */
	long		 usage_calls;
	double		 raw_ns;	/* the same made with syscall(2) */
	long		 raw_calls;
};

static double		 limit = 1;
static volatile int	 done;
static int		 idle, usage, noraw;
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

/*
 * A reading now after *last: never less (but by slack), at most most
 * more.
 */
static void
step_by(struct poller *w, const char *what, double *last, double now,
    double slack, double most)
{
	if (now < *last - slack || now > *last + most) {
		printf("%s%s went from %.6f to %.6f s (process %.6f, thread "
		    "%.6f, clock() %.6f)\n", w->who, what, *last, now, w->p,
		    w->t, w->c);
		exit(1);
	}
	*last = now;
}

static void
step(struct poller *w, const char *what, double *last, double now,
    double most)
{
	step_by(w, what, last, now, 0, most);
}

static double
tv(const struct timeval *a, const struct timeval *b)
{
	return a->tv_sec + a->tv_usec / 1e6 + b->tv_sec + b->tv_usec / 1e6;
}

static double
tv1(const struct timeval *a)
{
	return a->tv_sec + a->tv_usec / 1e6;
}

/*
 * A count of CPU time read between two readings of its clock, before and
 * after: within them, but for the kernel's rounding (RUSAGE_THREAD lags
 * by up to a tick, times() counts whole ticks) and, after moves, what
 * they carry to never go back (each of user and system time rounded up
 * to what it could have read before, less than a tick a move).
 */
static void
agree(struct poller *w, const char *what, double v, double before,
    double after)
{
	if (v < before - 0.05 || v > after + 0.05) {
		printf("%s%s read %.6f s between clock readings %.6f and "
		    "%.6f\n", w->who, what, v, before, after);
		exit(1);
	}
}

/* times() and getrusage(), in step with the clocks just read. */
static void
poll_usage(struct poller *w)
{
	struct timespec	a, b;
	struct rusage	rs, rt;
	struct tms	tm;
	double		p, t, ticks = sysconf(_SC_CLK_TCK);

	clock_gettime(CLOCK_MONOTONIC, &a);
	if (times(&tm) == (clock_t)-1 || getrusage(RUSAGE_SELF, &rs) != 0 ||
	    getrusage(RUSAGE_THREAD, &rt) != 0) {
		perror("times or getrusage");
		exit(1);
	}
	clock_gettime(CLOCK_MONOTONIC, &b);
	w->usage_ns += (b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec);
	w->usage_calls += 3;
	p = cpu(CLOCK_PROCESS_CPUTIME_ID);
	t = cpu(CLOCK_THREAD_CPUTIME_ID);
	/*
	 * Neither of user and system time ever goes back, in times() or
	 * getrusage(RUSAGE_SELF), across moves too. A thread's carries one
	 * number, split as the process's is: its sum goes on, but for its
	 * two fields' microseconds rounded down on each node.
	 */
	step(w, "times()'s user time", &w->tmu, tm.tms_utime / ticks,
	    shared_step);
	step(w, "times()'s system time", &w->tms, tm.tms_stime / ticks,
	    shared_step);
	step(w, "times()", &w->tm, (tm.tms_utime + tm.tms_stime) / ticks,
	    shared_step);
	step(w, "getrusage(RUSAGE_SELF)'s user time", &w->rsu,
	    tv1(&rs.ru_utime), shared_step);
	step(w, "getrusage(RUSAGE_SELF)'s system time", &w->rss,
	    tv1(&rs.ru_stime), shared_step);
	step(w, "getrusage(RUSAGE_SELF)", &w->rs, tv(&rs.ru_utime,
	    &rs.ru_stime), shared_step);
	step_by(w, "getrusage(RUSAGE_THREAD)", &w->rt, tv(&rt.ru_utime,
	    &rt.ru_stime), 4e-6, 0.1);
	agree(w, "times()", w->tm, w->p - 0.03, p);
	agree(w, "getrusage(RUSAGE_SELF)", w->rs, w->p, p);
	agree(w, "getrusage(RUSAGE_THREAD)", w->rt, w->t, t);
	if (!noraw && w->usage_calls % 12 == 0) {
		/* the kernel's own, for what libc's cost beside them */
		clock_gettime(CLOCK_MONOTONIC, &a);
		syscall(SYS_times, &tm);
		syscall(SYS_getrusage, RUSAGE_SELF, &rs);
		syscall(SYS_getrusage, RUSAGE_THREAD, &rt);
		clock_gettime(CLOCK_MONOTONIC, &b);
		w->raw_ns += (b.tv_sec - a.tv_sec) * 1e9 +
		    (b.tv_nsec - a.tv_nsec);
		w->raw_calls += 3;
	}
}

/*
 * With "usage": what the calls cost (both threads'), and the process's
 * counts at the end; else "".
 */
static const char *
usage_line(const struct poller *m, const struct poller *o)
{
	static char	buf[160];
	struct rusage	ru;
	struct tms	tm;
	long		calls = m->usage_calls;
	double		ns = m->usage_ns;

	if (!usage)
		return "";
	if (o != m) {
		calls += o->usage_calls;
		ns += o->usage_ns;
	}
	getrusage(RUSAGE_SELF, &ru);
	times(&tm);
	snprintf(buf, sizeof buf, "; usage %.0f ns a call (raw %.0f), rusage "
	    "%.3f user %.3f system, times %.2f s", calls ? ns / calls : 0,
	    m->raw_calls ? m->raw_ns / m->raw_calls : 0,
	    ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6,
	    ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6,
	    (tm.tms_utime + tm.tms_stime) / (double)sysconf(_SC_CLK_TCK));
	return buf;
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
	if (usage)
		poll_usage(w);
}

/*
 * Each of user and system time as a poller starting now first finds
 * them: whatever the process used before (a thread made late finds what
 * the others used), which its next readings go on from.
 */
static void
poll_fields(struct poller *w)
{
	struct rusage	rs;
	struct tms	tm;
	double		ticks = sysconf(_SC_CLK_TCK);

	if (times(&tm) == (clock_t)-1 || getrusage(RUSAGE_SELF, &rs) != 0) {
		perror("times or getrusage");
		exit(1);
	}
	w->tmu = tm.tms_utime / ticks;
	w->tms = tm.tms_stime / ticks;
	w->rsu = tv1(&rs.ru_utime);
	w->rss = tv1(&rs.ru_stime);
}

static void
poll_start(struct poller *w, const char *who)
{
	memset(w, 0, sizeof *w);
	w->who = who;
	w->p = cpu(CLOCK_PROCESS_CPUTIME_ID);
	w->t = w->first = cpu(CLOCK_THREAD_CPUTIME_ID);
	w->c = (double)clock() / CLOCKS_PER_SEC;
	if (usage) {
		/* the first readings: at most a few ticks behind */
		w->rt = w->t - 0.05;
		w->rs = w->p - 0.05;
		w->tm = w->p - 0.06;
		poll_fields(w);
		poll_usage(w);
	}
}

/* A child's clocks are its own, not its parent's. */
static void
child(void)
{
	struct rusage	rs, rt;
	struct tms	tm;
	double		p, t;
	pid_t		pid;
	int		status;

	forks = 0;
	if ((pid = fork()) == 0) {
		p = cpu(CLOCK_PROCESS_CPUTIME_ID);
		t = cpu(CLOCK_THREAD_CPUTIME_ID);
		if (p > 0.05 || t > 0.05) {
			printf("the child's clocks read %.6f and %.6f s\n", p,
			    t);
			_exit(1);
		}
		if (usage && (getrusage(RUSAGE_SELF, &rs) != 0 ||
		    getrusage(RUSAGE_THREAD, &rt) != 0 || times(&tm) ==
		    (clock_t)-1 || tv(&rs.ru_utime, &rs.ru_stime) > 0.05 ||
		    tv(&rt.ru_utime, &rt.ru_stime) > 0.05 ||
		    tm.tms_utime + tm.tms_stime > 5)) {
			printf("the child's getrusage read %.6f and %.6f s, "
			    "its times() %ld ticks\n", tv(&rs.ru_utime,
			    &rs.ru_stime), tv(&rt.ru_utime, &rt.ru_stime),
			    (long)(tm.tms_utime + tm.tms_stime));
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
	int		 made = 0, second = 0;
	double		 p, first, mark[4] = { 0, 0, 0, 0 };

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
		else if (strcmp(argv[i], "usage") == 0)
			usage = 1;
		else if (strcmp(argv[i], "noraw") == 0)
			noraw = 1;
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
		if (usage && m.p >= second + 1) {
			/* what the calls cost since the last mark */
			printf("at %d s: usage %.0f ns a call, raw %.0f\n",
			    ++second, (m.usage_ns - mark[0]) / (m.usage_calls -
			    mark[1]), m.raw_calls == mark[3] ? 0 :
			    (m.raw_ns - mark[2]) / (m.raw_calls - mark[3]));
			mark[0] = m.usage_ns;
			mark[1] = m.usage_calls;
			mark[2] = m.raw_ns;
			mark[3] = m.raw_calls;
		}
	}
	done = 1;
	clock_gettime(CLOCK_MONOTONIC, &b);
	if (!threads) {
		printf("ok %ld polls, %.0f ns each, %.3f s%s\n", m.polls,
		    ((b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec)) /
		    m.polls, m.p, usage_line(&m, &m));
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
	printf("ok %ld polls, %.0f ns each, %.3f s; threads %.3f %.3f%s\n",
	    m.polls + o.polls, ((b.tv_sec - a.tv_sec) * 1e9 +
	    (b.tv_nsec - a.tv_nsec)) / m.polls, p, m.t, o.t,
	    usage_line(&m, &o));
	return 0;
}
