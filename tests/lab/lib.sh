# Helpers for lab tests, sourced by every tests/lab/t-*.sh:
#
#	lab_up N [ARGS]		moslab up under a fresh lab name; down on exit
#	lab_exec K CMD...	run CMD inside node K
#	wait_for SECONDS CMD...	poll until CMD succeeds; fails after SECONDS
#	fail MSG		print MSG and exit 1
#	expect STATUS TEXT CMD...	CMD must exit STATUS and say TEXT
#	check_clean		assert that nothing of the lab is left
#	lab_dir			print the lab's state directory
#	lab_procs		print the pids of the lab's live processes
#	node_cpu K		CPU time node K's cgroup has used, in ns
#	guest_pid COMMAND K	the pid on node K of the guest COMMAND runs as
#	mosd_net K		the pid of node K's mosd's network process (the
#				one that serves), a child of its mosd.pid
#
# What node K's (by default node 1's) mosps -a says, through mosps -o:
#	ps_list FIELDS [K]	FIELDS (pid,where,...) of each process, a line
#				each, in the order mosps lists them
#	ps_field PID FIELD [K]	FIELD of process PID; fails if not listed
#	where PID [K]		the number of the node PID runs on (K's own
#				number when it runs there)
#	pid_of COMMAND [K]	the pids of the processes named COMMAND
#	nprocs N [K]		N processes are listed
#	away			a process homed on node 1 runs on node 2
#
# JSON (mosctl status --json and the like, read with python3):
#	pyjson EXPR		evaluate EXPR over the document on standard
#				input (as d): print it, or fail if it is False,
#				None or an empty list (a test or a search)
#	node_field K NODE FIELD	FIELD of NODE in node K's mosctl status --json
#	counter NAME [K]	mosd's counter NAME on node K (mosctl stats)
#
# $OSM_BIN is the bin/ under test (tests/lab/run exports it). Until the
# tree has a bin/mosd, nodes run tests/lab/fake-mosd instead.

: "${OSM_BIN:=$(cd "$(dirname "$0")/../.." && pwd)/bin}"
export OSM_BIN
MOSLAB=$OSM_BIN/moslab
LAB_TESTS=$(cd "$(dirname "$0")" && pwd)
if [ -z "${MOSLAB_MOSD:-}" ] && [ ! -x "$OSM_BIN/mosd" ]; then
	MOSLAB_MOSD=$LAB_TESTS/fake-mosd
	export MOSLAB_MOSD
fi
# The system's programs: the tests mean Debian's python3, perl and gzip,
# not a shim of the engineer's shell (pyenv's python3 is a bash script
# that forks before it runs python, so it comes home at once).
PATH=/usr/sbin:/usr/bin:/sbin:/bin
export PATH
# Lab names have at most 6 characters. The test's is one no lab holds: a
# run killed before its trap (a reboot, a lost CI machine) leaves its lab's
# name taken, and a test must neither fail on it nor take it down.
_lab_taken() {
	[ -e "${MOSLAB_DIR:-/var/lib/osmosis-lab}/$1" ] ||
	    ls -d /sys/fs/cgroup/osmosis-"$1" /sys/fs/cgroup/*/osmosis-"$1" \
	    > /dev/null 2>&1 ||
	    ip netns list 2>/dev/null | grep -q "^$1-n"
}
# OSM_LAB_PREFIX (t) begins it: an engineer's own, to tell their labs apart.
_p=${OSM_LAB_PREFIX:-t}
case $_p in
?) _m=100000 ;;
??) _m=10000 ;;
???) _m=1000 ;;
*) echo "OSM_LAB_PREFIX: '$_p' is over 3 characters" >&2; exit 2 ;;
esac
_n=$(($$ % _m))
while _lab_taken "$_p$_n"; do
	_n=$(((_n + 1) % _m))
done
MOSLAB_NAME=$_p$_n
export MOSLAB_NAME

# The lab's state directory.
lab_dir() {
	echo "${MOSLAB_DIR:-/var/lib/osmosis-lab}/$MOSLAB_NAME"
}

fail() {
	echo "FAIL: $*" >&2
	exit 1
}

expect() {
	_want=$1
	_text=$2
	shift 2
	_out=$("$@" 2>&1)
	_got=$?
	[ "$_got" -eq "$_want" ] ||
	    fail "'$*' exited $_got, expected $_want: $_out"
	case $_out in
	*"$_text"*) ;;
	*) fail "'$*' said '$_out', expected '$_text'" ;;
	esac
}

# On exit, also after a failure or a signal: show the nodes' mosd logs if
# the test failed, then take the lab down.
lab_cleanup() {
	_st=$?
	trap - EXIT
	# Under make asan a daemon's sanitizer report lands in its log only.
	if grep -l -E 'Sanitizer|runtime error:' "$(lab_dir)"/node*/mosd.log \
	    2>/dev/null; then
		echo "FAIL: a sanitizer reported in a mosd log above" >&2
		_st=1
	fi
	# A call mosd's network process makes that its filter does not let
	# through is a bug of the filter (mosd/sandbox.c), whatever the test.
	if grep -H 'sandbox: the seccomp filter refused' \
	    "$(lab_dir)"/node*/mosd.log 2>/dev/null; then
		echo "FAIL: mosd's seccomp filter refused a call (above)" >&2
		_st=1
	fi
	if [ "$_st" -ne 0 ]; then
		for _log in "$(lab_dir)"/node*/mosd.log; do
			[ -s "$_log" ] || continue
			echo "--- $_log"
			tail -n 20 "$_log"
		done
	fi
	if ! "$MOSLAB" down; then
		echo "FAIL: moslab down failed" >&2
		_st=1
	fi
	exit "$_st"
}

