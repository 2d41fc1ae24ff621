#!/usr/bin/env bash
# ember-jailer (api/jailer/): refused arguments name their step and make
# nothing; a step failing late undoes the jail; a jailed ember (a tiny
# guest booted through its control socket, in a new PID namespace) runs
# as uid/gid 1000 with no capability and no_new_privs, in its chroot, its
# own mount namespace and its memory cgroup with the limit written; a
# daemonized one runs in its own session on /dev/null; --cleanup refuses a
# running jail and removes a finished one.  Needs root; the jailed runs
# need /dev/kvm and build/guests/snap_resume.elf.
#
# The jail runs the release ember beside $EMBER (ember-asan's runtime
# wants /proc, which a jail has not), dynamically linked: t1 binds its
# library directories read-only with --ro-bind, t2 passes none (the
# jailer binds the loader and libraries its ELF headers name).  Kata's
# exact sequence is jailer_kata.sh.
set -u
cd "$(dirname "$0")/../.."
. tests/lib.sh

JEMBER=${JEMBER:-${EMBER%-asan}}
JAILER=${JAILER:-$(dirname "$JEMBER")/ember-jailer}
G=${GUESTS:-build/guests}
PARENT=ember-jailer-test-$$
B=$TMP/jails
pids=()

if [ "$(id -u)" != 0 ]; then
	echo "ok - # SKIP ember-jailer needs root"
	exit 0
fi
for f in "$JAILER" "$JEMBER"; do
	if [ ! -x "$f" ]; then
		not_ok "jailer tests" "$f missing: make BUILD=... all"
		exit 0
	fi
done

# Where the jail's memory cgroup and limit are, by cgroup version.
if [ "$(stat -fc %T /sys/fs/cgroup)" = cgroup2fs ]; then
	CG_ROOT=/sys/fs/cgroup
	CG_FILE=memory.max
	CG_LINE="0::/$PARENT"
else
	CG_ROOT=/sys/fs/cgroup/memory
	CG_FILE=memory.limit_in_bytes
	CG_LINE="[0-9]*:memory:/$PARENT"
fi
LIMIT=536870912

cleanup() {
	local p d
	for p in ${pids[@]+"${pids[@]}"}; do kill -9 "$p" 2>/dev/null; done
	sleep 0.2
	[ -n "${NETNS:-}" ] && ip netns delete "$NETNS" 2>/dev/null
	for d in /sys/fs/cgroup/*/"$PARENT"/* /sys/fs/cgroup/"$PARENT"/*; do
		[ -d "$d" ] && rmdir "$d" 2>/dev/null
	done
	for d in /sys/fs/cgroup/*/"$PARENT" /sys/fs/cgroup/"$PARENT"; do
		[ -d "$d" ] && rmdir "$d" 2>/dev/null
	done
	rm -rf "$TMP"
}
trap cleanup EXIT

# The libraries of a dynamically linked ember, their directories bound.
BINDS=()
for d in $(ldd "$JEMBER" 2>/dev/null | grep -o '/[^ ]*' | xargs -r -n1 dirname |
	sort -u); do
	BINDS+=(--ro-bind "$d")
done
WHERE=(--chroot-base-dir "$B" --parent-cgroup "$PARENT" ${BINDS[@]+"${BINDS[@]}"})
COMMON=(--exec-file "$JEMBER" --uid 1000 --gid 1000 "${WHERE[@]}")

# refused NAME RC STDERR-REGEX ARGS...: the jailer exits RC with one
# stderr line matching, and made nothing under $B.
refused() {
	local name=$1 want=$2 re=$3 rc lines
	shift 3
	"$JAILER" "$@" >"$TMP/r.out" 2>"$TMP/r.err"
	rc=$?
	lines=$(wc -l <"$TMP/r.err")
	if [ "$rc" = "$want" ] && [ "$lines" = 1 ] &&
		grep -Eq -- "$re" "$TMP/r.err" && [ -z "$(ls -A "$B")" ]; then
		ok "$name: exit $rc, $(cat "$TMP/r.err")"
	else
		not_ok "$name" "exit $rc (want $want), $lines lines" \
			"stderr: $(cat "$TMP/r.err")" "want: $re" \
			"left in $B: $(ls -A "$B")"
	fi
}

