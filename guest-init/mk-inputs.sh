# shellcheck shell=sh
# SPDX-License-Identifier: Apache-2.0
#
# Sourced by mk-initramfs.sh and mk-rootfs.sh, which set `me` to their
# name first: die(), the command line both take (OUTDIR, a directory,
# into $out), BUSYBOX (default /bin/busybox, Debian's busybox-static, into
# $busybox) and check_busybox.

# shellcheck disable=SC2154 # me: set by the script that sources this
die() {
	echo "$me: $*" >&2
	exit 1
}

[ $# -eq 1 ] || die "usage: $0 OUTDIR"
out=$1
busybox=${BUSYBOX:-/bin/busybox}
[ -d "$out" ] || die "$out: not a directory"

# The guest has no C library for busybox: it must be the static build.
check_busybox() {
	[ -x "$busybox" ] || die "$busybox missing (apt-get install busybox-static)"
	if ! file_out=$(LC_ALL=C file -L "$busybox" 2>/dev/null); then
		file_out=
	fi
	case $file_out in
	*dynamically*) die "$busybox is dynamically linked; need busybox-static" ;;
	esac
}
