#!/bin/sh
# make demo: a 4-node lab on this machine, CPU load on two of its nodes,
# and what node 1's mosd sees, frame by frame. The lab is taken down at the
# end, also if interrupted.
. "$(dirname "$0")/lib.sh"
MOSLAB_NAME=demo
export MOSLAB_NAME

say() {
	printf '\n== %s\n' "$*"
}

say "moslab up 4 --cpus 0.5 --mem 512: four nodes of half a CPU each"
lab_up 4 --cpus 0.5 --mem 512
"$MOSLAB" status
sleep 3
say "node 1's view (mosctl status)"
lab_exec 1 mosctl status

say "one CPU burner on node 2, two on node 3"
"$MOSLAB" exec 2 sh -c 'while :; do :; done' &
b1=$!
"$MOSLAB" exec 3 sh -c 'while :; do :; done' &
b2=$!
"$MOSLAB" exec 3 sh -c 'while :; do :; done' &
b3=$!
for i in 1 2 3 4 5 6; do
	sleep 1
	say "mosmon -b on node 1, after ${i} s"
	lab_exec 1 mosmon -b
done

say "burners stopped"
kill $b1 $b2 $b3
wait $b1 $b2 $b3 2>/dev/null

say "a CPU-bound job started with mosrun on node 1"
"$MOSLAB" exec 1 mosrun sh -c 'while :; do :; done' &
job=$!
until [ "$(lab_exec 1 mosps | wc -l)" -eq 2 ]; do sleep 0.2; done
pid=$(lab_exec 1 mosps | awk 'NR == 2 { print $1 }')
lab_exec 1 mosps
say "mosmigrate $pid 4: it now runs on node 4, and lives on node 1"
lab_exec 1 mosmigrate "$pid" 4
sleep 4
lab_exec 1 mosps
lab_exec 1 mosmon -b
say "node 4 runs it under a guest uid; node 1 holds its pid"
lab_exec 4 ps -o user,pid,stat,time,comm -C sh
lab_exec 1 ps -o user,pid,stat,comm -p "$pid"
say "mosmigrate $pid home, then kill $pid"
lab_exec 1 mosmigrate "$pid" home
lab_exec 1 mosps
lab_exec 1 kill "$pid"
wait $job 2>/dev/null

say "moslab down"
