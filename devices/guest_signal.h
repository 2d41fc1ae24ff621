/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Two one-page MMIO devices through which the guest signals ember
 * (addresses in guest-init/protocol.h):
 * - the boot timer (Firecracker's): a byte write of EMBER_BOOT_TIMER_MAGIC
 *   at offset 0 reports DEVICE_EVENT_BOOT_TIMER;
 * - the exit status: a 4-byte write at offset 0 reports
 *   DEVICE_EVENT_EXIT_STATUS with the value.
 * Other accesses are ignored; reads return 0.
 */
#ifndef EMBER_DEVICES_GUEST_SIGNAL_H
#define EMBER_DEVICES_GUEST_SIGNAL_H

#include "device.h"

/* Returns the device or NULL without memory; free with guest_signal__destroy. */
struct device *guest_signal__boot_timer(struct device_events ev);
struct device *guest_signal__exit_status(struct device_events ev);
void guest_signal__destroy(struct device *d);

#endif /* EMBER_DEVICES_GUEST_SIGNAL_H */
