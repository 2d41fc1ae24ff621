# SPDX-License-Identifier: Apache-2.0
"""A Python context as a real IPython kernel (guest-init/INTERP.md).

Runs in a process forked from the server, after the account switch and
the chdir, with the same fds as py_worker.py: 0 /dev/null, 1 and 2 the
pipes the server streams, REQ_FD the requests, CTL_FD the control lines
back (ready, stdout, stderr, result, error, done).

The main thread runs ipykernel's IPKernelApp in this process (no
launcher, no exec: the server's imports are inherited), bound to ipc
sockets in a directory of the context's own.  A bridge thread speaks the
Jupyter protocol to it with jupyter_client's Session over plain pyzmq
sockets and turns the messages of each execute into control lines.
jupyter_client's clients are not used: since version 7 they run an
event loop of their own in the calling process (nest_asyncio), and this
process's loop is the one the user's top-level `await` runs on.
"""
import asyncio
import codecs
import faulthandler
import io
import json
import math
import os
import re
import secrets
import shutil
import signal
import sys
import threading
import time

import jupyter_client.session
import zmq
from ipykernel.iostream import OutStream
from ipykernel.kernelapp import IPKernelApp
from jupyter_client.session import Session
from traitlets.config import Config

REQ_FD = 3
CTL_FD = 4
# Result members by MIME type (INTERP.md, "Results"); every other MIME
# type of a bundle goes into `extra`.
MEMBERS = {
    "text/plain": "text",
    "text/html": "html",
    "text/markdown": "markdown",
    "image/svg+xml": "svg",
    "image/png": "png",
    "image/jpeg": "jpeg",
    "application/pdf": "pdf",
    "text/latex": "latex",
    "application/json": "json",
    "application/javascript": "javascript",
    "application/vnd.ember.data+json": "data",
    "application/vnd.ember.chart+json": "chart",
}
OBJECT_MEMBERS = ("data", "chart")
BASE64_MEMBERS = ("png", "jpeg", "pdf")
# Per call.  Below the host's limits (16 MiB a log, 100 results, 64 MiB
# of results, 32 MiB a line): past them the host abandons the whole call.
MAX_OUTPUT = 8 << 20
MAX_RESULTS = 90
MAX_RESULT_BYTES = 48 << 20
MAX_ONE_RESULT = 24 << 20
CHUNK = 65536
# How long to wait for the kernel's `idle` once its reply came: a belt
# for an iopub message lost in a way we did not foresee.
IDLE_WAIT_S = 2.0
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
SURROGATES = re.compile("[\ud800-\udfff]")


# --- JSON that the host accepts ------------------------------------------

