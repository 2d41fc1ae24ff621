// SPDX-License-Identifier: Apache-2.0
/* A drive as a virtio-blk device (see dev.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "../../devices/virtio_blk.h"
#include "../../snapshot/overlay.h"
#include "../event.h"
#include "../log.h"
#include "../timer.h"
#include "blk_backing.h"
#include "dev.h"

/*
 * A drive: the device model and the host side of its rate limiter, a
 * timerfd on the event loop that wakes the device when the limiter lets
 * the waiting request go.  The timerfd exists from the start, limiter or
 * not, so that PATCH can add one later without creating anything (the
 * seccomp filters of a running VM may forbid it).
 */
struct dev_blk {
	struct virtio_blk *blk;
	struct event_loop *el;
	int timer_fd;
	bool on_loop; /* timer_fd is watched (not held for a pause) */
};

static struct virtio_mmio *dev__blk_transport(void *dev)
{
	return virtio_blk__transport(((struct dev_blk *)dev)->blk);
}

static void dev__blk_stats(void *dev, struct dev_stats *out)
{
	virtio_blk__stats(((struct dev_blk *)dev)->blk, out);
}

/* The limiter's wake-up on the event thread: serve the queue again. */
static void dev__blk_on_timer(void *opaque, int fd)
{
	struct dev_blk *d = opaque;

	if (event__drain(fd) <= 0)
		return; /* re-armed meanwhile, or spurious */
	virtio_blk__resume(d->blk);
}

/*
 * A pause: the timer is not watched, so no wake-up touches guest memory;
 * one that expired meanwhile stays readable and fires on release.
 */
static int dev__blk_hold(void *dev, bool hold)
{
	struct dev_blk *d = dev;
	int ret;

	if (hold && d->on_loop) {
		event__del(d->el, d->timer_fd);
		d->on_loop = false;
	} else if (!hold && !d->on_loop) {
		ret = event__add(d->el, d->timer_fd, dev__blk_on_timer, d);
		if (ret)
			return ret;
		d->on_loop = true;
	}
	return 0;
}

/* After the event loop stopped, or with the device held (dev.h). */
static void dev__blk_destroy(void *dev)
{
	struct dev_blk *d = dev;

	virtio_blk__destroy(d->blk);
	if (d->timer_fd >= 0)
		close(d->timer_fd);
	free(d);
}

const struct devmgr_class dev_class_virtio_blk = {
	.name = "virtio-blk",
	.virtio = true,
	.transport = dev__blk_transport,
	.stats = dev__blk_stats,
	.metrics_key = "block_%s",
	.hold = dev__blk_hold,
	.destroy = dev__blk_destroy,
};

static uint64_t dev__blk_now_ns(void *opaque)
{
	(void)opaque;
	return timer__now_ns();
}

/*
 * Arm the timer @ns from now; called under the device lock, on any
 * thread: timerfd_settime alone, nothing of the event loop's.
 */
static void dev__blk_wake(void *opaque, uint64_t ns)
{
	struct dev_blk *d = opaque;
	int ret = timer__arm(d->timer_fd, ns);

	if (ret)
		log_error("drive rate limiter: timerfd_settime: %s",
			  strerror(-ret));
}

static const struct virtio_blk_throttle_ops dev_blk_throttle = {
	.now_ns = dev__blk_now_ns,
	.wake = dev__blk_wake,
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
	/*
	 * An empty file is a drive of no sectors, as in Firecracker: Kata
	 * configures a pool of them and PATCHes real images in later.
	 */
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) ||
	    (st.st_size > 0 && st.st_size < 512)) {
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
		*bk = blk_backing__raw(fd, (uint64_t)st.st_size);
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
	*bk = blk_backing__overlay(o);
	return 0;
}

/*
 * The drive @blk (owned from now on, destroyed on failure) with its
 * limiter's timer, as the device of @md.  Returns 0 or a negative errno
 * (logged).
 */
static int dev__blk_attach(const struct dev_env *env, struct devmgr_dev *md,
			   struct virtio_blk *blk,
			   const struct rate_limiter_config *rl)
{
	struct dev_blk *d = calloc(1, sizeof(*d));
	int ret;

	if (!d) {
		virtio_blk__destroy(blk);
		return -ENOMEM;
	}
	d->blk = blk;
	d->el = env->el;
	d->timer_fd =
		timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	if (d->timer_fd < 0) {
		ret = -errno;
		log_error("drive %s: timerfd: %s", md->id, strerror(errno));
		dev__blk_destroy(d);
		return ret;
	}
	virtio_blk__set_throttle(blk, &dev_blk_throttle, d);
	virtio_blk__set_limiter(blk, rl);
	ret = devmgr__attach_virtio(env->dm, md, d);
	if (ret)
		return ret; /* @d is @md's now: devmgr__destroy() frees it */
	ret = event__add(env->el, d->timer_fd, dev__blk_on_timer, d);
	if (ret) {
		log_error("drive %s: event loop: %s", md->id, strerror(-ret));
		return ret;
	}
	d->on_loop = true;
	return 0;
}

