/* SPDX-License-Identifier: Apache-2.0 */
/*
 * An MCP session, server side (MCP spec 2025-06-18 and 2025-11-25:
 * "Lifecycle", "Tools", "Elicitation", "Utilities: Ping"): the protocol
 * state of one client (version negotiated at initialize, the client's
 * capabilities), the dispatch of its messages, tool calls on threads of
 * their own, and requests from the server to the client (elicitation)
 * with the routing of their responses back to the waiting call.
 *
 * A transport (stdio.c, http.c) feeds each message it receives to
 * mcp__receive() with an mcp_out that carries what the session sends
 * back: the response to that message and, for a tool call, any request
 * the call makes of the client first.  The tools themselves are a table
 * (tools.h) and a backend function; the session knows nothing of
 * sandboxes, so that it can be unit-tested and fuzzed with a fake one.
 */
#ifndef EMBER_MCP_MCP_H
#define EMBER_MCP_MCP_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "tools.h"

#define MCP_LATEST_VERSION "2025-11-25"
#define MCP_MAX_CALLS	   32 /* tools/call running at once, per session */
#define MCP_ELICIT_MS	   (10 * 60 * 1000) /* the user's time to answer */

/*
 * Where a session's messages to the client go.  @send is called with one
 * message (compact JSON, one line) from any thread, so it must be
 * thread-safe; @final is true for the response that answers the message
 * this mcp_out was given with (the last message sent through it), false
 * for a request the session makes before it (elicitation/create).  It
 * returns 0 or a negative errno (the client is gone: the session goes on).
 * @release is called once the session no longer uses the mcp_out (after
 * the final send, or when it was given a notification); NULL when the
 * transport keeps it for good.  @refs belongs to the session.
 */
struct mcp_out {
	int (*send)(struct mcp_out *o, const char *json, size_t len,
		    bool final);
	void (*release)(struct mcp_out *o);
	int refs;
};

/*
 * Runs tool @t with @args (already checked against its input schema) for
 * @arg (mcp_config.call_arg).  Returns a CallToolResult (a new reference:
 * tools__ok(), tools__fail()), or NULL on an internal failure (out of
 * memory), which the client gets as JSONRPC_INTERNAL_ERROR.
 */
typedef json_t *(*mcp_call_fn)(void *arg, const struct mcp_tool *t,
			       const json_t *args);

struct mcp_config {
	const struct mcp_tool *tools; /* the table served by tools/list */
	size_t ntools;
	mcp_call_fn call;
	void *call_arg;
	bool confirm; /* ask the user before a tool with .confirm runs */
	bool inline_calls; /* run tools/call on the receiving thread (unit
			      tests, fuzzing); else one thread per call */
	int elicit_ms; /* how long a call waits for the user; 0: MCP_ELICIT_MS */
	const char *version; /* serverInfo.version */
};

struct mcp_session;

/*
 * mcp__new() - a session that has not seen initialize yet.  @cfg is
 * copied; its tables and call_arg must outlive the session.  NULL when
 * out of memory or a tool's schema is not valid JSON.
 */
struct mcp_session *mcp__new(const struct mcp_config *cfg);

/*
 * mcp__receive() - handle the @len bytes at @buf as one JSON-RPC message
 * from the client (a stdio line, an HTTP body).  A request is answered
 * through @out: at once (initialize, ping, tools/list, every error), or
 * from the call's thread (tools/call), which may first send it an
 * elicitation request.  A response from the client goes to the call
 * waiting for it; notifications are taken in silence.  Returns 1 when a
 * response will be sent through @out (a request, or a message so
 * malformed that its error response has id null), 0 when nothing will be
 * (then @out was not used), or -ENOMEM.
 */
int mcp__receive(struct mcp_session *s, const char *buf, size_t len,
		 struct mcp_out *out);

/*
 * mcp__shutdown() - the client is gone or the server stops: calls that
 * wait for the user get a refusal, new tools/call are refused.  Calls
 * already running go on (see mcp__wait()).
 */
void mcp__shutdown(struct mcp_session *s);

/*
 * mcp__wait() - wait until no tools/call of @s is running, at most
 * @timeout_ms (< 0: no limit).  Returns true when none is.
 */
bool mcp__wait(struct mcp_session *s, int timeout_ms);

/* mcp__free() - free @s after mcp__shutdown() and mcp__wait(). NULL ok. */
void mcp__free(struct mcp_session *s);

/*
 * mcp__version_ok() - whether @v is a protocol revision ember-mcp speaks
 * (2024-11-05, 2025-03-26, 2025-06-18, 2025-11-25); the HTTP transport
 * checks the MCP-Protocol-Version header with it.
 */
bool mcp__version_ok(const char *v);

/* mcp__initialized() - whether @s answered an initialize. */
bool mcp__initialized(struct mcp_session *s);

#endif /* EMBER_MCP_MCP_H */
