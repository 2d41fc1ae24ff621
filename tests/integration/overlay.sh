#!/usr/bin/env bash
# End-to-end: copy-on-write overlays (snapshot/overlay.h) under real Linux
# boots of the default guest.  The overlays are made by an independent
# Python writer of the documented format, and read back (flattened) by an
# independent Python reader, so that the C code and the format's text are
# checked against each other.
#   boot A  the root filesystem on an overlay over a copy of the rootfs:
#           the guest writes a file; the base is byte for byte unchanged,
#           the overlay holds clusters, base + overlay is a clean ext4
#           with the file in it
#   boot B  the same overlay again (the file is still there), next to
#           boot C on a second overlay over the same base at the same
#           time (a base is shared; each sandbox writes its own clusters)
#   boot D  a raw scratch drive: the guest cannot make it start with the
#           overlay magic (a raw image must never turn into an overlay)
#   then    a base changed since the overlay was made is refused with a
#           line naming both files; so is a corrupt overlay
set -u
cd "$(dirname "$0")/../.."
. tests/lib.sh

need_kvm "overlay boot tests"
K=$GUEST/bzImage
BOOT_TIMEOUT=${BOOT_TIMEOUT:-600}

boot() {
	local name=$1
	shift
	( timeout "$BOOT_TIMEOUT" "$EMBER" "$@" >"$TMP/$name.out" \
		2>"$TMP/$name.err" </dev/null
	  echo $? >"$TMP/$name.rc" ) &
}
status_is() { [ "$(cat "$TMP/$1.rc")" = "$2" ]; }
out_has() { grep -qxF -- "$2" "$TMP/$1.out"; }
show() { echo "#   exit $(cat "$TMP/$1.rc"); stdout:"; sed 's/^/#     /' "$TMP/$1.out" | tail -20; echo "#   stderr:"; sed 's/^/#     /' "$TMP/$1.err" | tail -20; }
clean() { [ "$(cat "$TMP/$1.rc")" = 0 ] && ! grep -qE 'AddressSanitizer|runtime error|LeakSanitizer' "$TMP/$1.err"; }

# ovl create OVL BASE | ovl count OVL | ovl flatten OVL OUT
ovl() {
	python3 - "$@" <<'EOF'
import os, struct, sys, zlib

HDR, MAGIC, BITS = 4096, b"EMBROVLY", 16
EDGE, BLOCK, STRIDE = 64 << 10, 4096, 64 << 20

def base_crc(f, size):
    def rd(off, n):
        f.seek(off)
        return f.read(n)
    c = zlib.crc32(rd(0, min(size, EDGE)))
    off = STRIDE
    while off < size:
        c = zlib.crc32(rd(off, min(BLOCK, size - off)), c)
        off += STRIDE
    n = min(size, EDGE)
    return zlib.crc32(rd(size - n, n), c) & 0xffffffff

def header(path):
    with open(path, "rb") as f:
        h = f.read(HDR)
    assert h[:8] == MAGIC, "magic"
    assert struct.unpack_from("<I", h, HDR - 4)[0] == zlib.crc32(h[:HDR - 4]), "crc"
    ver, bits, size, moff, n, doff = struct.unpack_from("<IIQQQQ", h, 8)
    plen = struct.unpack_from("<I", h, 60)[0]
    return bits, size, moff, n, h[80:80 + plen].decode()

def entries(path):
    bits, size, moff, n, base = header(path)
    with open(path, "rb") as f:
        f.seek(moff)
        return bits, size, base, struct.unpack("<%dQ" % n, f.read(8 * n))

cmd = sys.argv[1]
if cmd == "create":
    out, base = sys.argv[2], os.path.realpath(sys.argv[3])
    st = os.stat(base)
    size, cs = st.st_size, 1 << BITS
    n = (size + cs - 1) // cs
    doff = (HDR + 8 * n + cs - 1) // cs * cs
    with open(base, "rb") as f:
        crc = base_crc(f, size)
    p = base.encode()
    h = bytearray(HDR)
    h[:8] = MAGIC
    struct.pack_into("<IIQQQQQIIQII", h, 8, 1, BITS, size, HDR, n, doff,
                     size, crc, len(p), st.st_mtime_ns // 10**9,
                     st.st_mtime_ns % 10**9, 0)
    h[80:80 + len(p)] = p
    struct.pack_into("<I", h, HDR - 4, zlib.crc32(h[:HDR - 4]))
    fd = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    os.ftruncate(fd, doff)
    os.pwrite(fd, bytes(h), 0)
    os.close(fd)
elif cmd == "count":
    print(sum(1 for e in entries(sys.argv[2])[3] if e))
elif cmd == "flatten":
    bits, size, base, ents = entries(sys.argv[2])
    cs = 1 << bits
    with open(sys.argv[2], "rb") as o, open(base, "rb") as b, \
         open(sys.argv[3], "wb") as out:
        for i, e in enumerate(ents):
            n = min(cs, size - i * cs)
            src, off = (o, e) if e else (b, i * cs)
            src.seek(off)
            out.write(src.read(n))
EOF
}

