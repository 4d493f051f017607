#!/bin/sh
# moslab: every node is a machine in miniature — its own hostname, address,
# processes, /tmp and cgroup limits — nodes reach each other over the lab's
# bridge, exit statuses pass through exec, a node can crash and reboot, and
# down leaves nothing behind.
. "$(dirname "$0")/lib.sh"

expect 2 "usage" "$MOSLAB" up
expect 2 "expected a number of nodes" "$MOSLAB" up 0
expect 2 "has 2 values for 3 nodes" "$MOSLAB" up 3 --cpus 0.5,1
expect 2 "expected a memory size" "$MOSLAB" up 3 --mem 1x
expect 2 "bad lab name" "$MOSLAB" -n Bad status
expect 1 "no lab" "$MOSLAB" status

lab_up 3 --cpus 0.5 --mem 256
expect 1 "lab '$MOSLAB_NAME' is already up (3 nodes); run 'moslab down'" \
    "$MOSLAB" up 3
expect 1 "node 9 does not exist (the lab has 3 nodes)" "$MOSLAB" exec 9 true
expect 2 "expected a node number" "$MOSLAB" kill x

# What a node's processes find about their cgroup, as mosd will: the
# path, then CPU quota, period and memory limit.
limits='
if [ -e /sys/fs/cgroup/cgroup.controllers ]; then
	c=$(sed -n "s/^0:://p" /proc/self/cgroup)
	d=/sys/fs/cgroup$c
	echo "$c $(cat $d/cpu.max) $(cat $d/memory.max)"
else
	c=$(sed -n "s/^[0-9]*:cpu\(,cpuacct\)\{0,1\}://p" /proc/self/cgroup)
	m=$(sed -n "s/^[0-9]*:memory://p" /proc/self/cgroup)
	d=/sys/fs/cgroup/cpu$c
	echo "$c $(cat $d/cpu.cfs_quota_us) $(cat $d/cpu.cfs_period_us)" \
	    "$(cat /sys/fs/cgroup/memory$m/memory.limit_in_bytes)"
fi'

# Names, addresses, environment, limits, each seen from inside the node.
bin=$(cd "$OSM_BIN" && pwd -P)
for k in 1 2 3; do
	[ "$(lab_exec $k hostname)" = "node$k" ] || fail "node $k: hostname"
	lab_exec $k ip -4 -o addr show dev eth0 | grep -q " 10.77.0.$k/24 " ||
	    fail "node $k: no address 10.77.0.$k/24 on eth0"
	[ "$(lab_exec $k sh -c 'echo $OSM_NODE')" = "$k" ] ||
	    fail "node $k: OSM_NODE is not $k"
	[ "$(lab_exec $k sh -c 'command -v moslab')" = "$bin/moslab" ] ||
	    fail "node $k: bin/ is not first on PATH"
	got=$(lab_exec $k sh -c "$limits")
	[ "$got" = "/osmosis-$MOSLAB_NAME/node$k 50000 100000 268435456" ] ||
	    fail "node $k: cgroup, quota, period, memory limit: $got"
done
"$MOSLAB" status | grep -Eq "^2 +10\.77\.0\.2 +up +running:[0-9]+ +0\.50 +256M$" ||
    fail "status: $("$MOSLAB" status)"

# Processes: a node sees its own only, its init as PID 1.
lab_exec 2 sleep 60 2> /dev/null &
sleeper=$!
wait_for 5 sh -c "$MOSLAB exec 2 ps -e -o comm= | grep -qx sleep" ||
    fail "node 2 does not see its own sleep"
[ "$(lab_exec 1 ps -e -o comm= | grep -cx sleep)" -eq 0 ] ||
    fail "node 1 sees node 2's sleep"
[ "$(lab_exec 1 cat /proc/1/comm)" = moslab-init ] ||
    fail "node 1: PID 1 is not the node's init"
# init, mosd, sh, ls, grep; the host has many more.
n=$(lab_exec 1 sh -c 'ls /proc | grep -c "^[0-9]"')
[ "$n" -le 8 ] || fail "node 1 sees $n processes: $(lab_exec 1 ps -ef)"

# Files: node 1's /tmp is node 1's only.
f=/tmp/t-moslab.$$
lab_exec 1 sh -c "echo private > $f" || fail "cannot write $f in node 1"
[ "$(lab_exec 1 cat $f)" = private ] || fail "node 1 lost its $f"
lab_exec 2 test -e $f && fail "node 2 sees node 1's $f"
[ -e $f ] && fail "the host sees node 1's $f"

# Network: nodes talk over the bridge; the bridge has no host address.
serve='
import socket, sys
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((sys.argv[1], 7000))
s.listen()
s.settimeout(10)
c, a = s.accept()
print(c.recv(100).decode(), "from", a[0])'
send='
import socket, sys, time
for i in range(100):
    try:
        s = socket.create_connection((sys.argv[1], 7000), timeout=2)
        break
    except ConnectionRefusedError:
        time.sleep(0.05)
s.sendall(("hello from " + sys.argv[2]).encode())'
for pair in "1 2" "3 1"; do
	set -- $pair
	lab_exec $1 python3 -c "$serve" 10.77.0.$1 > "$(lab_dir)/net.out" &
	server=$!
	lab_exec $2 python3 -c "$send" 10.77.0.$1 "node$2" ||
	    fail "node $2 cannot reach node $1"
	wait $server || fail "node $1's server failed"
	[ "$(cat "$(lab_dir)/net.out")" = "hello from node$2 from 10.77.0.$2" ] ||
	    fail "node $1 got: $(cat "$(lab_dir)/net.out")"
