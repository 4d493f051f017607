#!/bin/sh
# Staying away: everyday programs started on node 2 stay there — their CPU
# time is charged to node 2's cgroup and node 2 sends none of them home —
# and end with output identical to a run at home, the calls they send home
# served with no ptrace stop of the husk (or by the deputy itself, for
# reads and writes of regular files); file mappings made away
# (a private one, a read-only shared one) are made there, of the node's own
# copy of a file where it is the same and of the home's bytes where it is
# not; a process with mapped files moves 1 -> 2 -> 3, is checkpointed and
# recovered, and comes home exact; a read-only shared mapping follows the
# rule docs/REMOTE.md gives for a file changed at home; a writable shared
# mapping brings the process home, and mosps says why; a file replaced at
# home while mapped away keeps its content for the process, as natively;
# files a process maps (python3: a module it imports, a file) from a
# directory only root may read while a live or post-copy move is under
# way come from home too: it moves, runs on node 2 and ends exact.
. "$(dirname "$0")/lib.sh"

lab_up 3
wait_cluster 3
M=$OSM_MOSRUN/mapper
D=$(lab_dir)/sv
mkdir -p "$D" && chmod 755 "$(lab_dir)" "$D" || fail "mkdir $D"
L2=$(lab_dir)/node2/mosd.log

# --- inputs -----------------------------------------------------------
head -c 6000000 /dev/urandom | base64 > "$D/in.txt"
head -c 600000 "$D/in.txt" > "$D/small.txt"
printf '{ n += length($0) } END { print n, NR }\n' > "$D/prog.awk"
printf 'while (<>) { $n += length; $w += () = /\\w+/g } print "$n $w\\n";\n' \
    > "$D/prog.pl"
cat > "$D/mods.py" <<'EOF'
import ctypes, decimal, hashlib, json, sqlite3
d = open('in.txt', 'rb').read()
db = sqlite3.connect(':memory:')
db.execute('create table t(x)')
db.executemany('insert into t values(?)', [(i,) for i in range(2000)])
decimal.getcontext().prec = 50
print(json.dumps({'sha': hashlib.sha256(d).hexdigest(),
    'sum': db.execute('select sum(x) from t').fetchone()[0],
    'pi': str(decimal.Decimal(355) / decimal.Decimal(113)),
    'strlen': ctypes.CDLL(None).strlen(b'osmosis')}))
EOF
cat > "$D/db.sql" <<'EOF'
create table t(k integer primary key, v text);
with recursive c(x) as (select 1 union all select x + 1 from c where x < 20000)
insert into t select x, hex(randomblob(8) * 0 + x) from c;
select count(*), sum(k), max(v) from t;
EOF
printf 'int f(int x) { return x * 2; }\nint main(void) { return f(21); }\n' \
    > "$D/prog.c"
cc1=$(gcc -print-prog-name=cc1)

# NAME: how its calls at home were served, from its deputy's end line
# ("calls at home: A by the deputy, B without a stop, C in a trap"),
# added up over the survey.
by_deputy=0
no_stop=0
trapped=0
calls() {
	_l=$(sed -n 's/.*calls at home: \([0-9]*\) by the deputy, \([0-9]*\) without a stop, \([0-9]*\) in a trap$/\1 \2 \3/p' \
	    "$D/dlog.$1")
	[ -n "$_l" ] || fail "$1: no calls line in its deputy's log: \
$(tail -n 3 "$D/dlog.$1")"
	set -- $_l
	last_deputy=$1
	by_deputy=$((by_deputy + $1))
	no_stop=$((no_stop + $2))
	trapped=$((trapped + $3))
}

# NAME PROGRAM ARGS...: run it at home, then started on node 2; the same
# output, charged to node 2, and nothing sent home.
survey() {
	_n=$1
	shift
	_c1=$(node_cpu 1)
	lab_exec 1 sh -c 'cd "$1" && shift && "$@"' sh "$D" "$@" \
	    > "$D/home.$_n" 2>&1 || fail "$_n at home: $(cat "$D/home.$_n")"
	_home=$(( $(node_cpu 1) - _c1 ))
	_lines=$(wc -l < "$L2")
	_c2=$(node_cpu 2)
	lab_exec 1 sh -c 'cd "$1" && n=$2 && shift 2 &&
	    OSM_DEPUTY_LOG=dlog.$n exec mosrun -L -r 2 "$@"' sh "$D" "$_n" \
	    "$@" > "$D/away.$_n" 2>&1 ||
	    fail "$_n away: $(cat "$D/away.$_n")"
	calls "$_n"
	_away=$(( $(node_cpu 2) - _c2 ))
	cmp -s "$D/home.$_n" "$D/away.$_n" ||
	    fail "$_n: output away differs from at home"
	if tail -n +$((_lines + 1)) "$L2" | grep "goes home"; then
		fail "$_n came home"
	fi
	[ "$_away" -ge $((_home / 2)) ] ||
	    fail "$_n: node 2 was charged ${_away} ns, a run at home ${_home} ns"
	echo "$_n: at home ${_home} ns, node 2 charged ${_away} ns"
}