def clean(v):
    """v with lone surrogates replaced by U+FFFD and NaN/Infinity by
    None: strict UTF-8 JSON, as the host's parser wants."""
    if isinstance(v, str):
        try:
            v.encode("utf-8")
            return v
        except UnicodeEncodeError:
            return SURROGATES.sub("\ufffd", v)
    if isinstance(v, float):
        return v if math.isfinite(v) else None
    if isinstance(v, dict):
        return {clean(str(k)): clean(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [clean(x) for x in v]
    return v


def encode(msg):
    """One control line."""
    try:
        line = json.dumps(msg, ensure_ascii=False, allow_nan=False)
        return line.encode("utf-8") + b"\n"
    except (ValueError, UnicodeEncodeError):
        line = json.dumps(clean(msg), ensure_ascii=False, allow_nan=False)
        return line.encode("utf-8") + b"\n"


def send_line(data):
    while data:
        data = data[os.write(CTL_FD, data):]


# --- the kernel --------------------------------------------------------

class EmberKernelApp(IPKernelApp):
    """IPKernelApp with a lossless iopub and no connection banner."""

    def _bind_socket(self, s, port):
        # PUB drops what is past its high-water mark (1000): a lost
        # `idle` or `execute_result` under an output flood would hang or
        # lose a call.  The bridge reads at once and drops what is past
        # its caps, so the unlimited queue stays short.
        if s.type == zmq.PUB:
            s.sndhwm = 0
        return super()._bind_socket(s, port)

    def log_connection_info(self):
        # It prints to fd 1: the first call's stdout.
        pass


def config(ipc_dir, key):
    c = Config()
    app = c.IPKernelApp
    app.transport = "ipc"
    app.ip = os.path.join(ipc_dir, "k")
    app.connection_file = os.path.join(ipc_dir, "kernel.json")
    # fd 1 and 2 stay ember's pipes: C code's and child processes' output
    # streams through the server, and no fd-watcher thread can hang the
    # kernel when GIL-holding C code fills a pipe.
    app.capture_fd_output = False
    app.quiet = True
    app.matplotlib = "inline"
    app.parent_handle = 0
    app.outstream_class = "py_kernel.EmberOutStream"
    # A sleep "to mitigate" lost output before each reply; the bridge
    # ends a call on the kernel's `idle`, which follows all its output.
    c.Kernel._execute_sleep = 0.0
    c.InteractiveShell.colors = "NoColor"
    c.HistoryManager.enabled = False
    c.Completer.use_jedi = False
    c.PlainTextFormatter.max_seq_length = 0
    c.InlineBackend.figure_formats = {"png"}
    c.Session.key = key
    return c


class EmberOutStream(OutStream):
    """ipykernel's stdout/stderr, with a flush that costs nothing when
    there is nothing to flush.  The kernel flushes both streams around
    every displayed value and before every reply, each a round trip to
    its iopub thread: ~1 ms of a `1+1`.  Everything the kernel publishes
    goes through that one thread in order, so skipping an empty flush
    loses no ordering."""

    def flush(self):
        with self._buffer_lock:
            empty = not self._buffer.tell()
        if empty and not self._flush_pending \
                and not self._subprocess_flush_pending:
            return
        super().flush()


class BinaryOut(io.RawIOBase):
    """sys.stdout.buffer for ipykernel's text streams (which have none):
    bytes decoded as UTF-8 with replacement, as the pipe path does."""

    def __init__(self, text):
        super().__init__()
        self.text = text
        self.decoder = codecs.getincrementaldecoder("utf-8")("replace")

    def writable(self):
        return True

    def write(self, b):
        self.text.write(self.decoder.decode(bytes(b)))
        return len(b)

    def flush(self):
        self.text.flush()


def _after_cell(result):
    # A `%pip install` made a directory on sys.path appear (the user
    # site, /usr/local/...): forget the import system's "not there".
    info = getattr(result, "info", None)
    if info is not None and "pip" in (info.raw_cell or ""):
        import importlib
        importlib.invalidate_caches()


def _stay():
    pass


def setup_shell(app):
    shell = app.shell
    for name in ("stdout", "stderr"):
        stream = getattr(sys, name)
        if not hasattr(stream, "buffer"):
            stream.buffer = BinaryOut(stream)
    # A user's `pip install --user` lands in the user site, which
    # site.py skipped at start if it did not exist yet.
    import site
    if site.ENABLE_USER_SITE:
        # The server's (root's) values, cached at its start: this
        # context's user has its own home.
        site.USER_BASE = site.USER_SITE = None
        user_site = site.getusersitepackages()
        if user_site not in sys.path:
            sys.path.append(user_site)
    shell.events.register("post_run_cell", _after_cell)
    # exit()/quit() would stop the kernel's loop, and the context would
    # restart, its state gone, with no error to say so; a notebook's
    # kernel (E2B's too) stays.  sys.exit(n) still is an error.
    shell.ask_exit = _stay
    try:
        import ember_display
        ember_display.register(shell)
    except Exception as exc:  # the kernel works without data and chart
        print("ember-interp: no data/chart results: %r" % (exc,),
              file=sys.__stderr__, flush=True)


def _interrupted(signum, frame):
    """SIGINT while a request runs: tell the server at once that the
    kernel took it (its grace kill is for code that cannot be
    interrupted; IPython formatting the traceback can take seconds on a
    slow guest), then raise as ipykernel's default_int_handler does.  One
    short line: a single atomic pipe write, beside the bridge's."""
    try:
        os.write(CTL_FD, b'{"type":"interrupted"}\n')
    except OSError:
        pass
    raise KeyboardInterrupt


def ack_interrupts(kernel):
    """ipykernel sets default_int_handler around each request
    (pre_handler_hook); set ours instead."""
    def pre_handler_hook():
        kernel.saved_sigint_handler = signal.signal(signal.SIGINT,
                                                    _interrupted)
    kernel.pre_handler_hook = pre_handler_hook


def wake_on_sigint():
    """Make SIGINT wake the event loop, so that an awaiting cell is
    cancelled at once (ipykernel turns SIGINT into a cancel of the
    cell's task, but its handler runs only when the loop's selector
    returns).  asyncio's signal support sets the wakeup fd; SIGINT's
    handler itself stays ipykernel's."""
    loop = asyncio.get_event_loop()
    saved = signal.getsignal(signal.SIGINT)
    loop.add_signal_handler(signal.SIGINT, lambda: None)
    signal.signal(signal.SIGINT, saved)


# --- the bridge ----------------------------------------------------------

class Call:
    """The messages of one execute_request, mapped to control lines."""

    def __init__(self, msg_id, sink):
        self.msg_id = msg_id
        self.sink = sink
        self.reply = None
        self.reply_at = None
        self.idle = False
        self.count = None
        self.errored = False
        self.out_bytes = 0
        self.results = 0
        self.result_bytes = 0
        self.left_out = 0
        self.updates = {}           # display_id -> the last bundle

    def done(self):
        return self.reply is not None and self.idle

    def stream(self, name, text):
        if name not in ("stdout", "stderr") or self.out_bytes > MAX_OUTPUT:
            return
        # Past the cap the server writes the note; one message over it
        # tells the server so.
        self.out_bytes += len(text)
        for i in range(0, len(text), CHUNK):
            self.sink({"type": name, "text": text[i:i + CHUNK]})

    def result(self, content, main):
        if self.results >= MAX_RESULTS:
            self.left_out += 1
            return
        msg = result_msg(content.get("data") or {}, main)
        line = encode(msg)
        if len(line) > MAX_ONE_RESULT:
            line = self.shrink(msg)
        if self.result_bytes + len(line) > MAX_RESULT_BYTES:
            self.left_out += 1
            return
        self.results += 1
        self.result_bytes += len(line)
        self.sink(line)

    def shrink(self, msg):
        """A result over MAX_ONE_RESULT without its largest members."""
        order = sorted((k for k in msg if k not in ("type",
                                                    "is_main_result")),
                       key=lambda k: len(encode(msg[k])), reverse=True)
        dropped = []
        for k in order:
            if len(encode(msg)) <= MAX_ONE_RESULT:
                break
            del msg[k]
            dropped.append(k)
        self.stream("stderr", "ember: a result over %d MiB: %s left out\n"
                    % (MAX_ONE_RESULT >> 20, ", ".join(dropped)))
        return encode(msg)

    def error(self, name, value, tb):
        if self.errored:
            return
        self.errored = True
        if isinstance(tb, list):
            tb = "\n".join(tb)
        self.sink({"type": "error", "name": str(name), "value": str(value),
                   "traceback": ANSI.sub("", tb or "")})

    def on_iopub(self, kind, content):
        if kind == "stream":
            self.stream(content.get("name"), content.get("text", ""))
        elif kind == "execute_result":
            self.result(content, True)
        elif kind == "display_data":
            self.result(content, False)
        elif kind == "update_display_data":
            # A progress display updated 10 000 times is one result.
            did = (content.get("transient") or {}).get("display_id")
            self.updates.pop(did, None)
            self.updates[did] = content
        elif kind == "error":
            self.error(content.get("ename"), content.get("evalue"),
                       content.get("traceback"))
        elif kind == "execute_input":
            self.count = content.get("execution_count")
        elif kind == "status" and content.get("execution_state") == "idle":
            self.idle = True

    def on_reply(self, content):
        self.reply = content
        self.reply_at = time.monotonic()
        status = content.get("status")
        if status == "error":
            self.error(content.get("ename"), content.get("evalue"),
                       content.get("traceback"))
        elif status == "aborted":
            self.error("ExecutionAborted", "the kernel aborted the call", "")
        for p in content.get("payload") or []:
            # `obj?`: the help a notebook shows in its pager.
            if p.get("source") == "page":
                text = (p.get("data") or {}).get("text/plain")
                if isinstance(text, str):
                    self.stream("stdout", ANSI.sub("", text) + "\n")

    def finish(self):
        for content in self.updates.values():
            self.result(content, False)
        if self.left_out:
            self.stream("stderr", "ember: %d more results were left out\n"
                        % self.left_out)
        count = (self.reply or {}).get("execution_count", self.count)
        return {"type": "done", "execution_count": count or 0}


def result_msg(bundle, main):
    msg = {"type": "result", "is_main_result": main}
    extra = {}
    for mime, value in bundle.items():
        member = MEMBERS.get(mime)
        if member is None or not _typed(member, value):
            extra[mime] = value
            continue
        if member in BASE64_MEMBERS:
            value = value.strip()   # IPython's base64 ends in "\n"
        msg[member] = value
    if extra:
        msg["extra"] = extra
    return msg


def _typed(member, value):
    if member == "json":
        return True
    if member in OBJECT_MEMBERS:
        return isinstance(value, dict)
    return isinstance(value, str)


class Bridge(threading.Thread):
    def __init__(self, app, key, ipc_dir):
        super().__init__(name="ember-bridge", daemon=True)
        self.app = app
        self.ipc_dir = ipc_dir
        self.session = Session(key=key)
        self.inbuf = b""

    def url(self, port):
        return "ipc://%s-%d" % (self.app.ip, port)

    def run(self):
        # Without its bridge the context is useless: end it, whatever
        # happens (a server gone away makes even the traceback's write
        # fail), and the server restarts it.
        try:
            self.serve()
        except BaseException:
            try:
                import traceback
                traceback.print_exc(file=sys.__stderr__)
            except BaseException:
                pass
        finally:
            os._exit(70)

    def serve(self):
        ctx = self.app.context
        self.shell = ctx.socket(zmq.DEALER)
        self.shell.linger = 0
        self.shell.connect(self.url(self.app.shell_port))
        self.iopub = ctx.socket(zmq.SUB)
        self.iopub.linger = 0
        self.iopub.rcvhwm = 0
        self.iopub.setsockopt(zmq.SUBSCRIBE, b"")
        self.iopub.connect(self.url(self.app.iopub_port))
        self.poller = zmq.Poller()
        self.poller.register(self.shell, zmq.POLLIN)
        self.poller.register(self.iopub, zmq.POLLIN)
        self.handshake()
        # Connected: the socket files are of no more use, and with them
        # gone nothing else can ever connect, and a killed context leaves
        # nothing behind in /tmp.
        shutil.rmtree(self.ipc_dir, ignore_errors=True)
        self.execute(WARM_UP, {}, lambda _msg: None, silent=True)
        send_line(encode({"type": "ready"}))
        self.poller.register(REQ_FD, zmq.POLLIN)
        while True:
            for line in self.requests():
                try:
                    req = json.loads(line)
                except ValueError:
                    continue
                self.call(req)

    def handshake(self):
        """Until the iopub subscription works (a SUB misses what was
        published before it joined): kernel_info requests until the
        kernel's status for one of them arrives on iopub."""
        asked = set()
        while True:
            msg = self.session.send(self.shell, "kernel_info_request", {})
            asked.add(msg["header"]["msg_id"])
            deadline = time.monotonic() + 0.1
            while time.monotonic() < deadline:
                ready = dict(self.poller.poll(100))
                if self.shell in ready:
                    self.recv(self.shell)
                if self.iopub in ready:
                    m = self.recv(self.iopub)
                    if m and m["parent_header"].get("msg_id") in asked:
                        return

    def recv(self, sock):
        try:
            _, msg = self.session.recv(sock, mode=zmq.NOBLOCK)
        except ValueError:          # a bad signature or frame: not ours
            return None
        return msg

    def requests(self):
        """The whole lines REQ_FD has now (blocks on the poller, draining
        iopub output that belongs to no call meanwhile)."""
        while True:
            ready = dict(self.poller.poll())
            for sock in (self.shell, self.iopub):
                if sock in ready:
                    while self.recv(sock) is not None:
                        pass
            if REQ_FD in ready:
                data = os.read(REQ_FD, 1 << 20)
                if not data:        # the server went away
                    os._exit(0)
                self.inbuf += data
                lines = self.inbuf.split(b"\n")
                self.inbuf = lines.pop()
                if lines:
                    return lines

    def call(self, req):
        env = req.get("env") or {}
        old = {k: os.environ.get(k) for k in env}
        try:
            os.environ.update({str(k): str(v) for k, v in env.items()})
            done = self.execute(req.get("code", ""), req, self.emit)
        finally:
            for k, v in old.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
        send_line(encode(done))

    def emit(self, msg):
        send_line(msg if isinstance(msg, bytes) else encode(msg))

    def execute(self, code, _req, sink, silent=False):
        content = {"code": code, "silent": silent,
                   "store_history": not silent, "user_expressions": {},
                   "allow_stdin": False, "stop_on_error": False}
        sent = self.session.send(self.shell, "execute_request", content)
        call = Call(sent["header"]["msg_id"], sink)
        while not call.done():
            timeout = None
            if call.reply is not None:
                left = call.reply_at + IDLE_WAIT_S - time.monotonic()
                if left <= 0:
                    call.stream("stderr", "ember: the kernel's end of the "
                                "call did not come; output may be missing\n")
                    break
                timeout = left * 1000
            ready = dict(self.poller.poll(timeout))
            if self.iopub in ready:
                self.drain(self.iopub, call)
            if self.shell in ready:
                self.drain(self.shell, call)
        return call.finish()

    def drain(self, sock, call):
        while True:
            msg = self.recv(sock)
            if msg is None:
                return
            if msg["parent_header"].get("msg_id") != call.msg_id:
                continue
            kind = msg["header"]["msg_type"]
            if sock is self.shell:
                if kind == "execute_reply":
                    call.on_reply(msg["content"])
            else:
                call.on_iopub(kind, msg["content"])


# Run once, silently, before `ready`: what the first user call would pay
# otherwise (the formatters, the inline backend, the magics machinery,
# and IPython's traceback formatter: its first use loads and parses
# modules lazily, which on a slow guest took past the 2 s an interrupted
# call has before its context is killed, so the first timeout of a new
# context lost the context's state).
WARM_UP = """\
def _ember_warm_up():
    ip = get_ipython()
    ip.display_formatter.format(1)
    try:
        raise KeyboardInterrupt
    except KeyboardInterrupt:
        import sys
        ip.InteractiveTB.structured_traceback(*sys.exc_info())
    try:
        exec(compile("x = 1\\n1/0", "<warm>", "exec"), {})
    except ZeroDivisionError:
        import sys
        ip.InteractiveTB.structured_traceback(*sys.exc_info())
    ip.run_line_magic("time", "1+1")
    import pandas
    ip.display_formatter.format(pandas.DataFrame({"a": [1.5, 2]}))
    import matplotlib.pyplot as plt
    fig = plt.figure()
    plt.plot([0, 1], [0, 1], label="a")
    plt.plot([0, 1], [1, 0], label="b")
    ip.display_formatter.format(fig)
    plt.close(fig)
try:
    _ember_warm_up()
except Exception:
    pass
del _ember_warm_up
"""


def _keep_dates(obj):
    return obj


def run(ipc_dir):
    """The context's process; never returns."""
    # Session parses the ISO dates of every message's headers with
    # dateutil (~0.1 ms each, ~12 a call between kernel and bridge);
    # nobody here reads them: they stay strings.
    jupyter_client.session.extract_dates = _keep_dates
    os.environ["MPLBACKEND"] = "module://matplotlib_inline.backend_inline"
    os.environ["JUPYTER_PLATFORM_DIRS"] = "1"
    os.environ.pop("JPY_PARENT_PID", None)
    if "IPYTHONDIR" not in os.environ and \
            not os.access(os.path.expanduser("~"), os.W_OK):
        # A user without a writable home (nobody): IPython would make a
        # temporary directory of its own (two, in fact) and leave them in
        # /tmp; this one goes with the ipc directory.
        os.environ["IPYTHONDIR"] = os.path.join(ipc_dir, "ipython")
    key = secrets.token_hex(32).encode()
    app = EmberKernelApp.instance(config=config(ipc_dir, key))
    app.initialize([])
    setup_shell(app)
    faulthandler.enable(file=sys.__stderr__)
    ack_interrupts(app.kernel)
    wake_on_sigint()
    Bridge(app, key, ipc_dir).start()
    app.start()
    os._exit(0)
