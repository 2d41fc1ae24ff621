// SPDX-License-Identifier: Apache-2.0
/*
 * JSON-RPC 2.0 messages (jsonrpc.h): strict about the envelope (version,
 * id type, method, params), lenient about nothing else since MCP's own
 * layer (mcp.c) checks the params of each method.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "../sandbox/utf8.h"
#include "jsonrpc.h"

/* A usable id: a string or an integer (MCP: "MUST NOT be null"). */
static int id_ok(const json_t *id)
{
	return json_is_string(id) || json_is_integer(id);
}

static int invalid(struct jsonrpc_msg *msg, json_t *root, json_t *id,
		   const char *why, json_t **reply)
{
	*reply = jsonrpc__error(id_ok(id) ? id : NULL, JSONRPC_INVALID_REQUEST,
				"Invalid request: %s", why);
	json_decref(root);
	memset(msg, 0, sizeof(*msg));
	return JSONRPC_INVALID_REQUEST;
}

int jsonrpc__parse(const char *buf, size_t len, struct jsonrpc_msg *msg,
		   json_t **reply)
{
	json_t *root, *v, *id, *method, *params, *result, *error;
	json_error_t jerr;

	memset(msg, 0, sizeof(*msg));
	*reply = NULL;
	if (len > JSONRPC_MAX_MESSAGE) {
		*reply = jsonrpc__error(NULL, JSONRPC_PARSE_ERROR,
					"Parse error: message over %u bytes",
					JSONRPC_MAX_MESSAGE);
		return JSONRPC_PARSE_ERROR;
	}
	root = json_loadb(buf, len, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY,
			  &jerr);
	if (!root) {
		*reply = jsonrpc__error(NULL, JSONRPC_PARSE_ERROR,
					"Parse error: %s", jerr.text);
		return JSONRPC_PARSE_ERROR;
	}
	if (json_is_array(root))
		return invalid(msg, root, NULL, "batches are not supported",
			       reply);
	if (!json_is_object(root))
		return invalid(msg, root, NULL, "not an object", reply);
	id = json_object_get(root, "id");
	v = json_object_get(root, "jsonrpc");
	if (!json_is_string(v) || strcmp(json_string_value(v), "2.0"))
		return invalid(msg, root, id, "\"jsonrpc\" must be \"2.0\"",
			       reply);
	if (id && !id_ok(id))
		return invalid(msg, root, NULL,
			       "\"id\" must be a string or an integer", reply);
	method = json_object_get(root, "method");
	params = json_object_get(root, "params");
	result = json_object_get(root, "result");
	error = json_object_get(root, "error");
	if (method) {
		if (!json_is_string(method) || !json_string_length(method))
			return invalid(msg, root, id,
				       "\"method\" must be a string", reply);
		if (params && !json_is_object(params) && !json_is_null(params))
			return invalid(msg, root, id,
				       "\"params\" must be an object", reply);
		if (result || error)
			return invalid(msg, root, id,
				       "a request has no result or error",
				       reply);
		msg->kind = id ? JSONRPC_REQUEST : JSONRPC_NOTIFICATION;
		msg->method = json_string_value(method);
		msg->params = json_is_object(params) ? params : NULL;
	} else {
		if (!id || !result == !error)
			return invalid(msg, root, id,
				       "neither a request nor a response",
				       reply);
		if (error && !json_is_object(error))
			return invalid(msg, root, id,
				       "\"error\" must be an object", reply);
		msg->kind = JSONRPC_RESPONSE;
		msg->result = result;
		msg->error = error;
	}
	msg->root = root;
	msg->id = id;
	return 0;
}

void jsonrpc__free(struct jsonrpc_msg *msg)
{
	json_decref(msg->root);
	memset(msg, 0, sizeof(*msg));
}

json_t *jsonrpc__result(json_t *id, json_t *result)
{
	json_t *m;

	if (!result)
		return NULL;
	m = json_pack("{s:s, s:O, s:o}", "jsonrpc", "2.0", "id",
		      id ? id : json_null(), "result", result);
	return m;
}

json_t *jsonrpc__error(json_t *id, int code, const char *fmt, ...)
{
	char text[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	/* The text may hold a cut UTF-8 sequence or a guest's bytes. */
	return json_pack("{s:s, s:O, s:{s:i, s:o}}", "jsonrpc", "2.0", "id",
			 id ? id : json_null(), "error", "code", code,
			 "message", utf8__json(text, strlen(text)));
}

json_t *jsonrpc__request(json_t *id, const char *method, json_t *params)
{
	json_t *m = json_pack("{s:s, s:O, s:s}", "jsonrpc", "2.0", "id", id,
			      "method", method);

	if (!m) {
		json_decref(params);
		return NULL;
	}
	if (params && json_object_set_new(m, "params", params)) {
		json_decref(m);
		return NULL;
	}
	return m;
}

char *jsonrpc__dump(const json_t *msg, size_t *len)
{
	/* jansson escapes every control character: no '\n' inside. */
	char *s = json_dumps(msg, JSON_COMPACT);

	if (s)
		*len = strlen(s);
	return s;
}
