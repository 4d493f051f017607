#!/bin/sh
# Threads away: an OpenMP program moved 1 -> 2 -> home mid-run prints what
# an unmoved run prints, its CPU time charged to node 2, the untouched
# pages of its thread's stack not sent; a pthread program whose workers
# forward writes while another thread waits in a forwarded read of a FIFO
# fed later, all of it on node 2; a file read by one thread and written
# out by two in turn, away, exact, read ahead and written behind; a write
# behind seen by another thread's read, not held up by a FIFO's read at
# home; a write behind's failure told by another thread's fsync; xz -T2.
. "$(dirname "$0")/lib.sh"
P=${OSM_MOSRUN:-$OSM_BIN/../build/tests/mosrun}

lab_up 2 --cpus 2 --mem 512
wait_cluster 2
lab_exec 1 mkfifo /tmp/feed || fail "set-up"

# start NAME CMD...: run CMD (its output in /tmp/NAME) in node 1, from a
# shell holding a descriptor of its own; $pid is the migratable process.
start() {
	name=$1
	shift
	"$MOSLAB" exec 1 sh -c "exec 7</dev/null; $* > /tmp/$name 2>&1; \
	    echo status \$? >> /tmp/$name" &
	job=$!
	wait_for 10 nprocs 1 ||
	    fail "$name: not in mosps: $(lab_exec 1 mosps -a)"
	pid=$(ps_list pid | head -n 1)
}
out() {
	lab_exec 1 cat "/tmp/$1"
}

# OpenMP, moved mid-run, and home again.
lab_exec 1 sh -c "$P/threads omp 10 > /tmp/omp-ref" || fail "omp: reference"
start omp "OSM_DEPUTY_LOG=/tmp/omp.dlog mosrun $P/threads omp 10"
wait_for 10 lab_exec 1 grep -q "phase 0" /tmp/omp || fail "omp: no start"
before=$(node_cpu 2)
lab_exec 1 mosmigrate "$pid" 2 || fail "omp: move to 2"
[ "$(where "$pid")" = 2 ] || fail "omp: not on node 2"
# ... live, sending what holds data: its second thread's 8 MiB stack,
# nearly all of it never touched, is not sent (nor sent again frozen)
sent=$(lab_exec 1 sed -n 's/.*to node 2: live, .*; \([0-9]*\) bytes in .*/\1/p' \
    /tmp/omp.dlog)
[ -n "$sent" ] && [ "$sent" -lt 6000000 ] ||
    fail "omp: the move sent ${sent:-?} bytes: $(lab_exec 1 cat /tmp/omp.dlog)"
thr=$(ps_field "$pid" thr)
[ "$thr" = 2 ] || fail "omp: mosps says $thr threads, not 2"
rpid=$(lab_exec 2 pgrep -x threads | head -n 1)
n=$(lab_exec 2 sh -c "ls /proc/$rpid/task | wc -l")
[ "$n" -eq 2 ] || fail "omp: $n threads on node 2, not its 2"
# ... with its home's pid (in a PID namespace of its own) and no privilege
lab_exec 2 grep -q "^NSpid:.*[[:space:]]$pid\$" /proc/$rpid/status ||
    fail "omp: its pid on node 2 is not $pid"
# ... holding none of its guest's descriptors: 0-2 and its filter's
nfd=$(lab_exec 2 ls /proc/$rpid/fd | wc -l)
[ "$nfd" -le 4 ] || fail "omp: R holds $nfd descriptors on node 2"
for tid in $(lab_exec 2 ls /proc/$rpid/task); do
	lab_exec 2 grep -qxF "CapPrm:	0000000000000000" \
	    /proc/$rpid/task/$tid/status || fail "omp: thread $tid has caps"
done
wait_for 30 lab_exec 1 grep -q "phase 4" /tmp/omp || fail "omp: stuck: $(out omp)"
lab_exec 1 mosmigrate "$pid" home || fail "omp: move home"
wait "$job"
used=$(( $(node_cpu 2) - before ))
[ "$used" -gt 500000000 ] || fail "omp: node 2 charged only $used ns"
out omp | grep -qx "status 0" || fail "omp: $(out omp)"
lab_exec 1 sh -c "echo status 0 >> /tmp/omp-ref; cmp /tmp/omp /tmp/omp-ref" ||
    fail "omp: output differs: $(out omp)"

