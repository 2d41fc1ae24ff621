// SPDX-License-Identifier: Apache-2.0
/*
 * Unit tests for devices/virtio_mmio.c: the virtio-mmio v2 register file,
 * feature negotiation, the status state machine, queue set-up,
 * notifications and the interrupt line, with a fake device model.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../../devices/virtio_mmio.h"
#include "virtio_driver.h"

#define RAM_BYTES (1 << 20)
#define GSI	  7
#define FAKE_ID	  42
#define QSZ	  16
#define DESC_GPA  0x1000
#define AVAIL_GPA 0x2000
#define USED_GPA  0x3000

/* The fake device offers bits 3 and 40. */
#define FAKE_FEATURES ((1ULL << 3) | (1ULL << 40))
#define V1	      (1ULL << VIRTIO_F_VERSION_1)

struct fixture {
	struct test_ram r; /* first: see test_ram__new_in() */
	struct virtio_mmio t;
	unsigned int irq_calls;
	int irq_level;
	unsigned int irq_gsi;
	unsigned int notify_calls[VIRTIO_MMIO_MAX_QUEUES];
	unsigned int reset_calls;
	uint64_t cfg_off;
	uint32_t cfg_len;
	unsigned int cfg_reads, cfg_writes;
	uint8_t cfg_written[8];
};

static void fake_irq(void *opaque, unsigned int gsi, int level)
{
	struct fixture *f = opaque;

	f->irq_calls++;
	f->irq_level = level;
	f->irq_gsi = gsi;
}

static uint64_t fake_features(void *opaque)
{
	(void)opaque;
	return FAKE_FEATURES;
}

static void fake_config_read(void *opaque, uint64_t off, void *data,
			     uint32_t len)
{
	struct fixture *f = opaque;

	f->cfg_reads++;
	f->cfg_off = off;
	f->cfg_len = len;
	memset(data, 0xab, len);
}

static void fake_config_write(void *opaque, uint64_t off, const void *data,
			      uint32_t len)
{
	struct fixture *f = opaque;

	f->cfg_writes++;
	f->cfg_off = off;
	f->cfg_len = len;
	memcpy(f->cfg_written, data, len < 8 ? len : 8);
}

static void fake_notify(void *opaque, struct virtio_mmio *t, unsigned int idx)
{
	struct fixture *f = opaque;

	assert_ptr_equal(t, &f->t);
	f->notify_calls[idx]++;
}

static void fake_reset(void *opaque)
{
	struct fixture *f = opaque;

	f->reset_calls++;
}

static const struct virtio_dev_ops fake_ops = {
	.name = "fake",
	.device_id = FAKE_ID,
	.nr_queues = 2,
	.features = fake_features,
	.config_read = fake_config_read,
	.config_write = fake_config_write,
	.notify = fake_notify,
	.reset = fake_reset,
};

static int setup(void **state)
{
	struct fixture *f = test_ram__new_in(sizeof(*f), RAM_BYTES, 0);
	struct irq_line irq;

	if (!f)
		return -1;
	irq = (struct irq_line){ .set = fake_irq, .opaque = f, .gsi = GSI };
	/* Garbage first: init must not rely on a zeroed struct. */
	memset(&f->t, 0x5a, sizeof(f->t));
	if (virtio_mmio__init(&f->t, &fake_ops, f, &f->r.m, irq)) {
		test_ram__free(&f->r);
		return -1;
	}
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	virtio_mmio__destroy(&f->t);
	return test_ram__teardown(state);
}

#define rd(f, off)	      vdrv_rd(&(f)->t, off)
#define wr(f, off, v)	      vdrv_wr(&(f)->t, off, v)
#define device_features(f)    vdrv_device_features(&(f)->t)
#define driver_features(f, x) vdrv_driver_features(&(f)->t, x)
#define negotiate(f, feat)    vdrv_negotiate(&(f)->t, feat)
#define setup_queue(f, ...)   vdrv_setup_queue(&(f)->t, __VA_ARGS__)

