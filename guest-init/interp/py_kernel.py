# SPDX-License-Identifier: Apache-2.0
"""A Python context as a real IPython kernel (guest-init/INTERP.md).

Runs in a process forked from the server, after the account switch and
the chdir, with the same fds as py_worker.py: 0 /dev/null, 1 and 2 the
pipes the server streams, REQ_FD the requests, CTL_FD the control lines
back (ready, stdout, stderr, result, error, done).

The main thread runs ipykernel's IPKernelApp in this process (no
launcher, no exec: the server's imports are inherited).  The bridge
hands each request to the kernel's own execute_request handler, on the
kernel's event loop, as a Jupyter message, and turns the messages the
kernel sends for it (through its Session) into control lines, in this
process: no client over ZeroMQ (see Bridge for what that cost).  The
kernel's sockets are bound (ipc, in a directory of the context's own,
removed at once) and stay unused.
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

import ipykernel
from ipykernel.iostream import OutStream
from ipykernel.kernelapp import IPKernelApp
from jupyter_client.session import Session
from traitlets.config import Config

# The bridge calls the kernel's handler as ipykernel 6's shell dispatcher
# does (Bridge.execute); another major release (7 reworked the kernel's
# loop and channels) gets the plain worker, the server's log says why.
if ipykernel.version_info[0] != 6:
    raise ImportError("ipykernel %s: ember's kernel bridge drives 6.x"
                      % ipykernel.__version__)

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


# Control lines come from the main thread (the kernel's messages, the
# end of a call) and from ipykernel's iopub thread (its streams' output),
# and SIGINT's handler (main thread) acknowledges on the same pipe.  A
# line over PIPE_BUF is written in pieces another write could fall
# between, and an exception raised by the handler in the middle of one
# would leave half a line: one writer at a time, the acknowledgement
# sent by whoever holds the pipe once it is done, and the handler's
# KeyboardInterrupt raised once a main-thread line is whole.
INTERRUPTED = b'{"type":"interrupted"}\n'
_ctl = threading.Lock()
_main_writing = False
_ack_pending = False
_raise_pending = False


def send_line(data):
    global _main_writing, _raise_pending
    main = threading.current_thread() is threading.main_thread()
    with _ctl:
        if main:
            _main_writing = True
        try:
            while data:
                data = data[os.write(CTL_FD, data):]
        finally:
            if main:
                _main_writing = False
    _flush_ack()
    if main and _raise_pending:
        _raise_pending = False
        raise KeyboardInterrupt


def _flush_ack():
    global _ack_pending
    while _ack_pending:
        if not _ctl.acquire(blocking=False):
            return                  # its holder sends it once done
        try:
            if _ack_pending:
                _ack_pending = False
                os.write(CTL_FD, INTERRUPTED)
        finally:
            _ctl.release()


# --- the kernel --------------------------------------------------------

# This process's pid, kept by a fork hook: ipykernel and the Session ask
# getpid() several times a call, a system call each, which a PVM host
# pays dearly for.
_pid = os.getpid()


def _forked():
    """In a process forked from the context (multiprocessing, os.fork):
    its print()s go to fds 1 and 2, which the server streams as it does a
    subprocess's output; the bridge (this process's copy) sends
    nothing."""
    global _pid
    _pid = os.getpid()
    for name, fd in (("stdout", 1), ("stderr", 2)):
        setattr(sys, name, open(fd, "w", encoding="utf-8",
                                errors="replace", buffering=1,
                                closefd=False))


class EmberSession(Session):
    """jupyter_client's Session, its message ids without a getpid()."""

    @property
    def msg_id(self):
        n = self.message_count
        self.message_count += 1
        return "%s_%d_%d" % (self.session, _pid, n)


