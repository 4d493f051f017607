#!/bin/sh
# slurm-requeue FILE REASON PID: run by mosrun --checkpoint-exec after each
# checkpoint of a task of a --migratable-signal step (osmosis-slurm(8)).
# After the one the signal asked for it marks the task as ready; once
# every task of the step is, it requeues the job: Slurm ends the tasks,
# still running, and starts the job again, whose tasks go on from these
# checkpoints (slurm-task). Until then the tasks run on, so a script
# after the step never runs as if the step had finished.
PATH=$PATH:@BINDIR@:/usr/bin:/bin
[ "$2" = signal ] || exit 0
if [ -z "$SLURM_JOB_ID" ] || [ -z "$SLURM_STEP_ID" ] ||
    [ -z "$SLURM_PROCID" ]; then
	echo "slurm-requeue: not in a Slurm job step" >&2
	exit 1
fi
dir=$(dirname "$1")
step=osmosis-$SLURM_JOB_ID.$SLURM_STEP_ID
: > "$dir/$step.$SLURM_PROCID-requeue" || exit 1
want=${SLURM_STEP_NUM_TASKS:-${SLURM_NTASKS:-1}}
have=$(ls "$dir" | grep -c "^$step\.[0-9]*-requeue\$")
if [ "$have" -lt "$want" ]; then
	echo "osmosis: task $SLURM_PROCID checkpointed to $1 ($have of" \
	    "$want tasks)" >&2
	exit 0
fi
echo "osmosis: task $SLURM_PROCID checkpointed to $1; every task has" \
    "one: requeueing job $SLURM_JOB_ID" >&2
# The last two tasks may both get here: the second request is refused.
scontrol requeue "$SLURM_JOB_ID" 2>/dev/null ||
    echo "osmosis: job $SLURM_JOB_ID not requeued (a batch job with" \
	"--requeue can be)" >&2
