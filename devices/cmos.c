// SPDX-License-Identifier: Apache-2.0
/* CMOS RTC (see cmos.h). */
#include "cmos.h"

#include <stdlib.h>
#include <time.h>

#define RTC_SECONDS 0x00
#define RTC_MINUTES 0x02
#define RTC_HOURS   0x04
#define RTC_WEEKDAY 0x06
#define RTC_DAY	    0x07
#define RTC_MONTH   0x08
#define RTC_YEAR    0x09
#define RTC_REG_A   0x0a
#define RTC_REG_B   0x0b
#define RTC_REG_C   0x0c
#define RTC_REG_D   0x0d
#define RTC_CENTURY 0x32

struct cmos {
	struct device dev;
	uint8_t index;
};

static uint8_t bcd(int v)
{
	return (uint8_t)(((v / 10) << 4) | (v % 10));
}

static uint8_t cmos__reg(uint8_t index)
{
	struct tm tm;
	time_t now = time(NULL);

	gmtime_r(&now, &tm);
	switch (index) {
	case RTC_SECONDS:
		return bcd(tm.tm_sec);
	case RTC_MINUTES:
		return bcd(tm.tm_min);
	case RTC_HOURS:
		return bcd(tm.tm_hour);
	case RTC_WEEKDAY:
		return bcd(tm.tm_wday + 1);
	case RTC_DAY:
		return bcd(tm.tm_mday);
	case RTC_MONTH:
		return bcd(tm.tm_mon + 1);
	case RTC_YEAR:
		return bcd(tm.tm_year % 100);
	case RTC_CENTURY:
		return bcd((tm.tm_year + 1900) / 100);
	case RTC_REG_A:
		return 0x26; /* 32.768 kHz, 1024 Hz, UIP clear */
	case RTC_REG_B:
		return 0x02; /* 24-hour, BCD, no interrupts */
	case RTC_REG_D:
		return 0x80; /* valid RAM and time */
	default:
		return 0;
	}
}

static void cmos__read(struct device *d, uint64_t off, void *data, uint32_t len)
{
	struct cmos *c = (struct cmos *)d;

	if (off == 1 && len == 1)
		*(uint8_t *)data = cmos__reg(c->index);
}

static void cmos__write(struct device *d, uint64_t off, const void *data,
			uint32_t len)
{
	struct cmos *c = (struct cmos *)d;

	/* Bit 7 of the index is the NMI mask; the time is read-only. */
	if (off == 0 && len == 1)
		c->index = *(const uint8_t *)data & 0x7f;
}

static const struct device_ops cmos_ops = {
	.name = "cmos",
	.read = cmos__read,
	.write = cmos__write,
};

struct device *cmos__create(void)
{
	struct cmos *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->dev.ops = &cmos_ops;
	pthread_mutex_init(&c->dev.lock, NULL);
	return &c->dev;
}

void cmos__destroy(struct device *d)
{
	if (!d)
		return;
	pthread_mutex_destroy(&d->lock);
	free(d);
}

uint8_t cmos__get_index(struct device *d)
{
	struct cmos *c = (struct cmos *)d;
	uint8_t v;

	pthread_mutex_lock(&d->lock);
	v = c->index;
	pthread_mutex_unlock(&d->lock);
	return v;
}

void cmos__set_index(struct device *d, uint8_t index)
{
	struct cmos *c = (struct cmos *)d;

	pthread_mutex_lock(&d->lock);
	c->index = index & 0x7f;
	pthread_mutex_unlock(&d->lock);
}
