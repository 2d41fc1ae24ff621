// SPDX-License-Identifier: Apache-2.0
/*
 * Unit tests for devices/virtio_net.c, driven through its virtio-mmio
 * transport by the test driver (virtio_driver.h): rx and tx queues in
 * guest RAM, a fake backend that records what the device sends.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../../devices/virtio_net.h"
#include "virtio_driver.h"

#define RAM_BYTES (1 << 20)
#define GSI	  11
#define QSZ	  16
#define RX_DESC	  0x1000
#define RX_AVAIL  0x2000
#define RX_USED	  0x3000
#define TX_DESC	  0x4000
#define TX_AVAIL  0x5000
#define TX_USED	  0x6000
#define BUF_GPA	  0x10000
#define BIG_GPA	  0x40000
#define HDR	  VIRTIO_NET_HDR_BYTES

static const uint8_t MAC[6] = { 0x02, 0x00, 0x00, 0x12, 0x34, 0x56 };

struct fixture {
	struct test_ram r; /* first: see test_ram__new_in() */
	struct virtio_net *n;
	struct virtio_mmio *t;
	struct vdrv_queue rx, tx;
	int irq_level;
	/* The fake backend. */
	int tx_ret;
	unsigned int tx_calls, rx_ready_calls;
	size_t tx_len;
	uint8_t tx_buf[HDR + VIRTIO_NET_MAX_FRAME];
	uint8_t pkt[HDR + VIRTIO_NET_MAX_FRAME];
};

static void fake_irq(void *opaque, unsigned int gsi, int level)
{
	struct fixture *f = opaque;

	assert_int_equal(gsi, GSI);
	f->irq_level = level;
}

static int fake_tx(void *backend, const struct iovec *iov, unsigned int iovcnt)
{
	struct fixture *f = backend;
	unsigned int i;

	f->tx_calls++;
	f->tx_len = 0;
	assert_true(iovcnt >= 2);
	assert_int_equal(iov[0].iov_len, HDR);
	for (i = 0; i < iovcnt; i++) {
		assert_true(f->tx_len + iov[i].iov_len <= sizeof(f->tx_buf));
		memcpy(f->tx_buf + f->tx_len, iov[i].iov_base, iov[i].iov_len);
		f->tx_len += iov[i].iov_len;
	}
	return f->tx_ret;
}

static void fake_rx_ready(void *backend)
{
	struct fixture *f = backend;

	f->rx_ready_calls++;
}

static const struct virtio_net_backend_ops fake_ops = {
	.tx = fake_tx,
	.rx_ready = fake_rx_ready,
};

#define rd(f, off)    vdrv_rd((f)->t, off)
#define wr(f, off, v) vdrv_wr((f)->t, off, v)

/* Reset, accept what is offered less @drop (and EVENT_IDX), both queues. */
static void driver_init(struct fixture *f, uint64_t drop)
{
	uint64_t feat = vdrv_device_features(f->t);

	feat &= ~((1ULL << VIRTIO_F_EVENT_IDX) | drop);
	vdrv_queue_init(f->r.ram, &f->rx, QSZ, RX_DESC, RX_AVAIL, RX_USED);
	vdrv_queue_init(f->r.ram, &f->tx, QSZ, TX_DESC, TX_AVAIL, TX_USED);
	assert_int_equal(vdrv_negotiate(f->t, feat), VDRV_STATUS_NEGOTIATED);
	vdrv_queue_start(f->t, VIRTIO_NET_Q_RX, &f->rx);
	vdrv_queue_start(f->t, VIRTIO_NET_Q_TX, &f->tx);
	vdrv_driver_ok(f->t);
}

static int setup(void **state)
{
	struct fixture *f = test_ram__new_in(sizeof(*f), RAM_BYTES, 0);
	struct irq_line irq = { .set = fake_irq, .gsi = GSI };
	struct virtio_net_config cfg = {
		.has_mac = true,
		.offloads = VIRTIO_NET_OFFLOADS,
	};

	if (!f)
		return -1;
	memcpy(cfg.mac, MAC, 6);
	irq.opaque = f;
	f->n = virtio_net__create(&f->r.m, irq, &cfg, &fake_ops, f);
	if (!f->n) {
		test_ram__free(&f->r);
		return -1;
	}
	f->t = virtio_net__transport(f->n);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	virtio_net__destroy(f->n);
	return test_ram__teardown(state);
}

