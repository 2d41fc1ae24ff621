#!/usr/bin/env bash
# A full disk (issue 26, item 2): the state directory on a small tmpfs (in
# a mount namespace of the test's own, so that nothing outlives it).
#   - A template build that runs out of room: one clear error, nothing of
#     it left (no template, no sandbox directory, no process).
#   - With room for the template and a sandbox from it, the tmpfs then
#     filled up but for 128 KiB: a park (its memory file cannot be
#     written) is refused with one clear error and the sandbox runs on,
#     whole (no snapshot file left, its files read back); a cp of 64 MiB
#     into the guest, whose disk overlay can no longer grow (ember answers
#     the guest's writes VIRTIO_BLK_S_IOERR), ends with one clear error and
#     ember runs on.  (The guest's agent may not answer while the host's
#     disk stays full: the guest's writeback of that file keeps failing.)
#   - The room given back: the sandbox answers again, the park works, the
#     resume brings the earlier file back whole.
# Nothing is left behind.
set -u
cd "$(dirname "$0")/../.."
if [ -z "${ENOSPC_NS:-}" ]; then
	if [ "$(id -u)" != 0 ] || ! unshare -m true 2>/dev/null; then
		echo "not ok - enospc: needs root and unshare -m (a tmpfs in a mount namespace of its own)"
		exit 0
	fi
	ENOSPC_NS=1 exec unshare -m --propagation private bash "$0" "$@"
fi
. tests/lib.sh

: "${EMBERCTL:=build/emberctl-asan}"
BOOT_TIMEOUT=${BOOT_TIMEOUT:-600}
S=$TMP/state
export EMBER_STATE_DIR=$S
export EMBER_SUPERVISOR_LOG=$TMP/supervisor.log
E=$EMBERCTL
show() { for f in "$@"; do echo "#   $f:"; sed 's/^/#     /' "$f" | tail -15; done; }
ev() { eval "$*"; }
sandboxes() { ls "$S" 2>/dev/null | grep -E '^[0-9a-f]{12}$'; }
state() { "$E" ls 2>/dev/null | awk -v id="$1" '$1 == id { print $5 }'; }
cleanup() {
	local p
	for p in $(state_dir_procs); do kill -9 "$p" 2>/dev/null; done
	umount "$S" 2>/dev/null
	rm -rf "$TMP"
}
trap cleanup EXIT

need_kvm "enospc"
for b in "$E" "$EMBER"; do
	if [ ! -x "$b" ]; then
		not_ok "enospc: $b is built" "make all asan"
		exit 0
	fi
done
export EMBER_BIN=$EMBER EMBER_KERNEL=$GUEST/vmlinux EMBER_ROOTFS=$GUEST/rootfs.ext4
mkdir -p "$S"

# ---- a template build with too little room -------------------------------
mount -t tmpfs -o size=200m,mode=0700 tmpfs "$S"
timeout "$BOOT_TIMEOUT" "$E" template build nospace --no-interp --no-net --mem 128 \
	--boot-timeout "$BOOT_TIMEOUT" >"$TMP/b1.out" 2>"$TMP/b1.err"
rc=$?
left=$(ls -A "$S/templates" 2>/dev/null; sandboxes)
check "enospc: a template build in a 200 MiB state directory: exit 1, one clear error, nothing left" \
	"exit $rc; left: '$left'; $(show "$TMP/b1.err")" \
	ev '[ $rc = 1 ] && [ "$(grep -c "^emberctl:" "$TMP/b1.err")" = 1 ] && grep -qiE "no space|ENOSPC|free" "$TMP/b1.err" && [ -z "$left" ] && [ -z "$(state_dir_procs)" ]'
umount "$S"

# ---- room for a template and a sandbox, then the disk full ---------------
mount -t tmpfs -o size=1200m,mode=0700 tmpfs "$S"
timeout "$BOOT_TIMEOUT" "$E" template build full --no-interp --no-net --mem 128 \
	--boot-timeout "$BOOT_TIMEOUT" >"$TMP/b2.out" 2>"$TMP/b2.err"
