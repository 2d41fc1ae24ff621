#!/usr/bin/env bash
# ember-jailer and ember driven exactly as Kata Containers drives the
# jailer and Firecracker (kata-containers src/runtime/virtcontainers/
# fc.go, with enable_debug), under a temporary chroot base instead of
# /run/vc: `FC --version` parsed as Kata parses it (the second word of the
# first line, "v" dropped, a semver at least 0.21.1); the jail's root/run
# made and root/ bound onto itself (shared), the kernel, the root file
# system, the config file and the logs and metrics FIFOs (made mode 0000,
# opened for reading first) bound into it, Kata's pool of 8 placeholder
# drives (empty files) and a vsock; the jailer with Firecracker's flags alone
# (--id --exec-file --uid 0 --gid 0 --chroot-base-dir --daemonize --
# --config-file /fcConfig.json; no --ro-bind: ember is linked
# dynamically); `GET /` on root/run/firecracker.socket until "Running";
# the hybrid vsock socket there (Kata chmods it); a JSON metrics line and
# log lines read from the FIFOs; a real image bound over the placeholder
# and `PATCH /drives/drive_0` to it, the guest reading it and writing back
# through the new disk; SIGTERM as Kata's StopVM, Kata's unmounts and
# removal, then no process, no mount and no directory left.  Needs root
# and /dev/kvm.
set -u
cd "$(dirname "$0")/../.."
. tests/lib.sh

JEMBER=${JEMBER:-${EMBER%-asan}}
JAILER=${JAILER:-$(dirname "$JEMBER")/ember-jailer}

if [ "$(id -u)" != 0 ]; then
	echo "ok - # SKIP Kata's jailer sequence needs root"
	exit 0
fi
for f in "$JAILER" "$JEMBER" "$GUEST/vmlinux" "$GUEST/rootfs.ext4"; do
	if [ ! -f "$f" ]; then
		not_ok "Kata's sequence: $f is built" "make all guest"
		exit 0
	fi
done
need_kvm "Kata's jailer sequence"

FC=$PWD/$JEMBER # Kata's hypervisor path: absolute
BASE=$TMP/vc    # Kata's chroot base: /run/vc
# Kata's id: the sandbox id cut to 32 characters (a UUID's worth of hex).
ID=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
VM=$BASE/$(basename "$FC")/$ID
ROOT=$VM/root
SOCK=$ROOT/run/firecracker.socket
pid=
readers=()

umount_under() { # every mount below $1, deepest first
	awk -v b="$1" '$5 == b || index($5, b "/") == 1 { print $5 }' \
		/proc/self/mountinfo | sort -r | while read -r m; do
		umount -l "$m" 2>/dev/null
	done
}
cleanup() {
	local p
	[ -n "$pid" ] && kill -9 "$pid" 2>/dev/null
	for p in ${readers[@]+"${readers[@]}"}; do kill "$p" 2>/dev/null; done
	umount_under "$BASE"
	rm -rf "$TMP"
}
trap cleanup EXIT
show() { for f in "$@"; do echo "#   $f:"; tail -15 "$f" 2>/dev/null | sed 's/^/#     /'; done; }
api() { # METHOD PATH [BODY]: the status; the body in $TMP/api.body
	curl -s --max-time 10 --unix-socket "$SOCK" -X "$1" \
		-H 'Accept: application/json' \
		${3:+-H 'Content-Type: application/json' -d "$3"} \
		-o "$TMP/api.body" -w '%{http_code}' "http://localhost$2"
}

