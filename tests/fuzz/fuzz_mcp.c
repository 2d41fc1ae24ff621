// SPDX-License-Identifier: Apache-2.0
/*
 * libFuzzer target: ember-mcp's message handling (api/mcp/: jsonrpc,
 * mcp, schema, tools) against a hostile client.  The input is what the
 * client sends, split at '\n' into messages as the stdio transport does
 * (an HTTP body is one such message); the first byte picks whether the
 * session starts initialized and whether --confirm is on (for a client
 * without elicitation, so that no call waits).  Tool calls run inline on
 * a fake backend that echoes its arguments.  Every answer must be one
 * line of valid JSON-RPC, and nothing may crash, leak or hang.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "api/mcp/jsonrpc.h"
#include "api/mcp/mcp.h"
#include "api/mcp/tools.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int check_send(struct mcp_out *o, const char *json, size_t len,
		      bool final)
{
	json_t *m = json_loadb(json, len, 0, NULL);

	(void)o;
	(void) final;
	if (!m || memchr(json, '\n', len) ||
	    !json_is_string(json_object_get(m, "jsonrpc")))
		abort();
	json_decref(m);
	return 0;
}

static json_t *echo(void *arg, const struct mcp_tool *t, const json_t *args)
{
	(void)arg;
	if (t->id == TOOL_KILL_SANDBOX)
		return tools__fail(
			"no sandbox %s",
			json_string_value(json_object_get(args, "sandbox_id")));
	return tools__ok(json_deep_copy(args), NULL);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char init[] =
		"{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\","
		"\"params\":{\"protocolVersion\":\"2025-06-18\","
		"\"capabilities\":{}}}";
	struct mcp_out out = { .send = check_send, .refs = 1 };
	struct mcp_config cfg = {
		.tools = tools__table,
		.ntools = TOOL_COUNT,
		.call = echo,
		.inline_calls = true,
	};
	struct mcp_session *s;
	const char *p, *end, *nl;

	if (size < 1 || size > 256 * 1024)
		return 0;
	cfg.confirm = data[0] & 2;
	s = mcp__new(&cfg);
	if (!s)
		abort();
	if (data[0] & 1)
		mcp__receive(s, init, strlen(init), &out);
	p = (const char *)data + 1;
	end = (const char *)data + size;
	while (p < end) {
		nl = memchr(p, '\n', (size_t)(end - p));
		if (!nl)
			nl = end;
		mcp__receive(s, p, (size_t)(nl - p), &out);
		p = nl + 1;
	}
	mcp__shutdown(s);
	mcp__wait(s, -1);
	mcp__free(s);
	return 0;
}
