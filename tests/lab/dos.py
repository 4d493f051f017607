#!/usr/bin/env python3
"""The attackers of tests/lab/t-dos.sh, each as an ordinary user would run it.

    dos.py flood SOCKET N SECONDS   N control connections, each sending stats
                                    requests without ever reading a reply,
                                    opened again when cut; prints how often
                                    mosd cut them off (SECONDS may be the
                                    path of a file whose making stops it)
    dos.py busy SOCKET N STOP       N control connections asking status as
                                    fast as mosd answers, 8 requests in
                                    flight on each, reopened when cut or
                                    refused, until the file STOP is there;
                                    prints the answers a second
    dos.py hold SOCKET N STOP       as many control connections as mosd takes
                                    (up to N), kept busy until the file STOP
                                    is there; prints "holding K" every 2 s
    dos.py idle SOCKET              one connection that neither asks nor
                                    reads; prints when mosd closed it
    dos.py syn ADDRESS PORT SECONDS TCP connections to a migration port as
                                    fast as it can; prints how many it made
"""
import errno
import os
import selectors
import socket
import struct
import sys
import time

CTL_VERSION = 2
CTL_STATS = 2
CTL_STATUS = 1


def varint(v):
    out = b""
    while True:
        b = v & 0x7f
        v >>= 7
        if not v:
            return out + bytes([b])
        out += bytes([b | 0x80])


def request(kind):
    body = b"\x08" + varint(CTL_VERSION) + b"\x10" + varint(kind)
    return struct.pack(">I", len(body)) + body


def connect(path):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(2)
    s.connect(path)
    s.setblocking(False)
    return s


def flood(path, n, seconds):
    """Keep n connections writing requests, reading nothing, for seconds:
    each one mosd hangs up on is opened again. Counts the hang-ups."""
    conns = []
    rec = request(CTL_STATS) * 64
    cut = 0
    end = time.time() + seconds if isinstance(seconds, float) else None
    while (time.time() < end if end is not None else
           not os.path.exists(seconds)):
        while len(conns) < n:
            try:
                conns.append(connect(path))
            except OSError:
                break
        for s in list(conns):
            try:
                s.send(rec)
            except BlockingIOError:
                pass
            except OSError:
                # EPIPE, ECONNRESET: mosd hung up on us
                conns.remove(s)
                s.close()
                cut += 1
        time.sleep(0.001)
    print("cut %d times" % cut, flush=True)


def ask(s):
    """One status request on s and its reply read: True if answered."""
    try:
        s.setblocking(True)
        s.settimeout(2)
        s.sendall(request(CTL_STATUS))
        hdr = b""
        while len(hdr) < 4:
            c = s.recv(4 - len(hdr))
            if not c:
                return False
            hdr += c
        n = struct.unpack(">I", hdr)[0]
        body = b""
        while len(body) < n:
            c = s.recv(n - len(body))
            if not c:
                return False
            body += c
        # CtlReply field 1, ok: refused connections say 0
        return body[:2] == b"\x08\x01"
    except OSError:
        return False


def busy(path, n, stop):
    """n connections each keeping 8 status requests in flight, reading the
    answers as they come; one cut or refused is opened again."""
    sel = selectors.DefaultSelector()
    rec = request(CTL_STATUS)
    answers = 0
    start = time.time()

    def opened():
        try:
            s = connect(path)
        except OSError:
            return
        try:
            s.sendall(rec * 8)
        except OSError:         # turned away at once: later
            s.close()
            return
        sel.register(s, selectors.EVENT_READ, [b""])

    while not os.path.exists(stop):
        while len(sel.get_map()) < n:
            before = len(sel.get_map())
            opened()
            if len(sel.get_map()) == before:
                break
        for key, _ in sel.select(timeout=0.05):
            s, buf = key.fileobj, key.data
            try:
                data = s.recv(65536)
            except BlockingIOError:
                continue
            except OSError:
                data = b""
            if not data:
                sel.unregister(s)
                s.close()
                continue
            buf[0] += data
            while len(buf[0]) >= 4:
                m = struct.unpack(">I", buf[0][:4])[0]
                if len(buf[0]) < 4 + m:
                    break
                ok = buf[0][4:6] == b"\x08\x01"
                buf[0] = buf[0][4 + m:]
                if not ok:
                    break
                answers += 1
                try:
                    s.send(rec)
                except OSError:
                    pass
        if len(sel.get_map()) < n:
            time.sleep(0.01)
    secs = time.time() - start
    print("answers %d in %.0f s, %d a second" % (answers, secs,
          answers / max(secs, 1)), flush=True)


def hold(path, n, stop):
    """Hold as many connections as mosd takes, asking now and then so that
    none is idle; reopen any that mosd closes; until the file stop is."""
    live = []
    while not os.path.exists(stop):
        while len(live) < n:
            try:
                s = connect(path)
            except OSError:
                break
            if not ask(s):
                s.close()
                break
            live.append(s)
        print("holding %d" % len(live), flush=True)
        for _ in range(20):
            if os.path.exists(stop):
                return
            time.sleep(0.1)
        for s in list(live):
            if not ask(s):
                live.remove(s)
                s.close()


def idle(path):
    """One connection that neither asks nor reads: how long mosd keeps it."""
    start = time.time()
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(path)
    s.settimeout(60)
    try:
        if s.recv(1) != b"":
            print("mosd said something", flush=True)
            return
    except socket.timeout:
        print("still open after 60 s", flush=True)
        return
    except OSError:
        pass
    print("closed after %.1f s" % (time.time() - start), flush=True)


def syn(addr, port, seconds):
    """Connect and hang up as fast as one process can, 64 connections under
    way at a time, for seconds."""
    sel = selectors.DefaultSelector()
    made = failed = 0
    end = time.time() + seconds
    while time.time() < end:
        while len(sel.get_map()) < 64:
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.setblocking(False)
            if s.connect_ex((addr, port)) not in (0, errno.EINPROGRESS):
                s.close()
                failed += 1
                break
            sel.register(s, selectors.EVENT_WRITE, time.time())
        for key, _ in sel.select(timeout=0.1):
            s = key.fileobj
            sel.unregister(s)
            if s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR) == 0:
                made += 1
            else:
                failed += 1
            s.close()
        # A SYN the other side dropped: give up on it after a second.
        now = time.time()
        for key in list(sel.get_map().values()):
            if now - key.data > 1:
                sel.unregister(key.fileobj)
                key.fileobj.close()
                failed += 1
    print("connections %d failed %d" % (made, failed), flush=True)


def main():
    mode = sys.argv[1]
    if mode == "flood":
        try:
            until = float(sys.argv[4])
        except ValueError:
            until = sys.argv[4]
        flood(sys.argv[2], int(sys.argv[3]), until)
    elif mode == "busy":
        busy(sys.argv[2], int(sys.argv[3]), sys.argv[4])
    elif mode == "hold":
        hold(sys.argv[2], int(sys.argv[3]), sys.argv[4])
    elif mode == "idle":
        idle(sys.argv[2])
    elif mode == "syn":
        syn(sys.argv[2], int(sys.argv[3]), float(sys.argv[4]))
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
