/*
 * check_mosd's load probe and load formula (mosd/probe.c), against fake
 * /proc and cgroup trees (v1, v2, none): CPU capacity, memory and swap.
 * Part of the check_mosd binary (check_mosd.c runs it).
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/osm.h"
#include "mosd/gossip.h"
#include "mosd/probe.h"

void	 check_mosd_probe(Suite *s);

void	 check_probe_put(const char *top, const char *rel,
	    const char *content);

static char root[64];

/* A file of a fake /proc or /sys under top, its directories made. */
void
check_probe_put(const char *top, const char *rel, const char *content)
{
	char	path[512], dir[512], *s;
	FILE	*f;

	snprintf(path, sizeof path, "%s%s", top, rel);
	snprintf(dir, sizeof dir, "%s", path);
	s = strrchr(dir, '/');
	*s = '\0';
	ck_assert_int_eq(mkdir_p(dir, 0755), 0);
	ck_assert_ptr_nonnull(f = fopen(path, "w"));
	fputs(content, f);
	fclose(f);
}

static void
put(const char *rel, const char *content)
{
	check_probe_put(root, rel, content);
}

static void
probe_setup(void)
{
	strcpy(root, "/tmp/check_mosd.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(root));
	put("/sys/devices/system/cpu/online", "0-3\n");
	put("/proc/meminfo", "MemTotal:       8000000 kB\n"
	    "MemFree:        1000000 kB\nMemAvailable:   6000000 kB\n");
	/* pid 10: two threads, one running; pid 11 running; 12 sleeping */
	put("/proc/10/task/10/stat", "10 (a b) R 1 1 1\n");
	put("/proc/10/task/13/stat", "13 (a b) S 1 1 1\n");
	put("/proc/11/task/11/stat", "11 (x) y) R 1 1 1\n");
	put("/proc/12/task/12/stat", "12 (z) S 1 1 1\n");
	put("/proc/self/status", "\n");
}

static void
probe_teardown(void)
{
	char	cmd[128];

	snprintf(cmd, sizeof cmd, "rm -rf %s", root);
	ck_assert_int_eq(system(cmd), 0);
}

START_TEST(test_probe_runnable)
{
	char	proc[128];

	snprintf(proc, sizeof proc, "%s/proc", root);
	ck_assert_int_eq(probe_count_runnable(proc, 0), 2);
	ck_assert_int_eq(probe_count_runnable(proc, 11), 1);
}
END_TEST

START_TEST(test_probe_cgroup_v1)
{
	struct probe	 p;
	char		*cause = NULL;

	put("/proc/self/mountinfo",
	    "30 25 0:26 / /sys/fs/cgroup/cpu rw - cgroup cgroup rw,cpu\n"
	    "31 25 0:27 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n"
	    "32 25 0:28 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw\n");
	put("/proc/self/cgroup", "5:memory:/lab/node1\n4:cpu:/lab/node1\n"
	    "0::/\n");
	put("/sys/fs/cgroup/cpu/lab/node1/cpu.cfs_quota_us", "50000\n");
	put("/sys/fs/cgroup/cpu/lab/node1/cpu.cfs_period_us", "100000\n");
	put("/sys/fs/cgroup/cpu/lab/cpu.cfs_quota_us", "-1\n");
	put("/sys/fs/cgroup/cpu/lab/cpu.cfs_period_us", "100000\n");
	put("/sys/fs/cgroup/memory/lab/node1/memory.limit_in_bytes",
	    "536870912\n");
	put("/sys/fs/cgroup/memory/lab/node1/memory.usage_in_bytes",
	    "209715200\n");
	put("/sys/fs/cgroup/memory/lab/node1/memory.stat",
	    "cache 1\ntotal_inactive_file 104857600\n");
	put("/sys/fs/cgroup/memory/lab/memory.limit_in_bytes",
	    "9223372036854771712\n");
	/* 768 MiB of memory and swap: 256 MiB of swap, 56 MiB of it used */
	put("/sys/fs/cgroup/memory/lab/node1/memory.memsw.limit_in_bytes",
	    "805306368\n");
	put("/sys/fs/cgroup/memory/lab/node1/memory.memsw.usage_in_bytes",
	    "268435456\n");
	put("/proc/meminfo", "MemTotal:       8000000 kB\n"
	    "MemAvailable:   6000000 kB\nSwapTotal:      4194304 kB\n"
	    "SwapFree:       4194304 kB\n");
	ck_assert_msg(probe_init(&p, root, 1000, 0, &cause) == 0, "%s", cause);
	ck_assert_uint_eq(p.swap_total, 256ULL << 20);
	ck_assert_uint_eq(p.swap_free, 200ULL << 20);
	ck_assert(p.v2 == 0);
	ck_assert(fabs(p.cpus - 0.5) < 1e-9);
	ck_assert_uint_eq(p.mem_total, 512ULL << 20);
	/* 512 MiB - (200 - 100 inactive) MiB */
	ck_assert_uint_eq(p.mem_free, 412ULL << 20);
}
END_TEST

START_TEST(test_probe_cgroup_v2)
{
	struct probe	 p;
	char		*cause = NULL;

	put("/proc/self/mountinfo",
	    "30 25 0:26 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n");
	put("/proc/self/cgroup", "0::/lab/node2\n");
	put("/sys/fs/cgroup/lab/node2/cpu.max", "150000 100000\n");
	put("/sys/fs/cgroup/lab/cpu.max", "max 100000\n");
	put("/sys/fs/cgroup/lab/node2/memory.max", "max\n");
	put("/sys/fs/cgroup/lab/memory.max", "1073741824\n");
	put("/sys/fs/cgroup/lab/node2/memory.current", "104857600\n");
	put("/sys/fs/cgroup/lab/node2/memory.stat", "inactive_file 0\n");
	/* the machine has 4 GiB of swap; the node may use 1 GiB, 10 MiB used */
	put("/proc/meminfo", "MemTotal:       8000000 kB\n"
	    "MemAvailable:   6000000 kB\nSwapTotal:      4194304 kB\n"
	    "SwapFree:       3000000 kB\n");
	put("/sys/fs/cgroup/lab/node2/memory.swap.max", "max\n");
	put("/sys/fs/cgroup/lab/memory.swap.max", "1073741824\n");
	put("/sys/fs/cgroup/lab/node2/memory.swap.current", "10485760\n");
	ck_assert_msg(probe_init(&p, root, 1000, 0, &cause) == 0, "%s", cause);
	ck_assert_uint_eq(p.swap_total, 1024ULL << 20);
	ck_assert_uint_eq(p.swap_free, 1014ULL << 20);
	ck_assert(p.v2 == 1);
	ck_assert(fabs(p.cpus - 1.5) < 1e-9);
	ck_assert_uint_eq(p.mem_total, 1024ULL << 20);
	ck_assert_uint_eq(p.mem_free, 924ULL << 20);
}
END_TEST

START_TEST(test_probe_no_cgroup)
{
	struct probe		 p;
	struct gossip_info	 info;
	char			*cause = NULL;

	put("/proc/self/mountinfo", "1 0 8:1 / / rw - ext4 /dev/sda rw\n");
	put("/proc/self/cgroup", "\n");
	ck_assert_msg(probe_init(&p, root, 2000, 0, &cause) == 0, "%s", cause);
	ck_assert(fabs(p.cpus - 4) < 1e-9);	/* online CPUs */
	ck_assert_uint_eq(p.mem_total, 8000000ULL * 1024);
	ck_assert_uint_eq(p.mem_free, 6000000ULL * 1024);
	probe_sample(&p, 1000);
	ck_assert(fabs(p.runnable - 2) < 1e-9);	/* first sample as is */
	probe_info(&p, &info);
	/* 2 runnable / 4 CPUs at twice the reference speed */
	ck_assert_uint_eq(info.load, 25);
	ck_assert_uint_eq(info.cpus, 400);
	ck_assert_uint_eq(info.speed, 2000);
	ck_assert_uint_eq(info.mem_total, 7812);
	/* meminfo says nothing of swap: none */
	ck_assert_uint_eq(info.swap_total, 0);
	put("/proc/meminfo", "MemTotal:       8000000 kB\n"
	    "MemAvailable:   6000000 kB\nSwapTotal:      2097152 kB\n"
	    "SwapFree:       1048576 kB\n");
	probe_sample(&p, 1500);
	probe_info(&p, &info);
	ck_assert_uint_eq(info.swap_total, 2048);
	ck_assert_uint_eq(info.swap_free, 1024);
}
END_TEST

START_TEST(test_load_formula)
{
	double	avg = 0;
	int	i;

	ck_assert_uint_eq(probe_load(1, 1, 1000), 100);
	ck_assert_uint_eq(probe_load(1, 0.5, 1000), 200);
	ck_assert_uint_eq(probe_load(3, 2, 1500), 100);
	ck_assert_uint_eq(probe_load(0, 1, 1000), 0);
	ck_assert_uint_eq(probe_load(1, 0, 1000), 0);
	/* smoothing: after one time constant ~63% of a step */
	for (i = 0; i < 3; i++)
		avg = probe_smooth(avg, 1, PROBE_TAU_MS / 3);
	ck_assert(fabs(avg - (1 - exp(-1))) < 1e-9);
	/* and converges */
	for (i = 0; i < 100; i++)
		avg = probe_smooth(avg, 1, 500);
	ck_assert(fabs(avg - 1) < 1e-6);
}
END_TEST

void
check_mosd_probe(Suite *s)
{
	TCase	*tc;

	tc = tcase_create("probe");
	tcase_add_checked_fixture(tc, probe_setup, probe_teardown);
	tcase_add_test(tc, test_probe_runnable);
	tcase_add_test(tc, test_probe_cgroup_v1);
	tcase_add_test(tc, test_probe_cgroup_v2);
	tcase_add_test(tc, test_probe_no_cgroup);
	tcase_add_test(tc, test_load_formula);
	suite_add_tcase(s, tc);
}
