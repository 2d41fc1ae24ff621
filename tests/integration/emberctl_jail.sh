#!/usr/bin/env bash
# emberctl run --jail (api/sandbox/jail.c): a sandbox restored from the
# template "default" (built by net.sh in $SHARED_STATE_DIR when
# tests/run.sh gives one, else here: minutes on a PVM host) with its ember
# run through ember-jailer: the agent answers `exec`; ember runs as
# 1000:1000 on every thread with CapEff 0, NoNewPrivs 1 and Seccomp 2, in
# its own mount namespace with the jail as its root and in the memory
# cgroup ember/ID; `kill` leaves no jail directory and no cgroup; ember
# killed by SIGKILL during an exec is cleaned up by its supervisor (jail,
# cgroup, netns, directory); --jail without a template and a bad UID:GID
# are refused.  Needs root.
#
# The jail runs the release ember beside $EMBER (ember-asan's runtime
# wants /proc, which a jail has not).
set -u
cd "$(dirname "$0")/../.."
. tests/lib.sh

: "${EMBERCTL:=build/emberctl-asan}"
JEMBER=${JEMBER:-${EMBER%-asan}}
JAILER=${JAILER:-$(dirname "$JEMBER")/ember-jailer}
BOOT_TIMEOUT=${BOOT_TIMEOUT:-600}
export EMBER_STATE_DIR=${SHARED_STATE_DIR:-$TMP/state}
export EMBER_SUPERVISOR_LOG=$TMP/supervisor.log
E=$EMBERCTL

if [ "$(id -u)" != 0 ]; then
	echo "ok - # SKIP emberctl run --jail needs root"
	exit 0
fi
need_kvm "jailed sandboxes"
for f in "$E" "$JEMBER" "$JAILER"; do
	if [ ! -x "$f" ]; then
		not_ok "emberctl --jail: $f is built" "make all asan"
		exit 0
	fi
done
export EMBER_BIN=$PWD/$JEMBER EMBER_JAILER_BIN=$PWD/$JAILER
export EMBER_KERNEL=$PWD/$GUEST/vmlinux EMBER_ROOTFS=$PWD/$GUEST/rootfs.ext4

ids=()
cleanup() {
	for i in ${ids[@]+"${ids[@]}"}; do "$E" kill "$i" >/dev/null 2>&1; done
	rm -rf "$TMP"
}
trap cleanup EXIT
show() { for f in "$@"; do echo "#   $f:"; sed 's/^/#     /' "$f" | tail -15; done; }
ev() { eval "$*"; }
info() { sed -n "s/^$2=//p" "$EMBER_STATE_DIR/$1/info"; }
# The jail's memory cgroup directory of sandbox $1, by cgroup version.
cgroup_of() {
	if [ "$(stat -fc %T /sys/fs/cgroup)" = cgroup2fs ]; then
		echo "/sys/fs/cgroup/ember/$1"
	else
		echo "/sys/fs/cgroup/memory/ember/$1"
	fi
}

timeout "$BOOT_TIMEOUT" env EMBER_BIN="$PWD/$EMBER" "$E" template build default \
	--if-missing --boot-timeout "$BOOT_TIMEOUT" >"$TMP/build.out" 2>"$TMP/build.err"
brc=$?
check "template default is there" "exit $brc; $(show "$TMP/build.err")" [ $brc = 0 ]

"$E" run --jail >"$TMP/o" 2>"$TMP/e" --boot
rc=$?
check "run --jail --boot is refused (only a restore is jailed)" \
	"exit $rc; $(cat "$TMP/e")" ev '[ $rc = 2 ] && grep -q "restores a template" "$TMP/e"'
"$E" run --jail=0:0 --template default >"$TMP/o" 2>"$TMP/e"
rc=$?
check "run --jail=0:0 is refused" "exit $rc; $(cat "$TMP/e")" \
	ev '[ $rc = 2 ] && grep -q "UID:GID" "$TMP/e"'

t0=$(date +%s%N)
id=$("$E" run --jail --template default 2>"$TMP/run.err")
ms=$((($(date +%s%N) - t0) / 1000000))
check "run --jail --template default ($ms ms)" \
	"$(show "$TMP/run.err" "$EMBER_SUPERVISOR_LOG")" [ -n "$id" ]
[ -n "$id" ] || exit 0
ids+=("$id")

out=$("$E" exec "$id" -- sh -c 'id -u; echo hi' 2>"$TMP/e")
check "exec in the jailed sandbox: the guest's id -u and output" \
	"got '$out'; $(cat "$TMP/e")" [ "$out" = "0
hi" ]

pid=$(info "$id" ember)
root=$(info "$id" jail_root)
check "its info names the jail $EMBER_STATE_DIR/jails/ember/$id/root" \
	"jail_root=$root" [ "$root" = "$EMBER_STATE_DIR/jails/ember/$id/root" ]
bad=
n=0
for t in /proc/"$pid"/task/*; do
	s=$(grep -E '^(Uid|Gid|CapEff|CapPrm|CapBnd|NoNewPrivs|Seccomp):' "$t/status" | tr -s '\t' ' ')
	n=$((n + 1))
	printf '%s\n' "$s" | grep -qx 'Uid: 1000 1000 1000 1000' &&
		printf '%s\n' "$s" | grep -qx 'Gid: 1000 1000 1000 1000' &&
		printf '%s\n' "$s" | grep -qx 'CapEff: 0000000000000000' &&
		printf '%s\n' "$s" | grep -qx 'CapPrm: 0000000000000000' &&
		printf '%s\n' "$s" | grep -qx 'NoNewPrivs: 1' &&
		printf '%s\n' "$s" | grep -qx 'Seccomp: 2' ||
		bad="$bad ${t##*/}: $(printf '%s' "$s" | tr '\n' ' ')"
