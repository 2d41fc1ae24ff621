// SPDX-License-Identifier: Apache-2.0
/* Unit tests for boot/kernel.c: ELF and bzImage probing and loading. */
#include <elf.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../../boot/kernel.h"
#include "../../boot/layout.h"
#include "test_util.h"

#define RAM_BYTES (64 * LAYOUT_MiB)
#define RAM_FILL  0xcc

#define ELF_PHOFF     sizeof(Elf64_Ehdr)
#define ELF_DATA_OFF  0x1000
#define ELF_SEG0_GPA  0x1000000ULL /* 16 MiB, like vmlinux */
#define ELF_SEG0_FILE 0x300
#define ELF_SEG0_MEM  0x2000
#define ELF_SEG1_GPA  0x1200000ULL
#define ELF_SEG1_FILE 0x80
#define ELF_ENTRY     (ELF_SEG0_GPA + 0x40)
#define ELF_LEN	      (ELF_DATA_OFF + ELF_SEG0_FILE + ELF_SEG1_FILE)

#define BZ_SETUP_SECTS 2
#define BZ_PM_OFF      ((BZ_SETUP_SECTS + 1) * 512)
#define BZ_PM_LEN      0x1000
#define BZ_LEN	       (BZ_PM_OFF + BZ_PM_LEN)
#define BZ_PREF	       0x1000000ULL
#define BZ_INIT_SIZE   0x800000U
#define BZ_HDR(f)      (0x1f1 + offsetof(struct setup_header, f))

struct fixture {
	struct test_ram r; /* first: see test_ram__new_in() */
	uint8_t img[BZ_LEN > ELF_LEN ? BZ_LEN : ELF_LEN];
	size_t len;
	struct kernel_image k;
};

static int setup(void **state)
{
	struct fixture *f = test_ram__new_in(sizeof(*f), RAM_BYTES, RAM_FILL);

	if (!f)
		return -1;
	*state = f;
	return 0;
}

static Elf64_Ehdr *ehdr(struct fixture *f)
{
	return (Elf64_Ehdr *)f->img;
}

static Elf64_Phdr *phdr(struct fixture *f, unsigned int i)
{
	return (Elf64_Phdr *)(f->img + ELF_PHOFF) + i;
}

/* Two PT_LOADs (the first with a .bss tail) and a PT_NOTE in between. */
static void make_elf(struct fixture *f)
{
	Elf64_Ehdr *eh = ehdr(f);
	Elf64_Phdr *ph;
	size_t i;

	memset(f->img, 0, sizeof(f->img));
	memcpy(eh->e_ident, ELFMAG, SELFMAG);
	eh->e_ident[EI_CLASS] = ELFCLASS64;
	eh->e_ident[EI_DATA] = ELFDATA2LSB;
	eh->e_ident[EI_VERSION] = EV_CURRENT;
	eh->e_type = ET_EXEC;
	eh->e_machine = EM_X86_64;
	eh->e_version = EV_CURRENT;
	eh->e_entry = ELF_ENTRY;
	eh->e_phoff = ELF_PHOFF;
	eh->e_ehsize = sizeof(*eh);
	eh->e_phentsize = sizeof(Elf64_Phdr);
	eh->e_phnum = 3;

	ph = phdr(f, 0);
	ph->p_type = PT_LOAD;
	ph->p_offset = ELF_DATA_OFF;
	ph->p_paddr = ELF_SEG0_GPA;
	ph->p_vaddr = 0xffffffff81000000ULL;
	ph->p_filesz = ELF_SEG0_FILE;
	ph->p_memsz = ELF_SEG0_MEM;

	ph = phdr(f, 1);
	ph->p_type = PT_NOTE;
	ph->p_offset = 0xdeadbeef; /* ignored: not PT_LOAD */
	ph->p_filesz = 0x10;

	ph = phdr(f, 2);
	ph->p_type = PT_LOAD;
	ph->p_offset = ELF_DATA_OFF + ELF_SEG0_FILE;
	ph->p_paddr = ELF_SEG1_GPA;
	ph->p_filesz = ELF_SEG1_FILE;
	ph->p_memsz = ELF_SEG1_FILE;

	for (i = ELF_DATA_OFF; i < ELF_LEN; i++)
		f->img[i] = (uint8_t)(i * 7 + 1);
	f->len = ELF_LEN;
}

