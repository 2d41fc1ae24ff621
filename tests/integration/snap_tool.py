#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Helpers for the snapshot tests (tests/integration/snapshot_files.sh).

    snap_tool.py sections STATE            each section: "NAME OFFSET END"
    snap_tool.py set-version STATE OUT V   OUT: STATE with format version V
                                           and a correct CRC
    snap_tool.py rebase STATE OUT FILE     OUT: the Diff snapshot STATE whose
                                           memory section names FILE (its
                                           real size and mtime) as its base,
                                           with a correct CRC
    snap_tool.py corrupt-loads SOCK STATE MEM STEP
                                           every STEP-byte block of STATE
                                           inverted in turn, then cut at
                                           every section boundary; each
                                           loaded through SOCK must get a
                                           400 "Load snapshot error";
                                           prints "refused=N accepted=M"
                                           and the first few accepted
"""
import json
import os
import struct
import sys
import tempfile
import zlib

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from api_client import UnixConnection  # noqa: E402


def sections(data):
    """(name, start, end) of each section, per snapshot/state.h."""
    out = []
    off = 32
    n = struct.unpack_from("<I", data, 24)[0]
    for _ in range(n):
        start = off
        ln = data[off]
        name = data[off + 1:off + 1 + ln].decode()
        off += 1 + ln
        _ver, plen = struct.unpack_from("<IQ", data, off)
        off += 12 + plen
        out.append((name, start, off))
    return out


def rebase(data, path):
    """The Diff state @data with its memory section's base set to @path."""
    st = os.stat(path)
    out = bytearray(data[:32])
    for name, start, end in sections(data):
        if name != "memory":
            out += data[start:end]
            continue
        ln = data[start]
        ver, plen = struct.unpack_from("<IQ", data, start + 1 + ln)
        p = start + 1 + ln + 12
        ram, diff, comp = struct.unpack_from("<QBB", data, p)
        q = p + 10
        blen = struct.unpack_from("<I", data, q)[0]
        rest = data[q + 4 + blen + 16:end]  # after path, size, mtime
        b = path.encode()
        payload = (struct.pack("<QBB", ram, diff, comp) +
                   struct.pack("<I", len(b)) + b +
                   struct.pack("<QQ", st.st_size, st.st_mtime_ns) + rest)
        out += data[start:start + 1 + ln] + struct.pack("<IQ", ver, len(payload))
        out += payload
    struct.pack_into("<Q", out, 16, len(out) + 4)
    return with_crc(bytes(out))


def with_crc(body):
    return body + struct.pack("<I", zlib.crc32(body) & 0xffffffff)


def load(conn, state, mem):
    body = json.dumps({"snapshot_path": state,
                       "mem_backend": {"backend_type": "File",
                                       "backend_path": mem}})
    conn.request("PUT", "/snapshot/load", body=body,
                 headers={"Content-Type": "application/json"})
    r = conn.getresponse()
    return r.status, r.read().decode(errors="replace")


def corrupt_loads(sock, state, mem, step):
    data = open(state, "rb").read()
    conn = UnixConnection(sock)
    refused, accepted = 0, []
    fd, bad = tempfile.mkstemp(dir=os.path.dirname(state))
    os.close(fd)
    cases = []
    for off in range(0, len(data), step):
        blk = bytes(b ^ 0xff for b in data[off:off + step])
        cases.append(("flip@%d" % off, data[:off] + blk + data[off + step:]))
    for name, start, end in sections(data):
        for cut in (start, start + 1, end - 1):
            cases.append(("cut@%d(%s)" % (cut, name), data[:cut]))
    cases.append(("cut-crc", data[:-4]))
    cases.append(("empty", b""))
    for name, blob in cases:
        with open(bad, "wb") as f:
            f.write(blob)
        status, text = load(conn, bad, mem)
        if status == 400 and "Load snapshot error" in text:
            refused += 1
        else:
            accepted.append("%s: %d %s" % (name, status, text[:120]))
    os.unlink(bad)
    print("refused=%d accepted=%d" % (refused, len(accepted)))
    for a in accepted[:5]:
        print("  " + a)


def main():
    cmd = sys.argv[1]
    if cmd == "sections":
        for name, start, end in sections(open(sys.argv[2], "rb").read()):
            print(name, start, end)
    elif cmd == "set-version":
        data = bytearray(open(sys.argv[2], "rb").read())
        struct.pack_into("<I", data, 8, int(sys.argv[4]))
        open(sys.argv[3], "wb").write(with_crc(bytes(data[:-4])))
    elif cmd == "rebase":
        data = open(sys.argv[2], "rb").read()
        open(sys.argv[3], "wb").write(rebase(data, sys.argv[4]))
    elif cmd == "corrupt-loads":
        corrupt_loads(sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]))
    else:
        sys.exit("unknown command " + cmd)


if __name__ == "__main__":
    main()
