#!/usr/bin/env python3
# A stand-in for build/ember in emberctl's tests (tests/integration/
# emberctl.sh), so that sandbox life (supervisor, readiness, TTL, kill,
# clean-up) is checked in seconds and without a VM.  It takes ember's
# options, flocks the --drive image as ember does, writes a line to the
# --console file, and serves the hybrid vsock handshake on --vsock's uds
# (`CONNECT 1024\n` -> `OK <n>\n`), handing each connection to the agent
# built for this host (build/test/agent-host --fd N): the "guest" is this
# host.  --api-sock gets a small stand-in of ember's control socket: GET /
# and PATCH /vm (Paused, Resumed) answered as ember answers them, and
# snapshots: PUT /snapshot/create on a paused VM writes a small JSON state
# file (what was snapshotted: type, drive, vsock, base memory file) and a
# memory file; started with only --api-sock (and --console), it waits for
# PUT /snapshot/load, checks what ember checks (the files, a Diff's base
# memory file, the overrides) and then serves the overridden drive and
# vsock socket.  SIGTERM/SIGINT: clean stop, exit 128+sig, as ember.
#
# Environment knobs:
#   FAKE_BOOT_S=S      wait S seconds before listening (a slow boot)
#   FAKE_EXIT_AFTER=S  exit 0 by itself S seconds after listening
#   FAKE_FAIL=1        print an error and exit 1 at once
#   FAKE_PANIC=1       a guest kernel panic at boot: a stack trace on the
#                      console, ember's error line on stderr, exit 125
#   FAKE_REPORT=FILE   append "size=N blocks=N same=0|1" about the drive
#   FAKE_ROOTFS=FILE   the original image, for same= in the report
#   FAKE_LOAD_FAIL=1   refuse PUT /snapshot/load (400)
#   FAKE_SNAP_LOG=FILE append "create TYPE MEMFILE" / "load STATEFILE" lines
#   FAKE_AGENT=FILE    the agent binary (default build/test/agent-host)
#   FAKE_INIT_REPORT=FILE  where the agent reports INIT (its test hook,
#                      EMBER_AGENT_INIT_REPORT; default /dev/null: the
#                      "guest" is this host, whose clock INIT must not set)
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

AGENT = os.environ.get("FAKE_AGENT") or os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "../../build/test/agent-host")


def opt(args, name):
    for i, a in enumerate(args[:-1]):
        if a == name:
            return args[i + 1]
    sys.exit("fake_ember: missing " + name)


START = time.monotonic()


def log(msg):
    sys.stderr.write("ember: [%9.3f ms] %s\n" %
                     ((time.monotonic() - START) * 1e3, msg))
    sys.stderr.flush()


def snap_log(line):
    path = os.environ.get("FAKE_SNAP_LOG")
    if path:
        with open(path, "a") as f:
            f.write(line + "\n")


class Vm:
    """What the fake VM is: set from the flags or by a snapshot load."""
    lock = threading.Lock()
    loaded = threading.Event()
    drive = None
    uds = None
    mem = None
    restored_from = None  # the memory file a restore was made from


