#!/usr/bin/env bash
# ember-mcp end to end with the official MCP TypeScript SDK's client
# (tests/mcp: @modelcontextprotocol/sdk at the version its package-lock
# pins, installed here with `npm ci`).  First tests/mcp/owner_test.mjs:
# sandboxes belong to the principal (the local user over stdio, the bearer
# token over HTTP), not the session: created and parked in one ember-mcp
# process, resumed and used from a second; created and paused in one HTTP
# session, used from a new session and from a restarted server with the
# same token; refused to another token and across stdio and HTTP.  Then
# tests/mcp/client_test.mjs runs
# once over stdio and once over Streamable HTTP (it starts ember-mcp
# itself: over HTTP on 127.0.0.1 with a token file) and prints its own
# ok / not ok lines: tools, sandboxes, Python and JavaScript state, pandas,
# charts as PNG, errors, timeouts, files, commands, users (root by
# default, `user` on request: its HOME, files it owns), ten calls at once,
# pause and resume, kill, TTL, protocol errors, the token, --confirm with
# elicitation, and the clean-up when a client goes away (ember-mcp
# --kill-on-disconnect).  The template
# "default" is built first (one boot, ~10-30 s where guest kernel mode
# is emulated) in a private state directory ($TMP/state, or
# $MCP_STATE_DIR, kept with its templates, to reuse one).  At the end no
# process of the state directory may be left, and everything is removed.
set -u
cd "$(dirname "$0")/../.."
. tests/lib.sh

: "${EMBERCTL:=build/emberctl-asan}"
BOOT_TIMEOUT=${BOOT_TIMEOUT:-600}
# The whole SDK test, per transport: a hang fails rather than stalls.
MCP_TEST_TIMEOUT=${MCP_TEST_TIMEOUT:-1200}
if [ -z "${EMBER_MCP:-}" ]; then
	for EMBER_MCP in build/ember-mcp-asan build/ember-mcp build-mcp/ember-mcp; do
		[ -x "$EMBER_MCP" ] && break
	done
fi
export EMBER_MCP=$(realpath "$EMBER_MCP")
export EMBER_STATE_DIR=${MCP_STATE_DIR:-$TMP/state}
export EMBER_SUPERVISOR_LOG=$TMP/supervisor.log
export MCP_SERVER_LOG=$TMP/ember-mcp.log
E=$EMBERCTL

need_kvm "ember-mcp with the MCP SDK"
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
	echo "ok - # SKIP no node and npm (tests/install-deps.sh installs them): ember-mcp with the MCP SDK"
	exit 0
fi
if [ ! -x "$E" ] || [ ! -x "$EMBER" ] || [ ! -x "$EMBER_MCP" ]; then
	not_ok "mcp: $E, $EMBER and $EMBER_MCP are built" "make all asan"
	exit 0
fi
export EMBER_BIN=$PWD/$EMBER EMBER_KERNEL=$PWD/$GUEST/vmlinux EMBER_ROOTFS=$PWD/$GUEST/rootfs.ext4

sandboxes() { ls "$EMBER_STATE_DIR" 2>/dev/null | grep -E '^[0-9a-f]{12}$'; }
cleanup() {
	local p ids
	for p in $(state_dir_procs); do kill -9 "$p" 2>/dev/null; done
	if [ -n "${MCP_STATE_DIR:-}" ]; then
		ids=$(sandboxes)
		[ -z "$ids" ] || "$E" kill $ids >/dev/null 2>&1
	fi
	rm -rf "$TMP"
}
trap cleanup EXIT
show() { for f in "$@"; do echo "#   $f:"; sed 's/^/#     /' "$f" | tail -15; done; }
no_sanitizer_report() { ! grep -qE 'AddressSanitizer|runtime error|LeakSanitizer' "$@"; }
now_ms() { echo $(($(date +%s%N) / 1000000)); }

# ---- the template, the SDK -----------------------------------------------------
t0=$(now_ms)
timeout "$BOOT_TIMEOUT" "$E" template build default --if-missing --boot-timeout "$BOOT_TIMEOUT" \
	>"$TMP/build.out" 2>"$TMP/build.err"
rc=$?
check "mcp: the template default is there ($(($(now_ms) - t0)) ms)" \
	"exit $rc; $(show "$TMP/build.out" "$TMP/build.err")" [ $rc = 0 ]
