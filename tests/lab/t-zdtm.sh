#!/bin/sh
# Checkpoint/restore tests in the zdtm style (tests/zdtm/): each program
# sets up state and says READY, is dumped by moscr (which kills it),
# restored, then checks itself and prints PASS or FAIL. Threaded ones come
# back in a PID namespace of moscr's, with their pid and tids. Also:
# refusals of what cannot be restored, and truncated, corrupted or foreign
# images. Same machine, no lab; across lab nodes: t-zdtm-lab.sh.
set -u
: "${OSM_BIN:=$(cd "$(dirname "$0")/../.." && pwd)/bin}"
Z=${OSM_ZDTM:-$OSM_BIN/../build/tests/zdtm}
SRC=$(cd "$(dirname "$0")/../zdtm" && pwd)
MOSCR=$OSM_BIN/moscr
W=$(mktemp -d /var/tmp/osm-zdtm.XXXXXX) || exit 1
pids=""
passed=0
failed=0

cleanup() {
	for p in $pids; do kill -9 "$p" 2>/dev/null; done
	rm -rf "$W"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP PIPE

ok() { echo "ok   $name"; passed=$((passed + 1)); }
bad() {
	echo "FAIL $name: $*"
	for f in "$W/$name".out "$W/$name".err "$W/$name".derr "$W/$name".rerr; do
		[ -s "$f" ] && sed "s|^|    ${f##*/}: |" "$f"
	done
	failed=$((failed + 1))
}
now_ms() { echo $(( $(date +%s%N) / 1000000 )); }

# start NAME CMD...: run CMD, output in $W/NAME.out, wait for READY.
start() {
	name=$1
	shift
	"$@" > "$W/$name.out" 2> "$W/$name.err" < /dev/null &
	pid=$!
	pids="$pids $pid"
	waitready
}
waitready() {
	i=0
	while ! grep -q READY "$W/$name.out" 2>/dev/null; do
		i=$((i + 1))
		if [ $i -gt 300 ] || ! kill -0 "$pid" 2>/dev/null; then
			return 1
		fi
		sleep 0.1
	done
}

# dump [ARGS]: checkpoint $pid into $W/$name.img; the process is reaped.
dump() {
	"$MOSCR" dump "$pid" -o "$W/$name.img" "$@" 2> "$W/$name.derr" ||
	    return 1
	case " $* " in *" --leave-running "*) return 0 ;; esac
	wait "$pid" 2>/dev/null
	return 0
}

# restore_bg [ARGS]: restore in the background; $mpid is moscr, $rpid
# the restored process. $RESTORER may replace moscr restore -v; its
# standard input is $RESTORE_IN (a background job's is /dev/null).
restore_bg() {
	${RESTORER:-"$MOSCR" restore -v} "$@" 2> "$W/$name.rerr" \
	    < "${RESTORE_IN:-/dev/null}" &
	mpid=$!
	rpid=""
	i=0
	while [ -z "$rpid" ] && [ $i -lt 300 ]; do
		rpid=$(sed -n 's/.* as process \([0-9]*\):.*/\1/p' \
		    "$W/$name.rerr" 2>/dev/null)
		kill -0 "$mpid" 2>/dev/null || break
		i=$((i + 1))
		[ -n "$rpid" ] || sleep 0.1
	done
	[ -n "$rpid" ] && pids="$pids $rpid"
	[ -n "$rpid" ]
}

# A program restored in the background, told to check itself by SIGUSR1.
cycle_go() {
	restore_bg "$W/$name.img" "$@" || { bad "restore failed"; return; }
	kill -USR1 "$rpid"
	wait "$mpid"
	rc=$?
	if [ $rc -eq 0 ] && grep -q '^PASS' "$W/$name.out"; then ok; else
		bad "exit $rc"; fi
}

simple() {
	start "$@" || { bad "never ready"; return; }
	dump || { bad "dump failed"; return; }
	cycle_go
}

# --- programs ------------------------------------------------------------

simple basic-static "$Z/basic-static"
simple basic "$Z/basic"
# Into a process the restorer already holds under ptrace (as mosd will).
RESTORER=$Z/adopt
simple adopt "$Z/basic-static"
unset RESTORER
simple heap "$Z/heap" 1024

# Signals: SIGUSR2 sent to the restored process reaches its handler.
name=signals
if start signals "$Z/signals" && dump && restore_bg "$W/signals.img"; then
	kill -USR2 "$rpid"
	sleep 0.2
	kill -USR1 "$rpid"
	wait "$mpid"
	rc=$?
	if [ $rc -eq 0 ] && grep -q '^PASS' "$W/$name.out"; then ok; else
		bad "exit $rc"; fi
