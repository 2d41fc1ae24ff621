#!/usr/bin/env bash
# ember-e2b's template-build API (api/e2b/template_build.h) given bad and
# hostile input, without a VM: emberctl is a fake (EMBERCTL_BIN) that
# acts by the template's name, so that what happens around a build (a
# killed emberctl, one that leaves a child holding its output, ember-e2b
# ended mid-build) is seen in seconds.  Each refusal is a 4xx or a build
# error with its reason; nothing crashes (the ASan build's log stays
# clean), hangs, or is left: no process, no file outside the state
# directory.
set -u
cd "$(dirname "$0")/../.."
. tests/lib.sh

: "${EMBER_E2B:=build/ember-e2b-asan}"
if [ ! -x "$EMBER_E2B" ] || ! command -v curl >/dev/null; then
	not_ok "e2b-template-bad: $EMBER_E2B and curl are there" "make asan"
	exit 0
fi
show() { for f in "$@"; do [ -s "$f" ] && head -c 2000 "$f" | tr '\n' '|'; done; }
ev() { eval "$1"; }

# The fake emberctl: "template build NAME ...".  Its pid and its child's
# go to $TMP/NAME.pid and $TMP/NAME.child.
FAKE=$TMP/fake-emberctl
cat >"$FAKE" <<EOF
#!/bin/sh
name=\$3
echo \$\$ >"$TMP/\$name.pid"
case \$name in
hang-*) # a child keeps the output open; the fake waits to be killed
	echo "+ step 1/1 (line 3, RUN)"
	sleep 600 & echo \$! >"$TMP/\$name.child"
	exec sleep 600 ;;
stray-*) # done, but a child keeps the output open
	echo "+ step 1/1 (line 3, RUN)"
	sleep 600 & echo \$! >"$TMP/\$name.child"
	exit 0 ;;
term-*) exec sleep 600 ;;
*) echo "emberctl: template build: the fake builds nothing" >&2; exit 1 ;;
esac
EOF
chmod +x "$FAKE"
export EMBERCTL_BIN=$FAKE EMBER_STATE_DIR=$TMP/state
mkdir -p "$EMBER_STATE_DIR"
touch "$TMP/marker"

start_server() {
	# Emptied here, not by the child's redirection: else the wait below
	# could read the last server's line before the new one truncates it.
	: >"$TMP/e2b.out"
	"$EMBER_E2B" --listen 127.0.0.1:0 --api-key k >>"$TMP/e2b.out" 2>>"$TMP/e2b.log" &
	spid=$!
	wait_for "$TMP/e2b.out" 'listening on http://127\.0\.0\.1:[1-9]' 30 "$spid"
	url=$(sed -n 's|.*listening on \(http://127\.0\.0\.1:[0-9]*\).*|\1|p' "$TMP/e2b.out" | tail -1)
}
start_server
check "e2b-template-bad: ember-e2b listens ($url)" "$(show "$TMP/e2b.log")" [ -n "$url" ]
[ -n "$url" ] || exit 0

# req METHOD PATH [curl args]: the status in $code, the body in $TMP/body.
req() {
	local m=$1 p=$2
	shift 2
	code=$(curl -s -m 60 -o "$TMP/body" -w '%{http_code}' -X "$m" -H 'X-API-Key: k' "$@" "$url$p")
}
# new NAME: a build of NAME, its id in $bid.
new() {
	req POST /v3/templates -d "{\"name\":\"$1\"}"
	bid=$(sed -n 's/.*"buildID":"\([0-9a-f]*\)".*/\1/p' "$TMP/body")
}
# until_status NAME BUILD STATUS: 0 once the build's status is STATUS
# (30 s at most; the fakes run for 600).
until_status() {
	local i
	for i in $(seq 300); do
		req GET "/templates/$1/builds/$2/status"
		grep -q "\"status\":\"$3\"" "$TMP/body" && return 0
		sleep 0.1
	done
	return 1
}
# gone PIDFILE: its process has ended (a zombie too: whoever reaps it).
gone() {
	local p
	p=$(cat "$1" 2>/dev/null) || return 0
	! kill -0 "$p" 2>/dev/null || [ "$(awk '{print $3}' "/proc/$p/stat" 2>/dev/null)" = Z ]
}
H=0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef
RUN='{"fromTemplate":"base","steps":[{"type":"RUN","args":["true"]}]}'

# ---- names and sizes ----------------------------------------------------------------
for n in -x --replace base 'a b' '../x' ''; do
	req POST /v3/templates -d "{\"name\":\"$n\"}"
	check "e2b-template-bad: the template name '$n' is refused (400)" \
		"$code $(show "$TMP/body")" [ "$code" = 400 ]
done
for a in '"cpuCount":"x"' '"memoryMB":1e30' '"cpuCount":-1' '"memoryMB":[]'; do
	req POST /v3/templates -d "{\"name\":\"sz\",$a}"
	check "e2b-template-bad: $a is refused (400)" "$code $(show "$TMP/body")" [ "$code" = 400 ]
done

