#!/usr/bin/env bash
# emberctl run-code and context against the code interpreter in a real
# guest (guest-init/interp/, INTERP.md): the template "default" is built
# with the interpreter warm (one boot plus the interpreter's start, ~2-3
# minutes where guest kernel mode is emulated) in $SHARED_STATE_DIR when
# tests/run.sh gives one (mcp.sh then reuses it), else in $TMP.  Then, in
# a sandbox restored from it: values, state kept between calls, pandas,
# a chart saved as a PNG file, a JPEG and an SVG saved, markdown, a
# DataFrame's data, %time, errors and their exit status, a timeout
# that leaves the context usable, JavaScript, contexts, --json, code on
# stdin, bad usage; at the end no process of the test is left.
set -u
cd "$(dirname "$0")/../.."
. tests/lib.sh

: "${EMBERCTL:=build/emberctl-asan}"
BOOT_TIMEOUT=${BOOT_TIMEOUT:-600}
export EMBER_STATE_DIR=${SHARED_STATE_DIR:-$TMP/state}
export EMBER_SUPERVISOR_LOG=$TMP/supervisor.log
E=$EMBERCTL

need_kvm "run-code in a guest"
if [ ! -x "$E" ] || [ ! -x "$EMBER" ]; then
	not_ok "run-code: $E and $EMBER are built" "make all asan"
	exit 0
fi
export EMBER_BIN=$PWD/$EMBER EMBER_KERNEL=$PWD/$GUEST/vmlinux EMBER_ROOTFS=$PWD/$GUEST/rootfs.ext4

id=
cleanup() {
	[ -z "$id" ] || "$E" kill "$id" >/dev/null 2>&1
	rm -rf "$TMP"
}
trap cleanup EXIT
show() { for f in "$@"; do echo "#   $f:"; sed 's/^/#     /' "$f" | tail -15; done; }
ev() { eval "$*"; }
now_ms() { echo $(($(date +%s%N) / 1000000)); }
# rc ARGS...: run-code in $id, stdout in $TMP/o, stderr in $TMP/e, status in $rc.
rc=0
code() {
	"$E" run-code "$@" >"$TMP/o" 2>"$TMP/e"
	rc=$?
}
got() { echo "exit $rc; stdout: $(head -c 300 "$TMP/o"); stderr: $(tail -c 300 "$TMP/e")"; }

t0=$(now_ms)
timeout "$BOOT_TIMEOUT" "$E" template build default --if-missing --boot-timeout "$BOOT_TIMEOUT" \
	>"$TMP/build.out" 2>"$TMP/build.err"
brc=$?
check "template default (interpreter warm) is there ($(($(now_ms) - t0)) ms)" \
	"exit $brc; $(show "$TMP/build.err")" [ $brc = 0 ]
id=$("$E" run --template default 2>"$TMP/run.err")
check "a sandbox restored from it" "$(show "$TMP/run.err")" [ -n "$id" ]
[ -n "$id" ] || exit 0

t0=$(now_ms)
code "$id" '1+1'
check "run-code 1+1 prints 2 ($(($(now_ms) - t0)) ms, the interpreter already warm)" "$(got)" \
	ev '[ $rc = 0 ] && [ "$(cat "$TMP/o")" = 2 ]'
code "$id" 'x = 1'
code "$id" 'x += 1; x'
check "state is kept between calls: x = 1, then x += 1; x gives 2" "$(got)" \
	ev '[ $rc = 0 ] && [ "$(cat "$TMP/o")" = 2 ]'
code "$id" 'print("out"); import sys; print("err", file=sys.stderr); 7'
check "stdout and stderr are streamed apart, then the value" "$(got)" \
	ev '[ $rc = 0 ] && [ "$(cat "$TMP/o")" = "out
7" ] && [ "$(cat "$TMP/e")" = err ]'
code "$id" 'import pandas as pd
df = pd.DataFrame({"a": [1, 2, 3], "b": [10, 20, 30]})
int((df.a * df.b).sum())'
check "a pandas computation" "$(got)" ev '[ $rc = 0 ] && [ "$(cat "$TMP/o")" = 140 ]'
mkdir -p "$TMP/img"
code --image-dir "$TMP/img" "$id" 'import matplotlib.pyplot as plt
plt.plot([1, 2, 3], [1, 4, 9]); plt.title("squares")'
png=$TMP/img/$id-1.png
check "a matplotlib chart is saved as a PNG file, named on stdout" "$(got); $(ls -la "$TMP/img")" \
	ev '[ $rc = 0 ] && grep -q "^image: $png" "$TMP/o" && [ "$(head -c 8 "$png" | od -An -tx1 | tr -d " ")" = 89504e470d0a1a0a ]'
