#!/usr/bin/env bash
# ember's test runner, in four phases: unit tests (cmocka, ASan/UBSan
# builds), the fuzz targets (libFuzzer), the integration scripts that need
# no VM, and the VM tests (the rest of tests/integration/: bad input, tiny
# guests, real Linux boots).  The first three run on this host; the VM tests
# run here where /dev/kvm works, else in the KVM box (tests/kvmbox/kvmbox:
# QEMU TCG with nested SVM), with EMBER_KVMBOX=1 forcing the box and
# EMBER_KVMBOX=0 forbidding it.  Where /dev/kvm comes from kvm_pvm (a PVM
# host), they run in the box too, which runs guest kernel code several
# times faster than PVM's instruction emulator, and PVM_SCRIPTS run here
# as well (see below).  A VM test never skips for lack of KVM: with
# neither it fails and says why.  Each script must report at least one
# case and end as its cases say; one that cannot start or reports none
# counts as failed.  Ends with each phase's time and the summary line
# "tests: N passed, N failed[, N skipped]".  Run it through `make test`.
#
#   tests/run.sh                  every phase
#   tests/run.sh --only vm [NAME...]
#                                 the VM tests alone (or the scripts NAME,
#                                 as in tests/integration/NAME.sh), their
#                                 lines only: what the box runs; no summary
# The whole script is one compound command: read before it runs, so that
# editing this file while it runs cannot change a run under way.
{
set -u
shopt -s lastpipe
cd "$(dirname "$0")/.."

passed=0
failed=0
skipped=0
failures=()
times=()

count_line() {
	case $1 in
	"ok - # SKIP"*) skipped=$((skipped + 1)); echo "$1" ;;
	"ok - "*) passed=$((passed + 1)); echo "$1" ;;
	"not ok - "*) failed=$((failed + 1)); failures+=("${1#not ok - }"); echo "$1" ;;
	"# time "*) times+=("${1#\# time }") ;;
	*) echo "$1" ;;
	esac
}

# fmt_s S: "M min S s"
fmt_s() { printf '%d min %02d s' $(($1 / 60)) $(($1 % 60)); }

unit_tests() {
	local t name out rc p f
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
}

fuzz_targets() {
	local f seeds n
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
}

# Integration scripts that need no VM (here, on the host), and those that
# boot guests (where /dev/kvm works: here or in the KVM box).
# The script names only, as in tests/integration/NAME.sh.
HOST_SCRIPTS=(interp_local interp_display image_unpack e2b_template_bad containerd_shim http_limits)
VM_SCRIPTS=(bad_input tiny_guests snapshot_files seccomp overlay
	jailer jailer_kata boot api virtio_net jail_net vsock emberctl net
	emberctl_jail snapshot run_code template_save template_image spare_drives
	mcp e2b containerd
	attach pty ontimeout expose clock_jump enospc soak)
# In the KVM box, the scripts the second box runs (it starts when the host
# phases end): about 2/5 of the VM tests' time on a 2-core host, so that
# both boxes end together.  net.sh builds the template that run_code.sh
# and mcp.sh restore (SHARED_STATE_DIR): the three stay in one box.
VM_LATE=(api emberctl_jail snapshot e2b containerd clock_jump enospc soak)
# On a PVM host, the scripts that also run natively, alone after the
# boxes, so that every run there proves ember's own PVM path (the PVM
# profile's boot, snapshots and restores, the start gate with many
# sandboxes starting at once: api/sandbox/start_gate.h).  The rest would
# take too long there: guest kernel code runs in the host's instruction
# emulator (a boot 8-27 s against 1.2 s in the box; the template
# "default"'s interpreter start 423 s), and the whole suite natively took
# 63 min of VM tests on a 2-core PVM host.  Not beside the boxes: with
# two boxes busy, a PVM guest's boot took 5 min and its agent missed 10 s
# pings (the host's cost of switching between busy processes and PVM
# guests).  EMBER_KVMBOX=0 runs every VM script natively.
PVM_SCRIPTS=(tiny_guests snapshot)

# The run's time budget (EMBER_TEST_BUDGET seconds, default 70 min,
# from the start of the run; the box inherits the deadline): a script is
# limited to what is left of it (and to 25 min), and one that the budget
# no longer reaches is not run and counts as failed, so that a run that
# went slow still ends, with its summary, inside CI's 90 minutes.
: "${EMBER_TEST_DEADLINE:=$(($(date +%s) + ${EMBER_TEST_BUDGET:-4200}))}"
export EMBER_TEST_DEADLINE

# left_behind SID NAME: the processes still in the session SID that the
# script NAME ran in, killed, and named on a comment line.
left_behind() {
	local p names=
	for p in $(pgrep -s "$1" 2>/dev/null); do
		names+=" $p:$(tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null | cut -c1-60)"
	done
	[ -z "$names" ] && return
	pkill -KILL -s "$1" 2>/dev/null
	echo "# integration/$2.sh left processes behind, killed:$names"
}

