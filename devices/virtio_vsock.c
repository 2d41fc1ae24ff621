// SPDX-License-Identifier: Apache-2.0
/* virtio socket device (see virtio_vsock.h). */
#include "virtio_vsock.h"

#include <endian.h>
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>

#include "le.h"

struct virtio_vsock {
	struct virtio_mmio t;
	uint64_t guest_cid;
	const struct vsock_backend_ops *ops;
	void *backend;
	struct vsock_conns tab; /* connections, packets for the guest */
	bool tx_stalled; /* tx left unread for want of control room */
	bool rx_starved; /* send() stopped short on a full pending queue */
	bool reset_owed; /* a transport reset waits for an event buffer */
	/*
	 * The reset went out and the driver has not yet handed its buffer
	 * back (it refills and kicks the event queue once it handled the
	 * event): rx waits, or a connection made meanwhile would be torn
	 * down by the reset when the guest gets to it.
	 */
	bool reset_unacked;
	uint8_t cfg[8]; /* guest_cid, little-endian */
	struct virtq_chain chain; /* ~6 KiB: not on the event thread's stack */
	uint8_t bounce[VIRTIO_VSOCK_MAX_PAYLOAD];
};

/* A parsed struct virtio_vsock_hdr. */
struct vsock_hdr {
	uint64_t src_cid, dst_cid;
	uint32_t src_port, dst_port, len;
	uint16_t type, op;
	uint32_t flags, buf_alloc, fwd_cnt;
};

static void hdr__parse(struct vsock_hdr *h, const uint8_t *b)
{
	h->src_cid = le__get64(b);
	h->dst_cid = le__get64(b + 8);
	h->src_port = le__get32(b + 16);
	h->dst_port = le__get32(b + 20);
	h->len = le__get32(b + 24);
	h->type = le__get16(b + 28);
	h->op = le__get16(b + 30);
	h->flags = le__get32(b + 32);
	h->buf_alloc = le__get32(b + 36);
	h->fwd_cnt = le__get32(b + 40);
}

/* --- host -> guest (rx and event queues) -------------------------------- */

/*
 * Write the header of @p (and as much payload as fits) into @chain.
 * Returns the used length; @p->len/off advance by the payload written.
 */
static uint32_t pkt__deliver(struct virtio_vsock *v, struct vsock_pkt *p,
			     const struct virtq_chain *c)
{
	const struct guest_mem *m = v->t.mem;
	uint8_t h[VIRTIO_VSOCK_HDR_BYTES] = { 0 };
	struct vsock_conn *conn = vsock_conns__find(&v->tab, p->id);
	uint64_t room = c->in_bytes - VIRTIO_VSOCK_HDR_BYTES;
	uint32_t n = p->len < room ? p->len : (uint32_t)room;

	le__put64(h, VIRTIO_VSOCK_CID_HOST);
	le__put64(h + 8, v->guest_cid);
	le__put32(h + 16, p->id.host_port);
	le__put32(h + 20, p->id.guest_port);
	le__put32(h + 24, n);
	le__put16(h + 28, VIRTIO_VSOCK_TYPE_STREAM);
	le__put16(h + 30, p->op);
	le__put32(h + 32, p->flags);
	if (conn && p->op != VIRTIO_VSOCK_OP_RST) {
		/* Credit fields are current when the guest reads them. */
		le__put32(h + 36, VIRTIO_VSOCK_BUF_ALLOC);
		le__put32(h + 40, conn->fwd_cnt);
		conn->last_fwd_sent = conn->fwd_cnt;
		if (p->op == VIRTIO_VSOCK_OP_CREDIT_UPDATE)
			conn->update_queued = false;
	}
	if (virtq__write(c, m, 0, h, sizeof(h)) != sizeof(h))
		return 0;
	if (n && virtq__write(c, m, VIRTIO_VSOCK_HDR_BYTES, p->data + p->off,
			      n) != n)
		return 0;
	vsock_conns__advance(&v->tab, p, n);
	return VIRTIO_VSOCK_HDR_BYTES + n;
}

/*
 * Write an owed transport reset (5.10.6.7) into the next event buffer
 * the driver made available.  A buffer too small for the event goes back
 * empty and the next one is tried.  Nothing happens while the queue is
 * not live or empty: the next notification or host call tries again.
 */