# Rich results (protocol version 2), each check on its own: a JPEG and an
# SVG saved like PNGs, markdown printed, --json with a DataFrame's data,
# IPython's %time.
code "$id" 'import importlib.util; print(importlib.util.find_spec("PIL") is not None)'
if [ $rc = 0 ] && [ "$(cat "$TMP/o")" = False ]; then
	echo "ok - # SKIP run-code saves a JPEG: no Pillow in the guest (matplotlib writes JPEG through it)"
else
	mkdir -p "$TMP/jpg"
	code --image-dir "$TMP/jpg" "$id" 'import io
import matplotlib.pyplot as plt
from IPython.display import Image, display
fig = plt.figure(); plt.plot([1, 3, 2]); buf = io.BytesIO(); fig.savefig(buf, format="jpg"); plt.close(fig)
display(Image(data=buf.getvalue(), format="jpeg"))'
	jpg=$TMP/jpg/$id-1.jpg
	check "display(Image(JPEG bytes)) is saved as ID-1.jpg, named on stdout" "$(got); $(ls -la "$TMP/jpg")" \
		ev '[ $rc = 0 ] && grep -q "^image: $jpg" "$TMP/o" && [ "$(head -c 3 "$jpg" | od -An -tx1 | tr -d " ")" = ffd8ff ]'
fi
mkdir -p "$TMP/svg"
code --image-dir "$TMP/svg" "$id" 'from IPython.display import SVG, display
display(SVG("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"8\" height=\"8\"><rect width=\"8\" height=\"8\"/></svg>"))'
svg=$TMP/svg/$id-1.svg
check "display(SVG(...)) is saved as ID-1.svg, named on stdout (its text repr not printed)" "$(got); $(ls -la "$TMP/svg")" \
	ev '[ $rc = 0 ] && grep -q "^image: $svg" "$TMP/o" && grep -q "<rect" "$svg" && ! grep -q "display.SVG object" "$TMP/o"'
code "$id" 'from IPython.display import Markdown, display
display(Markdown("# A title"))'
check "display(Markdown(...)) prints the markdown, not the object's repr" "$(got)" \
	ev '[ $rc = 0 ] && [ "$(cat "$TMP/o")" = "# A title" ]'
code --json "$id" 'import pandas as pd; pd.DataFrame({"a": [1, 2, 3]})'
check "--json: a DataFrame's result has text, html and data" "$(got)" \
	ev '[ $rc = 0 ] && python3 -c "
