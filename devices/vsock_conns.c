// SPDX-License-Identifier: Apache-2.0
/* virtio-vsock connections and packet queue (see vsock_conns.h). */
#include "vsock_conns.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static bool id_eq(struct vsock_conn_id a, struct vsock_conn_id b)
{
	return a.guest_port == b.guest_port && a.host_port == b.host_port;
}

struct vsock_conn *vsock_conns__find(struct vsock_conns *t,
				     struct vsock_conn_id id)
{
	unsigned int i;

	for (i = 0; i < VIRTIO_VSOCK_MAX_CONNS; i++)
		if (t->conns[i].state != CONN_FREE && id_eq(t->conns[i].id, id))
			return &t->conns[i];
	return NULL;
}

struct vsock_conn *vsock_conns__new(struct vsock_conns *t,
				    struct vsock_conn_id id,
				    enum vsock_conn_state state)
{
	unsigned int i;

	for (i = 0; i < VIRTIO_VSOCK_MAX_CONNS; i++) {
		if (t->conns[i].state != CONN_FREE)
			continue;
		memset(&t->conns[i], 0, sizeof(t->conns[i]));
		t->conns[i].state = state;
		t->conns[i].id = id;
		return &t->conns[i];
	}
	return NULL;
}

/* Drop @id's undelivered data and credit updates (not its RST). */
static void pending__purge(struct vsock_conns *t, struct vsock_conn_id id)
{
	struct vsock_pkt **pp = &t->head, *p;

	t->tail = NULL;
	while ((p = *pp)) {
		if (id_eq(p->id, id) &&
		    (p->op == VIRTIO_VSOCK_OP_RW ||
		     p->op == VIRTIO_VSOCK_OP_CREDIT_UPDATE)) {
			*pp = p->next;
			if (p->op == VIRTIO_VSOCK_OP_RW) {
				t->nr_data--;
				t->data_bytes -= p->len;
			} else {
				t->nr_ctrl--;
			}
			free(p);
			continue;
		}
		t->tail = p;
		pp = &p->next;
	}
}

void vsock_conns__free(struct vsock_conns *t, struct vsock_conn *c)
{
	pending__purge(t, c->id);
	c->state = CONN_FREE;
}

static void pending__append(struct vsock_conns *t, struct vsock_pkt *p)
{
	p->next = NULL;
	if (t->tail)
		t->tail->next = p;
	else
		t->head = p;
	t->tail = p;
}

int vsock_conns__ctrl(struct vsock_conns *t, struct vsock_conn_id id,
		      uint16_t op, uint32_t flags, bool force)
{
	struct vsock_pkt *p;

	if (!force && t->nr_ctrl >= VIRTIO_VSOCK_PENDING_CTRL)
		return -EAGAIN;
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->id = id;
	p->op = op;
	p->flags = flags;
	t->nr_ctrl++;
	pending__append(t, p);
	return 0;
}

int vsock_conns__data(struct vsock_conns *t, struct vsock_conn *c,
		      const void *data, uint32_t n)
{
	struct vsock_pkt *p = malloc(sizeof(*p) + n);

	if (!p)
		return -ENOMEM;
	memset(p, 0, sizeof(*p));
	p->id = c->id;
	p->op = VIRTIO_VSOCK_OP_RW;
	p->len = n;
	memcpy(p->data, data, n);
	pending__append(t, p);
	t->nr_data++;
	t->data_bytes += n;
	c->tx_cnt += n;
	return 0;
}

void vsock_conns__credit_update(struct vsock_conns *t, struct vsock_conn *c)
{
	if (c->update_queued)
		return;
	if (vsock_conns__ctrl(t, c->id, VIRTIO_VSOCK_OP_CREDIT_UPDATE, 0,
			      false)) {
		c->update_owed = true;
		return;
	}
	c->update_queued = true;
	c->update_owed = false;
}

void vsock_conns__retry_updates(struct vsock_conns *t)
{
	unsigned int i;

	for (i = 0; i < VIRTIO_VSOCK_MAX_CONNS; i++)
		if (t->conns[i].state != CONN_FREE && t->conns[i].update_owed)
			vsock_conns__credit_update(t, &t->conns[i]);
}

uint32_t vsock_conns__credit(const struct vsock_conn *c)
{
	uint32_t in_flight = c->tx_cnt - c->peer_fwd_cnt;

	return in_flight >= c->peer_buf_alloc ? 0 :
						c->peer_buf_alloc - in_flight;
}

bool vsock_conns__full(const struct vsock_conns *t)
{
	return t->nr_data >= VIRTIO_VSOCK_PENDING_DATA ||
	       t->data_bytes >= VIRTIO_VSOCK_PENDING_BYTES;
}

uint32_t vsock_conns__room(const struct vsock_conns *t,
			   const struct vsock_conn *c)
{
	uint32_t credit = vsock_conns__credit(c), room;

	if (vsock_conns__full(t))
		return 0;
	room = (uint32_t)(VIRTIO_VSOCK_PENDING_BYTES - t->data_bytes);
	return credit < room ? credit : room;
}

void vsock_conns__advance(struct vsock_conns *t, struct vsock_pkt *p,
			  uint32_t n)
{
	p->off += n;
	p->len -= n;
	t->data_bytes -= n;
}

void vsock_conns__pop(struct vsock_conns *t)
{
	struct vsock_pkt *p = t->head;

	t->head = p->next;
	if (!t->head)
		t->tail = NULL;
	if (p->op == VIRTIO_VSOCK_OP_RW)
		t->nr_data--;
	else
		t->nr_ctrl--;
	free(p);
}

void vsock_conns__drop_all(struct vsock_conns *t)
{
	struct vsock_pkt *p;

	while ((p = t->head)) {
		t->head = p->next;
		free(p);
	}
	t->tail = NULL;
	t->nr_data = t->nr_ctrl = 0;
	t->data_bytes = 0;
}
