// SPDX-License-Identifier: Apache-2.0
/*
 * Unit tests for ember-mcp's protocol (api/mcp/: jsonrpc, mcp, schema,
 * text, tools) over a fake tool backend: message parsing, version
 * negotiation, lifecycle, error codes, argument checks against the tools'
 * own schemas, dispatch, and elicitation under --confirm.  No sandbox.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../../api/mcp/jsonrpc.h"
#include "../../api/mcp/mcp.h"
#include "../../api/mcp/schema.h"
#include "../../api/sandbox/guest_stat.h"
#include "../../api/mcp/tools.h"
#include "../../api/sandbox/utf8.h"

/* --- a transport that keeps what the session sends -------------------- */

struct sink {
	struct mcp_out base;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	json_t *msgs; /* array */
	int finals;
};

static int sink_send(struct mcp_out *o, const char *json, size_t len,
		     bool final)
{
	struct sink *k = (struct sink *)o;
	json_t *m = json_loadb(json, len, 0, NULL);

	assert_non_null(m);
	assert_null(memchr(json, '\n', len));
	pthread_mutex_lock(&k->lock);
	json_array_append_new(k->msgs, m);
	k->finals += final;
	pthread_cond_broadcast(&k->cond);
	pthread_mutex_unlock(&k->lock);
	return 0;
}

static void sink_init(struct sink *k)
{
	memset(k, 0, sizeof(*k));
	k->base.send = sink_send;
	k->base.refs = 1;
	pthread_mutex_init(&k->lock, NULL);
	pthread_cond_init(&k->cond, NULL);
	k->msgs = json_array();
}

static void sink_fini(struct sink *k)
{
	json_decref(k->msgs);
	pthread_cond_destroy(&k->cond);
	pthread_mutex_destroy(&k->lock);
}

/* Wait until @n messages came; the last one (borrowed). */
static json_t *sink_wait(struct sink *k, size_t n)
{
	json_t *m;

	pthread_mutex_lock(&k->lock);
	while (json_array_size(k->msgs) < n)
		pthread_cond_wait(&k->cond, &k->lock);
	m = json_array_get(k->msgs, n - 1);
	pthread_mutex_unlock(&k->lock);
	return m;
}

/* --- a fake backend ---------------------------------------------------- */

struct fake {
	pthread_mutex_t lock; /* calls run on threads */
	int calls;
	enum tool_id last;
	json_t *args;
};

static json_t *fake_call(void *arg, const struct mcp_tool *t,
			 const json_t *args)
{
	struct fake *f = arg;

	pthread_mutex_lock(&f->lock);
	f->calls++;
	f->last = t->id;
	json_decref(f->args);
	f->args = json_deep_copy(args);
	pthread_mutex_unlock(&f->lock);
	if (t->id == TOOL_KILL_SANDBOX)
		return tools__fail(
			"no sandbox %s in this session",
			json_string_value(json_object_get(args, "sandbox_id")));
	return tools__ok(json_pack("{s:s}", "sandbox_id", "0123456789ab"),
			 NULL);
}

struct fixture {
	struct fake fake;
	struct sink sink;
	struct mcp_session *s;
};

static struct mcp_session *session(struct fixture *f, bool inline_calls,
				   bool confirm)
{
	struct mcp_config cfg = {
		.tools = tools__table,
		.ntools = TOOL_COUNT,
		.call = fake_call,
		.call_arg = &f->fake,
		.inline_calls = inline_calls,
		.confirm = confirm,
		.version = "test",
	};

	f->s = mcp__new(&cfg);
	assert_non_null(f->s);
	return f->s;
}

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));

	if (!f)
		return -1;
	sink_init(&f->sink);
	pthread_mutex_init(&f->fake.lock, NULL);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	if (f->s) {
		mcp__shutdown(f->s);
		mcp__wait(f->s, -1);
		mcp__free(f->s);
	}
	json_decref(f->fake.args);
	sink_fini(&f->sink);
	free(f);
	return 0;
}

