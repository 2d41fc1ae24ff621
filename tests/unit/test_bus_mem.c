// SPDX-License-Identifier: Apache-2.0
/* Unit tests for vmm/bus.c (PIO/MMIO dispatch) and vmm/mem.c (guest RAM). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../../boot/layout.h"
#include "../../vmm/bus.h"
#include "../../vmm/mem.h"

/* A device that records its last access and answers reads with a pattern. */
struct fake {
	struct device dev;
	unsigned int reads, writes;
	uint64_t offset;
	uint32_t len;
	uint8_t data[8];
	uint8_t tag;
};

static void fake_read(struct device *d, uint64_t off, void *data, uint32_t len)
{
	struct fake *f = (struct fake *)d;
	uint8_t *p = data;
	uint32_t i;

	f->reads++;
	f->offset = off;
	f->len = len;
	for (i = 0; i < len; i++)
		p[i] = (uint8_t)(f->tag + off + i);
}

static void fake_write(struct device *d, uint64_t off, const void *data,
		       uint32_t len)
{
	struct fake *f = (struct fake *)d;

	f->writes++;
	f->offset = off;
	f->len = len;
	memcpy(f->data, data, len < sizeof(f->data) ? len : sizeof(f->data));
}

static const struct device_ops fake_ops = {
	.name = "fake",
	.read = fake_read,
	.write = fake_write,
};

/* No ops at all: reads must come back as zeroes, writes dropped. */
static const struct device_ops null_ops = { .name = "null" };

static void fake_init(struct fake *f, uint8_t tag)
{
	memset(f, 0, sizeof(*f));
	f->dev.ops = &fake_ops;
	pthread_mutex_init(&f->dev.lock, NULL);
	f->tag = tag;
}

static void test_register_order(void **state)
{
	static struct bus b;
	struct fake a, c, d;

	(void)state;
	memset(&b, 0, sizeof(b));
	fake_init(&a, 0);
	fake_init(&c, 0);
	fake_init(&d, 0);
	assert_int_equal(bus__register(&b, 0x3f8, 8, &a.dev), 0);
	assert_int_equal(bus__register(&b, 0x60, 1, &c.dev), 0);
	assert_int_equal(bus__register(&b, 0x70, 2, &d.dev), 0);
	/* Adjacent on both sides is not an overlap. */
	assert_int_equal(bus__register(&b, 0x61, 0xf, &d.dev), 0);
	assert_int_equal(bus__register(&b, 0x400, 1, &c.dev), 0);
	assert_int_equal(bus__register(&b, 0x3f7, 1, &c.dev), 0);
	assert_int_equal(b.nr, 6);
	assert_int_equal(b.range[0].base, 0x60);
	assert_ptr_equal(b.range[0].dev, &c.dev);
	assert_int_equal(b.range[1].base, 0x61);
	assert_int_equal(b.range[1].len, 0xf);
	assert_int_equal(b.range[2].base, 0x70);
	assert_ptr_equal(b.range[2].dev, &d.dev);
	assert_int_equal(b.range[3].base, 0x3f7);
	assert_int_equal(b.range[4].base, 0x3f8);
	assert_int_equal(b.range[4].len, 8);
	assert_ptr_equal(b.range[4].dev, &a.dev);
	assert_int_equal(b.range[5].base, 0x400);
}

