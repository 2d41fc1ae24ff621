#!/bin/bash
# The whole of containment at once: ember (the release build) under
# ember-jailer as uid:gid 1000:1000, in a cgroup with a memory limit, in a
# network namespace of the test's with a persistent tap owned by uid 1000,
# boots the default kernel and rootfs; the guest's Python sends 10 MiB to a
# TCP server on the namespace's host side and receives 10 MiB from
# another, each checked by sha256 on the receiving side; meanwhile /proc
# shows every ember thread with no capability, no_new_privs and seccomp
# mode 2, in the jail's root, mount namespace and cgroup.
. "$(dirname "$0")/../lib.sh"

JAILER=${JAILER:-build/ember-jailer}
REL=${EMBER_RELEASE:-build/ember}
need_kvm "jailed ember with a network"
if [ "$(id -u)" != 0 ] || [ ! -x "$JAILER" ] || [ ! -x "$REL" ]; then
	echo "ok - # SKIP needs root, $JAILER and $REL"
	exit 0
fi
ID=jn$$
NS=ember-jn-$$
BASE=$TMP/jails
ROOT=$BASE/${REL##*/}/$ID/root
GUESTDIR=$(cd "$GUEST" && pwd)
PIDS=()
cleanup() {
	local p
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
	wait 2>/dev/null
	"$JAILER" --cleanup --id "$ID" --exec-file "$REL" --chroot-base-dir "$BASE" \
		>/dev/null 2>&1
	ip netns del "$NS" 2>/dev/null
	rm -rf "$TMP"
}
trap cleanup EXIT

ip netns add "$NS" && ip -n "$NS" link set lo up &&
	ip -n "$NS" tuntap add tap0 mode tap vnet_hdr user 1000 &&
	ip -n "$NS" addr add 172.16.0.1/30 dev tap0 && ip -n "$NS" link set tap0 up ||
	{ not_ok "a network namespace with a tap owned by uid 1000" "ip failed"; exit 0; }

# 9000 hashes what arrives and answers the hash; 9001 sends 10 MiB of a
# seeded generator's bytes, which the guest makes too for its upload.
cat >"$TMP/servers.py" <<'EOF'
import hashlib, random, socket, threading, time
data = random.Random(7).randbytes(10 << 20)
def listener(port):
    s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("172.16.0.1", port)); s.listen(2); return s
def up():
    s = listener(9000)
    while True:
        c, _ = s.accept(); h = hashlib.sha256(); n = 0
        while True:
            b = c.recv(1 << 16)
            if not b: break
            h.update(b); n += len(b)
        c.sendall(("%d %s\n" % (n, h.hexdigest())).encode()); c.close()
def down():
    s = listener(9001)
    while True:
        c, _ = s.accept(); c.sendall(data); c.close()
for f in (up, down):
    threading.Thread(target=f, daemon=True).start()
time.sleep(900)
EOF
ip netns exec "$NS" python3 "$TMP/servers.py" >"$TMP/servers.log" 2>&1 &
PIDS+=($!)
SUM=$(python3 -c 'import hashlib, random; print(hashlib.sha256(random.Random(7).randbytes(10 << 20)).hexdigest())')

GUEST_PY='import hashlib, random, socket, time
d = random.Random(7).randbytes(10 << 20)
s = socket.create_connection(("172.16.0.1", 9000)); s.sendall(d); s.shutdown(socket.SHUT_WR)
print("up:", s.makefile().readline().strip(), flush=True)
s = socket.create_connection(("172.16.0.1", 9001)); h = hashlib.sha256()
while True:
    b = s.recv(1 << 16)
    if not b: break
    h.update(b)
print("down:", h.hexdigest(), flush=True)
print("guest-ready", flush=True)
time.sleep(900)'

if [ -d /sys/fs/cgroup/memory ]; then
	CG="--cgroup-version 1 --cgroup memory.limit_in_bytes=536870912"
else
	CG="--cgroup-version 2 --cgroup memory.max=536870912"
fi
# ember is linked dynamically: the directories of what ldd lists.
libs=()
for d in $(ldd "$REL" | grep -o '/[^ ]*' | xargs -n1 dirname | sort -u); do
	libs+=(--ro-bind "$d")
