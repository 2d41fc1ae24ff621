// SPDX-License-Identifier: Apache-2.0
/*
 * envd's process.Process service (e2b.h; the schema in envd's
 * process.proto): Start and Connect stream a command's events, List,
 * SendInput, SendSignal and CloseStdin act on the processes started here.
 * This file reads the Connect requests and answers them; the processes,
 * their threads and their subscribers are the table's (procs.h).
 */
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../sandbox/clock.h"
#include "connect_rpc.h"
#include "e2b.h"
#include "envd_path.h"
#include "proc_stdin.h"
#include "procs.h"

#define SERVICE		  "/process.Process/"
#define STREAM_TYPE	  "application/connect+json"
#define MAX_ARGS	  255 /* the agent takes 256 argv entries */
#define MAX_TAG		  256 /* bytes of a tag */
#define KEEPALIVE_DEFAULT 50 /* s, envd's Keepalive-Ping-Interval */

/* --- small things ---------------------------------------------------- */

/*
 * Answer a Connect error, its message made safe for JSON: a unary call's,
 * or (@streaming) 200 with only the END_STREAM envelope.
 */
__attribute__((format(printf, 4, 5))) static int fail(struct e2b_resp *resp,
						      bool streaming,
						      const char *code,
						      const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	e2b__vclean_text(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (!streaming)
		return reply__connect(resp, code, "%s", msg);
	reply__connect_end(resp, code, msg);
	return 0;
}

/* --- requests -------------------------------------------------------- */

/* Whether @o's member @k is absent or null (proto3's default). */
static json_t *member(const json_t *o, const char *k)
{
	json_t *v = json_object_get(o, k);

	return json_is_null(v) ? NULL : v;
}

/* ProcessSelector: *@pid, or *@tag (borrowed from @req).  -EINVAL. */
static int selector(const json_t *req, uint32_t *pid, const char **tag,
		    char *err, size_t errlen)
{
	const json_t *sel = member(req, "process"), *v;
	uint64_t n;

	*tag = NULL;
	*pid = 0;
	if (!json_is_object(sel)) {
		snprintf(err, errlen, "process: a ProcessSelector is needed");
		return -EINVAL;
	}
	v = member(sel, "pid");
	if (v) {
		if (connect__json_uint(v, UINT32_MAX, &n)) {
			snprintf(err, errlen, "process.pid: not a uint32");
			return -EINVAL;
		}
		*pid = (uint32_t)n;
		return 0;
	}
	v = member(sel, "tag");
	if (json_is_string(v)) {
		*tag = json_string_value(v);
		return 0;
	}
	snprintf(err, errlen, "process: the selector needs a pid or a tag");
	return -EINVAL;
}

/*
 * The listed process that @req selects in @g, with a reference; NULL
 * with the unary error answered.
 */
static struct proc *lookup(struct e2b_server *srv, const json_t *req,
			   const struct e2b_guest *g, struct e2b_resp *resp)
{
	char err[128];
	const char *tag;
	struct proc *p;
	uint32_t pid;

	if (selector(req, &pid, &tag, err, sizeof(err))) {
		fail(resp, false, "invalid_argument", "%s", err);
		return NULL;
	}
	p = procs__get(srv->procs, g->info.id, pid, tag);
	if (p)
		return p;
	/* One the guest kept through a park, listed again. */
	if (!procs__adopt(srv, g, pid, tag, 0, 0, NULL, &p) && p)
		return p;
	if (tag)
		fail(resp, false, "not_found",
		     "process with tag %.*s not found", MAX_TAG, tag);
	else
		fail(resp, false, "not_found", "process with pid %u not found",
		     pid);
	return NULL;
}

/*
 * A PTY message ({"size": {"cols": N, "rows": N}}, every part optional)
 * into *@rows and *@cols (0 when not given).  0, or -EINVAL with @err.
 */
static int pty_size(const json_t *pty, uint16_t *rows, uint16_t *cols,
		    char *err, size_t errlen)
{
	const json_t *size = member(pty, "size");
	const char *k[2] = { "rows", "cols" };
	uint16_t *out[2] = { rows, cols };
	uint64_t n;

	*rows = *cols = 0;
	if (!json_is_object(pty) || (size && !json_is_object(size))) {
		snprintf(err, errlen, "pty: not a PTY message");
		return -EINVAL;
	}
	for (int i = 0; i < 2 && size; i++) {
		const json_t *v = member(size, k[i]);

		if (v && connect__json_uint(v, UINT16_MAX, &n)) {
			snprintf(err, errlen, "pty.size.%s: not 0-65535", k[i]);
			return -EINVAL;
		}
		*out[i] = v ? (uint16_t)n : 0;
	}
	return 0;
}

/* A streaming answer's keepalive interval (s, 1-3600) as @r asks. */
static unsigned int keepalive_s(const struct e2b_req *r)
{
	uint64_t s = e2b__header_num(r, "Keepalive-Ping-Interval", 6,
				     KEEPALIVE_DEFAULT);

	if (s < 1)
		s = 1;
	if (s > 3600)
		s = 3600;
	return (unsigned int)s;
}

/* Connect-Timeout-Ms of @r: 0 for none. */
static uint64_t timeout_ms(const struct e2b_req *r)
{
	return e2b__header_num(r, "Connect-Timeout-Ms", 10, 0);
}

/* Resolve the requested cwd against the home as envd does. */
static char *resolve_cwd(const char *cwd, bool *dflt)
{
	char *out;

	*dflt = !cwd || !*cwd;
	if (*dflt || !strcmp(cwd, "~"))
		return strdup(E2B_HOME);
	if (cwd[0] == '/')
		return strdup(cwd);
	if (!strncmp(cwd, "~/", 2))
		cwd += 2;
	if (asprintf(&out, "%s/%s", E2B_HOME, cwd) < 0)
		return NULL;
	return out;
}

/*
 * Check StartRequest.process into @p's argv, cwd and config.  0, or
 * -EINVAL with @err, -ENOMEM.
 */
static int start_config(struct proc *p, const json_t *pc, char *err,
			size_t errlen)
{
	const json_t *cmd = member(pc, "cmd"), *args = member(pc, "args");
	const json_t *envs = member(pc, "envs"), *cwd = member(pc, "cwd");
	const char *k;
	json_t *v;
	size_t i, n, bytes;
	char *at;

	if (!json_is_string(cmd) || !json_string_length(cmd)) {
		snprintf(err, errlen, "process.cmd: a command is needed");
		return -EINVAL;
	}
	if (args && !json_is_array(args)) {
		snprintf(err, errlen, "process.args: not an array");
		return -EINVAL;
	}
	n = args ? json_array_size(args) : 0;
	if (n > MAX_ARGS) {
		snprintf(err, errlen, "process.args: more than %d", MAX_ARGS);
		return -EINVAL;
	}
	bytes = json_string_length(cmd) + 1;
	for (i = 0; i < n; i++) {
		v = json_array_get(args, i);
		if (!json_is_string(v)) {
			snprintf(err, errlen, "process.args[%zu]: not a string",
				 i);
			return -EINVAL;
		}
		bytes += json_string_length(v) + 1;
	}
	if (envs && !json_is_object(envs)) {
		snprintf(err, errlen, "process.envs: not an object");
		return -EINVAL;
	}
	json_object_foreach((json_t *)envs, k, v)
	{
		if (!json_is_string(v) || !*k || strchr(k, '=')) {
			snprintf(err, errlen,
				 "process.envs: %.64s is not a NAME: string",
				 k);
			return -EINVAL;
		}
	}
	if (cwd && !json_is_string(cwd)) {
		snprintf(err, errlen, "process.cwd: not a string");
		return -EINVAL;
	}
	/* NUL bytes would cut a string short: the agent takes C strings. */
	if (strlen(json_string_value(cmd)) != json_string_length(cmd) ||
	    (cwd &&
	     strlen(json_string_value(cwd)) != json_string_length(cwd))) {
		snprintf(err, errlen, "process: a NUL byte in cmd or cwd");
		return -EINVAL;
	}
	p->argv = malloc((n + 2) * sizeof(char *) + bytes);
	if (!p->argv)
		return -ENOMEM;
	at = (char *)(p->argv + n + 2);
	for (i = 0; i <= n; i++) {
		const json_t *s = i ? json_array_get(args, i - 1) : cmd;

		p->argv[i] = at;
		memcpy(at, json_string_value(s), json_string_length(s) + 1);
		at += json_string_length(s) + 1;
	}
	p->argv[n + 1] = NULL;
	p->cwd = resolve_cwd(cwd ? json_string_value(cwd) : NULL,
			     &p->cwd_default);
	if (!p->cwd)
		return -ENOMEM;
	p->config = json_pack(
		"{s:s, s:o, s:o, s:s}", "cmd", p->argv[0], "args",
		args ? json_deep_copy(args) : json_array(), "envs",
		envs ? json_deep_copy(envs) : json_object(), "cwd", p->cwd);
	return p->config ? 0 : -ENOMEM;
}

static int start(struct e2b_server *srv, const struct e2b_req *r,
		 struct e2b_guest *g, const json_t *req, struct e2b_resp *resp)
{
	const json_t *pc = member(req, "process"), *v;
	const char *code = "invalid_argument", *user;
	char err[512], ubuf[ENVD_USER_MAX];
	struct e2b_stream *st;
	struct proc *p;
	uint64_t ms;
	int rc;

	if (!json_is_object(pc))
		return fail(resp, true, code,
			    "process: a ProcessConfig is "
			    "needed");
	v = member(req, "stdin");
	if (v && !json_is_boolean(v))
		return fail(resp, true, code, "stdin: not a boolean");
	p = procs__proc_new(srv, g);
	if (!p)
		return fail(resp, true, "resource_exhausted", "out of memory");
	p->has_stdin = json_is_true(v);
	if (member(req, "pty")) {
		/* A terminal: its input (SendInput's pty) is the stdin. */
		if (pty_size(member(req, "pty"), &p->rows, &p->cols, err,
			     sizeof(err))) {
			procs__proc_free(p);
			return fail(resp, true, code, "%s", err);
		}
		p->pty = true;
		p->has_stdin = true;
	}
	v = member(req, "tag");
	if (v && (!json_is_string(v) || json_string_length(v) > MAX_TAG ||
		  strlen(json_string_value(v)) != json_string_length(v))) {
		procs__proc_free(p);
		return fail(resp, true, code,
			    "tag: not a string of at most "
			    "%d bytes",
			    MAX_TAG);
	}
	if (v && !(p->tag = strdup(json_string_value(v)))) {
		procs__proc_free(p);
		return fail(resp, true, "resource_exhausted", "out of memory");
	}
	rc = start_config(p, pc, err, sizeof(err));
	if (rc) {
		procs__proc_free(p);
		return rc == -ENOMEM ? fail(resp, true, "resource_exhausted",
					    "out of memory") :
				       fail(resp, true, code, "%s", err);
	}
	rc = envd_path__user(r, NULL, g, ubuf, &user, err, sizeof(err));
	if (rc) {
		procs__proc_free(p);
		return fail(resp, true, "unauthenticated", "%s", err);
	}
	if (user && !(p->user = strdup(user))) {
		procs__proc_free(p);
		return fail(resp, true, "resource_exhausted", "out of memory");
	}
	p->env = guest__env(g, member(pc, "envs"));
	if (!p->env) {
		procs__proc_free(p);
		return fail(resp, true, "invalid_argument",
			    "too many environment variables (or out "
			    "of memory)");
	}
	rc = procs__proc_fds(p);
	if (rc) {
		procs__proc_free(p);
		return fail(resp, true, "resource_exhausted",
			    "cannot set up the process: %s", strerror(-rc));
	}
	ms = timeout_ms(r);
	if (ms)
		p->deadline_ms = clock__mono_ms() + (int64_t)ms;
	p->c = guest__agent(srv, g, err, sizeof(err));
	if (!p->c) {
		procs__proc_free(p);
		return fail(resp, true, "unavailable",
			    "cannot reach the sandbox's agent: %s", err);
	}
	if (procs__start(p, keepalive_s(r), ms, &st, &code, err, sizeof(err)))
		return fail(resp, true, code, "%s", err);
	return reply__stream(resp, STREAM_TYPE, st);
}

static int connect_proc(struct e2b_server *srv, const struct e2b_req *r,
			struct e2b_guest *g, const json_t *req,
			struct e2b_resp *resp)
{
	struct e2b_stream *st = NULL;
	const char *tag;
	char err[128];
	uint32_t pid;
	int rc;

	if (selector(req, &pid, &tag, err, sizeof(err)))
		return fail(resp, true, "invalid_argument", "%s", err);
	rc = procs__connect(srv->procs, g->info.id, pid, tag, keepalive_s(r),
			    timeout_ms(r), &st);
	if (rc == -ENOENT) /* one the guest kept through a park? */
		rc = procs__adopt(srv, g, pid, tag, keepalive_s(r),
				  timeout_ms(r), &st, NULL);
	if (rc == -ENOENT) {
		if (tag)
			return fail(resp, true, "not_found",
				    "process with tag %.*s not found", MAX_TAG,
				    tag);
		return fail(resp, true, "not_found",
			    "process with pid %u not found", pid);
	}
	if (rc)
		return fail(resp, true, "resource_exhausted", "out of memory");
	return reply__stream(resp, STREAM_TYPE, st);
}

static int list(struct e2b_server *srv, struct e2b_guest *g,
		struct e2b_resp *resp)
{
	json_t *arr = procs__list_guest(srv, g);

	if (!arr)
		return fail(resp, false, "resource_exhausted", "out of memory");
	return reply__json(resp, 200, json_pack("{s:o}", "processes", arr));
}

static int send_input(struct e2b_server *srv, struct e2b_guest *g,
		      const json_t *req, struct e2b_resp *resp)
{
	const json_t *in = member(req, "input"), *v;
	const char *code = NULL;
	uint8_t *b = NULL;
	size_t n = 0;
	struct proc *p;
	char err[256];
	int rc;

	if (in && !json_is_object(in))
		return fail(resp, false, "invalid_argument",
			    "input: not an object");
	v = member(in, "pty");
	if (!v)
		v = member(in, "stdin");
	if (v && connect__json_bytes(v, &b, &n))
		return fail(resp, false, "invalid_argument",
			    "input.%s: not base64",
			    member(in, "pty") ? "pty" : "stdin");
	p = lookup(srv, req, g, resp);
	if (!p) {
		free(b);
		return 0;
	}
	if (member(in, "pty") && !p->pty) {
		code = "failed_precondition";
		snprintf(err, sizeof(err), "process %u has no PTY", p->pid);
		rc = -ENOTTY;
	} else {
		rc = proc_stdin__write(p, b, n, &code, err, sizeof(err));
	}
	procs__put(p);
	free(b);
	if (rc)
		return fail(resp, false, code, "%s", err);
	return reply__json(resp, 200, json_object());
}

static int close_stdin(struct e2b_server *srv, struct e2b_guest *g,
		       const json_t *req, struct e2b_resp *resp)
{
	struct proc *p = lookup(srv, req, g, resp);
	bool had;

	if (!p)
		return 0;
	had = proc_stdin__close(p);
	procs__put(p);
	if (!had)
		return fail(resp, false, "failed_precondition",
			    "the process was started without stdin");
	return reply__json(resp, 200, json_object());
}

/* Update: a PTY's new size (the only thing envd's Update changes). */
static int update(struct e2b_server *srv, struct e2b_guest *g,
		  const json_t *req, struct e2b_resp *resp)
{
	const json_t *pty = member(req, "pty");
	uint16_t rows, cols;
	struct proc *p;
	char err[128];
	uint32_t pid;
	int rc;

	if (!pty)
		return reply__json(resp, 200, json_object()); /* nothing */
	if (pty_size(pty, &rows, &cols, err, sizeof(err)))
		return fail(resp, false, "invalid_argument", "%s", err);
	if (!rows || !cols)
		return fail(resp, false, "invalid_argument",
			    "pty.size: rows and cols are needed");
	p = lookup(srv, req, g, resp);
	if (!p)
		return 0;
	rc = procs__resize(p, rows, cols);
	pid = p->pid;
	procs__put(p);
	if (rc)
		return fail(resp, false, "failed_precondition",
			    "process %u has no PTY", pid);
	return reply__json(resp, 200, json_object());
}

/* SendSignalRequest.signal: an enum name or number.  0 when bad. */
static int parse_signal(const json_t *v)
{
	const char *s = json_string_value(v);
	uint64_t n;

	if (s) {
		if (!strcmp(s, "SIGNAL_SIGKILL") || !strcmp(s, "SIGKILL"))
			return SIGKILL;
		if (!strcmp(s, "SIGNAL_SIGTERM") || !strcmp(s, "SIGTERM"))
			return SIGTERM;
	}
	if (json_is_integer(v) && !connect__json_uint(v, 64, &n) && n)
		return (int)n;
	return 0;
}

static int send_signal(struct e2b_server *srv, struct e2b_guest *g,
		       const json_t *req, struct e2b_resp *resp)
{
	int sig = parse_signal(member(req, "signal"));
	struct proc *p;

	if (!sig)
		return fail(resp, false, "invalid_argument",
			    "signal: SIGNAL_SIGKILL or SIGNAL_SIGTERM "
			    "is needed");
	p = lookup(srv, req, g, resp);
	if (!p)
		return 0;
	procs__signal(p, sig);
	procs__put(p);
	return reply__json(resp, 200, json_object());
}

int process__handle(struct e2b_server *srv, const struct e2b_req *r,
		    struct e2b_guest *g, struct e2b_resp *resp)
{
	const char *m = r->path + strlen(SERVICE), *code;
	bool streaming;
	char err[256];
	json_t *req;
	int rc;

	if (strncmp(r->path, SERVICE, strlen(SERVICE)))
		return fail(resp, false, "unimplemented", "no such service");
	streaming = !strcmp(m, "Start") || !strcmp(m, "Connect");
	if (strcmp(m, "Start") && strcmp(m, "Connect") && strcmp(m, "List") &&
	    strcmp(m, "SendInput") && strcmp(m, "SendSignal") &&
	    strcmp(m, "CloseStdin") && strcmp(m, "Update")) {
		if (!strcmp(m, "StreamInput"))
			return fail(resp, false, "unimplemented",
				    "Not supported by ember: StreamInput "
				    "(use SendInput)");
		return fail(resp, false, "unimplemented",
			    "process.Process has no method %.64s", m);
	}
	if (strcmp(r->method, "POST"))
		return fail(resp, streaming, "unimplemented",
			    "Connect calls are POST");
	if (!r->body)
		return fail(resp, streaming, "invalid_argument",
			    "no request body");
	req = connect__request(r->body, r->len, streaming, &code, err,
			       sizeof(err));
	if (!req)
		return fail(resp, streaming, code, "%s", err);
	if (!strcmp(m, "Start"))
		rc = start(srv, r, g, req, resp);
	else if (!strcmp(m, "Connect"))
		rc = connect_proc(srv, r, g, req, resp);
	else if (!strcmp(m, "List"))
		rc = list(srv, g, resp);
	else if (!strcmp(m, "SendInput"))
		rc = send_input(srv, g, req, resp);
	else if (!strcmp(m, "SendSignal"))
		rc = send_signal(srv, g, req, resp);
	else if (!strcmp(m, "Update"))
		rc = update(srv, g, req, resp);
	else
		rc = close_stdin(srv, g, req, resp);
	json_decref(req);
	return rc;
}
