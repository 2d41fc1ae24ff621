#!/usr/bin/env bash
# A sandbox's own ports (emberctl expose, api/sandbox/expose.h; the
# agent's FORWARD, guest-init/PROTOCOL.md): a booted sandbox without a
# network runs busybox httpd on the guest's 127.0.0.1:8000 and :8002;
# `expose ID 8000` prints a host address where curl gets the guest's page
# and a 1 MiB file byte for byte; `expose ID` lists the ports; a port
# given as 127.0.0.1:P is listened on there.  Refused, each with one
# clear error: a port already exposed, a host address in use, bad ports
# and addresses.  A guest port nothing listens on: `expose` warns, and a
# connection is reset at once (no hang).  --max-conns 2: a third
# connection at once is reset while exec and the other port go on, and
# once the two close a new one is served.  --rm stops the listener;
# kill ends every forwarder and frees the host ports, and so does the
# TTL's end (a second sandbox, `ttl ID 1`).
set -u
cd "$(dirname "$0")/../.."
. tests/lib.sh

: "${EMBERCTL:=build/emberctl-asan}"
BOOT_TIMEOUT=${BOOT_TIMEOUT:-600}
E=$EMBERCTL
IDS=()

need_kvm "expose"
if [ ! -x "$E" ] || [ ! -x "$EMBER" ]; then
	not_ok "expose: $E and $EMBER are built" "make all asan"
	exit 0
fi
for tool in curl python3 sha256sum; do
	if ! command -v "$tool" >/dev/null; then
		not_ok "expose: $tool is installed" "apt-get install curl python3"
		exit 0
	fi
done
export EMBER_BIN=$EMBER EMBER_KERNEL=$GUEST/vmlinux EMBER_ROOTFS=$GUEST/rootfs.ext4
export EMBER_SUPERVISOR_LOG=$TMP/supervisor.log
export EMBER_STATE_DIR=$TMP/state

cleanup() {
	local id
	for id in "${IDS[@]}"; do "$E" kill "$id" >/dev/null 2>&1; done
	rm -rf "$TMP"
}
trap cleanup EXIT

