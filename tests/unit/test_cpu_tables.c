// SPDX-License-Identifier: Apache-2.0
/* Unit tests for boot/cpu_tables.c: GDT, IDT, page tables, MP table. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../../boot/cpu_tables.h"
#include "../../boot/layout.h"
#include "test_util.h"

#define RAM_BYTES (16 * LAYOUT_MiB)
#define RAM_FILL  0xff

/* MP spec 1.4 sizes, written out independently of cpu_tables.c. */
#define MPF_BYTES	16
#define MPC_HDR_BYTES	44
#define MPC_CPU_BYTES	20
#define MPC_ENTRY_BYTES 8
#define MP_MAX_FIT_CPUS 37 /* (1024 - 16 - 44 - 8 - 8 - 26 * 8) / 20 */

static int setup(void **state)
{
	*state = test_ram__new(RAM_BYTES, RAM_FILL);
	return *state ? 0 : -1;
}

static uint8_t sum8(const uint8_t *p, size_t len)
{
	uint8_t s = 0;

	while (len--)
		s += *p++;
	return s;
}

static void test_gdt_entry(void **state)
{
	(void)state;
	assert_int_equal(cpu_tables__gdt_entry(0xa09b, 0, 0xfffff),
			 0x00af9b000000ffffULL);
	assert_int_equal(cpu_tables__gdt_entry(0xc093, 0, 0xfffff),
			 0x00cf93000000ffffULL);
	assert_int_equal(cpu_tables__gdt_entry(0x008b, 0, 0x67),
			 0x00008b0000000067ULL);
	assert_int_equal(cpu_tables__gdt_entry(0x4093, 0x12345678, 0xabcde),
			 0x124a93345678bcdeULL);
}

static void test_segment_code64(void **state)
{
	struct boot_segment s;

	(void)state;
	s = cpu_tables__segment(cpu_tables__gdt_entry(0xa09b, 0, 0xfffff),
				0x10);
	assert_int_equal(s.l, 1);
	assert_int_equal(s.type, 11);
	assert_int_equal(s.s, 1);
	assert_int_equal(s.present, 1);
	assert_int_equal(s.dpl, 0);
	assert_int_equal(s.db, 0);
	assert_int_equal(s.g, 1);
	assert_int_equal(s.avl, 0);
	assert_int_equal(s.base, 0);
	assert_int_equal(s.limit, 0xffffffff);
	assert_int_equal(s.selector, 0x10);
}

static void test_segment_data_and_fields(void **state)
{
	struct boot_segment s;

	(void)state;
	s = cpu_tables__segment(cpu_tables__gdt_entry(0xc093, 0, 0xfffff),
				0x18);
	assert_int_equal(s.type, 3);
	assert_int_equal(s.l, 0);
	assert_int_equal(s.db, 1);
	assert_int_equal(s.limit, 0xffffffff);

	/* Byte granularity, odd base, DPL 3, AVL. */
	s = cpu_tables__segment(
		cpu_tables__gdt_entry(0x10f3, 0x12345678, 0xabcde), 0x2b);
	assert_int_equal(s.base, 0x12345678);
	assert_int_equal(s.limit, 0xabcde);
	assert_int_equal(s.g, 0);
	assert_int_equal(s.dpl, 3);
	assert_int_equal(s.avl, 1);
	assert_int_equal(s.type, 3);
	assert_int_equal(s.selector, 0x2b);

	/* G applied to a small limit: 2 pages. */
	s = cpu_tables__segment(cpu_tables__gdt_entry(0x809b, 0, 1), 0);
	assert_int_equal(s.limit, 0x1fff);
}

