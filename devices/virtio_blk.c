// SPDX-License-Identifier: Apache-2.0
/* virtio block device (see virtio_blk.h). */
#include "virtio_blk.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "le.h"
#include "rate_limiter.h"

#define BLK_HDR_BYTES 16 /* struct virtio_blk_req: type, reserved, sector */
#define BLK_BOUNCE    (64 * 1024) /* bytes per pread/pwrite */

struct virtio_blk {
	struct virtio_mmio t;
	struct virtio_blk_backing bk; /* owned */
	uint64_t sectors; /* capacity in 512-byte sectors */
	bool read_only;
	uint8_t cfg[VIRTIO_BLK_CFG_BYTES]; /* config space, little-endian */
	char id[VIRTIO_BLK_ID_BYTES]; /* GET_ID answer, NUL-padded */
	struct dev_stats stats;
	/* The rate limiter and its host side (virtio_blk__set_limiter()). */
	struct rate_limiter rl;
	const struct virtio_blk_throttle_ops *th;
	void *th_opaque;
	bool throttled; /* a request waits in the ring for th->wake */
	struct virtq_chain chain; /* ~6 KiB: not on the event thread's stack */
	uint8_t bounce[BLK_BOUNCE];
};

/* Do @len bytes from @sector lie on the disk?  (No overflow possible.) */
static bool blk__in_range(const struct virtio_blk *b, uint64_t sector,
			  uint64_t len)
{
	if (sector > b->sectors)
		return false;
	return len <= (b->sectors - sector) * VIRTIO_BLK_SECTOR_SIZE;
}

/* T_IN: disk -> the @len writable bytes before the status byte. */
static uint8_t blk__in(struct virtio_blk *b, const struct virtq_chain *c,
		       uint64_t sector, uint64_t len, uint64_t *written)
{
	const struct guest_mem *m = b->t.mem;
	uint64_t off = sector * VIRTIO_BLK_SECTOR_SIZE;
	uint64_t done, chunk, n;

	if (len % VIRTIO_BLK_SECTOR_SIZE || !blk__in_range(b, sector, len))
		return VIRTIO_BLK_S_IOERR;
	for (done = 0; done < len; done += chunk) {
		chunk = len - done < BLK_BOUNCE ? len - done : BLK_BOUNCE;
		if (b->bk.ops->read(b->bk.opaque, b->bounce, chunk, off + done))
			return VIRTIO_BLK_S_IOERR;
		n = virtq__write(c, m, done, b->bounce, chunk);
		*written += n;
		if (n != chunk)
			return VIRTIO_BLK_S_IOERR;
	}
	return VIRTIO_BLK_S_OK;
}

/* T_OUT: the @len readable bytes after the header -> disk. */
static uint8_t blk__out(struct virtio_blk *b, const struct virtq_chain *c,
			uint64_t sector, uint64_t len)
{
	const struct guest_mem *m = b->t.mem;
	uint64_t off = sector * VIRTIO_BLK_SECTOR_SIZE;
	uint64_t done, chunk;

	if (b->read_only || len % VIRTIO_BLK_SECTOR_SIZE ||
	    !blk__in_range(b, sector, len))
		return VIRTIO_BLK_S_IOERR;
	for (done = 0; done < len; done += chunk) {
		chunk = len - done < BLK_BOUNCE ? len - done : BLK_BOUNCE;
		if (virtq__read(c, m, BLK_HDR_BYTES + done, b->bounce, chunk) !=
		    chunk)
			return VIRTIO_BLK_S_IOERR;
		if (b->bk.ops->write(b->bk.opaque, b->bounce, chunk,
				     off + done))
			return VIRTIO_BLK_S_IOERR;
	}
	return VIRTIO_BLK_S_OK;
}

static uint8_t blk__flush(struct virtio_blk *b)
{
	return b->bk.ops->flush(b->bk.opaque) ? VIRTIO_BLK_S_IOERR :
						VIRTIO_BLK_S_OK;
}

/*
 * Serve one request (5.2.6): header in the readable bytes, data, then
 * the status in the LAST writable byte.  Returns the used length: the
 * bytes written into the chain, data and status.
 */
