#!/usr/bin/env bash
# End-to-end: real Linux boots of the default guest (build/guest).  Boots
# are slow where guest kernel mode is emulated (~25 s each on PVM hosts),
# so each boot serves several checks and two boots run at a time.
set -u
cd "$(dirname "$0")/../.."
. tests/lib.sh

need_kvm "Linux boot tests"
K=$GUEST/vmlinux
I=$GUEST/initramfs.cpio
BOOT_TIMEOUT=${BOOT_TIMEOUT:-600}

# boot NAME ARGS...: run ember in the background; results in $TMP/NAME.*
boot() {
	local name=$1
	shift
	( timeout "$BOOT_TIMEOUT" "$EMBER" "$@" >"$TMP/$name.out" \
		2>"$TMP/$name.err" <"${STDIN:-/dev/null}"
	  echo $? >"$TMP/$name.rc" ) &
}

status_is() { [ "$(cat "$TMP/$1.rc")" = "$2" ]; }
out_has() { grep -qxF -- "$2" "$TMP/$1.out"; }
no_sanitizer_report() { ! grep -qE 'AddressSanitizer|runtime error|LeakSanitizer' "$TMP/$1.err"; }
show() { echo "#   exit $(cat "$TMP/$1.rc"); stdout:"; sed 's/^/#     /' "$TMP/$1.out" | tail -20; echo "#   stderr:"; sed 's/^/#     /' "$TMP/$1.err" | tail -20; }

# Boot 1: vmlinux, one vCPU: quoting survives, output, exit status, and
# the guest keeps every process's vector registers.
cmd1='uname -r; echo "it'"'"'s  spaced"; printf "[%s]\n" "tab	x" '"'"'b\s $HOME `x`'"'"' "é"; vecstate 2 300; exit 7'
boot vmlinux --kernel "$K" --initrd "$I" --mem 128 --stats --run "$cmd1"
# Boot 2: a console file, a command killed by a signal, and a --run
# command's stdin is empty even when ember's is not (cat must not block).
printf 'host-input\n' >"$TMP/input"
STDIN=$TMP/input boot signal --kernel "$K" --initrd "$I" --mem 96 \
	--console "file:$TMP/console.log" \
	--run 'cat; echo to-the-file; kill -9 $$'
# Boot 6: virtio-blk (a read-write and a read-only drive) and virtio-rng.
truncate -s 32M "$TMP/rw.img"
mkfs.ext4 -q -F "$TMP/rw.img"
truncate -s 16M "$TMP/ro.img"
mkfs.ext4 -q -F "$TMP/ro.img"
cp "$TMP/ro.img" "$TMP/ro.orig"
cmd6='mkdir -p /mnt /ro; mount -t ext4 /dev/vda /mnt && echo from-guest >/mnt/f && sync && umount /mnt && echo rw-ok
mount -t ext4 /dev/vdb /ro 2>/dev/null || mount -t ext4 -o ro /dev/vdb /ro
if echo x >/ro/f 2>/dev/null; then echo ro-file-write-succeeded; else echo ro-file-write-failed; fi
umount /ro
if dd if=/dev/zero of=/dev/vdb bs=512 count=1 conv=fsync 2>/dev/null; then echo ro-write-succeeded; else echo ro-write-failed; fi
echo "serial=$(cat /sys/block/vda/serial)"
echo "rng=$(head -c 32 /dev/hwrng | od -An -tx1 | tr -d " \n" | wc -c)"'
boot blk --kernel "$K" --initrd "$I" --mem 96 \
	--drive "path=$TMP/rw.img,id=disk-rw" --drive "path=$TMP/ro.img,ro" \
	--run "$cmd6"
wait

check "blk: the guest mounted, wrote and synced ext4" "$(show blk)" out_has blk "rw-ok"
check "blk: the file is in the image (debugfs)" "$(show blk)" \
	sh -c "debugfs -R 'cat /f' '$TMP/rw.img' 2>/dev/null | grep -qx from-guest"
check "blk: a file write on the ro drive fails in the guest" "$(show blk)" \
	out_has blk "ro-file-write-failed"
check "blk: a raw write to the ro drive fails in the guest" "$(show blk)" \
	out_has blk "ro-write-failed"
check "blk: the ro image is byte for byte unchanged" "$(show blk)" \
	cmp -s "$TMP/ro.img" "$TMP/ro.orig"
