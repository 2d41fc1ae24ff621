// SPDX-License-Identifier: Apache-2.0
/* virtio network device (see virtio_net.h; virtio 1.2 spec 5.1). */
#include "virtio_net.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "le.h"

/* A frame waiting for rx buffers: header and frame, as virtio_net__rx(). */
struct net_pending {
	uint32_t len;
	uint8_t data[];
};

struct virtio_net {
	struct virtio_mmio t;
	const struct virtio_net_backend_ops *ops;
	void *backend;
	struct virtio_net_config cfg;
	bool link_up;
	struct virtio_net_stats stats;
	/* Pending rx frames: a ring of pointers, oldest at head. */
	struct net_pending *pend[VIRTIO_NET_RX_PENDING_FRAMES];
	unsigned int pend_head, pend_count;
	uint64_t pend_bytes;
	/* Work areas, ~4 KiB each: not on the event thread's stack. */
	struct virtq_chain first, chain;
	uint16_t heads[VIRTQ_MAX_SIZE];
	uint32_t lens[VIRTQ_MAX_SIZE];
	struct iovec iov[VIRTQ_MAX_SIZE + 1];
};

/* Results of delivering one frame. */
enum net_rx_result {
	RX_DONE, /* in the guest's buffers */
	RX_WAIT, /* not enough buffers yet: try again on a notify */
	RX_DROP, /* can never fit (counted), move on */
	RX_BROKEN, /* the ring is bad: DEVICE_NEEDS_RESET is set */
};

static bool net__has(const struct virtio_net *n, unsigned int bit)
{
	return virtio_mmio__feature(&n->t, bit);
}

/* The rx queue may be used (the transport's rule for notify()). */
static bool net__rx_live(const struct virtio_net *n)
{
	uint32_t need = VIRTIO_STATUS_DRIVER_OK | VIRTIO_STATUS_FEATURES_OK;
	uint32_t st = n->t.status;

	return (st & need) == need &&
	       !(st & (VIRTIO_STATUS_NEEDS_RESET | VIRTIO_STATUS_FAILED)) &&
	       n->t.vq[VIRTIO_NET_Q_RX].ready;
}

static bool net__room(const struct virtio_net *n)
{
	return n->pend_count < VIRTIO_NET_RX_PENDING_FRAMES &&
	       n->pend_bytes + VIRTIO_NET_HDR_BYTES + VIRTIO_NET_MAX_FRAME <=
		       VIRTIO_NET_RX_PENDING_BYTES;
}

static bool net__config_ok(const struct virtio_net_config *c)
{
	uint64_t o = c->offloads;

	if (o & ~VIRTIO_NET_OFFLOADS)
		return false;
	/* 5.1.3.1: TSO needs the matching checksum offload. */
	if ((o & ((1ULL << VIRTIO_NET_F_HOST_TSO4) |
		  (1ULL << VIRTIO_NET_F_HOST_TSO6))) &&
	    !(o & (1ULL << VIRTIO_NET_F_CSUM)))
		return false;
	if ((o & ((1ULL << VIRTIO_NET_F_GUEST_TSO4) |
		  (1ULL << VIRTIO_NET_F_GUEST_TSO6))) &&
	    !(o & (1ULL << VIRTIO_NET_F_GUEST_CSUM)))
		return false;
	/* The I/G bit: a group address cannot be a NIC's own. */
	return !c->has_mac || !(c->mac[0] & 1);
}

/*
 * May a header with @flags and @gso_type cross, given the checksum
 * feature @csum and the TSO features @tso4 / @tso6 of its direction?
 */
static bool net__hdr_ok(const struct virtio_net *n, const uint8_t *hdr,
			unsigned int csum, unsigned int tso4, unsigned int tso6)
{
	uint8_t flags = hdr[VIRTIO_NET_HDR_FLAGS];

	if (flags &
	    ~(VIRTIO_NET_HDR_F_NEEDS_CSUM | VIRTIO_NET_HDR_F_DATA_VALID))
		return false;
	if ((flags & VIRTIO_NET_HDR_F_NEEDS_CSUM) && !net__has(n, csum))
		return false;
	switch (hdr[VIRTIO_NET_HDR_GSO_TYPE]) {
	case VIRTIO_NET_HDR_GSO_NONE:
		return true;
	case VIRTIO_NET_HDR_GSO_TCPV4:
		return net__has(n, tso4);
	case VIRTIO_NET_HDR_GSO_TCPV6:
		return net__has(n, tso6);
	default:
		/* UDP (UFO) and ECN are never offered. */
		return false;
	}
}

