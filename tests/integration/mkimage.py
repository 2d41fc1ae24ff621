#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Write a crafted kernel image for tests/integration/bad_input.sh.

    mkimage.py OUT elf [--offset N] [--paddr N] [--filesz N] [--memsz N]
                       [--entry N] [--phnum N] [--phoff N] [--overlap]
                       [--status N]
    mkimage.py OUT bz  [--setup-sects N] [--init-size N] [--pref N]
                       [--jump N] [--size N] [--syssize N]
                       [--payload-offset N] [--payload-length N]
                       [--status N]

ELF: one PT_LOAD (defaults: file offset 0x1000, 16 MiB, 0x20 bytes of
code, entry at its start); --overlap adds a second PT_LOAD that overlaps
the first and carries the code.  bzImage: a protocol-2.15 64-bit header
and the code at the 64-bit entry (protected-mode start + 0x200);
syssize covers the rest of the file and the payload lies after the code
unless given.  The
code stores --status at the exit-status device (0xd0001000) and halts;
without --status it just halts.
"""
import argparse
import struct

EXIT_STATUS_GPA = 0xD0001000
KERNEL_GPA = 0x1000000


def code(status):
    if status is None:
        return b"\xfa\xf4\xeb\xfd"  # cli; hlt; jmp .-1
    # mov edi, 0xd0001000; mov dword [rdi], status; cli; hlt; jmp .-1
    return (b"\xbf" + struct.pack("<I", EXIT_STATUS_GPA) + b"\xc7\x07" +
            struct.pack("<I", status) + b"\xfa\xf4\xeb\xfd")


def num(s):
    return int(s, 0)


def elf(a):
    phdrs = [(a.offset, a.paddr, a.filesz, a.memsz)]
    body = code(a.status)
    if a.overlap:
        # The first segment holds junk at the entry; the second, loaded
        # after it over the same addresses, holds the code.
        phdrs = [(0x1000, a.paddr, 0x20, 0x1000),
                 (0x2000, a.paddr, 0x20, 0x800)]
    n = len(phdrs) if a.phnum is None else a.phnum
    eh = b"\x7fELF" + bytes([2, 1, 1, 0]) + bytes(8)
    eh += struct.pack("<HHIQQQIHHHHHH", 2, 62, 1,
                      a.paddr if a.entry is None else a.entry, a.phoff, 0,
                      0, 64, 56, n, 64, 0, 0)
    ph = b"".join(struct.pack("<IIQQQQQQ", 1, 7, off, pa, pa, fsz, msz,
                              0x1000) for off, pa, fsz, msz in phdrs)
    out = bytearray((eh + ph).ljust(0x1000, b"\0"))
    if a.overlap:
        out += b"\xcc" * 0x1000
        out += body.ljust(0x20, b"\0")
    else:
        out += body.ljust(0x20, b"\0")
    return bytes(out)


def bz(a):
    b = bytearray(a.size)
    b[0x1F1] = a.setup_sects
    struct.pack_into("<H", b, 0x1FE, 0xAA55)
    b[0x200] = 0xEB  # jmp over the header
    b[0x201] = a.jump
    struct.pack_into("<I", b, 0x202, 0x53726448)  # "HdrS"
    struct.pack_into("<H", b, 0x206, 0x020F)
    struct.pack_into("<H", b, 0x236, 1)  # XLF_KERNEL_64
    struct.pack_into("<Q", b, 0x258, a.pref)
    struct.pack_into("<I", b, 0x260, a.init_size)
    pm_len = max(a.size - (a.setup_sects + 1) * 512, 0)
    struct.pack_into("<I", b, 0x1F4,
                     pm_len // 16 if a.syssize is None else a.syssize)
    struct.pack_into("<II", b, 0x248, a.payload_offset,
                     max(pm_len - a.payload_offset, 1)
                     if a.payload_length is None else a.payload_length)
    entry = (a.setup_sects + 1) * 512 + 0x200
    body = code(a.status)
    if entry + len(body) <= len(b):
        b[entry:entry + len(body)] = body
    return bytes(b)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("out")
    p.add_argument("kind", choices=["elf", "bz"])
    p.add_argument("--offset", type=num, default=0x1000)
    p.add_argument("--paddr", type=num, default=KERNEL_GPA)
    p.add_argument("--filesz", type=num, default=0x20)
    p.add_argument("--memsz", type=num, default=0x1000)
    p.add_argument("--entry", type=num)
    p.add_argument("--phnum", type=num)
    p.add_argument("--phoff", type=num, default=64)
    p.add_argument("--overlap", action="store_true")
    p.add_argument("--setup-sects", type=num, default=4)
    p.add_argument("--init-size", type=num, default=0x100000)
    p.add_argument("--pref", type=num, default=KERNEL_GPA)
    p.add_argument("--jump", type=num, default=0x6A)
    p.add_argument("--size", type=num, default=0x10000)
    p.add_argument("--syssize", type=num)
    p.add_argument("--payload-offset", type=num, default=0x300)
    p.add_argument("--payload-length", type=num)
    p.add_argument("--status", type=num)
    a = p.parse_args()
    with open(a.out, "wb") as f:
        f.write(elf(a) if a.kind == "elf" else bz(a))


if __name__ == "__main__":
    main()
