// SPDX-License-Identifier: Apache-2.0
/*
 * E2B's code interpreter on port 49999 (e2b.h), served by ember's own
 * interpreter (guest-init/INTERP.md, interp_client.h).  What the SDK
 * (@e2b/code-interpreter) sends and reads is modelled on E2B's server,
 * e2b-dev/code-interpreter template/server/main.py:
 *
 *   POST /execute {"code", "context_id"?, "language"?, "env_vars"?}
 *	200, newline-delimited JSON lines (stdout, stderr, result, error,
 *	number_of_executions, end_of_execution last; keepalive lines while
 *	nothing else comes), streamed by a thread of the execute's own;
 *   POST /contexts {"language"?, "cwd"?}     200 {"id","language","cwd"}
 *   GET /contexts                            200 [{"id","language","cwd"}]
 *   POST /contexts/{id}/restart              200 null
 *   DELETE /contexts/{id}                    200 null
 *
 * Errors are plain text as E2B's server answers them: 400 for a bad
 * request, 404 for an unknown context (the SDK's NotFoundError, which
 * shows the text), 502 when the sandbox's interpreter cannot be reached
 * (the SDK's TimeoutError, which shows the text too), 500 when it
 * refuses.  E2B's kernels beyond Python and JavaScript (r, java, bash,
 * typescript) are a 400 that says ember lacks them.
 *
 * Each request opens its own connection to the guest's interpreter (and
 * starts the interpreter when none answers).  An execute whose client
 * goes away is abandoned within WATCH_MS: closing its connection
 * interrupts the code in the guest.
 */
#include <errno.h>
#include <fcntl.h>
#include <microhttpd.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "../sandbox/agent_client.h"
#include "../sandbox/interp_client.h"
#include "e2b.h"

/* Starting an interpreter that is not warm: ~2 min in a fresh PVM guest. */
#define START_MS     300000
#define CONNECT_MS   10000 /* the vsock handshake with a running one */
#define LIST_MS	     30000 /* list_contexts */
#define CONTEXT_MS   120000 /* create, restart, delete: a new process */
#define KEEPALIVE_MS 5000 /* E2B's server: KEEPALIVE_INTERVAL */
#define WATCH_MS     500 /* how often an execute looks for its client */
_Static_assert(WATCH_MS < 1000, "watch_main() adds it to tv_nsec");
#define CTX_ID_MAX   64 /* bytes of a context id in a path or body */
#define LANG_MAX     32 /* bytes of a language name */
#define ENV_NAME_MAX 255 /* interp_client's limit on a variable's name */
#define TEXT_PLAIN   "text/plain; charset=utf-8"
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

__attribute__((format(printf, 3, 4))) static int
reply_text(struct e2b_resp *resp, unsigned int status, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (n < 0)
		n = 0;
	if ((size_t)n >= sizeof(msg))
		n = (int)sizeof(msg) - 1;
	/* On failure it answers 500 itself. */
	e2b__reply_bytes(resp, status, TEXT_PLAIN, msg, (size_t)n);
	return 0;
}

/* @len bytes of the id @id for a message: at most CTX_ID_MAX, printable. */
static void clean_id(char out[CTX_ID_MAX + 1], const char *id, size_t len)
{
	size_t i;

	if (len > CTX_ID_MAX)
		len = CTX_ID_MAX;
	for (i = 0; i < len; i++) {
		unsigned char ch = (unsigned char)id[i];

		out[i] = ch < 0x20 || ch >= 0x7f ? '?' : (char)ch;
	}
	out[len] = '\0';
}

/* A context id as ember's interpreter makes them (and E2B's UUIDs). */
static bool id_ok(const char *id, size_t len)
{
	size_t i;

	if (!len || len > CTX_ID_MAX)
		return false;
	for (i = 0; i < len; i++) {
		char ch = id[i];

		if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
		      (ch >= '0' && ch <= '9') || ch == '-' || ch == '_' ||
		      ch == '.'))
			return false;
	}
	return true;
}

/*
 * E2B's language name (its normalize_language(): case and surrounding
 * blanks ignored, "js" for javascript; none is python) as ember's
 * interpreter's, or NULL with the name, cleaned for a message, in @name.
 */
