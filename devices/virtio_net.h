/* SPDX-License-Identifier: Apache-2.0 */
/*
 * virtio network device (virtio 1.2 spec, 5.1 "Network Device"), the pure
 * device side: one receive queue and one transmit queue (no control
 * queue, no multiqueue), the MAC and link status in config space,
 * mergeable receive buffers, and the checksum / TSO offloads its backend
 * says the host side supports.  No tap here: frames leave through
 * struct virtio_net_backend_ops (vmm/backends/ holds the tap) and arrive
 * through virtio_net__rx(), so the device is unit-testable and fuzzable.
 * Carried by virtio-mmio (virtio_mmio.h).
 *
 * Frames cross the backend boundary with their struct virtio_net_hdr in
 * front (12 bytes, the VERSION_1 layout, 5.1.6): what a tap opened with
 * IFF_VNET_HDR and TUNSETVNETHDRSZ 12 reads and writes.
 *
 * Receive: a frame the guest has no buffers for waits in the device, in
 * order, up to VIRTIO_NET_RX_PENDING_FRAMES frames and _BYTES bytes; it
 * goes to the guest as soon as the driver adds buffers.  Past that bound
 * virtio_net__rx() refuses the frame (-ENOBUFS) and counts it dropped:
 * the backend should stop reading its tap while virtio_net__rx_room()
 * says no, and resume on the rx_ready() callback, so frames wait in the
 * tap and are never lost.
 *
 * Transmit: each chain on the tx queue is one frame; it goes to
 * ops->tx() and is completed (used length 0) whatever the backend
 * answered, and the interrupt follows every batch (as the driver's
 * suppression flags allow).  A frame the backend cannot take is dropped
 * and counted, as a NIC's full queue would.
 *
 * Errors: a ring the walker refuses (virtq.h: loops, overlong chains,
 * buffers outside guest RAM) sets DEVICE_NEEDS_RESET as for the other
 * devices, and so does an rx chain with a device-readable buffer (it
 * may sit amid a mergeable frame's buffers); a tx chain with a bad
 * content (a device-writable buffer, a header the negotiated features do
 * not allow, a frame over VIRTIO_NET_MAX_FRAME) is completed with length
 * 0 and counted in tx_errors.  No guest value ever makes the device
 * touch memory outside guest RAM (every buffer goes through guest_mem__ptr()).
 *
 * Locking: every backend op is called with the transport lock
 * (t->dev.lock) held and must not call back into virtio_net__*(); the
 * virtio_net__*() calls take that lock themselves.
 */
#ifndef EMBER_DEVICES_VIRTIO_NET_H
#define EMBER_DEVICES_VIRTIO_NET_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/uio.h>

#include "virtio_mmio.h"

#define VIRTIO_ID_NET 1

/* Feature bits (5.1.3). */
#define VIRTIO_NET_F_CSUM	0
#define VIRTIO_NET_F_GUEST_CSUM 1
#define VIRTIO_NET_F_MAC	5
#define VIRTIO_NET_F_GUEST_TSO4 7
#define VIRTIO_NET_F_GUEST_TSO6 8
#define VIRTIO_NET_F_HOST_TSO4	11
#define VIRTIO_NET_F_HOST_TSO6	12
#define VIRTIO_NET_F_MRG_RXBUF	15
#define VIRTIO_NET_F_STATUS	16

/* The offloads a backend may declare (virtio_net_config.offloads). */
#define VIRTIO_NET_OFFLOADS                                                \
	((1ULL << VIRTIO_NET_F_CSUM) | (1ULL << VIRTIO_NET_F_GUEST_CSUM) | \
	 (1ULL << VIRTIO_NET_F_GUEST_TSO4) |                               \
	 (1ULL << VIRTIO_NET_F_GUEST_TSO6) |                               \
	 (1ULL << VIRTIO_NET_F_HOST_TSO4) | (1ULL << VIRTIO_NET_F_HOST_TSO6))

/* Queues (5.1.2): no control queue. */
#define VIRTIO_NET_Q_RX 0
#define VIRTIO_NET_Q_TX 1

/*
 * struct virtio_net_config (5.1.4), byte offsets in config space: mac[6],
 * le16 status.  Nothing past status is offered (no MQ, MTU, SPEED_DUPLEX).
 */
