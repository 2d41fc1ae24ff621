/* SPDX-License-Identifier: Apache-2.0 */
/*
 * boot/: pure loaders that lay a Linux guest into its RAM before the first
 * instruction: ELF vmlinux / bzImage (kernel.h), the zero page with its
 * e820 map (zeropage.h), the command line (cmdline.h), page tables, GDT
 * and MP table (cpu_tables.h), and this file.  A file here includes libc,
 * the ground of devices/ (guest_mem.h, le.h) and guest-init/protocol.h:
 * never vmm/, never <linux/kvm.h>, no ioctl.
 *
 * Every guest-physical constant of ember's x86_64 machine lives here.
 *
 *   0x0000_0500  GDT (boot protocol: __BOOT_CS 0x10, __BOOT_DS 0x18, then
 *                a 16-byte 64-bit TSS descriptor at 0x20: 6 slots)
 *   0x0000_0540  IDT (empty: the kernel installs its own)
 *   0x0000_7000  zero page (struct boot_params)
 *   0x0000_8ff0  initial stack top
 *   0x0000_9000  PML4, then PDPT and four PDs: identity map of 4 GiB
 *   0x0002_0000  kernel command line
 *   0x0009_fc00  MP floating pointer + MP table (top of base memory)
 *   0x0010_0000  bzImage protected-mode code (64-bit entry at +0x200)
 *   0x0100_0000  vmlinux (its own p_paddr; 16 MiB for the x86 default)
 *   ...          RAM up to MMIO_GAP_START, the rest above 4 GiB
 *   0xd000_0000  boot timer (Firecracker's address), then exit status,
 *                then virtio-mmio slots
 *   0xfec0_0000  IOAPIC
 *   0xfee0_0000  LAPIC
 *   0xfffb_c000  KVM identity-map page, then the 3-page TSS (Intel only)
 */
#ifndef EMBER_BOOT_LAYOUT_H
#define EMBER_BOOT_LAYOUT_H

#include "../guest-init/protocol.h"

#define LAYOUT_KiB 0x400ULL
#define LAYOUT_MiB 0x100000ULL
#define LAYOUT_GiB 0x40000000ULL

#define LAYOUT_GDT_GPA	       0x500ULL
#define LAYOUT_GDT_ENTRIES     6 /* a 64-bit TSS descriptor takes two */
#define LAYOUT_IDT_GPA	       0x540ULL
#define LAYOUT_IDT_BYTES       16ULL /* one zero gate; IDTR limit 15 */
#define LAYOUT_ZERO_PAGE_GPA   0x7000ULL
#define LAYOUT_BOOT_STACK_GPA  0x8ff0ULL
#define LAYOUT_PML4_GPA	       0x9000ULL
#define LAYOUT_PDPT_GPA	       0xa000ULL
#define LAYOUT_PD_GPA	       0xb000ULL /* 4 pages: 0xb000-0xefff */
#define LAYOUT_IDENT_MAP_BYTES (4 * LAYOUT_GiB)
#define LAYOUT_CMDLINE_GPA     0x20000ULL
#define LAYOUT_CMDLINE_MAX     2048ULL /* x86 COMMAND_LINE_SIZE */
#define LAYOUT_EBDA_GPA	       0x9fc00ULL /* MP table here */
#define LAYOUT_BASE_MEM_END    0xa0000ULL /* 640 KiB */
#define LAYOUT_HIGH_MEM_GPA    0x100000ULL /* 1 MiB */
#define LAYOUT_BZIMAGE_GPA     LAYOUT_HIGH_MEM_GPA

/* Boot protocol selectors (Documentation/x86/boot.rst, 64-bit protocol). */
#define LAYOUT_BOOT_CS	0x10
#define LAYOUT_BOOT_DS	0x18
#define LAYOUT_BOOT_TSS 0x20

/* The 32-bit MMIO hole: RAM stops here and resumes at 4 GiB. */
#define LAYOUT_MMIO_GAP_START	 0xd0000000ULL
#define LAYOUT_MMIO_GAP_END	 0x100000000ULL
#define LAYOUT_BOOT_TIMER_GPA	 EMBER_BOOT_TIMER_GPA
#define LAYOUT_BOOT_TIMER_SIZE	 0x1000ULL
#define LAYOUT_EXIT_STATUS_GPA	 EMBER_EXIT_STATUS_GPA
#define LAYOUT_EXIT_STATUS_SIZE	 EMBER_EXIT_STATUS_SIZE
#define LAYOUT_VIRTIO_MMIO_GPA	 0xd0010000ULL
#define LAYOUT_VIRTIO_MMIO_SIZE	 0x1000ULL
#define LAYOUT_VIRTIO_MMIO_SLOTS 32
#define LAYOUT_IOAPIC_GPA	 0xfec00000ULL
#define LAYOUT_LAPIC_GPA	 0xfee00000ULL
#define LAYOUT_KVM_IDMAP_GPA	 0xfffbc000ULL
#define LAYOUT_KVM_TSS_GPA	 0xfffbd000ULL

/* Interrupt lines (IOAPIC pins, ISA numbering for the legacy ones). */
#define LAYOUT_IRQ_SERIAL	4
#define LAYOUT_IRQ_VIRTIO_FIRST 5
#define LAYOUT_IOAPIC_PINS	24

/* Guest RAM limits accepted by ember (vmm/config.h: in MiB, checked). */
#define LAYOUT_RAM_MIN (16 * LAYOUT_MiB)
#define LAYOUT_RAM_MAX (256 * LAYOUT_GiB)

#endif /* EMBER_BOOT_LAYOUT_H */
