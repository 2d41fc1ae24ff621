#!/usr/bin/env bash
# emberctl exec -t: an interactive shell in a sandbox from a real
# terminal, driven through tmux (a pane is the user's terminal): typed
# commands and their output, the pane resized and `stty size` following,
# Ctrl-C ending a `sleep 100` in the guest and the shell staying,
# ^C ^Z ^\ reaching the guest as bytes, TERM passed, `exit 7` giving
# status 7, the pane's terminal settings the same before and after (also
# when a signal ends emberctl), a closed pane hanging the session up.
# Without tmux: -tt with no terminal (bytes both ways, the terminal's
# processing), -t refused when stdin is not a terminal, and a guest
# without /dev/ptmx refused clearly.  Part 1 drives a fake ember
# (fake_ember.py: the agent runs on this host, so the "guest" shell is
# this host's), in seconds; part 2 boots a real sandbox.  Then ember-e2b's
# sandbox.pty through E2B's SDK (tests/e2b/pty_test.mjs) in real
# sandboxes (with PTY_FAKE_E2B=1 also on the fake).
set -u
cd "$(dirname "$0")/../.."
. tests/lib.sh

: "${EMBERCTL:=build/emberctl-asan}"
BOOT_TIMEOUT=${BOOT_TIMEOUT:-600}
export EMBER_STATE_DIR=$TMP/state
export EMBER_SUPERVISOR_LOG=$TMP/supervisor.log
E=$PWD/$EMBERCTL
if [ -z "${EMBER_E2B:-}" ]; then
	for EMBER_E2B in build/ember-e2b-asan build/ember-e2b; do
		[ -x "$EMBER_E2B" ] && break
	done
fi
EMBER_E2B=$(realpath "$EMBER_E2B")
# Each pane on a tmux server of its own (a server being killed may still
# answer a new client); all of them killed at the end.
sock=$TMP/tmux-0.sock
TM=(tmux -S "$sock" -f "$TMP/tmux.conf")
trap 'for s in "$TMP"/tmux-*.sock; do tmux -S "$s" kill-server 2>/dev/null; done; rm -rf "$TMP"' EXIT

show() { for f in "$@"; do echo "#   $f:"; sed 's/^/#     /' "$f" 2>/dev/null | tail -15; done; }
ev() { eval "$*"; }
no_sanitizer_report() { ! grep -qE 'AddressSanitizer|runtime error|LeakSanitizer' "$@"; }

if [ ! -x "$E" ] || [ ! -x "${FAKE_AGENT:-build/test/agent-host}" ]; then
	not_ok "pty: $E and ${FAKE_AGENT:-build/test/agent-host} are built" "make asan"
	exit 1
fi
if ! command -v tmux >/dev/null; then
	not_ok "pty: tmux is installed" "apt-get install tmux"
	exit 1
fi
printf 'set -g status off\nset -g default-terminal screen\nset -g history-limit 2000\n' \
	>"$TMP/tmux.conf"

