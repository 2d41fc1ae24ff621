// SPDX-License-Identifier: Apache-2.0
/* 16550A UART model (see serial.h). */
#include "serial.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Register offsets. */
#define UART_RX	 0 /* in:  receive buffer (DLAB=0) */
#define UART_TX	 0 /* out: transmit holding (DLAB=0) */
#define UART_DLL 0 /* divisor latch low (DLAB=1) */
#define UART_IER 1
#define UART_DLM 1 /* divisor latch high (DLAB=1) */
#define UART_IIR 2 /* in */
#define UART_FCR 2 /* out */
#define UART_LCR 3
#define UART_MCR 4
#define UART_LSR 5
#define UART_MSR 6
#define UART_SCR 7

#define UART_IER_RDI	0x01
#define UART_IER_THRI	0x02
#define UART_IIR_NO_INT 0x01
#define UART_IIR_THRI	0x02
#define UART_IIR_RDI	0x04
#define UART_IIR_FIFO	0xc0
#define UART_FCR_ENABLE 0x01
#define UART_FCR_CLR_RX 0x02
#define UART_LCR_DLAB	0x80
#define UART_MCR_RTS	0x02
#define UART_MCR_LOOP	0x10
#define UART_LSR_DR	0x01
#define UART_LSR_THRE	0x20
#define UART_LSR_TEMT	0x40
#define UART_MSR_CTS	0x10
#define UART_MSR_DSR	0x20
#define UART_MSR_RI	0x40
#define UART_MSR_DCD	0x80

#define RX_FIFO_SIZE SERIAL_RX_FIFO

/* The UART's clock (1.8432 MHz / 16): the baud rate at divisor 1. */
#define UART_BASE_BAUD 115200ULL
#define NS_PER_S       1000000000ULL
/*
 * The longest the guest's own time makes the next byte wait (see
 * serial.h): a guest that was stopped or descheduled for a while must not
 * stall its input for as long.
 */
#define RX_PACE_MAX_NS (100ULL * 1000 * 1000)

struct serial {
	struct device dev; /* first: container_of by cast */
	struct serial_host host;
	struct irq_line irq;
	uint8_t ier, lcr, mcr, scr, fcr, dll, dlm;
	int thr_ipending; /* transmitter-empty interrupt pending */
	int irq_level;
	uint8_t rx[RX_FIFO_SIZE];
	unsigned int rx_head, rx_count;
	uint64_t rx_next_ns; /* the next host byte may arrive from then on */
	uint64_t rx_busy_ns; /* when host input last found the FIFO empty */
};

static struct serial *to_serial(struct device *d)
{
	return (struct serial *)d;
}

static void serial__update_irq(struct serial *s)
{
	int level = ((s->ier & UART_IER_RDI) && s->rx_count) ||
		    ((s->ier & UART_IER_THRI) && s->thr_ipending);

	if (level != s->irq_level) {
		s->irq_level = level;
		if (s->irq.set)
			s->irq.set(s->irq.opaque, s->irq.gsi, level);
	}
}

static uint64_t serial__now(const struct serial *s)
{
	struct timespec t;

	if (s->host.now_ns)
		return s->host.now_ns(s->host.opaque);
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * NS_PER_S + (uint64_t)t.tv_nsec;
}

/*
 * One character's time on the line: a start bit, 5-8 data bits, the
 * parity bit, 1 or 2 stop bits (LCR), at 115200 / divisor baud (a zero
 * divisor, the reset value, counts as 1).  At most ~6.8 s.
 */
static uint64_t serial__char_ns(const struct serial *s)
{
	uint64_t divisor = ((uint64_t)s->dlm << 8) | s->dll;
	uint64_t bits = 1 + 5 + (s->lcr & 0x03) + ((s->lcr & 0x08) ? 1 : 0) +
			((s->lcr & 0x04) ? 2 : 1);

	if (!divisor)
		divisor = 1;
	return bits * divisor * NS_PER_S / UART_BASE_BAUD;
}

/* The guest emptied the FIFO: give it as much time again (serial.h). */
static void serial__rx_drained(struct serial *s)
{
	uint64_t now = serial__now(s);
	uint64_t busy = now > s->rx_busy_ns ? now - s->rx_busy_ns : 0;

	if (busy > RX_PACE_MAX_NS)
		busy = RX_PACE_MAX_NS;
	if (s->rx_next_ns < now + busy)
		s->rx_next_ns = now + busy;
}

