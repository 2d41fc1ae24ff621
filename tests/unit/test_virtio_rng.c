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
#include "test_util.h"

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
#define DRIVER_LOW	 0x090
#define DEVICE_LOW	 0x0a0
#define DEVICE_ID	 0x008

#define RAM_BYTES (1 << 20)
#define GSI	  9
#define QSZ	  16
#define DESC_GPA  0x1000
#define AVAIL_GPA 0x2000
#define USED_GPA  0x3000
#define BUF_GPA	  0x10000

struct seg {
	uint64_t gpa;
	uint32_t len;
	bool write;
};

struct fixture {
	struct test_ram r; /* first: see test_ram__new_in() */
	struct virtio_rng *rng;
	struct virtio_mmio *t;
	uint16_t avail_idx, next_desc, used_seen;
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

static uint32_t rd(struct fixture *f, uint64_t off)
{
	uint32_t v = 0;

	f->t->dev.ops->read(&f->t->dev, off, &v, 4);
	return le32toh(v);
}

static void wr(struct fixture *f, uint64_t off, uint32_t v)
{
	v = htole32(v);
	f->t->dev.ops->write(&f->t->dev, off, &v, 4);
}

/* 3.1.1 and 4.2.3: reset, negotiate VERSION_1 only, queue 0, DRIVER_OK. */
static void driver_init(struct fixture *f)
{
	uint32_t st = VIRTIO_STATUS_ACKNOWLEDGE | VIRTIO_STATUS_DRIVER;

	wr(f, STATUS, 0);
	/* Fresh rings, as a driver allocates them. */
	memset(f->r.ram + DESC_GPA, 0, USED_GPA + 0x1000 - DESC_GPA);
	wr(f, STATUS, st);
	wr(f, DRV_FEATURES_SEL, 1);
	wr(f, DRV_FEATURES, 1); /* bit 32: VERSION_1 */
	st |= VIRTIO_STATUS_FEATURES_OK;
	wr(f, STATUS, st);
	assert_int_equal(rd(f, STATUS), st);
	wr(f, QUEUE_SEL, 0);
	assert_int_equal(rd(f, QUEUE_NUM_MAX), VIRTQ_MAX_SIZE);
	wr(f, QUEUE_NUM, QSZ);
	wr(f, DESC_LOW, DESC_GPA);
	wr(f, DRIVER_LOW, AVAIL_GPA);
	wr(f, DEVICE_LOW, USED_GPA);
	wr(f, QUEUE_READY, 1);
	st |= VIRTIO_STATUS_DRIVER_OK;
	wr(f, STATUS, st);
	assert_int_equal(rd(f, STATUS), st);
	f->avail_idx = f->next_desc = f->used_seen = 0;
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

/* Post a chain of @n segments; returns its head. */
static uint16_t post(struct fixture *f, const struct seg *s, unsigned int n)
{
	uint16_t head, i;
	uint64_t d;

	if (f->next_desc + n > QSZ)
		f->next_desc = 0;
	head = f->next_desc;
	for (i = 0; i < n; i++) {
		d = DESC_GPA + 16 * (uint64_t)(head + i);
		wr64(f->r.ram, d, s[i].gpa);
		wr32(f->r.ram, d + 8, s[i].len);
		wr16(f->r.ram, d + 12,
		     (i + 1u < n ? VIRTQ_DESC_F_NEXT : 0) |
			     (s[i].write ? VIRTQ_DESC_F_WRITE : 0));
		wr16(f->r.ram, d + 14, head + i + 1);
	}
	f->next_desc += n;
	wr16(f->r.ram, AVAIL_GPA + 4 + 2 * (f->avail_idx % QSZ), head);
	f->avail_idx++;
	wr16(f->r.ram, AVAIL_GPA + 2, f->avail_idx);
	return head;
}

static uint16_t used_idx(struct fixture *f)
{
	return rd16(f->r.ram, USED_GPA + 2);
}

/* The next used element: checks its id is @head, returns its length. */
static uint32_t take_used(struct fixture *f, uint16_t head)
{
	uint64_t e = USED_GPA + 4 + 8 * (f->used_seen % QSZ);

	assert_true((uint16_t)(used_idx(f) - f->used_seen) > 0);
	f->used_seen++;
	assert_int_equal(rd32(f->r.ram, e), head);
	return rd32(f->r.ram, e + 4);
}

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
	struct seg s = { BUF_GPA, 64, true };
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
	const struct seg s[] = {
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
	struct seg s = { BUF_GPA, 3 * VIRTIO_RNG_MAX_BYTES, true };
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
	struct seg s = { BUF_GPA, 32, false };
	uint16_t head = post(f, &s, 1);

	wr(f, QUEUE_NOTIFY, 0);
	assert_int_equal(take_used(f, head), 0);
	assert_true(all_zero(f->r.ram + BUF_GPA, 32));
	assert_false(rd(f, STATUS) & VIRTIO_STATUS_NEEDS_RESET);
}

static void check_broken(struct fixture *f, const struct seg *s, unsigned int n)
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
		struct seg good = { BUF_GPA, 16, true };

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
		struct seg good = { BUF_GPA, 16, true };
		uint16_t head = post(f, &good, 1);

		wr(f, QUEUE_NOTIFY, 0);
		assert_int_equal(take_used(f, head), 16);
	}
}

static void test_broken_chain(void **state)
{
	struct fixture *f = *state;
	const struct seg outside = { RAM_BYTES - 8, 16, true };
	const struct seg wrapping = { 0xfffffffffffffff8ULL, 16, true };
	const struct seg zero = { BUF_GPA, 0, true };
	const struct seg write_then_read[] = {
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