static const char *language_of(const char *lang, char name[LANG_MAX + 1])
{
	size_t len, i;

	while (*lang == ' ' || *lang == '\t' || *lang == '\n' || *lang == '\r')
		lang++;
	len = strlen(lang);
	while (len && (lang[len - 1] == ' ' || lang[len - 1] == '\t' ||
		       lang[len - 1] == '\n' || lang[len - 1] == '\r'))
		len--;
	if (len > LANG_MAX)
		len = LANG_MAX;
	for (i = 0; i < len; i++) {
		unsigned char ch = (unsigned char)lang[i];

		if (ch >= 'A' && ch <= 'Z')
			ch = (unsigned char)(ch - 'A' + 'a');
		else if (ch < 0x20 || ch >= 0x7f)
			ch = '?';
		name[i] = (char)ch;
	}
	name[len] = '\0';
	if (!len || !strcmp(name, "python"))
		return "python";
	if (!strcmp(name, "javascript") || !strcmp(name, "js"))
		return "javascript";
	return NULL;
}

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
		return reply_text(resp, 500, "out of memory");
	}
	sprintf(b, "%s\n{\"type\":\"end_of_execution\"}\n", a);
	rc = e2b__reply_bytes(resp, 200, "application/x-ndjson", b, strlen(b));
	free(a);
	free(b);
	return rc;
}

static int reply_bad_language(struct e2b_resp *resp, const char *name)
{
	return reply_text(resp, 400,
			  "language \"%s\" is not supported by ember: its code "
			  "interpreter runs python and javascript (\"js\")",
			  name);
}

/*
 * The request's body as a JSON object ("" counts as {} when @empty_ok).
 * NULL with the answer in @resp.
 */
static json_t *body_object(const struct e2b_req *r, bool empty_ok,
			   struct e2b_resp *resp)
{
	json_error_t je;
	json_t *b;

	if (!r->body || r->len > E2B_MAX_BODY) {
		reply_text(resp, 400, "the body must be a JSON object");
		return NULL;
	}
	if (!r->len && empty_ok) {
		b = json_object();
		if (!b)
			reply_text(resp, 500, "out of memory");
		return b;
	}
	b = json_loadb(r->body, r->len, JSON_REJECT_DUPLICATES, &je);
	if (!json_is_object(b)) {
		json_decref(b);
		reply_text(resp, 400, "the body must be a JSON object: %.200s",
			   b ? "not an object" : je.text);
		return NULL;
	}
	return b;
}

/*
 * The member @key of @o as a string: 0 with *@out (NULL when absent, null
 * or ""), -EINVAL when it is of another type.
 */
static int opt_string(const json_t *o, const char *key, const char **out)
{
	const json_t *v = json_object_get(o, key);

	*out = NULL;
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_string(v))
		return -EINVAL;
	if (json_string_length(v))
		*out = json_string_value(v);
	return 0;
}

/*
 * Send @req (consumed) and read its answer into *@ans.  0, or a negative
 * errno with @err (-EREMOTEIO: the interpreter refused).
 */
static int ask(struct interp_client *c, json_t *req, int timeout_ms,
	       json_t **ans, char *err, size_t errlen)
{
	int rc;

	*ans = NULL;
	if (!req) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	rc = interp_client__request(c, req, timeout_ms, ans, err, errlen);
	json_decref(req);
	return rc;
}

/*
 * Connect to @uds's interpreter port and ping it: *@out, and *@watch (when
 * not NULL) a duplicate of the socket.  -ECONNRESET when nothing listens
 * or answers; other negative errnos; @err.
 */
static int connect_ping(const char *uds, struct interp_client **out, int *watch,
			char *err, size_t errlen)
{
	struct agent_client *a = agent_client__new();
	json_t *ans = NULL;
	int fd = -1, rc;

	*out = NULL;
	if (!a) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	rc = agent_client__connect(a, uds, INTERP_PORT, CONNECT_MS);
	if (rc == 0) {
		fd = agent_client__detach_fd(a);
		if (fd < 0)
			rc = fd;
	}
	if (rc < 0)
		snprintf(err, errlen, "%s", agent_client__error(a));
	agent_client__free(a);
	if (rc < 0)
		return rc;
	if (watch) {
		*watch = fcntl(fd, F_DUPFD_CLOEXEC, 0);
		if (*watch < 0) {
			rc = -errno;
			close(fd);
			snprintf(err, errlen, "dup: %s", strerror(-rc));
			return rc;
		}
	}
	rc = interp_client__attach_fd(fd, out);
	if (rc == 0)
		/*
		 * A listener whose server died (its children may hold the
		 * socket) takes the connection and closes it: ping first.
		 */
		rc = ask(*out, json_pack("{s:s}", "op", "ping"), CONNECT_MS,
			 &ans, err, errlen);
	else
		snprintf(err, errlen, "out of memory");
	json_decref(ans);
	if (rc < 0) {
		interp_client__free(*out);
		*out = NULL;
		if (watch) {
			close(*watch);
			*watch = -1;
		}
	}
	return rc;
}

