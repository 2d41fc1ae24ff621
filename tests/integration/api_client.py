#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A test client for ember's control socket (tests/integration/api.sh).

    api_client.py req SOCK METHOD PATH [BODY]   one request: "STATUS BODY"
    api_client.py cycles SOCK N                 N pause/resume cycles on one
                                                connection: "cycles=N fails=F"
    api_client.py cycles-while SOCK PID         pause/resume until PID ends
    api_client.py hash PID MIB                  sha256 of the guest RAM mapping
                                                (MIB MiB) of ember PID
    api_client.py crowd SOCK N                  N clients at once, each GET /
                                                on its own connection
    api_client.py abuse SOCK                    hostile clients; prints one
                                                "ok NAME" or "bad NAME: why"
                                                line per case
"""
import hashlib
import http.client
import os
import socket
import sys
import threading
import time


class UnixConnection(http.client.HTTPConnection):
    def __init__(self, path, timeout=30):
        super().__init__("localhost", timeout=timeout)
        self.path = path

    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(self.timeout)
        self.sock.connect(self.path)


def request(conn, method, path, body=None):
    headers = {"Content-Type": "application/json"} if body is not None else {}
    conn.request(method, path, body=body, headers=headers)
    r = conn.getresponse()
    return r.status, r.read().decode()


def cmd_req(sock, method, path, body=None):
    c = UnixConnection(sock)
    status, text = request(c, method, path, body)
    print(status, text)


def cmd_cycles(sock, n):
    c = UnixConnection(sock)
    fails = 0
    for _ in range(n):
        for state in ("Paused", "Resumed"):
            status, text = request(c, "PATCH", "/vm",
                                   '{"state":"%s"}' % state)
            if status != 204:
                fails += 1
                print("fail:", status, text, file=sys.stderr)
    print("cycles=%d fails=%d" % (n, fails))


def alive(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().split(") ")[1][0] != "Z"
    except OSError:
        return False


def cmd_cycles_while(sock, pid):
    """Pause/resume until the guest ends.  The guest may end between two
    calls (its last MMIO read checked, it writes the exit device): an
    answer that the microVM has stopped is then right, not a failure."""
    c = UnixConnection(sock)
    n = fails = 0
    stopped = False
    while alive(pid) and not stopped:
        try:
            for state in ("Paused", "Resumed"):
                status, text = request(c, "PATCH", "/vm",
                                       '{"state":"%s"}' % state)
                if status == 400 and "has stopped" in text:
                    stopped = True
                    break
                if status != 204:
                    fails += 1
                    print("fail: %s after %d cycles: %s %s" % (state, n, status, text),
                          file=sys.stderr)
            n += 1
            time.sleep(0.01)
        except OSError:
            break
    print("cycles=%d fails=%d" % (n, fails))


def cmd_hash(pid, mib):
    size = mib << 20
    with open("/proc/%d/maps" % pid) as f:
        for line in f:
            lo, hi = (int(x, 16) for x in line.split()[0].split("-"))
            if hi - lo == size:
                break
        else:
            sys.exit("no mapping of %d MiB in %d" % (mib, pid))
    h = hashlib.sha256()
    with open("/proc/%d/mem" % pid, "rb", buffering=0) as m:
        m.seek(lo)
        left = size
        while left:
            chunk = m.read(min(left, 1 << 20))
            if not chunk:
                break
            h.update(chunk)
            left -= len(chunk)
    print(h.hexdigest())


def cmd_crowd(sock, n):
    results = []
    lock = threading.Lock()

    def one():
        try:
            c = UnixConnection(sock, timeout=60)
            status, _ = request(c, "GET", "/")
        except OSError as e:
            status = str(e)
        with lock:
            results.append(status)

    threads = [threading.Thread(target=one) for _ in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    good = sum(1 for s in results if s == 200)
    print("clients=%d ok=%d" % (n, good))


def raw(sock, data, wait=2.0, close_write=False):
    """Send raw bytes, return what comes back within @wait seconds."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(wait)
    s.connect(sock)
    try:
        s.sendall(data)
    except (BrokenPipeError, ConnectionResetError):
        pass  # refused before it all went: read what it said
    if close_write:
        s.shutdown(socket.SHUT_WR)
    got = b""
    try:
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            got += chunk
    except (socket.timeout, ConnectionResetError):
        pass  # a server that closes on unread bytes resets: an answer too
    s.close()
    return got


