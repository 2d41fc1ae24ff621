#!/usr/bin/env bash
# ember's seccomp filters (vmm/seccomp/seccomp.h), with tiny guests only
# (seconds): a forbidden call from each kind of thread (main, event, vCPU;
# the test builds' hook EMBER_TEST_SECCOMP_VIOLATE) ends ember with status
# 159 after the line naming the thread and the call, on stderr and in the
# logger's file; a running ember has seccomp mode 2, one filter each and
# no_new_privs on every thread, booted or restored (resumed at the load or
# later), and its control calls that open files after the lock-down (PATCH
# /drives, snapshot create) still work; --no-seccomp leaves every thread
# unfiltered and says so.
# shellcheck disable=SC2154 # PID_NAME: set by start()
set -u
cd "$(dirname "$0")/../.." || exit 1
. tests/lib.sh

G=${GUESTS:-build/guests}
API="python3 tests/integration/api_client.py req"
PIDS=()

need_kvm "seccomp tests"
for g in hello snap_resume; do
	if [ ! -f "$G/$g.elf" ]; then
		not_ok "seccomp tests" "$G/$g.elf missing: run make guests"
		exit 0
	fi
done
cleanup() {
	local p
	for p in ${PIDS[@]+"${PIDS[@]}"}; do kill -9 "$p" 2>/dev/null; done
	wait 2>/dev/null
	rm -rf "$TMP"
}
trap cleanup EXIT

# start NAME [ARGS...]: ember with an API socket $TMP/NAME.sock, stdin
# /dev/null, output to $TMP/NAME.{out,err}; its pid in PID_NAME.
start() {
	local name=$1
	shift
	"$EMBER" --api-sock "$TMP/$name.sock" "$@" </dev/null \
		>"$TMP/$name.out" 2>"$TMP/$name.err" &
	PIDS+=($!)
	eval "PID_$name=$!"
	for _ in $(seq 100); do
		[ -S "$TMP/$name.sock" ] && return 0
		sleep 0.05
	done
	return 1
}