cp --sparse=always "$GUEST/rootfs.ext4" "$TMP/base.ext4"
cp --sparse=always "$TMP/base.ext4" "$TMP/base.orig"
ovl create "$TMP/a.ovl" "$TMP/base.ext4"
ovl create "$TMP/c.ovl" "$TMP/base.ext4"
check "python: overlays made (the format as documented)" "" \
	test -s "$TMP/a.ovl" -a -s "$TMP/c.ovl"

boot A --kernel "$K" --drive "path=$TMP/a.ovl,root" --mem 256 -v \
	--run 'echo from-overlay >/root/x; sync; cat /root/x'
wait
check "A: the guest wrote and read a file on the overlay root" "$(show A)" \
	out_has A "from-overlay"
check "A: exit 0, no sanitizer report" "$(show A)" clean A
check "A: ember said the drive is an overlay" "$(show A)" \
	grep -q "overlay $TMP/a.ovl: over $TMP/base.ext4" "$TMP/A.err"
check "A: the base is byte for byte unchanged" "" \
	cmp -s "$TMP/base.ext4" "$TMP/base.orig"
n=$(ovl count "$TMP/a.ovl")
check "A: the overlay holds clusters the guest wrote ($n)" "" \
	test "$n" -gt 0
ovl flatten "$TMP/a.ovl" "$TMP/a.flat"
check "A: base + overlay is a clean ext4 (e2fsck)" "" \
	sh -c "e2fsck -fn '$TMP/a.flat' >/dev/null 2>&1"
check "A: the file is in base + overlay (debugfs)" "" \
	sh -c "debugfs -R 'cat /root/x' '$TMP/a.flat' 2>/dev/null | grep -qx from-overlay"

boot B --kernel "$K" --drive "path=$TMP/a.ovl,root" --mem 256 \
	--run 'cat /root/x; ls /root/x 2>&1'
boot C --kernel "$K" --drive "path=$TMP/c.ovl,root" --mem 256 \
	--run 'ls /root/x 2>&1; echo c-was-here >/root/y; sync'
wait
check "B: the file survived into the next boot" "$(show B)" \
	out_has B "from-overlay"
check "B: exit 0" "$(show B)" clean B
check "C: a second overlay on the same base, at the same time" "$(show C)" \
	sh -c "grep -q 'No such file' '$TMP/C.out' && [ \"\$(cat '$TMP/C.rc')\" = 0 ]"
check "B, C: the base is still unchanged" "" \
	cmp -s "$TMP/base.ext4" "$TMP/base.orig"

# Boot D: a raw drive the guest tries to turn into an overlay.
truncate -s 1M "$TMP/raw.img"
boot D --kernel "$K" --drive "path=$TMP/c.ovl,root" \
	--drive "path=$TMP/raw.img" --mem 256 \
	--run 'if printf EMBROVLY | dd of=/dev/vdb bs=512 count=1 conv=sync,fsync 2>/dev/null; then echo magic-written; else echo magic-refused; fi
if printf EMBROVLZ | dd of=/dev/vdb bs=512 count=1 conv=sync,fsync 2>/dev/null; then echo other-written; else echo other-refused; fi'
wait
check "D: the guest cannot write the overlay magic at a raw disk's start" \
	"$(show D)" out_has D "magic-refused"
check "D: other bytes there are fine" "$(show D)" out_has D "other-written"
check "D: the raw image does not start with the magic" "$(show D)" \
	sh -c "[ \"\$(head -c 8 '$TMP/raw.img')\" = EMBROVLZ ]"

# A changed base, a corrupt overlay: refused before the guest runs.
printf 'X' | dd of="$TMP/base.ext4" bs=1 seek=100 conv=notrunc 2>/dev/null
boot E --kernel "$K" --drive "path=$TMP/a.ovl,root" --mem 256 --run 'true'
wait
check "E: a changed base is refused, naming the overlay and the base" \
	"$(show E)" sh -c "[ \"\$(cat '$TMP/E.rc')\" = 125 ] && grep -q 'overlay $TMP/a.ovl: base $TMP/base.ext4 changed since the overlay was made' '$TMP/E.err'"
