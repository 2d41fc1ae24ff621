#!/usr/bin/env python3
"""Offline test images for tests/integration/image_unpack.sh, by hand:
python's tarfile, json and hashlib, no registry and no root.

  mkoci.py layout DIR [--arch A] [--tag T]... [--bad-diff-id]
                                               an OCI image layout
  mkoci.py docker OUT.tar [--arch A]           a `docker save` archive
  mkoci.py busybox OUT.tar [--arch A] [--tag T] [--user U]
                                               a one-layer busybox image as an
                                               OCI archive (`ctr images import`)
  --user U: the config's User (default 1000:1000; "" leaves it out)

Two layers over busybox-static: the first (tar+gzip) holds the lower
files, the second (plain tar) a whiteout, an opaque directory, a hard
link, a char device 1:3, a FIFO, xattrs as pax records (user.k and a
security.capability), a 200-byte name in a ~3800-byte path, a setuid
file and a file owned 1000:1000.  The config's run defaults are fixed:
the test checks them.  With several --tag, each tag names its own copy
of the manifest (with a different Cmd), so that the index holds several.
--bad-diff-id: the config names a wrong diff_id for the second layer,
with every digest consistent (only the diff_id check can see it).
--zstd: the second layer as tar+zstd (by the zstd command).

busybox (tests/integration/containerd.sh, bench/containerd): one plain
tar layer, busybox-static with a link per applet in /bin, /etc/passwd
and /etc/group (root, u 1000), /srv, /tmp, /root, /home/u (1000:1000),
empty /proc /sys /dev; the config: Env PATH=/bin and IMGVAR=from-image,
WorkingDir /srv, Cmd ["sh"], User only with --user (default none: root);
the index names the manifest by the full reference T (ctr's import
keeps such a name; default docker.io/library/embertest:latest).
"""
import gzip
import hashlib
import io
import json
import os
import struct
import subprocess
import sys
import tarfile

BUSYBOX = "/bin/busybox"
LONG = "d" * 200
LONG_PATH = "/".join([LONG] * 18) + "/" + "f" * 200  # ~3800 bytes
# vfs_cap_data v2: magic|effective, permitted CAP_NET_RAW (13), 2 words.
CAP = struct.pack("<IIIII", 0x02000001, 1 << 13, 0, 0, 0)


def member(name, data=b"", **kw):
    ti = tarfile.TarInfo(name)
    ti.size = len(data)
    ti.mtime = 1700000000
    ti.mode = kw.pop("mode", 0o644)
    for k, v in kw.items():
        setattr(ti, k, v)
    return ti, (io.BytesIO(data) if data else None)


def layer(entries):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as t:
        for ti, f in entries:
            t.addfile(ti, f)
    return buf.getvalue()


def layers():
    with open(BUSYBOX, "rb") as f:
        bb = f.read()
    d = tarfile.DIRTYPE
    low = [
        member("bin", type=d, mode=0o755),
        member("bin/busybox", bb, mode=0o755),
        member("bin/sh", type=tarfile.SYMTYPE, linkname="busybox",
               mode=0o777),
        member("etc", type=d, mode=0o755),
        member("etc/passwd", b"root:x:0:0:root:/root:/bin/sh\n"),
        member("lower", type=d, mode=0o755),
        member("lower/gone", b"whited out\n"),
        member("lower/stays", b"stays\n"),
        member("opq", type=d, mode=0o755),
        member("opq/old", b"hidden by the opaque dir\n"),
    ]
    up = [
        member("lower", type=d, mode=0o755),
        member("lower/.wh.gone"),
        member("opq", type=d, mode=0o755),
        member("opq/.wh..wh..opq"),
        member("opq/new", b"new\n"),
        member("hl", type=d, mode=0o755),
        member("hl/a", b"linked\n"),
        member("hl/b", type=tarfile.LNKTYPE, linkname="hl/a"),
        member("dev", type=d, mode=0o755),
        member("dev/null2", type=tarfile.CHRTYPE, devmajor=1, devminor=3,
               mode=0o666),
        member("fifo", type=tarfile.FIFOTYPE, mode=0o644),
        member("x", b"xattrs\n",
               pax_headers={"SCHILY.xattr.user.k": "v"}),
        member("bin/cap", b"#!/bin/sh\n", mode=0o755,
               pax_headers={"SCHILY.xattr.security.capability":
                            CAP.decode("latin-1")}),
        member("bin/suid", b"#!/bin/sh\n", mode=0o4755),
        member("home", type=d, mode=0o755),
        member("home/u", type=d, mode=0o755, uid=1000, gid=1000),
        member("home/u/f", b"mine\n", uid=1000, gid=1000),
    ]
    parts = LONG_PATH.split("/")
    for i in range(1, len(parts)):
        up.append(member("/".join(parts[:i]), type=d, mode=0o755))
    up.append(member(LONG_PATH, b"long\n"))
    return layer(low), layer(up)


