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

static void dev__blk_destroy(void *dev)
{
	virtio_blk__destroy(dev);
}

const struct devmgr_class dev_class_virtio_blk = {
	.name = "virtio-blk",
	.virtio = true,
	.transport = dev__blk_transport,
	.destroy = dev__blk_destroy,
};

int dev_blk__add(const struct dev_env *env, const char *id,
		 const struct drive_config *d)
{
	struct devmgr_dev *md;
	struct virtio_blk *blk;
	struct stat st;
	int fd, ret;

	fd = open(d->path,
		  (d->read_only ? O_RDONLY : O_RDWR) | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0) {
		ret = -errno;
		log_error("drive %s: %s", d->path, strerror(errno));
		return ret;
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size < 512) {
		log_error("drive %s: %s", d->path,
			  S_ISREG(st.st_mode) ?
				  "smaller than one 512-byte sector" :
				  "not a regular file");
		close(fd);
		return -EINVAL;
	}
	/* Two writers on one image corrupt it: refuse, as other VMMs do. */
	if (flock(fd, (d->read_only ? LOCK_SH : LOCK_EX) | LOCK_NB) < 0) {
		log_error("drive %s: in use by another process (%s)", d->path,
			  strerror(errno));
		close(fd);
		return -EBUSY;
	}
	md = devmgr__add(env->dm, id, &dev_class_virtio_blk);
	if (!md) {
		close(fd);
		return -ENOSPC;
	}
	blk = virtio_blk__create(env->mem, md->irq, fd, (uint64_t)st.st_size,
				 d->read_only, d->id ? d->id : id);
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
