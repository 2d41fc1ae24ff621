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

#include <stdbool.h>

#include "agent_client.h"
#include "record.h"

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

/*
 * pool__prune() - close the idle connections whose sandbox ended behind
 * the pool's back (killed elsewhere, its TTL ran out: the agent's end of
 * the connection closed), and forget the sandboxes left with none.  So a
 * long-lived server holds no socket of a sandbox that is gone.  Cost: a
 * poll() of each idle connection, at most POOL_MAX_IDLE a sandbox.
 */
void pool__prune(struct pool *p);

/*
 * pool__borrow() - a connection to the agent of the live sandbox @sb for
 * one operation: an idle one from @p, else a new one that answered a
 * PING within @timeout_ms (sandbox__agent_connect()).  NULL with the
 * reason in @err.  The caller owns it until pool__return().
 */
struct agent_client *pool__borrow(struct pool *p, const struct sandbox_info *sb,
				  int timeout_ms, char *err, size_t errlen);

/*
 * pool__return() - done with @c (from pool__borrow() for sandbox @id):
 * kept in @p for the next operation when it succeeded (@ok), else closed
 * (an operation that failed may have left the connection mid-message).
 * NULL @c is allowed.
 */
void pool__return(struct pool *p, const char *id, struct agent_client *c,
		  bool ok);

#endif /* EMBER_API_POOL_H */
