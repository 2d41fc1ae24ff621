#!/usr/bin/env bash
# virtio-vsock against a real Linux guest: one boot of the default rootfs
# with --vsock, driven over ember's Unix socket by vsock_peer.py (no
# emberctl): the agent's port, CONNECT/OK, data both ways byte for byte,
# many connections at once both ways, RST for unlistened ports on either
# side, orderly half-close, malformed CONNECT lines, an exec on a guest
# pseudo-terminal (init's devpts); then a clean stop
# that removes the socket.  The descriptor layouts Linux does not use are
# covered by tests/unit/test_virtio_vsock.c.
set -u
cd "$(dirname "$0")/../.."
. tests/lib.sh

need_kvm "vsock tests"
PEER=tests/integration/vsock_peer.py
UDS=$TMP/v.sock
cp --sparse=always "$GUEST/rootfs.ext4" "$TMP/root.ext4"
"$EMBER" --kernel "$GUEST/vmlinux" --mem 256 --console "file:$TMP/console" \
	--drive "path=$TMP/root.ext4,root" --vsock "cid=7,uds=$UDS" \
	>"$TMP/ember.out" 2>"$TMP/ember.err" </dev/null &
pid=$!

# run_peer CMD ARGS...: each "ok ..." line vsock_peer.py prints is a
# check; a failure shows the peer's message and ember's last words.
run_peer() {
	local cmd=$1
	shift
	local out rc line
	out=$(timeout 600 python3 "$PEER" "$cmd" "$UDS" "$@" 2>&1)
	rc=$?
	while IFS= read -r line; do
		case $line in
		"ok "*) ok "vsock: ${line#ok }" ;;
		esac
	done <<<"$out"
	[ $rc = 0 ] || not_ok "vsock: $cmd" "exit $rc" \
		"$(tail -5 <<<"$out")" "ember: $(tail -3 "$TMP/ember.err")"
}

run_peer ping 600
run_peer bad-lines
run_peer refused
run_peer echo 2
run_peer concurrent 4
run_peer guest-to-host 4 300000
run_peer tty
run_peer ping 10

kill -TERM "$pid"
wait "$pid"
rc=$?
check "vsock: ember stops on SIGTERM with the sandbox's connections open" \
	"exit $rc, want 143" [ "$rc" = 143 ]
check "vsock: the Unix socket is gone after the stop" "$(ls -l "$TMP")" \
	[ ! -e "$UDS" ]
check "vsock: no sanitizer report" "$(grep -m3 -E 'Sanitizer|runtime error' "$TMP/ember.err")" \
	bash -c "! grep -qE 'AddressSanitizer|runtime error|LeakSanitizer' '$TMP/ember.err'"
