#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A small client of the code interpreter's protocol (guest-init/INTERP.md),
written from the document, for the tests.

  interp_tool.py check ADDR        the protocol checks, as "ok - ..." lines
  interp_tool.py users ADDR DEFAULT OTHER
                                   contexts as guest users (the server's
                                   defaults name DEFAULT), as "ok - ..."
  interp_tool.py time ADDR         round-trip timings, as "# ..." lines
  interp_tool.py run ADDR JSON     send one request, print the answer lines

ADDR is unix:PATH (the server's own Unix socket) or vsock:PATH (ember's
vsock Unix socket of a sandbox: CONNECT 49999 first).
"""
import base64
import json
import os
import socket
import sys
import time

PORT = 49999
# The lines that end an answer; an execute's stream ends with the last.
LAST = {"pong", "context", "contexts", "ok", "failure", "end_of_execution"}


class Client:
    def __init__(self, addr, timeout=120):
        kind, _, path = addr.partition(":")
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(timeout)
        self.sock.connect(path)
        self.f = self.sock.makefile("rwb")
        if kind == "vsock":
            self.f.write(b"CONNECT %d\n" % PORT)
            self.f.flush()
            ok = self.f.readline()
            if not ok.startswith(b"OK "):
                raise OSError("vsock CONNECT answered %r" % ok)
        elif kind != "unix":
            raise ValueError("ADDR: unix:PATH or vsock:PATH")

    def send_raw(self, data):
        self.f.write(data)
        self.f.flush()

    def read(self):
        """The lines of one answer, up to and including its last."""
        out = []
        while True:
            line = self.f.readline()
            if not line:
                raise EOFError("connection closed after %r" % out)
            m = json.loads(line)
            out.append(m)
            if m.get("type") in LAST:
                return out

    def req(self, **r):
        self.send_raw((json.dumps(r) + "\n").encode())
        return self.read()

    def close(self):
        # The file object holds the socket open too.
        self.f.close()
        self.sock.close()


def of(events, kind):
    return [e for e in events if e.get("type") == kind]


def main_text(events):
    r = [e for e in of(events, "result") if e.get("is_main_result")]
    return r[0].get("text") if len(r) == 1 else None


def stdout(events):
    return "".join(e["text"] for e in of(events, "stdout"))


def alive(pid):
    """True if pid runs (a zombie counts as dead)."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError):
        return False


