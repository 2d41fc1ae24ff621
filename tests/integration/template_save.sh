#!/usr/bin/env bash
# `emberctl template save ID NAME` (template__from_sandbox(), E2B's fork
# and createSnapshot) with real sandboxes: a sandbox restored from a
# template writes a file on its disk and one in its memory (/tmp is a
# tmpfs), is saved as a new template, and runs on; a sandbox restored
# from the new template finds both files and nothing the source wrote
# after the save; the new template is listed, read-only, and can be
# removed once its sandbox is killed.  A paused sandbox is saved and stays
# paused; a parked one, an unknown id, an existing name and a bad name are
# refused, leaving nothing.
#
# The source template: $SAVE_FROM (default) in $EMBER_STATE_DIR (else
# tests/run.sh's $SHARED_STATE_DIR) when that is set and holds it (shared: only what this test makes is removed),
# else one built here under $TMP/state (a boot: ~10-20 s where guest
# kernel mode is emulated).
set -u
cd "$(dirname "$0")/../.."
. tests/lib.sh

: "${EMBERCTL:=build/emberctl-asan}"
: "${SAVE_FROM:=default}"
BOOT_TIMEOUT=${BOOT_TIMEOUT:-600}
E=$EMBERCTL
NAME=tsave-$$
NAME2=tsave-$$-paused
IDS=() # every sandbox this test made, killed at the end

need_kvm "template save"
if [ ! -x "$E" ] || [ ! -x "$EMBER" ]; then
	not_ok "template save: $E and $EMBER are built" "make all asan"
	exit 0
fi
export EMBER_BIN=$EMBER EMBER_KERNEL=$GUEST/vmlinux EMBER_ROOTFS=$GUEST/rootfs.ext4
export EMBER_SUPERVISOR_LOG=$TMP/supervisor.log
OWN_STATE=0
export EMBER_STATE_DIR=${EMBER_STATE_DIR:-${SHARED_STATE_DIR:-}}
if [ -z "${EMBER_STATE_DIR:-}" ] ||
	[ ! -d "$EMBER_STATE_DIR/templates/$SAVE_FROM" ]; then
	export EMBER_STATE_DIR=$TMP/state
	OWN_STATE=1
fi
T=$EMBER_STATE_DIR/templates

cleanup() {
	local id
	for id in "${IDS[@]}"; do "$E" kill "$id" >/dev/null 2>&1; done
	"$E" template rm "$NAME" "$NAME2" >/dev/null 2>&1
	[ "$OWN_STATE" = 0 ] || "$E" template rm --force "$SAVE_FROM" >/dev/null 2>&1
	rm -rf "$TMP"
}
trap cleanup EXIT

show() { for f in "$@"; do echo "#   $f:"; sed 's/^/#     /' "$f" | tail -15; done; }
ev() { eval "$*"; }
now_ms() { echo $(($(date +%s%N) / 1000000)); }
no_sanitizer_report() { ! grep -qE 'AddressSanitizer|runtime error|LeakSanitizer' "$@"; }
state_of() { "$E" ls 2>/dev/null | awk -v id="$1" '$1 == id { print $5 }'; }
no_leftovers() { [ -z "$(ls -A "$T" | grep -E "^\.$NAME|^\.$NAME2|^tsave-$$-x")" ]; }
# same_info A B: templates A and B record the same machine and origin.
same_info() {
	local k
	for k in mem vcpus kernel rootfs interp net; do
		[ "$(grep "^$k=" "$T/$1/info")" = "$(grep "^$k=" "$T/$2/info")" ] ||
			return 1
	done
}
# run TEMPLATE: a sandbox restored from it; its id in $id (and in IDS).
run() {
	id=$("$E" run --template "$1" --ttl 600 2>>"$TMP/err")
	[ -n "$id" ] && IDS+=("$id")
}
x() {
	local sb=$1
	shift
	"$E" exec "$sb" -- "$@" 2>>"$TMP/err"
}

if [ "$OWN_STATE" = 1 ]; then
	timeout "$BOOT_TIMEOUT" "$E" template build "$SAVE_FROM" --no-interp --no-net \
		--boot-timeout "$BOOT_TIMEOUT" >/dev/null 2>"$TMP/build.err"
	rc=$?
	check "template save: the source template $SAVE_FROM is built" \
		"exit $rc; $(show "$TMP/build.err")" [ $rc = 0 ]
	[ $rc = 0 ] || exit 0
fi

# ---- the source sandbox, saved ------------------------------------------
run "$SAVE_FROM"
src=$id
token=$(head -c 8 /dev/urandom | od -An -tx1 | tr -d ' \n')
x "$src" sh -c "echo disk-$token >/root/saved.txt && echo mem-$token >/tmp/saved.txt"
rc=$?
check "template save: a sandbox from $SAVE_FROM writes a file on disk and one in memory" \
	"exit $rc; $(show "$TMP/err")" ev '[ -n "$src" ] && [ $rc = 0 ]'

t0=$(now_ms)
out=$("$E" template save "$src" "$NAME" 2>"$TMP/save.err")
rc=$?
save_ms=$(($(now_ms) - t0))
echo "# template save took $save_ms ms"
check "template save: exits 0 and prints the name" "exit $rc, got '$out'; $(show "$TMP/save.err")" \
	ev '[ $rc = 0 ] && [ "$out" = "$NAME" ]'
