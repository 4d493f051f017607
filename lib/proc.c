/*
 * Reading /proc and a cgroup: a status field, the CPU time a process used,
 * its threads, the out-of-memory killer's kills; and standing for a child
 * until it ends (proc_wait_as).
 */
#include <sys/resource.h>
#include <sys/wait.h>

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "osm.h"

/* The process-wide CPU clock of pid (the kernel's MAKE_PROCESS_CPUCLOCK). */
#define PROC_CPUCLOCK(pid)	((clockid_t)((~(unsigned int)(pid) << 3) | 2))

/*
 * The value of field key ("TracerPid", "SigPnd") in /proc/PID/status,
 * without its leading blanks. pid 0 is the calling process. -1 with errno
 * ENOENT when there is no such field, ERANGE when out is too small.
 */
int
proc_status(pid_t pid, const char *key, char *out, size_t size)
{
	char	 path[64], *line = NULL, *v;
	size_t	 klen = strlen(key), cap = 0;
	FILE	*f;
	int	 rc = -1, err = ENOENT;

	if (pid == 0)
		snprintf(path, sizeof path, "/proc/self/status");
	else
		snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
	if ((f = fopen(path, "re")) == NULL)
		return -1;
	while (getline(&line, &cap, f) != -1) {
		if (strncmp(line, key, klen) != 0 || line[klen] != ':')
			continue;
		line[strcspn(line, "\n")] = '\0';
		v = line + klen + 1 + strspn(line + klen + 1, " \t");
		if (strlen(v) < size) {
			strcpy(out, v);
			rc = 0;
		} else
			err = ERANGE;
		break;
	}
	free(line);
	fclose(f);
	if (rc == -1)
		errno = err;
	return rc;
}

/* A signal mask field of /proc/PID/status ("SigCgt", "SigBlk"). */
int
proc_status_mask(pid_t pid, const char *key, uint64_t *mask)
{
	char	buf[32], *end;

	if (proc_status(pid, key, buf, sizeof buf) == -1)
		return -1;
	*mask = strtoull(buf, &end, 16);
	if (end == buf || *end != '\0') {
		errno = EINVAL;
		return -1;
	}
	return 0;
}

/*
 * Field n (from 3, the first after the command's name) of /proc/PID/stat,
 * read into buf (size): a pointer to it, or NULL.
 */
static const char *
proc_stat_field(pid_t pid, int n, char *buf, size_t size)
{
	char	path[64], *p;
	int	i;

	snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
	if (read_file_str(path, buf, size) == -1 ||
	    (p = strrchr(buf, ')')) == NULL)
		return NULL;
	/* p is at the end of field 2: the space before field n is the
	   (n - 2)th after it */
	for (i = 0; i < n - 2 && p != NULL; i++)
		p = strchr(p + 1, ' ');
	return p != NULL ? p + 1 : NULL;
}

/* The CPU pid ran on last (its stat's "processor"), or -1. */
int
proc_last_cpu(pid_t pid)
{
	const char	*p;
	char		 buf[1024];
	int		 cpu;

	if ((p = proc_stat_field(pid, 39, buf, sizeof buf)) == NULL ||
	    sscanf(p, "%d", &cpu) != 1)
		return -1;
	return cpu;
}

/* /proc/PID/stat's user and system ticks of pid (the whole process's). */
static int
proc_ticks(pid_t pid, unsigned long *ut, unsigned long *st)
{
	const char	*p;
	char		 buf[1024];

	/* utime and stime are fields 14 and 15 */
	if ((p = proc_stat_field(pid, 14, buf, sizeof buf)) == NULL ||
	    sscanf(p, "%lu %lu", ut, st) != 2)
		return -1;
	return 0;
}

/*
 * User and system CPU time of pid, in ns: the total its CPU clock's, split
 * as /proc/PID/stat's ticks are.
 */
