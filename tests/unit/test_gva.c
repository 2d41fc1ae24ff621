// SPDX-License-Identifier: Apache-2.0
/* Unit tests for vmm/pvm/gva.c: the guest page-table walker. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../../vmm/pvm/gva.h"
#include "../../vmm/mem.h"
#include "test_util.h"

#define RAM_BYTES (4ULL << 20)

#define CR0_PE	 (1ULL << 0)
#define CR0_WP	 (1ULL << 16)
#define CR0_PG	 (1ULL << 31)
#define CR4_PAE	 (1ULL << 5)
#define CR4_LA57 (1ULL << 12)
#define EFER_LME (1ULL << 8)
#define EFER_LMA (1ULL << 10)

#define P	  (1ULL << 0)
#define RW	  (1ULL << 1)
#define US	  (1ULL << 2)
#define A	  (1ULL << 5)
#define D	  (1ULL << 6)
#define PS	  (1ULL << 7)
#define PAT_LARGE (1ULL << 12)
#define NX	  (1ULL << 63)

/* Page-table pages. */
#define PML4	0x1000ULL
#define PDPT	0x2000ULL
#define PD	0x3000ULL
#define PT	0x4000ULL
#define PDPT_HI 0x5000ULL
#define PD_HI	0x6000ULL
#define PT_NOUS 0x7000ULL /* reached through a supervisor PDE */
#define PT_RO	0x8000ULL /* reached through a read-only PDE */
#define OUTSIDE 0x10000000ULL /* 256 MiB: beyond RAM */

/*
 * Virtual pages (all under PD[0] -> PT unless said otherwise).
 */
#define VA_A	  0x10000ULL /* -> 0x20000, RW US */
#define PA_A	  0x20000ULL
#define VA_B	  0x11000ULL /* -> 0x31000, RW US (not PA_A + 1) */
#define PA_B	  0x31000ULL
#define VA_NP	  0x12000ULL /* not present */
#define VA_RO	  0x13000ULL /* -> 0x22000, read-only, US */
#define PA_RO	  0x22000ULL
#define VA_SUP	  0x14000ULL /* -> 0x23000, RW supervisor */
#define PA_SUP	  0x23000ULL
#define VA_OUT	  0x15000ULL /* leaf outside RAM */
#define VA_C	  0x16000ULL /* -> 0x26000 RW US */
#define PA_C	  0x26000ULL
#define VA_C_RO	  0x17000ULL /* -> 0x27000 read-only US */
#define PA_C_RO	  0x27000ULL
#define VA_NOUS	  0x400000ULL /* PD[2] without US -> PT_NOUS[0] US */
#define PA_NOUS	  0x28000ULL
#define VA_PDRO	  0x600000ULL /* PD[3] without RW -> PT_RO[0] RW */
#define PA_PDRO	  0x29000ULL
#define VA_BADPT  0x800000ULL /* PD[4] -> a table outside RAM */
#define VA_2M	  0xa00000ULL /* PD[5]: 2 MiB page -> 0x200000 */
#define PA_2M	  0x200000ULL
#define VA_1G	  0x40000000ULL /* PDPT[1]: 1 GiB page -> 0 */
#define VA_KERNEL 0xffffffff80000000ULL /* PML4[511] PDPT[510] */
#define PA_KERNEL 0x200000ULL

struct fixture {
	struct test_ram r; /* first: see test_ram__new_in() */
	struct gva_ctx c;
};

static uint64_t *pte(struct fixture *f, uint64_t table, unsigned int i)
{
	return (uint64_t *)(f->r.ram + table) + i;
}

