/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The tools of tools.h run on sandboxes (api/sandbox/): one backend per
 * MCP session (stdio: the process; HTTP: each Mcp-Session-Id), which acts
 * for a principal (owner.h: the local user, or the bearer token) on the
 * sandboxes that principal created, from any session, in any ember-mcp
 * process (roster.h), and renews their TTL on each use.  They outlive
 * the session unless --kill-on-disconnect asks otherwise.  Thread-safe:
 * tool calls run at once, each with its own agent or interpreter
 * connection.
 */
#ifndef EMBER_MCP_BACKEND_H
#define EMBER_MCP_BACKEND_H

#include <jansson.h>
#include <stdbool.h>

#include "tools.h"

struct backend_opts {
	const char *ember; /* the VMM binary, absolute */
	const char *kernel; /* "" or NULL: no boots, templates only */
	const char *rootfs; /* ditto */
	const char *template_name; /* create_sandbox's default template */
	unsigned int ttl_s; /* create_sandbox's default timeout, 1-86400 */
	const char *principal; /* whom the tools act for (owner.h) */
	bool kill_on_disconnect; /* backend__end() kills what it made */
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
 * backend__end() - the session ends.  With kill_on_disconnect: kill every
 * sandbox @b created (sandbox__kill, parked ones too) and make
 * create_sandbox calls still under way kill theirs as soon as they are
 * up; calls on the killed sandboxes fail fast.  Without it nothing is
 * killed: the sandboxes stay the principal's.  Idempotent.
 */
void backend__end(struct backend *b);

/*
 * backend__prune() - close @b's idle guest connections to sandboxes that
 * ended meanwhile (pool__prune()); thread-safe, for a periodic sweep.
 */
void backend__prune(struct backend *b);

/* backend__free() - free @b after backend__end() and mcp__wait(). */
void backend__free(struct backend *b);

#endif /* EMBER_MCP_BACKEND_H */
