#!/bin/sh
# A process started with mosrun on node 1 and moved to node 2 runs there
# (node 2's PID namespace shows it, node 2's cgroup pays for its CPU)
# while it lives at home: same pid and parent, files in node 1's /tmp and
# not node 2's, a descriptor opened before the move appends at the right
# offset, stdin from a pipe, stdout, CPU-time clocks that count all its
# CPU, its SIGUSR1 handler run when signalled at home, exit status 7
# seen by its parent; mosps shows where it is; node 2's files stay out of
# its reach.
. "$(dirname "$0")/lib.sh"
P=${OSM_MOSRUN:-$OSM_BIN/../build/tests/mosrun}

lab_up 2 --cpus 1 --mem 512
wait_cluster 2
lab_exec 1 sh -c 'echo home-secret > /tmp/home-only; mkfifo /tmp/go' ||
    fail "set-up in node 1"
lab_exec 2 sh -c 'echo node2-secret > /tmp/node2-only' ||
    fail "set-up in node 2"

# The walker's parent is the shell inside node 1, which records its status.
"$MOSLAB" exec 1 sh -c "printf 'line1\nline2\n' | mosrun $P/walker /tmp/go \
    walk 7 > /tmp/out 2> /tmp/err; echo status \$? >> /tmp/out" &
job=$!
wait_for 10 lab_exec 1 grep -q ready /tmp/out || fail "walker not ready"
pid=$(ps_list pid | head -n 1)
[ -n "$pid" ] || fail "mosps does not list the walker"
[ "$(where "$pid")" = 1 ] || fail "mosps does not show it here before the move"

lab_exec 1 mosmigrate "$pid" 2 || fail "mosmigrate $pid 2"
[ "$(where "$pid")" = 2 ] || fail "mosps does not show it on node 2"
# Node 2 sees it, under its own name and a guest uid, not a user's.
lab_exec 2 ps -eo user,comm | awk '$2 == "walker" && $1 >= 60000' |
    grep -q . || fail "node 2 does not see the walker as a guest"
# ... with no capabilities, no way to gain any, and its calls filtered.
rpid=$(lab_exec 2 ps -eo pid,comm | awk '$2 == "walker" { print $1 }')
rstat=$(lab_exec 2 cat /proc/$rpid/status)
for want in "CapEff:	0000000000000000" "CapPrm:	0000000000000000" \
    "NoNewPrivs:	1" "Seccomp:	2"; do
	echo "$rstat" | grep -qxF "$want" ||
	    fail "the walker on node 2 lacks '$want'"
done
lab_exec 1 grep -q "^TracerPid:[[:space:]]*[1-9]" /proc/$pid/status ||
    fail "the home process is not held by its deputy"

before2=$(node_cpu 2)
before1=$(node_cpu 1)
lab_exec 1 sh -c 'echo go > /tmp/go' || fail "go"
wait_for 15 lab_exec 1 grep -q "waiting for usr1" /tmp/out ||
    fail "the walker did not get through its walk: $(lab_exec 1 cat /tmp/out)"
used2=$(( $(node_cpu 2) - before2 ))
used1=$(( $(node_cpu 1) - before1 ))
[ "$used2" -ge 800000000 ] ||
    fail "node 2's cgroup paid ${used2} ns for a 1 s burn"
[ "$used1" -lt "$used2" ] ||
    fail "node 1 paid more ($used1 ns) than node 2 ($used2 ns)"

lab_exec 1 kill -USR1 "$pid" || fail "kill -USR1"
lab_exec 1 sh -c 'echo go > /tmp/go'
wait "$job"
out=$(lab_exec 1 cat /tmp/out)
echo "$out"
expect_line() {
	echo "$out" | grep -qxF "$1" || fail "expected '$1' in the output"
}
ppid=$(echo "$out" | sed -n '1s/^pid [0-9]* ppid //p')
expect_line "pid $pid ppid $ppid"
[ "$(echo "$out" | grep -cxF "pid $pid ppid $ppid")" -eq 2 ] ||
    fail "pid or parent changed with the move"
expect_line "log offset 13"
[ "$(echo "$out" | grep -cxF 'read /tmp/home-only: home-secret')" -eq 2 ] ||
    fail "the home's file was not read twice"
expect_line "open /tmp/node2-only: No such file or directory"
expect_line "stdin: line1"
expect_line "stdin: line2"
expect_line "cpu grew: yes"
expect_line "ticks ok"
expect_line "usr1 handled"
expect_line "status 7"
[ "$(lab_exec 1 cat /tmp/walk.log)" = "$(printf 'before\nafter')" ] ||
    fail "the log written before and after the move is wrong"
[ "$(lab_exec 1 cat /tmp/walk.new)" = "written away" ] ||
    fail "the file written away is not in node 1's /tmp"
lab_exec 2 test -e /tmp/walk.new && fail "the file landed in node 2's /tmp"
lab_exec 2 test -e /tmp/walk.log && fail "the log landed in node 2's /tmp"
[ -z "$(lab_exec 1 cat /tmp/err)" ] ||
    fail "stderr: $(lab_exec 1 cat /tmp/err)"
# Gone from mosps, no guest left on node 2.
wait_for 5 sh -c "! $MOSLAB exec 1 mosps | grep -q walker" ||
    fail "mosps still lists the walker"
wait_for 5 sh -c "! $MOSLAB exec 2 ps -eo comm | grep -q walker" ||
    fail "node 2 still runs the walker"

# A process that ends as soon as it arrives: its end can come in the same
# read as the move's last message, and must be taken then, not when the
# silence timer (15 s) gives it up. Two at a time, 30 times (before the
# fix, about 1 run in 11 waited).
n=0
while [ $n -lt 30 ]; do
	lab_exec 1 timeout 5 mosrun -L -r 2 true &
	a=$!
	lab_exec 1 timeout 5 mosrun -L -r 2 true ||
	    fail "mosrun -r 2 true failed or hung (run $n)"
	wait "$a" || fail "mosrun -r 2 true failed or hung (run $n)"
	n=$((n + 1))
done
ran=$(grep -c "(true) runs here" "$(lab_dir)/node2/mosd.log")
[ "$ran" -eq 60 ] || fail "node 2 ran $ran of the 60 true(1) sent there"

"$MOSLAB" down || fail "moslab down"
check_clean
echo PASS
