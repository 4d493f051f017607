/*
 * mosps: the migratable processes of this node's users, where they run.
 */
#include <getopt.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/osm.h"
#include "proto/ctl.pb-c.h"

static void __attribute__((noreturn))
usage(int status)
{
	fprintf(status == 0 ? stdout : stderr,
	    "usage: mosps [-a] [-S socket]\n"
	    "List the migratable processes homed on this node: yours, or with\n"
	    "-a everyone's.\n\n"
	    "  -a          every user's processes\n"
	    "  -S socket   mosd's control socket (default %s)\n"
	    "  -h, --help  this help\n\n"
	    "Columns: PID USER WHERE STATE CPU%% RSS COMMAND; WHERE is 'here'\n"
	    "or the number of the node the process runs on.\n"
	    "Exit status: 0 success, 1 mosd unreachable, 2 usage error.\n",
	    OSM_SOCKET_PATH);
	exit(status);
}

static void
mosps_size(char *buf, size_t size, uint64_t bytes)
{
	if (bytes >= (10ULL << 30))
		snprintf(buf, size, "%lluG", (unsigned long long)(bytes >> 30));
	else if (bytes >= (10ULL << 20))
		snprintf(buf, size, "%lluM", (unsigned long long)(bytes >> 20));
	else
		snprintf(buf, size, "%lluK", (unsigned long long)(bytes >> 10));
}

int
main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	Osm__CtlRequest	 req = OSM__CTL_REQUEST__INIT;
	Osm__CtlReply	*r;
	Osm__CtlProc	*p;
	const char	*sock = OSM_SOCKET_PATH, *state;
	char		*cause, where[16], rss[16];
	size_t		 i;
	int		 ch;

	while ((ch = getopt_long(argc, argv, "ahS:", longopts, NULL)) != -1) {
		switch (ch) {
		case 'a':
			req.has_all = req.all = 1;
			break;
		case 'S':
			sock = optarg;
			break;
		case 'h':
			usage(0);
		default:
			usage(2);
		}
	}
	if (optind != argc)
		usage(2);
	req.type = OSM__CTL_TYPE__CTL_PS;
	if ((r = ctl_call(sock, &req, &cause)) == NULL) {
		fprintf(stderr, "mosps: %s\n", cause);
		return 1;
	}
	if (!r->ok) {
		fprintf(stderr, "mosps: mosd refused: %s\n", r->error != NULL ?
		    r->error : "no reason given");
		ctl_reply_free(r);
		return 1;
	}
	printf("%7s %-10s %-5s %-9s %5s %6s %s\n", "PID", "USER", "WHERE",
	    "STATE", "CPU%", "RSS", "COMMAND");
	for (i = 0; i < r->n_procs; i++) {
		p = r->procs[i];
		if (p->where == r->self)
			snprintf(where, sizeof where, "here");
		else
			snprintf(where, sizeof where, "%u", p->where);
		mosps_size(rss, sizeof rss, p->rss_bytes);
		printf("%7u %-10.10s %-5s %-9.9s %5.1f %6s %s\n", p->pid,
		    p->user, where, (state = ctl_state_name(p->state)) != NULL ?
		    state : "?", p->cpu_permille / 10.0, rss, p->command);
	}
	ctl_reply_free(r);
	return 0;
}
