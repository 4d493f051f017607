#!/bin/sh
# Checkpoints for users: mosrun -C FILE -A MIN -N MAX writes FILE.1,
# FILE.2, ... keeping the last MAX; mosmigrate PID checkpoint writes one at
# once; after the process is lost, mosrun -R on another node goes on from
# the last one and the program's file ends as if nothing had happened; a
# corrupted checkpoint is refused with a clear message and exit 1; a
# deputy killed while it writes a checkpoint leaves the one before whole
# and recoverable; a process away is checkpointed where it runs. A job
# started from a shell holding descriptor 7 on a FIFO (which no path opens
# again) is checkpointed: mosrun -R opens the file --fd names in its
# place or, without --fd, /dev/null, saying so in one line that names the
# descriptor and the FIFO; the job's output ends exact either way. A
# threaded process recovered with -R (or moscr restore) keeps its thread
# ids.
. "$(dirname "$0")/lib.sh"
P=${OSM_MOSRUN:-$OSM_BIN/../build/tests/mosrun}

lab_up 2 --cpus 0.5 --mem 1024
wait_cluster 2
S=$(lab_dir)/share	# on the host: every node sees it
mkdir -p "$S"

# 60 lines, 100 ms apart; a checkpoint every 0.6 s, the last 2 kept
# (and what they need)
"$MOSLAB" exec 1 sh -c "mosrun -L -C $S/ck -A 0.01 -N 2 $P/counter 60 \
    $S/count.out 100 > $S/first.out" &
job=$!
wait_for 10 nprocs 1 || fail "the counter is not in mosps"
pid=$(ps_list pid | head -n 1)
# ck.2 adds to ck.1, and ck.3 is whole again: ck.1 goes with ck.4, when
# the last two (ck.3, ck.4) no longer need it (docs/IMAGE.md, "Chains").
four() {
	[ -e "$S/ck.4" ]
}
wait_for 10 four || fail "no fourth periodic checkpoint: $(ls "$S")"
[ ! -e "$S/ck.1" ] && [ ! -e "$S/ck.2" ] ||
    fail "ck.1 or ck.2 kept beyond -N 2: $(ls "$S")"
ls "$S" | grep -q tmp && fail "a temporary file is left: $(ls "$S")"

# On demand, then the process is lost.
out=$(lab_exec 1 mosmigrate "$pid" checkpoint) || fail "checkpoint: $out"
last=$(echo "$out" | sed -n "s|^checkpoint written to $S/ck\.||p")
[ -n "$last" ] && [ -s "$S/ck.$last" ] || fail "checkpoint said: $out"
lab_exec 1 kill -KILL "$pid"
wait "$job"
n=$(grep -c . "$S/count.out")
[ "$n" -lt 60 ] || fail "the counter had finished already"

# A corrupted copy is refused, and nothing runs.
cp "$S/ck.$last" "$S/bad"
printf 'XXXXXXXX' | dd of="$S/bad" bs=1 seek=4000 conv=notrunc 2>/dev/null
expect 1 "cannot recover from $S/bad" lab_exec 2 mosrun -R "$S/bad"

# Recovered on node 2, as its home: it finishes, and its files are whole
# (its standard output was a file too: it goes on there).
lab_exec 2 mosrun -R "$S/ck.$last" || fail "recovery failed"
seq 60 > "$S/want"
echo done >> "$S/want"
cmp -s "$S/want" "$S/count.out" ||
    fail "count.out after the recovery: $(tail -3 "$S/count.out")"
cmp -s "$S/want" "$S/first.out" ||
    fail "first.out after the recovery: $(tail -3 "$S/first.out")"

# grow keeps what it inherits: 7, on a FIFO. 30 ticks of 100 ms, one
# checkpoint every 0.6 s, its output a file.
mkfifo "$S/fifo" || fail "mkfifo"
"$MOSLAB" exec 1 sh -c "exec 7<>$S/fifo; mosrun -L -C $S/gk -A 0.01 \
    $P/grow 30 0 0 100 > $S/grow.out" &
