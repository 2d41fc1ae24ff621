/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The virtio socket device's connection table and host->guest packet
 * queue (virtio 1.2 spec, 5.10.6): which stream connections exist, their
 * credit counters (5.10.6.3), and the packets waiting for the guest's rx
 * buffers, under the device's caps.  Bookkeeping only: no virtqueues, no
 * guest memory, no backend; virtio_vsock.c drives it under its lock and
 * moves the queued packets into the guest's buffers.
 */
#ifndef EMBER_DEVICES_VSOCK_CONNS_H
#define EMBER_DEVICES_VSOCK_CONNS_H

#include <stdbool.h>
#include <stdint.h>

/* struct virtio_vsock_hdr (5.10.6), little-endian, 44 bytes. */
#define VIRTIO_VSOCK_HDR_BYTES	       44
#define VIRTIO_VSOCK_TYPE_STREAM       1
#define VIRTIO_VSOCK_OP_REQUEST	       1
#define VIRTIO_VSOCK_OP_RESPONSE       2
#define VIRTIO_VSOCK_OP_RST	       3
#define VIRTIO_VSOCK_OP_SHUTDOWN       4
#define VIRTIO_VSOCK_OP_RW	       5
#define VIRTIO_VSOCK_OP_CREDIT_UPDATE  6
#define VIRTIO_VSOCK_OP_CREDIT_REQUEST 7
#define VIRTIO_VSOCK_SHUTDOWN_RCV      1 /* the sender will receive no more */
#define VIRTIO_VSOCK_SHUTDOWN_SEND     2 /* the sender will send no more */

/*
 * Limits.  MAX_PAYLOAD bounds the len of one guest packet (Linux's
 * VIRTIO_VSOCK_MAX_PKT_BUF_SIZE).  BUF_ALLOC is the receive buffer the
 * host side advertises per connection: the backend must be ready to hold
 * that many bytes of a connection's data it has not consumed yet.
 * MAX_CONNS bounds the connection table.  Host->guest data waits in a
 * queue of at most PENDING_BYTES (and PENDING_DATA packets) until the
 * guest posts rx buffers; control packets have their own PENDING_CTRL.
 */
#define VIRTIO_VSOCK_MAX_PAYLOAD   (64 * 1024)
#define VIRTIO_VSOCK_BUF_ALLOC	   (256 * 1024)
#define VIRTIO_VSOCK_MAX_CONNS	   256
#define VIRTIO_VSOCK_PENDING_BYTES (1024 * 1024)
#define VIRTIO_VSOCK_PENDING_DATA  256
#define VIRTIO_VSOCK_PENDING_CTRL  512

/* One stream connection: guest CID port <-> host (CID 2) port. */
struct vsock_conn_id {
	uint32_t guest_port;
	uint32_t host_port;
};

enum vsock_conn_state {
	CONN_FREE = 0,
	CONN_GUEST_REQ, /* guest REQUEST, backend has not answered */
	CONN_HOST_REQ, /* host REQUEST, guest has not answered */
	CONN_ESTABLISHED,
};

struct vsock_conn {
	enum vsock_conn_state state;
	struct vsock_conn_id id;
	uint32_t host_shutdown, peer_shutdown; /* SHUTDOWN_* bits */
	/* guest -> host: what we advertise */
	uint32_t rx_cnt; /* bytes received from the guest */
	uint32_t fwd_cnt; /* of those, consumed by the backend */
	uint32_t last_fwd_sent; /* fwd_cnt the guest last heard */
	/* host -> guest: what the guest advertises */
	uint32_t tx_cnt; /* bytes queued for the guest */
	uint32_t peer_buf_alloc, peer_fwd_cnt;
	bool update_queued; /* a CREDIT_UPDATE is in the pending queue */
	bool update_owed; /* one could not be queued: retry on rx */
};

