#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A page server for ember's Uffd memory backend (tests only).

    uffd_server.py SOCK MEMFILE

Listens on the Unix socket SOCK; the VMM connects and sends, in one
message, a JSON array of regions [{"base_host_virt_addr", "size",
"offset", "page_size"}] with its userfaultfd as SCM_RIGHTS (Firecracker's
handshake).  Each missing-page fault is then answered with UFFDIO_COPY of
that page from the raw memory file MEMFILE.  Prints "served N pages" when
the VMM goes away.
"""
import array
import ctypes
import fcntl
import json
import mmap
import os
import select
import socket
import struct
import sys

UFFDIO_COPY = 0xC028AA03  # _IOWR(0xAA, 0x03, struct uffdio_copy)
UFFD_EVENT_PAGEFAULT = 0x12
PAGE = 4096


def main():
    path, memfile = sys.argv[1], sys.argv[2]
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(path)
    srv.listen(1)
    conn, _ = srv.accept()
    fds = array.array("i")
    msg, anc, _, _ = conn.recvmsg(4096, socket.CMSG_SPACE(fds.itemsize))
    for level, kind, data in anc:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds.frombytes(data[:fds.itemsize])
    uffd = fds[0]
    regions = json.loads(msg)
    f = open(memfile, "rb")
    mem = mmap.mmap(f.fileno(), 0, flags=mmap.MAP_PRIVATE,
                    prot=mmap.PROT_READ | mmap.PROT_WRITE)
    base = ctypes.addressof(ctypes.c_char.from_buffer(mem))
    served = 0
    poll = select.poll()
    poll.register(uffd, select.POLLIN)
    poll.register(conn.fileno(), select.POLLIN)
    while True:
        ev = dict(poll.poll())
        if conn.fileno() in ev and not conn.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT):
            break
        if uffd not in ev:
            continue
        try:
            raw = os.read(uffd, 32)
        except BlockingIOError:
            continue
        if len(raw) < 32 or raw[0] != UFFD_EVENT_PAGEFAULT:
            continue
        addr = struct.unpack_from("<Q", raw, 16)[0] & ~(PAGE - 1)
        for r in regions:
            start = r["base_host_virt_addr"]
            if start <= addr < start + r["size"]:
                src = base + r["offset"] + (addr - start)
                req = bytearray(struct.pack("<QQQQq", addr, src, PAGE, 0, 0))
                try:
                    fcntl.ioctl(uffd, UFFDIO_COPY, req, True)
                    served += 1
                except OSError:
                    pass  # EEXIST: another fault on that page was served
                break
    print("served %d pages" % served, flush=True)


if __name__ == "__main__":
    main()