static void vsock__post_reset(struct virtio_vsock *v)
{
	struct virtio_mmio *t = &v->t;
	struct virtq *q = &t->vq[VIRTIO_VSOCK_Q_EVENT];
	struct virtq_chain *c = &v->chain;
	uint8_t ev[VIRTIO_VSOCK_EVENT_BYTES];
	bool pushed = false;
	uint32_t used;
	int r = 0;

	if (!v->reset_owed || !virtio_mmio__live(t, VIRTIO_VSOCK_Q_EVENT))
		return;
	le__put32(ev, VIRTIO_VSOCK_EVENT_TRANSPORT_RESET);
	while (v->reset_owed) {
		r = virtq__pop(q, t->mem, c);
		if (r <= 0)
			break;
		used = 0;
		if (virtq__write(c, t->mem, 0, ev, sizeof(ev)) == sizeof(ev)) {
			used = sizeof(ev);
			v->reset_owed = false;
			v->reset_unacked = true;
		}
		if (virtq__push(q, t->mem, c->head, used)) {
			r = -EFAULT;
			break;
		}
		pushed = true;
	}
	if (r < 0)
		virtio_mmio__needs_reset(t);
	/*
	 * The driver's refill of the buffer it got is its acknowledgement
	 * (Linux refills and kicks once it handled the event): make sure the
	 * kick comes even with buffers of its own left with the device.
	 */
	if (v->reset_unacked)
		virtq__arm_notify(q, t->mem);
	if (pushed)
		virtio_mmio__used(t, VIRTIO_VSOCK_Q_EVENT);
}

/*
 * Move pending packets into the guest's rx buffers while both last; a
 * data packet larger than a buffer is split over several.  Buffers are
 * taken from the avail ring as packets need them, never on a notify
 * alone, so buffers the driver posted before a snapshot serve a restored
 * device at once.  An owed transport reset goes first.
 */
static void vsock__flush_rx(struct virtio_vsock *v)
{
	struct virtio_mmio *t = &v->t;
	struct virtq *q = &t->vq[VIRTIO_VSOCK_Q_RX];
	struct virtq_chain *c = &v->chain;
	struct vsock_pkt *p;
	bool pushed = false;
	uint32_t used;
	int r = 0;

	vsock__post_reset(v);
	if (!virtio_mmio__live(t, VIRTIO_VSOCK_Q_RX) || v->reset_owed ||
	    v->reset_unacked)
		return;
	while ((p = v->tab.head)) {
		r = virtq__pop(q, t->mem, c);
		if (r <= 0)
			break;
		used = 0;
		/* A buffer too small for a header is returned empty. */
		if (c->in_bytes >= VIRTIO_VSOCK_HDR_BYTES)
			used = pkt__deliver(v, p, c);
		if (virtq__push(q, t->mem, c->head, used)) {
			r = -EFAULT;
			break;
		}
		pushed = true;
		if (!used || p->len)
			continue;
		vsock_conns__pop(&v->tab);
	}
	if (r < 0)
		virtio_mmio__needs_reset(t);
	if (pushed)
		virtio_mmio__used(t, VIRTIO_VSOCK_Q_RX);
	if (r < 0)
		return;
	/* Room again for credit updates that did not fit. */
	vsock_conns__retry_updates(&v->tab);
}

/* --- guest -> host (tx queue) -------------------------------------------- */

/* RST a connection the guest broke; tell the backend if it knew it. */
static void conn__abort(struct virtio_vsock *v, struct vsock_conn *c)
{
	struct vsock_conn_id id = c->id;

	vsock_conns__free(&v->tab, c);
	vsock_conns__ctrl(&v->tab, id, VIRTIO_VSOCK_OP_RST, 0, true);
	if (v->ops->reset)
		v->ops->reset(v->backend, id);
}

/* Answer a packet for no (valid) connection with RST, never an RST. */
static void vsock__reply_rst(struct virtio_vsock *v, const struct vsock_hdr *h,
			     struct vsock_conn_id id)
{
	struct vsock_conn *c = vsock_conns__find(&v->tab, id);

	if (c) {
		conn__abort(v, c);
		return;
	}
	if (h->op != VIRTIO_VSOCK_OP_RST)
		vsock_conns__ctrl(&v->tab, id, VIRTIO_VSOCK_OP_RST, 0, true);
}

static void vsock__guest_request(struct virtio_vsock *v,
				 const struct vsock_hdr *h,
				 struct vsock_conn_id id)
{
	struct vsock_conn *c = vsock_conns__new(&v->tab, id, CONN_GUEST_REQ);
	int r;

