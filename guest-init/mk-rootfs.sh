#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
#
# mk-rootfs.sh OUTDIR: build OUTDIR/rootfs.ext4, an ext4 root file system
# for `ember --drive path=IMAGE,root`, with `mkfs.ext4 -d` from a staging
# directory: no loop mounts, nothing that needs root.
#
# Contents: ember's init (OUTDIR/init) as /sbin/init and /init; busybox
# (BUSYBOX, default /bin/busybox, Debian's busybox-static) with a link for
# every applet (files on a disk cost nothing at boot, unlike in the
# initramfs); this machine's python3.11 with its standard library (from
# the Debian packages, without tests, idlelib, tkinter and ensurepip,
# compiled to .pyc) and
# the shared libraries it and its extension modules load; OUTDIR/vecstate
# as /bin/vecstate and OUTDIR/agent as /sbin/ember-agent when present; a
# minimal /etc with the accounts root and user (uid 1000, home
# /home/user, owned by it, 0750).  About 64 MiB stay free.
#
# The code interpreter (guest-init/interp/, INTERP.md): its files as
# /usr/bin/ember-interp and /usr/lib/ember/interp/; Debian's numpy,
# pandas, matplotlib and the Jupyter stack Python contexts run on
# (IPython, ipykernel, jupyter_client, pyzmq, tornado, traitlets,
# pexpect, ...; not ipykernel's debugger, debugpy, nor jedi: no
# completions are offered), and setuptools and
# wheel (so that `pip wheel --no-build-isolation` of a directory works
# offline): every top-level package under /usr/lib/python3/dist-packages
# that importing them, drawing a PNG and a DataFrame's HTML loads on this
# machine (without tests), with the metadata of
# their Debian packages (*.dist-info), matplotlib's data directory and
# matplotlibrc, /usr/share/zoneinfo; an empty
# /usr/local/lib/python3.11/dist-packages (root's pip installs); node (`command
# -v node`) with its package's files under /usr/lib (not its
# node_modules: npm and corepack); /bin/bash when present; the shared
# libraries of all of them.
#
# pip (Debian's python3-pip: the whole package, which vendors what it
# needs, and its dist-info), so that a sandbox with a network installs
# packages (`python3 -m pip install ...`), and /etc/pip.conf trusting
# the sandbox's host side (172.16.0.1, plain HTTP); the standard library's
# EXTERNALLY-MANAGED marker (PEP 668) is left out: the image is no
# system that apt manages, and pip would refuse every install.
#
# The image is cached outside the repository in
# ${EMBER_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/ember}/rootfs-<key>.ext4,
# keyed by this script and mk-inputs.sh, the inputs above, the shared
# libraries and the versions of the Debian packages used; a cache hit
# costs a sparse copy.
set -eu

me=mk-rootfs
# shellcheck source=guest-init/mk-inputs.sh
. "$(dirname "$0")/mk-inputs.sh"
cache=${EMBER_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/ember}
python=/usr/bin/python3.11
pylib=/usr/lib/python3.11
pypkgs="python3.11-minimal libpython3.11-minimal libpython3.11-stdlib python3.11"
free_mib=64
interp=$(dirname "$0")/interp
distpkgs=/usr/lib/python3/dist-packages

[ -f "$out/init" ] || die "$out/init missing (build guest-init/init.c first)"
check_busybox
if [ ! -x "$python" ] || [ ! -d "$pylib" ]; then
	die "$python missing: apt-get install python3.11 (tests/install-deps.sh installs python3)"
fi
for p in $pypkgs; do
	dpkg-query -W -f '${Status}\n' "$p" 2>/dev/null | grep -q 'ok installed' ||
		die "package $p missing: apt-get install python3.11"
done
command -v mkfs.ext4 >/dev/null 2>&1 || die "mkfs.ext4 missing (apt-get install e2fsprogs)"

# The interpreter's Python side: what importing numpy, pandas and
# matplotlib (Agg) loads from dist-packages, as top-level names, and
# matplotlib's data directory and matplotlibrc (Debian moves them to
# /usr/share/matplotlib and /etc).
pip=$distpkgs/pip
[ -f "$pip/__init__.py" ] ||
	die "$pip missing: apt-get install python3-pip (tests/install-deps.sh installs it)"
