/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A freestanding runtime for ember's tiny test guests: port I/O, the
 * serial console, the exit-status device and a minimal IDT.  Each guest is
 * one .c file linked with start.S (which calls guest_main() and hands its
 * return value to the exit-status device) and guest.ld (everything at
 * 16 MiB).  ember enters at CPL0 in long mode with the first 4 GiB
 * identity-mapped (2 MiB pages), CS 0x10, an empty IDT, interrupts off and
 * CR4 = PAE only (boot/cpu_tables.c).
 *
 * Conventions: a guest prints each check on the serial port and returns 0
 * on success or a distinct small code naming the failed step.  An
 * unexpected exception ends the VM with status EXIT_EXCEPTION + vector.
 */
#ifndef EMBER_TESTS_GUEST_H
#define EMBER_TESTS_GUEST_H

#include <stdint.h>

typedef uint8_t u8;
typedef uint16_t u16;
typedef uint32_t u32;
typedef uint64_t u64;

#define SERIAL_PORT	0x3f8
#define SERIAL_LSR	(SERIAL_PORT + 5)
#define SERIAL_LSR_THRE 0x20
#define EXIT_STATUS_GPA 0xd0001000UL /* guest-init/protocol.h */
#define EXIT_EXCEPTION	100 /* + vector */
#define KERNEL_CS	0x10 /* ember's boot GDT */
#define IDT_VECTORS	256

/* Architectural bits the guests set or test (SDM vol. 3, 2.5; vol. 2 CPUID). */
#define CR0_MP	       (1UL << 1)
#define CR0_EM	       (1UL << 2)
#define CR0_TS	       (1UL << 3)
#define CR0_WP	       (1UL << 16)
#define CR4_OSFXSR     (1UL << 9)
#define CR4_OSXMMEXCPT (1UL << 10)
#define CR4_OSXSAVE    (1UL << 18)
#define CPUID1_XSAVE   (1U << 26)
#define CPUID1_AVX     (1U << 28)
#define PTE_P	       0x1UL
#define PTE_RW	       0x2UL
#define PTE_PS	       0x80UL /* a 2 MiB page in a PD entry */
#define PTE_ADDR       0x000ffffffffff000UL
#define PAGE	       0x1000UL

static inline void outb(u16 port, u8 v)
{
	asm volatile("outb %0, %1" : : "a"(v), "Nd"(port));
}

static inline u8 inb(u16 port)
{
	u8 v;

	asm volatile("inb %1, %0" : "=a"(v) : "Nd"(port));
	return v;
}

static inline void serial_putc(char c)
{
	while (!(inb(SERIAL_LSR) & SERIAL_LSR_THRE))
		;
	outb(SERIAL_PORT, (u8)c);
}

static inline void puts(const char *s)
{
	for (; *s; s++)
		serial_putc(*s);
}

/* "0x" and 1-16 hex digits, no leading zeros. */
static inline void put_hex(u64 v)
{
	static const char digits[] = "0123456789abcdef";
	int shift = 60;

	puts("0x");
	while (shift > 0 && !(v >> shift))
		shift -= 4;
	for (; shift >= 0; shift -= 4)
		serial_putc(digits[(v >> shift) & 0xf]);
}

static inline void halt_forever(void)
{
	for (;;)
		asm volatile("cli; hlt");
}

/* ember exits with @status & 0xff at this very store. */
static inline __attribute__((noreturn)) void exit_status(u32 status)
{
	*(volatile u32 *)EXIT_STATUS_GPA = status;
	halt_forever();
	__builtin_unreachable();
}

/* Print "ok - what" or "FAIL - what" and say whether @cond held. */
static inline int check(int cond, const char *what)
{
	puts(cond ? "ok - " : "FAIL - ");
	puts(what);
	serial_putc('\n');
	return cond;
}

/* 64-bit interrupt gate (SDM vol. 3A 6.14.1). */
struct idt_gate {
	u16 offset0;
	u16 selector;
	u8 ist;
	u8 type_attr;
	u16 offset1;
	u32 offset2;
	u32 reserved;
} __attribute__((packed));

#define IDT_INTERRUPT_GATE 0x8e /* present, DPL 0, type 14 */

static inline void idt_set(struct idt_gate *idt, unsigned int vec,
			   void (*handler)(void))
{
	u64 a = (u64)handler;

	idt[vec] = (struct idt_gate){
		.offset0 = (u16)a,
		.selector = KERNEL_CS,
		.type_attr = IDT_INTERRUPT_GATE,
		.offset1 = (u16)(a >> 16),
		.offset2 = (u32)(a >> 32),
	};
}

static inline void lidt(const struct idt_gate *idt, unsigned int nr)
{
	struct {
		u16 limit;
		u64 base;
	} __attribute__((packed))
	d = { (u16)(nr * sizeof(*idt) - 1), (u64)idt };

	asm volatile("lidt %0" : : "m"(d) : "memory");
}

/* start.S: a stub per vector 0-31 that calls guest_exception(). */
extern void (*const guest_exc_stubs[32])(void);

/*
 * Point vectors 0-31 of @idt at the catch-all stubs; the guest then
 * overrides the vectors it expects with idt_set() and loads it with lidt().
 */
static inline void idt_init(struct idt_gate *idt)
{
	unsigned int i;

	for (i = 0; i < 32; i++)
		idt_set(idt, i, guest_exc_stubs[i]);
}

/*
 * The catch-all: print the exception and end the VM with its status.
 * Defined here, not static, because start.S calls it; each guest is one
 * .c file, so the header is included once per image.
 */
void guest_exception(u64 vec, u64 error_code, u64 rip);
void guest_exception(u64 vec, u64 error_code, u64 rip)
{
	puts("unexpected exception: vector ");
	put_hex(vec);
	puts(", error code ");
	put_hex(error_code);
	puts(", rip ");
	put_hex(rip);
	serial_putc('\n');
	exit_status(EXIT_EXCEPTION + (u32)vec);
}

int guest_main(void);

/*
 * Byte loops through volatile pointers, so the compiler emits neither
 * memset/memcpy calls (there is no libc) nor vector code (which a PVM host
 * cannot emulate at CPL0).
 */
static inline void fill(u8 *dst, u8 v, u32 len)
{
	volatile u8 *d = dst;
	u32 i;

	for (i = 0; i < len; i++)
		d[i] = v;
}

static inline void copy(u8 *dst, const u8 *src, u32 len)
{
	volatile u8 *d = dst;
	u32 i;

	for (i = 0; i < len; i++)
		d[i] = src[i];
}

static inline int same(const u8 *a, const u8 *b, u32 len)
{
	const volatile u8 *x = a;
	u32 i;

	for (i = 0; i < len; i++)
		if (x[i] != b[i])
			return 0;
	return 1;
}

/*
 * Little-endian u64 in memory the CPU (xsave, emulated or not) writes:
 * byte by byte through volatile, so the compiler assumes nothing.
 */
static inline void put64(u8 *p, u64 v)
{
	volatile u8 *d = p;
	int i;

	for (i = 0; i < 8; i++)
		d[i] = (u8)(v >> (8 * i));
}

static inline u64 get64(const u8 *p)
{
	const volatile u8 *s = p;
	u64 v = 0;
	int i;

	for (i = 7; i >= 0; i--)
		v = v << 8 | s[i];
	return v;
}

#endif /* EMBER_TESTS_GUEST_H */
