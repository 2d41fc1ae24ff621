// SPDX-License-Identifier: Apache-2.0
/*
 * libFuzzer target: the virtio-vsock guest->host packet path
 * (devices/virtio_vsock.c over devices/virtio_mmio.c and devices/virtq.c)
 * against a hostile driver, with a backend and host side that the input
 * steers too.  One device, made once.  Per input the transport is reset
 * and brought live through its registers (features from the input,
 * VERSION_1 always, rx, tx and event queues of the input's sizes at
 * offsets fixed per size, DRIVER_OK); then the input is copied over guest
 * RAM, so every descriptor table, ring and buffer is the fuzzer's.  Then
 * a few rounds: the rx and tx avail indices grow by the input's amounts,
 * tx is notified (guest packets reach the fake backend below, which
 * accepts, refuses or defers connects and takes data as the input says),
 * the host-side calls (send, consumed, accept, refuse, shutdown, rst,
 * connect) run as the input scripts them, and rx, tx and event are
 * notified again.  Any crash, leak or sanitizer report is a bug: nothing
 * outside guest RAM may be touched, whatever the rings and packets say.
 */
#include <endian.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "devices/virtio_vsock.h"
#include "vmm/mem.h"
#include "fuzz_virtio.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_RAM_BYTES (1 << 20)
#define FUZZ_CID       3
#define FUZZ_NR_QUEUES 3

/*
 * Input header: features, queue sizes (rx low nibble, tx high nibble;
 * event gets rx's), backend mode, then FUZZ_ROUNDS rounds of an rx and a
 * tx avail increment and FUZZ_OPS host-side ops of 4 bytes each.
 */
#define FUZZ_ROUNDS	 4
#define FUZZ_OPS	 4
#define FUZZ_ROUND_BYTES (2 + 4 * FUZZ_OPS)
#define FUZZ_HDR_BYTES	 (3 + FUZZ_ROUNDS * FUZZ_ROUND_BYTES)

/*
 * Each queue's rings packed (so that short inputs reach them): for q
 * entries, descriptors at 0 (16 * q bytes), the avail ring right after
 * (6 + 2 * q), the used ring after that, 4-byte aligned (6 + 8 * q);
 * queue i + 1 starts 16-byte aligned after queue i.
 */
#define FUZZ_AVAIL(q) (16u * (q))
#define FUZZ_USED(q)  ((FUZZ_AVAIL(q) + 6u + 2u * (q) + 3u) & ~3u)
#define FUZZ_QEND(q)  ((FUZZ_USED(q) + 6u + 8u * (q) + 15u) & ~15u)

/* The ids the backend has heard of, which the host-side ops pick from. */
#define FUZZ_IDS 16

struct fuzz_id {
	struct vsock_conn_id id;
	uint32_t unconsumed; /* recv() bytes not yet consumed() */
	uint8_t pending; /* connect() answered VSOCK_PENDING */
};

/*
 * Static and made once (the device): the fuzzer's own state, not the
 * VMM's; guest RAM is 1 MiB and rewritten per input.
 */
static uint8_t ram[FUZZ_RAM_BYTES] __attribute__((aligned(4096)));
static struct guest_mem mem;
static struct virtio_vsock *vs;
static struct virtio_mmio *t;
static unsigned int qsize[FUZZ_NR_QUEUES];
static uint32_t qbase[FUZZ_NR_QUEUES];
static uint16_t avail[FUZZ_NR_QUEUES];
static uint8_t be_mode; /* steers the backend, this input */
static struct fuzz_id ids[FUZZ_IDS];
static unsigned int next_id;
static uint8_t scratch[VIRTIO_VSOCK_MAX_PAYLOAD]; /* recv() copies here */
static uint8_t tx_data[VIRTIO_VSOCK_BUF_ALLOC]; /* what send() sends */

/* --- the fake backend (called with the transport lock held) ------------ */

static struct fuzz_id *id_find(struct vsock_conn_id id)
{
	unsigned int i;

	for (i = 0; i < FUZZ_IDS; i++)
		if (ids[i].id.guest_port == id.guest_port &&
		    ids[i].id.host_port == id.host_port)
			return &ids[i];
	return NULL;
}

/* @id's slot, taking the next one round-robin if it has none. */
static struct fuzz_id *id_note(struct vsock_conn_id id)
{
	struct fuzz_id *e = id_find(id);