[ $rc = 0 ] || exit 0
npm_install tests/mcp >"$TMP/npm.log" 2>&1
rc=$?
check "mcp: npm ci installs the pinned MCP SDK ($(node -p 'require("./tests/mcp/package.json").dependencies["@modelcontextprotocol/sdk"]' 2>/dev/null))" \
	"exit $rc; $(show "$TMP/npm.log")" [ $rc = 0 ]
[ $rc = 0 ] || exit 0

# ---- sandboxes that outlive the session: their principal's -----------------------
ev() { eval "$*"; }
timeout -k 10 "$MCP_TEST_TIMEOUT" node tests/mcp/owner_test.mjs --server "$EMBER_MCP" \
	>"$TMP/owner.out" 2>"$TMP/owner.err"
rc=$?
cat "$TMP/owner.out"
if [ $rc = 124 ] || [ $rc = 137 ]; then
	not_ok "mcp owner: the SDK test ends within $MCP_TEST_TIMEOUT s" "it was killed"
elif ! grep -q '^ok - ' "$TMP/owner.out" || { [ $rc != 0 ] && ! grep -q '^not ok - ' "$TMP/owner.out"; }; then
	not_ok "mcp owner: the SDK test runs" "exit $rc; $(show "$TMP/owner.err")"
fi
sleep 1
left=$(state_dir_procs | tr '\n' ' ')
ids=$(sandboxes | tr '\n' ' ')
check "mcp owner: once the test has killed its sandboxes and stopped its servers, nothing of the state directory is left" \
	"processes: $left; sandboxes: $ids" ev '[ -z "$left" ] && [ -z "$ids" ]'
for p in $left; do kill -9 "$p" 2>/dev/null; done
[ -z "$ids" ] || "$E" kill $ids >/dev/null 2>&1

# ---- the SDK client, both transports -----------------------------------------------
for transport in stdio http; do
	timeout -k 10 "$MCP_TEST_TIMEOUT" node tests/mcp/client_test.mjs "$transport" \
		--server "$EMBER_MCP" >"$TMP/$transport.out" 2>"$TMP/$transport.err"
	rc=$?
	cat "$TMP/$transport.out"
	if [ $rc = 124 ] || [ $rc = 137 ]; then
		not_ok "mcp $transport: the SDK test ends within $MCP_TEST_TIMEOUT s" "it was killed"
	elif ! grep -q '^ok - ' "$TMP/$transport.out" || { [ $rc != 0 ] && ! grep -q '^not ok - ' "$TMP/$transport.out"; }; then
		not_ok "mcp $transport: the SDK test runs" "exit $rc; $(show "$TMP/$transport.err")"
	fi
	# Whatever the test did, none of its sandboxes outlives it.
	sleep 1
	left=$(state_dir_procs | tr '\n' ' ')
	ids=$(sandboxes | tr '\n' ' ')
	check "mcp $transport: once the test and its servers are gone, no sandbox and no process of the state directory is left" \
		"processes: $left; sandboxes: $ids" ev '[ -z "$left" ] && [ -z "$ids" ]'
	for p in $left; do kill -9 "$p" 2>/dev/null; done
	[ -z "$ids" ] || "$E" kill $ids >/dev/null 2>&1
done

# ---- the end ----------------------------------------------------------------------
touch "$TMP/supervisor.log" "$MCP_SERVER_LOG"
check "mcp: no sanitizer report (ember-mcp, supervisors)" \
	"$(grep -m5 -hE 'AddressSanitizer|runtime error|LeakSanitizer' "$MCP_SERVER_LOG" "$TMP/supervisor.log")" \
	no_sanitizer_report "$MCP_SERVER_LOG" "$TMP/supervisor.log"
if [ -z "${MCP_STATE_DIR:-}" ]; then
	"$E" template rm default >/dev/null 2>"$TMP/trm.err"
	rc=$?
	check "mcp: the template is removed; nothing is left" \
		"exit $rc; $(show "$TMP/trm.err"; ls -la "$EMBER_STATE_DIR")" \
		ev '[ $rc = 0 ] && [ -z "$(sandboxes)" ] && [ -z "$(state_dir_procs)" ]'
fi