/* A frame of @len bytes after a header with @flags and @gso in f->pkt. */
static uint32_t make_pkt(struct fixture *f, uint32_t len, uint8_t flags,
			 uint8_t gso, uint8_t seed)
{
	uint32_t i;

	memset(f->pkt, 0, HDR);
	f->pkt[VIRTIO_NET_HDR_FLAGS] = flags;
	f->pkt[VIRTIO_NET_HDR_GSO_TYPE] = gso;
	wr16(f->pkt, VIRTIO_NET_HDR_NUM_BUFFERS, 0xbeef);
	for (i = 0; i < len; i++)
		f->pkt[HDR + i] = (uint8_t)(i * 13 + seed);
	return HDR + len;
}

static void ack_irq(struct fixture *f)
{
	wr(f, INT_ACK, rd(f, INT_STATUS));
	assert_int_equal(f->irq_level, 0);
}

static void test_features_config(void **state)
{
	struct fixture *f = *state;
	uint64_t feat = vdrv_device_features(f->t);
	uint8_t cfg[8];
	unsigned int i;

	assert_int_equal(rd(f, DEVICE_ID), VIRTIO_ID_NET);
	assert_true(feat & (1ULL << VIRTIO_F_VERSION_1));
	assert_true(feat & (1ULL << VIRTIO_NET_F_MAC));
	assert_true(feat & (1ULL << VIRTIO_NET_F_MRG_RXBUF));
	assert_true(feat & (1ULL << VIRTIO_NET_F_STATUS));
	assert_int_equal(feat & VIRTIO_NET_OFFLOADS, VIRTIO_NET_OFFLOADS);
	for (i = 0; i < sizeof(cfg); i++)
		f->t->dev.ops->read(&f->t->dev, VIRTIO_MMIO_CONFIG + i, &cfg[i],
				    1);
	assert_memory_equal(cfg, MAC, 6);
	assert_int_equal(rd16(cfg, 6), VIRTIO_NET_S_LINK_UP);
	/* Writes to the MAC are dropped (legacy only). */
	cfg[0] = 0xff;
	f->t->dev.ops->write(&f->t->dev, VIRTIO_MMIO_CONFIG, cfg, 1);
	f->t->dev.ops->read(&f->t->dev, VIRTIO_MMIO_CONFIG, cfg, 1);
	assert_int_equal(cfg[0], MAC[0]);

	driver_init(f, 0);
	virtio_net__set_link(f->n, false);
	assert_int_equal(rd(f, INT_STATUS), VIRTIO_MMIO_INT_CONFIG);
	f->t->dev.ops->read(&f->t->dev, VIRTIO_MMIO_CONFIG + 6, cfg, 2);
	assert_int_equal(rd16(cfg, 0), 0);
	assert_true(virtio_net__guest_features(f->n) &
		    (1ULL << VIRTIO_NET_F_MRG_RXBUF));
}

static void test_create_refuses(void **state)
{
	struct fixture *f = *state;
	struct irq_line irq = { 0 };
	struct virtio_net_config cfg = { .has_mac = true };
	struct virtio_net_backend_ops no_tx = { 0 };

	cfg.mac[0] = 0x01; /* multicast */
	assert_null(virtio_net__create(&f->r.m, irq, &cfg, &fake_ops, f));
	cfg.mac[0] = 0x02;
	cfg.offloads = 1ULL << VIRTIO_NET_F_HOST_TSO4; /* without CSUM */
	assert_null(virtio_net__create(&f->r.m, irq, &cfg, &fake_ops, f));
	cfg.offloads = 1ULL << VIRTIO_NET_F_GUEST_TSO6;
	assert_null(virtio_net__create(&f->r.m, irq, &cfg, &fake_ops, f));
	cfg.offloads = 1ULL << 22; /* not an offload */
	assert_null(virtio_net__create(&f->r.m, irq, &cfg, &fake_ops, f));
	cfg.offloads = 0;
	assert_null(virtio_net__create(&f->r.m, irq, &cfg, &no_tx, f));
	assert_null(virtio_net__create(NULL, irq, &cfg, &fake_ops, f));
}

/* Put @len bytes of f->pkt in guest RAM at @gpa. */
static void put(struct fixture *f, uint64_t gpa, uint32_t off, uint32_t len)
{
	memcpy(f->r.ram + gpa, f->pkt + off, len);
}

