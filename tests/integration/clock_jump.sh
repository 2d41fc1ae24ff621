#!/usr/bin/env bash
# A clock that jumps (issue 26, item 3): a sandbox's TTL counts on
# CLOCK_MONOTONIC, so the host's wall clock set an hour forward, then an
# hour back (date -s) neither ends a sandbox early nor keeps it alive: ls
# shows what is left, a pause and resume under a jumped clock and a renewal
# (emberctl ttl) keep to the TTL, and the sandbox ends when its TTL is up,
# as measured on /proc/uptime.  Part 1 uses the stand-in for ember
# (fake_ember.py); part 2 real sandboxes from a template: one restored
# after the clock jumped, and one parked and resumed across a jump back,
# each with its guest's wall clock within 5 s of the host's.
# It sets the machine's wall clock, so it runs where that harms nothing:
# in the KVM box (EMBER_IN_KVMBOX=1), or where EMBER_TEST_SET_CLOCK=1 says
# so; elsewhere one SKIP line says why.  The clock is set right again (from
# /proc/uptime) at the end, whatever happened.  Nothing is left behind.
set -u
cd "$(dirname "$0")/../.."
. tests/lib.sh

: "${EMBERCTL:=build/emberctl-asan}"
BOOT_TIMEOUT=${BOOT_TIMEOUT:-600}
export EMBER_STATE_DIR=$TMP/state
export EMBER_SUPERVISOR_LOG=$TMP/supervisor.log
E=$EMBERCTL

if [ "${EMBER_IN_KVMBOX:-}" != 1 ] && [ "${EMBER_TEST_SET_CLOCK:-}" != 1 ]; then
	echo "ok - # SKIP clock_jump: it sets the wall clock: only in the KVM box, or with EMBER_TEST_SET_CLOCK=1"
	exit 0
fi

up_ms() { awk '{ printf "%d\n", $1 * 1000 }' /proc/uptime; }
base_wall=$(date +%s)
base_up=$(up_ms)
# jump S: the wall clock S seconds on (or back) from where it is.
jump() { date -s "@$(($(date +%s) + $1))" >/dev/null; }
clock_right() { date -s "@$((base_wall + ($(up_ms) - base_up) / 1000))" >/dev/null; }
state() { "$E" ls 2>/dev/null | awk -v id="$1" '$1 == id { print $5 }'; }
# ttl_left ID: ls's TTL column in seconds (under a minute: "12s").
ttl_left() { "$E" ls 2>/dev/null | awk -v id="$1" '$1 == id { print $7 }' | sed -n 's/^\([0-9]*\)s$/\1/p'; }
# gone_within ID S: 0 once ID is gone (up to S s, by /proc/uptime).
gone_within() {
	local end=$(($(up_ms) + $2 * 1000))
	while [ "$(up_ms)" -le "$end" ]; do
		[ -d "$EMBER_STATE_DIR/$1" ] || return 0
		sleep 0.1
	done
	return 1
}
between() { [ -n "$1" ] && [ "$1" -ge "$2" ] && [ "$1" -le "$3" ]; }
no_sanitizer_report() { ! grep -qE 'AddressSanitizer|runtime error|LeakSanitizer' "$@"; }
show() { for f in "$@"; do echo "#   $f:"; sed 's/^/#     /' "$f" | tail -15; done; }
ev() { eval "$*"; }
cleanup() {
	local p
	clock_right
	for p in $(state_dir_procs); do kill -9 "$p" 2>/dev/null; done
	rm -rf "$TMP"
}
trap cleanup EXIT

if [ ! -x "$E" ]; then
	not_ok "clock_jump: $E is built" "make asan"
	exit 0
fi

# ---- part 1: the stand-in for ember --------------------------------------
export EMBER_BIN=$PWD/tests/integration/fake_ember.py
export EMBER_KERNEL=$TMP/vmlinux EMBER_ROOTFS=$TMP/root.img
export FAKE_SNAP_LOG=$TMP/snap.log FAKE_INIT_REPORT=$TMP/init.report
echo kernel >"$EMBER_KERNEL"
truncate -s 16M "$EMBER_ROOTFS"

id=$("$E" run --boot --ttl 16 2>"$TMP/r.err")
t0=$(up_ms)
jump 3600
sleep 1
left1=$(ttl_left "$id")
check "clock_jump: fake: the wall clock 1 h on: the sandbox runs, ls shows its TTL left (10-16 s of 16)" \
	"state $(state "$id"), TTL left '$left1'; $(show "$TMP/r.err")" \
	ev '[ -n "$id" ] && [ "$(state "$id")" = running ] && between "$left1" 10 16'

# Paused an hour ahead, resumed an hour behind (the clock set 2 h back).
"$E" pause "$id" >/dev/null 2>"$TMP/p.err"
rc1=$?
p0=$(up_ms)
sleep 1
jump -7200
"$E" resume "$id" >/dev/null 2>"$TMP/p.err"
rc2=$?
paused_ms=$(($(up_ms) - p0))
sleep 1
left2=$(ttl_left "$id")
check "clock_jump: fake: paused 1 h ahead, resumed 1 h behind: running, its TTL where it was (8-15 s)" \
	"pause $rc1, resume $rc2, state $(state "$id"), TTL left '$left2'; $(show "$TMP/p.err")" \
	ev '[ "$rc1$rc2" = 00 ] && [ "$(state "$id")" = running ] && between "$left2" 8 15'