# ---- uploads ------------------------------------------------------------------------
new up-1
req GET "/templates/up-1/files/$H"
tok=$(sed -n 's|.*/e2b-uploads/\([0-9a-f]*\)/.*|\1|p' "$TMP/body")
check "e2b-template-bad: a files link for a build waiting for them" "$code $(show "$TMP/body")" \
	ev '[ "$code" = 200 ] && [ -n "$tok" ]'
for h in .. %2e%2e "${H/0/Z}" "${H}0"; do
	req GET "/templates/up-1/files/$h" --path-as-is
	check "e2b-template-bad: the files hash '$h' is refused (4xx)" "$code" ev '[ "${code:0:1}" = 4 ]'
done
req PUT "/e2b-uploads/${tok/?/0}x/$H" -H 'X-API-Key:' --data-binary x
check "e2b-template-bad: an upload with a wrong token is refused (401)" "$code" [ "$code" = 401 ]
for p in "/e2b-uploads/$tok/../$H" "/e2b-uploads/$tok/%2e%2e%2f$H" "/e2b-uploads/$tok/x"; do
	req PUT "$p" --data-binary x
	check "e2b-template-bad: the upload path $p is refused (4xx)" "$code" ev '[ "${code:0:1}" = 4 ]'
done
code=$(head -c 1100000000 /dev/zero | curl -s -m 120 -o /dev/null -w '%{http_code}' -T - "$url/e2b-uploads/$tok/$H")
check "e2b-template-bad: a chunked upload over 1 GiB is refused (413)" "$code" [ "$code" = 413 ]
code=$(head -c 1100000000 /dev/zero | curl -s -m 120 -o /dev/null -w '%{http_code}' -T - \
	-H 'Content-Length: 1100000000' "$url/e2b-uploads/$tok/$H")
check "e2b-template-bad: an upload of Content-Length over 1 GiB is refused (413)" "$code" [ "$code" = 413 ]
pids=
for i in 1 2 3 4; do
	head -c 100000 /dev/urandom >"$TMP/up$i"
	curl -s -m 60 -o /dev/null -w '%{http_code}\n' -T "$TMP/up$i" "$url/e2b-uploads/$tok/$H" >>"$TMP/codes" &
	pids="$pids $!"
done
wait $pids
f=$EMBER_STATE_DIR/e2b-builds/files/$H.tar
same=0
for i in 1 2 3 4; do cmp -s "$f" "$TMP/up$i" && same=1; done
check "e2b-template-bad: four uploads of one hash at once: each 200, one of them kept whole" \
	"$(tr '\n' ' ' <"$TMP/codes"); $(ls -la "$EMBER_STATE_DIR/e2b-builds/files")" \
	ev '[ "$(grep -c 200 "$TMP/codes")" = 4 ] && [ $same = 1 ] &&
	    [ "$(ls -A "$EMBER_STATE_DIR/e2b-builds/files" | wc -l)" = 1 ]'
# Cut short: nothing stored, nothing left.
python3 - "$url" "$tok" "$H" <<'EOF'
import socket, sys, time, urllib.parse
u = urllib.parse.urlparse(sys.argv[1])
s = socket.create_connection((u.hostname, u.port))
s.sendall(("PUT /e2b-uploads/%s/%s HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\nabc"
	   % (sys.argv[2], "f" * 64)).encode())
time.sleep(0.5)
s.close()
EOF
sleep 0.5
check "e2b-template-bad: an upload cut short leaves no file" \
	"$(ls -A "$EMBER_STATE_DIR/e2b-builds/files")" [ ! -e "$EMBER_STATE_DIR/e2b-builds/files/$(printf 'f%.0s' $(seq 64)).tar" ]

# ---- bodies -------------------------------------------------------------------------
python3 -c 'print("[" * 100000 + "]" * 100000)' >"$TMP/deep.json"
req POST "/v2/templates/up-1/builds/$bid" --data-binary @"$TMP/deep.json"
check "e2b-template-bad: a body nested 100000 deep is refused (400)" "$code" [ "$code" = 400 ]
python3 -c 'import json; print(json.dumps({"fromTemplate": "base", "steps": [{"type": "RUN", "args": ["true"]}] * 100000}))' >"$TMP/many.json"
req POST "/v2/templates/up-1/builds/$bid" --data-binary @"$TMP/many.json"
req GET "/templates/up-1/builds/$bid/status"
check "e2b-template-bad: 100000 steps: a build error that says so" "$(show "$TMP/body")" \
	ev 'grep -q "\"status\":\"error\"" "$TMP/body" && grep -q "more than 400 steps" "$TMP/body"'
req PUT "/e2b-uploads/$tok/$H" --data-binary x
check "e2b-template-bad: an upload for a build that has started is refused (401)" "$code" [ "$code" = 401 ]
req POST "/v2/templates/up-1/builds/$bid" -d "$RUN"
check "e2b-template-bad: a build started twice is refused (409)" "$code" [ "$code" = 409 ]
for o in -1 99999999999999999999999 x; do
	req GET "/templates/up-1/builds/$bid/status?logsOffset=$o"
	check "e2b-template-bad: logsOffset=$o is refused (400)" "$code" [ "$code" = 400 ]
