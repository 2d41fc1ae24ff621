/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The driver side the virtio device fuzz targets share: register access
 * to a virtio-mmio transport (virtio 1.2, 4.2.2) and the device bring-up
 * (3.1.1) with a fuzz-chosen set of features.  Each target lays out its
 * own queues between fuzz_virtio__negotiate() and fuzz_virtio__live().
 * No cmocka: a harness bug traps.
 */
#ifndef EMBER_TESTS_FUZZ_FUZZ_VIRTIO_H
#define EMBER_TESTS_FUZZ_FUZZ_VIRTIO_H

#include <stdint.h>

#include "devices/virtio_mmio.h"
#include "devices/le.h"

#define REG_DEV_FEATURES     0x010
#define REG_DEV_FEATURES_SEL 0x014
#define REG_DRV_FEATURES     0x020
#define REG_DRV_FEATURES_SEL 0x024
#define REG_QUEUE_SEL	     0x030
#define REG_QUEUE_NUM	     0x038
#define REG_QUEUE_READY	     0x044
#define REG_INT_ACK	     0x064
#define REG_STATUS	     0x070
#define REG_DESC_LOW	     0x080
#define REG_DRIVER_LOW	     0x090
#define REG_DEVICE_LOW	     0x0a0

/* Interrupts go nowhere: the fuzz targets poll the used rings. */
static inline void fuzz_virtio__irq(void *opaque, unsigned int gsi, int level)
{
	(void)opaque;
	(void)gsi;
	(void)level;
}

static inline uint32_t fuzz_virtio__rd(struct virtio_mmio *t, uint64_t off)
{
	uint32_t v = 0;

	t->dev.ops->read(&t->dev, off, &v, 4);
	return le__get32(&v);
}

static inline void fuzz_virtio__wr(struct virtio_mmio *t, uint64_t off,
				   uint32_t v)
{
	le__put32(&v, v);
	t->dev.ops->write(&t->dev, off, &v, 4);
}

/*
 * Reset @t and negotiate: VERSION_1 plus, by @feat_sel's bits, EVENT_IDX
 * (1), INDIRECT_DESC (2) and every device-specific bit offered (4).
 * Returns the status to OR DRIVER_OK into once the queues are set up.
 */
static inline uint32_t fuzz_virtio__negotiate(struct virtio_mmio *t,
					      uint8_t feat_sel)
{
	uint32_t st = VIRTIO_STATUS_ACKNOWLEDGE | VIRTIO_STATUS_DRIVER;
	uint64_t offered, feat;

	fuzz_virtio__wr(t, REG_STATUS, 0);
	fuzz_virtio__wr(t, REG_STATUS, st);
	fuzz_virtio__wr(t, REG_DEV_FEATURES_SEL, 0);
	offered = fuzz_virtio__rd(t, REG_DEV_FEATURES);
	fuzz_virtio__wr(t, REG_DEV_FEATURES_SEL, 1);
	offered |= (uint64_t)fuzz_virtio__rd(t, REG_DEV_FEATURES) << 32;
	feat = (1ULL << VIRTIO_F_VERSION_1) |
	       (feat_sel & 1 ? 1ULL << VIRTIO_F_EVENT_IDX : 0) |
	       (feat_sel & 2 ? 1ULL << VIRTIO_F_INDIRECT_DESC : 0) |
	       (feat_sel & 4 ? 0xffffffffULL : 0);
	feat &= offered;
	fuzz_virtio__wr(t, REG_DRV_FEATURES_SEL, 0);
	fuzz_virtio__wr(t, REG_DRV_FEATURES, (uint32_t)feat);
	fuzz_virtio__wr(t, REG_DRV_FEATURES_SEL, 1);
	fuzz_virtio__wr(t, REG_DRV_FEATURES, (uint32_t)(feat >> 32));
	st |= VIRTIO_STATUS_FEATURES_OK;
	fuzz_virtio__wr(t, REG_STATUS, st);
	return st;
}

/* Queue @sel: @num entries, rings at @desc, @avail, @used (below 4 GiB). */
static inline void fuzz_virtio__queue(struct virtio_mmio *t, uint32_t sel,
				      uint32_t num, uint32_t desc,
				      uint32_t avail, uint32_t used)
{
	fuzz_virtio__wr(t, REG_QUEUE_SEL, sel);
	fuzz_virtio__wr(t, REG_QUEUE_NUM, num);
	fuzz_virtio__wr(t, REG_DESC_LOW, desc);
	fuzz_virtio__wr(t, REG_DRIVER_LOW, avail);
	fuzz_virtio__wr(t, REG_DEVICE_LOW, used);
	fuzz_virtio__wr(t, REG_QUEUE_READY, 1);
}

/* DRIVER_OK on top of @st; a layout the device refuses is a harness bug. */
static inline void fuzz_virtio__live(struct virtio_mmio *t, uint32_t st)
{
	st |= VIRTIO_STATUS_DRIVER_OK;
	fuzz_virtio__wr(t, REG_STATUS, st);
	if (fuzz_virtio__rd(t, REG_STATUS) != st)
		__builtin_trap();
}

#endif /* EMBER_TESTS_FUZZ_FUZZ_VIRTIO_H */
