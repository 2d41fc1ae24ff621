#!/bin/bash
# The KVM box's kernel: Debian's own linux-image-amd64 (whatever version
# the archive's metapackage names), fetched with `apt-get download` and
# unpacked (no install), its modules indexed with depmod, and the box's
# first-stage initramfs (busybox-static, the modules that reach the
# host's root over 9p, tests/kvmbox/init).  Cached in
# ${EMBER_CACHE:-~/.cache/ember}/kvmbox-<package>_<version>/, keyed by the
# package and its version; an offline host takes the newest cached one.
# Prints the cache directory on stdout; messages go to stderr.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cache=${EMBER_CACHE:-${HOME:-/root}/.cache/ember}
say() { echo "kvmbox: $*" >&2; }

# The image package the metapackage points at, and its candidate version.
resolve() {
	local pkg ver
	pkg=$(apt-cache depends linux-image-amd64 2>/dev/null |
		sed -n 's/^ *Depends: \(linux-image-[0-9][^ ]*-amd64\)$/\1/p' | head -1)
	[ -n "$pkg" ] || return 1
	ver=$(apt-cache policy "$pkg" 2>/dev/null | sed -n 's/^ *Candidate: //p')
	[ -n "$ver" ] && [ "$ver" != "(none)" ] || return 1
	echo "${pkg}_${ver}"
}

key=$(resolve) || {
	if [ "$(id -u)" = 0 ]; then
		apt-get update -qq >&2 || true
		key=$(resolve) || key=
	else
		key=
	fi
}
if [ -z "$key" ]; then
	# No archive reachable: the newest box kernel already cached.
	dir=$(ls -d "$cache"/kvmbox-linux-image-* 2>/dev/null | sort -V | tail -1)
	if [ -n "$dir" ] && [ -f "$dir/ready" ]; then
		echo "$dir"
		exit 0
	fi
	say "cannot resolve linux-image-amd64 in Debian's archive and none is cached"
	exit 1
fi
dir=$cache/kvmbox-$key
# The initramfs also depends on this directory's init and module list.
stamp=$(cat "$here/init" "$here/kernel.sh" | sha256sum | cut -c1-16)
if [ -f "$dir/ready" ] && [ "$(cat "$dir/ready")" = "$stamp" ]; then
	echo "$dir"
	exit 0
fi

pkg=${key%_*}
ver=${key#*_}
work=$(mktemp -d "$cache/.kvmbox-tmp.XXXXXX" 2>/dev/null) || {
	mkdir -p "$cache"
	work=$(mktemp -d "$cache/.kvmbox-tmp.XXXXXX")
}
trap 'rm -rf "$work"' EXIT
say "fetching $pkg $ver from Debian's archive (once; cached in $dir)"
(cd "$work" && apt-get download -q "$pkg=$ver" >/dev/null 2>"$work/apt.log") || {
	cat "$work/apt.log" >&2
	say "apt-get download $pkg=$ver failed"
	exit 1
}
dpkg-deb -x "$work"/"$pkg"_*.deb "$work/root"
kver=$(ls "$work/root/lib/modules")
depmod -b "$work/root" "$kver"

# First stage: busybox and the modules that mount the host's root
# (virtio-pci, 9p over virtio, overlayfs).
ird=$work/initramfs
mkdir -p "$ird/bin" "$ird/mod" "$ird/proc" "$ird/sys" "$ird/dev" "$ird/newroot"
cp /bin/busybox "$ird/bin/busybox"
cp "$here/init" "$ird/init"
chmod 755 "$ird/init"
# In load order, dependencies first (modprobe's own resolution).
for m in virtio_pci 9pnet_virtio 9p overlay; do
	modprobe -d "$work/root" -S "$kver" --show-depends "$m" ||
		{ say "module $m not in $pkg"; exit 1; }
done | sed -n 's/^insmod \([^ ]*\) *$/\1/p' | awk '!seen[$0]++' |
while read -r f; do
	m=$(basename "$f")
	m=${m%%.ko*}
	case $f in
	*.xz) xz -dc "$f" >"$ird/mod/$m.ko" ;;
	*) cp "$f" "$ird/mod/$m.ko" ;;
	esac
	echo "$m" >>"$ird/mod/order"
done
[ -s "$ird/mod/order" ] || { say "no modules for the first stage"; exit 1; }
(cd "$ird" && find . | cpio -o -H newc --quiet) >"$work/initramfs.cpio"

rm -rf "$dir"
mkdir -p "$dir"
mv "$work/root" "$dir/root"
mv "$work/initramfs.cpio" "$dir/initramfs.cpio"
ln -s "root/boot/vmlinuz-$kver" "$dir/vmlinuz"
echo "$kver" >"$dir/kver"
echo "$stamp" >"$dir/ready"
echo "$dir"
