#!/bin/sh
# The node a checkpointed process runs on dies: the process goes on at
# home from its last checkpoint, one taken while it ran there, says so on
# its stderr, and finishes with its file as after an unbroken run (what it
# wrote since the checkpoint, it writes again at the same offsets). The
# restarted process moves on again, to node 3. Without a checkpoint the
# process is killed with a message (t-mosrun-fail).
#
# Beside it, a job started as users start them: from a shell that holds
# one more descriptor, a pipe (as under a CI runner or make -j), with
# stdout and stderr one file (`> log 2>&1`). Its checkpoints record the
# pipe, it restarts at home still holding that very pipe, and its log
# ends as an unbroken run's, the restart's message whole before the
# output written again. And a job whose checkpoints cannot be taken (a
# shell with a child) says so once on its stderr, however many fail, and
# mosps shows the failures, and the counter's last good checkpoint.
#
# And python3 with `> log 2>&1`, checkpointed on node 2, then refused a
# checkpoint there (its file's name is a directory) and told so on its
# stderr, then lost with node 2: restarted from the checkpoint before the
# line, it writes again over the line, and the restart says the line again
# first, so that the log is the unbroken run's and whole mosrun: lines,
# with no tail of the longer line left after the program's last.
. "$(dirname "$0")/lib.sh"
P=${OSM_MOSRUN:-$OSM_BIN/../build/tests/mosrun}

lab_up 3 --cpus 0.5 --mem 256
wait_cluster 3
S=$(lab_dir)/share
mkdir -p "$S"
"$MOSLAB" exec 1 sh -c "cd $S && mosrun -C $S/pk python3 -u -c '
import os, time
for i in range(3):
    while i and not os.path.exists(\"go.%d\" % i):
        time.sleep(0.05)
    print(\"stage\", i)
' > $S/py.log 2>&1" &
pjob=$!
wait_for 10 grep -qx "stage 0" "$S/py.log" ||
    fail "python3: $(cat "$S/py.log")"
ppid=$(pid_of python3)
lab_exec 1 mosmigrate "$ppid" 2 || fail "python3: move to node 2"
[ -n "$(guest_pid python3 2)" ] || fail "python3: no guest on node 2"
lab_exec 1 mosmigrate "$ppid" checkpoint > /dev/null &&
    [ -e "$S/pk.1" ] || fail "python3: no checkpoint on node 2: $(ls "$S")"
touch "$S/go.1"
wait_for 10 grep -qx "stage 1" "$S/py.log" ||
    fail "python3: no stage 1: $(cat "$S/py.log")"
mkdir "$S/pk.2" && touch "$S/pk.2/in-the-way"
lab_exec 1 mosmigrate "$ppid" checkpoint > /dev/null 2>&1 &&
    fail "python3: a checkpoint over a directory"
grep -q "^mosrun: process $ppid (python3): cannot checkpoint: .*pk\.2" \
    "$S/py.log" || fail "python3: not told: $(cat "$S/py.log")"
[ "$(where "$ppid")" = 2 ] || fail "python3 left node 2: $(lab_exec 1 mosps)"

"$MOSLAB" exec 1 sh -c "mosrun -L -C $S/ck -A 0.01 -N 2 $P/counter 100 \
    $S/out 100 > $S/stdout 2> $S/stderr" &
job=$!
wait_for 10 nprocs 2 || fail "the counter is not in mosps"
pid=$(pid_of counter)
sh -c 'echo $$ > "$0"; exec sleep 600' "$S/writer" | "$MOSLAB" exec 1 sh -c \
    "exec 7<&0 < /dev/null; mosrun -L -C $S/gk -A 0.01 $P/grow 120 0 0 100 \
    > $S/grow.log 2>&1" &
gjob=$!
wait_for 10 nprocs 3 || fail "grow is not in mosps"
# mosps lists the process once its deputy registered it, which may be
# before the pid is grow's and holds the shell's pipe
holds_pipe() {
	gpid=$(pid_of grow)
	[ -n "$gpid" ] || return 1
	pipe=$(lab_exec 1 readlink "/proc/$gpid/fd/7")
	case $pipe in pipe:*) ;; *) return 1 ;; esac
}
wait_for 10 holds_pipe || fail "grow holds no pipe on 7: pid '$gpid': \
    $(lab_exec 1 ls -l "/proc/$gpid/fd" 2>&1)"
"$MOSLAB" exec 1 sh -c "mosrun -C $S/sk -A 0.01 /bin/sh -c 'sleep 8; \
    echo end' > $S/sh.out 2> $S/sh.err" &
sjob=$!
two() {
	[ -e "$S/ck.2" ]
}
wait_for 10 two || fail "no checkpoints: $(ls "$S")"
lab_exec 1 mosmigrate "$pid" 2 || fail "move to node 2"
wait_for 10 test -e "$S/gk.1" ||
    fail "grow: no checkpoint with the pipe: $(cat "$S/grow.log")"
lab_exec 1 mosmigrate "$gpid" 2 || fail "grow: move to node 2"
[ -n "$(guest_pid grow 2)" ] || fail "grow: no guest grow on node 2"
last() {
	ls "$S" | sed -n 's/^ck\.\([0-9]*\)$/\1/p' | sort -n | tail -1
}
k=$(last)
# Two checkpoints taken away: the process stays on node 2 for them.
later() {
	[ "$(last)" -ge $((k + 2)) ]
}
wait_for 10 later || fail "no checkpoints away: $(ls "$S")"
[ "$(where "$pid")" = 2 ] && [ "$(where "$gpid")" = 2 ] ||
    fail "the counter or grow left node 2: $(lab_exec 1 mosps)"