static void test_tx_splits(void **state)
{
	struct fixture *f = *state;
	uint32_t len = make_pkt(f, 1000, 0, 0, 1);
	struct virtio_net_stats st;
	uint16_t head;

	driver_init(f, 0);
	/* Header and data in one buffer. */
	put(f, BUF_GPA, 0, len);
	head = vdrv_post(f->r.ram, &f->tx,
			 (struct vdrv_seg[]){ { BUF_GPA, len, false } }, 1);
	wr(f, QUEUE_NOTIFY, VIRTIO_NET_Q_TX);
	assert_int_equal(f->tx_calls, 1);
	assert_int_equal(f->tx_len, len);
	assert_memory_equal(f->tx_buf + HDR, f->pkt + HDR, len - HDR);
	assert_int_equal(rd16(f->tx_buf, VIRTIO_NET_HDR_NUM_BUFFERS), 0);
	assert_int_equal(vdrv_take_used(f->r.ram, &f->tx, head), 0);
	assert_int_equal(f->irq_level, 1);
	ack_irq(f);

	/* The header split 5 + 7, the data in three pieces. */
	put(f, BUF_GPA, 0, 5);
	put(f, BUF_GPA + 0x100, 5, 7 + 10);
	put(f, BUF_GPA + 0x200, 22, 1);
	put(f, BUF_GPA + 0x300, 23, len - 23);
	head = vdrv_post(
		f->r.ram, &f->tx,
		(struct vdrv_seg[]){ { BUF_GPA, 5, false },
				     { BUF_GPA + 0x100, 17, false },
				     { BUF_GPA + 0x200, 1, false },
				     { BUF_GPA + 0x300, len - 23, false } },
		4);
	wr(f, QUEUE_NOTIFY, VIRTIO_NET_Q_TX);
	assert_int_equal(f->tx_calls, 2);
	assert_int_equal(f->tx_len, len);
	assert_memory_equal(f->tx_buf + HDR, f->pkt + HDR, len - HDR);
	assert_int_equal(vdrv_take_used(f->r.ram, &f->tx, head), 0);
	assert_int_equal(f->irq_level, 1);

	virtio_net__stats(f->n, &st);
	assert_int_equal(st.tx_frames, 2);
	assert_int_equal(st.dev.write_bytes, 2 * (len - HDR));
	assert_int_equal(st.tx_errors, 0);
}

/* Post a one-or-two-buffer tx chain, notify, check it came back. */
static void tx_expect_error(struct fixture *f, const struct vdrv_seg *s,
			    unsigned int nsegs)
{
	struct virtio_net_stats before, after;
	unsigned int calls = f->tx_calls;
	uint16_t head;

	virtio_net__stats(f->n, &before);
	ack_irq(f);
	head = vdrv_post(f->r.ram, &f->tx, s, nsegs);
	wr(f, QUEUE_NOTIFY, VIRTIO_NET_Q_TX);
	assert_int_equal(f->tx_calls, calls);
	assert_int_equal(vdrv_take_used(f->r.ram, &f->tx, head), 0);
	assert_int_equal(f->irq_level, 1);
	virtio_net__stats(f->n, &after);
	assert_int_equal(after.tx_errors, before.tx_errors + 1);
	assert_int_equal(rd(f, STATUS) & VIRTIO_STATUS_NEEDS_RESET, 0);
}

static void test_tx_bad_content(void **state)
{
	struct fixture *f = *state;
	uint32_t len;

	/* HOST_TSO4 and CSUM not accepted. */
	driver_init(f, (1ULL << VIRTIO_NET_F_HOST_TSO4) |
			       (1ULL << VIRTIO_NET_F_HOST_TSO6) |
			       (1ULL << VIRTIO_NET_F_CSUM));
	len = make_pkt(f, 100, 0, 0, 2);
	put(f, BUF_GPA, 0, len);
	/* A device-writable buffer in a tx chain. */
	tx_expect_error(f,
			(struct vdrv_seg[]){ { BUF_GPA, len, false },
					     { BUF_GPA + 0x1000, 64, true } },
			2);
	tx_expect_error(f, (struct vdrv_seg[]){ { BUF_GPA, len, true } }, 1);
	/* Only a header, or not even that. */
	tx_expect_error(f, (struct vdrv_seg[]){ { BUF_GPA, HDR, false } }, 1);
	tx_expect_error(f, (struct vdrv_seg[]){ { BUF_GPA, 7, false } }, 1);
	/* Over 65550 bytes of frame. */
	tx_expect_error(
		f,
		(struct vdrv_seg[]){
			{ BIG_GPA, HDR + VIRTIO_NET_MAX_FRAME + 1, false } },
		1);
	/* GSO and checksum offload the driver did not negotiate. */
	len = make_pkt(f, 100, 0, VIRTIO_NET_HDR_GSO_TCPV4, 3);
	put(f, BUF_GPA, 0, len);
	tx_expect_error(f, (struct vdrv_seg[]){ { BUF_GPA, len, false } }, 1);
	len = make_pkt(f, 100, VIRTIO_NET_HDR_F_NEEDS_CSUM, 0, 3);
	put(f, BUF_GPA, 0, len);
	tx_expect_error(f, (struct vdrv_seg[]){ { BUF_GPA, len, false } }, 1);
	len = make_pkt(f, 100, 0, VIRTIO_NET_HDR_GSO_UDP, 3);
	put(f, BUF_GPA, 0, len);
	tx_expect_error(f, (struct vdrv_seg[]){ { BUF_GPA, len, false } }, 1);
}

