// SPDX-License-Identifier: Apache-2.0
/*
 * Unit tests for the small platform devices: devices/i8042.c (reset line),
 * devices/guest_signal.c (boot timer, exit status) and devices/cmos.c.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../../boot/layout.h"
#include "../../devices/cmos.h"
#include "../../devices/guest_signal.h"
#include "../../devices/i8042.h"
#include "../../guest-init/protocol.h"
#include "../../vmm/bus.h"

#define NR_EVENTS (DEVICE_EVENT_BOOT_TIMER + 1)

struct recorder {
	unsigned int count[NR_EVENTS];
	unsigned int total;
	uint32_t last_value;
};

static void record(void *opaque, enum device_event ev, uint32_t value)
{
	struct recorder *r = opaque;

	assert_true(ev > 0 && ev < NR_EVENTS);
	r->count[ev]++;
	r->total++;
	r->last_value = value;
}

static struct device_events events(struct recorder *r)
{
	memset(r, 0, sizeof(*r));
	return (struct device_events){ .notify = record, .opaque = r };
}

static int pio_write8(struct bus *b, uint64_t port, uint8_t v)
{
	return bus__access(b, port, &v, 1, true);
}

static void test_i8042_reset(void **state)
{
	static struct bus pio;
	struct recorder r;
	struct device *d = i8042__create(events(&r), (struct irq_line){ 0 });
	uint8_t v;
	uint16_t w;

	(void)state;
	assert_non_null(d);
	memset(&pio, 0, sizeof(pio));
	assert_int_equal(bus__register(&pio, I8042_DATA_PORT, 1, d), 0);
	assert_int_equal(
		bus__register(&pio, I8042_COMMAND_PORT, 1, i8042__command(d)),
		0);
	assert_ptr_not_equal(i8042__command(d), d);

	/* Other commands, and 0xfe on the data port, do nothing. */
	assert_int_equal(pio_write8(&pio, I8042_COMMAND_PORT, 0xff), 0);
	assert_int_equal(pio_write8(&pio, I8042_COMMAND_PORT, 0xfd), 0);
	assert_int_equal(pio_write8(&pio, I8042_COMMAND_PORT, 0xd1), 0);
	assert_int_equal(pio_write8(&pio, I8042_DATA_PORT, 0xfe), 0);
	assert_int_equal(r.total, 0);

	assert_int_equal(pio_write8(&pio, I8042_COMMAND_PORT, I8042_CMD_RESET),
			 0);
	assert_int_equal(r.total, 1);
	assert_int_equal(r.count[DEVICE_EVENT_RESET], 1);
	assert_int_equal(r.last_value, 0);

	/* Status and data read as zero: both buffers empty. */
	v = 0xee;
	assert_int_equal(bus__access(&pio, I8042_COMMAND_PORT, &v, 1, false),
			 0);
	assert_int_equal(v, 0);
	v = 0xee;
	assert_int_equal(bus__access(&pio, I8042_DATA_PORT, &v, 1, false), 0);
	assert_int_equal(v, 0);
	/* A 2-byte access does not fit the 1-byte port. */
	w = 0x00fe;
	assert_int_equal(bus__access(&pio, I8042_COMMAND_PORT, &w, 2, true),
			 -ENOENT);
	assert_int_equal(r.total, 1);

	/* Direct call through the ops: only offset 0 counts. */
	v = I8042_CMD_RESET;
	i8042__command(d)->ops->write(i8042__command(d), 1, &v, 1);
	assert_int_equal(r.total, 1);
	i8042__command(d)->ops->write(i8042__command(d), 0, &v, 1);
	assert_int_equal(r.count[DEVICE_EVENT_RESET], 2);
	i8042__destroy(d);
	i8042__destroy(NULL);
}

static void test_i8042_no_notify(void **state)
{
	struct device_events none = { 0 };
	struct device *d = i8042__create(none, (struct irq_line){ 0 });
	struct device *cmd;
	uint8_t v = I8042_CMD_RESET;

	(void)state;
	assert_non_null(d);
	cmd = i8042__command(d);
	cmd->ops->write(cmd, 0, &v, 1); /* must not crash */
	i8042__destroy(d);
}

struct irq_count {
	unsigned int rises;
	int level;
};

static void count_irq(void *opaque, unsigned int gsi, int level)
{
	struct irq_count *c = opaque;

	assert_int_equal(gsi, 1);
	if (level && !c->level)
		c->rises++;
	c->level = level;
}

