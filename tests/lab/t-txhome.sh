#!/bin/sh
# A transactional program away with its files at home (docs/REMOTE.md,
# "Calls behind"): the calls whose answer the guest knows are not waited
# for — an open's descriptor known from its reply (its first write
# behind, the fstat after it answered on node 2), an unlock, a downgrade
# of a write lock it holds, the close of a directory and of a file synced
# since its last write — while what
# another process at home can see stays as at home:
#   - a close after a write behind that fails at home (its file system
#     filled meanwhile by another process) says ENOSPC, and still closes;
#   - sqlite3 away and sqlite3 at home write one database at once, each
#     its own 300 autocommitted inserts: the database whole
#     (integrity_check), every row once;
#   - 200 autocommitted inserts alone away wait for at most 20 calls at
#     home a commit (27 before these calls went behind), the fstat of
#     each journal answered on node 2.
. "$(dirname "$0")/lib.sh"

lab_up 2
wait_cluster 2
D=$(lab_dir)/tx
mkdir -p "$D" && chmod 755 "$(lab_dir)" "$D" || fail "mkdir $D"
L2=$(lab_dir)/node2/mosd.log
# what the end line $1 says before the words $2
said() {
	echo "$1" | sed -n "s/.* \([0-9][0-9]*\) $2.*/\1/p"
}

# --- a close after a write behind that failed ------------------------------
cat > "$D/full.py" <<'EOF'
import os, sys, time
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
os.write(fd, b'x')
print('ready', flush=True)
while not os.path.exists(sys.argv[2]):
    time.sleep(0.01)
print('write:', os.write(fd, bytes(65536)), flush=True)
try:
    os.close(fd)
    print('close: ok', flush=True)
except OSError as e:
    print('close:', e.strerror, flush=True)
try:
    os.fstat(fd)
    print('fstat: open', flush=True)
except OSError as e:
    print('fstat:', e.strerror, flush=True)
EOF
mkdir -p "$D/full"
lab_exec 1 mount -t tmpfs -o size=12m tmpfs "$D/full" || fail "full: no tmpfs"
n=$(ends)
lab_exec 1 sh -c 'cd "$1" && { mosrun -L -r 2 /usr/bin/python3 full.py \
    full/f go > full.out 2>&1 & }' sh "$D" || fail "full: not started"
wait_for 30 grep -q ready "$D/full.out" || fail "full: $(cat "$D/full.out")"
lab_exec 1 sh -c 'dd if=/dev/zero of="$1/full/fill" bs=64k 2>/dev/null; true' \
    sh "$D"
touch "$D/go"
wait_for 30 grep -q '^fstat' "$D/full.out" || fail "full: $(cat "$D/full.out")"
line=$(end_after "$n") || fail "full: no end in node 2's log"
for want in "write: 65536" "close: No space left on device" \
    "fstat: Bad file descriptor"; do
	grep -qxF "$want" "$D/full.out" ||
	    fail "full: no '$want': $(cat "$D/full.out")"
done
lab_exec 1 umount "$D/full" || fail "full: umount"
echo "close after a failed write behind: $(grep close: "$D/full.out")"

# --- a call behind goes home without the next --------------------------------
# A call behind waits in the session for the next message home, so that
# many go in one write (docs/REMOTE.md, "Calls behind"); with none after
# it, the guest's timer sends it a moment later: a close behind (of a
# file synced since its last write) leaves the home's table while R
# computes, making no call (its CPU clock is answered on node 2), not
# when it calls again 5 s later.
cat > "$D/lone.py" <<'EOF'
import os, sys, time
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
os.write(fd, b'x')
os.fsync(fd)
print('open', flush=True)
while not os.path.exists(sys.argv[2]):
    time.sleep(0.01)
os.close(fd)
t = time.process_time()
while time.process_time() - t < 5:
    pass
print('done', flush=True)
EOF
rm -f "$D/lone.go"
lab_exec 1 sh -c 'cd "$1" && exec 7</dev/null && mosrun -L -r 2 python3 \
    lone.py lone.f lone.go > lone.out 2>&1' sh "$D" &
