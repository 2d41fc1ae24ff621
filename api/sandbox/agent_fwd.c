// SPDX-License-Identifier: Apache-2.0
/*
 * The host side of the agent's FORWARD (agent_client__forward() in
 * agent_client.h, guest-init/PROTOCOL.md "Forward"): one request, one
 * answer; after an OK the connection carries the guest TCP connection's
 * bytes, and the wire reads nothing past the OK frame (it reads a
 * frame's header, then exactly its payload), so that the guest server's
 * first bytes, when it speaks first, stay in the socket for the caller.
 */
#include <errno.h>
#include <string.h>

#include "agent_client.h"
#include "agent_wire.h"
#include "clock.h"

static int fwd_frame(struct op *op, const struct ember_agent_hdr *h,
		     const uint8_t *p)
{
	if (h->type == EMBER_AGENT_ERROR) {
		op->done = 1;
		return agent_wire__guest_error(op->c, p, h->len);
	}
	if (h->type != EMBER_AGENT_OK)
		return agent_wire__unexpected(op->c, h);
	if (h->len)
		return agent_wire__fail(op->c, -EPROTO,
					"OK frame with a payload");
	op->done = 1;
	return 0;
}

int agent_client__forward(struct agent_client *c, uint32_t port, int timeout_ms)
{
	struct op op = {
		.c = c,
		.frame = fwd_frame,
		.in_fd = -1,
		.sig_fd = -1,
	};
	uint8_t b[4];
	int rc;

	c->guest_errno = 0;
	if (timeout_ms <= 0)
		return agent_wire__fail(c, -EINVAL, "bad timeout");
	if (port == 0 || port > 65535)
		return agent_wire__fail(c, -EINVAL, "bad port %u", port);
	if (c->fd < 0)
		return agent_wire__fail(c, -ENOTCONN,
					"not connected to the agent");
	ember_agent_put32(b, port);
	op.stream = agent_wire__new_stream(c);
	rc = agent_wire__tx_frame(c, EMBER_AGENT_FORWARD, op.stream, b,
				  sizeof(b));
	if (rc < 0)
		return rc;
	op.deadline_ms = clock__mono_ms() + timeout_ms;
	rc = agent_wire__pump(&op);
	if (rc == -ETIMEDOUT)
		agent_wire__fail(
			c, rc, "the agent did not answer FORWARD within %d ms",
			timeout_ms);
	return rc;
}
