/*
 * mosctl: a thin client of the local mosd's control socket: send one
 * request, print the reply.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mosctl.h"
#include "proto/ctl.pb-c.h"

static const struct mosctl_cmd *const mosctl_cmds[] = {
	&mosctl_status_cmd,
	&mosctl_stats_cmd,
};

static void __attribute__((noreturn))
usage(int status)
{
	FILE	*f = status == 0 ? stdout : stderr;
	size_t	 i;

	fprintf(f, "usage: mosctl [-S socket] command [args]\n"
	    "Ask this node's mosd about the cluster.\n\ncommands:\n");
	for (i = 0; i < nitems(mosctl_cmds); i++)
		fprintf(f, "  %-8s %-10s %s\n", mosctl_cmds[i]->name,
		    mosctl_cmds[i]->usage, mosctl_cmds[i]->help);
	fprintf(f, "\n  -S socket   mosd's control socket (default %s)\n"
	    "  -h, --help  this help\n"
	    "\nExit status: 0 success, 1 failure (mosd unreachable or refused),"
	    "\n2 usage error.\n", OSM_SOCKET_PATH);
	exit(status);
}

/* Send a request of this type; prints the error and returns NULL. */
Osm__CtlReply *
mosctl_call(const char *sock, int type)
{
	Osm__CtlRequest	 req = OSM__CTL_REQUEST__INIT;
	Osm__CtlReply	*reply;
	char		*cause;

	req.type = type;
	if ((reply = ctl_call(sock, &req, &cause)) == NULL) {
		fprintf(stderr, "mosctl: %s\n", cause);
		free(cause);
		return NULL;
	}
	if (!reply->ok) {
		fprintf(stderr, "mosctl: mosd refused: %s\n",
		    reply->error != NULL ? reply->error : "no reason given");
		ctl_reply_free(reply);
		return NULL;
	}
	return reply;
}

int
main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	const char	*sock = OSM_SOCKET_PATH;
	size_t		 i;
	int		 ch;

	while ((ch = getopt_long(argc, argv, "+S:h", longopts, NULL)) != -1) {
		switch (ch) {
		case 'S':
			sock = optarg;
			break;
		case 'h':
			usage(0);
		default:
			usage(2);
		}
	}
	argc -= optind;
	argv += optind;
	if (argc == 0)
		usage(2);
	if (strcmp(argv[0], "help") == 0)
		usage(0);
	for (i = 0; i < nitems(mosctl_cmds); i++)
		if (strcmp(argv[0], mosctl_cmds[i]->name) == 0)
			return mosctl_cmds[i]->exec(sock, argc, argv);
	fprintf(stderr, "mosctl: unknown command '%s' (try mosctl --help)\n",
	    argv[0]);
	return 2;
}