	if (!c) {
		vsock_conns__ctrl(&v->tab, id, VIRTIO_VSOCK_OP_RST, 0, true);
		return;
	}
	c->peer_buf_alloc = h->buf_alloc;
	c->peer_fwd_cnt = h->fwd_cnt;
	r = v->ops->connect(v->backend, id);
	if (r == VSOCK_PENDING)
		return;
	if (r < 0 ||
	    vsock_conns__ctrl(&v->tab, id, VIRTIO_VSOCK_OP_RESPONSE, 0, true)) {
		vsock_conns__free(&v->tab, c);
		vsock_conns__ctrl(&v->tab, id, VIRTIO_VSOCK_OP_RST, 0, true);
		return;
	}
	c->state = CONN_ESTABLISHED;
}

/* RW: hand the payload to the backend in MAX_PAYLOAD pieces (one). */
static void vsock__guest_rw(struct virtio_vsock *v, struct vsock_conn *c,
			    const struct virtq_chain *chain,
			    const struct vsock_hdr *h)
{
	uint32_t queued = c->rx_cnt - c->fwd_cnt;

	if (!h->len)
		return;
	if (c->peer_shutdown & VIRTIO_VSOCK_SHUTDOWN_SEND ||
	    h->len > VIRTIO_VSOCK_BUF_ALLOC - queued) {
		conn__abort(v, c); /* past the credit we gave */
		return;
	}
	if (virtq__read(chain, v->t.mem, VIRTIO_VSOCK_HDR_BYTES, v->bounce,
			h->len) != h->len) {
		conn__abort(v, c);
		return;
	}
	c->rx_cnt += h->len;
	if (c->host_shutdown & VIRTIO_VSOCK_SHUTDOWN_RCV) {
		c->fwd_cnt += h->len; /* nobody reads: drop, keep credit */
		return;
	}
	if (v->ops->recv(v->backend, c->id, v->bounce, h->len) < 0)
		conn__abort(v, c);
}

static void vsock__guest_packet(struct virtio_vsock *v,
				const struct virtq_chain *chain)
{
	uint8_t b[VIRTIO_VSOCK_HDR_BYTES];
	struct vsock_conn_id id;
	struct vsock_conn *c;
	struct vsock_hdr h;
	uint32_t old_credit;

	if (chain->out_bytes < VIRTIO_VSOCK_HDR_BYTES ||
	    virtq__read(chain, v->t.mem, 0, b, sizeof(b)) != sizeof(b))
		return; /* no header: no one to answer */
	hdr__parse(&h, b);
	id.guest_port = h.src_port;
	id.host_port = h.dst_port;
	if (h.src_cid != v->guest_cid || h.dst_cid != VIRTIO_VSOCK_CID_HOST ||
	    h.type != VIRTIO_VSOCK_TYPE_STREAM ||
	    h.len > VIRTIO_VSOCK_MAX_PAYLOAD ||
	    h.len > chain->out_bytes - VIRTIO_VSOCK_HDR_BYTES) {
		vsock__reply_rst(v, &h, id);
		return;
	}
	c = vsock_conns__find(&v->tab, id);
	if (h.op == VIRTIO_VSOCK_OP_REQUEST) {
		if (c)
			conn__abort(v, c); /* a second REQUEST: start over */
		else
			vsock__guest_request(v, &h, id);
		return;
	}
	if (!c) {
		vsock__reply_rst(v, &h, id);
		return;
	}
	if (h.op == VIRTIO_VSOCK_OP_RST) {
		vsock_conns__free(&v->tab, c);
		if (v->ops->reset)
			v->ops->reset(v->backend, id);
		return;
	}
	if (c->state == CONN_HOST_REQ && h.op == VIRTIO_VSOCK_OP_RESPONSE) {
		c->state = CONN_ESTABLISHED;
		c->peer_buf_alloc = h.buf_alloc;
		c->peer_fwd_cnt = h.fwd_cnt;
		if (v->ops->connected)
			v->ops->connected(v->backend, id);
		return;
	}
	if (c->state != CONN_ESTABLISHED) {
		conn__abort(v, c);
		return;
	}
	/* Every packet carries the guest's credit (5.10.6.3). */
	old_credit = vsock_conns__credit(c);
	c->peer_buf_alloc = h.buf_alloc;
	c->peer_fwd_cnt = h.fwd_cnt;
	switch (h.op) {
	case VIRTIO_VSOCK_OP_RW:
		vsock__guest_rw(v, c, chain, &h);
		break;
	case VIRTIO_VSOCK_OP_CREDIT_UPDATE:
		break;
	case VIRTIO_VSOCK_OP_CREDIT_REQUEST:
		vsock_conns__credit_update(&v->tab, c);
		break;
	case VIRTIO_VSOCK_OP_SHUTDOWN:
		c->peer_shutdown |= h.flags & (VIRTIO_VSOCK_SHUTDOWN_RCV |
					       VIRTIO_VSOCK_SHUTDOWN_SEND);
		if (v->ops->shutdown)
			v->ops->shutdown(v->backend, id, c->peer_shutdown);
		break;
	default: /* RESPONSE when established, unknown ops */
		conn__abort(v, c);
		return;
	}
	c = vsock_conns__find(&v->tab, id);
	if (c && c->state == CONN_ESTABLISHED && v->ops->credit &&
	    vsock_conns__credit(c) > old_credit)
		v->ops->credit(v->backend, id);
}

