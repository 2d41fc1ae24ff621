// SPDX-License-Identifier: Apache-2.0
/* A drive as a virtio-blk device (see dev.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../devices/virtio_blk.h"
#include "../log.h"
#include "dev.h"

static struct virtio_mmio *dev__blk_transport(void *dev)
{
	return virtio_blk__transport(dev);
}

static void dev__blk_stats(void *dev, struct dev_stats *out)
{
	virtio_blk__stats(dev, out);
}

static void dev__blk_destroy(void *dev)
{
	virtio_blk__destroy(dev);
}

const struct devmgr_class dev_class_virtio_blk = {
	.name = "virtio-blk",
	.virtio = true,
	.transport = dev__blk_transport,
	.stats = dev__blk_stats,
	.metrics_key = "block_%s",
	.destroy = dev__blk_destroy,
};

/*
 * Open, check and lock the image @path: the fd and its size, or -errno
 * with the reason in @why.
 */
static int dev__blk_open(const char *path, bool read_only, uint64_t *size,
			 char *why, size_t whylen)
{
	struct stat st;
	int fd, ret;

	fd = open(path,
		  (read_only ? O_RDONLY : O_RDWR) | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0) {
		ret = -errno;
		snprintf(why, whylen, "%s", strerror(errno));
		return ret;
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size < 512) {
		snprintf(why, whylen, "%s",
			 S_ISREG(st.st_mode) ?
				 "smaller than one 512-byte sector" :
				 "not a regular file");
		close(fd);
		return -EINVAL;
	}
	/* Two writers on one image corrupt it: refuse, as other VMMs do. */
	if (flock(fd, (read_only ? LOCK_SH : LOCK_EX) | LOCK_NB) < 0) {
		snprintf(why, whylen, "in use by another process (%s)",
			 strerror(errno));
		close(fd);
		return -EBUSY;
	}
	*size = (uint64_t)st.st_size;
	return fd;
}

int dev_blk__add(const struct dev_env *env, const char *id,
		 const struct drive_config *d)
{
	struct devmgr_dev *md;
	struct virtio_blk *blk;
	uint64_t size;
	char why[128];
	int fd;

	fd = dev__blk_open(d->path, d->read_only, &size, why, sizeof(why));
	if (fd < 0) {
		log_error("drive %s: %s", d->path, why);
		return fd;
	}
	md = devmgr__add(env->dm, id, &dev_class_virtio_blk);
	if (!md) {
		close(fd);
		return -ENOSPC;
	}
	blk = virtio_blk__create(env->mem, md->irq, fd, size, d->read_only,
				 d->id ? d->id : id);
	if (!blk) {
		log_error("drive %s: cannot create the device", d->path);
		close(fd);
		return -ENOMEM;
	}
	log_info("drive %s: virtio-blk '%s' at 0x%llx, irq %d%s", d->path, id,
		 (unsigned long long)md->mmio_base, md->gsi,
		 d->read_only ? ", read-only" : "");
	return devmgr__attach_virtio(env->dm, md, blk);
}

int dev_blk__update(struct devmgr *dm, const char *id, const char *path,
		    bool read_only, char *why, size_t whylen)
{
	struct devmgr_dev *md = devmgr__find(dm, id);
	uint64_t size;
	int fd;

	if (!md || md->cls != &dev_class_virtio_blk || !md->dev) {
		snprintf(why, whylen, "no drive '%s'", id);
		return -ENOENT;
	}
	fd = dev__blk_open(path, read_only, &size, why, whylen);
	if (fd < 0)
		return fd;
	virtio_blk__set_backing(md->dev, fd, size);
	log_info("drive '%s' now on %s", id, path);
	return 0;
}
