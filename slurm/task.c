/*
 * slurm-task: what a task of a --migratable step runs first
 * (osmosis-slurm(8)). spank_osmosis.so (spank.c) put this program in the
 * task's argv[0] and the task's own in the environment; here, as the user
 * and in the task's process, it finds the osmosis nodes of the job's
 * allocation (nodes.c) and execs mosrun -n on them, which becomes the
 * program: the pid Slurm knows stays the program's.
 *
 * With --migratable-signal the signal checkpoints the task, and
 * slurm-requeue, run after each checkpoint, requeues the job once every
 * task of the step has one. A requeued job's task (SLURM_RESTART_COUNT
 * above 0) with a checkpoint goes on from the newest one instead of
 * starting over.
 *
 *	slurm-task ARG...	(exec'd by the plugin only)
 *	slurm-task -l		print the job's osmosis nodes, this one first
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/osm.h"
#include "slurm/osmosis-slurm.h"

#ifndef OSM_SLURM_MOSRUN_PATH
#define OSM_SLURM_MOSRUN_PATH	"/usr/local/bin/mosrun"
#endif

/* The environment's number name, or def if it has none. */
static unsigned
task_env_uint(const char *name, unsigned def)
{
	const char	*s = getenv(name);
	uint64_t	 v;

	if (s == NULL || parse_uint(s, 0, UINT32_MAX, &v) == -1)
		return def;
	return v;
}

/*
 * The newest checkpoint of this task from before the current run of the
 * job (restart count below restart) in dir, or NULL: the highest rR, and
 * in it the highest N.
 */
static char *
task_checkpoint(const char *dir, const char *prefix, unsigned restart)
{
	struct dirent	*de;
	DIR		*dp;
	unsigned	 r, n, best_r = 0, best_n = 0;
	char		*path = NULL, rest[8];
	size_t		 len = strlen(prefix);

	if ((dp = opendir(dir)) == NULL)
		return NULL;
	while ((de = readdir(dp)) != NULL) {
		if (strncmp(de->d_name, prefix, len) != 0 ||
		    sscanf(de->d_name + len, "r%u.%u%7s", &r, &n, rest) != 2 ||
		    r >= restart || n == 0)
			continue;
		if (r > best_r || (r == best_r && n > best_n)) {
			best_r = r;
			best_n = n;
		}
	}
	closedir(dp);
	if (best_n != 0)
		xasprintf(&path, "%s/%sr%u.%u", dir, prefix, best_r, best_n);
	return path;
}

/* The directory checkpoints go to: the plugin's, else the submit dir. */
static char *
task_dir(void)
{
	const char	*s;
	char		 cwd[PATH_MAX];

	if ((s = getenv(OSM_SLURM_CHECKPOINTS)) != NULL ||
	    (s = getenv("SLURM_SUBMIT_DIR")) != NULL)
		return xstrdup(s);
	if (getcwd(cwd, sizeof cwd) == NULL)
		return xstrdup(".");
	return xstrdup(cwd);
}

static void __attribute__((noreturn))
task_fail(const char *fmt, const char *what)
{
	fprintf(stderr, "slurm-task: ");
	fprintf(stderr, fmt, what);
	fprintf(stderr, "\n");
	exit(1);
}

/* Become mosrun, which becomes the task's program. */
static void __attribute__((noreturn))
task_exec(char **av)
{
	execv(av[0], av);
	fprintf(stderr, "slurm-task: %s: %s\n", av[0], strerror(errno));
	exit(errno == ENOENT ? 127 : 126);
}

int
main(int argc, char **argv)
{
	const char	*argv0, *mosrun, *requeue, *sock;
	char		*nodes, *cause, *dir, *base, *last, *marker;
	char		 prefix[128], sig[16];
	char		**av;
	unsigned	 job, step, task, restart, signo;
	int		 ac = 0, i, help;

	sock = getenv("OSM_SOCKET") != NULL ? getenv("OSM_SOCKET") :
	    OSM_SOCKET_PATH;
	if (argc == 2 && strcmp(argv[1], "-l") == 0 &&
	    getenv(OSM_SLURM_ARGV0) == NULL) {
		if (nodes_of_job(sock, 1, &nodes, &cause) == -1)
			task_fail("%s", cause);
		printf("%s\n", nodes);
		free(nodes);
		return 0;
	}
	if ((argv0 = getenv(OSM_SLURM_ARGV0)) == NULL) {
		help = argc == 2 && (strcmp(argv[1], "-h") == 0 ||
		    strcmp(argv[1], "--help") == 0);
		fprintf(help ? stdout : stderr, "usage: slurm-task -l\n"
		    "Print the osmosis nodes of this Slurm job's allocation, "
		    "this node's first.\n"
		    "spank_osmosis.so runs the tasks of srun --migratable under "
		    "slurm-task;\nsee osmosis-slurm(8). Exit status: 0, 1 "
		    "when the nodes cannot be found, 2 usage.\n");
		return help ? 0 : 2;
	}
	argv0 = xstrdup(argv0);
	mosrun = xstrdup(getenv(OSM_SLURM_MOSRUN) != NULL ?
	    getenv(OSM_SLURM_MOSRUN) : OSM_SLURM_MOSRUN_PATH);
	requeue = getenv(OSM_SLURM_REQUEUE) != NULL ?
	    xstrdup(getenv(OSM_SLURM_REQUEUE)) : NULL;
	signo = task_env_uint(OSM_SLURM_SIGNAL, 0);
	dir = task_dir();
	unsetenv(OSM_SLURM_ARGV0);
	unsetenv(OSM_SLURM_MOSRUN);
	unsetenv(OSM_SLURM_REQUEUE);
	unsetenv(OSM_SLURM_SIGNAL);
	unsetenv(OSM_SLURM_CHECKPOINTS);

	if (nodes_of_job(sock, 0, &nodes, &cause) == -1)
		task_fail("%s; not running the task", cause);

	av = xcalloc(argc + 16, sizeof *av);
	av[ac++] = (char *)mosrun;
	av[ac++] = "-n";
	av[ac++] = nodes;
	if (signo != 0) {
		job = task_env_uint("SLURM_JOB_ID", 0);
		step = task_env_uint("SLURM_STEP_ID", 0);
		task = task_env_uint("SLURM_PROCID", 0);
		restart = task_env_uint("SLURM_RESTART_COUNT", 0);
		snprintf(prefix, sizeof prefix, OSM_SLURM_PREFIX, job, step,
		    task);
		snprintf(sig, sizeof sig, "%u", signo);
		xasprintf(&base, "%s/%sr%u", dir, prefix, restart);
		av[ac++] = "-C";
		av[ac++] = base;
		av[ac++] = "--checkpoint-on";
		av[ac++] = sig;
		if (requeue != NULL) {
			av[ac++] = "--checkpoint-exec";
			av[ac++] = (char *)requeue;
		}
		/* slurm-requeue's mark of the last run is used up. */
		xasprintf(&marker, "%s/%s" OSM_SLURM_MARKER, dir, prefix);
		if (unlink(marker) == -1 && errno != ENOENT)
			task_fail("%s: cannot remove it", marker);
		/* Requeued: go on from where the last run was stopped. */
		if (restart > 0 &&
		    (last = task_checkpoint(dir, prefix, restart)) != NULL) {
			fprintf(stderr, "slurm-task: going on from %s\n", last);
			av[ac++] = "-R";
			av[ac++] = last;
			task_exec(av);
		}
	}
	av[ac++] = "--";
	av[ac++] = (char *)argv0;
	for (i = 1; i < argc; i++)
		av[ac++] = argv[i];
	task_exec(av);
}