# A file read from start to end by one thread while two others write its
# pieces in turn on stdout (a file at home), all of it away from its
# start: stdout is the file again, byte for byte, read ahead and written
# behind, and strict (mosrun -s). Node 2 ran both: its log counts the
# calls each sent home, strict one at least for each 4 KiB piece, and
# the default a quarter of that at most.
lab_exec 1 sh -c "head -c 1500000 /dev/urandom | base64 > /tmp/copy-in" ||
    fail "copy: set-up"
L2=$(lab_dir)/node2/mosd.log
# copied OPTS: the calls node 2's guest sent home for a copy away
copied() {
	n0=$(grep -c . "$L2")
	lab_exec 1 sh -c "exec 7</dev/null; mosrun -L -r 2 $1 $P/threads \
	    copy /tmp/copy-in 2 > /tmp/copy-out 2> /tmp/copy-err" ||
	    fail "copy $1: $(lab_exec 1 cat /tmp/copy-err)"
	lab_exec 1 cmp /tmp/copy-in /tmp/copy-out || fail "copy $1: output \
	    differs: $(lab_exec 1 ls -l /tmp/copy-in /tmp/copy-out)"
	wait_for 10 ended_after "$n0" ||
	    fail "copy $1: node 2 did not run it: $(tail -5 "$L2")"
	calls_after "$n0"
}
ended_after() {
	tail -n +$(($1 + 1)) "$L2" | grep -q "ended: status 0; calls"
}
# calls_after N: calls and calls behind of the first guest ended after N
calls_after() {
	tail -n +$(($1 + 1)) "$L2" | sed -n 's/.* ended: status 0; calls \([0-9]*\) sent home (\([0-9]*\) behind).*/\1 \2/p' |
	    head -n 1 | awk '{ print $1 + $2 }'
}
strict=$(copied -s)
fast=$(copied "")
pieces=$(( ($(lab_exec 1 stat -c %s /tmp/copy-in) + 4095) / 4096 ))
[ "${strict:-0}" -ge "$pieces" ] ||
    fail "copy -s: node 2 sent ${strict:-0} calls home, for $pieces pieces"
[ $(( ${fast:-999999} * 4 )) -le "$strict" ] ||
    fail "copy: node 2 sent ${fast:-?} calls home, strict $strict"

# One thread writes a file in pieces (behind), the main thread reads each
# through a descriptor of its own right after: it sees every write, while
# a third thread waits at home in an open and a read of a FIFO, holding
# up none of it; node 2 sent the writes behind.
lab_exec 1 sh -c 'rm -f /tmp/feed; mkfifo /tmp/feed'
n0=$(grep -c . "$L2")
start share "mosrun -L -r 2 $P/threads share /tmp/feed /tmp/share.dat 300"
wait_for 60 lab_exec 1 grep -q "^share:" /tmp/share ||
    fail "share: held up: $(out share)"
out share | grep -qx "share: 300 pieces, 0 stale" || fail "share: $(out share)"
lab_exec 1 grep -q "fifo:" /tmp/share && fail "share: read before it was fed"
[ "$(where "$pid")" = 2 ] || fail "share: not on node 2: $(out share)"
lab_exec 1 sh -c 'echo word > /tmp/feed'
wait "$job"
out share | grep -qx "fifo: word" || fail "share: $(out share)"
out share | grep -qx "status 0" || fail "share: $(out share)"
wait_for 10 ended_after "$n0" || fail "share: no end on node 2"
behind=$(tail -n +$((n0 + 1)) "$L2" | sed -n 's/.* ended: status 0; calls [0-9]* sent home (\([0-9]*\) behind).*/\1/p' | head -n 1)
[ "${behind:-0}" -ge 300 ] || fail "share: ${behind:-0} calls behind"

# A write behind by a thread that fails at home (its file system filled
# meanwhile, by another process): the write said it wrote all, and the
# main thread's fsync after it says ENOSPC, as NFS would.
lab_exec 1 sh -c 'mkdir -p /tmp/tffull && mount -t tmpfs -o size=12m tf /tmp/tffull' ||
    fail "full: no tmpfs"