static int setup(void **state)
{
	struct fixture *f = test_ram__new_in(sizeof(*f), RAM_BYTES, 0);

	if (!f)
		return -1;
	*pte(f, PML4, 0) = PDPT | P | RW | US;
	*pte(f, PDPT, 0) = PD | P | RW | US;
	*pte(f, PDPT, 1) = 0 | P | RW | US | PS;
	*pte(f, PD, 0) = PT | P | RW | US;
	*pte(f, PD, 2) = PT_NOUS | P | RW;
	*pte(f, PD, 3) = PT_RO | P | US;
	*pte(f, PD, 4) = OUTSIDE | P | RW | US;
	*pte(f, PD, 5) = PA_2M | P | RW | US | PS | PAT_LARGE;
	*pte(f, PT, 0x10) = PA_A | P | RW | US;
	*pte(f, PT, 0x11) = PA_B | P | RW | US;
	*pte(f, PT, 0x12) = PA_A | RW | US; /* address but no P */
	*pte(f, PT, 0x13) = PA_RO | P | US;
	*pte(f, PT, 0x14) = PA_SUP | P | RW;
	*pte(f, PT, 0x15) = OUTSIDE | P | RW | US;
	*pte(f, PT, 0x16) = PA_C | P | RW | US;
	*pte(f, PT, 0x17) = PA_C_RO | P | US;
	*pte(f, PT_NOUS, 0) = PA_NOUS | P | RW | US;
	*pte(f, PT_RO, 0) = PA_PDRO | P | RW | US;
	*pte(f, PML4, 511) = PDPT_HI | P | RW | US;
	*pte(f, PDPT_HI, 510) = PD_HI | P | RW | US;
	*pte(f, PD_HI, 0) = PA_KERNEL | P | RW | PS | NX;
	f->c = (struct gva_ctx){
		.cr0 = CR0_PE | CR0_WP | CR0_PG,
		.cr3 = PML4,
		.cr4 = CR4_PAE,
		.efer = EFER_LME | EFER_LMA,
	};
	*state = f;
	return 0;
}

static uint64_t xlate_ok(struct fixture *f, uint64_t gva, unsigned int access)
{
	uint64_t gpa = 0xdeadULL;
	uint32_t pfec = 0xdead;

	assert_int_equal(
		gva__translate(&f->r.m, &f->c, gva, access, &gpa, &pfec), 0);
	return gpa;
}

static void xlate_fault(struct fixture *f, uint64_t gva, unsigned int access,
			uint32_t want_pfec)
{
	uint64_t gpa = 0;
	uint32_t pfec = 0xdead;

	assert_int_equal(
		gva__translate(&f->r.m, &f->c, gva, access, &gpa, &pfec),
		-EFAULT);
	assert_int_equal(pfec, want_pfec);
}

static void test_4k(void **state)
{
	struct fixture *f = *state;

	assert_int_equal(xlate_ok(f, VA_A + 0x123, 0), PA_A + 0x123);
	assert_int_equal(xlate_ok(f, VA_B, 0), PA_B);
	assert_int_equal(xlate_ok(f, VA_B + 0xfff, GVA_ACCESS_USER),
			 PA_B + 0xfff);
	/* Supervisor access to a user page is fine. */
	assert_int_equal(xlate_ok(f, VA_A + 8, GVA_ACCESS_WRITE), PA_A + 8);
	/* A supervisor read of a read-only page is fine. */
	assert_int_equal(xlate_ok(f, VA_RO + 4, 0), PA_RO + 4);
}

static void test_large_pages(void **state)
{
	struct fixture *f = *state;

	/* 2 MiB page: bit 12 (PAT) is not part of the address. */
	assert_int_equal(xlate_ok(f, VA_2M + 0x12345, 0), PA_2M + 0x12345);
	assert_int_equal(xlate_ok(f, VA_2M + 0x1fffff, 0), PA_2M + 0x1fffff);
	/* 1 GiB page. */
	assert_int_equal(xlate_ok(f, VA_1G + 0x3456, 0), 0x3456);
	assert_int_equal(xlate_ok(f, VA_1G + 0x3fffffff, 0), 0x3fffffff);
	/* Upper half, 2 MiB supervisor page. */
	assert_int_equal(xlate_ok(f, VA_KERNEL + 0x1234, GVA_ACCESS_WRITE),
			 PA_KERNEL + 0x1234);
}