static void vsock__process_tx(struct virtio_vsock *v)
{
	struct virtio_mmio *t = &v->t;
	struct virtq *q = &t->vq[VIRTIO_VSOCK_Q_TX];
	struct virtq_chain *c = &v->chain;
	bool pushed = false;
	int r = 0;

	v->tx_stalled = false;
	if (!virtio_mmio__live(t, VIRTIO_VSOCK_Q_TX))
		return;
	for (;;) {
		/* Each packet queues at most one control packet. */
		if (v->tab.nr_ctrl + 1 >= VIRTIO_VSOCK_PENDING_CTRL) {
			v->tx_stalled = true;
			break;
		}
		r = virtq__pop(q, t->mem, c);
		if (r <= 0)
			break;
		vsock__guest_packet(v, c);
		if (virtq__push(q, t->mem, c->head, 0)) {
			r = -EFAULT;
			break;
		}
		pushed = true;
	}
	if (r < 0)
		virtio_mmio__needs_reset(t);
	if (pushed)
		virtio_mmio__used(t, VIRTIO_VSOCK_Q_TX);
	vsock__flush_rx(v);
}

/* --- transport ops ------------------------------------------------------- */

static uint64_t virtio_vsock__features(void *opaque)
{
	(void)opaque;
	return 1ULL << VIRTIO_VSOCK_F_STREAM;
}

static void virtio_vsock__config_read(void *opaque, uint64_t off, void *data,
				      uint32_t len)
{
	struct virtio_vsock *v = opaque;

	virtio_mmio__config_copy(v->cfg, sizeof(v->cfg), off, data, len);
}

/*
 * A send() that stopped short because the pending queue (not the guest's
 * credit) was full waits for credit(): give it once the guest has taken
 * packets out.  Runs in a transport op, where backend ops may be called.
 */
static void vsock__unstarve(struct virtio_vsock *v)
{
	unsigned int i;

	if (!v->rx_starved || vsock_conns__full(&v->tab) || !v->ops->credit)
		return;
	v->rx_starved = false;
	for (i = 0; i < VIRTIO_VSOCK_MAX_CONNS; i++)
		if (v->tab.conns[i].state == CONN_ESTABLISHED &&
		    vsock_conns__credit(&v->tab.conns[i]))
			v->ops->credit(v->backend, v->tab.conns[i].id);
}

static void virtio_vsock__notify(void *opaque, struct virtio_mmio *t,
				 unsigned int idx)
{
	struct virtio_vsock *v = opaque;

	(void)t;
	if (idx == VIRTIO_VSOCK_Q_TX)
		vsock__process_tx(v);
	/*
	 * New event buffers: an owed transport reset can go now; after a
	 * reset, the driver handled it, and rx held for it goes on.
	 */
	if (idx == VIRTIO_VSOCK_Q_EVENT) {
		v->reset_unacked = false;
		vsock__post_reset(v);
		if (v->reset_owed || v->reset_unacked)
			return;
	} else if (idx != VIRTIO_VSOCK_Q_RX) {
		return;
	}
	vsock__flush_rx(v);
	/*
	 * Tx held back for room resumes only here, on a guest notify, so
	 * the host-side calls never run backend ops.
	 */
	if (v->tx_stalled && v->tab.nr_ctrl + 1 < VIRTIO_VSOCK_PENDING_CTRL)
		vsock__process_tx(v);
	vsock__unstarve(v);
}

