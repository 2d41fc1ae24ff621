// SPDX-License-Identifier: Apache-2.0
/* A drive's raw image or overlay as a block backing (see blk_backing.h). */
#include "blk_backing.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "../../devices/fileio.h"
#include "../../snapshot/overlay.h"

/* The raw backing's opaque is its fd. */
static int raw__fd(void *opaque)
{
	return (int)(intptr_t)opaque;
}

static int raw__read(void *opaque, void *buf, uint64_t len, uint64_t off)
{
	return fileio__pread_all(raw__fd(opaque), buf, len, off);
}

/*
 * Would writing @len bytes of @buf at @off make the image start with the
 * overlay magic?  The bytes before and after the write's come from the
 * file (zeroes if it cannot say).
 */
static bool raw__makes_overlay(int fd, const uint8_t *buf, uint64_t len,
			       uint64_t off)
{
	uint8_t head[OVERLAY_MAGIC_BYTES];
	uint64_t i;

	if (off >= sizeof(head))
		return false;
	if ((off || len < sizeof(head)) &&
	    fileio__pread_all(fd, head, sizeof(head), 0))
		memset(head, 0, sizeof(head));
	for (i = off; i < sizeof(head) && i - off < len; i++)
		head[i] = buf[i - off];
	return !memcmp(head, OVERLAY_MAGIC, sizeof(head));
}

static int raw__write(void *opaque, const void *buf, uint64_t len, uint64_t off)
{
	if (raw__makes_overlay(raw__fd(opaque), buf, len, off))
		return -EPERM;
	return fileio__pwrite_all(raw__fd(opaque), buf, len, off);
}

static int raw__flush(void *opaque)
{
	int r;

	do
		r = fdatasync(raw__fd(opaque));
	while (r < 0 && errno == EINTR);
	return r ? -errno : 0;
}

static void raw__destroy(void *opaque)
{
	close(raw__fd(opaque));
}

static const struct virtio_blk_backing_ops raw_backing_ops = {
	.read = raw__read,
	.write = raw__write,
	.flush = raw__flush,
	.destroy = raw__destroy,
};

struct virtio_blk_backing blk_backing__raw(int fd, uint64_t size_bytes)
{
	return (struct virtio_blk_backing){
		.ops = &raw_backing_ops,
		.opaque = (void *)(intptr_t)fd,
		.size_bytes = size_bytes,
	};
}

static int ovl__read(void *opaque, void *buf, uint64_t len, uint64_t off)
{
	return overlay__read(opaque, buf, len, off);
}

static int ovl__write(void *opaque, const void *buf, uint64_t len, uint64_t off)
{
	return overlay__write(opaque, buf, len, off);
}

static int ovl__flush(void *opaque)
{
	return overlay__flush(opaque);
}

static void ovl__destroy(void *opaque)
{
	overlay__close(opaque);
}

static const struct virtio_blk_backing_ops overlay_backing_ops = {
	.read = ovl__read,
	.write = ovl__write,
	.flush = ovl__flush,
	.destroy = ovl__destroy,
};

struct virtio_blk_backing blk_backing__overlay(struct overlay *o)
{
	return (struct virtio_blk_backing){
		.ops = &overlay_backing_ops,
		.opaque = o,
		.size_bytes = overlay__size(o),
	};
}
