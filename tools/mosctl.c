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
	&mosctl_block_cmd,
	&mosctl_noblock_cmd,
	&mosctl_stay_cmd,
	&mosctl_nostay_cmd,
	&mosctl_lstay_cmd,
	&mosctl_nolstay_cmd,
	&mosctl_expel_cmd,
	&mosctl_bring_cmd,
};

static void __attribute__((noreturn))
usage(int status)
{
	FILE	*f = status == 0 ? stdout : stderr;
	size_t	 i;

	fprintf(f, "usage: mosctl [-S socket] command [args]\n"
	    "Ask this node's mosd about the cluster, or change this node's "
	    "part in it.\n\ncommands:\n");
	for (i = 0; i < nitems(mosctl_cmds); i++)
		fprintf(f, "  %-8s %-10s %s%s\n", mosctl_cmds[i]->name,
		    mosctl_cmds[i]->usage, mosctl_cmds[i]->help,
		    mosctl_cmds[i]->root ? " (root)" : "");
	fprintf(f, "\nmosd takes the commands marked (root) from root only.\n"
	    "\n  -S socket   mosd's control socket (default %s)\n"
	    "  -h, --help  this help\n"
	    "\nExit status: 0 success, 1 failure (mosd unreachable or refused),"
	    "\n2 usage error.\n", OSM_SOCKET_PATH);
	exit(status);
}

/* Send a prepared request; prints the error and returns NULL. */
Osm__CtlReply *
mosctl_request(const char *sock, Osm__CtlRequest *req)
{
	Osm__CtlReply	*reply;
	char		*cause;

	if ((reply = ctl_call(sock, req, &cause)) == NULL) {
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

/* Send a request of this type, with no arguments. */
Osm__CtlReply *
mosctl_call(const char *sock, int type)
{
	Osm__CtlRequest	 req = OSM__CTL_REQUEST__INIT;

	req.type = type;
	return mosctl_request(sock, &req);
}

/* 1 if a command's only argument is --json (or -j), 0 if none; -1 else. */
int
mosctl_json_arg(int argc, char **argv)
{
	if (argc == 1)
		return 0;
	if (argc == 2 && (strcmp(argv[1], "--json") == 0 ||
	    strcmp(argv[1], "-j") == 0))
		return 1;
	return -1;
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

	log_init(1, "mosctl");
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
