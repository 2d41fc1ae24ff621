// SPDX-License-Identifier: Apache-2.0
/*
 * An MCP session (mcp.h): lifecycle, dispatch, tool calls on threads,
 * elicitation.  Locking: s->lock guards the protocol state, the pending
 * elicitations and the count of running calls; sends happen outside it.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../sandbox/clock.h"
#include "../sandbox/utf8.h"
#include "jsonrpc.h"
#include "mcp.h"
#include "schema.h"

/* The revisions spoken, newest first (MCP spec, "Versioning"). */
static const char *const versions[] = {
	MCP_LATEST_VERSION,
	"2025-06-18",
	"2025-03-26",
	"2024-11-05",
};

#define NVERSIONS (sizeof(versions) / sizeof(versions[0]))

/* A request of ours that waits for the client's response. */
struct pending {
	struct pending *next;
	char id[32];
	json_t *response; /* the whole message, once it came */
	bool done;
};

struct mcp_session {
	struct mcp_config cfg;
	json_t *schemas[TOOL_COUNT][2]; /* parsed input, output schemas */
	pthread_mutex_t lock;
	pthread_cond_t cond; /* pending answered, calls ended, shutdown */
	bool initialized;
	bool client_elicits; /* capabilities.elicitation at initialize */
	bool shut;
	char version[16]; /* negotiated */
	unsigned int calls; /* running tools/call */
	unsigned long next_id; /* of our requests */
	struct pending *pending;
};

/* One tools/call, on its own thread. */
struct call {
	struct mcp_session *s;
	struct mcp_out *out;
	const struct mcp_tool *tool;
	json_t *id;
	json_t *args;
};

bool mcp__version_ok(const char *v)
{
	for (size_t i = 0; i < NVERSIONS; i++)
		if (!strcmp(v, versions[i]))
			return true;
	return false;
}

static void out_get(struct mcp_out *o)
{
	__atomic_add_fetch(&o->refs, 1, __ATOMIC_ACQ_REL);
}

static void out_put(struct mcp_out *o)
{
	if (__atomic_sub_fetch(&o->refs, 1, __ATOMIC_ACQ_REL) == 0 &&
	    o->release)
		o->release(o);
}

/* CLOCK_MONOTONIC @ms from now, for pthread_cond_timedwait() on s->cond. */
static struct timespec deadline(int ms)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	t.tv_sec += ms / 1000;
	t.tv_nsec += (long)(ms % 1000) * 1000000;
	if (t.tv_nsec >= 1000000000) {
		t.tv_sec++;
		t.tv_nsec -= 1000000000;
	}
	return t;
}

/* Send @msg (stolen) through @out; NULL @msg: out of memory, say so. */
static void send_msg(struct mcp_out *out, json_t *msg, json_t *id, bool final)
{
	static const char oom[] = "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":"
				  "{\"code\":-32603,\"message\":\"Internal "
				  "error\"}}";
	size_t len;
	char *text;

	if (!msg)
		msg = jsonrpc__error(id, JSONRPC_INTERNAL_ERROR,
				     "Internal error: out of memory");
	text = msg ? jsonrpc__dump(msg, &len) : NULL;
	if (text)
		out->send(out, text, len, final);
	else if (final) /* the transport must still hear the end */
		out->send(out, oom, strlen(oom), final);
	free(text);
	json_decref(msg);
}

/* A schema of tools.c, written with ' for ". */
static json_t *load_schema(const char *text)
{
	char *buf = strdup(text);
	json_t *j;

	if (!buf)
		return NULL;
	for (char *p = buf; *p; p++)
		if (*p == '\'')
			*p = '"';
	j = json_loads(buf, 0, NULL);
	free(buf);
	return json_is_object(j) ? j : NULL;
}

struct mcp_session *mcp__new(const struct mcp_config *cfg)
{
	struct mcp_session *s = calloc(1, sizeof(*s));
	const struct mcp_tool *t;

	if (!s)
		return NULL;
	s->cfg = *cfg;
	if (!s->cfg.elicit_ms)
		s->cfg.elicit_ms = MCP_ELICIT_MS;
	pthread_mutex_init(&s->lock, NULL);
	clock__cond_init(&s->cond); /* deadline()'s clock */
	for (size_t i = 0; i < cfg->ntools; i++) {
		t = &cfg->tools[i];
		if (t->id >= TOOL_COUNT)
			goto fail;
		s->schemas[t->id][0] = load_schema(t->input_schema);
		s->schemas[t->id][1] = load_schema(t->output_schema);
		if (!s->schemas[t->id][0] || !s->schemas[t->id][1])
			goto fail;
	}
	return s;
fail:
	mcp__free(s);
	return NULL;
}

