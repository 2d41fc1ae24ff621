# SPDX-License-Identifier: Apache-2.0
"""The code interpreter's server (guest-init/INTERP.md).

One thread, one `selectors` loop: listening sockets, client connections
and the contexts' pipes.  Single-threaded so that forking a Python
context from this process is safe.
"""
import json
import os
import secrets
import selectors
import socket
import sys
import time

import accounts
import contexts

VERSION = 2
MAX_LINE = 32 << 20
LANGUAGES = ("python", "javascript")


def default_cwd(account=None):
    """Where a context starts unless asked: the image's WorkingDir (the
    defaults file's cwd), else for a user other than root its home, else
    /home/user (the rootfs's, where E2B's SDKs expect code to run), else
    /root, else where the server started."""
    cwds = accounts.defaults().get("cwd") or []
    if cwds and os.path.isdir(cwds[-1]):
        return cwds[-1]
    if account is not None and account.uid != 0 and \
            os.path.isdir(account.home):
        return account.home
    for d in ("/home/user", "/root"):
        if os.path.isdir(d):
            return d
    return os.getcwd()


def listen(addr):
    """A listening socket for "vsock:PORT" or "unix:PATH"."""
    kind, _, where = addr.partition(":")
    if kind == "vsock":
        s = socket.socket(socket.AF_VSOCK, socket.SOCK_STREAM)
        s.bind((socket.VMADDR_CID_ANY, int(where)))
    elif kind == "unix":
        try:
            os.unlink(where)
        except FileNotFoundError:
            pass
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.bind(where)
    else:
        raise ValueError("listen address %r: want vsock:PORT or unix:PATH"
                         % addr)
    s.listen(64)
    s.setblocking(False)
    return s


class Conn:
    """A client connection: JSON lines in, JSON lines out."""

    def __init__(self, server, sock):
        self.server = server
        self.sock = sock
        self.inbuf = b""
        self.outbuf = bytearray()
        self.skipping = False       # discarding an over-long line
        self.busy = None            # the context running our execute
        self.closed = False

    def send(self, msg):
        if self.closed:
            return
        self.outbuf += (json.dumps(msg) + "\n").encode()
        self.flush()

    def flush(self):
        try:
            while self.outbuf:
                n = self.sock.send(self.outbuf)
                del self.outbuf[:n]
        except BlockingIOError:
            pass
        except OSError:
            self.close()
            return
        self.server.want_write(self, bool(self.outbuf))

    def on_readable(self):
        try:
            data = self.sock.recv(1 << 20)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if not data:
            self.close()
            return
        self.inbuf += data
        self.handle_lines()

    def handle_lines(self):
        # One request at a time: the next waits for end_of_execution.
        while self.busy is None and not self.closed:
            nl = self.inbuf.find(b"\n")
            if nl < 0:
                if len(self.inbuf) > MAX_LINE:
                    self.inbuf = b""
                    if not self.skipping:
                        self.send({"type": "failure",
                                   "message": "line longer than 32 MiB"})
                    self.skipping = True
                return
            line, self.inbuf = self.inbuf[:nl], self.inbuf[nl + 1:]
            if self.skipping:
                self.skipping = False
                continue
            if line.strip():
                self.server.request(self, line)

    def call_done(self):
        self.busy = None
        self.handle_lines()

    def close(self):
        if self.closed:
            return
        self.closed = True
        self.server.forget(self)
        self.sock.close()
        if self.busy is not None:
            self.busy.disconnected(self)
            self.busy = None


class Failure(Exception):
    pass


