#!/bin/sh
# A start away (docs/PERFORMANCE.md, "Starting and ending away"): each
# node's parent keeps two guest agents started ahead, root's until a move
# takes one (and another is started in its place); the files a move maps
# are hashed once a node, by its mosd (mosd/hashes.c), and answered from
# there to the deputy and the guest agent of the next one
# (file_hashes_known, file_hashes_made), each file by its identity: a
# file changed less than two seconds ago is not kept, and a file touched
# is hashed again. Every run checked to have ended on node 2.
. "$(dirname "$0")/lib.sh"

lab_up 2
wait_cluster 2
D=$(lab_dir)/start
mkdir -p "$D" && chmod 755 "$(lab_dir)" "$D" || fail "mkdir $D"
L2=$(lab_dir)/node2/mosd.log
U="setpriv --reuid 4242 --regid 4242 --clear-groups"

# spares NODE: the pids of the parent's spare guest agents there, root's
spares() {
	_p=$(cat "$(lab_dir)/node$1/mosd.pid")
	for _c in $(cat /proc/$_p/task/$_p/children); do
		[ "$(cat /proc/$_c/comm 2>/dev/null)" = mosd-guest ] &&
		    awk '/^Uid:/ { exit !($2 == 0) }' "/proc/$_c/status" &&
		    echo "$_c"
	done
}
# away_run PROGRAM: run it as a user with mosrun -L -r 2; it must end on node 2
ends=0
away_run() {
	lab_exec 1 $U mosrun -L -r 2 "$@" || fail "$*: failed away"
	ends=$((ends + 1))
	wait_for 10 sh -c "[ \$(grep -c 'ended: status' '$L2') -ge $ends ]" ||
	    fail "$*: no end on node 2"
}
both() { echo "$(counter "$1" 1) $(counter "$1" 2)"; }
known() { both file_hashes_known; }
made() { both file_hashes_made; }
# more A B: every number of B, the same place's of A, at least N more
more() {
	echo "$1 $2" | awk -v n="$3" '{ exit !($3 >= $1 + n && $4 >= $2 + n) }'
}
# made_more A N: mosd has made N more hashes than A says, on both nodes
made_more() { more "$1" "$(made)" "$2"; }

# --- the spares ------------------------------------------------------------
before=$(spares 2)
[ "$(echo "$before" | grep -c .)" = 2 ] ||
    fail "node 2's parent has not two spare guest agents: $before"
# (the log names them by their pids in node 2's namespace)
ns=
for s in $before; do
	ns="$ns $(awk '/^NSpid:/ { print $NF }' "/proc/$s/status")"
done
away_run /bin/true
served=
for n in $ns; do
	grep -q "guest agent $n (uid [0-9]*) started for" "$L2" && served=$n
done
[ -n "$served" ] || fail "no spare ($ns) served the move"
_spares2() { [ "$(spares 2 | grep -c .)" = 2 ] &&
    [ "$(spares 2)" != "$before" ]; }
wait_for 10 _spares2 || fail "the spares not made two again: $(spares 2)"
echo "spares: $served (in node 2) served the move; then $(spares 2 | xargs)"

# --- files' hashes ----------------------------------------------------------
# /bin/true's three files (itself, libc, ld.so) were hashed by each mosd
# after the first run: the second is answered them all, on both nodes.
wait_for 10 made_more "0 0" 3 || fail "no hash made: $(made)"
k=$(known) m=$(made)
away_run /bin/true
more "$k" "$(known)" 3 || fail "true again: hashes known $k, then $(known)"
[ "$(made)" = "$m" ] || fail "true again: hashed anew: $m, then $(made)"
echo "hashes: made $m, known $k then $(known)"

# A file changed just now is not kept: its hash is made by the agents,
# and by mosd only once it has settled.
cp /bin/true "$D/true" && chmod 755 "$D/true" || fail "cp"
k=$(known) m=$(made)
away_run "$D/true"
more "$k" "$(known)" 2 || fail "fresh: libraries not known: $k, $(known)"
sleep 0.5
[ "$(made)" = "$m" ] || fail "fresh: a file changed just now kept: $(made)"
sleep 2
away_run "$D/true"
wait_for 10 made_more "$m" 1 || fail "settled: not hashed: $m, $(made)"
k=$(known) m=$(made)
away_run "$D/true"
more "$k" "$(known)" 3 || fail "settled: not known: $k, $(known)"
[ "$(made)" = "$m" ] || fail "settled: hashed anew: $m, $(made)"
echo "a fresh file: kept once settled, made $m"

# Touched (a new change time), it is another identity: hashed again.
sleep 0.1
touch "$D/true"
sleep 2.2
away_run "$D/true"
wait_for 10 made_more "$m" 1 ||
    fail "touched: not hashed anew: $m, $(made)"
echo "touched: hashed anew, made $(made)"
echo PASS