else
	bad "setup"
fi

# Work in flight: the restored run must end with the uninterrupted result.
for v in fpu fpu-static; do
	name=$v
	if start "$v" "$Z/$v" && sleep 1 && dump; then
		"$MOSCR" restore "$W/$name.img" 2> "$W/$name.rerr"
		rc=$?
		if [ $rc -eq 0 ] && grep -q '^PASS' "$W/$name.out"; then ok
		else bad "exit $rc"; fi
	else
		bad "setup"
	fi
done

# Asleep: dumped 3 s into a 6 s sleep, it must sleep only what was left.
for how in nanosleep sleep abs; do
	name=sleep-$how
	if start "$name" "$Z/sleep" "$how" 6 && sleep 3 && dump; then
		t0=$(now_ms)
		"$MOSCR" restore "$W/$name.img" 2> "$W/$name.rerr"
		rc=$?
		d=$(( $(now_ms) - t0 ))
		if [ $rc -ne 0 ] || ! grep -q '^PASS' "$W/$name.out"; then
			bad "exit $rc"
		elif [ $d -lt 1500 ] || [ $d -gt 4500 ]; then
			bad "slept $d ms after the restore, not about 3000"
		else
			ok
		fi
	else
		bad "setup"
	fi
done

# Blocked in read on a pipe; after the restore, ours feeds it.
name=pipe
mkfifo "$W/fifo"
"$Z/pipe" < "$W/fifo" > "$W/$name.out" 2> "$W/$name.err" &
pid=$!
pids="$pids $pid"
exec 7> "$W/fifo"
if waitready && sleep 0.3 && dump; then
	exec 7>&-
	printf 'restored line\n' | "$MOSCR" restore "$W/$name.img" \
	    2> "$W/$name.rerr"
	rc=$?
	if [ $rc -eq 0 ] && grep -q '^PASS' "$W/$name.out"; then ok; else
		bad "exit $rc"; fi
else
	exec 7>&-
	bad "setup"
fi

# Files written before and after, at sparse descriptors.
simple file "$Z/file" "$W"

# Python mid-run: same output as a run left alone.
name=python
python3 "$SRC/python.py" > "$W/python.ref" 2>&1 < /dev/null
if start python python3 "$SRC/python.py" && sleep 1 && dump; then
	"$MOSCR" restore "$W/$name.img" 2> "$W/$name.rerr"
	rc=$?
	# All but the READY line, which has the pid.
	tail -n +2 "$W/$name.out" > "$W/python.tail"
	if [ $rc -eq 0 ] && tail -n +2 "$W/python.ref" |
	    cmp -s - "$W/python.tail"; then ok
	else bad "exit $rc, output differs from an undisturbed run"; fi
else
	bad "setup"
fi

# --- threads -------------------------------------------------------------

# Restored in the background, checked: its old pid inside (a PID
# namespace of its own), ntask entries in /proc/PID/task, then told to
# check itself. The caller may feed its stdin on fd 9 meanwhile (feed).
cycle_ns() {
	ntask=$1
	shift
	restore_bg "$W/$name.img" "$@" || { bad "restore failed"; return; }
	inner=$(awk '/^NSpid:/ { print $NF }' "/proc/$rpid/status")
	have=$(ls "/proc/$rpid/task" | wc -l)
	${feed:-true}
	kill -USR1 "$rpid"
	wait "$mpid"
	rc=$?
	if [ "$inner" != "$pid" ]; then bad "pid $inner inside, not $pid"
	elif [ "$have" != "$ntask" ]; then bad "$have threads, not $ntask"
	elif ! grep -q "kept in a PID namespace" "$W/$name.rerr"; then
		bad "not restored in a PID namespace"
	elif [ $rc -eq 0 ] && grep -q '^PASS' "$W/$name.out"; then ok
	else bad "exit $rc"; fi
}

# Blocked each its own way; one reads stdin, fed after the restore.
threads_feed() { printf 'restored line\n' >&9; }
name=threads
mkfifo "$W/tfifo" "$W/tin"
exec 8<> "$W/tfifo"
"$Z/threads" < "$W/tfifo" > "$W/$name.out" 2> "$W/$name.err" &
pid=$!
pids="$pids $pid"
if waitready && dump; then
	exec 8>&- 9<> "$W/tin"
	feed=threads_feed
	RESTORE_IN=$W/tin
	cycle_ns 8
	unset feed RESTORE_IN
	exec 9>&-