gk=$(ls "$S" | sed -n 's/^gk\.\([0-9]*\)$/\1/p' | sort -n | tail -1)
gaway() {
	[ -e "$S/gk.$((gk + 1))" ]
}
wait_for 10 gaway || fail "grow: no checkpoint away"
ps=$(lab_exec 1 mosps --json -p "$pid")
echo "$ps" | pyjson "d['procs'][0]['checkpoints']['written'] >= 3 and \
    abs(d['procs'][0]['checkpoints']['last_ms'] / 1000 - $(date +%s)) < 60" ||
    fail "mosps: the counter's checkpoints: $ps"
shown() {
	[ -n "$(pid_of sh)" ]
}
wait_for 10 shown || fail "sh: not in mosps"
spid=$(pid_of sh)
failing() {
	lab_exec 1 mosps --json -p "$spid" | pyjson \
	    "d['procs'][0]['checkpoints']['failed'] >= 2 and \
	    d['procs'][0]['checkpoints']['last_ms'] is None and \
	    'child processes' in d['procs'][0]['checkpoints']['failed_why']"
}
wait_for 10 failing || fail "sh: mosps: $(lab_exec 1 mosps -v -p "$spid")"
lab_exec 1 mosps -v -p "$spid" | grep -q "checkpoints failing" ||
    fail "sh: mosps -v: $(lab_exec 1 mosps -v -p "$spid")"
n=$(grep -c . "$S/out")
k=$(last)
"$MOSLAB" kill 2 || fail "moslab kill 2"
# grow: restarted, holding its pipe still, its shared log exact.
wait_for 10 grep -q "restarting it here" "$S/grow.log" ||
    fail "grow: no restart: $(cat "$S/grow.log")"
[ "$(lab_exec 1 readlink "/proc/$gpid/fd/7")" = "$pipe" ] ||
    fail "grow: after the restart 7 is $(lab_exec 1 readlink \
    "/proc/$gpid/fd/7"), not $pipe"
restarted() {
	grep -q "restarting it here" "$S/stderr"
}
wait_for 10 restarted || fail "no restart: $(cat "$S/stderr")"
from=$(sed -n "s|.*was lost with node 2: .*restarting it here from $S/ck\.||p" \
    "$S/stderr")
[ -n "$from" ] && [ "$from" -ge "$k" ] ||
    fail "no restart from ck.$k or later: $(cat "$S/stderr")"
lab_exec 1 mosmigrate "$pid" 3 || fail "the restarted counter: move to node 3"
[ "$(where "$pid")" = 3 ] ||
    fail "the restarted counter is not on node 3: $(lab_exec 1 mosps)"
wait "$job" || fail "the counter failed: $(cat "$S/stderr")"
seq 100 > "$S/want"
echo done >> "$S/want"
cmp -s "$S/want" "$S/out" || fail "out after the restart: $(tail -2 "$S/out")"
[ "$n" -lt 100 ] || fail "the counter had finished before the kill"

# The pipe's writer lives as long as the test lets it: the job is the
# pipeline, writer included.
wait_for 30 grep -qx done "$S/grow.log" ||
    fail "grow: not done: $(tail -2 "$S/grow.log")"
kill "$(cat "$S/writer")"
wait "$gjob" || fail "grow: $(tail -3 "$S/grow.log")"
grep -qx "mosrun: process $gpid (grow) was lost with node 2: .*; restarting it here from $S/gk\.[0-9]*" \
    "$S/grow.log" || fail "grow: the message: $(grep mosrun "$S/grow.log")"
i=0
while [ "$i" -lt 120 ]; do echo "tick $i"; i=$((i + 1)); done > "$S/grow.want"
printf 'verified 0 MiB\ndone\n' >> "$S/grow.want"
grep -v '^mosrun:' "$S/grow.log" | cmp -s "$S/grow.want" - ||
    fail "grow: the log: $(tail -3 "$S/grow.log")"

# python3: restarted from pk.1, before the told line; the log is the
# unbroken run's and whole mosrun: lines, the told one said again first.
wait_for 10 grep -q "restarting it here from $S/pk\.1\$" "$S/py.log" ||
    fail "python3: no restart: $(cat "$S/py.log")"
touch "$S/go.2"
wait "$pjob" || fail "python3: $(cat "$S/py.log")"
printf 'stage %s\n' 0 1 2 > "$S/py.want"
grep -v '^mosrun:' "$S/py.log" | cmp -s "$S/py.want" - ||
    fail "python3: the log: $(cat -A "$S/py.log")"
grep '^mosrun:' "$S/py.log" > "$S/py.ours"
[ "$(grep -c "cannot checkpoint: .*(said once; mosps -v shows the last good checkpoint)\$" \
    "$S/py.ours")" = 1 ] && [ "$(grep -c "was lost with node 2: .*; restarting it here from $S/pk\.1\$" \
    "$S/py.ours")" = 1 ] && [ "$(grep -c . "$S/py.ours")" = 2 ] ||
    fail "python3: osmosis's lines: $(cat -A "$S/py.ours")"

# sh: checkpoints refused (its child), said once, shown by mosps.
wait "$sjob" || fail "sh: $(cat "$S/sh.err")"
[ "$(grep -c "^mosrun: process [0-9]* (sh): cannot checkpoint: .*child processes" \
    "$S/sh.err")" = 1 ] || fail "sh: stderr: $(cat "$S/sh.err")"
grep -qx end "$S/sh.out" || fail "sh: its output: $(cat "$S/sh.out")"

"$MOSLAB" down || fail "moslab down"
check_clean
echo PASS
