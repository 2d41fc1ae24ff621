// SPDX-License-Identifier: Apache-2.0
/*
 * A hostile guest's port and MMIO traffic: string I/O with a huge RCX to
 * the UART and to an unclaimed port, an IN or an OUT at every port
 * 0-0xffff with sizes 1, 2 and 4 spread over them, and 1/2/4/8/16-byte
 * and string MMIO accesses to ember's devices, the unclaimed parts of the
 * MMIO gap, RAM's end and the in-kernel IOAPIC/LAPIC.  ember must go on
 * running (no sanitizer report, no stop) and hand back this guest's
 * status 0.
 *
 * Architectural answers checked on the way: an unclaimed port or MMIO
 * address reads all ones and drops writes; a string instruction that runs
 * into an unmapped page stops there with #PF, CR2 at that page and RCX/RSI
 * counting what was done.  Runs with --mem 64 (tests/integration/
 * tiny_guests.sh): RAM ends at 64 MiB.
 */
#include "guest.h"
#include "recover.h"

#define RAM_END	       0x4000000UL /* --mem 64 */
#define BOOT_TIMER_GPA 0xd0000000UL
#define UNCLAIMED_PORT 0x2f8 /* COM2: ember has one UART */
#define IOAPIC_GPA     0xfec00000UL
#define LAPIC_GPA      0xfee00000UL
#define WINDOW_VA      0x100000000UL /* 4 GiB: ember maps nothing here */
#define WINDOW_PA      0x2000000UL /* 32 MiB of RAM, one 2 MiB page */
#define WINDOW_END     (WINDOW_VA + 0x200000UL) /* unmapped from here */
#define STRING_BYTES   0x10000UL /* the string I/O runs 64 KiB */
#define UART_LCR       3
#define UART_MCR       4
#define UART_FCR       2
#define UART_IER       1
#define UART_MCR_LOOP  0x10
#define UART_MCR_OUT2  0x08
#define UART_FIFO      64
#define ALL_ONES       0xffffffffffffffffUL

static struct idt_gate idt[IDT_VECTORS] __attribute__((aligned(16)));
static u64 window_pd[512] __attribute__((aligned(4096)));
static u8 ram_buf[4096] __attribute__((aligned(64)));

/* rep outsb/insb that may fault: the caller sees the registers after. */
static void rep_outsb(u16 port, u64 *src, u64 *count)
{
	asm volatile("leaq 1f(%%rip), %%r8\n\t"
		     "movq %%r8, f_recover(%%rip)\n\t"
		     "rep outsb\n"
		     "1:\n\t"
		     "movq $0, f_recover(%%rip)"
		     : "+S"(*src), "+c"(*count)
		     : "d"(port)
		     : "r8", "memory");
}

static void rep_insb(u16 port, u64 *dst, u64 *count)
{
	asm volatile("leaq 1f(%%rip), %%r8\n\t"
		     "movq %%r8, f_recover(%%rip)\n\t"
		     "rep insb\n"
		     "1:\n\t"
		     "movq $0, f_recover(%%rip)"
		     : "+D"(*dst), "+c"(*count)
		     : "d"(port)
		     : "r8", "memory");
}

static void out_sized(u16 port, unsigned int size, u32 v)
{
	if (size == 1)
		asm volatile("outb %b0, %w1" : : "a"(v), "Nd"(port));
	else if (size == 2)
		asm volatile("outw %w0, %w1" : : "a"(v), "Nd"(port));
	else
		asm volatile("outl %0, %w1" : : "a"(v), "Nd"(port));
}

static u32 in_sized(u16 port, unsigned int size)
{
	u32 v = 0;

	if (size == 1)
		asm volatile("inb %w1, %b0" : "+a"(v) : "Nd"(port));
	else if (size == 2)
		asm volatile("inw %w1, %w0" : "+a"(v) : "Nd"(port));
	else
		asm volatile("inl %w1, %0" : "=a"(v) : "Nd"(port));
	return v;
}

