#!/usr/bin/env bash
# `emberctl template build NAME --from-image SRC` (issue 22): templates
# from images made here, offline, then checked in a sandbox restored from
# each:
#
# - an OCI image layout (mkoci.py: busybox-static only, no libc at all,
#   no User) with --disk-mib, a setup command (root), a start command (a
#   busybox httpd) and --ready-port: ember's init and agent were
#   brought in (booted as init=/usr/lib/ember/init), the image's Env
#   (PATH gets ember's busybox last), WorkingDir (made: the image lacks
#   it) and the `user` account (uid 1000, /home/user) are every command's
#   defaults; `exec --user root` and --env still work; the layers came
#   through (whiteout, hard link, setuid bit, a file owned 1000:1000);
#   the disk is the size asked for; the server answers in a sandbox
#   restored from it; run-code says the image has no Python;
# - a docker archive whose config has User 1000:1000: commands run as
#   uid 1000 without a `user` account;
# - ember's own root file system as an ext4 SRC (glibc, python3): the
#   account is added, python3 runs as it;
# - bad input, each one clear error and nothing left (no template, no
#   build directory, no sandbox): an arm64 image, a digest mismatch, a
#   truncated archive, a missing SRC, a ready command that never
#   succeeds (the start command's output shown), --from-image with --rootfs,
#   a WorkingDir with a newline or a quote (debugfs commands: refused);
# - --if-missing: a SRC given relative is recorded absolute (the same SRC
#   given absolute is up to date); a new SRC that fails to build leaves
#   the old template as it was (one error), one in use is refused before
#   any build, a good one (an OCI layout with a zstd layer: recompressed
#   as gzip by skopeo) replaces it;
# - the host's disk: a small gzip of a 256 MiB tar over
#   EMBER_IMAGE_MAX_MIB, and as root, on a 200 MiB tmpfs state directory
#   (over its free space: refused before unpacking) and a 100 MiB one
#   that a fake umoci fills (stopped with 16 MiB left).
set -u
cd "$(dirname "$0")/../.."
. tests/lib.sh

: "${EMBERCTL:=build/emberctl-asan}"
BOOT_TIMEOUT=${BOOT_TIMEOUT:-600}
E=$EMBERCTL
P=timg-$$
IDS=()

need_kvm "template --from-image"
if [ ! -x "$E" ] || [ ! -x "$EMBER" ] || [ ! -f "$GUEST/init" ]; then
	not_ok "template --from-image: $E, $EMBER and $GUEST/init are built" "make all asan guest"
	exit 0
fi
export EMBER_BIN=$EMBER EMBER_KERNEL=$GUEST/vmlinux
export EMBER_GUEST_INIT=$GUEST/init EMBER_GUEST_AGENT=$GUEST/agent
export EMBER_SUPERVISOR_LOG=$TMP/supervisor.log
export EMBER_STATE_DIR=$TMP/state
T=$EMBER_STATE_DIR/templates

cleanup() {
	local id
	for id in "${IDS[@]}"; do "$E" kill "$id" >/dev/null 2>&1; done
	"$E" template rm --force "$P-oci" "$P-docker" "$P-ext4" "$P-df" "$P-df2" "$P-wd" "$P-tpl" "$P-tpl2" >/dev/null 2>&1
	# A test's tmpfs, should unshare's mount namespace not have held it.
	umount "$TMP/small" 2>/dev/null
	rm -rf "$TMP"
}
trap cleanup EXIT

show() { for f in "$@"; do echo "#   $f:"; sed 's/^/#     /' "$f" | tail -15; done; }
ev() { eval "$*"; }
now_ms() { echo $(($(date +%s%N) / 1000000)); }
# Nothing of a failed build: no template, no build dir, no sandbox.
nothing_left() {
	[ ! -e "$T/$1" ] && [ -z "$(ls -A "$T" 2>/dev/null | grep -F ".$1.")" ] &&
		[ "$("$E" ls 2>/dev/null | wc -l)" = 1 ]
}
# build NAME SRC [options]: the template; 0 or the exit status.
build() {
	local name=$1 src=$2 t0
	shift 2
	t0=$(now_ms)
	timeout "$BOOT_TIMEOUT" "$E" template build "$name" ${src:+--from-image "$src"} \
		--no-net --boot-timeout "$BOOT_TIMEOUT" "$@" \
		>"$TMP/build.out" 2>"$TMP/build.err"
	rc=$?
	echo "# template build $name from ${src:-$*}: exit $rc in $(($(now_ms) - t0)) ms"
	grep "^emberctl: built template" "$TMP/build.err" | sed 's/^/#   /'
	return $rc
}
run() {
	id=$("$E" run --template "$1" --ttl 600 2>>"$TMP/err")
	[ -n "$id" ] && IDS+=("$id")
}
x() {
	local sb=$1
	shift
	"$E" exec "$sb" "$@" 2>>"$TMP/err"
}

