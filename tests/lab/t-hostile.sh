#!/bin/sh
# Hostile peers: a stranger on node 3 talks to node 1's migration broker
# with garbage, with frames under the wrong cluster key and with an offer
# that replays an old challenge. Each is refused and counted, node 1 takes
# no guest, and a real migration still works afterwards. (Gossip under a
# wrong key, from the wrong address or replayed: t-cluster and check_mosd.)
. "$(dirname "$0")/lib.sh"
P=${OSM_MOSRUN:-$OSM_BIN/../build/tests/mosrun}

lab_up 3 --cpus 0.5 --mem 256
wait_cluster 3
before_mac=$(counter dropped_bad_mac)
before_big=$(counter dropped_oversized)

key=$(cat "$(lab_dir)/cluster.key")
lab_exec 3 python3 - "$key" > /tmp/hostile.$$ 2>&1 <<'PY' ||
import hashlib, hmac, os, socket, struct, sys
key = bytes.fromhex(sys.argv[1])
to = ("10.77.0.1", 4750)

def frame(kind, body, k=key):
    hdr = struct.pack(">IHHI", 0x4f534d47, 1, kind, len(body))
    return hdr + body + hmac.new(k, hdr + body, hashlib.sha256).digest()

def varint(v):
    out = b""
    while True:
        b = v & 0x7f
        v >>= 7
        if v:
            out += bytes([b | 0x80])
        else:
            return out + bytes([b])

def field(n, v):
    if isinstance(v, int):
        return varint(n << 3) + varint(v)
    return varint(n << 3 | 2) + varint(len(v)) + v

def recv_frame(s):
    hdr = b""
    while len(hdr) < 12:
        c = s.recv(12 - len(hdr))
        if not c:
            return None
        hdr += c
    n = struct.unpack(">I", hdr[8:12])[0] + 32
    body = b""
    while len(body) < n:
        c = s.recv(n - len(body))
        if not c:
            return None
        body += c
    return struct.unpack(">H", hdr[6:8])[0], body[:-32]

def broker():
    s = socket.create_connection(to, timeout=5)
    hello = recv_frame(s)
    assert hello is not None and hello[0] == 2, "no hello"
    return s

def closed(s):
    try:
        return s.recv(1) == b""
    except (ConnectionResetError, socket.timeout):
        return True

# garbage, then a frame under another key: dropped, the connection cut
s = broker()
s.sendall(b"\xff" * 64)
assert closed(s), "garbage kept the connection"
s = broker()
offer = field(1, 3) + field(2, 1) + field(3, os.urandom(16)) + \
    field(4, os.urandom(16)) + field(5, 4242) + field(6, 0) + \
    field(7, 0) + field(8, b"root") + field(9, b"forged")
s.sendall(frame(3, offer, k=b"\x02" * 32))
assert closed(s), "a frame under the wrong key kept the connection"
# a well-signed offer with somebody else's challenge: refused with why
s = broker()
s.sendall(frame(3, offer))
ans = recv_frame(s)
assert ans is not None and ans[0] == 4, "no answer to the replayed offer"
assert b"challenge" in ans[1] and ans[1][:2] == b"\x08\x00", ans
print("offer refused:", ans[1][4:].decode(errors="replace"))
PY
    fail "hostile client: $(cat /tmp/hostile.$$)"
cat /tmp/hostile.$$
rm -f /tmp/hostile.$$

grown() {
	[ "$(counter "$1")" -gt "$2" ]
}
wait_for 3 grown dropped_bad_mac "$before_mac" ||
    fail "the wrong key was not counted: $(lab_exec 1 mosctl stats)"
wait_for 3 grown dropped_oversized "$before_big" ||
    fail "the garbage was not counted: $(lab_exec 1 mosctl stats)"
[ "$(counter offers_refused)" -ge 1 ] ||
    fail "the replayed offer was not counted: $(lab_exec 1 mosctl stats)"
[ "$(counter offers_accepted)" -eq 0 ] || fail "node 1 accepted an offer"
grep -q "offer of 4242@3 refused: offer does not answer our challenge" \
    "$(lab_dir)/node1/mosd.log" || fail "the refusal is not in the log"
[ -z "$(lab_exec 1 ps -eo uid= | awk '$1 >= 60000')" ] ||
    fail "node 1 runs a guest"

# The broker still works: a walker from node 2 moves to node 1.
sees1() {
	lab_exec 2 mosctl status | awk '$1 == 1 && $3 == "up"' | grep -q .
}
wait_for 10 sees1 || fail "node 2 does not see node 1 up"
lab_exec 2 mkfifo /tmp/go || fail "mkfifo"
"$MOSLAB" exec 2 sh -c "mosrun -L -r 1 $P/walker /tmp/go wait \
    > /tmp/walk 2>&1" &
on1() {
	ps_list where 2 | grep -qx 1
}
wait_for 10 on1 || fail "no move after the attacks: $(lab_exec 2 mosps;
    lab_exec 2 cat /tmp/walk)"
[ "$(counter offers_accepted)" -eq 1 ] || fail "offers_accepted is not 1"

"$MOSLAB" down || fail "moslab down"
check_clean
echo PASS
