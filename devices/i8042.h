/* SPDX-License-Identifier: Apache-2.0 */
/*
 * i8042 keyboard controller, reduced to its reset line and Ctrl-Alt-Del:
 * the command 0xfe ("pulse output line 0", how Linux resets with reboot=k)
 * written to the command port becomes DEVICE_EVENT_RESET; Ctrl-Alt-Del
 * (Firecracker's SendCtrlAltDel) puts the keys' scancodes (set 2) in the
 * output buffer, read from the data port, with an edge on IRQ 1 per byte.
 * The status register says "input empty", and "output full" while bytes
 * wait, so the kernel's kb_wait() never spins.
 */
#ifndef EMBER_DEVICES_I8042_H
#define EMBER_DEVICES_I8042_H

#include <stdint.h>

#include "device.h"

#define I8042_DATA_PORT	   0x60
#define I8042_COMMAND_PORT 0x64
#define I8042_CMD_RESET	   0xfe

/*
 * i8042__create() - the controller, reporting to @ev, raising @irq (IRQ 1); register it at I8042_DATA_PORT and at
 * I8042_COMMAND_PORT (1 byte each): it tells them apart by the range it is
 * reached through, so register the command port with i8042__command().
 * Returns the device or NULL without memory.  Free with i8042__destroy().
 */
struct device *i8042__create(struct device_events ev, struct irq_line irq);
/* i8042__command() - the device to register at I8042_COMMAND_PORT. */
struct device *i8042__command(struct device *d);

/*
 * i8042__ctrl_alt_del() - queue Ctrl, Alt and Delete pressed and released
 * (set 2 scancodes) for the guest.  Takes the device's queue lock.
 * Returns 0, or -1 when the output buffer has no room for them.
 */
int i8042__ctrl_alt_del(struct device *d);

/*
 * The bytes queued for the guest, as a snapshot holds them: @len (0 to
 * I8042_QUEUE_BYTES) bytes of @out, oldest first.
 */
#define I8042_QUEUE_BYTES 16
struct i8042_state {
	uint8_t out[I8042_QUEUE_BYTES];
	unsigned int len;
};

/* i8042__get_state() - @d's queue into @s.  Takes the queue lock. */
void i8042__get_state(struct device *d, struct i8042_state *s);

/*
 * i8042__set_state() - @d's queue becomes @s's (a @len past the queue is
 * -EINVAL, nothing changed); raises IRQ 1 when bytes wait.  Returns 0 or
 * -EINVAL.
 */
int i8042__set_state(struct device *d, const struct i8042_state *s);

/* i8042__destroy() - free the controller (NULL is fine). */
void i8042__destroy(struct device *d);

#endif /* EMBER_DEVICES_I8042_H */