static void make_bz(struct fixture *f)
{
	size_t i;

	memset(f->img, 0, sizeof(f->img));
	f->img[BZ_HDR(setup_sects)] = BZ_SETUP_SECTS;
	wr16(f->img, BZ_HDR(boot_flag), 0xaa55);
	/* jmp over the header to 0x268: it ends before kernel_info_offset */
	f->img[BZ_HDR(jump)] = 0xeb;
	f->img[BZ_HDR(jump) + 1] = 0x66;
	wr32(f->img, BZ_HDR(header), 0x53726448);
	wr16(f->img, BZ_HDR(version), 0x020f);
	f->img[BZ_HDR(loadflags)] = LOADED_HIGH;
	wr32(f->img, BZ_HDR(initrd_addr_max), 0x7fffffff);
	wr32(f->img, BZ_HDR(kernel_alignment), 0x200000);
	f->img[BZ_HDR(relocatable_kernel)] = 1;
	wr16(f->img, BZ_HDR(xloadflags),
	     XLF_KERNEL_64 | XLF_CAN_BE_LOADED_ABOVE_4G);
	wr32(f->img, BZ_HDR(cmdline_size), 2047);
	wr64(f->img, BZ_HDR(pref_address), BZ_PREF);
	wr32(f->img, BZ_HDR(init_size), BZ_INIT_SIZE);
	wr32(f->img, BZ_HDR(kernel_info_offset), 0x12345678);
	wr32(f->img, BZ_HDR(syssize), BZ_PM_LEN / 16);
	wr32(f->img, BZ_HDR(payload_offset), 0x300);
	wr32(f->img, BZ_HDR(payload_length), BZ_PM_LEN - 0x300);
	for (i = BZ_PM_OFF; i < BZ_LEN; i++)
		f->img[i] = (uint8_t)(i * 13 + 5);
	f->len = BZ_LEN;
}

static int load(struct fixture *f)
{
	return kernel__load(&f->r.m, f->img, f->len, &f->k);
}

static void assert_ram_untouched(struct fixture *f, uint64_t gpa, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++)
		assert_int_equal(f->r.ram[gpa + i], RAM_FILL);
}

static void test_probe(void **state)
{
	struct fixture *f = *state;
	static const uint8_t junk[64] = { 0x7f, 'E', 'L' };

	make_elf(f);
	assert_int_equal(kernel__probe(f->img, f->len), KERNEL_FORMAT_ELF);
	make_bz(f);
	assert_int_equal(kernel__probe(f->img, f->len), KERNEL_FORMAT_BZIMAGE);
	assert_int_equal(kernel__probe(junk, sizeof(junk)), -ENOEXEC);
	assert_int_equal(kernel__probe(junk, 0), -ENOEXEC);
	make_elf(f);
	ehdr(f)->e_ident[EI_CLASS] = ELFCLASS32;
	assert_int_equal(kernel__probe(f->img, f->len), -ENOEXEC);
	make_bz(f);
	wr16(f->img, BZ_HDR(version), 0x0200);
	assert_int_equal(kernel__probe(f->img, f->len), -ENOEXEC);
}