int
proc_cpu_ns(pid_t pid, uint64_t *user_ns, uint64_t *sys_ns)
{
	uint64_t	 rt;
	unsigned long	 ut, st;
	long		 hz = sysconf(_SC_CLK_TCK);

	*user_ns = *sys_ns = 0;
	if (proc_ticks(pid, &ut, &st) == -1)
		return -1;
	*user_ns = ut * (1000000000ULL / hz);
	*sys_ns = st * (1000000000ULL / hz);
	/*
	 * Ticks are 10 ms: the process's CPU clock (any process may read
	 * another's) is to the nanosecond, and a clock continued from this
	 * elsewhere must not go back. The ticks only split it.
	 */
	if (proc_cpu_clock(pid, &rt) == 0) {
		*sys_ns = ut + st == 0 ? 0 :
		    (unsigned __int128)rt * st / (ut + st);
		*user_ns = rt - *sys_ns;
	}
	return 0;
}

/*
 * The user and system time times() and getrusage() of process pid, held
 * (not running), say, in ns: at the most (most) or the least they could
 * say now. The kernel's own split, as /proc/PID/stat's ticks are (the
 * same the process's calls read, whole ticks only), and the two add up to
 * its CPU clock: each lies within a tick, and within the clock less the
 * other's ticks (most) or less the other's ticks and a tick (least). The
 * most is what the process could have read before; the least, what it
 * reads from now on at least.
 */
int
proc_usage_bound(pid_t pid, int most, uint64_t *user_ns, uint64_t *sys_ns)
{
	uint64_t	 rt, tick = 1000000000ULL / sysconf(_SC_CLK_TCK);
	uint64_t	 u, s;
	unsigned long	 ut, st;

	*user_ns = *sys_ns = 0;
	if (proc_ticks(pid, &ut, &st) == -1 || proc_cpu_clock(pid, &rt) == -1)
		return -1;
	u = ut * tick;
	s = st * tick;
	if (most) {
		*user_ns = u + tick;
		*sys_ns = s + tick;
		if (rt >= s && rt - s < *user_ns)
			*user_ns = rt - s;
		if (rt >= u && rt - u < *sys_ns)
			*sys_ns = rt - u;
	} else {
		*user_ns = u;
		*sys_ns = s;
		if (rt >= s + tick && rt - s - tick > u)
			*user_ns = rt - s - tick;
		if (rt >= u + tick && rt - u - tick > s)
			*sys_ns = rt - u - tick;
	}
	return 0;
}

/* Process pid's CPU clock, in ns (any process may read another's). */
int
proc_cpu_clock(pid_t pid, uint64_t *ns)
{
	struct timespec	ts;

	if (clock_gettime(PROC_CPUCLOCK(pid), &ts) == -1)
		return -1;
	*ns = ts.tv_sec * 1000000000ULL + ts.tv_nsec;
	return 0;
}

/* Thread tid of process pid: its time on a CPU, in ns (its schedstat). */
int
proc_thread_cpu(pid_t pid, pid_t tid, uint64_t *ns)
{
	char	path[96];

	snprintf(path, sizeof path, "/proc/%d/task/%d/schedstat", (int)pid,
	    (int)tid);
	return read_file_u64(path, ns);
}

/*
 * The ids of pid's threads, from /proc/PID/task, into *tids (the caller
 * frees it); how many, or -1 if pid is gone.
 */
ssize_t
proc_threads(pid_t pid, pid_t **tids)
{
	char		 path[64];
	struct dirent	*e;
	DIR		*dir;
	size_t		 n = 0;
	long		 tid;

	*tids = NULL;
	snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
	if ((dir = opendir(path)) == NULL)
		return -1;
	while ((e = readdir(dir)) != NULL) {
		if ((tid = strtol(e->d_name, NULL, 10)) <= 0)
			continue;
		*tids = xreallocarray(*tids, n + 1, sizeof **tids);
		(*tids)[n++] = (pid_t)tid;
	}
	closedir(dir);
	return (ssize_t)n;
}

/*
 * The value of the line "key value" (or "key: value", as meminfo has it)
 * of a stat file such as meminfo, vmstat, memory.stat; -1 if none.
 */
