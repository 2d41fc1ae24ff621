/* SPDX-License-Identifier: Apache-2.0 */
/*
 * MC146818 CMOS real-time clock at ports 0x70/0x71, read-only: the time
 * is the host's UTC in BCD, 24-hour mode, and status A never shows
 * "update in progress", so the kernel's RTC read does not busy-wait
 * (PLATFORM.md: that wait is slow where kernel mode is emulated).
 */
#ifndef EMBER_DEVICES_CMOS_H
#define EMBER_DEVICES_CMOS_H

#include <stdint.h>

#include "device.h"

#define CMOS_PORT     0x70
#define CMOS_PORT_LEN 2

/* Returns the device or NULL without memory; free with cmos__destroy(). */
struct device *cmos__create(void);
void cmos__destroy(struct device *d);

/*
 * The register index the guest last selected (port 0x70), all the state a
 * snapshot needs: the clock is read from the host.  set masks it to 7 bits.
 */
uint8_t cmos__get_index(struct device *d);
void cmos__set_index(struct device *d, uint8_t index);

#endif /* EMBER_DEVICES_CMOS_H */