static void test_accessed_dirty_4k(void **state)
{
	struct fixture *f = *state;

	xlate_ok(f, VA_A, 0);
	assert_int_equal(*pte(f, PML4, 0) & (A | D), A);
	assert_int_equal(*pte(f, PDPT, 0) & (A | D), A);
	assert_int_equal(*pte(f, PD, 0) & (A | D), A);
	assert_int_equal(*pte(f, PT, 0x10) & (A | D), A);
	/* A read leaves the neighbours alone. */
	assert_int_equal(*pte(f, PT, 0x11) & (A | D), 0);

	xlate_ok(f, VA_B, GVA_ACCESS_WRITE);
	assert_int_equal(*pte(f, PT, 0x11) & (A | D), A | D);
	assert_int_equal(*pte(f, PT, 0x10) & (A | D), A);
	assert_int_equal(*pte(f, PD, 0) & D, 0);
	assert_int_equal(*pte(f, PDPT, 0) & D, 0);
	assert_int_equal(*pte(f, PML4, 0) & D, 0);
	/* Addresses are untouched by the update. */
	assert_int_equal(*pte(f, PT, 0x11) & ~(A | D), PA_B | P | RW | US);
}

static void test_accessed_dirty_large(void **state)
{
	struct fixture *f = *state;

	xlate_ok(f, VA_2M, GVA_ACCESS_WRITE);
	assert_int_equal(*pte(f, PD, 5) & (A | D), A | D);
	assert_int_equal(*pte(f, PDPT, 0) & (A | D), A);
	assert_int_equal(*pte(f, PML4, 0) & (A | D), A);

	xlate_ok(f, VA_1G, 0);
	assert_int_equal(*pte(f, PDPT, 1) & (A | D), A);
	xlate_ok(f, VA_1G, GVA_ACCESS_WRITE);
	assert_int_equal(*pte(f, PDPT, 1) & (A | D), A | D);
	assert_int_equal(*pte(f, PML4, 0) & D, 0);
}

static void test_not_present(void **state)
{
	struct fixture *f = *state;

	xlate_fault(f, VA_NP, 0, 0);
	xlate_fault(f, VA_NP + 0x10, GVA_ACCESS_WRITE, GVA_ACCESS_WRITE);
	xlate_fault(f, VA_NP, GVA_ACCESS_USER, GVA_ACCESS_USER);
	xlate_fault(f, VA_NP, GVA_ACCESS_USER | GVA_ACCESS_WRITE,
		    GVA_ACCESS_USER | GVA_ACCESS_WRITE);
	xlate_fault(f, VA_NP, GVA_ACCESS_FETCH, GVA_ACCESS_FETCH);
	/* Not present at upper levels: PML4[1], PDPT[2], PD[1]. */
	xlate_fault(f, 1ULL << 39, 0, 0);
	xlate_fault(f, 2ULL << 30, GVA_ACCESS_WRITE, GVA_ACCESS_WRITE);
	xlate_fault(f, 1ULL << 21, 0, 0);
	/* The not-present leaf never gets an accessed bit. */
	assert_int_equal(*pte(f, PT, 0x12) & (A | D), 0);
}

static void test_read_only(void **state)
{
	struct fixture *f = *state;
	uint32_t pw = GVA_PFEC_PRESENT | GVA_ACCESS_WRITE;

	/* CR0.WP=1: supervisor writes honour R/W, at the leaf or above. */
	xlate_fault(f, VA_RO, GVA_ACCESS_WRITE, pw);
	xlate_fault(f, VA_PDRO, GVA_ACCESS_WRITE, pw);
	assert_int_equal(*pte(f, PT, 0x13) & D, 0);
	xlate_fault(f, VA_RO, GVA_ACCESS_WRITE | GVA_ACCESS_USER,
		    pw | GVA_ACCESS_USER);
	assert_int_equal(xlate_ok(f, VA_PDRO + 0x10, GVA_ACCESS_USER),
			 PA_PDRO + 0x10);

	/* CR0.WP=0: supervisor writes go through, user writes do not. */
	f->c.cr0 &= ~CR0_WP;
	assert_int_equal(xlate_ok(f, VA_RO + 0x40, GVA_ACCESS_WRITE),
			 PA_RO + 0x40);
	assert_int_equal(*pte(f, PT, 0x13) & (A | D), A | D);
	assert_int_equal(xlate_ok(f, VA_PDRO, GVA_ACCESS_WRITE), PA_PDRO);
	xlate_fault(f, VA_RO, GVA_ACCESS_WRITE | GVA_ACCESS_USER,
		    pw | GVA_ACCESS_USER);
	xlate_fault(f, VA_PDRO, GVA_ACCESS_WRITE | GVA_ACCESS_USER,
		    pw | GVA_ACCESS_USER);
}

