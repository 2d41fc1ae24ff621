#!/usr/bin/env python3
# A stand-in for build/ember in emberctl's tests (tests/integration/
# emberctl.sh), so that sandbox life (supervisor, readiness, TTL, kill,
# clean-up) is checked in seconds and without a VM.  It takes ember's
# options, flocks the --drive image as ember does, writes a line to the
# --console file, and serves the hybrid vsock handshake on --vsock's uds
# (`CONNECT 1024\n` -> `OK <n>\n`), handing each connection to the agent
# built for this host (build/test/agent-host --fd N): the "guest" is this
# host.  --api-sock gets a small stand-in of ember's control socket: GET /
# and PATCH /vm (Paused, Resumed) answered as ember answers them.
# SIGTERM/SIGINT: clean stop, exit 128+sig, as ember.
#
# Environment knobs:
#   FAKE_BOOT_S=S      wait S seconds before listening (a slow boot)
#   FAKE_EXIT_AFTER=S  exit 0 by itself S seconds after listening
#   FAKE_FAIL=1        print an error and exit 1 at once
#   FAKE_PANIC=1       a guest kernel panic at boot: a stack trace on the
#                      console, ember's error line on stderr, exit 125
#   FAKE_REPORT=FILE   append "size=N blocks=N same=0|1" about the drive
#   FAKE_ROOTFS=FILE   the original image, for same= in the report
import fcntl
import http.server
import json
import os
import socketserver
import threading
import signal
import socket
import subprocess
import sys
import time

AGENT = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                     "../../build/test/agent-host")


def opt(args, name):
    for i, a in enumerate(args[:-1]):
        if a == name:
            return args[i + 1]
    sys.exit("fake_ember: missing " + name)


class Api(http.server.BaseHTTPRequestHandler):
    state = "Running"

    def address_string(self):
        return "unix"

    def log_message(self, *args):
        pass

    def reply(self, code, body=None):
        data = json.dumps(body).encode() if body is not None else b""
        self.send_response(code)
        if body is not None:
            self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        self.reply(200, {"id": "fake", "state": Api.state,
                         "vmm_version": "0", "app_name": "fake"})

    def do_PATCH(self):
        n = int(self.headers.get("Content-Length", "0"))
        body = json.loads(self.rfile.read(n) or b"{}")
        if self.path != "/vm" or body.get("state") not in ("Paused", "Resumed"):
            self.reply(400, {"fault_message": "fake: bad request"})
            return
        Api.state = "Paused" if body["state"] == "Paused" else "Running"
        self.reply(204)


class UnixServer(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True


def serve_api(args):
    if "--api-sock" not in args:
        return None
    path = opt(args, "--api-sock")
    srv = UnixServer(path, Api)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return path


def main():
    args = sys.argv[1:]
    vsock = dict(kv.split("=", 1) for kv in opt(args, "--vsock").split(","))
    uds = vsock["uds"]
    console = opt(args, "--console")[len("file:"):]
    drive = opt(args, "--drive").split(",")[0][len("path="):]
    for need in ("--kernel", "--mem", "--vcpus"):
        opt(args, need)
    if os.environ.get("FAKE_FAIL"):
        sys.exit("fake_ember: error: cannot open /dev/kvm: pretend failure")
    dfd = os.open(drive, os.O_RDWR)
    fcntl.flock(dfd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    report = os.environ.get("FAKE_REPORT")
    if report:
        st = os.fstat(dfd)
        same = 0
        orig = os.environ.get("FAKE_ROOTFS")
        if orig:
            with open(orig, "rb") as a, open(drive, "rb") as b:
                same = int(a.read() == b.read())
        with open(report, "a") as f:
            f.write("size=%d blocks=%d same=%d\n" %
                    (st.st_size, st.st_blocks, same))
    with open(console, "a") as f:
        f.write("fake guest: booting\n")
    if os.environ.get("FAKE_PANIC"):
        with open(console, "a") as f:
            f.write("[    2.5] Kernel panic - not syncing: VFS: Unable to "
                    "mount root fs on unknown-block(254,0)\r\n")
            for fn in ("dump_stack_lvl", "panic", "mount_block_root",
                       "prepare_namespace", "kernel_init", "\x1b[2J"):
                f.write("[    2.5]  %s+0x10/0x20\r\n" % fn)
        sys.stderr.write("ember: [ 2500.000 ms] error: the guest kernel "
                         "panicked: VFS: Unable to mount root fs on "
                         "unknown-block(254,0)\n")
        sys.exit(125)

    stop = []
    signal.signal(signal.SIGTERM, lambda s, f: stop.append(s))
    signal.signal(signal.SIGINT, lambda s, f: stop.append(s))
    boot_end = time.monotonic() + float(os.environ.get("FAKE_BOOT_S", "0"))
    while not stop and time.monotonic() < boot_end:
        time.sleep(0.02)
    if stop:
        sys.exit(128 + stop[0])
    api = serve_api(args)
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(uds)
    srv.listen(8)
    srv.settimeout(0.05)
    exit_after = os.environ.get("FAKE_EXIT_AFTER")
    end = time.monotonic() + float(exit_after) if exit_after else None
    agents = []
    status = 0
    while True:
        if stop:
            status = 128 + stop[0]
            break
        if end and time.monotonic() >= end:
            break
        agents = [a for a in agents if a.poll() is None]
        try:
            conn, _ = srv.accept()
        except (socket.timeout, InterruptedError):
            continue
        conn.settimeout(5)
        line = b""
        try:
            while not line.endswith(b"\n") and len(line) < 32:
                b = conn.recv(1)
                if not b:
                    break
                line += b
        except OSError:
            pass
        if line == b"CONNECT 1024\n":
            conn.sendall(b"OK 1\n")
            agents.append(subprocess.Popen(
                [AGENT, "--fd", str(conn.fileno())],
                pass_fds=[conn.fileno()]))
        conn.close()
    for a in agents:
        a.kill()
        a.wait()
    srv.close()
    os.unlink(uds)
    if api:
        os.unlink(api)
    sys.exit(status)


main()
