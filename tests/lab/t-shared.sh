#!/bin/sh
# Shared file systems (docs/REMOTE.md, "Shared file systems"): a directory
# of this machine, the same in every node (as NFS would be), declared
# "shared" in cluster.conf. A process away opens its files there on the
# node where it runs, as its owner, and reads, writes, fsyncs and locks
# them there: sqlite3 writing one database away and at home at the same
# time leaves it whole; a descriptor opened there comes home at its
# offset; and a symbolic link out of the shared directory reaches no file
# of the node it runs on.
. "$(dirname "$0")/lib.sh"

lab_up 2
wait_cluster 2
S=$(lab_dir)/shared
L2=$(lab_dir)/node2/mosd.log
mkdir -p "$S" && chmod 755 "$(lab_dir)" && chmod 1777 "$S" || fail "mkdir $S"
echo "shared $S" >> "$(lab_dir)/cluster.conf"
for n in 1 2; do
	kill -HUP "$(cat "$(lab_dir)/node$n/mosd.pid")"
done
wait_for 5 grep -q "reload: .* 1 shared paths" "$L2" ||
    fail "node 2 did not take the shared path"
# an ordinary user's, as users run it: another descriptor held open
as() {
	lab_exec 1 setpriv --reuid 4242 --regid 4242 --clear-groups "$@"
}
# what node 2's guest agent said at the end of the last guest
ended() {
	grep "ended" "$L2" | tail -1
}
field() {
	ended | sed -n "s/.* \([0-9]*\) $1.*/\1/p"
}
# away_py NAME WORD: python3 NAME.py away in the background, in the shared
# directory (its argument), until it prints WORD; $pid is its pid, on
# node 2
away_py() {
	as sh -c 'cd "$1" && { mosrun -L -r 2 python3 "$2.py" "$1" \
	    > "$2.out" 2>&1 & }' sh "$S" "$1" || fail "$1: not started"
	wait_for 30 grep -q "$2" "$S/$1.out" || fail "$1: $(cat "$S/$1.out")"
	pid=$(pid_of python3)
	[ "$(where "$pid")" = 2 ] || fail "$1: not on node 2"
}

# --- nothing of the node's own ----------------------------------------
# A link out of the shared directory to /tmp, which each node has its
# own of: away as at home, it is the home's file. (LC_ALL=C: no locale
# file mapped, which would bring cat home and hide a file of node 2's.)
lab_exec 1 sh -c 'echo home > /tmp/osm-shared.txt && chmod 644 /tmp/osm-shared.txt'
lab_exec 2 sh -c 'echo node2 > /tmp/osm-shared.txt && chmod 644 /tmp/osm-shared.txt'
ln -sf /tmp/osm-shared.txt "$S/link"
got=$(as env LC_ALL=C mosrun -L -r 2 cat "$S/link" 2>&1 | grep -v '^mosrun: ')
[ "$got" = home ] || fail "link: read '$got' away"
wait_for 10 sh -c "grep ended '$L2' | tail -1 | grep -q '0 files opened here'" ||
    fail "link: opened on node 2: $(ended)"
# The owner's file it may not read at home, it may not read away.
echo secret > "$S/root.txt" && chmod 600 "$S/root.txt"
got=$(as mosrun -L -r 2 cat "$S/root.txt" 2>&1 | grep -v '^mosrun: ')
case $got in
*"Permission denied"*) ;;
*) fail "root's file: read away: $got" ;;
esac
echo "link: '$got' for root's file, the home's file through the link"

# --- sqlite3, away and at home at once, on one database ---------------
for w in away home; do
	awk -v w=$w 'BEGIN { print ".timeout 60000"
	    for (i = 1; i <= 200; i++)
		printf "insert into t(v) values(%c%s %d%c);\n", 39, w, i, 39 }' \
	    > "$S/$w.sql"