static const uint32_t ok_status = VDRV_STATUS_NEGOTIATED;

/* Negotiated, queue 0 (and 1) ready, DRIVER_OK. */
static void bring_up(struct fixture *f, uint64_t feat)
{
	assert_int_equal(negotiate(f, feat), ok_status);
	setup_queue(f, 0, QSZ, DESC_GPA, AVAIL_GPA, USED_GPA);
	setup_queue(f, 1, QSZ, DESC_GPA + 0x4000, AVAIL_GPA + 0x4000,
		    USED_GPA + 0x4000);
	wr(f, STATUS, ok_status | VIRTIO_STATUS_DRIVER_OK);
	assert_int_equal(rd(f, STATUS), ok_status | VIRTIO_STATUS_DRIVER_OK);
}

static void test_identity(void **state)
{
	struct fixture *f = *state;

	assert_int_equal(rd(f, MAGIC), VIRTIO_MMIO_MAGIC);
	assert_int_equal(rd(f, MAGIC), 0x74726976);
	assert_int_equal(rd(f, VERSION), 2);
	assert_int_equal(rd(f, DEVICE_ID), FAKE_ID);
	assert_int_equal(rd(f, VENDOR_ID), VIRTIO_MMIO_VENDOR);
	assert_int_equal(rd(f, STATUS), 0);
	assert_int_equal(rd(f, INT_STATUS), 0);
	assert_int_equal(rd(f, CONFIG_GEN), 0);
	/* No shared memory regions: length -1. */
	assert_int_equal(rd(f, SHM_LEN_LOW), 0xffffffff);
	assert_int_equal(rd(f, SHM_LEN_HIGH), 0xffffffff);
	/* The registers are read-only. */
	wr(f, MAGIC, 0);
	wr(f, DEVICE_ID, 0);
	assert_int_equal(rd(f, MAGIC), VIRTIO_MMIO_MAGIC);
	assert_int_equal(rd(f, DEVICE_ID), FAKE_ID);
	assert_int_equal(f->irq_calls, 0);
}

static void test_init_rejects_bad_ops(void **state)
{
	struct fixture *f = *state;
	struct virtio_dev_ops ops = fake_ops;
	struct virtio_mmio t;
	struct irq_line irq = { 0 };

	ops.nr_queues = 0;
	assert_int_equal(virtio_mmio__init(&t, &ops, NULL, &f->r.m, irq),
			 -EINVAL);
	ops.nr_queues = VIRTIO_MMIO_MAX_QUEUES + 1;
	assert_int_equal(virtio_mmio__init(&t, &ops, NULL, &f->r.m, irq),
			 -EINVAL);
	ops.nr_queues = 1;
	ops.notify = NULL;
	assert_int_equal(virtio_mmio__init(&t, &ops, NULL, &f->r.m, irq),
			 -EINVAL);
	assert_int_equal(virtio_mmio__init(&t, NULL, NULL, &f->r.m, irq),
			 -EINVAL);
	ops.notify = fake_notify;
	assert_int_equal(virtio_mmio__init(&t, &ops, NULL, NULL, irq), -EINVAL);
	/* Optional ops may be missing. */
	ops.features = NULL;
	ops.config_read = NULL;
	ops.config_write = NULL;
	ops.reset = NULL;
	assert_int_equal(virtio_mmio__init(&t, &ops, NULL, &f->r.m, irq), 0);
	{
		uint32_t v = 0xeeeeeeee;

		t.dev.ops->read(&t.dev, VIRTIO_MMIO_CONFIG, &v, 4);
		assert_int_equal(v, 0);
		t.dev.ops->write(&t.dev, VIRTIO_MMIO_CONFIG, &v, 4);
		v = htole32(1);
		t.dev.ops->write(&t.dev, DEV_FEATURES_SEL, &v, 4);
		t.dev.ops->read(&t.dev, DEV_FEATURES, &v, 4);
		assert_int_equal(le32toh(v), 1); /* VERSION_1 only */
		v = 0;
		t.dev.ops->write(&t.dev, STATUS, &v, 4); /* reset, no .reset */
	}
	virtio_mmio__destroy(&t);
	virtio_mmio__destroy(NULL);
}

