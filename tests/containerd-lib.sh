# Debian's containerd in a temporary directory, for
# tests/integration/containerd.sh and bench/containerd (sourced; bash).
#
#   ctrd_start DIR     containerd with its root, state, socket and config
#                      under DIR (created), the ember shim on its PATH
#                      (DIR/bin/containerd-shim-ember-v1 -> $CTRD_SHIM when
#                      that is there), and the environment below for the
#                      shims it starts; 0 once its socket answers, else 1
#                      with the reason in $CTRD_ERR and DIR/containerd.log
#   ctr ARG...         Debian's ctr on that containerd, namespace $CTRD_NS,
#                      limited to $CTRD_TIMEOUT seconds (default 120)
#   ctrd_ours          the pids of every process that carries DIR in its
#                      command line or environment (containerd, its shims,
#                      whatever the ember shim started), but this shell's
#   ctrd_stop          its tasks killed and removed, its containers removed,
#                      containerd stopped; then what is left of its shims
#                      and their processes killed (SIGKILL, by pid), the
#                      mounts under DIR undone; DIR stays (the caller's)
#
# The configuration (version 2): the overlayfs snapshotter, runc as the
# default runtime, and the CRI runtime "ember" (runtime_type
# io.containerd.ember.v1) that README.md's "containerd and Kubernetes"
# section documents.  ctr names the runtime itself (--runtime
# io.containerd.ember.v1): containerd then runs containerd-shim-ember-v1
# from its PATH, with its own environment (EMBER_STATE_DIR and the rest).
#
# env: CTRD_SHIM (default build/containerd-shim-ember-v1),
#      CTRD_SNAPSHOTTER (default overlayfs), CTRD_NS (default ember-test)
# shellcheck shell=bash

: "${CTRD_SNAPSHOTTER:=overlayfs}"
: "${CTRD_NS:=ember-test}"
# ==== ember shim settings: the one place to adjust (the test and the bench)
# The runtime name (ctr --runtime) and the shim containerd runs for it
# (containerd-shim-ember-v1, found on containerd's PATH: a link to
# $CTRD_SHIM in the test's bin directory).
EMBER_RT=io.containerd.ember.v1
: "${CTRD_SHIM:=build/containerd-shim-ember-v1}"
# The template the shim restores its VMs from, built first by the test and the bench with
# `emberctl template build $SHIM_TEMPLATE ${SHIM_TEMPLATE_ARGS[*]}` in their
# own state directory (EMBER_STATE_DIR, inherited by containerd and
# its shims, as are EMBER_BIN, EMBER_KERNEL and EMBER_ROOTFS).
SHIM_TEMPLATE=ctr
SHIM_TEMPLATE_ARGS=(--no-interp --no-net --spare-drives 4)
# How the shim learns the template's name (README.md, "containerd and
# Kubernetes"): its settings file, the runtime's ConfigPath, which ctr
# passes with --runtime-config-path (containerd hands the shim
# runtimeoptions.v1.Options{config_path} in Create's options, as the CRI
# plugin does from the runtime's `options` table): this text is written
# to a file that every ember `ctr run` names (SHIM_RUN_OPTS, set by
# ctrd_shim_setup DIR).  SHIM_ENV: more of containerd's environment for
# its shims (the same settings as EMBER_SHIM_*, which win over the file).
SHIM_ENV=()
SHIM_RUNTIME_CONFIG="template=$SHIM_TEMPLATE"
# =========================================================================

# ctrd_shim_setup DIR: the environment above exported (before ctrd_start:
# containerd passes it to its shims), the runtime config file written in
# DIR; SHIM_RUN_OPTS: what an ember `ctr run` adds to --runtime.
ctrd_shim_setup() {
	[ "${#SHIM_ENV[@]}" = 0 ] || export "${SHIM_ENV[@]}"
	SHIM_RUN_OPTS=()
	if [ -n "$SHIM_RUNTIME_CONFIG" ]; then
		printf '%s\n' "$SHIM_RUNTIME_CONFIG" >"$1/ember-shim.conf"
		SHIM_RUN_OPTS=(--runtime-config-path "$1/ember-shim.conf")
	fi
}

CTRD_DIR=
CTRD_PID=
CTRD_ERR=

CTRD_CTR=()
# ctr ARG...: ctr on this containerd, limited to $CTRD_TIMEOUT s (120).
ctr() { timeout -k 5 "${CTRD_TIMEOUT:-120}" "${CTRD_CTR[@]}" "$@"; }

