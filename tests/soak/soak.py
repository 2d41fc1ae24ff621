#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""ember's soak and fault driver (bench/soak, tests/integration/soak.sh).

K clients in parallel, for a set time, loop over sandboxes restored from
one template through emberctl: create (run --template), exec, cp (a file
written, then read back: the writes acknowledged), pause/resume,
park/resume (pause --to-disk), kill; at most C sandboxes live at once and
N created in all; with --mcp-url, some clients do the same through
ember-mcp's tools over Streamable HTTP.  With --faults F, a seeded
schedule (--seed) SIGKILLs, at random moments while the clients work,
one of: a sandbox's ember, its supervisor, or an emberctl client in the
middle of its command; or (--corrupt-share of them) damages a parked
sandbox's info file, snapshot or disk overlay and resumes it.  After
each, once the sandbox settles, it must be running, paused, parked, or
cleanly gone (no directory), as `emberctl ls` says; a damaged park
resumes or is refused with a clear error, and is then killed cleanly;
parked ones resume with their acknowledged files.

Before and after: the host's processes of the state directory, open files
(file-nr), mounts, tap devices, network namespaces, cgroups, Unix
sockets, the state directory's entries, MemAvailable.  Printed: ops/s,
p50/p99 per operation, errors by kind, faults, what leaked, lost writes.
Exit 0 when nothing leaked and nothing acknowledged was lost, else 1.
It uses only the standard library.
"""
import argparse
import hashlib
import json
import os
import random
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

ID_RE = re.compile(r"^[0-9a-f]{12}$")


def now():
    return time.monotonic()


class Soak:
    def __init__(self, a):
        self.a = a
        self.state = os.environ["EMBER_STATE_DIR"]
        self.lock = threading.Lock()
        self.rng = random.Random(a.seed)
        self.lat = {}  # op -> [seconds]
        self.errors = {}  # "op: kind" -> count
        self.created = 0
        self.live = {}  # id -> {"files": {path: sha}, "busy": bool}
        self.lost = []  # "id path: why"
        self.faults = []  # (what, id, outcome)
        self.unsettled = []
        self.stop = threading.Event()
        self.tmp = a.tmp
        self.clients = {}  # thread name -> Popen in flight
        self.refused = {}  # why a fault found no target -> count

    # ---- emberctl ---------------------------------------------------------
    def ctl(self, op, args, timeout=300, inp=None):
        t0 = now()
        me = threading.current_thread().name
        try:
            p = subprocess.Popen([self.a.emberctl] + args,
                                 stdin=subprocess.PIPE if inp else subprocess.DEVNULL,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        except OSError as e:
            self.err(op, "spawn: %s" % e.strerror)
            return None
        with self.lock:
            self.clients[me] = p
        try:
            out, err = p.communicate(inp, timeout=timeout)
        except subprocess.TimeoutExpired:
            p.kill()
            out, err = p.communicate()
            self.err(op, "timeout")
            return None
        finally:
            with self.lock:
                self.clients.pop(me, None)
        if p.returncode != 0:
            first = err.decode(errors="replace").strip().splitlines()
            why = first[0] if first else "exit %d" % p.returncode
            if p.returncode < 0:
                why = "killed by signal %d" % -p.returncode
            self.err(op, re.sub(r"[0-9a-f]{12}", "ID", why)[:120])
            # Gone (a fault ended it): no client uses it again.
            if len(args) > 1 and ID_RE.match(args[1]) and re.search(
                    r"no sandbox|is gone|already gone", why):
                with self.lock:
                    self.live.pop(args[1], None)
            return None
        with self.lock:
            self.lat.setdefault(op, []).append(now() - t0)
        return out.decode(errors="replace")

    def err(self, op, kind):
        with self.lock:
            k = "%s: %s" % (op, kind)
            self.errors[k] = self.errors.get(k, 0) + 1

    # ---- one client -------------------------------------------------------
    def take(self):
        """A live sandbox no other client is using, marked busy."""
        with self.lock:
            free = [i for i, s in self.live.items() if not s["busy"]]
            if not free:
                return None
            i = self.rng.choice(free)
            self.live[i]["busy"] = True
            return i

    def give(self, i, gone=False):
        with self.lock:
            if gone:
                self.live.pop(i, None)
            elif i in self.live:
                self.live[i]["busy"] = False


    def create(self):
        with self.lock:
            if self.created >= self.a.sandboxes or len(self.live) >= self.a.live:
                return False
            self.created += 1
        out = self.ctl("create", ["run", "--template", self.a.template, "--ttl", "3600"])
        i = (out or "").strip()
        if ID_RE.match(i):
            with self.lock:
                self.live[i] = {"files": {}, "busy": False}
        else:
            with self.lock:
                self.created -= 1
        return True

    def files_ok(self, i, op):
        """Every acknowledged file of @i reads back whole."""
        with self.lock:
            files = dict(self.live.get(i, {}).get("files", {}))
        for path, sha in files.items():
            out = self.ctl(op + " check", ["exec", i, "--", "sha256sum", path])
            if out is None:
                return None  # the sandbox may be gone: settled later
            if out.split()[0] != sha:
                with self.lock:
                    self.lost.append("%s %s: %s" % (i, path, "changed"))
        return True

    def one(self):
        r = self.rng.random()
        if r < 0.2 and self.create():
            return
        i = self.take()
        if not i:
            if not self.create():
                time.sleep(0.2)
            return
        gone = False
        try:
            if self.live.get(i, {}).get("parked"):
                if self.ctl("resume parked", ["resume", i]) is not None:
                    with self.lock:
                        self.live[i]["parked"] = False
                    self.files_ok(i, "resume parked")
            elif r < 0.45:
                out = self.ctl("exec", ["exec", i, "--", "sh", "-c", "echo $((6*7))"])
                if out is not None and out.strip() != "42":
                    self.err("exec", "wrong output")
            elif r < 0.65:
                data = os.urandom(self.rng.randint(1, 256) * 1024)
                host = os.path.join(self.tmp, "f-%s-%d" % (i, self.rng.randint(0, 1 << 30)))
                with open(host, "wb") as f:
                    f.write(data)
                path = "/root/soak-%d" % self.rng.randint(0, 1 << 30)
                if self.ctl("cp", ["cp", host, "%s:%s" % (i, path)]) is not None:
                    with self.lock:
                        if i in self.live:
                            self.live[i]["files"][path] = hashlib.sha256(data).hexdigest()
                os.unlink(host)
            elif r < 0.78:
                if self.ctl("pause", ["pause", i]) is not None:
                    self.ctl("resume", ["resume", i])
            elif r < 0.92:
                if self.ctl("park", ["pause", "--to-disk", i]) is not None:
                    if r >= 0.86:  # left parked: the next client resumes it
                        with self.lock:
                            self.live[i]["parked"] = True
                    elif self.ctl("resume parked", ["resume", i]) is not None:
                        self.files_ok(i, "resume parked")
            else:
                gone = self.ctl("kill", ["kill", i]) is not None
        finally:
            self.give(i, gone)

    def client(self):
        while not self.stop.is_set():
            self.one()

    def mcp_op(self, m, op, tool, **args):
        t0 = now()
        res, why = m.call(tool, **args)
        if why:
            self.err("mcp " + op, re.sub(r"[0-9a-f]{12}", "ID", why)[:120])
            if "sandbox_id" in args and re.search(r"no sandbox|is gone|already gone|not found", why):
                with self.lock:
                    self.live.pop(args["sandbox_id"], None)
            return None
        with self.lock:
            self.lat.setdefault("mcp " + op, []).append(now() - t0)
        return res

    def mcp_client(self):
        """The same mix through ember-mcp's tools, on sandboxes it made
        (a session may use only its own)."""
        try:
            m = Mcp(self.a.mcp_url, self.a.mcp_token)
        except (RuntimeError, urllib.error.URLError, OSError, ValueError) as e:
            self.err("mcp initialize", str(e)[:120])
            return
        mine = []
        while not self.stop.is_set():
            mine = [i for i in mine if i in self.live]
            r = self.rng.random()
            if not mine or (r < 0.15 and len(mine) < 2):
                with self.lock:
                    if self.created >= self.a.sandboxes or len(self.live) >= self.a.live:
                        full = True
                    else:
                        full = False
                        self.created += 1
                if full:
                    if not mine:
                        time.sleep(0.5)
                        continue
                else:
                    res = self.mcp_op(m, "create", "create_sandbox", template=self.a.template)
                    i = (res or {}).get("sandbox_id", "")
                    if ID_RE.match(i):
                        with self.lock:
                            self.live[i] = {"files": {}, "busy": True, "mcp": True}
                        mine.append(i)
                    else:
                        with self.lock:
                            self.created -= 1
                    continue
            i = self.rng.choice(mine)
            if r < 0.45:
                res = self.mcp_op(m, "run_command", "run_command", sandbox_id=i,
                                  command="echo $((6*7))")
                if res is not None and res.get("stdout", "").strip() != "42":
                    self.err("mcp run_command", "wrong output")
            elif r < 0.65:
                data = "%x" % self.rng.getrandbits(4096)
                path = "/root/mcp-%d" % self.rng.randint(0, 1 << 30)
                if self.mcp_op(m, "write_file", "write_file", sandbox_id=i, path=path,
                               content=data) is not None:
                    with self.lock:
                        if i in self.live:
                            self.live[i]["files"][path] = hashlib.sha256(data.encode()).hexdigest()
            elif r < 0.78:
                if self.mcp_op(m, "pause", "pause_sandbox", sandbox_id=i) is not None:
                    self.mcp_op(m, "resume", "resume_sandbox", sandbox_id=i)
            elif r < 0.92:
                if self.mcp_op(m, "park", "pause_sandbox", sandbox_id=i, to_disk=True) is not None:
                    self.mcp_op(m, "resume parked", "resume_sandbox", sandbox_id=i)
            elif self.mcp_op(m, "kill", "kill_sandbox", sandbox_id=i) is not None:
                with self.lock:
                    self.live.pop(i, None)

    # ---- faults -----------------------------------------------------------
    def pids(self, i):
        info = {}
        try:
            with open(os.path.join(self.state, i, "info")) as f:
                for line in f:
                    k, _, v = line.rstrip("\n").partition("=")
                    info[k] = v
        except OSError:
            pass
        return info

    def corrupt(self):
        """A parked sandbox's info file, snapshot or disk overlay damaged
        (truncated to half, or its first 4 KiB garbage), then a resume:
        either it runs, or it is refused with one clear error and stays
        parked (then killed: gone, nothing left).  Its files are not
        checked: the damage, not ember, may have lost them."""
        with self.lock:
            parked = [i for i, x in self.live.items() if x.get("parked") and not x["busy"]]
            i = self.rng.choice(parked) if parked else None
            if i:
                self.live[i]["busy"] = True
        if not i:
            # None parked: one parked for it.
            i = self.take()
            if not i:
                return None
            if self.ctl("park", ["pause", "--to-disk", i]) is None:
                self.give(i)
                return None
        d = os.path.join(self.state, i)
        snaps = sorted(f for f in os.listdir(d) if f.endswith(".state")) if os.path.isdir(d) else []
        kind = self.rng.choice(["info", "snapshot", "overlay"])
        name = {"info": "info", "snapshot": snaps[-1] if snaps else "info",
                "overlay": "rootfs.ext4"}[kind]
        path = os.path.join(d, name)
        try:
            if self.rng.random() < 0.5:
                os.truncate(path, os.path.getsize(path) // 2)
                how = "truncated"
            else:
                with open(path, "r+b") as f:
                    f.write(os.urandom(4096))
                how = "garbage"
        except OSError:
            self.give(i)
            return None
        what = "%s %s" % (kind, how)
        p = subprocess.run([self.a.emberctl, "resume", i], capture_output=True, timeout=300)
        err = p.stderr.decode(errors="replace").strip().splitlines()
        st = self.settle(i)
        if p.returncode == 0:
            outcome = "resumed, " + st
        elif st in ("parked", "gone") and len(err) >= 1:
            outcome = "refused, " + st
            self.err("resume of a damaged park", re.sub(r"[0-9a-f]{12}", "ID", err[0])[:100])
        else:
            outcome = "resume %d, %s" % (p.returncode, st)
            self.unsettled.append("%s after its %s: resume exit %d, %s: %s" % (
                i, what, p.returncode, st, "; ".join(err)[:200]))
        subprocess.run([self.a.emberctl, "kill", i], capture_output=True, timeout=300)
        if self.look(i) != "gone" and self.settle(i) != "gone":
            self.unsettled.append("%s after its %s: kill left %s" % (i, what, self.look(i)))
        with self.lock:
            self.live.pop(i, None)
        return (what, i, outcome)

    def fault(self, n):
        if self.rng.random() < self.a.corrupt_share:
            return self.corrupt()
        what = self.rng.choice(["ember", "supervisor", "client"])
        if what == "client":
            with self.lock:
                busy = list(self.clients.values())
            if not busy:
                return None
            p = self.rng.choice(busy)
            try:
                p.send_signal(signal.SIGKILL)
            except OSError:
                return None
            return ("emberctl client", None)
        with self.lock:
            ids = list(self.live)
        if not ids:
            return None
        i = self.rng.choice(ids)
        info = self.pids(i)
        pid = int(info.get("ember" if what == "ember" else "supervisor", "0") or 0)
        why = None
        if info.get("parked") == "1":
            why = "parked: no %s" % what
        elif pid <= 0:
            why = "no %s pid yet" % what
        else:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError as e:
                why = "%s: %s" % (what, e.strerror)
        if why and why.startswith("parked"):
            return self.corrupt()  # a parked one: its files damaged instead
        if why:
            self.refused[why] = self.refused.get(why, 0) + 1
            return None
        return (what, i)

    def look(self, i):
        st = self.ls().get(i)
        if st in ("running", "paused", "parked"):
            return st
        if st is None and not os.path.isdir(os.path.join(self.state, i)):
            return "gone"
        return None

    def settle(self, i, wait=60):
        """@i's state once it settles (the same twice, 1 s apart):
        running, paused, parked or gone."""
        end = now() + wait
        last = None
        while now() < end:
            st = self.look(i)
            if st and st == last:
                return st
            last = st
            time.sleep(1)
        return "unsettled (%s, dir %s)" % (self.ls().get(i), os.path.isdir(os.path.join(self.state, i)))

    def ls(self):
        try:
            out = subprocess.run([self.a.emberctl, "ls"], capture_output=True,
                                 timeout=60).stdout.decode()
        except subprocess.TimeoutExpired:
            return {}
        res = {}
        for line in out.splitlines()[1:]:
            f = line.split()
            if len(f) >= 5 and ID_RE.match(f[0]):
                res[f[0]] = f[4]
        return res

    def faulter(self):
        done = 0
        tries = 0
        while done < self.a.faults and not self.stop.is_set() and tries < self.a.faults * 20:
            tries += 1
            time.sleep(self.rng.uniform(0.2, self.a.fault_gap))
            f = self.fault(done)
            if not f:
                continue
            done += 1
            if len(f) == 3:
                self.faults.append(f)
                continue
            what, i = f
            if i is None:
                self.faults.append((what, "-", "killed"))
                continue
            st = self.settle(i)
            if st.startswith("unsettled"):
                self.unsettled.append("%s after SIGKILL of its %s: %s" % (i, what, st))
            elif st == "gone":
                with self.lock:
                    s = self.live.get(i)
                    if s and not s["busy"]:
                        self.live.pop(i, None)
            self.faults.append((what, i, st))

    # ---- accounting -------------------------------------------------------
    def census(self):
        c = {}
        sd = self.state
        c["processes of the state directory"] = len(self.state_procs())
        with open("/proc/sys/fs/file-nr") as f:
            c["open files (file-nr)"] = int(f.read().split()[0])
        with open("/proc/mounts") as f:
            c["mounts"] = len(f.readlines())
        c["tap devices"] = len([n for n in os.listdir("/sys/class/net") if n.startswith("tap") or n.startswith("ember")])
        c["network namespaces"] = len(os.listdir("/run/netns")) if os.path.isdir("/run/netns") else 0
        ncg = 0
        for _, dirs, _ in os.walk("/sys/fs/cgroup"):
            ncg += len(dirs)
        c["cgroups"] = ncg
        with open("/proc/net/unix") as f:
            c["Unix sockets"] = len(f.readlines()) - 1
        c["state directory entries"] = len([e for e in os.listdir(sd) if e != "templates"]) if os.path.isdir(sd) else 0
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    c["MemAvailable MiB"] = int(line.split()[1]) // 1024
        return c

    def state_procs(self):
        res = []
        for p in os.listdir("/proc"):
            if not p.isdigit() or int(p) == os.getpid():
                continue
            try:
                with open("/proc/%s/cmdline" % p, "rb") as f:
                    cmd = f.read().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            if self.state + "/" in cmd or "emberctl-sup" in cmd:
                res.append(p)
        return res


class Mcp:
    """One MCP session over ember-mcp's Streamable HTTP (JSON or SSE)."""

    def __init__(self, url, token):
        self.url, self.token, self.sid, self.n = url, token, None, 0
        r = self.rpc("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                    "clientInfo": {"name": "ember-soak", "version": "1"}})
        if "result" not in r:
            raise RuntimeError("initialize: %s" % r)
        self.post({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def post(self, msg):
        h = {"Content-Type": "application/json", "Authorization": "Bearer " + self.token,
             "Accept": "application/json, text/event-stream"}
        if self.sid:
            h["Mcp-Session-Id"] = self.sid
        req = urllib.request.Request(self.url, json.dumps(msg).encode(), h)
        with urllib.request.urlopen(req, timeout=600) as resp:
            self.sid = resp.headers.get("Mcp-Session-Id") or self.sid
            body = resp.read().decode()
            ctype = resp.headers.get("Content-Type", "")
        if not body:
            return {}
        if ctype.startswith("text/event-stream"):
            last = {}
            for line in body.splitlines():
                if line.startswith("data:"):
                    m = json.loads(line[5:])
                    if m.get("id") == msg.get("id"):
                        last = m
            return last
        return json.loads(body)

    def rpc(self, method, params):
        self.n += 1
        return self.post({"jsonrpc": "2.0", "id": self.n, "method": method, "params": params})

    def call(self, tool, **args):
        """(structuredContent, None) or (None, why)."""
        try:
            r = self.rpc("tools/call", {"name": tool, "arguments": args})
        except (urllib.error.URLError, OSError, ValueError) as e:
            return None, "HTTP: %s" % getattr(e, "reason", e)
        if "error" in r:
            return None, "JSON-RPC %s" % r["error"].get("message", "")
        res = r.get("result", {})
        if res.get("isError"):
            txt = " ".join(c.get("text", "") for c in res.get("content", []))
            return None, txt.strip().splitlines()[0] if txt.strip() else "tool error"
        return res.get("structuredContent", {}), None


def pct(v, q):
    v = sorted(v)
    return v[min(len(v) - 1, int(len(v) * q))] * 1000


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--emberctl", default="build/emberctl")
    ap.add_argument("--template", required=True)
    ap.add_argument("--sandboxes", type=int, default=24, help="created in all (N)")
    ap.add_argument("--live", type=int, default=4, help="live at once (C)")
    ap.add_argument("--clients", type=int, default=3, help="clients in parallel (K)")
    ap.add_argument("--seconds", type=float, default=120)
    ap.add_argument("--max-seconds", type=float, default=0,
                    help="with faults, go on past --seconds until all are in, up to this")
    ap.add_argument("--faults", type=int, default=0)
    ap.add_argument("--fault-gap", type=float, default=3.0, help="most seconds between faults")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--corrupt-share", type=float, default=0.25,
                    help="of the faults, the share that damage a parked sandbox's files")
    ap.add_argument("--mem-bound-mib", type=int, default=256,
                    help="MemAvailable may end at most this much lower")
    ap.add_argument("--tmp", default="/tmp")
    ap.add_argument("--mcp-url", help="ember-mcp's http://ADDR:PORT/mcp")
    ap.add_argument("--mcp-token", default="")
    ap.add_argument("--mcp-clients", type=int, default=1,
                    help="of the clients, how many go through ember-mcp")
    a = ap.parse_args()
    s = Soak(a)
    before = s.census()
    t0 = now()
    nmcp = min(a.mcp_clients, a.clients) if a.mcp_url else 0
    threads = [threading.Thread(target=s.mcp_client if k < nmcp else s.client,
                                name="client-%d" % k) for k in range(a.clients)]
    if a.faults:
        threads.append(threading.Thread(target=s.faulter, name="faults"))
    for t in threads:
        t.start()
    # The set time; with faults, on until all of them are in (--max-seconds).
    while True:
        time.sleep(0.5)
        t = now() - t0
        if t >= max(a.seconds, a.max_seconds) or (
                t >= a.seconds and len(s.faults) >= a.faults):
            break
    s.stop.set()
    for t in threads:
        t.join()
    ran = now() - t0
    # Every sandbox left: accounted for, its files whole (a parked one
    # resumed for it), then killed.
    states = s.ls()
    for i in list(s.live):
        st = states.get(i)
        d = os.path.isdir(os.path.join(s.state, i))
        if st is None and d:
            st = s.settle(i)
        if st is None or st == "gone":
            continue
        if st.startswith("unsettled"):
            s.unsettled.append("%s at the end: %s" % (i, st))
            continue
        if st in ("paused", "parked"):
            s.ctl("resume at the end", ["resume", i])
        s.files_ok(i, "end")
    for i in s.ls():
        s.ctl("kill at the end", ["kill", i])
    # What the servers close on their own sweep (ember-mcp's: 5 s) may take
    # that long: the counts get 15 s to come back.
    t1 = now()
    while True:
        time.sleep(1)
        after = s.census()
        if now() - t1 > 15 or all(after[k] <= before[k] for k in before
                                  if k not in ("MemAvailable MiB", "open files (file-nr)")):
            break

    nops = sum(len(v) for v in s.lat.values())
    print("soak: %d clients (%d through ember-mcp, the rest emberctl), up to %d sandboxes live, "
          "%d created, %.0f s; seed %d" % (a.clients, nmcp, a.live, s.created, ran, a.seed))
    print("  %.2f operations/s (%d ok, %d failed)" % (nops / ran, nops, sum(s.errors.values())))
    print("  %-22s %6s %10s %10s" % ("operation", "count", "p50 ms", "p99 ms"))
    for op in sorted(s.lat):
        v = s.lat[op]
        print("  %-22s %6d %10.0f %10.0f" % (op, len(v), pct(v, 0.5), pct(v, 0.99)))
    if s.errors:
        print("  errors by kind:")
        for k in sorted(s.errors):
            print("    %4d  %s" % (s.errors[k], k))
    if a.faults:
        kinds = {}
        for what, _, st in s.faults:
            kinds.setdefault(what, {}).setdefault(st, 0)
            kinds[what][st] += 1
        print("  faults injected: %d (drawn without a target there, not counted: %s)" % (
            len(s.faults), ", ".join("%s %d" % kv for kv in sorted(s.refused.items())) or "none"))
        for what in sorted(kinds):
            print("    %-28s then: %s" % (what if " " in what and what != "emberctl client" else "SIGKILL of " + what, ", ".join(
                "%s %d" % (k, n) for k, n in sorted(kinds[what].items()))))
    bad = []
    print("  %-36s %10s %10s" % ("", "before", "after"))
    for k in before:
        print("  %-36s %10d %10d" % (k, before[k], after[k]))
        if k == "MemAvailable MiB":
            if after[k] < before[k] - a.mem_bound_mib:
                bad.append("MemAvailable %d MiB lower" % (before[k] - after[k]))
        elif k == "open files (file-nr)":
            if after[k] > before[k] + 64:
                bad.append("%d more open files" % (after[k] - before[k]))
        elif after[k] > before[k]:
            bad.append("%s: %d more" % (k, after[k] - before[k]))
    for u in s.unsettled:
        bad.append("unsettled: " + u)
    for l in s.lost:
        bad.append("lost: " + l)
    nfiles = sum(len(x["files"]) for x in s.live.values())
    print("  acknowledged files checked at the end: %d, lost: %d" % (nfiles, len(s.lost)))
    if bad:
        print("soak: NOT CLEAN:")
        for b in bad:
            print("  " + b)
        return 1
    print("soak: clean (nothing leaked, nothing acknowledged lost, every sandbox accounted for)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
