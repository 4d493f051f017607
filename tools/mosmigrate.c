/*
 * mosmigrate: move a migratable process to another node, or home, or have
 * its deputy checkpoint it.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/osm.h"
#include "proto/ctl.pb-c.h"

/* Moving a large process can take a while; its deputy answers when done. */
#define MOSMIGRATE_TIMEOUT	600
#define MOSMIGRATE_WATCH_MS	300	/* a move undone this soon is said */
#define MOSMIGRATE_BUSY_WAIT	60	/* seconds to wait for mosd's room */

static void __attribute__((noreturn))
usage(int status)
{
	fprintf(status == 0 ? stdout : stderr,
	    "usage: mosmigrate [-S socket] [--live|--stop-copy|--post-copy] "
	    "pid node|home|checkpoint\n"
	    "Move migratable process pid, homed on this node, to node (a node\n"
	    "number) or back home, or checkpoint it now (to the next file of\n"
	    "its mosrun -C, else ckpt.PID in the directory mosrun started in).\n"
	    "Allowed to the process's owner and root. While mosd turns it\n"
	    "away for its load (the user's connections), it tries again,\n"
	    "for up to %d s.\n\n"
	    "  --live      move it while it runs: its memory goes in rounds,\n"
	    "              it stops only for the last pages (the default,\n"
	    "              unless mosrun --stop-copy started it)\n"
	    "  --stop-copy stop it for the whole copy of its memory\n"
	    "  --post-copy run it there at once, after its registers and the\n"
	    "              pages near its stacks; the rest follows on fault\n"
	    "              and pushed. Until the last page is there its memory\n"
	    "              is on both nodes: losing either loses the process\n"
	    "              (it goes on from its last checkpoint, if it has one)\n"
	    "  -S socket   mosd's control socket (default %s)\n"
	    "  -h, --help  this help\n\n"
	    "Exit status: 0 once the process runs there, 1 if the move was\n"
	    "refused or failed, or undone at once (the process came home\n"
	    "within %.1f s): the message says why, and the process goes on\n"
	    "where it is; 2 usage error.\n", MOSMIGRATE_BUSY_WAIT,
	    OSM_SOCKET_PATH, MOSMIGRATE_WATCH_MS / 1000.0);
	exit(status);
}

/*
 * The process moved to node: did it come home at once, for a call it can
 * make only there? Then say why, and fail.
 */
static int
mosmigrate_watch(const char *sock, uint32_t pid, uint32_t node)
{
	Osm__CtlRequest	 req = OSM__CTL_REQUEST__INIT;
	Osm__CtlReply	*r;
	uint64_t	 end = now_ms() + MOSMIGRATE_WATCH_MS;
	char		*cause;
	size_t		 i;
	int		 rc = 0;

	req.type = OSM__CTL_TYPE__CTL_PS;
	req.has_all = req.all = 1;
	while (rc == 0 && now_ms() < end) {
		sleep_ms(50);
		if ((r = ctl_call(sock, &req, &cause)) == NULL) {
			free(cause);
			break;
		}
		for (i = 0; i < r->n_procs; i++) {
			if (r->procs[i]->pid != pid ||
			    r->procs[i]->where == node)
				continue;
			fprintf(stderr, "mosmigrate: process %u did not stay "
			    "on node %u: %s\n", pid, node,
			    r->procs[i]->why != NULL ? r->procs[i]->why :
			    "no reason given");
			rc = 1;
		}
		ctl_reply_free(r);
	}
	return rc;
}

/*
 * Ask, and again while mosd turns us away for its load (this uid's
 * connections, as when a user runs many moves at once: each waits for
 * its turn), for up to MOSMIGRATE_BUSY_WAIT seconds.
 */
static Osm__CtlReply *
mosmigrate_ask(const char *sock, Osm__CtlRequest *req, char **cause)
{
	Osm__CtlReply	*r;
	uint64_t	 end = now_ms() + MOSMIGRATE_BUSY_WAIT * 1000;
	uint64_t	 rng = now_us() ^ (uint64_t)getpid() << 32;
	unsigned	 wait_ms = 10;
	int		 fd;

	for (;;) {
		if ((fd = ctl_connect(sock, MOSMIGRATE_TIMEOUT, cause)) == -1)
			return NULL;
		r = ctl_request(fd, req, NULL, cause);
		close(fd);
		if (r == NULL || r->ok || !r->has_busy || !r->busy ||
		    now_ms() + wait_ms > end)
			return r;
		ctl_reply_free(r);
		sleep_ms(wait_ms / 2 + rand_below(&rng, wait_ms / 2 + 1));
		if (wait_ms < 500)
			wait_ms *= 2;
	}
}

int
main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "live", no_argument, NULL, 'l' },
		{ "stop-copy", no_argument, NULL, 'P' },
		{ "post-copy", no_argument, NULL, 'O' },
		{ NULL, 0, NULL, 0 }
	};
	Osm__CtlRequest	 req = OSM__CTL_REQUEST__INIT;
	Osm__CtlReply	*r;
	const char	*sock = OSM_SOCKET_PATH;
	char		*cause;
	uint64_t	 v;
	int		 ch;

	while ((ch = getopt_long(argc, argv, "hS:", longopts, NULL)) != -1) {
		switch (ch) {
		case 'S':
			sock = optarg;
			break;
		case 'l':
			req.has_move = 1;
			req.move = OSM__MOVE_MODE__MOVE_LIVE;
			break;
		case 'P':
			req.has_move = 1;
			req.move = OSM__MOVE_MODE__MOVE_STOP;
			break;
		case 'O':
			req.has_move = 1;
			req.move = OSM__MOVE_MODE__MOVE_POST;
			break;
		case 'h':
			usage(0);
		default:
			usage(2);
		}
	}
	argc -= optind;
	argv += optind;
	if (argc != 2)
		usage(2);
	req.type = OSM__CTL_TYPE__CTL_MIGRATE;
	req.has_pid = req.has_node = 1;
	if (parse_uint(argv[0], 1, INT32_MAX, &v) == -1) {
		fprintf(stderr, "mosmigrate: expected a process id, found "
		    "'%s'\n", argv[0]);
		return 2;
	}
	req.pid = v;
	if (strcmp(argv[1], "checkpoint") == 0) {
		req.type = OSM__CTL_TYPE__CTL_CHECKPOINT;
		req.has_node = 0;
	} else if (strcmp(argv[1], "home") == 0)
		req.node = 0;
	else if (parse_uint(argv[1], 1, OSM_MAX_NODES, &v) == 0)
		req.node = v;
	else {
		fprintf(stderr, "mosmigrate: expected a node number, 'home' or "
		    "'checkpoint', found '%s'\n", argv[1]);
		return 2;
	}
	if ((r = mosmigrate_ask(sock, &req, &cause)) == NULL) {
		fprintf(stderr, "mosmigrate: %s\n", cause);
		return 1;
	}
	if (!r->ok) {
		fprintf(stderr, "mosmigrate: %s\n", r->error != NULL ?
		    r->error : "refused without a reason");
		ctl_reply_free(r);
		return 1;
	}
	if (r->path != NULL)
		printf("checkpoint written to %s\n", r->path);
	ctl_reply_free(r);
	if (req.type == OSM__CTL_TYPE__CTL_MIGRATE && req.node != 0)
		return mosmigrate_watch(sock, req.pid, req.node);
	return 0;
}