static void test_tx_offloads_and_max(void **state)
{
	struct fixture *f = *state;
	uint32_t len =
		make_pkt(f, VIRTIO_NET_MAX_FRAME, VIRTIO_NET_HDR_F_NEEDS_CSUM,
			 VIRTIO_NET_HDR_GSO_TCPV6, 4);
	uint16_t head;

	driver_init(f, 0);
	wr16(f->pkt, VIRTIO_NET_HDR_CSUM_START, 54);
	wr16(f->pkt, VIRTIO_NET_HDR_CSUM_OFFSET, 16);
	put(f, BIG_GPA, 0, len);
	head = vdrv_post(f->r.ram, &f->tx,
			 (struct vdrv_seg[]){ { BIG_GPA, len, false } }, 1);
	wr(f, QUEUE_NOTIFY, VIRTIO_NET_Q_TX);
	assert_int_equal(f->tx_calls, 1);
	assert_int_equal(f->tx_len, len);
	assert_int_equal(f->tx_buf[VIRTIO_NET_HDR_GSO_TYPE],
			 VIRTIO_NET_HDR_GSO_TCPV6);
	assert_int_equal(vdrv_take_used(f->r.ram, &f->tx, head), 0);

	/* A checksum field past the frame's end. */
	wr16(f->pkt, VIRTIO_NET_HDR_CSUM_START, 0xffff);
	put(f, BIG_GPA, 0, HDR);
	tx_expect_error(f, (struct vdrv_seg[]){ { BIG_GPA, len, false } }, 1);
}

static void test_tx_backend_refuses(void **state)
{
	struct fixture *f = *state;
	uint32_t len = make_pkt(f, 60, 0, 0, 5);
	struct virtio_net_stats st;
	uint16_t head;

	driver_init(f, 0);
	f->tx_ret = -EAGAIN;
	put(f, BUF_GPA, 0, len);
	head = vdrv_post(f->r.ram, &f->tx,
			 (struct vdrv_seg[]){ { BUF_GPA, len, false } }, 1);
	wr(f, QUEUE_NOTIFY, VIRTIO_NET_Q_TX);
	assert_int_equal(f->tx_calls, 1);
	/* Completed and signalled all the same. */
	assert_int_equal(vdrv_take_used(f->r.ram, &f->tx, head), 0);
	assert_int_equal(f->irq_level, 1);
	virtio_net__stats(f->n, &st);
	assert_int_equal(st.tx_dropped, 1);
	assert_int_equal(st.tx_frames, 0);
}

/*
 * A backend that holds frames back (a rate limiter): the frame stays in
 * the ring, unused and unsignalled, later frames wait behind it, and
 * tx_resume sends them in order.
 */
static void test_tx_later(void **state)
{
	struct fixture *f = *state;
	uint32_t len = make_pkt(f, 60, 0, 0, 5);
	struct virtio_net_stats st;
	uint16_t h1, h2;

	driver_init(f, 0);
	f->tx_ret = VIRTIO_NET_TX_LATER;
	put(f, BUF_GPA, 0, len);
	put(f, BUF_GPA + 0x1000, 0, len);
	h1 = vdrv_post(f->r.ram, &f->tx,
		       (struct vdrv_seg[]){ { BUF_GPA, len, false } }, 1);
	h2 = vdrv_post(f->r.ram, &f->tx,
		       (struct vdrv_seg[]){ { BUF_GPA + 0x1000, len, false } },
		       1);
	wr(f, QUEUE_NOTIFY, VIRTIO_NET_Q_TX);
	assert_int_equal(f->tx_calls, 1); /* the second was not offered */
	assert_int_equal(vdrv_used_idx(f->r.ram, &f->tx), 0);
	assert_int_equal(f->irq_level, 0);
	/* A notify while held offers the same frame again. */
	wr(f, QUEUE_NOTIFY, VIRTIO_NET_Q_TX);
	assert_int_equal(f->tx_calls, 2);
	assert_int_equal(vdrv_used_idx(f->r.ram, &f->tx), 0);
	f->tx_ret = 0;
	virtio_net__tx_resume(f->n);
	assert_int_equal(f->tx_calls, 4);
	assert_int_equal(vdrv_take_used(f->r.ram, &f->tx, h1), 0);
	assert_int_equal(vdrv_take_used(f->r.ram, &f->tx, h2), 0);
	assert_int_equal(f->irq_level, 1);
	virtio_net__stats(f->n, &st);
	assert_int_equal(st.tx_frames, 2);
	assert_int_equal(st.tx_dropped, 0);
	assert_int_equal(st.dev.requests, 2);
}

