// SPDX-License-Identifier: Apache-2.0
/* CPUID template (see cpuid.h). */
#include "cpuid.h"

#include <stddef.h>

#define CPUID1_ECX_CX16	      (1u << 13)
#define CPUID1_ECX_POPCNT     (1u << 23)
#define CPUID1_ECX_HYPERVISOR (1u << 31)
#define CPUID1_EDX_HTT	      (1u << 28)
#define CPUID7_ECX_PKU	      (1u << 3)
#define CPUID7_ECX_OSPKE      (1u << 4)
#define CPUIDD1_EAX_XSAVEC    (1u << 1)
#define CPUIDD1_EAX_XGETBV1   (1u << 2)
#define CPUIDD1_EAX_XSAVES    (1u << 3)

struct kvm_cpuid_entry2 *cpuid__find(struct kvm_cpuid_entry2 *e,
				     unsigned int nent, uint32_t function,
				     uint32_t index)
{
	unsigned int i;

	for (i = 0; i < nent; i++) {
		if (e[i].function != function)
			continue;
		if ((e[i].flags & KVM_CPUID_FLAG_SIGNIFCANT_INDEX) &&
		    e[i].index != index)
			continue;
		return &e[i];
	}
	return NULL;
}

void cpuid__apply(struct kvm_cpuid_entry2 *e, unsigned int nent,
		  const struct cpuid_cfg *cfg)
{
	unsigned int i;

	for (i = 0; i < nent; i++) {
		struct kvm_cpuid_entry2 *c = &e[i];

		switch (c->function) {
		case 1:
			c->ebx = (c->ebx & 0x0000ffffu) |
				 ((cfg->nr_vcpus & 0xffu) << 16) |
				 ((cfg->vcpu_id & 0xffu) << 24);
			c->ecx |= CPUID1_ECX_HYPERVISOR;
			if (cfg->nr_vcpus > 1)
				c->edx |= CPUID1_EDX_HTT;
			else
				c->edx &= ~CPUID1_EDX_HTT;
			if (cfg->pvm)
				c->ecx &=
					~(CPUID1_ECX_CX16 | CPUID1_ECX_POPCNT);
			break;
		case 7:
			if (c->index == 0 && cfg->pvm)
				c->ecx &= ~(CPUID7_ECX_PKU | CPUID7_ECX_OSPKE);
			break;
		case 0xb:
		case 0x1f:
			c->edx = cfg->vcpu_id;
			break;
		case 0xd:
			if (c->index == 1 && cfg->pvm)
				c->eax &= ~(CPUIDD1_EAX_XSAVEC |
					    CPUIDD1_EAX_XGETBV1 |
					    CPUIDD1_EAX_XSAVES);
			break;
		case CPUID_KVM_FEATURES:
			if (cfg->pvm)
				c->eax &= KVM_FEAT_NOP_IO_DELAY;
			break;
		default:
			break;
		}
	}
}
