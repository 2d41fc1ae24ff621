// SPDX-License-Identifier: Apache-2.0
/* GDT, IDT, identity page tables and the MP table (see cpu_tables.h). */
#include "cpu_tables.h"

#include <endian.h>
#include <errno.h>
#include <string.h>

#include "layout.h"

/* GDT access/flags words (cpu_tables__gdt_entry's @flags). */
#define GDT_CODE64 0xa09b /* G, L; present, DPL 0, code exec/read/acc */
#define GDT_DATA   0xc093 /* G, D/B; present, DPL 0, data read/write/acc */
/*
 * Present, type 11: a busy 64-bit TSS.  VM entry requires TR to be busy
 * (SDM vol. 3 27.3.1.2), so the descriptor says what TR will hold.
 */
#define GDT_TSS64     0x008b
#define GDT_TSS_LIMIT 0x67 /* 104-byte TSS, no I/O bitmap */

/* Page-table entry bits (SDM vol. 3 4.5). */
#define PTE_P	   (1ULL << 0)
#define PTE_RW	   (1ULL << 1)
#define PTE_PS	   (1ULL << 7)
#define PT_ENTRIES 512
#define PT_PAGE	   4096ULL
#define PT_2M	   (2 * LAYOUT_MiB)
#define PT_NR_PD   (LAYOUT_IDENT_MAP_BYTES / LAYOUT_GiB)

_Static_assert(PT_NR_PD <= PT_ENTRIES, "identity map needs one PDPT");

uint64_t cpu_tables__gdt_entry(uint16_t flags, uint32_t base, uint32_t limit)
{
	return ((uint64_t)(base & 0xff000000) << 32) |
	       ((uint64_t)(flags & 0xf0ff) << 40) |
	       ((uint64_t)(limit & 0x000f0000) << 32) |
	       ((uint64_t)(base & 0x00ffffff) << 16) |
	       (uint64_t)(limit & 0x0000ffff);
}

struct boot_segment cpu_tables__segment(uint64_t entry, uint16_t selector)
{
	struct boot_segment s = {
		.base = ((entry >> 16) & 0xffffff) |
			((entry >> 32) & 0xff000000),
		.limit = (uint32_t)((entry & 0xffff) |
				    ((entry >> 32) & 0xf0000)),
		.selector = selector,
		.type = (entry >> 40) & 0xf,
		.s = (entry >> 44) & 1,
		.dpl = (entry >> 45) & 3,
		.present = (entry >> 47) & 1,
		.avl = (entry >> 52) & 1,
		.l = (entry >> 53) & 1,
		.db = (entry >> 54) & 1,
		.g = (entry >> 55) & 1,
	};

	/* With G set the limit counts 4 KiB pages; KVM wants bytes. */
	if (s.g)
		s.limit = (s.limit << 12) | 0xfff;
	return s;
}

static int write_gdt_idt(const struct guest_mem *m, struct boot_segment *code,
			 struct boot_segment *data, struct boot_segment *tss)
{
	uint64_t gdt[LAYOUT_GDT_ENTRIES] = { 0 };
	uint8_t idt[LAYOUT_IDT_BYTES] = { 0 };
	unsigned int i;
	int ret;

	_Static_assert(LAYOUT_GDT_GPA + sizeof(gdt) <= LAYOUT_IDT_GPA,
		       "GDT runs into the IDT");
	_Static_assert(LAYOUT_BOOT_TSS / 8 + 2 <= LAYOUT_GDT_ENTRIES,
		       "no room for the 16-byte TSS descriptor");

	gdt[LAYOUT_BOOT_CS / 8] = cpu_tables__gdt_entry(GDT_CODE64, 0, 0xfffff);
	gdt[LAYOUT_BOOT_DS / 8] = cpu_tables__gdt_entry(GDT_DATA, 0, 0xfffff);
	/* The second slot holds base bits 63:32, which are 0. */
	gdt[LAYOUT_BOOT_TSS / 8] =
		cpu_tables__gdt_entry(GDT_TSS64, 0, GDT_TSS_LIMIT);

	*code = cpu_tables__segment(gdt[LAYOUT_BOOT_CS / 8], LAYOUT_BOOT_CS);
	*data = cpu_tables__segment(gdt[LAYOUT_BOOT_DS / 8], LAYOUT_BOOT_DS);
	*tss = cpu_tables__segment(gdt[LAYOUT_BOOT_TSS / 8], LAYOUT_BOOT_TSS);

	for (i = 0; i < LAYOUT_GDT_ENTRIES; i++)
		gdt[i] = htole64(gdt[i]);
	ret = guest_mem__write(m, LAYOUT_GDT_GPA, gdt, sizeof(gdt));
	if (ret)
		return ret;
	return guest_mem__write(m, LAYOUT_IDT_GPA, idt, sizeof(idt));
}

