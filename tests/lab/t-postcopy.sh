#!/bin/sh
# Post-copy moves (docs/REMOTE.md, "Post-copy"). A process keeping
# 256 MiB in a known pattern and rewriting it is moved 1 -> 2 -> home
# post-copy: it runs on node 2 at once (its CPU charged there), its memory
# is exact after each move, and both ends say pages came on fault and
# were pushed. A process that unmaps, maps, moves and drops its memory all
# the time moves post-copy to node 2 and home 15 times, exact after each
# move. python3 (LANG=C.UTF-8, printing) moves post-copy to node 2 and
# home 5 times, and ends exact. Then the link is shaped so that the pages
# of a way home take seconds, and node 2's guest agent, the source, is
# killed during them: with a checkpoint the process goes on at home from
# it, exact; without one it ends with a message on its stderr, and
# nothing of it is left on either node; the same on a way home by copy,
# its message saying it was called home. The target killed during a way
# out: the process goes on from its checkpoint. The deputy, source of a
# way out, killed: the copy ends, P goes on at home.
. "$(dirname "$0")/lib.sh"
P=${OSM_MOSRUN:-$OSM_BIN/../build/tests/mosrun}
MOSRUN_OPTS=

lab_up 2 --cpus 1 --mem 1536
wait_cluster 2
S=$(lab_dir)/share
mkdir -p "$S"
G2=$(lab_dir)/node2/mosd.log

. "$LAB_TESTS/livewriter.sh"
# check NAME [NODE]: ask for a check of its whole memory
check() {
	lw_check "$@"
}
# move NAME NODE: post-copy, and check where it is
move() {
	lab_exec 1 mosmigrate --post-copy "$pid" "$2" ||
	    fail "$1: move to $2: $(tail -3 "$S/$1.log")"
	_w=$(where "$pid")
	case $2 in
	home)	[ "$_w" = 1 ] || fail "$1: at $_w after the move home" ;;
	*)	[ "$_w" = "$2" ] || fail "$1: at $_w after the move to $2"
		[ -n "$(guest_pid livewriter 2)" ] ||
		    fail "$1: no livewriter on node 2" ;;
	esac
}
stop() {
	lab_exec 1 kill -KILL "$pid"
	wait "$job"
}
# n_of TEXT FIELD: the number before FIELD in TEXT
n_of() {
	echo "$1" | sed -n "s/.* \([0-9]*\) $2.*/\1/p"
}

start big 256 16
check big
cpu0=$(node_cpu 2)
move big 2
check big
# It ran on node 2: its pages taken in there and its check of 256 MiB
# cost node 2 CPU, about 200 ms here (a node with nothing to run uses a
# few ms a second, its mosd's gossip): more than 100 ms.
cpu1=$(node_cpu 2)
[ $((cpu1 - cpu0)) -gt 100000000 ] ||
    fail "big: node 2 used $((cpu1 - cpu0)) ns only"
echo "big: node 2 used $(((cpu1 - cpu0) / 1000000)) ms of CPU for the move and the check"
out=$(grep "to node 2: post-copy" "$S/big.log") ||
    fail "big: not post-copy: $(tail -3 "$S/big.log")"
in=$(grep "guest $pid@1: post-copy done" "$G2") ||
    fail "big: node 2 says no post-copy: $(grep "$pid@1" "$G2" | tail -3)"
echo "out: ${out#*: }"
echo "in:  ${in#*: }"
[ "$(n_of "$in" "pages on fault")" -gt 0 ] || fail "big: no page on fault"
[ "$(n_of "$in" "pushed")" -gt 1000 ] || fail "big: nothing pushed"
move big home
check big
home=$(grep "is home post-copy" "$S/big.log") ||
    fail "big: not home post-copy: $(tail -3 "$S/big.log")"