ctrd_config() {
	local d=$1
	cat <<EOF
version = 2
root = "$d/root"
state = "$d/state"
# Nothing that reaches outside DIR, or that this test has no use for.
disabled_plugins = ["io.containerd.snapshotter.v1.aufs",
	"io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs",
	"io.containerd.snapshotter.v1.devmapper",
	"io.containerd.tracing.processor.v1.otlp", "io.containerd.internal.v1.tracing"]

[grpc]
  address = "$d/containerd.sock"

[ttrpc]
  address = "$d/containerd.sock.ttrpc"

[debug]
  level = "info"

[plugins."io.containerd.internal.v1.opt"]
  path = "$d/opt"

[plugins."io.containerd.grpc.v1.cri"]
  disable_tcp_service = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  enable_selinux = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "$d/cni/bin"
    conf_dir = "$d/cni/conf"
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "$CTRD_SNAPSHOTTER"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.ember]
      runtime_type = "io.containerd.ember.v1"
      pod_annotations = ["ember.dev/*"]
      container_annotations = ["ember.dev/*"]
EOF
}

ctrd_start() {
	local d=$1 i
	CTRD_DIR=$d
	CTRD_ERR=
	CTRD_CTR=(/usr/bin/ctr --address "$d/containerd.sock" --namespace "$CTRD_NS")
	mkdir -p "$d/bin" "$d/root" "$d/state" "$d/cni/bin" "$d/cni/conf"
	ctrd_config "$d" >"$d/config.toml"
	if [ -x "$CTRD_SHIM" ]; then
		ln -sf "$(realpath "$CTRD_SHIM")" "$d/bin/containerd-shim-ember-v1"
	fi
	# containerd's own directories are DIR's; its shims inherit this
	# environment (PATH: the ember shim first, then the system's
	# containerd-shim-runc-v2 and runc).
	PATH=$d/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
		containerd --config "$d/config.toml" \
		</dev/null >"$d/containerd.log" 2>&1 &
	CTRD_PID=$!
	for i in $(seq 600); do
		if [ -S "$d/containerd.sock" ] && ctr version >/dev/null 2>&1; then
			return 0
		fi
		if ! kill -0 "$CTRD_PID" 2>/dev/null; then
			CTRD_ERR="containerd ended: $(tail -5 "$d/containerd.log" | tr '\n' ' ')"
			CTRD_PID=
			return 1
		fi
		sleep 0.1
	done
	CTRD_ERR="containerd's socket did not answer in 60 s"
	return 1
}

# ctrd_ours: pids whose command line or environment names CTRD_DIR.
ctrd_ours() {
	[ -n "$CTRD_DIR" ] || return 0
	local p
	# (grep finds itself: what has ended since is left out.)
	for p in $(grep -lsaF -- "$CTRD_DIR" /proc/[0-9]*/cmdline /proc/[0-9]*/environ 2>/dev/null |
		cut -d/ -f3 | sort -u | grep -vxE "$$|$BASHPID"); do
		[ -d "/proc/$p" ] && echo "$p"
	done
}

# ctrd_mounts: the mount points under CTRD_DIR, deepest first.
ctrd_mounts() {
	[ -n "$CTRD_DIR" ] || return 0
	awk -v d="$CTRD_DIR" 'index($5, d) == 1 { print $5 }' /proc/self/mountinfo | sort -r
}

ctrd_stop() {
	local i p m
	[ -n "$CTRD_DIR" ] || return 0
	if [ -n "$CTRD_PID" ]; then
		# Its tasks first: a runc container outlives its shim.
		for p in $(CTRD_TIMEOUT=20 ctr task ls -q 2>/dev/null); do
			CTRD_TIMEOUT=20 ctr task kill -s SIGKILL "$p" >/dev/null 2>&1
			CTRD_TIMEOUT=20 ctr task rm -f "$p" >/dev/null 2>&1
		done
		for p in $(CTRD_TIMEOUT=20 ctr c ls -q 2>/dev/null); do
			CTRD_TIMEOUT=20 ctr c rm "$p" >/dev/null 2>&1
		done
		kill -TERM "$CTRD_PID" 2>/dev/null
		for i in $(seq 100); do
			kill -0 "$CTRD_PID" 2>/dev/null || break
			sleep 0.1
		done
		kill -KILL "$CTRD_PID" 2>/dev/null
		wait "$CTRD_PID" 2>/dev/null
		CTRD_PID=
	fi
	for p in $(ctrd_ours); do kill -KILL "$p" 2>/dev/null; done
	for i in $(seq 50); do
		[ -z "$(ctrd_ours)" ] && break
		sleep 0.1
	done
	for m in $(ctrd_mounts); do umount -l "$m" 2>/dev/null; done
	return 0
}