#define VIRTIO_NET_CFG_MAC    0
#define VIRTIO_NET_CFG_STATUS 6
#define VIRTIO_NET_CFG_BYTES  8
#define VIRTIO_NET_S_LINK_UP  1

/*
 * struct virtio_net_hdr (5.1.6), VERSION_1 layout, little-endian: u8
 * flags, u8 gso_type, le16 hdr_len, gso_size, csum_start, csum_offset,
 * num_buffers.
 */
#define VIRTIO_NET_HDR_BYTES	    12
#define VIRTIO_NET_HDR_FLAGS	    0
#define VIRTIO_NET_HDR_GSO_TYPE	    1
#define VIRTIO_NET_HDR_CSUM_START   6
#define VIRTIO_NET_HDR_CSUM_OFFSET  8
#define VIRTIO_NET_HDR_NUM_BUFFERS  10
#define VIRTIO_NET_HDR_F_NEEDS_CSUM 1
#define VIRTIO_NET_HDR_F_DATA_VALID 2
#define VIRTIO_NET_HDR_GSO_NONE	    0
#define VIRTIO_NET_HDR_GSO_TCPV4    1
#define VIRTIO_NET_HDR_GSO_UDP	    3
#define VIRTIO_NET_HDR_GSO_TCPV6    4
#define VIRTIO_NET_HDR_GSO_ECN	    0x80

/*
 * Limits.  MAX_FRAME: the largest frame after the header (a 64 KiB GSO
 * frame and its Ethernet header, as Firecracker and QEMU allow).  The rx
 * pending queue holds at most PENDING_FRAMES frames and PENDING_BYTES
 * bytes (headers included).
 */
#define VIRTIO_NET_MAX_FRAME	     65550
#define VIRTIO_NET_RX_PENDING_FRAMES 256
#define VIRTIO_NET_RX_PENDING_BYTES  (4 * 1024 * 1024)

/* virtio_net__rx() answers this when the frame waits in the device. */
#define VIRTIO_NET_QUEUED 1

/* ops->tx() answers this to leave the frame in the ring for later. */
#define VIRTIO_NET_TX_LATER 1

struct virtio_net;

/* The host side.  tx is required, rx_ready may be NULL. */
struct virtio_net_backend_ops {
	/*
	 * One frame from the guest: @iov[0..@iovcnt) is its 12-byte
	 * virtio_net_hdr (the device's checked copy) then the frame (in
	 * guest RAM; 1..VIRTQ_MAX_SIZE entries after the header).  The
	 * backend writes it out before returning (the iovecs die then).
	 * Returns 0, or a negative errno (-EAGAIN: the tap is full): the
	 * frame is dropped and counted; or VIRTIO_NET_TX_LATER (a rate
	 * limiter said no): the frame stays in the ring, the device takes
	 * no more frames until the backend calls virtio_net__tx_resume().
	 */
	int (*tx)(void *backend, const struct iovec *iov, unsigned int iovcnt);
	/* virtio_net__rx_room() turned true again: read the tap again. */
	void (*rx_ready)(void *backend);
};

/* What the device offers. */
struct virtio_net_config {
	uint8_t mac[6];
	bool has_mac; /* offer VIRTIO_NET_F_MAC with @mac (unicast) */
	/*
	 * Offloads the backend supports, within VIRTIO_NET_OFFLOADS, with
	 * their dependencies (5.1.3.1): HOST_TSO* need CSUM, GUEST_TSO*
	 * need GUEST_CSUM.
	 */
	uint64_t offloads;
};

/* Counters since creation, beyond struct dev_stats. */
struct virtio_net_stats {
	struct dev_stats dev; /* frames both ways; read = to the guest */
	uint64_t rx_frames, tx_frames;
	uint64_t rx_dropped; /* refused past the pending bound, or reset */
	uint64_t rx_errors; /* no buffer could ever hold it, bad header */
	uint64_t tx_dropped; /* the backend refused it */
	uint64_t tx_errors; /* a bad chain or header, an oversize frame */
};

