#!/usr/bin/env bash
# Bad input never crashes or hangs ember: each case gets one error line
# naming the problem and a non-zero exit.  No guest boots here.
set -u
cd "$(dirname "$0")/../.."
. tests/lib.sh

# expect NAME STATUS REGEX -- ARGS...: ember exits STATUS within 30 s and
# stderr is exactly one line matching REGEX (ASan/UBSan reports would add
# lines and fail the check).
expect() {
	local name=$1 want=$2 re=$3 rc lines
	shift 4
	timeout -k 5 30 "$EMBER" "$@" >"$TMP/out" 2>"$TMP/err" </dev/null
	rc=$?
	lines=$(wc -l <"$TMP/err")
	if [ "$rc" = "$want" ] && [ "$lines" = 1 ] && grep -Eq -- "$re" "$TMP/err"; then
		ok "$name"
	else
		not_ok "$name" "exit $rc (want $want), $lines stderr lines:" \
			"$(head -c 600 "$TMP/err")"
	fi
}

K=$GUEST/vmlinux
I=$GUEST/initramfs.cpio

expect "missing kernel" 125 'kernel /nonexistent/vmlinux: No such file' -- \
	--kernel /nonexistent/vmlinux
expect "kernel is a directory" 125 'kernel /tmp: not a regular file' -- \
	--kernel /tmp
: >"$TMP/empty"
expect "empty kernel" 125 'empty file' -- --kernel "$TMP/empty"
head -c 100000 /dev/urandom >"$TMP/random"
expect "not a kernel" 125 'neither an x86_64 ELF vmlinux nor a 64-bit bzImage' -- \
	--kernel "$TMP/random"
printf '#!/bin/sh\necho not a kernel\n' >"$TMP/script"
expect "script as kernel" 125 'neither an x86_64 ELF' -- --kernel "$TMP/script"
head -c 65536 "$K" >"$TMP/vmlinux.trunc"
expect "truncated vmlinux" 125 'kernel .*: (truncated|bad) ELF' -- \
	--kernel "$TMP/vmlinux.trunc"
head -c 8192 "$GUEST/bzImage" >"$TMP/bzImage.trunc"
expect "truncated bzImage (in the setup code)" 125 \
	'truncated bzImage: the file ends inside the setup code' -- \
	--kernel "$TMP/bzImage.trunc"
# Cut inside the kernel: refused before the guest runs (it triple-faulted).
head -c 1048576 "$GUEST/bzImage" >"$TMP/bz1m"
expect "truncated bzImage (1 MiB of it)" 125 \
	'kernel .*/bz1m: truncated bzImage: the file is shorter than setup_sects and syssize announce' -- \
	--kernel "$TMP/bz1m"
head -c -1 "$GUEST/bzImage" >"$TMP/bz-1"
expect "bzImage one byte short" 125 'truncated bzImage' -- --kernel "$TMP/bz-1"
cp /bin/true "$TMP/dynexe"
expect "ELF that is not a kernel" 125 'kernel .*(neither|truncated|bad) ' -- \
	--kernel "$TMP/dynexe"
mkfifo "$TMP/fifo"
expect "FIFO as kernel (no hang)" 125 'kernel .*/fifo: not a regular file' -- \
	--kernel "$TMP/fifo"
expect "/dev/zero as kernel" 125 'kernel /dev/zero: not a regular file' -- \
	--kernel /dev/zero
expect "console FIFO without a reader (no hang)" 125 'console file .*/fifo: No such device or address' -- \
	--kernel "$K" --console "file:$TMP/fifo"
truncate -s 40M "$TMP/big.cpio"
expect "initrd larger than RAM" 125 'initrd .* do not fit in guest RAM' -- \
	--kernel "$K" --initrd "$TMP/big.cpio" --mem 32
expect "missing initrd" 125 'initrd /nonexistent.cpio: No such file' -- \
	--kernel "$K" --initrd /nonexistent.cpio
