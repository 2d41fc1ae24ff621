/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The host side of virtio-vsock: Firecracker's hybrid Unix-socket
 * convention over the device model in devices/virtio_vsock.h.
 *
 * - Host to guest: a host process connects to the Unix socket @uds_path
 *   and writes "CONNECT <port>\n" (port: decimal guest port); ember asks
 *   the guest and, once it accepts, answers "OK <host_port>\n" (the host
 *   port ember picked for the connection); from then on the bytes flow
 *   both ways.  If the guest refuses (nobody listens on that port) or the
 *   line is malformed, ember closes the Unix connection without a reply.
 * - Guest to host: a guest connecting to host CID 2 port P reaches the
 *   Unix socket "<uds_path>_P", which a host process listens on; nobody
 *   listening there -> the guest gets RST (ECONNRESET/ECONNREFUSED).
 * - A host end-of-file becomes SHUTDOWN(SEND) to the guest; the guest's
 *   SHUTDOWN(SEND) becomes shutdown(SHUT_WR) once its data is written; a
 *   guest RST, or a host write error, closes both ends.
 *
 * Everything runs on the event thread (one epoll fd of its own registered
 * on the VM's event loop), except the device's backend ops, which can
 * also run on a vCPU thread (device reset): they only record what
 * happened and wake the event thread.
 */
#ifndef EMBER_VMM_VSOCK_UDS_H
#define EMBER_VMM_VSOCK_UDS_H

#include <stdint.h>

#include <stdbool.h>

#include "../../devices/virtio_vsock.h"

struct event_loop;
struct vsock_uds;

/* Host ports ember picks for host-initiated connections start here. */
#define VSOCK_UDS_FIRST_HOST_PORT (1U << 30)

/*
 * vsock_uds__create() - a virtio-vsock device for guest CID @guest_cid
 * (3..UINT32_MAX) on guest memory @m, raising @irq, with its host side
 * listening on the Unix socket @uds_path (copied; at most 100 bytes so
 * that "<uds_path>_<port>" fits sun_path).  A stale socket file at
 * @uds_path (nobody listening) is replaced; anything else there is an
 * error.  Registers on @el (not owned), before or after event__start().
 * Returns the backend, or NULL with the reason logged (bad CID or path,
 * path in use, socket errors, no memory).
 */
struct vsock_uds *vsock_uds__create(struct event_loop *el,
				    const struct guest_mem *m,
				    struct irq_line irq, uint64_t guest_cid,
				    const char *uds_path);

/*
 * vsock_uds__hold() - while @hold (the VM is paused) nothing from the host
 * side reaches the device: the sockets are not watched (their data waits
 * in them), so the guest's memory and the device stay as they are.
 * Released, it all flows again.  On the event thread.  Returns 0 or a
 * negative errno from the event loop.
 */
int vsock_uds__hold(struct vsock_uds *u, bool hold);

/*
 * vsock_uds__transport_reset() - after a restore from a snapshot, when no
 * host end of the guest's connections exists any more: the device drops
 * every connection and sends the guest the transport-reset event
 * (virtio_vsock__transport_reset(); at once, or when the driver posts an
 * event buffer), so the guest resets its connected sockets and keeps its
 * listeners (the agent's port answers new connections); every host
 * connection this side still has is closed, but clients that have not
 * sent their CONNECT line yet go on.  On the event thread (or while it
 * does not run), without the device's lock.
 */
void vsock_uds__transport_reset(struct vsock_uds *u);

/* vsock_uds__transport() - the device's virtio-mmio transport (owned). */
struct virtio_mmio *vsock_uds__transport(struct vsock_uds *u);

/*
 * vsock_uds__destroy() - close every connection and the listener, unlink
 * @uds_path, free the device.  Call after the event loop was destroyed
 * (its thread joined) and with the vCPUs stopped.  NULL is a no-op.
 */
void vsock_uds__destroy(struct vsock_uds *u);

#endif /* EMBER_VMM_VSOCK_UDS_H */
