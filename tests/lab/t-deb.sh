#!/bin/sh
# The Debian package, installed as on a node. dpkg -i runs in a scratch
# copy of this machine's own system (an overlay of / whose changes go to a
# tmpfs, in a private mount namespace) booted with systemd in a container
# (systemd-nspawn, private network, its own cgroups), so that the
# maintainer scripts take the paths they take on a real node, systemd
# included: the key made at configure, the unit neither enabled nor
# started, restarted by an upgrade, stopped by removal, forgotten by purge.
# In between, the unit's mosd (node 1) and a second mosd (node 2) form a
# cluster on the container's loopback, and a guest moved to node 1 lives
# through a restart of the unit and an upgrade of the package. The Slurm
# plugin's package, osmosis-slurm, is installed beside it: Debian's Slurm
# loads the plugin through its plugstack.conf.d (srun and sbatch know
# --migratable), osmosis cannot be removed from under it, and once
# removed Slurm works as before.
#
# The packages are $OSM_DEB and $OSM_DEB_SLURM (make check builds them
# with make deb), else this test runs make deb. Nothing reaches the host: on exit the container
# stops and its cgroups, mounts and files go.
. "$(dirname "$0")/lib.sh"
TOP=$(cd "$LAB_TESTS/../.." && pwd)

# --- inside the private mount namespace: the scratch root, then systemd --
if [ "${1:-}" = --container ]; then
	s=$2
	mount -t tmpfs -o mode=0755 osm-deb "$s/t" &&
	    mkdir "$s/t/upper" "$s/t/work" "$s/t/root" &&
	    mount -t overlay overlay \
	    -o "lowerdir=/,upperdir=$s/t/upper,workdir=$s/t/work" \
	    "$s/t/root" || exit 1
	r=$s/t/root
	# This build host's own policy-rc.d forbids starting services (a
	# container image's); a node has none. man-db's index rebuild takes
	# seconds and is nothing of ours.
	rm -f "$r/usr/sbin/policy-rc.d" "$r/var/lib/man-db/auto-update"
	printf '[Unit]\nDescription=osmosis package test\n' \
	    > "$r/etc/systemd/system/osmtest.target"
	cp "$s/osmosis.deb" "$s/osmosis-up.deb" "$s/osmosis-slurm.deb" \
	    "$r/root/" || exit 1
	# What nspawn keeps for itself under /run (locks, propagation) stays
	# in this namespace.
	mount -t tmpfs -o mode=0755 osm-deb-run /run || exit 1
	# Without nspawn's own system-call filter, which a node does not have
	# (it refuses pidfd_getfd, which a guest agent needs).
	SYSTEMD_SECCOMP=0 exec systemd-nspawn --quiet --register=no \
	    --keep-unit --private-network --hostname=osmdeb -D "$r" -b -- \
	    systemd.unit=osmtest.target
fi

command -v systemd-nspawn > /dev/null ||
    fail "systemd-nspawn is missing (make deps installs systemd-container)"
deb=${OSM_DEB:-}
sdeb=${OSM_DEB_SLURM:-}
if [ -z "$deb" ] || [ -z "$sdeb" ]; then
	make -C "$TOP" deb > /dev/null || fail "make deb failed"
	deb=$(ls "$TOP"/build/deb/osmosis_*_amd64.deb | head -n 1)
	sdeb=$(ls "$TOP"/build/deb/osmosis-slurm_*_amd64.deb | head -n 1)
fi
[ -f "$deb" ] || fail "no package at $deb"
[ -f "$sdeb" ] || fail "no package at $sdeb"
version=$(dpkg-deb -f "$deb" Version)
want=$(sed -n 's/^.define OSM_VERSION[[:space:]]*"\(.*\)"$/\1/p' \
    "$TOP/lib/osm.h")
[ "$version" = "$want" ] ||
    fail "the package is version $version, lib/osm.h says $want"

s=$(mktemp -d /tmp/osm-deb.XXXXXX) || fail mktemp
chmod 755 "$s"
mkdir "$s/t"
# The container's cgroups: a subtree of its own in each hierarchy systemd
# uses (cgroup v2 alone, or v1's name=systemd and v2 beside it).
if [ -e /sys/fs/cgroup/cgroup.controllers ]; then
	cgs=/sys/fs/cgroup/osm-deb-$MOSLAB_NAME
else
	cgs=/sys/fs/cgroup/systemd/osm-deb-$MOSLAB_NAME
	[ ! -d /sys/fs/cgroup/unified ] ||
	    cgs="$cgs /sys/fs/cgroup/unified/osm-deb-$MOSLAB_NAME"
