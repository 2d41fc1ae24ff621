#!/usr/bin/env bash
# The control socket (--api-sock): Firecracker's endpoints with curl, the
# getting-started sequence booting the default guest, the same as a
# --config-file, pause and resume of a running Linux guest (its RAM
# unchanged while paused, its counter going on after), 1000 pause/resume
# cycles, a tiny guest polling a virtio-mmio register across pauses,
# metrics and logger files, and hostile clients (lying Content-Length,
# half-closed and abandoned connections, oversized bodies, 200 clients at
# once).  Every ember started here is stopped here.
set -u
cd "$(dirname "$0")/../.."
. tests/lib.sh

need_kvm "control socket tests"
K=$GUEST/vmlinux
I=$GUEST/initramfs.cpio
C="python3 tests/integration/api_client.py"
pids=()
cleanup() {
	local p
	for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done
	rm -rf "$TMP"
}
trap cleanup EXIT

# api SOCK METHOD PATH [BODY]: "STATUS BODY" on one line.
api() {
	local sock=$1 method=$2 path=$3 body=${4-}
	if [ -n "$body" ]; then
		curl -s --max-time 30 --unix-socket "$sock" -X "$method" \
			-H 'Content-Type: application/json' -d "$body" \
			-w '\n%{http_code}' "http://localhost$path" |
			awk '{ l[NR] = $0 } END { printf "%s", l[NR]; for (i = 1; i < NR; i++) printf " %s", l[i]; print "" }'
	else
		curl -s --max-time 30 --unix-socket "$sock" -X "$method" \
			-w '\n%{http_code}' "http://localhost$path" |
			awk '{ l[NR] = $0 } END { printf "%s", l[NR]; for (i = 1; i < NR; i++) printf " %s", l[i]; print "" }'
	fi
}
# expect_api NAME WANT-STATUS REGEX SOCK METHOD PATH [BODY]
expect_api() {
	local name=$1 want=$2 re=$3 got
	shift 3
	got=$(api "$@")
	if [[ "$got" == "$want"* ]] && grep -Eq -- "$re" <<<"$got"; then
		ok "$name"
	else
		not_ok "$name" "got: $got" "want: $want matching $re"
	fi
}
wait_sock() { for _ in $(seq 100); do [ -S "$1" ] && return 0; sleep 0.05; done; return 1; }
# The guest's counter (section 2): its last value on the console, and a
# check that it passes $last, every line 20000 more than the one before.
last_count() { grep '^count' "$TMP/c1.log" | tail -1 | tr -dc '0-9'; }
counts_on() {
	for _ in $(seq 100); do
		[ "$(last_count)" -gt "$last" ] && break
		sleep 0.1
	done
	check "$1" "$(grep '^count' "$TMP/c1.log" | tail -5 | tr '\n' ' ')" \
		sh -c "grep '^count' '$TMP/c1.log' | tr -dc '0-9\n' | awk 'NR > 1 && \$1 != p + 20000 { bad = 1 } { p = \$1 } END { exit bad || p <= $last }'"
}
b64url() { printf '%s' "$1" | base64 -w0 | tr '+/' '-_' | tr -d '='; }

# ---- 1. before the start: every endpoint's shape and refusals -----------
S=$TMP/api.sock
"$EMBER" --api-sock "$S" --id test-vm --console "file:$TMP/c1.log" \
	>"$TMP/e1.out" 2>"$TMP/e1.err" &
E1=$!
pids+=("$E1")
wait_sock "$S"
expect_api "GET / before the start: Not started, the id" 200 \
	'"id":"test-vm","state":"Not started"' "$S" GET /
expect_api "GET /version" 200 '"firecracker_version":"1\.[0-9]+\.[0-9]+"' "$S" GET /version
expect_api "GET /machine-config: Firecracker's defaults" 200 \
	'"vcpu_count":1,"mem_size_mib":128,"smt":false' "$S" GET /machine-config
expect_api "GET /vm/config before anything: every key, nulls" 200 \
	'"balloon":null,"drives":\[\],"boot-source":\{"kernel_image_path":"","initrd_path":null,"boot_args":null\}.*"vsock":null,"entropy":null' \
	"$S" GET /vm/config
expect_api "PUT /machine-config" 204 '' "$S" PUT /machine-config \
	'{"vcpu_count":1,"mem_size_mib":96}'