static void test_user_supervisor(void **state)
{
	struct fixture *f = *state;
	uint32_t pu = GVA_PFEC_PRESENT | GVA_ACCESS_USER;

	xlate_fault(f, VA_SUP, GVA_ACCESS_USER, pu);
	xlate_fault(f, VA_SUP, GVA_ACCESS_USER | GVA_ACCESS_WRITE,
		    pu | GVA_ACCESS_WRITE);
	/* U/S clear in the PDE only. */
	xlate_fault(f, VA_NOUS, GVA_ACCESS_USER, pu);
	/* U/S clear in a 2 MiB upper-half page. */
	xlate_fault(f, VA_KERNEL, GVA_ACCESS_USER, pu);
	/* Supervisor accesses are allowed. */
	assert_int_equal(xlate_ok(f, VA_SUP + 1, GVA_ACCESS_WRITE), PA_SUP + 1);
	assert_int_equal(xlate_ok(f, VA_NOUS + 2, 0), PA_NOUS + 2);
}

static void test_non_canonical(void **state)
{
	struct fixture *f = *state;
	uint64_t gpa = 0x1234;
	uint32_t pfec = 0x55;

	assert_int_equal(gva__translate(&f->r.m, &f->c, 0x0000800000000000ULL,
					0, &gpa, &pfec),
			 -EINVAL);
	assert_int_equal(gva__translate(&f->r.m, &f->c, 0xffff7fffffffffffULL,
					0, &gpa, &pfec),
			 -EINVAL);
	assert_int_equal(gva__translate(&f->r.m, &f->c, 0x8000000000000000ULL,
					GVA_ACCESS_WRITE, &gpa, &pfec),
			 -EINVAL);
	assert_int_equal(gpa, 0x1234);
	assert_int_equal(pfec, 0x55);
	/* The edges of the canonical halves are fine (faults, not #GP). */
	xlate_fault(f, 0x00007fffffffffffULL, 0, 0);
	xlate_fault(f, 0xffff800000000000ULL, 0, 0);
}

static void test_table_outside_ram(void **state)
{
	struct fixture *f = *state;
	uint64_t gpa;
	uint32_t pfec;

	assert_int_equal(
		gva__translate(&f->r.m, &f->c, VA_BADPT, 0, &gpa, &pfec), -EIO);
	f->c.cr3 = OUTSIDE;
	assert_int_equal(gva__translate(&f->r.m, &f->c, VA_A, 0, &gpa, &pfec),
			 -EIO);
	/* Last entry of a table that ends exactly at the end of RAM. */
	f->c.cr3 = RAM_BYTES - 0x1000;
	assert_int_equal(gva__translate(&f->r.m, &f->c, 0x00007fffffffffffULL,
					0, &gpa, &pfec),
			 -EFAULT);
	/* A leaf may point outside RAM (MMIO): translation succeeds. */
	f->c.cr3 = PML4;
	assert_int_equal(xlate_ok(f, VA_OUT + 0x10, 0), OUTSIDE + 0x10);
}

static void test_paging_modes(void **state)
{
	struct fixture *f = *state;
	uint64_t gpa = 0;
	uint32_t pfec;

	f->c.cr0 &= ~CR0_PG;
	assert_int_equal(xlate_ok(f, 0x123456789ULL, GVA_ACCESS_WRITE),
			 0x123456789ULL);
	assert_int_equal(xlate_ok(f, VA_NP, 0), VA_NP);

	f->c.cr0 |= CR0_PG;
	f->c.cr4 |= CR4_LA57;
	assert_int_equal(gva__translate(&f->r.m, &f->c, VA_A, 0, &gpa, &pfec),
			 -ENOTSUP);
	f->c.cr4 = 0; /* 32-bit paging */
	f->c.efer = 0;
	assert_int_equal(gva__translate(&f->r.m, &f->c, VA_A, 0, &gpa, &pfec),
			 -ENOTSUP);
	f->c.cr4 = CR4_PAE; /* PAE paging */
	assert_int_equal(gva__translate(&f->r.m, &f->c, VA_A, 0, &gpa, &pfec),
			 -ENOTSUP);
	/* Nothing was walked. */
	assert_int_equal(*pte(f, PML4, 0) & A, 0);
}