echo "home: ${home#*: }"
[ "$(n_of "$home" "pages on fault")" -gt 0 ] || fail "big: home, no fault"
[ "$(n_of "$home" "pushed")" -gt 1000 ] || fail "big: home, nothing pushed"
grep -q "guest $pid@1: home post-copy" "$G2" ||
    fail "big: node 2 did not send it home post-copy"
stop

# The address space changing while the pages come, moved on and on: a
# fault on the first page of the source's last run once lost the rest of
# that run (a table read as zeros), a move in a few; 15 round trips.
start churn 24 16 churn
i=0
while [ $i -lt 15 ]; do
	for to in 2 home; do
		move churn $to
		check churn
	done
	i=$((i + 1))
done
grep "guest $pid@1: post-copy done" "$G2" | grep -v " 0 dropped, 0 moved" |
    grep -q . || fail "churn: nothing dropped or moved while the pages came"
stop

# The policy asks for post-copy (moves post): a mosmigrate that does not
# say how moves so, both ways; then 'moves live': live again.
policy() {
	printf '%s\n' "$1" > "$(lab_dir)/policy.conf"
	_n=$(grep -c "reload: " "$(lab_dir)/node1/mosd.log")
	kill -HUP "$(cat "$(lab_dir)/node1/mosd.pid")"
	wait_for 10 sh -c "[ \$(grep -c 'reload: ' $(lab_dir)/node1/mosd.log) -gt $_n ]" ||
	    fail "policy: no reload"
}
policy "default moves post"
start pol 16 0
lab_exec 1 mosmigrate "$pid" 2 || fail "pol: to 2"
grep -q "guest $pid@1 (livewriter) runs here as .*, its pages following" \
    "$G2" || fail "pol: not post-copy: $(grep "$pid@1" "$G2" | tail -2)"
lab_exec 1 mosmigrate "$pid" home || fail "pol: home"
# (the guest logs its way home once the last page is in: after the home)
wait_for 10 grep -q "guest $pid@1: home post-copy" "$G2" ||
    fail "pol: not home post-copy"
check pol
policy "default moves live"
lab_exec 1 mosmigrate "$pid" 2 || fail "pol: to 2 again"
lab_exec 1 mosmigrate "$pid" home || fail "pol: home again"
wait_for 10 grep -q "guest $pid@1: home live" "$G2" || fail "pol: not home live"
check pol
stop
policy ""

# Threads: three of them read all of its memory while the pages come.
start thr 64 16 threads
move thr 2
check thr
[ "$(ps_field "$pid" thr)" = 4 ] || fail "thr: $(ps_field "$pid" thr) threads"
in=$(grep "guest $pid@1: post-copy done" "$G2") || fail "thr: no post-copy"
echo "thr: ${in#*: }"
[ "$(n_of "$in" threads)" -ge 2 ] || fail "thr: faults from one thread only"
move thr home
check thr
stop

# python3, under LANG=C.UTF-8 (glibc maps its gconv cache shared), printing
# all the time, from a shell holding one more descriptor: moved post-copy
# to node 2 and home 5 times. glibc keeps each thread's rseq area in its
# TCB, which the kernel writes once the target registers the area: left
# for later, that page was zeros there, and python3 died of SIGSEGV at
# once; the shared mapping refused the move; a reply the home sent as it
# was called home lost it. Each time its pid is on node 2, and its
# output is exact.
cat > "$S/py.py" <<'EOF'
import os, sys, time
n = 0
for i in range(1500):
    n = (n * 31 + sum(range(i % 97 * 40))) % 1000000007
    print(i, n, "\u00e9", flush=True)
    time.sleep(0.002)
while not os.path.exists(sys.argv[1]):
    time.sleep(0.01)
print("done", n)
EOF
touch "$S/py.end"
lab_exec 1 sh -c "cd $S && LANG=C.UTF-8 /usr/bin/python3 py.py py.end \
    > py.want 2>&1" || fail "py: at home: $(cat "$S/py.want")"
