#!/usr/bin/env bash
# ember as a containerd runtime (issue 23): Debian's containerd 1.6 with its
# own root, state, socket and config (version 2, the CRI runtime "ember",
# the overlayfs snapshotter) in a temporary directory
# (tests/containerd-lib.sh), a one-layer busybox image built here
# (mkoci.py busybox) and imported with `ctr images import`, then ctr's
# sequence through a runtime: run --rm (output, exit status), env, cwd and
# user from the image and from the command line, stdin and its close, a
# terminal, run -d, task ls, exec, pause and resume, kill, task rm, c rm,
# and containerd's events for each.  Afterwards nothing may be left: no
# process that carries the test's directory, no ember or shim process, no
# mount, no shim socket, no bundle, no sandbox, no new file in /tmp.
#
# The sequence runs first with runc (containerd's default runtime, the
# reference; a few seconds) and then with ember (io.containerd.ember.v1,
# build/containerd-shim-ember-v1, each task in a microVM restored from a
# template built here).  ember alone then: pod grouping (containers with
# the same io.kubernetes.cri.sandbox-id annotation share one VM: one ember
# process, one guest boot_id, while a container outside the pod has its
# own), specs it cannot honour (--privileged, --net-host: refused, nothing
# left), the shim killed with SIGKILL (containerd reports the task gone,
# nothing left running), and the shim's `delete` for an unknown bundle.
#
# env: CTRD_TEST_RUNTIMES ("runc ember", the default, or either alone),
#      EMBERCTL, EMBER, GUEST, CTRD_SHIM, BOOT_TIMEOUT
set -u
cd "$(dirname "$0")/../.."
. tests/lib.sh
. tests/containerd-lib.sh

: "${EMBERCTL:=build/emberctl-asan}"
: "${CTRD_TEST_RUNTIMES:=runc ember}"
BOOT_TIMEOUT=${BOOT_TIMEOUT:-600}

# The ember shim's settings (runtime name, template, how the shim is told
# it): tests/containerd-lib.sh, the block marked "ember shim settings".

IMG=docker.io/library/embertest:latest
IMGU=docker.io/library/embertest:user
D=$TMP/ctrd
EVPID=
cleanup() {
	[ -z "$EVPID" ] || { kill "$EVPID" 2>/dev/null; wait "$EVPID" 2>/dev/null; }
	ctrd_stop
	if [ -x "$EMBERCTL" ] && [ -d "$TMP/state" ]; then
		"$EMBERCTL" template rm --force "$SHIM_TEMPLATE" >/dev/null 2>&1
	fi
	rm -rf "$TMP"
}
trap cleanup EXIT

show() { for f in "$@"; do echo "#   $f:"; sed 's/^/#     /' "$f" | tail -15; done; }
ev() { eval "$*"; }
no_sanitizer_report() { ! grep -qE 'AddressSanitizer|runtime error|LeakSanitizer' "$@"; }

# ---- containerd and the image ---------------------------------------------
python3 tests/integration/mkoci.py busybox "$TMP/img.tar" --tag "$IMG" &&
	python3 tests/integration/mkoci.py busybox "$TMP/imgu.tar" --tag "$IMGU" --user 1000:1000
rc=$?
check "containerd: the busybox OCI archives are built" "mkoci.py exit $rc" [ $rc = 0 ]
[ $rc = 0 ] || exit 0

ember_wanted=0
case " $CTRD_TEST_RUNTIMES " in *" ember "*) ember_wanted=1 ;; esac
if [ "$ember_wanted" = 1 ]; then
	need_kvm "containerd (ember)"
	if [ ! -x "$CTRD_SHIM" ] || [ ! -x "$EMBERCTL" ] || [ ! -x "$EMBER" ]; then
		not_ok "containerd: $CTRD_SHIM, $EMBERCTL and $EMBER are built" "make all asan"
		ember_wanted=0
	fi