static void test_copy_read_write(void **state)
{
	struct fixture *f = *state;
	uint8_t in[32], out[32];
	uint64_t fault_gva = 0x77;
	uint32_t pfec = 0x77;
	size_t i;

	for (i = 0; i < sizeof(in); i++)
		in[i] = (uint8_t)(0x40 + i);
	/* Across VA_A/VA_B whose physical pages are not adjacent. */
	assert_int_equal(gva__copy(&f->r.m, &f->c, VA_B - 16, in, sizeof(in),
				   GVA_ACCESS_WRITE, &pfec, &fault_gva),
			 0);
	assert_memory_equal(f->r.ram + PA_A + 0x1000 - 16, in, 16);
	assert_memory_equal(f->r.ram + PA_B, in + 16, 16);
	assert_int_equal(f->r.ram[PA_A + 0x1000], 0);
	assert_int_equal(*pte(f, PT, 0x10) & D, D);
	assert_int_equal(*pte(f, PT, 0x11) & D, D);

	memset(out, 0, sizeof(out));
	assert_int_equal(gva__copy(&f->r.m, &f->c, VA_B - 16, out, sizeof(out),
				   0, &pfec, &fault_gva),
			 0);
	assert_memory_equal(out, in, sizeof(in));
	assert_int_equal(fault_gva, 0x77);

	/* Length 0 does nothing, even at a non-present page. */
	assert_int_equal(gva__copy(&f->r.m, &f->c, VA_NP, out, 0,
				   GVA_ACCESS_WRITE, &pfec, &fault_gva),
			 0);
}

static void test_copy_fault_changes_nothing(void **state)
{
	struct fixture *f = *state;
	uint8_t in[32], before[0x1000];
	uint64_t fault_gva = 0;
	uint32_t pfec = 0;

	memset(in, 0x5a, sizeof(in));
	memcpy(before, f->r.ram + PA_B, sizeof(before));
	/* VA_B is present, VA_NP (the next page) is not. */
	assert_int_equal(gva__copy(&f->r.m, &f->c, VA_B + 0x1000 - 16, in,
				   sizeof(in), GVA_ACCESS_WRITE, &pfec,
				   &fault_gva),
			 -EFAULT);
	assert_int_equal(fault_gva, VA_NP);
	assert_int_equal(pfec, GVA_ACCESS_WRITE);
	assert_memory_equal(f->r.ram + PA_B, before, sizeof(before));

	/* Second page read-only with CR0.WP: a protection fault. */
	memcpy(before, f->r.ram + PA_C, sizeof(before));
	assert_int_equal(gva__copy(&f->r.m, &f->c, VA_C_RO - 8, in, sizeof(in),
				   GVA_ACCESS_WRITE, &pfec, &fault_gva),
			 -EFAULT);
	assert_int_equal(fault_gva, VA_C_RO);
	assert_int_equal(pfec, GVA_PFEC_PRESENT | GVA_ACCESS_WRITE);
	assert_memory_equal(f->r.ram + PA_C, before, sizeof(before));

	/* A fault in the middle of the first page is reported there. */
	assert_int_equal(gva__copy(&f->r.m, &f->c, VA_NP + 0x80, in, sizeof(in),
				   0, &pfec, &fault_gva),
			 -EFAULT);
	assert_int_equal(fault_gva, VA_NP + 0x80);
	assert_int_equal(pfec, 0);

	/* Reads fault the same way and leave the buffer alone. */
	memset(in, 0x5a, sizeof(in));
	assert_int_equal(gva__copy(&f->r.m, &f->c, VA_B + 0x1000 - 16, in,
				   sizeof(in), GVA_ACCESS_USER, &pfec,
				   &fault_gva),
			 -EFAULT);
	assert_int_equal(fault_gva, VA_NP);
	assert_int_equal(pfec, GVA_ACCESS_USER);
	assert_int_equal(in[0], 0x5a);
	assert_int_equal(in[31], 0x5a);
}