/* SendCtrlAltDel: the scancodes come out of the data port, IRQ 1 each. */
static void test_i8042_ctrl_alt_del(void **state)
{
	static const uint8_t want[] = { 0x14, 0x11, 0xe0, 0x71, 0xe0, 0xf0,
					0x71, 0xf0, 0x11, 0xf0, 0x14 };
	struct irq_count irq = { 0 };
	struct device_events none = { 0 };
	struct device *d = i8042__create(
		none, (struct irq_line){
			      .set = count_irq, .opaque = &irq, .gsi = 1 });
	struct device *cmd;
	unsigned int i;
	uint8_t v;

	(void)state;
	assert_non_null(d);
	cmd = i8042__command(d);
	assert_int_equal(i8042__ctrl_alt_del(d), 0);
	assert_int_equal(irq.rises, 1);
	for (i = 0; i < sizeof(want); i++) {
		v = 0;
		cmd->ops->read(cmd, 0, &v, 1);
		assert_int_equal(v, 0x01); /* output buffer full */
		d->ops->read(d, 0, &v, 1);
		assert_int_equal(v, want[i]);
	}
	/* An edge per byte but the last; then the buffer is empty. */
	assert_int_equal(irq.rises, sizeof(want));
	cmd->ops->read(cmd, 0, &v, 1);
	assert_int_equal(v, 0);
	d->ops->read(d, 0, &v, 1);
	assert_int_equal(v, 0);
	/* A full buffer refuses a second set rather than cut it. */
	assert_int_equal(i8042__ctrl_alt_del(d), 0);
	assert_int_equal(i8042__ctrl_alt_del(d), -1);
	i8042__destroy(d);
}

static void test_boot_timer(void **state)
{
	struct recorder r;
	struct device *d = guest_signal__boot_timer(events(&r));
	uint8_t v = EMBER_BOOT_TIMER_MAGIC;
	uint8_t other = EMBER_BOOT_TIMER_MAGIC + 1;
	uint32_t wide = EMBER_BOOT_TIMER_MAGIC;
	uint16_t half = EMBER_BOOT_TIMER_MAGIC;

	(void)state;
	assert_non_null(d);
	assert_int_equal(EMBER_BOOT_TIMER_MAGIC, 123);
	d->ops->write(d, 0, &other, 1);
	d->ops->write(d, 0, &wide, 4);
	d->ops->write(d, 0, &half, 2);
	d->ops->write(d, 1, &v, 1);
	d->ops->write(d, 0xfff, &v, 1);
	assert_int_equal(r.total, 0);

	d->ops->write(d, 0, &v, 1);
	assert_int_equal(r.total, 1);
	assert_int_equal(r.count[DEVICE_EVENT_BOOT_TIMER], 1);
	/* Each write reports again; the VMM decides what to do with it. */
	d->ops->write(d, 0, &v, 1);
	assert_int_equal(r.count[DEVICE_EVENT_BOOT_TIMER], 2);

	guest_signal__destroy(d);
	guest_signal__destroy(NULL);
}

static void test_exit_status(void **state)
{
	static struct bus mmio;
	struct recorder r;
	struct device *d = guest_signal__exit_status(events(&r));
	uint32_t v = 0x12345678;
	uint64_t q = 7;
	uint8_t b = 7;
	uint16_t h = 7;

	(void)state;
	assert_non_null(d);
	memset(&mmio, 0, sizeof(mmio));
	assert_int_equal(bus__register(&mmio, LAYOUT_EXIT_STATUS_GPA,
				       LAYOUT_EXIT_STATUS_SIZE, d),
			 0);

	/* Wrong lengths and offsets are ignored. */
	assert_int_equal(
		bus__access(&mmio, LAYOUT_EXIT_STATUS_GPA, &b, 1, true), 0);
	assert_int_equal(
		bus__access(&mmio, LAYOUT_EXIT_STATUS_GPA, &h, 2, true), 0);
	assert_int_equal(
		bus__access(&mmio, LAYOUT_EXIT_STATUS_GPA, &q, 8, true), 0);
	assert_int_equal(
		bus__access(&mmio, LAYOUT_EXIT_STATUS_GPA + 4, &v, 4, true), 0);
	d->ops->write(d, 1, &v, 4);
	assert_int_equal(r.total, 0);

	assert_int_equal(
		bus__access(&mmio, LAYOUT_EXIT_STATUS_GPA, &v, 4, true), 0);
	assert_int_equal(r.total, 1);
	assert_int_equal(r.count[DEVICE_EVENT_EXIT_STATUS], 1);
	assert_int_equal(r.last_value, 0x12345678);

	v = 0;
	d->ops->write(d, 0, &v, 4);
	assert_int_equal(r.count[DEVICE_EVENT_EXIT_STATUS], 2);
	assert_int_equal(r.last_value, 0);
	v = 0xffffffffu;
	d->ops->write(d, 0, &v, 4);
	assert_int_equal(r.last_value, 0xffffffffu);

	/* Reads: zero. */
	v = 0xdeadbeef;
	assert_int_equal(
		bus__access(&mmio, LAYOUT_EXIT_STATUS_GPA, &v, 4, false), 0);
	assert_int_equal(v, 0);
	assert_int_equal(r.total, 3);
	guest_signal__destroy(d);
}