static void test_tx_hostile_ring(void **state)
{
	struct fixture *f = *state;
	uint32_t len = make_pkt(f, 60, 0, 0, 6);

	driver_init(f, 0);
	put(f, BUF_GPA, 0, len);
	/* A two-descriptor loop: 0 -> 1 -> 0. */
	vdrv_post(f->r.ram, &f->tx,
		  (struct vdrv_seg[]){ { BUF_GPA, 30, false },
				       { BUF_GPA + 30, 30, false } },
		  2);
	wr16(f->r.ram, TX_DESC + 16 + 12, VIRTQ_DESC_F_NEXT);
	wr16(f->r.ram, TX_DESC + 16 + 14, 0);
	wr(f, QUEUE_NOTIFY, VIRTIO_NET_Q_TX);
	assert_int_equal(f->tx_calls, 0);
	assert_true(rd(f, STATUS) & VIRTIO_STATUS_NEEDS_RESET);

	/* A buffer past the end of guest RAM. */
	driver_init(f, 0);
	vdrv_post(f->r.ram, &f->tx,
		  (struct vdrv_seg[]){ { RAM_BYTES - 16, 64, false } }, 1);
	wr(f, QUEUE_NOTIFY, VIRTIO_NET_Q_TX);
	assert_int_equal(f->tx_calls, 0);
	assert_true(rd(f, STATUS) & VIRTIO_STATUS_NEEDS_RESET);
}

static void test_rx_single(void **state)
{
	struct fixture *f = *state;
	uint32_t len = make_pkt(f, 1514, 0, 0, 7);
	uint16_t head;

	driver_init(f, 1ULL << VIRTIO_NET_F_MRG_RXBUF);
	/* Header and data split across two writable buffers. */
	head = vdrv_post(f->r.ram, &f->rx,
			 (struct vdrv_seg[]){ { BUF_GPA, 10, true },
					      { BUF_GPA + 0x100, 2000, true } },
			 2);
	assert_int_equal(virtio_net__rx(f->n, f->pkt, len), 0);
	assert_int_equal(vdrv_take_used(f->r.ram, &f->rx, head), len);
	assert_int_equal(f->irq_level, 1);
	assert_memory_equal(f->r.ram + BUF_GPA, f->pkt, 10);
	assert_int_equal(rd16(f->r.ram + BUF_GPA + 0x100 - 10,
			      VIRTIO_NET_HDR_NUM_BUFFERS),
			 1);
	assert_memory_equal(f->r.ram + BUF_GPA + 0x100 + 2, f->pkt + HDR,
			    len - HDR);
}

static void test_rx_too_small_no_mrg(void **state)
{
	struct fixture *f = *state;
	uint32_t len = make_pkt(f, 1514, 0, 0, 8);
	struct virtio_net_stats st;
	uint16_t head;

	driver_init(f, 1ULL << VIRTIO_NET_F_MRG_RXBUF);
	head = vdrv_post(f->r.ram, &f->rx,
			 (struct vdrv_seg[]){ { BUF_GPA, 200, true } }, 1);
	assert_int_equal(virtio_net__rx(f->n, f->pkt, len), -EMSGSIZE);
	assert_int_equal(vdrv_used_idx(f->r.ram, &f->rx), 0);
	/* The buffer is still there for a frame that fits. */
	len = make_pkt(f, 100, 0, 0, 9);
	assert_int_equal(virtio_net__rx(f->n, f->pkt, len), 0);
	assert_int_equal(vdrv_take_used(f->r.ram, &f->rx, head), len);
	virtio_net__stats(f->n, &st);
	assert_int_equal(st.rx_errors, 1);
	assert_int_equal(st.rx_frames, 1);
}

