/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Two connected sockets joined (fd_splice.c): bytes copied both ways until
 * both directions ended.  One piece of code for the three places that
 * forward a TCP connection over the agent's vsock: the agent's FORWARD in
 * the guest (agent_fwd.c), the host's exposed-port forwarders
 * (api/sandbox/expose.c) and ember-e2b's port proxy.  Built into the guest
 * agent and into the host's sandbox library.
 */
#ifndef EMBER_GUEST_FD_SPLICE_H
#define EMBER_GUEST_FD_SPLICE_H

#include <stddef.h>

#define FD_SPLICE_BUF (64U << 10) /* bytes buffered each way */

/*
 * fd_splice__run() - copy bytes from socket @a to socket @b and from @b to
 * @a, at most FD_SPLICE_BUF in flight each way, until both directions
 * saw their end of stream (each end passed on with shutdown(SHUT_WR)) and
 * everything read was written, or until either socket fails (a reset, a
 * closed reader).  Blocks the calling thread in poll(2); the sockets may
 * be blocking or not (every call uses MSG_DONTWAIT) and SIGPIPE is never
 * raised (MSG_NOSIGNAL).  Neither fd is closed: the caller owns both.
 * Returns 0 when both ends closed cleanly, -ENOMEM (nothing copied),
 * -EPIPE when a side failed first.
 */
int fd_splice__run(int a, int b);

#endif