done
as sh -c 'cd "$1" && sqlite3 t.db "create table t(k integer primary key,
    v text)" && exec 7</dev/null && { mosrun -L -r 2 sqlite3 t.db < away.sql \
    > away.out 2>&1 & sqlite3 t.db < home.sql > home.out 2>&1; wait; }' \
    sh "$S" || fail "sqlite3: $(cat "$S/away.out" "$S/home.out")"
wait_for 10 grep -q "ended: status 0" "$L2" || fail "sqlite3: not away: $(ended)"
line=$(ended)
opened=$(field "files opened here")
here=$(field "calls on them here")
home=$(echo "$line" | sed -n 's/.*calls \([0-9]*\) sent home.*/\1/p')
[ "${opened:-0}" -ge 200 ] || fail "sqlite3: $opened files opened on node 2: $line"
[ "${here:-0}" -ge 2000 ] || fail "sqlite3: $here calls made on node 2: $line"
# of them its pwrite64s, pread64s and fdatasyncs made by the stub in R,
# with no notification (docs/REMOTE.md, "Calls on files opened here")
inr=$(echo "$line" | sed -n 's/.* calls on them here (\([0-9]*\) in R).*/\1/p')
# (its locks too, nine a commit: some 3,200 without them; and its two
# fstats: some 5,000 without them)
[ "${inr:-0}" -ge 5300 ] ||
    fail "sqlite3: ${inr:-no} calls made by the stub in R: $line"
# each commit's journal unlinked on node 2, not at home
unlinked=$(field "unlinks here")
[ "${unlinked:-0}" -ge 200 ] ||
    fail "sqlite3: ${unlinked:-no} journals unlinked on node 2: $line"
# and opened there with no wait for the home, the journal and its
# directory (docs/REMOTE.md, "Opens made here"): no call a commit waits
# for at home (the start's hundred or so, where there were two a commit)
alone=$(echo "$line" | sed -n 's/.*files opened here ([0-9]* not, \([0-9]*\) without the home.*/\1/p')
waited=$(field "calls waited for at home")
# and many of them closed before the home needed them: their opens at
# home moot, never sent (docs/REMOTE.md, "Opens made here"); 138 to 245
# of the 400 in runs here, as the home's writer's locks and the 2 ms
# flush fall (none without it; the moot case below counts exactly)
unseen=$(field "closed before the home opened it")
[ "${unseen:-0}" -ge 100 ] ||
    fail "sqlite3: ${unseen:-no} opens on node 2 the home never made: $line"
[ "${alone:-0}" -ge 390 ] ||
    fail "sqlite3: ${alone:-no} files opened on node 2 alone: $line"
[ "${waited:-999}" -lt 200 ] ||
    fail "sqlite3: ${waited:-no} calls waited for at home: $line"
check=$(as sqlite3 "$S/t.db" "pragma integrity_check;
    select count(*), count(distinct v) from t where v like 'away %';
    select count(*) from t where v like 'home %';" | tr '\n' ' ')
[ "$check" = "ok 200|200 200 " ] || fail "sqlite3: the database says: $check"
echo "sqlite3: $check; away: $opened opened on node 2 ($alone alone, $unseen never opened at home), $here calls there ($inr by the stub in R), $unlinked unlinks there, $home sent home, $waited waited for"

# --- unlinks made on node 2, and those refused --------------------------
# An unlink away of the owner's file under the shared path is made on
# node 2 by the opener, once the home said who the process is (its
# getuid); one the owner may not make — root's file in the sticky shared
# directory, a file in a directory of root's — is refused as at home
# (EPERM, EACCES: the home's own answer), and the file stays.
cat > "$S/unl.py" <<'EOF'
import os, sys
os.getuid()
for p in sys.argv[1:]:
    try:
        os.unlink(p)
        print(p, 'removed')
    except OSError as e:
        print(p, e.strerror)
EOF
mkdir -p "$S/rootdir" && echo x > "$S/rootdir/f" && chmod 755 "$S/rootdir" &&
    chmod 644 "$S/rootdir/f" || fail "unlink: no files of root's"
as sh -c 'echo mine > "$1/mine.txt"' sh "$S" || fail "unlink: no file"
no="$S/root.txt $S/rootdir/f"
home=$(as python3 "$S/unl.py" $no 2>&1)
got=$(as mosrun -L -r 2 python3 "$S/unl.py" "$S/mine.txt" $no 2>&1 |
    grep -v '^mosrun: ')
[ "$got" = "$(printf '%s removed\n%s' "$S/mine.txt" "$home")" ] ||
    fail "unlink: away said '$got', at home '$home'"
case $home in
*"Operation not permitted"*"Permission denied") ;;
*) fail "unlink: at home: $home" ;;
esac
[ -e "$S/root.txt" ] && [ -e "$S/rootdir/f" ] && [ ! -e "$S/mine.txt" ] ||
    fail "unlink: the files are not as at home: $(ls -l "$S" "$S/rootdir")"
