/*
 * Checkpoint benchmark: for processes of 64 MiB, 256 MiB and 1 GiB of
 * touched memory, how long the process is frozen by a dump, the dump's
 * throughput to a file in /dev/shm and to a socket, the restore's
 * throughput from that file, and a whole migration (dump into a socket,
 * restore from its other end at the same time), and the same migration
 * through a session (lib/session.c: the image in frames under the session
 * keys, as a deputy and its guest agent carry it). Each figure is the
 * median of several runs after one warm-up run. Prints a Markdown section.
 * With -t N the process has N threads, each of which touched its share of
 * the memory, and is restored with its pid and tids, in a PID namespace
 * made for each restore (the process dumped lives on, with that pid).
 *
 * usage: checkpoint [-c] [-r RUNS] [-t THREADS] [MiB...]
 */
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "lib/osm.h"
#include "migrate/migrate.h"
#include "proto/migrate.pb-c.h"

#define SHM_PATH	"/dev/shm/osm-bench.img"

struct figures {
	double	frozen_ms;
	double	file_gbs;	/* dump to /dev/shm */
	double	sock_gbs;	/* dump to a socket drained by a reader */
	double	restore_gbs;	/* restore from /dev/shm */
	double	migrate_ms;	/* dump | restore through a socket */
	double	session_ms;	/* the same through a session */
	double	direct_ms;	/* the same, the image straight in frames */
	uint64_t bytes;
};

static void
die(const char *what, char *cause)
{
	fprintf(stderr, "checkpoint: %s: %s\n", what, cause != NULL ? cause :
	    strerror(errno));
	exit(1);
}

static int	nthreads = 1;

struct share {
	uint8_t			*m;
	size_t			 len;
	pthread_barrier_t	*touched;
};

static void
touch(struct share *s)
{
	size_t	i;

	for (i = 0; i < s->len; i += 4096)
		s->m[i] = i >> 12;
}

static void *
toucher(void *arg)
{
	touch(arg);
	pthread_barrier_wait(((struct share *)arg)->touched);
	for (;;)
		pause();
	return NULL;
}

/*
 * A process with mib MiB of touched anonymous memory, waiting; with
 * nthreads threads, each of which touched its share.
 */
static pid_t
workload(size_t mib)
{
	struct share		 sh[64];
	pthread_barrier_t	 touched;
	pthread_t		 t;
	int			 p[2], k;
	pid_t			 pid;
	char			 c;
	size_t			 n = mib << 20, part;
	uint8_t			*m;

	if (pipe(p) == -1)
		die("pipe", NULL);
	if ((pid = fork()) == 0) {
		/* Nothing open but 0-2 and the pipe; then not even that. */
		dup2(p[1], 100);
		close_range(3, 99, 0);
		close_range(101, ~0U, 0);
		m = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE |
		    MAP_ANONYMOUS, -1, 0);
		part = n / nthreads & ~4095UL;
		pthread_barrier_init(&touched, NULL, nthreads);
		for (k = 0; k < nthreads; k++) {
			sh[k].m = m + k * part;
			sh[k].len = k == nthreads - 1 ? n - k * part : part;
			sh[k].touched = &touched;
			if (k > 0)
				pthread_create(&t, NULL, toucher, &sh[k]);
		}
		touch(&sh[0]);
		pthread_barrier_wait(&touched);
		if (write(100, "r", 1) != 1)
			_exit(1);
		close(100);
		for (;;)
			pause();
	}
	close(p[1]);
	if (read(p[0], &c, 1) != 1 || read(p[0], &c, 1) != 0)
		die("workload", NULL);
	close(p[0]);
	return pid;
}

/*
 * This virtual machine hands freed memory back to its host (virtio-balloon
 * free page reporting), and touching such memory again costs a fault in
 * the host: several times the cost of the restore itself, and varying with
 * when the host reclaimed it. Touching and freeing as much memory just
 * before a measurement gives the measured code warm pages, so the figures
 * are of our code, not of the host. -c skips this (cold figures).
 */
static int	cold;

static void
warm(size_t bytes)
{
	uint8_t	*m;
	size_t	 i;

	if (cold)
		return;
	m = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE |
	    MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED)
		die("mmap", NULL);
	for (i = 0; i < bytes; i += 4096)
		m[i] = 1;
	munmap(m, bytes);
}