class EmberKernelApp(IPKernelApp):
    """IPKernelApp without its connection banner, with EmberSession."""

    def _session_default(self):
        return EmberSession(parent=self)

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

    def _is_master_process(self):
        return _pid == self._master_pid

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
    slow guest), then raise as ipykernel's default_int_handler does,
    between control lines, never inside one (see send_line)."""
    global _ack_pending, _raise_pending
    _ack_pending = True
    try:
        _flush_ack()
    except OSError:
        pass
    if _main_writing:
        _raise_pending = True       # send_line raises once its line is out
        return
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


class Bridge:
    """ember's requests into the kernel and the kernel's messages back,
    in this process, without the sockets in between.

    A request line on REQ_FD becomes a Jupyter execute_request message
    (jupyter_client's Session builds it) that the kernel's own handler
    runs, on the kernel's own event loop, as its shell dispatcher would.
    Every message the kernel sends, through its Session (iopub from any
    thread, the reply), reaches the current Call as it is sent: its
    content round-tripped through the Session's own packer, as the wire
    would.  The ZeroMQ path (a DEALER and a SUB talking to the kernel's
    sockets from a thread beside it) cost 2.4 ms more than the plain
    worker for a `1+1` on the host, ~420 system calls and hops between
    five threads, and 0.8 s on a PVM host, where each of those is
    expensive; this path costs what the kernel's handler itself costs."""

    def __init__(self, app):
        self.app = app
        self.kernel = app.kernel
        self.session = app.kernel.session
        self.pack = self.session.pack
        self.pid = _pid
        self.lock = threading.Lock()
        self.call = None
        self.inbuf = b""
        self.pending = []
        self.busy = False
        self.session.send = self.send

    def send(self, stream, msg_or_type, content=None, parent=None,
             ident=None, buffers=None, track=False, header=None,
             metadata=None):
        """Session.send's signature: the message to the current call."""
        if _pid != self.pid:
            return None             # a forked child's copy: see _forked
        if isinstance(msg_or_type, dict):
            msg = msg_or_type
        else:
            msg = self.session.msg(msg_or_type, content=content,
                                   parent=parent, header=header,
                                   metadata=metadata)
        with self.lock:
            call = self.call
            if call is not None and \
                    msg["parent_header"].get("msg_id") == call.msg_id:
                kind = msg["header"]["msg_type"]
                body = json.loads(self.pack(msg["content"]))
                if kind == "execute_reply":
                    call.on_reply(body)
                else:
                    call.on_iopub(kind, body)
        return msg

    def start(self):
        """On the kernel's loop, before it runs: the warm-up, `ready`,
        then requests as they come."""
        asyncio.ensure_future(self.serve())

    async def serve(self):
        try:
            await self.execute(WARM_UP, lambda _msg: None, silent=True)
            send_line(encode({"type": "ready"}))
            asyncio.get_event_loop().add_reader(REQ_FD, self.readable)
        except BaseException:
            self.fail()

    def fail(self):
        # Without its requests the context is useless: end it, whatever
        # happens (a server gone away makes even the traceback's write
        # fail), and the server restarts it.
        try:
            import traceback
            traceback.print_exc(file=sys.__stderr__)
        except BaseException:
            pass
        os._exit(70)

    def readable(self):
        data = os.read(REQ_FD, 1 << 20)
        if not data:                # the server went away
            os._exit(0)
        self.inbuf += data
        lines = self.inbuf.split(b"\n")
        self.inbuf = lines.pop()
        self.pending.extend(lines)
        if self.pending and not self.busy:
            self.busy = True
            asyncio.ensure_future(self.drain())

    async def drain(self):
        try:
            while self.pending:
                line = self.pending.pop(0)
                try:
                    req = json.loads(line)
                except ValueError:
                    continue
                try:
                    await self.request(req)
                except KeyboardInterrupt:
                    pass            # an interrupt that came too late
        except BaseException:
            self.fail()
        self.busy = False

    async def request(self, req):
        env = req.get("env") or {}
        old = {k: os.environ.get(k) for k in env}
        try:
            os.environ.update({str(k): str(v) for k, v in env.items()})
            done = await self.execute(req.get("code", ""), self.emit)
        finally:
            for k, v in old.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
        send_line(encode(done))

    def emit(self, msg):
        send_line(msg if isinstance(msg, bytes) else encode(msg))

    async def execute(self, code, sink, silent=False):
        """One execute_request, as ipykernel's dispatch_shell runs it
        (its parent set, busy, the SIGINT hooks around the handler, the
        streams flushed, idle), less the wire and the control queue's
        flush: the control channel has no client here."""
        kernel = self.kernel
        content = {"code": code, "silent": silent,
                   "store_history": not silent, "user_expressions": {},
                   "allow_stdin": False, "stop_on_error": False}
        msg = self.session.msg("execute_request", content)
        call = Call(msg["header"]["msg_id"], sink)
        with self.lock:
            self.call = call
        ident = [b"ember"]
        try:
            kernel.set_parent(ident, msg, channel="shell")
            kernel._publish_status("busy", "shell")
            kernel.pre_handler_hook()
            try:
                await kernel.execute_request(None, ident, msg)
            except KeyboardInterrupt:
                # Past the cell (the kernel's handler caught the
                # cell's own): the call is interrupted all the same.
                call.error("KeyboardInterrupt", "", "")
            finally:
                kernel.post_handler_hook()
            sys.stdout.flush()
            sys.stderr.flush()
            kernel._publish_status("idle", "shell")
        finally:
            with self.lock:
                self.call = None
        if call.reply is None:
            call.stream("stderr", "ember: the kernel sent no reply; "
                        "output may be missing\n")
        return call.finish()


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


def run(ipc_dir):
    """The context's process; never returns."""
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
    # Bound and listening: nothing will connect (the bridge is in this
    # process), and a killed context leaves nothing behind in /tmp.
    shutil.rmtree(ipc_dir, ignore_errors=True)
    os.register_at_fork(after_in_child=_forked)
    Bridge(app).start()
    app.start()
    os._exit(0)
