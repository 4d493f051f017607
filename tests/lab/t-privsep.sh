#!/bin/sh
# mosd's privilege separation (docs/RELIABILITY.md, "Two processes"). On
# each node the code that parses what comes from the network and from
# local clients runs in the network process: its /proc shows uid net-uid
# (59999), no capability in any set, no_new_privs, not dumpable and a
# seccomp filter, and it, not the parent, holds the gossip, broker and
# control sockets. The parent is root with only what starts guest agents,
# and it does start them: a process moved to node 2 is served by a guest
# agent whose parent is node 2's privileged process. The parent refuses
# every malformed record the network process could send it, naming what
# is wrong, and still serves a good one (tests/lab/privsep.py); mosd goes
# on as before. A SIGHUP hands over a policy only root can read, which
# then applies; one the parent cannot open changes nothing. SIGTERM to
# the parent stops both processes at once.
. "$(dirname "$0")/lib.sh"
P=${OSM_MOSRUN:-$OSM_BIN/../build/tests/mosrun}
POL=$(lab_dir)/policy.conf

# status PID: the /proc status lines the test looks at
status() {
	grep -E '^(Uid|Gid|Groups|Cap(Inh|Prm|Eff|Bnd|Amb)|NoNewPrivs|Seccomp):' \
	    "/proc/$1/status"
}
# The inodes of the sockets PID holds, one a line.
sockets() {
	for _f in /proc/$1/fd/*; do
		readlink "$_f"
	done | sed -n 's/^socket:\[\([0-9]*\)\]$/\1/p' | sort
}
# The inode of node K's socket on port 4750 (udp or tcp, hex 128E).
port_inode() {
	lab_exec "$1" cat "/proc/net/$2" |
	    awk '$2 ~ /:128E$/ && ($4 == "0A" || $4 == "07") { print $10; exit }'
}

lab_up 2 --cpus 1 --mem 512
wait_cluster 2
parent=$(cat "$(lab_dir)/node1/mosd.pid")
net=$(mosd_net 1)
[ -n "$net" ] || fail "node 1's mosd has no network process"

# The network process: no root, no capability, no way to gain one.
st=$(status "$net")
for want in "Uid:	59999	59999	59999	59999" \
    "Gid:	59999	59999	59999	59999" \
    "CapInh:	0000000000000000" "CapPrm:	0000000000000000" \
    "CapEff:	0000000000000000" "CapBnd:	0000000000000000" \
    "CapAmb:	0000000000000000" "NoNewPrivs:	1" "Seccomp:	2"; do
	echo "$st" | grep -qxF "$want" ||
	    fail "the network process lacks '$want': $st"
done
echo "$st" | grep -q '^Groups:[[:space:]]*$' ||
    fail "the network process has groups: $st"
# Not dumpable: its /proc files are root's, not its uid's.
[ "$(stat -c %u /proc/$net/status)" = 0 ] ||
    fail "the network process is dumpable"
# The parent: root, with the three capabilities guest agents need, and
# CAP_SYS_RESOURCE where root has it here (not in some containers).
sysres=$((0x$(awk '/^CapBnd:/ { print $2 }' /proc/self/status) >> 24 & 1))
if [ "$sysres" = 1 ]; then kept=00000000010001c0; else kept=00000000000001c0; fi
pst=$(status "$parent")
for want in "Uid:	0	0	0	0" "CapEff:	00000000000000c0" \
    "CapPrm:	$kept" "CapBnd:	$kept" "NoNewPrivs:	1"; do
	echo "$pst" | grep -qxF "$want" || fail "the parent lacks '$want': $pst"
done

# The sockets from the network are the network process's, not the parent's.
udp=$(port_inode 1 udp)
tcp=$(port_inode 1 tcp)
ctl=$(lab_exec 1 cat /proc/net/unix | awk '$8 == "/run/osmosis/mosd.sock" \
    { print $7; exit }')
[ -n "$udp" ] && [ -n "$tcp" ] && [ -n "$ctl" ] ||
    fail "node 1's sockets not found: udp '$udp' tcp '$tcp' control '$ctl'"
for i in "$udp" "$tcp" "$ctl"; do
	sockets "$net" | grep -qx "$i" ||
	    fail "the network process does not hold socket $i"
	if sockets "$parent" | grep -qx "$i"; then
		fail "the privileged parent holds socket $i"
	fi
done

# A move: node 2's parent starts the guest agent, under a guest uid.
lab_exec 1 mkfifo /tmp/go
"$MOSLAB" exec 1 sh -c "mosrun $P/walker /tmp/go wait > /tmp/out 2>&1" &
job=$!
wait_for 10 nprocs 1 || fail "no walker in mosps"
pid=$(ps_list pid)
lab_exec 1 mosmigrate "$pid" 2 || fail "mosmigrate $pid 2"
[ "$(where "$pid")" = 2 ] || fail "the walker is not on node 2"
parent2=$(cat "$(lab_dir)/node2/mosd.pid")
# (the spare beside it, started ahead for the next move, is still root's
# and waits for its start message: guests.c)
agent= spare=
for c in $(cat /proc/$parent2/task/$parent2/children); do
	[ "$(cat /proc/$c/comm)" = mosd-guest ] || continue
	if awk '/^Uid:/ { exit !($2 >= 60000) }' "/proc/$c/status"; then
		agent=$c
	else
		spare=$c
	fi
done
[ -n "$agent" ] ||
    fail "no guest agent of a guest uid is a child of node 2's parent"
[ -n "$spare" ] || fail "node 2's parent has no spare guest agent"
# mosd at nice -10, so that a busy node still hears it (mosd_raise_priority);
# the guest agent and the program it runs at 0, as programs started at home.
nice_of() { awk '{ sub(/^.*\) /, ""); print $17 }' "/proc/$1/stat"; }
for p in "$parent" "$net" "$parent2"; do
	[ "$(nice_of "$p")" = -10 ] || fail "mosd $p runs at nice $(nice_of "$p")"
done
walker=$(awk '{ print $1; exit }' /proc/$agent/task/*/children)
[ -n "$walker" ] && [ "$(cat /proc/$walker/comm)" = walker ] ||
    fail "no walker is a child of the guest agent: '$walker'"
