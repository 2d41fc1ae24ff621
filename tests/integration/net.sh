#!/usr/bin/env bash
# Sandbox networking (api/sandbox/net.c, net.h), needs root.  Part 1, no
# VM (fake_ember.py stands in for ember, seconds): templates with and
# without a network device, the namespace, tap, veth, lease and iptables
# rules each mode makes (ls shows the mode), a network on a template
# without a device refused, everything removed on kill, TTL expiry,
# ember's SIGKILL, a dead supervisor (the next ls), a park (and made again
# by the resume), a failed step (named, nothing left), three nat
# sandboxes at once (addresses apart, the chains hooked once), bad
# usage.  Part 2, real sandboxes restored from the template "default"
# (built here when missing, in $SHARED_STATE_DIR as run_code.sh does):
# host-only (ping from its namespace; 10 MiB each way over TCP, sha256 on
# both ends; pip installing a wheel from an index served on the
# namespace's host side), nat (a server in a namespace that plays the
# internet is reached, the host's masquerade seen; the host's resolver
# written to the guest), and what must not be reached: the host's
# loopback, the host's own addresses (a server on 0.0.0.0), another
# sandbox; then kill, TTL and SIGKILL clean-ups, with ip netns, ip link
# and iptables-save as the judges.
set -u
cd "$(dirname "$0")/../.."
. tests/lib.sh

: "${EMBERCTL:=build/emberctl-asan}"
BOOT_TIMEOUT=${BOOT_TIMEOUT:-600}
E=$EMBERCTL
PEER=$PWD/tests/integration/net_peer.py
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3

if [ "$(id -u)" != 0 ]; then
	echo "ok - # SKIP not root: sandbox networking needs a namespace and iptables"
	exit 0
fi
for t in ip iptables-save iptables-restore; do
	if ! command -v "$t" >/dev/null; then
		not_ok "net: $t is installed" "apt-get install iproute2 iptables"
		exit 0
	fi
done
if [ ! -x "$E" ] || [ ! -x "${FAKE_AGENT:-build/test/agent-host}" ]; then
	not_ok "net: $E and ${FAKE_AGENT:-build/test/agent-host} are built" "make asan"
	exit 0
fi

