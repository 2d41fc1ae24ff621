#!/bin/bash
# virtio-net over a tap, at the VMM level: a network namespace of the test's
# own holds the tap (172.16.0.1/30 on the host side, the guest 172.16.0.2
# from ip= on its command line) and the test's servers.  One boot of the
# busybox initramfs guest does: ping both ways, 10 MiB host -> guest over
# HTTP and 2 MiB guest -> host over TCP (sha256 at both ends), a burst of
# UDP frames larger than the rx ring (all of them reach the guest), then a
# pause/snapshot and a load onto another tap (network_overrides) in a second
# namespace, where the restored guest answers ping.
. "$(dirname "$0")/../lib.sh"

need_kvm "virtio-net tests"
if ! command -v ip >/dev/null; then
	echo "ok - # SKIP no ip(8): virtio-net tests"
	exit 0
fi
K=$GUEST/vmlinux
I=$GUEST/initramfs.cpio
NS=ember-vn-$$
NS2=ember-vn2-$$
PIDS=()
cleanup() {
	local p
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
	wait 2>/dev/null
	ip netns del "$NS" 2>/dev/null
	ip netns del "$NS2" 2>/dev/null
	rm -rf "$TMP"
}
trap cleanup EXIT

mkns() {
	ip netns add "$1" &&
		ip -n "$1" link set lo up &&
		ip -n "$1" tuntap add "$2" mode tap vnet_hdr &&
		ip -n "$1" addr add 172.16.0.1/30 dev "$2" &&
		ip -n "$1" link set "$2" up
}
if ! mkns "$NS" tap0 || ! mkns "$NS2" tapb; then
	not_ok "network namespaces and taps for the test" "ip netns/tuntap failed"
	exit 0
fi

# The host side's servers, in the namespace.
mkdir -p "$TMP/www"
head -c $((10 << 20)) /dev/urandom >"$TMP/www/down"
head -c $((512 << 10)) /dev/urandom >"$TMP/www/half"
DOWN_SUM=$(sha256sum <"$TMP/www/down" | cut -c1-64)
cat >"$TMP/servers.py" <<'EOF'
import hashlib, socket, sys, threading, time
from http.server import HTTPServer, SimpleHTTPRequestHandler
import functools
www, out = sys.argv[1], sys.argv[2]

def http():
    h = functools.partial(SimpleHTTPRequestHandler, directory=www)
    HTTPServer(("172.16.0.1", 8000), h).serve_forever()

def upload():
    # 9000: read to the end, answer the bytes' sha256, close.
    s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("172.16.0.1", 9000)); s.listen(1)
    while True:
        c, _ = s.accept()
        h, n = hashlib.sha256(), 0
        while True:
            b = c.recv(1 << 16)
            if not b:
                break
            h.update(b); n += len(b)
        open(out, "w").write("%d %s\n" % (n, h.hexdigest()))
        c.sendall(("%s\n" % h.hexdigest()).encode()); c.close()

def burst():
    # 9001: a connection asks for a burst of 900 UDP frames to the guest.
    s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("172.16.0.1", 9001)); s.listen(1)
    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    u.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4 << 20)
    while True:
        c, _ = s.accept()
        sent = 0
        for i in range(900):
            try:
                u.sendto(b"x" * 1000, ("172.16.0.2", 7777)); sent += 1
            except OSError:
                pass
        c.sendall(b"sent %d\n" % sent); c.close()

for f in (http, upload, burst):
    threading.Thread(target=f, daemon=True).start()
time.sleep(600)
EOF
ip netns exec "$NS" python3 "$TMP/servers.py" "$TMP/www" "$TMP/up.txt" \
	>"$TMP/servers.log" 2>&1 &
PIDS+=($!)
# The guest must be unable to answer 9000's port in time otherwise.
for _ in $(seq 50); do
	ip netns exec "$NS" python3 -c 'import socket; socket.create_connection(("172.16.0.1", 8000), 1)' \
		2>/dev/null && break
	sleep 0.1
done

