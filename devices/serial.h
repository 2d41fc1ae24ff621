/* SPDX-License-Identifier: Apache-2.0 */
/*
 * 16550A UART (the PC's COM1 at 0x3f8, IRQ 4): enough of the register set
 * for Linux's 8250 driver and console, with a receive FIFO fed by the
 * event thread.  Reference: National Semiconductor PC16550D data sheet.
 */
#ifndef EMBER_DEVICES_SERIAL_H
#define EMBER_DEVICES_SERIAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "device.h"

#define SERIAL_COM1_PORT 0x3f8
#define SERIAL_PORT_LEN	 8

/*
 * The host side of a UART.  @tx gets each byte the guest transmits, on the
 * vCPU thread that wrote it, with the device lock held (it may wait for a
 * slow reader; NULL drops the bytes).  @now_ns is a monotonic clock in
 * nanoseconds for the receive pacing (NULL: CLOCK_MONOTONIC; tests pass
 * their own).
 */
struct serial_host {
	void (*tx)(void *opaque, uint8_t byte);
	uint64_t (*now_ns)(void *opaque);
	void *opaque;
};

/*
 * serial__create() - a UART with host side @host (copied) whose interrupt
 * is @irq.  Returns the device (free with serial__destroy) or NULL without
 * memory.
 */
struct device *serial__create(const struct serial_host *host,
			      struct irq_line irq);

/*
 * Receive pacing, so that no input stream can starve the guest on any
 * host: a byte enters the receive FIFO no faster than the line carries it
 * at the rate the guest programmed (divisor latch and LCR: about 11.5 KB/s
 * at 115200 8N1; up to SERIAL_RX_BURST bytes at once after the line was
 * idle), and once the guest has emptied the FIFO, the next byte waits at
 * least as long as the guest took from the first byte's arrival to the
 * empty FIFO, which leaves the guest at least half of its time whatever
 * its interrupt handling costs (an emulated guest kernel pays
 * milliseconds per interrupt).  Nothing is ever dropped: the sender
 * keeps what does not fit (hardware flow control, in effect).
 */
#define SERIAL_RX_BURST 16

/*
 * serial__input() - queue up to @len received bytes (host -> guest) as
 * the pacing above allows, and raise the interrupt.  Nothing is queued
 * until the guest's tty is open, that is while the guest has RTS low
 * (MCR bit 1: its receiver is not ready, as RTS/CTS flow control reads
 * it) or the receive interrupt disabled, nor while the UART is in
 * loopback.  The caller keeps the bytes not taken and calls
 * again after *@retry_ns nanoseconds: the time until the line can carry
 * the next byte, or 0 when the guest must act first (open its tty, read
 * the FIFO), which the caller polls for.  Takes the device lock.
 * Returns the number of bytes queued.
 */
size_t serial__input(struct device *d, const void *buf, size_t len,
		     uint64_t *retry_ns);

/*
 * The UART's registers and receive FIFO, as a snapshot holds them (the
 * host side and the pacing clock are not state: they start afresh).
 */
#define SERIAL_RX_FIFO 64 /* bytes, as the model's FIFO */
struct serial_state {
	uint8_t ier, lcr, mcr, scr, fcr, dll, dlm;
	bool thr_ipending;
	uint8_t rx[SERIAL_RX_FIFO]; /* the oldest byte first */
	unsigned int rx_count; /* 0..SERIAL_RX_FIFO */
};

/* serial__get_state() - @d's state into @s.  Takes the device lock. */
void serial__get_state(struct device *d, struct serial_state *s);

/*
 * serial__set_state() - @d takes the state @s (from a snapshot: checked,
 * -EINVAL for an rx_count past the FIFO) and drives its interrupt line to
 * match.  Takes the device lock.  Returns 0 or -EINVAL (nothing changed).
 */
int serial__set_state(struct device *d, const struct serial_state *s);

/* serial__destroy() - free a device from serial__create() (NULL is ok). */
void serial__destroy(struct device *d);

#endif /* EMBER_DEVICES_SERIAL_H */
