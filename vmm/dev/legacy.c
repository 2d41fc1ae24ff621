// SPDX-License-Identifier: Apache-2.0
/*
 * The PC platform devices of every VM: UART, i8042, CMOS, boot timer and
 * exit status (see dev.h).
 */
#include <errno.h>

#include "../../boot/layout.h"
#include "../../devices/cmos.h"
#include "../../devices/guest_signal.h"
#include "../../devices/i8042.h"
#include "../../devices/serial.h"
#include "../backends/console_out.h"
#include "../irq.h"
#include "../log.h"
#include "dev.h"

static void dev__serial_destroy(void *dev)
{
	serial__destroy(dev);
}

static void dev__i8042_destroy(void *dev)
{
	i8042__destroy(dev);
}

static void dev__cmos_destroy(void *dev)
{
	cmos__destroy(dev);
}

static void dev__guest_signal_destroy(void *dev)
{
	guest_signal__destroy(dev);
}

const struct devmgr_class dev_class_serial = {
	.name = "serial",
	.destroy = dev__serial_destroy,
};

const struct devmgr_class dev_class_i8042 = {
	.name = "i8042",
	.destroy = dev__i8042_destroy,
};

const struct devmgr_class dev_class_cmos = {
	.name = "cmos",
	.destroy = dev__cmos_destroy,
};

const struct devmgr_class dev_class_guest_signal = {
	.name = "guest-signal",
	.destroy = dev__guest_signal_destroy,
};

/* Add device @dev (NULL: no memory) as @id with one bus range. */
static int dev__add_one(const struct dev_env *env, const char *id,
			const struct devmgr_class *cls, struct device *dev,
			bool pio, uint64_t base, uint64_t len)
{
	struct devmgr_dev *d;

	if (!dev) {
		log_error("%s: out of memory", id);
		return -ENOMEM;
	}
	d = devmgr__add(env->dm, id, cls);
	if (!d) {
		cls->destroy(dev);
		return -EINVAL;
	}
	return devmgr__map(env->dm, d, dev, dev, pio, base, len);
}

int dev_legacy__add(const struct dev_env *env)
{
	struct serial_host con = { .tx = console_out__tx,
				   .opaque = env->console };
	struct devmgr_dev *d;
	struct device *kbd;
	int ret;

	ret = dev__add_one(
		env, "serial", &dev_class_serial,
		serial__create(&con, irq__line(env->vm_fd, LAYOUT_IRQ_SERIAL)),
		true, SERIAL_COM1_PORT, SERIAL_PORT_LEN);
	if (ret)
		return ret;
	/* The i8042 answers on two ports, data and command. */
	kbd = i8042__create(env->events, irq__line(env->vm_fd, 1));
	ret = dev__add_one(env, "i8042", &dev_class_i8042, kbd, true,
			   I8042_DATA_PORT, 1);
	if (ret)
		return ret;
	d = devmgr__find(env->dm, "i8042");
	ret = devmgr__map(env->dm, d, kbd, i8042__command(kbd), true,
			  I8042_COMMAND_PORT, 1);
	if (!ret)
		ret = dev__add_one(env, "cmos", &dev_class_cmos, cmos__create(),
				   true, CMOS_PORT, CMOS_PORT_LEN);
	if (!ret)
		ret = dev__add_one(env, "boot-timer", &dev_class_guest_signal,
				   guest_signal__boot_timer(env->events), false,
				   LAYOUT_BOOT_TIMER_GPA,
				   LAYOUT_BOOT_TIMER_SIZE);
	if (!ret)
		ret = dev__add_one(env, "exit-status", &dev_class_guest_signal,
				   guest_signal__exit_status(env->events),
				   false, LAYOUT_EXIT_STATUS_GPA,
				   LAYOUT_EXIT_STATUS_SIZE);
	return ret;
}
