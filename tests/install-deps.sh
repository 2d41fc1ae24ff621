#!/bin/sh
# Installs what building ember, its guest and its tests needs, from
# Debian 12's packages.  Quiet and quick when everything is there.
set -eu
pkgs="build-essential make gcc clang libclang-rt-14-dev musl-tools libcmocka-dev pkg-config
libmicrohttpd-dev libjansson-dev libcurl4-openssl-dev curl zlib1g-dev libseccomp-dev
libcap-ng-dev libssl-dev
linux-source-6.1 bc flex bison libelf-dev cpio xz-utils busybox-static
util-linux file e2fsprogs python3 iproute2 iputils-ping
python3-numpy python3-pandas python3-matplotlib python3-pip iptables
python3-ipykernel python3-jupyter-client python3-setuptools python3-wheel
qemu-system-x86 kmod skopeo umoci
libprotobuf-c-dev protobuf-c-compiler containerd runc"
missing=
for p in $pkgs; do
	dpkg-query -W -f '${Status}\n' "$p" 2>/dev/null | grep -q 'ok installed' ||
		missing="$missing $p"
done
# python3-ipykernel, python3-jupyter-client (IPython, pyzmq, tornado...
# come with them): the code interpreter's Python contexts are IPython
# kernels (guest-init/interp/py_kernel.py), copied into the rootfs with
# setuptools and wheel (offline `pip wheel --no-build-isolation`) by
# guest-init/mk-rootfs.sh.
# containerd (with ctr) and runc: tests/integration/containerd.sh and
# bench/containerd (ember's shim beside runc, the reference).
# skopeo and umoci: image archives and layouts -> an OCI layout -> a root
# tree (api/sandbox/image*.c); libssl-dev: its sha256 (libcrypto).
# libprotobuf-c-dev, protobuf-c-compiler: containerd's messages in the
# shim (api/containerd/); containerd and runc: its tests.
# qemu-system-x86 and kmod: the KVM box (tests/kvmbox/), where a host has
# no usable /dev/kvm; its kernel is fetched by tests/kvmbox/kernel.sh.
# Node.js: the guest's JavaScript (copied into the rootfs) and the MCP
# tests' client (the official SDK, from npm).  Any installed node and npm
# do (a distribution other than Debian's bundles npm with node).
command -v node >/dev/null 2>&1 || missing="$missing nodejs"
command -v npm >/dev/null 2>&1 || missing="$missing npm"
[ -z "$missing" ] && exit 0
if [ "$(id -u)" != 0 ]; then
	echo "install-deps: missing packages:$missing (run as root, or apt-get install them)" >&2
	exit 1
fi
echo "install-deps: installing$missing"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# shellcheck disable=SC2086
apt-get install -y -qq --no-install-recommends $missing >/dev/null
