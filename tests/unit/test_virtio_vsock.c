// SPDX-License-Identifier: Apache-2.0
/*
 * Unit tests for devices/virtio_vsock.c, driven through its virtio-mmio
 * transport by a small driver written here (rx, tx and event queues in
 * guest RAM) and a fake backend that records what the device reports;
 * the transport reset after a restore, into a device rebuilt from the
 * transport state of another.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../../devices/virtio_vsock.h"
#include "virtio_driver.h"

#define RAM_BYTES (2 << 20)
#define GSI	  11
#define QSZ	  64
#define Q_GPA(q)  (0x1000 + 0x3000 * (uint64_t)(q)) /* desc; avail, used */
#define TX_GPA	  0x20000 /* piece k at TX_GPA + k * TX_STRIDE */
#define TX_STRIDE 0x20000
#define RX_GPA	  0x100000 /* rx buffer of descriptor d at + d * 0x1000 */
#define RX_MAX	  0x1000
#define EV_GPA	  0x1f0000 /* event buffer of descriptor d at + d * 0x10 */

#define CID	 42
#define HDR	 VIRTIO_VSOCK_HDR_BYTES
#define MAX_EV	 1024
#define RECV_CAP (1 << 20)

enum ev_type {
	EV_CONNECT = 1,
	EV_CONNECTED,
	EV_RECV,
	EV_SHUTDOWN,
	EV_RESET,
	EV_CREDIT
};

struct ev {
	enum ev_type type;
	struct vsock_conn_id id;
	uint32_t arg; /* recv length, shutdown flags */
};

struct fixture {
	struct test_ram r; /* first: see test_ram__new_in() */
	struct virtio_vsock *v;
	struct virtio_mmio *t;
	struct vdrv_queue q[3];
	unsigned int rx_outstanding;
	uint32_t rx_size; /* size of rx buffers posted from now on */
	int connect_ret, recv_ret;
	struct ev ev[MAX_EV];
	unsigned int nr_ev;
	uint8_t recvd[RECV_CAP];
	size_t nr_recvd;
	int irq_level;
	unsigned int irq_raises; /* low -> high edges of the line */
};

/* A parsed header, as the tests see it. */
struct hdr {
	uint64_t src_cid, dst_cid;
	uint32_t src_port, dst_port, len;
	uint16_t type, op;
	uint32_t flags, buf_alloc, fwd_cnt;
};

static void fake_irq(void *opaque, unsigned int gsi, int level)
{
	struct fixture *f = opaque;

	assert_int_equal(gsi, GSI);
	if (!f)
		return;
	if (level && !f->irq_level)
		f->irq_raises++;
	f->irq_level = level;
}

static void record(void *backend, enum ev_type type, struct vsock_conn_id id,
		   uint32_t arg)
{
	struct fixture *f = backend;

	assert_true(f->nr_ev < MAX_EV);
	f->ev[f->nr_ev++] = (struct ev){ type, id, arg };
}

static int be_connect(void *backend, struct vsock_conn_id id)
{
	record(backend, EV_CONNECT, id, 0);
	return ((struct fixture *)backend)->connect_ret;
}

static void be_connected(void *backend, struct vsock_conn_id id)
{
	record(backend, EV_CONNECTED, id, 0);
}

static int be_recv(void *backend, struct vsock_conn_id id, const void *buf,
		   uint32_t len)
{
	struct fixture *f = backend;

	record(backend, EV_RECV, id, len);
	assert_true(f->nr_recvd + len <= RECV_CAP);
	memcpy(f->recvd + f->nr_recvd, buf, len);
	f->nr_recvd += len;
	return f->recv_ret;
}

static void be_shutdown(void *backend, struct vsock_conn_id id, uint32_t flags)
{
	record(backend, EV_SHUTDOWN, id, flags);
}

static void be_reset(void *backend, struct vsock_conn_id id)
{
	record(backend, EV_RESET, id, 0);
}

static void be_credit(void *backend, struct vsock_conn_id id)
{
	record(backend, EV_CREDIT, id, 0);
}

static const struct vsock_backend_ops be_ops = {
	.connect = be_connect,
	.connected = be_connected,
	.recv = be_recv,
	.shutdown = be_shutdown,
	.reset = be_reset,
	.credit = be_credit,
};

#define rd(f, off)    vdrv_rd((f)->t, off)
#define wr(f, off, v) vdrv_wr((f)->t, off, v)

/* Reset, accept every feature but EVENT_IDX, three queues, DRIVER_OK. */
static void driver_init(struct fixture *f)
{
	uint64_t feat = vdrv_device_features(f->t);
	unsigned int i;

	feat &= ~(1ULL << VIRTIO_F_EVENT_IDX);
	for (i = 0; i < 3; i++)
		vdrv_queue_init(f->r.ram, &f->q[i], QSZ, Q_GPA(i),
				Q_GPA(i) + 0x1000, Q_GPA(i) + 0x2000);
	(void)vdrv_negotiate(f->t, feat);
	for (i = 0; i < 3; i++)
		vdrv_queue_start(f->t, i, &f->q[i]);
	vdrv_driver_ok(f->t);
	f->rx_outstanding = 0;
	f->rx_size = RX_MAX;
}

static int setup(void **state)
{
	struct fixture *f = test_ram__new_in(sizeof(*f), RAM_BYTES, 0);
	struct irq_line irq = { .set = fake_irq, .gsi = GSI };

	if (!f)
		return -1;
	irq.opaque = f;
	f->v = virtio_vsock__create(&f->r.m, irq, CID, &be_ops, f);
	if (!f->v) {
		test_ram__free(&f->r);
		return -1;
	}
	f->t = virtio_vsock__transport(f->v);
	driver_init(f);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	virtio_vsock__destroy(f->v);
	return test_ram__teardown(state);
}

/* Post a chain of @n segments (gpa, len, write) on queue @qi. */
static uint16_t post(struct fixture *f, unsigned int qi, const uint64_t *gpa,
		     const uint32_t *len, bool write, unsigned int n)
{
	struct vdrv_seg s[8];
	unsigned int i;

	assert_true(n <= 8);
	for (i = 0; i < n; i++)
		s[i] = (struct vdrv_seg){ gpa[i], len[i], write };
	return vdrv_post(f->r.ram, &f->q[qi], s, n);
}