class Checks:
    def __init__(self, addr):
        self.addr = addr
        self.c = Client(addr)
        self.failed = 0

    def check(self, name, cond, detail=None):
        if cond:
            print("ok - interp: %s" % name)
        else:
            self.failed += 1
            print("not ok - interp: %s" % name)
            for line in json.dumps(detail)[:2000].splitlines():
                print("#   %s" % line)
        sys.stdout.flush()

    def run(self):
        c = self.c
        ev = c.req(op="ping")
        self.check("ping answers pong version 2",
                   ev == [{"type": "pong", "version": 2}], ev)

        ev1 = c.req(op="execute", code="x = 1")
        ev2 = c.req(op="execute", code="x += 1; x")
        self.check("python: state kept across calls, last expression's repr",
                   main_text(ev2) == "2" and not of(ev1, "result")
                   and ev2[-1] == {"type": "end_of_execution"},
                   [ev1, ev2])
        n1 = of(ev1, "number_of_executions")
        n2 = of(ev2, "number_of_executions")
        self.check("python: execution count grows by one a call",
                   len(n1) == 1 and len(n2) == 1 and
                   n2[0]["execution_count"] == n1[0]["execution_count"] + 1
                   and ev2[-2]["type"] == "number_of_executions", [ev1, ev2])

        code = ("import sys, time\nprint('one')\nsys.stdout.flush()\n"
                "time.sleep(0.2)\nprint('two', file=sys.stderr)\n"
                "print('three')\n'value'")
        ev = c.req(op="execute", code=code)
        kinds = [(e["type"], e.get("text")) for e in ev
                 if e["type"] in ("stdout", "stderr", "result")]
        # A kernel's stream may send print()'s "one" and "\n" apart (its
        # timed flush falling between them on a loaded host).
        self.check("python: stdout and stderr stream in order, result last",
                   stdout(ev) == "one\nthree\n"
                   and "".join(k[1] for k in kinds if k[0] == "stderr")
                   == "two\n"
                   and kinds[0] in (("stdout", "one\n"), ("stdout", "one"))
                   and kinds[-1] == ("result", "'value'"), ev)

        ev = c.req(op="execute", code="import subprocess\n"
                   "subprocess.run(['echo', 'from a child'])\nNone")
        self.check("python: a started process's output is streamed",
                   stdout(ev) == "from a child\n" and not of(ev, "result"),
                   ev)

        ev = c.req(op="execute", code=(
            "import pandas as pd\n"
            "df = pd.DataFrame({'a': [1, 2, 3], 'b': [4.0, 5.0, 6.0]})\n"
            "df['c'] = df.a * df.b\ndf"))
        r = [e for e in of(ev, "result") if e.get("is_main_result")]
        self.check("python: pandas DataFrame as text and html",
                   len(r) == 1 and "18.0" in r[0].get("text", "")
                   and "<table" in r[0].get("html", ""), ev)
        ev = c.req(op="execute", code="int(df.c.sum())")
        self.check("python: pandas computation", main_text(ev) == "32", ev)

        ev = c.req(op="execute", code=(
            "import matplotlib.pyplot as plt\n"
            "plt.plot([1, 2, 3], [1, 4, 9])\nplt.show()\n"
            "fig = plt.figure(); fig.gca().bar([1], [2])\nprint('drawn')"))
        pngs = [base64.b64decode(e["png"]) for e in of(ev, "result")
                if "png" in e and e.get("is_main_result") is False]
        self.check("python: every open figure is a PNG result, no warning",
                   len(pngs) == 2 and
                   all(p.startswith(b"\x89PNG\r\n\x1a\n") for p in pngs)
                   and not of(ev, "stderr") and stdout(ev) == "drawn\n",
                   [str(e)[:200] for e in ev])
        ev = c.req(op="execute", code="len(plt.get_fignums())")
        self.check("python: figures are closed after the call",
                   main_text(ev) == "0", ev)

        ev = c.req(op="execute", code="def f():\n    return 1 / 0\nf()")
        err = of(ev, "error")
        tb = err[0].get("traceback", "") if err else ""
        self.check("python: exception as name, value, traceback",
                   len(err) == 1 and err[0]["name"] == "ZeroDivisionError"
                   and err[0]["value"] == "division by zero"
                   and "return 1 / 0" in tb and "py_worker" not in tb
                   and tb.rstrip().endswith("division by zero"), ev)
        ev = c.req(op="execute", code="x +* 1")
        err = of(ev, "error")
        self.check("python: syntax error reported",
                   len(err) == 1 and err[0]["name"] == "SyntaxError", ev)

        ev = c.req(op="execute", code="import os; os.environ.get('EMBER_T')",
                   env={"EMBER_T": "v1"})
        ev2 = c.req(op="execute", code="os.environ.get('EMBER_T')")
        self.check("python: env is set for one call only",
                   main_text(ev) == "'v1'" and not of(ev2, "result"),
                   [ev, ev2])

        t0 = time.monotonic()
        ev = c.req(op="execute", code="y = 5\nwhile True:\n    pass",
                   timeout_ms=500)
        dt = time.monotonic() - t0
        err = of(ev, "error")
        self.check("python: a runaway loop stops at its timeout",
                   len(err) == 1 and err[0]["name"] == "TimeoutError"
                   and "timed out" in err[0]["value"] and 0.4 < dt < 2.0,
                   [dt, ev])
        ev = c.req(op="execute", code="x + y")
        self.check("python: the context still works and keeps its state",
                   main_text(ev) == "7", ev)

        ev = c.req(op="execute", code="import os\nos.system('sleep 60')",
                   timeout_ms=300)
        err = of(ev, "error")
        ev2 = c.req(op="execute", code="'x' in dir()")
        self.check("python: a call deaf to SIGINT is killed, context "
                   "restarted",
                   len(err) == 1 and err[0]["name"] == "TimeoutError"
                   and "restarted" in err[0]["value"]
                   and main_text(ev2) == "False", [ev, ev2])

        for part in (self.javascript, self.contexts, self.bad_input,
                     self.disconnect):
            try:
                part()
            except (OSError, EOFError, ValueError) as e:
                # A hung or broken server: name the part, go on.
                self.check("%s: no error talking to the server"
                           % part.__name__, False, repr(e))
                self.c.close()
                self.c = Client(self.addr)
        kernel_features(self)
        return self.failed

    def javascript(self):
        c = self.c
        ev1 = c.req(op="execute", language="javascript",
                    code="let n = 40; const f = (a) => a + 1;\n"
                    "function g() { return 'g'; }\nconsole.log('log', 1);"
                    " console.error('err'); n")
        ev2 = c.req(op="execute", language="javascript",
                    code="f(n) + ({a: 1}).a + g().length")
        self.check("javascript: state kept across calls, console streamed",
                   main_text(ev1) == "40" and main_text(ev2) == "43"
                   and stdout(ev1) == "log 1\n"
                   and "".join(e["text"] for e in of(ev1, "stderr"))
                   == "err\n", [ev1, ev2])
        ev = c.req(op="execute", language="javascript",
                   code="const os = require('os'); ({k: [1, 'a']})")
        self.check("javascript: require works, util.inspect text",
                   main_text(ev) == "{ k: [ 1, 'a' ] }", ev)
        ev = c.req(op="execute", language="javascript",
                   code="new Promise((r) => setTimeout(() => r(6 * 7), 50))")
        self.check("javascript: a Promise is awaited", main_text(ev) == "42",
                   ev)
        ev = c.req(op="execute", language="javascript",
                   code="function h() { null.x; }\nh()")
        err = of(ev, "error")
        self.check("javascript: error as name, message, stack",
                   len(err) == 1 and err[0]["name"] == "TypeError"
                   and "null" in err[0]["value"]
                   and "at h" in err[0]["traceback"]
                   and "js_worker" not in err[0]["traceback"], ev)
        t0 = time.monotonic()
        ev = c.req(op="execute", language="javascript",
                   code="while (true) {}", timeout_ms=500)
        dt = time.monotonic() - t0
        err = of(ev, "error")
        ev2 = c.req(op="execute", language="javascript", code="n + 2")
        self.check("javascript: a runaway loop stops, the context keeps "
                   "its state",
                   len(err) == 1 and err[0]["name"] == "TimeoutError"
                   and dt < 2.0 and main_text(ev2) == "42", [dt, ev, ev2])
        ev = c.req(op="execute", language="javascript",
                   code="new Promise(() => {})", timeout_ms=300)
        err = of(ev, "error")
        self.check("javascript: a Promise that never settles times out",
                   len(err) == 1 and err[0]["name"] == "TimeoutError", ev)
        js_features(self)

    def contexts(self):
        c = self.c
        ev = c.req(op="create_context", language="python", cwd="/tmp")
        ctx = ev[0].get("context", {})
        cid = ctx.get("id", "")
        self.check("create_context gives a 16-hex-digit id",
                   ev[0]["type"] == "context" and len(cid) == 16
                   and all(ch in "0123456789abcdef" for ch in cid)
                   and ctx.get("language") == "python"
                   and ctx.get("cwd") == "/tmp", ev)
        ev = c.req(op="execute", context=cid, language="javascript",
                   code="import os\nz = 3\nos.getcwd()")
        ev2 = c.req(op="execute", code="'z' in dir()")
        self.check("a created context runs apart, in its cwd, its language",
                   main_text(ev) == "'/tmp'" and main_text(ev2) == "False",
                   [ev, ev2])
        ev = c.req(op="list_contexts")
        ids = {x["id"] for x in ev[0].get("contexts", [])}
        self.check("list_contexts lists the defaults and the new one",
                   {"python", "javascript", cid} <= ids, ev)

        ev = c.req(op="execute", context=cid, code=(
            "import subprocess\n"
            "p = subprocess.Popen(['sleep', '300'])\np.pid"))
        pid = int(main_text(ev) or 0)
        ok = c.req(op="restart_context", context=cid)
        ev2 = c.req(op="execute", context=cid, code="'z' in dir()")
        deadline = time.monotonic() + 5
        while pid and alive(pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        self.check("restart_context: fresh state, the call's processes end",
                   ok == [{"type": "ok"}] and main_text(ev2) == "False"
                   and pid > 0 and not alive(pid), [ev, ok, ev2, pid])

        ev = c.req(op="execute", language="javascript", code="n")
        ok = c.req(op="restart_context", context="javascript")
        ev2 = c.req(op="execute", language="javascript",
                    code="typeof n")
        self.check("restart_context on a default JavaScript context",
                   main_text(ev) == "40" and ok == [{"type": "ok"}]
                   and main_text(ev2) == "'undefined'", [ev, ok, ev2])

        ok = c.req(op="delete_context", context=cid)
        ev = c.req(op="list_contexts")
        gone = cid not in [x["id"] for x in ev[0].get("contexts", [])]
        ev2 = c.req(op="execute", context=cid, code="1")
        self.check("delete_context forgets it",
                   ok == [{"type": "ok"}] and gone
                   and ev2[0]["type"] == "failure", [ok, ev, ev2])
        ev = c.req(op="delete_context", context="python")
        self.check("a default context cannot be deleted",
                   ev[0]["type"] == "failure", ev)

    def bad_input(self):
        c = self.c
        for name, data in (("unknown op", b'{"op":"nope"}\n'),
                           ("malformed JSON", b'{"op": ping\n'),
                           ("not an object", b'[1, 2]\n'),
                           ("unknown context",
                            b'{"op":"execute","code":"1","context":"zz"}\n'),
                           ("bad language",
                            b'{"op":"execute","code":"1","language":"c"}\n')):
            c.send_raw(data)
            ev = c.read()
            ping = c.req(op="ping")
            self.check("%s: failure, the connection stays usable" % name,
                       len(ev) == 1 and ev[0]["type"] == "failure"
                       and isinstance(ev[0].get("message"), str)
                       and ping == [{"type": "pong", "version": 2}],
                       [ev, ping])

    def disconnect(self):
        # A connection that closes mid-execute interrupts the call.
        d = Client(self.addr)
        d.send_raw(b'{"op":"execute","code":"w = 0\\nwhile True:\\n'
                   b'    w += 1"}\n')
        time.sleep(0.3)
        d.close()
        time.sleep(0.3)
        t0 = time.monotonic()
        ev = self.c.req(op="execute", code="w > 0")
        self.check("a closed connection interrupts its call",
                   main_text(ev) == "True" and time.monotonic() - t0 < 2.0,
                   ev)
        # Two connections at once, on different contexts.
        a = Client(self.addr)
        a.send_raw(b'{"op":"execute","code":"import time; time.sleep(1);'
                   b' 1"}\n')
        t0 = time.monotonic()
        ev = self.c.req(op="execute", language="javascript", code="2")
        dt = time.monotonic() - t0
        ev_a = a.read()
        a.close()
        self.check("calls on different contexts run at once",
                   main_text(ev) == "2" and dt < 0.8
                   and main_text(ev_a) == "1", [dt, ev, ev_a])


def results(events):
    return of(events, "result")


def errors_named(events, name):
    err = of(events, "error")
    return len(err) == 1 and err[0]["name"] == name


def stderr(events):
    return "".join(e["text"] for e in of(events, "stderr"))


def kernel_features(checks):
    """Python contexts as IPython kernels (issue 25), and what both
    Python paths must do with bad input.  The kernel path is expected
    unless EMBER_INTERP_NO_KERNEL=1 (then the server runs py_worker.py,
    the fallback for images without ipykernel)."""
    kernel = os.environ.get("EMBER_INTERP_NO_KERNEL") != "1"
    try:
        KernelChecks(checks, kernel).run()
    except (OSError, EOFError, ValueError) as e:
        checks.check("kernel features: no error talking to the server",
                     False, repr(e))


class KernelChecks:
    def __init__(self, checks, kernel):
        self.checks = checks
        self.kernel = kernel
        self.path = "kernel" if kernel else "fallback"
        self.c = Client(checks.addr, timeout=300)

    def check(self, name, cond, detail=None):
        self.checks.check("%s: %s" % (self.path, name), cond, detail)

    def ex(self, code, **kw):
        return self.c.req(op="execute", code=code, **kw)

    def run(self):
        ev = self.ex("import sys\nio = sys.modules.get('ipykernel.iostream')"
                     "\nio is not None and isinstance(sys.stdout, io.OutStream)")
        self.check("python contexts run on the expected path",
                   main_text(ev) == str(self.kernel), ev)
        if self.kernel:
            self.notebook()
            self.magics()
            self.pip()
            self.interrupts()
            self.displays()
        self.bad_input()

    def notebook(self):
        ev = self.ex("from IPython.display import display, HTML\n"
                     "display(HTML('<b>hi</b>'))\nprint('between')\n41 + 1")
        kinds = [e["type"] for e in ev if e["type"] in ("result", "stdout")]
        # The kernel's stdout may come as several chunks (a flush of its
        # buffer can fall between print's two writes): one run of them.
        kinds = [k for i, k in enumerate(kinds)
                 if i == 0 or k != "stdout" or kinds[i - 1] != "stdout"]
        r = results(ev)
        self.check("display(HTML) then a value: 2 results, in order",
                   kinds == ["result", "stdout", "result"] and len(r) == 2
                   and r[0]["is_main_result"] is False
                   and r[0].get("html") == "<b>hi</b>"
                   and r[0].get("text") == "<IPython.core.display.HTML object>"
                   and r[1]["is_main_result"] is True
                   and r[1].get("text") == "42" and "html" not in r[1], ev)

        ev = self.ex("import matplotlib.pyplot as plt\n"
                     "plt.plot([1, 2, 3])\nNone")
        r = results(ev)
        png = base64.b64decode(r[0].get("png", "")) if len(r) == 1 else b""
        self.check("a figure from plt.plot: display_data with a PNG",
                   len(r) == 1 and r[0]["is_main_result"] is False
                   and png.startswith(b"\x89PNG\r\n\x1a\n")
                   and r[0].get("text", "").startswith("<Figure size")
                   and not of(ev, "error"), [str(e)[:200] for e in ev])

        ev = self.ex("from IPython.display import Markdown, SVG, JSON\n"
                     "display(Markdown('# t'))\n"
                     "display(SVG('<svg xmlns=\"http://www.w3.org/2000/svg\"/>'))\n"
                     "display({'application/x-ember-test': {'k': [1]},"
                     " 'text/plain': 'p'}, raw=True)\n"
                     "JSON({'a': [1, 2]})")
        r = results(ev)
        self.check("markdown, svg, extra and json members",
                   len(r) == 4 and r[0].get("markdown") == "# t"
                   and r[1].get("svg", "").startswith("<svg")
                   and r[2].get("extra") == {"application/x-ember-test":
                                             {"k": [1]}}
                   and r[2].get("text") == "p"
                   and r[3].get("json") == {"a": [1, 2]}
                   and r[3]["is_main_result"] is True, ev)

        ev = self.ex("x = 1\n1/0")
        err = of(ev, "error")
        tb = err[0].get("traceback", "") if err else ""
        self.check("an error: IPython's traceback, the cell's line, no ANSI",
                   len(err) == 1 and err[0]["name"] == "ZeroDivisionError"
                   and "Cell In" in tb and "line 2" in tb
                   and "----> 2 1/0" in tb and "\x1b" not in tb
                   and "py_kernel" not in tb, ev)

        ev = self.ex("input('name? ')")
        self.check("input(): one clear error",
                   errors_named(ev, "StdinNotImplementedError"), ev)

        self.ex("before_exit = 1")
        ev = self.ex("exit()")
        time.sleep(0.3)
        ev2 = self.ex("import sys\nsys.exit(3)")
        ev3 = self.ex("before_exit")
        self.check("exit() is ignored, sys.exit(3) is an error",
                   not of(ev, "error") and errors_named(ev2, "SystemExit")
                   and main_text(ev3) == "1", [ev, ev2, ev3])

        ev = self.ex("import asyncio\nawait asyncio.sleep(0)\n'awaited'")
        self.check("top-level await",
                   main_text(ev) == "'awaited'" and not of(ev, "error"), ev)

    def magics(self):
        # A pty's line ends, as Jupyter gives them (and so E2B).
        ev = self.ex("!echo hi")
        self.check("!echo hi: stdout hi, the pty's \\r\\n kept",
                   stdout(ev) == "hi\r\n" and not of(ev, "error"), ev)
        ev = self.ex("%time 1+1")
        self.check("%time 1+1: Wall time, then the value",
                   "Wall time" in stdout(ev) and main_text(ev) == "2", ev)
        ev = self.ex("%%bash\necho $((1+1))")
        self.check("%%bash", stdout(ev) == "2\n" and not of(ev, "error"),
                   ev)
        # A forked child's print() (multiprocessing's default on Linux)
        # reaches the call's stdout, and the kernel goes on after it.
        ev = self.ex("import multiprocessing as mp\n"
                     "p = mp.Process(target=print, args=('from child',))\n"
                     "p.start(); p.join(); p.exitcode")
        self.check("a forked child's print: in stdout, exit code 0",
                   "from child" in stdout(ev) and main_text(ev) == "0"
                   and not of(ev, "error"), ev)
        ev = self.ex("print('after'); 1+1")
        self.check("the kernel answers after the forked child",
                   stdout(ev) == "after\n" and main_text(ev) == "2", ev)

    def pip(self):
        # The wheel is built where the context runs (the guest in a VM).
        env = {"PIP_BREAK_SYSTEM_PACKAGES": "1",
               "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
        ev = self.ex(
            "import os, subprocess, sys, tempfile\n"
            "d = tempfile.mkdtemp()\n"
            "src = os.path.join(d, 'src')\nos.mkdir(src)\n"
            "open(os.path.join(src, 'embertestpkg.py'), 'w')"
            ".write('VALUE = 41\\n')\n"
            "open(os.path.join(src, 'setup.py'), 'w').write("
            "'from setuptools import setup\\n"
            "setup(name=\"embertestpkg\", version=\"1.0\", "
            "py_modules=[\"embertestpkg\"])\\n')\n"
            "subprocess.run([sys.executable, '-m', 'pip', 'wheel', '-q',"
            " '--no-deps', '--no-build-isolation', '-w', d, src],"
            " check=True, capture_output=True)\n"
            "[f for f in os.listdir(d) if f.endswith('.whl')]", env=env)
        whl = main_text(ev) or ""
        self.check("pip: a wheel built in the context",
                   "embertestpkg-1.0-py3-none-any.whl" in whl, ev)
        ev = self.ex("%pip install -q --user --no-index --no-deps "
                     "{d}/embertestpkg-1.0-py3-none-any.whl", env=env)
        ev2 = self.ex("import embertestpkg\nembertestpkg.VALUE + 1")
        self.check("%pip install of a local wheel, imported the next cell",
                   not of(ev, "error") and main_text(ev2) == "42", [ev, ev2])
        self.ex("import shutil\nshutil.rmtree(d)")
        t0 = time.monotonic()
        ev = self.ex("%pip install --index-url http://127.0.0.1:9/ "
                     "--retries 0 --timeout 2 nosuchpkg", env=env)
        out = stdout(ev) + stderr(ev)
        self.check("%%pip install nosuchpkg: pip's own error (%.1f s)"
                   % (time.monotonic() - t0),
                   "No matching distribution found for nosuchpkg" in out, ev)

    def interrupts(self):
        self.ex("kept = 'k'")
        for name, code in (("time.sleep(1e9)", "import time\ntime.sleep(1e9)"),
                           ("await asyncio.sleep(100)",
                            "import asyncio\nawait asyncio.sleep(100)")):
            t0 = time.monotonic()
            ev = self.ex(code, timeout_ms=500)
            dt = time.monotonic() - t0
            err = of(ev, "error")
            ev2 = self.ex("kept")
            self.check("%s with a timeout: TimeoutError, state kept"
                       " (%.2f s)" % (name, dt),
                       len(err) == 1 and err[0]["name"] == "TimeoutError"
                       and "restarted" not in err[0]["value"]
                       and dt < 1.5 and main_text(ev2) == "'k'", [ev, ev2])
        if not self.kernel:
            return
        # A kernel that took SIGINT but needs longer than the 2 s grace
        # to answer (IPython's traceback took that long in the KVM box):
        # not killed, its state kept.  (The loop sleeps: CPython 3.11
        # does not catch a signal's exception in `try: while True: pass`.)
        code = ("import time\ntry:\n    while True: time.sleep(0.01)\n"
                "except KeyboardInterrupt:\n    time.sleep(3)\n    raise")
        ev = self.ex(code, timeout_ms=300)
        err = of(ev, "error")
        ev2 = self.ex("kept")
        self.check("interrupted, then 3 s to answer: TimeoutError, not"
                   " killed, state kept",
                   len(err) == 1 and err[0]["name"] == "TimeoutError"
                   and "restarted" not in err[0]["value"]
                   and main_text(ev2) == "'k'", [ev, ev2])
        # Interrupted while the kernel writes results of 512 KiB (pipe
        # writes in pieces): the interrupt lands between lines, never
        # inside one; the call ends with the timeout, the state kept.
        code = ("from IPython.display import display, HTML\n"
                "big = HTML('x' * (512 << 10))\n"
                "for i in range(80):\n    display(big)")
        ev = self.ex(code, timeout_ms=400)
        err = of(ev, "error")
        ev2 = self.ex("kept")
        self.check("interrupted among 512 KiB results: TimeoutError, whole"
                   " results, state kept",
                   len(err) == 1 and err[0]["name"] == "TimeoutError"
                   and "restarted" not in err[0]["value"]
                   and all(len(r.get("html", "")) == 512 << 10
                           for r in results(ev))
                   and main_text(ev2) == "'k'",
                   [[e.get("type"), len(json.dumps(e))] for e in ev] + [ev2])

    def displays(self):
        t0 = time.monotonic()
        ev = self.ex("for i in range(10000):\n    display(i)")
        r = results(ev)
        self.check("10 000 display(): 90 results and a note (%.1f s)"
                   % (time.monotonic() - t0),
                   len(r) == 90 and r[-1].get("text") == "89"
                   and "ember: 9910 more results were left out"
                   in stderr(ev), [len(r), stderr(ev)])
        ev = self.ex("h = display('a', display_id=True)\n"
                     "for i in range(1000):\n    h.update(i)")
        r = results(ev)
        self.check("update_display_data: only the last update is sent",
                   [x.get("text") for x in r] == ["'a'", "999"], ev)

    def bad_input(self):
        for name, code in (
                ("print", "for i in range(12000):\n    print('x' * 999)"),
                ("os.write", "import os\nfor i in range(3000):\n"
                 "    os.write(1, b'y' * 4095 + b'\\n')")):
            t0 = time.monotonic()
            ev = self.ex(code)
            dt = time.monotonic() - t0
            ev2 = self.ex("1+1")
            out = stdout(ev)
            self.check("an output flood (%s) is cut at 8 MiB with one note"
                       " (%.1f s)" % (name, dt),
                       len(out) <= 8 << 20 and len(out) > 7 << 20
                       and stderr(ev).count("ember: output over 8 MiB") == 1
                       and ev[-1]["type"] == "end_of_execution"
                       and main_text(ev2) == "2",
                       [len(out), stderr(ev)[:300], ev2])

        ev = self.ex("import os, sys\nos.write(1, os.urandom(4096))\n"
                     "print('\\udcff')\nsys.stdout.buffer.write(b'\\xff')\n"
                     "sys.stdout.flush()\nNone")
        ping = self.c.req(op="ping")
        self.check("binary garbage on stdout: U+FFFD, no protocol error",
                   "\ufffd" in stdout(ev) and not of(ev, "error")
                   and ev[-1]["type"] == "end_of_execution"
                   and ping[0]["type"] == "pong", [str(ev)[:300], ping])
        # Its last bytes may start a UTF-8 sequence: the next call's
        # output must not begin with the U+FFFD they make.
        ev = self.ex("os.write(1, b'\\xe2\\x82')\nNone")
        ev2 = self.ex("import subprocess\n"
                      "subprocess.run(['echo', 'clean'])\nNone")
        self.check("an unfinished UTF-8 sequence ends with its call",
                   stdout(ev) == "\ufffd" and stdout(ev2) == "clean\n",
                   [ev, ev2])

        # The code can write to the worker's control pipe (fd 4) too:
        # dropped, the call ends as usual, the server and state kept.
        self.ex("ctl_state = 'c'")
        ev = self.ex("import os\nfor b in (b'{bad json\\n', b'\\xff\\xfe\\n',"
                     " b'[1]\\n', b'{\"type\": \"done\", \"execution_count\":"
                     " \"z\"}\\n', b'{\"type\": \"stdout\", \"text\": 5}\\n',"
                     " b'x' * 70000 + b'\\n'):\n    os.write(4, b)\n7")
        ev2 = self.ex("ctl_state")
        ping = self.c.req(op="ping")
        self.check("garbage on the control pipe (fd 4): dropped, the call"
                   " ends, state and server kept",
                   main_text(ev) == "7" and main_text(ev2) == "'c'"
                   and ping and ping[0]["type"] == "pong", [ev, ev2, ping])

        ctx = self.c.req(op="create_context")[0]["context"]["id"]
        self.ex("other = 'state'")
        for name, code, words in (
                ("os._exit(1)", "import os\nos._exit(1)", "exited (1)"),
                ("a segfault", "import ctypes\nctypes.string_at(0)",
                 "killed by SIGSEGV (signal 11)")):
            self.ex("here = 1", context=ctx)
            ev = self.ex(code, context=ctx)
            err = of(ev, "error")
            ev2 = self.ex("'here' in dir(), 6 * 7", context=ctx)
            ev3 = self.ex("other")
            self.check("a kernel that dies (%s): ContextRestarted, a fresh"
                       " one works, another context's state intact" % name,
                       len(err) == 1 and err[0]["name"] == "ContextRestarted"
                       and words in err[0]["value"]
                       and main_text(ev2) == "(False, 42)"
                       and main_text(ev3) == "'state'", [ev, ev2, ev3])
        self.c.req(op="delete_context", context=ctx)


def js_features(checks):
    """Static import, top-level await and dynamic import() (INTERP.md,
    JavaScript), in a JavaScript context of their own, deleted at the
    end.  As "ok - ..." lines through @checks (a Checks)."""
    import re
    c, check = checks.c, checks.check
    ev = c.req(op="create_context", language="javascript")
    cid = (ev[-1].get("context") or {}).get("id")

    def js(code, **kw):
        return c.req(op="execute", context=cid, language="javascript",
                     code=code, **kw)

    def error(ev, name, value_has, line):
        """@ev is one error @name whose value has @value_has and whose
        traceback names the cell's line @line."""
        err = of(ev, "error")
        return (len(err) == 1 and err[0]["name"] == name
                and value_has in err[0]["value"]
                and re.search(r"<cell-\d+>:%d\b" % line, err[0]["traceback"])
                and "js_worker" not in err[0]["traceback"]
                and "node:repl" not in err[0]["traceback"])

    ev = js("import fs from 'fs'\nfs.existsSync('/')")
    ev2 = js("import fs from 'fs'\nfs === require('node:fs')")
    check("javascript: import fs from 'fs'; the cell can run again",
          main_text(ev) == "true" and main_text(ev2) == "true", [ev, ev2])
    ev = js("import {join, sep as s} from 'node:path';\njoin('a', 'b') + s")
    check("javascript: import {join, sep as s} from 'node:path'",
          main_text(ev) == "'a/b/'", ev)
    ev = js("import * as os from 'os'\nimport 'node:util'\ntypeof os.cpus")
    check("javascript: import * as os from 'os', import 'node:util'",
          main_text(ev) == "'function'", ev)
    ev = js("import nope from 'no-such-module'")
    check("javascript: importing a missing module says which",
          error(ev, "Error", "Cannot find module 'no-such-module'", 1), ev)

    ev = js("const x = await Promise.resolve(41); x+1")
    ev2 = js("x")
    check("javascript: top-level await gives the last value, its "
          "declarations persist",
          main_text(ev) == "42" and main_text(ev2) == "41", [ev, ev2])
    ev = js("let y = await 1;\nfunction f() { return y + 1; }\n"
            "class K {}\nawait null; f()")
    ev2 = js("[y, f(), typeof K]")
    check("javascript: let, function and class declared with await",
          main_text(ev) == "2" and main_text(ev2) == "[ 1, 2, 'function' ]",
          [ev, ev2])
    ev = js("const m = await import('node:os'); typeof m.platform")
    ev2 = js("import('node:path').then((p) => p.sep)")
    ev3 = js("1")               # node warns after the call, if at all
    check("javascript: dynamic import(), awaited and as a Promise; no "
          "warning",
          main_text(ev) == "'function'" and main_text(ev2) == "'/'"
          and not [e for e in ev + ev2 + ev3 if e["type"] == "stderr"],
          [ev, ev2, ev3])

    ev = js("import fs from 'fs'\nimport {\n  join\n} from 'path'\n"
            "null.x")
    check("javascript: an error's line number in a cell with imports",
          error(ev, "TypeError", "null", 5), ev)
    ev = js("await null;\nimport os from 'os'\nundeclared.x")
    check("javascript: an error's line number in an awaited cell",
          error(ev, "ReferenceError", "undeclared is not defined", 3), ev)
    ev = js("const z = await 1;\nlet = = 3")
    ev2 = js("1 +\n+ )")
    check("javascript: a syntax error stays a SyntaxError with its line",
          error(ev, "SyntaxError", "Unexpected token", 2)
          and error(ev2, "SyntaxError", "Unexpected token", 2), [ev, ev2])
    ev = js("if (true) { import x from 'x'; }")
    ev2 = js("export const e = 1")
    check("javascript: import in a block, export: SyntaxErrors",
          error(ev, "SyntaxError", "import", 1)
          and error(ev2, "SyntaxError", "export", 1), [ev, ev2])

    t0 = time.monotonic()
    ev = js("await new Promise(() => {})", timeout_ms=300)
    ev2 = js("while (true) {}\nawait 1", timeout_ms=300)
    dt = time.monotonic() - t0
    ev3 = js("x")
    check("javascript: an awaited cell stops at its timeout, the context "
          "keeps its state",
          [e["name"] for e in of(ev, "error") + of(ev2, "error")]
          == ["TimeoutError", "TimeoutError"] and dt < 3.0
          and main_text(ev3) == "41", [dt, ev, ev2, ev3])
    ok = c.req(op="delete_context", context=cid)
    check("javascript: its context deleted", ok == [{"type": "ok"}], ok)


def users(addr, default, other):
    """Contexts as guest users (INTERP.md, "Users"): the server's
    defaults file names @default (a name); @other is another user.  As
    "ok - ..." lines; returns the number that failed."""
    import pwd
    c = Checks(addr)
    d, o = pwd.getpwnam(default), pwd.getpwnam(other)
    code = "import os; print(os.getuid(), os.environ['HOME'])"
    ev = c.c.req(op="execute", code=code)
    c.check("users: python runs as the default user (%s)" % default,
            stdout(ev) == "%d %s\n" % (d.pw_uid, d.pw_dir), ev)
    ev = c.c.req(op="execute", language="javascript",
                 code="process.getuid()")
    c.check("users: javascript runs as the default user",
            main_text(ev) == str(d.pw_uid), ev)
    ev = c.c.req(op="execute", code=code, user=other)
    c.check("users: user %s gets its own default context" % other,
            stdout(ev) == "%d %s\n" % (o.pw_uid, o.pw_dir), ev)
    c.c.req(op="execute", code="kept = 41", user=other)
    ev = c.c.req(op="execute", code="kept + 1", user=other)
    c.check("users: that context keeps its state",
            main_text(ev) == "42", ev)
    ev = c.c.req(op="execute", code="'kept' in globals()")
    c.check("users: the default user's context does not see it",
            main_text(ev) == "False", ev)
    ev = c.c.req(op="execute", code=code, user="no-such-user")
    c.check("users: an unknown user is a failure that names it",
            ev[-1].get("type") == "failure"
            and "no-such-user" in ev[-1].get("message", ""), ev)
    ev = c.c.req(op="execute", code=code, context="python", user=other)
    c.check("users: a context asked as another user is refused",
            ev[-1].get("type") == "failure", ev)
    ev = c.c.req(op="create_context", user=other)
    ctx = ev[-1].get("context") or {}
    ev2 = c.c.req(op="execute", code=code, context=ctx.get("id"))
    c.check("users: create_context with user: the context runs as it",
            ctx.get("user") == other
            and stdout(ev2) == "%d %s\n" % (o.pw_uid, o.pw_dir), [ev, ev2])
    ev = c.c.req(op="list_contexts")
    got = {x["id"]: x.get("user") for x in ev[-1].get("contexts", [])}
    c.check("users: list_contexts says each context's user",
            got.get("python") == default
            and got.get("python:" + other) == other, ev)
    return c.failed


def timings(addr):
    c = Client(addr, timeout=600)
    for name, req in (
            ("ping", {"op": "ping"}),
            ("python 1+1", {"op": "execute", "code": "1+1"}),
            ("python 1+1 again", {"op": "execute", "code": "1+1"}),
            ("javascript 1+1", {"op": "execute", "language": "javascript",
                                "code": "1+1"}),
            ("javascript 1+1 again", {"op": "execute",
                                      "language": "javascript",
                                      "code": "1+1"}),
            ("python import pandas", {"op": "execute",
                                      "code": "import pandas; pandas.__version__"}),
            ("python pandas sum", {"op": "execute", "code":
                                   "pandas.DataFrame({'a': range(1000)}).a.sum()"}),
            ("python plot", {"op": "execute", "code":
                             "import matplotlib.pyplot as plt; plt.plot([1, 2])"}),
            ("python create_context", {"op": "create_context"})):
        t0 = time.monotonic()
        ev = c.req(**req)
        dt = time.monotonic() - t0
        print("# %-22s %8.1f ms  %s" % (name, dt * 1000, json.dumps(ev)[:120]))


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    cmd, addr = sys.argv[1], sys.argv[2]
    if cmd == "check":
        Checks(addr).run()          # failures are "not ok" lines
        return 0
    if cmd == "users" and len(sys.argv) == 5:
        return 1 if users(addr, sys.argv[3], sys.argv[4]) else 0
    if cmd == "time":
        timings(addr)
        return 0
    if cmd == "run" and len(sys.argv) == 4:
        c = Client(addr, timeout=600)
        for e in c.req(**json.loads(sys.argv[3])):
            print(json.dumps(e))
        return 0
    sys.exit(__doc__)


if __name__ == "__main__":
    sys.exit(main())
