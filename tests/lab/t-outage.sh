#!/bin/sh
# A link outage: node 2's link goes down for 5 s while a process there
# forwards calls home every 100 ms. The calls stall, then resume; the
# process finishes with its file whole (nothing lost, nothing done twice).
. "$(dirname "$0")/lib.sh"
P=${OSM_MOSRUN:-$OSM_BIN/../build/tests/mosrun}

lab_up 2 --cpus 0.5 --mem 256
wait_cluster 2
S=$(lab_dir)/share
mkdir -p "$S"
"$MOSLAB" exec 1 sh -c "mosrun -L -r 2 $P/counter 120 $S/out 100 \
    > $S/stdout 2> $S/stderr" &
job=$!
away() {
	lab_exec 1 mosps | awk 'NR > 1 && $3 == "2"' | grep -q .
}
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

"$MOSLAB" down || fail "moslab down"
check_clean
echo PASS
