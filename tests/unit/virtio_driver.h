// SPDX-License-Identifier: Apache-2.0
/*
 * A small virtio-mmio driver for the device unit tests: register access
 * through the transport's ops, feature negotiation, queue set-up and a
 * split queue laid out in guest RAM.  Header-only (static inline); include
 * after <cmocka.h> and the device's own header.
 */
#ifndef EMBER_TESTS_UNIT_VIRTIO_DRIVER_H
#define EMBER_TESTS_UNIT_VIRTIO_DRIVER_H

#include <stdbool.h>
#include <stdint.h>

#include "../../devices/virtio_mmio.h"
#include "test_util.h"

/* virtio-mmio v2 registers (4.2.2). */
#define MAGIC		 0x000
#define VERSION		 0x004
#define DEVICE_ID	 0x008
#define VENDOR_ID	 0x00c
#define DEV_FEATURES	 0x010
#define DEV_FEATURES_SEL 0x014
#define DRV_FEATURES	 0x020
#define DRV_FEATURES_SEL 0x024
#define QUEUE_SEL	 0x030
#define QUEUE_NUM_MAX	 0x034
#define QUEUE_NUM	 0x038
#define QUEUE_READY	 0x044
#define QUEUE_NOTIFY	 0x050
#define INT_STATUS	 0x060
#define INT_ACK		 0x064
#define STATUS		 0x070
#define DESC_LOW	 0x080
#define DESC_HIGH	 0x084
#define DRIVER_LOW	 0x090
#define DRIVER_HIGH	 0x094
#define DEVICE_LOW	 0x0a0
#define DEVICE_HIGH	 0x0a4
#define SHM_LEN_LOW	 0x0b0
#define SHM_LEN_HIGH	 0x0b4
#define CONFIG_GEN	 0x0fc

/* ACKNOWLEDGE | DRIVER | FEATURES_OK: a successful negotiation. */
#define VDRV_STATUS_NEGOTIATED                              \
	(VIRTIO_STATUS_ACKNOWLEDGE | VIRTIO_STATUS_DRIVER | \
	 VIRTIO_STATUS_FEATURES_OK)

/* One buffer of a descriptor chain. */
struct vdrv_seg {
	uint64_t gpa;
	uint32_t len;
	bool write;
};

/* A split queue in guest RAM and the driver's view of it. */
struct vdrv_queue {
	uint64_t desc, avail, used;
	uint16_t size;
	uint16_t avail_idx, next_desc, used_seen;
};

/* Read a 32-bit register; poisoned so a read that fills nothing shows. */
static inline uint32_t vdrv_rd(struct virtio_mmio *t, uint64_t off)
{
	uint32_t v = 0xeeeeeeee;

	t->dev.ops->read(&t->dev, off, &v, 4);
	return le32toh(v);
}

/* Write a 32-bit register. */
static inline void vdrv_wr(struct virtio_mmio *t, uint64_t off, uint32_t v)
{
	v = htole32(v);
	t->dev.ops->write(&t->dev, off, &v, 4);
}

/* All 64 bits the device offers. */
static inline uint64_t vdrv_device_features(struct virtio_mmio *t)
{
	uint64_t lo, hi;

	vdrv_wr(t, DEV_FEATURES_SEL, 0);
	lo = vdrv_rd(t, DEV_FEATURES);
	vdrv_wr(t, DEV_FEATURES_SEL, 1);
	hi = vdrv_rd(t, DEV_FEATURES);
	return lo | hi << 32;
}

/* Write all 64 bits the driver accepts. */
static inline void vdrv_driver_features(struct virtio_mmio *t, uint64_t feat)
{
	vdrv_wr(t, DRV_FEATURES_SEL, 0);
	vdrv_wr(t, DRV_FEATURES, (uint32_t)feat);
	vdrv_wr(t, DRV_FEATURES_SEL, 1);
	vdrv_wr(t, DRV_FEATURES, (uint32_t)(feat >> 32));
}

/* 3.1.1 steps 1-6: reset, accept @feat, FEATURES_OK; the status read back. */
static inline uint32_t vdrv_negotiate(struct virtio_mmio *t, uint64_t feat)
{
	vdrv_wr(t, STATUS, 0);
	vdrv_wr(t, STATUS, VIRTIO_STATUS_ACKNOWLEDGE);
	vdrv_wr(t, STATUS, VIRTIO_STATUS_ACKNOWLEDGE | VIRTIO_STATUS_DRIVER);
	vdrv_driver_features(t, feat);
	vdrv_wr(t, STATUS, VDRV_STATUS_NEGOTIATED);
	return vdrv_rd(t, STATUS);
}

