# bench/kvmbox.sh: where a bench script runs.  Sourced by every bench/NAME
# right after `set -eu`, before it changes directory (so that "$0" still
# names the script):
#
#   . "$(dirname "$0")/kvmbox.sh"
#
# Where /dev/kvm works the script goes on here.  Where it is missing or
# unusable (or EMBER_KVMBOX=1) the script is run again, with the same
# arguments and environment, in the KVM box (tests/kvmbox/kvmbox: QEMU TCG
# with nested AMD SVM), and this shell exits with its status.  With
# EMBER_KVMBOX=0 and no usable /dev/kvm it stops with the reason.  In the
# box the script prints first that its absolute times are no hardware
# figures (ratios between VMMs, exit counts and sizes still mean
# something), and `host` reads "KVM box" rather than "hardware KVM".
#
# env: EMBER_KVMBOX (1 forces the box, 0 forbids it), BENCH_KVMBOX_OPTS
#      (words for tests/kvmbox/kvmbox before --, e.g. "--mem 4096 --cpus 2";
#      the box's default RAM is 3/4 of the host's)
# shellcheck shell=bash disable=SC2034 # bench_kvm: for the script that sources this

bench_kvm="hardware KVM"
if [ "${EMBER_IN_KVMBOX:-}" = 1 ]; then
	bench_kvm="KVM box (QEMU TCG, nested SVM)"
	echo "bench: in the KVM box (QEMU TCG, nested SVM): absolute times are not hardware figures"
else
	bench_self=$(basename "$0")
	bench_kvmbox=$(dirname "${BASH_SOURCE[0]}")/../tests/kvmbox/kvmbox
	if ! bench_where=$("$bench_kvmbox" --decide 2>&1); then
		echo "bench/$bench_self: ${bench_where#kvmbox: }: nothing measured" >&2
		exit 1
	fi
	if [ "$bench_where" = box ]; then
		if [ "${EMBER_KVMBOX:-}" = 1 ]; then
			echo "bench/$bench_self: EMBER_KVMBOX=1: running in the KVM box (QEMU TCG, nested SVM)" >&2
		else
			echo "bench/$bench_self: no usable /dev/kvm here: running in the KVM box (QEMU TCG, nested SVM; EMBER_KVMBOX=0 forbids it)" >&2
		fi
		# The system's PATH in the box: everything there runs under TCG,
		# where a shim in front of python3 (pyenv) costs seconds a start.
		# shellcheck disable=SC2086 # BENCH_KVMBOX_OPTS: words
		exec "$bench_kvmbox" ${BENCH_KVMBOX_OPTS:-} -- \
			env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
			bash "$0" "$@"
	fi
	unset bench_self bench_kvmbox bench_where
fi
