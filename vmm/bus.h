/* SPDX-License-Identifier: Apache-2.0 */
/*
 * PIO and MMIO dispatch: a sorted table of non-overlapping address ranges,
 * each owned by a device.  Registration happens before vCPUs start; lookups
 * afterwards are lock-free (the table never changes while vCPUs run).
 */
#ifndef EMBER_VMM_BUS_H
#define EMBER_VMM_BUS_H

#include <stdbool.h>
#include <stdint.h>

#include "../devices/device.h"

#define BUS_MAX_RANGES 64

struct bus_range {
	uint64_t base, len;
	struct device *dev;
};

struct bus {
	const char *name; /* "pio" or "mmio", for messages */
	struct bus_range range[BUS_MAX_RANGES];
	unsigned int nr;
};

/*
 * bus__register() - route [@base, @base + @len) to @dev (not owned).
 * Returns 0, -EINVAL for len 0 or overflow, -EEXIST if it overlaps a
 * registered range, -ENOSPC if the table is full.
 */
int bus__register(struct bus *b, uint64_t base, uint64_t len,
		  struct device *dev);

/*
 * bus__access() - perform a guest access of @len bytes at @addr, under the
 * device's lock.  Reads fill @data.  Returns 0, or -ENOENT if no device
 * covers the whole access (then reads return all ones in @data).
 */
int bus__access(const struct bus *b, uint64_t addr, void *data, uint32_t len,
		bool is_write);

#endif /* EMBER_VMM_BUS_H */
