/* SPDX-License-Identifier: Apache-2.0 */
/*
 * devices/: the device models (virtq, the virtio-mmio transport, virtio
 * blk/net/vsock/rng, the 16550 UART, i8042, CMOS, boot timer and exit
 * status) and the ground floor every lower layer stands on: guest memory
 * and its one checked translation (guest_mem.h), little-endian values
 * (le.h) and whole-range file I/O (fileio.h).  A file here includes only
 * libc, other files of devices/ and guest-init/protocol.h: never vmm/,
 * boot/ or snapshot/, never <linux/kvm.h>, no ioctl.  A device knows no
 * host file format: what backs it (a disk image, a tap, a Unix socket)
 * comes as an ops table from vmm/dev/ and vmm/backends/.
 *
 * The common device header.  A device model embeds struct device, fills an
 * ops table and is registered on a bus (vmm/bus.h) at an address range.
 * Devices never see KVM: they raise interrupts through struct irq_line and
 * reach guest memory only through guest_mem.h.
 */
#ifndef EMBER_DEVICES_DEVICE_H
#define EMBER_DEVICES_DEVICE_H

#include <pthread.h>
#include <stdint.h>

struct device;

/* An interrupt line: set(opaque, gsi, level) drives IOAPIC pin @gsi. */
struct irq_line {
	void (*set)(void *opaque, unsigned int gsi, int level);
	void *opaque;
	unsigned int gsi;
};

/* Why the VM should stop, as a device reports it (vmm/vm.c acts). */
enum device_event {
	DEVICE_EVENT_RESET = 1, /* guest asked for a reset (i8042) */
	DEVICE_EVENT_EXIT_STATUS, /* guest reported a status */
	DEVICE_EVENT_BOOT_TIMER, /* guest init started */
};

/* Where a device reports VM-level events; called with the device locked. */
struct device_events {
	void (*notify)(void *opaque, enum device_event ev, uint32_t value);
	void *opaque;
};

/*
 * What a device did, for the metrics: counters since it was created (the
 * metrics module turns them into deltas).  Updated under the device's
 * lock; read on the event thread.
 */
struct dev_stats {
	uint64_t requests; /* requests (or packets) served */
	uint64_t read_bytes; /* bytes that went to the guest */
	uint64_t write_bytes; /* bytes that came from the guest */
	uint64_t errors; /* requests answered with an error */
	uint64_t throttled; /* times a rate limiter held a request back */
};

struct device_ops {
	const char *name;
	/*
	 * Access of @len (1, 2, 4 or 8) bytes at @offset from the start of
	 * the registered range; @data is little-endian guest data.  Reads of
	 * registers that do not exist return zeroes; writes are dropped.
	 * Called with d->lock held.
	 */
	void (*read)(struct device *d, uint64_t offset, void *data,
		     uint32_t len);
	void (*write)(struct device *d, uint64_t offset, const void *data,
		      uint32_t len);
	/* Frees what the device allocated (not the struct itself). */
	void (*destroy)(struct device *d);
};

struct device {
	const struct device_ops *ops;
	pthread_mutex_t lock; /* serialises ops against each other */
};

#endif /* EMBER_DEVICES_DEVICE_H */
