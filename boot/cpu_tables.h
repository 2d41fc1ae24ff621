/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The CPU-side boot structures written into guest RAM for a 64-bit entry:
 * the identity-mapped page tables, the GDT and an empty IDT (boot.rst
 * "64-bit Boot Protocol"; Intel SDM vol. 3 4.5 and 3.4.5), and the MP table
 * (Intel MultiProcessor Specification 1.4, chapter 4).
 */
#ifndef EMBER_BOOT_CPU_TABLES_H
#define EMBER_BOOT_CPU_TABLES_H

#include <stdint.h>

#include "../devices/guest_mem.h"

/*
 * A segment as the vCPU wants it, decoded from a GDT entry.  Field meanings
 * match struct kvm_segment so vmm/ can copy them one by one.
 */
struct boot_segment {
	uint64_t base;
	uint32_t limit; /* in bytes - 1, granularity applied */
	uint16_t selector;
	uint8_t type, present, dpl, db, s, l, g, avl;
};

/*
 * cpu_tables__gdt_entry() - build a GDT descriptor from @flags (the access
 * byte in bits 0-7 and the flags nibble in bits 12-15, e.g. 0xa09b for
 * 64-bit code), @base and @limit (20 bits).
 */
uint64_t cpu_tables__gdt_entry(uint16_t flags, uint32_t base, uint32_t limit);

/*
 * cpu_tables__segment() - decode GDT entry @entry used with @selector.
 */
struct boot_segment cpu_tables__segment(uint64_t entry, uint16_t selector);

/*
 * cpu_tables__write() - write the GDT (null, null, code64 at LAYOUT_BOOT_CS,
 * data at LAYOUT_BOOT_DS, a 16-byte busy 64-bit TSS descriptor (type 11,
 * base 0, limit 0x67) at LAYOUT_BOOT_TSS: LAYOUT_GDT_ENTRIES slots) at
 * LAYOUT_GDT_GPA, LAYOUT_IDT_BYTES of zero IDT at LAYOUT_IDT_GPA (so the
 * IDTR limit is LAYOUT_IDT_BYTES - 1), and page tables at
 * LAYOUT_PML4_GPA identity-mapping [0, LAYOUT_IDENT_MAP_BYTES) with 2 MiB
 * pages (present, writable).  Segments for the vCPU are returned in
 * @code, @data and @tss.
 * Returns 0, or -EFAULT if guest RAM does not cover the tables.
 */
int cpu_tables__write(const struct guest_mem *m, struct boot_segment *code,
		      struct boot_segment *data, struct boot_segment *tss);

/*
 * cpu_tables__mptable() - write an MP floating pointer and an MP
 * configuration table at LAYOUT_EBDA_GPA: one processor entry per vCPU
 * (APIC ids 0..@nr_cpus-1, the first flagged BSP), one ISA bus, one IOAPIC
 * (id @nr_cpus, so distinct from every APIC id, at LAYOUT_IOAPIC_GPA),
 * I/O interrupt entries for ISA IRQs 0-15 and pins up to
 * LAYOUT_IOAPIC_PINS-1 identity-routed, and local interrupt entries
 * (LINT0 ExtINT, LINT1 NMI).  Checksums per the spec.
 * @nr_cpus is 1..254, but the 1 KiB below LAYOUT_BASE_MEM_END holds at
 * most 37 processor entries.
 * Returns 0, -EINVAL for a bad @nr_cpus, -E2BIG if the table would not fit
 * below LAYOUT_BASE_MEM_END (@nr_cpus > 37), -EFAULT if guest RAM does not
 * cover it (then nothing is written).
 */
int cpu_tables__mptable(const struct guest_mem *m, unsigned int nr_cpus);

#endif /* EMBER_BOOT_CPU_TABLES_H */
