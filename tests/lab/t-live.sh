#!/bin/sh
# Live moves (pre-copy). A process keeping 512 MiB in a known pattern and
# rewriting it at 64 MiB/s is moved 1 -> 2 stopped for the copy, then
# home, 1 -> 2 and home again live: its memory is exact after every move,
# and the stall it measures itself in a live move is far below the
# stop-and-copy one of the same run. A process that unmaps, maps, moves,
# grows and drops its memory all the time is moved in five forced rounds
# and home, exact. A process writing faster than a link shaped to
# 200 Mbit/s moves anyway, stopped for the rest, exact. Five checkpoints
# of a writer, each after the first of what changed, are recovered on
# node 2 into exactly the state of the last; with -N 2 the files the last
# two need are kept, and no others.
. "$(dirname "$0")/lib.sh"
P=${OSM_MOSRUN:-$OSM_BIN/../build/tests/mosrun}
MOSRUN_OPTS=

lab_up 2 --cpus 1 --mem 1536
wait_cluster 2
S=$(lab_dir)/share
mkdir -p "$S"

. "$LAB_TESTS/livewriter.sh"
# check NAME [NODE]: ask for a check and the stall since the last; $stall
# in us
check() {
	lw_check "$@"
	stall=$(tail -1 "$S/$1" | sed -n 's/^stall \([0-9]*\) us$/\1/p')
	[ -n "$stall" ] || fail "$1: no stall said: $(tail -1 "$S/$1")"
}
# move NAME NODE [OPTION]: and check where it is; on node 2 its guest
# must really run there
move() {
	lab_exec 1 mosmigrate $3 "$pid" "$2" ||
	    fail "$1: move to $2: $(tail -3 "$S/$1.log")"
	_w=$(where "$pid")
	case $2 in
	home)	[ "$_w" = 1 ] || fail "$1: at $_w after the move home" ;;
	*)	[ "$_w" = "$2" ] || fail "$1: at $_w after the move to $2"
		[ -n "$(guest_pid livewriter 2)" ] ||
		    fail "$1: no livewriter on node 2" ;;
	esac
}
stop() {
	lab_exec 1 kill -KILL "$pid"
	wait "$job"
}

start big 512 64
check big
move big 2 --stop-copy
check big
still=$stall
grep -q "to node 2: stopped for the copy" "$S/big.log" ||
    fail "big: not stopped for the copy: $(tail -2 "$S/big.log")"
move big home
check big
home1=$stall
move big 2
check big
live=$stall
grep -q "to node 2: live, [0-9]* rounds" "$S/big.log" ||
    fail "big: not moved live: $(tail -2 "$S/big.log")"
move big home
check big
home2=$stall
# both ways home live too (node 2's guest agent logs to its mosd log)
[ "$(grep -c "guest $pid@1: home live" "$(lab_dir)/node2/mosd.log")" = 2 ] ||
    fail "big: not home live twice: $(grep "$pid@1: home" \
    "$(lab_dir)/node2/mosd.log")"
echo "stalls: stop-and-copy $still us, live $live us, home $home1 and" \
    "$home2 us"
for s in $live $home1 $home2; do
	[ $((s * 5)) -lt "$still" ] ||
	    fail "big: a live stall of $s us against $still us stopped"
done
stop

# The address space changing under the rounds.
ROUNDS=5 start churn 24 16 churn
check churn
move churn 2
check churn
grep -q "to node 2: live, 5 rounds" "$S/churn.log" ||
    fail "churn: not in 5 rounds: $(tail -2 "$S/churn.log")"
move churn home
check churn
move churn 2
check churn
stop

# Faster than the link: the rounds give up, the rest goes frozen.
tc qdisc add dev "$MOSLAB_NAME-v2" root tbf rate 200mbit burst 256kb \
    latency 100ms || fail "tc"
start fast 48 96
move fast 2
check fast
grep -E -q "live, [0-9]+ rounds .*(no longer shrinks|nearly as fast)" \
    "$S/fast.log" || fail "fast: did not give up: $(tail -2 "$S/fast.log")"
stop
tc qdisc del dev "$MOSLAB_NAME-v2" root
grep -h "to node 2:" "$S"/*.log

# Incremental checkpoints: a chain of five, recovered elsewhere.
MOSRUN_OPTS="-C $S/ck" start ckpt 32 16
for i in 1 2 3 4; do
	lab_exec 1 mosmigrate "$pid" checkpoint > /dev/null ||
	    fail "ckpt: checkpoint $i"
done
lab_exec 1 kill -USR2 "$pid"
wait_for 10 grep -q '^paused gen' "$S/ckpt" || fail "ckpt: not paused"
want=$(sed -n 's/^paused gen //p' "$S/ckpt")
lab_exec 1 mosmigrate "$pid" checkpoint > /dev/null || fail "ckpt: the fifth"
stop
full=$(stat -c %s "$S/ck.1")
for i in 2 3 4 5; do
	[ $(($(stat -c %s "$S/ck.$i") * 4)) -lt "$full" ] ||
	    fail "ckpt: ck.$i is not smaller than the whole ck.1"
	"$OSM_BIN/moscr" info "$S/ck.$i" | grep -q "adds to: *ck.$((i - 1))" ||
	    fail "ckpt: ck.$i does not add to ck.$((i - 1))"
done
# (node 2 lists the guests before it until their ends are told)
wait_for 20 nprocs 0 2 || fail "ckpt: node 2 lists $(ps_list pid,command 2)"
"$MOSLAB" exec 2 sh -c "cd $S; mosrun -R $S/ck.5 > $S/rec 2>&1 < /dev/null" &
job=$!
wait_for 20 nprocs 1 2 || fail "ckpt: not recovered: $(cat "$S/rec")"
pid=$(ps_list pid 2)
# listed as soon as its deputy is; a signal before the restore is lost
recovered() {
	[ "$(lab_exec 2 cat "/proc/$pid/comm")" = livewriter ]
}
wait_for 20 recovered || fail "ckpt: not restored: $(cat "$S/rec")"
check ckpt 2
tail -2 "$S/ckpt" | grep -qx "check ok 8192 pages gen $want" ||
    fail "ckpt: not the last state (gen $want): $(tail -2 "$S/ckpt")"
lab_exec 2 kill -KILL "$pid"
wait "$job"
# -N 2: ck.3 and ck.5 are whole again; ck.4 needs ck.3.
rm -f "$S"/ck.*
MOSRUN_OPTS="-C $S/ck -N 2" start ckn 16 16
for i in 1 2 3 4 5; do
	lab_exec 1 mosmigrate "$pid" checkpoint > /dev/null ||
	    fail "ckn: checkpoint $i"
done
stop
[ "$(cd "$S" && echo ck.*)" = "ck.3 ck.4 ck.5" ] ||
    fail "ckn: kept $(cd "$S" && echo ck.*)"
"$OSM_BIN/moscr" info "$S/ck.5" | grep -q "adds to" && fail "ckn: ck.5 adds"
"$OSM_BIN/moscr" info "$S/ck.4" | grep -q "adds to: *ck.3" ||
    fail "ckn: ck.4 does not add to ck.3"

"$MOSLAB" down || fail "moslab down"
check_clean
echo PASS
