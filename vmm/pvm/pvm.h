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

struct vcpu;

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

/*
 * pvm__emulate() - resolve a KVM_INTERNAL_ERROR_EMULATION exit of @v for
 * the instructions with an architectural answer: int3 (-> #BP), fwait
 * (skipped), ldmxcsr/stmxcsr, and xsave/xsaveopt/xrstor (standard form)
 * against KVM_GET/SET_XSAVE, injecting #PF/#GP/#UD where the CPU would.
 * Returns 0 when the vCPU can continue; otherwise logs the guest RIP,
 * instruction bytes and registers and returns a negative errno.
 */
int pvm__emulate(struct vcpu *v);

#endif /* EMBER_VMM_PVM_H */
