#!/bin/sh
# Not in make check yet (issue 18): signals through the ways out and home
# (docs/REMOTE.md, "What the home sent before", "Signal floods"). A process
# counting the SIGRTMIN values 1..N that another process at home queues to
# it, 2,000 a second, moved out and home (RT_HOW: "" live, --post-copy)
# over and over while they come: every value must come exactly once. It
# fails today: values lost and doubled on the moves. Run as a lab test:
#	OSM_BIN=... OSM_MOSRUN=... tests/lab/run sigflood.sh
. "$(dirname "$0")/lib.sh"
P=${OSM_MOSRUN:-$OSM_BIN/../build/tests/mosrun}
lab_up 2 --cpus 1 --mem 1536
wait_cluster 2
S=$(lab_dir)/share
mkdir -p "$S"
N=${RT_N:-10000}
"$MOSLAB" exec 1 bash -c "cd $S; for f in \$(ls /proc/\$\$/fd); do \
    [ \$f -gt 2 ] && eval \"exec \$f>&-\"; done 2>/dev/null; \
    OSM_DEPUTY_LOG=$S/rt.log mosrun -L $P/sigrt take $N > $S/rt 2>&1 \
    < /dev/null" &
job=$!
wait_for 20 grep -qx ready "$S/rt" || fail "rt: not ready"
pid=$(pid_of sigrt)
[ -n "$pid" ] || fail "rt: not in mosps"
lab_exec 1 "$P/sigrt" send "$pid" "$N" ${RT_GAP:-500} > "$S/rt.send" 2>&1 &
snd=$!
moves=0
t0=$(_ms)
while kill -0 "$snd" 2>/dev/null && [ $moves -lt 16 ]; do
	for how in ${RT_HOW:-""}; do
		lab_exec 1 mosmigrate $how "$pid" 2 ||
		    fail "rt: move $how to 2: $(tail -3 "$S/rt.log")"
		[ "$(where "$pid")" = 2 ] && [ -n "$(guest_pid sigrt 2)" ] ||
		    fail "rt: not on node 2 after the move $how"
		lab_exec 1 mosmigrate $how "$pid" home ||
		    fail "rt: move $how home: $(tail -3 "$S/rt.log")"
		[ "$(where "$pid")" = 1 ] || fail "rt: not home after $how"
		moves=$((moves + 2))
	done
done
wait "$snd" || fail "rt: sender: $(cat "$S/rt.send")"
echo "rt: sent in $(($(_ms) - t0)) ms"
again=$(grep -c "signals its copy had not taken sent again" "$S/rt.log")
echo "rt: $moves moves while $N signals came; $again ways home sent some again"
[ $moves -ge 6 ] || fail "rt: only $moves moves while the signals came"
lab_exec 1 kill -USR1 "$pid"
wait_for 60 grep -q "^once" "$S/rt" || fail "rt: no count: $(tail -3 "$S/rt")"
wait "$job"
grep -qx "once $N twice-or-more 0 missing 0 bad 0" "$S/rt" ||
    fail "rt: $(cat "$S/rt")"
"$MOSLAB" down || fail "moslab down"
check_clean
echo PASS
