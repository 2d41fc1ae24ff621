// SPDX-License-Identifier: Apache-2.0
/* The virtio-mmio transport, version 2 (see virtio_mmio.h). */
#include "virtio_mmio.h"

#include <endian.h>
#include <errno.h>
#include <string.h>

/* Register offsets (virtio 1.2, 4.2.2, table "MMIO Device Register Layout"). */
#define REG_MAGIC_VALUE		0x000
#define REG_VERSION		0x004
#define REG_DEVICE_ID		0x008
#define REG_VENDOR_ID		0x00c
#define REG_DEVICE_FEATURES	0x010
#define REG_DEVICE_FEATURES_SEL 0x014
#define REG_DRIVER_FEATURES	0x020
#define REG_DRIVER_FEATURES_SEL 0x024
#define REG_QUEUE_SEL		0x030
#define REG_QUEUE_NUM_MAX	0x034
#define REG_QUEUE_NUM		0x038
#define REG_QUEUE_READY		0x044
#define REG_QUEUE_NOTIFY	VIRTIO_MMIO_QUEUE_NOTIFY
#define REG_INTERRUPT_STATUS	0x060
#define REG_INTERRUPT_ACK	0x064
#define REG_STATUS		0x070
#define REG_QUEUE_DESC_LOW	0x080
#define REG_QUEUE_DESC_HIGH	0x084
#define REG_QUEUE_DRIVER_LOW	0x090
#define REG_QUEUE_DRIVER_HIGH	0x094
#define REG_QUEUE_DEVICE_LOW	0x0a0
#define REG_QUEUE_DEVICE_HIGH	0x0a4
#define REG_SHM_SEL		0x0ac
#define REG_SHM_LEN_LOW		0x0b0
#define REG_SHM_LEN_HIGH	0x0b4
#define REG_SHM_BASE_LOW	0x0b8
#define REG_SHM_BASE_HIGH	0x0bc
#define REG_CONFIG_GENERATION	0x0fc

static struct virtio_mmio *to_virtio_mmio(struct device *d)
{
	/* dev is the first member (see virtio_mmio.h). */
	return (struct virtio_mmio *)d;
}

static uint64_t virtio_mmio__device_features(const struct virtio_mmio *t)
{
	uint64_t f = t->ops->features ? t->ops->features(t->opaque) : 0;

	return f | (1ULL << VIRTIO_F_VERSION_1) | (1ULL << VIRTIO_F_EVENT_IDX) |
	       (1ULL << VIRTIO_F_INDIRECT_DESC);
}

/* Change interrupt status bits; the line follows (status != 0). */
static void virtio_mmio__irq_update(struct virtio_mmio *t, uint32_t set,
				    uint32_t clear)
{
	int was = t->interrupt_status != 0;
	int now;

	t->interrupt_status = (t->interrupt_status | set) & ~clear;
	now = t->interrupt_status != 0;
	if (was != now && t->irq.set)
		t->irq.set(t->irq.opaque, t->irq.gsi, now);
}

/* The queue the driver selected, or NULL if it does not exist. */
static struct virtq *virtio_mmio__selected(struct virtio_mmio *t)
{
	if (t->queue_sel >= t->ops->nr_queues)
		return NULL;
	return &t->vq[t->queue_sel];
}

bool virtio_mmio__live(const struct virtio_mmio *t, unsigned int idx)
{
	uint32_t need = VIRTIO_STATUS_DRIVER_OK | VIRTIO_STATUS_FEATURES_OK;

	if (idx >= t->ops->nr_queues || !t->vq[idx].ready)
		return false;
	if ((t->status & need) != need)
		return false;
	return !(t->status &
		 (VIRTIO_STATUS_NEEDS_RESET | VIRTIO_STATUS_FAILED));
}

/* virtio_mmio__notify() without the lock (the caller holds it). */
static void virtio_mmio__notify_locked(struct virtio_mmio *t, unsigned int idx)
{
	if (virtio_mmio__live(t, idx) && t->ops->notify)
		t->ops->notify(t->opaque, t, idx);
}

void virtio_mmio__config_copy(const void *cfg, size_t size, uint64_t off,
			      void *data, uint32_t len)
{
	if (off >= size)
		return;
	memcpy(data, (const uint8_t *)cfg + off,
	       len < size - off ? len : size - off);
}

