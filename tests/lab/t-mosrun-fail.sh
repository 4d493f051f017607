#!/bin/sh
# Failures while away: when the node a process runs on dies, the process
# at home ends with a clear message on its stderr and dies of SIGKILL, a
# status its parent cannot take for a normal exit; when the target dies
# in the middle of a move, the move fails and the process goes on at home,
# its memory intact.
. "$(dirname "$0")/lib.sh"
P=${OSM_MOSRUN:-$OSM_BIN/../build/tests/mosrun}

lab_up 3 --cpus 1 --mem 1024
wait_cluster 3
lab_exec 1 sh -c 'mkfifo /tmp/go' || fail "set-up"

start() {
	name=$1
	shift
	"$MOSLAB" exec 1 sh -c "$* > /tmp/$name 2> /tmp/$name.err \
	    < /dev/null; echo status \$? >> /tmp/$name" &
	job=$!
	wait_for 20 lab_exec 1 grep -q ready "/tmp/$name" ||
	    fail "$name: not ready"
	pid=$(ps_list pid | head -n 1)
}

# The node it runs on dies.
start lost "mosrun $P/walker /tmp/go wait"
lab_exec 1 mosmigrate "$pid" 2 || fail "lost: move"
"$MOSLAB" kill 2 || fail "moslab kill 2"
wait "$job"
lab_exec 1 grep -qx "status 137" /tmp/lost ||
    fail "lost: parent saw $(lab_exec 1 tail -1 /tmp/lost), not SIGKILL"
lab_exec 1 grep -q "mosrun: process $pid (walker) was lost with node 2" \
    /tmp/lost.err || fail "lost: no message: $(lab_exec 1 cat /tmp/lost.err)"

# The target dies during the move: the process stays home, whole.
start big "mosrun $P/walker /tmp/go big 600"
lab_exec 1 mosmigrate "$pid" 3 > "$(lab_dir)/mig.out" 2>&1 &
mig=$!
sleep 0.3
"$MOSLAB" kill 3 || fail "moslab kill 3"
wait "$mig" && fail "big: the move to a dead node succeeded"
echo "mosmigrate said: $(cat "$(lab_dir)/mig.out")"
[ "$(where "$pid")" = 1 ] || fail "big: not home after the failed move"
lab_exec 1 sh -c 'echo go > /tmp/go'
wait "$job"
lab_exec 1 grep -qx "memory intact" /tmp/big ||
    fail "big: $(lab_exec 1 cat /tmp/big /tmp/big.err)"
lab_exec 1 grep -qx "status 0" /tmp/big || fail "big: bad status"

"$MOSLAB" down || fail "moslab down"
check_clean
echo PASS
