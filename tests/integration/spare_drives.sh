#!/usr/bin/env bash
# Spare drives (api/sandbox/spare.h): a template built with
# --spare-drives 2 records them, and a sandbox restored from it gets its
# own placeholders (1 MiB: /dev/vdb, /dev/vdc; the root drive vda); an
# ext4 image swapped into spare 0 (emberctl swap-drive, the library's
# sandbox__swap_drive: PATCH /drives/spare0) shows in the guest with its
# new size, is mounted, read and written; the sandbox parked and resumed
# with it swapped in and mounted still reads it; swapped back to its
# placeholder, the host's image holds what the guest wrote (debugfs);
# saved as a template then, the new one has spare drives too.
# ember's own PATCH /drives on its socket (curl) swaps spare 1.  Refused:
# a slot beyond the spares, a file ember cannot use, saving the sandbox
# as a template while a file is swapped in, more spares than ember's
# drives, a restore asking for another number than its template's.  A
# booted sandbox (run --spare-drives 2) has vdb and vdc too.
set -u
cd "$(dirname "$0")/../.."
. tests/lib.sh

: "${EMBERCTL:=build/emberctl-asan}"
BOOT_TIMEOUT=${BOOT_TIMEOUT:-600}
E=$EMBERCTL
TPL=tspare-$$
IDS=() # every sandbox this test made, killed at the end

need_kvm "spare drives"
if [ ! -x "$E" ] || [ ! -x "$EMBER" ]; then
	not_ok "spare drives: $E and $EMBER are built" "make all asan"
	exit 0
fi
for tool in mkfs.ext4 debugfs curl; do
	if ! command -v "$tool" >/dev/null; then
		not_ok "spare drives: $tool is installed" "apt-get install e2fsprogs curl"
		exit 0
	fi
done
export EMBER_BIN=$EMBER EMBER_KERNEL=$GUEST/vmlinux EMBER_ROOTFS=$GUEST/rootfs.ext4
export EMBER_SUPERVISOR_LOG=$TMP/supervisor.log
export EMBER_STATE_DIR=$TMP/state

cleanup() {
	local id
	for id in "${IDS[@]}"; do "$E" kill "$id" >/dev/null 2>&1; done
	"$E" template rm --force "$TPL" "$TPL-saved" >/dev/null 2>&1
	rm -rf "$TMP"
}
trap cleanup EXIT

show() { for f in "$@"; do echo "#   $f:"; sed 's/^/#     /' "$f" | tail -15; done; }
ev() { eval "$*"; }
x() {
	local sb=$1
	shift
	"$E" exec "$sb" -- "$@" 2>>"$TMP/err"
}
# sectors SB DEV: /sys/block/DEV/size in the guest (512-byte sectors).
sectors() { x "$1" cat "/sys/block/$2/size" 2>/dev/null; }
# wait_sectors SB DEV N: until the guest sees DEV with N sectors (10 s).
wait_sectors() {
	x "$1" sh -c "i=0; while [ \"\$(cat /sys/block/$2/size)\" != $3 ]; do
		i=\$((i + 1)); [ \$i -lt 100 ] || exit 1; sleep 0.1; done"
}
no_sanitizer_report() { ! grep -qE 'AddressSanitizer|runtime error|LeakSanitizer' "$@"; }

# ---- the template -----------------------------------------------------------
timeout "$BOOT_TIMEOUT" "$E" template build "$TPL" --spare-drives 2 --no-interp \
	--no-net --boot-timeout "$BOOT_TIMEOUT" >/dev/null 2>"$TMP/build.err"
rc=$?
check "spare drives: template build --spare-drives 2" "exit $rc; $(show "$TMP/build.err")" \
	[ $rc = 0 ]
[ $rc = 0 ] || exit 0
"$E" template info "$TPL" >"$TMP/tinfo" 2>&1
check "spare drives: template info records spare_drives=2" "$(show "$TMP/tinfo")" \
	grep -qx "spare_drives=2" "$TMP/tinfo"

# ---- a sandbox restored from it ---------------------------------------------
id=$("$E" run --template "$TPL" --ttl 900 2>"$TMP/run.err")
[ -n "$id" ] && IDS+=("$id")
S=$id
D=$EMBER_STATE_DIR/$S
check "spare drives: a sandbox from the template, with its own 1 MiB placeholders" \
	"id '$S'; $(show "$TMP/run.err"; ls -ls "$D" 2>&1 | sed 's/^/#   /')" \
	ev '[ -n "$S" ] && [ "$(stat -c %s "$D/spare-0.img" "$D/spare-1.img" | sort -u)" = 1048576 ] && [ ! -e "$D/spare-2.img" ] && grep -qx spare_drives=2 "$D/info"'
