#!/usr/bin/env bash
# Templates, restores and parking with real sandboxes (emberctl on ember):
# one template is built (a boot, ~10-20 s where guest kernel mode is
# emulated) and shared by every check.  Restored sandboxes answer exec,
# keep their files to themselves and draw different random numbers; a
# guest counting in memory and appending synced lines to a file is parked,
# every ember of this test is killed (kill -9), and resumed: the count
# goes on, no synced line is lost, the agent answers; 20 sandboxes are
# restored from the template at once; a parked sandbox is listed and
# killed; the template cannot be removed while in use.  Every sandbox and
# the template are removed at the end, and no process of this test is
# left.  The sandboxes' state lives under $TMP/state.
set -u
cd "$(dirname "$0")/../.."
. tests/lib.sh

: "${EMBERCTL:=build/emberctl-asan}"
BOOT_TIMEOUT=${BOOT_TIMEOUT:-600}
# Sandboxes restored at once: 20, or 5 per host core where that is fewer.
# On a 2-core PVM host, 6 or more started at once came up none (every
# vCPU busy in the host's instruction emulator, no guest making progress)
# until the start gate (api/sandbox/start_gate.h): now 10 at once are up
# in about 6 s there.
PARALLEL=${PARALLEL:-$(n=$(($(nproc) * 5)); echo $((n < 20 ? n : 20)))}
export EMBER_STATE_DIR=$TMP/state
export EMBER_SUPERVISOR_LOG=$TMP/supervisor.log
E=$EMBERCTL
TPL=snaptest

need_kvm "templates and parking"
if [ ! -x "$E" ] || [ ! -x "$EMBER" ]; then
	not_ok "snapshot: $E and $EMBER are built" "make all asan"
	exit 0
fi
if grep -q "Snapshots are not supported by ember yet" "$EMBER"; then
	echo "ok - # SKIP $EMBER has no snapshots yet: templates and parking"
	exit 0
fi
export EMBER_BIN=$EMBER EMBER_KERNEL=$GUEST/vmlinux EMBER_ROOTFS=$GUEST/rootfs.ext4

cleanup() {
	local p
	for p in $(state_dir_procs); do kill -9 "$p" 2>/dev/null; done
	rm -rf "$TMP"
}
trap cleanup EXIT

info_of() { sed -n "s/^$2=//p" "$EMBER_STATE_DIR/$1/info"; }
alive() {
	[ -n "$1" ] && [ "$1" != 0 ] && [ -r "/proc/$1/stat" ] &&
		[ "$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -c1)" != Z ]
}
sandboxes() { ls "$EMBER_STATE_DIR" 2>/dev/null | grep -cE '^[0-9a-f]{12}$'; }
no_sanitizer_report() { ! grep -qE 'AddressSanitizer|runtime error|LeakSanitizer' "$@"; }
show() { for f in "$@"; do echo "#   $f:"; sed 's/^/#     /' "$f" | tail -15; done; }
ev() { eval "$*"; }
now_ms() { echo $(($(date +%s%N) / 1000000)); }
# x ID CMD...: exec in sandbox ID, stderr to $TMP/x.err.
x() {
	local id=$1
	shift
	"$E" exec "$id" -- "$@" 2>>"$TMP/x.err"
}

# ---- the template ------------------------------------------------------
t0=$(now_ms)
timeout "$BOOT_TIMEOUT" "$E" template build "$TPL" --no-interp --boot-timeout "$BOOT_TIMEOUT" \
	--setup 'echo templated >/root/tmpl' --setup 'mkdir -p /root/work' \
	>"$TMP/build.out" 2>"$TMP/build.err"
rc=$?
check "template build: a booted sandbox with two setup commands, snapshotted ($(($(now_ms) - t0)) ms)" \
	"exit $rc; $(show "$TMP/build.out" "$TMP/build.err")" \
	ev '[ $rc = 0 ] && [ "$(cat "$TMP/build.out")" = "$TPL" ] && [ "$(sandboxes)" = 0 ]'
if [ $rc != 0 ]; then
	show "$TMP/supervisor.log"
	exit 0
fi
"$E" template ls >"$TMP/tls.out" 2>&1
check "template ls lists it: 256 MiB, 1 vCPU, its size" "$(show "$TMP/tls.out")" \
	grep -qE "^$TPL +256M +1 +[0-9.]+[MG] " "$TMP/tls.out"

# ---- restored sandboxes --------------------------------------------------
t0=$(now_ms)
A=$("$E" run --template "$TPL" 2>"$TMP/ra.err")
rc=$?
took=$(($(now_ms) - t0))
out=$(x "$A" cat /root/tmpl)
check "run --template: ready in $took ms, exec answers, the setup's file is there" \
	"exit $rc; got: $out; $(show "$TMP/ra.err" "$TMP/x.err")" \
	ev '[ $rc = 0 ] && [ "$out" = templated ]'