static void test_elf_good(void **state)
{
	struct fixture *f = *state;
	size_t i;

	make_elf(f);
	assert_int_equal(load(f), 0);
	assert_int_equal(f->k.format, KERNEL_FORMAT_ELF);
	assert_int_equal(f->k.entry, ELF_ENTRY);
	assert_int_equal(f->k.load_start, ELF_SEG0_GPA);
	assert_int_equal(f->k.load_end, ELF_SEG1_GPA + ELF_SEG1_FILE);
	assert_memory_equal(f->r.ram + ELF_SEG0_GPA, f->img + ELF_DATA_OFF,
			    ELF_SEG0_FILE);
	for (i = ELF_SEG0_FILE; i < ELF_SEG0_MEM; i++)
		assert_int_equal(f->r.ram[ELF_SEG0_GPA + i], 0);
	assert_int_equal(f->r.ram[ELF_SEG0_GPA + ELF_SEG0_MEM], RAM_FILL);
	assert_memory_equal(f->r.ram + ELF_SEG1_GPA,
			    f->img + ELF_DATA_OFF + ELF_SEG0_FILE,
			    ELF_SEG1_FILE);
	assert_int_equal(f->r.ram[ELF_SEG1_GPA - 1], RAM_FILL);
	assert_int_equal(f->r.ram[ELF_SEG1_GPA + ELF_SEG1_FILE], RAM_FILL);
	/* The loader leaves the header for zeropage__build to synthesize. */
	assert_int_equal(f->k.hdr.boot_flag, 0);
}

static void test_elf_bad_magic(void **state)
{
	struct fixture *f = *state;

	make_elf(f);
	f->img[1] = 'X';
	assert_int_equal(load(f), -ENOEXEC);
	assert_ram_untouched(f, ELF_SEG0_GPA, ELF_SEG0_MEM);
}

static void test_elf_32bit(void **state)
{
	struct fixture *f = *state;

	make_elf(f);
	ehdr(f)->e_ident[EI_CLASS] = ELFCLASS32;
	assert_int_equal(load(f), -ENOEXEC);
	make_elf(f);
	ehdr(f)->e_ident[EI_DATA] = ELFDATA2MSB;
	assert_int_equal(load(f), -ENOEXEC);
}

static void test_elf_wrong_machine_or_type(void **state)
{
	struct fixture *f = *state;

	make_elf(f);
	ehdr(f)->e_machine = EM_AARCH64;
	assert_int_equal(load(f), -ENOEXEC);
	make_elf(f);
	ehdr(f)->e_type = ET_DYN;
	assert_int_equal(load(f), -ENOEXEC);
	assert_ram_untouched(f, ELF_SEG0_GPA, ELF_SEG0_MEM);
}

static void test_elf_truncated_header(void **state)
{
	struct fixture *f = *state;

	make_elf(f);
	f->len = sizeof(Elf64_Ehdr) - 1;
	assert_int_equal(load(f), -EINVAL);
	f->len = 4;
	assert_int_equal(load(f), -EINVAL);
	/* Program headers cut off by the end of the file. */
	f->len = ELF_PHOFF + 2 * sizeof(Elf64_Phdr);
	assert_int_equal(load(f), -EINVAL);
}

static void test_elf_bad_phdr_table(void **state)
{
	struct fixture *f = *state;

	make_elf(f);
	ehdr(f)->e_phoff = f->len + 1;
	assert_int_equal(load(f), -EINVAL);
	make_elf(f);
	ehdr(f)->e_phoff = UINT64_MAX;
	assert_int_equal(load(f), -EINVAL);
	make_elf(f);
	ehdr(f)->e_phoff = UINT64_MAX - 8;
	ehdr(f)->e_phnum = 1;
	assert_int_equal(load(f), -EINVAL);
	make_elf(f);
	ehdr(f)->e_phentsize = sizeof(Elf64_Phdr) + 8;
	assert_int_equal(load(f), -EINVAL);
	make_elf(f);
	ehdr(f)->e_phnum = 0;
	assert_int_equal(load(f), -EINVAL);
	make_elf(f);
	ehdr(f)->e_phnum = PN_XNUM;
	assert_int_equal(load(f), -EINVAL);
	assert_ram_untouched(f, ELF_SEG0_GPA, ELF_SEG0_MEM);
}

