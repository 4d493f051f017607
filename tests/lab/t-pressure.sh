#!/bin/sh
# Pressure on either end of a migrated process.
#
# Memory where it runs: a guest that grows past its node's memory under
# -L (not moved for load) is sent home by that node's memory guard before
# the out-of-memory killer acts, and ends exact. A guest that outgrows its
# node inside one call (an mmap that faults 400 MiB in, faster than any
# watch can freeze it) is killed by that node's OOM killer: its home says
# so on its stderr and goes on from its last checkpoint, its shared
# `> log 2>&1` ending as an unbroken run's; without a checkpoint the
# parent sees an exit with status 137, not a death by SIGKILL (or, where
# the killer took its guest agent too, the home says it was lost while it
# was sent home for memory).
#
# The home takes it back short of memory itself: node 1 below its guard's
# reserve (650 MiB of a program's and 300 MiB of page cache in use, of
# 1024), a guest growing to 272 MiB, more than node 2 has, is sent home
# by node 2's guard and comes home all the same, the cache giving way, and
# ends exact; nobody is killed.
#
# A file system full at home: a program writing there from node 2 sees
# exactly what it sees at home (the short write, then ENOSPC), by default
# as with strict files: writes stop going behind when the home's file
# system has little room (t-fast fills one that has room at first).
. "$(dirname "$0")/lib.sh"
P=${OSM_MOSRUN:-$OSM_BIN/../build/tests/mosrun}

lab_up 2 --cpus 1 --mem 1024,256
wait_cluster 2
net2=$(mosd_net 2)
S=$(lab_dir)/share
mkdir -p "$S"

# start NAME MOSRUN-ARGS...: mosrun in node 1, stdout and stderr one file
# ($S/NAME.log), its status appended; $job, $pid.
start() {
	name=$1
	shift
	gone "$name"
	"$MOSLAB" exec 1 sh -c "mosrun $* > $S/$name.log 2>&1; \
	    echo status \$? >> $S/$name.log" &
	job=$!
	wait_for 10 nprocs 1 || fail "$name: not in mosps"
	pid=$(ps_list pid | head -n 1)
}
# The last one's agent has left mosd's list.
gone() {
	wait_for 30 nprocs 0 || fail "$1: still listed: $(lab_exec 1 mosps -a)"
}
on2() {
	[ "$(where "$pid")" = 2 ]
}
# move NAME: to node 2, where it must run: its pid there, as a guest uid.
move() {
	lab_exec 1 mosmigrate "$pid" 2 || fail "$1: move to node 2"
	wait_for 10 on2 || fail "$1: not on node 2: $(lab_exec 1 mosps)"
	[ -n "$(guest_pid grow 2)" ] || fail "$1: no guest grow on node 2"
}
# want TICKS MIB: what grow prints, unbroken, then its status 0.
want() {
	i=0
	while [ "$i" -lt "$1" ]; do
		echo "tick $i"
		i=$((i + 1))
	done
	echo "grown $2 MiB"
	echo "verified $2 MiB"
	echo done
	echo "status 0"
}

# oom_said NAME LOG ENDING LOST_ENDING: LOG has the home's line for R
# killed by node 2's OOM killer, or, where node 2's memory guard sent R
# home in the middle of its mmap, too late, and the killer took R's guest
# agent after R (docs/RELIABILITY.md, "The agent after R"), the line of a
# process lost while it was sent home for memory, and node 2's log one
# more agent killed by signal 9. $kills: how many the killer took, 1 or 2.
oom_said() {
	if grep -qx "mosrun: process $pid (grow) was lost with node 2: session closed by the peer while it was sent home (node 2 is short of memory: .*); $4" \
	    "$2"; then
		wait_for 5 _agent_killed ||
		    fail "$1: lost, its agent not killed: $(grep mosrun: "$2")"
		echo "$1: the killer took its agent too: $(grep mosrun: "$2")"
		kills=2
	else
		grep -qx "mosrun: process $pid (grow) was killed by node 2's out-of-memory killer; $3" \
		    "$2" || fail "$1: no message: $(grep mosrun: "$2")"
		kills=1
	fi
}
agents_killed() {
	grep -c "guest agent [0-9]* (uid [0-9]*) died of signal 9" \
	    "$(lab_dir)/node2/mosd.log"
}
_agent_killed() {
	[ "$(agents_killed)" -gt "$agents0" ]
}
# kills_are N WHAT: node 2's OOM killer has killed N in all, no more (its
# guard reads the kills every 100 ms: the home may hear first)
_oom_kills_2() {
	[ "$(counter oom_kills 2)" -ge "$1" ]
}
kills_are() {
	wait_for 5 _oom_kills_2 "$1"
	[ "$(counter oom_kills 2)" = "$1" ] ||
	    fail "$2: node 2's OOM killer killed $(counter oom_kills 2) in all, not $1"
}

