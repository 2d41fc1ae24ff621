#!/usr/bin/env bash
# emberctl end to end.  Part 1 needs no VM: a stand-in for ember
# (fake_ember.py: the vsock handshake in front of build/test/agent-host)
# exercises sandbox life in seconds: run, exec, cp, ls, kill, TTL,
# failures, crashes, clean-up; and, on the fake's snapshots, templates
# (build, ls, rm, names, --if-missing), restores (INIT included), parking
# and resuming (ls, TTL, a failed load), the default template.  Part 2
# boots real sandboxes (three at once: ~50 s where guest kernel mode is
# emulated) when /dev/kvm works and ember has --vsock (templates and
# parking with real sandboxes: snapshot.sh), users and the image defaults
# file (exec --user, --env).  Each sandbox's state lives
# under $TMP/state, so what is left behind is easy to see.
set -u
cd "$(dirname "$0")/../.."
. tests/lib.sh

: "${EMBERCTL:=build/emberctl-asan}"
BOOT_TIMEOUT=${BOOT_TIMEOUT:-600}
export EMBER_STATE_DIR=$TMP/state
export EMBER_SUPERVISOR_LOG=$TMP/supervisor.log
E=$EMBERCTL

# info_of ID KEY: a value from the sandbox's info file.
info_of() { sed -n "s/^$2=//p" "$EMBER_STATE_DIR/$1/info"; }
# alive PID: a process that is not a zombie.
alive() {
	[ -n "$1" ] && [ "$1" != 0 ] && [ -r "/proc/$1/stat" ] &&
		[ "$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -c1)" != Z ]
}
# pids ID: "SUPERVISOR EMBER" from the sandbox's info file.
pids() {
	sed -n 's/^supervisor=//p; s/^ember=//p' "$EMBER_STATE_DIR/$1/info" 2>/dev/null |
		tr '\n' ' '
}
# gone ID "SUP EMBER": no directory, no socket, no process, no copy.
gone() {
	local id=$1 p
	[ ! -e "$EMBER_STATE_DIR/$id" ] || return 1
	! ls -A "$EMBER_STATE_DIR" | grep -q "$id" || return 1
	for p in $2; do ! alive "$p" || return 1; done
	! pgrep -f "$EMBER_STATE_DIR/$id" >/dev/null
}
# wait_gone ID "PIDS" SECONDS
wait_gone() {
	local end=$((SECONDS + $3))
	while [ $SECONDS -le "$end" ]; do
		gone "$1" "$2" && return 0
		sleep 0.1
	done
	gone "$1" "$2"
}
no_sanitizer_report() { ! grep -qE 'AddressSanitizer|runtime error|LeakSanitizer' "$@"; }
state_empty() { [ -z "$(ls -A "$EMBER_STATE_DIR" 2>/dev/null)" ]; }
no_tmp_files() { [ -z "$(find "$TMP" /tmp -maxdepth 3 -name '.*.emberctl-*' 2>/dev/null)" ]; }
now_ms() { echo $(($(date +%s%N) / 1000000)); }
# ev 'EXPRESSION': evaluate it (in this shell, with the current values).
ev() { eval "$*"; }
show() { for f in "$@"; do echo "#   $f:"; sed 's/^/#     /' "$f" | tail -15; done; }

if [ ! -x "$E" ] || [ ! -x "${FAKE_AGENT:-build/test/agent-host}" ]; then
	not_ok "emberctl: $E and ${FAKE_AGENT:-build/test/agent-host} are built" "make asan"
	exit 0
fi

# ---- part 1: a fake ember ----------------------------------------------
export EMBER_BIN=$PWD/tests/integration/fake_ember.py
export EMBER_KERNEL=$TMP/vmlinux
export EMBER_ROOTFS=$TMP/root.img
export FAKE_REPORT=$TMP/report FAKE_ROOTFS=$TMP/root.img
echo kernel >"$EMBER_KERNEL"
# A 64 MiB image with 2 MiB of data: the copy must keep the holes.
truncate -s 64M "$EMBER_ROOTFS"
head -c 1M /dev/urandom | dd of="$EMBER_ROOTFS" bs=1M seek=3 conv=notrunc status=none
head -c 1M /dev/urandom | dd of="$EMBER_ROOTFS" bs=1M seek=40 conv=notrunc status=none
cp "$EMBER_ROOTFS" "$TMP/root.orig"
G=$TMP/guest # the fake's "guest" files are this host's
H=$TMP/host
mkdir -p "$G" "$H"

id=$($E run 2>"$TMP/run.err")
rc=$?
check "fake: run prints a 12-hex id and exits 0" "$(show "$TMP/run.err")" \
	ev '[ $rc = 0 ] && echo "$id" | grep -qxE "[0-9a-f]{12}"'
check "fake: the rootfs copy is byte-identical and sparse" "$(cat "$TMP/report")" \
	grep -qE '^size=67108864 blocks=([0-9]{1,4}|[0-9]{5}) same=1' "$TMP/report"
check "fake: the shared image is unchanged" "" cmp -s "$EMBER_ROOTFS" "$TMP/root.orig"
check "fake: the copy stays (a sandbox can be parked), the socket is there" \
	"$(ls -la "$EMBER_STATE_DIR/$id")" \
	ev '[ -f "$EMBER_STATE_DIR/$id/rootfs.ext4" ] && [ -S "$EMBER_STATE_DIR/$id/vsock.sock" ]'
check "fake: the state directory is private" "$(ls -ld "$EMBER_STATE_DIR")" \
	ev '[ "$(stat -c %a "$EMBER_STATE_DIR")" = 700 ]'
$E ls >"$TMP/ls.out" 2>&1
check "fake: ls lists it under a header" "$(show "$TMP/ls.out")" \
	ev 'head -1 "$TMP/ls.out" | grep -q "^ID " && grep -qE "^$id +[0-9]+ +256M +1 " "$TMP/ls.out"'

$E exec "$id" -- sh -c 'echo out; echo oops >&2; exit 3' >"$TMP/x.out" 2>"$TMP/x.err"
rc=$?
check "fake: exec passes the exit status (3), stdout and stderr" \
	"exit $rc; $(show "$TMP/x.out" "$TMP/x.err")" \
	ev '[ $rc = 3 ] && [ "$(cat "$TMP/x.out")" = out ] && [ "$(cat "$TMP/x.err")" = oops ]'
