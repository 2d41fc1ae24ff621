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
#include "../../snapshot/overlay.h"
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
 * Open, check and lock the image @path into the backing *@bk: a raw image,
 * or an overlay when the file starts with its magic (*@ovl set; the
 * overlay opens its base).  Returns 0, or -errno with the reason in @why
 * (not naming @path; *@ovl tells whether to call it an overlay).
 */
static int dev__blk_open(const char *path, bool read_only,
			 struct virtio_blk_backing *bk, bool *ovl, char *why,
			 size_t whylen)
{
	struct overlay_info info;
	struct overlay *o;
	struct stat st;
	int fd, ret;

	*ovl = false;
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
	if (!overlay__is_overlay(fd)) {
		*bk = virtio_blk__raw_backing(fd, (uint64_t)st.st_size);
		return 0;
	}
	*ovl = true;
	ret = overlay__open_fd(fd, path, read_only, &o, why, whylen);
	if (ret) {
		close(fd);
		return ret;
	}
	overlay__info(o, &info);
	if (info.size < 512) {
		snprintf(why, whylen, "disk smaller than one 512-byte sector");
		overlay__close(o);
		return -EINVAL;
	}
	if (info.dropped)
		log_warn("overlay %s: %llu clusters past the end of the file "
			 "dropped, read from base %s again (writes lost before "
			 "a flush, or a truncated copy)",
			 path, (unsigned long long)info.dropped,
			 info.base_path);
	log_info("overlay %s: over %s, %llu of %llu clusters of %u KiB "
		 "written",
		 path, info.base_path, (unsigned long long)info.allocated,
		 (unsigned long long)info.clusters, info.cluster_bytes >> 10);
	*bk = virtio_blk__overlay_backing(o);
	return 0;
}

int dev_blk__add(const struct dev_env *env, const char *id,
		 const struct drive_config *d)
{
	struct virtio_blk_backing bk;
	struct devmgr_dev *md;
	struct virtio_blk *blk;
	char why[256];
	bool ovl;
	int ret;

	ret = dev__blk_open(d->path, d->read_only, &bk, &ovl, why, sizeof(why));
	if (ret < 0) {
		log_error("%s %s: %s", ovl ? "overlay" : "drive", d->path, why);
		return ret;
	}
	md = devmgr__add(env->dm, id, &dev_class_virtio_blk);
	if (!md) {
		bk.ops->destroy(bk.opaque);
		return -ENOSPC;
	}
	blk = virtio_blk__create_backed(env->mem, md->irq, &bk, d->read_only,
					d->id ? d->id : id);
	if (!blk) {
		log_error("drive %s: cannot create the device", d->path);
		bk.ops->destroy(bk.opaque);
		return -ENOMEM;
	}
	log_info("drive %s: virtio-blk '%s' at 0x%llx, irq %d%s%s", d->path, id,
		 (unsigned long long)md->mmio_base, md->gsi,
		 ovl ? ", overlay" : "", d->read_only ? ", read-only" : "");
	return devmgr__attach_virtio(env->dm, md, blk);
}

int dev_blk__update(struct devmgr *dm, const char *id, const char *path,
		    bool read_only, char *why, size_t whylen)
{
	struct devmgr_dev *md = devmgr__find(dm, id);
	struct virtio_blk_backing bk;
	char reason[256];
	bool ovl;
	int ret;

	if (!md || md->cls != &dev_class_virtio_blk || !md->dev) {
		snprintf(why, whylen, "no drive '%s'", id);
		return -ENOENT;
	}
	ret = dev__blk_open(path, read_only, &bk, &ovl, reason, sizeof(reason));
	if (ret < 0) {
		snprintf(why, whylen, "%s%s", ovl ? "overlay: " : "", reason);
		return ret;
	}
	virtio_blk__replace_backing(md->dev, &bk);
	log_info("drive '%s' now on %s%s", id, path, ovl ? " (overlay)" : "");
	return 0;
}