check "blk: GET_ID gives the drive id" "$(show blk)" out_has blk "serial=disk-rw"
check "rng: the guest reads 32 bytes from /dev/hwrng" "$(show blk)" out_has blk "rng=64"
check "blk: exit 0, no sanitizer report" "$(show blk)" \
	sh -c "[ \"\$(cat '$TMP/blk.rc')\" = 0 ] && ! grep -qE 'AddressSanitizer|runtime error' '$TMP/blk.err'"

check "vmlinux: exit status 7" "$(show vmlinux)" status_is vmlinux 7
check "vmlinux: guest kernel is 6.1" "$(show vmlinux)" grep -qE '^6\.1\.' "$TMP/vmlinux.out"
check "vmlinux: quotes and double spaces survive --run" "$(show vmlinux)" \
	out_has vmlinux "it's  spaced"
check "vmlinux: tabs, backslashes, \$ and UTF-8 survive --run" "$(show vmlinux)" \
	sh -c "grep -qxF '[tab	x]' '$TMP/vmlinux.out' && grep -qxF '[b\\s \$HOME \`x\`]' '$TMP/vmlinux.out' && grep -qxF '[é]' '$TMP/vmlinux.out'"
check "vector state: two processes keep distinct YMM (and ZMM) patterns" \
	"$(show vmlinux)" grep -qE '^vecstate: PASS workers=2 iterations=300 signals=[1-9]' \
	"$TMP/vmlinux.out"
check "vmlinux: --stats figures printed" "$(show vmlinux)" \
	grep -qE '^ember-stats: first_run_ms=[0-9.]+ .*boot_timer_ms=[1-9]' "$TMP/vmlinux.err"
check "vmlinux: no sanitizer report" "$(show vmlinux)" no_sanitizer_report vmlinux
check "signal: status 137 for SIGKILL" "$(show signal)" status_is signal 137
check "signal: console went to the file" "$(show signal)" \
	grep -q '^to-the-file' "$TMP/console.log"
check "signal: nothing on stdout" "$(show signal)" test ! -s "$TMP/signal.out"
check "signal: --run stdin is empty (cat ended, host input not passed)" \
	"$(cat "$TMP/console.log")" sh -c "! grep -q host-input '$TMP/console.log'"

# Boot 3: the bzImage on two vCPUs (SMP).  Boot 4: a kernel without an
# init panics; ember must end (panic=-1 resets) and say so.
boot bzimage --kernel "$GUEST/bzImage" --initrd "$I" --mem 128 --vcpus 2 \
	--run 'echo cpus=$(nproc)'
printf 'not a cpio archive\n' >"$TMP/bad.cpio"
boot panic --kernel "$K" --initrd "$TMP/bad.cpio" --mem 64 --run true
# Boot 5: no --run: an interactive shell on the console reads ember's
# stdin, given at once (ember holds it until the guest's tty is open),
# and its exit status becomes ember's.
printf 'echo interactive-$((6 * 7))\nexit 3\n' >"$TMP/typed"
STDIN=$TMP/typed boot interactive --kernel "$K" --initrd "$I" --mem 96
# Boot 8: `--run 'reboot -f'`: a reboot from inside the guest is told
# apart from a crash or a panic.
boot reboot --kernel "$K" --initrd "$I" --mem 64 --run 'reboot -f'
# Boot 7: the root filesystem on virtio-blk (a copy: the build's image is
# shared), Python from it, and a file written there.
cp --sparse=always "$GUEST/rootfs.ext4" "$TMP/root.ext4"
boot rootfs --kernel "$K" --drive "path=$TMP/root.ext4,root" --mem 256 \
	--run 'python3 -c "print(sum(range(101)))"; echo from-root >/root/f; sync'
wait

check "bzImage: boots and runs the command" "$(show bzimage)" status_is bzimage 0
check "SMP: the guest sees 2 vCPUs" "$(show bzimage)" out_has bzimage "cpus=2"
check "panic: ember exits 125" "$(show panic)" status_is panic 125
check "panic: ember says the guest kernel panicked and quotes why" "$(show panic)" \
	grep -qE 'error: the guest kernel panicked before the command reported its exit status: (No working init|VFS: |Attempted to kill init)' "$TMP/panic.err"
check "panic: the kernel's panic is on the console" "$(show panic)" \
	grep -q 'Kernel panic' "$TMP/panic.out"
check "interactive: the shell ran the typed command" "$(show interactive)" \
	grep -q 'interactive-42' "$TMP/interactive.out"
check "interactive: the shell's exit status is ember's" "$(show interactive)" \
	status_is interactive 3
