#!/usr/bin/env python3
"""A slowloris against one of ember's HTTP servers (api/sandbox/listener.h),
for tests/integration/http_limits.sh: prints TAP lines "ok - NAME" and
"not ok - NAME" (with "#   " lines saying why).

  slowloris.py NAME PORT PER_CLIENT HEADER_S REQUEST_FILE STATUS
               [KEEP_S KEEP_FILE KEEP_STATUS]

NAME prefixes the checks; the server listens on 127.0.0.1:PORT; PER_CLIENT
is the connections one client address may hold and HEADER_S the time a
request's headers have; REQUEST_FILE holds a whole request that a normal
client sends (with "Connection: close"), answered with the HTTP status
STATUS.  Opens N (512) connections from TRICKLE_ADDR (127.0.0.2) that send
a request line at once and then one header byte every 2 s, and checks:
  - past PER_CLIENT, the connections of that address are closed within
    2 s (EOF or a reset, no answer);
  - meanwhile a normal client on 127.0.0.1 is answered within 5 s, twice;
  - HEADER_S + 4 s after they opened, none of the tricklers is open;
  - then a normal client is answered, and one whose headers take 3 s too;
  - with KEEP_S (the idle time plus HEADER_S), meanwhile: a kept-alive
    connection is answered twice (the request in KEEP_FILE, its status
    KEEP_STATUS), 2 s apart, and then trickling a next request is closed
    within KEEP_S + 4 s.
"""
import os
import resource
import socket
import sys
import threading
import time

N = int(os.environ.get("SLOWLORIS_N", "512"))
TRICKLE_ADDR = os.environ.get("TRICKLE_ADDR", "127.0.0.2")


def ok(name):
    print(f"ok - {name}", flush=True)


def not_ok(name, *why):
    print(f"not ok - {name}", flush=True)
    for w in why:
        print(f"#   {w}", flush=True)


def check(name, cond, *why):
    if cond:
        ok(name)
    else:
        not_ok(name, *why)
    return cond


class Trickler:
    """One connection of the slowloris."""

    def __init__(self, port):
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.opened = time.monotonic()
        self.closed = None  # monotonic time it was seen closed
        self.answer = b""
        self.err = None
        try:
            self.sock.bind((TRICKLE_ADDR, 0))
            self.sock.settimeout(5)
            self.sock.connect(("127.0.0.1", port))
            self.sock.sendall(b"GET /sandboxes HTTP/1.1\r\nHost: 127.0.0.1\r\n")
            self.sock.setblocking(False)
        except OSError as e:
            self.err = e
            self.closed = time.monotonic()

    def poll(self):
        """Read what came; note the close."""
        if self.closed is not None:
            return
        try:
            while True:
                b = self.sock.recv(4096)
                if not b:
                    self.closed = time.monotonic()
                    return
                self.answer += b
        except BlockingIOError:
            return
        except OSError as e:
            self.err = e
            self.closed = time.monotonic()

    def trickle(self):
        if self.closed is not None:
            return
        try:
            self.sock.send(b"X")
        except BlockingIOError:
            pass
        except OSError as e:
            self.err = e
            self.closed = time.monotonic()
        self.poll()

    def close(self):
        self.sock.close()