expect_api "PATCH /machine-config" 204 '' "$S" PATCH /machine-config '{"mem_size_mib":128}'
expect_api "PATCH /machine-config merged" 200 '"vcpu_count":1,"mem_size_mib":128' \
	"$S" GET /machine-config
expect_api "PUT /machine-config without mem_size_mib" 400 \
	'deserializing the json body.*missing field `mem_size_mib`' \
	"$S" PUT /machine-config '{"vcpu_count":1}'
expect_api "PUT /machine-config with an unknown field" 400 \
	'unknown field `foo`, expected one of' "$S" PUT /machine-config \
	'{"vcpu_count":1,"mem_size_mib":64,"foo":1}'
expect_api "PUT /machine-config with a wrong type" 400 \
	'invalid type: string, expected an unsigned integer' "$S" PUT /machine-config \
	'{"vcpu_count":"1","mem_size_mib":64}'
expect_api "PUT /machine-config vcpu_count 0" 400 'Machine config error' \
	"$S" PUT /machine-config '{"vcpu_count":0,"mem_size_mib":64}'
host_mib=$(awk '/^MemTotal:/ { print int($2 / 1024) + 1 }' /proc/meminfo)
if [ "$host_mib" -le 262144 ]; then
	expect_api "PUT /machine-config mem past the host" 400 \
		'Machine config error: more guest RAM than this host has' \
		"$S" PUT /machine-config "{\"vcpu_count\":1,\"mem_size_mib\":$host_mib}"
fi
expect_api "PUT /machine-config mem past ember's limit" 400 \
	'Machine config error: guest RAM must be a whole number of MiB from 16 to 262144' \
	"$S" PUT /machine-config '{"vcpu_count":1,"mem_size_mib":300000}'
expect_api "PATCH /machine-config {}" 400 'Empty PATCH request' \
	"$S" PATCH /machine-config '{}'
expect_api "malformed JSON" 400 'deserializing the json body of a request: .* at line 1' \
	"$S" PUT /machine-config '{"vcpu_count":1,'
expect_api "PUT with no body" 400 'Empty PUT request' "$S" PUT /machine-config
expect_api "an unknown path" 400 'Invalid request method and/or path: GET foo\.' \
	"$S" GET /foo/bar
expect_api "a wrong method" 400 'Invalid request method and/or path: DELETE machine-config' \
	"$S" DELETE /machine-config
expect_api "PATCH /boot-source (no such method)" 400 \
	'Invalid request method and/or path: PATCH boot-source' \
	"$S" PATCH /boot-source '{"kernel_image_path":"x"}'
expect_api "PUT /boot-source with a missing kernel" 400 \
	'Boot source error: kernel /nonexistent: No such file' \
	"$S" PUT /boot-source '{"kernel_image_path":"/nonexistent"}'
expect_api "a drive id with a dash" 400 'alphanumeric characters and underscores' \
	"$S" PUT /drives/a-b '{"drive_id":"a-b","path_on_host":"/x","is_root_device":false}'
expect_api "a drive whose body id differs" 400 'does not match the id from the body' \
	"$S" PUT /drives/a '{"drive_id":"b","path_on_host":"/x","is_root_device":false}'
expect_api "a drive on a missing image" 400 'Drive config error: drive /nonexistent.img' \
	"$S" PUT /drives/a '{"drive_id":"a","path_on_host":"/nonexistent.img","is_root_device":false}'
truncate -s 8M "$TMP/d1.img"
truncate -s 8M "$TMP/d2.img"
truncate -s 16M "$TMP/d3.img"
expect_api "PUT /drives/data" 204 '' "$S" PUT /drives/data \
	"{\"drive_id\":\"data\",\"path_on_host\":\"$TMP/d1.img\",\"is_root_device\":false}"
expect_api "PUT /drives/root_disk (root)" 204 '' "$S" PUT /drives/root_disk \
	"{\"drive_id\":\"root_disk\",\"path_on_host\":\"$TMP/d2.img\",\"is_root_device\":true,\"is_read_only\":true}"
expect_api "a second root drive is refused" 400 'A root block device already exists' \
	"$S" PUT /drives/other "{\"drive_id\":\"other\",\"path_on_host\":\"$TMP/d3.img\",\"is_root_device\":true}"