lab_up() {
	trap lab_cleanup EXIT
	trap 'exit 130' INT
	trap 'exit 143' TERM
	"$MOSLAB" up "$@" || fail "moslab up $* failed"
}

lab_exec() {
	"$MOSLAB" exec "$@"
}

_ms() {
	echo $(($(date +%s%N) / 1000000))
}

wait_for() {
	_end=$(($(_ms) + $1 * 1000))
	shift
	until "$@" > /dev/null 2>&1; do
		[ "$(_ms)" -lt "$_end" ] || return 1
		sleep 0.05
	done
}

# Live processes in the lab's cgroups (zombies the host's init has not
# reaped yet hold nothing).
lab_procs() {
	for _f in /proc/[0-9]*/cgroup; do
		grep -q "/osmosis-$MOSLAB_NAME/" "$_f" 2>/dev/null || continue
		_p=${_f#/proc/}
		_p=${_p%/cgroup}
		_s=$(sed 's/.*) \(.\).*/\1/' "/proc/$_p/stat" 2>/dev/null)
		[ -n "$_s" ] && [ "$_s" != Z ] && echo "$_p"
	done
}

check_clean() {
	_n=$MOSLAB_NAME
	_left=$(ip netns list | awk '{print $1}' | grep -E "^$_n-n[0-9]+$")
	[ -z "$_left" ] || fail "network namespaces left:" $_left
	_left=$(ls /sys/class/net | grep -E "^$_n-(br|v[0-9]+)$")
	[ -z "$_left" ] || fail "links left:" $_left
	for _d in /sys/fs/cgroup/osmosis-$_n /sys/fs/cgroup/*/osmosis-$_n; do
		[ ! -e "$_d" ] || fail "cgroup left: $_d"
	done
	_left=$(lab_procs)
	[ -z "$_left" ] || fail "processes left:" $_left
	[ ! -e "$(lab_dir)" ] || fail "state directory left: $(lab_dir)"
}

pyjson() {
	python3 -c '
import json, sys
d = json.load(sys.stdin)
v = eval("(" + sys.argv[1] + "\n)")
if v is False or v is None or v == []:
    sys.exit(1)
if v is not True:
    print(v)' "$1"
}

node_field() {
	lab_exec "$1" mosctl status --json |
	    pyjson "[n for n in d['nodes'] if n['node'] == $2][0]['$3']"
}

counter() {
	lab_exec "${2:-1}" mosctl stats --json | pyjson "d['counters']['$1']"
}

# Wait until node 1 sees N nodes up: wait_cluster N [SECONDS]. moslab up
# returns once every node sees every other one up; this is for a node
# started again, or a lab not every node of which runs mosd.
_cluster_up() {
	lab_exec 1 mosctl status --json 2>/dev/null | pyjson "d['active'] == $1"
}
wait_cluster() {
	wait_for "${2:-10}" _cluster_up "$1" ||
	    fail "node 1 does not see $1 nodes up"
}

ps_list() {
	lab_exec "${2:-1}" mosps -a -o "$1"
}

ps_field() {
	lab_exec "${3:-1}" mosps -a -p "$1" -o "$2"
}

where() {
	ps_field "$1" where "${2:-1}"
}

pid_of() {
	ps_list pid,command "${2:-1}" | sed -n "s/^\([0-9]*\) $1\$/\1/p"
}

# (mosd unreachable is not "no processes")
nprocs() {
	_out=$(ps_list pid "${2:-1}") || return 1
	[ "$(printf '%s' "$_out" | grep -c .)" -eq "$1" ]
}

away() {
	ps_list where | grep -qx 2
}

# CPU time node K's cgroup has used, in ns (cgroup v1 cpuacct, or v2).
node_cpu() {
	_d=$(ls -d /sys/fs/cgroup/cpuacct/osmosis-$MOSLAB_NAME/node$1 \
	    /sys/fs/cgroup/osmosis-$MOSLAB_NAME/node$1 2>/dev/null | head -1)
	if [ -e "$_d/cpuacct.usage" ]; then cat "$_d/cpuacct.usage"
	else echo $(($(sed -n 's/^usage_usec //p' "$_d/cpu.stat") * 1000)); fi
}

# ends: the guests node 2's log says ended; end_after N: the end line of
# the first to end after N had, waited for (the guest agent may write it
# after mosrun has its status; the line before it is another guest's)
ends() {
	grep -c "ended" "$(lab_dir)/node2/mosd.log"
}
end_after() {
	wait_for 10 eval '[ "$(ends)" -gt '"$1"' ]' || return 1
	grep "ended" "$(lab_dir)/node2/mosd.log" | sed -n "$(($1 + 1))p"
}

# The pid, on node K, of the running copy of a process named COMMAND (a
# guest runs under a guest uid, 60000 and up).
guest_pid() {
	lab_exec "$2" ps -eo pid,uid,comm | awk -v c="$1" \
	    '$3 == c && $2 >= 60000 { print $1 }'
}

mosd_net() {
	_p=$(cat "$(lab_dir)/node$1/mosd.pid")
	for _c in $(cat /proc/$_p/task/$_p/children); do
		[ "$(cat /proc/$_c/comm 2>/dev/null)" = mosd-net ] && echo "$_c"
	done
}