rm "$S/py.end"
lab_exec 1 sh -c "cd $S && exec 7</dev/null && LANG=C.UTF-8 \
    OSM_DEPUTY_LOG=$S/py.log mosrun -L /usr/bin/python3 py.py py.end \
    > py.out 2>&1" &
job=$!
wait_for 20 grep -q "^1 " "$S/py.out" || fail "py: $(cat "$S/py.out")"
pid=$(pid_of python3)
[ -n "$pid" ] || fail "py: not in mosps"
i=0
while [ $i -lt 5 ]; do
	lab_exec 1 mosmigrate --post-copy "$pid" 2 ||
	    fail "py: move $i to 2: $(tail -2 "$S/py.log"; tail -2 "$S/py.out")"
	[ -n "$(guest_pid python3 2)" ] || fail "py: no python3 on node 2"
	lab_exec 1 mosmigrate --post-copy "$pid" home ||
	    fail "py: move $i home: $(tail -2 "$S/py.log"; tail -2 "$S/py.out")"
	i=$((i + 1))
done
[ "$(grep -c "guest $pid@1: post-copy done" "$G2")" = 5 ] ||
    fail "py: not post-copy to node 2: $(grep "$pid@1" "$G2" | tail -3)"
[ "$(grep -c "is home post-copy" "$S/py.log")" = 5 ] ||
    fail "py: not home post-copy: $(tail -3 "$S/py.log")"
touch "$S/py.end"
wait "$job" || fail "py: exit $?: $(tail -3 "$S/py.out")"
cmp -s "$S/py.want" "$S/py.out" ||
    fail "py: output: $(diff "$S/py.want" "$S/py.out" | head -5)"

# The source lost during post-copy: its pages take seconds at 100 Mbit/s.
# shape: the link at 100 Mbit/s both ways, or back (unshape)
shape() {
	for v in v1 v2; do
		tc qdisc add dev "$MOSLAB_NAME-$v" root tbf rate 100mbit \
		    burst 256kb latency 100ms || fail "tc"
	done
}
unshape() {
	for v in v1 v2; do
		tc qdisc del dev "$MOSLAB_NAME-$v" root
	done
}
# lose NAME [copy]: move it home post-copy (by copy), the link slow, and
# kill its source once the way home is under way (a way by copy must fail)
lose() {
	shape
	g=$(guest_pid mosd-guest 2)
	[ -n "$g" ] || fail "$1: no guest agent on node 2"
	if [ "$2" = copy ]; then
		lab_exec 1 mosmigrate "$pid" home > /dev/null 2>&1 &
		mm=$!
		wait_for 20 grep -q "guest $pid@1 goes home: called home" "$G2" ||
		    fail "$1: not on its way home: $(grep "$pid@1" "$G2" | tail -3)"
	else
		lab_exec 1 mosmigrate --post-copy "$pid" home > /dev/null 2>&1 &
		mm=$!
		wait_for 20 grep -q "runs home, its pages following" \
		    "$S/$1.log" ||
		    fail "$1: not home post-copy: $(tail -3 "$S/$1.log")"
	fi
	lab_exec 2 kill -KILL "$g"
	if wait "$mm" && [ "$2" = copy ]; then
		fail "$1: mosmigrate says it came home"
	fi
	unshape
}

MOSRUN_OPTS="-C $S/ck" start ck 128 0
lab_exec 1 mosmigrate "$pid" checkpoint > /dev/null || fail "ck: checkpoint"
lab_exec 1 mosmigrate "$pid" 2 || fail "ck: move to 2"
lose ck
wait_for 20 grep -q "lost with node 2 during post-copy.*restarting it here" \
    "$S/ck" || fail "ck: not restarted: $(tail -3 "$S/ck"; tail -3 "$S/ck.log")"
[ "$(where "$pid")" = 1 ] || fail "ck: not at home"
check ck
stop

