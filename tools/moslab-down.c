/*
 * moslab down: remove everything of the lab — processes, cgroups, links,
 * namespaces, state. Succeeds when there is nothing to remove, and cleans
 * up a lab that up left half-built.
 */
#include <stdio.h>

#include "lib/osm.h"
#include "moslab.h"

static int
cmd_down_exec(struct lab *lab, int argc, char **argv)
{
	if (lab_destroy(lab) == -1) {
		fprintf(stderr, "moslab: lab '%s' is not fully removed; see "
		    "above\n", lab->name);
		return 1;
	}
	return 0;
}

const struct lab_cmd cmd_down = {
	.name = "down",
	.args = "",
	.help = "remove the lab: processes, cgroups, links, namespaces, state",
	.argc_min = 0,
	.argc_max = 0,
	.flags = CMD_LOCK,
	.exec = cmd_down_exec,
};
