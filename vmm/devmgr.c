// SPDX-License-Identifier: Apache-2.0
/* The device manager (see devmgr.h). */
#include "devmgr.h"

#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "../boot/layout.h"
#include "event.h"
#include "irq.h"
#include "kvm.h"
#include "log.h"

void devmgr__init(struct devmgr *dm, const struct kvm_vm *kvm,
		  struct event_loop *el)
{
	memset(dm, 0, sizeof(*dm));
	dm->kvm = kvm;
	dm->el = el;
	dm->pio.name = "pio";
	dm->mmio.name = "mmio";
}

struct devmgr_dev *devmgr__find(struct devmgr *dm, const char *id)
{
	unsigned int i;

	for (i = 0; i < dm->nr; i++)
		if (!strcmp(dm->dev[i].id, id))
			return &dm->dev[i];
	return NULL;
}

int devmgr__ctrl_alt_del(struct devmgr *dm)
{
	unsigned int i;

	for (i = 0; i < dm->nr; i++) {
		struct devmgr_dev *d = &dm->dev[i];

		if (d->dev && d->cls->ctrl_alt_del) {
			d->cls->ctrl_alt_del(d->dev);
			return 0;
		}
	}
	return -ENODEV;
}

/* The next virtio-mmio slot for @d: its range, GSI and irqfd line. */
static int devmgr__virtio_slot(struct devmgr *dm, struct devmgr_dev *d)
{
	if (dm->nr_virtio == LAYOUT_VIRTIO_MMIO_SLOTS ||
	    LAYOUT_IRQ_VIRTIO_FIRST + dm->nr_virtio >= LAYOUT_IOAPIC_PINS) {
		log_error("%s: no virtio-mmio slot left", d->id);
		return -ENOSPC;
	}
	d->mmio_base = LAYOUT_VIRTIO_MMIO_GPA +
		       dm->nr_virtio * LAYOUT_VIRTIO_MMIO_SIZE;
	d->mmio_len = LAYOUT_VIRTIO_MMIO_SIZE;
	d->gsi = (int)(LAYOUT_IRQ_VIRTIO_FIRST + dm->nr_virtio);
	d->irqfd = irq__irqfd(dm->kvm->vm_fd, (unsigned int)d->gsi);
	if (d->irqfd < 0)
		return d->irqfd;
	d->irq = irq__irqfd_line(&d->irqfd, (unsigned int)d->gsi);
	dm->nr_virtio++;
	return 0;
}

struct devmgr_dev *devmgr__add(struct devmgr *dm, const char *id,
			       const struct devmgr_class *cls)
{
	struct devmgr_dev *d;
	size_t len = strlen(id);
	unsigned int q;

	if (!len || len > DEVMGR_ID_MAX) {
		log_error("device id '%s': 1 to %d bytes", id, DEVMGR_ID_MAX);
		return NULL;
	}
	if (devmgr__find(dm, id)) {
		log_error("device id '%s' is taken", id);
		return NULL;
	}
	if (dm->nr == DEVMGR_MAX_DEVICES) {
		log_error("%s: more than %d devices", id, DEVMGR_MAX_DEVICES);
		return NULL;
	}
	d = &dm->dev[dm->nr];
	memset(d, 0, sizeof(*d));
	memcpy(d->id, id, len + 1);
	d->cls = cls;
	d->gsi = -1;
	d->irqfd = -1;
	for (q = 0; q < VIRTIO_MMIO_MAX_QUEUES; q++)
		d->notify[q].fd = -1;
	if (cls->virtio && devmgr__virtio_slot(dm, d))
		return NULL;
	dm->nr++;
	return d;
}

int devmgr__map(struct devmgr *dm, struct devmgr_dev *d, void *dev,
		struct device *regs, bool pio, uint64_t base, uint64_t len)
{
	int ret = bus__register(pio ? &dm->pio : &dm->mmio, base, len, regs);

	d->dev = dev;
	if (ret)
		log_error("%s: %s range 0x%llx+0x%llx: %s", d->id,
			  pio ? "port" : "MMIO", (unsigned long long)base,
			  (unsigned long long)len, strerror(-ret));
	return ret;
}

static void devmgr__on_notify(void *opaque, int fd)
{
	struct devmgr_notify *n = opaque;

	if (event__drain(fd) <= 0)
		return;
	virtio_mmio__notify(n->t, n->queue);
}

int devmgr__attach_virtio(struct devmgr *dm, struct devmgr_dev *d, void *dev)
{
	struct virtio_mmio *t = d->cls->transport(dev);
	unsigned int q;
	int ret;

	ret = devmgr__map(dm, d, dev, &t->dev, false, d->mmio_base,
			  d->mmio_len);
	if (ret)
		return ret;
	for (q = 0; q < t->ops->nr_queues; q++) {
		struct devmgr_notify *n = &d->notify[q];

		n->t = t;
		n->queue = q;
		n->fd = kvm__ioeventfd(
			dm->kvm, d->mmio_base + VIRTIO_MMIO_QUEUE_NOTIFY, 4, q);
		if (n->fd < 0)
			return n->fd;
		ret = event__add(dm->el, n->fd, devmgr__on_notify, n);
		if (ret) {
			log_error("%s: event loop: %s", d->id, strerror(-ret));
			return ret;
		}
	}
	return 0;
}

int devmgr__hold(struct devmgr *dm, bool hold)
{
	unsigned int i, q;
	int ret = 0, r;

	for (i = 0; i < dm->nr; i++) {
		struct devmgr_dev *d = &dm->dev[i];

		for (q = 0; q < VIRTIO_MMIO_MAX_QUEUES; q++) {
			struct devmgr_notify *n = &d->notify[q];

			if (n->fd < 0)
				continue;
			if (hold) {
				event__del(dm->el, n->fd);
				continue;
			}
			r = event__add(dm->el, n->fd, devmgr__on_notify, n);
			ret = ret ? ret : r;
		}
		if (d->dev && d->cls->hold) {
			r = d->cls->hold(d->dev, hold);
			ret = ret ? ret : r;
		}
	}
	return ret;
}

void devmgr__destroy(struct devmgr *dm)
{
	unsigned int i, q;

	/* Last added first: a device may lean on one added before it. */
	for (i = dm->nr; i-- > 0;) {
		struct devmgr_dev *d = &dm->dev[i];

		if (d->dev && d->cls->destroy)
			d->cls->destroy(d->dev);
		d->dev = NULL;
		for (q = 0; q < VIRTIO_MMIO_MAX_QUEUES; q++) {
			if (d->notify[q].fd >= 0)
				close(d->notify[q].fd);
			d->notify[q].fd = -1;
		}
		if (d->irqfd >= 0)
			close(d->irqfd);
		d->irqfd = -1;
	}
	dm->nr = dm->nr_virtio = 0;
}
