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
#include "../../snapshot/state.h"
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

static void dev__serial_save(void *dev, struct snap_buf *b)
{
	struct serial_state st;

	serial__get_state(dev, &st);
	snap_buf__u8(b, st.ier);
	snap_buf__u8(b, st.lcr);
	snap_buf__u8(b, st.mcr);
	snap_buf__u8(b, st.scr);
	snap_buf__u8(b, st.fcr);
	snap_buf__u8(b, st.dll);
	snap_buf__u8(b, st.dlm);
	snap_buf__u8(b, st.thr_ipending);
	snap_buf__u32(b, st.rx_count);
	snap_buf__bytes(b, st.rx, st.rx_count);
}

static int dev__serial_restore(void *dev, struct snap_cur *c)
{
	struct serial_state st = { 0 };

	st.ier = snap_cur__u8(c);
	st.lcr = snap_cur__u8(c);
	st.mcr = snap_cur__u8(c);
	st.scr = snap_cur__u8(c);
	st.fcr = snap_cur__u8(c);
	st.dll = snap_cur__u8(c);
	st.dlm = snap_cur__u8(c);
	st.thr_ipending = snap_cur__u8(c) != 0;
	st.rx_count = snap_cur__u32(c);
	if (st.rx_count > SERIAL_RX_FIFO)
		return -EINVAL;
	snap_cur__bytes(c, st.rx, st.rx_count);
	if (c->err)
		return -EINVAL;
	return serial__set_state(dev, &st);
}

static void dev__i8042_save(void *dev, struct snap_buf *b)
{
	struct i8042_state st;

	i8042__get_state(dev, &st);
	snap_buf__u32(b, st.len);
	snap_buf__bytes(b, st.out, st.len);
}

static int dev__i8042_restore(void *dev, struct snap_cur *c)
{
	struct i8042_state st = { 0 };

	st.len = snap_cur__u32(c);
	if (st.len > I8042_QUEUE_BYTES)
		return -EINVAL;
	snap_cur__bytes(c, st.out, st.len);
	if (c->err)
		return -EINVAL;
	return i8042__set_state(dev, &st);
}

/* SendCtrlAltDel: a full output queue drops the keys. */
static void dev__i8042_ctrl_alt_del(void *dev)
{
	(void)i8042__ctrl_alt_del(dev);
}

static void dev__cmos_save(void *dev, struct snap_buf *b)
{
	snap_buf__u8(b, cmos__get_index(dev));
}

static int dev__cmos_restore(void *dev, struct snap_cur *c)
{
	uint8_t index = snap_cur__u8(c);

	if (c->err)
		return -EINVAL;
	cmos__set_index(dev, index);
	return 0;
}

const struct devmgr_class dev_class_serial = {
	.name = "serial",
	.version = 1,
	.save = dev__serial_save,
	.restore = dev__serial_restore,
	.destroy = dev__serial_destroy,
};

const struct devmgr_class dev_class_i8042 = {
	.name = "i8042",
	.version = 1,
	.save = dev__i8042_save,
	.restore = dev__i8042_restore,
	.ctrl_alt_del = dev__i8042_ctrl_alt_del,
	.destroy = dev__i8042_destroy,
};

const struct devmgr_class dev_class_cmos = {
	.name = "cmos",
	.version = 1,
	.save = dev__cmos_save,
	.restore = dev__cmos_restore,
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