show() { for f in "$@"; do echo "#   $f:"; sed 's/^/#     /' "$f" | tail -15; done; }
ev() { eval "$*"; }
no_sanitizer_report() { ! grep -qE 'AddressSanitizer|runtime error|LeakSanitizer' "$@"; }
alive() { [ -n "$1" ] && kill -0 "$1" 2>/dev/null; }
# fwd_pid ID PORT: the forwarder's pid from its record.
fwd_pid() { sed -n 's/^pid=//p' "$EMBER_STATE_DIR/$1/expose/$2" 2>/dev/null; }
# A free TCP port on the host's 127.0.0.1.
free_port() {
	python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
# get ADDR [PATH]: curl's body on stdout, its exit status as ours (10 s).
get() { curl -sS --max-time 10 "http://$1/${2:-}"; }
now_ms() { echo $(($(date +%s%N) / 1000000)); }

# ---- a sandbox with two servers ------------------------------------------
id=$(timeout "$BOOT_TIMEOUT" "$E" run --boot --ttl 1800 \
	--boot-timeout "$BOOT_TIMEOUT" 2>"$TMP/run.err")
rc=$?
[ -n "$id" ] && IDS+=("$id")
check "expose: a sandbox boots (no network)" "exit $rc; $(show "$TMP/run.err")" \
	[ $rc = 0 ] && [ -n "$id" ]
[ -n "$id" ] || exit 0
"$E" exec "$id" -- sh -c 'mkdir -p /srv && echo hello-from-guest >/srv/index.html &&
	head -c 1048576 /dev/urandom >/srv/big &&
	busybox httpd -p 127.0.0.1:8000 -h /srv && busybox httpd -p 127.0.0.1:8002 -h /srv' \
	>"$TMP/srv.out" 2>&1
check "expose: busybox httpd runs on the guest's 127.0.0.1:8000 and :8002" \
	"$(show "$TMP/srv.out")" [ $? = 0 ]

# ---- a port nothing listens on -------------------------------------------
a1=$("$E" expose "$id" 8001 2>"$TMP/e1.err")
rc=$?
check "expose: a port nothing listens on is exposed, with a warning" \
	"exit $rc, '$a1'; $(show "$TMP/e1.err")" \
	ev '[ $rc = 0 ] && [[ $a1 == 127.0.0.1:* ]] && grep -q "nothing listens on port 8001" "$TMP/e1.err"'
# The forwarder accepts and resets: curl says 56 (reset), or 7 when the
# reset came before it saw its connect complete (a loaded host); the
# forwarder lives on.
t0=$(now_ms)
get "$a1" >/dev/null 2>"$TMP/c1.err"
rc=$?
t1=$(now_ms)
p1=$(fwd_pid "$id" 8001)
check "expose: a connection to it is reset at once, not a hang" \
	"curl exit $rc after $((t1 - t0)) ms, forwarder '$p1'; $(show "$TMP/c1.err")" \
	ev '{ [ $rc = 56 ] || [ $rc = 52 ] || [ $rc = 7 ]; } && [ $((t1 - t0)) -lt 8000 ] && alive "$p1"'

# ---- the server ----------------------------------------------------------
a0=$("$E" expose "$id" 8000 2>"$TMP/e0.err")
rc=$?
check "expose: ID 8000 prints 127.0.0.1:PORT, no warning" \
	"exit $rc, '$a0'; $(show "$TMP/e0.err")" \
	ev '[ $rc = 0 ] && [[ $a0 =~ ^127\.0\.0\.1:[0-9]+$ ]] && [ ! -s "$TMP/e0.err" ]'
body=$(get "$a0" 2>"$TMP/c0.err")
check "expose: curl gets the guest's page through it" \
	"got '$body'; $(show "$TMP/c0.err")" [ "$body" = hello-from-guest ]
get "$a0" big >"$TMP/big" 2>"$TMP/cb.err"
want=$("$E" exec "$id" -- sha256sum /srv/big 2>/dev/null | cut -d' ' -f1)
got=$(sha256sum <"$TMP/big" | cut -d' ' -f1)
check "expose: a 1 MiB file comes through byte for byte" \
	"guest $want, host $got ($(stat -c %s "$TMP/big") bytes); $(show "$TMP/cb.err")" \
	ev '[ -n "$want" ] && [ "$want" = "$got" ]'
"$E" expose "$id" 8000 >"$TMP/dup.out" 2>"$TMP/dup.err"
rc=$?
check "expose: a port already exposed is refused, naming where" \
	"exit $rc; $(show "$TMP/dup.out" "$TMP/dup.err")" \
	ev '[ $rc = 1 ] && [ ! -s "$TMP/dup.out" ] && grep -q "port 8000 of sandbox $id is already exposed at $a0" "$TMP/dup.err"'

# ---- a host address of our choice, and a bound ----------------------------
P=$(free_port)
a2=$("$E" expose --max-conns 2 "$id" 8002 "127.0.0.1:$P" 2>"$TMP/e2.err")
rc=$?
check "expose: 8002 at 127.0.0.1:$P (--max-conns 2)" \
	"exit $rc, '$a2'; $(show "$TMP/e2.err")" [ "$a2" = "127.0.0.1:$P" ]
body=$(get "$a2" 2>"$TMP/c2.err")
check "expose: curl gets the page at 127.0.0.1:$P" \
	"got '$body'; $(show "$TMP/c2.err")" [ "$body" = hello-from-guest ]
"$E" expose "$id" 8003 "127.0.0.1:$P" >/dev/null 2>"$TMP/inuse.err"
rc=$?
check "expose: a host address in use is refused" "exit $rc; $(show "$TMP/inuse.err")" \
	ev '[ $rc = 1 ] && grep -q "Address already in use" "$TMP/inuse.err"'
"$E" expose "$id" >"$TMP/ls" 2>&1
check "expose: ID lists the three ports" "$(show "$TMP/ls")" \
	ev 'printf "8000 %s\n8001 %s\n8002 %s\n" "$a0" "$a1" "$a2" | cmp -s - "$TMP/ls"'
bad=0
for args in "$id 0" "$id 65536" "$id 8005 nohost:1" "$id 8005 127.0.0.1:70000" \
	"$id 8005 [::1" "--max-conns 0 $id 8005" "--rm $id" "--rm $id 8000 9000"; do
	# shellcheck disable=SC2086
	"$E" expose $args >/dev/null 2>"$TMP/bad.err"
	rc=$?
	if [ $rc = 0 ] || [ ! -s "$TMP/bad.err" ]; then
		bad=1
		echo "#   expose $args: exit $rc"
	fi
done
check "expose: bad ports, addresses and usage are refused" "see above" [ $bad = 0 ]

# Two connections held open, then a third at once: reset; meanwhile
# exec and the other port are served; once the two close, a new one is.
cat >"$TMP/flood.py" <<'EOF'
import socket, sys, time
port = int(sys.argv[1])
held = [socket.create_connection(("127.0.0.1", port)) for _ in range(2)]
time.sleep(1)
try:
    s = socket.create_connection(("127.0.0.1", port))
    s.settimeout(8)
    d = s.recv(100)
    print("third: eof" if d == b"" else "third: data")
except ConnectionResetError:
    print("third: reset")
except socket.timeout:
    print("third: hang")
sys.stdout.flush()
# Hold the two until told (stdin closes).
sys.stdin.read()
for h in held:
    h.close()
EOF
mkfifo "$TMP/hold"
python3 "$TMP/flood.py" "$P" <"$TMP/hold" >"$TMP/flood.out" 2>&1 &
fpid=$!
exec 9>"$TMP/hold"
wait_for "$TMP/flood.out" "third" 15
check "expose: past --max-conns a new connection is reset at once" \
	"$(show "$TMP/flood.out")" grep -qx "third: reset" "$TMP/flood.out"
out=$("$E" exec "$id" -- echo alive 2>&1)
body=$(get "$a0" 2>&1)
check "expose: meanwhile exec and the other port are served" \
	"exec: '$out', 8000: '$body'" \
	ev '[ "$out" = alive ] && [ "$body" = hello-from-guest ]'
exec 9>&-
wait "$fpid"
body=
for _ in $(seq 50); do
	body=$(get "$a2" 2>/dev/null) && break
	sleep 0.2
done
check "expose: once they closed, a new connection is served" "got '$body'" \
	[ "$body" = hello-from-guest ]

# ---- --rm, kill -------------------------------------------------------------
p1=$(fwd_pid "$id" 8001)
"$E" expose --rm "$id" 8001 >"$TMP/rm.out" 2>&1
rc=$?
get "$a1" >/dev/null 2>&1
crc=$?
check "expose: --rm ends the forwarder and frees the host port" \
	"exit $rc, curl $crc, pid $p1; $(show "$TMP/rm.out")" \
	ev '[ $rc = 0 ] && [ $crc = 7 ] && [ -n "$p1" ] && ! alive "$p1"'
"$E" expose "$id" >"$TMP/ls2" 2>&1
check "expose: the list no longer has 8001" "$(show "$TMP/ls2")" \
	ev '! grep -q "^8001 " "$TMP/ls2" && grep -q "^8000 " "$TMP/ls2"'
"$E" expose --rm "$id" 8001 >/dev/null 2>"$TMP/rm2.err"
rc=$?
check "expose: --rm of a port not exposed is refused" "exit $rc; $(show "$TMP/rm2.err")" \
	ev '[ $rc = 1 ] && grep -q "port 8001 of sandbox $id is not exposed" "$TMP/rm2.err"'
p0=$(fwd_pid "$id" 8000)
p2=$(fwd_pid "$id" 8002)
"$E" kill "$id" >/dev/null 2>"$TMP/kill.err"
IDS=()
for _ in $(seq 50); do
	alive "$p0" || alive "$p2" || break
	sleep 0.1
done
get "$a0" >/dev/null 2>&1
c0=$?
get "$a2" >/dev/null 2>&1
c2=$?
check "expose: kill ends every forwarder and frees the host ports" \
	"pids $p0 $p2, curl $c0 $c2; $(show "$TMP/kill.err")" \
	ev '[ -n "$p0" ] && [ -n "$p2" ] && ! alive "$p0" && ! alive "$p2" && [ $c0 = 7 ] && [ $c2 = 7 ]'

# ---- the TTL's end -----------------------------------------------------------
id2=$(timeout "$BOOT_TIMEOUT" "$E" run --boot --ttl 1800 \
	--boot-timeout "$BOOT_TIMEOUT" 2>"$TMP/run2.err")
[ -n "$id2" ] && IDS+=("$id2")
a3=$("$E" expose "$id2" 8000 2>/dev/null)
p3=$(fwd_pid "$id2" 8000)
"$E" ttl "$id2" 1 >/dev/null 2>"$TMP/ttl.err"
for _ in $(seq 300); do
	alive "$p3" || break
	sleep 0.1
done
get "$a3" >/dev/null 2>&1
c3=$?
check "expose: the TTL's end ends the forwarder and frees the host port" \
	"sandbox '$id2', address '$a3', pid '$p3', curl $c3; $(show "$TMP/run2.err" "$TMP/ttl.err")" \
	ev '[ -n "$p3" ] && ! alive "$p3" && [ $c3 = 7 ] && [ ! -e "$EMBER_STATE_DIR/$id2" ]'
check "expose: no sanitizer reports" "$(show "$TMP"/*.err "$EMBER_SUPERVISOR_LOG")" \
	no_sanitizer_report "$TMP"/*.err "$EMBER_SUPERVISOR_LOG"