fi
nspawn=
leader=

# On exit, also after a failure or a signal: stop the container and take
# its cgroups and files away, then show its journal if the test failed.
# (Output that can no longer be written must not cut this short.)
deb_cleanup() {
	_st=$?
	trap - EXIT
	trap '' PIPE
	if [ "$_st" -ne 0 ] && [ -n "$leader" ]; then
		cx journalctl --no-pager -n 30 -u mosd -u mosd2 -u work \
		    > "$s/journal" 2>&1
	fi
	if [ -n "$nspawn" ] && kill -TERM "$nspawn" 2>/dev/null; then
		wait_for 20 sh -c "! kill -0 $nspawn" || {
			kill -KILL "$nspawn" 2>/dev/null
			wait_for 10 sh -c "! kill -0 $nspawn"
		}
	fi
	wait 2>/dev/null
	for _c in $cgs; do
		[ -d "$_c" ] || continue
		find "$_c" -depth -type d -exec rmdir {} \;
		[ ! -d "$_c" ] || { echo "FAIL: cgroup left: $_c" >&2; _st=1; }
	done
	if grep -q " $s/" /proc/self/mountinfo; then
		echo "FAIL: mounts left under $s" >&2
		_st=1
	fi
	if [ "$_st" -ne 0 ]; then
		echo "--- the container's journal (mosd, mosd2, work)"
		cat "$s/journal" 2>/dev/null
		echo "--- systemd-nspawn"
		tail -n 20 "$s/nspawn.log"
	fi
	rm -rf "$s"
	exit "$_st"
}
trap deb_cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# A command in the container, with a node's environment rather than ours.
cx() {
	nsenter -t "$leader" -a env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin \
	    LANG=C.UTF-8 HOME=/root DEBIAN_FRONTEND=noninteractive "$@"
}
# The container's file PATH, from here.
cpath() {
	echo "/proc/$leader/root$1"
}

# --- the package as built -------------------------------------------------

dpkg-deb -c "$deb" | awk '{ print $1, $2, $6 }' > "$s/contents"
dpkg-deb --ctrl-tarfile "$deb" | tar -xO ./conffiles > "$s/conffiles"
for p in "$OSM_BIN"/*; do
	n=${p##*/}
	case $n in mosd|mosd-guest) d=usr/sbin ;; *) d=usr/bin ;; esac
	grep -qx -- "-rwxr-xr-x root/root ./$d/$n" "$s/contents" ||
	    fail "$n is not in the package as ./$d/$n, root's, mode 755"
