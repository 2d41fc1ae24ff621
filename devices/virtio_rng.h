/* SPDX-License-Identifier: Apache-2.0 */
/*
 * virtio entropy device (virtio 1.2 spec, 5.4 "Entropy Device"): one
 * request queue; the driver posts device-writable buffers and the device
 * fills them with bytes from the host's getrandom(2).  Carried by the
 * virtio-mmio transport (virtio_mmio.h).
 */
#ifndef EMBER_DEVICES_VIRTIO_RNG_H
#define EMBER_DEVICES_VIRTIO_RNG_H

#include "virtio_mmio.h"

#define VIRTIO_ID_RNG 4

/*
 * At most this many bytes go into one request (5.4.6: the device MAY
 * use less than the whole buffer), which bounds the host work a single
 * guest buffer can ask for.
 */
#define VIRTIO_RNG_MAX_BYTES 4096

struct virtio_rng;

/*
 * virtio_rng__create() - an entropy device on guest memory @m (not owned;
 * must outlive the device) raising interrupt @irq.  Register the
 * transport (virtio_rng__transport()) on the MMIO bus.
 * Returns the device (free with virtio_rng__destroy()), or NULL with a
 * NULL @m or without memory.
 */
struct virtio_rng *virtio_rng__create(const struct guest_mem *m,
				      struct irq_line irq);

/*
 * virtio_rng__transport() - the device's virtio-mmio transport, owned by
 * @rng: its .dev goes on the MMIO bus, its queue 0 notification (an
 * ioeventfd on VIRTIO_MMIO_QUEUE_NOTIFY) to virtio_mmio__notify().
 */
struct virtio_mmio *virtio_rng__transport(struct virtio_rng *rng);

/* virtio_rng__stats() - requests served and random bytes given so far. */
void virtio_rng__stats(struct virtio_rng *rng, struct dev_stats *out);

/*
 * virtio_rng__destroy() - free a device from virtio_rng__create() (NULL
 * is a no-op).  It must be off the bus and idle.
 */
void virtio_rng__destroy(struct virtio_rng *rng);

#endif /* EMBER_DEVICES_VIRTIO_RNG_H */