# ---- fcInit: the version check ---------------------------------------------
out=$("$FC" --version 2>&1)
rc=$?
first=${out%%$'\n'*}
read -r _ ver _ <<<"$first"
ver=${ver#v}
check "--version: Kata reads version '$ver' from the first line, at least 0.21.1" \
	"exit $rc; output: $out" sh -c "[ $rc = 0 ] &&
	printf '%s' '$ver' | grep -Eq '^[0-9]+\.[0-9]+\.[0-9]+$' &&
	[ \"\$(printf '0.21.1\n%s\n' '$ver' | sort -V | head -1)\" = 0.21.1 ]"

# ---- fcInitConfiguration -----------------------------------------------------
mkdir -p "$ROOT/run"
chmod 750 "$ROOT/run" "$ROOT"
# fcRemountJailerRootWithExec: root/ bound onto itself, shared, no noexec.
mount --bind "$ROOT" "$ROOT" && mount --make-shared "$ROOT" &&
	mount -o remount,bind,nosuid "$ROOT"
# fcJailResource SRC NAME: SRC bound (slave) at root/NAME; "/NAME" for FC.
jail_resource() {
	[ -e "$ROOT/$2" ] || touch "$ROOT/$2"
	mount --bind "$1" "$ROOT/$2" && mount --make-slave "$ROOT/$2"
}
jail_resource "$GUEST/vmlinux" vmlinux
jail_resource "$GUEST/rootfs.ext4" rootfs
# createDiskPool: 8 placeholders (fcDiskPoolSize), empty files.
pool=
for i in 0 1 2 3 4 5 6 7; do
	: >"$ROOT/drive_$i"
	pool+=',
		{
			"drive_id": "drive_'$i'",
			"is_read_only": false,
			"is_root_device": false,
			"path_on_host": "/drive_'$i'"
		}'
done
# fcListenToFifo: made with mode 0000 and opened for reading (without
# blocking: read-write here) before ember opens it.
for f in logs metrics; do
	mkfifo -m 0 "$VM/$f.fifo"
	jail_resource "$VM/$f.fifo" "$f.fifo"
done
exec 5<>"$VM/logs.fifo" 6<>"$VM/metrics.fifo"
cat <&5 >"$TMP/logs.txt" &
readers+=($!)
cat <&6 >"$TMP/metrics.txt" &
readers+=($!)
exec 5<&- 6<&-

# The guest's part (ember's init runs ember.run=, base64url): once the
# placeholder has become a disk, read its first bytes and write them back
# behind a marker, then stay up as Kata's agent would.
guest_cmd='while [ "$(cat /sys/block/vdb/size)" = 0 ]; do sleep 0.2; done
printf "seen-by-guest:%s\n" "$(head -c 15 /dev/vdb)" | dd of=/dev/vdb bs=512 seek=1 conv=notrunc 2>/dev/null
sync
sleep 100000'
run=$(printf '%s' "$guest_cmd" | base64 -w0 | tr '+/' '-_' | tr -d '=')
# Kata's parameters (debug: console=ttyS0), its root= for an
# unpartitioned image, and the guest command.
ARGS="root=/dev/vda rootflags=data=ordered,errors=remount-ro ro rootfstype=ext4"
ARGS+=" pci=off reboot=k panic=1 iommu=off net.ifnames=0 random.trust_cpu=on"
ARGS+=" acpi=off console=ttyS0 ember.run=$run"
# StartVM: json.MarshalIndent(fcConfig) to VM/fcConfig.json, bound in.
cat >"$VM/fcConfig.json" <<EOF
{
	"boot-source": {
		"kernel_image_path": "/vmlinux",
		"boot_args": "$ARGS"
	},
	"machine-config": {
		"mem_size_mib": 256,
		"smt": false,
		"vcpu_count": 1
	},
	"drives": [
		{
			"drive_id": "rootfs",
			"is_read_only": true,
			"is_root_device": false,
			"path_on_host": "/rootfs"
		}$pool
	],
	"vsock": {
		"guest_cid": 3,
		"uds_path": "/kata.hvsock",
		"vsock_id": "root"
	},
	"logger": {
		"level": "Debug",
		"log_path": "/logs.fifo"
	},
	"metrics": {
		"metrics_path": "/metrics.fifo"
	}
}
EOF
chmod 640 "$VM/fcConfig.json"
jail_resource "$VM/fcConfig.json" fcConfig.json

# ---- fcInit: the jailer, Firecracker's flags alone ---------------------------
"$JAILER" --id "$ID" --exec-file "$FC" --uid 0 --gid 0 \
	--chroot-base-dir "$BASE" --daemonize -- --config-file /fcConfig.json \
	>"$TMP/jailer.out" 2>"$TMP/jailer.err" &
pid=$!
# waitVMMRunning: GET / every 10 ms until Running (Kata gives up after 10 s;
# here 60: the KVM box is slow).
state=
for ((i = 0; i < 6000; i++)); do
	s=$(api GET / 2>/dev/null)
	if [ "$s" = 200 ] && grep -q '"state":"Running"' "$TMP/api.body"; then
		state=Running
		break
	fi
	kill -0 "$pid" 2>/dev/null || break
	sleep 0.01
done
check "GET / on root/run/firecracker.socket says Running (jailer with Firecracker's flags only)" \
	"state '$state', last: $(cat "$TMP/api.body" 2>/dev/null); $(show "$TMP/jailer.err" "$TMP/logs.txt")" \
	test "$state" = Running
s=$(api GET /vm/config)
check "GET /vm/config: the root file system and the 8 placeholders" \
	"HTTP $s $(head -c 400 "$TMP/api.body")" sh -c "[ $s = 200 ] &&
	python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))[\"drives\"]
sys.exit([x[\"drive_id\"] for x in d] != [\"rootfs\"] + [\"drive_%d\" % i for i in range(8)])' '$TMP/api.body'"
check "the jailer became ember (same pid), in its chroot" \
	"exe $(readlink "/proc/$pid/exe"); root $(stat -Lc %d:%i "/proc/$pid/root" 2>&1) vs $(stat -c %d:%i "$ROOT")" \
	sh -c "[ \"\$(readlink /proc/$pid/exe)\" = /ember ] &&
	[ \"\$(stat -Lc %d:%i /proc/$pid/root)\" = \"\$(stat -c %d:%i '$ROOT')\" ]"
check "uid 0 without capabilities but CAP_DAC_OVERRIDE (Kata's mode 0000 FIFOs), NoNewPrivs" \
	"$(grep -E '^(Uid|Cap|NoNewPrivs)' "/proc/$pid/status" | tr '\n' ' ')" sh -c "
	grep -q '^CapEff:	0000000000000002$' /proc/$pid/status &&
	grep -q '^CapBnd:	0000000000000002$' /proc/$pid/status &&
	grep -q '^NoNewPrivs:	1$' /proc/$pid/status"
# Only the loader and libraries ember needs, each a file of its own.
libs=$(ldd "$FC" | grep -o '/[^ ]*' | sort -u)
check "ember's loader and libraries (ldd's) are in the jail, read-only" \
	"the jail's mounts: $(awk '{ print $5, $6 }' "/proc/$pid/mountinfo" | tr '\n' ';')" \
	sh -c "for l in $(echo $libs); do
		[ -r /proc/$pid/root\$l ] || exit 1
		cmp -s /proc/$pid/root\$l \$l || exit 1
	done
	awk '\$5 ~ /(ld-linux|libc\\.so)/ && \$6 !~ /^ro,/ { bad = 1 } END { exit bad }' /proc/$pid/mountinfo"
check "the hybrid vsock socket is there for Kata's chmod" "$(ls -la "$ROOT")" \
	sh -c "[ -S '$ROOT/kata.hvsock' ] && chmod 0640 '$ROOT/kata.hvsock'"

# The metrics FIFO: a JSON line at the start (Kata's updateMetrics).
wait_for "$TMP/metrics.txt" '^\{"utc_timestamp_ms":[0-9]+' 30
check "the metrics FIFO gives a JSON line" "$(head -c 300 "$TMP/metrics.txt")" \
	sh -c "head -1 '$TMP/metrics.txt' | python3 -c 'import json, sys; json.loads(sys.stdin.readline())'"
wait_for "$TMP/logs.txt" '.' 30
check "the logs FIFO gives ember's log lines" "$(head -c 300 "$TMP/logs.txt")" \
	test -s "$TMP/logs.txt"

# ---- hotplugBlockDevice: the real image bound over the placeholder, PATCH ----
truncate -s 1M "$TMP/disk.img"
printf 'hello-from-host' | dd of="$TMP/disk.img" conv=notrunc 2>/dev/null
jail_resource "$TMP/disk.img" drive_0
s=$(api PATCH /drives/drive_0 '{"drive_id":"drive_0","path_on_host":"/drive_0"}')
check "PATCH /drives/drive_0 (the new image at the placeholder's path): 204" \
	"HTTP $s $(cat "$TMP/api.body" 2>/dev/null); $(show "$TMP/logs.txt")" test "$s" = 204
wait_for "$TMP/disk.img" 'seen-by-guest:hello-from-host' 120 "$pid"
check "the guest sees the new disk: it read it and wrote back to it" \
	"$(head -c 600 "$TMP/disk.img" | tr -d '\0' | head -c 100); $(show "$TMP/logs.txt")" \
	grep -aq 'seen-by-guest:hello-from-host' "$TMP/disk.img"

# ---- StopVM and cleanupJail ----------------------------------------------------
kill -TERM "$pid"
exit_of "$pid" 15
check "SIGTERM (Kata's fcEnd) ends ember within 15 s" "status $st" \
	test "$st" != timeout
pid=
for r in drive_0 vmlinux rootfs logs.fifo metrics.fifo fcConfig.json; do
	umount -l "$ROOT/$r"
done
umount -l "$ROOT"
rm -rf "$VM"
for p in "${readers[@]}"; do kill "$p" 2>/dev/null; done
readers=()
check "nothing left: no process in the jail, no mount, no directory" \
	"mounts: $(grep -c "$BASE" /proc/self/mountinfo); left: $(ls -A "$BASE/$(basename "$FC")" 2>&1)" \
	sh -c "! grep -q '$BASE' /proc/self/mountinfo && [ ! -e '$VM' ] &&
	! ls -l /proc/[0-9]*/root 2>/dev/null | grep -q '$VM'"