#define used_idx(f, qi) vdrv_used_idx((f)->r.ram, &(f)->q[qi])

static void build_hdr(uint8_t *b, const struct hdr *h)
{
	wr64(b, 0, h->src_cid);
	wr64(b, 8, h->dst_cid);
	wr32(b, 16, h->src_port);
	wr32(b, 20, h->dst_port);
	wr32(b, 24, h->len);
	wr16(b, 28, h->type);
	wr16(b, 30, h->op);
	wr32(b, 32, h->flags);
	wr32(b, 36, h->buf_alloc);
	wr32(b, 40, h->fwd_cnt);
}

/* A well-formed guest->host header. */
static struct hdr ghdr(uint32_t gport, uint32_t hport, uint16_t op,
		       uint32_t len)
{
	return (struct hdr){ .src_cid = CID,
			     .dst_cid = VIRTIO_VSOCK_CID_HOST,
			     .src_port = gport,
			     .dst_port = hport,
			     .len = len,
			     .type = VIRTIO_VSOCK_TYPE_STREAM,
			     .op = op,
			     .buf_alloc = 65536 };
}

/*
 * Send @h and @payload (h->len bytes, or @plen when given) on tx, cut at
 * the @ncuts offsets @cuts into separate descriptors in separate places.
 */
static void tx_cut(struct fixture *f, const struct hdr *h,
		   const uint8_t *payload, uint32_t plen, const uint32_t *cuts,
		   unsigned int ncuts)
{
	static uint8_t pkt[HDR + VIRTIO_VSOCK_MAX_PAYLOAD + 64];
	uint64_t gpa[8];
	uint32_t len[8], start = 0, end, total = HDR + plen;
	unsigned int i;
	uint16_t used;

	assert_true(ncuts < 8 && total <= sizeof(pkt));
	build_hdr(pkt, h);
	if (plen)
		memcpy(pkt + HDR, payload, plen);
	for (i = 0; i <= ncuts; i++) {
		end = i < ncuts ? cuts[i] : total;
		assert_true(end > start && end - start <= TX_STRIDE);
		gpa[i] = TX_GPA + TX_STRIDE * (uint64_t)i + 8 * i;
		len[i] = end - start;
		memcpy(f->r.ram + gpa[i], pkt + start, len[i]);
		start = end;
	}
	used = used_idx(f, VIRTIO_VSOCK_Q_TX);
	post(f, VIRTIO_VSOCK_Q_TX, gpa, len, false, ncuts + 1);
	wr(f, QUEUE_NOTIFY, VIRTIO_VSOCK_Q_TX);
	/* Every tx chain comes back at once, good or bad. */
	assert_int_equal((uint16_t)(used_idx(f, VIRTIO_VSOCK_Q_TX) - used), 1);
	f->q[VIRTIO_VSOCK_Q_TX].used_seen++;
}

static void tx(struct fixture *f, const struct hdr *h, const void *payload)
{
	tx_cut(f, h, payload, h->len, NULL, 0);
}

static void tx_op(struct fixture *f, uint32_t gport, uint32_t hport,
		  uint16_t op, uint32_t flags)
{
	struct hdr h = ghdr(gport, hport, op, 0);

	h.flags = flags;
	tx(f, &h, NULL);
}

/* Post one rx buffer of f->rx_size bytes (the device may use it now). */
static void rx_post(struct fixture *f)
{
	struct vdrv_queue *q = &f->q[VIRTIO_VSOCK_Q_RX];
	uint64_t gpa;
	uint16_t d;

	if (q->next_desc + 1 > QSZ)
		q->next_desc = 0;
	d = q->next_desc;
	gpa = RX_GPA + 0x1000 * (uint64_t)d;
	post(f, VIRTIO_VSOCK_Q_RX, &gpa, &f->rx_size, true, 1);
	f->rx_outstanding++;
}

/*
 * The next packet the device put on rx (posting a buffer and notifying
 * when none is waiting).  Returns false when there is none; else fills
 * @h and copies the payload to @payload (when not NULL).
 */
static bool rx_get(struct fixture *f, struct hdr *h, uint8_t *payload)
{
	struct vdrv_queue *q = &f->q[VIRTIO_VSOCK_Q_RX];
	uint64_t e, gpa;
	uint32_t id, len;
	const uint8_t *b;

	if (used_idx(f, VIRTIO_VSOCK_Q_RX) == q->used_seen) {
		if (!f->rx_outstanding)
			rx_post(f);
		wr(f, QUEUE_NOTIFY, VIRTIO_VSOCK_Q_RX);
		if (used_idx(f, VIRTIO_VSOCK_Q_RX) == q->used_seen)
			return false;
	}
	e = vdrv_used_elem(q);
	q->used_seen++;
	f->rx_outstanding--;
	id = rd32(f->r.ram, e);
	len = rd32(f->r.ram, e + 4);
	assert_true(id < QSZ);
	assert_true(len >= HDR);
	gpa = RX_GPA + 0x1000 * (uint64_t)id;
	b = f->r.ram + gpa;
	h->src_cid = rd64(b, 0);
	h->dst_cid = rd64(b, 8);
	h->src_port = rd32(b, 16);
	h->dst_port = rd32(b, 20);
	h->len = rd32(b, 24);
	h->type = rd16(b, 28);
	h->op = rd16(b, 30);
	h->flags = rd32(b, 32);
	h->buf_alloc = rd32(b, 36);
	h->fwd_cnt = rd32(b, 40);
	assert_int_equal(len, HDR + h->len);
	assert_int_equal(h->src_cid, VIRTIO_VSOCK_CID_HOST);
	assert_int_equal(h->dst_cid, CID);
	assert_int_equal(h->type, VIRTIO_VSOCK_TYPE_STREAM);
	if (payload)
		memcpy(payload, b + HDR, h->len);
	return true;
}

/* Expect the next rx packet to be @op for (@gport, @hport). */
static struct hdr rx_expect(struct fixture *f, uint16_t op, uint32_t gport,
			    uint32_t hport)
{
	struct hdr h;

	assert_true(rx_get(f, &h, NULL));
	assert_int_equal(h.op, op);
	assert_int_equal(h.dst_port, gport);
	assert_int_equal(h.src_port, hport);
	return h;
}