# threads PID: one line per thread, "NAME SECCOMP FILTERS NO_NEW_PRIVS".
threads() {
	local t
	for t in /proc/"$1"/task/*; do
		printf '%s %s %s %s\n' "$(cat "$t/comm")" \
			"$(awk '/^Seccomp:/ { print $2 }' "$t/status")" \
			"$(awk '/^Seccomp_filters:/ { print $2 }' "$t/status")" \
			"$(awk '/^NoNewPrivs:/ { print $2 }' "$t/status")"
	done
}

# all_locked PID: main, event and vCPU threads, each in mode 2 with one
# filter of its own (none stacked on another) and no_new_privs.
all_locked() {
	local l
	l=$(threads "$1")
	grep -q '^ember-event ' <<<"$l" && grep -q '^ember-vcpu0 ' <<<"$l" &&
		[ "$(wc -l <<<"$l")" -ge 3 ] &&
		! grep -vqE '^[^ ]+ 2 1 1$' <<<"$l"
}

sanitizer_free() {
	! grep -Eq 'AddressSanitizer|LeakSanitizer|runtime error' "$TMP/$1.err"
}

# --- a forbidden call from each kind of thread ------------------------------
if grep -q EMBER_TEST_SECCOMP_VIOLATE "$EMBER"; then
	for kind in vcpu event main; do
		who=$kind
		[ $kind = vcpu ] && who=vcpu0
		EMBER_TEST_SECCOMP_VIOLATE=$kind timeout 60 "$EMBER" \
			--kernel "$G/hello.elf" --mem 64 </dev/null \
			>"$TMP/v-$kind.out" 2>"$TMP/v-$kind.err"
		rc=$?
		line="ember: seccomp: thread $who made forbidden syscall 135 (personality); ember ends (exit status 159)"
		if [ $rc = 159 ] && grep -qxF "$line" "$TMP/v-$kind.err"; then
			ok "a forbidden call on the $kind thread: status 159 and '${line%%;*}'"
		else
			not_ok "a forbidden call on the $kind thread" "exit $rc, want 159" \
				"stderr: $(head -c 600 "$TMP/v-$kind.err")"
		fi
	done
	# The line also reaches the logger's file.
	export EMBER_TEST_SECCOMP_VIOLATE=event
	start logged
	unset EMBER_TEST_SECCOMP_VIOLATE
	$API "$TMP/logged.sock" PUT /logger "{\"log_path\":\"$TMP/logged.log\"}" >/dev/null
	$API "$TMP/logged.sock" PUT /boot-source \
		"{\"kernel_image_path\":\"$G/hello.elf\"}" >/dev/null
	$API "$TMP/logged.sock" PUT /actions '{"action_type":"InstanceStart"}' \
		>/dev/null 2>&1
	exit_of "$PID_logged"
	check "a forbidden call after PUT /logger: the line is in the log file too" \
		"exit $st; log: $(cat "$TMP/logged.log" 2>/dev/null)" \
		grep -q 'thread event made forbidden syscall 135 (personality)' \
		"$TMP/logged.log"
else
	echo "ok - # SKIP $EMBER is no test build (EMBER_TEST_HOOKS): no forbidden-call hook"
fi
release=${EMBER%-asan}
if [ "$release" != "$EMBER" ] && [ -x "$release" ]; then
	check "the release binary has no test hook" "$release names it" \
		bash -c "! grep -q EMBER_TEST_SECCOMP_VIOLATE '$release'"
fi

# --- a running ember: every thread locked down -------------------------------
truncate -s 1M "$TMP/d1.img" "$TMP/d2.img"
start run --kernel "$G/snap_resume.elf" --mem 64 --drive "path=$TMP/d1.img,id=d1"
if wait_for "$TMP/run.out" '^ready' 20; then
	check "booted: every thread in seccomp mode 2, one filter each, no_new_privs" \
		"$(threads "$PID_run")" all_locked "$PID_run"
else
	not_ok "booted: the tiny guest is ready" "$(tail -3 "$TMP/run.err")"
fi
$API "$TMP/run.sock" PATCH /vm '{"state":"Paused"}' >/dev/null
r=$($API "$TMP/run.sock" PUT /snapshot/create \
	"{\"snapshot_path\":\"$TMP/s.state\",\"mem_file_path\":\"$TMP/s.mem\"}")
check "after the lock-down, snapshot create writes its files: $r" "$r" \
	test "${r%% *}" = 204 -a -s "$TMP/s.state" -a -s "$TMP/s.mem"
r=$($API "$TMP/run.sock" PATCH /vm '{"state":"Resumed"}')
check "and the VM resumes: $r" "$r" test "${r%% *}" = 204
r=$($API "$TMP/run.sock" PATCH /drives/d1 \
	"{\"drive_id\":\"d1\",\"path_on_host\":\"$TMP/d2.img\"}")
check "after the lock-down, PATCH /drives opens a new image: $r" "$r" \
	test "${r%% *}" = 204
kill -TERM "$PID_run"
exit_of "$PID_run"
check "SIGTERM still ends it cleanly: $st" "$(tail -5 "$TMP/run.err")" \
	test "$st" = 143
check "booted: no sanitizer report" "$(tail -5 "$TMP/run.err")" \
	sanitizer_free run

# --- restored: resumed at the load, and resumed later -------------------------
load_body() { # RESUME
	printf '{"snapshot_path":"%s","mem_backend":{"backend_type":"File","backend_path":"%s"},"resume_vm":%s}' \
		"$TMP/s.state" "$TMP/s.mem" "$1"
}
for when in load later; do
	start "r$when"
	pid=$(eval echo "\$PID_r$when")
	if [ $when = load ]; then
		r=$($API "$TMP/r$when.sock" PUT /snapshot/load "$(load_body true)")
	else
		r=$($API "$TMP/r$when.sock" PUT /snapshot/load "$(load_body false)")
		$API "$TMP/r$when.sock" PATCH /vm '{"state":"Resumed"}' >/dev/null
	fi
	sleep 0.2
	check "restored (resumed at the $when): every thread in mode 2, one filter each" \
		"load: $r; $(threads "$pid")" all_locked "$pid"
	kill -TERM "$pid"
	exit_of "$pid"
	check "restored (resumed at the $when): SIGTERM ends it, no sanitizer report" \
		"exit $st; $(tail -5 "$TMP/r$when.err")" \
		bash -c "[ '$st' = 143 ] && ! grep -Eq 'Sanitizer|runtime error' '$TMP/r$when.err'"
done

# --- --no-seccomp -------------------------------------------------------------
start off --kernel "$G/snap_resume.elf" --mem 64 --no-seccomp
wait_for "$TMP/off.out" '^ready' 20
check "--no-seccomp: a WARNING line on stderr" "$(head -3 "$TMP/off.err")" \
	grep -q '^ember: WARNING: --no-seccomp' "$TMP/off.err"
none_locked() {
	local l
	l=$(threads "$1")
	[ "$(wc -l <<<"$l")" -ge 3 ] && ! grep -vqE '^[^ ]+ 0 0 [01]$' <<<"$l"
}
check "--no-seccomp: every thread in seccomp mode 0" "$(threads "$PID_off")" \
	none_locked "$PID_off"
kill -TERM "$PID_off"
exit_of "$PID_off"