int
proc_key_u64(const char *path, const char *key, uint64_t *v)
{
	FILE	*f;
	char	 line[256];
	size_t	 klen = strlen(key);
	int	 rc = -1;

	if ((f = fopen(path, "re")) == NULL)
		return -1;
	while (fgets(line, sizeof line, f) != NULL) {
		if (strncmp(line, key, klen) == 0 && (line[klen] == ' ' ||
		    line[klen] == ':')) {
			*v = strtoull(line + klen + 1, NULL, 10);
			rc = 0;
			break;
		}
	}
	fclose(f);
	return rc;
}

/*
 * How many processes of the memory cgroup dir (NULL or "": of the whole
 * machine) the out-of-memory killer has killed: v1's memory.oom_control,
 * v2's memory.events, else /proc/vmstat. -1 if none says.
 */
int
proc_oom_kills(const char *dir, uint64_t *n)
{
	char	path[768];

	if (dir != NULL && dir[0] != '\0') {
		snprintf(path, sizeof path, "%s/memory.oom_control", dir);
		if (proc_key_u64(path, "oom_kill", n) == 0)
			return 0;
		snprintf(path, sizeof path, "%s/memory.events", dir);
		if (proc_key_u64(path, "oom_kill", n) == 0)
			return 0;
	}
	return proc_key_u64("/proc/vmstat", "oom_kill", n);
}

static volatile sig_atomic_t proc_child;

/* Signals meant for us are meant for the process we stand for. */
static void
proc_forward(int sig)
{
	if (proc_child > 0)
		kill(proc_child, sig);
}

/*
 * Stand for child pid until it ends (moscr restore, mosrun -R of a process
 * in a PID namespace: the shell waits for us, not for it). What is sent to
 * us (SIGTERM, SIGHUP, SIGUSR1, SIGUSR2) goes to it; what the terminal
 * sends its process group too (SIGINT, SIGQUIT) we ignore. Then the exit
 * status to exit with, or we die of its signal, without a core of our
 * own. -1 with errno if it cannot be waited for.
 */
int
proc_wait_as(pid_t pid)
{
	static const int	 fwd[] = { SIGTERM, SIGHUP, SIGUSR1, SIGUSR2 };
	struct sigaction	 sa;
	struct rlimit		 rl = { 0, 0 };
	sigset_t		 set;
	size_t			 i;
	int			 status, sig;

	proc_child = pid;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = proc_forward;
	for (i = 0; i < sizeof fwd / sizeof fwd[0]; i++)
		sigaction(fwd[i], &sa, NULL);
	signal(SIGINT, SIG_IGN);
	signal(SIGQUIT, SIG_IGN);
	while (waitpid(pid, &status, 0) == -1)
		if (errno != EINTR)
			return -1;
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	sig = WTERMSIG(status);
	setrlimit(RLIMIT_CORE, &rl);
	signal(sig, SIG_DFL);
	sigemptyset(&set);
	sigaddset(&set, sig);
	sigprocmask(SIG_UNBLOCK, &set, NULL);
	raise(sig);
	return 128 + sig;
}

/*
 * Where [vdso] is in process pid's memory map (pid 0: ours): 0, or -1
 * with errno ENOENT if it maps none, ESRCH if it maps nothing at all (it
 * is ending: its memory is gone), or why its map could not be read.
 */
int
proc_vdso(pid_t pid, uint64_t *start, uint64_t *end)
{
	char			 path[64], line[512];
	unsigned long long	 s, e;
	FILE			*f;
	size_t			 n = 0;
	int			 found = 0;

	if (pid == 0)
		snprintf(path, sizeof path, "/proc/self/maps");
	else
		snprintf(path, sizeof path, "/proc/%d/maps", (int)pid);
	if ((f = fopen(path, "re")) == NULL)
		return -1;
	while (fgets(line, sizeof line, f) != NULL) {
		n++;
		if (!found && strstr(line, " [vdso]") != NULL &&
		    sscanf(line, "%llx-%llx", &s, &e) == 2) {
			*start = s;
			*end = e;
			found = 1;
		}
	}
	fclose(f);
	if (found)
		return 0;
	errno = n == 0 ? ESRCH : ENOENT;
	return -1;
}
