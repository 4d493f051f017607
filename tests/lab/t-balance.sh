#!/bin/sh
# The balancer and mosrun's placement options: -b starts a job on a node
# where it runs faster than at a busy home; -m keeps it off nodes without
# that much free memory; -r starts it where asked; CPU-bound jobs started
# on node 1 spread over the nodes while -L jobs stay home, and once the
# load is steady no process has moved more than twice; a process that
# leaves its node short of memory goes where it fits, its memory intact.
. "$(dirname "$0")/lib.sh"
P=${OSM_MOSRUN:-$OSM_BIN/../build/tests/mosrun}

lab_up 3 --cpus 0.5 --mem 256,320,320
wait_cluster 3
LOG=$(lab_dir)/node1/mosd.log
SPIN='while :; do :; done'

newest() {
	ps_list pid | sort -n | tail -1
}
is_at() {
	[ "$(where "$1")" = "$2" ]
}
not_at() {
	[ -n "$(where "$1")" ] && [ "$(where "$1")" != "$2" ]
}
# run N CMD...: start CMD on node 1, the Nth in mosps; its pid in $pid.
run() {
	n=$1
	shift
	"$MOSLAB" exec 1 "$@" > /dev/null 2>&1 &
	wait_for 10 nprocs "$n" || fail "$*: not in mosps"
	pid=$(newest)
}

# Two jobs that stay home make node 1 busy.
run 1 mosrun -L sh -c "$SPIN"
l1=$pid
run 2 mosrun -L sh -c "$SPIN"
l2=$pid
busy() {
	lab_exec 1 mosctl status | awk '$1 == 1 && $4 >= 3.0' | grep -q .
}
wait_for 10 busy || fail "node 1 not busy: $(lab_exec 1 mosctl status)"

# -b: not home. -b -m 400 on 256 MiB nodes: home. -r -m: refused, home.
run 3 mosrun -L -b sh -c "$SPIN"
b=$pid
wait_for 5 not_at "$b" 1 || fail "-b started at $(where "$b")"
run 4 mosrun -L -b -m 400 sh -c "$SPIN"
m=$pid
sleep 1
is_at "$m" 1 || fail "-b -m 400 started on $(where "$m")"
expect 0 "node 3 has" lab_exec 1 mosrun -L -r 3 -m 400 true
# -r: where asked.
run 5 mosrun -L -r 2 sh -c "$SPIN"
r=$pid
wait_for 5 is_at "$r" 2 || fail "-r 2 job is at $(where "$r")"
lab_exec 1 kill "$b" "$m" "$r"
wait_for 5 nprocs 2 || fail "jobs did not end: $(lab_exec 1 mosps -a)"

# Four free jobs spread over nodes 2 and 3; the -L ones stay.
for i in 3 4 5 6; do
	run "$i" mosrun sh -c "$SPIN"
done
spread() {
	ps_list where | awk '{ n[$1]++ }
	    END { exit !(n[1] == 2 && n[2] == 2 && n[3] == 2) }'
}
wait_for 20 spread || fail "not spread 2/2/2: $(lab_exec 1 mosps -a)"
is_at "$l1" 1 && is_at "$l2" 1 || fail "a -L job moved"

# Steady: 10 s on, no process has moved more than twice in all.
sleep 10
spread || fail "not steady: $(lab_exec 1 mosps -a)"
grep -o "balancer: process [0-9]*" "$LOG" | sort | uniq -c |
    awk '$1 > 2 { print; bad = 1 } END { exit bad }' ||
    fail "a process migrated more than twice"
grep -Eq "balancer: process ($l1|$l2) " "$LOG" &&
    fail "the balancer moved a -L job"

# Short of memory: a waiting process that leaves node 1 less than 64 MiB
# free goes to a node where it fits, though it uses no CPU. (Its size
# from what node 1 has free: daemons built with ASan take far more.)
lab_exec 1 kill $(ps_list pid)
wait_for 10 nprocs 0 || fail "the jobs did not end: $(lab_exec 1 mosps -a)"
free=$(lab_exec 1 mosctl status | awk '$1 == 1 { print $7 }')
lab_exec 1 mkfifo /tmp/go || fail "mkfifo"
"$MOSLAB" exec 1 sh -c "mosrun $P/walker /tmp/go big $((free - 40)) \
    > /tmp/big 2>&1" &
big=$!
wait_for 20 nprocs 1 || fail "big: not in mosps"
w=$(newest)
# (40 s: built with ASan, the walker fills its memory slowly)
wait_for 40 not_at "$w" 1 || fail "big: still home: $(lab_exec 1 mosps -a)"
lab_exec 1 sh -c 'echo > /tmp/go'
wait "$big"
lab_exec 1 grep -qx "memory intact" /tmp/big ||
    fail "big: $(lab_exec 1 cat /tmp/big)"

"$MOSLAB" down || fail "moslab down"
check_clean
echo PASS
