#!/bin/sh
# Forwarding without the round trip (docs/REMOTE.md, "Answered where it
# runs"): a process started on node 2 gets its identity there — right
# across setgroups, setresgid, setresuid and setsid, and after its parent
# dies at home — with its getpid calls never sent home, libc's answered
# inside the process; its CPU-time clock
# polled in a loop is answered inside it, monotonic and total across a
# move — each thread's own clock from that thread's own time, threads
# made away from 0 — and none of those calls reach its guest agent or
# the home; back home, and through checkpoints and a move again, the
# clocks go on from their totals, and times() and getrusage() with them
# (away, at home, and in a child forked at home from 0), answered inside
# the process away too, none by its guest agent. Its
# regular files at home: read ahead (read and pread64 streams, reads
# larger than a window streamed in pieces), written
# behind, read back from what it wrote, a descriptor and its duplicate
# sharing one offset, and a change at home by another process seen as
# docs/REMOTE.md's rule says, sqlite3's databases included.
. "$(dirname "$0")/lib.sh"

lab_up 2
wait_cluster 2
D=$(lab_dir)/fast
mkdir -p "$D" && chmod 755 "$(lab_dir)" "$D" || fail "mkdir $D"

# --- identity -----------------------------------------------------------
# The parent shell ends once the process is ready: it is reparented.
n=$(ends)
lab_exec 1 sh -c 'cd "$1" && { OSM_DEPUTY_LOG=$1/ident.log \
    OSM_DEPUTY_DEBUG=1 mosrun -L -r 2 "$2" > ident.out 2>&1 & } &&
    i=0 && until grep -q ready ident.out; do
	i=$((i + 1)); [ $i -lt 600 ] || exit 1; sleep 0.05; done' \
    sh "$D" "$OSM_MOSRUN/ident" || fail "ident: not ready: $(cat "$D/ident.out")"
wait_for 60 grep -q '^ok' "$D/ident.out" ||
    fail "ident: $(cat "$D/ident.out")"
# It was away (its reads of /proc/self/status went home), and of its
# thousand getpid calls and more none went home but the first.
opens=$(grep -c ': openat = ' "$D/ident.log")
pids=$(grep -c ': getpid = ' "$D/ident.log")
[ "$opens" -ge 400 ] || fail "ident: $opens opens sent home: was it away?"
[ "$pids" -le 1 ] || fail "ident: $pids getpid calls sent home"
# libc's getpid and the like answered by the stub in the process, with
# no notification: its thousand getpid() and the checks' (docs/REMOTE.md,
# "Identity")
line=$(end_after "$n") || fail "ident: no end on node 2"
inr=$(echo "$line" | sed -n 's/.* identity answered here (\([0-9]*\) in R).*/\1/p')
[ "${inr:-0}" -ge 1000 ] ||
    fail "ident: ${inr:-no} identity calls answered in the process"
echo "identity: $(grep '^ok' "$D/ident.out"), $opens opens and $pids getpid sent home, $inr answered in the process"

# --- CPU-time clocks ------------------------------------------------------
# Polled at home to 0.3 s of CPU, moved to node 2, polled there to 1.5 s:
# never backwards, never a jump, and the polls made on node 2 answered in
# the process itself, not by its guest agent. The move is live in eight
# rounds, while it polls at home: what it ran meanwhile counts.
L2=$(lab_dir)/node2/mosd.log
lab_exec 1 sh -c 'cd "$1" && { OSM_LIVE_ROUNDS=8 mosrun -L "$2" 1.5 \
    > clock.out 2>&1 & }' \
    sh "$D" "$OSM_MOSRUN/clock" || fail "clock: not started"
wait_for 20 grep -q ready "$D/clock.out" || fail "clock: $(cat "$D/clock.out")"
pid=$(pid_of clock)
[ -n "$pid" ] || fail "clock: not listed"
c2=$(node_cpu 2)
lab_exec 1 mosmigrate "$pid" 2 || fail "clock: not moved"
wait_for 60 grep -q -e '^ok' -e went "$D/clock.out" ||
    fail "clock: no end: $(cat "$D/clock.out")"
grep -q '^ok' "$D/clock.out" || fail "clock: $(cat "$D/clock.out")"
c2=$(( $(node_cpu 2) - c2 ))
[ "$c2" -ge 600000000 ] || fail "clock: node 2 charged only $c2 ns"
wait_for 10 grep -q "guest $pid@1 .*ended" "$L2" || fail "clock: no end on node 2"
emulated=$(sed -n "s/.*guest $pid@1 .*ended.* \([0-9]*\) CPU clocks.*/\1/p" "$L2")
[ "$emulated" -le 10 ] ||
    fail "clock: $emulated CPU clock calls answered by the guest agent"
