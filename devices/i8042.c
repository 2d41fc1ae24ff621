// SPDX-License-Identifier: Apache-2.0
/* i8042 reset line (see i8042.h). */
#include "i8042.h"

#include <stddef.h>
#include <stdlib.h>

struct i8042 {
	struct device data; /* reached through I8042_DATA_PORT */
	struct device cmd; /* reached through I8042_COMMAND_PORT */
	struct device_events ev;
};

static struct i8042 *from_cmd(struct device *d)
{
	return (struct i8042 *)((char *)d - offsetof(struct i8042, cmd));
}

static void i8042__cmd_write(struct device *d, uint64_t off, const void *data,
			     uint32_t len)
{
	struct i8042 *k = from_cmd(d);

	(void)len;
	if (off == 0 && *(const uint8_t *)data == I8042_CMD_RESET &&
	    k->ev.notify)
		k->ev.notify(k->ev.opaque, DEVICE_EVENT_RESET, 0);
}

/* Data reads return 0 and status reads 0: output empty, input empty. */
static const struct device_ops i8042_data_ops = { .name = "i8042-data" };
static const struct device_ops i8042_cmd_ops = {
	.name = "i8042-cmd",
	.write = i8042__cmd_write,
};

struct device *i8042__create(struct device_events ev)
{
	struct i8042 *k = calloc(1, sizeof(*k));

	if (!k)
		return NULL;
	k->data.ops = &i8042_data_ops;
	k->cmd.ops = &i8042_cmd_ops;
	pthread_mutex_init(&k->data.lock, NULL);
	pthread_mutex_init(&k->cmd.lock, NULL);
	k->ev = ev;
	return &k->data;
}

struct device *i8042__command(struct device *d)
{
	return &((struct i8042 *)d)->cmd;
}

void i8042__destroy(struct device *d)
{
	struct i8042 *k = (struct i8042 *)d;

	if (!k)
		return;
	pthread_mutex_destroy(&k->data.lock);
	pthread_mutex_destroy(&k->cmd.lock);
	free(k);
}
