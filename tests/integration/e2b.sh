#!/usr/bin/env bash
# ember-e2b end to end with E2B's official JavaScript SDKs (tests/e2b:
# e2b and @e2b/code-interpreter at the versions its package-lock pins,
# installed here with `npm ci`).  ember-e2b is started on a free loopback
# port with a key file; tests/e2b/sdk_test.mjs then runs with E2B_API_URL,
# E2B_SANDBOX_URL and E2B_API_KEY pointing at it and prints its own ok /
# not ok lines: the E2B quickstart, code with state, charts, errors,
# contexts, commands (streams, exit codes, background, stdin, envs, cwd),
# users (`user` by default, root on request, files owned by the user),
# files, timeouts, list, pause and connect, fork, snapshots, kill, the
# access token, a wrong key, an unknown sandbox; then
# tests/e2b/template_test.mjs builds templates with E2B's Template builder
# (its templates removed here at the end); tests/e2b/ports_test.mjs
# reaches a server in a sandbox through getHost(port) and the
# E2b-Sandbox-Port header (HTTP, a WebSocket, the traffic token);
# tests/e2b/limits_test.mjs checks limits and refusals (an upload of too
# many parts, 4xx not 500, watchers per sandbox, a stream that does not
# read, two pauses at once).
# E2B_TESTS: which of them run (default "sdk template ports limits").  Sandboxes restore from
# the template "default" in $SHARED_STATE_DIR (tests/run.sh: net.sh
# builds it; built here when missing), or in $E2B_STATE_DIR (which must
# hold it: used as it is), else in a private one (its template removed at
# the end).  At the end no sandbox the test made and no process of one may
# be left, and ember-e2b stops on SIGTERM with no sanitizer report.
# E2B_LISTEN=ADDR:PORT: where ember-e2b listens (127.0.0.1:0: any free
# port); EMBER_E2B: the server (build/ember-e2b-asan, else build/ember-e2b).
set -u
cd "$(dirname "$0")/../.."
. tests/lib.sh

: "${EMBERCTL:=build/emberctl-asan}"
BOOT_TIMEOUT=${BOOT_TIMEOUT:-600}
# The whole SDK test: a hang fails rather than stalls.
E2B_TEST_TIMEOUT=${E2B_TEST_TIMEOUT:-1200}
E2B_TEMPLATE_TIMEOUT=${E2B_TEMPLATE_TIMEOUT:-900}
if [ -z "${EMBER_E2B:-}" ]; then
	for EMBER_E2B in build/ember-e2b-asan build/ember-e2b; do
		[ -x "$EMBER_E2B" ] && break
	done
fi
STATE=${E2B_STATE_DIR:-${SHARED_STATE_DIR:-}}
export EMBER_STATE_DIR=${STATE:-$TMP/state}
export EMBER_SUPERVISOR_LOG=$TMP/supervisor.log
E=$EMBERCTL

need_kvm "ember-e2b with the E2B SDK"
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
	echo "ok - # SKIP no node and npm (tests/install-deps.sh installs them): ember-e2b with the E2B SDK"
	exit 0
fi
if [ ! -x "$E" ] || [ ! -x "$EMBER" ] || [ ! -x "$EMBER_E2B" ]; then
	not_ok "e2b: $E, $EMBER and $EMBER_E2B are built" "make all asan"
	exit 0
fi
EMBER_E2B=$(realpath "$EMBER_E2B")
export EMBERCTL_BIN=$PWD/$E EMBER_BIN=$PWD/$EMBER EMBER_KERNEL=$PWD/$GUEST/vmlinux EMBER_ROOTFS=$PWD/$GUEST/rootfs.ext4

