// SPDX-License-Identifier: Apache-2.0
/* Unit tests for devices/serial.c: the 16550A UART. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "../../devices/serial.h"

#define RX  0
#define TX  0
#define DLL 0
#define IER 1
#define DLM 1
#define IIR 2
#define FCR 2
#define LCR 3
#define MCR 4
#define LSR 5
#define MSR 6
#define SCR 7

#define GSI	  4
#define FIFO_SIZE 64

/* 8N1 at 115200 baud (divisor 1): 10 bits. */
#define CHAR_NS 86805ULL
#define MS	1000000ULL

struct fixture {
	struct device *d;
	int pipe[2];
	uint64_t now; /* the fake clock, ns */
	unsigned int irq_calls;
	int irq_level;
	unsigned int irq_gsi;
};

static void fake_irq(void *opaque, unsigned int gsi, int level)
{
	struct fixture *f = opaque;

	f->irq_calls++;
	f->irq_level = level;
	f->irq_gsi = gsi;
}

static void fake_tx(void *opaque, uint8_t byte)
{
	struct fixture *f = opaque;

	assert_int_equal(write(f->pipe[1], &byte, 1), 1);
}

static uint64_t fake_now(void *opaque)
{
	return ((struct fixture *)opaque)->now;
}

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	struct serial_host host = { .tx = fake_tx, .now_ns = fake_now };
	struct irq_line irq;

	if (!f)
		return -1;
	if (pipe2(f->pipe, O_NONBLOCK | O_CLOEXEC)) {
		free(f);
		return -1;
	}
	f->irq_gsi = ~0u;
	f->now = 1000000 * MS;
	host.opaque = f;
	irq = (struct irq_line){ .set = fake_irq, .opaque = f, .gsi = GSI };
	f->d = serial__create(&host, irq);
	if (!f->d) {
		close(f->pipe[0]);
		close(f->pipe[1]);
		free(f);
		return -1;
	}
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	serial__destroy(f->d);
	close(f->pipe[0]);
	close(f->pipe[1]);
	free(f);
	return 0;
}

static uint8_t rd(struct fixture *f, uint64_t off)
{
	uint8_t v = 0xee;

	f->d->ops->read(f->d, off, &v, 1);
	return v;
}

static void wr(struct fixture *f, uint64_t off, uint8_t v)
{
	f->d->ops->write(f->d, off, &v, 1);
}

/*
 * What Linux's 8250 driver leaves when it opens the tty: DTR, RTS and OUT2
 * raised (MCR 0x0b), then IER = @ier.
 */
static void tty_open(struct fixture *f, uint8_t ier)
{
	wr(f, MCR, 0x0b);
	wr(f, IER, ier);
}

/* serial__input() with the retry time dropped. */
static size_t input(struct fixture *f, const void *buf, size_t len)
{
	uint64_t retry;

	return serial__input(f->d, buf, len, &retry);
}

/* Bytes waiting in the pipe (non-blocking), at most @len. */
static ssize_t drain(struct fixture *f, uint8_t *buf, size_t len)
{
	ssize_t n = read(f->pipe[0], buf, len);

	return n < 0 && errno == EAGAIN ? 0 : n;
}

static void test_reset_state(void **state)
{
	struct fixture *f = *state;

	assert_int_equal(rd(f, IER), 0);
	assert_int_equal(rd(f, IIR), 0x01);
	assert_int_equal(rd(f, LCR), 0);
	assert_int_equal(rd(f, MCR), 0x08);
	assert_int_equal(rd(f, LSR), 0x60);
	assert_int_equal(rd(f, MSR), 0xb0);
	assert_int_equal(rd(f, SCR), 0);
	assert_int_equal(rd(f, RX), 0);
	assert_int_equal(f->irq_calls, 0);
}

static void test_transmit(void **state)
{
	struct fixture *f = *state;
	uint8_t buf[16];

	wr(f, TX, 'h');
	wr(f, TX, 'i');
	assert_int_equal(drain(f, buf, sizeof(buf)), 2);
	assert_memory_equal(buf, "hi", 2);
	/* The transmitter is always empty. */
	assert_int_equal(rd(f, LSR), 0x60);
	/* No interrupt without IER. */
	assert_int_equal(f->irq_calls, 0);
}

