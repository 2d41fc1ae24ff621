# SPDX-License-Identifier: Apache-2.0
"""The guest users contexts run as (guest-init/INTERP.md, "Users").

A user is named as the agent's EXEC USER field and an OCI image's
`User` name it: "name", "uid", "name:group" or "uid:gid".  The default
is the `user=` record of the image defaults file
(/usr/lib/ember/defaults, PROTOCOL.md "Image defaults"), else the
server's own user.  Switching happens in a worker after its fork, before
it runs anything of the user's.
"""
import grp
import os
import pwd

DEFAULTS = os.environ.get("EMBER_INTERP_DEFAULTS",
                          "/usr/lib/ember/defaults")
DEFAULTS_MAX = 64 << 10


class AccountError(Exception):
    pass


class Account:
    """Who a worker runs as: ids, supplementary groups, home, name."""

    def __init__(self, spec, uid, gid, groups, home, name):
        self.spec = spec            # as asked, for describe()
        self.uid = uid
        self.gid = gid
        self.groups = groups
        self.home = home
        self.name = name

    def switch(self):
        """In a forked worker: become this user (groups, gid, uid, in
        that order) and set HOME, USER and LOGNAME as login does."""
        if os.getuid() != self.uid or os.getgid() != self.gid:
            os.setgroups(self.groups)
            os.setgid(self.gid)
            os.setuid(self.uid)
        os.environ["HOME"] = self.home
        os.environ["USER"] = os.environ["LOGNAME"] = self.name


def defaults():
    """The image defaults file's records as a dict of lists (env, cwd,
    user); {} when there is none or it cannot be read."""
    out = {}
    try:
        with open(DEFAULTS, "rb") as f:
            data = f.read(DEFAULTS_MAX + 1)
    except OSError:
        return out
    if len(data) > DEFAULTS_MAX:
        return out
    for rec in data.split(b"\0"):
        key, sep, val = rec.partition(b"=")
        if sep:
            out.setdefault(key.decode("utf-8", "replace"), []).append(
                val.decode("utf-8", "replace"))
    return out


def _group(spec):
    if spec.isdigit():
        return int(spec)
    try:
        return grp.getgrnam(spec).gr_gid
    except KeyError:
        raise AccountError("no group %r in this sandbox" % spec)


def resolve(spec):
    """The Account for @spec (a str as above); AccountError when the
    user or group does not exist or the spec is malformed."""
    if not isinstance(spec, str) or not spec or len(spec) > 64 \
            or any(c in spec for c in "\0\n/"):
        raise AccountError("user must be a name or uid[:gid], not %r"
                           % (spec,))
    user, _, group = spec.partition(":")
    try:
        pw = pwd.getpwuid(int(user)) if user.isdigit() \
            else pwd.getpwnam(user)
    except KeyError:
        pw = None
    if pw is None and not user.isdigit():
        raise AccountError("no user %r in this sandbox" % user)
    uid = pw.pw_uid if pw else int(user)
    gid = _group(group) if group else (pw.pw_gid if pw else uid)
    name = pw.pw_name if pw else user
    groups = [gid]
    if pw and not group:
        groups = os.getgrouplist(pw.pw_name, gid)
    home = pw.pw_dir if pw and pw.pw_dir else "/"
    if uid != os.getuid() and os.getuid() != 0:
        raise AccountError("cannot run as %r: the interpreter does not "
                           "run as root" % spec)
    return Account(spec, uid, gid, groups, home, name)


def default_spec():
    """The image's default user, else None (the server's own)."""
    users = defaults().get("user") or []
    return users[-1] if users and users[-1] else None