def sha(b):
    return hashlib.sha256(b).hexdigest()


USER = ["1000:1000"]  # --user U ("" leaves it out)


def config(arch, diff_ids, cmd):
    conf = {"Env": ["PATH=/bin", "FOO=bar baz"],
            "WorkingDir": "/srv", "User": USER[0],
            "Entrypoint": ["/bin/sh", "-c"], "Cmd": cmd}
    if not USER[0]:
        del conf["User"]
    return json.dumps({
        "architecture": arch, "os": "linux",
        "config": conf,
        "rootfs": {"type": "layers",
                   "diff_ids": ["sha256:" + d for d in diff_ids]},
    }, sort_keys=True).encode()


def write_blob(d, b):
    h = sha(b)
    with open(os.path.join(d, "blobs", "sha256", h), "wb") as f:
        f.write(b)
    return {"digest": "sha256:" + h, "size": len(b)}


def oci_layout(d, arch, tags, bad_diff_id=False, zstd=False):
    os.makedirs(os.path.join(d, "blobs", "sha256"))
    with open(os.path.join(d, "oci-layout"), "w") as f:
        json.dump({"imageLayoutVersion": "1.0.0"}, f)
    low, up = layers()
    lowgz = gzip.compress(low, mtime=0)
    ld = [dict(write_blob(d, lowgz),
               mediaType="application/vnd.oci.image.layer.v1.tar+gzip"),
          dict(write_blob(d, up),
               mediaType="application/vnd.oci.image.layer.v1.tar")]
    if zstd:
        import subprocess
        z = subprocess.run(["zstd", "-q", "-c"], input=up, check=True,
                           capture_output=True).stdout
        ld[1] = dict(write_blob(d, z),
                     mediaType="application/vnd.oci.image.layer.v1.tar+zstd")
    mans = []
    for i, tag in enumerate(tags or ["latest"]):
        cd = write_blob(d, config(arch, [sha(low),
                                         sha(up + b"x" if bad_diff_id else up)],
                                  ["echo", "image %d" % i]))
        cd["mediaType"] = "application/vnd.oci.image.config.v1+json"
        man = json.dumps({
            "schemaVersion": 2,
            "mediaType": "application/vnd.oci.image.manifest.v1+json",
            "config": cd, "layers": ld}).encode()
        md = dict(write_blob(d, man),
                  mediaType="application/vnd.oci.image.manifest.v1+json")
        md["annotations"] = {"org.opencontainers.image.ref.name": tag}
        mans.append(md)
    with open(os.path.join(d, "index.json"), "w") as f:
        json.dump({"schemaVersion": 2, "manifests": mans}, f)


def docker_archive(out, arch):
    low, up = layers()
    conf = config(arch, [sha(low), sha(up)], ["echo", "docker"])
    with tarfile.open(out, "w") as t:
        def add(name, b):
            ti, f = member(name, b)
            t.addfile(ti, f)
        names = []
        for b in (low, up):
            t.addfile(*member(sha(b), type=tarfile.DIRTYPE, mode=0o755))
            add(sha(b) + "/layer.tar", b)
            names.append(sha(b) + "/layer.tar")
        add(sha(conf) + ".json", conf)
        add("manifest.json", json.dumps([{
            "Config": sha(conf) + ".json", "RepoTags": ["mkoci:latest"],
            "Layers": names}]).encode())


