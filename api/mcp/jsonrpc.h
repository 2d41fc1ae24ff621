/* SPDX-License-Identifier: Apache-2.0 */
/*
 * JSON-RPC 2.0 messages as MCP carries them (MCP spec 2025-06-18,
 * "Base Protocol": requests, notifications, responses; one message per
 * stdio line or HTTP body).  Pure: parsing and building, no I/O.  JSON
 * through jansson, as the control socket.
 */
#ifndef EMBER_MCP_JSONRPC_H
#define EMBER_MCP_JSONRPC_H

#include <jansson.h>
#include <stddef.h>

/* JSON-RPC 2.0's error codes (section 5.1) that ember-mcp answers. */
#define JSONRPC_PARSE_ERROR	 -32700
#define JSONRPC_INVALID_REQUEST	 -32600
#define JSONRPC_METHOD_NOT_FOUND -32601
#define JSONRPC_INVALID_PARAMS	 -32602
#define JSONRPC_INTERNAL_ERROR	 -32603

#define JSONRPC_MAX_MESSAGE (64u << 20) /* bytes of one message we take */

enum jsonrpc_kind {
	JSONRPC_REQUEST = 0, /* method and id */
	JSONRPC_NOTIFICATION = 1, /* method, no id */
	JSONRPC_RESPONSE = 2, /* id and result or error */
};

/*
 * A parsed message.  @root owns everything; the other pointers borrow
 * from it.  @id is a string or an integer (a request, a response), NULL
 * for a notification.  @params is an object or NULL.
 */
struct jsonrpc_msg {
	enum jsonrpc_kind kind;
	json_t *root;
	json_t *id;
	const char *method; /* requests and notifications */
	json_t *params;
	json_t *result; /* responses: one of result and error */
	json_t *error;
};

/*
 * jsonrpc__parse() - parse the @len bytes at @buf (not NUL-terminated,
 * at most JSONRPC_MAX_MESSAGE) as one JSON-RPC 2.0 message into @msg.
 * Returns 0 (release with jsonrpc__free()), or a JSON-RPC error code:
 * JSONRPC_PARSE_ERROR (not JSON), JSONRPC_INVALID_REQUEST (JSON but not
 * a message: a batch, no "jsonrpc":"2.0", a bad id, method or params);
 * then *@reply is the error response to send (a new reference; its id is
 * the message's when it had a usable one, else null) and @msg is empty.
 */
int jsonrpc__parse(const char *buf, size_t len, struct jsonrpc_msg *msg,
		   json_t **reply);

/* Release what jsonrpc__parse() filled in @msg; an empty @msg is fine. */
void jsonrpc__free(struct jsonrpc_msg *msg);

/*
 * jsonrpc__result() - {"jsonrpc":"2.0","id":@id,"result":@result}.
 * Takes @result (stolen, even on failure); @id is borrowed (NULL: null).
 * NULL when out of memory.
 */
json_t *jsonrpc__result(json_t *id, json_t *result);

/*
 * jsonrpc__error() - an error response with @code and the message
 * @fmt...; @id borrowed (NULL: null).  NULL when out of memory.
 */
json_t *jsonrpc__error(json_t *id, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/*
 * jsonrpc__request() - {"jsonrpc":"2.0","id":@id,"method":@method,
 * "params":@params}; @id borrowed, @params stolen (NULL: none).
 */
json_t *jsonrpc__request(json_t *id, const char *method, json_t *params);

/*
 * jsonrpc__dump() - @msg as compact JSON on one line (no '\n' inside, as
 * the stdio transport needs), malloc()ed, its length in *@len.  NULL when
 * out of memory.
 */
char *jsonrpc__dump(const json_t *msg, size_t *len);

#endif /* EMBER_MCP_JSONRPC_H */
