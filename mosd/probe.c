/*
 * The load probe: what this node has and how busy it is, from the node's
 * own view — runnable tasks in its PID namespace (its /proc), CPU capacity,
 * memory and swap from its cgroup — so that a lab node in a namespace with a CPU
 * quota measures itself like a machine of that size.
 *
 * Every path is read under probe->root, "" on a live system; the unit tests
 * point it at a fake tree.
 */
#include <ctype.h>
#include <stdarg.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/osm.h"
#include "gossip.h"
#include "probe.h"

#define PROBE_UNLIMITED	(1ULL << 60)	/* v1 "no limit" is ~2^63 */

static int
probe_path(const struct probe *p, char *buf, size_t size, const char *fmt,
    ...) __attribute__((format(printf, 4, 5)));

static int
probe_path(const struct probe *p, char *buf, size_t size, const char *fmt,
    ...)
{
	va_list	 ap;
	int	 n, m;

	n = snprintf(buf, size, "%s", p->root);
	va_start(ap, fmt);
	m = vsnprintf(buf + n, size - n, fmt, ap);
	va_end(ap);
	return (m < 0 || (size_t)(n + m) >= size) ? -1 : 0;
}

/* The state letter of a stat file: after the last ')'. */
static int
probe_stat_state(int dirfd, const char *path)
{
	char	 buf[512], *p;
	int	 fd;
	ssize_t	 n;

	if ((fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC)) == -1)
		return -1;
	n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	if ((p = strrchr(buf, ')')) == NULL || p[1] != ' ')
		return -1;
	return (unsigned char)p[2];
}

static int
probe_numeric(const char *s)
{
	if (*s == '\0')
		return 0;
	for (; *s != '\0'; s++)
		if (!isdigit((unsigned char)*s))
			return 0;
	return 1;
}