lab_exec 1 sh -c 'rm -f /tmp/feed; mkfifo /tmp/feed'
start full "mosrun -L -r 2 $P/threads full /tmp/feed /tmp/tffull/f"
wait_for 20 lab_exec 1 grep -q "^ready" /tmp/full || fail "full: $(out full)"
lab_exec 1 sh -c 'dd if=/dev/zero of=/tmp/tffull/fill bs=64k 2>/dev/null; true'
lab_exec 1 sh -c 'echo go > /tmp/feed'
wait "$job"
for want in "write: 65536" "fsync: No space left on device" "close: ok" \
    "status 0"; do
	out full | grep -qxF "$want" || fail "full: no '$want': $(out full)"
done
lab_exec 1 umount /tmp/tffull || fail "full: umount"

# A real threaded program away, xz -T2 in blocks of 1 MiB: the output of a
# run at home, with its writes sent behind.
lab_exec 1 sh -c "head -c 3000000 /dev/urandom | base64 > /tmp/xz-in &&
    xz -T2 -1 --block-size=1MiB -c /tmp/xz-in > /tmp/xz-ref" || fail "xz: reference"
n0=$(grep -c . "$L2")
lab_exec 1 sh -c "exec 7</dev/null; mosrun -L -r 2 xz -T2 -1 --block-size=1MiB \
    -c /tmp/xz-in > /tmp/xz-out 2> /tmp/xz-err" || fail "xz: $(lab_exec 1 cat /tmp/xz-err)"
lab_exec 1 cmp /tmp/xz-ref /tmp/xz-out || fail "xz: output differs"
wait_for 10 ended_after "$n0" || fail "xz: node 2 did not run it"
calls=$(calls_after "$n0")
[ "${calls:-999999}" -le 200 ] || fail "xz: ${calls:-?} calls home"

# Workers write while a thread waits in a read at home; the read fed later.
start pipe "mosrun $P/threads pipe /tmp/feed 40"
wait_for 10 lab_exec 1 grep -q ready /tmp/pipe || fail "pipe: not ready"
lab_exec 1 mosmigrate "$pid" 2 || fail "pipe: move to 2"
[ "$(where "$pid")" = 2 ] || fail "pipe: not on node 2"
wait_for 30 lab_exec 1 sh -c "grep -c 'done' /tmp/pipe | grep -qx 3" ||
    fail "pipe: the workers were held up: $(out pipe)"
[ "$(where "$pid")" = 2 ] || fail "pipe: went home: $(out pipe)"
lab_exec 1 grep -q "read:" /tmp/pipe && fail "pipe: read before it was fed"
lab_exec 1 mosps -v | grep -q "came home" &&
    fail "pipe: came home: $(lab_exec 1 mosps -v)"
lab_exec 1 sh -c 'echo word > /tmp/feed'
wait "$job"
out pipe | grep -q "^read: word (thread " || fail "pipe: $(out pipe)"
[ "$(out pipe | grep -c '^worker . line')" = 120 ] || fail "pipe: lines lost"
out pipe | grep -qx "status 0" || fail "pipe: $(out pipe)"

# Threads made, joined and ended away, staying away; a signal to one
# thread by its id, and one to the process that one thread alone takes;
# then a fork, which brings the threaded process home to fork there.
lab_exec 1 sh -c 'rm -f /tmp/feed; mkfifo /tmp/feed'
start spawn "mosrun $P/threads spawn /tmp/feed 5"
wait_for 10 lab_exec 1 grep -q ready /tmp/spawn || fail "spawn: not ready"
lab_exec 1 mosmigrate "$pid" 2 || fail "spawn: move to 2"
lab_exec 1 sh -c 'echo go > /tmp/feed'
wait_for 30 lab_exec 1 grep -q "waiting for usr2" /tmp/spawn ||
    fail "spawn: stuck: $(out spawn)"
[ "$(where "$pid")" = 2 ] || fail "spawn: went home: $(lab_exec 1 mosps -v)"
lab_exec 1 mosps -v | grep -q "came home" &&
    fail "spawn: came home: $(lab_exec 1 mosps -v)"
n=$(lab_exec 2 sh -c "ls /proc/\$(pgrep -x threads | head -1)/task | wc -l")
[ "$n" = 2 ] || fail "spawn: $n threads on node 2, not its 2"
lab_exec 1 kill -USR2 "$pid"
wait "$job"
grep -q "guest $pid@1 must go home: new process" "$(lab_dir)/node2/mosd.log" ||
    fail "spawn: the fork did not bring it home: $(tail -3 "$(lab_dir)/node2/mosd.log")"
