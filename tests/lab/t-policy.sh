#!/bin/sh
# The policy, enforced at both ends: a user limited to nodes 1 and 2 and
# to one process away (the home refuses to send more), a node that refuses
# a group (the target refuses, and mosmigrate says why); a bad policy
# file rejected with file:line, by mosd -n and on SIGHUP, while the old
# policy keeps working; a good one taken on SIGHUP.
. "$(dirname "$0")/lib.sh"
P=${OSM_MOSRUN:-$OSM_BIN/../build/tests/mosrun}
POL=$(mktemp)
trap 'rm -f "$POL"' EXIT
cat > "$POL" <<'EOF'
# uid 4242 (no passwd entry: its name is its number)
user 4242 nodes 1-2 away 1
node 3 refuse group:nogroup
EOF
lab_up 3 --cpus 0.5 --mem 256 --policy "$POL"
rm -f "$POL"
wait_cluster 3
lab_exec 1 sh -c 'mkfifo /tmp/go; chmod 666 /tmp/go' || fail "set-up"
CONF=$(lab_dir)/cluster.conf

# start UID GID USER N: a waiting walker of that user on node 1, its Nth;
# its pid in $pid.
count() {
	[ "$(ps_list user | grep -cx "$1")" -eq "$2" ]
}
start() {
	"$MOSLAB" exec 1 setpriv --reuid "$1" --regid "$2" --clear-groups \
	    mosrun -L "$P/walker" /tmp/go wait > /dev/null 2>&1 &
	wait_for 10 count "$3" "$4" ||
	    fail "no walker of $3 in mosps: $(lab_exec 1 mosps -a)"
	pid=$(ps_list user,pid | sed -n "s/^$3 //p" | tail -n 1)
}
move() {	# move UID PID NODE
	lab_exec 1 setpriv --reuid "$1" --regid "$1" --clear-groups \
	    mosmigrate "$2" "$3"
}

# The home refuses what the user's rule forbids.
start 4242 4242 4242 1
a=$pid
expect 1 "policy: processes of 4242 may not run on node 3" move 4242 "$a" 3
move 4242 "$a" 2 || fail "4242 may run on node 2"
start 4242 4242 4242 2
b=$pid
expect 1 "policy: 4242 may have at most 1 processes away" move 4242 "$b" 2
[ "$(where "$b")" = 1 ] || fail "the refused process is not at home"

# The target refuses a group the home lets go.
start 65534 65534 nobody 1
c=$pid
expect 1 "node 3 refuses group nogroup" move 65534 "$c" 3
grep -q "offer of $c@1 refused: node 3 refuses group nogroup" \
    "$(lab_dir)/node3/mosd.log" || fail "node 3 did not log the refusal"
move 65534 "$c" 2 || fail "nobody may run on node 2"

# A bad file: mosd -n names it, a reload keeps the old policy.
printf 'user 4242 nodes 1-3\nnode 3 refuse bogus:x\n' > "$(lab_dir)/policy.conf"
expect 1 "policy.conf:2:" lab_exec 1 "$OSM_BIN/mosd" -n -f "$CONF"
kill -HUP "$(cat "$(lab_dir)/node1/mosd.pid")"
wait_for 5 grep -q "reload: .*policy.conf:2: .*keeping the old" \
    "$(lab_dir)/node1/mosd.log" || fail "the bad reload was not reported"
move 4242 "$a" home || fail "4242: home"
expect 1 "may not run on node 3" move 4242 "$a" 3

# A good one takes effect.
printf 'user 4242 nodes 1-3 away 2\n' > "$(lab_dir)/policy.conf"
lab_exec 1 "$OSM_BIN/mosd" -n -f "$CONF" |
    grep -q "policy $(lab_dir)/policy.conf" ||
    fail "mosd -n does not show the policy"
kill -HUP "$(cat "$(lab_dir)/node1/mosd.pid")"
wait_for 5 grep -q "reload: .*policy $(lab_dir)/policy.conf" \
    "$(lab_dir)/node1/mosd.log" || fail "the good reload was not reported"
move 4242 "$a" 3 || fail "4242 may run on node 3 now"
move 4242 "$b" 2 || fail "4242 may have 2 processes away now"

"$MOSLAB" down || fail "moslab down"
check_clean
echo PASS