echo "clocks: $(cat "$D/clock.out" | tail -1), node 2 charged $c2 ns, $emulated answered by the guest"

# Two threads polling, moved the same way: each thread's own clock goes
# on from that thread's time — through the stub, whose table holds each
# thread's base — never jumping by the process's, never starting again
# at 0, and each ends with about half the process's time.
lab_exec 1 sh -c 'cd "$1" && { OSM_LIVE_ROUNDS=8 mosrun -L "$2" 1.5 threads \
    > thclock.out 2>&1 & }' \
    sh "$D" "$OSM_MOSRUN/clock" || fail "thread clocks: not started"
wait_for 20 grep -q ready "$D/thclock.out" ||
    fail "thread clocks: $(cat "$D/thclock.out")"
pid=$(pid_of clock)
[ -n "$pid" ] || fail "thread clocks: not listed"
c2=$(node_cpu 2)
lab_exec 1 mosmigrate "$pid" 2 || fail "thread clocks: not moved"
wait_for 60 grep -q -e '^ok' -e went -e 'thread clocks' "$D/thclock.out" ||
    fail "thread clocks: no end: $(cat "$D/thclock.out")"
grep -q '^ok.*; threads' "$D/thclock.out" ||
    fail "thread clocks: $(cat "$D/thclock.out")"
c2=$(( $(node_cpu 2) - c2 ))
[ "$c2" -ge 600000000 ] || fail "thread clocks: node 2 charged only $c2 ns"
wait_for 10 grep -q "guest $pid@1 .*ended" "$L2" ||
    fail "thread clocks: no end on node 2"
emulated=$(sed -n "s/.*guest $pid@1 .*ended.* \([0-9]*\) CPU clocks.*/\1/p" "$L2")
[ "$emulated" -le 10 ] ||
    fail "thread clocks: $emulated CPU clock calls answered by the guest agent"
echo "thread clocks: $(tail -1 "$D/thclock.out"), node 2 charged $c2 ns"

# One thread when it moved, a second made on node 2 (once SIGUSR1, sent
# at home, says so): the new thread's clock starts at 0 — the stub no
# longer takes the one thread's base for whoever asks — and the two
# threads' clocks are no more than the process's.
lab_exec 1 sh -c 'cd "$1" && { mosrun -L "$2" 1.2 late > late.out 2>&1 & }' \
    sh "$D" "$OSM_MOSRUN/clock" || fail "late thread: not started"
wait_for 20 grep -q ready "$D/late.out" || fail "late thread: $(cat "$D/late.out")"
pid=$(pid_of clock)
[ -n "$pid" ] || fail "late thread: not listed"
lab_exec 1 mosmigrate "$pid" 2 || fail "late thread: not moved"
[ "$(where "$pid")" = 2 ] || fail "late thread: not on node 2"
lab_exec 1 kill -USR1 "$pid" || fail "late thread: no signal"
wait_for 60 grep -q -e '^ok' -e went -e 'thread clocks' "$D/late.out" ||
    fail "late thread: no end: $(cat "$D/late.out")"
grep -q '^ok.*; threads' "$D/late.out" ||
    fail "late thread: $(cat "$D/late.out")"
wait_for 10 grep -q "guest $pid@1 .*ended" "$L2" ||
    fail "late thread: no end on node 2"
echo "late thread: $(tail -1 "$D/late.out")"

# The stub is not the program's: two threads polling on node 2 (their
# clocks, and times() and getrusage(), which must agree with them),
# checkpointed there and brought home while they poll, go on at home
# (its image names the vDSO as the kernel made it, and the stub's page is
# not in it); at home, where the deputy put the stub into P with what the
# process used away, the clocks go on from their totals, never back —
# through a checkpoint at home (which leaves P's stub out too) and a
# move to node 2 again, whose clocks count on from the same totals;
# times() and getrusage() too (the usage stub the deputy puts into libc's
# times and getrusage in P, beside the clock stub).
# (moslab exec's own pipe, 251, is no descriptor a checkpoint restores)
stub_at() {	# stub_at NODE PID: the stubs' code pages in PID's map there
	lab_exec "$1" sh -c "grep ' r-xp 00000000 00:00 0 *\$' \
	    /proc/$2/maps" | cut -d- -f1
}
lab_exec 1 bash -c 'cd "$1" && { OSM_DEPUTY_LOG=$1/back.dlog \
    mosrun -L -r 2 "$2" 4 threads usage > back.out 2>&1 251>&- & }' \
    sh "$D" "$OSM_MOSRUN/clock" || fail "back: not started"
