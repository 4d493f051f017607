#!/usr/bin/env python3
# tests/lab/privsep.py NETPID: play a network process taken over by an
# attacker. Takes (pidfd_getfd) the channel to the privileged parent from
# mosd's network process NETPID, which the caller has stopped (SIGSTOP) so
# that every answer comes here, and sends the parent malformed records
# (mosd/privmsg.h), then one well-formed request to start a guest agent.
# Each must be answered as expected: refused with the cause named, or, for
# the last, done. Prints one line per record; exits 1 at the first that
# is not answered as it should be.
import ctypes
import os
import socket
import struct
import sys

SYS_PIDFD_OPEN = 434
SYS_PIDFD_GETFD = 438
libc = ctypes.CDLL(None, use_errno=True)

GUEST, TOKEN, ANSWER = 1, 2, 3
HDR = '=II'                     # type, id
# home, pid, owner_uid, owner_gid, key, user, command, strict_files and pad
GUEST_BODY = '=IIII72s33s257s2x'
TOKEN_BODY = '=I255s1x'          # len, token
ANSWER_BODY = '=iII200s'         # ok, pid, uid, why


def channel(pid):
    """A copy of the network process's SOCK_SEQPACKET socket: the channel."""
    pidfd = libc.syscall(SYS_PIDFD_OPEN, pid, 0)
    if pidfd < 0:
        sys.exit('pidfd_open: ' + os.strerror(ctypes.get_errno()))
    for name in os.listdir('/proc/%d/fd' % pid):
        link = os.readlink('/proc/%d/fd/%s' % (pid, name))
        if not link.startswith('socket:'):
            continue
        fd = libc.syscall(SYS_PIDFD_GETFD, pidfd, int(name), 0)
        if fd < 0:
            sys.exit('pidfd_getfd: ' + os.strerror(ctypes.get_errno()))
        s = socket.socket(fileno=fd)
        if s.family == socket.AF_UNIX and s.type == socket.SOCK_SEQPACKET:
            return s
        s.detach()
        os.close(fd)
    sys.exit('no channel among the sockets of process %d' % pid)


def guest(home=2, pid=4242, user=b'alice', command=b'sleep 100'):
    return struct.pack(GUEST_BODY, home, pid, 1000, 1000, b'k' * 72, user,
                       command)


def answer(sock):
    sock.settimeout(5)
    data = sock.recv(4096)
    want = struct.calcsize(HDR) + struct.calcsize(ANSWER_BODY)
    if len(data) != want:
        sys.exit('an answer of %d bytes, expected %d' % (len(data), want))
    typ, rid = struct.unpack_from(HDR, data)
    ok, pid, uid, why = struct.unpack_from(ANSWER_BODY, data,
                                           struct.calcsize(HDR))
    if typ != ANSWER:
        sys.exit('a record of type %d, expected an answer' % typ)
    return rid, ok, pid, uid, why.split(b'\0')[0].decode()


def send(sock, rid, typ, body, fds=()):
    data = struct.pack(HDR, typ, rid) + body
    anc = [(socket.SOL_SOCKET, socket.SCM_RIGHTS,
            struct.pack('%di' % len(fds), *fds))] if fds else []
    sock.sendmsg([data], anc)


def main():
    sock = channel(int(sys.argv[1]))
    tcp = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    r, w = os.pipe()
    guest_size = struct.calcsize(GUEST_BODY)
    cases = [
        # (what, type, body, descriptors, the cause the answer names)
        ('shorter than a header', None, b'abc', (),
         'shorter than its header'),
        ('unknown type', 99, b'', (), 'unknown type 99'),
        ('an answer, which only the parent sends', ANSWER, b'', (),
         'which only the privileged process sends'),
        ('a guest request cut short', GUEST, guest()[:-1],
         (tcp.fileno(),), '%d bytes, expected %d' % (guest_size - 1,
                                                     guest_size)),
        ('a user name without its NUL', GUEST, guest(user=b'u' * 33),
         (tcp.fileno(),), 'user name is not NUL-terminated'),
        ('this node as the home', GUEST, guest(home=1), (tcp.fileno(),),
         'home 1 is not another node'),
        ('a home not in the map', GUEST, guest(home=77), (tcp.fileno(),),
         'home 77 is not another node'),
        ('pid 0', GUEST, guest(pid=0), (tcp.fileno(),), 'out of range'),
        ('no session socket', GUEST, guest(), (), '0 descriptors'),
        ('a pipe for the session', GUEST, guest(), (r,),
         'not a TCP socket'),
        ('three descriptors', GUEST, guest(), (tcp.fileno(), r, w),
         'more than 2 descriptors'),
        ('a token of 999 bytes', TOKEN, struct.pack(TOKEN_BODY, 999, b'x'),
         (), 'a length of 999'),
    ]
    for i, (what, typ, body, fds, cause) in enumerate(cases, 1):
        if typ is None:
            sock.sendmsg([body])
        else:
            send(sock, i, typ, body, fds)
        rid, ok, _, _, why = answer(sock)
        if ok or cause not in why:
            sys.exit('%s: answered ok=%d "%s", expected a refusal naming '
                     '"%s"' % (what, ok, why, cause))
        print('refused: %s: %s' % (what, why))
    # The same channel does start a guest agent when asked right.
    send(sock, 100, GUEST, guest(), (tcp.fileno(),))
    rid, ok, pid, uid, why = answer(sock)
    if not ok or rid != 100:
        sys.exit('a well-formed request: ok=%d id %d "%s"' % (ok, rid, why))
    print('started: guest agent %d as uid %d' % (pid, uid))


main()
