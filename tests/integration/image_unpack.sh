#!/usr/bin/env bash
# The checks are eval'd in check(): single quotes on purpose.
# shellcheck disable=SC2016
# The image unpacker (api/sandbox/image*.c, issue 22 step a) on this
# host, without a VM, through build/test/image-unpack: each SRC form (an
# OCI layout with and without :tag, an OCI archive, a docker save
# archive, a root directory, an ext4 image grown to a size) made into an
# ext4 disk, whose contents are checked with debugfs (no mount):
# whiteouts, opaque directories, hard links, device nodes, FIFOs, xattrs,
# setuid, owners, long names; and the image config's run defaults.  The
# images are built here, offline: tests/integration/mkoci.py by hand, and
# one with umoci init/new/insert from a directory with busybox-static.
# Then each bad input fails with one line and leaves nothing behind.
set -u
cd "$(dirname "$0")/../.." || exit 1
. tests/lib.sh

U=${EMBER_IMAGE_UNPACK:-build/test/image-unpack}
for t in skopeo umoci mkfs.ext4 debugfs e2fsck resize2fs; do
	if ! command -v "$t" >/dev/null 2>&1; then
		echo "ok - # SKIP no $t (tests/install-deps.sh): image unpack tests"
		exit 0
	fi
done
[ -x "$U" ] || { not_ok "image-unpack built" "$U missing (make asan)"; exit 0; }
[ -x /bin/busybox ] || { echo "ok - # SKIP no busybox-static: image unpack tests"; exit 0; }
root=0
[ "$(id -u)" = 0 ] && root=1
W=$TMP/work

# dbg IMAGE CMD: debugfs's answer, without its banner.
dbg() { debugfs -R "$2" "$1" 2>/dev/null; }

# unpack NAME SRC [DISK_MIB]: SRC into $TMP/NAME.ext4 and NAME.json.
unpack() {
	local name=$1 src=$2 out
	shift 2
	if out=$("$U" "$src" "$W" "$TMP/$name.ext4" "$TMP/$name.json" "$@" 2>&1) &&
		[ ! -e "$W" ] && [ -s "$TMP/$name.ext4" ]; then
		ok "unpack $name"
		return 0
	fi
	not_ok "unpack $name" "$out" "work dir left: $([ -e "$W" ] && echo yes || echo no)"
	rm -rf "$W"
	return 1
}

# contents NAME: the mkoci.py image's files in $TMP/NAME.ext4.
contents() {
	local img=$TMP/$1.ext4 n=$1 s
	check "$n: fsck clean" "e2fsck -fn failed" e2fsck -fn "$img" >/dev/null 2>&1
	s=$(dbg "$img" "ls /lower")
	check "$n: whiteout removes the lower file" "$s" \
		eval '[[ $s == *stays* && $s != *gone* && $s != *.wh.* ]]'
	s=$(dbg "$img" "ls /opq")
	check "$n: opaque dir hides the lower files" "$s" \
		eval '[[ $s == *new* && $s != *old* && $s != *.wh.* ]]'
	s=$(dbg "$img" "ls -l /hl")
	check "$n: hard link is one inode, 2 links" "$s" \
		eval '[ "$(echo "$s" | awk '\''$NF=="a"||$NF=="b"{print $1}'\'' | sort -u | wc -l)" = 1 ] &&
			dbg "$img" "stat /hl/a" | grep -q "Links: 2"'
	s=$(dbg "$img" "stat /bin/suid")
	check "$n: setuid kept" "$s" eval '[[ $s == *"Mode:  04755"* ]]'
	s=$(dbg "$img" "ea_list /x")
	check "$n: user xattr kept" "$s" eval '[[ $s == *'\''user.k (1) = "v"'\''* ]]'
	s=$(dbg "$img" "stat /$(printf 'd%.0s' {1..200})/$(printf 'd%.0s' {1..200})")
	check "$n: 200-byte names" "$s" eval '[[ $s == *"Type: directory"* ]]'
	s=$(python3 -c 'print("/" + "/".join(["d" * 200] * 18) + "/" + "f" * 200)')
	s=$(dbg "$img" "cat $s")
	check "$n: file at a ~3800-byte path" "$s" eval '[ "$s" = long ]'
	s=$(dbg "$img" "stat /home/u/f")
	check "$n: owner 1000:1000 kept" "$s" \
		eval '[[ $s == *"User:  1000   Group:  1000"* ]]'
	s=$(dbg "$img" "stat /etc/passwd")
	check "$n: other files are root's" "$s" \
		eval '[[ $s == *"User:     0   Group:     0"* ]]'
	s=$(dbg "$img" "ea_list /home/u/f")
	check "$n: no user.rootlesscontainers xattr" "$s" \
		eval '[[ $s != *rootlesscontainers* ]]'
	s=$(dbg "$img" "stat /fifo")
	check "$n: FIFO" "$s" eval '[[ $s == *"Type: FIFO"* ]]'
	s=$(dbg "$img" "stat /dev/null2")
	check "$n: char device 1:3" "$s" \
		eval '[[ $s == *"Type: character special"* && $s == *"number: 01:03"* ]]'
	s=$(dbg "$img" "ea_list /bin/cap")
	check "$n: security.capability kept" "$s" \
		eval '[[ $s == *"security.capability (20)"* ]]'
}

