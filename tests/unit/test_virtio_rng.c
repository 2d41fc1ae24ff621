// SPDX-License-Identifier: Apache-2.0
/*
 * Unit tests for devices/virtio_rng.c, driven through its virtio-mmio
 * transport by a small driver written here: a split queue laid out in
 * guest RAM, chains posted on it, results read from the used ring.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../../devices/virtio_rng.h"
#include "virtio_driver.h"

#define RAM_BYTES (1 << 20)
#define GSI	  9
#define QSZ	  16
#define DESC_GPA  0x1000
#define AVAIL_GPA 0x2000
#define USED_GPA  0x3000
#define BUF_GPA	  0x10000

struct fixture {
	struct test_ram r; /* first: see test_ram__new_in() */
	struct virtio_rng *rng;
	struct virtio_mmio *t;
	struct vdrv_queue q;
	unsigned int irq_calls;
	int irq_level;
};

static void fake_irq(void *opaque, unsigned int gsi, int level)
{
	struct fixture *f = opaque;

	assert_int_equal(gsi, GSI);
	f->irq_calls++;
	f->irq_level = level;
}

#define rd(f, off)    vdrv_rd((f)->t, off)
#define wr(f, off, v) vdrv_wr((f)->t, off, v)

/* 3.1.1 and 4.2.3: reset, negotiate VERSION_1 only, queue 0, DRIVER_OK. */
static void driver_init(struct fixture *f)
{
	/* Fresh rings, as a driver allocates them. */
	vdrv_queue_init(f->r.ram, &f->q, QSZ, DESC_GPA, AVAIL_GPA, USED_GPA);
	assert_int_equal(vdrv_negotiate(f->t, 1ULL << VIRTIO_F_VERSION_1),
			 VDRV_STATUS_NEGOTIATED);
	wr(f, QUEUE_SEL, 0);
	assert_int_equal(rd(f, QUEUE_NUM_MAX), VIRTQ_MAX_SIZE);
	vdrv_queue_start(f->t, 0, &f->q);
	vdrv_driver_ok(f->t);
}

static int setup(void **state)
{
	struct fixture *f = test_ram__new_in(sizeof(*f), RAM_BYTES, 0);
	struct irq_line irq;

	if (!f)
		return -1;
	irq = (struct irq_line){ .set = fake_irq, .opaque = f, .gsi = GSI };
	f->rng = virtio_rng__create(&f->r.m, irq);
	if (!f->rng) {
		test_ram__free(&f->r);
		return -1;
	}
	f->t = virtio_rng__transport(f->rng);
	driver_init(f);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	virtio_rng__destroy(f->rng);
	return test_ram__teardown(state);
}

#define post(f, s, n)	   vdrv_post((f)->r.ram, &(f)->q, s, n)
#define used_idx(f)	   vdrv_used_idx((f)->r.ram, &(f)->q)
#define take_used(f, head) vdrv_take_used((f)->r.ram, &(f)->q, head)

static bool all_zero(const uint8_t *p, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++)
		if (p[i])
			return false;
	return true;
}

static void test_identity(void **state)
{
	struct fixture *f = *state;

	assert_int_equal(rd(f, DEVICE_ID), VIRTIO_ID_RNG);
	assert_int_equal(rd(f, DEVICE_ID), 4);
	/* No device features: only the transport's. */
	wr(f, DEV_FEATURES_SEL, 0);
	assert_int_equal(rd(f, DEV_FEATURES),
			 (1u << VIRTIO_F_INDIRECT_DESC) |
				 (1u << VIRTIO_F_EVENT_IDX));
	wr(f, DEV_FEATURES_SEL, 1);
	assert_int_equal(rd(f, DEV_FEATURES), 1);
	/* One queue. */
	wr(f, QUEUE_SEL, 1);
	assert_int_equal(rd(f, QUEUE_NUM_MAX), 0);
	/* No config space. */
	assert_int_equal(rd(f, VIRTIO_MMIO_CONFIG), 0);
}

static void test_fill(void **state)
{
	struct fixture *f = *state;
	struct vdrv_seg s = { BUF_GPA, 64, true };
	uint16_t head = post(f, &s, 1);

	wr(f, QUEUE_NOTIFY, 0);
	assert_int_equal(used_idx(f), 1);
	assert_int_equal(take_used(f, head), 64);
	assert_false(all_zero(f->r.ram + BUF_GPA, 64));
	/* Nothing past the buffer. */
	assert_true(all_zero(f->r.ram + BUF_GPA + 64, 64));
	/* The vring interrupt. */
	assert_int_equal(rd(f, INT_STATUS), VIRTIO_MMIO_INT_VRING);
	assert_int_equal(f->irq_level, 1);
	wr(f, INT_ACK, VIRTIO_MMIO_INT_VRING);
	assert_int_equal(f->irq_level, 0);

	/* Two more, differing, through the ioeventfd path. */
	s.gpa = BUF_GPA + 0x100;
	head = post(f, &s, 1);
	s.gpa = BUF_GPA + 0x200;
	post(f, &s, 1);
	virtio_mmio__notify(f->t, 0);
	assert_int_equal(used_idx(f), 3);
	assert_int_equal(take_used(f, head), 64);
	assert_int_equal(take_used(f, (uint16_t)(head + 1)), 64);
	assert_memory_not_equal(f->r.ram + BUF_GPA + 0x100,
				f->r.ram + BUF_GPA + 0x200, 64);
	assert_int_equal(f->irq_level, 1);
}

