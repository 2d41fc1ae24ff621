/* SPDX-License-Identifier: Apache-2.0 */
/*
 * virtio block device (virtio 1.2 spec, 5.2 "Block Device") on a backing:
 * struct virtio_blk_backing_ops, bytes at byte offsets.  The device knows
 * no file format: vmm/dev/blk_backing.h makes a raw image or a
 * copy-on-write overlay into a backing.  One request queue, served
 * synchronously on the thread that delivers the notification.  Carried
 * by the virtio-mmio transport (virtio_mmio.h).  An optional rate limiter
 * (rate_limiter.h) holds requests back in the ring; its clock and timer
 * are the host side's (struct virtio_blk_throttle_ops).
 */
#ifndef EMBER_DEVICES_VIRTIO_BLK_H
#define EMBER_DEVICES_VIRTIO_BLK_H

#include <stdbool.h>
#include <stdint.h>

#include "rate_limiter.h"
#include "virtio_mmio.h"

#define VIRTIO_ID_BLOCK 2

/* Feature bits (5.2.3). */
#define VIRTIO_BLK_F_SEG_MAX  2
#define VIRTIO_BLK_F_RO	      5
#define VIRTIO_BLK_F_BLK_SIZE 6
#define VIRTIO_BLK_F_FLUSH    9

/* Request types and status values (5.2.6). */
#define VIRTIO_BLK_T_IN	    0
#define VIRTIO_BLK_T_OUT    1
#define VIRTIO_BLK_T_FLUSH  4
#define VIRTIO_BLK_T_GET_ID 8
#define VIRTIO_BLK_S_OK	    0
#define VIRTIO_BLK_S_IOERR  1
#define VIRTIO_BLK_S_UNSUPP 2

#define VIRTIO_BLK_SECTOR_SIZE 512 /* unit of capacity and of sector */
#define VIRTIO_BLK_ID_BYTES    20 /* GET_ID answer, NUL-padded */

/*
 * struct virtio_blk_config layout (5.2.4), byte offsets in config space:
 * capacity le64, size_max le32, seg_max le32, geometry (le16 cylinders,
 * u8 heads, u8 sectors), blk_size le32.
 */
#define VIRTIO_BLK_CFG_CAPACITY 0
#define VIRTIO_BLK_CFG_SIZE_MAX 8
#define VIRTIO_BLK_CFG_SEG_MAX	12
#define VIRTIO_BLK_CFG_GEOMETRY 16
#define VIRTIO_BLK_CFG_BLK_SIZE 20
#define VIRTIO_BLK_CFG_BYTES	24

struct virtio_blk;

/*
 * Where a drive's bytes live.  Each op gets the backing's @opaque; offsets
 * and lengths are bytes, always inside [0, size_bytes) (the device checks
 * them first), and calls are serialised under the device lock.  Each
 * returns 0 or a negative errno (the guest sees VIRTIO_BLK_S_IOERR).
 *   read     @len bytes at @off into @buf
 *   write    @len bytes of @buf at @off; 0 means they survive a kill -9
 *            of the process
 *   flush    make completed writes survive a host crash
 *   destroy  release @opaque (close files, free); the backing is gone
 */
struct virtio_blk_backing_ops {
	int (*read)(void *opaque, void *buf, uint64_t len, uint64_t off);
	int (*write)(void *opaque, const void *buf, uint64_t len, uint64_t off);
	int (*flush)(void *opaque);
	void (*destroy)(void *opaque);
};

/* A backing: its ops, their argument, and the disk's size in bytes. */
struct virtio_blk_backing {
	const struct virtio_blk_backing_ops *ops;
	void *opaque;
	uint64_t size_bytes;
};

/*
 * virtio_blk__create() - a block device on guest memory @m (not
 * owned; must outlive the device) raising interrupt @irq, on the backing
 * @bk (capacity @bk->size_bytes / 512 sectors, a partial last sector is
 * not visible).  @read_only offers VIRTIO_BLK_F_RO and fails every write
 * request.  @serial (NULL for none) is the GET_ID answer, its first 20
 * bytes.  On success the device owns the backing (virtio_blk__destroy()
 * destroys it); on failure the caller still does.  Returns the device,
 * or NULL for a NULL @m, @bk or @bk->ops, or without memory.
 */