	if (e)
		return e;
	e = &ids[next_id++ % FUZZ_IDS];
	memset(e, 0, sizeof(*e));
	e->id = id;
	return e;
}

/* Accept, refuse or defer, by the ports and the input's mode byte. */
static int be_connect(void *backend, struct vsock_conn_id id)
{
	struct fuzz_id *e = id_note(id);

	(void)backend;
	e->unconsumed = 0;
	e->pending = 0;
	switch ((id.host_port + id.guest_port + be_mode) % 3) {
	case 0:
		return 0;
	case 1:
		return -111; /* -ECONNREFUSED */
	default:
		e->pending = 1;
		return VSOCK_PENDING;
	}
}

static void be_connected(void *backend, struct vsock_conn_id id)
{
	struct fuzz_id *e = id_note(id);

	(void)backend;
	e->unconsumed = 0;
	e->pending = 0;
}

static int be_recv(void *backend, struct vsock_conn_id id, const void *buf,
		   uint32_t len)
{
	struct fuzz_id *e = id_note(id);

	(void)backend;
	if (len < 1 || len > sizeof(scratch))
		__builtin_trap(); /* the device broke its contract */
	memcpy(scratch, buf, len);
	/* Some modes fail some recvs: the connection is reset. */
	if (be_mode & 0x80 && (len + scratch[0]) % 5 == 0)
		return -5; /* -EIO */
	e->unconsumed += len;
	if (e->unconsumed > VIRTIO_VSOCK_BUF_ALLOC)
		__builtin_trap(); /* more than the credit the device gave */
	return 0;
}

static void be_shutdown(void *backend, struct vsock_conn_id id, uint32_t flags)
{
	(void)backend;
	(void)flags;
	id_note(id);
}

static void be_reset(void *backend, struct vsock_conn_id id)
{
	struct fuzz_id *e = id_find(id);

	(void)backend;
	if (e) {
		e->unconsumed = 0;
		e->pending = 0;
	}
}

static void be_credit(void *backend, struct vsock_conn_id id)
{
	(void)backend;
	id_note(id);
}

static const struct vsock_backend_ops be_ops = {
	.connect = be_connect,
	.connected = be_connected,
	.recv = be_recv,
	.shutdown = be_shutdown,
	.reset = be_reset,
	.credit = be_credit,
};

/* --- the driver -------------------------------------------------------- */

/* The device, once; abort if the host cannot give it. */
static void fuzz_setup(void)
{
	struct irq_line irq = { .set = fuzz_virtio__irq };

	if (mem__wrap(&mem, ram, sizeof(ram)))
		abort();
	vs = virtio_vsock__create(&mem, irq, FUZZ_CID, &be_ops, NULL);
	if (!vs)
		abort();
	t = virtio_vsock__transport(vs);
}

/*
 * Reset and bring the device live (3.1.1) with @feat_sel picking among
 * the offered features, rx (and event) with 1 << (@qlogs % 16 % 7)
 * entries, tx with 1 << (@qlogs / 16 % 7).
 */
static void fuzz_driver_init(uint8_t feat_sel, uint8_t qlogs)
{
	uint32_t st = fuzz_virtio__negotiate(t, feat_sel);
	uint32_t base = 0;
	unsigned int i;

	qsize[VIRTIO_VSOCK_Q_RX] = 1u << (qlogs % 16 % 7);
	qsize[VIRTIO_VSOCK_Q_TX] = 1u << (qlogs / 16 % 7);
	qsize[VIRTIO_VSOCK_Q_EVENT] = qsize[VIRTIO_VSOCK_Q_RX];
	for (i = 0; i < FUZZ_NR_QUEUES; i++) {
		qbase[i] = base;
		avail[i] = 0;
		fuzz_virtio__queue(t, i, qsize[i], base,
				   base + FUZZ_AVAIL(qsize[i]),
				   base + FUZZ_USED(qsize[i]));
		base += FUZZ_QEND(qsize[i]);
	}
	fuzz_virtio__live(t, st);
}

static void add_avail(unsigned int qi, uint8_t n)
{
	uint16_t idx;

	avail[qi] = (uint16_t)(avail[qi] + n);
	idx = htole16(avail[qi]);
	memcpy(ram + qbase[qi] + FUZZ_AVAIL(qsize[qi]) + 2, &idx, sizeof(idx));
}