def busybox_archive(out, arch, tag, user):
    with open(BUSYBOX, "rb") as f:
        bb = f.read()
    applets = subprocess.run([BUSYBOX, "--list"], check=True,
                             capture_output=True, text=True).stdout.split()
    d = tarfile.DIRTYPE
    ents = [member("bin", type=d, mode=0o755),
            member("bin/busybox", bb, mode=0o755)]
    ents += [member("bin/" + a, type=tarfile.SYMTYPE, linkname="busybox",
                    mode=0o777) for a in sorted(set(applets))
             if a != "busybox" and "/" not in a]
    ents += [member("etc", type=d, mode=0o755),
             member("etc/passwd", b"root:x:0:0:root:/root:/bin/sh\n"
                    b"u:x:1000:1000:u:/home/u:/bin/sh\n"),
             member("etc/group", b"root:x:0:\nu:x:1000:\n"),
             member("srv", type=d, mode=0o755),
             member("srv/hello", b"hello from the image\n"),
             member("tmp", type=d, mode=0o1777),
             member("root", type=d, mode=0o700),
             member("home", type=d, mode=0o755),
             member("home/u", type=d, mode=0o755, uid=1000, gid=1000),
             member("proc", type=d, mode=0o555),
             member("sys", type=d, mode=0o555),
             member("dev", type=d, mode=0o755)]
    lay = layer(ents)
    conf = {"Env": ["PATH=/bin", "IMGVAR=from-image"],
            "WorkingDir": "/srv", "Cmd": ["sh"]}
    if user:
        conf["User"] = user
    cb = json.dumps({
        "architecture": arch, "os": "linux", "config": conf,
        "rootfs": {"type": "layers", "diff_ids": ["sha256:" + sha(lay)]},
    }, sort_keys=True).encode()
    blobs = {}

    def desc(b, mt):
        blobs[sha(b)] = b
        return {"mediaType": mt, "digest": "sha256:" + sha(b),
                "size": len(b)}
    man = json.dumps({
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": desc(cb, "application/vnd.oci.image.config.v1+json"),
        "layers": [desc(lay, "application/vnd.oci.image.layer.v1.tar")],
    }).encode()
    md = desc(man, "application/vnd.oci.image.manifest.v1+json")
    md["annotations"] = {"org.opencontainers.image.ref.name": tag}
    files = [("oci-layout", b'{"imageLayoutVersion": "1.0.0"}'),
             ("index.json", json.dumps({"schemaVersion": 2,
                                        "manifests": [md]}).encode())]
    files += [("blobs/sha256/" + h, b) for h, b in blobs.items()]
    with tarfile.open(out, "w") as t:
        t.addfile(*member("blobs", type=d, mode=0o755))
        t.addfile(*member("blobs/sha256", type=d, mode=0o755))
        for name, b in files:
            t.addfile(*member(name, b))


def main(a):
    arch, tags, bad, zstd = "amd64", [], False, False
    if len(a) < 2:
        sys.exit(__doc__)
    kind, path = a[0], a[1]
    user_set = False
    rest = a[2:]
    while rest:
        if rest[0] in ("--bad-diff-id", "--zstd"):
            bad |= rest[0] == "--bad-diff-id"
            zstd |= rest[0] == "--zstd"
            rest = rest[1:]
            continue
        if rest[0] == "--arch":
            arch = rest[1]
        elif rest[0] == "--tag":
            tags.append(rest[1])
        elif rest[0] == "--user":
            USER[0] = rest[1]
            user_set = True
        else:
            sys.exit("mkoci.py: unknown option " + rest[0])
        rest = rest[2:]
    if kind == "layout":
        oci_layout(path, arch, tags, bad, zstd)
    elif kind == "docker":
        docker_archive(path, arch)
    elif kind == "busybox":
        busybox_archive(path, arch,
                        tags[-1] if tags else
                        "docker.io/library/embertest:latest",
                        USER[0] if user_set else "")
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv[1:])
