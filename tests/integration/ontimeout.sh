#!/usr/bin/env bash
# Pause on timeout and auto-resume (emberctl run --on-timeout pause
# --auto-resume; E2B's lifecycle {onTimeout: 'pause', autoResume}).
# Part 1 needs no VM: the stand-in for ember (fake_ember.py, as in
# emberctl.sh) parks a sandbox at its TTL's end (ls shows it, its info
# file keeps the choice), exec resumes an auto-resume one (a fresh TTL,
# parked again at its end), refuses one without; bad options; a parked
# sandbox whose template is gone: one error, it stays parked, and resumes
# once the template is back.  Part 2, real sandboxes (a template built
# with --no-interp, ~10-20 s of boot where guest kernel mode is
# emulated): `run --ttl 5 --on-timeout pause --auto-resume`, a file in
# the guest's /tmp (a tmpfs: memory) and a counter in a shell's memory,
# parked by its TTL, exec brings it back with both.  Part 3, E2B's SDK
# (tests/e2b/ontimeout_test.mjs) on ember-e2b with the same template,
# and processes that outlive a pause (tests/e2b/keepprocs_test.mjs).
# Nothing of the test is left at the end.
set -u
cd "$(dirname "$0")/../.."
. tests/lib.sh

: "${EMBERCTL:=build/emberctl-asan}"
BOOT_TIMEOUT=${BOOT_TIMEOUT:-600}
if [ -z "${EMBER_E2B:-}" ]; then
	for EMBER_E2B in build/ember-e2b-asan build/ember-e2b; do
		[ -x "$EMBER_E2B" ] && break
	done
fi
export EMBER_STATE_DIR=$TMP/state
export EMBER_SUPERVISOR_LOG=$TMP/supervisor.log
E=$EMBERCTL
spid=

info_of() { sed -n "s/^$2=//p" "$EMBER_STATE_DIR/$1/info"; }
sandboxes() { ls "$EMBER_STATE_DIR" 2>/dev/null | grep -E '^[0-9a-f]{12}$'; }
no_sanitizer_report() { ! grep -qE 'AddressSanitizer|runtime error|LeakSanitizer' "$@"; }
show() { for f in "$@"; do echo "#   $f:"; sed 's/^/#     /' "$f" | tail -15; done; }
ev() { eval "$*"; }
# state ID: its STATE column in ls ("" when not listed).
state() { "$E" ls 2>/dev/null | awk -v id="$1" '$1 == id { print $5 }'; }
# wait_state ID STATE SECONDS
wait_state() {
	local end=$((SECONDS + $3))
	while [ $SECONDS -le "$end" ]; do
		[ "$(state "$1")" = "$2" ] && return 0
		sleep 0.2
	done
	[ "$(state "$1")" = "$2" ]
}
cleanup() {
	local p
	[ -z "$spid" ] || kill -9 "$spid" 2>/dev/null
	for p in $(state_dir_procs); do kill -9 "$p" 2>/dev/null; done
	rm -rf "$TMP"
}
trap cleanup EXIT

if [ ! -x "$E" ] || [ ! -x "${FAKE_AGENT:-build/test/agent-host}" ]; then
	not_ok "ontimeout: $E and ${FAKE_AGENT:-build/test/agent-host} are built" "make asan"
	exit 0
fi

# ---- part 1: a fake ember ----------------------------------------------
export EMBER_BIN=$PWD/tests/integration/fake_ember.py
export EMBER_KERNEL=$TMP/vmlinux EMBER_ROOTFS=$TMP/root.img
export FAKE_SNAP_LOG=$TMP/snap.log FAKE_INIT_REPORT=$TMP/init.report
echo kernel >"$EMBER_KERNEL"
truncate -s 16M "$EMBER_ROOTFS"
T=$EMBER_STATE_DIR/templates

"$E" run --on-timeout sleep 2>"$TMP/bad1.err"
rc1=$?
"$E" run --on-timeout pause --ttl 0 2>"$TMP/bad2.err"
rc2=$?
check "ontimeout: fake: --on-timeout other than pause|kill, or pause without a TTL: status 2, saying why, nothing made" \
	"exits $rc1 $rc2; $(show "$TMP/bad1.err" "$TMP/bad2.err")" \
	ev '[ "$rc1$rc2" = 22 ] && grep -q "on-timeout wants pause or kill, not .sleep." "$TMP/bad1.err" && grep -q "has no TTL" "$TMP/bad2.err" && [ -z "$(sandboxes)" ]'