class Api(http.server.BaseHTTPRequestHandler):
    state = "Running"
    protocol_version = "HTTP/1.1"

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

    def fault(self, msg):
        self.reply(400, {"fault_message": msg})

    def body(self):
        n = int(self.headers.get("Content-Length", "0"))
        try:
            b = json.loads(self.rfile.read(n) or b"{}")
        except ValueError:
            b = None
        return b if isinstance(b, dict) else None

    def do_GET(self):
        self.reply(200, {"id": "fake", "state": Api.state,
                         "vmm_version": "0", "app_name": "fake"})

    def do_PATCH(self):
        body = self.body()
        if self.path != "/vm" or not body or \
                body.get("state") not in ("Paused", "Resumed"):
            self.fault("fake: bad request")
            return
        if Api.state == "Not started":
            self.fault("fake: the VM is not started")
            return
        Api.state = "Paused" if body["state"] == "Paused" else "Running"
        self.reply(204)

    def do_PUT(self):
        body = self.body()
        if body is None:
            self.fault("fake: the body is no JSON object")
        elif self.path == "/snapshot/create":
            self.create(body)
        elif self.path == "/snapshot/load":
            self.load(body)
        else:
            self.fault("fake: no such resource")

    def create(self, b):
        kind = b.get("snapshot_type", "Full")
        if Api.state != "Paused":
            self.fault("fake: create a snapshot of a paused VM only")
            return
        if kind not in ("Full", "Diff") or \
                not isinstance(b.get("snapshot_path"), str) or \
                not isinstance(b.get("mem_file_path"), str):
            self.fault("fake: bad snapshot/create body")
            return
        if kind == "Diff" and not Vm.restored_from:
            self.fault("fake: a Diff snapshot needs a VM restored from one")
            return
        state = {"fake_snapshot": 1, "type": kind, "drive": Vm.drive,
                 "uds": Vm.uds, "mem": Vm.mem,
                 "base": Vm.restored_from if kind == "Diff" else None}
        try:
            with open(b["mem_file_path"], "w") as f:
                f.write("fake memory: %s\n" % kind)
            with open(b["snapshot_path"], "w") as f:
                json.dump(state, f)
        except OSError as e:
            self.fault("fake: %s" % e)
            return
        snap_log("create %s %s" % (kind, b["mem_file_path"]))
        self.reply(204)

    def load(self, b):
        t0 = time.monotonic()
        if os.environ.get("FAKE_LOAD_FAIL"):
            self.fault("fake: pretend the snapshot does not load")
            return
        if Vm.loaded.is_set() or Api.state != "Not started":
            self.fault("fake: load a snapshot into a fresh ember only")
            return
        try:
            with open(b["snapshot_path"]) as f:
                state = json.load(f)
            backend = b["mem_backend"]
            assert backend["backend_type"] == "File"
            mem = backend["backend_path"]
            uds = b["vsock_override"]["uds_path"]
            drives = {d["drive_id"]: d["path_on_host"]
                      for d in b.get("drive_overrides", [])}
        except (OSError, ValueError, KeyError, TypeError, AssertionError) as e:
            self.fault("fake: bad snapshot/load: %r" % e)
            return
        if state.get("fake_snapshot") != 1:
            self.fault("fake: not a snapshot")
            return
        if not os.path.exists(mem):
            self.fault("fake: no memory file %s" % mem)
            return
        if state["base"] and not os.path.exists(state["base"]):
            self.fault("fake: the base memory file %s is gone" %
                       state["base"])
            return
        if set(drives) != {"rootfs"} or not os.path.exists(drives["rootfs"]):
            self.fault("fake: drive_overrides must name rootfs: %r" % drives)
            return
        with Vm.lock:
            Vm.drive = drives["rootfs"]
            Vm.uds = uds
            Vm.mem = state["mem"]
            # A Diff's restore maps its base: a later Diff is over that.
            Vm.restored_from = state["base"] or mem
        snap_log("load %s" % b["snapshot_path"])
        Api.state = "Running"
        Vm.loaded.set()
        log("snapshot loaded in %.1f ms" % ((time.monotonic() - t0) * 1e3))
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


def open_drive(drive):
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
    return dfd


def main():
    args = sys.argv[1:]
    console = opt(args, "--console")[len("file:"):]
    restore = "--kernel" not in args
    if restore:
        opt(args, "--api-sock")
        for bad in ("--vsock", "--drive", "--mem", "--vcpus"):
            if bad in args:
                sys.exit("fake_ember: %s with a snapshot to load" % bad)
    else:
        vsock = dict(kv.split("=", 1)
                     for kv in opt(args, "--vsock").split(","))
        Vm.uds = vsock["uds"]
        Vm.drive = opt(args, "--drive").split(",")[0][len("path="):]
        Vm.mem = int(opt(args, "--mem"))
        for need in ("--kernel", "--vcpus"):
            opt(args, need)
    if os.environ.get("FAKE_FAIL"):
        sys.exit("fake_ember: error: cannot open /dev/kvm: pretend failure")
    if not restore:
        dfd = open_drive(Vm.drive)
    with open(console, "a") as f:
        f.write("fake guest: %s\n" % ("waiting for a snapshot" if restore
                                      else "booting"))
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
    if restore:
        Api.state = "Not started"
    api = serve_api(args)
    while restore and not stop and not Vm.loaded.wait(0.02):
        pass
    if stop:
        if api:
            os.unlink(api)
        sys.exit(128 + stop[0])
    if restore:
        dfd = open_drive(Vm.drive)
        with open(console, "a") as f:
            f.write("fake guest: restored\n")
    uds = Vm.uds
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(uds)
    srv.listen(8)
    srv.settimeout(0.05)
    # The "guest" is this host: INIT must touch neither its clock nor its
    # random pool (the agent's test hook reports instead).
    agent_env = dict(os.environ, EMBER_AGENT_INIT_REPORT=os.environ.get(
        "FAKE_INIT_REPORT") or os.devnull)
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
                pass_fds=[conn.fileno()], env=agent_env))
        conn.close()
    for a in agents:
        a.kill()
        a.wait()
    srv.close()
    os.close(dfd)
    os.unlink(uds)
    if api:
        os.unlink(api)
    sys.exit(status)


main()
