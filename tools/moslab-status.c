/*
 * moslab status: one line per node — number, address, whether its init
 * lives, whether mosd runs, and the CPU quota and memory limit its cgroup
 * really has.
 */
#include <stdio.h>
#include <unistd.h>

#include "lib/osm.h"
#include "moslab.h"

static int
cmd_status_exec(struct lab *lab, int argc, char **argv)
{
	char		 mosd[32];
	uint64_t	 cpus, mem;
	unsigned	 k;
	pid_t		 pid;
	int		 fd, up;

	printf("%-4s %-15s %-5s %-16s %6s %8s\n", "NODE", "ADDRESS", "STATE",
	    "MOSD", "CPUS", "MEM");
	for (k = 1; k <= lab->nnodes; k++) {
		if ((up = (fd = node_pidfd(lab, k, NULL)) != -1))
			close(fd);
		if ((fd = mosd_pidfd(lab, k, &pid)) != -1) {
			close(fd);
			snprintf(mosd, sizeof mosd, "running:%d", (int)pid);
		} else
			snprintf(mosd, sizeof mosd, "stopped");
		cgroup_limits(lab, k, &cpus, &mem);
		printf("%-4u %-15s %-5s %-16s %3llu.%02llu %7lluM\n", k,
		    lab->cc->nodes[k - 1].addr, up ? "up" : "dead", mosd,
		    (unsigned long long)cpus / 100,
		    (unsigned long long)cpus % 100, (unsigned long long)mem);
	}
	return 0;
}

const struct lab_cmd cmd_status = {
	.name = "status",
	.args = "",
	.help = "list the nodes: NODE ADDRESS STATE MOSD CPUS MEM",
	.argc_min = 0,
	.argc_max = 0,
	.flags = CMD_LAB,
	.exec = cmd_status_exec,
};