static double
gbs(uint64_t bytes, uint64_t us)
{
	return us == 0 ? 0 : bytes / (double)us / 1000.0;
}

/* Dump pid into fd and let it go on; returns microseconds. */
static uint64_t
dump_to(pid_t pid, int fd, struct mig_stats *st)
{
	struct mig_task	*t;
	char		*cause = NULL;
	uint64_t	 t0 = now_us(), us;

	if ((t = mig_seize(pid, &cause)) == NULL)
		die("seize", cause);
	if (mig_dump(t, fd, 0, st, &cause) == -1)
		die("dump", cause);
	us = now_us() - t0;
	if (mig_release(t, &cause) == -1)
		die("release", cause);
	return us;
}

/* Restore the image read from fd into t, then kill it. */
static void
restore_into(struct mig_task *t, struct mig_image *mi)
{
	char	*cause = NULL;

	if (t == NULL)
		die("spawn", NULL);
	if (mig_restore_from(t, mi, NULL, NULL, &cause) == -1)
		die("restore", cause);
	mig_kill(t);
}

/*
 * Restore from fd into a fresh process, then kill it; microseconds to
 * the restored process. One of several threads keeps its pid, which the
 * dumped one still has: it is restored in a child of ours, in a PID
 * namespace of that child's (its making counted in).
 */
static uint64_t
restore_from(int fd)
{
	struct mig_image mi;
	char		*cause = NULL;
	uint64_t	 t0 = now_us(), end;
	pid_t		 kid;
	int		 p[2];

	if (mig_restore_begin(fd, &mi, &cause) == -1)
		die("restore", cause);
	if (!mig_image_keeps_ids(&mi)) {
		restore_into(mig_spawn(&cause), &mi);
		end = now_us();
	} else {
		if (pipe(p) == -1)
			die("pipe", NULL);
		if ((kid = fork()) == 0) {
			if (mig_pidns(&cause) == -1)
				die("pidns", cause);
			restore_into(mig_spawn_pid(mi.header->pid, &cause),
			    &mi);
			end = now_us();
			if (write(p[1], &end, sizeof end) != sizeof end)
				_exit(1);
			_exit(0);
		}
		close(p[1]);
		if (read(p[0], &end, sizeof end) != sizeof end)
			die("restore in a PID namespace", NULL);
		close(p[0]);
		waitpid(kid, NULL, 0);
	}
	mig_image_free(&mi);
	return end - t0;
}

/* The two ends of a session, as the broker gives them to the agents. */
static void
session_pair(struct session *home, int hfd, struct session *away, int afd)
{
	static const struct cluster_key	ck = { .bytes = "bench cluster key "
					    "0123456789abcd", .len = 32 };
	uint8_t				nh[SESSION_NONCE_LEN],
					nr[SESSION_NONCE_LEN], key[SESSION_KEY_LEN];

	memset(nh, 'h', sizeof nh);
	memset(nr, 'r', sizeof nr);
	session_derive(&ck, nh, nr, 1, 2, SESSION_HOME, key);
	/* Room for a pages record in one frame, as the agents' sessions. */
	session_init(home, hfd, key, 2 * SESSION_CHUNK);
	session_derive(&ck, nh, nr, 1, 2, SESSION_REMOTE, key);
	session_init(away, afd, key, 2 * SESSION_CHUNK);
	explicit_bzero(key, sizeof key);
}

static int
session_dump_fn(int fd, void *arg, char **cause)
{
	struct mig_stats	st;

	dump_to(*(pid_t *)arg, fd, &st);
	return 0;
}

static int
session_restore_into(int fd, void *arg, char **cause)
{
	struct mig_task	*t = arg;

	if (mig_restore(t, fd, NULL, NULL, cause) == -1)
		return -1;
	mig_kill(t);
	return 0;
}

