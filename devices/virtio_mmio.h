/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The virtio-mmio transport, version 2 (virtio 1.2 spec, 4.2 "Virtio Over
 * MMIO"): the register file a driver programs, feature negotiation, the
 * device status state machine (2.1), queue set-up, notifications and the
 * interrupt status.  A device model (virtio_blk.c, virtio_rng.c, ...)
 * plugs in through struct virtio_dev_ops and never sees the registers; the
 * transport never sees the device's requests.  Pure: no ioctl; interrupts
 * leave through struct irq_line, guest memory through guest_mem.h.
 */
#ifndef EMBER_DEVICES_VIRTIO_MMIO_H
#define EMBER_DEVICES_VIRTIO_MMIO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "device.h"
#include "virtq.h"

#define VIRTIO_MMIO_MAX_QUEUES	 8
#define VIRTIO_MMIO_MAGIC	 0x74726976 /* "virt" */
#define VIRTIO_MMIO_VERSION	 2
#define VIRTIO_MMIO_VENDOR	 0x52424d45 /* "EMBR" */
#define VIRTIO_MMIO_QUEUE_NOTIFY 0x050 /* register offset, for ioeventfd */
#define VIRTIO_MMIO_CONFIG	 0x100 /* device config space starts here */

/* Interrupt status bits (4.2.2). */
#define VIRTIO_MMIO_INT_VRING  1
#define VIRTIO_MMIO_INT_CONFIG 2

/* Device status bits (2.1). */
#define VIRTIO_STATUS_ACKNOWLEDGE 1
#define VIRTIO_STATUS_DRIVER	  2
#define VIRTIO_STATUS_DRIVER_OK	  4
#define VIRTIO_STATUS_FEATURES_OK 8
#define VIRTIO_STATUS_NEEDS_RESET 64
#define VIRTIO_STATUS_FAILED	  128

/* Transport feature bits (6 "Reserved Feature Bits"). */
#define VIRTIO_F_INDIRECT_DESC 28
#define VIRTIO_F_EVENT_IDX     29
#define VIRTIO_F_VERSION_1     32

struct virtio_mmio;

/* What a device model provides; every op is called with the lock held. */
struct virtio_dev_ops {
	const char *name;
	uint32_t device_id; /* 5 "Device Types": 2 blk, 4 rng, ... */
	unsigned int nr_queues; /* 1..VIRTIO_MMIO_MAX_QUEUES */
	/*
	 * Device-specific feature bits offered; the transport adds
	 * VERSION_1, EVENT_IDX and INDIRECT_DESC.
	 */
	uint64_t (*features)(void *opaque);
	/* Config space access at @off (from 0x100) of @len bytes. */
	void (*config_read)(void *opaque, uint64_t off, void *data,
			    uint32_t len);
	void (*config_write)(void *opaque, uint64_t off, const void *data,
			     uint32_t len);
	/*
	 * Queue @idx has new buffers: process them with virtq__pop/push on
	 * &t->vq[idx], then call virtio_mmio__used(t, idx).
	 */
	void (*notify)(void *opaque, struct virtio_mmio *t, unsigned int idx);
	/* The driver reset the device (status 0): drop in-flight state. */
	void (*reset)(void *opaque);
};

struct virtio_mmio {
	struct device dev; /* first member; on the MMIO bus */
	const struct virtio_dev_ops *ops;
	void *opaque; /* the device model */
	const struct guest_mem *mem;
	struct irq_line irq;
	uint32_t status;
	uint32_t device_features_sel, driver_features_sel;
	uint64_t driver_features; /* what the driver accepted */
	uint32_t queue_sel;
	uint32_t interrupt_status;
	uint32_t config_generation;
	struct virtq vq[VIRTIO_MMIO_MAX_QUEUES];
};

/*
 * virtio_mmio__init() - set up transport @t (caller-owned, zeroed or not)
 * for the device @ops/@opaque, with guest memory @m (not owned; must
 * outlive @t) and interrupt @irq (a level: high while InterruptStatus is
 * not 0, driven on changes only).  The caller then registers @t->dev on
 * the MMIO bus at a LAYOUT_VIRTIO_MMIO_GPA slot of LAYOUT_VIRTIO_MMIO_SIZE
 * bytes; @t->dev.ops has no .destroy (the device model owns @t).
 * Returns 0, -EINVAL for bad @ops (NULL, no notify, nr_queues out of
 * range), or a negative errno from pthread_mutex_init().
 */
int virtio_mmio__init(struct virtio_mmio *t, const struct virtio_dev_ops *ops,
		      void *opaque, const struct guest_mem *m,
		      struct irq_line irq);

/* virtio_mmio__destroy() - release what init created (the lock). */
void virtio_mmio__destroy(struct virtio_mmio *t);

/*
 * virtio_mmio__notify() - queue @idx was notified (a QueueNotify write
 * arriving through an ioeventfd on the event thread): takes the lock and
 * calls ops->notify if the device is live (FEATURES_OK and DRIVER_OK set,
 * NEEDS_RESET and FAILED clear, queue @idx ready).  Out-of-range @idx is
 * ignored.  A QueueNotify register write follows the same rules (under
 * the lock the bus already holds).
 */
void virtio_mmio__notify(struct virtio_mmio *t, unsigned int idx);

/*
 * virtio_mmio__live() - may the device use queue @idx: does it exist and
 * is it ready, with FEATURES_OK and DRIVER_OK set and NEEDS_RESET and
 * FAILED clear?  Lock held.
 */
bool virtio_mmio__live(const struct virtio_mmio *t, unsigned int idx);

/*
 * virtio_mmio__config_copy() - a config_read op's answer from the
 * device's config image @cfg of @size bytes: the bytes of [@off,
 * @off + @len) that fall inside it into @data.  The transport zeroed
 * @data, so what lies past the image reads as zeroes.
 */
void virtio_mmio__config_copy(const void *cfg, size_t size, uint64_t off,
			      void *data, uint32_t len);

/*
 * virtio_mmio__used() - the device pushed buffers on queue @idx: raise
 * the vring interrupt if virtq__needs_interrupt() says so.  Lock held.
 */
void virtio_mmio__used(struct virtio_mmio *t, unsigned int idx);

/*
 * virtio_mmio__needs_reset() - the driver broke the device's rules (a bad
 * ring, 2.1.2): set DEVICE_NEEDS_RESET and raise the config interrupt;
 * the device then ignores notifications until the driver resets it.
 * Lock held.
 */
void virtio_mmio__needs_reset(struct virtio_mmio *t);

/*
 * virtio_mmio__config_changed() - the device changed its config space
 * (4.2.2: a new ConfigGeneration, the configuration-change interrupt).
 * Lock held.
 */
void virtio_mmio__config_changed(struct virtio_mmio *t);

/*
 * virtio_mmio__feature() - was feature bit @bit negotiated (offered,
 * accepted by the driver, and FEATURES_OK set)?
 */
bool virtio_mmio__feature(const struct virtio_mmio *t, unsigned int bit);

/*
 * The transport's state as a snapshot holds it: the registers the driver
 * programmed and each queue's layout and progress (struct virtq).
 */
struct virtio_mmio_state {
	uint32_t status;
	uint32_t device_features_sel, driver_features_sel;
	uint64_t driver_features;
	uint32_t queue_sel;
	uint32_t interrupt_status;
	uint32_t config_generation;
	unsigned int nr_queues; /* the device's; must match on restore */
	struct virtq vq[VIRTIO_MMIO_MAX_QUEUES];
};

/* virtio_mmio__get_state() - @t's state into @s.  Takes the lock. */
void virtio_mmio__get_state(struct virtio_mmio *t, struct virtio_mmio_state *s);

/*
 * virtio_mmio__set_state() - @t takes the state @s from a snapshot, which
 * is checked as if the driver had written it (virtio 1.2, 4.2.3): the
 * queue count matches the device, accepted features are a subset of
 * those offered, status bits are known ones, interrupt status holds only
 * VRING/CONFIG, each queue's size is a power of two up to VIRTQ_MAX_SIZE
 * (or 0 when never set), and a ready queue's rings lie in guest RAM with
 * their alignment (virtq__valid()).  The interrupt line is driven to
 * match.  Takes the lock.  Returns 0, or -EINVAL with nothing changed.
 */
int virtio_mmio__set_state(struct virtio_mmio *t,
			   const struct virtio_mmio_state *s);

/*
 * virtio_mmio__kick_all() - after a restore: every live queue is processed
 * once, as if the driver had notified it (a notification that was pending
 * in the old process is not lost).  Takes the lock.
 */
void virtio_mmio__kick_all(struct virtio_mmio *t);

#endif /* EMBER_DEVICES_VIRTIO_MMIO_H */