fi
export EMBER_BIN=$(realpath "$EMBER" 2>/dev/null) EMBER_KERNEL=$(realpath "$GUEST/vmlinux" 2>/dev/null)
export EMBER_ROOTFS=$(realpath "$GUEST/rootfs.ext4" 2>/dev/null) EMBER_STATE_DIR=$TMP/state
export EMBER_SUPERVISOR_LOG=$TMP/supervisor.log
if [ "$ember_wanted" = 1 ]; then
	t0=$SECONDS
	timeout "$BOOT_TIMEOUT" "$EMBERCTL" template build "$SHIM_TEMPLATE" "${SHIM_TEMPLATE_ARGS[@]}" \
		--boot-timeout "$BOOT_TIMEOUT" >/dev/null 2>"$TMP/build.err"
	rc=$?
	echo "# template $SHIM_TEMPLATE built in $((SECONDS - t0)) s"
	check "containerd: the shim's template '$SHIM_TEMPLATE' is built" \
		"exit $rc; $(show "$TMP/build.err")" [ $rc = 0 ]
	[ $rc = 0 ] || ember_wanted=0
	ctrd_shim_setup "$TMP"
fi

# What is there before containerd: anything new afterwards is a leftover.
# (/tmp only in the KVM box, where it is this test's alone; the shims'
# TMPDIR is $TMP/shimtmp, which must stay empty.)
listing() {
	find /dev/shm /run/containerd/s "$TMP/shimtmp" -mindepth 1 -maxdepth 1 2>/dev/null
	[ "${EMBER_IN_KVMBOX:-}" != 1 ] ||
		find /tmp -mindepth 1 -maxdepth 1 ! -path "$TMP" 2>/dev/null
}
mkdir -p "$TMP/shimtmp"
export TMPDIR=$TMP/shimtmp
listing | sort >"$TMP/before"

ctrd_start "$D"
rc=$?
check "containerd: starts with its own root, state, socket and config" \
	"$CTRD_ERR; $(show "$D/containerd.log")" [ $rc = 0 ]
[ $rc = 0 ] || exit 0
ctr plugins ls >"$TMP/plugins" 2>&1
check "containerd: the $CTRD_SNAPSHOTTER snapshotter and the CRI plugin (its runtimes.ember) load" \
	"$(show "$TMP/plugins" "$D/containerd.log")" \
	ev "grep -Eq 'io.containerd.snapshotter.v1 +$CTRD_SNAPSHOTTER .* ok' '$TMP/plugins' &&
		grep -Eq 'io.containerd.grpc.v1 +cri .* ok' '$TMP/plugins'"

ctr images import "$TMP/img.tar" >"$TMP/import" 2>&1 &&
	ctr images import "$TMP/imgu.tar" >>"$TMP/import" 2>&1
rc=$?
ctr images ls -q >"$TMP/images" 2>&1
check "containerd: ctr images import takes the OCI archives, unpacked" \
	"exit $rc; $(show "$TMP/import" "$TMP/images")" \
	ev "[ $rc = 0 ] && grep -qx '$IMG' '$TMP/images' && grep -qx '$IMGU' '$TMP/images'"

"${CTRD_CTR[@]}" events >"$TMP/events" 2>&1 &
EVPID=$!

