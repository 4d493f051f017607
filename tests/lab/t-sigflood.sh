#!/bin/sh
# Signals through moves under a flood (docs/REMOTE.md, "Signals, exit,
# failure" and "Signal floods"). A process counts the SIGRTMIN values
# 1..N that another process at home queues to it (sigqueue), 2,000 a
# second, with a SIGUSR2 after every 50th, while it is moved out and home,
# every move inside the flood: twice each live, post-copy, and stopped for
# the copy, out and home as mosmigrate says; then, run with mosrun
# --stop-copy, twice stopped for the copy both ways by default. Each value
# must come exactly once and with its value (a value lost in a move, or
# sent in a freeze and had twice, fails), and SIGUSR2 at
# least once and never more often than it was sent (a standard signal is
# pending at most once). On a failure it says which values were lost or
# came twice, and during which move they were queued.
. "$(dirname "$0")/lib.sh"
P=${OSM_MOSRUN:-$OSM_BIN/../build/tests/mosrun}
lab_up 2 --cpus 1 --mem 1536
wait_cluster 2
S=$(lab_dir)/share
mkdir -p "$S"
N=${RT_N:-10000}

_us() {
	echo $(($(date +%s%N) / 1000))
}

# move HOW TO: one move, noted in $S/$run.moves (how, which way, when it
# began and ended, in us)
move() {
	_t0=$(_us)
	lab_exec 1 mosmigrate $1 "$pid" $2 ||
	    fail "$run: move $1 to $2: $(tail -3 "$S/$run.log")"
	echo "${1:-default} $2 $_t0 $(_us)" >> "$S/$run.moves"
}

# verdict PREFIX: whether every move was inside the flood, and during
# which move each lost or doubled value was queued
verdict() {
	python3 - "$1" "$N" <<'EOF'
import sys
p, n = sys.argv[1], int(sys.argv[2])
sent = {}
for l in open(p + '.send'):
    v, t = l.split()
    sent[int(v)] = int(t)
moves = [l.split() for l in open(p + '.moves')]
t0 = sent[1]
if int(moves[0][2]) < sent[1] or int(moves[-1][3]) > sent[n]:
    print('moves outside the flood: %.0f to %.0f ms, the flood 0 to %.0f'
          % ((int(moves[0][2]) - t0) / 1000,
             (int(moves[-1][3]) - t0) / 1000, (sent[n] - t0) / 1000))
def during(t):
    last = 'before the first move'
    for i, (how, to, b, e) in enumerate(moves):
        if t < int(b):
            return last
        if t <= int(e):
            return 'during move %d (%s to %s)' % (i + 1, how, to)
        last = 'after move %d (%s to %s)' % (i + 1, how, to)
    return last
shown = 0
for l in open(p + '.take'):
    v, c = (int(x) for x in l.split()[:2])
    if c != 1 and shown < 20:
        print('value %d came %d times, queued at %.1f ms, %s'
              % (v, c, (sent[v] - t0) / 1000, during(sent[v])))
        shown += 1
EOF
}

# flood RUN "MOSRUN OPTIONS" ROUNDS KIND...: the taker run so, moved out
# and home ROUNDS times by each KIND of mosmigrate ("" for its default)
# while the sender floods it; then its count, checked.
flood() {
	run=$1
	_opts=$2
	_rounds=$3
	shift 3
	"$MOSLAB" exec 1 bash -c "cd $S; for f in \$(ls /proc/\$\$/fd); do \
	    [ \$f -gt 2 ] && eval \"exec \$f>&-\"; done 2>/dev/null; \
	    SIGRT_TIMES=$S/$run OSM_DEPUTY_LOG=$S/$run.log \
	    mosrun -L $_opts $P/sigrt take $N > $S/$run 2>&1 < /dev/null" &
	job=$!
	wait_for 20 grep -qx ready "$S/$run" || fail "$run: not ready"
	pid=$(pid_of sigrt)
	[ -n "$pid" ] || fail "$run: not in mosps"
	lab_exec 1 env SIGRT_TIMES="$S/$run" "$P/sigrt" send "$pid" "$N" \
	    500 > "$S/$run.sender" 2>&1 &
	snd=$!
	: > "$S/$run.moves"
	sleep 0.3	# the flood under way: the first move is inside it
	_r=0
	while [ $_r -lt "$_rounds" ]; do
		for _how in "$@"; do
			move "$_how" 2
			[ "$(where "$pid")" = 2 ] &&
			    [ -n "$(guest_pid sigrt 2)" ] ||
			    fail "$run: not on node 2 after the move $_how"
			move "$_how" home
			[ "$(where "$pid")" = 1 ] ||
			    fail "$run: not home after $_how"
		done
		_r=$((_r + 1))
	done
	wait "$snd" || fail "$run: sender: $(cat "$S/$run.sender")"
	_sent=$(sed -n 's/^sent [0-9]* usr2 \([0-9]*\)$/\1/p' \
	    "$S/$run.sender")
	[ -n "$_sent" ] || fail "$run: sender: $(cat "$S/$run.sender")"
	lab_exec 1 kill -USR1 "$pid"
	wait_for 60 grep -q "^once" "$S/$run" ||
	    fail "$run: no count: $(tail -3 "$S/$run")"
	wait "$job"
	verdict "$S/$run" > "$S/$run.verdict" ||
	    fail "$run: no verdict: $(cat "$S/$run.verdict")"
	echo "$run: $(grep -c . "$S/$run.moves") moves: $(awk '{ printf \
	    "%s%s %s %.0f ms", (NR > 1 ? ", " : ""), $1, $2, \
	    ($4 - $3) / 1000 }' "$S/$run.moves")"
	_u=$(sed -n 's/^usr2 //p' "$S/$run")
	echo "$run: $(tail -1 "$S/$run"); SIGUSR2 sent $_sent, came $_u"
	grep -qx "once $N twice-or-more 0 missing 0 bad 0" "$S/$run" ||
	    fail "$run: $(tail -1 "$S/$run"):
$(cat "$S/$run.verdict")"
	[ ! -s "$S/$run.verdict" ] || fail "$run: $(cat "$S/$run.verdict")"
	[ -n "$_u" ] && [ "$_u" -ge 1 ] && [ "$_u" -le "$_sent" ] ||
	    fail "$run: SIGUSR2 came ${_u:-no} times, sent $_sent"
}

# logged N PATTERN LOG: the deputy's log says PATTERN N times
logged() {
	_n=$(grep -c "$2" "$3")
	[ "$_n" -eq "$1" ] ||
	    fail "'$2' $_n times in $3, not $1: $(cat "$3")"
}

flood rt "" 2 --live --post-copy --stop-copy
logged 2 "to node 2: live," "$S/rt.log"
logged 2 "to node 2: post-copy," "$S/rt.log"
logged 2 "to node 2: stopped for the copy" "$S/rt.log"
logged 2 "is home: [1-9][0-9]* rounds" "$S/rt.log"
logged 2 "is home: 0 rounds" "$S/rt.log"
logged 2 "is home post-copy" "$S/rt.log"
flood stop --stop-copy 2 ""
logged 2 "to node 2: stopped for the copy" "$S/stop.log"
logged 2 "is home: 0 rounds" "$S/stop.log"
"$MOSLAB" down || fail "moslab down"
check_clean
echo PASS