wait_for 10 sh -c "grep ended '$L2' | tail -1 | grep -q 'ended: status 0'" ||
    fail "unlink: not on node 2: $(ended)"
[ "$(field "unlinks here")" = 1 ] || fail "unlink: not made on node 2: $(ended)"
echo "unlink: made on node 2, refused as at home: $(echo $home)"

# --- stats the guest agent makes itself ---------------------------------
# Stats under the shared path are made by the guest agent itself where
# its lookup comes to the owner's (docs/REMOTE.md, "Stat"), else by the
# opener with the owner's rights: the same answers as at home, where the
# guest uid could see more than the owner — a directory of the owner's
# that its owner may not search (mode 0077), one root's with an access
# list that refuses the owner — and through a link, ".", "//".
cat > "$S/stats.py" <<'EOF'
import os, sys
s = sys.argv[1] + '/st'
os.getuid()
open(s + '/f').close()
out = []
for name, f in (('f', os.stat), ('none', os.stat), ('f/x', os.stat),
        ('own/g', os.stat), ('acl/g', os.stat), ('ln', os.stat),
        ('ln', os.lstat), ('/f', os.stat), ('sub/./f', os.stat),
        ('sub/f', os.stat), ('', os.stat)):
    try:
        st = f(s + '/' + name)
        out.append('%s %o %d %d %d' % (name, st.st_mode, st.st_size,
            st.st_ino, st.st_dev))
    except OSError as e:
        out.append('%s %s' % (name, e.strerror))
print(' / '.join(out))
EOF
mkdir -p "$S/st/own" "$S/st/acl" "$S/st/sub" && echo f > "$S/st/f" &&
    echo g > "$S/st/own/g" && echo g > "$S/st/acl/g" &&
    echo f > "$S/st/sub/f" && ln -sf f "$S/st/ln" &&
    chown -R 4242:4242 "$S/st" && chown root:root "$S/st/acl" &&
    chmod 0077 "$S/st/own" && chmod 755 "$S/st/acl" ||
    fail "stats: no files"
# user:4242:--- on a directory root's, mode 755 (the rest may search it);
# a file system without access lists (EOPNOTSUPP) tests the rest
acl=$(python3 -c 'import errno, os, struct, sys
e = lambda tag, perm, id=0xffffffff: struct.pack("<HHI", tag, perm, id)
try:
    os.setxattr(sys.argv[1], "system.posix_acl_access", struct.pack("<I", 2) +
        e(1, 7) + e(2, 0, 4242) + e(4, 5) + e(0x10, 5) + e(0x20, 5))
    print("acl/g Permission denied")
except OSError as x:
    if x.errno != errno.EOPNOTSUPP:
        raise
    print("acl/g 100644")' "$S/st/acl") || fail "stats: no access list"
home=$(as python3 "$S/stats.py" "$S" 2>&1)
n=$(ends)
got=$(as mosrun -L -r 2 python3 "$S/stats.py" "$S" 2>&1 | grep -v '^mosrun: ')
line=$(end_after "$n") || fail "stats: no end on node 2"
[ "$got" = "$home" ] || fail "stats: away '$got', at home '$home'"
case $home in
*"/ own/g Permission denied / $acl"*) ;;
*) fail "stats: at home: $home" ;;
esac
# f, none, f/x, lstat ln, /f, sub/f at least
made=$(echo "$line" | sed -n 's/.* \([0-9]*\) stats made by the agent itself.*/\1/p')
[ "${made:-0}" -ge 6 ] ||
    fail "stats: ${made:-no} made by the guest agent itself: $line"