static void test_device_features(void **state)
{
	struct fixture *f = *state;
	uint64_t feat = device_features(f);

	assert_true(feat & (1ULL << VIRTIO_F_VERSION_1));
	assert_true(feat & (1ULL << VIRTIO_F_EVENT_IDX));
	assert_true(feat & (1ULL << VIRTIO_F_INDIRECT_DESC));
	assert_true(feat & (1ULL << 3));
	assert_true(feat & (1ULL << 40));
	assert_int_equal(feat, FAKE_FEATURES | V1 |
				       (1ULL << VIRTIO_F_EVENT_IDX) |
				       (1ULL << VIRTIO_F_INDIRECT_DESC));
	/* Selectors beyond the 64 bits read 0. */
	wr(f, DEV_FEATURES_SEL, 2);
	assert_int_equal(rd(f, DEV_FEATURES), 0);
	wr(f, DEV_FEATURES_SEL, 0xffffffff);
	assert_int_equal(rd(f, DEV_FEATURES), 0);
}

static void test_negotiation_ok(void **state)
{
	struct fixture *f = *state;
	uint64_t feat = V1 | (1ULL << 40) | (1ULL << VIRTIO_F_EVENT_IDX);

	assert_int_equal(negotiate(f, feat), ok_status);
	assert_int_equal(f->t.driver_features, feat);
	assert_true(virtio_mmio__feature(&f->t, VIRTIO_F_VERSION_1));
	assert_true(virtio_mmio__feature(&f->t, 40));
	assert_true(virtio_mmio__feature(&f->t, VIRTIO_F_EVENT_IDX));
	assert_false(virtio_mmio__feature(&f->t, 3));
	assert_false(virtio_mmio__feature(&f->t, VIRTIO_F_INDIRECT_DESC));
	assert_false(virtio_mmio__feature(&f->t, 64));
	assert_false(virtio_mmio__feature(&f->t, 1000));
	/* After FEATURES_OK the driver's features are frozen. */
	driver_features(f, V1 | (1ULL << 3));
	assert_int_equal(f->t.driver_features, feat);
	assert_false(virtio_mmio__feature(&f->t, 3));
}

static void test_negotiation_refused(void **state)
{
	struct fixture *f = *state;

	/* A bit the device does not offer. */
	assert_int_equal(negotiate(f, V1 | (1ULL << 5)),
			 VIRTIO_STATUS_ACKNOWLEDGE | VIRTIO_STATUS_DRIVER);
	assert_false(virtio_mmio__feature(&f->t, VIRTIO_F_VERSION_1));
	/* A high bit the device does not offer. */
	assert_int_equal(negotiate(f, V1 | (1ULL << 63)),
			 VIRTIO_STATUS_ACKNOWLEDGE | VIRTIO_STATUS_DRIVER);
	/* No VERSION_1: a legacy driver. */
	assert_int_equal(negotiate(f, 1ULL << 3),
			 VIRTIO_STATUS_ACKNOWLEDGE | VIRTIO_STATUS_DRIVER);
	assert_int_equal(negotiate(f, 0),
			 VIRTIO_STATUS_ACKNOWLEDGE | VIRTIO_STATUS_DRIVER);
	/* The driver may still fix its choice and try again... */
	driver_features(f, V1 | (1ULL << 3));
	wr(f, STATUS, ok_status);
	assert_int_equal(rd(f, STATUS), ok_status);
	assert_true(virtio_mmio__feature(&f->t, 3));
	/* ...or, having failed, say so. */
	assert_int_equal(negotiate(f, 1ULL << 3),
			 VIRTIO_STATUS_ACKNOWLEDGE | VIRTIO_STATUS_DRIVER);
	wr(f, STATUS,
	   VIRTIO_STATUS_ACKNOWLEDGE | VIRTIO_STATUS_DRIVER |
		   VIRTIO_STATUS_FAILED);
	assert_int_equal(rd(f, STATUS), VIRTIO_STATUS_ACKNOWLEDGE |
						VIRTIO_STATUS_DRIVER |
						VIRTIO_STATUS_FAILED);
}