# The guest's side.  Each step prints one line the checks below read.
cat >"$TMP/guest.sh" <<'EOF'
rxp() { sed -n 's/^ *eth0: *[0-9]* *\([0-9]*\) .*/\1/p' /proc/net/dev; }
ping -c 2 -W 5 172.16.0.1 >/dev/null && echo "ping-host: ok"
wget -q -O /tmp/f http://172.16.0.1:8000/down
echo "down: $(sha256sum /tmp/f | cut -c1-64)"
# 2 MiB of it back the other way: busybox nc writes 1 KiB at a time, each
# a frame (random bytes made in the guest, or more frames, cost minutes
# where the guest kernel is emulated; the 10 MiB each way with TSO are
# tests/integration/net.sh's, through a sandbox's Python).
head -c 2097152 /tmp/f >/tmp/u
echo "up-remote: $(nc 172.16.0.1 9000 </tmp/u)"
r0=$(rxp)
echo "burst: $(nc 172.16.0.1 9001 </dev/null)"
sleep 2
echo "burst-rx: $(( $(rxp) - r0 ))"
# The host sets rate limiters, then makes /go: each transfer must take
# at least the time its limiter allows.
until wget -q -O /dev/null http://172.16.0.1:8000/go 2>/dev/null; do sleep 1; done
t0=$(date +%s); wget -q -O /dev/null http://172.16.0.1:8000/half; t1=$(date +%s)
echo "rx-limited: $((t1 - t0))"
head -c 65536 /tmp/f >/tmp/q
t0=$(date +%s); nc 172.16.0.1 9000 </tmp/q >/dev/null; t1=$(date +%s)
echo "tx-limited: $((t1 - t0))"
echo "guest-ready"
sleep 600
EOF
API=$TMP/api.sock
ip netns exec "$NS" "$EMBER" --api-sock "$API" --kernel "$K" --initrd "$I" \
	--mem 128 --console "file:$TMP/console" --net tap=tap0,mac=06:00:ac:10:00:02,id=eth0 \
	--append "ip=172.16.0.2::172.16.0.1:255.255.255.252::eth0:off" \
	--run "$(cat "$TMP/guest.sh")" >"$TMP/ember.out" 2>"$TMP/ember.err" &
EPID=$!
PIDS+=($EPID)
wait_for "$TMP/console" burst-rx 180 "$EPID"
# 100 KiB/s in, 16 KiB/s out (PVM's own rates are about 500 and 60 KiB/s).
lim=$(curl -s --unix-socket "$API" -X PATCH -w '%{http_code}' -d '{"iface_id":"eth0",
	"rx_rate_limiter":{"bandwidth":{"size":10240,"refill_time":100}},
	"tx_rate_limiter":{"bandwidth":{"size":1638,"refill_time":100}}}' \
	http://x/network-interfaces/eth0)
check "PATCH /network-interfaces sets rate limiters at run time" "$lim" test "$lim" = 204
check "GET /vm/config shows them" "$(curl -s --unix-socket "$API" http://x/vm/config)" \
	sh -c "curl -s --unix-socket '$API' http://x/vm/config | grep -q '\"rx_rate_limiter\":{\"bandwidth\":{\"size\":10240,'"
: >"$TMP/www/go"
wait_for "$TMP/console" guest-ready 180 "$EPID"
line() { sed -n "s/^$1: //p" "$TMP/console" | tr -d '\r' | head -1; }
check "the guest reaches the tap's host side (ping)" "$(tail -5 "$TMP/console" 2>&1)" \
	test "$(line ping-host)" = ok
check "the host side reaches the guest (ping 172.16.0.2)" "no reply" \
	ip netns exec "$NS" ping -q -c 2 -W 5 172.16.0.2
check "10 MiB host -> guest arrive intact (sha256)" "guest: $(line down) host: $DOWN_SUM" \
	test "$(line down)" = "$DOWN_SUM"
UP_SUM=$(head -c 2097152 "$TMP/www/down" | sha256sum | cut -c1-64)
check "2 MiB guest -> host arrive intact (sha256)" \
	"host got: $(line up-remote) ($(cat "$TMP/up.txt" 2>/dev/null)), sent: $UP_SUM" \
	test "$(line up-remote)" = "$UP_SUM"
burst_rx=$(line burst-rx)
check "a burst of 900 frames (the rx ring holds 256) all reach the guest" \
	"$(line burst), guest counted ${burst_rx:-nothing}" \
	sh -c "[ '$(line burst)' = 'sent 900' ] && [ '${burst_rx:-0}' -ge 900 ]"
rxl=$(line rx-limited)
check "the receive limiter holds 512 KiB to 100 KiB/s (took ${rxl:-?} s, at least 3)" \
	"$(tail -3 "$TMP/console")" sh -c "[ '${rxl:-0}' -ge 3 ]"