echo "stats: as at home, $made made by the guest agent itself: $home"

# --- opens made on node 2 alone -----------------------------------------
# Opens of absolute paths under the shared path, once one proved it the
# same file system, are made on node 2 alone (docs/REMOTE.md, "Opens made
# here"): each at the number the home would have given it, between opens
# that go home (/dev/null) and closes; a file it creates has the umask of
# the process at home (027) and its group; what the owner may not open,
# or what exists with O_EXCL, is refused as at home. The same lines at
# home and away (the numbers those of a shell that holds others open, as
# make check's may), and the files as they were made at home.
cat > "$S/fds.py" <<'EOF'
import os, sys
d, tag = sys.argv[1], sys.argv[2]
os.getuid()
out = []
def o(name, fl, mode=0o666):
    p = name if name.startswith('/') else d + '/' + name
    try:
        fd = os.open(p, fl, mode)
        out.append('%s %d' % (name, fd))
        return fd
    except OSError as e:
        out.append('%s %s' % (name, e.strerror))
        return -1
a = o('fds.py', os.O_RDONLY)
n = o('/dev/null', os.O_RDONLY)
b = o(tag + '.1', os.O_RDWR | os.O_CREAT | os.O_TRUNC)
os.write(b, b'one two')
c = o(tag + '.2', os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
o(tag + '.2', os.O_WRONLY | os.O_CREAT | os.O_EXCL)
o('root.txt', os.O_RDONLY)
os.close(n)
e = o(tag + '.1', os.O_RDONLY)
out.append(os.read(e, 3).decode())
os.close(a)
f = o('rootdir', os.O_RDONLY)
out.append(str(len(os.listdir(f))))
o(tag + '.1', os.O_RDONLY | os.O_CLOEXEC)
for fd in (b, c, e, f):
    os.close(fd)
o(tag + '.3', os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
for name in ('.1', '.2', '.3'):
    st = os.stat(d + '/' + tag + name)
    out.append('%o %d %d %d' % (st.st_mode & 0o7777, st.st_uid, st.st_gid,
        st.st_size))
print(' / '.join(out))
EOF
as sh -c 'umask 027 && python3 "$1/fds.py" "$1" home' sh "$S" > "$S/fds.home" 2>&1 ||
    fail "fds: at home: $(cat "$S/fds.home")"
n=$(ends)
as sh -c 'umask 027 && mosrun -L -r 2 python3 "$1/fds.py" "$1" away' sh "$S" \
    > "$S/fds.away" 2>&1 || fail "fds: away: $(cat "$S/fds.away")"
line=$(end_after "$n") || fail "fds: no end on node 2"
alone=$(echo "$line" | sed -n 's/.*files opened here ([0-9]* not, \([0-9]*\) without the home.*/\1/p')
[ "${alone:-0}" -ge 6 ] || fail "fds: ${alone:-no} opened on node 2 alone: $line"
home=$(sed 's/home\./T./g' "$S/fds.home")
away=$(grep -v '^mosrun: ' "$S/fds.away" | sed 's/away\./T./g')
[ "$home" = "$away" ] || fail "fds: away '$away', at home '$home'"
case $home in
*" / T.2 File exists / root.txt Permission denied / "*" / one / "*" / 640 4242 4242 7 / 600 4242 4242 0 / 640 4242 4242 0") ;;
*) fail "fds: at home: $home" ;;
esac
echo "fds: as at home, $alone opened on node 2 alone: $home"