static void test_copy_outside_ram(void **state)
{
	struct fixture *f = *state;
	uint8_t buf[8] = { 0 };
	uint64_t fault_gva;
	uint32_t pfec;

	assert_int_equal(gva__copy(&f->r.m, &f->c, VA_OUT, buf, sizeof(buf), 0,
				   &pfec, &fault_gva),
			 -EIO);
	assert_int_equal(gva__copy(&f->r.m, &f->c, 0x0000800000000000ULL, buf,
				   sizeof(buf), 0, &pfec, &fault_gva),
			 -EINVAL);
}

/*
 * The canonical check covers the last byte and comes before paging: an
 * access from the last canonical page (not present here) into
 * non-canonical space is a #GP (-EINVAL), not a #PF.
 */
static void test_check_canonical_end(void **state)
{
	struct fixture *f = *state;
	uint64_t fault_gva = 0;
	uint32_t pfec = 0;
	uint8_t buf[64] = { 0 };

	assert_int_equal(gva__check(&f->r.m, &f->c, 0x00007fffffffffe0ULL,
				    sizeof(buf), GVA_ACCESS_WRITE, &pfec,
				    &fault_gva),
			 -EINVAL);
	assert_int_equal(gva__copy(&f->r.m, &f->c, 0x00007fffffffffe0ULL, buf,
				   sizeof(buf), 0, &pfec, &fault_gva),
			 -EINVAL);
	/* Ending exactly at the last canonical byte: paging decides. */
	assert_int_equal(gva__check(&f->r.m, &f->c, 0x00007fffffffffc0ULL,
				    sizeof(buf), 0, &pfec, &fault_gva),
			 -EFAULT);
}

/* gva__check() with write access: the #PF a store raises, nothing copied. */
static void test_check_write(void **state)
{
	struct fixture *f = *state;
	uint64_t fault_gva = 0;
	uint32_t pfec = 0;

	assert_int_equal(gva__check(&f->r.m, &f->c, VA_NP + 0x40, 0x340,
				    GVA_ACCESS_WRITE, &pfec, &fault_gva),
			 -EFAULT);
	assert_int_equal(pfec, GVA_ACCESS_WRITE);
	assert_int_equal(fault_gva, VA_NP + 0x40);
	assert_int_equal(gva__check(&f->r.m, &f->c, VA_C_RO - 0x40, 0x340,
				    GVA_ACCESS_WRITE, &pfec, &fault_gva),
			 -EFAULT);
	assert_int_equal(pfec, GVA_ACCESS_WRITE | GVA_PFEC_PRESENT);
	assert_int_equal(fault_gva, VA_C_RO);
	assert_int_equal(gva__check(&f->r.m, &f->c, VA_C, 0x340,
				    GVA_ACCESS_WRITE, &pfec, &fault_gva),
			 0);
	assert_int_equal(
		gva__check(&f->r.m, &f->c, VA_OUT + 8, 8, 0, &pfec, &fault_gva),
		-EIO);
	assert_int_equal(fault_gva, VA_OUT + 8);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, test_ram__teardown)
		T(test_4k),
		T(test_large_pages),
		T(test_accessed_dirty_4k),
		T(test_accessed_dirty_large),
		T(test_not_present),
		T(test_read_only),
		T(test_user_supervisor),
		T(test_non_canonical),
		T(test_table_outside_ram),
		T(test_paging_modes),
		T(test_copy_read_write),
		T(test_copy_fault_changes_nothing),
		T(test_copy_outside_ram),
		T(test_check_canonical_end),
		T(test_check_write),
#undef T
	};

	return cmocka_run_group_tests_name("gva", tests, NULL, NULL);
}
