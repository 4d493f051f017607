/*
 * A node's cgroup: osmosis-NAME/nodeK under each controller it uses. With
 * cgroup v1 (this project's test machine) that is one directory per
 * hierarchy — cpu (CFS quota), cpuacct, memory (limit), pids, freezer;
 * with v2, one directory under /sys/fs/cgroup with cpu.max and memory.max.
 * There is no cgroup namespace: mosd finds its cgroup in /proc/self/cgroup
 * and reads its quota from these files.
 */
#include <sys/pidfd.h>
#include <sys/stat.h>
#include <sys/vfs.h>

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/magic.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/osm.h"
#include "moslab.h"

#define CGROUP_FS	"/sys/fs/cgroup"

/* The v1 hierarchies a node joins; the first two are required. */
static const char *cgroup_v1_ctrls[] = {
	"cpu", "memory", "cpuacct", "pids", "freezer"
};

static struct {
	int	 v2;
	char	*roots[nitems(cgroup_v1_ctrls)];	/* distinct mounts */
	size_t	 nroots;
	char	*cpu;		/* the root holding the cpu controller */
	char	*memory;
} cg;

/* Find the cgroup hierarchies: v2 if mounted on /sys/fs/cgroup, else v1. */
int
cgroup_init(char **cause)
{
	struct statfs	 sf;
	char		*path, *real;
	size_t		 i, j;

	if (access(CGROUP_FS "/cgroup.controllers", F_OK) == 0) {
		cg.v2 = 1;
		cg.roots[cg.nroots++] = xstrdup(CGROUP_FS);
		cg.cpu = cg.memory = cg.roots[0];
		return 0;
	}
	for (i = 0; i < nitems(cgroup_v1_ctrls); i++) {
		xasprintf(&path, CGROUP_FS "/%s", cgroup_v1_ctrls[i]);
		real = realpath(path, NULL);
		free(path);
		if (real == NULL || statfs(real, &sf) == -1 ||
		    sf.f_type != CGROUP_SUPER_MAGIC) {
			free(real);
			if (i >= 2)
				continue;
			xasprintf(cause, "no cgroup v1 '%s' controller at "
			    CGROUP_FS "/%s and no cgroup v2 at " CGROUP_FS,
			    cgroup_v1_ctrls[i], cgroup_v1_ctrls[i]);
			return -1;
		}
		/* Co-mounted controllers (cpu,cpuacct) share a root. */
		for (j = 0; j < cg.nroots; j++)
			if (strcmp(cg.roots[j], real) == 0)
				break;
		if (j == cg.nroots)
			cg.roots[cg.nroots++] = real;
		else
			free(real);
		if (i == 0)
			cg.cpu = cg.roots[j];
		else if (i == 1)
			cg.memory = cg.roots[j];
	}
	return 0;
}

static char *
cgroup_path(struct lab *lab, const char *root, unsigned k, const char *file)
{
	char	*path;

	if (k == 0)
		xasprintf(&path, "%s/osmosis-%s%s%s", root, lab->name,
		    file != NULL ? "/" : "", file != NULL ? file : "");
	else
		xasprintf(&path, "%s/osmosis-%s/node%u%s%s", root, lab->name,
		    k, file != NULL ? "/" : "", file != NULL ? file : "");
	return path;
}

static int
cgroup_write(struct lab *lab, const char *root, unsigned k, const char *file,
    const char *value, char **cause)
{
	char	*path = cgroup_path(lab, root, k, file);
	int	 rc;

	if ((rc = write_file_str(path, value)) == -1)
		xasprintf(cause, "write '%s' to %s: %s", value, path,
		    strerror(errno));
	free(path);
	return rc;
}

static int
cgroup_mkdir(struct lab *lab, const char *root, unsigned k, char **cause)
{
	char	*path = cgroup_path(lab, root, k, NULL);
	int	 rc = 0;

	if (mkdir(path, 0755) == -1 && errno != EEXIST) {
		xasprintf(cause, "mkdir %s: %s", path, strerror(errno));
		rc = -1;
	}
	free(path);
	return rc;
}

/* v2 hands controllers down one level at a time. */
static int
cgroup_v2_enable(const char *dir, char **cause)
{
	static const char	*ctrls[] = { "+cpu", "+memory", "+pids" };
	char			*path;
	size_t			 i;
	int			 rc = 0;

	xasprintf(&path, "%s/cgroup.subtree_control", dir);
	for (i = 0; i < nitems(ctrls) && rc == 0; i++) {
		if (write_file_str(path, ctrls[i]) == -1 &&
		    strcmp(ctrls[i], "+pids") != 0) {
			xasprintf(cause, "write '%s' to %s: %s", ctrls[i],
			    path, strerror(errno));
			rc = -1;
		}
	}
	free(path);
	return rc;
}

