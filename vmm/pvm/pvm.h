/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ember's PVM profile: what it takes to run a Linux guest on a host whose
 * /dev/kvm comes from the kvm_pvm module (no VT-x/AMD-V: guest kernel mode
 * is emulated and some instructions cannot be).  See shared PLATFORM.md
 * and README.md "PVM hosts".  Everything here is enabled only when
 * pvm__detect() (or --pvm on) says so, and each step is logged.
 *
 * The SYSCALL delivery defect is worked around inside the guest kernel
 * (guest-init/patches/0001-pvm-syscall-fault.patch): the fault it causes
 * can only be recognised from the guest's #PF path.
 */
#ifndef EMBER_VMM_PVM_H
#define EMBER_VMM_PVM_H

#include <stdbool.h>
#include <stdint.h>

#include "../../boot/cmdline.h"

struct guest_mem;
struct xstate_layout;

/* pvm__detect() - is /dev/kvm provided by kvm_pvm (/sys/module/kvm_pvm)? */
bool pvm__detect(void);

/*
 * pvm__cmdline() - add the PVM profile's kernel arguments to @c, each only
 * if the user's --append did not set it: no-kvmclock, tsc_early_khz=
 * @tsc_khz (the real rate: guest time runs at the real speed),
 * clearcpuid= for cx16, popcnt, smap, xsavec, xgetbv1, xsaves,
 * noreplace-smp with one vCPU.  Returns 0 or -E2BIG.
 */
int pvm__cmdline(struct cmdline *c, unsigned int nr_vcpus, uint32_t tsc_khz);

/* What pvm__emulate() needs of the vCPU that exited (vcpu.c fills it). */
struct pvm_vcpu {
	int fd; /* the vCPU's KVM fd */
	unsigned int id; /* its number, for the log */
	const struct guest_mem *mem; /* guest RAM */
	const struct xstate_layout *xstate; /* host XSAVE layout */
};

/*
 * pvm__emulate() - resolve a KVM_INTERNAL_ERROR_EMULATION exit of @v for
 * the instructions with an architectural answer: int3 (-> #BP), fwait
 * (skipped), ldmxcsr/stmxcsr, and xsave/xsaveopt/xrstor (standard form)
 * against KVM_GET/SET_XSAVE, injecting #PF/#GP/#UD where the CPU would.
 * Returns 0 when the vCPU can continue; otherwise a negative errno after
 * logging why: the guest RIP and instruction bytes, with *@dump set true
 * (the caller logs the registers next: vcpu__dump()), or that the
 * registers could not be read (*@dump false).
 */
int pvm__emulate(const struct pvm_vcpu *v, bool *dump);

#endif /* EMBER_VMM_PVM_H */
