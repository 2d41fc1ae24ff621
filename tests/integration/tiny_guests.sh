#!/usr/bin/env bash
# Tiny freestanding guests (tests/guests/, built by `make guests`): each
# boots through `ember --kernel X.elf`, prints its checks on the serial
# console and ends the VM through the exit-status device.  Milliseconds
# each, even where guest CPL0 code is emulated (PVM hosts).
set -u
cd "$(dirname "$0")/../.."
. tests/lib.sh

G=${GUESTS:-build/guests}

need_kvm "tiny guests"

# run NAME [ARG...]: boot $G/NAME.elf with ember's extra ARGs (and with
# --append "$APPEND" when set); sets rc, ms, and $TMP/NAME.{out,err}.
run() {
	local name=$1 t0 t1
	shift
	t0=$(date +%s%N)
	timeout -k 5 60 "$EMBER" --kernel "$G/$name.elf" --mem 64 \
		${APPEND:+--append "$APPEND"} "$@" \
		>"$TMP/$name.out" 2>"$TMP/$name.err" </dev/null
	rc=$?
	t1=$(date +%s%N)
	ms=$(((t1 - t0) / 1000000))
}

# sanitizer_free NAME: no ASan/UBSan report on ember's stderr.
sanitizer_free() {
	! grep -Eq 'AddressSanitizer|LeakSanitizer|runtime error|UndefinedBehaviorSanitizer' \
		"$TMP/$1.err"
}

