// SPDX-License-Identifier: Apache-2.0
/* Unit tests for vmm/cpuid.c: the per-vCPU CPUID template. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "../../vmm/cpuid.h"

#define L1_ECX_SSE3   (1u << 0)
#define L1_ECX_CX16   (1u << 13)
#define L1_ECX_POPCNT (1u << 23)
#define L1_ECX_AVX    (1u << 28)
#define L1_ECX_HV     (1u << 31)
#define L1_EDX_HTT    (1u << 28)
#define L1_EDX_SSE2   (1u << 26)
#define L7_ECX_UMIP   (1u << 2)
#define L7_ECX_PKU    (1u << 3)
#define L7_ECX_OSPKE  (1u << 4)
#define LD1_XSAVEOPT  (1u << 0)
#define LD1_XSAVEC    (1u << 1)
#define LD1_XGETBV1   (1u << 2)
#define LD1_XSAVES    (1u << 3)
#define LD1_XFD	      (1u << 4)

#define L1_EBX	0xdeadbeefu /* APIC id 0xde, count 0xad */
#define L1_ECX	(L1_ECX_SSE3 | L1_ECX_CX16 | L1_ECX_POPCNT | L1_ECX_AVX)
#define L1_EDX	(L1_EDX_HTT | L1_EDX_SSE2)
#define L7_ECX	(L7_ECX_UMIP | L7_ECX_PKU | L7_ECX_OSPKE)
#define LD1_EAX (LD1_XSAVEOPT | LD1_XSAVEC | LD1_XGETBV1 | LD1_XSAVES | LD1_XFD)
#define KVM_EAX                                                              \
	(KVM_FEAT_CLOCKSOURCE | KVM_FEAT_NOP_IO_DELAY |                      \
	 KVM_FEAT_CLOCKSOURCE2 | KVM_FEAT_ASYNC_PF | KVM_FEAT_STEAL_TIME |   \
	 KVM_FEAT_PV_UNHALT | KVM_FEAT_PV_TLB_FLUSH | KVM_FEAT_PV_SEND_IPI | \
	 KVM_FEAT_PV_SCHED_YIELD | KVM_FEAT_ASYNC_PF_INT | (1u << 24))
#define SIG KVM_CPUID_FLAG_SIGNIFCANT_INDEX

enum {
	E_0,
	E_1,
	E_7_0,
	E_7_1,
	E_B_0,
	E_B_1,
	E_D_0,
	E_D_1,
	E_1F_0,
	E_KVM_SIG,
	E_KVM,
	E_EXT,
	NR_E
};

static void make_entries(struct kvm_cpuid_entry2 *e)
{
	memset(e, 0, NR_E * sizeof(*e));
	e[E_0] = (struct kvm_cpuid_entry2){ .function = 0,
					    .eax = 0x1f,
					    .ebx = 0x756e6547 };
	e[E_1] = (struct kvm_cpuid_entry2){ .function = 1,
					    .eax = 0x906ea,
					    .ebx = L1_EBX,
					    .ecx = L1_ECX,
					    .edx = L1_EDX };
	e[E_7_0] = (struct kvm_cpuid_entry2){ .function = 7,
					      .index = 0,
					      .flags = SIG,
					      .eax = 1,
					      .ebx = 0x12345678,
					      .ecx = L7_ECX,
					      .edx = 0x400 };
	e[E_7_1] = (struct kvm_cpuid_entry2){ .function = 7,
					      .index = 1,
					      .flags = SIG,
					      .eax = 0x10,
					      .ecx = L7_ECX };
	e[E_B_0] = (struct kvm_cpuid_entry2){ .function = 0xb,
					      .index = 0,
					      .flags = SIG,
					      .eax = 1,
					      .ebx = 1,
					      .ecx = 0x100,
					      .edx = 0x77 };
	e[E_B_1] = (struct kvm_cpuid_entry2){ .function = 0xb,
					      .index = 1,
					      .flags = SIG,
					      .eax = 4,
					      .ebx = 2,
					      .ecx = 0x201,
					      .edx = 0x77 };
	e[E_D_0] = (struct kvm_cpuid_entry2){ .function = 0xd,
					      .index = 0,
					      .flags = SIG,
					      .eax = 7,
					      .ebx = 0x340,
					      .ecx = 0x340 };
	e[E_D_1] = (struct kvm_cpuid_entry2){ .function = 0xd,
					      .index = 1,
					      .flags = SIG,
					      .eax = LD1_EAX,
					      .ebx = 0x340 };
	e[E_1F_0] = (struct kvm_cpuid_entry2){ .function = 0x1f,
					       .index = 0,
					       .flags = SIG,
					       .eax = 1,
					       .edx = 0x77 };
	e[E_KVM_SIG] = (struct kvm_cpuid_entry2){ .function = 0x40000000,
						  .eax = 0x40000001,
						  .ebx = 0x4b4d564b };
	e[E_KVM] = (struct kvm_cpuid_entry2){ .function = CPUID_KVM_FEATURES,
					      .eax = KVM_EAX,
					      .ebx = 0x11,
					      .ecx = 0x22,
					      .edx = 0x1 };
	e[E_EXT] = (struct kvm_cpuid_entry2){ .function = 0x80000001,
					      .ecx = 0x121,
					      .edx = 0x2c100800 };
}

