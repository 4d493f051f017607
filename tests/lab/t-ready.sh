#!/bin/sh
# A lab that is ready when it says so: from a shell holding extra
# descriptors (one of them the pipe of a command substitution), moslab up
# returns, and at once mosmigrate moves a process to node 2, where it then
# runs. A node never heard of since a mosd started shows as unknown, not
# down, in mosctl status (text and JSON) and mosmon -b; moslab start
# returns once the node it started and the others see each other, and
# names the node not seen when that does not come.
. "$(dirname "$0")/lib.sh"
P=${OSM_MOSRUN:-$OSM_BIN/../build/tests/mosrun}

exec 7< /dev/null
# mosd must not keep the substitution's pipe (fd 8 here), or this hangs.
out=$(timeout 60 "$MOSLAB" up 3 --cpus 0.5 --mem 256 8>&1) ||
    fail "moslab up 3 failed or hung: $out"
trap lab_cleanup EXIT
case $out in *"is up: 3 nodes"*) ;; *) fail "moslab up said: $out" ;; esac

# In node 1, right away: start a walker, wait only until its deputy has
# registered it, move it.
lab_exec 1 sh -c "mkfifo /tmp/go
	mosrun -L $P/walker /tmp/go wait > /dev/null 2>&1 &
	pid=\$!
	n=0
	until mosps -p \$pid > /dev/null 2>&1; do
		n=\$((n + 1)); [ \$n -lt 200 ] || exit 3; sleep 0.05
	done
	mosmigrate \$pid 2" > "$(lab_dir)/migrate.out" 2>&1 ||
    fail "mosmigrate right after moslab up: $(cat "$(lab_dir)/migrate.out")"
pid=$(ps_list pid | head -n 1)
[ "$(where "$pid")" = 2 ] || fail "the walker is at $(where "$pid"), not 2"
# ... and it really runs there: a guest process on node 2, as a guest uid
lab_exec 2 ps -eo user,comm | awk '$2 == "walker" && $1 >= 60000' |
    grep -q . || fail "no walker guest on node 2: $(lab_exec 2 ps -ef)"

# Node 3's mosd stops, then 1 and 2 start afresh: neither has heard of 3.
for k in 3 1 2; do
	"$MOSLAB" stop "$k" || fail "moslab stop $k"
done
for k in 1 2; do
	"$MOSLAB" start "$k" || fail "moslab start $k"
done
for k in 1 2; do
	lab_exec "$k" mosctl status --json | pyjson "d['active'] == 2 and
	    [n['state'] for n in d['nodes']] == ['up', 'up', 'unknown'] and
	    d['nodes'][2]['age_ms'] is None" ||
	    fail "node $k's view: $(lab_exec "$k" mosctl status --json)"
done
lab_exec 1 mosctl status | awk '$1 == 3 && $3 == "unknown" { ok = 1 }
    END { exit !ok }' || fail "mosctl status: $(lab_exec 1 mosctl status)"
lab_exec 1 mosmon -b | grep -qx "3 unknown - - - - - - - - -" ||
    fail "mosmon -b: $(lab_exec 1 mosmon -b)"
# (the walker's deputy registers again with node 1's new mosd)
wait_for 10 nprocs 1 || fail "the walker is not back in mosps"
expect 1 "node 3 is down" lab_exec 1 mosmigrate "$pid" 3

# moslab start 3 returns once all three see each other up.
"$MOSLAB" start 3 || fail "moslab start 3"
for k in 1 2 3; do
	lab_exec "$k" mosctl status --json | pyjson "d['active'] == 3" ||
	    fail "after start 3, node $k: $(lab_exec "$k" mosctl status)"
done
lab_exec 1 mosmigrate "$pid" 3 || fail "no move to node 3 after its start"

# A node that never answers is named, within --wait: node 3 cut off, node
# 1 started afresh has not heard from it (node 2 may have told it of node
# 3's last, stale, entry: down rather than unknown).
ip link set "$MOSLAB_NAME-v3" down || fail "link down"
"$MOSLAB" stop 1 || fail "moslab stop 1"
# (until node 2 gives up on node 3, it would tell node 1 of it)
n2_lost_3() {
	[ "$(node_field 2 3 state)" = down ]
}
wait_for 15 n2_lost_3 || fail "node 2 still sees node 3"
expect 1 "not ready after 2000 ms: node 1 does not see node" \
    "$MOSLAB" start 1 --wait 2
case $_out in
*"3 (unknown) up"* | *"3 (down) up"*) ;;
*) fail "start 1 said: $_out" ;;
esac
ip link set "$MOSLAB_NAME-v3" up || fail "link up"

"$MOSLAB" down || fail "moslab down"
check_clean
echo PASS