static void test_register_errors(void **state)
{
	static struct bus b;
	struct fake a;

	(void)state;
	memset(&b, 0, sizeof(b));
	fake_init(&a, 0);
	assert_int_equal(bus__register(&b, 0x1000, 0x100, &a.dev), 0);
	assert_int_equal(bus__register(&b, 0x3000, 0x100, &a.dev), 0);
	/* Overlap from below, from above, inside, around, same base. */
	assert_int_equal(bus__register(&b, 0xf00, 0x101, &a.dev), -EEXIST);
	assert_int_equal(bus__register(&b, 0x10ff, 0x10, &a.dev), -EEXIST);
	assert_int_equal(bus__register(&b, 0x1010, 0x10, &a.dev), -EEXIST);
	assert_int_equal(bus__register(&b, 0x800, 0x1000, &a.dev), -EEXIST);
	assert_int_equal(bus__register(&b, 0x1000, 1, &a.dev), -EEXIST);
	assert_int_equal(bus__register(&b, 0x2fff, 2, &a.dev), -EEXIST);
	assert_int_equal(bus__register(&b, 0x30ff, 1, &a.dev), -EEXIST);
	/* Spanning the gap and both neighbours. */
	assert_int_equal(bus__register(&b, 0x10ff, 0x1f02, &a.dev), -EEXIST);
	/* len 0, overflow, no device. */
	assert_int_equal(bus__register(&b, 0x5000, 0, &a.dev), -EINVAL);
	assert_int_equal(bus__register(&b, UINT64_MAX, 2, &a.dev), -EINVAL);
	assert_int_equal(bus__register(&b, UINT64_MAX - 0xf, 0x11, &a.dev),
			 -EINVAL);
	assert_int_equal(bus__register(&b, 0x5000, 1, NULL), -EINVAL);
	assert_int_equal(b.nr, 2);
	/* The very top is usable. */
	assert_int_equal(bus__register(&b, UINT64_MAX - 0xf, 0xf, &a.dev), 0);
	assert_int_equal(b.nr, 3);
}

static void test_register_full(void **state)
{
	static struct bus b;
	struct fake a;
	unsigned int i;

	(void)state;
	memset(&b, 0, sizeof(b));
	fake_init(&a, 0);
	/* Registered in descending order: each insert shifts the table. */
	for (i = 0; i < BUS_MAX_RANGES; i++)
		assert_int_equal(
			bus__register(&b, 0x10000 - 0x10 * i, 0x10, &a.dev), 0);
	assert_int_equal(b.nr, BUS_MAX_RANGES);
	assert_int_equal(bus__register(&b, 0x100000, 1, &a.dev), -ENOSPC);
	assert_int_equal(b.nr, BUS_MAX_RANGES);
	for (i = 1; i < BUS_MAX_RANGES; i++)
		assert_int_equal(b.range[i].base, b.range[i - 1].base + 0x10);
}

static void test_access_routes(void **state)
{
	static struct bus b;
	struct fake a, c;
	uint8_t buf[8];
	uint32_t v;

	(void)state;
	memset(&b, 0, sizeof(b));
	fake_init(&a, 0x10);
	fake_init(&c, 0x80);
	assert_int_equal(bus__register(&b, 0xd0000000, 0x1000, &a.dev), 0);
	assert_int_equal(bus__register(&b, 0xd0001000, 0x1000, &c.dev), 0);

	memset(buf, 0, sizeof(buf));
	assert_int_equal(bus__access(&b, 0xd0001004, buf, 4, false), 0);
	assert_int_equal(c.reads, 1);
	assert_int_equal(c.offset, 4);
	assert_int_equal(c.len, 4);
	assert_int_equal(a.reads, 0);
	assert_int_equal(buf[0], 0x84);
	assert_int_equal(buf[3], 0x87);

	v = 0x11223344;
	assert_int_equal(bus__access(&b, 0xd0000ffc, &v, 4, true), 0);
	assert_int_equal(a.writes, 1);
	assert_int_equal(a.offset, 0xffc);
	assert_int_equal(a.len, 4);
	assert_memory_equal(a.data, &v, 4);
	assert_int_equal(c.writes, 0);

	/* First and last byte of a range. */
	assert_int_equal(bus__access(&b, 0xd0000000, buf, 1, false), 0);
	assert_int_equal(a.offset, 0);
	assert_int_equal(buf[0], 0x10);
	assert_int_equal(bus__access(&b, 0xd0001fff, buf, 1, false), 0);
	assert_int_equal(c.offset, 0xfff);
	assert_int_equal(bus__access(&b, 0xd0001ff8, buf, 8, false), 0);
	assert_int_equal(c.len, 8);
}

