/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The guest agent's FORWARD (guest-init/PROTOCOL.md, "Forward"): the
 * connection becomes a plain byte stream to a TCP port of the guest's
 * loopback, for a port the host exposes (`emberctl expose`).
 */
#ifndef EMBER_GUEST_AGENT_FWD_H
#define EMBER_GUEST_AGENT_FWD_H

#include "agent_conn.h"

/* How long the guest's connect to the port may take, ms. */
#define AGENT_FWD_CONNECT_MS 5000

/*
 * FORWARD on @c (header @h, payload @payload: u32 port 1-65535):
 * connect to 127.0.0.1:PORT, then [::1]:PORT when nothing listens there;
 * answer OK and copy bytes both ways until both directions ended (each
 * end of file passed on as a shutdown of the other side's writing) or
 * either side failed, then mark @c dead: the connection carries nothing
 * else.  Refusals, the connection going on: ERROR(EPROTO) for a payload
 * other than a port, ERROR(EBUSY) while @c has execs or file writes,
 * ERROR(errno) of the connect, "connect 127.0.0.1:PORT: Connection
 * refused".
 */
void agent_fwd__start(struct conn *c, const struct ember_agent_hdr *h,
		      const uint8_t *payload);

#endif /* EMBER_GUEST_AGENT_FWD_H */