# The target lost during a way out: node 2's guest agent killed while the
# pages go; P, held at home, goes on from its checkpoint.
MOSRUN_OPTS="-C $S/co" start co 128 0
lab_exec 1 mosmigrate "$pid" checkpoint > /dev/null || fail "co: checkpoint"
shape
lab_exec 1 mosmigrate --post-copy "$pid" 2 > /dev/null 2>&1 &
mm=$!
wait_for 20 grep -q "guest $pid@1 (livewriter) runs here as .*, its pages" \
    "$G2" || fail "co: not post-copy: $(tail -3 "$S/co.log")"
g=$(guest_pid mosd-guest 2)
[ -n "$g" ] || fail "co: no guest agent on node 2"
lab_exec 2 kill -KILL "$g"
wait "$mm" && fail "co: mosmigrate says it moved"
unshape
wait_for 20 grep -q "lost with node 2 during post-copy.*restarting it here" \
    "$S/co" || fail "co: not restarted: $(tail -3 "$S/co"; tail -3 "$S/co.log")"
[ "$(where "$pid")" = 1 ] || fail "co: not at home"
check co
stop

MOSRUN_OPTS= start gone 128 0
lab_exec 1 mosmigrate "$pid" 2 || fail "gone: move to 2"
lose gone
# it ends, its parent told why; nothing of it is left anywhere
wait_for 20 sh -c "! kill -0 $job 2>/dev/null" || fail "gone: still runs"
wait "$job"
grep -q "lost with node 2 during post-copy.*killing it" "$S/gone" ||
    fail "gone: no message: $(tail -3 "$S/gone")"
wait_for 20 nprocs 0 1 || fail "gone: node 1 lists $(ps_list pid,command)"
[ -z "$(guest_pid livewriter 2)" ] || fail "gone: still on node 2"

# The same on a way home by copy (no post-copy): the home's line says why
# it was coming home, what may have ended it there.
MOSRUN_OPTS= start home 128 0
lab_exec 1 mosmigrate "$pid" 2 || fail "home: move to 2"
lose home copy
wait_for 20 sh -c "! kill -0 $job 2>/dev/null" || fail "home: still runs"
wait "$job"
grep -qx "mosrun: process $pid (livewriter) was lost with node 2: .* while it was called home; killing it" \
    "$S/home" || fail "home: no message: $(tail -3 "$S/home")"
echo "home: $(grep mosrun: "$S/home")"
wait_for 20 nprocs 0 1 || fail "home: node 1 lists $(ps_list pid,command)"

# The source of a way out, the deputy at home, killed during post-copy:
# the copy on node 2 dies with its session; P, whole at home, goes on
# there from the freeze, untraced, as after its deputy's death at any time
# at home.
start out 128 0
d=$(lab_exec 1 sed -n 's/^TracerPid:[[:space:]]*//p' "/proc/$pid/status")
[ "${d:-0}" != 0 ] || fail "out: no deputy"
shape
lab_exec 1 mosmigrate --post-copy "$pid" 2 > /dev/null 2>&1 &
mm=$!
wait_for 20 grep -q "guest $pid@1 (livewriter) runs here as .*, its pages" \
    "$G2" || fail "out: not post-copy: $(tail -3 "$S/out.log")"
lab_exec 1 kill -KILL "$d"
wait "$mm"
unshape
guests2() {
	lab_exec 2 ps -eo pid,uid,comm | awk '$2 >= 60000'
}
wait_for 30 sh -c "[ -z \"\$($MOSLAB exec 2 ps -eo uid= | awk '\$1 >= 60000')\" ]" ||
    fail "out: left on node 2: $(guests2)"
grep -q "guest $pid@1 lost during post-copy" "$G2" ||
    fail "out: node 2 did not say: $(grep "$pid@1" "$G2" | tail -3)"
check out
stop

"$MOSLAB" down || fail "moslab down"
check_clean
echo PASS
