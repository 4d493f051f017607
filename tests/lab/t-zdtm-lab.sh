#!/bin/sh
# Checkpoint on one lab node, restore on another: the zdtm programs
# (tests/zdtm/) are started and dumped in node 1 and restored in node 2
# (two of them in node 1 again),
# with images and files in the lab's state directory, which both nodes see
# (their /tmp, /run and /dev/shm are their own). Same checks as t-zdtm.sh.
. "$(dirname "$0")/lib.sh"
Z=${OSM_ZDTM:-$OSM_BIN/../build/tests/zdtm}
SRC=$(cd "$(dirname "$0")/../zdtm" && pwd)

lab_up 2 --mem 3G
D=$(lab_dir)/zdtm
mkdir -p "$D" || fail "mkdir $D"
passed=0
failed=0

ok() { echo "ok   $name"; passed=$((passed + 1)); }
bad() {
	echo "FAIL $name: $*"
	for f in "$D/$name".out "$D/$name".derr "$D/$name".rerr; do
		[ -s "$f" ] && sed "s|^|    ${f##*/}: |" "$f"
	done
	failed=$((failed + 1))
}

# start NAME CMD...: run CMD in node 1; $pid is its pid there.
start() {
	name=$1
	shift
	lab_exec 1 env TMPDIR="$D" "$@" > "$D/$name.out" 2> "$D/$name.err" \
	    < /dev/null &
	job=$!
	wait_for 30 grep -q READY "$D/$name.out" || return 1
	pid=$(sed -n 's/^READY \([0-9]*\)$/\1/p' "$D/$name.out")
	[ -n "$pid" ]
}

# dump: in node 1; the process dies, its moslab exec with it.
dump() {
	lab_exec 1 moscr dump "$pid" -o "$D/$name.img" 2> "$D/$name.derr" ||
	    return 1
	wait "$job" 2>/dev/null
	return 0
}

# restore_bg [NODE]: in node 2 (or NODE); $mjob is moslab exec, $rpid the
# process there.
restore_bg() {
	rn=${1:-2}
	lab_exec "$rn" moscr restore -v "$D/$name.img" 2> "$D/$name.rerr" &
	mjob=$!
	wait_for 30 grep -q " as process " "$D/$name.rerr" || return 1
	rpid=$(sed -n 's/.* as process \([0-9]*\):.*/\1/p' "$D/$name.rerr")
}

verdict() {
	if [ "$1" -eq 0 ] && grep -q '^PASS' "$D/$name.out"; then ok
	else bad "exit $1"; fi
}

# Restored in node 2 (the @1 ones back in node 1), told to check itself by
# SIGUSR1 (after SIGUSR2 for the signal test).
for t in basic-static basic signals heap file basic@1 signals@1; do
	name=$(echo "$t" | tr @ -)
	rn=2
	case $t in
	*@1) rn=1; t=${t%@1} ;;
	esac
	case $t in
	heap) set -- "$Z/heap" 1024 ;;
	file) set -- "$Z/file" "$D" ;;
	*) set -- "$Z/$t" ;;
	esac
	if start "$name" "$@" && dump && restore_bg "$rn"; then
		[ "$t" = signals ] && lab_exec "$rn" kill -USR2 "$rpid" &&
		    sleep 0.2
		lab_exec "$rn" kill -USR1 "$rpid"
		wait "$mjob"
		verdict $?
	else
		bad "setup"
	fi
done

# Work in flight and a sleep, resumed in node 2.
for t in fpu fpu-static sleep; do
	name=$t
	if [ "$t" = sleep ]; then
		start "$name" "$Z/sleep" nanosleep 6 && sleep 3
	else
		start "$name" "$Z/$t" && sleep 1
	fi || { bad "setup"; continue; }
	dump || { bad "dump"; continue; }
	t0=$(_ms)
	lab_exec 2 moscr restore "$D/$name.img" 2> "$D/$name.rerr"
	rc=$?
	d=$(($(_ms) - t0))
	if [ "$t" = sleep ] && { [ $d -lt 1500 ] || [ $d -gt 4500 ]; }; then
		bad "slept $d ms after the restore, not about 3000"
	else
		verdict $rc
	fi
done

# Blocked reading a pipe in node 1; fed by the restorer's pipe in node 2.
name=pipe
mkfifo "$D/fifo"
lab_exec 1 "$Z/pipe" < "$D/fifo" > "$D/$name.out" 2> "$D/$name.err" &
job=$!
exec 7> "$D/fifo"
if wait_for 30 grep -q READY "$D/$name.out" && sleep 0.3 &&
    pid=$(sed -n 's/^READY \([0-9]*\)$/\1/p' "$D/$name.out") && dump; then
	exec 7>&-
	printf 'restored line\n' | lab_exec 2 moscr restore "$D/$name.img" \
	    2> "$D/$name.rerr"
	verdict $?
else
	exec 7>&-
	bad "setup"
fi

# Python: the same output as a run left alone.
name=python
python3 "$SRC/python.py" > "$D/python.ref" 2>&1 < /dev/null
if start python python3 "$SRC/python.py" && sleep 1 && dump; then
	lab_exec 2 moscr restore "$D/$name.img" 2> "$D/$name.rerr"
	rc=$?
	# All but the READY line, which has the pid.
	tail -n +2 "$D/$name.out" > "$D/python.tail"
	if [ $rc -eq 0 ] && tail -n +2 "$D/python.ref" |
	    cmp -s - "$D/python.tail"; then ok
	else bad "exit $rc, output differs from an undisturbed run"; fi
else
	bad "setup"
fi

echo "zdtm across nodes: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