# event TOPIC ID [JSON-FRAGMENT]: containerd published TOPIC for ID.
event() {
	local i
	for i in $(seq 100); do
		grep -E " $CTRD_NS $1 " "$TMP/events" | grep -F "\"$2\"" | grep -qF -- "${3:-}" && return 0
		sleep 0.1
	done
	return 1
}
task_status() { ctr task ls 2>/dev/null | awk -v id="$1" '$1 == id { print $3 }'; }
# wait_status ID STATUS [S]: the task's status is STATUS within S s (30).
wait_status() {
	local i
	for i in $(seq $((${3:-30} * 10))); do
		[ "$(task_status "$1")" = "$2" ] && return 0
		sleep 0.1
	done
	return 1
}
# pids_of FILE: processes running FILE (ember, the shim).
pids_of() {
	local f
	f=$(realpath "$1" 2>/dev/null) || return 0
	find /proc -mindepth 2 -maxdepth 2 -name exe -lname "$f" 2>/dev/null | cut -d/ -f3
}
# leftovers: what must be gone once no task or container is left, one
# line each; nothing when all is clean.
leftovers() {
	local p
	for p in $(ctrd_ours); do
		[ "$p" = "$CTRD_PID" ] || [ "$p" = "$EVPID" ] ||
			echo "process $p: $(tr '\0' ' ' 2>/dev/null </proc/"$p"/cmdline)"
	done
	for p in $(pids_of "$EMBER") $(pids_of "$CTRD_SHIM") $(pids_of /usr/bin/containerd-shim-runc-v2); do
		echo "process $p: $(tr '\0' ' ' 2>/dev/null </proc/"$p"/cmdline)"
	done
	ctrd_mounts | sed 's/^/mount /'
	ls -A "$D/state/io.containerd.runtime.v2.task/$CTRD_NS" 2>/dev/null | sed 's/^/bundle /'
	ls -A "$EMBER_STATE_DIR" 2>/dev/null | grep -E '^[0-9a-f]{12}$' | sed 's/^/sandbox /'
	ctr c ls -q 2>/dev/null | sed 's/^/container /'
	listing | sort | comm -13 "$TMP/before" - | sed 's/^/new file in \/tmp, \/dev\/shm or \/run\/containerd\/s: /'
}
# nothing_left WHAT: a case: leftovers is empty within 10 s (a shim ends
# as it goes).
nothing_left() {
	local i
	for i in $(seq 20); do
		leftovers >"$TMP/left"
		[ -s "$TMP/left" ] || break
		sleep 0.5
	done
	check "$1" "$(show "$TMP/left")" [ ! -s "$TMP/left" ]
}