# config NAME CMD: the run defaults in $TMP/NAME.json.
config() {
	local j=$TMP/$1.json
	check "$1: run defaults" "$(cat "$j" 2>&1)" python3 - "$j" "$2" <<'EOF'
import json, sys
c = json.load(open(sys.argv[1]))
assert c["env"] == ["PATH=/bin", "FOO=bar baz"], c
assert c["workdir"] == "/srv" and c["user"] == "1000:1000", c
assert c["entrypoint"] == ["/bin/sh", "-c"], c
assert c["cmd"] == ["echo", sys.argv[2]], c
assert c["digest"].startswith("sha256:") and len(c["digest"]) == 71, c
EOF
}

# --- each SRC form --------------------------------------------------------
python3 tests/integration/mkoci.py layout "$TMP/one" &&
	python3 tests/integration/mkoci.py layout "$TMP/two" --tag a --tag b &&
	python3 tests/integration/mkoci.py docker "$TMP/docker.tar" &&
	python3 tests/integration/mkoci.py layout "$TMP/arm" --arch arm64 &&
	python3 tests/integration/mkoci.py docker "$TMP/arm.tar" --arch arm64 &&
	tar -C "$TMP/one" -cf "$TMP/oci.tar" . ||
	{ not_ok "mkoci.py" "could not build the test images"; exit 0; }
ok "test images built (mkoci.py)"

# As non-root, unpacking is rootless: owners, devices and security
# xattrs come back through debugfs (image_disk.c); the same checks.
unpack layout "$TMP/one" && { contents layout; config layout "image 0"; }
unpack layout-tag "$TMP/two:b" && config layout-tag "image 1"
unpack oci-archive "$TMP/oci.tar" && { contents oci-archive; config oci-archive "image 0"; }
unpack docker-archive "$TMP/docker.tar" &&
	{ contents docker-archive; config docker-archive docker; }
unpack prefixed "oci:$TMP/two:a" && config prefixed "image 0"
# Colons in the path: skopeo splits references at them.
cp "$TMP/docker.tar" "$TMP/a:b.tar" && cp -r "$TMP/two" "$TMP/t:w"
unpack colon-archive "$TMP/a:b.tar" && config colon-archive docker
unpack colon-layout "$TMP/t:w:b" && config colon-layout "image 1"

# umoci's own image from a directory.
mkdir -p "$TMP/tree/bin" "$TMP/tree/etc" &&
	cp /bin/busybox "$TMP/tree/bin/" && ln -s busybox "$TMP/tree/bin/sh" &&
	echo hello >"$TMP/tree/etc/motd"
if (umoci init --layout "$TMP/umoci" && umoci new --image "$TMP/umoci:t" &&
	umoci insert --image "$TMP/umoci:t" "$TMP/tree" / &&
	umoci config --image "$TMP/umoci:t" --config.env X=1 \
		--config.workingdir /etc --config.cmd /bin/sh) >"$TMP/umoci.log" 2>&1; then
	if unpack umoci "$TMP/umoci:t"; then
		s=$(dbg "$TMP/umoci.ext4" "cat /etc/motd")
		check "umoci: file" "$s" eval '[ "$s" = hello ]'
		check "umoci: run defaults" "$(cat "$TMP/umoci.json")" python3 -c '