# --- opens the home never makes ----------------------------------------
# A file opened on node 2 and closed before anything else went home costs
# the home nothing: its open there is moot, never sent (docs/REMOTE.md,
# "Opens made here"). Yet the home holds every one R still has when a
# call needs it: x and y opened, x closed (moot), then an fchmod of y,
# which goes home, finds y at its number there; and the next open takes
# x's number, as at home. The same line at home and away.
cat > "$S/moot.py" <<'EOF'
import os, sys
d, tag = sys.argv[1], sys.argv[2]
p = d + '/moot.py'
out = []
for i in range(300):
    fd = os.open(p, os.O_RDONLY)
    os.close(fd)
x = os.open(p, os.O_RDONLY)
y = os.open(d + '/' + tag + '.m', os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
os.close(x)
os.fchmod(y, 0o640)
z = os.open(p, os.O_RDONLY)
out += [str(fd), str(x), str(y), str(z)]
out.append('%o' % (os.stat(d + '/' + tag + '.m').st_mode & 0o777))
print(' '.join(out))
EOF
as python3 "$S/moot.py" "$S" home > "$S/moot.home" 2>&1 ||
    fail "moot: at home: $(cat "$S/moot.home")"
n=$(ends)
as mosrun -L -r 2 python3 "$S/moot.py" "$S" away > "$S/moot.away" 2>&1 ||
    fail "moot: away: $(cat "$S/moot.away")"
line=$(end_after "$n") || fail "moot: no end on node 2"
unseen=$(echo "$line" | sed -n 's/.* \([0-9]*\) closed before the home opened it.*/\1/p')
[ "${unseen:-0}" -ge 250 ] || fail "moot: ${unseen:-no} opens the home never made: $line"
home=$(cat "$S/moot.home")
away=$(grep -v '^mosrun: ' "$S/moot.away")
[ "$home" = "$away" ] || fail "moot: away '$away', at home '$home'"
case $home in
*" 640") ;;
*) fail "moot: at home: $home" ;;
esac
echo "moot: as at home ($home), $unseen opens on node 2 the home never made"

# --- a descriptor opened there comes home at its offset --------------
cat > "$S/lines.py" <<'EOF'
import sys, time
with open(sys.argv[1], 'w') as f:
    for i in range(1, 401):
        f.write('line %d\n' % i)
        f.flush()
        if i == 100:
            print('ready', flush=True)
        time.sleep(0.005)
print('done', flush=True)
EOF
# lines NAME FILE: lines.py away writing FILE (its deputy's calls logged
# in NAME.log), brought home midway; the file holds every line once
lines() {
	as sh -c 'cd "$1" && { OSM_DEPUTY_LOG=$1/$2.log OSM_DEPUTY_DEBUG=1 \
	    mosrun -L -r 2 python3 lines.py "$3" > $2.out 2>&1 & }' \
	    sh "$S" "$1" "$2" || fail "$1: not started"
	wait_for 30 grep -q ready "$S/$1.out" || fail "$1: $(cat "$S/$1.out")"
	pid=$(pid_of python3)
	[ "$(where "$pid")" = 2 ] || fail "$1: not on node 2"
	# (seen once: mosmigrate's answer lost, "session read: Connection
	# reset by peer", though the process went home: node 2's log says)
	lab_exec 1 mosmigrate "$pid" home > "$S/mig.out" 2>&1 ||
	    echo "$1: mosmigrate said: $(cat "$S/mig.out")"
	wait_for 30 grep -q done "$S/$1.out" || fail "$1: $(cat "$S/$1.out")"
	seq 1 400 | sed 's/^/line /' | cmp -s - "$S/$1.txt" ||
	    fail "$1: the file is not lines 1 to 400: $(head -3 "$S/$1.txt")"
	wait_for 10 grep -q "guest $pid@1 .*goes home" "$L2" ||
	    fail "$1: not sent home"
}
lines lines lines.txt
# (its relative path resolved at home, the file written on node 2: of
# its writes only its "ready" went home)
n=$(grep -c ': write = ' "$S/lines.log")
[ "$n" -le 2 ] || fail "lines: $n writes sent home"
echo "lines: 400 in order, brought home midway, $n writes sent home"
# The same by its absolute path, opened on node 2 with no wait for the
# home: the home opened it behind (RemoteCall.open_at), at the number R
# has it at, so that the process finds it there when it comes home.
lines lines2 "$S/lines2.txt"
grep -q ': openat = [0-9]* (behind)' "$S/lines2.log" ||
    fail "lines2: not opened on node 2 alone: $(grep openat "$S/lines2.log")"