# Rate limiters (Firecracker's RateLimiter): refusals name the field.
drive_rl() { echo "{\"drive_id\":\"data\",\"path_on_host\":\"$TMP/d1.img\",\"is_root_device\":false,\"rate_limiter\":$1}"; }
expect_api "PUT /drives with a rate limiter" 204 '' "$S" PUT /drives/data \
	"$(drive_rl '{"bandwidth":{"size":10485760,"refill_time":100},"ops":{"size":1000,"one_time_burst":100,"refill_time":1000}}')"
expect_api "GET /vm/config shows the drive's rate limiter" 200 \
	'"rate_limiter":\{"bandwidth":\{"size":10485760,"one_time_burst":0,"refill_time":100\},"ops":\{"size":1000,"one_time_burst":100,"refill_time":1000\}\}' \
	"$S" GET /vm/config
expect_api "a rate limiter with an unknown bucket field" 400 \
	'deserializing the json body of a request: unknown field `burst`, expected one of `size`, `one_time_burst`, `refill_time` \(in rate_limiter\)' \
	"$S" PUT /drives/data "$(drive_rl '{"ops":{"size":1,"refill_time":1,"burst":5}}')"
expect_api "a rate limiter with an unknown field" 400 'unknown field `iops`, expected one of `bandwidth`, `ops`' \
	"$S" PUT /drives/data "$(drive_rl '{"iops":{"size":1,"refill_time":1}}')"
expect_api "a rate limiter with a negative size" 400 'invalid type: negative integer, expected an unsigned integer for `size`' \
	"$S" PUT /drives/data "$(drive_rl '{"bandwidth":{"size":-1,"refill_time":1}}')"
expect_api "a rate limiter with a string refill_time" 400 'invalid type: string, expected an unsigned integer for `refill_time`' \
	"$S" PUT /drives/data "$(drive_rl '{"bandwidth":{"size":1,"refill_time":"1"}}')"
expect_api "a rate limiter without refill_time" 400 'missing field `refill_time` \(in rate_limiter\)' \
	"$S" PUT /drives/data "$(drive_rl '{"ops":{"size":1}}')"
expect_api "a rate limiter past ember's limits" 400 'rate_limiter: bandwidth.size is out of range' \
	"$S" PUT /drives/data "$(drive_rl '{"bandwidth":{"size":9223372036854775807,"refill_time":1}}')"
expect_api "GET /vm/config: the refused limiters changed nothing" 200 \
	'"ops":\{"size":1000,"one_time_burst":100,"refill_time":1000\}' "$S" GET /vm/config
expect_api "PATCH /drives before the start" 400 'not supported before starting the microVM' \
	"$S" PATCH /drives/data "{\"drive_id\":\"data\",\"path_on_host\":\"$TMP/d2.img\"}"
expect_api "PATCH /vm before the start" 400 'not supported before starting the microVM' \
	"$S" PATCH /vm '{"state":"Paused"}'
expect_api "FlushMetrics before the start" 400 'not supported before starting the microVM' \
	"$S" PUT /actions '{"action_type":"FlushMetrics"}'
expect_api "an unknown action" 400 'unknown variant `Reboot`' \
	"$S" PUT /actions '{"action_type":"Reboot"}'
expect_api "InstanceStart without a kernel" 400 'Cannot start microvm without kernel configuration' \
	"$S" PUT /actions '{"action_type":"InstanceStart"}'
expect_api "PUT /network-interfaces" 204 '' \
	"$S" PUT /network-interfaces/eth0 '{"iface_id":"eth0","host_dev_name":"tap0","guest_mac":"06:00:ac:10:00:02"}'
expect_api "PUT /network-interfaces: a multicast MAC" 400 'not a unicast MAC address' \
	"$S" PUT /network-interfaces/eth1 '{"iface_id":"eth1","host_dev_name":"tap1","guest_mac":"01:00:5e:00:00:01"}'
expect_api "/snapshot/create before the start" 400 'not supported before starting the microVM' \
	"$S" PUT /snapshot/create '{"snapshot_path":"a","mem_file_path":"b"}'
expect_api "GET with a body" 400 'GET request cannot have a body' "$S" GET / '{}'
expect_api "PUT /vsock" 204 '' "$S" PUT /vsock "{\"guest_cid\":3,\"uds_path\":\"$TMP/v.sock\"}"
expect_api "PUT /entropy" 204 '' "$S" PUT /entropy '{}'
expect_api "PUT /metrics" 204 '' "$S" PUT /metrics "{\"metrics_path\":\"$TMP/metrics.json\"}"
expect_api "PUT /metrics twice" 400 'Reinitialization of metrics not allowed' \
	"$S" PUT /metrics "{\"metrics_path\":\"$TMP/metrics.json\"}"
