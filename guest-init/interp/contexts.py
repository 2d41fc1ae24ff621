# SPDX-License-Identifier: Apache-2.0
"""Contexts: one worker process each, and the calls queued on it.

A Python worker is forked from the server (which has numpy, pandas,
matplotlib and the Jupyter modules imported already) and runs an IPython
kernel (py_kernel.py), or, where the image lacks ipykernel or pyzmq,
ember's plain worker (py_worker.py); a JavaScript worker is `node
js_worker.js`.
Either gets fd 1/2 = pipes streamed as stdout/stderr events, fd 3 = the
request pipe, fd 4 = the control pipe, and runs as the leader of a
session of its own, so that killing its process group ends everything a
call started.  The server's event loop (server.py) owns the selector and
calls back into a Context when one of its pipes is readable or its
timer fires.
"""
import codecs
import collections
import fcntl
import json
import os
import shutil
import signal
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
NODE = os.environ.get("EMBER_INTERP_NODE", "node")
# How long an interrupted call gets to stop before its context is killed.
GRACE_S = 2.0
# Once a kernel said that SIGINT reached the code ("interrupted"), how
# long it has to answer: formatting the traceback, not a loop that
# ignores SIGINT.
INTERRUPTED_GRACE_S = 30.0
CHUNK = 65536
# A call's stdout and stderr together (pipes and kernel streams): past
# it, one note and nothing more, below the host's 16 MiB a log.
MAX_OUTPUT = 8 << 20
OUTPUT_NOTE = ("ember: output over %d MiB; the rest of this call's output "
               "was left out\n" % (MAX_OUTPUT >> 20))
# Interrupted calls: ipykernel cancels an awaiting cell's task instead.
INTERRUPTED = ("KeyboardInterrupt", "CancelledError")


# A control line's longest (a kernel's result is at most 24 MiB).
MAX_CTL_LINE = 40 << 20
CTL_FD = 4
_CTL_TYPES = {"ready": (), "interrupted": (), "stdout": ("text",),
              "stderr": ("text",), "result": (), "done": (),
              "error": ("name", "value", "traceback")}


def _control_message(line):
    """A worker's control line as a message, or None where it is not
    one (not JSON, not an object, an unknown type, a member of the wrong
    type); numbers and strings the server reads are checked here."""
    try:
        msg = json.loads(line)
    except ValueError:
        return None
    if not isinstance(msg, dict) or msg.get("type") not in _CTL_TYPES:
        return None
    for key in _CTL_TYPES[msg["type"]]:
        if not isinstance(msg.get(key, ""), str):
            return None
    if msg["type"] == "result" and \
            not isinstance(msg.get("is_main_result"), bool):
        return None
    count = msg.get("execution_count", 0)
    if msg["type"] == "done" and (not isinstance(count, int)
                                  or isinstance(count, bool) or count < 0):
        return None
    return msg


def _kernel_check():
    """None when Python contexts can run IPython kernels, else why not.
    The server imported the modules already (ember-interp's preload):
    this costs nothing, and it is where a missing package shows."""
    if os.environ.get("EMBER_INTERP_NO_KERNEL") == "1":
        return "EMBER_INTERP_NO_KERNEL=1"
    import importlib
    try:
        importlib.import_module("py_kernel")
    except ImportError as exc:
        return str(exc)
    # Forking a process with threads (or a zmq context's io threads) is
    # unsafe: the kernel path needs a thread-free server.
    if threading.active_count() > 1:
        return "the server has %d threads" % threading.active_count()
    return None


KERNEL_WHY_NOT = _kernel_check()


def _child_fds(req_r, ctl_w, out_w, err_w, inheritable):
    """In a new worker: own session; fds 0-4 as the worker expects them,
    every other fd of the server closed."""
    os.setsid()
    # Above every fd in use, then down to 3 and 4: no clashes.
    r = fcntl.fcntl(req_r, fcntl.F_DUPFD_CLOEXEC, 1000)
    c = fcntl.fcntl(ctl_w, fcntl.F_DUPFD_CLOEXEC, 1000)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.dup2(out_w, 1)
    os.dup2(err_w, 2)
    os.dup2(r, 3, inheritable=inheritable)
    os.dup2(c, 4, inheritable=inheritable)
    os.closerange(5, os.sysconf("SC_OPEN_MAX"))
    for s in (signal.SIGINT, signal.SIGTERM, signal.SIGCHLD):
        signal.signal(s, signal.SIG_DFL)