pipinfo=$(ls -d "$distpkgs"/pip-*.dist-info 2>/dev/null | head -1) || pipinfo=
probe=$("$python" -c '
import io, sys
# ipykernel runs without its debugger, IPython without jedi (ember-interp
# blocks both too).
sys.modules["debugpy"] = None
sys.modules["jedi"] = None
import numpy, pandas, matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
plt.plot([1, 2]); plt.savefig(io.BytesIO(), format="png")
pandas.DataFrame({"a": [1]})._repr_html_()
import IPython, ipykernel.kernelapp, ipykernel.ipkernel, ipykernel.zmqshell
import ipykernel.iostream, ipykernel.displayhook, jupyter_client.session, zmq
import IPython.core.magics.execution, IPython.core.magics.script
import IPython.core.magics.packaging, IPython.core.magics.osm
import IPython.utils._process_posix, IPython.core.ultratb
import matplotlib_inline.backend_inline, sqlite3, asyncio.subprocess
import pexpect, ptyprocess, tornado.ioloop, traitlets, psutil
import setuptools, wheel, pkg_resources
d = sys.argv[1] + "/"
print("DATA", matplotlib.get_data_path())
print("DATA", matplotlib.matplotlib_fname())
for n in sorted({m.__file__[len(d):].split("/")[0]
                 for m in list(sys.modules.values())
                 if (getattr(m, "__file__", None) or "").startswith(d)}):
    print(n)
' "$distpkgs" 2>/dev/null) ||
	die "$python cannot import numpy, pandas, matplotlib, IPython, ipykernel, jupyter_client, zmq, setuptools and wheel: apt-get install python3-numpy python3-pandas python3-matplotlib python3-ipykernel python3-jupyter-client python3-setuptools python3-wheel (tests/install-deps.sh)"
mpldata=$(printf '%s\n' "$probe" | sed -n 's/^DATA //p')
pymods="$(printf '%s\n' "$probe" | grep -v '^DATA ' | sed "s|^|$distpkgs/|")
$pip $pipinfo"
pydebs=$(for m in $pymods $mpldata; do dpkg -S "$m" 2>/dev/null; done |
	cut -d: -f1 | tr ',' '\n' | tr -d ' ' | sort -u)
# Their metadata (*.dist-info, *.egg-info): importlib.metadata and pip
# see what is installed.
# shellcheck disable=SC2086
pymeta=$(dpkg -L $pydebs 2>/dev/null |
	grep -E "^$distpkgs/[^/]+\.(dist|egg)-info\$" | sort -u) || pymeta=
node=$(command -v node) || die "node missing (apt-get install nodejs)"
node=$(readlink -f "$node")
nodedeb=$(dpkg -S "$node" 2>/dev/null | cut -d: -f1) || nodedeb=
nodelibs=
if [ -n "$nodedeb" ]; then
	nodelibs=$(dpkg -L "$nodedeb" | grep '^/usr/lib/' |
		grep -v '^/usr/lib/node_modules\(/\|$\)') || nodelibs=
fi
bash=
if [ -x /bin/bash ]; then bash=/bin/bash; fi

# The shared libraries python3.11 and its extension modules load, with the
# dynamic loader, at the paths ldd gives (Debian's loader searches
# /lib/x86_64-linux-gnu without an ld.so.cache).
# The same for node, bash and every extension module of the
# interpreter's Python packages.
# shellcheck disable=SC2086
sos=$(find $pymods -name '*.so*' -type f 2>/dev/null)
libs=$(for f in "$python" "$pylib"/lib-dynload/*.so "$node" $bash $sos \
	$nodelibs; do
	[ -f "$f" ] || continue
	case $f in
	"$node" | "$bash" | "$python" | *.so | *.so.*) ;;
	*) continue ;;
	esac
	ldd "$f" 2>/dev/null | grep -q 'not a dynamic' && continue
	ldd "$f" || die "ldd $f failed"
done | awk '
	/not found/ { print "MISSING " $1; next }
	$2 == "=>" && $3 ~ /^\// { print $3; next }
	$1 ~ /^\// { print $1 }' | sort -u)
case $libs in
*MISSING*) die "libraries python3.11, node or bash need are missing:" \
	"$(printf '%s\n' "$libs" | sed -n 's/^MISSING //p' | tr '\n' ' ')" ;;
esac

key=$( {
	cat "$0" "$(dirname "$0")/mk-inputs.sh" "$out/init" "$busybox"
	if [ -f "$out/vecstate" ]; then cat "$out/vecstate"; fi
	if [ -f "$out/agent" ]; then cat "$out/agent"; fi
	cat "$interp"/* "$node" $bash
	printf '%s\n' "$probe"
	# shellcheck disable=SC2086
	dpkg-query -W $pypkgs e2fsprogs $pydebs $nodedeb
	# shellcheck disable=SC2086
	sha256sum $libs
} | sha256sum | cut -c1-16) || die "cannot compute the cache key"
img=$cache/rootfs-$key.ext4
stage=$out/rootfs.staging.tmp
tmpimg=$img.tmp.$$
trap 'rm -rf "$stage" "$stage.list"; rm -f "$tmpimg" "$out/rootfs.ext4.tmp"' EXIT
trap 'exit 1' HUP INT TERM

if [ -f "$img" ]; then
	echo "mk-rootfs: cached $img"
else
	echo "mk-rootfs: building $img"
	mkdir -p "$cache" || die "cannot create $cache"
	rm -rf "$stage"
	mkdir -p "$stage"

	# Skeleton.
	# home/user: the home of the account `user` (below), the working
	# directory E2B's SDKs expect (ember-e2b).
	for d in bin dev etc home home/user lib lib64 mnt proc root run sbin \
		sys tmp usr usr/bin usr/lib usr/sbin var var/tmp; do
		mkdir -p "$stage/$d"
	done
	chmod 0755 "$stage"/*
	chmod 0700 "$stage/root"
	chmod 1777 "$stage/tmp" "$stage/var/tmp"

	# init, busybox and every applet link but init's.
	install -m 0755 "$out/init" "$stage/sbin/init"
	install -m 0755 "$out/init" "$stage/init"
	install -m 0755 "$busybox" "$stage/bin/busybox"
	if [ -f "$out/vecstate" ]; then
		install -m 0755 "$out/vecstate" "$stage/bin/vecstate"
	fi
	if [ -f "$out/agent" ]; then
		install -m 0755 "$out/agent" "$stage/sbin/ember-agent"
	fi
	applets=$("$busybox" --list-full) || die "$busybox --list-full failed"
	printf '%s\n' "$applets" | while read -r a; do
		case $a in
		'' | */busybox | init | sbin/init | linuxrc) continue ;;
		esac
		mkdir -p "$stage/${a%/*}"
		[ -e "$stage/$a" ] || [ -L "$stage/$a" ] ||
			ln -s /bin/busybox "$stage/$a"
	done

	# python3.11: the interpreter, the standard library as packaged
	# (directories, files and symlinks, in dpkg's order: parents first),
	# the shared libraries.
	install -m 0755 "$python" "$stage/usr/bin/python3.11"
	ln -s python3.11 "$stage/usr/bin/python3"
	# shellcheck disable=SC2086
	dpkg -L $pypkgs | grep -E "^($pylib|/etc/python3\.11)/" |
		grep -Ev '/(__pycache__|test|tests|idlelib|tkinter|ensurepip|turtledemo)(/|$)' |
		grep -v '/EXTERNALLY-MANAGED$' |
		sed 's|^/||' | sort -u >"$stage.list" ||
		die "cannot list the python3.11 packages"
	tar -C / --no-recursion -cf - -T "$stage.list" |
		tar -C "$stage" -xpf - || die "copying the python3.11 standard library failed"
	rm -f "$stage.list"
	# Debian compiles these at install time; compiled here, into the
	# image, they save a fresh copy of it ~30 s of guest kernel time on a
	# PVM host for a script importing a dozen modules (the guest would
	# compile them and write each .pyc).  Checked by mtime, which
	# mkfs.ext4 -d keeps.
	"$python" -m compileall -q -j0 -s "$stage" -p / "$stage$pylib" >/dev/null ||
		die "compiling the standard library failed"
	for l in $libs; do
		mkdir -p "$stage${l%/*}"
		cp -L "$l" "$stage$l" || die "copying $l failed"
	done

	# The code interpreter and what it runs on.
	install -m 0755 "$interp/ember-interp" "$stage/usr/bin/ember-interp"
	mkdir -p "$stage/usr/lib/ember/interp"
	install -m 0644 "$interp"/*.py "$interp"/*.js "$stage/usr/lib/ember/interp/"
	install -m 0755 "$node" "$stage/usr/bin/node"
	if [ -n "$bash" ]; then install -m 0755 "$bash" "$stage/bin/bash"; fi
	# Packages as files and directories (tests left out), symlinks
	# followed: some point into packages the image does not have.
	# shellcheck disable=SC2086
	find $pymods $pymeta $mpldata /usr/share/zoneinfo $nodelibs \
		-name __pycache__ -prune -o -name tests -prune -o -name test \
		-prune -o -print 2>/dev/null | sed 's|^/||' | sort -u >"$stage.list"
	tar -C / --no-recursion -hcf - -T "$stage.list" |
		tar -C "$stage" -xpf - || die "copying the interpreter's packages failed"
	rm -f "$stage.list"
	"$python" -m compileall -q -j0 -s "$stage" -p / \
		"$stage$distpkgs" "$stage/usr/lib/ember/interp" >/dev/null ||
		die "compiling the interpreter's packages failed"
	# Where root's `pip install` (and `%pip install`) puts packages:
	# Debian's site.py puts it on sys.path only if it exists at start.
	mkdir -p "$stage/usr/local/lib/python3.11/dist-packages"

	# /etc.
	# root, and `user` (uid 1000, /home/user): the account E2B's SDKs
	# run as (ember-e2b's default user); ember's own templates still
	# run commands as root (no defaults file).
	sh=/bin/sh
	if [ -n "$bash" ]; then sh=/bin/bash; fi
	printf 'root:x:0:0:root:/root:/bin/sh\nuser:x:1000:1000::/home/user:%s\n' \
		"$sh" >"$stage/etc/passwd"
	printf 'root:x:0:\nuser:x:1000:\n' >"$stage/etc/group"
	chmod 0750 "$stage/home/user"
	printf 'ember\n' >"$stage/etc/hostname"
	: >"$stage/etc/resolv.conf"
	# pip: 172.16.0.1 is every sandbox's own host side (api/sandbox/net.h),
	# where the operator serves a package index over plain HTTP; no
	# look for a newer pip on PyPI at every run.
	printf '[global]\ntrusted-host = 172.16.0.1\ndisable-pip-version-check = true\n' \
		>"$stage/etc/pip.conf"

	# Content (4 KiB blocks as on the host) + 1/32 for inode tables and
	# bitmaps + the journal mke2fs picks + the free space, in MiB.
	used_kib=$(du -sk "$stage" | cut -f1)
	mib=$(( (used_kib + 1023) / 1024 ))
	mib=$(( mib + mib / 32 + free_mib + 2 ))
	if [ "$mib" -lt 128 ]; then mib=$(( mib + 4 )); else mib=$(( mib + 16 )); fi

	rm -f "$tmpimg"
	truncate -s "${mib}M" "$tmpimg" || die "truncate $tmpimg failed"
	# -T default: 4 KiB blocks and the usual inode ratio (not "small"'s
	# 1 KiB blocks); -m 0: the guest runs as root; no lazy init, which
	# the guest kernel would otherwise do at every first mount of a copy.
	mkfs.ext4 -q -F -d "$stage" -L ember-root -T default -m 0 \
		-E root_owner=0:0,lazy_itable_init=0,lazy_journal_init=0 \
		"$tmpimg" || die "mkfs.ext4 -d $stage failed"
	# mkfs.ext4 -d copies the owners; a non-root build gives them to root.
	if [ "$(id -u)" != 0 ]; then
		(cd "$stage" && find . -mindepth 1) | sed 's|^\.||' |
			awk '{ printf "sif \"%s\" uid 0\nsif \"%s\" gid 0\n", $0, $0 }' |
			debugfs -w -f - "$tmpimg" >/dev/null 2>&1 ||
			die "debugfs: setting owners in $tmpimg failed"
	fi
	# /home/user belongs to user (1000:1000), whoever builds.
	printf 'sif /home/user uid 1000\nsif /home/user gid 1000\n' |
		debugfs -w -f - "$tmpimg" >/dev/null 2>&1 ||
		die "debugfs: setting the owner of /home/user in $tmpimg failed"
	mv -f "$tmpimg" "$img"
	rm -rf "$stage"
	echo "mk-rootfs: ${mib} MiB, $(du -k "$img" | cut -f1) KiB allocated"
fi

cp --sparse=always "$img" "$out/rootfs.ext4.tmp" || die "copying $img failed"
mv -f "$out/rootfs.ext4.tmp" "$out/rootfs.ext4"
