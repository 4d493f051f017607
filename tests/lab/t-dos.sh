#!/bin/sh
# What a local user or another node can make mosd hold is bounded
# (docs/RELIABILITY.md). Against node 1, each attack with its bar:
#  - a handshake flood from node 3: a bounded number of log lines, mosd
#    answering within 1 s, node 1 up in gossip, node 2's move to node 1
#    served while node 3's connections are not;
#  - an ordinary user's connections that ask and never read: cut off, and
#    mosd's memory within 4 MB of its idle size;
#  - an ordinary user asking as fast as mosd answers: answered at most
#    requests_per_user times a second, mosd's CPU for it under a fifth of
#    the time, another user answered within 1 s;
#  - an ordinary user holding all the connections it may: root's mosctl
#    status, mosps -a, mosmigrate and a new mosrun each succeed within 1 s,
#    another user's mosrun and a guest agent get in, and the user's own
#    tools say why they are refused and exit 1 (not 141, of SIGPIPE);
#  - a connection that neither asks nor reads is closed after the client
#    timeout (10 s); a guest agent's, as quiet, is not;
# and R, moved to node 2, holds /dev/null on 0-2 and nothing else, and no
# capability, not even in its bounding set.
. "$(dirname "$0")/lib.sh"
P=${OSM_MOSRUN:-$OSM_BIN/../build/tests/mosrun}
DOS="/usr/bin/python3 $LAB_TESTS/dos.py"
SOCK=/run/osmosis/mosd.sock

lab_up 3 --cpus 0.5 --mem 256
wait_cluster 3
S=$(lab_dir)/share
mkdir -p "$S"
L1=$(lab_dir)/node1/mosd.log
# What the clients cost is the network process's, which serves them.
mosd1=$(mosd_net 1)
[ -n "$mosd1" ] || fail "node 1 has no network process"
nobody() {
	_k=$1
	shift
	lab_exec "$_k" setpriv --reuid 65534 --regid 65534 --clear-groups "$@"
}
counter() {
	lab_exec 1 mosctl stats | awk -v n="$1" '$1 == n { print $2 }'
}
rss() {
	awk '/^VmRSS:/ { print $2 }' "/proc/$mosd1/status"
}
# CMD must succeed within 1 s.
quick() {
	_t0=$(_ms)
	_out=$("$@" 2>&1) || fail "'$*' failed: $_out"
	_t=$(($(_ms) - _t0))
	[ "$_t" -lt 1000 ] || fail "'$*' took $_t ms"
	echo "$_t ms: $*"
}

# R on node 2: what it holds of its host.
lab_exec 1 mkfifo /tmp/go || fail "mkfifo"
"$MOSLAB" exec 1 sh -c "OSM_DEPUTY_LOG=/tmp/deputy.log \
    mosrun -L -r 2 $P/walker /tmp/go wait > /tmp/walk 2>&1" &
wait_for 10 away || fail "the walker did not move: $(lab_exec 1 mosps -a)"
w=$(pid_of walker)
r=$(lab_exec 2 ps -eo pid=,user=,comm= |
    awk '$3 == "walker" && $2 >= 60000 { print $1 }')
[ -n "$r" ] || fail "no walker under a guest uid on node 2"
caps=$(lab_exec 2 grep -E '^Cap(Inh|Prm|Eff|Bnd|Amb):' "/proc/$r/status")
echo "$caps"
[ "$(echo "$caps" | grep -c ':	0000000000000000$')" -eq 5 ] ||
    fail "R has capabilities: $caps"