static void test_rx_mergeable(void **state)
{
	struct fixture *f = *state;
	uint32_t len = make_pkt(f, 2500, 0, 0, 10);
	uint16_t h[3];
	unsigned int i;

	driver_init(f, 0);
	for (i = 0; i < 3; i++)
		h[i] = vdrv_post(f->r.ram, &f->rx,
				 (struct vdrv_seg[]){
					 { BUF_GPA + 0x1000 * i, 1000, true } },
				 1);
	assert_int_equal(virtio_net__rx(f->n, f->pkt, len), 0);
	assert_int_equal(vdrv_take_used(f->r.ram, &f->rx, h[0]), 1000);
	assert_int_equal(vdrv_take_used(f->r.ram, &f->rx, h[1]), 1000);
	assert_int_equal(vdrv_take_used(f->r.ram, &f->rx, h[2]), len - 2000);
	assert_int_equal(rd16(f->r.ram + BUF_GPA, VIRTIO_NET_HDR_NUM_BUFFERS),
			 3);
	assert_memory_equal(f->r.ram + BUF_GPA + HDR, f->pkt + HDR, 1000 - HDR);
	assert_memory_equal(f->r.ram + BUF_GPA + 0x1000, f->pkt + 1000, 1000);
	assert_memory_equal(f->r.ram + BUF_GPA + 0x2000, f->pkt + 2000,
			    len - 2000);
}

static void test_rx_waits_for_buffers(void **state)
{
	struct fixture *f = *state;
	uint32_t len1, len2;
	uint16_t h1, h2;

	driver_init(f, 0);
	/* Only half of what the first frame needs. */
	h1 = vdrv_post(f->r.ram, &f->rx,
		       (struct vdrv_seg[]){ { BUF_GPA, 1000, true } }, 1);
	len1 = make_pkt(f, 1500, 0, 0, 11);
	assert_int_equal(virtio_net__rx(f->n, f->pkt, len1), VIRTIO_NET_QUEUED);
	assert_int_equal(vdrv_used_idx(f->r.ram, &f->rx), 0);
	len2 = make_pkt(f, 64, 0, 0, 12);
	assert_int_equal(virtio_net__rx(f->n, f->pkt, len2), VIRTIO_NET_QUEUED);
	assert_int_equal(f->irq_level, 0);

	h2 = vdrv_post(f->r.ram, &f->rx,
		       (struct vdrv_seg[]){ { BUF_GPA + 0x1000, 1000, true } },
		       1);
	vdrv_post(f->r.ram, &f->rx,
		  (struct vdrv_seg[]){ { BUF_GPA + 0x2000, 1000, true } }, 1);
	wr(f, QUEUE_NOTIFY, VIRTIO_NET_Q_RX);
	/* In order: the first frame in two buffers, then the second. */
	assert_int_equal(vdrv_take_used(f->r.ram, &f->rx, h1), 1000);
	assert_int_equal(vdrv_take_used(f->r.ram, &f->rx, h2), len1 - 1000);
	assert_int_equal(rd16(f->r.ram + BUF_GPA, VIRTIO_NET_HDR_NUM_BUFFERS),
			 2);
	assert_int_equal(vdrv_take_used(f->r.ram, &f->rx, h2 + 1), len2);
	assert_memory_equal(f->r.ram + BUF_GPA + 0x2000 + HDR, f->pkt + HDR,
			    len2 - HDR);
	assert_int_equal(f->irq_level, 1);
}

static void test_rx_bound(void **state)
{
	struct fixture *f = *state;
	uint32_t len = make_pkt(f, 100, 0, 0, 13);
	struct virtio_net_stats st;
	unsigned int i;

	driver_init(f, 0);
	for (i = 0; i < VIRTIO_NET_RX_PENDING_FRAMES; i++)
		assert_int_equal(virtio_net__rx(f->n, f->pkt, len),
				 VIRTIO_NET_QUEUED);
	assert_false(virtio_net__rx_room(f->n));
	assert_int_equal(virtio_net__rx(f->n, f->pkt, len), -ENOBUFS);
	virtio_net__stats(f->n, &st);
	assert_int_equal(st.rx_dropped, 1);

	/* Buffers for some of them: delivered, and the backend told. */
	for (i = 0; i < QSZ; i++)
		vdrv_post(f->r.ram, &f->rx,
			  (struct vdrv_seg[]){
				  { BUF_GPA + 0x800 * i, 0x800, true } },
			  1);
	wr(f, QUEUE_NOTIFY, VIRTIO_NET_Q_RX);
	assert_int_equal(vdrv_used_idx(f->r.ram, &f->rx), QSZ);
	assert_true(virtio_net__rx_room(f->n));
	assert_int_equal(f->rx_ready_calls, 1);

	/* A reset drops the rest, counted. */
	wr(f, STATUS, 0);
	virtio_net__stats(f->n, &st);
	assert_int_equal(st.rx_frames, QSZ);
	assert_int_equal(st.rx_dropped, 1 + VIRTIO_NET_RX_PENDING_FRAMES - QSZ);
}

