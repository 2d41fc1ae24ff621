// SPDX-License-Identifier: Apache-2.0
/* PIO/MMIO dispatch (see bus.h). */
#include "bus.h"

#include <errno.h>
#include <string.h>

int bus__register(struct bus *b, uint64_t base, uint64_t len,
		  struct device *dev)
{
	unsigned int i, pos;

	if (!len || base + len < base || !dev)
		return -EINVAL;
	if (b->nr == BUS_MAX_RANGES)
		return -ENOSPC;
	for (pos = 0; pos < b->nr && b->range[pos].base < base; pos++)
		;
	if (pos > 0 && b->range[pos - 1].base + b->range[pos - 1].len > base)
		return -EEXIST;
	if (pos < b->nr && base + len > b->range[pos].base)
		return -EEXIST;
	for (i = b->nr; i > pos; i--)
		b->range[i] = b->range[i - 1];
	b->range[pos] =
		(struct bus_range){ .base = base, .len = len, .dev = dev };
	b->nr++;
	return 0;
}

static const struct bus_range *bus__find(const struct bus *b, uint64_t addr)
{
	unsigned int lo = 0, hi = b->nr;

	while (lo < hi) {
		unsigned int mid = lo + (hi - lo) / 2;
		const struct bus_range *r = &b->range[mid];

		if (addr < r->base)
			hi = mid;
		else if (addr - r->base >= r->len)
			lo = mid + 1;
		else
			return r;
	}
	return NULL;
}

int bus__access(const struct bus *b, uint64_t addr, void *data, uint32_t len,
		bool is_write)
{
	const struct bus_range *r = bus__find(b, addr);
	struct device *d;

	if (!r || len > r->len - (addr - r->base)) {
		if (!is_write)
			memset(data, 0xff, len);
		return -ENOENT;
	}
	d = r->dev;
	pthread_mutex_lock(&d->lock);
	if (is_write) {
		if (d->ops->write)
			d->ops->write(d, addr - r->base, data, len);
	} else {
		memset(data, 0, len);
		if (d->ops->read)
			d->ops->read(d, addr - r->base, data, len);
	}
	pthread_mutex_unlock(&d->lock);
	return 0;
}