/* Device reset (2.1.2, 4.2.3.1): back to the state after init. */
static void virtio_mmio__reset(struct virtio_mmio *t)
{
	unsigned int i;

	if (t->ops->reset)
		t->ops->reset(t->opaque);
	for (i = 0; i < VIRTIO_MMIO_MAX_QUEUES; i++)
		virtq__reset(&t->vq[i]);
	t->status = 0;
	t->device_features_sel = 0;
	t->driver_features_sel = 0;
	t->driver_features = 0;
	t->queue_sel = 0;
	virtio_mmio__irq_update(t, 0, ~0u);
}

static void virtio_mmio__write_status(struct virtio_mmio *t, uint32_t val)
{
	uint32_t old = t->status & ~VIRTIO_STATUS_NEEDS_RESET;
	uint64_t dev;

	if (val == 0) {
		virtio_mmio__reset(t);
		return;
	}
	/* NEEDS_RESET is the device's bit; drivers echo it back. */
	val &= ~VIRTIO_STATUS_NEEDS_RESET;
	/* Only a reset may clear bits (2.1.1: the driver MUST NOT). */
	if (old & ~val)
		return;
	if ((val & VIRTIO_STATUS_FEATURES_OK) &&
	    !(old & VIRTIO_STATUS_FEATURES_OK)) {
		dev = virtio_mmio__device_features(t);
		/*
		 * 3.1.1 step 6: leaving FEATURES_OK clear tells the driver
		 * the subset was not accepted.  Version 2 of the transport
		 * has no legacy interface, so VERSION_1 is required.
		 */
		if ((t->driver_features & ~dev) ||
		    !(t->driver_features & (1ULL << VIRTIO_F_VERSION_1)))
			val &= ~VIRTIO_STATUS_FEATURES_OK;
	}
	t->status = val | (t->status & VIRTIO_STATUS_NEEDS_RESET);
}

static void virtio_mmio__queue_ready(struct virtio_mmio *t, struct virtq *q,
				     uint32_t val)
{
	if (!val) {
		q->ready = false;
		return;
	}
	if (q->ready)
		return;
	q->event_idx = virtio_mmio__feature(t, VIRTIO_F_EVENT_IDX);
	if (virtq__valid(q, t->mem)) {
		virtio_mmio__needs_reset(t);
		return;
	}
	q->ready = true;
}

/* Replace the low or high half of a 64-bit address. */
static void set_half(uint64_t *v, uint32_t val, bool high)
{
	if (high)
		*v = (*v & 0xffffffffULL) | ((uint64_t)val << 32);
	else
		*v = (*v & ~0xffffffffULL) | val;
}

static uint32_t virtio_mmio__read_reg(struct virtio_mmio *t, uint64_t off)
{
	struct virtq *q = virtio_mmio__selected(t);

	switch (off) {
	case REG_MAGIC_VALUE:
		return VIRTIO_MMIO_MAGIC;
	case REG_VERSION:
		return VIRTIO_MMIO_VERSION;
	case REG_DEVICE_ID:
		return t->ops->device_id;
	case REG_VENDOR_ID:
		return VIRTIO_MMIO_VENDOR;
	case REG_DEVICE_FEATURES:
		if (t->device_features_sel > 1)
			return 0;
		return (uint32_t)(virtio_mmio__device_features(t) >>
				  (32 * t->device_features_sel));
	case REG_QUEUE_NUM_MAX:
		return q ? VIRTQ_MAX_SIZE : 0;
	case REG_QUEUE_READY:
		return q ? q->ready : 0;
	case REG_INTERRUPT_STATUS:
		return t->interrupt_status;
	case REG_STATUS:
		return t->status;
	case REG_SHM_LEN_LOW:
	case REG_SHM_LEN_HIGH:
	case REG_SHM_BASE_LOW:
	case REG_SHM_BASE_HIGH:
		/* No shared memory regions: length (and base) -1 (4.2.2). */
		return 0xffffffff;
	case REG_CONFIG_GENERATION:
		return t->config_generation;
	default:
		/* Write-only and reserved registers read as 0. */
		return 0;
	}
}