# Default: killed at the TTL's end.
id=$("$E" run --boot --ttl 8 2>"$TMP/k.err")
"$E" ls >"$TMP/lsk.out" 2>&1
for _ in $(seq 150); do [ -e "$EMBER_STATE_DIR/$id" ] || break; sleep 0.2; done
check "ontimeout: fake: by default the TTL's end kills (ls says kill; gone, not parked)" \
	"$(show "$TMP/k.err" "$TMP/lsk.out")" \
	ev 'grep -qE "^$id .* kill +- +-$" "$TMP/lsk.out" && [ ! -e "$EMBER_STATE_DIR/$id" ]'

# Parked at the TTL's end, without auto-resume: exec refuses.
id=$("$E" run --boot --ttl 2 --on-timeout pause 2>"$TMP/p.err")
rc=$?
wait_state "$id" parked 30
check "ontimeout: fake: run --ttl 2 --on-timeout pause: parked at the TTL's end, not killed (snapshot, no process)" \
	"exit $rc; state $(state "$id"); $(show "$TMP/p.err" "$TMP/supervisor.log"; ls -la "$EMBER_STATE_DIR/$id" 2>&1)" \
	ev '[ $rc = 0 ] && [ "$(state "$id")" = parked ] && [ -f "$EMBER_STATE_DIR/$id/snap-1.state" ] && [ "$(info_of "$id" on_timeout)" = pause ] && ! pgrep -f "$EMBER_STATE_DIR/$id/" >/dev/null'
"$E" ls >"$TMP/ls1.out"
check "ontimeout: fake: ls shows it parked, ON-TIMEOUT pause" "$(show "$TMP/ls1.out")" \
	ev 'grep -q "ON-TIMEOUT" "$TMP/ls1.out" && grep -qE "^$id +- .* parked .* pause +- +-$" "$TMP/ls1.out"'
"$E" exec "$id" -- true 2>"$TMP/pe.err"
rc=$?
check "ontimeout: fake: exec on it without --auto-resume: 125, parked (nothing resumed)" \
	"exit $rc; $(show "$TMP/pe.err")" \
	ev '[ $rc = 125 ] && grep -q "sandbox $id is parked (emberctl resume" "$TMP/pe.err" && [ "$(state "$id")" = parked ]'
"$E" resume "$id" >/dev/null 2>"$TMP/pr.err"
rc=$?
check "ontimeout: fake: resume: its snapshot loaded, its TTL given anew (ttl, counted from readiness, grew)" \
	"exit $rc; ttl $(info_of "$id" ttl); $(show "$TMP/pr.err")" \
	ev '[ $rc = 0 ] && grep -qx "load $EMBER_STATE_DIR/$id/snap-1.state" "$FAKE_SNAP_LOG" && [ "$(info_of "$id" ttl)" -gt 2 ] && [ "$(info_of "$id" ttl_len)" = 2 ]'
"$E" kill "$id" >/dev/null 2>&1

# Auto-resume: exec brings it back, a fresh TTL, parked again at its end.
id=$("$E" run --boot --ttl 5 --on-timeout pause --auto-resume 2>"$TMP/a.err")
rc=$?
echo 41 >"$TMP/count.$id" # the fake's guest is this host
wait_state "$id" parked 30
"$E" ls >"$TMP/ls2.out"
check "ontimeout: fake: --auto-resume: parked at the TTL's end; ls says pause+resume" \
	"exit $rc; $(show "$TMP/a.err" "$TMP/ls2.out")" \
	ev '[ $rc = 0 ] && grep -qE "^$id .* parked .* pause\+resume +- +-$" "$TMP/ls2.out" && [ "$(info_of "$id" auto_resume)" = 1 ]'
out=$("$E" exec "$id" -- cat "$TMP/count.$id" 2>"$TMP/ae.err")
rc=$?
check "ontimeout: fake: exec on the parked auto-resume sandbox resumes it and runs" \
	"exit $rc; got: $out; $(show "$TMP/ae.err")" \
	ev '[ $rc = 0 ] && [ "$out" = 41 ] && grep -qx "load $EMBER_STATE_DIR/$id/snap-1.state" "$FAKE_SNAP_LOG"'
wait_state "$id" parked 30
check "ontimeout: fake: resumed, it gets its TTL anew and is parked again at its end (snap-2, snap-1 gone)" \
	"state $(state "$id"); $(ls "$EMBER_STATE_DIR/$id" 2>&1)" \
	ev '[ "$(state "$id")" = parked ] && [ -f "$EMBER_STATE_DIR/$id/snap-2.state" ] && [ ! -e "$EMBER_STATE_DIR/$id/snap-1.state" ]'