survey sha256sum sha256sum in.txt
survey sort sort --parallel=1 small.txt
survey awk awk -f prog.awk in.txt
survey perl perl prog.pl small.txt
survey grep grep -c AB in.txt
survey python3 /usr/bin/python3 mods.py
# its imports read and seek .pyc files, its script reads in.txt whole:
# the deputy makes those (a few writes behind without)
[ "$last_deputy" -gt 20 ] ||
    fail "python3: only $last_deputy calls were made by the deputy"
survey sqlite3 sqlite3 :memory: ".read db.sql"
survey xz xz -1 -c small.txt
survey zstd zstd --single-thread --no-asyncio -c in.txt
survey gzip gzip -c in.txt
survey bzip2 bzip2 -c small.txt
survey cc1 "$cc1" -quiet prog.c -o /dev/stdout
# The calls the husk ran mostly ended while the deputy waited, with no
# ptrace stop (a loaded machine may make a few outlast the wait).
echo "calls at home: $by_deputy by the deputy, $no_stop without a stop, \
$trapped in a trap"
[ "$no_stop" -gt 100 ] && [ "$trapped" -le $((no_stop / 4)) ] ||
    fail "the husk's calls ended in its trap: $trapped, without: $no_stop"

# --- file mappings made away --------------------------------------------
# The data in each node's own /tmp: node 2 has the same (mapped from its
# own copy), node 3 a different one (mapped from the home's bytes). The
# shared file is at home only.
head -c 2097152 /dev/urandom > "$D/data"
head -c 8192 /dev/zero | tr '\0' a > "$D/shared"
for k in 1 2; do lab_exec $k cp "$D/data" /tmp/data || fail "cp"; done
lab_exec 3 sh -c "head -c 2097152 /dev/urandom > /tmp/data" || fail "cp 3"
lab_exec 1 cp "$D/shared" /tmp/shared || fail "cp shared"
lab_exec 1 sh -c "$M /tmp/data /tmp/shared /tmp/want 20 > /dev/null" ||
    fail "mapper at home"

# mapped where it runs: node 2's own copy, the home's shared file's bytes
lab_exec 1 rm -f /tmp/say
lab_exec 1 sh -c "mosrun -L -r 2 $M /tmp/data /tmp/shared /tmp/out 40 \
    > /tmp/say 2>&1" &
job=$!
wait_for 15 lab_exec 1 grep -q mapped /tmp/say ||
    fail "mapper did not map: $(lab_exec 1 cat /tmp/say)"
pid=$(pid_of mapper)
[ "$(where "$pid")" = 2 ] || fail "mapper is not on node 2 after mapping"
rpid=$(guest_pid mapper 2)
maps=$(lab_exec 2 cat /proc/$rpid/maps)
echo "$maps" | grep -q ' /tmp/data$' ||
    fail "node 2 did not map its own copy of the data: $maps"
echo "$maps" | grep -q 'memfd:osmosis-file' ||
    fail "node 2 did not map the home's shared file from its bytes: $maps"
# the rule for a file changed at home: away, the mapping is as it was
lab_exec 1 sh -c "printf bbbbbbbbbbbbbbbb | dd of=/tmp/shared conv=notrunc \
    2>/dev/null" || fail "change shared"
sleep 0.5
lab_exec 1 grep -q 'shared: b' /tmp/out &&
    fail "away, the shared mapping followed a change at home"
# ... and at home it is the file again
lab_exec 1 mosmigrate "$pid" home || fail "mosmigrate home"
wait "$job" || fail "mapper failed"
lab_exec 1 grep -qx 'shared: bbbbbbbbbbbbbbbb' /tmp/out ||
    fail "at home, the shared mapping did not show the file: \
$(lab_exec 1 cat /tmp/out)"
[ "$(lab_exec 1 tail -2 /tmp/out)" = "$(lab_exec 1 tail -2 /tmp/want)" ] ||
    fail "mapper's private data differ: $(lab_exec 1 tail -2 /tmp/out)"

