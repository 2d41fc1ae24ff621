#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# The host side of tests/integration/net.sh, run in whichever network
# namespace the test picks (`ip netns exec NS net_peer.py ...`):
#
#   serve ADDR PORT send FILE   each connection gets FILE, then EOF
#   serve ADDR PORT sink FILE   one connection: all it sends goes to FILE,
#                               then the server closes it and ends
#   serve ADDR PORT hello       each connection gets "hello <its address>"
#   try ADDR PORT               "open", or why not ("refused", "timeout",
#                               "error <errno>"), within 3 s
#   index DIR NAME MAGIC        DIR/simple/NAME/index.html (PEP 503) and
#                               DIR/files/NAME-1.0-py3-none-any.whl, a
#                               wheel (PEP 427) made here, without
#                               setuptools, of a module NAME whose MAGIC
#                               is MAGIC
#
# serve prints "listening" once it listens, so that the test can wait for
# it, and runs until it is killed (sink: until its one connection ends).
import base64
import hashlib
import os
import socket
import sys
import threading
import zipfile


def serve(addr, port, mode, arg):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((addr, port))
    s.listen(16)
    print("listening", flush=True)
    while True:
        c, peer = s.accept()
        if mode == "sink":
            with open(arg, "wb") as f:
                while True:
                    b = c.recv(1 << 16)
                    if not b:
                        break
                    f.write(b)
            c.close()
            return
        threading.Thread(target=answer, args=(c, peer, mode, arg),
                         daemon=True).start()


def answer(c, peer, mode, arg):
    try:
        if mode == "send":
            with open(arg, "rb") as f:
                c.sendall(f.read())
        else:
            c.sendall(("hello %s\n" % peer[0]).encode())
    finally:
        c.close()


def attempt(addr, port):
    try:
        socket.create_connection((addr, port), timeout=3).close()
        return "open"
    except socket.timeout:
        return "timeout"
    except ConnectionRefusedError:
        return "refused"
    except OSError as e:
        return "error %d" % e.errno


def record_hash(data):
    d = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
    return "sha256=" + d.decode()


def index(top, name, magic):
    files = {
        name + "/__init__.py": "MAGIC = %r\n" % magic,
        name + "-1.0.dist-info/METADATA":
            "Metadata-Version: 2.1\nName: %s\nVersion: 1.0\n" % name,
        name + "-1.0.dist-info/WHEEL":
            "Wheel-Version: 1.0\nGenerator: net_peer.py\n"
            "Root-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = name + "-1.0.dist-info/RECORD"
    lines = ["%s,%s,%d" % (p, record_hash(t.encode()), len(t.encode()))
             for p, t in files.items()]
    files[record] = "\n".join(lines + [record + ",,"]) + "\n"
    whl = "%s-1.0-py3-none-any.whl" % name
    os.makedirs(os.path.join(top, "files"), exist_ok=True)
    os.makedirs(os.path.join(top, "simple", name), exist_ok=True)
    path = os.path.join(top, "files", whl)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for p, t in files.items():
            z.writestr(p, t)
    with open(path, "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()
    with open(os.path.join(top, "simple", name, "index.html"), "w") as f:
        f.write('<!DOCTYPE html>\n<html><body>\n<a href="../../files/%s'
                '#sha256=%s">%s</a>\n</body></html>\n' % (whl, digest, whl))


def main():
    a = sys.argv[1:]
    if len(a) >= 4 and a[0] == "serve":
        serve(a[1], int(a[2]), a[3], a[4] if len(a) > 4 else None)
    elif len(a) == 3 and a[0] == "try":
        print(attempt(a[1], int(a[2])))
    elif len(a) == 4 and a[0] == "index":
        index(a[1], a[2], a[3])
    else:
        sys.exit("usage: net_peer.py serve|try|index ... (see the top)")


if __name__ == "__main__":
    main()