/* Count tasks in state R under proc (every thread counts), but exclude. */
int
probe_count_runnable(const char *proc, pid_t exclude)
{
	DIR		*d, *t;
	struct dirent	*de, *te;
	char		 path[300];
	int		 count = 0, fd;

	if ((d = opendir(proc)) == NULL)
		return -1;
	while ((de = readdir(d)) != NULL) {
		if (!probe_numeric(de->d_name))
			continue;
		snprintf(path, sizeof path, "%s/task", de->d_name);
		fd = openat(dirfd(d), path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (fd == -1 || (t = fdopendir(fd)) == NULL) {
			if (fd != -1)
				close(fd);
			continue;	/* gone meanwhile */
		}
		while ((te = readdir(t)) != NULL) {
			if (!probe_numeric(te->d_name) ||
			    atoi(te->d_name) == exclude)
				continue;
			snprintf(path, sizeof path, "%s/stat", te->d_name);
			if (probe_stat_state(dirfd(t), path) == 'R')
				count++;
		}
		closedir(t);
	}
	closedir(d);
	return count;
}

/* Is word one of the comma-separated words of list? */
static int
probe_in_list(const char *list, const char *word)
{
	size_t	len = strlen(word);

	for (;;) {
		if (strncmp(list, word, len) == 0 &&
		    (list[len] == ',' || list[len] == '\0'))
			return 1;
		if ((list = strchr(list, ',')) == NULL)
			return 0;
		list++;
	}
}

/*
 * The mount point and mount root of the v1 hierarchy holding ctrl, or of
 * the v2 hierarchy when ctrl is NULL, from mountinfo lines:
 *	id parent maj:min root mountpoint opts ... - fstype source superopts
 */
static int
probe_cgroup_mount(struct probe *p, const char *ctrl, char *mnt, size_t msize,
    char *root, size_t rsize)
{
	FILE	*f;
	char	 path[512], *line = NULL, *sep, *w[5], *fs, *sopts, *save;
	size_t	 len = 0;
	int	 i, found = 0;

	if (probe_path(p, path, sizeof path, "/proc/self/mountinfo") == -1 ||
	    (f = fopen(path, "re")) == NULL)
		return -1;
	while (!found && getline(&line, &len, f) != -1) {
		if ((sep = strstr(line, " - ")) == NULL)
			continue;
		*sep = '\0';
		fs = strtok_r(sep + 3, " \n", &save);
		strtok_r(NULL, " \n", &save);		/* source */
		sopts = strtok_r(NULL, " \n", &save);
		if (fs == NULL || (ctrl == NULL ? strcmp(fs, "cgroup2") != 0 :
		    strcmp(fs, "cgroup") != 0 || sopts == NULL ||
		    !probe_in_list(sopts, ctrl)))
			continue;
		w[0] = strtok_r(line, " ", &save);
		for (i = 1; i < 5 && w[i - 1] != NULL; i++)
			w[i] = strtok_r(NULL, " ", &save);
		if (i < 5 || w[4] == NULL)
			continue;
		found = snprintf(root, rsize, "%s", w[3]) < (int)rsize &&
		    snprintf(mnt, msize, "%s", w[4]) < (int)msize;
	}
	free(line);
	fclose(f);
	return found ? 0 : -1;
}

/* Our cgroup path in that hierarchy: "N:ctrl,...:path", or "0::path". */
static int
probe_cgroup_path(struct probe *p, const char *ctrl, char *out, size_t size)
{
	FILE	*f;
	char	 path[512], *line = NULL, *ctrls, *cg;
	size_t	 len = 0;
	int	 found = 0;

	if (probe_path(p, path, sizeof path, "/proc/self/cgroup") == -1 ||
	    (f = fopen(path, "re")) == NULL)
		return -1;
	while (!found && getline(&line, &len, f) != -1) {
		line[strcspn(line, "\n")] = '\0';
		if ((ctrls = strchr(line, ':')) == NULL ||
		    (cg = strchr(++ctrls, ':')) == NULL)
			continue;
		*cg++ = '\0';
		if (ctrl == NULL ? *ctrls == '\0' : probe_in_list(ctrls, ctrl))
			found = snprintf(out, size, "%s", cg) < (int)size;
	}
	free(line);
	fclose(f);
	return found ? 0 : -1;
}

/* The directory of this process's cgroup for ctrl (NULL: v2). */
static int
probe_cgroup_dir(struct probe *p, const char *ctrl, char *out, size_t size)
{
	char	mnt[256], root[256], cg[512], *rel = cg;

	if (probe_cgroup_mount(p, ctrl, mnt, sizeof mnt, root,
	    sizeof root) == -1 ||
	    probe_cgroup_path(p, ctrl, cg, sizeof cg) == -1)
		return -1;
	/* A mount of a subtree shows paths below its root. */
	if (strcmp(root, "/") != 0 && strncmp(cg, root, strlen(root)) == 0)
		rel = cg + strlen(root);
	if (strcmp(rel, "/") == 0)
		rel = "";
	return snprintf(out, size, "%s%s%s", p->root, mnt, rel) < (int)size ?
	    0 : -1;
}

static int
probe_read_u64(const char *dir, const char *file, uint64_t *v)
{
	char	path[768];

	snprintf(path, sizeof path, "%s/%s", dir, file);
	return read_file_u64(path, v);
}

/* The parent directory of a cgroup, or -1 at the mount point. */
static int
probe_parent(char *dir, size_t stop)
{
	char	*s = strrchr(dir, '/');

	if (s == NULL || (size_t)(s - dir) < stop)
		return -1;
	*s = '\0';
	return 0;
}

/* The CPU quota of one cgroup directory in CPUs, 0 if it has none. */
static double
probe_dir_quota(const struct probe *p, const char *dir)
{
	char		 path[768], buf[128], *sp;
	uint64_t	 quota, period;

	if (p->v2) {
		snprintf(path, sizeof path, "%s/cpu.max", dir);
		if (read_file_str(path, buf, sizeof buf) == -1 ||
		    strncmp(buf, "max", 3) == 0 ||
		    (sp = strchr(buf, ' ')) == NULL)
			return 0;
		quota = strtoull(buf, NULL, 10);
		period = strtoull(sp + 1, NULL, 10);
	} else if (probe_read_u64(dir, "cpu.cfs_period_us", &period) == -1 ||
	    probe_read_u64(dir, "cpu.cfs_quota_us", &quota) == -1 ||
	    (int64_t)quota <= 0)
		return 0;
	return period > 0 ? (double)quota / (double)period : 0;
}

/* The smallest CPU quota from our cgroup up to the root, in CPUs; 0: none */
static double
probe_quota(const struct probe *p)
{
	char	 dir[512];
	double	 best = 0, q;
	size_t	 stop = strlen(p->root) + 1;

	if (p->cpu_cg[0] == '\0')
		return 0;
	snprintf(dir, sizeof dir, "%s", p->cpu_cg);
	do {
		q = probe_dir_quota(p, dir);
		if (q > 0 && (best == 0 || q < best))
			best = q;
	} while (probe_parent(dir, stop) == 0);
	return best;
}

/* The number of online CPUs, from the "0-3,6" list. */
static int
probe_online_cpus(struct probe *p)
{
	char	 path[512], buf[256], *s, *end;
	long	 a, b;
	int	 n = 0;

	if (probe_path(p, path, sizeof path,
	    "/sys/devices/system/cpu/online") == -1 ||
	    read_file_str(path, buf, sizeof buf) == -1)
		return -1;
	for (s = buf; *s != '\0'; s = end + (*end == ',')) {
		a = strtol(s, &end, 10);
		b = a;
		if (*end == '-')
			b = strtol(end + 1, &end, 10);
		if (end == s || b < a)
			return -1;
		n += b - a + 1;
		if (*end != ',' && *end != '\0')
			return -1;
	}
	return n;
}

static void
probe_memory(struct probe *p)
{
	char		 path[768], dir[512];
	uint64_t	 total = 0, avail = 0, limit = PROBE_UNLIMITED, v;
	uint64_t	 usage = 0, inactive = 0;
	size_t		 stop;
	int		 have_cg = 0;

	if (probe_path(p, path, sizeof path, "/proc/meminfo") == 0) {
		if (proc_key_u64(path, "MemTotal", &v) == 0)
			total = v * 1024;
		if (proc_key_u64(path, "MemAvailable", &v) == 0)
			avail = v * 1024;
	}
	if (p->mem_cg[0] != '\0') {
		snprintf(dir, sizeof dir, "%s", p->mem_cg);
		stop = strlen(p->root) + 1;
		do {
			if (probe_read_u64(dir, p->v2 ? "memory.max" :
			    "memory.limit_in_bytes", &v) == 0 && v < limit)
				limit = v;
		} while (probe_parent(dir, stop) == 0);
		have_cg = probe_read_u64(p->mem_cg, p->v2 ? "memory.current" :
		    "memory.usage_in_bytes", &usage) == 0;
		snprintf(path, sizeof path, "%s/memory.stat", p->mem_cg);
		proc_key_u64(path, p->v2 ? "inactive_file" :
		    "total_inactive_file", &inactive);
	}
	if (limit < total || total == 0)
		total = limit;
	if (have_cg && limit < PROBE_UNLIMITED) {
		/* Inactive file pages are reclaimable: count them free. */
		usage = usage > inactive ? usage - inactive : 0;
		v = limit > usage ? limit - usage : 0;
		if (v < avail || avail == 0)
			avail = v;
	}
	if (avail > total)
		avail = total;
	p->mem_total = total == PROBE_UNLIMITED ? 0 : total;
	p->mem_free = avail;
}

/*
 * Swap: the machine's (meminfo), bounded by what the memory cgroup lets
 * this node swap — v1's memsw limit less the memory limit, v2's
 * memory.swap.max — and used as the cgroup counts it. A line of neither
 * (a kernel without swap accounting) leaves the machine's figures.
 */
static void
probe_swap(struct probe *p)
{
	char		 path[768], dir[512];
	uint64_t	 total = 0, avail = 0, v, limit = PROBE_UNLIMITED;
	uint64_t	 memsw = PROBE_UNLIMITED, mem = PROBE_UNLIMITED;
	uint64_t	 used, usage;
	size_t		 stop;

	if (probe_path(p, path, sizeof path, "/proc/meminfo") == 0) {
		if (proc_key_u64(path, "SwapTotal", &v) == 0)
			total = v * 1024;
		if (proc_key_u64(path, "SwapFree", &v) == 0)
			avail = v * 1024;
	}
	if (p->mem_cg[0] != '\0') {
		snprintf(dir, sizeof dir, "%s", p->mem_cg);
		stop = strlen(p->root) + 1;
		do {
			if (p->v2) {
				if (probe_read_u64(dir, "memory.swap.max",
				    &v) == 0 && v < limit)
					limit = v;
				continue;
			}
			if (probe_read_u64(dir, "memory.memsw.limit_in_bytes",
			    &v) == 0 && v < memsw)
				memsw = v;
			if (probe_read_u64(dir, "memory.limit_in_bytes",
			    &v) == 0 && v < mem)
				mem = v;
		} while (probe_parent(dir, stop) == 0);
		if (!p->v2 && memsw < PROBE_UNLIMITED)
			limit = memsw > mem ? memsw - mem : 0;
		if (limit < total)
			total = limit;
		if (p->v2 && probe_read_u64(p->mem_cg, "memory.swap.current",
		    &used) == 0)
			avail = total > used ? total - used : 0;
		else if (!p->v2 && probe_read_u64(p->mem_cg,
		    "memory.memsw.usage_in_bytes", &v) == 0 &&
		    probe_read_u64(p->mem_cg, "memory.usage_in_bytes",
		    &usage) == 0) {
			used = v > usage ? v - usage : 0;
			avail = total > used ? total - used : 0;
		}
	}
	if (avail > total)
		avail = total;
	p->swap_total = total;
	p->swap_free = avail;
}

/* Exponential smoothing of a sample over dt milliseconds. */
double
probe_smooth(double avg, double sample, uint64_t dt)
{
	return avg + (1.0 - exp(-(double)dt / PROBE_TAU_MS)) * (sample - avg);
}

/*
 * Load x 100: runnable tasks per CPU of capacity, scaled to the reference
 * speed, so that one task alone on a reference CPU is 1.00 and the same
 * task on a node twice as fast or with two CPUs is 0.50.
 */
uint32_t
probe_load(double runnable, double cpus, uint32_t speed)
{
	double	load;

	if (cpus <= 0 || speed == 0)
		return 0;
	load = runnable / cpus * (1000.0 / speed) * 100.0;
	if (load > 1e7)
		load = 1e7;
	return (uint32_t)(load + 0.5);
}

/* CPU capacity: the cgroup quota, or the online CPUs if fewer or none. */
static int
probe_capacity(struct probe *p)
{
	int	online;
	double	quota;

	if ((online = probe_online_cpus(p)) <= 0)
		return -1;
	quota = probe_quota(p);
	p->cpus = quota > 0 && quota < online ? quota : online;
	return 0;
}

int
probe_init(struct probe *p, const char *root, uint32_t speed, pid_t exclude,
    char **cause)
{
	char	path[512];

	memset(p, 0, sizeof *p);
	snprintf(p->root, sizeof p->root, "%s", root);
	p->speed = speed;
	p->exclude = exclude;
	if (probe_cgroup_dir(p, "cpu", p->cpu_cg, sizeof p->cpu_cg) == 0)
		probe_cgroup_dir(p, "memory", p->mem_cg, sizeof p->mem_cg);
	else if (probe_cgroup_dir(p, NULL, p->cpu_cg, sizeof p->cpu_cg) == 0) {
		p->v2 = 1;
		snprintf(p->mem_cg, sizeof p->mem_cg, "%s", p->cpu_cg);
	}
	if (probe_capacity(p) == -1) {
		xasprintf(cause, "cannot read the number of online CPUs");
		return -1;
	}
	probe_path(p, path, sizeof path, "/proc");
	if (probe_count_runnable(path, exclude) == -1) {
		xasprintf(cause, "cannot read %s: %s", path, strerror(errno));
		return -1;
	}
	probe_memory(p);
	probe_swap(p);
	return 0;
}

void
probe_sample(struct probe *p, uint64_t now)
{
	char	path[512];
	int	n;

	probe_path(p, path, sizeof path, "/proc");
	if ((n = probe_count_runnable(path, p->exclude)) < 0)
		n = 0;
	if (p->last_ms == 0)
		p->runnable = n;
	else
		p->runnable = probe_smooth(p->runnable, n, now - p->last_ms);
	p->last_ms = now;
	probe_capacity(p);	/* a quota can change under a running node */
	probe_memory(p);
	probe_swap(p);
}

/* Memory alone, more often than the load: for the guard (guard.h). */
void
probe_sample_memory(struct probe *p)
{
	probe_memory(p);
}

void
probe_info(const struct probe *p, struct gossip_info *info)
{
	memset(info, 0, sizeof *info);
	info->load = probe_load(p->runnable, p->cpus, p->speed);
	info->cpus = (uint32_t)(p->cpus * 100 + 0.5);
	if (info->cpus == 0)
		info->cpus = 1;
	info->speed = p->speed;
	info->mem_total = p->mem_total >> 20;
	info->mem_free = p->mem_free >> 20;
	info->swap_total = p->swap_total >> 20;
	info->swap_free = p->swap_free >> 20;
}