static uint8_t serial__iir(struct serial *s)
{
	uint8_t fifo = (s->fcr & UART_FCR_ENABLE) ? UART_IIR_FIFO : 0;

	if ((s->ier & UART_IER_RDI) && s->rx_count)
		return fifo | UART_IIR_RDI;
	if ((s->ier & UART_IER_THRI) && s->thr_ipending)
		return fifo | UART_IIR_THRI;
	return fifo | UART_IIR_NO_INT;
}

static void serial__tx(struct serial *s, uint8_t c)
{
	if (s->mcr & UART_MCR_LOOP) {
		if (s->rx_count < RX_FIFO_SIZE) {
			s->rx[(s->rx_head + s->rx_count) % RX_FIFO_SIZE] = c;
			s->rx_count++;
		}
	} else if (s->host.tx) {
		s->host.tx(s->host.opaque, c);
	}
	s->thr_ipending = 1;
}

static uint8_t serial__readb(struct serial *s, uint64_t off)
{
	uint8_t v = 0, iir;

	switch (off) {
	case UART_RX:
		if (s->lcr & UART_LCR_DLAB)
			return s->dll;
		if (s->rx_count) {
			v = s->rx[s->rx_head];
			s->rx_head = (s->rx_head + 1) % RX_FIFO_SIZE;
			if (!--s->rx_count)
				serial__rx_drained(s);
		}
		break;
	case UART_IER:
		return (s->lcr & UART_LCR_DLAB) ? s->dlm : s->ier;
	case UART_IIR:
		iir = serial__iir(s);
		/* Reading IIR acknowledges a transmitter-empty interrupt. */
		if ((iir & 0x0f) == UART_IIR_THRI)
			s->thr_ipending = 0;
		v = iir;
		break;
	case UART_LCR:
		return s->lcr;
	case UART_MCR:
		return s->mcr;
	case UART_LSR:
		v = UART_LSR_THRE | UART_LSR_TEMT;
		if (s->rx_count)
			v |= UART_LSR_DR;
		return v;
	case UART_MSR:
		if (s->mcr & UART_MCR_LOOP) {
			/* Loopback: modem outputs appear on the inputs. */
			v = (uint8_t)(((s->mcr & 0x01) << 5) |
				      ((s->mcr & 0x02) << 3) |
				      ((s->mcr & 0x04) << 4) |
				      ((s->mcr & 0x08) << 4));
			return v;
		}
		return UART_MSR_DCD | UART_MSR_DSR | UART_MSR_CTS;
	case UART_SCR:
		return s->scr;
	default:
		return 0;
	}
	serial__update_irq(s);
	return v;
}

static void serial__writeb(struct serial *s, uint64_t off, uint8_t v)
{
	switch (off) {
	case UART_TX:
		if (s->lcr & UART_LCR_DLAB) {
			s->dll = v;
			return;
		}
		serial__tx(s, v);
		break;
	case UART_IER:
		if (s->lcr & UART_LCR_DLAB) {
			s->dlm = v;
			return;
		}
		/* Enabling THRI with an empty transmitter interrupts at once. */
		if (!(s->ier & UART_IER_THRI) && (v & UART_IER_THRI))
			s->thr_ipending = 1;
		s->ier = v & 0x0f;
		break;
	case UART_FCR:
		s->fcr = v;
		if ((v & UART_FCR_CLR_RX) && s->rx_count) {
			s->rx_head = s->rx_count = 0;
			serial__rx_drained(s);
		}
		break;
	case UART_LCR:
		s->lcr = v;
		return;
	case UART_MCR:
		s->mcr = v & 0x1f;
		break;
	case UART_SCR:
		s->scr = v;
		return;
	default:
		return;
	}
	serial__update_irq(s);
}

static void serial__read(struct device *d, uint64_t off, void *data,
			 uint32_t len)
{
	uint8_t *p = data;
	uint32_t i;

	for (i = 0; i < len; i++)
		p[i] = serial__readb(to_serial(d), off + i);
}