/* Select queue @sel, give it @num entries and its rings, mark it ready. */
static inline void vdrv_setup_queue(struct virtio_mmio *t, uint32_t sel,
				    uint32_t num, uint64_t desc, uint64_t avail,
				    uint64_t used)
{
	vdrv_wr(t, QUEUE_SEL, sel);
	vdrv_wr(t, QUEUE_NUM, num);
	vdrv_wr(t, DESC_LOW, (uint32_t)desc);
	vdrv_wr(t, DESC_HIGH, (uint32_t)(desc >> 32));
	vdrv_wr(t, DRIVER_LOW, (uint32_t)avail);
	vdrv_wr(t, DRIVER_HIGH, (uint32_t)(avail >> 32));
	vdrv_wr(t, DEVICE_LOW, (uint32_t)used);
	vdrv_wr(t, DEVICE_HIGH, (uint32_t)(used >> 32));
	vdrv_wr(t, QUEUE_READY, 1);
}

/* Set DRIVER_OK on a negotiated device and check it took. */
static inline void vdrv_driver_ok(struct virtio_mmio *t)
{
	vdrv_wr(t, STATUS, VDRV_STATUS_NEGOTIATED | VIRTIO_STATUS_DRIVER_OK);
	assert_int_equal(vdrv_rd(t, STATUS),
			 VDRV_STATUS_NEGOTIATED | VIRTIO_STATUS_DRIVER_OK);
}

/* Lay out fresh, zeroed rings for @q at @desc, @avail and @used. */
static inline void vdrv_queue_init(uint8_t *ram, struct vdrv_queue *q,
				   uint16_t size, uint64_t desc, uint64_t avail,
				   uint64_t used)
{
	*q = (struct vdrv_queue){
		.desc = desc, .avail = avail, .used = used, .size = size
	};
	memset(ram + desc, 0, 16 * (size_t)size);
	memset(ram + avail, 0, 6 + 2 * (size_t)size);
	memset(ram + used, 0, 6 + 8 * (size_t)size);
}

/* Hand @q to the device as queue @sel (after negotiation). */
static inline void vdrv_queue_start(struct virtio_mmio *t, uint32_t sel,
				    const struct vdrv_queue *q)
{
	vdrv_setup_queue(t, sel, q->size, q->desc, q->avail, q->used);
}

/* Add a chain of @n segments to @q and publish it; returns its head. */
static inline uint16_t vdrv_post(uint8_t *ram, struct vdrv_queue *q,
				 const struct vdrv_seg *s, unsigned int n)
{
	uint16_t head, i;
	uint64_t d;

	if (q->next_desc + n > q->size)
		q->next_desc = 0;
	head = q->next_desc;
	for (i = 0; i < n; i++) {
		d = q->desc + 16 * (uint64_t)(head + i);
		wr64(ram, d, s[i].gpa);
		wr32(ram, d + 8, s[i].len);
		wr16(ram, d + 12,
		     (i + 1u < n ? VIRTQ_DESC_F_NEXT : 0) |
			     (s[i].write ? VIRTQ_DESC_F_WRITE : 0));
		wr16(ram, d + 14, head + i + 1);
	}
	q->next_desc += n;
	wr16(ram, q->avail + 4 + 2 * (q->avail_idx % q->size), head);
	q->avail_idx++;
	wr16(ram, q->avail + 2, q->avail_idx);
	return head;
}

/* The device's used index for @q. */
static inline uint16_t vdrv_used_idx(const uint8_t *ram,
				     const struct vdrv_queue *q)
{
	return rd16(ram, q->used + 2);
}

/* Address of the next used element of @q not yet taken. */
static inline uint64_t vdrv_used_elem(const struct vdrv_queue *q)
{
	return q->used + 4 + 8 * (uint64_t)(q->used_seen % q->size);
}

/* Take the next used element: checks its id is @head, returns its length. */
static inline uint32_t vdrv_take_used(const uint8_t *ram, struct vdrv_queue *q,
				      uint16_t head)
{
	uint64_t e = vdrv_used_elem(q);

	assert_true((uint16_t)(vdrv_used_idx(ram, q) - q->used_seen) > 0);
	q->used_seen++;
	assert_int_equal(rd32(ram, e), head);
	return rd32(ram, e + 4);
}

#endif /* EMBER_TESTS_UNIT_VIRTIO_DRIVER_H */
