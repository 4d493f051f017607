#!/bin/sh
# Load (bench/load runs it at full size): N migratable processes (40; 200
# with OSM_LOAD_PROCS) homed on node 1 of a 4-node lab, started at once by
# one user (perl, tests/lab/load-job.pl), then M of them (30;
# OSM_LOAD_MOVES) moved at once to nodes 2-4 by root, while two other
# users flood node 1's control socket (tests/lab/dos.py: nobody with 120
# connections that write and never read, uid 65533 with 16 that ask as
# fast as mosd answers). Every move succeeds and the process runs where
# it was sent (mosps, and a guest perl in that node's process table);
# every job ends with status 0 and the result it would have had unmoved;
# the whole time, root's and another user's mosctl status and the
# owner's mosps each answer, never fail, 80% of the time within
# OSM_LOAD_MS (100 ms) and always within 10 times that, as does a status
# request of a process of uid 1001's that stays (tests/lab/load.py; the
# slowest fall in the burst of moves, when this machine's 2 cores run
# every checkpoint and start of every program, and in a make check
# other labs too). Node 1 has 2 CPUs (a quota
# of 1 stops all of its processes together until the next 100 ms
# period). Prints the figures, and for each tool's start past the bound
# where its time went (lib/toolclock.c: mostly waiting for a core).
# OSM_LOAD_FLOOD=0 leaves the flood out; OSM_LOAD_TIMES=FILE keeps every
# time measured; OSM_LOAD_ALT=DIR probes DIR's mosctl and mosps beside
# bin/'s, not judged (two builds compared in one run).
. "$(dirname "$0")/lib.sh"
N=${OSM_LOAD_PROCS:-40}
M=${OSM_LOAD_MOVES:-30}
BOUND=${OSM_LOAD_MS:-100}
SOCK=/run/osmosis/mosd.sock
JOB=$LAB_TESTS/load-job.pl
LOAD="/usr/bin/python3 $LAB_TESTS/load.py"
DOS="/usr/bin/python3 $LAB_TESTS/dos.py"

lab_up 4 --cpus 2,1,1,1 --mem "${OSM_LOAD_MEM:-1024}"
lab_exec 1 sh -c 'mkdir -m 1777 /tmp/load' || fail "set-up"
t0=$(_ms)

# N jobs of uid 1000's at once; each shell records its job's status.
lab_exec 1 sh -c "for k in \$(seq $N); do
	setpriv --reuid 1000 --regid 1000 --clear-groups sh -c \"mosrun -L \
	    perl $JOB /tmp/load/go \$((40 + k % 7)) > /tmp/load/out.\$k \
	    2> /tmp/load/err.\$k; echo \\\$? > /tmp/load/st.\$k\" &
done; wait" &
starter=$!
wait_for 120 nprocs "$N" ||
    fail "$N jobs not registered: $(lab_exec 1 mosps -a | wc -l) are; \
$(lab_exec 1 sh -c 'cat /tmp/load/err.*' | sort | uniq -c | head -3)"
echo "$N jobs started and registered in $(($(_ms) - t0)) ms"

# Users' tools timed, and the flood, from now on.
lab_exec 1 sh -c "$LOAD sample /tmp/load/stop /tmp/load/times \
    ${OSM_LOAD_ALT:-}" &
sampler=$!
flood=
busy=
if [ "${OSM_LOAD_FLOOD:-1}" = 1 ]; then
	lab_exec 1 setpriv --reuid 65534 --regid 65534 --clear-groups \
	    $DOS flood "$SOCK" 120 /tmp/load/stop > "$(lab_dir)/flood.out" &
	flood=$!
	lab_exec 1 setpriv --reuid 65533 --regid 65533 --clear-groups \
	    $DOS busy "$SOCK" 16 /tmp/load/stop > "$(lab_dir)/busy.out" &
	busy=$!
fi
sleep 1

# M moves at once, to nodes 2, 3, 4 in turn, each timed.
t0=$(_ms)
lab_exec 1 sh -c "i=0; for p in \$(mosps -a -o pid | head -n $M); do
	n=\$((2 + i % 3)); i=\$((i + 1))
	(t=\$(date +%s%N); mosmigrate \$p \$n > /tmp/load/mv.\$p 2>&1
	 echo \"\$? \$p \$n \$(( (\$(date +%s%N) - t) / 1000000 ))\" \
	    >> /tmp/load/moves) &
done; wait"
ms=$(($(_ms) - t0))
moved=$(lab_exec 1 cat /tmp/load/moves)
bad=$(echo "$moved" | awk '$1 != 0')
[ -z "$bad" ] || fail "moves failed: $bad: $(lab_exec 1 sh -c \
    'cat /tmp/load/mv.*' | sort | uniq -c)"
[ "$(echo "$moved" | grep -c .)" -eq "$M" ] || fail "not $M moves: $moved"
echo "$M moves at once in $ms ms; each took $(echo "$moved" |
    awk '{ print $4 }' | sort -n | awk '{ v[NR] = $1 } END {
    printf "%d ms (median), %d-%d ms", v[int((NR + 1) / 2)], v[1], v[NR] }')"