else
	exec 8>&-
	bad "setup"
fi
simple_ns() {
	ntask=$1
	shift
	start "$@" || { bad "never ready"; return; }
	dump || { bad "dump failed"; return; }
	cycle_ns "$ntask"
}
simple_ns 4 sigthreads "$Z/sigthreads"
simple_ns 2 robust "$Z/robust"
# The main thread gone: a zombie in /proc/PID/task with the two others.
simple_ns 3 mainexit "$Z/mainexit"

# An OpenMP reduction dumped mid-way: the uninterrupted sum.
name=omp
if start omp "$Z/omp" && sleep 0.5 && dump; then
	"$MOSCR" info "$W/omp.img" > "$W/omp.info" 2>&1
	"$MOSCR" restore -v "$W/omp.img" 2> "$W/$name.rerr"
	rc=$?
	if ! grep -q '^threads:     4$' "$W/omp.info"; then
		bad "dumped without its 4 threads"
	elif [ $rc -eq 0 ] && grep -q '^PASS' "$W/$name.out"; then ok
	else bad "exit $rc"; fi
else
	bad "setup"
fi

# Python with threads mid-run: the same output as a run left alone.
name=python-threads
python3 "$SRC/python-threads.py" > "$W/$name.ref" 2>&1 < /dev/null
if start "$name" python3 "$SRC/python-threads.py" && sleep 0.5 && dump; then
	"$MOSCR" restore -v "$W/$name.img" 2> "$W/$name.rerr"
	rc=$?
	tail -n +2 "$W/$name.out" > "$W/$name.tail"
	if ! grep -q "kept in a PID namespace" "$W/$name.rerr"; then
		bad "restored without its threads"
	elif [ $rc -eq 0 ] && tail -n +2 "$W/$name.ref" |
	    cmp -s - "$W/$name.tail"; then ok
	else bad "exit $rc, output differs from an undisturbed run"; fi
else
	bad "setup"
fi

# Another user's process, dumped by that user, restored by root: it must
# come back as that user.
name=user
U=$W/user
mkdir "$U" && chmod 755 "$W" && chmod 777 "$U" && cp "$Z/basic" "$MOSCR" "$U/"
if setpriv --reuid=65534 --regid=65534 --clear-groups sh -c "
    cd '$U' || exit 1
    ./basic > user.out 2>&1 < /dev/null &
    p=\$!
    i=0
    until grep -q READY user.out 2>/dev/null; do
        i=\$((i + 1)); [ \$i -lt 300 ] || break; sleep 0.1
    done
    ./moscr dump \$p -o user.img || { kill -9 \$p; exit 1; }" \
    2> "$W/$name.derr" &&
    restore_bg "$U/user.img"; then
	uid=$(awk '/^Uid:/ { print $2 $3 $4 }' "/proc/$rpid/status")
	kill -USR1 "$rpid"
	wait "$mpid"
	rc=$?
	if [ "$uid" != 655346553465534 ]; then bad "runs as uid $uid"
	elif [ $rc -eq 0 ] && grep -q '^PASS' "$U/user.out"; then ok
	else bad "exit $rc"; fi
else
	bad "setup"
fi

