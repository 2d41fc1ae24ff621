// SPDX-License-Identifier: Apache-2.0
/* The virtio-rng entropy device (see dev.h). */
#include <errno.h>

#include "../../devices/virtio_rng.h"
#include "../log.h"
#include "dev.h"

static struct virtio_mmio *dev__rng_transport(void *dev)
{
	return virtio_rng__transport(dev);
}

static void dev__rng_stats(void *dev, struct dev_stats *out)
{
	virtio_rng__stats(dev, out);
}

static void dev__rng_destroy(void *dev)
{
	virtio_rng__destroy(dev);
}

const struct devmgr_class dev_class_virtio_rng = {
	.name = "virtio-rng",
	.virtio = true,
	.transport = dev__rng_transport,
	.stats = dev__rng_stats,
	.metrics_key = "entropy",
	.destroy = dev__rng_destroy,
};

int dev_rng__add(const struct dev_env *env)
{
	struct devmgr_dev *d =
		devmgr__add(env->dm, "rng", &dev_class_virtio_rng);
	struct virtio_rng *rng;

	if (!d)
		return -ENOSPC;
	rng = virtio_rng__create(env->mem, d->irq);
	if (!rng) {
		log_error("virtio-rng: cannot create the device");
		return -ENOMEM;
	}
	return devmgr__attach_virtio(env->dm, d, rng);
}