wait_for 20 grep -q ready "$D/back.out" || fail "back: $(cat "$D/back.out")"
pid=$(pid_of clock)
[ "$(where "$pid")" = 2 ] || fail "back: not on node 2"
lab_exec 1 mosmigrate "$pid" checkpoint || fail "back: no checkpoint"
ck=$D/ckpt.$pid.1
[ -s "$ck" ] || fail "back: no checkpoint file"
# The image holds the program's areas only: none at the stub's address.
stub=$(stub_at 2 "$(guest_pid clock 2)")
[ -n "$stub" ] || fail "back: no stub in the copy's map"
"$OSM_BIN/moscr" info "$ck" > "$D/ck.info" 2>&1 || fail "back: $(cat "$D/ck.info")"
for s in $stub; do
	! grep -q "$s" "$D/ck.info" || fail "back: the stub's page is in the image"
done
# ... and each thread's CPU time, and the process's
total=$(sed -n 's/^cpu time: .*, \([0-9.]*\) s wherever it ran$/\1/p' "$D/ck.info")
[ -n "$total" ] && awk -v t="$total" 'BEGIN { exit !(t >= 0.3) }' &&
    [ "$(grep -c ', cpu [0-9.]* s$' "$D/ck.info")" = 2 ] ||
    fail "back: no CPU times in the image: $(cat "$D/ck.info")"
lab_exec 1 mosmigrate "$pid" home || fail "back: not brought home"
wait_for 10 grep -q "guest $pid@1 goes home" "$L2" || fail "back: not sent home"
[ "$(where "$pid")" = 1 ] ||
    fail "back: not home: $(cat "$D/back.out" "$D/back.dlog")"
hstub=$(stub_at 1 "$pid")
# the clock stub's and the usage stub's (times, getrusage)
[ "$(echo $hstub | wc -w)" = 2 ] || fail "back: no stubs in P at home: $hstub"
lab_exec 1 mosmigrate "$pid" checkpoint || fail "back: no checkpoint at home"
ck2=$(ls -t "$D"/ckpt.$pid.* | head -1)
[ "$ck2" != "$ck" ] || fail "back: no second checkpoint"
"$OSM_BIN/moscr" info "$ck2" > "$D/ck2.info" 2>&1 || fail "back: $(cat "$D/ck2.info")"
for s in $hstub; do
	! grep -q "$s" "$D/ck2.info" || fail "back: P's stub's page is in the image"
done
lab_exec 1 mosmigrate "$pid" 2 || fail "back: not moved again"
for s in $hstub; do
	! lab_exec 1 grep -q "^$s-" /proc/$pid/maps ||
	    fail "back: the stub stayed in the husk"
done
wait_for 180 grep -q -e '^ok' -e went -e 'thread clocks' -e between \
    "$D/back.out" ||
    fail "back: no end: $(cat "$D/back.out")"
grep -q '^ok.*; threads' "$D/back.out" || fail "back: $(cat "$D/back.out")"
echo "home and away again: $(tail -1 "$D/back.out")"

# One thread, run on node 2 and brought home, where it then forks a child
# and makes a thread (signals say when): the child's clocks are its own,
# from 0 (the stub's data is not inherited), its times() and getrusage()
# too, and so is the new thread's (the stub no longer takes the one
# thread's base for whoever asks).
lab_exec 1 sh -c 'cd "$1" && { mosrun -L -r 2 "$2" 1.2 late usage \
    > hlate.out 2>&1 & }' sh "$D" "$OSM_MOSRUN/clock" ||
    fail "home thread: not started"
wait_for 20 grep -q ready "$D/hlate.out" || fail "home thread: $(cat "$D/hlate.out")"
pid=$(pid_of clock)
[ "$(where "$pid")" = 2 ] || fail "home thread: not on node 2"
lab_exec 1 mosmigrate "$pid" home || fail "home thread: not brought home"
[ "$(where "$pid")" = 1 ] || fail "home thread: not home"
[ "$(stub_at 1 "$pid" | wc -l)" = 2 ] ||
    fail "home thread: no stubs in P at home"
lab_exec 1 kill -USR2 "$pid" || fail "home thread: no signal"
wait_for 20 grep -q -e 'child ok' -e went -e between -e "child's" \
    "$D/hlate.out" ||
    fail "home thread: no child: $(cat "$D/hlate.out")"
lab_exec 1 kill -USR1 "$pid" || fail "home thread: no signal"
wait_for 60 grep -q -e '^ok' -e went -e 'clocks' -e between \
    "$D/hlate.out" ||
    fail "home thread: no end: $(cat "$D/hlate.out")"
grep -q 'child ok' "$D/hlate.out" && grep -q '^ok.*; threads' "$D/hlate.out" ||
    fail "home thread: $(cat "$D/hlate.out")"
