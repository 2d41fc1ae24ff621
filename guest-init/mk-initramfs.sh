#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
#
# mk-initramfs.sh OUTDIR: build OUTDIR/initramfs.cpio, an uncompressed newc
# archive, with the kernel's gen_init_cpio (OUTDIR/gen_init_cpio): no root,
# no loop mounts.  Uncompressed because unpacking gzip costs ~70 s of
# emulated guest kernel time on a PVM host (shared/PLATFORM.md).
#
# Inputs: OUTDIR/init (guest-init/init.c), OUTDIR/gen_init_cpio,
# BUSYBOX (default /bin/busybox, Debian's busybox-static), and
# OUTDIR/agent (as /sbin/ember-agent) and OUTDIR/vecstate when present.
set -eu

me=mk-initramfs
# shellcheck source=guest-init/mk-inputs.sh
. "$(dirname "$0")/mk-inputs.sh"

[ -x "$out/gen_init_cpio" ] ||
	die "$out/gen_init_cpio missing (built by the kernel build: usr/gen_init_cpio)"
[ -f "$out/init" ] || die "$out/init missing (build guest-init/init.c first)"
check_busybox

list=$out/initramfs.list.tmp
passwd=$out/initramfs.passwd.tmp
tmp=$out/initramfs.cpio.tmp
trap 'rm -f "$list" "$passwd" "$tmp"' EXIT
trap 'exit 1' HUP INT TERM

# Absolute paths: gen_init_cpio reads the source files from them.
abs() {
	case $1 in
	/*) printf '%s\n' "$1" ;;
	*) printf '%s/%s\n' "$(pwd)" "$1" ;;
	esac
}

applets=$("$busybox" --list-full) || die "$busybox --list-full failed"
# Every file the guest kernel unpacks costs it ~50 ms where kernel mode is
# emulated (270 applet links: ~13 s of boot).  Debian's busybox-static
# shell runs its applets without links (FEATURE_SH_STANDALONE), so only
# the links programs exec by path are made, unless ALL_APPLETS=1.
if [ "${ALL_APPLETS:-0}" != 1 ]; then
	applets=$(printf '%s\n' "$applets" | grep -xE 'bin/sh|usr/bin/env') ||
		die "$busybox has no sh applet"
fi

{
	# The fixed skeleton first, parents before children.
	for d in /bin /dev /etc /proc /root /run /sbin /sys /tmp /usr \
		/usr/bin /usr/sbin; do
		echo "dir $d 0755 0 0"
	done
	echo "nod /dev/console 0600 0 0 c 5 1"
	echo "nod /dev/null 0666 0 0 c 1 3"
	echo "file /init $(abs "$out/init") 0755 0 0"
	echo "file /bin/busybox $(abs "$busybox") 0755 0 0"
	echo "file /etc/passwd $(abs "$passwd") 0644 0 0"
	if [ -f "$out/agent" ]; then
		echo "file /sbin/ember-agent $(abs "$out/agent") 0755 0 0"
	fi
	if [ -f "$out/vecstate" ]; then
		echo "file /bin/vecstate $(abs "$out/vecstate") 0755 0 0"
	fi

	# Every ancestor directory of an applet not already in the skeleton.
	printf '%s\n' "$applets" | awk -F/ '{
		p = ""
		for (i = 1; i < NF; i++) {
			p = p "/" $i
			print p
		}
	}' | sort -u | while read -r d; do
		case $d in
		/bin | /sbin | /usr | /usr/bin | /usr/sbin) ;;
		*) echo "dir $d 0755 0 0" ;;
		esac
	done

	printf '%s\n' "$applets" | while read -r a; do
		case $a in
		'' | bin/busybox) ;;
		*) echo "slink /$a /bin/busybox 0777 0 0" ;;
		esac
	done
} >"$list"

printf 'root:x:0:0:root:/root:/bin/sh\n' >"$passwd"

"$out/gen_init_cpio" "$list" >"$tmp" || die "gen_init_cpio failed"
mv -f "$tmp" "$out/initramfs.cpio"