/* A migration through a session over a socket; returns microseconds. */
static uint64_t
session_migrate(pid_t pid)
{
	struct session	 home, away;
	struct mig_task	*t;
	char		*cause = NULL;
	int		 sv[2];
	pid_t		 other;
	uint64_t	 t0;

	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == -1)
		die("socketpair", NULL);
	session_pair(&home, sv[0], &away, sv[1]);
	t0 = now_us();
	if ((other = fork()) == 0) {
		close(sv[0]);
		/*
		 * Spawned first, restored as the frames come: the agent's way;
		 * with threads, with the process's pid, in a PID namespace.
		 */
		if (nthreads > 1 && mig_pidns(&cause) == -1)
			die("pidns", cause);
		if ((t = nthreads > 1 ? mig_spawn_pid(pid, &cause) :
		    mig_spawn(&cause)) == NULL)
			die("spawn", cause);
		if (session_recv_image(&away, OSM__SES_KIND__SES_IMAGE,
		    OSM__SES_KIND__SES_IMAGE_END, session_restore_into, t,
		    &cause) == -1)
			die("restore through the session", cause);
		_exit(0);
	}
	close(sv[1]);
	if (session_send_image(&home, OSM__SES_KIND__SES_IMAGE,
	    OSM__SES_KIND__SES_IMAGE_END, session_dump_fn, &pid, &cause) == -1)
		die("dump through the session", cause);
	close(sv[0]);
	waitpid(other, NULL, 0);
	session_free(&home);
	session_free(&away);
	return now_us() - t0;
}

/*
 * The same, the image straight into the session's frames and out of
 * them (session_image_*, as the agents move processes): no pipe, no pump
 * thread.
 */
static uint64_t
session_migrate_direct(pid_t pid)
{
	struct session		 home, away;
	struct session_image	 so = { .s = &home,
				    .kind = OSM__SES_KIND__SES_IMAGE,
				    .end = OSM__SES_KIND__SES_IMAGE_END };
	struct session_image	 si = { .s = &away,
				    .kind = OSM__SES_KIND__SES_IMAGE,
				    .end = OSM__SES_KIND__SES_IMAGE_END };
	struct mig_io		 out = { .write = session_image_write,
				    .arg = &so };
	struct mig_io		 in = { .read = session_image_read,
				    .view = session_image_view, .arg = &si };
	struct mig_restore_opts	 opts = { .io = &in };
	struct mig_live		 lv;
	struct mig_task		*t;
	char			*cause = NULL;
	int			 sv[2];
	pid_t			 other;
	uint64_t		 t0;

	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == -1)
		die("socketpair", NULL);
	session_pair(&home, sv[0], &away, sv[1]);
	t0 = now_us();
	if ((other = fork()) == 0) {
		close(sv[0]);
		if ((t = mig_spawn(&cause)) == NULL)
			die("spawn", cause);
		if (mig_restore(t, -1, &opts, NULL, &cause) == -1 ||
		    session_image_end(&si, 0, &cause) == -1)
			die("restore from the session's frames", cause);
		mig_kill(t);
		_exit(0);
	}
	close(sv[1]);
	memset(&lv, 0, sizeof lv);
	lv.io = &out;
	if ((lv.t = mig_seize(pid, &cause)) == NULL)
		die("seize", cause);
	if (mig_dump_live(&lv, -1, 0, NULL, &cause) == -1 ||
	    session_image_end(&so, 1, &cause) == -1)
		die("dump into the session's frames", cause);
	if (mig_release(lv.t, &cause) == -1)
		die("release", cause);
	close(sv[0]);
	waitpid(other, NULL, 0);
	session_free(&home);
	session_free(&away);
	return now_us() - t0;
}

static pid_t
drain(int fd, int other)
{
	char	buf[1 << 16];
	pid_t	pid;

	if ((pid = fork()) == 0) {
		close(other);
		while (read(fd, buf, sizeof buf) > 0)
			;
		_exit(0);
	}
	return pid;
}