static u64 rd(u64 addr, unsigned int size)
{
	switch (size) {
	case 1:
		return *(volatile u8 *)addr;
	case 2:
		return *(volatile u16 *)addr;
	case 4:
		return *(volatile u32 *)addr;
	default:
		return *(volatile u64 *)addr;
	}
}

static void wr(u64 addr, unsigned int size, u64 v)
{
	switch (size) {
	case 1:
		*(volatile u8 *)addr = (u8)v;
		break;
	case 2:
		*(volatile u16 *)addr = (u16)v;
		break;
	case 4:
		*(volatile u32 *)addr = (u32)v;
		break;
	default:
		*(volatile u64 *)addr = v;
		break;
	}
}

static u64 ones(unsigned int size)
{
	return size == 8 ? ALL_ONES : (1UL << (8 * size)) - 1;
}

/* Every size read then written at @addr; reads must give all ones. */
static int unclaimed_mmio(u64 addr)
{
	unsigned int size;
	int ok = 1;

	for (size = 1; size <= 8; size *= 2) {
		ok &= rd(addr, size) == ones(size);
		wr(addr, size, 0x5a5a5a5a5a5a5a5aUL);
		ok &= rd(addr, size) == ones(size);
	}
	return ok;
}

static void serial_reinit(void)
{
	outb(SERIAL_PORT + UART_LCR, 0x03); /* 8n1, DLAB off */
	outb(SERIAL_PORT + UART_IER, 0);
	outb(SERIAL_PORT + UART_FCR, 0x07); /* FIFO on, both cleared */
	outb(SERIAL_PORT + UART_MCR, UART_MCR_OUT2);
}

/*
 * Map the 2 MiB page WINDOW_VA -> WINDOW_PA in ember's boot page tables;
 * WINDOW_END and above stay unmapped (ember maps only the first 4 GiB).
 */
static void map_window(void)
{
	u64 cr3, *pml4, *pdpt;

	asm volatile("mov %%cr3, %0" : "=r"(cr3));
	pml4 = (u64 *)(cr3 & PTE_ADDR);
	pdpt = (u64 *)(pml4[0] & PTE_ADDR);
	window_pd[0] = WINDOW_PA | PTE_P | PTE_RW | PTE_PS;
	pdpt[4] = (u64)window_pd | PTE_P | PTE_RW;
	asm volatile("mov %0, %%cr3" : : "r"(cr3) : "memory");
}

/* String I/O with RCX = 2^64 - 1, stopped by #PF at WINDOW_END. */
static int string_io(void)
{
	volatile u8 *w = (volatile u8 *)(WINDOW_END - STRING_BYTES);
	u64 src, dst, count, i;
	int ok;

	for (i = 0; i < STRING_BYTES; i++)
		w[i] = (u8)(i * 7 + 1);

	/* UART in loopback: the first 64 bytes come back through its FIFO. */
	outb(SERIAL_PORT + UART_FCR, 0x07);
	outb(SERIAL_PORT + UART_MCR, UART_MCR_LOOP | UART_MCR_OUT2);
	src = WINDOW_END - STRING_BYTES;
	count = ALL_ONES;
	rep_outsb(SERIAL_PORT, &src, &count);
	ok = f_count == 1 && f_vec == 14 && f_cr2 == WINDOW_END &&
	     src == WINDOW_END && count == ALL_ONES - STRING_BYTES;
	dst = WINDOW_END - STRING_BYTES;
	count = ALL_ONES;
	rep_insb(SERIAL_PORT, &dst, &count);
	outb(SERIAL_PORT + UART_MCR, UART_MCR_OUT2);
	if (!check(ok, "rep outsb to the UART, RCX 2^64-1: #PF at the hole"))
		return 0;
	ok = f_count == 2 && f_vec == 14 && f_cr2 == WINDOW_END && (f_ec & 2) &&
	     dst == WINDOW_END && count == ALL_ONES - STRING_BYTES;
	for (i = 0; i < UART_FIFO && ok; i++)
		ok = w[i] == (u8)(i * 7 + 1);
	if (!check(ok, "rep insb from the UART: the FIFO's 64 bytes, #PF"))
		return 0;

	src = WINDOW_END - STRING_BYTES;
	count = ALL_ONES;
	rep_outsb(UNCLAIMED_PORT, &src, &count);
	ok = f_count == 3 && f_cr2 == WINDOW_END &&
	     count == ALL_ONES - STRING_BYTES;
	dst = WINDOW_END - STRING_BYTES;
	count = ALL_ONES;
	rep_insb(UNCLAIMED_PORT, &dst, &count);
	ok = ok && f_count == 4 && f_cr2 == WINDOW_END &&
	     count == ALL_ONES - STRING_BYTES;
	for (i = 0; i < STRING_BYTES && ok; i++)
		ok = w[i] == 0xff;
	return check(ok, "rep outsb/insb to an unclaimed port: all ones, #PF");
}