static void rx_none(struct fixture *f)
{
	struct hdr h;

	assert_false(rx_get(f, &h, NULL));
}

static struct ev *ev_last(struct fixture *f, enum ev_type type)
{
	assert_true(f->nr_ev > 0);
	assert_int_equal(f->ev[f->nr_ev - 1].type, type);
	return &f->ev[f->nr_ev - 1];
}

static struct vsock_conn_id cid(uint32_t gport, uint32_t hport)
{
	return (struct vsock_conn_id){ .guest_port = gport,
				       .host_port = hport };
}

/* Guest connects (gport -> hport), backend accepts at once. */
static void establish(struct fixture *f, uint32_t gport, uint32_t hport)
{
	struct hdr h;

	f->connect_ret = 0;
	tx_op(f, gport, hport, VIRTIO_VSOCK_OP_REQUEST, 0);
	assert_int_equal(ev_last(f, EV_CONNECT)->id.guest_port, gport);
	h = rx_expect(f, VIRTIO_VSOCK_OP_RESPONSE, gport, hport);
	assert_int_equal(h.buf_alloc, VIRTIO_VSOCK_BUF_ALLOC);
	assert_int_equal(h.fwd_cnt, 0);
}

static void test_identity_and_config(void **state)
{
	struct fixture *f = *state;
	uint64_t v64 = 0;
	uint8_t b[4];

	assert_int_equal(rd(f, DEVICE_ID), 19);
	assert_true(vdrv_device_features(f->t) &
		    (1ULL << VIRTIO_VSOCK_F_STREAM));
	assert_int_equal(rd(f, VIRTIO_MMIO_CONFIG), CID);
	assert_int_equal(rd(f, VIRTIO_MMIO_CONFIG + 4), 0);
	f->t->dev.ops->read(&f->t->dev, VIRTIO_MMIO_CONFIG, &v64, 8);
	assert_int_equal(le64toh(v64), CID);
	memset(b, 0xee, sizeof(b));
	f->t->dev.ops->read(&f->t->dev, VIRTIO_MMIO_CONFIG + 6, b, 4);
	assert_int_equal(rd32(b, 0), 0);
	wr(f, VIRTIO_MMIO_CONFIG, 7); /* read-only */
	assert_int_equal(rd(f, VIRTIO_MMIO_CONFIG), CID);
}

static void test_create_args(void **state)
{
	struct test_ram *r = test_ram__new(4096, 0);
	struct irq_line irq = { .set = fake_irq, .gsi = GSI };
	struct vsock_backend_ops no_recv = be_ops;

	(void)state;
	assert_non_null(r);
	no_recv.recv = NULL;
	assert_null(virtio_vsock__create(NULL, irq, CID, &be_ops, NULL));
	assert_null(virtio_vsock__create(&r->m, irq, CID, NULL, NULL));
	assert_null(virtio_vsock__create(&r->m, irq, CID, &no_recv, NULL));
	assert_null(virtio_vsock__create(&r->m, irq, 2, &be_ops, NULL));
	assert_null(
		virtio_vsock__create(&r->m, irq, 1ULL << 32, &be_ops, NULL));
	virtio_vsock__destroy(NULL);
	test_ram__free(r);
}

static void test_guest_connect(void **state)
{
	struct fixture *f = *state;

	rx_none(f);
	establish(f, 1234, 5000);
	assert_int_equal(f->ev[0].type, EV_CONNECT);
	assert_int_equal(f->ev[0].id.host_port, 5000);
	/* Pending answers: accept one, refuse another. */
	f->connect_ret = VSOCK_PENDING;
	tx_op(f, 1235, 5000, VIRTIO_VSOCK_OP_REQUEST, 0);
	tx_op(f, 1236, 6000, VIRTIO_VSOCK_OP_REQUEST, 0);
	rx_none(f);
	assert_int_equal(virtio_vsock__accept(f->v, cid(1235, 5000)), 0);
	rx_expect(f, VIRTIO_VSOCK_OP_RESPONSE, 1235, 5000);
	assert_int_equal(virtio_vsock__refuse(f->v, cid(1236, 6000)), 0);
	rx_expect(f, VIRTIO_VSOCK_OP_RST, 1236, 6000);
	assert_int_equal(virtio_vsock__accept(f->v, cid(1236, 6000)),
			 -ENOTCONN);
	assert_int_equal(virtio_vsock__accept(f->v, cid(1235, 5000)),
			 -ENOTCONN);
	rx_none(f);
}

static void test_refused_port(void **state)
{
	struct fixture *f = *state;
	unsigned int n;

	f->connect_ret = -ECONNREFUSED;
	tx_op(f, 77, 9999, VIRTIO_VSOCK_OP_REQUEST, 0);
	rx_expect(f, VIRTIO_VSOCK_OP_RST, 77, 9999);
	/* The connection is forgotten: data on it is answered with RST. */
	n = f->nr_ev;
	tx_op(f, 77, 9999, VIRTIO_VSOCK_OP_CREDIT_REQUEST, 0);
	rx_expect(f, VIRTIO_VSOCK_OP_RST, 77, 9999);
	assert_int_equal(f->nr_ev, n);
	/* An RST for nobody is not answered. */
	tx_op(f, 77, 9999, VIRTIO_VSOCK_OP_RST, 0);
	rx_none(f);
}

