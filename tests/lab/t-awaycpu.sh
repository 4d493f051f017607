#!/bin/sh
# A process computing away costs its nodes nothing but its own CPU time
# (docs/PERFORMANCE.md, "Where a program's CPU goes away"): while a
# program started on node 2 computes without system calls, its guest
# agent and its deputy at home sleep — a few wakeups a second at most
# (their reports), no CPU time to speak of — and the process is left as
# a process started there would be: on every CPU the node has (the
# restore pins it to the guest's CPU only while it injects calls), with
# no area of its memory under a userfaultfd (a live move tracks what it
# writes at home, before it leaves, not after). A timer, a poll or a
# keepalive of the agents, or a pin or a write tracking left behind by
# the move, would make the program slower away than at home.
. "$(dirname "$0")/lib.sh"

lab_up 2
wait_cluster 2
D=$(lab_dir)/awaycpu
mkdir -p "$D" && chmod 755 "$(lab_dir)" "$D" || fail "mkdir $D"
L2=$(lab_dir)/node2/mosd.log
WINDOW=1.5	# seconds the agents are watched while the program computes

# (an ordinary user's program, about 10 s of CPU here: no call until its
# end but the output)
cat > "$D/spin.pl" <<'EOF'
my ($i, $x) = (0, 0);
while ($i < 400000000) { $x = ($x * 31 + $i) % 1000003; $i++ }
print "spun $x\n";
EOF
chmod 644 "$D/spin.pl"

# FIELD of /proc/PID/status on node K
status() {
	lab_exec "$1" sh -c "sed -n 's/^$3:[[:space:]]*//p' /proc/$2/status"
}
# the CPU ticks (user + system) of PID on node K
ticks() {
	lab_exec "$1" cat "/proc/$2/stat" | sed 's/.*) //' |
	    awk '{ print $12 + $13 }'
}
# the times PID on node K went to sleep (and was woken): preemptions,
# which a loaded machine makes, are not its own
wakeups() {
	status "$1" "$2" voluntary_ctxt_switches
}

U="setpriv --reuid 4242 --regid 4242 --clear-groups"
lab_exec 1 sh -c 'cd "$1" && { '"$U"' mosrun -L -r 2 perl spin.pl \
    > spin.out 2>&1 & }' sh "$D" || fail "not started"
wait_for 20 sh -c "grep -q 'guest [0-9]*@1 (perl) runs here' '$L2'" ||
    fail "it did not arrive on node 2: $(cat "$D/spin.out")"
r=$(guest_pid perl 2)
[ -n "$r" ] || fail "no perl under a guest uid on node 2"
g=$(status 2 "$r" PPid)
[ "$(lab_exec 2 cat "/proc/$g/comm")" = mosd-guest ] ||
    fail "R's parent $g is not its guest agent"
p=$(pid_of perl)
[ -n "$p" ] || fail "mosps lists no perl at home"
[ "$(where "$p")" = 2 ] || fail "it runs on node $(where "$p"), not 2"
dep=$(status 1 "$p" TracerPid)
[ "${dep:-0}" -gt 0 ] || fail "the husk $p has no deputy tracing it"

# --- left as a process started on node 2 -----------------------------
here=$(lab_exec 2 sh -c 'sed -n "s/^Cpus_allowed_list:[[:space:]]*//p" \
    /proc/self/status')
[ "$(status 2 "$r" Cpus_allowed_list)" = "$here" ] ||
    fail "R may run on CPUs $(status 2 "$r" Cpus_allowed_list) only," \
    "a process started there on $here"
uf=$(lab_exec 2 cat "/proc/$r/smaps" | grep '^VmFlags:' |
    grep -c -w -e uw -e um -e ui)
[ "$uf" -eq 0 ] ||
    fail "$uf areas of R are under a userfaultfd after its move"

# --- the agents sleep while it computes -------------------------------
sleep 0.5	# (the start's last replies)
gw=$(wakeups 2 "$g")
gt=$(ticks 2 "$g")
dw=$(wakeups 1 "$dep")
dt=$(ticks 1 "$dep")
rt=$(ticks 2 "$r")
sleep "$WINDOW"
gw=$(($(wakeups 2 "$g") - gw))
gt=$(($(ticks 2 "$g") - gt))
dw=$(($(wakeups 1 "$dep") - dw))
dt=$(($(ticks 1 "$dep") - dt))
rt=$(($(ticks 2 "$r") - rt))
echo "in ${WINDOW} s: R $rt ticks of CPU; its guest agent $gw wakeups," \
    "$gt ticks; its deputy $dw wakeups, $dt ticks"
[ "$rt" -gt 0 ] || fail "R did not compute in ${WINDOW} s"
# the guest's report every 2 s, which the deputy hears and tells mosd
# (a round trip), and the deputy's timer of 1 s: a timer of 100 ms would
# be 15 more
[ "$gw" -le 6 ] || fail "the guest agent woke $gw times in ${WINDOW} s"
[ "$dw" -le 10 ] || fail "the deputy woke $dw times in ${WINDOW} s"
[ "$gt" -le 2 ] || fail "the guest agent used $gt ticks in ${WINDOW} s"
[ "$dt" -le 2 ] || fail "the deputy used $dt ticks in ${WINDOW} s"

# --- and it ends as at home -------------------------------------------
lab_exec 1 kill "$p"
wait_for 20 sh -c "grep -q 'guest $p@1 .*ended' '$L2'" ||
    fail "it did not end on node 2"
echo "R, its guest agent: $(grep "guest $p@1 used here" "$L2" | tail -1 |
    sed 's/.*used here //')"
