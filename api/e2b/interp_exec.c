// SPDX-License-Identifier: Apache-2.0
/*
 * The code interpreter's POST /execute (interp_exec.h): {"code",
 * "context_id"?, "language"?, "env_vars"?} answered 200 with
 * newline-delimited JSON lines (stdout, stderr, result, error,
 * number_of_executions, end_of_execution last; keepalive lines while
 * nothing else comes), streamed by a thread of the execute's own, as
 * E2B's server (e2b-dev/code-interpreter template/server/main.py) does.
 *
 * Each execute opens its own connection to the guest's interpreter.  An
 * execute whose client goes away is abandoned within WATCH_MS: closing
 * its connection interrupts the code in the guest.
 */
#include <errno.h>
#include <fcntl.h>
#include <microhttpd.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "../sandbox/clock.h"
#include "../sandbox/interp_client.h"
#include "e2b.h"
#include "interp_conn.h"
#include "interp_exec.h"
#include "interp_text.h"

#define KEEPALIVE_MS 5000 /* E2B's server: KEEPALIVE_INTERVAL */
#define WATCH_MS     500 /* how often an execute looks for its client */
_Static_assert(WATCH_MS < 1000, "watch_main() adds it to tv_nsec");
#define ENV_NAME_MAX 255 /* interp_client's limit on a variable's name */
/* E2B's server sends none; the SDK reads any. */
#define NDJSON "application/x-ndjson"

static const char keepalive_line[] = "{\"type\":\"keepalive\"}\n";

/* One execute, owned by its thread once started. */
struct exec_job {
	struct e2b_stream *s; /* the producer's reference */
	struct interp_client *c;
	int watch_fd; /* a dup of @c's socket, for shutdown() */
	int client_fd; /* a dup of the HTTP client's socket, or -1 */
	struct interp_exec_req req; /* its strings in @body */
	json_t *body; /* the request */
	char **env; /* one malloc()ed block, or NULL */
	char sandbox[SANDBOX_ID_LEN + 1];
	bool ended; /* end_of_execution was queued */
	bool gone; /* a write found the client gone */
	pthread_mutex_t lock;
	pthread_cond_t cond; /* CLOCK_MONOTONIC; @done */
	bool done; /* the execute returned */
	bool abandoned; /* watch_main() cut it: the client went away */
};

/*
 * runCode in a language ember's interpreter has: an execution whose
 * error says so (the SDK shows only "400 Bad Request" for a 400, without
 * its body), as E2B's own interpreter reports a failed call.
 */
static int execution_bad_language(struct e2b_resp *resp, const char *name)
{
	char value[160], *a, *b;
	json_t *err;
	int rc;

	snprintf(value, sizeof(value),
		 "language \"%s\" is not supported by ember: its code "
		 "interpreter runs python and javascript (\"js\")",
		 name);
	err = json_pack("{s:s, s:s, s:s, s:s}", "type", "error", "name",
			"UnsupportedLanguage", "value", value, "traceback", "");
	a = err ? json_dumps(err, JSON_COMPACT) : NULL;
	json_decref(err);
	b = a ? malloc(strlen(a) + 64) : NULL;
	if (!b) {
		free(a);
		return interp_text__reply(resp, 500, "out of memory");
	}
	sprintf(b, "%s\n{\"type\":\"end_of_execution\"}\n", a);
	rc = reply__bytes(resp, 200, "application/x-ndjson", b, strlen(b));
	free(a);
	free(b);
	return rc;
}

/* A variable the interpreter takes: a name without '=' of at most 255 bytes. */
static bool env_name_ok(const char *k)
{
	size_t len = strlen(k);

	return len && len <= ENV_NAME_MAX && !strchr(k, '=');
}

/*
 * The execute's environment: the sandbox's envVars, then @over's (a
 * checked object of strings, or NULL) over them, as one malloc()ed
 * NULL-terminated "K=V" block in *@out (NULL when there is none).
 * -ENOMEM.
 */
static int build_env(const json_t *base, const json_t *over, char ***out)
{
	const json_t *objs[2] = { base, over };
	size_t n = 0, bytes = 0, i, k = 0;
	const char *key;
	json_t *v;
	char **env, *p;

	*out = NULL;
	for (i = 0; i < 2; i++) {
		json_object_foreach((json_t *)objs[i], key, v)
		{
			if (!json_is_string(v) || !env_name_ok(key) ||
			    (i == 0 && json_object_get(over, key)))
				continue;
			n++;
			bytes += strlen(key) + strlen(json_string_value(v)) + 2;
		}
	}
	if (!n)
		return 0;
	env = malloc((n + 1) * sizeof(char *) + bytes);
	if (!env)
		return -ENOMEM;
	p = (char *)(env + n + 1);
	for (i = 0; i < 2; i++) {
		json_object_foreach((json_t *)objs[i], key, v)
		{
			if (!json_is_string(v) || !env_name_ok(key) ||
			    (i == 0 && json_object_get(over, key)))
				continue;
			env[k++] = p;
			p += sprintf(p, "%s=%s", key, json_string_value(v)) + 1;
		}
	}
	env[k] = NULL;
	*out = env;
	return 0;
}

