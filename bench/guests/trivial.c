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
#include "../../tests/guests/guest.h" /* port I/O, the serial console */

#define TRIVIAL_STATUS	21 /* ember exits 21, QEMU (21 << 1) | 1 = 43 */
#define QEMU_DEBUG_EXIT 0xf4

void guest_exit(u32 status) __attribute__((noreturn));

static inline void outl(u16 port, u32 v)
{
	asm volatile("outl %0, %1" : : "a"(v), "Nd"(port));
}

int guest_main(void)
{
	puts("hello from the trivial guest\n");
	return TRIVIAL_STATUS;
}

void guest_exit(u32 status)
{
	*(volatile u32 *)EXIT_STATUS_GPA = status;
	outl(QEMU_DEBUG_EXIT, status);
	halt_forever();
	__builtin_unreachable();
}