echo "made at home: $(tail -1 "$D/hlate.out")"

# A second of CPU computed on node 2, then home, 0.6 s more there: the
# process's getrusage() and times() at its end count all 1.6 s, not the
# home kernel's 0.6.
lab_exec 1 sh -c 'cd "$1" && { mosrun -L -r 2 "$2" 1.6 usage > usage.out \
    2>&1 & }' sh "$D" "$OSM_MOSRUN/clock" || fail "usage: not started"
# (each of its raw times and getrusage calls away, syscall(2)'s, is a
# round trip to its guest agent, tens of microseconds on a loaded machine)
wait_for 120 grep -q -e 'at 1 s' -e went "$D/usage.out" ||
    fail "usage: $(cat "$D/usage.out")"
pid=$(pid_of clock)
[ "$(where "$pid")" = 2 ] || fail "usage: not on node 2"
lab_exec 1 mosmigrate "$pid" home || fail "usage: not brought home"
[ "$(where "$pid")" = 1 ] || fail "usage: not home"
wait_for 120 grep -q -e '^ok' -e went -e between "$D/usage.out" ||
    fail "usage: no end: $(cat "$D/usage.out")"
grep -q '^ok' "$D/usage.out" || fail "usage: $(cat "$D/usage.out")"
num='\([0-9.]*\)'
sed -n "s/.*rusage $num user $num system, times $num s\$/\\1 \\2 \\3/p" \
    "$D/usage.out" | awk '{ exit !($1 + $2 >= 1.55 && $3 >= 1.5) }' ||
    fail "usage: $(tail -1 "$D/usage.out")"
echo "usage back home: $(tail -1 "$D/usage.out")"

# times() and getrusage() polled on node 2, the whole run there (libc's
# only: no syscall(2) calls), one thread and two (RUSAGE_THREAD then finds
# its thread in the table): answered inside the process by the usage stub
# the guest put beside the clock stub, none of them by its guest agent,
# each going on as the clocks do and agreeing with them.
for m in single threads; do
	t=$m
	[ "$t" = single ] && t=
	c2=$(node_cpu 2)
	lab_exec 1 sh -c 'cd "$1" && { mosrun -L -r 2 "$2" 0.8 $3 usage noraw \
	    > uaway.out 2>&1 & }' sh "$D" "$OSM_MOSRUN/clock" "$t" ||
	    fail "usage away ($m): not started"
	wait_for 60 grep -q -e ready -e went "$D/uaway.out" ||
	    fail "usage away ($m): $(cat "$D/uaway.out")"
	pid=$(pid_of clock)
	[ "$(where "$pid")" = 2 ] || fail "usage away ($m): not on node 2"
	wait_for 120 grep -q -e '^ok' -e went -e between -e 'thread clocks' \
	    "$D/uaway.out" || fail "usage away ($m): no end: $(cat "$D/uaway.out")"
	grep -q '^ok.*usage' "$D/uaway.out" ||
	    fail "usage away ($m): $(cat "$D/uaway.out")"
	c2=$(( $(node_cpu 2) - c2 ))
	[ "$c2" -ge 500000000 ] || fail "usage away ($m): node 2 charged only $c2 ns"
	wait_for 10 grep -q "guest $pid@1 .*ended" "$L2" ||
	    fail "usage away ($m): no end on node 2"
	line=$(grep "guest $pid@1 .*ended" "$L2" | tail -1)
	uc=$(echo "$line" | sed -n 's/.* CPU clocks (\([0-9]*\) times and getrusage).*/\1/p')
	[ "$uc" = 0 ] ||
	    fail "usage away ($m): ${uc:-?} times and getrusage answered by the guest agent: $line"
	echo "usage away ($m): $(tail -1 "$D/uaway.out"), node 2 charged $c2 ns, $uc answered by the guest"
done

# --- regular files -------------------------------------------------------
F=$OSM_MOSRUN/files
n=$(ends)
# Written behind and read back ahead, away: the same file as at home.
lab_exec 1 sh -c 'cd "$1" && "$2" write home.dat 3000 > wh.out &&
    mosrun -L -r 2 "$2" write away.dat 3000 > wa.out 2>&1' sh "$D" "$F" ||
    fail "files write: $(cat "$D/wa.out")"