expect "--mem 1" 2 '--mem 1: guest RAM must be' -- --kernel "$K" --mem 1
expect "--mem 300000 (above 256 GiB)" 2 \
	'--mem 300000: guest RAM must be a whole number of MiB from 16 to 262144$' -- \
	--kernel "$K" --mem 300000
host_mib=$(awk '/^MemTotal:/ { print int($2 / 1024) + 1 }' /proc/meminfo)
if [ "$host_mib" -le 262144 ]; then
	expect "--mem beyond this host's RAM" 2 \
		"--mem $host_mib: more guest RAM than this host has" -- \
		--kernel "$K" --mem "$host_mib"
fi
expect "--vcpus 33" 2 '--vcpus 33: vCPUs must be a whole number from 1 to 32' -- \
	--kernel "$K" --vcpus 33
expect "--mem not a number" 2 '--mem 12x' -- --kernel "$K" --mem 12x
expect "--mem huge" 2 '--mem 99999999999' -- --kernel "$K" --mem 99999999999
expect "--vcpus 0" 2 '--vcpus 0: vCPUs must be a whole number from 1 to' -- --kernel "$K" --vcpus 0
expect "--vcpus 1000" 2 '--vcpus 1000' -- --kernel "$K" --vcpus 1000
expect "--console bogus" 2 '--console tty9' -- --kernel "$K" --console tty9
expect "no kernel given" 2 '--kernel PATH is required' --
expect "stray argument" 2 "unexpected argument 'extra'" -- --kernel "$K" extra
expect "--run too long" 2 '--run: a command of 3000 bytes does not fit' -- \
	--kernel "$K" --initrd "$I" --run "$(head -c 3000 /dev/zero | tr '\0' x)"
expect "--append too long" 125 'kernel command line longer than 2047 bytes: shorten' -- \
	--kernel "$K" --initrd "$I" --append "x=$(head -c 2100 /dev/zero | tr '\0' y)"
expect "unknown option" 2 'unknown option or missing value: --bogus' -- \
	--kernel "$K" --bogus
expect "--drive without path" 2 '--drive: path=FILE is required' -- \
	--kernel "$K" --drive ro
expect "--drive with a bad part" 2 "--drive: unknown or bad part 'bogus'" -- \
	--kernel "$K" --drive path=/tmp/x,bogus
expect "two root drives" 2 '--drive: only one drive can be root' -- \
	--kernel "$K" --drive path=/a,root --drive path=/b,root
expect "missing drive" 125 'drive /nonexistent.img: No such file' -- \
	--kernel "$K" --drive path=/nonexistent.img
expect "drive is a directory" 125 'drive /tmp: (Is a directory|not a regular file)' -- \
	--kernel "$K" --drive path=/tmp
head -c 100 /dev/zero >"$TMP/tiny.img"
expect "drive smaller than a sector" 125 'drive .*/tiny.img: smaller than one 512-byte sector' -- \
	--kernel "$K" --drive "path=$TMP/tiny.img"
truncate -s 1M "$TMP/locked.img"
flock "$TMP/locked.img" sleep 30 &
lock_pid=$!
sleep 0.5
expect "drive in use by another process" 125 'drive .*/locked.img: in use by another process' -- \
	--kernel "$K" --drive "path=$TMP/locked.img"
kill "$lock_pid" 2>/dev/null
wait "$lock_pid" 2>/dev/null
expect "console file unwritable" 125 'console file /nonexistent/dir/log' -- \
	--kernel "$K" --console file:/nonexistent/dir/log

# Crafted kernel images (tests/integration/mkimage.py writes them).
mk() { python3 tests/integration/mkimage.py "$TMP/$1" "${@:2}"; }
mk elf-offset-overflow elf --offset 0xfffffffffffff000 --filesz 0x2000
expect "ELF p_offset+p_filesz overflows" 125 'kernel .*: (truncated|bad) ELF' -- \
	--kernel "$TMP/elf-offset-overflow" --mem 64
mk elf-filesz-huge elf --filesz 0xffffffffffffffff --memsz 0xffffffffffffffff
expect "ELF p_filesz 2^64-1" 125 'kernel .*: (truncated|bad) ELF' -- \
	--kernel "$TMP/elf-filesz-huge" --mem 64