job=$!
wait_for 10 test -e "$S/gk.2" || fail "grow: no checkpoint: $(ls "$S")"
lab_exec 1 kill -KILL "$(pid_of grow)"
wait "$job"
"$OSM_BIN/moscr" info "$S/gk.1" | grep -q "^ *7 other  *$S/fifo " ||
    fail "gk.1: moscr info: $("$OSM_BIN/moscr" info "$S/gk.1")"
i=0
while [ "$i" -lt 30 ]; do echo "tick $i"; i=$((i + 1)); done > "$S/grow.want"
printf 'verified 0 MiB\ndone\n' >> "$S/grow.want"
grown2() {
	[ -n "$(pid_of grow 2)" ]
}
# recover_grow WANT [--fd 7=FILE]: recovered on node 2 from gk.1; its 7
# (while it runs) must be WANT, its output exact.
recover_grow() {
	want=$1
	shift
	"$MOSLAB" exec 2 sh -c "mosrun -R $S/gk.1 $* 2> $S/rec.err" &
	rec=$!
	wait_for 10 grown2 || fail "grow: not recovered: $(cat "$S/rec.err")"
	seven=$(lab_exec 2 readlink "/proc/$(pid_of grow 2)/fd/7")
	wait "$rec" || fail "grow: the recovery failed: $(cat "$S/rec.err")"
	[ "$seven" = "$want" ] || fail "grow $*: the recovered 7 is $seven"
	cmp -s "$S/grow.want" "$S/grow.out" ||
	    fail "grow $*: its output: $(tail -2 "$S/grow.out")"
}
# (Whatever else the harness left open is said too, a line each.)
recover_grow "$S/seven" --fd 7="$S/seven"
grep -q "descriptor 7 " "$S/rec.err" &&
    fail "grow --fd 7: said $(cat "$S/rec.err")"
recover_grow /dev/null
[ "$(grep -c "descriptor 7 " "$S/rec.err")" = 1 ] &&
    grep -qx "mosrun: $S/gk.1: descriptor 7 ($S/fifo, read-write) cannot be opened again: it is /dev/null now (--fd N=PATH opens another)" \
    "$S/rec.err" || fail "grow: the recovery said: $(cat "$S/rec.err")"

# A crash while writing: the deputy of a 400 MiB process is killed in
# the middle of its second checkpoint; the first is whole and recovers.
# (-N 1: every checkpoint whole, so the second is as long as the first;
# of what changed since, it would be a few pages, over before the kill.)
lab_exec 1 mkfifo /tmp/go || fail "mkfifo"
lab_exec 2 mkfifo /tmp/go || fail "mkfifo on node 2"
"$MOSLAB" exec 1 sh -c "mosrun -L -C $S/big -N 1 $P/walker /tmp/go big \
    400 > $S/big.out 2>&1" &
ready() {
	grep -qx ready "$S/big.out"
}
wait_for 30 ready || fail "big: not ready: $(cat "$S/big.out")"
b=$(pid_of walker)
lab_exec 1 mosmigrate "$b" checkpoint || fail "big: first checkpoint"
deputy=$(lab_exec 1 awk '$1 == "TracerPid:" { print $2 }' /proc/$b/status)
lab_exec 1 mosmigrate "$b" checkpoint > /dev/null 2>&1 &
writing() {
	[ -s "$(ls "$S"/big.2.tmp.* 2>/dev/null | head -1)" ]
}
wait_for 10 writing || fail "big: the second checkpoint never started"
lab_exec 1 kill -KILL "$deputy"
[ ! -e "$S/big.2" ] || fail "big: the checkpoint finished before the crash"
lab_exec 1 kill -KILL "$b"
"$MOSLAB" exec 2 sh -c "mosrun -R $S/big.1 > $S/big2.out 2>&1" &
rec=$!
wait_for 20 lab_exec 2 sh -c "mosps | grep -q walker" ||
    fail "big: not recovered: $(cat "$S/big2.out")"
