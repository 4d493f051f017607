#!/bin/sh
# Daemons restarted under running processes: restarting the home's mosd
# disturbs neither a process at home nor one away, and both show again in
# mosps; restarting the mosd of the node a guest runs on does not kill it.
# A process started while the home's mosd is down waits for it. Each
# process then finishes with its output whole.
. "$(dirname "$0")/lib.sh"
P=${OSM_MOSRUN:-$OSM_BIN/../build/tests/mosrun}

lab_up 2 --cpus 0.5 --mem 256
wait_cluster 2
S=$(lab_dir)/share
mkdir -p "$S"
# Two counters of 150 lines 100 ms apart: one at home, one on node 2.
"$MOSLAB" exec 1 sh -c "mosrun -L $P/counter 150 $S/home.out 100 \
    > /dev/null" &
a=$!
wait_for 10 nprocs 1 || fail "the first counter is not in mosps"
"$MOSLAB" exec 1 sh -c "mosrun -L -r 2 $P/counter 150 $S/away.out 100 \
    > /dev/null" &
b=$!
wait_for 10 nprocs 2 || fail "the second counter is not in mosps"
wait_for 10 away || fail "the second counter is not on node 2"

"$MOSLAB" stop 1 || fail "moslab stop 1"
# A process started while the home's mosd is down waits for it, and runs.
"$MOSLAB" exec 1 sh -c "mosrun -L $P/counter 20 $S/late.out 10 \
    > /dev/null" &
c=$!
sleep 1
"$MOSLAB" start 1 || fail "moslab start 1"
wait "$c" || fail "the counter started while mosd was down failed"
wait_for 10 nprocs 2 || fail "after the home restart: $(lab_exec 1 mosps)"
away || fail "after the home restart, not away: $(lab_exec 1 mosps)"

"$MOSLAB" stop 2 || fail "moslab stop 2"
sleep 1
"$MOSLAB" start 2 || fail "moslab start 2"
guest() {	# node 2 counts its guest again
	lab_exec 2 mosctl status | awk '$1 == 2 && $9 == 1' | grep -q .
}
wait_for 10 guest || fail "node 2's new mosd does not know its guest"

wait "$a" || fail "the home counter failed"
wait "$b" || fail "the away counter failed"
seq 150 > "$S/want"
echo done >> "$S/want"
cmp -s "$S/want" "$S/home.out" || fail "home.out: $(tail -2 "$S/home.out")"
cmp -s "$S/want" "$S/away.out" || fail "away.out: $(tail -2 "$S/away.out")"
seq 20 > "$S/want"
echo done >> "$S/want"
cmp -s "$S/want" "$S/late.out" || fail "late.out: $(tail -2 "$S/late.out")"

"$MOSLAB" down || fail "moslab down"
check_clean
echo PASS
