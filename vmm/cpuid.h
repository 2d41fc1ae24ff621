/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ember's CPUID template: what KVM_GET_SUPPORTED_CPUID offers, adjusted
 * per vCPU (APIC ids, topology) and, on PVM hosts, with what that host's
 * emulator cannot run hidden (PLATFORM.md).  Pure: works on the entry
 * array, the ioctls are in vcpu.c.  Intel SDM vol. 2A "CPUID";
 * Documentation/virt/kvm/x86/cpuid.rst for the KVM leaves.
 */
#ifndef EMBER_VMM_CPUID_H
#define EMBER_VMM_CPUID_H

#include <stdbool.h>
#include <stdint.h>

#include <linux/kvm.h>

/* The KVM paravirtual leaf and its feature bits (cpuid.rst). */
#define CPUID_KVM_FEATURES	0x40000001u
#define KVM_FEAT_CLOCKSOURCE	(1u << 0)
#define KVM_FEAT_NOP_IO_DELAY	(1u << 1)
#define KVM_FEAT_CLOCKSOURCE2	(1u << 3)
#define KVM_FEAT_ASYNC_PF	(1u << 4)
#define KVM_FEAT_STEAL_TIME	(1u << 5)
#define KVM_FEAT_PV_UNHALT	(1u << 7)
#define KVM_FEAT_PV_TLB_FLUSH	(1u << 9)
#define KVM_FEAT_PV_SEND_IPI	(1u << 11)
#define KVM_FEAT_PV_SCHED_YIELD (1u << 13)
#define KVM_FEAT_ASYNC_PF_INT	(1u << 14)

struct cpuid_cfg {
	unsigned int vcpu_id; /* also the APIC id */
	unsigned int nr_vcpus; /* 1..254 */
	bool pvm; /* apply the PVM profile */
};

/*
 * cpuid__apply() - adjust the @nent entries of @e in place for one vCPU:
 * leaf 1 EBX APIC id and logical count, hypervisor bit, HTT for SMP;
 * leaf 0xB/0x1F x2APIC id.  PVM: clear leaf 0xD.1 EAX bits 1-3 (XSAVEC,
 * XGETBV1, XSAVES: the guest kernel then uses the standard XSAVE layout
 * whose instructions ember emulates), leaf 7 ECX PKU/OSPKE, leaf 1 ECX
 * CX16/POPCNT, and every KVM paravirtual feature except NOP_IO_DELAY
 * (kvm-clock livelocks; PV IPI/TLB/yield/unhalt hypercalls hang).
 */
void cpuid__apply(struct kvm_cpuid_entry2 *e, unsigned int nent,
		  const struct cpuid_cfg *cfg);

/*
 * cpuid__find() - the entry for @function/@index (index ignored for
 * leaves without KVM_CPUID_FLAG_SIGNIFCANT_INDEX), or NULL.
 */
struct kvm_cpuid_entry2 *cpuid__find(struct kvm_cpuid_entry2 *e,
				     unsigned int nent, uint32_t function,
				     uint32_t index);

#endif /* EMBER_VMM_CPUID_H */