/* Send @text; return the answer (borrowed from the sink), or NULL. */
static json_t *say(struct fixture *f, const char *text)
{
	size_t before = json_array_size(f->sink.msgs);
	int rc = mcp__receive(f->s, text, strlen(text), &f->sink.base);

	assert_true(rc >= 0);
	if (rc == 0) {
		assert_int_equal(json_array_size(f->sink.msgs), before);
		return NULL;
	}
	return sink_wait(&f->sink, before + 1);
}

static int err_code(const json_t *m)
{
	return (int)json_integer_value(
		json_object_get(json_object_get(m, "error"), "code"));
}

static void init(struct fixture *f, const char *caps)
{
	char buf[512];
	json_t *r;

	snprintf(buf, sizeof(buf),
		 "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\","
		 "\"params\":{\"protocolVersion\":\"2025-06-18\","
		 "\"capabilities\":%s,\"clientInfo\":{\"name\":\"t\","
		 "\"version\":\"1\"}}}",
		 caps);
	r = say(f, buf);
	assert_non_null(json_object_get(r, "result"));
	assert_null(say(f, "{\"jsonrpc\":\"2.0\",\"method\":"
			   "\"notifications/initialized\"}"));
}

static json_t *call(struct fixture *f, int id, const char *name,
		    const char *args)
{
	char buf[1024];

	snprintf(buf, sizeof(buf),
		 "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"tools/call\","
		 "\"params\":{\"name\":\"%s\",\"arguments\":%s}}",
		 id, name, args);
	return say(f, buf);
}

/* --- jsonrpc ----------------------------------------------------------- */

static void test_parse_kinds(void **state)
{
	static const char req[] =
		"{\"jsonrpc\":\"2.0\",\"id\":\"a\",\"method\":\"m\","
		"\"params\":{}}";
	static const char note[] = "{\"jsonrpc\":\"2.0\",\"method\":\"n\"}";
	static const char resp[] =
		"{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{}}";
	struct jsonrpc_msg m;
	json_t *reply;

	(void)state;
	assert_int_equal(jsonrpc__parse(req, strlen(req), &m, &reply), 0);
	assert_int_equal(m.kind, JSONRPC_REQUEST);
	assert_string_equal(m.method, "m");
	assert_string_equal(json_string_value(m.id), "a");
	jsonrpc__free(&m);
	assert_int_equal(jsonrpc__parse(note, strlen(note), &m, &reply), 0);
	assert_int_equal(m.kind, JSONRPC_NOTIFICATION);
	assert_null(m.id);
	jsonrpc__free(&m);
	assert_int_equal(jsonrpc__parse(resp, strlen(resp), &m, &reply), 0);
	assert_int_equal(m.kind, JSONRPC_RESPONSE);
	assert_int_equal(json_integer_value(m.id), 7);
	jsonrpc__free(&m);
}

static void test_parse_errors(void **state)
{
	static const struct {
		const char *text;
		int code;
		bool id_kept;
	} cases[] = {
		{ "", JSONRPC_PARSE_ERROR, false },
		{ "{\"jsonrpc\":", JSONRPC_PARSE_ERROR, false },
		{ "[]", JSONRPC_INVALID_REQUEST, false },
		{ "42", JSONRPC_INVALID_REQUEST, false },
		{ "{\"id\":1,\"method\":\"m\"}", JSONRPC_INVALID_REQUEST,
		  true },
		{ "{\"jsonrpc\":\"1.0\",\"id\":1,\"method\":\"m\"}",
		  JSONRPC_INVALID_REQUEST, true },
		{ "{\"jsonrpc\":\"2.0\",\"id\":null,\"method\":\"m\"}",
		  JSONRPC_INVALID_REQUEST, false },
		{ "{\"jsonrpc\":\"2.0\",\"id\":1.5,\"method\":\"m\"}",
		  JSONRPC_INVALID_REQUEST, false },
		{ "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":3}",
		  JSONRPC_INVALID_REQUEST, true },
		{ "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"m\","
		  "\"params\":[1]}",
		  JSONRPC_INVALID_REQUEST, true },
		{ "{\"jsonrpc\":\"2.0\",\"id\":1}", JSONRPC_INVALID_REQUEST,
		  true },
		{ "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":1,\"error\":{}}",
		  JSONRPC_INVALID_REQUEST, true },
		{ "{\"jsonrpc\":\"2.0\",\"id\":1,\"id\":2,\"method\":\"m\"}",
		  JSONRPC_PARSE_ERROR, false },
	};
	struct jsonrpc_msg m;
	json_t *reply, *e;

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int rc = jsonrpc__parse(cases[i].text, strlen(cases[i].text),
					&m, &reply);

		assert_int_equal(rc, cases[i].code);
		assert_non_null(reply);
		e = json_object_get(reply, "error");
		assert_int_equal(json_integer_value(json_object_get(e, "code")),
				 cases[i].code);
		if (cases[i].id_kept)
			assert_int_equal(json_integer_value(
						 json_object_get(reply, "id")),
					 1);
		else
			assert_true(json_is_null(json_object_get(reply, "id")));
		assert_null(m.root);
		json_decref(reply);
	}
}

