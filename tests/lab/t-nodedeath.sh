#!/bin/sh
# The node a checkpointed process runs on dies: the process goes on at
# home from its last checkpoint, one taken while it ran there, says so on
# its stderr, and finishes with its file as after an unbroken run (what it
# wrote since the checkpoint, it writes again at the same offsets). The
# restarted process moves on again, to node 3. Without a checkpoint the process is killed with a message
# (t-mosrun-fail).
. "$(dirname "$0")/lib.sh"
P=${OSM_MOSRUN:-$OSM_BIN/../build/tests/mosrun}

lab_up 3 --cpus 0.5 --mem 256
wait_cluster 3
S=$(lab_dir)/share
mkdir -p "$S"
"$MOSLAB" exec 1 sh -c "mosrun -L -C $S/ck -A 0.01 -N 2 $P/counter 100 \
    $S/out 100 > $S/stdout 2> $S/stderr" &
job=$!
wait_for 10 nprocs 1 || fail "the counter is not in mosps"
pid=$(ps_list pid | head -n 1)
two() {
	[ -e "$S/ck.2" ]
}
wait_for 10 two || fail "no checkpoints: $(ls "$S")"
lab_exec 1 mosmigrate "$pid" 2 || fail "move to node 2"
last() {
	ls "$S" | sed -n 's/^ck\.\([0-9]*\)$/\1/p' | sort -n | tail -1
}
k=$(last)
# Two checkpoints taken away: the process stays on node 2 for them.
later() {
	[ "$(last)" -ge $((k + 2)) ]
}
wait_for 10 later || fail "no checkpoints away: $(ls "$S")"
[ "$(where "$pid")" = 2 ] ||
    fail "the counter left node 2: $(lab_exec 1 mosps)"
n=$(grep -c . "$S/out")
k=$(last)
"$MOSLAB" kill 2 || fail "moslab kill 2"
restarted() {
	grep -q "restarting it here" "$S/stderr"
}
wait_for 10 restarted || fail "no restart: $(cat "$S/stderr")"
from=$(sed -n "s|.*was lost with node 2: .*restarting it here from $S/ck\.||p" \
    "$S/stderr")
[ -n "$from" ] && [ "$from" -ge "$k" ] ||
    fail "no restart from ck.$k or later: $(cat "$S/stderr")"
lab_exec 1 mosmigrate "$pid" 3 || fail "the restarted counter: move to node 3"
[ "$(where "$pid")" = 3 ] ||
    fail "the restarted counter is not on node 3: $(lab_exec 1 mosps)"
wait "$job" || fail "the counter failed: $(cat "$S/stderr")"
seq 100 > "$S/want"
echo done >> "$S/want"
cmp -s "$S/want" "$S/out" || fail "out after the restart: $(tail -2 "$S/out")"
[ "$n" -lt 100 ] || fail "the counter had finished before the kill"

"$MOSLAB" down || fail "moslab down"
check_clean
echo PASS
