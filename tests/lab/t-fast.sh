#!/bin/sh
# Forwarding without the round trip (docs/REMOTE.md, "Answered where it
# runs"): a process started on node 2 gets its identity there — right
# across setgroups, setresgid, setresuid and setsid, and after its parent
# dies at home — with its getpid calls never sent home; its CPU-time clock
# polled in a loop is answered inside it, monotonic and total across a
# move, and none of those calls reach its guest agent or the home.
. "$(dirname "$0")/lib.sh"

lab_up 2
wait_cluster 2
D=$(lab_dir)/fast
mkdir -p "$D" && chmod 755 "$(lab_dir)" "$D" || fail "mkdir $D"

# --- identity -----------------------------------------------------------
# The parent shell ends once the process is ready: it is reparented.
lab_exec 1 sh -c 'cd "$1" && { OSM_DEPUTY_LOG=$1/ident.log \
    OSM_DEPUTY_DEBUG=1 mosrun -L -r 2 "$2" > ident.out 2>&1 & } &&
    i=0 && until grep -q ready ident.out; do
	i=$((i + 1)); [ $i -lt 600 ] || exit 1; sleep 0.05; done' \
    sh "$D" "$OSM_MOSRUN/ident" || fail "ident: not ready: $(cat "$D/ident.out")"
wait_for 60 grep -q '^ok' "$D/ident.out" ||
    fail "ident: $(cat "$D/ident.out")"
# It was away (its reads of /proc/self/status went home), and of its
# thousand getpid calls and more none went home but the first.
opens=$(grep -c ': openat = ' "$D/ident.log")
pids=$(grep -c ': getpid = ' "$D/ident.log")
[ "$opens" -ge 400 ] || fail "ident: $opens opens sent home: was it away?"
[ "$pids" -le 1 ] || fail "ident: $pids getpid calls sent home"
echo "identity: $(grep '^ok' "$D/ident.out"), $opens opens and $pids getpid sent home"
