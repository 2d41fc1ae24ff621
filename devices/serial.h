/* SPDX-License-Identifier: Apache-2.0 */
/*
 * 16550A UART (the PC's COM1 at 0x3f8, IRQ 4): enough of the register set
 * for Linux's 8250 driver and console, with a receive FIFO fed by the
 * event thread.  Reference: National Semiconductor PC16550D data sheet.
 */
#ifndef EMBER_DEVICES_SERIAL_H
#define EMBER_DEVICES_SERIAL_H

#include <stddef.h>
#include <stdint.h>

#include "device.h"

#define SERIAL_COM1_PORT 0x3f8
#define SERIAL_PORT_LEN	 8

/*
 * serial__create() - a UART whose transmitted bytes go to @out_fd (not
 * owned; -1 discards them) and whose interrupt is @irq.
 * Returns the device (free with serial__destroy) or NULL without memory.
 */
struct device *serial__create(int out_fd, struct irq_line irq);

/*
 * serial__input() - queue @len received bytes (host -> guest), as many as
 * fit in the 64-byte receive FIFO, and raise the interrupt.  Nothing is
 * queued while the guest has the receive interrupt disabled (no tty open
 * yet) or the UART in loopback: the caller keeps those bytes and retries.
 * Takes the device lock.  Returns the number of bytes queued.
 */
size_t serial__input(struct device *d, const void *buf, size_t len);

/* serial__destroy() - free a device from serial__create() (NULL is ok). */
void serial__destroy(struct device *d);

#endif /* EMBER_DEVICES_SERIAL_H */