# a mapped file replaced at home while away (a new file renamed over it):
# as natively, the process keeps the content it mapped
lab_exec 1 cp "$D/shared" /tmp/shared
lab_exec 1 rm -f /tmp/say
lab_exec 1 sh -c "mosrun -L -r 2 $M /tmp/data /tmp/shared /tmp/out 30 \
    > /tmp/say 2>&1" &
job=$!
wait_for 15 lab_exec 1 grep -q mapped /tmp/say || fail "mapper 3 did not map"
pid=$(pid_of mapper)
lab_exec 1 sh -c "head -c 2097152 /dev/zero > /tmp/new && mv /tmp/new \
    /tmp/data" || fail "replace the data"
lab_exec 1 mosmigrate "$pid" home || fail "mosmigrate home, data replaced"
wait "$job" || fail "mapper 3 failed"
[ "$(lab_exec 1 tail -2 /tmp/out)" = "$(lab_exec 1 tail -2 /tmp/want)" ] ||
    fail "the replaced file's content was lost on the way home"
lab_exec 1 cp "$D/data" /tmp/data

# mapped before a move, moved 1 -> 2 -> 3, checkpointed on 3, home: exact;
# node 3's data differ, so its mapping is of the home's bytes
lab_exec 1 cp "$D/shared" /tmp/shared
lab_exec 1 rm -f /tmp/say
lab_exec 1 sh -c "mosrun -L -C /tmp/ck $M /tmp/data /tmp/shared /tmp/out 40 \
    > /tmp/say 2>&1" &
job=$!
wait_for 15 lab_exec 1 grep -q mapped /tmp/say || fail "mapper 2 did not map"
pid=$(pid_of mapper)
lab_exec 1 mosmigrate "$pid" 2 || fail "mosmigrate 2"
lab_exec 1 mosmigrate "$pid" 3 || fail "mosmigrate 3"
[ "$(where "$pid")" = 3 ] || fail "mapper is not on node 3"
rpid=$(guest_pid mapper 3)
lab_exec 3 cat /proc/$rpid/maps | grep -q 'memfd:osmosis-file' ||
    fail "node 3 mapped its own, different, data"
lab_exec 1 mosmigrate "$pid" checkpoint || fail "checkpoint on node 3"
lab_exec 1 mosmigrate "$pid" home || fail "mosmigrate home"
wait "$job" || fail "mapper 2 failed"
lab_exec 1 cmp /tmp/out /tmp/want || fail "mapper moved 1-2-3 differs"
lab_exec 1 rm -f /tmp/say
lab_exec 1 sh -c "mosrun -R /tmp/ck.1 > /tmp/say 2>&1" ||
    fail "recovery from the checkpoint taken on node 3: \
$(lab_exec 1 cat /tmp/say)"
lab_exec 1 cmp /tmp/out /tmp/want || fail "the recovered mapper differs"

# a writable shared mapping: home, and mosps says why
lab_exec 1 rm -f /tmp/say
lab_exec 1 sh -c "mosrun -L -r 2 $M -w /tmp/shared > /tmp/say 2>&1" &
job=$!
wait_for 15 lab_exec 1 grep -q mapped /tmp/say || fail "mapper -w"
pid=$(pid_of mapper)
[ "$(where "$pid")" = 1 ] || fail "a writable shared mapping stayed away"
why=$(ps_field "$pid" why)
case $why in
*"came home from node 2: writable shared file mapping"*) ;;
*) fail "mosps says '$why'" ;;
esac
lab_exec 1 mosctl stats | grep -q "home: writable shared file mapping" ||
    fail "mosctl stats does not count the return home"
lab_exec 1 kill "$pid"
wait "$job"

# --- files mapped while the process moves -------------------------------
# python3 imports an extension module and maps a data file, both from a
# directory only root may read (as /root/.pyenv is), while a live move
# to node 2 is under way (and a C program maps one before a post-copy
# move freezes it): the setup asked for the 16 MiB file each mapped
# before, through a link to node 2 shaped so that the move outlasts the
# go. The files come from home as those of the setup do; each runs on
# node 2 and ends with the output of a run at home.
S=$(lab_dir)/sec
mkdir -p "$S" && chmod 700 "$S" || fail "mkdir $S"
head -c 16777216 /dev/urandom > "$S/big"
head -c 300000 /dev/urandom > "$S/data"
cp /usr/lib/python3.11/lib-dynload/_bz2.cpython-311-x86_64-linux-gnu.so \
    "$S/" || fail "cp _bz2"