static uint32_t blk__request(struct virtio_blk *b, const struct virtq_chain *c)
{
	const struct guest_mem *m = b->t.mem;
	uint8_t hdr[BLK_HDR_BYTES];
	uint64_t data_in, written = 0, sector;
	uint32_t type = UINT32_MAX;
	uint8_t status;

	if (!c->in_bytes)
		return 0; /* nowhere to put the status */
	data_in = c->in_bytes - 1;
	if (c->out_bytes < BLK_HDR_BYTES ||
	    virtq__read(c, m, 0, hdr, sizeof(hdr)) != sizeof(hdr)) {
		status = VIRTIO_BLK_S_IOERR;
		goto out;
	}
	type = le__get32(hdr);
	sector = le__get64(hdr + 8);

	switch (type) {
	case VIRTIO_BLK_T_IN:
		status = blk__in(b, c, sector, data_in, &written);
		break;
	case VIRTIO_BLK_T_OUT:
		status = blk__out(b, c, sector, c->out_bytes - BLK_HDR_BYTES);
		break;
	case VIRTIO_BLK_T_FLUSH:
		status = blk__flush(b);
		break;
	case VIRTIO_BLK_T_GET_ID:
		written = virtq__write(c, m, 0, b->id,
				       data_in < sizeof(b->id) ? data_in :
								 sizeof(b->id));
		status = VIRTIO_BLK_S_OK;
		break;
	default:
		status = VIRTIO_BLK_S_UNSUPP;
		break;
	}
out:
	b->stats.requests++;
	if (status == VIRTIO_BLK_S_OK && type == VIRTIO_BLK_T_IN)
		b->stats.read_bytes += written;
	else if (status == VIRTIO_BLK_S_OK && type == VIRTIO_BLK_T_OUT)
		b->stats.write_bytes += c->out_bytes - BLK_HDR_BYTES;
	else if (status != VIRTIO_BLK_S_OK)
		b->stats.errors++;
	if (virtq__write(c, m, data_in, &status, 1) == 1)
		written++;
	/* Segments may alias, so the sum can pass 4 GiB: clamp. */
	return written > UINT32_MAX ? UINT32_MAX : (uint32_t)written;
}

/*
 * What request @c costs the rate limiter: one operation, and for reads
 * and writes their data bytes (Firecracker's rule).  A header that cannot
 * be read costs the operation alone (the request fails anyway).
 */
static uint64_t blk__cost_bytes(const struct virtio_blk *b,
				const struct virtq_chain *c)
{
	uint8_t hdr[BLK_HDR_BYTES];

	if (!c->in_bytes || c->out_bytes < BLK_HDR_BYTES ||
	    virtq__read(c, b->t.mem, 0, hdr, sizeof(hdr)) != sizeof(hdr))
		return 0;
	switch (le__get32(hdr)) {
	case VIRTIO_BLK_T_IN:
		return c->in_bytes - 1;
	case VIRTIO_BLK_T_OUT:
		return c->out_bytes - BLK_HDR_BYTES;
	default:
		return 0;
	}
}

/*
 * May request @c go now?  If the limiter refuses, the queue stops: the
 * host side is asked to wake the device when it could go.
 */
static bool blk__admit(struct virtio_blk *b, const struct virtq_chain *c)
{
	uint64_t bytes = blk__cost_bytes(b, c);
	uint64_t now = b->th->now_ns(b->th_opaque);

	if (rate_limiter__consume(&b->rl, bytes, 1, now))
		return true;
	b->throttled = true;
	b->stats.throttled++;
	b->th->wake(b->th_opaque, rate_limiter__wait_ns(&b->rl, bytes, 1, now));
	return false;
}

static void virtio_blk__notify(void *opaque, struct virtio_mmio *t,
			       unsigned int idx)
{
	struct virtio_blk *b = opaque;
	struct virtq *q = &t->vq[idx];
	struct virtq_chain *c = &b->chain;
	bool pushed = false, limited = rate_limiter__on(&b->rl);
	uint16_t start = q->last_avail;
	int r;

	if (b->throttled)
		return; /* virtio_blk__resume() comes */
	while ((r = virtq__pop(q, t->mem, c)) > 0) {
		if (limited && !blk__admit(b, c)) {
			/*
			 * Back into the ring, nothing pushed (Firecracker's
			 * undo_pop()): it is taken again first, in order.
			 * An avail_event already moved past it only asks
			 * for a notification that changes nothing.
			 */
			q->last_avail = start;
			break;
		}
		if (virtq__push(q, t->mem, c->head, blk__request(b, c))) {
			r = -EFAULT;
			break;
		}
		pushed = true;
		start = q->last_avail;
	}
	if (r < 0)
		virtio_mmio__needs_reset(t);
	if (pushed)
		virtio_mmio__used(t, idx);
}

static uint64_t virtio_blk__features(void *opaque)
{
	const struct virtio_blk *b = opaque;
	uint64_t f = (1ULL << VIRTIO_BLK_F_SEG_MAX) |
		     (1ULL << VIRTIO_BLK_F_BLK_SIZE) |
		     (1ULL << VIRTIO_BLK_F_FLUSH);

	if (b->read_only)
		f |= 1ULL << VIRTIO_BLK_F_RO;
	return f;
}

/* Any offset and width inside struct virtio_blk_config; zeroes beyond. */
static void virtio_blk__config_read(void *opaque, uint64_t off, void *data,
				    uint32_t len)
{
	const struct virtio_blk *b = opaque;

	virtio_mmio__config_copy(b->cfg, sizeof(b->cfg), off, data, len);
}