B=$("$E" run --template "$TPL" 2>"$TMP/rb.err")
x "$A" sh -c 'echo a >/root/work/a-only; sync'
x "$B" sh -c 'echo b >/root/work/b-only; sync'
sa=$(x "$A" sh -c 'ls /root/work' | tr '\n' ' ')
sb=$(x "$B" sh -c 'ls /root/work' | tr '\n' ' ')
check "two sandboxes from one template do not see each other's files" \
	"A sees: $sa; B sees: $sb; $(show "$TMP/rb.err")" \
	ev '[ "$sa" = "a-only " ] && [ "$sb" = "b-only " ]'
ra=$(x "$A" sh -c 'head -c 32 /dev/urandom | od -An -tx1 | tr -d " \n"')
rb=$(x "$B" sh -c 'head -c 32 /dev/urandom | od -An -tx1 | tr -d " \n"')
check "... and read different bytes from /dev/urandom" "A: $ra; B: $rb" \
	ev '[ ${#ra} = 64 ] && [ ${#rb} = 64 ] && [ "$ra" != "$rb" ]'
ga=$(x "$A" date +%s)
check "... and their clocks are the host's (within 5 s), not the template's" \
	"guest $ga, host $(date +%s)" \
	ev '[ -n "$ga" ] && [ $((ga - $(date +%s))) -le 5 ] && [ $(($(date +%s) - ga)) -le 5 ]'
"$E" template rm "$TPL" >/dev/null 2>"$TMP/trm.err"
rc=$?
check "template rm refuses while a sandbox uses it" "exit $rc; $(show "$TMP/trm.err")" \
	ev '[ $rc = 1 ] && grep -q "template $TPL is in use by 2 sandboxes" "$TMP/trm.err" && [ -d "$EMBER_STATE_DIR/templates/$TPL" ]'

# ---- parked, every ember killed, resumed ---------------------------------
# A loop in its own session (the agent ends an exec's process group with
# the connection): i counts in the shell's memory; each line is synced.
cat >"$TMP/loop.sh" <<'EOF'
i=0
while :; do
	i=$((i + 1))
	echo $i >/root/count
	echo "line $i" >>/root/lines
	sync
	sleep 0.05
done
EOF
"$E" cp "$TMP/loop.sh" "$A:/root/loop.sh" 2>>"$TMP/x.err"
x "$A" sh -c 'setsid sh /root/loop.sh </dev/null >/dev/null 2>&1 &'
# The loop has counted a few times (slow when the host is busy).
for i in $(seq 40); do
	c1=$(x "$A" cat /root/count 2>/dev/null)
	[ -n "$c1" ] && [ "$c1" -ge 2 ] && break
	sleep 0.5
done
t0=$(now_ms)
"$E" pause --to-disk "$A" >"$TMP/pk.out" 2>"$TMP/pk.err"
rc=$?
took=$(($(now_ms) - t0))
n1=$(cat "$TMP/pk.out" 2>/dev/null)
check "pause --to-disk parks it in $took ms: a snapshot beside its disk, no ember left" \
	"exit $rc; count before $c1; $(show "$TMP/pk.err"; ls -la "$EMBER_STATE_DIR/$A")" \
	ev '[ $rc = 0 ] && [ "$n1" = "$A" ] && [ -n "$c1" ] && [ -f "$EMBER_STATE_DIR/$A/snap-1.state" ] && [ -f "$EMBER_STATE_DIR/$A/rootfs.ext4" ] && ! pgrep -f "$EMBER_STATE_DIR/$A/" >/dev/null'
"$E" ls >"$TMP/ls.out" 2>&1
check "ls shows it parked" "$(show "$TMP/ls.out")" grep -qE "^$A +- +256M +1 +parked .* $TPL$" "$TMP/ls.out"
# Every ember of this test, and the supervisors: as after a host crash.
for p in $(state_dir_procs); do kill -9 "$p" 2>/dev/null; done
sleep 1
"$E" ls >"$TMP/ls2.out" 2>&1
check "every ember and supervisor killed (kill -9): the parked one stays, B is cleaned up" \
	"$(show "$TMP/ls2.out")" \
	ev 'grep -qE "^$A .* parked " "$TMP/ls2.out" && ! grep -q "^$B " "$TMP/ls2.out" && [ -z "$(pgrep -f "$EMBER_STATE_DIR")" ]'
t0=$(now_ms)
"$E" resume "$A" >"$TMP/rs.out" 2>"$TMP/rs.err"
rc=$?
took=$(($(now_ms) - t0))
sleep 1
c2=$(x "$A" cat /root/count)
lines=$(x "$A" cat /root/lines)
n=$(echo "$lines" | wc -l)
want=$(seq 1 "$n" | sed 's/^/line /')
check "resume: the agent answers (resumed in $took ms)" \
	"exit $rc; $(show "$TMP/rs.err" "$TMP/x.err")" \
	ev '[ $rc = 0 ] && [ "$(cat "$TMP/rs.out")" = "$A" ] && [ -n "$c2" ]'
check "... the count went on from memory ($c1 before the park, $c2 after)" "" \
	ev '[ -n "$c2" ] && [ "$c2" -gt "$c1" ]'