mkdir -p "$TMP/img"
python3 tests/integration/mkoci.py layout "$TMP/img/oci" --user "" &&
	python3 tests/integration/mkoci.py docker "$TMP/img/docker.tar" &&
	python3 tests/integration/mkoci.py layout "$TMP/img/arm" --arch arm64 &&
	python3 tests/integration/mkoci.py layout "$TMP/img/bad" --bad-diff-id
rc=$?
check "template --from-image: mkoci.py made the test images" "exit $rc" [ $rc = 0 ]
[ $rc = 0 ] || exit 0

# ---- an OCI layout, no User: the `user` account ---------------------------
# Named relative to here: the info records it absolute (--if-missing
# compares it, from any directory).
TMPR=$(realpath "$TMP")
build "$P-oci" "$(realpath --relative-to=. "$TMP/img/oci")" --disk-mib 200 --setup 'echo hello >/srv/x' \
	--start-cmd 'httpd -f -p 8080 -h /srv' --ready-port 8080
check "template --from-image: an OCI layout builds (--disk-mib 200, a setup, start and ready command)" \
	"exit $rc; $(show "$TMP/build.err")" \
	ev '[ $rc = 0 ] && [ "$(cat "$TMP/build.out")" = "$P-oci" ] && [ -f "$T/$P-oci/rootfs.ext4" ]'
check "template --from-image: the builder says where the time went (image stages, boot, ready, snapshot)" \
	"$(show "$TMP/build.err")" \
	grep -qE "^emberctl: built template $P-oci: base [0-9.]+ s \(read [0-9.]+ s, check .*unpack .*disk .*guest parts .*\), boot [0-9.]+ s, .*ready [0-9.]+ s, .*snapshot" "$TMP/build.err"
grep -q "^rootfs=$TMPR/img/oci$" "$T/$P-oci/info" 2>/dev/null &&
	grep -q "^user=user$" "$T/$P-oci/info"
check "template --from-image: its info records the SRC (given relative) as an absolute path, and the default user" \
	"$(cat "$T/$P-oci/info" 2>&1)" [ $? = 0 ]
run "$P-oci"
sb=$id
out=$(x "$sb" -- sh -c 'echo "$PATH|$FOO|$(pwd)|$(id -u):$(id -g)|$HOME|$USER"')
check "template --from-image: the image's Env, WorkingDir and the user account are the defaults" \
	"got '$out'; $(show "$TMP/err")" \
	[ "$out" = "/bin:/usr/lib/ember/bin|bar baz|/srv|1000:1000|/home/user|user" ]