grep -q '^wrote 3000 of 3000$' "$D/wa.out" || fail "files write: $(cat "$D/wa.out")"
cmp -s "$D/home.dat" "$D/away.dat" || fail "files write: away.dat differs"
line=$(end_after "$n") || fail "files write: no end in node 2's log"
home=$(echo "$line" | sed -n 's/.*calls \([0-9]*\) sent home.*/\1/p')
behind=$(echo "$line" | sed -n 's/.*(\([0-9]*\) behind).*/\1/p')
served=$(echo "$line" | sed -n 's/.* \([0-9]*\) reads from.*/\1/p')
# 3,000 writes and 3,000 reads: gathered and sent behind, read ahead
[ "$home" -le 100 ] || fail "files write: $home calls sent home: $line"
[ "$behind" -ge 10 ] || fail "files write: $behind sent behind: $line"
[ "$served" -ge 2900 ] || fail "files write: $served reads read ahead: $line"

# A file system filled at home (a 12 MiB tmpfs in node 1), by default
# (writes behind): the writes go behind while it has room beyond the
# spare kept (8 MiB), then home as they are, so that the write that finds
# it full fails itself with ENOSPC, the same write as at home: the same
# output, "error on write K", and the file holds the blocks in order, each
# once (files checks it, reading it back): none lost, none twice.
mkdir -p "$D/full" "$D/fullh"
lab_exec 1 mount -t tmpfs -o size=12m tmpfs "$D/full" || fail "no tmpfs"
lab_exec 1 mount -t tmpfs -o size=12m tmpfs "$D/fullh" || fail "no tmpfs"
lab_exec 1 sh -c 'cd "$1" && "$2" write fullh/f 4000 > wfh.out 2>&1' \
    sh "$D" "$F" || fail "files full at home: $(cat "$D/wfh.out")"
n=$(ends)
lab_exec 1 sh -c 'cd "$1" && mosrun -L -r 2 "$2" write full/f 4000 > wf.out 2>&1' \
    sh "$D" "$F" || fail "files full: $(cat "$D/wf.out")"
m=$(sed -n 's/^wrote \([0-9]*\) of 4000$/\1/p' "$D/wfh.out")
[ -n "$m" ] && [ "$m" -gt 0 ] &&
    grep -qx "error on write $m: No space left on device" "$D/wfh.out" ||
    fail "files full at home: $(cat "$D/wfh.out")"
cmp -s "$D/wfh.out" "$D/wf.out" ||
    fail "files full: not as at home ($(tr '\n' ' ' < "$D/wfh.out")): $(cat "$D/wf.out")"
line=$(end_after "$n")
fb=$(echo "$line" | sed -n 's/.*(\([0-9]*\) behind).*/\1/p')
fo=$(echo "$line" | sed -n 's/.* \([0-9]*\) writes not behind for room at home.*/\1/p')
# 4 MiB beyond the spare: some 16 writes of 256 KiB behind, then at once
[ "$fb" -ge 10 ] && [ "$fo" -ge 1000 ] ||
    fail "files full: $fb behind, $fo at once: $line"

# Read ahead, then rewritten at home by another process: what R opens
# again at once (close-to-open), and what it reads on the old descriptor
# more than a second later, is the new content.
head -c 65536 /dev/zero | tr '\0' a > "$D/st.dat"
rm -f "$D/st.dat.go"
lab_exec 1 sh -c 'cd "$1" && { mosrun -L -r 2 "$2" stale st.dat > ws.out 2>&1 & }' \
    sh "$D" "$F" || fail "files stale: not started"
wait_for 20 grep -q '^read a' "$D/ws.out" || fail "files stale: $(cat "$D/ws.out")"
head -c 65536 /dev/zero | tr '\0' b | dd of="$D/st.dat" conv=notrunc 2>/dev/null
touch "$D/st.dat.go"
wait_for 20 grep -q -e '^fresh' -e stale "$D/ws.out" || fail "files stale: no end"
grep -q '^fresh b' "$D/ws.out" || fail "files stale: $(cat "$D/ws.out")"
wait_for 10 sh -c "grep ended '$L2' | tail -1 | grep -q ' [1-9][0-9]* reads from'" ||
    fail "files stale: nothing read ahead: $(grep ended "$L2" | tail -1)"

# Reads larger than a window (sort's of its whole input): streamed in
# pieces asked ahead, every byte checked, the offset after each right;
# the file rewritten at home by another process, a seek and a read of it
# all see the new bytes at once (nothing of a streamed read is kept).
rm -f "$D/big.dat.go"
n=$(ends)
lab_exec 1 sh -c 'cd "$1" &&
    { mosrun -L -r 2 "$2" big big.dat > wb.out 2>&1 & }' sh "$D" "$F" ||
    fail "files big: not started"
wait_for 30 grep -q -e '^read$' -e ':' "$D/wb.out" ||
    fail "files big: $(tr '\n' ' ' < "$D/wb.out")"
grep -q '^read$' "$D/wb.out" ||
    fail "files big: $(tr '\n' ' ' < "$D/wb.out")"
