// SPDX-License-Identifier: Apache-2.0
/* Unit tests for boot/zeropage.c: zero page, e820, initrd placement. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../../boot/layout.h"
#include "../../boot/zeropage.h"
#include "test_util.h"

#define RAM_BYTES  (64 * LAYOUT_MiB)
#define RAM_FILL   0xa5
#define KERNEL_END 0x2000000ULL

struct fixture {
	struct test_ram r; /* first: see test_ram__new_in() */
	struct kernel_image k;
	struct boot_params bp;
};

static int setup(void **state)
{
	struct fixture *f = test_ram__new_in(sizeof(*f), RAM_BYTES, RAM_FILL);

	if (!f)
		return -1;
	f->k.format = KERNEL_FORMAT_ELF;
	f->k.entry = 0x1000000;
	f->k.load_start = 0x1000000;
	f->k.load_end = KERNEL_END;
	*state = f;
	return 0;
}

static void read_bp(struct fixture *f, const struct guest_mem *m)
{
	assert_int_equal(
		guest_mem__read(m, LAYOUT_ZERO_PAGE_GPA, &f->bp, sizeof(f->bp)),
		0);
}

static void assert_e820(const struct boot_params *bp, unsigned int i,
			uint64_t addr, uint64_t size, uint32_t type)
{
	assert_true(i < bp->e820_entries);
	assert_int_equal(bp->e820_table[i].addr, addr);
	assert_int_equal(bp->e820_table[i].size, size);
	assert_int_equal(bp->e820_table[i].type, type);
}

static void test_elf_zero_page(void **state)
{
	struct fixture *f = *state;
	const char *cl = "console=ttyS0 quiet";
	struct zeropage_cfg cfg = {
		.cmdline = cl,
		.initrd_gpa = 0x3000000,
		.initrd_size = 0x1234,
	};
	const uint8_t *raw = (const uint8_t *)&f->bp;
	size_t i;

	assert_int_equal(zeropage__build(&f->r.m, &f->k, &cfg), 0);
	read_bp(f, &f->r.m);

	assert_int_equal(f->bp.hdr.boot_flag, 0xaa55);
	assert_int_equal(f->bp.hdr.header, 0x53726448);
	assert_int_equal(f->bp.hdr.version, 0x020c);
	assert_int_equal(f->bp.hdr.type_of_loader, 0xff);
	assert_int_equal(f->bp.hdr.loadflags, LOADED_HIGH | CAN_USE_HEAP);
	assert_int_equal(f->bp.hdr.heap_end_ptr, 0xfe00);
	assert_int_equal(f->bp.hdr.cmd_line_ptr, LAYOUT_CMDLINE_GPA);
	assert_int_equal(f->bp.ext_cmd_line_ptr, 0);
	assert_int_equal(f->bp.hdr.cmdline_size, strlen(cl));
	assert_int_equal(f->bp.hdr.ramdisk_image, 0x3000000);
	assert_int_equal(f->bp.hdr.ramdisk_size, 0x1234);
	assert_int_equal(f->bp.ext_ramdisk_image, 0);
	assert_int_equal(f->bp.ext_ramdisk_size, 0);
	assert_int_equal(f->bp.hdr.setup_sects, 0);
	/* Zeroed, not left as RAM held it (the sentinel in particular). */
	assert_int_equal(f->bp.sentinel, 0);
	for (i = 0; i < offsetof(struct boot_params, e820_entries); i++)
		assert_int_equal(raw[i], 0);

	assert_int_equal(f->bp.e820_entries, 3);
	assert_e820(&f->bp, 0, 0, LAYOUT_EBDA_GPA, 1);
	assert_e820(&f->bp, 1, LAYOUT_EBDA_GPA,
		    LAYOUT_HIGH_MEM_GPA - LAYOUT_EBDA_GPA, 2);
	assert_e820(&f->bp, 2, LAYOUT_HIGH_MEM_GPA,
		    RAM_BYTES - LAYOUT_HIGH_MEM_GPA, 1);
	assert_int_equal(f->bp.e820_table[3].addr, 0);

	assert_string_equal((const char *)f->r.ram + LAYOUT_CMDLINE_GPA, cl);
	assert_int_equal(f->r.ram[LAYOUT_CMDLINE_GPA + strlen(cl) + 1],
			 RAM_FILL);
	assert_int_equal(f->r.ram[LAYOUT_ZERO_PAGE_GPA + sizeof(f->bp)],
			 RAM_FILL);
}

static void test_no_initrd_empty_cmdline(void **state)
{
	struct fixture *f = *state;
	struct zeropage_cfg cfg = { .cmdline = "" };

	assert_int_equal(zeropage__build(&f->r.m, &f->k, &cfg), 0);
	read_bp(f, &f->r.m);
	assert_int_equal(f->bp.hdr.ramdisk_image, 0);
	assert_int_equal(f->bp.hdr.ramdisk_size, 0);
	assert_int_equal(f->bp.hdr.cmdline_size, 0);
	assert_int_equal(f->r.ram[LAYOUT_CMDLINE_GPA], 0);
}

