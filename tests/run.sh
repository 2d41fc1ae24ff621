#!/usr/bin/env bash
# ember's test runner: unit tests (cmocka, ASan/UBSan builds, no KVM
# needed), then the integration scripts in tests/integration/ (bad input
# without a guest, then real Linux boots).  Ends with the summary line
# "tests: N passed, N failed".  Run it through `make test`.
set -u
cd "$(dirname "$0")/.."

passed=0
failed=0
failures=()

count_line() {
	case $1 in
	"ok - # SKIP"*) echo "$1" ;;
	"ok - "*) passed=$((passed + 1)); echo "$1" ;;
	"not ok - "*) failed=$((failed + 1)); failures+=("${1#not ok - }"); echo "$1" ;;
	*) echo "$1" ;;
	esac
}

echo "== unit tests"
for t in build/test/test_*; do
	[ -x "$t" ] && [ "${t%.d}" = "$t" ] || continue
	name=${t##*/}
	# A hung test must fail, not stall the whole run.
	out=$(timeout 600 "$t" 2>&1)
	rc=$?
	p=$(printf '%s\n' "$out" | sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p')
	f=$(printf '%s\n' "$out" | grep -c '^\[  FAILED  \] [a-z_0-9]*$')
	if [ "$rc" = 0 ] && [ -n "$p" ]; then
		passed=$((passed + p))
		echo "ok - $name: $p tests"
	else
		failed=$((failed + (f > 0 ? f : 1)))
		failures+=("$name")
		echo "not ok - $name (exit $rc)"
		printf '%s\n' "$out" | grep -E 'FAILED|ERROR|error|Sanitizer' | head -20 | sed 's/^/#   /'
	fi
done

echo "== fuzz (libFuzzer, ${FUZZ_SECONDS:-15} s per target)"
for f in build/fuzz/fuzz_*; do
	[ -x "$f" ] && [ "${f%.*}" = "$f" ] || continue
	mkdir -p "$f.corpus"
	# Seed inputs (tests/fuzz/seeds/NAME/), read but never written.
	seeds=tests/fuzz/seeds/${f##*/}
	[ -d "$seeds" ] || seeds=
	# shellcheck disable=SC2086
	if "$f" -max_total_time="${FUZZ_SECONDS:-15}" -print_final_stats=1 \
		"$f.corpus" $seeds >"$f.log" 2>&1; then
		n=$(sed -n 's/^stat::number_of_executed_units: *//p' "$f.log")
		count_line "ok - ${f##*/}: $n inputs, no crash or sanitizer report"
	else
		count_line "not ok - ${f##*/}"
		grep -E 'ERROR|SUMMARY|runtime error' "$f.log" | head -10 | sed 's/^/#   /'
	fi
done

# net.sh builds the template "default" (a boot and the code
# interpreter's start: minutes on a PVM host) in this state directory;
# run_code.sh and mcp.sh restore their sandboxes from the same one.
SHARED_STATE_DIR=$(mktemp -d /tmp/ember-shared.XXXXXX)
export SHARED_STATE_DIR MCP_STATE_DIR=$SHARED_STATE_DIR
trap 'rm -rf "$SHARED_STATE_DIR"' EXIT

for s in tests/integration/bad_input.sh tests/integration/tiny_guests.sh \
	tests/integration/snapshot_files.sh tests/integration/seccomp.sh \
	tests/integration/overlay.sh \
	tests/integration/interp_local.sh tests/integration/jailer.sh \
	tests/integration/boot.sh tests/integration/api.sh \
	tests/integration/virtio_net.sh tests/integration/jail_net.sh \
	tests/integration/vsock.sh tests/integration/emberctl.sh \
	tests/integration/net.sh tests/integration/emberctl_jail.sh \
	tests/integration/snapshot.sh tests/integration/run_code.sh \
	tests/integration/template_save.sh \
	tests/integration/mcp.sh tests/integration/e2b.sh; do
	echo "== ${s#tests/}"
	while IFS= read -r line; do
		count_line "$line"
	done < <(bash "$s" 2>&1)
done

if [ "$failed" -gt 0 ]; then
	echo "failed:"
	printf '  %s\n' "${failures[@]}"
fi
echo "tests: $passed passed, $failed failed"
[ "$failed" = 0 ]