txl=$(line tx-limited)
check "the transmit limiter holds 64 KiB to 16 KiB/s (took ${txl:-?} s, at least 2)" \
	"$(tail -3 "$TMP/console")" sh -c "[ '${txl:-0}' -ge 2 ]"
check "GET /vm/config shows the interface" "$(curl -s --unix-socket "$API" http://x/vm/config)" \
	sh -c "curl -s --unix-socket '$API' http://x/vm/config | grep -q '\"host_dev_name\":\"tap0\",\"guest_mac\":\"06:00:ac:10:00:02\"'"

# Pause, snapshot, and load the snapshot onto tap "tapb" in a second
# namespace (network_overrides): the restored guest answers ping there.
api() { curl -s --unix-socket "$1" -X "$2" -H 'Content-Type: application/json' \
	-d "$4" -o "$TMP/api.out" -w '%{http_code}' "http://x$3"; }
st=$(api "$API" PATCH /vm '{"state":"Paused"}')
st2=$(api "$API" PUT /snapshot/create \
	"{\"snapshot_path\":\"$TMP/snap\",\"mem_file_path\":\"$TMP/mem\"}")
check "pause and snapshot a VM with a network interface" "$st $st2 $(cat "$TMP/api.out")" \
	test "$st$st2" = 204204
kill "$EPID"
wait "$EPID" 2>/dev/null
API2=$TMP/api2.sock
ip netns exec "$NS2" "$EMBER" --api-sock "$API2" --console "file:$TMP/console2" \
	>"$TMP/ember2.out" 2>"$TMP/ember2.err" &
EPID2=$!
PIDS+=($EPID2)
for _ in $(seq 100); do [ -S "$API2" ] && break; sleep 0.05; done
st=$(api "$API2" PUT /snapshot/load "{\"snapshot_path\":\"$TMP/snap\",\
\"mem_backend\":{\"backend_type\":\"File\",\"backend_path\":\"$TMP/mem\"},\
\"network_overrides\":[{\"iface_id\":\"eth9\",\"host_dev_name\":\"tapb\"}]}")
check "network_overrides naming no interface of the snapshot: refused" "$st $(cat "$TMP/api.out")" \
	sh -c "[ $st = 400 ] && grep -q 'the snapshot has no network interface eth9' '$TMP/api.out'"
st=$(api "$API2" PUT /snapshot/load "{\"snapshot_path\":\"$TMP/snap\",\
\"mem_backend\":{\"backend_type\":\"File\",\"backend_path\":\"$TMP/mem\"},\
\"network_overrides\":[{\"iface_id\":\"eth0\",\"host_dev_name\":\"tapb\"}],\"resume_vm\":true}")
check "load onto another tap (network_overrides)" "$st $(cat "$TMP/api.out")" test "$st" = 204
check "the restored guest answers ping on the new tap" "no reply" \
	ip netns exec "$NS2" ping -q -c 3 -W 10 172.16.0.2
check "GET /vm/config shows the override" "$(curl -s --unix-socket "$API2" http://x/vm/config)" \
	sh -c "curl -s --unix-socket '$API2' http://x/vm/config | grep -q '\"host_dev_name\":\"tapb\"'"
kill "$EPID2"
wait "$EPID2" 2>/dev/null
check "no sanitizer report" "$(cat "$TMP/ember.err" "$TMP/ember2.err" | tail -5)" \
	sh -c "! grep -qE 'AddressSanitizer|runtime error|LeakSanitizer' '$TMP/ember.err' '$TMP/ember2.err'"

# A tap that does not exist, in a namespace where ember may not create it:
# the start fails naming the tap (here ember is root, so it would create
# one: use a name that is taken by a non-tap device instead).
out=$(ip netns exec "$NS" timeout 60 "$EMBER" --kernel "$K" --initrd "$I" --mem 64 \
	--console none --net tap=lo --run true 2>&1)
check "a name that is no tap: refused, naming it" "$out" \
	sh -c "echo \"\$1\" | grep -q 'tap lo: TUNSETIFF'" _ "$out"
out=$("$EMBER" --kernel "$K" --net tap=x,mac=01:00:00:00:00:01 2>&1)
check "--net with a multicast MAC: refused" "$out" \
	sh -c "echo \"\$1\" | grep -q -- '--net: unknown or bad part .mac=01'" _ "$out"
