/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The roster of one MCP session (stdio: the process's; Streamable
 * HTTP: one per Mcp-Session-Id): the principal it acts for (owner.h:
 * the local user, or the bearer token), whose sandboxes are the only
 * ones its tools may touch, found by their owner record in the state
 * directory, so that a sandbox outlives the session that made it and
 * ember-mcp itself; the sandboxes this session made (killed at its end
 * only when asked: --kill-on-disconnect); and its pool of idle agent
 * connections.  Thread-safe (tool calls run concurrently).
 */
#ifndef EMBER_MCP_ROSTER_H
#define EMBER_MCP_ROSTER_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "../sandbox/record.h"
#include "owner.h"

struct pool;
struct roster;

/*
 * An empty session acting for @principal (copied) with its pool; with
 * @kill_on_end, roster__end() kills the sandboxes it made.  NULL when
 * out of memory.
 */
struct roster *roster__new(const char *principal, bool kill_on_end);

/* Free @s (after roster__end()) and its pool.  NULL is allowed. */
void roster__free(struct roster *s);

/* @s's pool of idle agent connections (pool.h), @s's own. */
struct pool *roster__pool(struct roster *s);

/*
 * The sandbox @id, just made by this session with the TTL @ttl_s: its
 * owner record written (the principal's from now on) and it remembered
 * as this session's.  0; -ESHUTDOWN once roster__end() ran with
 * kill_on_end (the caller kills it then); -ENOENT when it is gone
 * already; -ENOMEM or owner__save()'s errno, with @err.
 */
int roster__add(struct roster *s, const char *id, unsigned int ttl_s, char *err,
		size_t errlen);

/* Forget the sandbox @id (gone or killed) and close its idle connections. */
void roster__forget(struct roster *s, const char *id);

/*
 * The principal's sandbox named by @args' "sandbox_id" (its id, or a
 * unique prefix of the id of one of the principal's) into @info and the
 * TTL its record keeps into *@ttl_s: NULL, or the tool's failure result
 * ("no sandbox ID of yours" for one that does not exist or is another
 * principal's, alike; "gone" for one of this session's that is).
 */
json_t *roster__lookup(struct roster *s, const json_t *args,
		       struct sandbox_info *info, unsigned int *ttl_s);

/*
 * A use of @info: its TTL starts again from now (@ttl_s; quietly, and
 * not for a paused or booting one, which keeps its own).
 */
void roster__renew(const struct sandbox_info *info, unsigned int ttl_s);

/*
 * roster__lookup() + roster__renew() + running: the sandbox a guest
 * call works in, into @info; NULL, or the failure result (also for a
 * paused or parked one).
 */
json_t *roster__usable(struct roster *s, const json_t *args,
		       struct sandbox_info *info);

/*
 * The principal's live and parked sandboxes, oldest first, malloc()ed
 * into *@out (the caller frees it; NULL when *@n is 0): 0, or a negative
 * errno with @err.
 */
int roster__list(struct roster *s, struct sandbox_info **out, size_t *n,
		 char *err, size_t errlen);

/*
 * The session ends: with kill_on_end, kill every sandbox it made (parked
 * ones too; failures on stderr), and later roster__add() calls fail;
 * else nothing is killed.  Idempotent.
 */
void roster__end(struct roster *s);

#endif /* EMBER_MCP_ROSTER_H */
