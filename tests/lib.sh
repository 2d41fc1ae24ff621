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