# screen: what the pane shows (its history included), lines joined.
screen() { "${TM[@]}" capture-pane -p -J -S -2000 -t p 2>/dev/null; }
# on_screen REGEX [SECONDS]: 0 once a line of the pane matches REGEX.
on_screen() {
	local i
	for i in $(seq $((${2:-20} * 10))); do
		screen | grep -Eq -- "$1" && return 0
		sleep 0.1
	done
	return 1
}
# type TEXT: keys typed into the pane, then Enter.
type() { "${TM[@]}" send-keys -t p -l -- "$1" && "${TM[@]}" send-keys -t p Enter; }
# raw_mode [SECONDS]: 0 once the pane's terminal is raw (emberctl's).
raw_mode() {
	local i t
	t=$("${TM[@]}" display -p -t p '#{pane_tty}')
	for i in $(seq $((${1:-20} * 10))); do
		stty -F "$t" -a 2>/dev/null | grep -q -- '-icanon' && return 0
		sleep 0.1
	done
	return 1
}
# done_in FILE SECONDS: 0 once FILE exists.
done_in() {
	local i
	for i in $(seq $(($2 * 10))); do
		[ -e "$1" ] && return 0
		sleep 0.1
	done
	return 1
}
# pane N ARGS...: a new 80x24 tmux pane (the only one) running
# `emberctl exec ARGS` between two `stty -g` of its terminal, then its
# status into $TMP/N.status; its stderr into $TMP/N.err.
pane() {
	local n=$1
	shift
	"${TM[@]}" kill-server 2>/dev/null
	sock=$TMP/tmux-$n.sock
	TM=(tmux -S "$sock" -f "$TMP/tmux.conf")
	{
		echo "cd '$PWD'"
		echo "stty -g >'$TMP/$n.before'; echo \"\$TERM\" >'$TMP/$n.term'"
		printf '%q ' "$E" exec "$@"
		echo "2>'$TMP/$n.err'"
		echo "echo \$? >'$TMP/$n.st'; stty -g >'$TMP/$n.after'"
		echo "mv '$TMP/$n.st' '$TMP/$n.status'; exec sleep 600"
	} >"$TMP/$n.sh"
	"${TM[@]}" new-session -d -s p -x 80 -y 24 "bash '$TMP/$n.sh'"
}
# restored N: the pane's terminal settings are what they were before.
restored() { [ -s "$TMP/$1.before" ] && cmp -s "$TMP/$1.before" "$TMP/$1.after"; }

# interactive WHERE ID PIDFILE: the typed session, in a pane; the hung up
# session's guest pid is written to PIDFILE (a guest path).
interactive() {
	local w=$1 id=$2 st
	pane "$w-1" -t "$id"
	raw_mode 30
	type 'echo rea""dy-$((6*7))'
	check "$w: exec -t: the pane's terminal goes raw, a typed command runs and prints" \
		"$(screen | tail -8; show "$TMP/$w-1.err")" on_screen '^ready-42' 60
	type 'echo S1 $(stty size)'
	check "$w: exec -t: the guest's terminal has the pane's size (24 80)" \
		"$(screen | tail -5)" on_screen '^S1 24 80' 20
	"${TM[@]}" resize-window -t p -x 100 -y 30
	sleep 1
	type 'echo S2 $(stty size)'
	check "$w: exec -t: the pane resized to 100x30, stty size follows (30 100)" \
		"$(screen | tail -5)" on_screen '^S2 30 100' 20
	type 'echo T=$TERM'
	check "$w: exec -t: TERM is the host terminal's ($(cat "$TMP/$w-1.term"))" \
		"$(screen | tail -5)" on_screen "^T=$(cat "$TMP/$w-1.term")\s*$" 20
	type 'sleep 100'
	sleep 2
	"${TM[@]}" send-keys -t p C-c
	type 'echo C=$?'
	check "$w: exec -t: Ctrl-C ends a sleep 100 in the guest (status 130), the shell stays" \
		"$(screen | tail -5)" on_screen '^C=130' 20
	type 'stty raw -echo; head -c 3 | od -An -tx1; stty sane'
	sleep 1
	"${TM[@]}" send-keys -t p C-c C-z 'C-\'
	check "$w: exec -t: ^C ^Z ^\\ reach a raw guest terminal as bytes 03 1a 1c" \
		"$(screen | tail -5)" on_screen '^ *03 1a 1c' 20
	type 'exit 7'
	done_in "$TMP/$w-1.status" 30
	st=$(cat "$TMP/$w-1.status" 2>/dev/null)
	check "$w: exec -t: exit 7 in the shell: emberctl exits 7" \
		"status '$st'; $(screen | tail -5; show "$TMP/$w-1.err")" [ "$st" = 7 ]
	check "$w: exec -t: the pane's terminal is restored (stty -g before = after)" \
		"$(cat "$TMP/$w-1.before" "$TMP/$w-1.after")" restored "$w-1"

	# A signal that ends emberctl restores the terminal too.
	pane "$w-2" -t "$id" -- sleep 101
	raw_mode 60
	for _ in $(seq 300); do
		pid=$(pgrep -f "exec -t $id -- sleep 101" | head -1)
		[ -z "$pid" ] || break
		sleep 0.2
	done
	t=$("${TM[@]}" display -p -t p '#{pane_tty}')
	kill -TSTP "$pid" 2>/dev/null
	sleep 1
	stty -F "$t" -g >"$TMP/$w-2.stopped"
	kill -CONT "$pid" 2>/dev/null
	check "$w: exec -t stopped (SIGTSTP): the terminal is the shell's; raw again on SIGCONT" \
		"pid '$pid'; $(cat "$TMP/$w-2.before" "$TMP/$w-2.stopped")" \
		ev 'cmp -s "$TMP/$w-2.before" "$TMP/$w-2.stopped" && raw_mode 10'
	kill -ALRM "$pid" 2>/dev/null
	done_in "$TMP/$w-2.status" 20
	st=$(cat "$TMP/$w-2.status" 2>/dev/null)
	check "$w: exec -t ended by SIGALRM (142): the terminal is restored" \
		"pid '$pid' status '$st'; $(cat "$TMP/$w-2.before" "$TMP/$w-2.after")" \
		ev '[ "$st" = 142 ] && restored "$w-2"'

	# The pane closed under a session: SIGHUP, passed on, ends it.
	pane "$w-3" -t "$id" -- sh -c "echo \$\$ >$3; exec sleep 102"
	raw_mode 60
	for _ in $(seq 300); do
		pid=$(pgrep -f "exec -t $id -- sh -c" | head -1)
		[ -z "$pid" ] || break
		sleep 0.2
	done
	sleep 1
	"${TM[@]}" kill-server
	for _ in $(seq 200); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
	check "$w: exec -t: the pane closed (SIGHUP): emberctl ends" \
		"pid '$pid'" ev '[ -n "$pid" ] && ! kill -0 "$pid" 2>/dev/null'
}