"$E" cp "$TMP/count.$id" "$id:$TMP/count2.$id" 2>"$TMP/cp.err"
rc=$?
check "ontimeout: fake: cp to a parked auto-resume sandbox resumes it too" \
	"exit $rc; $(show "$TMP/cp.err")" \
	ev '[ $rc = 0 ] && [ "$(cat "$TMP/count2.$id")" = 41 ] && grep -qx "load $EMBER_STATE_DIR/$id/snap-2.state" "$FAKE_SNAP_LOG"'
"$E" kill "$id" >/dev/null 2>&1

# A template removed behind its back: one error, it stays parked, whole.
"$E" template build ot --no-interp >/dev/null 2>"$TMP/tb.err"
id=$("$E" run --template ot --ttl 5 --on-timeout pause --auto-resume 2>"$TMP/t.err")
rc=$?
wait_state "$id" parked 30
mv "$T/ot" "$TMP/ot.aside"
"$E" exec "$id" -- true >"$TMP/te.out" 2>"$TMP/te.err"
rc2=$?
check "ontimeout: fake: auto-resume of a parked sandbox whose template is gone: 125, one clear error, still parked" \
	"exits $rc $rc2; state $(state "$id"); $(show "$TMP/tb.err" "$TMP/t.err" "$TMP/te.err")" \
	ev '[ $rc = 0 ] && [ $rc2 = 125 ] && [ "$(wc -l <"$TMP/te.err")" = 1 ] && grep -q "emberctl: sandbox $id cannot be resumed: it was made from template ot, which is gone (it stays parked" "$TMP/te.err" && [ "$(state "$id")" = parked ] && [ -f "$EMBER_STATE_DIR/$id/snap-1.state" ] && [ -f "$EMBER_STATE_DIR/$id/rootfs.ext4" ]'
mv "$TMP/ot.aside" "$T/ot"
out=$("$E" exec "$id" -- echo back 2>"$TMP/tb2.err")
rc=$?
check "ontimeout: fake: ... nothing lost: with the template back, exec resumes it" \
	"exit $rc; got: $out; $(show "$TMP/tb2.err")" ev '[ $rc = 0 ] && [ "$out" = back ]'

# An exposed port of a parked auto-resume sandbox: with its template
# gone, a connection is reset, one line in <sandbox dir>/expose/log says
# why, and it stays parked; with the template back a connection resumes
# it.  (The fake's ember has a network namespace of its own, new at each
# resume: no server there answers; part 2 gets a real guest's answer.)
mkdir -p "$TMP/www" && echo page >"$TMP/www/index.html"
python3 -c 'import http.server, functools, sys
h = functools.partial(http.server.SimpleHTTPRequestHandler, directory=sys.argv[1])
s = http.server.ThreadingHTTPServer(("127.0.0.1", 0), h)
open(sys.argv[2], "w").write("%d\n" % s.server_address[1])
s.serve_forever()' "$TMP/www" "$TMP/www.port" 2>/dev/null &
wpid=$!
for _ in $(seq 50); do [ -s "$TMP/www.port" ] && break; sleep 0.1; done
wport=$(cat "$TMP/www.port" 2>/dev/null)
addr=$("$E" expose "$id" "$wport" 2>"$TMP/xa.err")
# Parked by its TTL of 5 s already (a slow, loaded host): exec resumes it.
[ -n "$addr" ] || { "$E" exec "$id" -- true && addr=$("$E" expose "$id" "$wport" 2>>"$TMP/xa.err"); }
wait_state "$id" parked 30
mv "$T/ot" "$TMP/ot.aside"
got=$(curl -sS -m 60 "http://$addr/" 2>"$TMP/xc.err")
rc=$?
check "ontimeout: fake: a connection to an exposed port of it, its template gone: reset, one line in its expose/log, still parked" \
	"exit $rc; got '$got'; state $(state "$id"); $(show "$TMP/xa.err" "$TMP/xc.err" "$EMBER_STATE_DIR/$id/expose/log")" \
	ev '[ -n "$addr" ] && [ $rc != 0 ] && [ -z "$got" ] && [ "$(state "$id")" = parked ] && [ "$(wc -l <"$EMBER_STATE_DIR/$id/expose/log")" = 1 ] && grep -q "sandbox $id, port $wport: a connection was reset: cannot resume the sandbox: .*template ot, which is gone" "$EMBER_STATE_DIR/$id/expose/log"'
mv "$TMP/ot.aside" "$T/ot"
curl -sS -m 120 "http://$addr/" >/dev/null 2>"$TMP/xc2.err"
check "ontimeout: fake: ... with it back, a connection to the exposed port resumes it (auto-resume)" \
	"$(show "$TMP/xc2.err" "$FAKE_SNAP_LOG")" \
	grep -qx "load $EMBER_STATE_DIR/$id/snap-2.state" "$FAKE_SNAP_LOG"