void mcp__free(struct mcp_session *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < TOOL_COUNT; i++) {
		json_decref(s->schemas[i][0]);
		json_decref(s->schemas[i][1]);
	}
	pthread_cond_destroy(&s->cond);
	pthread_mutex_destroy(&s->lock);
	free(s);
}

bool mcp__initialized(struct mcp_session *s)
{
	bool v;

	pthread_mutex_lock(&s->lock);
	v = s->initialized;
	pthread_mutex_unlock(&s->lock);
	return v;
}

void mcp__shutdown(struct mcp_session *s)
{
	pthread_mutex_lock(&s->lock);
	s->shut = true;
	pthread_cond_broadcast(&s->cond);
	pthread_mutex_unlock(&s->lock);
}

bool mcp__wait(struct mcp_session *s, int timeout_ms)
{
	struct timespec until = deadline(timeout_ms < 0 ? 0 : timeout_ms);
	bool idle;

	pthread_mutex_lock(&s->lock);
	while (s->calls) {
		if (timeout_ms < 0)
			pthread_cond_wait(&s->cond, &s->lock);
		else if (pthread_cond_timedwait(&s->cond, &s->lock, &until) ==
			 ETIMEDOUT)
			break;
	}
	idle = !s->calls;
	pthread_mutex_unlock(&s->lock);
	return idle;
}

/* --- lifecycle (spec: "Lifecycle") ----------------------------------- */

static json_t *do_initialize(struct mcp_session *s, json_t *id,
			     const json_t *params)
{
	const json_t *v = json_object_get(params, "protocolVersion");
	const json_t *caps = json_object_get(params, "capabilities");
	const char *ver;

	if (!json_is_string(v))
		return jsonrpc__error(id, JSONRPC_INVALID_PARAMS,
				      "Invalid params: initialize wants "
				      "\"protocolVersion\" (a string)");
	if (caps && !json_is_object(caps))
		return jsonrpc__error(id, JSONRPC_INVALID_PARAMS,
				      "Invalid params: \"capabilities\" must "
				      "be an object");
	/* Echo a revision we speak, else offer our latest. */
	ver = mcp__version_ok(json_string_value(v)) ? json_string_value(v) :
						      MCP_LATEST_VERSION;
	pthread_mutex_lock(&s->lock);
	if (s->initialized) {
		pthread_mutex_unlock(&s->lock);
		return jsonrpc__error(id, JSONRPC_INVALID_REQUEST,
				      "Invalid request: already initialized");
	}
	s->initialized = true;
	s->client_elicits = json_object_get(caps, "elicitation") != NULL;
	snprintf(s->version, sizeof(s->version), "%s", ver);
	pthread_mutex_unlock(&s->lock);
	return jsonrpc__result(
		id,
		json_pack("{s:s, s:{s:{s:b}}, s:{s:s, s:s, s:s}, s:s}",
			  "protocolVersion", ver, "capabilities", "tools",
			  "listChanged", 0, "serverInfo", "name", "ember-mcp",
			  "title", "ember microVM sandboxes", "version",
			  s->cfg.version ? s->cfg.version : "0", "instructions",
			  "Sandboxes are Linux microVMs: create_sandbox, then "
			  "run_code (python, javascript, bash; state is kept "
			  "between calls), run_command, files; kill_sandbox "
			  "when done. Each sandbox ends after its timeout "
			  "without use; it outlives the session (pause_sandbox "
			  "to keep it for later, list_sandboxes to find it)."));
}

/* --- tools/list ------------------------------------------------------ */

static json_t *do_list(struct mcp_session *s, json_t *id)
{
	json_t *arr = json_array(), *t;

	if (!arr)
		return NULL;
	for (size_t i = 0; i < s->cfg.ntools; i++) {
		const struct mcp_tool *tl = &s->cfg.tools[i];

		t = json_pack(
			"{s:s, s:s, s:s, s:O, s:O, s:{s:s, s:b, s:b, "
			"s:b, s:b}}",
			"name", tl->name, "title", tl->title, "description",
			tl->description, "inputSchema", s->schemas[tl->id][0],
			"outputSchema", s->schemas[tl->id][1], "annotations",
			"title", tl->title, "readOnlyHint", tl->read_only,
			"destructiveHint", tl->destructive, "idempotentHint",
			tl->read_only, "openWorldHint", 0);
		if (!t || json_array_append_new(arr, t)) {
			json_decref(arr);
			return NULL;
		}
	}
	return jsonrpc__result(id, json_pack("{s:o}", "tools", arr));
}

/* --- elicitation (spec 2025-06-18: "Client Features: Elicitation") -- */