static void test_rx_bad(void **state)
{
	struct fixture *f = *state;
	uint32_t len;

	/* No guest offloads accepted. */
	driver_init(f, (1ULL << VIRTIO_NET_F_GUEST_CSUM) |
			       (1ULL << VIRTIO_NET_F_GUEST_TSO4) |
			       (1ULL << VIRTIO_NET_F_GUEST_TSO6));
	len = make_pkt(f, 100, VIRTIO_NET_HDR_F_NEEDS_CSUM, 0, 14);
	assert_int_equal(virtio_net__rx(f->n, f->pkt, len), -EPROTO);
	len = make_pkt(f, 100, 0, VIRTIO_NET_HDR_GSO_TCPV4, 14);
	assert_int_equal(virtio_net__rx(f->n, f->pkt, len), -EPROTO);
	assert_int_equal(virtio_net__rx(f->n, f->pkt, HDR), -EINVAL);
	assert_int_equal(
		virtio_net__rx(f->n, f->pkt, HDR + VIRTIO_NET_MAX_FRAME + 1),
		-EINVAL);

	/* A device-readable buffer on the rx queue. */
	len = make_pkt(f, 100, 0, 0, 15);
	vdrv_post(f->r.ram, &f->rx,
		  (struct vdrv_seg[]){ { BUF_GPA, 2000, false } }, 1);
	virtio_net__rx(f->n, f->pkt, len);
	assert_true(rd(f, STATUS) & VIRTIO_STATUS_NEEDS_RESET);
	assert_memory_not_equal(f->r.ram + BUF_GPA + HDR, f->pkt + HDR, 16);
}

static void test_rx_ring_too_small_mrg(void **state)
{
	struct fixture *f = *state;
	uint32_t len = make_pkt(f, 60000, 0, 0, 16);
	struct virtio_net_stats st;
	unsigned int i;

	driver_init(f, 0);
	/* 16 buffers of 256 bytes can never hold 60000. */
	for (i = 0; i < QSZ; i++)
		vdrv_post(f->r.ram, &f->rx,
			  (struct vdrv_seg[]){
				  { BUF_GPA + 0x100 * i, 0x100, true } },
			  1);
	assert_int_equal(virtio_net__rx(f->n, f->pkt, len), -EMSGSIZE);
	assert_int_equal(vdrv_used_idx(f->r.ram, &f->rx), 0);
	len = make_pkt(f, 200, 0, 0, 17);
	assert_int_equal(virtio_net__rx(f->n, f->pkt, len), 0);
	assert_int_equal(vdrv_used_idx(f->r.ram, &f->rx), 1);
	virtio_net__stats(f->n, &st);
	assert_int_equal(st.rx_errors, 1);
}

static void test_state(void **state)
{
	struct fixture *f = *state;
	struct virtio_net_state s, s2;
	uint32_t len = make_pkt(f, 100, 0, 0, 18);
	struct virtio_net_stats st;

	virtio_net__get_state(f->n, &s);
	assert_memory_equal(s.mac, MAC, 6);
	assert_true(s.has_mac);
	assert_true(s.link_up);
	assert_int_equal(s.offloads, VIRTIO_NET_OFFLOADS);

	s2 = s;
	s2.mac[0] = 0x03;
	assert_int_equal(virtio_net__set_state(f->n, &s2), -EINVAL);
	s2 = s;
	s2.offloads = 1ULL << VIRTIO_NET_F_HOST_TSO4;
	assert_int_equal(virtio_net__set_state(f->n, &s2), -EINVAL);
	s2.offloads = 1ULL << 40;
	assert_int_equal(virtio_net__set_state(f->n, &s2), -EINVAL);
	virtio_net__get_state(f->n, &s2);
	assert_memory_equal(&s, &s2, sizeof(s));

	/* A good state: taken, pending frames dropped and counted. */
	driver_init(f, 0);
	assert_int_equal(virtio_net__rx(f->n, f->pkt, len), VIRTIO_NET_QUEUED);
	s2 = s;
	s2.mac[5] = 0x99;
	s2.link_up = false;
	s2.offloads = 0;
	assert_int_equal(virtio_net__set_state(f->n, &s2), 0);
	virtio_net__get_state(f->n, &s);
	assert_memory_equal(&s, &s2, sizeof(s));
	virtio_net__stats(f->n, &st);
	assert_int_equal(st.rx_dropped, 1);
	assert_int_equal(vdrv_device_features(f->t) & VIRTIO_NET_OFFLOADS, 0);
}