/* --- receive --------------------------------------------------------- */

/*
 * Put back the chains popped since @start: they stay available for the
 * next frame (QEMU's virtqueue_rewind()).  Nothing was pushed, so the
 * driver cannot tell; an avail_event written meanwhile only asks for a
 * notification the device wants anyway.
 */
static void net__rewind(struct virtq *q, uint16_t start)
{
	q->last_avail = start;
}

/*
 * Deliver @len bytes of @pkt (header first) into the rx queue: one chain
 * without MRG_RXBUF, as many as it takes with it (num_buffers says how
 * many, 5.1.6.4).  Pushes the chains but does not interrupt.
 */
static enum net_rx_result net__deliver(struct virtio_net *n, const uint8_t *pkt,
				       uint32_t len)
{
	const struct guest_mem *m = n->t.mem;
	struct virtq *q = &n->t.vq[VIRTIO_NET_Q_RX];
	bool mrg = net__has(n, VIRTIO_NET_F_MRG_RXBUF);
	uint16_t start = q->last_avail, nbuf = 0, i;
	uint8_t hdr[VIRTIO_NET_HDR_BYTES];
	uint64_t off = 0, want;
	int r;

	while (off < len) {
		struct virtq_chain *c = nbuf ? &n->chain : &n->first;

		if (nbuf == q->size) {
			/* The whole ring cannot hold it: never will. */
			net__rewind(q, start);
			return RX_DROP;
		}
		r = virtq__pop(q, m, c);
		if (r == 0) {
			net__rewind(q, start);
			return RX_WAIT;
		}
		if (r < 0 || c->out_bytes) {
			/* 5.1.6.3.1: rx buffers are device-writable only. */
			if (r > 0 || c->head < q->size)
				virtq__push(q, m, c->head, 0);
			virtio_mmio__needs_reset(&n->t);
			return RX_BROKEN;
		}
		if (!mrg && c->in_bytes < len) {
			net__rewind(q, start);
			return RX_DROP;
		}
		want = len - off;
		if (want > c->in_bytes)
			want = c->in_bytes;
		if (virtq__write(c, m, 0, pkt + off, want) != want) {
			virtio_mmio__needs_reset(&n->t);
			return RX_BROKEN;
		}
		n->heads[nbuf] = c->head;
		n->lens[nbuf] = (uint32_t)want;
		nbuf++;
		off += want;
	}
	/*
	 * The header again, last: num_buffers (1 without MRG_RXBUF in
	 * VERSION_1) and, without GUEST_CSUM, flags 0 (5.1.6.4.1).
	 */
	memcpy(hdr, pkt, sizeof(hdr));
	if (!net__has(n, VIRTIO_NET_F_GUEST_CSUM))
		hdr[VIRTIO_NET_HDR_FLAGS] = 0;
	le__put16(hdr + VIRTIO_NET_HDR_NUM_BUFFERS, nbuf);
	if (virtq__write(&n->first, m, 0, hdr, sizeof(hdr)) != sizeof(hdr)) {
		virtio_mmio__needs_reset(&n->t);
		return RX_BROKEN;
	}
	for (i = 0; i < nbuf; i++) {
		if (virtq__push(q, m, n->heads[i], n->lens[i])) {
			virtio_mmio__needs_reset(&n->t);
			return RX_BROKEN;
		}
	}
	n->stats.rx_frames++;
	n->stats.dev.requests++;
	n->stats.dev.read_bytes += len - VIRTIO_NET_HDR_BYTES;
	return RX_DONE;
}

static void net__pend_drop_head(struct virtio_net *n)
{
	struct net_pending *p = n->pend[n->pend_head];

	n->pend_bytes -= p->len;
	free(p);
	n->pend[n->pend_head] = NULL;
	n->pend_head = (n->pend_head + 1) % VIRTIO_NET_RX_PENDING_FRAMES;
	n->pend_count--;
}

/* Drop every pending frame (counted); tell the backend if it waits. */
static void net__pend_flush(struct virtio_net *n)
{
	bool room = net__room(n);

	while (n->pend_count) {
		net__pend_drop_head(n);
		n->stats.rx_dropped++;
	}
	if (!room && n->ops->rx_ready)
		n->ops->rx_ready(n->backend);
}