/*
 * Ask the user, through the client, to approve @c before it runs: an
 * elicitation/create request sent on the call's own out (stdio, or the
 * SSE stream of the POST that carries the call), then wait for its
 * response.  NULL when approved, else a CallToolResult saying why not.
 */
static json_t *confirm(struct call *c)
{
	struct mcp_session *s = c->s;
	const char *what = json_string_value(
		json_object_get(c->args, c->tool->confirm_arg));
	const char *sid =
		json_string_value(json_object_get(c->args, "sandbox_id"));
	const json_t *lang = json_object_get(c->args, "language");
	struct pending p = { 0 }, **pp;
	json_t *req, *params, *msg, *res, *content;
	struct timespec until;
	const char *action, *why;
	char *text = NULL;
	bool ok = false;

	if (!s->client_elicits)
		return tools__fail("%s needs the user's approval (--confirm), "
				   "which requires a client that supports "
				   "elicitation: this one did not declare it",
				   c->tool->name);
	if (asprintf(&text, "Allow %s%s%s%s in sandbox %s?\n\n%s",
		     c->tool->name, lang ? " (" : "",
		     lang ? json_string_value(lang) : "", lang ? ")" : "",
		     sid ? sid : "?", what ? what : "") < 0)
		return NULL;
	params = json_pack("{s:o, s:{s:s, s:{s:{s:s, s:s, s:s}}, s:[s]}}",
			   "message", utf8__json(text, strlen(text)),
			   "requestedSchema", "type", "object", "properties",
			   "approve", "type", "boolean", "title", "Approve",
			   "description",
			   "Run it in the sandbox (leave unchecked to refuse)",
			   "required", "approve");
	free(text);
	if (!params)
		return NULL;
	pthread_mutex_lock(&s->lock);
	snprintf(p.id, sizeof(p.id), "ember-elicit-%lu", ++s->next_id);
	p.next = s->pending;
	s->pending = &p;
	pthread_mutex_unlock(&s->lock);
	req = json_string(p.id);
	msg = jsonrpc__request(req, "elicitation/create", params);
	json_decref(req);
	send_msg(c->out, msg, NULL, false);

	until = deadline(s->cfg.elicit_ms);
	pthread_mutex_lock(&s->lock);
	while (!p.done && !s->shut)
		if (pthread_cond_timedwait(&s->cond, &s->lock, &until) ==
		    ETIMEDOUT)
			break;
	for (pp = &s->pending; *pp; pp = &(*pp)->next) {
		if (*pp == &p) {
			*pp = p.next;
			break;
		}
	}
	pthread_mutex_unlock(&s->lock);
	if (!p.done)
		return tools__fail("%s was not run: no answer from the user",
				   c->tool->name);
	res = json_object_get(p.response, "result");
	action = json_string_value(json_object_get(res, "action"));
	content = json_object_get(res, "content");
	if (action && !strcmp(action, "accept"))
		ok = json_is_true(json_object_get(content, "approve"));
	why = !res				  ? "the client could not ask "
						    "the user" :
	      action && !strcmp(action, "cancel") ? "the user cancelled it" :
						    "the user declined it";
	json_decref(p.response);
	if (ok)
		return NULL;
	return tools__fail("%s was not run: %s", c->tool->name, why);
}

/* A response from the client: hand it to the call waiting for it. */
static void take_response(struct mcp_session *s, struct jsonrpc_msg *m)
{
	const char *id = json_string_value(m->id);

	if (!id)
		return;
	pthread_mutex_lock(&s->lock);
	for (struct pending *p = s->pending; p; p = p->next) {
		if (!p->done && !strcmp(p->id, id)) {
			p->response = json_incref(m->root);
			p->done = true;
			pthread_cond_broadcast(&s->cond);
			break;
		}
	}
	pthread_mutex_unlock(&s->lock);
}

/* --- tools/call ------------------------------------------------------ */

static void run_call(struct call *c)
{
	json_t *res = NULL;

	if (c->s->cfg.confirm && c->tool->confirm_arg)
		res = confirm(c);
	if (!res)
		res = c->s->cfg.call(c->s->cfg.call_arg, c->tool, c->args);
	send_msg(c->out, res ? jsonrpc__result(c->id, res) : NULL, c->id, true);
	out_put(c->out);
	json_decref(c->id);
	json_decref(c->args);
}

static void *call_thread(void *arg)
{
	struct call *c = arg;
	struct mcp_session *s = c->s;

	run_call(c);
	free(c);
	pthread_mutex_lock(&s->lock);
	s->calls--;
	pthread_cond_broadcast(&s->cond);
	pthread_mutex_unlock(&s->lock);
	return NULL;
}