import json, sys
c = json.load(open(sys.argv[1]))
assert "X=1" in c["env"] and c["workdir"] == "/etc" and c["cmd"] == ["/bin/sh"], c
' "$TMP/umoci.json"
	fi
else
	not_ok "umoci image built" "$(tail -3 "$TMP/umoci.log")"
fi

# As non-root (umoci unpack --rootless, then owners, devices and
# security xattrs through debugfs),
# the same layout and docker archive: as root, under setpriv as nobody.
if [ $root = 1 ] && command -v setpriv >/dev/null 2>&1; then
	nr=$TMP/nonroot
	mkdir -p "$nr" && cp -r "$TMP/one" "$nr/one" && cp "$TMP/docker.tar" "$nr/" &&
		chown -R 65534:65534 "$nr" && chmod 755 "$TMP"
	cp -r "$TMP/tree" "$nr/tree" && chown -R 65534:65534 "$nr/tree"
	for f in one docker.tar; do
		if out=$(HOME=$nr setpriv --reuid 65534 --regid 65534 --clear-groups \
			"$U" "$nr/$f" "$nr/work" "$nr/$f.ext4" "$nr/$f.json" 2>&1) &&
			[ ! -e "$nr/work" ] && mv "$nr/$f.ext4" "$TMP/nonroot-$f.ext4"; then
			ok "unpack as non-root: $f"
			contents "nonroot-$f"
		else
			not_ok "unpack as non-root: $f" "$out"
		fi
	done
	out=$(HOME=$nr setpriv --reuid 65534 --regid 65534 --clear-groups \
		"$U" "$nr/tree" "$nr/work" "$nr/tree.ext4" "$nr/tree.json" 2>&1)
	s=$(dbg "$nr/tree.ext4" "stat /etc/motd")
	check "non-root root directory: files are root's" "$out $s" \
		eval '[[ $s == *"User:     0   Group:     0"* ]]'
	rm -f "$nr/tree.ext4"
	left=$(find "$nr" -mindepth 1 -maxdepth 1 ! -name one ! -name docker.tar ! -name tree ! -name '*.json')
	check "non-root: nothing left in HOME or the work dir" "$left" eval '[ -z "$left" ]'
fi

# A root directory, and an ext4 image grown to 300 MiB.
unpack rootdir "$TMP/tree" && {
	s=$(dbg "$TMP/rootdir.ext4" "cat /etc/motd")
	check "rootdir: file" "$s" eval '[ "$s" = hello ]'
	check "rootdir: no run defaults" "$(cat "$TMP/rootdir.json")" \
		grep -q '"env": \[\]' "$TMP/rootdir.json"
}
if [ -s "$TMP/rootdir.ext4" ] && unpack ext4 "$TMP/rootdir.ext4" 300; then
	b=$(dumpe2fs -h "$TMP/ext4.ext4" 2>/dev/null | awk -F: '/^Block count/{print $2+0}')
	bs=$(dumpe2fs -h "$TMP/ext4.ext4" 2>/dev/null | awk -F: '/^Block size/{print $2+0}')
	check "ext4: grown to 300 MiB" "blocks $b of $bs" \
		eval '[ "$((b * bs))" = "$((300 << 20))" ]'
	s=$(dbg "$TMP/ext4.ext4" "cat /etc/motd")
	check "ext4: file" "$s" eval '[ "$s" = hello ]'
fi

# --- bad input: one line, nothing left -------------------------------------
# bad NAME WANT SRC: fails, its one line matches WANT (grep -Ei), and
# neither the work dir nor the disk (nor its .tmp) is left.
bad() {
	local name=$1 want=$2 src=$3 out rc
	out=$("$U" "$src" "$W" "$TMP/bad.ext4" "$TMP/bad.json" 2>&1)
	rc=$?
	if [ $rc = 1 ] && [ "$(printf '%s\n' "$out" | wc -l)" = 1 ] &&
		printf '%s' "$out" | grep -Eiq "$want" &&
		[ ! -e "$W" ] && [ ! -e "$TMP/bad.ext4" ] && [ ! -e "$TMP/bad.ext4.tmp" ]; then
		ok "bad input: $name"
	else
		not_ok "bad input: $name" "exit $rc: $out" \
			"left: $(ls -d "$W" "$TMP"/bad.* 2>/dev/null | tr '\n' ' ')"
	fi
	rm -rf "$W" "$TMP"/bad.*
}

