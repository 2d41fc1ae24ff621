/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A command run in a sandbox's guest to its end with its output captured
 * (guest_run.c): an agent connection borrowed from a pool (pool.h), the
 * command's stdout and stderr kept in memfds and read back whole.  What
 * ember-mcp's tools and ember-e2b's envd services run to an end call
 * this; streamed processes talk to the agent themselves.
 */
#ifndef EMBER_API_GUEST_RUN_H
#define EMBER_API_GUEST_RUN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "agent_client.h"
#include "pool.h"
#include "record.h"

/* A command for guest_run__capture(). */
struct guest_cmd {
	const char *const *argv; /* NULL-terminated */
	const char *const *env; /* NULL: the guest's default environment
				   (PROTOCOL.md, "The environment"); else
				   "K=V" entries, the whole environment, or
				   with env_add over the default one */
	bool env_add; /* env goes over the default environment */
	const char *cwd; /* NULL: the guest's default (the image's, else /) */
	const char *user; /* NULL: the guest's default user (the image's,
			     else root); else the agent's USER: NAME, UID,
			     NAME:GROUP or UID:GID */
	int in_fd; /* > 0: forwarded to the command's stdin up to its EOF
		      (from its current offset); 0: stdin is /dev/null */
	uint32_t timeout_ms; /* in the guest; 0: none */
	size_t out_max; /* bytes of stdout (and of stderr) kept; > 0 */
};

/* What a command printed and how it ended. */
struct guest_output {
	char *out, *err; /* NUL-terminated (the caller frees them) */
	size_t outlen, errlen; /* at most the command's out_max */
	struct agent_exec_result res;
	int guest_errno; /* of a command that could not start */
};

/*
 * guest_run__capture() - run @cmd in the live sandbox @sb through an
 * agent connection from @p (a new one answers a PING within @connect_ms)
 * and wait for its end.  0 with @o filled (free it with
 * guest_run__release()).  Errors, with the reason in @err: -EIO when no
 * agent answered, -EREMOTEIO when the command could not start
 * (o->guest_errno: EINVAL for an unknown user, ENOENT...), -ENOMEM, or
 * agent_client__exec()'s.  The connection
 * goes back to @p when the agent is still sound (0 or -EREMOTEIO).
 */
int guest_run__capture(struct pool *p, const struct sandbox_info *sb,
		       int connect_ms, const struct guest_cmd *cmd,
		       struct guest_output *o, char *err, size_t errlen);

/* Free what @o holds (both NULL afterwards). */
void guest_run__release(struct guest_output *o);

#endif /* EMBER_API_GUEST_RUN_H */