done
[ -z "$(ip -4 -o addr show dev "$MOSLAB_NAME-br")" ] ||
    fail "the bridge has a host address"

# Exit statuses and signals pass through exec; so do pipes.
lab_exec 3 sh -c 'exit 7'
[ $? -eq 7 ] || fail "exit 7 came back as $?"
(lab_exec 3 sh -c 'kill -USR1 $$') 2> /dev/null
st=$?
[ "$(kill -l $st)" = USR1 ] || fail "death by SIGUSR1 came back as $st"
[ "$(echo through | lab_exec 3 cat)" = through ] || fail "pipe through exec"

# A crash takes every process of node 2 at once; start reboots it.
"$MOSLAB" kill 2 || fail "kill 2"
wait $sleeper 2> /dev/null
st=$?
[ "$(kill -l $st)" = KILL ] || fail "node 2's sleep ended with $st, not KILL"
"$MOSLAB" status | grep -Eq "^2 +10\.77\.0\.2 +dead +stopped " ||
    fail "status after kill: $("$MOSLAB" status)"
expect 1 "node 2 is dead" "$MOSLAB" exec 2 true
[ -z "$(lab_procs | while read -r p; do
    grep -l "/node2\$" /proc/$p/cgroup; done)" ] ||
    fail "processes of node 2 outlive the crash"
lab_exec 1 true || fail "node 1 went down with node 2"
"$MOSLAB" start 2 || fail "start 2"
"$MOSLAB" status | grep -Eq "^2 +10\.77\.0\.2 +up +running:" ||
    fail "status after start: $("$MOSLAB" status)"
[ "$(lab_exec 2 hostname)" = node2 ] || fail "node 2 rebooted without a name"

# stop and start mosd alone.
"$MOSLAB" stop 1 || fail "stop 1"
"$MOSLAB" status | grep -Eq "^1 +10\.77\.0\.1 +up +stopped " ||
    fail "status after stop: $("$MOSLAB" status)"
"$MOSLAB" start 1 || fail "start 1"
"$MOSLAB" status | grep -Eq "^1 +10\.77\.0\.1 +up +running:" ||
    fail "status after start: $("$MOSLAB" status)"

"$MOSLAB" down || fail "down"
check_clean
"$MOSLAB" down || fail "down with nothing to remove"

# A failed up removes what it made; down removes what a crashed one left.
expect 1 "mosd on node 1 exited at start" env MOSLAB_MOSD=/bin/false \
    "$MOSLAB" up 2
check_clean
ip netns add "$MOSLAB_NAME-n1" || fail "ip netns add"
expect 1 "lab '$MOSLAB_NAME' was left half-built ($MOSLAB_NAME-n1 exists)" \
    "$MOSLAB" up 2
"$MOSLAB" down || fail "down after a half-built lab"
check_clean

# Nodes of unequal size, with the state under /tmp: still seen in nodes.
MOSLAB_DIR=$(mktemp -d /tmp/t-moslab.XXXXXX)
export MOSLAB_DIR
lab_up 2 --cpus 0.2,1.5 --mem 128,512M
for want in "1 20000 100000 134217728" "2 150000 100000 536870912"; do
	k=${want%% *}
	got=$(lab_exec $k sh -c "$limits")
	[ "$got" = "/osmosis-$MOSLAB_NAME/node$want" ] ||
	    fail "node $k: cgroup, quota, period, memory limit: $got"
	lab_exec $k test -f "$(lab_dir)/cluster.conf" ||
	    fail "node $k does not see $(lab_dir) under /tmp"
done
# A lab whose nodes all died (as after a reboot) is not said to be up.
"$MOSLAB" kill 1 && "$MOSLAB" kill 2 || fail "kill both nodes"
expect 1 "lab '$MOSLAB_NAME' is already there, every node dead (2 nodes)" \
    "$MOSLAB" up 2
"$MOSLAB" down || fail "down"
check_clean
rmdir "$MOSLAB_DIR" || fail "moslab left files in $MOSLAB_DIR"

# A lab a killed run left behind (here: its state only) keeps its name; a
# test that would have taken the name takes another and leaves it alone.
MOSLAB_DIR=$(mktemp -d /tmp/t-moslab.XXXXXX)
export MOSLAB_DIR
# (The default names: an engineer's OSM_LAB_PREFIX left out.)
got=$(cd "$LAB_TESTS" && env -u OSM_LAB_PREFIX \
    sh -c 'mkdir "$MOSLAB_DIR/t$(($$ % 100000))" &&
	. ./lib.sh && echo "t$(($$ % 100000)) $MOSLAB_NAME"')
left=${got% *}
case $got in
t*" "t*) [ "$left" != "${got#* }" ] || fail "took the left lab's name: $got" ;;
*) fail "lib.sh named its lab '$got'" ;;
esac
[ -d "$MOSLAB_DIR/$left" ] || fail "the left lab $left is gone"
rmdir "$MOSLAB_DIR/$left" "$MOSLAB_DIR" || fail "left files in $MOSLAB_DIR"
echo "t-moslab: all checks passed"