ev() { eval "$*"; }
show() { for f in "$@"; do echo "#   $f:"; sed 's/^/#     /' "$f" | tail -15; done; }
info_of() { sed -n "s/^$2=//p" "$EMBER_STATE_DIR/$1/info" 2>/dev/null; }
no_sanitizer_report() { ! grep -qE 'AddressSanitizer|runtime error|LeakSanitizer' "$@"; }
# What the host has of sandbox ID's network: namespace, veth, rules, lease.
net_of() {
	ip netns list | grep -w "ember-$1"
	ip -o link show | grep -w "ve-$1"
	iptables-save | grep -w "ember-$1"
	grep -lx "$1" /run/ember/net/slots/* 2>/dev/null
}
net_gone() { [ -z "$(net_of "$1")" ]; }
# wait_net_gone ID SECONDS
wait_net_gone() {
	local end=$((SECONDS + $2))
	while [ $SECONDS -le "$end" ]; do
		net_gone "$1" && [ ! -e "$EMBER_STATE_DIR/$1" ] && return 0
		sleep 0.2
	done
	return 1
}
# The address of DEV in namespace NS ("" for the host's).
addr_of() {
	if [ -n "$1" ]; then ip -n "$1" -4 -o addr show dev "$2"; else ip -4 -o addr show dev "$2"; fi |
		awk '{ sub("/.*", "", $4); print $4; exit }'
}

ids=()
bg=()
inet=
cleanup() {
	local p i
	for p in "${bg[@]}"; do kill "$p" 2>/dev/null; done
	for i in "${ids[@]}"; do "$E" kill "$i" >/dev/null 2>&1; done
	if [ -n "$inet" ]; then
		ip netns del "$inet" 2>/dev/null
		ip link del "sbi$$" 2>/dev/null
	fi
	rm -rf "$TMP"
}
trap cleanup EXIT

# ---- part 1: a fake ember --------------------------------------------------
export EMBER_STATE_DIR=$TMP/state
export EMBER_SUPERVISOR_LOG=$TMP/supervisor.log
export EMBER_BIN=$PWD/tests/integration/fake_ember.py
export EMBER_KERNEL=$TMP/vmlinux EMBER_ROOTFS=$TMP/root.img
echo kernel >"$EMBER_KERNEL"
truncate -s 16M "$EMBER_ROOTFS"
# Older than any template made below (--if-missing compares whole seconds).
touch -d '1 hour ago' "$EMBER_KERNEL" "$EMBER_ROOTFS"
T=$EMBER_STATE_DIR/templates

"$E" template build tnet >/dev/null 2>"$TMP/tb.err" &&
	"$E" template build tbare --no-net >/dev/null 2>>"$TMP/tb.err"
rc=$?
check "fake: templates with a network device (default) and without (--no-net), in their info" \
	"exit $rc; $(show "$TMP/tb.err")" \
	ev '[ $rc = 0 ] && grep -qx net=1 "$T/tnet/info" && grep -qx net=0 "$T/tbare/info"'
out=$("$E" template build tbare --no-net --if-missing 2>&1)
out2=$("$E" template build tbare --if-missing 2>&1 >/dev/null)
check "fake: --if-missing keeps a template with the same --no-net, builds one with another again" \
	"got: $out; $out2" \
	ev '[ "$out" = tbare ] && echo "$out2" | grep -q "out of date (built without a network device)" && grep -qx net=1 "$T/tbare/info"'
"$E" template rm tbare >/dev/null && "$E" template build tbare --no-net >/dev/null 2>&1

"$E" run --template tbare --net 2>"$TMP/nodev.err"
rc=$?
check "fake: run --net on a template without a network device is refused, saying why" \
	"exit $rc; $(show "$TMP/nodev.err")" \
	ev '[ $rc = 1 ] && grep -q "template tbare has no network device (built with --no-net)" "$TMP/nodev.err" && [ -z "$(ls "$EMBER_STATE_DIR" | grep -v templates)" ]'
"$E" run --net wifi 2>"$TMP/bad.err"
rc=$?
check "fake: run --net with a mode that is none: bad usage (2)" "exit $rc; $(show "$TMP/bad.err")" \
	ev '[ $rc = 2 ] && grep -q "emberctl: --net wants nat, host-only or none, not .wifi." "$TMP/bad.err"'
"$E" template build tx --no-net --net nat 2>"$TMP/bad2.err"
rc=$?
check "fake: template build --no-net --net nat: bad usage" "exit $rc; $(show "$TMP/bad2.err")" \
	ev '[ $rc = 2 ] && [ ! -e "$T/tx" ]'

bare=$("$E" run --template tbare 2>"$TMP/r0.err")
none=$("$E" run --template tnet 2>"$TMP/r1.err")
host=$("$E" run --template tnet --net host-only 2>"$TMP/r2.err")
nat=$("$E" run --template tnet --net 2>"$TMP/r3.err")
ids+=("$bare" "$none" "$host" "$nat")
check "fake: four sandboxes: no device, none, host-only, nat" \
	"$(show "$TMP"/r[0-3].err)" ev '[ -n "$bare" ] && [ -n "$none" ] && [ -n "$host" ] && [ -n "$nat" ]'
check "fake: without a device, no namespace at all" "$(net_of "$bare")" \
	ev 'net_gone "$bare" && [ "$(info_of "$bare" net_dev)" = 0 ]'
check "fake: none: its namespace with tap0 up, no address, no route" \
	"$(ip -n "ember-$none" -d addr 2>&1; ip -n "ember-$none" route 2>&1)" \
	ev 'ip -n "ember-$none" -d link show tap0 | grep -q "tun type tap" && [ -z "$(ip -n "ember-$none" -4 addr show dev tap0)" ] && [ -z "$(ip -n "ember-$none" route)" ] && [ -z "$(ip -o link show | grep -w "ve-$none")" ]'
check "fake: host-only: tap0 has 172.16.0.1/30, no other route" \
	"$(ip -n "ember-$host" addr 2>&1; ip -n "ember-$host" route 2>&1)" \
	ev '[ "$(ip -n "ember-$host" -4 -o addr show dev tap0 | awk "{print \$4}")" = 172.16.0.1/30 ] && [ "$(ip -n "ember-$host" route | wc -l)" = 1 ] && [ -z "$(ip -o link show | grep -w "ve-$host")" ]'
nat_ns=$(addr_of "ember-$nat" veth0)
nat_host=$(addr_of "" "ve-$nat")
check "fake: nat: a veth from the host's namespace into its own, a default route through it, a lease" \
	"ns $nat_ns, host $nat_host; $(ip -n "ember-$nat" route 2>&1; ls -l /run/ember/net/slots)" \
	ev 'case $nat_ns in 10.201.*) ;; *) false ;; esac && ip -n "ember-$nat" route | grep -q "^default via $nat_host dev veth0" && grep -qlx "$nat" /run/ember/net/slots/*'
iptables-save >"$TMP/ipt"
check "fake: nat: its iptables rules (input from its veth dropped, forwarding, masquerade), hooked" \
	"$(grep -E "EMBER|$nat" "$TMP/ipt")" \
	ev 'grep -q "^-A EMBER-INPUT -i ve-$nat .*ember-$nat -j DROP" "$TMP/ipt" && grep -q "^-A EMBER-FORWARD -d 10.201.0.0/16 -i ve-$nat .*-j DROP" "$TMP/ipt" && grep -q "^-A EMBER-POSTROUTING -s $nat_ns/32 .*-j MASQUERADE" "$TMP/ipt" && grep -qx -- "-A INPUT -j EMBER-INPUT" "$TMP/ipt" && grep -qx -- "-A FORWARD -j EMBER-FORWARD" "$TMP/ipt" && grep -qx -- "-A POSTROUTING -j EMBER-POSTROUTING" "$TMP/ipt" && ip netns exec "ember-$nat" iptables-save -t nat | grep -q "^-A POSTROUTING -s 172.16.0.0/30 -o veth0 -j MASQUERADE"'
"$E" ls >"$TMP/ls.out"
check "fake: ls shows each one's network (- without a device)" "$(cat "$TMP/ls.out")" \
	ev 'head -1 "$TMP/ls.out" | grep -q " NET " && grep -qE "^$bare .* - +tbare$" "$TMP/ls.out" && grep -qE "^$none .* none +tnet$" "$TMP/ls.out" && grep -qE "^$host .* host-only +tnet$" "$TMP/ls.out" && grep -qE "^$nat .* nat +tnet$" "$TMP/ls.out"'
ember_pid=$(info_of "$none" ember)
check "fake: ember runs in the sandbox's namespace" "ember $ember_pid" \
	ev '[ "$(readlink "/proc/$ember_pid/ns/net")" = "$(ip netns exec "ember-$none" readlink /proc/self/ns/net)" ] && [ "$(readlink "/proc/$ember_pid/ns/net")" != "$(readlink /proc/self/ns/net)" ]'

"$E" kill "$none" "$host" "$nat" "$bare" >/dev/null 2>"$TMP/k.err"
# (Other sandboxes on this host may hold the chains: then they stay.)
check "fake: kill removes namespace, tap, veth, rules and lease; the last one out removes the chains" \
	"$(show "$TMP/k.err"); $(net_of "$none"; net_of "$host"; net_of "$nat"; iptables-save | grep EMBER)" \
	ev 'net_gone "$none" && net_gone "$host" && net_gone "$nat" && { ! iptables-save | grep -q "^:EMBER-" || iptables-save | grep -q "^-A EMBER-"; }'

# Boots: the device and the guest's address on ember's command line.
b=$("$E" run --boot --net host-only 2>"$TMP/b.err")
ids+=("$b")
p=$(info_of "$b" ember)
check "fake: a boot with --net: ember gets --net tap=tap0 and the guest's ip= argument" \
	"$(show "$TMP/b.err"); $(tr '\0' ' ' <"/proc/$p/cmdline")" \
	ev 'tr "\0" " " <"/proc/$p/cmdline" | grep -q -- "--net tap=tap0,mac=06:00:ac:10:00:02,id=eth0" && tr "\0" " " <"/proc/$p/cmdline" | grep -q -- "--append ip=172.16.0.2::172.16.0.1:255.255.255.252::eth0:off"'
c=$("$E" run --boot 2>/dev/null)
ids+=("$c")
p2=$(info_of "$c" ember)
check "fake: a boot without --net has no device and no namespace" "$(tr '\0' ' ' <"/proc/$p2/cmdline")" \
	ev '! tr "\0" " " <"/proc/$p2/cmdline" | grep -q -- "--net" && net_gone "$c"'
"$E" kill "$b" "$c" >/dev/null 2>&1

# TTL, ember's SIGKILL, a dead supervisor.
t=$("$E" run --template tnet --net --ttl 2 2>/dev/null)
ids+=("$t")
check "fake: TTL expiry removes its network" "$(net_of "$t")" ev '[ -n "$t" ] && ! net_gone "$t" && wait_net_gone "$t" 20'
k=$("$E" run --template tnet --net 2>/dev/null)
ids+=("$k")
kill -9 "$(info_of "$k" ember)"
check "fake: ember SIGKILLed: its supervisor removes the network" "$(net_of "$k")" wait_net_gone "$k" 20
d=$("$E" run --template tnet --net 2>/dev/null)
ids+=("$d")
kill -9 "$(info_of "$d" supervisor)" "$(info_of "$d" ember)"
sleep 0.5
check "fake: supervisor and ember SIGKILLed: the network outlives them ..." "" ev '! net_gone "$d"'
"$E" ls >/dev/null 2>&1
check "... until the next ls cleans up" "$(net_of "$d")" wait_net_gone "$d" 5

# A park: no network while parked, made again by the resume.
pk=$("$E" run --template tnet --net 2>/dev/null)
ids+=("$pk")
"$E" pause --to-disk "$pk" >/dev/null 2>"$TMP/pk.err"
check "fake: parked: no network left" "$(show "$TMP/pk.err"); $(net_of "$pk")" \
	ev 'net_gone "$pk" && [ -d "$EMBER_STATE_DIR/$pk" ]'
"$E" resume "$pk" >/dev/null 2>"$TMP/rs.err"
check "fake: resumed: its nat network made again" "$(show "$TMP/rs.err")" \
	ev 'ip -n "ember-$pk" route | grep -q "^default via" && iptables-save | grep -q "ember-$pk"'
"$E" kill "$pk" >/dev/null 2>&1
check "fake: and killed: gone" "$(net_of "$pk")" net_gone "$pk"

# A step that fails: named, and nothing left of it.
mkdir -p "$TMP/bin"
printf '#!/bin/sh\necho "iptables-restore: pretend failure" >&2\nexit 1\n' >"$TMP/bin/iptables-restore"
chmod +x "$TMP/bin/iptables-restore"
PATH=$TMP/bin:$PATH "$E" run --template tnet --net 2>"$TMP/fail.err"
rc=$?
f=$(sed -n 's/.*the network of sandbox \([0-9a-f]\{12\}\): .*/\1/p' "$TMP/fail.err")
check "fake: a failed step is named (the tool's words too) and undone" \
	"exit $rc; $(show "$TMP/fail.err"); $(net_of "$f")" \
	ev '[ $rc = 1 ] && [ -n "$f" ] && grep -q "masquerading the guest in its namespace: iptables-restore: pretend failure" "$TMP/fail.err" && [ -z "$(ls "$EMBER_STATE_DIR" | grep -v templates)" ] && net_gone "$f"'

# Three at once: their own /30s, the chains hooked once.
for i in 1 2 3; do
	("$E" run --template tnet --net >"$TMP/c$i.id" 2>"$TMP/c$i.err") &
done
wait
c1=$(cat "$TMP/c1.id") c2=$(cat "$TMP/c2.id") c3=$(cat "$TMP/c3.id")
ids+=("$c1" "$c2" "$c3")
a1=$(addr_of "ember-$c1" veth0) a2=$(addr_of "ember-$c2" veth0) a3=$(addr_of "ember-$c3" veth0)
iptables-save >"$TMP/ipt3"
check "fake: three nat sandboxes started at once: three addresses, each chain hooked once" \
	"$a1 $a2 $a3; $(show "$TMP"/c?.err; grep EMBER "$TMP/ipt3")" \
	ev '[ -n "$a1" ] && [ -n "$a2" ] && [ -n "$a3" ] && [ "$(printf "%s\n" "$a1" "$a2" "$a3" | sort -u | wc -l)" = 3 ] && [ "$(grep -cx -- "-A INPUT -j EMBER-INPUT" "$TMP/ipt3")" = 1 ] && [ "$(grep -cx -- "-A POSTROUTING -j EMBER-POSTROUTING" "$TMP/ipt3")" = 1 ] && [ "$(grep -c "ember-$c2" "$TMP/ipt3")" = 6 ]'
"$E" kill "$c2" >/dev/null 2>&1
check "fake: one of them killed: its rules go, the others' stay" "" \
	ev 'net_gone "$c2" && iptables-save | grep -q "ember-$c1" && iptables-save | grep -q "ember-$c3"'
"$E" kill "$c1" "$c3" >/dev/null 2>&1

# ember-mcp: create_sandbox's network, list_sandboxes shows it, the
# session's end removes it (--kill-on-disconnect: by default a sandbox
# outlives the session).
: "${EMBER_MCP:=${E%/*}/ember-mcp-asan}"
if [ -x "$EMBER_MCP" ]; then
	"$PY" - "$EMBER_MCP" >"$TMP/mcp.out" 2>"$TMP/mcp.err" <<'EOF'
import json, subprocess, sys
p = subprocess.Popen([sys.argv[1], "--kill-on-disconnect"], stdin=subprocess.PIPE,
                     stdout=subprocess.PIPE)
def call(i, method, params):
    p.stdin.write((json.dumps({"jsonrpc": "2.0", "id": i, "method": method,
                               "params": params}) + "\n").encode())
    p.stdin.flush()
    return json.loads(p.stdout.readline())
call(1, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                       "clientInfo": {"name": "net.sh", "version": "1"}})
p.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
r = call(2, "tools/call", {"name": "create_sandbox", "arguments":
                           {"template": "tnet", "network": "host-only"}})
