#!/usr/bin/env bash
# The code interpreter's structured results without a kernel or a VM:
# guest-init/interp/ember_display.py's DataFrame `data` and matplotlib
# `chart` objects, and its IPython formatters, checked by
# tests/unit/interp_display_test.py under the Python the rootfs copies
# (/usr/bin/python3, with Debian's numpy, pandas, matplotlib, IPython).
set -u
cd "$(dirname "$0")/../.."
. tests/lib.sh

PY=${EMBER_INTERP_PYTHON:-/usr/bin/python3}
if ! "$PY" -c 'import numpy, pandas, matplotlib, IPython' 2>/dev/null; then
	echo "ok - # SKIP $PY lacks numpy/pandas/matplotlib/IPython: interp_display"
	exit 0
fi

out=$(MPLBACKEND=Agg timeout 300 "$PY" tests/unit/interp_display_test.py 2>&1)
rc=$?
printf '%s\n' "$out"
# Failed checks print their own "not ok" lines; a crash prints none.
if [ "$rc" != 0 ] && ! printf '%s\n' "$out" | grep -q '^not ok - '; then
	not_ok "interp_display: the checks ran to the end (exit $rc)" \
		"$(printf '%s\n' "$out" | tail -5)"
fi