# sequence NAME RUNTIME [ctr-run-options...]: the issue's ctr sequence.
sequence() {
	local name=$1 rt=$2 out rc i t0 ms
	shift 2
	local -a o=(--runtime "$rt" "$@")
	local n="containerd ($name)"

	t0=$(date +%s%N)
	out=$(ctr run --rm "${o[@]}" "$IMG" t1 sh -c 'echo hi; exit 7' 2>"$TMP/err")
	rc=$?
	ms=$((($(date +%s%N) - t0) / 1000000))
	echo "# $name: ctr run --rm, sh -c 'echo hi; exit 7': $ms ms"
	check "$n: ctr run --rm prints hi and exits 7" "exit $rc, out '$out'; $(show "$TMP/err" "$D/containerd.log")" \
		ev '[ $rc = 7 ] && [ "$out" = hi ]'
	check "$n: containerd published t1's create, start, exit (status 7) and delete" \
		"$(show "$TMP/events")" \
		ev 'event /tasks/create t1 && event /tasks/start t1 && event /tasks/exit t1 "\"exit_status\":7" && event /tasks/delete t1'

	out=$(ctr run --rm "${o[@]}" "$IMG" t1b sh -c 'echo "$IMGVAR|$(pwd)|$(id -u):$(id -g)|$(cat hello)"' 2>"$TMP/err")
	check "$n: the image's Env, WorkingDir and (no) User, its files" \
		"out '$out'; $(show "$TMP/err")" ev '[ "$out" = "from-image|/srv|0:0|hello from the image" ]'
	out=$(ctr run --rm "${o[@]}" --env FOO=bar --env IMGVAR=over --cwd /tmp "$IMG" t1c \
		sh -c 'echo "$FOO|$IMGVAR|$(pwd)"' 2>"$TMP/err")
	check "$n: ctr run --env and --cwd override the image's" \
		"out '$out'; $(show "$TMP/err")" ev '[ "$out" = "bar|over|/tmp" ]'
	out=$(ctr run --rm "${o[@]}" "$IMGU" t1d sh -c 'echo "$(id -u):$(id -g)|$(pwd)"; touch /srv/x 2>/dev/null || echo denied' 2>"$TMP/err")
	check "$n: the image's User 1000:1000 (no write to root's /srv)" \
		"out '$out'; $(show "$TMP/err")" ev '[ "$out" = "1000:1000|/srv
denied" ]'
	# stdin: a line, then its end once the process has answered it (ctr
	# 1.6 loses an end of input that comes before the task is created).
	: >"$TMP/in.out"
	rm -f "$TMP/in.done"
	{
		printf 'a\n'
		for i in $(seq 1200); do
			grep -q got-a "$TMP/in.out" 2>/dev/null || [ -e "$TMP/in.done" ] && break
			sleep 0.1
		done
		printf 'b\n'
	} | {
		ctr run --rm "${o[@]}" "$IMG" t1e sh -c 'read l; echo "got-$l"; cat; echo end' >"$TMP/in.out" 2>"$TMP/err"
		rc=$?
		touch "$TMP/in.done"
		exit $rc
	}
	rc=$?
	out=$(cat "$TMP/in.out")
	check "$n: stdin reaches the process, its end closes it (CloseIO)" \
		"exit $rc, out '$out'; $(show "$TMP/err")" ev '[ $rc = 0 ] && [ "$out" = "got-a
b
end" ]'
	# A terminal (ctr run -t needs one itself: script(1) gives it one).
	out=$(CT="${CTRD_CTR[*]}" IMG=$IMG O="${o[*]}" timeout 120 script -qec \
		'$CT run --rm -t $O $IMG t1f sh -c "test -t 0 && test -t 1 && echo tty-yes"' /dev/null 2>&1 | tr -d '\r\0')
	check "$n: ctr run -t: the process has a terminal" "out '$out'" \
		ev 'echo "$out" | grep -q "tty-yes$"'

	ctr run -d "${o[@]}" "$IMG" t2 sh -c 'trap "echo term; exit 42" TERM; echo up; while :; do sleep 0.1; done' \
		>"$TMP/run-d" 2>&1
	rc=$?
	check "$n: ctr run -d, then ctr task ls: RUNNING" "exit $rc, status '$(task_status t2)'; $(show "$TMP/run-d")" \
		ev '[ $rc = 0 ] && wait_status t2 RUNNING'
	if [ "$(task_status t2)" != RUNNING ]; then
		not_ok "$n: exec, pause, resume, kill, rm: not run (no task t2 running)"
		ctr task rm -f t2 >/dev/null 2>&1
		ctr c rm t2 >/dev/null 2>&1
		nothing_left "$n: nothing left after the failed ctr run -d"
		return 0
	fi
	out=$(ctr task exec --exec-id e1 t2 sh -c 'echo "ex $IMGVAR $(pwd)"; exit 3' 2>"$TMP/err")
	rc=$?
	check "$n: ctr task exec: its output and exit status 3, the container's env and cwd" \
		"exit $rc, out '$out'; $(show "$TMP/err")" ev '[ $rc = 3 ] && [ "$out" = "ex from-image /srv" ]'
	check "$n: containerd published e1's exec-added, exec-started and exit (status 3)" "$(show "$TMP/events")" \
		ev 'event /tasks/exec-added e1 && event /tasks/exec-started e1 && event /tasks/exit e1 "\"exit_status\":3"'
	out=$(ctr task exec --exec-id e2 --user 1000 --cwd /tmp t2 sh -c 'echo "$(id -u) $(pwd)"' 2>"$TMP/err")
	check "$n: ctr task exec --user 1000 --cwd /tmp" "out '$out'; $(show "$TMP/err")" ev '[ "$out" = "1000 /tmp" ]'
	ctr task pause t2 >"$TMP/err" 2>&1
	rc=$?
	check "$n: ctr task pause: PAUSED (and the paused event)" "exit $rc, status '$(task_status t2)'; $(show "$TMP/err")" \
		ev '[ $rc = 0 ] && wait_status t2 PAUSED && event /tasks/paused t2'
	ctr task resume t2 >"$TMP/err" 2>&1
	rc=$?
	check "$n: ctr task resume: RUNNING (and the resumed event)" "exit $rc, status '$(task_status t2)'; $(show "$TMP/err")" \
		ev '[ $rc = 0 ] && wait_status t2 RUNNING && event /tasks/resumed t2'
	ctr task kill t2 >"$TMP/err" 2>&1
	rc=$?
	check "$n: ctr task kill (SIGTERM): the process's trap runs, it exits 42, STOPPED" \
		"exit $rc, status '$(task_status t2)'; $(show "$TMP/err" "$TMP/events")" \
		ev '[ $rc = 0 ] && wait_status t2 STOPPED && event /tasks/exit t2 "\"exit_status\":42"'
	ctr task rm t2 >"$TMP/err" 2>&1
	rc=$?
	check "$n: ctr task rm" "exit $rc; $(show "$TMP/err")" \
		ev '[ $rc = 0 ] && [ -z "$(task_status t2)" ] && event /tasks/delete t2'
	ctr c rm t2 >"$TMP/err" 2>&1
	rc=$?
	check "$n: ctr c rm" "exit $rc; $(show "$TMP/err")" ev '[ $rc = 0 ]'
	nothing_left "$n: nothing left (process, shim, socket, mount, bundle, sandbox, temp file)"

	# SIGKILL from ctr task kill, on a process that ignores SIGTERM.
	ctr run -d "${o[@]}" "$IMG" t3 sh -c 'trap "" TERM; while :; do sleep 0.1; done' >"$TMP/err" 2>&1 &&
		wait_status t3 RUNNING && ctr task kill -s SIGKILL t3 >>"$TMP/err" 2>&1
	rc=$?
	check "$n: ctr task kill -s SIGKILL: exit status 137" "exit $rc, status '$(task_status t3)'; $(show "$TMP/err")" \
		ev '[ $rc = 0 ] && wait_status t3 STOPPED && event /tasks/exit t3 "\"exit_status\":137"'
	ctr task rm t3 >/dev/null 2>&1
	ctr c rm t3 >/dev/null 2>&1
	nothing_left "$n: nothing left after the killed task"
}