sc = r["result"].get("structuredContent") or {}
print("created", sc.get("sandbox_id"), sc.get("network"))
sys.stdout.flush()
print("addr", subprocess.run(["ip", "-n", "ember-%s" % sc.get("sandbox_id"),
                              "-4", "-o", "addr", "show", "dev", "tap0"],
                             capture_output=True, text=True).stdout.split()[3:4])
r = call(3, "tools/call", {"name": "list_sandboxes", "arguments": {}})
print("listed", [s.get("network") for s in
                 r["result"]["structuredContent"]["sandboxes"]])
r = call(4, "tools/call", {"name": "create_sandbox", "arguments":
                           {"template": "tbare", "network": "nat"}})
print("refused", r["result"].get("isError"),
      "no network device" in json.dumps(r["result"]["content"]))
p.stdin.close()
p.wait()
EOF
	mid=$(sed -n 's/^created \([0-9a-f]*\) .*/\1/p' "$TMP/mcp.out")
	check "ember-mcp: create_sandbox network host-only (its tap has the address), list_sandboxes shows it, a template without a device refused" \
		"$(show "$TMP/mcp.out" "$TMP/mcp.err")" \
		ev 'grep -qx "created $mid host-only" "$TMP/mcp.out" && grep -qx "addr \[.172.16.0.1/30.\]" "$TMP/mcp.out" && grep -qx "listed \[.host-only.\]" "$TMP/mcp.out" && grep -qx "refused True True" "$TMP/mcp.out"'
	check "ember-mcp: the session's end removes the sandbox's network" "$(net_of "$mid")" \
		ev '[ -n "$mid" ] && wait_net_gone "$mid" 20'