static void test_access_misses(void **state)
{
	static struct bus b;
	struct fake a, c;
	uint8_t buf[8];

	(void)state;
	memset(&b, 0, sizeof(b));
	fake_init(&a, 0x10);
	fake_init(&c, 0x80);
	assert_int_equal(bus__register(&b, 0x1000, 0x10, &a.dev), 0);
	assert_int_equal(bus__register(&b, 0x1010, 0x10, &c.dev), 0);

	/* Straddling the end of a range, even into the next one. */
	memset(buf, 0, sizeof(buf));
	assert_int_equal(bus__access(&b, 0x100e, buf, 4, false), -ENOENT);
	assert_int_equal(buf[0], 0xff);
	assert_int_equal(buf[3], 0xff);
	assert_int_equal(buf[4], 0);
	assert_int_equal(bus__access(&b, 0x101e, buf, 4, true), -ENOENT);
	/* Below, between, above. */
	memset(buf, 0, sizeof(buf));
	assert_int_equal(bus__access(&b, 0xfff, buf, 2, false), -ENOENT);
	assert_int_equal(buf[0], 0xff);
	assert_int_equal(buf[1], 0xff);
	assert_int_equal(buf[2], 0);
	assert_int_equal(bus__access(&b, 0x1020, buf, 1, false), -ENOENT);
	assert_int_equal(bus__access(&b, UINT64_MAX, buf, 1, true), -ENOENT);
	assert_int_equal(a.reads + a.writes + c.reads + c.writes, 0);

	/* An empty bus. */
	memset(&b, 0, sizeof(b));
	memset(buf, 0, sizeof(buf));
	assert_int_equal(bus__access(&b, 0, buf, 8, false), -ENOENT);
	assert_int_equal(buf[7], 0xff);
}

static void test_access_no_ops(void **state)
{
	static struct bus b;
	struct device d = { .ops = &null_ops };
	uint8_t buf[4];

	(void)state;
	memset(&b, 0, sizeof(b));
	pthread_mutex_init(&d.lock, NULL);
	assert_int_equal(bus__register(&b, 0x80, 4, &d), 0);
	memset(buf, 0xaa, sizeof(buf));
	assert_int_equal(bus__access(&b, 0x80, buf, 4, false), 0);
	assert_int_equal(buf[0], 0);
	assert_int_equal(buf[3], 0);
	assert_int_equal(bus__access(&b, 0x80, buf, 4, true), 0);
	pthread_mutex_destroy(&d.lock);
}

static void test_mem_wrap_ptr(void **state)
{
	struct guest_mem m;
	uint8_t *buf = calloc(1, 0x10000);

	(void)state;
	assert_non_null(buf);
	assert_int_equal(mem__wrap(&m, buf, 0x10000), 0);
	assert_int_equal(m.nr_regions, 1);
	assert_int_equal(m.ram_bytes, 0x10000);
	assert_int_equal(guest_mem__low_ram_end(&m), 0x10000);
	assert_ptr_equal(guest_mem__ptr(&m, 0, 1), buf);
	assert_ptr_equal(guest_mem__ptr(&m, 0x100, 0x10), buf + 0x100);
	assert_ptr_equal(guest_mem__ptr(&m, 0, 0x10000), buf);
	assert_ptr_equal(guest_mem__ptr(&m, 0xfffc, 4), buf + 0xfffc);
	/* Exactly at the end with len 0 is accepted; one more is not. */
	assert_ptr_equal(guest_mem__ptr(&m, 0x10000, 0), buf + 0x10000);
	assert_null(guest_mem__ptr(&m, 0x10000, 1));
	assert_null(guest_mem__ptr(&m, 0x10001, 0));
	/* Crossing the end. */
	assert_null(guest_mem__ptr(&m, 0xfffd, 4));
	assert_null(guest_mem__ptr(&m, 0, 0x10001));
	/* Overflowing sums. */
	assert_null(guest_mem__ptr(&m, UINT64_MAX - 1, 4));
	assert_null(guest_mem__ptr(&m, 0x100, UINT64_MAX));
	assert_null(guest_mem__ptr(&m, 0x100, UINT64_MAX - 0xff));
	assert_null(guest_mem__ptr(&m, UINT64_MAX, 0));

	mem__destroy(&m); /* must not free buf */
	assert_int_equal(m.nr_regions, 0);
	assert_null(guest_mem__ptr(&m, 0, 1));
	buf[0] = 1;
	free(buf);
}