echo "lines2: 400 in order, opened on node 2 alone, brought home midway"

# --- a lock held on node 2 keeps the process there ---------------------
# R's lock on a file opened on node 2 is node 2's; moved, R's copy would
# end and the lock with it, mid-transaction. So a move we choose waits:
# mosmigrate is refused and says why, until the lock is given up.
cat > "$S/lock.py" <<'EOF'
import fcntl, os, sys, time
d = sys.argv[1]
f = open(d + '/lock.f', 'w')
fcntl.lockf(f, fcntl.LOCK_EX)
print('locked', flush=True)
while not os.path.exists(d + '/unlock'):
    time.sleep(0.01)
fcntl.lockf(f, fcntl.LOCK_UN)
print('unlocked', flush=True)
while not os.path.exists(d + '/end'):
    time.sleep(0.01)
fcntl.lockf(f, fcntl.LOCK_EX)
print('done', flush=True)
EOF
away_py lock locked
# the lock is held, by node 2's copy: another process cannot take it
as python3 -c 'import fcntl, sys; fcntl.lockf(open(sys.argv[1], "a"),
    fcntl.LOCK_EX | fcntl.LOCK_NB)' "$S/lock.f" 2>/dev/null &&
    fail "lock: not held while away"
if lab_exec 1 mosmigrate "$pid" home > "$S/mig.out" 2>&1; then
	fail "lock: moved home holding its lock: $(cat "$S/mig.out")"
fi
grep -q "holds a lock on $S/lock.f" "$S/mig.out" ||
    fail "lock: mosmigrate said: $(cat "$S/mig.out")"
[ "$(where "$pid")" = 2 ] || fail "lock: not on node 2 after the refusal"
lab_exec 1 mosps -a -v -p "$pid" | grep -q "holds a lock on $S/lock.f" ||
    fail "lock: mosps -v does not say why: $(lab_exec 1 mosps -a -v -p "$pid")"
touch "$S/unlock"
wait_for 30 grep -q unlocked "$S/lock.out" || fail "lock: $(cat "$S/lock.out")"
lab_exec 1 mosmigrate "$pid" home > "$S/mig.out" 2>&1 ||
    fail "lock: not moved once unlocked: $(cat "$S/mig.out")"
[ "$(where "$pid")" = 1 ] || fail "lock: not at home once unlocked"
touch "$S/end"
wait_for 30 grep -q done "$S/lock.out" || fail "lock: $(cat "$S/lock.out")"
echo "lock: refused while locked, home once unlocked"
# Its locks are taken by the stub in R, unseen by the guest (docs/
# REMOTE.md, "Calls on files opened here, made in R"): one it waits for
# (F_SETLKW, another process at home holding the lock) keeps it there too,
# until it has it and has given it up.
cat > "$S/lockw.py" <<'EOF'
import fcntl, os, sys, time
d = sys.argv[1]
f = open(d + '/lockw.f', 'w')
print('waiting', flush=True)
fcntl.lockf(f, fcntl.LOCK_EX)
fcntl.lockf(f, fcntl.LOCK_UN)
print('unlocked', flush=True)
while not os.path.exists(d + '/lockw.end'):
    time.sleep(0.01)
