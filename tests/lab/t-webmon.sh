#!/bin/sh
# The web monitor: node 1's mosd serves it on its own 127.0.0.1:8080
# (moslab up --web). The API returns the documents the tools print; every
# action is refused without the token (no token, a wrong one, a token file
# that is not root's 0600 one, a GET) and done with it; the connection
# limit per client holds. Headless Chromium inside node 1 loads the page
# and shows the lab's three nodes and a process moved to node 2; a
# screenshot is kept in build/webmon.png.
. "$(dirname "$0")/lib.sh"
P=${OSM_MOSRUN:-$OSM_BIN/../build/tests/mosrun}
TOP=$(cd "$LAB_TESTS/../.." && pwd)
URL=http://127.0.0.1:8080

lab_up 3 --cpus 1,0.5,0.5 --mem 1024,256,256 --web 8080
T=$(cat "$(lab_dir)/web.token")

# web K [CURL ARGS...] PATH: curl on node K's monitor; the body, then the
# HTTP status on a line of its own.
web() {
	_k=$1
	shift
	lab_exec "$_k" curl -s -m 10 -w '\n%{http_code}\n' "$@"
}
status_of() {	# the last line of web's output
	tail -n 1
}
body_of() {
	sed '$d'
}

# A walker, moved to node 2 by hand: the moved process the page must show.
lab_exec 1 mkfifo /tmp/go
"$MOSLAB" exec 1 mosrun -L "$P/walker" /tmp/go wait > /dev/null 2>&1 &
wait_for 10 nprocs 1 || fail "the walker is not in mosps"
w=$(ps_list pid)
lab_exec 1 mosmigrate "$w" 2 || fail "mosmigrate $w 2"
lab_exec 2 ps -eo user,comm | awk '$2 == "walker" && $1 >= 60000' |
    grep -q . || fail "no walker guest on node 2"

# --- the API: the same documents as the tools ---------------------------
D=$(lab_dir)
web 1 "$URL/api/v1/nodes" > "$D/nodes.out"
[ "$(status_of < "$D/nodes.out")" = 200 ] || fail "nodes: $(cat "$D/nodes.out")"
body_of < "$D/nodes.out" > "$D/nodes.json"
lab_exec 1 mosctl status --json > "$D/status.json"
web 1 "$URL/api/v1/procs" > "$D/procs.out"
[ "$(status_of < "$D/procs.out")" = 200 ] || fail "procs: $(cat "$D/procs.out")"
body_of < "$D/procs.out" > "$D/procs.json"
lab_exec 1 mosps -a --json > "$D/ps.json"
web 1 "$URL/api/v1/stats" > "$D/stats.out"
[ "$(status_of < "$D/stats.out")" = 200 ] || fail "stats: $(cat "$D/stats.out")"
body_of < "$D/stats.out" > "$D/stats.json"
lab_exec 1 mosctl stats --json > "$D/mstats.json"
python3 - "$D" "$w" <<'PY' || fail "the API and the tools disagree"
import json, sys
d, w = sys.argv[1], int(sys.argv[2])
load = lambda n: json.load(open(d + "/" + n))
web, cli = load("nodes.json"), load("status.json")
keys = lambda doc: [sorted(n) for n in doc["nodes"]]
assert sorted(web) == sorted(cli) and keys(web) == keys(cli), (web, cli)
same = lambda n: (n["node"], n["address"], n["state"], n["cpus"],
    n["mem_total_mib"], n["speed"])
assert [same(n) for n in web["nodes"]] == [same(n) for n in cli["nodes"]]
assert web["self"] == 1 and web["active"] == 3, web
web, cli = load("procs.json"), load("ps.json")
proc = lambda p: (p["pid"], p["user"], p["where"], p["state"], p["command"])
assert [proc(p) for p in web["procs"]] == [proc(p) for p in cli["procs"]]
assert [p["where"] for p in web["procs"] if p["pid"] == w] == [2], web
web, cli = load("stats.json"), load("mstats.json")
assert list(web["counters"]) == list(cli["counters"]), (web, cli)
assert web["counters"]["control_requests"] < cli["counters"]["control_requests"]
PY
out=$(web 1 "$URL/api/v1/nothing")
[ "$(echo "$out" | status_of)" = 404 ] || fail "no 404: $out"

# --- refused actions: nothing happens -----------------------------------
not_blocked() {
	lab_exec 1 mosctl status --json | pyjson "d['flags'] == []"
}
refused() {	# refused STATUS TEXT CURL-ARGS...
	_want=$1
	_text=$2
	shift 2
	_out=$(web 1 "$@")
	[ "$(echo "$_out" | status_of)" = "$_want" ] ||
	    fail "curl $*: not $_want: $_out"
	case $_out in *"$_text"*) ;; *) fail "curl $*: $_out" ;; esac
	not_blocked || fail "curl $* blocked the node"
}
refused 403 "needs the token" -X POST "$URL/api/v1/block"
refused 403 "wrong token" -X POST -H "Authorization: Bearer x$T" \
    "$URL/api/v1/block"
refused 403 "wrong token" -X POST -H "Authorization: Bearer ${T%?}" \
    "$URL/api/v1/block"
refused 405 "takes POST only" -H "Authorization: Bearer $T" \
    "$URL/api/v1/block"
lab_exec 1 curl -s -m 10 -o /dev/null -D - "$URL/api/v1/block" |
    grep -qi '^Allow: POST' || fail "a 405 without Allow: POST"
chmod 0640 "$D/web.token"
refused 403 "must be root's and mode 0600" -X POST \
    -H "Authorization: Bearer $T" "$URL/api/v1/block"