static void test_data_layouts(void **state)
{
	struct fixture *f = *state;
	static uint8_t data[4000];
	struct hdr h = ghdr(1000, 2000, VIRTIO_VSOCK_OP_RW, 0);
	const uint32_t two[] = { HDR };
	const uint32_t three[] = { HDR, HDR + 1000 };
	const uint32_t odd[] = { 20, HDR + 7, HDR + 300 };
	unsigned int i;

	for (i = 0; i < sizeof(data); i++)
		data[i] = (uint8_t)(i * 31 + 7);
	establish(f, 1000, 2000);
	h.len = 100; /* header and payload in one descriptor */
	tx(f, &h, data);
	h.len = 1500; /* split in two */
	tx_cut(f, &h, data + 100, h.len, two, 1);
	h.len = 2000; /* payload over two more */
	tx_cut(f, &h, data + 1600, h.len, three, 2);
	h.len = 400; /* the header itself cut too, four pieces */
	tx_cut(f, &h, data + 3600, h.len, odd, 3);
	assert_int_equal(f->nr_recvd, 4000);
	assert_memory_equal(f->recvd, data, 4000);
	/* More readable bytes than len: the rest is ignored. */
	f->nr_recvd = 0;
	h.len = 10;
	tx_cut(f, &h, data, 50, NULL, 0);
	assert_int_equal(f->nr_recvd, 10);
	assert_int_equal(ev_last(f, EV_RECV)->arg, 10);
	/* Zero-length RW: nothing for the backend. */
	i = f->nr_ev;
	h.len = 0;
	tx(f, &h, NULL);
	assert_int_equal(f->nr_ev, i);
	rx_none(f);
}

static void test_host_send_credit(void **state)
{
	struct fixture *f = *state;
	struct vsock_conn_id id = cid(10, 20);
	static uint8_t data[3000], got[3000];
	struct hdr h;
	unsigned int i, n;

	for (i = 0; i < sizeof(data); i++)
		data[i] = (uint8_t)(i ^ 0x5a);
	/* The guest's REQUEST advertises 1000 bytes of buffer. */
	h = ghdr(10, 20, VIRTIO_VSOCK_OP_REQUEST, 0);
	h.buf_alloc = 1000;
	tx(f, &h, NULL);
	rx_expect(f, VIRTIO_VSOCK_OP_RESPONSE, 10, 20);
	assert_int_equal(virtio_vsock__send(f->v, id, data, 600), 600);
	assert_int_equal(virtio_vsock__send(f->v, id, data + 600, 600), 400);
	assert_int_equal(virtio_vsock__send(f->v, id, data, 1), 0);
	assert_true(rx_get(f, &h, got));
	assert_int_equal(h.op, VIRTIO_VSOCK_OP_RW);
	assert_int_equal(h.len, 600);
	assert_int_equal(h.buf_alloc, VIRTIO_VSOCK_BUF_ALLOC);
	assert_true(rx_get(f, &h, got + 600));
	assert_int_equal(h.len, 400);
	assert_memory_equal(got, data, 1000);
	/* The guest read 700: credit for exactly 700 more. */
	h = ghdr(10, 20, VIRTIO_VSOCK_OP_CREDIT_UPDATE, 0);
	h.buf_alloc = 1000;
	h.fwd_cnt = 700;
	n = f->nr_ev;
	tx(f, &h, NULL);
	assert_int_equal(f->nr_ev, n + 1);
	assert_int_equal(ev_last(f, EV_CREDIT)->id.host_port, 20);
	assert_int_equal(virtio_vsock__send(f->v, id, data + 1000, 2000), 700);
	/* Rx buffers of 44 + 100 bytes: the 700 arrive in 7 pieces. */
	f->rx_size = HDR + 100;
	for (i = 0; i < 7; i++) {
		assert_true(rx_get(f, &h, got + 1000 + 100 * i));
		assert_int_equal(h.op, VIRTIO_VSOCK_OP_RW);
		assert_int_equal(h.len, 100);
	}
	assert_memory_equal(got + 1000, data + 1000, 700);
	rx_none(f);
	/* A bigger buffer on the guest side: more credit. */
	h = ghdr(10, 20, VIRTIO_VSOCK_OP_CREDIT_UPDATE, 0);
	h.buf_alloc = 5000;
	h.fwd_cnt = 1700;
	tx(f, &h, NULL);
	assert_int_equal(virtio_vsock__send(f->v, id, data, 3000), 3000);
	assert_int_equal(virtio_vsock__send(f->v, id, data, 3000), 2000);
	/* Unknown connection. */
	assert_int_equal(virtio_vsock__send(f->v, cid(10, 21), data, 1),
			 -ENOTCONN);
}

static void test_credit_request_and_update(void **state)
{
	struct fixture *f = *state;
	struct vsock_conn_id id = cid(3000, 4000);
	static uint8_t data[VIRTIO_VSOCK_MAX_PAYLOAD];
	struct hdr h = ghdr(3000, 4000, VIRTIO_VSOCK_OP_RW, 200);
	unsigned int i;

	establish(f, 3000, 4000);
	tx(f, &h, data);
	assert_int_equal(virtio_vsock__consumed(f->v, id, 150), 0);
	rx_none(f); /* not enough for an update on its own */
	tx_op(f, 3000, 4000, VIRTIO_VSOCK_OP_CREDIT_REQUEST, 0);
	h = rx_expect(f, VIRTIO_VSOCK_OP_CREDIT_UPDATE, 3000, 4000);
	assert_int_equal(h.buf_alloc, VIRTIO_VSOCK_BUF_ALLOC);
	assert_int_equal(h.fwd_cnt, 150);
	assert_int_equal(virtio_vsock__consumed(f->v, id, 51), -EINVAL);
	assert_int_equal(virtio_vsock__consumed(f->v, id, 50), 0);
	assert_int_equal(virtio_vsock__consumed(f->v, cid(1, 1), 1), -ENOTCONN);
	/* Half the buffer consumed: an update without asking. */
	h = ghdr(3000, 4000, VIRTIO_VSOCK_OP_RW, VIRTIO_VSOCK_MAX_PAYLOAD);
	for (i = 0; i < 2; i++)
		tx(f, &h, data);
	assert_int_equal(virtio_vsock__consumed(f->v, id, 2 * h.len), 0);
	h = rx_expect(f, VIRTIO_VSOCK_OP_CREDIT_UPDATE, 3000, 4000);
	assert_int_equal(h.fwd_cnt, 200 + 2 * VIRTIO_VSOCK_MAX_PAYLOAD);
	rx_none(f);
	/* Past the credit given: RST, and the backend hears reset. */
	h = ghdr(3000, 4000, VIRTIO_VSOCK_OP_RW, VIRTIO_VSOCK_MAX_PAYLOAD);
	for (i = 0; i < 4; i++)
		tx(f, &h, data);
	assert_int_equal(ev_last(f, EV_RECV)->arg, VIRTIO_VSOCK_MAX_PAYLOAD);
	tx(f, &h, data);
	assert_int_equal(ev_last(f, EV_RESET)->id.guest_port, 3000);
	rx_expect(f, VIRTIO_VSOCK_OP_RST, 3000, 4000);
}