def normal(port, request, status, delay_s=0.0, timeout=5.0):
    """A client on 127.0.0.1: (its status line or an error, seconds)."""
    t0 = time.monotonic()
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
            s.settimeout(max(0.1, timeout - (time.monotonic() - t0)))
            if delay_s:
                # Its request in four pieces, delay_s apart in all.
                n = len(request)
                for i in range(4):
                    if i:
                        time.sleep(delay_s / 3)
                    s.sendall(request[i * n // 4:(i + 1) * n // 4])
            else:
                s.sendall(request)
            s.settimeout(max(0.1, timeout - (time.monotonic() - t0)))
            got = b""
            while b"\r\n" not in got:
                b = s.recv(4096)
                if not b:
                    break
                got += b
            line = got.split(b"\r\n", 1)[0].decode(errors="replace")
            return line or "EOF, no answer", time.monotonic() - t0
    except OSError as e:
        return f"{type(e).__name__}: {e}", time.monotonic() - t0


def read_answer(s):
    """One answer with a Content-Length on @s: its status line."""
    got = b""
    while b"\r\n\r\n" not in got:
        b = s.recv(4096)
        if not b:
            return "EOF, no answer"
        got += b
    head, body = got.split(b"\r\n\r\n", 1)
    length = 0
    for h in head.split(b"\r\n")[1:]:
        k, _, v = h.partition(b":")
        if k.strip().lower() == b"content-length":
            length = int(v)
    while len(body) < length:
        b = s.recv(4096)
        if not b:
            break
        body += b
    return head.split(b"\r\n", 1)[0].decode(errors="replace")


def keepalive(s, request, keep_s, res):
    """Two requests on the connection @s, then a trickle: res["lines"], res["cut_s"]."""
    res["lines"] = []
    try:
        with s:
            for i in range(2):
                if i:
                    time.sleep(2)
                s.sendall(request)
                res["lines"].append(read_answer(s))
            t0 = time.monotonic()
            s.sendall(b"GET /mcp HTTP/1.1\r\n")
            s.setblocking(False)
            while time.monotonic() - t0 < keep_s + 4:
                time.sleep(2)
                try:
                    if not s.recv(4096):
                        res["cut_s"] = time.monotonic() - t0
                        return
                except BlockingIOError:
                    pass
                s.send(b"X")
    except OSError as e:
        if "cut_s" not in res and "t0" in locals():
            res["cut_s"] = time.monotonic() - t0
        res["err"] = repr(e)


def main():
    name, port, per_client, header_s, req_file, status = sys.argv[1:7]
    keep_s, ka_request, ka_want = 0, b"", ""
    if len(sys.argv) > 9:
        keep_s, ka_want = int(sys.argv[7]), f"HTTP/1.1 {sys.argv[9]} "
        with open(sys.argv[8], "rb") as f:
            ka_request = f.read()
    port, per_client, header_s = int(port), int(per_client), int(header_s)
    with open(req_file, "rb") as f:
        request = f.read()
    want = f"HTTP/1.1 {status} "
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < N + 64:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, N + 256), hard))

    # The kept-alive connection holds its slot before the slowloris comes.
    ka = {}
    if keep_s:
        ka_sock = socket.create_connection(("127.0.0.1", port), timeout=5)
        ka_thread = threading.Thread(target=keepalive, args=(ka_sock, ka_request, keep_s, ka))
        ka_thread.start()
    t0 = time.monotonic()
    tr = [Trickler(port) for _ in range(N)]
    t_opened = time.monotonic()
    stop = threading.Event()

    def trickle_loop():
        while not stop.is_set():
            for t in tr:
                t.trickle()
            stop.wait(2.0)

    def poll_loop():
        while not stop.is_set():
            for t in tr:
                t.poll()
            stop.wait(0.1)

    threads = [threading.Thread(target=trickle_loop), threading.Thread(target=poll_loop)]
    for th in threads:
        th.start()
    try:
        time.sleep(max(0.0, t_opened + 2.0 - time.monotonic()))
        # Reading only, in the poll thread: a snapshot is enough here.
        refused = [t for t in tr if t.closed is not None and t.closed - t.opened < 2.0]
        answered = [t for t in refused if t.answer]
        check(f"{name}: of {N} connections from {TRICKLE_ADDR}, those past {per_client} "
              f"are closed within 2 s, with no answer",
              len(refused) >= N - per_client and not answered,
              f"{len(refused)} closed within 2 s, {N - len(refused)} open "
              f"(opening took {t_opened - t0:.1f} s), {len(answered)} answered: "
              f"{answered[0].answer[:80] if answered else ''}")

        line, took = normal(port, request, status)
        check(f"{name}: meanwhile a client on 127.0.0.1 is answered within 5 s",
              line.startswith(want), f"got {line!r} after {took:.1f} s, want {want!r}")
        time.sleep(1.0)
        line, took = normal(port, request, status)
        check(f"{name}: and again 1 s later", line.startswith(want),
              f"got {line!r} after {took:.1f} s")

        time.sleep(max(0.0, t_opened + header_s + 4 - time.monotonic()))
        still = [t for t in tr if t.closed is None]
        got408 = [t for t in tr if t.answer.startswith(b"HTTP/1.1 408 ")]
        check(f"{name}: {header_s + 4} s after, none of the trickling connections is "
              f"open (the header time: {header_s} s); {len(got408)} read a 408",
              not still,
              f"{len(still)} of {N} still open after {time.monotonic() - t_opened:.1f} s")
        late = [t for t in tr if t.closed is not None and not t.answer.startswith(b"HTTP/1.1 408 ")
                and t.closed - t.opened >= 2.0]
        bad = [t for t in tr if t.answer and not t.answer.startswith(b"HTTP/1.1 408 ")]
        check(f"{name}: a trickler cut by the header time reads 408 Request Timeout or a "
              f"close, nothing else", not bad,
              f"{len(bad)} read {bad[0].answer[:80] if bad else ''}; "
              f"{len(late)} closed without the 408")
    finally:
        stop.set()
        for th in threads:
            th.join()
        for t in tr:
            t.close()

    line, took = normal(port, request, status)
    check(f"{name}: afterwards a client is answered", line.startswith(want),
          f"got {line!r} after {took:.1f} s")
    line, took = normal(port, request, status, delay_s=3.0, timeout=10.0)
    check(f"{name}: a client whose headers take 3 s is answered",
          line.startswith(want), f"got {line!r} after {took:.1f} s")
    if not keep_s:
        return
    ka_thread.join()
    lines = ka.get("lines", [])
    check(f"{name}: a kept-alive connection is answered twice, 2 s apart",
          len(lines) == 2 and all(x.startswith(ka_want) for x in lines),
          f"{lines} {ka.get('err', '')}")
    cut = ka.get("cut_s")
    check(f"{name}: then, trickling a next request, it is closed within {keep_s + 4} s "
          f"(idle time + header time: {keep_s} s)",
          cut is not None and cut <= keep_s + 4,
          f"closed after {cut} s" if cut is not None else f"still open {ka.get('err', '')}")


if __name__ == "__main__":
    main()
