#!/usr/bin/env bash
# Snapshots without Linux: a tiny guest (tests/guests/snap_resume.c) is
# snapshotted while it polls the UART and restored in other ember
# processes (Full, compressed, Diff); then every kind of damaged snapshot
# is loaded into one ember, which must refuse each with a clear 400 and
# still load the good one afterwards.  Seconds in all.
set -u
cd "$(dirname "$0")/../.."
. tests/lib.sh

G=${GUESTS:-build/guests}
API="python3 tests/integration/api_client.py req"
TOOL="python3 tests/integration/snap_tool.py"
PIDS=()

need_kvm "snapshot tests"
cleanup() {
	local p
	for p in ${PIDS[@]+"${PIDS[@]}"}; do kill -9 "$p" 2>/dev/null; done
	wait 2>/dev/null
	rm -rf "$TMP"
}
trap cleanup EXIT

# start NAME [ARGS...]: ember with an API socket $TMP/NAME.sock, stdin
# from $TMP/NAME.in when it exists; output to $TMP/NAME.{out,err}.
start() {
	local name=$1 in=/dev/null i
	shift
	[ -e "$TMP/$name.in" ] && in=$TMP/$name.in
	"$EMBER" --api-sock "$TMP/$name.sock" "$@" <"$in" \
		>"$TMP/$name.out" 2>"$TMP/$name.err" &
	PIDS+=($!)
	eval "PID_$name=$!"
	for i in $(seq 100); do
		[ -S "$TMP/$name.sock" ] && return 0
		sleep 0.05
	done
	return 1
}

# stop PID: kill -9 and reap it quietly.
stop() {
	kill -9 "$1" 2>/dev/null
	wait "$1" 2>/dev/null
}

load_body() { # STATE MEM RESUME
	printf '{"snapshot_path":"%s","mem_backend":{"backend_type":"File","backend_path":"%s"},"resume_vm":%s}' "$1" "$2" "$3"
}

sanitizer_free() {
	! grep -Eq 'AddressSanitizer|LeakSanitizer|runtime error' "$TMP/$1.err"
}

if [ ! -f "$G/snap_resume.elf" ]; then
	not_ok "snapshot tests" "$G/snap_resume.elf missing: run make guests"
	exit 0
fi

# --- a Full snapshot of a guest polling the UART ---------------------------
start boot --kernel "$G/snap_resume.elf" --mem 64
wait_for "$TMP/boot.out" '^ready' 20 || not_ok "tiny guest ready" "$(tail -3 "$TMP/boot.err")"
r=$($API "$TMP/boot.sock" PUT /snapshot/create \
	"{\"snapshot_path\":\"$TMP/s.state\",\"mem_file_path\":\"$TMP/s.mem\"}")
case $r in 400*"must be paused"*) ok "create on a running VM is refused: $r" ;;
*) not_ok "create on a running VM is refused" "got: $r" ;; esac
r=$($API "$TMP/boot.sock" PATCH /vm '{"state":"Paused"}')
r=$($API "$TMP/boot.sock" PUT /snapshot/create \
	"{\"snapshot_type\":\"Diff\",\"snapshot_path\":\"$TMP/d.state\",\"mem_file_path\":\"$TMP/d.mem\"}")
case $r in 400*"Diff snapshot needs a VM restored"*) ok "a Diff of a booted VM is refused: ${r:0:90}" ;;
*) not_ok "a Diff of a booted VM is refused" "got: $r" ;; esac
t0=$(date +%s%N)
r=$($API "$TMP/boot.sock" PUT /snapshot/create \
	"{\"snapshot_type\":\"Full\",\"snapshot_path\":\"$TMP/s.state\",\"mem_file_path\":\"$TMP/s.mem\"}")
t1=$(date +%s%N)
check "Full snapshot of a paused VM: $r in $(((t1 - t0) / 1000000)) ms" "$r" \
	test "${r%% *}" = 204
check "state and memory files are 0600" \
	"$(stat -c '%a %n' "$TMP"/s.state "$TMP"/s.mem)" \
	test "$(stat -c %a "$TMP/s.state" "$TMP/s.mem" | sort -u)" = 600
mem_kib=$(du -k "$TMP/s.mem" | cut -f1)
check "the memory file is sparse: $mem_kib KiB on disk for 64 MiB" \
	"$mem_kib KiB" test "$mem_kib" -lt 16384
