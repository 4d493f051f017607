/* mosctl stats: mosd's message counters, drops by reason; or --json. */
#include <stdio.h>

#include "mosctl.h"
#include "proto/ctl.pb-c.h"

static int
mosctl_stats(const char *sock, int argc, char **argv)
{
	Osm__CtlReply	*r;
	size_t		 i;
	int		 json, rc = 0;

	if ((json = mosctl_json_arg(argc, argv)) == -1) {
		fprintf(stderr, "usage: mosctl stats [--json]\n");
		return 2;
	}
	if ((r = mosctl_call(sock, OSM__CTL_TYPE__CTL_STATS)) == NULL)
		return 1;
	if (json)
		rc = ctl_json_print(stdout, ctl_json_stats(r)) == 0 ? 0 : 1;
	else
		for (i = 0; i < r->n_counters; i++)
			printf("%-24s %llu\n", r->counters[i]->name,
			    (unsigned long long)r->counters[i]->value);
	ctl_reply_free(r);
	return rc;
}

const struct mosctl_cmd mosctl_stats_cmd = {
	.name = "stats",
	.usage = "[--json]",
	.help = "message counters, dropped datagrams by reason",
	.exec = mosctl_stats,
};