static void serial__write(struct device *d, uint64_t off, const void *data,
			  uint32_t len)
{
	const uint8_t *p = data;
	uint32_t i;

	for (i = 0; i < len; i++)
		serial__writeb(to_serial(d), off + i, p[i]);
}

static const struct device_ops serial_ops = {
	.name = "serial",
	.read = serial__read,
	.write = serial__write,
};

struct device *serial__create(const struct serial_host *host,
			      struct irq_line irq)
{
	struct serial *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->dev.ops = &serial_ops;
	pthread_mutex_init(&s->dev.lock, NULL);
	if (host)
		s->host = *host;
	s->irq = irq;
	s->mcr = 0x08; /* OUT2 */
	return &s->dev;
}

size_t serial__input(struct device *d, const void *buf, size_t len,
		     uint64_t *retry_ns)
{
	struct serial *s = to_serial(d);
	const uint8_t *p = buf;
	uint64_t now, ct, burst;
	size_t n = 0;

	pthread_mutex_lock(&d->lock);
	*retry_ns = 0;
	/*
	 * Until the guest's tty is open, input would be lost (the driver's
	 * start-up clears the FIFO): leave it with the caller, which keeps it
	 * for later.  Open means RTS raised (the receiver is ready, as for
	 * RTS/CTS flow control) and the receive interrupt enabled.  Either
	 * alone is not enough: Linux's 8250 probe sets IER to 0x0F for a
	 * moment to test the register, long before any open, and a byte
	 * taken then would be cleared with the FIFO.
	 */
	if (!(s->ier & UART_IER_RDI) || !(s->mcr & UART_MCR_RTS) ||
	    (s->mcr & UART_MCR_LOOP))
		goto out;
	now = serial__now(s);
	ct = serial__char_ns(s);
	/* An idle line banks at most SERIAL_RX_BURST characters. */
	burst = (SERIAL_RX_BURST - 1) * ct;
	if (s->rx_next_ns + burst < now)
		s->rx_next_ns = now - burst;
	while (n < len && s->rx_count < RX_FIFO_SIZE && s->rx_next_ns <= now) {
		if (!s->rx_count)
			s->rx_busy_ns = now;
		s->rx[(s->rx_head + s->rx_count) % RX_FIFO_SIZE] = p[n++];
		s->rx_count++;
		s->rx_next_ns += ct;
	}
	if (n < len && s->rx_count < RX_FIFO_SIZE && s->rx_next_ns > now)
		*retry_ns = s->rx_next_ns - now;
out:
	serial__update_irq(s);
	pthread_mutex_unlock(&d->lock);
	return n;
}

void serial__destroy(struct device *d)
{
	if (!d)
		return;
	pthread_mutex_destroy(&d->lock);
	free(to_serial(d));
}

void serial__get_state(struct device *d, struct serial_state *st)
{
	struct serial *s = to_serial(d);
	unsigned int i;

	memset(st, 0, sizeof(*st));
	pthread_mutex_lock(&d->lock);
	st->ier = s->ier;
	st->lcr = s->lcr;
	st->mcr = s->mcr;
	st->scr = s->scr;
	st->fcr = s->fcr;
	st->dll = s->dll;
	st->dlm = s->dlm;
	st->thr_ipending = s->thr_ipending != 0;
	st->rx_count = s->rx_count;
	for (i = 0; i < s->rx_count; i++)
		st->rx[i] = s->rx[(s->rx_head + i) % RX_FIFO_SIZE];
	pthread_mutex_unlock(&d->lock);
}

int serial__set_state(struct device *d, const struct serial_state *st)
{
	struct serial *s = to_serial(d);

	if (st->rx_count > RX_FIFO_SIZE)
		return -EINVAL;
	pthread_mutex_lock(&d->lock);
	s->ier = st->ier & 0x0f; /* the bits a 16550 has */
	s->lcr = st->lcr;
	s->mcr = st->mcr & 0x1f;
	s->scr = st->scr;
	s->fcr = st->fcr;
	s->dll = st->dll;
	s->dlm = st->dlm;
	s->thr_ipending = st->thr_ipending;
	memcpy(s->rx, st->rx, st->rx_count);
	s->rx_head = 0;
	s->rx_count = st->rx_count;
	s->irq_level = -1; /* drive the line whatever it was */
	serial__update_irq(s);
	pthread_mutex_unlock(&d->lock);
	return 0;
}