/*
 * A connection to @g's interpreter, which is started when nothing
 * listens.  *@watch (when not NULL) a duplicate of its socket, for a
 * shutdown() from another thread.  On failure the answer in @resp and a
 * negative errno.
 */
static int open_interp(const struct e2b_guest *g, struct interp_client **out,
		       int *watch, struct e2b_resp *resp)
{
	struct interp_client *started = NULL;
	char err[512] = "";
	int rc;

	rc = connect_ping(g->info.uds, out, watch, err, sizeof(err));
	if (rc == -ECONNRESET) {
		/* Start it (or wait for it to be ready), then again. */
		rc = interp_client__ensure(g->info.uds, START_MS, &started, err,
					   sizeof(err));
		interp_client__free(started);
		if (rc == 0)
			rc = connect_ping(g->info.uds, out, watch, err,
					  sizeof(err));
	}
	if (rc == -ENOMEM) {
		reply_text(resp, 500, "out of memory");
	} else if (rc == -ENOEXEC) {
		reply_text(resp, 502, "sandbox %s has no code interpreter: %s",
			   g->info.id, err);
	} else if (rc < 0) {
		reply_text(resp, 502,
			   "the code interpreter of sandbox %s cannot be "
			   "reached: %s",
			   g->info.id, err);
	}
	return rc;
}

/* Whether the interpreter has context @id: 1, 0, or a negative errno. */
static int context_exists(struct interp_client *c, const char *id, char *err,
			  size_t errlen)
{
	json_t *ans, *ctx;
	size_t i;
	int rc, found = 0;

	rc = ask(c, json_pack("{s:s}", "op", "list_contexts"), LIST_MS, &ans,
		 err, errlen);
	if (rc < 0)
		return rc;
	json_array_foreach(json_object_get(ans, "contexts"), i, ctx)
	{
		const char *cid = json_string_value(json_object_get(ctx, "id"));

		if (cid && !strcmp(cid, id))
			found = 1;
	}
	json_decref(ans);
	return found;
}

/* The answer to a failed request of @c that is not about a context. */
static int reply_failed(struct e2b_resp *resp, int rc, const char *err)
{
	if (rc == -ENOMEM)
		return reply_text(resp, 500, "out of memory");
	if (rc == -EREMOTEIO)
		return reply_text(resp, 500, "%s", err);
	return reply_text(resp, 502, "the code interpreter: %s", err);
}

/* --- /execute ------------------------------------------------------------ */

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