/*
 * virtio_net__create() - a network device on guest memory @m (not owned;
 * must outlive the device) raising interrupt @irq, with @cfg, reporting
 * to @ops/@backend (not owned).  Register the transport
 * (virtio_net__transport()) on the MMIO bus.  Returns the device (free
 * with virtio_net__destroy()), or NULL for a NULL @m, @cfg or @ops, no
 * @ops->tx, a multicast MAC, offloads outside VIRTIO_NET_OFFLOADS or
 * without their dependencies, or without memory.
 */
struct virtio_net *virtio_net__create(const struct guest_mem *m,
				      struct irq_line irq,
				      const struct virtio_net_config *cfg,
				      const struct virtio_net_backend_ops *ops,
				      void *backend);

/*
 * virtio_net__transport() - the device's virtio-mmio transport, owned by
 * @n: its .dev goes on the MMIO bus, queue notifications (ioeventfd on
 * VIRTIO_MMIO_QUEUE_NOTIFY) to virtio_mmio__notify().
 */
struct virtio_mmio *virtio_net__transport(struct virtio_net *n);

/*
 * virtio_net__destroy() - free a device and its pending frames (NULL is
 * a no-op); it must be off the bus and idle.  No backend op is called.
 */
void virtio_net__destroy(struct virtio_net *n);

/*
 * virtio_net__rx() - a frame for the guest: @len bytes at @pkt, its
 * virtio_net_hdr first (num_buffers is the device's to set).  Delivered
 * at once when the guest has buffers (and the interrupt raised), else
 * queued in order behind earlier frames.  Returns 0 (delivered),
 * VIRTIO_NET_QUEUED, -EINVAL for @len outside HDR_BYTES + 1 ..
 * HDR_BYTES + MAX_FRAME, -EPROTO for a header the guest did not
 * negotiate (a GSO type without GUEST_TSO*, NEEDS_CSUM without
 * GUEST_CSUM, ECN), -EMSGSIZE when the guest's buffers cannot hold it
 * (one chain without MRG_RXBUF, the whole ring with it), -ENOBUFS past
 * the pending bound, -ENOMEM; every
 * negative answer drops the frame and counts it.  Takes the lock.
 */
int virtio_net__rx(struct virtio_net *n, const void *pkt, uint32_t len);

/*
 * virtio_net__rx_room() - would virtio_net__rx() take one more frame of
 * the largest size without dropping it?  Takes the lock.
 */
bool virtio_net__rx_room(struct virtio_net *n);

/*
 * virtio_net__tx_resume() - take frames from the tx queue again after
 * ops->tx() answered VIRTIO_NET_TX_LATER (a rate limiter's timer fired).
 * Does nothing unless the driver is live.  Takes the lock.
 */
void virtio_net__tx_resume(struct virtio_net *n);

/*
 * virtio_net__guest_features() - the features the driver negotiated (0
 * before FEATURES_OK): the backend sets its tap's offloads from the
 * GUEST_* bits (TUNSETOFFLOAD).  Takes the lock.
 */
uint64_t virtio_net__guest_features(struct virtio_net *n);

/*
 * virtio_net__set_link() - the link goes up or down (config status,
 * with VIRTIO_NET_F_STATUS: a configuration-change interrupt).  A new
 * device's link is up.  Takes the lock.
 */
void virtio_net__set_link(struct virtio_net *n, bool up);

/* virtio_net__stats() - the counters.  Takes the lock. */
void virtio_net__stats(struct virtio_net *n, struct virtio_net_stats *out);

/*
 * The device's own state for a snapshot (its transport's is saved
 * apart): what it offers and its link.  Frames pending for the guest
 * are not saved: on restore they are lost, as on a wire.
 */
struct virtio_net_state {
	uint8_t mac[6];
	bool has_mac;
	bool link_up;
	uint64_t offloads;
};

/* virtio_net__get_state() - @n's state into @s.  Takes the lock. */
void virtio_net__get_state(struct virtio_net *n, struct virtio_net_state *s);

/*
 * virtio_net__set_state() - @n takes @s (from a snapshot, before its
 * transport's state: the features the driver accepted must be offered).
 * Checked as virtio_net__create() checks its config.  Pending frames are
 * dropped and counted.  Returns 0, or -EINVAL with nothing changed.
 * Takes the lock.
 */
int virtio_net__set_state(struct virtio_net *n,
			  const struct virtio_net_state *s);

#endif /* EMBER_DEVICES_VIRTIO_NET_H */
