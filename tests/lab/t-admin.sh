#!/bin/sh
# The node owner's commands: block refuses new guests (mosmigrate says
# why) and noblock takes them again; expel sends the guests home; bring
# calls home every process homed here; stay keeps the balancer from moving
# anything away, lstay only the node's own processes; status shows the
# flags here and, through gossip, elsewhere; the commands are root's.
. "$(dirname "$0")/lib.sh"
P=${OSM_MOSRUN:-$OSM_BIN/../build/tests/mosrun}

lab_up 3 --cpus 0.5 --mem 256
wait_cluster 3
lab_exec 1 sh -c 'mkfifo /tmp/go' || fail "set-up"

# start K CMD...: a migratable process started on node K; its pid in $pid.
start() {
	k=$1
	shift
	n=$(($(lab_exec "$k" mosps -a | wc -l) + 1))
	[ "$n" -gt 1 ] || n=2
	"$MOSLAB" exec "$k" "$@" > /dev/null 2>&1 &
	wait_for 10 nprocs "$n" "$k" || fail "$*: not in mosps"
	pid=$(lab_exec "$k" mosps -a | awk 'NR > 1 { p = $1 } END { print p }')
}
where() {	# where K PID
	lab_exec "$1" mosps -a | awk -v p="$2" '$1 == p { print $3 }'
}
is_at() {
	[ "$(where "$1" "$2")" = "$3" ]
}

# Root only, and status shows the flags.
expect 1 "permission denied" lab_exec 2 setpriv --reuid 4242 --regid 4242 \
    --clear-groups mosctl block
expect 0 "node flags: block" lab_exec 2 mosctl block
lab_exec 2 mosctl status | grep -qx "this node: 2, flags: block" ||
    fail "status on node 2: $(lab_exec 2 mosctl status)"
flagged() {
	lab_exec 1 mosctl status | awk '$1 == 2 && $NF == "block"' | grep -q .
}
wait_for 5 flagged || fail "node 1 does not see node 2 blocked"

# block, noblock
start 1 mosrun -L "$P/walker" /tmp/go wait
w=$pid
expect 1 "node 2 takes no new guests" lab_exec 1 mosmigrate "$w" 2
expect 0 "node flags: none" lab_exec 2 mosctl noblock
lab_exec 1 mosmigrate "$w" 2 || fail "no move to node 2 after noblock"

# expel: the guest comes home
expect 0 "1 guest sent home" lab_exec 2 mosctl expel
wait_for 10 is_at 1 "$w" here || fail "expel: the walker is at $(where 1 "$w")"
grep -q "node 2 sends it home" "$(lab_dir)/node1/mosd.log" 2>/dev/null ||
    true	# the deputy logs to syslog; mosps is the proof

# bring: both away come back
lab_exec 1 mosmigrate "$w" 3 || fail "move to 3"
start 1 mosrun -L -r 2 "$P/walker" /tmp/go wait
v=$pid
wait_for 10 is_at 1 "$v" 2 || fail "the second walker is not on node 2"
expect 0 "2 processes called home" lab_exec 1 mosctl bring
wait_for 10 is_at 1 "$w" here || fail "bring: first walker at $(where 1 "$w")"
wait_for 10 is_at 1 "$v" here || fail "bring: second walker at $(where 1 "$v")"

# stay: a CPU-bound job on node 1 with idle nodes about stays home...
expect 0 "node flags: stay" lab_exec 1 mosctl stay
start 1 mosrun sh -c 'while :; do :; done'
s=$pid
start 1 mosrun sh -c 'while :; do :; done'
t=$pid
sleep 5
is_at 1 "$s" here && is_at 1 "$t" here ||
    fail "stay: moved away: $(lab_exec 1 mosps -a)"
# ... and goes once allowed.
expect 0 "node flags: none" lab_exec 1 mosctl nostay
moved() {
	! is_at 1 "$s" here || ! is_at 1 "$t" here
}
wait_for 10 moved || fail "nostay: nothing moved: $(lab_exec 1 mosps -a)"

# lstay on node 3: its own job stays, a guest there may still go. Node 3
# runs its own spinner and, from node 1, both of node 1's (moved there).
for p in $s $t; do
	is_at 1 "$p" 3 || lab_exec 1 mosmigrate "$p" 3 || fail "move $p to 3"
done
expect 0 "node flags: lstay" lab_exec 3 mosctl lstay
start 3 mosrun sh -c 'while :; do :; done'
u=$pid
left() {
	! is_at 1 "$s" 3 || ! is_at 1 "$t" 3
}
wait_for 15 left || fail "lstay: no guest left node 3: $(lab_exec 1 mosps -a)"
sleep 3
is_at 3 "$u" here || fail "lstay: node 3's own job moved to $(where 3 "$u")"

"$MOSLAB" down || fail "moslab down"
check_clean
echo PASS