/* Now as RFC 3339 in UTC with microseconds, as Jupyter dates messages. */
static void timestamp(char *buf, size_t len)
{
	struct timespec ts;
	struct tm tm;
	char day[32];

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	strftime(day, sizeof(day), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf, len, "%s.%06ldZ", day, ts.tv_nsec / 1000);
}

/*
 * A result's text as E2B's server gives it (api/models/result.py): a
 * repr() of a string loses its surrounding quotes.
 */
static json_t *result_text(const json_t *text)
{
	const char *t = json_string_value(text);
	size_t len = json_string_length(text);

	if (len >= 2 && (t[0] == '\'' || t[0] == '"') && t[len - 1] == t[0])
		return json_stringn(t + 1, len - 2);
	return json_incref((json_t *)text);
}

/*
 * E2B's result line for the interpreter's result event @ev, as E2B's
 * server sends it (its Result model, None members left out): type, every
 * member the event has (text quote-stripped), extra always ({} when the
 * event has none: the Python SDK reads it), is_main_result.  NULL: OOM.
 */
static json_t *e2b_result(const json_t *ev)
{
	const struct interp_member *m;
	json_t *l, *v;
	int rc = 0;

	l = json_pack("{s:s}", "type", "result");
	if (!l)
		return NULL;
	for (m = interp__result_members; m->name && !rc; m++) {
		v = json_object_get(ev, m->name);
		if (!strcmp(m->name, "text") && json_is_string(v))
			rc = json_object_set_new(l, m->name, result_text(v));
		else if (!strcmp(m->name, "extra") && !json_is_object(v))
			rc = json_object_set_new(l, m->name, json_object());
		else if (v && !json_is_null(v))
			rc = json_object_set(l, m->name, v);
	}
	if (!rc)
		rc = json_object_set_new(
			l, "is_main_result",
			json_boolean(json_is_true(
				json_object_get(ev, "is_main_result"))));
	if (rc) {
		json_decref(l);
		return NULL;
	}
	return l;
}

/* E2B's line for the interpreter's event @ev of type @type; NULL: OOM. */
static json_t *e2b_line(const json_t *ev, const char *type)
{
	char ts[64];

	if (!strcmp(type, "stdout") || !strcmp(type, "stderr")) {
		timestamp(ts, sizeof(ts));
		return json_pack("{s:s, s:O, s:s}", "type", type, "text",
				 json_object_get(ev, "text"), "timestamp", ts);
	}
	if (!strcmp(type, "result"))
		return e2b_result(ev);
	if (!strcmp(type, "error"))
		return json_pack("{s:s, s:O, s:O, s:O}", "type", "error",
				 "name", json_object_get(ev, "name"), "value",
				 json_object_get(ev, "value"), "traceback",
				 json_object_get(ev, "traceback"));
	if (!strcmp(type, "number_of_executions"))
		return json_pack("{s:s, s:O}", "type", "number_of_executions",
				 "execution_count",
				 json_object_get(ev, "execution_count"));
	return json_pack("{s:s}", "type", type);
}

/* Queue @line and a '\n' as one chunk (so no keepalive splits it). */
static int send_line(struct exec_job *j, const json_t *line)
{
	char *s = json_dumps(line, JSON_COMPACT), *t;
	size_t len;
	int rc;

	if (!s)
		return -ENOMEM;
	len = strlen(s);
	t = realloc(s, len + 2);
	if (!t) {
		free(s);
		return -ENOMEM;
	}
	t[len] = '\n';
	t[len + 1] = '\0';
	rc = e2b_stream__write(j->s, t, len + 1);
	free(t);
	if (rc == -EPIPE)
		j->gone = true;
	return rc;
}

static int on_event(void *arg, const json_t *ev)
{
	struct exec_job *j = arg;
	const char *type = json_string_value(json_object_get(ev, "type"));
	json_t *line;
	int rc;

	if (!type)
		return -EPROTO;
	line = e2b_line(ev, type);
	if (!line)
		return -ENOMEM;
	rc = send_line(j, line);
	json_decref(line);
	if (rc == 0 && !strcmp(type, "end_of_execution"))
		j->ended = true;
	return rc;
}