static void test_shutdown_both_ways(void **state)
{
	struct fixture *f = *state;
	struct vsock_conn_id a = cid(50, 60), b = cid(51, 60);
	struct hdr h;
	uint8_t x = 1;

	establish(f, 50, 60);
	establish(f, 51, 60);
	/* Guest stops sending on a. */
	tx_op(f, 50, 60, VIRTIO_VSOCK_OP_SHUTDOWN, VIRTIO_VSOCK_SHUTDOWN_SEND);
	assert_int_equal(ev_last(f, EV_SHUTDOWN)->arg,
			 VIRTIO_VSOCK_SHUTDOWN_SEND);
	assert_int_equal(virtio_vsock__send(f->v, a, &x, 1), 1);
	rx_expect(f, VIRTIO_VSOCK_OP_RW, 50, 60);
	tx_op(f, 50, 60, VIRTIO_VSOCK_OP_SHUTDOWN, VIRTIO_VSOCK_SHUTDOWN_RCV);
	assert_int_equal(ev_last(f, EV_SHUTDOWN)->arg,
			 VIRTIO_VSOCK_SHUTDOWN_SEND |
				 VIRTIO_VSOCK_SHUTDOWN_RCV);
	assert_int_equal(virtio_vsock__send(f->v, a, &x, 1), -EPIPE);
	/* The backend then closes with RST. */
	assert_int_equal(virtio_vsock__rst(f->v, a), 0);
	rx_expect(f, VIRTIO_VSOCK_OP_RST, 50, 60);
	assert_int_equal(virtio_vsock__rst(f->v, a), -ENOTCONN);
	/* Host stops sending on b. */
	assert_int_equal(virtio_vsock__shutdown(f->v, b, 0), -EINVAL);
	assert_int_equal(virtio_vsock__shutdown(f->v, b, 4), -EINVAL);
	assert_int_equal(
		virtio_vsock__shutdown(f->v, b, VIRTIO_VSOCK_SHUTDOWN_SEND), 0);
	h = rx_expect(f, VIRTIO_VSOCK_OP_SHUTDOWN, 51, 60);
	assert_int_equal(h.flags, VIRTIO_VSOCK_SHUTDOWN_SEND);
	assert_int_equal(virtio_vsock__send(f->v, b, &x, 1), -EPIPE);
	/* The guest may still send; then it resets. */
	h = ghdr(51, 60, VIRTIO_VSOCK_OP_RW, 1);
	tx(f, &h, &x);
	assert_int_equal(ev_last(f, EV_RECV)->arg, 1);
	tx_op(f, 51, 60, VIRTIO_VSOCK_OP_RST, 0);
	assert_int_equal(ev_last(f, EV_RESET)->id.guest_port, 51);
	rx_none(f);
	assert_int_equal(virtio_vsock__shutdown(f->v, b, 1), -ENOTCONN);
}

static void test_malformed(void **state)
{
	struct fixture *f = *state;
	static uint8_t data[VIRTIO_VSOCK_MAX_PAYLOAD + 8];
	struct hdr h;
	uint64_t gpa = TX_GPA;
	uint32_t len = 20;
	unsigned int n = f->nr_ev;

	/* Bad type. */
	h = ghdr(5, 6, VIRTIO_VSOCK_OP_REQUEST, 0);
	h.type = 2;
	tx(f, &h, NULL);
	rx_expect(f, VIRTIO_VSOCK_OP_RST, 5, 6);
	/* Wrong source CID, wrong destination CID. */
	h = ghdr(5, 6, VIRTIO_VSOCK_OP_REQUEST, 0);
	h.src_cid = CID + 1;
	tx(f, &h, NULL);
	rx_expect(f, VIRTIO_VSOCK_OP_RST, 5, 6);
	h = ghdr(5, 6, VIRTIO_VSOCK_OP_REQUEST, 0);
	h.dst_cid = 3;
	tx(f, &h, NULL);
	rx_expect(f, VIRTIO_VSOCK_OP_RST, 5, 6);
	/* len past the chain, len past the maximum. */
	h = ghdr(5, 6, VIRTIO_VSOCK_OP_RW, 100);
	tx_cut(f, &h, data, 99, NULL, 0);
	rx_expect(f, VIRTIO_VSOCK_OP_RST, 5, 6);
	h.len = 0xffffffff;
	tx_cut(f, &h, data, 10, NULL, 0);
	rx_expect(f, VIRTIO_VSOCK_OP_RST, 5, 6);
	h.len = VIRTIO_VSOCK_MAX_PAYLOAD + 1;
	tx_cut(f, &h, data, h.len, NULL, 0);
	rx_expect(f, VIRTIO_VSOCK_OP_RST, 5, 6);
	/* Unknown op. */
	tx_op(f, 5, 6, 99, 0);
	rx_expect(f, VIRTIO_VSOCK_OP_RST, 5, 6);
	/* No backend call for any of those. */
	assert_int_equal(f->nr_ev, n);
	/* Too short for a header: consumed, not answered. */
	post(f, VIRTIO_VSOCK_Q_TX, &gpa, &len, false, 1);
	wr(f, QUEUE_NOTIFY, VIRTIO_VSOCK_Q_TX);
	assert_int_equal(used_idx(f, VIRTIO_VSOCK_Q_TX),
			 ++f->q[VIRTIO_VSOCK_Q_TX].used_seen);
	rx_none(f);
	/* A bad packet on a live connection resets it. */
	establish(f, 8, 9);
	h = ghdr(8, 9, VIRTIO_VSOCK_OP_RW, 500);
	tx_cut(f, &h, data, 10, NULL, 0);
	assert_int_equal(ev_last(f, EV_RESET)->id.guest_port, 8);
	rx_expect(f, VIRTIO_VSOCK_OP_RST, 8, 9);
	/* A second REQUEST on a live one too. */
	establish(f, 8, 9);
	tx_op(f, 8, 9, VIRTIO_VSOCK_OP_REQUEST, 0);
	assert_int_equal(ev_last(f, EV_RESET)->id.guest_port, 8);
	rx_expect(f, VIRTIO_VSOCK_OP_RST, 8, 9);
	/* And the device still works. */
	establish(f, 8, 9);
	rx_none(f);
	assert_int_equal(rd(f, STATUS) & VIRTIO_STATUS_NEEDS_RESET, 0);
}

