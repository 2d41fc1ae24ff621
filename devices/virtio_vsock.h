/* SPDX-License-Identifier: Apache-2.0 */
/*
 * virtio socket device (virtio 1.2 spec, 5.10 "Socket Device"), the pure
 * device side: three queues (rx, tx, event), the guest's CID in config
 * space, stream connections between guest ports and host ports with
 * credit-based flow control (5.10.6.3).  No sockets here: a backend (the
 * Unix-socket one on the event thread) sees guest->host events through
 * struct vsock_backend_ops and acts host->guest through the
 * virtio_vsock__*() calls below.  Carried by virtio-mmio (virtio_mmio.h).
 *
 * Locking: every backend op is called with the transport lock
 * (t->dev.lock) held and must not call back into virtio_vsock__*(); the
 * virtio_vsock__*() calls take that lock themselves, never call backend
 * ops, and move what they queue into the guest's rx buffers at once when
 * it has posted some (raising the interrupt).  A connection is
 * named by its two ports (struct vsock_conn_id), so a backend never holds
 * a pointer the device may free: a call on a connection that is gone
 * answers -ENOTCONN.
 *
 * Snapshots: the device has no state of its own to save (its transport's
 * is the manager's); after a restore virtio_vsock__transport_reset() tells
 * the guest that its connections are gone.  Rx buffers are taken from the
 * avail ring as packets need them, not on notifications, so buffers the
 * guest posted before the snapshot serve the restored device at once.
 */
#ifndef EMBER_DEVICES_VIRTIO_VSOCK_H
#define EMBER_DEVICES_VIRTIO_VSOCK_H

#include <stdint.h>
#include <sys/types.h>

#include "virtio_mmio.h"
#include "vsock_conns.h" /* the packet header, limits, vsock_conn_id */

#define VIRTIO_ID_VSOCK 19

#define VIRTIO_VSOCK_F_STREAM 0 /* 5.10.3 */
#define VIRTIO_VSOCK_CID_HOST 2 /* VMADDR_CID_HOST */

#define VIRTIO_VSOCK_Q_RX    0
#define VIRTIO_VSOCK_Q_TX    1
#define VIRTIO_VSOCK_Q_EVENT 2

/* struct virtio_vsock_event (5.10.6.7): le32 id, on the event queue. */
#define VIRTIO_VSOCK_EVENT_BYTES	   4
#define VIRTIO_VSOCK_EVENT_TRANSPORT_RESET 0

/* connect() may return this: the backend answers later (accept/refuse). */
#define VSOCK_PENDING 1

struct virtio_vsock;

/*
 * Guest->host events.  Every op may be NULL except connect and recv.
 * After reset() the connection is gone and its id may be reused.
 */
struct vsock_backend_ops {
	/*
	 * The guest asks to connect to @id.host_port.  Return 0 to accept
	 * (the device answers RESPONSE), a negative errno to refuse (RST),
	 * or VSOCK_PENDING to answer later with virtio_vsock__accept() or
	 * virtio_vsock__refuse().
	 */
	int (*connect)(void *backend, struct vsock_conn_id id);
	/* The guest accepted a virtio_vsock__connect(): established. */
	void (*connected)(void *backend, struct vsock_conn_id id);
	/*
	 * @len (1..MAX_PAYLOAD) bytes of data, within the credit the device
	 * gave: the backend takes them all (copies; @buf is the device's)
	 * and reports them with virtio_vsock__consumed() once forwarded.
	 * A negative return resets the connection (RST, then reset()).
	 */
	int (*recv)(void *backend, struct vsock_conn_id id, const void *buf,
		    uint32_t len);
	/*
	 * The guest shut down VIRTIO_VSOCK_SHUTDOWN_* @flags (accumulated).
	 * With both set the backend should flush and call
	 * virtio_vsock__rst() (the guest waits for that RST, 5.10.6.6).
	 */
	void (*shutdown)(void *backend, struct vsock_conn_id id,
			 uint32_t flags);
	/* The connection is gone: guest RST, a protocol error, or reset. */
	void (*reset)(void *backend, struct vsock_conn_id id);
	/*
	 * virtio_vsock__send() may take more: the guest's credit grew, or
	 * the pending queue that made a send() stop short has room again.
	 */
	void (*credit)(void *backend, struct vsock_conn_id id);
};

/*
 * virtio_vsock__create() - a socket device on guest memory @m (not owned;
 * must outlive the device) raising interrupt @irq, for a guest with CID
 * @guest_cid (3..UINT32_MAX), reporting to @ops/@backend (not owned).
 * Register the transport (virtio_vsock__transport()) on the MMIO bus.
 * Returns the device (free with virtio_vsock__destroy()), or NULL for a
 * NULL @m or @ops, an @ops without connect or recv, a bad CID, or
 * without memory.
 */