def _run_python(ipc_dir):
    """A Python worker: the forked server turned a kernel (ipc_dir: its
    sockets' directory), or py_worker (ipc_dir None)."""
    if ipc_dir is not None:
        import py_kernel
        py_kernel.run(ipc_dir)
    import py_worker
    py_worker.run()


def _signal_name(num):
    try:
        return signal.Signals(num).name
    except ValueError:
        return "signal %d" % num


def _exit_words(code):
    """How a worker's end reads in an error: its exit status or signal."""
    if code < 0:
        return "was killed by %s (signal %d)" % (_signal_name(-code), -code)
    return "exited (%d)" % code


def _exec_node():
    """A JavaScript worker: node running js_worker.js."""
    os.execvp(NODE, [NODE, os.path.join(HERE, "js_worker.js")])


class Call:
    """One execute request on its way through a context."""

    def __init__(self, conn, req):
        self.conn = conn            # None once the connection went away
        self.req = req
        self.timeout_s = (req.get("timeout_ms") or 0) / 1000.0
        self.deadline = None        # set when the call starts running
        self.kill_at = None         # set when it was interrupted
        self.timed_out = False
        self.out_bytes = 0          # stdout + stderr so far

    def output(self, kind, text):
        """Stream stdout/stderr text, up to MAX_OUTPUT for the call."""
        if self.out_bytes > MAX_OUTPUT:
            return
        room = MAX_OUTPUT - self.out_bytes
        self.out_bytes += len(text)
        if len(text) > room:
            if room:
                self.emit({"type": kind, "text": text[:room]})
            self.emit({"type": "stderr", "text": OUTPUT_NOTE})
            return
        self.emit({"type": kind, "text": text})

    def emit(self, msg):
        if self.conn is not None:
            self.conn.send(msg)


