/*
 * spank_osmosis.so: srun, sbatch and salloc --migratable, a SPANK plugin
 * for Slurm 22.05 (osmosis-slurm(8)).
 *
 * A task of a --migratable step runs under mosrun. Slurm 22.05 has no
 * spank_prepend_task_argv (23.11 brought it), and exec'ing mosrun from
 * here would skip what Slurm still does between this hook and its execve
 * (the task prologs, TMPDIR, the user's limits, the PATH search). So the
 * task's argv[0] becomes the task wrapper (slurm/task.c) and its own goes
 * to the wrapper in the environment: Slurm then execs the wrapper in the
 * task's process, which execs mosrun, which becomes the program. The pid
 * Slurm knows is the program's at home all along, so its signals, its exit
 * status and scancel reach the program as they would without us.
 *
 * This file runs inside Slurm's own processes (slurmstepd as root): it
 * only passes words on. The osmosis side, talking to mosd and choosing
 * the nodes, is the wrapper's, run as the user.
 */
#include <sys/fsuid.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <slurm/slurm.h>
#include <slurm/spank.h>

#include "slurm/osmosis-slurm.h"

SPANK_PLUGIN(osmosis, 1);

/* Installed paths, made by make; plugstack.conf's arguments override. */
#ifndef OSM_SLURM_TASK_PATH
#define OSM_SLURM_TASK_PATH	"/usr/local/libexec/osmosis/slurm-task"
#endif
#ifndef OSM_SLURM_MOSRUN_PATH
#define OSM_SLURM_MOSRUN_PATH	"/usr/local/bin/mosrun"
#endif
#ifndef OSM_SLURM_REQUEUE_PATH
#define OSM_SLURM_REQUEUE_PATH	"/usr/local/libexec/osmosis/slurm-requeue"
#endif

static int		 osm_migratable;	/* --migratable */
static int		 osm_signal;		/* --migratable-signal */
static const char	*osm_task = OSM_SLURM_TASK_PATH;
static const char	*osm_mosrun = OSM_SLURM_MOSRUN_PATH;
static const char	*osm_requeue = OSM_SLURM_REQUEUE_PATH;
static const char	*osm_checkpoints;	/* NULL: the submit dir */

/* A signal by name (USR1, SIGUSR1) or number, one a program may catch. */
static int
osm_parse_signal(const char *s, int *out)
{
	const char	*name;
	char		*end;
	long		 v;
	int		 sig;

	if (strncasecmp(s, "SIG", 3) == 0)
		s += 3;
	v = strtol(s, &end, 10);
	if (*s != '\0' && *end == '\0')
		sig = v > 0 && v < NSIG ? (int)v : 0;
	else {
		for (sig = 1; sig < NSIG; sig++)
			if ((name = sigabbrev_np(sig)) != NULL &&
			    strcasecmp(name, s) == 0)
				break;
	}
	if (sig <= 0 || sig >= NSIG || sig == SIGKILL || sig == SIGSTOP)
		return -1;
	*out = sig;
	return 0;
}

static int
osm_opt_migratable(int val, const char *arg, int remote)
{
	osm_migratable = 1;
	return 0;
}

static int
osm_opt_signal(int val, const char *arg, int remote)
{
	if (arg == NULL || osm_parse_signal(arg, &osm_signal) == -1) {
		slurm_error("osmosis: --migratable-signal: expected a signal "
		    "a program can catch (USR1, TERM, 10...), found '%s'",
		    arg != NULL ? arg : "");
		return -1;
	}
	osm_migratable = 1;
	return 0;
}

static struct spank_option osm_options[] = {
	{ "migratable", NULL,
	  "run the step's tasks as migratable osmosis processes, which move "
	  "only among the nodes of the job (osmosis-slurm(8))",
	  0, 0, osm_opt_migratable },
	{ "migratable-signal", "SIGNAL",
	  "with --migratable: SIGNAL (the one of --signal) checkpoints the "
	  "tasks, and the job is requeued to go on from there",
	  1, 0, osm_opt_signal },
	SPANK_OPTIONS_TABLE_END
};

/* plugstack.conf's arguments: task=, mosrun=, requeue=, checkpoints=. */
static int
osm_args(int ac, char **av)
{
	static const struct {
		const char	 *key;
		const char	**value;
	} keys[] = {
		{ "task=", &osm_task },
		{ "mosrun=", &osm_mosrun },
		{ "requeue=", &osm_requeue },
		{ "checkpoints=", &osm_checkpoints },
	};
	size_t	k;
	int	i;

	for (i = 0; i < ac; i++) {
		for (k = 0; k < sizeof keys / sizeof keys[0]; k++) {
			if (strncmp(av[i], keys[k].key,
			    strlen(keys[k].key)) == 0)
				break;
		}
		if (k == sizeof keys / sizeof keys[0] ||
		    av[i][strlen(keys[k].key)] != '/') {
			slurm_error("osmosis: plugstack.conf: '%s': expected "
			    "task=, mosrun=, requeue= or checkpoints= and an "
			    "absolute path", av[i]);
			return -1;
		}
		*keys[k].value = av[i] + strlen(keys[k].key);
	}
	return 0;
}