static void test_transmit_discard(void **state)
{
	struct irq_line irq = { 0 };
	struct device *d = serial__create(NULL, irq);
	uint8_t v = 'x';

	(void)state;
	assert_non_null(d);
	d->ops->write(d, TX, &v, 1);
	v = 0xee;
	d->ops->read(d, LSR, &v, 1);
	assert_int_equal(v, 0x60);
	/* Enabling THRI with no irq line set must not crash. */
	v = 0x02;
	d->ops->write(d, IER, &v, 1);
	serial__destroy(d);
	serial__destroy(NULL);
}

static void test_dlab(void **state)
{
	struct fixture *f = *state;
	uint8_t buf[4];

	wr(f, IER, 0x05);
	wr(f, LCR, 0x83);
	assert_int_equal(rd(f, LCR), 0x83);
	wr(f, DLL, 0x0c);
	wr(f, DLM, 0x01);
	assert_int_equal(rd(f, DLL), 0x0c);
	assert_int_equal(rd(f, DLM), 0x01);
	/* Divisor writes neither transmit nor change IER. */
	assert_int_equal(drain(f, buf, sizeof(buf)), 0);
	wr(f, LCR, 0x03);
	assert_int_equal(rd(f, IER), 0x05);
	assert_int_equal(rd(f, RX), 0);
	wr(f, LCR, 0x83);
	assert_int_equal(rd(f, DLL), 0x0c);
	assert_int_equal(rd(f, DLM), 0x01);
	wr(f, LCR, 0x03);
	wr(f, TX, 'z');
	assert_int_equal(drain(f, buf, sizeof(buf)), 1);
	assert_int_equal(buf[0], 'z');
}

static void test_scratch_and_ier_mask(void **state)
{
	struct fixture *f = *state;

	wr(f, SCR, 0xa5);
	assert_int_equal(rd(f, SCR), 0xa5);
	wr(f, IER, 0xf0); /* only bits 0-3 exist */
	assert_int_equal(rd(f, IER), 0);
	wr(f, MCR, 0xff); /* only bits 0-4 exist */
	assert_int_equal(rd(f, MCR), 0x1f);
}

static void test_thri(void **state)
{
	struct fixture *f = *state;

	wr(f, IER, 0x02);
	assert_int_equal(f->irq_calls, 1);
	assert_int_equal(f->irq_level, 1);
	assert_int_equal(f->irq_gsi, GSI);
	/* Reading IIR reports THRI and acknowledges it. */
	assert_int_equal(rd(f, IIR), 0x02);
	assert_int_equal(f->irq_calls, 2);
	assert_int_equal(f->irq_level, 0);
	assert_int_equal(rd(f, IIR), 0x01);
	assert_int_equal(f->irq_calls, 2);
	/* Writing IER again with THRI still set does not re-arm it. */
	wr(f, IER, 0x02);
	assert_int_equal(f->irq_calls, 2);
	/* Transmitting does. */
	wr(f, TX, 'a');
	assert_int_equal(f->irq_calls, 3);
	assert_int_equal(f->irq_level, 1);
	/* Disabling THRI lowers the line. */
	wr(f, IER, 0x00);
	assert_int_equal(f->irq_calls, 4);
	assert_int_equal(f->irq_level, 0);
	assert_int_equal(rd(f, IIR), 0x01);
}

static void test_fifo_iir_bits(void **state)
{
	struct fixture *f = *state;

	wr(f, FCR, 0x01);
	assert_int_equal(rd(f, IIR), 0xc1);
	wr(f, IER, 0x02);
	assert_int_equal(rd(f, IIR), 0xc2);
	assert_int_equal(rd(f, IIR), 0xc1);
	wr(f, FCR, 0x00);
	assert_int_equal(rd(f, IIR), 0x01);
}

static void test_receive(void **state)
{
	struct fixture *f = *state;

	tty_open(f, 0x01);
	assert_int_equal(f->irq_calls, 0);
	assert_int_equal(input(f, "hi", 2), 2);
	assert_int_equal(f->irq_calls, 1);
	assert_int_equal(f->irq_level, 1);
	assert_int_equal(rd(f, LSR), 0x61);
	assert_int_equal(rd(f, IIR), 0x04);
	/* Reading IIR does not acknowledge received data. */
	assert_int_equal(f->irq_level, 1);
	assert_int_equal(rd(f, RX), 'h');
	assert_int_equal(f->irq_level, 1);
	assert_int_equal(rd(f, LSR), 0x61);
	assert_int_equal(rd(f, RX), 'i');
	assert_int_equal(f->irq_calls, 2);
	assert_int_equal(f->irq_level, 0);
	assert_int_equal(rd(f, LSR), 0x60);
	assert_int_equal(rd(f, IIR), 0x01);
	assert_int_equal(rd(f, RX), 0);
	assert_int_equal(f->irq_calls, 2);
}