cp "$TMP/base.orig" "$TMP/base.ext4"
printf '\377' | dd of="$TMP/a.ovl" bs=1 seek=20 conv=notrunc 2>/dev/null
boot F --kernel "$K" --drive "path=$TMP/a.ovl,root" --mem 256 --run 'true'
wait
check "F: a corrupt overlay header is refused" "$(show F)" \
	sh -c "[ \"\$(cat '$TMP/F.rc')\" = 125 ] && grep -q 'overlay $TMP/a.ovl: corrupt header' '$TMP/F.err'"

# Boot G: PATCH /drives swaps a running raw drive for an overlay; the
# guest sees the overlay's base, then writes through it.
C="python3 tests/integration/api_client.py"
printf 'BASE-TWO' | dd of="$TMP/base2.img" bs=1M count=1 conv=sync 2>/dev/null
cp "$TMP/base2.img" "$TMP/base2.orig"
printf 'RAW-DATA' | dd of="$TMP/d.img" bs=1M count=1 conv=sync 2>/dev/null
ovl create "$TMP/g.ovl" "$TMP/base2.img"
ovl create "$TMP/bad.ovl" "$TMP/base2.img"
cmdG='rd() { echo 3 >/proc/sys/vm/drop_caches; dd if=/dev/vdb bs=8 count=1 2>/dev/null; }
for i in $(seq 600); do x=$(rd); echo "seen $x"
if [ "$x" = BASE-TWO ]; then printf NEW-DATA | dd of=/dev/vdb bs=512 count=1 conv=sync,fsync 2>/dev/null && echo wrote; echo "after $(rd)"; break; fi
sleep 0.2; done'
boot G --kernel "$K" --api-sock "$TMP/g.sock" --drive "path=$TMP/c.ovl,root" \
	--drive "path=$TMP/d.img,id=data" --mem 256 --run "$cmdG"
for _ in $(seq 600); do grep -q '^seen RAW-DATA' "$TMP/G.out" 2>/dev/null && break; sleep 0.2; done
printf Y | dd of="$TMP/base2.img" bs=1 seek=100 conv=notrunc 2>/dev/null
badbase=$($C req "$TMP/g.sock" PATCH /drives/data "{\"drive_id\":\"data\",\"path_on_host\":\"$TMP/bad.ovl\"}")
cp "$TMP/base2.orig" "$TMP/base2.img"
printf '\377' | dd of="$TMP/bad.ovl" bs=1 seek=20 conv=notrunc 2>/dev/null
badovl=$($C req "$TMP/g.sock" PATCH /drives/data "{\"drive_id\":\"data\",\"path_on_host\":\"$TMP/bad.ovl\"}")
good=$($C req "$TMP/g.sock" PATCH /drives/data "{\"drive_id\":\"data\",\"path_on_host\":\"$TMP/g.ovl\"}")
wait
check "G: PATCH /drives to an overlay over a changed base: 400, says why" "$badbase" \
	sh -c "echo '$badbase' | grep -q '^400 .*overlay: base $TMP/base2.img changed since the overlay was made'"
check "G: PATCH /drives to a corrupt overlay: 400, says why" "$badovl" \
	sh -c "echo '$badovl' | grep -q '^400 .*overlay: corrupt header'"
check "G: PATCH /drives to an overlay: 204" "$good" [ "${good%% *}" = 204 ]
check "G: the guest saw the raw drive, then the overlay's base" "$(show G)" \
	sh -c "grep -q '^seen RAW-DATA' '$TMP/G.out' && grep -q '^seen BASE-TWO' '$TMP/G.out'"
check "G: the guest wrote through the overlay and read it back" "$(show G)" \
	sh -c "grep -qx wrote '$TMP/G.out' && grep -qx 'after NEW-DATA' '$TMP/G.out'"
check "G: exit 0" "$(show G)" clean G
check "G: the raw image and the base are unchanged" "" \
	sh -c "[ \"\$(head -c 8 '$TMP/d.img')\" = RAW-DATA ] && cmp -s '$TMP/base2.img' '$TMP/base2.orig'"
ovl flatten "$TMP/g.ovl" "$TMP/g.flat"
check "G: base + overlay starts with what the guest wrote" "" \
	sh -c "[ \"\$(head -c 8 '$TMP/g.flat')\" = NEW-DATA ]"