struct virtio_blk *virtio_blk__create(const struct guest_mem *m,
				      struct irq_line irq,
				      const struct virtio_blk_backing *bk,
				      bool read_only, const char *serial);

/*
 * virtio_blk__transport() - the device's virtio-mmio transport, owned by
 * @blk: its .dev goes on the MMIO bus, its queue 0 notification (an
 * ioeventfd on VIRTIO_MMIO_QUEUE_NOTIFY) to virtio_mmio__notify().
 */
struct virtio_mmio *virtio_blk__transport(struct virtio_blk *blk);

/*
 * virtio_blk__set_backing() - the drive now reads and writes the backing
 * @bk (owned from now on; the old backing is destroyed under the device
 * lock, so no request is half-served on it): the capacity follows and the
 * guest gets a configuration-change interrupt (virtio 1.2, 5.2.4: it
 * re-reads the capacity).  Returns 0, or -EINVAL for a NULL @bk or
 * @bk->ops (nothing changes; the caller still owns @bk).
 */
int virtio_blk__set_backing(struct virtio_blk *blk,
			    const struct virtio_blk_backing *bk);

/*
 * virtio_blk__stats() - requests, bytes, errors and the times the rate
 * limiter held a request back so far.
 */
void virtio_blk__stats(struct virtio_blk *blk, struct dev_stats *out);

/*
 * The host side of a drive's rate limiter: the device reads no clock and
 * arms no timer itself.  Both ops get the @opaque given with them, run
 * with the device lock held on the thread serving the queue, and must not
 * call into the device.
 *   now_ns  CLOCK_MONOTONIC now, in nanoseconds
 *   wake    the limiter refused the next request, which stays in the
 *           ring: call virtio_blk__resume() in @ns nanoseconds (>= 1),
 *           on the thread that delivers notifications and not while the
 *           device is held for a pause (then after it); a later call
 *           replaces an earlier one
 */
struct virtio_blk_throttle_ops {
	uint64_t (*now_ns)(void *opaque);
	void (*wake)(void *opaque, uint64_t ns);
};

/*
 * virtio_blk__set_throttle() - the host side (@ops, not copied, and
 * @opaque, both outliving the device) that virtio_blk__set_limiter()
 * needs.  Set it once, before the guest runs.
 */
void virtio_blk__set_throttle(struct virtio_blk *blk,
			      const struct virtio_blk_throttle_ops *ops,
			      void *opaque);

/*
 * virtio_blk__set_limiter() - limit the drive as @cfg says (NULL or all
 * buckets off: no limit, and no cost per request), at creation or at run
 * time (PATCH /drives: rate_limiter__update() keeps what makes sense).
 * Every request costs one operation, and a read or write its data bytes
 * (virtio 1.2, 5.2.6: the bytes between the header and the status).  A
 * refused request is not taken from the avail ring: later ones wait
 * behind it, and ops->wake() is asked for; a request waiting now is
 * looked at again soon under the new limits.  Takes the device lock.
 * Returns 0, or -EINVAL for a limit without virtio_blk__set_throttle()
 * (nothing changes).
 */
int virtio_blk__set_limiter(struct virtio_blk *blk,
			    const struct rate_limiter_config *cfg);

/*
 * virtio_blk__resume() - the wake-up ops->wake() asked for: serve the
 * queue again from the request that waits (it may be refused again, and
 * another wake-up asked for).  Takes the device lock.
 */
void virtio_blk__resume(struct virtio_blk *blk);

/*
 * virtio_blk__destroy() - destroy the backing (close the image) and free
 * a device from virtio_blk__create() (NULL is a no-op).  It must be off
 * the bus and idle.  Writes are not flushed here: the guest flushes
 * (FLUSH).
 */
void virtio_blk__destroy(struct virtio_blk *blk);

#endif /* EMBER_DEVICES_VIRTIO_BLK_H */