# plain WHERE ID: the cases without a terminal.
plain() {
	local w=$1 id=$2 out rc
	"$E" exec -t "$id" -- true </dev/null >"$TMP/$w-r.out" 2>"$TMP/$w-r.err"
	rc=$?
	check "$w: exec -t with stdin not a terminal: refused (125), saying why and -tt" \
		"exit $rc; $(show "$TMP/$w-r.err")" \
		ev '[ $rc = 125 ] && grep -q "stdin is not a terminal (-tt" "$TMP/$w-r.err" && [ ! -s "$TMP/$w-r.out" ]'
	printf 'echo in-$((2+3))\nexit 3\n' |
		TERM=xterm-ember "$E" exec -tt "$id" -- sh -c 'tty; echo "T=$TERM"; read l; eval "$l"; read l; eval "$l"' \
			>"$TMP/$w-f.out" 2>"$TMP/$w-f.err"
	rc=$?
	out=$(tr -d '\r' <"$TMP/$w-f.out")
	check "$w: exec -tt without a terminal: a guest terminal, TERM, stdin, status 3" \
		"exit $rc; got: $out; $(show "$TMP/$w-f.err")" \
		ev '[ $rc = 3 ] && echo "$out" | grep -q "^/dev/pts/" && echo "$out" | grep -qx "T=xterm-ember" && echo "$out" | grep -qx "in-5"'
	"$E" exec -tt "$id" -- printf 'a\001\377\nb' </dev/null 2>"$TMP/$w-b.err" |
		od -An -tx1 | tr -s ' \n' ' ' >"$TMP/$w-b.out"
	check "$w: exec -tt: raw bytes out, the terminal's \\n -> \\r\\n" \
		"got: $(cat "$TMP/$w-b.out"); $(show "$TMP/$w-b.err")" \
		grep -qx ' 61 01 ff 0d 0a 62 ' "$TMP/$w-b.out"
	"$E" exec -t --help >"$TMP/$w-h.out" 2>&1
	check "$w: exec's usage names -t" "$(show "$TMP/$w-h.out")" \
		grep -q 'exec \[-i\] \[-t\]' "$TMP/$w-h.out"
}