static int write_page_tables(const struct guest_mem *m)
{
	uint64_t page[PT_ENTRIES];
	uint64_t i, j;
	int ret;

	/* Whole pages: unused entries must read as not present. */
	memset(page, 0, sizeof(page));
	page[0] = htole64(LAYOUT_PDPT_GPA | PTE_P | PTE_RW);
	ret = guest_mem__write(m, LAYOUT_PML4_GPA, page, sizeof(page));
	if (ret)
		return ret;

	memset(page, 0, sizeof(page));
	for (i = 0; i < PT_NR_PD; i++)
		page[i] =
			htole64((LAYOUT_PD_GPA + i * PT_PAGE) | PTE_P | PTE_RW);
	ret = guest_mem__write(m, LAYOUT_PDPT_GPA, page, sizeof(page));
	if (ret)
		return ret;

	for (i = 0; i < PT_NR_PD; i++) {
		for (j = 0; j < PT_ENTRIES; j++)
			page[j] = htole64((i * PT_ENTRIES + j) * PT_2M | PTE_P |
					  PTE_RW | PTE_PS);
		ret = guest_mem__write(m, LAYOUT_PD_GPA + i * PT_PAGE, page,
				       sizeof(page));
		if (ret)
			return ret;
	}
	return 0;
}

int cpu_tables__write(const struct guest_mem *m, struct boot_segment *code,
		      struct boot_segment *data, struct boot_segment *tss)
{
	int ret;

	ret = write_gdt_idt(m, code, data, tss);
	if (ret)
		return ret;
	return write_page_tables(m);
}

/* --- MP table (MultiProcessor Specification 1.4, chapter 4) ------------- */

#define MP_SPEC_REV	  4 /* 1.4 */
#define MP_APIC_VERSION	  0x14 /* integrated local APIC */
#define MP_IOAPIC_VERSION 0x11
#define MP_CPU_ENABLED	  0x01
#define MP_CPU_BSP	  0x02
#define MP_CPU_SIGNATURE  0x600 /* family 6 */
#define MP_CPU_FEATURES	  0x201 /* FPU, APIC */
#define MP_IOAPIC_ENABLED 0x01
#define MP_IRQ_INT	  0
#define MP_IRQ_NMI	  1
#define MP_IRQ_EXTINT	  3
#define MP_ALL_LAPICS	  0xff

enum mp_entry_type {
	MP_PROCESSOR = 0,
	MP_BUS = 1,
	MP_IOAPIC = 2,
	MP_IOINT = 3,
	MP_LINT = 4,
};

struct mp_floating { /* 4.1 */
	char signature[4]; /* "_MP_" */
	uint32_t physptr;
	uint8_t length; /* in 16-byte units */
	uint8_t spec_rev;
	uint8_t checksum;
	uint8_t feature[5];
} __attribute__((packed));

struct mp_config { /* 4.2 */
	char signature[4]; /* "PCMP" */
	uint16_t length; /* base table, header included */
	uint8_t spec_rev;
	uint8_t checksum;
	char oem[8];
	char product[12];
	uint32_t oem_table;
	uint16_t oem_table_size;
	uint16_t entry_count;
	uint32_t lapic;
	uint16_t ext_length;
	uint8_t ext_checksum;
	uint8_t reserved;
} __attribute__((packed));

struct mp_processor { /* 4.3.1 */
	uint8_t type;
	uint8_t apic_id;
	uint8_t apic_version;
	uint8_t flags;
	uint32_t signature;
	uint32_t features;
	uint32_t reserved[2];
} __attribute__((packed));

struct mp_bus { /* 4.3.2 */
	uint8_t type;
	uint8_t bus_id;
	char bus_type[6];
} __attribute__((packed));

struct mp_ioapic { /* 4.3.3 */
	uint8_t type;
	uint8_t apic_id;
	uint8_t apic_version;
	uint8_t flags;
	uint32_t address;
} __attribute__((packed));

struct mp_intsrc { /* 4.3.4 and 4.3.5 share this layout */
	uint8_t type;
	uint8_t irq_type;
	uint16_t irq_flags;
	uint8_t src_bus;
	uint8_t src_irq;
	uint8_t dst_apic;
	uint8_t dst_pin;
} __attribute__((packed));

_Static_assert(sizeof(struct mp_floating) == 16, "MP floating pointer");
_Static_assert(sizeof(struct mp_config) == 44, "MP config header");
_Static_assert(sizeof(struct mp_processor) == 20, "MP processor entry");
_Static_assert(sizeof(struct mp_bus) == 8, "MP bus entry");
_Static_assert(sizeof(struct mp_ioapic) == 8, "MP IOAPIC entry");
_Static_assert(sizeof(struct mp_intsrc) == 8, "MP interrupt entry");

#define MP_NR_LINT  2
#define MP_MAX_CPUS 254 /* APIC id 255 is broadcast; IOAPIC takes one */

static uint8_t mp_checksum(const void *p, size_t len)
{
	const uint8_t *b = p;
	uint8_t sum = 0;

	while (len--)
		sum += *b++;
	return (uint8_t)-sum;
}