# Each runs where it was sent: mosps says so, and that node runs it.
echo "$moved" | while read -r st p n ms; do
	[ "$(where "$p")" = "$n" ] || fail "process $p is not on node $n"
done
for k in 2 3 4; do
	want=$(echo "$moved" | awk -v k=$k '$3 == k' | grep -c .)
	got=$(guest_pid perl "$k" | grep -c .)
	[ "$got" -eq "$want" ] ||
	    fail "node $k runs $got guest perls, $want were sent there"
done

# All end as if unmoved.
lab_exec 1 touch /tmp/load/go
_ended() {
	[ "$(lab_exec 1 sh -c 'ls /tmp/load/st.* | wc -l')" -eq "$N" ]
}
wait_for 120 _ended || fail "not every job ended"
lab_exec 1 touch /tmp/load/stop
wait "$sampler" $flood $busy "$starter"
for r in 40 41 42 43 44 45 46; do
	eval "want_$r=\$(lab_exec 1 perl $JOB /tmp/load/go $r)"
done
wrong=0
for k in $(seq "$N"); do
	r=$((40 + k % 7))
	eval "want=\$want_$r"
	got=$(lab_exec 1 cat /tmp/load/out.$k /tmp/load/st.$k | tr '\n' ' ')
	[ "$got" = "$want 0 " ] || {
		wrong=$((wrong + 1))
		echo "job $k: '$got', expected '$want 0'"
	}
done
[ "$wrong" -eq 0 ] || fail "$wrong of $N jobs did not end exact"
echo "$N jobs ended exact, status 0"

# The tools' times, the flood's size.
lab_exec 1 cat /tmp/load/times > "${OSM_LOAD_TIMES:-/dev/null}"
times=$(lab_exec 1 $LOAD summary /tmp/load/times "$BOUND")
st=$?
echo "$times"
[ -z "$flood" ] || echo "flood: $(cat "$(lab_dir)/flood.out");" \
    "busy: $(cat "$(lab_dir)/busy.out")"
# Node 1's loop (mosd/looptime.c): slow iterations, and those slow by its
# own doing, a call that slept or 25 ms of its own CPU, which are bugs
# (a read of a process's /proc file in the loop slept 0.5 s): at most
# OSM_LOAD_OWN (4): bench/load's 200 processes still see 0 to 2 short
# waits (25-60 ms, in a client's read or an accept; not found yet); a
# 30 ms sleep in one callback a second makes 27.
iters=$(counter loop_iterations)
waited=$(counter loop_slow_waited)
worked=$(counter loop_slow_busy)
echo "node 1's loop: $iters iterations, $(counter loop_slow_iterations)" \
    "of them slow (25 ms or more), $waited of which slept in a call and" \
    "$worked worked that long; the longest $(counter loop_longest_ms) ms;" \
    "it waited for a core 25 ms or more $(counter loop_core_waits) times," \
    "the longest $(counter loop_core_wait_longest_ms) ms"
grep 'loop: ' "$(lab_dir)/node1/mosd.log" | tail -n 8
[ "$iters" -gt 1000 ] || fail "node 1's loop ran $iters iterations: not timed"
echo "node 1: $(counter control_turned_away) connections turned away," \
    "$(counter control_clients_dropped) clients cut off," \
    "$(counter control_requests_delayed) times requests read later"
if [ -n "$flood" ]; then
	# The flood was one: cut off again and again, answered at the rate
	# one user may ask (requests_per_user), its requests read later.
	grep -q '^cut [1-9][0-9]\{3,\} ' "$(lab_dir)/flood.out" ||
	    fail "the flood was not cut off: no flood"
	grep -q '^answers [1-9][0-9]\{3,\} ' "$(lab_dir)/busy.out" ||
	    fail "the busy flood was not answered: no flood"
	[ "$(counter control_requests_delayed)" -gt 0 ] ||
	    fail "the busy flood was never held back"
fi
[ "$st" -eq 0 ] ||
    fail "the tools did not all answer, 80% of the time within $BOUND ms"
[ $((waited + worked)) -le "${OSM_LOAD_OWN:-4}" ] ||
    fail "node 1's loop was slow by its own doing $((waited + worked)) times"

"$MOSLAB" down || fail "moslab down"
check_clean
echo PASS