/* Move pending frames into the guest's buffers, in order, and signal. */
static void net__rx_drain(struct virtio_net *n)
{
	bool room = net__room(n), pushed = false;
	enum net_rx_result r;

	while (n->pend_count && net__rx_live(n)) {
		struct net_pending *p = n->pend[n->pend_head];

		r = net__deliver(n, p->data, p->len);
		if (r == RX_WAIT || r == RX_BROKEN)
			break;
		if (r == RX_DROP) {
			n->stats.rx_errors++;
			n->stats.dev.errors++;
		} else {
			pushed = true;
		}
		net__pend_drop_head(n);
	}
	if (pushed)
		virtio_mmio__used(&n->t, VIRTIO_NET_Q_RX);
	if (!room && net__room(n) && n->ops->rx_ready)
		n->ops->rx_ready(n->backend);
}

int virtio_net__rx(struct virtio_net *n, const void *pkt, uint32_t len)
{
	struct net_pending *p;
	enum net_rx_result r;
	int ret;

	if (len <= VIRTIO_NET_HDR_BYTES ||
	    len > VIRTIO_NET_HDR_BYTES + VIRTIO_NET_MAX_FRAME) {
		pthread_mutex_lock(&n->t.dev.lock);
		n->stats.rx_errors++;
		n->stats.dev.errors++;
		pthread_mutex_unlock(&n->t.dev.lock);
		return -EINVAL;
	}
	pthread_mutex_lock(&n->t.dev.lock);
	if (!net__hdr_ok(n, pkt, VIRTIO_NET_F_GUEST_CSUM,
			 VIRTIO_NET_F_GUEST_TSO4, VIRTIO_NET_F_GUEST_TSO6)) {
		n->stats.rx_errors++;
		n->stats.dev.errors++;
		ret = -EPROTO;
		goto out;
	}
	/* Straight in when nothing waits ahead of it. */
	if (!n->pend_count && net__rx_live(n)) {
		r = net__deliver(n, pkt, len);
		if (r == RX_DONE) {
			virtio_mmio__used(&n->t, VIRTIO_NET_Q_RX);
			ret = 0;
			goto out;
		}
		if (r == RX_DROP) {
			n->stats.rx_errors++;
			n->stats.dev.errors++;
			ret = -EMSGSIZE;
			goto out;
		}
	}
	if (n->pend_count >= VIRTIO_NET_RX_PENDING_FRAMES ||
	    n->pend_bytes + len > VIRTIO_NET_RX_PENDING_BYTES) {
		n->stats.rx_dropped++;
		ret = -ENOBUFS;
		goto out;
	}
	p = malloc(sizeof(*p) + len);
	if (!p) {
		n->stats.rx_dropped++;
		ret = -ENOMEM;
		goto out;
	}
	p->len = len;
	memcpy(p->data, pkt, len);
	n->pend[(n->pend_head + n->pend_count) % VIRTIO_NET_RX_PENDING_FRAMES] =
		p;
	n->pend_count++;
	n->pend_bytes += len;
	ret = VIRTIO_NET_QUEUED;
out:
	pthread_mutex_unlock(&n->t.dev.lock);
	return ret;
}

bool virtio_net__rx_room(struct virtio_net *n)
{
	bool room;

	pthread_mutex_lock(&n->t.dev.lock);
	room = net__room(n);
	pthread_mutex_unlock(&n->t.dev.lock);
	return room;
}

/* --- transmit -------------------------------------------------------- */

static void net__tx_error(struct virtio_net *n)
{
	n->stats.tx_errors++;
	n->stats.dev.errors++;
}

/*
 * Send the frame in chain @c: the header (checked, then a copy of it
 * goes out), then the rest of the readable bytes, wherever the driver
 * split them.
 */