# e2b WHERE [PTY_USER [BREAK]]: ember-e2b (EMBER_E2B) on a free loopback port,
# tests/e2b/pty_test.mjs against it (sandbox.pty with E2B's SDK), in
# the state directory's template "default"; the server stopped after.
# BREAK=1: a last check removes the guest's /dev/ptmx (a real guest only).
e2b() {
	local w=$1 key url spid rc
	if ! command -v node >/dev/null || [ ! -d tests/e2b/node_modules/e2b ]; then
		echo "ok - # SKIP $w: no node or no tests/e2b/node_modules (npm ci there): sandbox.pty with E2B's SDK"
		return 0
	fi
	key=$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')
	(umask 077 && echo "$key" >"$TMP/$w-key")
	"$EMBER_E2B" --listen 127.0.0.1:0 --api-key-file "$TMP/$w-key" \
		>"$TMP/$w-e2b.out" 2>"$TMP/$w-e2b.log" &
	spid=$!
	wait_for "$TMP/$w-e2b.out" 'listening on http://127\.0\.0\.1:[1-9]' 30 "$spid"
	url=$(sed -n 's|.*listening on \(http://127\.0\.0\.1:[0-9]*\).*|\1|p' "$TMP/$w-e2b.out" | head -1)
	env -u E2B_DEBUG -u E2B_DOMAIN E2B_API_URL="$url" E2B_SANDBOX_URL="$url" \
		E2B_API_KEY="$key" PTY_USER="${2:-}" PTY_BREAK_PTMX="${3:-0}" \
		timeout -k 10 900 node tests/e2b/pty_test.mjs >"$TMP/$w-sdk.out" 2>"$TMP/$w-sdk.err"
	rc=$?
	grep -E '^(not )?ok - ' "$TMP/$w-sdk.out" | sed "s/^\(\(not \)\?ok - \)e2b-pty:/\1$w: e2b:/"
	grep -q '^not ok - ' "$TMP/$w-sdk.out" ||
		check "$w: e2b: the SDK's pty test ends well" \
			"exit $rc; $(show "$TMP/$w-sdk.out" "$TMP/$w-sdk.err" "$TMP/$w-e2b.log")" [ $rc = 0 ]
	kill "$spid" 2>/dev/null
	exit_of "$spid" 30
	check "$w: e2b: ember-e2b stops on SIGTERM, no sanitizer report" \
		"status $st; $(show "$TMP/$w-e2b.log")" \
		ev '[ "$st" = 0 ] && no_sanitizer_report "$TMP/$w-e2b.log"'
	for s in $(sed -n 's/^# sandbox \([0-9a-f]\{12\}\)$/\1/p' "$TMP/$w-sdk.out"); do
		"$E" kill "$s" >/dev/null 2>&1
	done
}

# ---- part 1: a fake ember (the "guest" is this host) --------------------
(
	export EMBER_BIN=$PWD/tests/integration/fake_ember.py
	export EMBER_KERNEL=$TMP/vmlinux EMBER_ROOTFS=$TMP/root.img
	echo kernel >"$EMBER_KERNEL"
	truncate -s 16M "$EMBER_ROOTFS"
	id=$("$E" run 2>"$TMP/run.err")
	check "fake: run" "$(show "$TMP/run.err")" [ -n "$id" ]
	[ -n "$id" ] || exit 0
	plain fake "$id"
	interactive fake "$id" "$TMP/hup.pid"
	p=$(cat "$TMP/hup.pid" 2>/dev/null)
	for _ in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.2; done
	check "fake: exec -t: the closed pane's guest session is hung up too" \
		"pid '$p'" ev '[ -n "$p" ] && ! kill -0 "$p" 2>/dev/null'
	"$E" kill "$id" >/dev/null 2>&1
	# PTY_FAKE_E2B=1: ember-e2b's sandbox.pty here too (seconds where
	# the CPU is not emulated; part 2 does it in real sandboxes): from
	# the template "default", a snapshot of the fake; the "guest" has no
	# account "user".
	[ "${PTY_FAKE_E2B:-0}" = 1 ] || exit 0
	export EMBERCTL_BIN=$E
	"$E" template build default >"$TMP/tpl.out" 2>&1
	check "fake: template build default" "$(show "$TMP/tpl.out")" \
		[ -d "$EMBER_STATE_DIR/templates/default" ]
	e2b fake root
	"$E" template rm --force default >/dev/null 2>&1
)
touch "$TMP/supervisor.log"
check "fake: no sanitizer report (emberctl)" "$(show "$TMP"/fake*.err)" \
	no_sanitizer_report "$TMP"/fake*.err "$TMP/supervisor.log"