check "reboot: ember exits 125 and says the guest rebooted itself" "$(show reboot)" \
	sh -c "[ \"\$(cat '$TMP/reboot.rc')\" = 125 ] && grep -q 'error: the guest rebooted before the command reported its exit status: a reboot from inside the guest' '$TMP/reboot.err' && ! grep -qi 'panic\\|syscall' '$TMP/reboot.err'"
check "rootfs: Python on the virtio-blk root prints 5050" "$(show rootfs)" \
	out_has rootfs "5050"
check "rootfs: exit 0" "$(show rootfs)" status_is rootfs 0
check "rootfs: the file written in the guest is in the image (debugfs)" \
	"$(show rootfs)" sh -c "debugfs -R 'cat /root/f' '$TMP/root.ext4' 2>/dev/null | grep -qx from-root"
check "rootfs: the image is clean after the run (e2fsck)" "$(show rootfs)" \
	e2fsck -fn "$TMP/root.ext4"

# The console's reader goes away.  Boot 9: at once (`ember ... | true`);
# ember must not die of SIGPIPE (141) but end with the guest's status.
# Boot 10: a reader that stalls with its pipe full (4 KiB here, so that
# the guest's output is short), then goes: the guest waits meanwhile,
# then its output is dropped and counted, and ember ends with its status.
: >"$TMP/gone.out"
: >"$TMP/stalled.out"
( "$EMBER" --kernel "$K" --initrd "$I" --mem 64 --run 'echo hi; exit 7' \
	2>"$TMP/gone.err" </dev/null | true
  echo "${PIPESTATUS[0]}" >"$TMP/gone.rc" ) &
python3 - "$TMP/stalled" "$EMBER" --kernel "$K" --initrd "$I" --mem 64 --stats \
	--run 'yes | head -c 12000; exit 7' <<'EOF' &
import fcntl, os, subprocess, sys, time
out = sys.argv[1]
r, w = os.pipe()
fcntl.fcntl(w, 1031, 4096)  # F_SETPIPE_SZ: one page
p = subprocess.Popen(sys.argv[2:], stdin=subprocess.DEVNULL, stdout=w,
                     stderr=open(out + ".err", "w"))
os.close(w)
got = b""
while len(got) < 4096:  # the guest has started to print
    chunk = os.read(r, 4096)
    if not chunk:  # ember ended first: its status tells
        break
    got += chunk
time.sleep(3)  # stalled: the pipe fills, ember must wait, not die
os.close(r)  # gone
try:
    rc = p.wait(timeout=300)
except subprocess.TimeoutExpired:
    p.kill()
    rc = "hung"
open(out + ".rc", "w").write("%s\n" % rc)
EOF
# Boot 11: a stdin stream that never ends (`yes | ember`, the shell's
# console): it reaches the guest at a bounded rate and never starves it.
# The guest boots and runs the streamed commands; SIGTERM then stops it.
( yes 'echo $((6*7))' | "$EMBER" --kernel "$K" --initrd "$I" --mem 96 \
	--boot-timer >"$TMP/flood.out" 2>"$TMP/flood.err" &
  pid=$!
  for _ in $(seq 480); do
	tr -d '\r' <"$TMP/flood.out" | grep -qx 42 && break
	sleep 0.5
  done
  kill -TERM "$pid"
  wait "$pid"
  echo $? >"$TMP/flood.rc" ) &
wait

check "console reader gone at once: ember exits with the guest's status (7, not SIGPIPE's 141)" \
	"$(show gone)" status_is gone 7
check "console reader gone at once: no sanitizer report" "$(show gone)" \
	no_sanitizer_report gone
check "console reader stalled, then gone: the guest's status (7), no hang" \
	"$(show stalled)" status_is stalled 7
check "console reader stalled, then gone: the dropped output is counted" \
	"$(show stalled)" grep -qE 'console_dropped_bytes=[1-9]' "$TMP/stalled.err"
check "console reader stalled, then gone: no sanitizer report" "$(show stalled)" \
	no_sanitizer_report stalled
check "stdin flood: the guest still boots (boot timer)" "$(show flood)" \
	grep -q 'guest boot time' "$TMP/flood.err"
check "stdin flood: the shell runs the streamed commands" "$(show flood)" \
	sh -c "tr -d '\r' <'$TMP/flood.out' | grep -qx 42"
check "stdin flood: SIGTERM stops it (143), no sanitizer report" "$(show flood)" \
	sh -c "[ \"\$(cat '$TMP/flood.rc')\" = 143 ] && ! grep -qE 'AddressSanitizer|runtime error|LeakSanitizer' '$TMP/flood.err'"