done
req GET "/templates/up-1/builds/$bid/status?logsOffset=18446744073709551615"
check "e2b-template-bad: logsOffset past the log: no entries" "$code $(show "$TMP/body")" \
	ev '[ "$code" = 200 ] && grep -q "\"logEntries\":\[\]" "$TMP/body"'
req GET "/templates/up-1/builds/0123/status"
check "e2b-template-bad: the status of an unknown build is 404" "$code" [ "$code" = 404 ]

new nofiles-1
req POST "/v2/templates/nofiles-1/builds/$bid" -d "{\"fromTemplate\":\"base\",\"steps\":[{\"type\":\"COPY\",\"args\":[\"a\",\"/b\"],\"filesHash\":\"${H//0/e}\"}]}"
req GET "/templates/nofiles-1/builds/$bid/status"
check "e2b-template-bad: a COPY whose files were not uploaded: a build error at its step" "$(show "$TMP/body")" \
	ev 'grep -q "were not uploaded" "$TMP/body" && grep -q "\"step\":\"1\"" "$TMP/body"'

# ---- emberctl's end -----------------------------------------------------------------
new hang-1
req POST "/v2/templates/hang-1/builds/$bid" -d "$RUN"
wait_for "$TMP/hang-1.child" . 30
kill -9 "$(cat "$TMP/hang-1.pid")"
until_status hang-1 "$bid" error
rc=$?
check "e2b-template-bad: emberctl killed while its child holds its output: the build fails" \
	"$(show "$TMP/body")" [ $rc = 0 ]
check "e2b-template-bad: ... and the child is gone" "$(cat "$TMP/hang-1.child")" gone "$TMP/hang-1.child"
new stray-1
req POST "/v2/templates/stray-1/builds/$bid" -d "$RUN"
until_status stray-1 "$bid" ready
rc=$?
check "e2b-template-bad: emberctl done while its child holds its output: the build is ready" \
	"$(show "$TMP/body")" [ $rc = 0 ]
check "e2b-template-bad: ... and the child is gone" "$(cat "$TMP/stray-1.child")" gone "$TMP/stray-1.child"
new fail-1
req POST "/v2/templates/fail-1/builds/$bid" -d "$RUN"
until_status fail-1 "$bid" error
check "e2b-template-bad: a failed build's reason is emberctl's error" "$(show "$TMP/body")" \
	grep -q '"reason":{"message":"template build: the fake builds nothing"' "$TMP/body"

# ---- many builds ---------------------------------------------------------------------
codes=
for i in $(seq 40); do
	new "many-$i"
	codes="$codes $code"
	[ "$code" = 202 ] && req POST "/v2/templates/many-$i/builds/$bid" -d '{"steps":[]}'
done
new many-last
check "e2b-template-bad: 40 failed builds in a row do not keep a new one out" \
	"$codes / $code $(show "$TMP/body")" [ "$code" = 202 ]
n=$(ls "$EMBER_STATE_DIR/e2b-builds" | wc -l)
check "e2b-template-bad: the build directories stay bounded ($n)" "" [ "$n" -le 33 ]

# ---- ember-e2b ended mid-build -------------------------------------------------------
new term-1
req POST "/v2/templates/term-1/builds/$bid" -d "$RUN"
wait_for "$TMP/term-1.pid" . 30
kill -TERM "$spid"
exit_of "$spid" 30
sleep 0.5
check "e2b-template-bad: ember-e2b ended mid-build: its emberctl is gone" \
	"$(cat "$TMP/term-1.pid")" gone "$TMP/term-1.pid"
start_server
check "e2b-template-bad: ember-e2b starts again ($url)" "$(show "$TMP/e2b.log")" [ -n "$url" ]
check "e2b-template-bad: a new ember-e2b clears the builds the last one left" \
	"$(ls -la --time-style=full-iso "$EMBER_STATE_DIR/e2b-builds"; show "$TMP/e2b.out" "$TMP/e2b.log")" \
	ev '[ "$(ls "$EMBER_STATE_DIR/e2b-builds" | grep -vx files | wc -l)" = 0 ]'
kill -TERM "$spid"
exit_of "$spid" 30

# ---- nothing else ---------------------------------------------------------------------
for f in "$TMP"/*.child "$TMP"/*.pid; do
	[ -e "$f" ] && ! gone "$f" && kill -9 "$(cat "$f")" 2>/dev/null && echo "# killed $f"
done
out=$(find /tmp -maxdepth 2 -newer "$TMP/marker" -path '*e2b-builds*' -not -path "$TMP/*" 2>/dev/null | head)
check "e2b-template-bad: no build file outside the state directory" "$out" [ -z "$out" ]
check "e2b-template-bad: no sanitizer report" "$(show "$TMP/e2b.log")" \
	ev '! grep -qE "AddressSanitizer|LeakSanitizer|runtime error" "$TMP/e2b.log"'