# ---- part 2: a real sandbox ---------------------------------------------
need_kvm "exec -t in a real sandbox"
export EMBER_BIN=$PWD/$EMBER EMBER_KERNEL=$GUEST/vmlinux EMBER_ROOTFS=$GUEST/rootfs.ext4
id=$(timeout "$BOOT_TIMEOUT" "$E" run --boot-timeout "$BOOT_TIMEOUT" 2>"$TMP/vrun.err")
check "vm: run" "$(show "$TMP/vrun.err")" [ -n "$id" ]
[ -n "$id" ] || exit 1
plain vm "$id"
interactive vm "$id" /tmp/pty-hup.pid
hup=$("$E" exec "$id" -- sh -c 'p=$(cat /tmp/pty-hup.pid); for i in $(seq 50); do kill -0 $p 2>/dev/null || exit 0; sleep 0.2; done; echo $p alive' 2>&1)
check "vm: exec -t: the closed pane's guest session is hung up too" "got: $hup" \
	[ -z "$hup" ]

# A guest without pseudo-terminals: no devpts, no /dev/ptmx.
"$E" exec "$id" -- sh -c 'umount /dev/pts && rm -f /dev/ptmx' 2>"$TMP/np.err"
"$E" exec -tt "$id" -- true </dev/null >/dev/null 2>"$TMP/np.err"
rc=$?
check "vm: exec -t in a guest without /dev/ptmx: 125, saying so" \
	"exit $rc; $(show "$TMP/np.err")" \
	ev '[ $rc = 125 ] && grep -q "has no pseudo-terminals (/dev/ptmx" "$TMP/np.err"'
out=$("$E" exec "$id" -- echo still 2>&1)
check "vm: the sandbox still answers exec without -t" "got: $out" [ "$out" = still ]
"$E" kill "$id" >/dev/null 2>"$TMP/vk.err"

# ember-e2b's sandbox.pty in real sandboxes, as E2B's user "user": from
# the template "default" of SHARED_STATE_DIR (tests/run.sh: net.sh builds
# it) when there, else built here (and removed after).
(
	own=
	if [ -n "${SHARED_STATE_DIR:-}" ] && [ -d "$SHARED_STATE_DIR/templates/default" ]; then
		export EMBER_STATE_DIR=$SHARED_STATE_DIR
	else
		own=1
		timeout "$BOOT_TIMEOUT" "$E" template build default --if-missing \
			--boot-timeout "$BOOT_TIMEOUT" >"$TMP/vtpl.out" 2>&1
		check "vm: template build default" "$(show "$TMP/vtpl.out")" \
			[ -d "$EMBER_STATE_DIR/templates/default" ]
	fi
	export EMBERCTL_BIN=$E
	e2b vm "" 1
	[ -z "$own" ] || "$E" template rm --force default >/dev/null 2>&1
)
touch "$TMP/supervisor.log"
check "vm: no sanitizer report (emberctl, supervisor)" \
	"$(show "$TMP"/vm*.err "$TMP/supervisor.log")" \
	no_sanitizer_report "$TMP"/vm*.err "$TMP/supervisor.log"