lab_exec 1 "$F" bigwrite "$D/big.dat" 1 || fail "files big: not rewritten"
touch "$D/big.dat.go"
wait_for 30 grep -q -e '^fresh' -e ':' "$D/wb.out" || fail "files big: no end"
grep -q '^fresh$' "$D/wb.out" ||
    fail "files big: $(tr '\n' ' ' < "$D/wb.out")"
line=$(end_after "$n") || fail "files big: no end in node 2's log"
# served on node 2: the four large reads streamed (the first read of a
# descriptor goes home with the question), where they went home
gserved=$(echo "$line" | sed -n 's/.* \([0-9]*\) reads from.*/\1/p')
gahead=$(echo "$line" |
    sed -n 's/.* reads from \([0-9]*\) read ahead.*/\1/p')
[ "${gserved:-0}" -ge 4 ] && [ "${gahead:-0}" -ge 8 ] ||
    fail "files big: $gserved reads from $gahead read ahead: $line"

# pread64s as sqlite makes them: a stream read ahead, a page read back
# from what the process wrote; the file rewritten at home by another
# process: after a lock the process reads the new bytes at once (a lock
# drops what it held of the file), without one 1.2 s later.
head -c 524288 /dev/zero | tr '\0' a > "$D/ps.dat"
rm -f "$D/ps.dat.go" "$D/ps.dat.go2"
n=$(ends)
lab_exec 1 sh -c 'cd "$1" && { mosrun -L -r 2 "$2" pstale ps.dat > wp.out 2>&1 & }' \
    sh "$D" "$F" || fail "files pstale: not started"
wait_for 20 grep -q -e '^read a w' -e stale "$D/wp.out" || fail "files pstale: $(cat "$D/wp.out")"
head -c 524288 /dev/zero | tr '\0' b | dd of="$D/ps.dat" conv=notrunc 2>/dev/null
touch "$D/ps.dat.go"
wait_for 20 grep -q -e '^again' -e stale "$D/wp.out" || fail "files pstale: $(cat "$D/wp.out")"
head -c 524288 /dev/zero | tr '\0' c | dd of="$D/ps.dat" conv=notrunc 2>/dev/null
touch "$D/ps.dat.go2"
wait_for 20 grep -q -e '^fresh' -e stale "$D/wp.out" || fail "files pstale: no end"
grep -q '^fresh b c' "$D/wp.out" || fail "files pstale: $(cat "$D/wp.out")"
line=$(end_after "$n") || fail "files pstale: no end in node 2's log"
pserved=$(echo "$line" | sed -n 's/.* \([0-9]*\) reads from.*/\1/p')
pheld=$(echo "$line" | sed -n 's/.* \([0-9]*\) from what it wrote.*/\1/p')
[ "${pserved:-0}" -ge 3 ] && [ "${pheld:-0}" -ge 2 ] ||
    fail "files pstale: $pserved reads read ahead, $pheld from what it wrote: $line"

# A descriptor and its duplicate share one offset (dup, dup2, dup3,
# F_DUPFD...), and copy_file_range, sendfile and splice with no offset of
# their own move it: what each read gets, and what each write lands on, is
# as at home (files checks every byte), while reads before are read ahead.
n=$(ends)
lab_exec 1 sh -c 'cd "$1" && "$2" dup dh.dat > dh.out 2>&1;
    mosrun -L -r 2 "$2" dup da.dat > da.out 2>&1; true' sh "$D" "$F"
grep -q '^ok$' "$D/dh.out" || fail "files dup at home: $(cat "$D/dh.out")"
cmp -s "$D/dh.out" "$D/da.out" ||
    fail "files dup: not as at home: $(diff "$D/dh.out" "$D/da.out" | grep '^[<>]')"