# expect NAME STATUS STDOUT-REGEX [STDERR-REGEX...]: the guest's VM (with
# ember's extra arguments from the array EXTRA, when set) ends with STATUS
# within 60 s, stdout matches ('' matches anything), stderr matches every
# STDERR-REGEX and holds no sanitizer report.
expect() {
	local name=$1 want=$2 out_re=$3 why=() re
	shift 3
	if [ ! -f "$G/$name.elf" ]; then
		not_ok "$name" "$G/$name.elf missing: run make guests"
		return
	fi
	run "$name" ${EXTRA[@]+"${EXTRA[@]}"}
	[ "$rc" = "$want" ] || why+=("exit $rc, want $want")
	if [ -n "$out_re" ] && ! grep -Eq -- "$out_re" "$TMP/$name.out"; then
		why+=("stdout does not match '$out_re'")
	fi
	for re in "$@"; do
		grep -Eq -- "$re" "$TMP/$name.err" ||
			why+=("stderr does not match '$re'")
	done
	sanitizer_free "$name" || why+=("sanitizer report on stderr")
	if [ ${#why[@]} = 0 ]; then
		ok "$name guest${APPEND:+ ($APPEND)}: exit $rc in $ms ms"
	else
		not_ok "$name guest${APPEND:+ ($APPEND)}" "${why[@]}" "stdout:" \
			"$(tail -n 8 "$TMP/$name.out")" "stderr:" \
			"$(head -c 1500 "$TMP/$name.err")"
	fi
}

expect hello 0 '^hello from a tiny guest$'
expect exit_code 42 'returning 42'
expect int3 0 'int3: all checks passed'
# The XSAVE cases need a CPU that offers XSAVE to the guest (the KVM box
# hides it: see tests/kvmbox/kvmbox); without one the guests check the rest
# (ldmxcsr, stmxcsr, fwait) and say so.
if grep -qw xsave /proc/cpuinfo; then
	expect fpu 0 'fpu: all checks passed'
else
	expect fpu 0 'fpu: no XSAVE: xsave checks skipped'
	echo "ok - # SKIP fpu: the XSAVE cases (this CPU offers no XSAVE to guests)"
fi
if [ -e /sys/module/kvm_pvm ]; then
	# The PVM emulator cannot run lock cmpxchg16b: ember stops the VM
	# and names the instruction; it must not hang or carry on.
	expect unemulatable 125 '' 'cannot emulate' 'f0 48 0f c7'
else
	expect unemulatable 0 'ok - cmpxchg16b swapped'
fi
# Hostile port/MMIO traffic and XSAVE operands: ember carries on and the
# architectural answers hold (see the guests' comments).
# hostile_io reads the first virtio-mmio slot (0xd0010000) as unclaimed
# MMIO: keep it empty (no drive, no virtio-rng).
EXTRA=(--no-rng)
expect hostile_io 0 'hostile_io: all checks passed'
EXTRA=()
if grep -qw xsave /proc/cpuinfo; then
	expect hostile_xsave 0 'hostile_xsave: all checks passed'
else
	expect hostile_xsave 0 'hostile_xsave: no XSAVE: skipped'
	echo "ok - # SKIP hostile_xsave: this CPU offers no XSAVE to guests"
fi
# XSAVE areas the guest's page tables put outside guest RAM: on a PVM host
# ember's emulation stops the VM with one clear error by design.  Natively
# the instruction runs, or KVM cannot emulate it against non-RAM and ember
# stops: either way no hang and no sanitizer report.
for n in 1 2 3 4; do
	if [ -e /sys/module/kvm_pvm ]; then
		APPEND="xcase=$n" expect xsave_outside_ram 125 "case 0x$n" \
			'reaches outside guest RAM' 'cannot emulate'
		continue
	fi
	APPEND="xcase=$n" run xsave_outside_ram
	if { [ "$rc" = 0 ] || [ "$rc" = 125 ]; } &&
		sanitizer_free xsave_outside_ram; then
		ok "xsave_outside_ram guest (xcase=$n): exit $rc in $ms ms"
	else
		not_ok "xsave_outside_ram guest (xcase=$n)" "exit $rc" \
			"$(head -c 1500 "$TMP/xsave_outside_ram.err")"
	fi
done

# virtio: a minimal polled driver (tests/guests/virtio.h) on a 1 MiB drive
# in slot 0 and the virtio-rng in slot 1.  virtio_blk_ok: the normal path
# and request errors; its T_OUT must reach the image.  virtio_hostile:
# broken chains, rings and register sequences; ember stays up, each case
# behaves as the spec allows and the last requests succeed.
truncate -s 1M "$TMP/disk.img" "$TMP/hostile.img"
EXTRA=(--drive "path=$TMP/disk.img,id=tiny-disk")
expect virtio_blk_ok 0 'virtio_blk_ok: all checks passed'
check "virtio_blk_ok: the guest's write is in the image" \
	"sector 5 does not start with 'ember virtio-blk'" \
	test "$(dd if="$TMP/disk.img" bs=512 skip=5 count=1 2>/dev/null |
		head -c 16)" = "ember virtio-blk"
EXTRA=(--drive "path=$TMP/hostile.img,id=tiny-disk")
expect virtio_hostile 0 'virtio_hostile: all checks passed'
EXTRA=()

# virtio_blk_rate: a 1 MiB drive (sector N starts with 0x5241544500000000
# + N) read in 16 requests of 64 KiB, then 64 flushes, four in the ring at
# a time, every one checked in order.  Under a rate limiter (--drive bw=,
# ops=; the bucket starts full) the run must take at least 0.7 x the time
# the limit allows, and an unlimited run must be faster than that bound,
# or the measure could not tell.
python3 -c 'import struct, sys
sys.stdout.buffer.write(b"".join(struct.pack("<Q", 0x5241544500000000 + s)
    + bytes(504) for s in range(2048)))' >"$TMP/rate.img"
# rate_case PART MIN-MS WHAT: the guest under --drive ...,PART.
rate_case() {
	EXTRA=(--drive "path=$TMP/rate.img,id=rate${1:+,$1}")
	expect virtio_blk_rate 0 'virtio_blk_rate: all checks passed'
	if [ "$rc" = 0 ]; then
		check "virtio_blk_rate ${1:-unlimited}: $3 took $ms ms" \
			"$ms ms, want at least $2" [ "$ms" -ge "$2" ]
	fi
	EXTRA=()
}
# The lower bounds below hold on any host: a limiter cannot let paced work
# through faster than its rate.  How fast an unlimited run is depends on
# the host: bench/ratelimit measures it, next to the limited ones.
expect_fast=1225 # ms: the bandwidth case's bound (1750 ms of pacing)
EXTRA=(--drive "path=$TMP/rate.img,id=rate")
expect virtio_blk_rate 0 'virtio_blk_rate: all checks passed'
EXTRA=()
# 128 KiB / 250 ms: 896 KiB past the full bucket take 1750 ms.
rate_case bw=131072/250 "$expect_fast" "1 MiB at 512 KiB/s (>= 1750 ms)"
# 16 requests / 250 ms: 64 of the 80 past the full bucket take 1000 ms.
rate_case ops=16/250 700 "80 requests at 64/s (>= 1000 ms)"