static void test_host_connect(void **state)
{
	struct fixture *f = *state;
	struct vsock_conn_id id = cid(52, 1024);
	struct hdr h;
	uint8_t x = 9;

	assert_int_equal(virtio_vsock__connect(f->v, 1024, 52), 0);
	assert_int_equal(virtio_vsock__connect(f->v, 1024, 52), -EADDRINUSE);
	assert_int_equal(virtio_vsock__send(f->v, id, &x, 1), -ENOTCONN);
	h = rx_expect(f, VIRTIO_VSOCK_OP_REQUEST, 52, 1024);
	assert_int_equal(h.buf_alloc, VIRTIO_VSOCK_BUF_ALLOC);
	h = ghdr(52, 1024, VIRTIO_VSOCK_OP_RESPONSE, 0);
	h.buf_alloc = 10;
	tx(f, &h, NULL);
	assert_int_equal(ev_last(f, EV_CONNECTED)->id.host_port, 1024);
	assert_int_equal(virtio_vsock__send(f->v, id, "0123456789abc", 13), 10);
	assert_true(rx_get(f, &h, NULL));
	assert_int_equal(h.len, 10);
	tx_op(f, 52, 1024, VIRTIO_VSOCK_OP_RST, 0);
	assert_int_equal(ev_last(f, EV_RESET)->id.host_port, 1024);
	/* The guest refuses one. */
	assert_int_equal(virtio_vsock__connect(f->v, 1025, 53), 0);
	rx_expect(f, VIRTIO_VSOCK_OP_REQUEST, 53, 1025);
	tx_op(f, 53, 1025, VIRTIO_VSOCK_OP_RST, 0);
	assert_int_equal(ev_last(f, EV_RESET)->id.host_port, 1025);
	rx_none(f);
	/* Not while the driver has the device down. */
	wr(f, STATUS, 0);
	assert_int_equal(virtio_vsock__connect(f->v, 1026, 54), -ENOTCONN);
}

static void test_many_connections(void **state)
{
	struct fixture *f = *state;
	struct hdr h;
	uint32_t i, x;

	for (i = 0; i < VIRTIO_VSOCK_MAX_CONNS; i++)
		establish(f, 10000 + i, 80);
	/* The table is full: RST, no backend call. */
	x = f->nr_ev;
	tx_op(f, 20000, 80, VIRTIO_VSOCK_OP_REQUEST, 0);
	rx_expect(f, VIRTIO_VSOCK_OP_RST, 20000, 80);
	assert_int_equal(f->nr_ev, x);
	/* Data on each, in reverse order, lands on the right one. */
	for (i = VIRTIO_VSOCK_MAX_CONNS; i-- > 0;) {
		h = ghdr(10000 + i, 80, VIRTIO_VSOCK_OP_RW, 4);
		x = htole32(i);
		tx(f, &h, &x);
		assert_int_equal(ev_last(f, EV_RECV)->id.guest_port, 10000 + i);
		assert_int_equal(rd32(f->recvd + f->nr_recvd - 4, 0), i);
	}
	/* Host sends on all before the guest posts any buffer. */
	for (i = 0; i < VIRTIO_VSOCK_MAX_CONNS; i++) {
		x = htole32(i * 3);
		assert_int_equal(
			virtio_vsock__send(f->v, cid(10000 + i, 80), &x, 4), 4);
	}
	for (i = 0; i < VIRTIO_VSOCK_MAX_CONNS; i++) {
		uint8_t p[4];

		assert_true(rx_get(f, &h, p));
		assert_int_equal(h.op, VIRTIO_VSOCK_OP_RW);
		assert_int_equal(h.dst_port, 10000 + i);
		assert_int_equal(rd32(p, 0), i * 3);
	}
	rx_none(f);
	/* Reset by the driver: the backend hears every one go. */
	x = f->nr_ev;
	wr(f, STATUS, 0);
	assert_int_equal(f->nr_ev, x + VIRTIO_VSOCK_MAX_CONNS);
	assert_int_equal(ev_last(f, EV_RESET)->id.host_port, 80);
}

static void test_tx_backpressure(void **state)
{
	struct fixture *f = *state;
	uint8_t b[HDR];
	struct hdr h = ghdr(1, 2, VIRTIO_VSOCK_OP_CREDIT_REQUEST, 0);
	uint64_t gpa = TX_GPA;
	uint32_t len = HDR, i;
	uint16_t used;

	/* No rx buffers: each packet for nobody leaves an RST waiting. */
	for (i = 0; i < VIRTIO_VSOCK_PENDING_CTRL - 1; i++)
		tx_op(f, 1000 + i, 2, VIRTIO_VSOCK_OP_CREDIT_REQUEST, 0);
	/* The next one waits on the tx ring until rx has room. */
	h.src_port = 5000;
	build_hdr(b, &h);
	memcpy(f->r.ram + gpa, b, HDR);
	used = used_idx(f, VIRTIO_VSOCK_Q_TX);
	post(f, VIRTIO_VSOCK_Q_TX, &gpa, &len, false, 1);
	wr(f, QUEUE_NOTIFY, VIRTIO_VSOCK_Q_TX);
	assert_int_equal(used_idx(f, VIRTIO_VSOCK_Q_TX), used);
	rx_expect(f, VIRTIO_VSOCK_OP_RST, 1000, 2);
	assert_int_equal(used_idx(f, VIRTIO_VSOCK_Q_TX), (uint16_t)(used + 1));
	f->q[VIRTIO_VSOCK_Q_TX].used_seen++;
	for (i = 1; i < VIRTIO_VSOCK_PENDING_CTRL - 1; i++)
		rx_expect(f, VIRTIO_VSOCK_OP_RST, 1000 + i, 2);
	rx_expect(f, VIRTIO_VSOCK_OP_RST, 5000, 2);
	rx_none(f);
}