static void test_write_gdt_idt(void **state)
{
	struct test_ram *f = *state;
	struct boot_segment code, data, tss;
	const uint8_t *gdt = f->ram + LAYOUT_GDT_GPA;
	size_t i;

	assert_int_equal(cpu_tables__write(&f->m, &code, &data, &tss), 0);
	assert_int_equal(rd64(gdt, 0), 0);
	assert_int_equal(rd64(gdt, 8), 0);
	assert_int_equal(rd64(gdt, LAYOUT_BOOT_CS), 0x00af9b000000ffffULL);
	assert_int_equal(rd64(gdt, LAYOUT_BOOT_DS), 0x00cf93000000ffffULL);
	assert_int_equal(rd64(gdt, LAYOUT_BOOT_TSS), 0x00008b0000000067ULL);
	assert_int_equal(rd64(gdt, LAYOUT_BOOT_TSS + 8), 0);
	assert_true(LAYOUT_GDT_GPA + LAYOUT_GDT_ENTRIES * 8 <= LAYOUT_IDT_GPA);
	for (i = 0; i < LAYOUT_IDT_BYTES; i++)
		assert_int_equal(f->ram[LAYOUT_IDT_GPA + i], 0);

	assert_int_equal(code.selector, LAYOUT_BOOT_CS);
	assert_int_equal(code.l, 1);
	assert_int_equal(code.type, 11);
	assert_int_equal(data.selector, LAYOUT_BOOT_DS);
	assert_int_equal(data.type, 3);
	assert_int_equal(data.present, 1);
	assert_int_equal(tss.selector, LAYOUT_BOOT_TSS);
	assert_int_equal(tss.type, 11); /* busy 64-bit TSS */
	assert_int_equal(tss.s, 0);
	assert_int_equal(tss.present, 1);
	assert_int_equal(tss.limit, 0x67);
	assert_int_equal(tss.g, 0);
}

static void test_write_page_tables(void **state)
{
	struct test_ram *f = *state;
	struct boot_segment code, data, tss;
	const uint8_t *pml4 = f->ram + LAYOUT_PML4_GPA;
	const uint8_t *pdpt = f->ram + LAYOUT_PDPT_GPA;
	const uint8_t *pd = f->ram + LAYOUT_PD_GPA;
	unsigned int i;

	assert_int_equal(cpu_tables__write(&f->m, &code, &data, &tss), 0);
	assert_int_equal(rd64(pml4, 0), LAYOUT_PDPT_GPA | 0x3);
	for (i = 1; i < 512; i++)
		assert_int_equal(rd64(pml4, i * 8), 0);
	for (i = 0; i < 4; i++)
		assert_int_equal(rd64(pdpt, i * 8),
				 (LAYOUT_PD_GPA + i * 4096) | 0x3);
	for (i = 4; i < 512; i++)
		assert_int_equal(rd64(pdpt, i * 8), 0);
	for (i = 0; i < 4 * 512; i++)
		assert_int_equal(rd64(pd, i * 8),
				 (uint64_t)i * 2 * LAYOUT_MiB | 0x83);
	/* The last PD entry maps the 2 MiB just below 4 GiB. */
	assert_int_equal(rd64(pd, 2047 * 8), 0xffe00083ULL);
	assert_int_equal(f->ram[LAYOUT_PD_GPA + 4 * 4096], RAM_FILL);
}

static void test_write_tiny_ram(void **state)
{
	struct test_ram *f = *state;
	struct boot_segment code, data, tss;
	struct guest_mem tiny;

	/* GDT fits, page tables do not. */
	assert_int_equal(mem__wrap(&tiny, f->ram, 0x9000), 0);
	assert_int_equal(cpu_tables__write(&tiny, &code, &data, &tss), -EFAULT);
	assert_int_equal(mem__wrap(&tiny, f->ram, 0x100), 0);
	assert_int_equal(cpu_tables__write(&tiny, &code, &data, &tss), -EFAULT);
}

