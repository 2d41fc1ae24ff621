// SPDX-License-Identifier: Apache-2.0
/*
 * A connection to a sandbox's guest agent that answered a PING: see
 * sandbox__agent_connect() in sandbox.h.
 */
#include <errno.h>
#include <unistd.h>

#include "../../guest-init/protocol.h"
#include "agent_client.h"
#include "clock.h"
#include "sandbox.h"
#include "files.h"

/* Between tries while the agent does not listen yet, ms. */
#define RETRY_MS 100

int sandbox__agent_connect(const struct sandbox_info *sb, int timeout_ms,
			   struct agent_client **out, char *err, size_t errlen)
{
	int64_t start = clock__mono_ms(), left;
	struct agent_client *c = agent_client__new();
	int rc = -ETIMEDOUT;

	*out = NULL;
	if (!c)
		return sandbox__errf(err, errlen, -ENOMEM, "out of memory");
	for (;;) {
		left = start + timeout_ms - clock__mono_ms();
		if (left <= 0)
			break;
		rc = agent_client__connect(c, sb->uds, EMBER_AGENT_PORT,
					   (int)left);
		if (rc == 0) {
			rc = agent_client__ping(c, (int)left);
			if (rc == 0) {
				*out = c;
				return 0;
			}
			agent_client__close(c);
			if (rc == -ETIMEDOUT)
				break;
		}
		if (access(sb->dir, F_OK) < 0) {
			agent_client__free(c);
			return sandbox__errf(err, errlen, -ENOENT,
					     "sandbox %s is gone", sb->id);
		}
		clock__sleep_ms(RETRY_MS);
	}
	if (!sb->ready)
		sandbox__errf(err, errlen, -EAGAIN,
			      "sandbox %s is still booting", sb->id);
	else
		sandbox__errf(err, errlen, -ETIMEDOUT,
			      "sandbox %s: the agent did not answer within "
			      "%d s (%s)",
			      sb->id, timeout_ms / 1000,
			      agent_client__error(c));
	agent_client__free(c);
	return sb->ready ? -ETIMEDOUT : -EAGAIN;
}