# open_spares DIR: how many of DIR's placeholders the sandbox's ember has open.
open_spares() {
	local pid
	pid=$(sed -n 's/^ember=//p' "$1/info")
	ls -l "/proc/$pid/fd" 2>/dev/null | grep -c " $1/spare-[01].img$"
}
n=$(open_spares "$D")
check "spare drives: its ember has its own placeholders open (drive_overrides), not the build's" 	"$n open; $(ls -l /proc/"$(sed -n 's/^ember=//p' "$D/info")"/fd 2>&1 | sed 's/^/#   /')" 	[ "$n" = 2 ]
a=$(sectors "$S" vda)
b=$(sectors "$S" vdb)
c=$(sectors "$S" vdc)
dd=$(sectors "$S" vdd)
check "spare drives: the guest has vda (root), vdb and vdc (2048 sectors), no vdd" \
	"vda '$a' vdb '$b' vdc '$c' vdd '$dd'; $(show "$TMP/err")" \
	ev '[ "${a:-0}" -gt 2048 ] && [ "$b" = 2048 ] && [ "$c" = 2048 ] && [ -z "$dd" ]'

# ---- an image swapped in, used, swapped out --------------------------------
token=$(head -c 8 /dev/urandom | od -An -tx1 | tr -d ' \n')
mkdir -p "$TMP/content"
echo "host-$token" >"$TMP/content/hello"
IMG=$TMP/disk.ext4
mkfs.ext4 -q -F -d "$TMP/content" "$IMG" 16M >"$TMP/mkfs.out" 2>&1
check "spare drives: a 16 MiB ext4 image with a file (mkfs.ext4 -d)" "$(show "$TMP/mkfs.out")" \
	[ "$(stat -c %s "$IMG" 2>/dev/null)" = 16777216 ]

out=$("$E" swap-drive "$S" 0 "$IMG" 2>"$TMP/swap.err")
rc=$?
check "spare drives: swap-drive ID 0 IMAGE" "exit $rc, out '$out'; $(show "$TMP/swap.err")" \
	ev '[ $rc = 0 ] && [ "$out" = "$S" ] && grep -qx spare_swapped=1 "$D/info"'
wait_sectors "$S" vdb 32768
rc=$?
check "spare drives: the guest sees vdb grow to 32768 sectors" \
	"exit $rc; vdb '$(sectors "$S" vdb)'; $(show "$TMP/err")" [ $rc = 0 ]