static void check_mptable(struct test_ram *f, unsigned int n)
{
	const uint8_t *mpf = f->ram + LAYOUT_EBDA_GPA;
	const uint8_t *mpc = mpf + MPF_BYTES;
	const uint8_t *e;
	size_t len = MPC_HDR_BYTES + n * MPC_CPU_BYTES +
		     (2 + LAYOUT_IOAPIC_PINS + 2) * MPC_ENTRY_BYTES;
	unsigned int i;

	assert_int_equal(cpu_tables__mptable(&f->m, n), 0);

	assert_memory_equal(mpf, "_MP_", 4);
	assert_int_equal(rd32(mpf, 4), LAYOUT_EBDA_GPA + MPF_BYTES);
	assert_int_equal(mpf[8], 1);
	assert_int_equal(mpf[9], 4);
	assert_int_equal(sum8(mpf, MPF_BYTES), 0);
	for (i = 11; i < 16; i++)
		assert_int_equal(mpf[i], 0); /* feature 1 = 0: table */

	assert_memory_equal(mpc, "PCMP", 4);
	assert_int_equal(rd16(mpc, 4), len);
	assert_int_equal(mpc[6], 4);
	assert_memory_equal(mpc + 8, "EMBER   ", 8);
	assert_int_equal(rd16(mpc, 34), n + 2 + LAYOUT_IOAPIC_PINS + 2);
	assert_int_equal(rd32(mpc, 36), LAYOUT_LAPIC_GPA);
	assert_int_equal(rd16(mpc, 40), 0);
	assert_int_equal(sum8(mpc, len), 0);
	assert_true(LAYOUT_EBDA_GPA + MPF_BYTES + len <= LAYOUT_BASE_MEM_END);

	e = mpc + MPC_HDR_BYTES;
	for (i = 0; i < n; i++, e += MPC_CPU_BYTES) {
		assert_int_equal(e[0], 0);
		assert_int_equal(e[1], i);
		assert_int_equal(e[2], 0x14);
		assert_int_equal(e[3], i == 0 ? 3 : 1);
		assert_int_equal(rd32(e, 4), 0x600);
		assert_int_equal(rd32(e, 8), 0x201);
	}
	assert_int_equal(e[0], 1);
	assert_int_equal(e[1], 0);
	assert_memory_equal(e + 2, "ISA   ", 6);
	e += MPC_ENTRY_BYTES;
	assert_int_equal(e[0], 2);
	assert_int_equal(e[1], n);
	assert_int_equal(e[2], 0x11);
	assert_int_equal(e[3], 1);
	assert_int_equal(rd32(e, 4), LAYOUT_IOAPIC_GPA);
	e += MPC_ENTRY_BYTES;
	for (i = 0; i < LAYOUT_IOAPIC_PINS; i++, e += MPC_ENTRY_BYTES) {
		assert_int_equal(e[0], 3);
		assert_int_equal(e[1], 0); /* INT */
		assert_int_equal(rd16(e, 2), 0); /* conforming */
		assert_int_equal(e[4], 0); /* ISA bus */
		assert_int_equal(e[5], i);
		assert_int_equal(e[6], n);
		assert_int_equal(e[7], i);
	}
	assert_int_equal(e[0], 4);
	assert_int_equal(e[1], 3); /* ExtINT */
	assert_int_equal(e[6], 0xff);
	assert_int_equal(e[7], 0); /* LINT0 */
	e += MPC_ENTRY_BYTES;
	assert_int_equal(e[0], 4);
	assert_int_equal(e[1], 1); /* NMI */
	assert_int_equal(e[6], 0xff);
	assert_int_equal(e[7], 1); /* LINT1 */
	e += MPC_ENTRY_BYTES;
	assert_int_equal(e - mpc, len);
	/* Nothing written past the table. */
	if (LAYOUT_EBDA_GPA + MPF_BYTES + len < LAYOUT_BASE_MEM_END)
		assert_int_equal(*e, RAM_FILL);
}

static void test_mptable_one_cpu(void **state)
{
	check_mptable(*state, 1);
}

static void test_mptable_four_cpus(void **state)
{
	check_mptable(*state, 4);
}

static void test_mptable_max_fit(void **state)
{
	check_mptable(*state, MP_MAX_FIT_CPUS);
}

static void test_mptable_bad_count(void **state)
{
	struct test_ram *f = *state;

	assert_int_equal(cpu_tables__mptable(&f->m, 0), -EINVAL);
	assert_int_equal(cpu_tables__mptable(&f->m, 255), -EINVAL);
	assert_int_equal(cpu_tables__mptable(&f->m, MP_MAX_FIT_CPUS + 1),
			 -E2BIG);
	assert_int_equal(cpu_tables__mptable(&f->m, 254), -E2BIG);
	assert_int_equal(f->ram[LAYOUT_EBDA_GPA], RAM_FILL);
}

static void test_mptable_tiny_ram(void **state)
{
	struct test_ram *f = *state;
	struct guest_mem tiny;

	assert_int_equal(mem__wrap(&tiny, f->ram, LAYOUT_EBDA_GPA + 64), 0);
	assert_int_equal(cpu_tables__mptable(&tiny, 1), -EFAULT);
	assert_int_equal(f->ram[LAYOUT_EBDA_GPA], RAM_FILL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, test_ram__teardown)
		T(test_gdt_entry),
		T(test_segment_code64),
		T(test_segment_data_and_fields),
		T(test_write_gdt_idt),
		T(test_write_page_tables),
		T(test_write_tiny_ram),
		T(test_mptable_one_cpu),
		T(test_mptable_four_cpus),
		T(test_mptable_max_fit),
		T(test_mptable_bad_count),
		T(test_mptable_tiny_ram),
#undef T
	};

	return cmocka_run_group_tests_name("cpu_tables", tests, NULL, NULL);
}