static void virtio_vsock__reset(void *opaque)
{
	struct virtio_vsock *v = opaque;
	unsigned int i;

	vsock_conns__drop_all(&v->tab);
	v->tx_stalled = false;
	v->rx_starved = false;
	/* The driver drops its connections with the device: nothing owed. */
	v->reset_owed = false;
	v->reset_unacked = false;
	for (i = 0; i < VIRTIO_VSOCK_MAX_CONNS; i++) {
		if (v->tab.conns[i].state == CONN_FREE)
			continue;
		v->tab.conns[i].state = CONN_FREE;
		if (v->ops->reset)
			v->ops->reset(v->backend, v->tab.conns[i].id);
	}
}

static const struct virtio_dev_ops virtio_vsock_ops = {
	.name = "virtio-vsock",
	.device_id = VIRTIO_ID_VSOCK,
	.nr_queues = 3,
	.features = virtio_vsock__features,
	.config_read = virtio_vsock__config_read,
	/* 5.10.4: guest_cid is read-only; no config_write. */
	.notify = virtio_vsock__notify,
	.reset = virtio_vsock__reset,
};

struct virtio_vsock *virtio_vsock__create(const struct guest_mem *m,
					  struct irq_line irq,
					  uint64_t guest_cid,
					  const struct vsock_backend_ops *ops,
					  void *backend)
{
	struct virtio_vsock *v;

	if (!m || !ops || !ops->connect || !ops->recv || guest_cid < 3 ||
	    guest_cid > UINT32_MAX)
		return NULL;
	v = calloc(1, sizeof(*v));
	if (!v)
		return NULL;
	v->guest_cid = guest_cid;
	v->ops = ops;
	v->backend = backend;
	le__put64(v->cfg, guest_cid);
	if (virtio_mmio__init(&v->t, &virtio_vsock_ops, v, m, irq)) {
		free(v);
		return NULL;
	}
	return v;
}

struct virtio_mmio *virtio_vsock__transport(struct virtio_vsock *v)
{
	return &v->t;
}

void virtio_vsock__destroy(struct virtio_vsock *v)
{
	if (!v)
		return;
	vsock_conns__drop_all(&v->tab);
	virtio_mmio__destroy(&v->t);
	free(v);
}

/* --- host -> guest API --------------------------------------------------- */

static void vsock__lock(struct virtio_vsock *v)
{
	pthread_mutex_lock(&v->t.dev.lock);
}

static void vsock__unlock(struct virtio_vsock *v)
{
	pthread_mutex_unlock(&v->t.dev.lock);
}

int virtio_vsock__connect(struct virtio_vsock *v, uint32_t host_port,
			  uint32_t guest_port)
{
	struct vsock_conn_id id = { guest_port, host_port };
	struct vsock_conn *c;
	int r;

	vsock__lock(v);
	if (!virtio_mmio__live(&v->t, VIRTIO_VSOCK_Q_RX)) {
		r = -ENOTCONN;
	} else if (vsock_conns__find(&v->tab, id)) {
		r = -EADDRINUSE;
	} else if (!(c = vsock_conns__new(&v->tab, id, CONN_HOST_REQ))) {
		r = -ENOSPC;
	} else {
		r = vsock_conns__ctrl(&v->tab, id, VIRTIO_VSOCK_OP_REQUEST, 0,
				      false);
		if (r)
			c->state = CONN_FREE;
		else
			vsock__flush_rx(v);
	}
	vsock__unlock(v);
	return r;
}

/* Answer a pending guest REQUEST with @op (RESPONSE or RST). */
static int vsock__answer(struct virtio_vsock *v, struct vsock_conn_id id,
			 uint16_t op)
{
	struct vsock_conn *c;
	int r;

	vsock__lock(v);
	c = vsock_conns__find(&v->tab, id);
	if (!c || c->state != CONN_GUEST_REQ) {
		r = -ENOTCONN;
	} else {
		r = vsock_conns__ctrl(&v->tab, id, op, 0,
				      op == VIRTIO_VSOCK_OP_RST);
		if (!r && op == VIRTIO_VSOCK_OP_RESPONSE)
			c->state = CONN_ESTABLISHED;
		else if (!r)
			vsock_conns__free(&v->tab, c);
		vsock__flush_rx(v);
	}
	vsock__unlock(v);
	return r;
}

int virtio_vsock__accept(struct virtio_vsock *v, struct vsock_conn_id id)
{
	return vsock__answer(v, id, VIRTIO_VSOCK_OP_RESPONSE);
}