done
for m in "$TOP"/docs/man/*.[158]; do
	n=${m##*/}
	# The Slurm plugin's page is osmosis-slurm's.
	[ "$n" != osmosis-slurm.8 ] || continue
	f=./usr/share/man/man${n##*.}/$n.gz
	grep -q " $f\$" "$s/contents" || fail "the package lacks $f"
	dpkg-deb --fsys-tarfile "$deb" | tar -xO "$f" | zcat | head -n 1 |
	    grep -q "\"osmosis $version\"" ||
	    fail "$f does not say osmosis $version in its .TH line"
done
! grep -E 'cluster\.key|web\.token' "$s/contents" ||
    fail "the package carries a secret"
printf '/etc/osmosis/cluster.conf\n/etc/osmosis/policy.conf\n' |
    cmp -s - "$s/conffiles" ||
    fail "conffiles are not cluster.conf and policy.conf: $(cat "$s/conffiles")"

# Lintian, as a user (it warns when run by root); its errors fail.
cp "$deb" "$s/lint.deb" && cp "$sdeb" "$s/lint-slurm.deb" &&
    chmod 644 "$s/lint.deb" "$s/lint-slurm.deb"
lint=$(HOME=$s setpriv --reuid=nobody --regid=nogroup --clear-groups \
    lintian --fail-on error --display-info "$s/lint.deb" \
    "$s/lint-slurm.deb" 2>&1) || fail "lintian: $lint"
[ -z "$lint" ] || echo "lintian says (no errors): $lint"

# osmosis-slurm as built: the plugin, its programs, its man page, its
# plugstack line the one conffile; for this very osmosis and Slurm 22.05.
[ "$(dpkg-deb -f "$sdeb" Version)" = "$version" ] ||
    fail "osmosis-slurm is version $(dpkg-deb -f "$sdeb" Version)"
dpkg-deb -c "$sdeb" | awk '{ print $1, $2, $6 }' > "$s/scontents"
for f in "-rw-r--r-- ./usr/lib/osmosis/spank_osmosis.so" \
    "-rwxr-xr-x ./usr/libexec/osmosis/slurm-task" \
    "-rwxr-xr-x ./usr/libexec/osmosis/slurm-requeue" \
    "-rwxr-xr-x ./usr/libexec/osmosis/slurm-prolog" \
    "-rwxr-xr-x ./usr/libexec/osmosis/slurm-epilog" \
    "-rwxr-xr-x ./usr/libexec/osmosis/slurm-healthcheck" \
    "-rw-r--r-- ./etc/slurm/plugstack.conf.d/osmosis.conf" \
    "-rw-r--r-- ./usr/share/man/man8/osmosis-slurm.8.gz"; do
	grep -qx -- "${f%% *} root/root ${f#* }" "$s/scontents" ||
	    fail "osmosis-slurm lacks ${f#* }, root's, mode ${f%% *}"
done
! grep -q "osmosis-slurm\|spank\|/slurm-" "$s/contents" ||
    fail "the osmosis package carries Slurm's files"
dpkg-deb --fsys-tarfile "$sdeb" |
    tar -xO ./usr/share/man/man8/osmosis-slurm.8.gz | zcat | head -n 1 |
    grep -q "\"osmosis $version\"" ||
    fail "osmosis-slurm.8 does not say osmosis $version"
dpkg-deb --ctrl-tarfile "$sdeb" | tar -xO ./conffiles |
    grep -qx /etc/slurm/plugstack.conf.d/osmosis.conf ||
    fail "the plugstack line is no conffile"
dpkg-deb -f "$sdeb" Depends | grep -q "osmosis (= $version)" ||
    fail "osmosis-slurm depends on $(dpkg-deb -f "$sdeb" Depends)"
cp "$sdeb" "$s/osmosis-slurm.deb"

# The same package as version +t1, for an upgrade.
dpkg-deb -R "$deb" "$s/up" &&
    sed -i "s/^Version: .*/Version: $version+t1/" "$s/up/DEBIAN/control" &&
    dpkg-deb --root-owner-group -b "$s/up" "$s/osmosis-up.deb" > /dev/null ||
    fail "could not make the upgrade package"
cp "$deb" "$s/osmosis.deb"

# --- the container ---------------------------------------------------------

for c in $cgs; do
	mkdir "$c" || fail "cannot make cgroup $c"
done
sh -c 'for c in $1; do echo $$ > "$c/cgroup.procs" || exit 1; done
	exec unshare --mount --propagation private sh "$2" --container "$3"' \
    - "$cgs" "$LAB_TESTS/t-deb.sh" "$s" > "$s/nspawn.log" 2>&1 < /dev/null &
nspawn=$!
_leader() {
	leader=$(cat "/proc/$nspawn/task/$nspawn/children" 2>/dev/null)
	leader=${leader%% *}
	[ -n "$leader" ] && [ "$(cat "/proc/$leader/comm")" = systemd ]
}
wait_for 30 _leader || fail "the container's systemd did not start"
_leader
_booted() {
	case $(cx systemctl is-system-running 2>/dev/null) in
	running|degraded) return 0 ;;
	esac
	return 1
}
wait_for 60 _booted ||
    fail "the container did not boot: $(cx systemctl is-system-running)"

# --- install -------------------------------------------------------------

cx dpkg -i /root/osmosis.deb > "$s/install.log" 2>&1 < /dev/null ||
    fail "dpkg -i: $(cat "$s/install.log")"
[ "$(cx dpkg-query -W -f='${Status} ${Version}' osmosis)" = \
    "install ok installed $version" ] || fail "osmosis is not installed"
# The key: made by the postinst, root's, 0600, 32 bytes in hex, no
# package's file.
[ "$(cx stat -c '%a %U %G' /etc/osmosis/cluster.key)" = "600 root root" ] ||
    fail "cluster.key: $(cx stat -c '%a %U %G' /etc/osmosis/cluster.key)"
grep -qxE '[0-9a-f]{64}' "$(cpath /etc/osmosis/cluster.key)" ||
    fail "cluster.key does not hold a key"
! cx dpkg -S /etc/osmosis/cluster.key > /dev/null 2>&1 ||
    fail "cluster.key belongs to a package"
cx dpkg-query -W -f='${Conffiles}\n' osmosis > "$s/conf.list"
for f in cluster.conf policy.conf; do
	grep -q "^ /etc/osmosis/$f [0-9a-f]\{32\}\$" "$s/conf.list" ||
	    fail "$f is not a conffile: $(cat "$s/conf.list")"
