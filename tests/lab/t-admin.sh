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
	n=$(($(ps_list pid "$k" | wc -l) + 1))
	"$MOSLAB" exec "$k" "$@" > /dev/null 2>&1 &
	wait_for 10 nprocs "$n" "$k" || fail "$*: not in mosps"
	pid=$(ps_list pid "$k" | tail -n 1)
}
is_at() {	# is_at K PID NODE: node K sees PID on NODE
	[ "$(where "$2" "$1")" = "$3" ]
}

# Root only, and status shows the flags.
expect 1 "permission denied" lab_exec 2 setpriv --reuid 4242 --regid 4242 \
    --clear-groups mosctl block
expect 0 "node flags: block" lab_exec 2 mosctl block
lab_exec 2 mosctl status | grep -qx "this node: 2, flags: block" ||
    fail "status on node 2: $(lab_exec 2 mosctl status)"
flagged() {
	[ "$(node_field 1 2 flags)" = "['block']" ]
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
wait_for 10 is_at 1 "$w" 1 || fail "expel: the walker is at $(where "$w")"
# (the guest agent logs to its node's mosd log; moves are live)
homelive() {	# homelive K PID: node K's guest agent took PID home live
	grep -q "guest $2@1: home live" "$(lab_dir)/node$1/mosd.log"
}
wait_for 5 homelive 2 "$w" || fail "expel: not live: $(grep "$w@1" \
    "$(lab_dir)/node2/mosd.log")"

# bring: both away come back
lab_exec 1 mosmigrate "$w" 3 || fail "move to 3"
start 1 mosrun -L -r 2 "$P/walker" /tmp/go wait
v=$pid
wait_for 10 is_at 1 "$v" 2 || fail "the second walker is not on node 2"
expect 0 "2 processes called home" lab_exec 1 mosctl bring
wait_for 10 is_at 1 "$w" 1 || fail "bring: first walker at $(where "$w")"
wait_for 10 is_at 1 "$v" 1 || fail "bring: second walker at $(where "$v")"
wait_for 5 homelive 3 "$w" || fail "bring: $w not home live"
wait_for 5 homelive 2 "$v" || fail "bring: $v not home live"

# stay: a CPU-bound job on node 1 with idle nodes about stays home...
expect 0 "node flags: stay" lab_exec 1 mosctl stay
S=$(lab_dir)/share
mkdir -p "$S"
start 1 env OSM_DEPUTY_LOG=$S/s.log mosrun sh -c 'while :; do :; done'
s=$pid
start 1 env OSM_DEPUTY_LOG=$S/t.log mosrun sh -c 'while :; do :; done'
t=$pid
sleep 5
is_at 1 "$s" 1 && is_at 1 "$t" 1 ||
    fail "stay: moved away: $(lab_exec 1 mosps -a)"
# ... and goes once allowed.
expect 0 "node flags: none" lab_exec 1 mosctl nostay
moved() {
	! is_at 1 "$s" 1 || ! is_at 1 "$t" 1
}
wait_for 10 moved || fail "nostay: nothing moved: $(lab_exec 1 mosps -a)"
# the balancer's moves are live too
wait_for 5 grep -q "to node [23]: live" "$S/s.log" "$S/t.log" ||
    fail "balancer: not a live move: $(cat "$S/s.log" "$S/t.log")"

# lstay on node 3: its own job stays, a guest there may still go. Node 3
# runs its own spinner and, from node 1, both of node 1's (moved there).
# The balancer may move one on meanwhile ("did not stay on node 3"): ask
# again until both are there.
on3() {
	for p in $s $t; do
		is_at 1 "$p" 3 || lab_exec 1 mosmigrate "$p" 3 > /dev/null 2>&1
	done
	is_at 1 "$s" 3 && is_at 1 "$t" 3
}
wait_for 20 on3 || fail "move to 3: $(lab_exec 1 mosps -a)"
expect 0 "node flags: lstay" lab_exec 3 mosctl lstay
start 3 mosrun sh -c 'while :; do :; done'
u=$pid
left() {
	! is_at 1 "$s" 3 || ! is_at 1 "$t" 3
}
wait_for 15 left || fail "lstay: no guest left node 3: $(lab_exec 1 mosps -a)"
sleep 3
is_at 3 "$u" 3 || fail "lstay: node 3's own job moved to $(where "$u" 3)"

"$MOSLAB" down || fail "moslab down"
check_clean
echo PASS