else
	echo "ok - # SKIP $EMBER_MCP is not built: ember-mcp's network"
fi
"$E" template rm tnet tbare >/dev/null 2>&1
touch "$TMP/supervisor.log"
check "fake: no sanitizer report (emberctl, supervisors)" "$(show "$TMP/supervisor.log")" \
	no_sanitizer_report "$TMP"/*.err "$TMP/supervisor.log"
unset EMBER_BIN EMBER_KERNEL EMBER_ROOTFS

# ---- part 2: real sandboxes --------------------------------------------------
need_kvm "networking of real sandboxes"
if [ ! -x "$EMBER" ] || ! "$EMBER" --help 2>&1 | grep -q -- '--net tap='; then
	echo "ok - # SKIP $EMBER has no --net: networking of real sandboxes"
	exit 0
fi
export EMBER_STATE_DIR=${SHARED_STATE_DIR:-$TMP/state}
export EMBER_BIN=$PWD/$EMBER EMBER_KERNEL=$PWD/$GUEST/vmlinux
export EMBER_ROOTFS=${NET_ROOTFS:-$PWD/$GUEST/rootfs.ext4}
rm -f "$TMP"/*.err "$TMP/supervisor.log"

timeout "$BOOT_TIMEOUT" "$E" template build default --if-missing --boot-timeout "$BOOT_TIMEOUT" \
	>/dev/null 2>"$TMP/build.err"
rc=$?
check "template default (with a network device) is there" "exit $rc; $(show "$TMP/build.err")" \
	ev '[ $rc = 0 ] && grep -qx net=1 "$EMBER_STATE_DIR/templates/default/info"'

# The guest's side: each OP HOST PORT [N] a TCP connection, one line each.
# get: the bytes and sha256 of all it reads; put N: sends N random bytes
# (made in user mode: getrandom(2) of 10 MiB takes minutes where the
# guest kernel is emulated), their sha256; line: the first line it reads;
# try: "open" or why not.
GUEST_PY='import hashlib, os, random, socket, sys
a = sys.argv[1:]
while a:
    op, host, port = a.pop(0), a.pop(0), int(a.pop(0))
    n = int(a.pop(0)) if op == "put" else 0
    try:
        s = socket.create_connection((host, port), timeout=3)
    except socket.timeout:
        print(op, host, port, "timeout"); continue
    except ConnectionRefusedError:
        print(op, host, port, "refused"); continue
    except OSError as e:
        print(op, host, port, "error", e.errno); continue
    s.settimeout(120)
    if op == "get":
        h, got = hashlib.sha256(), 0
        while True:
            b = s.recv(1 << 16)
            if not b:
                break
            h.update(b); got += len(b)
        print("get", got, h.hexdigest())
    elif op == "put":
        data = random.Random(os.urandom(16)).randbytes(n)
        s.sendall(data); s.shutdown(socket.SHUT_WR); s.recv(1)
        print("put", n, hashlib.sha256(data).hexdigest())
    elif op == "line":
        print("line", s.makefile().readline().strip())
    else:
        print(op, host, port, "open")
    s.close()'
# serve NS ADDR PORT ARGS...: net_peer.py serving in namespace NS ("": the
# host's), in the background, until it listens.
serve() {
	local ns=$1 out=$TMP/serve.$3.$RANDOM
	shift
	if [ -n "$ns" ]; then
		ip netns exec "$ns" "$PY" "$PEER" serve "$@" >"$out" 2>&1 &
	else
		"$PY" "$PEER" serve "$@" >"$out" 2>&1 &
	fi
	bg+=($!)
	for _ in $(seq 100); do grep -qs listening "$out" && return 0; sleep 0.05; done
	cat "$out" >&2
	return 1
}
gexec() { "$E" exec --timeout 300 "$@"; }
base=$((20000 + $$ % 20000))

# -- host-only -----------------------------------------------------------------
A=$("$E" run --net host-only --ttl 1800 2>"$TMP/a.err")
ids+=("$A")
check "a host-only sandbox restored from the template" "$(show "$TMP/a.err")" [ -n "$A" ]
[ -n "$A" ] || exit 0
ip netns exec "ember-$A" ping -c 2 -W 5 172.16.0.2 >"$TMP/ping" 2>&1
rc=$?
check "ping of the guest (172.16.0.2) from its namespace" "$(show "$TMP/ping")" [ $rc = 0 ]
head -c 10M /dev/urandom >"$TMP/10m"
sum_10m=$(sha256sum "$TMP/10m" | cut -d' ' -f1)
serve "ember-$A" 172.16.0.1 $base send "$TMP/10m"
serve "ember-$A" 172.16.0.1 $((base + 1)) sink "$TMP/up"
serve "" 127.0.0.1 $((base + 2)) hello
serve "" 0.0.0.0 $((base + 3)) hello
host_addr=$(ip -4 -o addr show scope global | awk '{ sub("/.*", "", $4); print $4; exit }')
gexec "$A" --python "$GUEST_PY" get 172.16.0.1 $base put 172.16.0.1 $((base + 1)) 10485760 \
	try 127.0.0.1 $((base + 2)) try "${host_addr:-192.0.2.2}" $((base + 3)) >"$TMP/a.out" 2>"$TMP/a.err"
rc=$?
check "10 MiB from the namespace's host side to the guest: same sha256" \
	"exit $rc; $(show "$TMP/a.out" "$TMP/a.err")" \
	grep -qx "get 10485760 $sum_10m" "$TMP/a.out"
check "10 MiB from the guest to the namespace's host side: same sha256" \
	"$(show "$TMP/a.out"); host: $(sha256sum "$TMP/up" 2>&1)" \
	ev 'grep -qx "put 10485760 $(sha256sum "$TMP/up" | cut -d" " -f1)" "$TMP/a.out" && [ "$(stat -c %s "$TMP/up")" = 10485760 ]'
check "host-only: the host's loopback and its own address are out of reach" "$(show "$TMP/a.out")" \
	ev 'grep -q "^try 127.0.0.1 " "$TMP/a.out" && ! grep -q " open$" "$TMP/a.out" && [ "$(grep -c "^try " "$TMP/a.out")" = 2 ]'

"$PY" "$PEER" index "$TMP/pypi" embernetprobe 4242
ip netns exec "ember-$A" "$PY" -m http.server --bind 172.16.0.1 --directory "$TMP/pypi" \
	$((base + 5)) >"$TMP/http.log" 2>&1 &
bg+=($!)
sleep 1
gexec "$A" -- python3 -m pip install --no-cache-dir \
	--index-url "http://172.16.0.1:$((base + 5))/simple/" embernetprobe >"$TMP/pip.out" 2>&1
rc=$?
out=$(gexec "$A" -- python3 -c 'import embernetprobe; print(embernetprobe.MAGIC)' 2>&1)
check "pip install of a wheel from an index on the namespace's host side; it imports" \
	"exit $rc; got $out; $(show "$TMP/pip.out" "$TMP/http.log")" \
	ev '[ $rc = 0 ] && [ "$out" = 4242 ]'

"$E" kill "$A" >/dev/null 2>&1
check "killed: no namespace, tap, veth or rule of the host-only sandbox" "$(net_of "$A")" \
	ev 'net_gone "$A" && ! ip -o link show | grep -qw tap0'

# -- nat ---------------------------------------------------------------------
# "The internet": a namespace behind a veth from the host's namespace.
inet=sbnet-inet-$$
ip netns add "$inet" &&
	ip link add "sbi$$" type veth peer name eth0 netns "$inet" &&
	ip addr add 198.51.100.1/30 dev "sbi$$" && ip link set "sbi$$" up &&
	ip -n "$inet" addr add 198.51.100.2/30 dev eth0 && ip -n "$inet" link set eth0 up &&
	ip -n "$inet" link set lo up
serve "$inet" 198.51.100.2 $((base + 6)) hello
B=$("$E" run --net --ttl 1800 2>"$TMP/b.err")
C=$("$E" run --net nat --ttl 1800 2>"$TMP/c.err")
ids+=("$B" "$C")
check "two nat sandboxes" "$(show "$TMP/b.err" "$TMP/c.err")" ev '[ -n "$B" ] && [ -n "$C" ]'
[ -n "$B" ] && [ -n "$C" ] || exit 0
b_host=$(addr_of "" "ve-$B")
c_ns=$(addr_of "ember-$C" veth0)
serve "ember-$C" 0.0.0.0 $((base + 7)) hello
ctl_host=$(ip netns exec "$inet" "$PY" "$PEER" try 198.51.100.1 $((base + 3)))
# (The host itself cannot reach into C: C's answers to it are dropped too.)
ctl_c=$(ip netns exec "ember-$C" "$PY" "$PEER" try "$c_ns" $((base + 7)))
check "controls: the host's server on 0.0.0.0 answers from elsewhere, the other sandbox's at its address" \
	"$ctl_host $ctl_c" ev '[ "$ctl_host" = open ] && [ "$ctl_c" = open ]'
gexec "$B" --python "$GUEST_PY" line 198.51.100.2 $((base + 6)) \
	try 127.0.0.1 $((base + 2)) try 198.51.100.1 $((base + 3)) \
	try "${host_addr:-192.0.2.2}" $((base + 3)) try "$b_host" $((base + 3)) \
	try "$c_ns" $((base + 7)) >"$TMP/b.out" 2>"$TMP/b.err"
rc=$?
check "nat: the guest reaches a server out in the world, as the host (masqueraded)" \
	"exit $rc; $(show "$TMP/b.out" "$TMP/b.err")" grep -qx "line hello 198.51.100.1" "$TMP/b.out"
check "nat: not the host's loopback, nor any of the host's own addresses (server on 0.0.0.0)" \
	"$(show "$TMP/b.out")" \
	ev '[ "$(grep -c "^try .* \(timeout\|refused\|error .*\)$" "$TMP/b.out")" = 5 ] && ! grep -q " open$" "$TMP/b.out" && grep -q "^try $c_ns " "$TMP/b.out"'
check "nat: not the other sandbox ($c_ns)" "$(show "$TMP/b.out")" \
	ev 'grep -q "^try $c_ns $((base + 7)) \(timeout\|refused\|error\)" "$TMP/b.out"'
gexec "$B" -- cat /etc/resolv.conf >"$TMP/resolv" 2>&1
want=$(sed -n 's/^nameserver[ \t]*\([0-9.]*\).*/\1/p' /etc/resolv.conf | grep -v '^127\.' | head -1)
check "nat: the guest's resolv.conf has the host's nameserver (${want:-none})" "$(show "$TMP/resolv")" \
	ev 'if [ -n "$want" ]; then grep -qx "nameserver $want" "$TMP/resolv"; else ! grep -q nameserver "$TMP/resolv"; fi'

"$E" ttl "$C" 1 >/dev/null
check "TTL expiry: no namespace, tap, veth or rule of that sandbox left" "$(net_of "$C")" \
	wait_net_gone "$C" 30
kill -9 "$(info_of "$B" ember)"
check "ember SIGKILLed: its supervisor removes the network" "$(net_of "$B")" wait_net_gone "$B" 30
D=$("$E" run --net 2>"$TMP/d.err")
ids+=("$D")
kill -9 "$(info_of "$D" supervisor)" "$(info_of "$D" ember)"
sleep 1
"$E" ls >/dev/null 2>&1
check "supervisor and ember SIGKILLed, then ls: the crash clean-up removes the network" \
	"$(show "$TMP/d.err"); $(net_of "$D")" ev '[ -n "$D" ] && wait_net_gone "$D" 10'
check "no iptables rule of any of them is left" "$(iptables-save | grep -i ember)" \
	ev '! iptables-save | grep -qE "ember-($A|$B|$C|$D)"'
touch "$TMP/supervisor.log"
check "no sanitizer report from emberctl" "$(show "$TMP/supervisor.log")" \
	no_sanitizer_report "$TMP"/*.err "$TMP/supervisor.log"