static void test_text(void **state)
{
	json_t *j;

	(void)state;
	assert_true(utf8__ok("h\xc3\xa9", 3));
	assert_false(utf8__ok("\xc3", 1));
	assert_false(utf8__ok("\xed\xa0\x80", 3)); /* a surrogate */
	assert_false(utf8__ok("\xc0\xaf", 2)); /* overlong */
	assert_false(utf8__ok("a\0b", 3));
	j = utf8__json("a\xffz\0", 4);
	assert_non_null(j);
	assert_string_equal(json_string_value(j), "a\xef\xbf\xbdz\xef\xbf\xbd");
	json_decref(j);
}

/* --- lifecycle --------------------------------------------------------- */

static void test_versions(void **state)
{
	static const char *const vs[][2] = {
		{ "2024-11-05", "2024-11-05" },
		{ "2025-03-26", "2025-03-26" },
		{ "2025-06-18", "2025-06-18" },
		{ "2025-11-25", "2025-11-25" },
		{ "2099-01-01", MCP_LATEST_VERSION },
		{ "1999-01-01", MCP_LATEST_VERSION },
	};
	struct fixture *f = *state;
	char buf[256];
	json_t *r;

	for (size_t i = 0; i < sizeof(vs) / sizeof(vs[0]); i++) {
		session(f, true, false);
		snprintf(buf, sizeof(buf),
			 "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":"
			 "\"initialize\",\"params\":{\"protocolVersion\":"
			 "\"%s\",\"capabilities\":{}}}",
			 vs[i][0]);
		r = json_object_get(say(f, buf), "result");
		assert_string_equal(json_string_value(json_object_get(
					    r, "protocolVersion")),
				    vs[i][1]);
		assert_non_null(json_object_get(
			json_object_get(r, "capabilities"), "tools"));
		assert_string_equal(
			json_string_value(json_object_get(
				json_object_get(r, "serverInfo"), "name")),
			"ember-mcp");
		mcp__free(f->s);
		f->s = NULL;
	}
	assert_true(mcp__version_ok("2025-06-18"));
	assert_false(mcp__version_ok("2025-06-19"));
}

static void test_lifecycle(void **state)
{
	struct fixture *f = *state;
	json_t *r;

	session(f, true, false);
	r = say(f, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}");
	assert_int_equal(err_code(r), JSONRPC_INVALID_REQUEST);
	r = say(f, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\"}");
	assert_true(json_is_object(json_object_get(r, "result")));
	r = say(f, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"initialize\","
		   "\"params\":{}}");
	assert_int_equal(err_code(r), JSONRPC_INVALID_PARAMS);
	assert_false(mcp__initialized(f->s));
	init(f, "{}");
	assert_true(mcp__initialized(f->s));
	r = say(f, "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"initialize\","
		   "\"params\":{\"protocolVersion\":\"2025-06-18\"}}");
	assert_int_equal(err_code(r), JSONRPC_INVALID_REQUEST);
	r = say(f, "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"nope\"}");
	assert_int_equal(err_code(r), JSONRPC_METHOD_NOT_FOUND);
	assert_int_equal(json_integer_value(json_object_get(r, "id")), 5);
	r = say(f, "not json");
	assert_int_equal(err_code(r), JSONRPC_PARSE_ERROR);
	assert_true(json_is_null(json_object_get(r, "id")));
	/* A response nobody waits for, a notification: silence. */
	assert_null(say(f, "{\"jsonrpc\":\"2.0\",\"id\":\"x\",\"result\":{}}"));
	assert_null(say(f, "{\"jsonrpc\":\"2.0\",\"method\":"
			   "\"notifications/cancelled\",\"params\":{}}"));
}