static void virtio_mmio__write_reg(struct virtio_mmio *t, uint64_t off,
				   uint32_t val)
{
	struct virtq *q = virtio_mmio__selected(t);
	/* A queue's layout is fixed while it is enabled (4.2.2). */
	struct virtq *setup = q && !q->ready ? q : NULL;

	switch (off) {
	case REG_DEVICE_FEATURES_SEL:
		t->device_features_sel = val;
		break;
	case REG_DRIVER_FEATURES:
		if ((t->status & VIRTIO_STATUS_FEATURES_OK) ||
		    t->driver_features_sel > 1)
			break;
		set_half(&t->driver_features, val, t->driver_features_sel);
		break;
	case REG_DRIVER_FEATURES_SEL:
		t->driver_features_sel = val;
		break;
	case REG_QUEUE_SEL:
		t->queue_sel = val;
		break;
	case REG_QUEUE_NUM:
		/* Too big for the u16 field: keep it invalid, not wrapped. */
		if (setup)
			setup->size = val <= VIRTQ_MAX_SIZE ? (uint16_t)val : 0;
		break;
	case REG_QUEUE_READY:
		if (q)
			virtio_mmio__queue_ready(t, q, val);
		break;
	case REG_QUEUE_NOTIFY:
		/* Without VIRTIO_F_NOTIFICATION_DATA the value is the index. */
		virtio_mmio__notify_locked(t, val);
		break;
	case REG_INTERRUPT_ACK:
		virtio_mmio__irq_update(t, 0, val);
		break;
	case REG_STATUS:
		virtio_mmio__write_status(t, val);
		break;
	case REG_QUEUE_DESC_LOW:
	case REG_QUEUE_DESC_HIGH:
		if (setup)
			set_half(&setup->desc_gpa, val,
				 off == REG_QUEUE_DESC_HIGH);
		break;
	case REG_QUEUE_DRIVER_LOW:
	case REG_QUEUE_DRIVER_HIGH:
		if (setup)
			set_half(&setup->avail_gpa, val,
				 off == REG_QUEUE_DRIVER_HIGH);
		break;
	case REG_QUEUE_DEVICE_LOW:
	case REG_QUEUE_DEVICE_HIGH:
		if (setup)
			set_half(&setup->used_gpa, val,
				 off == REG_QUEUE_DEVICE_HIGH);
		break;
	default:
		/* Read-only, reserved, SHMSel: dropped. */
		break;
	}
}

static void virtio_mmio__read(struct device *d, uint64_t off, void *data,
			      uint32_t len)
{
	struct virtio_mmio *t = to_virtio_mmio(d);
	uint32_t v;

	memset(data, 0, len);
	if (off >= VIRTIO_MMIO_CONFIG) {
		if (t->ops->config_read)
			t->ops->config_read(t->opaque, off - VIRTIO_MMIO_CONFIG,
					    data, len);
		return;
	}
	/* 4.2.2.2: control registers take 32-bit aligned accesses only. */
	if (len != 4 || (off & 3))
		return;
	v = htole32(virtio_mmio__read_reg(t, off));
	memcpy(data, &v, sizeof(v));
}

static void virtio_mmio__write(struct device *d, uint64_t off, const void *data,
			       uint32_t len)
{
	struct virtio_mmio *t = to_virtio_mmio(d);
	uint32_t v;

	if (off >= VIRTIO_MMIO_CONFIG) {
		if (t->ops->config_write)
			t->ops->config_write(
				t->opaque, off - VIRTIO_MMIO_CONFIG, data, len);
		return;
	}
	if (len != 4 || (off & 3))
		return;
	memcpy(&v, data, sizeof(v));
	virtio_mmio__write_reg(t, off, le32toh(v));
}

/*
 * No .destroy: the transport is embedded in its device model, which
 * calls virtio_mmio__destroy() from its own destroy function.
 */
static const struct device_ops virtio_mmio_ops = {
	.name = "virtio-mmio",
	.read = virtio_mmio__read,
	.write = virtio_mmio__write,
};

int virtio_mmio__init(struct virtio_mmio *t, const struct virtio_dev_ops *ops,
		      void *opaque, const struct guest_mem *m,
		      struct irq_line irq)
{
	int err;

	if (!t || !ops || !m || !ops->notify || ops->nr_queues < 1 ||
	    ops->nr_queues > VIRTIO_MMIO_MAX_QUEUES)
		return -EINVAL;
	memset(t, 0, sizeof(*t));
	t->dev.ops = &virtio_mmio_ops;
	t->ops = ops;
	t->opaque = opaque;
	t->mem = m;
	t->irq = irq;
	err = pthread_mutex_init(&t->dev.lock, NULL);
	if (err)
		return -err;
	return 0;
}

void virtio_mmio__destroy(struct virtio_mmio *t)
{
	if (!t)
		return;
	pthread_mutex_destroy(&t->dev.lock);
}

void virtio_mmio__notify(struct virtio_mmio *t, unsigned int idx)
{
	pthread_mutex_lock(&t->dev.lock);
	virtio_mmio__notify_locked(t, idx);
	pthread_mutex_unlock(&t->dev.lock);
}

