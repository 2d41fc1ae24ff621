// SPDX-License-Identifier: Apache-2.0
/* Boot-timer and exit-status devices (see guest_signal.h). */
#include "guest_signal.h"

#include <stdlib.h>
#include <string.h>

#include "../guest-init/protocol.h"

struct guest_signal {
	struct device dev;
	struct device_events ev;
};

static void boot_timer__write(struct device *d, uint64_t off, const void *data,
			      uint32_t len)
{
	struct guest_signal *g = (struct guest_signal *)d;

	if (off == 0 && len == 1 &&
	    *(const uint8_t *)data == EMBER_BOOT_TIMER_MAGIC && g->ev.notify)
		g->ev.notify(g->ev.opaque, DEVICE_EVENT_BOOT_TIMER, 0);
}

static void exit_status__write(struct device *d, uint64_t off, const void *data,
			       uint32_t len)
{
	struct guest_signal *g = (struct guest_signal *)d;
	uint32_t v;

	if (off != 0 || len != 4 || !g->ev.notify)
		return;
	memcpy(&v, data, 4);
	g->ev.notify(g->ev.opaque, DEVICE_EVENT_EXIT_STATUS, v);
}

static const struct device_ops boot_timer_ops = {
	.name = "boot-timer",
	.write = boot_timer__write,
};

static const struct device_ops exit_status_ops = {
	.name = "exit-status",
	.write = exit_status__write,
};

static struct device *guest_signal__create(const struct device_ops *ops,
					   struct device_events ev)
{
	struct guest_signal *g = calloc(1, sizeof(*g));

	if (!g)
		return NULL;
	g->dev.ops = ops;
	pthread_mutex_init(&g->dev.lock, NULL);
	g->ev = ev;
	return &g->dev;
}

struct device *guest_signal__boot_timer(struct device_events ev)
{
	return guest_signal__create(&boot_timer_ops, ev);
}

struct device *guest_signal__exit_status(struct device_events ev)
{
	return guest_signal__create(&exit_status_ops, ev);
}

void guest_signal__destroy(struct device *d)
{
	if (!d)
		return;
	pthread_mutex_destroy(&d->lock);
	free(d);
}