# Growing by 8 MiB every 50 ms once on node 2 (256 MiB), to 320 MiB.
start guard -L "$P/grow" 60 8 40 50
move guard
wait "$job"
i=0
{
	while [ "$i" -lt 60 ]; do echo "tick $i"; i=$((i + 1)); done
	i=8
	while [ "$i" -le 320 ]; do echo "grown $i MiB"; i=$((i + 8)); done
	echo "verified 320 MiB"
	echo done
	echo "status 0"
} > "$S/guard.want"
cmp -s "$S/guard.want" "$S/guard.log" ||
    fail "guard: $(diff "$S/guard.want" "$S/guard.log" | head -5)"
sent=$(sed -n "s/.*memory guard: guest $pid@1 (grow) sent home: .*, the process has \([0-9]*\) MiB$/\1/p" \
    "$(lab_dir)/node2/mosd.log")
[ -n "$sent" ] && [ "$sent" -ge 64 ] ||
    fail "guard: not sent home from node 2 after growing there: $sent"
echo "guard: $(sed -n "s/.*memory guard: guest $pid@1 (grow) sent home: //p" \
    "$(lab_dir)/node2/mosd.log")"
[ "$(counter oom_kills 2)" = 0 ] || fail "guard: node 2's OOM killer acted"
[ "$(counter guests_sent_home_for_memory 2)" = 1 ] ||
    fail "guard: $(counter guests_sent_home_for_memory 2) guests sent home"

# 400 MiB at once, with a checkpoint to go on from.
start oom -L -C "$S/ck" -A 0.01 "$P/grow" 60 400 1 50 populate
wait_for 10 test -e "$S/ck.1" || fail "oom: no checkpoint"
agents0=$(agents_killed)
move oom
wait "$job"
oom_said oom "$S/oom.log" "restarting it here from $S/ck\.[0-9]*" \
    "restarting it here from $S/ck\.[0-9]*"
want 60 400 > "$S/oom.want"
grep -v '^mosrun:' "$S/oom.log" | cmp -s "$S/oom.want" - ||
    fail "oom: the log: $(grep -v '^mosrun:' "$S/oom.log" | tail -4)"
kills_are $kills oom
oom_kills=$kills

# Without a checkpoint: its parent (python, which tells an exit from a
# signal) sees status 137, exited.
gone oom0
"$MOSLAB" exec 1 /usr/bin/python3 -c "import subprocess, sys
r = subprocess.run(sys.argv[1:], stderr=open('$S/oom0.log', 'w'))
print('returncode', r.returncode)" mosrun -L "$P/grow" 40 400 1 50 populate \
    > "$S/oom0.out" &
job=$!
wait_for 10 nprocs 1 || fail "oom0: not in mosps"
pid=$(ps_list pid | head -n 1)
agents0=$(agents_killed)
move oom0
wait "$job"
oom_said oom0 "$S/oom0.log" "ending it" "killing it"
if [ $kills = 1 ]; then
	grep -qx "returncode 137" "$S/oom0.out" ||
	    fail "oom0: the parent saw: $(cat "$S/oom0.out")"
else
	grep -qx "returncode -9" "$S/oom0.out" ||
	    fail "oom0: lost, the parent saw: $(cat "$S/oom0.out")"
fi
# The killer took guests alone, never mosd (guest_oom_first).
[ "$(mosd_net 2)" = "$net2" ] || fail "oom0: node 2's mosd was killed"
kills_are $((oom_kills + kills)) oom0

