/* SPDX-License-Identifier: Apache-2.0 */
/*
 * i8042 keyboard controller, reduced to its reset line: the command 0xfe
 * ("pulse output line 0", how Linux resets with reboot=k) written to the
 * command port becomes DEVICE_EVENT_RESET.  Status reads say "both buffers
 * empty", so the kernel's kb_wait() never spins.
 */
#ifndef EMBER_DEVICES_I8042_H
#define EMBER_DEVICES_I8042_H

#include "device.h"

#define I8042_DATA_PORT	   0x60
#define I8042_COMMAND_PORT 0x64
#define I8042_CMD_RESET	   0xfe

/*
 * i8042__create() - the controller; register it at I8042_DATA_PORT and at
 * I8042_COMMAND_PORT (1 byte each): it tells them apart by the range it is
 * reached through, so register the command port with i8042__command().
 * Returns the device or NULL without memory.  Free with i8042__destroy().
 */
struct device *i8042__create(struct device_events ev);
/* i8042__command() - the device to register at I8042_COMMAND_PORT. */
struct device *i8042__command(struct device *d);
void i8042__destroy(struct device *d);

#endif /* EMBER_DEVICES_I8042_H */
