// SPDX-License-Identifier: Apache-2.0
/* The virtio-vsock device with its Unix-socket host side (see dev.h). */
#include <errno.h>

#include "../backends/vsock_uds.h"
#include "dev.h"

static struct virtio_mmio *dev__vsock_transport(void *dev)
{
	return vsock_uds__transport(dev);
}

/* After the event loop was destroyed (vsock_uds.h). */
static void dev__vsock_destroy(void *dev)
{
	vsock_uds__destroy(dev);
}

static int dev__vsock_hold(void *dev, bool hold)
{
	return vsock_uds__hold(dev, hold);
}

/*
 * A restored VM: the guest's connections had their host ends in the old
 * process.  Nothing to save or restore besides the transport (the
 * manager's): the CID and socket path come with the configuration.
 */
static void dev__vsock_restored(void *dev)
{
	vsock_uds__transport_reset(dev);
}

const struct devmgr_class dev_class_virtio_vsock = {
	.name = "virtio-vsock",
	.virtio = true,
	.transport = dev__vsock_transport,
	.hold = dev__vsock_hold,
	.restored = dev__vsock_restored,
	.destroy = dev__vsock_destroy,
};

int dev_vsock__add(const struct dev_env *env, const struct vsock_config *v)
{
	struct devmgr_dev *d =
		devmgr__add(env->dm, "vsock", &dev_class_virtio_vsock);
	struct vsock_uds *u;

	if (!d)
		return -ENOSPC;
	u = vsock_uds__create(env->el, env->mem, d->irq, v->guest_cid,
			      v->uds_path);
	if (!u)
		return -EINVAL; /* logged */
	return devmgr__attach_virtio(env->dm, d, u);
}