done
# shellcheck disable=SC2086
"$JAILER" --id "$ID" --exec-file "$REL" --uid 1000 --gid 1000 \
	--chroot-base-dir "$BASE" --netns "/var/run/netns/$NS" $CG \
	"${libs[@]}" --ro-bind "$GUESTDIR" -- \
	--pvm on --kernel "$GUESTDIR/vmlinux" --drive "path=$GUESTDIR/rootfs.ext4,root,ro" \
	--mem 256 --console file:/console --net tap=tap0 \
	--append "ip=172.16.0.2::172.16.0.1:255.255.255.252::eth0:off" \
	--run "python3 -c '$GUEST_PY'" >"$TMP/jail.out" 2>"$TMP/jail.err" &
EPID=$!
PIDS+=($EPID)
wait_for "$ROOT/console" guest-ready 300 "$EPID"
line() { tr -d '\r' <"$ROOT/console" 2>/dev/null | sed -n "s/^$1: //p" | head -1; }
check "jailed: the guest's 10 MiB reach the host side intact" \
	"got '$(line up)', want '$((10 << 20)) $SUM'; $(tail -3 "$TMP/jail.err")" \
	test "$(line up)" = "$((10 << 20)) $SUM"
check "jailed: 10 MiB from the host side reach the guest intact" \
	"got '$(line down)', want '$SUM'" test "$(line down)" = "$SUM"

st=/proc/$EPID/status
threads_ok() {
	local t n=0
	for t in /proc/"$EPID"/task/*; do
		grep -q '^Seccomp:[[:space:]]*2$' "$t/status" || return 1
		grep -q '^CapEff:[[:space:]]*0*$' "$t/status" || return 1
		grep -q '^NoNewPrivs:[[:space:]]*1$' "$t/status" || return 1
		n=$((n + 1))
	done
	[ "$n" -ge 3 ] # the main, event and vCPU threads at least
}
check "jailed: uid and gid 1000 (real, effective, saved, fs)" "$(grep -E '^(Uid|Gid)' "$st" 2>&1)" \
	sh -c "grep -q '^Uid:[[:space:]]*1000[[:space:]]*1000[[:space:]]*1000[[:space:]]*1000$' '$st' &&
		grep -q '^Gid:[[:space:]]*1000[[:space:]]*1000[[:space:]]*1000[[:space:]]*1000$' '$st'"
check "jailed: no capability in any set" "$(grep -E '^Cap' "$st" 2>&1)" \
	sh -c "[ \$(grep -cE '^Cap(Inh|Prm|Eff|Bnd|Amb):[[:space:]]*0000000000000000$' '$st') = 5 ]"
check "jailed: every ember thread has seccomp mode 2, CapEff 0, NoNewPrivs 1" \
	"$(grep -H -E '^(Seccomp|NoNewPrivs|CapEff):' /proc/"$EPID"/task/*/status 2>&1 | head -12)" \
	threads_ok
# After pivot_root the link reads "/": compare the directories themselves.
r1=$(stat -L -c %d:%i /proc/$EPID/root/ 2>&1)
r2=$(stat -c %d:%i "$ROOT" 2>&1)
check "jailed: its root is the jail" "$r1 vs $r2" sh -c "[ -n '$r2' ] && [ '$r1' = '$r2' ]"
mnt=$(readlink /proc/$EPID/ns/mnt)
check "jailed: a mount namespace of its own" "'$mnt'" \
	sh -c "[ -n '$mnt' ] && [ '$mnt' != '$(readlink /proc/self/ns/mnt)' ]"
check "jailed: the test's network namespace" "$(readlink /proc/$EPID/ns/net)" \
	test "$(readlink /proc/$EPID/ns/net)" = "$(ip netns exec "$NS" readlink /proc/self/ns/net)"
check "jailed: in the cgroup ember/$ID" "$(cat /proc/$EPID/cgroup 2>&1)" \
	grep -q "/ember/$ID\$" /proc/$EPID/cgroup
kill "$EPID" 2>/dev/null
wait "$EPID" 2>/dev/null
out=$("$JAILER" --cleanup --id "$ID" --exec-file "$REL" --chroot-base-dir "$BASE" 2>&1)
check "jailed: --cleanup removes the jail" "$out" test ! -e "$BASE/${REL##*/}/$ID"
