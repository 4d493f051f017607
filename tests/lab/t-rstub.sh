#!/bin/sh
# The read stub (docs/REMOTE.md, "The read stub"): a process away reads a
# file at home 4 KiB at a time, with seeks back and forth, pread64s and
# reads to the file's end among them, and most of its reads are answered
# inside it, not by its guest agent; every byte is right and the offset
# the kernel at home says is the one its reads left — at once, across a
# checkpoint taken away, a move home and a move away again. And python3's
# seeks, tells and isatty() of a file are answered by the guest agent,
# without the home, and come out as at home, the offset of a standard
# input shared with the shell left where R's last seek put it.
. "$(dirname "$0")/lib.sh"

lab_up 2
wait_cluster 2
D=$(lab_dir)/rstub
mkdir -p "$D" && chmod 755 "$(lab_dir)" "$D" || fail "mkdir $D"
L2=$(lab_dir)/node2/mosd.log
R=$OSM_MOSRUN/reader
"$R" -w "$D/data" 3000000 || fail "could not write $D/data"
chmod 644 "$D/data"

ended() {
	grep "guest $1@1 .*ended" "$L2" | tail -1
}

# --- started away -------------------------------------------------------
lab_exec 1 sh -c 'cd "$1" && mosrun -L -r 2 "$2" data 2 > away.out 2>&1' \
    sh "$D" "$R"
grep -q '^ok' "$D/away.out" || fail "away: $(cat "$D/away.out")"
wait_for 10 sh -c "grep -q 'guest [0-9]*@1 .*ended' '$L2'" ||
    fail "away: no end on node 2"
line=$(grep 'guest [0-9]*@1 .*ended' "$L2" | tail -1)
reads=$(sed -n 's/^ok \([0-9]*\) reads.*/\1/p' "$D/away.out")
served=$(echo "$line" | sed -n 's/.* \([0-9]*\) reads from.*/\1/p')
inr=$(echo "$line" | sed -n 's/.*read ahead (\([0-9]*\) in R).*/\1/p')
[ -n "$inr" ] || fail "away: no count of reads in R: $line"
# seeks (one read in 66) and windows' ends go to the guest; the rest not
[ "$inr" -ge $((reads * 8 / 10)) ] ||
    fail "away: $inr of $reads reads answered in R ($served from windows)"
echo "away: $(tail -1 "$D/away.out"); $inr of $reads reads in R," \
    "$served read ahead"

# --- a checkpoint away, home, away again ----------------------------------
lab_exec 1 sh -c 'cd "$1" && { mosrun -L "$2" data 9 > moves.out 2>&1 & }' \
    sh "$D" "$R" || fail "moves: not started"
wait_for 20 grep -q ready "$D/moves.out" || fail "moves: $(cat "$D/moves.out")"
pid=$(pid_of reader)
[ -n "$pid" ] || fail "moves: not listed"
lab_exec 1 mosmigrate "$pid" 2 || fail "moves: not moved away"
wait_for 10 sh -c \
    "[ \"\$(\"$MOSLAB\" exec 1 mosps -a -p $pid -o where)\" = 2 ]" ||
    fail "moves: not on node 2"
sleep 1.5
out=$(lab_exec 1 mosmigrate "$pid" checkpoint) || fail "moves: checkpoint: $out"
sleep 1
lab_exec 1 mosmigrate "$pid" home || fail "moves: not brought home"
[ "$(where "$pid")" = 1 ] ||
    fail "moves: not home: $(where "$pid"); $(cat "$D/moves.out")"
sleep 1
lab_exec 1 mosmigrate "$pid" 2 || fail "moves: not moved away again"
[ "$(where "$pid")" = 2 ] || fail "moves: not away again: $(where "$pid")"
wait_for 30 grep -q -e '^ok' -e 'not\|byte\|:' "$D/moves.out" ||
    fail "moves: no end: $(cat "$D/moves.out")"
grep -q '^ok' "$D/moves.out" || fail "moves: $(cat "$D/moves.out")"
wait_for 10 sh -c "[ \$(grep -c 'guest $pid@1 .*ended' '$L2') -ge 1 ]" ||
    fail "moves: no end on node 2"
line=$(ended "$pid")
inr=$(echo "$line" | sed -n 's/.*read ahead (\([0-9]*\) in R).*/\1/p')
[ "${inr:-0}" -ge 1000 ] ||
    fail "moves: $inr reads in R on its second stay: $line"
echo "moves: $(tail -1 "$D/moves.out"); $inr reads in R on node 2 at the end"

# --- seeks and isatty() answered by the guest agent ------------------------
cat > "$D/seek.py" <<'EOF'
import hashlib, os, sys
h = hashlib.sha256()
with open(sys.argv[1], 'rb', buffering=0) as f:
    for i in range(200):
        f.seek((i * 7919) % 2900000)
        h.update(f.read(1000))
        h.update(str(f.tell()).encode())
        f.seek(-500, os.SEEK_CUR)
        h.update(f.read(10))
    tty = f.isatty()
with open(sys.argv[1], 'rb') as f:
    h.update(f.read(4096))
    tty = tty or f.isatty()
os.lseek(0, 5000, os.SEEK_SET)
print(h.hexdigest(), tty)
EOF
lab_exec 1 sh -c 'cd "$1" && { python3 seek.py data > seek.home; cat > rest.home; } < data' \
    sh "$D" || fail "seeks: python3 at home failed"
n=$(ends)
lab_exec 1 sh -c 'cd "$1" && { mosrun -L -r 2 python3 seek.py data > seek.away; cat > rest.away; } < data' \
    sh "$D" || fail "seeks: python3 away failed: $(cat "$D/seek.away")"
line=$(end_after "$n") || fail "seeks: no end on node 2"
cmp -s "$D/seek.home" "$D/seek.away" ||
    fail "seeks: away $(cat "$D/seek.away"), at home $(cat "$D/seek.home")"
grep -q ' False$' "$D/seek.away" || fail "seeks: isatty: $(cat "$D/seek.away")"
tail -c +5001 "$D/data" | cmp -s - "$D/rest.away" ||
    fail "seeks: cat did not go on at byte 5000 after R's lseek"
here=$(echo "$line" | sed -n 's/.* \([0-9]*\) seeks and terminal ioctls of files answered here.*/\1/p')
waited=$(echo "$line" | sed -n 's/.* \([0-9]*\) calls waited for at home.*/\1/p')
# 200 x (seek, tell, seek back), two isatty(), the last lseek
[ "${here:-0}" -ge 600 ] && [ "${waited:-999}" -lt 400 ] ||
    fail "seeks: $here seeks and isatty answered on node 2, $waited calls waited for: $line"
echo "seeks: $here seeks, tells and isatty() answered on node 2, $waited calls waited for at home"