static void test_status_bits_only_grow(void **state)
{
	struct fixture *f = *state;

	wr(f, STATUS, VIRTIO_STATUS_ACKNOWLEDGE | VIRTIO_STATUS_DRIVER);
	wr(f, STATUS, VIRTIO_STATUS_ACKNOWLEDGE);
	assert_int_equal(rd(f, STATUS),
			 VIRTIO_STATUS_ACKNOWLEDGE | VIRTIO_STATUS_DRIVER);
	assert_int_equal(f->reset_calls, 0);
	/* The driver cannot set NEEDS_RESET itself. */
	wr(f, STATUS,
	   VIRTIO_STATUS_ACKNOWLEDGE | VIRTIO_STATUS_DRIVER |
		   VIRTIO_STATUS_NEEDS_RESET);
	assert_int_equal(rd(f, STATUS),
			 VIRTIO_STATUS_ACKNOWLEDGE | VIRTIO_STATUS_DRIVER);
}

static void test_queue_setup(void **state)
{
	struct fixture *f = *state;
	struct virtq *q = &f->t.vq[1];

	assert_int_equal(negotiate(f, V1 | (1ULL << VIRTIO_F_EVENT_IDX)),
			 ok_status);
	wr(f, QUEUE_SEL, 0);
	assert_int_equal(rd(f, QUEUE_NUM_MAX), VIRTQ_MAX_SIZE);
	assert_int_equal(rd(f, QUEUE_READY), 0);
	wr(f, QUEUE_SEL, 1);
	assert_int_equal(rd(f, QUEUE_NUM_MAX), VIRTQ_MAX_SIZE);
	wr(f, QUEUE_SEL, 2);
	assert_int_equal(rd(f, QUEUE_NUM_MAX), 0);
	wr(f, QUEUE_SEL, 0xffffffff);
	assert_int_equal(rd(f, QUEUE_NUM_MAX), 0);
	/* A queue that does not exist takes no writes and stays unready. */
	wr(f, QUEUE_NUM, QSZ);
	wr(f, QUEUE_READY, 1);
	assert_int_equal(rd(f, QUEUE_READY), 0);
	assert_int_equal(rd(f, STATUS), ok_status);

	setup_queue(f, 1, QSZ, 0x12340, 0x22342, 0x32344);
	assert_int_equal(rd(f, QUEUE_READY), 1);
	assert_true(q->ready);
	assert_true(q->event_idx);
	assert_int_equal(q->size, QSZ);
	assert_int_equal(q->desc_gpa, 0x12340);
	assert_int_equal(q->avail_gpa, 0x22342);
	assert_int_equal(q->used_gpa, 0x32344);
	assert_false(f->t.vq[0].ready);
	/* While ready, the layout is fixed. */
	wr(f, QUEUE_NUM, 4);
	wr(f, DESC_LOW, 0x5000);
	wr(f, DESC_HIGH, 1);
	wr(f, DRIVER_LOW, 0x6000);
	wr(f, DEVICE_LOW, 0x7000);
	assert_int_equal(q->size, QSZ);
	assert_int_equal(q->desc_gpa, 0x12340);
	assert_int_equal(q->avail_gpa, 0x22342);
	assert_int_equal(q->used_gpa, 0x32344);
	/* Disabled (QueueReady 0), it can be changed again. */
	wr(f, QUEUE_READY, 0);
	assert_int_equal(rd(f, QUEUE_READY), 0);
	wr(f, DESC_LOW, 0x5000);
	assert_int_equal(q->desc_gpa, 0x5000);
	/* High halves land in the high 32 bits. */
	wr(f, DESC_HIGH, 0x1);
	assert_int_equal(q->desc_gpa, 0x100005000ULL);
	assert_int_equal(rd(f, STATUS), ok_status);
	assert_int_equal(f->irq_calls, 0);
}