/*
 * One access at every port: OUT at odd ports, IN at even ones, sizes
 * rotating over 1, 2 and 4 (so accesses straddle every device's end, and
 * 0xffff gets a 4-byte OUT).  The value never has 0xfe in its low byte:
 * that at 0x64 is the i8042 reset, which ends the VM (devices/i8042.c).
 */
static void port_sweep(void)
{
	u32 port;

	for (port = 0; port <= 0xffff; port++) {
		if (port & 1)
			out_sized((u16)port, 1u << (port % 3), 0xa5c3a5c3);
		else
			(void)in_sized((u16)port, 1u << (port % 3));
	}
}

static int device_mmio(void)
{
	unsigned int size;
	u64 off;
	int ok = 1;

	/* Boot timer: anything but a 1-byte magic is ignored. */
	for (size = 1; size <= 8; size *= 2) {
		for (off = 0; off < 0x1000; off += 0x3f8) {
			(void)rd(BOOT_TIMER_GPA + off, size);
			wr(BOOT_TIMER_GPA + off, size, 0x0102030405060708UL);
		}
		(void)rd(BOOT_TIMER_GPA + 0x1000 - size, size);
		wr(BOOT_TIMER_GPA + 0x1000 - size, size, ALL_ONES);
	}
	/* Exit status: every access but a 4-byte write at 0 is ignored. */
	for (size = 1; size <= 8; size *= 2) {
		(void)rd(EXIT_STATUS_GPA, size);
		(void)rd(EXIT_STATUS_GPA + 0x1000 - size, size);
		if (size != 4)
			wr(EXIT_STATUS_GPA, size, 0xdead00fa000000fbUL);
		wr(EXIT_STATUS_GPA + 4, size, 0xfb);
		wr(EXIT_STATUS_GPA + 0x1000 - size, size, 0xfb);
	}
	ok &= check(1, "boot timer and exit status: odd sizes and offsets");

	ok &= check(unclaimed_mmio(EXIT_STATUS_GPA + 0x1000) &&
			    unclaimed_mmio(0xd0010000UL) &&
			    unclaimed_mmio(0xe0000000UL) &&
			    unclaimed_mmio(0xfebffff8UL) &&
			    unclaimed_mmio(IOAPIC_GPA + 0x800) &&
			    unclaimed_mmio(0xfed00000UL) &&
			    unclaimed_mmio(0xfffffff8UL) &&
			    unclaimed_mmio(RAM_END) &&
			    unclaimed_mmio(RAM_END + 0x123458),
		    "unclaimed MMIO and RAM's end read all ones");

	/* An 8-byte read half in RAM, half past its end. */
	*(volatile u32 *)(RAM_END - 4) = 0x11223344;
	ok &= check(rd(RAM_END - 4, 8) == 0xffffffff11223344UL,
		    "8-byte read across RAM's end: RAM, then all ones");

	/* IOAPIC: index, window, unknown registers, odd sizes. */
	wr(IOAPIC_GPA, 4, 1);
	ok &= check((rd(IOAPIC_GPA + 0x10, 4) & 0xff) != 0xff,
		    "IOAPIC version register reads");
	for (size = 1; size <= 8; size *= 2) {
		wr(IOAPIC_GPA, size, 0xff);
		(void)rd(IOAPIC_GPA + 0x10, size);
		wr(IOAPIC_GPA + 0x10, size, 0x1234);
		(void)rd(IOAPIC_GPA + 0x20, size);
		(void)rd(IOAPIC_GPA + 0x3c, size);
	}
	wr(IOAPIC_GPA, 4, 0);

	/* LAPIC: ID, version, TPR; odd sizes and reserved registers. */
	for (size = 1; size <= 8; size *= 2) {
		(void)rd(LAPIC_GPA + 0x20, size);
		(void)rd(LAPIC_GPA + 0x31, size);
		(void)rd(LAPIC_GPA + 0x3f0, size);
		(void)rd(LAPIC_GPA + 0xff8, size);
		wr(LAPIC_GPA + 0x3f0, size, ALL_ONES);
		wr(LAPIC_GPA + 0x81, size, 0);
	}
	wr(LAPIC_GPA + 0x80, 4, 0);
	ok &= check((rd(LAPIC_GPA + 0x30, 4) & 0xff) != 0xff,
		    "LAPIC version register reads");
	return ok;
}