static void test_elf_segment_past_file(void **state)
{
	struct fixture *f = *state;

	make_elf(f);
	phdr(f, 2)->p_filesz = ELF_SEG1_FILE + 1;
	phdr(f, 2)->p_memsz = ELF_SEG1_FILE + 1;
	assert_int_equal(load(f), -EINVAL);
	make_elf(f);
	phdr(f, 0)->p_offset = f->len;
	assert_int_equal(load(f), -EINVAL);
	/* Validation comes first: the good segment 0 was not copied. */
	assert_ram_untouched(f, ELF_SEG0_GPA, ELF_SEG0_MEM);
}

static void test_elf_overflow(void **state)
{
	struct fixture *f = *state;

	make_elf(f);
	phdr(f, 0)->p_offset = UINT64_MAX;
	assert_int_equal(load(f), -EINVAL);
	make_elf(f);
	phdr(f, 0)->p_offset = UINT64_MAX - 0x10;
	phdr(f, 0)->p_filesz = 0x20;
	assert_int_equal(load(f), -EINVAL);
	make_elf(f);
	phdr(f, 0)->p_filesz = UINT64_MAX;
	phdr(f, 0)->p_memsz = UINT64_MAX;
	assert_int_equal(load(f), -EINVAL);
	make_elf(f);
	phdr(f, 0)->p_paddr = UINT64_MAX - 0x100;
	assert_int_equal(load(f), -EINVAL);
	make_elf(f);
	phdr(f, 0)->p_memsz = UINT64_MAX;
	assert_int_equal(load(f), -EINVAL);
	assert_ram_untouched(f, ELF_SEG0_GPA, ELF_SEG0_MEM);
}

static void test_elf_filesz_gt_memsz(void **state)
{
	struct fixture *f = *state;

	make_elf(f);
	phdr(f, 0)->p_memsz = ELF_SEG0_FILE - 1;
	assert_int_equal(load(f), -EINVAL);
}

static void test_elf_beyond_ram(void **state)
{
	struct fixture *f = *state;

	make_elf(f);
	phdr(f, 2)->p_paddr = RAM_BYTES - ELF_SEG1_FILE + 1;
	assert_int_equal(load(f), -E2BIG);
	make_elf(f);
	phdr(f, 0)->p_memsz = RAM_BYTES;
	assert_int_equal(load(f), -E2BIG);
	make_elf(f);
	phdr(f, 2)->p_paddr = LAYOUT_MMIO_GAP_END;
	assert_int_equal(load(f), -E2BIG);
	assert_ram_untouched(f, ELF_SEG0_GPA, ELF_SEG0_MEM);
}

static void test_elf_below_1m(void **state)
{
	struct fixture *f = *state;

	make_elf(f);
	phdr(f, 2)->p_paddr = LAYOUT_ZERO_PAGE_GPA;
	assert_int_equal(load(f), -EINVAL);
	make_elf(f);
	phdr(f, 2)->p_paddr = LAYOUT_HIGH_MEM_GPA - 1;
	assert_int_equal(load(f), -EINVAL);
	assert_ram_untouched(f, 0, LAYOUT_HIGH_MEM_GPA);
	/* Exactly at 1 MiB is allowed. */
	make_elf(f);
	phdr(f, 2)->p_paddr = LAYOUT_HIGH_MEM_GPA;
	assert_int_equal(load(f), 0);
	assert_int_equal(f->k.load_start, LAYOUT_HIGH_MEM_GPA);
	assert_int_equal(f->k.load_end, ELF_SEG0_GPA + ELF_SEG0_MEM);
}