static void test_queue_no_event_idx(void **state)
{
	struct fixture *f = *state;

	assert_int_equal(negotiate(f, V1), ok_status);
	setup_queue(f, 0, QSZ, DESC_GPA, AVAIL_GPA, USED_GPA);
	assert_true(f->t.vq[0].ready);
	assert_false(f->t.vq[0].event_idx);
}

/* One bad layout per call, on a freshly negotiated device. */
static void check_bad_layout(struct fixture *f, uint32_t num, uint64_t desc,
			     uint64_t avail, uint64_t used)
{
	unsigned int calls;

	assert_int_equal(negotiate(f, V1), ok_status);
	assert_int_equal(rd(f, INT_STATUS), 0);
	assert_int_equal(f->irq_level, 0);
	calls = f->irq_calls;
	setup_queue(f, 0, num, desc, avail, used);
	assert_int_equal(rd(f, QUEUE_READY), 0);
	assert_false(f->t.vq[0].ready);
	assert_int_equal(rd(f, STATUS), ok_status | VIRTIO_STATUS_NEEDS_RESET);
	assert_int_equal(rd(f, INT_STATUS), VIRTIO_MMIO_INT_CONFIG);
	assert_int_equal(f->irq_level, 1);
	assert_int_equal(f->irq_gsi, GSI);
	assert_int_equal(f->irq_calls, calls + 1);
	/* The driver echoing the status back does not clear the bit. */
	wr(f, STATUS, rd(f, STATUS) | VIRTIO_STATUS_DRIVER_OK);
	assert_true(rd(f, STATUS) & VIRTIO_STATUS_NEEDS_RESET);
	/* And the device stays dead until a reset. */
	wr(f, QUEUE_NOTIFY, 0);
	assert_int_equal(f->notify_calls[0], 0);
}

static void test_queue_bad_layout(void **state)
{
	struct fixture *f = *state;

	check_bad_layout(f, 3, DESC_GPA, AVAIL_GPA, USED_GPA);
	check_bad_layout(f, 0, DESC_GPA, AVAIL_GPA, USED_GPA);
	check_bad_layout(f, VIRTQ_MAX_SIZE * 2, DESC_GPA, AVAIL_GPA, USED_GPA);
	/* 65536 + 16 must not wrap to a valid 16. */
	check_bad_layout(f, 0x10000 + QSZ, DESC_GPA, AVAIL_GPA, USED_GPA);
	check_bad_layout(f, QSZ, DESC_GPA + 8, AVAIL_GPA, USED_GPA);
	check_bad_layout(f, QSZ, DESC_GPA, AVAIL_GPA + 1, USED_GPA);
	check_bad_layout(f, QSZ, DESC_GPA, AVAIL_GPA, USED_GPA + 2);
	check_bad_layout(f, QSZ, RAM_BYTES - 16, AVAIL_GPA, USED_GPA);
	check_bad_layout(f, QSZ, DESC_GPA, RAM_BYTES - 8, USED_GPA);
	check_bad_layout(f, QSZ, DESC_GPA, AVAIL_GPA, 0xfffffffffffffff0ULL);
	/* A reset clears it, and a good layout then works. */
	wr(f, STATUS, 0);
	assert_int_equal(rd(f, STATUS), 0);
	assert_int_equal(rd(f, INT_STATUS), 0);
	assert_int_equal(f->irq_level, 0);
	bring_up(f, V1);
	wr(f, QUEUE_NOTIFY, 0);
	assert_int_equal(f->notify_calls[0], 1);
}