for rt in $CTRD_TEST_RUNTIMES; do
	case $rt in
	runc) sequence runc io.containerd.runc.v2 ;;
	ember)
		[ "$ember_wanted" = 1 ] || continue
		sequence ember "$EMBER_RT" "${SHIM_RUN_OPTS[@]}"
		;;
	esac
done
[ "$ember_wanted" = 1 ] || exit 0
n="containerd (ember)"
o=(--runtime "$EMBER_RT" "${SHIM_RUN_OPTS[@]}")

# ---- pods: one VM for the containers of one sandbox id ----------------------
boot_id() { ctr task exec --exec-id "b$RANDOM" "$1" cat /proc/sys/kernel/random/boot_id 2>>"$TMP/err"; }
host_boot=$(cat /proc/sys/kernel/random/boot_id)
: >"$TMP/err"
pod=(--annotation io.kubernetes.cri.sandbox-id=pod1)
ctr run -d "${o[@]}" "${pod[@]}" --annotation io.kubernetes.cri.container-type=sandbox \
	"$IMG" pod1 sh -c 'while :; do sleep 1; done' >>"$TMP/err" 2>&1 &&
	ctr run -d "${o[@]}" "${pod[@]}" --annotation io.kubernetes.cri.container-type=container \
		--annotation io.kubernetes.cri.sandbox-name=pod1 \
		"$IMG" c1 sh -c 'while :; do sleep 1; done' >>"$TMP/err" 2>&1 &&
	ctr run -d "${o[@]}" "$IMG" solo sh -c 'while :; do sleep 1; done' >>"$TMP/err" 2>&1