static void test_elf_bad_entry_or_no_load(void **state)
{
	struct fixture *f = *state;

	make_elf(f);
	ehdr(f)->e_entry = 0x5000000;
	assert_int_equal(load(f), -EINVAL);
	make_elf(f);
	phdr(f, 0)->p_type = PT_NULL;
	phdr(f, 2)->p_type = PT_NOTE;
	assert_int_equal(load(f), -EINVAL);
}

static void test_bz_good(void **state)
{
	struct fixture *f = *state;

	make_bz(f);
	assert_int_equal(load(f), 0);
	assert_int_equal(f->k.format, KERNEL_FORMAT_BZIMAGE);
	assert_int_equal(f->k.entry, LAYOUT_BZIMAGE_GPA + 0x200);
	assert_int_equal(f->k.load_start, LAYOUT_BZIMAGE_GPA);
	assert_int_equal(f->k.load_end, BZ_PREF + BZ_INIT_SIZE);
	assert_memory_equal(f->r.ram + LAYOUT_BZIMAGE_GPA, f->img + BZ_PM_OFF,
			    BZ_PM_LEN);
	assert_int_equal(f->r.ram[LAYOUT_BZIMAGE_GPA + BZ_PM_LEN], RAM_FILL);
	/* The setup code itself is not loaded. */
	assert_ram_untouched(f, 0, LAYOUT_BZIMAGE_GPA);

	assert_int_equal(f->k.hdr.setup_sects, BZ_SETUP_SECTS);
	assert_int_equal(f->k.hdr.boot_flag, 0xaa55);
	assert_int_equal(f->k.hdr.header, 0x53726448);
	assert_int_equal(f->k.hdr.version, 0x020f);
	assert_int_equal(f->k.hdr.initrd_addr_max, 0x7fffffff);
	assert_int_equal(f->k.hdr.kernel_alignment, 0x200000);
	assert_int_equal(f->k.hdr.cmdline_size, 2047);
	assert_int_equal(f->k.hdr.init_size, BZ_INIT_SIZE);
	/* Past the end the jump byte announces: not copied. */
	assert_int_equal(f->k.hdr.kernel_info_offset, 0);
}

static void test_bz_load_end_from_payload(void **state)
{
	struct fixture *f = *state;

	/* pref_address below the load address: the image end is larger. */
	make_bz(f);
	wr64(f->img, BZ_HDR(pref_address), LAYOUT_BZIMAGE_GPA - 0x800);
	wr32(f->img, BZ_HDR(init_size), BZ_PM_LEN);
	assert_int_equal(load(f), 0);
	assert_int_equal(f->k.load_end, LAYOUT_BZIMAGE_GPA + BZ_PM_LEN);
}

static void test_bz_setup_sects_zero(void **state)
{
	struct fixture *f = *state;

	make_bz(f);
	f->img[BZ_HDR(setup_sects)] = 0; /* means 4: payload at 0xa00 */
	wr32(f->img, BZ_HDR(syssize), (BZ_LEN - 0xa00) / 16);
	wr32(f->img, BZ_HDR(payload_length), BZ_LEN - 0xa00 - 0x300);
	assert_int_equal(load(f), 0);
	assert_int_equal(f->k.hdr.setup_sects, 0);
	assert_memory_equal(f->r.ram + LAYOUT_BZIMAGE_GPA, f->img + 0xa00,
			    BZ_LEN - 0xa00);
	assert_int_equal(f->r.ram[LAYOUT_BZIMAGE_GPA + BZ_LEN - 0xa00],
			 RAM_FILL);
}

static void test_bz_old_version(void **state)
{
	struct fixture *f = *state;

	make_bz(f);
	wr16(f->img, BZ_HDR(version), 0x0200);
	assert_int_equal(load(f), -ENOEXEC);
	make_bz(f);
	wr16(f->img, BZ_HDR(version), 0x020b);
	assert_int_equal(load(f), -ENOEXEC);
	assert_ram_untouched(f, LAYOUT_BZIMAGE_GPA, BZ_PM_LEN);
}

