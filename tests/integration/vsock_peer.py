#!/usr/bin/env python3
# The host side of tests/integration/vsock.sh: speaks ember's vsock Unix
# socket (CONNECT <port> / OK <host_port>) and the guest agent's frames
# (guest-init/PROTOCOL.md) directly, without emberctl, so that the device
# and its host side are tested on their own.  Each subcommand prints
# "ok" lines or fails with a message and a nonzero exit.
import hashlib
import os
import socket
import struct
import sys
import threading
import time

MAGIC = 0x41424D45
PING, PONG, EXEC, STDIN, STDOUT, STDERR, EXIT = 1, 2, 3, 4, 5, 6, 7
ERROR = 14
ARG, FLAGS = 1, 5


def die(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def connect(uds, port, deadline=None):
    """CONNECT to guest @port; returns (socket, file, ok-line)."""
    end = time.time() + (deadline or 0)
    while True:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            s.connect(uds)
            s.sendall(b"CONNECT %d\n" % port)
            f = s.makefile("rb")
            line = f.readline()
            if line.startswith(b"OK "):
                return s, f, line
            raise OSError("no OK line: %r" % line)
        except OSError:
            s.close()
            if time.time() >= end:
                raise
            time.sleep(0.5)


def frame(typ, stream, payload=b""):
    return struct.pack("<IHHII", MAGIC, 1, typ, stream, len(payload)) + payload


def field(tag, val):
    return struct.pack("<HHI", tag, 0, len(val)) + val


def read_frame(f):
    h = f.read(16)
    if len(h) != 16:
        die("short frame header: %r" % h)
    magic, ver, typ, stream, ln = struct.unpack("<IHHII", h)
    if magic != MAGIC or ver != 1:
        die("bad frame header %r" % h)
    return typ, stream, f.read(ln)


def run(s, f, stream, argv, stdin=None):
    """EXEC @argv; returns (stdout, stderr, (kind, code))."""
    pl = b"".join(field(ARG, a.encode() + b"\0") for a in argv)
    if stdin is not None:
        pl += field(FLAGS, struct.pack("<I", 1))
    s.sendall(frame(EXEC, stream, pl))
    if stdin is not None:
        def feed():
            for i in range(0, len(stdin), 65536):
                s.sendall(frame(STDIN, stream, stdin[i:i + 65536]))
            s.sendall(frame(STDIN, stream))
        threading.Thread(target=feed, daemon=True).start()
    out, err = [], []
    while True:
        typ, st, pl = read_frame(f)
        if st != stream:
            die("frame for stream %d, expected %d" % (st, stream))
        if typ == STDOUT:
            out.append(pl)
        elif typ == STDERR:
            err.append(pl)
        elif typ == EXIT:
            return b"".join(out), b"".join(err), struct.unpack("<Ii", pl)
        elif typ == ERROR:
            die("exec %r: agent error %r" % (argv, pl))


def ok_line_format(line):
    parts = line.split()
    return (len(parts) == 2 and parts[0] == b"OK" and parts[1].isdigit()
            and line.endswith(b"\n"))


def cmd_ping(uds, deadline):
    t = time.time()
    s, f, line = connect(uds, 1024, float(deadline))
    print("ok agent answered after %.1f s" % (time.time() - t))
    if not ok_line_format(line):
        die("OK line %r" % line)
    print("ok OK line %r" % line.strip().decode())
    s.sendall(frame(PING, 9, b"ember-ping"))
    typ, st, pl = read_frame(f)
    if (typ, st, pl) != (PONG, 9, b"ember-ping"):
        die("PONG %r" % ((typ, st, pl),))
    print("ok PING answered with its bytes")


def cmd_echo(uds, mib):
    """Host -> guest -> host: `cat` echoes random bytes through stdin/out."""
    data = os.urandom(int(mib) << 20)
    s, f, _ = connect(uds, 1024)
    t = time.time()
    out, err, ex = run(s, f, 1, ["cat"], stdin=data)
    dt = time.time() - t
    if ex != (0, 0) or hashlib.sha256(out).digest() != hashlib.sha256(data).digest():
        die("echo: exit %r, %d bytes back of %d" % (ex, len(out), len(data)))
    print("ok %s MiB echoed byte for byte (%.2f MiB/s each way)" %
          (mib, int(mib) / dt))


def cmd_concurrent(uds, n):
    """@n host connections at once, each running its own exec."""
    results = {}

    def one(i):
        try:
            s, f, _ = connect(uds, 1024)
            out, _, ex = run(s, f, 1, ["echo", "conn-%d" % i])
            results[i] = (out, ex)
            s.close()
        except Exception as e:  # reported below
            results[i] = (repr(e).encode(), None)

    th = [threading.Thread(target=one, args=(i,)) for i in range(int(n))]
    for t in th:
        t.start()
    for t in th:
        t.join(300)
    for i in range(int(n)):
        if results.get(i) != (b"conn-%d\n" % i, (0, 0)):
            die("connection %d: %r" % (i, results.get(i)))
    print("ok %s connections at once, each with its own output" % n)


def cmd_refused(uds):
    """CONNECT to a guest port nobody listens on: closed without OK."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(60)
    s.connect(uds)
    s.sendall(b"CONNECT 4444\n")
    if s.recv(100) != b"":
        die("CONNECT to an unlistened port got a reply")
    print("ok CONNECT to an unlistened guest port: closed, no OK")


def cmd_bad_lines(uds):
    """Malformed CONNECT lines are closed without a reply."""
    for bad in [b"GARBAGE\n", b"CONNECT\n", b"CONNECT 99999999999\n",
                b"CONNECT -1\n", b"connect 1024\n", b"CONNECT 1024x\n",
                b"A" * 200, b"\n", b"CONNECT 10 24\n"]:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(60)
        s.connect(uds)
        try:
            s.sendall(bad)
            got = s.recv(100)
        except (ConnectionResetError, BrokenPipeError):
            got = b""
        if got != b"":
            die("bad line %r got %r" % (bad[:30], got))
        s.close()
    # A client that connects and leaves at once.
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(uds)
    s.close()
    print("ok malformed CONNECT lines closed without a reply")


GUEST_CLIENT = r'''
import socket, sys, threading
n, size = int(sys.argv[1]), int(sys.argv[2])
res = {}
def one(i):
    s = socket.socket(socket.AF_VSOCK, socket.SOCK_STREAM)
    s.connect((2, 5000))
    s.sendall(bytes([65 + i]) * size)
    s.shutdown(socket.SHUT_WR)
    got = b""
    while True:
        b = s.recv(65536)
        if not b: break
        got += b
    res[i] = got
    s.close()
th = [threading.Thread(target=one, args=(i,)) for i in range(n)]
[t.start() for t in th]; [t.join() for t in th]
for i in range(n): print(i, res.get(i))
try:
    t = socket.socket(socket.AF_VSOCK, socket.SOCK_STREAM)
    t.connect((2, 5001))
    print("5001 connected")
except OSError as e:
    print("5001", type(e).__name__)
'''


def cmd_guest_to_host(uds, n, size):
    """Guest connections to host port 5000 reach <uds>_5000; 5001: RST."""
    n, size = int(n), int(size)
    path = uds + "_5000"
    lst = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    lst.bind(path)
    lst.listen(16)
    lst.settimeout(300)
    got = []

    def serve():
        for _ in range(n):
            c, _ = lst.accept()
            data = b""
            while True:
                b = c.recv(65536)
                if not b:
                    break
                data += b
            got.append(data)
            # Answer after the guest's half-close: shutdown is orderly.
            c.sendall(b"len=%d" % len(data))
            c.close()

    th = threading.Thread(target=serve, daemon=True)
    th.start()
    s, f, _ = connect(uds, 1024)
    out, err, ex = run(s, f, 1, ["python3", "-c", GUEST_CLIENT, str(n),
                                 str(size)])
    th.join(60)
    lst.close()
    os.unlink(path)
    if ex != (0, 0):
        die("guest client: exit %r, stderr %r" % (ex, err[-500:]))
    want = {bytes([65 + i]) * size for i in range(n)}
    if set(got) != want:
        die("host got %r" % [(len(g), g[:1]) for g in got])
    print("ok %d guest connections to host port 5000 delivered %d bytes each"
          % (n, size))
    lines = out.decode().splitlines()
    if lines[:n] != ["%d b'len=%d'" % (i, size) for i in range(n)]:
        die("guest side saw %r" % lines)
    print("ok the host's reply after the guest's half-close reached the guest")
    if lines[n:] != ["5001 ConnectionResetError"]:
        die("guest connect to an unlistened host port: %r" % lines[n:])
    print("ok a guest connecting to an unlistened host port gets a reset")


def cmd_tty(uds):
    """EXEC with FLAGS bit TTY: a terminal from the guest's devpts."""
    s, f, _ = connect(uds, 1024)
    pl = b"".join(field(ARG, a + b"\0") for a in
                  [b"sh", b"-c", b"tty; stty size; echo err >&2"])
    pl += field(FLAGS, struct.pack("<I", 4))
    pl += field(13, struct.pack("<HH", 24, 80))  # TTY_SIZE
    s.sendall(frame(EXEC, 3, pl))
    out = []
    while True:
        typ, st, p = read_frame(f)
        if typ == STDOUT:
            out.append(p)
        elif typ == EXIT:
            break
        else:
            die("tty exec: frame %d %r" % (typ, p))
    text = b"".join(out)
    if b"/dev/pts/" not in text or b"24 80\r\n" not in text \
            or b"err\r\n" not in text:
        die("tty exec: output %r" % text)
    print("ok an exec on a guest pseudo-terminal: tty, its size, stderr "
          "on it")


if __name__ == "__main__":
    globals()["cmd_" + sys.argv[1].replace("-", "_")](*sys.argv[2:])