done
# The unit: installed, sound, neither enabled nor started (the node is
# not configured yet).
cx systemd-analyze verify mosd.service > "$s/verify.log" 2>&1 ||
    fail "systemd-analyze verify mosd.service: $(cat "$s/verify.log")"
[ "$(cx systemctl is-enabled mosd)" = disabled ] ||
    fail "mosd.service is $(cx systemctl is-enabled mosd) on installation"
! cx systemctl -q is-active mosd || fail "mosd started unconfigured"
# Every program runs, linked against the node's libraries; the man pages
# are where man looks.
for p in mosd moscr mosctl mosgossip-sim moslab mosmigrate mosmon mosps \
    mosrun; do
	cx "$p" --help > /dev/null 2>&1 || fail "installed $p --help failed"
done
expect 2 "usage: mosd-guest" cx mosd-guest
cx env MANWIDTH=80 man 8 mosd-guest 2>&1 | grep -q "osmosis $version" ||
    fail "man 8 mosd-guest does not show osmosis $version"

# --- osmosis-slurm: installed, loaded by Debian's Slurm, removed --------

# A node's slurm.conf; plugstack.conf is Debian's own, which includes
# plugstack.conf.d/*.conf.
printf 'ClusterName=osmdeb\nSlurmctldHost=localhost\nNodeName=localhost
PartitionName=p Nodes=ALL\n' > "$(cpath /etc/slurm/slurm.conf)"
cx srun --help > "$s/srun0" 2>&1 || fail "srun --help: $(cat "$s/srun0")"
! grep -q migratable "$s/srun0" || fail "srun knows --migratable already"
cx dpkg -i /root/osmosis-slurm.deb > "$s/sinstall.log" 2>&1 < /dev/null ||
    fail "dpkg -i osmosis-slurm: $(cat "$s/sinstall.log")"
[ "$(cx dpkg-query -W -f='${Status} ${Version}' osmosis-slurm)" = \
    "install ok installed $version" ] || fail "osmosis-slurm is not installed"
for c in srun sbatch salloc; do
	cx "$c" --help > "$s/$c" 2>&1 || fail "$c --help: $(cat "$s/$c")"
	grep -q -- '--migratable-signal=SIGNAL' "$s/$c" ||
	    fail "$c does not load the plugin: $(cat "$s/$c")"
	! grep -q "^$c: error" "$s/$c" || fail "$c --help: $(grep error "$s/$c")"
done
expect 1 "SLURM_JOB_NODELIST is not set" cx /usr/libexec/osmosis/slurm-task -l
cx /usr/libexec/osmosis/slurm-task --help | grep -q "osmosis-slurm(8)" ||
    fail "slurm-task --help"
cx env MANWIDTH=80 man 8 osmosis-slurm 2>&1 | grep -q "osmosis $version" ||
    fail "man 8 osmosis-slurm does not show osmosis $version"
! cx dpkg -r osmosis > "$s/rm-dep.log" 2>&1 < /dev/null ||
    fail "osmosis was removed from under osmosis-slurm"
grep -q "osmosis-slurm depends on osmosis" "$s/rm-dep.log" ||
    fail "dpkg -r osmosis: $(cat "$s/rm-dep.log")"
# Removed: its files go, its line stays (a conffile) and Slurm works on,
# without the option; purged: the line goes too.
cx dpkg -r osmosis-slurm > "$s/srm.log" 2>&1 < /dev/null ||
    fail "dpkg -r osmosis-slurm: $(cat "$s/srm.log")"
for f in /usr/lib/osmosis/spank_osmosis.so /usr/libexec/osmosis/slurm-task \
    /usr/share/man/man8/osmosis-slurm.8.gz; do
	[ ! -e "$(cpath "$f")" ] || fail "removal left $f"
done
[ -f "$(cpath /etc/slurm/plugstack.conf.d/osmosis.conf)" ] ||
    fail "removal took the plugstack line"
cx srun --help > "$s/srun1" 2>&1 ||
    fail "srun fails once osmosis-slurm is removed: $(cat "$s/srun1")"
! grep -q migratable "$s/srun1" || fail "srun knows --migratable still"
cx dpkg -P osmosis-slurm > "$s/spurge.log" 2>&1 < /dev/null ||
    fail "dpkg -P osmosis-slurm: $(cat "$s/spurge.log")"
