/*
 * slurm/ — osmosis in Slurm (osmosis-slurm(8)): what the SPANK plugin
 * (spank.c, inside Slurm's processes) tells the task wrapper (task.c, in
 * the task's process as the user), and the names of a task's checkpoint
 * files, which the plugin, the wrapper and slurm-requeue all know.
 */
#ifndef OSMOSIS_SLURM_H
#define OSMOSIS_SLURM_H

/* The plugin to the wrapper, in the task's environment; the wrapper
 * takes them out before the program sees it. */
#define OSM_SLURM_ARGV0		"OSM_SLURM_ARGV0"	/* the task's own */
#define OSM_SLURM_MOSRUN	"OSM_SLURM_MOSRUN"	/* mosrun's path */
#define OSM_SLURM_REQUEUE	"OSM_SLURM_REQUEUE"	/* slurm-requeue's */
#define OSM_SLURM_SIGNAL	"OSM_SLURM_SIGNAL"	/* its number */
#define OSM_SLURM_CHECKPOINTS	"OSM_SLURM_CHECKPOINTS"	/* the directory */

/*
 * A task's files in the checkpoint directory all start with
 * osmosis-JOB.STEP.TASK-: its checkpoints rR.N (R the job's restart
 * count when written, N mosrun -C's number), and "requeue", the mark
 * slurm-requeue leaves once the task has its checkpoint for the requeue.
 */
#define OSM_SLURM_PREFIX	"osmosis-%u.%u.%u-"
#define OSM_SLURM_MARKER	"requeue"

/* nodes.c (the wrapper's) */
int	 nodes_of_job(const char *sock, int verbose, char **out, char **cause);

#endif