static void test_bz_not_64bit(void **state)
{
	struct fixture *f = *state;

	make_bz(f);
	wr16(f->img, BZ_HDR(xloadflags), XLF_CAN_BE_LOADED_ABOVE_4G);
	assert_int_equal(kernel__probe(f->img, f->len), -ENOEXEC);
	assert_int_equal(load(f), -ENOEXEC);
}

static void test_bz_bad_magic(void **state)
{
	struct fixture *f = *state;

	make_bz(f);
	wr16(f->img, BZ_HDR(boot_flag), 0x55aa);
	assert_int_equal(load(f), -ENOEXEC);
	make_bz(f);
	wr32(f->img, BZ_HDR(header), 0x53726449);
	assert_int_equal(load(f), -ENOEXEC);
}

static void test_bz_truncated(void **state)
{
	struct fixture *f = *state;

	/* Magic present, xloadflags cut off. */
	make_bz(f);
	f->len = BZ_HDR(xloadflags) + 1;
	assert_int_equal(load(f), -EINVAL);
	/* setup_sects points past the end of the file. */
	make_bz(f);
	f->img[BZ_HDR(setup_sects)] = 255;
	assert_int_equal(load(f), -EINVAL);
	/* Empty protected-mode part. */
	make_bz(f);
	f->len = BZ_PM_OFF;
	assert_int_equal(load(f), -EINVAL);
	/* Too short to hold the 64-bit entry at +0x200. */
	make_bz(f);
	f->len = BZ_PM_OFF + 0x200;
	assert_int_equal(load(f), -EINVAL);
	/* A header that ends before init_size. */
	make_bz(f);
	f->img[BZ_HDR(jump) + 1] = 0x40;
	assert_int_equal(load(f), -EINVAL);
	assert_ram_untouched(f, LAYOUT_BZIMAGE_GPA, BZ_PM_LEN);
}

/*
 * A bzImage cut anywhere inside its kernel (`head -c` of a real one) is
 * refused before anything is loaded, and the reason says so.
 */
static void test_bz_cut_short(void **state)
{
	struct fixture *f = *state;
	size_t cut;

	for (cut = BZ_PM_OFF + 0x201; cut < BZ_LEN; cut += 0x1f3) {
		make_bz(f);
		f->len = cut;
		assert_int_equal(load(f), -EINVAL);
		assert_non_null(f->k.why);
		assert_non_null(strstr(f->k.why, "truncated"));
	}
	make_bz(f);
	f->len = BZ_LEN - 1;
	assert_int_equal(load(f), -EINVAL);
	assert_ram_untouched(f, LAYOUT_BZIMAGE_GPA, BZ_PM_LEN);
	/* Bytes after the kernel (a signature) are fine, and not loaded. */
	make_bz(f);
	f->len = BZ_LEN;
	wr32(f->img, BZ_HDR(syssize), BZ_PM_LEN / 16 - 1);
	wr32(f->img, BZ_HDR(payload_length), BZ_PM_LEN - 0x310);
	assert_int_equal(load(f), 0);
	assert_null(f->k.why);
	assert_int_equal(f->r.ram[LAYOUT_BZIMAGE_GPA + BZ_PM_LEN - 16],
			 RAM_FILL);
}