static void test_tools_list(void **state)
{
	struct fixture *f = *state;
	json_t *tools, *t;
	size_t i;

	session(f, true, false);
	init(f, "{}");
	tools = json_object_get(
		json_object_get(say(f, "{\"jsonrpc\":\"2.0\",\"id\":1,"
				       "\"method\":\"tools/list\"}"),
				"result"),
		"tools");
	assert_int_equal(json_array_size(tools), TOOL_COUNT);
	json_array_foreach(tools, i, t)
	{
		json_t *in = json_object_get(t, "inputSchema");
		json_t *out = json_object_get(t, "outputSchema");

		assert_string_equal(
			json_string_value(json_object_get(t, "name")),
			tools__table[i].name);
		assert_string_equal(
			json_string_value(json_object_get(in, "type")),
			"object");
		assert_string_equal(
			json_string_value(json_object_get(out, "type")),
			"object");
		assert_true(json_is_string(json_object_get(t, "description")));
	}
	assert_non_null(tools__find("run_code"));
	assert_null(tools__find("run"));
}

/* --- tools/call -------------------------------------------------------- */

static void test_call_args(void **state)
{
	static const struct {
		const char *tool, *args;
		int code; /* 0: the backend runs it */
	} cases[] = {
		{ "create_sandbox", "{}", 0 },
		{ "create_sandbox", "{\"vcpus\":0}", JSONRPC_INVALID_PARAMS },
		{ "create_sandbox", "{\"vcpus\":33}", JSONRPC_INVALID_PARAMS },
		{ "create_sandbox", "{\"vcpus\":2.5}", JSONRPC_INVALID_PARAMS },
		{ "create_sandbox", "{\"vcpus\":2.0}", 0 },
		{ "create_sandbox", "{\"timeout\":\"5\"}",
		  JSONRPC_INVALID_PARAMS },
		{ "create_sandbox", "{\"template\":\"\"}",
		  JSONRPC_INVALID_PARAMS },
		{ "create_sandbox", "{\"mem\":512}", JSONRPC_INVALID_PARAMS },
		{ "create_sandbox", "{\"network\":\"nat\"}", 0 },
		{ "create_sandbox", "{\"network\":\"host-only\"}", 0 },
		{ "create_sandbox", "{\"network\":\"none\"}", 0 },
		{ "create_sandbox", "{\"network\":\"wifi\"}",
		  JSONRPC_INVALID_PARAMS },
		{ "create_sandbox", "{\"network\":true}",
		  JSONRPC_INVALID_PARAMS },
		{ "run_code", "{\"sandbox_id\":\"a\"}",
		  JSONRPC_INVALID_PARAMS },
		{ "run_code", "{\"sandbox_id\":\"a\",\"code\":\"1\"}", 0 },
		{ "run_code",
		  "{\"sandbox_id\":\"a\",\"code\":\"1\",\"language\":\"r\"}",
		  JSONRPC_INVALID_PARAMS },
		{ "run_code",
		  "{\"sandbox_id\":\"a\",\"code\":\"1\",\"language\":"
		  "\"javascript\",\"timeout\":0.5}",
		  0 },
		{ "run_code",
		  "{\"sandbox_id\":\"a\",\"code\":\"1\",\"timeout\":0}",
		  JSONRPC_INVALID_PARAMS },
		{ "run_code",
		  "{\"sandbox_id\":\"0123456789abc\",\"code\":\"1\"}",
		  JSONRPC_INVALID_PARAMS },
		{ "run_command",
		  "{\"sandbox_id\":\"a\",\"command\":\"ls\",\"env\":{\"A\":\"1\"}}",
		  0 },
		{ "run_command",
		  "{\"sandbox_id\":\"a\",\"command\":\"ls\",\"env\":{\"A\":1}}",
		  JSONRPC_INVALID_PARAMS },
		{ "run_command", "{\"sandbox_id\":\"a\",\"command\":\"\"}",
		  JSONRPC_INVALID_PARAMS },
		{ "write_file",
		  "{\"sandbox_id\":\"a\",\"path\":\"/x\",\"content\":\"\","
		  "\"encoding\":\"hex\"}",
		  JSONRPC_INVALID_PARAMS },
		{ "read_file", "{\"sandbox_id\":\"a\",\"path\":\"/x\"}", 0 },
		{ "list_files", "{\"sandbox_id\":\"a\"}", 0 },
		{ "pause_sandbox", "{\"sandbox_id\":\"a\",\"to_disk\":1}",
		  JSONRPC_INVALID_PARAMS },
		{ "list_sandboxes", "{}", 0 },
		{ "list_sandboxes", "{\"x\":1}", JSONRPC_INVALID_PARAMS },
		{ "list_sandboxes", "null", 0 },
		{ "list_sandboxes", "[]", JSONRPC_INVALID_PARAMS },
		{ "expose_port", "{\"sandbox_id\":\"a\",\"port\":8000}", 0 },
		{ "expose_port",
		  "{\"sandbox_id\":\"a\",\"port\":8000,\"host_port\":0}", 0 },
		{ "expose_port", "{\"sandbox_id\":\"a\"}",
		  JSONRPC_INVALID_PARAMS },
		{ "expose_port", "{\"sandbox_id\":\"a\",\"port\":0}",
		  JSONRPC_INVALID_PARAMS },
		{ "expose_port", "{\"sandbox_id\":\"a\",\"port\":65536}",
		  JSONRPC_INVALID_PARAMS },
		{ "expose_port",
		  "{\"sandbox_id\":\"a\",\"port\":80,\"host_port\":-1}",
		  JSONRPC_INVALID_PARAMS },
		{ "expose_port", "{\"sandbox_id\":\"a\",\"port\":\"80\"}",
		  JSONRPC_INVALID_PARAMS },
		{ "no_such_tool", "{}", JSONRPC_INVALID_PARAMS },
	};
	struct fixture *f = *state;
	json_t *r;
	int before;

	session(f, true, false);
	init(f, "{}");
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		before = f->fake.calls;
		r = call(f, (int)i + 10, cases[i].tool, cases[i].args);
		if (cases[i].code) {
			if (err_code(r) != cases[i].code)
				fail_msg("%s %s: %s", cases[i].tool,
					 cases[i].args,
					 json_dumps(r, JSON_COMPACT));
			assert_int_equal(f->fake.calls, before);
		} else {
			if (!json_object_get(r, "result"))
				fail_msg("%s %s: %s", cases[i].tool,
					 cases[i].args,
					 json_dumps(r, JSON_COMPACT));
			assert_int_equal(f->fake.calls, before + 1);
		}
		assert_int_equal(json_integer_value(json_object_get(r, "id")),
				 (int)i + 10);
	}
	r = say(f, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\","
		   "\"params\":{}}");
	assert_int_equal(err_code(r), JSONRPC_INVALID_PARAMS);
}

