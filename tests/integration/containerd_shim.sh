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
# Create never boots a VM here, and writes nothing outside $TMP.
export EMBER_STATE_DIR=$TMP/state EMBER_SHIM_TEMPLATE=no-such-template
export EMBER_KERNEL=$TMP/no-kernel EMBER_SHIM_CONFIG=$TMP/no-config
ADDR=$TMP/containerd.sock
NS=ember-test
daemons=()

cleanup() {
	local p
	for p in "${daemons[@]}"; do kill -9 "$p" 2>/dev/null; done
	for p in "$TMP/mnt" "$TMP/t1/rootfs"; do
		mountpoint -q "$p" 2>/dev/null && umount -l "$p"
	done
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

# call ADDRESS SERVICE METHOD [PAYLOAD [MSGFILE]]: "stream type code" of
# the ttrpc answer; PAYLOAD in hex, under 128 bytes; its status message
# written to MSGFILE.
call() {
	python3 - "$@" <<'EOF'
import socket, struct, sys
def field(n, b):
    return bytes([n << 3 | 2, len(b)]) + b
req = field(1, sys.argv[2].encode()) + field(2, sys.argv[3].encode())
if len(sys.argv) > 4:
    req += field(3, bytes.fromhex(sys.argv[4]))
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
def varint(b, i):
    v = sh = 0
    while True:
        v |= (b[i] & 0x7f) << sh
        sh += 7
        i += 1
        if not b[i - 1] & 0x80:
            return v, i
code = 0
if body[:1] == b"\x0a":  # status
    n, i = varint(body, 1)
    st = body[i:i + n]
    if st[:1] == b"\x08":
        code = varint(st, 1)[0]
    if len(sys.argv) > 5 and st[:1] == b"\x08":
        j = varint(st, 1)[1]
        if st[j:j + 1] == b"\x12":
            n, j = varint(st, j + 1)
            open(sys.argv[5], "wb").write(st[j:j + n])
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

# --- bad input --------------------------------------------------------------

# A FIFO where a file is read must fail, not hang.
mkdir -p "$TMP/fifo"
mkfifo "$TMP/fifo/config.json"
out=$(cd "$TMP/fifo" && timeout 10 "$SHIM" -namespace $NS -address "$ADDR" \
	-id f start 2>"$TMP/start.err" </dev/null)
st=$?
check "start: a FIFO for config.json fails at once" \
	"rc $st, '$out': $(cat "$TMP/start.err")" \
	test "$st" = 1 -a -z "$out"
rm "$TMP/fifo/config.json"
mkfifo "$TMP/fifo/ember.state"
timeout 10 "$SHIM" -namespace $NS -address "$ADDR" -id f -bundle "$TMP/fifo" \
	delete >/dev/null 2>"$TMP/del.err"
st=$?
check "delete: a FIFO for ember.state fails at once" \
	"rc $st: $(cat "$TMP/del.err")" test "$st" = 1

# delete ID: the shim's delete of the bundle $TMP/ID, state under $TMP/state.
delete() {
	"$SHIM" -namespace $NS -address "$ADDR" \
		-id "$1" -bundle "$TMP/$1" delete >/dev/null 2>"$TMP/del.err"
}

# A tampered ember.state names paths outside what Create made: left alone.
mkdir -p "$TMP/t0" "$TMP/state/containerd/$NS" "$TMP/mnt"
echo precious >"$TMP/victim"
printf 'sandbox=a\ndisk=%s\nrootfs=%s\n' "$TMP/victim" "$TMP/mnt" \
	>"$TMP/t0/ember.state"
root=$(id -u)
[ "$root" = 0 ] && mount -t tmpfs none "$TMP/mnt"
delete t0
st=$?
check "delete: a tampered ember.state removes no other file" \
	"rc $st, $(cat "$TMP/del.err"), victim: $(ls "$TMP/victim" 2>&1)" \
	test "$st" = 0 -a -f "$TMP/victim"
if [ "$root" = 0 ]; then
	check "delete: ... and unmounts nothing but BUNDLE/rootfs" \
		"$TMP/mnt unmounted" mountpoint -q "$TMP/mnt"
	umount -l "$TMP/mnt"
fi
check "delete: ... and removes the state file" "" \
	test ! -e "$TMP/t0/ember.state"

# A namespace that climbs out of STATE/containerd: its "disk" stays.
mkdir -p "$TMP/t2"
echo precious >"$TMP/state/t2.ext4"
printf 'disk=%s\n' "$TMP/state/containerd/../t2.ext4" >"$TMP/t2/ember.state"
"$SHIM" -namespace .. -address "$ADDR" -id t2 -bundle "$TMP/t2" delete \
	>/dev/null 2>"$TMP/del.err"
check "delete: the namespace '..' removes nothing outside" \
	"rc $?, $(cat "$TMP/del.err")" test -f "$TMP/state/t2.ext4"

# What Create writes is still cleaned: its disk and BUNDLE/rootfs.
mkdir -p "$TMP/t1/rootfs"
disk=$TMP/state/containerd/$NS/t1.ext4
: >"$disk"
printf 'sandbox=\ndisk=%s\nrootfs=%s\n' "$disk" "$TMP/t1/rootfs" \
	>"$TMP/t1/ember.state"
[ "$root" = 0 ] && mount -t tmpfs none "$TMP/t1/rootfs"
delete t1
st=$?
check "delete: removes the task's disk" "rc $st, $(cat "$TMP/del.err")" \
	test "$st" = 0 -a ! -e "$disk"
if [ "$root" = 0 ]; then
	check "delete: unmounts BUNDLE/rootfs" "still mounted" \
		eval '! mountpoint -q "$TMP/t1/rootfs"'
fi

# Out of fds, the daemon waits for one rather than spinning on accept.
bundle "$TMP/fd" '{"ociVersion":"1.0.2"}'
out=$(ulimit -n 40 && start "$TMP/fd" fd && echo "$out")
pid=$(daemon_of fd)
[ -n "$pid" ] && daemons+=("$pid")
ticks=$(python3 - "${out#unix://}" "$pid" <<'EOF'
import socket, sys, time
def cpu():
    f = open("/proc/%s/stat" % sys.argv[2]).read().rsplit(")", 1)[1].split()
    return int(f[11]) + int(f[12])
cs = []
for _ in range(60):
    s = socket.socket(socket.AF_UNIX)
    s.connect(sys.argv[1])
    cs.append(s)
time.sleep(0.5)
a = cpu()
time.sleep(2)
print(cpu() - a)
EOF
)
check "daemon: out of fds, it does not spin (CPU ticks in 2 s: $ticks)" \
	"pid '$pid'" test -n "$pid" -a "${ticks:-999}" -lt 5
ans=$(call "$out" containerd.task.v2.Task NoSuchMethod 2>&1)
check "daemon: ... and answers once the fds are back" "answer '$ans'" \
	test "$ans" = "1 2 12"

# Create with an id containerd would never send: refused before any work.
# A good id gets further: to the missing rootfs (no VM is ever booted).
bundle "$TMP/cr" '{"process":{"args":["sh"],"cwd":"/"},"root":{"path":"nothere"}}'
for id in ok-1 .. . a..b -a 'a b' "$(printf 'a\nrootfs=/')"; do
	req=$(python3 -c 'import sys
def f(n, b): return bytes([n << 3 | 2, len(b)]) + b
print((f(1, sys.argv[1].encode()) + f(2, sys.argv[2].encode())).hex())' \
		"$id" "$TMP/cr")
	ans=$(call "$out" containerd.task.v2.Task Create "$req" 2>&1)
	if [ "$id" = ok-1 ]; then
		check "Create: a good id fails later (no rootfs)" \
			"answer '$ans'" test "$ans" = "1 2 5"
	else
		check "Create: the id '$id' is refused (INVALID_ARGUMENT)" \
			"answer '$ans'" test "$ans" = "1 2 3"
	fi
done

# Create that cannot boot (no template, no kernel): a clear error, and
# nothing left of it: no state file, no disk, nothing mounted on
# BUNDLE/rootfs.
mkdir -p "$TMP/src/bin" "$TMP/cr2"
echo hi >"$TMP/src/bin/x"
bundle "$TMP/cr2" '{"process":{"args":["/bin/x"],"cwd":"/"},"root":{"path":"rootfs"}}'
req=$(python3 -c 'import sys
def f(n, b): return bytes([n << 3 | 2, len(b)]) + b
m = f(1, b"bind") + f(2, sys.argv[2].encode()) + f(4, b"rbind")
print((f(1, b"cr2") + f(2, sys.argv[1].encode()) + f(3, m)).hex())' \
	"$TMP/cr2" "$TMP/src")
ans=$(call "$out" containerd.task.v2.Task Create "$req" "$TMP/msg" 2>&1)
msg=$(cat "$TMP/msg" 2>/dev/null)
check "Create without a VM to boot: fails, saying why" "answer '$ans' '$msg'" \
	eval '[[ "$ans" == "1 2 5" && "$msg" == *no-such-template*EMBER_KERNEL* ]]'
log=$(cat "$TMP/fd/log" 2>/dev/null)
check "... and leaves no state file" "" test ! -e "$TMP/cr2/ember.state"
check "... nor a disk" "$(ls "$TMP/state/containerd/$NS" 2>&1)" \
	test -z "$(ls "$TMP/state/containerd/$NS" 2>/dev/null)"
check "... nor a mount on BUNDLE/rootfs" "$log" \
	eval '! mountpoint -q "$TMP/cr2/rootfs" 2>/dev/null'