/* Header fields that disagree with each other or with the file. */
static void test_bz_inconsistent(void **state)
{
	struct fixture *f = *state;

	make_bz(f);
	wr32(f->img, BZ_HDR(syssize), 0);
	assert_int_equal(load(f), -EINVAL);
	/* syssize * 16 past the file, and as large as a u32 allows. */
	make_bz(f);
	wr32(f->img, BZ_HDR(syssize), BZ_PM_LEN / 16 + 1);
	assert_int_equal(load(f), -EINVAL);
	make_bz(f);
	wr32(f->img, BZ_HDR(syssize), 0xffffffff);
	assert_int_equal(load(f), -EINVAL);
	/* The payload runs past the kernel, or overflows a u32 sum. */
	make_bz(f);
	wr32(f->img, BZ_HDR(payload_length), BZ_PM_LEN - 0x2ff);
	assert_int_equal(load(f), -EINVAL);
	assert_non_null(strstr(f->k.why, "payload"));
	make_bz(f);
	wr32(f->img, BZ_HDR(payload_offset), 0xffffffff);
	wr32(f->img, BZ_HDR(payload_length), 0xffffffff);
	assert_int_equal(load(f), -EINVAL);
	make_bz(f);
	wr32(f->img, BZ_HDR(payload_length), 0);
	assert_int_equal(load(f), -EINVAL);
	/* init_size smaller than the image it must hold. */
	make_bz(f);
	wr32(f->img, BZ_HDR(init_size), BZ_PM_LEN - 1);
	assert_int_equal(load(f), -EINVAL);
	assert_non_null(strstr(f->k.why, "init_size"));
	/* A syssize that leaves no room for the 64-bit entry. */
	make_bz(f);
	wr32(f->img, BZ_HDR(syssize), 0x200 / 16);
	wr32(f->img, BZ_HDR(payload_length), 0x100);
	wr32(f->img, BZ_HDR(payload_offset), 0);
	assert_int_equal(load(f), -EINVAL);
	assert_ram_untouched(f, LAYOUT_BZIMAGE_GPA, BZ_PM_LEN);
}

static void test_bz_too_big(void **state)
{
	struct fixture *f = *state;

	make_bz(f);
	wr64(f->img, BZ_HDR(pref_address), RAM_BYTES - 0x1000);
	assert_int_equal(load(f), -E2BIG);
	make_bz(f);
	wr32(f->img, BZ_HDR(init_size), 0xffffffff);
	assert_int_equal(load(f), -E2BIG);
	make_bz(f);
	wr64(f->img, BZ_HDR(pref_address), UINT64_MAX - 0x10);
	assert_int_equal(load(f), -EINVAL);
	assert_ram_untouched(f, LAYOUT_BZIMAGE_GPA, BZ_PM_LEN);
}

static void test_bz_small_ram(void **state)
{
	struct fixture *f = *state;
	struct guest_mem small;

	/* RAM ends inside the payload. */
	assert_int_equal(
		mem__wrap(&small, f->r.ram, LAYOUT_BZIMAGE_GPA + BZ_PM_LEN / 2),
		0);
	make_bz(f);
	wr64(f->img, BZ_HDR(pref_address), LAYOUT_BZIMAGE_GPA);
	wr32(f->img, BZ_HDR(init_size), BZ_PM_LEN);
	assert_int_equal(kernel__load(&small, f->img, f->len, &f->k), -E2BIG);
	assert_ram_untouched(f, LAYOUT_BZIMAGE_GPA, BZ_PM_LEN / 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, test_ram__teardown)
		T(test_probe),
		T(test_elf_good),
		T(test_elf_bad_magic),
		T(test_elf_32bit),
		T(test_elf_wrong_machine_or_type),
		T(test_elf_truncated_header),
		T(test_elf_bad_phdr_table),
		T(test_elf_segment_past_file),
		T(test_elf_overflow),
		T(test_elf_filesz_gt_memsz),
		T(test_elf_beyond_ram),
		T(test_elf_below_1m),
		T(test_elf_bad_entry_or_no_load),
		T(test_bz_good),
		T(test_bz_load_end_from_payload),
		T(test_bz_setup_sects_zero),
		T(test_bz_old_version),
		T(test_bz_not_64bit),
		T(test_bz_bad_magic),
		T(test_bz_truncated),
		T(test_bz_cut_short),
		T(test_bz_inconsistent),
		T(test_bz_too_big),
		T(test_bz_small_ram),
#undef T
	};

	return cmocka_run_group_tests_name("kernel", tests, NULL, NULL);
}