static void test_guest_signal_no_notify(void **state)
{
	struct device_events none = { 0 };
	struct device *bt = guest_signal__boot_timer(none);
	struct device *es = guest_signal__exit_status(none);
	uint32_t v = EMBER_BOOT_TIMER_MAGIC;

	(void)state;
	assert_non_null(bt);
	assert_non_null(es);
	bt->ops->write(bt, 0, &v, 1);
	es->ops->write(es, 0, &v, 4);
	guest_signal__destroy(bt);
	guest_signal__destroy(es);
}

static uint8_t cmos_read(struct bus *b, uint8_t index)
{
	uint8_t v = 0xee;

	assert_int_equal(pio_write8(b, CMOS_PORT, index), 0);
	assert_int_equal(bus__access(b, CMOS_PORT + 1, &v, 1, false), 0);
	return v;
}

static void assert_bcd(uint8_t v, unsigned int min, unsigned int max)
{
	unsigned int dec;

	assert_true((v & 0x0f) <= 9);
	assert_true((v >> 4) <= 9);
	dec = (v >> 4) * 10 + (v & 0x0f);
	assert_true(dec >= min);
	assert_true(dec <= max);
}

static void test_cmos(void **state)
{
	static struct bus pio;
	struct device *d = cmos__create();
	uint8_t v;
	uint16_t w;

	(void)state;
	assert_non_null(d);
	memset(&pio, 0, sizeof(pio));
	assert_int_equal(bus__register(&pio, CMOS_PORT, CMOS_PORT_LEN, d), 0);

	v = cmos_read(&pio, 0x0a);
	assert_int_equal(v & 0x80, 0); /* UIP clear */
	assert_int_equal(v, 0x26);
	assert_int_equal(cmos_read(&pio, 0x0b), 0x02);
	assert_int_equal(cmos_read(&pio, 0x0c), 0x00);
	assert_int_equal(cmos_read(&pio, 0x0d), 0x80);
	/* The NMI-mask bit of the index is not part of it. */
	assert_int_equal(cmos_read(&pio, 0x8b), 0x02);
	assert_int_equal(cmos_read(&pio, 0x8a) & 0x80, 0);

	assert_bcd(cmos_read(&pio, 0x00), 0, 60); /* leap second */
	assert_bcd(cmos_read(&pio, 0x02), 0, 59);
	assert_bcd(cmos_read(&pio, 0x04), 0, 23);
	assert_bcd(cmos_read(&pio, 0x06), 1, 7);
	assert_bcd(cmos_read(&pio, 0x07), 1, 31);
	assert_bcd(cmos_read(&pio, 0x08), 1, 12);
	assert_bcd(cmos_read(&pio, 0x09), 0, 99);
	assert_bcd(cmos_read(&pio, 0x32), 20, 21);
	/* Registers ember does not model read as zero. */
	assert_int_equal(cmos_read(&pio, 0x0e), 0);
	assert_int_equal(cmos_read(&pio, 0x7f), 0);

	/* The index port reads zero; a 2-byte data read is ignored. */
	v = 0xee;
	assert_int_equal(bus__access(&pio, CMOS_PORT, &v, 1, false), 0);
	assert_int_equal(v, 0);
	w = 0xeeee;
	assert_int_equal(bus__access(&pio, CMOS_PORT, &w, 2, false), 0);
	assert_int_equal(w, 0);
	/* A write to the data port does not change the time registers. */
	assert_int_equal(pio_write8(&pio, CMOS_PORT, 0x0b), 0);
	assert_int_equal(pio_write8(&pio, CMOS_PORT + 1, 0x86), 0);
	assert_int_equal(cmos_read(&pio, 0x0b), 0x02);
	/* Direct call: a read at offset 1 with length 1 only. */
	v = 0xee;
	d->ops->write(d, 0, (const uint8_t[]){ 0x0b }, 1);
	d->ops->read(d, 1, &v, 1);
	assert_int_equal(v, 0x02);
	cmos__destroy(d);
	cmos__destroy(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_i8042_reset),
		cmocka_unit_test(test_i8042_no_notify),
		cmocka_unit_test(test_i8042_ctrl_alt_del),
		cmocka_unit_test(test_boot_timer),
		cmocka_unit_test(test_exit_status),
		cmocka_unit_test(test_guest_signal_no_notify),
		cmocka_unit_test(test_cmos),
	};

	return cmocka_run_group_tests_name("platform_devices", tests, NULL,
					   NULL);
}