out=$(x "$sb" -- sh -c 'grep "^user:" /etc/passwd; stat -c "%u:%g %a" /home/user; ls -l /usr/lib/ember/init | cut -c1-10')
check "template --from-image: /etc/passwd has user (1000), its home is its own, ember's init is there" \
	"got '$out'; $(show "$TMP/err")" \
	[ "$out" = "user:x:1000:1000::/home/user:/bin/sh
1000:1000 750
-rwxr-xr-x" ]
out=$(x "$sb" --user root -- sh -c 'echo "$(id -u)|$HOME"')
check "template --from-image: exec --user root runs as root" "got '$out'; $(show "$TMP/err")" \
	[ "$out" = "0|/root" ]
out=$(x "$sb" --env A=b -- sh -c 'echo "$A|$FOO|$PATH"')
check "template --from-image: --env adds to the image's Env" "got '$out'; $(show "$TMP/err")" \
	[ "$out" = "b|bar baz|/bin:/usr/lib/ember/bin" ]
out=$(x "$sb" -- sh -c 'echo x >/home/user/f && cat /home/user/f && touch /etc/nope 2>/dev/null || echo refused')
check "template --from-image: user writes its home, not /etc" "got '$out'; $(show "$TMP/err")" \
	[ "$out" = "x
refused" ]
out=$(x "$sb" --user root -- sh -c '
	ls /lower; cat /opq/new; ls /opq
	[ "$(stat -c %i /hl/a)" = "$(stat -c %i /hl/b)" ] && echo linked
	stat -c "%a %u:%g" /bin/suid /home/u/f
	df -m / | awk "NR == 2 { print (\$2 >= 180 && \$2 <= 200) ? \"size ok\" : \"size \" \$2 }"')
check "template --from-image: the layers came through (whiteout, opaque dir, hard link, setuid, owner) and the disk is 200 MiB" \
	"got '$out'; $(show "$TMP/err")" \
	[ "$out" = "stays
new
new
linked
4755 0:0
644 1000:1000
size ok" ]

out=$(x "$sb" -- wget -qO- http://127.0.0.1:8080/x)
check "template --from-image: the start command's server listens in a restored sandbox" \
	"got '$out'; $(show "$TMP/err")" [ "$out" = hello ]
"$E" run-code "$sb" 'print(1)' >"$TMP/rc.out" 2>"$TMP/rc.err"
rc=$?
check "template --from-image: run-code in an image without Python says so" \
	"exit $rc; $(show "$TMP/rc.out" "$TMP/rc.err")" \
	ev '[ $rc = 125 ] && grep -q "this image has no Python" "$TMP/rc.err"'

# ---- a docker archive with User 1000:1000 ---------------------------------
build "$P-docker" "$TMP/img/docker.tar"
check "template --from-image: a docker archive builds, its info says user=1000:1000" \
	"exit $rc; $(show "$TMP/build.err")" \
	ev '[ $rc = 0 ] && grep -q "^user=1000:1000$" "$T/$P-docker/info"'
run "$P-docker"
out=$(x "$id" -- sh -c 'echo "$(id -u):$(id -g)|$(pwd)"; grep -c "^user:" /etc/passwd')
check "template --from-image: the image's User 1000:1000 is the default, no user account added" \
	"got '$out'; $(show "$TMP/err")" [ "$out" = "1000:1000|/srv
0" ]

# ---- ember's own root file system (glibc, python3), as an ext4 SRC --------
# --no-interp: importing its numpy, pandas and matplotlib takes minutes
# in a fresh guest where kernel mode is emulated.
build "$P-ext4" "ext4:$GUEST/rootfs.ext4" --no-interp
check "template --from-image: ember's rootfs as an ext4 SRC builds" \
	"exit $rc; $(show "$TMP/build.err")" [ $rc = 0 ]
run "$P-ext4"
out=$(x "$id" -- python3 -c 'import os, pwd; print(os.getuid(), pwd.getpwuid(os.getuid()).pw_name, os.getcwd(), os.environ["HOME"])')
check "template --from-image: python3 runs as user in a glibc image" "got '$out'; $(show "$TMP/err")" \
	[ "$out" = "1000 user / /home/user" ]

# ---- a Dockerfile: every supported instruction, then the step cache --------
mkdir -p "$TMP/ctx/dir"
echo hello-file >"$TMP/ctx/hello.txt"
echo in-dir >"$TMP/ctx/dir/x"
echo mine >"$TMP/ctx/owned.txt"
# .dockerignore: left out of COPY and of the step's cache key.
echo skipped >"$TMP/ctx/dir/skip-me"
printf '# ignored\ndir/skip*\n*.log\n' >"$TMP/ctx/.dockerignore"
cat >"$TMP/ctx/Dockerfile" <<EOF
# syntax=docker/dockerfile:1
FROM $TMP/img/oci
ARG GREETING=hi
ENV APP_HOME=/app \\
    TWO="two words"
WORKDIR \$APP_HOME
COPY hello.txt ./
COPY dir/ /app/dir/
COPY --chown=1000:1000 --chmod=600 owned.txt /app/
RUN echo "\$GREETING \$APP_HOME \$(pwd)" >/app/run.txt && id -u >/app/runuser.txt
EXPOSE 8080
USER user
RUN ["sh", "-c", "echo step-two >/home/user/two.txt"]
CMD ["sh"]
EOF
build "$P-df" "" --dockerfile "$TMP/ctx/Dockerfile" --build-arg GREETING=hello
check "template --dockerfile: a Dockerfile with every supported instruction builds, EXPOSE noted" \
	"exit $rc; $(show "$TMP/build.out" "$TMP/build.err")" \
	ev '[ $rc = 0 ] && grep -q "line 11: EXPOSE .*ignored" "$TMP/build.err" && ! grep -q ": cached" "$TMP/build.err"'
run "$P-df"
out=$(x "$id" -- sh -c 'cat run.txt runuser.txt hello.txt dir/x; stat -c "%u %a" owned.txt; stat -c %u /home/user/two.txt; echo "$(pwd)|$(id -un)|$APP_HOME|$TWO"; ls dir')
check "template --dockerfile: ARG and ENV, WORKDIR, COPY (--chown, --chmod; .dockerignore honoured), RUN as root then USER, the defaults" \
	"got '$out'; $(show "$TMP/err")" \
	[ "$out" = "hello /app /app
0
hello-file
in-dir
1000 600
1000
/app|user|/app|two words
x" ]
sed -i 's|step-two|step-2|' "$TMP/ctx/Dockerfile"
echo changed-but-ignored >"$TMP/ctx/dir/skip-me"
build "$P-df2" "" --dockerfile "$TMP/ctx/Dockerfile" --build-arg GREETING=hello
check "template --dockerfile: after editing the last RUN (and a file .dockerignore leaves out), the build says the steps before it are cached and reruns only it" \
	"exit $rc; $(show "$TMP/build.err")" \
	ev 'grep -q ": cached$" "$TMP/build.err" && [ $rc = 0 ] && grep -q "RUN.*step-2" "$TMP/build.err" && ! grep -q "line 10, RUN): echo" "$TMP/build.err"'
run "$P-df2"
out=$(x "$id" -- cat /home/user/two.txt /app/run.txt)
check "template --dockerfile: the rebuilt template has the cached steps' files and the new step's" \
	"got '$out'; $(show "$TMP/err")" [ "$out" = "step-2
hello /app /app" ]
# FROM template:NAME keeps the base's Env, WorkingDir and User (its
# defaults file read back); the cache bounded to 0 MiB keeps no step.
printf 'FROM template:%s\nRUN echo "$APP_HOME|$TWO|$(id -un)" >/home/user/from-tpl.txt\n' \
	"$P-df" >"$TMP/ctx/Dockerfile.tpl"
EMBER_BUILD_CACHE_MIB=0 build "$P-tpl" "" --dockerfile "$TMP/ctx/Dockerfile.tpl"
check "template --dockerfile FROM template:NAME builds; EMBER_BUILD_CACHE_MIB=0 empties the cache and says so" \
	"exit $rc; $(ls "$EMBER_STATE_DIR/build-cache"); $(show "$TMP/build.err")" \
	ev '[ $rc = 0 ] && grep -q "build cache: .* least recently used steps removed, 0 MiB kept" "$TMP/build.err" && [ -z "$(ls "$EMBER_STATE_DIR/build-cache" | grep "\.ext4$")" ]'
run "$P-tpl"
out=$(x "$id" -- sh -c 'cat /home/user/from-tpl.txt; echo "$(pwd)|$(id -un)|$APP_HOME|$TWO"')
check "template:NAME as FROM: the base's Env, WorkingDir and User in its RUN and in the new template" \
	"got '$out'; $(show "$TMP/err")" [ "$out" = "/app|two words|user
/app|user|/app|two words" ]
for id in "${IDS[@]}"; do "$E" kill "$id" >/dev/null 2>&1; done
IDS=()
EMBER_BUILD_CACHE_MIB=12x build "$P-tpl2" "" --dockerfile "$TMP/ctx/Dockerfile.tpl"
check "a malformed EMBER_BUILD_CACHE_MIB is refused before the build" \
	"exit $rc; $(show "$TMP/build.err")" \
	ev '[ $rc != 0 ] && grep -q "EMBER_BUILD_CACHE_MIB" "$TMP/build.err" && nothing_left "$P-tpl2"'
"$E" template rm "$P-df" "$P-df2" "$P-tpl" >/dev/null 2>&1

# ---- bad input: one clear error each, nothing left ------------------------
bad() {
	local what=$1 want=$2 name=$P-bad
	shift 2
	timeout "$BOOT_TIMEOUT" "$E" template build "$name" --no-net "$@" \
		>"$TMP/bad.out" 2>"$TMP/bad.err"
	rc=$?
	check "template --from-image: $what is refused, nothing left" \
		"exit $rc; $(show "$TMP/bad.err")" \
		ev '[ $rc = 1 ] && grep -q "$want" "$TMP/bad.err" && [ "$(grep -c "^emberctl:" "$TMP/bad.err")" = 1 ] && nothing_left "$name"'
}
for id in "${IDS[@]}"; do "$E" kill "$id" >/dev/null 2>&1; done
IDS=()
bad "an arm64 image" "linux/arm64" --from-image "$TMP/img/arm"
bad "a layer whose diff_id does not match" "diff_id" --from-image "$TMP/img/bad"
head -c 20000 "$TMP/img/docker.tar" >"$TMP/img/cut.tar"
bad "a truncated docker archive" "cut.tar" --from-image "docker-archive:$TMP/img/cut.tar"
bad "a missing SRC" "No such file or directory" --from-image "$TMP/img/none"

# ---- --if-missing: the old template stays until a new one is built -------
# The same SRC, absolute now (it was built from a relative one): nothing
# to do, no build.
build "$P-oci" "$TMP/img/oci" --if-missing
check "template --if-missing: the SRC given absolute is the one it was built from (relative): no rebuild" \
	"exit $rc; $(show "$TMP/build.out" "$TMP/build.err")" \
	ev '[ $rc = 0 ] && [ "$(cat "$TMP/build.out")" = "$P-oci" ] && [ ! -s "$TMP/build.err" ]'
info_before=$(cat "$T/$P-oci/info" 2>&1)
build "$P-oci" "$TMP/img/bad" --if-missing
check "template --if-missing: a new SRC that fails to build is one error, the old template kept" \
	"exit $rc; $(show "$TMP/build.err")" \
	ev '[ $rc = 1 ] && grep -q "diff_id.*(template $P-oci is kept as it was)" "$TMP/build.err" &&
		[ "$(cat "$T/$P-oci/info" 2>&1)" = "$info_before" ] &&
		[ -z "$(ls -A "$T" | grep -e -rebuild-)" ] && [ "$("$E" ls | wc -l)" = 1 ]'
run "$P-oci"
out=$(x "$id" -- cat /srv/x)
check "template --if-missing: the kept template still makes sandboxes" "got '$out'; $(show "$TMP/err")" \
	[ "$out" = hello ]
python3 tests/integration/mkoci.py layout "$TMP/img/zstd" --zstd --user "" >"$TMP/mk.out" 2>&1
build "$P-oci" "$TMP/img/zstd" --if-missing --no-interp
check "template --if-missing: refused while a sandbox uses the old template, before any build" \
	"exit $rc; $(show "$TMP/build.err")" \
	ev '[ $rc = 1 ] && grep -q "out of date (another rootfs) but in use by 1 sandbox" "$TMP/build.err" &&
		[ "$(cat "$T/$P-oci/info" 2>&1)" = "$info_before" ]'
for id in "${IDS[@]}"; do "$E" kill "$id" >/dev/null 2>&1; done
IDS=()
# A zstd layer (mkoci.py's second one): skopeo recompresses it as gzip
# for umoci 0.4.7, which cannot apply zstd.
build "$P-oci" "$TMP/img/zstd" --if-missing --no-interp
check "template --if-missing: a good new SRC (an OCI layout with a zstd layer) replaces the template" \
	"exit $rc; $(show "$TMP/mk.out" "$TMP/build.err")" \
	ev '[ $rc = 0 ] && grep -q "out of date (another rootfs)" "$TMP/build.err" &&
		grep -q "^rootfs=$TMPR/img/zstd$" "$T/$P-oci/info" && grep -q "^interp=0$" "$T/$P-oci/info" &&
		[ -z "$(ls -A "$T" | grep -e -rebuild-)" ] && [ "$("$E" template ls | grep -c "^$P-oci ")" = 1 ]'
run "$P-oci"
out=$(x "$id" --user root -- sh -c 'ls /lower; cat /opq/new; stat -c "%a" /bin/suid')
check "template --if-missing: the new template's sandbox has the zstd layer's files" \
	"got '$out'; $(show "$TMP/err")" [ "$out" = "stays
new
4755" ]
for id in "${IDS[@]}"; do "$E" kill "$id" >/dev/null 2>&1; done
IDS=()

# ---- the host's disk: a small gzip of a huge tar ---------------------------
# $TMP/img/bomb: the OCI layout with a third layer, a 256 MiB file of
# zeros (a gzip of ~256 KiB).
cp -r "$TMP/img/oci" "$TMP/img/bomb" && python3 - "$TMP/img/bomb" <<'PY'
import gzip, hashlib, io, json, os, sys, tarfile
d = sys.argv[1]
blob = lambda h: os.path.join(d, "blobs", "sha256", h.split(":")[1])
def put(b):
    h = "sha256:" + hashlib.sha256(b).hexdigest()
    with open(blob(h), "wb") as f:
        f.write(b)
    return h, len(b)
size = 256 << 20
ti = tarfile.TarInfo("zeros")
ti.size, ti.mode = size, 0o644
head = ti.tobuf(tarfile.PAX_FORMAT)
raw, gz = hashlib.sha256(), io.BytesIO()
with gzip.GzipFile(fileobj=gz, mode="wb", compresslevel=1, mtime=0) as z:
    def w(b):
        raw.update(b)
        z.write(b)
    w(head)
    chunk = bytes(1 << 20)
    for _ in range(size >> 20):
        w(chunk)
    w(bytes(1024))  # the end of the archive
lh, ll = put(gz.getvalue())
idx = json.load(open(os.path.join(d, "index.json")))
m = json.load(open(blob(idx["manifests"][0]["digest"])))
c = json.load(open(blob(m["config"]["digest"])))
c["rootfs"]["diff_ids"].append("sha256:" + raw.hexdigest())
m["layers"].append({"mediaType": "application/vnd.oci.image.layer.v1.tar+gzip", "digest": lh, "size": ll})
m["config"]["digest"], m["config"]["size"] = put(json.dumps(c).encode())
idx["manifests"][0]["digest"], idx["manifests"][0]["size"] = put(json.dumps(m).encode())
json.dump(idx, open(os.path.join(d, "index.json"), "w"))
PY
rc=$?
check "template --from-image: a layout with a 256 MiB layer of zeros made (a small gzip)" "exit $rc" [ $rc = 0 ]
EMBER_IMAGE_MAX_MIB=64 bad "an image over EMBER_IMAGE_MAX_MIB (a small gzip of a 256 MiB tar)" \
	"bomb needs over 64 MiB unpacked, over EMBER_IMAGE_MAX_MIB=64" --from-image "$TMP/img/bomb"
EMBER_IMAGE_MAX_MIB=6x bad "a bad EMBER_IMAGE_MAX_MIB" "EMBER_IMAGE_MAX_MIB=6x: not a number" \
	--from-image "$TMP/img/oci"
# As root (CI): the state directory on a 200 MiB tmpfs, in a mount
# namespace of our own (nothing outlives the test).  small STATE_MIB
# [env...] -- emberctl args: its output in $TMP/small.err, its left-overs
# (the templates directory's entries) in $TMP/small.left.
small() {
	local size=$1
	shift
	mkdir -p "$TMP/small"
	unshare -m sh -c '
		mount --make-rprivate / && mount -t tmpfs -o size=$1,mode=0700 tmpfs "$2" || exit 9
		d=$2; shift 2
		env EMBER_STATE_DIR="$d" "$@"; rc=$?
		ls -A "$d/templates" >"$d.left" 2>/dev/null; exit $rc' sh "$size" "$TMP/small" "$@" \
		>/dev/null 2>"$TMP/small.err" </dev/null
}
if [ "$(id -u)" = 0 ] && command -v unshare >/dev/null 2>&1 && unshare -m true 2>/dev/null; then
	small 200m timeout 300 "$E" template build "$P-bad" --no-net --from-image "$TMP/img/bomb"
	rc=$?
	check "template --from-image: an image bigger unpacked than the state directory's free space is refused before unpacking, nothing left" \
		"exit $rc; $(show "$TMP/small.err" "$TMP/small.left")" \
		ev '[ $rc = 1 ] && [ "$(grep -c "^emberctl:" "$TMP/small.err")" = 1 ] &&
			grep -Eq "no space left: .*bomb needs over [0-9]+ MiB unpacked, the state directory has [0-9]+ MiB free" "$TMP/small.err" &&
			[ ! -s "$TMP/small.left" ]'
	# A layer's sparse file is not in the sum: a tool that fills the disk
	# is stopped first.  This umoci writes 1 MiB every 10 ms.
	mkdir -p "$TMP/fakebin"
	printf '#!/bin/sh
for a; do d=$a; done
mkdir -p "$d" || exit 1
i=0
while :; do head -c 1048576 /dev/zero >"$d/f$i" || exit 1; i=$((i + 1)); sleep 0.01; done
' \
		>"$TMP/fakebin/umoci"
	chmod +x "$TMP/fakebin/umoci"
	small 100m PATH="$TMP/fakebin:$PATH" timeout 300 "$E" template build "$P-bad" --no-net --from-image "$TMP/img/oci"
	rc=$?
	check "template --from-image: a tool filling the state directory is stopped with 16 MiB left, nothing left" \
		"exit $rc; $(show "$TMP/small.err" "$TMP/small.left")" \
		ev '[ $rc = 1 ] && [ "$(grep -c "^emberctl:" "$TMP/small.err")" = 1 ] &&
			grep -q "applying the layers (umoci unpack): no space left in .*umoci stopped with under 16 MiB left free" "$TMP/small.err" &&
			[ ! -s "$TMP/small.left" ]'
else
	echo "ok - # SKIP template --from-image: the state directory on a small tmpfs needs root and unshare -m"
fi
printf 'FROM %s\nRUN echo failing-output; exit 3\n' "$TMP/img/oci" >"$TMP/ctx/Dockerfile.fail"
bad "a Dockerfile whose RUN fails (its output shown)" "line 2, RUN) failed: exit status 3" \
	--dockerfile "$TMP/ctx/Dockerfile.fail"
check "template --dockerfile: the failing RUN's output was shown" "$(show "$TMP/bad.err")" \
	grep -qx failing-output "$TMP/bad.err"
printf 'RUN true\n' >"$TMP/ctx/Dockerfile.nofrom"
bad "a Dockerfile without FROM" "RUN before FROM" --dockerfile "$TMP/ctx/Dockerfile.nofrom"
printf 'FROM %s\nRUN true\nFROM %s\n' "$TMP/img/oci" "$TMP/img/oci" >"$TMP/ctx/Dockerfile.multi"
bad "a multi-stage Dockerfile" "multi-stage builds are not supported" --dockerfile "$TMP/ctx/Dockerfile.multi"
# The OCI layout $1 copied to $2 with the config's WorkingDir $3 (JSON).
with_workdir() {
	cp -r "$1" "$2" && python3 - "$2" "$3" <<'PY'
import hashlib, json, os, sys
d, wd = sys.argv[1], json.loads(sys.argv[2])
blob = lambda h: os.path.join(d, "blobs", "sha256", h.split(":")[1])
def put(b):
    h = "sha256:" + hashlib.sha256(b).hexdigest()
    open(blob(h), "wb").write(b)
    return h, len(b)
idx = json.load(open(os.path.join(d, "index.json")))
m = json.load(open(blob(idx["manifests"][0]["digest"])))
c = json.load(open(blob(m["config"]["digest"])))
c["config"]["WorkingDir"] = wd
m["config"]["digest"], m["config"]["size"] = put(json.dumps(c).encode())
idx["manifests"][0]["digest"], idx["manifests"][0]["size"] = put(json.dumps(m).encode())
json.dump(idx, open(os.path.join(d, "index.json"), "w"))
PY
}
# A quote or newline in the WorkingDir would be debugfs commands of the
# image's (`dump` writes a host file): refused before debugfs runs.
with_workdir "$TMP/img/oci" "$TMP/img/wd" "\"/a\\ndump /etc/passwd $TMP/pwned\\n/b\"" &&
	bad "a WorkingDir with a newline" "WorkingDir has a quote" --from-image "$TMP/img/wd"
check "template --from-image: the WorkingDir wrote no host file" "$(ls -l "$TMP/pwned" 2>&1)" \
	[ ! -e "$TMP/pwned" ]
rm -rf "$TMP/img/wd"
with_workdir "$TMP/img/oci" "$TMP/img/wd" '"/a\"b"' &&
	bad "a WorkingDir with a quote" "WorkingDir has a quote" --from-image "$TMP/img/wd"
rm -rf "$TMP/img/wd"
# A WorkingDir under /tmp: made on the disk, hidden by the guest's tmpfs;
# ember's init makes it at boot, as a container runtime does.
with_workdir "$TMP/img/oci" "$TMP/img/wd" '"/tmp/app"' &&
	build "$P-wd" "$TMP/img/wd" --no-interp
run "$P-wd"
out=$(x "$id" -- pwd)
check "template --from-image: a WorkingDir under /tmp is there in the sandbox" \
	"exit $rc, got '$out'; $(show "$TMP/build.err" "$TMP/err")" [ "$out" = /tmp/app ]
for id in "${IDS[@]}"; do "$E" kill "$id" >/dev/null 2>&1; done
IDS=()
"$E" template rm "$P-wd" >/dev/null 2>&1
bad "a ready command that never succeeds" "the ready command (false) did not exit 0 within 2 s" \
	--from-image "$TMP/img/oci" --start-cmd 'echo started' --ready-cmd false --ready-timeout 2
timeout 60 "$E" template build "$P-bad" --from-image "$TMP/img/oci" --rootfs "$GUEST/rootfs.ext4" \
	>/dev/null 2>"$TMP/bad.err"
rc=$?
check "template --from-image: with --rootfs is a usage error" "exit $rc; $(show "$TMP/bad.err")" \
	ev '[ $rc = 2 ] && grep -q "exclude each other" "$TMP/bad.err" && nothing_left "$P-bad"'
# Usage errors, before anything is made: an empty SRC, a SRC with a line
# break (the info file has one record a line), an empty start command.
for what in empty newline; do
	a=
	[ $what = newline ] && a=$(printf '%s/img/oci\nuser=root' "$TMP")
	timeout 60 "$E" template build "$P-bad" --from-image "$a" >/dev/null 2>"$TMP/bad.err"
	rc=$?
	check "template --from-image: a SRC $what is a usage error" "exit $rc; $(show "$TMP/bad.err")" \
		ev '[ $rc = 2 ] && grep -q "wants a SRC, without control characters" "$TMP/bad.err" && nothing_left "$P-bad"'
done
# A layout whose blob is /dev/zero: skopeo would read it for its 600 s.
cp -r "$TMP/img/oci" "$TMP/img/zero" && b=$(ls "$TMP/img/zero/blobs/sha256" | head -1) &&
	ln -sf /dev/zero "$TMP/img/zero/blobs/sha256/$b" &&
	bad "a layout whose blob is /dev/zero" "not a regular file" --from-image "$TMP/img/zero"
rm -rf "$TMP/img/zero"
# Over the 512 GiB base a sandbox's overlay takes: refused before the disk
# is made (1 TiB was taken, and refused by the overlay after mkfs).
timeout 60 "$E" template build "$P-bad" --from-image "$TMP/img/oci" --disk-mib 524289 >/dev/null 2>"$TMP/bad.err"
rc=$?
check "template --from-image: --disk-mib over 512 GiB is a usage error" "exit $rc; $(show "$TMP/bad.err")" \
	ev '[ $rc = 2 ] && grep -q "from 1 to 524288" "$TMP/bad.err" && nothing_left "$P-bad"'
timeout 60 "$E" template build "$P-bad" --from-image "$TMP/img/oci" --start-cmd '' >/dev/null 2>"$TMP/bad.err"
rc=$?
check "template --from-image: an empty --start-cmd is a usage error" "exit $rc; $(show "$TMP/bad.err")" \
	ev '[ $rc = 2 ] && grep -q "want a command" "$TMP/bad.err" && nothing_left "$P-bad"'
check "template --from-image: no sanitizer report" "$(show "$TMP/err" "$TMP/build.err")" \
	ev '! grep -qE "AddressSanitizer|runtime error|LeakSanitizer" "$TMP/err" "$TMP/build.err" "$TMP/bad.err"'
exit 0