# The sandboxes of the state directory.  This test's: those the SDK test
# names ("# sandbox ID" lines) and, unless the directory is one of the
# user's (E2B_STATE_DIR, where others may make sandboxes meanwhile), every
# one that was not there before it.
sandboxes() { ls "$EMBER_STATE_DIR" 2>/dev/null | grep -E '^[0-9a-f]{12}$'; }
ours() {
	local made
	made=$(sed -n 's/^# sandbox \([0-9a-f]\{12\}\)$/\1/p' "$TMP/sdk.out" 2>/dev/null)
	{
		sandboxes | grep -xF -f <(echo "$made")
		[ -n "${E2B_STATE_DIR:-}" ] || sandboxes | grep -vxF -f "$TMP/before"
	} | sort -u
	return 0
}
# The processes of sandbox $1: ember (its arguments name the sandbox's
# directory) and its supervisor (in the info file, with its start time).
procs_of() {
	local f=$EMBER_STATE_DIR/$1/info pid start
	pgrep -f "$EMBER_STATE_DIR/$1/" 2>/dev/null
	[ -f "$f" ] || return 0
	pid=$(sed -n 's/^supervisor=//p' "$f")
	start=$(sed -n 's/^supervisor_start=//p' "$f")
	[ -n "$pid" ] && [ "$pid" != 0 ] &&
		[ "$(sed 's/.*) //' "/proc/$pid/stat" 2>/dev/null | cut -d" " -f20)" = "$start" ] &&
		echo "$pid"
	return 0
}
spid=
cleanup() {
	local ids
	[ -z "$spid" ] || kill -9 "$spid" 2>/dev/null
	ids=$(ours 2>/dev/null)
	[ -z "$ids" ] || "$E" kill $ids >/dev/null 2>&1
	rm -rf "$TMP"
}
trap cleanup EXIT
show() { for f in "$@"; do echo "#   $f:"; sed 's/^/#     /' "$f" | tail -15; done; }
ev() { eval "$*"; }
no_sanitizer_report() { ! grep -qE 'AddressSanitizer|runtime error|LeakSanitizer' "$@"; }
now_ms() { echo $(($(date +%s%N) / 1000000)); }

# ---- the template, the SDK ---------------------------------------------------------
# A directory of one's own (E2B_STATE_DIR) is used as it is: its
# template is never rebuilt here (other sandboxes may be using it).
t0=$(now_ms)
if [ -n "${E2B_STATE_DIR:-}" ]; then
	[ -d "$EMBER_STATE_DIR/templates/default" ] 2>"$TMP/build.err"
else
	timeout "$BOOT_TIMEOUT" "$E" template build default --if-missing --boot-timeout "$BOOT_TIMEOUT" \
		>"$TMP/build.out" 2>"$TMP/build.err"
fi
rc=$?
touch "$TMP/build.out"
check "e2b: the template default is there ($(($(now_ms) - t0)) ms)" \
	"exit $rc; $(show "$TMP/build.out" "$TMP/build.err")" [ $rc = 0 ]
[ $rc = 0 ] || exit 0
npm_install tests/e2b >"$TMP/npm.log" 2>&1
rc=$?
check "e2b: npm ci installs the pinned SDKs ($(node -p 'const d=require("./tests/e2b/package.json").dependencies; `e2b ${d.e2b}, @e2b/code-interpreter ${d["@e2b/code-interpreter"]}`' 2>/dev/null))" \
	"exit $rc; $(show "$TMP/npm.log")" [ $rc = 0 ]
[ $rc = 0 ] || exit 0

# ---- the server ----------------------------------------------------------------------
"$EMBER_E2B" --help >"$TMP/help" 2>&1
rc=$?
check "e2b: ember-e2b --help exits 0 and names --listen and --api-key-file" "exit $rc; $(show "$TMP/help")" \
	ev '[ $rc = 0 ] && grep -q -- --listen "$TMP/help" && grep -q -- --api-key-file "$TMP/help"'
env -u EMBER_E2B_API_KEY timeout 10 "$EMBER_E2B" --listen 127.0.0.1:0 >"$TMP/nokey" 2>&1
rc=$?
check "e2b: without a key ember-e2b refuses to start (exit 2)" "exit $rc; $(show "$TMP/nokey")" [ $rc = 2 ]
timeout 10 "$EMBER_E2B" --listen 127.0.0.1:0 --api-key k --domain 'a_b.example' >"$TMP/baddom" 2>&1
rc=$?
check "e2b: a --domain that is no host name is refused (exit 2), and --help names --domain" \
	"exit $rc; $(show "$TMP/baddom")" ev '[ $rc = 2 ] && grep -q "want a host name" "$TMP/baddom" && grep -q -- --domain "$TMP/help"'

