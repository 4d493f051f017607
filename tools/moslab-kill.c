/*
 * moslab kill K: crash node K — every process of it dies at once, as when
 * a machine loses power. Its address and cgroup stay for 'moslab start K'.
 */
#include <stdio.h>
#include <unistd.h>

#include "lib/osm.h"
#include "moslab.h"

static int
cmd_kill_exec(struct lab *lab, int argc, char **argv)
{
	char		*cause;
	unsigned	 k;
	int		 fd, rc;

	if ((rc = lab_node_arg(lab, argv[1], &k)) != 0)
		return rc;
	if ((fd = node_pidfd(lab, k, NULL)) == -1)
		fprintf(stderr, "moslab: node %u is already dead\n", k);
	else
		close(fd);
	if (node_kill(lab, k, &cause) == -1)
		return lab_fail(cause);
	return 0;
}

const struct lab_cmd cmd_kill = {
	.name = "kill",
	.args = "K",
	.help = "kill every process of node K at once (a crash)",
	.argc_min = 1,
	.argc_max = 1,
	.flags = CMD_LOCK | CMD_LAB,
	.exec = cmd_kill_exec,
};