static void test_notify_rules(void **state)
{
	struct fixture *f = *state;

	/* Nothing before DRIVER_OK, even with the queue ready. */
	assert_int_equal(negotiate(f, V1), ok_status);
	setup_queue(f, 0, QSZ, DESC_GPA, AVAIL_GPA, USED_GPA);
	wr(f, QUEUE_NOTIFY, 0);
	virtio_mmio__notify(&f->t, 0);
	assert_int_equal(f->notify_calls[0], 0);

	wr(f, STATUS, ok_status | VIRTIO_STATUS_DRIVER_OK);
	wr(f, QUEUE_NOTIFY, 0);
	assert_int_equal(f->notify_calls[0], 1);
	virtio_mmio__notify(&f->t, 0);
	assert_int_equal(f->notify_calls[0], 2);
	/* Queue 1 exists but is not ready; 2 and up do not exist. */
	wr(f, QUEUE_NOTIFY, 1);
	virtio_mmio__notify(&f->t, 1);
	wr(f, QUEUE_NOTIFY, 2);
	virtio_mmio__notify(&f->t, 2);
	wr(f, QUEUE_NOTIFY, 0xffffffff);
	virtio_mmio__notify(&f->t, 0xffffffff);
	assert_int_equal(f->notify_calls[1], 0);
	assert_int_equal(f->notify_calls[2], 0);
	/* A disabled queue is not notified. */
	wr(f, QUEUE_SEL, 0);
	wr(f, QUEUE_READY, 0);
	wr(f, QUEUE_NOTIFY, 0);
	assert_int_equal(f->notify_calls[0], 2);
	wr(f, QUEUE_READY, 1);
	wr(f, QUEUE_NOTIFY, 0);
	assert_int_equal(f->notify_calls[0], 3);
	/* Nor a device the transport marked as needing a reset. */
	virtio_mmio__needs_reset(&f->t);
	wr(f, QUEUE_NOTIFY, 0);
	virtio_mmio__notify(&f->t, 0);
	assert_int_equal(f->notify_calls[0], 3);
}

static void test_notify_needs_features_ok(void **state)
{
	struct fixture *f = *state;

	/* DRIVER_OK without FEATURES_OK (a driver that ignored the refusal). */
	assert_int_equal(negotiate(f, 0),
			 VIRTIO_STATUS_ACKNOWLEDGE | VIRTIO_STATUS_DRIVER);
	setup_queue(f, 0, QSZ, DESC_GPA, AVAIL_GPA, USED_GPA);
	wr(f, STATUS,
	   VIRTIO_STATUS_ACKNOWLEDGE | VIRTIO_STATUS_DRIVER |
		   VIRTIO_STATUS_DRIVER_OK);
	wr(f, QUEUE_NOTIFY, 0);
	assert_int_equal(f->notify_calls[0], 0);
	/* Nor after FAILED. */
	bring_up(f, V1);
	wr(f, STATUS, rd(f, STATUS) | VIRTIO_STATUS_FAILED);
	wr(f, QUEUE_NOTIFY, 0);
	assert_int_equal(f->notify_calls[0], 0);
}

static void test_interrupts(void **state)
{
	struct fixture *f = *state;

	bring_up(f, V1);
	assert_int_equal(f->irq_calls, 0);
	/* avail->flags 0: the driver wants interrupts. */
	virtio_mmio__used(&f->t, 0);
	assert_int_equal(rd(f, INT_STATUS), VIRTIO_MMIO_INT_VRING);
	assert_int_equal(f->irq_level, 1);
	assert_int_equal(f->irq_gsi, GSI);
	assert_int_equal(f->irq_calls, 1);
	/* Already high: no second call. */
	virtio_mmio__used(&f->t, 1);
	assert_int_equal(f->irq_calls, 1);
	virtio_mmio__needs_reset(&f->t);
	assert_int_equal(rd(f, INT_STATUS),
			 VIRTIO_MMIO_INT_VRING | VIRTIO_MMIO_INT_CONFIG);
	assert_int_equal(f->irq_calls, 1);
	/* Partial ack keeps the line up; the last one drops it. */
	wr(f, INT_ACK, VIRTIO_MMIO_INT_VRING);
	assert_int_equal(rd(f, INT_STATUS), VIRTIO_MMIO_INT_CONFIG);
	assert_int_equal(f->irq_level, 1);
	wr(f, INT_ACK, VIRTIO_MMIO_INT_CONFIG);
	assert_int_equal(rd(f, INT_STATUS), 0);
	assert_int_equal(f->irq_level, 0);
	assert_int_equal(f->irq_calls, 2);
	/* Acking nothing pending changes nothing. */
	wr(f, INT_ACK, 0xffffffff);
	assert_int_equal(f->irq_calls, 2);
	/* InterruptStatus is read-only. */
	wr(f, INT_STATUS, 3);
	assert_int_equal(rd(f, INT_STATUS), 0);
	/* Out-of-range queues raise nothing. */
	virtio_mmio__used(&f->t, 5);
	assert_int_equal(rd(f, INT_STATUS), 0);
}

