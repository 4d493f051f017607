#!/usr/bin/env python3
"""What the tools of a node's users see while the node is loaded
(tests/lab/t-load.sh, bench/load), run inside the node as root.

    load.py sample STOP OUT   until the file STOP is there, every 100 ms,
                              each of: root's mosctl status, another
                              user's (uid 1001) mosctl status, the jobs'
                              owner's (uid 1000) mosps, each a program
                              started anew; and, from a process of uid
                              1001 that stays, one status request on the
                              control socket as mosctl makes it (mosd's
                              answer without a program's start); and
                              root's true(1) and sleep 0.001, started the
                              same way: what any program's start takes
                              then, and one that waits once as a tool
                              waits for mosd's answer (the floor, not
                              judged). How long
                              each took and whether it succeeded, a line
                              each in OUT
    load.py summary OUT [MS]  per probe: how many, median, 99th percentile
                              and highest time, how many failed, how many
                              within MS (100); exit 1 if one failed, one
                              probe was never made, fewer than 80% of a
                              probe's came within MS, or one took 10 MS
"""
import os
import socket
import struct
import subprocess
import sys
import time

SOCK = "/run/osmosis/mosd.sock"
STATUS = b"\x00\x00\x00\x04\x08\x02\x10\x01"  # CtlRequest v2, status
OK = b"\x08\x01"                              # CtlReply, ok true
USER = 1001
TOOLS = [
    ("root-status", ["mosctl", "status"], None),
    ("user-status", ["mosctl", "status"], USER),
    ("owner-ps", ["mosps"], 1000),
    ("floor-true", ["true"], None),
    ("floor-sleep", ["sleep", "0.001"], None),
]
PROBES = [name for name, _, _ in TOOLS] + ["user-request"]


def request():
    """One status request; 0 if answered ok. The connect blocks, as
    mosctl's does: a full backlog is waited out, not failed."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.connect(SOCK)
        s.settimeout(10)
        s.sendall(STATUS)
        buf = b""
        while len(buf) < 4 or len(buf) < 4 + struct.unpack(">I",
                                                           buf[:4])[0]:
            got = s.recv(65536)
            if not got:
                return 1
            buf += got
        return 0 if buf[4:6] == OK else 1


def tool(cmd, uid):
    kw = {}
    if uid is not None:
        kw = dict(user=uid, group=uid, extra_groups=[])
    try:
        return subprocess.run(cmd, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, timeout=10,
                              **kw).returncode
    except subprocess.TimeoutExpired:
        return -1


def timed(f, name, start, fn):
    at = time.monotonic() - start
    t0 = time.monotonic()
    try:
        rc = fn()
    except OSError:
        rc = -1
    f.write("%s %.1f %d %.2f\n" % (name, (time.monotonic() - t0) * 1000,
                                   rc, at))
    f.flush()


def sample(stop, out):
    start = time.monotonic()
    open(out, "w").close()
    pid = os.fork()
    if pid == 0:
        with open(out, "a") as f:
            os.setgroups([])
            os.setgid(USER)
            os.setuid(USER)
            while not os.path.exists(stop):
                timed(f, "user-request", start, request)
                time.sleep(0.1)
        os._exit(0)
    with open(out, "a") as f:
        while not os.path.exists(stop):
            for name, cmd, uid in TOOLS:
                timed(f, name, start, lambda: tool(cmd, uid))
            time.sleep(0.1)
    os.waitpid(pid, 0)


def summary(out, bound):
    bad = 0
    got = {}
    for line in open(out):
        name, ms, rc = line.split()[:3]
        got.setdefault(name, []).append((float(ms), int(rc)))
    for name in PROBES:
        v = got.get(name, [])
        if not v:
            print("%s: none" % name)
            bad = 1
            continue
        ms = sorted(t for t, _ in v)
        failed = sum(1 for _, rc in v if rc != 0)
        within = sum(1 for t in ms if t < bound)
        print("%s: %d, median %.0f ms, 99%% %.0f ms, max %.0f ms, "
              "failed %d, within %d ms %d (%.0f%%)" % (
                  name, len(ms), ms[len(ms) // 2],
                  ms[min(len(ms) - 1, int(len(ms) * 0.99))], ms[-1],
                  failed, bound, within, 100.0 * within / len(ms)))
        if name.startswith("floor"):
            continue
        if failed or within < 0.8 * len(ms) or ms[-1] >= 10 * bound:
            bad = 1
    # Each tool's time past the bound, beside the floor's of its round
    rounds = min(len(got.get(n, [])) for n in ("floor-true", "floor-sleep"))
    slow = []
    for name, _, _ in TOOLS:
        if name.startswith("floor"):
            continue
        for k, (t, _) in enumerate(got.get(name, [])[:rounds]):
            if t >= bound:
                slow.append("%s %.0f ms (true %.0f, sleep %.0f ms)" % (
                    name, t, got["floor-true"][k][0],
                    got["floor-sleep"][k][0]))
    if slow:
        print("past %.0f ms: %s" % (bound, "; ".join(slow)))
    return bad


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "sample":
        sample(sys.argv[2], sys.argv[3])
    elif len(sys.argv) in (3, 4) and sys.argv[1] == "summary":
        sys.exit(summary(sys.argv[2], float(sys.argv[3]) if
                         len(sys.argv) == 4 else 100.0))
    else:
        sys.exit(__doc__)


main()
