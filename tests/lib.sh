# Shared helpers for ember's shell tests (sourced).  Each check prints
# "ok - NAME" or "not ok - NAME" (with the reason below it); tests/run.sh
# counts them.
: "${EMBER:=build/ember-asan}"
: "${GUEST:=build/guest}"
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}

TMP=$(mktemp -d /tmp/ember-test.XXXXXX)
trap 'rm -rf "$TMP"' EXIT

ok() { echo "ok - $1"; }
not_ok() {
	echo "not ok - $1"
	shift
	for l in "$@"; do echo "#   $l"; done
}

# check NAME CONDITION-DESCRIPTION COMMAND...: ok when COMMAND succeeds.
check() {
	local name=$1 why=$2
	shift 2
	if "$@"; then ok "$name"; else not_ok "$name" "$why"; fi
}

have_kvm() { [ -r /dev/kvm ] && [ -w /dev/kvm ]; }

# need_kvm WHAT: a VM test's first step.  Without a usable /dev/kvm it
# fails, never skips: tests/run.sh (make test) runs the VM tests in the
# KVM box (tests/kvmbox/) on such a host.
need_kvm() {
	have_kvm && return 0
	not_ok "$1: no usable /dev/kvm" \
		"run the VM tests through 'make test' (it uses the KVM box, tests/kvmbox/kvmbox), or on a host with KVM"
	exit 1
}

# wait_for FILE REGEX [SECONDS] [PID]: 0 once FILE has a line matching
# REGEX (grep -E); 1 after SECONDS (20), or as soon as PID has ended.
wait_for() {
	local i
	for i in $(seq $((${3:-20} * 20))); do
		grep -Eq -- "$2" "$1" 2>/dev/null && return 0
		[ -z "${4:-}" ] || kill -0 "$4" 2>/dev/null || return 1
		sleep 0.05
	done
	return 1
}

# exit_of PID [SECONDS]: its exit status in $st ("timeout" when it runs
# on: it is killed).
exit_of() {
	local i
	for i in $(seq $((${2:-30} * 20))); do
		if ! kill -0 "$1" 2>/dev/null; then
			wait "$1" 2>/dev/null
			st=$?
			return
		fi
		sleep 0.05
	done
	kill -9 "$1" 2>/dev/null
	wait "$1" 2>/dev/null
	st=timeout
}

# npm_install DIR: DIR's pinned packages (package-lock.json) in
# DIR/node_modules.  npm ci, unless npm's record of the last install
# (node_modules/.package-lock.json) is newer than the lock: tests/run.sh
# installs them on the host before the VM tests, since the KVM box has no
# network.
npm_install() {
	if [ -f "$1/node_modules/.package-lock.json" ] &&
		[ ! "$1/package-lock.json" -nt "$1/node_modules/.package-lock.json" ]; then
		echo "npm_install: $1/node_modules is installed from its lock"
		return 0
	fi
	(cd "$1" && timeout 600 npm ci --silent --no-audit --no-fund)
}

# state_dir_procs [DIR]: the pids of every process of the sandboxes under
# the state directory DIR (default $EMBER_STATE_DIR): ember's arguments
# name it, and each info file names its supervisor (a pid and its start
# time, so that a recycled pid is never named).  For a test's clean-up.
state_dir_procs() {
	local dir=${1:-$EMBER_STATE_DIR} f pid start
	pgrep -f "$dir/" 2>/dev/null
	for f in "$dir"/*/info; do
		[ -f "$f" ] || continue
		pid=$(sed -n 's/^supervisor=//p' "$f")
		start=$(sed -n 's/^supervisor_start=//p' "$f")
		[ -n "$pid" ] && [ "$pid" != 0 ] &&
			[ "$(sed 's/.*) //' "/proc/$pid/stat" 2>/dev/null | cut -d" " -f20)" = "$start" ] &&
			echo "$pid"
	done
	return 0
}