kill "$wpid" 2>/dev/null
"$E" kill "$id" >/dev/null 2>&1
"$E" template rm ot >/dev/null 2>&1
touch "$TMP/supervisor.log"
check "ontimeout: fake: nothing left; no sanitizer report" \
	"$(sandboxes; show "$TMP/supervisor.log")" \
	ev '[ -z "$(sandboxes)" ] && no_sanitizer_report "$TMP"/*.err "$TMP/supervisor.log"'
unset EMBER_BIN EMBER_KERNEL EMBER_ROOTFS FAKE_SNAP_LOG FAKE_INIT_REPORT
rm -rf "$EMBER_STATE_DIR"

# ---- part 2: real sandboxes ----------------------------------------------
need_kvm "pause on timeout with real sandboxes"
if [ ! -x "$EMBER" ]; then
	not_ok "ontimeout: $EMBER is built" "make all asan"
	exit 0
fi
export EMBER_BIN=$EMBER EMBER_KERNEL=$GUEST/vmlinux EMBER_ROOTFS=$GUEST/rootfs.ext4
TPL=ontimeout
timeout "$BOOT_TIMEOUT" "$E" template build "$TPL" --no-interp --no-net \
	--boot-timeout "$BOOT_TIMEOUT" >"$TMP/build.out" 2>"$TMP/build.err"
rc=$?
check "ontimeout: the template $TPL is built" "exit $rc; $(show "$TMP/build.out" "$TMP/build.err")" [ $rc = 0 ]
[ $rc = 0 ] || exit 0

id=$("$E" run --template "$TPL" --ttl 5 --on-timeout pause --auto-resume 2>"$TMP/r.err")
rc=$?
# /tmp is a tmpfs (memory); the loop counts in its shell's memory.
# (In its own session: the agent ends an exec's process group.)
cat >"$TMP/loop.sh" <<'EOF'
i=0
while :; do
	i=$((i + 1))
	echo $i >/tmp/count
	sleep 0.2
done
EOF
"$E" cp "$TMP/loop.sh" "$id:/tmp/loop.sh" 2>>"$TMP/x.err"
"$E" exec "$id" -- sh -c 'echo kept >/tmp/mem; setsid sh /tmp/loop.sh </dev/null >/dev/null 2>&1 &' 2>>"$TMP/x.err"
sleep 1
c1=$("$E" exec "$id" -- cat /tmp/count 2>>"$TMP/x.err")
wait_state "$id" parked 60
"$E" ls >"$TMP/ls.out" 2>&1
check "ontimeout: run --ttl 5 --on-timeout pause: after the TTL, ls shows it parked" \
	"exit $rc; count $c1; $(show "$TMP/r.err" "$TMP/x.err" "$TMP/ls.out" "$TMP/supervisor.log")" \
	ev '[ $rc = 0 ] && [ -n "$c1" ] && grep -qE "^$id +- .* parked .* pause\+resume +- +$TPL$" "$TMP/ls.out" && ! pgrep -f "$EMBER_STATE_DIR/$id/" >/dev/null'
mem=$("$E" exec "$id" -- cat /tmp/mem 2>"$TMP/ae.err")
rc=$?
sleep 1
c2=$("$E" exec "$id" -- cat /tmp/count 2>>"$TMP/ae.err")
check "ontimeout: exec on it (auto-resume) brings it back: its /tmp file and its counter's memory intact" \
	"exit $rc; mem $mem; count $c1 -> $c2; $(show "$TMP/ae.err")" \
	ev '[ $rc = 0 ] && [ "$mem" = kept ] && [ -n "$c2" ] && [ "$c2" -gt "$c1" ] && [ "$(info_of "$id" snap)" -ge 1 ]'
# An exposed port (expose.h): its forwarder outlives the park, and a
# connection to it resumes the sandbox and gets the guest server's answer.
# On a slow host its 5 s TTL may park it again meanwhile: resumed first and
# renewed while the server is set up, then 5 s again.
"$E" exec "$id" -- true >"$TMP/srv.out" 2>&1
"$E" ttl "$id" 600 >/dev/null 2>>"$TMP/srv.out"
"$E" exec "$id" -- sh -c 'mkdir -p /tmp/srv && echo hello-from-guest >/tmp/srv/index.html &&
	busybox httpd -p 127.0.0.1:8000 -h /tmp/srv' >>"$TMP/srv.out" 2>&1