expect_api "PUT /logger" 204 '' "$S" PUT /logger "{\"log_path\":\"$TMP/ember.log\",\"level\":\"Debug\"}"
# A start that fails once the devices exist (the kernel is no kernel)
# leaves nothing behind: twenty of them, then the real start works.
expect_api "PUT /boot-source with a file that is no kernel" 204 '' "$S" PUT /boot-source \
	'{"kernel_image_path":"/etc/hostname"}'
fails=0
for _ in $(seq 20); do
	api "$S" PUT /actions '{"action_type":"InstanceStart"}' |
		grep -q '^400 .*Start microvm error: kernel /etc/hostname: neither an x86_64 ELF' ||
		fails=$((fails + 1))
done
check "20 failed InstanceStarts, each with the builder's reason" "$fails failed otherwise" [ $fails = 0 ]
expect_api "GET / after failed starts: still Not started" 200 '"state":"Not started"' "$S" GET /
# Firecracker's getting-started sequence, then the command to run.
run_cmd='i=0; while :; do i=$((i+1)); if [ $((i % 20000)) = 0 ]; then echo "count $i"; fi; done'
expect_api "PUT /boot-source" 204 '' "$S" PUT /boot-source \
	"{\"kernel_image_path\":\"$K\",\"initrd_path\":\"$I\",\"boot_args\":\"ember.run=$(b64url "$run_cmd")\"}"
expect_api "GET /vm/config reports it all" 200 \
	"\"drives\":\\[\\{\"drive_id\":\"root_disk\",.*\"drive_id\":\"data\",.*\"path_on_host\":\"$TMP/d1.img\".*\"vsock\":\\{\"guest_cid\":3,.*\"entropy\":\\{\"rate_limiter\":null\\}" \
	"$S" GET /vm/config
expect_api "InstanceStart" 204 '' "$S" PUT /actions '{"action_type":"InstanceStart"}'
expect_api "GET / after the start: Running" 200 '"state":"Running"' "$S" GET /
expect_api "a pre-boot call after the start" 400 'not supported after starting the microVM' \
	"$S" PUT /machine-config '{"vcpu_count":1,"mem_size_mib":64}'
expect_api "a second InstanceStart" 400 'not supported after starting the microVM' \
	"$S" PUT /actions '{"action_type":"InstanceStart"}'

# ---- 2. pause and resume a running Linux guest -----------------------------
for _ in $(seq 600); do grep -q '^count' "$TMP/c1.log" 2>/dev/null && break; sleep 0.2; done
check "the guest counts" "$(tail -3 "$TMP/c1.log")" grep -q '^count' "$TMP/c1.log"
h1=$($C hash "$E1" 128)
sleep 1
h2=$($C hash "$E1" 128)
check "running: guest RAM changes within 1 s (the hash sees it)" "$h1 $h2" [ "$h1" != "$h2" ]
expect_api "PATCH /vm Paused" 204 '' "$S" PATCH /vm '{"state":"Paused"}'
expect_api "GET / while paused: Paused" 200 '"state":"Paused"' "$S" GET /
expect_api "PATCH /vm Paused again (idempotent)" 204 '' "$S" PATCH /vm '{"state":"Paused"}'
last=$(last_count)
h1=$($C hash "$E1" 128)
s1=$(stat -c %s "$TMP/c1.log")
sleep 1
h2=$($C hash "$E1" 128)
s2=$(stat -c %s "$TMP/c1.log")
check "paused: guest RAM hashed twice 1 s apart is identical" "$h1 $h2" [ "$h1" = "$h2" ]
check "paused: no console output" "$s1 -> $s2" [ "$s1" = "$s2" ]
expect_api "FlushMetrics while paused" 204 '' "$S" PUT /actions '{"action_type":"FlushMetrics"}'
# A host connection to the guest's agent waits, unanswered, while paused
# (vsock's sockets are not read), and gets through once resumed.
python3 - "$TMP/v.sock" "$S" "$E1" <<'EOF' >"$TMP/vpause.out" 2>&1 &
import socket, sys, time, subprocess
v, api, pid = sys.argv[1:4]
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.connect(v)
s.sendall(b"CONNECT 1024\n")
s.settimeout(1.5)
try:
    got = s.recv(64)