[ ! -e "$(cpath /etc/slurm/plugstack.conf.d/osmosis.conf)" ] ||
    fail "purge left the plugstack line"
[ -f "$(cpath /etc/slurm/plugstack.conf)" ] || fail "purge took Slurm's file"
rm "$(cpath /etc/slurm/slurm.conf)"

# --- configured: a two-node cluster on the container's loopback ---------

printf 'node 1 127.0.0.1\nnode 2 127.0.0.2\nself 1\n' \
    > "$(cpath /etc/osmosis/cluster.conf)"
printf 'node 1 127.0.0.1\nnode 2 127.0.0.2\nself 2\nkey cluster.key
socket /run/osmosis/node2.sock\n' > "$(cpath /etc/osmosis/node2.conf)"
cx systemctl enable --now mosd > "$s/enable.log" 2>&1 ||
    fail "systemctl enable --now mosd: $(cat "$s/enable.log")"
cx systemd-run -q --unit=mosd2 -p KillMode=process /usr/sbin/mosd -d -f \
    /etc/osmosis/node2.conf || fail "cannot start node 2's mosd"
# Each sees the other: node 2 has the process that goes to node 1.
_both() {
	cx mosctl status --json | pyjson "d['self'] == 1 and d['active'] == 2" &&
	    cx mosctl -S /run/osmosis/node2.sock status --json |
	    pyjson "d['self'] == 2 and d['active'] == 2"
}
wait_for 20 _both || fail "the two mosds do not see 2 nodes up: \
$(cx mosctl status 2>&1; cx mosctl -S /run/osmosis/node2.sock status 2>&1)"
cx mosctl status | grep -qx 'this node: 1, flags: none' ||
    fail "mosctl status: $(cx mosctl status 2>&1)"
# Under the unit, mosd keeps only what it means to (mosd(8)).
main=$(cx systemctl show -p MainPID --value mosd)
sysres=$((0x$(awk '/^CapBnd:/ { print $2 }' /proc/self/status) >> 24 & 1))
if [ "$sysres" = 1 ]; then kept=00000000010001c0; else kept=00000000000001c0; fi
grep -qx "CapBnd:	$kept" "$(cpath "/proc/$main/status")" ||
    fail "mosd's bounding set: $(grep Cap "$(cpath "/proc/$main/status")")"

# A process homed on node 2 runs on node 1, a guest of the unit's mosd,
# from a shell holding an extra descriptor; it waits for /root/go.
cat > "$(cpath /root/work.py)" <<'EOF'
import os, time
end = time.time() + 120
while not os.path.exists('/root/go') and time.time() < end:
    time.sleep(0.05)
print('sum', sum(i * i for i in range(10 ** 6)))
EOF
# (As a transient unit of the container: a process entered with nsenter
# would be its child, and a stopped process stops nsenter for good.)
cx systemd-run -q --unit=work -p StandardOutput=file:/root/out sh -c '
	exec 7< /dev/null
	mosrun -S /run/osmosis/node2.sock -r 1 -L python3 /root/work.py
	echo "exit $?"' || fail "cannot start the work unit"
_guest() {
	guest=$(cx ps -eo pid,uid,comm |
	    awk '$3 == "python3" && $2 >= 60000 { print $1 }')
	[ -n "$guest" ] &&
	    grep -q 'mosd\.service' "$(cpath "/proc/$guest/cgroup")"
}
wait_for 20 _guest || fail "no guest in mosd.service: $(cat "$(cpath \
/root/out)"; cx mosps -S /run/osmosis/node2.sock -a)"
cx mosps -S /run/osmosis/node2.sock -a --json |
    pyjson "[p for p in d['procs'] if p['where'] == 1]" > /dev/null ||
    fail "node 2 does not show its process on node 1"
# The same process later: its pid and its start time.
gstart=$(cut -d ' ' -f 22 "$(cpath "/proc/$guest/stat")")
_alive() {
	[ "$(cut -d ' ' -f 22 "$(cpath "/proc/$guest/stat")" 2>/dev/null)" = \
	    "$gstart" ]
}
_guests() {
	cx mosctl status --json |
	    pyjson "[n for n in d['nodes'] if n['node'] == 1][0]['guests'] == $1"
}

# A restart of the unit stops mosd alone: the guest goes on, and presents
# itself to the new mosd.
cx systemctl restart mosd || fail "systemctl restart mosd"
main2=$(cx systemctl show -p MainPID --value mosd)
[ "$main2" != "$main" ] || fail "mosd was not restarted"
_alive || fail "systemctl restart mosd killed the guest"
wait_for 20 _guests 1 || fail "the new mosd does not count the guest"