static void notify(unsigned int qi)
{
	fuzz_virtio__wr(t, REG_INT_ACK, VIRTIO_MMIO_INT_VRING);
	virtio_mmio__notify(t, qi);
}

/*
 * One host-side op: @op[0] picks the call, @op[1] the id (from those the
 * backend heard of), @op[2..3] its argument.
 */
static void host_op(const uint8_t *op)
{
	struct fuzz_id *e = &ids[op[1] % FUZZ_IDS];
	uint32_t arg = (uint32_t)(op[2] | op[3] << 8);
	ssize_t sent;

	switch (op[0] % 9) {
	case 0: /* up to 256 KiB: past one packet, the credit, the queue */
		sent = virtio_vsock__send(vs, e->id, tx_data,
					  (size_t)arg * (op[1] & 0x80 ? 4 : 1));
		if (sent > (ssize_t)arg * 4)
			__builtin_trap();
		break;
	case 1: /* what recv() gave, or (high bit) anything */
		if (op[1] & 0x80) {
			virtio_vsock__consumed(vs, e->id, arg << (op[1] & 7));
		} else {
			if (arg > e->unconsumed)
				arg = e->unconsumed;
			if (!virtio_vsock__consumed(vs, e->id, arg))
				e->unconsumed -= arg;
		}
		break;
	case 2:
		if (!virtio_vsock__accept(vs, e->id))
			e->pending = 0;
		break;
	case 3:
		if (!virtio_vsock__refuse(vs, e->id))
			e->pending = 0;
		break;
	case 4: /* flags 0 and past the two bits too: -EINVAL */
		virtio_vsock__shutdown(vs, e->id, op[2] % 5);
		break;
	case 5:
		if (!virtio_vsock__rst(vs, e->id))
			e->unconsumed = e->pending = 0;
		break;
	case 6: /* host port op[2], guest port op[3] (or an id's) */
		if (op[1] & 0x80)
			virtio_vsock__connect(vs, e->id.host_port,
					      e->id.guest_port);
		else
			virtio_vsock__connect(vs, op[2], op[3]);
		id_note((struct vsock_conn_id){ op[3], op[2] });
		break;
	case 7: /* a guest notify between host calls */
		notify(op[2] % FUZZ_NR_QUEUES);
		break;
	default: /* more rx buffers or tx packets on the rings */
		add_avail(op[2] & 1 ? VIRTIO_VSOCK_Q_TX : VIRTIO_VSOCK_Q_RX,
			  op[3]);
		break;
	}
}

static int needs_reset(void)
{
	return !!(fuzz_virtio__rd(t, REG_STATUS) & VIRTIO_STATUS_NEEDS_RESET);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *round;
	unsigned int r, i;
	size_t n;

	if (size < FUZZ_HDR_BYTES)
		return 0;
	if (!vs) {
		fuzz_setup();
		for (n = 0; n < sizeof(tx_data); n++)
			tx_data[n] = (uint8_t)(n * 7 + 1);
	}
	memset(ids, 0, sizeof(ids));
	next_id = 0;
	be_mode = data[2];
	/* Before RAM is written: set-up writes nothing there. */
	fuzz_driver_init(data[0], data[1]);
	round = data + 3;
	data += FUZZ_HDR_BYTES;
	size -= FUZZ_HDR_BYTES;
	n = size < sizeof(ram) ? size : sizeof(ram);
	memcpy(ram, data, n);
	memset(ram + n, 0, sizeof(ram) - n);

	for (r = 0; r < FUZZ_ROUNDS && !needs_reset();
	     r++, round += FUZZ_ROUND_BYTES) {
		add_avail(VIRTIO_VSOCK_Q_RX, round[0]);
		add_avail(VIRTIO_VSOCK_Q_TX, round[1]);
		notify(VIRTIO_VSOCK_Q_TX);
		for (i = 0; i < FUZZ_OPS; i++)
			host_op(round + 2 + 4 * i);
		notify(VIRTIO_VSOCK_Q_RX);
		notify(VIRTIO_VSOCK_Q_TX);
		notify(VIRTIO_VSOCK_Q_EVENT);
	}
	/*
	 * The next input starts with a reset either way, which frees what
	 * is still queued for the guest and tells the backend of every
	 * connection left.
	 */
	if (needs_reset())
		fuzz_virtio__wr(t, REG_STATUS, 0);
	return 0;
}