mk elf-paddr-overflow elf --paddr 0xfffffffffffff000 --memsz 0x2000 \
	--entry 0xfffffffffffff000
expect "ELF p_paddr+p_memsz overflows" 125 'kernel .*: (truncated|bad) ELF' -- \
	--kernel "$TMP/elf-paddr-overflow" --mem 64
mk elf-mmio-gap elf --paddr 0xd0000000 --entry 0xd0000000
expect "ELF segment in the MMIO gap" 125 'does not fit in 64 MiB' -- \
	--kernel "$TMP/elf-mmio-gap" --mem 64
mk elf-low elf --paddr 0x9000 --entry 0x9000
expect "ELF segment over the boot page tables" 125 'kernel .*: (truncated|bad) ELF' -- \
	--kernel "$TMP/elf-low" --mem 64
mk elf-memsz-huge elf --memsz 0x10000000000
expect "ELF p_memsz 1 TiB" 125 'does not fit in 64 MiB' -- \
	--kernel "$TMP/elf-memsz-huge" --mem 64
mk elf-phnum elf --phnum 0xffff
expect "ELF e_phnum 0xffff" 125 'kernel .*: (truncated|bad) ELF' -- \
	--kernel "$TMP/elf-phnum" --mem 64
mk elf-phoff elf --phoff 0xfffffffffffffff0
expect "ELF e_phoff near 2^64" 125 'kernel .*: (truncated|bad) ELF' -- \
	--kernel "$TMP/elf-phoff" --mem 64
mk elf-entry elf --entry 0x5000000
expect "ELF entry outside every segment" 125 'kernel .*: (truncated|bad) ELF' -- \
	--kernel "$TMP/elf-entry" --mem 64
mk elf-sparse elf --offset 0xff000000
truncate -s 4G "$TMP/elf-sparse"
expect "4 GiB sparse ELF" 125 'larger than 2 GiB' -- \
	--kernel "$TMP/elf-sparse" --mem 64
rm -f "$TMP/elf-sparse"
mk bz-sects bz --setup-sects 255
expect "bzImage setup_sects 255 past the file's end" 125 \
	'truncated bzImage: the file ends inside the setup code' -- \
	--kernel "$TMP/bz-sects" --mem 64
mk bz-init-size bz --init-size 0xffffffff
expect "bzImage init_size 4 GiB" 125 'does not fit in 64 MiB' -- \
	--kernel "$TMP/bz-init-size" --mem 64
mk bz-pref bz --pref 0xfffffffffffff000
expect "bzImage pref_address near 2^64" 125 'bad bzImage: pref_address overflows' -- \
	--kernel "$TMP/bz-pref" --mem 64
mk bz-jump bz --jump 0
expect "bzImage header shorter than init_size" 125 \
	'bad bzImage: the setup header ends before init_size' -- \
	--kernel "$TMP/bz-jump" --mem 64
mk bz-syssize bz --syssize 0x10000
expect "bzImage syssize past the file's end" 125 \
	'truncated bzImage: the file is shorter than' -- \
	--kernel "$TMP/bz-syssize" --mem 64
mk bz-payload bz --payload-offset 0x8000 --payload-length 0x8000
expect "bzImage payload past the kernel" 125 \
	'bad bzImage: payload_offset and payload_length point past the kernel' -- \
	--kernel "$TMP/bz-payload" --mem 64
mk bz-small-init bz --init-size 0x1000
expect "bzImage init_size smaller than the kernel" 125 \
	'bad bzImage: init_size is smaller than the kernel' -- \
	--kernel "$TMP/bz-small-init" --mem 64