static void test_bzimage_header_kept(void **state)
{
	struct fixture *f = *state;
	struct zeropage_cfg cfg = { .cmdline = "root=/dev/vda" };

	f->k.format = KERNEL_FORMAT_BZIMAGE;
	f->k.hdr.setup_sects = 3;
	f->k.hdr.boot_flag = 0xaa55;
	f->k.hdr.header = 0x53726448;
	f->k.hdr.version = 0x020f;
	f->k.hdr.loadflags = KASLR_FLAG;
	f->k.hdr.kernel_alignment = 0x200000;
	f->k.hdr.xloadflags = XLF_KERNEL_64;
	f->k.hdr.init_size = 0x1000000;
	f->k.hdr.cmdline_size = 2047;
	assert_int_equal(zeropage__build(&f->r.m, &f->k, &cfg), 0);
	read_bp(f, &f->r.m);
	assert_int_equal(f->bp.hdr.setup_sects, 3);
	assert_int_equal(f->bp.hdr.version, 0x020f);
	assert_int_equal(f->bp.hdr.loadflags,
			 KASLR_FLAG | LOADED_HIGH | CAN_USE_HEAP);
	assert_int_equal(f->bp.hdr.kernel_alignment, 0x200000);
	assert_int_equal(f->bp.hdr.xloadflags, XLF_KERNEL_64);
	assert_int_equal(f->bp.hdr.init_size, 0x1000000);
	assert_int_equal(f->bp.hdr.type_of_loader, 0xff);
	assert_int_equal(f->bp.hdr.cmdline_size, strlen("root=/dev/vda"));
	assert_int_equal(f->bp.e820_entries, 3);

	/* The kernel's own limit on the command line is honoured. */
	f->k.hdr.cmdline_size = 4;
	assert_int_equal(zeropage__build(&f->r.m, &f->k, &cfg), -E2BIG);
}

static void test_cmdline_too_long(void **state)
{
	struct fixture *f = *state;
	char *cl = malloc(LAYOUT_CMDLINE_MAX + 1);
	struct zeropage_cfg cfg = { .cmdline = cl };

	assert_non_null(cl);
	memset(cl, 'x', LAYOUT_CMDLINE_MAX);
	cl[LAYOUT_CMDLINE_MAX] = '\0';
	assert_int_equal(zeropage__build(&f->r.m, &f->k, &cfg), -E2BIG);
	assert_int_equal(f->r.ram[LAYOUT_ZERO_PAGE_GPA], RAM_FILL);
	assert_int_equal(f->r.ram[LAYOUT_CMDLINE_GPA], RAM_FILL);
	/* One shorter fits (the NUL makes it LAYOUT_CMDLINE_MAX). */
	cl[LAYOUT_CMDLINE_MAX - 1] = '\0';
	assert_int_equal(zeropage__build(&f->r.m, &f->k, &cfg), 0);
	assert_int_equal(f->r.ram[LAYOUT_CMDLINE_GPA + LAYOUT_CMDLINE_MAX - 1],
			 0);
	free(cl);
}

static void test_initrd_outside_ram(void **state)
{
	struct fixture *f = *state;
	struct zeropage_cfg cfg = {
		.cmdline = "",
		.initrd_gpa = RAM_BYTES - 0x1000,
		.initrd_size = 0x2000,
	};

	assert_int_equal(zeropage__build(&f->r.m, &f->k, &cfg), -EFAULT);
}

static void test_tiny_ram(void **state)
{
	struct fixture *f = *state;
	struct guest_mem tiny;
	struct zeropage_cfg cfg = { .cmdline = "x" };

	/* Holds the zero page but not the command line at 0x20000. */
	assert_int_equal(mem__wrap(&tiny, f->r.ram, 0x10000), 0);
	assert_int_equal(zeropage__build(&tiny, &f->k, &cfg), -EFAULT);
}

/*
 * RAM on both sides of the MMIO gap: two small regions by hand.  The high
 * one claims 8 GiB but is backed by one page: only its first byte's
 * address is ever computed, never dereferenced.
 */
static void test_ram_above_gap(void **state)
{
	struct fixture *f = *state;
	uint8_t high[4096];
	struct guest_mem m = {
		.region = {
			{ .gpa = 0, .size = 8 * LAYOUT_MiB, .hva = f->r.ram },
			{ .gpa = LAYOUT_MMIO_GAP_END, .size = 8 * LAYOUT_GiB,
			  .hva = high },
		},
		.nr_regions = 2,
		.ram_bytes = 8 * LAYOUT_MiB + 8 * LAYOUT_GiB,
	};
	struct zeropage_cfg cfg = {
		.cmdline = "a",
		.initrd_gpa = LAYOUT_MMIO_GAP_END,
		.initrd_size = 5 * LAYOUT_GiB + 0x1000,
	};

	assert_int_equal(zeropage__build(&m, &f->k, &cfg), 0);
	read_bp(f, &m);
	assert_int_equal(f->bp.e820_entries, 4);
	assert_e820(&f->bp, 0, 0, LAYOUT_EBDA_GPA, 1);
	assert_e820(&f->bp, 1, LAYOUT_EBDA_GPA,
		    LAYOUT_HIGH_MEM_GPA - LAYOUT_EBDA_GPA, 2);
	assert_e820(&f->bp, 2, LAYOUT_HIGH_MEM_GPA,
		    8 * LAYOUT_MiB - LAYOUT_HIGH_MEM_GPA, 1);
	assert_e820(&f->bp, 3, LAYOUT_MMIO_GAP_END, 8 * LAYOUT_GiB, 1);
	/* 64-bit initrd fields split into low and ext_ high halves. */
	assert_int_equal(f->bp.hdr.ramdisk_image, 0);
	assert_int_equal(f->bp.ext_ramdisk_image, 1);
	assert_int_equal(f->bp.hdr.ramdisk_size, LAYOUT_GiB + 0x1000);
	assert_int_equal(f->bp.ext_ramdisk_size, 1);
}

