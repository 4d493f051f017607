#!/bin/sh
# The cluster view: four lab nodes running mosd learn each other's load by
# gossip, show a loaded node, mark a silent node down and up again, refuse
# (and count) hostile datagrams, and mosmon -b shows the view.
. "$(dirname "$0")/lib.sh"

lab_up 4 --cpus 0.5 --mem 512

# moslab up returned: every node already lists all four nodes up, and
# within 5 s with information at most 3 s old.
for k in 1 2 3 4; do
	lab_exec "$k" mosctl status --json | pyjson "d['active'] == 4 and
	    all(n['state'] == 'up' for n in d['nodes'])" || {
		lab_exec "$k" mosctl status
		fail "node $k does not see 4 nodes up after moslab up"
	}
done
all_fresh() {
	for k in 1 2 3 4; do
		lab_exec "$k" mosctl status --json | pyjson "all(
		    n['state'] == 'up' and n['age_ms'] <= 3000
		    for n in d['nodes'])" || return 1
	done
}
wait_for 5 all_fresh || {
	for k in 1 2 3 4; do lab_exec "$k" mosctl status; done
	fail "not every node saw 4 nodes up with AGE <= 3 within 5 s"
}
lab_exec 1 mosctl status | head -1 | grep -q \
    '^NODE  *ADDRESS  *STATE  *LOAD  *CPUS  *SPEED  *MEMFREE  *MEMTOTAL  *GUESTS  *AGE  *FLAGS  *SWAPFREE  *SWAPTOTAL$' ||
    fail "status header"
# What node 1 says of node 3: its cgroup's 0.5 CPU and 512 MiB; the
# columns and the JSON agree.
lab_exec 1 mosctl status --json | pyjson "[n for n in d['nodes']
    if n['node'] == 3 and n['address'] == '10.77.0.3' and
    n['cpus'] == 0.5 and n['mem_total_mib'] == 512 and
    400 < n['mem_free_mib'] <= 512 and n['swap_free_mib'] <=
    n['swap_total_mib'] and n['guests'] == 0 and n['flags'] == []]" ||
    fail "node 3's capacity as seen from node 1: $(lab_exec 1 mosctl status)"
lab_exec 1 mosctl status | awk '$1 == 3 && $5 == "0.50" && $8 == 512
    { ok = 1 } END { exit !ok }' || fail "node 3's columns"

# A CPU burner in node 2 makes node 2 the most loaded in node 1's view.
"$MOSLAB" exec 2 sh -c 'while :; do :; done' &
burner=$!
node2_busiest() {
	lab_exec 1 mosctl status --json | pyjson "max((n['load'], n['node'])
	    for n in d['nodes'] if n['state'] == 'up') >= (1.0, 2)"
}
wait_for 6 node2_busiest || {
	lab_exec 1 mosctl status
	fail "node 2 not the most loaded in node 1's view within 6 s"
}
kill "$burner"
wait "$burner" 2>/dev/null

# mosmon -b: one line per node.
[ "$(lab_exec 1 mosmon -b | awk 'NR > 1 && $2 == "up"' | wc -l)" -eq 4 ] ||
    fail "mosmon -b does not list 4 nodes up"

# Hostile datagrams from node 3 to node 1: all dropped, each counted.
key=$(cat "$(lab_dir)/cluster.key")
lab_exec 3 python3 - "$key" <<'PY' || fail "could not send test datagrams"
import hashlib, hmac, socket, struct, sys
key = bytes.fromhex(sys.argv[1])
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("10.77.0.3", 0))	# not the gossip port: a stranger on node 3
to = ("10.77.0.1", 4750)
def frame(body, k=key, version=1, kind=1):
    hdr = struct.pack(">IHHI", 0x4f534d47, version, kind, len(body))
    return hdr + body + hmac.new(k, hdr + body, hashlib.sha256).digest()
s.sendto(b"\x00" * 7, to)                                # truncated
s.sendto(b"x" * 2000, to)                                # oversized
s.sendto(b"GET / HTTP/1.0\r\n" * 4, to)                  # bad magic
s.sendto(frame(b"\x08\x02", version=9), to)              # wrong version
s.sendto(frame(b"\x08\x02", k=b"\x01" * 32), to)         # forged
s.sendto(frame(b"\xff\xff\xff"), to)                     # malformed body
# a well-formed message claiming to be node 2, sent from elsewhere
body = bytes([0x08, 0x02, 0x10, 0x01, 0x18, 0x01])
body += bytes([0x22, 0x01, 0x02]) + b"".join(
    bytes([f << 3 | 2, 1, v]) for f, v in
    ((5, 0), (6, 99), (7, 100), (8, 100), (9, 100), (10, 50), (11, 0),
     (12, 0)))
s.sendto(frame(body), to)                                # wrong source
PY
dropped_all() {
	for c in dropped_truncated dropped_oversized dropped_bad_magic \
	    dropped_wrong_version dropped_bad_mac dropped_malformed \
	    dropped_wrong_source; do
		[ "$(counter $c)" -ge 1 ] || return 1
	done
}
wait_for 3 dropped_all || {
	lab_exec 1 mosctl stats
	fail "hostile datagrams not all dropped and counted"
}
# ... and nothing of them was believed: node 2's load is not 0.99.
[ "$(node_field 1 2 load)" != 0.99 ] ||
    fail "a forged entry for node 2 was believed"

# A stopped mosd is shown down within the timeout (6 s for 4 nodes at
# 1 s), then up again once it is back.
"$MOSLAB" stop 4 || fail "moslab stop 4"
node4_is() {
	[ "$(node_field 1 4 state)" = "$1" ]
}
wait_for 9 node4_is down || fail "node 4 not shown down within 9 s"
# heard of before, so down rather than unknown, and nothing stale shown
lab_exec 1 mosctl status --json | pyjson "[n for n in d['nodes']
    if n['node'] == 4 and n['load'] is None and n['age_ms'] > 0]" ||
    fail "node 4 down: $(lab_exec 1 mosctl status --json)"
"$MOSLAB" start 4 || fail "moslab start 4"
# moslab start returned: node 4 and the others see each other again
node4_is up || fail "node 4 not shown up again after moslab start"
[ "$(lab_exec 1 mosmon -b | awk 'NR > 1' | wc -l)" -eq 4 ] ||
    fail "mosmon -b does not list 4 nodes"

"$MOSLAB" down || fail "moslab down"
check_clean
echo "PASS"
