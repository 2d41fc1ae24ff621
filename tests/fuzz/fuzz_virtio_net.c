// SPDX-License-Identifier: Apache-2.0
/*
 * libFuzzer target: the virtio-net rx and tx paths (devices/virtio_net.c
 * over devices/virtio_mmio.c and devices/virtq.c) against a hostile
 * driver and a backend that sometimes refuses a frame or holds it back
 * (a rate limiter: the frame stays in the ring until tx_resume).  One
 * device, made once.
 * Per input the transport is reset and brought live (features from the
 * input, VERSION_1 always, rx and tx queues of the input's sizes at
 * offsets fixed per size, DRIVER_OK); then the input is copied over guest
 * RAM, so both queues' descriptors, rings and buffers are the fuzzer's.
 * A few rounds follow, each moving the avail indices, injecting frames
 * (of the input's lengths and header bytes, the oversize included) and
 * notifying both queues.  Any crash, leak or sanitizer report is a bug,
 * and so is a frame handed to the backend that breaks the ops contract.
 */
#include <endian.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "devices/virtio_net.h"
#include "vmm/mem.h"
#include "fuzz_virtio.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_RAM_BYTES (1 << 20)
#define FUZZ_ROUNDS    4
/* Per round: rx avail +, tx avail +, frames, le16 length, flags, gso. */
#define FUZZ_ROUND_BYTES 7
#define FUZZ_HDR_BYTES	 (4 + FUZZ_ROUNDS * FUZZ_ROUND_BYTES)

/*
 * Each queue packed as in fuzz_virtio_blk.c: descriptors, avail ring,
 * used ring (4-byte aligned); the tx queue starts 16-byte aligned after
 * the rx queue.  Buffers may be anywhere in RAM, the rings included.
 */
#define FUZZ_AVAIL(q) (16u * (q))
#define FUZZ_USED(q)  ((FUZZ_AVAIL(q) + 6u + 2u * (q) + 3u) & ~3u)
#define FUZZ_QEND(q)  ((FUZZ_USED(q) + 6u + 8u * (q) + 15u) & ~15u)

/*
 * Static and made once (the device): the fuzzer's own state, not the
 * VMM's; guest RAM is 1 MiB and rewritten per input.
 */
static uint8_t ram[FUZZ_RAM_BYTES] __attribute__((aligned(4096)));
static struct guest_mem mem;
static struct virtio_net *net;
static struct virtio_mmio *t;
static unsigned int qsize[2];
static uint32_t qbase[2];
static uint16_t avail[2];
static uint8_t be_mode; /* steers the backend, this input */
static unsigned int tx_seen;
static uint8_t scratch[VIRTIO_NET_HDR_BYTES + VIRTIO_NET_MAX_FRAME + 16];
static uint8_t frame[VIRTIO_NET_HDR_BYTES + VIRTIO_NET_MAX_FRAME + 16];

/* Called with the transport lock held: check the contract, touch it all. */
static int be_tx(void *backend, const struct iovec *iov, unsigned int iovcnt)
{
	size_t total = 0;
	unsigned int i;

	(void)backend;
	if (iovcnt < 2 || iovcnt > VIRTQ_MAX_SIZE + 1 ||
	    iov[0].iov_len != VIRTIO_NET_HDR_BYTES)
		__builtin_trap();
	for (i = 0; i < iovcnt; i++) {
		if (!iov[i].iov_len || iov[i].iov_len > sizeof(scratch) - total)
			__builtin_trap();
		memcpy(scratch + total, iov[i].iov_base, iov[i].iov_len);
		total += iov[i].iov_len;
	}
	if (total > VIRTIO_NET_HDR_BYTES + VIRTIO_NET_MAX_FRAME)
		__builtin_trap();
	tx_seen++;
	/* Some modes refuse some frames, as a full tap would. */
	if ((be_mode & 0x80) && (total + tx_seen) % 3 == 0)
		return -11; /* -EAGAIN */
	/* Others hold some back, as a transmit rate limiter does. */
	if ((be_mode & 0x20) && (total + tx_seen) % 5 == 0)
		return VIRTIO_NET_TX_LATER;
	return 0;
}

static void be_rx_ready(void *backend)
{
	(void)backend;
}

static const struct virtio_net_backend_ops be_ops = {
	.tx = be_tx,
	.rx_ready = be_rx_ready,
};