static void test_interrupt_suppressed(void **state)
{
	struct fixture *f = *state;

	bring_up(f, V1);
	/* VIRTQ_AVAIL_F_NO_INTERRUPT in avail->flags. */
	wr16(f->r.ram, AVAIL_GPA, VIRTQ_AVAIL_F_NO_INTERRUPT);
	virtio_mmio__used(&f->t, 0);
	assert_int_equal(rd(f, INT_STATUS), 0);
	assert_int_equal(f->irq_calls, 0);
}

static void test_reset(void **state)
{
	struct fixture *f = *state;
	unsigned int i, resets;

	bring_up(f, V1 | (1ULL << 3) | (1ULL << VIRTIO_F_EVENT_IDX));
	resets = f->reset_calls; /* negotiate() starts with one */
	virtio_mmio__used(&f->t, 0);
	virtio_mmio__needs_reset(&f->t);
	wr(f, QUEUE_SEL, 1);
	wr(f, DEV_FEATURES_SEL, 1);
	wr(f, DRV_FEATURES_SEL, 1);
	assert_int_equal(f->irq_level, 1);

	wr(f, STATUS, 0);
	assert_int_equal(f->reset_calls, resets + 1);
	assert_int_equal(rd(f, STATUS), 0);
	assert_int_equal(rd(f, INT_STATUS), 0);
	assert_int_equal(f->irq_level, 0);
	assert_int_equal(f->t.driver_features, 0);
	assert_int_equal(f->t.queue_sel, 0);
	assert_int_equal(f->t.device_features_sel, 0);
	assert_int_equal(f->t.driver_features_sel, 0);
	assert_false(virtio_mmio__feature(&f->t, 3));
	for (i = 0; i < VIRTIO_MMIO_MAX_QUEUES; i++) {
		assert_false(f->t.vq[i].ready);
		assert_int_equal(f->t.vq[i].size, 0);
		assert_int_equal(f->t.vq[i].desc_gpa, 0);
		assert_int_equal(f->t.vq[i].used_idx, 0);
		assert_false(f->t.vq[i].event_idx);
	}
	assert_int_equal(rd(f, QUEUE_READY), 0);
	/* The device works again after a fresh initialisation. */
	bring_up(f, V1);
	wr(f, QUEUE_NOTIFY, 1);
	assert_int_equal(f->notify_calls[1], 1);
}

