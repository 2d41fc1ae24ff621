// SPDX-License-Identifier: Apache-2.0
/*
 * bench/vs-qemu's trivial guest: print one line on the 16550 at 0x3f8 and
 * end the VM with TRIVIAL_STATUS, under ember or QEMU's microvm machine
 * (start.S has the two entries).  It reports the status to both VMMs' exit
 * devices; each ignores the other's:
 * - ember's exit-status device, a 32-bit store to MMIO 0xd0001000
 *   (guest-init/protocol.h): ember exits with status & 0xff at once;
 *   QEMU has nothing there and drops the store;
 * - QEMU's isa-debug-exit at port 0xf4 (-device
 *   isa-debug-exit,iobase=0xf4,iosize=4): QEMU exits with
 *   (status << 1) | 1; ember never gets this far.
 * Nonzero on purpose: neither 0 nor 1 can be mistaken for a VMM's own
 * success or failure.
 */
#include <stdint.h>

#define TRIVIAL_STATUS	21 /* ember exits 21, QEMU (21 << 1) | 1 = 43 */
#define SERIAL_PORT	0x3f8
#define SERIAL_LSR	(SERIAL_PORT + 5)
#define SERIAL_LSR_THRE 0x20
#define EMBER_EXIT_GPA	0xd0001000UL
#define QEMU_DEBUG_EXIT 0xf4

int guest_main(void);
void guest_exit(uint32_t status) __attribute__((noreturn));

static inline void outb(uint16_t port, uint8_t v)
{
	asm volatile("outb %0, %1" : : "a"(v), "Nd"(port));
}

static inline void outl(uint16_t port, uint32_t v)
{
	asm volatile("outl %0, %1" : : "a"(v), "Nd"(port));
}

static inline uint8_t inb(uint16_t port)
{
	uint8_t v;

	asm volatile("inb %1, %0" : "=a"(v) : "Nd"(port));
	return v;
}

static void serial_puts(const char *s)
{
	for (; *s; s++) {
		while (!(inb(SERIAL_LSR) & SERIAL_LSR_THRE))
			;
		outb(SERIAL_PORT, (uint8_t)*s);
	}
}

int guest_main(void)
{
	serial_puts("hello from the trivial guest\n");
	return TRIVIAL_STATUS;
}

void guest_exit(uint32_t status)
{
	*(volatile uint32_t *)EMBER_EXIT_GPA = status;
	outl(QEMU_DEBUG_EXIT, status);
	for (;;)
		asm volatile("cli; hlt");
}
