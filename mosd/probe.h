/*
 * The load probe (mosd/probe.c): what this node has and how busy it is,
 * read from its own /proc and cgroup, and the arithmetic that turns that
 * into a load. No event loop: mosd's probe timer calls probe_sample with
 * the time, the unit tests call it on a fake tree.
 */
#ifndef MOSD_PROBE_H
#define MOSD_PROBE_H

#include <sys/types.h>

#include <stdint.h>

#define PROBE_TAU_MS		1500	/* smoothing time constant */

struct gossip_info;

struct probe {
	char		 root[256];	/* "" normally; a fake tree in tests */
	char		 cpu_cg[512];	/* cgroup dir of the cpu controller */
	char		 mem_cg[512];	/* cgroup dir of the memory controller */
	int		 v2;
	uint32_t	 speed;
	pid_t		 exclude;	/* our own tid, not counted */
	double		 runnable;	/* smoothed */
	uint64_t	 last_ms;
	double		 cpus;
	uint64_t	 mem_total;	/* bytes */
	uint64_t	 mem_free;	/* bytes */
	uint64_t	 swap_total;	/* bytes this node may swap */
	uint64_t	 swap_free;	/* bytes */
};

int	 probe_init(struct probe *p, const char *root, uint32_t speed,
	    pid_t exclude, char **cause);
void	 probe_sample(struct probe *p, uint64_t now);
void	 probe_sample_memory(struct probe *p);
void	 probe_info(const struct probe *p, struct gossip_info *info);
int	 probe_count_runnable(const char *proc, pid_t exclude);
double	 probe_smooth(double avg, double sample, uint64_t dt);
uint32_t probe_load(double runnable, double cpus, uint32_t speed);

#endif