line=$(end_after "$n") || fail "files dup: no end in node 2's log"
dserved=$(echo "$line" | sed -n 's/.* \([0-9]*\) reads from.*/\1/p')
[ "${dserved:-0}" -ge 10 ] || fail "files dup: $dserved reads read ahead: $line"
# The same from python3: os.dup, a file object on a dup, copy_file_range
# and sendfile between reads of a descriptor read ahead.
cat > "$D/dup.py" <<'EOF'
import hashlib, os, sys
fd = os.open(sys.argv[1], os.O_RDONLY)
got = [os.read(fd, 1000) for _ in range(3)]
fd2 = os.dup(fd)
got += [os.read(fd2, 1000), os.read(fd, 1000)]
os.lseek(fd, 0, os.SEEK_CUR)
got += [os.read(fd, 1000), os.read(fd2, 1000), os.read(fd, 1000)]
os.close(fd2)
out = os.open(sys.argv[1] + '.o', os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
os.copy_file_range(fd, out, 5000)
got.append(os.read(fd, 1000))
os.sendfile(out, fd, None, 5000)
got.append(os.read(fd, 1000))
with os.fdopen(os.dup(fd), 'rb') as f:
    got.append(f.read(3000))
got += [os.read(fd, 1000), os.pread(out, 20000, 0)]
print(hashlib.sha1(b''.join(got)).hexdigest(), os.lseek(fd, 0, os.SEEK_CUR))
EOF
head -c 1048576 /dev/urandom > "$D/dup.dat"
lab_exec 1 sh -c 'cd "$1" && python3 dup.py dup.dat > ph.out 2>&1 &&
    mosrun -L -r 2 /usr/bin/python3 dup.py dup.dat > pa.out 2>&1' sh "$D" ||
    fail "python3 dup: $(cat "$D/ph.out" "$D/pa.out")"
cmp -s "$D/ph.out" "$D/pa.out" ||
    fail "python3 dup: $(cat "$D/pa.out"), at home $(cat "$D/ph.out")"
echo "files dup: $(grep -vc '^ok$' "$D/da.out") cases as at home, $dserved reads read ahead; python3 as at home"

# --- sqlite3, its database at home -----------------------------------------
# A bulk load with a small page cache: inside its transaction sqlite3 reads
# back pages it wrote, after it a scan reads the table. Away: the same
# database as at home (.sha3sum), whole, and those reads served on node 2,
# for a tenth of the calls home of a strict run (mosrun -s).
cat > "$D/bulk.sql" <<'EOF'
pragma cache_size = 20;
create table t(k integer primary key, v text);
create index tv on t(v);
begin;
with recursive c(x) as (select 1 union all select x + 1 from c where x < 10000)
insert into t select x, printf('%08x', (x * 2654435761) % 4294967296) from c;
select count(*), min(v), max(v) from t;
commit;
select count(*), sum(length(v)) from t;
EOF
rm -f "$D/bh.db" "$D/ba.db" "$D/bs.db"
n=$(ends)
lab_exec 1 sh -c 'cd "$1" && exec 7</dev/null &&
    sqlite3 bh.db ".read bulk.sql" > bh.out 2>&1 &&
    mosrun -L -r 2 sqlite3 ba.db ".read bulk.sql" > ba.out 2>&1' sh "$D" ||
    fail "sqlite3 bulk: $(cat "$D/ba.out")"
la=$(end_after "$n") || fail "sqlite3 bulk: no end in node 2's log"
n=$(ends)
lab_exec 1 sh -c 'cd "$1" && mosrun -s -L -r 2 sqlite3 bs.db ".read bulk.sql" \
    > bs.out 2>&1' sh "$D" || fail "sqlite3 bulk strict: $(cat "$D/bs.out")"
ls=$(end_after "$n") || fail "sqlite3 bulk strict: no end in node 2's log"
cmp -s "$D/bh.out" "$D/ba.out" || fail "sqlite3 bulk: away, $(cat "$D/ba.out")"
[ "$(sqlite3 "$D/ba.db" 'pragma integrity_check')" = ok ] ||
    fail "sqlite3 bulk: $(sqlite3 "$D/ba.db" 'pragma integrity_check' | head -3)"
[ "$(sqlite3 "$D/ba.db" .sha3sum)" = "$(sqlite3 "$D/bh.db" .sha3sum)" ] ||
    fail "sqlite3 bulk: the database away is not the one at home"
echo "$ls" | grep -q '(0 behind).* 0 reads from 0' || fail "sqlite3 bulk: not strict: $ls"
ha=$(echo "$la" | sed -n 's/.*calls \([0-9]*\) sent home.*/\1/p')
hs=$(echo "$ls" | sed -n 's/.*calls \([0-9]*\) sent home.*/\1/p')
bheld=$(echo "$la" | sed -n 's/.* \([0-9]*\) from what it wrote.*/\1/p')
bserved=$(echo "$la" | sed -n 's/.* \([0-9]*\) reads from.*/\1/p')
[ "$((ha * 10))" -le "${hs:-0}" ] && [ "${bheld:-0}" -ge 1000 ] &&
    [ "${bserved:-0}" -ge 20 ] ||
    fail "sqlite3 bulk: $ha calls home ($hs strict), $bheld reads from what it wrote, $bserved read ahead: $la"

# One database at home, written away and at home in turn: the process away
# commits, a sqlite3 at home commits, the one away commits again. What it
# held of the file (its last commit's pages) is dropped at its next lock,
# so it sees the commit made at home: all three rows, and the file whole.
cat > "$D/two.py" <<'EOF'
import os, sqlite3, sys, time
print('start', flush=True)
db = sqlite3.connect(sys.argv[1], isolation_level=None, timeout=60)
db.execute("pragma journal_mode = persist")
db.execute("insert into t(v) values('away 1')")
print('ready', flush=True)
while not os.path.exists(sys.argv[1] + '.go'):
    time.sleep(0.01)
db.execute("insert into t(v) values('away 2')")
print('rows', ' '.join(v for (v,) in db.execute("select v from t order by k")))
EOF
rm -f "$D/two.db" "$D/two.db-journal" "$D/two.db.go"
sqlite3 "$D/two.db" "create table t(k integer primary key, v text)" ||
    fail "sqlite3 two: no database"
n=$(ends)
lab_exec 1 sh -c 'cd "$1" && { mosrun -L -r 2 /usr/bin/python3 two.py two.db \
    > two.out 2>&1 & }' sh "$D" || fail "sqlite3 two: not started"
wait_for 20 grep -q ready "$D/two.out" || fail "sqlite3 two: $(cat "$D/two.out")"
lab_exec 1 sqlite3 "$D/two.db" "insert into t(v) values('home 1')" ||
    fail "sqlite3 two: no insert at home"
touch "$D/two.db.go"
wait_for 20 grep -q '^rows' "$D/two.out" || fail "sqlite3 two: $(cat "$D/two.out")"
line=$(end_after "$n") || fail "sqlite3 two: no end in node 2's log"
check=$(sqlite3 "$D/two.db" "pragma integrity_check; select group_concat(v, ',') from t")
[ "$(tail -1 "$D/two.out")" = "rows away 1 home 1 away 2" ] &&
    [ "$(echo $check)" = "ok away 1,home 1,away 2" ] ||
    fail "sqlite3 two: $(tail -1 "$D/two.out"); the database says: $check"
echo "sqlite3: bulk $ha calls home ($hs strict), $bheld reads from what it wrote, $bserved read ahead; in turn: $(echo $check)"

# A shell's standard input shared with the process away: it leaves the
# offset where its reads left it (dd reads 3 x 777 bytes, cat the rest).
lab_exec 1 sh -c 'cd "$1" && { mosrun -L -r 2 dd bs=777 count=3 of=/dev/null \
    2>/dev/null; cat > rest.out; } < home.dat' sh "$D" || fail "offset: dd"
tail -c +2332 "$D/home.dat" | cmp -s - "$D/rest.out" || fail "offset: cat did not go on at byte 2331"
# Standard output and error the same open file (2>&1): writes behind
# keep its one offset, as at home (the deputy writes on P's own open file).
P='for (1..500) { syswrite STDOUT, "out $_\n"; syswrite STDERR, "err $_\n" }'
lab_exec 1 sh -c 'cd "$1" && perl -e "$2" > both.home 2>&1 &&
    OSM_DEPUTY_LOG=$1/both.log OSM_DEPUTY_DEBUG=1 mosrun -L -r 2 perl -e "$2" \
    > both.away 2>&1' sh "$D" "$P" || fail "2>&1: perl failed: $(tail -3 "$D/both.away")"
grep -v '^mosrun: ' "$D/both.away" | cmp -s "$D/both.home" - ||
    fail "2>&1: the output away differs"
n=$(grep -c 'write = .* (behind, by the deputy)' "$D/both.log")
[ "$n" -ge 900 ] || fail "2>&1: $n writes behind made by the deputy"
echo "files: $(cat "$D/wa.out"), $home calls home, $behind behind, $served read ahead; full: $(tr '\n' ' ' < "$D/wf.out")(as at home; $fb behind, $fo at once); stale: $(tail -1 "$D/ws.out"); big: $(tail -1 "$D/wb.out"), $gserved reads from $gahead read ahead"

# "files strict" in its owner's policy: every write goes home as it is.
printf 'default files strict\n' > "$(lab_dir)/policy.conf"
kill -HUP "$(cat "$(lab_dir)/node2/mosd.pid")"
wait_for 5 grep -q "reload: .*policy $(lab_dir)/policy.conf" "$L2" ||
    fail "strict: node 2 did not take the policy"
lab_exec 1 sh -c 'cd "$1" && mosrun -L -r 2 "$2" write strict.dat 200 \
    > wst.out 2>&1' sh "$D" "$F" || fail "strict: $(cat "$D/wst.out")"
grep -q '^wrote 200 of 200$' "$D/wst.out" || fail "strict: $(cat "$D/wst.out")"
wait_for 10 sh -c "grep ended '$L2' | tail -1 | grep -q '(0 behind).* 0 reads from 0'" ||
    fail "strict: written behind: $(grep ended "$L2" | tail -1)"
echo "strict: $(grep ended "$L2" | tail -1 | sed 's/.*ended: //')"