# ENOSPC: a 64 KiB file system at home, filled at home, then from node 2.
cat > "$S/fill.py" <<'EOF'
import os, sys
open(sys.argv[1]).read()		# the test's go, once it runs away
fd = os.open(sys.argv[2], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
for i in range(100):
    try:
        print("write", os.write(fd, b"x" * 10000))
    except OSError as e:
        print("write failed:", e.errno, e.strerror)
        break
os.fsync(fd)
os.close(fd)
print("size", os.stat(sys.argv[2]).st_size)
EOF
lab_exec 1 sh -c 'mkdir -p /tmp/tiny && mount -t tmpfs -o size=64k tiny \
    /tmp/tiny && mkfifo /tmp/go' || fail "enospc: set-up"
lab_exec 1 sh -c "echo > /tmp/go & /usr/bin/python3 $S/fill.py /tmp/go \
    /tmp/tiny/f > $S/fill.home 2>&1" || fail "enospc: at home"
lab_exec 1 rm /tmp/tiny/f
gone enospc
"$MOSLAB" exec 1 sh -c "mosrun -r 2 /usr/bin/python3 $S/fill.py /tmp/go \
    /tmp/tiny/f > $S/fill.away 2>&1" &
job=$!
wait_for 10 nprocs 1 || fail "enospc: not in mosps"
pid=$(ps_list pid | head -n 1)
wait_for 10 on2 || fail "enospc: not on node 2"
[ -n "$(guest_pid python3 2)" ] || fail "enospc: no guest python3 on node 2"
lab_exec 1 sh -c 'echo > /tmp/go' || fail "enospc: go"
wait "$job" || fail "enospc: away: $(cat "$S/fill.away")"
grep -q "write failed: 28 No space left on device" "$S/fill.home" ||
    fail "enospc: not full at home: $(cat "$S/fill.home")"
cmp -s "$S/fill.home" "$S/fill.away" ||
    fail "enospc: $(diff "$S/fill.home" "$S/fill.away")"
echo "enospc: at home and from node 2: $(tail -3 "$S/fill.away" | tr '\n' ' ')"
lab_exec 1 umount /tmp/tiny

# Home short of memory: the guest comes back all the same.
lab_exec 1 sh -c "head -c 314572800 /dev/zero > $S/cache && \
    cat $S/cache > /dev/null && cat $S/cache > /dev/null" || fail "short: cache"
"$MOSLAB" exec 1 /usr/bin/python3 -c "import os, time
b = bytearray(650 << 20)
for i in range(0, len(b), 4096):
    b[i] = 1
open('$S/hog.ready', 'w').close()
while not os.path.exists('$S/hog.stop'):
    time.sleep(0.1)" &
hog=$!
wait_for 30 test -e "$S/hog.ready" || fail "short: no hog"
short() {
	[ "$(node_field 1 1 mem_free_mib)" -lt 102 ]
}
wait_for 10 short || fail "short: node 1 not short: $(node_field 1 1 mem_free_mib) MiB free"
free1=$(node_field 1 1 mem_free_mib)
kills2=$(counter oom_kills 2)
start short -L "$P/grow" 30 8 34 50
move short
wait "$job"
touch "$S/hog.stop"
wait "$hog"
i=0
{
	while [ "$i" -lt 30 ]; do echo "tick $i"; i=$((i + 1)); done
	i=8
	while [ "$i" -le 272 ]; do echo "grown $i MiB"; i=$((i + 8)); done
	echo "verified 272 MiB"
	echo done
	echo "status 0"
} > "$S/short.want"
cmp -s "$S/short.want" "$S/short.log" ||
    fail "short: $(diff "$S/short.want" "$S/short.log" | head -5)"
sent=$(sed -n "s/.*memory guard: guest $pid@1 (grow) sent home: .*, the process has \([0-9]*\) MiB$/\1/p" \
    "$(lab_dir)/node2/mosd.log")
[ -n "$sent" ] && [ "$sent" -ge 64 ] ||
    fail "short: not sent home from node 2 after growing there: $sent"
grep -q "guest $pid@1 goes home" "$(lab_dir)/node2/mosd.log" ||
    fail "short: it did not go home from node 2"
[ "$(counter oom_kills 1)" = 0 ] && [ "$(counter oom_kills 2)" = "$kills2" ] ||
    fail "short: an OOM killer acted: node 1 $(counter oom_kills 1), node 2 $(counter oom_kills 2) (before: $kills2)"
echo "short: node 1 had $free1 MiB free (reserve 102) when node 2 sent it home at $sent MiB; exact"

"$MOSLAB" down || fail "moslab down"
check_clean
echo PASS