static void test_mem_wrap_errors(void **state)
{
	struct guest_mem m;
	uint8_t buf[16];

	(void)state;
	assert_int_equal(mem__wrap(&m, NULL, 0x1000), -EINVAL);
	assert_int_equal(mem__wrap(&m, buf, 0), -EINVAL);
	assert_int_equal(mem__wrap(&m, buf, LAYOUT_MMIO_GAP_START + 1),
			 -EINVAL);
	memset(&m, 0, sizeof(m));
	mem__destroy(&m); /* safe on a zeroed m */
	assert_int_equal(guest_mem__low_ram_end(&m), 0);
}

static void test_mem_create_sizes(void **state)
{
	struct guest_mem m;

	(void)state;
	assert_int_equal(mem__create(&m, 0), -EINVAL);
	assert_int_equal(mem__create(&m, LAYOUT_RAM_MIN - 0x1000), -EINVAL);
	assert_int_equal(mem__create(&m, LAYOUT_RAM_MIN + 1), -EINVAL);
	assert_int_equal(mem__create(&m, LAYOUT_RAM_MIN + 0x800), -EINVAL);
	assert_int_equal(mem__create(&m, LAYOUT_RAM_MAX + 0x1000), -EINVAL);
	assert_int_equal(m.nr_regions, 0);
	assert_null(m.map);

	assert_int_equal(mem__create(&m, LAYOUT_RAM_MIN), 0);
	assert_int_equal(m.nr_regions, 1);
	assert_int_equal(m.ram_bytes, LAYOUT_RAM_MIN);
	assert_int_equal(m.region[0].gpa, 0);
	assert_int_equal(m.region[0].size, LAYOUT_RAM_MIN);
	assert_int_equal(guest_mem__low_ram_end(&m), LAYOUT_RAM_MIN);
	/* Zero-filled. */
	assert_int_equal(*(uint8_t *)guest_mem__ptr(&m, LAYOUT_RAM_MIN - 1, 1),
			 0);
	assert_null(guest_mem__ptr(&m, LAYOUT_RAM_MIN, 1));
	mem__destroy(&m);
	assert_null(m.map);

	/* Exactly the low region: still one region. */
	assert_int_equal(mem__create(&m, LAYOUT_MMIO_GAP_START), 0);
	assert_int_equal(m.nr_regions, 1);
	assert_null(guest_mem__ptr(&m, LAYOUT_MMIO_GAP_END, 0));
	mem__destroy(&m);
}