# A threaded process of a user, dumped and restored by that user: in a
# user namespace of moscr's too, holding no capability there.
name=user-threads
cp "$Z/robust" "$U/"
if setpriv --reuid=65534 --regid=65534 --clear-groups sh -c "
    cd '$U' || exit 1
    ./robust > robust.out 2>&1 < /dev/null &
    p=\$!
    i=0
    until grep -q READY robust.out 2>/dev/null; do
        i=\$((i + 1)); [ \$i -lt 300 ] || break; sleep 0.1
    done
    ./moscr dump \$p -o robust.img || { kill -9 \$p; exit 1; }
    ./moscr restore -v robust.img 2> robust.rerr &
    m=\$!
    i=0
    until r=\$(sed -n 's/.* as process \([0-9]*\):.*/\1/p' robust.rerr) &&
        [ -n \"\$r\" ]; do
        i=\$((i + 1)); [ \$i -lt 300 ] || exit 1; sleep 0.1
    done
    awk '/^CapEff:/ { print \$2 }' /proc/\$r/status > robust.caps
    kill -USR1 \$r
    wait \$m" 2> "$W/$name.derr"; then
	if [ "$(cat "$U/robust.caps")" != 0000000000000000 ]; then
		bad "restored with capabilities $(cat "$U/robust.caps")"
	elif grep -q '^PASS' "$U/robust.out"; then ok
	else bad "$(cat "$U/robust.out")"; fi
else
	bad "$(cat "$U/robust.rerr" "$U/robust.out" 2>/dev/null)"
fi

# Through a pipe, with the original left running, output elsewhere.
name=stream
if start stream "$Z/basic" streamed; then
	"$MOSCR" dump "$pid" -o - --leave-running 2> "$W/$name.derr" |
	    "$MOSCR" restore -v --fd 1="$W/stream.copy" - 2> "$W/$name.rerr" &
	mpid=$!
	i=0
	rpid=""
	while [ -z "$rpid" ] && [ $i -lt 300 ]; do
		rpid=$(sed -n 's/.* as process \([0-9]*\):.*/\1/p' \
		    "$W/$name.rerr" 2>/dev/null)
		i=$((i + 1))
		[ -n "$rpid" ] || sleep 0.1
	done
	[ -n "$rpid" ] && pids="$pids $rpid" && kill -USR1 "$rpid"
	wait "$mpid"
	rc=$?
	kill -USR1 "$pid"
	wait "$pid"
	orc=$?
	if [ $rc -eq 0 ] && [ $orc -eq 0 ] &&
	    grep -q '^PASS' "$W/stream.copy" &&
	    grep -q '^streamed' "$W/stream.copy" &&
	    grep -q '^PASS' "$W/$name.out"; then ok
	else bad "restored exit $rc, original exit $orc"; fi
else
	bad "setup"
fi

# Descriptors no path opens again: a pipe the shell held (7, and its dup
# 8) is recorded; restored without --fd it is /dev/null, with a warning
# naming it, and with --fd 7=FILE it is FILE; 7 and 8 stay one either way.
fds_start() {
	name=$1
	shift
	sh -c 'echo $$ > "$0"; exec sleep 600' "$W/$name.writer" |
	    "$@" 7<&0 8<&7 < /dev/null > "$W/$name.out" 2> "$W/$name.err" &
	pid=$!
	pids="$pids $pid"
	waitready
	rc=$?
	# The writer goes first: dash waits for the whole pipeline.
	i=0
	until [ -s "$W/$name.writer" ] || [ $i -gt 100 ]; do
		i=$((i + 1))
		sleep 0.05
	done
	kill "$(cat "$W/$name.writer")" 2>/dev/null
	[ $rc -eq 0 ] && dump
}
if fds_start fds-null "$Z/fds" null; then
	"$MOSCR" info "$W/$name.img" > "$W/$name.info" 2>&1
	"$MOSCR" info --json "$W/$name.img" > "$W/$name.json" 2>&1
	if ! grep -q '^ *7 other  *pipe:\[' "$W/$name.info" ||
	    ! grep -q '^ *8 other  *pipe:.*shared with 7' "$W/$name.info"; then
		bad "moscr info: $(cat "$W/$name.info")"
	elif ! python3 -c '
import json, sys
f = {d["fd"]: d for d in json.load(open(sys.argv[1]))["files"]}
assert f[7]["kind"] == "other" and f[7]["what"].startswith("pipe:["), f[7]
assert f[8]["same_as"] == 7 and f[7]["same_as"] is None, f[8]
' "$W/$name.json"; then
		bad "moscr info --json: $(cat "$W/$name.json")"
	else
		cycle_go
		n=$(grep -c "descriptor [78] (pipe:\[[0-9]*\], read-only) cannot be opened again" \
		    "$W/$name.rerr")
		[ "$n" = 2 ] || { passed=$((passed - 1)); bad "warnings: $n"; }
	fi
else
	bad "setup"
fi
if fds_start fds-file "$Z/fds" file "$W/fds.data"; then
	printf 'data and more\n' > "$W/fds.data"
	cycle_go --fd 7="$W/fds.data"
	if grep -q "descriptor [78] .*cannot be opened again" "$W/$name.rerr"; then
		passed=$((passed - 1))
		bad "warned although --fd named the file"
	fi
else
	bad "setup"
fi

# A socket beyond 0-2 and a file lock: recorded, restored with a warning.
recorded() {
	why=$1
	if ! dump; then
		bad "refused: $(cat "$W/$name.derr")"
		return
	fi
	rpid=$("$MOSCR" restore --detach "$W/$name.img" 2> "$W/$name.rerr")
	if [ -z "$rpid" ]; then
		bad "not restored"
		return
	fi
	kill -9 "$rpid"
	if grep -q "$why" "$W/$name.rerr"; then ok
	else bad "no warning \"$why\""; fi
}
start socket "$Z/refuse" socket &&
    recorded "descriptor 3 (socket:\[[0-9]*\], read-write) cannot be opened"
start lock "$Z/refuse" lock "$W" && recorded "held a lock"

# --- refusals ------------------------------------------------------------

refuse() {
	why=$1
	if dump; then
		bad "dumped, should have been refused"
	elif ! grep -q "$why" "$W/$name.derr"; then
		bad "refused without saying \"$why\""
	elif [ -e "$W/$name.img" ] || ls "$W/$name.img".tmp.* >/dev/null 2>&1
	then
		bad "a refused dump left an image behind"
	elif ! kill -0 "$pid" 2>/dev/null; then
		bad "a refused dump killed the process"
	else
		ok
	fi
	kill -9 "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
}
start threadcred "$Z/refuse" threadcred && refuse "differ in Uid"
start shared "$Z/shared" "$W" && refuse "writable shared mapping"
start sysv "$Z/refuse" sysv && refuse "SysV shared memory"
start child "$Z/refuse" child && refuse "child processes"
start timer "$Z/refuse" timer && refuse "POSIX timers"

# --- bad images ----------------------------------------------------------

# An image that depends on no file the test deletes.
img=$W/fpu-static.img
size=$(wc -c < "$img")
bad_image() {
	if "$MOSCR" restore "$W/bad.img" > /dev/null 2> "$W/$name.rerr"; then
		bad "restored"
	elif ! grep -q "$1" "$W/$name.rerr"; then
		bad "refused without saying \"$1\""
	elif "$MOSCR" info "$W/bad.img" > /dev/null 2>&1; then
		bad "moscr info accepted it"
	elif "$MOSCR" info --json "$W/bad.img" > "$W/$name.json" 2>&1 ||
	    grep -q '{' "$W/$name.json"; then
		bad "moscr info --json accepted it"
	else
		ok
	fi
}
for cut in 0 5 8 11 64 1000 $((size / 2)) $((size - 1)); do
	name=truncated-$cut
	head -c "$cut" "$img" > "$W/bad.img"
	bad_image "truncated\|too short"
done
flip() {
	cp "$img" "$W/bad.img"
	v=$(od -An -tu1 -j "$1" -N1 "$img" | tr -d ' ')
	printf "\\$(printf %o $((v ^ 0x5a)))" |
	    dd of="$W/bad.img" bs=1 seek="$1" conv=notrunc 2>/dev/null
}
name=corrupt-magic; flip 1; bad_image "bad magic"
name=corrupt-version; flip 7; bad_image "format version"
for off in 20 200 $((size / 2)) $((size - 40)) $((size - 2)); do
	name=corrupt-$off
	flip "$off"
	bad_image "corrupted"
done
name=foreign
printf 'this is not an image at all\n' > "$W/bad.img"
bad_image "not a checkpoint image"

name=info
if "$MOSCR" info "$img" > "$W/info.out" 2>&1 &&
    grep -q "registers:   ip 0x" "$W/info.out" &&
    grep -q "fpu-static" "$W/info.out" &&
    grep -q "\[stack\]" "$W/info.out"; then
	ok
else
	bad "moscr info"
	cat "$W/info.out"
fi

# The same, as JSON: what the text says, as numbers and names.
name=info-json
if "$MOSCR" info --json "$img" > "$W/info.json" 2>&1 &&
    carried=$(sed -n 's/^memory: *\([0-9]*\) areas, \([0-9]*\) pages.*/\1 \2/p' \
    "$W/info.out") && [ -n "$carried" ] &&
    python3 - "$W/info.json" $carried <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
areas, pages = int(sys.argv[2]), int(sys.argv[3])
m = d["memory"]
assert d["comm"] == "fpu-static", d["comm"]
assert d["argv"][0].endswith("fpu-static"), d["argv"]
assert isinstance(d["pid"], int) and d["pid"] > 0
assert d["registers"]["ip"] > 0 and d["registers"]["xstate_bytes"] > 0
assert len(m["areas"]) == areas and m["pages"] == pages, (m["pages"], pages)
assert any(a["name"] == "[stack]" and a["perms"] == "rw-p" for a in m["areas"])
assert all(a["start"] < a["end"] for a in m["areas"])
assert isinstance(d["signals"]["blocked"], list)
assert [f["fd"] for f in d["files"]][:3] == [0, 1, 2], d["files"]
PY
then
	ok
else
	bad "moscr info --json"
	cat "$W/info.json"
fi

echo "zdtm: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
