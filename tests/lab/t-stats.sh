#!/bin/sh
# Stats answered again (docs/REMOTE.md, "Stats answered again"): a
# process away with its files at home stats paths; the guest agent
# answers a stat again from the home's last answer while nothing could
# have changed it, and what R sees stays as at home would show it:
#   - python3's imports: fewer calls waited for, its stats answered on
#     node 2, its output as at home;
#   - R's own write of a file: its next stat says the new size at once;
#   - a file changed at home by another process, which then signals R:
#     R's handler's stat sees the change at once;
#   - a file changed at home with nothing said: seen within 1.5 s
#     (FIO_FRESH_NS, 1 s, from the answer kept);
#   - under mosrun -s, nothing answered again.
. "$(dirname "$0")/lib.sh"

lab_up 2
wait_cluster 2
D=$(lab_dir)/stats
mkdir -p "$D" && chmod 755 "$(lab_dir)" && chmod 1777 "$D" || fail "mkdir $D"
U="setpriv --reuid 4242 --regid 4242 --clear-groups"
# what the end line $1 says before the words $2
said() {
	echo "$1" | sed -n "s/.* \([0-9][0-9]*\) $2.*/\1/p"
}

cat > "$D/stats.py" <<'EOF'
import os, signal, sys, time
p, go = sys.argv[1], sys.argv[2]
def size():
    return os.stat(p).st_size
s0 = size()
for i in range(200):	# all but the first answered again, whatever the timing
    size()
with open(p, 'ab') as f:
    f.write(b'x' * 10)
print('own', size() - s0, flush=True)
got = []
signal.signal(signal.SIGUSR1, lambda n, fr: got.append(size()))
size()
print('signal', os.getpid(), flush=True)
while not got:
    time.sleep(0.01)
print('told', got[0] - s0, flush=True)
s1 = size()
print('poll', flush=True)
t0 = time.monotonic()
while size() == s1 and time.monotonic() - t0 < 10:
    pass
print('seen %.2f' % (time.monotonic() - t0), size() - s1, flush=True)
EOF
printf 'abc' > "$D/f"
chmod 666 "$D/f"

# one run as the user, in $D, its output into $1 (mosrun's options after)
stats_run() {
	out=$1
	shift
	rm -f "$D/$out"
	lab_exec 1 $U sh -c 'cd "$1" && o=$2 && shift 2 &&
	    exec "$@" python3 stats.py "$PWD/f" go > "$o" 2>&1' sh "$D" "$out" "$@" &
	bg=$!
	wait_for 20 grep -q '^signal' "$D/$out" || fail "$out: $(cat "$D/$out")"
	pid=$(sed -n 's/^signal //p' "$D/$out")
	printf '0123456789' >> "$D/f"
	lab_exec 1 kill -USR1 "$pid" || fail "$out: no signal to $pid"
	wait_for 20 grep -q '^poll' "$D/$out" || fail "$out: $(cat "$D/$out")"
	printf 'zzzzz' >> "$D/f"
	wait $bg || fail "$out: python3 failed: $(cat "$D/$out")"
}

n=$(ends)
stats_run away.out mosrun -L -r 2
line=$(end_after "$n") || fail "away: no end on node 2"
[ "$(grep -c '^own 10$\|^told 20$' "$D/away.out")" = 2 ] &&
    grep -q '^seen [0-9.]* 5$' "$D/away.out" ||
    fail "away: $(tr '\n' ' ' < "$D/away.out")"
delay=$(sed -n 's/^seen \([0-9.]*\) .*/\1/p' "$D/away.out")
awk -v d="$delay" 'BEGIN { exit !(d <= 1.5) }' ||
    fail "away: a change at home seen $delay s later"
again=$(said "$line" "stats answered again")
[ "${again:-0}" -ge 100 ] || fail "away: ${again:-no} stats answered again: $line"
echo "away: $(tr '\n' ' ' < "$D/away.out"); $again stats answered again"

n=$(ends)
stats_run strict.out mosrun -s -L -r 2
line=$(end_after "$n") || fail "strict: no end on node 2"
[ "$(said "$line" "stats answered again")" = 0 ] ||
    fail "strict: stats answered again: $line"

# --- python3's imports --------------------------------------------------------
cat > "$D/imp.py" <<'EOF'
import collections, json, csv, decimal, fractions, statistics, email.parser
print(sorted(collections.Counter('mississippi').items()), json.dumps([1]))
EOF
lab_exec 1 $U sh -c 'cd "$1" && python3 imp.py > imp.home' sh "$D" ||
    fail "imports: at home"
n=$(ends)
lab_exec 1 $U sh -c 'cd "$1" && mosrun -L -r 2 python3 imp.py > imp.away' \
    sh "$D" || fail "imports: away"
cmp -s "$D/imp.home" "$D/imp.away" || fail "imports: $(cat "$D/imp.away")"
line=$(end_after "$n") || fail "imports: no end on node 2"
waited=$(said "$line" 'calls waited for at home')
again=$(said "$line" 'stats answered again')
[ "${again:-0}" -ge 50 ] ||
    fail "imports: ${again:-no} stats answered again, $waited calls waited for: $line"
echo "imports: $again stats answered again, $waited calls waited for at home"