# --- upgrade: the key and our cluster.conf stay; mosd is restarted -----

key=$(sha256sum < "$(cpath /etc/osmosis/cluster.key)")
conf=$(sha256sum < "$(cpath /etc/osmosis/cluster.conf)")
cx dpkg -i /root/osmosis-up.deb > "$s/upgrade.log" 2>&1 < /dev/null ||
    fail "upgrade: $(cat "$s/upgrade.log")"
[ "$(cx dpkg-query -W -f='${Version}' osmosis)" = "$version+t1" ] ||
    fail "not upgraded"
[ "$(sha256sum < "$(cpath /etc/osmosis/cluster.key)")" = "$key" ] ||
    fail "the upgrade changed the cluster key"
[ "$(sha256sum < "$(cpath /etc/osmosis/cluster.conf)")" = "$conf" ] ||
    fail "the upgrade changed our cluster.conf"
main3=$(cx systemctl show -p MainPID --value mosd)
[ "$main3" != "$main2" ] && [ "$main3" != 0 ] ||
    fail "the upgrade did not restart mosd: $(cat "$s/upgrade.log")"
_alive || fail "the upgrade killed the guest"
wait_for 20 _guests 1 || fail "mosd does not count the guest after the upgrade"

# The guest ends well, at node 1: the output it was started for, no word
# of running at home.
touch "$(cpath /root/go)"
_done() {
	grep -q '^exit' "$(cpath /root/out)"
}
wait_for 30 _done || fail "the guest did not end: $(cat "$(cpath /root/out)")"
printf 'sum 333332833333500000\nexit 0\n' | cmp -s - "$(cpath /root/out)" ||
    fail "the guest's output: $(cat "$(cpath /root/out)")"

# --- remove: mosd stopped, programs gone, configuration kept ------------

cx systemctl stop mosd2
cx dpkg -r osmosis > "$s/remove.log" 2>&1 < /dev/null ||
    fail "dpkg -r: $(cat "$s/remove.log")"
[ "$(cx dpkg-query -W -f='${Status}' osmosis)" = \
    "deinstall ok config-files" ] || fail "not removed to config-files"
! cx systemctl -q is-active mosd || fail "removal left mosd running"
for f in /usr/sbin/mosd /usr/sbin/mosd-guest /usr/bin/mosrun \
    /lib/systemd/system/mosd.service /usr/share/man/man8/mosd.8.gz; do
	[ ! -e "$(cpath "$f")" ] || fail "removal left $f"
done
[ "$(sha256sum < "$(cpath /etc/osmosis/cluster.conf)")" = "$conf" ] ||
    fail "removal did not keep our cluster.conf"
[ -f "$(cpath /etc/osmosis/policy.conf)" ] || fail "removal took policy.conf"
[ "$(sha256sum < "$(cpath /etc/osmosis/cluster.key)")" = "$key" ] ||
    fail "removal did not keep the key"

# --- purge: the key and conffiles go, the admin's own file stays --------

cx dpkg -P osmosis > "$s/purge.log" 2>&1 < /dev/null ||
    fail "dpkg -P: $(cat "$s/purge.log")"
! cx dpkg-query -W -f='${Status}' osmosis 2>/dev/null |
    grep -q 'installed\|config-files' || fail "osmosis is not purged"
for f in cluster.key cluster.conf policy.conf; do
	[ ! -e "$(cpath /etc/osmosis/$f)" ] || fail "purge left /etc/osmosis/$f"
done
[ -f "$(cpath /etc/osmosis/node2.conf)" ] || fail "purge took the admin's file"
for f in /etc/systemd/system/multi-user.target.wants/mosd.service \
    /var/lib/systemd/deb-systemd-helper-enabled/mosd.service.dsh-also; do
	[ ! -e "$(cpath "$f")" ] && [ ! -L "$(cpath "$f")" ] ||
	    fail "purge left $f"
done
rm "$(cpath /etc/osmosis/node2.conf)"
cx dpkg -i /root/osmosis.deb > /dev/null 2>&1 < /dev/null &&
    cx dpkg -P osmosis > /dev/null 2>&1 < /dev/null ||
    fail "install and purge again"
[ ! -e "$(cpath /etc/osmosis)" ] || fail "purge left /etc/osmosis"
echo "ok: osmosis $version installed, configured, upgraded, removed, purged;" \
    "osmosis-slurm installed, loaded by Slurm, removed, purged"