check "no temporary file is left" "$(ls "$TMP")" \
	test -z "$(ls "$TMP" | grep -F .tmp)"
stop "$PID_boot"

# --- restored in another process: it carries on ------------------------------
printf g >"$TMP/r1.in"
start r1
t0=$(date +%s%N)
r=$($API "$TMP/r1.sock" PUT /snapshot/load "$(load_body "$TMP/s.state" "$TMP/s.mem" true)")
t1=$(date +%s%N)
exit_of "$PID_r1"
if [ "${r%% *}" = 204 ] && [ "$st" = 0 ] &&
	grep -q 'ok - 4 MiB of RAM' "$TMP/r1.out" && ! grep -q FAIL "$TMP/r1.out"; then
	ok "restored in a new process (load $(((t1 - t0) / 1000000)) ms): registers, RAM, UART carry on"
else
	not_ok "restored in a new process" "load: $r, exit $st" "$(cat "$TMP/r1.out")" "$(tail -3 "$TMP/r1.err")"
fi
sanitizer_free r1 || not_ok "restore: no sanitizer report" "$(grep -m3 -E 'Sanitizer|runtime error' "$TMP/r1.err")"

# --- the same snapshot twice at once, one memory file ------------------------
printf g >"$TMP/r2.in"
printf g >"$TMP/r3.in"
start r2
start r3
$API "$TMP/r2.sock" PUT /snapshot/load "$(load_body "$TMP/s.state" "$TMP/s.mem" true)" >/dev/null &
$API "$TMP/r3.sock" PUT /snapshot/load "$(load_body "$TMP/s.state" "$TMP/s.mem" true)" >/dev/null
wait $!
exit_of "$PID_r2"; s2=$st
exit_of "$PID_r3"; s3=$st
check "two VMs restored at once from one memory file both carry on" \
	"exits $s2 and $s3" test "$s2.$s3" = "0.0"

# --- compressed, and a Diff over a restored VM -------------------------------
start r4
r=$($API "$TMP/r4.sock" PUT /snapshot/load "$(load_body "$TMP/s.state" "$TMP/s.mem" true)")
sleep 0.2
$API "$TMP/r4.sock" PATCH /vm '{"state":"Paused"}' >/dev/null
r=$($API "$TMP/r4.sock" PUT /snapshot/create \
	"{\"snapshot_path\":\"$TMP/z.state\",\"mem_file_path\":\"$TMP/z.mem\",\"compress\":true}")
check "compressed Full snapshot of a restored VM: $r" "$r" test "${r%% *}" = 204
r=$($API "$TMP/r4.sock" PUT /snapshot/create \
	"{\"snapshot_type\":\"Diff\",\"snapshot_path\":\"$TMP/d.state\",\"mem_file_path\":\"$TMP/d.mem\"}")
check "Diff snapshot of a restored VM: $r" "$r" test "${r%% *}" = 204
d_kib=$(du -k "$TMP/d.mem" | cut -f1)
check "the Diff holds only changed pages: $d_kib KiB on disk" "$d_kib KiB" \
	test "$d_kib" -lt 1024
stop "$PID_r4"
for k in z d; do
	printf g >"$TMP/$k.in"
	start "$k"
	r=$($API "$TMP/$k.sock" PUT /snapshot/load "$(load_body "$TMP/$k.state" "$TMP/$k.mem" true)")
	eval "p=\$PID_$k"
	exit_of "$p"
	check "restore of the $([ $k = z ] && echo compressed || echo Diff) snapshot carries on: load $r, exit $st" \
		"$(tail -3 "$TMP/$k.err")" test "${r%% *}.$st" = "204.0"
done

# --- a Diff folded into a Full snapshot: merge-diff ---------------------------
if "$EMBER" merge-diff "$TMP/d.state" "$TMP/d.mem" "$TMP/m.state" "$TMP/m.mem" 2>"$TMP/merge.err"; then
	printf g >"$TMP/m.in"
	start m
	r=$($API "$TMP/m.sock" PUT /snapshot/load "$(load_body "$TMP/m.state" "$TMP/m.mem" true)")
	exit_of "$PID_m"
	check "merge-diff: the merged Full snapshot restores and carries on (load $r, exit $st)" \
		"$(tail -3 "$TMP/m.err")" test "${r%% *}.$st" = "204.0"