struct virtio_vsock *virtio_vsock__create(const struct guest_mem *m,
					  struct irq_line irq,
					  uint64_t guest_cid,
					  const struct vsock_backend_ops *ops,
					  void *backend);

/*
 * virtio_vsock__transport() - the device's virtio-mmio transport, owned
 * by @v: its .dev goes on the MMIO bus, queue notifications (ioeventfd on
 * VIRTIO_MMIO_QUEUE_NOTIFY) to virtio_mmio__notify().
 */
struct virtio_mmio *virtio_vsock__transport(struct virtio_vsock *v);

/*
 * virtio_vsock__destroy() - free a device (NULL is a no-op); it must be
 * off the bus and idle.  No backend op is called.
 */
void virtio_vsock__destroy(struct virtio_vsock *v);

/*
 * virtio_vsock__connect() - the host connects to guest port
 * @guest_port from host port @host_port (the backend picks it): queues a
 * REQUEST; the guest answers with connected() or reset().
 * Returns 0, -EADDRINUSE if that pair is in use, -ENOSPC with the table
 * full, -EAGAIN with the control queue full, -ENOTCONN while the driver
 * has not set the device up, -ENOMEM.
 */
int virtio_vsock__connect(struct virtio_vsock *v, uint32_t host_port,
			  uint32_t guest_port);

/*
 * virtio_vsock__accept() / virtio_vsock__refuse() - answer a connect()
 * that returned VSOCK_PENDING: RESPONSE (established), or RST (nobody
 * listens; the connection is forgotten, reset() is not called).
 * Return 0, -ENOTCONN if no such request is waiting, -EAGAIN.
 */
int virtio_vsock__accept(struct virtio_vsock *v, struct vsock_conn_id id);
int virtio_vsock__refuse(struct virtio_vsock *v, struct vsock_conn_id id);

/*
 * virtio_vsock__send() - queue @len bytes of @data for the guest on
 * established connection @id.  Takes no more than the guest's credit
 * (its buf_alloc - (bytes sent - its fwd_cnt), 5.10.6.3) and the room in
 * the pending queue allow; the rest waits for credit().
 * Returns the bytes taken (0..@len), -ENOTCONN (no such established
 * connection), -EPIPE (the host shut down sending, or the guest shut
 * down receiving).
 */
ssize_t virtio_vsock__send(struct virtio_vsock *v, struct vsock_conn_id id,
			   const void *data, size_t len);

/*
 * virtio_vsock__consumed() - the backend forwarded @n more bytes that
 * recv() gave it: they count in fwd_cnt, and a CREDIT_UPDATE goes to the
 * guest once half of BUF_ALLOC was freed since it last heard.
 * Returns 0, -ENOTCONN, or -EINVAL if @n is more than recv() gave.
 */
int virtio_vsock__consumed(struct virtio_vsock *v, struct vsock_conn_id id,
			   uint32_t n);

/*
 * virtio_vsock__shutdown() - the host will receive (SHUTDOWN_RCV) and/or
 * send (SHUTDOWN_SEND) no more on @id: queues a SHUTDOWN with @flags.
 * Returns 0, -EINVAL for flags outside the two bits or none, -ENOTCONN,
 * -EAGAIN.
 */
int virtio_vsock__shutdown(struct virtio_vsock *v, struct vsock_conn_id id,
			   uint32_t flags);

/*
 * virtio_vsock__transport_reset() - the host side of every connection is
 * gone (this device was restored from a snapshot into a new process):
 * forget every connection and every packet not yet delivered, then send
 * the guest VIRTIO_VSOCK_EVENT_TRANSPORT_RESET (5.10.6.7) in the next
 * buffer of the event queue and raise the interrupt.  The guest then
 * resets its connected sockets and keeps its listening ones, and re-reads
 * guest_cid.  When the driver has no event buffer available (or the
 * device is not live) the event is owed and sent as soon as one arrives
 * (an event-queue notify, or any rx delivery); a device reset by the
 * driver cancels it (its connections go with the device).  No backend op
 * is called: the backend drops its own side.  Returns 0 (sent) or
 * VSOCK_PENDING (owed).
 */
int virtio_vsock__transport_reset(struct virtio_vsock *v);

/*
 * virtio_vsock__rst() - abort @id: queues RST, drops its undelivered
 * data, forgets it (reset() is not called).  Returns 0 or -ENOTCONN.
 */
int virtio_vsock__rst(struct virtio_vsock *v, struct vsock_conn_id id);

#endif /* EMBER_DEVICES_VIRTIO_VSOCK_H */
