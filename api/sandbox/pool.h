/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Connections to sandboxes' guest agents kept open between tool calls, so
 * that a call does not pay for a new one: on a PVM host a new agent
 * connection costs a vsock CONNECT, a process in the guest (the agent
 * serves each connection in its own) and a PING, ~200 ms of a
 * `run_command true`'s ~500 ms.  Per sandbox id, at most POOL_MAX_IDLE
 * idle connections; a call takes one (or makes its own when none is idle)
 * and gives it back only when its operation succeeded.  A connection is
 * checked when taken (agent_client__idle_ok()): one that the guest or
 * ember closed meanwhile (a park, a restart) is dropped.  (Code
 * interpreter connections are not kept: see backend.c.)  Thread-safe.
 */
#ifndef EMBER_API_POOL_H
#define EMBER_API_POOL_H

#include "agent_client.h"

#define POOL_MAX_IDLE 8 /* idle connections per sandbox */

struct pool;

/* An empty pool; NULL when out of memory.  Free with pool__free(). */
struct pool *pool__new(void);

/* Close every idle connection and free @p.  NULL is allowed. */
void pool__free(struct pool *p);

/*
 * An idle agent connection to sandbox @id that can take an operation
 * (the caller owns it), or NULL: make a new one.
 */
struct agent_client *pool__take_agent(struct pool *p, const char *id);

/*
 * Give @c (connected to sandbox @id, its last operation a success) back
 * for later calls; freed instead when the pool holds POOL_MAX_IDLE for
 * @id already or is out of memory.  @c is the pool's from now on.
 */
void pool__give_agent(struct pool *p, const char *id, struct agent_client *c);

/*
 * Close every idle connection to sandbox @id: it is killed, parked or
 * restored from a park (its connections cannot be used again).
 */
void pool__drop(struct pool *p, const char *id);

#endif /* EMBER_API_POOL_H */