done
check "ember (pid $pid, $n threads): uid/gid 1000, no capability, NoNewPrivs 1, Seccomp 2 on every thread" \
	"${bad:-no threads}" ev '[ -z "$bad" ] && [ $n -ge 2 ]'
check "ember's root is the jail and its mount namespace its own" \
	"root $(stat -Lc %d:%i /proc/"$pid"/root) jail $(stat -c %d:%i "$root"); mnt $(readlink /proc/"$pid"/ns/mnt) ours $(readlink /proc/self/ns/mnt)" \
	ev '[ "$(stat -Lc %d:%i /proc/$pid/root)" = "$(stat -c %d:%i "$root")" ] &&
	[ "$(readlink /proc/$pid/ns/mnt)" != "$(readlink /proc/self/ns/mnt)" ] &&
	[ -S "$root/api.sock" ] && [ -S "$root/vsock.sock" ]'
cg=$(cgroup_of "$id")
check "ember is in the memory cgroup ember/$id with a limit (RAM + 256 MiB)" \
	"$(cat /proc/"$pid"/cgroup 2>&1 | grep -E 'memory|^0::')" \
	ev 'grep -qE "(memory|^0:):/ember/$id\$" /proc/$pid/cgroup &&
	grep -qE "^($((512 << 20))|$((512 << 20)))\$" "$cg/memory.limit_in_bytes" "$cg/memory.max" 2>/dev/null'
"$E" pause --to-disk "$id" >"$TMP/o" 2>"$TMP/e"
rc=$?
check "pause --to-disk of a jailed sandbox is refused, clearly" \
	"exit $rc; $(cat "$TMP/e")" ev '[ $rc != 0 ] && grep -q "jailed" "$TMP/e"'
"$E" pause "$id" >/dev/null 2>"$TMP/e" && "$E" resume "$id" >/dev/null 2>>"$TMP/e"
rc=$?
out=$("$E" exec "$id" -- echo back 2>>"$TMP/e")
check "pause and resume (in memory) work through the jail's socket" \
	"exit $rc; got '$out'; $(cat "$TMP/e")" [ "$out" = back ]

"$E" kill "$id" >/dev/null 2>"$TMP/e"
rc=$?
sleep 0.2
check "kill leaves no jail directory, cgroup, netns or process" \
	"exit $rc; $(cat "$TMP/e"); $(ls -A "$EMBER_STATE_DIR/jails/ember" 2>&1)" \
	ev '[ $rc = 0 ] && [ ! -e "$EMBER_STATE_DIR/jails/ember/$id" ] && [ ! -e "$cg" ] &&
	[ ! -e /run/netns/ember-$id ] && [ ! -e /proc/$pid ] && [ ! -e "$EMBER_STATE_DIR/$id" ]'

# A crash: ember killed during an exec; the supervisor cleans up.
id=$("$E" run --jail=1001:1002 --template default 2>"$TMP/run.err")
check "a second jailed sandbox, as 1001:1002" "$(show "$TMP/run.err")" [ -n "$id" ]
[ -n "$id" ] || exit 0
ids+=("$id")
pid=$(info "$id" ember)
check "its ember runs as 1001:1002" "$(grep -E '^(Uid|Gid):' /proc/"$pid"/status)" \
	ev 'grep -qP "^Uid:\t1001\t" /proc/$pid/status && grep -qP "^Gid:\t1002\t" /proc/$pid/status'
cg=$(cgroup_of "$id")
"$E" exec "$id" -- sleep 60 >/dev/null 2>"$TMP/exec.err" &
epid=$!
sleep 2
kill -9 "$pid"
wait "$epid"
erc=$?
for _ in $(seq 50); do
	[ -e "$EMBER_STATE_DIR/$id" ] || [ -e "$cg" ] || break
	sleep 0.2
done
check "ember killed (SIGKILL) during an exec: the exec fails, and jail, cgroup, netns and directory are removed" \
	"exec exit $erc; $(cat "$TMP/exec.err"); left: $(ls -A "$EMBER_STATE_DIR/jails/ember" "$cg" 2>&1 | head -3)" \
	ev '[ $erc != 0 ] && [ ! -e "$EMBER_STATE_DIR/$id" ] && [ ! -e "$EMBER_STATE_DIR/jails/ember/$id" ] &&
	[ ! -e "$cg" ] && [ ! -e /run/netns/ember-$id ]'
out=$("$E" ls 2>&1)
check "ls no longer shows it" "$out" ev '! printf "%s" "$out" | grep -q "$id"'
