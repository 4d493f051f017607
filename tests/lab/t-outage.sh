#!/bin/sh
# A link outage: node 2's link goes down for 5 s while a process there
# forwards calls home every 100 ms. The calls stall, then resume; the
# process finishes with its file whole (nothing lost, nothing done twice).
# Then a link down past the home's 15 s timeout: the process is lost
# there, and goes on at home from a checkpoint taken on node 2; its copy
# on node 2 ends by itself, before the link comes back.
. "$(dirname "$0")/lib.sh"
P=${OSM_MOSRUN:-$OSM_BIN/../build/tests/mosrun}

lab_up 2 --cpus 0.5 --mem 256
wait_cluster 2
S=$(lab_dir)/share
mkdir -p "$S"
"$MOSLAB" exec 1 sh -c "mosrun -L -r 2 $P/counter 120 $S/out 100 \
    > $S/stdout 2> $S/stderr" &
job=$!
wait_for 10 away || fail "the counter is not on node 2"
sleep 2
ip link set "$MOSLAB_NAME-v2" down || fail "link down"
n0=$(grep -c . "$S/out")
sleep 5
n1=$(grep -c . "$S/out")
ip link set "$MOSLAB_NAME-v2" up || fail "link up"
[ "$n1" -le $((n0 + 1)) ] || fail "calls went on during the outage: $n0 -> $n1"
wait "$job" || fail "the counter failed: $(cat "$S/stderr")"
seq 120 > "$S/want"
echo done >> "$S/want"
cmp -s "$S/want" "$S/out" || fail "out: $(sort "$S/out" | uniq -d | head -3)"
cmp -s "$S/want" "$S/stdout" || fail "stdout differs"

# Down for good, as far as the home can tell.
"$MOSLAB" exec 1 sh -c "mosrun -L -r 2 -C $S/ck -A 0.01 $P/counter 150 \
    $S/out2 100 > $S/stdout2 2> $S/stderr2" &
job=$!
on2() {
	ps_list where,command | grep -qx "2 counter"
}
wait_for 10 on2 || fail "the second counter is not on node 2"
wait_for 10 test -e "$S/ck.2" || fail "no checkpoints away: $(ls "$S")"
ip link set "$MOSLAB_NAME-v2" down || fail "link down"
guest() {
	lab_exec 2 ps -eo user,comm | awk '$2 == "counter" && $1 >= 60000' |
	    grep -q .
}
guest || fail "no copy of the counter on node 2"
restarted() {
	grep -q "restarting it here from $S/ck\." "$S/stderr2"
}
wait_for 25 restarted || fail "no restart at home: $(cat "$S/stderr2")"
wait_for 15 sh -c "! $(command -v "$MOSLAB") exec 2 ps -eo user,comm |
    awk '\$2 == \"counter\" && \$1 >= 60000' | grep -q ." ||
    fail "the copy on node 2 runs on, cut off"
ip link set "$MOSLAB_NAME-v2" up || fail "link up"
wait "$job" || fail "the second counter failed: $(cat "$S/stderr2")"
seq 150 > "$S/want"
echo done >> "$S/want"
cmp -s "$S/want" "$S/out2" || fail "out2: $(sort "$S/out2" | uniq -d | head)"
cmp -s "$S/want" "$S/stdout2" || fail "stdout2 differs"

"$MOSLAB" down || fail "moslab down"
check_clean
echo PASS