static void test_odd_accesses(void **state)
{
	struct fixture *f = *state;
	uint8_t buf[8];
	uint64_t v64;
	uint16_t v16;
	uint32_t v;

	/* Narrow, wide and unaligned reads of registers read as 0. */
	memset(buf, 0xee, sizeof(buf));
	f->t.dev.ops->read(&f->t.dev, MAGIC, buf, 1);
	assert_int_equal(buf[0], 0);
	f->t.dev.ops->read(&f->t.dev, MAGIC, &v16, 2);
	assert_int_equal(v16, 0);
	f->t.dev.ops->read(&f->t.dev, MAGIC, &v64, 8);
	assert_int_equal(v64, 0);
	v = 0xeeeeeeee;
	f->t.dev.ops->read(&f->t.dev, MAGIC + 1, &v, 4);
	assert_int_equal(v, 0);
	f->t.dev.ops->read(&f->t.dev, VERSION + 2, &v, 4);
	assert_int_equal(v, 0);
	/* Reserved registers read 0; write-only ones too. */
	assert_int_equal(rd(f, 0x018), 0);
	assert_int_equal(rd(f, 0x0f8), 0);
	assert_int_equal(rd(f, QUEUE_NOTIFY), 0);
	assert_int_equal(rd(f, INT_ACK), 0);

	/* Narrow or unaligned writes are ignored. */
	v16 = VIRTIO_STATUS_ACKNOWLEDGE;
	f->t.dev.ops->write(&f->t.dev, STATUS, &v16, 2);
	buf[0] = VIRTIO_STATUS_ACKNOWLEDGE;
	f->t.dev.ops->write(&f->t.dev, STATUS, buf, 1);
	v64 = VIRTIO_STATUS_ACKNOWLEDGE;
	f->t.dev.ops->write(&f->t.dev, STATUS, &v64, 8);
	v = htole32(VIRTIO_STATUS_ACKNOWLEDGE);
	f->t.dev.ops->write(&f->t.dev, STATUS + 1, &v, 4);
	assert_int_equal(rd(f, STATUS), 0);
	/* Reserved register writes are dropped harmlessly. */
	wr(f, 0x018, 0xffffffff);
	wr(f, 0x0fc, 0xffffffff);
	wr(f, 0x0ac, 0xffffffff);
	assert_int_equal(rd(f, CONFIG_GEN), 0);
	assert_int_equal(rd(f, SHM_LEN_LOW), 0xffffffff);
	assert_int_equal(f->reset_calls, 0);
	assert_int_equal(f->irq_calls, 0);
	assert_int_equal(f->cfg_reads + f->cfg_writes, 0);
}

static void test_config_space(void **state)
{
	struct fixture *f = *state;
	uint8_t buf[8];
	uint16_t v16 = htole16(0x1234);

	/* Any width and alignment goes to the device, offset from 0x100. */
	memset(buf, 0, sizeof(buf));
	f->t.dev.ops->read(&f->t.dev, VIRTIO_MMIO_CONFIG + 3, buf, 1);
	assert_int_equal(f->cfg_reads, 1);
	assert_int_equal(f->cfg_off, 3);
	assert_int_equal(f->cfg_len, 1);
	assert_int_equal(buf[0], 0xab);
	f->t.dev.ops->read(&f->t.dev, VIRTIO_MMIO_CONFIG + 0x10, buf, 8);
	assert_int_equal(f->cfg_off, 0x10);
	assert_int_equal(f->cfg_len, 8);
	assert_int_equal(rd(f, VIRTIO_MMIO_CONFIG), 0xabababab);
	f->t.dev.ops->write(&f->t.dev, VIRTIO_MMIO_CONFIG + 6, &v16, 2);
	assert_int_equal(f->cfg_writes, 1);
	assert_int_equal(f->cfg_off, 6);
	assert_int_equal(f->cfg_len, 2);
	assert_int_equal(rd16(f->cfg_written, 0), 0x1234);
	/* The last byte of the window. */
	f->t.dev.ops->read(&f->t.dev, 0xfff, buf, 1);
	assert_int_equal(f->cfg_off, 0xfff - VIRTIO_MMIO_CONFIG);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
		T(test_identity),
		T(test_init_rejects_bad_ops),
		T(test_device_features),
		T(test_negotiation_ok),
		T(test_negotiation_refused),
		T(test_status_bits_only_grow),
		T(test_queue_setup),
		T(test_queue_no_event_idx),
		T(test_queue_bad_layout),
		T(test_notify_rules),
		T(test_notify_needs_features_ok),
		T(test_interrupts),
		T(test_interrupt_suppressed),
		T(test_reset),
		T(test_odd_accesses),
		T(test_config_space),
#undef T
	};

	return cmocka_run_group_tests_name("virtio_mmio", tests, NULL, NULL);
}