static void test_mem_create_two_regions(void **state)
{
	const uint64_t ram = 4 * LAYOUT_GiB;
	const uint64_t low = LAYOUT_MMIO_GAP_START;
	const uint64_t high_end = LAYOUT_MMIO_GAP_END + ram - low;
	struct guest_mem m;
	uint8_t *base, *p;

	(void)state;
	assert_int_equal(mem__create(&m, ram), 0);
	base = m.map;
	assert_int_equal(m.nr_regions, 2);
	assert_int_equal(m.ram_bytes, ram);
	assert_int_equal(m.region[0].gpa, 0);
	assert_int_equal(m.region[0].size, low);
	assert_int_equal(m.region[1].gpa, LAYOUT_MMIO_GAP_END);
	assert_int_equal(m.region[1].gpa, 4 * LAYOUT_GiB);
	assert_int_equal(m.region[1].size, ram - low);
	assert_int_equal(guest_mem__low_ram_end(&m), low);

	assert_ptr_equal(guest_mem__ptr(&m, low - 4, 4), base + low - 4);
	assert_ptr_equal(guest_mem__ptr(&m, low, 0), base + low);
	assert_null(guest_mem__ptr(&m, low - 2, 4));
	/* The MMIO gap. */
	assert_null(guest_mem__ptr(&m, low, 1));
	assert_null(guest_mem__ptr(&m, LAYOUT_IOAPIC_GPA, 4));
	assert_null(guest_mem__ptr(&m, LAYOUT_MMIO_GAP_END - 1, 1));
	assert_null(guest_mem__ptr(&m, LAYOUT_MMIO_GAP_END - 1, 2));
	/* The high region maps right after the low one in the host. */
	p = guest_mem__ptr(&m, LAYOUT_MMIO_GAP_END, 8);
	assert_ptr_equal(p, base + low);
	assert_ptr_equal(guest_mem__ptr(&m, high_end - 8, 8), base + ram - 8);
	assert_ptr_equal(guest_mem__ptr(&m, high_end, 0), base + ram);
	assert_null(guest_mem__ptr(&m, high_end - 4, 8));
	assert_null(guest_mem__ptr(&m, high_end, 1));
	assert_null(guest_mem__ptr(&m, UINT64_MAX - 1, 4));
	/* A range from low RAM over the gap into high RAM. */
	assert_null(
		guest_mem__ptr(&m, low - 8, LAYOUT_MMIO_GAP_END - low + 16));

	/* Reads and writes in the high region land there. */
	assert_int_equal(
		guest_mem__write(&m, LAYOUT_MMIO_GAP_END + 0x10, "ember", 5),
		0);
	assert_memory_equal(base + low + 0x10, "ember", 5);
	mem__destroy(&m);
	assert_int_equal(m.nr_regions, 0);
}

static void test_mem_read_write(void **state)
{
	struct guest_mem m;
	uint8_t *ram = calloc(1, 0x2000);
	uint8_t buf[16], want[16];

	(void)state;
	assert_non_null(ram);
	assert_int_equal(mem__wrap(&m, ram, 0x2000), 0);
	memcpy(buf, "0123456789abcdef", 16);
	assert_int_equal(guest_mem__write(&m, 0x1ff0, buf, 16), 0);
	assert_memory_equal(ram + 0x1ff0, buf, 16);
	memset(buf, 0, sizeof(buf));
	assert_int_equal(guest_mem__read(&m, 0x1ff8, buf, 8), 0);
	assert_memory_equal(buf, "89abcdef", 8);

	/* Out of range: -EFAULT, nothing copied either way. */
	memset(buf, 0x5a, sizeof(buf));
	memcpy(want, buf, sizeof(want));
	assert_int_equal(guest_mem__read(&m, 0x1ff8, buf, 9), -EFAULT);
	assert_memory_equal(buf, want, sizeof(want));
	assert_int_equal(guest_mem__read(&m, UINT64_MAX - 1, buf, 4), -EFAULT);
	assert_memory_equal(buf, want, sizeof(want));
	assert_int_equal(guest_mem__write(&m, 0x1ff8, buf, 9), -EFAULT);
	assert_memory_equal(ram + 0x1ff0, "0123456789abcdef", 16);
	assert_int_equal(guest_mem__write(&m, 0x2000, buf, 1), -EFAULT);
	/* Zero length at the end is fine. */
	assert_int_equal(guest_mem__write(&m, 0x2000, buf, 0), 0);
	assert_int_equal(guest_mem__read(&m, 0x2000, buf, 0), 0);
	mem__destroy(&m);
	free(ram);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_register_order),
		cmocka_unit_test(test_register_errors),
		cmocka_unit_test(test_register_full),
		cmocka_unit_test(test_access_routes),
		cmocka_unit_test(test_access_misses),
		cmocka_unit_test(test_access_no_ops),
		cmocka_unit_test(test_mem_wrap_ptr),
		cmocka_unit_test(test_mem_wrap_errors),
		cmocka_unit_test(test_mem_create_sizes),
		cmocka_unit_test(test_mem_create_two_regions),
		cmocka_unit_test(test_mem_read_write),
	};

	return cmocka_run_group_tests_name("bus_mem", tests, NULL, NULL);
}
