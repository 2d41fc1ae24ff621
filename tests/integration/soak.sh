#!/usr/bin/env bash
# The short form of bench/soak (issue 26): three clients (one through
# ember-mcp's Streamable HTTP, two through emberctl) for 60 s (on until
# its 16 faults are in, up to 6 min) over at most four sandboxes at once
# (40 in all) from one template: create, exec, cp, pause/resume,
# park/resume, kill, with 16 seeded faults (SIGKILL of ember, of a
# supervisor, of an emberctl client in its command; a parked sandbox's
# info file, snapshot or disk overlay truncated or overwritten, then
# resumed).  tests/soak/soak.py
# drives it; it must end clean: every sandbox settled running, paused,
# parked or gone after each fault, every acknowledged file read back
# whole, and no process, open file, mount, tap, network namespace,
# cgroup, Unix socket or state directory entry more than before.  Its
# report follows as comment lines.  Nothing is left behind.
set -u
cd "$(dirname "$0")/../.."
. tests/lib.sh

: "${EMBERCTL:=build/emberctl-asan}"
: "${EMBER_MCP:=build/ember-mcp-asan}"
BOOT_TIMEOUT=${BOOT_TIMEOUT:-600}
export EMBER_STATE_DIR=$TMP/state
export EMBER_SUPERVISOR_LOG=$TMP/supervisor.log
E=$EMBERCTL
mcp_pid=
show() { for f in "$@"; do echo "#   $f:"; sed 's/^/#     /' "$f" | tail -15; done; }
ev() { eval "$*"; }
cleanup() {
	local p
	[ -z "$mcp_pid" ] || kill -9 "$mcp_pid" 2>/dev/null
	for p in $(state_dir_procs); do kill -9 "$p" 2>/dev/null; done
	rm -rf "$TMP"
}
trap cleanup EXIT

need_kvm "soak"
for b in "$E" "$EMBER_MCP" "$EMBER"; do
	if [ ! -x "$b" ]; then
		not_ok "soak: $b is built" "make all asan"
		exit 0
	fi
done
export EMBER_BIN=$EMBER EMBER_KERNEL=$GUEST/vmlinux EMBER_ROOTFS=$GUEST/rootfs.ext4
timeout "$BOOT_TIMEOUT" "$E" template build soak --no-interp --no-net \
	--boot-timeout "$BOOT_TIMEOUT" >"$TMP/build.out" 2>"$TMP/build.err"
rc=$?
check "soak: the template soak is built" "exit $rc; $(show "$TMP/build.out" "$TMP/build.err")" [ $rc = 0 ]
[ $rc = 0 ] || exit 0

export EMBER_MCP_TOKEN=soak-$RANDOM$RANDOM
"$EMBER_MCP" --http 127.0.0.1:0 --template soak 2>"$TMP/mcp.err" &
mcp_pid=$!
wait_for "$TMP/mcp.err" 'listening on' 30 "$mcp_pid"
url=$(sed -n 's/.*listening on \(http[^ ]*\).*/\1/p' "$TMP/mcp.err")
check "soak: ember-mcp listens" "$(show "$TMP/mcp.err")" [ -n "$url" ]
[ -n "$url" ] || exit 0

timeout 900 /usr/bin/python3 tests/soak/soak.py --emberctl "$E" --template soak \
	--mcp-url "$url" --mcp-token "$EMBER_MCP_TOKEN" --mcp-clients 1 \
	--seconds 60 --max-seconds 360 --clients 3 --live 4 --sandboxes 40 --faults 16 \
	--fault-gap 2 --seed "${SOAK_SEED:-26}" \
	--tmp "$TMP" >"$TMP/soak.out" 2>&1
rc=$?
sed 's/^/# /' "$TMP/soak.out"
check "soak: 60 s, 3 clients (1 through ember-mcp), 16 faults: clean (nothing leaked, nothing acknowledged lost, every sandbox accounted for)" \
	"exit $rc" ev '[ $rc = 0 ] && grep -q "^soak: clean" "$TMP/soak.out" && grep -q "faults injected: 16 " "$TMP/soak.out"'
kill "$mcp_pid" 2>/dev/null
wait "$mcp_pid" 2>/dev/null
mcp_pid=
"$E" template rm soak >/dev/null 2>"$TMP/trm.err"
rc=$?
check "soak: the template removed, no process left, no sanitizer report" \
	"template rm $rc; $(state_dir_procs); $(show "$TMP/trm.err" "$TMP/mcp.err" "$EMBER_SUPERVISOR_LOG")" \
	ev '[ $rc = 0 ] && [ -z "$(state_dir_procs)" ] && ! grep -qE "AddressSanitizer|runtime error|LeakSanitizer" "$TMP/mcp.err" "$EMBER_SUPERVISOR_LOG" "$TMP/soak.out"'
