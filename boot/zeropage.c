// SPDX-License-Identifier: Apache-2.0
/* The zero page, e820 map, command line and initrd placement (zeropage.h). */
#include "zeropage.h"

#include <errno.h>
#include <string.h>

#include "layout.h"

#define ZP_BOOT_FLAG	    0xaa55
#define ZP_HEADER_MAGIC	    0x53726448 /* "HdrS" */
#define ZP_ELF_VERSION	    0x020c
#define ZP_LOADER_UNDEFINED 0xff /* boot.rst: no assigned id */
/* boot.rst: the heap ends 0x200 below the 64 KiB real-mode segment top. */
#define ZP_HEAP_END 0xfe00
/* boot.rst: initrd_addr_max before protocol 2.03 (and for "not set"). */
#define ZP_INITRD_ADDR_MAX_DEFAULT 0x37ffffffULL
#define ZP_PAGE_MASK		   0xfffULL

#define E820_TYPE_RAM	   1
#define E820_TYPE_RESERVED 2

int zeropage__initrd_place(const struct guest_mem *m,
			   const struct kernel_image *k, uint64_t size,
			   uint64_t *gpa)
{
	uint64_t limit = guest_mem__low_ram_end(m);
	uint64_t max = k->hdr.initrd_addr_max ?
			       (uint64_t)k->hdr.initrd_addr_max + 1 :
			       ZP_INITRD_ADDR_MAX_DEFAULT + 1;
	uint64_t floor = k->load_end, at;

	if (max < limit)
		limit = max;
	/* Never over the boot structures, even for a zeroed @k. */
	if (floor < LAYOUT_HIGH_MEM_GPA)
		floor = LAYOUT_HIGH_MEM_GPA;
	if (size > limit)
		return -E2BIG;
	at = (limit - size) & ~ZP_PAGE_MASK;
	if (at < floor)
		return -E2BIG;
	*gpa = at;
	return 0;
}

/* ELF: a vmlinux has no setup_header, so write the fields boot.rst needs. */
static void zp_synth_header(struct setup_header *h)
{
	h->boot_flag = ZP_BOOT_FLAG;
	h->header = ZP_HEADER_MAGIC;
	h->version = ZP_ELF_VERSION;
}

static void zp_e820_add(struct boot_params *bp, uint64_t addr, uint64_t size,
			uint32_t type)
{
	struct boot_e820_entry *e;

	if (!size || bp->e820_entries >= E820_MAX_ENTRIES_ZEROPAGE)
		return;
	e = &bp->e820_table[bp->e820_entries++];
	e->addr = addr;
	e->size = size;
	e->type = type;
}

static void zp_e820(struct boot_params *bp, const struct guest_mem *m)
{
	unsigned int i;

	for (i = 0; i < m->nr_regions; i++) {
		const struct guest_mem_region *r = &m->region[i];
		uint64_t end = r->gpa + r->size;

		if (r->gpa != 0) {
			zp_e820_add(bp, r->gpa, r->size, E820_TYPE_RAM);
			continue;
		}
		/*
		 * The region at 0 holds base memory, the MP table at the
		 * EBDA (reserved so the kernel keeps it) and the legacy
		 * video/ROM hole, which the kernel must not use as RAM.
		 */
		zp_e820_add(bp, 0,
			    end < LAYOUT_EBDA_GPA ? end : LAYOUT_EBDA_GPA,
			    E820_TYPE_RAM);
		zp_e820_add(bp, LAYOUT_EBDA_GPA,
			    LAYOUT_HIGH_MEM_GPA - LAYOUT_EBDA_GPA,
			    E820_TYPE_RESERVED);
		if (end > LAYOUT_HIGH_MEM_GPA)
			zp_e820_add(bp, LAYOUT_HIGH_MEM_GPA,
				    end - LAYOUT_HIGH_MEM_GPA, E820_TYPE_RAM);
	}
}

int zeropage__build(const struct guest_mem *m, const struct kernel_image *k,
		    const struct zeropage_cfg *cfg)
{
	const char *cmdline = cfg->cmdline ? cfg->cmdline : "";
	size_t cmdline_len = strnlen(cmdline, LAYOUT_CMDLINE_MAX);
	struct boot_params bp;
	int ret;

	if (cmdline_len >= LAYOUT_CMDLINE_MAX)
		return -E2BIG;
	/* boot.rst: cmdline_size is the kernel's limit, without the NUL. */
	if (k->format == KERNEL_FORMAT_BZIMAGE && k->hdr.cmdline_size &&
	    cmdline_len > k->hdr.cmdline_size)
		return -E2BIG;
	if (cfg->initrd_size &&
	    !guest_mem__ptr(m, cfg->initrd_gpa, cfg->initrd_size))
		return -EFAULT;

	ret = guest_mem__write(m, LAYOUT_CMDLINE_GPA, cmdline, cmdline_len + 1);
	if (ret)
		return ret;

	/* Zero first: stale bytes outside hdr would be read as parameters. */
	memset(&bp, 0, sizeof(bp));
	if (k->format == KERNEL_FORMAT_BZIMAGE)
		bp.hdr = k->hdr;
	else
		zp_synth_header(&bp.hdr);

	bp.hdr.type_of_loader = ZP_LOADER_UNDEFINED;
	bp.hdr.loadflags |= LOADED_HIGH | CAN_USE_HEAP;
	bp.hdr.heap_end_ptr = ZP_HEAP_END;
	bp.hdr.cmd_line_ptr = (uint32_t)LAYOUT_CMDLINE_GPA;
	bp.ext_cmd_line_ptr = (uint32_t)(LAYOUT_CMDLINE_GPA >> 32);
	bp.hdr.cmdline_size = (uint32_t)cmdline_len;
	if (cfg->initrd_size) {
		bp.hdr.ramdisk_image = (uint32_t)cfg->initrd_gpa;
		bp.ext_ramdisk_image = (uint32_t)(cfg->initrd_gpa >> 32);
		bp.hdr.ramdisk_size = (uint32_t)cfg->initrd_size;
		bp.ext_ramdisk_size = (uint32_t)(cfg->initrd_size >> 32);
	}
	zp_e820(&bp, m);

	return guest_mem__write(m, LAYOUT_ZERO_PAGE_GPA, &bp, sizeof(bp));
}
