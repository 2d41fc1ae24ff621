// SPDX-License-Identifier: Apache-2.0
/*
 * libFuzzer target: the virtio-blk request path (devices/virtio_blk.c over
 * devices/virtio_mmio.c and devices/virtq.c) against a hostile driver.
 * One device on a 64 KiB temporary image, made once.  Per input the
 * transport is reset and brought live through its registers (features
 * from the input, VERSION_1 always, a queue of the input's size at
 * offsets fixed per size, DRIVER_OK); then the input is copied over guest
 * RAM, so the descriptor table, both rings and every buffer are the
 * fuzzer's, the avail index is set from the input and queue 0 is
 * notified, twice.  Any crash, leak or sanitizer report is a bug: nothing
 * outside guest RAM may be touched, whatever the rings and requests say.
 */
#include <endian.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "devices/virtio_blk.h"
#include "vmm/mem.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

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

#define FUZZ_RAM_BYTES	(1 << 20)
#define FUZZ_DISK_BYTES (64 * 1024)
#define FUZZ_HDR_BYTES	6
/*
 * The rings first and packed, so that short inputs reach them: for a
 * queue of q entries, descriptors at 0 (16 * q bytes), the avail ring
 * right after (6 + 2 * q), the used ring after that, 4-byte aligned
 * (6 + 8 * q).  Buffers may be anywhere in RAM, the rings included.
 */
#define FUZZ_DESC     0
#define FUZZ_AVAIL(q) (16u * (q))
#define FUZZ_USED(q)  ((FUZZ_AVAIL(q) + 6u + 2u * (q) + 3u) & ~3u)

/*
 * Static and made once (the device, its image): the fuzzer's own state,
 * not the VMM's; guest RAM is 1 MiB and rewritten per input.
 */
static uint8_t ram[FUZZ_RAM_BYTES] __attribute__((aligned(4096)));
static struct guest_mem mem;
static struct virtio_blk *blk;
static struct virtio_mmio *t;
static unsigned int qsize; /* the queue's entries, this input */

static void fuzz_irq(void *opaque, unsigned int gsi, int level)
{
	(void)opaque;
	(void)gsi;
	(void)level;
}

static uint32_t rd(uint64_t off)
{
	uint32_t v = 0;

	t->dev.ops->read(&t->dev, off, &v, 4);
	return le32toh(v);
}

static void wr(uint64_t off, uint32_t v)
{
	v = htole32(v);
	t->dev.ops->write(&t->dev, off, &v, 4);
}

/* The image and the device, once; abort if the host cannot give them. */
static void fuzz_setup(void)
{
	char path[] = "/tmp/ember-fuzz-blk-XXXXXX";
	struct irq_line irq = { .set = fuzz_irq };
	int fd;

	if (mem__wrap(&mem, ram, sizeof(ram)))
		abort();
	fd = mkstemp(path);
	if (fd < 0)
		abort();
	unlink(path);
	if (ftruncate(fd, FUZZ_DISK_BYTES))
		abort();
	blk = virtio_blk__create(&mem, irq, fd, FUZZ_DISK_BYTES, false, "fuzz");
	if (!blk)
		abort();
	t = virtio_blk__transport(blk);
}

/*
 * Reset and bring the device live (3.1.1) with @feat_sel picking among
 * the offered features and a queue of 1 << (@qlog % 9) entries.
 */
static void fuzz_driver_init(uint8_t feat_sel, uint8_t qlog)
{
	uint32_t st = VIRTIO_STATUS_ACKNOWLEDGE | VIRTIO_STATUS_DRIVER;
	uint64_t offered, feat;

	wr(REG_STATUS, 0);
	wr(REG_STATUS, st);
	wr(REG_DEV_FEATURES_SEL, 0);
	offered = rd(REG_DEV_FEATURES);
	wr(REG_DEV_FEATURES_SEL, 1);
	offered |= (uint64_t)rd(REG_DEV_FEATURES) << 32;
	feat = (1ULL << VIRTIO_F_VERSION_1) |
	       (feat_sel & 1 ? 1ULL << VIRTIO_F_EVENT_IDX : 0) |
	       (feat_sel & 2 ? 1ULL << VIRTIO_F_INDIRECT_DESC : 0) |
	       (feat_sel & 4 ? 0xffffffffULL : 0); /* the blk bits */
	feat &= offered;
	wr(REG_DRV_FEATURES_SEL, 0);
	wr(REG_DRV_FEATURES, (uint32_t)feat);
	wr(REG_DRV_FEATURES_SEL, 1);
	wr(REG_DRV_FEATURES, (uint32_t)(feat >> 32));
	st |= VIRTIO_STATUS_FEATURES_OK;
	wr(REG_STATUS, st);
	wr(REG_QUEUE_SEL, 0);
	qsize = 1u << (qlog % 9);
	wr(REG_QUEUE_NUM, qsize);
	wr(REG_DESC_LOW, FUZZ_DESC);
	wr(REG_DRIVER_LOW, FUZZ_AVAIL(qsize));
	wr(REG_DEVICE_LOW, FUZZ_USED(qsize));
	wr(REG_QUEUE_READY, 1);
	st |= VIRTIO_STATUS_DRIVER_OK;
	wr(REG_STATUS, st);
	/* A layout this fixed is valid: anything else is a harness bug. */
	if (rd(REG_STATUS) != st)
		__builtin_trap();
}

static void set_avail_idx(uint16_t idx)
{
	idx = htole16(idx);
	memcpy(ram + FUZZ_AVAIL(qsize) + 2, &idx, sizeof(idx));
}

/*
 * Input: feature choice, queue size, two avail indices (le16; the second
 * is added to the first), then guest RAM from GPA 0.
 */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint16_t idx1, idx2;
	size_t n;

	if (size < FUZZ_HDR_BYTES)
		return 0;
	if (!blk)
		fuzz_setup();
	/* Before RAM is written: set-up writes nothing there. */
	fuzz_driver_init(data[0], data[1]);
	idx1 = (uint16_t)(data[2] | data[3] << 8);
	idx2 = (uint16_t)(data[4] | data[5] << 8);
	data += FUZZ_HDR_BYTES;
	size -= FUZZ_HDR_BYTES;
	n = size < sizeof(ram) ? size : sizeof(ram);
	memcpy(ram, data, n);
	memset(ram + n, 0, sizeof(ram) - n);

	set_avail_idx(idx1);
	virtio_mmio__notify(t, 0);
	/* More work on a live queue, as a driver would add it. */
	if (!(rd(REG_STATUS) & VIRTIO_STATUS_NEEDS_RESET)) {
		set_avail_idx((uint16_t)(idx1 + idx2));
		wr(REG_INT_ACK, VIRTIO_MMIO_INT_VRING);
		virtio_mmio__notify(t, 0);
	}
	/* A device that needs a reset gets one (the next input re-inits). */
	if (rd(REG_STATUS) & VIRTIO_STATUS_NEEDS_RESET)
		wr(REG_STATUS, 0);
	return 0;
}