mkdir -p "$B"
refused "an id with '/'" 2 "^ember-jailer: --id a/b: contains '/'.*\(errno 22\)$" \
	--id a/b "${COMMON[@]}"
refused "an id with '..'" 2 "^ember-jailer: --id \.\.: contains '\.\.'" \
	--id .. "${COMMON[@]}"
refused "an id of 65 characters" 2 "^ember-jailer: --id a{65}: is not 1-64" \
	--id "$(printf 'a%.0s' $(seq 65))" "${COMMON[@]}"
refused "a missing exec file" 2 \
	"^ember-jailer: --exec-file $TMP/none/ember: No such file or directory \(errno 2\)$" \
	--id t0 --exec-file "$TMP/none/ember" --uid 1000 --gid 1000 "${WHERE[@]}"
refused "a bad --cgroup" 2 "^ember-jailer: --cgroup memory: use FILE=VALUE" \
	--id t0 "${COMMON[@]}" --cgroup memory
refused "ember's arguments without --" 2 \
	"^ember-jailer: /api.sock: unexpected argument: ember's arguments go after --" \
	--id t0 "${COMMON[@]}" /api.sock
refused "a missing netns" 1 \
	"^ember-jailer: open --netns $TMP/no-netns: No such file or directory \(errno 2\)$" \
	--id t0 "${COMMON[@]}" --netns "$TMP/no-netns"

# An ember whose library or loader this host lacks (copies with one name
# in their ELF headers changed): refused before anything is made, naming
# it and --ro-bind.
mkdir -p "$TMP/bin"
python3 - "$JEMBER" "$TMP/bin" <<'PY'
import re, sys
b = open(sys.argv[1], "rb").read()
lib = re.search(rb"\0(lib[a-z0-9_]{3,})\.so\.[0-9]+\0", b).group(1)
interp = re.search(rb"/lib[0-9]*/ld-linux[^\0]*\.so\.[0-9]\0", b).group(0)
out = {"ember-nolib": b.replace(lib + b".so.", b"libqq" + lib[5:] + b".so.", 1),
       "ember-noldso": b.replace(interp, interp[:-2] + b"9\0", 1)}
for name, data in out.items():
    with open(sys.argv[2] + "/" + name, "wb") as f:
        f.write(data)
PY
chmod 755 "$TMP/bin/ember-nolib" "$TMP/bin/ember-noldso"
refused "a library this host lacks" 1 \
	"^ember-jailer: library libqq[a-z0-9_]*\.so\.[0-9]+ needed by $TMP/bin/ember-nolib: not found .*--ro-bind DIR \(errno 2\)$" \
	--id t0 --exec-file "$TMP/bin/ember-nolib" --uid 1000 --gid 1000 \
	--chroot-base-dir "$B" --parent-cgroup "$PARENT"
refused "a loader this host lacks" 1 \
	"^ember-jailer: ELF interpreter \(loader\) /lib[0-9]*/ld-linux.*\.so\.9 of $TMP/bin/ember-noldso: .*--ro-bind DIR \(errno 2\)$" \
	--id t0 --exec-file "$TMP/bin/ember-noldso" --uid 1000 --gid 1000 \
	--chroot-base-dir "$B" --parent-cgroup "$PARENT"

# An existing chroot (Kata makes it): used, and after a late failure
# (the rlimit) left as it was, with only what the jailer added removed.
mkdir -p "$B/ember/t0/root/run"
touch "$B/ember/t0/root/keep"
"$JAILER" --id t0 "${COMMON[@]}" --cgroup "$CG_FILE=$LIMIT" \
	--resource-limit no-file=99999999999 -- --api-sock /a \
	>"$TMP/r.out" 2>"$TMP/r.err"