/* Without GUEST_CSUM the device sends flags 0; tx never passes DATA_VALID. */
static void test_csum_flags(void **state)
{
	struct fixture *f = *state;
	uint32_t len = make_pkt(f, 100, VIRTIO_NET_HDR_F_DATA_VALID, 0, 19);
	uint16_t head;

	driver_init(f, 1ULL << VIRTIO_NET_F_GUEST_CSUM |
			       1ULL << VIRTIO_NET_F_GUEST_TSO4 |
			       1ULL << VIRTIO_NET_F_GUEST_TSO6);
	head = vdrv_post(f->r.ram, &f->rx,
			 (struct vdrv_seg[]){ { BUF_GPA, 2000, true } }, 1);
	assert_int_equal(virtio_net__rx(f->n, f->pkt, len), 0);
	assert_int_equal(vdrv_take_used(f->r.ram, &f->rx, head), len);
	assert_int_equal(f->r.ram[BUF_GPA + VIRTIO_NET_HDR_FLAGS], 0);

	driver_init(f, 0);
	head = vdrv_post(f->r.ram, &f->rx,
			 (struct vdrv_seg[]){ { BUF_GPA, 2000, true } }, 1);
	assert_int_equal(virtio_net__rx(f->n, f->pkt, len), 0);
	assert_int_equal(vdrv_take_used(f->r.ram, &f->rx, head), len);
	assert_int_equal(f->r.ram[BUF_GPA + VIRTIO_NET_HDR_FLAGS],
			 VIRTIO_NET_HDR_F_DATA_VALID);

	put(f, BUF_GPA + 0x1000, 0, len);
	head = vdrv_post(
		f->r.ram, &f->tx,
		(struct vdrv_seg[]){ { BUF_GPA + 0x1000, len, false } }, 1);
	wr(f, QUEUE_NOTIFY, VIRTIO_NET_Q_TX);
	assert_int_equal(f->tx_calls, 1);
	assert_int_equal(f->tx_buf[VIRTIO_NET_HDR_FLAGS], 0);
	assert_int_equal(vdrv_take_used(f->r.ram, &f->tx, head), 0);
}

/*
 * With EVENT_IDX: a frame waiting for more buffers leaves avail_event
 * where the driver's next buffer crosses it (so it notifies).
 */
static void test_rx_wait_event_idx(void **state)
{
	struct fixture *f = *state;
	uint64_t feat = vdrv_device_features(f->t);
	uint32_t len = make_pkt(f, 1500, 0, 0, 20);
	uint16_t h1, h2;

	vdrv_queue_init(f->r.ram, &f->rx, QSZ, RX_DESC, RX_AVAIL, RX_USED);
	vdrv_queue_init(f->r.ram, &f->tx, QSZ, TX_DESC, TX_AVAIL, TX_USED);
	assert_int_equal(vdrv_negotiate(f->t, feat), VDRV_STATUS_NEGOTIATED);
	vdrv_queue_start(f->t, VIRTIO_NET_Q_RX, &f->rx);
	vdrv_queue_start(f->t, VIRTIO_NET_Q_TX, &f->tx);
	vdrv_driver_ok(f->t);

	h1 = vdrv_post(f->r.ram, &f->rx,
		       (struct vdrv_seg[]){ { BUF_GPA, 1000, true } }, 1);
	assert_int_equal(virtio_net__rx(f->n, f->pkt, len), VIRTIO_NET_QUEUED);
	/* avail_event: at the avail idx the driver has published (1). */
	assert_int_equal(rd16(f->r.ram, RX_USED + 4 + 8 * QSZ), 1);
	h2 = vdrv_post(f->r.ram, &f->rx,
		       (struct vdrv_seg[]){ { BUF_GPA + 0x1000, 1000, true } },
		       1);
	wr(f, QUEUE_NOTIFY, VIRTIO_NET_Q_RX);
	assert_int_equal(vdrv_take_used(f->r.ram, &f->rx, h1), 1000);
	assert_int_equal(vdrv_take_used(f->r.ram, &f->rx, h2), len - 1000);
	assert_int_equal(f->irq_level, 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_features_config, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_create_refuses, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_tx_splits, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_tx_bad_content, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_tx_offloads_and_max, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_tx_backend_refuses, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_tx_later, setup, teardown),
		cmocka_unit_test_setup_teardown(test_tx_hostile_ring, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_rx_single, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_rx_too_small_no_mrg, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_rx_mergeable, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_rx_waits_for_buffers,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_rx_bound, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rx_bad, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rx_ring_too_small_mrg,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_state, setup, teardown),
		cmocka_unit_test_setup_teardown(test_csum_flags, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_rx_wait_event_idx, setup,
						teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
