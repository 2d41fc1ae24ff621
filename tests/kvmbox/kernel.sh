#!/bin/bash
# The KVM box's kernel: Debian's own linux-image-amd64 (whatever version
# the archive's metapackage names), fetched with `apt-get download` and
# unpacked (no install), its modules indexed with depmod, and the box's
# first-stage initramfs (busybox-static, the modules that reach the
# host's root over 9p, tests/kvmbox/init).  Cached in
# ${EMBER_CACHE:-~/.cache/ember}/kvmbox-<package>_<version>/, keyed by the
# package and its version; an offline host takes the newest cached one.
# The initramfs is kept there per version of init and this script
# (initramfs-<hash>.cpio): a change to them builds a new one and leaves
# alone what a box still running uses (its modules too), and needs no
# second download.  Prints the directory, then the initramfs, a line
# each; messages go to stderr.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# No HOME (a service's or sudo's environment): the user's own, not root's.
cache=${EMBER_CACHE:-${HOME:-$(getent passwd "$(id -u)" | cut -d: -f6)}/.cache/ember}
say() { echo "kvmbox: $*" >&2; }
# Its path reaches the box on the kernel's command line, split at blanks
# (and the module paths below are read up to a blank).
case $cache in
*[[:space:]]*)
	say "the box kernel's cache ($cache, EMBER_CACHE) may hold no blanks in its path"
	exit 1
	;;
esac

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

# The initramfs also depends on this directory's init and module list.
stamp=$(cat "$here/init" "$here/kernel.sh" | sha256sum | cut -c1-16)

# done_in DIR: prints DIR and its initramfs, if both are there.  "ready"
# is written last, once the unpacked package is whole.  The physical
# path: the box's first stage finds the modules by it, under the host's
# root, where a symlink (say ~/.cache) would point into its initramfs.
done_in() {
	[ -f "$1/ready" ] && [ -f "$1/initramfs-$stamp.cpio" ] || return 1
	(cd "$1" && pwd -P)
	echo "$(cd "$1" && pwd -P)/initramfs-$stamp.cpio"
}

key=$(resolve) || {
	if [ "$(id -u)" = 0 ]; then
		apt-get update -qq >&2 || true
		key=$(resolve) || key=
	else
		key=
	fi
}
if [ -n "$key" ]; then
	dir=$cache/kvmbox-$key
else
	# No archive reachable: the newest box kernel already cached.
	dir=
	for d in $(printf "%s\n" "$cache"/kvmbox-linux-image-* | sort -V); do
		[ -f "$d/ready" ] && dir=$d
	done
	if [ -z "$dir" ]; then
		say "cannot resolve linux-image-amd64 in Debian's archive and none is cached"
		exit 1
	fi
fi
done_in "$dir" && exit 0

# Building: one at a time (two boxes started at once on a fresh host
# would both download and then move into the same directory).
if ! mkdir -p "$cache" 2>/dev/null || ! : 2>/dev/null >>"$cache/.kvmbox.lock"; then
	say "cannot write the box kernel's cache $cache (EMBER_CACHE names another)"
	exit 1
fi
exec 9>>"$cache/.kvmbox.lock"
flock -n 9 || {
	say "waiting for another box's kernel build (lock: $cache/.kvmbox.lock)"
	flock 9
}
done_in "$dir" && exit 0
work=$(mktemp -d "$cache/.kvmbox-tmp.XXXXXX")
trap 'rm -rf "$work"' EXIT

if [ ! -f "$dir/ready" ]; then
	pkg=${key%_*}
	ver=${key#*_}
	say "fetching $pkg $ver from Debian's archive (once; cached in $dir)"
	(cd "$work" && apt-get download -q "$pkg=$ver" >/dev/null 2>"$work/apt.log") || {
		cat "$work/apt.log" >&2
		say "apt-get download $pkg=$ver failed"
		exit 1
	}
	mkdir "$work/pkg"
	dpkg-deb -x "$work"/"$pkg"_*.deb "$work/pkg/root"
	kver=$(ls "$work/pkg/root/lib/modules")
	depmod -b "$work/pkg/root" "$kver"
	ln -s "root/boot/vmlinuz-$kver" "$work/pkg/vmlinuz"
	echo "$kver" >"$work/pkg/kver"
	echo "$kver" >"$work/pkg/ready"
	# What an interrupted build left (no box uses a directory without
	# "ready"), then the whole directory in one rename.
	rm -rf "$dir"
	mv -T "$work/pkg" "$dir"
fi
kver=$(cat "$dir/kver")

# First stage: busybox and the modules that mount the host's root
# (virtio-pci, 9p over virtio, overlayfs).
ird=$work/initramfs
mkdir -p "$ird/bin" "$ird/mod" "$ird/proc" "$ird/sys" "$ird/dev" "$ird/newroot"
cp /bin/busybox "$ird/bin/busybox"
cp "$here/init" "$ird/init"
chmod 755 "$ird/init"
# In load order, dependencies first (modprobe's own resolution).
for m in virtio_pci 9pnet_virtio 9p overlay; do
	modprobe -d "$dir/root" -S "$kver" --show-depends "$m" ||
		{ say "module $m not in $(basename "$dir")"; exit 1; }
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
mv "$work/initramfs.cpio" "$dir/initramfs-$stamp.cpio"
# Other versions': QEMU reads its initramfs once, as it starts, so an
# hour-old one is no box's any more.  (initramfs.cpio, of this script
# before, stays for older checkouts that share the cache.)
find "$dir" -maxdepth 1 -name 'initramfs-*.cpio' ! -name "initramfs-$stamp.cpio" \
	-mmin +60 -delete
done_in "$dir"
