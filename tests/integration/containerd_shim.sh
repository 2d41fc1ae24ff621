#!/usr/bin/env bash
# The protocol half of containerd-shim-ember-v1 (api/containerd/main.c,
# ttrpc.c) on this host, without containerd or a VM: `start` as
# containerd 1.6 runs it (cwd the bundle, TTRPC_ADDRESS set, the options
# on stdin) prints the socket address containerd computes (sha256 of
# ADDRESS/NS/GROUP under EMBER_SHIM_SOCKET_DIR), writes BUNDLE/address and
# leaves a daemon serving ttrpc on it; a pod's containers get their
# sandbox's shim; a stale socket is replaced; `delete` prints a packed
# DeleteResponse (exit status 137, exited_at); SIGTERM ends a daemon and
# removes its socket; bad command lines fail.  The daemon answers a
# method no Task service has with UNIMPLEMENTED, whatever the service.
# The check is eval'd in check(): single quotes on purpose.
# shellcheck disable=SC2016
set -u
cd "$(dirname "$0")/../.." || exit 1
. tests/lib.sh

SHIM=${EMBER_SHIM:-build/containerd-shim-ember-v1-asan}
[ -x "$SHIM" ] || { not_ok "shim built" "$SHIM missing (make asan)"; exit 0; }
SHIM=$(realpath "$SHIM")
export EMBER_SHIM_SOCKET_DIR=$TMP/s
export TTRPC_ADDRESS=$TMP/containerd.sock.ttrpc # nobody: events are retried
ADDR=$TMP/containerd.sock
NS=ember-test
daemons=()

cleanup() {
	local p
	for p in "${daemons[@]}"; do kill -9 "$p" 2>/dev/null; done
	rm -rf "$TMP"
}
trap cleanup EXIT

# bundle DIR JSON: a bundle directory with config.json = JSON.
bundle() {
	mkdir -p "$1" && printf '%s\n' "$2" >"$1/config.json"
}

# start DIR ID: the shim's start in bundle DIR; its stdout in $out.
start() {
	out=$(cd "$1" && printf 'opts' | "$SHIM" -namespace $NS -address "$ADDR" \
		-publish-binary /usr/bin/containerd -id "$2" start 2>"$TMP/start.err")
}

# expected GROUP: the address containerd 1.6 computes.
expected() {
	echo "unix://$EMBER_SHIM_SOCKET_DIR/$(printf '%s' "$ADDR/$NS/$1" | sha256sum | cut -d' ' -f1)"
}

# daemon_of ADDRESS: the pid of the daemon listening there ("" if none).
daemon_of() {
	pgrep -f -- "^$SHIM -namespace $NS -id $1 " | head -1
}

# call ADDRESS SERVICE METHOD: "stream type code" of the ttrpc answer.
call() {
	python3 - "$1" "$2" "$3" <<'EOF'
import socket, struct, sys
def field(n, b):
    return bytes([n << 3 | 2, len(b)]) + b
req = field(1, sys.argv[2].encode()) + field(2, sys.argv[3].encode())
s = socket.socket(socket.AF_UNIX)
s.settimeout(10)
s.connect(sys.argv[1][len("unix://"):])
s.sendall(struct.pack(">IIBB", len(req), 1, 1, 0) + req)
hdr = b""
while len(hdr) < 10:
    b = s.recv(10 - len(hdr))
    if not b:
        sys.exit("closed")
    hdr += b
n, stream, typ, _ = struct.unpack(">IIBB", hdr)
body = b""
while len(body) < n:
    body += s.recv(n - len(body))
code = 0
if body[:1] == b"\x0a":  # status
    st = body[2:2 + body[1]]
    if st[:1] == b"\x08":
        code = st[1]
print(stream, typ, code)
EOF
}