static void fuzz_setup(void)
{
	struct irq_line irq = { .set = fuzz_virtio__irq };
	struct virtio_net_config cfg = {
		.mac = { 0x02, 0, 0, 0, 0, 1 },
		.has_mac = true,
		.offloads = VIRTIO_NET_OFFLOADS,
	};
	size_t i;

	if (mem__wrap(&mem, ram, sizeof(ram)))
		abort();
	net = virtio_net__create(&mem, irq, &cfg, &be_ops, NULL);
	if (!net)
		abort();
	t = virtio_net__transport(net);
	for (i = 0; i < sizeof(frame); i++)
		frame[i] = (uint8_t)(i * 31 + 7);
}

/* Reset and bring the device live with queues of 1 << (log % 9). */
static void fuzz_driver_init(uint8_t feat_sel, uint8_t rxlog, uint8_t txlog)
{
	uint32_t st = fuzz_virtio__negotiate(t, feat_sel);

	qsize[0] = 1u << (rxlog % 9);
	qsize[1] = 1u << (txlog % 9);
	qbase[0] = 0;
	qbase[1] = FUZZ_QEND(qsize[0]);
	fuzz_virtio__queue(t, 0, qsize[0], qbase[0],
			   qbase[0] + FUZZ_AVAIL(qsize[0]),
			   qbase[0] + FUZZ_USED(qsize[0]));
	fuzz_virtio__queue(t, 1, qsize[1], qbase[1],
			   qbase[1] + FUZZ_AVAIL(qsize[1]),
			   qbase[1] + FUZZ_USED(qsize[1]));
	fuzz_virtio__live(t, st);
}

static void set_avail_idx(unsigned int q, uint16_t idx)
{
	idx = htole16(idx);
	memcpy(ram + qbase[q] + FUZZ_AVAIL(qsize[q]) + 2, &idx, sizeof(idx));
}

/* One round: @r is FUZZ_ROUND_BYTES of the input. */
static void fuzz_round(const uint8_t *r)
{
	uint32_t len = (uint32_t)(r[3] | r[4] << 8);
	unsigned int i, frames = r[2] % 4;

	avail[0] = (uint16_t)(avail[0] + r[0]);
	avail[1] = (uint16_t)(avail[1] + r[1]);
	set_avail_idx(0, avail[0]);
	set_avail_idx(1, avail[1]);
	/* Lengths past the maximum too (a bit of the count byte). */
	if (r[2] & 0x80)
		len += VIRTIO_NET_HDR_BYTES + VIRTIO_NET_MAX_FRAME - 0xffff + 8;
	if (len > sizeof(frame))
		len = sizeof(frame);
	frame[VIRTIO_NET_HDR_FLAGS] = r[5];
	frame[VIRTIO_NET_HDR_GSO_TYPE] = r[6];
	for (i = 0; i < frames; i++)
		virtio_net__rx(net, frame, len);
	(void)virtio_net__rx_room(net);
	fuzz_virtio__wr(t, REG_INT_ACK,
			VIRTIO_MMIO_INT_VRING | VIRTIO_MMIO_INT_CONFIG);
	virtio_mmio__notify(t, VIRTIO_NET_Q_TX);
	virtio_mmio__notify(t, VIRTIO_NET_Q_RX);
	/* The limiter's timer: the held frames go again. */
	if (r[2] & 0x40)
		virtio_net__tx_resume(net);
}

/*
 * Input: feature choice, rx and tx queue sizes, backend mode, then
 * FUZZ_ROUNDS rounds, then guest RAM from GPA 0.
 */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct virtio_net_state s;
	const uint8_t *rounds;
	unsigned int i;
	size_t n;

	if (size < FUZZ_HDR_BYTES)
		return 0;
	if (!net)
		fuzz_setup();
	/* Before RAM is written: set-up writes nothing there. */
	fuzz_driver_init(data[0], data[1], data[2]);
	be_mode = data[3];
	rounds = data + 4;
	data += FUZZ_HDR_BYTES;
	size -= FUZZ_HDR_BYTES;
	n = size < sizeof(ram) ? size : sizeof(ram);
	memcpy(ram, data, n);
	memset(ram + n, 0, sizeof(ram) - n);
	avail[0] = 0;
	avail[1] = 0;

	for (i = 0; i < FUZZ_ROUNDS; i++) {
		if (fuzz_virtio__rd(t, REG_STATUS) & VIRTIO_STATUS_NEEDS_RESET)
			break;
		fuzz_round(rounds + i * FUZZ_ROUND_BYTES);
	}
	/* A snapshot round trip must be taken back as it was given. */
	if (be_mode & 0x40) {
		virtio_net__get_state(net, &s);
		if (virtio_net__set_state(net, &s))
			__builtin_trap();
	}
	/* Reset: the next input starts clean, pending frames dropped. */
	fuzz_virtio__wr(t, REG_STATUS, 0);
	return 0;
}