/*
 * A send() cut short by the device's own pending queue (the guest has
 * credit but posts no rx buffers) hears credit() once the guest takes
 * packets, else the host side would wait for credit that never changes.
 */
static void test_full_queue_resumes(void **state)
{
	struct fixture *f = *state;
	struct vsock_conn_id id = cid(30, 40);
	static uint8_t data[VIRTIO_VSOCK_PENDING_BYTES + 4096];
	struct hdr h = ghdr(30, 40, VIRTIO_VSOCK_OP_REQUEST, 0);
	unsigned int n;

	h.buf_alloc = 64U << 20;
	tx(f, &h, NULL);
	rx_expect(f, VIRTIO_VSOCK_OP_RESPONSE, 30, 40);
	assert_int_equal(virtio_vsock__send(f->v, id, data, sizeof(data)),
			 VIRTIO_VSOCK_PENDING_BYTES);
	assert_int_equal(virtio_vsock__send(f->v, id, data, 1), 0);
	n = f->nr_ev;
	assert_true(rx_get(f, &h, NULL));
	assert_int_equal(h.op, VIRTIO_VSOCK_OP_RW);
	assert_int_equal(f->nr_ev, n + 1);
	assert_int_equal(ev_last(f, EV_CREDIT)->id.host_port, 40);
	/* One 4 KiB rx buffer made room for 4 KiB less a header. */
	assert_int_equal(virtio_vsock__send(f->v, id, data, 1000), 1000);
	/* Once: no further credit() while nothing was refused. */
	assert_true(rx_get(f, &h, NULL));
	assert_int_equal(f->nr_ev, n + 1);
}

/* ---- transport reset ---------------------------------------------------- */

/* Post one event buffer of @len bytes (poisoned); returns its head. */
static uint16_t ev_post(struct fixture *f, uint32_t len)
{
	struct vdrv_queue *q = &f->q[VIRTIO_VSOCK_Q_EVENT];
	uint64_t gpa;

	if (q->next_desc + 1 > QSZ)
		q->next_desc = 0;
	gpa = EV_GPA + 0x10 * (uint64_t)q->next_desc;
	memset(f->r.ram + gpa, 0xee, 0x10);
	return post(f, VIRTIO_VSOCK_Q_EVENT, &gpa, &len, true, 1);
}

#define ev_used(f) used_idx(f, VIRTIO_VSOCK_Q_EVENT)

/*
 * The driver handled a transport reset as Linux does: its event buffer
 * refilled and the event queue notified.  Until then rx waits.
 */
static void ev_ack(struct fixture *f)
{
	ev_post(f, 4);
	wr(f, QUEUE_NOTIFY, VIRTIO_VSOCK_Q_EVENT);
}

/* The next used event buffer is @head, holding exactly a transport reset. */
static void ev_expect_reset(struct fixture *f, uint16_t head)
{
	const uint64_t gpa = EV_GPA + 0x10 * (uint64_t)head;

	assert_int_equal(
		vdrv_take_used(f->r.ram, &f->q[VIRTIO_VSOCK_Q_EVENT], head),
		VIRTIO_VSOCK_EVENT_BYTES);
	assert_int_equal(rd32(f->r.ram, gpa),
			 VIRTIO_VSOCK_EVENT_TRANSPORT_RESET);
	assert_int_equal(rd32(f->r.ram, gpa + 4), 0xeeeeeeee);
}

/* Acknowledge every interrupt: the line goes low. */
static void irq_ack(struct fixture *f)
{
	wr(f, INT_ACK, rd(f, INT_STATUS));
	assert_int_equal(f->irq_level, 0);
}

/*
 * The event goes into the first posted event buffer (no notify needed),
 * the used ring and the interrupt say so; every connection and its
 * undelivered data is gone without backend ops; old packets get RST; new
 * connections work, on the same ports too; a second reset takes the next
 * buffer.
 */
static void test_transport_reset(void **state)
{
	struct fixture *f = *state;
	struct vsock_conn_id a = cid(100, 200), b = cid(101, 201);
	struct hdr h = ghdr(100, 200, VIRTIO_VSOCK_OP_RW, 3);
	uint8_t got[8];
	unsigned int n, raises;
	uint16_t h1, h2;

	establish(f, 100, 200);
	establish(f, 101, 201);
	assert_int_equal(f->rx_outstanding, 0);
	assert_int_equal(virtio_vsock__send(f->v, b, "data", 4), 4);
	h1 = ev_post(f, 16);
	h2 = ev_post(f, 4);
	irq_ack(f);
	n = f->nr_ev;
	raises = f->irq_raises;
	assert_int_equal(virtio_vsock__transport_reset(f->v), 0);
	ev_expect_reset(f, h1);
	assert_int_equal(ev_used(f), 1); /* h2 stays with the device */
	assert_int_equal(rd(f, INT_STATUS), VIRTIO_MMIO_INT_VRING);
	assert_int_equal(f->irq_raises, raises + 1);
	assert_int_equal(f->nr_ev, n);
	assert_int_equal(virtio_vsock__send(f->v, a, "x", 1), -ENOTCONN);
	assert_int_equal(virtio_vsock__consumed(f->v, b, 0), -ENOTCONN);
	assert_int_equal(virtio_vsock__rst(f->v, b), -ENOTCONN);
	rx_none(f); /* b's data went with it */
	tx(f, &h, "old");
	/* Held until the driver handled the reset, which would tear down
	 * anything delivered before. */
	rx_none(f);
	ev_ack(f);
	rx_expect(f, VIRTIO_VSOCK_OP_RST, 100, 200);
	assert_int_equal(f->nr_ev, n);
	establish(f, 100, 200);
	assert_int_equal(virtio_vsock__send(f->v, a, "new", 3), 3);
	assert_true(rx_get(f, &h, got));
	assert_int_equal(h.op, VIRTIO_VSOCK_OP_RW);
	assert_int_equal(h.len, 3);
	assert_memory_equal(got, "new", 3);
	assert_int_equal(virtio_vsock__connect(f->v, 201, 101), 0);
	rx_expect(f, VIRTIO_VSOCK_OP_REQUEST, 101, 201);
	assert_int_equal(virtio_vsock__transport_reset(f->v), 0);
	ev_expect_reset(f, h2);
	assert_int_equal(virtio_vsock__connect(f->v, 201, 101), 0);
}