static void assert_entry_equal(const struct kvm_cpuid_entry2 *a,
			       const struct kvm_cpuid_entry2 *b)
{
	assert_int_equal(a->function, b->function);
	assert_int_equal(a->index, b->index);
	assert_int_equal(a->flags, b->flags);
	assert_int_equal(a->eax, b->eax);
	assert_int_equal(a->ebx, b->ebx);
	assert_int_equal(a->ecx, b->ecx);
	assert_int_equal(a->edx, b->edx);
}

static void test_leaf1_smp(void **state)
{
	struct kvm_cpuid_entry2 e[NR_E], orig[NR_E];
	struct cpuid_cfg cfg = { .vcpu_id = 3, .nr_vcpus = 4, .pvm = false };

	(void)state;
	make_entries(e);
	memcpy(orig, e, sizeof(e));
	cpuid__apply(e, NR_E, &cfg);
	/* CLFLUSH size and brand (EBX 15:0) kept; count 23:16, APIC id 31:24. */
	assert_int_equal(e[E_1].ebx, 0x0304beefu);
	assert_int_equal(e[E_1].ecx, L1_ECX | L1_ECX_HV);
	assert_int_equal(e[E_1].edx, L1_EDX);
	assert_int_equal(e[E_1].eax, orig[E_1].eax);
	/* x2APIC ids in leaves 0xb and 0x1f, every sub-leaf. */
	assert_int_equal(e[E_B_0].edx, 3);
	assert_int_equal(e[E_B_1].edx, 3);
	assert_int_equal(e[E_1F_0].edx, 3);
	assert_int_equal(e[E_B_1].ecx, orig[E_B_1].ecx);
	assert_int_equal(e[E_B_1].eax, orig[E_B_1].eax);
}

static void test_leaf1_up(void **state)
{
	struct kvm_cpuid_entry2 e[NR_E];
	struct cpuid_cfg cfg = { .vcpu_id = 0, .nr_vcpus = 1, .pvm = false };

	(void)state;
	make_entries(e);
	cpuid__apply(e, NR_E, &cfg);
	assert_int_equal(e[E_1].ebx, 0x0001beefu);
	assert_int_equal(e[E_1].edx, L1_EDX_SSE2);
	assert_int_equal(e[E_1].ecx, L1_ECX | L1_ECX_HV);
	assert_int_equal(e[E_B_0].edx, 0);

	/* HTT is set for SMP even when the host's template lacks it. */
	make_entries(e);
	e[E_1].edx = L1_EDX_SSE2;
	cfg = (struct cpuid_cfg){ .vcpu_id = 253, .nr_vcpus = 254 };
	cpuid__apply(e, NR_E, &cfg);
	assert_int_equal(e[E_1].edx, L1_EDX_SSE2 | L1_EDX_HTT);
	assert_int_equal(e[E_1].ebx, 0xfdfebeefu);
	assert_int_equal(e[E_B_0].edx, 253);
}

static void test_non_pvm_keeps_features(void **state)
{
	struct kvm_cpuid_entry2 e[NR_E], orig[NR_E];
	struct cpuid_cfg cfg = { .vcpu_id = 1, .nr_vcpus = 2, .pvm = false };
	unsigned int i;

	(void)state;
	make_entries(e);
	memcpy(orig, e, sizeof(e));
	cpuid__apply(e, NR_E, &cfg);
	assert_int_equal(e[E_1].ecx & (L1_ECX_CX16 | L1_ECX_POPCNT),
			 L1_ECX_CX16 | L1_ECX_POPCNT);
	for (i = 0; i < NR_E; i++) {
		if (i == E_1 || i == E_B_0 || i == E_B_1 || i == E_1F_0)
			continue;
		assert_entry_equal(&e[i], &orig[i]);
	}
}

