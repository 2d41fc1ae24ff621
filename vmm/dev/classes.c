// SPDX-License-Identifier: Apache-2.0
/* Every device class ember knows, in one place (see dev.h). */
#include <stddef.h>
#include <string.h>

#include "dev.h"

static const struct devmgr_class *const dev_classes[] = {
	&dev_class_serial,	 &dev_class_i8042,	&dev_class_cmos,
	&dev_class_guest_signal, &dev_class_virtio_blk, &dev_class_virtio_rng,
	&dev_class_virtio_vsock, &dev_class_virtio_net,
};

const struct devmgr_class *dev__class(const char *name)
{
	size_t i;

	for (i = 0; i < sizeof(dev_classes) / sizeof(dev_classes[0]); i++)
		if (!strcmp(dev_classes[i]->name, name))
			return dev_classes[i];
	return NULL;
}
