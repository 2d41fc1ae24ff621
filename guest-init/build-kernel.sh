#!/bin/sh
# Builds ember's guest kernel from Debian's linux-source-6.1 and caches it
# outside the repository, keyed by the config fragment, the patches, this
# script and the source package version.  A cache hit costs a copy.
#
# usage: guest-init/build-kernel.sh OUTDIR
# env:   EMBER_CACHE (default $XDG_CACHE_HOME/ember or ~/.cache/ember)
#        JOBS (default nproc)
set -eu

here=$(cd "$(dirname "$0")" && pwd)
out=${1:?usage: build-kernel.sh OUTDIR}
cache=${EMBER_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/ember}
tarball=/usr/src/linux-source-6.1.tar.xz
jobs=${JOBS:-$(nproc)}

if [ ! -r "$tarball" ]; then
	echo "build-kernel: $tarball missing: apt-get install linux-source-6.1" >&2
	exit 1
fi
srcver=$(dpkg-query -W -f '${Version}' linux-source-6.1 2>/dev/null || echo unknown)
key=$( { echo "$srcver"; cat "$here/kernel.config" "$here"/patches/*.patch \
	"$here/build-kernel.sh"; } | sha256sum | cut -c1-16)
dir="$cache/kernel-$key"
mkdir -p "$out"

if [ -f "$dir/vmlinux" ] && [ -f "$dir/bzImage" ]; then
	echo "build-kernel: cached $dir"
else
	echo "build-kernel: building 6.1 ($srcver) into $dir, key $key (minutes)"
	tree="$cache/tree-$key"
	rm -rf "$tree" "$dir.tmp"
	mkdir -p "$tree" "$dir.tmp"
	tar -xJf "$tarball" -C "$tree" --strip-components=1
	for p in "$here"/patches/*.patch; do
		patch -d "$tree" -p1 --quiet --forward < "$p"
	done
	make -C "$tree" -s ARCH=x86_64 tinyconfig
	"$tree/scripts/kconfig/merge_config.sh" -m -O "$tree" \
		"$tree/.config" "$here/kernel.config" >/dev/null
	make -C "$tree" -s ARCH=x86_64 olddefconfig
	# Every option the fragment sets must survive olddefconfig.
	bad=0
	grep -E '^CONFIG_[A-Z0-9_]+=' "$here/kernel.config" | while IFS= read -r l; do
		opt=${l%%=*}; val=${l#*=}
		if [ "$val" = n ]; then
			if grep -q "^$opt=" "$tree/.config"; then
				echo "build-kernel: $opt is set, wanted n"; exit 1
			fi
		elif ! grep -qx "$l" "$tree/.config"; then
			echo "build-kernel: $l did not take: $(grep "^$opt=" "$tree/.config" || echo unset)"
			exit 1
		fi
	done || bad=1
	[ "$bad" = 0 ] || { echo "build-kernel: fix guest-init/kernel.config" >&2; exit 1; }
	make -C "$tree" -s ARCH=x86_64 -j"$jobs" vmlinux bzImage
	cp "$tree/vmlinux" "$tree/arch/x86/boot/bzImage" "$tree/.config" "$dir.tmp/"
	cc -O2 -o "$dir.tmp/gen_init_cpio" "$tree/usr/gen_init_cpio.c"
	rm -rf "$dir"
	mv "$dir.tmp" "$dir"
	rm -rf "$tree"
fi
cp "$dir/vmlinux" "$dir/bzImage" "$dir/gen_init_cpio" "$out/"
cp "$dir/.config" "$out/kernel.config"