rc=$?
b_pod=$(boot_id pod1)
b_c1=$(boot_id c1)
b_solo=$(boot_id solo)
n_ember=$(pids_of "$EMBER" | wc -l)
check "$n: a pod's sandbox and container (io.kubernetes.cri.sandbox-id) share one VM, a container outside it has its own" \
	"exit $rc; boot ids: pod1 '$b_pod', c1 '$b_c1', solo '$b_solo', host '$host_boot'; $n_ember ember processes; $(show "$TMP/err")" \
	ev '[ $rc = 0 ] && [ -n "$b_pod" ] && [ "$b_pod" = "$b_c1" ] && [ -n "$b_solo" ] &&
		[ "$b_solo" != "$b_pod" ] && [ "$b_pod" != "$host_boot" ] && [ "$n_ember" = 2 ]'
out=$(ctr task exec --exec-id r1 c1 sh -c 'ls /srv; test -e /proc/1 && echo proc' 2>>"$TMP/err")
check "$n: the pod's container has its own root (the image's) and /proc" "out '$out'" \
	ev '[ "$out" = "hello
proc" ]'
ctr task kill -s SIGKILL c1 >/dev/null 2>&1 && wait_status c1 STOPPED && ctr task rm c1 >/dev/null 2>&1 &&
	ctr c rm c1 >/dev/null 2>&1
rc=$?
check "$n: the pod's container removed, its sandbox runs on in the same VM" \
	"exit $rc, pod1 '$(task_status pod1)'; $(show "$TMP/err")" \
	ev '[ $rc = 0 ] && [ "$(task_status pod1)" = RUNNING ] && [ "$(boot_id pod1)" = "$b_pod" ]'
# A container of the pod that cannot be made (a spec ember refuses) takes
# nothing of the pod with it: containerd cleans up after its shim's
# failed Create with the shim's `delete`, which must leave the pod's VM.
ctr run -d "${o[@]}" "${pod[@]}" --annotation io.kubernetes.cri.container-type=container \
	--privileged "$IMG" cbad true >>"$TMP/err" 2>&1
rc=$?
ctr c rm cbad >/dev/null 2>&1
check "$n: a pod's container refused, the pod's VM runs on" \
	"exit $rc, pod1 '$(task_status pod1)'; $(show "$TMP/err")" \
	ev '[ $rc != 0 ] && [ "$(task_status pod1)" = RUNNING ] && [ "$(boot_id pod1)" = "$b_pod" ]'
for t in pod1 solo; do
	ctr task kill -s SIGKILL "$t" >/dev/null 2>&1
	wait_status "$t" STOPPED
	ctr task rm "$t" >/dev/null 2>&1
	ctr c rm "$t" >/dev/null 2>&1
done
nothing_left "$n: nothing left after the pod"

# ---- a read-only root with bind mounts (the CRI plugin's pause container,
# readOnlyRootFilesystem): the mount points and the copies are made first
echo "from the host" >"$TMP/bindfile"
mkdir -p "$TMP/binddir/sub" && echo "in a dir" >"$TMP/binddir/sub/f" &&
	ln -sf sub/f "$TMP/binddir/link"
out=$(ctr run --rm "${o[@]}" --read-only \
	--mount "type=bind,src=$TMP/bindfile,dst=/etc/bound,options=rbind:ro" \
	--mount "type=bind,src=$TMP/binddir,dst=/mnt/dir,options=rbind:ro" \
	"$IMG" ro1 sh -c 'cat /etc/bound /mnt/dir/link; touch /new 2>/dev/null || echo read-only' 2>&1)
rc=$?
check "$n: a read-only root gets its bind mounts (a file, a directory with a link) and stays read-only" \
	"exit $rc, out '$out'" \
	ev '[ $rc = 0 ] && [ "$out" = "from the host
in a dir
read-only" ]'

