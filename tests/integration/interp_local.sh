#!/usr/bin/env bash
# The code interpreter (guest-init/interp/, protocol in
# guest-init/INTERP.md) on this host, without a VM: `ember-interp start
# --listen unix:...` under the Python the rootfs copies (/usr/bin/python3,
# with Debian's numpy, pandas, matplotlib and the Jupyter stack) and
# node, then the protocol checks of tests/integration/interp_tool.py;
# then `start` again finds it running, and stopping the server ends its
# contexts.  The checks run twice: Python contexts as IPython kernels,
# and on the fallback for images without ipykernel
# (EMBER_INTERP_NO_KERNEL=1: py_worker.py).
set -u
cd "$(dirname "$0")/../.."
. tests/lib.sh

PY=${EMBER_INTERP_PYTHON:-/usr/bin/python3}
if ! "$PY" -c 'import numpy, pandas, matplotlib' 2>/dev/null; then
	echo "ok - # SKIP $PY lacks numpy/pandas/matplotlib: interp tests"
	exit 0
fi
if ! command -v node >/dev/null 2>&1; then
	echo "ok - # SKIP no node: interp tests"
	exit 0
fi

if ! "$PY" -c 'import ipykernel, jupyter_client, zmq' 2>/dev/null; then
	echo "ok - # SKIP $PY lacks ipykernel/jupyter_client/zmq: interp: the kernel path (tests/install-deps.sh installs them)"
	export EMBER_INTERP_NO_KERNEL=1
fi
# `%pip install --user` of the checks lands here, not in root's home.
export PYTHONUSERBASE=$TMP/userbase

sock=$TMP/interp.sock
log=$TMP/interp.log
start() {
	timeout 120 "$PY" guest-init/interp/ember-interp start \
		--listen "unix:$sock" --log "$log"
}
server_pid() {
	# The server: the process that listens on the socket.
	pgrep -f -x "$PY guest-init/interp/ember-interp start --listen unix:$sock --log $log" |
		while read -r p; do
			[ "$(ps -o ppid= -p "$p" | tr -d ' ')" = 1 ] && echo "$p"
		done
}
stop() {
	local p
	p=$(server_pid)
	[ -n "$p" ] && kill "$p"
}
trap 'stop; rm -rf "$TMP"' EXIT

out=$(start 2>&1)
if [ "$out" = ready ]; then
	ok "interp: ember-interp start prints ready"
else
	not_ok "interp: ember-interp start prints ready" "got: $out" \
		"$(tail -20 "$log" 2>/dev/null)"
	exit 0
fi

"$PY" tests/integration/interp_tool.py check "unix:$sock" 2>&1 ||
	not_ok "interp: the protocol checks ran to the end" \
		"$(tail -20 "$log" 2>/dev/null)"

# The fallback worker, on a server of its own.
if [ "${EMBER_INTERP_NO_KERNEL:-}" != 1 ]; then
	fsock=$TMP/fallback.sock
	out=$(EMBER_INTERP_NO_KERNEL=1 timeout 120 "$PY" guest-init/interp/ember-interp \
		start --listen "unix:$fsock" --log "$TMP/fallback.log" 2>&1)
	check "interp: a server with EMBER_INTERP_NO_KERNEL=1 starts" \
		"got: $out; $(tail -5 "$TMP/fallback.log" 2>/dev/null)" [ "$out" = ready ]
	grep -q "Python contexts use the plain worker: EMBER_INTERP_NO_KERNEL=1" \
		"$TMP/fallback.log" ||
		not_ok "interp: fallback: the log names the plain worker" \
			"$(tail -5 "$TMP/fallback.log")"
	# Its check names say "fallback:", apart from the kernel run's.
	EMBER_INTERP_NO_KERNEL=1 "$PY" tests/integration/interp_tool.py check \
		"unix:$fsock" >"$TMP/fallback.out" 2>&1
	rc=$?
	sed '/ - interp: fallback: /!s/^\(\(not \)\{0,1\}ok - interp: \)/\1fallback: /' \
		"$TMP/fallback.out"
	[ "$rc" = 0 ] ||
		not_ok "interp: fallback: the protocol checks ran to the end" \
			"$(tail -20 "$TMP/fallback.log" 2>/dev/null)"
	pkill -f -x "$PY guest-init/interp/ember-interp start --listen unix:$fsock --log $TMP/fallback.log"
	if grep -qE 'Traceback|Error' "$TMP/fallback.log"; then
		not_ok "interp: fallback: the server's log has no traceback" \
			"$(tail -20 "$TMP/fallback.log")"
	fi
fi

t0=$(date +%s%N)
out=$(start 2>&1)
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
check "interp: a second start finds the server and prints ready (${ms} ms)" \
	"got: $out" [ "$out" = ready ]

pid=$(server_pid)
workers=$(pgrep -f "guest-init/interp/js_worker.js" | wc -l)
stop
sleep 1
left=$(pgrep -f "guest-init/interp/(ember-interp start --listen unix:$sock|js_worker.js)" | wc -l)
check "interp: stopping the server ends its contexts" \
	"server $pid, $workers node workers before, $left processes after" \
	[ -n "$pid" ] && [ "$left" = 0 ]
# Contexts as guest users: a second server whose image defaults name
# `nobody` (accounts.py reads EMBER_INTERP_DEFAULTS); root only, as the
# guest's interpreter is.
if [ "$(id -u)" != 0 ]; then
	echo "ok - # SKIP not root: interp: contexts as guest users"
else
	printf 'user=nobody\0cwd=/\0' >"$TMP/defaults"
	usock=$TMP/interp-users.sock
	out=$(EMBER_INTERP_DEFAULTS=$TMP/defaults timeout 120 "$PY" \
		guest-init/interp/ember-interp start --listen "unix:$usock" \
		--log "$TMP/users.log" 2>&1)
	check "interp: a server whose defaults name nobody starts" \
		"got: $out; $(tail -5 "$TMP/users.log" 2>/dev/null)" [ "$out" = ready ]
	"$PY" tests/integration/interp_tool.py users "unix:$usock" nobody root 2>&1 ||
		not_ok "interp: users: the checks ran to the end" \
			"$(tail -20 "$TMP/users.log" 2>/dev/null)"
	pkill -f -x "$PY guest-init/interp/ember-interp start --listen unix:$usock --log $TMP/users.log"
	printf 'user=no-such-user\0' >"$TMP/defaults"
	out=$(EMBER_INTERP_DEFAULTS=$TMP/defaults timeout 120 "$PY" \
		guest-init/interp/ember-interp start --listen "unix:$TMP/bad.sock" \
		--log "$TMP/bad.log" 2>&1)
	check "interp: a default user the image lacks: start fails and says so" \
		"got: $out; $(tail -5 "$TMP/bad.log" 2>/dev/null)" \
		[ "$out" != ready ] && grep -q "^ember-interp: the image's default user: no user 'no-such-user'" "$TMP/bad.log"
	pkill -f "ember-interp start --listen unix:$TMP/bad.sock"
fi

# Each kernel's ipc directory (/tmp/ember-kernel-SERVERPID-*) goes as
# soon as the kernel is connected.
left=$(ls -d /tmp/ember-kernel-"$pid"-* 2>/dev/null)
check "interp: no kernel leaves its ipc directory behind" "left: $left" \
	[ -n "$pid" ] && [ -z "$left" ]

if grep -qE 'Traceback|Error' "$log"; then
	not_ok "interp: the server's log has no traceback" "$(tail -20 "$log")"
else
	ok "interp: the server's log has no traceback"
fi