static void test_call_results(void **state)
{
	struct fixture *f = *state;
	json_t *r, *c;

	session(f, false, false); /* on threads, as ember-mcp runs them */
	init(f, "{}");
	r = json_object_get(call(f, 1, "create_sandbox", "{}"), "result");
	assert_string_equal(
		json_string_value(json_object_get(
			json_object_get(r, "structuredContent"), "sandbox_id")),
		"0123456789ab");
	c = json_array_get(json_object_get(r, "content"), 0);
	assert_string_equal(json_string_value(json_object_get(c, "type")),
			    "text");
	assert_string_equal(json_string_value(json_object_get(c, "text")),
			    "{\"sandbox_id\":\"0123456789ab\"}");
	assert_null(json_object_get(r, "isError"));
	/* A tool failure is a result, not a protocol error. */
	r = json_object_get(
		call(f, 2, "kill_sandbox", "{\"sandbox_id\":\"b\"}"), "result");
	assert_true(json_is_true(json_object_get(r, "isError")));
	c = json_array_get(json_object_get(r, "content"), 0);
	assert_string_equal(json_string_value(json_object_get(c, "text")),
			    "no sandbox b in this session");
	assert_int_equal(f->fake.last, TOOL_KILL_SANDBOX);
}

/* Ten calls at once: ten answers, each with its own id. */
static void test_concurrent(void **state)
{
	struct fixture *f = *state;
	char buf[256];
	int seen[10] = { 0 };
	json_t *m;
	size_t i;

	session(f, false, false);
	init(f, "{}");
	for (i = 0; i < 10; i++) {
		snprintf(buf, sizeof(buf),
			 "{\"jsonrpc\":\"2.0\",\"id\":%zu,\"method\":"
			 "\"tools/call\",\"params\":{\"name\":\"run_command\","
			 "\"arguments\":{\"sandbox_id\":\"a\",\"command\":"
			 "\"true\"}}}",
			 100 + i);
		assert_int_equal(
			mcp__receive(f->s, buf, strlen(buf), &f->sink.base), 1);
	}
	sink_wait(&f->sink, 11);
	assert_true(mcp__wait(f->s, 5000));
	for (i = 1; i < 11; i++) {
		m = json_array_get(f->sink.msgs, i);
		seen[json_integer_value(json_object_get(m, "id")) - 100]++;
	}
	for (i = 0; i < 10; i++)
		assert_int_equal(seen[i], 1);
	assert_int_equal(f->fake.calls, 10);
}