# ---- specs ember cannot honour ---------------------------------------------
for bad in --privileged --net-host; do
	case $bad in
	--privileged) want='privileged' ;;
	--net-host) want='network|namespace|net' ;;
	esac
	out=$(ctr run --rm "${o[@]}" "$bad" "$IMG" tbad sh -c 'echo ran' 2>"$TMP/err")
	rc=$?
	echo "# ctr run $bad: exit $rc: $(head -c 300 "$TMP/err" | head -2 | tr '\n' ' ')"
	check "$n: ctr run $bad is refused with a clear error, nothing ran" \
		"exit $rc, out '$out'; $(show "$TMP/err")" \
		ev '[ $rc != 0 ] && [ -z "$out" ] && grep -Eqi "$want" "$TMP/err"'
	ctr c rm tbad >/dev/null 2>&1
	nothing_left "$n: nothing left after ctr run $bad"
done

# ---- the shim killed -------------------------------------------------------
ctr run -d "${o[@]}" "$IMG" tk sh -c 'while :; do sleep 1; done' >"$TMP/err" 2>&1 && wait_status tk RUNNING
rc=$?
# The shim itself: not what it forked (a sandbox's supervisor runs the
# shim's binary too).
all_shims=" $(pids_of "$CTRD_SHIM" | tr '\n' ' ') "
shims=
for p in $all_shims; do
	pp=$(awk '{ print $4 }' "/proc/$p/stat" 2>/dev/null)
	case $all_shims in *" $pp "*) ;; *) shims="$shims $p" ;; esac
done
ember_n=$(pids_of "$EMBER" | wc -l)
[ -z "$shims" ] || kill -KILL $shims
check "$n: the shim killed with SIGKILL: containerd reports the task gone or stopped" \
	"exit $rc, shims '$shims', $ember_n ember; status '$(task_status tk)'; $(show "$TMP/err" "$D/containerd.log")" \
	ev '[ $rc = 0 ] && [ -n "$shims" ] && [ "$ember_n" = 1 ] &&
		{ wait_status tk STOPPED 60 || wait_status tk "" 60; }'
ctr task rm -f tk >/dev/null 2>&1
ctr c rm tk >>"$TMP/err" 2>&1
rc=$?
check "$n: after the shim's death the container is removed" \
	"c rm exit $rc; $(show "$TMP/err")" [ $rc = 0 ]
nothing_left "$n: nothing left running after the shim's death"

# ---- delete for an unknown bundle -------------------------------------------
mkdir -p "$TMP/nobundle"
shim=$(realpath "$CTRD_SHIM")
for how in cwd flag; do
	if [ $how = cwd ]; then
		(cd "$TMP/nobundle" && TTRPC_ADDRESS=$D/containerd.sock.ttrpc timeout 60 "$shim" \
			-namespace "$CTRD_NS" -address "$D/containerd.sock" -publish-binary /usr/bin/containerd \
			-id nosuch delete) >"$TMP/del.out" 2>"$TMP/del.err"
	else
		(cd "$TMP/nobundle" && TTRPC_ADDRESS=$D/containerd.sock.ttrpc timeout 60 "$shim" \
			-namespace "$CTRD_NS" -address "$D/containerd.sock" -publish-binary /usr/bin/containerd \
			-id nosuch -bundle "$TMP/no/such/bundle" delete) >"$TMP/del.out" 2>"$TMP/del.err"
	fi
	rc=$?
	check "$n: the shim's delete for an unknown bundle ($how): no crash, an error says why or an exit is reported" \
		"exit $rc; $(show "$TMP/del.err")" \
		ev '[ $rc -lt 124 ] && no_sanitizer_report "$TMP/del.err" &&
			{ [ $rc = 0 ] || [ -s "$TMP/del.err" ]; } && [ -z "$(ls -A "$TMP/nobundle")" ] && [ ! -e "$TMP/no" ]'
done
nothing_left "$n: nothing left after the unknown bundle's delete"

kill "$EVPID" 2>/dev/null
wait "$EVPID" 2>/dev/null
EVPID=
check "$n: no sanitizer report from the shim or ember" "$(show "$D/containerd.log")" \
	no_sanitizer_report "$D/containerd.log" "$TMP/events"