check "... every synced line is there, once, in order (lines 1 to $n)" \
	"$(echo "$lines" | head -3) ... $(echo "$lines" | tail -3)" \
	ev '[ "$n" -ge $((c2 - 1)) ] && [ "$lines" = "$want" ]'
"$E" ls >"$TMP/ls3.out" 2>&1
check "... ls shows it running again" "$(show "$TMP/ls3.out")" \
	grep -qE "^$A +[0-9]+ +256M +1 +running " "$TMP/ls3.out"
# A second round on the restored VM: parked while an exec streams data
# over vsock (the stream ends with the old process; a Full snapshot of a
# restored VM), restored again: it changed and carries on, and new vsock
# connections work.
x "$A" sh -c 'echo second >/root/second; sync'
timeout 60 "$E" exec "$A" -- sh -c 'while :; do head -c 1048576 /dev/zero; done' \
	>/dev/null 2>"$TMP/flow.err" &
flow=$!
sleep 1
"$E" pause --to-disk "$A" >/dev/null 2>"$TMP/pk2.err"
rc=$?
wait "$flow" 2>/dev/null
"$E" resume "$A" >/dev/null 2>"$TMP/rs2.err"
rc2=$?
c3=$(x "$A" cat /root/count)
sec=$(x "$A" cat /root/second)
hello=$(x "$A" echo hello)
check "parked again while data flowed over vsock, resumed: new connections work, its change is there, the count goes on ($c2 -> $c3)" \
	"exits $rc $rc2; $(show "$TMP/pk2.err" "$TMP/rs2.err" "$TMP/x.err")" \
	ev '[ $rc = 0 ] && [ $rc2 = 0 ] && [ "$sec" = second ] && [ "$hello" = hello ] && [ -n "$c3" ] && [ "$c3" -gt "$c2" ]'
"$E" pause --to-disk "$A" >/dev/null 2>"$TMP/pk2.err"
rc=$?
"$E" ls >"$TMP/ls4.out" 2>&1
"$E" kill "$A" >/dev/null 2>"$TMP/kp.err"
rc2=$?
check "parked again: in ls; kill removes it and everything it had" \
	"exits $rc $rc2; $(show "$TMP/pk2.err" "$TMP/ls4.out" "$TMP/kp.err")" \
	ev '[ $rc = 0 ] && [ $rc2 = 0 ] && grep -qE "^$A .* parked " "$TMP/ls4.out" && [ ! -e "$EMBER_STATE_DIR/$A" ]'

# ---- many at once ----------------------------------------------------------
t0=$(now_ms)
for i in $(seq "$PARALLEL"); do
	( timeout "$BOOT_TIMEOUT" "$E" run --template "$TPL" >"$TMP/p$i.id" 2>"$TMP/p$i.err"
	  echo $? >"$TMP/p$i.rc" ) &
done
wait
took=$(($(now_ms) - t0))
ids=$(cat "$TMP"/p*.id | sort -u)
fails=$(cat "$TMP"/p*.rc | grep -vcx 0)
check "$PARALLEL sandboxes from one template at once: all up in $took ms" \
	"$fails failed; $(for f in "$TMP"/p*.err; do [ -s "$f" ] && show "$f"; done | head -30)" \
	ev '[ "$fails" = 0 ] && [ "$(echo "$ids" | grep -cE "^[0-9a-f]{12}$")" = "$PARALLEL" ]'
for id in $ids; do
	( [ "$("$E" exec "$id" -- echo "hi-$id" 2>"$TMP/e-$id.err")" = "hi-$id" ] &&
		echo ok >"$TMP/e-$id.ok" ) &
done
wait
oks=$(ls "$TMP"/e-*.ok 2>/dev/null | wc -l)
check "... every one of them answers exec" \
	"$oks of $PARALLEL; $(for f in "$TMP"/e-*.err; do [ -s "$f" ] && show "$f"; done | head -30)" \
	[ "$oks" = "$PARALLEL" ]
"$E" kill $ids >/dev/null 2>"$TMP/kall.err"
rc=$?
check "... and kill ends them all, leaving nothing" "exit $rc; $(show "$TMP/kall.err")" \
	ev '[ $rc = 0 ] && [ "$(sandboxes)" = 0 ] && [ -z "$(pgrep -f "$EMBER_STATE_DIR")" ]'

# ---- the end -----------------------------------------------------------
"$E" template rm "$TPL" >/dev/null 2>"$TMP/trm2.err"
rc=$?
check "unused, the template is removed; nothing is left" \
	"exit $rc; $(show "$TMP/trm2.err"; ls -la "$EMBER_STATE_DIR" "$EMBER_STATE_DIR/templates")" \
	ev '[ $rc = 0 ] && [ -z "$(ls -A "$EMBER_STATE_DIR/templates")" ] && [ "$(sandboxes)" = 0 ] && [ -z "$(state_dir_procs)" ]'
touch "$TMP/supervisor.log"
check "no sanitizer report (emberctl, supervisors)" "$(show "$TMP/supervisor.log")" \
	no_sanitizer_report "$TMP"/*.err "$TMP/supervisor.log"
