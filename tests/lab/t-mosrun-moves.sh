#!/bin/sh
# Moving and coming home: 1 -> 2 -> 3 -> home -> 3 with the process still
# whole; fork away brings it home, where both processes finish; a static
# program moves; mosrun -r starts away; a Python program moved mid-run
# prints what an unmoved run prints; SIGTERM at home kills it with that
# status; nested mosrun runs; an ordinary user moves their process and
# nobody else's; mosrun -n keeps a process to the nodes it lists, and
# --checkpoint-on turns a signal into a checkpoint, after which
# --checkpoint-exec runs.
. "$(dirname "$0")/lib.sh"
P=${OSM_MOSRUN:-$OSM_BIN/../build/tests/mosrun}
SRC=$(cd "$(dirname "$0")/../mosrun" && pwd)

lab_up 3 --cpus 1 --mem 512
wait_cluster 3
lab_exec 1 sh -c 'echo home-secret > /tmp/home-only; mkfifo /tmp/go' ||
    fail "set-up"

# start NAME CMD...: run CMD (its output in /tmp/NAME) in node 1; $pid is
# the migratable process, $job the moslab exec running it.
start() {
	name=$1
	shift
	"$MOSLAB" exec 1 sh -c "$* > /tmp/$name 2>&1 < /dev/null; \
	    echo status \$? >> /tmp/$name" &
	job=$!
	wait_for 10 nprocs 1 ||
	    fail "$name: not in mosps: $(lab_exec 1 mosps -a)"
	pid=$(ps_list pid | head -n 1)
}
out() {
	lab_exec 1 cat "/tmp/$1"
}
has() {
	out "$1" | grep -qxF "$2" || fail "$1: expected '$2' in: $(out "$1")"
}

# 1 -> 2 -> 3 -> home -> 3, then the walk.
start walk "mosrun $P/walker /tmp/go walk 5"
wait_for 10 lab_exec 1 grep -q ready /tmp/walk || fail "walk: not ready"
for n in 2 3 home 3; do
	lab_exec 1 mosmigrate "$pid" "$n" || fail "walk: move to $n"
	w=$(where "$pid")
	[ "$w" = "$n" ] || [ "$n" = home -a "$w" = 1 ] ||
	    fail "walk: mosps says $w after the move to $n"
done
lab_exec 3 ps -eo comm | grep -qx walker || fail "walk: not on node 3"
lab_exec 1 mosmigrate "$pid" 3 2>/dev/null &&
    fail "walk: a move to where it is succeeded"
lab_exec 1 sh -c 'echo go > /tmp/go'
wait_for 15 lab_exec 1 grep -q "waiting for usr1" /tmp/walk ||
    fail "walk: stuck: $(out walk)"
lab_exec 1 kill -USR1 "$pid"
lab_exec 1 sh -c 'echo go > /tmp/go'
wait "$job"
has walk "log offset 13"
has walk "usr1 handled"
has walk "status 5"

# Fork once away: it comes home and forks there.
start fork "mosrun $P/walker /tmp/go fork"
wait_for 10 lab_exec 1 grep -q ready /tmp/fork || fail "fork: not ready"
lab_exec 1 mosmigrate "$pid" 2 || fail "fork: move"
lab_exec 1 sh -c 'echo go > /tmp/go'
wait "$job"
has fork "child exited 3"
has fork "status 0"
out fork | grep -q "^child [0-9]* parent $pid\$" ||
    fail "fork: the child's parent is not the process: $(out fork)"

# A static program, started away with -r.
start static "mosrun -r 2 $P/walker-static /tmp/go walk 4"
wait_for 10 lab_exec 1 grep -q ready /tmp/static || fail "static: not ready"
[ "$(where "$pid")" = 2 ] || fail "static: -r 2 left it at $(where "$pid")"
lab_exec 1 sh -c 'echo go > /tmp/go'
wait_for 15 lab_exec 1 grep -q "waiting for usr1" /tmp/static ||
    fail "static: stuck: $(out static)"
lab_exec 1 kill -USR1 "$pid"
lab_exec 1 sh -c 'echo go > /tmp/go'
wait "$job"
has static "usr1 handled"
has static "status 4"