/* The weight of a quota: one CPU's worth weighs unit, at most max. */
static uint64_t
cgroup_weight(uint64_t quota, uint64_t unit, uint64_t max)
{
	uint64_t	w = quota * unit / LAB_CPU_PERIOD;

	return w < 1 ? 1 : w > max ? max : w;
}

/*
 * Make node K's cgroup with a CPU quota (µs per period) and memory limit,
 * and a CPU weight in proportion to the quota: when the nodes together ask
 * for more than the machine's CPUs, a node of 2 CPUs gets twice the share
 * of a node of 1, as it would own twice the CPUs (left at the default
 * weight, node 1 of bench/load, 2 CPUs, got a quarter of the machine
 * while nodes 2 to 4 restored 50 processes).
 */
int
cgroup_create(struct lab *lab, unsigned k, uint64_t quota, uint64_t mem_mb,
    char **cause)
{
	char	 buf[64], *dir;
	size_t	 i;
	int	 rc;

	for (i = 0; i < cg.nroots; i++) {
		if (cgroup_mkdir(lab, cg.roots[i], 0, cause) == -1)
			return -1;
		if (cg.v2) {
			dir = cgroup_path(lab, cg.roots[i], 0, NULL);
			rc = cgroup_v2_enable(cg.roots[i], cause);
			if (rc == 0)
				rc = cgroup_v2_enable(dir, cause);
			free(dir);
			if (rc == -1)
				return -1;
		}
		if (cgroup_mkdir(lab, cg.roots[i], k, cause) == -1)
			return -1;
	}
	if (cg.v2) {
		snprintf(buf, sizeof buf, "%llu %d", (unsigned long long)quota,
		    LAB_CPU_PERIOD);
		if (cgroup_write(lab, cg.cpu, k, "cpu.max", buf, cause) == -1)
			return -1;
		snprintf(buf, sizeof buf, "%llu", (unsigned long long)
		    cgroup_weight(quota, 100, 10000));
		if (cgroup_write(lab, cg.cpu, k, "cpu.weight", buf, cause) == -1)
			return -1;
		snprintf(buf, sizeof buf, "%llu",
		    (unsigned long long)mem_mb << 20);
		return cgroup_write(lab, cg.memory, k, "memory.max", buf, cause);
	}
	snprintf(buf, sizeof buf, "%d", LAB_CPU_PERIOD);
	if (cgroup_write(lab, cg.cpu, k, "cpu.cfs_period_us", buf,
	    cause) == -1)
		return -1;
	snprintf(buf, sizeof buf, "%llu", (unsigned long long)quota);
	if (cgroup_write(lab, cg.cpu, k, "cpu.cfs_quota_us", buf, cause) == -1)
		return -1;
	snprintf(buf, sizeof buf, "%llu", (unsigned long long)
	    cgroup_weight(quota, 1024, 262144));
	if (cgroup_write(lab, cg.cpu, k, "cpu.shares", buf, cause) == -1)
		return -1;
	snprintf(buf, sizeof buf, "%llu", (unsigned long long)mem_mb << 20);
	return cgroup_write(lab, cg.memory, k, "memory.limit_in_bytes", buf,
	    cause);
}

/* Move the calling process into node K's cgroups; errno on failure. */
int
cgroup_join(struct lab *lab, unsigned k)
{
	char	*path;
	size_t	 i;
	int	 rc;

	for (i = 0; i < cg.nroots; i++) {
		path = cgroup_path(lab, cg.roots[i], k, "cgroup.procs");
		rc = write_file_str(path, "0");
		free(path);
		if (rc == -1)
			return -1;
	}
	return 0;
}

/* Node K's CPU quota in hundredths of a CPU and memory limit in MiB. */
void
cgroup_limits(struct lab *lab, unsigned k, uint64_t *cpus, uint64_t *mem_mb)
{
	char		*path, buf[64];
	uint64_t	 quota, period = LAB_CPU_PERIOD, mem;
	int		 rc;

	if (cg.v2) {
		path = cgroup_path(lab, cg.cpu, k, "cpu.max");
		rc = read_file_str(path, buf, sizeof buf);
		free(path);
		if (rc == -1 || sscanf(buf, "%" SCNu64 " %" SCNu64, &quota,
		    &period) != 2)
			quota = 0;	/* "max": unlimited */
		path = cgroup_path(lab, cg.memory, k, "memory.max");
	} else {
		path = cgroup_path(lab, cg.cpu, k, "cpu.cfs_quota_us");
		rc = read_file_str(path, buf, sizeof buf);
		free(path);
		if (rc == -1 || sscanf(buf, "%" SCNu64, &quota) != 1 ||
		    buf[0] == '-')
			quota = 0;
		path = cgroup_path(lab, cg.cpu, k, "cpu.cfs_period_us");
		if (read_file_u64(path, &period) == -1 || period == 0)
			period = LAB_CPU_PERIOD;
		free(path);
		path = cgroup_path(lab, cg.memory, k, "memory.limit_in_bytes");
	}
	if (read_file_u64(path, &mem) == -1)
		mem = 0;
	free(path);
	*cpus = (quota * 100 + period / 2) / period;
	*mem_mb = mem >> 20;
}

