/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Split virtqueues, device side (virtio 1.2 spec, 2.7 "Split Virtqueues").
 * Pure: the rings live in guest RAM and are reached only through
 * guest_mem.h, so a hostile driver can make a request fail or the device
 * need a reset, but never make ember touch memory outside guest RAM.
 *
 * Rules the walker enforces (kvmtool's weak spots, see shared STYLE.md):
 * every ring, table and buffer address goes through guest_mem__ptr() with its
 * whole length; a chain has at most q->size descriptors (indirect tables
 * included) and no loops; zero-length and overlong chains are refused;
 * an indirect table is not nested and sits in a descriptor without NEXT.
 */
#ifndef EMBER_DEVICES_VIRTQ_H
#define EMBER_DEVICES_VIRTQ_H

#include <stdbool.h>
#include <stdint.h>

#include "guest_mem.h"

#define VIRTQ_MAX_SIZE		   256 /* QueueNumMax ember offers */
#define VIRTQ_DESC_F_NEXT	   1
#define VIRTQ_DESC_F_WRITE	   2
#define VIRTQ_DESC_F_INDIRECT	   4
#define VIRTQ_AVAIL_F_NO_INTERRUPT 1
#define VIRTQ_USED_F_NO_NOTIFY	   1

/* One queue's driver-programmed layout and the device's progress. */
struct virtq {
	uint16_t size; /* entries: a power of 2, 1..VIRTQ_MAX_SIZE */
	bool ready; /* QueueReady written 1 */
	bool event_idx; /* VIRTIO_RING_F_EVENT_IDX negotiated */
	uint64_t desc_gpa; /* 16-byte aligned descriptor table */
	uint64_t avail_gpa; /* 2-byte aligned driver (avail) ring */
	uint64_t used_gpa; /* 4-byte aligned device (used) ring */
	uint16_t last_avail; /* next avail ring index the device takes */
	uint16_t used_idx; /* the device's used->idx */
	uint16_t signalled_used; /* used_idx when last interrupted */
	bool signalled_valid;
};

/* One buffer of a chain: guest-physical, checked to lie in guest RAM. */
struct virtq_seg {
	uint64_t gpa;
	uint32_t len;
	bool write; /* device-writable (VIRTQ_DESC_F_WRITE) */
};

/*
 * A popped request: its head index (for virtq__push) and its segments in
 * chain order, device-readable ones first (spec 2.7.4.2: a driver must
 * not put readable after writable; such chains are refused).
 */
struct virtq_chain {
	uint16_t head;
	unsigned int nr_segs;
	struct virtq_seg seg[VIRTQ_MAX_SIZE];
	uint64_t out_bytes; /* total device-readable bytes */
	uint64_t in_bytes; /* total device-writable bytes */
};

/*
 * virtq__valid() - check the layout of a queue the driver is enabling:
 * size a power of 2 within 1..VIRTQ_MAX_SIZE, rings aligned (2.7: 16, 2,
 * 4) and wholly inside guest RAM: 16 * size bytes of descriptors, 6 +
 * 2 * size of avail ring and 6 + 8 * size of used ring, the trailing
 * used_event/avail_event words included whether or not @q->event_idx is
 * set (2.7 gives those sizes unconditionally).
 * Returns 0 or -EINVAL.
 */
int virtq__valid(const struct virtq *q, const struct guest_mem *m);

/*
 * virtq__pop() - take the next available chain into @c (caller-owned).
 * Returns 1 with @c filled, 0 when the driver has made nothing new
 * available, or -EINVAL for a broken ring or chain (avail->idx more than
 * q->size ahead, a head or next index >= size, a loop, more than size
 * descriptors, a zero total length, a buffer outside guest RAM, readable
 * after writable, a nested or misplaced indirect table).  On -EINVAL the
 * chain is consumed when its head was valid (c->head is set, and the
 * caller may push it with length 0); the caller decides between failing
 * the request and DEVICE_NEEDS_RESET.  A head index >= size is consumed
 * too, so the device can move past it, but must not be pushed: push only
 * when c->head < q->size.  When avail->idx itself is insane (or a ring is
 * not in RAM) nothing is consumed and c->head is UINT16_MAX.
 * A zero-length descriptor inside a chain is allowed and skipped (its
 * address unchecked) as long as the chain's total length is non-zero.
 * With @q->event_idx, also keeps avail_event at q->last_avail, and on an
 * empty ring re-reads avail->idx after publishing it (2.7.10).
 */
int virtq__pop(struct virtq *q, const struct guest_mem *m,
	       struct virtq_chain *c);

/*
 * virtq__push() - return chain @head to the driver with @len bytes
 * written into its device-writable buffers (used ring entry, then the
 * used->idx store with release ordering).
 * Returns 0, or -EFAULT if the used ring is no longer in guest RAM.
 */
int virtq__push(struct virtq *q, const struct guest_mem *m, uint16_t head,
		uint32_t len);

/*
 * virtq__needs_interrupt() - after pushes: should the device interrupt?
 * With EVENT_IDX, only when used_event was crossed since the last
 * interrupt (2.7.10 and vring_need_event()); without it, unless the
 * driver set VIRTQ_AVAIL_F_NO_INTERRUPT.  Records the interrupt as sent
 * when it answers true.  With EVENT_IDX the first call after a reset
 * (signalled_valid false) answers true; so does any call while the avail
 * ring is not in RAM (a spurious interrupt is harmless).
 */
bool virtq__needs_interrupt(struct virtq *q, const struct guest_mem *m);

/*
 * virtq__read() / virtq__write() - copy between the chain's readable
 * (resp. writable) segments, taken as one byte stream from @offset, and
 * @buf.  Return the number of bytes copied (short at the end of the
 * stream), never touching memory outside guest RAM.
 */
uint64_t virtq__read(const struct virtq_chain *c, const struct guest_mem *m,
		     uint64_t offset, void *buf, uint64_t len);
uint64_t virtq__write(const struct virtq_chain *c, const struct guest_mem *m,
		      uint64_t offset, const void *buf, uint64_t len);

/*
 * virtq__arm_notify() - ask the driver to notify the device when it makes
 * its next buffer available, whatever the device has not taken yet: with
 * VIRTIO_F_EVENT_IDX, avail_event (2.7.10) becomes the avail ring's idx
 * (without it the driver notifies anyway).  For a device that takes one
 * buffer and must hear of the next refill (vsock's event queue).  Does
 * nothing for a queue whose rings are not in guest RAM.
 */
void virtq__arm_notify(struct virtq *q, const struct guest_mem *m);

/*
 * virtq__reset() - forget layout and progress (device reset, 2.1.2): all
 * fields zero, size included; the transport sets size again.
 */
void virtq__reset(struct virtq *q);

#endif /* EMBER_DEVICES_VIRTQ_H */
