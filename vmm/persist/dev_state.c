// SPDX-License-Identifier: Apache-2.0
/*
 * Every device's section (see parts.h): the manager's view (class, the
 * virtio-mmio transport) here, the device's own state through its class's
 * save/restore ops, which know the device and not the file.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "../../devices/virtio_mmio.h"
#include "../devmgr.h"
#include "../log.h"
#include "parts.h"

#define DEV_STATE_VERSION 1

/* "dev." and the longest device id make a section name. */
_Static_assert(4 + DEVMGR_ID_MAX <= SNAP_NAME_MAX, "device section names");

static void dev_state__name(char *out, size_t n, const char *id)
{
	snprintf(out, n, "dev.%s", id);
}

static void dev_state__save_transport(struct virtio_mmio *t, struct snap_buf *b)
{
	struct virtio_mmio_state s;
	unsigned int i;

	virtio_mmio__get_state(t, &s);
	snap_buf__u32(b, s.status);
	snap_buf__u32(b, s.device_features_sel);
	snap_buf__u32(b, s.driver_features_sel);
	snap_buf__u64(b, s.driver_features);
	snap_buf__u32(b, s.queue_sel);
	snap_buf__u32(b, s.interrupt_status);
	snap_buf__u32(b, s.config_generation);
	snap_buf__u32(b, s.nr_queues);
	for (i = 0; i < s.nr_queues; i++) {
		const struct virtq *q = &s.vq[i];

		snap_buf__u16(b, q->size);
		snap_buf__u8(b, q->ready);
		snap_buf__u64(b, q->desc_gpa);
		snap_buf__u64(b, q->avail_gpa);
		snap_buf__u64(b, q->used_gpa);
		snap_buf__u16(b, q->last_avail);
		snap_buf__u16(b, q->used_idx);
		snap_buf__u16(b, q->signalled_used);
		snap_buf__u8(b, q->signalled_valid);
	}
}

static int dev_state__restore_transport(struct virtio_mmio *t,
					struct snap_cur *c)
{
	struct virtio_mmio_state s;
	unsigned int i;

	memset(&s, 0, sizeof(s));
	s.status = snap_cur__u32(c);
	s.device_features_sel = snap_cur__u32(c);
	s.driver_features_sel = snap_cur__u32(c);
	s.driver_features = snap_cur__u64(c);
	s.queue_sel = snap_cur__u32(c);
	s.interrupt_status = snap_cur__u32(c);
	s.config_generation = snap_cur__u32(c);
	s.nr_queues = snap_cur__u32(c);
	if (s.nr_queues > VIRTIO_MMIO_MAX_QUEUES) {
		snap_cur__fail(c);
		return -EINVAL;
	}
	for (i = 0; i < s.nr_queues; i++) {
		struct virtq *q = &s.vq[i];

		q->size = snap_cur__u16(c);
		q->ready = snap_cur__u8(c) != 0;
		q->desc_gpa = snap_cur__u64(c);
		q->avail_gpa = snap_cur__u64(c);
		q->used_gpa = snap_cur__u64(c);
		q->last_avail = snap_cur__u16(c);
		q->used_idx = snap_cur__u16(c);
		q->signalled_used = snap_cur__u16(c);
		q->signalled_valid = snap_cur__u8(c) != 0;
	}
	if (c->err)
		return -EINVAL;
	return virtio_mmio__set_state(t, &s);
}

int dev_state__save(struct devmgr *dm, struct snap_buf *b)
{
	char name[SNAP_NAME_MAX + 1];
	unsigned int i;

	for (i = 0; i < dm->nr; i++) {
		struct devmgr_dev *d = &dm->dev[i];

		if (!d->dev)
			continue;
		dev_state__name(name, sizeof(name), d->id);
		snap_buf__section(b, name, DEV_STATE_VERSION);
		snap_buf__str(b, d->cls->name);
		snap_buf__u8(b, d->cls->virtio);
		if (d->cls->virtio)
			dev_state__save_transport(d->cls->transport(d->dev), b);
		snap_buf__u32(b, d->cls->version);
		if (d->cls->save)
			d->cls->save(d->dev, b);
	}
	return b->err;
}

static int dev_state__restore_one(struct devmgr_dev *d, struct snap_cur *c)
{
	char cls[64];
	uint32_t version;
	int ret;

	snap_cur__str(c, cls, sizeof(cls));
	if (c->err || strcmp(cls, d->cls->name)) {
		log_error("snapshot: device %s is a %s here, the snapshot has "
			  "a %s",
			  d->id, d->cls->name,
			  c->err ? "malformed section" : cls);
		return -EINVAL;
	}
	if ((snap_cur__u8(c) != 0) != d->cls->virtio) {
		log_error("snapshot: device %s: transport mismatch", d->id);
		return -EINVAL;
	}
	if (d->cls->virtio) {
		ret = dev_state__restore_transport(d->cls->transport(d->dev),
						   c);
		if (ret) {
			log_error("snapshot: device %s: its virtio-mmio "
				  "transport state is refused (features, "
				  "status or a queue out of range)",
				  d->id);
			return ret;
		}
	}
	version = snap_cur__u32(c);
	if (version != d->cls->version) {
		log_error("snapshot: device %s: state version %u, this ember "
			  "reads %u",
			  d->id, version, d->cls->version);
		return -EINVAL;
	}
	c->version = version;
	ret = d->cls->restore ? d->cls->restore(d->dev, c) : 0;
	if (!ret && snap_cur__end(c))
		ret = -EINVAL;
	if (ret)
		log_error("snapshot: device %s: its state is refused", d->id);
	return ret;
}

int dev_state__restore(struct devmgr *dm, const struct snap_state *s)
{
	char name[SNAP_NAME_MAX + 1];
	struct snap_cur c;
	size_t iter = 0;
	unsigned int i;
	int ret;

	/* A device in the file that this VM lacks is refused too. */
	while (snap_state__next(s, &iter, name, &c) == 1) {
		if (strncmp(name, "dev.", 4))
			continue;
		if (!devmgr__find(dm, name + 4)) {
			log_error("snapshot: device %s is not in this VM's "
				  "configuration",
				  name + 4);
			return -EINVAL;
		}
	}
	for (i = 0; i < dm->nr; i++) {
		struct devmgr_dev *d = &dm->dev[i];

		if (!d->dev)
			continue;
		dev_state__name(name, sizeof(name), d->id);
		if (snap_state__find(s, name, &c)) {
			log_error("snapshot: no state for device %s", d->id);
			return -EINVAL;
		}
		if (c.version != DEV_STATE_VERSION) {
			log_error("snapshot: device %s: section version %u, "
				  "this ember reads %u",
				  d->id, c.version, DEV_STATE_VERSION);
			return -EINVAL;
		}
		ret = dev_state__restore_one(d, &c);
		if (ret)
			return ret;
	}
	for (i = 0; i < dm->nr; i++) {
		struct devmgr_dev *d = &dm->dev[i];

		if (!d->dev)
			continue;
		/*
		 * Each queue once first (what the driver posted while the old
		 * process held it), then the class's own step: vsock's reset
		 * must be the last word until the driver handled it.
		 */
		if (d->cls->virtio)
			virtio_mmio__kick_all(d->cls->transport(d->dev));
		if (d->cls->restored)
			d->cls->restored(d->dev);
	}
	return 0;
}