lab_exec 2 sh -c 'echo > /tmp/go'
wait "$rec" || fail "big: the recovered walker failed"
grep -qx "memory intact" "$S/big.out" || fail "big: $(cat "$S/big.out")"

# Away: the checkpoint is taken where the process runs, which goes on
# there; recovered from it, the process's files end as after an unbroken
# run (its descriptors and offsets came from home, its memory from node 2,
# and both are of one moment).
"$MOSLAB" exec 1 sh -c "mosrun -L -r 2 -C $S/away $P/counter 50 \
    $S/away.out 100 > $S/away.first" &
job=$!
wait_for 10 away || fail "the counter did not move"
w=$(ps_list pid,where | sed -n 's/ 2$//p')
counting() {
	[ "$(grep -c . "$S/away.out" 2>/dev/null)" -ge 3 ]
}
wait_for 20 counting || fail "the counter does not count away"
# Stopped at home (so there too), checkpointed stopped, continued.
lab_exec 1 kill -STOP "$w"
sleep 0.5
n=$(grep -c . "$S/away.out")
out=$(lab_exec 1 mosmigrate "$w" checkpoint) || fail "away: $out"
[ "$out" = "checkpoint written to $S/away.1" ] || fail "away: said $out"
sleep 0.5
[ "$(grep -c . "$S/away.out")" -eq "$n" ] || fail "the counter ran stopped"
away || fail "the counter came home for its checkpoint"
lab_exec 1 kill -CONT "$w"
sleep 0.5
out=$(lab_exec 1 mosmigrate "$w" checkpoint) || fail "away: $out"
wait "$job" || fail "the counter failed away"
log=$(lab_dir)/node2/mosd.log
[ "$(grep -c "guest $w@1: checkpoint image sent" "$log")" -eq 2 ] ||
    fail "node 2 did not send two checkpoint images: $(tail "$log")"
grep -q "guest $w@1 goes home" "$log" && fail "the counter went home"
[ "$n" -lt 50 ] || fail "the counter had finished at the checkpoint"
lab_exec 1 mosrun -R "$S/away.1" || fail "recovery of away.1 failed"
seq 50 > "$S/want"
echo done >> "$S/want"
cmp -s "$S/want" "$S/away.out" ||
    fail "away.out after the recovery: $(sort "$S/away.out" | uniq -d)"
cmp -s "$S/want" "$S/away.first" || fail "away.first after the recovery"

# Away and blocked in a call at home (opening a FIFO): the call is broken
# off for the checkpoint and made again after it, on node 2; recovered,
# the process waits on the FIFO again with its memory whole.
# ready_away NAME: the walker writing $S/NAME.out is ready, on node 2
ready_away() {
	grep -qx ready "$S/$1.out" &&
	    ps_list where,command | grep -qx "2 walker"
}
# walker_away NAME MODE [ARG]: a walker started on node 1 with checkpoints
# to $S/NAME, ready on node 2 with /tmp/go a fresh FIFO of node 1's; sets
# job and wpid
walker_away() {
	lab_exec 1 rm -f /tmp/go
	lab_exec 1 mkfifo /tmp/go || fail "mkfifo"
	"$MOSLAB" exec 1 sh -c "mosrun -L -r 2 -C $S/$1 $P/walker /tmp/go \
	    $2 ${3:-} > $S/$1.out 2>&1" &
	job=$!
	wait_for 10 ready_away "$1" ||
	    fail "$1: not ready away: $(cat "$S/$1.out")"
	wpid=$(pid_of walker)
}
walker_away blk big 8
sleep 0.5
out=$(lab_exec 1 timeout 10 mosmigrate "$wpid" checkpoint) ||
    fail "blocked: no checkpoint: $out"
ready_away blk || fail "blocked: the walker left node 2"
lab_exec 1 timeout 5 sh -c 'echo > /tmp/go' ||
    fail "blocked: the walker no longer waits on the FIFO"
