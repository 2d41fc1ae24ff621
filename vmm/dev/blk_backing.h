/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Where a drive's bytes live, as the block device's backing ops
 * (devices/virtio_blk.h): a raw image file, or a copy-on-write overlay
 * (snapshot/overlay.h).  The device knows neither: the file formats stay
 * here, on the VMM's side (DESIGN: a device never knows the file format).
 * vmm/dev/blk.c opens a drive's image and picks one of these.
 */
#ifndef EMBER_VMM_DEV_BLK_BACKING_H
#define EMBER_VMM_DEV_BLK_BACKING_H

#include <stdint.h>

#include "../../devices/virtio_blk.h"

struct overlay;

/*
 * blk_backing__raw() - a backing on the open raw image @fd of @size_bytes
 * (the caller's fstat): pread/pwrite/fdatasync, destroy closes @fd.  A
 * write that would make the image start with OVERLAY_MAGIC fails with
 * -EPERM, so that a guest cannot turn its raw disk into an overlay file
 * (naming a host file as its base) for the next VM that opens the image
 * and probes its format.
 */
struct virtio_blk_backing blk_backing__raw(int fd, uint64_t size_bytes);

/*
 * blk_backing__overlay() - a backing on the open overlay @o: its virtual
 * size; destroy closes @o.
 */
struct virtio_blk_backing blk_backing__overlay(struct overlay *o);

#endif /* EMBER_VMM_DEV_BLK_BACKING_H */
