#!/bin/sh
# The write stub (docs/REMOTE.md, "The write stub"): a process away writes
# a file at home 4 KiB at a time, and most of its writes are gathered
# inside it, not by its guest agent; the file is byte for byte the one
# the same run makes at home — dd, sort, a writer with write and with
# pwrite64, one that starts a thread half way, one that reads the file
# back on another descriptor as it writes, one whose signal handler
# writes among its writes, one that fills a file
# system at home (its ENOSPC told on the same write as at home), and one
# moved midway (stop-and-copy and live, out and home) with writes in the
# stub's ring: nothing lost, nothing twice.
. "$(dirname "$0")/lib.sh"

lab_up 2
wait_cluster 2
D=$(lab_dir)/wstub
mkdir -p "$D" && chmod 755 "$(lab_dir)" "$D" || fail "mkdir $D"
L2=$(lab_dir)/node2/mosd.log
W=$OSM_MOSRUN/writer
"$OSM_MOSRUN/reader" -w "$D/data" 8000000 || fail "could not write $D/data"
chmod 644 "$D/data"

inr() {
	echo "$1" | sed -n 's/.* \([0-9]*\) writes behind in R.*/\1/p'
}

# away NAME CMD...: CMD run in $D at home, then away (mosrun -r 2), its
# output in NAME.home and NAME.away; $line: node 2's end line of it
away() {
	name=$1
	shift
	lab_exec 1 sh -c 'cd "$1" && shift && "$@"' sh "$D" "$@" \
	    > "$D/$name.home" 2>&1 ||
	    fail "$name at home: $(cat "$D/$name.home")"
	n=$(ends)
	lab_exec 1 sh -c 'cd "$1" && shift && mosrun -L -r 2 "$@"' sh "$D" \
	    "$@" > "$D/$name.away" 2>&1 ||
	    fail "$name away: $(cat "$D/$name.away")"
	line=$(end_after "$n") || fail "$name: no end on node 2"
	[ -n "$(inr "$line")" ] || fail "$name: no count of writes in R: $line"
}

# --- dd bs=4k: 1,954 writes, nearly all in R -------------------------------
away dd dd if=data of=dd.out bs=4k
mv "$D/dd.out" "$D/dd.out.away"
lab_exec 1 sh -c 'cd "$1" && dd if=data of=dd.out bs=4k 2>/dev/null' sh "$D"
cmp -s "$D/dd.out" "$D/dd.out.away" || fail "dd: the file away differs"
cmp -s "$D/data" "$D/dd.out.away" || fail "dd: not the input"
w=$(inr "$line")
[ "$w" -ge 1500 ] || fail "dd: $w of 1954 writes in R: $line"
echo "dd: $w of 1954 writes in R, the file exact"

# --- sort, its output and its temporary files -----------------------------
away sort sort --parallel=1 -S 1M -T . -o sort.out data
mv "$D/sort.out" "$D/sort.out.away"
lab_exec 1 sh -c 'cd "$1" && sort --parallel=1 -S 1M -T . -o sort.out data' \
    sh "$D"
cmp -s "$D/sort.out" "$D/sort.out.away" || fail "sort: the output differs"
w=$(inr "$line")
[ "$w" -ge 500 ] || fail "sort: $w writes in R: $line"
echo "sort: $w writes in R, the output exact"

# --- write, pwrite64, a thread half way, read back on another descriptor --
for m in write pwrite thread readback; do
	arg=$m
	[ $m = write ] && arg=
	away "w$m" "$W" "w$m.dat" 2000 $arg
	grep -qx 'ok 2000 blocks' "$D/w$m.away" ||
	    fail "$m: $(cat "$D/w$m.away")"
	cmp -s "$D/w$m.home" "$D/w$m.away" || fail "$m: not as at home"
	w=$(inr "$line")
	[ "$w" -ge 500 ] || fail "$m: $w writes in R: $line"
	r=$(echo "$line" | sed -n 's/.*read ahead (\([0-9]*\) in R).*/\1/p')
	[ $m != readback ] || [ "${r:-0}" -ge 20 ] ||
	    fail "readback: $r reads in R: $line"
	echo "$m: $w of 2000 writes in R, every block checked" \
	    "${r:+($r reads in R)}"
done
for m in pwrite thread readback; do
	cmp -s "$D/wwrite.dat" "$D/w$m.dat" || fail "$m: not write's file"
done