wait "$job" || fail "blocked: the walker failed: $(cat "$S/blk.out")"
grep -qx "memory intact" "$S/blk.out" || fail "blocked: $(cat "$S/blk.out")"
"$MOSLAB" exec 1 mosrun -R "$S/blk.1" &
rec=$!
wait_for 10 lab_exec 1 timeout 1 sh -c 'echo > /tmp/go' ||
    fail "blocked: the recovered walker does not wait on the FIFO"
wait "$rec" || fail "blocked: the recovered walker failed"
[ "$(grep -c "memory intact" "$S/blk.out")" -eq 1 ] ||
    fail "blocked: after the recovery: $(cat "$S/blk.out")"

# Waits away. A poll with a timeout of its own is not broken off for a
# checkpoint (made again it would wait anew, and with checkpoints every
# 0.18 s never end): 5 polls of 600 ms take about 3 s, checkpoints taken
# between them. An epoll_wait without a timeout is broken off and made
# again, never failing with EINTR in the program; its checkpoint records
# the FIFO and the epoll descriptor, which no path opens again, for what
# they were (moscr info shows them), and the process goes on.
"$MOSLAB" exec 1 sh -c "mosrun -L -r 2 -C $S/poll -A 0.003 -N 1 \
    $P/walker /tmp/none poll 5 > $S/poll.out 2>&1" &
job=$!
wait_for 20 grep -q "^polled" "$S/poll.out" ||
    fail "poll: the polls never ended: $(cat "$S/poll.out")"
wait "$job" || fail "poll: the walker failed: $(cat "$S/poll.out")"
ms=$(sed -n 's/^polled 5 times in \([0-9]*\) ms$/\1/p' "$S/poll.out")
[ -n "$ms" ] && [ "$ms" -lt 4500 ] ||
    fail "poll: 5 polls of 600 ms: $(cat "$S/poll.out")"
ls "$S" | grep -q '^poll\.[0-9]' || fail "poll: no checkpoint: $(ls "$S")"
walker_away ep epoll
sleep 0.3
expect 0 "checkpoint written to $S/ep.1" \
    lab_exec 1 mosmigrate "$wpid" checkpoint
"$OSM_BIN/moscr" info "$S/ep.1" | grep -q "other  *anon_inode:\[eventpoll\]" ||
    fail "epoll: moscr info: $("$OSM_BIN/moscr" info "$S/ep.1")"
ready_away ep || fail "epoll: the walker left node 2"
lab_exec 1 timeout 5 sh -c 'echo > /tmp/go' || fail "epoll: FIFO"
wait "$job" || fail "epoll: the walker failed: $(cat "$S/ep.out")"
grep -qx "epoll 1, interrupted 0" "$S/ep.out" || fail "epoll: $(cat "$S/ep.out")"

# A checkpoint away that cannot be written (its file system fills up)
# fails with the reason and leaves no file; the process goes on away, its
# session in step (the rest of the image was read), and ends whole.
lab_exec 1 mkdir -p /tmp/tiny || fail "mkdir"
lab_exec 1 mount -t tmpfs -o size=64k tiny /tmp/tiny || fail "mount"
"$MOSLAB" exec 1 sh -c "mosrun -L -r 2 -C /tmp/tiny/ck $P/counter 30 \
    $S/full.out 100 > $S/full.first" &
job=$!
on2() {
	ps_list where,command | grep -qx "2 counter"
}
wait_for 10 on2 || fail "full: the counter did not move"
f=$(pid_of counter)
expect 1 "/tmp/tiny/ck.1: write image: No space left on device" \
    lab_exec 1 mosmigrate "$f" checkpoint
[ -z "$(lab_exec 1 ls /tmp/tiny)" ] ||
    fail "full: left in the file system: $(lab_exec 1 ls /tmp/tiny)"
wait "$job" || fail "full: the counter failed"
seq 30 > "$S/want"
echo done >> "$S/want"
cmp -s "$S/want" "$S/full.out" && cmp -s "$S/want" "$S/full.first" ||
    fail "full: the counter's output: $(tail -3 "$S/full.out")"
lab_exec 1 umount /tmp/tiny

