/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The host side of the code interpreter (guest-init/INTERP.md): a
 * connection to a sandbox's interpreter through ember's vsock Unix socket
 * (`CONNECT 49999\n`), its requests (execute with streamed events,
 * contexts) and the gathering of an execute's events into one execution
 * (E2B's shape: logs, results, error, execution count).
 *
 * Everything the guest sends is untrusted: a line over INTERP_MAX_LINE, a
 * line that is not a JSON object, an event of an unknown type or with
 * members of the wrong type ends the request with -EPROTO and leaves the
 * connection unusable.
 *
 * A client is one connection, one request at a time, not thread-safe;
 * open one per concurrent call.  Functions return 0 or a negative errno
 * and leave one line of text in @err (@errlen bytes) on failure.
 */
#ifndef EMBER_API_INTERP_CLIENT_H
#define EMBER_API_INTERP_CLIENT_H

#include <jansson.h>
#include <stdint.h>

/* The guest's vsock port (INTERP.md). */
#define INTERP_PORT 49999
/* Bytes of one line, '\n' included. */
#define INTERP_MAX_LINE (32u << 20)
/* Bytes of stdout (and of stderr) interp__gather() keeps: the rest is cut. */
#define INTERP_MAX_LOG (16u << 20)
/*
 * Results one execution may have, and their bytes: the lengths of their
 * string members plus the compact JSON size of the others (json, data,
 * chart, extra).
 */
#define INTERP_MAX_RESULTS	100
#define INTERP_MAX_RESULT_BYTES (64u << 20)

/* A result member's JSON type: a json_type, or this for any value. */
#define INTERP_ANY_TYPE (-1)

/* One member a result event may carry besides is_main_result. */
struct interp_member {
	const char *name;
	int type; /* a json_type, or INTERP_ANY_TYPE */
};

/*
 * The members of a result event besides is_main_result (INTERP.md,
 * protocol version 2), in E2B's order, ended by a NULL name: strings text,
 * html, markdown, svg, png (base64), jpeg (base64), pdf (base64), latex,
 * javascript; json (any JSON value); objects data (a DataFrame: column ->
 * values), chart (E2B's chart object) and extra (MIME type -> value, for
 * every other MIME type).
 */
extern const struct interp_member interp__result_members[];

struct interp_client;

/*
 * Connect to the interpreter of the sandbox whose vsock Unix socket is
 * @uds (at most 107 bytes), within @timeout_ms (> 0), and ping it.  On
 * success *@out is the new client (free with interp_client__free()).
 * Errors: -ENOENT (no such socket), -ECONNREFUSED (ember is gone),
 * -ECONNRESET (nothing listens on the guest port: no interpreter
 * running), -ETIMEDOUT, -EPROTO, -ENOMEM.
 */
int interp_client__connect(const char *uds, int timeout_ms,
			   struct interp_client **out, char *err,
			   size_t errlen);

/*
 * A client over the already connected stream socket @fd (past the
 * CONNECT handshake; made non-blocking here), without a ping: for tests
 * and fuzzing.  @fd is the client's from now on, even on failure.
 * -ENOMEM.
 */
int interp_client__attach_fd(int fd, struct interp_client **out);

/* Close the connection and free @c.  NULL is allowed. */
void interp_client__free(struct interp_client *c);

/*
 * Make sure the sandbox behind @uds has its interpreter running: connect
 * and ping; when nothing listens, start it through the guest agent
 * (`ember-interp start`, waiting up to @timeout_ms) and connect again.
 * *@out as for interp_client__connect().  -ENOEXEC when the sandbox's
 * rootfs has no interpreter.
 */
int interp_client__ensure(const char *uds, int timeout_ms,
			  struct interp_client **out, char *err, size_t errlen);

/* What to execute (INTERP.md, op `execute`).  Borrowed for the call. */
struct interp_exec_req {
	const char *code; /* UTF-8 */
	const char *language; /* NULL: "python"; "python" or "javascript" */
	const char *context; /* NULL: the language's default context */
	uint32_t timeout_ms; /* in the guest; 0: none */
	const char *const *env; /* NULL, or NULL-terminated "K=V" */
	/*
	 * NULL: the context's user (a default context: the template's
	 * default user).  Else a guest user as the agent's EXEC USER takes
	 * it (NAME, UID, NAME:GROUP, UID:GID): without @context, that
	 * user's default context of the language (INTERP.md, "Users");
	 * with one, it must be the context's user.
	 */
	const char *user;
};

/*
 * Called for each event line of an execute, in order, with the event
 * (borrowed: valid during the call); the last is end_of_execution.
 * Return 0 to go on, a negative errno to abandon the execute (the
 * connection is then closed, which interrupts the call in the guest).
 */
typedef int (*interp_event_fn)(void *arg, const json_t *event);

/*
 * Execute @req in the guest, passing every event to @fn(@arg) as it
 * comes, until end_of_execution.  The host gives up 30 s after
 * @req->timeout_ms (or never, when 0) with -ETIMEDOUT.  An error in the
 * user's code is an event, not a failure.  Errors: -EINVAL (bad
 * request), -EREMOTEIO (the guest answered `failure`: unknown context,
 * ...; its message in @err), what @fn returned, -ECONNRESET, -EPROTO,
 * -ETIMEDOUT.
 */
int interp_client__execute(struct interp_client *c,
			   const struct interp_exec_req *req,
			   interp_event_fn fn, void *arg, char *err,
			   size_t errlen);

/*
 * Send one non-execute request @req (a JSON object with "op": ping,
 * create_context, list_contexts, restart_context, delete_context) and
 * return its one answer in *@answer (a new reference the caller
 * releases), checked to be the type the op expects.  -EREMOTEIO for a
 * `failure` answer (its message in @err), -EPROTO, -ECONNRESET,
 * -ETIMEDOUT (@timeout_ms, > 0).
 */
int interp_client__request(struct interp_client *c, json_t *req, int timeout_ms,
			   json_t **answer, char *err, size_t errlen);

/*
 * A new, empty execution: {"stdout": "", "stderr": "", "results": [],
 * "error": null, "execution_count": 0}.  NULL when out of memory.
 */
json_t *interp__execution_new(void);

/*
 * An execution being gathered: @execution as interp__execution_new()
 * makes it (the caller's), @result_bytes the bytes of its results so far
 * (0 to begin with; counted as INTERP_MAX_RESULT_BYTES says), kept here
 * so that each result's objects are measured once, not at every result.
 */
struct interp_gather {
	json_t *execution;
	size_t result_bytes;
};

/*
 * Fold @event (one line of an execute, checked as interp_client__execute()
 * checks it) into @g->execution: stdout/stderr text appended (each kept to
 * INTERP_MAX_LOG bytes), results appended (objects with is_main_result and
 * every member of interp__result_members the event has; a null json is
 * left out), error set, execution_count set.  Returns 0, -ENOMEM, or
 * -EMSGSIZE for a result past INTERP_MAX_RESULTS or
 * INTERP_MAX_RESULT_BYTES (a guest flooding the host: the execute should
 * be abandoned; the result is not kept).
 */
int interp__gather(struct interp_gather *g, const json_t *event);

#endif /* EMBER_API_INTERP_CLIENT_H */