bad "missing file" "No such file" "$TMP/nothing.tar"
head -c 12345 /dev/urandom >"$TMP/random.bin"
bad "not an image" "not an image" "$TMP/random.bin"
head -c $(($(stat -c %s "$TMP/oci.tar") / 2)) "$TMP/oci.tar" >"$TMP/trunc.tar"
bad "truncated OCI archive" "skopeo|truncat|EOF|not an image" "$TMP/trunc.tar"
head -c $(($(stat -c %s "$TMP/docker.tar") / 2)) "$TMP/docker.tar" >"$TMP/dtrunc.tar"
bad "truncated docker archive" "skopeo|truncat|EOF|not an image" "$TMP/dtrunc.tar"
bad "arm64 layout" "linux/arm64.*amd64" "$TMP/arm"
bad "arm64 docker archive" "linux/arm64.*amd64" "$TMP/arm.tar"
bad "missing :tag" "tag|reference|descriptor" "$TMP/two:nope"
bad "several images, no :tag" "more than one image" "$TMP/two"

# One byte flipped in a layer: the layout's gzip layer (skopeo or the
# digest check), and the docker archive's layer.tar (no digest but the
# config's diff_id).
flip() { # FILE OFFSET: the byte at OFFSET xor 0xff
	python3 -c '
import sys
p, o = sys.argv[1], int(sys.argv[2])
b = bytearray(open(p, "rb").read()); b[o] ^= 0xff; open(p, "wb").write(b)' "$@"
}
cp -r "$TMP/one" "$TMP/flip"
big=$(ls -S "$TMP/flip/blobs/sha256" | head -1)
chmod u+w "$TMP/flip/blobs/sha256/$big"
flip "$TMP/flip/blobs/sha256/$big" 5000
bad "byte flipped in a layout's layer" "digest|gzip|diff_id|checksum" "$TMP/flip"
mkdir "$TMP/dflip" && tar -C "$TMP/dflip" -xf "$TMP/docker.tar" &&
	lt=$(ls -S "$TMP"/dflip/*/layer.tar | head -1) &&
	flip "$lt" 700 && tar -C "$TMP/dflip" -cf "$TMP/dflip.tar" . &&
	bad "byte flipped in a docker archive's layer" "digest|diff_id" "$TMP/dflip.tar"
# zstd layers: umoci 0.4.7 cannot apply them; skopeo's copy recompresses
# them as gzip (--dest-compress-format gzip), and they come through.
if command -v zstd >/dev/null 2>&1; then
	python3 tests/integration/mkoci.py layout "$TMP/zstd" --zstd &&
		unpack zstd "$TMP/zstd" && contents zstd
else
	echo "ok - # SKIP a zstd layer: no zstd command"
fi
head -c $(($(stat -c %s "$TMP/rootdir.ext4") / 2)) "$TMP/rootdir.ext4" >"$TMP/half.ext4" 2>/dev/null &&
	bad "truncated ext4" "truncated" "$TMP/half.ext4"

# ember's own checks (image_oci__check), which skopeo's would otherwise
# answer first: a flipped byte, a wrong diff_id with every digest right, a
# missing blob.
# badcheck NAME WANT DIR [TAG]
badcheck() {
	local name=$1 want=$2 out rc
	shift 2
	out=$("$U" --check "$1" "$TMP/bad.json" "${@:2}" 2>&1)
	rc=$?
	if [ $rc = 1 ] && [ "$(printf '%s\n' "$out" | wc -l)" = 1 ] &&
		printf '%s' "$out" | grep -Eiq "$want"; then
		ok "own check: $name"
	else
		not_ok "own check: $name" "exit $rc: $out"
	fi
	rm -f "$TMP/bad.json"
}
check "own check: a good layout passes" "$("$U" --check "$TMP/one" "$TMP/chk.json" 2>&1)" \
	"$U" --check "$TMP/one" "$TMP/chk.json"
badcheck "byte flipped in a gzip layer" "digest mismatch" "$TMP/flip"
python3 tests/integration/mkoci.py layout "$TMP/baddiff" --bad-diff-id &&
	badcheck "wrong diff_id" "layer 1 .*diff_id mismatch" "$TMP/baddiff"
badcheck "several images, no tag" "holds 2 images" "$TMP/two"
badcheck "missing tag" "no image tagged" "$TMP/two" nope
badcheck "arm64" "linux/arm64" "$TMP/arm"
cp -r "$TMP/one" "$TMP/noblob" && rm -f "$TMP/noblob/blobs/sha256/$big"
badcheck "missing blob" "No such file" "$TMP/noblob"

# A full disk: the work dir and the disk on a small tmpfs (root only, in a
# mount namespace of its own, so that no mount outlives the test): 3 MiB
# for both fills while unpacking; 1 MiB for the disk alone fills while
# mkfs copies busybox.  full NAME SIZE WORK_DIR WANT
full() {
	local out rc
	rm -rf "$TMP/small" && mkdir -p "$TMP/small"
	out=$(unshare -m sh -c '
		mount --make-rprivate / && mount -t tmpfs -o size=$2 tmpfs "$1" || exit 9
		shift 2; d=$1; shift
		"$@"; rc=$?
		echo "left: $(ls -A "$d")"; exit $rc' sh "$TMP/small" "$2" "$TMP/small" \
		"$U" "$TMP/docker.tar" "$3" "$TMP/small/d.ext4" \
		"$TMP/d.json" 2>&1 </dev/null)
	rc=$?
	if [ $rc = 1 ] && [[ $out == *"image-unpack: "* ]] && [[ $out == *"left: " ]] &&
		[ ! -e "$3" ] && printf '%s' "$out" | grep -qi "$4" &&
		[ "$(printf '%s\n' "$out" | wc -l)" = 2 ]; then
		ok "bad input: a full disk ($1)"
	else
		not_ok "bad input: a full disk ($1)" "exit $rc: $out"
	fi
}
if [ $root = 1 ] && command -v unshare >/dev/null 2>&1 &&
	unshare -m true 2>/dev/null; then
	full "while unpacking" 3m "$TMP/small/work" "no space left"
	full "while making the disk" 1m "$W" "no space left"
else
	echo "ok - # SKIP a full disk: needs root and unshare -m"
fi

# A stop (SIGTERM, through image_opts.stop_fd) while a tool runs: the
# tool's process group is killed, one line, nothing left.  The tool is a
# fake skopeo that sleeps, with a child of its own.
mkdir -p "$TMP/fakebin"
printf '#!/bin/sh\nsleep 60 &\necho $! >"%s"\necho $$ >>"%s"\nwait\n' \
	"$TMP/fake.pids" "$TMP/fake.pids" >"$TMP/fakebin/skopeo"
chmod +x "$TMP/fakebin/skopeo"
PATH=$TMP/fakebin:$PATH "$U" "$TMP/one" "$W" "$TMP/bad.ext4" "$TMP/bad.json" \
	>"$TMP/stop.out" 2>&1 &
up=$!
for _ in $(seq 100); do
	[ "$(wc -l 2>/dev/null <"$TMP/fake.pids")" = 2 ] && break
	sleep 0.05
done
kill -TERM "$up"
wait "$up"
rc=$?
alive=
# A killed process whose parent died may stay a zombie here: dead.
for p in $(cat "$TMP/fake.pids" 2>/dev/null); do
	st=$(ps -o stat= -p "$p" 2>/dev/null)
	[ -n "$st" ] && [ "${st#Z}" = "$st" ] && alive="$alive $p"
done
if [ $rc = 1 ] && grep -q "stopped" "$TMP/stop.out" && [ -z "$alive" ] &&
	[ -s "$TMP/fake.pids" ] && [ ! -e "$W" ] && [ ! -e "$TMP/bad.ext4.tmp" ]; then
	ok "a stop kills the tool and leaves nothing"
else
	not_ok "a stop kills the tool and leaves nothing" \
		"exit $rc: $(cat "$TMP/stop.out")" \
		"alive:$alive; work left: $([ -e "$W" ] && echo yes || echo no)"
	for p in $alive; do kill "$p"; done
fi