fib=$($E exec "$id" --python 'a,b=0,1
while a<=100: print(a); a,b=b,a+b' | tr '\n' ' ')
check "fake: --python with two lines prints Fibonacci" "got: $fib" \
	[ "$fib" = "0 1 1 2 3 5 8 13 21 34 55 89 " ]
out=$($E exec "${id:0:4}" --python 'print("x\ny")' 2>&1 | tr '\n' ' ')
check "fake: --python runs code exactly as given; an id prefix works" "got: $out" \
	[ "$out" = "x y " ]
$E exec "$id" -- no-such-command 2>"$TMP/nf.err"
rc=$?
check "fake: command not found: 127 and a message" "exit $rc; $(show "$TMP/nf.err")" \
	ev '[ $rc = 127 ] && grep -q "no-such-command: No such file" "$TMP/nf.err"'
$E exec "$id" -- /etc/passwd 2>/dev/null
rc=$?
check "fake: cannot execute: 126" "exit $rc" [ $rc = 126 ]
$E exec --timeout 0.3 "$id" -- sleep 10
rc=$?
check "fake: --timeout: 124" "exit $rc" [ $rc = 124 ]
$E exec "$id" -- sh -c 'kill -9 $$'
rc=$?
check "fake: killed by signal 9: 137" "exit $rc" [ $rc = 137 ]
out=$(printf 'abc\n' | $E exec -i "$id" -- tr a-z A-Z)
check "fake: -i forwards stdin" "got: $out" [ "$out" = ABC ]
out=$(printf 'abc\n' | $E exec "$id" -- cat)
check "fake: without -i the command's stdin is empty" "got: $out" [ -z "$out" ]
out=$($E exec --env FOO=bar --cwd /tmp "$id" -- sh -c 'echo $FOO $(pwd); command -v sh' | tr '\n' ' ')
check "fake: --env adds to the environment; --cwd" "got: $out" \
	ev '[ "${out% /*sh }" = "bar /tmp" ]'
$E exec --cwd /nonexistent "$id" -- true 2>"$TMP/cwd.err"
check "fake: a missing --cwd is named as such" "$(show "$TMP/cwd.err")" \
	grep -q "/nonexistent: No such file" "$TMP/cwd.err"
# (A background job starts with SIGINT ignored until emberctl takes it:
# the signal goes once the guest command runs.)
$E exec "$id" -- sleep 20 &
ep=$!
sleep 3
kill -INT $ep
wait $ep
rc=$?
check "fake: SIGINT to emberctl interrupts the guest command: 130" "exit $rc" [ $rc = 130 ]

head -c 1M /dev/urandom >"$H/data.bin"
chmod 640 "$H/data.bin"
$E cp "$H/data.bin" "$id:$G/in.bin" && $E cp "$id:$G/in.bin" "$H/out.bin"
check "fake: cp of 1 MiB in and back out, byte for byte" "" \
	cmp -s "$H/data.bin" "$H/out.bin"
check "fake: cp in keeps the mode" "$(ls -l "$G")" \
	ev '[ "$(stat -c %a "$G/in.bin")" = 640 ]'
mkdir -p "$G/d" "$H/d"
$E cp "$H/data.bin" "${id:0:5}:$G/d" && $E cp "$id:$G/d/data.bin" "$H/d"
check "fake: cp to a directory (either side) keeps the name" "$(ls -l "$G/d" "$H/d")" \
	cmp -s "$H/data.bin" "$H/d/data.bin"
$E cp "$id:$G/missing" "$H/m.bin" 2>"$TMP/cp.err"
rc=$?
check "fake: cp of a missing file fails and leaves no file" "$(show "$TMP/cp.err"; ls -la "$H")" \
	ev '[ $rc = 1 ] && grep -q "No such file" "$TMP/cp.err" && [ "$(ls -A "$H" | tr "\n" " ")" = "d data.bin out.bin " ]'
$E cp "$H/data.bin" "$H/x" 2>/dev/null
rc=$?
check "fake: cp wants exactly one ID:PATH" "exit $rc" [ $rc = 2 ]
$E cp "$H/data.bin" "a/b:/tmp/x" 2>"$TMP/cpid.err"
rc=$?
check "fake: cp to an id with a '/' in it: not a sandbox id" \
	"exit $rc; $(show "$TMP/cpid.err")" \
	ev '[ $rc = 2 ] && grep -qx "emberctl: cp: not a sandbox id: a/b" "$TMP/cpid.err"'
# /proc takes no new files: the copy (a new file renamed over the old)
# cannot even start there, and the error says where it failed.
$E cp "$H/data.bin" "$id:/proc/version" 2>"$TMP/cpproc.err"
rc=$?
check "fake: cp onto /proc/version names the directory that takes no file" \
	"exit $rc; $(show "$TMP/cpproc.err")" \
	ev '[ $rc = 1 ] && grep -q "copying to /proc/version: guest: cannot create a file in /proc, where the copy is written" "$TMP/cpproc.err" && ! grep -q "write file" "$TMP/cpproc.err"'
mkdir "$H/l"
printf old >"$H/l/target"
ln -s target "$H/l/link"
mkfifo "$H/l/fifo"
cat "$H/l/fifo" >"$H/l/fifo.out" &
$E cp "$id:$G/in.bin" "$H/l/link" && $E cp "$id:$G/in.bin" "$H/l/fifo"
wait
check "fake: cp out through a symbolic link and into a FIFO, in place" "$(ls -la "$H/l")" \
	ev '[ -L "$H/l/link" ] && [ -p "$H/l/fifo" ] && cmp -s "$H/data.bin" "$H/l/target" && cmp -s "$H/data.bin" "$H/l/fifo.out"'
printf old >"$G/keep"
timeout -s INT 1 $E cp /dev/zero "$id:$G/keep" 2>/dev/null
# The agent drops its temporary file when it sees the connection go.
for _ in $(seq 50); do ls -A "$G" | grep -q ember- || break; sleep 0.1; done
check "fake: a cp in cut off leaves the old guest file and no temporary" "$(ls -la "$G")" \
	ev '[ "$(cat "$G/keep")" = old ] && ! ls -A "$G" | grep -q ember-'
rm -rf "$H/l" "$G/keep"

p=$(pids "$id")
$E kill "$id" >"$TMP/kill.out" 2>&1
rc=$?
check "fake: kill exits 0 and leaves nothing (dir, socket, processes)" \
	"$(show "$TMP/kill.out"; ls -la "$EMBER_STATE_DIR")" \
	ev '[ $rc = 0 ] && gone "$id" "$p"'
$E kill "$id" 2>"$TMP/kill2.err"
rc=$?
check "fake: a second kill says there is no such sandbox" "$(show "$TMP/kill2.err")" \
	ev '[ $rc = 1 ] && grep -qx "emberctl: no sandbox $id" "$TMP/kill2.err"'
$E exec 0123456789ab -- true 2>"$TMP/unk.err"
rc=$?
check "fake: an unknown id: exec says so (125)" "$(show "$TMP/unk.err")" \
	ev '[ $rc = 125 ] && grep -qx "emberctl: no sandbox 0123456789ab" "$TMP/unk.err"'

# TTL: counted from when run returns.
id=$($E run --ttl 1)
p=$(pids "$id")
check "fake: a --ttl 1 sandbox is there when run returns" "" \
	test -d "$EMBER_STATE_DIR/$id"
check "fake: ... and gone, with everything, within 3 s" "$(ls -la "$EMBER_STATE_DIR")" \
	wait_gone "$id" "$p" 3

# ttl ID S renews: the sandbox lives S seconds from then.  (The margins
# are seconds: a loaded 2-core host running two KVM boxes takes about
# one to start an ASan emberctl in a box.)
id=$($E run --ttl 4)
p=$(pids "$id")
sleep 1
$E ttl "$id" 7 >"$TMP/ttl.out" 2>"$TMP/ttl.err"
rc=$?
check "fake: ttl ID 7 renews the TTL, printing the id" "exit $rc; $(show "$TMP/ttl.err")" \
	ev '[ $rc = 0 ] && [ "$(cat "$TMP/ttl.out")" = "$id" ]'
sleep 4
check "fake: ... the sandbox outlives its first TTL" "" test -d "$EMBER_STATE_DIR/$id"
check "fake: ... and ends at the renewed one (within 5 s)" \
	"$(ls -la "$EMBER_STATE_DIR")" wait_gone "$id" "$p" 5
$E ttl "$id" 0 2>"$TMP/ttl0.err"
rc=$?
check "fake: ttl 0 is bad usage (2)" "exit $rc; $(show "$TMP/ttl0.err")" [ $rc = 2 ]
$E ttl 0123456789ab 5 2>"$TMP/ttlu.err"
rc=$?
check "fake: ttl of an unknown id: 1, one line" "exit $rc; $(show "$TMP/ttlu.err")" \
	ev '[ $rc = 1 ] && grep -qx "emberctl: no sandbox 0123456789ab" "$TMP/ttlu.err"'

# Pause and resume: the TTL clock stops while paused.
id=$($E run --ttl 5)
p=$(pids "$id")
$E pause "$id" >"$TMP/pause.out" 2>"$TMP/pause.err"
rc=$?
check "fake: pause prints the id" "exit $rc; $(show "$TMP/pause.err")" \
	ev '[ $rc = 0 ] && [ "$(cat "$TMP/pause.out")" = "$id" ]'
check "fake: ls says paused" "$($E ls)" ev '$E ls | grep -q "^$id .* paused "'
$E exec "$id" -- true 2>"$TMP/pexec.err"
rc=$?
check "fake: exec on a paused sandbox is refused, saying why" "exit $rc; $(show "$TMP/pexec.err")" \
	ev '[ $rc = 125 ] && grep -q "is paused (emberctl resume" "$TMP/pexec.err"'
sleep 6
check "fake: a paused sandbox outlives its TTL" "" test -d "$EMBER_STATE_DIR/$id"
$E pause "$id" >/dev/null
rc=$?
check "fake: pausing a paused sandbox is fine" "exit $rc" [ $rc = 0 ]
$E resume "$id" >/dev/null
rc=$?
check "fake: resume exits 0" "exit $rc" [ $rc = 0 ]
check "fake: resumed, the rest of its TTL runs out (within 7 s)" \
	"$(ls -la "$EMBER_STATE_DIR")" wait_gone "$id" "$p" 7
$E pause 0123456789ab 2>"$TMP/punk.err"
rc=$?
check "fake: pause of an unknown id: 1, one line" "exit $rc; $(show "$TMP/punk.err")" \
	ev '[ $rc = 1 ] && grep -qx "emberctl: no sandbox 0123456789ab" "$TMP/punk.err"'

# ember ending by itself ends the sandbox.
id=$(FAKE_EXIT_AFTER=3 $E run)
p=$(pids "$id")
check "fake: when ember exits by itself the supervisor cleans up" \
	"id $id; $(ls -la "$EMBER_STATE_DIR")" ev '[ -n "$id" ] && wait_gone "$id" "$p" 8'

# Boot failures: one clear error line, nothing left.
FAKE_FAIL=1 $E run >"$TMP/f.out" 2>"$TMP/f.err"
rc=$?
check "fake: ember failing at start: run fails, says why, leaves nothing" \
	"exit $rc; $(show "$TMP/f.err")" \
	ev '[ $rc = 1 ] && [ ! -s "$TMP/f.out" ] && head -1 "$TMP/f.err" | grep -q "^emberctl: ember exited with status 1" && grep -q "pretend failure" "$TMP/f.err" && state_empty'
t0=$SECONDS
FAKE_BOOT_S=30 $E run --boot-timeout 1 >"$TMP/t.out" 2>"$TMP/t.err"
rc=$?
took=$((SECONDS - t0))
check "fake: boot timeout: run fails in time, says why, leaves nothing" \
	"exit $rc after $took s; $(show "$TMP/t.err")" \
	ev '[ $rc = 1 ] && [ $took -le 8 ] && grep -q "did not answer within 1 s" "$TMP/t.err" && state_empty && ! pgrep -f "$EMBER_STATE_DIR" >/dev/null'
FAKE_BOOT_S=30 $E run 2>"$TMP/k.err" &
rp=$!
bid=
for _ in $(seq 50); do
	bid=$(ls "$EMBER_STATE_DIR" 2>/dev/null | head -1)
	[ -n "$bid" ] && grep -q '^ember=[1-9]' "$EMBER_STATE_DIR/$bid/info" 2>/dev/null && break
	sleep 0.1
done
$E kill "$bid" >/dev/null 2>&1
wait $rp
rc=$?
check "fake: kill during boot: run fails, nothing left" "exit $rc; $(show "$TMP/k.err")" \
	ev '[ $rc = 1 ] && grep -q "stopped while booting" "$TMP/k.err" && state_empty'

# A supervisor killed outright: ember follows it, the next look cleans up.
id=$($E run)
p=$(pids "$id")
kill -9 "${p%% *}"
sleep 0.5
$E ls >"$TMP/ls2.out" 2>&1
check "fake: after the supervisor's SIGKILL, ls cleans up silently" \
	"$(show "$TMP/ls2.out"; ls -la "$EMBER_STATE_DIR")" \
	ev '[ "$(wc -l <"$TMP/ls2.out")" = 1 ] && gone "$id" "$p"'
id=$($E run)
p=$(pids "$id")
kill -9 "${p%% *}"
sleep 0.5
$E kill "$id" 2>"$TMP/dead.err"
rc=$?
check "fake: kill of a sandbox whose supervisor died: already gone, cleaned up" \
	"exit $rc; $(show "$TMP/dead.err")" \
	ev '[ $rc = 1 ] && grep -q "already gone" "$TMP/dead.err" && gone "$id" "$p"'

# A guest kernel panic at boot: the panic's reason is the error, then
# the console's last lines; ember's log line is not quoted twice.
FAKE_PANIC=1 $E run >"$TMP/p.out" 2>"$TMP/p.err"
rc=$?
check "fake: a guest panic at boot: run says the guest kernel panicked, and why" \
	"exit $rc; $(show "$TMP/p.err")" \
	ev '[ $rc = 1 ] && head -1 "$TMP/p.err" | grep -qx "emberctl: the guest kernel panicked: VFS: Unable to mount root fs on unknown-block(254,0)" && grep -q "console: .*kernel_init" "$TMP/p.err" && ! grep -q "ember: ember:\|exited with status" "$TMP/p.err" && ! grep -q "$(printf "\033")" "$TMP/p.err" && state_empty'
# Limits: ember's own, checked before anything starts, one line each.
$E run --mem 300000 >"$TMP/m.out" 2>"$TMP/m.err"
rc=$?
check "fake: run --mem 300000: ember's limit, one line, status 2" \
	"exit $rc; $(show "$TMP/m.err")" \
	ev '[ $rc = 2 ] && [ "$(cat "$TMP/m.err")" = "emberctl: --mem 300000: guest RAM must be a whole number of MiB from 16 to 262144" ] && state_empty'
host_mib=$(awk '/^MemTotal:/ { print int($2 / 1024) + 1 }' /proc/meminfo)
if [ "$host_mib" -le 262144 ]; then
	$E run --mem "$host_mib" >"$TMP/m.out" 2>"$TMP/m.err"
	rc=$?
	check "fake: run --mem beyond this host's RAM is refused, status 2" \
		"exit $rc; $(show "$TMP/m.err")" \
		ev '[ $rc = 2 ] && grep -q "^emberctl: --mem $host_mib: more guest RAM than this host has" "$TMP/m.err" && state_empty'
fi
$E run --vcpus 33 2>"$TMP/m.err"
rc=$?
check "fake: run --vcpus 33: ember's limit, status 2" "exit $rc; $(show "$TMP/m.err")" \
	ev '[ $rc = 2 ] && grep -qx "emberctl: --vcpus 33: vCPUs must be a whole number from 1 to 32" "$TMP/m.err"'
EMBER_STATE_DIR=$TMP/$(printf 'x%.0s' $(seq 80)) $E run 2>"$TMP/long.err"
check "fake: a state directory too long for socket paths: a clear error" \
	"$(show "$TMP/long.err")" grep -q 'too long for Unix socket paths' "$TMP/long.err"
EMBER_KERNEL=$TMP/nope $E run 2>"$TMP/nok.err"
check "fake: a missing kernel is named" "$(show "$TMP/nok.err")" \
	grep -qF "kernel $TMP/nope: No such file or directory (from EMBER_KERNEL)" "$TMP/nok.err"

# ---- templates, restores and parking, on the fake's snapshots ----------
export FAKE_SNAP_LOG=$TMP/snap.log FAKE_INIT_REPORT=$TMP/init.report
T=$EMBER_STATE_DIR/templates
# sandboxes: the sandbox directories in the state directory.
sandboxes() { ls "$EMBER_STATE_DIR" 2>/dev/null | grep -E '^[0-9a-f]{12}$'; }
$E template build 'Bad!' 2>"$TMP/tn.err"
rc=$?
check "fake: template build of a bad name: status 2, the rule" "exit $rc; $(show "$TMP/tn.err")" \
	ev '[ $rc = 2 ] && grep -q "not a template name: .Bad!. (1 to 64 of a-z, 0-9, _ and -)" "$TMP/tn.err"'
$E template build "$(printf 'a%.0s' $(seq 65))" 2>/dev/null
rc1=$?
$E template build 'a/b' 2>/dev/null
rc2=$?
$E template rm .. 2>/dev/null
rc3=$?
$E run --template Upper 2>/dev/null
rc4=$?
check "fake: template names: 65 bytes, a '/', '..', upper case are refused (2)" \
	"exits $rc1 $rc2 $rc3 $rc4" ev '[ "$rc1$rc2$rc3$rc4" = 2222 ] && [ -z "$(sandboxes)" ]'
$E template build 2>/dev/null
rc1=$?
$E template 2>/dev/null
rc2=$?
$E template frob 2>"$TMP/tf.err"
rc3=$?
$E template rm 2>/dev/null
rc4=$?
$E template build x --frob 2>/dev/null
rc5=$?
check "fake: template without a name, command or with a bad option: status 2" \
	"exits $rc1 $rc2 $rc3 $rc4 $rc5; $(show "$TMP/tf.err")" \
	ev '[ "$rc1$rc2$rc3$rc4$rc5" = 22222 ] && grep -q "unknown command .frob." "$TMP/tf.err"'
$E pause --to-disk 2>/dev/null
rc1=$?
$E pause --bogus 0123456789ab 2>"$TMP/pb.err"
rc2=$?
$E resume --boot-timeout 2>/dev/null
rc3=$?
$E resume --boot-timeout 0 0123456789ab 2>/dev/null
rc4=$?
$E template rm --bogus t 2>/dev/null
rc5=$?
check "fake: pause/resume/template rm argument errors: status 2" \
	"exits $rc1 $rc2 $rc3 $rc4 $rc5; $(show "$TMP/pb.err")" \
	ev '[ "$rc1$rc2$rc3$rc4$rc5" = 22222 ] && grep -q "pause: unknown option: .--bogus." "$TMP/pb.err"'
$E run --template x --boot 2>"$TMP/rb.err"
rc1=$?
$E run --template x --mem 512 2>"$TMP/rm.err"
rc2=$?
check "fake: run --template with --boot or --mem: status 2, saying why" \
	"exits $rc1 $rc2; $(show "$TMP/rb.err" "$TMP/rm.err")" \
	ev '[ "$rc1$rc2" = 22 ] && grep -q "exclude each other" "$TMP/rb.err" && grep -q "run --template: --mem is the template" "$TMP/rm.err"'
$E run --template nosuch >"$TMP/rn.out" 2>"$TMP/rn.err"
rc=$?
check "fake: run --template of a missing template: 1, one line, nothing made" \
	"exit $rc; $(show "$TMP/rn.err")" \
	ev '[ $rc = 1 ] && [ "$(cat "$TMP/rn.err")" = "emberctl: no template nosuch" ] && [ ! -s "$TMP/rn.out" ] && [ -z "$(sandboxes)" ]'
out=$($E template ls 2>&1)
check "fake: template ls with none: the header only" "got: $out" \
	ev '[ "$(echo "$out" | wc -l)" = 1 ] && echo "$out" | grep -q "^NAME .*MEM .*VCPUS .*SIZE .*CREATED"'

rm -f "$FAKE_SNAP_LOG"
$E template build t1 --mem 128 --setup 'echo set-up-ran' \
	--setup "echo \$((6*7)) >$G/t1.setup" >"$TMP/tb.out" 2>"$TMP/tb.err"
rc=$?
check "fake: template build with two setup commands: prints the name, shows their output" \
	"exit $rc; $(show "$TMP/tb.out" "$TMP/tb.err")" \
	ev '[ $rc = 0 ] && [ "$(cat "$TMP/tb.out")" = t1 ] && grep -qx set-up-ran "$TMP/tb.err" && [ "$(cat "$G/t1.setup")" = 42 ]'
check "fake: the template: a Full snapshot, read-only files, the disk made from the rootfs, no build sandbox left" \
	"$(ls -la "$T" "$T/t1"; cat "$FAKE_SNAP_LOG")" \
	ev 'grep -q "^create Full .*/templates/.t1.new/memory$" "$FAKE_SNAP_LOG" && [ "$(stat -c %a "$T/t1/rootfs.ext4" "$T/t1/memory" "$T/t1/snapshot.state" | sort -u)" = 400 ] && cmp -s "$T/t1/rootfs.ext4" "$EMBER_ROOTFS" && [ ! -e "$T/t1/overlay" ] && [ ! -e "$T/t1/base.ext4" ] && [ -z "$(sandboxes)" ] && [ -z "$(ls -A "$T" | grep -v "^t1$")" ]'
$E template ls >"$TMP/tl.out" 2>&1
check "fake: template ls: name, mem, vcpus, size, created, users" "$(show "$TMP/tl.out")" \
	grep -qE "^t1 +128M +1 +[0-9.]+[KMG] +[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2} +0$" "$TMP/tl.out"
$E template build t1 2>"$TMP/te.err"
rc=$?
check "fake: building an existing template: 1, saying so" "exit $rc; $(show "$TMP/te.err")" \
	ev '[ $rc = 1 ] && grep -q "template t1 exists" "$TMP/te.err"'
cp "$T/t1/info" "$TMP/t1.info"
out=$($E template build t1 --mem 128 --if-missing 2>&1)
rc=$?
check "fake: template build --if-missing of an up-to-date one: 0, nothing done" "exit $rc; got: $out" \
	ev '[ $rc = 0 ] && [ "$out" = t1 ] && cmp -s "$T/t1/info" "$TMP/t1.info"'
$E template build t1 --if-missing >/dev/null 2>"$TMP/tim.err"
rc=$?
check "fake: template build --if-missing with another --mem: built again, saying why" \
	"exit $rc; $(show "$TMP/tim.err")" \
	ev '[ $rc = 0 ] && grep -q "template t1 is out of date (other memory or vCPUs): building it again" "$TMP/tim.err" && grep -q "^mem=256$" "$T/t1/info"'
$E template build t1 --if-missing --no-interp >/dev/null 2>"$TMP/tim.err"
rc=$?
check "fake: template build --if-missing --no-interp of one built with the interpreter: built again" \
	"exit $rc; $(show "$TMP/tim.err")" \
	ev '[ $rc = 0 ] && grep -q "out of date (built with the code interpreter)" "$TMP/tim.err" && grep -q "^interp=0$" "$T/t1/info"'
touch "$EMBER_ROOTFS"
$E template build t1 --if-missing >/dev/null 2>"$TMP/tim.err"
rc=$?
check "fake: template build --if-missing after the rootfs changed: built again" \
	"exit $rc; $(show "$TMP/tim.err")" \
	ev '[ $rc = 0 ] && grep -q "out of date (the rootfs changed since)" "$TMP/tim.err"'
$E template rm t1 >/dev/null && $E template build t1 --mem 128 >/dev/null 2>&1
$E template build broken --setup 'echo about-to-fail >&2; exit 7' --setup 'echo never' \
	>"$TMP/tx.out" 2>"$TMP/tx.err"
rc=$?
check "fake: a failing setup command fails the build, shows its output, leaves nothing" \
	"exit $rc; $(show "$TMP/tx.err"; ls -la "$T")" \
	ev '[ $rc = 1 ] && grep -qx about-to-fail "$TMP/tx.err" && grep -q "setup command 1 (echo about-to-fail >&2; exit 7) failed: exit status 7" "$TMP/tx.err" && ! grep -q never "$TMP/tx.err" && [ -z "$(ls -A "$T" | grep -v "^t1$")" ] && [ -z "$(sandboxes)" ]'
$E template build stopped --setup 'echo started; sleep 30' >/dev/null 2>"$TMP/ts.err" &
bp=$!
for _ in $(seq 100); do grep -q started "$TMP/ts.err" && break; sleep 0.05; done
kill -INT $bp
wait $bp
rc=$?
check "fake: SIGINT during a setup command ends the build, leaving nothing" \
	"exit $rc; $(show "$TMP/ts.err"; ls -la "$T")" \
	ev '[ $rc = 1 ] && grep -q "setup command 1 (echo started; sleep 30) failed: killed by signal 2" "$TMP/ts.err" && [ -z "$(ls -A "$T" | grep -v "^t1$")" ] && [ -z "$(sandboxes)" ]'

rm -f "$FAKE_SNAP_LOG"
id=$($E run --template t1 2>"$TMP/rt.err")
rc=$?
check "fake: run --template: an id, a restore with its own disk and vsock socket" \
	"exit $rc; $(show "$TMP/rt.err"; cat "$FAKE_SNAP_LOG")" \
	ev '[ $rc = 0 ] && grep -qx "load $T/t1/snapshot.state" "$FAKE_SNAP_LOG" && [ -f "$EMBER_STATE_DIR/$id/rootfs.ext4" ] && [ -S "$EMBER_STATE_DIR/$id/vsock.sock" ] && [ "$(info_of "$id" template)" = t1 ] && [ "$(info_of "$id" origin)" = 1 ]'
out=$($E exec "$id" -- echo restored 2>&1)
check "fake: the restored sandbox answers exec" "got: $out" [ "$out" = restored ]
check "fake: the agent got INIT after the restore (not after the template's boot): clock and 64 bytes of entropy" \
	"$(cat "$FAKE_INIT_REPORT" 2>&1)" \
	ev '[ "$(wc -l <"$FAKE_INIT_REPORT")" = 1 ] && grep -qE "^init time=[0-9]+\.[0-9]{9} step=[01] entropy=[0-9a-f]{128}$" "$FAKE_INIT_REPORT"'
$E ls >"$TMP/ls3.out"
check "fake: ls shows the template's memory and name" "$(show "$TMP/ls3.out")" \
	grep -qE "^$id +[0-9]+ +128M +1 +running .* t1$" "$TMP/ls3.out"
$E template ls >"$TMP/tl.out" 2>&1
check "fake: template ls counts its sandbox" "$(show "$TMP/tl.out")" grep -qE "^t1 .* 1$" "$TMP/tl.out"

# Parking: a Diff (restored from the template), no process left.
p=$(pids "$id")
$E pause --to-disk "$id" >"$TMP/pk.out" 2>"$TMP/pk.err"
rc=$?
check "fake: pause --to-disk prints the id; a Diff snapshot in the sandbox's directory" \
	"exit $rc; $(show "$TMP/pk.err"; cat "$FAKE_SNAP_LOG"; ls -la "$EMBER_STATE_DIR/$id")" \
	ev '[ $rc = 0 ] && [ "$(cat "$TMP/pk.out")" = "$id" ] && grep -qx "create Diff $EMBER_STATE_DIR/$id/snap-1.mem" "$FAKE_SNAP_LOG" && [ -f "$EMBER_STATE_DIR/$id/snap-1.state" ] && [ -f "$EMBER_STATE_DIR/$id/rootfs.ext4" ]'
check "fake: parked: no supervisor, no ember, no socket" "pids $p; $(ls -la "$EMBER_STATE_DIR/$id")" \
	ev '! alive "${p%% *}" && ! alive "${p##* }" && [ ! -e "$EMBER_STATE_DIR/$id/vsock.sock" ] && [ ! -e "$EMBER_STATE_DIR/$id/api.sock" ]'
$E ls >"$TMP/ls4.out"
$E ls >"$TMP/ls4.out"
check "fake: ls shows it parked, without a pid, and leaves it (twice)" "$(show "$TMP/ls4.out")" \
	ev 'grep -qE "^$id +- +128M +1 +parked " "$TMP/ls4.out" && [ -d "$EMBER_STATE_DIR/$id" ]'
$E exec "$id" -- true 2>"$TMP/pke.err"
rc=$?
check "fake: exec on a parked sandbox: 125, saying so" "exit $rc; $(show "$TMP/pke.err")" \
	ev '[ $rc = 125 ] && grep -q "sandbox $id is parked (emberctl resume" "$TMP/pke.err"'
$E pause --to-disk "$id" >/dev/null 2>&1 && $E pause "$id" >/dev/null 2>&1
rc=$?
check "fake: pausing or parking a parked sandbox is fine" "exit $rc" [ $rc = 0 ]
$E template rm t1 >"$TMP/trm.out" 2>"$TMP/trm.err"
rc=$?
check "fake: template rm refuses while a parked sandbox uses it" "exit $rc; $(show "$TMP/trm.err")" \
	ev '[ $rc = 1 ] && grep -q "template t1 is in use by 1 sandbox ($id): kill it first, or use --force" "$TMP/trm.err" && [ -d "$T/t1" ]'
FAKE_LOAD_FAIL=1 $E resume "$id" >/dev/null 2>"$TMP/rf.err"
rc=$?
check "fake: a resume whose load fails: 1, the sandbox stays parked" \
	"exit $rc; $(show "$TMP/rf.err"; $E ls)" \
	ev '[ $rc = 1 ] && grep -q "pretend the snapshot does not load (the sandbox stays parked)" "$TMP/rf.err" && $E ls | grep -qE "^$id .* parked " && ! pgrep -f "$EMBER_STATE_DIR/$id" >/dev/null'
rm -f "$FAKE_SNAP_LOG"
$E resume "$id" >"$TMP/rs.out" 2>"$TMP/rs.err"
rc=$?
out=$($E exec "$id" -- echo back 2>&1)
check "fake: resume of a parked sandbox: same id, its snapshot loaded, INIT, exec answers" \
	"exit $rc; got: $out; $(show "$TMP/rs.err"; cat "$FAKE_SNAP_LOG" "$FAKE_INIT_REPORT")" \
	ev '[ $rc = 0 ] && [ "$(cat "$TMP/rs.out")" = "$id" ] && [ "$out" = back ] && grep -qx "load $EMBER_STATE_DIR/$id/snap-1.state" "$FAKE_SNAP_LOG" && $E ls | grep -qE "^$id +[0-9]+ .* running " && [ "$(cut -d" " -f4 "$FAKE_INIT_REPORT" | sort -u | wc -l)" = 2 ]'
$E pause --to-disk "$id" >/dev/null 2>"$TMP/pk2.err"
rc=$?
check "fake: parked again after a resume: a Diff over the template again, the first one removed" \
	"exit $rc; $(show "$TMP/pk2.err"; cat "$FAKE_SNAP_LOG"; ls "$EMBER_STATE_DIR/$id")" \
	ev '[ $rc = 0 ] && grep -qx "create Diff $EMBER_STATE_DIR/$id/snap-2.mem" "$FAKE_SNAP_LOG" && [ ! -e "$EMBER_STATE_DIR/$id/snap-1.mem" ] && [ -f "$EMBER_STATE_DIR/$id/snap-2.state" ]'
$E kill "$id" >/dev/null 2>"$TMP/kp.err"
rc=$?
check "fake: kill removes a parked sandbox" "exit $rc; $(show "$TMP/kp.err")" \
	ev '[ $rc = 0 ] && [ ! -e "$EMBER_STATE_DIR/$id" ] && ! ls -A "$EMBER_STATE_DIR" | grep -q "$id"'

# The TTL stands still while parked, and goes on after the resume.
id=$($E run --template t1 --ttl 3)
$E pause --to-disk "$id" >/dev/null
sleep 4
check "fake: a parked sandbox outlives its TTL" "$($E ls)" ev '$E ls | grep -qE "^$id .* parked "'
$E resume "$id" >/dev/null
p=$(pids "$id")
check "fake: resumed, the rest of its TTL runs out (within 5 s)" \
	"$(ls -la "$EMBER_STATE_DIR")" wait_gone "$id" "$p" 5

# The default template: plain run restores it, --boot boots.
$E template build default >/dev/null 2>"$TMP/td.err"
a=$($E run)
b=$($E run --boot)
c=$($E run --mem 64)
check "fake: plain run restores the default template; --boot and --mem boot" \
	"$(show "$TMP/td.err"); a=$a b=$b c=$c" \
	ev '[ "$(info_of "$a" template)" = default ] && [ -z "$(info_of "$b" template)" ] && [ -z "$(info_of "$c" template)" ] && [ "$(info_of "$c" mem)" = 64 ]'
$E kill "$b" "$c" >/dev/null
$E template rm --force default >"$TMP/trf.out" 2>"$TMP/trf.err"
rc=$?
check "fake: template rm --force kills its sandboxes, then removes it" \
	"exit $rc; $(show "$TMP/trf.err"; ls -la "$T")" \
	ev '[ $rc = 0 ] && [ "$(cat "$TMP/trf.out")" = default ] && [ ! -e "$T/default" ] && [ ! -e "$EMBER_STATE_DIR/$a" ]'
$E template rm t1 >/dev/null 2>"$TMP/trm2.err"
rc=$?
$E template rm t1 2>"$TMP/trm3.err"
rc2=$?
check "fake: template rm of an unused template; again: no template" \
	"exits $rc $rc2; $(show "$TMP/trm2.err" "$TMP/trm3.err")" \
	ev '[ $rc = 0 ] && [ $rc2 = 1 ] && grep -qx "emberctl: no template t1" "$TMP/trm3.err" && [ -z "$(ls -A "$T")" ] && [ -z "$(sandboxes)" ]'
rm -rf "$T"
unset FAKE_SNAP_LOG FAKE_INIT_REPORT
check "fake: no stray temporary files" "" no_tmp_files
touch "$TMP/supervisor.log"
check "fake: no sanitizer report (emberctl, supervisors)" "$(show "$TMP/supervisor.log")" \
	no_sanitizer_report "$TMP"/*.err "$TMP/supervisor.log"
unset EMBER_BIN EMBER_KERNEL EMBER_ROOTFS FAKE_REPORT FAKE_ROOTFS

# ---- part 2: real sandboxes ----------------------------------------------
need_kvm "emberctl with real sandboxes"
if ! "$EMBER" --help 2>&1 | grep -q -- '--vsock'; then
	echo "ok - # SKIP $EMBER has no --vsock yet: emberctl with real sandboxes"
	exit 0
fi
export EMBER_BIN=$EMBER EMBER_KERNEL=$GUEST/vmlinux EMBER_ROOTFS=$GUEST/rootfs.ext4
cp --sparse=always "$EMBER_ROOTFS" "$TMP/rootfs.orig"
rm -f "$TMP"/*.err "$TMP/supervisor.log"

# A root filesystem cut to 10 MiB: the guest kernel cannot mount it and
# panics; run must say so, quoting the kernel's reason.  It boots beside
# the three below.
head -c 10M "$EMBER_ROOTFS" >"$TMP/rootfs.10m"
( timeout "$BOOT_TIMEOUT" "$E" run --rootfs "$TMP/rootfs.10m" >"$TMP/pan.id" \
	2>"$TMP/pan.err"
  echo $? >"$TMP/pan.rc" ) &
panic_run=$!
# Three boots at once: A and B side by side, C with --ttl 5.
bg_run() { # NAME ARGS...: id in $TMP/NAME.id, status NAME.rc, end NAME.at
	local n=$1
	shift
	( timeout "$BOOT_TIMEOUT" "$E" run --boot-timeout "$BOOT_TIMEOUT" "$@" \
		>"$TMP/$n.id" 2>"$TMP/$n.err"
	  echo $? >"$TMP/$n.rc"
	  now_ms >"$TMP/$n.at" ) &
	boots+=($!)
}
boots=()
bg_run a
bg_run b
bg_run c --ttl 5
# C's TTL is watched from when its run returns, while A and B work.
(
	while [ ! -s "$TMP/c.at" ]; do sleep 0.1; done
	cid=$(cat "$TMP/c.id")
	cpids=$(pids "$cid")
	at=$(cat "$TMP/c.at")
	while [ -n "$cid" ] && ! gone "$cid" "$cpids" && [ $(($(now_ms) - at)) -lt 30000 ]; do
		sleep 0.1
	done
	echo $(($(now_ms) - at)) >"$TMP/c.gone"
	[ -n "$cid" ] && gone "$cid" "$cpids" && echo yes >"$TMP/c.clean"
) &
watch=$!
wait "${boots[@]}"
wait "$panic_run"
check "vm: a truncated rootfs: run says the guest kernel panicked, and why" \
	"exit $(cat "$TMP/pan.rc"); $(show "$TMP/pan.err")" \
	ev '[ "$(cat "$TMP/pan.rc")" = 1 ] && [ ! -s "$TMP/pan.id" ] && head -1 "$TMP/pan.err" | grep -q "^emberctl: the guest kernel panicked: VFS: Unable to mount root fs"'
A=$(cat "$TMP/a.id")
B=$(cat "$TMP/b.id")
check "vm: three sandboxes boot at once and run prints their ids" \
	"$(show "$TMP/a.err" "$TMP/b.err" "$TMP/c.err")" \
	ev '[ "$(cat "$TMP/a.rc" "$TMP/b.rc" "$TMP/c.rc" | tr "\n" " ")" = "0 0 0 " ]'

fib=$($E exec "$A" --python 'a,b=0,1
while a<=100: print(a); a,b=b,a+b' 2>"$TMP/py.err" | tr '\n' ' ')
check "vm: exec --python prints 0 1 1 2 3 5 8 13 21 34 55 89" \
	"got: $fib; $(show "$TMP/py.err")" [ "$fib" = "0 1 1 2 3 5 8 13 21 34 55 89 " ]
$E exec "$A" -- sh -c 'echo oops >&2; exit 3' >"$TMP/o.out" 2>"$TMP/o.err"
rc=$?
check "vm: exec -- sh -c 'echo oops >&2; exit 3': status 3, oops on stderr" \
	"exit $rc; $(show "$TMP/o.out" "$TMP/o.err")" \
	ev '[ $rc = 3 ] && [ "$(cat "$TMP/o.err")" = oops ] && [ ! -s "$TMP/o.out" ]'

# Users and the image defaults file (guest-init/PROTOCOL.md, USER and
# "Image defaults"), in B: the rootfs has root alone, so nobody is added.
uex() { # NAME ARGS...: emberctl exec ARGS, stdout (one line) in $out, status in $rc
	local n=$1
	shift
	$E exec "$@" >"$TMP/$n.out" 2>"$TMP/$n.err"
	rc=$?
	out=$(tr '\n' ' ' <"$TMP/$n.out")
}
uex u0 "$B" -- sh -c 'id -u; echo $HOME ${USER-none}; pwd'
check "vm: no defaults file: root, HOME=/root, in /" \
	"exit $rc, got: $out; $(show "$TMP/u0.err")" \
	ev '[ $rc = 0 ] && [ "$out" = "0 /root none / " ]'
printf 'env=FOO=bar\0cwd=/tmp\0user=nobody\0' >"$TMP/defaults"
$E exec "$B" -- sh -c 'echo "nobody:x:65534:65534:nobody:/nonexistent:/bin/false" >>/etc/passwd &&
	echo "nogroup:x:65534:" >>/etc/group && echo "staff:x:50:nobody" >>/etc/group &&
	mkdir -p /usr/lib/ember' 2>"$TMP/u1.err" &&
	$E cp "$TMP/defaults" "$B:/usr/lib/ember/defaults" 2>>"$TMP/u1.err"
rc=$?
check "vm: a defaults file goes into the sandbox" "exit $rc; $(show "$TMP/u1.err")" [ $rc = 0 ]
uex u2 "$B" -- sh -c 'echo $FOO; pwd; id -u; id -g; id -G; echo $HOME $USER $LOGNAME'
check "vm: the defaults file's env, cwd and user (nobody, its groups and HOME)" \
	"exit $rc, got: $out; $(show "$TMP/u2.err")" \
	ev '[ $rc = 0 ] && [ "$out" = "bar /tmp 65534 65534 65534 50 /nonexistent nobody nobody " ]'
uex u3 --user root "$B" -- sh -c 'id -u; echo $HOME $USER $FOO; pwd'
check "vm: --user root over the file's user: uid 0, root's HOME, the file's env and cwd" \
	"exit $rc, got: $out; $(show "$TMP/u3.err")" \
	ev '[ $rc = 0 ] && [ "$out" = "0 /root root bar /tmp " ]'
uex u4 -u 1234:4321 --cwd / "$B" -- sh -c 'id -u; id -g; id -G; echo $HOME; pwd'
check "vm: -u UID:GID without an account: those ids, no other group, HOME=/" \
	"exit $rc, got: $out; $(show "$TMP/u4.err")" \
	ev '[ $rc = 0 ] && [ "$out" = "1234 4321 4321 / / " ]'
uex u5 --env X=1 --env FOO=mine "$B" -- sh -c 'echo $X $FOO $USER; echo $PATH'
check "vm: --env adds to the defaults (ENV_ADD): PATH kept, FOO replaced, the user's USER" \
	"exit $rc, got: $out; $(show "$TMP/u5.err")" \
	ev '[ $rc = 0 ] && [ "$out" = "1 mine nobody /usr/sbin:/usr/bin:/sbin:/bin " ]'
uex u6 --user nosuchuser "$B" -- true
check "vm: an unknown --user: status 125, 'user nosuchuser: no such user'" \
	"exit $rc; $(show "$TMP/u6.err")" \
	ev '[ $rc = 125 ] && grep -q "user nosuchuser: no such user" "$TMP/u6.err"'
uex u7 --user 'a:b:c' "$B" -- true
check "vm: a malformed --user is refused by emberctl: 125" \
	"exit $rc; $(show "$TMP/u7.err")" \
	ev '[ $rc = 125 ] && grep -q -- "--user wants" "$TMP/u7.err"'
printf 'env=FOO=bar\0colour=blue\0' >"$TMP/defaults.bad"
$E cp "$TMP/defaults.bad" "$B:/usr/lib/ember/defaults" 2>"$TMP/u8.err"
uex u8 "$B" -- true
check "vm: a malformed defaults file: every exec fails (125), naming the file and the record" \
	"exit $rc; $(show "$TMP/u8.err")" \
	ev '[ $rc = 125 ] && grep -q "/usr/lib/ember/defaults: record 2: unknown record" "$TMP/u8.err"'
printf 'cwd=/nonexistent-cwd\0' >"$TMP/defaults.cwd"
$E cp "$TMP/defaults.cwd" "$B:/usr/lib/ember/defaults" 2>"$TMP/u9.err"
uex u9 "$B" -- true
check "vm: the file's cwd missing: 127, naming it" \
	"exit $rc; $(show "$TMP/u9.err")" \
	ev '[ $rc = 127 ] && grep -q "/nonexistent-cwd: No such file" "$TMP/u9.err"'
: >"$TMP/defaults.empty"
$E cp "$TMP/defaults.empty" "$B:/usr/lib/ember/defaults" 2>"$TMP/u10.err"
uex u10 "$B" -- sh -c 'id -u; echo $HOME; pwd; rm /usr/lib/ember/defaults'
uex u11 "$B" -- sh -c 'id -u; echo $HOME; pwd'
check "vm: an empty defaults file, then none: root, HOME=/root, in / again" \
	"exit $rc, got: $out; $(show "$TMP/u10.err" "$TMP/u11.err")" \
	ev '[ $rc = 0 ] && [ "$out" = "0 /root / " ] && [ ! -s "$TMP/u10.err" ]'
head -c 1M /dev/urandom >"$TMP/big.bin"
$E cp "$TMP/big.bin" "$A:/root/big.bin" 2>"$TMP/cpi.err" &&
	$E cp "$A:/root/big.bin" "$TMP/big.back" 2>"$TMP/cpo.err"
check "vm: a 1 MiB random file copied in and back out is identical" \
	"$(show "$TMP/cpi.err" "$TMP/cpo.err")" cmp -s "$TMP/big.bin" "$TMP/big.back"
echo mark >"$TMP/mark"
$E cp "$TMP/mark" "$A:/root/mark-a" && $E cp "$TMP/mark" "$B:/root/mark-b"
$E exec "$B" -- sh -c 'test ! -e /root/mark-a && test ! -e /root/big.bin && test -e /root/mark-b'
rb=$?
$E exec "$A" -- sh -c 'test ! -e /root/mark-b && test -e /root/mark-a'
ra=$?
check "vm: sandboxes side by side do not see each other's files" \
	"B: exit $rb, A: exit $ra" ev '[ $rb = 0 ] && [ $ra = 0 ]'
$E ls >"$TMP/ls.out"
check "vm: ls lists both" "$(show "$TMP/ls.out")" \
	ev 'grep -q "^$A " "$TMP/ls.out" && grep -q "^$B " "$TMP/ls.out"'

# A real pause: ember uses no CPU, the agent is out of reach, the
# guest goes on where it was once resumed.
$E exec "$A" -- sh -c 'echo before >/root/p' 2>/dev/null
$E pause "$A" >/dev/null 2>"$TMP/rp.err"
rc=$?
ea=$(info_of "$A" ember)
t0=$(awk '{ sub(/^.*\) /, ""); print $12 + $13 }' "/proc/$ea/stat")
sleep 2
t1=$(awk '{ sub(/^.*\) /, ""); print $12 + $13 }' "/proc/$ea/stat")
check "vm: pause: ember uses no CPU while paused (at most 2 ticks in 2 s)" \
	"exit $rc, ticks $t0 -> $t1; $(show "$TMP/rp.err")" \
	ev '[ $rc = 0 ] && [ $((t1 - t0)) -le 2 ]'
$E resume "$A" >/dev/null 2>"$TMP/rr.err"
out=$($E exec "$A" -- cat /root/p 2>&1)
check "vm: resumed, the sandbox answers and kept its files" "got: $out; $(show "$TMP/rr.err")" \
	[ "$out" = before ]

pa=$(pids "$A")
$E kill "$A" >/dev/null 2>"$TMP/ka.err"
rc=$?
check "vm: kill leaves nothing: no ember or supervisor, no directory, socket or disk copy" \
	"exit $rc; $(show "$TMP/ka.err"; ls -la "$EMBER_STATE_DIR")" \
	ev '[ $rc = 0 ] && gone "$A" "$pa"'
$E kill "$A" 2>"$TMP/ka2.err"
rc=$?
check "vm: killing it again: no sandbox" "exit $rc; $(show "$TMP/ka2.err")" \
	ev '[ $rc = 1 ] && grep -qx "emberctl: no sandbox $A" "$TMP/ka2.err"'
$E exec "$A" -- true 2>"$TMP/ea.err"
check "vm: exec on the killed id: no sandbox" "$(show "$TMP/ea.err")" \
	grep -qx "emberctl: no sandbox $A" "$TMP/ea.err"
wait $watch
check "vm: the --ttl 5 sandbox is gone, leaving nothing, within 10 s of run" \
	"gone after $(cat "$TMP/c.gone" 2>/dev/null) ms" \
	ev '[ -s "$TMP/c.clean" ] && [ "$(cat "$TMP/c.gone")" -le 10000 ]'
pb=$(pids "$B")
$E kill "$B" >/dev/null
check "vm: all gone: empty state directory, no ember left, shared image unchanged" \
	"$(ls -la "$EMBER_STATE_DIR")" \
	ev 'gone "$B" "$pb" && state_empty && cmp -s "$EMBER_ROOTFS" "$TMP/rootfs.orig"'
check "vm: no stray temporary files" "" no_tmp_files
touch "$TMP/supervisor.log"
check "vm: no sanitizer report (emberctl, supervisors)" "$(show "$TMP/supervisor.log")" \
	no_sanitizer_report "$TMP"/*.err "$TMP/supervisor.log"