static void rep_movsb(u64 src, u64 dst, u64 n)
{
	asm volatile("rep movsb" : "+S"(src), "+D"(dst), "+c"(n) : : "memory");
}

/* 16-byte SSE and string accesses to the MMIO gap. */
static int wide_mmio(void)
{
	volatile u64 *b = (volatile u64 *)ram_buf;
	u64 cr4, n, i, dst;
	int ok = 1;

	asm volatile("mov %%cr4, %0" : "=r"(cr4));
	asm volatile("mov %0, %%cr4"
		     :
		     : "r"(cr4 | CR4_OSFXSR | CR4_OSXMMEXCPT));
	b[0] = b[1] = 0;
	asm volatile("movdqu (%0), %%xmm0\n\t"
		     "movdqu %%xmm0, (%1)\n\t"
		     "movdqu %%xmm0, (%0)"
		     :
		     : "r"(0xe0000000UL), "r"(ram_buf)
		     : "memory");
	ok &= check(b[0] == ALL_ONES && b[1] == ALL_ONES,
		    "movdqu from unclaimed MMIO: all ones");

	for (i = 0; i < sizeof(ram_buf) / 8; i++)
		b[i] = 0;
	rep_movsb(0xe0000000UL, (u64)ram_buf, sizeof(ram_buf));
	for (i = 0; i < sizeof(ram_buf) / 8 && ok; i++)
		ok = b[i] == ALL_ONES;
	ok = check(ok, "rep movsb of 4 KiB from unclaimed MMIO: all ones");
	n = sizeof(ram_buf) / 8;
	dst = 0xe0001000UL;
	asm volatile("rep stosq"
		     : "+D"(dst), "+c"(n)
		     : "a"(0x1234UL)
		     : "memory");
	rep_movsb(0xe0000000UL, 0xe0002000UL, sizeof(ram_buf));
	ok &= check(rd(0xe0001000UL, 8) == ALL_ONES,
		    "rep stosq and MMIO-to-MMIO rep movsb: dropped");
	return ok;
}

int guest_main(void)
{
	idt_init(idt);
	idt_set(idt, 13, gp_handler);
	idt_set(idt, 14, pf_handler);
	lidt(idt, IDT_VECTORS);

	map_window();
	if (!string_io())
		return 1;

	puts("hostile_io: an IN or OUT at every port 0-0xffff\n");
	/* Loopback: the sweep's byte to the UART stays off the console. */
	outb(SERIAL_PORT + UART_MCR, UART_MCR_LOOP | UART_MCR_OUT2);
	port_sweep();
	serial_reinit();
	if (!check(1, "port sweep done, console back"))
		return 2;

	if (!device_mmio())
		return 3;
	if (!wide_mmio())
		return 4;
	if (!check(f_count == 4, "no other fault"))
		return 5;
	puts("hostile_io: all checks passed\n");
	return 0;
}
