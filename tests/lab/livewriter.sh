# The livewriter helpers of t-live.sh and t-postcopy.sh
# (tests/mosrun/livewriter), sourced after lib.sh with $S, $P and
# MOSRUN_OPTS set (and ROUNDS, for OSM_LIVE_ROUNDS, if wanted).

# start NAME ARGS...: livewriter ARGS under mosrun on node 1, its output
# in $S/NAME, its deputy's log in $S/NAME.log; $pid, $job
start() {
	name=$1
	shift
	# (descriptors the caller left open would stop its checkpoints; dash
	# cannot close those above 9)
	"$MOSLAB" exec 1 bash -c "cd $S; for f in \$(ls /proc/\$\$/fd); do \
	    [ \$f -gt 2 ] && eval \"exec \$f>&-\"; done 2>/dev/null; \
	    OSM_DEPUTY_LOG=$S/$name.log \
	    ${ROUNDS:+OSM_LIVE_ROUNDS=$ROUNDS} mosrun -L $MOSRUN_OPTS \
	    $P/livewriter $* > $S/$name 2>&1 < /dev/null" &
	job=$!
	wait_for 20 grep -qx ready "$S/$name" || fail "$name: not ready"
	pid=$(pid_of livewriter)
	[ -n "$pid" ] || fail "$name: not in mosps"
}
# checked NAME N: more than N checks answered
checked() {
	[ "$(grep -c '^stall' "$S/$1")" -gt "$2" ]
}
# lw_check NAME [NODE]: ask for a check of its whole memory, which must be
# exact
lw_check() {
	_n=$(grep -c '^stall' "$S/$1")
	lab_exec "${2:-1}" kill -USR1 "$pid"
	wait_for 30 checked "$1" "$_n" ||
	    fail "$1: no answer to the check: $(tail -3 "$S/$1"; tail -3 "$S/$1.log"; cat "$S/rec" 2>/dev/null; ps_list pid,where,command 2)"
	tail -2 "$S/$1" | grep -q '^check ok' ||
	    fail "$1: memory not exact: $(tail -2 "$S/$1")"
}