check "template save: a complete, read-only template, nothing else left" \
	"$(ls -la "$T" "$T/$NAME" 2>&1)" \
	ev '[ "$(stat -c %a "$T/$NAME/rootfs.ext4" "$T/$NAME/memory" "$T/$NAME/snapshot.state" "$T/$NAME/info" | sort -u)" = 400 ] && [ ! -e "$T/$NAME/disk.overlay" ] && no_leftovers'
check "template save: its info: the sandbox's machine, its template's kernel" \
	"$(cat "$T/$NAME/info" "$T/$SAVE_FROM/info" 2>&1)" \
	same_info "$NAME" "$SAVE_FROM"
"$E" template ls >"$TMP/tl.out" 2>&1
check "template save: template ls lists it, unused" "$(show "$TMP/tl.out")" \
	grep -qE "^$NAME +[0-9]+M +[0-9]+ .* 0$" "$TMP/tl.out"

out=$(x "$src" sh -c 'cat /root/saved.txt /tmp/saved.txt; echo after >/root/after.txt')
check "template save: the source runs on, execs, keeps its files" \
	"state $(state_of "$src"), got '$out'; $(show "$TMP/err")" \
	ev '[ "$(state_of "$src")" = running ] && [ "$out" = "disk-$token
mem-$token" ]'

# ---- a sandbox from the new template ------------------------------------
run "$NAME"
new=$id
out=$(x "$new" sh -c 'cat /root/saved.txt /tmp/saved.txt; ls /root')
check "template save: a sandbox from it has the disk and memory files, not what came after" \
	"id '$new', got '$out'; $(show "$TMP/err")" \
	ev '[ -n "$new" ] && [ "$out" = "disk-$token
mem-$token
saved.txt" ]'
x "$new" sh -c 'echo new >/root/new.txt' &&
	out=$(x "$src" ls /root)
check "template save: the two sandboxes' disks are their own" "got '$out'" \
	[ "$out" = "after.txt
saved.txt" ]

"$E" template rm "$NAME" >/dev/null 2>"$TMP/rm.err"
rc=$?
check "template save: template rm of it is refused while its sandbox runs" \
	"exit $rc; $(show "$TMP/rm.err")" \
	ev '[ $rc = 1 ] && grep -q "in use by 1 sandbox ($new)" "$TMP/rm.err" && [ -d "$T/$NAME" ]'
"$E" kill "$new" >/dev/null 2>&1
out=$("$E" template rm "$NAME" 2>"$TMP/rm.err")
rc=$?
check "template save: template rm works once it is killed" "exit $rc; $(show "$TMP/rm.err")" \
	ev '[ $rc = 0 ] && [ "$out" = "$NAME" ] && [ ! -e "$T/$NAME" ]'

# ---- a paused sandbox: saved, and left paused ---------------------------
"$E" pause "$src" >/dev/null 2>>"$TMP/err"
out=$("$E" template save "$src" "$NAME2" 2>"$TMP/save2.err")
rc=$?
check "template save: a paused sandbox is saved and stays paused" \
	"exit $rc, state $(state_of "$src"); $(show "$TMP/save2.err")" \
	ev '[ $rc = 0 ] && [ "$out" = "$NAME2" ] && [ "$(state_of "$src")" = paused ]'
"$E" resume "$src" >/dev/null 2>>"$TMP/err"
run "$NAME2"
out=$(x "$id" cat /root/after.txt)
check "template save: ... and a sandbox from that template runs" "got '$out'; $(show "$TMP/err")" \
	[ "$out" = after ]
"$E" kill "$id" >/dev/null 2>&1
"$E" template rm "$NAME2" >/dev/null 2>>"$TMP/err"

# ---- refusals ------------------------------------------------------------
"$E" template save ffffffffffff "tsave-$$-x1" 2>"$TMP/r1.err"
rc1=$?
"$E" template save "$src" "$SAVE_FROM" 2>"$TMP/r2.err"
rc2=$?
"$E" template save "$src" 'Bad!' 2>"$TMP/r3.err"
rc3=$?
"$E" template save "$src" 2>/dev/null
rc4=$?
check "template save: an unknown id, an existing name (1), a bad name, no name (2)" \
	"exits $rc1 $rc2 $rc3 $rc4; $(show "$TMP/r1.err" "$TMP/r2.err" "$TMP/r3.err")" \
	ev '[ "$rc1$rc2$rc3$rc4" = 1122 ] && grep -q "no sandbox ffffffffffff" "$TMP/r1.err" && grep -q "template $SAVE_FROM exists" "$TMP/r2.err" && no_leftovers'
"$E" pause --to-disk "$src" >/dev/null 2>>"$TMP/err"
"$E" template save "$src" "tsave-$$-x2" 2>"$TMP/r5.err"
rc=$?
check "template save: a parked sandbox is refused, and stays parked" \
	"exit $rc, state $(state_of "$src"); $(show "$TMP/r5.err")" \
	ev '[ $rc = 1 ] && grep -q "is parked on disk" "$TMP/r5.err" && [ "$(state_of "$src")" = parked ] && no_leftovers'
"$E" resume "$src" >/dev/null 2>>"$TMP/err"
out=$(x "$src" cat /root/saved.txt)
check "template save: the source resumes and answers" "got '$out'; $(show "$TMP/err")" \
	[ "$out" = "disk-$token" ]

check "template save: no sanitizer report" "$(show "$TMP/err" "$TMP"/*.err)" \
	no_sanitizer_report "$TMP"/*.err
