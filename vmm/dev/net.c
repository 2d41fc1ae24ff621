// SPDX-License-Identifier: Apache-2.0
/* A network interface as a virtio-net device over a tap (see dev.h). */
#include <errno.h>

#include "../../snapshot/state.h"
#include "../backends/tap.h"
#include "../log.h"
#include "dev.h"

static struct virtio_mmio *dev__net_transport(void *dev)
{
	return virtio_net__transport(tap__net(dev));
}

static void dev__net_stats(void *dev, struct dev_stats *out)
{
	struct virtio_net_stats s;

	virtio_net__stats(tap__net(dev), &s);
	*out = s.dev;
}

static int dev__net_hold(void *dev, bool hold)
{
	return tap__hold(dev, hold);
}

/* After the event loop was destroyed (tap.h). */
static void dev__net_destroy(void *dev)
{
	tap__destroy(dev);
}

/*
 * The device's own state: what it offered (the driver accepted from it,
 * so a restore offers it again) and its link.  Frames that waited for
 * guest buffers are not saved, as a wire would lose them.
 */
static void dev__net_save(void *dev, struct snap_buf *b)
{
	struct virtio_net_state s;

	virtio_net__get_state(tap__net(dev), &s);
	snap_buf__bytes(b, s.mac, sizeof(s.mac));
	snap_buf__u8(b, s.has_mac);
	snap_buf__u8(b, s.link_up);
	snap_buf__u64(b, s.offloads);
}

static int dev__net_restore(void *dev, struct snap_cur *c)
{
	struct virtio_net_state s = { 0 };
	uint8_t has_mac, link_up;

	snap_cur__bytes(c, s.mac, sizeof(s.mac));
	has_mac = snap_cur__u8(c);
	link_up = snap_cur__u8(c);
	s.offloads = snap_cur__u64(c);
	if (snap_cur__end(c) || has_mac > 1 || link_up > 1)
		return -EINVAL;
	s.has_mac = has_mac;
	s.link_up = link_up;
	return virtio_net__set_state(tap__net(dev), &s);
}

const struct devmgr_class dev_class_virtio_net = {
	.name = "virtio-net",
	.virtio = true,
	.transport = dev__net_transport,
	.stats = dev__net_stats,
	.metrics_key = "net_%s",
	.hold = dev__net_hold,
	.version = 1,
	.save = dev__net_save,
	.restore = dev__net_restore,
	.destroy = dev__net_destroy,
};

int dev_net__add(const struct dev_env *env, const char *id,
		 const struct net_config *n)
{
	struct devmgr_dev *md = devmgr__add(env->dm, id, &dev_class_virtio_net);
	struct tap *t;

	if (!md)
		return -ENOSPC;
	t = tap__create(env->el, env->mem, md->irq, n);
	if (!t)
		return -EINVAL; /* logged */
	log_info("network interface '%s': virtio-net on tap %s at 0x%llx, "
		 "irq %d",
		 id, n->host_dev_name, (unsigned long long)md->mmio_base,
		 md->gsi);
	return devmgr__attach_virtio(env->dm, md, t);
}

int dev_net__update(struct devmgr *dm, const char *id,
		    const struct rate_limiter_config *rx,
		    const struct rate_limiter_config *tx)
{
	struct devmgr_dev *md = devmgr__find(dm, id);

	if (!md || md->cls != &dev_class_virtio_net || !md->dev)
		return -ENOENT;
	return tap__set_rate_limiters(md->dev, rx, tx);
}
