// SPDX-License-Identifier: Apache-2.0
/*
 * A guest for snapshot tests: it fills 4 MiB of RAM with a pattern, says
 * "ready" and polls the UART for one byte, counting the polls.  The test
 * snapshots it while it polls and restores it in another ember process,
 * whose stdin gives the byte: the guest then checks the byte, its pattern
 * and that its registers and counter carried on, and exits 0.
 */
#include "guest.h"

#define PATTERN_GPA   0x2000000UL /* 32 MiB: past the image at 16 MiB */
#define PATTERN_WORDS (4UL << 20) / 8
#define UART_IER      (SERIAL_PORT + 1)
#define UART_IER_RDI  0x01
#define UART_MCR      (SERIAL_PORT + 4)
#define UART_MCR_RTS  0x02
#define UART_LSR_DR   0x01

static u64 pattern(u64 i)
{
	return (i + 1) * 0x9e3779b97f4a7c15UL;
}

int guest_main(void)
{
	volatile u64 *p = (volatile u64 *)PATTERN_GPA;
	u64 i, polls = 0, bad = 0;
	int ok = 1;
	u8 c;

	for (i = 0; i < PATTERN_WORDS; i++)
		p[i] = pattern(i);
	/*
	 * The UART takes host input only once the guest's receiver is ready:
	 * RTS raised and the receive interrupt enabled, as a tty's open does.
	 */
	outb(UART_MCR, UART_MCR_RTS);
	outb(UART_IER, UART_IER_RDI);
	puts("ready\n");
	while (!(inb(SERIAL_LSR) & UART_LSR_DR))
		polls++;
	c = inb(SERIAL_PORT);
	for (i = 0; i < PATTERN_WORDS; i++)
		bad += p[i] != pattern(i);
	ok &= check(c == 'g', "the byte from the restored VM's stdin");
	ok &= check(bad == 0, "4 MiB of RAM as written before the snapshot");
	ok &= check(polls > 0, "the poll counter carried on");
	puts("polls ");
	put_hex(polls);
	serial_putc('\n');
	return ok ? 0 : 1;
}