static void test_segments(void **state)
{
	struct fixture *f = *state;
	/* A readable segment first (ignored), then two writable ones. */
	const struct vdrv_seg s[] = {
		{ BUF_GPA + 0x1000, 16, false },
		{ BUF_GPA, 7, true },
		{ BUF_GPA + 0x800, 33, true },
	};
	uint16_t head;

	memset(f->r.ram + BUF_GPA + 0x1000, 0x77, 16);
	head = post(f, s, 3);
	wr(f, QUEUE_NOTIFY, 0);
	assert_int_equal(take_used(f, head), 40);
	assert_false(all_zero(f->r.ram + BUF_GPA + 0x800, 33));
	assert_true(all_zero(f->r.ram + BUF_GPA + 7, 0x800 - 7));
	assert_true(all_zero(f->r.ram + BUF_GPA + 0x800 + 33, 0x100));
	/* The readable bytes are left alone. */
	assert_int_equal(f->r.ram[BUF_GPA + 0x1000], 0x77);
	assert_int_equal(f->r.ram[BUF_GPA + 0x100f], 0x77);
}

static void test_large_buffer_capped(void **state)
{
	struct fixture *f = *state;
	struct vdrv_seg s = { BUF_GPA, 3 * VIRTIO_RNG_MAX_BYTES, true };
	uint16_t head = post(f, &s, 1);

	wr(f, QUEUE_NOTIFY, 0);
	assert_int_equal(take_used(f, head), VIRTIO_RNG_MAX_BYTES);
	assert_false(all_zero(f->r.ram + BUF_GPA, VIRTIO_RNG_MAX_BYTES));
	assert_true(all_zero(f->r.ram + BUF_GPA + VIRTIO_RNG_MAX_BYTES,
			     2 * VIRTIO_RNG_MAX_BYTES));
}

static void test_readable_only(void **state)
{
	struct fixture *f = *state;
	struct vdrv_seg s = { BUF_GPA, 32, false };
	uint16_t head = post(f, &s, 1);

	wr(f, QUEUE_NOTIFY, 0);
	assert_int_equal(take_used(f, head), 0);
	assert_true(all_zero(f->r.ram + BUF_GPA, 32));
	assert_false(rd(f, STATUS) & VIRTIO_STATUS_NEEDS_RESET);
}

static void check_broken(struct fixture *f, const struct vdrv_seg *s,
			 unsigned int n)
{
	uint32_t st;

	driver_init(f);
	memset(f->r.ram + BUF_GPA, 0, 0x1000);
	post(f, s, n);
	wr(f, QUEUE_NOTIFY, 0);
	st = rd(f, STATUS);
	assert_true(st & VIRTIO_STATUS_NEEDS_RESET);
	assert_true(rd(f, INT_STATUS) & VIRTIO_MMIO_INT_CONFIG);
	assert_int_equal(f->irq_level, 1);
	assert_int_equal(used_idx(f), 0);
	/* Dead until reset: a good chain now is left alone. */
	{
		struct vdrv_seg good = { BUF_GPA, 16, true };

		post(f, &good, 1);
		wr(f, QUEUE_NOTIFY, 0);
		virtio_mmio__notify(f->t, 0);
		assert_int_equal(used_idx(f), 0);
		assert_true(all_zero(f->r.ram + BUF_GPA, 16));
	}
	/* The driver resets and starts over; the device works again. */
	driver_init(f);
	assert_int_equal(rd(f, INT_STATUS), 0);
	assert_int_equal(f->irq_level, 0);
	{
		struct vdrv_seg good = { BUF_GPA, 16, true };
		uint16_t head = post(f, &good, 1);

		wr(f, QUEUE_NOTIFY, 0);
		assert_int_equal(take_used(f, head), 16);
	}
}

static void test_broken_chain(void **state)
{
	struct fixture *f = *state;
	const struct vdrv_seg outside = { RAM_BYTES - 8, 16, true };
	const struct vdrv_seg wrapping = { 0xfffffffffffffff8ULL, 16, true };
	const struct vdrv_seg zero = { BUF_GPA, 0, true };
	const struct vdrv_seg write_then_read[] = {
		{ BUF_GPA, 16, true },
		{ BUF_GPA + 0x100, 16, false },
	};

	check_broken(f, &outside, 1);
	check_broken(f, &wrapping, 1);
	check_broken(f, &zero, 1);
	check_broken(f, write_then_read, 2);
}

static void test_bad_avail_idx(void **state)
{
	struct fixture *f = *state;

	/* avail->idx more than the queue size ahead. */
	wr16(f->r.ram, AVAIL_GPA + 2, QSZ + 1);
	wr(f, QUEUE_NOTIFY, 0);
	assert_true(rd(f, STATUS) & VIRTIO_STATUS_NEEDS_RESET);
	assert_int_equal(used_idx(f), 0);
}

static void test_create_destroy(void **state)
{
	struct irq_line irq = { 0 };
	struct virtio_rng *rng;
	struct test_ram *r = test_ram__new(RAM_BYTES, 0);

	(void)state;
	assert_non_null(r);
	assert_null(virtio_rng__create(NULL, irq));
	/* No irq callback: must not crash when interrupting. */
	rng = virtio_rng__create(&r->m, irq);
	assert_non_null(rng);
	assert_int_equal(virtio_rng__transport(rng)->ops->device_id, 4);
	virtio_mmio__needs_reset(virtio_rng__transport(rng));
	virtio_rng__destroy(rng);
	virtio_rng__destroy(NULL);
	test_ram__free(r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
		T(test_identity),      T(test_fill),
		T(test_segments),      T(test_large_buffer_capped),
		T(test_readable_only), T(test_broken_chain),
		T(test_bad_avail_idx), cmocka_unit_test(test_create_destroy),
#undef T
	};

	return cmocka_run_group_tests_name("virtio_rng", tests, NULL, NULL);
}