/* A packet waiting for a guest rx buffer. */
struct vsock_pkt {
	struct vsock_pkt *next;
	struct vsock_conn_id id;
	uint16_t op;
	uint32_t flags;
	uint32_t len; /* payload bytes left */
	uint32_t off; /* payload bytes already delivered */
	uint8_t data[];
};

/* The table and the queue; all zero is empty. */
struct vsock_conns {
	struct vsock_conn conns[VIRTIO_VSOCK_MAX_CONNS];
	struct vsock_pkt *head, *tail; /* the pending queue, oldest first */
	unsigned int nr_data, nr_ctrl; /* RW packets, the others */
	uint64_t data_bytes; /* RW payload bytes not yet delivered */
};

/* vsock_conns__find() - the connection named @id, or NULL. */
struct vsock_conn *vsock_conns__find(struct vsock_conns *t,
				     struct vsock_conn_id id);

/*
 * vsock_conns__new() - a new connection @id in @state (not CONN_FREE),
 * its counters zero; NULL with the table full.  The caller checked that
 * @id is not in use.
 */
struct vsock_conn *vsock_conns__new(struct vsock_conns *t,
				    struct vsock_conn_id id,
				    enum vsock_conn_state state);

/*
 * vsock_conns__free() - forget @c, with its undelivered data and credit
 * updates (not an RST queued for it).
 */
void vsock_conns__free(struct vsock_conns *t, struct vsock_conn *c);

/*
 * vsock_conns__ctrl() - queue a control packet @op with @flags for @id.
 * @force: an RST, allowed past VIRTIO_VSOCK_PENDING_CTRL (each forced one
 * ends a connection or answers one tx packet, so they are bounded).
 * Returns 0, -EAGAIN (the control cap), -ENOMEM.
 */
int vsock_conns__ctrl(struct vsock_conns *t, struct vsock_conn_id id,
		      uint16_t op, uint32_t flags, bool force);

/*
 * vsock_conns__data() - queue @n (1..MAX_PAYLOAD, within
 * vsock_conns__room()) bytes of @data (copied) for the guest on @c, and
 * count them as sent.  Returns 0 or -ENOMEM.
 */
int vsock_conns__data(struct vsock_conns *t, struct vsock_conn *c,
		      const void *data, uint32_t n);

/*
 * vsock_conns__credit_update() - queue a CREDIT_UPDATE for @c unless one
 * is already waiting; when the control cap refuses it, it is owed and
 * vsock_conns__retry_updates() queues it later.
 */
void vsock_conns__credit_update(struct vsock_conns *t, struct vsock_conn *c);

/* vsock_conns__retry_updates() - queue the owed credit updates. */
void vsock_conns__retry_updates(struct vsock_conns *t);

/*
 * vsock_conns__credit() - the guest's credit for host->guest data on @c:
 * its buf_alloc - (bytes sent - its fwd_cnt), 5.10.6.3.
 */
uint32_t vsock_conns__credit(const struct vsock_conn *c);

/*
 * vsock_conns__full() - is the data queue at VIRTIO_VSOCK_PENDING_DATA
 * packets or VIRTIO_VSOCK_PENDING_BYTES bytes?
 */
bool vsock_conns__full(const struct vsock_conns *t);

/*
 * vsock_conns__room() - the bytes @c may still queue: the guest's credit,
 * bounded by the room in the data queue.
 */
uint32_t vsock_conns__room(const struct vsock_conns *t,
			   const struct vsock_conn *c);

/*
 * vsock_conns__advance() - @n more payload bytes of the packet @p at the
 * head of the queue went into a guest buffer.
 */
void vsock_conns__advance(struct vsock_conns *t, struct vsock_pkt *p,
			  uint32_t n);

/* vsock_conns__pop() - unlink and free the (delivered) head packet. */
void vsock_conns__pop(struct vsock_conns *t);

/* vsock_conns__drop_all() - free every queued packet; the table stays. */
void vsock_conns__drop_all(struct vsock_conns *t);

#endif /* EMBER_DEVICES_VSOCK_CONNS_H */