static int net__tx_one(struct virtio_net *n, const struct virtq_chain *c)
{
	const struct guest_mem *m = n->t.mem;
	uint8_t hdr[VIRTIO_NET_HDR_BYTES];
	uint64_t frame, skip = VIRTIO_NET_HDR_BYTES;
	unsigned int i, iovcnt = 1;
	int r;

	n->stats.dev.requests++;
	/* 5.1.6.2: a tx buffer is device-readable only. */
	if (c->in_bytes || c->out_bytes <= VIRTIO_NET_HDR_BYTES ||
	    c->out_bytes - VIRTIO_NET_HDR_BYTES > VIRTIO_NET_MAX_FRAME ||
	    virtq__read(c, m, 0, hdr, sizeof(hdr)) != sizeof(hdr)) {
		net__tx_error(n);
		return 0;
	}
	frame = c->out_bytes - VIRTIO_NET_HDR_BYTES;
	if (!net__hdr_ok(n, hdr, VIRTIO_NET_F_CSUM, VIRTIO_NET_F_HOST_TSO4,
			 VIRTIO_NET_F_HOST_TSO6) ||
	    ((hdr[VIRTIO_NET_HDR_FLAGS] & VIRTIO_NET_HDR_F_NEEDS_CSUM) &&
	     (uint64_t)le__get16(hdr + VIRTIO_NET_HDR_CSUM_START) +
			     le__get16(hdr + VIRTIO_NET_HDR_CSUM_OFFSET) + 2 >
		     frame)) {
		net__tx_error(n);
		return 0;
	}
	/*
	 * num_buffers means nothing on tx, and DATA_VALID is not the
	 * driver's to set (5.1.6.2.1): a guest does not get to vouch for
	 * its own checksums to the host's stack.
	 */
	le__put16(hdr + VIRTIO_NET_HDR_NUM_BUFFERS, 0);
	hdr[VIRTIO_NET_HDR_FLAGS] &= ~VIRTIO_NET_HDR_F_DATA_VALID;
	n->iov[0].iov_base = hdr;
	n->iov[0].iov_len = sizeof(hdr);
	for (i = 0; i < c->nr_segs; i++) {
		const struct virtq_seg *s = &c->seg[i];
		void *p;

		if (skip >= s->len) {
			skip -= s->len;
			continue;
		}
		/* Checked by the walker; checked again, it is cheap. */
		p = guest_mem__ptr(m, s->gpa + skip, s->len - skip);
		if (!p) {
			net__tx_error(n);
			return 0;
		}
		n->iov[iovcnt].iov_base = p;
		n->iov[iovcnt].iov_len = s->len - skip;
		iovcnt++;
		skip = 0;
	}
	r = n->ops->tx(n->backend, n->iov, iovcnt);
	if (r == VIRTIO_NET_TX_LATER) {
		n->stats.dev.requests--; /* counted when it goes */
		return r;
	}
	if (r < 0) {
		n->stats.tx_dropped++;
		return 0;
	}
	n->stats.tx_frames++;
	n->stats.dev.write_bytes += frame;
	return 0;
}

static void net__tx(struct virtio_net *n)
{
	struct virtq *q = &n->t.vq[VIRTIO_NET_Q_TX];
	struct virtq_chain *c = &n->chain;
	bool pushed = false;
	int r;

	uint16_t start = q->last_avail;

	while ((r = virtq__pop(q, n->t.mem, c)) > 0) {
		if (net__tx_one(n, c) == VIRTIO_NET_TX_LATER) {
			/* The backend will call virtio_net__tx_resume(). */
			net__rewind(q, start);
			r = 0;
			break;
		}
		start = q->last_avail;
		if (virtq__push(q, n->t.mem, c->head, 0)) {
			r = -EFAULT;
			break;
		}
		pushed = true;
	}
	if (r < 0) {
		net__tx_error(n);
		/* Even a broken chain goes back when its head is valid. */
		if (c->head < q->size && !virtq__push(q, n->t.mem, c->head, 0))
			pushed = true;
		virtio_mmio__needs_reset(&n->t);
	}
	if (pushed)
		virtio_mmio__used(&n->t, VIRTIO_NET_Q_TX);
}

/* --- transport ops --------------------------------------------------- */

static void virtio_net__notify(void *opaque, struct virtio_mmio *t,
			       unsigned int idx)
{
	struct virtio_net *n = opaque;

	(void)t;
	if (idx == VIRTIO_NET_Q_RX)
		net__rx_drain(n);
	else if (idx == VIRTIO_NET_Q_TX)
		net__tx(n);
}

static uint64_t virtio_net__features(void *opaque)
{
	const struct virtio_net *n = opaque;
	uint64_t f = (1ULL << VIRTIO_NET_F_MRG_RXBUF) |
		     (1ULL << VIRTIO_NET_F_STATUS) | n->cfg.offloads;

	if (n->cfg.has_mac)
		f |= 1ULL << VIRTIO_NET_F_MAC;
	return f;
}

static void virtio_net__config_read(void *opaque, uint64_t off, void *data,
				    uint32_t len)
{
	const struct virtio_net *n = opaque;
	uint8_t cfg[VIRTIO_NET_CFG_BYTES] = { 0 };

	/* Without VIRTIO_NET_F_MAC the driver picks its own: show zeroes. */
	if (n->cfg.has_mac)
		memcpy(cfg + VIRTIO_NET_CFG_MAC, n->cfg.mac, 6);
	le__put16(cfg + VIRTIO_NET_CFG_STATUS,
		  n->link_up ? VIRTIO_NET_S_LINK_UP : 0);
	virtio_mmio__config_copy(cfg, sizeof(cfg), off, data, len);
}