lone=$!
wait_for 30 grep -q open "$D/lone.out" || fail "lone: $(cat "$D/lone.out")"
lpid=$(pid_of python3)
[ "$(where "$lpid")" = 2 ] || fail "lone: not on node 2"
holds() {
	lab_exec 1 ls -l "/proc/$lpid/fd" 2>/dev/null | grep -q "$D/lone.f\$"
}
let_go() {
	! holds
}
wait_for 5 holds || fail "lone: the home does not hold lone.f: \
    $(lab_exec 1 ls -l "/proc/$lpid/fd" 2>&1)"
touch "$D/lone.go"
wait_for 3 let_go ||
    fail "lone: the home still holds lone.f 3 s after R's close"
! grep -q done "$D/lone.out" ||
    fail "lone: R called again before the home let lone.f go"
wait "$lone" && grep -q done "$D/lone.out" ||
    fail "lone: $(cat "$D/lone.out")"
echo "lone close behind: at home while R computes"

# --- away and at home at once, one database ---------------------------------
# inserts.sql FIRST LAST V: autocommitted inserts of keys FIRST to LAST
inserts() {
	awk -v a="$1" -v b="$2" -v v="$3" 'BEGIN { print ".timeout 60000"
	    for (i = a; i <= b; i++)
		printf "insert into t values(%d, %c%s%c);\n", i, 39, v, 39 }'
}
inserts 1 300 away > "$D/away.sql"
inserts 1001 1300 home > "$D/home.sql"
rm -f "$D/two.db" "$D/two.db-journal"
sqlite3 "$D/two.db" "create table t(k integer primary key, v text)" ||
    fail "two: no database"
n=$(ends)
lab_exec 1 sh -c 'cd "$1" || exit 1
    { mosrun -L -r 2 sqlite3 two.db ".read away.sql" > away.out 2>&1
    echo "status $?" >> away.out; } &
    sqlite3 two.db ".read home.sql" > home.out 2>&1
    echo "status $?" >> home.out
    wait' sh "$D" || fail "two: not run"
line=$(end_after "$n") ||
    fail "two: no end in node 2's log: $(cat "$D/away.out")"
grep -qx "status 0" "$D/away.out" || fail "two: away: $(cat "$D/away.out")"
grep -qx "status 0" "$D/home.out" || fail "two: at home: $(cat "$D/home.out")"
check=$(sqlite3 "$D/two.db" "pragma integrity_check;
    select count(*), count(distinct k), sum(k), sum(v = 'away') from t")
[ "$(echo $check)" = "ok 600|600|390300|300" ] ||
    fail "two: the database says: $check"
waited=$(said "$line" "calls waited for at home")
[ "${waited:-0}" -ge 300 ] || fail "two: was it away? $line"
echo "two at once: $(echo $check); away $waited calls waited for at home"

# --- calls home per commit, alone --------------------------------------------
{ echo "create table t(k integer primary key, v text);"
    inserts 1 200 x | tail -n +2
    echo "select count(*), sum(k) from t;"; } > "$D/tx.sql"
rm -f "$D/tx.db"
n=$(ends)
lab_exec 1 sh -c 'cd "$1" && mosrun -L -r 2 sqlite3 tx.db ".read tx.sql" \
    > tx.out 2>&1' sh "$D" || fail "alone: $(cat "$D/tx.out")"
line=$(end_after "$n") || fail "alone: no end in node 2's log"
[ "$(cat "$D/tx.out")" = "200|20100" ] || fail "alone: $(cat "$D/tx.out")"
[ "$(sqlite3 "$D/tx.db" 'pragma integrity_check')" = ok ] ||
    fail "alone: the database is not whole"
waited=$(said "$line" "calls waited for at home")
known=$(said "$line" "fstats answered from an open's")
sent=$(said "$line" "sent home")
# (the start and the table's creation: some 150 calls)
# (some ten calls behind a commit, all but the last of a burst sent
# with the next message, docs/REMOTE.md "Calls behind")
held=$(said "$line" "calls behind sent with the next message")
[ "${held:-0}" -ge 1000 ] ||
    fail "alone: ${held:-no} calls behind sent with the next message: $line"
[ -n "$waited" ] && [ "$waited" -le $((200 * 20 + 150)) ] &&
    [ "$waited" -ge $((200 * 10)) ] && [ "${known:-0}" -ge 200 ] ||
    fail "alone: ${waited:-?} calls waited for," \
	"${known:-?} fstats answered here: $line"
echo "alone: 200 commits, $waited calls waited for at home ($sent sent," \
    "$held behind with the next message), $known fstats answered on node 2"
