// SPDX-License-Identifier: Apache-2.0
/* i8042: reset line and Ctrl-Alt-Del (see i8042.h). */
#include "i8042.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#define I8042_STATUS_OBF 0x01 /* output buffer full: data to read */
#define I8042_QUEUE	 I8042_QUEUE_BYTES

struct i8042 {
	struct device data; /* reached through I8042_DATA_PORT */
	struct device cmd; /* reached through I8042_COMMAND_PORT */
	struct device_events ev;
	struct irq_line irq; /* IRQ 1, the keyboard */
	uint8_t out[I8042_QUEUE]; /* bytes for the guest, in order */
	unsigned int out_head, out_len;
	pthread_mutex_t qlock; /* out[]: the data and command sides share it */
};

static struct i8042 *from_cmd(struct device *d)
{
	return (struct i8042 *)((char *)d - offsetof(struct i8042, cmd));
}

/* An edge on IRQ 1 while bytes wait (the 8042 raises it per byte). */
static void i8042__kick(struct i8042 *k)
{
	if (k->out_len && k->irq.set) {
		k->irq.set(k->irq.opaque, k->irq.gsi, 1);
		k->irq.set(k->irq.opaque, k->irq.gsi, 0);
	}
}

static void i8042__data_read(struct device *d, uint64_t off, void *data,
			     uint32_t len)
{
	struct i8042 *k = (struct i8042 *)d;
	uint8_t v = 0;

	(void)len;
	if (off != 0)
		return;
	pthread_mutex_lock(&k->qlock);
	if (k->out_len) {
		v = k->out[k->out_head];
		k->out_head = (k->out_head + 1) % I8042_QUEUE;
		k->out_len--;
		i8042__kick(k);
	}
	pthread_mutex_unlock(&k->qlock);
	*(uint8_t *)data = v;
}

static void i8042__cmd_read(struct device *d, uint64_t off, void *data,
			    uint32_t len)
{
	struct i8042 *k = from_cmd(d);

	(void)len;
	if (off != 0)
		return;
	/* Input buffer always empty, so kb_wait() never spins. */
	pthread_mutex_lock(&k->qlock);
	*(uint8_t *)data = k->out_len ? I8042_STATUS_OBF : 0;
	pthread_mutex_unlock(&k->qlock);
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

static const struct device_ops i8042_data_ops = {
	.name = "i8042-data",
	.read = i8042__data_read,
};
static const struct device_ops i8042_cmd_ops = {
	.name = "i8042-cmd",
	.read = i8042__cmd_read,
	.write = i8042__cmd_write,
};

struct device *i8042__create(struct device_events ev, struct irq_line irq)
{
	struct i8042 *k = calloc(1, sizeof(*k));

	if (!k)
		return NULL;
	k->data.ops = &i8042_data_ops;
	k->cmd.ops = &i8042_cmd_ops;
	pthread_mutex_init(&k->data.lock, NULL);
	pthread_mutex_init(&k->cmd.lock, NULL);
	pthread_mutex_init(&k->qlock, NULL);
	k->ev = ev;
	k->irq = irq;
	return &k->data;
}

struct device *i8042__command(struct device *d)
{
	return &((struct i8042 *)d)->cmd;
}

int i8042__ctrl_alt_del(struct device *d)
{
	/* Set 2: LCtrl, LAlt, Delete pressed, then released (F0: break). */
	static const uint8_t keys[] = { 0x14, 0x11, 0xe0, 0x71, 0xe0, 0xf0,
					0x71, 0xf0, 0x11, 0xf0, 0x14 };
	struct i8042 *k = (struct i8042 *)d;
	unsigned int i;
	int ret = 0;

	pthread_mutex_lock(&k->qlock);
	if (k->out_len + sizeof(keys) > I8042_QUEUE) {
		ret = -1;
	} else {
		for (i = 0; i < sizeof(keys); i++)
			k->out[(k->out_head + k->out_len++) % I8042_QUEUE] =
				keys[i];
		i8042__kick(k);
	}
	pthread_mutex_unlock(&k->qlock);
	return ret;
}

void i8042__destroy(struct device *d)
{
	struct i8042 *k = (struct i8042 *)d;

	if (!k)
		return;
	pthread_mutex_destroy(&k->data.lock);
	pthread_mutex_destroy(&k->cmd.lock);
	pthread_mutex_destroy(&k->qlock);
	free(k);
}

void i8042__get_state(struct device *d, struct i8042_state *s)
{
	struct i8042 *k = (struct i8042 *)d;
	unsigned int i;

	memset(s, 0, sizeof(*s));
	pthread_mutex_lock(&k->qlock);
	s->len = k->out_len;
	for (i = 0; i < k->out_len; i++)
		s->out[i] = k->out[(k->out_head + i) % I8042_QUEUE];
	pthread_mutex_unlock(&k->qlock);
}

int i8042__set_state(struct device *d, const struct i8042_state *s)
{
	struct i8042 *k = (struct i8042 *)d;

	if (s->len > I8042_QUEUE)
		return -EINVAL;
	pthread_mutex_lock(&k->qlock);
	memcpy(k->out, s->out, s->len);
	k->out_head = 0;
	k->out_len = s->len;
	if (k->out_len)
		i8042__kick(k);
	pthread_mutex_unlock(&k->qlock);
	return 0;
}
