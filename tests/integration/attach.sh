#!/usr/bin/env bash
# Processes that outlive their connection (issue 24, item 4): emberctl
# exec -d / --keep, ps and attach.  Part 1 needs no VM: a stand-in for
# ember (fake_ember.py, the vsock handshake in front of
# build/test/agent-host) checks the commands in seconds: a detached
# command listed and attached from a new connection, an exec --keep whose
# emberctl is killed while it runs, an unknown pid, more output than the
# guest keeps.  Part 2 boots a real sandbox, starts `sleep 30; echo done`
# detached, parks it (pause --to-disk: its ember gone, every vsock
# connection cut) and resumes it: attach prints `done` and exits 0.  The
# sandboxes' state lives under $TMP/state.
set -u
cd "$(dirname "$0")/../.."
. tests/lib.sh

: "${EMBERCTL:=build/emberctl-asan}"
BOOT_TIMEOUT=${BOOT_TIMEOUT:-600}
export EMBER_STATE_DIR=$TMP/state
export EMBER_SUPERVISOR_LOG=$TMP/supervisor.log
E=$EMBERCTL

show() { for f in "$@"; do echo "#   $f:"; sed 's/^/#     /' "$f" | tail -15; done; }
ev() { eval "$*"; }
cleanup() {
	local d
	for d in "$EMBER_STATE_DIR"/*/; do
		[ -f "$d/info" ] && "$E" kill "$(basename "$d")" >/dev/null 2>&1
	done
	rm -rf "$TMP"
}
trap cleanup EXIT

if [ ! -x "$E" ] || [ ! -x "${FAKE_AGENT:-build/test/agent-host}" ]; then
	not_ok "attach: $E and ${FAKE_AGENT:-build/test/agent-host} are built" "make asan"
	exit 0
fi

# ---- part 1: a fake ember ----------------------------------------------
export EMBER_BIN=$PWD/tests/integration/fake_ember.py
export EMBER_KERNEL=$TMP/vmlinux EMBER_ROOTFS=$TMP/root.img
echo kernel >"$EMBER_KERNEL"
truncate -s 16M "$EMBER_ROOTFS"
id=$("$E" run 2>"$TMP/run.err")
check "fake: a sandbox" "$(show "$TMP/run.err")" [ -n "$id" ]

# The fake's "guest" is this host: $TMP/go lets the command end.
pid=$("$E" exec -d "$id" -- sh -c "echo one; echo two >&2; while [ ! -e $TMP/go ]; do sleep 0.05; done; echo done; exit 3" \
	2>"$TMP/d.err")
rc=$?
check "fake: exec -d prints the pid and returns at once (0)" \
	"exit $rc, pid '$pid'; $(show "$TMP/d.err")" \
	ev '[ $rc = 0 ] && echo "$pid" | grep -qxE "[0-9]+"'
"$E" ps "$id" >"$TMP/ps.out" 2>"$TMP/ps.err"
check "fake: ps lists it running, its command" "$(show "$TMP/ps.out" "$TMP/ps.err")" \
	ev 'head -1 "$TMP/ps.out" | grep -q "^PID *STATE *DROPPED *COMMAND" && grep -qE "^$pid +running +0 +sh -c echo one" "$TMP/ps.out"'
( sleep 1; touch "$TMP/go" ) &
"$E" attach "$id" "$pid" >"$TMP/a.out" 2>"$TMP/a.err"
rc=$?
check "fake: attach from a new connection: all its output, its exit status (3)" \
	"exit $rc; $(show "$TMP/a.out" "$TMP/a.err")" \
	ev '[ $rc = 3 ] && [ "$(cat "$TMP/a.out")" = "one
done" ] && [ "$(cat "$TMP/a.err")" = two ]'
"$E" attach "$id" "$pid" >/dev/null 2>"$TMP/a2.err"
rc=$?
check "fake: attach again once its end was collected: 125, no such process" \
	"exit $rc; $(show "$TMP/a2.err")" \
	ev '[ $rc = 125 ] && grep -q "attach to process $pid in sandbox $id: .*no process $pid kept by the agent" "$TMP/a2.err"'
"$E" attach "$id" 999999 >/dev/null 2>"$TMP/a3.err"
rc1=$?
"$E" attach "$id" nope >/dev/null 2>"$TMP/a4.err"
rc2=$?
"$E" attach "$id" >/dev/null 2>>"$TMP/a4.err"
rc3=$?
check "fake: attach to an unknown pid, a bad pid, no pid: 125 and why" \
	"exits $rc1 $rc2 $rc3; $(show "$TMP/a3.err" "$TMP/a4.err")" \
	ev '[ "$rc1$rc2$rc3" = 125125125 ] && grep -q "No such process.*no process 999999 kept" "$TMP/a3.err" && grep -q "not .nope." "$TMP/a4.err"'

# exec --keep whose emberctl dies while the command runs: it runs on.
"$E" exec --keep "$id" -- sh -c 'echo $$; sleep 1; echo after' >"$TMP/k.out" 2>"$TMP/k.err" &
kpid=$!
wait_for "$TMP/k.out" '^[0-9]+$' 20
gpid=$(head -1 "$TMP/k.out")
kill -9 $kpid
wait $kpid 2>/dev/null
"$E" attach "$id" "$gpid" >"$TMP/k2.out" 2>"$TMP/k2.err"
rc=$?
check "fake: exec --keep, its emberctl killed: the command runs on, attach gets the rest (0)" \
	"exit $rc, pid '$gpid'; $(show "$TMP/k.out" "$TMP/k2.out" "$TMP/k2.err")" \
	ev '[ $rc = 0 ] && [ -n "$gpid" ] && [ "$(cat "$TMP/k2.out")" = after ]'
# Without --keep the old way: the command goes with the connection.
"$E" exec "$id" -- sh -c 'echo $$; sleep 2; touch /tmp/should-not-be-there-$$' \
	>"$TMP/n.out" 2>/dev/null &
kpid=$!
wait_for "$TMP/n.out" '^[0-9]+$' 20
npid=$(head -1 "$TMP/n.out")
kill -9 $kpid
wait $kpid 2>/dev/null
"$E" attach "$id" "$npid" >/dev/null 2>"$TMP/n.err"
rc=$?
sleep 2.5
check "fake: plain exec, its emberctl killed: the command is killed, not attachable" \
	"exit $rc; $(show "$TMP/n.err")" \
	ev '[ $rc = 125 ] && [ -n "$npid" ] && [ ! -e "/tmp/should-not-be-there-$npid" ]'

# More than the guest keeps (1 MiB): the oldest bytes dropped and said so.
pid=$("$E" exec -d "$id" -- sh -c "head -c 3000000 /dev/zero | tr '\\0' x; echo; echo end" \
	2>"$TMP/o.err")
for _ in $(seq 100); do
	"$E" ps "$id" 2>/dev/null | grep -qE "^$pid +exited 0 " && break
	sleep 0.1
done
"$E" ps "$id" >"$TMP/ops.out" 2>&1
"$E" attach "$id" "$pid" >"$TMP/o.out" 2>"$TMP/o2.err"
rc=$?
size=$(stat -c %s "$TMP/o.out")
check "fake: 3000005 bytes while detached: ps says exited 0 with 1951429 dropped; attach gets the last 1 MiB and says so" \
	"exit $rc, size $size; $(show "$TMP/ops.out" "$TMP/o2.err")" \
	ev '[ $rc = 0 ] && [ "$size" = 1048576 ] && [ "$(tail -1 "$TMP/o.out")" = end ] && grep -qE "^$pid +exited 0 +1951429 " "$TMP/ops.out" && grep -q "1951429 bytes of its output were dropped" "$TMP/o2.err"'
"$E" exec -d -i "$id" -- true >/dev/null 2>"$TMP/di.err"
rc=$?
check "fake: exec -d with -i: refused (125)" "exit $rc; $(show "$TMP/di.err")" \
	ev '[ $rc = 125 ] && grep -q "takes no stdin" "$TMP/di.err"'
"$E" kill "$id" >/dev/null 2>&1

# ---- part 2: a real sandbox, parked and resumed -------------------------
need_kvm "attach with a real sandbox"
export EMBER_BIN=$EMBER EMBER_KERNEL=$GUEST/vmlinux EMBER_ROOTFS=$GUEST/rootfs.ext4
id=$(timeout "$BOOT_TIMEOUT" "$E" run --boot --boot-timeout "$BOOT_TIMEOUT" 2>"$TMP/vrun.err")
rc=$?
check "vm: a booted sandbox" "exit $rc; $(show "$TMP/vrun.err")" [ $rc = 0 ]
[ $rc = 0 ] || exit 0
pid=$("$E" exec -d "$id" -- sh -c 'sleep 30; echo done' 2>"$TMP/vd.err")
rc=$?
"$E" ps "$id" >"$TMP/vps.out" 2>&1
check "vm: exec -d 'sleep 30; echo done': a pid; ps lists it running" \
	"exit $rc, pid '$pid'; $(show "$TMP/vd.err" "$TMP/vps.out")" \
	ev '[ $rc = 0 ] && grep -qE "^$pid +running +0 +sh -c sleep 30; echo done" "$TMP/vps.out"'
"$E" exec --keep "$id" -- sh -c 'echo $$; sleep 25; echo kept' >"$TMP/vk.out" 2>"$TMP/vk.err" &
kpid=$!
wait_for "$TMP/vk.out" '^[0-9]+$' 60
kept=$(head -1 "$TMP/vk.out")
"$E" pause --to-disk "$id" >/dev/null 2>"$TMP/vp.err"
rc1=$?
wait $kpid 2>/dev/null
krc=$?
"$E" resume --boot-timeout "$BOOT_TIMEOUT" "$id" >/dev/null 2>"$TMP/vr.err"
rc2=$?
check "vm: parked and resumed while both run; the cut exec --keep says how to attach" \
	"exits $rc1 $rc2 $krc; $(show "$TMP/vp.err" "$TMP/vr.err" "$TMP/vk.err")" \
	ev '[ "$rc1$rc2$krc" = 00125 ] && grep -q "process $kept keeps running (emberctl attach $id $kept)" "$TMP/vk.err"'
"$E" ps "$id" >"$TMP/vps2.out" 2>&1
check "vm: after the resume ps lists both" "$(show "$TMP/vps2.out")" \
	ev 'grep -qE "^$pid +(running|exited 0) " "$TMP/vps2.out" && grep -qE "^$kept +(running|exited 0) " "$TMP/vps2.out"'
timeout 120 "$E" attach "$id" "$pid" >"$TMP/va.out" 2>"$TMP/va.err"
rc=$?
check "vm: attach after the resume prints done and exits 0" \
	"exit $rc; $(show "$TMP/va.out" "$TMP/va.err")" \
	ev '[ $rc = 0 ] && [ "$(cat "$TMP/va.out")" = done ]'
timeout 120 "$E" attach "$id" "$kept" >"$TMP/vk2.out" 2>"$TMP/vk2.err"
rc=$?
check "vm: attach to the cut exec --keep prints kept and exits 0" \
	"exit $rc; $(show "$TMP/vk2.out" "$TMP/vk2.err")" \
	ev '[ $rc = 0 ] && [ "$(cat "$TMP/vk2.out")" = kept ]'
"$E" attach "$id" 4000000 >/dev/null 2>"$TMP/vu.err"
rc=$?
check "vm: attach to an unknown pid: 125, no such process" "exit $rc; $(show "$TMP/vu.err")" \
	ev '[ $rc = 125 ] && grep -q "no process 4000000 kept by the agent" "$TMP/vu.err"'
"$E" kill "$id" >/dev/null 2>&1