static void test_receive_priority(void **state)
{
	struct fixture *f = *state;

	/* RDI outranks THRI; THRI shows once the data is read. */
	tty_open(f, 0x03);
	assert_int_equal(input(f, "x", 1), 1);
	assert_int_equal(rd(f, IIR), 0x04);
	assert_int_equal(rd(f, RX), 'x');
	assert_int_equal(f->irq_level, 1);
	assert_int_equal(rd(f, IIR), 0x02);
	assert_int_equal(f->irq_level, 0);
}

static void test_receive_without_ier(void **state)
{
	struct fixture *f = *state;

	/* No tty open (RDI off): input stays with the caller. */
	assert_int_equal(input(f, "ab", 2), 0);
	assert_int_equal(f->irq_calls, 0);
	assert_int_equal(rd(f, LSR), 0x60);
	assert_int_equal(rd(f, IIR), 0x01);
	/*
	 * Linux's 8250 probe, long before the tty opens: IER 0x0F for a
	 * moment (RTS low, DTR raised for the console), then back, and
	 * later a FIFO clear.  Input taken in that moment would be lost.
	 */
	wr(f, MCR, 0x01);
	wr(f, IER, 0x0f);
	assert_int_equal(input(f, "ab", 2), 0);
	assert_int_equal(rd(f, LSR), 0x60);
	wr(f, IER, 0x00);
	/* RTS raised with RDI off (the open's first steps): still held. */
	wr(f, MCR, 0x0b);
	assert_int_equal(input(f, "ab", 2), 0);
	/* Once the driver listens, input is queued and interrupts. */
	wr(f, IER, 0x01);
	assert_int_equal(f->irq_level, 0);
	assert_int_equal(input(f, "ab", 2), 2);
	assert_int_equal(f->irq_level, 1);
	assert_int_equal(rd(f, LSR), 0x61);
	/* FCR "clear receive FIFO" empties it and lowers the line. */
	wr(f, FCR, 0x03);
	assert_int_equal(f->irq_level, 0);
	assert_int_equal(rd(f, LSR), 0x60);
	assert_int_equal(rd(f, RX), 0);
	/* Loopback disconnects the input, as on a real 16550. */
	wr(f, MCR, 0x1b);
	assert_int_equal(input(f, "c", 1), 0);
	/* The tty closed (HUPCL drops RTS): held again. */
	wr(f, MCR, 0x09);
	assert_int_equal(input(f, "c", 1), 0);
	wr(f, MCR, 0x0b);
	assert_int_equal(input(f, "c", 1), 1);
}

static void test_fifo_limit(void **state)
{
	struct fixture *f = *state;
	uint8_t in[100];
	size_t n = 0, got;
	unsigned int i;

	for (i = 0; i < sizeof(in); i++)
		in[i] = (uint8_t)i;
	tty_open(f, 0x01);
	/* Bursts of SERIAL_RX_BURST as the line time passes; the FIFO fills. */
	do {
		got = input(f, in + n, sizeof(in) - n);
		assert_true(got <= SERIAL_RX_BURST);
		n += got;
		f->now += SERIAL_RX_BURST * CHAR_NS;
	} while (got);
	assert_int_equal(n, FIFO_SIZE);
	assert_int_equal(input(f, in, 1), 0);
	for (i = 0; i < 10; i++)
		assert_int_equal(rd(f, RX), i);
	/* Room for 10 more; the ring wraps. */
	f->now += 1000 * MS;
	assert_int_equal(input(f, in + 80, 20), 10);
	for (i = 10; i < FIFO_SIZE; i++)
		assert_int_equal(rd(f, RX), i);
	for (i = 80; i < 90; i++)
		assert_int_equal(rd(f, RX), i);
	assert_int_equal(rd(f, LSR), 0x60);
	assert_int_equal(input(f, in, 0), 0);
}