chmod 0600 "$D/web.token"
refused 400 "migrate needs" -X POST -H "Authorization: Bearer $T" \
    -d '{"pid": "one"}' "$URL/api/v1/migrate"
head -c 5000 /dev/zero | tr '\0' x > "$D/big"
refused 413 "at most 4096 bytes" -X POST -H "Authorization: Bearer $T" \
    --data-binary "@$D/big" "$URL/api/v1/migrate"
[ "$(where "$w")" = 2 ] || fail "a refused action moved the walker"

# --- actions with the token ---------------------------------------------
out=$(web 1 -X POST -H "Authorization: Bearer $T" "$URL/api/v1/block")
[ "$(echo "$out" | status_of)" = 200 ] || fail "block: $out"
[ "$(lab_exec 1 mosctl status --json | pyjson "d['flags']")" = "['block']" ] ||
    fail "block through the web did not block"
out=$(web 1 -X POST -H "Authorization: Bearer $T" "$URL/api/v1/noblock")
not_blocked || fail "noblock through the web: $out"
out=$(web 1 -X POST -H "Authorization: Bearer $T" "$URL/api/v1/migrate" \
    -d '{"pid": 999999, "node": 3}')
[ "$(echo "$out" | status_of)" = 409 ] || fail "no 409 for a stranger: $out"

# --- the page, in a real browser ----------------------------------------
if ! lab_exec 1 sh -c 'command -v chromium' > /dev/null; then
	echo "SKIP: the browser part: no chromium (Debian's chromium package)"
else
	browse() {	# browse CHROMIUM-ARGS...: chromium in node 1
		lab_exec 1 sh -c 'd=$(mktemp -d)
		    chromium --headless --no-sandbox --disable-gpu \
		        --disable-quic --no-first-run \
		        --disable-background-networking \
		        --disable-component-update --disable-sync \
		        --user-data-dir="$d" --virtual-time-budget=5000 "$@"
		    s=$?; rm -rf "$d"; exit $s' sh "$@"
	}
	browse --dump-dom "$URL/" > "$D/dom.html" 2> "$D/chromium.err" ||
	    fail "chromium: $(tail -5 "$D/chromium.err")"
	for k in 1 2 3; do
		grep -q "id=\"node-$k\" data-state=\"up\"" "$D/dom.html" ||
		    fail "the page does not show node $k up"
	done
	grep -q "id=\"proc-$w\" data-where=\"2\"" "$D/dom.html" ||
	    fail "the page does not show process $w on node 2"
	grep -q "3 of 3 nodes active" "$D/dom.html" ||
	    fail "the page has no summary"
	rm -f "$TOP/build/webmon.png"
	browse --hide-scrollbars --window-size=1000,700 \
	    --screenshot="$TOP/build/webmon.png" "$URL/" 2>> "$D/chromium.err"
	[ "$(head -c 4 "$TOP/build/webmon.png" | od -An -c | tr -d ' ')" = \
	    "211PNG" ] || fail "no screenshot in build/webmon.png"
fi

# migrate, expel (node 2's own monitor) and bring, each for real
out=$(web 1 -X POST -H "Authorization: Bearer $T" "$URL/api/v1/migrate" \
    -d "{\"pid\": $w, \"node\": 3}")
[ "$(echo "$out" | status_of)" = 200 ] || fail "migrate to 3: $out"
[ "$(where "$w")" = 3 ] || fail "the walker is at $(where "$w"), not 3"
lab_exec 3 ps -eo user,comm | awk '$2 == "walker" && $1 >= 60000' |
    grep -q . || fail "no walker guest on node 3"
out=$(web 3 -X POST -H "Authorization: Bearer $T" "$URL/api/v1/expel")
echo "$out" | body_of | pyjson "d['ok'] and d['count'] == 1" ||
    fail "expel on node 3: $out"
is_home() {
	[ "$(where "$w")" = 1 ]
}
wait_for 10 is_home || fail "expel: the walker is at $(where "$w")"
lab_exec 1 mosmigrate "$w" 2 || fail "mosmigrate $w 2, again"
out=$(web 1 -X POST -H "Authorization: Bearer $T" "$URL/api/v1/bring")
echo "$out" | body_of | pyjson "d['ok'] and d['count'] == 1" ||
    fail "bring: $out"
wait_for 10 is_home || fail "bring: the walker is at $(where "$w")"

# --- at most 8 connections from one address ------------------------------
lab_exec 1 python3 - <<'PY' || fail "the per-address limit does not hold"
import socket, time
held = []
for i in range(8):
    s = socket.create_connection(("127.0.0.1", 8080), timeout=5)
    held.append(s)
time.sleep(0.3)
extra = socket.create_connection(("127.0.0.1", 8080), timeout=5)
try:
    extra.sendall(b"GET /api/v1/stats HTTP/1.0\r\n\r\n")
    got = extra.recv(100)
except ConnectionResetError:
    got = b""
assert got == b"", "a ninth connection was served: %r" % got
for s in held + [extra]:
    s.close()
time.sleep(0.3)
ok = socket.create_connection(("127.0.0.1", 8080), timeout=5)
ok.sendall(b"GET /api/v1/stats HTTP/1.0\r\n\r\n")
got = ok.recv(100)
assert got.startswith(b"HTTP/1.1 200"), "not served again: %r" % got
PY

lab_exec 1 sh -c 'echo > /tmp/go'
"$MOSLAB" down || fail "moslab down"
check_clean
echo PASS