int virtio_vsock__refuse(struct virtio_vsock *v, struct vsock_conn_id id)
{
	return vsock__answer(v, id, VIRTIO_VSOCK_OP_RST);
}

ssize_t virtio_vsock__send(struct virtio_vsock *v, struct vsock_conn_id id,
			   const void *data, size_t len)
{
	const uint8_t *src = data;
	struct vsock_conn *c;
	uint32_t n;
	size_t done = 0;
	ssize_t r = 0;

	vsock__lock(v);
	c = vsock_conns__find(&v->tab, id);
	if (!c || c->state != CONN_ESTABLISHED) {
		r = -ENOTCONN;
		goto out;
	}
	if (c->host_shutdown & VIRTIO_VSOCK_SHUTDOWN_SEND ||
	    c->peer_shutdown & VIRTIO_VSOCK_SHUTDOWN_RCV) {
		r = -EPIPE;
		goto out;
	}
	while (done < len) {
		n = vsock_conns__room(&v->tab, c);
		if (n > VIRTIO_VSOCK_MAX_PAYLOAD)
			n = VIRTIO_VSOCK_MAX_PAYLOAD;
		if (n > len - done)
			n = (uint32_t)(len - done);
		if (!n) {
			if (vsock_conns__full(&v->tab))
				v->rx_starved = true;
			break;
		}
		if (vsock_conns__data(&v->tab, c, src + done, n))
			break;
		done += n;
	}
	r = (ssize_t)done;
	vsock__flush_rx(v);
out:
	vsock__unlock(v);
	return r;
}

int virtio_vsock__consumed(struct virtio_vsock *v, struct vsock_conn_id id,
			   uint32_t n)
{
	struct vsock_conn *c;
	int r = 0;

	vsock__lock(v);
	c = vsock_conns__find(&v->tab, id);
	if (!c || c->state != CONN_ESTABLISHED) {
		r = -ENOTCONN;
	} else if (n > c->rx_cnt - c->fwd_cnt) {
		r = -EINVAL;
	} else {
		c->fwd_cnt += n;
		if (c->fwd_cnt - c->last_fwd_sent >=
		    VIRTIO_VSOCK_BUF_ALLOC / 2) {
			vsock_conns__credit_update(&v->tab, c);
			vsock__flush_rx(v);
		}
	}
	vsock__unlock(v);
	return r;
}

int virtio_vsock__shutdown(struct virtio_vsock *v, struct vsock_conn_id id,
			   uint32_t flags)
{
	const uint32_t all =
		VIRTIO_VSOCK_SHUTDOWN_RCV | VIRTIO_VSOCK_SHUTDOWN_SEND;
	struct vsock_conn *c;
	int r;

	if (!flags || flags & ~all)
		return -EINVAL;
	vsock__lock(v);
	c = vsock_conns__find(&v->tab, id);
	if (!c || c->state != CONN_ESTABLISHED) {
		r = -ENOTCONN;
	} else {
		r = vsock_conns__ctrl(&v->tab, id, VIRTIO_VSOCK_OP_SHUTDOWN,
				      c->host_shutdown | flags, false);
		if (!r)
			c->host_shutdown |= flags;
		vsock__flush_rx(v);
	}
	vsock__unlock(v);
	return r;
}

int virtio_vsock__transport_reset(struct virtio_vsock *v)
{
	unsigned int i;
	int r;

	vsock__lock(v);
	/* Undelivered data, answers and RSTs all belong to the old peers. */
	vsock_conns__drop_all(&v->tab);
	for (i = 0; i < VIRTIO_VSOCK_MAX_CONNS; i++)
		v->tab.conns[i].state = CONN_FREE;
	v->rx_starved = false;
	v->reset_owed = true;
	vsock__post_reset(v);
	r = v->reset_owed ? VSOCK_PENDING : 0;
	vsock__unlock(v);
	return r;
}

int virtio_vsock__rst(struct virtio_vsock *v, struct vsock_conn_id id)
{
	struct vsock_conn *c;
	int r = 0;

	vsock__lock(v);
	c = vsock_conns__find(&v->tab, id);
	if (!c) {
		r = -ENOTCONN;
	} else {
		vsock_conns__free(&v->tab, c);
		vsock_conns__ctrl(&v->tab, id, VIRTIO_VSOCK_OP_RST, 0, true);
		vsock__flush_rx(v);
	}
	vsock__unlock(v);
	return r;
}
