#!/bin/sh
# make demo: a 4-node lab on this machine. Eight CPU-bound jobs started
# with mosrun on node 1 spread over the nodes by themselves (mosps and
# mosmon frames while they run), and finish in a fraction of the time the
# same jobs take with migration off; then one job moved by hand. The lab
# is taken down at the end, also if interrupted.
. "$(dirname "$0")/lib.sh"
MOSLAB_NAME=demo
export MOSLAB_NAME
B=${OSM_DEMO_JOB:-$OSM_BIN/../build/bench/mosix}
JOBS=8
SECS=2

say() {
	printf '\n== %s\n' "$*"
}

say "moslab up 4 --cpus 0.5 --mem 512: four nodes of half a CPU each"
lab_up 4 --cpus 0.5 --mem 512
"$MOSLAB" status
wait_cluster 4
sleep 2
say "node 1's view (mosctl status)"
lab_exec 1 mosctl status

# jobs [MOSRUN-OPTIONS]: JOBS jobs of SECS CPU-seconds each on node 1,
# frames while they run; the makespan in $span (seconds).
iters=$(awk -v r="$("$B" -c)" -v s="$SECS" 'BEGIN { printf "%.0f", r * s }')
jobs() {
	t0=$(date +%s%N)
	pids=""
	for i in $(seq $JOBS); do
		"$MOSLAB" exec 1 mosrun "$@" "$B" "$iters" 1 0 0 /tmp/job$i \
		    > /dev/null &
		pids="$pids $!"
	done
	n=0
	while [ "$(lab_exec 1 mosps | wc -l)" -gt 1 ]; do
		n=$((n + 2))
		say "after $n s: mosps on node 1, then mosmon -b"
		lab_exec 1 mosps
		lab_exec 1 mosmon -b
		sleep 2
	done
	wait $pids
	span=$(awk -v t="$(( $(date +%s%N) - t0 ))" \
	    'BEGIN { printf "%.1f", t / 1e9 }')
}

say "$JOBS jobs of $SECS CPU-seconds each, started with mosrun on node 1"
jobs
balanced=$span
say "the balancer's moves, from node 1's log"
grep "balancer:" "$(lab_dir)/node1/mosd.log"

say "the same $JOBS jobs with migration off (mosrun -L): all on node 1"
jobs -L
say "makespan: $balanced s with migration, $span s without" \
    "(ideal: $(awk -v j=$JOBS -v s=$SECS 'BEGIN { print j * s / 2 }') s)"

say "a CPU-bound job started with mosrun -L on node 1, moved by hand"
"$MOSLAB" exec 1 mosrun -L sh -c 'while :; do :; done' &
job=$!
until nprocs 1; do sleep 0.2; done
pid=$(ps_list pid | head -n 1)
say "mosmigrate $pid 4: it now runs on node 4, and lives on node 1"
lab_exec 1 mosmigrate "$pid" 4
sleep 2
lab_exec 1 mosps
say "node 4 runs it under a guest uid; node 1 holds its pid"
lab_exec 4 ps -o user,pid,stat,time,comm -C sh
lab_exec 1 ps -o user,pid,stat,comm -p "$pid"
say "mosmigrate $pid home, then kill $pid"
lab_exec 1 mosmigrate "$pid" home
lab_exec 1 mosps
lab_exec 1 kill "$pid"
wait $job 2>/dev/null

say "moslab down"