class Context:
    def __init__(self, loop, cid, language, cwd, account=None):
        self.loop = loop
        self.id = cid
        self.language = language
        self.cwd = cwd
        self.account = account      # accounts.Account; None: the server's
        self.queue = collections.deque()
        self.current = None
        self.pid = None
        self.pgid = None
        self.ready = False
        self.failed = None          # why the worker could not start
        self.ctl_buf = b""
        self.ctl_skip = False       # dropping the rest of a long line
        self.ctl_warned = False
        self.fds = {}               # fd -> "ctl" | "stdout" | "stderr"
        self.decoders = {}
        self.req_fd = None
        self.ipc_dir = None         # a kernel's sockets
        self.start()

    def user(self):
        """Who the worker runs as: the account's name, else the
        server's own user's."""
        if self.account is not None:
            return self.account.name
        try:
            import pwd
            return pwd.getpwuid(os.getuid()).pw_name
        except KeyError:
            return str(os.getuid())

    def describe(self):
        return {"id": self.id, "language": self.language, "cwd": self.cwd,
                "user": self.user()}

    # --- the worker process ------------------------------------------

    def start(self):
        req_r, req_w = os.pipe()
        ctl_r, ctl_w = os.pipe()
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        pipes = (req_r, ctl_w, out_w, err_w)
        if self.language == "python":
            self.ipc_dir = self._make_ipc_dir()
            # Not inherited by what the user starts: a stray holder of
            # the control pipe would hide the worker's exit.
            self.pid = self._fork_worker(
                pipes, False, lambda: _run_python(self.ipc_dir), 1)
        else:
            self.pid = self._fork_worker(pipes, True, _exec_node, 127)
        self.pgid = self.pid        # a session leader: its own group
        for fd in (req_r, ctl_w, out_w, err_w):
            os.close(fd)
        self.req_fd = req_w
        self.ready = False
        self.failed = None
        self.ctl_buf = b""
        self.ctl_skip = False
        self.fds = {ctl_r: "ctl", out_r: "stdout", err_r: "stderr"}
        self.decoders = {
            s: codecs.getincrementaldecoder("utf-8")(errors="replace")
            for s in ("stdout", "stderr")}
        for fd in self.fds:
            os.set_blocking(fd, False)
            self.loop.watch(fd, self)

    def _make_ipc_dir(self):
        """A 0700 directory of the context's user for its kernel's ipc
        sockets (None: no kernel, the plain worker)."""
        if KERNEL_WHY_NOT is not None:
            return None
        safe = "".join(ch if ch.isalnum() else "-" for ch in self.id)
        d = tempfile.mkdtemp(prefix="ember-kernel-%d-%s-"
                             % (os.getpid(), safe))
        if self.account is not None:
            os.chown(d, self.account.uid, self.account.gid)
        return d

    def _fork_worker(self, pipes, inheritable, run, status):
        """Fork a worker: its pipes as fds 1-4 (inheritable by what
        the user starts, or not), as the context's user, in its cwd,
        then run(); the child exits with status if run() returns or
        raises."""
        pid = os.fork()
        if pid:
            return pid
        try:
            _child_fds(*pipes, inheritable=inheritable)
            if self.account is not None:
                self.account.switch()
            os.chdir(self.cwd)
            run()
        except BaseException:
            import traceback
            traceback.print_exc()
        finally:
            os._exit(status)

    def kill(self):
        """Kill the worker's process group and forget its pipes."""
        # The worker itself first: one forked a moment ago may not have
        # made its own group yet (killpg would miss it and the wait below
        # would block the whole server).
        if self.pid is not None:
            try:
                os.kill(self.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        if self.pgid is not None:
            try:
                os.killpg(self.pgid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.pgid = None
        if self.pid is not None:
            try:
                os.waitpid(self.pid, 0)
            except ChildProcessError:
                pass
            self.pid = None
        for fd in list(self.fds):
            self.loop.unwatch(fd)
            os.close(fd)
        self.fds = {}
        if self.req_fd is not None:
            os.close(self.req_fd)
            self.req_fd = None
        if self.ipc_dir is not None:
            shutil.rmtree(self.ipc_dir, ignore_errors=True)
            self.ipc_dir = None
        self.ready = False

    def restart(self, why="the context was restarted"):
        """A fresh worker; a running call ends with an error."""
        call = self.current
        self.current = None
        self.kill()
        self.start()
        if call is not None:
            if call.timed_out:
                name = "TimeoutError"
                value = "execution timed out after %g s; %s" % (
                    call.timeout_s, why)
            else:
                name, value = "ContextRestarted", why
            call.emit({"type": "error", "name": name, "value": value,
                       "traceback": ""})
            call.emit({"type": "end_of_execution"})
            call.conn and call.conn.call_done()

    def delete(self):
        for call in [self.current] + list(self.queue):
            if call is not None:
                call.emit({"type": "error", "name": "ContextDeleted",
                           "value": "the context was deleted",
                           "traceback": ""})
                call.emit({"type": "end_of_execution"})
                call.conn and call.conn.call_done()
        self.current = None
        self.queue.clear()
        self.kill()

    # --- calls -------------------------------------------------------

    def submit(self, call):
        if self.failed is not None and self.pid is None:
            self.start()            # one more try
        self.queue.append(call)
        self._next()

    def _next(self):
        if self.current is not None or not self.ready or not self.queue:
            return
        call = self.queue.popleft()
        if call.conn is None:       # its connection went away queued
            return self._next()
        self.current = call
        if call.timeout_s > 0:
            call.deadline = time.monotonic() + call.timeout_s
        req = {"code": call.req.get("code", ""),
               "env": call.req.get("env") or {}}
        data = (json.dumps(req) + "\n").encode()
        # The worker is idle and reads its request pipe: a blocking write
        # completes as it reads.
        os.set_blocking(self.req_fd, True)
        try:
            while data:
                data = data[os.write(self.req_fd, data):]
        except BrokenPipeError:
            pass                    # its exit shows on the control pipe

    def interrupt(self, call):
        """SIGINT the worker; kill and restart it if still busy later."""
        if call is not self.current or call.kill_at is not None:
            return
        call.kill_at = time.monotonic() + GRACE_S
        try:
            os.kill(self.pid, signal.SIGINT)
        except ProcessLookupError:
            pass

    def disconnected(self, conn):
        """A connection closed: interrupt its running call, drop queued."""
        for call in self.queue:
            if call.conn is conn:
                call.conn = None
        if self.current is not None and self.current.conn is conn:
            self.current.conn = None
            self.interrupt(self.current)

    def next_timer(self):
        c = self.current
        if c is None:
            return None
        return c.kill_at if c.kill_at is not None else c.deadline

    def on_timer(self, now):
        c = self.current
        if c is None:
            return
        if c.kill_at is not None and now >= c.kill_at:
            self.restart()
        elif c.kill_at is None and c.deadline is not None \
                and now >= c.deadline:
            c.timed_out = True
            self.interrupt(c)

    # --- the worker's pipes ------------------------------------------

    def on_readable(self, fd):
        kind = self.fds.get(fd)
        if kind == "ctl":
            self._read_ctl(fd)
        elif kind is not None:
            self._drain(fd, kind)

    def _drain(self, fd, kind, final=False):
        """Stream what a stdout/stderr pipe holds to the running call."""
        while True:
            try:
                data = os.read(fd, CHUNK)
            except BlockingIOError:
                return
            if not data:            # everyone holding it exited
                self.loop.unwatch(fd)
                os.close(fd)
                del self.fds[fd]
                return
            text = self.decoders[kind].decode(data)
            if text and self.current is not None:
                self.current.output(kind, text)
            if final is False and len(data) < CHUNK:
                return

    def _drain_output(self):
        for fd, kind in list(self.fds.items()):
            if kind != "ctl":
                self._drain(fd, kind, final=True)

    def _read_ctl(self, fd):
        try:
            data = os.read(fd, 1 << 20)
        except BlockingIOError:
            return
        if not data:
            self._worker_exited()
            return
        self.ctl_buf += data
        while b"\n" in self.ctl_buf:
            line, self.ctl_buf = self.ctl_buf.split(b"\n", 1)
            msg = _control_message(line)
            if msg is None:
                self._bad_control(len(line))
            else:
                self._on_message(msg)
        if len(self.ctl_buf) > MAX_CTL_LINE:
            # No line ever ends: dropped, and the rest up to its end.
            self._bad_control(len(self.ctl_buf))
            self.ctl_buf = b""
            self.ctl_skip = True

    def _bad_control(self, size):
        # The worker runs the user's code, which can write to its control
        # pipe too: what is not a control line is dropped, said once.
        if self.ctl_skip:
            self.ctl_skip = False   # the end of a line already dropped
            return
        if not self.ctl_warned:
            self.ctl_warned = True
            print("context %s: a malformed control line (%d bytes) dropped;"
                  " the code may have written to fd %d" % (self.id, size,
                                                           CTL_FD),
                  file=sys.stderr, flush=True)

    def _on_message(self, msg):
        kind = msg.get("type")
        if kind == "ready":
            self.ready = True
            self.loop.context_ready(self)
            self._next()
            return
        call = self.current
        if call is None:
            return
        if kind == "interrupted":
            if call.kill_at is not None:
                call.kill_at = time.monotonic() + INTERRUPTED_GRACE_S
            return
        # Output written before this message is in the pipes already:
        # stream it first, so that the order holds.
        self._drain_output()
        if kind == "error" and call.kill_at is not None \
                and msg.get("name") in INTERRUPTED:
            if call.timed_out:
                msg = {"type": "error", "name": "TimeoutError",
                       "value": "execution timed out after %g s"
                       % call.timeout_s,
                       "traceback": msg.get("traceback", "")}
        if kind in ("stdout", "stderr"):     # a kernel's streams
            call.output(kind, msg.get("text", ""))
        elif kind in ("result", "error"):
            call.emit(msg)
        elif kind == "done":
            # A multi-byte sequence the call's output left unfinished is
            # its own (U+FFFD), not the start of the next call's output.
            for stream, decoder in self.decoders.items():
                text = decoder.decode(b"", final=True)
                decoder.reset()
                if text:
                    call.output(stream, text)
            call.emit({"type": "number_of_executions",
                       "execution_count": msg.get("execution_count", 0)})
            call.emit({"type": "end_of_execution"})
            self.current = None
            call.conn and call.conn.call_done()
            self._next()

    def _worker_exited(self):
        """The worker died by itself (os._exit, process.exit, a crash)."""
        self._drain_output()
        pid, status = self.pid, 0
        try:
            _, status = os.waitpid(pid, 0)
        except ChildProcessError:
            pass
        self.pid = None             # reaped: kill() must not wait on it
        code = os.waitstatus_to_exitcode(status)
        print("context %s: worker %d %s" % (self.id, pid, _exit_words(code)),
              file=sys.stderr, flush=True)
        if not self.ready:
            # It never came up (node missing, a broken install): fail the
            # waiting calls instead of restarting in a loop.
            self.kill()
            self.failed = "the %s worker %s before it was ready" \
                % (self.language, _exit_words(code))
            for call in self.queue:
                call.emit({"type": "error", "name": "ContextFailed",
                           "value": self.failed, "traceback": ""})
                call.emit({"type": "end_of_execution"})
                call.conn and call.conn.call_done()
            self.queue.clear()
            self.loop.context_ready(self)
            return
        self.restart("the context's process %s; "
                     "the context was restarted" % _exit_words(code))