# --- a signal handler's writes among the main flow's ----------------------
# (every 100 us, on the same descriptor: some land while a write of the
# main flow is half way in the stub, and must neither overwrite it nor be
# overwritten; when they land differs from run to run)
away wsig "$W" wsig.dat 8000 signal
for o in home away; do
	grep -qx 'ok 8000 blocks, [1-9][0-9]* by the handler' "$D/wsig.$o" ||
	    fail "signal ($o): $(cat "$D/wsig.$o")"
done
w=$(inr "$line")
[ "$w" -ge 2000 ] || fail "signal: $w writes in R: $line"
echo "signal: $(tail -1 "$D/wsig.away"), $w writes in R"

# --- a file system filled at home -----------------------------------------
# (t-fast's, with the stub: it writes in R while the home has room beyond
# the spare and the ring, then to the guest, then home as they are: the
# same ENOSPC on the same write, the same blocks in the file)
mkdir -p "$D/full" "$D/fullh"
lab_exec 1 mount -t tmpfs -o size=12m tmpfs "$D/full" || fail "no tmpfs"
lab_exec 1 mount -t tmpfs -o size=12m tmpfs "$D/fullh" || fail "no tmpfs"
lab_exec 1 sh -c 'cd "$1" && "$2" write fullh/f 4000 > wfh.out 2>&1' \
    sh "$D" "$OSM_MOSRUN/files"
n=$(ends)
lab_exec 1 sh -c 'cd "$1" && mosrun -L -r 2 "$2" write full/f 4000 \
    > wf.out 2>&1' sh "$D" "$OSM_MOSRUN/files"
lab_exec 1 umount "$D/full"
lab_exec 1 umount "$D/fullh"
m=$(sed -n 's/^wrote \([0-9]*\) of 4000$/\1/p' "$D/wfh.out")
[ -n "$m" ] && [ "$m" -gt 0 ] &&
    grep -qx "error on write $m: No space left on device" "$D/wfh.out" ||
    fail "full at home: $(cat "$D/wfh.out")"
cmp -s "$D/wfh.out" "$D/wf.out" || fail "full: not as at home" \
    "($(tr '\n' ' ' < "$D/wfh.out")): $(cat "$D/wf.out")"
line=$(end_after "$n") || fail "full: no end on node 2"
w=$(inr "$line")
[ "${w:-0}" -ge 200 ] || fail "full: $w writes in R: $line"
echo "full: $(tail -1 "$D/wf.out"), as at home; $w writes in R"

# --- moved midway, the ring in use ----------------------------------------
# out stop-and-copy, home live, out live, home stop-and-copy
lab_exec 1 sh -c 'cd "$1" && { mosrun -L "$2" moves.dat 24000 \
    > moves.out 2>&1 & }' sh "$D" "$W" || fail "moves: not started"
wait_for 20 grep -q ready "$D/moves.out" || fail "moves: $(cat "$D/moves.out")"
pid=$(pid_of writer)
[ -n "$pid" ] || fail "moves: not listed"
n=$(ends)
for step in "--stop-copy 2" "--live home" "--live 2" "--stop-copy home"; do
	sleep 0.7
	to=${step#* }
	lab_exec 1 mosmigrate ${step% *} "$pid" "$to" ||
	    fail "moves: $step failed; $(cat "$D/moves.out")"
	[ "$to" = home ] && to=1
	[ "$(where "$pid")" = "$to" ] ||
	    fail "moves: $step: on $(where "$pid"); $(cat "$D/moves.out")"
	[ "$to" = 2 ] && { [ -n "$(guest_pid writer 2)" ] ||
	    fail "moves: no writer on node 2"; }
	grep -q '^ok\|not\|error' "$D/moves.out" &&
	    fail "moves: ended before $step: $(cat "$D/moves.out")"
done
wait_for 60 grep -q -e '^ok' -e 'not\|error' "$D/moves.out" ||
    fail "moves: no end: $(cat "$D/moves.out")"
grep -qx 'ok 24000 blocks' "$D/moves.out" || fail "moves: $(cat "$D/moves.out")"
# (the writer read every block back at home: none lost, none twice, none
# out of place; its size is its count) and each stay away wrote in R
ins=$(grep "guest $pid@1" "$L2" | grep -o '[0-9]* writes behind in R' |
    awk '$1 >= 100 { n++ } END { print n + 0 }')
lines=$(grep "guest $pid@1" "$L2" | grep -c 'writes behind in R')
[ "$ins" -ge 2 ] || fail "moves: $ins of $lines stays wrote in R: $(grep \
    "guest $pid@1" "$L2" | grep 'writes behind in R')"
echo "moves: ok 24000 blocks after four moves, $ins stays away wrote in R"