void virtio_mmio__used(struct virtio_mmio *t, unsigned int idx)
{
	if (idx >= t->ops->nr_queues)
		return;
	if (virtq__needs_interrupt(&t->vq[idx], t->mem))
		virtio_mmio__irq_update(t, VIRTIO_MMIO_INT_VRING, 0);
}

void virtio_mmio__needs_reset(struct virtio_mmio *t)
{
	if (t->status & VIRTIO_STATUS_NEEDS_RESET)
		return;
	t->status |= VIRTIO_STATUS_NEEDS_RESET;
	virtio_mmio__irq_update(t, VIRTIO_MMIO_INT_CONFIG, 0);
}

void virtio_mmio__config_changed(struct virtio_mmio *t)
{
	t->config_generation++;
	virtio_mmio__irq_update(t, VIRTIO_MMIO_INT_CONFIG, 0);
}

bool virtio_mmio__feature(const struct virtio_mmio *t, unsigned int bit)
{
	if (bit >= 64 || !(t->status & VIRTIO_STATUS_FEATURES_OK))
		return false;
	return (t->driver_features >> bit) & 1;
}

void virtio_mmio__get_state(struct virtio_mmio *t, struct virtio_mmio_state *s)
{
	memset(s, 0, sizeof(*s));
	pthread_mutex_lock(&t->dev.lock);
	s->status = t->status;
	s->device_features_sel = t->device_features_sel;
	s->driver_features_sel = t->driver_features_sel;
	s->driver_features = t->driver_features;
	s->queue_sel = t->queue_sel;
	s->interrupt_status = t->interrupt_status;
	s->config_generation = t->config_generation;
	s->nr_queues = t->ops->nr_queues;
	memcpy(s->vq, t->vq, sizeof(s->vq));
	pthread_mutex_unlock(&t->dev.lock);
}

static int virtio_mmio__check_state(struct virtio_mmio *t,
				    const struct virtio_mmio_state *s)
{
	const uint32_t known = VIRTIO_STATUS_ACKNOWLEDGE |
			       VIRTIO_STATUS_DRIVER | VIRTIO_STATUS_DRIVER_OK |
			       VIRTIO_STATUS_FEATURES_OK |
			       VIRTIO_STATUS_NEEDS_RESET | VIRTIO_STATUS_FAILED;
	unsigned int i;

	if (s->nr_queues != t->ops->nr_queues || (s->status & ~known) ||
	    (s->driver_features & ~virtio_mmio__device_features(t)) ||
	    (s->interrupt_status &
	     ~(uint32_t)(VIRTIO_MMIO_INT_VRING | VIRTIO_MMIO_INT_CONFIG)))
		return -EINVAL;
	for (i = 0; i < VIRTIO_MMIO_MAX_QUEUES; i++) {
		const struct virtq *q = &s->vq[i];

		if (i >= s->nr_queues) {
			if (q->ready || q->size)
				return -EINVAL;
			continue;
		}
		if (q->size &&
		    (q->size > VIRTQ_MAX_SIZE || (q->size & (q->size - 1))))
			return -EINVAL;
		if (q->ready && virtq__valid(q, t->mem))
			return -EINVAL;
	}
	return 0;
}

int virtio_mmio__set_state(struct virtio_mmio *t,
			   const struct virtio_mmio_state *s)
{
	unsigned int i;

	if (virtio_mmio__check_state(t, s))
		return -EINVAL;
	pthread_mutex_lock(&t->dev.lock);
	t->status = s->status;
	t->device_features_sel = s->device_features_sel;
	t->driver_features_sel = s->driver_features_sel;
	t->driver_features = s->driver_features;
	t->queue_sel = s->queue_sel;
	t->config_generation = s->config_generation;
	memcpy(t->vq, s->vq, sizeof(t->vq));
	for (i = 0; i < VIRTIO_MMIO_MAX_QUEUES; i++)
		t->vq[i].event_idx =
			t->vq[i].ready &&
			virtio_mmio__feature(t, VIRTIO_F_EVENT_IDX);
	/* Drive the line to the saved level whatever it was. */
	t->interrupt_status = 0;
	if (t->irq.set)
		t->irq.set(t->irq.opaque, t->irq.gsi, 0);
	virtio_mmio__irq_update(t, s->interrupt_status, 0);
	pthread_mutex_unlock(&t->dev.lock);
	return 0;
}

void virtio_mmio__kick_all(struct virtio_mmio *t)
{
	unsigned int i;

	pthread_mutex_lock(&t->dev.lock);
	for (i = 0; i < t->ops->nr_queues; i++)
		virtio_mmio__notify_locked(t, i);
	pthread_mutex_unlock(&t->dev.lock);
}