static int
cmp_double(const void *a, const void *b)
{
	double	x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double
median(double *v, int n)
{
	qsort(v, n, sizeof *v, cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static void
measure(size_t mib, int runs, struct figures *f)
{
	struct mig_stats st;
	double		 fr[32], fi[32], so[32], re[32], mi[32], se[32], di[32];
	pid_t		 pid, other;
	int		 fd, sv[2], r;
	uint64_t	 us;

	pid = workload(mib);
	for (r = -1; r < runs; r++) {	/* run -1 warms up */
		fd = open(SHM_PATH, O_RDWR | O_CREAT | O_TRUNC, 0600);
		if (fd == -1)
			die(SHM_PATH, NULL);
		warm(mib << 20);
		us = dump_to(pid, fd, &st);
		f->bytes = st.bytes;
		if (r >= 0) {
			fr[r] = st.frozen_us / 1000.0;
			fi[r] = gbs(st.bytes, us);
		}

		lseek(fd, 0, SEEK_SET);
		warm(mib << 20);
		us = restore_from(fd);
		if (r >= 0)
			re[r] = gbs(st.bytes, us);
		close(fd);
		unlink(SHM_PATH);

		if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == -1)
			die("socketpair", NULL);
		other = drain(sv[1], sv[0]);
		close(sv[1]);
		us = dump_to(pid, sv[0], &st);
		close(sv[0]);
		waitpid(other, NULL, 0);
		if (r >= 0)
			so[r] = gbs(st.bytes, us);

		/* A migration: the restore reads while the dump writes. */
		warm(mib << 20);
		if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == -1)
			die("socketpair", NULL);
		us = now_us();
		if ((other = fork()) == 0) {
			close(sv[0]);
			restore_from(sv[1]);
			_exit(0);
		}
		close(sv[1]);
		dump_to(pid, sv[0], &st);
		close(sv[0]);
		waitpid(other, NULL, 0);
		if (r >= 0)
			mi[r] = (now_us() - us) / 1000.0;

		warm(mib << 20);
		us = session_migrate(pid);
		if (r >= 0)
			se[r] = us / 1000.0;
		warm(mib << 20);
		us = session_migrate_direct(pid);
		if (r >= 0)
			di[r] = us / 1000.0;
	}
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	f->frozen_ms = median(fr, runs);
	f->file_gbs = median(fi, runs);
	f->sock_gbs = median(so, runs);
	f->restore_gbs = median(re, runs);
	f->migrate_ms = median(mi, runs);
	f->session_ms = median(se, runs);
	f->direct_ms = median(di, runs);
}

int
main(int argc, char **argv)
{
	size_t		 sizes[8] = { 64, 256, 1024 }, nsizes = 3, i;
	struct figures	 f = { 0 };
	int		 runs = 5, c;
	uint64_t	 v;
	time_t		 now = time(NULL);
	char		 date[32];

	while ((c = getopt(argc, argv, "cr:t:")) != -1) {
		if (c == 'c') {
			cold = 1;
			continue;
		}
		if (c == 't' && parse_uint(optarg, 1, 64, &v) == 0) {
			nthreads = v;
			continue;
		}
		if (c != 'r' || parse_uint(optarg, 1, 31, &v) == -1) {
			fprintf(stderr, "usage: checkpoint [-c] [-r runs] "
			    "[-t threads] [MiB...]\n");
			return 2;
		}
		runs = v;
	}
	if (optind < argc) {
		for (nsizes = 0; optind < argc && nsizes < 8; optind++) {
			if (parse_uint(argv[optind], 1, 65536, &v) == -1) {
				fprintf(stderr, "checkpoint: bad size %s\n",
				    argv[optind]);
				return 2;
			}
			sizes[nsizes++] = v;
		}
	}
	strftime(date, sizeof date, "%Y-%m-%d", gmtime(&now));
	printf("Measured %s with `bench/checkpoint%s -r %d%s`, median of %d "
	    "runs after a warm-up run%s.\n\n", date, cold ? " -c" : "", runs,
	    nthreads > 1 ? " -t N" : "", runs,
	    cold ? ", memory not warmed" : ", memory warmed");
	printf("| touched memory | threads | image | frozen by dump | dump to "
	    "/dev/shm | dump to socket | restore from /dev/shm | migration "
	    "over a socket | migration through a session | the same, direct "
	    "|\n");
	printf("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
	for (i = 0; i < nsizes; i++) {
		measure(sizes[i], runs, &f);
		printf("| %zu MiB | %d | %.1f MiB | %.0f ms | %.2f GB/s | "
		    "%.2f GB/s | %.2f GB/s | %.0f ms | %.0f ms | %.0f ms |\n",
		    sizes[i], nthreads,
		    f.bytes / 1048576.0, f.frozen_ms, f.file_gbs, f.sock_gbs,
		    f.restore_gbs, f.migrate_ms, f.session_ms, f.direct_ms);
		fflush(stdout);
	}
	return 0;
}