/*
 * A stream that never ends (`yes | ember`) reaches the guest at the
 * line's rate, whatever the host offers: about 11.5 KB/s at 115200 8N1,
 * 960 B/s at 9600 baud; after an idle line, SERIAL_RX_BURST at once.
 */
static void test_receive_pacing_baud(void **state)
{
	struct fixture *f = *state;
	static const struct {
		uint8_t dll;
		size_t per_s;
	} rates[] = { { 1, 11520 }, { 12, 960 } };
	uint8_t in[256] = { 0 };
	uint64_t retry;
	unsigned int r, step;

	wr(f, LCR, 0x03);
	tty_open(f, 0x01);
	assert_int_equal(serial__input(f->d, in, sizeof(in), &retry),
			 SERIAL_RX_BURST);
	assert_int_equal(retry, CHAR_NS);
	/* Nothing more before the line has carried the next character. */
	f->now += CHAR_NS - 1;
	assert_int_equal(input(f, in, sizeof(in)), 0);
	for (r = 0; r < 2; r++) {
		size_t total = 0;

		wr(f, LCR, 0x83);
		wr(f, DLL, rates[r].dll);
		wr(f, DLM, 0);
		wr(f, LCR, 0x03);
		/* One second in 1 ms steps; the guest reads at once. */
		for (step = 0; step < 1000; step++) {
			f->now += MS;
			total += input(f, in, sizeof(in));
			while (rd(f, LSR) & 0x01)
				rd(f, RX);
		}
		assert_true(total <= rates[r].per_s + SERIAL_RX_BURST);
		assert_true(total >= rates[r].per_s * 95 / 100);
	}
	/* An idle line banks no more than a burst. */
	f->now += 60000 * MS;
	assert_int_equal(input(f, in, sizeof(in)), SERIAL_RX_BURST);
}

/*
 * However slow the guest is at taking input (an emulated guest kernel
 * pays milliseconds per interrupt), it gets as much time again for its
 * own work before the next byte: input can slow it down by half at most.
 */
static void test_receive_pacing_guest(void **state)
{
	struct fixture *f = *state;
	uint8_t in[64] = { 0 };
	uint64_t retry;
	unsigned int i;

	tty_open(f, 0x01);
	assert_int_equal(input(f, in, 4), 4);
	/* The guest takes 5 ms to empty the FIFO. */
	for (i = 0; i < 4; i++) {
		f->now += 5 * MS / 4;
		rd(f, RX);
	}
	assert_int_equal(serial__input(f->d, in, 4, &retry), 0);
	assert_int_equal(retry, 5 * MS);
	f->now += 5 * MS - 1;
	assert_int_equal(input(f, in, 4), 0);
	f->now += 1;
	assert_true(input(f, in, 4) > 0);
	/* A guest stopped for a minute does not stall its input a minute. */
	while (rd(f, LSR) & 0x01)
		rd(f, RX);
	f->now += 1000 * MS;
	assert_int_equal(input(f, in, 1), 1);
	f->now += 60000 * MS;
	rd(f, RX);
	assert_int_equal(serial__input(f->d, in, 1, &retry), 0);
	assert_true(retry <= 100 * MS);
	f->now += 100 * MS;
	assert_int_equal(input(f, in, 1), 1);
	/* Waiting on the guest (FIFO full, or no tty): retry 0, poll. */
	wr(f, IER, 0x00);
	assert_int_equal(serial__input(f->d, in, 1, &retry), 0);
	assert_int_equal(retry, 0);
}