class Server:
    def __init__(self, addrs, on_ready=None):
        self.sel = selectors.DefaultSelector()
        self.contexts = {}
        self.on_ready = on_ready
        self.listeners = [listen(a) for a in addrs]
        for s in self.listeners:
            self.sel.register(s, selectors.EVENT_READ, ("listen", s))
        # The image's default user (accounts.py); a missing one is an
        # error at start, never a silent root.
        spec = accounts.default_spec()
        self.account = accounts.resolve(spec) if spec else None
        for lang in LANGUAGES:
            self.contexts[lang] = contexts.Context(
                self, lang, lang, default_cwd(self.account), self.account)

    # --- the loop's registry, used by Conn and Context ---------------

    def watch(self, fd, ctx):
        self.sel.register(fd, selectors.EVENT_READ, ("ctx", ctx))

    def unwatch(self, fd):
        self.sel.unregister(fd)

    def want_write(self, conn, on):
        ev = selectors.EVENT_READ | (selectors.EVENT_WRITE if on else 0)
        self.sel.modify(conn.sock, ev, ("conn", conn))

    def forget(self, conn):
        self.sel.unregister(conn.sock)

    def context_ready(self, _ctx):
        """Once every default context came up (or failed), say so."""
        if self.on_ready is None:
            return
        defaults = [self.contexts[lang] for lang in LANGUAGES]
        if all(c.ready or c.failed for c in defaults):
            failed = [c.failed for c in defaults if c.failed]
            self.on_ready("; ".join(failed) if failed else None)
            self.on_ready = None

    # --- requests ----------------------------------------------------

    def request(self, conn, line):
        try:
            try:
                req = json.loads(line)
            except ValueError as e:
                raise Failure("malformed JSON: %s" % e)
            if not isinstance(req, dict):
                raise Failure("a request is a JSON object")
            op = req.get("op")
            handler = getattr(self, "op_" + str(op), None)
            if not isinstance(op, str) or handler is None:
                raise Failure("unknown op %r" % (op,))
            handler(conn, req)
        except Failure as e:
            conn.send({"type": "failure", "message": str(e)})

    def context(self, req):
        cid = req.get("context")
        ctx = self.contexts.get(cid) if isinstance(cid, str) else None
        if ctx is None:
            raise Failure("unknown context %r" % (cid,))
        return ctx

    def op_ping(self, conn, _req):
        conn.send({"type": "pong", "version": VERSION})

    def op_execute(self, conn, req):
        if not isinstance(req.get("code"), str):
            raise Failure("execute: code must be a string")
        env = req.get("env") or {}
        if not isinstance(env, dict) or not all(
                isinstance(v, str) for v in env.values()):
            raise Failure("execute: env must be an object of strings")
        t = req.get("timeout_ms") or 0
        if not isinstance(t, (int, float)) or t < 0:
            raise Failure("execute: timeout_ms must be a number >= 0")
        account = self.asked_account(req)
        if req.get("context") is not None:
            ctx = self.context(req)
            if account is not None and (ctx.account.uid if ctx.account
                                        else os.getuid()) != account.uid:
                raise Failure("context %s runs as %s, not %s"
                              % (ctx.id, ctx.user(), account.name))
        else:
            lang = req.get("language") or "python"
            if lang not in LANGUAGES:
                raise Failure("unknown language %r" % (lang,))
            ctx = self.user_default(lang, account)
        conn.busy = ctx
        ctx.submit(contexts.Call(conn, req))

    def asked_account(self, req):
        """The request's `user` as an Account; None when absent."""
        if req.get("user") is None:
            return None
        try:
            return accounts.resolve(req.get("user"))
        except accounts.AccountError as e:
            raise Failure(str(e))

    def user_default(self, lang, account):
        """The default context of @lang for @account (None: the image's
        default user): `python` / `javascript` for the default user,
        `python:NAME` for another, made on first use."""
        own = self.account.uid if self.account else os.getuid()
        if account is None or account.uid == own:
            return self.contexts[lang]
        cid = "%s:%s" % (lang, account.name)
        if cid not in self.contexts:
            self.contexts[cid] = contexts.Context(
                self, cid, lang, default_cwd(account), account)
        return self.contexts[cid]

    def op_create_context(self, conn, req):
        lang = req.get("language") or "python"
        if lang not in LANGUAGES:
            raise Failure("unknown language %r" % (lang,))
        account = self.asked_account(req) or self.account
        cwd = req.get("cwd") or default_cwd(account)
        if not isinstance(cwd, str) or not os.path.isdir(cwd):
            raise Failure("cwd %r is not a directory" % (cwd,))
        cid = secrets.token_hex(8)
        ctx = contexts.Context(self, cid, lang, cwd, account)
        self.contexts[cid] = ctx
        conn.send({"type": "context", "context": ctx.describe()})

    def op_list_contexts(self, conn, _req):
        conn.send({"type": "contexts", "contexts":
                   [c.describe() for c in self.contexts.values()]})

    def op_restart_context(self, conn, req):
        self.context(req).restart()
        conn.send({"type": "ok"})

    def op_delete_context(self, conn, req):
        ctx = self.context(req)
        if ctx.id in LANGUAGES:
            raise Failure("a default context cannot be deleted: restart it")
        del self.contexts[ctx.id]
        ctx.delete()
        conn.send({"type": "ok"})

    # --- the loop ----------------------------------------------------

    def run(self):
        while True:
            timers = [t for t in (c.next_timer()
                                  for c in self.contexts.values())
                      if t is not None]
            wait = None
            if timers:
                wait = max(0.0, min(timers) - time.monotonic())
            for key, ev in self.sel.select(wait):
                kind, obj = key.data
                if kind == "listen":
                    self.accept(obj)
                elif kind == "conn":
                    if ev & selectors.EVENT_WRITE:
                        obj.flush()
                    if ev & selectors.EVENT_READ and not obj.closed:
                        obj.on_readable()
                else:
                    obj.on_readable(key.fd)
            now = time.monotonic()
            for c in list(self.contexts.values()):
                c.on_timer(now)

    def accept(self, lsock):
        try:
            sock, _ = lsock.accept()
        except (BlockingIOError, ConnectionAbortedError):
            return
        sock.setblocking(False)
        conn = Conn(self, sock)
        self.sel.register(sock, selectors.EVENT_READ, ("conn", conn))


def serve(addrs, on_ready=None):
    print("ember-interp: listening on %s" % ", ".join(addrs),
          file=sys.stderr, flush=True)
    if contexts.KERNEL_WHY_NOT is None:
        print("ember-interp: Python contexts are IPython kernels",
              file=sys.stderr, flush=True)
    else:
        print("ember-interp: Python contexts use the plain worker: %s"
              % contexts.KERNEL_WHY_NOT, file=sys.stderr, flush=True)
    try:
        srv = Server(addrs, on_ready)
    except accounts.AccountError as e:
        print("ember-interp: the image's default user: %s" % e,
              file=sys.stderr, flush=True)
        sys.exit(1)
    srv.run()