print('done', flush=True)
EOF
as sh -c 'exec python3 -c "import fcntl, os, sys, time
f = open(sys.argv[1], \"w\"); fcntl.lockf(f, fcntl.LOCK_EX); print(\"held\", flush=True)
while not os.path.exists(sys.argv[2]): time.sleep(0.01)" "$1/lockw.f" "$1/lockw.go" \
    > "$1/holder.out" 2>&1 &' sh "$S" || fail "lockw: no holder"
wait_for 10 grep -q held "$S/holder.out" || fail "lockw: $(cat "$S/holder.out")"
away_py lockw waiting
sleep 0.3
if lab_exec 1 mosmigrate "$pid" home > "$S/mig.out" 2>&1; then
	fail "lockw: moved home while taking its lock: $(cat "$S/mig.out")"
fi
grep -q "is taking a lock on a file opened where it runs" "$S/mig.out" ||
    fail "lockw: mosmigrate said: $(cat "$S/mig.out")"
[ "$(where "$pid")" = 2 ] || fail "lockw: not on node 2 after the refusal"
touch "$S/lockw.go"
wait_for 30 grep -q unlocked "$S/lockw.out" || fail "lockw: $(cat "$S/lockw.out")"
lab_exec 1 mosmigrate "$pid" home > "$S/mig.out" 2>&1 ||
    fail "lockw: not moved once unlocked: $(cat "$S/mig.out")"
[ "$(where "$pid")" = 1 ] || fail "lockw: not at home once unlocked"
touch "$S/lockw.end"
wait_for 30 grep -q done "$S/lockw.out" || fail "lockw: $(cat "$S/lockw.out")"
echo "lockw: refused while waiting for its lock, home once it gave it up"

# --- a descriptor opened at home, then the move --------------------------
# Opened and written at home, moved to node 2 midway: there the same
# file is opened and written (its first call there asks what it is), at
# the home's offset; the file holds every line once, in order.
cat > "$S/later.py" <<'EOF'
import os, sys, time
with open(sys.argv[1], 'w') as f:
    for i in range(1, 401):
        f.write('line %d\n' % i)
        f.flush()
        if i == 100:
            print('ready', flush=True)
            while not os.path.exists(sys.argv[1] + '.go'):
                time.sleep(0.01)
print('done', flush=True)
EOF
as sh -c 'cd "$1" && { mosrun -L python3 later.py later.txt > later.out 2>&1 & }' \
    sh "$S" || fail "later: not started"
wait_for 30 grep -q ready "$S/later.out" || fail "later: $(cat "$S/later.out")"
pid=$(pid_of python3)
lab_exec 1 mosmigrate "$pid" 2 > "$S/mig.out" 2>&1 ||
    fail "later: not moved: $(cat "$S/mig.out")"
[ "$(where "$pid")" = 2 ] || fail "later: not on node 2"
touch "$S/later.txt.go"
wait_for 30 grep -q done "$S/later.out" || fail "later: $(cat "$S/later.out")"
seq 1 400 | sed 's/^/line /' | cmp -s - "$S/later.txt" ||
    fail "later: the file is not lines 1 to 400: $(sed -n '99,102p' "$S/later.txt")"
wait_for 10 grep -q "guest $pid@1 .*ended" "$L2" || fail "later: no end on node 2"
line=$(grep "guest $pid@1 .*ended" "$L2")
opened=$(echo "$line" | sed -n 's/.* \([0-9]*\) files opened here.*/\1/p')
here=$(echo "$line" | sed -n 's/.* \([0-9]*\) calls on them here.*/\1/p')
[ "${opened:-0}" -ge 1 ] && [ "${here:-0}" -ge 290 ] ||
    fail "later: the file was not written on node 2: $line"
echo "later: 400 in order, lines 101 to 400 written on node 2 ($here calls there)"
# Standard output and error one open file on the shared path (2>&1): the
# same bytes as at home (not two files of two offsets on node 2).
P='for (1..300) { syswrite STDOUT, "out $_\n"; syswrite STDERR, "err $_\n" }'
as sh -c 'cd "$1" && perl -e "$2" > both.home 2>&1 &&
    mosrun -L -r 2 perl -e "$2" > both.away 2>&1' sh "$S" "$P" ||
    fail "2>&1: $(tail -3 "$S/both.away")"
grep -v '^mosrun: ' "$S/both.away" | cmp -s "$S/both.home" - ||
    fail "2>&1: the output away differs"
echo "2>&1: the same output as at home"

# --- files outside the shared paths -----------------------------------
# With a shared path declared, an open of a file outside it still says
# what it opened (docs/REMOTE.md "Calls behind"): perl's start away has
# the fstats after its libraries' opens answered on node 2 and their
# closes sent behind, as in a cluster with no shared path.
n=$(ends)
as mosrun -L -r 2 perl -e 1 || fail "outside: perl failed away"
line=$(end_after "$n") || fail "outside: no end on node 2"
known=$(field "fstats answered from an open's")
behind=$(echo "$line" | sed -n 's/.* sent home (\([0-9]*\) behind).*/\1/p')
[ "${known:-0}" -ge 5 ] && [ "${behind:-0}" -ge 5 ] ||
    fail "outside: ${known:-no} fstats answered, ${behind:-no} calls behind: $line"
echo "outside: perl's start, $known fstats answered and $behind calls behind"

# --- the stub's mark, forged -------------------------------------------
# The stub in R makes its calls on files opened on node 2 with a mark in
# the descriptor's high half, which the filter lets run. A program that
# forges it reaches R's own table only: its standard output is the
# home's (nothing of R's at that number on node 2), so a marked write to
# it reaches neither the home's file nor anything of node 2's, and R's
# table holds nothing but the files opened for it, stand-ins of its
# mappings and /dev/null.
cat > "$S/forge.py" <<'EOF'
import ctypes, os, sys, time
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
mark = 0x6f736d31 << 32
f = open(sys.argv[1] + '/forge.f', 'w')
f.write('x')
f.flush()
print('plain', flush=True)
r = libc.syscall(1, ctypes.c_long(mark | 1), b'forged\n', 7)
e = ctypes.get_errno()
print('marked', r, os.strerror(e) if r < 0 else '', flush=True)
while not os.path.exists(sys.argv[1] + '/forge.end'):
    time.sleep(0.01)
EOF
away_py forge marked
grep -q forged "$S/forge.out" && fail "forge: the marked write reached the home's file"
r=$(guest_pid python3 2)
[ -n "$r" ] || fail "forge: no copy of python3 on node 2"
fds=$(lab_exec 2 sh -c 'cd /proc/$1/fd && for f in *; do
    echo "$f $(readlink "$f")"; done' sh "$r")
bad=$(echo "$fds" | awk -v s="$S" '$2 != "/dev/null" &&
    index($2, s "/") != 1 && $2 !~ /^\/memfd:osmosis-file / { print }')
[ -z "$bad" ] || fail "forge: R holds more than its own files: $bad"
echo "$fds" | grep -q " $S/forge.f\$" || fail "forge: R's file not in its table: $fds"
touch "$S/forge.end"
wait_for 30 nprocs 0 || fail "forge: did not end"
echo "forge: $(grep marked "$S/forge.out"); R's table: $(echo "$fds" | wc -l) descriptors, all its own"