/* --- --confirm --------------------------------------------------------- */

static void test_confirm_no_elicitation(void **state)
{
	struct fixture *f = *state;
	json_t *r;

	session(f, true, true);
	init(f, "{}");
	r = json_object_get(call(f, 1, "run_command",
				 "{\"sandbox_id\":\"a\",\"command\":\"rm\"}"),
			    "result");
	assert_true(json_is_true(json_object_get(r, "isError")));
	assert_non_null(
		strstr(json_string_value(json_object_get(
			       json_array_get(json_object_get(r, "content"), 0),
			       "text")),
		       "requires a client that supports elicitation"));
	assert_int_equal(f->fake.calls, 0);
	/* Tools that do not run code need no approval. */
	r = json_object_get(call(f, 2, "list_sandboxes", "{}"), "result");
	assert_null(json_object_get(r, "isError"));
	assert_int_equal(f->fake.calls, 1);
}

/* Answer the elicitation request with @answer; the call's result. */
static json_t *elicit(struct fixture *f, int id, const char *answer)
{
	json_t *req, *params;
	char buf[512];
	size_t n = json_array_size(f->sink.msgs);
	int finals = f->sink.finals;

	snprintf(buf, sizeof(buf),
		 "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"tools/call\","
		 "\"params\":{\"name\":\"run_code\",\"arguments\":{"
		 "\"sandbox_id\":\"a\",\"code\":\"print(42)\"}}}",
		 id);
	assert_int_equal(mcp__receive(f->s, buf, strlen(buf), &f->sink.base),
			 1);
	req = sink_wait(&f->sink, n + 1);
	assert_string_equal(json_string_value(json_object_get(req, "method")),
			    "elicitation/create");
	params = json_object_get(req, "params");
	assert_non_null(
		strstr(json_string_value(json_object_get(params, "message")),
		       "print(42)"));
	assert_string_equal(
		json_string_value(json_object_get(
			json_object_get(params, "requestedSchema"), "type")),
		"object");
	assert_int_equal(f->sink.finals, finals); /* a request: not final */
	snprintf(buf, sizeof(buf), "{\"jsonrpc\":\"2.0\",\"id\":\"%s\",%s}",
		 json_string_value(json_object_get(req, "id")), answer);
	assert_int_equal(mcp__receive(f->s, buf, strlen(buf), &f->sink.base),
			 0);
	return json_object_get(sink_wait(&f->sink, n + 2), "result");
}