/* Bytes of the configuration table, header included, for @nr_cpus. */
static size_t mp_config_bytes(unsigned int nr_cpus)
{
	return sizeof(struct mp_config) +
	       nr_cpus * sizeof(struct mp_processor) + sizeof(struct mp_bus) +
	       sizeof(struct mp_ioapic) +
	       (LAYOUT_IOAPIC_PINS + MP_NR_LINT) * sizeof(struct mp_intsrc);
}

int cpu_tables__mptable(const struct guest_mem *m, unsigned int nr_cpus)
{
	const uint64_t cfg_gpa = LAYOUT_EBDA_GPA + sizeof(struct mp_floating);
	struct mp_floating mpf = { .signature = { '_', 'M', 'P', '_' } };
	/* Built here, then written once: nothing partial lands in RAM. */
	uint8_t base[LAYOUT_BASE_MEM_END - LAYOUT_EBDA_GPA];
	struct mp_config *cfg;
	uint8_t *p;
	size_t total;
	unsigned int i;

	if (nr_cpus < 1 || nr_cpus > MP_MAX_CPUS)
		return -EINVAL;
	total = sizeof(mpf) + mp_config_bytes(nr_cpus);
	if (total > sizeof(base))
		return -E2BIG;
	memset(base, 0, sizeof(base));

	/* The structs are packed, so casting into the byte buffer is fine. */
	p = base + sizeof(mpf) + sizeof(*cfg);
	for (i = 0; i < nr_cpus; i++) {
		struct mp_processor *c = (struct mp_processor *)p;

		c->type = MP_PROCESSOR;
		c->apic_id = (uint8_t)i;
		c->apic_version = MP_APIC_VERSION;
		c->flags = MP_CPU_ENABLED | (i == 0 ? MP_CPU_BSP : 0);
		c->signature = htole32(MP_CPU_SIGNATURE);
		c->features = htole32(MP_CPU_FEATURES);
		p += sizeof(*c);
	}
	{
		struct mp_bus *b = (struct mp_bus *)p;

		b->type = MP_BUS;
		b->bus_id = 0;
		memcpy(b->bus_type, "ISA   ", sizeof(b->bus_type));
		p += sizeof(*b);
	}
	{
		struct mp_ioapic *io = (struct mp_ioapic *)p;

		io->type = MP_IOAPIC;
		io->apic_id = (uint8_t)nr_cpus;
		io->apic_version = MP_IOAPIC_VERSION;
		io->flags = MP_IOAPIC_ENABLED;
		io->address = htole32((uint32_t)LAYOUT_IOAPIC_GPA);
		p += sizeof(*io);
	}
	/* Flags 0: polarity and trigger conform to the bus (ISA: high, edge). */
	for (i = 0; i < LAYOUT_IOAPIC_PINS; i++) {
		struct mp_intsrc *e = (struct mp_intsrc *)p;

		e->type = MP_IOINT;
		e->irq_type = MP_IRQ_INT;
		e->src_bus = 0;
		e->src_irq = (uint8_t)i;
		e->dst_apic = (uint8_t)nr_cpus;
		e->dst_pin = (uint8_t)i;
		p += sizeof(*e);
	}
	for (i = 0; i < MP_NR_LINT; i++) {
		struct mp_intsrc *e = (struct mp_intsrc *)p;

		e->type = MP_LINT;
		e->irq_type = i == 0 ? MP_IRQ_EXTINT : MP_IRQ_NMI;
		e->src_bus = 0;
		e->src_irq = 0;
		e->dst_apic = MP_ALL_LAPICS;
		e->dst_pin = (uint8_t)i;
		p += sizeof(*e);
	}

	cfg = (struct mp_config *)(base + sizeof(mpf));
	memcpy(cfg->signature, "PCMP", sizeof(cfg->signature));
	cfg->length = htole16((uint16_t)mp_config_bytes(nr_cpus));
	cfg->spec_rev = MP_SPEC_REV;
	memcpy(cfg->oem, "EMBER   ", sizeof(cfg->oem));
	memcpy(cfg->product, "EMBER VM    ", sizeof(cfg->product));
	cfg->entry_count = htole16(
		(uint16_t)(nr_cpus + 2 + LAYOUT_IOAPIC_PINS + MP_NR_LINT));
	cfg->lapic = htole32((uint32_t)LAYOUT_LAPIC_GPA);
	cfg->checksum = mp_checksum(cfg, mp_config_bytes(nr_cpus));

	mpf.physptr = htole32((uint32_t)cfg_gpa);
	mpf.length = 1;
	mpf.spec_rev = MP_SPEC_REV;
	mpf.checksum = mp_checksum(&mpf, sizeof(mpf));
	memcpy(base, &mpf, sizeof(mpf));
	return guest_mem__write(m, LAYOUT_EBDA_GPA, base, total);
}
