#!/bin/sh
# slurm-healthcheck: Slurm's HealthCheckProgram (osmosis-slurm(8)). A node
# whose mosd does not answer is drained, so that no job is given it: its
# --migratable tasks could not run. A node drained for that comes back by
# itself once mosd answers again; one drained for another reason is left
# to its admin.
PATH=@BINDIR@:/usr/sbin:/usr/bin:/sbin:/bin
reason="osmosis: mosd does not answer"
node=${SLURMD_NODENAME:-$(hostname -s)}
if why=$(mosctl status 2>&1 > /dev/null); then
	scontrol show node -o "$node" 2>/dev/null |
	    grep -q "Reason=$reason" || exit 0
	scontrol update nodename="$node" state=resume
	exit 0
fi
echo "slurm-healthcheck: $node: $why" >&2
scontrol update nodename="$node" state=drain reason="$reason"
exit 1
