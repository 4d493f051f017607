/*
 * mosps: the migratable processes of this node's users, where they run.
 * The columns are for people; for scripts, -o FIELD,... prints chosen
 * fields with no header and WHERE always a node number, and --json one
 * document (lib/ctl-json.c).
 */
#include <getopt.h>
#include <jansson.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "lib/osm.h"
#include "proto/ctl.pb-c.h"

#define MOSPS_FIELDS_MAX	16

struct mosps_field {
	const char	*name;
	void		 (*fmt)(char *, size_t, const Osm__CtlProc *);
};

static void __attribute__((noreturn))
usage(int status)
{
	fprintf(status == 0 ? stdout : stderr,
	    "usage: mosps [-a] [-v] [-p pid] [-o field[,field...] | -j] "
	    "[-S socket]\n"
	    "List the migratable processes homed on this node: yours, or with\n"
	    "-a everyone's.\n\n"
	    "  -a          every user's processes\n"
	    "  -p pid      only process pid (exit status 1 if not listed)\n"
	    "  -v          under each process, why it is where it is: its\n"
	    "              recent moves and returns home, with their reasons;\n"
	    "              and its last good checkpoint, failures since\n"
	    "  -o fields   print these fields, space-separated, without a\n"
	    "              header: pid user where state cpu thr rss command\n"
	    "              why ckpt (why: the last move, return home or move\n"
	    "              that did not happen, and its reason; ckpt: seconds\n"
	    "              since the last good checkpoint, or -)\n"
	    "  -j, --json  one JSON document (see mosps(1))\n"
	    "  -S socket   mosd's control socket (default %s)\n"
	    "  -h, --help  this help\n\n"
	    "Columns: PID USER WHERE STATE CPU%% THR RSS COMMAND; WHERE is\n"
	    "'here' or the number of the node the process runs on (with -o\n"
	    "always a number, this node's own when here); CPU%% is of one CPU\n"
	    "(200 is two busy threads); THR its threads.\n"
	    "Exit status: 0 success, 1 mosd unreachable or no process pid,\n"
	    "2 usage error.\n",
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

static const char *
mosps_state(const Osm__CtlProc *p)
{
	const char	*name = ctl_state_name(p->state);

	return name != NULL ? name : "?";
}

static void
mosps_f_pid(char *buf, size_t size, const Osm__CtlProc *p)
{
	snprintf(buf, size, "%u", p->pid);
}

static void
mosps_f_user(char *buf, size_t size, const Osm__CtlProc *p)
{
	snprintf(buf, size, "%s", p->user);
}

static void
mosps_f_where(char *buf, size_t size, const Osm__CtlProc *p)
{
	snprintf(buf, size, "%u", p->where);
}

static void
mosps_f_state(char *buf, size_t size, const Osm__CtlProc *p)
{
	snprintf(buf, size, "%s", mosps_state(p));
}

static void
mosps_f_cpu(char *buf, size_t size, const Osm__CtlProc *p)
{
	snprintf(buf, size, "%.1f", p->cpu_permille / 10.0);
}

static void
mosps_f_threads(char *buf, size_t size, const Osm__CtlProc *p)
{
	snprintf(buf, size, "%u", p->has_threads ? p->threads : 1);
}

static void
mosps_f_rss(char *buf, size_t size, const Osm__CtlProc *p)
{
	mosps_size(buf, size, p->rss_bytes);
}

static void
mosps_f_command(char *buf, size_t size, const Osm__CtlProc *p)
{
	snprintf(buf, size, "%s", p->command);
}

static void
mosps_f_why(char *buf, size_t size, const Osm__CtlProc *p)
{
	snprintf(buf, size, "%s", p->why != NULL ? p->why : "-");
}

/* Milliseconds of Unix time, as deputies stamp their checkpoints. */
static uint64_t
mosps_clock_ms(void)
{
	struct timespec	ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Seconds since the last good checkpoint; "-" if none (or none asked). */
static void
mosps_f_ckpt(char *buf, size_t size, const Osm__CtlProc *p)
{
	const Osm__CtlCheckpoints	*c = p->checkpoints;
	uint64_t			 now = mosps_clock_ms();

	if (c == NULL || !c->has_last_ms)
		snprintf(buf, size, "-");
	else
		snprintf(buf, size, "%llu", (unsigned long long)(now >
		    c->last_ms ? (now - c->last_ms) / 1000 : 0));
}

/* -v: the last good checkpoint, and the failures since. */
static void
mosps_print_ckpt(const Osm__CtlProc *p)
{
	const Osm__CtlCheckpoints	*c = p->checkpoints;
	uint64_t			 now = mosps_clock_ms();

	if (c == NULL)
		return;
	if (c->has_last_ms)
		printf("        last checkpoint %s, %llu s ago (%u written)\n",
		    c->last_path != NULL ? c->last_path : "?",
		    (unsigned long long)(now > c->last_ms ?
		    (now - c->last_ms) / 1000 : 0), c->written);
	else
		printf("        no checkpoint yet\n");
	if (c->has_failed_ms && (!c->has_last_ms || c->failed_ms >=
	    c->last_ms))
		printf("        checkpoints failing (%u so far), %llu s ago: "
		    "%s\n", c->failed, (unsigned long long)(now >
		    c->failed_ms ? (now - c->failed_ms) / 1000 : 0),
		    c->failed_why != NULL ? c->failed_why : "no reason given");
}

/* Each as in the columns, but for WHERE. */
static const struct mosps_field mosps_fields[] = {
	{ .name = "pid", .fmt = mosps_f_pid },
	{ .name = "user", .fmt = mosps_f_user },
	{ .name = "where", .fmt = mosps_f_where },
	{ .name = "state", .fmt = mosps_f_state },
	{ .name = "cpu", .fmt = mosps_f_cpu },
	{ .name = "thr", .fmt = mosps_f_threads },
	{ .name = "rss", .fmt = mosps_f_rss },
	{ .name = "command", .fmt = mosps_f_command },
	{ .name = "why", .fmt = mosps_f_why },
	{ .name = "ckpt", .fmt = mosps_f_ckpt },
};

/* Parse -o's list into fields; -1 and a message if a name is unknown. */
static int
mosps_parse_fields(const char *arg, const struct mosps_field **fields,
    size_t *nfields)
{
	char	*copy, *next, *name;
	size_t	 i;
	int	 rc = -1;

	*nfields = 0;
	next = copy = xstrdup(arg);
	while ((name = strsep(&next, ",")) != NULL) {
		for (i = 0; i < nitems(mosps_fields); i++)
			if (strcmp(name, mosps_fields[i].name) == 0)
				break;
		if (i == nitems(mosps_fields)) {
			fprintf(stderr, "mosps: unknown field '%s' (fields: "
			    "pid user where state cpu thr rss command why "
			    "ckpt)\n", name);
			goto out;
		}
		if (*nfields == MOSPS_FIELDS_MAX) {
			fprintf(stderr, "mosps: more than %d fields\n",
			    MOSPS_FIELDS_MAX);
			goto out;
		}
		fields[(*nfields)++] = &mosps_fields[i];
	}
	rc = 0;
out:
	free(copy);
	return rc;
}

static void
mosps_print_fields(const Osm__CtlProc *p, const struct mosps_field **fields,
    size_t nfields)
{
	char	buf[512];
	size_t	i;

	for (i = 0; i < nfields; i++) {
		fields[i]->fmt(buf, sizeof buf, p);
		printf("%s%s", i == 0 ? "" : " ", buf);
	}
	putchar('\n');
}

static void
mosps_print_columns(const Osm__CtlProc *p, uint32_t self)
{
	char	where[16], rss[16];

	if (p->where == self)
		snprintf(where, sizeof where, "here");
	else
		snprintf(where, sizeof where, "%u", p->where);
	mosps_size(rss, sizeof rss, p->rss_bytes);
	printf("%7u %-10.10s %-5s %-9.9s %5.1f %3u %6s %s\n", p->pid, p->user,
	    where, mosps_state(p), p->cpu_permille / 10.0, p->has_threads ?
	    p->threads : 1, rss, p->command);
}

int
main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "json", no_argument, NULL, 'j' },
		{ NULL, 0, NULL, 0 }
	};
	Osm__CtlRequest	 req = OSM__CTL_REQUEST__INIT;
	Osm__CtlReply	*r;
	Osm__CtlProc	*p;
	json_t		*doc;
	const struct mosps_field *fields[MOSPS_FIELDS_MAX];
	const char	*sock = OSM_SOCKET_PATH;
	char		*cause;
	uint64_t	 pid = 0;
	size_t		 i, j, nfields = 0, shown = 0;
	int		 ch, json = 0, verbose = 0;

	while ((ch = getopt_long(argc, argv, "ahjp:o:S:v", longopts,
	    NULL)) != -1) {
		switch (ch) {
		case 'a':
			req.has_all = req.all = 1;
			break;
		case 'p':
			if (parse_uint(optarg, 1, INT_MAX, &pid) == -1) {
				fprintf(stderr, "mosps: bad process id: %s\n",
				    optarg);
				usage(2);
			}
			break;
		case 'o':
			if (mosps_parse_fields(optarg, fields, &nfields) == -1)
				usage(2);
			break;
		case 'j':
			json = 1;
			break;
		case 'S':
			sock = optarg;
			break;
		case 'v':
			verbose = 1;
			break;
		case 'h':
			usage(0);
		default:
			usage(2);
		}
	}
	if (optind != argc || (json && nfields > 0))
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
	if (json) {
		shown = json_array_size(json_object_get(doc =
		    ctl_json_ps(r, pid), "procs"));
		ctl_reply_free(r);
		if (ctl_json_print(stdout, doc) == -1)
			return 1;
		goto out;
	}
	if (nfields == 0)
		printf("%7s %-10s %-5s %-9s %5s %3s %6s %s\n", "PID", "USER",
		    "WHERE", "STATE", "CPU%", "THR", "RSS", "COMMAND");
	for (i = 0; i < r->n_procs; i++) {
		p = r->procs[i];
		if (pid != 0 && p->pid != pid)
			continue;
		if (nfields == 0)
			mosps_print_columns(p, r->self);
		else
			mosps_print_fields(p, fields, nfields);
		for (j = 0; verbose && j < p->n_history; j++)
			printf("        %s\n", p->history[j]);
		if (verbose)
			mosps_print_ckpt(p);
		shown++;
	}
	fflush(stdout);
	toolclock_mark("printed");
	ctl_reply_free(r);
out:
	if (pid != 0 && shown == 0) {
		fprintf(stderr, "mosps: no process %llu listed\n",
		    (unsigned long long)pid);
		return 1;
	}
	return 0;
}