sandboxes >"$TMP/before"
key=$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')
(umask 077 && echo "$key" >"$TMP/key")
"$EMBER_E2B" --listen "${E2B_LISTEN:-127.0.0.1:0}" --api-key-file "$TMP/key" >"$TMP/e2b.out" 2>"$TMP/e2b.log" &
spid=$!
wait_for "$TMP/e2b.out" 'listening on http://127\.0\.0\.1:[1-9]' 30 "$spid"
url=$(sed -n 's|.*listening on \(http://127\.0\.0\.1:[0-9]*\).*|\1|p' "$TMP/e2b.out" | head -1)
check "e2b: ember-e2b listens on a free loopback port ($url)" \
	"$(show "$TMP/e2b.out" "$TMP/e2b.log")" [ -n "$url" ]
[ -n "$url" ] || exit 0

# ---- the SDK test --------------------------------------------------------------------
E2B_TESTS=" ${E2B_TESTS:-sdk template ports limits} "
touch "$TMP/sdk.out" "$TMP/tpl.out"
[[ $E2B_TESTS != *" sdk "* ]] || {
env -u E2B_DEBUG -u E2B_DOMAIN E2B_API_URL="$url" E2B_SANDBOX_URL="$url" E2B_API_KEY="$key" \
	timeout -k 10 "$E2B_TEST_TIMEOUT" node tests/e2b/sdk_test.mjs >"$TMP/sdk.out" 2>"$TMP/sdk.err"
rc=$?
cat "$TMP/sdk.out"
if [ $rc = 124 ] || [ $rc = 137 ]; then
	not_ok "e2b: the SDK test ends within $E2B_TEST_TIMEOUT s" "it was killed"
elif ! grep -q '^ok - ' "$TMP/sdk.out" || { [ $rc != 0 ] && ! grep -q '^not ok - ' "$TMP/sdk.out"; }; then
	not_ok "e2b: the SDK test runs" "exit $rc; $(show "$TMP/sdk.err")"
fi
grep -q '^not ok - ' "$TMP/sdk.out" && show "$TMP/e2b.log"
}

# sdk_part NAME TEST SECONDS WHAT: node tests/e2b/TEST against ember-e2b,
# its lines shown; one failure of its own when it is killed, runs no case,
# or ends non-zero without a failed case; its sandboxes' lines go to sdk.out.
sdk_part() {
	local name=$1 test=$2 limit=$3 what=$4 rc
	env -u E2B_DEBUG -u E2B_DOMAIN E2B_API_URL="$url" E2B_SANDBOX_URL="$url" E2B_API_KEY="$key" \
		timeout -k 10 "$limit" node "tests/e2b/$test" >"$TMP/$name.out" 2>"$TMP/$name.err"
	rc=$?
	cat "$TMP/$name.out"
	if [ $rc = 124 ] || [ $rc = 137 ]; then
		not_ok "e2b: $name: $what ends within $limit s" "it was killed"
	elif ! grep -q '^ok - ' "$TMP/$name.out" || { [ $rc != 0 ] && ! grep -q '^not ok - ' "$TMP/$name.out"; }; then
		not_ok "e2b: $name: $what runs" "exit $rc; $(show "$TMP/$name.err")"
	fi
	grep -q '^not ok - ' "$TMP/$name.out" && show "$TMP/e2b.log"
	grep '^# sandbox ' "$TMP/$name.out" >>"$TMP/sdk.out"
}

# ---- getHost(port): tests/e2b/ports_test.mjs ------------------------------------------
[[ $E2B_TESTS != *" ports "* ]] || sdk_part ports ports_test.mjs 900 "the getHost test"

# ---- limits and refusals: tests/e2b/limits_test.mjs -------------------------------------
[[ $E2B_TESTS != *" limits "* ]] || sdk_part limits limits_test.mjs 1500 "the limits test"