except socket.timeout:
    got = b""
print("paused:", got, flush=True)
h = subprocess.run(["python3", "tests/integration/api_client.py", "hash", pid,
                    "128"], capture_output=True, text=True).stdout.strip()
print("hash:", h, flush=True)
s.settimeout(60)
try:
    got = s.recv(64)
except OSError as e:
    got = repr(e).encode()
print("resumed:", got)
EOF
vp=$!
# Resumed once the client has waited its 1.5 s and hashed the RAM, however
# long that takes on this host.
wait_for "$TMP/vpause.out" '^hash:' 120 "$vp"
expect_api "PATCH /vm Resumed" 204 '' "$S" PATCH /vm '{"state":"Resumed"}'
wait "$vp"
check "paused: a vsock connection to the agent waits unanswered, guest RAM unchanged" \
	"$(cat "$TMP/vpause.out"); before: $h1" \
	sh -c "grep -qx \"paused: b''\" '$TMP/vpause.out' && grep -qx 'hash: $h1' '$TMP/vpause.out'"
check "resumed: the waiting vsock connection gets its OK" "$(cat "$TMP/vpause.out")" \
	grep -q "^resumed: b'OK " "$TMP/vpause.out"
counts_on "resumed: the counter goes on from where it was, without a gap"
out=$($C cycles "$S" 1000)
check "1000 pause/resume cycles, every call answered 204" "$out" [ "$out" = "cycles=1000 fails=0" ]
last=$(last_count)
counts_on "after 1000 cycles the guest still counts, in order"
expect_api "PATCH /drives: a new image for a running drive" 204 '' "$S" PATCH /drives/data \
	"{\"drive_id\":\"data\",\"path_on_host\":\"$TMP/d3.img\"}"
expect_api "GET /vm/config shows the new image" 200 "\"path_on_host\":\"$TMP/d3.img\"" \
	"$S" GET /vm/config
expect_api "PATCH /drives: a rate limiter at run time" 204 '' "$S" PATCH /drives/data \
	'{"drive_id":"data","rate_limiter":{"ops":{"size":5,"refill_time":1000}}}'
expect_api "GET /vm/config: the new ops bucket, the bandwidth one kept" 200 \
	'"rate_limiter":\{"bandwidth":\{"size":10485760,"one_time_burst":0,"refill_time":100\},"ops":\{"size":5,"one_time_burst":0,"refill_time":1000\}\}' \
	"$S" GET /vm/config
expect_api "PATCH /drives: size 0 turns the bandwidth bucket off, with a new image" 204 '' \
	"$S" PATCH /drives/data \
	"{\"drive_id\":\"data\",\"path_on_host\":\"$TMP/d1.img\",\"rate_limiter\":{\"bandwidth\":{\"size\":0,\"refill_time\":0}}}"
expect_api "GET /vm/config: bandwidth off, the image back" 200 \
	"\"path_on_host\":\"$TMP/d1.img\",\"rate_limiter\":\\{\"bandwidth\":null,\"ops\":\\{\"size\":5," \
	"$S" GET /vm/config
expect_api "PATCH /drives with nothing to patch" 400 \
	'Please specify at least one property to patch: path_on_host, rate_limiter' \
	"$S" PATCH /drives/data '{"drive_id":"data"}'
expect_api "PATCH /drives with a bad rate limiter" 400 'invalid type: negative integer' \
	"$S" PATCH /drives/data '{"drive_id":"data","rate_limiter":{"ops":{"size":5,"refill_time":-1}}}'
expect_api "PATCH /drives of an unknown drive" 400 'Device not found' "$S" PATCH /drives/nope \
	"{\"drive_id\":\"nope\",\"path_on_host\":\"$TMP/d3.img\"}"
expect_api "SendCtrlAltDel" 204 '' "$S" PUT /actions '{"action_type":"SendCtrlAltDel"}'
expect_api "FlushMetrics" 204 '' "$S" PUT /actions '{"action_type":"FlushMetrics"}'
out=$($C abuse "$S" 2>&1)
rc=$?
while IFS= read -r l; do
	case $l in
	ok\ *) ok "hostile client: ${l#ok }" ;;
	bad\ *) not_ok "hostile client: ${l#bad }" "$l" ;;
	esac