gone_within "$id" 30
rc=$?
ran=$(($(up_ms) - t0 - paused_ms))
check "clock_jump: fake: it ends when its 16 s of TTL are up (15-21 s of running), not an hour later" \
	"gone: $rc, ran $ran ms; $(show "$EMBER_SUPERVISOR_LOG")" \
	ev '[ $rc = 0 ] && between "$ran" 15000 21000'
clock_right

# A renewal under a clock an hour ahead: 4 s from now, not from an hour on.
id=$("$E" run --boot --ttl 60 2>"$TMP/r2.err")
jump 3600
"$E" ttl "$id" 4 >/dev/null 2>"$TMP/t.err"
rc=$?
t1=$(up_ms)
gone_within "$id" 20
rc2=$?
took=$(($(up_ms) - t1))
check "clock_jump: fake: emberctl ttl ID 4 with the clock 1 h ahead: it ends 4 s on (3-8 s)" \
	"ttl $rc, gone $rc2 after $took ms; $(show "$TMP/t.err" "$EMBER_SUPERVISOR_LOG")" \
	ev '[ -n "$id" ] && [ $rc = 0 ] && [ $rc2 = 0 ] && between "$took" 3000 8000'

# An hour back: a TTL of 6 s still ends after 6 s.
id=$("$E" run --boot --ttl 6 2>"$TMP/r3.err")
t1=$(up_ms)
jump -7200
gone_within "$id" 20
rc=$?
took=$(($(up_ms) - t1))
check "clock_jump: fake: the clock 1 h back: a TTL of 6 s ends after 5-10 s" \
	"gone $rc after $took ms; $(show "$TMP/r3.err")" \
	ev '[ -n "$id" ] && [ $rc = 0 ] && between "$took" 5000 10000'
clock_right
check "clock_jump: fake: nothing left in the state directory" "$(ls "$EMBER_STATE_DIR")" \
	ev '[ -z "$(ls "$EMBER_STATE_DIR" | grep -E "^[0-9a-f]{12}$")" ] && [ -z "$(state_dir_procs)" ]'
unset EMBER_BIN EMBER_KERNEL EMBER_ROOTFS FAKE_SNAP_LOG FAKE_INIT_REPORT
rm -rf "$EMBER_STATE_DIR"

# ---- part 2: real sandboxes ----------------------------------------------
need_kvm "clock jumps with real sandboxes"
if [ ! -x "$EMBER" ]; then
	not_ok "clock_jump: $EMBER is built" "make all asan"
	exit 0
fi
export EMBER_BIN=$EMBER EMBER_KERNEL=$GUEST/vmlinux EMBER_ROOTFS=$GUEST/rootfs.ext4
TPL=clockjump
timeout "$BOOT_TIMEOUT" "$E" template build "$TPL" --no-interp --no-net \
	--boot-timeout "$BOOT_TIMEOUT" >"$TMP/build.out" 2>"$TMP/build.err"
rc=$?
check "clock_jump: the template $TPL is built" "exit $rc; $(show "$TMP/build.out" "$TMP/build.err")" [ $rc = 0 ]
[ $rc = 0 ] || exit 0

# skew ID: the guest's wall clock less the host's, s ("" if exec failed).
skew() {
	local g
	g=$("$E" exec "$1" -- date +%s 2>>"$TMP/x.err") || return 0
	echo $((g - $(date +%s)))
}
abs() { echo "${1#-}"; }

jump 3600
id=$("$E" run --template "$TPL" --ttl 600 2>"$TMP/rr.err")
s1=$(skew "$id")
check "clock_jump: restored after the host's clock went 1 h on: the guest's clock is the host's (within 5 s)" \
	"skew '$s1'; $(show "$TMP/rr.err" "$TMP/x.err")" \
	ev '[ -n "$id" ] && [ -n "$s1" ] && [ "$(abs "$s1")" -le 5 ]'
"$E" pause --to-disk "$id" >/dev/null 2>"$TMP/pk.err"
rc=$?
jump -3600
"$E" resume "$id" >/dev/null 2>>"$TMP/pk.err"
rc2=$?
s2=$(skew "$id")
left=$("$E" ls 2>/dev/null | awk -v id="$id" '$1 == id { print $7 }')
check "clock_jump: parked, the clock set 1 h back, resumed: the guest's clock is the host's (within 5 s), its TTL about 10 min" \
	"park $rc, resume $rc2, skew '$s2', TTL '$left'; $(show "$TMP/pk.err" "$TMP/x.err")" \
	ev '[ "$rc$rc2" = 00 ] && [ -n "$s2" ] && [ "$(abs "$s2")" -le 5 ] && [[ "$left" =~ ^(9m..s|10m00s)$ ]]'
"$E" kill "$id" >/dev/null 2>&1
clock_right
"$E" template rm "$TPL" >/dev/null 2>"$TMP/trm.err"
rc=$?
sleep 0.5
check "clock_jump: every sandbox killed, the template removed, no process left, no sanitizer report" \
	"template rm $rc; $(state_dir_procs); $(show "$EMBER_SUPERVISOR_LOG")" \
	ev '[ $rc = 0 ] && [ -z "$(state_dir_procs)" ] && no_sanitizer_report "$TMP"/*.err "$EMBER_SUPERVISOR_LOG"'