# expect_guest NAME STATUS -- ARGS...: a crafted image that ember loads;
# its code reports STATUS through the exit-status device within 30 s,
# and stderr stays empty (no error, no sanitizer report).
expect_guest() {
	local name=$1 want=$2 rc
	shift 3
	timeout -k 5 30 "$EMBER" "$@" >"$TMP/out" 2>"$TMP/err" </dev/null
	rc=$?
	if [ "$rc" = "$want" ] && [ ! -s "$TMP/err" ]; then
		ok "$name"
	else
		not_ok "$name" "exit $rc (want $want), stderr:" \
			"$(head -c 600 "$TMP/err")"
	fi
}

if have_kvm; then
	# Overlapping PT_LOAD segments load in order: the later one wins.
	mk elf-overlap elf --overlap --status 7
	expect_guest "ELF with overlapping segments: loaded, runs" 7 -- \
		--kernel "$TMP/elf-overlap" --mem 64
	mk bz-sects-ok bz --setup-sects 255 --size 0x30000 --status 9
	expect_guest "bzImage with setup_sects 255: loaded, runs" 9 -- \
		--kernel "$TMP/bz-sects-ok" --mem 64
fi

# ember checks what it was given before it opens /dev/kvm: these need
# root (setpriv, a mount namespace), not KVM.
if [ "$(id -u)" = 0 ]; then
	# Root without the capabilities that bypass file permissions.
	cp "$K" "$TMP/unreadable" && chmod 000 "$TMP/unreadable"
	EMBER_SAVED=$EMBER
	cat >"$TMP/nocaps" <<EOS
#!/bin/sh
exec setpriv --inh-caps=-all --bounding-set=-dac_override,-dac_read_search "$EMBER_SAVED" "\$@"
EOS
	chmod +x "$TMP/nocaps"
	EMBER=$TMP/nocaps
	expect "unreadable kernel (no DAC override)" 125 \
		'kernel .*/unreadable: Permission denied' -- --kernel "$TMP/unreadable"
	EMBER=$EMBER_SAVED

	cat >"$TMP/nokvm" <<EOS
#!/bin/sh
exec unshare -m sh -c 'mount -t tmpfs none /dev && exec "\$0" "\$@"' "$EMBER_SAVED" "\$@"
EOS
	chmod +x "$TMP/nokvm"
	EMBER=$TMP/nokvm
	expect "no /dev/kvm" 125 '/dev/kvm: no such device: KVM is not available' -- \
		--kernel "$K"
	EMBER=$EMBER_SAVED
else
	echo "ok - # SKIP the no-DAC-override and no-/dev/kvm cases need root"
fi

if have_kvm && [ "$(id -u)" = 0 ]; then
	# A kernel that uid 65534 can read (it is checked before /dev/kvm):
	# what is refused is /dev/kvm itself.
	cp "$K" "$TMP/kernel" && chmod 644 "$TMP/kernel"
	cat >"$TMP/nobody" <<EOS
#!/bin/sh
exec setpriv --reuid=65534 --regid=65534 --clear-groups "$EMBER" "\$@"
EOS
	chmod +x "$TMP/nobody" "$TMP" && chmod 755 "$TMP"
	EMBER_SAVED=$EMBER
	EMBER=$TMP/nobody
	expect "no permission on /dev/kvm" 125 '/dev/kvm: permission denied' -- \
		--kernel "$TMP/kernel"
	EMBER=$EMBER_SAVED

	# A signal stops the VM cleanly with 128 + signal (30 s: a hang check).
	"$EMBER" --kernel "$K" --initrd "$I" --console none --run 'sleep 600' \
		2>"$TMP/err" &
	pid=$!
	sleep 2
	kill -TERM "$pid"
	t0=$(date +%s%N)
	wait "$pid"
	rc=$?
	ms=$(( ($(date +%s%N) - t0) / 1000000 ))
	if [ "$rc" = 143 ] && [ "$ms" -lt 30000 ] && grep -q 'stopped by signal 15' "$TMP/err"; then
		ok "SIGTERM stops the VM: exit 143"
	else
		not_ok "SIGTERM stops the VM: exit 143" "exit $rc after $ms ms" "$(cat "$TMP/err")"
	fi
else
	echo "ok - # SKIP /dev/kvm cases need root and /dev/kvm"
fi
