# SPDX-License-Identifier: Apache-2.0
"""The Python side of a context (guest-init/INTERP.md).

Runs in a process forked from the server, which has already imported
numpy, pandas and matplotlib, so a new context costs a fork.  The server
gives it fd 0 (/dev/null), fd 1 and fd 2 (pipes it streams as stdout and
stderr events), REQ_FD (one JSON request a line) and CTL_FD (one JSON
message a line back: ready, result, error, done).  The code runs in a
module of its own, `__main__`, that keeps its state between calls.
"""
import ast
import base64
import builtins
import io
import json
import linecache
import os
import signal
import sys
import traceback
import types

REQ_FD = 3
CTL_FD = 4

# True while user code (or its repr) runs: only then does SIGINT become a
# KeyboardInterrupt, so that a late interrupt cannot break the worker's
# own bookkeeping between calls.
_interruptible = False


def _on_sigint(_signum, _frame):
    if _interruptible:
        raise KeyboardInterrupt


def _send(msg):
    data = (json.dumps(msg) + "\n").encode()
    while data:
        data = data[os.write(CTL_FD, data):]


def _user_frames(tb):
    """The traceback without this file's frames (the call into the cell
    at the head, the SIGINT handler at the tail)."""
    frames = []
    while tb is not None:
        if tb.tb_frame.f_code.co_filename != __file__:
            frames.append(tb)
        tb = tb.tb_next
    for a, b in zip(frames, frames[1:] + [None]):
        a.tb_next = b
    return frames[0] if frames else None


def _error(exc):
    tb = _user_frames(exc.__traceback__)
    text = "".join(traceback.format_exception(type(exc), exc, tb))
    return {"type": "error", "name": type(exc).__name__,
            "value": str(exc), "traceback": text}


def _main_result(value):
    msg = {"type": "result", "is_main_result": True, "text": repr(value)}
    html = getattr(value, "_repr_html_", None)
    if callable(html):
        try:
            h = html()
        except Exception:  # a broken _repr_html_ still leaves the text
            h = None
        if isinstance(h, str):
            msg["html"] = h
    return msg


def _figures():
    """Every open matplotlib figure as a PNG result; closes them."""
    plt = sys.modules.get("matplotlib.pyplot")
    if plt is None:
        return
    for num in plt.get_fignums():
        buf = io.BytesIO()
        try:
            plt.figure(num).savefig(buf, format="png")
        except Exception as exc:
            _send(_error(exc))
            continue
        _send({"type": "result", "is_main_result": False,
               "png": base64.b64encode(buf.getvalue()).decode()})
    plt.close("all")


def _flush():
    for f in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
        try:
            f.flush()
        except Exception:
            pass


class Cell:
    """One execute: parse, run all but a last expression, eval that."""

    def __init__(self, ns, count):
        self.ns = ns
        self.name = "<cell-%d>" % count

    def run(self, code):
        global _interruptible
        # Source lines for tracebacks, as IPython does.
        linecache.cache[self.name] = (len(code), None,
                                      code.splitlines(True), self.name)
        try:
            tree = ast.parse(code, self.name, "exec")
            last = None
            if tree.body and isinstance(tree.body[-1], ast.Expr):
                last = ast.Expression(tree.body.pop().value)
            body = compile(tree, self.name, "exec")
            tail = compile(last, self.name, "eval") if last else None
            _interruptible = True
            exec(body, self.ns)
            if tail is not None:
                value = eval(tail, self.ns)
                if value is not None:
                    _send(_main_result(value))
        except BaseException as exc:  # SystemExit and interrupts included
            _interruptible = False
            _flush()
            _send(_error(exc))
        finally:
            _interruptible = False


def _with_env(env, fn):
    """Run fn() with env's variables set, then put the old values back."""
    old = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        fn()
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def run():
    """The worker's loop; never returns."""
    signal.signal(signal.SIGINT, _on_sigint)
    # Streams on the pipes, flushed per line and at the end of a call.
    sys.stdout = io.TextIOWrapper(io.FileIO(1, "w", closefd=False),
                                  line_buffering=True, errors="replace")
    sys.stderr = io.TextIOWrapper(io.FileIO(2, "w", closefd=False),
                                  line_buffering=True, errors="replace")
    sys.__stdout__, sys.__stderr__ = sys.stdout, sys.stderr
    main = types.ModuleType("__main__")
    main.__builtins__ = builtins
    sys.modules["__main__"] = main
    ns = main.__dict__
    count = 0
    req = io.open(REQ_FD, "rb", closefd=False)
    _send({"type": "ready"})
    for line in req:
        try:
            r = json.loads(line)
        except ValueError:
            continue
        count += 1
        env = r.get("env") or {}
        _with_env(env, lambda: Cell(ns, count).run(r.get("code", "")))
        _flush()
        try:
            _figures()
        except Exception as exc:
            _send(_error(exc))
        _flush()
        _send({"type": "done", "execution_count": count})
    os._exit(0)