bundle "$TMP/pod" '{"ociVersion":"1.0.2","annotations":{"io.kubernetes.cri.container-type":"sandbox","io.kubernetes.cri.sandbox-id":"pod1"}}'
start "$TMP/pod" pod1
st=$?
want=$(expected pod1)
check "start: prints the address containerd 1.6 computes" \
	"rc $st, '$out' != '$want': $(cat "$TMP/start.err")" \
	test "$st" = 0 -a "$out" = "$want"
check "start: writes BUNDLE/address" "$(cat "$TMP/pod/address" 2>&1)" \
	test "$(cat "$TMP/pod/address" 2>/dev/null)" = "$want"
pod_addr=$out
pid=$(daemon_of pod1)
[ -n "$pid" ] && daemons+=("$pid")
check "start: leaves a daemon" "no process" test -n "$pid"
check "start: the socket is the daemon's, mode 0600" \
	"$(stat -c %a "${pod_addr#unix://}" 2>&1)" \
	test "$(stat -c %a "${pod_addr#unix://}" 2>/dev/null)" = 600
ans=$(call "$pod_addr" containerd.task.v2.Task NoSuchMethod 2>&1)
check "daemon: answers on ttrpc (UNIMPLEMENTED for an unknown method)" \
	"answer '$ans'" test "$ans" = "1 2 12"

bundle "$TMP/c1" '{"annotations":{"io.kubernetes.cri.container-type":"container","io.kubernetes.cri.sandbox-id":"pod1"}}'
start "$TMP/c1" c1
st=$?
check "start: a pod's container gets its sandbox's shim" \
	"rc $st, '$out' != '$pod_addr'" test "$st" = 0 -a "$out" = "$pod_addr"
check "start: ... and writes its own BUNDLE/address" "" \
	test "$(cat "$TMP/c1/address" 2>/dev/null)" = "$pod_addr"
check "start: ... without a second daemon" "$(pgrep -af -- "-id c1 ")" \
	test -z "$(daemon_of c1)"

bundle "$TMP/c2" '{"ociVersion":"1.0.2"}'
# a socket left by a shim that died: replaced
c2_path=$(expected c2)
c2_path=${c2_path#unix://}
python3 -c 'import socket,sys; s=socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); s.close()' "$c2_path"
start "$TMP/c2" c2
st=$?
check "start: a task of its own, over a stale socket" \
	"rc $st, '$out': $(cat "$TMP/start.err")" \
	test "$st" = 0 -a "$out" = "$(expected c2)"
pid2=$(daemon_of c2)
[ -n "$pid2" ] && daemons+=("$pid2")
ans=$(call "$out" containerd.task.v2.Task NoSuchMethod 2>&1)
check "daemon: the second one answers too" "answer '$ans'" test "$ans" = "1 2 12"

mkdir -p "$TMP/nospec"
start "$TMP/nospec" x
check "start: fails without config.json" "rc 0, '$out'" test $? != 0 -a -z "$out"

del=$(cd "$TMP" && "$SHIM" -namespace $NS -address "$ADDR" -id c1 \
	-bundle "$TMP/c1" delete | od -An -tx1 | tr -d ' \n')
# field 2 (exit_status) = 137, then field 3 (exited_at, a Timestamp)
check "delete: prints DeleteResponse{exit_status 137, exited_at}" "got $del" \
	eval '[[ "$del" == 1089011a* ]]'

"$SHIM" -id x start >/dev/null 2>&1
check "no -namespace: exit 1" "exit $?" test $? = 1
"$SHIM" -namespace $NS -id x frobnicate >/dev/null 2>&1
check "an unknown action: exit 2" "exit $?" test $? = 2
"$SHIM" -namespace $NS -id x -nosuchflag start >/dev/null 2>&1
check "an unknown flag: exit 2" "exit $?" test $? = 2

for p in $pid $pid2; do
	kill -TERM "$p"
	exit_of "$p" 10
	check "SIGTERM: the daemon $p ends" "status $st" test "$st" != timeout
done
check "SIGTERM: the daemons remove their sockets" "$(ls "$EMBER_SHIM_SOCKET_DIR")" \
	test -z "$(ls "$EMBER_SHIM_SOCKET_DIR")"