def cmd_abuse(sock):
    def report(name, ok, why=""):
        print(("ok " + name) if ok else ("bad %s: %s" % (name, why)))

    def still_serving():
        c = UnixConnection(sock, timeout=5)
        return request(c, "GET", "/")[0] == 200

    # A Content-Length longer than the body, the connection kept open: the
    # server must go on serving others meanwhile, and drop this one later.
    liar = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    liar.connect(sock)
    liar.sendall(b"PUT /machine-config HTTP/1.1\r\nHost: x\r\n"
                 b"Content-Length: 1000\r\n\r\n{\"vcpu_count\":1")
    report("lying Content-Length: others still served", still_serving())
    liar.settimeout(30)
    t0 = time.time()
    try:
        got = liar.recv(4096)
    except OSError:
        got = b""
    report("lying Content-Length: the liar is dropped in time",
           time.time() - t0 < 25, "waited %.1f s, got %r" % (
               time.time() - t0, got[:60]))
    liar.close()
    # Half-closed with a short body: an error or a close, not a hang.
    got = raw(sock, b"PUT /machine-config HTTP/1.1\r\nHost: x\r\n"
              b"Content-Length: 50\r\n\r\n{\"vcpu", wait=15, close_write=True)
    report("half-closed short body: answered or closed", True)
    report("half-closed short body: still serving", still_serving())
    # Abandoned connections (connect, say nothing).
    idle = []
    for _ in range(20):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(sock)
        idle.append(s)
    report("20 silent connections: still serving", still_serving())
    for s in idle:
        s.close()
    # Huge, negative and garbage Content-Length.
    for name, cl in (("huge", b"99999999999999999999"), ("negative", b"-5"),
                     ("garbage", b"abc"), ("over the limit", b"60000")):
        got = raw(sock, b"PUT /machine-config HTTP/1.1\r\nHost: x\r\n"
                  b"Content-Length: " + cl + b"\r\n\r\n{}")
        report("Content-Length %s: an error status" % name,
               got.startswith(b"HTTP/1.1 4"), repr(got[:80]))
    # A body over the limit, sent whole (chunked, no Content-Length).
    big = b"x" * 60000
    got = raw(sock, b"PUT /machine-config HTTP/1.1\r\nHost: x\r\n"
              b"Transfer-Encoding: chunked\r\n\r\n" +
              b"%x\r\n" % len(big) + big + b"\r\n0\r\n\r\n", wait=5)
    report("chunked body over the limit: 400", got.startswith(b"HTTP/1.1 400"),
           repr(got[:80]))
    # Garbage instead of HTTP, and a header flood.
    raw(sock, os.urandom(4096), wait=1)
    got = raw(sock, b"GET / HTTP/1.1\r\n" + b"X-A: b\r\n" * 5000 + b"\r\n",
              wait=3)
    report("header flood: refused", not got.startswith(b"HTTP/1.1 200"),
           repr(got[:80]))
    report("after garbage and floods: still serving", still_serving())
    print("end of cases")


def main():
    a = sys.argv[1:]
    if not a:
        sys.exit(__doc__)
    if a[0] == "req":
        cmd_req(a[1], a[2], a[3], a[4] if len(a) > 4 else None)
    elif a[0] == "cycles":
        cmd_cycles(a[1], int(a[2]))
    elif a[0] == "cycles-while":
        cmd_cycles_while(a[1], int(a[2]))
    elif a[0] == "hash":
        cmd_hash(int(a[1]), int(a[2]))
    elif a[0] == "crowd":
        cmd_crowd(a[1], int(a[2]))
    elif a[0] == "abuse":
        cmd_abuse(a[1])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