/* Every field is read-only (writeback is not offered): drop writes. */
static void virtio_blk__config_write(void *opaque, uint64_t off,
				     const void *data, uint32_t len)
{
	(void)opaque;
	(void)off;
	(void)data;
	(void)len;
}

/*
 * Requests complete inside notify, none is in flight; a request held back
 * by the limiter is in the ring the driver just dropped.  A wake-up still
 * armed finds the device not live, or a new ring to serve.
 */
static void virtio_blk__reset(void *opaque)
{
	struct virtio_blk *b = opaque;

	b->throttled = false;
}

static const struct virtio_dev_ops virtio_blk_ops = {
	.name = "virtio-blk",
	.device_id = VIRTIO_ID_BLOCK,
	.nr_queues = 1,
	.features = virtio_blk__features,
	.config_read = virtio_blk__config_read,
	.config_write = virtio_blk__config_write,
	.notify = virtio_blk__notify,
	.reset = virtio_blk__reset,
};

/* --- the device ---------------------------------------------------------- */

struct virtio_blk *virtio_blk__create(const struct guest_mem *m,
				      struct irq_line irq,
				      const struct virtio_blk_backing *bk,
				      bool read_only, const char *serial)
{
	struct virtio_blk *b;

	if (!m || !bk || !bk->ops)
		return NULL;
	b = calloc(1, sizeof(*b));
	if (!b)
		return NULL;
	if (virtio_mmio__init(&b->t, &virtio_blk_ops, b, m, irq)) {
		free(b);
		return NULL;
	}
	b->bk = *bk;
	b->sectors = bk->size_bytes / VIRTIO_BLK_SECTOR_SIZE;
	b->read_only = read_only;
	if (serial)
		memcpy(b->id, serial, strnlen(serial, sizeof(b->id)));

	le__put64(b->cfg + VIRTIO_BLK_CFG_CAPACITY, b->sectors);
	/* size_max 0 (no SIZE_MAX), geometry 0 (no GEOMETRY). */
	le__put32(b->cfg + VIRTIO_BLK_CFG_SEG_MAX, VIRTQ_MAX_SIZE - 2);
	le__put32(b->cfg + VIRTIO_BLK_CFG_BLK_SIZE, VIRTIO_BLK_SECTOR_SIZE);
	return b;
}

struct virtio_mmio *virtio_blk__transport(struct virtio_blk *blk)
{
	return &blk->t;
}

int virtio_blk__set_backing(struct virtio_blk *blk,
			    const struct virtio_blk_backing *bk)
{
	if (!bk || !bk->ops)
		return -EINVAL;
	pthread_mutex_lock(&blk->t.dev.lock);
	blk->bk.ops->destroy(blk->bk.opaque);
	blk->bk = *bk;
	blk->sectors = bk->size_bytes / VIRTIO_BLK_SECTOR_SIZE;
	le__put64(blk->cfg + VIRTIO_BLK_CFG_CAPACITY, blk->sectors);
	virtio_mmio__config_changed(&blk->t);
	pthread_mutex_unlock(&blk->t.dev.lock);
	return 0;
}

void virtio_blk__stats(struct virtio_blk *blk, struct dev_stats *out)
{
	*out = blk->stats;
}

void virtio_blk__set_throttle(struct virtio_blk *blk,
			      const struct virtio_blk_throttle_ops *ops,
			      void *opaque)
{
	pthread_mutex_lock(&blk->t.dev.lock);
	blk->th = ops;
	blk->th_opaque = opaque;
	pthread_mutex_unlock(&blk->t.dev.lock);
}

int virtio_blk__set_limiter(struct virtio_blk *blk,
			    const struct rate_limiter_config *cfg)
{
	struct rate_limiter probe;
	int ret = 0;

	rate_limiter__init(&probe, cfg, 0);
	pthread_mutex_lock(&blk->t.dev.lock);
	if (!blk->th && rate_limiter__on(&probe)) {
		ret = -EINVAL;
	} else {
		rate_limiter__update(&blk->rl, cfg,
				     blk->th ? blk->th->now_ns(blk->th_opaque) :
					       0);
		/* A waiting request: let the new limits decide, soon. */
		if (blk->throttled)
			blk->th->wake(blk->th_opaque, 1);
	}
	pthread_mutex_unlock(&blk->t.dev.lock);
	return ret;
}

void virtio_blk__resume(struct virtio_blk *blk)
{
	pthread_mutex_lock(&blk->t.dev.lock);
	blk->throttled = false;
	pthread_mutex_unlock(&blk->t.dev.lock);
	virtio_mmio__notify(&blk->t, 0);
}

void virtio_blk__destroy(struct virtio_blk *blk)
{
	if (!blk)
		return;
	virtio_mmio__destroy(&blk->t);
	blk->bk.ops->destroy(blk->bk.opaque);
	free(blk);
}