fds=$(lab_exec 2 sh -c "cd /proc/$r/fd && for f in *; do
    echo \$f \$(readlink \$f); done")
echo "R's descriptors:" $fds
[ "$(echo "$fds" | tr '\n' ' ')" = "0 /dev/null 1 /dev/null 2 /dev/null " ] ||
    fail "R holds more than /dev/null on 0-2: $fds"

# A handshake flood from node 3.
before=$(wc -l < "$L1")
lab_exec 3 $DOS syn 10.77.0.1 4750 8 > "$S/syn" 2>&1 &
flood=$!
sleep 1
quick lab_exec 1 mosctl status
lab_exec 2 mkfifo /tmp/go2 || fail "mkfifo on node 2"
"$MOSLAB" exec 2 sh -c "mosrun -L -r 1 $P/walker /tmp/go2 wait \
    > /tmp/walk2 2>&1" &
on1() {
	ps_list where 2 | grep -qx 1
}
wait_for 10 on1 || fail "node 2's process did not move to node 1 during \
the flood: $(lab_exec 2 mosps -a; lab_exec 2 cat /tmp/walk2)"
wait "$flood" || fail "the flood failed: $(cat "$S/syn")"
cat "$S/syn"
made=$(awk '{ print $2 }' "$S/syn")
[ "$made" -ge 1000 ] || fail "the flood made only $made connections"
# At 20 a second, in 8 s: 180 of node 3's at most, and node 2's one.
taken=$(counter handshakes_taken)
echo "handshakes taken: $taken, refused: $(counter handshakes_refused)"
[ "$taken" -le 200 ] && [ "$(counter handshakes_refused)" -ge 1000 ] ||
    fail "node 3 was served: $(lab_exec 1 mosctl stats)"
sees1() {
	lab_exec 2 mosctl status | awk '$1 == 1 && $3 == "up"' | grep -q .
}
sees1 || fail "node 2 no longer sees node 1 up"
w2=$(ps_list pid 2)

# Connections that ask and never read.
idle_kb=$(rss)
nobody 1 $DOS flood $SOCK 120 5 > "$S/flood" 2>&1 &
flood=$!
max_kb=$idle_kb
while kill -0 "$flood" 2> /dev/null; do
	kb=$(rss)
	[ "$kb" -le "$max_kb" ] || max_kb=$kb
	sleep 0.1
done
wait "$flood" || fail "the reader-less flood failed: $(cat "$S/flood")"
echo "mosd: $idle_kb kB idle, at most $max_kb kB under the flood;" \
    "$(cat "$S/flood")"
[ $((max_kb - idle_kb)) -le 4096 ] ||
    fail "mosd grew from $idle_kb kB to $max_kb kB"
[ "$(counter control_clients_dropped)" -ge 16 ] ||
    fail "the clients that do not read were not cut off:" \
    "$(lab_exec 1 mosctl stats)"
grep -q "uid 65534) dropped: it is not reading its replies" "$L1" ||
    fail "no line says who does not read"

# A user asking as fast as mosd answers (16 connections, 8 requests in
# flight each): answered requests_per_user (1000) times a second at most,
# a quarter second's more at its start, so that mosd, which runs above
# the users' programs, spends little of the node's CPU on it; another
# user is answered at once meanwhile.
ticks() {
	awk '{ print $14 + $15 }' "/proc/$mosd1/stat"
}
c0=$(ticks)
t0=$(_ms)
nobody 1 $DOS busy $SOCK 16 "$S/busystop" > "$S/busy" 2>&1 &
busy=$!
sleep 2
quick lab_exec 1 setpriv --reuid 1000 --regid 1000 --clear-groups \
    mosctl status
sleep 1
touch "$S/busystop"
wait "$busy" || fail "the busy flood failed: $(cat "$S/busy")"
ms=$(($(_ms) - t0))
cpu_ms=$((($(ticks) - c0) * 1000 / $(getconf CLK_TCK)))
answers=$(awk '{ print $2 }' "$S/busy")
echo "busy: $(cat "$S/busy"); mosd's CPU $cpu_ms ms in $ms ms;" \
    "$(counter control_requests_delayed) requests read later"
[ "$answers" -ge 1000 ] || fail "the busy flood was not answered"
[ "$answers" -le $((ms * 11 / 10 + 300)) ] ||
    fail "uid 65534 was answered $answers times in $ms ms"
[ "$cpu_ms" -le $((ms / 5)) ] ||
    fail "mosd spent $cpu_ms ms of CPU in $ms ms answering one user"
[ "$(counter control_requests_delayed)" -gt 0 ] ||
    fail "no request was read later"

# All the connections one user may hold, held.
nobody 1 $DOS hold $SOCK 1000 "$S/stop" > "$S/hold" 2>&1 &
holder=$!
holding() {
	grep -q "holding 16" "$S/hold"
}
wait_for 10 holding || fail "the user holds: $(cat "$S/hold")"
quick lab_exec 1 mosctl status
quick lab_exec 1 mosps -a
quick lab_exec 1 mosmigrate "$w" home
quick lab_exec 1 mosmigrate "$w" 2
quick lab_exec 1 mosrun /bin/true
quick lab_exec 1 setpriv --reuid 1000 --regid 1000 --clear-groups \
    mosrun /bin/true
# A guest agent registers on node 1: node 2's process back there.
lab_exec 2 mosmigrate "$w2" home || fail "mosmigrate $w2 home on node 2"
lab_exec 2 mosmigrate "$w2" 1 || fail "mosmigrate $w2 1 during the lockout"
[ "$(where "$w2" 2)" = 1 ] || fail "node 2's process is not on node 1"
guest1() {
	lab_exec 1 mosctl status | awk '$1 == 1 && $9 == 1' | grep -q .
}
wait_for 5 guest1 ||
    fail "node 1 does not count its guest: $(lab_exec 1 mosctl status)"
# The user's own tools: refused, in words, exit 1.
for i in 1 2 3 4 5 6 7 8 9 10; do
	expect 1 "mosctl: mosd refused: too many connections for uid 65534" \
	    nobody 1 mosctl status
	expect 1 "mosps: mosd refused: too many connections for uid 65534" \
	    nobody 1 mosps
done
touch "$S/stop"
wait "$holder"

# A connection that neither asks nor reads is closed after 10 s; the guest
# agent of node 2's process, as quiet since it came, keeps its own.
nobody 1 $DOS idle $SOCK > "$S/idle" 2>&1 || fail "the idle client failed"
cat "$S/idle"
secs=$(awk '{ print int($3) }' "$S/idle")
[ "$secs" -ge 9 ] && [ "$secs" -le 30 ] ||
    fail "the idle connection: $(cat "$S/idle"), expected after 10 s"
grep "guest $w2@2: mosd went away" "$L1" &&
    fail "the quiet guest agent lost its connection"
lab_exec 1 cat /tmp/deputy.log 2> /dev/null | grep "went away" &&
    fail "the walker's deputy lost its connection"
[ "$(where "$w")" = 2 ] || fail "the walker is not on node 2 any more"
[ "$(where "$w2" 2)" = 1 ] || fail "node 2's process left node 1"

# The flood's lines, its counts said once their windows ended.
said() {
	tail -n +"$((before + 1))" "$L1" | grep "node 3" |
	    grep -q "more in the last"
}
wait_for 15 said || fail "no count of the lines held back"
lines=$(tail -n +"$((before + 1))" "$L1" | grep -c "node 3")
echo "node 3's flood: $lines lines in mosd.log"
tail -n +"$((before + 1))" "$L1" | grep "more in the last"
[ "$lines" -le 30 ] || fail "the flood left $lines lines"

"$MOSLAB" down || fail "moslab down"
check_clean
echo PASS