# Threads: a process of 4 threads checkpointed with -C, lost, recovered
# with mosrun -R on node 2. Its ids come back as they were, in a PID
# namespace of its own there (its old pid inside): a signal to one thread
# by its old tid, pthread_kill and pthread_join by the ids glibc cached
# work. The signal sent to mosrun (the shell's job) reaches it; it may not
# move from there (elsewhere it would have that node's ids); its output
# is exact and mosrun exits as it does.
Z=${OSM_ZDTM:-$OSM_BIN/../build/tests/zdtm}
"$MOSLAB" exec 1 sh -c "exec 7</dev/null; mosrun -L -C $S/sg \
    $Z/sigthreads > $S/sg.out 2> $S/sg.err" &
job=$!
wait_for 20 grep -q "^READY" "$S/sg.out" ||
    fail "threads: not ready: $(cat "$S/sg.err")"
g=$(pid_of sigthreads)
expect 0 "checkpoint written to $S/sg.1" lab_exec 1 mosmigrate "$g" checkpoint
"$OSM_BIN/moscr" info "$S/sg.1" | grep -q "^threads: *4$" ||
    fail "threads: sg.1: $("$OSM_BIN/moscr" info "$S/sg.1" | head -12)"
lab_exec 1 kill -KILL "$g"
wait "$job"
"$MOSLAB" exec 2 sh -c "exec 7</dev/null; mosrun -R $S/sg.1 \
    2> $S/sgr.err & echo \$! > $S/sgr.pid; wait \$!; echo status \$? \
    > $S/sgr.rc" &
rec=$!
recovered() {
	[ -n "$(pid_of sigthreads 2)" ]
}
wait_for 20 recovered ||
    fail "threads: not recovered: $(cat "$S/sgr.err" "$S/sgr.rc"; lab_exec 2 ps -ef)"
r=$(pid_of sigthreads 2)
inner=$(lab_exec 2 awk '$1 == "NSpid:" { print $NF }' "/proc/$r/status")
[ "$inner" = "$g" ] || fail "threads: pid $inner inside, not $g"
[ "$(lab_exec 2 ls "/proc/$r/task" | wc -l)" = 4 ] ||
    fail "threads: $(lab_exec 2 ls "/proc/$r/task") threads"
expect 1 "runs only here" lab_exec 2 mosmigrate "$r" 1
lab_exec 2 kill -USR1 "$(cat "$S/sgr.pid")" || fail "threads: kill mosrun"
wait "$rec"
printf 'READY %d\nPASS\n' "$g" | cmp -s - "$S/sg.out" ||
    fail "threads: its output: $(cat "$S/sg.out" "$S/sgr.err")"
grep -qx "status 0" "$S/sgr.rc" ||
    fail "threads: mosrun -R: $(cat "$S/sgr.rc" "$S/sgr.err")"
[ ! -s "$S/sgr.err" ] || fail "threads: mosrun -R said $(cat "$S/sgr.err")"
# moscr restore of the same checkpoint (a live dump's: rounds before its
# description) does the same.
printf 'READY %d\n' "$g" > "$S/sg.out"
"$MOSLAB" exec 2 sh -c "moscr restore -v $S/sg.1 2> $S/sgm.err & \
    echo \$! > $S/sgm.pid; wait \$!; echo status \$? > $S/sgm.rc" &
rec=$!
wait_for 20 grep -q "4 threads, pid $g and thread ids kept" "$S/sgm.err" ||
    fail "threads: moscr restore: $(cat "$S/sgm.err")"
lab_exec 2 kill -USR1 "$(cat "$S/sgm.pid")" || fail "threads: kill moscr"
wait "$rec"
printf 'READY %d\nPASS\n' "$g" | cmp -s - "$S/sg.out" && grep -qx "status 0" \
    "$S/sgm.rc" || fail "threads: moscr restore: $(cat "$S/sg.out" "$S/sgm.rc")"

"$MOSLAB" down || fail "moslab down"
check_clean
echo PASS