# ---- Template.build (tests/e2b/template_test.mjs) --------------------------------------
# Its builds run emberctl (EMBERCTL_BIN: this test's); its templates are
# removed below whatever happened.
[[ $E2B_TESTS != *" template "* ]] || {
env -u E2B_DEBUG -u E2B_DOMAIN E2B_API_URL="$url" E2B_SANDBOX_URL="$url" E2B_API_KEY="$key" \
	timeout -k 10 "$E2B_TEMPLATE_TIMEOUT" node tests/e2b/template_test.mjs >"$TMP/tpl.out" 2>"$TMP/tpl.err"
rc=$?
cat "$TMP/tpl.out"
if [ $rc = 124 ] || [ $rc = 137 ]; then
	not_ok "e2b: template: the Template.build test ends within $E2B_TEMPLATE_TIMEOUT s" "it was killed"
elif ! grep -q '^ok - ' "$TMP/tpl.out" || { [ $rc != 0 ] && ! grep -q '^not ok - ' "$TMP/tpl.out"; }; then
	not_ok "e2b: template: the Template.build test runs" "exit $rc; $(show "$TMP/tpl.err")"
fi
grep -q '^not ok - ' "$TMP/tpl.out" && show "$TMP/e2b.log"
grep '^# sandbox ' "$TMP/tpl.out" >>"$TMP/sdk.out"
}

# Whatever the test did, none of its sandboxes outlives it.
sleep 1
ids=$(ours | tr '\n' ' ')
made=$(sed -n 's/^# sandbox \([0-9a-f]\{12\}\)$/\1/p' "$TMP/sdk.out")
left=$(for i in $ids $made; do procs_of "$i"; done | sort -u | tr '\n' ' ')
check "e2b: once the SDK test is over, no sandbox it made and no process of one is left" \
	"sandboxes: $ids; processes: $left" ev '[ -z "$ids" ] && [ -z "${left// /}" ]'
[ -z "$ids" ] || "$E" kill $ids >/dev/null 2>&1
for p in $left; do kill -9 "$p" 2>/dev/null; done

# The templates the Template.build test built, removed; no build left.
tpls=$(sed -n 's/^# template \(e2bt-[a-z0-9-]*\)$/\1/p' "$TMP/tpl.out" | tr '\n' ' ')
for t in $tpls; do
	[ ! -d "$EMBER_STATE_DIR/templates/$t" ] || "$E" template rm --force "$t" >>"$TMP/trm.out" 2>&1
done
touch "$TMP/trm.out"
left=$(for t in $tpls; do [ ! -d "$EMBER_STATE_DIR/templates/$t" ] || echo "$t"; done)
builds=$(ls "$EMBER_STATE_DIR/e2b-builds" 2>/dev/null | grep -vx files)
check "e2b: template: the test's templates are removed and no build directory is left" \
	"templates: $left; builds: $builds; $(show "$TMP/trm.out")" ev '[ -z "$left" ] && [ -z "$builds" ]'

# ---- the end ----------------------------------------------------------------------------
kill -TERM "$spid" 2>/dev/null
exit_of "$spid" 30
spid=
check "e2b: ember-e2b stops on SIGTERM with status 0" "status $st; $(show "$TMP/e2b.log")" [ "$st" = 0 ]
touch "$TMP/supervisor.log"
check "e2b: no sanitizer report (ember-e2b, supervisors)" \
	"$(grep -m5 -hE 'AddressSanitizer|runtime error|LeakSanitizer' "$TMP/e2b.log" "$TMP/supervisor.log")" \
	no_sanitizer_report "$TMP/e2b.log" "$TMP/supervisor.log"
if [ -z "$STATE" ]; then
	"$E" template rm default >/dev/null 2>"$TMP/trm.err"
	rc=$?
	check "e2b: the template is removed; nothing is left" \
		"exit $rc; $(show "$TMP/trm.err"; ls -la "$EMBER_STATE_DIR")" \
		ev '[ $rc = 0 ] && [ -z "$(sandboxes)" ]'
fi
