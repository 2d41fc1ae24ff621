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
 * notified, twice.  With bit 3 of the feature byte set, a rate limiter
 * (devices/rate_limiter.h) holds requests back in the ring and the
 * wake-ups it asks for are delivered at once (a clock that moves 1 ms per
 * reading), so requests are taken again after rewinds.  Any crash, leak
 * or sanitizer report is a bug: nothing outside guest RAM may be touched,
 * whatever the rings and requests say.
 */
#include <endian.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "devices/virtio_blk.h"
#include "vmm/dev/blk_backing.h"
#include "vmm/mem.h"
#include "fuzz_virtio.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

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
static uint64_t clock_ns; /* the limiter's fake clock */
static unsigned int wakes; /* wake-ups asked for and not delivered */

static uint64_t fuzz_now(void *opaque)
{
	(void)opaque;
	return clock_ns += 1000000;
}

static void fuzz_wake(void *opaque, uint64_t ns)
{
	(void)opaque;
	(void)ns;
	wakes++;
}

static const struct virtio_blk_throttle_ops fuzz_throttle = {
	.now_ns = fuzz_now,
	.wake = fuzz_wake,
};

/*
 * Bit 3 of @sel: limit to 4 KiB (requests beyond it are oversized) and
 * 1 + (@sel >> 4) requests per 10 ms; else no limit.
 */
static void fuzz_limiter(uint8_t sel)
{
	struct rate_limiter_config rl = {
		.bandwidth = { 4096, 0, 10 },
		.ops = { 1 + (sel >> 4), 0, 10 },
	};

	if (virtio_blk__set_limiter(blk, sel & 8 ? &rl : NULL))
		abort();
}

/* Deliver the wake-ups the limiter asked for, as the host timer would. */
static void fuzz_wakeups(void)
{
	unsigned int n;

	for (n = 0; wakes && n < 8; n++) {
		wakes = 0;
		virtio_blk__resume(blk);
	}
	wakes = 0;
}

/* The image and the device, once; abort if the host cannot give them. */
static void fuzz_setup(void)
{
	char path[] = "/tmp/ember-fuzz-blk-XXXXXX";
	struct irq_line irq = { .set = fuzz_virtio__irq };
	struct virtio_blk_backing bk;
	int fd;

	if (mem__wrap(&mem, ram, sizeof(ram)))
		abort();
	fd = mkstemp(path);
	if (fd < 0)
		abort();
	unlink(path);
	if (ftruncate(fd, FUZZ_DISK_BYTES))
		abort();
	bk = blk_backing__raw(fd, FUZZ_DISK_BYTES);
	blk = virtio_blk__create(&mem, irq, &bk, false, "fuzz");
	if (!blk)
		abort();
	t = virtio_blk__transport(blk);
	virtio_blk__set_throttle(blk, &fuzz_throttle, NULL);
}

/*
 * Reset and bring the device live (3.1.1) with @feat_sel picking among
 * the offered features and a queue of 1 << (@qlog % 9) entries.
 */
static void fuzz_driver_init(uint8_t feat_sel, uint8_t qlog)
{
	uint32_t st = fuzz_virtio__negotiate(t, feat_sel);

	qsize = 1u << (qlog % 9);
	fuzz_virtio__queue(t, 0, qsize, FUZZ_DESC, FUZZ_AVAIL(qsize),
			   FUZZ_USED(qsize));
	fuzz_virtio__live(t, st);
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
	fuzz_limiter(data[0]);
	idx1 = (uint16_t)(data[2] | data[3] << 8);
	idx2 = (uint16_t)(data[4] | data[5] << 8);
	data += FUZZ_HDR_BYTES;
	size -= FUZZ_HDR_BYTES;
	n = size < sizeof(ram) ? size : sizeof(ram);
	memcpy(ram, data, n);
	memset(ram + n, 0, sizeof(ram) - n);

	set_avail_idx(idx1);
	virtio_mmio__notify(t, 0);
	fuzz_wakeups();
	/* More work on a live queue, as a driver would add it. */
	if (!(fuzz_virtio__rd(t, REG_STATUS) & VIRTIO_STATUS_NEEDS_RESET)) {
		set_avail_idx((uint16_t)(idx1 + idx2));
		fuzz_virtio__wr(t, REG_INT_ACK, VIRTIO_MMIO_INT_VRING);
		virtio_mmio__notify(t, 0);
		fuzz_wakeups();
	}
	/* A device that needs a reset gets one (the next input re-inits). */
	if (fuzz_virtio__rd(t, REG_STATUS) & VIRTIO_STATUS_NEEDS_RESET)
		fuzz_virtio__wr(t, REG_STATUS, 0);
	return 0;
}