# scripts NAME...: each integration script in turn, its lines on stdout
# (for count_line), a "# time" line each; a script that reports no case,
# or ends non-zero without a failed case, adds a failed case of its own.
scripts() {
	local s line n bad rc t0 left lim out pid
	# Debian's own tools: python3 is the one install-deps gave numpy,
	# pandas and matplotlib (not a version manager's shim before it).
	export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
	for s in "$@"; do
		echo "== integration/$s.sh"
		left=$((EMBER_TEST_DEADLINE - $(date +%s)))
		if [ "$left" -lt 60 ]; then
			echo "not ok - integration/$s.sh not run: the run's time budget is spent (EMBER_TEST_BUDGET)"
			continue
		fi
		lim=$((left < 1500 ? left : 1500))
		t0=$SECONDS
		n=0
		bad=0
		# A hung script must fail, not stall the whole run.  It runs in
		# a session of its own, its output in a file read until it
		# ends: a process it left behind (an inner `timeout`, which
		# moves to a process group of its own and outlives the kill of
		# the script's, with its child) no longer holds a pipe that the
		# reader waits on (CI stop 33: a box silent for 68 min).  What
		# is left in the session then is killed and named.
		out=$(mktemp "${TMPDIR:-/tmp}/ember-script.XXXXXX")
		setsid timeout -k 10 "$lim" bash "tests/integration/$s.sh" \
			</dev/null >"$out" 2>&1 &
		pid=$!
		tail -s 0.2 -n +1 -f --pid="$pid" "$out" |
			while IFS= read -r line; do
				case $line in
				"not ok - "*) n=$((n + 1)); bad=$((bad + 1)) ;;
				"ok - "*) n=$((n + 1)) ;;
				esac
				echo "$line"
			done
		wait "$pid"
		rc=$?
		left_behind "$pid" "$s"
		rm -f "$out"
		if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
			echo "not ok - integration/$s.sh was stopped after $lim s (exit $rc)"
		elif [ "$n" = 0 ]; then
			echo "not ok - integration/$s.sh reported no case (exit $rc)"
		elif [ "$rc" != 0 ] && [ "$bad" = 0 ]; then
			echo "not ok - integration/$s.sh ended with exit status $rc after its cases"
		fi
		echo "# time integration/$s.sh $((SECONDS - t0))"
	done
}

vm_scripts() {
	# net.sh builds the template "default" (a boot and the code
	# interpreter's start) in this state directory; run_code.sh and
	# mcp.sh restore their sandboxes from the same one.
	SHARED_STATE_DIR=$(mktemp -d /tmp/ember-shared.XXXXXX)
	export SHARED_STATE_DIR MCP_STATE_DIR=$SHARED_STATE_DIR
	scripts "${VM_SCRIPTS[@]}"
	rm -rf "$SHARED_STATE_DIR"
}

# vm_scripts_only SCRIPT...: these VM scripts alone, as vm_scripts does.
vm_scripts_only() {
	VM_SCRIPTS=("$@")
	vm_scripts
}

if [ "${1:-}" = --only ] && [ "${2:-}" = vm ]; then
	shift 2
	[ $# = 0 ] || VM_SCRIPTS=("$@")
	vm_scripts
	exit 0
fi

# The SDKs the e2b and mcp tests drive, from their locks, here: the KVM box
# has no network.
for d in tests/e2b tests/mcp; do
	(. tests/lib.sh && npm_install "$d") >/dev/null 2>&1 ||
		echo "# npm ci in $d failed here; integration/${d#tests/}.sh will try again"
done

# Where the VM tests run.  In the KVM box they run in two boxes: the first
# starts at once and runs beside the host phases, the second (VM_LATE)
# starts when the host phases are done; each keeps one host core busy.
# Their lines are shown, and counted, after the host phases, box by box.
where=
vm_pids=()
vmlog=
vm_logs=()
trap 'for p in "${vm_pids[@]}"; do if kill -0 "$p" 2>/dev/null; then
	pkill -TERM -P "$p"; kill "$p"; fi; done; rm -f "$vmlog" "${vm_logs[@]}"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
# start_box SCRIPT...: a KVM box running these VM scripts in the
# background; its pid and log appended to vm_pids and vm_logs.  Each box
# gets 2/5 of the host's RAM (TCG takes it only as the box touches it).
start_box() {
	local log left mib
	log=$(mktemp "${TMPDIR:-/tmp}/ember-vm.XXXXXX")
	left=$((EMBER_TEST_DEADLINE - $(date +%s) + 120))
	[ "$left" -gt 300 ] || left=300
	mib=$(($(sed -n 's/^MemTotal: *\([0-9]*\) kB/\1/p' /proc/meminfo) * 2 / 5 / 1024))
	(
		tests/kvmbox/kvmbox --mem "$mib" --timeout "$left" -- \
			bash tests/run.sh --only vm "$@" 2>&1
		echo "# box-exit $?"
	) >"$log" 2>&1 &
	vm_pids+=($!)
	vm_logs+=("$log")
}
pvm_native=
vm_early=()
for s in "${VM_SCRIPTS[@]}"; do
	case " ${VM_LATE[*]} " in
	*" $s "*) ;;
	*) vm_early+=("$s") ;;
	esac