[ "$(out spawn | grep -c '^round . thread .$')" = 20 ] ||
    fail "spawn: threads lost: $(out spawn)"
for want in "joined 20" "usr1 to the thread: took it" \
    "usr2 to the process: the one that takes it took it" \
    "child exited 3" "status 0"; do
	out spawn | grep -qxF "$want" || fail "spawn: no '$want': $(out spawn)"
done

# A thread other than main ends the process: its parent sees the status,
# or the signal, of a native run.
lab_exec 1 mosrun -r 2 "$P/threads" end 7
[ $? = 7 ] || fail "end: not status 7"
grep -q "ended: status 7" "$(lab_dir)/node2/mosd.log" ||
    fail "end: exit 7 did not happen on node 2"
lab_exec 1 sh -c "mosrun -r 2 $P/threads end -15; echo \$? > /tmp/end"
[ "$(lab_exec 1 cat /tmp/end)" = 143 ] ||
    fail "end: SIGTERM in a thread: status $(lab_exec 1 cat /tmp/end)"
grep -q "ended: signal 15" "$(lab_dir)/node2/mosd.log" ||
    fail "end: it did not end on node 2"

# A Python 3 program with threads, moved mid-run: the output of a run at
# home, but for its pid.
PY=$(cd "$(dirname "$0")/../mosrun" && pwd)/pythreads.py
lab_exec 1 python3 "$PY" | grep -v '^READY' > "$(lab_dir)/py.ref" ||
    fail "python: reference"
start py "mosrun python3 $PY"
nthreads() {
	[ "$(lab_exec 1 ls /proc/$pid/task | wc -l)" -ge 5 ]
}
wait_for 10 nthreads || fail "python: no threads: $(out py)"
lab_exec 1 mosmigrate "$pid" 2 || fail "python: move"
[ "$(where "$pid")" = 2 ] || fail "python: not on node 2"
[ "$(ps_field "$pid" thr)" -ge 5 ] || fail "python: its threads did not move"
wait "$job"
out py | grep -v '^READY' | grep -v '^status 0$' |
    cmp -s - "$(lab_dir)/py.ref" ||
    fail "python: output differs: $(out py | diff - "$(lab_dir)/py.ref")"
out py | grep -qx "status 0" || fail "python: $(out py)"

# Checkpoints taken away of the OpenMP program; its node dies; it goes on
# at home from the last one, and its output is as an unbroken run's.
S=$(lab_dir)/share
mkdir -p "$S"
"$MOSLAB" exec 1 sh -c "OSM_DEPUTY_LOG=$S/dlog mosrun -L -C $S/ck -A 0.005 $P/threads omp 16 \
    > $S/out 2> $S/err" &
job=$!
wait_for 10 nprocs 1 || fail "ckpt: not in mosps"
pid=$(ps_list pid | head -n 1)
lab_exec 1 mosmigrate "$pid" 2 || fail "ckpt: move to 2"
last() {
	ls "$S" | sed -n 's/^ck\.\([0-9]*\)$/\1/p' | sort -n | tail -1
}
k=$(last)
later() {
	[ "$(last)" -ge $((${k:-0} + 2)) ]
}
wait_for 20 later || fail "ckpt: no checkpoints away: $(ls "$S"; cat "$S/dlog")"
[ "$(where "$pid")" = 2 ] || fail "ckpt: left node 2"
"$OSM_BIN/moscr" info "$S/ck.$(last)" | grep -q "^threads: *2" ||
    fail "ckpt: $("$OSM_BIN/moscr" info "$S/ck.$(last)" | head -20)"
grep -q "phase 15" "$S/out" && fail "ckpt: it ended before the kill"
"$MOSLAB" kill 2 || fail "ckpt: moslab kill 2"
wait "$job" || fail "ckpt: it failed: $(cat "$S/err")"
grep -q "restarting it here" "$S/err" || fail "ckpt: no restart: $(cat "$S/err")"
lab_exec 1 sh -c "$P/threads omp 16" > "$S/ref" || fail "ckpt: reference"
cmp -s "$S/ref" "$S/out" || fail "ckpt: output differs: $(cat "$S/out")"

"$MOSLAB" down || fail "moslab down"
check_clean
echo PASS