/*
 * SIGKILL process pid if it is in node K's cgroup. The pidfd holds on to
 * the process that had the pid when the check began: if the pid was reused
 * since cgroup.procs was read, the newcomer is someone else's and is
 * spared.
 */
static void
cgroup_kill_pid(struct lab *lab, unsigned k, int pid)
{
	FILE	*f;
	char	 path[64], want[64], line[1024];
	int	 fd, ours = 0;

	if ((fd = pidfd_open(pid, 0)) == -1)
		return;
	snprintf(path, sizeof path, "/proc/%d/cgroup", pid);
	snprintf(want, sizeof want, "/osmosis-%s/node%u\n", lab->name, k);
	if ((f = fopen(path, "re")) != NULL) {
		while (!ours && fgets(line, sizeof line, f) != NULL)
			ours = strstr(line, want) != NULL;
		fclose(f);
	}
	if (ours)
		pidfd_send_signal(fd, SIGKILL, NULL, 0);
	close(fd);
}

/*
 * SIGKILL whatever is in node K's cgroups, again and again, until they are
 * empty or ms have passed. Returns 0 once empty.
 */
int
cgroup_kill(struct lab *lab, unsigned k, unsigned ms)
{
	FILE		*f;
	char		*path;
	uint64_t	 end = now_ms() + ms;
	size_t		 i;
	int		 pid, any;

	for (;;) {
		any = 0;
		for (i = 0; i < cg.nroots; i++) {
			path = cgroup_path(lab, cg.roots[i], k,
			    "cgroup.procs");
			f = fopen(path, "re");
			free(path);
			if (f == NULL)
				continue;
			while (fscanf(f, "%d", &pid) == 1) {
				cgroup_kill_pid(lab, k, pid);
				any = 1;
			}
			fclose(f);
		}
		if (!any)
			return 0;
		if (now_ms() >= end)
			return -1;
		sleep_ms(10);
	}
}

/* Does any cgroup of this lab exist? Returns 1 and names it. */
int
cgroup_find(struct lab *lab, char **what)
{
	struct stat	 st;
	char		*path;
	size_t		 i;

	for (i = 0; i < cg.nroots; i++) {
		path = cgroup_path(lab, cg.roots[i], 0, NULL);
		if (stat(path, &st) == 0) {
			*what = path;
			return 1;
		}
		free(path);
	}
	return 0;
}

/* rmdir, waiting out the moment a just-killed cgroup is still busy. */
static int
cgroup_rmdir(const char *path)
{
	uint64_t	end = now_ms() + LAB_WAIT_MS;

	while (rmdir(path) == -1) {
		if (errno == ENOENT)
			return 0;
		if (errno != EBUSY || now_ms() >= end) {
			log_warn("rmdir %s", path);
			return -1;
		}
		sleep_ms(10);
	}
	return 0;
}

/* Kill everything in the lab's cgroups, then remove them, leaves first. */
int
cgroup_destroy(struct lab *lab)
{
	DIR		*d;
	struct dirent	*de;
	char		*dir, *path;
	unsigned	 k;
	size_t		 i;
	int		 rc = 0;

	for (i = 0; i < cg.nroots; i++) {
		dir = cgroup_path(lab, cg.roots[i], 0, NULL);
		if ((d = opendir(dir)) == NULL) {
			free(dir);
			continue;
		}
		while ((de = readdir(d)) != NULL) {
			if (sscanf(de->d_name, "node%u", &k) != 1 || k == 0)
				continue;
			if (cgroup_kill(lab, k, LAB_WAIT_MS) == -1) {
				log_warnx("node %u: processes are left in "
				    "its cgroup", k);
				rc = -1;
			}
			path = cgroup_path(lab, cg.roots[i], k, NULL);
			if (cgroup_rmdir(path) == -1)
				rc = -1;
			free(path);
		}
		closedir(d);
		if (cgroup_rmdir(dir) == -1)
			rc = -1;
		free(dir);
	}
	return rc;
}
