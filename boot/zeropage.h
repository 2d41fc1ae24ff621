/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The zero page (struct boot_params) with its e820 map, and the placement
 * of the command line and initrd (Documentation/x86/boot.rst, zero-page.rst).
 */
#ifndef EMBER_BOOT_ZEROPAGE_H
#define EMBER_BOOT_ZEROPAGE_H

#include <stddef.h>
#include <stdint.h>

#include "kernel.h"

struct zeropage_cfg {
	const char *cmdline; /* NUL-terminated, < LAYOUT_CMDLINE_MAX bytes */
	uint64_t initrd_gpa; /* 0 when there is no initrd */
	uint64_t initrd_size; /* bytes */
};

/*
 * zeropage__initrd_place() - where to put an initrd of @size bytes: the
 * highest page-aligned GPA such that it ends below min(low RAM end,
 * hdr.initrd_addr_max + 1 (0x37ffffff when that field is 0)) and starts
 * at or above @k->load_end (and LAYOUT_HIGH_MEM_GPA).  Stores it in *@gpa.
 * Returns 0, or -E2BIG if it does not fit (an initrd larger than RAM).
 */
int zeropage__initrd_place(const struct guest_mem *m,
			   const struct kernel_image *k, uint64_t size,
			   uint64_t *gpa);

/*
 * zeropage__build() - write the command line at LAYOUT_CMDLINE_GPA and the
 * zero page at LAYOUT_ZERO_PAGE_GPA: the kernel's setup_header (bzImage) or
 * a synthesized one (ELF: boot_flag 0xAA55, header "HdrS", version 0x020c),
 * type_of_loader 0xff, loadflags with LOADED_HIGH|CAN_USE_HEAP,
 * cmd_line_ptr/cmdline_size, ramdisk_image/ramdisk_size (+ ext_* high
 * halves), heap_end_ptr, and the e820 map: usable [0, LAYOUT_EBDA_GPA),
 * reserved [LAYOUT_EBDA_GPA, LAYOUT_HIGH_MEM_GPA), usable from
 * LAYOUT_HIGH_MEM_GPA to the end of each RAM region.
 * cmdline_size is set to strlen(@cfg->cmdline); for a bzImage the
 * kernel's own hdr.cmdline_size (its maximum) is checked first.
 * Returns 0, -E2BIG if the command line is too long (for ember or for the
 * kernel), -EFAULT if guest RAM cannot hold the structures or does not
 * cover [initrd_gpa, initrd_gpa + initrd_size).
 */
int zeropage__build(const struct guest_mem *m, const struct kernel_image *k,
		    const struct zeropage_cfg *cfg);

#endif /* EMBER_BOOT_ZEROPAGE_H */