static void test_pvm_profile(void **state)
{
	struct kvm_cpuid_entry2 e[NR_E], orig[NR_E];
	struct cpuid_cfg cfg = { .vcpu_id = 1, .nr_vcpus = 2, .pvm = true };

	(void)state;
	make_entries(e);
	memcpy(orig, e, sizeof(e));
	cpuid__apply(e, NR_E, &cfg);
	assert_int_equal(e[E_1].ecx, L1_ECX_SSE3 | L1_ECX_AVX | L1_ECX_HV);
	assert_int_equal(e[E_1].ebx, 0x0102beefu);
	assert_int_equal(e[E_1].edx, L1_EDX);
	/* Leaf 7.0 loses PKU/OSPKE only; 7.1 is not leaf 7.0. */
	assert_int_equal(e[E_7_0].ecx, L7_ECX_UMIP);
	assert_int_equal(e[E_7_0].ebx, orig[E_7_0].ebx);
	assert_int_equal(e[E_7_0].edx, orig[E_7_0].edx);
	assert_entry_equal(&e[E_7_1], &orig[E_7_1]);
	/* Leaf 0xd.1 keeps XSAVEOPT and XFD; 0xd.0 is untouched. */
	assert_int_equal(e[E_D_1].eax, LD1_XSAVEOPT | LD1_XFD);
	assert_int_equal(e[E_D_1].ebx, orig[E_D_1].ebx);
	assert_entry_equal(&e[E_D_0], &orig[E_D_0]);
	/* KVM features: NOP_IO_DELAY only, other registers untouched. */
	assert_int_equal(e[E_KVM].eax, KVM_FEAT_NOP_IO_DELAY);
	assert_int_equal(e[E_KVM].ebx, 0x11);
	assert_int_equal(e[E_KVM].ecx, 0x22);
	assert_int_equal(e[E_KVM].edx, 0x1);
	assert_entry_equal(&e[E_KVM_SIG], &orig[E_KVM_SIG]);
	assert_entry_equal(&e[E_EXT], &orig[E_EXT]);
	assert_entry_equal(&e[E_0], &orig[E_0]);

	/* NOP_IO_DELAY is not invented where the host lacks it. */
	make_entries(e);
	e[E_KVM].eax = KVM_FEAT_CLOCKSOURCE2 | KVM_FEAT_PV_UNHALT;
	cpuid__apply(e, NR_E, &cfg);
	assert_int_equal(e[E_KVM].eax, 0);
}

static void test_apply_idempotent(void **state)
{
	struct kvm_cpuid_entry2 e[NR_E], once[NR_E];
	struct cpuid_cfg cfg = { .vcpu_id = 2, .nr_vcpus = 3, .pvm = true };
	unsigned int i;

	(void)state;
	make_entries(e);
	cpuid__apply(e, NR_E, &cfg);
	memcpy(once, e, sizeof(e));
	cpuid__apply(e, NR_E, &cfg);
	for (i = 0; i < NR_E; i++)
		assert_entry_equal(&e[i], &once[i]);
}

static void test_find(void **state)
{
	struct kvm_cpuid_entry2 e[NR_E];

	(void)state;
	make_entries(e);
	/* Significant index: must match. */
	assert_ptr_equal(cpuid__find(e, NR_E, 7, 0), &e[E_7_0]);
	assert_ptr_equal(cpuid__find(e, NR_E, 7, 1), &e[E_7_1]);
	assert_null(cpuid__find(e, NR_E, 7, 2));
	assert_ptr_equal(cpuid__find(e, NR_E, 0xd, 1), &e[E_D_1]);
	assert_ptr_equal(cpuid__find(e, NR_E, 0xb, 1), &e[E_B_1]);
	/* Index ignored without the flag. */
	assert_ptr_equal(cpuid__find(e, NR_E, 1, 0), &e[E_1]);
	assert_ptr_equal(cpuid__find(e, NR_E, 1, 5), &e[E_1]);
	assert_ptr_equal(cpuid__find(e, NR_E, CPUID_KVM_FEATURES, 0xffffffffu),
			 &e[E_KVM]);
	/* Absent leaves, and a shortened array. */
	assert_null(cpuid__find(e, NR_E, 2, 0));
	assert_null(cpuid__find(e, NR_E, 0x80000008, 0));
	assert_null(cpuid__find(e, E_KVM, CPUID_KVM_FEATURES, 0));
	assert_null(cpuid__find(e, 0, 0, 0));
	/* The flag on the entry, not the index value, decides. */
	e[E_1].flags = SIG;
	assert_null(cpuid__find(e, NR_E, 1, 5));
	assert_ptr_equal(cpuid__find(e, NR_E, 1, 0), &e[E_1]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_leaf1_smp),
		cmocka_unit_test(test_leaf1_up),
		cmocka_unit_test(test_non_pvm_keeps_features),
		cmocka_unit_test(test_pvm_profile),
		cmocka_unit_test(test_apply_idempotent),
		cmocka_unit_test(test_find),
	};

	return cmocka_run_group_tests_name("cpuid", tests, NULL, NULL);
}