/* 5.1.4: mac is writable only on legacy devices; status is read-only. */
static void virtio_net__config_write(void *opaque, uint64_t off,
				     const void *data, uint32_t len)
{
	(void)opaque;
	(void)off;
	(void)data;
	(void)len;
}

/* The driver reset the device: frames for its old buffers go. */
static void virtio_net__reset(void *opaque)
{
	net__pend_flush(opaque);
}

static const struct virtio_dev_ops virtio_net_ops = {
	.name = "virtio-net",
	.device_id = VIRTIO_ID_NET,
	.nr_queues = 2,
	.features = virtio_net__features,
	.config_read = virtio_net__config_read,
	.config_write = virtio_net__config_write,
	.notify = virtio_net__notify,
	.reset = virtio_net__reset,
};

/* --- the device ------------------------------------------------------ */

struct virtio_net *virtio_net__create(const struct guest_mem *m,
				      struct irq_line irq,
				      const struct virtio_net_config *cfg,
				      const struct virtio_net_backend_ops *ops,
				      void *backend)
{
	struct virtio_net *n;

	if (!m || !cfg || !ops || !ops->tx || !net__config_ok(cfg))
		return NULL;
	n = calloc(1, sizeof(*n));
	if (!n)
		return NULL;
	if (virtio_mmio__init(&n->t, &virtio_net_ops, n, m, irq)) {
		free(n);
		return NULL;
	}
	n->ops = ops;
	n->backend = backend;
	n->cfg = *cfg;
	n->link_up = true;
	return n;
}

struct virtio_mmio *virtio_net__transport(struct virtio_net *n)
{
	return &n->t;
}

void virtio_net__destroy(struct virtio_net *n)
{
	if (!n)
		return;
	while (n->pend_count)
		net__pend_drop_head(n);
	virtio_mmio__destroy(&n->t);
	free(n);
}

void virtio_net__tx_resume(struct virtio_net *n)
{
	pthread_mutex_lock(&n->t.dev.lock);
	if (n->t.vq[VIRTIO_NET_Q_TX].ready &&
	    (n->t.status & VIRTIO_STATUS_DRIVER_OK) &&
	    !(n->t.status & VIRTIO_STATUS_NEEDS_RESET))
		net__tx(n);
	pthread_mutex_unlock(&n->t.dev.lock);
}

uint64_t virtio_net__guest_features(struct virtio_net *n)
{
	uint64_t f = 0;

	pthread_mutex_lock(&n->t.dev.lock);
	if (n->t.status & VIRTIO_STATUS_FEATURES_OK)
		f = n->t.driver_features;
	pthread_mutex_unlock(&n->t.dev.lock);
	return f;
}

void virtio_net__set_link(struct virtio_net *n, bool up)
{
	pthread_mutex_lock(&n->t.dev.lock);
	if (n->link_up != up) {
		n->link_up = up;
		if (net__has(n, VIRTIO_NET_F_STATUS))
			virtio_mmio__config_changed(&n->t);
	}
	pthread_mutex_unlock(&n->t.dev.lock);
}

void virtio_net__stats(struct virtio_net *n, struct virtio_net_stats *out)
{
	pthread_mutex_lock(&n->t.dev.lock);
	*out = n->stats;
	pthread_mutex_unlock(&n->t.dev.lock);
}

void virtio_net__get_state(struct virtio_net *n, struct virtio_net_state *s)
{
	memset(s, 0, sizeof(*s));
	pthread_mutex_lock(&n->t.dev.lock);
	memcpy(s->mac, n->cfg.mac, sizeof(s->mac));
	s->has_mac = n->cfg.has_mac;
	s->link_up = n->link_up;
	s->offloads = n->cfg.offloads;
	pthread_mutex_unlock(&n->t.dev.lock);
}

int virtio_net__set_state(struct virtio_net *n,
			  const struct virtio_net_state *s)
{
	struct virtio_net_config c = { .has_mac = s->has_mac,
				       .offloads = s->offloads };

	memcpy(c.mac, s->mac, sizeof(c.mac));
	if (!net__config_ok(&c))
		return -EINVAL;
	pthread_mutex_lock(&n->t.dev.lock);
	n->cfg = c;
	n->link_up = s->link_up;
	net__pend_flush(n);
	pthread_mutex_unlock(&n->t.dev.lock);
	return 0;
}