rc=$?
check "an existing chroot: used; a late failure leaves only what was there" \
	"exit $rc; $(cat "$TMP/r.err"); left: $(ls -A "$B/ember/t0/root" | tr '\n' ' ')" sh -c "
	[ $rc = 1 ] && [ \$(wc -l <'$TMP/r.err') = 1 ] &&
	grep -Eq '^ember-jailer: set resource limit no-file=99999999999: .*\(errno [0-9]+\)$' '$TMP/r.err' &&
	[ \"\$(ls -A '$B/ember/t0/root' | tr '\n' ' ')\" = 'keep run ' ] && [ ! -e '$CG_ROOT/$PARENT/t0' ]"
rm -rf "${B:?}"/*

# A step that fails inside the jail (after the cgroup, the mount namespace
# and the devices): everything made is removed again.
"$JAILER" --id t9 "${COMMON[@]}" --cgroup "$CG_FILE=$LIMIT" \
	--resource-limit no-file=99999999999 -- --api-sock /a \
	>"$TMP/r.out" 2>"$TMP/r.err"
rc=$?
check "a late failure (rlimit): the step named, the jail undone" \
	"exit $rc; $(cat "$TMP/r.err"); left: $(ls -A "$B") $(ls -d "$CG_ROOT/$PARENT"/* 2>/dev/null)" \
	sh -c "[ $rc = 1 ] && [ \$(wc -l <'$TMP/r.err') = 1 ] &&
	grep -Eq '^ember-jailer: set resource limit no-file=99999999999: .*\(errno [0-9]+\)$' '$TMP/r.err' &&
	[ -z \"\$(ls -A '$B')\" ] && [ ! -e '$CG_ROOT/$PARENT/t9' ] && [ ! -e '$CG_ROOT/$PARENT' ]"

# The exec itself fails (a script whose interpreter the jail lacks): with
# --new-pid-ns the parent, still root, undoes the jail; without, the
# privileges are gone and the jailer says to use --cleanup.
mkdir -p "$TMP/bin"
printf '#!/no/such/interpreter\n' >"$TMP/bin/ember-bad"
chmod 755 "$TMP/bin/ember-bad"
BAD=(--exec-file "$TMP/bin/ember-bad" --uid 1000 --gid 1000 "${WHERE[@]}")
"$JAILER" --id t8 "${BAD[@]}" --cgroup "$CG_FILE=$LIMIT" --new-pid-ns \
	>"$TMP/r.out" 2>"$TMP/r.err"
rc=$?
check "a failed exec in the new PID namespace: the jail undone" \
	"exit $rc; $(cat "$TMP/r.err"); left: $(ls -A "$B") $(ls -d "$CG_ROOT/$PARENT"/* 2>/dev/null)" \
	sh -c "[ $rc = 1 ] && [ \$(wc -l <'$TMP/r.err') = 1 ] &&
	grep -Eq '^ember-jailer: exec $B/ember-bad/t8/root/ember-bad: No such file or directory \(errno 2\)$' '$TMP/r.err' &&
	[ -z \"\$(ls -A '$B')\" ] && [ ! -e '$CG_ROOT/$PARENT' ]"
"$JAILER" --id t8 "${BAD[@]}" >"$TMP/r.out" 2>"$TMP/r.err"
rc=$?
"$JAILER" --cleanup --id t8 --exec-file ember-bad --chroot-base-dir "$B" \
	--parent-cgroup "$PARENT" >"$TMP/c.out" 2>"$TMP/c.err"
rc2=$?
check "a failed exec in place: the jail left, --cleanup named, then removes it" \
	"exit $rc; $(cat "$TMP/r.err"); cleanup: exit $rc2 $(cat "$TMP/c.err")" \
	sh -c "[ $rc = 1 ] && grep -q 'ember-jailer --cleanup --id t8 --exec-file ember-bad --chroot-base-dir $B ' '$TMP/r.err' &&
	[ $rc2 = 0 ] && [ -z \"\$(ls -A '$B/ember-bad')\" ]"
rm -rf "${B:?}"/*

need_kvm "jailed ember runs"
if [ ! -f "$G/snap_resume.elf" ]; then
	not_ok "jailed ember" "$G/snap_resume.elf missing: run make guests"
	exit 0
fi
PVM=()
[ -e /sys/module/kvm_pvm ] && PVM=(--pvm on) # the jail has no /sys

# api SOCK METHOD PATH [BODY]: the HTTP status, the body in $TMP/api.body.
api() {
	curl -s --max-time 10 --unix-socket "$1" -X "$2" \
		${4:+-H 'Content-Type: application/json' -d "$4"} \
		-o "$TMP/api.body" -w '%{http_code}' "http://localhost$3"
}
wait_until() { # SECONDS COMMAND...
	local i
	for ((i = 0; i < $1 * 10; i++)); do
		"${@:2}" && return 0
		sleep 0.1
	done
	return 1
}
gone() { [ ! -e "/proc/$1" ]; }

# ---- t1: a tiny guest, new PID namespace, memory cgroup -------------------
R=$B/ember/t1/root
mkfifo "$TMP/in"
exec 7<>"$TMP/in" # the guest polls the UART: keep its stdin open, silent
"$JAILER" --id t1 "${COMMON[@]}" --cgroup "$CG_FILE=$LIMIT" --new-pid-ns \
	-- --api-sock /api.sock ${PVM[@]+"${PVM[@]}"} \
	<"$TMP/in" >"$TMP/t1.out" 2>"$TMP/t1.err" 9>"$TMP/inherited" &
jailer=$!
wait "$jailer"
rc=$?
pid=$(cat "$R/ember.pid" 2>/dev/null)
[ -n "$pid" ] && pids+=("$pid")
check "t1: the jailer exits 0 once ember runs, its pid in ROOT/ember.pid" \
	"exit $rc, pid '$pid'; $(cat "$TMP/t1.err")" \
	sh -c "[ $rc = 0 ] && [ -n '$pid' ] && [ -d /proc/$pid ]"
[ -n "$pid" ] || pid=0

# Firecracker's way: the operator puts the guest's files into the jail.
cp "$G/snap_resume.elf" "$R/guest.elf"
wait_until 10 test -S "$R/api.sock"
s1=$(api "$R/api.sock" GET /)
check "t1: the control socket answers in the jail, with the jail's id" \
	"$s1 $(cat "$TMP/api.body")" grep -q '"id":"t1"' "$TMP/api.body"
s2=$(api "$R/api.sock" PUT /machine-config '{"vcpu_count":1,"mem_size_mib":64}')
s3=$(api "$R/api.sock" PUT /boot-source '{"kernel_image_path":"/guest.elf"}')
s4=$(api "$R/api.sock" PUT /actions '{"action_type":"InstanceStart"}')
wait_until 30 grep -q '^ready' "$TMP/t1.out"
check "t1: the jailed ember boots the guest (InstanceStart through the socket)" \
	"HTTP $s2 $s3 $s4: $(cat "$TMP/api.body"); $(tail -3 "$TMP/t1.out") $(tail -3 "$TMP/t1.err")" \
	sh -c "[ '$s2 $s3 $s4' = '204 204 204' ] && grep -q '^ready' '$TMP/t1.out'"

st=/proc/$pid/status
field() { awk -v k="$1:" '$1 == k { $1 = ""; print substr($0, 2) }' "$st"; }
check "t1: uid and gid 1000 (real, effective, saved, fs)" \
	"Uid: $(field Uid); Gid: $(field Gid); Groups: $(field Groups)" \
	sh -c "[ '$(field Uid)' = '1000 1000 1000 1000' ] &&
	[ '$(field Gid)' = '1000 1000 1000 1000' ] && [ -z '$(field Groups)' ]"
check "t1: no capability in any set (CapEff, CapPrm, CapBnd, CapInh, CapAmb)" \
	"$(grep ^Cap "$st" | tr '\n' ' ')" sh -c "
	for v in '$(field CapEff)' '$(field CapPrm)' '$(field CapBnd)' \
		'$(field CapInh)' '$(field CapAmb)'; do
		[ \$v = 0000000000000000 ] || exit 1
	done"
check "t1: NoNewPrivs 1" "NoNewPrivs: $(field NoNewPrivs)" \
	test "$(field NoNewPrivs)" = 1
check "t1: its root is the chroot" \
	"$(stat -Lc %d:%i "/proc/$pid/root") vs $(stat -c %d:%i "$R")" \
	test "$(stat -Lc %d:%i "/proc/$pid/root" 2>&1)" = "$(stat -c %d:%i "$R")"
check "t1: its own mount namespace" \
	"$(readlink "/proc/$pid/ns/mnt") vs $(readlink /proc/self/ns/mnt)" sh -c "
	[ -n '$(readlink "/proc/$pid/ns/mnt")' ] &&
	[ '$(readlink "/proc/$pid/ns/mnt")' != '$(readlink /proc/self/ns/mnt)' ]"
check "t1: pid 1 of a new PID namespace" "NSpid: $(field NSpid)" \
	sh -c "[ '$(field NSpid)' = '$pid 1' ]"
check "t1: in the cgroup $PARENT/t1, the memory limit written" \
	"$(tr '\n' ' ' <"/proc/$pid/cgroup"); $CG_FILE: $(cat "$CG_ROOT/$PARENT/t1/$CG_FILE" 2>&1)" \
	sh -c "grep -Eq '^$CG_LINE/t1\$' /proc/$pid/cgroup &&
	[ \"\$(cat '$CG_ROOT/$PARENT/t1/$CG_FILE')\" = $LIMIT ]"
devs="kvm net/tun"
[ -c /dev/userfaultfd ] && devs="$devs userfaultfd"
check "t1: /dev holds only $devs, mode 0600, owned by 1000:1000" \
	"$(cd "$R/dev" && find . -mindepth 1 | sort | tr '\n' ' '); $(stat -c '%n %a %u:%g %t:%T' "$R"/dev/kvm "$R"/dev/net/tun)" \
	sh -c "[ \"\$(cd '$R/dev' && find . -type c | sed 's|^\./||' | sort | tr '\n' ' ')\" = \
		\"\$(echo $devs | tr ' ' '\n' | sort | tr '\n' ' ')\" ] &&
	[ \"\$(cd '$R/dev' && find . -mindepth 1 ! -type c)\" = ./net ] &&
	[ \"\$(stat -c '%a %u:%g %t:%T' '$R/dev/kvm')\" = \"600 1000:1000 \$(stat -c '%t:%T' /dev/kvm)\" ]"
check "t1: ember is a copy of the exec file, not a link to it" \
	"$(stat -c '%i %h' "$R/ember" "$JEMBER" | tr '\n' ' ')" sh -c "
	cmp -s '$R/ember' '$JEMBER' &&
	[ \$(stat -c %i '$R/ember') != \$(stat -c %i '$JEMBER') ]"
check "t1: no environment, no inherited fd" \
	"environ: $(tr '\0' ' ' <"/proc/$pid/environ"); fds: $(find "/proc/$pid/fd" -lname "$TMP/inherited" | wc -l)" \
	sh -c "[ ! -s /proc/$pid/environ ] &&
	[ -z \"\$(find /proc/$pid/fd -lname '$TMP/inherited')\" ]"
"$JAILER" --cleanup --id t1 --chroot-base-dir "$B" --parent-cgroup "$PARENT" \
	>"$TMP/c.out" 2>"$TMP/c.err"
rc=$?
check "t1: --cleanup refuses a running jail, naming ember's pid" \
	"exit $rc; $(cat "$TMP/c.err")" \
	sh -c "[ $rc = 1 ] && [ -x '$R/ember' ] && [ -d '$CG_ROOT/$PARENT/t1' ] &&
	grep -q '^ember-jailer: remove $B/ember/t1 (pid $pid): a process still runs in it (errno 16)' '$TMP/c.err'"
kill -KILL "$pid"
wait_until 10 gone "$pid"
"$JAILER" --cleanup --id t1 --chroot-base-dir "$B" --parent-cgroup "$PARENT" \
	>"$TMP/c.out" 2>"$TMP/c.err"
rc=$?
check "t1: --cleanup then removes the chroot and the cgroup" \
	"exit $rc; $(cat "$TMP/c.err"); left: $(ls -A "$B/ember") $(ls -d "$CG_ROOT/$PARENT"/* 2>/dev/null)" \
	sh -c "[ $rc = 0 ] && [ ! -e '$B/ember/t1' ] && [ ! -e '$CG_ROOT/$PARENT/t1' ]"
exec 7>&-

# ---- t2: --daemonize in place (no PID namespace), a netns, cgroup v2 ------
# cgroup v2 where a cgroup2 hierarchy is mounted, with a core file only
# (no controller to enable at its root: that is the host's setting).
R=$B/ember/t2/root
CG2=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/mounts)
T2=(--exec-file "$JEMBER" --uid 1000 --gid 1000 --chroot-base-dir "$B"
	--parent-cgroup "$PARENT") # no --ro-bind: the libraries found by the jailer
[ -n "$CG2" ] && T2+=(--cgroup-version 2 --cgroup cgroup.max.descendants=0)
NETNS=ember-jailer-test-$$
ip netns add "$NETNS" 2>/dev/null && T2+=(--netns "/var/run/netns/$NETNS")
"$JAILER" --id t2 "${T2[@]}" --daemonize -- \
	--api-sock /api.sock ${PVM[@]+"${PVM[@]}"} >"$TMP/t2.out" 2>"$TMP/t2.err" &
pid=$!
pids+=("$pid")
wait_until 10 test -S "$R/api.sock"
s1=$(api "$R/api.sock" GET /)
check "t2: the jailer became ember (same pid), it answers as t2" \
	"HTTP $s1 $(cat "$TMP/api.body"); $(cat "$TMP/t2.err")" sh -c "
	[ $s1 = 200 ] && grep -q '\"id\":\"t2\"' '$TMP/api.body' &&
	[ \"\$(readlink /proc/$pid/exe)\" = /ember ]"
check "t2: its own session, standard I/O on /dev/null" \
	"session $(awk '{ print $6 }' "/proc/$pid/stat"); fds 0-2: $(readlink "/proc/$pid/fd/0" "/proc/$pid/fd/1" "/proc/$pid/fd/2" | tr '\n' ' ')" \
	sh -c "[ \"\$(awk '{ print \$6 }' /proc/$pid/stat)\" = $pid ] &&
	[ \"\$(readlink /proc/$pid/fd/0)\" = /dev/null ] &&
	[ \"\$(readlink /proc/$pid/fd/1)\" = /dev/null ] &&
	[ \"\$(readlink /proc/$pid/fd/2)\" = /dev/null ]"
if [ -e "/var/run/netns/$NETNS" ]; then
	check "t2: in the network namespace --netns named" \
		"$(readlink "/proc/$pid/ns/net") vs $(stat -Lc %i "/var/run/netns/$NETNS")" \
		test "$(stat -Lc %i "/proc/$pid/ns/net")" = \
		"$(stat -Lc %i "/var/run/netns/$NETNS")"
else
	echo "ok - # SKIP t2: ip netns add failed: no --netns check"
fi
if [ -n "$CG2" ]; then
	check "t2: cgroup v2: in $PARENT/t2 of $CG2, the value written" \
		"$(grep '^0::' "/proc/$pid/cgroup"); $(cat "$CG2/$PARENT/t2/cgroup.max.descendants" 2>&1)" \
		sh -c "grep -qx '0::/$PARENT/t2' /proc/$pid/cgroup &&
		[ \"\$(cat '$CG2/$PARENT/t2/cgroup.max.descendants')\" = 0 ]"
else
	echo "ok - # SKIP t2: no cgroup2 mount: no cgroup v2 check"
fi
kill -TERM "$pid"
wait "$pid" 2>/dev/null
"$JAILER" --cleanup --id t2 --chroot-base-dir "$B" --parent-cgroup "$PARENT" \
	${CG2:+--cgroup-version 2} >"$TMP/c.out" 2>"$TMP/c.err"
rc=$?
check "t2: --cleanup removes the chroot (and the v2 cgroup)" \
	"exit $rc; $(cat "$TMP/c.err")" \
	sh -c "[ $rc = 0 ] && [ ! -e '$B/ember/t2' ] && [ -z \"\$(ls -A '$B/ember')\" ] &&
	[ ! -e '${CG2:-/nonexistent}/$PARENT/t2' ]"
"$JAILER" --cleanup --id t2 --chroot-base-dir "$B" --parent-cgroup "$PARENT" \
	>"$TMP/c.out" 2>"$TMP/c.err"
rc=$?
check "--cleanup of no jail: exit 1, one line" "exit $rc; $(cat "$TMP/c.err")" \
	sh -c "[ $rc = 1 ] && grep -q 'no such jail' '$TMP/c.err'"
