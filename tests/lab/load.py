#!/usr/bin/env python3
"""What the tools of a node's users see while the node is loaded
(tests/lab/t-load.sh, bench/load), run inside the node as root.

    load.py sample STOP OUT [DIR]
                              until the file STOP is there, every 100 ms,
                              each of, in an order drawn anew each round:
                              root's mosctl status, another user's (uid
                              1001) mosctl status, the jobs' owner's (uid
                              1000) mosps, each a program started anew;
                              root's true(1) and sleep 0.001, started the
                              same way: what any program's start takes
                              then, and one that waits once as a tool
                              waits for mosd's answer (the floor, not
                              judged); with DIR, the same three tools
                              from DIR's mosctl and mosps too ("alt-",
                              not judged: a build to compare side by
                              side); and, from a process of uid 1001
                              that stays, one status request on the
                              control socket as mosctl makes it (mosd's
                              answer without a program's start). How
                              long each took and whether it succeeded, a
                              line each in OUT; for the tools, the times
                              of their steps (lib/toolclock.c), a line
                              "#NAME MS toolclock: ..." each
    load.py summary OUT [MS]  per probe: how many, median, 99th percentile
                              and highest time, how many failed, how many
                              within MS (100); for each tool's start past
                              MS where its time went (waiting for a core,
                              on one, mosd's answer, read from disk, its
                              launcher's); exit 1 if one failed, one
                              probe was never made, fewer than 80% of a
                              probe's came within MS, one took 10 MS, or
                              a tool's start did not time its steps
"""
import mmap
import os
import random
import re
import shutil
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


def waited():
    """ms this thread has waited for a core (its schedstat run_delay)."""
    with open("/proc/thread-self/schedstat") as f:
        return int(f.read().split()[1]) / 1e6


def tool(cmd, uid, clock):
    """Run cmd as uid; a tool of ours (clock a list) says the times of
    its steps (lib/toolclock.c) on stderr, kept in clock with how long
    this launcher waited for a core meanwhile."""
    kw = {}
    if uid is not None:
        kw = dict(user=uid, group=uid, extra_groups=[])
    if clock is not None:
        w = waited()
        kw["env"] = dict(os.environ,
                         OSM_TOOL_TIMES=str(time.monotonic_ns()))
    try:
        r = subprocess.run(cmd, stdout=subprocess.DEVNULL,
                           stderr=subprocess.PIPE, timeout=10, **kw)
    except subprocess.TimeoutExpired:
        return -1
    if clock is not None:
        w = waited() - w
        clock.extend("%s launcher %.1f" % (l, w) for l in
                     r.stderr.decode(errors="replace").splitlines()
                     if l.startswith("toolclock:"))
    return r.returncode


def timed(f, name, start, fn, clock=None):
    at = time.monotonic() - start
    t0 = time.monotonic()
    try:
        rc = fn()
    except OSError:
        rc = -1
    ms = (time.monotonic() - t0) * 1000
    f.write("%s %.1f %d %.2f\n" % (name, ms, rc, at))
    for line in clock or []:
        f.write("#%s %.1f %s\n" % (name, ms, line))
    f.flush()


def resident(cmds):
    """Each program's file mapped and every page touched, kept so while
    this process lives: a mapped page stays in memory, where this VM's
    proactive reclaim (DAMON, pageout of file pages not mapped and not
    used for a minute) reads it back from disk at the next exec."""
    maps = []
    for cmd in cmds:
        path = shutil.which(cmd[0])
        with open(path, "rb") as f:
            m = mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ)
        for off in range(0, len(m), mmap.PAGESIZE):
            m[off]
        maps.append(m)
    return maps


def sample(stop, out, alt=None):
    if alt:
        TOOLS[3:3] = [("alt-root-status", [alt + "/mosctl", "status"], None),
                      ("alt-user-status", [alt + "/mosctl", "status"], USER),
                      ("alt-owner-ps", [alt + "/mosps"], 1000)]
    kept = resident(c for n, c, _ in TOOLS if not n.startswith("alt-"))
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
            for name, cmd, uid in random.sample(TOOLS, len(TOOLS)):
                clock = None if name.startswith("floor") else []
                timed(f, name, start, lambda: tool(cmd, uid, clock),
                      clock)
            time.sleep(0.1)
    os.waitpid(pid, 0)
    del kept


STEPS = ("main", "connected", "written", "first", "exit")
MARK = re.compile(r" (\w+) ([\d.]+) \(cpu ([\d.]+) wait ([\d.]+), \d+ \d+, "
                  r"disk \d+ (\d+), on \d+\)")


def steps(line):
    """A tool's toolclock line: step -> (ms since its start, ms of CPU,
    ms waited for a core, KiB read from disk), so far."""
    return {m[0]: (float(m[1]), float(m[2]), float(m[3]), int(m[4]) / 2)
            for m in MARK.findall(line)}


def split(name, ms, line):
    """Where a slow tool's time went, in words."""
    k = steps(line)
    m, e = k["main"], k["exit"]
    launcher = float(line.split(" launcher ")[1])
    return ("%s %.0f ms: to main %.0f (%.0f waiting for a core, %.0f on "
            "one, %.0f neither: its launcher's, or asleep, %.0f KiB read "
            "from disk), in it %.0f (%.0f waiting for a core, mosd's "
            "answer %.0f, %.0f KiB from disk), after its exit %.0f; its "
            "launcher waited %.0f for a core" % (
                name, ms, m[0], m[2], m[1], m[0] - m[1] - m[2], m[3],
                e[0] - m[0], e[2] - m[2], k["first"][0] - k["written"][0],
                e[3] - m[3], ms - e[0], launcher))


def summary(out, bound):
    bad = 0
    got = {}
    clocks = {}
    for line in open(out):
        if line.startswith("#"):
            name, ms = line[1:].split()[:2]
            clocks.setdefault(name, []).append((float(ms), line))
            continue
        name, ms, rc = line.split()[:3]
        got.setdefault(name, []).append((float(ms), int(rc)))
    for name in PROBES + [n for n in got if n.startswith("alt-")]:
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
        if name.startswith("floor") or name.startswith("alt-"):
            continue
        if failed or within < 0.8 * len(ms) or ms[-1] >= 10 * bound:
            bad = 1
        # Every start of a tool of ours timed its steps (lib/toolclock.c)
        stepped = [l for _, l in clocks.get(name, []) if
                   all(s in steps(l) for s in STEPS)]
        if name in ("root-status", "user-status", "owner-ps") and \
                len(stepped) != len(v) - failed:
            print("%s: %d of %d starts timed their steps" % (
                name, len(stepped), len(v)))
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
    # Where their time went, and all of it together
    total = core = launcher = 0.0
    for name in sorted(clocks):
        for ms, line in clocks[name]:
            k = steps(line)
            if ms < bound or not all(s in k for s in STEPS):
                continue
            print(split(name, ms, line))
            total += ms
            core += k["exit"][2]
            launcher += float(line.split(" launcher ")[1])
    if total:
        # the launcher may wait while the tool runs or waits too
        print("of the %.0f ms those took, the tools waited %.0f%% for a "
              "core; their launcher %.0f ms, partly at the same time" % (
                  total, 100 * core / total, launcher))
    return bad


def main():
    if len(sys.argv) in (4, 5) and sys.argv[1] == "sample":
        sample(*sys.argv[2:])
    elif len(sys.argv) in (3, 4) and sys.argv[1] == "summary":
        sys.exit(summary(sys.argv[2], float(sys.argv[3]) if
                         len(sys.argv) == 4 else 100.0))
    else:
        sys.exit(__doc__)


main()