static void test_loopback(void **state)
{
	struct fixture *f = *state;
	uint8_t buf[4];

	wr(f, MCR, 0x10);
	assert_int_equal(rd(f, MSR), 0x00);
	wr(f, TX, 0x55);
	wr(f, TX, 0xaa);
	/* Looped back, not sent. */
	assert_int_equal(drain(f, buf, sizeof(buf)), 0);
	assert_int_equal(rd(f, LSR), 0x61);
	assert_int_equal(rd(f, RX), 0x55);
	assert_int_equal(rd(f, RX), 0xaa);
	assert_int_equal(rd(f, LSR), 0x60);

	/* DTR->DSR, RTS->CTS, OUT1->RI, OUT2->DCD. */
	wr(f, MCR, 0x11);
	assert_int_equal(rd(f, MSR), 0x20);
	wr(f, MCR, 0x12);
	assert_int_equal(rd(f, MSR), 0x10);
	wr(f, MCR, 0x14);
	assert_int_equal(rd(f, MSR), 0x40);
	wr(f, MCR, 0x18);
	assert_int_equal(rd(f, MSR), 0x80);
	wr(f, MCR, 0x1f);
	assert_int_equal(rd(f, MSR), 0xf0);

	/* Loopback data raises RDI like received data. */
	wr(f, IER, 0x01);
	wr(f, TX, 0x42);
	assert_int_equal(f->irq_level, 1);
	assert_int_equal(rd(f, IIR), 0x04);
	assert_int_equal(rd(f, RX), 0x42);
	assert_int_equal(f->irq_level, 0);

	/* Out of loopback: modem lines back, bytes to the pipe. */
	wr(f, MCR, 0x0b);
	assert_int_equal(rd(f, MSR), 0xb0);
	wr(f, TX, 'q');
	assert_int_equal(drain(f, buf, sizeof(buf)), 1);
	assert_int_equal(buf[0], 'q');
}

static void test_loopback_fifo_full(void **state)
{
	struct fixture *f = *state;
	unsigned int i;

	wr(f, MCR, 0x10);
	for (i = 0; i < FIFO_SIZE + 5; i++)
		wr(f, TX, (uint8_t)i);
	for (i = 0; i < FIFO_SIZE; i++)
		assert_int_equal(rd(f, RX), i);
	assert_int_equal(rd(f, LSR), 0x60);
}

static void test_odd_accesses(void **state)
{
	struct fixture *f = *state;
	uint8_t buf[8], v;
	unsigned int i;

	wr(f, SCR, 0x3c);
	wr(f, LCR, 0x03);
	/* Registers past 7 read as zero; writes there are dropped. */
	memset(buf, 0xee, sizeof(buf));
	f->d->ops->read(f->d, 8, buf, 8);
	for (i = 0; i < 8; i++)
		assert_int_equal(buf[i], 0);
	memset(buf, 0xff, sizeof(buf));
	f->d->ops->write(f->d, 8, buf, 8);
	f->d->ops->read(f->d, 0x1000, buf, 0);
	assert_int_equal(rd(f, SCR), 0x3c);
	assert_int_equal(rd(f, LCR), 0x03);
	assert_int_equal(rd(f, IER), 0);
	assert_int_equal(rd(f, 100), 0);

	/* A 2-byte read at LSR covers LSR and MSR. */
	f->d->ops->read(f->d, LSR, buf, 2);
	assert_int_equal(buf[0], 0x60);
	assert_int_equal(buf[1], 0xb0);
	/* A 2-byte write at LCR sets LCR and MCR. */
	buf[0] = 0x1b;
	buf[1] = 0x03;
	f->d->ops->write(f->d, LCR, buf, 2);
	assert_int_equal(rd(f, LCR), 0x1b);
	assert_int_equal(rd(f, MCR), 0x03);
	/* Writes to LSR/MSR are dropped. */
	v = 0;
	f->d->ops->write(f->d, LSR, &v, 1);
	f->d->ops->write(f->d, MSR, &v, 1);
	assert_int_equal(rd(f, LSR), 0x60);
	assert_int_equal(rd(f, MSR), 0xb0);

	/* Offsets that wrap around must not crash either. */
	memset(buf, 0, sizeof(buf));
	f->d->ops->write(f->d, UINT64_MAX - 3, buf, 8);
	f->d->ops->read(f->d, UINT64_MAX - 3, buf, 8);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
		T(test_reset_state),
		T(test_transmit),
		cmocka_unit_test(test_transmit_discard),
		T(test_dlab),
		T(test_scratch_and_ier_mask),
		T(test_thri),
		T(test_fifo_iir_bits),
		T(test_receive),
		T(test_receive_priority),
		T(test_receive_without_ier),
		T(test_fifo_limit),
		T(test_receive_pacing_baud),
		T(test_receive_pacing_guest),
		T(test_loopback),
		T(test_loopback_fifo_full),
		T(test_odd_accesses),
#undef T
	};

	return cmocka_run_group_tests_name("serial", tests, NULL, NULL);
}