else
	not_ok "merge-diff folds a Diff and its base" "$(cat "$TMP/merge.err")"
fi
"$EMBER" merge-diff "$TMP/s.state" "$TMP/s.mem" "$TMP/x.state" "$TMP/x.mem" 2>"$TMP/merge2.err"
check "merge-diff refuses a Full snapshot: $(cat "$TMP/merge2.err")" "exit $?" \
	grep -q 'nothing to merge' "$TMP/merge2.err"

# --- the Uffd backend: an external page server fills RAM --------------------
python3 tests/integration/uffd_server.py "$TMP/pages.sock" "$TMP/s.mem" \
	>"$TMP/pages.out" 2>&1 &
PIDS+=($!)
srv=$!
for i in $(seq 100); do [ -S "$TMP/pages.sock" ] && break; sleep 0.05; done
printf g >"$TMP/u.in"
start u
r=$($API "$TMP/u.sock" PUT /snapshot/load \
	"{\"snapshot_path\":\"$TMP/s.state\",\"mem_backend\":{\"backend_type\":\"Uffd\",\"backend_path\":\"$TMP/pages.sock\"},\"resume_vm\":true}")
exit_of "$PID_u"
wait "$srv" 2>/dev/null
if [ "${r%% *}.$st" = "204.0" ] && grep -q 'ok - 4 MiB' "$TMP/u.out"; then
	ok "restored through a page server (Uffd, Firecracker's handshake): $(cat "$TMP/pages.out")"
else
	not_ok "restored through a page server (Uffd)" "load $r, exit $st" \
		"$(tail -3 "$TMP/u.err")" "$(tail -3 "$TMP/pages.out")"
fi
start u2
r=$($API "$TMP/u2.sock" PUT /snapshot/load \
	"{\"snapshot_path\":\"$TMP/s.state\",\"mem_backend\":{\"backend_type\":\"Uffd\",\"backend_path\":\"$TMP/nobody.sock\"}}")
case $r in 400*"Uffd backend"*) ok "a page server that is not there is refused: ${r:0:110}" ;;
*) not_ok "a page server that is not there is refused" "got: $r" ;; esac
stop "$PID_u2"

# --- damaged snapshots: all refused, the ember loads the good one after --------
start bad
out=$($TOOL corrupt-loads "$TMP/bad.sock" "$TMP/s.state" "$TMP/s.mem" 61)
check "every 61-byte block of the state file inverted, every section boundary cut: $out" \
	"$out" test "${out#*accepted=}" = 0