import json, sys
r = json.load(open(sys.argv[1]))[\"results\"]
assert len(r) == 1 and r[0][\"is_main_result\"], r
assert r[0][\"data\"] == {\"a\": [1, 2, 3]}, r
assert \"<table\" in r[0][\"html\"] and r[0][\"text\"], r" "$TMP/o"'
code "$id" '%time 1+1'
check "%time 1+1 prints its timing (Wall time), then the value" "$(got)" \
	ev '[ $rc = 0 ] && grep -q "Wall time" "$TMP/o" && [ "$(tail -n 1 "$TMP/o")" = 2 ]'
code "$id" '1/0'
check "an exception: exit 1, its traceback on stderr" "$(got)" \
	ev '[ $rc = 1 ] && grep -q "^ZeroDivisionError: division by zero" "$TMP/e" && grep -q Traceback "$TMP/e"'
t0=$(now_ms)
code --timeout 2 "$id" 'while True: pass'
took=$(($(now_ms) - t0))
check "a runaway loop is interrupted at its timeout: exit 124 ($took ms)" "$(got)" \
	ev '[ $rc = 124 ] && [ $took -lt 30000 ]'
code "$id" 'x'
check "... and the context still works, its state kept" "$(got)" \
	ev '[ $rc = 0 ] && [ "$(cat "$TMP/o")" = 2 ]'
code --language javascript "$id" 'let n = 20; n + 1'
code --language javascript "$id" 'n * 2'
check "JavaScript keeps its state too" "$(got)" ev '[ $rc = 0 ] && [ "$(cat "$TMP/o")" = 40 ]'
code --language javascript "$id" 'null.x'
check "a JavaScript error: exit 1, TypeError on stderr" "$(got)" \
	ev '[ $rc = 1 ] && grep -q TypeError "$TMP/e"'
ctx=$("$E" context create "$id" 2>"$TMP/cc.err")
code --context "$ctx" "$id" 'x'
check "a new context has its own state (x is not defined there)" "ctx=$ctx; $(got)" \
	ev '[ -n "$ctx" ] && [ $rc = 1 ] && grep -q NameError "$TMP/e"'
"$E" context ls "$id" >"$TMP/cl" 2>&1
check "context ls lists python, javascript and the new one" "$(cat "$TMP/cl")" \
	ev 'grep -q "^python " "$TMP/cl" && grep -q "^javascript " "$TMP/cl" && grep -q "^$ctx " "$TMP/cl"'
code --context "$ctx" "$id" 'y = 5'
"$E" context restart "$id" "$ctx" >/dev/null 2>&1
code --context "$ctx" "$id" 'y'
check "context restart forgets its state" "$(got)" ev '[ $rc = 1 ] && grep -q NameError "$TMP/e"'
"$E" context rm "$id" "$ctx" >/dev/null 2>&1
code --context "$ctx" "$id" '1'
check "a removed context is unknown: exit 125, saying so" "$(got)" \
	ev '[ $rc = 125 ] && grep -q "$ctx" "$TMP/e"'
# Users (INTERP.md "Users"): ember's Debian template defaults to root.
code "$id" 'import os; print(os.getuid(), os.getcwd())'
check "run-code runs as the template's default user (root here)" "$(got)" \
	ev '[ $rc = 0 ] && [ "$(cat "$TMP/o")" = "0 /home/user" ]'
code --user user "$id" 'import os; v = 7; print(os.getuid(), os.getcwd(), os.environ["HOME"])'
check "run-code --user user: uid 1000 in its home" "$(got)" \
	ev '[ $rc = 0 ] && [ "$(cat "$TMP/o")" = "1000 /home/user /home/user" ]'
code --user user "$id" 'v + 1'
check "... in a context of its own that keeps its state" "$(got)" \
	ev '[ $rc = 0 ] && [ "$(cat "$TMP/o")" = 8 ]'
code --user user --language javascript "$id" 'process.getuid()'
check "run-code --user user --language javascript: uid 1000" "$(got)" \
	ev '[ $rc = 0 ] && [ "$(cat "$TMP/o")" = 1000 ]'
code --user user "$id" 'open("/root/x", "w")'
check "... and user cannot write root's files (PermissionError)" "$(got)" \
	ev '[ $rc = 1 ] && grep -q PermissionError "$TMP/e"'
code --user nosuch "$id" '1'
check "run-code --user of a user the guest lacks: 125, naming it" "$(got)" \
	ev '[ $rc = 125 ] && grep -q "no user .nosuch." "$TMP/e"'
uctx=$("$E" context create "$id" --user user 2>"$TMP/cc.err")
"$E" context ls "$id" >"$TMP/cl" 2>&1
check "context create --user user: listed with its user" "$(cat "$TMP/cl") $(cat "$TMP/cc.err")" \
	ev '[ -n "$uctx" ] && grep -Eq "^$uctx +python +user " "$TMP/cl" && grep -Eq "^python:user +python +user " "$TMP/cl" && grep -Eq "^python +python +root " "$TMP/cl"'
code --json "$id" 'print("hi"); 3'
check "--json prints the execution" "$(got)" \
	ev '[ $rc = 0 ] && python3 -c "
import json, sys
x = json.load(open(sys.argv[1]))
assert x[\"stdout\"] == \"hi\n\" and x[\"error\"] is None, x
assert x[\"results\"] == [{\"is_main_result\": True, \"text\": \"3\"}], x
assert x[\"execution_count\"] > 0, x" "$TMP/o"'
echo 'print(sum(range(10)))' | "$E" run-code "$id" - >"$TMP/o" 2>"$TMP/e"
rc=$?
check "code from stdin (-)" "$(got)" ev '[ $rc = 0 ] && [ "$(cat "$TMP/o")" = 45 ]'
code --language cobol "$id" '1'
check "an unknown language is bad usage (2)" "$(got)" ev '[ $rc = 2 ]'
code 0123456789ab '1'
check "an unknown sandbox: 125, one line" "$(got)" \
	ev '[ $rc = 125 ] && grep -qx "emberctl: no sandbox 0123456789ab" "$TMP/e"'
"$E" kill "$id" >/dev/null 2>&1
gone=$id
id=
check "killed: nothing of the sandbox is left" "" ev '[ ! -e "$EMBER_STATE_DIR/$gone" ] && ! pgrep -f "$EMBER_STATE_DIR/$gone" >/dev/null'
check "no sanitizer report from emberctl" "$(show "$TMP/e")" \
	ev '! grep -qE "AddressSanitizer|runtime error|LeakSanitizer" "$TMP"/*.err "$TMP/e"'
