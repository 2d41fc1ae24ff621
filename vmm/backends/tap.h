/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The host side of virtio-net: a Linux tap device (Documentation/
 * networking/tuntap.rst) opened by name with IFF_TAP | IFF_NO_PI |
 * IFF_VNET_HDR and a 12-byte virtio_net_hdr (TUNSETVNETHDRSZ), so frames
 * cross between the tap and the device model (devices/virtio_net.h)
 * unchanged, offload headers included.
 *
 * - Receive: the tap fd is watched on the event loop; each readable
 *   event reads frames (a bounded batch, then the loop serves others)
 *   into virtio_net__rx().  While the device cannot take a frame without
 *   dropping it (virtio_net__rx_room() false: the guest posted no buffers
 *   and the pending queue is full), the tap is not read, so frames wait
 *   in the tap's own queue; the device's rx_ready op wakes the backend
 *   (through an eventfd: it may run on any thread) and reading resumes.
 *   With a receive rate limiter, a refused frame is held and reading
 *   stops until a timer says the bucket has refilled.
 * - Transmit: ops->tx() writes each frame with one writev(); a transmit
 *   rate limiter that refuses stops the device taking frames from its tx
 *   queue (they wait in the ring) and a timer restarts it.
 * - Offloads: the tap's own offloads (TUNSETOFFLOAD), which decide what
 *   the kernel may hand us (partial checksums, TSO frames), follow what
 *   the guest's driver accepted (GUEST_CSUM, GUEST_TSO4/6).  They start
 *   off, and are set on the event thread before the next read after the
 *   driver's features change, so a frame the guest cannot take is never
 *   read (frames read before are complete, valid for any driver).
 *
 * Everything runs on the event thread except the device's rx_ready op.
 * ember never creates addresses or routes: the tap is configured by
 * whoever made it (emberctl, the operator).
 */
#ifndef EMBER_VMM_BACKENDS_TAP_H
#define EMBER_VMM_BACKENDS_TAP_H

#include <stdbool.h>
#include <stdint.h>

#include "../../devices/virtio_net.h"
#include "../config.h"

struct event_loop;
struct tap;

/*
 * tap__create() - a virtio-net device on guest memory @m raising @irq,
 * over the tap @c->host_dev_name (1..IFNAMSIZ-1 bytes; an existing tap is
 * attached, a missing one created when this process may, as TUNSETIFF
 * does), offering @c->guest_mac if set and every offload the tap
 * supports, with @c's rate limiters.  Registers on @el (not owned),
 * before or after event__start().  Returns the backend, or NULL with the
 * reason logged, naming the tap (no such device and no right to create
 * it, a tap held by another process, a name too long, no memory).
 */
struct tap *tap__create(struct event_loop *el, const struct guest_mem *m,
			struct irq_line irq, const struct net_config *c);

/* tap__net() - the device model (owned by @t). */
struct virtio_net *tap__net(struct tap *t);

/*
 * tap__hold() - while @hold (a pause) the tap is not read and no timer
 * restarts the device, so guest memory stays as it is; frames wait in the
 * tap.  Released, it all flows again.  On the event thread.  Returns 0 or
 * a negative errno from the event loop.
 */
int tap__hold(struct tap *t, bool hold);

/*
 * tap__set_rate_limiters() - replace the receive (@rx) and transmit (@tx)
 * rate limiters (PATCH /network-interfaces); NULL keeps one as it is.  On
 * the event thread.  Returns 0, or -EINVAL for a bucket outside
 * config__check_rate_limiter()'s limits with nothing changed.
 */
int tap__set_rate_limiters(struct tap *t, const struct rate_limiter_config *rx,
			   const struct rate_limiter_config *tx);

/* tap__name() - the tap's interface name (owned by @t). */
const char *tap__name(const struct tap *t);

/*
 * tap__destroy() - the device and the tap fd, timers and eventfd.  After
 * the event loop stopped (or before it started); NULL is a no-op.  A
 * persistent tap stays; one this process created goes with its fd.
 */
void tap__destroy(struct tap *t);

#endif /* EMBER_VMM_BACKENDS_TAP_H */
