/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The roster of one MCP session (stdio: the process's; Streamable
 * HTTP: one per Mcp-Session-Id): the ids it made with their TTLs, the
 * only sandboxes its tools may touch, and its pool of idle agent
 * connections to them.  Ended with the session: roster__kill_all().
 * Thread-safe (tool calls run concurrently).
 */
#ifndef EMBER_MCP_ROSTER_H
#define EMBER_MCP_ROSTER_H

#include <jansson.h>
#include <stddef.h>

#include "../sandbox/record.h"

struct pool;
struct roster;

/* One sandbox of the session. */
struct roster_entry {
	char id[SANDBOX_ID_LEN + 1];
	unsigned int ttl_s; /* renewed on each use; 0: none */
};

/* An empty session with its pool; NULL when out of memory. */
struct roster *roster__new(void);

/* Free @s (after roster__kill_all()) and its pool.  NULL is allowed. */
void roster__free(struct roster *s);

/* @s's pool of idle agent connections (pool.h), @s's own. */
struct pool *roster__pool(struct roster *s);

/*
 * Add the sandbox @id with its TTL @ttl_s: 0, -ENOMEM, or -ESHUTDOWN
 * once roster__kill_all() ran (the caller kills it then).
 */
int roster__add(struct roster *s, const char *id, unsigned int ttl_s);

/* Forget the sandbox @id (gone or killed) and close its idle connections. */
void roster__forget(struct roster *s, const char *id);

/*
 * The session's sandbox named by @args' "sandbox_id" (its id or a unique
 * prefix of one of the session's) into @info and its TTL into *@ttl_s:
 * NULL, or the tool's failure result (one that is gone is forgotten).
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
 * A copy of the session's sandboxes, malloc()ed into *@out (the caller
 * frees it; NULL when *@n is 0): 0, or -ENOMEM.
 */
int roster__entries(struct roster *s, struct roster_entry **out, size_t *n);

/*
 * Kill every sandbox of @s, reporting failures on stderr; later
 * roster__add() calls fail.
 */
void roster__kill_all(struct roster *s);

#endif /* EMBER_MCP_ROSTER_H */