/*
 * The execute failed before its end: an error line (E2B's server says
 * UnexpectedEndOfExecution when its kernel's connection closes) and the
 * end, so that the SDK's execution carries the reason.
 */
static void send_failure(struct exec_job *j, int rc, const char *err)
{
	json_t *l;

	l = json_pack("{s:s, s:s, s:s, s:s}", "type", "error", "name",
		      rc == -EREMOTEIO ? "InterpreterError" :
					 "UnexpectedEndOfExecution",
		      "value", err, "traceback", "");
	if (l && send_line(j, l) == 0) {
		json_decref(l);
		l = json_pack("{s:s}", "type", "end_of_execution");
		if (l)
			send_line(j, l);
	}
	json_decref(l);
}

static void job_free(struct exec_job *j)
{
	if (!j)
		return;
	interp_client__free(j->c);
	if (j->watch_fd >= 0)
		close(j->watch_fd);
	if (j->client_fd >= 0)
		close(j->client_fd);
	e2b_stream__put(j->s);
	json_decref(j->body);
	free(j->env);
	pthread_cond_destroy(&j->cond);
	pthread_mutex_destroy(&j->lock);
	free(j);
}

/*
 * Whether the HTTP client closed its side: the stream notices only when
 * a keepalive fails to go, up to KEEPALIVE_MS later.
 */
static bool client_closed(const struct exec_job *j)
{
	struct pollfd p = { .fd = j->client_fd, .events = POLLRDHUP };

	if (j->client_fd < 0 || poll(&p, 1, 0) <= 0)
		return false;
	return p.revents & (POLLRDHUP | POLLHUP | POLLERR);
}

/*
 * Ends the execute when its client goes away while the code prints
 * nothing (the event callback would notice at its next write): closing
 * the connection interrupts the call in the guest (INTERP.md).
 */
static void *watch_main(void *arg)
{
	struct exec_job *j = arg;
	struct timespec dl;

	pthread_mutex_lock(&j->lock);
	while (!j->done) {
		clock_gettime(CLOCK_MONOTONIC, &dl);
		dl.tv_nsec += WATCH_MS * 1000000L;
		if (dl.tv_nsec >= 1000000000L) {
			dl.tv_sec++;
			dl.tv_nsec -= 1000000000L;
		}
		pthread_cond_timedwait(&j->cond, &j->lock, &dl);
		if (!j->done && (e2b_stream__gone(j->s) || client_closed(j))) {
			shutdown(j->watch_fd, SHUT_RDWR);
			j->abandoned = true;
			break;
		}
	}
	pthread_mutex_unlock(&j->lock);
	return NULL;
}

static void *exec_main(void *arg)
{
	struct exec_job *j = arg;
	char err[512] = "";
	pthread_attr_t attr;
	pthread_t watcher;
	bool watching = false;
	int rc;

	if (!pthread_attr_init(&attr)) {
		pthread_attr_setstacksize(&attr, 64u << 10);
		watching = !pthread_create(&watcher, &attr, watch_main, j);
		pthread_attr_destroy(&attr);
	}
	rc = interp_client__execute(j->c, &j->req, on_event, j, err,
				    sizeof(err));
	pthread_mutex_lock(&j->lock);
	j->done = true;
	pthread_cond_broadcast(&j->cond);
	pthread_mutex_unlock(&j->lock);
	if (watching)
		pthread_join(watcher, NULL);
	if (j->client_fd >= 0) {
		close(j->client_fd);
		j->client_fd = -1;
	}
	if (rc < 0 && !j->ended && !j->gone && !j->abandoned &&
	    !e2b_stream__gone(j->s)) {
		fprintf(stderr, "ember-e2b: sandbox %s: execute: %s\n",
			j->sandbox, err);
		send_failure(j, rc, err);
	}
	e2b_stream__end(j->s);
	job_free(j);
	return NULL;
}

static struct exec_job *job_new(void)
{
	struct exec_job *j = calloc(1, sizeof(*j));

	if (!j)
		return NULL;
	j->watch_fd = -1;
	j->client_fd = -1;
	pthread_mutex_init(&j->lock, NULL);
	clock__cond_init(&j->cond);
	return j;
}