/*
 * No event buffer: the reset is owed, and goes out when the driver posts
 * one and notifies (a buffer too small for it goes back empty), or with
 * the next rx delivery, ahead of that packet; it is sent once.  A device
 * reset by the driver cancels an owed one.
 */
static void test_transport_reset_deferred(void **state)
{
	struct fixture *f = *state;
	unsigned int raises;
	uint16_t h1, h2, h3;

	assert_int_equal(virtio_vsock__transport_reset(f->v), VSOCK_PENDING);
	assert_int_equal(ev_used(f), 0);
	h1 = ev_post(f, 2);
	h2 = ev_post(f, 4);
	irq_ack(f);
	raises = f->irq_raises;
	wr(f, QUEUE_NOTIFY, VIRTIO_VSOCK_Q_EVENT);
	assert_int_equal(
		vdrv_take_used(f->r.ram, &f->q[VIRTIO_VSOCK_Q_EVENT], h1), 0);
	ev_expect_reset(f, h2);
	assert_int_equal(f->irq_raises, raises + 1);
	/* Sent once: the next buffer stays with the device. */
	h3 = ev_post(f, 4);
	wr(f, QUEUE_NOTIFY, VIRTIO_VSOCK_Q_EVENT);
	assert_int_equal(ev_used(f), 2);
	assert_int_equal(virtio_vsock__transport_reset(f->v), 0);
	ev_expect_reset(f, h3);
	/* Owed, then a host connect: the event goes before the REQUEST. */
	assert_int_equal(virtio_vsock__transport_reset(f->v), VSOCK_PENDING);
	h1 = ev_post(f, 4);
	assert_int_equal(ev_used(f), 3);
	assert_int_equal(virtio_vsock__connect(f->v, 300, 400), 0);
	ev_expect_reset(f, h1);
	rx_none(f);
	/* A kick without a new buffer acknowledges too (none left here). */
	wr(f, QUEUE_NOTIFY, VIRTIO_VSOCK_Q_EVENT);
	rx_expect(f, VIRTIO_VSOCK_OP_REQUEST, 400, 300);
	/* Owed across a device reset: cancelled. */
	assert_int_equal(virtio_vsock__transport_reset(f->v), VSOCK_PENDING);
	driver_init(f); /* status 0 first */
	ev_post(f, 4);
	wr(f, QUEUE_NOTIFY, VIRTIO_VSOCK_Q_EVENT);
	assert_int_equal(ev_used(f), 0);
}

/*
 * A restore: a new device takes the transport state of the old one,
 * whose guest had posted rx and event buffers (and notified nothing
 * since).  The reset lands in the posted event buffer; a host connection
 * and its data go into the rx buffers posted before the snapshot, with no
 * new notify; a packet of a connection of the old device gets RST.
 */
static void test_restore_prepost(void **state)
{
	struct fixture *f = *state;
	struct irq_line irq = { .set = fake_irq, .gsi = GSI, .opaque = f };
	struct vsock_conn_id id = cid(1024, 300);
	struct hdr h = ghdr(100, 200, VIRTIO_VSOCK_OP_RW, 3);
	struct virtio_mmio_state st;
	struct virtio_vsock *nv;
	uint16_t eh, used;
	uint8_t got[8];

	establish(f, 100, 200);
	for (int i = 0; i < 4; i++)
		rx_post(f);
	eh = ev_post(f, 4);
	virtio_mmio__get_state(f->t, &st);
	nv = virtio_vsock__create(&f->r.m, irq, CID, &be_ops, f);
	assert_non_null(nv);
	assert_int_equal(
		virtio_mmio__set_state(virtio_vsock__transport(nv), &st), 0);
	virtio_vsock__destroy(f->v);
	f->v = nv;
	f->t = virtio_vsock__transport(nv);

	assert_int_equal(virtio_vsock__transport_reset(f->v), 0);
	ev_expect_reset(f, eh);
	used = used_idx(f, VIRTIO_VSOCK_Q_RX);
	assert_int_equal(virtio_vsock__connect(f->v, 300, 1024), 0);
	/* The REQUEST waits for the driver to have handled the reset. */
	assert_int_equal(used_idx(f, VIRTIO_VSOCK_Q_RX), used);
	ev_ack(f);
	assert_int_equal(used_idx(f, VIRTIO_VSOCK_Q_RX), (uint16_t)(used + 1));
	rx_expect(f, VIRTIO_VSOCK_OP_REQUEST, 1024, 300);
	tx_op(f, 1024, 300, VIRTIO_VSOCK_OP_RESPONSE, 0);
	assert_int_equal(ev_last(f, EV_CONNECTED)->id.host_port, 300);
	assert_int_equal(virtio_vsock__send(f->v, id, "abc", 3), 3);
	assert_int_equal(used_idx(f, VIRTIO_VSOCK_Q_RX), (uint16_t)(used + 2));
	assert_true(rx_get(f, &h, got));
	assert_int_equal(h.len, 3);
	assert_memory_equal(got, "abc", 3);
	assert_int_equal(f->rx_outstanding, 2);
	h = ghdr(100, 200, VIRTIO_VSOCK_OP_RW, 3);
	tx(f, &h, "old");
	rx_expect(f, VIRTIO_VSOCK_OP_RST, 100, 200);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_identity_and_config, setup,
						teardown),
		cmocka_unit_test(test_create_args),
		cmocka_unit_test_setup_teardown(test_guest_connect, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_refused_port, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_data_layouts, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_host_send_credit, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_credit_request_and_update,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_shutdown_both_ways, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_malformed, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_host_connect, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_many_connections, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_tx_backpressure, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_full_queue_resumes, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_transport_reset, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_transport_reset_deferred,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_restore_prepost, setup,
						teardown),
	};

	return cmocka_run_group_tests_name("virtio_vsock", tests, NULL, NULL);
}