/* Options must be registered here to reach sbatch and salloc too. */
int
slurm_spank_init(spank_t sp, int ac, char **av)
{
	struct spank_option	*o;

	if (osm_args(ac, av) == -1)
		return -1;
	for (o = osm_options; o->name != NULL; o++) {
		if (spank_option_register(sp, o) != ESPANK_SUCCESS) {
			slurm_error("osmosis: cannot register --%s", o->name);
			return -1;
		}
	}
	return 0;
}

/* Is this a job step whose tasks we wrap (not the batch script)? */
static int
osm_wrapped(spank_t sp)
{
	uint32_t	step;

	if (!osm_migratable || !spank_remote(sp))
		return 0;
	if (spank_get_item(sp, S_JOB_STEPID, &step) != ESPANK_SUCCESS)
		return 0;
	return step != SLURM_BATCH_SCRIPT && step != SLURM_EXTERN_CONT &&
	    step != SLURM_INTERACTIVE_STEP;
}

static int
osm_setenv(spank_t sp, const char *name, const char *value)
{
	if (spank_setenv(sp, name, value, 1) != ESPANK_SUCCESS) {
		slurm_error("osmosis: cannot set %s", name);
		return -1;
	}
	return 0;
}

/*
 * In the task's process, as the user, just before Slurm execs the task:
 * the wrapper takes argv[0]'s place.
 */
int
slurm_spank_task_init(spank_t sp, int ac, char **av)
{
	char	**argv, sig[16];
	int	  argc;
	size_t	  len;

	if (!osm_wrapped(sp))
		return 0;
	if (spank_get_item(sp, S_JOB_ARGV, &argc, &argv) != ESPANK_SUCCESS ||
	    argc < 1 || argv[0] == NULL) {
		slurm_error("osmosis: --migratable: the task has no program");
		return -1;
	}
	/* --bcast=DIR/: Slurm appends to argv[0] after us. */
	len = strlen(argv[0]);
	if (len == 0 || argv[0][len - 1] == '/') {
		slurm_error("osmosis: --migratable cannot run '%s'", argv[0]);
		return -1;
	}
	if (access(osm_task, X_OK) == -1) {
		slurm_error("osmosis: the task wrapper %s: %s", osm_task,
		    strerror(errno));
		return -1;
	}
	snprintf(sig, sizeof sig, "%d", osm_signal);
	if (osm_setenv(sp, OSM_SLURM_ARGV0, argv[0]) == -1 ||
	    osm_setenv(sp, OSM_SLURM_MOSRUN, osm_mosrun) == -1 ||
	    osm_setenv(sp, OSM_SLURM_REQUEUE, osm_requeue) == -1 ||
	    (osm_signal != 0 && osm_setenv(sp, OSM_SLURM_SIGNAL, sig) == -1) ||
	    (osm_checkpoints != NULL &&
	    osm_setenv(sp, OSM_SLURM_CHECKPOINTS, osm_checkpoints) == -1))
		return -1;
	/* This process's copy of the step's argv: it is about to exec. */
	if ((argv[0] = strdup(osm_task)) == NULL) {
		slurm_error("osmosis: out of memory");
		return -1;
	}
	return 0;
}

/*
 * Remove the checkpoints of a task (names starting with prefix in dir), as
 * the job's user: fsuid and fsgid are this thread's alone, and a non-root
 * fsuid drops the capabilities that would let root's unlink through.
 */
static void
osm_remove(const char *dir, const char *prefix, uid_t uid, gid_t gid)
{
	struct dirent	*de;
	DIR		*dp;
	int		 fd;

	setfsgid(gid);
	setfsuid(uid);
	if ((fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) != -1 &&
	    (dp = fdopendir(fd)) != NULL) {
		while ((de = readdir(dp)) != NULL) {
			if (strncmp(de->d_name, prefix, strlen(prefix)) == 0 &&
			    unlinkat(fd, de->d_name, 0) == -1)
				slurm_info("osmosis: %s/%s: %s", dir,
				    de->d_name, strerror(errno));
		}
		closedir(dp);
	} else if (fd != -1)
		close(fd);
	setfsuid(0);
	setfsgid(0);
}

/*
 * A task that ends by itself has no use for its checkpoints; one killed,
 * or whose step is being requeued (its marker is there), keeps them for
 * the job to go on from.
 */
int
slurm_spank_task_exit(spank_t sp, int ac, char **av)
{
	char		 dir[4096], prefix[128], marker[4352];
	uint32_t	 job, step, task;
	uid_t		 uid;
	gid_t		 gid;
	int		 status;

	if (!osm_wrapped(sp) || osm_signal == 0)
		return 0;
	if (spank_get_item(sp, S_TASK_EXIT_STATUS, &status) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_JOB_ID, &job) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_JOB_STEPID, &step) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_TASK_GLOBAL_ID, &task) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_JOB_UID, &uid) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_JOB_GID, &gid) != ESPANK_SUCCESS)
		return 0;
	if (!WIFEXITED(status))
		return 0;
	if (osm_checkpoints != NULL)
		snprintf(dir, sizeof dir, "%s", osm_checkpoints);
	else if (spank_getenv(sp, "SLURM_SUBMIT_DIR", dir, sizeof dir) !=
	    ESPANK_SUCCESS)
		return 0;
	snprintf(prefix, sizeof prefix, OSM_SLURM_PREFIX, job, step, task);
	snprintf(marker, sizeof marker, "%s/%s" OSM_SLURM_MARKER, dir, prefix);
	if (access(marker, F_OK) == 0)
		return 0;
	osm_remove(dir, prefix, uid, gid);
	return 0;
}