$TOOL set-version "$TMP/s.state" "$TMP/v.state" 2
r=$($API "$TMP/bad.sock" PUT /snapshot/load "$(load_body "$TMP/v.state" "$TMP/s.mem" false)")
case $r in 400*"version"*) ok "another format version (CRC right) is refused: ${r:0:110}" ;;
*) not_ok "another format version is refused" "got: $r" ;; esac
head -c 32M "$TMP/s.mem" >"$TMP/short.mem"
r=$($API "$TMP/bad.sock" PUT /snapshot/load "$(load_body "$TMP/s.state" "$TMP/short.mem" false)")
case $r in 400*"holds"*) ok "a short memory file is refused: ${r:0:120}" ;;
*) not_ok "a short memory file is refused" "got: $r" ;; esac
r=$($API "$TMP/bad.sock" PUT /snapshot/load "$(load_body "$TMP/s.state" "$TMP/nonexistent.mem" false)")
case $r in 400*"No such file"*) ok "a missing memory file is refused: ${r:0:110}" ;;
*) not_ok "a missing memory file is refused" "got: $r" ;; esac
touch -d '2001-01-01' "$TMP/s.mem"
r=$($API "$TMP/bad.sock" PUT /snapshot/load "$(load_body "$TMP/d.state" "$TMP/d.mem" false)")
case $r in 400*"changed since"*) ok "a Diff whose base changed is refused: ${r:0:120}" ;;
*) not_ok "a Diff whose base changed is refused" "got: $r" ;; esac
r=$($API "$TMP/bad.sock" PUT /snapshot/load "$(load_body "$TMP/d.state" "$TMP/s.mem" false)")
case $r in 400*) ok "a Diff given the base as its memory file is refused: ${r:0:100}" ;;
*) not_ok "a Diff given the base as its memory file is refused" "got: $r" ;; esac
r=$($API "$TMP/bad.sock" PUT /snapshot/load "$(load_body "$TMP/z.state" "$TMP/s.mem" false)")
case $r in 400*"written compressed"*) ok "a raw memory file for a compressed snapshot is refused: ${r:0:100}" ;;
*) not_ok "a raw memory file for a compressed snapshot is refused" "got: $r" ;; esac
python3 tests/integration/snap_tool.py rebase "$TMP/d.state" "$TMP/rb.state" /etc/passwd
r=$($API "$TMP/bad.sock" PUT /snapshot/load "$(load_body "$TMP/rb.state" "$TMP/d.mem" false)")
case $r in 400*"holds"*"the snapshot's RAM"*) ok "a Diff whose base is not a memory file of its RAM (right CRC) is refused: ${r:0:110}" ;;
*) not_ok "a Diff whose base is not a memory file of its RAM is refused" "got: $r" ;; esac
mkfifo "$TMP/fifo"
r=$(timeout 20 $API "$TMP/bad.sock" PUT /snapshot/load "$(load_body "$TMP/fifo" "$TMP/s.mem" false)")
case $r in 400*"not a regular file"*) ok "a FIFO as the state file is refused, not waited on" ;;
*) not_ok "a FIFO as the state file is refused, not waited on" "got: $r" ;; esac
r=$($API "$TMP/bad.sock" GET /)
case $r in 200*"Not started"*) ok "after 200 refused loads the instance is still Not started" ;;
*) not_ok "still Not started after refused loads" "got: $r" ;; esac
check "no ember thread or fd leaked by the refused loads" \
	"$(ls /proc/"$PID_bad"/fd | wc -l) fds" test "$(ls /proc/"$PID_bad"/fd | wc -l)" -lt 40
r=$($API "$TMP/bad.sock" PUT /snapshot/load "$(load_body "$TMP/s.state" "$TMP/s.mem" false)")
r2=$($API "$TMP/bad.sock" GET /)
case "$r $r2" in 204*Paused*) ok "then the good snapshot loads, Paused (resume_vm false)" ;;
*) not_ok "then the good snapshot loads" "got: $r / $r2" "$(tail -3 "$TMP/bad.err")" ;; esac
# Creates that must leave every file as it was.
r=$($API "$TMP/bad.sock" PUT /snapshot/create \
	"{\"snapshot_path\":\"$TMP/p.state\",\"mem_file_path\":\"$TMP/p.mem\"}")
sum=$(md5sum <"$TMP/p.mem")
r2=$($API "$TMP/bad.sock" PUT /snapshot/create \
	"{\"snapshot_path\":\"$TMP/nodir/x.state\",\"mem_file_path\":\"$TMP/p.mem\"}")
if [ "${r%% *}" = 204 ] && [ "${r2%% *}" = 400 ] && [ "$(md5sum <"$TMP/p.mem")" = "$sum" ] &&
	[ -z "$(ls "$TMP" | grep -E '\.(tmp|new)\.')" ]; then
	ok "a create whose state file cannot be written leaves the memory file it named as it was"
else
	not_ok "a refused create leaves the memory file as it was" "$r / $r2"
fi
r=$($API "$TMP/bad.sock" PUT /snapshot/create \
	"{\"snapshot_path\":\"$TMP/same\",\"mem_file_path\":\"$TMP/same\"}")
case $r in 400*"same file"*) ok "snapshot_path = mem_file_path is refused" ;;
*) not_ok "snapshot_path = mem_file_path is refused" "got: $r" ;; esac
r=$($API "$TMP/bad.sock" PUT /snapshot/create \
	"{\"snapshot_type\":\"Diff\",\"snapshot_path\":\"$TMP/o.state\",\"mem_file_path\":\"$TMP/s.mem\"}")