for p in "$agent" "$walker"; do
	[ "$(nice_of "$p")" = 0 ] || fail "$p runs at nice $(nice_of "$p")"
done
# The out-of-memory killer takes guests first and, where root has
# CAP_SYS_RESOURCE, never mosd (mosd_shield_oom, guest_oom_first); a guest
# cannot lower its score below the node's own processes' (0), nor at all
# with CAP_SYS_RESOURCE, its score then its floor.
adj() { cat "/proc/$1/oom_score_adj"; }
for p in "$parent" "$net" "$parent2"; do
	[ "$(adj "$p")" = $((sysres * -1000)) ] ||
	    fail "mosd $p: oom_score_adj $(adj "$p")"
done
for p in "$agent" "$walker"; do
	[ "$(adj "$p")" = 1000 ] || fail "guest $p: oom_score_adj $(adj "$p")"
done
guid=$(awk '/^Uid:/ { print $2 }' "/proc/$walker/status")
vals=-1
[ "$sysres" = 1 ] && vals="-1 999"
for v in $vals; do
	if setpriv --reuid "$guid" --regid "$guid" --clear-groups sh -c \
	    "echo $v > /proc/$walker/oom_score_adj" 2>/dev/null; then
		fail "the guest's uid set its oom_score_adj to $v"
	fi
done
[ "$(adj "$walker")" = 1000 ] ||
    fail "the guest's oom_score_adj went to $(adj "$walker")"

# The parent refuses malformed records on the channel; the network
# process is stopped meanwhile, so that every answer comes to the test.
kill -STOP "$net"
out=$(python3 "$LAB_TESTS/privsep.py" "$net" 2>&1)
rc=$?
kill -CONT "$net"
echo "$out"
[ "$rc" -eq 0 ] || fail "the parent's answers: $out"
LOG=$(lab_dir)/node1/mosd.log
wait_for 5 grep -q "refused a record of the network process: a record of \
unknown type 99" "$LOG" || fail "the parent did not log a refusal"
grep -q "guest agent [0-9]* (uid 600[0-9]*) started for 4242@2" "$LOG" ||
    fail "the parent did not log the guest agent it started"
# mosd goes on, the same process, and still moves processes.
[ "$(mosd_net 1)" = "$net" ] || fail "the network process changed"
wait_cluster 2
lab_exec 1 mosmigrate "$pid" home || fail "mosmigrate $pid home"
[ "$(where "$pid")" = 1 ] || fail "the walker did not come home"
lab_exec 1 kill "$pid"
wait "$job"

# SIGHUP: a policy only root may read, opened by the parent, applied.
printf 'user nobody nodes 1\n' > "$POL"
chmod 600 "$POL"
if setpriv --reuid 59999 --regid 59999 --clear-groups cat "$POL" \
    > /dev/null 2>&1; then
	fail "uid 59999 can read the policy itself"
fi
kill -HUP "$parent"
wait_for 5 grep -q "reload: .*policy $POL" "$LOG" ||
    fail "the root-only policy was not applied"
"$MOSLAB" exec 1 setpriv --reuid 65534 --regid 65534 --clear-groups \
    mosrun -L "$P/walker" /tmp/go wait > /dev/null 2>&1 &
job=$!
wait_for 10 nprocs 1 || fail "no walker of nobody in mosps"
pid=$(ps_list pid)
expect 1 "policy: processes of nobody may not run on node 2" \
    lab_exec 1 setpriv --reuid 65534 --regid 65534 --clear-groups \
    mosmigrate "$pid" 2
# One the parent cannot open changes nothing (never the built-in policy).
printf 'user nobody nodes 1-2\n' > "$POL"
chown 65534 "$POL"
kill -HUP "$parent"
wait_for 5 grep -q "reload: $POL: Permission denied; keeping the old" \
    "$LOG" || fail "an unreadable policy was not refused"
expect 1 "may not run on node 2" lab_exec 1 setpriv --reuid 65534 \
    --regid 65534 --clear-groups mosmigrate "$pid" 2
lab_exec 1 kill "$pid"
wait "$job"

# SIGTERM stops both at once: the parent, which may not signal the
# network process (another uid's; it has no CAP_KILL), asks it on the
# channel.
alive() {
	_s=$(sed 's/.*) \(.\).*/\1/' "/proc/$1/stat" 2>/dev/null)
	[ -n "$_s" ] && [ "$_s" != Z ]
}
stopped() {
	! alive "$parent" && ! alive "$net"
}
net=$(mosd_net 1)
t0=$(_ms)
kill -TERM "$parent"
wait_for 5 stopped ||
    fail "mosd did not stop within 5 s of SIGTERM: $(tail -2 "$LOG")"
grep -q "the privileged process asks to stop" "$LOG" ||
    fail "the network process was not asked to stop: $(tail -2 "$LOG")"
echo "SIGTERM: both processes gone in $(($(_ms) - t0)) ms"

"$MOSLAB" down || fail "moslab down"
check_clean
echo PASS