# SIGTERM at home: its parent sees it die of SIGTERM.
start term "mosrun $P/walker /tmp/go wait"
wait_for 10 lab_exec 1 grep -q ready /tmp/term || fail "term: not ready"
lab_exec 1 mosmigrate "$pid" 3 || fail "term: move"
lab_exec 1 kill -TERM "$pid"
wait "$job"
has term "status 143"

# Python moved mid-run prints what it prints unmoved.
lab_exec 1 python3 "$SRC/count.py" > "$(lab_dir)/py.ref" || fail "python"
start py "mosrun python3 $SRC/count.py"
sleep 0.5
lab_exec 1 mosmigrate "$pid" 2 || fail "python: move"
wait "$job"
out py | grep -v '^status ' | cmp -s - "$(lab_dir)/py.ref" ||
    fail "python: output differs: $(out py | diff - "$(lab_dir)/py.ref")"
has py "status 0"

# Nested: mosrun execs mosrun, and a migratable shell runs mosrun.
start nest "mosrun sh -c 'mosrun true && exec mosrun $P/walker-static /tmp/go walk 6'"
wait_for 10 lab_exec 1 grep -q ready /tmp/nest || fail "nested: not ready"
lab_exec 1 mosmigrate "$pid" 2 || fail "nested: move"
lab_exec 1 sh -c 'echo go > /tmp/go'
wait_for 15 lab_exec 1 grep -q "waiting for usr1" /tmp/nest ||
    fail "nested: stuck: $(out nest)"
lab_exec 1 kill -USR1 "$pid"
lab_exec 1 sh -c 'echo go > /tmp/go'
wait "$job"
has nest "status 6"

# An ordinary user (uid 4242) moves their process; another (4343) may not.
lab_exec 1 chmod 666 /tmp/go
start user "setpriv --reuid 4242 --regid 4242 --clear-groups mosrun \
    $P/walker /tmp/go walk 0"
wait_for 10 lab_exec 1 grep -q ready /tmp/user || fail "user: not ready"
lab_exec 1 setpriv --reuid 4343 --regid 4343 --clear-groups \
    mosmigrate "$pid" 2 2>&1 | grep -q "only its owner or root" ||
    fail "user: another user could move it"
[ -z "$(lab_exec 1 setpriv --reuid 4343 --regid 4343 --clear-groups \
    mosps -o pid)" ] || fail "user: mosps shows another user's process"
lab_exec 1 setpriv --reuid 4242 --regid 4242 --clear-groups \
    mosmigrate "$pid" 2 || fail "user: its owner could not move it"
[ "$(ps_field "$pid" user)" = 4242 ] || fail "user: mosps -a does not show it"
lab_exec 1 sh -c 'echo go > /tmp/go'
wait_for 15 lab_exec 1 grep -q "waiting for usr1" /tmp/user ||
    fail "user: stuck: $(out user)"
lab_exec 1 kill -USR1 "$pid"
lab_exec 1 sh -c 'echo go > /tmp/go'
wait "$job"
has user "usr1 handled"
has user "status 0"

# -n 2: moves only to node 2; --checkpoint-on USR1 away checkpoints it,
# the program never sees the signal, and --checkpoint-exec runs after.
lab_exec 1 sh -c 'printf "#!/bin/sh\necho \"\$*\" >> /tmp/hook.log\n" \
    > /tmp/hook && chmod 755 /tmp/hook' || fail "hook"
start sig "mosrun -n 2 -C /tmp/sig --checkpoint-on USR1 --checkpoint-exec \
    /tmp/hook $P/counter 40 /tmp/sig.count 100"
lab_exec 1 mosmigrate "$pid" 3 2>&1 | grep -q "may run only on the nodes" ||
    fail "sig: a move to node 3, not listed, was not refused"
lab_exec 1 mosmigrate "$pid" 2 || fail "sig: move to node 2"
lab_exec 1 kill -USR1 "$pid"
hooked() {
	lab_exec 1 grep -qx "/tmp/sig.1 signal $pid" /tmp/hook.log
}
wait_for 10 hooked || fail "sig: no hook: $(lab_exec 1 cat /tmp/hook.log)"
lab_exec 1 test -s /tmp/sig.1 || fail "sig: no checkpoint"
[ "$(where "$pid")" = 2 ] || fail "sig: not on node 2 after the checkpoint"
wait "$job"
has sig "done"
has sig "status 0"

"$MOSLAB" down || fail "moslab down"
check_clean
echo PASS