done
vmlog=$(mktemp "${TMPDIR:-/tmp}/ember-vm.XXXXXX")
if ! mode=$(tests/kvmbox/kvmbox --decide 2>"$vmlog"); then
	count_line "not ok - VM tests: $(cat "$vmlog")"
	mode=none
elif [ "$mode" = native ] && [ -z "${EMBER_KVMBOX:-}" ] &&
	[ -e /sys/module/kvm_pvm ]; then
	mode=box
	where="in two KVM boxes, the first beside the host phases; ${PVM_SCRIPTS[*]} then also on this host's PVM /dev/kvm"
	pvm_native=1
	echo "== VM tests: this host's /dev/kvm is PVM's (kvm_pvm): in the KVM box, faster there (EMBER_KVMBOX=0 runs them here), and ${PVM_SCRIPTS[*]} here too, after the boxes"
	t_vm=$SECONDS
	start_box "${vm_early[@]}"
elif [ "$mode" = native ]; then
	where="on this host's /dev/kvm"
else
	where="in two KVM boxes, the first beside the host phases"
	if [ "${EMBER_KVMBOX:-}" = 1 ]; then
		echo "== VM tests: in the KVM box (EMBER_KVMBOX=1), beside the host phases"
	else
		echo "== VM tests: no usable /dev/kvm here: in the KVM box (QEMU TCG, nested SVM; EMBER_KVMBOX=0 forbids it), beside the host phases"
	fi
	t_vm=$SECONDS
	start_box "${vm_early[@]}"
fi

t0=$SECONDS
unit_tests
times+=("phase:unit $((SECONDS - t0))")
t0=$SECONDS
fuzz_targets
times+=("phase:fuzz $((SECONDS - t0))")
t0=$SECONDS
scripts "${HOST_SCRIPTS[@]}" | while IFS= read -r line; do count_line "$line"; done
times+=("phase:host $((SECONDS - t0))")

# vm_line LINE: count_line, and the box's own exit status.
vm_line() {
	case $1 in
	"# box-exit 0") ;;
	"# box-exit "*) count_line "not ok - the KVM box ended with exit status ${1#\# box-exit }" ;;
	*) count_line "$1" ;;
	esac
}
if [ "$mode" = native ]; then
	t0=$SECONDS
	vm_scripts | while IFS= read -r line; do count_line "$line"; done
	times+=("phase:vm $((SECONDS - t0))")
elif [ "$mode" = box ]; then
	[ "${#VM_LATE[@]}" = 0 ] || start_box "${VM_LATE[@]}"
	for i in "${!vm_pids[@]}"; do
		when="since the start"
		[ "$i" = 0 ] || when="since the host phases ended"
		echo "== VM tests, box $((i + 1)) ($when; as they come from now on)"
		n=0
		tail -n +1 -f --pid="${vm_pids[$i]}" "${vm_logs[$i]}" |
			while IFS= read -r line; do
				n=$((n + 1))
				vm_line "$line"
			done
		wait "${vm_pids[$i]}"
		# Whatever tail had not read when the box ended.
		tail -n +$((n + 1)) "${vm_logs[$i]}" | while IFS= read -r line; do vm_line "$line"; done
	done
	if [ -n "$pvm_native" ]; then
		echo "== VM tests on this host's PVM /dev/kvm (${PVM_SCRIPTS[*]})"
		EMBER_KVMBOX=0 vm_scripts_only "${PVM_SCRIPTS[@]}" |
			while IFS= read -r line; do
				case $line in
				"# time "*) count_line "# time pvm:${line#\# time }" ;;
				"ok - # SKIP"*) count_line "$line" ;;
				"ok - "*) count_line "ok - (PVM) ${line#ok - }" ;;
				"not ok - "*) count_line "not ok - (PVM) ${line#not ok - }" ;;
				*) count_line "$line" ;;
				esac
			done
	fi
	times+=("phase:vm $((SECONDS - t_vm))")
fi

if [ "$failed" -gt 0 ]; then
	echo "failed:"
	printf '  %s\n' "${failures[@]}"
fi
echo "times:"
for t in "${times[@]}"; do
	case $t in
	phase:*) ;;
	*) printf '  %-32s %s\n' "${t% *}" "$(fmt_s "${t##* }")" ;;
	esac
done
for t in "${times[@]}"; do
	case $t in
	phase:vm*) printf '  %-32s %s (%s)\n' "phase: VM tests" "$(fmt_s "${t##* }")" "$where" ;;
	phase:unit*) printf '  %-32s %s\n' "phase: unit tests" "$(fmt_s "${t##* }")" ;;
	phase:fuzz*) printf '  %-32s %s\n' "phase: fuzz targets" "$(fmt_s "${t##* }")" ;;
	phase:host*) printf '  %-32s %s\n' "phase: host integration" "$(fmt_s "${t##* }")" ;;
	esac
done
printf '  %-32s %s\n' total "$(fmt_s "$SECONDS")"
echo "tests: $passed passed, $failed failed, $skipped skipped"
[ "$failed" = 0 ]
exit
}