static void test_initrd_place(void **state)
{
	struct fixture *f = *state;
	uint64_t gpa = 0;

	assert_int_equal(zeropage__initrd_place(&f->r.m, &f->k, 0x100000, &gpa),
			 0);
	assert_int_equal(gpa, RAM_BYTES - 0x100000);
	/* Unaligned size: start rounded down to a page. */
	assert_int_equal(zeropage__initrd_place(&f->r.m, &f->k, 0x1234, &gpa),
			 0);
	assert_int_equal(gpa, RAM_BYTES - 0x2000);
	/* Exactly the room between kernel and RAM end. */
	assert_int_equal(zeropage__initrd_place(&f->r.m, &f->k,
						RAM_BYTES - KERNEL_END, &gpa),
			 0);
	assert_int_equal(gpa, KERNEL_END);
}

static void test_initrd_too_large(void **state)
{
	struct fixture *f = *state;
	uint64_t gpa = 0x77;

	/* Would overlap the kernel. */
	assert_int_equal(zeropage__initrd_place(&f->r.m, &f->k,
						RAM_BYTES - KERNEL_END + 1,
						&gpa),
			 -E2BIG);
	/* Larger than RAM. */
	assert_int_equal(
		zeropage__initrd_place(&f->r.m, &f->k, RAM_BYTES + 1, &gpa),
		-E2BIG);
	assert_int_equal(
		zeropage__initrd_place(&f->r.m, &f->k, UINT64_MAX, &gpa),
		-E2BIG);
	assert_int_equal(gpa, 0x77);
	/* A zeroed kernel image still keeps the initrd above 1 MiB. */
	memset(&f->k, 0, sizeof(f->k));
	assert_int_equal(zeropage__initrd_place(&f->r.m, &f->k,
						RAM_BYTES - LAYOUT_MiB + 1,
						&gpa),
			 -E2BIG);
}

static void test_initrd_addr_max(void **state)
{
	struct fixture *f = *state;
	uint8_t page[4096];
	struct guest_mem big = {
		.region = {
			{ .gpa = 0, .size = LAYOUT_MMIO_GAP_START, .hva = page },
		},
		.nr_regions = 1,
		.ram_bytes = LAYOUT_MMIO_GAP_START,
	};
	uint64_t gpa = 0;

	/* The kernel's limit is lower than RAM end. */
	f->k.hdr.initrd_addr_max = 0x2ffffff;
	assert_int_equal(zeropage__initrd_place(&f->r.m, &f->k, 0x100000, &gpa),
			 0);
	assert_int_equal(gpa, 0x3000000 - 0x100000);
	assert_int_equal(
		zeropage__initrd_place(&f->r.m, &f->k, 0x1000001, &gpa),
		-E2BIG);
	/* Field 0 means the historical default 0x37ffffff. */
	f->k.hdr.initrd_addr_max = 0;
	assert_int_equal(zeropage__initrd_place(&big, &f->k, 0x100000, &gpa),
			 0);
	assert_int_equal(gpa, 0x38000000 - 0x100000);
	/* A 2 GiB limit (0x7fffffff), RAM up to the gap. */
	f->k.hdr.initrd_addr_max = 0x7fffffff;
	assert_int_equal(zeropage__initrd_place(&big, &f->k, 0x100000, &gpa),
			 0);
	assert_int_equal(gpa, 0x80000000 - 0x100000);
	/* 0xffffffff: RAM end (the gap) is the limit. */
	f->k.hdr.initrd_addr_max = 0xffffffff;
	assert_int_equal(zeropage__initrd_place(&big, &f->k, 0x100000, &gpa),
			 0);
	assert_int_equal(gpa, LAYOUT_MMIO_GAP_START - 0x100000);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, test_ram__teardown)
		T(test_elf_zero_page),	     T(test_no_initrd_empty_cmdline),
		T(test_bzimage_header_kept), T(test_cmdline_too_long),
		T(test_initrd_outside_ram),  T(test_tiny_ram),
		T(test_ram_above_gap),	     T(test_initrd_place),
		T(test_initrd_too_large),    T(test_initrd_addr_max),
#undef T
	};

	return cmocka_run_group_tests_name("zeropage", tests, NULL, NULL);
}
