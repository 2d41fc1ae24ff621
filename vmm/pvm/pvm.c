// SPDX-License-Identifier: Apache-2.0
/* The PVM kernel arguments (see pvm.h; the detection is detect.c). */
#include "pvm.h"

#include <stdio.h>
#include <unistd.h>

#include "../log.h"

int pvm__cmdline(struct cmdline *c, unsigned int nr_vcpus, uint32_t tsc_khz)
{
	char khz[32];
	int ret;

	/* kvm-clock livelocks in the tick path on this host (PLATFORM.md). */
	ret = cmdline__add_default(c, "no-kvmclock", NULL);
	/*
	 * Without it the guest's TSC calibration fails under emulation; the
	 * host's real rate keeps guest time at the real speed.
	 */
	if (!ret && tsc_khz) {
		snprintf(khz, sizeof(khz), "%u", tsc_khz);
		ret = cmdline__add_default(c, "tsc_early_khz", khz);
	}
	/*
	 * KVM_SET_CPUID2 reaches only a few bits here: hide what the
	 * emulator cannot run by the kernel's own feature bits (cpufeatures.h
	 * numbering): 141 cx16 (cmpxchg16b), 151 popcnt, 308 smap (clac/stac),
	 * 321-323 xsavec/xgetbv1/xsaves, so the kernel keeps the standard
	 * XSAVE layout whose instructions ember emulates.  And what it runs
	 * slowly: with 297 erms and 580 fsrm the kernel's memset, memcpy and
	 * clear_page use `rep stosb`/`movsb`, which the emulator steps a byte
	 * at a time; without them `rep stosq`/`movsq`, 8 bytes a step: the
	 * boot takes 16 % less (8.6 s -> 7.3 s at 128 MiB), and every page
	 * the guest kernel clears for user space costs less.
	 */
	if (!ret)
		ret = cmdline__add_default(c, "clearcpuid",
					   "141,151,297,308,321,322,323,580");
	/*
	 * The guest's TSC is the host's here (no offsetting), so across a
	 * pause or a restore its time jumps by the time it was stopped; RCU's
	 * stall detector then reports a stall with stack dumps, ~2 KB on the
	 * emulated serial console: 250 ms of every restore of a template a
	 * quarter of an hour old.  Nothing stalled: keep it quiet.
	 */
	if (!ret)
		ret = cmdline__add_default(c, "rcupdate.rcu_cpu_stall_suppress",
					   "1");
	/* SMP lock-prefix patching costs ~1 s emulated; useless on one vCPU. */
	if (!ret && nr_vcpus == 1)
		ret = cmdline__add_default(c, "noreplace-smp", NULL);
	return ret;
}