/* E2B's line for the interpreter's event @ev of type @type; NULL: OOM. */
static json_t *e2b_line(const json_t *ev, const char *type)
{
	char ts[64];
	json_t *l, *v;

	if (!strcmp(type, "stdout") || !strcmp(type, "stderr")) {
		timestamp(ts, sizeof(ts));
		return json_pack("{s:s, s:O, s:s}", "type", type, "text",
				 json_object_get(ev, "text"), "timestamp", ts);
	}
	if (!strcmp(type, "result")) {
		l = json_pack(
			"{s:s, s:b}", "type", "result", "is_main_result",
			json_is_true(json_object_get(ev, "is_main_result")));
		if (!l)
			return NULL;
		v = json_object_get(ev, "text");
		if (json_is_string(v) &&
		    json_object_set_new(l, "text", result_text(v)))
			goto oom;
		v = json_object_get(ev, "html");
		if (json_is_string(v) && json_object_set(l, "html", v))
			goto oom;
		v = json_object_get(ev, "png");
		if (json_is_string(v) && json_object_set(l, "png", v))
			goto oom;
		return l;
	}
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
oom:
	json_decref(l);
	return NULL;
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
	pthread_condattr_t ca;

	if (!j)
		return NULL;
	j->watch_fd = -1;
	j->client_fd = -1;
	pthread_mutex_init(&j->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&j->cond, &ca);
	pthread_condattr_destroy(&ca);
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
		reply_text(resp, 400, "env_vars must be an object");
		return -EINVAL;
	}
	json_object_foreach((json_t *)env, key, v)
	{
		if (!json_is_string(v) || !env_name_ok(key)) {
			reply_text(resp, 400,
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

static int do_execute(const struct e2b_req *r, struct e2b_guest *g,
		      struct e2b_resp *resp)
{
	const char *code, *ctx, *lang, *language = "python";
	char name[CTX_ID_MAX + 1], err[512];
	struct exec_job *j;
	json_t *body, *env;
	pthread_attr_t attr;
	pthread_t t;
	int rc;

	body = body_object(r, false, resp);
	if (!body)
		return 0;
	code = json_string_value(json_object_get(body, "code"));
	env = json_object_get(body, "env_vars");
	if (!code) {
		reply_text(resp, 400, "code must be a string");
		goto out;
	}
	if (opt_string(body, "context_id", &ctx) ||
	    opt_string(body, "language", &lang)) {
		reply_text(resp, 400,
			   "context_id and language must be strings");
		goto out;
	}
	if (ctx && lang) {
		reply_text(resp, 400,
			   "Only one of context_id or language can be "
			   "provided");
		goto out;
	}
	if (lang) {
		language = language_of(lang, name);
		if (!language) {
			execution_bad_language(resp, name);
			goto out;
		}
	}
	if (ctx && !id_ok(ctx, strlen(ctx))) {
		clean_id(name, ctx, strlen(ctx));
		reply_text(resp, 404, "Context %s not found", name);
		goto out;
	}
	if (check_env(env, resp))
		goto out;
	j = job_new();
	if (!j) {
		reply_text(resp, 500, "out of memory");
		goto out;
	}
	j->body = body;
	body = NULL;
	snprintf(j->sandbox, sizeof(j->sandbox), "%s", g->info.id);
	if (open_interp(g, &j->c, &j->watch_fd, resp))
		goto fail;
	j->client_fd = client_fd(r);
	if (ctx) {
		rc = context_exists(j->c, ctx, err, sizeof(err));
		if (rc == 0) {
			reply_text(resp, 404, "Context %s not found", ctx);
			goto fail;
		}
		if (rc < 0) {
			reply_failed(resp, rc, err);
			goto fail;
		}
	}
	if (build_env(g->rec.env_vars, json_is_object(env) ? env : NULL,
		      &j->env)) {
		reply_text(resp, 500, "out of memory");
		goto fail;
	}
	j->req.code = code;
	j->req.context = ctx;
	j->req.language = ctx ? NULL : language;
	j->req.env = (const char *const *)j->env;
	j->s = e2b_stream__new(keepalive_line, strlen(keepalive_line),
			       KEEPALIVE_MS);
	if (!j->s) {
		reply_text(resp, 500, "out of memory");
		goto fail;
	}
	if (pthread_attr_init(&attr)) {
		reply_text(resp, 500, "out of memory");
		goto fail_stream;
	}
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	rc = pthread_create(&t, &attr, exec_main, j);
	pthread_attr_destroy(&attr);
	if (rc) {
		reply_text(resp, 500, "pthread_create: %s", strerror(rc));
		goto fail_stream;
	}
	/* The thread holds the producer's reference, the answer the other. */
	return e2b__reply_stream(resp, NDJSON, j->s);
fail_stream:
	e2b_stream__put(j->s); /* the connection's, never given */
fail:
	job_free(j);
out:
	json_decref(body);
	return 0;
}

/* --- /contexts ----------------------------------------------------------- */

/*
 * E2B's default cwd, made when the guest lacks it: a rootfs without
 * E2B's user has no /home/user.  0 or a negative errno.
 */
static int make_home(struct e2b_server *srv, const struct e2b_guest *g)
{
	static const char *const argv[] = { "mkdir", "-p", E2B_HOME, NULL };
	char err[256];
	int status = -1, rc;

	rc = guest__run(srv, g, argv, E2B_AGENT_TIMEOUT_MS, 4096, NULL, NULL,
			NULL, &status, err, sizeof(err));
	return rc < 0 ? rc : status ? -EIO : 0;
}

static int create_context(struct interp_client *c, const char *language,
			  const char *cwd, json_t **ans, char *err,
			  size_t errlen)
{
	return ask(c,
		   json_pack("{s:s, s:s, s:s}", "op", "create_context",
			     "language", language, "cwd", cwd),
		   CONTEXT_MS, ans, err, errlen);
}

static int do_create(struct e2b_server *srv, const struct e2b_req *r,
		     struct e2b_guest *g, struct e2b_resp *resp)
{
	const char *lang, *cwd, *language = "python";
	char name[LANG_MAX + 1], err[512];
	struct interp_client *c = NULL;
	json_t *body, *ans;
	bool home = false;
	int rc;

	body = body_object(r, true, resp);
	if (!body)
		return 0;
	if (opt_string(body, "language", &lang) ||
	    opt_string(body, "cwd", &cwd)) {
		reply_text(resp, 400, "language and cwd must be strings");
		goto out;
	}
	if (lang) {
		language = language_of(lang, name);
		if (!language) {
			reply_bad_language(resp, name);
			goto out;
		}
	}
	if (!cwd) {
		cwd = E2B_HOME;
		home = true;
	}
	if (open_interp(g, &c, NULL, resp))
		goto out;
	rc = create_context(c, language, cwd, &ans, err, sizeof(err));
	if (rc == -EREMOTEIO && home && make_home(srv, g) == 0)
		rc = create_context(c, language, cwd, &ans, err, sizeof(err));
	if (rc < 0) {
		reply_failed(resp, rc, err);
		goto out;
	}
	e2b__reply_json(resp, 200,
			json_incref(json_object_get(ans, "context")));
	json_decref(ans);
out:
	interp_client__free(c);
	json_decref(body);
	return 0;
}

static int do_list(struct e2b_guest *g, struct e2b_resp *resp)
{
	struct interp_client *c = NULL;
	char err[512];
	json_t *ans;
	int rc;

	if (open_interp(g, &c, NULL, resp))
		return 0;
	rc = ask(c, json_pack("{s:s}", "op", "list_contexts"), LIST_MS, &ans,
		 err, sizeof(err));
	if (rc < 0)
		reply_failed(resp, rc, err);
	else
		e2b__reply_json(resp, 200,
				json_incref(json_object_get(ans, "contexts")));
	json_decref(ans);
	interp_client__free(c);
	return 0;
}

/* restart_context or delete_context of the context @id (@len bytes). */
static int do_context_op(struct e2b_guest *g, const char *op, const char *id,
			 size_t len, struct e2b_resp *resp)
{
	struct interp_client *c = NULL;
	char cid[CTX_ID_MAX + 1], err[512];
	json_t *ans;
	int rc;

	clean_id(cid, id, len);
	if (!id_ok(id, len))
		return reply_text(resp, 404, "Context %s not found", cid);
	if (open_interp(g, &c, NULL, resp))
		return 0;
	rc = ask(c, json_pack("{s:s, s:s}", "op", op, "context", cid),
		 CONTEXT_MS, &ans, err, sizeof(err));
	json_decref(ans);
	if (rc == 0) {
		/* E2B's server: FastAPI's None. */
		e2b__reply_bytes(resp, 200, "application/json", "null", 4);
	} else if (rc == -EREMOTEIO) {
		char why[512];

		/* The interpreter says no: for an unknown context, 404. */
		snprintf(why, sizeof(why), "%s", err);
		rc = context_exists(c, cid, err, sizeof(err));
		if (rc == 0)
			reply_text(resp, 404, "Context %s not found", cid);
		else
			reply_text(resp, 500, "%s", why);
	} else {
		reply_failed(resp, rc, err);
	}
	interp_client__free(c);
	return 0;
}

int interp__handle(struct e2b_server *srv, const struct e2b_req *r,
		   struct e2b_guest *g, struct e2b_resp *resp)
{
	static const char ctxs[] = "/contexts";
	const char *p = r->path, *id, *slash;
	bool get = !strcmp(r->method, "GET"), post = !strcmp(r->method, "POST");

	/* E2B_SANDBOX_URL with a trailing '/' makes the SDK ask for //execute. */
	while (p[0] == '/' && p[1] == '/')
		p++;
	if (!strcmp(p, "/execute")) {
		if (!post)
			return reply_text(resp, 405, "Method Not Allowed");
		return do_execute(r, g, resp);
	}
	if (!strcmp(p, "/health")) {
		if (!get)
			return reply_text(resp, 405, "Method Not Allowed");
		return e2b__reply_bytes(resp, 200, "application/json", "\"OK\"",
					4);
	}
	if (!strcmp(p, ctxs)) {
		if (post)
			return do_create(srv, r, g, resp);
		if (get)
			return do_list(g, resp);
		return reply_text(resp, 405, "Method Not Allowed");
	}
	if (strncmp(p, ctxs, sizeof(ctxs) - 1) || p[sizeof(ctxs) - 1] != '/')
		return reply_text(resp, 404, "Not Found");
	id = p + sizeof(ctxs);
	slash = strchr(id, '/');
	if (!slash) {
		if (strcmp(r->method, "DELETE"))
			return reply_text(resp, 405, "Method Not Allowed");
		return do_context_op(g, "delete_context", id, strlen(id), resp);
	}
	if (strcmp(slash, "/restart"))
		return reply_text(resp, 404, "Not Found");
	if (!post)
		return reply_text(resp, 405, "Method Not Allowed");
	return do_context_op(g, "restart_context", id, (size_t)(slash - id),
			     resp);
}