static void test_confirm_elicitation(void **state)
{
	struct fixture *f = *state;
	json_t *r;

	session(f, false, true);
	init(f, "{\"elicitation\":{}}");
	r = elicit(f, 1, "\"result\":{\"action\":\"decline\"}");
	assert_true(json_is_true(json_object_get(r, "isError")));
	assert_int_equal(f->fake.calls, 0);
	r = elicit(f, 2, "\"result\":{\"action\":\"cancel\"}");
	assert_true(json_is_true(json_object_get(r, "isError")));
	r = elicit(f, 3,
		   "\"result\":{\"action\":\"accept\",\"content\":"
		   "{\"approve\":false}}");
	assert_true(json_is_true(json_object_get(r, "isError")));
	r = elicit(f, 4, "\"error\":{\"code\":-32601,\"message\":\"no\"}");
	assert_true(json_is_true(json_object_get(r, "isError")));
	assert_int_equal(f->fake.calls, 0);
	r = elicit(f, 5,
		   "\"result\":{\"action\":\"accept\",\"content\":"
		   "{\"approve\":true}}");
	assert_null(json_object_get(r, "isError"));
	assert_int_equal(f->fake.calls, 1);
	assert_int_equal(f->fake.last, TOOL_RUN_CODE);
}

/* A call waiting for the user ends when the session does. */
static void test_confirm_shutdown(void **state)
{
	struct fixture *f = *state;
	const char *req = "{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":"
			  "\"tools/call\",\"params\":{\"name\":"
			  "\"run_command\",\"arguments\":{\"sandbox_id\":"
			  "\"a\",\"command\":\"x\"}}}";
	json_t *r;

	session(f, false, true);
	init(f, "{\"elicitation\":{}}");
	assert_int_equal(mcp__receive(f->s, req, strlen(req), &f->sink.base),
			 1);
	sink_wait(&f->sink, 2);
	mcp__shutdown(f->s);
	assert_true(mcp__wait(f->s, 5000));
	r = json_object_get(sink_wait(&f->sink, 3), "result");
	assert_true(json_is_true(json_object_get(r, "isError")));
	assert_int_equal(f->fake.calls, 0);
}

/* --- schema ------------------------------------------------------------ */

static void test_schema(void **state)
{
	json_t *s = json_loads(
		"{\"type\":\"object\",\"properties\":{\"n\":{\"type\":"
		"\"integer\",\"minimum\":1},\"e\":{\"type\":\"object\","
		"\"additionalProperties\":{\"type\":\"string\"}},\"x\":{"
		"\"type\":[\"string\",\"null\"]}},\"required\":[\"n\"],"
		"\"additionalProperties\":false}",
		0, NULL);
	char err[256];
	json_t *v;

	(void)state;
	assert_non_null(s);
	v = json_loads("{\"n\":1,\"e\":{\"a\":\"b\"},\"x\":null}", 0, NULL);
	assert_int_equal(schema__check(s, v, "args", err, sizeof(err)), 0);
	json_decref(v);
	v = json_loads("{\"e\":{}}", 0, NULL);
	assert_int_equal(schema__check(s, v, "args", err, sizeof(err)),
			 -EINVAL);
	assert_string_equal(err, "args: missing \"n\"");
	json_decref(v);
	v = json_loads("{\"n\":0}", 0, NULL);
	assert_int_equal(schema__check(s, v, "args", err, sizeof(err)),
			 -EINVAL);
	assert_string_equal(err, "args.n: must be at least 1");
	json_decref(v);
	v = json_loads("{\"n\":1,\"e\":{\"k\":2}}", 0, NULL);
	assert_int_equal(schema__check(s, v, "args", err, sizeof(err)),
			 -EINVAL);
	assert_string_equal(err, "args.e.k: must be a string");
	json_decref(v);
	v = json_loads("{\"n\":1,\"x\":3}", 0, NULL);
	assert_int_equal(schema__check(s, v, "args", err, sizeof(err)),
			 -EINVAL);
	json_decref(v);
	json_decref(s);
}

