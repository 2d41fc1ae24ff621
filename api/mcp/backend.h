/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The tools of tools.h run on sandboxes (api/sandbox/): one backend per
 * MCP session (stdio: the process; HTTP: each Mcp-Session-Id), which
 * knows the sandboxes it created and acts only on those, renews their TTL
 * on each use, and kills them all when the session ends.  Thread-safe:
 * tool calls run at once, each with its own agent or interpreter
 * connection.
 */
#ifndef EMBER_MCP_BACKEND_H
#define EMBER_MCP_BACKEND_H

#include <jansson.h>

#include "tools.h"

struct backend_opts {
	const char *ember; /* the VMM binary, absolute */
	const char *kernel; /* "" or NULL: no boots, templates only */
	const char *rootfs; /* ditto */
	const char *template_name; /* create_sandbox's default template */
	unsigned int ttl_s; /* create_sandbox's default timeout, 1-86400 */
};

struct backend;

/*
 * backend__new() - a backend with no sandboxes; @o's strings must outlive
 * it.  NULL when out of memory.
 */
struct backend *backend__new(const struct backend_opts *o);

/*
 * backend__call() - run tool @t with @args (checked against its input
 * schema) for the backend @arg: an mcp_call_fn (mcp.h).  A failure of
 * the tool (no such sandbox, a guest error) is a result with isError;
 * NULL only when out of memory.
 */
json_t *backend__call(void *arg, const struct mcp_tool *t, const json_t *args);

/*
 * backend__kill_all() - the session ends: kill every sandbox @b created
 * (sandbox__kill, parked ones too) and make create_sandbox calls still
 * under way kill theirs as soon as they are up.  Calls on the killed
 * sandboxes fail fast.  Idempotent.
 */
void backend__kill_all(struct backend *b);

/* backend__free() - free @b after backend__kill_all() and mcp__wait(). */
void backend__free(struct backend *b);

#endif /* EMBER_MCP_BACKEND_H */