int dev_blk__open(const struct drive_config *d, struct dev_blk_image *img)
{
	char why[256];
	int ret;

	memset(img, 0, sizeof(*img));
	ret = dev__blk_open(d->path, d->read_only, &img->bk, &img->overlay, why,
			    sizeof(why));
	if (ret < 0) {
		log_error("%s %s: %s", img->overlay ? "overlay" : "drive",
			  d->path, why);
		memset(img, 0, sizeof(*img));
	}
	return ret;
}

void dev_blk__close(struct dev_blk_image *img)
{
	if (img->bk.ops)
		img->bk.ops->destroy(img->bk.opaque);
	memset(img, 0, sizeof(*img));
}

int dev_blk__add(const struct dev_env *env, const char *id,
		 const struct drive_config *d, struct dev_blk_image *img)
{
	const struct rate_limiter_config *rl = &d->rate_limiter;
	struct virtio_blk_backing bk = img->bk;
	bool ovl = img->overlay;
	struct devmgr_dev *md;
	struct virtio_blk *blk;

	/* The backing is ours from here, whatever happens. */
	memset(img, 0, sizeof(*img));
	if (!bk.ops) {
		log_error("drive %s: its image is not open", d->path);
		return -EBADF;
	}
	md = devmgr__add(env->dm, id, &dev_class_virtio_blk);
	if (!md) {
		bk.ops->destroy(bk.opaque);
		return -ENOSPC;
	}
	blk = virtio_blk__create(env->mem, md->irq, &bk, d->read_only,
				 d->id ? d->id : id);
	if (!blk) {
		log_error("drive %s: cannot create the device", d->path);
		bk.ops->destroy(bk.opaque);
		return -ENOMEM;
	}
	log_info("drive %s: virtio-blk '%s' at 0x%llx, irq %d%s%s%s", d->path,
		 id, (unsigned long long)md->mmio_base, md->gsi,
		 ovl ? ", overlay" : "", d->read_only ? ", read-only" : "",
		 rl->bandwidth.size || rl->ops.size ? ", rate-limited" : "");
	return dev__blk_attach(env, md, blk, rl);
}

/* Drive @id's device, or NULL with @why filled. */
static struct dev_blk *dev__blk_find(struct devmgr *dm, const char *id,
				     char *why, size_t whylen)
{
	struct devmgr_dev *md = devmgr__find(dm, id);

	if (!md || md->cls != &dev_class_virtio_blk || !md->dev) {
		snprintf(why, whylen, "no drive '%s'", id);
		return NULL;
	}
	return md->dev;
}

int dev_blk__update(struct devmgr *dm, const char *id, const char *path,
		    bool read_only, char *why, size_t whylen)
{
	struct dev_blk *d = dev__blk_find(dm, id, why, whylen);
	struct virtio_blk_backing bk;
	char reason[256];
	bool ovl;
	int ret;

	if (!d)
		return -ENOENT;
	ret = dev__blk_open(path, read_only, &bk, &ovl, reason, sizeof(reason));
	if (ret < 0) {
		snprintf(why, whylen, "%s%s", ovl ? "overlay: " : "", reason);
		return ret;
	}
	virtio_blk__set_backing(d->blk, &bk);
	log_info("drive '%s' now on %s%s", id, path, ovl ? " (overlay)" : "");
	return 0;
}

int dev_blk__set_limiter(struct devmgr *dm, const char *id,
			 const struct rate_limiter_config *rl, char *why,
			 size_t whylen)
{
	struct dev_blk *d = dev__blk_find(dm, id, why, whylen);
	int ret;

	if (!d)
		return -ENOENT;
	ret = virtio_blk__set_limiter(d->blk, rl);
	if (ret) {
		snprintf(why, whylen, "the drive cannot take a limiter");
		return ret;
	}
	log_info("drive '%s': rate limiter bandwidth %llu B / %llu ms, ops "
		 "%llu / %llu ms",
		 id, (unsigned long long)rl->bandwidth.size,
		 (unsigned long long)rl->bandwidth.refill_time_ms,
		 (unsigned long long)rl->ops.size,
		 (unsigned long long)rl->ops.refill_time_ms);
	return 0;
}