/* Integral reals, which schema__check() takes for "integer", read right. */
static void test_int(void **state)
{
	json_t *v = json_loads("{\"a\":60.0,\"b\":60,\"c\":60.5,\"d\":"
			       "1e300,\"e\":\"60\",\"f\":-3.0}",
			       0, NULL);
	json_t *schema = json_loads("{\"type\":\"integer\"}", 0, NULL);
	char err[256];

	(void)state;
	assert_non_null(v);
	assert_int_equal(schema__check(schema, json_object_get(v, "a"), "a",
				       err, sizeof(err)),
			 0);
	assert_int_equal(tools__int(json_object_get(v, "a"), 7), 60);
	assert_int_equal(tools__int(json_object_get(v, "b"), 7), 60);
	assert_int_equal(tools__int(json_object_get(v, "c"), 7), 7);
	assert_int_equal(tools__int(json_object_get(v, "d"), 7), 7);
	assert_int_equal(tools__int(json_object_get(v, "e"), 7), 7);
	assert_int_equal(tools__int(json_object_get(v, "f"), 7), -3);
	assert_int_equal(tools__int(NULL, 7), 7);
	json_decref(schema);
	json_decref(v);
}

struct seen {
	struct fs_ent e[4];
	char path[4][64];
	int n;
};

static int see(const struct fs_ent *e, void *ctx)
{
	struct seen *s = ctx;

	if (s->n == 4)
		return -1;
	s->e[s->n] = *e;
	snprintf(s->path[s->n], sizeof(s->path[0]), "%.*s", (int)e->plen,
		 e->path);
	s->n++;
	return 0;
}

/* list_files' entries: a name keeps its blanks and its newlines. */
static void test_stat_records(void **state)
{
	static const char nonce[] = "0123456789abcdef";
	static const char out[] =
		"0123456789abcdef S 81a4 12 1700000000 0 0 7\n"
		"0123456789abcdef U root\n"
		"0123456789abcdef G root\n"
		"0123456789abcdef T 2023-11-14 22:13:20.5 +0000\n"
		"0123456789abcdef N /d/ lead and\ntrail \n"
		"0123456789abcdef S junk\n"
		"0123456789abcdef N /d/skipped\n"
		"0123456789abcdef S a1ff 4 1 0 0 9\n"
		"0123456789abcdef N /d/ln\n"
		"0123456789abcdef L 41ed\n"
		"0123456789abcdef R /d\n";
	struct seen s = { .n = 0 };
	size_t len;

	(void)state;
	assert_int_equal(guest_stat__parse(out, strlen(out), nonce, see, &s),
			 0);
	assert_int_equal(s.n, 2);
	assert_string_equal(s.path[0], "/d/ lead and\ntrail ");
	assert_int_equal(s.e[0].mode, 0x81a4);
	assert_int_equal(s.e[0].size, 12);
	assert_int_equal(s.e[0].nsec, 500000000);
	assert_int_equal(s.e[0].olen, 4);
	assert_string_equal(s.path[1], "/d/ln");
	assert_true(s.e[1].tvalid);
	assert_int_equal(s.e[1].tmode, 0x41ed);
	assert_int_equal(s.e[1].tlen, 2);
	assert_memory_equal(guest_stat__last(s.e[1].path, s.e[1].plen, &len),
			    "ln", 2);
	assert_int_equal(len, 2);
	/* Only the records of this nonce: another run's are text. */
	s.n = 0;
	assert_int_equal(guest_stat__parse(out, strlen(out), "fedcba9876543210",
					   see, &s),
			 0);
	assert_int_equal(s.n, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_kinds),
		cmocka_unit_test(test_parse_errors),
		cmocka_unit_test(test_text),
		cmocka_unit_test(test_schema),
		cmocka_unit_test(test_int),
		cmocka_unit_test(test_stat_records),
		cmocka_unit_test_setup_teardown(test_versions, setup, teardown),
		cmocka_unit_test_setup_teardown(test_lifecycle, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_tools_list, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_call_args, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_call_results, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_concurrent, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_confirm_no_elicitation,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_confirm_elicitation, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_confirm_shutdown, setup,
						teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