done <<<"$out"
# A client that died half-way must not pass for cases that never ran.
check "hostile clients: every case ran" "exit $rc; $(tail -5 <<<"$out")" \
	sh -c "[ $rc = 0 ] && [ \$(grep -c '^ok \|^bad ' <<'EOS'
$out
EOS
) = 12 ] && tail -1 <<'EOS' | grep -qx 'end of cases'
$out
EOS"
out=$($C crowd "$S" 200)
check "200 clients at once are all answered" "$out" [ "$out" = "clients=200 ok=200" ]
check "metrics: one JSON line per flush, with the counters" "$(head -c 600 "$TMP/metrics.json")" \
	python3 -c "
import json, sys
lines = [json.loads(l) for l in open('$TMP/metrics.json')]
assert len(lines) >= 3, len(lines)
last = lines[-1]
assert list(last)[0] == 'utc_timestamp_ms'
for k in ('vcpu', 'vmm', 'block_data', 'entropy', 'put_api_requests', 'patch_api_requests'):
    assert k in last, k
assert sum(l['vmm']['pauses'] for l in lines) >= 1001
assert sum(l['patch_api_requests'].get('vm_count', 0) for l in lines) >= 2000
"
check "logger: ember's log lines went to the file" "$(tail -3 "$TMP/ember.log")" \
	grep -q 'api: serving\|drive' "$TMP/ember.log"
kill -TERM "$E1"
wait "$E1"
rc=$?
check "SIGTERM stops it: 143, socket removed" "exit $rc" sh -c "[ $rc = 143 ] && [ ! -e '$S' ]"
check "no sanitizer report" "$(tail -5 "$TMP/e1.err")" \
	sh -c "! grep -qE 'AddressSanitizer|runtime error|LeakSanitizer' '$TMP/e1.err' '$TMP/ember.log'"

# ---- 3. a --config-file boots the same configuration ------------------------
cat >"$TMP/vm.json" <<EOF
{"boot-source":{"kernel_image_path":"$K","initrd_path":"$I",
  "boot_args":"ember.run=$(b64url 'echo from-the-file; exit 5')"},
 "drives":[{"drive_id":"data","path_on_host":"$TMP/d1.img","is_root_device":false,
   "rate_limiter":{"ops":{"size":200,"one_time_burst":50,"refill_time":100}}}],
 "machine-config":{"vcpu_count":1,"mem_size_mib":96},
 "network-interfaces":[], "a-key-from-the-future":{"x":1}}
EOF
timeout 300 "$EMBER" --config-file "$TMP/vm.json" --no-api >"$TMP/e2.out" 2>"$TMP/e2.err"
rc=$?
check "--config-file --no-api boots and runs: status 5" "exit $rc; $(tail -3 "$TMP/e2.err")" \
	sh -c "[ $rc = 5 ] && grep -q from-the-file '$TMP/e2.out'"
echo '{"boot-source":{"kernel_image_path":"'"$K"'"},"drives":[],"machine-config":{"vcpu_count":1,"mem_size_mib":64,"bogus":1}}' >"$TMP/bad.json"
timeout 30 "$EMBER" --config-file "$TMP/bad.json" 2>"$TMP/e3.err"
rc=$?
check "--config-file with an unknown field: one line naming it, 125" "$(cat "$TMP/e3.err")" \
	sh -c "[ $rc = 125 ] && [ \$(wc -l <'$TMP/e3.err') = 1 ] && grep -q 'machine-config.*unknown field .bogus.' '$TMP/e3.err'"

# ---- 4. a tiny guest reads MMIO registers across pauses ---------------------
S4=$TMP/tiny.sock
"$EMBER" --kernel build/guests/mmio_poll.elf --mem 32 --api-sock "$S4" \
	>"$TMP/e4.out" 2>"$TMP/e4.err" &
E4=$!
pids+=("$E4")
wait_sock "$S4"
out=$($C cycles-while "$S4" "$E4")
wait "$E4"
rc=$?
check "tiny guest: every MMIO read right across pauses (status 0)" \
	"exit $rc; $out; $(tail -3 "$TMP/e4.out")" sh -c "[ $rc = 0 ]"
check "tiny guest: it was paused and resumed many times" "$out" \
	sh -c "echo '$out' | awk -F'[= ]' '{ exit !(\$2 >= 20 && \$4 == 0) }'"