addr=$("$E" expose "$id" 8000 2>>"$TMP/srv.out")
"$E" ttl "$id" 5 >/dev/null 2>>"$TMP/srv.out"
wait_state "$id" parked 60
st1=$(state "$id")
got=$(curl -sS -m 300 "http://$addr/" 2>"$TMP/xc.err")
rc=$?
check "ontimeout: a connection to an exposed port of the parked sandbox resumes it and gets the guest server's answer" \
	"exit $rc; got '$got'; state before: $st1; $(show "$TMP/srv.out" "$TMP/xc.err" "$EMBER_STATE_DIR/$id/expose/log")" \
	ev '[ $rc = 0 ] && [ "$got" = hello-from-guest ] && [ "$st1" = parked ]'
"$E" kill "$id" >/dev/null 2>&1

# ---- part 3: E2B's SDK ------------------------------------------------------
if ! command -v node >/dev/null || [ ! -d tests/e2b/node_modules/e2b ] || [ ! -x "$EMBER_E2B" ]; then
	not_ok "ontimeout: e2b: node, the SDK (tests/e2b: npm ci) and ember-e2b are there" \
		"node $(command -v node); $EMBER_E2B"
else
	key=$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')
	(umask 077 && echo "$key" >"$TMP/key")
	"$EMBER_E2B" --listen 127.0.0.1:0 --api-key-file "$TMP/key" >"$TMP/e2b.out" 2>"$TMP/e2b.log" &
	spid=$!
	wait_for "$TMP/e2b.out" 'listening on http://127\.0\.0\.1:[1-9]' 30 "$spid"
	url=$(sed -n 's|.*listening on \(http://127\.0\.0\.1:[0-9]*\).*|\1|p' "$TMP/e2b.out" | head -1)
	env -u E2B_DEBUG -u E2B_DOMAIN E2B_API_URL="$url" E2B_SANDBOX_URL="$url" E2B_API_KEY="$key" \
		ONTIMEOUT_TEMPLATE=$TPL timeout -k 10 600 node tests/e2b/ontimeout_test.mjs \
		>"$TMP/sdk.out" 2>"$TMP/sdk.err"
	rc=$?
	cat "$TMP/sdk.out"
	if ! grep -q '^ok - ' "$TMP/sdk.out" || { [ $rc != 0 ] && ! grep -q '^not ok - ' "$TMP/sdk.out"; }; then
		not_ok "ontimeout: e2b: the SDK test runs" "exit $rc; $(show "$TMP/sdk.err" "$TMP/e2b.log")"
	fi
	grep -q '^not ok - ' "$TMP/sdk.out" && show "$TMP/e2b.log"
	# Processes that outlive a pause (tests/e2b/keepprocs_test.mjs).
	env -u E2B_DEBUG -u E2B_DOMAIN E2B_API_URL="$url" E2B_SANDBOX_URL="$url" E2B_API_KEY="$key" \
		KEEP_TEMPLATE=$TPL timeout -k 10 900 node tests/e2b/keepprocs_test.mjs \
		>"$TMP/keep.out" 2>"$TMP/keep.err"
	rc=$?
	cat "$TMP/keep.out"
	if ! grep -q '^ok - ' "$TMP/keep.out" || { [ $rc != 0 ] && ! grep -q '^not ok - ' "$TMP/keep.out"; }; then
		not_ok "keepprocs: e2b: the SDK test runs" "exit $rc; $(show "$TMP/keep.err" "$TMP/e2b.log")"
	fi
	grep -q '^not ok - ' "$TMP/keep.out" && show "$TMP/e2b.log"
	kill -TERM "$spid" 2>/dev/null
	exit_of "$spid" 30
	spid=
	check "ontimeout: e2b: ember-e2b stops on SIGTERM with status 0, no sanitizer report" \
		"status $st; $(show "$TMP/e2b.log")" \
		ev '[ "$st" = 0 ] && no_sanitizer_report "$TMP/e2b.log"'
fi

# ---- the end ------------------------------------------------------------------
ids=$(sandboxes | tr '\n' ' ')
[ -z "$ids" ] || "$E" kill $ids >/dev/null 2>&1
"$E" template rm "$TPL" >/dev/null 2>"$TMP/trm.err"
rc=$?
touch "$TMP/supervisor.log"
check "ontimeout: every sandbox killed by the test itself, the template removed, no process left, no sanitizer report" \
	"left: $ids; exit $rc; $(show "$TMP/trm.err" "$TMP/supervisor.log")" \
	ev '[ -z "$ids" ] && [ $rc = 0 ] && [ -z "$(state_dir_procs)" ] && no_sanitizer_report "$TMP/supervisor.log"'