/* The request's env_vars: absent, null, or an object of strings. */
static int check_env(const json_t *env, struct e2b_resp *resp)
{
	const char *key;
	json_t *v;

	if (!env || json_is_null(env))
		return 0;
	if (!json_is_object(env)) {
		interp_text__reply(resp, 400, "env_vars must be an object");
		return -EINVAL;
	}
	json_object_foreach((json_t *)env, key, v)
	{
		if (!json_is_string(v) || !env_name_ok(key)) {
			interp_text__reply(
				resp, 400,
				"env_vars must map variables' names "
				"(without '=', at most %d bytes) to strings",
				ENV_NAME_MAX);
			return -EINVAL;
		}
	}
	return 0;
}

/*
 * A duplicate of the HTTP client's socket, for watch_main() to see it
 * close; -1 when there is none.  Its own reference, closed when the
 * execute ends, before the answer does, so that it never holds a
 * connection open that the HTTP layer closed.
 */
static int client_fd(const struct e2b_req *r)
{
	const union MHD_ConnectionInfo *ci;

	if (!r->conn)
		return -1;
	ci = MHD_get_connection_info(r->conn,
				     MHD_CONNECTION_INFO_CONNECTION_FD);
	if (!ci || ci->connect_fd < 0)
		return -1;
	return fcntl(ci->connect_fd, F_DUPFD_CLOEXEC, 0);
}

int interp_exec__handle(const struct e2b_req *r, struct e2b_guest *g,
			struct e2b_resp *resp)
{
	const char *code, *ctx, *lang, *language = "python";
	char name[INTERP_CTX_ID_MAX + 1], err[512];
	struct exec_job *j;
	json_t *body, *env;
	pthread_attr_t attr;
	pthread_t t;
	int rc;

	body = interp_text__body(r, false, resp);
	if (!body)
		return 0;
	code = json_string_value(json_object_get(body, "code"));
	env = json_object_get(body, "env_vars");
	if (!code) {
		interp_text__reply(resp, 400, "code must be a string");
		goto out;
	}
	if (interp_text__opt_string(body, "context_id", &ctx) ||
	    interp_text__opt_string(body, "language", &lang)) {
		interp_text__reply(resp, 400,
				   "context_id and language must be strings");
		goto out;
	}
	if (ctx && lang) {
		interp_text__reply(resp, 400,
				   "Only one of context_id or language can be "
				   "provided");
		goto out;
	}
	if (interp_text__language(lang, &language, name)) {
		execution_bad_language(resp, name);
		goto out;
	}
	if (ctx && !interp_text__id_ok(ctx, strlen(ctx))) {
		interp_text__clean_id(name, ctx, strlen(ctx));
		interp_text__reply(resp, 404, "Context %s not found", name);
		goto out;
	}
	if (check_env(env, resp))
		goto out;
	j = job_new();
	if (!j) {
		interp_text__reply(resp, 500, "out of memory");
		goto out;
	}
	j->body = body;
	body = NULL;
	snprintf(j->sandbox, sizeof(j->sandbox), "%s", g->info.id);
	if (interp_conn__open(g, &j->c, &j->watch_fd, resp))
		goto fail;
	j->client_fd = client_fd(r);
	if (ctx) {
		rc = interp_conn__has_context(j->c, ctx, err, sizeof(err));
		if (rc == 0) {
			interp_text__reply(resp, 404, "Context %s not found",
					   ctx);
			goto fail;
		}
		if (rc < 0) {
			interp_conn__failed(resp, rc, err);
			goto fail;
		}
	}
	if (build_env(g->rec.env_vars, json_is_object(env) ? env : NULL,
		      &j->env)) {
		interp_text__reply(resp, 500, "out of memory");
		goto fail;
	}
	j->req.code = code;
	j->req.context = ctx;
	j->req.language = ctx ? NULL : language;
	j->req.env = (const char *const *)j->env;
	j->s = e2b_stream__new(keepalive_line, strlen(keepalive_line),
			       KEEPALIVE_MS);
	if (!j->s) {
		interp_text__reply(resp, 500, "out of memory");
		goto fail;
	}
	if (pthread_attr_init(&attr)) {
		interp_text__reply(resp, 500, "out of memory");
		goto fail_stream;
	}
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	rc = pthread_create(&t, &attr, exec_main, j);
	pthread_attr_destroy(&attr);
	if (rc) {
		interp_text__reply(resp, 500, "pthread_create: %s",
				   strerror(rc));
		goto fail_stream;
	}
	/* The thread holds the producer's reference, the answer the other. */
	return reply__stream(resp, NDJSON, j->s);
fail_stream:
	e2b_stream__put(j->s); /* the connection's, never given */
fail:
	job_free(j);
out:
	json_decref(body);
	return 0;
}