cat > "$D/late.py" <<'EOF'
import hashlib, mmap, os, sys, time
sec, go = sys.argv[1], sys.argv[2]
fb = open(sec + '/big', 'rb')
big = mmap.mmap(fb.fileno(), 0, access=mmap.ACCESS_COPY)
print('big', hashlib.sha256(big).hexdigest()[:16], flush=True)
def wait(p):
    while not os.path.exists(p):
        time.sleep(0.005)
wait(go + '.1')
sys.path.insert(0, sec)
import _bz2
fd = open(sec + '/data', 'rb')
m = mmap.mmap(fd.fileno(), 0, access=mmap.ACCESS_READ)
print('mapped', os.path.dirname(_bz2.__file__) == sec, flush=True)
wait(go + '.2')
h = b''
for i in range(400):
    h = hashlib.sha256(h + m[:]).digest()
c = _bz2.BZ2Compressor(9)
z = c.compress(m[:100000] * 4) + c.flush()
print('data', h.hex()[:32], len(z), hashlib.sha256(big).hexdigest()[:16])
EOF
# late NAME OPTION PROGRAM ARGS...: run at home (its go files there),
# then under mosrun, moved to node 2 with OPTION and told to map once
# the move's setup is sent (its guest agent started): its deputy lists
# its files again, and it moves, runs there and ends exact.
late() {
	_n=$1
	_o=$2
	_c=$(basename "$3")
	shift 2
	touch "$D/go.1" "$D/go.2"
	lab_exec 1 sh -c 'cd "$1" && shift && "$@"' sh "$D" "$@" \
	    > "$D/$_n.want" 2>&1 || fail "$_n at home: $(cat "$D/$_n.want")"
	rm -f "$D/go.1" "$D/go.2"
	lab_exec 1 sh -c 'cd "$1" && n=$2 && shift 2 &&
	    OSM_DEPUTY_LOG=dlog.$n exec mosrun -L "$@"' sh "$D" "$_n" "$@" \
	    > "$D/$_n.out" 2>&1 &
	job=$!
	wait_for 15 grep -q . "$D/$_n.out" || fail "$_n did not start"
	pid=$(pid_of "$_c")
	tc qdisc add dev "$MOSLAB_NAME-v2" root tbf rate 100mbit \
	    burst 256kb latency 100ms || fail "tc"
	_lines=$(wc -l < "$L2")
	lab_exec 1 mosmigrate $_o "$pid" 2 > "$D/$_n.mig" 2>&1 &
	_mjob=$!
	wait_for 15 guest_up || fail "$_n: no guest agent on node 2"
	touch "$D/go.1"
	wait_for 10 grep -q mapped "$D/$_n.out" || fail "$_n did not map"
	kill -0 "$_mjob" 2>/dev/null ||
	    fail "$_n: the move was over before it mapped its files"
	wait "$_mjob" || fail "$_n: not moved: $(cat "$D/$_n.mig")"
	tc qdisc del dev "$MOSLAB_NAME-v2" root
	grep -q "mapped [0-9]* more files* during its move" "$D/dlog.$_n" ||
	    fail "$_n: its deputy did not list its files again"
	[ "$(where "$pid")" = 2 ] || fail "$_n is not on node 2"
	[ -n "$(guest_pid "$_c" 2)" ] || fail "$_n: no $_c on node 2"
	_c2=$(node_cpu 2)
	touch "$D/go.2"
	wait "$job" || fail "$_n failed: $(cat "$D/$_n.out")"
	_c2=$(( $(node_cpu 2) - _c2 ))
	cmp -s "$D/$_n.want" "$D/$_n.out" ||
	    fail "$_n: output differs: $(cat "$D/$_n.out")"
	[ "$_c2" -gt 100000000 ] || fail "$_n: node 2 was charged $_c2 ns"
	echo "$_n: mapped during the move ($_o), node 2 charged $_c2 ns"
}
# its guest agent started: the setup is on its way, its files listed
guest_up() {
	tail -n +$((_lines + 1)) "$L2" | grep -q "guest agent .* for $pid@1"
}
late late.py --live python3 late.py "$S" "$D/go"
# post-copy lists them again at its freeze (with a C program: python3
# moved post-copy dies on node 2, whatever it maps, a bug apart)
late latec --post-copy "$M" -l "$S/big" "$S/data" "$D/go"
echo "PASS t-stayaway"