out=$(x "$S" sh -c "mkdir -p /mnt/c && mount -t ext4 /dev/vdb /mnt/c && cat /mnt/c/hello &&
	echo guest-$token >/mnt/c/f && sync")
rc=$?
check "spare drives: mounted in the guest: the host's file read, one written" \
	"exit $rc, out '$out'; $(show "$TMP/err")" ev '[ $rc = 0 ] && [ "$out" = "host-$token" ]'

"$E" template save "$S" "$TPL-saved" >/dev/null 2>"$TMP/save.err"
rc=$?
check "spare drives: template save refused while a file is swapped in" \
	"exit $rc; $(show "$TMP/save.err")" \
	ev '[ $rc = 1 ] && grep -q "swap it out first" "$TMP/save.err" && [ ! -e "$EMBER_STATE_DIR/templates/$TPL-saved" ]'

# Parked with the image swapped in and mounted: the resume reopens it.
"$E" pause --to-disk "$S" >/dev/null 2>"$TMP/park.err"
rc=$?
"$E" resume --boot-timeout "$BOOT_TIMEOUT" "$S" >/dev/null 2>>"$TMP/park.err"
rc2=$?
out=$(x "$S" sh -c "cat /mnt/c/f && echo again-$token >>/mnt/c/f && umount /mnt/c")
rc3=$?
check "spare drives: parked and resumed with the image in: still mounted, read, written, unmounted" \
	"exit $rc/$rc2/$rc3, out '$out'; $(show "$TMP/park.err" "$TMP/err")" \
	ev '[ $rc = 0 ] && [ $rc2 = 0 ] && [ $rc3 = 0 ] && [ "$out" = "guest-$token" ]'

out=$("$E" swap-drive "$S" 0 2>"$TMP/swap.err")
rc=$?
wait_sectors "$S" vdb 2048
rc2=$?
check "spare drives: swap-drive ID 0: back to the placeholder (2048 sectors)" \
	"exit $rc/$rc2; $(show "$TMP/swap.err" "$TMP/err")" \
	ev '[ $rc = 0 ] && [ $rc2 = 0 ] && grep -qx spare_swapped=0 "$D/info"'
f=$(debugfs -R 'cat /f' "$IMG" 2>/dev/null)
check "spare drives: the host's image holds what the guest wrote (debugfs)" "got '$f'" \
	[ "$f" = "guest-$token"$'\n'"again-$token" ]

# Saved as a template with its placeholders back: the new one has 2 too.
"$E" template save "$S" "$TPL-saved" >/dev/null 2>"$TMP/save.err"
rc=$?
id=$("$E" run --template "$TPL-saved" --ttl 900 2>>"$TMP/save.err")
[ -n "$id" ] && IDS+=("$id")
n=$([ -n "$id" ] && open_spares "$EMBER_STATE_DIR/$id")
b=$([ -n "$id" ] && sectors "$id" vdb)
check "spare drives: template save of it records spare_drives=2; its sandbox has its own placeholders" 	"exit $rc, id '$id', $n open, vdb '$b'; $(show "$TMP/save.err" "$EMBER_STATE_DIR/templates/$TPL-saved/info")" 	ev '[ $rc = 0 ] && grep -qx spare_drives=2 "$EMBER_STATE_DIR/templates/$TPL-saved/info" && [ "$n" = 2 ] && [ "$b" = 2048 ]'
[ -z "$id" ] || "$E" kill "$id" >/dev/null 2>&1

# ember's own API (Firecracker's PATCH /drives) on spare 1.
cp "$IMG" "$TMP/disk2.ext4"
code=$(curl -s -o "$TMP/curl.out" -w '%{http_code}' --unix-socket "$D/api.sock" \
	-X PATCH -H 'Content-Type: application/json' \
	-d "{\"drive_id\":\"spare1\",\"path_on_host\":\"$TMP/disk2.ext4\"}" \
	http://localhost/drives/spare1)
wait_sectors "$S" vdc 32768
rc=$?
out=$(x "$S" sh -c "mount -t ext4 -o ro /dev/vdc /mnt/c && cat /mnt/c/hello; umount /mnt/c")
check "spare drives: PATCH /drives/spare1 on ember's socket (curl): vdc is the image" \
	"HTTP $code, wait $rc, out '$out'; $(show "$TMP/curl.out" "$TMP/err")" \
	ev '[ "$code" = 204 ] && [ $rc = 0 ] && [ "$out" = "host-$token" ]'
"$E" swap-drive "$S" 1 >/dev/null 2>>"$TMP/swap.err"

# ---- refusals -----------------------------------------------------------------
"$E" swap-drive "$S" 2 "$IMG" >/dev/null 2>"$TMP/r1.err"
rc=$?
check "spare drives: slot 2 of 2 refused" "exit $rc; $(show "$TMP/r1.err")" \
	ev '[ $rc = 1 ] && grep -q "no slot 2" "$TMP/r1.err"'
"$E" swap-drive "$S" 0 "$TMP/content" >/dev/null 2>"$TMP/r2.err"
rc=$?
check "spare drives: a directory refused with ember's fault message" \
	"exit $rc; $(show "$TMP/r2.err")" \
	ev '[ $rc = 1 ] && grep -q "ember refused PATCH /drives/spare0" "$TMP/r2.err" && grep -qx spare_swapped=0 "$D/info"'
"$E" run --boot --spare-drives 8 >/dev/null 2>"$TMP/r3.err"
rc=$?
check "spare drives: run --spare-drives 8 refused (at most 7)" \
	"exit $rc; $(show "$TMP/r3.err")" [ $rc = 2 ]
"$E" run --template "$TPL" --spare-drives 1 >/dev/null 2>"$TMP/r4.err"
rc=$?
check "spare drives: a restore asking for 1 of a 2-spare template refused" \
	"exit $rc; $(show "$TMP/r4.err")" \
	ev '[ $rc = 1 ] && grep -q "has 2 spare drives, not 1" "$TMP/r4.err"'

# ---- a booted sandbox --------------------------------------------------------
id=$("$E" run --boot --spare-drives 2 --ttl 900 --boot-timeout "$BOOT_TIMEOUT" \
	2>"$TMP/boot.err")
[ -n "$id" ] && IDS+=("$id")
B=$id
b=$(sectors "$B" vdb)
c=$(sectors "$B" vdc)
dd=$(sectors "$B" vdd)
check "spare drives: a booted sandbox (run --spare-drives 2) has vdb and vdc, no vdd" \
	"id '$B', vdb '$b' vdc '$c' vdd '$dd'; $(show "$TMP/boot.err" "$TMP/err")" \
	ev '[ -n "$B" ] && [ "$b" = 2048 ] && [ "$c" = 2048 ] && [ -z "$dd" ] && grep -qx spare_drives=2 "$EMBER_STATE_DIR/$B/info"'
out=$("$E" swap-drive "$B" 1 "$IMG" 2>"$TMP/swap.err")
rc=$?
wait_sectors "$B" vdc 32768
rc2=$?
"$E" swap-drive "$B" 1 >/dev/null 2>>"$TMP/swap.err"
check "spare drives: swap-drive on the booted sandbox's spare 1 (vdc)" \
	"exit $rc/$rc2; $(show "$TMP/swap.err" "$TMP/err")" ev '[ $rc = 0 ] && [ $rc2 = 0 ]'

for id in "${IDS[@]}"; do "$E" kill "$id" >/dev/null 2>&1; done
IDS=()
check "spare drives: nothing left once killed" "$(ls -A "$EMBER_STATE_DIR")" \
	ev '[ -z "$(ls -A "$EMBER_STATE_DIR" | grep -v "^templates$")" ]'
check "spare drives: no sanitizer report" "$(show "$TMP/supervisor.log")" \
	no_sanitizer_report "$TMP"/*.err "$TMP/supervisor.log"