rc=$?
check "enospc: the template built in a 1200 MiB state directory" "exit $rc; $(show "$TMP/b2.err")" [ $rc = 0 ]
[ $rc = 0 ] || exit 0
id=$("$E" run --template full --ttl 600 2>"$TMP/r.err")
head -c 300000 /dev/urandom >"$TMP/keep"
"$E" cp "$TMP/keep" "$id:/root/keep" 2>"$TMP/cp1.err"
rc=$?
"$E" exec "$id" -- sync
check "enospc: a sandbox runs, a file copied in" "exit $rc; $(show "$TMP/r.err" "$TMP/cp1.err")" \
	ev '[ -n "$id" ] && [ $rc = 0 ]'
sum() { "$E" exec "$id" -- sha256sum /root/keep 2>>"$TMP/x.err" | cut -d" " -f1; }
want=$(sha256sum "$TMP/keep" | cut -d" " -f1)
free_kib=$(df -k --output=avail "$S" | tail -1)
fallocate -l $(((free_kib - 128) * 1024)) "$S/filler" 2>/dev/null ||
	head -c $(((free_kib - 128) * 1024)) /dev/zero >"$S/filler" 2>/dev/null

"$E" pause --to-disk "$id" >/dev/null 2>"$TMP/park1.err"
rc=$?
st=$(state "$id")
snaps=$(ls "$S/$id" | grep -c '^snap-')
got=$(sum)
check "enospc: a park with 128 KiB free (a Diff of ~2 MiB does not fit): exit 1, one clear error, the sandbox runs on, no snapshot file left, its file whole" \
	"exit $rc, state $st, $snaps snapshot files, sha $got; $(show "$TMP/park1.err" "$TMP/x.err")" \
	ev '[ $rc = 1 ] && [ "$(grep -c "^emberctl:" "$TMP/park1.err")" = 1 ] && grep -qiE "space|ENOSPC" "$TMP/park1.err" && [ "$st" = running ] && [ "$snaps" = 0 ] && [ "$got" = "$want" ]'

head -c $((64 << 20)) /dev/urandom >"$TMP/big"
timeout 300 "$E" cp "$TMP/big" "$id:/root/big" 2>"$TMP/cp2.err"
rc=$?
st=$(state "$id")
check "enospc: a cp of 64 MiB with the host's disk full: it ends with one clear error (no hang), ember runs on" \
	"exit $rc, state $st; $(show "$TMP/cp2.err" "$S/$id/ember.log")" \
	ev '[ "$rc" = 1 ] && [ "$(grep -c "^emberctl:" "$TMP/cp2.err")" = 1 ] && [ "$st" = running ] && kill -0 "$(sed -n "s/^ember=//p" "$S/$id/info")"'

# ---- the room given back --------------------------------------------------
rm -f "$S/filler"
"$E" exec "$id" -- sh -c 'rm -f /root/big; sync' 2>>"$TMP/x.err"
rc0=$?
"$E" pause --to-disk "$id" >/dev/null 2>"$TMP/park2.err"
rc=$?
st=$(state "$id")
"$E" resume "$id" >/dev/null 2>"$TMP/res.err"
rc2=$?
got=$(sum)
check "enospc: with the room back, the sandbox answers, park and resume work and the earlier file is whole" \
	"exec $rc0, park $rc ($st), resume $rc2, sha $got; $(show "$TMP/park2.err" "$TMP/res.err" "$TMP/x.err")" \
	ev '[ "$rc0$rc$rc2" = 000 ] && [ "$st" = parked ] && [ "$got" = "$want" ]'
"$E" kill "$id" >/dev/null 2>&1
"$E" template rm full >/dev/null 2>"$TMP/trm.err"
rc=$?
sleep 0.5
check "enospc: the sandbox killed, the template removed, nothing left, no process, no sanitizer report" \
	"template rm $rc; $(ls -A "$S"); $(state_dir_procs)" \
	ev '[ $rc = 0 ] && [ -z "$(sandboxes)" ] && [ -z "$(ls -A "$S/templates" 2>/dev/null)" ] && [ -z "$(state_dir_procs)" ] && ! grep -qE "AddressSanitizer|runtime error|LeakSanitizer" "$TMP"/*.err "$EMBER_SUPERVISOR_LOG" 2>/dev/null'
