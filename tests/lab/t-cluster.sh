#!/bin/sh
# The cluster view: four lab nodes running mosd learn each other's load by
# gossip, show a loaded node, mark a silent node down and up again, refuse
# (and count) hostile datagrams, and mosmon -b shows the view.
. "$(dirname "$0")/lib.sh"

lab_up 4 --cpus 0.5 --mem 512

# Every node lists all four nodes up, with AGE at most 3, within 5 s.
all_fresh() {
	for k in 1 2 3 4; do
		lab_exec "$k" mosctl status | awk '
		    NR > 1 && $3 == "up" && $10 <= 3 { n++ }
		    END { exit n != 4 }' || return 1
	done
}
wait_for 5 all_fresh || {
	for k in 1 2 3 4; do lab_exec "$k" mosctl status; done
	fail "not every node saw 4 nodes up with AGE <= 3 within 5 s"
}
lab_exec 1 mosctl status | head -1 | grep -q \
    '^NODE  *ADDRESS  *STATE  *LOAD  *CPUS  *SPEED  *MEMFREE  *MEMTOTAL  *GUESTS  *AGE  *FLAGS$' ||
    fail "status header"
# What node 1 says of node 3: its cgroup's 0.5 CPU and 512 MiB.
lab_exec 1 mosctl status | awk '$1 == 3 && $2 == "10.77.0.3" &&
    $5 == "0.50" && $8 == 512 && $7 <= 512 && $7 > 400 { ok = 1 }
    END { exit !ok }' || fail "node 3's capacity as seen from node 1"

# A CPU burner in node 2 makes node 2 the most loaded in node 1's view.
"$MOSLAB" exec 2 sh -c 'while :; do :; done' &
burner=$!
node2_busiest() {
	lab_exec 1 mosctl status | awk '$3 == "up" && $4 > max { max = $4; n = $1 }
	    END { exit !(n == 2 && max >= 1.0) }'
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
counter() {
	lab_exec 1 mosctl stats | awk -v n="$1" '$1 == n { print $2 }'
}
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
lab_exec 1 mosctl status | awk '$1 == 2 && $4 == "0.99" { exit 1 }' ||
    fail "a forged entry for node 2 was believed"

# A stopped mosd is shown down within the timeout (6 s for 4 nodes at
# 1 s), then up again once it is back.
"$MOSLAB" stop 4 || fail "moslab stop 4"
node4_is() {
	lab_exec 1 mosctl status | awk -v s="$1" '$1 == 4 { exit $3 != s }'
}
wait_for 9 node4_is down || fail "node 4 not shown down within 9 s"
"$MOSLAB" start 4 || fail "moslab start 4"
wait_for 5 node4_is up || fail "node 4 not shown up again within 5 s"
[ "$(lab_exec 1 mosmon -b | awk 'NR > 1' | wc -l)" -eq 4 ] ||
    fail "mosmon -b does not list 4 nodes"

"$MOSLAB" down || fail "moslab down"
check_clean
echo "PASS"
