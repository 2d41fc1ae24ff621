#!/usr/bin/env bash
# The HTTP listener's limits (api/sandbox/listener.h) against a slowloris,
# on this host, no VM: ember-e2b and ember-mcp --http, each on a free
# loopback port with an empty state directory, get 512 connections from
# 127.0.0.2 that trickle a header byte every 2 s
# (tests/integration/slowloris.py): those past the per-client limit are
# closed at once, a normal client on 127.0.0.1 is answered meanwhile, the
# header time cuts every trickler, and the server serves as before; then
# it stops on SIGTERM with status 0 and no sanitizer report.  For
# ember-mcp (its idle time is short) also a kept-alive connection: a
# second request is answered, a trickled third one cut by the idle time
# plus the header time.
# EMBER_E2B, EMBER_MCP: the servers (build/ember-*-asan, else build/ember-*).
set -u
cd "$(dirname "$0")/../.."
. tests/lib.sh

PY=/usr/bin/python3
show() { for f in "$@"; do echo "#   $f:"; sed 's/^/#     /' "$f" | tail -15; done; }
no_sanitizer_report() { ! grep -qE 'AddressSanitizer|runtime error|LeakSanitizer' "$@"; }
pick() { local f; for f in "$@"; do [ -x "$f" ] && { echo "$f"; return; }; done; }
: "${EMBER_E2B:=$(pick build/ember-e2b-asan build/ember-e2b)}"
: "${EMBER_MCP:=$(pick build/ember-mcp-asan build/ember-mcp)}"
if [ -z "$EMBER_E2B" ] || [ -z "$EMBER_MCP" ]; then
	not_ok "http limits: the servers are built" "make all asan"
	exit 1
fi
if ! "$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.2", 0))' 2>/dev/null; then
	echo "ok - # SKIP cannot bind 127.0.0.2: http limits"
	exit 0
fi
export EMBER_STATE_DIR=$TMP/state
mkdir -p "$EMBER_STATE_DIR"
# The limits of api/e2b/http.c and api/mcp/http.c.
E2B_PER_CLIENT=128 MCP_PER_CLIENT=64 HEADER_S=10 MCP_IDLE_S=10

# run_server NAME out|log PATH CMD...: start it (its pid in $spid, its
# port in $port), its stdout in $TMP/NAME.out, its stderr in .log; the
# URL it listens on (http://127.0.0.1:PORT, then PATH) in the one named.
run_server() {
	local name=$1 f=$TMP/$1.$2 re=$3
	shift 3
	"$@" >"$TMP/$name.out" 2>"$TMP/$name.log" &
	spid=$!
	wait_for "$f" "listening on http://127\.0\.0\.1:[0-9]+$re" 30 "$spid"
	port=$(sed -n "s|.*listening on http://127\.0\.0\.1:\([0-9]*\)$re.*|\1|p" "$f" | head -1)
	check "$name: listens on a free loopback port (${port:-none})" \
		"$(show "$TMP/$name.out" "$TMP/$name.log")" [ -n "$port" ]
	if [ -z "$port" ]; then
		kill -KILL "$spid" 2>/dev/null
		wait "$spid" 2>/dev/null
	fi
}

# stop_server NAME: SIGTERM, status 0, no sanitizer report.
stop_server() {
	kill -TERM "$spid" 2>/dev/null
	exit_of "$spid" 30
	check "$1: stops on SIGTERM with status 0" "status $st; $(show "$TMP/$1.log")" [ "$st" = 0 ]
	check "$1: no sanitizer report" \
		"$(grep -m5 -hE 'AddressSanitizer|runtime error|LeakSanitizer' "$TMP/$1.log")" \
		no_sanitizer_report "$TMP/$1.log"
}

# ---- ember-e2b ----------------------------------------------------------------------------
key=$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')
(umask 077 && echo "$key" >"$TMP/key")
run_server ember-e2b out '' \
	"$EMBER_E2B" --listen 127.0.0.1:0 --api-key-file "$TMP/key"
if [ -n "$port" ]; then
	printf 'GET /sandboxes HTTP/1.1\r\nHost: 127.0.0.1:%s\r\nX-API-Key: %s\r\nConnection: close\r\n\r\n' \
		"$port" "$key" >"$TMP/e2b.req"
	timeout 120 "$PY" tests/integration/slowloris.py ember-e2b "$port" \
		"$E2B_PER_CLIENT" "$HEADER_S" "$TMP/e2b.req" 200 ||
		not_ok "ember-e2b: the slowloris ran" "exit $?"
	stop_server ember-e2b
fi

# ---- ember-mcp --http ---------------------------------------------------------------------
echo "$key" >"$TMP/token"
run_server ember-mcp log /mcp \
	"$EMBER_MCP" --http 127.0.0.1:0 --token-file "$TMP/token"
if [ -n "$port" ]; then
	# GET: 405 (no server-initiated stream), once the token is checked.
	printf 'GET /mcp HTTP/1.1\r\nHost: 127.0.0.1:%s\r\nAuthorization: Bearer %s\r\nConnection: close\r\n\r\n' \
		"$port" "$key" >"$TMP/mcp.req"
	# initialize: 200, and the connection is kept alive.
	body='{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"http_limits","version":"1"}}}'
	printf 'POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:%s\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: %s\r\n\r\n%s' \
		"$port" "$key" "${#body}" "$body" >"$TMP/mcp_init.req"
	timeout 120 "$PY" tests/integration/slowloris.py ember-mcp "$port" \
		"$MCP_PER_CLIENT" "$HEADER_S" "$TMP/mcp.req" 405 \
		$((MCP_IDLE_S + HEADER_S)) "$TMP/mcp_init.req" 200 ||
		not_ok "ember-mcp: the slowloris ran" "exit $?"
	stop_server ember-mcp
fi