case $r in 400*"base memory file"*) ok "a Diff over its own base file is refused: ${r:0:100}" ;;
*) not_ok "a Diff over its own base file is refused" "got: $r" ;; esac
r=$($API "$TMP/bad.sock" PUT /snapshot/load "$(load_body "$TMP/s.state" "$TMP/s.mem" false)")
case $r in 400*"not supported after starting"*) ok "a second load is refused: ${r:0:80}" ;;
*) not_ok "a second load is refused" "got: $r" ;; esac
kill -TERM "$PID_bad"
exit_of "$PID_bad"
sanitizer_free bad && ok "refused loads: no sanitizer report (exit $st)" ||
	not_ok "refused loads: no sanitizer report" "$(grep -m3 -E 'Sanitizer|runtime error' "$TMP/bad.err")"

# --- loads refused by the API's own rules ---------------------------------------
start cfg
$API "$TMP/cfg.sock" PUT /boot-source "{\"kernel_image_path\":\"$G/hello.elf\"}" >/dev/null
r=$($API "$TMP/cfg.sock" PUT /snapshot/load "$(load_body "$TMP/s.state" "$TMP/s.mem" false)")
case $r in 400*"boot-specific"*) ok "load after a boot source is refused (Firecracker's rule)" ;;
*) not_ok "load after a boot source is refused" "got: $r" ;; esac
stop "$PID_cfg"
start uf
r=$($API "$TMP/uf.sock" PUT /snapshot/load \
	"{\"snapshot_path\":\"$TMP/s.state\",\"mem_backend\":{\"backend_type\":\"Bogus\",\"backend_path\":\"x\"}}")
case $r in 400*"unknown variant"*) ok "an unknown backend_type is refused" ;;
*) not_ok "an unknown backend_type is refused" "got: $r" ;; esac
r=$($API "$TMP/uf.sock" PUT /snapshot/load "{\"snapshot_path\":\"$TMP/s.state\"}")
case $r in 400*"mem_backend"*) ok "a load without a memory backend is refused" ;;
*) not_ok "a load without a memory backend is refused" "got: $r" ;; esac
stop "$PID_uf"

# --- a drive's rate limiter and image, changed at run time, are in the snapshot
truncate -s 1M "$TMP/rl.img" "$TMP/rl2.img"
start rl --kernel "$G/snap_resume.elf" --mem 64 \
	--drive "path=$TMP/rl.img,id=rl,bw=1048576/1000"
wait_for "$TMP/rl.out" '^ready' 20 || not_ok "tiny guest with a limited drive ready" "$(tail -3 "$TMP/rl.err")"
r=$($API "$TMP/rl.sock" PATCH /drives/rl \
	'{"drive_id":"rl","rate_limiter":{"ops":{"size":50,"one_time_burst":7,"refill_time":500}}}')
check "PATCH /drives: a rate limiter on the running drive ($r)" "$r" test "${r%% *}" = 204
r=$($API "$TMP/rl.sock" PATCH /drives/rl "{\"drive_id\":\"rl\",\"path_on_host\":\"$TMP/rl2.img\"}")
check "PATCH /drives: a new image for it ($r)" "$r" test "${r%% *}" = 204
r=$($API "$TMP/rl.sock" PATCH /vm '{"state":"Paused"}')
r=$($API "$TMP/rl.sock" PUT /snapshot/create \
	"{\"snapshot_path\":\"$TMP/rl.state\",\"mem_file_path\":\"$TMP/rl.mem\"}")
check "snapshot of the VM with a limited drive ($r)" "$r" test "${r%% *}" = 204
stop "$PID_rl"
start rl2
r=$($API "$TMP/rl2.sock" PUT /snapshot/load "$(load_body "$TMP/rl.state" "$TMP/rl.mem" false)")
c=$($API "$TMP/rl2.sock" GET /vm/config)
check "restored: GET /vm/config shows the drive's image and limiter as PATCHed" "load: $r; $c" \
	grep -q "\"path_on_host\":\"$TMP/rl2.img\",\"rate_limiter\":{\"bandwidth\":{\"size\":1048576,\"one_time_burst\":0,\"refill_time\":1000},\"ops\":{\"size\":50,\"one_time_burst\":7,\"refill_time\":500}}" <<<"$c"
stop "$PID_rl2"
sanitizer_free rl && sanitizer_free rl2 && ok "limited drive snapshot: no sanitizer report" ||
	not_ok "limited drive snapshot: no sanitizer report" "$(grep -m3 -E 'Sanitizer|runtime error' "$TMP"/rl*.err)"