/* A tools/call: checked here, run on a thread (answer: 1) or refused. */
static json_t *do_call(struct mcp_session *s, json_t *id, const json_t *params,
		       struct mcp_out *out, bool *started)
{
	const json_t *name = json_object_get(params, "name");
	const json_t *args = json_object_get(params, "arguments");
	const struct mcp_tool *t = NULL;
	struct call *c;
	pthread_attr_t attr;
	pthread_t th;
	char err[512];
	bool busy;

	*started = false;
	if (!json_is_string(name))
		return jsonrpc__error(id, JSONRPC_INVALID_PARAMS,
				      "Invalid params: tools/call wants "
				      "\"name\" (a string)");
	for (size_t i = 0; i < s->cfg.ntools; i++)
		if (!strcmp(s->cfg.tools[i].name, json_string_value(name)))
			t = &s->cfg.tools[i];
	if (!t)
		return jsonrpc__error(id, JSONRPC_INVALID_PARAMS,
				      "Unknown tool: %.100s",
				      json_string_value(name));
	if (args && !json_is_object(args) && !json_is_null(args))
		return jsonrpc__error(id, JSONRPC_INVALID_PARAMS,
				      "Invalid params: \"arguments\" must be "
				      "an object");
	if (!json_is_object(args))
		args = NULL;
	c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->args = args ? json_deep_copy(args) : json_object();
	if (!c->args) {
		free(c);
		return NULL;
	}
	if (schema__check(s->schemas[t->id][0], c->args, "arguments", err,
			  sizeof(err))) {
		json_decref(c->args);
		free(c);
		return jsonrpc__error(id, JSONRPC_INVALID_PARAMS,
				      "Invalid arguments for tool %s: %s",
				      t->name, err);
	}
	c->s = s;
	c->out = out;
	c->tool = t;
	c->id = json_incref(id);
	pthread_mutex_lock(&s->lock);
	busy = s->shut || s->calls >= MCP_MAX_CALLS;
	if (!busy)
		s->calls++;
	pthread_mutex_unlock(&s->lock);
	if (busy) {
		json_decref(c->args);
		json_decref(c->id);
		free(c);
		return jsonrpc__result(
			id, s->shut ? tools__fail("the server is stopping") :
				      tools__fail("too many calls at once (at "
						  "most %d): try again",
						  MCP_MAX_CALLS));
	}
	out_get(out);
	*started = true;
	if (s->cfg.inline_calls) {
		call_thread(c);
		return NULL;
	}
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	if (pthread_create(&th, &attr, call_thread, c) == 0) {
		pthread_attr_destroy(&attr);
		return NULL;
	}
	pthread_attr_destroy(&attr);
	/* No thread: run it here. */
	call_thread(c);
	return NULL;
}

/* --- dispatch -------------------------------------------------------- */

static json_t *dispatch(struct mcp_session *s, struct jsonrpc_msg *m,
			struct mcp_out *out, bool *started)
{
	bool init;

	*started = false;
	if (!strcmp(m->method, "initialize"))
		return do_initialize(s, m->id, m->params);
	if (!strcmp(m->method, "ping"))
		return jsonrpc__result(m->id, json_object());
	pthread_mutex_lock(&s->lock);
	init = s->initialized;
	pthread_mutex_unlock(&s->lock);
	if (!init)
		return jsonrpc__error(m->id, JSONRPC_INVALID_REQUEST,
				      "Invalid request: %.100s before "
				      "initialize",
				      m->method);
	if (!strcmp(m->method, "tools/list"))
		return do_list(s, m->id);
	if (!strcmp(m->method, "tools/call"))
		return do_call(s, m->id, m->params, out, started);
	return jsonrpc__error(m->id, JSONRPC_METHOD_NOT_FOUND,
			      "Method not found: %.100s", m->method);
}

int mcp__receive(struct mcp_session *s, const char *buf, size_t len,
		 struct mcp_out *out)
{
	struct jsonrpc_msg m;
	json_t *reply;
	bool started;
	int rc;

	rc = jsonrpc__parse(buf, len, &m, &reply);
	if (rc) {
		if (!reply)
			return -ENOMEM;
		out_get(out);
		send_msg(out, reply, NULL, true);
		out_put(out);
		return 1;
	}
	if (m.kind == JSONRPC_RESPONSE) {
		take_response(s, &m);
		jsonrpc__free(&m);
		return 0;
	}
	if (m.kind == JSONRPC_NOTIFICATION) {
		/* notifications/initialized, cancelled, ...: nothing to do. */
		jsonrpc__free(&m);
		return 0;
	}
	out_get(out);
	reply = dispatch(s, &m, out, &started);
	if (!started)
		send_msg(out, reply, m.id, true);
	out_put(out);
	jsonrpc__free(&m);
	return 1;
}
